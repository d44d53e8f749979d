//! The `schedpool` binary against a real redis-server and a real
//! PostgreSQL, each started by the root package's test support
//! (tests/redis_support, tests/postgres_support: a private server on a
//! free loopback port in a temp dir, killed by pid): the same verbs and
//! answers as on SQLite.

#[path = "../../tests/postgres_support/mod.rs"]
mod postgres_support;
#[path = "../../tests/redis_support/mod.rs"]
mod redis_support;
mod support;

use schedpool::durable::{PostgresBackend, RedisBackend};

use support::cli::json;
use support::{fill, QUEUE, SCRIPT_ID};

/// Every verb once on the filled store at `url`.
fn exercise(url: &str) {
    let s = json(&["status", url]);
    assert_eq!(
        (s["pending"].as_u64(), s["dead"].as_u64()),
        (Some(7), Some(3)),
        "{s}"
    );
    let dead = json(&["ls", url, "--state", "dead", "--kind", "charge"]);
    assert_eq!(dead["items"].as_array().unwrap().len(), 3, "{dead}");
    let item = json(&["show", url, SCRIPT_ID]);
    assert_eq!(item["payload"]["encoding"], "json");
    assert_eq!(
        json(&["show", url, "charge-2"])["last_error"],
        "card declined <b>"
    );
    json(&["requeue", url, "charge-1"]);
    assert_eq!(json(&["show", url, "charge-1"])["state"], "pending");
    let bulk = json(&["purge", url, "--all", "--yes"]);
    assert_eq!(
        (bulk["matched"].as_u64(), bulk["changed"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(json(&["pause", url, "mail"])["changed"], true);
    assert_eq!(json(&["status", url])["paused"][0]["kind"], "mail");
    assert_eq!(json(&["resume", url, "mail"])["changed"], true);
    assert_eq!(json(&["cancel", url, "order-1"])[0]["was"], "pending");
    assert_eq!(json(&["schedules", url])[0]["name"], "hourly-report");
    json(&["fire", url, "hourly-report"]);
    let audit = json(&["audit", url]);
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["fire", "cancel", "resume", "pause", "purge", "requeue"],
        "{audit}"
    );
}

#[test]
fn the_verbs_on_redis() {
    redis_support::ensure_installed();
    let redis = redis_support::Redis::start();
    let url = redis.url();
    fill(|| RedisBackend::connect(&url, QUEUE).expect("connect"));
    exercise(&url);
}

#[test]
fn the_verbs_on_postgres() {
    let pg = postgres_support::Postgres::start();
    let params = pg.params();
    fill(|| PostgresBackend::connect(&params, QUEUE).expect("connect"));
    exercise(&pg.url());
}
