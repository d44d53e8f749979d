//! The SQLite schema: five tables beside the application's own (so an
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
//!
//! Version 2 (the operator's side) adds each item's `kind` (copied from its
//! envelope at put, so listings filter and count by it with an index),
//! `schedpool_paused` (the paused kinds of each queue, which claims skip)
//! and `schedpool_audit` (the operators' changes). A version-1 file is
//! upgraded in place when a version-2 build opens it, the kinds of its
//! rows filled from their envelopes in the same transaction.

use rusqlite::{Connection, OptionalExtension};

use super::error::map;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::StoredState;
use crate::durable::store::ops_read::stored_kind;

/// The schema version this build creates and reads.
pub(super) const VERSION: i64 = 2;

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

const DDL_V2: &str = "
ALTER TABLE schedpool_items ADD COLUMN kind TEXT NOT NULL DEFAULT '';
CREATE INDEX schedpool_items_by_kind ON schedpool_items (queue, kind, state, score, id);
CREATE TABLE schedpool_paused (
    queue     TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    paused_by TEXT    NOT NULL,
    at_ms     INTEGER NOT NULL,
    PRIMARY KEY (queue, kind)
) WITHOUT ROWID;
CREATE TABLE schedpool_audit (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    queue   TEXT    NOT NULL,
    at_ms   INTEGER NOT NULL,
    by_whom TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    target  TEXT    NOT NULL,
    count   INTEGER NOT NULL
);
CREATE INDEX schedpool_audit_by_queue ON schedpool_audit (queue, seq);
";

/// The SQL that creates the current version (the tables, the indexes, the
/// version row), for teams that migrate by hand.
pub(super) fn migration_sql() -> String {
    format!(
        "{DDL_V1}{DDL_V2}INSERT INTO schedpool_meta (key, value) VALUES ('version', '{VERSION}');\n"
    )
}

/// Upgrades a version-1 file: the new column, tables and index, and each
/// row's kind read from its envelope.
fn upgrade_to_v2(tx: &Connection) -> Result<(), DurableError> {
    tx.execute_batch(DDL_V2)
        .map_err(|e| map("upgrading the schedpool tables to version 2", e))?;
    let rows: Vec<(String, String, i64, Vec<u8>)> = tx
        .prepare("SELECT queue, id, state, envelope FROM schedpool_items WHERE state <= 2")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect()
        })
        .map_err(|e| map("reading the kinds of stored items", e))?;
    let mut set = tx
        .prepare("UPDATE schedpool_items SET kind = ?3 WHERE queue = ?1 AND id = ?2")
        .map_err(|e| map("storing the kinds of stored items", e))?;
    for (queue, id, state, envelope) in rows {
        let state = if state == 2 {
            StoredState::Dead
        } else {
            StoredState::Pending
        };
        set.execute(rusqlite::params![queue, id, stored_kind(state, &envelope)])
            .map_err(|e| map("storing the kinds of stored items", e))?;
    }
    tx.execute(
        "UPDATE schedpool_meta SET value = '2' WHERE key = 'version'",
        [],
    )
    .map_err(|e| map("upgrading the schema version", e))?;
    tracing::info!(target: "schedpool::durable", "upgraded the schedpool tables to version 2");
    Ok(())
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
        if version < 2 {
            upgrade_to_v2(&tx)?;
        }
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
