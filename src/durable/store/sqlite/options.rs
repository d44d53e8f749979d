//! [`SqliteOptions`] and [`Synchronous`]: how the SQLite backend opens its
//! file. A leaf of the folder.

use std::time::Duration;

/// When a commit reaches the disk (SQLite's `PRAGMA synchronous`, in WAL
/// mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Every commit is synced to the disk before it returns (the default):
    /// a put or ack that returned `Ok` survives `kill -9` of every process
    /// and a power cut or an operating-system crash.
    #[default]
    Full,
    /// Commits are synced at checkpoints only: faster puts; a put or ack
    /// that returned `Ok` still survives `kill -9` of every process (the
    /// write-ahead log is in the operating system's cache), but a power cut
    /// or an operating-system crash can lose the commits since the last
    /// checkpoint (at most about 1,000 pages of log, SQLite's default
    /// `wal_autocheckpoint`). The database stays consistent.
    Normal,
}

/// Settings of a [`SqliteBackend`](super::SqliteBackend).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{SqliteOptions, Synchronous};
///
/// let o = SqliteOptions::default()
///     .synchronous(Synchronous::Normal)
///     .busy_timeout(Duration::from_secs(10));
/// assert_eq!(o.synchronous, Synchronous::Normal);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// How long a call waits for another connection's write to finish
    /// (SQLite's busy timeout; default 5 s) before it returns
    /// [`DurableError::Unavailable`](crate::durable::DurableError::Unavailable).
    /// Writers to one file take turns: this bounds the wait for a turn.
    pub busy_timeout: Duration,
    /// When a commit reaches the disk (default [`Synchronous::Full`]).
    pub synchronous: Synchronous,
    /// The longest a waiting consumer goes without looking for another
    /// process's commit (default 16 ms). It looks at once after a wake-up
    /// or a commit of its own process, then every 1 ms, doubling to this
    /// while the file stays unchanged: a new item put by another process
    /// is seen within about this much.
    pub max_poll: Duration,
    /// Where "now" comes from, in ms since the Unix epoch: the host's wall
    /// clock. A seam for tests of a wall-clock step; not for applications.
    #[doc(hidden)]
    pub clock: fn() -> u64,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            busy_timeout: Duration::from_secs(5),
            synchronous: Synchronous::Full,
            max_poll: Duration::from_millis(16),
            clock: wall_ms,
        }
    }
}

impl SqliteOptions {
    /// Sets [`busy_timeout`](Self::busy_timeout).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets [`synchronous`](Self::synchronous).
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets [`max_poll`](Self::max_poll).
    pub fn max_poll(mut self, max_poll: Duration) -> Self {
        self.max_poll = max_poll;
        self
    }

    /// Sets the clock (see [`clock`](Self::clock)): for tests only.
    #[doc(hidden)]
    pub fn clock(mut self, clock: fn() -> u64) -> Self {
        self.clock = clock;
        self
    }
}

/// The host's wall clock, in ms since the Unix epoch (0 before 1970).
pub(super) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
