//! The web console: an overview with charts, item lists with filters, an
//! item's page, dead letters with requeue and purge (one or in bulk, after
//! a confirmation), schedules with "fire now", pausing and resuming kinds,
//! and the audit trail, as an axum [`Router`] over a [`Store`].
//!
//! Layers, each using only those before it: `form` (query strings and
//! form bodies), `security` (sessions, the token, CSRF, the Host check,
//! response headers), `sampler` (the in-memory history the charts draw),
//! `chart` (inline SVG), `layout` (the page frame and its stylesheet),
//! `pages` (reads, and what every page uses), `lists` (item lists),
//! `actions` (changes), and this file (configuration and routes).
//!
//! Security model (docs/durable.md, "Operating it"):
//!
//! - Every change (a POST other than the login) needs a session that
//!   logged in with the token given at start, and the session's CSRF token
//!   in the form; reads need the login too when
//!   [`ConsoleConfig::token_for_reads`] is set (`schedpool console` sets it
//!   whenever it binds anything but loopback).
//! - Session cookies are `HttpOnly` and `SameSite=Strict`; a POST whose
//!   `Origin` is another site is refused; with [`ConsoleConfig::allowed_hosts`]
//!   a request for another `Host` is refused (DNS rebinding).
//! - Pages are maud templates, which escape every value (ids, payloads,
//!   errors, kinds); the Content-Security-Policy allows no script at all
//!   and the stylesheet from the console itself only.

mod actions;
mod chart;
mod form;
mod layout;
mod lists;
mod pages;
mod sampler;
mod security;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;

use crate::store::Store;

/// How the console runs: its token, who may read, and what it samples.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool_cli::console::ConsoleConfig;
///
/// let config = ConsoleConfig::new("s3cret-token")
///     .token_for_reads(true)
///     .allowed_hosts(["ops.example.com"])
///     .sample_every(Duration::from_secs(10));
/// assert!(config.reads_need_token());
/// ```
#[derive(Clone)]
pub struct ConsoleConfig {
    token: Arc<str>,
    token_for_reads: bool,
    allowed_hosts: Vec<String>,
    sample_every: Duration,
    samples: usize,
    base_path: String,
    secure_cookie: bool,
    payload_cap: usize,
}

impl std::fmt::Debug for ConsoleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleConfig")
            .field("token", &"***")
            .field("token_for_reads", &self.token_for_reads)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("sample_every", &self.sample_every)
            .field("base_path", &self.base_path)
            .finish()
    }
}

impl ConsoleConfig {
    /// A console whose changes need `token` (use a long random one:
    /// [`generate_token`]); reads are open, every `Host` is accepted,
    /// samples every 5 s, one hour of history.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let c = ConsoleConfig::new(schedpool_cli::console::generate_token());
    /// assert!(!c.reads_need_token());
    /// ```
    pub fn new(token: impl Into<String>) -> Self {
        ConsoleConfig {
            token: token.into().into(),
            token_for_reads: false,
            allowed_hosts: Vec::new(),
            sample_every: Duration::from_secs(5),
            samples: 720,
            base_path: String::new(),
            secure_cookie: false,
            payload_cap: crate::payload::DEFAULT_CAP,
        }
    }

    /// Reads need the token too (set it when anyone but the machine's own
    /// users can reach the console).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// assert!(ConsoleConfig::new("t").token_for_reads(true).reads_need_token());
    /// ```
    pub fn token_for_reads(mut self, on: bool) -> Self {
        self.token_for_reads = on;
        self
    }

    /// Whether reads need the token.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// assert!(!ConsoleConfig::new("t").reads_need_token());
    /// ```
    pub fn reads_need_token(&self) -> bool {
        self.token_for_reads
    }

    /// Only requests whose `Host` header names one of `hosts` (with or
    /// without a port) are served: a defence against DNS rebinding. Empty
    /// (the default) accepts any.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let c = ConsoleConfig::new("t").allowed_hosts(["ops.example.com", "ops.example.com:8443"]);
    /// # drop(c);
    /// ```
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// How often the charts' history is sampled (default 5 s; at least 100 ms).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let c = ConsoleConfig::new("t").sample_every(std::time::Duration::from_secs(10));
    /// # drop(c);
    /// ```
    pub fn sample_every(mut self, every: Duration) -> Self {
        self.sample_every = every.max(Duration::from_millis(100));
        self
    }

    /// How many samples the history keeps (default 720: an hour at 5 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let c = ConsoleConfig::new("t").samples(8640); // a day at 10 s
    /// # drop(c);
    /// ```
    pub fn samples(mut self, n: usize) -> Self {
        self.samples = n.max(2);
        self
    }

    /// The path the router is nested under (`"/ops"` for
    /// `Router::new().nest("/ops", router(..))`), for the links it writes
    /// and its cookie's path. Default: none.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let c = ConsoleConfig::new("t").base_path("/ops/");
    /// # drop(c);
    /// ```
    pub fn base_path(mut self, path: &str) -> Self {
        self.base_path = path.trim_end_matches('/').to_string();
        self
    }

    /// Mark the session cookie `Secure` (serve the console over HTTPS then).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let c = ConsoleConfig::new("t").secure_cookie(true);
    /// # drop(c);
    /// ```
    pub fn secure_cookie(mut self, on: bool) -> Self {
        self.secure_cookie = on;
        self
    }

    /// The most payload text an item page shows, in bytes (default 64 KiB).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let c = ConsoleConfig::new("t").payload_cap(4096);
    /// # drop(c);
    /// ```
    pub fn payload_cap(mut self, bytes: usize) -> Self {
        self.payload_cap = bytes.max(16);
        self
    }

    /// The safe defaults for a console served on its own at `listen`
    /// (what `schedpool console` uses): bound to loopback, only loopback
    /// host names are served (DNS rebinding) and reads are open to the
    /// machine's users; bound to anything else, every page needs the token.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::console::ConsoleConfig;
    ///
    /// let local = ConsoleConfig::for_listen("127.0.0.1:8080".parse().unwrap(), "t".repeat(32));
    /// assert!(!local.reads_need_token());
    /// let open = ConsoleConfig::for_listen("0.0.0.0:8080".parse().unwrap(), "t".repeat(32));
    /// assert!(open.reads_need_token());
    /// ```
    pub fn for_listen(listen: std::net::SocketAddr, token: impl Into<String>) -> Self {
        let config = ConsoleConfig::new(token);
        if listen.ip().is_loopback() {
            let port = listen.port();
            config.allowed_hosts([
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ])
        } else {
            config.token_for_reads(true)
        }
    }

    /// The path of `route` under the base path.
    pub(crate) fn path(&self, route: &str) -> String {
        format!("{}{route}", self.base_path)
    }
}

/// A new random token: 32 bytes from the operating system, as 64 hex digits.
///
/// # Panics
///
/// When the operating system has no random source to give (never on Linux).
///
/// # Examples
///
/// ```
/// let token = schedpool_cli::console::generate_token();
/// assert_eq!(token.len(), 64);
/// assert_ne!(token, schedpool_cli::console::generate_token());
/// ```
pub fn generate_token() -> String {
    security::random_hex(32)
}

/// What every handler shares.
pub(crate) struct Console {
    pub(crate) store: Store,
    pub(crate) config: ConsoleConfig,
    pub(crate) sessions: security::Sessions,
    pub(crate) history: Arc<sampler::History>,
}

pub(crate) type Shared = Arc<Console>;

/// The console's routes over `store`, to serve (`axum::serve`) or nest in
/// another app. It starts a sampler thread for the charts, which ends
/// when the router (every clone of it) is dropped.
///
/// # Examples
///
/// ```
/// use schedpool::durable::MemoryBackend;
/// use schedpool_cli::{console, Store};
///
/// let store = Store::from_backend(MemoryBackend::new(), "orders")?;
/// let ops = console::router(store, console::ConsoleConfig::new(console::generate_token())
///     .base_path("/ops"));
/// let app: axum::Router = axum::Router::new().nest("/ops", ops);
/// # drop(app);
/// # Ok::<(), schedpool_cli::Error>(())
/// ```
pub fn router(store: Store, config: ConsoleConfig) -> Router {
    let history = sampler::History::new(config.samples);
    let console = Arc::new(Console {
        store,
        sessions: security::Sessions::default(),
        history: history.clone(),
        config,
    });
    sampler::start(&console);
    Router::new()
        .route("/", get(pages::overview))
        .route("/items", get(lists::items))
        .route("/item", get(pages::item))
        .route("/dead", get(lists::dead))
        .route("/schedules", get(pages::schedules))
        .route("/audit", get(pages::audit))
        .route("/login", get(pages::login).post(actions::login))
        .route("/logout", post(actions::logout))
        .route("/confirm", post(actions::confirm))
        .route("/apply", post(actions::apply))
        .route("/assets/console.css", get(layout::stylesheet))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            security::guard,
        ))
        .with_state(console)
}
