//! DelayQueue: order, FIFO ties, keys, blocking takes, close, clocks, and
//! deadlines read once at `put` (a `Delayed` whose deadline moves later).
//! Huge deadlines are in `tests/huge_durations.rs`, elements that panic in
//! `tests/panics.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{DelayItem, DelayQueue, Delayed, ManualClock};

const LONG: Duration = Duration::from_secs(3600);

#[test]
fn elements_come_out_in_deadline_order_never_early() {
    let q = DelayQueue::new();
    let start = Instant::now();
    // 100 ms apart: only a pause that long between two puts (whose
    // deadlines are read one call at a time) could reorder them.
    for ms in [300u64, 100, 200, 0, 400] {
        q.put(DelayItem::new(ms, Duration::from_millis(ms)));
    }
    let mut got = Vec::new();
    while let Some(item) = q.take() {
        assert!(
            Instant::now() >= item.deadline(),
            "taken before its deadline"
        );
        assert!(start.elapsed() >= Duration::from_millis(*item.value()));
        got.push(item.into_inner());
        if q.is_empty() {
            break;
        }
    }
    assert_eq!(got, vec![0, 100, 200, 300, 400]);
}

#[test]
fn equal_deadlines_are_fifo() {
    let q = DelayQueue::new();
    let at = Instant::now();
    for i in 0..1000 {
        q.put(DelayItem::at(i, at));
    }
    let got: Vec<i32> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(got, (0..1000).collect::<Vec<_>>());
}

#[test]
fn remove_by_key_and_stale_keys() {
    let q = DelayQueue::new();
    let a = q.put(DelayItem::new("a", LONG));
    let b = q.put(DelayItem::new("b", LONG));
    let c = q.put(DelayItem::new("c", Duration::ZERO));
    assert_eq!(q.len(), 3);
    assert_eq!(q.remove(b).map(DelayItem::into_inner), Some("b"));
    assert_eq!(q.remove(b), None, "a removed key is stale");
    assert_eq!(q.poll().map(DelayItem::into_inner), Some("c"));
    assert_eq!(q.remove(c), None, "a taken key is stale");
    // A new element may reuse b's storage; b's key must not reach it.
    let d = q.put(DelayItem::new("d", LONG));
    assert_eq!(q.remove(b), None);
    q.clear();
    assert_eq!(q.remove(a), None, "a cleared key is stale");
    assert_eq!(q.remove(d), None);
    assert!(q.is_empty());
}

#[test]
fn poll_only_returns_due_elements() {
    let q = DelayQueue::new();
    q.put(DelayItem::new(1, LONG));
    assert!(q.poll().is_none());
    assert_eq!(q.len(), 1, "PollUnexpired: size unchanged");
    let start = Instant::now();
    assert!(q.poll_timeout(Duration::from_millis(30)).is_none());
    assert!(
        start.elapsed() >= Duration::from_millis(30),
        "timed poll waits its timeout"
    );
    assert!(q.peek_deadline().unwrap() > Instant::now());
    assert!(q.drain_expired().is_empty());
}

#[test]
fn blocked_take_wakes_for_an_earlier_head() {
    let q = Arc::new(DelayQueue::new());
    q.put(DelayItem::new("far", LONG));
    let taker = {
        let q = q.clone();
        thread::spawn(move || q.take().map(DelayItem::into_inner))
    };
    thread::sleep(Duration::from_millis(50)); // let it become leader on "far"
    q.put(DelayItem::new("near", Duration::from_millis(10)));
    assert_eq!(taker.join().unwrap(), Some("near"));
}

#[test]
fn many_takers_all_receive() {
    let q = Arc::new(DelayQueue::<DelayItem<u64>>::new());
    let taken = Arc::new(AtomicUsize::new(0));
    let takers: Vec<_> = (0..8)
        .map(|_| {
            let (q, taken) = (q.clone(), taken.clone());
            thread::spawn(move || {
                while let Some(item) = q.take() {
                    assert!(Instant::now() >= item.deadline());
                    taken.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for i in 0..400u64 {
        q.put(DelayItem::new(i, Duration::from_millis(i % 37)));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while taken.load(Ordering::SeqCst) < 400 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    q.close();
    for t in takers {
        t.join().unwrap();
    }
    assert_eq!(taken.load(Ordering::SeqCst), 400);
}

#[test]
fn close_wakes_every_blocked_taker() {
    let q: Arc<DelayQueue<DelayItem<()>>> = Arc::new(DelayQueue::new());
    q.put(DelayItem::new((), LONG));
    let barrier = Arc::new(Barrier::new(5));
    let takers: Vec<_> = (0..4)
        .map(|i| {
            let (q, barrier) = (q.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                if i % 2 == 0 {
                    q.take()
                } else {
                    q.poll_timeout(LONG)
                }
            })
        })
        .collect();
    barrier.wait();
    thread::sleep(Duration::from_millis(50));
    q.close();
    for t in takers {
        assert!(t.join().unwrap().is_none());
    }
    assert!(q.is_closed());
    assert!(q.take().is_none(), "never blocks once closed");
    assert_eq!(q.len(), 1, "close keeps the elements");
}

#[test]
fn deadline_is_read_once_at_put() {
    /// A user type whose deadline changes after it was put.
    struct Shifty {
        calls: std::cell::Cell<u32>,
        base: Instant,
        id: u32,
    }
    impl Delayed for Shifty {
        fn deadline(&self) -> Instant {
            let n = self.calls.get();
            self.calls.set(n + 1);
            // First call: the real deadline; later calls: nonsense.
            if n == 0 {
                self.base + Duration::from_millis(u64::from(self.id))
            } else {
                self.base + LONG * (self.id % 3)
            }
        }
    }
    let q = DelayQueue::new();
    let base = Instant::now() - Duration::from_secs(1);
    for id in (0..50).rev() {
        q.put(Shifty {
            calls: Default::default(),
            base,
            id,
        });
    }
    let order: Vec<u32> = q.drain_expired().into_iter().map(|s| s.id).collect();
    assert_eq!(order, (0..50).collect::<Vec<_>>());
}

/// A `Delayed` whose deadline the test changes after `put`.
struct Moving {
    name: &'static str,
    deadline: Arc<Mutex<Instant>>,
}

impl Delayed for Moving {
    fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap()
    }
}

#[test]
fn a_delayed_type_whose_deadline_changes_after_put() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let q = DelayQueue::with_clock(clock.clone());
    let a = Arc::new(Mutex::new(t0 + Duration::from_secs(10)));
    let b = Arc::new(Mutex::new(t0 + Duration::from_secs(20)));
    let ka = q.put(Moving {
        name: "a",
        deadline: a.clone(),
    });
    q.put(Moving {
        name: "b",
        deadline: b.clone(),
    });
    // Move both after put: a far away, b to the past.
    *a.lock().unwrap() = t0 + Duration::from_secs(1000);
    *b.lock().unwrap() = t0 - Duration::from_secs(1);
    // The queue keeps the deadlines read at put: nothing is due yet, the
    // order is still a then b, and nothing panics or corrupts the heap.
    assert!(q.poll().is_none(), "b came out early");
    assert_eq!(q.peek_deadline(), Some(t0 + Duration::from_secs(10)));
    schedpool::internals::check_delay_queue(&q).unwrap();
    clock.advance(Duration::from_secs(10));
    assert_eq!(q.poll().map(|m| m.name), Some("a"));
    assert!(q.remove(ka).is_none());
    assert!(q.poll().is_none());
    clock.advance(Duration::from_secs(10));
    let rest: Vec<_> = q.drain_expired().into_iter().map(|m| m.name).collect();
    assert_eq!(rest, vec!["b"]);
    schedpool::internals::check_delay_queue(&q).unwrap();
}

#[test]
fn manual_clock_drives_deadlines() {
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    q.put(DelayItem::at("sms", clock.now() + Duration::from_secs(60)));
    q.put(DelayItem::at(
        "email",
        clock.now() + Duration::from_secs(120),
    ));
    let taker = {
        let q = q.clone();
        thread::spawn(move || q.take().map(DelayItem::into_inner))
    };
    thread::sleep(Duration::from_millis(20));
    assert!(!taker.is_finished(), "nothing is due on a frozen clock");
    clock.advance(Duration::from_secs(60));
    assert_eq!(taker.join().unwrap(), Some("sms"));
    assert!(q.poll().is_none());
    assert!(
        q.poll_timeout(Duration::from_millis(10)).is_none(),
        "timeouts stay real time"
    );
    clock.advance(Duration::from_secs(60));
    assert_eq!(q.poll().map(DelayItem::into_inner), Some("email"));
}

#[test]
fn values_are_dropped_outside_the_lock() {
    // A value whose Drop calls back into the queue must not deadlock.
    struct Reentrant(Arc<DelayQueue<DelayItem<u32>>>);
    impl Drop for Reentrant {
        fn drop(&mut self) {
            let _ = self.0.len();
        }
    }
    let inner = Arc::new(DelayQueue::new());
    let q = DelayQueue::new();
    for _ in 0..3 {
        q.put(DelayItem::new(Reentrant(inner.clone()), LONG));
    }
    q.clear();
    assert!(q.is_empty());
}

/// `put_after` stamps the deadline with the queue's own (manual) clock: the
/// value comes due when the clock is advanced by the delay, never before;
/// equal delays stay FIFO, and a blocked `take` wakes on the advance.
#[test]
fn put_after_reads_the_queues_manual_clock() {
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    let late = q.put_after("late", Duration::from_secs(3600));
    q.put_after("a", Duration::from_secs(1800));
    q.put_after("b", Duration::from_secs(1800));
    assert_eq!(
        q.peek_deadline(),
        Some(clock.now() + Duration::from_secs(1800)),
        "the deadline is on the manual clock"
    );
    clock.advance(Duration::from_secs(1799));
    assert!(q.poll().is_none(), "never early");
    let taker = {
        let q = Arc::clone(&q);
        thread::spawn(move || q.take().map(DelayItem::into_inner))
    };
    clock.advance(Duration::from_secs(1));
    assert_eq!(taker.join().unwrap(), Some("a"), "a blocked take wakes");
    assert_eq!(q.poll().map(DelayItem::into_inner), Some("b"), "FIFO");
    assert!(q.poll().is_none());
    assert_eq!(q.remove(late).map(DelayItem::into_inner), Some("late"));
    q.put_after("huge", Duration::MAX);
    clock.advance(Duration::from_secs(1800));
    assert!(q.poll().is_none(), "Duration::MAX never comes due");
}
