//! The reading verbs: status, ls, show, dead, schedules, audit.

use std::io::Write;

use comfy_table::Cell;
use serde::Serialize;

use schedpool_cli::payload::show as show_payload;
use schedpool_cli::store::{Filter, Page};
use schedpool_cli::time::{relative, span, utc};
use schedpool_cli::{Error, State, Store};

use crate::args::{Narrow, Paging, StateArg};
use crate::output::{num, short, table, Out};

/// The filter the arguments ask for; times relative to the store's now.
pub(crate) fn filter(store: &Store, state: State, narrow: &Narrow) -> Result<Filter, Error> {
    let now = if narrow.from.is_some() || narrow.until.is_some() {
        store.overview()?.now_ms
    } else {
        0
    };
    let when = |t: &Option<String>| {
        t.as_deref()
            .map(|t| schedpool_cli::time::parse_when(t, now))
            .transpose()
    };
    Ok(Filter {
        state: Some(state),
        kind: narrow.kind.clone(),
        id_prefix: narrow.prefix.clone(),
        from_ms: when(&narrow.from)?,
        until_ms: when(&narrow.until)?,
    })
}

pub(crate) fn state_of(arg: StateArg) -> State {
    match arg {
        StateArg::Pending => State::Pending,
        StateArg::InFlight => State::InFlight,
        StateArg::Dead => State::Dead,
    }
}

pub(crate) fn status(store: &Store, out: Out) -> Result<(), Error> {
    let o = store.overview()?;
    out.emit(&o, || {
        println!("{}", store.label());
        println!(
            "pending {}, in flight {}, dead {}",
            o.pending, o.in_flight, o.dead
        );
        match o.next_due_ms {
            Some(t) => println!("next deadline {} ({})", utc(t), relative(t, o.now_ms)),
            None => println!("next deadline: none pending"),
        }
        match o.lag_ms {
            Some(l) => println!("lag: the most overdue pending item is {} late", span(l)),
            None => println!("lag: nothing overdue"),
        }
        for p in &o.paused {
            println!(
                "paused: {} (by {}, {})",
                p.kind,
                p.by,
                relative(p.at_ms, o.now_ms)
            );
        }
        if !o.kinds.is_empty() {
            let mut t = table(&["kind", "pending", "in flight", "dead", "claims"]);
            for k in &o.kinds {
                t.add_row(vec![
                    Cell::new(&k.kind),
                    num(k.pending),
                    num(k.in_flight),
                    num(k.dead),
                    Cell::new(if k.paused { "paused" } else { "running" }),
                ]);
            }
            println!("{t}");
        }
    });
    Ok(())
}

fn print_page(store: &Store, page: &Page, dead_errors: bool) -> Result<(), Error> {
    if page.items.is_empty() {
        println!("no item matches");
        return Ok(());
    }
    let now = store.overview()?.now_ms;
    let mut header = vec!["id", "kind", "state", "time (UTC)", "", "attempts"];
    if dead_errors {
        header.push("last error");
    }
    let mut t = table(&header);
    for it in &page.items {
        let mut row = vec![
            Cell::new(&it.id),
            Cell::new(&it.kind),
            Cell::new(it.state.name()),
            Cell::new(utc(it.at_ms)),
            Cell::new(relative(it.at_ms, now)),
            num(it.attempts),
        ];
        if dead_errors {
            let err = store.item(&it.id).ok().and_then(|d| d.last_error);
            row.push(Cell::new(short(err.as_deref().unwrap_or(""), 60)));
        }
        t.add_row(row);
    }
    println!("{t}");
    if let Some(c) = &page.next_cursor {
        println!("more: --cursor {c}");
    }
    Ok(())
}

pub(crate) fn ls(
    store: &Store,
    out: Out,
    state: State,
    narrow: &Narrow,
    paging: &Paging,
) -> Result<(), Error> {
    let f = filter(store, state, narrow)?;
    let page = store.list(&f, paging.cursor.as_deref(), paging.limit.into())?;
    if out.json {
        out.emit(&page, || {});
        return Ok(());
    }
    print_page(store, &page, state == State::Dead)
}

#[derive(Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    item: &'a schedpool_cli::store::ItemDetail,
    payload: schedpool_cli::payload::Shown,
}

pub(crate) fn show(store: &Store, out: Out, id: &str, raw: bool) -> Result<(), Error> {
    let d = store.item(id)?;
    if raw {
        std::io::stdout().write_all(&d.payload).map_err(|e| {
            Error::new(
                schedpool_cli::ErrorKind::Failed,
                format!("writing the payload: {e}"),
            )
        })?;
        return Ok(());
    }
    let now = store.overview()?.now_ms;
    let shown = show_payload(&d.payload, schedpool_cli::payload::DEFAULT_CAP);
    out.emit(
        &Shown {
            item: &d,
            payload: shown.clone(),
        },
        || {
            let mut t = table(&["", ""]);
            t.add_row(vec!["id", &d.item.id]);
            t.add_row(vec!["kind", &d.item.kind]);
            t.add_row(vec!["state", d.item.state.name()]);
            t.add_row(vec![
                "due".to_string(),
                format!("{} ({})", utc(d.due_ms), relative(d.due_ms, now)),
            ]);
            t.add_row(vec!["deadline".to_string(), utc(d.item.deadline_ms)]);
            t.add_row(vec!["attempts".to_string(), d.item.attempts.to_string()]);
            t.add_row(vec![
                "last error",
                d.last_error.as_deref().unwrap_or("none recorded"),
            ]);
            let lease = match d.lease {
                Some(l) => format!(
                    "token {}, ends {} ({})",
                    l.token,
                    utc(l.until_ms),
                    relative(l.until_ms, now)
                ),
                None => "not leased".to_string(),
            };
            t.add_row(vec!["lease".to_string(), lease]);
            if let Some(u) = &d.unreadable {
                t.add_row(vec!["unreadable", u]);
            }
            let mut info = format!("{} bytes, {:?}", shown.size, shown.encoding).to_lowercase();
            if let Some(n) = shown.as_u64 {
                info.push_str(&format!(" (as a u64: {n})"));
            }
            if shown.truncated {
                info.push_str(", cut (--raw for all of it)");
            }
            t.add_row(vec!["payload".to_string(), info]);
            println!("{t}");
            println!("{}", shown.text);
        },
    );
    Ok(())
}

pub(crate) fn dead(store: &Store, out: Out, narrow: &Narrow, paging: &Paging) -> Result<(), Error> {
    ls(store, out, State::Dead, narrow, paging)
}

pub(crate) fn schedules(store: &Store, out: Out) -> Result<(), Error> {
    let list = store.schedules()?;
    let now = store.overview()?.now_ms;
    out.emit(&list, || {
        if list.is_empty() {
            println!("no durable calendar schedule in this store");
            return;
        }
        let mut t = table(&[
            "name",
            "kind",
            "rule",
            "next fire (UTC)",
            "",
            "misfire",
            "state",
            "attempts",
        ]);
        for s in &list {
            t.add_row(vec![
                s.name.clone(),
                s.kind.clone(),
                short(&s.rule, 50),
                utc(s.next_ms),
                relative(s.next_ms, now),
                s.misfire.clone(),
                s.state.name().to_string(),
                s.attempts.to_string(),
            ]);
        }
        println!("{t}");
    });
    Ok(())
}

pub(crate) fn audit(store: &Store, out: Out, limit: usize) -> Result<(), Error> {
    let rows = store.audit(limit)?;
    out.emit(&rows, || {
        if rows.is_empty() {
            println!("no change recorded yet");
            return;
        }
        let mut t = table(&["#", "when (UTC)", "by", "action", "target", "items"]);
        for a in &rows {
            t.add_row(vec![
                num(a.seq),
                Cell::new(utc(a.at_ms)),
                Cell::new(&a.by),
                Cell::new(&a.action),
                Cell::new(&a.target),
                num(a.count),
            ]);
        }
        println!("{t}");
    });
    Ok(())
}
