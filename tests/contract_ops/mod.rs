//! The operator's side of the contract ([`DurableOps`] and [`Operator`]),
//! checked on every backend by `durable_contract.rs`'s `contract!` list.
//! Each case takes two handles on one store (two processes): `a` puts and
//! claims as the fleet does, `b` becomes the operator.

use std::collections::HashSet;
use std::time::Duration;

use schedpool::durable::{
    Cancelled, DeadFilter, DurableBackend, ListFilter, Nack, Operator, PutMode, StoredState, When,
};

use super::claim_n;

const LEASE: Duration = Duration::from_secs(30);

/// An envelope of `kind` around `payload` (format 1, no repeat).
pub fn kenv(kind: &str, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![1, kind.len() as u8];
    v.extend_from_slice(kind.as_bytes());
    v.push(0);
    v.extend_from_slice(payload);
    v
}

fn kput(b: &dyn DurableBackend, kind: &str, id: &str, when: When) -> u64 {
    b.put(id, &kenv(kind, id.as_bytes()), when, PutMode::Replace)
        .unwrap()
        .deadline_ms()
        .unwrap()
}

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| id(i).to_string()).collect()
}

/// Listing by state, kind, prefix and range, a page at a time; inspecting;
/// counts by kind; the overview.
pub fn ops_list_inspect_and_overview<B: DurableBackend>(a: B, b: B) {
    let now = a.server_time_ms().unwrap();
    let base = now + 3_600_000;
    for i in 0..7u64 {
        let kind = if i % 2 == 0 { "mail" } else { "sms" };
        kput(
            &a,
            kind,
            &format!("order-{i}"),
            When::AtServerMs(base + i * 1000),
        );
    }
    kput(&a, "mail", "other-1", When::AtServerMs(base + 500));
    let ops = Operator::new(b);

    // Pages of 3 over 8 pending items, in due order, no repeats.
    let mut seen = Vec::new();
    let mut filter = ListFilter::new(StoredState::Pending).limit(3);
    loop {
        let page = ops.list(&filter).unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(ids(&page.items, |i| &i.id));
        match page.next {
            Some(next) => filter = filter.after(Some(next)),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["order-0", "other-1", "order-1", "order-2", "order-3", "order-4", "order-5", "order-6"]
    );

    let mail = ops
        .list(&ListFilter::new(StoredState::Pending).kind("mail"))
        .unwrap();
    assert_eq!(
        ids(&mail.items, |i| &i.id),
        ["order-0", "other-1", "order-2", "order-4", "order-6"]
    );
    assert!(mail.items.iter().all(|i| i.kind == "mail"));
    assert_eq!(mail.next, None);
    let prefixed = ops
        .list(&ListFilter::new(StoredState::Pending).id_prefix("other-"))
        .unwrap();
    assert_eq!(ids(&prefixed.items, |i| &i.id), ["other-1"]);
    let ranged = ops
        .list(&ListFilter::new(StoredState::Pending).between(Some(base + 1000), Some(base + 3000)))
        .unwrap();
    assert_eq!(ids(&ranged.items, |i| &i.id), ["order-1", "order-2"]);
    assert_eq!(ranged.items[0].score_ms, base + 1000);
    assert_eq!(ranged.items[0].deadline_ms, base + 1000);

    // In flight and dead.
    kput(&a, "mail", "now-1", When::After(Duration::ZERO));
    kput(&a, "sms", "now-2", When::After(Duration::ZERO));
    let claimed = claim_n(&a, 2, LEASE);
    let c1 = claimed.iter().find(|c| c.id == "now-1").unwrap();
    let c2 = claimed.iter().find(|c| c.id == "now-2").unwrap();
    assert!(a.bury("now-2", c2.token, Some("card declined")).unwrap());
    let flying = ops.list(&ListFilter::new(StoredState::InFlight)).unwrap();
    assert_eq!(ids(&flying.items, |i| &i.id), ["now-1"]);
    assert_eq!(flying.items[0].attempts, 1);
    let dead = ops.list(&ListFilter::new(StoredState::Dead)).unwrap();
    assert_eq!(ids(&dead.items, |i| &i.id), ["now-2"]);
    assert_eq!(dead.items[0].kind, "sms");

    let detail = ops.inspect("now-1").unwrap().expect("stored");
    assert_eq!(detail.summary.state, StoredState::InFlight);
    assert_eq!(detail.payload, b"now-1");
    let (token, expiry) = detail.lease.expect("leased");
    assert_eq!(token, c1.token);
    assert!(expiry >= c1.claimed_ms + LEASE.as_millis() as u64);
    let detail = ops.inspect("now-2").unwrap().expect("stored");
    assert_eq!(detail.summary.state, StoredState::Dead);
    assert_eq!(detail.last_error.as_deref(), Some("card declined"));
    assert_eq!(detail.payload, b"now-2");
    assert_eq!(detail.lease, None);
    assert_eq!(ops.inspect("missing").unwrap(), None);

    let overview = ops.overview().unwrap();
    assert_eq!(
        (
            overview.counts.pending,
            overview.counts.in_flight,
            overview.counts.dead
        ),
        (8, 1, 1)
    );
    let mail = overview.by_kind.iter().find(|k| k.kind == "mail").unwrap();
    assert_eq!((mail.pending, mail.in_flight, mail.dead), (5, 1, 0));
    let sms = overview.by_kind.iter().find(|k| k.kind == "sms").unwrap();
    assert_eq!((sms.pending, sms.in_flight, sms.dead), (3, 0, 1));
    assert_eq!(overview.next_due_ms, Some(base));
    assert_eq!(overview.oldest_overdue, None, "nothing pending is due");
    assert!(a.nack("now-1", c1.token, Nack::Release).unwrap());
    let overview = ops.overview().unwrap();
    assert!(overview.oldest_overdue.is_some(), "now-1 is due again");
}

/// A paused kind is skipped by every handle's claims and waits, due;
/// the pause is in the store; a resume makes it claimable at once.
pub fn ops_pause_skips_claims<B: DurableBackend>(a: B, b: B) {
    let ops = Operator::new(b);
    assert!(ops.pause_kind("mail", "ada").unwrap());
    assert!(!ops.pause_kind("mail", "bob").unwrap(), "already paused");
    kput(&a, "mail", "m-1", When::After(Duration::ZERO));
    kput(&a, "mail", "m-2", When::After(Duration::ZERO));
    kput(&a, "sms", "s-1", When::After(Duration::ZERO));
    let got = claim_n(&a, 1, LEASE);
    assert_eq!(got[0].id, "s-1");
    std::thread::sleep(Duration::from_millis(20));
    let batch = a.claim(LEASE, 10, 0).unwrap();
    assert!(
        batch.items.is_empty(),
        "paused items are not claimed: {batch:?}"
    );
    assert_ne!(
        batch.wait,
        Some(Duration::ZERO),
        "paused due items must not make consumers spin"
    );
    // The pause is the store's: the other handle (another process) sees it.
    let paused = a.ops().expect("ops").paused_kinds().unwrap();
    assert_eq!(paused.len(), 1);
    assert_eq!(
        (paused[0].kind.as_str(), paused[0].by.as_str()),
        ("mail", "ada")
    );
    assert_eq!(a.counts().unwrap().pending, 2, "due items wait, never lost");
    assert!(ops.resume_kind("mail", "ada").unwrap());
    assert!(!ops.resume_kind("mail", "ada").unwrap());
    let got = claim_n(&a, 2, LEASE);
    let mut got = ids(&got, |c| &c.id);
    got.sort();
    assert_eq!(got, ["m-1", "m-2"]);
    let audit = ops.audit(10, None).unwrap();
    assert_eq!(
        audit.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(),
        ["resume", "pause"]
    );
    assert!(audit[0].seq > audit[1].seq);
    assert!(audit[0].at_ms >= audit[1].at_ms);
}

/// Bulk requeue and purge by filter, with a cap and a dry run; two
/// operators racing move each dead letter exactly once.
pub fn ops_bulk_dead_exactly_once<B: DurableBackend>(a: B, b: B) {
    const N: usize = 250;
    for i in 0..N {
        let kind = if i < 200 { "charge" } else { "ship" };
        kput(&a, kind, &format!("d-{i:04}"), When::After(Duration::ZERO));
    }
    for c in claim_n(&a, N, LEASE) {
        assert!(a.bury(&c.id, c.token, Some("boom")).unwrap());
    }
    let one = Operator::new(a);
    let two = Operator::new(b);
    let charge = DeadFilter::default().kind("charge");

    let dry = one.requeue_dead(&charge, 10, true, "ada").unwrap();
    assert_eq!((dry.matched, dry.moved, dry.ids.len()), (10, 0, 10));
    assert!(
        one.audit(10, None).unwrap().is_empty(),
        "a dry run records nothing"
    );
    let capped = one.requeue_dead(&charge, 5, false, "ada").unwrap();
    assert_eq!(capped.moved, 5);

    let (r1, r2) = std::thread::scope(|s| {
        let t1 = s.spawn(|| one.requeue_dead(&charge, 10_000, false, "ada").unwrap());
        let t2 = s.spawn(|| two.requeue_dead(&charge, 10_000, false, "bob").unwrap());
        (t1.join().unwrap(), t2.join().unwrap())
    });
    assert_eq!(r1.moved + r2.moved, 195, "{} + {}", r1.moved, r2.moved);
    let s1: HashSet<_> = r1.ids.iter().collect();
    assert!(
        r2.ids.iter().all(|id| !s1.contains(id)),
        "an item moved twice"
    );
    let counts = one.overview().unwrap().counts;
    assert_eq!((counts.pending, counts.dead), (200, 50));

    let spam = DeadFilter::default().id_prefix("d-02");
    let (p1, p2) = std::thread::scope(|s| {
        let t1 = s.spawn(|| one.purge_dead(&spam, 1000, false, "ada").unwrap());
        let t2 = s.spawn(|| two.purge_dead(&spam, 1000, false, "bob").unwrap());
        (t1.join().unwrap(), t2.join().unwrap())
    });
    assert_eq!(p1.moved + p2.moved, 50);
    assert_eq!(one.overview().unwrap().counts.dead, 0);

    let audit = two.audit(100, None).unwrap();
    let total = |action: &str| -> u64 {
        audit
            .iter()
            .filter(|e| e.action == action)
            .map(|e| e.count)
            .sum()
    };
    assert_eq!((total("requeue"), total("purge")), (200, 50));
    assert!(audit.iter().all(|e| e.by == "ada" || e.by == "bob"));
    assert!(audit.iter().any(|e| e.target == "kind=charge"));
    // Cancel through the operator is audited too.
    assert!(matches!(
        one.cancel("d-0000", "ada").unwrap(),
        Cancelled::Pending(_)
    ));
    assert_eq!(two.audit(1, None).unwrap()[0].action, "cancel");
}
