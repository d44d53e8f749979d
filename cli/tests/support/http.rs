//! A console served on a free loopback port from a runtime of its own,
//! and a minimal HTTP/1.1 client over `TcpStream` (one request per
//! connection), so the tests see exactly the bytes a browser would.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use schedpool_cli::console::{router, ConsoleConfig};
use schedpool_cli::Store;

/// A console being served; stopped when dropped.
pub struct Served {
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Served {
    pub fn start(store: Store, config: ConsoleConfig) -> Served {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().unwrap();
        let app = router(store, config);
        runtime.spawn(async move { axum::serve(listener, app).await });
        Served {
            addr,
            runtime: Some(runtime),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

/// One response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The session cookie it sets (`name=value`), if any.
    pub fn cookie(&self) -> Option<String> {
        self.header("set-cookie")
            .map(|c| c.split(';').next().unwrap().to_string())
    }

    /// The CSRF token of the first form on the page.
    pub fn csrf(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .expect("a form with a CSRF field")
            + 19;
        self.body[at..at + 64].to_string()
    }
}

/// A browser-like client: a Host header, an optional cookie.
pub struct Client {
    pub addr: SocketAddr,
    pub host: String,
    pub cookie: Option<String>,
}

impl Client {
    pub fn new(served: &Served) -> Client {
        Client {
            addr: served.addr,
            host: served.addr.to_string(),
            cookie: None,
        }
    }

    pub fn get(&mut self, path: &str) -> Response {
        self.send("GET", path, None, &[])
    }

    pub fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Response {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        self.send("POST", path, Some(body), &[])
    }

    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<String>,
        extra: &[(&str, &str)],
    ) -> Response {
        let mut s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.host
        );
        if let Some(c) = &self.cookie {
            req.push_str(&format!("Cookie: {c}\r\n"));
        }
        for (k, v) in extra {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        let body = body.unwrap_or_default();
        if method == "POST" {
            req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        req.push_str(&body);
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).expect("read the response");
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
        let mut lines = head.lines();
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let body = if headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v == "chunked")
        {
            unchunk(body)
        } else {
            body.to_string()
        };
        let response = Response {
            status,
            headers,
            body,
        };
        if let Some(c) = response.cookie() {
            self.cookie = Some(c);
        }
        response
    }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}
