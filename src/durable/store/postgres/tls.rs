//! How the backend's connections are made: plain, or TLS on rustls
//! (feature `postgres-tls`) with the server's certificate checked against
//! the system's roots or the CA in `PostgresOptions`. A leaf: it takes the
//! two TLS settings, not the options.
//!
//! Invariants: TLS is used exactly when it is asked for (`require_tls`, a
//! CA, or `sslmode=require` in the parameters), so turning the feature on
//! changes no existing connection; asking for it without the feature is a
//! [`DurableError::Config`] at connect, never a silent plain connection;
//! with TLS, `sslmode` is `require`, so a server without TLS is refused.

use postgres::config::SslMode;
use postgres::{Client, Config, NoTls};

use crate::durable::store::backend::DurableError;

/// The connector of every connection of one backend.
#[derive(Clone)]
pub(super) enum Connector {
    Plain,
    #[cfg(feature = "postgres-tls")]
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl Connector {
    /// The connector the options (`require_tls`, `ca_pem`) and `config`
    /// ask for; sets `sslmode=require` on `config` when TLS is used.
    pub(super) fn new(
        config: &mut Config,
        require_tls: bool,
        ca_pem: Option<&[u8]>,
    ) -> Result<Self, DurableError> {
        let wanted = require_tls || ca_pem.is_some() || config.get_ssl_mode() == SslMode::Require;
        if !wanted {
            return Ok(Connector::Plain);
        }
        config.ssl_mode(SslMode::Require);
        rustls_connector(ca_pem)
    }

    pub(super) fn connect(&self, config: &Config) -> Result<Client, postgres::Error> {
        match self {
            Connector::Plain => config.connect(NoTls),
            #[cfg(feature = "postgres-tls")]
            Connector::Rustls(tls) => config.connect(tls.clone()),
        }
    }
}

#[cfg(feature = "tokio")]
impl Connector {
    /// An async connection (the async client's): its connection task is
    /// spawned on the current tokio runtime.
    pub(super) async fn connect_async(
        &self,
        config: &tokio_postgres::Config,
    ) -> Result<tokio_postgres::Client, postgres::Error> {
        match self {
            Connector::Plain => {
                let (client, connection) = config.connect(NoTls).await?;
                drop(tokio::spawn(connection));
                Ok(client)
            }
            #[cfg(feature = "postgres-tls")]
            Connector::Rustls(tls) => {
                let (client, connection) = config.connect(tls.clone()).await?;
                drop(tokio::spawn(connection));
                Ok(client)
            }
        }
    }
}

/// The async client's copy of a sync `postgres::Config` (which has no
/// way back to the `tokio_postgres::Config` it wraps): every setting it
/// can read.
#[cfg(feature = "tokio")]
pub(super) fn async_config(c: &Config) -> tokio_postgres::Config {
    use postgres::config::Host;
    let mut a = tokio_postgres::Config::new();
    if let Some(v) = c.get_user() {
        a.user(v);
    }
    if let Some(v) = c.get_password() {
        a.password(v);
    }
    if let Some(v) = c.get_dbname() {
        a.dbname(v);
    }
    if let Some(v) = c.get_options() {
        a.options(v);
    }
    if let Some(v) = c.get_application_name() {
        a.application_name(v);
    }
    a.ssl_mode(c.get_ssl_mode());
    a.ssl_negotiation(c.get_ssl_negotiation());
    for host in c.get_hosts() {
        match host {
            Host::Tcp(h) => a.host(h),
            Host::Unix(p) => a.host_path(p),
        };
    }
    for addr in c.get_hostaddrs() {
        a.hostaddr(*addr);
    }
    for port in c.get_ports() {
        a.port(*port);
    }
    if let Some(v) = c.get_connect_timeout() {
        a.connect_timeout(*v);
    }
    if let Some(v) = c.get_tcp_user_timeout() {
        a.tcp_user_timeout(*v);
    }
    a.keepalives(c.get_keepalives());
    a.keepalives_idle(c.get_keepalives_idle());
    if let Some(v) = c.get_keepalives_interval() {
        a.keepalives_interval(v);
    }
    if let Some(v) = c.get_keepalives_retries() {
        a.keepalives_retries(v);
    }
    a.target_session_attrs(c.get_target_session_attrs());
    a.channel_binding(c.get_channel_binding());
    a.load_balance_hosts(c.get_load_balance_hosts());
    a
}

#[cfg(feature = "postgres-tls")]
fn rustls_connector(ca_pem: Option<&[u8]>) -> Result<Connector, DurableError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    use std::sync::Arc;

    let mut roots = rustls::RootCertStore::empty();
    match ca_pem {
        Some(pem) => {
            let certs = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| config(format!("the CA is not valid PEM: {e}"), e))?;
            if certs.is_empty() {
                return Err(DurableError::Config(
                    "the CA PEM holds no certificate".into(),
                ));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| config(format!("a CA certificate: {e}"), e))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(DurableError::Config(
                    "TLS asked for, no CA given, and no system root certificates found".into(),
                ));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| config(format!("TLS set-up: {e}"), e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Connector::Rustls(
        tokio_postgres_rustls::MakeRustlsConnect::new(tls),
    ))
}

/// A configuration error caused by `source`.
#[cfg(feature = "postgres-tls")]
fn config(message: String, source: impl std::error::Error + Send + Sync + 'static) -> DurableError {
    DurableError::Config(crate::durable::store::error::ErrorDetail::with_source(
        message, source,
    ))
}

#[cfg(not(feature = "postgres-tls"))]
fn rustls_connector(_ca_pem: Option<&[u8]>) -> Result<Connector, DurableError> {
    Err(DurableError::Config(
        "TLS asked for (require_tls, a CA, or sslmode=require), but schedpool was built \
         without feature postgres-tls"
            .into(),
    ))
}
