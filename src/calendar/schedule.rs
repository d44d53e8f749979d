//! The [`Schedule`] trait: the one question a calendar rule answers.

use std::fmt;
use std::time::SystemTime;

/// A rule of wall-clock fire times: "every day at 02:30 Europe/Berlin",
/// "every 5 minutes on the boundary", or a rule of your own.
///
/// # Contract
///
/// [`next_after(t)`](Schedule::next_after) returns the first fire time
/// strictly after `t`, or `None` when the rule never fires again. It must
/// be a pure function of `t` (no clock reads, no interior state), so that
/// every process of a fleet computes the same fire times and a restart
/// computes the ones it missed.
///
/// # Examples
///
/// A rule of your own: every whole hour of the Unix epoch (UTC).
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use schedpool::calendar::Schedule;
///
/// #[derive(Debug)]
/// struct EveryHour;
///
/// impl Schedule for EveryHour {
///     fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
///         let secs = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
///         Some(UNIX_EPOCH + Duration::from_secs((secs / 3600 + 1) * 3600))
///     }
/// }
///
/// let t = UNIX_EPOCH + Duration::from_secs(3600 * 5 + 17);
/// assert_eq!(EveryHour.next_after(t), Some(UNIX_EPOCH + Duration::from_secs(3600 * 6)));
/// ```
pub trait Schedule: Send + Sync + fmt::Debug + 'static {
    /// The first fire time strictly after `after`, or `None` when the rule
    /// never fires again.
    fn next_after(&self, after: SystemTime) -> Option<SystemTime>;

    /// The fire times after `after`, in order: `next_after` applied again
    /// and again. It ends where the rule does, or at a fire time that
    /// breaks the contract (not after the one before).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::calendar::Schedule;
    ///
    /// #[derive(Debug)]
    /// struct TenSeconds;
    /// impl Schedule for TenSeconds {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((s / 10 + 1) * 10))
    ///     }
    /// }
    ///
    /// let fires: Vec<_> = TenSeconds.fires_after(UNIX_EPOCH).take(3).collect();
    /// let secs = |s| UNIX_EPOCH + Duration::from_secs(s);
    /// assert_eq!(fires, [secs(10), secs(20), secs(30)]);
    /// ```
    fn fires_after(&self, after: SystemTime) -> FireTimes<'_, Self>
    where
        Self: Sized,
    {
        FireTimes {
            schedule: self,
            last: Some(after),
        }
    }
}

/// The fire times of a schedule, from [`Schedule::fires_after`].
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use schedpool::calendar::Schedule;
///
/// #[derive(Debug)]
/// struct Hourly;
/// impl Schedule for Hourly {
///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
///         let s = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
///         Some(UNIX_EPOCH + Duration::from_secs((s / 3600 + 1) * 3600))
///     }
/// }
/// // The next three fires, to show a user when their job will run.
/// let next: Vec<SystemTime> = Hourly.fires_after(SystemTime::now()).take(3).collect();
/// assert!(next.windows(2).all(|w| w[1].duration_since(w[0]).ok() == Some(Duration::from_secs(3600))));
/// ```
#[derive(Debug)]
pub struct FireTimes<'a, S: ?Sized> {
    schedule: &'a S,
    last: Option<SystemTime>,
}

impl<S: Schedule + ?Sized> Iterator for FireTimes<'_, S> {
    type Item = SystemTime;

    fn next(&mut self) -> Option<SystemTime> {
        let last = self.last?;
        self.last = self.schedule.next_after(last).filter(|&next| next > last);
        self.last
    }
}

/// A boxed schedule is a schedule (so rules chosen at run time can be
/// passed where a `Schedule` is asked for).
impl<S: Schedule + ?Sized> Schedule for Box<S> {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        (**self).next_after(after)
    }
}

/// A shared schedule is a schedule.
impl<S: Schedule + ?Sized> Schedule for std::sync::Arc<S> {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        (**self).next_after(after)
    }
}
