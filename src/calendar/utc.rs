//! Wall-clock instants as RFC 3339 UTC text, for messages about a schedule
//! (what it was asked, what it answered): `2025-01-03T12:00:00Z`.
//!
//! # Invariants
//!
//! - Every `SystemTime` has a text, before 1970 too, without the `calendar`
//!   feature (no time-zone database). A fraction of a second is written
//!   with 3, 6 or 9 digits, as few as say it exactly; a year outside 0-9999
//!   gets its sign and at least four digits.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` in UTC, `YYYY-MM-DDTHH:MM:SS[.fff]Z`.
pub(crate) fn utc_text(t: SystemTime) -> String {
    let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (i128::from(d.as_secs()), d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let secs = -i128::from(d.as_secs());
            match d.subsec_nanos() {
                0 => (secs, 0),
                n => (secs - 1, 1_000_000_000 - n),
            }
        }
    };
    let (days, day_secs) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days, for any sign.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i128::from(month <= 2);
    let year = match year {
        0..=9999 => format!("{year:04}"),
        _ => format!("{year:+05}"),
    };
    let (h, m, s) = (day_secs / 3600, day_secs / 60 % 60, day_secs % 60);
    let fraction = match nanos {
        0 => String::new(),
        n if n % 1_000_000 == 0 => format!(".{:03}", n / 1_000_000),
        n if n % 1_000 == 0 => format!(".{:06}", n / 1_000),
        n => format!(".{n:09}"),
    };
    format!("{year}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{fraction}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn text(secs: i64, nanos: u32) -> String {
        let t = if secs >= 0 {
            UNIX_EPOCH + Duration::new(secs as u64, nanos)
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::new(0, nanos)
        };
        utc_text(t)
    }

    #[test]
    fn both_sides_of_the_epoch() {
        assert_eq!(text(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(text(1_735_905_600, 0), "2025-01-03T12:00:00Z");
        assert_eq!(text(951_782_400, 0), "2000-02-29T00:00:00Z");
        assert_eq!(text(-1, 0), "1969-12-31T23:59:59Z");
        assert_eq!(text(-1, 500_000_000), "1969-12-31T23:59:59.500Z");
        assert_eq!(text(-14_182_940, 0), "1969-07-20T20:17:40Z");
        assert_eq!(text(0, 1_000), "1970-01-01T00:00:00.000001Z");
        assert_eq!(text(0, 1), "1970-01-01T00:00:00.000000001Z");
        assert_eq!(text(253_402_300_799, 0), "9999-12-31T23:59:59Z");
        assert_eq!(text(253_402_300_800, 0), "+10000-01-01T00:00:00Z");
        assert_eq!(text(-62_167_219_200, 0), "0000-01-01T00:00:00Z");
        assert_eq!(text(-62_167_219_201, 0), "-0001-12-31T23:59:59Z");
    }
}
