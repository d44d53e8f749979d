//! The Redis backend (feature `redis`), in four layers:
//!
//! 1. `scripts.rs`: the Lua scripts, one atomic step each (the key layout
//!    and the invariants the scripts keep are in its header);
//! 2. `client.rs`: connections, timeouts and the retry policy
//!    ([`RedisOptions`]);
//! 3. `checks.rs`: what `connect` checks on the server (version, format,
//!    persistence, eviction, clock skew, timer resolution);
//! 4. `backend.rs`: [`RedisBackend`], the `DurableBackend` over the three,
//!    and the cross-process wake-ups.
//!
//! Nothing here is reachable from the rest of `durable/` except those two
//! public types.

mod backend;
mod checks;
mod client;
mod scripts;

pub use backend::RedisBackend;
pub use client::RedisOptions;
