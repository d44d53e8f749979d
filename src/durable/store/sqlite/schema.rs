//! The SQLite schema: three tables beside the application's own (so an
//! order row and its timeout can share one file and one transaction), made
//! by a versioned migration.
//!
//! One row per item in `schedpool_items`, keyed by (queue, id), with the
//! PostgreSQL backend's states:
//!
//! | state | meaning | `score` |
//! |---|---|---|
//! | 0 | pending | due time (ms) |
//! | 1 | in flight | lease expiry (ms) |
//! | 2 | dead-lettered | when it died (ms) |
//! | 3 | acked, kept only for its receipt | receipt expiry (ms) |
//!
//! `schedpool_tokens` holds the one token counter of the file (tokens never
//! repeat, across queues too); `schedpool_meta` the schema version.

use rusqlite::{Connection, OptionalExtension};

use super::error::map;
use crate::durable::store::error::DurableError;

/// The schema version this build creates and reads.
pub(super) const VERSION: i64 = 1;

const DDL_V1: &str = "
CREATE TABLE schedpool_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE schedpool_tokens (
    one  INTEGER PRIMARY KEY CHECK (one = 1),
    last INTEGER NOT NULL
);
INSERT INTO schedpool_tokens (one, last) VALUES (1, 0);
CREATE TABLE schedpool_items (
    queue     TEXT    NOT NULL,
    id        TEXT    NOT NULL,
    state     INTEGER NOT NULL CHECK (state BETWEEN 0 AND 3),
    score     INTEGER NOT NULL,
    deadline  INTEGER NOT NULL,
    due       INTEGER NOT NULL,
    token     INTEGER NOT NULL,
    attempts  INTEGER NOT NULL DEFAULT 0,
    envelope  BLOB    NOT NULL,
    r_token   INTEGER,
    r_result  INTEGER,
    r_expires INTEGER,
    PRIMARY KEY (queue, id)
) WITHOUT ROWID;
CREATE INDEX schedpool_items_by_state ON schedpool_items (queue, state, score, id);
";

/// The SQL that creates version 1 (the tables, the index, the version
/// row), for teams that migrate by hand.
pub(super) fn migration_sql() -> String {
    format!("{DDL_V1}INSERT INTO schedpool_meta (key, value) VALUES ('version', '{VERSION}');\n")
}

/// Brings the file to [`VERSION`], or checks it is there, in one
/// `BEGIN IMMEDIATE` transaction (so processes that open the file together
/// migrate once). A schema of a newer version is refused.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), DurableError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| map("opening the database", e))?;
    let has_meta: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' \
             AND name = 'schedpool_meta')",
            [],
            |r| r.get(0),
        )
        .map_err(|e| map("reading the schema", e))?;
    if has_meta {
        let found: Option<String> = tx
            .query_row(
                "SELECT value FROM schedpool_meta WHERE key = 'version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| map("reading the schema version", e))?;
        let version: i64 = found
            .as_deref()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                DurableError::Format(
                    format!("schedpool_meta has no readable version: {found:?}").into(),
                )
            })?;
        if version > VERSION {
            return Err(DurableError::Format(
                format!(
                    "the file's schedpool schema is at version {version}, newer than this \
                     build's {VERSION}; upgrade schedpool"
                )
                .into(),
            ));
        }
        // Versions below VERSION would be upgraded here, one step each.
        return tx.commit().map_err(|e| map("reading the schema", e));
    }
    tx.execute_batch(&migration_sql())
        .map_err(|e| map("creating the schedpool tables", e))?;
    tx.commit()
        .map_err(|e| map("creating the schedpool tables", e))?;
    tracing::info!(target: "schedpool::durable", version = VERSION,
        "created the schedpool tables in the SQLite file");
    Ok(())
}
