//! The `schedpool` binary against a SQLite file: every verb, its tables
//! and `--json`, and its exit codes.

mod support;

use std::process::{Command, Output};

use support::{sqlite_store, TempDir, QUEUE, SCRIPT_ID};

fn schedpool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedpool"))
        .args(args)
        .env_remove("SCHEDPOOL_QUEUE")
        .env("SCHEDPOOL_BY", "tester")
        .output()
        .expect("run schedpool")
}

fn ok(args: &[&str]) -> String {
    let out = schedpool(args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json", "--queue", QUEUE];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(&all)).expect("one JSON document")
}

fn code(args: &[&str]) -> (i32, String) {
    let out = schedpool(args);
    (
        out.status.code().expect("an exit code"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn status_counts_by_kind_and_state() {
    let dir = TempDir::new("status");
    let url = sqlite_store(&dir);
    let s = json(&["status", &url]);
    assert_eq!(
        (s["pending"].as_u64(), s["dead"].as_u64()),
        (Some(7), Some(3))
    );
    let kinds: Vec<(String, u64, u64)> = s["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap().to_string(),
                k["pending"].as_u64().unwrap(),
                k["dead"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("charge".into(), 0, 3),
            ("close-order".into(), 5, 0),
            ("mail".into(), 1, 0),
            ("schedpool/calendar".into(), 1, 0)
        ]
    );
    let table = ok(&["--queue", QUEUE, "status", &url]);
    assert!(table.contains("pending 7, in flight 0, dead 3"), "{table}");
    assert!(table.contains("close-order"), "{table}");
}

#[test]
fn ls_filters_and_pages_with_a_cursor() {
    let dir = TempDir::new("ls");
    let url = sqlite_store(&dir);
    let first = json(&["ls", &url, "--kind", "close-order", "--limit", "2"]);
    let ids = |page: &serde_json::Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&first).len(), 2);
    let mut seen = ids(&first);
    let mut cursor = first["next_cursor"].as_str().map(str::to_string);
    while let Some(c) = cursor {
        let page = json(&[
            "ls",
            &url,
            "--kind",
            "close-order",
            "--limit",
            "2",
            "--cursor",
            &c,
        ]);
        seen.extend(ids(&page));
        cursor = page["next_cursor"].as_str().map(str::to_string);
    }
    seen.sort();
    assert_eq!(
        seen,
        ["order-1", "order-2", "order-3", "order-4", "order-5"]
    );
    let dead = json(&["ls", &url, "--state", "dead", "--prefix", "charge-2"]);
    assert_eq!(ids(&dead), ["charge-2"]);
    let none = json(&["ls", &url, "--until", "-1h"]);
    assert_eq!(ids(&none).len(), 0, "nothing was due an hour ago");
}

#[test]
fn show_decodes_the_payload_and_dead_shows_the_error() {
    let dir = TempDir::new("show");
    let url = sqlite_store(&dir);
    let item = json(&["show", &url, SCRIPT_ID]);
    assert_eq!(item["payload"]["encoding"], "json");
    assert!(item["payload"]["text"]
        .as_str()
        .unwrap()
        .contains("<script>alert('payload')"));
    let number = json(&["show", &url, "order-3"]);
    assert_eq!(number["payload"]["as_u64"], 3);
    let dead = json(&["show", &url, "charge-1"]);
    assert_eq!(dead["state"], "dead");
    assert_eq!(dead["last_error"], "card declined <b>");
    assert_eq!(dead["attempts"], 1);
    let table = ok(&["--queue", QUEUE, "dead", &url]);
    assert!(
        table.contains("card declined <b>") && table.contains("charge-3"),
        "{table}"
    );
}

#[test]
fn requeue_one_then_bulk_with_a_dry_run_and_the_audit_trail() {
    let dir = TempDir::new("requeue");
    let url = sqlite_store(&dir);
    ok(&["--queue", QUEUE, "requeue", &url, "charge-1"]);
    assert_eq!(json(&["show", &url, "charge-1"])["state"], "pending");
    // Again: it is not a dead letter any more.
    let (c, err) = code(&["--queue", QUEUE, "requeue", &url, "charge-1"]);
    assert_eq!(c, 3, "{err}");
    let dry = json(&["requeue", &url, "--all", "--dry-run"]);
    assert_eq!(
        (dry["matched"].as_u64(), dry["changed"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(
        json(&["status", &url])["dead"],
        2,
        "a dry run changes nothing"
    );
    // Not at a terminal, a bulk change needs --yes.
    let (c, err) = code(&["--queue", QUEUE, "purge", &url, "--all"]);
    assert_eq!(c, 5, "{err}");
    assert!(err.contains("--yes"), "{err}");
    let done = json(&["purge", &url, "--kind", "charge", "--max", "1", "--yes"]);
    assert_eq!(
        (done["matched"].as_u64(), done["changed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(json(&["status", &url])["dead"], 1);
    let audit = json(&["audit", &url]);
    let rows = audit.as_array().unwrap();
    let actions: Vec<&str> = rows.iter().map(|r| r["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["purge", "requeue"], "newest first: {audit}");
    assert!(rows.iter().all(|r| r["by"] == "tester"));
}

#[test]
fn cancel_pause_resume() {
    let dir = TempDir::new("cancel");
    let url = sqlite_store(&dir);
    let c = json(&["cancel", &url, "order-1"]);
    assert_eq!(c[0]["was"], "pending");
    let (code_, err) = code(&["--queue", QUEUE, "cancel", &url, "order-1"]);
    assert_eq!(code_, 3, "{err}");
    assert_eq!(json(&["pause", &url, "close-order"])["changed"], true);
    assert_eq!(json(&["pause", &url, "close-order"])["changed"], false);
    let s = json(&["status", &url]);
    assert_eq!(s["paused"][0]["kind"], "close-order");
    assert_eq!(s["paused"][0]["by"], "tester");
    assert_eq!(json(&["resume", &url, "close-order"])["changed"], true);
    assert_eq!(
        json(&["status", &url])["paused"].as_array().unwrap().len(),
        0
    );
}

#[test]
fn exit_codes_say_what_went_wrong() {
    let dir = TempDir::new("codes");
    let url = sqlite_store(&dir);
    // Usage: clap's own errors, a bad URL, a missing queue name.
    assert_eq!(code(&["--queue", QUEUE, "frobnicate"]).0, 2);
    let (c, err) = code(&["--queue", QUEUE, "status", "ftp://x"]);
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("sqlite:PATH"), "{err}");
    let (c, err) = code(&["status", &url]);
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("--queue"), "{err}");
    // Not found.
    assert_eq!(code(&["--queue", QUEUE, "show", &url, "nope"]).0, 3);
    // Unavailable: no such file, a closed port.
    let missing = format!("sqlite:{}", dir.path().join("missing.db").display());
    let (c, err) = code(&["--queue", QUEUE, "status", &missing]);
    assert_eq!(c, 4, "{err}");
    assert!(err.contains("never creates"), "{err}");
    assert!(
        !dir.path().join("missing.db").exists(),
        "the tool created a store"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (c, err) = code(&[
        "--queue",
        QUEUE,
        "--timeout",
        "1s",
        "status",
        &format!("redis://127.0.0.1:{port}/0"),
    ]);
    assert_eq!(c, 4, "{err}");
    // --json errors are one JSON document too.
    let out = schedpool(&["--json", "--queue", QUEUE, "show", &url, "nope"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["error"]["kind"], "not_found");
    assert_eq!(doc["error"]["exit_code"], 3);
}

#[test]
fn schedules_and_fire_now() {
    let dir = TempDir::new("fire");
    let url = sqlite_store(&dir);
    let list = json(&["schedules", &url]);
    assert_eq!(list[0]["name"], "hourly-report");
    assert_eq!(list[0]["kind"], "report");
    assert_eq!(list[0]["state"], "pending");
    let next = list[0]["next_ms"].as_u64().unwrap();
    assert_eq!(next % 3_600_000, 0, "on the hour");
    let fired = json(&["fire", &url, "hourly-report"]);
    let run = fired["item"]
        .as_str()
        .expect("the fire's item id")
        .to_string();
    assert!(run.starts_with("hourly-report@now-"), "{run}");
    let item = json(&["show", &url, &run]);
    assert_eq!(
        (item["kind"].as_str(), item["state"].as_str()),
        (Some("report"), Some("pending"))
    );
    assert_eq!(json(&["audit", &url])[0]["action"], "fire");
    let table = ok(&["--queue", QUEUE, "schedules", &url]);
    assert!(table.contains("hourly-report"), "{table}");
    let (c, err) = code(&["--queue", QUEUE, "fire", &url, "no-such"]);
    assert_eq!(c, 3, "{err}");
}
