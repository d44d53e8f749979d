//! What a pool tells its user about runs: the current run's [`RunInfo`],
//! the failure handler's [`TaskFailure`], and the before/after hooks.
//!
//! # Invariants
//!
//! - Hooks and the failure handler run on the worker thread, outside every
//!   pool lock. A panic inside a hook is caught and reported as an `ERROR`
//!   event; the worker carries on (Java instead replaces the worker).
//! - `RunInfo::current()` is set for exactly the duration of a body's run.

use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::clock::{to_instant, Nanos};
use crate::base::sync::thread_local;

thread_local! {
    static CURRENT_RUN: Cell<Option<RunInfo>> = const { Cell::new(None) };
}

/// Facts about one run of a task, for its body (via
/// [`RunInfo::current`]) and the pool's hooks.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{RunInfo, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool.schedule(|| RunInfo::current().unwrap(), Duration::from_millis(5))?;
/// let info = h.join()?;
/// assert!(info.started() >= info.due(), "never early");
/// assert_eq!(info.lateness(), info.started() - info.due());
/// assert_eq!(info.kind(), "once");
/// assert!(RunInfo::current().is_none(), "not inside a task here");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunInfo {
    id: u64,
    kind: &'static str,
    due: Nanos,
    started: Nanos,
    run: u64,
}

impl RunInfo {
    pub(crate) fn new(id: u64, kind: &'static str, due: Nanos, started: Nanos, run: u64) -> Self {
        RunInfo {
            id,
            kind,
            due,
            started,
            run,
        }
    }

    /// The run in progress on this thread, if it is a pool worker running a
    /// task.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{RunInfo, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let info = pool.submit(RunInfo::current)?.join()?.expect("inside a run");
    /// assert_eq!((info.kind(), info.run()), ("once", 1));
    /// assert!(RunInfo::current().is_none(), "not on a worker");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current() -> Option<RunInfo> {
        CURRENT_RUN.with(Cell::get)
    }

    /// The task's id ([`ScheduledHandle::id`](crate::ScheduledHandle::id)).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{RunInfo, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.submit(|| RunInfo::current().map(|run| run.id()))?;
    /// let id = h.id();
    /// assert_eq!(h.join()?, Some(id));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `"once"`, `"fixed_rate"`, `"fixed_delay"`, `"calendar"` or `"idle"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{RunInfo, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.at_fixed_rate(Duration::from_millis(1)).max_runs(1).start(|| {
    ///     assert_eq!(RunInfo::current().unwrap().kind(), "fixed_rate");
    /// })?;
    /// h.join()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// When this run was due (by the pool's clock).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use schedpool::{RunInfo, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let due = Instant::now() + Duration::from_millis(5);
    /// let info = pool.schedule(RunInfo::current, Duration::from_millis(5))?.join()?.unwrap();
    /// assert!(info.due() >= due - Duration::from_millis(1));
    /// assert!(info.started() >= info.due(), "never early");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn due(&self) -> Instant {
        to_instant(self.due)
    }

    /// When this run started (by the pool's clock).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Instant;
    /// use schedpool::{RunInfo, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let before = Instant::now();
    /// let info = pool.submit(RunInfo::current)?.join()?.unwrap();
    /// assert!(info.started() >= before && info.started() <= Instant::now());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn started(&self) -> Instant {
        to_instant(self.started)
    }

    /// How late the run started: `started - due`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, RunInfo, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool.schedule(|| RunInfo::current().unwrap().lateness(), Duration::from_secs(10))?;
    /// clock.advance(Duration::from_secs(12)); // the machine slept through the due time
    /// assert_eq!(h.join()?, Duration::from_secs(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lateness(&self) -> Duration {
        Duration::from_nanos(self.started.saturating_sub(self.due))
    }

    /// Which run of the task this is, from 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{RunInfo, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.at_fixed_rate(Duration::from_millis(1)).max_runs(3).start(|| {
    ///     let run = RunInfo::current().unwrap().run();
    ///     assert!((1..=3).contains(&run));
    /// })?;
    /// h.join()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run(&self) -> u64 {
        self.run
    }

    pub(super) fn lateness_nanos(&self) -> Nanos {
        self.started.saturating_sub(self.due)
    }
}

/// Sets [`RunInfo::current`] while alive.
pub(super) struct CurrentRun;

impl CurrentRun {
    pub(crate) fn enter(info: RunInfo) -> Self {
        CURRENT_RUN.with(|c| c.set(Some(info)));
        CurrentRun
    }
}

impl Drop for CurrentRun {
    fn drop(&mut self) {
        CURRENT_RUN.with(|c| c.set(None));
    }
}

/// A failed run, handed to the pool's failure handler
/// ([`Builder::failure_handler`](crate::Builder::failure_handler)): a panic
/// caught in a task, or an `Err` a periodic or `execute` body returned.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::builder()
///     .core_threads(1)
///     .failure_handler(|failure| {
///         // Report it: to your error tracker, say.
///         eprintln!("task {} ({}) failed: {}", failure.id(), failure.kind(), failure.message());
///     })
///     .build()?;
/// pool.execute(|| Err::<(), _>("disk full"))?;
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TaskFailure {
    id: u64,
    kind: &'static str,
    message: String,
    payload: Box<dyn Any + Send>,
    panicked: bool,
}

impl TaskFailure {
    pub(crate) fn new(
        id: u64,
        kind: &'static str,
        message: String,
        payload: Box<dyn Any + Send>,
        panicked: bool,
    ) -> Self {
        TaskFailure {
            id,
            kind,
            message,
            payload,
            panicked,
        }
    }

    /// True for a panic; false for an `Err` the body returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskFailure};
    ///
    /// let failures: Arc<Mutex<Vec<TaskFailure>>> = Arc::default();
    /// let f = failures.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .failure_handler(move |failure| f.lock().unwrap().push(failure))
    ///     .build()?;
    /// pool.execute(|| -> () { panic!("bug") })?;
    /// pool.execute(|| Err::<(), _>("disk full"))?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// let kinds: Vec<bool> = failures.lock().unwrap().iter().map(|f| f.is_panic()).collect();
    /// assert_eq!(kinds, [true, false]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_panic(&self) -> bool {
        self.panicked
    }

    /// The id of the task that failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskFailure};
    ///
    /// let failures: Arc<Mutex<Vec<TaskFailure>>> = Arc::default();
    /// let f = failures.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .failure_handler(move |failure| f.lock().unwrap().push(failure))
    ///     .build()?;
    /// let h = pool.submit(|| -> () { panic!("bug") })?;
    /// let id = h.id();
    /// assert!(h.join().is_err());
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(failures.lock().unwrap()[0].id(), id);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The task's kind (as [`RunInfo::kind`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskFailure};
    ///
    /// let failures: Arc<Mutex<Vec<TaskFailure>>> = Arc::default();
    /// let f = failures.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .failure_handler(move |failure| f.lock().unwrap().push(failure))
    ///     .build()?;
    /// pool.execute(|| Err::<(), _>("disk full"))?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(failures.lock().unwrap()[0].kind(), "once");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The panic message (as in [`TaskError::Panicked`](crate::TaskError::Panicked)),
    /// or the `Display` text of the `Err` the body returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskFailure};
    ///
    /// let failures: Arc<Mutex<Vec<TaskFailure>>> = Arc::default();
    /// let f = failures.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .failure_handler(move |failure| f.lock().unwrap().push(failure))
    ///     .build()?;
    /// pool.execute(|| Err::<(), _>(format!("disk {} full", "/var")))?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(failures.lock().unwrap()[0].message(), "disk /var full");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The panic payload (the original, whatever its type; the task's
    /// handle gets a copy of a string payload, see
    /// [`TaskError::into_panic`](crate::TaskError::into_panic)); for an
    /// `Err`, its text as a `String` (the error value itself is not kept, so
    /// it need not be `Send`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskFailure};
    ///
    /// let failures: Arc<Mutex<Vec<TaskFailure>>> = Arc::default();
    /// let f = failures.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .failure_handler(move |failure| f.lock().unwrap().push(failure))
    ///     .build()?;
    /// pool.execute(|| -> () { std::panic::panic_any(503u16) })?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(failures.lock().unwrap()[0].payload().downcast_ref::<u16>(), Some(&503));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn payload(&self) -> &(dyn Any + Send) {
        &*self.payload
    }

    /// The payload, owned (for `std::panic::resume_unwind`, say).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskFailure};
    ///
    /// let failures: Arc<Mutex<Vec<TaskFailure>>> = Arc::default();
    /// let f = failures.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .failure_handler(move |failure| f.lock().unwrap().push(failure))
    ///     .build()?;
    /// pool.execute(|| -> () { std::panic::panic_any(503u16) })?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// let failure = failures.lock().unwrap().remove(0);
    /// let payload: Box<dyn std::any::Any + Send> = failure.into_payload();
    /// assert_eq!(payload.downcast::<u16>().ok().map(|code| *code), Some(503));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_payload(self) -> Box<dyn Any + Send> {
        self.payload
    }
}

impl fmt::Debug for TaskFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskFailure")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("panicked", &self.panicked)
            .finish_non_exhaustive()
    }
}

pub(super) type BeforeHook = Arc<dyn Fn(&RunInfo) + Send + Sync>;
pub(super) type AfterHook = Arc<dyn Fn(&RunInfo, Option<&str>) + Send + Sync>;
pub(super) type PanicHandler = Arc<dyn Fn(TaskFailure) + Send + Sync>;

/// The pool's hooks (all optional).
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub(crate) before: Option<BeforeHook>,
    pub(crate) after: Option<AfterHook>,
    pub(crate) panic: Option<PanicHandler>,
}

impl Hooks {
    pub(crate) fn before(&self, info: &RunInfo) {
        if let Some(hook) = &self.before {
            guarded("before_execute", || hook(info));
        }
    }

    pub(crate) fn after(&self, info: &RunInfo, panic: Option<&str>) {
        if let Some(hook) = &self.after {
            guarded("after_execute", || hook(info, panic));
        }
    }

    /// Hands a panic to the handler, or drops its payload quietly.
    pub(crate) fn panicked(&self, panic: TaskFailure) {
        match &self.panic {
            Some(handler) => guarded("failure_handler", || handler(panic)),
            None => crate::base::error::drop_quietly(panic.payload),
        }
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("before", &self.before.is_some())
            .field("after", &self.after.is_some())
            .field("panic", &self.panic.is_some())
            .finish()
    }
}

/// Runs a user hook, containing its panic.
fn guarded(which: &'static str, hook: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(hook)) {
        let message = crate::base::error::panic_message(&*payload);
        crate::base::error::drop_quietly(payload);
        tracing::error!(target: "schedpool::pool", hook = which, panic = %message, "a pool hook panicked");
    }
}
