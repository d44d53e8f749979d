//! Operating a durable store: the [`Operator`](operator::Operator) an on-call engineer's tools
//! (the `schedpool` command and its web console) drive, over any backend
//! that implements [`DurableOps`](super::DurableOps).
//!
//! Layers inside, each using only those before it: `operator` (the
//! handle, reads, pause and resume, cancel, the audit trail), `bulk` (bulk
//! requeue and purge of dead letters), `schedules` (calendar schedules:
//! list, fire now), `verbs` (the same verbs on `DurablePool` and
//! `DurableQueue`).
//!
//! Invariant: every change made through an [`Operator`](operator::Operator) appends one audit
//! record to the store after it is made (what, how many, when, by whom);
//! a dry run changes nothing and records nothing.

pub(super) mod bulk;
pub(super) mod operator;
pub(super) mod schedules;
mod single;
mod verbs;
