//! What kind of task a task is: one shot, fixed rate, fixed delay, or an
//! idle timer. Fixed for the task's life, and stored in its header's word.

/// What kind of task this is (the `kind` field of the `task` span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Once,
    FixedRate,
    FixedDelay,
    Idle,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Once => "once",
            Kind::FixedRate => "fixed_rate",
            Kind::FixedDelay => "fixed_delay",
            Kind::Idle => "idle",
        }
    }

    pub(crate) fn is_periodic(self) -> bool {
        matches!(self, Kind::FixedRate | Kind::FixedDelay)
    }
}

impl Kind {
    pub(super) fn bits(self) -> u64 {
        match self {
            Kind::Once => 0,
            Kind::FixedRate => 1,
            Kind::FixedDelay => 2,
            Kind::Idle => 3,
        }
    }
    pub(super) fn from_bits(bits: u64) -> Kind {
        match bits & 3 {
            0 => Kind::Once,
            1 => Kind::FixedRate,
            2 => Kind::FixedDelay,
            _ => Kind::Idle,
        }
    }
}
