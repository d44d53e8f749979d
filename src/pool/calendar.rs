//! Calendar tasks, the public side: [`ScheduledThreadPool::on_calendar`],
//! [`ScheduledThreadPool::schedule_calendar`] and the [`OnCalendar`]
//! builder. A calendar task is a periodic task ([`crate::task::periodic`])
//! whose next run comes from a [`Schedule`] read off the wall clock
//! ([`crate::task::calendar`]) instead of a period: the same handle, failure
//! policy, pause/resume, jitter, run limits and lateness reports.
//!
//! # Invariants
//!
//! - Every option is validated in `start`, before anything is queued, and
//!   the schedule must have a fire after now: a bad configuration is a
//!   `Rejected`, never a task that silently never runs. A schedule that
//!   breaks its contract at `start` (panics, or answers a time not after
//!   now) is a `Rejected` that says so, not "no fire time".

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::base::clock::delay_nanos;
use crate::base::error::Rejected;
use crate::calendar::Schedule;
use crate::pool::executor::ScheduledThreadPool;
use crate::pool::handle::ScheduledHandle;
use crate::pool::periodic::{check_options, steering, submit};
use crate::task::calendar::Plan;
use crate::task::new;
use crate::task::policy::{MissedTicks, OnFailure, Options, RunResult};

/// How long a calendar task waits, at most, before it reads the wall
/// clock again (see [`OnCalendar::wall_clock_check`]).
const DEFAULT_CHECK: Duration = Duration::from_secs(60);

/// Builds a calendar task: [`ScheduledThreadPool::on_calendar`], then
/// options, then [`start`](OnCalendar::start).
///
/// The task runs at each fire time of its [`Schedule`], by the wall clock
/// (`SystemTime`, or a [`ManualClock`](crate::ManualClock)'s wall time),
/// never before it. Its handle is a periodic task's: cancel, pause, resume,
/// trigger, `run_count`, `failure_count`, and
/// [`next_fire`](ScheduledHandle::next_fire) for the wall-clock time of the
/// next run.
///
/// The wall clock is read when the task is started, when each run ends
/// (to plan the next fire), and whenever the task comes up in the queue:
/// at its fire time by the monotonic clock, and at least once every
/// [`wall_clock_check`](Self::wall_clock_check) (one minute by default)
/// while it waits. So a wall clock that steps forward (NTP, a suspend) is
/// noticed within that interval, and a fire is never run early when the
/// wall clock steps back: the task waits for the wall clock instead.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
///
/// /// Every whole hour (UTC): a rule of your own, or a built-in one
/// /// (`Cron`, `Daily`, `Aligned` with the `calendar` feature).
/// #[derive(Debug)]
/// struct Hourly;
/// impl Schedule for Hourly {
///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
///     }
/// }
///
/// let clock = ManualClock::new();
/// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
/// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
/// let h = pool.on_calendar(Hourly).max_runs(2).start(|| println!("on the hour"))?;
/// assert_eq!(h.next_fire(), Some(UNIX_EPOCH + Duration::from_secs(1_700_002_800)));
/// clock.advance(Duration::from_secs(2_800)); // 23:00 UTC: the first run
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// clock.advance(Duration::from_secs(3_600)); // 00:00 UTC: the second and last
/// assert_eq!(h.join(), Ok(()), "two runs, then done");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "an OnCalendar does nothing until start() is called"]
pub struct OnCalendar<'a> {
    pool: &'a ScheduledThreadPool,
    schedule: Box<dyn Schedule>,
    options: Options,
    until: Option<SystemTime>,
    check: Duration,
    /// The runtime of an async body ([`crate::pool::async_tasks`]).
    #[cfg(feature = "tokio")]
    pub(super) runtime: Option<tokio::runtime::Handle>,
}

impl<'a> OnCalendar<'a> {
    /// Run at most `n` times, then complete the handle with `Ok(())`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool.on_calendar(Hourly).max_runs(1).start(|| ())?;
    /// clock.advance(Duration::from_secs(2_800)); // 23:00
    /// assert_eq!(h.join(), Ok(()), "one run, then done");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_runs(mut self, n: u64) -> Self {
        self.options.max_runs = Some(n);
        self
    }

    /// Run no fire later than `deadline` by the wall clock; after the last
    /// one, the handle completes with `Ok(())`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let end = UNIX_EPOCH + Duration::from_secs(1_700_002_200); // 22:50 UTC
    /// let err = pool.on_calendar(Hourly).until(end).start(|| ()).unwrap_err();
    /// assert!(err.is_invalid_argument(), "no fire before until: refused, not silently idle");
    /// let h = pool.on_calendar(Hourly).until(end + Duration::from_secs(3600)).start(|| ())?;
    /// clock.advance(Duration::from_secs(2_800)); // 23:00, the only fire before 23:50
    /// assert_eq!(h.join(), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn until(mut self, deadline: SystemTime) -> Self {
        self.until = Some(deadline);
        self
    }

    /// What happens when a run fails: it panics, or the body returns `Err`
    /// (default [`OnFailure::Stop`]). Under `Backoff`, the retries are
    /// monotonic delays; the first success goes back to the schedule.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// use schedpool::OnFailure;
    /// let h = pool.on_calendar(Hourly).on_failure(OnFailure::Continue).start(|| Err::<(), _>("503"))?;
    /// clock.advance(Duration::from_secs(2_800));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(h.failure_count(), 1);
    /// assert!(!h.is_done(), "it runs again at the next hour");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_failure(mut self, policy: OnFailure) -> Self {
        self.options.on_failure = policy;
        self
    }

    /// Delay each run by a random time in `[0, max)` after its fire time, so
    /// that many tasks on one schedule do not start at one instant. The
    /// fire times themselves do not move.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// // 500 servers on this rule do not all hit the API at 23:00:00.
    /// let h = pool.on_calendar(Hourly).jitter(Duration::from_secs(30)).start(|| ())?;
    /// assert_eq!(h.next_fire(), Some(UNIX_EPOCH + Duration::from_secs(1_700_002_800)), "the fire time, without jitter");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn jitter(mut self, max: Duration) -> Self {
        self.options.jitter = delay_nanos(max);
        self
    }

    /// What a run that starts late (after the next fire time has passed:
    /// a long run, a busy pool, a suspend or a wall clock that stepped
    /// forward) does about the fires it missed. [`MissedTicks::Skip`], the
    /// default: the late run counts for them all, and the next run is the
    /// first fire after the wall clock's reading. [`MissedTicks::Burst`]:
    /// every missed fire runs, back to back. `Delay` has no meaning for a
    /// calendar and is refused by `start`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// use schedpool::MissedTicks;
    /// let h = pool.on_calendar(Hourly).missed_ticks(MissedTicks::Burst).start(|| ())?;
    /// clock.advance(Duration::from_secs(2_800 + 2 * 3600)); // a suspend over 23:00, 00:00 and 01:00
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(h.run_count(), 3, "Burst runs each missed fire; Skip would run once");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn missed_ticks(mut self, policy: MissedTicks) -> Self {
        self.options.missed = policy;
        self
    }

    /// The longest time (monotonic) the task waits before it reads the wall
    /// clock again (default one minute): how soon a wall clock that stepped
    /// forward, or a resume from suspend, is noticed. Each check is a pop
    /// and a push of the task, without a run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// // A laptop that suspends: notice a resume within 5 s, not a minute.
    /// let h = pool.on_calendar(Hourly).wall_clock_check(Duration::from_secs(5)).start(|| ())?;
    /// assert!(h.delay() <= Duration::from_secs(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wall_clock_check(mut self, every: Duration) -> Self {
        self.check = every;
        self
    }

    /// Starts the task with its body, which returns `()` or `Result<(), E>`
    /// with `E: Display`; an `Err` is a failed run, seen exactly as a panic
    /// is (see [`RunResult`] and [`OnFailure`]).
    ///
    /// # Errors
    ///
    /// [`Rejected`] if the schedule has no fire after now (before
    /// [`until`](Self::until)); if its `next_after` panics or answers a
    /// time not after now (the message says which, with both times in
    /// UTC); for `max_runs(0)`, a zero
    /// [`wall_clock_check`](Self::wall_clock_check), `MissedTicks::Delay`,
    /// a backoff with a zero initial delay or a maximum below it; or once
    /// shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool.on_calendar(Hourly).start(|| println!("rotate the logs"))?;
    /// clock.advance(Duration::from_secs(2_800));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(h.run_count(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn start<F, R>(self, body: F) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() -> R + Send + 'static,
        R: RunResult + 'static,
    {
        let options = self.options;
        check_options(&options)?;
        if options.missed == MissedTicks::Delay {
            return Err(Rejected::invalid(
                "MissedTicks::Delay has no meaning for a calendar task: use Skip or Burst",
            ));
        }
        if self.check.is_zero() {
            return Err(Rejected::invalid(
                "the wall-clock check interval must be greater than zero",
            ));
        }
        let catch_up = options.missed == MissedTicks::Burst;
        let plan = Plan::new(self.schedule, self.until, delay_nanos(self.check), catch_up);
        let shared = self.pool.shared();
        let seq = shared.next_seq();
        let now = shared.clock.now();
        let wall = shared.clock.wall_now();
        let task = new::calendar(seq, plan, options, now, wall, steering(body))
            .map_err(Rejected::invalid)?;
        let Some(task) = task else {
            return Err(Rejected::invalid(
                "the schedule has no fire time after now (before `until`)",
            ));
        };
        submit(shared, task, now)
    }
}

impl fmt::Debug for OnCalendar<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnCalendar")
            .field("schedule", &self.schedule)
            .field("options", &self.options)
            .field("until", &self.until)
            .field("wall_clock_check", &self.check)
            .finish()
    }
}

/// Calendar tasks (here, beside [`OnCalendar`], which they build).
impl ScheduledThreadPool {
    /// Runs `task` at every fire time of `schedule`, by the wall clock: a
    /// calendar task with the default options (see [`OnCalendar`]; for run
    /// limits, jitter, failure and missed-fire policies use
    /// [`on_calendar`](Self::on_calendar)).
    ///
    /// The handle completes when the schedule has no fire left, or the
    /// task is cancelled, fails (the default policy stops it, as for a
    /// periodic task), or is dropped by a shutdown.
    ///
    /// # Errors
    ///
    /// [`Rejected`] if the schedule has no fire after now, or breaks its
    /// contract (its `next_after` panics or answers a time not after now;
    /// the message says which), or once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct EveryFiveMs;
    /// impl Schedule for EveryFiveMs {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let ms = t.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
    ///         Some(UNIX_EPOCH + Duration::from_millis((ms / 5 + 1) * 5))
    ///     }
    /// }
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule_calendar(|| println!("tick"), EveryFiveMs)?;
    /// assert!(h.next_fire().is_some());
    /// assert!(h.cancel());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn schedule_calendar<F, R, S>(
        &self,
        task: F,
        schedule: S,
    ) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() -> R + Send + 'static,
        R: RunResult + 'static,
        S: Schedule,
    {
        self.on_calendar(schedule).start(task)
    }

    /// A calendar task with options: see [`OnCalendar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool.on_calendar(Hourly).max_runs(24).start(|| ())?;
    /// assert_eq!(h.next_fire(), Some(UNIX_EPOCH + Duration::from_secs(1_700_002_800)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_calendar<S: Schedule>(&self, schedule: S) -> OnCalendar<'_> {
        OnCalendar {
            pool: self,
            schedule: Box::new(schedule),
            options: Options {
                missed: MissedTicks::Skip,
                on_failure: OnFailure::Stop,
                max_runs: None,
                until: None,
                jitter: 0,
            },
            until: None,
            check: DEFAULT_CHECK,
            #[cfg(feature = "tokio")]
            runtime: None,
        }
    }
}
