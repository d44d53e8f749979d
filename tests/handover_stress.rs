//! The hand-over of the head between waiters, on the real clock, where the
//! successor is active (`docs/design.md`, rule 5; the loom models cannot
//! check it, having no time): 1–6 workers or takers, deadlines in clusters
//! from microseconds to 200 ms apart (so successors are registered, promoted,
//! passed over and woken in every order), with cancels and removals while
//! they run. Every task runs exactly once unless cancelled, none early, and
//! nothing is left waiting: a lost hand-over shows up as a task that never
//! runs before the generous bound. A task cancelled before its deadline
//! never runs; one cancelled later may have been running already (Java's
//! `cancel` succeeds on a running one-shot task, whose body then finishes),
//! so it runs at most once.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{PoolGuard, EVENTUALLY};
use schedpool::{DelayItem, DelayQueue, Delayed, ScheduledThreadPool};

const ROUNDS: usize = 4;
const TASKS: usize = 5_000;

/// xorshift64, seeded per test: the same schedule on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Delays in clusters: microseconds apart, a couple of ms, up to 200 ms.
    fn delay(&mut self) -> Duration {
        match self.next() % 4 {
            0 => Duration::from_micros(self.next() % 50),
            1 => Duration::from_micros(self.next() % 2_000),
            2 => Duration::from_millis(self.next() % 200),
            _ => Duration::from_nanos(self.next() % 20_000_000),
        }
    }
}

/// Waits until `done` holds, or fails with `what` after [`EVENTUALLY`].
fn eventually(what: &str, done: impl Fn() -> bool) {
    let give_up = Instant::now() + EVENTUALLY;
    while !done() {
        assert!(Instant::now() < give_up, "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn pool_runs_every_task_once_never_early() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..ROUNDS {
        let workers = 1 + (rng.next() % 6) as usize;
        let pool = PoolGuard(ScheduledThreadPool::new(workers));
        let runs: Arc<Vec<AtomicUsize>> =
            Arc::new((0..TASKS).map(|_| AtomicUsize::new(0)).collect());
        let early = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::with_capacity(TASKS);
        let mut due = Vec::with_capacity(TASKS);
        // Tasks whose cancel returned true before their deadline.
        let mut cancelled_early = vec![false; TASKS];
        for i in 0..TASKS {
            let delay = rng.delay();
            let not_before = Instant::now() + delay;
            due.push(not_before);
            let (runs, early) = (runs.clone(), early.clone());
            let handle = pool
                .schedule(
                    move || {
                        if Instant::now() < not_before {
                            early.fetch_add(1, Ordering::SeqCst);
                        }
                        runs[i].fetch_add(1, Ordering::SeqCst);
                    },
                    delay,
                )
                .unwrap();
            handles.push(handle);
            if i % 5 == 0 {
                // Cancel an earlier task, likely still queued: the head may
                // move while a successor waits for the old second.
                let victim = (rng.next() as usize) % handles.len();
                // The pool's deadline is at or after `due` (read before
                // `schedule`), so a cancel that returned before `due` came
                // before any start that is not early.
                if handles[victim].cancel() && Instant::now() < due[victim] {
                    cancelled_early[victim] = true;
                }
            }
            if i % 97 == 0 {
                std::thread::sleep(Duration::from_micros(rng.next() % 300));
            }
        }
        eventually(
            &format!("round {round}, {workers} workers: a task neither ran nor was cancelled"),
            || handles.iter().all(|h| h.is_done()),
        );
        for (i, h) in handles.iter().enumerate() {
            let ran = runs[i].load(Ordering::SeqCst);
            if cancelled_early[i] {
                assert_eq!(
                    ran, 0,
                    "task {i}, round {round}: ran after a cancel that won"
                );
            } else if h.is_cancelled() {
                assert!(ran <= 1, "task {i}, round {round}: ran {ran} times");
            } else {
                assert_eq!(ran, 1, "task {i}, round {round}");
            }
        }
        assert_eq!(
            early.load(Ordering::SeqCst),
            0,
            "round {round}: a task ran early"
        );
    }
}

#[test]
fn delay_queue_gives_every_item_once_never_early() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for round in 0..ROUNDS {
        let takers = 1 + (rng.next() % 5) as usize;
        let queue: Arc<DelayQueue<DelayItem<usize>>> = Arc::new(DelayQueue::new());
        let seen = Arc::new(Mutex::new(vec![0u32; TASKS]));
        let early = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..takers)
            .map(|k| {
                let (queue, seen, early) = (queue.clone(), seen.clone(), early.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    loop {
                        n += 1;
                        // Odd takers sometimes poll with a short timeout:
                        // they must not be left holding a role they give up.
                        let item = if k % 2 == 1 && n % 3 == 0 {
                            match queue.poll_timeout(Duration::from_micros(50 + n % 500)) {
                                Some(item) => item,
                                None if queue.is_closed() && queue.is_empty() => break,
                                None => continue,
                            }
                        } else {
                            match queue.take() {
                                Some(item) => item,
                                None => break,
                            }
                        };
                        if Instant::now() < item.deadline() {
                            early.fetch_add(1, Ordering::SeqCst);
                        }
                        seen.lock().unwrap()[*item.value()] += 1;
                    }
                })
            })
            .collect();
        let mut keys = Vec::with_capacity(TASKS);
        for i in 0..TASKS {
            keys.push(queue.put(DelayItem::at(i, Instant::now() + rng.delay())));
            if i % 7 == 3 {
                let victim = (rng.next() as usize) % keys.len();
                if let Some(item) = queue.remove(keys[victim]) {
                    seen.lock().unwrap()[*item.value()] += 1;
                }
            }
            if i % 97 == 0 {
                std::thread::sleep(Duration::from_micros(rng.next() % 300));
            }
        }
        eventually(
            &format!("round {round}, {takers} takers: an item was never taken"),
            || seen.lock().unwrap().iter().all(|&c| c > 0),
        );
        queue.close();
        for t in threads {
            t.join().unwrap();
        }
        let seen = seen.lock().unwrap();
        assert!(
            seen.iter().all(|&c| c == 1),
            "round {round}: an item came out twice"
        );
        assert_eq!(
            early.load(Ordering::SeqCst),
            0,
            "round {round}: an item came out early"
        );
    }
}
