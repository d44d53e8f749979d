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

use crate::durable::store::backend::DurableBackend;
use crate::durable::store::contained::Store;
use crate::durable::store::envelope::{self, Payload};
use crate::durable::store::error::DurableError;
use crate::durable::take::acker::Acker;
use crate::durable::take::options::QueueOptions;
use crate::durable::take::taker::Taker;

use super::calendar;
use super::calendar_def;
use super::durable_pool::DurablePool;
use super::job::{HandlerError, JobInfo};
use super::misfire::Misfire;
use super::shared::{Counters, Handler, Inner, State};

// ===== impl DurablePool =====

impl DurablePool {
    /// A builder for a pool on `backend`. By default it starts one worker
    /// thread per CPU, which claim and run the fleet's items: for a process
    /// that only schedules and cancels, use [`producer`](Self::producer).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .name("orders")
    ///     .threads(2)
    ///     .handler("close-order", |order: &u64, _job| {
    ///         println!("closing {order}");
    ///         Ok(())
    ///     })
    ///     .build()?;
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
            #[cfg(feature = "tokio")]
            runtime: None,
            #[cfg(feature = "tokio")]
            async_limits: HashMap::new(),
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
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurablePool, MemoryBackend};
///
/// let pool = DurablePool::builder(MemoryBackend::new())
///     .name("orders")
///     .threads(2)
///     .lease(Duration::from_secs(60))
///     .max_attempts(3)
///     .retry_backoff(Duration::from_secs(5), Duration::from_secs(600))
///     .handler("close-order", |_: &u64, _job| Ok(()))
///     .build()?;
/// # pool.shutdown();
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct DurablePoolBuilder {
    backend: Arc<dyn DurableBackend>,
    threads: usize,
    name: String,
    opts: QueueOptions,
    backoff: (Duration, Duration),
    pub(super) handlers: HashMap<String, Handler>,
    #[cfg(feature = "metrics")]
    metrics_interval: Duration,
    calendars: Vec<Calendar>,
    /// The runtime of async handlers (`builder_async.rs`).
    #[cfg(feature = "tokio")]
    pub(super) runtime: Option<tokio::runtime::Handle>,
    /// Concurrency limits of async kinds, set before or after their handler.
    #[cfg(feature = "tokio")]
    pub(super) async_limits: HashMap<String, usize>,
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
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .name("billing") // threads "billing-0", "billing-1", "billing-acker"
    ///     .threads(2)
    ///     .handler("invoice", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// # pool.shutdown();
    /// let err = DurablePool::builder(MemoryBackend::new())
    ///     .name("bad\0name")
    ///     .threads(0)
    ///     .build()
    ///     .unwrap_err();
    /// assert!(err.is_config());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn name(mut self, prefix: impl Into<String>) -> Self {
        self.name = prefix.into();
        self
    }

    /// The lease of each claim (default 30 s); see [`QueueOptions::lease`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// // A killed process's jobs come back to the others after 10 s.
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .lease(Duration::from_secs(10))
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.opts.lease = lease;
        self
    }

    /// The longest sleep without asking the store (default 5 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .max_block(Duration::from_secs(1)) // at most 1 s late after a lost wake-up
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// # pool.shutdown();
    /// let zero = DurablePool::builder(MemoryBackend::new()).max_block(Duration::ZERO).threads(0).build();
    /// assert!(zero.unwrap_err().is_config());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn max_block(mut self, max_block: Duration) -> Self {
        self.opts.max_block = max_block;
        self
    }

    /// Claims of one item before it is dead-lettered (default 5; 0: retry
    /// forever). Failed runs count, and so do lease expiries (a killed
    /// holder) and releases of items claimed but never started.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .max_attempts(1) // no retry: a failure goes to the dead letters
    ///     .threads(1)
    ///     .handler("parse", |_: &String, _job| Err("not JSON".into()))
    ///     .build()?;
    /// pool.schedule("parse", "upload-1", &"{".to_string(), Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.dead_letters(10)?[0].attempts, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.opts.max_attempts = n;
        self
    }

    /// The retry backoff after a failed run: `base` × 2^(attempt − 1),
    /// capped at `max` (default 1 s and 5 min).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .retry_backoff(Duration::from_secs(10), Duration::from_secs(60))
    ///     .threads(1)
    ///     .handler("webhook", |_: &(), job| {
    ///         if job.attempt < 3 { Err("503".into()) } else { Ok(()) }
    ///     })
    ///     .build()?;
    /// pool.schedule("webhook", "hook-1", &(), Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5))); // attempt 1 fails: retry in 10 s
    /// clock.advance(Duration::from_secs(10));
    /// assert!(pool.wait_idle(Duration::from_secs(5))); // attempt 2 fails: retry in 20 s
    /// clock.advance(Duration::from_secs(19));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 0, "not yet");
    /// clock.advance(Duration::from_secs(1));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 1, "attempt 3");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn retry_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff = (base, max);
        self
    }

    /// Registers the handler of `kind`: it gets the decoded payload and the
    /// run's [`JobInfo`]. Registering a kind again replaces its handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("close-order", |order: &u64, job| {
    ///         // Runs at least once: make the effect idempotent, or fence it
    ///         // with job.token.
    ///         println!("closing {order}, attempt {}", job.attempt);
    ///         Ok(())
    ///     })
    ///     .handler("send-mail", |to: &String, _job| {
    ///         if to.contains('@') { Ok(()) } else { Err(format!("bad address {to:?}").into()) }
    ///     })
    ///     .build()?;
    /// pool.schedule("close-order", "order-42", &42u64, Duration::ZERO)?;
    /// pool.schedule("send-mail", "mail-1", &"ann@example.com".to_string(), Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 2);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn handler<T, F>(mut self, kind: &str, handler: F) -> Self
    where
        T: Payload + 'static,
        F: Fn(&T, &JobInfo) -> Result<(), HandlerError> + Send + Sync + 'static,
    {
        let run = Handler::Sync(Box::new(move |bytes, info| {
            let value = envelope::decode::<T>(&info.id, bytes)?;
            handler(&value, info)
        }));
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
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// # pool.shutdown();
    /// // Workers with nothing to run are a mistake, caught here:
    /// let err = DurablePool::builder(MemoryBackend::new()).threads(1).build().unwrap_err();
    /// assert!(err.is_config());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    #[cfg_attr(not(feature = "tokio"), allow(unused_mut))]
    pub fn build(mut self) -> Result<DurablePool, DurableError> {
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
        #[cfg(feature = "tokio")]
        let (aio, settle_rx) = match self.async_side()? {
            Some((aio, rx)) => (Some(aio), Some(rx)),
            None => (None, None),
        };
        let store = Store::new(self.backend);
        let taker = Taker::new(store.clone(), self.opts);
        let acker = Acker::new(taker.leases.clone());
        let inner = Arc::new(Inner {
            store,
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
            #[cfg(feature = "tokio")]
            aio,
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
        #[cfg(feature = "tokio")]
        if let (Some(rx), true) = (settle_rx, self.threads > 0) {
            {
                let mut s = pool.inner.state.lock();
                s.running += 1;
                s.settler = true;
            }
            let inner = pool.inner.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-settle", self.name))
                .spawn(move || inner.settle_async(rx));
            if let Err(err) = spawned {
                {
                    let mut s = pool.inner.state.lock();
                    s.running -= 1;
                    s.settler = false;
                }
                pool.inner.acker.close();
                pool.shutdown();
                return Err(DurableError::Config(
                    format!("could not spawn the async settler: {err}").into(),
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
                if s.workers == 0 && !s.settler {
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
