//! The delay queue's leader/follower hand-offs: takers, a new head, a clock
//! advance, close.

use super::*;

/// Two takers blocked, two due items put: the first taker out must signal
/// its successor (the put of the second item is not a new head, so it
/// signals nobody).
#[test]
fn two_takers_two_due_items() {
    loom::model(|| {
        let q = Arc::new(DelayQueue::new());
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.take().map(DelayItem::into_inner))
            })
            .collect();
        let at = past();
        q.put(DelayItem::at(1u32, at));
        q.put(DelayItem::at(2u32, at));
        let mut got: Vec<u32> = takers
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap()
                    .expect("take returned None on an open queue")
            })
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![1, 2]);
        assert!(q.is_empty());
    });
}

/// A leader times a far head; an earlier, already due item is put: the put
/// must clear the leader and signal, and the taker returns it with no time
/// passing (the manual clock never moves).
#[test]
fn new_head_wakes_the_leader() {
    loom::model(|| {
        let clock = ManualClock::new();
        let q = Arc::new(DelayQueue::with_clock(clock.clone()));
        q.put(DelayItem::at("far", clock.now() + FOREVER));
        let taker = {
            let q = q.clone();
            thread::spawn(move || q.take().map(DelayItem::into_inner))
        };
        q.put(DelayItem::at("due", clock.now()));
        assert_eq!(taker.join().unwrap(), Some("due"));
        assert_eq!(clock.elapsed(), Duration::ZERO);
        assert_eq!(q.len(), 1, "the far item stays");
    });
}

/// The same with the real clock: the leader sleeps (untimed under loom) on a
/// head an hour away; only the new-head signal can wake it.
#[test]
fn new_head_wakes_the_leader_real_clock() {
    loom::model(|| {
        let q = Arc::new(DelayQueue::new());
        q.put(DelayItem::new("far", FOREVER));
        let taker = {
            let q = q.clone();
            thread::spawn(move || q.take().map(DelayItem::into_inner))
        };
        q.put(DelayItem::at("due", past()));
        assert_eq!(taker.join().unwrap(), Some("due"));
        assert_eq!(q.len(), 1);
    });
}

/// Advancing a manual clock wakes a leader timing the head, and the
/// successor signal wakes the follower for the second due item.
#[test]
fn clock_advance_wakes_leader_and_follower() {
    loom::model(|| {
        let clock = ManualClock::new();
        let q = Arc::new(DelayQueue::with_clock(clock.clone()));
        let due = clock.now() + Duration::from_secs(60);
        q.put(DelayItem::at(1u32, due));
        q.put(DelayItem::at(2u32, due));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.take().map(DelayItem::into_inner))
            })
            .collect();
        clock.advance(Duration::from_secs(60));
        let mut got: Vec<u32> = takers
            .into_iter()
            .map(|t| t.join().unwrap().expect("take returned None"))
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![1, 2]);
    });
}

/// close() wakes every blocked taker (each leaving taker wakes the next).
#[test]
fn close_wakes_all_takers() {
    loom::model(|| {
        let q: Arc<DelayQueue<DelayItem<u32>>> = Arc::new(DelayQueue::new());
        q.put(DelayItem::new(9, FOREVER));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.take())
            })
            .collect();
        q.close();
        for t in takers {
            assert!(t.join().unwrap().is_none());
        }
    });
}
