//! The memory backend's state under its one lock: the items, the three
//! sorted sets (`due`, `lease`, `dead`) that index them by score, the
//! token counter, the wake-up marker and the settle receipts.
//!
//! Invariants: every id in `items` is in exactly one of `due`, `lease`,
//! `dead`, under the score its `Item::place` records (`set` and `remove`
//! keep the sets and the place together); `tokens` only grows.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::durable::store::ops::{AuditEntry, StoredState};
use crate::durable::store::ops_read::stored_kind;

use crate::durable::store::backend::RECEIPT_MS;

#[derive(Default)]
pub(super) struct State {
    pub(super) items: HashMap<String, Item>,
    pub(super) due: BTreeSet<(u64, String)>,
    pub(super) lease: BTreeSet<(u64, String)>,
    pub(super) dead: BTreeSet<(u64, String)>,
    pub(super) tokens: u64,
    pub(super) marker: bool,
    /// The Redis backend's settle receipts: id → (token, result, expiry),
    /// so a repeated settle with the same token answers as the first did.
    pub(super) receipts: HashMap<String, (u64, u64, u64)>,
    /// Paused kinds: kind → (by, at ms).
    pub(super) paused: BTreeMap<String, (String, u64)>,
    /// The audit trail, oldest first (seq = index + 1).
    pub(super) audit: Vec<AuditEntry>,
}

pub(super) struct Item {
    pub(super) envelope: Vec<u8>,
    pub(super) token: u64,
    pub(super) attempts: u32,
    pub(super) deadline: u64,
    pub(super) due: u64,
    pub(super) place: Place,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Due(u64),
    Lease(u64),
    Dead(u64),
}

impl State {
    pub(super) fn set(&mut self, id: &str, place: Place) {
        let item = self.items.get_mut(id).expect("placed ids are stored");
        let old = std::mem::replace(&mut item.place, place);
        let key = |score: u64| (score, id.to_string());
        match old {
            Place::Due(s) => self.due.remove(&key(s)),
            Place::Lease(s) => self.lease.remove(&key(s)),
            Place::Dead(s) => self.dead.remove(&key(s)),
        };
        match place {
            Place::Due(s) => self.due.insert(key(s)),
            Place::Lease(s) => self.lease.insert(key(s)),
            Place::Dead(s) => self.dead.insert(key(s)),
        };
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<Item> {
        let item = self.items.remove(id)?;
        let key = |score: u64| (score, id.to_string());
        match item.place {
            Place::Due(s) => self.due.remove(&key(s)),
            Place::Lease(s) => self.lease.remove(&key(s)),
            Place::Dead(s) => self.dead.remove(&key(s)),
        };
        Some(item)
    }

    /// Sets the marker when `id` is now the earliest pending item.
    pub(super) fn wake_if_head(&mut self, id: &str) -> bool {
        let head = self.due.first().is_some_and(|(_, h)| h == id);
        self.marker |= head;
        head
    }

    pub(super) fn write_receipt(&mut self, id: &str, token: u64, result: u64, now: u64) {
        // Forget expired receipts now and then, so they stay bounded.
        if self.receipts.len() >= 1024 && self.receipts.len().is_power_of_two() {
            self.receipts.retain(|_, r| r.2 > now);
        }
        let expiry = now + RECEIPT_MS;
        self.receipts
            .insert(id.to_string(), (token, result, expiry));
    }

    pub(super) fn receipt(&self, id: &str, token: u64, now: u64) -> Option<u64> {
        let &(tok, result, expiry) = self.receipts.get(id)?;
        (tok == token && expiry > now).then_some(result)
    }

    pub(super) fn holds(&self, id: &str, token: u64) -> bool {
        self.items
            .get(id)
            .is_some_and(|i| i.token == token && matches!(i.place, Place::Lease(_)))
    }

    /// True when the pending item `id` may be claimed: its kind is not paused.
    pub(super) fn claimable(&self, id: &str) -> bool {
        self.paused.is_empty()
            || !self
                .paused
                .contains_key(stored_kind(StoredState::Pending, &self.items[id].envelope))
    }

    pub(super) fn next_token(&mut self) -> u64 {
        self.tokens += 1;
        self.tokens
    }
}
