//! Bulk requeue and purge of dead letters: [`DeadFilter`], [`BulkReport`]
//! and the [`Operator`] verbs that page through the dead set and move each
//! match with the store's own one-item atomic step.
//!
//! Invariants:
//!
//! - Each item is moved by [`DurableBackend::requeue`](crate::durable::store::backend::DurableBackend::requeue) or
//!   [`DurableBackend::purge`](crate::durable::store::backend::DurableBackend::purge), one atomic step each: of two operators
//!   running the same bulk action at once, exactly one moves any given
//!   item, and the two reports' `moved` add up to the items moved.
//! - At most `max` items are moved (or, in a dry run, reported) per call.
//! - One audit record per call that moved anything, with the count moved.

use super::operator::{check_by, Operator};
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::{ListFilter, StoredState};

/// How many dead letters one page (batch) reads.
const BATCH: usize = 100;

/// Which dead letters a bulk action takes.
///
/// # Examples
///
/// ```
/// use schedpool::durable::DeadFilter;
///
/// let filter = DeadFilter::default().kind("charge").id_prefix("order-");
/// assert_eq!(filter.to_string(), "kind=charge id^=order-");
/// assert_eq!(DeadFilter::default().to_string(), "all");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DeadFilter {
    /// Only this kind.
    pub kind: Option<String>,
    /// Only ids starting with this.
    pub id_prefix: Option<String>,
    /// Only items that died at or after this (ms).
    pub died_from_ms: Option<u64>,
    /// Only items that died before this (ms).
    pub died_until_ms: Option<u64>,
}

impl DeadFilter {
    /// Only `kind`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::DeadFilter;
    /// assert_eq!(DeadFilter::default().kind("a").kind.as_deref(), Some("a"));
    /// ```
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Only ids starting with `prefix`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::DeadFilter;
    /// assert_eq!(DeadFilter::default().id_prefix("o-").id_prefix.as_deref(), Some("o-"));
    /// ```
    pub fn id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.id_prefix = Some(prefix.into());
        self
    }

    /// Only deaths in `from_ms..until_ms` (each bound optional).
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::DeadFilter;
    /// let f = DeadFilter::default().died_between(Some(1), Some(2));
    /// assert_eq!((f.died_from_ms, f.died_until_ms), (Some(1), Some(2)));
    /// ```
    pub fn died_between(mut self, from_ms: Option<u64>, until_ms: Option<u64>) -> Self {
        self.died_from_ms = from_ms;
        self.died_until_ms = until_ms;
        self
    }

    fn listing(&self) -> ListFilter {
        let mut filter =
            ListFilter::new(StoredState::Dead).between(self.died_from_ms, self.died_until_ms);
        filter.kind = self.kind.clone();
        filter.id_prefix = self.id_prefix.clone();
        filter.limit(BATCH)
    }
}

impl std::fmt::Display for DeadFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(k) = &self.kind {
            parts.push(format!("kind={k}"));
        }
        if let Some(p) = &self.id_prefix {
            parts.push(format!("id^={p}"));
        }
        if let Some(t) = self.died_from_ms {
            parts.push(format!("died>={t}"));
        }
        if let Some(t) = self.died_until_ms {
            parts.push(format!("died<{t}"));
        }
        if parts.is_empty() {
            f.write_str("all")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

/// What a bulk action did (or, in a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BulkReport {
    /// Dead letters that matched and were tried (at most `max`).
    pub matched: u64,
    /// Of those, the ones this call moved (0 in a dry run). A matched item
    /// not moved was taken by someone else in between (another operator,
    /// a put of its id).
    pub moved: u64,
    /// The ids moved (in a dry run: the ids that would be), in dead-set order.
    pub ids: Vec<String>,
    /// True for a dry run.
    pub dry_run: bool,
}

#[derive(Clone, Copy)]
enum Action {
    Requeue,
    Purge,
}

impl Operator {
    /// Moves up to `max` dead letters matching `filter` back to pending
    /// (due now, attempts reset, error dropped), a page of 100 at a time;
    /// with `dry_run` it only reports which it would move. Each item is
    /// moved once even when two operators run this at once.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for an empty `by` or a backend without an
    /// operator side; the store's error otherwise (items moved before it
    /// stay moved and are audited before the error returns).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DeadFilter, DurableQueue, MemoryBackend, Operator};
    ///
    /// let store = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// for i in 0..3 {
    ///     queue.put(&format!("order-{i}"), &i, Duration::ZERO)?;
    ///     queue.take()?.expect("open").dead_letter()?;
    /// }
    /// let ops = Operator::new(store);
    /// let dry = ops.requeue_dead(&DeadFilter::default(), 2, true, "ada")?;
    /// assert_eq!((dry.matched, dry.moved), (2, 0));
    /// let done = ops.requeue_dead(&DeadFilter::default(), 10, false, "ada")?;
    /// assert_eq!(done.moved, 3);
    /// assert_eq!(queue.counts()?.pending, 3);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn requeue_dead(
        &self,
        filter: &DeadFilter,
        max: u64,
        dry_run: bool,
        by: &str,
    ) -> Result<BulkReport, DurableError> {
        self.requeue_dead_with(filter, max, dry_run, by, &mut |_| {})
    }

    /// [`requeue_dead`](Self::requeue_dead), calling `progress` after each
    /// batch with the report so far (for a progress bar).
    ///
    /// # Errors
    ///
    /// As for [`requeue_dead`](Self::requeue_dead). When a batch fails
    /// after others moved items, the error is returned and the moves made
    /// so far are audited first.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DeadFilter, MemoryBackend, Operator};
    ///
    /// let ops = Operator::new(MemoryBackend::new());
    /// let mut calls = 0;
    /// let report = ops.requeue_dead_with(&DeadFilter::default(), 10, false, "ada", &mut |_| calls += 1)?;
    /// assert_eq!((report.moved, calls), (0, 0));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn requeue_dead_with(
        &self,
        filter: &DeadFilter,
        max: u64,
        dry_run: bool,
        by: &str,
        progress: &mut dyn FnMut(&BulkReport),
    ) -> Result<BulkReport, DurableError> {
        self.bulk(Action::Requeue, filter, max, dry_run, by, progress)
    }

    /// Deletes up to `max` dead letters matching `filter`, a page of 100 at
    /// a time; with `dry_run` it only reports which it would delete. Each
    /// item is deleted once even when two operators run this at once.
    ///
    /// # Errors
    ///
    /// As for [`requeue_dead`](Self::requeue_dead).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DeadFilter, DurableQueue, MemoryBackend, Operator};
    ///
    /// let store = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// queue.put("spam-1", &1, Duration::ZERO)?;
    /// queue.take()?.expect("open").dead_letter()?;
    /// let ops = Operator::new(store);
    /// let report = ops.purge_dead(&DeadFilter::default().id_prefix("spam-"), 100, false, "ada")?;
    /// assert_eq!(report.ids, ["spam-1"]);
    /// assert_eq!(queue.counts()?.dead, 0);
    /// assert_eq!(ops.audit(1, None)?[0].count, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn purge_dead(
        &self,
        filter: &DeadFilter,
        max: u64,
        dry_run: bool,
        by: &str,
    ) -> Result<BulkReport, DurableError> {
        self.purge_dead_with(filter, max, dry_run, by, &mut |_| {})
    }

    /// [`purge_dead`](Self::purge_dead) with a progress callback, as
    /// [`requeue_dead_with`](Self::requeue_dead_with).
    ///
    /// # Errors
    ///
    /// As for [`requeue_dead_with`](Self::requeue_dead_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DeadFilter, MemoryBackend, Operator};
    ///
    /// let ops = Operator::new(MemoryBackend::new());
    /// let report = ops.purge_dead_with(&DeadFilter::default(), 10, true, "ada", &mut |r| println!("{}", r.matched))?;
    /// assert!(report.dry_run);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn purge_dead_with(
        &self,
        filter: &DeadFilter,
        max: u64,
        dry_run: bool,
        by: &str,
        progress: &mut dyn FnMut(&BulkReport),
    ) -> Result<BulkReport, DurableError> {
        self.bulk(Action::Purge, filter, max, dry_run, by, progress)
    }

    fn bulk(
        &self,
        action: Action,
        filter: &DeadFilter,
        max: u64,
        dry_run: bool,
        by: &str,
        progress: &mut dyn FnMut(&BulkReport),
    ) -> Result<BulkReport, DurableError> {
        check_by(by)?;
        let ops = self.ops()?;
        let mut report = BulkReport {
            dry_run,
            ..BulkReport::default()
        };
        let mut listing = filter.listing();
        let result = loop {
            if report.matched >= max {
                break Ok(());
            }
            let page = match ops.list(&listing) {
                Ok(page) => page,
                Err(e) => break Err(e),
            };
            let mut failed = None;
            let batch = !page.items.is_empty();
            for item in page.items {
                if report.matched >= max {
                    break;
                }
                report.matched += 1;
                if dry_run {
                    report.ids.push(item.id);
                    continue;
                }
                let moved = match action {
                    Action::Requeue => self.store().requeue(&item.id),
                    Action::Purge => self.store().purge(&item.id),
                };
                match moved {
                    Ok(true) => {
                        report.moved += 1;
                        report.ids.push(item.id);
                    }
                    Ok(false) => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if batch {
                progress(&report);
            }
            if let Some(e) = failed {
                break Err(e);
            }
            match page.next {
                Some(next) => listing.after = Some(next),
                None => break Ok(()),
            }
        };
        if report.moved > 0 {
            let verb = match action {
                Action::Requeue => "requeue",
                Action::Purge => "purge",
            };
            self.audit_change(by, verb, &filter.to_string(), report.moved)?;
        }
        result.map(|()| report)
    }
}
