//! Times as people read and type them: RFC 3339 in UTC, durations such as
//! `3m 20s`, and `--from`/`--until` arguments (`now`, `+10m`, `-1h`, or an
//! RFC 3339 time).
//!
//! Invariant: every time here is milliseconds since the Unix epoch by the
//! store's clock; "now" is always the store's now, passed in.

use jiff::{SignedDuration, Timestamp};

use crate::error::Error;

/// `ms` as an RFC 3339 UTC time to the second: `2026-12-05T06:45:00Z`.
///
/// # Examples
///
/// ```
/// assert_eq!(schedpool_cli::time::utc(0), "1970-01-01T00:00:00Z");
/// ```
pub fn utc(ms: u64) -> String {
    match Timestamp::from_millisecond(ms.min(i64::MAX as u64) as i64) {
        Ok(t) => t.round(jiff::Unit::Second).unwrap_or(t).to_string(),
        Err(_) => format!("{ms} ms"),
    }
}

/// A duration in ms as `1h 2m`, `3m 20s`, `4.5s` or `120ms`.
///
/// # Examples
///
/// ```
/// use schedpool_cli::time::span;
///
/// assert_eq!(span(200_000), "3m 20s");
/// assert_eq!(span(4_500), "4.5s");
/// assert_eq!(span(120), "120ms");
/// ```
pub fn span(ms: u64) -> String {
    let s = ms / 1000;
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => {
            let tenths = (ms % 1000) / 100;
            if tenths == 0 {
                format!("{s}s")
            } else {
                format!("{s}.{tenths}s")
            }
        }
        60_000..3_600_000 => format!("{}m {}s", s / 60, s % 60),
        3_600_000..86_400_000 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// `at_ms` relative to `now_ms`: `in 3m 20s`, `12s ago`, `now`.
///
/// # Examples
///
/// ```
/// use schedpool_cli::time::relative;
///
/// assert_eq!(relative(10_000, 0), "in 10s");
/// assert_eq!(relative(0, 10_000), "10s ago");
/// ```
pub fn relative(at_ms: u64, now_ms: u64) -> String {
    if at_ms == now_ms {
        "now".to_string()
    } else if at_ms > now_ms {
        format!("in {}", span(at_ms - now_ms))
    } else {
        format!("{} ago", span(now_ms - at_ms))
    }
}

/// Parses a `--from`/`--until` argument against the store's `now_ms`:
/// `now`, a signed offset (`+10m`, `-1h30m`, `-2 days`), an RFC 3339
/// time (`2026-12-05T06:45:00Z`), or milliseconds since the Unix epoch.
///
/// # Errors
///
/// A usage [`Error`] naming the accepted forms.
///
/// # Examples
///
/// ```
/// use schedpool_cli::time::parse_when;
///
/// assert_eq!(parse_when("now", 5_000)?, 5_000);
/// assert_eq!(parse_when("-5s", 10_000)?, 5_000);
/// assert_eq!(parse_when("+1m", 0)?, 60_000);
/// assert_eq!(parse_when("1970-01-01T00:00:02Z", 0)?, 2_000);
/// assert_eq!(parse_when("1500", 0)?, 1_500);
/// assert!(parse_when("soon", 0).is_err());
/// # Ok::<(), schedpool_cli::Error>(())
/// ```
pub fn parse_when(text: &str, now_ms: u64) -> Result<u64, Error> {
    let text = text.trim();
    if text == "now" {
        return Ok(now_ms);
    }
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(ms) = text.parse() {
            return Ok(ms);
        }
    }
    let bad = || {
        Error::usage(format!(
            "cannot read the time {text:?}: give `now`, an offset from the store's now \
             (`-10m`, `+1h30m`), an RFC 3339 time (`2026-12-05T06:45:00Z`) or ms since the epoch"
        ))
    };
    if let Some(sign) = text.chars().next().filter(|c| *c == '+' || *c == '-') {
        let d: SignedDuration = text[1..].trim().parse().map_err(|_| bad())?;
        let ms = d.as_millis().unsigned_abs().min(u64::MAX as u128) as u64;
        return Ok(if sign == '+' {
            now_ms.saturating_add(ms)
        } else {
            now_ms.saturating_sub(ms)
        });
    }
    let t: Timestamp = text.parse().map_err(|_| bad())?;
    u64::try_from(t.as_millisecond()).map_err(|_| bad())
}
