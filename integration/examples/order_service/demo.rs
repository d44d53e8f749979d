//! The example's demo: the service on a temp file, two orders created
//! over HTTP, one paid, the other left to its timeout; prints what
//! happened and says whether it is what the service promises.

use std::time::Duration;

use crate::service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Runs the demo with orders timing out after `timeout` (with `serve`,
/// serves until killed instead): `true` when the paid order stayed paid
/// and the unpaid one was closed once, no earlier than its timeout, and
/// then refused payment.
pub async fn run(timeout: Duration, serve: bool) -> Result<bool, BoxError> {
    let dir = std::env::temp_dir().join(format!(
        "schedpool-order-service-{}-{}",
        std::process::id(),
        timeout.as_millis()
    ));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("shop.db");
    let svc = service::start(&file, timeout).await?;
    let addr = svc.addr;
    println!(
        "order service on http://{addr} (file {}), timeout {timeout:?}",
        file.display()
    );
    if serve {
        std::future::pending::<()>().await;
    }

    let (_, paid) = service::request(addr, "POST", "/orders").await?;
    let (_, unpaid) = service::request(addr, "POST", "/orders").await?;
    let (paid, unpaid): (i64, i64) = (paid.parse()?, unpaid.parse()?);
    let (status, body) = service::request(addr, "POST", &format!("/orders/{paid}/pay")).await?;
    println!("created orders {paid} and {unpaid}; paid {paid}: {status} {body}");
    tokio::time::sleep(timeout + Duration::from_millis(1_000)).await;
    let mut closed = service::order(addr, unpaid).await?;
    for _ in 0..100 {
        if closed.state == "closed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        closed = service::order(addr, unpaid).await?;
    }
    let kept = service::order(addr, paid).await?;
    let (status, _) = service::request(addr, "POST", &format!("/orders/{unpaid}/pay")).await?;
    let after = closed.closed_ms.unwrap_or(0) - closed.created_ms;
    println!(
        "order {paid}: {} (timeout runs: {})",
        kept.state, kept.close_runs
    );
    println!(
        "order {unpaid}: {} {after} ms after its creation (timeout {timeout:?}; runs: {}); \
         paying it now: {status}",
        closed.state, closed.close_runs
    );
    svc.stop().await;
    std::fs::remove_dir_all(&dir)?;
    Ok(kept.state == "paid"
        && kept.close_runs == 0
        && closed.state == "closed"
        && closed.close_runs == 1
        && after >= timeout.as_millis() as i64
        && status == 409)
}
