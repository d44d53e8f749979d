//! Items of the acceptance checklist of `java-behaviour.md` not covered by
//! the other modules.

use super::*;

/// FIFO: 1,000 tasks queued on a busy 1-thread pool by execute,
/// schedule(.., 0) and submit run in submission order.
#[test]
fn chk_fifo_1000() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let order = Arc::new(Mutex::new(Vec::with_capacity(1000)));
    for i in 0..1000usize {
        let o = order.clone();
        let f = move || o.lock().unwrap().push(i);
        match i % 3 {
            0 => p.execute(f).unwrap(),
            1 => drop(p.schedule(f, Duration::ZERO).unwrap()),
            _ => drop(p.submit(f).unwrap()),
        }
    }
    gate.open();
    assert!(p.wait_idle(LONG));
    assert_eq!(*order.lock().unwrap(), (0..1000).collect::<Vec<_>>());
}

/// Fixed-rate catch-up: period 10 ms, the first run takes 55 ms; the 5 missed
/// runs then start back-to-back, and the schedule holds t0 + k·10 ms after.
#[test]
fn chk_fixed_rate_slow_first_run() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let t0 = clock.now();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (c, s) = (clock.clone(), starts.clone());
    let h = p
        .schedule_at_fixed_rate(
            move || {
                let mut s = s.lock().unwrap();
                s.push((c.now() - t0).as_millis() as u64);
                if s.len() == 1 {
                    c.advance(ms(55));
                }
            },
            Duration::ZERO,
            ms(10),
        )
        .unwrap();
    assert!(p.wait_idle(LONG));
    assert_eq!(*starts.lock().unwrap(), vec![0, 55, 55, 55, 55, 55]);
    clock.advance(ms(5));
    assert!(p.wait_idle(LONG));
    clock.advance(ms(10));
    assert!(p.wait_idle(LONG));
    assert_eq!(*starts.lock().unwrap(), vec![0, 55, 55, 55, 55, 55, 60, 70]);
    assert!(h.cancel());
}

/// Periodic panic: the 3rd run panics; there is no 4th; the handle carries
/// the panic message; the worker is still alive.
#[test]
fn chk_periodic_panic_third_run() {
    quiet_expected_panics();
    let clock = ManualClock::new();
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .thread_name("chk-panic")
            .build(),
    );
    let runs = counter();
    let r = runs.clone();
    let h = p
        .schedule_at_fixed_rate(
            move || {
                if r.fetch_add(1, SeqCst) + 1 == 3 {
                    panic!("{EXPECTED}: third run");
                }
            },
            Duration::ZERO,
            Duration::from_secs(1),
        )
        .unwrap();
    for _ in 0..2 {
        assert!(p.wait_idle(LONG));
        clock.advance(Duration::from_secs(1));
    }
    assert_panicked(h, "third run");
    clock.advance(Duration::from_secs(5));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 3);
    let name = p
        .submit(|| thread::current().name().map(str::to_owned))
        .unwrap();
    assert_eq!(join(name).unwrap().as_deref(), Some("chk-panic-0"));
    assert_eq!(p.queue_len(), 0);
}

/// Core 0: one thread is created for the work, and the pool size returns to
/// 0 once the queue has drained (Java's 10 ms keep-alive).
#[test]
fn chk_core_zero_threads_exit_when_idle() {
    let p = pool(0);
    assert_eq!(p.pool_size(), 0);
    assert_eq!(join(p.submit(|| 1).unwrap()).unwrap(), 1);
    assert!(p.pool_size() <= 1);
    eventually("pool_size == 0", || p.pool_size() == 0);
    assert_eq!(join(p.schedule(|| 2, DELAY).unwrap()).unwrap(), 2);
    eventually("pool_size == 0 again", || p.pool_size() == 0);
}
