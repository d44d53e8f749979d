//! An order service on axum + sqlx with durable order timeouts, on one
//! SQLite file (no server): creating an order schedules its timeout in the
//! same transaction, paying cancels it in the payment's transaction, and
//! a `DurablePool` with an async handler closes the orders left unpaid.
//!
//! ```text
//! cargo run --release -p schedpool-integration --features sqlx-sqlite --example order_service
//! ```
//!
//! It starts the service on 127.0.0.1 (a free port), creates two orders
//! over HTTP, pays one, waits past the timeout (2 s; `ORDER_TIMEOUT_MS`
//! sets it), and prints both: the paid one stays paid, the other is closed
//! once, no earlier than its timeout. With `--serve` it keeps serving
//! (print the address, then `curl -X POST http://ADDR/orders`, ...).
//! `tests/order_service_http.rs` drives the same service, runs this demo
//! (`demo.rs`) in-process, and runs this binary when `cargo test` built it.

mod demo;
mod service;

use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let timeout_ms: u64 = std::env::var("ORDER_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let serve = std::env::args().any(|a| a == "--serve");
    let ok = demo::run(Duration::from_millis(timeout_ms), serve).await?;
    println!("{}", if ok { "ok" } else { "UNEXPECTED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
