//! Model-based property tests: random operation sequences on a
//! `DelayQueue` and on the pool's work queue, both on a `ManualClock`,
//! checked after every step against a `BTreeMap<(deadline, seq), _>` model
//! (same pop order, stale keys and handles answer "gone"), plus the heap's
//! internal invariants through `schedpool::internals` (not public API).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use schedpool::internals::{check_delay_queue, check_pool, pool_heap_index};
use schedpool::{DelayItem, DelayQueue, Key, ManualClock, ScheduledHandle, ScheduledThreadPool};

const IDLE: Duration = Duration::from_secs(20);

// ===== DelayQueue =====

#[derive(Debug, Clone)]
enum QOp {
    /// Put an item due this many ms from the clock's now (small range: ties).
    Put(u64),
    /// Remove by the key of the n-th put (mod the number of puts so far).
    Remove(usize),
    /// poll() once.
    Poll,
    /// take(), only when the model says something is due (it never blocks then).
    Take,
    /// drain_expired().
    Drain,
    /// Advance the clock by this many ms.
    Advance(u64),
    /// clear().
    Clear,
}

fn qop() -> impl Strategy<Value = QOp> {
    prop_oneof![
        6 => (0u64..20).prop_map(QOp::Put),
        3 => any::<usize>().prop_map(QOp::Remove),
        2 => Just(QOp::Poll),
        1 => Just(QOp::Take),
        1 => Just(QOp::Drain),
        3 => (0u64..8).prop_map(QOp::Advance),
        1 => Just(QOp::Clear),
    ]
}

/// Runs one sequence; `Err` names the first step that disagreed.
fn run_queue(ops: &[QOp]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let q: DelayQueue<DelayItem<usize>> = DelayQueue::with_clock(clock.clone());
    // (deadline in ms of virtual time, put number) -> put number
    let mut model: BTreeMap<(u64, usize), usize> = BTreeMap::new();
    let mut keys: Vec<(Key, u64)> = Vec::new();
    let mut now_ms = 0u64;
    let base = clock.now();
    for (step, op) in ops.iter().enumerate() {
        let due = |model: &BTreeMap<(u64, usize), usize>, now: u64| {
            model.keys().next().is_some_and(|&(d, _)| d <= now)
        };
        match *op {
            QOp::Put(ms) => {
                let n = keys.len();
                let deadline = now_ms + ms;
                let key = q.put(DelayItem::at(n, base + Duration::from_millis(deadline)));
                keys.push((key, deadline));
                model.insert((deadline, n), n);
            }
            QOp::Remove(i) => {
                if keys.is_empty() {
                    continue;
                }
                let n = i % keys.len();
                let (key, deadline) = keys[n];
                let expected = model.remove(&(deadline, n));
                let got = q.remove(key).map(DelayItem::into_inner);
                prop_assert_eq!(got, expected, "step {}: remove(key of put {})", step, n);
                // A second remove of the same key is always stale.
                prop_assert!(q.remove(key).is_none(), "step {}: key reused", step);
            }
            QOp::Poll => {
                let expected = if due(&model, now_ms) {
                    model.pop_first().map(|(_, v)| v)
                } else {
                    None
                };
                let got = q.poll().map(DelayItem::into_inner);
                prop_assert_eq!(got, expected, "step {}: poll", step);
            }
            QOp::Take => {
                if due(&model, now_ms) {
                    let expected = model.pop_first().map(|(_, v)| v);
                    let got = q.take().map(DelayItem::into_inner);
                    prop_assert_eq!(got, expected, "step {}: take", step);
                } else {
                    let got = q.poll_timeout(Duration::ZERO);
                    prop_assert!(got.is_none(), "step {}: poll_timeout(0) early", step);
                }
            }
            QOp::Drain => {
                let mut expected = Vec::new();
                while due(&model, now_ms) {
                    expected.push(model.pop_first().unwrap().1);
                }
                let got: Vec<usize> = q
                    .drain_expired()
                    .into_iter()
                    .map(DelayItem::into_inner)
                    .collect();
                prop_assert_eq!(got, expected, "step {}: drain_expired", step);
            }
            QOp::Advance(ms) => {
                now_ms += ms;
                clock.advance(Duration::from_millis(ms));
            }
            QOp::Clear => {
                q.clear();
                model.clear();
            }
        }
        prop_assert_eq!(q.len(), model.len(), "step {}: len", step);
        prop_assert_eq!(q.is_empty(), model.is_empty());
        let head = model
            .keys()
            .next()
            .map(|&(d, _)| base + Duration::from_millis(d));
        prop_assert_eq!(q.peek_deadline(), head, "step {}: peek_deadline", step);
        if let Err(e) = check_delay_queue(&q) {
            return Err(TestCaseError::fail(format!("step {step} ({op:?}): {e}")));
        }
        // Every key whose element left answers None (checked without
        // disturbing the live ones).
        for (n, &(key, deadline)) in keys.iter().enumerate() {
            if !model.contains_key(&(deadline, n)) {
                prop_assert!(
                    q.remove(key).is_none(),
                    "step {}: stale key {} matched",
                    step,
                    n
                );
            }
        }
    }
    // Whatever is left comes out in model order once everything is due.
    clock.advance(Duration::from_secs(3600));
    let rest: Vec<usize> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    prop_assert_eq!(rest, model.into_values().collect::<Vec<_>>());
    if let Err(e) = check_delay_queue(&q) {
        return Err(TestCaseError::fail(format!("after draining: {e}")));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn delay_queue_matches_model(ops in prop::collection::vec(qop(), 1..120)) {
        run_queue(&ops)?;
    }
}

// ===== the pool's work queue =====

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Once,
    /// Fixed rate, period in ms (>= 1).
    Rate(u64),
    /// Fixed delay, delay in ms (>= 1).
    Delay(u64),
}

#[derive(Debug, Clone)]
enum POp {
    /// Schedule a task first due this many ms from now.
    Schedule(u64, Kind),
    /// Cancel the n-th handle (mod the number so far); may be stale.
    Cancel(usize),
    /// Advance the clock by this many ms. After every step the test waits
    /// until the pool is idle: every due run has happened, in
    /// (deadline, seq) order, periodic tasks requeued as Java does.
    RunDue(u64),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        8 => Just(Kind::Once),
        1 => (1u64..6).prop_map(Kind::Rate),
        1 => (1u64..6).prop_map(Kind::Delay),
    ]
}

fn pop() -> impl Strategy<Value = POp> {
    prop_oneof![
        6 => ((0u64..20), kind()).prop_map(|(ms, k)| POp::Schedule(ms, k)),
        3 => any::<usize>().prop_map(POp::Cancel),
        3 => (0u64..8).prop_map(POp::RunDue),
    ]
}

/// The model of the work queue: `(deadline ms, seq) -> handle number`, and
/// each handle's current deadline while queued.
#[derive(Default)]
struct PoolModel {
    queue: BTreeMap<(u64, u64), usize>,
    deadline: Vec<Option<u64>>,
    kind: Vec<Kind>,
    seq: Vec<u64>,
}

impl PoolModel {
    /// Pops every run due at `now`, in order, requeueing periodic tasks.
    fn run_due(&mut self, now: u64) -> Vec<usize> {
        let mut ran = Vec::new();
        while let Some((&(d, seq), &n)) = self.queue.iter().next() {
            if d > now {
                break;
            }
            self.queue.remove(&(d, seq));
            ran.push(n);
            let next = match self.kind[n] {
                Kind::Once => None,
                Kind::Rate(p) => Some(d + p),
                Kind::Delay(p) => Some(now + p),
            };
            self.deadline[n] = next;
            if let Some(next) = next {
                self.queue.insert((next, seq), n);
            }
        }
        ran
    }
}

fn check_handles(
    step: usize,
    handles: &[ScheduledHandle<()>],
    model: &PoolModel,
) -> Result<(), TestCaseError> {
    for (n, h) in handles.iter().enumerate() {
        let queued = model.deadline[n].is_some();
        prop_assert_eq!(
            pool_heap_index(h).is_some(),
            queued,
            "step {}: handle {} queued mark",
            step,
            n
        );
        prop_assert_eq!(h.is_done(), !queued, "step {}: handle {} is_done", step, n);
    }
    if let Some(h) = handles.first() {
        if let Err(e) = check_pool(h) {
            return Err(TestCaseError::fail(format!("step {step}: {e}")));
        }
    }
    Ok(())
}

fn run_pool(ops: &[POp]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    // One worker: runs happen strictly one after the other, in pop order.
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    let log: Arc<Mutex<Vec<usize>>> = Arc::default();
    let mut model = PoolModel::default();
    let mut handles: Vec<ScheduledHandle<()>> = Vec::new();
    let mut now_ms = 0u64;
    let result = (|| {
        for (step, op) in ops.iter().enumerate() {
            match *op {
                POp::Schedule(ms, kind) => {
                    let n = handles.len();
                    let log = log.clone();
                    let delay = Duration::from_millis(ms);
                    let body = move || log.lock().unwrap().push(n);
                    let h = match kind {
                        Kind::Once => pool.schedule(body, delay),
                        Kind::Rate(p) => {
                            pool.schedule_at_fixed_rate(body, delay, Duration::from_millis(p))
                        }
                        Kind::Delay(p) => {
                            pool.schedule_with_fixed_delay(body, delay, Duration::from_millis(p))
                        }
                    }
                    .unwrap();
                    let deadline = now_ms + ms;
                    prop_assert!(
                        model.queue.insert((deadline, h.id()), n).is_none(),
                        "duplicate id"
                    );
                    model.deadline.push(Some(deadline));
                    model.kind.push(kind);
                    model.seq.push(h.id());
                    handles.push(h);
                }
                POp::Cancel(i) => {
                    if handles.is_empty() {
                        continue;
                    }
                    let n = i % handles.len();
                    let expected = match model.deadline[n].take() {
                        Some(d) => model.queue.remove(&(d, model.seq[n])).is_some(),
                        None => false,
                    };
                    let h = &handles[n];
                    prop_assert_eq!(h.cancel(), expected, "step {}: cancel({})", step, n);
                    prop_assert!(!h.cancel(), "step {}: second cancel({}) true", step, n);
                }
                POp::RunDue(ms) => {
                    now_ms += ms;
                    clock.advance(Duration::from_millis(ms));
                }
            }
            // After every step: once idle, exactly the due runs have
            // happened, in order, and nothing else (nothing early).
            prop_assert!(pool.wait_idle(IDLE), "step {}: not idle", step);
            let expected = model.run_due(now_ms);
            let got = std::mem::take(&mut *log.lock().unwrap());
            prop_assert_eq!(got, expected, "step {}: run order", step);
            prop_assert_eq!(
                pool.queue_len(),
                model.queue.len(),
                "step {}: queue_len",
                step
            );
            for (n, h) in handles.iter().enumerate() {
                if let Some(d) = model.deadline[n] {
                    let left = Duration::from_millis(d - now_ms);
                    prop_assert_eq!(h.delay(), left, "step {}: handle {} delay", step, n);
                }
            }
            check_handles(step, &handles, &model)?;
        }
        Ok(())
    })();
    drop(pool.shutdown_now());
    prop_assert!(pool.await_termination(IDLE), "pool did not terminate");
    result
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn pool_queue_matches_model(ops in prop::collection::vec(pop(), 1..80)) {
        run_pool(&ops)?;
    }
}
