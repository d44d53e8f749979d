//! An async task body (feature `tokio`): one run of a task whose body is a
//! future factory. The pool runs the task as it runs any other (its
//! deadline, its controls, its worker); the run spawns the future on a tokio
//! runtime and holds the pool's worker until the future completes, so the
//! run ends when the future does.
//!
//! # Invariants
//!
//! - A run never blocks a runtime thread: it refuses to start on a thread
//!   inside a tokio runtime ([`Outcome::Lost`]), and the future itself only
//!   runs on the runtime.
//! - [`Flight`] holds the abort state under one lock: a run spawns its
//!   future, and records it, only while `aborted` is false; `abort` sets
//!   `aborted` and takes the record under the same lock. So a future is
//!   either never spawned after an abort, or the abort finds it and stops
//!   it: never both missed.
//! - A future's panic is returned as its payload ([`Outcome::Panicked`]),
//!   for the caller to resume inside the pool's `catch_unwind`: the pool
//!   reports it as it reports a sync body's panic.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::base::sync::Mutex;

/// The text of a run whose future was stopped by the runtime shutting down.
const RUNTIME_GONE: &str = "the tokio runtime shut down before the task's future completed";

/// The text of a run refused because its thread is a runtime's.
const ON_RUNTIME_THREAD: &str = "an async task's run waits for its future, so it cannot run on a \
     tokio runtime thread: run it on a pool worker or a plain thread";

/// The abort state of one async task, shared by its runs and its handle.
#[derive(Debug, Default)]
pub(crate) struct Flight {
    state: Mutex<FlightState>,
}

#[derive(Debug, Default)]
struct FlightState {
    /// `abort` was called: no future starts any more.
    aborted: bool,
    /// The future of the run in progress, if one is.
    running: Option<AbortHandle>,
}

impl Flight {
    /// Stops every future to come and returns the one in flight, if any,
    /// for the caller to abort (after it cancelled the task).
    pub(crate) fn abort(&self) -> Option<AbortHandle> {
        let mut state = self.state.lock();
        state.aborted = true;
        state.running.take()
    }

    /// True once [`abort`](Self::abort) was called.
    pub(crate) fn is_aborted(&self) -> bool {
        self.state.lock().aborted
    }
}

/// How one run's future ended.
pub(crate) enum Outcome<T> {
    /// It completed with this output.
    Done(T),
    /// It panicked: the payload, to resume.
    Panicked(Box<dyn std::any::Any + Send>),
    /// It was aborted (or never started, after an abort).
    Aborted,
    /// It could not run to its end: the runtime shut down, or the run was
    /// on a runtime thread. The text says which.
    Lost(&'static str),
}

/// Runs one future made by `make` on `runtime` and waits for it on this
/// thread (a pool worker). `make` is called inside the runtime's context,
/// so a factory may call `tokio::spawn` before its `async` block.
pub(crate) fn run_future<T, Fut>(
    runtime: &Handle,
    flight: &Flight,
    make: impl FnOnce() -> Fut,
) -> Outcome<T>
where
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    if Handle::try_current().is_ok() {
        return Outcome::Lost(ON_RUNTIME_THREAD);
    }
    if flight.is_aborted() {
        return Outcome::Aborted;
    }
    let future = {
        let _context = runtime.enter();
        make()
    };
    let join = {
        let mut state = flight.state.lock();
        if state.aborted {
            drop(state);
            crate::base::error::drop_quietly(future);
            return Outcome::Aborted;
        }
        let join = runtime.spawn(future);
        state.running = Some(join.abort_handle());
        join
    };
    let result = block_on(join);
    flight.state.lock().running = None;
    match result {
        Ok(value) => Outcome::Done(value),
        Err(error) if error.is_panic() => Outcome::Panicked(error.into_panic()),
        Err(_) if flight.is_aborted() => Outcome::Aborted,
        Err(_) => Outcome::Lost(RUNTIME_GONE),
    }
}

/// Wakes the thread that waits in [`block_on`].
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on this thread, parking between wake-ups. Only for a
/// future that makes progress elsewhere (a `JoinHandle`): it never enters
/// a runtime.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        // A spurious unpark only polls again.
        std::thread::park();
    }
}
