//! Wall times to instants: a [`Zoned`] rule walks a time zone's offset
//! segments and applies the daylight-saving policies. Every built-in
//! schedule is a [`WallRule`] (which wall times match) in a [`Zoned`].
//!
//! # Invariants
//!
//! - `next_after(t)` is the smallest instant `> t` among the instants of
//!   the rule's wall times, as the policies resolve them: a wall time that
//!   exists once is its one instant; in an overlap, the occurrences
//!   [`Overlap`] keeps; in a gap, nothing ([`Gap::Skip`]) or the
//!   transition instant ([`Gap::RunAtEnd`]).
//! - The walk goes segment by segment (an offset and the instants it holds,
//!   from one transition to the next), in time order. Inside a segment,
//!   wall time and instants move together, so the first accepted match of
//!   the earliest segment that has one is the answer, also in an overlap,
//!   where a later segment's wall times start lower.
//! - It assumes what the IANA database holds: a backward shift goes back
//!   less than the segment before it lasted. It stops where the rule has no
//!   match left (or after 2,000 segments, about 1,000 years of daylight
//!   saving time) and within jiff's range (the years -9999 to 9999).

use std::time::SystemTime;

use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};

use super::dst::{Gap, Overlap};
use super::error::CalendarError;

/// Which wall times a rule matches, with no time zone.
pub(super) trait WallRule {
    /// The first matching wall time strictly after `after`, or `None` when
    /// there is none (in the rule's search range).
    fn next_wall_after(&self, after: DateTime) -> Option<DateTime>;
}

/// A time zone, by its IANA name, with the daylight-saving policies.
#[derive(Clone)]
pub(super) struct Zoned {
    tz: TimeZone,
    name: String,
    pub(super) gap: Gap,
    pub(super) overlap: Overlap,
}

/// The most segments one `next_after` walks.
const MAX_SEGMENTS: usize = 2_000;

impl Zoned {
    /// The zone named `name` in the bundled IANA database.
    pub(super) fn new(name: &str, overlap: Overlap) -> Result<Zoned, CalendarError> {
        let tz = TimeZone::get(name).map_err(|_| CalendarError::unknown_zone(name))?;
        Ok(Zoned {
            tz,
            name: name.to_owned(),
            gap: Gap::RunAtEnd,
            overlap,
        })
    }

    /// The zone's IANA name, as given.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The first instant strictly after `after` that `rule` fires at, in
    /// this zone, under the policies.
    pub(super) fn next_after(&self, rule: &impl WallRule, after: SystemTime) -> Option<SystemTime> {
        let after = match Timestamp::try_from(after) {
            Ok(t) => t,
            // Before the year -9999: start from the first instant jiff has.
            Err(_) if after < SystemTime::UNIX_EPOCH => Timestamp::MIN,
            Err(_) => return None,
        };
        self.walk(rule, after)
            .and_then(|t| SystemTime::try_from(t).ok())
    }

    fn walk(&self, rule: &impl WallRule, after: Timestamp) -> Option<Timestamp> {
        // The segment from `start` to the next transition, with `offset`;
        // matches are searched after the wall time `lower`.
        let mut start = after;
        let mut lower = self.tz.to_datetime(after);
        for _ in 0..MAX_SEGMENTS {
            let offset = self.tz.to_offset(start);
            let transition = self.tz.following(start).next();
            let end = transition.as_ref().map(|t| t.timestamp());
            let wall_end = end.map(|e| offset.to_datetime(e));
            let mut candidate = rule.next_wall_after(lower);
            while let Some(wall) = candidate {
                if wall_end.is_some_and(|limit| wall >= limit) {
                    break;
                }
                let instant = offset.to_timestamp(wall).ok()?;
                if instant > after && self.keeps(wall, instant) {
                    return Some(instant);
                }
                candidate = rule.next_wall_after(wall);
            }
            let transition = transition?;
            let end = transition.timestamp();
            let new_offset = transition.offset();
            let gap_start = offset.to_datetime(end);
            let gap_end = new_offset.to_datetime(end);
            if gap_end > gap_start && self.gap == Gap::RunAtEnd && end > after {
                // Spring forward: the wall times [gap_start, gap_end) never
                // happen; one fire among them runs at the transition.
                let just_before = gap_start.checked_sub(SignedDuration::from_nanos(1)).ok()?;
                if rule
                    .next_wall_after(just_before)
                    .is_some_and(|w| w < gap_end)
                {
                    return Some(end);
                }
            }
            let next_lower = gap_end.checked_sub(SignedDuration::from_nanos(1)).ok()?;
            if candidate.is_none() && next_lower >= lower {
                // No match after `lower`, and the next segment starts later.
                return None;
            }
            start = end;
            lower = next_lower;
        }
        None
    }

    /// Whether the overlap policy keeps `instant`, the occurrence of `wall`
    /// in the segment being walked.
    fn keeps(&self, wall: DateTime, instant: Timestamp) -> bool {
        let AmbiguousOffset::Fold { before, after } = self.tz.to_ambiguous_timestamp(wall).offset()
        else {
            return true;
        };
        let occurrence = |offset: Offset| offset.to_timestamp(wall).ok() == Some(instant);
        match self.overlap {
            Overlap::Both => true,
            Overlap::First => occurrence(before),
            Overlap::Second => occurrence(after),
        }
    }
}

/// What every built-in rule has, written once: the policy setters
/// `on_gap` and `on_overlap` (with the rule's defaults in their docs), the
/// `zone` getter, and the [`Schedule`](super::Schedule) impl that walks its
/// wall rule (`$wall`, a field) through its `zone: Zoned` field.
macro_rules! zoned_rule {
    ($rule:ident, $wall:ident, gap: $gap:literal, overlap: $overlap:literal, example: $new:literal) => {
        impl $rule {
            #[doc = concat!("What a fire time in a daylight-saving gap does (default ", $gap, ").")]
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use schedpool::calendar::{", stringify!($rule), ", Gap};")]
            ///
            /// // Nothing on the night the clocks skip the fire time.
            #[doc = concat!("let rule = ", $new, "?.on_gap(Gap::Skip);")]
            /// # let _ = rule;
            /// # Ok::<(), schedpool::calendar::CalendarError>(())
            /// ```
            pub fn on_gap(mut self, policy: Gap) -> Self {
                self.zone.gap = policy;
                self
            }

            #[doc = concat!("What a fire time in a daylight-saving overlap does (default ", $overlap, ").")]
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use schedpool::calendar::{", stringify!($rule), ", Overlap};")]
            ///
            /// // Run at the second occurrence of a repeated wall time only.
            #[doc = concat!("let rule = ", $new, "?.on_overlap(Overlap::Second);")]
            /// # let _ = rule;
            /// # Ok::<(), schedpool::calendar::CalendarError>(())
            /// ```
            pub fn on_overlap(mut self, policy: Overlap) -> Self {
                self.zone.overlap = policy;
                self
            }

            /// The time zone's IANA name, as given.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use schedpool::calendar::", stringify!($rule), ";")]
            ///
            #[doc = concat!("let rule = ", $new, "?;")]
            /// assert_eq!(rule.zone(), "Europe/Berlin");
            /// # Ok::<(), schedpool::calendar::CalendarError>(())
            /// ```
            pub fn zone(&self) -> &str {
                self.zone.name()
            }
        }

        impl Schedule for $rule {
            fn next_after(&self, after: std::time::SystemTime) -> Option<std::time::SystemTime> {
                self.zone.next_after(&self.$wall, after)
            }
        }
    };
}
pub(super) use zoned_rule;

impl std::fmt::Debug for Zoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zone")
            .field("name", &self.name)
            .field("gap", &self.gap)
            .field("overlap", &self.overlap)
            .finish()
    }
}

impl PartialEq for Zoned {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.gap == other.gap && self.overlap == other.overlap
    }
}

impl Eq for Zoned {}
