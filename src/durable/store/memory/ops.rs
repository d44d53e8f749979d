//! The memory backend's operator side ([`DurableOps`]): listings walk the
//! state's sorted set from the cursor, counts by kind open every envelope,
//! paused kinds and the audit trail live in `State` (a child of
//! `memory/mod.rs`, so it reaches the state without widening it).
//!
//! Invariants (besides `memory/mod.rs`'s): a listing reads under the one
//! lock, so a page is a consistent snapshot; a resume sets the wake-up
//! marker, so waiting consumers claim the kind's due items at once.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use super::state::{Place, State};
use super::MemoryBackend;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::{
    AuditEntry, DurableOps, ItemDetail, ItemSummary, KindCounts, ListFilter, Page, PausedKind,
    StoredState,
};
use crate::durable::store::ops_read::stored_kind;

fn set_of(s: &State, state: StoredState) -> &BTreeSet<(u64, String)> {
    match state {
        StoredState::Pending => &s.due,
        StoredState::InFlight => &s.lease,
        StoredState::Dead => &s.dead,
    }
}

fn place_state(place: Place) -> (StoredState, u64) {
    match place {
        Place::Due(s) => (StoredState::Pending, s),
        Place::Lease(s) => (StoredState::InFlight, s),
        Place::Dead(s) => (StoredState::Dead, s),
    }
}

impl DurableOps for MemoryBackend {
    fn list(&self, filter: &ListFilter) -> Result<Page<ItemSummary>, DurableError> {
        let s = self.inner.state.lock();
        let set = set_of(&s, filter.state);
        let start = match &filter.after {
            Some(c) => Bound::Excluded((c.score_ms, c.id.clone())),
            None => Bound::Included((filter.from_ms.unwrap_or(0), String::new())),
        };
        let page = filter.page();
        let mut items = Vec::new();
        for (score, id) in set.range((start, Bound::Unbounded)) {
            if filter.until_ms.is_some_and(|u| *score >= u) {
                break;
            }
            let item = &s.items[id];
            let kind = stored_kind(filter.state, &item.envelope);
            if filter.admits(*score, id, kind) {
                items.push(ItemSummary::new(
                    id,
                    filter.state,
                    *score,
                    item.deadline,
                    item.attempts,
                    &item.envelope,
                ));
                if items.len() == page {
                    break;
                }
            }
        }
        let next = (items.len() == page).then(|| items[page - 1].cursor());
        Ok(Page { items, next })
    }

    fn inspect(&self, id: &str) -> Result<Option<ItemDetail>, DurableError> {
        let s = self.inner.state.lock();
        Ok(s.items.get(id).map(|item| {
            let (state, score) = place_state(item.place);
            ItemDetail::new(
                id,
                state,
                score,
                item.deadline,
                item.due,
                item.token,
                item.attempts,
                &item.envelope,
            )
        }))
    }

    fn count_by_kind(&self) -> Result<Vec<KindCounts>, DurableError> {
        let s = self.inner.state.lock();
        let mut by: BTreeMap<&str, KindCounts> = BTreeMap::new();
        for item in s.items.values() {
            let (state, _) = place_state(item.place);
            let kind = stored_kind(state, &item.envelope);
            by.entry(kind)
                .or_insert_with(|| KindCounts::new(kind))
                .add(state, 1);
        }
        Ok(by.into_values().collect())
    }

    fn pause_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        let (mut s, now) = self.lock();
        if s.paused.contains_key(kind) {
            return Ok(false);
        }
        s.paused.insert(kind.to_string(), (by.to_string(), now));
        Ok(true)
    }

    fn resume_kind(&self, kind: &str) -> Result<bool, DurableError> {
        let (mut s, _) = self.lock();
        let was = s.paused.remove(kind).is_some();
        if was {
            s.marker = true;
            self.inner.woken.notify_all();
        }
        Ok(was)
    }

    fn paused_kinds(&self) -> Result<Vec<PausedKind>, DurableError> {
        let s = self.inner.state.lock();
        Ok(s.paused
            .iter()
            .map(|(kind, (by, at))| PausedKind::new(kind, by, *at))
            .collect())
    }

    fn record_audit(
        &self,
        by: &str,
        action: &str,
        target: &str,
        count: u64,
    ) -> Result<AuditEntry, DurableError> {
        let (mut s, now) = self.lock();
        let seq = s.audit.len() as u64 + 1;
        let entry = AuditEntry::new(seq, now, by, action, target, count);
        s.audit.push(entry.clone());
        Ok(entry)
    }

    fn audit(&self, limit: usize, before: Option<u64>) -> Result<Vec<AuditEntry>, DurableError> {
        let s = self.inner.state.lock();
        Ok(s.audit
            .iter()
            .rev()
            .filter(|e| before.is_none_or(|b| e.seq < b))
            .take(limit)
            .cloned()
            .collect())
    }
}
