//! Opening a store by URL: `sqlite:PATH`, `redis://…` or `rediss://…`,
//! `postgres://…` or `postgresql://…` (or PostgreSQL `host=… user=…`
//! parameters after `postgres:`).
//!
//! Invariants: the tool never creates a store (a missing SQLite file is
//! refused, a PostgreSQL schema is not migrated); a URL is shown with its
//! password replaced by `***`.

use std::time::Duration;

use super::Ops;

use crate::error::Error;

/// How to reach a store, beside its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenOptions {
    /// The queue name (the library's `queue`/`name` argument).
    pub queue: String,
    /// The PostgreSQL schema (default `schedpool`).
    pub schema: Option<String>,
    /// A PEM file of the CA that signed the server's certificate (Redis, PostgreSQL).
    pub ca_file: Option<std::path::PathBuf>,
    /// How long to wait for the store, per connect and per operation.
    pub timeout: Duration,
}

impl OpenOptions {
    /// Options for `queue` with a 5 s timeout and nothing else.
    ///
    /// # Examples
    ///
    /// ```
    /// let opts = schedpool_cli::OpenOptions::new("orders");
    /// assert_eq!(opts.queue, "orders");
    /// ```
    pub fn new(queue: &str) -> Self {
        OpenOptions {
            queue: queue.to_string(),
            schema: None,
            ca_file: None,
            timeout: Duration::from_secs(5),
        }
    }
}

/// The URL forms, for error messages.
pub(crate) const FORMS: &str =
    "sqlite:PATH, redis://HOST:PORT/DB, rediss://… (TLS), postgres://USER@HOST/DB";

/// `url` with its password (the part between `:` and `@` after `//`) replaced by `***`.
///
/// # Examples
///
/// ```
/// use schedpool_cli::store::redact;
///
/// assert_eq!(redact("redis://ops:s3cret@db:6379/0"), "redis://ops:***@db:6379/0");
/// assert_eq!(redact("sqlite:/tmp/a.db"), "sqlite:/tmp/a.db");
/// ```
pub fn redact(url: &str) -> String {
    let Some(start) = url.find("//").map(|i| i + 2) else {
        return redact_params(url);
    };
    let rest = &url[start..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].find(':') {
            Some(colon) => format!("{}{}:***{}", &url[..start], &rest[..colon], &rest[at..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// `password=…` in key-value parameters replaced by `password=***`.
fn redact_params(text: &str) -> String {
    text.split(' ')
        .map(|part| match part.split_once('=') {
            Some(("password", _)) => "password=***".to_string(),
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Opens the backend `url` names.
pub(crate) fn backend(url: &str, opts: &OpenOptions) -> Result<Ops, Error> {
    if opts.queue.is_empty() {
        return Err(Error::usage("the queue name is empty: give --queue NAME"));
    }
    if let Some(path) = url
        .strip_prefix("sqlite://")
        .or(url.strip_prefix("sqlite:"))
    {
        return sqlite(path, opts);
    }
    if url.starts_with("redis://") || url.starts_with("rediss://") || url.starts_with("redis+unix:")
    {
        return redis(url, opts);
    }
    if let Some(params) = url
        .strip_prefix("postgres:")
        .filter(|p| !p.starts_with("//"))
    {
        return postgres(params, opts);
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return postgres(url, opts);
    }
    Err(Error::usage(format!(
        "cannot tell the store from the URL {:?}: give one of {FORMS}",
        redact(url)
    )))
}

fn not_built(store: &str, feature: &str) -> Error {
    Error::usage(format!(
        "this schedpool was built without {store} support: build it with \
         `cargo build -p schedpool-cli --features {feature}` (or `--features full`)"
    ))
}

#[cfg(feature = "sqlite")]
fn sqlite(path: &str, opts: &OpenOptions) -> Result<Ops, Error> {
    use schedpool::durable::{SqliteBackend, SqliteOptions};
    let path = std::path::Path::new(path);
    if !path.is_file() {
        return Err(Error::new(
            crate::ErrorKind::Unavailable,
            format!(
                "no SQLite store at {}: check the path (the tool opens an existing file, it never creates one)",
                path.display()
            ),
        ));
    }
    let options = SqliteOptions::default().busy_timeout(opts.timeout);
    SqliteBackend::open_with(path, &opts.queue, options)
        .and_then(Ops::new)
        .map_err(|e| Error::store(&format!("opening {}", path.display()), e))
}

#[cfg(not(feature = "sqlite"))]
fn sqlite(_: &str, _: &OpenOptions) -> Result<Ops, Error> {
    Err(not_built("SQLite", "sqlite"))
}

#[cfg(feature = "redis")]
fn redis(url: &str, opts: &OpenOptions) -> Result<Ops, Error> {
    use schedpool::durable::RedisOptions;
    if url.starts_with("rediss://") && !cfg!(feature = "redis-tls") {
        return Err(not_built("Redis TLS", "redis-tls"));
    }
    let mut options = RedisOptions::default()
        .connect_timeout(opts.timeout)
        .op_timeout(opts.timeout);
    if let Some(ca) = &opts.ca_file {
        options = options
            .ca_file(ca)
            .map_err(|e| Error::store("reading the CA file", e))?;
    }
    schedpool::durable::RedisBackend::connect_with(url, &opts.queue, options)
        .and_then(Ops::new)
        .map_err(|e| Error::store(&format!("connecting to {}", redact(url)), e))
}

#[cfg(not(feature = "redis"))]
fn redis(_: &str, _: &OpenOptions) -> Result<Ops, Error> {
    Err(not_built("Redis", "redis"))
}

#[cfg(feature = "postgres")]
fn postgres(params: &str, opts: &OpenOptions) -> Result<Ops, Error> {
    use schedpool::durable::{PostgresBackend, PostgresOptions};
    // An operator's tool never creates or migrates the schema.
    let mut options = PostgresOptions::default()
        .migrate(false)
        .connect_timeout(opts.timeout)
        .op_timeout(opts.timeout);
    if let Some(schema) = &opts.schema {
        options = options.schema(schema.clone());
    }
    if let Some(ca) = &opts.ca_file {
        options = options
            .ca_file(ca)
            .map_err(|e| Error::store("reading the CA file", e))?;
    }
    PostgresBackend::connect_with(params, &opts.queue, options)
        .and_then(Ops::new)
        .map_err(|e| Error::store(&format!("connecting to {}", redact(params)), e))
}

#[cfg(not(feature = "postgres"))]
fn postgres(_: &str, _: &OpenOptions) -> Result<Ops, Error> {
    Err(not_built("PostgreSQL", "postgres"))
}
