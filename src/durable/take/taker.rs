//! Taking from a durable backend: the in-process leader/follower.
//!
//! Exactly one taking thread (the local leader) talks to the backend while
//! the local buffer is empty; the other takers wait untimed on the local
//! condvar (or until their own deadline). The leader claims as many items
//! as there are takers plus the `prefetch` (zero for a `DurableQueue`; a
//! `DurablePool` sets it from how fast its handlers run, so one claim
//! serves a batch of fast jobs), hands them over through the buffer, and
//! when nothing is due sleeps in [`DurableBackend::wait`](crate::durable::store::backend::DurableBackend::wait) for the backend's
//! wait hint, capped by `max_block` so a lost wake-up costs at most that.
//!
//! Invariants (under `Local`'s lock):
//!
//! - `leader` is true while one taker is inside a claim, a backend wait or
//!   an error backoff; whoever clears it notifies, so a waiting follower
//!   takes over (the drop guard of the in-process design, done inline on
//!   the normal paths, and by `Marks` when a taker unwinds).
//! - `buffer` holds claimed items not yet handed out. Items claimed with a
//!   prefetch are registered with the heartbeat thread at the claim, so
//!   their leases are renewed while they wait; items without a registered
//!   lease are never kept beyond the takers waiting (an unrenewed lease
//!   burns its time), and a surplus goes back to the store at once (as
//!   every release here, until one finds the store unreachable: see
//!   `release_now`).
//! - Once `closed`, the buffer is released back to the store
//!   (`Nack::Release`: at its due time, so at the front) rather than
//!   served: by `close` on the closing thread (the caller of `shutdown`,
//!   `shutdown_now` or the pool's drop: one store call per item, each
//!   bounded by the backend's operation timeout, and none after one finds
//!   the store unreachable), and by a leader turn that claimed after the
//!   close on its own worker, so that worker's exit (and
//!   `await_termination`) covers it.
//! - A claim is never repeated after an error: the next attempt is a new
//!   claim after a backoff, so a lost reply costs one lease, never a
//!   duplicate hand-out inside it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::sync::{AtomicUsize, Condvar, Mutex, Ordering};
use crate::durable::store::backend::Claimed;
use crate::durable::store::contained::Store;
use crate::durable::store::error::DurableError;

use super::lease::LeaseRef;
use super::leases::Leases;
use super::options::QueueOptions;
use super::settle::Releases;

/// `pub(crate)` (with `new`, `take` and `close`) only for
/// `crate::internals::DurableTaker`, which the loom models drive.
pub(crate) struct Taker {
    pub(crate) opts: QueueOptions,
    pub(crate) leases: Arc<Leases>,
    /// Items a claim takes beyond the takers waiting (see the module docs).
    prefetch: AtomicUsize,
    local: Mutex<Local>,
    cv: Condvar,
}

/// A claimed item, with its lease when it was registered at the claim.
#[derive(Debug)]
pub(crate) struct Taken {
    pub(crate) claimed: Claimed,
    pub(crate) lease: Option<LeaseRef>,
}

#[derive(Default)]
struct Local {
    buffer: VecDeque<Taken>,
    leader: bool,
    takers: usize,
    closed: bool,
    /// Ids of claimed items released unstarted since close.
    released: Vec<String>,
    /// Takers releasing a closed buffer right now.
    releasing: usize,
}

/// What one `take` marked in [`Local`], undone if it unwinds (a panic in
/// a tracing subscriber while it logs, say): its count, its leader turn,
/// a release in progress. Without this the other takers would wait for a
/// leader that is gone, and `close_and_list` would wait for ever. (A
/// backend's panic never unwinds here: see `contained.rs`.)
struct Marks<'a> {
    taker: &'a Taker,
    counted: bool,
    leading: bool,
    releasing: bool,
}

impl Drop for Marks<'_> {
    fn drop(&mut self) {
        if !(self.counted || self.leading || self.releasing) {
            return;
        }
        let mut local = self.taker.local.lock();
        if self.counted {
            local.takers -= 1;
        }
        if self.leading {
            local.leader = false;
        }
        if self.releasing {
            local.releasing -= 1;
        }
        drop(local);
        self.taker.cv.notify_all();
    }
}

/// How a leader's turn ended.
enum Turn {
    Claimed(Vec<Taken>),
    Waited,
    Failed(DurableError),
}

impl Taker {
    /// A taker on `store`, whose leases it registers with a heartbeat
    /// thread of its own.
    pub(crate) fn new(store: Store, opts: QueueOptions) -> Self {
        Taker {
            leases: Leases::new(store, opts.lease),
            opts,
            prefetch: AtomicUsize::new(0),
            local: Mutex::new(Local::default()),
            cv: Condvar::new(),
        }
    }

    /// Sets how many items a claim takes beyond the takers waiting.
    pub(crate) fn set_prefetch(&self, n: usize) {
        self.prefetch.store(n, Ordering::Relaxed);
    }

    /// Takes one due item: waits until one is claimed, the queue closes
    /// (`Ok(None)`), or `limit` passes (`Ok(None)`, or the last error when
    /// the store was failing). `limit` of `Some(now)` is one claim attempt.
    pub(crate) fn take(&self, limit: Option<Instant>) -> Result<Option<Taken>, DurableError> {
        // Declared before `local`, so an unwind drops the lock first.
        let mut marks = Marks {
            taker: self,
            counted: true,
            leading: false,
            releasing: false,
        };
        let mut local = self.local.lock();
        local.takers += 1;
        let mut backoff = Duration::from_millis(50);
        let mut last_err = None;
        let mut tried = false;
        let out = loop {
            if local.closed {
                let items = self.take_buffer(&mut local);
                local.releasing += 1;
                marks.releasing = true;
                drop(local);
                self.release_now(items);
                local = self.local.lock();
                local.releasing -= 1;
                marks.releasing = false;
                break Ok(None);
            }
            if let Some(item) = local.buffer.pop_front() {
                break Ok(Some(item));
            }
            let now = Instant::now();
            if tried && limit.is_some_and(|l| now >= l) {
                break last_err.map_or(Ok(None), Err);
            }
            if local.leader {
                match limit {
                    Some(l) => {
                        self.cv.wait_until(&mut local, l);
                        // A one-shot poll that found a leader at work counts
                        // as tried: it does not wait for the leader's turn.
                        tried = true;
                    }
                    None => self.cv.wait(&mut local),
                }
                continue;
            }
            local.leader = true;
            marks.leading = true;
            let want = local.takers;
            drop(local);
            let turn = self.lead(want, limit);
            local = self.local.lock();
            tried = true;
            match turn {
                Turn::Claimed(items) => {
                    last_err = None;
                    backoff = Duration::from_millis(50);
                    local.buffer.extend(items);
                }
                Turn::Waited => last_err = None,
                Turn::Failed(err) => {
                    tracing::warn!(
                        target: "schedpool::durable",
                        error = %err,
                        retry_in_ms = backoff.as_millis() as u64,
                        "claim failed; backing off"
                    );
                    last_err = Some(err);
                    // Back off as leader (followers keep waiting), waking
                    // early only for close.
                    let mut until = Instant::now() + backoff;
                    if let Some(l) = limit {
                        until = until.min(l);
                    }
                    while !local.closed && Instant::now() < until {
                        self.cv.wait_until(&mut local, until);
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
            local.leader = false;
            marks.leading = false;
            if local.buffer.len() > 1 {
                self.cv.notify_all();
            } else {
                self.cv.notify_one();
            }
        };
        local.takers -= 1;
        marks.counted = false;
        if !local.leader && local.takers > 0 {
            // Leaving with a follower still waiting: make sure it leads.
            self.cv.notify_one();
        }
        // Never keep more unrenewed leases than takers: a surplus (claimed
        // for takers that left) goes back. Registered ones are renewed.
        let keep = local.takers;
        if local.buffer.iter().filter(|t| t.lease.is_none()).count() > keep {
            let mut unrenewed = 0;
            let mut surplus = Vec::new();
            let mut kept = VecDeque::with_capacity(local.buffer.len());
            for t in local.buffer.drain(..) {
                unrenewed += usize::from(t.lease.is_none());
                if t.lease.is_none() && unrenewed > keep {
                    surplus.push(t);
                } else {
                    kept.push_back(t);
                }
            }
            local.buffer = kept;
            drop(local);
            self.release_now(surplus);
        }
        out
    }

    /// One leader turn, without the local lock: claim, or sleep until the
    /// store says something may be due.
    fn lead(&self, want: usize, limit: Option<Instant>) -> Turn {
        let store = self.leases.store();
        let prefetch = self.prefetch.load(Ordering::Relaxed);
        let max = want.max(1) + prefetch;
        let batch = match store.claim(self.opts.lease, max, self.opts.max_attempts) {
            Ok(batch) => batch,
            Err(err) => return Turn::Failed(err),
        };
        if !batch.items.is_empty() {
            let register = prefetch > 0;
            let taken = batch.items.into_iter().map(|claimed| {
                let lease =
                    register.then(|| self.leases.register(claimed.id.clone(), claimed.token));
                Taken { claimed, lease }
            });
            return Turn::Claimed(taken.collect());
        }
        let mut block = self.opts.max_block;
        if let Some(l) = limit {
            block = block.min(l.saturating_duration_since(Instant::now()));
        }
        if block.is_zero() {
            return Turn::Waited;
        }
        // At least 1 ms: the store's clock has ms resolution.
        let due = batch.wait.map(|w| w.max(Duration::from_millis(1)));
        match store.wait(due, block.max(Duration::from_millis(1))) {
            Ok(_) => Turn::Waited,
            Err(err) => Turn::Failed(err),
        }
    }

    /// Empties the buffer of a closed taker, recording the ids released.
    fn take_buffer(&self, local: &mut Local) -> Vec<Taken> {
        let items: Vec<Taken> = local.buffer.drain(..).collect();
        local
            .released
            .extend(items.iter().map(|t| t.claimed.id.clone()));
        items
    }

    /// Gives claimed-but-never-handed-out items back, on this thread (so a
    /// worker that releases finishes it before it exits, and
    /// `await_termination` covers it), at their due time. Once a release
    /// fails with `Unavailable` (the store did not answer within the
    /// backend's operation timeout, refused the connection, or the backend
    /// panicked), the rest are not tried: each could wait as long, and they
    /// come back after their leases anyway.
    fn release_now(&self, items: Vec<Taken>) {
        let mut releases = Releases::default();
        for Taken { claimed, lease } in items {
            if let Some(lease) = lease {
                self.leases.forget(&lease);
            }
            releases.release(self.leases.store(), &claimed.id, claimed.token);
        }
        releases.finish();
    }

    /// Stops taking: blocked takers return `None` at once (the store's wait
    /// is interrupted), and claimed items not yet handed out are released.
    pub(crate) fn close(&self) {
        let items = {
            let mut local = self.local.lock();
            local.closed = true;
            self.take_buffer(&mut local)
        };
        self.cv.notify_all();
        self.leases.store().unblock();
        self.release_now(items);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.local.lock().closed
    }

    /// Closes, then returns the ids of every item claimed but not handed
    /// out, once each was released or left to its lease (for
    /// `shutdown_now`).
    pub(crate) fn close_and_list(&self) -> Vec<String> {
        self.close();
        // A leader turn in progress may still bring claimed items, which
        // it releases itself once it sees `closed`: wait for that turn to
        // end (its store wait was just interrupted; a claim is one round
        // trip), then report every id released since close.
        let mut local = self.local.lock();
        while local.leader || local.releasing > 0 {
            self.cv
                .wait_until(&mut local, Instant::now() + Duration::from_millis(5));
        }
        std::mem::take(&mut local.released)
    }
}

impl fmt::Debug for Taker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let local = self.local.lock();
        f.debug_struct("Taker")
            .field("opts", &self.opts)
            .field("buffered", &local.buffer.len())
            .field("takers", &local.takers)
            .field("closed", &local.closed)
            .finish()
    }
}
