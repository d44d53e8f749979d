//! The backend as this crate calls it: a panic in a backend's method comes
//! back as an error.
//!
//! `DurableBackend` is a public trait, so a backend is user code, and the
//! pool calls it from threads the user never sees: the takers (claim,
//! wait, release), the heartbeat (extend, and the release of a delivery
//! dropped unsettled), the acker (ack_many), the workers settling a run
//! (nack, bury, ack_and_reschedule), the metrics sampler (counts,
//! peek_deadline_ms, server_time_ms). A panic that
//! unwound through any of them would kill that thread, and a taker's would
//! leave its leader turn taken, so every other taker, and `shutdown_now`,
//! would wait for it for ever. Here it becomes the error of a store call
//! whose outcome is unknown, which each caller already handles: the taker
//! backs off and claims again, the heartbeat retries on its next tick, a
//! run's settle is counted as failed and its item comes back after its
//! lease.
//!
//! # Invariants
//!
//! - Every call of a `DurableBackend` method goes through a `Contained`:
//!   a queue or a pool wraps the backend it is built on in a [`Store`]
//!   once, and its producer verbs, its taker, leases, acker and workers
//!   all hold clones of that `Store`. (The typed verbs in the caller's
//!   transaction downcast through `as_any` to the concrete backend,
//!   whose verb then runs on the caller's client, not through a trait
//!   method.)
//! - Under loom a call is not wrapped: a model's own panics (a deadlock it
//!   found) must fail the model, not read as a store error.
//! - A contained panic is [`DurableError::Unavailable`] (the operation may
//!   or may not have happened, as for a lost reply), its text naming the
//!   method and the panic's message. `unblock`, which returns nothing, logs
//!   it instead.
//! - `Debug` and `as_any` are the wrapped backend's, so messages name the
//!   user's backend and a downcast to a concrete backend still works.

use std::fmt;
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use super::backend::{
    Buried, Cancelled, ClaimBatch, Counts, DurableBackend, DurableError, Nack, Put, PutMode,
    Repeat, Stored, When,
};
use super::ops::DurableOps;
use crate::base::error::panic_message;

/// A backend as the crate calls it: shared, and every call contained
/// (see the module documentation). Clones call the same backend.
#[derive(Clone)]
pub(crate) struct Store(Arc<Contained>);

impl Store {
    /// `backend`, contained.
    pub(crate) fn new(backend: Arc<dyn DurableBackend>) -> Self {
        Store(Arc::new(Contained(backend)))
    }
}

impl Deref for Store {
    type Target = dyn DurableBackend;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The wrapper that contains each call.
struct Contained(Arc<dyn DurableBackend>);

/// Runs `call` (the backend's `verb`), turning a panic into an error.
fn contain<T>(
    verb: &str,
    call: impl FnOnce() -> Result<T, DurableError>,
) -> Result<T, DurableError> {
    if cfg!(loom) {
        return call();
    }
    // Unwind safety: the backend's own state is the backend's to keep
    // consistent (a later call that finds it broken fails or panics again,
    // and is contained again); nothing of this crate is borrowed here.
    catch_unwind(AssertUnwindSafe(call)).unwrap_or_else(|payload| {
        Err(DurableError::Unavailable(
            format!(
                "the backend panicked in {verb}: {}",
                panic_message(&*payload)
            )
            .into(),
        ))
    })
}

impl fmt::Debug for Contained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl DurableBackend for Contained {
    fn put(
        &self,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        contain("put", || self.0.put(id, envelope, when, mode))
    }

    fn claim(
        &self,
        lease: Duration,
        max: usize,
        max_attempts: u32,
    ) -> Result<ClaimBatch, DurableError> {
        contain("claim", || self.0.claim(lease, max, max_attempts))
    }

    fn extend(&self, leases: &[(&str, u64)], lease: Duration) -> Result<Vec<bool>, DurableError> {
        contain("extend", || self.0.extend(leases, lease))
    }

    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError> {
        contain("ack", || self.0.ack(id, token))
    }

    fn ack_many(&self, acks: &[(&str, u64)]) -> Result<Vec<bool>, DurableError> {
        contain("ack_many", || self.0.ack_many(acks))
    }

    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        contain("nack", || self.0.nack(id, token, to))
    }

    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError> {
        contain("ack_and_reschedule", || {
            self.0.ack_and_reschedule(id, token, repeat)
        })
    }

    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        contain("cancel", || self.0.cancel(id))
    }

    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        contain("wait", || self.0.wait(due, limit))
    }

    fn unblock(&self) {
        if let Err(err) = contain("unblock", || {
            self.0.unblock();
            Ok(())
        }) {
            tracing::warn!(target: "schedpool::durable", error = %err,
                "a blocked store wait may last until its limit");
        }
    }

    fn counts(&self) -> Result<Counts, DurableError> {
        contain("counts", || self.0.counts())
    }

    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        contain("peek_deadline_ms", || self.0.peek_deadline_ms())
    }

    fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        contain("get", || self.0.get(id))
    }

    fn server_time_ms(&self) -> Result<u64, DurableError> {
        contain("server_time_ms", || self.0.server_time_ms())
    }

    fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        contain("dead_letters", || self.0.dead_letters(max))
    }

    fn bury(&self, id: &str, token: u64, error: Option<&str>) -> Result<bool, DurableError> {
        contain("bury", || self.0.bury(id, token, error))
    }

    fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        contain("requeue", || self.0.requeue(id))
    }

    fn purge(&self, id: &str) -> Result<bool, DurableError> {
        contain("purge", || self.0.purge(id))
    }

    fn ops(&self) -> Option<&dyn DurableOps> {
        // Called from the caller's thread (an operator), never the pool's.
        self.0.ops()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        self.0.as_any()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::durable::MemoryBackend;

    #[test]
    fn a_panic_is_an_unavailable_error_naming_the_verb_and_the_message() {
        let err = contain::<()>("claim", || panic!("boom {}", 7)).unwrap_err();
        assert!(err.is_unavailable(), "{err:?}");
        assert!(
            err.to_string().contains("panicked in claim: boom 7"),
            "{err}"
        );
        assert_eq!(contain("claim", || Ok(3)).unwrap(), 3);
    }

    /// (The downcast through `as_any` is what `DurablePool::schedule_in`
    /// does on PostgreSQL; `tests/durable_postgres.rs` runs it.)
    #[test]
    fn debug_is_the_wrapped_backends() {
        let inner: Arc<dyn DurableBackend> = Arc::new(MemoryBackend::new());
        let wrapped = Store::new(inner.clone());
        assert_eq!(format!("{wrapped:?}"), format!("{inner:?}"));
    }
}
