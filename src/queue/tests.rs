//! Unit tests of [`super`]: the merge of lane and heap, the lane's lazy
//! removal, and the ready batch's moves.

use super::check::marks::*;
use super::*;
use crate::task::header::{Header, Kind};
use crate::task::once::OnceTask;

fn task(seq: u64, deadline: Nanos) -> TaskPtr {
    TaskPtr::new(OnceTask::new(Header::new(seq, deadline, Kind::Once), || ()))
}

#[test]
fn the_merge_of_lane_and_heap_is_fifo_by_deadline() {
    let mut q = WorkQueue::new();
    let now = 100;
    // Heap: future and overdue-at-requeue tasks; lane: due at submit.
    q.push(task(1, 150), now);
    q.push(task(2, 100), now); // lane
    q.push(task(3, 100), now); // lane
    q.push(task(0, 90), now); // not after the lane's back (100, 3): the heap, at 90
    q.push(task(4, 120), now);
    let order: Vec<(Nanos, u64)> = std::iter::from_fn(|| q.pop())
        .map(|e| (e.deadline, e.task.header().seq()))
        .collect();
    assert_eq!(order, vec![(90, 0), (100, 2), (100, 3), (120, 4), (150, 1)]);
    assert!(q.is_empty());
}

#[test]
fn second_deadline_bounds_the_second_task() {
    let mut q = WorkQueue::new();
    let now = 100;
    assert_eq!(q.second_deadline(), None);
    q.push(task(1, 150), now);
    assert_eq!(q.second_deadline(), None, "one task");
    q.push(task(2, 140), now);
    assert_eq!(q.second_deadline(), Some(150), "both in the heap");
    q.push(task(3, 100), now); // lane
    assert_eq!(q.second_deadline(), Some(140), "lane first, heap second");
    q.push(task(4, 100), now); // lane
    assert_eq!(q.second_deadline(), Some(100), "both in the lane");
    // A removed lane entry may stand in for the live one behind it: a
    // bound, never later than the truth.
    let t = task(5, 100);
    q.push(t.clone(), now);
    q.pop();
    assert!(q.remove(t.header(), t.as_ptr()).is_none());
    assert_eq!(q.second_deadline(), Some(100));
    q.pop();
    assert_eq!(
        q.second_deadline(),
        Some(150),
        "the marked entry was discarded"
    );
}

/// Tasks milliseconds apart in the near-future wheel: the bound on the
/// second is within one slot of it, not the head's own slot boundary (a
/// successor timing that bound woke with the head and spun the whole gap).
#[test]
fn second_deadline_in_the_wheel_is_within_a_slot_of_the_second_task() {
    let mut q = WorkQueue::new();
    let now = 1_000_000_000;
    let (first, second) = (now + 3_000_000, now + 6_000_000);
    q.push(task(1, first), now);
    q.push(task(2, second), now);
    q.push(task(3, now + 9_000_000), now);
    let bound = q.second_deadline().expect("three queued");
    assert!(bound <= second, "a bound: {bound} > {second}");
    assert!(
        second - bound < 1 << wheel::SHIFT,
        "within a slot: {bound} is {} ns before {second}",
        second - bound
    );
    // The same once the head's slot has become the run.
    assert_eq!(q.pop_due(first).map(|e| e.deadline), Some(first));
    let bound = q.second_deadline().expect("two queued");
    assert!(bound <= now + 9_000_000 && now + 9_000_000 - bound < 1 << wheel::SHIFT);
}

#[test]
fn lane_entries_are_marked_and_removed_lazily() {
    let ptr = |t: &TaskPtr| t.as_ptr();
    let mut q = WorkQueue::new();
    let t = task(1, 5);
    let u = task(3, 6);
    q.push(t.clone(), 10);
    q.push(u.clone(), 10);
    assert_eq!(mark(t.header()), IN_LANE);
    assert_eq!(q.len(), 2);
    // A cancel removes a lane entry by marking it: len drops at once.
    assert!(q.remove(u.header(), ptr(&u)).is_none());
    assert_eq!((q.len(), mark(u.header())), (1, LANE_REMOVED));
    // Pause-like removal takes the front out; the marked entry behind it
    // is discarded, so the front stays live.
    assert!(q.remove_anywhere(t.header(), ptr(&t)).is_some());
    assert_eq!(mark(t.header()), NOT_QUEUED);
    assert_eq!(mark(u.header()), NOT_QUEUED, "discarded");
    assert!(q.is_empty());
    assert_eq!(q.peek_deadline(), None);
    let h = task(2, 50);
    q.push(h.clone(), 10);
    assert!(q.remove(h.header(), ptr(&h)).is_some());
    assert_eq!(mark(h.header()), NOT_QUEUED);
    assert!(q.pop().is_none());
}

#[test]
fn the_ready_batch_takes_due_one_shots_and_stays_in_front() {
    // The fill reads only the header's kind: a one-shot body will do.
    let periodic =
        |seq, at| TaskPtr::new(OnceTask::new(Header::new(seq, at, Kind::FixedRate), || ()));
    let mut q = WorkQueue::new();
    let now = 100;
    let (a, b, c) = (task(1, 90), task(2, 95), task(3, 100));
    for t in [&a, &b, &c] {
        q.push(t.clone(), 0);
    }
    q.push(periodic(4, 100), 0);
    q.push(task(5, 100), 0);
    q.push(task(6, 150), 0);
    let first = q.pop_due(now).unwrap();
    assert_eq!(first.task.header().seq(), 1);
    q.fill_ready_up_to(now, 8);
    // b and c moved; the periodic task stops the fill, and what is behind it stays.
    assert_eq!(
        q.ready_snapshot(),
        [((95, 2), IN_READY), ((100, 3), IN_READY)]
    );
    assert_eq!(q.len(), 5);
    assert_eq!(q.peek_deadline(), Some(0), "the batch is due");
    // Cancel finds a task in the batch.
    assert!(q.remove(c.header(), c.as_ptr()).is_some());
    assert_eq!(mark(c.header()), NOT_QUEUED);
    assert_eq!(q.len(), 4);
    // A push that sorts before the batch's last task moves the batch back.
    q.push(task(0, 96), 0);
    assert!(q.ready_snapshot().is_empty());
    let order: Vec<u64> = std::iter::from_fn(|| q.pop())
        .map(|e| e.task.header().seq())
        .collect();
    assert_eq!(order, [2, 0, 4, 5, 6]);
    drop(a);
}

#[test]
fn the_ready_batch_is_drained_and_retained_with_the_rest() {
    let mut q = WorkQueue::new();
    for seq in 0..4 {
        q.push(task(seq, 10 + seq), 0);
    }
    q.fill_ready_up_to(100, 3);
    assert_eq!(q.ready_snapshot().len(), 3, "at most `max`");
    let dropped = q.retain(|e| e.task.header().seq() != 1);
    assert_eq!(dropped.len(), 1);
    assert_eq!(mark(dropped[0].task.header()), NOT_QUEUED);
    let order: Vec<u64> = q.drain().iter().map(|e| e.task.header().seq()).collect();
    assert_eq!(order, [0, 2, 3]);
    assert!(q.is_empty());
}

/// The wheel behind the merge, against a `BTreeMap` model: random
/// nanosecond deadlines (many per slot, so slots must sort), some due, some
/// beyond the horizon, periodic ones (never in the wheel), stale `now`s (as
/// an inbox submission's), time from 0 and jumps of seconds; pops, fills of
/// the ready batch (and the moves back they cause), cancels (marks),
/// pause-like removals, retains and drains. After every step the length,
/// the head, the second deadline's bound and the ready batch (the model's
/// prefix) agree, and so does every push's "new head" answer.
#[test]
fn the_wheel_keeps_the_queue_order() {
    use std::collections::BTreeMap;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for round in 0..60 {
        let mut q = WorkQueue::new();
        let mut model: BTreeMap<(Nanos, u64), TaskPtr> = BTreeMap::new();
        let mut now: Nanos = if round % 2 == 0 { 0 } else { rnd(1 << 20) };
        let mut seq = 0;
        for step in 0..4_000 {
            let ctx = format!("round {round}, step {step}");
            match rnd(14) {
                0..=4 => {
                    let delay = match rnd(10) {
                        0 => 20_000_000 + rnd(40_000_000),
                        1 => 0,
                        2 => 1_000 * rnd(40),
                        _ => rnd(17_000_000),
                    };
                    let stale = now.saturating_sub(rnd(3) * rnd(100_000));
                    let deadline = stale + delay;
                    let kind = if rnd(10) == 0 {
                        Kind::FixedRate
                    } else {
                        Kind::Once
                    };
                    let t = TaskPtr::new(OnceTask::new(Header::new(seq, deadline, kind), || ()));
                    seq += 1;
                    let key = (deadline, t.header().seq());
                    let before = model.keys().next().copied();
                    let ready_empty = q.ready.hint_len() == 0;
                    let head = q.push(t.clone(), stale);
                    model.insert(key, t);
                    if ready_empty || q.ready.hint_len() == 0 {
                        let expect = before.is_none_or(|b| key < b);
                        if ready_empty {
                            assert_eq!(head, expect, "{ctx}: new head");
                        }
                    }
                }
                5 => {
                    let popped = q.pop_due(now);
                    let first = model.first_key_value().map(|(k, _)| *k);
                    match first {
                        Some(key) if key.0 <= now => {
                            let e = popped.unwrap_or_else(|| panic!("{ctx}: nothing popped"));
                            assert_eq!(e.key(), key, "{ctx}");
                            model.remove(&key);
                        }
                        _ => assert!(popped.is_none(), "{ctx}: popped early"),
                    }
                }
                6 => q.fill_ready_up_to(now, 1 + rnd(8) as usize),
                7 if !model.is_empty() => {
                    let i = rnd(model.len() as u64) as usize;
                    let key = *model.keys().nth(i).expect("an entry");
                    let t = model.remove(&key).expect("the task");
                    assert!(t.header().try_cancel(), "{ctx}");
                    drop(q.remove(t.header(), t.as_ptr()));
                }
                8 if !model.is_empty() => {
                    let i = rnd(model.len() as u64) as usize;
                    let key = *model.keys().nth(i).expect("an entry");
                    let t = model.remove(&key).expect("the task");
                    let e = q.remove_anywhere(t.header(), t.as_ptr());
                    assert!(e.is_some_and(|e| e.key() == key), "{ctx}: not found");
                    assert_eq!(mark(t.header()), NOT_QUEUED, "{ctx}");
                }
                9 if rnd(30) == 0 => {
                    let removed = q.retain(|e| e.task.header().seq() % 3 != 0);
                    for e in &removed {
                        assert!(model.remove(&e.key()).is_some(), "{ctx}: retain");
                    }
                    model.retain(|k, _| k.1 % 3 != 0);
                }
                10 if rnd(200) == 0 => {
                    let order: Vec<(Nanos, u64)> = q.drain().iter().map(Entry::key).collect();
                    assert_eq!(
                        order,
                        model.keys().copied().collect::<Vec<_>>(),
                        "{ctx}: drain"
                    );
                    model.clear();
                }
                11 if rnd(50) == 0 => now += rnd(1 << 32),
                _ => now += rnd(2_000_000),
            }
            assert_eq!(q.len(), model.len(), "{ctx}: len");
            if q.ready.hint_len() == 0 {
                let first = model.keys().next().map(|k| k.0);
                assert_eq!(q.peek_deadline(), first, "{ctx}: head");
                if let Some(second) = model.keys().nth(1).map(|k| k.0) {
                    let bound = q.second_deadline().expect("two queued");
                    assert!(bound <= second, "{ctx}: second {bound} > {second}");
                }
            }
            // The ready batch is the model's prefix.
            let snap = q.ready_snapshot();
            let prefix: Vec<_> = model.keys().take(snap.len()).copied().collect();
            let keys: Vec<_> = snap.iter().map(|s| s.0).collect();
            assert_eq!(keys, prefix, "{ctx}: ready prefix");
        }
    }
}

/// A burst of near tasks sorted into one run gives its room back once the
/// run is empty (a pool's memory does not stay at its busiest minute).
#[test]
fn the_wheel_gives_a_burst_s_room_back() {
    let mut q = WorkQueue::new();
    let now: Nanos = 1 << 30;
    // The first task becomes the front at once; the rest wait behind it,
    // all in one slot, 1 ms out.
    q.push(task(0, now + 100_000), now);
    for seq in 1..5_000 {
        q.push(task(seq, now + 1_000_000), now);
    }
    assert_eq!(q.len(), 5_000);
    let mut last = None;
    while let Some(e) = q.pop_due(now + 2_000_000) {
        assert!(last < Some(e.key()), "in order");
        last = Some(e.key());
    }
    assert!(q.is_empty());
    assert!(q.wheel.run_capacity() <= 1024, "the run kept its room");
}

/// A near task pushed while no slot is occupied, in front of a later heap
/// head, is the new head: `push` must say so (else the leader sleeps on).
#[test]
fn a_near_task_before_a_far_heap_head_is_the_new_head() {
    let mut q = WorkQueue::new();
    let now: Nanos = 1 << 30;
    assert!(q.push(task(0, now + 50_000_000), now), "empty queue: head");
    let head = q.push(task(1, now + 1_000_000), now);
    assert_eq!(q.peek_deadline(), Some(now + 1_000_000), "it is the first");
    assert!(head, "push said it is not the new head");
}

/// Placement is decided once, by the deadline: a one-shot task within the
/// wheel's horizon goes to its slot, one beyond it straight to the heap.
#[test]
fn a_task_beyond_the_horizon_goes_straight_to_the_heap() {
    let mut q = WorkQueue::new();
    let now: Nanos = 1 << 30; // the start of a slot
    let slot: Nanos = 1 << wheel::SHIFT;
    // The first task's slot is sorted into the run at once: the cursor
    // stops there, one slot after now's, and the horizon counts from it.
    q.push(task(0, now + slot), now);
    let last = task(1, now + 1024 * slot);
    q.push(last.clone(), now);
    assert_eq!(mark(last.header()), IN_WHEEL, "the horizon's last slot");
    let beyond = task(2, now + 1025 * slot);
    q.push(beyond.clone(), now);
    assert_eq!(mark(beyond.header()), 0, "the heap's top");
    let far = task(3, now + 3_600_000_000_000);
    q.push(far.clone(), now);
    assert_eq!(mark(far.header()), 1, "in the heap");
    let order: Vec<u64> = std::iter::from_fn(|| q.pop())
        .map(|e| e.task.header().seq())
        .collect();
    assert_eq!(order, [0, 1, 2, 3]);
}

/// Submit-then-cancel at a fixed delay under a frozen clock, behind an
/// earlier near task: each cancelled entry leaves its slot at once, not
/// when the front reaches the slot.
#[test]
fn cancelled_wheel_entries_do_not_pile_up_behind_a_front_that_stays() {
    let mut q = WorkQueue::new();
    let now: Nanos = 1 << 30;
    q.push(task(0, now + 1_000_000), now);
    for seq in 1..100_001 {
        let t = task(seq, now + 2_000_000);
        q.push(t.clone(), now);
        assert!(t.header().try_cancel());
        assert!(
            q.remove(t.header(), t.as_ptr()).is_some(),
            "out of its slot at once"
        );
    }
    assert_eq!(q.len(), 1);
    let (run, slots, _) = q.wheel_parts();
    assert!(
        run.len() + slots.len() == 1,
        "{} run + {} slot entries kept for 1 live task",
        run.len(),
        slots.len()
    );
}

/// A fill moves wheel tasks to the ready batch without touching their
/// headers: they keep `IN_WHEEL`, and cancel, pause-like removal and the
/// batch's move back still find them there.
#[test]
fn wheel_tasks_in_the_ready_batch_are_found_by_every_removal() {
    let mut q = WorkQueue::new();
    let now: Nanos = 1 << 30;
    let due = now + 100_000;
    // One slot apart, so each one is pushed into the wheel.
    let at = |k: u64| due + k * 20_000;
    let ts: Vec<TaskPtr> = (0..4).map(|seq| task(seq, at(seq))).collect();
    for t in &ts {
        q.push(t.clone(), now);
        assert_eq!(mark(t.header()), IN_WHEEL);
    }
    // Cancelled, but its canceller has not taken the lock yet: the fill
    // does not look, so it moves too.
    assert!(ts[1].header().try_cancel());
    q.fill_ready_up_to(at(3), 8);
    let snapshot = q.ready_snapshot();
    let marks: Vec<usize> = snapshot.iter().map(|s| s.1).collect();
    assert_eq!(marks, [IN_WHEEL; 4], "moved, unmarked: {snapshot:?}");
    assert_eq!(q.len(), 4);
    // The cancel finds its task in the batch.
    let e = q.remove(ts[1].header(), ts[1].as_ptr());
    assert!(e.is_some_and(|e| is_task(&e, ts[1].as_ptr())));
    assert_eq!(mark(ts[1].header()), NOT_QUEUED);
    assert_eq!(q.len(), 3);
    // A pause-like removal does too.
    let e = q.remove_anywhere(ts[2].header(), ts[2].as_ptr());
    assert!(e.is_some_and(|e| is_task(&e, ts[2].as_ptr())));
    assert_eq!(mark(ts[2].header()), NOT_QUEUED);
    assert_eq!(q.len(), 2);
    // A push that ties on the batch's last deadline and sorts before it (a
    // submitter that lost a race for the lock) moves the batch back: the
    // fill kept a bound, not the last key (whose sequence number is in the
    // header). The order holds.
    q.push(task(2, at(3)), now);
    assert!(q.ready_snapshot().is_empty(), "the batch moved back");
    let order: Vec<u64> = std::iter::from_fn(|| q.pop())
        .map(|e| e.task.header().seq())
        .collect();
    assert_eq!(order, [0, 2, 3]);
    for t in &ts {
        assert_eq!(mark(t.header()), NOT_QUEUED);
    }
}

/// Cancels of wheel tasks not in the batch: the one at the run's front is
/// marked and discarded at once, the one in a slot leaves it at once, so no
/// marked entry waits and the fill moves the rest without reading headers.
/// The counts stay right throughout.
#[test]
fn wheel_cancels_outside_the_batch_are_marked_where_the_task_is() {
    let mut q = WorkQueue::new();
    let now: Nanos = 1 << 30;
    let due = now + 100_000;
    let at = |k: u64| due + k * 20_000;
    let ts: Vec<TaskPtr> = (0..5).map(|seq| task(seq, at(seq))).collect();
    for t in &ts {
        q.push(t.clone(), now);
    }
    q.fill_ready_up_to(at(0), 8); // only the first is due
    assert_eq!(q.ready_snapshot().len(), 1);
    // ts[1] is the run's front now; ts[4] waits in a slot.
    assert!(ts[1].header().try_cancel());
    assert!(q.remove(ts[1].header(), ts[1].as_ptr()).is_none(), "marked");
    assert!(ts[4].header().try_cancel());
    assert!(
        q.remove(ts[4].header(), ts[4].as_ptr()).is_some(),
        "out of its slot"
    );
    assert_eq!(mark(ts[4].header()), NOT_QUEUED);
    assert_eq!(q.len(), 3);
    q.fill_ready_up_to(at(4), 8);
    let marks: Vec<usize> = q.ready_snapshot().iter().map(|s| s.1).collect();
    assert_eq!(marks, [IN_WHEEL, IN_WHEEL, IN_WHEEL]);
    assert_eq!(q.len(), 3);
    let order: Vec<u64> = std::iter::from_fn(|| q.pop())
        .map(|e| e.task.header().seq())
        .collect();
    assert_eq!(order, [0, 2, 3]);
    assert!(q.is_empty());
}
