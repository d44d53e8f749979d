//! What a worker does with a claimed calendar schedule: run the fire, hand
//! it to another process, or persist a misfire decision; and where the
//! schedule goes after a run.
//!
//! Below `runner.rs`, which settles what this file plans (and counts it).
//!
//! Invariants:
//!
//! - A fire runs only in a process holding an [`Entry`] whose envelope is
//!   the stored one: the rule is code, so a process that did not register
//!   this very definition cannot compute the next fire, and defers.
//! - Every move of the schedule (after a run, or a misfire decision) is one
//!   `ack_and_reschedule` by the holder of the claim: the fire it settles
//!   and the next fire are written together, fenced by the claim's token,
//!   so a crash neither loses the schedule nor runs a settled fire again.
//! - A schedule whose rule never fires again is *parked* at `MAX_MS` rather
//!   than removed: a registration racing its last fire then finds it
//!   (`Exists`) instead of starting it over.

use std::sync::Arc;
use std::time::Duration;

use super::calendar_def::{self, Entry};
use super::fires::{utc, Fires};
use super::misfire::{self, Decision};
use crate::durable::store::backend::{Repeat, MAX_MS};

/// A fire to run: the handler of `kind` on `payload`.
#[derive(Debug)]
pub(super) struct Fire<'a> {
    pub(super) kind: &'a str,
    pub(super) payload: &'a [u8],
    pub(super) entry: Arc<Entry>,
}

/// What the runner does with a claimed calendar schedule instead of a run.
#[derive(Debug)]
pub(super) enum Plan {
    /// This process cannot run it: give it back for another, saying why.
    Defer(String),
    /// Persist a misfire decision, and report it.
    Move(Box<Decided>),
    /// Unreadable, or the rule broke its contract: dead-letter it.
    Broken(String),
}

/// A misfire decision to persist (with `repeat`) and report.
#[derive(Debug)]
pub(super) struct Decided {
    pub(super) repeat: Repeat,
    pub(super) policy: &'static str,
    pub(super) skipped: Fires,
    pub(super) coalesced: Fires,
    pub(super) report: String,
}

/// Plans the claim of calendar schedule `id` (stored `envelope`, its
/// `record`), fire `deadline`, claimed at `now` (store ms): the fire to
/// run, or what to do instead. `entry` is this process's registration of
/// `id`, if any.
pub(super) fn plan<'a>(
    id: &str,
    entry: Option<Arc<Entry>>,
    envelope: &[u8],
    record: &'a [u8],
    deadline: u64,
    now: u64,
) -> Result<Fire<'a>, Plan> {
    let def = calendar_def::read(record).map_err(|err| Plan::Broken(err.to_string()))?;
    let Some(entry) = entry else {
        return Err(Plan::Defer(format!(
            "calendar schedule {id:?} is not registered in this process"
        )));
    };
    if entry.envelope != envelope {
        return Err(Plan::Defer(format!(
            "calendar schedule {id:?}: this process registered another definition ({})",
            calendar_def::differences(envelope, &entry.envelope)
        )));
    }
    match misfire::decide(&*entry.rule, &def.misfire, deadline, now) {
        Err(why) => Err(Plan::Broken(why)),
        Ok(Decision::Run) => Ok(Fire {
            kind: def.kind,
            payload: def.payload,
            entry,
        }),
        Ok(Decision::Move {
            to,
            skipped,
            coalesced,
        }) => {
            let next = to.map_or_else(|| "never (the rule ends)".into(), utc);
            let report = match (skipped.count, coalesced.count) {
                (_, 0) => format!("missed fires skipped: {skipped}; next fire {next}"),
                (0, _) => format!("missed fires coalesced into the run for {next}: {coalesced}"),
                _ => format!(
                    "missed fires skipped: {skipped}; coalesced into the run for {next}: {coalesced}"
                ),
            };
            Err(Plan::Move(Box::new(Decided {
                repeat: move_to(deadline, to),
                policy: def.misfire.name(),
                skipped,
                coalesced,
                report,
            })))
        }
    }
}

/// Where the schedule goes after the fire at `deadline` ran: its next fire,
/// or parked when the rule ends.
///
/// # Errors
///
/// The rule broke its contract.
pub(super) fn after_run(entry: &Entry, deadline: u64) -> Result<Repeat, String> {
    Ok(move_to(
        deadline,
        misfire::next_fire(&*entry.rule, deadline)?,
    ))
}

/// The reschedule that moves an item at `deadline` to `to` (`None`: park it
/// at `MAX_MS`). A fixed rate adds the step to the stored deadline, exactly.
fn move_to(deadline: u64, to: Option<u64>) -> Repeat {
    let to = to.unwrap_or(MAX_MS);
    Repeat::FixedRate(Duration::from_millis(to.saturating_sub(deadline)))
}
