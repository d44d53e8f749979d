//! The console's reads but the lists (`lists.rs`): the overview, an
//! item's page, schedules, the audit trail and the login form, and the
//! helpers every page uses.
//!
//! Invariant: a page only reads; every button on it posts to `/confirm`
//! (which shows what would change) or, for pause and resume, to `/apply`.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use maud::{html, Markup};

use super::chart::{line_chart, Series};
use super::form::{encode, Fields};
use super::layout::{csrf, page};
use super::security::Ctx;
use super::{Console, Shared};
use crate::error::{Error, ErrorKind};
use crate::payload;
use crate::store::{State as ItemState, Store};
use crate::time::{relative, span, utc};

/// Runs a blocking store call off the async threads.
pub(crate) async fn run<T: Send + 'static>(
    console: &Shared,
    f: impl FnOnce(&Store) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let store = console.store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .unwrap_or_else(|e| {
            Err(Error::new(
                ErrorKind::Failed,
                format!("the store call failed: {e}"),
            ))
        })
}

/// An error's page, with the status its kind maps to.
pub(crate) fn error_page(console: &Console, ctx: &Ctx, err: &Error) -> Response {
    let status = match err.kind() {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Usage => StatusCode::BAD_REQUEST,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Refused => StatusCode::FORBIDDEN,
        ErrorKind::Failed => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let body = html! { p.notice.bad #error { (err.message()) } };
    (status, page(console, ctx, "Error", body)).into_response()
}

pub(super) fn ok(console: &Console, ctx: &Ctx, title: &str, body: Markup) -> Response {
    page(console, ctx, title, body).into_response()
}

/// A time cell: relative to now, the UTC time as its title.
pub(super) fn when(at_ms: u64, now_ms: u64) -> Markup {
    html! { span title=(utc(at_ms)) { (relative(at_ms, now_ms)) } }
}

/// The link to an item's page.
pub(crate) fn item_link(console: &Console, id: &str) -> String {
    console.config.path(&format!("/item?id={}", encode(id)))
}

/// `GET /`: totals, kinds with pause and resume, the charts.
pub(crate) async fn overview(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    let o = match run(&console, |s| s.overview()).await {
        Ok(o) => o,
        Err(e) => return error_page(&console, &ctx, &e),
    };
    let (samples, sample_error) = console.history.read();
    let counts = |f: fn(&super::sampler::Sample) -> usize| {
        samples
            .iter()
            .map(|s| (s.at_ms, f(s) as f64))
            .collect::<Vec<_>>()
    };
    let count_chart = line_chart(
        "chart-counts",
        "Items by state",
        &[
            Series {
                label: "pending",
                color: "#2456a6",
                points: counts(|s| s.pending),
            },
            Series {
                label: "in flight",
                color: "#d9822b",
                points: counts(|s| s.in_flight),
            },
            Series {
                label: "dead",
                color: "#b3261e",
                points: counts(|s| s.dead),
            },
        ],
        4.0,
        |v| format!("{v:.0}"),
    );
    let lag_chart = line_chart(
        "chart-lag",
        "Lag: how late the most overdue pending item is",
        &[Series {
            label: "lag",
            color: "#6b3fa0",
            points: samples.iter().map(|s| (s.at_ms, s.lag_ms as f64)).collect(),
        }],
        1000.0,
        |v| span(v as u64),
    );
    let p = |r: &str| console.config.path(r);
    let body = html! {
        div.facts {
            a.fact href=(p("/items?state=pending")) { b #count-pending { (o.pending) } span { "pending" } }
            a.fact href=(p("/items?state=in-flight")) { b #count-in-flight { (o.in_flight) } span { "in flight" } }
            a.fact href=(p("/dead")) { b #count-dead { (o.dead) } span { "dead" } }
            div.fact {
                b #next-due { @match o.next_due_ms { Some(t) => (when(t, o.now_ms)), None => "none" } }
                span { "next deadline" }
            }
            div.fact {
                b #lag { @match o.lag_ms { Some(l) => (span(l)), None => "none due" } }
                span { "lag (oldest overdue)" }
            }
        }
        @if let Some(e) = sample_error {
            p.notice.bad { "The last sample failed: " (e) }
        }
        h2 { "Kinds" }
        @if o.kinds.is_empty() {
            p.muted { "No items." }
        } @else {
            table #kinds {
                thead { tr { th { "kind" } th.num { "pending" } th.num { "in flight" } th.num { "dead" } th { "claims" } th {} } }
                tbody {
                    @for k in &o.kinds {
                        tr data-kind=(k.kind) {
                            td.mono {
                                a href=(p(&format!("/items?state=pending&kind={}", encode(&k.kind)))) {
                                    @if k.kind.is_empty() { em { "(queue items)" } } @else { (k.kind) }
                                }
                            }
                            td.num { (k.pending) }
                            td.num { (k.in_flight) }
                            td.num { (k.dead) }
                            td { @if k.paused { span.paused { "paused" } } @else { "running" } }
                            td {
                                form.inline method="post" action=(p("/apply")) {
                                    (csrf(&ctx))
                                    input type="hidden" name="kind" value=(k.kind);
                                    @if k.paused {
                                        input type="hidden" name="action" value="resume";
                                        button.secondary type="submit" { "Resume" }
                                    } @else {
                                        input type="hidden" name="action" value="pause";
                                        button.secondary type="submit" { "Pause" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if !o.paused.is_empty() {
            p.muted {
                "Paused: "
                @for (i, k) in o.paused.iter().enumerate() {
                    @if i > 0 { ", " }
                    span.mono { (k.kind) } " by " (k.by) " " (when(k.at_ms, o.now_ms))
                }
            }
        }
        h2 { "Over time" }
        p.muted { "Sampled by this console every " (span(console.config.sample_every.as_millis() as u64)) ", kept in memory." }
        div.charts { (count_chart) (lag_chart) }
    };
    ok(&console, &ctx, "Overview", body)
}

/// `GET /item?id=`: one item in full, its payload decoded and capped.
pub(crate) async fn item(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    RawQuery(query): RawQuery,
) -> Response {
    let q = Fields::parse(query.unwrap_or_default().as_bytes());
    let Some(id) = q.all("id").first().map(|s| s.to_string()) else {
        return error_page(
            &console,
            &ctx,
            &Error::new(ErrorKind::Usage, "give the item's id: /item?id=…"),
        );
    };
    let idc = id.clone();
    let got = run(&console, move |s| Ok((s.overview()?.now_ms, s.item(&idc)?))).await;
    let (now, d) = match got {
        Ok(x) => x,
        Err(e) => return error_page(&console, &ctx, &e),
    };
    let shown = payload::show(&d.payload, console.config.payload_cap);
    let p = |r: &str| console.config.path(r);
    let action = |verb: &str, label: &str, class: &str| {
        html! {
            form.inline method="post" action=(p("/confirm")) {
                (csrf(&ctx))
                input type="hidden" name="action" value=(verb);
                input type="hidden" name="id" value=(d.item.id);
                button class=(class) type="submit" id=(format!("do-{verb}")) { (label) }
            }
        }
    };
    let body = html! {
        dl.item {
            dt { "id" } dd.mono #item-id { (d.item.id) }
            dt { "kind" } dd.mono { (d.item.kind) }
            dt { "state" } dd #item-state { (d.item.state.name()) }
            dt { "due" } dd { (when(d.due_ms, now)) " · " (utc(d.due_ms)) }
            dt { "deadline" } dd { (utc(d.item.deadline_ms)) }
            dt { "attempts" } dd #item-attempts { (d.item.attempts) }
            dt { "last error" } dd.mono #item-error { @match &d.last_error { Some(e) => (e), None => span.muted { "none recorded" } } }
            dt { "lease" } dd {
                @match d.lease {
                    Some(l) => { "token " span.mono { (l.token) } ", ends " (when(l.until_ms, now)) " (the store records the claim's token, not the process)" },
                    None => span.muted { "not leased" },
                }
            }
            @if let Some(u) = &d.unreadable { dt { "unreadable" } dd.notice.bad { (u) } }
        }
        div.actions {
            @match d.item.state {
                ItemState::Dead => { (action("requeue", "Requeue", "")) (action("purge", "Purge", "danger")) },
                _ => (action("cancel", "Cancel", "danger")),
            }
        }
        h2 { "Payload" }
        p.muted #payload-info {
            (shown.size) " bytes, shown as " (format!("{:?}", shown.encoding).to_lowercase())
            @if let Some(n) = shown.as_u64 { " (as a u64: " span.mono { (n) } ")" }
            @if shown.truncated { " · cut at " (console.config.payload_cap) " bytes" }
        }
        pre.payload #payload { (shown.text) }
    };
    ok(&console, &ctx, &format!("Item {id}"), body)
}

/// `GET /schedules`: calendar schedules with "fire now".
pub(crate) async fn schedules(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    let got = run(&console, |s| Ok((s.overview()?.now_ms, s.schedules()?))).await;
    let (now, list) = match got {
        Ok(x) => x,
        Err(e) => return error_page(&console, &ctx, &e),
    };
    let p = |r: &str| console.config.path(r);
    let body = html! {
        @if list.is_empty() {
            p.muted { "No durable calendar schedule in this store." }
        } @else {
            table #schedules {
                thead { tr { th { "name" } th { "kind" } th { "rule" } th { "next fire" } th { "misfire" } th { "state" } th.num { "attempts" } th {} } }
                tbody {
                    @for s in &list {
                        tr {
                            td.mono { (s.name) }
                            td.mono { (s.kind) }
                            td.mono { (s.rule) }
                            td { (when(s.next_ms, now)) }
                            td { (s.misfire) }
                            td { (s.state.name()) }
                            td.num { (s.attempts) }
                            td {
                                form.inline method="post" action=(p("/confirm")) {
                                    (csrf(&ctx))
                                    input type="hidden" name="action" value="fire";
                                    input type="hidden" name="name" value=(s.name);
                                    button type="submit" { "Fire now…" }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    ok(&console, &ctx, "Schedules", body)
}

/// `GET /audit`: the newest changes made through the tool or the console.
pub(crate) async fn audit(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    let got = run(&console, |s| Ok((s.overview()?.now_ms, s.audit(200)?))).await;
    let (now, rows) = match got {
        Ok(x) => x,
        Err(e) => return error_page(&console, &ctx, &e),
    };
    let body = html! {
        @if rows.is_empty() {
            p.muted { "No change recorded yet." }
        } @else {
            table #audit {
                thead { tr { th.num { "#" } th { "when" } th { "by" } th { "action" } th { "target" } th.num { "items" } } }
                tbody {
                    @for a in &rows {
                        tr { td.num { (a.seq) } td { (when(a.at_ms, now)) } td { (a.by) } td { (a.action) } td.mono { (a.target) } td.num { (a.count) } }
                    }
                }
            }
        }
    };
    ok(&console, &ctx, "Audit trail", body)
}

/// `GET /login`: the token form.
pub(crate) async fn login(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    let body = login_form(&console, &ctx, None);
    ok(&console, &ctx, "Log in", body)
}

/// The login form, with an error above it when given.
pub(crate) fn login_form(console: &Console, ctx: &Ctx, error: Option<&str>) -> Markup {
    html! {
        @if let Some(e) = error { p.notice.bad #error { (e) } }
        p { "Changes need the token the console printed when it started (" span.mono { "--token" } "). Your name goes into the store's audit trail." }
        form.filters method="post" action=(console.config.path("/login")) {
            (csrf(ctx))
            label { "token" input #token type="password" name="token" autocomplete="off"; }
            label { "your name" input #name name="name" value=(if ctx.name.is_empty() { "console" } else { &ctx.name }); }
            button #login type="submit" { "Log in" }
        }
    }
}
