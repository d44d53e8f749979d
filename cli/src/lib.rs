//! Operating schedpool's durable timeouts: the `schedpool` command-line
//! tool's library, and the web console as an embeddable axum
//! [`Router`](axum::Router).
//!
//! - [`Store`]: a store opened by URL (`sqlite:PATH`, `redis://…`,
//!   `rediss://…`, `postgres://…`) or over a backend you hold, with the
//!   operator's verbs: overview, listing, item, requeue, purge, cancel,
//!   pause and resume a kind, schedules and fire-now, the audit trail.
//! - [`console::router`]: the console's pages over a [`Store`], to serve on
//!   its own (`schedpool console`) or nest in a service's own axum app.
//!
//! Layers, each using only those before it: `error`, `time`, `payload`,
//! `store/`, `console/`.
//!
//! ```
//! use std::time::Duration;
//! use schedpool::durable::{DurableQueue, MemoryBackend};
//! use schedpool_cli::{console, Store};
//!
//! let backend = MemoryBackend::new();
//! let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
//! queue.put("order-42", &42, Duration::from_secs(60))?;
//! let store = Store::from_backend(backend, "orders")?;
//! // Every change needs this token; reads too when `token_for_reads` is set.
//! let config = console::ConsoleConfig::new("a-long-random-token");
//! let app: axum::Router = console::router(store, config);
//! # drop(app);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod console;
mod error;
pub mod payload;
pub mod store;
pub mod time;

pub use error::{Error, ErrorKind};
pub use store::{BulkAction, Filter, OpenOptions, State, Store};
