//! A calendar task's plan: its [`Schedule`], the wall-clock fire its next
//! run is for, and the monotonic deadline that stands for that wall-clock
//! time in the queue.
//!
//! # Invariants
//!
//! - Never early by the wall clock: a run whose target (the fire plus its
//!   jitter) the wall clock has not reached does not start. The worker that
//!   pops the task asks [`Plan::check`] under the pool lock, which re-plans
//!   it instead ([`Job::rearm`](crate::task::header::Job::rearm)).
//! - The queue deadline of a wall-clock target is at most `check` of
//!   monotonic time away. So a wall clock that steps forward (an NTP step, a
//!   suspend) is seen within `check`, and one that steps back only makes the
//!   task wait longer: it re-plans instead of firing early or an hour late.
//! - A fire runs at most once: the next fire is computed strictly after the
//!   fire just run (and, unless catching up, after the wall clock's
//!   reading), so a wall clock that steps back never repeats a fire.
//! - `target` is `None` for a run that starts at its deadline whatever the
//!   wall clock says: a trigger, or a retry under `OnFailure::Backoff`.
//! - `Pending` is behind one small lock, taken by the runner after a run and
//!   by holders of the pool lock (the pop's check, resume, trigger); never
//!   while the task's body runs. The schedule's `next_after` (user code)
//!   runs under no lock of ours: not this one, not the pool's (a resume asks
//!   it first, [`Plan::resume_fire`], and applies the answer under the pool
//!   lock). It is caught: a panic or a fire not after its argument ends the
//!   task's fires (an `ERROR` event says why), never a worker; at `start`
//!   ([`Plan::first`]) it is the caller's error instead, saying which.
//! - Only the runner (between `first` and the end of a run) or a resume (of
//!   a paused task, which nothing else touches) moves `fire`, so reading it,
//!   asking the schedule unlocked, then arming, loses no update.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::SystemTime;

use crate::base::clock::{wall_nanos, wall_time, Nanos};
use crate::base::sync::Mutex;
use crate::calendar::{utc_text, Schedule};

/// The pending fire of a calendar task.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// The schedule's fire time the next run is for.
    fire: SystemTime,
    /// Not before this wall-clock time (the fire plus jitter); `None`: at
    /// the deadline, whatever the wall clock says.
    target: Option<SystemTime>,
    /// Resumed with no fire left: the task ends at its next pop, unrun.
    exhausted: bool,
}

/// What the pop of a calendar task decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Not yet by the wall clock: requeue at this monotonic deadline.
    Wait(Nanos),
    /// Run now. `Some(due)`: the monotonic time the target stood for, so
    /// the run's lateness is its lateness by the wall clock.
    Run(Option<Nanos>),
}

/// What a resume will do, asked of the schedule outside the pool lock
/// ([`Plan::resume_fire`]) and applied under it ([`Plan::resume`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resumed {
    /// The wall clock's reading when it was asked.
    wall: SystemTime,
    /// `None`: keep the pending fire (its target is still ahead). `Some(f)`:
    /// the first fire after now, `f` (`None`: the schedule has no more).
    next: Option<Option<SystemTime>>,
}

/// A calendar task's schedule and its pending fire.
pub(crate) struct Plan {
    schedule: Box<dyn Schedule>,
    /// No fire after this wall-clock time.
    until: Option<SystemTime>,
    /// The longest monotonic wait before the wall clock is read again.
    check: Nanos,
    /// Run every missed fire (`MissedTicks::Burst`) rather than only the
    /// next one after now.
    catch_up: bool,
    pending: Mutex<Pending>,
}

impl Plan {
    pub(crate) fn new(
        schedule: Box<dyn Schedule>,
        until: Option<SystemTime>,
        check: Nanos,
        catch_up: bool,
    ) -> Self {
        Plan {
            schedule,
            until,
            check: check.max(1),
            catch_up,
            pending: Mutex::new(Pending {
                fire: SystemTime::UNIX_EPOCH,
                target: None,
                exhausted: false,
            }),
        }
    }

    /// Plans the first fire, the first one after `wall`; returns its
    /// monotonic deadline, or `None` if the schedule has none (within
    /// `until`).
    ///
    /// # Errors
    ///
    /// What the schedule did, in words, if it broke its contract: it
    /// panicked, or answered a time not after `wall`.
    pub(crate) fn first(
        &self,
        wall: SystemTime,
        mono: Nanos,
        jitter: Nanos,
    ) -> Result<Option<Nanos>, String> {
        let Some(fire) = self.ask(wall)? else {
            return Ok(None);
        };
        Ok(self.arm(&mut self.pending.lock(), fire, jitter, wall, mono))
    }

    /// Plans the fire after the one just run: the schedule's next one after
    /// that fire, or (unless catching up) after `wall` if that is later.
    /// `None`: no fire is left.
    pub(crate) fn next(&self, wall: SystemTime, mono: Nanos, jitter: Nanos) -> Option<Nanos> {
        let fire = self.pending.lock().fire;
        let from = if self.catch_up { fire } else { fire.max(wall) };
        let fire = self.fire_after(from)?;
        self.arm(&mut self.pending.lock(), fire, jitter, wall, mono)
    }

    /// For a resume, asked before the pool lock is taken: keep the pending
    /// fire if the wall clock has not passed its target, else the first
    /// fire after now (the fires missed while paused are not replayed).
    pub(crate) fn resume_fire(&self, wall: SystemTime) -> Resumed {
        let pending = *self.pending.lock();
        let keep = pending.target.is_some_and(|t| t >= wall);
        Resumed {
            wall,
            next: (!keep).then(|| self.fire_after(pending.fire.max(wall))),
        }
    }

    /// Applies [`resume_fire`](Self::resume_fire)'s answer (under the pool
    /// lock; no user code): the resumed run's deadline. With no fire left,
    /// the task is due at once and ends unrun.
    pub(crate) fn resume(&self, resumed: Resumed, mono: Nanos, jitter: Nanos) -> Nanos {
        let mut pending = self.pending.lock();
        let wall = resumed.wall;
        let armed = match resumed.next {
            None => pending.target.map(|t| self.deadline(t, wall, mono)),
            Some(next) => next.and_then(|fire| self.arm(&mut pending, fire, jitter, wall, mono)),
        };
        armed.unwrap_or_else(|| {
            pending.exhausted = true;
            pending.target = None;
            mono
        })
    }

    /// The pop's question: has the wall clock reached the target?
    pub(crate) fn check(&self, wall: SystemTime, mono: Nanos) -> Check {
        let pending = self.pending.lock();
        match pending.target {
            None => Check::Run(None),
            Some(target) if target <= wall => Check::Run(Some(self.deadline(target, wall, mono))),
            Some(target) => Check::Wait(self.deadline(target, wall, mono)),
        }
    }

    /// The next run starts at its deadline, whatever the wall clock says (a
    /// trigger, a backoff retry).
    pub(crate) fn release(&self) {
        self.pending.lock().target = None;
    }

    /// True (once) if the task was resumed with no fire left.
    pub(crate) fn take_exhausted(&self) -> bool {
        std::mem::take(&mut self.pending.lock().exhausted)
    }

    /// The fire the next (or current) run is for.
    pub(crate) fn next_fire(&self) -> Option<SystemTime> {
        let pending = self.pending.lock();
        (!pending.exhausted).then_some(pending.fire)
    }

    fn arm(
        &self,
        pending: &mut Pending,
        fire: SystemTime,
        jitter: Nanos,
        wall: SystemTime,
        mono: Nanos,
    ) -> Option<Nanos> {
        if self.until.is_some_and(|until| fire > until) {
            return None;
        }
        let target = wall_time(wall_nanos(fire) + i128::from(jitter));
        *pending = Pending {
            fire,
            target: Some(target),
            exhausted: false,
        };
        Some(self.deadline(target, wall, mono))
    }

    /// The monotonic deadline for `target`, seen at `wall` = `mono`: the
    /// time it stands for when that is past (so lateness is measured by the
    /// wall clock), else at most `check` ahead.
    fn deadline(&self, target: SystemTime, wall: SystemTime, mono: Nanos) -> Nanos {
        let ahead = wall_nanos(target) - wall_nanos(wall);
        let clamp = |n: i128| n.unsigned_abs().min(u128::from(u64::MAX)) as u64;
        if ahead <= 0 {
            mono.saturating_sub(clamp(ahead))
        } else {
            mono.saturating_add(clamp(ahead).min(self.check))
        }
    }

    /// The schedule's next fire after `after`, with its contract enforced:
    /// a panic, or a fire not strictly after `after`, ends the fires (an
    /// `ERROR` event says which).
    fn fire_after(&self, after: SystemTime) -> Option<SystemTime> {
        self.ask(after).unwrap_or_else(|broken| {
            tracing::error!(
                target: "schedpool::calendar",
                schedule = ?self.schedule,
                "{broken}; the task fires no more"
            );
            None
        })
    }

    /// The schedule's next fire after `after`.
    ///
    /// # Errors
    ///
    /// If the schedule panicked or answered a time not strictly after
    /// `after`: what it did, in words (with both times in UTC).
    fn ask(&self, after: SystemTime) -> Result<Option<SystemTime>, String> {
        match catch_unwind(AssertUnwindSafe(|| self.schedule.next_after(after))) {
            Ok(Some(fire)) if fire > after => Ok(Some(fire)),
            Ok(Some(fire)) => Err(format!(
                "the schedule broke its contract: next_after({}) returned {}, not a time after it",
                utc_text(after),
                utc_text(fire)
            )),
            Ok(None) => Ok(None),
            Err(payload) => {
                let message = format!(
                    "the schedule panicked in next_after({}): {}",
                    utc_text(after),
                    crate::base::error::panic_message(&*payload)
                );
                crate::base::error::drop_quietly(payload);
                Err(message)
            }
        }
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("schedule", &self.schedule)
            .field("pending", &*self.pending.lock())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[derive(Debug)]
    struct Every(u64);
    impl Schedule for Every {
        fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
            let s = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
            Some(UNIX_EPOCH + Duration::from_secs((s / self.0 + 1) * self.0))
        }
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    const S: Nanos = 1_000_000_000;

    #[test]
    fn waits_are_capped_and_never_early() {
        let plan = Plan::new(Box::new(Every(3600)), None, 60 * S, false);
        // wall 1000 s, mono 5 s: the fire at 3600 s is 2600 s away; the
        // deadline is one check (60 s) ahead.
        assert_eq!(plan.first(at(1000), 5 * S, 0), Ok(Some(65 * S)));
        // Popped at mono 65 s: the wall clock says 1060 s, not yet.
        assert_eq!(plan.check(at(1060), 65 * S), Check::Wait(125 * S));
        // The wall clock stepped back an hour: still waiting, never early.
        assert_eq!(plan.check(at(10), 125 * S), Check::Wait(185 * S));
        // It stepped forward past the fire: run, 5 s late by the wall clock.
        assert_eq!(plan.check(at(3605), 185 * S), Check::Run(Some(180 * S)));
    }

    #[test]
    fn a_fire_runs_once_even_if_the_wall_clock_steps_back() {
        let plan = Plan::new(Box::new(Every(3600)), None, 60 * S, false);
        plan.first(at(3599), 0, 0).unwrap();
        // Ran for 3600 s; the wall clock then stepped back to 100 s.
        plan.next(at(100), S, 0);
        assert_eq!(plan.next_fire(), Some(at(7200)), "not 3600 s again");
    }

    #[test]
    fn skip_or_catch_up() {
        let skip = Plan::new(Box::new(Every(10)), None, 60 * S, false);
        skip.first(at(0), 0, 0).unwrap();
        skip.next(at(35), 0, 0);
        assert_eq!(skip.next_fire(), Some(at(40)));
        let burst = Plan::new(Box::new(Every(10)), None, 60 * S, true);
        burst.first(at(0), 0, 0).unwrap();
        burst.next(at(35), 0, 0);
        assert_eq!(burst.next_fire(), Some(at(20)));
    }

    #[derive(Debug)]
    struct Broken;
    impl Schedule for Broken {
        fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
            if after > at(100) {
                panic!("boom")
            }
            Some(after)
        }
    }

    #[test]
    fn a_broken_schedule_is_an_error_at_first_and_ends_later_fires() {
        let plan = Plan::new(Box::new(Broken), None, S, false);
        let back = plan.first(at(5), 0, 0).unwrap_err();
        assert!(
            back.contains("returned 1970-01-01T00:00:05Z, not a time after it"),
            "{back}"
        );
        let panicked = plan.first(at(500), 0, 0).unwrap_err();
        assert!(
            panicked.contains("panicked in next_after(1970-01-01T00:08:20Z): boom"),
            "{panicked}"
        );
        // A later fire: the task ends (None), the worker carries on.
        let plan = Plan::new(Box::new(Broken), None, S, false);
        plan.pending.lock().fire = at(5);
        assert_eq!(plan.next(at(5), 0, 0), None, "not after its argument");
        plan.pending.lock().fire = at(500);
        assert_eq!(plan.next(at(500), 0, 0), None, "panicked");
    }

    #[test]
    fn until_and_resume() {
        let plan = Plan::new(Box::new(Every(10)), Some(at(25)), 60 * S, false);
        assert!(plan.first(at(0), 0, 0).unwrap().is_some());
        assert!(plan.next(at(10), 0, 0).is_some());
        assert_eq!(plan.next(at(20), 0, 0), None, "30 s is past until");
        let plan = Plan::new(Box::new(Every(10)), Some(at(25)), 60 * S, false);
        plan.first(at(0), 0, 0).unwrap();
        let keep = plan.resume_fire(at(5));
        assert_eq!(plan.resume(keep, 7, 0), 7 + 5 * S, "keeps its pending fire");
        let later = plan.resume_fire(at(12));
        assert_eq!(plan.resume(later, 8, 0), 8 + 8 * S, "the fire at 20 s");
        let none = plan.resume_fire(at(31));
        assert_eq!(plan.resume(none, 9, 0), 9, "nothing left: due now");
        assert!(plan.take_exhausted());
        assert!(!plan.take_exhausted());
    }
}
