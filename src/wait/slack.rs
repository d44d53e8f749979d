//! The pool workers' timer slack (Linux: how late the kernel may fire a
//! thread's timed waits), which follows the loaded spells of
//! [`load`](super::load): in a spell, workers let the OS batch their
//! wake-ups.
//!
//! # Invariants
//!
//! - A worker changes only its own thread's slack, outside every lock,
//!   once per change of spell; with no configured slack, or on a manual
//!   clock, it never touches it.

use std::time::Duration;

use crate::base::clock::{Clock, Nanos};
use crate::wait::leader::Leader;

/// The timer slack a loaded spell asks for: Linux's default.
const LOADED_TIMER_SLACK: Duration = Duration::from_micros(50);

/// The worker's timer slack follows the pool's loaded spells
/// ([`Load::loaded`](crate::wait::load::Load::loaded)): in one, at least
/// [`LOADED_TIMER_SLACK`], so the OS may batch the workers' wake-ups; else
/// the configured slack. Set on the worker's own thread, outside the lock,
/// once per change.
pub(crate) struct Slack {
    /// The configured slack.
    configured: Option<Duration>,
    /// The slack set is the loaded one.
    loaded: bool,
    /// A change to make before the next lock.
    pub(crate) change: Option<Duration>,
}

impl Slack {
    /// A worker's slack, starting from the configured one (`None`: the
    /// OS's default, left alone).
    pub(crate) fn new(configured: Option<Duration>) -> Self {
        Slack {
            configured,
            loaded: false,
            change: None,
        }
    }

    /// A worker found a task due while a loaded spell was on or not
    /// ([`loaded_spell`]): notes a change of spell.
    pub(crate) fn follow(&mut self, loaded: bool) {
        if self.configured.is_none() {
            return; // the OS's default always
        }
        if loaded != self.loaded {
            self.loaded = loaded;
            self.change = slack_for(self.configured, loaded);
        }
    }
}

/// Whether the pool is in a loaded spell, as of the real clock's reading
/// `now` that found a task due, under the lock of the state holding
/// `leader`: what [`Slack`] and [`Slice`](super::slice::Slice) follow,
/// read once per task. Never on a manual clock (no timers to be late).
pub(crate) fn loaded_spell(leader: &Leader, clock: &Clock, now: Nanos) -> bool {
    clock.is_real() && leader.load.loaded_at(now)
}

/// The slack a worker sets: the configured one (`None`: the OS's default,
/// left alone), raised to [`LOADED_TIMER_SLACK`] in a loaded spell.
fn slack_for(configured: Option<Duration>, loaded: bool) -> Option<Duration> {
    let base = configured?;
    Some(match loaded {
        true => base.max(LOADED_TIMER_SLACK),
        false => base,
    })
}

/// Sets the calling thread's timer slack (Linux: how late the kernel may
/// fire its timed waits, 50 µs by default). Best effort and without
/// `unsafe`: the thread writes its own `/proc/<tid>/timerslack_ns`, with the
/// tid read from the `/proc/thread-self` link. Elsewhere, a no-op.
pub(crate) fn set_timer_slack(slack: Duration) {
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        let tid = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|link| {
                let tid = link.file_name()?.to_str()?.to_owned();
                Some(tid)
            });
        let nanos = slack.as_nanos().clamp(1, u128::from(u64::MAX));
        let set =
            tid.map(|tid| std::fs::write(format!("/proc/{tid}/timerslack_ns"), nanos.to_string()));
        if let Some(Err(err)) = set {
            tracing::debug!(target: "schedpool::pool", error = %err, "could not set the worker's timer slack");
        }
    }
    #[cfg(not(all(target_os = "linux", not(loom))))]
    let _ = slack;
}

#[cfg(all(test, target_os = "linux", not(loom)))]
mod tests {
    #[test]
    fn a_loaded_spell_raises_the_slack_and_its_end_restores_it() {
        use std::time::Duration;
        let us = Duration::from_micros;
        assert_eq!(super::slack_for(Some(us(1)), false), Some(us(1)));
        assert_eq!(super::slack_for(Some(us(1)), true), Some(us(50)));
        assert_eq!(super::slack_for(Some(us(200)), true), Some(us(200)));
        assert_eq!(super::slack_for(None, true), None, "the OS's own");
    }

    #[test]
    fn timer_slack_is_set_on_the_calling_thread_only() {
        let read = || {
            let link = std::fs::read_link("/proc/thread-self").unwrap();
            let tid = link.file_name().unwrap().to_str().unwrap().to_owned();
            std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns"))
                .map(|s| s.trim().to_owned())
        };
        let main_before = read();
        let worker = std::thread::spawn(move || {
            super::set_timer_slack(std::time::Duration::from_micros(3));
            read()
        });
        match (worker.join().unwrap(), main_before) {
            (Ok(worker), Ok(main)) => {
                assert_eq!(worker, "3000");
                assert_eq!(read().unwrap(), main, "other threads keep theirs");
            }
            _ => eprintln!("no /proc timer slack on this machine; nothing to check"),
        }
    }
}
