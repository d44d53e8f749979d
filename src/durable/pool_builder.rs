//! `DurablePoolBuilder`: a durable pool's settings and handlers, checked
//! once at `build`, which starts the workers.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::base::sync::{Condvar, Mutex};

use super::backend::{DurableBackend, DurableError};
use super::envelope::{self, Payload};
use super::job::{HandlerError, JobInfo};
use super::options::QueueOptions;
use super::pool::DurablePool;
use super::runner::{Counters, Handler, Inner, State};
use super::taker::Taker;

// ===== impl DurablePool =====

impl DurablePool {
    /// A builder for a pool on `backend`.
    pub fn builder(backend: impl DurableBackend) -> DurablePoolBuilder {
        DurablePoolBuilder {
            backend: Arc::new(backend),
            threads: num_cpus::get(),
            name: "schedpool-durable".into(),
            opts: QueueOptions {
                max_attempts: 5,
                ..QueueOptions::default()
            },
            backoff: (Duration::from_secs(1), Duration::from_secs(300)),
            handlers: HashMap::new(),
        }
    }
}

// ===== impl DurablePoolBuilder =====

/// Configures a [`DurablePool`]; from [`DurablePool::builder`].
pub struct DurablePoolBuilder {
    backend: Arc<dyn DurableBackend>,
    threads: usize,
    name: String,
    opts: QueueOptions,
    backoff: (Duration, Duration),
    handlers: HashMap<String, Handler>,
}

impl DurablePoolBuilder {
    /// Worker threads (default: the number of CPUs). Zero makes a
    /// producer-only pool: it schedules and cancels items of any kind (it
    /// cannot check them against handlers it does not have) and runs none.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// The worker threads' name prefix (default `schedpool-durable`).
    pub fn name(mut self, prefix: impl Into<String>) -> Self {
        self.name = prefix.into();
        self
    }

    /// The lease of each claim (default 30 s); see [`QueueOptions::lease`].
    pub fn lease(mut self, lease: Duration) -> Self {
        self.opts.lease = lease;
        self
    }

    /// The longest sleep without asking the store (default 5 s).
    pub fn max_block(mut self, max_block: Duration) -> Self {
        self.opts.max_block = max_block;
        self
    }

    /// Claims of one item before it is dead-lettered (default 5; 0: retry
    /// forever). Failed runs count, and so do lease expiries (a killed
    /// holder) and releases of items claimed but never started.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.opts.max_attempts = n;
        self
    }

    /// The retry backoff after a failed run: `base` × 2^(attempt − 1),
    /// capped at `max` (default 1 s and 5 min).
    pub fn retry_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff = (base, max);
        self
    }

    /// Registers the handler of `kind`: it gets the decoded payload and the
    /// run's [`JobInfo`]. Registering a kind again replaces its handler.
    pub fn handler<T, F>(mut self, kind: &str, handler: F) -> Self
    where
        T: Payload + 'static,
        F: Fn(&T, &JobInfo) -> Result<(), HandlerError> + Send + Sync + 'static,
    {
        let run: Handler = Box::new(move |bytes, info| {
            let value = envelope::decode::<T>(&info.id, bytes)?;
            handler(&value, info)
        });
        self.handlers.insert(kind.to_string(), run);
        self
    }

    /// Starts the workers.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for workers without any handler, a kind over
    /// 255 bytes, invalid options, or a worker thread that could not be
    /// spawned.
    pub fn build(self) -> Result<DurablePool, DurableError> {
        if self.threads > 0 && self.handlers.is_empty() {
            return Err(DurableError::Config(
                "a pool with workers needs at least one handler (threads(0) makes a producer-only pool)"
                    .into(),
            ));
        }
        if let Some(kind) = self.handlers.keys().find(|k| k.len() > 255) {
            return Err(DurableError::Config(format!(
                "kind longer than 255 bytes: {kind:?}"
            )));
        }
        self.opts.check()?;
        let inner = Arc::new(Inner {
            producer_only: self.threads == 0,
            taker: Taker::new(self.backend, self.opts),
            handlers: self.handlers,
            backoff: self.backoff,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            counters: Counters::default(),
        });
        let pool = DurablePool { inner };
        for i in 0..self.threads {
            let inner = pool.inner.clone();
            inner.state.lock().running += 1;
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || inner.work());
            if let Err(err) = spawned {
                pool.inner.state.lock().running -= 1;
                pool.shutdown();
                return Err(DurableError::Config(format!(
                    "could not spawn a worker: {err}"
                )));
            }
        }
        Ok(pool)
    }
}

impl fmt::Debug for DurablePoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurablePoolBuilder")
            .field("threads", &self.threads)
            .field("opts", &self.opts)
            .field("kinds", &self.handlers.keys().collect::<Vec<_>>())
            .finish()
    }
}
