//! The schedpool side of the JDK differential test (`tests/jdk_differential.rs`).
//!
//! [`run_scenario`] interprets one `tests/jdk/scenarios/*.scn` file on
//! [`schedpool::ScheduledThreadPool`] and returns the same trace lines that
//! `tests/jdk/ScenarioRunner.java` prints for the JDK's
//! `ScheduledThreadPoolExecutor`. The scenario format and the trace format
//! are documented in the header comment of `ScenarioRunner.java` and in
//! `tests/jdk/README.md`; keep the two runners in step.
//!
//! Normalisations (see `docs/jdk-differential.md`):
//! - a negative delay becomes `Duration::ZERO` (Java clamps negatives to 0);
//!   `max` is `Duration::MAX` (Java: `Long.MAX_VALUE` ns after saturation);
//! - tasks returned by `shutdown-now` print `state=returned` in the final
//!   summary: running or dropping a `PendingTask` completes its handle while
//!   Java leaves the future pending (docs/java-differences.md). Their state is
//!   compared at the moment `shutdown_now` returns instead (`all-pending`).

use schedpool::{Rejected, ScheduledHandle, ScheduledThreadPool, TaskError};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long any `await-*` directive waits before printing `TIMEOUT`.
const AWAIT: Duration = Duration::from_secs(10);

/// The prefix of every panic message a scenario task raises on purpose.
pub const PANIC_PREFIX: &str = "scenario panic";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a scenario task panicked while holding it,
    // which the bodies never do; keep going either way.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn open(&self) {
        *lock(&self.open) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut g = lock(&self.open);
        while !*g {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[derive(Default)]
struct Runs {
    starts: Vec<Instant>,
    ends: Vec<Instant>,
    running: bool,
    overlapped: bool,
}

struct Task {
    id: String,
    /// `Instant::now()` just before and just after the submission call, and
    /// the requested delay (for `ontime`).
    submitted: Mutex<(Instant, Instant)>,
    delay: Duration,
    opts: HashMap<String, String>,
    runs: Mutex<Runs>,
    handle: Mutex<Option<ScheduledHandle<()>>>,
    self_cancel: Mutex<Option<bool>>,
    returned: AtomicBool,
    /// The prefix of the `many` directive that created this task.
    bulk: Option<String>,
    /// For a task submitted from inside another (`spawn@k=ID`): "ok" or
    /// "rejected".
    spawned: Mutex<Option<&'static str>>,
}

impl Task {
    fn opt(&self, key: &str, k: usize) -> Option<&str> {
        self.opts
            .get(&format!("{key}@{k}"))
            .or_else(|| self.opts.get(key))
            .map(String::as_str)
    }

    fn starts(&self) -> usize {
        lock(&self.runs).starts.len()
    }

    fn ends(&self) -> usize {
        lock(&self.runs).ends.len()
    }
}

struct Shared {
    /// Every task, in submission order (spawned ones included).
    tasks: Mutex<Vec<Arc<Task>>>,
    order: Mutex<Vec<String>>,
    pool: Mutex<Option<ScheduledThreadPool>>,
    gates: HashMap<String, Arc<Gate>>,
}

thread_local! {
    /// Set by `shutdown-now` on the scenario thread while it runs the returned
    /// `PendingTask`s: a body that sees it only records its id (to identify
    /// the returned tasks) and does nothing else.
    static HARVEST: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// The body every scenario task runs; mirrors `Task.run()` in the Java runner.
fn body(task: &Task, shared: &Arc<Shared>) {
    let harvested = HARVEST.with(|h| match h.borrow_mut().as_mut() {
        Some(v) => {
            v.push(task.id.clone());
            true
        }
        None => false,
    });
    if harvested {
        return;
    }
    let k = {
        let mut r = lock(&task.runs);
        if r.running {
            r.overlapped = true;
        }
        r.running = true;
        r.starts.push(Instant::now());
        r.starts.len()
    };
    lock(&shared.order).push(task.id.clone());
    if task.opt("cancel", k).is_some() {
        let deadline = Instant::now() + AWAIT;
        let res = loop {
            if let Some(h) = lock(&task.handle).as_ref() {
                break h.cancel();
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        *lock(&task.self_cancel) = Some(res);
    }
    if task.opt("shutdown", k).is_some() {
        let pool = lock(&shared.pool).clone();
        if let Some(p) = pool {
            p.shutdown();
        }
    }
    if let Some(id) = task.opts.get(&format!("spawn@{k}")) {
        let pool = lock(&shared.pool).clone();
        if let Some(p) = pool {
            let (r, t) = submit_on(&p, shared, &["once", id, "0"], None);
            *lock(&t.spawned) = Some(r);
        }
    }
    if let Some(g) = task.opt("block", k) {
        shared.gates[g].wait();
    }
    if let Some(ms) = task.opt("sleep", k) {
        std::thread::sleep(Duration::from_millis(ms.parse().expect("sleep=MS")));
    }
    {
        let mut r = lock(&task.runs);
        r.ends.push(Instant::now());
        r.running = false;
    }
    if task.opt("panic", k).is_some() {
        panic!("{PANIC_PREFIX} in {} run {k}", task.id);
    }
}

/// `max` is `Duration::MAX`; negative milliseconds become zero (Java clamps
/// negative delays to 0, and a Rust `Duration` cannot be negative).
fn parse_delay(s: &str) -> Duration {
    if s == "max" {
        return Duration::MAX;
    }
    let ms: i64 = s.parse().unwrap_or_else(|_| panic!("bad delay {s:?}"));
    if ms <= 0 {
        Duration::ZERO
    } else {
        Duration::from_millis(ms as u64)
    }
}

/// The bucket the `delay` directive prints (as `bucket` in the Java runner).
fn bucket(d: Duration) -> &'static str {
    const HOUR: u64 = 3600;
    if d.is_zero() {
        "0"
    } else if d <= Duration::from_secs(1) {
        "<=1s"
    } else if d <= Duration::from_secs(HOUR) {
        "<=1h"
    } else if d <= Duration::from_secs(366 * 24 * HOUR) {
        "<=1y"
    } else {
        ">1y"
    }
}

fn words(raw: &str) -> Vec<&str> {
    raw.split('#')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect()
}

/// Submits one task; `w` is the directive's words (kind, id, delays,
/// options). Returns "ok" or "rejected", and the task.
fn submit_on(
    pool: &ScheduledThreadPool,
    shared: &Arc<Shared>,
    w: &[&str],
    bulk: Option<String>,
) -> (&'static str, Arc<Task>) {
    let d = w[0].trim_start_matches('~');
    let positional = match d {
        "once" => 3,
        "rate" | "fixed" => 4,
        _ => 2,
    };
    let mut opts = HashMap::new();
    for o in w.iter().skip(positional) {
        match o.split_once('=') {
            Some((k, v)) => opts.insert(k.to_string(), v.to_string()),
            None => opts.insert(o.to_string(), String::new()),
        };
    }
    let id = w[1].to_string();
    let delay = match d {
        "once" | "rate" | "fixed" => parse_delay(w[2]),
        _ => Duration::ZERO,
    };
    let t = Arc::new(Task {
        id: id.clone(),
        submitted: Mutex::new((Instant::now(), Instant::now())),
        delay,
        opts,
        runs: Mutex::new(Runs::default()),
        handle: Mutex::new(None),
        self_cancel: Mutex::new(None),
        returned: AtomicBool::new(false),
        bulk,
        spawned: Mutex::new(None),
    });
    {
        let mut tasks = lock(&shared.tasks);
        assert!(tasks.iter().all(|t| t.id != id), "duplicate task {id}");
        tasks.push(t.clone());
    }
    let (t2, sh) = (t.clone(), shared.clone());
    let before = Instant::now();
    let res: Result<Option<ScheduledHandle<()>>, Rejected> = match d {
        "once" => pool
            .schedule(move || body(&t2, &sh), parse_delay(w[2]))
            .map(Some),
        "submit" => pool.submit(move || body(&t2, &sh)).map(Some),
        "execute" => pool.execute(move || body(&t2, &sh)).map(|()| None),
        "rate" => pool
            .schedule_at_fixed_rate(move || body(&t2, &sh), parse_delay(w[2]), parse_delay(w[3]))
            .map(Some),
        _ => pool
            .schedule_with_fixed_delay(move || body(&t2, &sh), parse_delay(w[2]), parse_delay(w[3]))
            .map(Some),
    };
    *lock(&t.submitted) = (before, Instant::now());
    let word = match res {
        Ok(h) => {
            *lock(&t.handle) = h;
            "ok"
        }
        Err(_) => "rejected",
    };
    (word, t)
}

struct Scenario {
    out: Vec<String>,
    core: usize,
    continue_periodic: bool,
    execute_delayed: bool,
    shared: Arc<Shared>,
}

impl Scenario {
    fn pool(&self) -> ScheduledThreadPool {
        let mut slot = lock(&self.shared.pool);
        if slot.is_none() {
            let pool = ScheduledThreadPool::builder()
                .core_threads(self.core)
                .thread_name("scn")
                .remove_on_cancel(true)
                .continue_periodic_after_shutdown(self.continue_periodic)
                .execute_delayed_after_shutdown(self.execute_delayed)
                .build()
                .expect("building the pool");
            *slot = Some(pool);
        }
        slot.as_ref().unwrap().clone()
    }

    /// The task named `id`; waits (up to [`AWAIT`]) for a spawned one to
    /// appear.
    fn task(&self, id: &str) -> Arc<Task> {
        let find = || {
            lock(&self.shared.tasks)
                .iter()
                .find(|t| t.id == id)
                .cloned()
        };
        Self::wait_for(|| find().is_some());
        find().unwrap_or_else(|| panic!("unknown task {id}"))
    }

    fn emit(&mut self, ln: usize, tilde: bool, s: String) {
        self.out
            .push(format!("L{ln} {}{s}", if tilde { "~" } else { "" }));
    }

    fn wait_for(cond: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + AWAIT;
        while !cond() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    fn final_state(t: &Task) -> String {
        if t.returned.load(Ordering::SeqCst) {
            return "returned".into();
        }
        let mut slot = lock(&t.handle);
        let Some(h) = slot.take() else {
            return "no-handle".into();
        };
        if !h.is_done() {
            *slot = Some(h);
            return "pending".into();
        }
        if h.is_cancelled() {
            return "cancelled".into();
        }
        match h.join() {
            Ok(()) => "ok".into(),
            Err(TaskError::Cancelled) => "cancelled".into(),
            Err(TaskError::Panicked(..)) => "failed".into(),
            #[allow(unreachable_patterns)]
            Err(e) => format!("error({e})"),
        }
    }

    /// Submits one task; `w` is the directive's words (kind, id, delays,
    /// options). Returns "ok" or "rejected".
    fn submit_task(&mut self, w: &[&str], bulk: Option<String>) -> &'static str {
        let pool = self.pool();
        submit_on(&pool, &self.shared, w, bulk).0
    }

    fn step(&mut self, ln: usize, w: &[&str]) {
        let tilde = w[0].starts_with('~');
        let d = w[0].trim_start_matches('~');
        let arg = |i: usize| -> &str {
            w.get(i)
                .copied()
                .unwrap_or_else(|| panic!("line {ln}: {d} needs argument {i}"))
        };
        match d {
            "pool" => self.core = arg(1).parse().expect("pool N"),
            "policy" => {
                let b: bool = arg(2).parse().expect("policy true|false");
                match arg(1) {
                    "continue_periodic" => self.continue_periodic = b,
                    "execute_delayed" => self.execute_delayed = b,
                    p => panic!("unknown policy {p}"),
                }
            }
            "expect-diff" | "gate" => {}
            "once" | "submit" | "execute" | "rate" | "fixed" => {
                let word = self.submit_task(w, None);
                self.emit(ln, tilde, format!("{d} {} = {word}", arg(1)));
            }
            "many" => {
                let prefix = arg(1).to_string();
                let n: usize = arg(2).parse().expect("N");
                let mut rejected = 0;
                for i in 1..=n {
                    let id = format!("{prefix}{i:04}");
                    let tw: Vec<&str> = match i % 3 {
                        1 => vec!["once", &id, "0"],
                        2 => vec!["execute", &id],
                        _ => vec!["submit", &id],
                    };
                    if self.submit_task(&tw, Some(prefix.clone())) != "ok" {
                        rejected += 1;
                    }
                }
                let r = if rejected == 0 {
                    "ok".to_string()
                } else {
                    format!("rejected={rejected}")
                };
                self.emit(ln, tilde, format!("many {prefix} {n} = {r}"));
            }
            "ordered" => {
                let prefix = arg(1);
                let order = lock(&self.shared.order).clone();
                let tasks = lock(&self.shared.tasks).clone();
                let seen: Vec<String> = order
                    .into_iter()
                    .filter(|id| {
                        tasks
                            .iter()
                            .any(|t| &t.id == id && t.bulk.as_deref() == Some(prefix))
                    })
                    .collect();
                let mut sorted = seen.clone();
                sorted.sort();
                let ok = seen == sorted;
                self.emit(
                    ln,
                    tilde,
                    format!("ordered {prefix} = {ok} runs={}", seen.len()),
                );
            }
            "open" => self.shared.gates[arg(1)].open(),
            "sleep" => std::thread::sleep(Duration::from_millis(arg(1).parse().expect("ms"))),
            "await-start" | "await-end" => {
                let t = self.task(arg(1));
                let n: usize = arg(2).parse().expect("N");
                let start = d == "await-start";
                let count = |t: &Task| if start { t.starts() } else { t.ends() };
                if !Self::wait_for(|| count(&t) >= n) {
                    let what = if start { "runs" } else { "ends" };
                    let got = count(&t);
                    self.emit(
                        ln,
                        tilde,
                        format!("TIMEOUT {d} {} {n} ({what}={got})", t.id),
                    );
                }
            }
            "await-done" => {
                let t = self.task(arg(1));
                let deadline = Instant::now() + AWAIT;
                // The handle's lock is held only to read its state, never
                // across a wait: a self-cancelling body takes the same lock
                // to cancel, and a wait under it starved that body (a
                // 5 ms wait, a yield, the lock again; on a busy machine the
                // body did not get in for 10 s).
                let done = loop {
                    match lock(&t.handle).as_ref().map(|h| h.is_done()) {
                        None => break false,
                        Some(true) => break true,
                        Some(false) => {}
                    }
                    if Instant::now() > deadline {
                        break false;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                };
                if !done {
                    self.emit(ln, tilde, format!("TIMEOUT await-done {}", t.id));
                }
            }
            "cancel" => {
                let t = self.task(arg(1));
                let r = lock(&t.handle).as_ref().is_some_and(|h| h.cancel());
                self.emit(ln, tilde, format!("cancel {} = {r}", t.id));
            }
            "state" => {
                let t = self.task(arg(1));
                let s = match lock(&t.handle).as_ref() {
                    None => "no-handle",
                    Some(h) if h.is_cancelled() => "cancelled",
                    Some(h) if h.is_done() => "done",
                    Some(_) => "pending",
                };
                self.emit(ln, tilde, format!("state {} = {s}", t.id));
            }
            "delay" => {
                let t = self.task(arg(1));
                let b = match lock(&t.handle).as_ref() {
                    None => "no-handle",
                    Some(h) => bucket(h.delay()),
                };
                self.emit(ln, tilde, format!("delay {} = {b}", t.id));
            }
            "runs" => {
                let t = self.task(arg(1));
                let r = t.starts();
                if w.len() >= 4 {
                    let lo: usize = arg(2).parse().expect("MIN");
                    let hi: usize = arg(3).parse().expect("MAX");
                    let ok = lo <= r && r <= hi;
                    self.emit(ln, tilde, format!("runs {} in [{lo},{hi}] = {ok}", t.id));
                } else {
                    self.emit(ln, tilde, format!("runs {} = {r}", t.id));
                }
            }
            "order" => {
                let sel: Vec<String> = lock(&self.shared.order)
                    .iter()
                    .filter(|id| w.len() == 1 || w[1..].contains(&id.as_str()))
                    .cloned()
                    .collect();
                self.emit(ln, tilde, format!("order = {}", sel.join(" ")));
            }
            "gaps" => {
                let t = self.task(arg(1));
                let ms: u64 = arg(2).parse().expect("MS");
                let ok = {
                    let r = lock(&t.runs);
                    let n = r.ends.len().min(r.starts.len().saturating_sub(1));
                    n >= 1
                        && (0..n).all(|i| {
                            r.starts[i + 1].saturating_duration_since(r.ends[i])
                                >= Duration::from_millis(ms)
                        })
                };
                self.emit(ln, tilde, format!("gaps {} >= {ms}ms = {ok}", t.id));
            }
            "burst" => {
                let t = self.task(arg(1));
                let a: usize = arg(2).parse().expect("A");
                let b: usize = arg(3).parse().expect("B");
                let ms: u64 = arg(4).parse().expect("MS");
                let r = {
                    let r = lock(&t.runs);
                    if r.ends.len() < a || r.starts.len() < b {
                        "missing-runs".to_string()
                    } else {
                        let gap = r.starts[b - 1].saturating_duration_since(r.ends[a - 1]);
                        (gap <= Duration::from_millis(ms)).to_string()
                    }
                };
                self.emit(
                    ln,
                    tilde,
                    format!("burst {} end {a} -> start {b} <= {ms}ms = {r}", t.id),
                );
            }
            "ontime" => {
                let t = self.task(arg(1));
                let ms: u64 = arg(2).parse().expect("MS");
                let (before, after) = *lock(&t.submitted);
                let r = match lock(&t.runs).starts.first() {
                    None => "not-run".to_string(),
                    Some(&st) => {
                        let not_early = st.saturating_duration_since(before)
                            + Duration::from_millis(1)
                            >= t.delay;
                        let late = st.saturating_duration_since(after);
                        let not_late = late <= t.delay.saturating_add(Duration::from_millis(ms));
                        (not_early && not_late).to_string()
                    }
                };
                self.emit(ln, tilde, format!("ontime {} within {ms}ms = {r}", t.id));
            }
            "overlap" => {
                let t = self.task(arg(1));
                let o = lock(&t.runs).overlapped;
                self.emit(ln, tilde, format!("overlap {} = {o}", t.id));
            }
            "shutdown" => {
                self.pool().shutdown();
                self.emit(ln, tilde, "shutdown".into());
            }
            "shutdown-now" => {
                let pool = self.pool();
                let pending = pool.shutdown_now();
                let n = pending.len();
                // handle states at the moment shutdown_now returned
                let tasks = lock(&self.shared.tasks).clone();
                let done_before: HashMap<String, bool> = tasks
                    .iter()
                    .filter_map(|t| {
                        lock(&t.handle)
                            .as_ref()
                            .map(|h| (t.id.clone(), h.is_done()))
                    })
                    .collect();
                // identify the returned tasks: run each with HARVEST set, so
                // the body records its id and does nothing else
                HARVEST.with(|h| *h.borrow_mut() = Some(Vec::new()));
                for p in pending {
                    p.run();
                }
                let mut ids = HARVEST.with(|h| h.borrow_mut().take()).unwrap_or_default();
                while ids.len() < n {
                    ids.push("?".into());
                }
                ids.sort();
                let mut all_pending = true;
                for id in &ids {
                    if done_before.get(id).copied().unwrap_or(false) {
                        all_pending = false;
                    }
                    if let Some(t) = tasks.iter().find(|t| &t.id == id) {
                        t.returned.store(true, Ordering::SeqCst);
                    }
                }
                self.emit(
                    ln,
                    tilde,
                    format!(
                        "shutdown-now = [{}] all-pending={all_pending}",
                        ids.join(", ")
                    ),
                );
            }
            "await-termination" => {
                let ms: u64 = arg(1).parse().expect("MS");
                let r = self.pool().await_termination(Duration::from_millis(ms));
                self.emit(ln, tilde, format!("await-termination = {r}"));
            }
            "pool-state" => {
                let p = self.pool();
                let s = format!(
                    "shutdown={} terminated={}",
                    p.is_shutdown(),
                    p.is_terminated()
                );
                self.emit(ln, tilde, s);
            }
            "queue-len" => {
                let n = self.pool().queue_len();
                self.emit(ln, tilde, format!("queue-len = {n}"));
            }
            "active" => {
                let n = self.pool().active_count();
                self.emit(ln, tilde, format!("active = {n}"));
            }
            "completed" => {
                let n = self.pool().completed_task_count();
                self.emit(ln, tilde, format!("completed = {n}"));
            }
            "task-count" => {
                let n = self.pool().task_count();
                self.emit(ln, tilde, format!("task-count = {n}"));
            }
            other => panic!("line {ln}: unknown directive {other}"),
        }
    }
}

/// Runs one scenario (the text of a `.scn` file) on schedpool and returns
/// its trace lines, without the `===` framing.
pub fn run_scenario(src: &str) -> Vec<String> {
    let lines: Vec<&str> = src.lines().collect();
    let mut gates = HashMap::new();
    for raw in &lines {
        let w = words(raw);
        if w.len() >= 2 && (w[0] == "gate" || w[0] == "open") {
            gates
                .entry(w[1].to_string())
                .or_insert_with(Arc::<Gate>::default);
        }
        for word in &w {
            if let Some(g) = word.strip_prefix("block").and_then(|r| r.split_once('=')) {
                gates
                    .entry(g.1.to_string())
                    .or_insert_with(Arc::<Gate>::default);
            }
        }
    }
    let shared = Arc::new(Shared {
        tasks: Mutex::new(Vec::new()),
        order: Mutex::new(Vec::new()),
        pool: Mutex::new(None),
        gates,
    });
    let mut sc = Scenario {
        out: Vec::new(),
        core: 1,
        continue_periodic: false,
        execute_delayed: true,
        shared: shared.clone(),
    };
    // Open every gate and stop the pool however the scenario ends (even if a
    // directive panics), so no worker stays blocked.
    struct Cleanup(Arc<Shared>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            for g in self.0.gates.values() {
                g.open();
            }
            let pool = lock(&self.0.pool).take();
            if let Some(p) = pool {
                drop(p.shutdown_now());
                p.await_termination(Duration::from_secs(5));
            }
        }
    }
    let _cleanup = Cleanup(shared.clone());
    for (i, raw) in lines.iter().enumerate() {
        let w = words(raw);
        if !w.is_empty() {
            sc.step(i + 1, &w);
        }
    }
    const KINDS: [&str; 6] = [
        "ok",
        "failed",
        "cancelled",
        "pending",
        "no-handle",
        "returned",
    ];
    // declared tasks in order, then spawned ones sorted by id (their
    // submission order relative to the scenario thread is not deterministic)
    let mut all = lock(&shared.tasks).clone();
    let is_spawned = |t: &Arc<Task>| lock(&t.spawned).is_some();
    let mut spawned: Vec<Arc<Task>> = all.iter().filter(|t| is_spawned(t)).cloned().collect();
    spawned.sort_by(|a, b| a.id.cmp(&b.id));
    all.retain(|t| !is_spawned(t));
    all.extend(spawned);
    let mut bulks: Vec<(String, usize, usize, [usize; 6])> = Vec::new();
    for t in all.iter().filter(|t| t.bulk.is_some()) {
        let prefix = t.bulk.clone().unwrap();
        let i = match bulks.iter().position(|b| b.0 == prefix) {
            Some(i) => i,
            None => {
                bulks.push((prefix, 0, 0, [0; 6]));
                bulks.len() - 1
            }
        };
        let state = Scenario::final_state(t);
        let b = &mut bulks[i];
        b.1 += 1;
        b.2 += t.starts();
        if let Some(k) = KINDS.iter().position(|k| *k == state) {
            b.3[k] += 1;
        }
    }
    let mut finals: Vec<String> = all
        .iter()
        .filter(|t| t.bulk.is_none())
        .map(|t| {
            let runs = if t.opts.get("runs").map(String::as_str) == Some("any") {
                "*".to_string()
            } else {
                t.starts().to_string()
            };
            let mut s = format!(
                "L0 final {} state={} runs={runs}",
                t.id,
                Scenario::final_state(t)
            );
            if let Some(b) = *lock(&t.self_cancel) {
                s.push_str(&format!(" selfcancel={b}"));
            }
            if let Some(r) = *lock(&t.spawned) {
                s.push_str(&format!(" spawned={r}"));
            }
            s
        })
        .collect();
    for (prefix, n, runs, counts) in bulks {
        let mut line = format!("L0 final {prefix}* tasks={n} runs={runs}");
        for (k, c) in KINDS.iter().zip(counts) {
            line.push_str(&format!(" {k}={c}"));
        }
        finals.push(line);
    }
    sc.out.extend(finals);
    sc.out
}
