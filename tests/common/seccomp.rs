//! A seccomp filter on the calling thread (and the threads it starts from
//! then on) that answers one or more system calls without running them:
//! the tests that must make the OS misbehave in one exact way
//! (`no_worker`: `clone` fails; `no_yield`: `sched_yield` is counted).
//! Linux on x86_64 and aarch64 only, as the tests that use it.
#![allow(dead_code)]

use std::io;

/// `struct sock_filter`: one classic BPF instruction.
#[repr(C)]
#[derive(Clone, Copy)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct sock_fprog`.
#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

const PR_SET_SECCOMP: i32 = 22;
const PR_SET_NO_NEW_PRIVS: i32 = 38;
const SECCOMP_MODE_FILTER: u64 = 2;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
/// The call fails with the errno in the low 16 bits.
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
/// The call is skipped and the thread gets a `SIGSYS`.
pub const SECCOMP_RET_TRAP: u32 = 0x0003_0000;

extern "C" {
    fn prctl(option: i32, ...) -> i32;
}

/// Makes every one of `syscalls` on the calling thread, and on the threads
/// it starts from now on, return `action` instead of running, for as long
/// as those threads live (a seccomp filter cannot be removed).
///
/// # Panics
///
/// If the kernel refuses the filter.
pub fn answer_on_this_thread(syscalls: &[u32], action: u32) {
    const LD_W_ABS: u16 = 0x20; // A = the syscall number (offset 0)
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    let n = syscalls.len();
    assert!(n < 250, "one jump spans the whole list");
    let mut program = vec![SockFilter {
        code: LD_W_ABS,
        jt: 0,
        jf: 0,
        k: 0,
    }];
    // Instruction i (of n) jumps over the rest and the ALLOW when it matches.
    for (i, &nr) in syscalls.iter().enumerate() {
        program.push(SockFilter {
            code: JEQ_K,
            jt: (n - i) as u8,
            jf: 0,
            k: nr,
        });
    }
    program.push(SockFilter {
        code: RET_K,
        jt: 0,
        jf: 0,
        k: SECCOMP_RET_ALLOW,
    });
    program.push(SockFilter {
        code: RET_K,
        jt: 0,
        jf: 0,
        k: action,
    });
    let prog = SockFprog {
        len: program.len() as u16,
        filter: program.as_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only.
    let rc = unsafe { prctl(PR_SET_NO_NEW_PRIVS, 1u64, 0u64, 0u64, 0u64) };
    assert_eq!(rc, 0, "PR_SET_NO_NEW_PRIVS: {}", io::Error::last_os_error());
    // SAFETY: `prog` points at `program`, both alive across the call; the
    // kernel copies the filter.
    let rc = unsafe {
        prctl(
            PR_SET_SECCOMP,
            SECCOMP_MODE_FILTER,
            &prog as *const SockFprog,
        )
    };
    assert_eq!(rc, 0, "PR_SET_SECCOMP: {}", io::Error::last_os_error());
}
