//! The console over HTTP, as a browser sees it: the token, CSRF, Origin
//! and Host checks, escaping of ids and payloads, and changes that reach
//! the store.

mod support;

use schedpool::durable::MemoryBackend;
use schedpool_cli::console::ConsoleConfig;
use schedpool_cli::Store;

use support::http::{Client, Served};
use support::{fill, SCRIPT_ID};

const TOKEN: &str = "test-token-0123456789abcdef";

fn filled() -> (MemoryBackend, Store) {
    let backend = MemoryBackend::new();
    fill(|| backend.clone());
    let store = Store::from_backend(backend.clone(), "memory").unwrap();
    (backend, store)
}

fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn login(c: &mut Client) {
    let page = c.get("/login");
    let r = c.post(
        "/login",
        &[("csrf", &page.csrf()), ("token", TOKEN), ("name", "ada")],
    );
    assert_eq!(r.status, 303, "{}", r.body);
}

#[test]
fn overview_shows_counts_and_safe_headers() {
    let (_b, store) = filled();
    let served = Served::start(store, ConsoleConfig::new(TOKEN));
    let mut c = Client::new(&served);
    let r = c.get("/");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains(r#"<b id="count-pending">7</b>"#),
        "{}",
        r.body
    );
    assert!(r.body.contains(r#"<b id="count-dead">3</b>"#), "{}", r.body);
    let csp = r.header("content-security-policy").expect("a CSP");
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("script-src"),
        "{csp}"
    );
    let cookie = r.header("set-cookie").expect("a session cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!r.body.contains("<script"), "no script on any page");
    let css = c.get("/assets/console.css");
    assert_eq!(css.status, 200);
    assert!(css.header("content-type").unwrap().starts_with("text/css"));
}

#[test]
fn ids_and_payloads_are_escaped() {
    let (_b, store) = filled();
    let served = Served::start(store, ConsoleConfig::new(TOKEN));
    let mut c = Client::new(&served);
    let item = c.get(&format!("/item?id={}", encode(SCRIPT_ID)));
    assert_eq!(item.status, 200, "{}", item.body);
    assert!(!item.body.contains("<script"), "{}", item.body);
    assert!(
        item.body
            .contains("&lt;script&gt;alert('id')&lt;/script&gt;"),
        "{}",
        item.body
    );
    assert!(
        item.body
            .contains("&lt;script&gt;alert('payload')&lt;/script&gt;"),
        "{}",
        item.body
    );
    let list = c.get("/items?state=pending&kind=mail");
    assert!(!list.body.contains("<script"), "{}", list.body);
    assert!(list.body.contains("&lt;script&gt;"), "{}", list.body);
    let dead = c.get("/item?id=charge-1");
    assert!(
        dead.body.contains("card declined &lt;b&gt;"),
        "{}",
        dead.body
    );
    // A kind or id made of markup in a query comes back escaped too.
    let q = c.get(&format!("/items?kind={}", encode("<img src=x>")));
    assert!(!q.body.contains("<img"), "{}", q.body);
}

#[test]
fn a_change_needs_the_csrf_token_and_the_login() {
    let (backend, store) = filled();
    let served = Served::start(store.clone(), ConsoleConfig::new(TOKEN));
    let mut c = Client::new(&served);
    let page = c.get("/dead");
    // No CSRF token, or a wrong one: refused.
    let r = c.post("/apply", &[("action", "requeue"), ("id", "charge-1")]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("CSRF"), "{}", r.body);
    let r = c.post(
        "/apply",
        &[
            ("csrf", &"0".repeat(64)),
            ("action", "requeue"),
            ("id", "charge-1"),
        ],
    );
    assert_eq!(r.status, 403);
    // The right CSRF token, but no login: refused, nothing changed.
    let r = c.post(
        "/apply",
        &[
            ("csrf", &page.csrf()),
            ("action", "requeue"),
            ("id", "charge-1"),
        ],
    );
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("token"), "{}", r.body);
    assert_eq!(
        store.item("charge-1").unwrap().item.state,
        schedpool_cli::State::Dead
    );
    // A wrong token does not log in.
    let r = c.post(
        "/login",
        &[("csrf", &page.csrf()), ("token", "wrong"), ("name", "eve")],
    );
    assert_eq!(r.status, 401);
    let before = c.cookie.clone();
    login(&mut c);
    assert_ne!(c.cookie, before, "a new session id after login");
    let page = c.get("/dead");
    let r = c.post(
        "/apply",
        &[
            ("csrf", &page.csrf()),
            ("action", "requeue"),
            ("id", "charge-1"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Requeued 1 dead letter."), "{}", r.body);
    assert_eq!(
        store.item("charge-1").unwrap().item.state,
        schedpool_cli::State::Pending
    );
    let audit = store.audit(10).unwrap();
    assert_eq!(
        (audit[0].action.as_str(), audit[0].by.as_str()),
        ("requeue", "ada")
    );
    // The session from before the login is not logged in.
    let mut old = Client::new(&served);
    old.cookie = before;
    let page = old.get("/dead");
    let r = old.post(
        "/apply",
        &[
            ("csrf", &page.csrf()),
            ("action", "purge"),
            ("id", "charge-2"),
        ],
    );
    assert_eq!(r.status, 401, "{}", r.body);
    drop(backend);
}

#[test]
fn bulk_changes_are_confirmed_with_a_count_first() {
    let (_b, store) = filled();
    let served = Served::start(store.clone(), ConsoleConfig::new(TOKEN));
    let mut c = Client::new(&served);
    login(&mut c);
    let page = c.get("/dead");
    let csrf = page.csrf();
    let confirm = c.post(
        "/confirm",
        &[
            ("csrf", &csrf),
            ("action", "purge"),
            ("scope", "filter"),
            ("kind", "charge"),
            ("max", "2"),
        ],
    );
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(
        confirm.body.contains(r#"<b id="confirm-count">2</b>"#),
        "{}",
        confirm.body
    );
    assert_eq!(
        store.overview().unwrap().dead,
        3,
        "a confirmation changes nothing"
    );
    let r = c.post(
        "/apply",
        &[
            ("csrf", &csrf),
            ("action", "purge"),
            ("scope", "filter"),
            ("kind", "charge"),
            ("max", "2"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Purged 2 of 2"), "{}", r.body);
    assert_eq!(store.overview().unwrap().dead, 1);
}

#[test]
fn foreign_origins_and_hosts_are_refused() {
    let (_b, store) = filled();
    let served = Served::start(
        store,
        ConsoleConfig::new(TOKEN).allowed_hosts(["127.0.0.1"]),
    );
    let mut c = Client::new(&served);
    let page = c.get("/dead");
    assert_eq!(page.status, 200);
    let body = format!("csrf={}&token={TOKEN}&name=x", page.csrf());
    let r = c.send(
        "POST",
        "/login",
        Some(body),
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let mut rebound = Client::new(&served);
    rebound.host = format!("evil.example:{}", served.addr.port());
    assert_eq!(rebound.get("/").status, 421);
}

#[test]
fn reads_need_the_token_when_configured() {
    let (_b, store) = filled();
    let served = Served::start(store, ConsoleConfig::new(TOKEN).token_for_reads(true));
    let mut c = Client::new(&served);
    let r = c.get("/");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/login"));
    assert_eq!(
        c.get(&format!("/item?id={}", encode(SCRIPT_ID))).status,
        303
    );
    login(&mut c);
    let r = c.get("/");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains(r#"<b id="count-pending">7</b>"#));
}

#[test]
fn schedules_fire_now_and_kinds_pause_from_the_pages() {
    let (_b, store) = filled();
    let served = Served::start(store.clone(), ConsoleConfig::new(TOKEN));
    let mut c = Client::new(&served);
    login(&mut c);
    let page = c.get("/schedules");
    assert!(page.body.contains("hourly-report"), "{}", page.body);
    let csrf = page.csrf();
    let confirm = c.post(
        "/confirm",
        &[
            ("csrf", &csrf),
            ("action", "fire"),
            ("name", "hourly-report"),
        ],
    );
    assert!(
        confirm.body.contains("Fire the schedule"),
        "{}",
        confirm.body
    );
    let r = c.post(
        "/apply",
        &[
            ("csrf", &csrf),
            ("action", "fire"),
            ("name", "hourly-report"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Fired hourly-report"), "{}", r.body);
    let missing = c.post(
        "/apply",
        &[("csrf", &csrf), ("action", "fire"), ("name", "no-such")],
    );
    assert_eq!(missing.status, 404, "{}", missing.body);
    // Pause from the overview's kind table, then resume.
    let r = c.post(
        "/apply",
        &[
            ("csrf", &csrf),
            ("action", "pause"),
            ("kind", "close-order"),
        ],
    );
    assert!(r.body.contains("Paused close-order"), "{}", r.body);
    let overview = c.get("/");
    assert!(
        overview
            .body
            .contains(r#"<span class="paused">paused</span>"#),
        "{}",
        overview.body
    );
    assert_eq!(store.overview().unwrap().paused[0].by, "ada");
    let r = c.post(
        "/apply",
        &[
            ("csrf", &csrf),
            ("action", "resume"),
            ("kind", "close-order"),
        ],
    );
    assert!(r.body.contains("Resumed close-order"), "{}", r.body);
    let audit = c.get("/audit");
    for action in ["fire", "pause", "resume"] {
        assert!(
            audit.body.contains(&format!("<td>{action}</td>")),
            "{}",
            audit.body
        );
    }
}
