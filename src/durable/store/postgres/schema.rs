//! The PostgreSQL schema: tables, one index, and the functions that are the
//! backend's atomic steps (the counterpart of the Redis scripts), created by
//! a versioned migration in a schema the user names.
//!
//! One row per item, in `items`, keyed by (queue, id):
//!
//! | state | meaning | `score` |
//! |---|---|---|
//! | 0 | pending | due time (ms) |
//! | 1 | in flight | lease expiry (ms) |
//! | 2 | dead-lettered | when it died (ms) |
//! | 3 | acked, kept only for its receipt | receipt expiry (ms) |
//!
//! Invariants the functions keep:
//!
//! - "Now" is `clock_timestamp()` on the server, floored to ms, read once
//!   per call: a client's clock never meets a score.
//! - Tokens come from one sequence per schema, drawn inside the row's
//!   update (after its lock is held), so they never repeat and only grow
//!   for an item; ack, nack, extend and reschedule match (id, token, state 1).
//! - A settle leaves a receipt in the row (`r_token`, `r_result`,
//!   `r_expires`), so a repeated settle with the same token within
//!   `RECEIPT_MS` answers as the first did; acked rows (state 3) are purged
//!   by later claims once their receipt expires, at most `max + 16` a claim.
//! - Claims lock with `FOR UPDATE SKIP LOCKED`: two claimers never wait on
//!   each other or take one row twice, and a row locked by a caller's open
//!   transaction is skipped, not waited on.
//! - Every loop is bounded: reclaim ≤ 100 expired leases, claim ≤ `max`.
//! - `pg_notify(channel, queue)` is sent by a put or nack that makes a new
//!   head, by a put with no future item ahead of it (the statement of
//!   [`put_sql`], which closes a race of the head check), and by a claim
//!   that filled its batch with more due; NOTIFY is delivered at commit, so
//!   a rolled-back put wakes nobody.
//! - Cancel and every lookup by id use the primary key: O(log n).
//! - `claim` and `wake_if_head` (the functions with range conditions on
//!   `score`) run with `plan_cache_mode = force_custom_plan`: after five
//!   calls PostgreSQL would otherwise try a generic plan, which for those
//!   conditions is a sequential scan (100–190 ms a claim at 1M pending,
//!   against 0.7 ms). The others look rows up by primary key, where the
//!   generic plan is right and saves planning each call.

use super::schema_v2;
use crate::durable::store::backend::{MAX_MS, RECEIPT_MS};

/// The SQL of the statements run both on the backend's connections and
/// in a caller's transaction, in the schema `s` (quoted) named `schema`.
///
/// The put function notifies when the item is the new head. That misses
/// one race, which this statement closes: a put P that sees an earlier
/// item Q pending does not notify, and if Q is already due, a claimer can
/// lease Q in a snapshot taken before P commits and then sleep on what it
/// saw (up to `max_block`), P unseen. So P also notifies when no *future*
/// pending item is ahead of it: the earliest future item's own wake-up (or
/// the wake-up planned for it) covers everything after it, and the due
/// ones are being claimed. The earliest future item is one index probe
/// (`ORDER BY score, id LIMIT 1`, with now read once), so the statement's
/// generic plan cannot turn into a scan. A second NOTIFY of the same queue
/// in one transaction is folded into the first by the server.
pub(super) fn put_sql(s: &str, schema: &str) -> String {
    let chan = channel(schema).replace('\'', "''");
    format!(
        "SELECT p.result, p.deadline, \
           CASE WHEN p.result < 2 AND NOT EXISTS ( \
               SELECT 1 FROM (SELECT x.score, x.id FROM {s}.items x \
                              WHERE x.queue = $1 AND x.state = 0 \
                                AND x.score > (SELECT {s}.now_ms()) \
                              ORDER BY x.score, x.id LIMIT 1) f \
               WHERE f.score < p.deadline OR (f.score = p.deadline AND f.id < $2)) \
           THEN pg_notify('{chan}', $1) END \
         FROM {s}.put($1, $2, $3, $4, $5, $6) AS p"
    )
}

/// As [`put_sql`], for cancel.
pub(super) fn cancel_sql(s: &str) -> String {
    format!("SELECT state, envelope FROM {s}.cancel($1, $2)")
}

/// The pairs of a batched statement: `$2` the ids and `$3` their tokens,
/// numbered in order; and now, read once.
const PAIRS: &str = "WITH u AS (SELECT * FROM unnest($2::text[], $3::bigint[]) \
                     WITH ORDINALITY AS u(id, token, ord)), \
                     t AS (SELECT {s}.now_ms() AS ms)";

/// Many acks in one statement (one transaction): `$1` the queue, `$2` the
/// ids, `$3` their tokens; one boolean a pair, in order, as the `ack`
/// function answers for one: true when this token held the item (now
/// acked) or left a live receipt. A plain statement rather than a function,
/// so it runs on a version-1 schema as it is. Each pair is matched on its
/// own token (a stale one is `false`, the others are acked); the receipt
/// check reads the snapshot from before the update, as a repeat needs.
///
/// Each row is found by its primary key: `state + 0` keeps the planner off
/// the `(queue, state, ...)` index, whose in-flight range also holds an
/// entry for every row acked since the last vacuum (a generic plan joined
/// on that range scanned them all, for every batch).
pub(super) fn ack_many_sql(s: &str) -> String {
    let pairs = PAIRS.replace("{s}", s);
    format!(
        "{pairs}, \
         done AS ( \
             UPDATE {s}.items AS i \
             SET state = 3, score = t.ms + {RECEIPT_MS}, envelope = '\\x'::bytea, \
                 r_token = u.token, r_result = 0, r_expires = t.ms + {RECEIPT_MS} \
             FROM u, t \
             WHERE i.queue = $1 AND i.id = u.id AND i.token = u.token AND i.state + 0 = 1 \
             RETURNING i.id, i.token) \
         SELECT EXISTS (SELECT 1 FROM done WHERE done.id = u.id AND done.token = u.token) \
             OR EXISTS (SELECT 1 FROM {s}.items r, t WHERE r.queue = $1 AND r.id = u.id \
                        AND r.r_token = u.token AND r.r_expires > t.ms) \
         FROM u ORDER BY u.ord"
    )
}

/// Many lease extensions in one statement: `$1` the queue, `$2` the ids,
/// `$3` their tokens, `$4` the lease (ms); one boolean a pair, in order:
/// true when that token holds the item (its lease now ends `$4` from now).
/// As [`ack_many_sql`] (which see for `state + 0`), in place of the
/// schema's `extend` function, whose plan joined on the in-flight range.
pub(super) fn extend_sql(s: &str) -> String {
    let pairs = PAIRS.replace("{s}", s);
    format!(
        "{pairs}, \
         done AS ( \
             UPDATE {s}.items AS i SET score = t.ms + $4 \
             FROM u, t \
             WHERE i.queue = $1 AND i.id = u.id AND i.token = u.token AND i.state + 0 = 1 \
             RETURNING i.id, i.token) \
         SELECT EXISTS (SELECT 1 FROM done WHERE done.id = u.id AND done.token = u.token) \
         FROM u ORDER BY u.ord"
    )
}

/// The schema version this build creates and reads.
pub(super) const VERSION: i32 = 2;

/// The longest schema name accepted: the NOTIFY channel is
/// `schedpool_<schema>`, and PostgreSQL identifiers stop at 63 bytes.
pub(super) const MAX_SCHEMA_LEN: usize = 50;

/// `name` as a quoted SQL identifier.
pub(super) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The DDL of version 2 in `schema` (at version 1).
fn ddl_v2(schema: &str) -> String {
    schema_v2::ddl_v2(&ident(schema), &channel(schema))
}

/// The NOTIFY channel of a schema.
pub(super) fn channel(schema: &str) -> String {
    format!("schedpool_{schema}")
}

/// The DDL of version 1 in `schema` (which must exist): what the migration
/// runs, and what a team that migrates by hand applies.
pub(super) fn ddl_v1(schema: &str) -> String {
    let s = ident(schema);
    let chan = channel(schema).replace('\'', "''");
    DDL_V1
        .replace("{s}", &s)
        .replace("{chan}", &chan)
        .replace("{receipt_ms}", &RECEIPT_MS.to_string())
        .replace("{max_ms}", &MAX_MS.to_string())
}

const DDL_V1: &str = r#"
CREATE TABLE {s}.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE SEQUENCE {s}.tokens;

CREATE TABLE {s}.items (
    queue     text     NOT NULL,
    id        text     NOT NULL,
    state     smallint NOT NULL CHECK (state BETWEEN 0 AND 3),
    score     bigint   NOT NULL,
    deadline  bigint   NOT NULL,
    due       bigint   NOT NULL,
    token     bigint   NOT NULL,
    attempts  integer  NOT NULL DEFAULT 0,
    envelope  bytea    NOT NULL,
    r_token   bigint,
    r_result  bigint,
    r_expires bigint,
    PRIMARY KEY (queue, id)
);

CREATE INDEX items_by_state_score ON {s}.items (queue, state, score, id);

CREATE FUNCTION {s}.now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- Notifies when (q, p_id) is now the earliest pending item.
CREATE FUNCTION {s}.wake_if_head(q text, p_id text, p_score bigint) RETURNS void
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {s}.items
                   WHERE queue = q AND state = 0
                     AND (score < p_score OR (score = p_score AND id < p_id))) THEN
        PERFORM pg_notify('{chan}', q);
    END IF;
END $$;

-- result: 0 inserted, 1 replaced, 2 exists (nothing written).
CREATE FUNCTION {s}.put(q text, p_id text, p_env bytea, p_delay bigint, p_at bigint,
                        p_if_absent boolean, OUT result integer, OUT deadline bigint)
LANGUAGE plpgsql AS $$
DECLARE
    now_ms bigint := {s}.now_ms();
    d bigint := LEAST(COALESCE(p_at, now_ms + p_delay), {max_ms});
    old smallint;
BEGIN
    SELECT state INTO old FROM {s}.items WHERE queue = q AND id = p_id FOR UPDATE;
    IF p_if_absent THEN
        -- Also right under a concurrent insert of the same id: the
        -- conflict clause waits for it and then sees it.
        INSERT INTO {s}.items AS i (queue, id, state, score, deadline, due, token, attempts, envelope)
        VALUES (q, p_id, 0, d, d, d, nextval('{s}.tokens'), 0, p_env)
        ON CONFLICT (queue, id) DO UPDATE
            SET state = 0, score = d, deadline = d, due = d, token = nextval('{s}.tokens'),
                attempts = 0, envelope = p_env, r_token = NULL, r_result = NULL, r_expires = NULL
            WHERE i.state >= 2;
        IF NOT FOUND THEN
            result := 2;
            RETURN;
        END IF;
    ELSE
        INSERT INTO {s}.items AS i (queue, id, state, score, deadline, due, token, attempts, envelope)
        VALUES (q, p_id, 0, d, d, d, nextval('{s}.tokens'), 0, p_env)
        ON CONFLICT (queue, id) DO UPDATE
            SET state = 0, score = d, deadline = d, due = d, token = nextval('{s}.tokens'),
                attempts = 0, envelope = p_env, r_token = NULL, r_result = NULL, r_expires = NULL;
    END IF;
    result := CASE WHEN old IN (0, 1) THEN 1 ELSE 0 END;
    deadline := d;
    PERFORM {s}.wake_if_head(q, p_id, d);
END $$;

-- Rows: the claimed items (id not null), then one row whose wait_ms is the
-- time until the next due item or lease expiry (null: nothing pending or
-- in flight).
CREATE FUNCTION {s}.claim(q text, p_lease bigint, p_max integer, p_max_attempts integer)
RETURNS TABLE (id text, token bigint, attempt integer, deadline bigint, due bigint,
               claimed bigint, envelope bytea, wait_ms bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    now_ms bigint := {s}.now_ms();
    n integer;
    w bigint;
BEGIN
    DELETE FROM {s}.items AS i
    WHERE (i.queue, i.id) IN (SELECT x.queue, x.id FROM {s}.items x
                              WHERE x.queue = q AND x.state = 3 AND x.score <= now_ms
                              LIMIT p_max + 16 FOR UPDATE SKIP LOCKED);
    UPDATE {s}.items AS i
    SET state = CASE WHEN p_max_attempts > 0 AND i.attempts >= p_max_attempts THEN 2 ELSE 0 END,
        score = CASE WHEN p_max_attempts > 0 AND i.attempts >= p_max_attempts THEN now_ms ELSE i.due END
    WHERE (i.queue, i.id) IN (SELECT x.queue, x.id FROM {s}.items x
                              WHERE x.queue = q AND x.state = 1 AND x.score <= now_ms
                              ORDER BY x.score, x.id LIMIT 100 FOR UPDATE SKIP LOCKED);
    RETURN QUERY
    WITH picked AS (
        SELECT x.queue, x.id FROM {s}.items x
        WHERE x.queue = q AND x.state = 0 AND x.score <= now_ms
        ORDER BY x.score, x.id LIMIT p_max FOR UPDATE SKIP LOCKED)
    UPDATE {s}.items AS i
    SET state = 1, score = now_ms + p_lease, token = nextval('{s}.tokens'), attempts = i.attempts + 1
    FROM picked
    WHERE i.queue = picked.queue AND i.id = picked.id
    RETURNING i.id, i.token, i.attempts, i.deadline, i.due, now_ms, i.envelope, NULL::bigint;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- Due rows locked by another transaction (a caller's open replace or
    -- cancel, another claimer) do not count as "due now": their end brings
    -- a notification, or max_block passes.
    PERFORM 1 FROM {s}.items x
    WHERE x.queue = q AND x.state = 0 AND x.score <= now_ms
    LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        w := 0;
    ELSE
        w := LEAST((SELECT min(x.score) FROM {s}.items x
                    WHERE x.queue = q AND x.state = 0 AND x.score > now_ms),
                   (SELECT min(x.score) FROM {s}.items x WHERE x.queue = q AND x.state = 1));
        -- GREATEST ignores nulls: keep "nothing pending" null.
        w := CASE WHEN w IS NULL THEN NULL ELSE GREATEST(w - now_ms, 0) END;
    END IF;
    IF p_max > 0 AND n = p_max AND w = 0 THEN
        PERFORM pg_notify('{chan}', q);
    END IF;
    RETURN QUERY SELECT NULL::text, NULL::bigint, NULL::integer, NULL::bigint, NULL::bigint,
                        now_ms, NULL::bytea, w;
END $$;

CREATE FUNCTION {s}.extend(q text, p_ids text[], p_tokens bigint[], p_lease bigint)
RETURNS SETOF boolean LANGUAGE sql AS $$
    WITH u AS (SELECT * FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS u(id, token, ord)),
    upd AS (
        UPDATE {s}.items AS i SET score = {s}.now_ms() + p_lease
        FROM u
        WHERE i.queue = q AND i.id = u.id AND i.token = u.token AND i.state = 1
        RETURNING i.id)
    SELECT u.id IN (SELECT upd.id FROM upd) FROM u ORDER BY u.ord
$$;

-- The receipt of (q, p_id, p_token), if a settle with that token left one.
CREATE FUNCTION {s}.receipt(q text, p_id text, p_token bigint, now_ms bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT r_result FROM {s}.items
    WHERE queue = q AND id = p_id AND r_token = p_token AND r_expires > now_ms
$$;

CREATE FUNCTION {s}.ack(q text, p_id text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    now_ms bigint := {s}.now_ms();
BEGIN
    UPDATE {s}.items SET state = 3, score = now_ms + {receipt_ms}, envelope = '\x'::bytea,
        r_token = p_token, r_result = 0, r_expires = now_ms + {receipt_ms}
    WHERE queue = q AND id = p_id AND token = p_token AND state = 1;
    IF FOUND THEN
        RETURN true;
    END IF;
    RETURN {s}.receipt(q, p_id, p_token, now_ms) IS NOT NULL;
END $$;

-- p_to: 0 retry after p_delay, 1 dead, 2 release (at its due time),
-- 3 defer after p_delay (the attempt does not count).
CREATE FUNCTION {s}.nack(q text, p_id text, p_token bigint, p_to integer, p_delay bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    now_ms bigint := {s}.now_ms();
    at_ms bigint := LEAST(now_ms + p_delay, {max_ms});
    s bigint;
BEGIN
    UPDATE {s}.items AS i
    SET state = CASE WHEN p_to = 1 THEN 2 ELSE 0 END,
        due = CASE WHEN p_to IN (0, 3) THEN at_ms ELSE i.due END,
        score = CASE p_to WHEN 1 THEN now_ms WHEN 2 THEN i.due ELSE at_ms END,
        attempts = CASE WHEN p_to = 3 THEN GREATEST(i.attempts - 1, 0) ELSE i.attempts END,
        r_token = p_token, r_result = 0, r_expires = now_ms + {receipt_ms}
    WHERE i.queue = q AND i.id = p_id AND i.token = p_token AND i.state = 1
    RETURNING i.score INTO s;
    IF FOUND THEN
        IF p_to <> 1 THEN
            PERFORM {s}.wake_if_head(q, p_id, s);
        END IF;
        RETURN true;
    END IF;
    RETURN {s}.receipt(q, p_id, p_token, now_ms) IS NOT NULL;
END $$;

-- p_rate: true fixed rate (previous deadline + period), false fixed delay
-- (now + period). Returns the next due time, or null when not held.
CREATE FUNCTION {s}.reschedule(q text, p_id text, p_token bigint, p_rate boolean, p_period bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    now_ms bigint := {s}.now_ms();
    nxt bigint;
BEGIN
    UPDATE {s}.items AS i
    SET state = 0,
        deadline = LEAST(CASE WHEN p_rate THEN i.deadline + p_period ELSE now_ms + p_period END, {max_ms}),
        due = LEAST(CASE WHEN p_rate THEN i.deadline + p_period ELSE now_ms + p_period END, {max_ms}),
        score = LEAST(CASE WHEN p_rate THEN i.deadline + p_period ELSE now_ms + p_period END, {max_ms}),
        token = nextval('{s}.tokens'), attempts = 0,
        r_token = p_token,
        r_result = LEAST(CASE WHEN p_rate THEN i.deadline + p_period ELSE now_ms + p_period END, {max_ms}),
        r_expires = now_ms + {receipt_ms}
    WHERE i.queue = q AND i.id = p_id AND i.token = p_token AND i.state = 1
    RETURNING i.score INTO nxt;
    IF FOUND THEN
        PERFORM {s}.wake_if_head(q, p_id, nxt);
        RETURN nxt;
    END IF;
    RETURN {s}.receipt(q, p_id, p_token, now_ms);
END $$;

-- state: 0 pending, 1 in flight, 2 dead; no row: not found.
CREATE FUNCTION {s}.cancel(q text, p_id text, OUT state smallint, OUT envelope bytea)
LANGUAGE sql AS $$
    DELETE FROM {s}.items AS i WHERE i.queue = q AND i.id = p_id AND i.state < 3
    RETURNING i.state, i.envelope
$$;
"#;

/// The whole hand-migration script of the current version: the schema,
/// the DDL of each version in turn, the version row.
pub(super) fn migration_sql(schema: &str) -> String {
    let s = ident(schema);
    format!(
        "CREATE SCHEMA IF NOT EXISTS {s};\n{}\n{}\nINSERT INTO {s}.meta (key, value) VALUES ('version', '{VERSION}');\n",
        ddl_v1(schema),
        ddl_v2(schema)
    )
}

/// Brings `schema` to [`VERSION`] (when `allowed`), or checks it is there,
/// in one transaction under an advisory lock, so processes that start
/// together migrate once. A schema of a newer version is refused.
pub(super) fn migrate(
    client: &mut super::conn::PgConn,
    schema: &str,
    allowed: bool,
) -> Result<(), crate::durable::store::backend::DurableError> {
    use super::error::map_call;
    client.batch_execute("BEGIN").map_err(map_call)?;
    let done = migrate_in(client, schema, allowed);
    // On an error the connection is dropped with the rest of `connect`'s
    // work; a rollback is still tried, so a caller's own connection would
    // not stay in an aborted transaction.
    let end = if done.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = client.batch_execute(end).map_err(map_call);
    done.and(ended)?;
    Ok(())
}

/// `migrate`'s statements, inside its transaction.
fn migrate_in(
    tx: &mut super::conn::PgConn,
    schema: &str,
    allowed: bool,
) -> Result<bool, crate::durable::store::backend::DurableError> {
    use super::error::{map_call, map_err};
    use crate::durable::store::backend::DurableError;
    let s = ident(schema);
    let e = map_call;
    let row_err = |e: postgres::Error| map_err(e);
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("schedpool-migrate:{schema}")],
    )
    .map_err(e)?;
    let meta = format!("{s}.meta");
    let has_meta: bool = tx
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&meta])
        .map_err(e)?
        .try_get(0)
        .map_err(row_err)?;
    if has_meta {
        let row = tx
            .query_opt(
                &format!("SELECT value FROM {s}.meta WHERE key = 'version'"),
                &[],
            )
            .map_err(e)?;
        let found: Option<String> = row.map(|r| r.try_get(0)).transpose().map_err(row_err)?;
        let version: i32 = found
            .as_deref()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                DurableError::Format(
                    format!(
                        "schema {schema:?} has a meta table without a readable version: {found:?}"
                    )
                    .into(),
                )
            })?;
        if version > VERSION {
            return Err(DurableError::Format(
                format!(
                "schema {schema:?} is at version {version}, newer than this build's {VERSION}; \
                 upgrade schedpool (or use another schema)"
            )
                .into(),
            ));
        }
        if version < 2 {
            if !allowed {
                return Err(DurableError::Config(
                    format!(
                        "schema {schema:?} is at version {version}; this build needs {VERSION}: \
                         connect once with migrate on (PostgresOptions::migrate), or apply the \
                         version-2 part of PostgresBackend::migration_sql"
                    )
                    .into(),
                ));
            }
            tx.batch_execute(&ddl_v2(schema)).map_err(e)?;
            tx.execute(
                &format!("UPDATE {s}.meta SET value = $1 WHERE key = 'version'"),
                &[&VERSION.to_string()],
            )
            .map_err(e)?;
            tracing::info!(target: "schedpool::durable", schema, version = VERSION,
                "upgraded the schedpool schema");
            return Ok(true);
        }
        return Ok(false);
    }
    if !allowed {
        return Err(DurableError::Config(
            format!(
                "schema {schema:?} has no schedpool tables and migrate is off; apply \
             PostgresBackend::migration_sql({schema:?})"
            )
            .into(),
        ));
    }
    let has_schema = tx
        .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .map_err(e)?
        .is_some();
    if !has_schema {
        tx.batch_execute(&format!("CREATE SCHEMA {s}")).map_err(e)?;
    }
    tx.batch_execute(&ddl_v1(schema)).map_err(e)?;
    tx.batch_execute(&ddl_v2(schema)).map_err(e)?;
    tx.execute(
        &format!("INSERT INTO {s}.meta (key, value) VALUES ('version', $1)"),
        &[&VERSION.to_string()],
    )
    .map_err(e)?;
    tracing::info!(target: "schedpool::durable", schema, version = VERSION, "created the schedpool schema");
    Ok(true)
}
