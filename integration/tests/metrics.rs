//! Metrics (feature `metrics`): what the pools publish through the
//! `metrics` facade, read back with metrics-util's debugging recorder and
//! scraped over HTTP from the Prometheus endpoint the example serves.
//!
//! Every pool runs on a `ManualClock`, so lateness, run time and lag are
//! exact virtual durations. The recorders are local to each test
//! (`metrics::with_local_recorder` around `build`): the pools register
//! their handles with the recorder current at build time.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use schedpool::durable::{DurablePool, MemoryBackend};
use schedpool::{ManualClock, ScheduledThreadPool};
use schedpool_integration::prometheus;

const EVENTUALLY: Duration = Duration::from_secs(10);
const INTERVAL: Duration = Duration::from_millis(5);
const MS: Duration = Duration::from_millis(1);

/// Everything a debugging recorder has seen, by `name{label=value,...}`
/// (labels in order). Its snapshots consume: a counter reads what it grew
/// by since the last snapshot, a gauge what was set since (0 if nothing
/// was), a histogram the samples since. So counters and histograms add up
/// here, and a gauge is its value in the latest snapshot.
#[derive(Default)]
struct Seen {
    counters: HashMap<String, u64>,
    gauges: HashMap<String, f64>,
    histograms: HashMap<String, Vec<f64>>,
    /// Unit and description by metric name.
    described: HashMap<String, (Option<Unit>, bool)>,
}

impl Seen {
    fn read(&mut self, snapshotter: &Snapshotter) {
        for (key, unit, description, value) in snapshotter.snapshot().into_vec() {
            let (kind, key) = key.into_parts();
            let name = key.name().to_string();
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let id = format!("{name}{{{}}}", labels.join(","));
            self.described
                .insert(name, (unit, description.is_some_and(|d| !d.is_empty())));
            match (kind, value) {
                (MetricKind::Counter, DebugValue::Counter(n)) => {
                    *self.counters.entry(id).or_default() += n;
                }
                (MetricKind::Gauge, DebugValue::Gauge(v)) => {
                    self.gauges.insert(id, v.into_inner());
                }
                (MetricKind::Histogram, DebugValue::Histogram(vs)) => {
                    self.histograms
                        .entry(id)
                        .or_default()
                        .extend(vs.into_iter().map(|v| v.into_inner()));
                }
                (kind, value) => panic!("{id}: {kind:?} with {value:?}"),
            }
        }
    }

    fn counter(&self, id: &str) -> Option<u64> {
        self.counters.get(id).copied()
    }

    fn gauge(&self, id: &str) -> Option<f64> {
        self.gauges.get(id).copied()
    }

    fn histogram(&self, id: &str) -> Vec<f64> {
        let mut v = self.histograms.get(id).cloned().unwrap_or_default();
        v.sort_by(f64::total_cmp);
        v
    }
}

/// Reads `snapshotter` into `seen` until `done` holds; panics after
/// [`EVENTUALLY`] with what was seen.
fn read_until(
    snapshotter: &Snapshotter,
    seen: &mut Seen,
    what: &str,
    done: impl Fn(&Seen) -> bool,
) {
    let limit = Instant::now() + EVENTUALLY;
    loop {
        seen.read(snapshotter);
        if done(seen) {
            return;
        }
        assert!(
            Instant::now() < limit,
            "never saw {what}: counters {:?} gauges {:?}",
            seen.counters,
            seen.gauges
        );
        std::thread::sleep(MS);
    }
}

fn pool_on(clock: &ManualClock, name: &str) -> ScheduledThreadPool {
    ScheduledThreadPool::builder()
        .core_threads(1)
        .thread_name(name)
        .clock(clock.clone())
        .metrics_interval(INTERVAL)
        .build()
        .unwrap()
}

#[test]
fn every_pool_metric_reads_back_with_its_value() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    let pool = metrics::with_local_recorder(&recorder, || pool_on(&clock, "live"));
    let id = |name: &str| format!("{name}{{pool=live}}");
    let mut seen = Seen::default();

    // One worker, held by the first task; two more due behind it.
    let (release, held) = mpsc::channel::<()>();
    let c = clock.clone();
    let first = pool
        .schedule(
            move || {
                held.recv().unwrap();
                c.advance(5 * MS); // this run takes 5 ms of the pool's time
            },
            10 * MS,
        )
        .unwrap();
    let failing = pool
        .at_fixed_rate(Duration::from_secs(1))
        .initial_delay(10 * MS)
        .start(|| Err("no route"))
        .unwrap();
    let last = pool.schedule(|| (), 20 * MS).unwrap();
    let never = pool.schedule(|| (), Duration::from_secs(3600)).unwrap();
    assert!(never.cancel());
    clock.advance(50 * MS);

    // While the first run holds the only worker: the two due tasks wait,
    // the oldest due at 10 ms, so 40 ms behind.
    read_until(&snapshotter, &mut seen, "the held worker's gauges", |s| {
        s.gauge(&id("schedpool_active")) == Some(1.0)
            && s.gauge(&id("schedpool_queued")) == Some(2.0)
            && s.gauge(&id("schedpool_threads")) == Some(1.0)
            && s.gauge(&id("schedpool_lag_seconds")) == Some(0.04)
    });
    read_until(&snapshotter, &mut seen, "the counters so far", |s| {
        s.counter(&id("schedpool_scheduled_total")) == Some(4)
            && s.counter(&id("schedpool_cancelled_total")) == Some(1)
            && s.counter(&id("schedpool_ran_total")) == Some(1)
    });

    release.send(()).unwrap();
    first.join().unwrap();
    assert!(failing.join().is_err());
    last.join().unwrap();
    pool.shutdown();
    assert!(pool.submit(|| ()).is_err(), "refused after shutdown");
    assert!(pool.await_termination(EVENTUALLY));

    // The sampler's last sample, after termination. (The gauges' zeros
    // there are checked over HTTP below: here 0 is also "not set since".)
    read_until(&snapshotter, &mut seen, "the final counters", |s| {
        s.counter(&id("schedpool_rejected_total")) == Some(1)
            && s.counter(&id("schedpool_ran_total")) == Some(3)
            && s.counter(&id("schedpool_failed_total")) == Some(1)
    });
    assert_eq!(seen.counter(&id("schedpool_scheduled_total")), Some(4));
    assert_eq!(seen.counter(&id("schedpool_cancelled_total")), Some(1));
    // Started at 50 ms (due 10), then at 55 ms (due 10 and 20).
    assert_eq!(
        seen.histogram(&id("schedpool_lateness_seconds")),
        [0.035, 0.04, 0.045]
    );
    assert_eq!(
        seen.histogram(&id("schedpool_run_seconds")),
        [0.0, 0.0, 0.005]
    );

    let seconds = [
        "schedpool_lag_seconds",
        "schedpool_lateness_seconds",
        "schedpool_run_seconds",
    ];
    let counts = [
        "schedpool_scheduled_total",
        "schedpool_ran_total",
        "schedpool_cancelled_total",
        "schedpool_failed_total",
        "schedpool_rejected_total",
        "schedpool_queued",
        "schedpool_active",
        "schedpool_threads",
    ];
    assert_described(&seen, &seconds, &counts);
}

/// Each metric has its unit and a description; and no other metric is
/// published.
fn assert_described(seen: &Seen, seconds: &[&str], counts: &[&str]) {
    for (names, unit) in [(seconds, Unit::Seconds), (counts, Unit::Count)] {
        for name in names {
            assert_eq!(
                seen.described.get(*name),
                Some(&(Some(unit), true)),
                "{name}"
            );
        }
    }
    assert_eq!(seen.described.len(), seconds.len() + counts.len());
}

#[test]
fn every_durable_metric_reads_back_with_its_value() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    let (runner, producer) = metrics::with_local_recorder(&recorder, || {
        let runner = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
            .name("durable-run")
            .threads(1)
            .max_attempts(1)
            .metrics_interval(INTERVAL)
            .handler("ok", |_: &u64, _| Ok(()))
            .handler("bad", |_: &u64, _| Err("no route".into()))
            .build()
            .unwrap();
        // No workers: what it schedules stays pending, so it lags.
        let producer = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
            .name("durable-lag")
            .threads(0)
            .metrics_interval(INTERVAL)
            .build()
            .unwrap();
        (runner, producer)
    });
    let run = |name: &str| format!("{name}{{pool=durable-run}}");
    let lag = |name: &str| format!("{name}{{pool=durable-lag}}");
    let items =
        |pool: &str, state: &str| format!("schedpool_durable_items{{pool={pool},state={state}}}");

    for (kind, id) in [("ok", "a"), ("ok", "b"), ("bad", "c")] {
        runner
            .schedule(kind, id, &1u64, Duration::from_secs(1))
            .unwrap();
    }
    producer
        .schedule("any", "late", &1u64, Duration::from_secs(1))
        .unwrap();
    clock.advance(Duration::from_secs(3));
    assert!(runner.wait_idle(EVENTUALLY));

    let mut seen = Seen::default();
    read_until(&snapshotter, &mut seen, "the runs' counters", |s| {
        s.counter(&run("schedpool_durable_succeeded_total")) == Some(2)
            && s.counter(&run("schedpool_durable_failed_total")) == Some(1)
            && s.counter(&run("schedpool_durable_dead_lettered_total")) == Some(1)
    });
    for never in ["retried", "lease_lost", "deferred"] {
        let counter = run(&format!("schedpool_durable_{never}_total"));
        assert_eq!(seen.counter(&counter), Some(0), "{counter}");
    }
    assert_eq!(
        seen.counter(&lag("schedpool_durable_succeeded_total")),
        Some(0)
    );
    read_until(&snapshotter, &mut seen, "the dead letter", |s| {
        s.gauge(&items("durable-run", "dead")) == Some(1.0)
    });
    // Due at 1 s, unclaimed at 3 s (the store's clock).
    read_until(&snapshotter, &mut seen, "the pending item's lag", |s| {
        s.gauge(&items("durable-lag", "pending")) == Some(1.0)
            && s.gauge(&lag("schedpool_durable_lag_seconds")) == Some(2.0)
    });

    for pool in [&runner, &producer] {
        pool.shutdown();
        assert!(pool.await_termination(EVENTUALLY));
    }
    let seconds = ["schedpool_durable_lag_seconds"];
    let counts = [
        "schedpool_durable_items",
        "schedpool_durable_succeeded_total",
        "schedpool_durable_failed_total",
        "schedpool_durable_retried_total",
        "schedpool_durable_dead_lettered_total",
        "schedpool_durable_lease_lost_total",
        "schedpool_durable_deferred_total",
        "schedpool_durable_fires_skipped_total",
        "schedpool_durable_fires_coalesced_total",
    ];
    assert_described(&seen, &seconds, &counts);
}

/// The value of the sample line `series` (name and labels, as rendered)
/// in a Prometheus text page.
fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().expect("a number"))
}

#[test]
fn a_scrape_finds_the_lateness_histogram_and_the_counters() {
    let recorder = prometheus::recorder();
    let endpoint = prometheus::serve(recorder.handle(), "127.0.0.1:0").unwrap();
    let clock = ManualClock::new();
    let (a, b) = metrics::with_local_recorder(&recorder, || {
        (pool_on(&clock, "scrape-a"), pool_on(&clock, "scrape-b"))
    });

    // Four runs due at 10 ms start at 25 ms: 15 ms late each. One fails,
    // one more task is cancelled, and one is refused after shutdown.
    let mut runs: Vec<_> = (0..3)
        .map(|_| a.schedule(|| (), 10 * MS).unwrap())
        .collect();
    runs.push(
        a.at_fixed_rate(Duration::from_secs(1))
            .initial_delay(10 * MS)
            .start(|| Err("no route"))
            .unwrap(),
    );
    assert!(a
        .schedule(|| (), Duration::from_secs(3600))
        .unwrap()
        .cancel());
    clock.advance(25 * MS);
    let failed = runs.into_iter().filter_map(|h| h.join().err());
    assert_eq!(failed.count(), 1);
    for pool in [&a, &b] {
        pool.shutdown();
    }
    assert!(a.execute(|| ()).is_err());
    for pool in [&a, &b] {
        assert!(pool.await_termination(EVENTUALLY));
    }

    let a_ = |name: &str| format!("{name}{{pool=\"scrape-a\"}}");
    let limit = Instant::now() + EVENTUALLY;
    let page = loop {
        let page = prometheus::scrape(endpoint.addr()).unwrap();
        // The sampler's last sample: its counts are final and the worker gone.
        if sample(&page, &a_("schedpool_ran_total")) == Some(4.0)
            && sample(&page, &a_("schedpool_threads")) == Some(0.0)
        {
            break page;
        }
        assert!(Instant::now() < limit, "no final sample in:\n{page}");
        std::thread::sleep(MS);
    };
    assert!(
        page.contains("# TYPE schedpool_lateness_seconds histogram"),
        "{page}"
    );
    assert!(page.contains("# HELP schedpool_lateness_seconds"), "{page}");
    let bucket = |le: &str| {
        sample(
            &page,
            &format!("schedpool_lateness_seconds_bucket{{pool=\"scrape-a\",le=\"{le}\"}}"),
        )
    };
    assert_eq!(bucket("0.01"), Some(0.0), "{page}");
    assert_eq!(bucket("0.05"), Some(4.0), "{page}");
    assert_eq!(bucket("+Inf"), Some(4.0), "{page}");
    assert_eq!(
        sample(&page, &a_("schedpool_lateness_seconds_count")),
        Some(4.0)
    );
    let sum = sample(&page, &a_("schedpool_lateness_seconds_sum")).unwrap();
    assert!((sum - 0.06).abs() < 1e-9, "lateness sum {sum}");
    assert_eq!(sample(&page, &a_("schedpool_run_seconds_count")), Some(4.0));
    for (counter, value) in [
        ("schedpool_scheduled_total", 5.0),
        ("schedpool_ran_total", 4.0),
        ("schedpool_failed_total", 1.0),
        ("schedpool_cancelled_total", 1.0),
        ("schedpool_rejected_total", 1.0),
    ] {
        assert_eq!(
            sample(&page, &a_(counter)),
            Some(value),
            "{counter} in:\n{page}"
        );
        // The other pool is told apart by its label: it ran nothing.
        let b_ = format!("{counter}{{pool=\"scrape-b\"}}");
        assert_eq!(sample(&page, &b_), Some(0.0), "{b_} in:\n{page}");
    }
    for gauge in ["queued", "active", "threads", "lag_seconds"] {
        let gauge = format!("schedpool_{gauge}");
        assert!(page.contains(&format!("# TYPE {gauge} gauge")), "{page}");
        assert_eq!(sample(&page, &a_(&gauge)), Some(0.0), "{gauge} in:\n{page}");
    }
    endpoint.stop();
}
