//! Fire instants in reports: how many, the first few and the last, as
//! RFC 3339 UTC times (the misfire decision's WARN event and counters).
//!
//! A leaf: no clock, no store. Invariant: a report names at most
//! [`NAMED`] + 1 instants, however many fires it counts.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// How many fire instants a report names (then the count and the last).
const NAMED: usize = 12;

/// Some fire instants, for counters and reports: how many, the first
/// [`NAMED`] of them and the last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Fires {
    pub(super) count: u64,
    pub(super) first: Vec<u64>,
    pub(super) last: Option<u64>,
}

impl Fires {
    pub(super) fn push(&mut self, at: u64) {
        self.count += 1;
        if self.first.len() < NAMED {
            self.first.push(at);
        }
        self.last = Some(at);
    }
}

impl Extend<u64> for Fires {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, iter: I) {
        iter.into_iter().for_each(|at| self.push(at));
    }
}

impl fmt::Display for Fires {
    /// `2025-03-01T02:30:00Z, 2025-03-02T02:30:00Z, … (40 more), 2025-04-11T02:30:00Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.count == 0 {
            return f.write_str("none");
        }
        for (i, at) in self.first.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&utc(*at))?;
        }
        let named = self.first.len() as u64;
        if self.count > named {
            if self.count > named + 1 {
                write!(f, ", … ({} more)", self.count - named - 1)?;
            }
            if let Some(last) = self.last {
                write!(f, ", {}", utc(last))?;
            }
        }
        Ok(())
    }
}

/// `ms` since the Unix epoch as an RFC 3339 UTC time:
/// `2025-03-01T02:30:00Z`, with `.123` when it has milliseconds.
pub(super) fn utc(ms: u64) -> String {
    crate::calendar::utc_text(UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

/// A rule's answer as text, even one before the Unix epoch.
pub(super) fn time_text(at: SystemTime) -> String {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => utc(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        Err(_) => format!("{at:?} (before the Unix epoch)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fires(v: &[u64]) -> Fires {
        let mut f = Fires::default();
        f.extend(v.iter().copied());
        f
    }

    #[test]
    fn reports_name_the_instants() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_000 + 1), "2000-02-29T00:00:00.001Z");
        assert_eq!(utc(1_740_796_200_000), "2025-03-01T02:30:00Z");
        let many = fires(&(0..20).map(|d| d * 86_400_000).collect::<Vec<_>>());
        let text = many.to_string();
        assert!(text.starts_with("1970-01-01T00:00:00Z, 1970-01-02T00:00:00Z"));
        assert!(
            text.ends_with(", … (7 more), 1970-01-20T00:00:00Z"),
            "{text}"
        );
    }
}
