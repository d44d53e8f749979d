//! An internet café: each customer's paid time runs out, in order.
//!
//! Customers walk in at random, take a free PC and pay for a random number
//! of minutes. The pool schedules "session over" for each one; the PC goes
//! back on the free list when it runs. Some customers log off early, which
//! cancels their session timer. Time is scaled: 1 minute is 10 ms.
//!
//! The pool has one worker, so the log it writes is in exactly the order the
//! sessions end: by deadline (ties in arrival order), and never early.
//!
//! Run: `cargo run --release --example internet_cafe`

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{RunInfo, ScheduledHandle, ScheduledThreadPool};

const MINUTE: Duration = Duration::from_millis(10);
const PCS: u32 = 12;
const CUSTOMERS: usize = 60;
const NAMES: [&str; 12] = [
    "Ana", "Bo", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena",
];

/// One line of the cashier's log.
struct SessionEnd {
    customer: usize,
    pc: u32,
    paid_until: Instant,
    due: Instant,
    ended: Instant,
}

/// xorshift64*: a tiny deterministic random source for the simulation.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn minutes(d: Duration) -> f64 {
    d.as_secs_f64() / MINUTE.as_secs_f64()
}

fn main() {
    let opened = Instant::now();
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .thread_name("cafe-cashier")
        .build()
        .expect("pool");
    let free_pcs = Arc::new(Mutex::new((1..=PCS).collect::<BTreeSet<u32>>()));
    let log: Arc<Mutex<Vec<SessionEnd>>> = Arc::new(Mutex::new(Vec::new()));
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut sessions: Vec<(usize, u32, ScheduledHandle<()>)> = Vec::new();
    let (mut seated, mut turned_away, mut logged_off) = (0, 0, 0);

    println!("  time     customer      event");
    for customer in 0..CUSTOMERS {
        // The next customer walks in 0-4 minutes after the previous one.
        thread::sleep(MINUTE * rng.range(0, 4) as u32);
        let name = NAMES[customer % NAMES.len()];
        let now_min = minutes(opened.elapsed());

        // Some customers already seated log off early: cancel their timer.
        if rng.range(1, 10) == 1 && !sessions.is_empty() {
            let i = rng.next() as usize % sessions.len();
            let (who, pc, handle) = sessions.swap_remove(i);
            // True only if the timer had not run: then this PC is ours to free.
            if handle.cancel() {
                free_pcs.lock().unwrap().insert(pc);
                logged_off += 1;
                println!(
                    "  {now_min:>5.1}m   {:<6} #{who:<3}  logs off early from PC-{pc:02} (timer cancelled)",
                    NAMES[who % NAMES.len()]
                );
            }
        }

        let Some(pc) = free_pcs.lock().unwrap().pop_first() else {
            turned_away += 1;
            println!("  {now_min:>5.1}m   {name:<6} #{customer:<3}  café full, comes back later");
            continue;
        };
        let paid = rng.range(5, 60);
        let paid_until = Instant::now() + MINUTE * paid as u32;
        let (free, log) = (free_pcs.clone(), log.clone());
        let handle = pool
            .schedule(
                move || {
                    let ended = Instant::now();
                    let due = RunInfo::current().expect("inside a pool task").due();
                    free.lock().unwrap().insert(pc);
                    log.lock().unwrap().push(SessionEnd {
                        customer,
                        pc,
                        paid_until,
                        due,
                        ended,
                    });
                    println!(
                        "  {:>5.1}m   {name:<6} #{customer:<3}  PC-{pc:02} session over (paid {paid} min)",
                        minutes(ended - opened)
                    );
                },
                MINUTE * paid as u32,
            )
            .expect("the café is open");
        println!(
            "  {now_min:>5.1}m   {name:<6} #{customer:<3}  sits at PC-{pc:02}, pays {paid} min"
        );
        sessions.push((customer, pc, handle));
        seated += 1;
    }

    // Closing time: no new customers; the seated ones finish their time.
    let expected = seated - logged_off;
    let terminated = pool.shutdown().await_termination(Duration::from_secs(10));
    let log = log.lock().unwrap();

    let lateness: Vec<Duration> = log.iter().map(|e| e.ended - e.paid_until).collect();
    let worst = lateness.iter().max().copied().unwrap_or_default();
    println!();
    println!("  customers        {CUSTOMERS:>5}");
    println!("  sessions ended   {:>5}", log.len());
    println!("  logged off early {logged_off:>5}  (timer cancelled, never ran)");
    println!("  turned away      {turned_away:>5}  (all {PCS} PCs busy)");
    println!("  worst lateness   {:>7.2} ms", worst.as_secs_f64() * 1e3);
    println!("  free PCs at close {:>4}", free_pcs.lock().unwrap().len());
    println!(
        "  wall time        {:>7.2} s",
        opened.elapsed().as_secs_f64()
    );

    assert!(terminated, "every session ended and the pool stopped");
    assert_eq!(
        log.len(),
        expected,
        "every session not cancelled ended once"
    );
    assert_eq!(seated + turned_away, CUSTOMERS);
    for e in log.iter() {
        assert!(
            e.ended >= e.paid_until,
            "customer #{} cut off early",
            e.customer
        );
        assert!(
            e.due >= e.paid_until,
            "the pool's deadline is the paid time"
        );
    }
    assert!(
        log.windows(2).all(|w| w[0].due <= w[1].due),
        "sessions ended in deadline order"
    );
    let pcs: BTreeSet<u32> = log.iter().map(|e| e.pc).collect();
    assert!(pcs.iter().all(|pc| (1..=PCS).contains(pc)));
    assert_eq!(
        free_pcs.lock().unwrap().len() as u32,
        PCS,
        "every PC is free at close"
    );
    println!("ok");
}
