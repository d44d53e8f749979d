//! The durable queue's in-process leader/follower over a fake backend with
//! the Redis semantics that matter here.

use super::*;

/// A backend with the Redis semantics that matter here: a claim takes up to
/// `max` items and chains the marker when more are due; `wait` blocks until
/// the marker or `unblock` (never on time: loom has none).
#[derive(Debug, Default)]
struct FakeStore {
    state: Mutex<FakeState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct FakeState {
    due: Vec<String>,
    marker: bool,
    unblocked: bool,
    token: u64,
}

#[derive(Debug, Clone, Default)]
struct Fake(Arc<FakeStore>);

impl Fake {
    fn push(&self, id: &str) {
        let mut s = self.0.state.lock().unwrap();
        s.due.push(id.to_string());
        s.marker = true;
        self.0.cv.notify_all();
    }
}

mod fake_backend {
    use super::*;
    use schedpool::durable::*;

    fn unused<T>() -> Result<T, DurableError> {
        Err(DurableError::Config("not modelled".into()))
    }

    impl DurableBackend for Fake {
        fn put(&self, _: &str, _: &[u8], _: When, _: PutMode) -> Result<Put, DurableError> {
            unused()
        }
        fn claim(&self, _: Duration, max: usize, _: u32) -> Result<ClaimBatch, DurableError> {
            let mut s = self.0.state.lock().unwrap();
            let n = max.min(s.due.len());
            let mut items = Vec::new();
            for id in s.due.drain(..n).collect::<Vec<_>>() {
                s.token += 1;
                items.push(Claimed {
                    id,
                    token: s.token,
                    attempt: 1,
                    deadline_ms: 0,
                    due_ms: 0,
                    claimed_ms: 0,
                    envelope: vec![1, 0, 0],
                });
            }
            if !s.due.is_empty() {
                s.marker = true;
                self.0.cv.notify_all();
            }
            let wait = if s.due.is_empty() {
                None
            } else {
                Some(Duration::ZERO)
            };
            Ok(ClaimBatch { items, wait })
        }
        fn extend(&self, _: &[(&str, u64)], _: Duration) -> Result<Vec<bool>, DurableError> {
            unused()
        }
        fn ack(&self, _: &str, _: u64) -> Result<bool, DurableError> {
            unused()
        }
        fn nack(&self, _: &str, _: u64, _: Nack) -> Result<bool, DurableError> {
            unused()
        }
        fn ack_and_reschedule(
            &self,
            _: &str,
            _: u64,
            _: Repeat,
        ) -> Result<Option<u64>, DurableError> {
            unused()
        }
        fn cancel(&self, _: &str) -> Result<Cancelled, DurableError> {
            unused()
        }
        fn wait(&self, _: Option<Duration>, _: Duration) -> Result<bool, DurableError> {
            let mut s = self.0.state.lock().unwrap();
            loop {
                if std::mem::take(&mut s.marker) {
                    return Ok(true);
                }
                if std::mem::take(&mut s.unblocked) {
                    return Ok(false);
                }
                s = self.0.cv.wait(s).unwrap();
            }
        }
        fn unblock(&self) {
            self.0.state.lock().unwrap().unblocked = true;
            self.0.cv.notify_all();
        }
        fn counts(&self) -> Result<Counts, DurableError> {
            unused()
        }
        fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
            unused()
        }
        fn server_time_ms(&self) -> Result<u64, DurableError> {
            unused()
        }
        fn dead_letters(&self, _: usize) -> Result<Vec<Buried>, DurableError> {
            unused()
        }
        fn bury(&self, _: &str, _: u64, _: Option<&str>) -> Result<bool, DurableError> {
            unused()
        }
        fn requeue(&self, _: &str) -> Result<bool, DurableError> {
            unused()
        }
        fn purge(&self, _: &str) -> Result<bool, DurableError> {
            unused()
        }
    }
}

/// Two takers, two items put one after the other while they wait: each
/// taker gets one. The taker that leaves with an item must hand the leader
/// role on, or the other waits untimed for ever (a loom deadlock).
#[test]
fn durable_takers_hand_the_leader_role_on() {
    loom::model(|| {
        let store = Fake::default();
        let taker = Arc::new(schedpool::internals::DurableTaker::new(Arc::new(
            store.clone(),
        )));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let taker = taker.clone();
                thread::spawn(move || taker.take().unwrap().expect("open").id)
            })
            .collect();
        store.push("a");
        store.push("b");
        let mut got: Vec<String> = takers.into_iter().map(|t| t.join().unwrap()).collect();
        got.sort();
        assert_eq!(got, ["a", "b"]);
    });
}

/// close() while a taker leads (inside the backend's wait) or follows:
/// both return None.
#[test]
fn durable_close_releases_leader_and_follower() {
    loom::model(|| {
        let store = Fake::default();
        let taker = Arc::new(schedpool::internals::DurableTaker::new(Arc::new(store)));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let taker = taker.clone();
                thread::spawn(move || taker.take().unwrap().is_none())
            })
            .collect();
        taker.close();
        for t in takers {
            assert!(t.join().unwrap());
        }
    });
}
