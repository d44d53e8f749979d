//! The daylight-saving policies: what a rule does with a wall time that
//! does not exist ([`Gap`]) and with one that exists twice ([`Overlap`]).
//!
//! # Invariants
//!
//! - Both are plain values; the walk that applies them is in
//!   [`super::zone`], the one place that turns wall times into instants.

/// What a fire time that falls in a gap does: a wall time that never
/// happens, because the clocks jump over it (spring forward: 02:00 to
/// 03:00 in Europe/Berlin; a whole day on Pacific/Apia, 2011-12-30).
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "calendar")] {
/// use schedpool::calendar::{Daily, Gap};
///
/// // The nightly job does not run on the night the clocks skip 02:30.
/// let nightly = Daily::at("02:30", "Europe/Berlin")?.on_gap(Gap::Skip);
/// # let _ = nightly;
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Gap {
    /// Run once at the first instant after the gap (the wall clock's new
    /// reading: 03:00 in Berlin), however many fire times fell in it; if
    /// that instant is itself a fire time, it runs once. The default: a job
    /// is late, never lost.
    #[default]
    RunAtEnd,
    /// Do not run for fire times in the gap.
    Skip,
}

/// What a fire time that falls in an overlap does: a wall time that
/// happens twice, because the clocks go back (fall back: 02:00 to 03:00
/// happens twice in Europe/Berlin; 01:30 to 02:00 on Australia/Lord_Howe).
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "calendar")] {
/// use schedpool::calendar::{Cron, Overlap};
///
/// // Every 10 minutes of real time, also through the repeated hour.
/// let sampler = Cron::new("*/10 * * * *", "America/New_York")?.on_overlap(Overlap::Both);
/// # let _ = sampler;
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Overlap {
    /// Run at the first occurrence only (before the clocks go back).
    First,
    /// Run at the second occurrence only (after the clocks went back).
    Second,
    /// Run at both: every occurrence of the wall time, as real time passes.
    Both,
}
