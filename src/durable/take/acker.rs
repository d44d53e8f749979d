//! The acker of a `DurablePool`: one thread per pool that sends the acks of
//! the runs its workers finished, many in one store call.
//!
//! A worker whose handler returned `Ok` hands the run's lease to the acker
//! and takes its next item at once; the acker sends everything queued in
//! one [`DurableBackend::ack_many`](crate::durable::DurableBackend::ack_many) (one statement on PostgreSQL, one script
//! call on Redis). It flushes as soon as something is queued and no flush
//! is in progress (so an idle pool's ack goes out at once), and while a
//! flush is in progress the next acks gather for the next one (so a busy
//! pool sends them by the batch: group commit, with no timer).
//!
//! Invariants (under `State`'s lock):
//!
//! - A queued lease stays registered with the heartbeat thread until the
//!   flush that sends it has its reply, so a queued run keeps its item, and
//!   so does one whose flush is slow. A batch goes in id order, as the
//!   heartbeat's extends do, so an extend and an ack of the same rows (on
//!   PostgreSQL, two transactions) wait for each other, never deadlock.
//! - `outstanding` counts every lease from `submit` until its outcome has
//!   been reported (queued, or in a flush in progress): the pool is idle
//!   only when it is zero, and a run's counter moves before it drops.
//! - Every ack in a flush is checked against its own token: a stale one is
//!   refused and reported alone (`Outcome::LeaseLost`), never the batch. A
//!   flush that cannot reach the store reports each of its leases as
//!   failed; their items come back after the lease (at least once: a crash
//!   between a run and its ack redelivers, never loses).
//! - At most `MAX_QUEUED` leases wait: a worker submitting past it waits
//!   for the flush in progress (back-pressure instead of unbounded memory).
//! - After `close`, `run` returns once everything submitted has been sent
//!   and reported; a `submit` after `close` is refused and handed back.

use std::fmt;
use std::sync::Arc;

use crate::base::sync::{Condvar, Mutex};

use crate::durable::store::error::DurableError;

use super::lease::LeaseRef;
use super::leases::Leases;

/// The most acks one flush sends.
const MAX_BATCH: usize = 500;

/// The most acks waiting for a flush before `submit` blocks. With the batch
/// in flight, it bounds the runs a crash makes run again (their acks were
/// not sent): at least once, but not thousands at a time.
const MAX_QUEUED: usize = MAX_BATCH;

/// What became of one submitted ack.
#[derive(Debug)]
pub(crate) enum Outcome<'a> {
    /// The store accepted it.
    Acked,
    /// The token no longer held the item (cancelled, replaced, or taken
    /// over after its lease expired): refused, for this item only.
    LeaseLost {
        /// The item's id.
        id: &'a str,
        /// The refused token.
        token: u64,
    },
    /// The flush could not reach the store; the item comes back after its
    /// lease.
    Failed {
        /// The item's id.
        id: &'a str,
        /// Why.
        error: &'a DurableError,
    },
}

pub(crate) struct Acker {
    leases: Arc<Leases>,
    state: Mutex<State>,
    /// Signalled on submit (for the acker thread) and after each flush
    /// (for submitters waiting on `MAX_QUEUED`).
    cv: Condvar,
}

#[derive(Default)]
struct State {
    queue: Vec<LeaseRef>,
    /// Submitted and not yet reported: `queue` plus the flush in progress.
    outstanding: usize,
    closed: bool,
}

impl Acker {
    pub(crate) fn new(leases: Arc<Leases>) -> Self {
        Acker {
            leases,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// Queues the ack of `lease`'s item. `Err` hands it back once the
    /// acker is closed (the caller then acks it itself).
    pub(crate) fn submit(&self, lease: LeaseRef) -> Result<(), LeaseRef> {
        let mut s = self.state.lock();
        while s.queue.len() >= MAX_QUEUED && !s.closed {
            self.cv.wait(&mut s);
        }
        if s.closed {
            return Err(lease);
        }
        s.queue.push(lease);
        s.outstanding += 1;
        if s.queue.len() == 1 {
            self.cv.notify_all();
        }
        Ok(())
    }

    /// Acks submitted and not yet reported.
    pub(crate) fn outstanding(&self) -> usize {
        self.state.lock().outstanding
    }

    /// No more submits: `run` returns once the queue is sent.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.cv.notify_all();
    }

    /// The acker thread's body: flushes until closed and drained, calling
    /// `report` for every ack (before `outstanding` drops).
    pub(crate) fn run(&self, mut report: impl FnMut(Outcome<'_>)) {
        let mut s = self.state.lock();
        loop {
            if s.queue.is_empty() {
                if s.closed {
                    return;
                }
                self.cv.wait(&mut s);
                continue;
            }
            let take = s.queue.len().min(MAX_BATCH);
            let mut batch: Vec<LeaseRef> = s.queue.drain(..take).collect();
            // In id order, as the heartbeat's extends: two batched updates
            // of the same rows then wait for each other, never deadlock.
            batch.sort_unstable_by(|a, b| a.cell.id.cmp(&b.cell.id));
            // Room again for submitters held at MAX_QUEUED.
            self.cv.notify_all();
            drop(s);
            self.flush(&batch, &mut report);
            s = self.state.lock();
            s.outstanding -= batch.len();
        }
    }

    /// Sends one batch and reports each ack's outcome.
    fn flush(&self, batch: &[LeaseRef], report: &mut impl FnMut(Outcome<'_>)) {
        // A panic in a backend (user code) comes back as an error here
        // (`contained.rs`), so it cannot kill the only thread that settles
        // these leases. Heartbeats stop only once it has a reply.
        match self.leases.ack_batch(batch) {
            Ok(held) => {
                for (lease, held) in batch.iter().zip(held) {
                    if held {
                        report(Outcome::Acked);
                    } else {
                        report(Outcome::LeaseLost {
                            id: &lease.cell.id,
                            token: lease.cell.token,
                        });
                    }
                }
            }
            Err(error) => {
                for lease in batch {
                    report(Outcome::Failed {
                        id: &lease.cell.id,
                        error: &error,
                    });
                }
            }
        }
    }
}

impl fmt::Debug for Acker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("Acker")
            .field("queued", &s.queue.len())
            .field("outstanding", &s.outstanding)
            .field("closed", &s.closed)
            .finish()
    }
}
