//! The pool's run state (Java's `runState`: `RUNNING`, `SHUTDOWN`, `STOP`,
//! `TERMINATED`).
//!
//! # Invariants
//!
//! - A pool's run state only grows, in declaration order:
//!   `Running < Shutdown < Stop < Terminated` (the derived `Ord`).
//! - It is written under the pool lock and mirrored into one atomic byte
//!   ([`RunState::from_byte`] reads it back) for lock-free reads.

/// Where a pool is in its life. `Debug` prints the name (Java's names, in
/// Rust case), which the pool's own `Debug` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum RunState {
    /// Accepts submissions and runs tasks.
    Running = 0,
    /// Rejects submissions; runs what the shutdown policies keep.
    Shutdown = 1,
    /// Rejects submissions and runs nothing more; workers are leaving.
    Stop = 2,
    /// Stopped, with no worker left and nothing left to run.
    Terminated = 3,
}

impl RunState {
    /// The state stored as `byte` by `state as u8`.
    pub(crate) fn from_byte(byte: u8) -> Self {
        match byte {
            0 => RunState::Running,
            1 => RunState::Shutdown,
            2 => RunState::Stop,
            _ => RunState::Terminated,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::RunState;

    #[test]
    fn the_byte_round_trips_and_the_order_is_the_life_of_a_pool() {
        for state in [
            RunState::Running,
            RunState::Shutdown,
            RunState::Stop,
            RunState::Terminated,
        ] {
            assert_eq!(RunState::from_byte(state as u8), state);
        }
        assert!(RunState::Running < RunState::Shutdown);
        assert!(RunState::Shutdown < RunState::Stop);
        assert!(RunState::Stop < RunState::Terminated);
        assert_eq!(format!("{:?}", RunState::Shutdown), "Shutdown");
    }
}
