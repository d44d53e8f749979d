//! A pool that cannot start a worker thread: the submission is rejected
//! with `Rejected::is_no_worker`, the OS error stays reachable as the
//! rejection's `source()` (an `io::Error` code can inspect), and the pool
//! takes work again once threads can start.
//!
//! The OS is made to refuse the thread by lowering this process's address
//! space limit (`RLIMIT_AS`) just above what it maps already, so a new
//! thread's stack cannot be mapped; this works as root too (unlike
//! `RLIMIT_NPROC`). The limit is the process's, so this binary holds this
//! one test only.

#![cfg(target_os = "linux")]

use std::error::Error;
use std::io;
use std::time::Duration;

use schedpool::ScheduledThreadPool;

/// `struct rlimit` (`rlim_t` is 64 bits on every Linux target Rust has).
#[repr(C)]
#[derive(Clone, Copy)]
struct RLimit {
    cur: u64,
    max: u64,
}

const RLIMIT_AS: i32 = 9;

extern "C" {
    fn getrlimit(resource: i32, limit: *mut RLimit) -> i32;
    fn setrlimit(resource: i32, limit: *const RLimit) -> i32;
}

fn address_space_limit() -> RLimit {
    let mut limit = RLimit { cur: 0, max: 0 };
    // SAFETY: `limit` is a valid, writable `struct rlimit`.
    let rc = unsafe { getrlimit(RLIMIT_AS, &mut limit) };
    assert_eq!(rc, 0, "getrlimit: {}", io::Error::last_os_error());
    limit
}

fn set_address_space_limit(limit: RLimit) {
    // SAFETY: `limit` is a valid `struct rlimit`, read only.
    let rc = unsafe { setrlimit(RLIMIT_AS, &limit) };
    assert_eq!(rc, 0, "setrlimit: {}", io::Error::last_os_error());
}

/// The process's mapped address space now, in bytes (/proc/self/status).
fn mapped_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmSize line");
    kib * 1024
}

#[test]
fn a_worker_that_cannot_start_rejects_with_the_os_error_as_source() {
    let pool = ScheduledThreadPool::new(1); // workers start with the first task
    let saved = address_space_limit();
    // 1 MiB above what is mapped: room for small allocations, none for a
    // thread's stack (2 MiB by default).
    let tight = RLimit {
        cur: mapped_bytes() + (1 << 20),
        max: saved.max,
    };
    set_address_space_limit(tight);
    let refused = pool.submit(|| 42);
    set_address_space_limit(saved);

    let err = refused.expect_err("no thread can start under the limit");
    assert!(err.is_no_worker(), "{err}");
    let source = err.source().expect("the OS error is the source");
    let os = source
        .downcast_ref::<io::Error>()
        .expect("the source is the io::Error the OS returned");
    assert!(os.raw_os_error().is_some(), "{os:?}");
    assert!(err.to_string().contains(&os.to_string()), "{err}");
    // Clones keep it, and compare equal.
    let copy = err.clone();
    assert_eq!(copy, err);
    assert!(copy.source().unwrap().downcast_ref::<io::Error>().is_some());

    // Nothing of the refused task stays, and the pool starts a worker now.
    assert_eq!(pool.queue_len(), 0);
    let h = pool.submit(|| 42).expect("threads can start again");
    assert_eq!(h.join(), Ok(42));
    assert!(pool.shutdown().await_termination(Duration::from_secs(20)));
}
