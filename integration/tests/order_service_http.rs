//! The order service example (examples/order_service/), driven over HTTP:
//! a paid order is never closed, an unpaid one is closed once and never
//! before its timeout, and a payment after the close is refused. Then the
//! example's demo (`demo.rs`) in-process, and the example's binary as a
//! process when `cargo test` built it (the README's test command does;
//! `--test order_service_http` alone does not, and then says so).
#![cfg(feature = "sqlx-sqlite")]

#[path = "../examples/order_service/demo.rs"]
mod demo;
#[path = "../examples/order_service/service.rs"]
mod service;
#[path = "../../tests/sqlite_support/mod.rs"]
mod sqlite_support;

use std::time::{Duration, Instant};

use sqlite_support::TempDb;

const TIMEOUT: Duration = Duration::from_millis(1_500);
const EVENTUALLY: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paid_orders_are_never_closed_unpaid_ones_once_and_never_early() {
    let db = TempDb::new("order-service");
    let svc = service::start(&db.path, TIMEOUT).await.unwrap();
    let addr = svc.addr;

    // 20 orders at once; the even ones paid at once.
    let mut created = tokio::task::JoinSet::new();
    for _ in 0..20 {
        created.spawn(async move { service::request(addr, "POST", "/orders").await.unwrap() });
    }
    let mut ids = Vec::new();
    while let Some(done) = created.join_next().await {
        let (status, body) = done.unwrap();
        assert_eq!(status, 201, "{body}");
        ids.push(body.parse::<i64>().unwrap());
    }
    ids.sort();
    let (paid, unpaid): (Vec<i64>, Vec<i64>) = ids.iter().partition(|id| *id % 2 == 0);
    let mut pays = tokio::task::JoinSet::new();
    for &id in &paid {
        pays.spawn(
            async move { service::request(addr, "POST", &format!("/orders/{id}/pay")).await },
        );
    }
    while let Some(done) = pays.join_next().await {
        let (status, body) = done.unwrap().unwrap();
        assert_eq!((status, body.as_str()), (200, "paid"));
    }
    // Before the timeouts are due, nothing is closed.
    for &id in &unpaid {
        let o = service::order(addr, id).await.unwrap();
        if service_now_ms() < o.created_ms + TIMEOUT.as_millis() as i64 {
            assert_eq!(o.state, "unpaid", "order {id} closed early: {o:?}");
        }
    }

    // The unpaid ones close.
    let until = Instant::now() + EVENTUALLY;
    for &id in &unpaid {
        while service::order(addr, id).await.unwrap().state != "closed" && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Time for a second delivery, or a paid order's close, to show.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    for &id in &paid {
        let o = service::order(addr, id).await.unwrap();
        assert_eq!(
            (o.state.as_str(), o.close_runs),
            ("paid", 0),
            "order {id}: {o:?}"
        );
    }
    for &id in &unpaid {
        let o = service::order(addr, id).await.unwrap();
        assert_eq!(
            (o.state.as_str(), o.close_runs),
            ("closed", 1),
            "order {id}: {o:?}"
        );
        let after = o.closed_ms.unwrap() - o.created_ms;
        assert!(
            after >= TIMEOUT.as_millis() as i64,
            "order {id} closed {after} ms after its creation, before its timeout"
        );
    }
    // Paying a closed or a paid order is refused, and changes nothing.
    let (status, _) = service::request(addr, "POST", &format!("/orders/{}/pay", unpaid[0]))
        .await
        .unwrap();
    assert_eq!(status, 409);
    let (status, _) = service::request(addr, "POST", &format!("/orders/{}/pay", paid[0]))
        .await
        .unwrap();
    assert_eq!(status, 409);
    assert_eq!(
        service::order(addr, unpaid[0]).await.unwrap().state,
        "closed"
    );
    let (status, _) = service::request(addr, "GET", "/orders/999999")
        .await
        .unwrap();
    assert_eq!(status, 404);
    svc.stop().await;
}

/// The wall clock in ms, as the service reads it.
fn service_now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    since.as_millis() as i64
}

/// The example's demo, in-process: it says the service kept its promises.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_demo_finds_what_the_service_promises() {
    assert!(demo::run(Duration::from_millis(800), false).await.unwrap());
}

/// The example as a process (`cargo test` builds the package's examples
/// beside its tests): it exits 0 after printing `ok`.
#[test]
fn the_example_runs() {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("order_service"))
        .unwrap();
    if !bin.exists() {
        eprintln!(
            "{} is not built (`cargo test` without --test builds it): only its demo ran, in-process",
            bin.display()
        );
        return;
    }
    let mut child = std::process::Command::new(&bin)
        .env("ORDER_TIMEOUT_MS", "1000")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            child.kill().unwrap();
            panic!("the example ran over 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    eprintln!("{out}");
    assert!(status.success(), "{status}: {out}");
    assert_eq!(out.lines().last(), Some("ok"), "{out}");
    assert!(out.contains(": paid (timeout runs: 0)"), "{out}");
}
