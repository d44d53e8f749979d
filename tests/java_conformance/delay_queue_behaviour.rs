//! Numbered `DelayQueue` behaviours B-a..B-r of `java-behaviour.md` and our
//! deliberate differences (FIFO ties, close instead of interrupts), with the
//! edge cases around them: leader/follower hand-off, keys, manual clocks.

use super::*;

/// B-q (deliberate difference): elements with equal deadlines come out FIFO,
/// through poll, take and drain_expired alike.
#[test]
fn b_fifo_equal_deadlines() {
    let clock = ManualClock::new();
    let q: Queue = Arc::new(DelayQueue::with_clock(clock.clone()));
    let at = clock.now() + ms(5);
    for i in 0..300 {
        q.put(DelayItem::at(i, at));
    }
    clock.advance(ms(5));
    for i in 0..100 {
        assert_eq!(val(q.poll()), Some(i));
    }
    for i in 100..200 {
        assert_eq!(take_within(&q), Some(i));
    }
    let rest: Vec<usize> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(rest, (200..300).collect::<Vec<_>>());
}

/// close() wakes every blocked take(), which returns None (several waiters:
/// the leader and the followers).
#[test]
fn b_close_wakes_all_takers() {
    let q: Queue = Arc::new(DelayQueue::new());
    q.put(DelayItem::new(1, HOUR)); // one taker leads on this, the others follow
    let (tx, rx) = mpsc::channel();
    for _ in 0..4 {
        let (q, tx) = (q.clone(), tx.clone());
        thread::spawn(move || tx.send(val(q.take())).unwrap());
    }
    assert!(rx.recv_timeout(SHORT).is_err(), "a take() returned early");
    q.close();
    for _ in 0..4 {
        assert_eq!(rx.recv_timeout(LONG), Ok(None));
    }
}

/// After close, take and poll_timeout never block: a due head is still
/// returned, then None although an unexpired element remains.
#[test]
fn b_after_close_never_blocks() {
    let q: Queue = Arc::new(DelayQueue::new());
    q.put(DelayItem::new(1, Duration::ZERO));
    q.put(DelayItem::new(2, HOUR));
    q.close();
    assert_eq!(take_within(&q), Some(1));
    assert_eq!(take_within(&q), None);
    let q2 = q.clone();
    assert_eq!(
        within("poll_timeout", move || val(q2.poll_timeout(LONG))),
        None
    );
    assert_eq!(q.len(), 1);
}

/// Keys: a key whose element was taken or removed never matches another
/// element; remove works on unexpired elements (B-l).
#[test]
fn b_key_never_matches_other() {
    let q: DelayQueue<DelayItem<&str>> = DelayQueue::new();
    let ka = q.put(DelayItem::new("a", Duration::ZERO));
    assert_eq!(val(q.poll()), Some("a"));
    let kb = q.put(DelayItem::new("b", HOUR));
    assert_ne!(ka, kb);
    assert!(q.remove(ka).is_none());
    assert_eq!(
        val(q.remove(kb)),
        Some("b"),
        "remove finds an unexpired element"
    );
    assert!(q.remove(kb).is_none());
    let kc = q.put(DelayItem::new("c", HOUR));
    assert!(q.remove(ka).is_none() && q.remove(kb).is_none());
    assert_eq!(val(q.remove(kc)), Some("c"));
}

/// Leader/follower (d): a taker waiting for a far head is woken when an
/// earlier head is put, and gets it no earlier than its deadline.
#[test]
fn b_earlier_head_wakes_taker() {
    let q: Queue = Arc::new(DelayQueue::new());
    q.put(DelayItem::new(1, HOUR));
    let q2 = q.clone();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let start = Instant::now();
        let item = q2.poll_timeout(LONG);
        tx.send((
            item.map(|i| (i.deadline(), i.into_inner())),
            Instant::now(),
            start,
        ))
        .unwrap();
    });
    thread::sleep(DELAY);
    q.put(DelayItem::new(2, ms(10)));
    let (item, at, start) = rx.recv_timeout(LONG).expect("taker hung");
    let (deadline, v) = item.expect("the earlier head was not delivered");
    assert_eq!(v, 2);
    assert!(at >= deadline);
    assert!(
        at - start < LONG / 2,
        "the taker was not woken by the new head"
    );
    assert_eq!(q.len(), 1);
}

/// Virtual time: peek_deadline reads the manual clock, and advancing the
/// clock wakes a taker blocked on a head that is due an hour later.
#[test]
fn b_manual_clock_advance_wakes_taker() {
    let clock = ManualClock::new();
    let q: Queue = Arc::new(DelayQueue::with_clock(clock.clone()));
    let at = clock.now() + HOUR;
    q.put(DelayItem::at(5, at));
    assert_eq!(q.peek_deadline(), Some(at));
    assert!(q.poll().is_none());
    let q2 = q.clone();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let start = Instant::now();
        let got = val(q2.poll_timeout(LONG));
        tx.send((got, start.elapsed())).unwrap();
    });
    thread::sleep(DELAY);
    clock.advance(HOUR);
    let (got, elapsed) = rx.recv_timeout(LONG).expect("poller hung");
    assert_eq!(got, Some(5));
    assert!(elapsed < LONG / 2, "advance() did not wake the waiter");
}

/// A user type implementing `Delayed` orders by its own deadline.
#[test]
fn b_custom_delayed_type() {
    #[derive(Debug, PartialEq)]
    struct Job {
        id: u32,
        at: Instant,
    }
    impl Delayed for Job {
        fn deadline(&self) -> Instant {
            self.at
        }
    }
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    let t0 = clock.now();
    for (id, offset) in [(1, 30u64), (2, 10), (3, 20), (4, 10), (5, 40)] {
        q.put(Job {
            id,
            at: t0 + ms(offset),
        });
    }
    clock.advance(ms(25));
    let ids: Vec<u32> = q.drain_expired().into_iter().map(|j| j.id).collect();
    assert_eq!(ids, vec![2, 4, 3]);
    assert_eq!(q.len(), 2);
    assert_eq!(q.peek_deadline(), Some(t0 + ms(30)));
}

// ---------------------------------------------------------------------------
// Edge cases and races around the behaviours above
// ---------------------------------------------------------------------------

/// B-b boundary for the queue: an element is expired exactly at its deadline.
#[test]
fn b_expiry_boundary() {
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    q.put(DelayItem::at("x", clock.now() + ms(10)));
    clock.advance(ms(10) - Duration::from_nanos(1));
    assert!(q.poll().is_none());
    assert!(q.drain_expired().is_empty());
    clock.advance(Duration::from_nanos(1));
    assert_eq!(val(q.poll()), Some("x"));
}

/// Deadlines given as `Instant`s long in the past still come out in deadline
/// order (the earliest first), not merely FIFO.
#[test]
fn b_past_deadlines_keep_order() {
    let now = Instant::now();
    let day = Duration::from_secs(86_400);
    let (Some(two_days_ago), Some(three_days_ago)) =
        (now.checked_sub(day * 2), now.checked_sub(day * 3))
    else {
        return; // this platform cannot represent such Instants
    };
    let q: DelayQueue<DelayItem<&str>> = DelayQueue::new();
    q.put(DelayItem::at("two days ago", two_days_ago));
    q.put(DelayItem::at("three days ago", three_days_ago));
    q.put(DelayItem::at("now", now));
    let head = q.peek_deadline();
    let order: Vec<&str> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(order, vec!["three days ago", "two days ago", "now"]);
    assert_eq!(head, Some(three_days_ago));
}

/// Leader hand-off (d): several takers wait on a far head; three earlier
/// elements are put; every taker that can get one does, without a lost
/// wake-up, and none gets one early.
#[test]
fn b_leader_handoff_multiple_takers() {
    let q: Queue = Arc::new(DelayQueue::new());
    q.put(DelayItem::new(99, HOUR));
    let (tx, rx) = mpsc::channel();
    for _ in 0..3 {
        let (q, tx) = (q.clone(), tx.clone());
        thread::spawn(move || {
            let got = q
                .take()
                .map(|i| (Instant::now() >= i.deadline(), i.into_inner()));
            tx.send(got).unwrap();
        });
    }
    thread::sleep(DELAY);
    for (v, d) in [(1, 30u64), (2, 10), (3, 20)] {
        q.put(DelayItem::new(v, ms(d)));
    }
    let mut got: Vec<usize> = (0..3)
        .map(|_| {
            let (on_time, v) = rx.recv_timeout(LONG).expect("lost wake-up").unwrap();
            assert!(on_time, "element {v} taken early");
            v
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, vec![1, 2, 3]);
    assert_eq!(q.len(), 1);
    q.close();
}

/// Leader hand-off (d): a timed poller that gives up (maybe while holding
/// leadership) must not strand an untimed taker when the head expires.
#[test]
fn b_timed_poller_gives_up_without_stranding_taker() {
    for round in 0..20u64 {
        let q: Queue = Arc::new(DelayQueue::new());
        q.put(DelayItem::new(7, ms(15)));
        let q1 = q.clone();
        let poller = thread::spawn(move || val(q1.poll_timeout(ms(12 + round % 6))));
        thread::sleep(ms(1));
        let q2 = q.clone();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || tx.send(val(q2.take())).unwrap());
        let polled = poller.join().unwrap();
        let taken = match polled {
            Some(_) => None,
            None => Some(
                rx.recv_timeout(LONG)
                    .expect("taker stranded after the poller gave up"),
            ),
        };
        assert_eq!(polled.or(taken.flatten()), Some(7), "round {round}");
        q.close();
    }
}

/// Virtual time: advance() wakes every blocked taker that has a due element
/// (the woken leader hands off to the next).
#[test]
fn b_manual_clock_advance_wakes_all_takers() {
    let clock = ManualClock::new();
    let q: Queue = Arc::new(DelayQueue::with_clock(clock.clone()));
    let at = clock.now() + HOUR;
    for v in 0..3 {
        q.put(DelayItem::at(v, at));
    }
    let (tx, rx) = mpsc::channel();
    for _ in 0..3 {
        let (q, tx) = (q.clone(), tx.clone());
        thread::spawn(move || tx.send(val(q.take())).unwrap());
    }
    thread::sleep(DELAY);
    clock.advance(HOUR);
    let mut got: Vec<usize> = (0..3)
        .map(|_| {
            rx.recv_timeout(LONG)
                .expect("a taker was not woken")
                .unwrap()
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2]);
    q.close();
}

/// clear() while takers are blocked neither wakes them with None nor loses
/// them: an element put afterwards is delivered.
#[test]
fn b_clear_keeps_blocked_takers() {
    let q: Queue = Arc::new(DelayQueue::new());
    q.put(DelayItem::new(1, HOUR));
    let (tx, rx) = mpsc::channel();
    let q2 = q.clone();
    thread::spawn(move || tx.send(val(q2.take())).unwrap());
    thread::sleep(DELAY);
    q.clear();
    assert!(
        rx.recv_timeout(DELAY).is_err(),
        "take() returned after clear()"
    );
    q.put(DelayItem::new(2, ms(5)));
    assert_eq!(rx.recv_timeout(LONG), Ok(Some(2)));
    q.close();
}

/// remove(key) racing with poll: each element is obtained exactly once.
#[test]
fn b_remove_races_with_poll() {
    let clock = ManualClock::new();
    let q: Queue = Arc::new(DelayQueue::with_clock(clock.clone()));
    let keys: Vec<Key> = (0..2000)
        .map(|i| q.put(DelayItem::at(i, clock.now())))
        .collect();
    let q2 = q.clone();
    let poller = thread::spawn(move || {
        let mut got = Vec::new();
        while let Some(v) = val(q2.poll()) {
            got.push(v);
        }
        got
    });
    let mut removed: Vec<usize> = keys
        .iter()
        .rev()
        .filter_map(|k| val(q.remove(*k)))
        .collect();
    let mut all = poller.join().unwrap();
    all.append(&mut removed);
    all.sort_unstable();
    assert_eq!(all, (0..2000).collect::<Vec<_>>());
    assert!(q.is_empty());
}

/// Keys carry a generation: after many put/remove cycles reusing storage, no
/// stale key ever matches a new element.
#[test]
fn b_stale_keys_never_match_after_reuse() {
    let q: DelayQueue<DelayItem<u32>> = DelayQueue::new();
    let mut stale = Vec::new();
    for i in 0..500 {
        let k = q.put(DelayItem::new(i, HOUR));
        if i % 2 == 0 {
            assert_eq!(val(q.remove(k)), Some(i));
            stale.push(k);
        }
    }
    assert_eq!(q.len(), 250);
    for k in &stale {
        assert!(q.remove(*k).is_none());
    }
    q.clear();
    for i in 0..500 {
        q.put(DelayItem::new(i, HOUR));
    }
    for k in &stale {
        assert!(q.remove(*k).is_none());
    }
    assert_eq!(q.len(), 500);
}

/// Virtual time: the timeout of poll_timeout is real time, so a timed poll on
/// a frozen clock returns after its timeout instead of hanging.
#[test]
fn b_manual_clock_poll_timeout_is_real_time() {
    let clock = ManualClock::new();
    let q: Queue = Arc::new(DelayQueue::with_clock(clock.clone()));
    q.put(DelayItem::at(1, clock.now() + HOUR));
    let q2 = q.clone();
    let (got, waited) = within("poll_timeout on a frozen clock", move || {
        let start = Instant::now();
        (val(q2.poll_timeout(DELAY)), start.elapsed())
    });
    assert_eq!(got, None);
    assert!(waited >= DELAY);
    assert_eq!(q.len(), 1);
}

/// One manual clock drives a pool and a queue together.
#[test]
fn b_manual_clock_shared_by_pool_and_queue() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let q: Queue = Arc::new(DelayQueue::with_clock(clock.clone()));
    q.put(DelayItem::at(1, clock.now() + Duration::from_secs(60)));
    let (q2, c) = (q.clone(), clock.clone());
    let h = p
        .schedule(
            move || q2.put(DelayItem::at(2, c.now())),
            Duration::from_secs(60),
        )
        .unwrap();
    assert!(q.poll().is_none());
    clock.advance(Duration::from_secs(60));
    join(h).unwrap();
    let got: Vec<usize> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(got, vec![1, 2]);
}

/// B-l / part d: removing the head a taker is timing makes the taker move on
/// to the next element (not return the removed one, not hang).
#[test]
fn b_remove_head_while_taker_waits() {
    let q: Queue = Arc::new(DelayQueue::new());
    // The head is due 400 ms out, so a loaded machine's pauses do not let
    // the taker have it before the removal.
    let head = q.put(DelayItem::new(1, ms(400)));
    q.put(DelayItem::new(2, ms(800)));
    let (tx, rx) = mpsc::channel();
    let q2 = q.clone();
    thread::spawn(move || tx.send(val(q2.take())).unwrap());
    thread::sleep(ms(10));
    assert_eq!(val(q.remove(head)), Some(1));
    assert_eq!(rx.recv_timeout(LONG), Ok(Some(2)));
    assert!(q.is_empty());
}
