//! A model test of [`super`] with the ready batch's lock-free takes and the
//! cancels whose removal comes later (a review's test of the batch filled
//! from the wheel without reading headers).

use super::check::marks::*;
use super::*;
use crate::task::header::{Header, Kind};
use crate::task::once::OnceTask;

fn task(seq: u64, deadline: Nanos) -> TaskPtr {
    TaskPtr::new(OnceTask::new(Header::new(seq, deadline, Kind::Once), || ()))
}

/// Random operations against a `BTreeMap` model: pushes near now (wheel
/// slots) and far (the heap), fills, workers' lock-free takes, pops, cancels
/// whose state swap comes first and whose removal comes later or never
/// (`remove_on_cancel(false)` in a third of the rounds), pause and resume
/// or trigger-like requeues of the same task, retains and drains. After
/// every step: the length, the wheel's live and cancelled counts, every
/// queued task's mark against where it is, and the batch as the model's
/// prefix; takes and pops come in the model's order and never early.
#[test]
fn pending_cancels_takes_and_requeues_keep_marks_and_counts() {
    use std::collections::BTreeMap;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut stats = [0usize; 3];
    for round in 0..120 {
        let keep_cancelled = round % 3 == 0; // remove_on_cancel(false)
        let mut q = WorkQueue::new();
        // Every queued task by key (cancelled-but-not-removed included).
        let mut model: BTreeMap<(Nanos, u64), TaskPtr> = BTreeMap::new();
        let mut pending: Vec<TaskPtr> = Vec::new();
        let mut now: Nanos = 1 << 30;
        let mut seq = 0;
        for step in 0..3_000 {
            let ctx = format!("round {round}, step {step}");
            match rnd(16) {
                0..=4 => {
                    let delay = match rnd(10) {
                        0 => 20_000_000 + rnd(40_000_000),
                        1 => 0,
                        2 => 20_000 * rnd(4),
                        _ => rnd(1_000_000),
                    };
                    let deadline = now + delay;
                    let t = task(seq, deadline);
                    seq += 1;
                    q.push(t.clone(), now);
                    model.insert((deadline, t.header().seq()), t);
                }
                5 => {
                    if let Some(e) = q.pop_due(now) {
                        let key = e.key();
                        assert!(key.0 <= now, "{ctx}: early");
                        let first = *model.keys().next().unwrap();
                        assert_eq!(key, first, "{ctx}: pop order");
                        model.remove(&key);
                        assert_eq!(mark(e.task.header()), NOT_QUEUED, "{ctx}");
                    }
                }
                6 | 7 => q.fill_ready_up_to(now, 1 + rnd(31) as usize),
                8 | 9 => {
                    if let Some(t) = q.ready.take_with(|_, _| ()) {
                        let key = (t.header().deadline(), t.header().seq());
                        let first = *model.keys().next().unwrap();
                        assert_eq!(key, first, "{ctx}: take order");
                        assert!(key.0 <= now, "{ctx}: early take");
                        model.remove(&key);
                        assert_eq!(mark(t.header()), NOT_QUEUED, "{ctx}");
                        if t.header().try_start() {
                            assert!(t.header().finish());
                        }
                    }
                }
                10 if !model.is_empty() => {
                    // cancel: swap now, remove now or later (or never)
                    let i = rnd(model.len() as u64) as usize;
                    let t = model.values().nth(i).unwrap().clone();
                    if t.header().try_cancel() && !keep_cancelled {
                        if rnd(2) == 0 {
                            pending.push(t);
                        } else {
                            let key = (t.header().deadline(), t.header().seq());
                            drop(q.remove(t.header(), t.as_ptr()));
                            model.remove(&key);
                        }
                    }
                }
                11 if !pending.is_empty() => {
                    let t = pending.swap_remove(rnd(pending.len() as u64) as usize);
                    let key = (t.header().deadline(), t.header().seq());
                    let was = model.contains_key(&key);
                    let r = q.remove(t.header(), t.as_ptr());
                    if !was {
                        assert!(r.is_none(), "{ctx}: removed a taken task");
                    }
                    model.remove(&key);
                    let m = mark(t.header());
                    assert!(
                        [NOT_QUEUED, LANE_REMOVED, WHEEL_REMOVED].contains(&m),
                        "{ctx}: mark {m} after cancel"
                    );
                }
                12 | 13 if !model.is_empty() => {
                    // pause + resume, or trigger: remove_anywhere and push back
                    let i = rnd(model.len() as u64) as usize;
                    let (&key, t) = model.iter().nth(i).unwrap();
                    let t = t.clone();
                    if t.header().pause_scheduled() {
                        let e = q.remove_anywhere(t.header(), t.as_ptr());
                        assert!(e.is_some_and(|e| e.key() == key), "{ctx}: not found");
                        assert_eq!(mark(t.header()), NOT_QUEUED, "{ctx}");
                        model.remove(&key);
                        assert!(t.header().resume_paused());
                        if rnd(2) == 0 {
                            t.header().set_deadline(key.0.min(now));
                        }
                        q.push(t.clone(), now);
                        model.insert((t.header().deadline(), key.1), t);
                    }
                }
                14 if rnd(40) == 0 => {
                    let removed = q.retain(|e| e.task.header().seq() % 5 != 0);
                    for e in &removed {
                        assert!(model.remove(&e.key()).is_some(), "{ctx}: retain");
                        assert_eq!(mark(e.task.header()), NOT_QUEUED);
                    }
                    model.retain(|k, _| k.1 % 5 != 0);
                }
                _ => now += rnd(60_000),
            }
            // Live count: cancelled-pending or kept cancelled tasks count.
            assert_eq!(q.len(), model.len(), "{ctx}: len");
            // Every queued task's mark says where it is.
            let (heap, lane) = q.parts();
            let (run, slots, _) = q.wheel_parts();
            let ready: Vec<(Nanos, u64)> = q.ready_snapshot().iter().map(|s| s.0).collect();
            let mut live_wheel = 0;
            let mut removed_wheel = 0;
            for e in run.iter().copied().chain(slots.iter().map(|s| s.1)) {
                match mark(e.task.header()) {
                    IN_WHEEL => live_wheel += 1,
                    WHEEL_REMOVED => removed_wheel += 1,
                    m => panic!("{ctx}: wheel entry with mark {m}"),
                }
            }
            assert_eq!(q.wheel.len(), live_wheel, "{ctx}: wheel live");
            assert_eq!(
                q.wheel.has_removed(),
                removed_wheel > 0,
                "{ctx}: wheel removed"
            );
            for (key, t) in &model {
                let p = t.as_ptr();
                let m = mark(t.header());
                let where_ = if ready.contains(key) {
                    "ready"
                } else if run
                    .iter()
                    .chain(slots.iter().map(|s| &s.1))
                    .any(|e| is_task(e, p))
                {
                    "wheel"
                } else if lane.iter().any(|e| is_task(e, p)) {
                    "lane"
                } else if heap.iter().any(|e| is_task(e, p)) {
                    "heap"
                } else {
                    panic!("{ctx}: {key:?} lost (mark {m})")
                };
                let ok = match where_ {
                    "ready" => m == IN_READY || m == IN_WHEEL,
                    "wheel" => m == IN_WHEEL,
                    "lane" => m == IN_LANE,
                    _ => heap.get(m).is_some_and(|e| is_task(e, p)),
                };
                assert!(ok, "{ctx}: {key:?} in {where_} with mark {m}");
            }
            let snap = q.ready_snapshot();
            stats[0] += snap.iter().filter(|s| s.1 == IN_WHEEL).count();
            stats[1] += snap.iter().filter(|s| s.1 == IN_READY).count();
            stats[2] += model
                .iter()
                .filter(|(k, t)| t.header().is_cancelled() && snap.iter().any(|s| s.0 == **k))
                .count();
            let prefix: Vec<_> = model.keys().take(snap.len()).copied().collect();
            let keys: Vec<_> = snap.iter().map(|s| s.0).collect();
            assert_eq!(keys, prefix, "{ctx}: ready prefix");
        }
        let order: Vec<(Nanos, u64)> = q.drain().iter().map(Entry::key).collect();
        assert_eq!(order, model.keys().copied().collect::<Vec<_>>(), "drain");
    }
    // The paths under test ran: batch tasks moved unmarked from the wheel,
    // ones marked by a fill that read them, and cancelled ones in the batch.
    assert!(stats.iter().all(|&n| n > 1_000), "coverage: {stats:?}");
}
