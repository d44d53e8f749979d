//! Calendar schedules: fire times read off the wall clock.
//!
//! A [`Schedule`] answers one question, "the first fire time after `t`", in
//! wall-clock time ([`SystemTime`](std::time::SystemTime)). Everything that
//! runs calendar jobs (the in-process pool and the durable pool) asks only
//! that question, so a user's own rule is as good as a built-in one.
//!
//! Invariants:
//! - `next_after(t)`, when `Some(n)`, has `n > t`: a schedule never fires
//!   twice at one instant and never goes back in time.
//! - A schedule is a value: it reads no clock of its own.

mod schedule;

pub use schedule::{FireTimes, Schedule};

#[cfg(feature = "calendar")]
mod aligned;
#[cfg(feature = "calendar")]
mod cron;
#[cfg(feature = "calendar")]
mod cron_fields;
#[cfg(feature = "calendar")]
mod daily;
#[cfg(feature = "calendar")]
mod dst;
#[cfg(feature = "calendar")]
mod error;
#[cfg(feature = "calendar")]
mod zone;

#[cfg(feature = "calendar")]
#[cfg_attr(docsrs, doc(cfg(feature = "calendar")))]
pub use aligned::Aligned;
#[cfg(feature = "calendar")]
#[cfg_attr(docsrs, doc(cfg(feature = "calendar")))]
pub use cron::Cron;
#[cfg(feature = "calendar")]
#[cfg_attr(docsrs, doc(cfg(feature = "calendar")))]
pub use daily::Daily;
#[cfg(feature = "calendar")]
#[cfg_attr(docsrs, doc(cfg(feature = "calendar")))]
pub use dst::{Gap, Overlap};
#[cfg(feature = "calendar")]
#[cfg_attr(docsrs, doc(cfg(feature = "calendar")))]
pub use error::{CalendarError, CalendarErrorKind};
