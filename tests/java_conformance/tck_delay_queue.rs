//! JSR-166 TCK `DelayQueueTest` and its generic `BlockingQueueTest` part.

use super::*;

/// testEmpty: is_empty flips correctly across put and poll.
#[test]
fn dq_tck_empty() {
    let q: DelayQueue<DelayItem<u32>> = DelayQueue::new();
    assert!(q.is_empty());
    assert_eq!(q.len(), 0);
    q.put(DelayItem::new(1, Duration::ZERO));
    assert!(!q.is_empty());
    q.put(DelayItem::new(2, Duration::ZERO));
    assert!(q.poll().is_some());
    assert!(q.poll().is_some());
    assert!(q.is_empty());
    assert!(q.poll().is_none());
}

/// testRemainingCapacity (the queue is unbounded): len follows every poll and put.
#[test]
fn dq_tck_remaining_capacity() {
    let (q, clock, _) = populated(SIZE);
    for i in 0..SIZE {
        assert_eq!(q.len(), SIZE - i);
        assert_eq!(val(q.poll()), Some(i));
    }
    for i in 0..SIZE {
        assert_eq!(q.len(), i);
        q.put(DelayItem::at(i, clock.now()));
    }
    assert_eq!(q.len(), SIZE);
}

/// testOffer / testTimedOffer: put never blocks and always succeeds; every
/// put gets its own key.
#[test]
fn dq_tck_offer() {
    let q: DelayQueue<DelayItem<u32>> = DelayQueue::new();
    let keys: HashSet<Key> = (0..100)
        .map(|i| {
            q.put(DelayItem::new(
                i,
                if i % 2 == 0 { HOUR } else { Duration::ZERO },
            ))
        })
        .collect();
    assert_eq!(keys.len(), 100);
    assert_eq!(q.len(), 100);
}

/// testAdd: len grows by one per put; equal elements are all kept.
#[test]
fn dq_tck_add() {
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    let at = clock.now();
    for i in 0..SIZE {
        assert_eq!(q.len(), i);
        q.put(DelayItem::at(7u32, at));
    }
    assert_eq!(q.len(), SIZE);
    assert_eq!(q.drain_expired().len(), SIZE);
}

/// testPut: every element put is still there (found by its key); len = n.
#[test]
fn dq_tck_put() {
    let q: DelayQueue<DelayItem<usize>> = DelayQueue::new();
    let keys: Vec<Key> = (0..SIZE).map(|i| q.put(DelayItem::new(i, HOUR))).collect();
    assert_eq!(q.len(), SIZE);
    for (i, k) in keys.into_iter().enumerate() {
        assert_eq!(val(q.remove(k)), Some(i));
    }
    assert!(q.is_empty());
}

/// testPutWithTake: puts from another thread never block (4 puts of the same
/// value finish; len 4), and takes get them all.
#[test]
fn dq_tck_put_with_take() {
    let q: Queue = Arc::new(DelayQueue::new());
    let q2 = q.clone();
    within("4 puts", move || {
        for _ in 0..4 {
            q2.put(DelayItem::new(7, Duration::ZERO));
        }
    });
    assert_eq!(q.len(), 4);
    for _ in 0..4 {
        assert_eq!(take_within(&q), Some(7));
    }
    assert!(q.is_empty());
}

/// testTake: take returns the elements in deadline order.
#[test]
fn dq_tck_take() {
    let (q, _clock, _) = populated(SIZE);
    for i in 0..SIZE {
        assert_eq!(take_within(&q), Some(i));
    }
    assert!(q.is_empty());
}

/// testBlockingTake: after the queue is emptied, a blocked take is woken
/// (Java: by an interrupt; here by close(), which makes it return None).
#[test]
fn dq_tck_blocking_take() {
    let (q, _clock, _) = populated(SIZE);
    for i in 0..SIZE {
        assert_eq!(take_within(&q), Some(i));
    }
    let q2 = q.clone();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(val(q2.take())).unwrap());
    assert!(
        rx.recv_timeout(SHORT).is_err(),
        "take() on an empty queue returned"
    );
    q.close();
    assert_eq!(rx.recv_timeout(LONG), Ok(None));
}

/// testPoll: poll returns the elements in order, then None.
#[test]
fn dq_tck_poll() {
    let (q, _clock, _) = populated(SIZE);
    for i in 0..SIZE {
        assert_eq!(val(q.poll()), Some(i));
    }
    assert!(q.poll().is_none());
}

/// testTimedPoll0: poll_timeout(0) returns the expired elements in order, then None.
#[test]
fn dq_tck_timed_poll0() {
    let (q, _clock, _) = populated(SIZE);
    for i in 0..SIZE {
        assert_eq!(val(q.poll_timeout(Duration::ZERO)), Some(i));
    }
    assert!(q.poll_timeout(Duration::ZERO).is_none());
}

/// testTimedPoll: a long timed poll returns at once when an element is
/// expired; on an empty queue a timed poll waits at least its timeout.
#[test]
fn dq_tck_timed_poll() {
    let (q, _clock, _) = populated(SIZE);
    for i in 0..SIZE {
        let start = Instant::now();
        assert_eq!(val(q.poll_timeout(LONG)), Some(i));
        assert!(start.elapsed() < LONG / 2);
    }
    let start = Instant::now();
    assert!(q.poll_timeout(DELAY).is_none());
    assert!(start.elapsed() >= DELAY);
}

/// testInterruptedTimedPoll: a blocked timed poll can be woken (Java: by an
/// interrupt; here by close()), and after close a timed poll never blocks.
#[test]
fn dq_tck_interrupted_timed_poll() {
    let q: Queue = Arc::new(DelayQueue::new());
    let q2 = q.clone();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let start = Instant::now();
        let got = val(q2.poll_timeout(LONG));
        tx.send((got, start.elapsed())).unwrap();
    });
    thread::sleep(DELAY);
    q.close();
    let (got, elapsed) = rx.recv_timeout(LONG).expect("poll_timeout did not return");
    assert_eq!(got, None);
    assert!(elapsed < LONG / 2, "close() did not wake the timed poll");
    let start = Instant::now();
    assert!(q.poll_timeout(LONG).is_none());
    assert!(
        start.elapsed() < LONG / 2,
        "poll_timeout blocked on a closed queue"
    );
}

/// testPeek / testElement: peek_deadline is the deadline of what poll returns
/// next; None when empty.
#[test]
fn dq_tck_peek() {
    let (q, _clock, _) = populated(SIZE);
    for i in 0..SIZE {
        let peeked = q.peek_deadline();
        let item = q.poll().unwrap();
        assert_eq!(peeked, Some(item.deadline()));
        assert_eq!(*item.value(), i);
    }
    assert_eq!(q.peek_deadline(), None);
}

/// testContains: an element can be found (by key) until it is polled, never after.
#[test]
fn dq_tck_contains() {
    let (q, clock, keys) = populated(SIZE);
    for (i, k) in keys.into_iter().enumerate() {
        let item = q.poll().unwrap();
        assert_eq!(*item.value(), i);
        assert!(
            q.remove(k).is_none(),
            "key of a polled element still matches"
        );
        q.put(item); // back in, under a new key
        assert!(q.remove(k).is_none());
        assert_eq!(val(q.poll()), Some(i));
    }
    let _ = clock;
}

/// testClear: clear empties the queue (expired or not); old keys match
/// nothing afterwards; the queue can be reused.
#[test]
fn dq_tck_clear() {
    let (q, clock, keys) = populated(SIZE);
    q.put(DelayItem::at(99, clock.now() + HOUR));
    q.clear();
    assert!(q.is_empty());
    assert_eq!(q.len(), 0);
    assert!(q.poll().is_none());
    assert_eq!(q.peek_deadline(), None);
    q.put(DelayItem::at(1, clock.now()));
    for k in keys {
        assert!(q.remove(k).is_none());
    }
    assert_eq!(q.len(), 1);
    q.clear();
    assert!(q.is_empty());
}

/// testRemoveAll: removing exactly the listed elements (by key) leaves the
/// others, still in order; a second removal finds nothing.
#[test]
fn dq_tck_remove_all() {
    let (q, _clock, keys) = populated(SIZE);
    for (i, k) in keys.iter().enumerate() {
        if i % 3 == 0 {
            assert_eq!(val(q.remove(*k)), Some(i));
        }
    }
    for (i, k) in keys.iter().enumerate() {
        if i % 3 == 0 {
            assert!(q.remove(*k).is_none());
        }
    }
    let rest: Vec<usize> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(rest, (0..SIZE).filter(|i| i % 3 != 0).collect::<Vec<_>>());
}

/// testPollInExecutor: a timed poll running in one pool thread receives an
/// element put by another pool task.
#[test]
fn dq_tck_poll_in_executor() {
    let p = pool(2);
    let q: Queue = Arc::new(DelayQueue::new());
    let q1 = q.clone();
    let poller = p.submit(move || val(q1.poll_timeout(LONG))).unwrap();
    let q2 = q.clone();
    let putter = p
        .schedule(
            move || {
                q2.put(DelayItem::new(42, Duration::ZERO));
            },
            DELAY,
        )
        .unwrap();
    join(putter).unwrap();
    assert_eq!(join(poller).unwrap(), Some(42));
    assert!(q.is_empty());
}

/// testDelay: real delays come out by take() in deadline order, each only once
/// its deadline has passed.
#[test]
fn dq_tck_delay() {
    let q: Queue = Arc::new(DelayQueue::new());
    // One base instant: the deadlines' order does not depend on how far
    // apart the puts ran.
    let base = Instant::now();
    for d in [50u64, 30, 40, 10, 20] {
        q.put(DelayItem::at(d as usize, base + ms(d)));
    }
    let mut last = 0;
    for _ in 0..5 {
        let q2 = q.clone();
        let (item, taken_at) = within("take()", move || {
            let item = q2.take().unwrap();
            (item, Instant::now())
        });
        assert!(taken_at >= item.deadline(), "taken before its deadline");
        let v = item.into_inner();
        assert!(v > last, "out of order: {v} after {last}");
        last = v;
    }
    assert!(q.is_empty());
}

/// testPeekDelayed: peek sees an element that is not expired, even one at the
/// end of time (Duration::MAX saturates; it must not wrap into the past).
#[test]
fn dq_tck_peek_delayed() {
    let q: DelayQueue<DelayItem<u32>> = DelayQueue::new();
    q.put(DelayItem::new(1, Duration::MAX));
    let head = q.peek_deadline().expect("peek on a non-empty queue");
    assert!(head > Instant::now() + CENTURY);
    assert!(q.poll().is_none());
    assert_eq!(q.len(), 1);
}

/// testPollDelayed: poll returns None when the only element is unexpired.
#[test]
fn dq_tck_poll_delayed() {
    let q: DelayQueue<DelayItem<u32>> = DelayQueue::new();
    q.put(DelayItem::new(1, HOUR));
    assert!(q.poll().is_none());
    assert_eq!(q.len(), 1);
}

/// testTimedPollDelayed: a timed poll on an unexpired-only queue waits at
/// least its timeout, then returns None.
#[test]
fn dq_tck_timed_poll_delayed() {
    let q: DelayQueue<DelayItem<u32>> = DelayQueue::new();
    q.put(DelayItem::new(1, HOUR));
    let start = Instant::now();
    assert!(q.poll_timeout(DELAY).is_none());
    assert!(start.elapsed() >= DELAY);
    assert_eq!(q.len(), 1);
}

/// testDrainTo: drain_expired moves every expired element, in order; the
/// queue can be refilled and drained again; unexpired elements stay.
#[test]
fn dq_tck_drain_to() {
    let (q, clock, _) = populated(SIZE);
    let drained: Vec<usize> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(drained, (0..SIZE).collect::<Vec<_>>());
    assert!(q.is_empty());
    assert!(q.drain_expired().is_empty());
    q.put(DelayItem::at(1, clock.now()));
    q.put(DelayItem::at(0, clock.now()));
    q.put(DelayItem::at(5, clock.now() + HOUR));
    let drained: Vec<usize> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(
        drained,
        vec![1, 0],
        "FIFO among equal deadlines, unexpired kept"
    );
    assert_eq!(q.len(), 1);
}

/// testDrainToWithActivePut: draining while another thread puts loses
/// nothing: the drain gets at least the SIZE elements already there.
#[test]
fn dq_tck_drain_to_with_active_put() {
    let (q, clock, _) = populated(SIZE);
    let (q2, now) = (q.clone(), clock.now());
    let putter = thread::spawn(move || {
        q2.put(DelayItem::at(SIZE, now));
    });
    let drained = q.drain_expired();
    putter.join().unwrap();
    assert!(drained.len() >= SIZE);
    assert_eq!(drained.len() + q.len(), SIZE + 1);
}

/// Generic testTimedPollWithOffer: a timed poll times out, then receives an
/// element put while it waits, then is woken by close (Java: interrupt).
#[test]
fn dq_generic_timed_poll_with_offer() {
    let q: Queue = Arc::new(DelayQueue::new());
    let q2 = q.clone();
    let (tx, rx) = mpsc::channel();
    let timed_out = Latch::new(1);
    let t = timed_out.clone();
    thread::spawn(move || {
        let start = Instant::now();
        let first = val(q2.poll_timeout(DELAY));
        let first_elapsed = start.elapsed();
        t.count_down();
        let second = val(q2.poll_timeout(LONG));
        let third = val(q2.poll_timeout(LONG));
        tx.send((first, first_elapsed, second, third)).unwrap();
    });
    timed_out.await_();
    thread::sleep(ms(5));
    q.put(DelayItem::new(3, Duration::ZERO));
    thread::sleep(DELAY);
    q.close();
    let (first, first_elapsed, second, third) = rx.recv_timeout(LONG).expect("poller hung");
    assert_eq!(first, None);
    assert!(first_elapsed >= DELAY);
    assert_eq!(second, Some(3));
    assert_eq!(third, None);
}
