//! The server checks at connect: the clock skew, and the settings that
//! decide whether a put or an ack that returned `Ok` survives a crash.
//!
//! Invariants:
//!
//! - Both run once, on the first connection, before the backend is
//!   returned: the settings before the schema's migration, the skew after
//!   it (it reads the schema's clock function). The settings read are the ones every connection of the
//!   backend gets: the server's, the database's and the role's, and the
//!   connection parameters' `options`.
//! - Skew never refuses (nothing becomes early by it: deadlines are the
//!   server's); it warns.
//! - A setting that is `off` is a warning (logged at WARN and kept in
//!   `PostgresBackend::warnings`), and with `PostgresOptions::strict` an
//!   error. Strict refuses when any of the three is `off`; it does not
//!   look at replication (`synchronous_standby_names`, failover to an
//!   asynchronous replica), which `docs/durable.md` lists as loss windows
//!   of their own. A setting that cannot be read fails the connect.
//! - They are read before the migration, so a strict connect that is
//!   refused has written nothing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use postgres::Client;

use super::client::PgClient;
use super::error::map_err;
use super::reply::{bad_reply, ms};
use crate::durable::store::backend::DurableError;

/// Warns when this machine's clock and the server's differ by more than
/// `skew_warning`.
pub(super) fn check_skew(client: &mut Client, pg: &PgClient) -> Result<(), DurableError> {
    let s = &pg.s;
    let row = client
        .query_one(&format!("SELECT {s}.now_ms()"), &[])
        .map_err(map_err)?;
    let server = ms(row.try_get(0).map_err(bad_reply)?);
    let local = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let skew = Duration::from_millis(server.abs_diff(local));
    if skew > pg.opts.server.skew_warning {
        tracing::warn!(target: "schedpool::durable", skew_ms = skew.as_millis() as u64,
            "this machine's clock and the PostgreSQL server's differ; deadlines follow the server's");
    }
    Ok(())
}

/// The settings under which a write that returned `Ok` can be lost, each
/// with what a crash then costs. Every role may read them.
const DURABILITY: [(&str, &str); 3] = [
    (
        "fsync",
        "an operating-system crash or power loss can lose committed puts and acks, \
         and corrupt the database",
    ),
    (
        "full_page_writes",
        "an operating-system crash can leave torn pages that recovery cannot repair",
    ),
    (
        "synchronous_commit",
        "a server crash can lose the puts and acks of the last moments \
         (up to three times wal_writer_delay) after they returned Ok",
    ),
];

/// Reads [`DURABILITY`]'s settings: the ones that are `off`, as warnings
/// (each logged), or, with `strict`, a [`DurableError::Config`] naming
/// them.
pub(super) fn check_durability(
    client: &mut Client,
    pg: &PgClient,
) -> Result<Vec<String>, DurableError> {
    let mut problems = Vec::new();
    for (name, cost) in DURABILITY {
        let row = client
            .query_one("SELECT current_setting($1)", &[&name])
            .map_err(map_err)?;
        let value: String = row.try_get(0).map_err(bad_reply)?;
        if value == "off" {
            problems.push(format!("{name} is off: {cost}"));
        }
    }
    if problems.is_empty() {
        return Ok(problems);
    }
    if pg.opts.server.strict {
        return Err(DurableError::Config(
            format!(
                "refused (strict): the server's settings can lose acknowledged writes: {}",
                problems.join("; ")
            )
            .into(),
        ));
    }
    for problem in &problems {
        tracing::warn!(target: "schedpool::durable", "PostgreSQL: {problem}");
    }
    Ok(problems)
}
