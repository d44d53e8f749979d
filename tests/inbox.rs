//! The submission inbox with real threads: due tasks that skip the pool
//! lock (`src/pool/inbox.rs`) while workers run, spin, sleep and leave. The loom
//! models (`tests/loom/inbox.rs`) check the protocol's interleavings; these
//! check the timed paths loom cannot reach (a core-0 worker's keep-alive,
//! the real idle spin) and that nothing is lost or reordered at volume.
//! No timing is asserted beyond generous "it ran at all" limits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::ScheduledThreadPool;

/// Long enough that only a lost task reaches it.
const LOST: Duration = Duration::from_secs(20);

/// One worker, one submitter: 20,000 due tasks run in submission order,
/// whichever path each took (the worker keeps going idle between bursts,
/// which closes and opens the inbox's gate).
#[test]
fn due_tasks_run_in_submission_order_across_both_paths() {
    let pool = ScheduledThreadPool::new(1);
    let seen = Arc::new(Mutex::new(Vec::with_capacity(20_000)));
    for burst in 0..200u32 {
        for i in 0..100u32 {
            let seen = seen.clone();
            pool.execute(move || seen.lock().unwrap().push(burst * 100 + i))
                .unwrap();
        }
        if burst % 3 == 0 {
            // Let the worker drain and go idle (spin, then sleep).
            std::thread::sleep(Duration::from_micros(50 * u64::from(burst % 7)));
        }
    }
    assert!(pool.shutdown().await_termination(LOST));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 20_000);
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "out of submission order"
    );
}

/// Four submitters in bursts with idle gaps of varied length, two workers:
/// every task runs, and `completed_task_count` and `task_count` agree with
/// what was submitted (absorbed tasks are counted as accepted).
#[test]
fn bursts_with_idle_gaps_lose_nothing() {
    let pool = ScheduledThreadPool::new(2);
    let ran = Arc::new(AtomicUsize::new(0));
    let submitters: Vec<_> = (0..4u64)
        .map(|t| {
            let pool = pool.clone();
            let ran = ran.clone();
            std::thread::spawn(move || {
                for burst in 0..100u64 {
                    for _ in 0..50 {
                        let ran = ran.clone();
                        pool.execute(move || {
                            ran.fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap();
                    }
                    // 0–60 µs: around the 20 µs idle spin, both sides of it.
                    let gap = (burst * 7 + t * 13) % 61;
                    std::thread::sleep(Duration::from_micros(gap));
                }
            })
        })
        .collect();
    for s in submitters {
        s.join().unwrap();
    }
    let last = pool.submit(|| ()).unwrap();
    assert!(last.wait_timeout(LOST), "a task was left behind");
    assert!(pool.shutdown().await_termination(LOST));
    assert_eq!(ran.load(Ordering::Relaxed), 20_000);
    assert_eq!(pool.task_count(), 20_001);
    assert_eq!(pool.completed_task_count(), 20_001);
}

/// A core-0 pool's worker leaves after 10 ms with nothing queued. A
/// submission that arrives as it leaves must still run: the worker closes
/// the inbox's gate, absorbs, and stays if that found work. Each attempt
/// aims a submission at the end of the keep-alive, from 20 µs before to
/// 100 µs after (the window that matters is a few hundred nanoseconds wide,
/// somewhere in there). Without the worker's re-check a task was stranded
/// within ~75 attempts in a review; loom cannot reach this path (the
/// keep-alive is a timed wait).
#[test]
fn a_submission_racing_the_keep_alive_exit_runs() {
    let pool = ScheduledThreadPool::builder()
        .core_threads(0)
        .build()
        .unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1D_u64;
    for attempt in 0..400 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // The previous task's end starts the worker's keep-alive.
        let ended = pool.submit(Instant::now).unwrap().join().unwrap();
        let offset = Duration::from_nanos(rng % 120_000);
        let at = ended + Duration::from_millis(10) - Duration::from_micros(20) + offset;
        while Instant::now() < at {
            std::hint::spin_loop();
        }
        let h = pool.submit(|| ()).unwrap();
        assert!(
            h.wait_timeout(LOST),
            "attempt {attempt}: stranded (aimed {offset:?} after keep-alive - 20 µs)"
        );
    }
    assert!(pool.shutdown().await_termination(LOST));
}
