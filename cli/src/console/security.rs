//! Who may do what: sessions (a random id in an `HttpOnly`,
//! `SameSite=Strict` cookie), the login with the console's token, the
//! per-session CSRF token every form carries, the `Host` and `Origin`
//! checks, and the headers on every response.
//!
//! Invariants: a session starts logged out; only a POST to the login with
//! the right token and the session's CSRF token logs it in, under a new id
//! (no fixation); tokens are compared in constant time; the session table
//! holds at most [`MAX_SESSIONS`], the least recently seen dropped first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use super::Shared;

/// The most sessions kept at once.
pub(crate) const MAX_SESSIONS: usize = 4096;
/// A session unused this long is forgotten.
const IDLE: Duration = Duration::from_secs(12 * 3600);
/// The cookie's name.
const COOKIE: &str = "schedpool_console";

/// One browser's session.
#[derive(Clone, Debug)]
struct Session {
    csrf: String,
    authed: bool,
    /// The operator's name given at login (audit records carry it).
    name: String,
    seen: Instant,
}

/// The sessions of one console.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

/// What a handler knows of the request's session (an extension the guard adds).
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub(crate) sid: String,
    pub(crate) csrf: String,
    pub(crate) authed: bool,
    pub(crate) name: String,
}

impl Sessions {
    /// The session `sid` (touched), or a new logged-out one.
    fn get_or_start(&self, sid: Option<&str>) -> (Ctx, bool) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some(s) = sid.and_then(|sid| map.get_mut(sid).map(|s| (sid, s))) {
            if now.duration_since(s.1.seen) < IDLE {
                s.1.seen = now;
                return (
                    Ctx {
                        sid: s.0.to_string(),
                        csrf: s.1.csrf.clone(),
                        authed: s.1.authed,
                        name: s.1.name.clone(),
                    },
                    false,
                );
            }
        }
        (Self::insert(&mut map, false, ""), true)
    }

    fn insert(map: &mut HashMap<String, Session>, authed: bool, name: &str) -> Ctx {
        let now = Instant::now();
        map.retain(|_, s| now.duration_since(s.seen) < IDLE);
        while map.len() >= MAX_SESSIONS {
            let oldest = map
                .iter()
                .min_by_key(|(_, s)| s.seen)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => map.remove(&k),
                None => break,
            };
        }
        let ctx = Ctx {
            sid: random_hex(32),
            csrf: random_hex(32),
            authed,
            name: name.to_string(),
        };
        map.insert(
            ctx.sid.clone(),
            Session {
                csrf: ctx.csrf.clone(),
                authed,
                name: name.to_string(),
                seen: now,
            },
        );
        ctx
    }

    /// Logs the session `sid` in as the operator `name`, under a new id
    /// and CSRF token.
    pub(crate) fn login(&self, sid: &str, name: &str) -> Ctx {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(sid);
        Self::insert(&mut map, true, name)
    }

    /// Ends the session `sid`.
    pub(crate) fn logout(&self, sid: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(sid);
    }
}

/// `n` random bytes from the operating system, as hex.
pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `a == b` in time that depends on their lengths only.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The `Set-Cookie` value for session `sid`.
pub(crate) fn cookie(console: &Shared, sid: &str) -> HeaderValue {
    let path = if console.config.base_path.is_empty() {
        "/".to_string()
    } else {
        console.config.base_path.clone()
    };
    let secure = if console.config.secure_cookie {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{COOKIE}={sid}; Path={path}; HttpOnly; SameSite=Strict{secure}"
    ))
    .expect("hex and a path are valid header text")
}

fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// The host part of a `Host` header or an origin (`http://h:p` -> `h`).
fn host_name(text: &str) -> &str {
    let text = text.split_once("://").map_or(text, |(_, rest)| rest);
    let text = text.split('/').next().unwrap_or(text);
    if let Some(v6) = text.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    text.rsplit_once(':').map_or(text, |(h, _)| h)
}

/// The authority (`host:port`) of an origin (`http://host:port`).
fn authority(text: &str) -> &str {
    let text = text.split_once("://").map_or(text, |(_, rest)| rest);
    text.split('/').next().unwrap_or(text)
}

/// A refusal page's response.
pub(crate) fn refuse(status: StatusCode, message: &str) -> Response {
    (status, super::layout::bare("Refused", message)).into_response()
}

/// The middleware in front of every route: Host and Origin checks, the
/// session, the login for reads when configured, and the headers.
pub(crate) async fn guard(State(console): State<Shared>, mut req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    let allowed = &console.config.allowed_hosts;
    if !allowed.is_empty() && !allowed.iter().any(|a| a == &host || a == host_name(&host)) {
        return with_headers(refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "this console does not serve that host name: open it by the address it printed at start",
        ));
    }
    if req.method() == Method::POST {
        let origin = req
            .headers()
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok());
        if let Some(origin) = origin {
            if origin == "null" || authority(origin) != host {
                return with_headers(refuse(
                    StatusCode::FORBIDDEN,
                    "a form from another site was refused (its Origin is not this console)",
                ));
            }
        }
    }
    let (ctx, fresh) = console
        .sessions
        .get_or_start(session_id(req.headers()).as_deref());
    let path = req.uri().path().to_string();
    let public = path == "/login" || path == "/assets/console.css";
    let mut response = if console.config.token_for_reads && !ctx.authed && !public {
        if req.method() == Method::GET {
            Redirect::to(&console.config.path("/login")).into_response()
        } else {
            refuse(
                StatusCode::UNAUTHORIZED,
                "this console needs its token: log in first",
            )
        }
    } else {
        req.extensions_mut().insert(ctx.clone());
        next.run(req).await
    };
    if fresh && !response.headers().contains_key(header::SET_COOKIE) {
        response
            .headers_mut()
            .insert(header::SET_COOKIE, cookie(&console, &ctx.sid));
    }
    with_headers(response)
}

/// The headers every response carries: no script, no framing, no caching,
/// no referrer to other sites (`same-origin`: with `no-referrer` a browser
/// sends `Origin: null` on the console's own forms).
fn with_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins_are_read_by_their_parts() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
        assert_eq!(authority("http://127.0.0.1:8080"), "127.0.0.1:8080");
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
