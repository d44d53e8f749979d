//! [`StoredItem`]: an item of a `DurablePool` as the store holds it, read by
//! id without claiming it (`DurablePool::get`, and the async client's).

use std::time::SystemTime;

use crate::durable::store::backend::{Stored, StoredState};
use crate::durable::store::envelope::{self, Payload};
use crate::durable::store::error::DurableError;
use crate::durable::take::delivery::ms_to_time;

use super::calendar_def;
use super::durable_pool::DurablePool;

/// An item as the store holds it, from [`DurablePool::get`] (or
/// `AsyncClient::get`): where it is, when it is due, its kind and payload.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoredItem {
    /// The item's id.
    pub id: String,
    /// Its kind (for a calendar schedule, its handler's kind); empty when
    /// the stored bytes do not open.
    pub kind: String,
    /// Pending, in flight or dead-lettered.
    pub state: StoredState,
    /// The occurrence's scheduled time, by the store's clock (ms since the
    /// Unix epoch).
    pub deadline_ms: u64,
    /// The payload's bytes ([`decode`](Self::decode) reads them), or why
    /// the stored bytes do not open.
    pub payload: Result<Vec<u8>, DurableError>,
}

impl StoredItem {
    pub(crate) fn read(id: &str, stored: Stored) -> Self {
        let (kind, payload) = match envelope::open(&stored.envelope) {
            Ok(env) => {
                let (kind, payload) = calendar_def::user_view(&env);
                (kind.to_string(), Ok(payload.to_vec()))
            }
            Err(err) => (String::new(), Err(err)),
        };
        StoredItem {
            id: id.to_string(),
            kind,
            state: stored.state,
            deadline_ms: stored.deadline_ms,
            payload,
        }
    }

    /// [`deadline_ms`](Self::deadline_ms) as a `SystemTime`.
    pub fn deadline(&self) -> SystemTime {
        ms_to_time(self.deadline_ms)
    }

    /// Decodes the payload as `U` (the type its kind's handler takes).
    ///
    /// # Errors
    ///
    /// [`DurableError::Format`] when the bytes do not decode as `U`, or the
    /// stored item did not open.
    pub fn decode<U: Payload>(&self) -> Result<U, DurableError> {
        let bytes = self.payload.as_ref().map_err(Clone::clone)?;
        envelope::decode(&self.id, bytes)
    }
}

impl DurablePool {
    /// Reads the item `id` wherever it is (pending, in flight or dead),
    /// without claiming or changing it: `None` when there is none.
    ///
    /// # Errors
    ///
    /// The store's error; [`DurableError::Config`] from a backend of your
    /// own without [`DurableBackend::get`](crate::durable::DurableBackend::get).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend, StoredState};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new()).threads(0).build()?;
    /// pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800))?;
    /// let item = pool.get("order-42")?.expect("stored");
    /// assert_eq!((item.kind.as_str(), item.state), ("close-order", StoredState::Pending));
    /// assert_eq!(item.decode::<u64>()?, 42);
    /// assert!(pool.get("order-43")?.is_none());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn get(&self, id: &str) -> Result<Option<StoredItem>, DurableError> {
        Ok(self.store().get(id)?.map(|s| StoredItem::read(id, s)))
    }
}
