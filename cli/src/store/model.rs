//! What the tool and the console show of a store: plain, serialisable
//! views (`--json` prints them as they are), made from the library's types
//! in `store/mod.rs`.
//!
//! Invariant: times are milliseconds since the Unix epoch by the *store's*
//! clock, never this machine's.

use serde::Serialize;

/// Where an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Waiting for its due time, or due and not yet claimed.
    Pending,
    /// Leased to a consumer that runs it.
    InFlight,
    /// Dead-lettered after its last attempt.
    Dead,
}

impl State {
    /// Every state, in the order pages show them.
    pub const ALL: [State; 3] = [State::Pending, State::InFlight, State::Dead];

    /// Its name on the command line and in URLs: `pending`, `in-flight`, `dead`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::State;
    ///
    /// assert_eq!(State::InFlight.name(), "in-flight");
    /// assert_eq!(State::parse("in-flight"), Some(State::InFlight));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::InFlight => "in-flight",
            State::Dead => "dead",
        }
    }

    /// The state named `name` (see [`name`](Self::name)); `None` for another word.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::State;
    ///
    /// assert_eq!(State::parse("dead"), Some(State::Dead));
    /// assert_eq!(State::parse("gone"), None);
    /// ```
    pub fn parse(name: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Which items a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this state (pending when `None`).
    pub state: Option<State>,
    /// Only this kind (a pool's handler name).
    pub kind: Option<String>,
    /// Only ids that start with this.
    pub id_prefix: Option<String>,
    /// Only items whose time (due, lease end or death) is at or after this (ms).
    pub from_ms: Option<u64>,
    /// Only items whose time is before this (ms).
    pub until_ms: Option<u64>,
}

impl Filter {
    /// The filter in words, for audit records and confirmations:
    /// `dead kind=charge prefix=order-`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::{Filter, State};
    ///
    /// let f = Filter { state: Some(State::Dead), kind: Some("charge".into()), ..Filter::default() };
    /// assert_eq!(f.describe(), "dead kind=charge");
    /// ```
    pub fn describe(&self) -> String {
        let mut out = self.state.unwrap_or(State::Pending).name().to_string();
        if let Some(k) = &self.kind {
            out.push_str(&format!(" kind={k}"));
        }
        if let Some(p) = &self.id_prefix {
            out.push_str(&format!(" prefix={p}"));
        }
        if let Some(t) = self.from_ms {
            out.push_str(&format!(" from={}", crate::time::utc(t)));
        }
        if let Some(t) = self.until_ms {
            out.push_str(&format!(" until={}", crate::time::utc(t)));
        }
        out
    }
}

/// One item, as a listing or an item page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Its business id.
    pub id: String,
    /// Its kind (empty for a plain queue's item).
    pub kind: String,
    /// Where it is.
    pub state: State,
    /// The time its state sorts by (ms): due time, lease end, or death.
    pub at_ms: u64,
    /// The occurrence's scheduled time (ms).
    pub deadline_ms: u64,
    /// Claims since it was put or requeued.
    pub attempts: u32,
}

/// An item in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemDetail {
    /// The listing's view of it.
    #[serde(flatten)]
    pub item: Item,
    /// When it is (or was) due for its current delivery (ms).
    pub due_ms: u64,
    /// The error recorded when it died.
    pub last_error: Option<String>,
    /// In flight: the lease holder's fencing token and when its lease ends (ms).
    pub lease: Option<Lease>,
    /// The payload's bytes.
    #[serde(skip)]
    pub payload: Vec<u8>,
    /// Why the stored bytes did not open, when they did not.
    pub unreadable: Option<String>,
}

/// An in-flight item's lease. The store records the claim's fencing token,
/// not which process holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Lease {
    /// The holder's fencing token.
    pub token: u64,
    /// When the lease ends unless extended (ms).
    pub until_ms: u64,
}

/// Item counts of one kind, and whether it is paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindRow {
    /// The kind.
    pub kind: String,
    /// Pending items.
    pub pending: usize,
    /// In-flight items.
    pub in_flight: usize,
    /// Dead items.
    pub dead: usize,
    /// Paused: claims skip its items.
    pub paused: bool,
}

/// A paused kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Paused {
    /// The kind.
    pub kind: String,
    /// Who paused it.
    pub by: String,
    /// When (ms).
    pub at_ms: u64,
}

/// A store at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overview {
    /// The store's clock when read (ms).
    pub now_ms: u64,
    /// Pending items in all.
    pub pending: usize,
    /// In-flight items in all.
    pub in_flight: usize,
    /// Dead items in all.
    pub dead: usize,
    /// Counts by kind, in kind order (a paused kind with no item too).
    pub kinds: Vec<KindRow>,
    /// The paused kinds.
    pub paused: Vec<Paused>,
    /// The earliest pending due time (ms), overdue or not.
    pub next_due_ms: Option<u64>,
    /// How late the most overdue pending item is (ms), when one is due.
    pub lag_ms: Option<u64>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page {
    /// The items, in (time, id) order.
    pub items: Vec<Item>,
    /// Where the next page starts (`--cursor`); `None` on the last page.
    pub next_cursor: Option<String>,
}

/// What a bulk requeue or purge did (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BulkOutcome {
    /// `requeue` or `purge`.
    pub action: String,
    /// The filter, in words.
    pub filter: String,
    /// Dead letters that matched (at most the maximum).
    pub matched: usize,
    /// Dead letters this call moved (0 on a dry run). Fewer than `matched`
    /// when another operator moved some first: each moves once.
    pub changed: usize,
    /// Nothing was changed: the count is what a real run would touch.
    pub dry_run: bool,
    /// The ids moved (on a dry run: the ids a real run would take now).
    pub ids: Vec<String>,
}

/// A durable calendar schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Schedule {
    /// Its name (the id it is stored under).
    pub name: String,
    /// The kind its fires run as.
    pub kind: String,
    /// Its rule (the start of its `Debug` text).
    pub rule: String,
    /// The oldest fire not yet handled (ms): the next fire while pending,
    /// the running one while in flight.
    pub next_ms: u64,
    /// What happens to fires the fleet missed.
    pub misfire: String,
    /// Where its stored item is.
    pub state: State,
    /// Attempts at that fire so far.
    pub attempts: u32,
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Audit {
    /// Its sequence number in the store.
    pub seq: u64,
    /// When (ms).
    pub at_ms: u64,
    /// Who, as the operator named themselves.
    pub by: String,
    /// What: requeue, purge, pause, resume, fire, cancel.
    pub action: String,
    /// On what.
    pub target: String,
    /// How many items it changed.
    pub count: u64,
}
