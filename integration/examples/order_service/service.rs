//! The order service: axum over sqlx on one SQLite file, which holds the
//! orders and their timeouts (`SqliteBackend`), so "create the order and
//! its timeout" and "pay and cancel the timeout" are each one transaction.
//! The example (`main.rs`, `demo.rs`) runs it; `tests/order_service_http.rs`
//! drives it over HTTP.
//!
//! - `POST /orders` inserts an unpaid order and schedules its timeout
//!   (`AsyncClient::schedule_in`) in one `BEGIN IMMEDIATE` transaction:
//!   both or neither.
//! - `POST /orders/{id}/pay` marks it paid and cancels its timeout
//!   (`AsyncClient::cancel_in`) in one transaction, if it is unpaid
//!   (`409 Conflict` when it was closed or paid already).
//! - `GET /orders/{id}`: `state created_ms closed_ms close_runs`.
//! - The consumer, a `DurablePool` with an async handler, closes an order
//!   still unpaid when its timeout fires. Its update is conditional
//!   (`WHERE state = 'unpaid'`), so a payment that committed first wins,
//!   and a repeated delivery closes nothing twice.

use std::error::Error;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use schedpool::durable::{AsyncClient, DurablePool, SqliteBackend};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The timeouts' kind.
const CLOSE: &str = "close-order";

type BoxError = Box<dyn Error + Send + Sync>;

/// The wall clock in ms (the SQLite backend's clock too).
fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

#[derive(Clone)]
struct App {
    db: SqlitePool,
    timeouts: AsyncClient,
    timeout: Duration,
}

/// A running service: its address, and what `stop` ends.
pub struct OrderService {
    pub addr: SocketAddr,
    pool: Arc<DurablePool>,
    server: tokio::task::JoinHandle<()>,
}

/// Starts the service on `file` (created if missing) and 127.0.0.1 on a
/// free port: orders not paid within `timeout` are closed. Call it on a
/// tokio runtime; the pool's async handlers run on it.
pub async fn start(file: &Path, timeout: Duration) -> Result<OrderService, BoxError> {
    let opts = SqliteConnectOptions::new()
        .filename(file)
        .create_if_missing(true);
    let db = SqlitePool::connect_with(opts).await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS orders (
             id INTEGER PRIMARY KEY AUTOINCREMENT,
             state TEXT NOT NULL,
             created_ms INTEGER NOT NULL,
             closed_ms INTEGER,
             close_runs INTEGER NOT NULL DEFAULT 0)",
    )
    .execute(&db)
    .await?;
    // The consumer: opening the file and building the pool block (file
    // I/O, threads), so off the runtime's threads.
    let (file, runtime, handler_db) = (
        file.to_path_buf(),
        tokio::runtime::Handle::current(),
        db.clone(),
    );
    let pool = tokio::task::spawn_blocking(move || {
        DurablePool::builder(SqliteBackend::open(&file, "orders")?)
            .threads(1)
            .runtime(runtime)
            .handler_async(CLOSE, move |id: i64, _job| close(handler_db.clone(), id))
            .build()
    })
    .await??;
    let pool = Arc::new(pool);
    let app = App {
        db,
        timeouts: pool.async_client(),
        timeout,
    };
    let router = Router::new()
        .route("/orders", post(create))
        .route("/orders/{id}", get(show))
        .route("/orders/{id}/pay", post(pay))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            eprintln!("order service: {e}");
        }
    });
    Ok(OrderService { addr, pool, server })
}

impl OrderService {
    /// Stops serving, then shuts the pool down (off the runtime).
    pub async fn stop(self) {
        self.server.abort();
        let pool = self.pool;
        let _ = tokio::task::spawn_blocking(move || pool.shutdown()).await;
    }
}

/// The timeout's handler: closes the order if it is still unpaid.
async fn close(db: SqlitePool, id: i64) -> Result<(), BoxError> {
    let mut tx = db.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query("UPDATE orders SET close_runs = close_runs + 1 WHERE id = ?1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "UPDATE orders SET state = 'closed', closed_ms = ?2 WHERE id = ?1 AND state = 'unpaid'",
    )
    .bind(id)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A failure as a 500 with its text.
fn fail(e: impl std::fmt::Display) -> (StatusCode, String) {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

type Reply = Result<(StatusCode, String), (StatusCode, String)>;

/// `POST /orders`: the order and its timeout, in one transaction.
async fn create(State(app): State<App>) -> Reply {
    let mut tx = app.db.begin_with("BEGIN IMMEDIATE").await.map_err(fail)?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO orders (state, created_ms) VALUES ('unpaid', ?1) RETURNING id",
    )
    .bind(now_ms())
    .fetch_one(&mut *tx)
    .await
    .map_err(fail)?;
    app.timeouts
        .schedule_in(&mut tx, CLOSE, &format!("order-{id}"), &id, app.timeout)
        .await
        .map_err(fail)?;
    tx.commit().await.map_err(fail)?;
    Ok((StatusCode::CREATED, id.to_string()))
}

/// `POST /orders/{id}/pay`: paid and its timeout cancelled, in one
/// transaction; `409` unless it was unpaid.
async fn pay(State(app): State<App>, UrlPath(id): UrlPath<i64>) -> Reply {
    let mut tx = app.db.begin_with("BEGIN IMMEDIATE").await.map_err(fail)?;
    let paid = sqlx::query("UPDATE orders SET state = 'paid' WHERE id = ?1 AND state = 'unpaid'")
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
    if paid.rows_affected() == 0 {
        tx.rollback().await.map_err(fail)?;
        return Ok((StatusCode::CONFLICT, "not unpaid".into()));
    }
    app.timeouts
        .cancel_in(&mut tx, &format!("order-{id}"))
        .await
        .map_err(fail)?;
    tx.commit().await.map_err(fail)?;
    Ok((StatusCode::OK, "paid".into()))
}

/// `GET /orders/{id}`: `state created_ms closed_ms close_runs` (`closed_ms`
/// is `-` until closed).
async fn show(State(app): State<App>, UrlPath(id): UrlPath<i64>) -> Reply {
    let row: Option<(String, i64, Option<i64>, i64)> =
        sqlx::query_as("SELECT state, created_ms, closed_ms, close_runs FROM orders WHERE id = ?1")
            .bind(id)
            .fetch_optional(&app.db)
            .await
            .map_err(fail)?;
    match row {
        None => Ok((StatusCode::NOT_FOUND, "no such order".into())),
        Some((state, created, closed, runs)) => {
            let closed = closed.map_or("-".to_string(), |c| c.to_string());
            Ok((StatusCode::OK, format!("{state} {created} {closed} {runs}")))
        }
    }
}

/// One HTTP/1.1 request to `addr` on a fresh connection: the status and
/// the body. (A client in a few lines, so the example needs no other
/// crate.)
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
) -> Result<(u16, String), BoxError> {
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).await?;
    let mut reply = String::new();
    conn.read_to_string(&mut reply).await?;
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP reply: {reply:?}"))?;
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_string()))
}

/// An order as `GET /orders/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub state: String,
    pub created_ms: i64,
    pub closed_ms: Option<i64>,
    pub close_runs: i64,
}

/// `GET /orders/{id}`, parsed.
pub async fn order(addr: SocketAddr, id: i64) -> Result<Order, BoxError> {
    let (status, body) = request(addr, "GET", &format!("/orders/{id}")).await?;
    let parts: Vec<&str> = body.split(' ').collect();
    match (status, parts.as_slice()) {
        (200, [state, created, closed, runs]) => Ok(Order {
            state: state.to_string(),
            created_ms: created.parse()?,
            closed_ms: closed.parse().ok(),
            close_runs: runs.parse()?,
        }),
        _ => Err(format!("GET /orders/{id}: {status} {body:?}").into()),
    }
}
