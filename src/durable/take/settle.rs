//! Every store call that ends a lease, in one place: ack, a batch of acks,
//! nack (retry, dead, release, defer), bury with a reason, and the ack that
//! reschedules a chain; and what the store's "this token does not hold the
//! item" answer means.
//!
//! Invariants:
//!
//! - A settle the store answers with "not held" is
//!   [`DurableError::LeaseLost`], whatever the verb: the item was
//!   reclaimed after its lease expired, cancelled, or replaced. A settle
//!   that fails otherwise leaves the item to come back after its lease:
//!   nothing is dropped.
//! - A batch of acks is answered pair by pair; an answer of the wrong
//!   length is a [`DurableError::Format`] for the whole batch (each ack is
//!   idempotent by (id, token), so none is lost by it).
//! - Releases (an item handed back unstarted, at its due time) stop at the
//!   first one that finds the store unreachable: each would wait as long,
//!   and the rest come back after their leases anyway.
//!
//! Who stops the heartbeats, and when, is `leases.rs`'s: it calls these.

use crate::base::error::quietly;
use crate::durable::store::backend::{Nack, Repeat};
use crate::durable::store::contained::Store;
use crate::durable::store::error::DurableError;

/// How a held item is settled.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Verb<'a> {
    /// Completed: removed from the store.
    Ack,
    /// Given back or dead-lettered ([`Nack`]).
    Nack(Nack),
    /// Dead-lettered, recording this error (`None`: no error).
    Bury(Option<&'a str>),
    /// Completed, and put back at its next occurrence.
    Reschedule(Repeat),
}

/// Settles the item (`id`, `token`) holds: `Ok(Some(next due ms))` for a
/// reschedule, `Ok(None)` for the other verbs, and
/// [`DurableError::LeaseLost`] when `token` no longer holds it.
pub(crate) fn one(
    store: &Store,
    id: &str,
    token: u64,
    verb: Verb<'_>,
) -> Result<Option<u64>, DurableError> {
    let held = |held: bool| held.then_some(None);
    let answer = match verb {
        Verb::Ack => store.ack(id, token).map(held)?,
        Verb::Nack(to) => store.nack(id, token, to).map(held)?,
        Verb::Bury(error) => store.bury(id, token, error).map(held)?,
        Verb::Reschedule(repeat) => store.ack_and_reschedule(id, token, repeat)?.map(Some),
    };
    answer.ok_or(DurableError::LeaseLost)
}

/// Acks many (id, token) pairs in one store call: for each, in order,
/// whether it was acked (`false`: that token no longer holds it).
pub(crate) fn ack_many(store: &Store, pairs: &[(&str, u64)]) -> Result<Vec<bool>, DurableError> {
    let held = store.ack_many(pairs)?;
    if held.len() != pairs.len() {
        return Err(DurableError::Format(
            format!("ack_many answered {} of {} acks", held.len(), pairs.len()).into(),
        ));
    }
    Ok(held)
}

/// Gives one claimed item back, at its due time (so at the front), logging
/// a failure: the item then returns when its lease expires.
pub(crate) fn release_one(store: &Store, id: &str, token: u64) -> Result<(), DurableError> {
    let res = store.nack(id, token, Nack::Release).map(drop);
    if let Err(err) = &res {
        // Contained: a subscriber that panicked here would leave the
        // releases after this one undone (and their leases renewed while
        // the process lives).
        quietly(|| {
            tracing::warn!(target: "schedpool::durable", id, error = %err,
            "could not release an item; it returns when its lease expires")
        });
    }
    res
}

/// Releases of many claimed items, one store call each, until one finds
/// the store unreachable (see the module docs); [`finish`](Self::finish)
/// reports the ones left to their leases.
#[derive(Debug, Default)]
pub(crate) struct Releases {
    unreachable: Option<DurableError>,
    left: usize,
}

impl Releases {
    /// Releases (`id`, `token`), unless an earlier release found the store
    /// unreachable.
    pub(crate) fn release(&mut self, store: &Store, id: &str, token: u64) {
        if self.unreachable.is_some() {
            self.left += 1;
            return;
        }
        if let Err(err) = release_one(store, id, token) {
            if err.is_unavailable() {
                self.unreachable = Some(err);
            }
        }
    }

    /// Logs how many items were left to their leases, if any.
    pub(crate) fn finish(self) {
        let left = self.left;
        if let Some(err) = self.unreachable.filter(|_| left > 0) {
            quietly(|| {
                tracing::warn!(target: "schedpool::durable", items = left, error = %err,
                "the store is unreachable: the other claimed items are not released; \
                 they return when their leases expire")
            });
        }
    }
}
