//! Calendar schedules: fire times read off the wall clock.
//!
//! A [`Schedule`] answers one question, "the first fire time after `t`", in
//! wall-clock time ([`SystemTime`](std::time::SystemTime)). Everything that
//! runs calendar jobs (the in-process pool and the durable pool) asks only
//! that question, so a user's own rule is as good as a built-in one.
//!
//! The built-in rules (`Cron`, `Daily` and `Aligned`, feature `calendar`)
//! answer for any instant from the year -9999 to 9999 (the range of `jiff`,
//! which does their time-zone arithmetic), before 1970 as after it, by the
//! zone's rules of that time (its local mean time before it had standard
//! time). After 9999-12-31 they answer `None`; for an instant before the
//! year -9999, their first fire from the start of that range.
//!
//! Invariants:
//! - `next_after(t)`, when `Some(n)`, has `n > t`: a schedule never fires
//!   twice at one instant and never goes back in time.
//! - A schedule is a value: it reads no clock of its own.

mod schedule;
mod utc;

pub use schedule::{FireTimes, Schedule};
pub(crate) use utc::utc_text;

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
