//! Reading a store's bytes for an operator: the constructors of
//! [`ItemSummary`] and [`ItemDetail`] from a row, which open the envelope
//! (and a dead item's dead record) to show its kind, payload and error.
//!
//! Invariant: reading never fails on what an item holds; bytes that do not
//! open give an empty kind and the raw bytes as the payload.

use super::dead_record;
use super::envelope;
use super::ops::{Cursor, ItemDetail, ItemSummary, StoredState};

impl ItemSummary {
    /// A summary from a store's row, `stored` being its bytes as stored (a
    /// dead item's with its dead record in front).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{ItemSummary, StoredState};
    ///
    /// let item = ItemSummary::new("a", StoredState::Pending, 10, 10, 0, b"\x01\x04mail\x00");
    /// assert_eq!(item.kind, "mail");
    /// ```
    pub fn new(
        id: &str,
        state: StoredState,
        score_ms: u64,
        deadline_ms: u64,
        attempts: u32,
        stored: &[u8],
    ) -> Self {
        ItemSummary {
            id: id.to_string(),
            kind: stored_kind(state, stored).to_string(),
            state,
            score_ms,
            deadline_ms,
            attempts,
        }
    }

    /// A summary from a store's columns, the kind read already.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn from_parts(
        id: String,
        kind: String,
        state: StoredState,
        score_ms: u64,
        deadline_ms: u64,
        attempts: u32,
    ) -> Self {
        ItemSummary {
            id,
            kind,
            state,
            score_ms,
            deadline_ms,
            attempts,
        }
    }

    /// Where a listing resumes after this item.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            score_ms: self.score_ms,
            id: self.id.clone(),
        }
    }
}

/// The kind of an item from its stored bytes ("" when they do not open).
pub(crate) fn stored_kind(state: StoredState, stored: &[u8]) -> &str {
    let env = if state == StoredState::Dead {
        dead_record::split(stored).1
    } else {
        stored
    };
    envelope::open(env).map_or("", |e| e.kind)
}

impl ItemDetail {
    /// A detail from a store's row (see [`ItemSummary::new`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{ItemDetail, StoredState};
    ///
    /// let item = ItemDetail::new("a", StoredState::InFlight, 50, 10, 10, 7, 1, b"\x01\x04mail\x00hi");
    /// assert_eq!(item.payload, b"hi");
    /// assert_eq!(item.lease, Some((7, 50)));
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: &str,
        state: StoredState,
        score_ms: u64,
        deadline_ms: u64,
        due_ms: u64,
        token: u64,
        attempts: u32,
        stored: &[u8],
    ) -> Self {
        let (last_error, env) = if state == StoredState::Dead {
            dead_record::split(stored)
        } else {
            (None, stored)
        };
        let (payload, unreadable) = match envelope::open(env) {
            Ok(e) => (e.payload.to_vec(), None),
            Err(err) => (env.to_vec(), Some(err.to_string())),
        };
        ItemDetail {
            summary: ItemSummary::new(id, state, score_ms, deadline_ms, attempts, stored),
            due_ms,
            payload,
            last_error,
            lease: (state == StoredState::InFlight).then_some((token, score_ms)),
            unreadable,
        }
    }
}
