//! What kind of task a task is: one shot, fixed rate, fixed delay, an idle
//! timer, or a calendar task. Fixed for the task's life, and stored in three
//! bits of its header's word.

/// What kind of task this is (the `kind` field of the `task` span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Once,
    FixedRate,
    FixedDelay,
    Idle,
    /// Runs at the fire times of a [`Schedule`](crate::calendar::Schedule),
    /// read off the wall clock.
    Calendar,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Once => "once",
            Kind::FixedRate => "fixed_rate",
            Kind::FixedDelay => "fixed_delay",
            Kind::Idle => "idle",
            Kind::Calendar => "calendar",
        }
    }

    pub(crate) fn is_periodic(self) -> bool {
        matches!(self, Kind::FixedRate | Kind::FixedDelay | Kind::Calendar)
    }
}

impl Kind {
    pub(super) fn bits(self) -> u64 {
        match self {
            Kind::Once => 0,
            Kind::FixedRate => 1,
            Kind::FixedDelay => 2,
            Kind::Idle => 3,
            Kind::Calendar => 4,
        }
    }
    pub(super) fn from_bits(bits: u64) -> Kind {
        match bits & 7 {
            0 => Kind::Once,
            1 => Kind::FixedRate,
            2 => Kind::FixedDelay,
            3 => Kind::Idle,
            _ => Kind::Calendar,
        }
    }
}
