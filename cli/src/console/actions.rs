//! The console's changes: login and logout, the confirmation step, and
//! applying a change.
//!
//! Invariants: every POST carries the session's CSRF token, checked
//! first; `/confirm` changes nothing (a bulk change is counted by a dry
//! run) and needs no login; `/apply` needs a logged-in session and records
//! the operator's name in the store's audit trail (the library does).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use maud::{html, Markup};

use super::form::Fields;
use super::layout::{csrf, page};
use super::pages::{error_page, item_link, login_form, run};
use super::security::{cookie, refuse, same, Ctx};
use super::{Console, Shared};
use crate::error::{Error, ErrorKind};
use crate::store::{BulkAction, Filter, State as ItemState, Store};

/// Parses a form body and checks its CSRF token against the session's.
#[allow(clippy::result_large_err)]
fn checked(ctx: &Ctx, body: &Bytes) -> Result<Fields, Response> {
    let fields = Fields::parse(body);
    match fields.get("csrf") {
        Some(token) if same(token, &ctx.csrf) => Ok(fields),
        _ => Err(refuse(
            StatusCode::FORBIDDEN,
            "the form's CSRF token does not match this session (it expired, or the form came from \
             elsewhere): reload the page and try again",
        )),
    }
}

/// `POST /login`: the token and the operator's name.
pub(crate) async fn login(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    body: Bytes,
) -> Response {
    let fields = match checked(&ctx, &body) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let token = fields.get("token").unwrap_or("");
    if !same(token, &console.config.token) {
        let form = login_form(&console, &ctx, Some("That is not the console's token."));
        return (
            StatusCode::UNAUTHORIZED,
            page(&console, &ctx, "Log in", form),
        )
            .into_response();
    }
    let name = fields.get("name").unwrap_or("console");
    let name: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
    let new = console.sessions.login(&ctx.sid, &name);
    let mut response = Redirect::to(&console.config.path("/")).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(&console, &new.sid));
    response
}

/// `POST /logout`.
pub(crate) async fn logout(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    body: Bytes,
) -> Response {
    if let Err(r) = checked(&ctx, &body) {
        return r;
    }
    console.sessions.logout(&ctx.sid);
    Redirect::to(&console.config.path("/")).into_response()
}

/// A change, read from a form.
enum Plan {
    /// Requeue or purge these dead letters.
    Ids(BulkAction, Vec<String>),
    /// Requeue or purge the dead letters matching a filter, at most `max`.
    Matching(BulkAction, Filter, usize),
    Cancel(String),
    Pause(String),
    Resume(String),
    Fire(String),
}

fn bulk_action(verb: &str) -> Option<BulkAction> {
    match verb {
        "requeue" => Some(BulkAction::Requeue),
        "purge" => Some(BulkAction::Purge),
        _ => None,
    }
}

fn need<'a>(fields: &'a Fields, name: &str, what: &str) -> Result<&'a str, Error> {
    fields
        .get(name)
        .ok_or_else(|| Error::new(ErrorKind::Usage, format!("the form has no {what}")))
}

/// The plan a form asks for; `now_ms` anchors relative times.
fn plan_of(fields: &Fields, now_ms: u64) -> Result<Plan, Error> {
    // A row's own button: "requeue ID" or "purge ID".
    if let Some(one) = fields.get("one") {
        let (verb, id) = one.split_once(' ').unwrap_or((one, ""));
        let action =
            bulk_action(verb).ok_or_else(|| Error::new(ErrorKind::Usage, "unknown action"))?;
        return Ok(Plan::Ids(action, vec![id.to_string()]));
    }
    let verb = need(fields, "action", "action")?;
    if let Some(action) = bulk_action(verb) {
        if fields.get("scope") == Some("filter") {
            let time = |n: &str| {
                fields
                    .get(n)
                    .map(|t| crate::time::parse_when(t, now_ms))
                    .transpose()
            };
            let filter = Filter {
                state: Some(ItemState::Dead),
                kind: fields.get("kind").map(str::to_string),
                id_prefix: fields.get("prefix").map(str::to_string),
                from_ms: time("from")?,
                until_ms: time("until")?,
            };
            let max = match fields.get("max") {
                None => 1000,
                Some(m) => m.parse().map_err(|_| {
                    Error::new(
                        ErrorKind::Usage,
                        format!("\"at most\" must be a number, found {m:?}"),
                    )
                })?,
            };
            return Ok(Plan::Matching(action, filter, max));
        }
        let ids: Vec<String> = fields.all("id").into_iter().map(str::to_string).collect();
        if ids.is_empty() {
            return Err(Error::new(
                ErrorKind::Usage,
                "tick at least one dead letter first",
            ));
        }
        return Ok(Plan::Ids(action, ids));
    }
    match verb {
        "cancel" => Ok(Plan::Cancel(need(fields, "id", "item id")?.to_string())),
        "pause" => Ok(Plan::Pause(need(fields, "kind", "kind")?.to_string())),
        "resume" => Ok(Plan::Resume(need(fields, "kind", "kind")?.to_string())),
        "fire" => Ok(Plan::Fire(
            need(fields, "name", "schedule name")?.to_string(),
        )),
        other => Err(Error::new(
            ErrorKind::Usage,
            format!("unknown action {other:?}"),
        )),
    }
}

/// The hidden fields that carry `plan` into the confirmed form.
fn hidden(plan: &Plan) -> Markup {
    let field = |n: &str, v: &str| html! { input type="hidden" name=(n) value=(v); };
    match plan {
        Plan::Ids(a, ids) => html! {
            (field("action", a.name()))
            @for id in ids { (field("id", id)) }
        },
        Plan::Matching(a, f, max) => html! {
            (field("action", a.name())) (field("scope", "filter")) (field("max", &max.to_string()))
            @if let Some(k) = &f.kind { (field("kind", k)) }
            @if let Some(p) = &f.id_prefix { (field("prefix", p)) }
            @if let Some(t) = f.from_ms { (field("from", &t.to_string())) }
            @if let Some(t) = f.until_ms { (field("until", &t.to_string())) }
        },
        Plan::Cancel(id) => html! { (field("action", "cancel")) (field("id", id)) },
        Plan::Pause(k) => html! { (field("action", "pause")) (field("kind", k)) },
        Plan::Resume(k) => html! { (field("action", "resume")) (field("kind", k)) },
        Plan::Fire(n) => html! { (field("action", "fire")) (field("name", n)) },
    }
}

/// `POST /confirm`: what the change would do, and the button that does it.
pub(crate) async fn confirm(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    body: Bytes,
) -> Response {
    let fields = match checked(&ctx, &body) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let got = run(&console, move |s| {
        let plan = plan_of(&fields, s.overview()?.now_ms)?;
        // A bulk change is counted by a dry run: nothing changes here.
        let count = match &plan {
            Plan::Matching(a, f, max) => {
                Some(s.bulk(*a, f, *max, true, "console", &mut |_| {})?.matched)
            }
            _ => None,
        };
        Ok((plan, count))
    })
    .await;
    let (plan, count) = match got {
        Ok(x) => x,
        Err(e) => return error_page(&console, &ctx, &e),
    };
    let what = match &plan {
        Plan::Ids(a, ids) => html! {
            (verb_title(*a)) " " (ids.len()) " dead letter" @if ids.len() != 1 { "s" } ":"
            ul { @for id in ids { li.mono { (id) } } }
        },
        Plan::Matching(a, f, max) => html! {
            (verb_title(*a)) " " b #confirm-count { (count.unwrap_or(0)) } " dead letters matching "
            span.mono { (f.describe()) } " (at most " (max) "; counted just now: others may die or move before you confirm)."
        },
        Plan::Cancel(id) => {
            html! { "Cancel the item " span.mono { (id) } ": it is removed and never runs." }
        }
        Plan::Pause(k) => html! { "Pause the kind " span.mono { (k) } "." },
        Plan::Resume(k) => html! { "Resume the kind " span.mono { (k) } "." },
        Plan::Fire(n) => {
            html! { "Fire the schedule " span.mono { (n) } " now (its regular fires go on)." }
        }
    };
    let body = html! {
        div #confirm-what { (what) }
        @if !ctx.authed {
            p.notice.bad { "This change needs the console's token: " a href=(console.config.path("/login")) { "log in" } " first, or it will be refused." }
        }
        form method="post" action=(console.config.path("/apply")) {
            (csrf(&ctx))
            (hidden(&plan))
            div.actions {
                button #confirm type="submit" { "Confirm" }
                a href=(console.config.path("/dead")) { "Cancel" }
            }
        }
    };
    page(&console, &ctx, "Confirm", body).into_response()
}

fn verb_title(a: BulkAction) -> &'static str {
    match a {
        BulkAction::Requeue => "Requeue",
        BulkAction::Purge => "Purge",
    }
}

/// Runs `plan` as `by`; the result in words.
fn apply_plan(s: &Store, plan: Plan, by: &str) -> Result<(String, Vec<String>), Error> {
    Ok(match plan {
        Plan::Ids(a, ids) => {
            let (mut done, mut skipped) = (Vec::new(), Vec::new());
            for id in ids {
                let r = match a {
                    BulkAction::Requeue => s.requeue(&id, by),
                    BulkAction::Purge => s.purge(&id, by),
                };
                match r {
                    Ok(()) => done.push(id),
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        skipped.push(e.message().to_string())
                    }
                    Err(e) => return Err(e),
                }
            }
            let verb = if a == BulkAction::Requeue {
                "Requeued"
            } else {
                "Purged"
            };
            let mut msg = format!(
                "{verb} {} dead letter{}.",
                done.len(),
                if done.len() == 1 { "" } else { "s" }
            );
            if !skipped.is_empty() {
                msg.push_str(&format!(" {} skipped.", skipped.len()));
            }
            let mut notes = skipped;
            notes.extend(done.iter().map(|id| format!("done: {id}")));
            (msg, notes)
        }
        Plan::Matching(a, f, max) => {
            let out = s.bulk(a, &f, max, false, by, &mut |_| {})?;
            let verb = if a == BulkAction::Requeue {
                "Requeued"
            } else {
                "Purged"
            };
            (
                format!(
                    "{verb} {} of {} matching dead letters.",
                    out.changed, out.matched
                ),
                Vec::new(),
            )
        }
        Plan::Cancel(id) => {
            let was = s.cancel(&id, by)?;
            (
                format!("Cancelled {id} (it was {}).", was.name()),
                Vec::new(),
            )
        }
        Plan::Pause(k) => {
            let changed = s.pause(&k, by)?;
            let msg = if changed {
                format!("Paused {k}: claims skip its items.")
            } else {
                format!("{k} was paused already.")
            };
            (msg, Vec::new())
        }
        Plan::Resume(k) => {
            let changed = s.resume(&k, by)?;
            let msg = if changed {
                format!("Resumed {k}.")
            } else {
                format!("{k} was not paused.")
            };
            (msg, Vec::new())
        }
        Plan::Fire(n) => {
            let run = s.fire(&n, by)?;
            (format!("Fired {n}: its run {run} is due now."), Vec::new())
        }
    })
}

/// `POST /apply`: makes the change (logged-in sessions only).
pub(crate) async fn apply(
    State(console): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    body: Bytes,
) -> Response {
    let fields = match checked(&ctx, &body) {
        Ok(f) => f,
        Err(r) => return r,
    };
    if !ctx.authed {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "refused: changes need the console's token. Log in (the link at the top of every page) and try again.",
        );
    }
    let by = ctx.name.clone();
    let links_to = fields.all("id").first().map(|id| id.to_string());
    let got = run(&console, move |s| {
        let plan = plan_of(&fields, s.overview()?.now_ms)?;
        apply_plan(s, plan, &by)
    })
    .await;
    match got {
        Ok((msg, notes)) => done_page(&console, &ctx, &msg, &notes, links_to.as_deref()),
        Err(e) => error_page(&console, &ctx, &e),
    }
}

fn done_page(
    console: &Console,
    ctx: &Ctx,
    msg: &str,
    notes: &[String],
    id: Option<&str>,
) -> Response {
    let body = html! {
        p.notice.ok #result { (msg) }
        @if !notes.is_empty() { ul { @for n in notes { li.mono { (n) } } } }
        p {
            @if let Some(id) = id { a #item-link href=(item_link(console, id)) { "The item" } " · " }
            a href=(console.config.path("/dead")) { "Dead letters" } " · "
            a href=(console.config.path("/")) { "Overview" } " · "
            a href=(console.config.path("/audit")) { "Audit trail" }
        }
    };
    page(console, ctx, "Done", body).into_response()
}
