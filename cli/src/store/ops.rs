//! The library's [`Operator`] verbs, mapped to the views of `model.rs`
//! and to the tool's errors.
//!
//! Invariant: every change goes through the `Operator`, which records it
//! in the store's audit trail; nothing here writes to the store otherwise.

use schedpool::durable::{
    Cancelled, DeadFilter, DurableBackend, DurableError, ListFilter, Operator, StoredState,
};

use super::model::{
    Audit, BulkOutcome, Filter, Item, ItemDetail, KindRow, Lease, Overview, Page, Paused, Schedule,
    State,
};
use super::BulkAction;
use crate::error::Error;

/// An operator over one opened backend.
pub(crate) struct Ops {
    op: Operator,
}

fn state(s: StoredState) -> State {
    match s {
        StoredState::Pending => State::Pending,
        StoredState::InFlight => State::InFlight,
        StoredState::Dead => State::Dead,
    }
}

fn stored(s: State) -> StoredState {
    match s {
        State::Pending => StoredState::Pending,
        State::InFlight => StoredState::InFlight,
        State::Dead => StoredState::Dead,
    }
}

fn item(s: &schedpool::durable::ItemSummary) -> Item {
    Item {
        id: s.id.clone(),
        kind: s.kind.clone(),
        state: state(s.state),
        at_ms: s.score_ms,
        deadline_ms: s.deadline_ms,
        attempts: s.attempts,
    }
}

impl Ops {
    pub(crate) fn new(backend: impl DurableBackend) -> Result<Ops, DurableError> {
        Ok(Ops {
            op: Operator::new(backend),
        })
    }

    pub(crate) fn overview(&self) -> Result<Overview, Error> {
        let o = self
            .op
            .overview()
            .map_err(|e| Error::store("reading the overview", e))?;
        let paused = |kind: &str| o.paused.iter().any(|p| p.kind == kind);
        let mut kinds: Vec<KindRow> = o
            .by_kind
            .iter()
            .map(|k| KindRow {
                kind: k.kind.clone(),
                pending: k.pending,
                in_flight: k.in_flight,
                dead: k.dead,
                paused: paused(&k.kind),
            })
            .collect();
        // A paused kind with no item left still shows, to be resumed.
        for p in &o.paused {
            if !kinds.iter().any(|k| k.kind == p.kind) {
                kinds.push(KindRow {
                    kind: p.kind.clone(),
                    pending: 0,
                    in_flight: 0,
                    dead: 0,
                    paused: true,
                });
            }
        }
        kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
        Ok(Overview {
            now_ms: o.now_ms,
            pending: o.counts.pending,
            in_flight: o.counts.in_flight,
            dead: o.counts.dead,
            kinds,
            paused: o
                .paused
                .iter()
                .map(|p| Paused {
                    kind: p.kind.clone(),
                    by: p.by.clone(),
                    at_ms: p.at_ms,
                })
                .collect(),
            next_due_ms: o.next_due_ms,
            lag_ms: o
                .oldest_overdue
                .map(|d| d.as_millis().min(u64::MAX as u128) as u64),
        })
    }

    pub(crate) fn list(
        &self,
        filter: &Filter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page, Error> {
        let after = cursor
            .map(|c| {
                c.parse().map_err(|_| {
                    Error::usage(format!(
                        "{c:?} is not a cursor: pass the one printed under the previous page"
                    ))
                })
            })
            .transpose()?;
        let mut lf = ListFilter::new(stored(filter.state.unwrap_or(State::Pending)))
            .between(filter.from_ms, filter.until_ms)
            .limit(limit)
            .after(after);
        if let Some(k) = &filter.kind {
            lf = lf.kind(k.clone());
        }
        if let Some(p) = &filter.id_prefix {
            lf = lf.id_prefix(p.clone());
        }
        let page = self
            .op
            .list(&lf)
            .map_err(|e| Error::store("listing items", e))?;
        Ok(Page {
            items: page.items.iter().map(item).collect(),
            next_cursor: page.next.map(|c| c.to_string()),
        })
    }

    pub(crate) fn item(&self, id: &str) -> Result<Option<ItemDetail>, Error> {
        let got = self
            .op
            .inspect(id)
            .map_err(|e| Error::store(&format!("reading {id:?}"), e))?;
        Ok(got.map(|d| ItemDetail {
            item: item(&d.summary),
            due_ms: d.due_ms,
            last_error: d.last_error,
            lease: d.lease.map(|(token, until_ms)| Lease { token, until_ms }),
            payload: d.payload,
            unreadable: d.unreadable,
        }))
    }

    pub(crate) fn requeue(&self, id: &str, by: &str) -> Result<bool, Error> {
        self.op
            .requeue_id(id, by)
            .map_err(|e| Error::store(&format!("requeueing {id:?}"), e))
    }

    pub(crate) fn purge(&self, id: &str, by: &str) -> Result<bool, Error> {
        self.op
            .purge_id(id, by)
            .map_err(|e| Error::store(&format!("purging {id:?}"), e))
    }

    pub(crate) fn cancel(&self, id: &str, by: &str) -> Result<Option<State>, Error> {
        let found = self
            .op
            .cancel(id, by)
            .map_err(|e| Error::store(&format!("cancelling {id:?}"), e))?;
        Ok(match found {
            Cancelled::Pending(_) => Some(State::Pending),
            Cancelled::InFlight => Some(State::InFlight),
            Cancelled::Dead(_) => Some(State::Dead),
            _ => None,
        })
    }

    pub(crate) fn bulk(
        &self,
        action: BulkAction,
        filter: &Filter,
        max: usize,
        dry_run: bool,
        by: &str,
        progress: &mut dyn FnMut(usize),
    ) -> Result<BulkOutcome, Error> {
        let mut df = DeadFilter::default().died_between(filter.from_ms, filter.until_ms);
        if let Some(k) = &filter.kind {
            df = df.kind(k.clone());
        }
        if let Some(p) = &filter.id_prefix {
            df = df.id_prefix(p.clone());
        }
        let mut tick = |r: &schedpool::durable::BulkReport| progress(r.matched as usize);
        let report = match action {
            BulkAction::Requeue => self
                .op
                .requeue_dead_with(&df, max as u64, dry_run, by, &mut tick),
            BulkAction::Purge => self
                .op
                .purge_dead_with(&df, max as u64, dry_run, by, &mut tick),
        }
        .map_err(|e| Error::store(&format!("{} of dead letters ({df})", action.name()), e))?;
        Ok(BulkOutcome {
            action: action.name().to_string(),
            filter: Filter {
                state: Some(State::Dead),
                ..filter.clone()
            }
            .describe(),
            matched: report.matched as usize,
            changed: report.moved as usize,
            dry_run,
            ids: report.ids,
        })
    }

    pub(crate) fn pause(&self, kind: &str, by: &str) -> Result<bool, Error> {
        if kind.is_empty() {
            return Err(Error::usage(
                "the kind is empty: name a kind (see `status`)",
            ));
        }
        self.op
            .pause_kind(kind, by)
            .map_err(|e| Error::store(&format!("pausing {kind:?}"), e))
    }

    pub(crate) fn resume(&self, kind: &str, by: &str) -> Result<bool, Error> {
        self.op
            .resume_kind(kind, by)
            .map_err(|e| Error::store(&format!("resuming {kind:?}"), e))
    }

    pub(crate) fn schedules(&self) -> Result<Vec<Schedule>, Error> {
        let list = self
            .op
            .schedules()
            .map_err(|e| Error::store("listing the schedules", e))?;
        Ok(list
            .into_iter()
            .map(|s| Schedule {
                name: s.name,
                kind: s.kind,
                rule: s.rule,
                next_ms: s.next_fire_ms,
                misfire: format!("{:?}", s.misfire),
                state: state(s.state),
                attempts: s.attempts,
            })
            .collect())
    }

    pub(crate) fn fire(&self, name: &str, by: &str) -> Result<String, Error> {
        if !self.schedules()?.iter().any(|s| s.name == name) {
            return Err(Error::not_found(format!(
                "there is no calendar schedule {name:?}: `schedules` lists them"
            )));
        }
        self.op
            .fire_now(name, by)
            .map_err(|e| Error::store(&format!("firing {name:?}"), e))
    }

    pub(crate) fn audit(&self, limit: usize) -> Result<Vec<Audit>, Error> {
        let rows = self
            .op
            .audit(limit, None)
            .map_err(|e| Error::store("reading the audit trail", e))?;
        Ok(rows
            .into_iter()
            .map(|a| Audit {
                seq: a.seq,
                at_ms: a.at_ms,
                by: a.by,
                action: a.action,
                target: a.target,
                count: a.count,
            })
            .collect())
    }
}
