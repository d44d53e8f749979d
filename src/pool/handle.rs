//! [`ScheduledHandle`] (Java's `ScheduledFuture`, plus control of periodic
//! tasks) and [`PendingTask`] (what `shutdown_now` hands back).
//!
//! # Invariants
//!
//! - A handle never keeps the pool *open* (it holds the shared core, not a
//!   pool clone), and dropping it does not cancel the task (Java semantics).
//! - `cancel` returns true only for the call whose compare-and-swap moved
//!   the task to `CANCELLED`; that call removes the task from the heap
//!   (with `remove_on_cancel`, the default) and completes the handle.
//! - A `PendingTask` always completes its handle: by running, or, when
//!   dropped unrun, as cancelled. No `join` can hang on a task that will
//!   never run.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use crate::base::clock::{delay_nanos, to_instant};
use crate::base::error::{drop_quietly, Rejected, TaskError};
use crate::pool::shared::Shared;
use crate::task::completion::Completion;
use crate::task::header::{CANCELLED, DONE, PAUSED, RUNNING, SCHEDULED};
use crate::task::ptr::TaskPtr;

/// Where a task is in its life ([`ScheduledHandle::state`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{ScheduledThreadPool, TaskState};
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool.schedule(|| (), Duration::from_secs(60))?;
/// assert_eq!(h.state(), TaskState::Scheduled);
/// h.cancel();
/// assert_eq!(h.state(), TaskState::Cancelled);
/// let done = pool.submit(|| ())?;
/// assert!(done.wait_timeout(Duration::from_secs(5)));
/// assert_eq!(done.state(), TaskState::Done);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskState {
    /// Waiting for its (next) run.
    Scheduled,
    /// Running now.
    Running,
    /// Paused: out of the queue until resumed.
    Paused,
    /// Finished: completed, stopped by a limit, or failed (a panic, or a
    /// periodic body's `Err`).
    Done,
    /// Cancelled.
    Cancelled,
}

/// The handle of a scheduled task (Java's `ScheduledFuture`): cancel it,
/// ask about it, wait for it, `.await` it, and steer a periodic task
/// (pause, resume, trigger, change its period).
///
/// `Send + Sync`; dropping it does not cancel the task: it detaches it (it
/// still runs), and the compiler warns about a handle left unused. For a
/// handle that cancels on drop, see [`cancel_on_drop`](Self::cancel_on_drop). A periodic task's
/// handle completes only when the task is cancelled, fails (panics or
/// returns `Err`, under the default [`OnFailure::Stop`](crate::OnFailure::Stop)),
/// reaches a run limit, or is dropped by a shutdown.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool.schedule(|| 6 * 7, Duration::from_millis(5))?;
/// assert!(h.delay() <= Duration::from_millis(5));
/// assert_eq!(h.join()?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Async code awaits it without blocking a thread:
///
/// ```
/// # use std::time::Duration;
/// # use schedpool::ScheduledThreadPool;
/// # let pool = ScheduledThreadPool::new(1);
/// async fn later(pool: &ScheduledThreadPool) -> u32 {
///     pool.schedule(|| 7, Duration::from_millis(1)).unwrap().await.unwrap()
/// }
/// # let _ = later(&pool);
/// ```
#[must_use = "dropping a ScheduledHandle detaches the task (it still runs); keep it to cancel or join, or call `.detach()` to let it run unobserved, or `.cancel_on_drop()` to cancel on drop"]
pub struct ScheduledHandle<T> {
    task: TaskPtr,
    pool: Arc<Shared>,
    /// Invariant in `T` (as `Completion<T>` is): a handle coerced to a
    /// supertype would ask its task for a cell of another type.
    result: PhantomData<fn(T) -> T>,
}

impl<T: 'static> ScheduledHandle<T> {
    /// A handle to `task`, whose result is a `T`.
    pub(crate) fn new(task: TaskPtr, pool: Arc<Shared>) -> Self {
        ScheduledHandle {
            task,
            pool,
            result: PhantomData,
        }
    }

    /// The task's result cell (a one-shot task creates it on first need).
    fn completion(&self) -> Arc<Completion<T>> {
        let mut cell: Option<Arc<Completion<T>>> = None;
        self.task.result_cell(&mut cell);
        cell.expect("a handle's task keeps a result of the handle's type")
    }

    /// The task, and the pool it was submitted to (for an idle timer's
    /// touch).
    pub(super) fn task_and_pool(&self) -> (&TaskPtr, &Arc<Shared>) {
        (&self.task, &self.pool)
    }

    /// The task's header and pool core, for [`crate::internals`].
    pub(crate) fn internals(&self) -> (&crate::task::header::Header, &Arc<Shared>) {
        (self.task.header(), &self.pool)
    }

    /// The task as the queue sees it (the same allocation).
    fn job(&self) -> TaskPtr {
        self.task.clone()
    }

    /// Cancels the task. Returns true only if this call cancelled it: false
    /// if it had already completed, failed (panicked, or a periodic body's
    /// `Err` stopped it) or been cancelled.
    ///
    /// When it returns true: the body never runs after that; the closure
    /// and everything it captured are dropped before `cancel` returns (a
    /// body that is running at that moment finishes its run, is dropped
    /// when it ends, and never runs again); the handle resolves to
    /// [`TaskError::Cancelled`] at once;
    /// [`queue_len`](crate::ScheduledThreadPool::queue_len),
    /// [`stats`](crate::ScheduledThreadPool::stats) and the metrics stop
    /// counting the task at once, and
    /// [`shutdown_now`](crate::ScheduledThreadPool::shutdown_now) never
    /// returns it.
    ///
    /// `cancel` never waits on the pool lock: the task's queue node (a
    /// 16-byte entry, and the 40-byte task it points to) is left to the
    /// pool's workers, which own the queue, as JDK 25's `DelayScheduler`
    /// does. They reclaim it at their next wake-up, and no later than
    /// 10 ms after the cancel while a worker waits (if every worker is
    /// running a task, when one of them next takes the pool lock); when the
    /// nodes waiting for that pass a quarter of the queue, a worker is woken
    /// to reclaim them at once. Cancelling 1M pending tasks leaves at most
    /// 1 MiB behind once the bound has passed (`tests/cancel_reclaim.rs`).
    /// Built with `remove_on_cancel(false)` (Java's default), the node
    /// stays until its deadline and then makes a no-op run, as in Java;
    /// the closure is dropped at once all the same.
    ///
    /// Dropping a handle does not cancel (Java semantics): the task is
    /// detached and still runs. To cancel on drop instead (a timeout lost in
    /// a `select!` arm or an early return), wrap the handle in a guard with
    /// [`cancel_on_drop`](Self::cancel_on_drop).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskError};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let close_unpaid = pool.schedule(|| "closed", Duration::from_secs(1800))?;
    /// // The customer paid: the timeout goes, closure and all.
    /// assert!(close_unpaid.cancel());
    /// assert!(!close_unpaid.cancel(), "only the first call cancels");
    /// assert_eq!(pool.queue_len(), 0);
    /// assert_eq!(close_unpaid.join(), Err(TaskError::Cancelled));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self) -> bool {
        self.cancel_by(crate::task::header::Header::try_cancel)
    }

    /// Cancels the task only if no run of its body has started: `true`
    /// means its body never runs (a periodic task: no run is in progress,
    /// and none starts after), with everything [`cancel`](Self::cancel)'s
    /// `true` promises; `false` means the body has run or is running (or
    /// the task was cancelled already), and nothing changed.
    ///
    /// [`cancel`](Self::cancel), as Java's `cancel(false)`, also succeeds
    /// on a task whose body is running (the run finishes; its result is
    /// dropped), so its `true` cannot tell a caller that the body did not
    /// run. This one can: when a reply races its timeout, answer only if it
    /// returns `true`, and the request is answered exactly once (the guide,
    /// "With tokio"; [`CancelOnDrop::defuse`](crate::CancelOnDrop::defuse)
    /// is the same for a guard).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let timeout = pool.schedule(|| println!("504"), Duration::from_secs(30))?;
    /// assert!(timeout.cancel_if_not_started(), "not due: never runs");
    ///
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// let (release, release_rx) = std::sync::mpsc::channel::<()>();
    /// let running = pool.submit(move || {
    ///     started_tx.send(()).unwrap();
    ///     release_rx.recv().unwrap();
    /// })?;
    /// started.recv()?;
    /// assert!(!running.cancel_if_not_started(), "its body is running");
    /// release.send(())?;
    /// assert!(running.join().is_ok(), "and it completes");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel_if_not_started(&self) -> bool {
        self.cancel_by(crate::task::header::Header::try_cancel_idle)
    }

    /// Cancels through the header's transition `cancel`, then drops the
    /// task's queue entry and completes its handle.
    fn cancel_by(&self, cancel: fn(&crate::task::header::Header) -> bool) -> bool {
        let header = self.task.header();
        if !cancel(header) {
            return false;
        }
        self.task.cancelled();
        self.pool.cancelled(self.task.clone());
        true
    }

    /// Drops the handle on purpose: the task is detached and still runs
    /// (what dropping the handle does, said out loud, so the compiler's
    /// unused-handle warning goes away).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use schedpool::ScheduledThreadPool;
    /// let pool = ScheduledThreadPool::new(1);
    /// pool.schedule(|| println!("reminder"), Duration::from_millis(1))?.detach();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn detach(self) {}

    /// True if the task was cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule(|| (), Duration::from_secs(60))?;
    /// assert!(!h.is_cancelled());
    /// h.cancel();
    /// assert!(h.is_cancelled() && h.is_done());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.task.header().is_cancelled()
    }

    /// True once the task completed, failed (panicked, or a periodic body's
    /// `Err` stopped it) or was cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.submit(|| 1)?;
    /// assert!(h.wait_timeout(Duration::from_secs(5)));
    /// assert!(h.is_done());
    /// assert!(!pool.schedule(|| 2, Duration::from_secs(60))?.is_done());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_done(&self) -> bool {
        self.task.header().is_done()
    }

    /// Time left until the task is (next) due, by the pool's clock;
    /// `Duration::ZERO` when due or done. For a calendar task, the time
    /// until the pool next looks at it (at most its wall-clock check
    /// interval); its next fire is [`next_fire`](Self::next_fire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool.schedule(|| (), Duration::from_secs(30))?;
    /// clock.advance(Duration::from_secs(10));
    /// assert_eq!(h.delay(), Duration::from_secs(20));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delay(&self) -> Duration {
        let header = self.task.header();
        if header.is_done() {
            return Duration::ZERO;
        }
        Duration::from_nanos(header.deadline().saturating_sub(self.pool.clock.now()))
    }

    /// The task's id: its submission sequence number, also the `id` field of
    /// its `task` tracing span. Ids wrap after 2^53 submissions (28 years at
    /// ten million a second).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{RunInfo, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.submit(|| RunInfo::current().map(|run| run.id()))?;
    /// let id = h.id();
    /// assert_eq!(h.join()?, Some(id), "the same id inside the run");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.task.header().seq()
    }

    /// Where the task is in its life.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskState};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let sync = pool.schedule_at_fixed_rate(|| (), Duration::from_secs(60), Duration::from_secs(60))?;
    /// assert_eq!(sync.state(), TaskState::Scheduled);
    /// sync.pause();
    /// assert_eq!(sync.state(), TaskState::Paused);
    /// sync.cancel();
    /// assert_eq!(sync.state(), TaskState::Cancelled);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> TaskState {
        match self.task.header().state() {
            SCHEDULED => TaskState::Scheduled,
            RUNNING => TaskState::Running,
            PAUSED => TaskState::Paused,
            DONE => TaskState::Done,
            CANCELLED => TaskState::Cancelled,
            _ => unreachable!("a state word's base is one of five states"),
        }
    }

    /// When the task is next due (by the pool's clock); `None` once it is
    /// done or while it is paused. While a run is in progress this is the
    /// run's own due time. For a calendar task, see
    /// [`next_fire`](Self::next_fire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let flush = pool.schedule_at_fixed_rate(|| (), Duration::from_secs(10), Duration::from_secs(10))?;
    /// assert_eq!(flush.next_run(), Some(clock.now() + Duration::from_secs(10)));
    /// flush.pause();
    /// assert_eq!(flush.next_run(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_run(&self) -> Option<Instant> {
        let header = self.task.header();
        matches!(header.state(), SCHEDULED | RUNNING).then(|| to_instant(header.deadline()))
    }

    /// A calendar task's next fire time by the wall clock (the run in
    /// progress's own, while it runs), without jitter; `None` for other
    /// tasks, and once done or while paused. Unlike
    /// [`next_run`](Self::next_run), which is when the pool next looks at
    /// the task (at most its wall-clock check interval ahead), this is
    /// the schedule's time.
    ///
    /// ```
    /// # use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// # use schedpool::{calendar::Schedule, ScheduledThreadPool};
    /// # #[derive(Debug)] struct NextSecond;
    /// # impl Schedule for NextSecond {
    /// #     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    /// #         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    /// #         Some(UNIX_EPOCH + Duration::from_secs(s + 1))
    /// #     }
    /// # }
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule_calendar(|| (), NextSecond)?;
    /// assert!(h.next_fire().unwrap() > SystemTime::now() - Duration::from_millis(1));
    /// assert_eq!(pool.schedule(|| (), Duration::ZERO)?.next_fire(), None);
    /// # h.cancel();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_fire(&self) -> Option<SystemTime> {
        let header = self.task.header();
        if !matches!(header.state(), SCHEDULED | RUNNING) {
            return None;
        }
        self.task.cadence()?.plan()?.next_fire()
    }

    /// Runs completed so far (a one-shot: 0 or 1; runs that panicked count).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let tick = pool.schedule_at_fixed_rate(|| (), Duration::ZERO, Duration::from_secs(1))?;
    /// for _ in 0..3 {
    ///     assert!(pool.wait_idle(Duration::from_secs(5)));
    ///     clock.advance(Duration::from_secs(1));
    /// }
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(tick.run_count(), 4, "at 0, 1, 2 and 3 s");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_count(&self) -> u64 {
        self.task.runs()
    }

    /// Runs of a periodic task that failed so far, by a panic or an `Err`
    /// from its body (whatever its [`OnFailure`](crate::OnFailure) policy);
    /// for a one-shot, 1 if it panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, OnFailure, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let mut attempt = 0;
    /// let sync = pool
    ///     .at_fixed_rate(Duration::from_secs(60))
    ///     .on_failure(OnFailure::Continue)
    ///     .start(move || {
    ///         attempt += 1;
    ///         if attempt == 1 { Err(format!("upstream down (attempt {attempt})")) } else { Ok(()) }
    ///     })?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(sync.failure_count(), 1);
    /// assert_eq!(sync.last_failure().as_deref(), Some("upstream down (attempt 1)"));
    /// clock.advance(Duration::from_secs(60));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!((sync.run_count(), sync.failure_count()), (2, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure_count(&self) -> u64 {
        match self.task.cadence() {
            Some(control) => control.failures(),
            None => u64::from(self.last_failure().is_some()),
        }
    }

    /// The message of the most recent failure, if any run failed: the panic
    /// message, or the `Display` text of the `Err` the body returned. Once
    /// [`is_done`](Self::is_done) is true, a one-shot task's answer is
    /// final (this waits the moment it takes to be recorded).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.submit(|| -> u32 { panic!("bad row 17") })?;
    /// assert!(h.wait_timeout(Duration::from_secs(5)));
    /// assert_eq!(h.last_failure().as_deref(), Some("bad row 17"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn last_failure(&self) -> Option<String> {
        match self.task.cadence() {
            Some(control) => control.last_failure(),
            None => {
                let header = self.task.header();
                let cell = self.completion();
                if header.state() == DONE {
                    // Finished: its outcome is written right after the
                    // state says so. Wait for it, so that `is_done` implies
                    // an answer here.
                    cell.wait_timeout(header, Duration::MAX);
                }
                cell.panic_message()
            }
        }
    }

    /// Pauses the task: a waiting task leaves the queue; a running one
    /// pauses when its run ends. Runs missed while paused are not replayed.
    /// Returns false if it was not waiting or running (done, cancelled,
    /// already paused), or once the pool is shutting down: shutdown
    /// completes paused tasks as cancelled, since nobody could resume them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let report = pool.schedule_at_fixed_rate(|| (), Duration::from_secs(10), Duration::from_secs(10))?;
    /// assert!(report.pause()); // maintenance window
    /// assert!(!report.pause(), "already paused");
    /// clock.advance(Duration::from_secs(60));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(report.run_count(), 0, "nothing runs while paused");
    /// assert_eq!(pool.queue_len(), 0, "a paused task is out of the queue");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pause(&self) -> bool {
        self.pool.pause(&self.job())
    }

    /// Resumes a paused task. A fixed-rate task runs next at the first
    /// point of its grid (`first + n * period`) at or after now; the runs
    /// missed while paused are not replayed. A fixed-delay task runs at
    /// once, even if its old next run was later (also during its initial
    /// delay), and its delay then counts from the end of that run. A
    /// calendar task runs next at its pending fire if the wall clock has
    /// not passed it, else at the first fire after now (a schedule with no
    /// fire left completes the handle with `Ok(())`). Returns false if it
    /// was not paused.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let every_10s = pool.schedule_at_fixed_rate(|| (), Duration::from_secs(10), Duration::from_secs(10))?;
    /// let start = clock.now();
    /// every_10s.pause();
    /// clock.advance(Duration::from_secs(35));
    /// assert!(every_10s.resume());
    /// // Back on its grid: the next point after now, 40 s; 10, 20 and 30 s are not replayed.
    /// assert_eq!(every_10s.next_run(), Some(start + Duration::from_secs(40)));
    /// assert!(!every_10s.resume(), "not paused any more");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resume(&self) -> bool {
        self.pool.resume(&self.job())
    }

    /// Runs the task now instead of at its deadline. A periodic task that
    /// is running runs again right after (it never overlaps itself); its
    /// schedule continues from the run it pulled forward. Returns false if
    /// there is no run to pull forward (done, cancelled, paused, a running
    /// one-shot, or an idle timer, which fires on idleness only).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let nightly = pool.schedule(|| "report built", Duration::from_secs(6 * 3600))?;
    /// assert!(nightly.trigger(), "an operator asks for it now");
    /// assert_eq!(nightly.join()?, "report built");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trigger(&self) -> bool {
        self.pool.trigger(&self.job())
    }

    /// Changes a periodic task's period (fixed rate) or delay (fixed delay),
    /// in place. The grid keeps its anchor:
    ///
    /// - A waiting fixed-rate task's next run moves to one new period after
    ///   the previous grid point (the previous run's due time, not its
    ///   start, and not the time of a `trigger`), and the grid goes on from
    ///   there. If that point is already past, the run is due at once, and
    ///   it is a late run like any other: the task's
    ///   [`MissedTicks`](crate::MissedTicks) policy decides what follows.
    ///   `Burst` (the default) also runs, back to back, the other points of
    ///   the new grid already passed; `Skip` goes on at the first grid point
    ///   after now; `Delay` goes on one period after the late run started.
    ///   For example, period 10 s, a run at 0 s, `set_period(2 s)` at 9 s:
    ///   `Burst` runs four times at 9 s (for 2, 4, 6 and 8 s), then at 10,
    ///   12, ... s; `Skip` runs once at 9 s, then at 10, 12, ... s; `Delay`
    ///   runs once at 9 s, then at 11, 13, ... s.
    /// - A waiting fixed-delay task's next run moves to the new delay after
    ///   the previous run ended, or at once if that is past.
    /// - A task still waiting for its first run keeps its initial delay.
    /// - A paused task's next run is moved the same way, and
    ///   [`resume`](Self::resume) starts from that new grid.
    /// - A running task uses the new period when its run ends.
    ///
    /// # Errors
    ///
    /// [`Rejected`] for a zero period, a one-shot or calendar task, or a
    /// finished task.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let start = clock.now();
    /// let poll = pool.schedule_at_fixed_rate(|| (), Duration::from_secs(60), Duration::from_secs(60))?;
    /// // Load is high: poll every 5 minutes instead.
    /// poll.set_period(Duration::from_secs(300))?;
    /// assert_eq!(poll.period(), Some(Duration::from_secs(300)));
    /// assert_eq!(poll.next_run(), Some(start + Duration::from_secs(60)), "the first run keeps its delay");
    /// assert!(poll.set_period(Duration::ZERO).unwrap_err().is_invalid_argument());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_period(&self, period: Duration) -> Result<(), Rejected> {
        if period.is_zero() {
            return Err(Rejected::invalid("period must be greater than zero"));
        }
        match self.task.cadence() {
            None => return Err(Rejected::invalid("only a periodic task has a period")),
            Some(control) if control.plan().is_some() => {
                return Err(Rejected::invalid(
                    "a calendar task has no period: its schedule decides",
                ))
            }
            Some(_) => {}
        }
        if self.pool.set_period(&self.job(), delay_nanos(period)) {
            Ok(())
        } else {
            Err(Rejected::invalid("the task has finished"))
        }
    }

    /// The current period (fixed rate) or delay (fixed delay); `None` for a
    /// one-shot or calendar task.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let gc = pool.schedule_with_fixed_delay(|| (), Duration::from_secs(1), Duration::from_secs(30))?;
    /// assert_eq!(gc.period(), Some(Duration::from_secs(30)));
    /// assert_eq!(pool.schedule(|| (), Duration::from_secs(1))?.period(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn period(&self) -> Option<Duration> {
        self.task
            .cadence()
            .filter(|c| c.plan().is_none())
            .map(|c| Duration::from_nanos(c.period()))
    }

    /// Blocks up to `timeout` (real time); true once the task is done
    /// (completed, failed or cancelled). Consumes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let slow = pool.schedule(|| "done", Duration::from_secs(60))?;
    /// assert!(!slow.wait_timeout(Duration::from_millis(10)), "not within 10 ms");
    /// let quick = pool.submit(|| "done")?;
    /// assert!(quick.wait_timeout(Duration::from_secs(5)));
    /// assert_eq!(quick.join()?, "done", "the result is still there");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.completion().wait_timeout(self.task.header(), timeout)
    }

    /// Blocks until the task is done and returns its result.
    ///
    /// # Errors
    ///
    /// [`TaskError::Cancelled`] if it was cancelled (at once, even if its
    /// body is still running), [`TaskError::Panicked`] if it panicked,
    /// [`TaskError::Failed`] if a periodic body's `Err` stopped it.
    ///
    /// # Panics
    ///
    /// If the result was already taken by awaiting the handle.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{ScheduledThreadPool, TaskError};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// assert_eq!(pool.submit(|| 6 * 7)?.join(), Ok(42));
    /// let failed = pool.submit(|| -> u32 { panic!("boom") })?.join();
    /// assert!(matches!(failed, Err(TaskError::Panicked(p)) if p == "boom"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T, TaskError> {
        self.completion().join(self.task.header())
    }
}

/// Polling after the handle returned `Ready` panics, like most futures.
impl<T: 'static> Future for ScheduledHandle<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.completion().poll(self.task.header(), cx)
    }
}

impl<T: 'static> fmt::Debug for ScheduledHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.task.header();
        f.debug_struct("ScheduledHandle")
            .field("id", &header.seq())
            .field("kind", &header.kind().name())
            .field("state", &self.state())
            .finish()
    }
}

/// A task that [`shutdown_now`](crate::ScheduledThreadPool::shutdown_now)
/// took out of the queue before it started.
///
/// [`run`](PendingTask::run) it on the current thread, or drop it: its handle
/// then completes with [`TaskError::Cancelled`]. Either way nobody waiting
/// on the handle hangs.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(1);
/// let flush = pool.schedule(|| "flushed", Duration::from_secs(60))?;
/// let audit = pool.schedule(|| "audited", Duration::from_secs(60))?;
/// for task in pool.shutdown_now() {
///     if task.id() == flush.id() {
///         task.run(); // must not be lost
///     } // the rest are dropped: cancelled
/// }
/// assert_eq!(flush.join()?, "flushed");
/// assert!(audit.join().unwrap_err().is_cancelled());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a PendingTask dropped unrun is cancelled; call .run() to run it"]
pub struct PendingTask {
    /// `Some` until dropped: `Drop` takes it out to drop it quietly.
    task: Option<TaskPtr>,
    pool: Arc<Shared>,
}

impl PendingTask {
    pub(crate) fn new(task: TaskPtr, pool: Arc<Shared>) -> Self {
        PendingTask {
            task: Some(task),
            pool,
        }
    }

    fn task(&self) -> &TaskPtr {
        self.task
            .as_ref()
            .expect("a PendingTask holds its task until dropped")
    }

    /// Runs the task once on the calling thread; a panic in it is caught and
    /// reported (handle, `ERROR` event, the pool's failure handler). A
    /// periodic task runs once and then completes as cancelled (its pool is
    /// stopped).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let flush = pool.schedule(|| "flushed", Duration::from_secs(60))?;
    /// for task in pool.shutdown_now() {
    ///     task.run(); // flush before exiting, on this thread
    /// }
    /// assert_eq!(flush.join()?, "flushed");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run(self) {
        let task = self.task();
        let header = task.header();
        if header.try_start() {
            let watched = task.ref_count() > 1;
            let ran = task.run(&self.pool.clock, self.pool.clock.now(), watched);
            if let Some(caught) = ran.panic {
                self.pool.report_panic(header, caught);
            }
        }
        // Drop completes a periodic task (back to SCHEDULED) as cancelled.
    }

    /// The task's id (as [`ScheduledHandle::id`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule(|| (), Duration::from_secs(60))?;
    /// let pending = pool.shutdown_now();
    /// assert_eq!(pending[0].id(), h.id());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.task().header().seq()
    }

    /// True for a fixed-rate or fixed-delay task.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let _tick = pool.schedule_at_fixed_rate(|| (), Duration::from_secs(60), Duration::from_secs(60))?;
    /// let _once = pool.schedule(|| (), Duration::from_secs(60))?;
    /// let periodic: Vec<bool> = pool.shutdown_now().iter().map(|t| t.is_periodic()).collect();
    /// assert_eq!(periodic, [true, false], "in deadline order, then submission order");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_periodic(&self) -> bool {
        self.task().header().kind().is_periodic()
    }
}

impl Drop for PendingTask {
    fn drop(&mut self) {
        let Some(task) = self.task.take() else { return };
        if task.header().try_cancel() {
            task.cancelled();
        }
        // Possibly the last reference: the task's result (kept for a handle
        // dropped during the run) may panic in its `Drop`.
        drop_quietly(task);
    }
}

impl fmt::Debug for PendingTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.task().header();
        f.debug_struct("PendingTask")
            .field("id", &header.seq())
            .field("kind", &header.kind().name())
            .finish()
    }
}
