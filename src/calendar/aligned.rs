//! [`Aligned`]: an interval aligned to the wall clock's boundaries in an
//! IANA time zone ("every 5 minutes, on :00, :05, ...").
//!
//! # Invariants
//!
//! - The interval is whole seconds and divides a day, and the offset is
//!   whole seconds below it (checked at construction), so every day has the
//!   same boundaries, counted from midnight: the rule always fires again.

use std::fmt;
use std::time::Duration;

use jiff::civil::{DateTime, Time};

use super::dst::{Gap, Overlap};
use super::error::CalendarError;
use super::zone::{zoned_rule, WallRule, Zoned};
use super::Schedule;

const DAY: u64 = 86_400;

/// An interval on the wall clock's boundaries in an IANA time zone: every
/// `interval` from local midnight (plus an offset), so "every 5 minutes"
/// fires at :00, :05, :10 whatever time the task started, and never drifts.
///
/// Daylight saving: boundaries in a gap collapse into one run at the gap's
/// end ([`Gap::RunAtEnd`], the default; when the gap's end is a boundary
/// itself, as for whole hours, that is one run); boundaries in an overlap run
/// at both occurrences ([`Overlap::Both`], the default), so the interval
/// keeps its pace in real time through the repeated hour. For intervals of
/// hours, the real time between two runs across a transition is then
/// longer or shorter by the shift (the boundaries are wall times).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use schedpool::calendar::{Aligned, Schedule};
///
/// let every_5_min = Aligned::every(Duration::from_secs(300), "UTC")?;
/// let t = UNIX_EPOCH + Duration::from_secs(1_700_000_123);
/// assert_eq!(every_5_min.next_after(t), Some(UNIX_EPOCH + Duration::from_secs(1_700_000_400)));
/// // Every hour at :15 in Asia/Kolkata (UTC+05:30): t is 03:45:23 there,
/// // so the next is 04:15, 22:45 UTC.
/// let quarter_past = Aligned::new(Duration::from_secs(3600), Duration::from_secs(900), "Asia/Kolkata")?;
/// assert_eq!(quarter_past.next_after(t), Some(UNIX_EPOCH + Duration::from_secs(1_700_001_900)));
/// # Ok::<(), schedpool::calendar::CalendarError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Aligned {
    boundaries: Boundaries,
    zone: Zoned,
}

impl Aligned {
    /// Every `interval` from local midnight in the IANA zone `zone`.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::calendar::{Aligned, Schedule};
    ///
    /// let quarter_hours = Aligned::every(Duration::from_secs(15 * 60), "Europe/London")?;
    /// let t = UNIX_EPOCH + Duration::from_secs(1_736_942_400 + 7 * 60); // 2025-01-15 12:07 UTC (GMT)
    /// assert_eq!(quarter_hours.next_after(t), Some(UNIX_EPOCH + Duration::from_secs(1_736_942_400 + 15 * 60)));
    /// assert!(Aligned::every(Duration::from_secs(7 * 60), "UTC").is_err(), "7 minutes do not divide a day");
    /// # Ok::<(), schedpool::calendar::CalendarError>(())
    /// ```
    pub fn every(interval: Duration, zone: &str) -> Result<Aligned, CalendarError> {
        Aligned::new(interval, Duration::ZERO, zone)
    }

    /// Every `interval` from local midnight plus `offset` ("every hour at
    /// :15": one hour, 15 minutes) in the IANA zone `zone`.
    ///
    /// # Errors
    ///
    /// A [`CalendarError`] if `interval` is not a whole number of seconds
    /// that divides a day (1 s to 24 h: 5 minutes does, 7 minutes does not),
    /// if `offset` is not whole seconds below `interval`, or for an unknown
    /// zone.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::calendar::{Aligned, Schedule};
    ///
    /// // Every 6 hours at 00:30, 06:30, 12:30, 18:30 UTC.
    /// let rule = Aligned::new(Duration::from_secs(6 * 3600), Duration::from_secs(30 * 60), "UTC")?;
    /// let noon = UNIX_EPOCH + Duration::from_secs(1_736_942_400); // 2025-01-15 12:00 UTC
    /// assert_eq!(rule.next_after(noon), Some(noon + Duration::from_secs(30 * 60)));
    /// let err = Aligned::new(Duration::from_secs(3600), Duration::from_secs(3600), "UTC").unwrap_err();
    /// println!("{err}"); // the offset must be below the interval
    /// # Ok::<(), schedpool::calendar::CalendarError>(())
    /// ```
    pub fn new(interval: Duration, offset: Duration, zone: &str) -> Result<Aligned, CalendarError> {
        let described = format!("every {interval:?} + {offset:?}");
        let whole = |d: Duration| d.subsec_nanos() == 0;
        let step = interval.as_secs();
        if !whole(interval) || step == 0 || step > DAY || DAY % step != 0 {
            return Err(CalendarError::interval(
                described,
                "the interval must be whole seconds that divide a day (1 s to 24 h)",
            ));
        }
        if !whole(offset) || offset >= interval {
            return Err(CalendarError::interval(
                described,
                "the offset must be whole seconds below the interval",
            ));
        }
        Ok(Aligned {
            boundaries: Boundaries {
                step,
                offset: offset.as_secs(),
            },
            zone: Zoned::new(zone, Overlap::Both)?,
        })
    }
}

zoned_rule!(
    Aligned,
    boundaries,
    gap: "[`Gap::RunAtEnd`]",
    overlap: "[`Overlap::Both`]",
    example: "Aligned::every(std::time::Duration::from_secs(900), \"Europe/Berlin\")"
);

impl fmt::Debug for Aligned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Aligned")
            .field("interval_secs", &self.boundaries.step)
            .field("offset_secs", &self.boundaries.offset)
            .field("zone", &self.zone)
            .finish()
    }
}

/// The wall rule of [`Aligned`]: seconds of the day `offset + k * step`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Boundaries {
    step: u64,
    offset: u64,
}

impl WallRule for Boundaries {
    fn next_wall_after(&self, after: DateTime) -> Option<DateTime> {
        let t = after.time();
        let second = u64::from(t.hour() as u8) * 3600
            + u64::from(t.minute() as u8) * 60
            + u64::from(t.second() as u8);
        // The first boundary strictly after `after`: after its whole
        // second if it has a fraction, else after the second itself.
        let k = (second + 1).saturating_sub(self.offset).div_ceil(self.step);
        let next = self.offset + k * self.step;
        let date = if next < DAY {
            after.date()
        } else {
            after.date().tomorrow().ok()?
        };
        let next = if next < DAY { next } else { self.offset };
        let time = Time::new(
            (next / 3600) as i8,
            (next / 60 % 60) as i8,
            (next % 60) as i8,
            0,
        )
        .ok()?;
        Some(date.to_datetime(time))
    }
}
