//! The consumer side of the durable layer: taking items from a store and
//! holding them until they are settled.
//!
//! Layers inside, each using only those before it:
//!
//! 1. `options`: [`QueueOptions`](options::QueueOptions) (lease, `max_block`, `max_attempts`);
//!    `lease`: one held lease (its id, token, length and lost flag);
//! 2. `settle`: every store call that ends a lease (ack, a batch of acks,
//!    nack, bury, reschedule, release), and what a "not held" answer
//!    means: the one place a settle is written;
//! 3. `leases`: the leases a process holds and the heartbeat thread that
//!    renews them (and releases the dropped ones through `settle`);
//! 4. `taker`: the in-process leader/follower over a store;
//! 5. `delivery`: [`Delivery`](delivery::Delivery), a leased item in its holder's hands;
//!    `acker`: a pool's acker thread, many acks in one store call.
//!
//! It uses the store only through [`Store`](super::store::contained::Store), and
//! knows nothing of queues, pools, kinds or handlers.

pub(crate) mod acker;
pub(crate) mod delivery;
pub(crate) mod lease;
pub(crate) mod leases;
pub(crate) mod options;
pub(crate) mod settle;
pub(crate) mod taker;
