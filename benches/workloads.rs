//! One-shot measurements W1–W8 of the "Performance" issue, on `schedpool` and on
//! the `scheduled-thread-pool` crate (the same tasks, the same seeded delays and
//! cancel order). `harness = false`: prints a table and writes the raw numbers to
//! `target/bench-results/` (CSV + JSON; W4 lateness samples under `raw/`).
//!
//! ```text
//! cargo bench --bench workloads                                  # both pools, full size
//! SCHEDPOOL_BENCH_QUICK=1 cargo bench --bench workloads          # smoke run (seconds)
//! cargo bench --bench workloads -- --impl schedpool --only W4,W5 --run 2 --csv /tmp/x.csv
//! ```
//!
//! Options (after `--`): `--impl schedpool|scheduled-thread-pool|stp|all` (default all),
//! `--only W1,W2,...` (default all), `--run N` (tag of the run, default 0),
//! `--csv PATH` (default `target/bench-results/workloads.csv`; a `.json` is written beside it).
//!
//! The heap numbers come from a counting global allocator (requested bytes, not
//! malloc size classes), switched on only around the heap measurements; elsewhere
//! it costs one relaxed load per allocation. The criterion bench `peer_compare`
//! measures the timing workloads with the plain system allocator.
//!
//! | W1 | 1M no-op tasks, delays in [1 h, 2 h), one thread      | ns per schedule |
//! | W2 | cancel all of them in random order; heap retained     | ns per cancel; bytes |
//! | W3 | 1M zero-delay tasks, one submitter, 2 workers         | tasks/s until the last ran |
//! | W4 | 10k tasks, delays in [0, 1 s): start − deadline       | p50, p99, p99.9, max µs |
//! | W5 | 1000 fixed-rate tasks, period 1 ms, 2 s               | runs / expected; worst drift |
//! | W6 | 1M pending tasks                                       | heap bytes per task |
//! | W7 | 2 producers × 500k tasks, delays 0–10 ms, pool running | tasks/s |
//! | W8 | cancel cost with 1k, 10k, 100k, 1M pending             | ns per cancel |

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::io::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

struct Args {
    imps: Vec<String>,
    only: Option<Vec<String>>,
    run: u32,
    csv: Option<std::path::PathBuf>,
}

fn parse_args() -> Args {
    let mut a = Args {
        imps: vec![Sp::NAME.to_string(), Stp::NAME.to_string()],
        only: None,
        run: 0,
        csv: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--bench" | "--nocapture" => {}
            "--probe" => {
                // For compare.sh, around the JDK's runs: one number, ns.
                println!("{:.1}", line_transfer_ns());
                std::process::exit(0);
            }
            "--impl" => {
                let v = it.next().expect("--impl needs a value");
                a.imps = match v.as_str() {
                    "all" => vec![Sp::NAME.to_string(), Stp::NAME.to_string()],
                    "sp" | "schedpool" => vec![Sp::NAME.to_string()],
                    "stp" | "scheduled-thread-pool" => vec![Stp::NAME.to_string()],
                    other => panic!("unknown --impl {other}"),
                }
            }
            "--only" => {
                let v = it.next().expect("--only needs a value");
                a.only = Some(v.split(',').map(|s| s.trim().to_uppercase()).collect());
            }
            "--run" => a.run = it.next().expect("--run N").parse().expect("--run N"),
            "--csv" => a.csv = Some(it.next().expect("--csv PATH").into()),
            other if other.starts_with("--") => eprintln!("ignoring option {other}"),
            _ => {} // a criterion-style filter: ignored
        }
    }
    a
}

impl Args {
    fn wants(&self, w: &str) -> bool {
        match &self.only {
            None => true,
            Some(v) => v.iter().any(|x| x == w),
        }
    }
}

// --------------------------------------------------------------------------
// Workloads
// --------------------------------------------------------------------------

/// A short run of the hot paths so that neither side pays first-touch costs
/// inside a measurement (the JDK side warms its JIT the same way).
fn warmup<P: BenchPool>() {
    let pool = P::with_threads(2);
    let d = delays(1, 20_000, LONG_MIN, LONG_SPAN);
    let hs: Vec<_> = d.iter().map(|&d| pool.schedule(d, noop)).collect();
    for h in hs.iter().rev() {
        P::cancel(h);
    }
    drop(hs);
    let latch = Latch::leak(20_000);
    for _ in 0..20_000 {
        pool.execute(move || latch.hit());
    }
    latch.wait(Duration::from_secs(30));
    pool.teardown();
}

/// W1's timed loop: schedules a no-op after each of `ds` into a new pool;
/// returns the pool, the handles, the time and the minor page faults taken.
fn schedule_all<P: BenchPool>(ds: &[Duration]) -> (P, Vec<P::Handle>, Duration, u64) {
    let pool = P::with_threads(2);
    let mut handles = Vec::with_capacity(ds.len());
    let f0 = minor_faults();
    let t = Instant::now();
    for &d in ds {
        handles.push(pool.schedule(d, noop));
    }
    let took = t.elapsed();
    (pool, handles, took, minor_faults() - f0)
}

/// W1 (ns per schedule) and W2 (ns per cancel, random order).
fn w1_w2<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    let n = p.n_pending;
    let ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
    let perm = permutation(SEED_PERM, n);

    let (pool, handles, sched, faults) = schedule_all::<P>(&ds);
    let t = Instant::now();
    for &i in &perm {
        P::cancel(&handles[i as usize]);
    }
    let cancel = t.elapsed();
    drop(handles);
    pool.teardown();

    // Not a target row: the same schedules again, in a fresh pool of the
    // same process. The allocator may now hand out memory the first round
    // freed (how much it kept is glibc's choice), so the difference between
    // the two rows is about what first-touching fresh pages costs W1.
    let (pool, handles, again, faults_again) = schedule_all::<P>(&ds);
    drop(handles);
    pool.teardown();

    let per_op = |d: Duration| d.as_nanos() as f64 / n as f64;
    let per_1k = |f: u64| f as f64 * 1000.0 / n as f64;
    rows.push(row(P::NAME, "W1", "schedule", "ns/op", per_op(sched)));
    rows.push(row(P::NAME, "W1", "page faults", "per 1k", per_1k(faults)));
    rows.push(row(P::NAME, "W1", "schedule again", "ns/op", per_op(again)));
    rows.push(row(
        P::NAME,
        "W1",
        "faults again",
        "per 1k",
        per_1k(faults_again),
    ));
    rows.push(row(
        P::NAME,
        "W2",
        "cancel",
        "ns/op",
        cancel.as_nanos() as f64 / n as f64,
    ));
}

/// W2 (heap retained after cancelling all) and W6 (heap per pending task).
fn memory<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    let n = p.n_pending;
    let ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
    let perm = permutation(SEED_PERM, n);

    // Pass A: keep the handles, cancel everything, drop the handles.
    let pool = P::with_threads(2);
    let mut handles = Vec::with_capacity(n);
    set_counting(true);
    let b0 = settle_heap();
    let a0 = alloc_calls();
    for &d in &ds {
        handles.push(pool.schedule(d, noop));
    }
    let with_handles = live_bytes() - b0;
    let allocs = alloc_calls() - a0;
    for &i in &perm {
        P::cancel(&handles[i as usize]);
    }
    handles.clear();
    let retained = settle_heap() - b0;
    set_counting(false);
    drop(handles);
    pool.teardown();

    // Pass B: handles dropped at once (dropping does not cancel): what the pool keeps.
    let pool = P::with_threads(2);
    set_counting(true);
    let b0 = settle_heap();
    for &d in &ds {
        drop(pool.schedule(d, noop));
    }
    let pending = settle_heap() - b0;
    set_counting(false);
    pool.teardown();

    rows.push(row(P::NAME, "W2", "retained", "bytes", retained as f64));
    rows.push(row(
        P::NAME,
        "W6",
        "heap/task",
        "bytes",
        pending as f64 / n as f64,
    ));
    rows.push(row(
        P::NAME,
        "W6",
        "heap/task+handle",
        "bytes",
        with_handles as f64 / n as f64,
    ));
    rows.push(row(
        P::NAME,
        "W6",
        "allocs/schedule",
        "calls",
        allocs as f64 / n as f64,
    ));
}

/// W3: zero-delay tasks from one thread into 2 workers, until the last ran.
fn w3<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    let n = p.n_zero;
    let pool = P::with_threads(2);
    let latch = Latch::leak(n);
    let t = Instant::now();
    for _ in 0..n {
        pool.execute(move || latch.hit());
    }
    let submitted = t.elapsed();
    let ok = latch.wait(Duration::from_secs(120));
    let el = t.elapsed();
    pool.teardown();
    if !ok {
        eprintln!("{}: W3 timed out", P::NAME);
    }
    rows.push(row(
        P::NAME,
        "W3",
        "throughput",
        "tasks/s",
        if ok {
            n as f64 / el.as_secs_f64()
        } else {
            f64::NAN
        },
    ));
    rows.push(row(
        P::NAME,
        "W3",
        "submit",
        "ns/op",
        submitted.as_nanos() as f64 / n as f64,
    ));
}

/// W4: lateness (start − deadline) of one-shot tasks with delays in [0, 1 s).
fn w4<P: BenchPool>(p: &Params, run: u32, rows: &mut Vec<Row>) {
    struct St {
        late: Vec<AtomicI64>,
        latch: &'static Latch,
    }
    let n = p.n_lateness;
    let ds = delays(SEED_LATENESS, n, Duration::ZERO, p.w4_window);
    let st: &'static St = Box::leak(Box::new(St {
        late: (0..n).map(|_| AtomicI64::new(i64::MIN)).collect(),
        latch: Latch::leak(n),
    }));
    let pool = P::with_threads(2);
    for (i, &d) in ds.iter().enumerate() {
        let deadline = Instant::now() + d;
        drop(pool.schedule(d, move || {
            let now = Instant::now();
            st.late[i].store(signed_ns(now, deadline), Ordering::Relaxed);
            st.latch.hit();
        }));
    }
    let ok = st.latch.wait(p.w4_window + Duration::from_secs(30));
    pool.teardown();
    if !ok {
        eprintln!("{}: W4 timed out", P::NAME);
    }
    let mut v: Vec<i64> = st
        .late
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .filter(|&x| x != i64::MIN)
        .collect();
    v.sort_unstable();
    let early = v.iter().filter(|&&x| x < 0).count();
    if early > 0 {
        eprintln!(
            "{}: W4: {} task(s) started BEFORE their deadline",
            P::NAME,
            early
        );
    }
    // raw samples for the lateness chart
    let dir = results_dir().join("raw");
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut f) =
        std::fs::File::create(dir.join(format!("w4-lateness-{}-r{}.csv", P::NAME, run)))
    {
        let _ = writeln!(f, "lateness_ns");
        for x in &v {
            let _ = writeln!(f, "{x}");
        }
    }
    let us = |x: i64| x as f64 / 1000.0;
    rows.push(row(P::NAME, "W4", "p50", "us", us(percentile(&v, 50.0))));
    rows.push(row(P::NAME, "W4", "p99", "us", us(percentile(&v, 99.0))));
    rows.push(row(P::NAME, "W4", "p99.9", "us", us(percentile(&v, 99.9))));
    rows.push(row(
        P::NAME,
        "W4",
        "max",
        "us",
        us(v.last().copied().unwrap_or(0)),
    ));
}

/// W5: fixed-rate tasks; runs started inside the window vs deadlines inside it,
/// and the worst start − due of any run.
fn w5<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    struct Slot {
        runs: AtomicU64,
        worst: AtomicU64,
    }
    let n = p.n_fixed_rate;
    let period = p.w5_period;
    let slots: &'static [Slot] = Box::leak(
        (0..n)
            .map(|_| Slot {
                runs: AtomicU64::new(0),
                worst: AtomicU64::new(0),
            })
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let pool = P::with_threads(2);
    let t_start = Instant::now();
    let t_end = t_start + p.w5_duration;
    let mut t0s = Vec::with_capacity(n);
    let mut handles = Vec::with_capacity(n);
    for slot in slots.iter() {
        let t0 = Instant::now();
        let mut k: u32 = 0;
        handles.push(pool.fixed_rate(Duration::ZERO, period, move || {
            let now = Instant::now();
            let due = t0 + period * k;
            k += 1;
            if now <= t_end {
                slot.runs.fetch_add(1, Ordering::Relaxed);
                let drift = now.saturating_duration_since(due).as_nanos() as u64;
                if drift > slot.worst.load(Ordering::Relaxed) {
                    slot.worst.store(drift, Ordering::Relaxed);
                }
            }
        }));
        t0s.push(t0);
    }
    let now = Instant::now();
    if t_end > now {
        thread::sleep(t_end - now + Duration::from_millis(20));
    }
    for h in &handles {
        P::cancel(h);
    }
    drop(handles);
    pool.teardown();
    let p_ns = period.as_nanos();
    let expected: u64 = t0s
        .iter()
        .map(|&t0| (t_end.saturating_duration_since(t0).as_nanos() / p_ns) as u64 + 1)
        .sum();
    let runs: u64 = slots.iter().map(|s| s.runs.load(Ordering::Relaxed)).sum();
    let worst = slots
        .iter()
        .map(|s| s.worst.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    rows.push(row(
        P::NAME,
        "W5",
        "runs/expected",
        "ratio",
        runs as f64 / expected as f64,
    ));
    rows.push(row(
        P::NAME,
        "W5",
        "worst drift",
        "us",
        worst as f64 / 1000.0,
    ));
}

/// W7: two producer threads schedule tasks with delays in [0, 10 ms) while
/// the pool runs them; from the start until the last one ran.
fn w7<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    let n = p.n_per_producer;
    let d0 = delays(SEED_PRODUCER, n, Duration::ZERO, p.w7_window);
    let d1 = delays(SEED_PRODUCER + 1, n, Duration::ZERO, p.w7_window);
    let pool = P::with_threads(2);
    let latch = Latch::leak(2 * n);
    let barrier = Barrier::new(3);
    let (ok, el) = thread::scope(|s| {
        for d in [&d0, &d1] {
            let pool = &pool;
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                for &x in d.iter() {
                    drop(pool.schedule(x, move || latch.hit()));
                }
            });
        }
        barrier.wait();
        let t = Instant::now();
        let ok = latch.wait(Duration::from_secs(120));
        (ok, t.elapsed())
    });
    pool.teardown();
    rows.push(row(
        P::NAME,
        "W7",
        "throughput",
        "tasks/s",
        if ok {
            (2 * n) as f64 / el.as_secs_f64()
        } else {
            f64::NAN
        },
    ));
}

pub fn size_label(n: usize) -> String {
    if n >= 1_000_000 && n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// W8: ns per cancel of random pending tasks with n pending (n/10 cancels
/// per queue, at most `w8_min_cancels`, repeated on fresh pools until at least
/// `w8_min_cancels` were timed).
fn w8<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    for &n in &p.w8_sizes {
        let k = (n / 10).clamp(1, p.w8_min_cancels);
        let reps = p.w8_min_cancels.div_ceil(k);
        let ds = delays(SEED_W8 ^ n as u64, n, LONG_MIN, LONG_SPAN);
        let mut rng = Rng::new(SEED_W8 + n as u64);
        let mut idx: Vec<u32> = (0..n as u32).collect();
        let mut total = Duration::ZERO;
        let mut count = 0usize;
        for _ in 0..reps {
            let pool = P::with_threads(2);
            let handles: Vec<_> = ds.iter().map(|&d| pool.schedule(d, noop)).collect();
            for i in 0..k {
                let j = i + rng.below((n - i) as u64) as usize;
                idx.swap(i, j);
            }
            let t = Instant::now();
            for &i in &idx[..k] {
                P::cancel(&handles[i as usize]);
            }
            total += t.elapsed();
            count += k;
            drop(handles);
            pool.teardown();
        }
        rows.push(row(
            P::NAME,
            "W8",
            &format!("cancel@{}", size_label(n)),
            "ns/op",
            total.as_nanos() as f64 / count as f64,
        ));
    }
}

fn run_all<P: BenchPool>(p: &Params, a: &Args, rows: &mut Vec<Row>) {
    let step = |w: &str| eprintln!("[{}] {} ...", P::NAME, w);
    step("warm-up");
    warmup::<P>();
    // Each measurement between two readings of where the vCPUs sit
    // (`line_transfer_ns`), so a run can be told near from far afterwards.
    let probed = |w: &str, rows: &mut Vec<Row>, measure: &dyn Fn(&mut Vec<Row>)| {
        rows.push(row(
            P::NAME,
            w,
            "line xfer before",
            "ns",
            line_transfer_ns(),
        ));
        measure(rows);
        rows.push(row(P::NAME, w, "line xfer after", "ns", line_transfer_ns()));
    };
    if a.wants("W1") || a.wants("W2") {
        step("W1/W2 time");
        w1_w2::<P>(p, rows);
    }
    if a.wants("W2") || a.wants("W6") {
        step("W2/W6 heap");
        memory::<P>(p, rows);
    }
    if a.wants("W3") {
        step("W3");
        probed("W3", rows, &|rows| w3::<P>(p, rows));
    }
    if a.wants("W4") {
        step("W4");
        probed("W4", rows, &|rows| w4::<P>(p, a.run, rows));
    }
    if a.wants("W5") {
        step("W5");
        probed("W5", rows, &|rows| w5::<P>(p, rows));
    }
    if a.wants("W7") {
        step("W7");
        probed("W7", rows, &|rows| w7::<P>(p, rows));
    }
    if a.wants("W8") {
        step("W8");
        w8::<P>(p, rows);
    }
}

// --------------------------------------------------------------------------
// Output
// --------------------------------------------------------------------------

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn print_table(rows: &[Row], imps: &[String]) {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let k = (r.workload.clone(), r.metric.clone(), r.unit.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    print!("{:<4} {:<18} {:<8}", "work", "metric", "unit");
    for i in imps {
        print!(" {:>22}", i);
    }
    println!();
    for (w, m, u) in &keys {
        print!("{:<4} {:<18} {:<8}", w, m, u);
        for i in imps {
            let v = rows
                .iter()
                .find(|r| &r.imp == i && &r.workload == w && &r.metric == m)
                .map(|r| fmt_value(r.value))
                .unwrap_or_else(|| "-".into());
            print!(" {:>22}", v);
        }
        println!();
    }
}

fn write_outputs(rows: &[Row], a: &Args, p: &Params, load: (&str, &str), secs: f64) {
    let csv = a
        .csv
        .clone()
        .unwrap_or_else(|| results_dir().join("workloads.csv"));
    if let Some(d) = csv.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    let mut s = String::from("impl,workload,metric,unit,value\n");
    for r in rows {
        s += &format!(
            "{},{},{},{},{}\n",
            r.imp, r.workload, r.metric, r.unit, r.value
        );
    }
    std::fs::write(&csv, s).expect("write csv");
    let json = csv.with_extension("json");
    let mut j = String::from("{\n");
    j += &format!(
        "  \"harness\": \"workloads.rs\",\n  \"run\": {},\n  \"quick\": {},\n  \"threads\": 2,\n",
        a.run, p.quick
    );
    j += &format!(
        "  \"loadavg_start\": \"{}\",\n  \"loadavg_end\": \"{}\",\n  \"wall_seconds\": {:.1},\n",
        load.0, load.1, secs
    );
    j += "  \"rows\": [\n";
    for (i, r) in rows.iter().enumerate() {
        let v = if r.value.is_finite() {
            format!("{}", r.value)
        } else {
            "null".into()
        };
        j += &format!(
            "    {{\"impl\": \"{}\", \"workload\": \"{}\", \"metric\": \"{}\", \"unit\": \"{}\", \"value\": {}}}{}\n",
            r.imp,
            r.workload,
            r.metric,
            r.unit,
            v,
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    j += "  ]\n}\n";
    std::fs::write(&json, j).expect("write json");
    eprintln!("wrote {} and {}", csv.display(), json.display());
}

fn main() {
    let a = parse_args();
    let p = Params::from_env();
    let load0 = loadavg();
    let t = Instant::now();
    eprintln!(
        "workloads: quick={} impls={:?} run={} loadavg={}",
        p.quick, a.imps, a.run, load0
    );
    let mut rows = Vec::new();
    for imp in &a.imps {
        if imp == Sp::NAME {
            run_all::<Sp>(&p, &a, &mut rows);
        } else {
            run_all::<Stp>(&p, &a, &mut rows);
        }
    }
    let load1 = loadavg();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "\nschedpool workloads (run {}, quick={}, {:.1} s, loadavg {} -> {})",
        a.run, p.quick, secs, load0, load1
    );
    print_table(&rows, &a.imps);
    write_outputs(&rows, &a, &p, (&load0, &load1), secs);
}
