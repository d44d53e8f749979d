//! [`Cron`]: a cron expression in an IANA time zone.
//!
//! # Invariants
//!
//! - The expression is checked word by word ([`super::cron_fields`]), parsed
//!   by croner, and searched once over a whole Gregorian cycle (400 years,
//!   after which weekdays and leap years repeat) at construction: a `Cron`
//!   that exists fires, in every 400 years, at least once.
//! - The wall-time search ([`WallRule::next_wall_after`]) goes year, month,
//!   day, then time of day, skipping whole months and days that do not
//!   match; it looks at most 401 years ahead, which the cycle makes exact.

use std::fmt;

use croner::parser::{CronParser, Seconds, Year};
use croner::{CronPattern, Weekday};
use jiff::civil::{Date, DateTime, Time};

use super::cron_fields::{split, Word};
use super::dst::{Gap, Overlap};
use super::error::CalendarError;
use super::zone::{zoned_rule, WallRule, Zoned};
use super::Schedule;

/// A cron expression in an IANA time zone: a [`Schedule`] of the wall
/// times it matches there.
///
/// The grammar (parsed by the [croner](https://docs.rs/croner) crate):
///
/// - 5 fields, `minute hour day-of-month month day-of-week`, or 6 with a
///   `second` field first. Ranges (`1-5`), lists (`1,15`), steps (`*/15`,
///   `10-40/10`, and Quartz's `0/15`, from 0 to the end of the field).
/// - Months `1-12` or `JAN`-`DEC`; days of week `0-7` (0 and 7 are Sunday)
///   or `SUN`-`SAT`; names in any case.
/// - Day of month: `L` (the last day), `15W` (the weekday nearest the
///   15th, within the month), `LW` (the last weekday); `?` is `*`.
/// - Day of week: `5L` or `FRIL` (the last Friday of the month), `FRI#2`
///   (the second Friday); `?` is `*`.
/// - When both day fields are restricted, a day matches if either does (as
///   in Vixie cron and cronie); a `+` before the day-of-week field
///   (`0 0 1 * +MON`) asks for both (the first of the month, if a Monday).
/// - Aliases: `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily`
///   (`@midnight`), `@hourly`.
///
/// Daylight saving: a fire time in a gap runs once at the gap's end
/// ([`Gap::RunAtEnd`], the default); one in an overlap runs once, at its
/// first occurrence ([`Overlap::First`]), unless the hour field is `*`
/// (every hour), where it runs at both ([`Overlap::Both`]) so that the job
/// keeps its pace through the repeated hour. Both are yours to choose:
/// [`on_gap`](Self::on_gap), [`on_overlap`](Self::on_overlap).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use schedpool::calendar::{Cron, Schedule};
///
/// // 02:30 on weekdays, Berlin time.
/// let nightly = Cron::new("30 2 * * MON-FRI", "Europe/Berlin")?;
/// // After 2025-01-03 12:00 UTC (a Friday), the next is Monday 01:30 UTC.
/// let friday_noon = UNIX_EPOCH + Duration::from_secs(1_735_905_600);
/// let monday = UNIX_EPOCH + Duration::from_secs(1_736_127_000);
/// assert_eq!(nightly.next_after(friday_noon), Some(monday));
/// # Ok::<(), schedpool::calendar::CalendarError>(())
/// ```
#[derive(Clone)]
pub struct Cron {
    expression: String,
    matcher: Matcher,
    zone: Zoned,
}

impl Cron {
    /// The expression `expression` in the IANA zone `zone` (`"UTC"`,
    /// `"Europe/Berlin"`), from the database bundled with the crate.
    ///
    /// # Errors
    ///
    /// A [`CalendarError`]: an invalid expression (its
    /// [`position`](CalendarError::position) and
    /// [`field`](CalendarError::field) say where), an unknown zone, or an
    /// expression that never fires (`0 0 30 2 *`).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::calendar::{CalendarErrorKind, Cron};
    ///
    /// assert!(Cron::new("*/5 * * * *", "UTC").is_ok());
    /// let never = Cron::new("0 0 30 2 *", "UTC").unwrap_err();
    /// assert_eq!(never.kind(), CalendarErrorKind::NeverFires);
    /// let zone = Cron::new("@daily", "Mars/Olympus_Mons").unwrap_err();
    /// assert_eq!(zone.kind(), CalendarErrorKind::UnknownZone);
    /// ```
    pub fn new(expression: &str, zone: &str) -> Result<Cron, CalendarError> {
        let words = split(expression)?;
        let pattern = parse(expression, &words)?;
        let every_hour = pattern.hours.values().len() == 24;
        let matcher = Matcher::new(pattern);
        if matcher.next_wall_after(cycle_start()).is_none() {
            return Err(CalendarError::never_fires(
                expression,
                "no date matches it in 400 years (a whole Gregorian cycle, so none ever will)",
            ));
        }
        let overlap = if every_hour {
            Overlap::Both
        } else {
            Overlap::First
        };
        Ok(Cron {
            expression: expression.to_owned(),
            matcher,
            zone: Zoned::new(zone, overlap)?,
        })
    }

    /// The expression, as given.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::calendar::Cron;
    ///
    /// let rule = Cron::new("0 9 * * MON-FRI", "America/New_York")?;
    /// assert_eq!((rule.expression(), rule.zone()), ("0 9 * * MON-FRI", "America/New_York"));
    /// # Ok::<(), schedpool::calendar::CalendarError>(())
    /// ```
    pub fn expression(&self) -> &str {
        &self.expression
    }
}

zoned_rule!(
    Cron,
    matcher,
    gap: "[`Gap::RunAtEnd`]",
    overlap: "[`Overlap::First`], or [`Overlap::Both`] when the hour field matches every hour",
    example: "Cron::new(\"30 2 * * *\", \"Europe/Berlin\")"
);

impl fmt::Debug for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cron")
            .field("expression", &self.expression)
            .field("zone", &self.zone)
            .finish()
    }
}

impl PartialEq for Cron {
    /// Same expression text, zone and policies.
    fn eq(&self, other: &Self) -> bool {
        self.expression == other.expression && self.zone == other.zone
    }
}

impl Eq for Cron {}

/// 1999-12-31 23:59:59: the search for "does it ever fire" starts after it.
fn cycle_start() -> DateTime {
    jiff::civil::date(1999, 12, 31).at(23, 59, 59, 0)
}

/// Parses the checked words with croner; if croner refuses, finds the
/// field it refuses by parsing each field alone.
fn parse(input: &str, words: &[Word<'_>]) -> Result<CronPattern, CalendarError> {
    let parser = CronParser::builder()
        .seconds(Seconds::Required)
        .year(Year::Disallowed)
        .sloppy_ranges(true)
        .build();
    let text: Vec<&str> = words.iter().map(|w| w.text).collect();
    let refused = match parser.parse(&text.join(" ")) {
        Ok(cron) => return Ok(cron.pattern),
        Err(err) => err,
    };
    for word in words {
        let mut probe = ["*"; 6];
        probe[word.field] = word.text;
        if let Err(err) = parser.parse(&probe.join(" ")) {
            return Err(CalendarError::expression(
                input,
                word.at,
                Some(word.field_name()),
                err.to_string(),
            ));
        }
    }
    Err(CalendarError::expression(
        input,
        0,
        None,
        refused.to_string(),
    ))
}

/// The expression's matching wall times: croner's parsed fields, searched.
#[derive(Clone)]
struct Matcher {
    pattern: CronPattern,
    seconds: Vec<u8>,
    minutes: Vec<u8>,
    hours: Vec<u8>,
}

impl Matcher {
    fn new(pattern: CronPattern) -> Self {
        let list = |values: Vec<u16>| values.into_iter().map(|v| v as u8).collect();
        Matcher {
            seconds: list(pattern.seconds.values()),
            minutes: list(pattern.minutes.values()),
            hours: list(pattern.hours.values()),
            pattern,
        }
    }

    fn day_matches(&self, date: Date) -> bool {
        let weekday = Weekday::from_days_from_sunday(date.weekday().to_sunday_zero_offset() as u32);
        let (y, m, d) = (
            i32::from(date.year()),
            date.month() as u32,
            date.day() as u32,
        );
        self.pattern.month_match(m).unwrap_or(false)
            && self.pattern.day_match(y, m, d, weekday).unwrap_or(false)
    }

    /// The first matching time of day at or after `from` (whole seconds).
    fn time_at_or_after(&self, from: (u8, u8, u8)) -> Option<(u8, u8, u8)> {
        let (h0, m0, s0) = from;
        for &h in self.hours.iter().filter(|&&h| h >= h0) {
            let minute_floor = if h == h0 { m0 } else { 0 };
            for &m in self.minutes.iter().filter(|&&m| m >= minute_floor) {
                let second_floor = if h == h0 && m == m0 { s0 } else { 0 };
                if let Some(&s) = self.seconds.iter().find(|&&s| s >= second_floor) {
                    return Some((h, m, s));
                }
            }
        }
        None
    }
}

impl WallRule for Matcher {
    fn next_wall_after(&self, after: DateTime) -> Option<DateTime> {
        // The first whole second strictly after `after`.
        let floor = after.with().subsec_nanosecond(0).build().ok()?;
        let start = floor.checked_add(jiff::SignedDuration::from_secs(1)).ok()?;
        let mut date = start.date();
        let t = start.time();
        let mut from = (t.hour() as u8, t.minute() as u8, t.second() as u8);
        let last_year = i32::from(date.year()) + 401;
        while i32::from(date.year()) <= last_year {
            if !self
                .pattern
                .month_match(date.month() as u32)
                .unwrap_or(false)
            {
                // The first day of the next month.
                date = date
                    .first_of_month()
                    .checked_add(jiff::Span::new().months(1))
                    .ok()?;
                from = (0, 0, 0);
                continue;
            }
            if self.day_matches(date) {
                if let Some((h, m, s)) = self.time_at_or_after(from) {
                    let time = Time::new(h as i8, m as i8, s as i8, 0).ok()?;
                    return Some(date.to_datetime(time));
                }
            }
            date = date.tomorrow().ok()?;
            from = (0, 0, 0);
        }
        None
    }
}
