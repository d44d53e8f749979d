//! The console's item lists: pending, in-flight and dead items with their
//! filters and a cursor, and the dead letters' requeue and purge forms
//! (one, the ticked ones, or every match, each through `/confirm`).
//!
//! Invariant: a list only reads; its buttons post to `/confirm`.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use axum::Extension;
use maud::{html, Markup};

use super::form::{encode, Fields};
use super::layout::csrf;
use super::pages::{error_page, item_link, ok, run, when};
use super::security::Ctx;
use super::{Console, Shared};
use crate::error::{Error, ErrorKind};
use crate::store::{Filter, Item, State as ItemState};

/// The rows a list page shows.
const PAGE: usize = 50;

/// `text` cut to `max` characters, with `…` when cut.
fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

/// Reads a filter from a query string; times relative to `now_ms`.
fn filter_of(q: &Fields, now_ms: u64) -> Result<Filter, Error> {
    let state = match q.get("state") {
        None => None,
        Some(s) => Some(ItemState::parse(s).ok_or_else(|| {
            Error::new(
                ErrorKind::Usage,
                format!("no state {s:?}: pending, in-flight or dead"),
            )
        })?),
    };
    Ok(Filter {
        state,
        kind: q.get("kind").map(str::to_string),
        id_prefix: q.get("prefix").map(str::to_string),
        from_ms: q
            .get("from")
            .map(|t| crate::time::parse_when(t, now_ms))
            .transpose()?,
        until_ms: q
            .get("until")
            .map(|t| crate::time::parse_when(t, now_ms))
            .transpose()?,
    })
}

fn filter_form(console: &Console, route: &str, q: &Fields, states: bool) -> Markup {
    let v = |n: &str| q.get(n).unwrap_or("").to_string();
    html! {
        form.filters method="get" action=(console.config.path(route)) {
            @if states {
                label { "state" select name="state" {
                    @for s in ItemState::ALL {
                        option value=(s.name()) selected[q.get("state").unwrap_or("pending") == s.name()] { (s.name()) }
                    }
                } }
            }
            label { "kind" input name="kind" value=(v("kind")); }
            label { "id prefix" input name="prefix" value=(v("prefix")); }
            label { "from" input name="from" placeholder="-1h or RFC 3339" value=(v("from")); }
            label { "until" input name="until" placeholder="now" value=(v("until")); }
            button type="submit" { "Filter" }
        }
    }
}

/// A table of items; with `pick`, a dead-letter table: a tick box and
/// requeue and purge buttons a row, and the rows' last errors from `errors`.
fn items_table(
    console: &Console,
    items: &[Item],
    now_ms: u64,
    pick: Option<&Ctx>,
    errors: &[Option<String>],
) -> Markup {
    html! {
        table #items {
            thead { tr {
                @if pick.is_some() { th {} }
                th { "id" } th { "kind" } th { "state" } th { "time" } th { "deadline" } th.num { "attempts" }
                @if pick.is_some() { th { "last error" } th {} }
            } }
            tbody {
                @for (i, it) in items.iter().enumerate() {
                    tr data-id=(it.id) {
                        @if pick.is_some() { td { input type="checkbox" name="id" value=(it.id); } }
                        td.id { a href=(item_link(console, &it.id)) { (it.id) } }
                        td.mono { (it.kind) }
                        td { (it.state.name()) }
                        td { (when(it.at_ms, now_ms)) }
                        td { (when(it.deadline_ms, now_ms)) }
                        td.num { (it.attempts) }
                        @if pick.is_some() {
                            td.mono.error { (errors.get(i).cloned().flatten().map(|e| short(&e, 80)).unwrap_or_default()) }
                            td {
                                button.secondary type="submit" name="one" value=(format!("requeue {}", it.id)) { "Requeue" }
                                " "
                                button.secondary type="submit" name="one" value=(format!("purge {}", it.id)) { "Purge" }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn next_link(console: &Console, route: &str, q: &Fields, cursor: &Option<String>) -> Markup {
    let Some(cursor) = cursor else {
        return html! {};
    };
    let mut query: Vec<String> = q
        .pairs()
        .iter()
        .filter(|(k, _)| k != "cursor")
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    query.push(format!("cursor={}", encode(cursor)));
    html! { p { a #next-page href=(console.config.path(&format!("{route}?{}", query.join("&")))) { "Next page →" } } }
}

/// `GET /items`: a page of items with filters.
pub(crate) async fn items(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    RawQuery(query): RawQuery,
) -> Response {
    let q = Fields::parse(query.unwrap_or_default().as_bytes());
    let qc = q.clone();
    let got = run(&console, move |s| {
        let now = s.overview()?.now_ms;
        let filter = filter_of(&qc, now)?;
        let page = s.list(&filter, qc.get("cursor"), PAGE)?;
        Ok((now, filter, page))
    })
    .await;
    let (now, filter, page) = match got {
        Ok(x) => x,
        Err(e) => return error_page(&console, &ctx, &e),
    };
    let title = format!("Items: {}", filter.describe());
    let body = html! {
        (filter_form(&console, "/items", &q, true))
        @if page.items.is_empty() { p.muted #empty { "No item matches." } } @else { (items_table(&console, &page.items, now, None, &[])) }
        (next_link(&console, "/items", &q, &page.next_cursor))
    };
    ok(&console, &ctx, &title, body)
}

/// `GET /dead`: dead letters with requeue and purge, one, ticked or all matching.
pub(crate) async fn dead(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    RawQuery(query): RawQuery,
) -> Response {
    let q = Fields::parse(query.unwrap_or_default().as_bytes());
    let qc = q.clone();
    let got = run(&console, move |s| {
        let now = s.overview()?.now_ms;
        let filter = Filter {
            state: Some(ItemState::Dead),
            ..filter_of(&qc, now)?
        };
        let page = s.list(&filter, qc.get("cursor"), PAGE)?;
        // Each row's last error (an item moved meanwhile shows none).
        let errors = page
            .items
            .iter()
            .map(|it| s.item(&it.id).ok().and_then(|d| d.last_error))
            .collect::<Vec<_>>();
        Ok((now, filter, page, errors))
    })
    .await;
    let (now, filter, page, errors) = match got {
        Ok(x) => x,
        Err(e) => return error_page(&console, &ctx, &e),
    };
    let p = |r: &str| console.config.path(r);
    let keep = |name: &'static str, value: &Option<String>| {
        html! {
            @if let Some(v) = value { input type="hidden" name=(name) value=(v); }
        }
    };
    let from = q.get("from").map(str::to_string);
    let until = q.get("until").map(str::to_string);
    let body = html! {
        (filter_form(&console, "/dead", &q, false))
        @if page.items.is_empty() {
            p.muted #empty { "No dead letter matches." }
        } @else {
            form method="post" action=(p("/confirm")) {
                (csrf(&ctx))
                (items_table(&console, &page.items, now, Some(&ctx), &errors))
                div.actions {
                    button type="submit" name="action" value="requeue" { "Requeue ticked" }
                    button.danger type="submit" name="action" value="purge" { "Purge ticked" }
                }
            }
            (next_link(&console, "/dead", &q, &page.next_cursor))
            h2 { "Every dead letter matching the filter" }
            form.filters method="post" action=(p("/confirm")) {
                (csrf(&ctx))
                input type="hidden" name="scope" value="filter";
                (keep("kind", &filter.kind))
                (keep("prefix", &filter.id_prefix))
                (keep("from", &from))
                (keep("until", &until))
                label { "at most" input name="max" value="1000" size="6"; }
                button type="submit" name="action" value="requeue" { "Requeue all matching…" }
                button.danger type="submit" name="action" value="purge" { "Purge all matching…" }
            }
        }
    };
    ok(&console, &ctx, "Dead letters", body)
}
