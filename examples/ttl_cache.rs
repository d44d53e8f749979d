//! A cache whose entries expire, where re-putting a key replaces its expiry.
//!
//! Every entry's expiry is an element of a `DelayQueue`, and one expirer
//! thread `take`s them as they come due. The classic bug: re-putting a key
//! adds a second expiry but leaves the old one queued, so the old expiry
//! comes due first and evicts the *fresh* value early. Here the cache keeps
//! each entry's `Key` and removes the old expiry in O(log n) on every re-put
//! or remove. An expiry also carries a stamp, so an expiry that was already
//! taken by the expirer when the key was re-put cannot evict the new value.
//!
//! The example runs the same story on a naive cache (no removal, no stamp)
//! and on the fixed one, then a random workload on both.
//!
//! Run: `cargo run --release --example ttl_cache`

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use schedpool::{DelayItem, DelayQueue, Key};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The seed's version: re-put queues a second expiry; any expiry evicts.
    Naive,
    /// Re-put removes the old expiry; an expiry evicts only its own entry.
    Replace,
}

struct Entry<V> {
    value: V,
    stamp: u64,
    key: Key,
    expires: Instant,
}

/// What the expirer did, for the checks at the end.
#[derive(Default)]
struct Report {
    evictions: u64,
    /// Evictions of a value whose own expiry was still in the future.
    early: u64,
    /// Expiries that came up for a value that had been replaced (ignored).
    stale: u64,
}

struct Inner<K, V> {
    mode: Mode,
    map: Mutex<(HashMap<K, Entry<V>>, u64)>,
    expiries: DelayQueue<DelayItem<(K, u64)>>,
    report: Mutex<Report>,
}

struct TtlCache<K, V> {
    inner: Arc<Inner<K, V>>,
    expirer: Option<JoinHandle<()>>,
}

impl<K, V> TtlCache<K, V>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    fn new(mode: Mode) -> Self {
        let inner = Arc::new(Inner {
            mode,
            map: Mutex::new((HashMap::new(), 0)),
            expiries: DelayQueue::new(),
            report: Mutex::new(Report::default()),
        });
        let expirer = {
            let inner = inner.clone();
            thread::spawn(move || {
                // `take` blocks until the earliest expiry is due; None once closed.
                while let Some(item) = inner.expiries.take() {
                    let (k, stamp) = item.into_inner();
                    let now = Instant::now();
                    let mut guard = inner.map.lock().unwrap();
                    let mut report = inner.report.lock().unwrap();
                    let current = guard.0.get(&k).map(|e| (e.stamp, e.expires));
                    match (inner.mode, current) {
                        (_, None) => {}
                        (Mode::Replace, Some((s, _))) if s != stamp => report.stale += 1,
                        (_, Some((_, expires))) => {
                            guard.0.remove(&k);
                            report.evictions += 1;
                            if expires > now {
                                report.early += 1;
                            }
                        }
                    }
                }
            })
        };
        TtlCache {
            inner,
            expirer: Some(expirer),
        }
    }

    /// Inserts or replaces `k`, which now expires `ttl` from now.
    fn put(&self, k: K, v: V, ttl: Duration) {
        let mut guard = self.inner.map.lock().unwrap();
        let (map, next_stamp) = &mut *guard;
        *next_stamp += 1;
        let stamp = *next_stamp;
        let expires = Instant::now() + ttl;
        let key = self
            .inner
            .expiries
            .put(DelayItem::at((k.clone(), stamp), expires));
        let entry = Entry {
            value: v,
            stamp,
            key,
            expires,
        };
        if let Some(old) = map.insert(k, entry) {
            if self.inner.mode == Mode::Replace {
                // The fix: the old expiry leaves the queue (None if the
                // expirer already took it; the stamp then protects us).
                self.inner.expiries.remove(old.key);
            }
        }
    }

    fn get(&self, k: &K) -> Option<V> {
        let guard = self.inner.map.lock().unwrap();
        guard
            .0
            .get(k)
            .filter(|e| e.expires > Instant::now())
            .map(|e| e.value.clone())
    }

    fn remove(&self, k: &K) -> Option<V> {
        let entry = self.inner.map.lock().unwrap().0.remove(k)?;
        if self.inner.mode == Mode::Replace {
            self.inner.expiries.remove(entry.key);
        }
        Some(entry.value)
    }

    /// (live entries, queued expiries), read under the map lock.
    fn sizes(&self) -> (usize, usize) {
        let guard = self.inner.map.lock().unwrap();
        (guard.0.len(), self.inner.expiries.len())
    }

    /// Stops the expirer and returns its report.
    fn finish(mut self) -> Report {
        self.inner.expiries.close();
        if let Some(t) = self.expirer.take() {
            t.join().unwrap();
        }
        std::mem::take(&mut *self.inner.report.lock().unwrap())
    }
}

impl<K, V> Drop for TtlCache<K, V> {
    fn drop(&mut self) {
        self.inner.expiries.close();
        if let Some(t) = self.expirer.take() {
            let _ = t.join();
        }
    }
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
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn sleep_until(t: Instant) {
    if let Some(d) = t.checked_duration_since(Instant::now()) {
        thread::sleep(d);
    }
}

const TTL: Duration = Duration::from_millis(300);

/// What the story saw.
struct Story {
    /// When the naive cache's expirer dropped alice.
    naive_evicted: Duration,
    /// The fixed cache's answer at that moment.
    fixed_then: Option<&'static str>,
    /// When the fixed cache's expirer dropped alice.
    fixed_evicted: Duration,
}

/// The story: a cart is re-put before it expires; watch both caches.
fn story() -> Story {
    let naive = TtlCache::new(Mode::Naive);
    let fixed = TtlCache::new(Mode::Replace);
    let t0 = Instant::now();

    println!("  t=   0 ms  put alice -> \"cart v1\"   (expires at 300 ms)");
    naive.put("alice", "cart v1", TTL);
    fixed.put("alice", "cart v1", TTL);

    sleep_until(t0 + Duration::from_millis(200));
    println!("  t= 200 ms  put alice -> \"cart v2\"   (expires at 500 ms: replaces the expiry)");
    naive.put("alice", "cart v2", TTL);
    fixed.put("alice", "cart v2", TTL);

    // Watch until each cache's expirer has dropped alice.
    let (mut naive_evicted, mut fixed_then, mut fixed_evicted) = (None, None, None);
    while fixed_evicted.is_none() && t0.elapsed() < Duration::from_secs(5) {
        let now = t0.elapsed();
        if naive_evicted.is_none() && naive.sizes().0 == 0 {
            naive_evicted = Some(now);
            fixed_then = fixed.get(&"alice");
            println!(
                "  t= {:>3} ms  naive: alice evicted by the stale 300 ms expiry; fixed: get(alice) = {fixed_then:?}",
                now.as_millis()
            );
        }
        if fixed.sizes().0 == 0 {
            fixed_evicted = Some(now);
            let (live, queued) = fixed.sizes();
            println!(
                "  t= {:>3} ms  fixed: alice evicted by its one expiry ({live} entries, {queued} expiries queued)",
                now.as_millis()
            );
        }
        thread::sleep(Duration::from_millis(1));
    }
    Story {
        naive_evicted: naive_evicted.expect("the naive cache evicted alice"),
        fixed_then,
        fixed_evicted: fixed_evicted.expect("the fixed cache evicted alice"),
    }
}

/// A random workload: puts, re-puts and removes for 0.8 s on 500 keys.
fn workload(mode: Mode) -> (Report, usize, usize, u64) {
    let cache = TtlCache::new(mode);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    let (mut peak_queue, mut peak_live, mut ops) = (0, 0, 0u64);
    let mut invariant_held = true;
    while start.elapsed() < Duration::from_millis(800) {
        for _ in 0..50 {
            let k = rng.below(500);
            if rng.below(10) == 0 {
                cache.remove(&k);
            } else {
                let ttl = Duration::from_millis(50 + rng.below(200));
                cache.put(k, ops, ttl);
            }
            ops += 1;
        }
        let (live, queued) = cache.sizes();
        peak_live = peak_live.max(live);
        peak_queue = peak_queue.max(queued);
        // Fixed cache: at most one queued expiry per live entry (fewer while
        // the expirer holds one between `take` and the map lock).
        if mode == Mode::Replace && queued > live {
            invariant_held = false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    // Let everything expire.
    let settle = Instant::now();
    while cache.sizes() != (0, 0) && settle.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(10));
    }
    let (live, queued) = cache.sizes();
    assert!(
        invariant_held || mode == Mode::Naive,
        "stale expiries piled up"
    );
    let report = cache.finish();
    assert_eq!(live, 0, "{mode:?}: every entry expired");
    assert_eq!(queued, 0, "{mode:?}: nothing left in the queue");
    (report, peak_live, peak_queue, ops)
}

fn main() {
    let started = Instant::now();
    println!("TTL cache, entries live {} ms:", TTL.as_millis());
    let story = story();
    println!();

    println!("Random workload, 0.8 s, 500 keys, TTL 50-250 ms:");
    let (naive, naive_live, naive_queue, ops) = workload(Mode::Naive);
    let (fixed, fixed_live, fixed_queue, _) = workload(Mode::Replace);
    println!("                               naive     fixed");
    println!("  operations                 {ops:>7}   {ops:>7}");
    println!("  peak live entries          {naive_live:>7}   {fixed_live:>7}");
    println!(
        "  peak queued expiries       {naive_queue:>7}   {fixed_queue:>7}   (fixed: never more than live)"
    );
    println!(
        "  evictions                  {:>7}   {:>7}",
        naive.evictions, fixed.evictions
    );
    println!(
        "  fresh values evicted early {:>7}   {:>7}   (must be 0 for fixed)",
        naive.early, fixed.early
    );
    println!(
        "  stale expiries ignored           -   {:>7}   (taken just before a re-put)",
        fixed.stale
    );
    println!(
        "  wall time                  {:>6.2} s",
        started.elapsed().as_secs_f64()
    );

    let new_expiry = Duration::from_millis(500);
    assert!(
        story.naive_evicted < new_expiry,
        "the naive cache lost the fresh cart early (the bug)"
    );
    assert_eq!(
        story.fixed_then,
        Some("cart v2"),
        "meanwhile the fixed cache still had it"
    );
    assert!(
        story.fixed_evicted >= new_expiry,
        "the fixed cache evicted it at its new expiry, not before"
    );
    assert_eq!(fixed.early, 0, "the fixed cache never evicts a value early");
    assert!(naive.early > 0, "the workload exercises re-puts");
    assert!(fixed_queue <= fixed_live, "no stale expiries are retained");
    println!("ok");
}
