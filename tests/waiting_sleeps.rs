//! A worker waiting for a task milliseconds away sleeps: it does not spin
//! the wait away on a CPU. (A successor promoted to leader where it slept
//! used to spin from a loose bound on the next task all the way to it: a
//! task 3 ms away cost 3 ms of CPU, and on a 2-core host the spinner kept
//! the worker running the previous task off its CPU, so tasks ran one
//! period late and out of order.)

use std::sync::mpsc;
use std::time::{Duration, Instant};

use schedpool::ScheduledThreadPool;

/// This process's CPU time (user and system, all threads), from
/// `/proc/self/stat` (clock ticks of 10 ms).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')').expect("a command name") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Tasks 2 ms apart, each scheduled a few milliseconds ahead (so they wait
/// in the near-future wheel, whose bound on the second task is loose), on
/// two workers: the pool's CPU time stays a small share of the time it
/// waited. A spinning wait takes about a whole core. (Only an idle host
/// shows the regression: on a loaded one the workers stop spinning
/// anyway, and the test passes either way.)
#[test]
fn waiting_for_tasks_milliseconds_apart_takes_little_cpu() {
    let pool = ScheduledThreadPool::new(2);
    let (tx, rx) = mpsc::channel();
    // Warm up: both workers started and asleep.
    pool.execute(|| ()).unwrap();
    pool.execute(|| ()).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let wall = Instant::now();
    let cpu = process_cpu();
    let mut ran = 0;
    for _round in 0..50 {
        let start = Instant::now();
        for i in 0..8u64 {
            let tx = tx.clone();
            let due = start + Duration::from_millis(2 + 2 * i);
            drop(
                pool.schedule(
                    move || tx.send(Instant::now() >= due).unwrap(),
                    due.saturating_duration_since(Instant::now()),
                )
                .unwrap(),
            );
        }
        for _ in 0..8 {
            let on_time = rx.recv_timeout(Duration::from_secs(20)).expect("lost");
            assert!(on_time, "a task ran early");
            ran += 1;
        }
    }
    let (wall, cpu) = (wall.elapsed(), process_cpu() - cpu);
    eprintln!("{ran} tasks in {wall:?}: CPU {cpu:?}");
    assert!(
        cpu < wall / 4,
        "the workers spun: {cpu:?} of CPU in {wall:?} of waiting for tasks 2 ms apart"
    );
    assert!(pool.shutdown().await_termination(Duration::from_secs(20)));
}
