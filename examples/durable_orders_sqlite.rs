//! Orders and their 30-minute timeouts (here: 1–2 s) in one SQLite file,
//! with no server: two shop processes share the file, each putting an
//! order row and its timeout in one transaction, and one is kill -9'd
//! mid-way. At the end every unpaid order is closed exactly once and none
//! early, paid orders stay paid, and the rolled-back checkouts never fire.
//!
//! `cargo run --release --features sqlite --example durable_orders_sqlite`
//!
//! It then leaves a shop in mid-day at `/tmp/orders.db` (the system's temp
//! dir) for the operator's tools to look at: order timeouts pending, card
//! charges dead-lettered, and a paused kind whose due items wait:
//!
//! `cargo run -p schedpool-cli --features sqlite -- console --queue orders sqlite:/tmp/orders.db`

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, TransactionBehavior};
use schedpool::durable::{DurableError, DurablePool, Operator, SqliteBackend};

const ORDERS_PER_PROCESS: i64 = 300;

/// The application's own connection to the file (it waits for other
/// writers up to 5 s, as the backend's do).
fn db(path: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(Duration::from_secs(5))?;
    Ok(c)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One shop process: checkouts (every 7th rolled back, every 3rd paid
/// later), and a pool that closes unpaid orders when their timeout fires.
fn shop(path: &Path, who: i64) -> Result<(), DurableError> {
    let bad = |e: rusqlite::Error| DurableError::Refused(e.to_string().into());
    let file = path.to_path_buf();
    let pool = DurablePool::builder(SqliteBackend::open(path, "orders")?)
        .threads(2)
        .lease(Duration::from_secs(2))
        .max_block(Duration::from_millis(500))
        .handler("close-order", move |order: &u64, job| {
            // Conditional: closes only an order still unpaid, and records
            // the closing in the same transaction, so a rerun does nothing.
            let mut db = db(&file)?;
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let closed = tx.execute(
                "UPDATE orders SET state = 'closed', closed_ms = ?2 WHERE id = ?1 AND state = 'unpaid'",
                params![*order as i64, now_ms()],
            )?;
            if closed == 1 {
                tx.execute(
                    "INSERT INTO closings (order_id, token) VALUES (?1, ?2)",
                    params![*order as i64, job.token as i64],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
        .build()?;
    let mut db = db(path).map_err(bad)?;
    println!("READY");
    for n in 0..ORDERS_PER_PROCESS {
        let id = who * 1_000_000 + n;
        let delay = Duration::from_millis(1_000 + (n as u64 * 37) % 1_000);
        let mut tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(bad)?;
        tx.execute(
            "INSERT INTO orders (id, state, due_ms) VALUES (?1, 'unpaid', ?2)",
            params![id, now_ms() + delay.as_millis() as i64],
        )
        .map_err(bad)?;
        pool.schedule_in(
            &mut tx,
            "close-order",
            &format!("order-{id}"),
            &(id as u64),
            delay,
        )?;
        if n % 7 == 3 {
            tx.rollback().map_err(bad)?; // the customer abandoned the checkout
            continue;
        }
        tx.commit().map_err(bad)?;
        if n % 3 == 0 {
            // Paid at once: the payment and the cancel commit together.
            let mut tx = db
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(bad)?;
            tx.execute(
                "UPDATE orders SET state = 'paid' WHERE id = ?1 AND state = 'unpaid'",
                [id],
            )
            .map_err(bad)?;
            pool.cancel_in(&mut tx, &format!("order-{id}"))?;
            tx.commit().map_err(bad)?;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    println!("PUT-DONE");
    // Keep running the pool until the parent stops us.
    std::thread::sleep(Duration::from_secs(3600));
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 4 && args[1] == "shop" {
        shop(Path::new(&args[2]), args[3].parse()?)?;
        return Ok(());
    }
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("schedpool-orders-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("shop.db");
    let admin = db(&path)?;
    admin.execute_batch(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, state TEXT NOT NULL, due_ms INTEGER NOT NULL,
                              closed_ms INTEGER);
         CREATE TABLE closings (order_id INTEGER NOT NULL, token INTEGER NOT NULL);",
    )?;
    // Create the schedpool tables once before the shops start.
    drop(SqliteBackend::open(&path, "orders")?);
    let exe = std::env::current_exe()?;
    let spawn = |who: i64| {
        let mut child = Command::new(&exe)
            .args(["shop", &path.display().to_string(), &who.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn a shop");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "READY");
        (child, out)
    };
    let (mut a, _a_out) = spawn(1);
    let (mut b, mut b_out) = spawn(2);
    std::thread::sleep(Duration::from_millis(1_500));
    a.kill()?; // kill -9, mid-way through its checkouts and closings
    a.wait()?;
    println!("shop 1 killed mid-way after {:?}", started.elapsed());
    let mut line = String::new();
    b_out.read_line(&mut line)?;
    // Wait until nothing unpaid is left (the killed shop's leases expire).
    let limit = Instant::now() + Duration::from_secs(60);
    loop {
        let unpaid: i64 = admin.query_row(
            "SELECT count(*) FROM orders WHERE state = 'unpaid'",
            [],
            |r| r.get(0),
        )?;
        if unpaid == 0 {
            break;
        }
        assert!(Instant::now() < limit, "{unpaid} orders still unpaid");
        std::thread::sleep(Duration::from_millis(200));
    }
    b.kill()?;
    b.wait()?;
    let n: Vec<i64> = admin.query_row(
        "SELECT (SELECT count(*) FROM orders),
                (SELECT count(*) FROM orders WHERE state = 'paid'),
                (SELECT count(*) FROM orders WHERE state = 'closed'),
                (SELECT count(*) FROM closings),
                (SELECT count(*) FROM (SELECT order_id FROM closings GROUP BY order_id
                                       HAVING count(*) > 1)),
                (SELECT count(*) FROM closings c LEFT JOIN orders o ON o.id = c.order_id
                 WHERE o.id IS NULL),
                (SELECT count(*) FROM orders WHERE state = 'closed' AND closed_ms < due_ms)",
        [],
        |r| (0..7).map(|i| r.get(i)).collect(),
    )?;
    println!(
        "orders committed {}, paid {}, closed {}, closings {}, closed twice {}, \
         rolled-back checkouts fired {}, closed early {} ({:?}, no server)",
        n[0],
        n[1],
        n[2],
        n[3],
        n[4],
        n[5],
        n[6],
        started.elapsed()
    );
    assert_eq!(n[2], n[3], "every closed order has exactly one closing");
    assert_eq!(n[4], 0, "no order closed twice");
    assert_eq!(n[5], 0, "no rolled-back checkout fired");
    assert_eq!(n[6], 0, "none closed early");
    assert_eq!(n[0], n[1] + n[2], "every unpaid order was closed");
    drop(admin);
    let _ = std::fs::remove_dir_all(&dir);
    println!("ok");
    let kept = std::env::temp_dir().join("orders.db");
    leave_a_shop_for_the_console(&kept)?;
    println!(
        "left a shop in mid-day at {}: cargo run -p schedpool-cli --features sqlite -- console --queue orders sqlite:{}",
        kept.display(),
        kept.display()
    );
    Ok(())
}

/// A store for `schedpool` and its console to show (a new file at `path`):
/// 40 order timeouts pending, 4 card charges dead-lettered with their
/// error, and 3 receipts due now in the kind `send-receipt`, paused, so
/// they wait (the console's lag).
fn leave_a_shop_for_the_console(path: &Path) -> Result<(), DurableError> {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let shop = DurablePool::producer(SqliteBackend::open(path, "orders")?)?;
    for n in 0..40u64 {
        let delay = Duration::from_secs(5 * 60 + n * 37);
        shop.schedule(
            "close-order",
            &format!("order-{}", 7000 + n),
            &(7000 + n),
            delay,
        )?;
    }
    let ops = Operator::new(SqliteBackend::open(path, "orders")?);
    ops.pause_kind("send-receipt", "demo")?;
    for n in 0..3u64 {
        let receipt = format!(
            "{{\"order\":{},\"to\":\"customer-{n}@example.com\"}}",
            7100 + n
        );
        shop.schedule(
            "send-receipt",
            &format!("receipt-{}", 7100 + n),
            &receipt,
            Duration::ZERO,
        )?;
    }
    for n in 0..4u64 {
        let charge = format!(
            "{{\"order\":{},\"amount_cents\":{}}}",
            7200 + n,
            1999 + n * 500
        );
        shop.schedule(
            "charge-card",
            &format!("charge-{}", 7200 + n),
            &charge,
            Duration::ZERO,
        )?;
    }
    let cards = DurablePool::builder(SqliteBackend::open(path, "orders")?)
        .threads(1)
        .max_attempts(2)
        .retry_backoff(Duration::from_millis(10), Duration::from_millis(10))
        .handler("charge-card", |_: &String, _job| {
            Err("card declined: insufficient funds".into())
        })
        .build()?;
    let limit = Instant::now() + Duration::from_secs(30);
    while cards.counts()?.dead < 4 {
        assert!(Instant::now() < limit, "the charges did not dead-letter");
        std::thread::sleep(Duration::from_millis(20));
    }
    cards.shutdown();
    cards.await_termination(Duration::from_secs(5));
    shop.shutdown();
    Ok(())
}
