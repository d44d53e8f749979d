//! The library's operator verbs, mapped to the views of `model.rs`.
//! (Interim: on `DurablePool::producer` until the operator API lands.)

use schedpool::durable::{DurableBackend, DurableError, DurablePool, StoredState};

use super::model::*;
use super::BulkAction;
use crate::error::Error;

pub(crate) struct Ops {
    pool: DurablePool,
}

fn state(s: StoredState) -> State {
    match s {
        StoredState::Pending => State::Pending,
        StoredState::InFlight => State::InFlight,
        StoredState::Dead => State::Dead,
    }
}

fn missing(what: &str) -> Error {
    Error::new(crate::ErrorKind::Failed, format!("{what}: not available yet"))
}

impl Ops {
    pub(crate) fn new(backend: impl DurableBackend) -> Result<Ops, DurableError> {
        Ok(Ops {
            pool: DurablePool::producer(backend)?,
        })
    }

    pub(crate) fn overview(&self) -> Result<Overview, Error> {
        let c = self
            .pool
            .counts()
            .map_err(|e| Error::store("reading the counts", e))?;
        Ok(Overview {
            now_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis() as u64,
            pending: c.pending,
            in_flight: c.in_flight,
            dead: c.dead,
            kinds: Vec::new(),
            paused: Vec::new(),
            next_due_ms: None,
            lag_ms: None,
        })
    }

    pub(crate) fn list(&self, filter: &Filter, _cursor: Option<&str>, limit: usize) -> Result<Page, Error> {
        if filter.state != Some(State::Dead) {
            return Err(missing("listing pending items"));
        }
        let dead = self
            .pool
            .dead_letters(limit)
            .map_err(|e| Error::store("listing dead letters", e))?;
        Ok(Page {
            items: dead
                .into_iter()
                .filter(|d| filter.kind.as_ref().is_none_or(|k| *k == d.kind))
                .filter(|d| filter.id_prefix.as_ref().is_none_or(|p| d.id.starts_with(p.as_str())))
                .map(|d| Item {
                    id: d.id,
                    kind: d.kind,
                    state: State::Dead,
                    at_ms: d.died_ms,
                    deadline_ms: d.died_ms,
                    attempts: d.attempts,
                })
                .collect(),
            next_cursor: None,
        })
    }

    pub(crate) fn item(&self, id: &str) -> Result<Option<ItemDetail>, Error> {
        let got = self
            .pool
            .get(id)
            .map_err(|e| Error::store(&format!("reading {id:?}"), e))?;
        Ok(got.map(|s| {
            let (payload, unreadable) = match s.payload {
                Ok(p) => (p, None),
                Err(e) => (Vec::new(), Some(e.to_string())),
            };
            ItemDetail {
                item: Item {
                    id: s.id,
                    kind: s.kind,
                    state: state(s.state),
                    at_ms: s.deadline_ms,
                    deadline_ms: s.deadline_ms,
                    attempts: 0,
                },
                due_ms: s.deadline_ms,
                last_error: None,
                lease: None,
                payload,
                unreadable,
            }
        }))
    }

    pub(crate) fn requeue(&self, id: &str, _by: &str) -> Result<bool, Error> {
        self.pool
            .requeue(id)
            .map_err(|e| Error::store(&format!("requeueing {id:?}"), e))
    }

    pub(crate) fn purge(&self, id: &str, _by: &str) -> Result<bool, Error> {
        self.pool
            .purge(id)
            .map_err(|e| Error::store(&format!("purging {id:?}"), e))
    }

    pub(crate) fn cancel(&self, id: &str, _by: &str) -> Result<Option<State>, Error> {
        let before = self.item(id)?;
        let done = self
            .pool
            .cancel(id)
            .map_err(|e| Error::store(&format!("cancelling {id:?}"), e))?;
        Ok(before.filter(|_| done).map(|d| d.item.state))
    }

    pub(crate) fn bulk(
        &self,
        action: BulkAction,
        filter: &Filter,
        max: usize,
        dry_run: bool,
        by: &str,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<BulkOutcome, Error> {
        let dead = Filter {
            state: Some(State::Dead),
            ..filter.clone()
        };
        let page = self.list(&dead, None, max)?;
        let total = page.items.len();
        let mut changed = 0;
        if !dry_run {
            for (i, item) in page.items.iter().enumerate() {
                let moved = match action {
                    BulkAction::Requeue => self.requeue(&item.id, by)?,
                    BulkAction::Purge => self.purge(&item.id, by)?,
                };
                changed += usize::from(moved);
                progress(i + 1, total);
            }
        }
        Ok(BulkOutcome {
            action: action.name().to_string(),
            filter: dead.describe(),
            matched: total,
            changed,
            dry_run,
        })
    }

    pub(crate) fn pause(&self, _kind: &str, _by: &str) -> Result<bool, Error> {
        Err(missing("pausing a kind"))
    }

    pub(crate) fn resume(&self, _kind: &str, _by: &str) -> Result<bool, Error> {
        Err(missing("resuming a kind"))
    }

    pub(crate) fn schedules(&self) -> Result<Vec<Schedule>, Error> {
        Err(missing("listing schedules"))
    }

    pub(crate) fn fire(&self, _name: &str, _by: &str) -> Result<(), Error> {
        Err(missing("firing a schedule"))
    }

    pub(crate) fn audit(&self, _limit: usize) -> Result<Vec<Audit>, Error> {
        Err(missing("reading the audit trail"))
    }
}
