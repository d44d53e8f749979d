//! A tour of the periodic task options: missed ticks, failure policies with
//! backoff, run limits, pause / resume / trigger / set_period, jitter, and
//! lateness statistics.
//!
//! Sections 1-4 run on a `ManualClock` (virtual seconds, exact and
//! instant); section 5 uses the real clock, because lateness is about real
//! time.
//!
//! Run: `cargo run --release --example periodic_control`

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{ManualClock, MissedTicks, OnFailure, RunInfo, ScheduledThreadPool, TaskState};

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// A shared list of virtual times (seconds since the clock was made).
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<Vec<u64>>>);
impl Runs {
    fn push(&self, clock: &ManualClock) {
        self.0.lock().unwrap().push(clock.elapsed().as_secs());
    }
    fn get(&self) -> Vec<u64> {
        self.0.lock().unwrap().clone()
    }
}

/// Advances the clock one second at a time (so every run happens at its
/// exact second), letting the pool run what became due after each step.
fn advance(clock: &ManualClock, pool: &ScheduledThreadPool, seconds: u64) {
    assert!(
        pool.wait_idle(Duration::from_secs(5)),
        "runs due now happen now"
    );
    for _ in 0..seconds {
        clock.advance(S);
        assert!(pool.wait_idle(Duration::from_secs(5)));
    }
}

fn virtual_pool(failures: Option<Arc<Mutex<Vec<String>>>>) -> (ManualClock, ScheduledThreadPool) {
    let clock = ManualClock::new();
    let mut builder = ScheduledThreadPool::builder()
        .core_threads(1)
        .thread_name("ctl")
        .clock(clock.clone());
    if let Some(log) = failures {
        builder = builder.failure_handler(move |p| {
            log.lock()
                .unwrap()
                .push(format!("task {} ({}): {}", p.id(), p.kind(), p.message()))
        });
    }
    (clock, builder.build().expect("pool"))
}

fn main() {
    let wall = Instant::now();
    // Section 2 panics on purpose: the pool catches and reports them (failure
    // handler, handle, ERROR event), so keep std's hook quiet on its threads.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !thread::current()
            .name()
            .is_some_and(|n| n.starts_with("ctl-"))
        {
            default_hook(info);
        }
    }));

    // ----- 1. Missed ticks: a 10 s task, and the machine stalls for 50 s -----
    println!("1. missed_ticks: every 10 s from t=10 s; the clock jumps from 0 to 50 s at once");
    let mut missed = Vec::new();
    for policy in [MissedTicks::Burst, MissedTicks::Skip, MissedTicks::Delay] {
        let (clock, pool) = virtual_pool(None);
        let runs = Runs::default();
        let (r, c) = (runs.clone(), clock.clone());
        let h = pool
            .at_fixed_rate(10 * S)
            .initial_delay(10 * S)
            .missed_ticks(policy)
            .start(move || r.push(&c))
            .unwrap();
        clock.advance(50 * S);
        assert!(pool.wait_idle(Duration::from_secs(5)));
        let next = h.next_run().unwrap() - clock.now();
        println!(
            "   {:<6} ran {} time(s) at t=50 s, next run in {} s",
            format!("{policy:?}"),
            runs.get().len(),
            next.as_secs()
        );
        missed.push(runs.get().len());
    }
    assert_eq!(
        missed,
        [5, 1, 1],
        "Burst catches up; Skip and Delay run once"
    );

    // ----- 2. Panics: retry with exponential backoff, then resume -----
    println!(
        "2. on_failure(Backoff 1 s..4 s): a sync every 10 s whose upstream is down for 4 runs"
    );
    let panics = Arc::new(Mutex::new(Vec::new()));
    let (clock, pool) = virtual_pool(Some(panics.clone()));
    let runs = Runs::default();
    let (r, c) = (runs.clone(), clock.clone());
    let mut attempt = 0;
    let sync = pool
        .at_fixed_rate(10 * S)
        .on_failure(OnFailure::Backoff {
            initial: S,
            max: 4 * S,
        })
        .start(move || {
            r.push(&c);
            attempt += 1;
            if attempt <= 4 {
                panic!("upstream down (attempt {attempt})");
            }
        })
        .unwrap();
    advance(&clock, &pool, 40);
    println!("   runs at t = {:?} s", runs.get());
    println!(
        "   failures {}, last: {:?}; state {:?}",
        sync.failure_count(),
        sync.last_failure().unwrap_or_default(),
        sync.state()
    );
    for p in panics.lock().unwrap().iter() {
        println!("   failure handler: {p}");
    }
    assert_eq!(
        runs.get()[..5],
        [0, 1, 3, 7, 11],
        "retries after 1, 2, 4, 4 s"
    );
    assert_eq!(runs.get()[5..], [21, 31], "then every 10 s again");
    assert_eq!(sync.failure_count(), 4);
    assert_eq!(panics.lock().unwrap().len(), 4);
    assert_eq!(pool.stats().panicked, 4);
    sync.cancel();

    // ----- 3. Limits: max_runs and until -----
    println!("3. limits: with_fixed_delay(5 s).max_runs(3), at_fixed_rate(10 s).until(now + 45 s)");
    let (clock, pool) = virtual_pool(None);
    let (probe_runs, tick_runs) = (Runs::default(), Runs::default());
    let (r, c) = (probe_runs.clone(), clock.clone());
    let probe = pool
        .with_fixed_delay(5 * S)
        .max_runs(3)
        .start(move || r.push(&c))
        .unwrap();
    let (r, c) = (tick_runs.clone(), clock.clone());
    let ticker = pool
        .at_fixed_rate(10 * S)
        .until(clock.now() + 45 * S)
        .start(move || r.push(&c))
        .unwrap();
    advance(&clock, &pool, 60);
    println!(
        "   probe runs at t = {:?} s -> {:?}",
        probe_runs.get(),
        probe.state()
    );
    println!(
        "   ticker runs at t = {:?} s -> {:?}",
        tick_runs.get(),
        ticker.state()
    );
    assert_eq!(probe_runs.get(), [0, 5, 10]);
    assert_eq!(tick_runs.get(), [0, 10, 20, 30, 40]);
    assert_eq!(
        probe.join(),
        Ok(()),
        "a limit completes the handle normally"
    );
    assert_eq!(ticker.join(), Ok(()));

    // ----- 4. Steering a running task -----
    println!("4. pause / resume / trigger / set_period on a flush every 10 s");
    let (clock, pool) = virtual_pool(None);
    let runs = Runs::default();
    let (r, c) = (runs.clone(), clock.clone());
    let flush = pool
        .at_fixed_rate(10 * S)
        .initial_delay(10 * S)
        .start(move || r.push(&c))
        .unwrap();
    advance(&clock, &pool, 25);
    println!("   t=25 s  runs {:?}; pause()", runs.get());
    assert!(flush.pause());
    assert_eq!(flush.state(), TaskState::Paused);
    assert_eq!(flush.next_run(), None);
    advance(&clock, &pool, 30);
    println!(
        "   t=55 s  runs {:?} (nothing while paused); resume()",
        runs.get()
    );
    assert_eq!(runs.get(), [10, 20]);
    assert!(flush.resume());
    advance(&clock, &pool, 7);
    println!(
        "   t=62 s  runs {:?} (back on the 10 s grid, missed runs not replayed); trigger()",
        runs.get()
    );
    assert_eq!(runs.get(), [10, 20, 60]);
    assert!(flush.trigger());
    assert!(pool.wait_idle(Duration::from_secs(5)));
    assert_eq!(runs.get(), [10, 20, 60, 62], "trigger runs it now");
    flush.set_period(5 * S).unwrap();
    let next = flush.next_run().unwrap() - clock.now();
    println!(
        "   t=62 s  set_period(5 s): next run in {} s (the trigger took the 70 s run; 80 s moves to 75 s)",
        next.as_secs()
    );
    assert_eq!(next, 13 * S);
    advance(&clock, &pool, 20);
    let after: Vec<u64> = runs.get()[4..].to_vec();
    println!("   t=82 s  runs since: {after:?}");
    assert!(after.windows(2).all(|w| w[1] - w[0] == 5), "the new period");
    assert_eq!(flush.run_count(), runs.get().len() as u64);
    flush.cancel();

    // ----- 5. Jitter and lateness, in real time -----
    println!("5. jitter: 40 tasks every 20 ms with jitter(10 ms), 5 runs each (real clock)");
    let pool = ScheduledThreadPool::builder()
        .core_threads(2)
        .build()
        .expect("pool");
    let infos = Arc::new(Mutex::new(Vec::new()));
    // task id -> the clock just before and just after `start`: the first
    // grid point is the pool's clock read in between.
    let mut started_at = std::collections::HashMap::new();
    let handles: Vec<_> = (0..40)
        .map(|_| {
            let infos = infos.clone();
            let t0 = Instant::now();
            let h = pool
                .at_fixed_rate(20 * MS)
                .jitter(10 * MS)
                .max_runs(5)
                .start(move || infos.lock().unwrap().push(RunInfo::current().unwrap()))
                .unwrap();
            started_at.insert(h.id(), (t0, Instant::now()));
            h
        })
        .collect();
    for h in handles {
        assert_eq!(h.join(), Ok(()));
    }
    let infos = infos.lock().unwrap().clone();
    // How far past its grid point (start + (n-1) * period) each run was
    // due, measured from each end of the `start` call: the true offset (the
    // jitter) lies between the two, whatever a busy machine did meanwhile.
    let (mut early_end, mut late_end) = (Vec::new(), Vec::new());
    for i in &infos {
        let (before, after) = started_at[&i.id()];
        let nth = 20 * MS * (i.run() as u32 - 1);
        let (before, after) = (before + nth, after + nth);
        assert!(i.due() >= before, "never due before its grid point");
        early_end.push(i.due().duration_since(before));
        late_end.push(i.due().saturating_duration_since(after));
    }
    let (lo, hi) = (
        early_end.iter().min().unwrap(),
        early_end.iter().max().unwrap(),
    );
    let stats = pool.stats();
    println!(
        "   {} runs; due {:.1}..{:.1} ms past their grid point (counted from the call to start)",
        infos.len(),
        lo.as_secs_f64() * 1e3,
        hi.as_secs_f64() * 1e3
    );
    println!(
        "   lateness (start - due): p50 {:?}  p99 {:?}  max {:?}",
        stats.lateness.p50, stats.lateness.p99, stats.lateness.max
    );
    assert_eq!(infos.len(), 200);
    assert!(infos.iter().all(|i| i.started() >= i.due()), "never early");
    assert!(
        late_end.iter().all(|&j| j < 10 * MS),
        "jitter stays below its maximum"
    );
    assert!(
        late_end.iter().max().unwrap() > &(5 * MS),
        "runs are spread out"
    );
    assert_eq!(stats.lateness.count, 200);
    pool.shutdown().await_termination(Duration::from_secs(5));

    println!("wall time {:.2} s", wall.elapsed().as_secs_f64());
    println!("ok");
}
