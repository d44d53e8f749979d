//! [`ServerOptions`]: the settings every store behind a network connection
//! shares (timeouts, TLS, strictness, the clock-skew warning), written
//! once here and embedded by each store's own options
//! (`RedisOptions::server`, `PostgresOptions::server`).
//!
//! `server_setters!` gives each store's options the same chained setters
//! (`op_timeout`, `strict`, `ca_pem`, `ca_file`, `require_tls`,
//! `connect_timeout`, `skew_warning`), documented once, so that
//! `RedisOptions::default().op_timeout(..)` reads as it always did.
//!
//! A leaf beside `backend.rs`: it uses only the error type.

use std::path::Path;
use std::time::Duration;

use super::error::{DurableError, ErrorDetail};

/// The settings every networked store shares: how long a connection and
/// an operation may take, TLS, strictness about the server's settings, and
/// the clock-skew warning. Each store's options embed one as `server`, and
/// have the same chained setters.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::ServerOptions;
///
/// let o = ServerOptions::default();
/// assert_eq!(o.op_timeout, Duration::from_secs(2));
/// assert!(!o.strict && !o.require_tls && o.ca_pem.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Connect timeout of each connection (default 2 s).
    pub connect_timeout: Duration,
    /// The longest one operation (with its retries) may take before it
    /// returns [`DurableError::Unavailable`] (default 2 s).
    pub op_timeout: Duration,
    /// Warn at connect when this machine's clock and the server's differ by
    /// more than this (default 2 s). Skew never makes anything early; it
    /// only shifts what `put_at(SystemTime)` means.
    pub skew_warning: Duration,
    /// PEM certificates the server's certificate must chain to, instead of
    /// the system's roots (default none). Needs the store's TLS feature
    /// (`redis-tls`, `postgres-tls`); without it, a CA is a
    /// [`DurableError::Config`].
    pub ca_pem: Option<Vec<u8>>,
    /// Connect with TLS only (default false): a connection that would not
    /// be encrypted is a [`DurableError::Config`] before anything is sent.
    pub require_tls: bool,
    /// Refuse to connect ([`DurableError::Config`]) instead of warning when
    /// the server's settings can lose a write that returned `Ok`, or
    /// cannot be read: strict refuses what it cannot prove safe (default
    /// false; each store lists what it checks).
    pub strict: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            connect_timeout: Duration::from_secs(2),
            op_timeout: Duration::from_secs(2),
            skew_warning: Duration::from_secs(2),
            ca_pem: None,
            require_tls: false,
            strict: false,
        }
    }
}

impl ServerOptions {
    /// The PEM certificates in the file at `path`.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when the file cannot be read.
    pub(crate) fn read_ca(path: &Path) -> Result<Vec<u8>, DurableError> {
        std::fs::read(path).map_err(|e| {
            DurableError::Config(ErrorDetail::with_source(
                format!("cannot read the CA file {}: {e}", path.display()),
                e,
            ))
        })
    }
}

/// The chained setters of the [`ServerOptions`] a store's options embed
/// as `server`, for `impl $options { server_setters!($options); }`.
macro_rules! server_setters {
    ($options:ident) => {
        /// Sets [`ServerOptions::connect_timeout`](crate::durable::ServerOptions::connect_timeout).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::time::Duration;
        #[doc = concat!("use schedpool::durable::", stringify!($options), ";")]
        ///
        /// // A server across a slow link: wait longer for each connection.
        #[doc = concat!("let o = ", stringify!($options), "::default().connect_timeout(Duration::from_secs(5));")]
        /// assert_eq!(o.server.connect_timeout, Duration::from_secs(5));
        /// ```
        pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.server.connect_timeout = timeout;
            self
        }

        /// Sets [`ServerOptions::op_timeout`](crate::durable::ServerOptions::op_timeout).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::time::Duration;
        #[doc = concat!("use schedpool::durable::", stringify!($options), ";")]
        ///
        /// // Fail fast: a request handler that schedules a timeout waits at most 500 ms.
        #[doc = concat!("let o = ", stringify!($options), "::default().op_timeout(Duration::from_millis(500));")]
        /// assert_eq!(o.server.op_timeout, Duration::from_millis(500));
        /// ```
        pub fn op_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.server.op_timeout = timeout;
            self
        }

        /// Sets [`ServerOptions::skew_warning`](crate::durable::ServerOptions::skew_warning).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::time::Duration;
        #[doc = concat!("use schedpool::durable::", stringify!($options), ";")]
        ///
        #[doc = concat!("let o = ", stringify!($options), "::default().skew_warning(Duration::from_secs(30));")]
        /// assert_eq!(o.server.skew_warning, Duration::from_secs(30));
        /// ```
        pub fn skew_warning(mut self, skew: std::time::Duration) -> Self {
            self.server.skew_warning = skew;
            self
        }

        /// Sets [`ServerOptions::strict`](crate::durable::ServerOptions::strict).
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!("use schedpool::durable::", stringify!($options), ";")]
        ///
        #[doc = concat!("assert!(", stringify!($options), "::default().strict(true).server.strict);")]
        /// ```
        pub fn strict(mut self, strict: bool) -> Self {
            self.server.strict = strict;
            self
        }

        /// Sets [`ServerOptions::ca_pem`](crate::durable::ServerOptions::ca_pem): the
        /// server's certificate must chain to one of these PEM certificates.
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!("use schedpool::durable::", stringify!($options), ";")]
        ///
        /// let pem = b"-----BEGIN CERTIFICATE-----\n...".to_vec(); // your own CA
        #[doc = concat!("assert!(", stringify!($options), "::default().ca_pem(pem).server.ca_pem.is_some());")]
        /// ```
        pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
            self.server.ca_pem = Some(pem.into());
            self
        }

        /// Sets [`ServerOptions::ca_pem`](crate::durable::ServerOptions::ca_pem) from a
        /// PEM file.
        ///
        /// # Errors
        ///
        /// [`DurableError::Config`](crate::durable::DurableError::Config) when the
        /// file cannot be read.
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!("use schedpool::durable::{DurableError, ", stringify!($options), "};")]
        ///
        #[doc = concat!("let err = ", stringify!($options), "::default().ca_file(\"/no/such/ca.pem\").unwrap_err();")]
        /// assert!(matches!(err, DurableError::Config(_)));
        /// ```
        pub fn ca_file(
            self,
            path: impl AsRef<std::path::Path>,
        ) -> Result<Self, crate::durable::store::error::DurableError> {
            let pem = crate::durable::store::options::ServerOptions::read_ca(path.as_ref())?;
            Ok(self.ca_pem(pem))
        }

        /// Sets [`ServerOptions::require_tls`](crate::durable::ServerOptions::require_tls).
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!("use schedpool::durable::", stringify!($options), ";")]
        ///
        #[doc = concat!("assert!(", stringify!($options), "::default().require_tls(true).server.require_tls);")]
        /// ```
        pub fn require_tls(mut self, require: bool) -> Self {
            self.server.require_tls = require;
            self
        }
    };
}
pub(crate) use server_setters;
