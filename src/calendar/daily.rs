//! [`Daily`]: one wall-clock time every day, in an IANA time zone.
//!
//! # Invariants
//!
//! - The time of day is whole seconds, checked at construction; the rule
//!   matches it on every date (so it always fires again).

use std::fmt;

use jiff::civil::{DateTime, Time};

use super::dst::{Gap, Overlap};
use super::error::CalendarError;
use super::zone::{zoned_rule, WallRule, Zoned};
use super::Schedule;

/// Every day at one wall-clock time in an IANA time zone: "every day at
/// 02:30 Europe/Berlin".
///
/// Daylight saving: when the time does not exist that day (spring forward)
/// it runs once at the gap's end ([`Gap::RunAtEnd`], the default: 03:00 in
/// Berlin); when it exists twice (fall back) it runs at the first
/// occurrence ([`Overlap::First`], the default). So it runs once a day,
/// every day. [`on_gap`](Self::on_gap) and [`on_overlap`](Self::on_overlap)
/// choose otherwise.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use schedpool::calendar::{Daily, Schedule};
///
/// let nightly = Daily::at("02:30", "Europe/Berlin")?;
/// // 2025-03-30, spring forward: 02:30 does not exist; it runs at 03:00
/// // CEST, 01:00 UTC (the instant the clocks jumped).
/// let saturday_noon = UNIX_EPOCH + Duration::from_secs(1_743_249_600);
/// let jump = UNIX_EPOCH + Duration::from_secs(1_743_296_400);
/// assert_eq!(nightly.next_after(saturday_noon), Some(jump));
/// # Ok::<(), schedpool::calendar::CalendarError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Daily {
    time: TimeOfDay,
    zone: Zoned,
}

impl Daily {
    /// Every day at `time` (`"HH:MM"` or `"HH:MM:SS"`, 24-hour) in the IANA
    /// zone `zone`.
    ///
    /// # Errors
    ///
    /// A [`CalendarError`] for a time that does not parse or is out of
    /// range (`"24:00"`, `"7pm"`; its position says where), or an unknown
    /// zone.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::calendar::{CalendarErrorKind, Daily, Schedule};
    ///
    /// let backup = Daily::at("02:30", "Europe/Berlin")?;
    /// let noon = UNIX_EPOCH + Duration::from_secs(1_736_942_400); // 2025-01-15 12:00 UTC
    /// // 02:30 CET the next night is 01:30 UTC.
    /// assert_eq!(backup.next_after(noon), Some(noon + Duration::from_secs(13 * 3600 + 30 * 60)));
    /// assert_eq!(Daily::at("24:00", "UTC").unwrap_err().kind(), CalendarErrorKind::InvalidTime);
    /// # Ok::<(), schedpool::calendar::CalendarError>(())
    /// ```
    pub fn at(time: &str, zone: &str) -> Result<Daily, CalendarError> {
        Ok(Daily {
            time: TimeOfDay::parse(time)?,
            zone: Zoned::new(zone, Overlap::First)?,
        })
    }
}

zoned_rule!(
    Daily,
    time,
    gap: "[`Gap::RunAtEnd`]",
    overlap: "[`Overlap::First`]",
    example: "Daily::at(\"02:30\", \"Europe/Berlin\")"
);

impl fmt::Debug for Daily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.time.0;
        f.debug_struct("Daily")
            .field(
                "at",
                &format_args!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()),
            )
            .field("zone", &self.zone)
            .finish()
    }
}

/// A time of day, whole seconds: the wall rule of [`Daily`].
#[derive(Clone, Copy, PartialEq, Eq)]
struct TimeOfDay(Time);

impl TimeOfDay {
    fn parse(input: &str) -> Result<TimeOfDay, CalendarError> {
        let parts: Vec<&str> = input.split(':').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(CalendarError::time(input, 0, "expected HH:MM or HH:MM:SS"));
        }
        let mut values = [0i8; 3];
        let mut at = 0;
        for (i, part) in parts.iter().enumerate() {
            let max = [23, 59, 59][i];
            let name = ["hour", "minute", "second"][i];
            let digits =
                !part.is_empty() && part.len() <= 2 && part.bytes().all(|b| b.is_ascii_digit());
            let value = part
                .parse::<i8>()
                .ok()
                .filter(|v| digits && (0..=max).contains(v));
            let Some(value) = value else {
                return Err(CalendarError::time(
                    input,
                    at,
                    format!("the {name} must be a number 0-{max}, not {part:?}"),
                ));
            };
            values[i] = value;
            at += part.len() + 1;
        }
        let time = Time::new(values[0], values[1], values[2], 0)
            .map_err(|e| CalendarError::time(input, 0, e.to_string()))?;
        Ok(TimeOfDay(time))
    }
}

impl WallRule for TimeOfDay {
    fn next_wall_after(&self, after: DateTime) -> Option<DateTime> {
        let today = after.date().to_datetime(self.0);
        if today > after {
            return Some(today);
        }
        Some(after.date().tomorrow().ok()?.to_datetime(self.0))
    }
}
