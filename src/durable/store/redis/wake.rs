//! Cross-process wake-ups of the Redis backend: the dedicated blocking
//! connection that waits in `BZPOPMIN` on the queue's `wake` marker, the
//! local naps that stand in for blocks shorter than Redis's timer can
//! keep, and `unblock`.
//!
//! Invariants:
//!
//! - Command connections and the blocking connection are separate: only
//!   the dedicated blocking connection ever runs `BZPOPMIN`, and its read
//!   timeout is the block plus a margin, so a dead socket is torn down
//!   rather than waited on forever.
//! - `unblock` cannot be lost: it sets `unblock_pending` before looking at
//!   `in_wait`, and `wait` sets `in_wait` before looking at
//!   `unblock_pending` (both SeqCst), so either the wait sees the flag and
//!   does not block, or `unblock` sees the wait and repeats `CLIENT UNBLOCK`
//!   until the wait ends.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use crate::base::sync::{Condvar, Mutex};
use redis::{Connection, RedisResult};

use super::client::RedisClient;
use crate::durable::store::backend::DurableError;
use crate::durable::store::error::ErrorDetail;

/// The wake-up state of one `RedisBackend`.
pub(super) struct Wake {
    blocking: Mutex<Option<Connection>>,
    blocking_id: AtomicI64,
    in_wait: AtomicBool,
    unblock_pending: AtomicBool,
    /// Where a short wait sleeps locally (see `wait`); `unblock` signals it.
    nap: (Mutex<()>, Condvar),
    /// How late Redis may time out a blocked command: one `serverCron`
    /// period (1000 / `hz` ms) plus a margin, read at connect.
    timer_slack: Duration,
}

impl Wake {
    pub(super) fn new(timer_slack: Duration) -> Self {
        Wake {
            blocking: Mutex::new(None),
            blocking_id: AtomicI64::new(0),
            in_wait: AtomicBool::new(false),
            unblock_pending: AtomicBool::new(false),
            nap: (Mutex::new(()), Condvar::new()),
            timer_slack,
        }
    }

    /// Sleeps `d` on this process's clock, or until `unblock`.
    fn nap(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut guard = self.nap.0.lock();
        while !self.unblock_pending.load(Ordering::SeqCst) && Instant::now() < until {
            self.nap.1.wait_until(&mut guard, until);
        }
    }

    /// `DurableBackend::wait` on `client`'s queue.
    pub(super) fn wait(
        &self,
        client: &RedisClient,
        due: Option<Duration>,
        limit: Duration,
    ) -> Result<bool, DurableError> {
        // Both `due` and `limit` are deadlines; Redis may time a block out
        // one cron period late, so block until a period before the nearer
        // one and nap the rest. Capped: no Duration overflow, and a timeout
        // Redis accepts.
        const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
        let mut block = due
            .map_or(limit, |d| d.min(limit))
            .min(MAX_WAIT)
            .max(Duration::from_millis(1));
        if block <= self.timer_slack {
            if due.is_none_or(|d| limit < d) {
                // The caller's own limit: take a marker already set, without
                // blocking, then nap.
                let popped: Vec<String> = client.run(true, |c| {
                    redis::cmd("ZPOPMIN").arg(&client.keys[4]).query(c)
                })?;
                if !popped.is_empty() {
                    return Ok(true);
                }
            }
            self.nap(block);
            return Ok(false);
        }
        block -= self.timer_slack;
        let mut slot = self.blocking.lock();
        if slot.is_none() {
            let conn = client
                .connect_one()
                .map_err(|e| unavailable(client, e, client.opts.server.connect_timeout, true))?;
            *slot = Some(conn);
            let id: i64 = redis::cmd("CLIENT")
                .arg("ID")
                .query(slot.as_mut().expect("just set"))
                .map_err(|e| {
                    *slot = None;
                    unavailable(client, e, client.opts.server.op_timeout, true)
                })?;
            self.blocking_id.store(id, Ordering::SeqCst);
        }
        let conn = slot.as_mut().expect("connected above");
        // The client-side deadline: block plus a margin, then tear down (F9).
        let margin = Duration::from_secs(2);
        if let Err(e) = conn.set_read_timeout(Some(block + margin)) {
            *slot = None;
            return Err(DurableError::Unavailable(ErrorDetail::with_source(
                e.to_string(),
                e,
            )));
        }
        self.in_wait.store(true, Ordering::SeqCst);
        if self.unblock_pending.swap(false, Ordering::SeqCst) {
            self.in_wait.store(false, Ordering::SeqCst);
            return Ok(false);
        }
        let popped: RedisResult<Option<(String, String, f64)>> = redis::cmd("BZPOPMIN")
            .arg(&client.keys[4])
            .arg(block_seconds(block))
            .query(conn);
        self.in_wait.store(false, Ordering::SeqCst);
        match popped {
            Ok(marker) => Ok(marker.is_some()),
            Err(e) if e.code() == Some("UNBLOCKED") => Ok(false),
            Err(e) => {
                *slot = None;
                Err(unavailable(client, e, block + margin, false))
            }
        }
    }

    /// `DurableBackend::unblock`.
    pub(super) fn unblock(&self, client: &RedisClient) {
        self.unblock_pending.store(true, Ordering::SeqCst);
        {
            let _guard = self.nap.0.lock();
            self.nap.1.notify_all();
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.in_wait.load(Ordering::SeqCst) && Instant::now() < deadline {
            let id = self.blocking_id.load(Ordering::SeqCst);
            let unblocked: Result<i64, _> = client.run(false, |c| {
                redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query(c)
            });
            if unblocked == Ok(1) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A connection error of the blocking connection, kept as the source;
/// `timeout` is the one that applied, `fresh` whether the connection was
/// new (see `RedisClient::transport_error`).
fn unavailable(
    client: &RedisClient,
    err: redis::RedisError,
    timeout: Duration,
    fresh: bool,
) -> DurableError {
    let tls_hint = fresh && client.dropped_before_reply(&err);
    DurableError::Unavailable(client.transport_error(err, timeout, tls_hint))
}

/// `BZPOPMIN`'s timeout for a block of `block`: seconds with three
/// decimals, rounded up to the next whole millisecond and never below one.
/// Redis reads `0` as "block forever", so a block under half a millisecond
/// printed as `0.000` would wait until the client's read timeout tore the
/// connection down (an `Unavailable` from a plain poll).
fn block_seconds(block: Duration) -> String {
    let ms = block.as_micros().div_ceil(1000).max(1);
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::block_seconds;
    use std::time::Duration;

    #[test]
    fn a_block_is_never_sent_as_zero_and_never_shorter() {
        let us = Duration::from_micros;
        assert_eq!(block_seconds(us(0)), "0.001");
        assert_eq!(block_seconds(us(1)), "0.001");
        assert_eq!(block_seconds(us(400)), "0.001", "0.000 would block forever");
        assert_eq!(block_seconds(us(1_000)), "0.001");
        assert_eq!(block_seconds(us(1_001)), "0.002");
        assert_eq!(block_seconds(Duration::from_millis(300)), "0.300");
        assert_eq!(block_seconds(Duration::from_secs(86_400)), "86400.000");
    }
}
