//! A new task in one call: the pool's facade ([`crate::pool::executor`],
//! [`crate::pool::periodic`], [`crate::pool::calendar`],
//! [`crate::pool::idle`]) hands over what the caller asked for and gets
//! back the [`TaskPtr`] to queue.
//!
//! Each function puts together the three things a task is made of: the
//! [`Header`] (id, deadline, kind), the body ([`OnceTask`], [`ExecTask`],
//! [`IdleTask`] or [`PeriodicTask`], with a periodic task's [`Cadence`])
//! and the pointer that holds them. So the facade knows none of those
//! types, and a change to how a task is laid out stays in `task/`.
//!
//! # Invariants
//!
//! - Nothing here reads a clock or takes a sequence number: the facade does
//!   both, in the order its method documents, and passes them in.
//! - A task comes out `SCHEDULED`, not queued, with one reference (the
//!   returned pointer).

use std::time::SystemTime;

use crate::base::clock::Nanos;
use crate::task::cadence::Cadence;
use crate::task::calendar::Plan;
use crate::task::header::{Header, Kind};
use crate::task::idle::IdleTask;
use crate::task::once::{ExecTask, OnceTask};
use crate::task::periodic::PeriodicTask;
use crate::task::policy::{Options, RunOutcome, RunResult};
use crate::task::ptr::TaskPtr;

/// A fire-and-forget task (`execute`), due at `now`: no completion cell,
/// so the queue holds its only reference once it is queued.
pub(crate) fn exec<F, R>(seq: u64, now: Nanos, body: F) -> TaskPtr
where
    F: FnOnce() -> R + Send + 'static,
    R: RunResult + 'static,
{
    TaskPtr::new(ExecTask::new(Header::new(seq, now, Kind::Once), body))
}

/// A one-shot task with a result (`schedule`, `submit`), due at `deadline`.
pub(crate) fn once<F, T>(seq: u64, deadline: Nanos, body: F) -> TaskPtr
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    TaskPtr::new(OnceTask::new(Header::new(seq, deadline, Kind::Once), body))
}

/// An idle timer for `timeout`, last active at `now`, so first due at
/// `now + timeout`.
pub(crate) fn idle<F, T>(seq: u64, now: Nanos, timeout: Nanos, body: F) -> TaskPtr
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let header = Header::new(seq, now.saturating_add(timeout), Kind::Idle);
    TaskPtr::new(IdleTask::new(OnceTask::new(header, body), timeout, now))
}

/// A fixed-rate or fixed-delay task (`kind`) with this `period`, whose
/// first run's grid point is `nominal`: due at `nominal` plus the first
/// draw of its jitter.
pub(crate) fn periodic<F, R>(
    seq: u64,
    kind: Kind,
    period: Nanos,
    nominal: Nanos,
    options: Options,
    body: F,
) -> TaskPtr
where
    F: FnMut() -> R + Send + 'static,
    R: RunOutcome + 'static,
{
    let cadence = Cadence::new(period, options, nominal, seq);
    let deadline = nominal.saturating_add(cadence.jitter());
    TaskPtr::new(PeriodicTask::new(
        Header::new(seq, deadline, kind),
        body,
        cadence,
    ))
}

/// A calendar task following `plan`, submitted at `now` (monotonic) and
/// `wall` (the wall clock read then): due at the monotonic instant that
/// stands for the schedule's first fire after `wall`.
///
/// `Ok(None)` if the schedule has no fire after `wall` (before its
/// `until`); `Err` with the message if the schedule broke its contract
/// ([`Plan::first`]).
pub(crate) fn calendar<F, R>(
    seq: u64,
    plan: Plan,
    options: Options,
    now: Nanos,
    wall: SystemTime,
    body: F,
) -> Result<Option<TaskPtr>, String>
where
    F: FnMut() -> R + Send + 'static,
    R: RunOutcome + 'static,
{
    let cadence = Cadence::calendar(options, plan, now, seq);
    let first = match cadence.plan() {
        Some(plan) => plan.first(wall, now, cadence.jitter())?,
        None => None,
    };
    Ok(first.map(|deadline| {
        TaskPtr::new(PeriodicTask::new(
            Header::new(seq, deadline, Kind::Calendar),
            body,
            cadence,
        ))
    }))
}
