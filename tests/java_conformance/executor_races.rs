//! Numbered executor behaviour A14: schedule racing shutdown and
//! `shutdown_now`, and the overflow-free race of far tasks.

use super::*;

/// A14.60: schedule racing with shutdown (core 0, 1 and 2): every accepted
/// task's handle completes (run or cancelled); none hangs; the pool terminates.
#[test]
fn a14_schedule_shutdown_race() {
    for iter in 0..40usize {
        let p = pool(iter % 3);
        let go = Latch::new(1);
        let submitters: Vec<_> = (0..2usize)
            .map(|t| {
                let (pc, go) = (p.pool(), go.clone());
                thread::spawn(move || {
                    go.wait(LONG);
                    let mut hs = Vec::new();
                    for i in 0..25usize {
                        let d = if (i + t) % 2 == 0 {
                            Duration::ZERO
                        } else {
                            Duration::from_micros(200)
                        };
                        if let Ok(h) = pc.schedule(move || i, d) {
                            hs.push(h);
                        }
                    }
                    hs
                })
            })
            .collect();
        go.open();
        thread::yield_now();
        p.shutdown();
        for s in submitters {
            for h in s.join().unwrap() {
                assert!(
                    h.wait_timeout(LONG),
                    "iteration {iter}: an accepted task never completed"
                );
            }
        }
        assert!(p.await_termination(LONG), "iteration {iter}");
    }
}

/// A14.61 (the pre-JDK-24 overflowFree race): end-of-time tasks scheduled
/// concurrently with short ones never hold the short ones up.
#[test]
fn a14_far_tasks_do_not_delay_near_ones() {
    let p = pool(2);
    let never = Arc::new(AtomicBool::new(false));
    let go = Latch::new(1);
    let far = {
        let (pc, go, never) = (p.pool(), go.clone(), never.clone());
        thread::spawn(move || {
            go.wait(LONG);
            (0..200)
                .map(|_| {
                    let n = never.clone();
                    pc.schedule(move || n.store(true, SeqCst), Duration::MAX)
                        .unwrap()
                })
                .collect::<Vec<_>>()
        })
    };
    let near = {
        let (pc, go) = (p.pool(), go.clone());
        thread::spawn(move || {
            go.wait(LONG);
            (0..200)
                .map(|_| {
                    let at = Instant::now();
                    (at, pc.schedule(Instant::now, ms(1)).unwrap())
                })
                .collect::<Vec<_>>()
        })
    };
    go.open();
    let far = far.join().unwrap();
    for (scheduled_at, h) in near.join().unwrap() {
        let ran_at = join(h).unwrap();
        assert!(ran_at >= scheduled_at + ms(1), "ran early");
    }
    assert!(!never.load(SeqCst));
    assert!(far.iter().all(|h| !h.is_done()));
}

// ---------------------------------------------------------------------------
// Edge cases and races around the behaviours above
// ---------------------------------------------------------------------------

/// A14.60 with shutdown_now: every accepted task is run, or returned (and
/// then cancelled by dropping it), or cancelled; no handle hangs.
#[test]
fn a14_schedule_shutdown_now_race() {
    for iter in 0..30usize {
        let p = pool(iter % 3);
        let go = Latch::new(1);
        let submitters: Vec<_> = (0..2usize)
            .map(|t| {
                let (pc, go) = (p.pool(), go.clone());
                thread::spawn(move || {
                    go.wait(LONG);
                    let mut hs = Vec::new();
                    for i in 0..25usize {
                        let r = if (i + t) % 3 == 0 {
                            pc.schedule_at_fixed_rate(|| {}, Duration::ZERO, ms(1))
                        } else {
                            pc.schedule(|| (), Duration::from_micros(100 * (i as u64 % 3)))
                        };
                        if let Ok(h) = r {
                            hs.push(h);
                        }
                    }
                    hs
                })
            })
            .collect();
        go.open();
        thread::yield_now();
        drop(p.shutdown_now());
        for s in submitters {
            for h in s.join().unwrap() {
                assert!(
                    h.wait_timeout(LONG),
                    "iteration {iter}: a handle never completed"
                );
            }
        }
        drop(p.shutdown_now()); // anything accepted after the first call
        assert!(p.await_termination(LONG), "iteration {iter}");
    }
}
