//! Wake-ups without LISTEN/NOTIFY: in this process at once, from other
//! processes by polling `PRAGMA data_version`, adaptively.
//!
//! - In this process every backend on one file shares one [`Signal`] (a
//!   registry keyed by the file's canonical path): a commit that may make
//!   something due earlier (a put or nack at a new head, a chained claim)
//!   bumps its generation and wakes every waiter at once.
//! - Another process's commit changes the file's `data_version` as seen by
//!   this process's wait connection (any commit by another connection
//!   does, this process's own included). A waiter reads it every 1 ms at
//!   first, doubling to `max_poll` while nothing changes: a read of the
//!   shared-memory WAL index, no disk I/O. On a change it reads the
//!   queue's earliest pending due time (one index probe) and wakes only if
//!   that is earlier than what it waits for: the time the last claim said
//!   the next item is due, or, when it said nothing is pending, the head it
//!   saw last. So another process's acks, extends and puts behind the head
//!   wake nobody (no herd), as on Redis and PostgreSQL.
//!
//! Invariants: a commit between a claim and the wait that follows it is
//! not missed: the wait compares with the `data_version` seen when the
//! *previous* wait ended (or at open), not at its own start, and with the
//! head the claim itself saw (`saw_head`, set by every claim); and
//! `unblock` sets a flag before it notifies, which a wait checks under the
//! signal's lock, so it cannot be lost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::error::map;
use crate::durable::store::error::DurableError;

/// The first poll interval after a change.
const MIN_POLL: Duration = Duration::from_millis(1);

/// One file's in-process wake-up, and its writers' turn.
#[derive(Debug, Default)]
pub(super) struct Signal {
    generation: Mutex<u64>,
    cv: Condvar,
    /// Held by this process's writers on the file, one at a time, handed
    /// on fairly: SQLite's busy handler is not a queue (a waiter sleeps up
    /// to 100 ms between tries while active writers take the lock again),
    /// so without this a thread of a busy process could wait out its busy
    /// timeout; with it the busy handler arbitrates between processes only.
    turn: parking_lot::Mutex<()>,
}

impl Signal {
    /// The signal of the file at `path` (canonical), shared by every
    /// backend of this process on that file.
    pub(super) fn of(path: &Path) -> Arc<Signal> {
        static REGISTRY: OnceLock<Mutex<HashMap<PathBuf, Weak<Signal>>>> = OnceLock::new();
        let mut map = REGISTRY
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.retain(|_, w| w.strong_count() > 0);
        if let Some(s) = map.get(path).and_then(Weak::upgrade) {
            return s;
        }
        let s = Arc::new(Signal::default());
        map.insert(path.to_path_buf(), Arc::downgrade(&s));
        s
    }

    /// Runs `f` in this process's writers' turn on the file.
    pub(super) fn in_turn<R>(&self, f: impl FnOnce() -> R) -> R {
        let turn = self.turn.lock();
        let out = f();
        parking_lot::MutexGuard::unlock_fair(turn);
        out
    }

    /// Wakes every waiter of this process on the file.
    pub(super) fn bump(&self) {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.cv.notify_all();
    }

    /// Wakes the waiters so they look at their unblock flags.
    fn nudge(&self) {
        let _guard = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        self.cv.notify_all();
    }
}

/// One backend's waiting side: its connection for `data_version`, what it
/// saw last, and its unblock flag.
pub(super) struct Waiter {
    conn: Mutex<Waiting>,
    signal: Arc<Signal>,
    unblocked: AtomicBool,
    max_poll: Duration,
    queue: String,
    /// The earliest pending due time last seen (ms; `NONE`: none).
    head: AtomicU64,
}

/// `Waiter::head` when nothing is pending.
const NONE: u64 = u64::MAX;

struct Waiting {
    conn: Connection,
    version: i64,
    generation: u64,
}

fn data_version(conn: &Connection) -> Result<i64, DurableError> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
        .map_err(|e| map("polling for other processes' commits", e))
}

/// The queue's earliest pending due time of a kind not paused (ms), `NONE`
/// when none.
fn head(conn: &Connection, queue: &str) -> Result<u64, DurableError> {
    conn.prepare_cached(
        "SELECT (SELECT score FROM schedpool_items WHERE queue = ?1 AND state = 0 \
         AND kind NOT IN (SELECT kind FROM schedpool_paused WHERE queue = ?1) \
         ORDER BY score LIMIT 1)",
    )
    .and_then(|mut s| s.query_row([queue], |r| r.get::<_, Option<i64>>(0)))
    .map(|h| h.map_or(NONE, |h| u64::try_from(h).unwrap_or(0)))
    .map_err(|e| map("reading the head", e))
}

impl Waiter {
    pub(super) fn new(
        conn: Connection,
        signal: Arc<Signal>,
        max_poll: Duration,
        queue: &str,
    ) -> Result<Self, DurableError> {
        let version = data_version(&conn)?;
        let first = head(&conn, queue)?;
        let generation = *signal.generation.lock().unwrap_or_else(|e| e.into_inner());
        Ok(Waiter {
            conn: Mutex::new(Waiting {
                conn,
                version,
                generation,
            }),
            signal,
            unblocked: AtomicBool::new(false),
            max_poll: max_poll.max(MIN_POLL),
            queue: queue.to_string(),
            head: AtomicU64::new(first),
        })
    }

    /// What a claim saw as the earliest pending due time (`None`: none).
    pub(super) fn saw_head(&self, head: Option<u64>) {
        self.head.store(head.unwrap_or(NONE), Ordering::SeqCst);
    }

    /// Waits until a commit of this process signals, another connection
    /// commits an item due before `target` (ms; `None`: before the head
    /// seen last), `unblock`, or `until`: true when woken by a commit.
    pub(super) fn wait(&self, until: Instant, target: Option<u64>) -> Result<bool, DurableError> {
        let mut w = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut poll = MIN_POLL;
        loop {
            let version = data_version(&w.conn)?;
            if version != w.version {
                w.version = version;
                let now = head(&w.conn, &self.queue)?;
                let before = target.unwrap_or_else(|| self.head.load(Ordering::SeqCst));
                self.head.store(now, Ordering::SeqCst);
                if now != NONE && now < before {
                    // This process's own signal for the same commit is
                    // consumed with it.
                    w.generation = *self
                        .signal
                        .generation
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    return Ok(true);
                }
                poll = MIN_POLL;
            }
            let mut generation = self
                .signal
                .generation
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if *generation != w.generation {
                w.generation = *generation;
                return Ok(true);
            }
            if self.unblocked.swap(false, Ordering::SeqCst) {
                return Ok(false);
            }
            let now = Instant::now();
            if now >= until {
                return Ok(false);
            }
            let slice = poll.min(until - now);
            generation = self
                .signal
                .cv
                .wait_timeout(generation, slice)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if *generation != w.generation {
                w.generation = *generation;
                return Ok(true);
            }
            drop(generation);
            poll = (poll * 2).min(self.max_poll);
        }
    }

    /// Interrupts a wait in progress (or the next one).
    pub(super) fn unblock(&self) {
        self.unblocked.store(true, Ordering::SeqCst);
        self.signal.nudge();
    }
}
