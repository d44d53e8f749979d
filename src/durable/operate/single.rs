//! Requeue and purge of one dead letter by its exact id, audited: what an
//! operator's "requeue this one" button does (a [`DeadFilter`] selects by
//! id *prefix*, which may match more).
//!
//! Invariant: one atomic store step each ([`DurableBackend::requeue`] or
//! [`DurableBackend::purge`]); one audit record when it moved the item,
//! none when it did not.
//!
//! [`DeadFilter`]: super::bulk::DeadFilter
//! [`DurableBackend::requeue`]: crate::durable::DurableBackend::requeue
//! [`DurableBackend::purge`]: crate::durable::DurableBackend::purge

use super::operator::{check_by, Operator};
use crate::durable::store::error::DurableError;

impl Operator {
    /// Moves the dead letter `id` back to pending (due now, attempts
    /// reset), audited as a `requeue` of `id` by `by`: `false` when `id`
    /// is not dead-lettered (never was, or already moved: of two
    /// operators requeueing it at once, one gets `true`).
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for an empty `by` or a backend without an
    /// operator side; the store's error otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, Operator};
    ///
    /// let store = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// for id in ["order-1", "order-10"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("open").dead_letter()?;
    /// }
    /// let ops = Operator::new(store);
    /// assert!(ops.requeue_id("order-1", "ada")?);
    /// assert!(!ops.requeue_id("order-1", "ada")?);
    /// assert_eq!(queue.counts()?.dead, 1, "order-10 stays dead");
    /// assert_eq!(ops.audit(10, None)?.len(), 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn requeue_id(&self, id: &str, by: &str) -> Result<bool, DurableError> {
        check_by(by)?;
        self.ops()?;
        let moved = self.store().requeue(id)?;
        if moved {
            self.audit_change(by, "requeue", id, 1)?;
        }
        Ok(moved)
    }

    /// Deletes the dead letter `id`, audited as a `purge` of `id` by `by`:
    /// `false` when `id` is not dead-lettered (a pending or in-flight item
    /// of that id is left alone).
    ///
    /// # Errors
    ///
    /// As for [`requeue_id`](Self::requeue_id).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, Operator};
    ///
    /// let store = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// queue.put("spam", &1, Duration::ZERO)?;
    /// queue.take()?.expect("open").dead_letter()?;
    /// queue.put("order-2", &2, Duration::from_secs(60))?;
    /// let ops = Operator::new(store);
    /// assert!(ops.purge_id("spam", "ada")?);
    /// assert!(!ops.purge_id("order-2", "ada")?, "pending: left alone");
    /// assert_eq!(queue.counts()?.pending, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn purge_id(&self, id: &str, by: &str) -> Result<bool, DurableError> {
        check_by(by)?;
        self.ops()?;
        let moved = self.store().purge(id)?;
        if moved {
            self.audit_change(by, "purge", id, 1)?;
        }
        Ok(moved)
    }
}
