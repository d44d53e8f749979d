//! Version 2 of the PostgreSQL schema: the operator's side. Applied after
//! version 1 on a new schema, and as the upgrade of a version-1 schema.
//!
//! It adds:
//!
//! - `items.kind`, the envelope's kind, set by triggers from the envelope
//!   on every insert and on every update of the envelope of a row that is
//!   not acked (so the put, bury and requeue statements of every build
//!   keep it right), filled for existing rows by the upgrade, and indexed
//!   `(queue, kind, state, score, id)` for listings and counts by kind;
//! - `paused (queue, kind)`: the paused kinds; `claim` and `wake_if_head`
//!   (replaced here) pass over pending rows of a paused kind, so they wait,
//!   due, and neither are claimed nor make consumers spin;
//! - `audit`: the operators' changes, numbered by a sequence.
//!
//! Invariant: `kind_of` reads a dead row's kind past its dead record with
//! `dead_record::split`'s rule, and gives `''` for bytes that do not open
//! (as `envelope::open` refuses them).

use crate::durable::store::dead_record;

/// The DDL of version 2 in the schema `s` (quoted) at version 1, whose
/// NOTIFY channel is `chan`.
pub(super) fn ddl_v2(s: &str, chan: &str) -> String {
    let tag: String = dead_record::TAG
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    DDL_V2
        .replace("{s}", s)
        .replace("{chan}", &chan.replace('\'', "''"))
        .replace("{tag}", &tag)
        .replace("{head}", &dead_record::HEAD.to_string())
}

const DDL_V2: &str = r#"
CREATE FUNCTION {s}.kind_of(env bytea) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    e bytea := env;
    n integer;
BEGIN
    IF length(e) >= {head} AND substring(e FROM 1 FOR 3) = '\x{tag}'::bytea THEN
        n := get_byte(e, 3) * 256 + get_byte(e, 4);
        IF length(e) >= {head} + n THEN
            e := substring(e FROM {head} + 1 + n);
        END IF;
    END IF;
    IF length(e) < 2 OR get_byte(e, 0) <> 1 THEN
        RETURN '';
    END IF;
    n := get_byte(e, 1);
    IF length(e) < 3 + n THEN
        RETURN '';
    END IF;
    RETURN convert_from(substring(e FROM 3 FOR n), 'UTF8');
EXCEPTION WHEN others THEN
    RETURN '';
END $$;

ALTER TABLE {s}.items ADD COLUMN kind text NOT NULL DEFAULT '';
UPDATE {s}.items SET kind = {s}.kind_of(envelope) WHERE state < 3;

CREATE FUNCTION {s}.set_kind() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.kind := {s}.kind_of(NEW.envelope);
    RETURN NEW;
END $$;
CREATE TRIGGER items_kind_on_insert BEFORE INSERT ON {s}.items
    FOR EACH ROW EXECUTE FUNCTION {s}.set_kind();
CREATE TRIGGER items_kind_on_update BEFORE UPDATE OF envelope ON {s}.items
    FOR EACH ROW WHEN (NEW.state < 3) EXECUTE FUNCTION {s}.set_kind();

CREATE INDEX items_by_kind ON {s}.items (queue, kind, state, score, id);

CREATE TABLE {s}.paused (
    queue     text   NOT NULL,
    kind      text   NOT NULL,
    paused_by text   NOT NULL,
    at_ms     bigint NOT NULL,
    PRIMARY KEY (queue, kind)
);

CREATE TABLE {s}.audit (
    seq     bigserial PRIMARY KEY,
    queue   text   NOT NULL,
    at_ms   bigint NOT NULL,
    by_whom text   NOT NULL,
    action  text   NOT NULL,
    target  text   NOT NULL,
    count   bigint NOT NULL
);
CREATE INDEX audit_by_queue ON {s}.audit (queue, seq);

-- As version 1's, passing over paused kinds.
CREATE OR REPLACE FUNCTION {s}.wake_if_head(q text, p_id text, p_score bigint) RETURNS void
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {s}.items x
                   WHERE x.queue = q AND x.state = 0
                     AND (x.score < p_score OR (x.score = p_score AND x.id < p_id))
                     AND NOT EXISTS (SELECT 1 FROM {s}.paused p
                                     WHERE p.queue = q AND p.kind = x.kind)) THEN
        PERFORM pg_notify('{chan}', q);
    END IF;
END $$;

-- As version 1's, passing over paused kinds (in the pick, the "due now"
-- check and the wait).
CREATE OR REPLACE FUNCTION {s}.claim(q text, p_lease bigint, p_max integer, p_max_attempts integer)
RETURNS TABLE (id text, token bigint, attempt integer, deadline bigint, due bigint,
               claimed bigint, envelope bytea, wait_ms bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    now_ms bigint := {s}.now_ms();
    n integer;
    w bigint;
    any_paused boolean := EXISTS (SELECT 1 FROM {s}.paused p WHERE p.queue = q);
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
          AND (NOT any_paused OR NOT EXISTS (SELECT 1 FROM {s}.paused p
                                             WHERE p.queue = q AND p.kind = x.kind))
        ORDER BY x.score, x.id LIMIT p_max FOR UPDATE SKIP LOCKED)
    UPDATE {s}.items AS i
    SET state = 1, score = now_ms + p_lease, token = nextval('{s}.tokens'), attempts = i.attempts + 1
    FROM picked
    WHERE i.queue = picked.queue AND i.id = picked.id
    RETURNING i.id, i.token, i.attempts, i.deadline, i.due, now_ms, i.envelope, NULL::bigint;
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM 1 FROM {s}.items x
    WHERE x.queue = q AND x.state = 0 AND x.score <= now_ms
      AND (NOT any_paused OR NOT EXISTS (SELECT 1 FROM {s}.paused p
                                         WHERE p.queue = q AND p.kind = x.kind))
    LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        w := 0;
    ELSE
        w := LEAST((SELECT x.score FROM {s}.items x
                    WHERE x.queue = q AND x.state = 0 AND x.score > now_ms
                      AND (NOT any_paused OR NOT EXISTS (SELECT 1 FROM {s}.paused p
                                                         WHERE p.queue = q AND p.kind = x.kind))
                    ORDER BY x.score LIMIT 1),
                   (SELECT min(x.score) FROM {s}.items x WHERE x.queue = q AND x.state = 1));
        w := CASE WHEN w IS NULL THEN NULL ELSE GREATEST(w - now_ms, 0) END;
    END IF;
    IF p_max > 0 AND n = p_max AND w = 0 THEN
        PERFORM pg_notify('{chan}', q);
    END IF;
    RETURN QUERY SELECT NULL::text, NULL::bigint, NULL::integer, NULL::bigint, NULL::bigint,
                        now_ms, NULL::bytea, w;
END $$;
"#;
