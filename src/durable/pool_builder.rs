//! `DurablePoolBuilder`: a durable pool's settings, handlers and calendar
//! schedules, checked once at `build`, which registers the schedules and
//! then starts the workers (so that no worker claims a fire before this
//! process knows its rule).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::base::sync::{Condvar, Mutex};
use crate::calendar::Schedule;

use super::acker::Acker;
use super::backend::{DurableBackend, DurableError};
use super::calendar;
use super::calendar_def;
use super::envelope::{self, Payload};
use super::job::{HandlerError, JobInfo};
use super::misfire::Misfire;
use super::options::QueueOptions;
use super::pool::DurablePool;
use super::runner::{Counters, Handler, Inner, State};
use super::taker::Taker;

// ===== impl DurablePool =====

impl DurablePool {
    /// A builder for a pool on `backend`. By default it starts one worker
    /// thread per CPU, which claim and run the fleet's items: for a process
    /// that only schedules and cancels, use [`producer`](Self::producer).
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
            #[cfg(feature = "metrics")]
            metrics_interval: super::metrics::DEFAULT_INTERVAL,
            calendars: Vec::new(),
        }
    }
}

impl DurablePool {
    /// A producer-only pool on `backend`: it schedules and cancels items of
    /// any kind, and never claims or runs one. It has no worker threads, no
    /// acker and no heartbeat thread (it holds no leases).
    ///
    /// For a process that only puts jobs for the fleet, such as a web
    /// process that calls [`schedule`](Self::schedule) at checkout while
    /// worker processes run the handlers: a pool from
    /// [`builder`](Self::builder) would start one worker per CPU there, and
    /// they would claim the fleet's jobs (and, with no handler for a kind,
    /// hand each back after claiming it). The same as
    /// `DurablePool::builder(backend).threads(0).build()`; use that form to
    /// set other options, or to register calendar schedules at start-up.
    ///
    /// # Errors
    ///
    /// As for [`DurablePoolBuilder::build`]; with the default options none
    /// applies today.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let store = MemoryBackend::new(); // RedisBackend or PostgresBackend in production
    /// // The web process: schedules, runs nothing.
    /// let web = DurablePool::producer(store.clone())?;
    /// web.schedule("close-order", "order-42", &42u64, Duration::from_secs(30 * 60))?;
    /// // A worker process runs the handlers.
    /// let worker = DurablePool::builder(store)
    ///     .threads(2)
    ///     .handler("close-order", |_order: &u64, _job| Ok(()))
    ///     .build()?;
    /// assert_eq!(web.counts()?.pending, 1);
    /// web.shutdown();
    /// worker.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn producer(backend: impl DurableBackend) -> Result<DurablePool, DurableError> {
        Self::builder(backend).threads(0).build()
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
    #[cfg(feature = "metrics")]
    metrics_interval: Duration,
    calendars: Vec<Calendar>,
}

/// A calendar schedule to register at `build`.
struct Calendar {
    kind: String,
    id: String,
    payload: Vec<u8>,
    rule: Box<dyn Schedule>,
    misfire: Misfire,
}

impl DurablePoolBuilder {
    /// Worker threads (default: the number of CPUs). Zero makes a
    /// producer-only pool, as [`DurablePool::producer`] does: it schedules
    /// and cancels items of any kind (it cannot check them against handlers
    /// it does not have) and runs none.
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

    /// Registers a calendar schedule at [`build`](Self::build), before the
    /// workers start, as
    /// [`DurablePool::schedule_calendar`] would: the way to register the
    /// schedules a process runs at every start-up. Registered after the
    /// workers started, a fire already due could be claimed here first and
    /// handed on (a pause of the retry backoff's base, on the store's
    /// clock: with a [`ManualClock`](crate::ManualClock), until the next
    /// `advance`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::calendar::Schedule;
    /// use schedpool::durable::{DurablePool, MemoryBackend, Misfire};
    ///
    /// #[derive(Debug)]
    /// struct Hourly;
    ///
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
    ///         let t = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((t / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("rotate-logs", |_: &(), _job| Ok(()))
    ///     .schedule_calendar("rotate-logs", "hourly-rotation", &(), Hourly, Misfire::skip())
    ///     .build()?;
    /// assert_eq!(pool.counts()?.pending, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule_calendar<T: Payload, S: Schedule>(
        mut self,
        kind: &str,
        id: &str,
        value: &T,
        schedule: S,
        misfire: Misfire,
    ) -> Self {
        self.calendars.push(Calendar {
            kind: kind.to_string(),
            id: id.to_string(),
            payload: calendar::encode(value),
            rule: Box::new(schedule),
            misfire,
        });
        self
    }

    /// How often the pool publishes its metrics (feature `metrics`; the
    /// metrics are listed in the crate docs, "Metrics"). Default 5 s: each
    /// sample asks the store for its counts, its earliest due time and its
    /// clock (three calls; PostgreSQL counts the queue's rows). Values
    /// under 1 ms are raised to 1 ms. The pool's [`name`](Self::name) is
    /// its metrics' `pool` label.
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// // Install the recorder (an exporter) first: the pool registers its
    /// // metrics with the recorder installed when it is built.
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .name("orders") // published as pool="orders"
    ///     .metrics_interval(Duration::from_secs(15))
    ///     .handler("close", |_: &u64, _| Ok(()))
    ///     .threads(1)
    ///     .build()?;
    /// pool.shutdown();
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics_interval(mut self, interval: Duration) -> Self {
        self.metrics_interval = interval;
        self
    }

    /// Starts the workers (and, with the `metrics` feature, the metrics
    /// sampler thread, `"{name}-metrics"`, which exits after shutdown).
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for workers without any handler, a kind over
    /// 255 bytes or the reserved kind `schedpool/calendar`, a thread name
    /// with a NUL byte (the OS cannot take it), invalid options, or a worker
    /// thread that could not be spawned; a calendar schedule's registration
    /// error (see [`DurablePool::schedule_calendar`]).
    pub fn build(self) -> Result<DurablePool, DurableError> {
        if self.name.contains('\0') {
            return Err(DurableError::Config(
                format!("the thread name {:?} contains a NUL byte", self.name).into(),
            ));
        }
        if self.threads > 0 && self.handlers.is_empty() {
            return Err(DurableError::Config(
                "a pool with workers needs at least one handler (DurablePool::producer makes a producer-only pool)"
                    .into(),
            ));
        }
        if let Some(kind) = self.handlers.keys().find(|k| k.len() > 255) {
            return Err(DurableError::Config(
                format!("kind longer than 255 bytes: {kind:?}").into(),
            ));
        }
        if self.handlers.contains_key(calendar_def::KIND) {
            return Err(DurableError::Config(
                format!(
                    "the kind {:?} is reserved for calendar schedules",
                    calendar_def::KIND
                )
                .into(),
            ));
        }
        self.opts.check()?;
        let taker = Taker::new(self.backend, self.opts);
        let acker = Acker::new(taker.leases.clone());
        let inner = Arc::new(Inner {
            producer_only: self.threads == 0,
            threads: self.threads,
            taker,
            acker,
            handlers: self.handlers,
            backoff: self.backoff,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            counters: Counters::default(),
            #[cfg(feature = "metrics")]
            sampler: Condvar::new(),
            run_ns: AtomicU64::new(0),
        });
        let pool = DurablePool { inner };
        for c in self.calendars {
            let registered =
                pool.register_calendar(&c.kind, &c.id, c.payload, c.rule, c.misfire, false);
            if let Err(err) = registered {
                pool.shutdown();
                return Err(err);
            }
        }
        if self.threads > 0 {
            // The acker first: a worker's first ack may come at once.
            pool.inner.state.lock().running += 1;
            let inner = pool.inner.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-acker", self.name))
                .spawn(move || inner.ack());
            if let Err(err) = spawned {
                pool.inner.state.lock().running -= 1;
                pool.shutdown();
                return Err(DurableError::Config(
                    format!("could not spawn the acker: {err}").into(),
                ));
            }
        }
        for i in 0..self.threads {
            let inner = pool.inner.clone();
            {
                let mut s = inner.state.lock();
                s.running += 1;
                s.workers += 1;
            }
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || inner.work());
            if let Err(err) = spawned {
                let mut s = pool.inner.state.lock();
                s.running -= 1;
                s.workers -= 1;
                if s.workers == 0 {
                    pool.inner.acker.close();
                }
                drop(s);
                pool.shutdown();
                return Err(DurableError::Config(
                    format!("could not spawn a worker: {err}").into(),
                ));
            }
        }
        #[cfg(feature = "metrics")]
        super::metrics::start(&pool.inner, &self.name, self.metrics_interval);
        Ok(pool)
    }
}

impl fmt::Debug for DurablePoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurablePoolBuilder")
            .field("threads", &self.threads)
            .field("opts", &self.opts)
            .field("kinds", &self.handlers.keys().collect::<Vec<_>>())
            .field(
                "calendars",
                &self.calendars.iter().map(|c| &c.id).collect::<Vec<_>>(),
            )
            .finish()
    }
}
