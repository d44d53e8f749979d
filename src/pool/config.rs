//! The pool's fixed configuration.

use std::time::Duration;

use super::hooks::Hooks;

/// The pool's fixed configuration (from the [`Builder`](crate::Builder)).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) core_threads: usize,
    pub(super) thread_name: String,
    pub(crate) remove_on_cancel: bool,
    pub(super) continue_periodic_after_shutdown: bool,
    pub(super) execute_delayed_after_shutdown: bool,
    /// How long the last worker of a core-0 pool waits on an empty queue
    /// before exiting (Java's `DEFAULT_KEEPALIVE_MILLIS`).
    pub(crate) keep_alive: Duration,
    /// Lateness beyond which a run logs a starvation warning.
    pub(crate) starvation_threshold: Duration,
    /// The workers' timer slack (Linux), or `None` to keep the OS default.
    pub(crate) timer_slack: Option<Duration>,
    /// The workers' scheduling slice (Linux 6.12+), or `None` to keep the
    /// OS default.
    pub(crate) sched_slice: Option<Duration>,
    /// How long a worker that finds the queue empty spins before it sleeps.
    pub(crate) idle_spin: Duration,
    pub(crate) hooks: Hooks,
}
