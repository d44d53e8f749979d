//! The changing verbs: requeue, purge, cancel, pause, resume, fire. Each
//! is recorded in the store's audit trail under `--by`.
//!
//! Invariant: a bulk change (no ids given) first counts its matches with
//! a dry run, then asks (at a terminal) or needs `--yes`; the progress bar
//! is drawn on stderr at a terminal only.

use std::io::{BufRead, IsTerminal, Write};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use schedpool_cli::{BulkAction, Error, ErrorKind, State, Store};

use crate::args::BulkArgs;
use crate::output::Out;
use crate::read::filter;

#[derive(Serialize)]
struct Moved<'a> {
    action: &'a str,
    changed: Vec<String>,
    not_found: Vec<String>,
}

pub(crate) fn bulk(
    store: &Store,
    out: Out,
    action: BulkAction,
    args: &BulkArgs,
    by: &str,
) -> Result<(), Error> {
    if !args.ids.is_empty() {
        if args.all || args.narrow.any() || args.dry_run {
            return Err(Error::new(
                ErrorKind::Usage,
                "give either ids, or --all / --kind / --prefix / --from / --until (with --dry-run), not both",
            ));
        }
        return by_ids(store, out, action, &args.ids, by);
    }
    if !args.all && !args.narrow.any() {
        return Err(Error::new(
            ErrorKind::Usage,
            format!(
                "say which dead letters to {}: their ids, or --all (narrowed by --kind, --prefix, --from, --until)",
                action.name()
            ),
        ));
    }
    let f = filter(store, State::Dead, &args.narrow)?;
    let dry = store.bulk(action, &f, args.max, true, by, &mut |_| {})?;
    if args.dry_run || dry.matched == 0 {
        out.emit(&dry, || {
            println!(
                "{} would {} {} dead letters ({})",
                if dry.matched == 0 {
                    "nothing:"
                } else {
                    "dry run:"
                },
                action.name(),
                dry.matched,
                f.describe()
            )
        });
        return Ok(());
    }
    if !args.yes {
        confirm(action, dry.matched, &f.describe())?;
    }
    let bar = if out.json || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new(dry.matched as u64);
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_message(action.name());
        bar
    };
    let result = store.bulk(action, &f, args.max, false, by, &mut |done| {
        bar.set_position(done as u64)
    });
    bar.finish_and_clear();
    let done = result?;
    out.emit(&done, || {
        let verb = if action == BulkAction::Requeue {
            "requeued"
        } else {
            "purged"
        };
        println!(
            "{verb} {} of {} matching dead letters ({})",
            done.changed, done.matched, done.filter
        );
        if done.changed < done.matched {
            println!("the rest were moved by someone else meanwhile (each moves once)");
        }
    });
    Ok(())
}

/// Asks at a terminal; refuses elsewhere.
fn confirm(action: BulkAction, n: usize, what: &str) -> Result<(), Error> {
    if !std::io::stdin().is_terminal() {
        return Err(Error::new(
            ErrorKind::Refused,
            format!(
                "refusing to {} {n} dead letters without --yes (not at a terminal to ask): \
                 add --yes, or --dry-run to count them",
                action.name()
            ),
        ));
    }
    eprint!("{} {n} dead letters ({what})? [y/N] ", action.name());
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    if matches!(line.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Refused,
            "not confirmed: nothing changed",
        ))
    }
}

fn by_ids(
    store: &Store,
    out: Out,
    action: BulkAction,
    ids: &[String],
    by: &str,
) -> Result<(), Error> {
    let mut report = Moved {
        action: action.name(),
        changed: Vec::new(),
        not_found: Vec::new(),
    };
    let mut first_missing = None;
    for id in ids {
        let r = match action {
            BulkAction::Requeue => store.requeue(id, by),
            BulkAction::Purge => store.purge(id, by),
        };
        match r {
            Ok(()) => report.changed.push(id.clone()),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                report.not_found.push(id.clone());
                first_missing.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    out.emit(&report, || {
        for id in &report.changed {
            println!(
                "{} {id}",
                if action == BulkAction::Requeue {
                    "requeued"
                } else {
                    "purged"
                }
            );
        }
    });
    // The not-found ones make the exit code 3, after the others were done.
    first_missing.map_or(Ok(()), Err)
}

#[derive(Serialize)]
struct Cancelled {
    id: String,
    was: State,
}

pub(crate) fn cancel(store: &Store, out: Out, ids: &[String], by: &str) -> Result<(), Error> {
    let mut done = Vec::new();
    let mut first_missing = None;
    for id in ids {
        match store.cancel(id, by) {
            Ok(was) => done.push(Cancelled {
                id: id.clone(),
                was,
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                first_missing.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    out.emit(&done, || {
        for c in &done {
            println!("cancelled {} (it was {})", c.id, c.was.name());
        }
    });
    first_missing.map_or(Ok(()), Err)
}

#[derive(Serialize)]
struct Toggled<'a> {
    kind: &'a str,
    paused: bool,
    changed: bool,
}

pub(crate) fn pause(
    store: &Store,
    out: Out,
    kind: &str,
    pause: bool,
    by: &str,
) -> Result<(), Error> {
    let changed = if pause {
        store.pause(kind, by)?
    } else {
        store.resume(kind, by)?
    };
    out.emit(
        &Toggled {
            kind,
            paused: pause,
            changed,
        },
        || match (pause, changed) {
            (true, true) => {
                println!("paused {kind}: every process's claims skip its items until it is resumed")
            }
            (true, false) => println!("{kind} was paused already"),
            (false, true) => println!("resumed {kind}"),
            (false, false) => println!("{kind} was not paused"),
        },
    );
    Ok(())
}

pub(crate) fn fire(store: &Store, out: Out, name: &str, by: &str) -> Result<(), Error> {
    let run = store.fire(name, by)?;
    out.emit(&serde_json::json!({ "fired": name, "item": run }), || {
        println!("fired {name}: its run {run} is due now (its regular fires go on)")
    });
    Ok(())
}
