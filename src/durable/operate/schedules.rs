//! Durable calendar schedules as an operator sees them: [`ScheduleInfo`],
//! [`Operator::schedules`] and [`Operator::fire_now`].
//!
//! Invariants: a schedule is read from its stored item (the rule itself is
//! code and never stored: only its text is shown); firing now puts a
//! separate one-shot item of the schedule's kind and payload, so the
//! schedule's own next fire and misfire accounting are untouched.

use std::time::Duration;

use super::operator::{check_by, Operator};
use crate::durable::pool::calendar_def::{self, KIND};
use crate::durable::pool::misfire::Misfire;
use crate::durable::store::backend::{PutMode, When};
use crate::durable::store::envelope;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::{ListFilter, StoredState};

/// A durable calendar schedule, read from the store.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use schedpool::calendar::Schedule;
/// use schedpool::durable::{DurablePool, MemoryBackend, Misfire, Operator, StoredState};
///
/// #[derive(Debug)]
/// struct Hourly;
/// impl Schedule for Hourly {
///     fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
///         let secs = after.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
///         Some(SystemTime::UNIX_EPOCH + Duration::from_secs((secs / 3600 + 1) * 3600))
///     }
/// }
///
/// let store = MemoryBackend::new();
/// let pool = DurablePool::builder(store.clone())
///     .threads(1)
///     .handler("report", |_: &(), _job| Ok(()))
///     .build()?;
/// pool.schedule_calendar("report", "hourly-report", &(), Hourly, Misfire::skip())?;
/// let schedules = Operator::new(store).schedules()?;
/// assert_eq!(schedules[0].name, "hourly-report");
/// assert_eq!(schedules[0].kind, "report");
/// assert_eq!(schedules[0].state, StoredState::Pending);
/// # pool.shutdown();
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ScheduleInfo {
    /// The schedule's id.
    pub name: String,
    /// The handler kind it fires.
    pub kind: String,
    /// Its misfire policy.
    pub misfire: Misfire,
    /// The start of its rule's `Debug` text (at most 200 bytes).
    pub rule: String,
    /// Where its item is: pending (waiting for its next fire), in flight (a
    /// fire is running), dead (its rule failed, or a fire exhausted its attempts).
    pub state: StoredState,
    /// The oldest fire not yet handled (ms): the next fire while pending,
    /// the running fire while in flight.
    pub next_fire_ms: u64,
    /// Attempts at that fire so far.
    pub attempts: u32,
}

impl Operator {
    /// The durable calendar schedules in the store, in state order
    /// (pending, in flight, dead), then by next fire.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when the backend has no operator side; the
    /// store's error otherwise. A schedule whose record does not read is
    /// left out (its item still lists under the kind `schedpool/calendar`).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{MemoryBackend, Operator};
    ///
    /// assert!(Operator::new(MemoryBackend::new()).schedules()?.is_empty());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedules(&self) -> Result<Vec<ScheduleInfo>, DurableError> {
        let ops = self.ops()?;
        let mut out = Vec::new();
        for state in [
            StoredState::Pending,
            StoredState::InFlight,
            StoredState::Dead,
        ] {
            let mut filter = ListFilter::new(state).kind(KIND).limit(500);
            loop {
                let page = ops.list(&filter)?;
                for item in &page.items {
                    let Some(detail) = ops.inspect(&item.id)? else {
                        continue; // gone since the listing
                    };
                    let Ok(def) = calendar_def::read(&detail.payload) else {
                        continue;
                    };
                    out.push(ScheduleInfo {
                        name: item.id.clone(),
                        kind: def.kind.to_string(),
                        misfire: def.misfire,
                        rule: def.rule_text.to_string(),
                        state,
                        next_fire_ms: detail.summary.deadline_ms,
                        attempts: detail.summary.attempts,
                    });
                }
                match page.next {
                    Some(next) => filter.after = Some(next),
                    None => break,
                }
            }
        }
        Ok(out)
    }

    /// Runs the calendar schedule `name`'s handler once now, with its
    /// payload, as a separate one-shot item (its id returned:
    /// `NAME@now-MS`); the schedule's own fires are unchanged. Audited.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when there is no calendar schedule `name`
    /// or `by` is empty; the store's error otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use schedpool::calendar::Schedule;
    /// use schedpool::durable::{DurablePool, MemoryBackend, Misfire, Operator};
    ///
    /// #[derive(Debug)]
    /// struct Yearly;
    /// impl Schedule for Yearly {
    ///     fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
    ///         Some(after + Duration::from_secs(365 * 86_400))
    ///     }
    /// }
    ///
    /// let runs = Arc::new(AtomicU32::new(0));
    /// let counter = runs.clone();
    /// let store = MemoryBackend::new();
    /// let pool = DurablePool::builder(store.clone())
    ///     .threads(1)
    ///     .handler("report", move |_: &(), _job| { counter.fetch_add(1, Ordering::SeqCst); Ok(()) })
    ///     .build()?;
    /// pool.schedule_calendar("report", "yearly-report", &(), Yearly, Misfire::skip())?;
    /// let ops = Operator::new(store);
    /// let id = ops.fire_now("yearly-report", "ada")?;
    /// assert!(id.starts_with("yearly-report@now-"));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(runs.load(Ordering::SeqCst), 1);
    /// assert!(ops.fire_now("no-such", "ada").unwrap_err().is_config());
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn fire_now(&self, name: &str, by: &str) -> Result<String, DurableError> {
        check_by(by)?;
        let ops = self.ops()?;
        let not_found =
            || DurableError::Config(format!("there is no calendar schedule {name:?}").into());
        let detail = ops.inspect(name)?.ok_or_else(not_found)?;
        if detail.summary.kind != KIND {
            return Err(not_found());
        }
        let def = calendar_def::read(&detail.payload)?;
        let sealed = envelope::seal(def.kind, None, &def.payload.to_vec())?;
        let now = self.store().server_time_ms()?;
        let id = format!("{name}@now-{now}");
        self.store()
            .put(&id, &sealed, When::After(Duration::ZERO), PutMode::IfAbsent)?;
        self.audit_change(by, "fire", name, 1)?;
        Ok(id)
    }
}
