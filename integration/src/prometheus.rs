//! A Prometheus endpoint for schedpool's metrics with no HTTP stack: the
//! exporter's recorder (`PrometheusBuilder::build_recorder`) rendered by
//! `PrometheusHandle::render` on a plain `std::net::TcpListener`. The
//! example `metrics_prometheus` serves it; `tests/metrics.rs` scrapes it.
//!
//! Why not the exporter's own listener: its `http-listener` feature
//! compiles tokio, hyper and 23 more crates (76 in this package's
//! `cargo tree -e normal,build` with the feature `metrics`, against 51
//! without it). A scrape is one GET; a thread and a `TcpListener` serve it.
//!
//! # Invariants
//!
//! - One thread accepts, one connection at a time, each with a 2 s read
//!   and write timeout, so a stuck client delays a scrape but never stops
//!   the endpoint. `GET /metrics` (or `/`) answers 200 with the rendered
//!   text; anything else 404.
//! - A second thread runs the recorder's upkeep every 5 s (the exporter
//!   drains histogram samples there when nobody scrapes).
//! - [`Endpoint::stop`] (or its drop) stops and joins both threads.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

/// The bucket bounds (seconds) of schedpool's histograms: lateness and run
/// time, from 100 µs to 10 s.
pub const BUCKETS: [f64; 10] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 10.0,
];

/// A recorder that renders schedpool's histograms as Prometheus
/// histograms (with [`BUCKETS`]) rather than the exporter's default
/// summaries.
pub fn recorder() -> PrometheusRecorder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Prefix("schedpool_".into()), &BUCKETS)
        .expect("the bucket list is not empty")
        .build_recorder()
}

/// A running endpoint.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// Serves `handle`'s metrics on `addr` (port 0: a free one).
///
/// # Errors
///
/// The listener's bind error, or a thread that could not start.
pub fn serve(handle: PrometheusHandle, addr: impl ToSocketAddrs) -> io::Result<Endpoint> {
    let listener = TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut endpoint = Endpoint {
        addr,
        stop: stop.clone(),
        threads: Vec::new(),
    };
    let h = handle.clone();
    let s = stop.clone();
    endpoint.threads.push(
        std::thread::Builder::new()
            .name("metrics-http".into())
            .spawn(move || accept(&listener, &h, &s))?,
    );
    endpoint.threads.push(
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || upkeep(&handle, &stop))?,
    );
    Ok(endpoint)
}

impl Endpoint {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The scrape URL.
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }

    /// Stops serving and joins the threads.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        if self.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        // Wake the blocked accept (and the upkeep's park).
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        for t in self.threads.drain(..) {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.shut();
    }
}

fn accept(listener: &TcpListener, handle: &PrometheusHandle, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(conn) = conn {
            // A client that goes away mid-answer is its own problem.
            let _ = answer(conn, handle);
        }
    }
}

fn answer(mut conn: TcpStream, handle: &PrometheusHandle) -> io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let head = read_head(&mut conn)?;
    let path = head.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = if head.starts_with("GET ") && (path == "/metrics" || path == "/") {
        ("200 OK", handle.render())
    } else {
        ("404 Not Found", "not found: try GET /metrics\n".to_string())
    };
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    conn.flush()
}

/// The request line and headers (up to 8 KiB), as text.
fn read_head(conn: &mut TcpStream) -> io::Result<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

fn upkeep(handle: &PrometheusHandle, stop: &AtomicBool) {
    let period = Duration::from_secs(5);
    let mut next = Instant::now() + period;
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= next {
            handle.run_upkeep();
            next = now + period;
        } else {
            std::thread::park_timeout(next - now);
        }
    }
}

/// `GET /metrics` from `addr`: the response body.
///
/// # Errors
///
/// A connection or read error, or a status other than 200.
pub fn scrape(addr: SocketAddr) -> io::Result<String> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        conn,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    conn.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no header end"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(io::Error::other(format!("scrape answered: {head}")));
    }
    Ok(body.to_string())
}
