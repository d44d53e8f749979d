//! `durable_bench_pool`'s SQLite part: the same steps as PostgreSQL's,
//! on a file in a temp dir with the backend's defaults
//! (`synchronous=FULL`, WAL).

use std::time::Instant;

use schedpool::durable::{DurableQueue, SqliteBackend, SqliteOptions, Synchronous};

use super::bench::{envelope_of_u64, pool_part, rate, Results, FAR};

pub fn sqlite(pending: usize, ops: usize, jobs: usize, wakes: usize) -> Results {
    let dir = std::env::temp_dir().join(format!("schedpool-bench-sqlite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bench.db");
    let b = SqliteBackend::open(&path, "bench").unwrap();
    let mut db = rusqlite::Connection::open(&path).unwrap();
    let t = Instant::now();
    let now = super::bench::now_ms() as i64;
    let far = now + 3_600_000;
    let tx = db.transaction().unwrap();
    tx.execute(
        "WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i + 1 < ?1)
         INSERT INTO schedpool_items (queue, id, state, score, deadline, due, token, attempts, envelope)
         SELECT 'bench', 'pre-' || i, 0, ?2, ?2, ?2, i + 1, 0, ?3 FROM g",
        rusqlite::params![pending as i64, far, envelope_of_u64("noop", 0)],
    )
    .unwrap();
    tx.execute(
        "UPDATE schedpool_tokens SET last = last + ?1",
        [pending as i64],
    )
    .unwrap();
    tx.commit().unwrap();
    db.execute_batch("ANALYZE").unwrap();
    eprintln!("sqlite: preloaded {pending} in {:?}", t.elapsed());
    let q = DurableQueue::<u64>::new(SqliteBackend::open(&path, "bench-puts").unwrap());
    let t = Instant::now();
    for i in 0..ops {
        q.put(&format!("p-{i}"), &(i as u64), FAR).unwrap();
    }
    let put = rate(ops, t.elapsed());
    // The same puts with synchronous=NORMAL (synced at checkpoints only).
    let normal = DurableQueue::<u64>::new(
        SqliteBackend::open_with(
            &path,
            "bench-normal",
            SqliteOptions::default().synchronous(Synchronous::Normal),
        )
        .unwrap(),
    );
    let t = Instant::now();
    for i in 0..ops {
        normal.put(&format!("n-{i}"), &(i as u64), FAR).unwrap();
    }
    eprintln!(
        "sqlite: put, 1 thread, synchronous=NORMAL: {:.0}/s (FULL: {put:.0}/s)",
        rate(ops, t.elapsed())
    );
    let t = Instant::now();
    for i in 0..ops {
        let mut tx = db
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        q.put_in(&mut tx, &format!("t-{i}"), &(i as u64), FAR)
            .unwrap();
        tx.commit().unwrap();
    }
    let put_tx = rate(ops, t.elapsed());
    let due_path = path.clone();
    let make_due = move |n: usize| {
        let mut c = rusqlite::Connection::open(&due_path).unwrap();
        let now = super::bench::now_ms() as i64;
        let tx = c
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        {
            let mut st = tx
                .prepare(
                    "UPDATE schedpool_items SET score = ?1, due = ?1, deadline = ?1
                     WHERE queue = 'bench' AND id = ?2 AND state = 0",
                )
                .unwrap();
            for i in 0..n {
                st.execute(rusqlite::params![now, format!("run-{i}")])
                    .unwrap();
            }
        }
        tx.commit().unwrap();
    };
    let p = pool_part(b, jobs, wakes, &make_due, &|| {});
    let _ = std::fs::remove_dir_all(&dir);
    Results {
        server_us: None,
        put,
        put_tx: Some(put_tx),
        cancel: p.cancel,
        run: p.run,
        idle: p.idle,
        busy: p.busy,
        samples: p.samples,
        busy_rate: p.busy_rate,
    }
}
