//! The server checks at connect: version, the queue's format version,
//! persistence and eviction settings, clock skew, and the timer resolution
//! of blocked commands.
//!
//! Invariants: a check that cannot read a setting (CONFIG disabled on a
//! managed service, or an ACL user without `+config|get`) falls back to
//! INFO, and reports "unknown" rather than passing silently. What cannot be
//! read, or is unsafe, is a warning (logged at WARN and kept in
//! `RedisBackend::warnings`), and with `strict` an error: strict refuses
//! what it cannot prove safe.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::client::RedisClient;
use crate::durable::store::backend::DurableError;

/// The format version this build writes to a queue's `cfg` hash.
const FORMAT_VERSION: &str = "1";

impl RedisClient {
    /// Runs the checks; returns what could not be checked or is unsafe
    /// (each also logged at WARN), or, with `strict`, refuses those.
    pub(super) fn check_server(&self) -> Result<Vec<String>, DurableError> {
        let mut problems = Vec::new();
        // INFO and CONFIG need rights a least-privileged ACL user lacks:
        // what they cannot read becomes a warning (an error when strict).
        match self.run(true, |c| redis::cmd("INFO").arg("server").query::<String>(c)) {
            Ok(info) => {
                let version = info_field(&info, "redis_version").unwrap_or_default();
                let major: u32 = version
                    .split('.')
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                if major < 7 {
                    return Err(DurableError::Config(format!(
                        "Redis {version} is too old: script flags need Redis 7.0 or later"
                    ).into()));
                }
            }
            Err(DurableError::Refused(e)) => problems.push(format!(
                "cannot read the server's version (INFO refused: {e}); it must be Redis 7.0 or later"
            )),
            Err(e) => return Err(e),
        }
        let cfg = self.keys[6].clone();
        let stored: String = self.run(true, |c| {
            redis::cmd("HSETNX")
                .arg(&cfg)
                .arg("version")
                .arg(FORMAT_VERSION)
                .query::<()>(c)?;
            redis::cmd("HGET").arg(&cfg).arg("version").query(c)
        })?;
        if stored != FORMAT_VERSION {
            return Err(DurableError::Format(
                format!(
                    "queue {:?} has format version {stored}; this build reads {FORMAT_VERSION}",
                    self.name
                )
                .into(),
            ));
        }
        let setting = |name: &str| -> Option<String> {
            let pair: Vec<String> = self
                .run(true, |c| redis::cmd("CONFIG").arg("GET").arg(name).query(c))
                .ok()?;
            pair.get(1).cloned()
        };
        // CONFIG can be disabled on managed services: fall back to INFO.
        let appendonly = setting("appendonly").or_else(|| {
            let info: String = self
                .run(true, |c| redis::cmd("INFO").arg("persistence").query(c))
                .ok()?;
            info_field(&info, "aof_enabled")
                .map(|v| if v == "1" { "yes".into() } else { "no".into() })
        });
        let policy = setting("maxmemory-policy").or_else(|| {
            let info: String = self
                .run(true, |c| redis::cmd("INFO").arg("memory").query(c))
                .ok()?;
            info_field(&info, "maxmemory_policy").map(str::to_string)
        });
        const UNREAD: &str = "unknown (neither CONFIG GET nor INFO answered; check it by hand)";
        match appendonly.as_deref() {
            Some("yes") => {}
            other => problems.push(format!(
                "appendonly is {}: acknowledged puts can be lost on a restart",
                other.unwrap_or(UNREAD)
            )),
        }
        // Without an AOF the fsync policy does not matter: "appendonly is
        // no" says it all. `everysec` passes, strict included: it can lose
        // up to ~2 s of acknowledged puts (a slow fsync postpones the AOF
        // write while Redis keeps answering, so even a kill of the server
        // loses them; docs/durable.md, rule 4), a bounded window the
        // operator chose; `always` loses none.
        if appendonly.as_deref() != Some("no") {
            match setting("appendfsync").as_deref() {
                Some("no") => problems.push(
                    "appendfsync is no: the OS decides when the AOF reaches the disk, so a crash \
                     of the machine can lose acknowledged puts of the last ~30 s; use always (or \
                     everysec: up to ~2 s)"
                        .into(),
                ),
                Some(_) => {}
                None => problems.push(
                    "appendfsync is unknown (CONFIG GET did not answer; check it by hand)".into(),
                ),
            }
        }
        match policy.as_deref() {
            Some("noeviction") => {}
            other => problems.push(format!(
                "maxmemory-policy is {}: Redis may evict queue keys; use noeviction",
                other.unwrap_or(UNREAD)
            )),
        }
        if !problems.is_empty() {
            if self.opts.server.strict {
                return Err(DurableError::Config(problems.join("; ").into()));
            }
            for problem in &problems {
                tracing::warn!(target: "schedpool::durable", queue = %self.name, "{problem}");
            }
        }
        let server = self.server_time_ms()?;
        let local = unix_ms();
        let skew = server.abs_diff(local);
        if Duration::from_millis(skew) > self.opts.server.skew_warning {
            tracing::warn!(
                target: "schedpool::durable",
                queue = %self.name,
                skew_ms = local as i64 - server as i64,
                "this machine's clock differs from the Redis server's: deadlines follow the server; put_at(SystemTime) shifts by the skew"
            );
        }
        Ok(problems)
    }

    /// Redis times out blocked commands from its event loop, which may
    /// sleep one `serverCron` period (100 ms at the default `hz` 10).
    pub(super) fn read_timer_slack(&self) -> Duration {
        let hz: Option<u64> = self
            .run(true, |c| {
                redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("hz")
                    .query::<Vec<String>>(c)
            })
            .ok()
            .and_then(|pair| pair.get(1)?.parse().ok());
        let period = 1000 / hz.unwrap_or(10).clamp(1, 500);
        Duration::from_millis(period + 5)
    }
}

fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(str::trim)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}
