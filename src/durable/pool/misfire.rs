//! Missed fires of a durable calendar schedule: the policy ([`Misfire`])
//! and the decision a claim makes from what is in the store.
//!
//! Invariants:
//!
//! - [`decide`] is a pure function of the rule, the policy, the stored fire
//!   instant and the store's "now": every process, and a fleet restarted
//!   after an outage, decides alike from the store alone.
//! - A fire is *missed* when the store's now is more than `grace` past it.
//!   A missed fire more than `max_lateness` past is dropped under every
//!   policy.
//! - One decision looks at no more than [`STEP`] fires. A longer backlog is
//!   decided in steps, each persisted before the next, so a claim's work is
//!   bounded and every count is exact.
//! - Deciding again on the fire a decision moved to gives `Run`, unless
//!   more fires were missed meanwhile: a decision never moves back, and
//!   never runs a fire twice.
//! - Fire instants are whole ms, rounded up (never early), and strictly
//!   increasing: [`next_fire`] refuses a rule that breaks its contract.

use std::collections::VecDeque;
use std::time::{Duration, UNIX_EPOCH};

use super::fires::{time_text, utc, Fires};
use crate::calendar::Schedule;
use crate::durable::store::backend::{ceil_ms, DurableError, MAX_MS};

/// The most fires one decision looks at.
pub(super) const STEP: u64 = 100_000;

/// What a durable calendar schedule does with fires its fleet missed (all
/// processes down, or too busy), decided by the process that claims the
/// oldest one, from the store alone.
///
/// A fire claimed within `grace` of its instant (store clock) is on time
/// and runs. A later one is *missed*, and then:
///
/// | policy | the missed fires |
/// |---|---|
/// | [`skip`](Misfire::skip) | are dropped; the schedule goes on at its first fire not yet missed |
/// | [`run_once`](Misfire::run_once) (the default) | run once, for the latest of them; the others are coalesced into that run |
/// | [`run_all(max)`](Misfire::run_all) | run one by one, in order, the latest `max` of them; older ones are dropped |
///
/// Under every policy a fire more than
/// [`max_lateness`](Misfire::max_lateness) late is dropped (default: no
/// limit). Each decision is counted in
/// [`DurableStats`](crate::durable::DurableStats) (`fires_skipped`,
/// `fires_coalesced`) and reported by a WARN event naming the fire
/// instants.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::Misfire;
///
/// // At most the last 3 missed fires, none older than a day.
/// let policy = Misfire::run_all(3)
///     .grace(Duration::from_secs(120))
///     .max_lateness(Duration::from_secs(24 * 3600));
/// assert_eq!(Misfire::default(), Misfire::run_once());
/// # let _ = policy;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Misfire {
    policy: Policy,
    grace_ms: u64,
    /// `u64::MAX`: no limit.
    max_lateness_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    Skip,
    RunOnce,
    RunAll(u32),
}

/// The default grace: Quartz's default misfire threshold. It must exceed
/// the lease plus `max_block` (30 s + 5 s by default), so that a fire whose
/// holder was killed is still on time when it comes back.
const DEFAULT_GRACE_MS: u64 = 60_000;

impl Default for Misfire {
    fn default() -> Self {
        Misfire::run_once()
    }
}

impl Misfire {
    fn with(policy: Policy) -> Self {
        Misfire {
            policy,
            grace_ms: DEFAULT_GRACE_MS,
            max_lateness_ms: u64::MAX,
        }
    }

    /// Drop missed fires.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::Misfire;
    ///
    /// // A cache warm-up: after an outage, only the next fire matters.
    /// let policy = Misfire::skip();
    /// assert_ne!(policy, Misfire::default());
    /// ```
    pub fn skip() -> Self {
        Misfire::with(Policy::Skip)
    }

    /// Run once for all the missed fires (coalesce): the run is for the
    /// latest of them. The default.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::Misfire;
    ///
    /// // A nightly report: after three nights down, one report, not three.
    /// assert_eq!(Misfire::run_once(), Misfire::default());
    /// ```
    pub fn run_once() -> Self {
        Misfire::with(Policy::RunOnce)
    }

    /// Run every missed fire, in order, but at most the latest `max` of
    /// them. `max` must be at least 1 (checked at registration).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::Misfire;
    ///
    /// // Hourly billing: every missed hour is billed, up to a day's worth.
    /// let policy = Misfire::run_all(24);
    /// # let _ = policy;
    /// ```
    pub fn run_all(max: u32) -> Self {
        Misfire::with(Policy::RunAll(max))
    }

    /// How late a fire may be claimed and still be on time (default 60 s,
    /// rounded up to whole ms). Keep it above the pool's lease plus
    /// `max_block`, or a fire whose holder died comes back missed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::Misfire;
    ///
    /// // Up to 5 minutes late still counts as on time.
    /// let policy = Misfire::skip().grace(Duration::from_secs(300));
    /// assert_ne!(policy, Misfire::skip());
    /// ```
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace_ms = ceil_ms(grace);
        self
    }

    /// Fires later than this are dropped whatever the policy (default: no
    /// limit; rounded up to whole ms). Must not be shorter than the grace
    /// (checked at registration).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::Misfire;
    ///
    /// // Catch up on missed fires, but none more than 6 hours old.
    /// let policy = Misfire::run_all(10).max_lateness(Duration::from_secs(6 * 3600));
    /// # let _ = policy;
    /// ```
    pub fn max_lateness(mut self, max_lateness: Duration) -> Self {
        self.max_lateness_ms = ceil_ms(max_lateness);
        self
    }

    /// The policy's name, as events report it.
    pub(super) fn name(&self) -> &'static str {
        match self.policy {
            Policy::Skip => "skip",
            Policy::RunOnce => "run_once",
            Policy::RunAll(_) => "run_all",
        }
    }

    /// Refuses what cannot work.
    pub(super) fn check(&self) -> Result<(), DurableError> {
        if self.policy == Policy::RunAll(0) {
            return Err(DurableError::Config(
                "Misfire::run_all(0) would run nothing: use Misfire::skip()".into(),
            ));
        }
        if self.max_lateness_ms < self.grace_ms {
            return Err(DurableError::Config(
                format!(
                    "Misfire: max_lateness ({} ms) is shorter than the grace ({} ms)",
                    self.max_lateness_ms, self.grace_ms
                )
                .into(),
            ));
        }
        Ok(())
    }

    /// The stored form: tag (0 skip, 1 run once, 2 run all), the cap, the
    /// grace and the maximum lateness in ms, big-endian (21 bytes).
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        let (tag, max) = match self.policy {
            Policy::Skip => (0u8, 0u32),
            Policy::RunOnce => (1, 0),
            Policy::RunAll(max) => (2, max),
        };
        out.push(tag);
        out.extend_from_slice(&max.to_be_bytes());
        out.extend_from_slice(&self.grace_ms.to_be_bytes());
        out.extend_from_slice(&self.max_lateness_ms.to_be_bytes());
    }

    /// Reads [`encode`](Self::encode)'s bytes back: the policy and the rest.
    pub(super) fn decode(bytes: &[u8]) -> Option<(Misfire, &[u8])> {
        let (head, rest) = bytes.split_at_checked(21)?;
        let max = u32::from_be_bytes(head[1..5].try_into().ok()?);
        let policy = match head[0] {
            0 => Policy::Skip,
            1 => Policy::RunOnce,
            2 => Policy::RunAll(max),
            _ => return None,
        };
        let misfire = Misfire {
            policy,
            grace_ms: u64::from_be_bytes(head[5..13].try_into().ok()?),
            max_lateness_ms: u64::from_be_bytes(head[13..21].try_into().ok()?),
        };
        Some((misfire, rest))
    }
}

/// The rule's first fire strictly after `after_ms`, in whole ms (rounded
/// up, so never early). `Ok(None)`: the rule never fires again, or not
/// within the store's range (`MAX_MS`, about 285,000 years).
///
/// # Errors
///
/// A description when the rule breaks the [`Schedule`] contract (a time
/// not after `after_ms`) or panics: a user's rule runs on a pool's worker,
/// which must survive it (the schedule is then dead-lettered with this
/// text, as the in-process pool stops a calendar task whose rule panics).
pub(super) fn next_fire(rule: &dyn Schedule, after_ms: u64) -> Result<Option<u64>, String> {
    let after = UNIX_EPOCH + Duration::from_millis(after_ms);
    let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rule.next_after(after)))
        .map_err(|payload| {
            format!(
                "the rule {rule:?} panicked in next_after({}): {}",
                utc(after_ms),
                crate::base::error::panic_message(&*payload)
            )
        })?;
    let Some(at) = next else {
        return Ok(None);
    };
    let ms = at.duration_since(UNIX_EPOCH).map(ceil_ms).unwrap_or(0);
    if at <= after || ms <= after_ms {
        return Err(format!(
            "the rule {rule:?} broke the Schedule contract: next_after({}) returned {}, not after it",
            utc(after_ms),
            time_text(at)
        ));
    }
    Ok((ms < MAX_MS).then_some(ms))
}

/// What a claim of a calendar schedule's oldest pending fire does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    /// Run the claimed fire now.
    Run,
    /// Run nothing now: move the schedule to fire `to` (`None`: the rule
    /// never fires again), dropping `skipped` and folding `coalesced` into
    /// a later run.
    Move {
        to: Option<u64>,
        skipped: Fires,
        coalesced: Fires,
    },
}

/// Decides what a claim at `now` (store ms) does with the fire at
/// `deadline`, the schedule's oldest pending one.
///
/// # Errors
///
/// As for [`next_fire`].
pub(super) fn decide(
    rule: &dyn Schedule,
    misfire: &Misfire,
    deadline: u64,
    now: u64,
) -> Result<Decision, String> {
    // Fires before `missed` are missed; fires before `too_late` are dropped.
    let missed = now.saturating_sub(misfire.grace_ms);
    if deadline >= missed {
        return Ok(Decision::Run);
    }
    let too_late = now.saturating_sub(misfire.max_lateness_ms);
    let mut skipped = Fires::default();
    let mut coalesced = Fires::default();
    // The missed fires that will run (run_once: the latest; run_all: the
    // latest `max`), oldest first.
    let mut kept = VecDeque::new();
    let mut fire = Some(deadline);
    let mut seen = 0;
    while let Some(at) = fire {
        if at >= missed || seen == STEP {
            break;
        }
        seen += 1;
        if at < too_late {
            skipped.push(at);
        } else {
            match misfire.policy {
                Policy::Skip => skipped.push(at),
                Policy::RunOnce => {
                    if let Some(earlier) = kept.pop_back() {
                        coalesced.push(earlier);
                    }
                    kept.push_back(at);
                }
                Policy::RunAll(max) => {
                    kept.push_back(at);
                    if kept.len() > max as usize {
                        skipped.extend(kept.pop_front());
                    }
                }
            }
        }
        fire = next_fire(rule, at)?;
    }
    // `fire` is now the first fire not missed (or the first not yet looked
    // at, when `STEP` cut the look short).
    let to = kept.front().copied().or(fire);
    if to == Some(deadline) {
        return Ok(Decision::Run);
    }
    Ok(Decision::Move {
        to,
        skipped,
        coalesced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    /// Every `every` ms, on the epoch grid.
    #[derive(Debug)]
    struct Every(u64);

    impl Schedule for Every {
        fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
            let ms = after.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
            Some(UNIX_EPOCH + Duration::from_millis((ms / self.0 + 1) * self.0))
        }
    }

    const H: u64 = 3_600_000;
    const MIN: u64 = 60_000;

    fn fires(v: &[u64]) -> Fires {
        let mut f = Fires::default();
        f.extend(v.iter().copied());
        f
    }

    /// Half-hourly fires, a 3 h 5 min outage after the fire at `t0`.
    fn outage(misfire: Misfire) -> Decision {
        let t0 = 1000 * H;
        let rule = Every(30 * MIN);
        decide(&rule, &misfire, t0 + 30 * MIN, t0 + 3 * H + 5 * MIN).unwrap()
    }

    #[test]
    fn on_time_within_grace_runs() {
        let rule = Every(H);
        let m = Misfire::skip();
        assert_eq!(decide(&rule, &m, 5 * H, 5 * H).unwrap(), Decision::Run);
        assert_eq!(
            decide(&rule, &m, 5 * H, 5 * H + MIN).unwrap(),
            Decision::Run
        );
        assert_ne!(
            decide(&rule, &m, 5 * H, 5 * H + MIN + 1).unwrap(),
            Decision::Run
        );
    }

    #[test]
    fn the_three_policies_after_an_outage() {
        let t = |n: u64| 1000 * H + n * 30 * MIN;
        // Missed: t(1)..=t(6), 155 to 5 minutes late; t(7) is the future.
        assert_eq!(
            outage(Misfire::skip()),
            Decision::Move {
                to: Some(t(7)),
                skipped: fires(&[t(1), t(2), t(3), t(4), t(5), t(6)]),
                coalesced: fires(&[]),
            }
        );
        assert_eq!(
            outage(Misfire::run_once()),
            Decision::Move {
                to: Some(t(6)),
                skipped: fires(&[]),
                coalesced: fires(&[t(1), t(2), t(3), t(4), t(5)]),
            }
        );
        assert_eq!(
            outage(Misfire::run_all(3)),
            Decision::Move {
                to: Some(t(4)),
                skipped: fires(&[t(1), t(2), t(3)]),
                coalesced: fires(&[]),
            }
        );
        assert_eq!(outage(Misfire::run_all(6)), Decision::Run);
        // max_lateness 100 min drops t(1) (155 min) and t(2) (125 min).
        let m = Misfire::run_once().max_lateness(Duration::from_millis(100 * MIN));
        assert_eq!(
            outage(m),
            Decision::Move {
                to: Some(t(6)),
                skipped: fires(&[t(1), t(2)]),
                coalesced: fires(&[t(3), t(4), t(5)]),
            }
        );
    }

    #[test]
    fn deciding_again_where_a_decision_moved_runs_it() {
        let rule = Every(30 * MIN);
        let now = 1000 * H + 3 * H + 5 * MIN;
        for m in [Misfire::skip(), Misfire::run_once(), Misfire::run_all(3)] {
            let Decision::Move { to: Some(to), .. } = outage(m) else {
                panic!("moves")
            };
            if to <= now {
                assert_eq!(decide(&rule, &m, to, now + 5).unwrap(), Decision::Run);
            }
        }
    }

    #[test]
    fn a_long_backlog_is_decided_in_bounded_steps() {
        let rule = Every(1000);
        let now = (3 * STEP + 10) * 1000;
        let mut at = 1000;
        let mut skipped = 0;
        let mut steps = 0;
        while let Decision::Move {
            to: Some(to),
            skipped: s,
            ..
        } = decide(&rule, &Misfire::skip(), at, now).unwrap()
        {
            assert!(s.count <= STEP);
            skipped += s.count;
            at = to;
            steps += 1;
        }
        assert_eq!(steps, 3);
        assert_eq!(at, now - DEFAULT_GRACE_MS, "first fire within the grace");
        assert_eq!(skipped, (now - DEFAULT_GRACE_MS) / 1000 - 1);
    }

    #[derive(Debug)]
    struct Broken;

    impl Schedule for Broken {
        fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
            Some(after)
        }
    }

    #[test]
    fn a_rule_that_breaks_the_contract_is_an_error_not_a_loop() {
        let err = next_fire(&Broken, 5000).unwrap_err();
        assert!(err.contains("broke the Schedule contract"), "{err}");
        assert!(decide(&Broken, &Misfire::skip(), 0, 10 * H).is_err());
    }

    #[derive(Debug)]
    struct Panics;

    impl Schedule for Panics {
        fn next_after(&self, _: SystemTime) -> Option<SystemTime> {
            panic!("no fire for you")
        }
    }

    #[test]
    fn a_rule_that_panics_is_an_error_not_a_dead_worker() {
        let err = next_fire(&Panics, 5000).unwrap_err();
        assert!(
            err.contains("panicked") && err.contains("no fire for you"),
            "{err}"
        );
        assert!(decide(&Panics, &Misfire::run_once(), 0, 10 * H).is_err());
    }

    #[test]
    fn checks_and_the_stored_form() {
        assert!(Misfire::run_all(0).check().is_err());
        let short = Misfire::skip()
            .grace(Duration::from_secs(10))
            .max_lateness(Duration::from_secs(5));
        assert!(short.check().is_err());
        let m = Misfire::run_all(7)
            .grace(Duration::from_millis(1500))
            .max_lateness(Duration::from_secs(9));
        let mut bytes = Vec::new();
        m.encode(&mut bytes);
        bytes.push(42);
        assert_eq!(Misfire::decode(&bytes), Some((m, &[42u8][..])));
        assert_eq!(Misfire::decode(&bytes[..20]), None);
    }
}
