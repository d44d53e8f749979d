//! The memory backend's dead-letter verbs: bury, requeue, purge and the
//! listing, each one step under `State`'s lock (a child of `memory/mod.rs`, so
//! it reaches the state without widening it).
//!
//! Invariants (besides `memory.rs`'s): only a dead item's envelope carries
//! a dead record (`dead_record.rs`), added by `bury` and stripped by
//! `requeue`; a requeue is a fresh put of the stored value (due now,
//! attempts 0, a new token), so a stale holder stays fenced.

use super::state::Place;
use super::MemoryBackend;
use crate::durable::store::backend::{Buried, DurableError};
use crate::durable::store::dead_record;

impl MemoryBackend {
    pub(super) fn bury_item(
        &self,
        id: &str,
        token: u64,
        error: Option<&str>,
    ) -> Result<bool, DurableError> {
        let (mut s, now) = self.lock();
        if !s.holds(id, token) {
            return Ok(s.receipt(id, token, now).is_some());
        }
        s.write_receipt(id, token, 0, now);
        let item = s.items.get_mut(id).expect("held");
        let mut stored = dead_record::record(error);
        stored.extend_from_slice(&item.envelope);
        item.envelope = stored;
        s.set(id, Place::Dead(now));
        Ok(true)
    }

    pub(super) fn requeue_item(&self, id: &str) -> Result<bool, DurableError> {
        let (mut s, now) = self.lock();
        if !s
            .items
            .get(id)
            .is_some_and(|i| matches!(i.place, Place::Dead(_)))
        {
            return Ok(false);
        }
        let token = s.next_token();
        let item = s.items.get_mut(id).expect("dead ids are stored");
        item.envelope = dead_record::envelope(std::mem::take(&mut item.envelope));
        item.token = token;
        item.attempts = 0;
        item.deadline = now;
        item.due = now;
        s.set(id, Place::Due(now));
        if s.wake_if_head(id) {
            self.inner.woken.notify_one();
        }
        Ok(true)
    }

    pub(super) fn purge_item(&self, id: &str) -> Result<bool, DurableError> {
        let (mut s, _) = self.lock();
        let dead = s
            .items
            .get(id)
            .is_some_and(|i| matches!(i.place, Place::Dead(_)));
        if dead {
            s.remove(id);
        }
        Ok(dead)
    }

    pub(super) fn dead_list(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        let s = self.inner.state.lock();
        Ok(s.dead
            .iter()
            .take(max)
            .map(|(died_ms, id)| {
                let item = &s.items[id];
                let (error, envelope) = dead_record::split(&item.envelope);
                Buried {
                    id: id.clone(),
                    envelope: envelope.to_vec(),
                    error,
                    attempts: item.attempts,
                    died_ms: *died_ms,
                }
            })
            .collect())
    }
}
