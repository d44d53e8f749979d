//! The Redis backend (feature `redis`), in four layers:
//!
//! 1. `scripts.rs`: the Lua scripts, one atomic step each (the key layout
//!    and the invariants the scripts keep are in its header);
//! 2. `client.rs`: connections, timeouts and the retry policy
//!    ([`RedisOptions`]);
//! 3. `checks.rs`: what `connect` checks on the server (version, format,
//!    persistence, eviction, clock skew, timer resolution);
//! 4. `wake.rs`: the cross-process wake-ups (`BZPOPMIN` on a dedicated
//!    connection, local naps, unblock);
//! 5. `backend.rs`: [`RedisBackend`], the `DurableBackend` over the four;
//!    its dead-letter verbs (bury, requeue, purge, the listing: scripts and
//!    calls) are `dead.rs`, beside it; its operator side (`DurableOps`:
//!    listing, inspect, counts by kind, paused kinds, audit) is `ops.rs`
//!    over the scripts of `ops_scripts.rs`.
//!
//! Nothing here is reachable from the rest of `durable/` except those two
//! public types.

#[cfg(feature = "tokio")]
pub(crate) mod aio;
mod backend;
mod checks;
mod client;
mod dead;
mod ops;
mod ops_scripts;
mod reply;
mod scripts;
mod wake;

pub use backend::RedisBackend;
pub use client::RedisOptions;
