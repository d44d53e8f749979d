//! [`Builder`]: configures and builds a [`ScheduledThreadPool`].

use std::io;
use std::time::Duration;

use crate::clock::{Clock, ManualClock};
use crate::pool::ScheduledThreadPool;
use crate::shared::{Config, Shared};

/// Configures a [`ScheduledThreadPool`] (rayon's `ThreadPoolBuilder`, Java's
/// constructor arguments and policy setters).
///
/// # Examples
///
/// ```
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::builder()
///     .core_threads(2)
///     .thread_name("timeouts")
///     .build()?;
/// let name = pool.submit(|| std::thread::current().name().map(str::to_owned)).unwrap().join()?;
/// assert_eq!(name.as_deref(), Some("timeouts-0"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    core_threads: usize,
    thread_name: String,
    remove_on_cancel: bool,
    continue_periodic_after_shutdown: bool,
    execute_delayed_after_shutdown: bool,
    clock: Clock,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            core_threads: num_cpus::get(),
            thread_name: "schedpool".to_string(),
            remove_on_cancel: true,
            continue_periodic_after_shutdown: false,
            execute_delayed_after_shutdown: true,
            clock: Clock::Real,
        }
    }
}

impl Builder {
    /// A builder with the defaults: one core thread per CPU, threads named
    /// `schedpool-0`, `schedpool-1`, ..., cancelled tasks removed at once,
    /// Java's shutdown policies, the real clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of worker threads. They start lazily, one per submission,
    /// until there are this many. `0` is allowed (as in Java): the pool then
    /// runs one worker while anything is queued and lets it go after 10 ms
    /// of an empty queue.
    pub fn core_threads(mut self, n: usize) -> Self {
        self.core_threads = n;
        self
    }

    /// The worker threads' name prefix: threads are named `"{prefix}-0"`,
    /// `"{prefix}-1"`, ...
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Self {
        self.thread_name = prefix.into();
        self
    }

    /// Whether a cancelled task leaves the queue at once (default `true`;
    /// Java's default is `false`, which keeps cancelled tasks and their
    /// closures until their deadline).
    pub fn remove_on_cancel(mut self, yes: bool) -> Self {
        self.remove_on_cancel = yes;
        self
    }

    /// Whether periodic tasks keep running after [`shutdown`]
    /// (default `false`, as Java).
    ///
    /// [`shutdown`]: ScheduledThreadPool::shutdown
    pub fn continue_periodic_after_shutdown(mut self, yes: bool) -> Self {
        self.continue_periodic_after_shutdown = yes;
        self
    }

    /// Whether delayed one-shot tasks still run after [`shutdown`]
    /// (default `true`, as Java). When `false`, shutdown cancels the ones
    /// not yet due; due ones still run.
    ///
    /// [`shutdown`]: ScheduledThreadPool::shutdown
    pub fn execute_delayed_after_shutdown(mut self, yes: bool) -> Self {
        self.execute_delayed_after_shutdown = yes;
        self
    }

    /// Reads every deadline from `clock` instead of the real clock: virtual
    /// time for tests. See [`ManualClock`].
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Clock::Manual(clock);
        self
    }

    /// Builds the pool. No thread starts until the first submission.
    ///
    /// # Errors
    ///
    /// `InvalidInput` if the thread name contains a NUL byte (the OS could
    /// not name the threads).
    pub fn build(self) -> io::Result<ScheduledThreadPool> {
        if self.thread_name.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "thread name prefix must not contain a NUL byte",
            ));
        }
        let config = Config {
            core_threads: self.core_threads,
            thread_name: self.thread_name,
            remove_on_cancel: self.remove_on_cancel,
            continue_periodic_after_shutdown: self.continue_periodic_after_shutdown,
            execute_delayed_after_shutdown: self.execute_delayed_after_shutdown,
            keep_alive: Duration::from_millis(10),
        };
        Ok(ScheduledThreadPool::from_shared(Shared::new(
            config, self.clock,
        )))
    }
}
