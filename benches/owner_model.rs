//! A model of JDK 25's `DelayScheduler` shape, for the timeout workloads
//! only (W9, W9L): **not the library**, a bound on what that shape costs the
//! caller on this machine (`docs/performance-log.md`, "The owner-thread
//! shape, modelled").
//!
//! - Submitters never take a lock: `schedule` allocates the task, reads the
//!   clock and the sequence counter, and sends it down an unbounded
//!   channel (std's `mpsc`, a lock-free list). It wakes the owner only when
//!   the new deadline is earlier than the one the owner sleeps for.
//! - Cancel swaps the task's state, drops its closure at once, and sends the
//!   removal down a second channel: the heap is the owner's alone.
//! - One owner thread drains both channels into a binary heap it alone
//!   touches, runs what is due (on itself: the bodies of W9 are tiny) and
//!   sleeps until the head is due.
//!
//! What it leaves out, each of which a real pool would pay for, so the
//! bound is a low one: removal is lazy (a cancelled entry leaves the heap
//! when it reaches the top, within W9's 15 ms, instead of in O(log n) at
//! once); no run state, shutdown, counts or handles that can be joined;
//! no worker threads beside the owner; the owner's sleep has the OS's
//! default timer slack; and the owner's wake-up is published with `SeqCst`
//! on both sides, without a model checked by loom. A pool built this way
//! would also change what `cancel` promises (API.md: O(log n) removal from
//! the queue): the removal happens on the owner, later.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

/// What the owner keeps of a task.
pub trait Run: Send + Sync {
    /// `(deadline, seq)`: deadline in ns since the model's base.
    fn key(&self) -> (u64, u64);
    /// Runs the body if nobody cancelled it first.
    fn fire(&self);
}

const PENDING: u8 = 0;
const CANCELLED: u8 = 1;
const FIRED: u8 = 2;

/// A task: one allocation (the closure inline).
pub struct Job<F> {
    deadline: u64,
    seq: u64,
    state: AtomicU8,
    body: Mutex<Option<F>>,
}

impl<F: FnOnce() + Send> Run for Job<F> {
    fn key(&self) -> (u64, u64) {
        (self.deadline, self.seq)
    }

    fn fire(&self) {
        if self
            .state
            .compare_exchange(PENDING, FIRED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let body = self.body.lock().expect("a job's body").take();
            if let Some(body) = body {
                body();
            }
        }
    }
}

/// The handle a submitter keeps: the task, and the model it belongs to
/// (a plain reference, as a Java one is: the model's shared part is leaked,
/// a few hundred bytes a pool, so that a handle counts nothing).
pub struct Handle {
    job: Arc<dyn Cancel>,
    inner: &'static Inner,
}

/// The submitter's side of a task.
trait Cancel: Send + Sync {
    /// True if this call cancelled it; the closure is dropped here.
    fn cancel(&self) -> bool;
    fn as_run(self: Arc<Self>) -> Arc<dyn Run>;
}

impl<F: FnOnce() + Send + 'static> Cancel for Job<F> {
    fn cancel(&self) -> bool {
        if self
            .state
            .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        drop(self.body.lock().expect("a job's body").take());
        true
    }

    fn as_run(self: Arc<Self>) -> Arc<dyn Run> {
        self
    }
}

impl Handle {
    /// True if this call cancelled the task (its closure is dropped here,
    /// and the owner is sent its removal).
    pub fn cancel(&self) -> bool {
        if !self.job.cancel() {
            return false;
        }
        let job = Arc::clone(&self.job).as_run();
        with_senders(self.inner, |_, removals| {
            let _ = removals.send(job);
        });
        true
    }
}

struct Entry(Arc<dyn Run>);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed: `BinaryHeap` is a max-heap, the owner wants the earliest.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.0.key().cmp(&self.0.key())
    }
}

struct Inner {
    base: Instant,
    submissions: Mutex<Option<Sender<Arc<dyn Run>>>>,
    removals: Mutex<Option<Sender<Arc<dyn Run>>>>,
    /// The deadline the owner sleeps for (ns since `base`); 0 while it is
    /// awake and will look at the channels again before it sleeps.
    target: CachePadded<AtomicU64>,
    seq: CachePadded<AtomicU64>,
    stop: AtomicBool,
    owner: std::sync::OnceLock<Thread>,
}

/// The model's pool: one owner thread.
pub struct OwnerModel {
    inner: &'static Inner,
    owner: Option<JoinHandle<()>>,
}

/// A task as the channels carry it.
type Sent = Arc<dyn Run>;

/// A thread's senders to one model: the model's address, submissions,
/// removals.
type Senders = (usize, Sender<Sent>, Sender<Sent>);

thread_local! {
    static SENDERS: std::cell::RefCell<Option<Senders>> = const { std::cell::RefCell::new(None) };
}

impl OwnerModel {
    pub fn new(prefix: &str) -> OwnerModel {
        let (sub_tx, sub_rx) = channel();
        let (rem_tx, rem_rx) = channel();
        let inner: &'static Inner = Box::leak(Box::new(Inner {
            base: Instant::now(),
            submissions: Mutex::new(Some(sub_tx)),
            removals: Mutex::new(Some(rem_tx)),
            target: CachePadded::new(AtomicU64::new(0)),
            seq: CachePadded::new(AtomicU64::new(0)),
            stop: AtomicBool::new(false),
            owner: std::sync::OnceLock::new(),
        }));
        let owner = thread::Builder::new()
            .name(format!("{prefix}-owner"))
            .spawn(move || owner_loop(inner, &sub_rx, &rem_rx))
            .expect("the owner thread");
        inner.owner.set(owner.thread().clone()).expect("set once");
        OwnerModel {
            inner,
            owner: Some(owner),
        }
    }

    fn now(&self) -> u64 {
        self.inner.base.elapsed().as_nanos() as u64
    }

    pub fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Handle {
        let deadline = self.now() + delay.as_nanos() as u64;
        let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed);
        let job = Arc::new(Job {
            deadline,
            seq,
            state: AtomicU8::new(PENDING),
            body: Mutex::new(Some(f)),
        });
        with_senders(self.inner, |submissions, _| {
            submissions
                .send(Arc::clone(&job) as Arc<dyn Run>)
                .expect("the owner");
        });
        // After the send (SeqCst on both sides with the owner's store of
        // its target and its look at the channel): either the owner sees
        // this task before it sleeps, or this load sees its target.
        if deadline < self.inner.target.load(Ordering::SeqCst) {
            self.inner.owner.get().expect("started").unpark();
        }
        Handle {
            job,
            inner: self.inner,
        }
    }

    /// Stops the owner (pending tasks are dropped) and waits for it.
    pub fn teardown(mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        self.inner.submissions.lock().expect("senders").take();
        self.inner.removals.lock().expect("senders").take();
        SENDERS.with(|cell| cell.borrow_mut().take());
        self.inner.owner.get().expect("started").unpark();
        if let Some(owner) = self.owner.take() {
            owner.join().expect("the owner thread");
        }
    }
}

/// This thread's senders to `inner`'s owner, cloned once per thread and
/// model (std's `Sender` is `Sync`, but one `Mutex` around it would
/// serialise the submitters).
fn with_senders<R>(
    inner: &'static Inner,
    f: impl FnOnce(&Sender<Arc<dyn Run>>, &Sender<Arc<dyn Run>>) -> R,
) -> R {
    let id = inner as *const Inner as usize;
    SENDERS.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|(model, _, _)| *model != id) {
            let sub = inner.submissions.lock().expect("senders").clone();
            let rem = inner.removals.lock().expect("senders").clone();
            *cell = Some((id, sub.expect("running"), rem.expect("running")));
        }
        let (_, sub, rem) = cell.as_ref().expect("just set");
        f(sub, rem)
    })
}

fn owner_loop(
    inner: &Inner,
    submissions: &Receiver<Arc<dyn Run>>,
    removals: &Receiver<Arc<dyn Run>>,
) {
    let mut heap: BinaryHeap<Entry> = BinaryHeap::new();
    loop {
        if inner.stop.load(Ordering::SeqCst) {
            return;
        }
        inner.target.store(0, Ordering::SeqCst);
        while let Ok(job) = submissions.try_recv() {
            heap.push(Entry(job));
        }
        // The heap's reference is dropped when the entry reaches the top
        // (lazy removal; see the module's doc).
        while removals.try_recv().is_ok() {}
        let now = inner.base.elapsed().as_nanos() as u64;
        while heap.peek().is_some_and(|e| e.0.key().0 <= now) {
            heap.pop().expect("peeked").0.fire();
        }
        let next = heap.peek().map_or(u64::MAX, |e| e.0.key().0);
        inner.target.store(next, Ordering::SeqCst);
        // A look at the channel after publishing the target: a submission
        // sent before it that read the old target (0) did not wake us.
        if let Ok(job) = submissions.try_recv() {
            heap.push(Entry(job));
            continue;
        }
        match next {
            u64::MAX => thread::park(),
            next => {
                let now = inner.base.elapsed().as_nanos() as u64;
                if next > now {
                    thread::park_timeout(Duration::from_nanos(next - now));
                }
            }
        }
    }
}
