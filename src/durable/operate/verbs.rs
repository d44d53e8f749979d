//! The operator's verbs where users already are: [`DurablePool`] and
//! [`DurableQueue`] hand out an [`Operator`] on their own store, and the
//! pool pauses and resumes kinds directly (an impl block of each, above
//! both).
//!
//! Invariant: these are the [`Operator`]'s verbs on the same store
//! handle, so they pause for the whole fleet and are audited alike.

use super::operator::Operator;
use crate::durable::pool::durable_pool::DurablePool;
use crate::durable::queue::DurableQueue;
use crate::durable::store::envelope::Payload;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::PausedKind;

impl DurablePool {
    /// An [`Operator`] on this pool's store.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .handler("mail", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// assert_eq!(pool.operator().overview()?.counts.pending, 0);
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn operator(&self) -> Operator {
        Operator::from_store(self.store().clone())
    }

    /// Pauses `kind` for every process on this store, as
    /// [`Operator::pause_kind`] (persisted, audited under `by`): `true`
    /// when it was not paused yet.
    ///
    /// # Errors
    ///
    /// As for [`Operator::pause_kind`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("mail", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// assert!(pool.pause_kind("mail", "deploy-bot")?);
    /// pool.schedule("mail", "m-1", &(), Duration::ZERO)?;
    /// std::thread::sleep(Duration::from_millis(50));
    /// assert_eq!(pool.counts()?.pending, 1);
    /// assert!(pool.resume_kind("mail", "deploy-bot")?);
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn pause_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        self.operator().pause_kind(kind, by)
    }

    /// Resumes `kind`, as [`Operator::resume_kind`]: `true` when it was
    /// paused.
    ///
    /// # Errors
    ///
    /// As for [`Operator::pause_kind`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .handler("mail", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// assert!(!pool.resume_kind("mail", "ada")?);
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn resume_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        self.operator().resume_kind(kind, by)
    }

    /// The kinds paused on this store.
    ///
    /// # Errors
    ///
    /// As for [`Operator::paused_kinds`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .handler("mail", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// pool.pause_kind("mail", "ada")?;
    /// assert_eq!(pool.paused_kinds()?[0].kind, "mail");
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn paused_kinds(&self) -> Result<Vec<PausedKind>, DurableError> {
        self.operator().paused_kinds()
    }
}

impl<T: Payload> DurableQueue<T> {
    /// An [`Operator`] on this queue's store.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::from_secs(60))?;
    /// assert_eq!(queue.operator().overview()?.counts.pending, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn operator(&self) -> Operator {
        Operator::from_store(self.store().clone())
    }
}
