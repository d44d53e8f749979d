//! The page frame (header, navigation, login state) and the stylesheet,
//! embedded in the binary.
//!
//! Invariant: every page links the stylesheet from the console itself and
//! loads nothing else (the Content-Security-Policy allows nothing else).

use axum::http::header;
use axum::response::IntoResponse;
use maud::{html, Markup, DOCTYPE};

use super::security::Ctx;
use super::Console;

const CSS: &str = include_str!("console.css");

/// `GET /assets/console.css`.
pub(crate) async fn stylesheet() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        CSS,
    )
}

/// The hidden CSRF field every form carries.
pub(crate) fn csrf(ctx: &Ctx) -> Markup {
    html! { input type="hidden" name="csrf" value=(ctx.csrf); }
}

/// A full page titled `title` with `body`.
pub(crate) fn page(console: &Console, ctx: &Ctx, title: &str, body: Markup) -> Markup {
    let p = |route: &str| console.config.path(route);
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · schedpool" }
                link rel="stylesheet" href=(p("/assets/console.css"));
            }
            body {
                header {
                    span.brand { "schedpool" }
                    span.store { (console.store.label()) }
                    nav {
                        a href=(p("/")) { "Overview" }
                        a href=(p("/items?state=pending")) { "Pending" }
                        a href=(p("/items?state=in-flight")) { "In flight" }
                        a href=(p("/dead")) { "Dead letters" }
                        a href=(p("/schedules")) { "Schedules" }
                        a href=(p("/audit")) { "Audit" }
                    }
                    span.who #who {
                        @if ctx.authed {
                            "token given · "
                            form.inline method="post" action=(p("/logout")) {
                                (csrf(ctx))
                                button.secondary type="submit" { "Log out" }
                            }
                        } @else {
                            "read-only · " a #login-link href=(p("/login")) { "Log in to make changes" }
                        }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// A minimal page for refusals made before a session exists.
pub(crate) fn bare(title: &str, message: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (title) " · schedpool" } }
            body { main { h1 { (title) } p.notice.bad #refusal { (message) } } }
        }
    }
}
