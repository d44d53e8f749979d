//! Calendar schedules once per fleet: `schedule_calendar` and
//! `replace_calendar`, an impl block of `DurablePool`'s.
//!
//! Above `pool.rs`; the stored definition is `calendar_def.rs`, what a
//! claim does `calendar_fire.rs` (through `runner.rs`), missed fires
//! `misfire.rs`.
//!
//! Invariants:
//!
//! - A schedule is stored once per id, by put-if-absent: registering it in
//!   N processes, at any times, leaves one item, whose deadline is the
//!   schedule's oldest fire not yet handled.
//! - The first fire is computed from the store's clock, never from this
//!   process's.
//! - A registration never silently changes a stored schedule: the same
//!   definition is `Exists`; another one is refused (`schedule_calendar`)
//!   or replaced (`replace_calendar`), as the caller chose.
//! - This process's registry holds an entry only for a definition the
//!   store agreed to (a refused registration leaves no entry behind).

use std::sync::Arc;

use super::calendar_def::{self, Entry};
use super::durable_pool::DurablePool;
use super::fires::utc;
use super::misfire::{self, Misfire};
use crate::calendar::Schedule;
use crate::durable::store::backend::{DurableError, Put, PutMode, StoredState, When};
use crate::durable::store::envelope::Payload;

/// Rounds of put-then-read before a registration gives up on a schedule
/// that keeps changing under it (each round is another process's
/// registration, cancel or replacement landing in between).
const ROUNDS: usize = 4;

/// A payload's stored bytes.
pub(super) fn encode<T: Payload>(value: &T) -> Vec<u8> {
    let mut payload = Vec::new();
    value.encode(&mut payload);
    payload
}

// ===== impl DurablePool =====

impl DurablePool {
    /// Runs `kind` on `value` at every fire of `schedule`, **once per fleet**:
    /// every process that registers the same schedule under `id` shares one
    /// stored item, whose deadline is the next fire, so each fire runs once
    /// whichever process claims it, however many processes run, whenever
    /// they started and whatever their clocks say. The store's clock
    /// decides when a fire is due.
    ///
    /// Call it at every start-up, in every process that should run the
    /// schedule: it returns [`Put::Inserted`] (with the first fire) for the
    /// process that stored it, [`Put::Exists`] for the others. A process
    /// runs a fire only if it registered the schedule; others hand it on
    /// (after a pause of the retry backoff's base, on the store's clock).
    /// So a fire already due when the pool starts may be claimed and handed
    /// on before this call: register at start-up with
    /// [`DurablePoolBuilder::schedule_calendar`](crate::durable::DurablePoolBuilder::schedule_calendar)
    /// instead, which registers before the workers start.
    ///
    /// A fire's run is a run like any other: the handler gets the fire
    /// instant as [`JobInfo::deadline_ms`](crate::durable::JobInfo::deadline_ms)
    /// (with `id`, the fire's key), failed runs retry with backoff into the
    /// dead-letter set, and delivery is at least once (a holder killed
    /// mid-run means a second run of that fire), so make the effect
    /// conditional on (id, fire instant). After each run the item moves to
    /// the rule's next fire in the same atomic step as the ack.
    ///
    /// Fires the fleet missed (all processes down, say) follow `misfire`,
    /// decided from the store alone when the oldest is claimed: see
    /// [`Misfire`]. The policy is stored with the schedule.
    ///
    /// **Changing a schedule**: the schedule's definition is the kind, the
    /// payload, `misfire` and the rule, compared by its `Debug` text (so
    /// keep that text deterministic: no `HashMap` fields, no addresses).
    /// Registering a different definition under a stored `id` is refused
    /// with [`DurableError::Config`] naming what differs; call
    /// [`replace_calendar`](Self::replace_calendar) (or `cancel(id)` first)
    /// to change it deliberately.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for a kind with no handler here (unless the
    /// pool is producer-only), an id that is empty or over 1,024 bytes, an
    /// invalid `misfire`, a rule
    /// that never fires after the store's now or breaks the [`Schedule`]
    /// contract, or another definition stored under `id`;
    /// [`DurableError::Closed`] once shut down; the store's error otherwise
    /// (a backend without [`get`](crate::durable::DurableBackend::get) cannot hold
    /// calendar schedules).
    ///
    /// # Examples
    ///
    /// A rule of your own (every day at 02:30 UTC) and a month of nights on
    /// a [`ManualClock`](crate::ManualClock):
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::ManualClock;
    /// use schedpool::calendar::Schedule;
    /// use schedpool::durable::{DurablePool, MemoryBackend, Misfire, Put};
    ///
    /// #[derive(Debug)]
    /// struct DailyUtc { secs: u64 }
    ///
    /// impl Schedule for DailyUtc {
    ///     fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
    ///         let t = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         let day = t / 86_400 * 86_400;
    ///         let next = if day + self.secs > t { day + self.secs } else { day + 86_400 + self.secs };
    ///         Some(UNIX_EPOCH + Duration::from_secs(next))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .threads(1)
    ///     .handler("report", |_: &(), job| {
    ///         println!("nightly report for {:?}", job.deadline());
    ///         Ok(())
    ///     })
    ///     .build()?;
    /// let nightly = DailyUtc { secs: 2 * 3600 + 30 * 60 };
    /// let put = pool.schedule_calendar("report", "nightly-report", &(), nightly, Misfire::default())?;
    /// assert!(matches!(put, Put::Inserted { .. }));
    /// for _ in 0..30 * 24 {
    ///     clock.advance(Duration::from_secs(3600));
    ///     assert!(pool.wait_idle(Duration::from_secs(5)));
    /// }
    /// assert_eq!(pool.stats().succeeded, 30);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule_calendar<T: Payload, S: Schedule>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        schedule: S,
        misfire: Misfire,
    ) -> Result<Put, DurableError> {
        let payload = encode(value);
        self.register_calendar(kind, id, payload, Box::new(schedule), misfire, false)
    }

    /// As [`schedule_calendar`](Self::schedule_calendar), but another
    /// definition stored under `id` is replaced instead of refused:
    /// [`Put::Replaced`] with the new schedule's first fire. The new
    /// definition takes over at once: its first fire is its first after the
    /// replacement (store clock). The old schedule's pending fire is
    /// removed, even a missed one; a run of it in progress finishes, but
    /// its ack is refused. The same definition is left alone
    /// ([`Put::Exists`]).
    ///
    /// In a rolling deploy, call it from the new version only: an old
    /// process calling it too would put its own definition back.
    ///
    /// # Errors
    ///
    /// As for [`schedule_calendar`](Self::schedule_calendar), without the
    /// refusal.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::calendar::Schedule;
    /// use schedpool::durable::{DurableError, DurablePool, MemoryBackend, Misfire, Put};
    ///
    /// #[derive(Debug)]
    /// struct EveryMinutes(u64);
    ///
    /// impl Schedule for EveryMinutes {
    ///     fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
    ///         let step = self.0 * 60;
    ///         let t = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((t / step + 1) * step))
    ///     }
    /// }
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("sync", |_: &(), _| Ok(()))
    ///     .build()?;
    /// pool.schedule_calendar("sync", "sync", &(), EveryMinutes(5), Misfire::default())?;
    /// // A changed rule is refused, naming the difference...
    /// let refused = pool.schedule_calendar("sync", "sync", &(), EveryMinutes(10), Misfire::default());
    /// assert!(matches!(refused, Err(DurableError::Config(why)) if why.contains("EveryMinutes(5)")));
    /// // ...unless it is a deliberate replacement.
    /// let put = pool.replace_calendar("sync", "sync", &(), EveryMinutes(10), Misfire::default())?;
    /// assert!(matches!(put, Put::Replaced { .. }));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn replace_calendar<T: Payload, S: Schedule>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        schedule: S,
        misfire: Misfire,
    ) -> Result<Put, DurableError> {
        let payload = encode(value);
        self.register_calendar(kind, id, payload, Box::new(schedule), misfire, true)
    }

    /// Registers a calendar schedule whose payload is encoded already
    /// (also `DurablePoolBuilder::schedule_calendar`'s, at `build`).
    pub(super) fn register_calendar(
        &self,
        kind: &str,
        id: &str,
        payload: Vec<u8>,
        rule: Box<dyn Schedule>,
        misfire: Misfire,
        replace: bool,
    ) -> Result<Put, DurableError> {
        self.inner.check_kind_and_id(kind, id)?;
        misfire.check()?;
        let envelope = calendar_def::seal(kind, &misfire, &*rule, &payload)?;
        let entry = Arc::new(Entry {
            rule,
            misfire,
            envelope,
        });
        // Known to this process's workers before the store has it, so that
        // a first fire due at once is run here rather than deferred.
        let tentative = {
            let mut s = self.inner.state.lock();
            let absent = !s.calendars.contains_key(id);
            if absent {
                s.calendars.insert(id.to_string(), entry.clone());
            }
            absent
        };
        let stored = self.store_calendar(id, &entry, replace);
        let mut s = self.inner.state.lock();
        if stored.is_ok() {
            s.calendars.insert(id.to_string(), entry);
        } else if tentative && s.calendars.get(id).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
            s.calendars.remove(id);
        }
        stored
    }

    /// Puts the schedule if absent; otherwise compares the stored one.
    fn store_calendar(&self, id: &str, entry: &Entry, replace: bool) -> Result<Put, DurableError> {
        let backend = &self.inner.store;
        let mut replaced = false;
        for _ in 0..ROUNDS {
            let now = backend.server_time_ms()?;
            let first = misfire::next_fire(&*entry.rule, now)
                .map_err(|why| {
                    DurableError::Config(format!("calendar schedule {id:?}: {why}").into())
                })?
                .ok_or_else(|| {
                    DurableError::Config(
                        format!(
                            "calendar schedule {id:?}: the rule never fires after {} (store clock)",
                            utc(now)
                        )
                        .into(),
                    )
                })?;
            let when = When::AtServerMs(first);
            match backend.put(id, &entry.envelope, when, PutMode::IfAbsent)? {
                Put::Inserted { deadline_ms } if replaced => {
                    return Ok(Put::Replaced { deadline_ms })
                }
                Put::Exists => {}
                put => return Ok(put),
            }
            // Something is stored: the same schedule, or another item.
            let Some(stored) = backend.get(id)? else {
                continue;
            };
            if stored.envelope == entry.envelope {
                return Ok(Put::Exists);
            }
            if stored.state == StoredState::Dead {
                continue;
            }
            let why = calendar_def::differences(&stored.envelope, &entry.envelope);
            if !replace {
                return Err(DurableError::Config(format!(
                    "calendar schedule {id:?}: {why}; call replace_calendar to replace it, or cancel it first"
                ).into()));
            }
            tracing::info!(target: "schedpool::durable", schedule = %id,
                "replacing a stored calendar schedule: {why}");
            backend.cancel(id)?;
            replaced = true;
        }
        Err(DurableError::Unavailable(
            format!("calendar schedule {id:?} kept changing while it was registered; try again")
                .into(),
        ))
    }
}
