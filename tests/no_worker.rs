//! A pool that cannot start a worker thread: the submission is rejected
//! with `Rejected::is_no_worker`, the OS error stays reachable as the
//! rejection's `source()` (an `io::Error` code can inspect), and the pool
//! takes work again once threads can start.
//!
//! The OS is made to refuse the thread by a seccomp filter on one thread
//! that fails `clone` and `clone3` with `EAGAIN`, the error
//! `pthread_create` returns when the process is out of threads
//! (`RLIMIT_NPROC`, `threads-max`). The filter binds the thread it is
//! installed on and the threads that one would start, nothing else: the
//! pool's other threads (the metrics sampler with `metrics`) and the
//! test harness go on as before, and the check is exact on a loaded
//! machine. (It used to lower the process's address-space limit; a
//! sampler thread starting, or another thread making a malloc arena, in
//! that window either aborted the process or widened the gap enough for
//! a stack: 19 runs in 200 failed.)

#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]

use std::error::Error;
use std::io;
use std::time::Duration;

use schedpool::ScheduledThreadPool;

#[path = "common/seccomp.rs"]
mod seccomp;

const EAGAIN: u32 = 11;
const SYS_CLONE3: u32 = 435;
#[cfg(target_arch = "x86_64")]
const SYS_CLONE: u32 = 56;
#[cfg(target_arch = "aarch64")]
const SYS_CLONE: u32 = 220;

/// Makes every `clone`/`clone3` of the calling thread fail with `EAGAIN`,
/// for as long as the thread lives (a seccomp filter cannot be removed).
fn refuse_new_threads_on_this_thread() {
    seccomp::answer_on_this_thread(
        &[SYS_CLONE3, SYS_CLONE],
        seccomp::SECCOMP_RET_ERRNO | EAGAIN,
    );
}

#[test]
fn a_worker_that_cannot_start_rejects_with_the_os_error_as_source() {
    // Workers start with the first task. The submission that must fail
    // runs on a thread of its own, which carries the filter and then ends.
    let pool = ScheduledThreadPool::new(1);
    let refused = std::thread::spawn({
        let pool = pool.clone();
        move || {
            refuse_new_threads_on_this_thread();
            assert!(
                std::thread::Builder::new().spawn(|| ()).is_err(),
                "the filter refuses a thread"
            );
            pool.submit(|| 42)
        }
    })
    .join()
    .expect("the refusing thread");

    let err = refused.expect_err("no thread can start under the filter");
    assert!(err.is_no_worker(), "{err}");
    let source = err.source().expect("the OS error is the source");
    let os = source
        .downcast_ref::<io::Error>()
        .expect("the source is the io::Error the OS returned");
    assert_eq!(os.raw_os_error(), Some(EAGAIN as i32), "{os:?}");
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
