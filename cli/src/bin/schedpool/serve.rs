//! `schedpool console`: the web console on its own server.
//!
//! Invariants: it binds loopback unless told otherwise, and then accepts
//! only loopback host names (DNS rebinding); anything else makes every
//! page need the token. A generated token is printed once, on stderr.

use std::net::SocketAddr;
use std::time::Duration;

use schedpool_cli::console::{generate_token, router, ConsoleConfig};
use schedpool_cli::{Error, ErrorKind, Store};

pub(crate) fn console(
    store: Store,
    listen: SocketAddr,
    token: Option<String>,
    sample_every: Duration,
) -> Result<(), Error> {
    let failed =
        |what: &str, e: std::io::Error| Error::new(ErrorKind::Failed, format!("{what}: {e}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| failed("starting the server's runtime", e))?;
    let given = token.is_some();
    let token = token.unwrap_or_else(generate_token);
    if token.len() < 16 {
        return Err(Error::new(
            ErrorKind::Usage,
            "the token is too short: give at least 16 characters (or none, for a random one)",
        ));
    }
    let loopback = listen.ip().is_loopback();
    let mut config = ConsoleConfig::new(token.clone())
        .sample_every(sample_every)
        .token_for_reads(!loopback);
    if loopback {
        let port = listen.port();
        config = config.allowed_hosts([
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]);
    }
    let label = store.label().to_string();
    let app = router(store, config);
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| Error::new(ErrorKind::Unavailable, format!("cannot listen on {listen}: {e} (is the port taken? try --listen 127.0.0.1:0)")))?;
        let addr = listener.local_addr().map_err(|e| failed("reading the bound address", e))?;
        eprintln!("schedpool console for {label}");
        eprintln!("  http://{addr}/");
        if given {
            eprintln!("  changes need the token you gave (log in at http://{addr}/login)");
        } else {
            eprintln!("  token (changes need it; log in at http://{addr}/login): {token}");
        }
        if !loopback {
            eprintln!("  bound to a non-loopback address: every page needs the token; serve it behind TLS");
        }
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| failed("serving", e))
    })
}
