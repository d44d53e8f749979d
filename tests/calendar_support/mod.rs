//! Wall-clock times written as text in the calendar tests, so that the
//! expected fire times read as the tables they were copied from.

#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Days from 1970-01-01 to the civil date (proleptic Gregorian; Howard
/// Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `"2025-03-30T03:00:00+02:00"` (or `...Z`, or no offset: UTC) as a
/// `SystemTime`. Panics on text it cannot read: the tests' own data.
pub fn at(text: &str) -> SystemTime {
    let num = |range: std::ops::Range<usize>| -> i64 { text[range].parse().expect(text) };
    let (y, mo, d) = (num(0..4), num(5..7), num(8..10));
    let (h, mi, s) = (num(11..13), num(14..16), num(17..19));
    let offset = match text.get(19..) {
        None | Some("") | Some("Z") => 0,
        Some(o) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o[1..3].parse::<i64>().expect(text) * 3600
                + o[4..6].parse::<i64>().expect(text) * 60)
        }
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset;
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

/// A `SystemTime` as UTC text, for failure messages.
pub fn utc(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // civil_from_days
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The fire times of `schedule` after `from`, `n` of them, as UTC text.
pub fn fires(schedule: &impl schedpool::calendar::Schedule, from: &str, n: usize) -> Vec<String> {
    schedule.fires_after(at(from)).take(n).map(utc).collect()
}

/// Expected times as UTC text (for comparing with [`fires`]).
pub fn expect(times: &[&str]) -> Vec<String> {
    times.iter().map(|t| utc(at(t))).collect()
}

/// Every `n` seconds of the Unix epoch (UTC): a user's own rule, so the
/// pool tests need no feature.
#[derive(Debug, Clone, Copy)]
pub struct EverySecs(pub u64);

impl schedpool::calendar::Schedule for EverySecs {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let s = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
        Some(UNIX_EPOCH + Duration::from_secs((s / self.0 + 1) * self.0))
    }
}

/// The fires of an inner rule, the first `n` only.
#[derive(Debug)]
pub struct FirstN<S>(pub S, pub usize);

impl<S: schedpool::calendar::Schedule> schedpool::calendar::Schedule for FirstN<S> {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        // Counted from a fixed origin so the rule stays a pure function.
        let origin = at("2025-01-01T00:00:00");
        let next = self.0.next_after(after)?;
        let nth = self.0.fires_after(origin).take(self.1).any(|t| t == next);
        nth.then_some(next)
    }
}
