//! The command line, as clap derives it: global options, then one
//! subcommand with the store's URL first.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The exit codes, printed under `--help`.
const EXIT_CODES: &str = "\
Exit codes:
  0  done
  1  failed (an unreadable stored item, an I/O error)
  2  usage: bad arguments or URL, or a store this build does not support
  3  not found: no such item, dead letter or schedule
  4  unavailable: the store cannot be reached or did not answer in time
  5  refused: credentials, rights, or a bulk change without --yes

Store URLs: sqlite:PATH, redis://[USER:PASS@]HOST:PORT/DB, rediss://... (TLS),
postgres://USER[:PASS]@HOST[:PORT]/DB[?sslmode=require]";

/// Operate schedpool's durable timeouts: see what is pending, in flight
/// and dead and why; requeue, purge and cancel; pause kinds; fire
/// schedules; serve a web console.
#[derive(Debug, Parser)]
#[command(name = "schedpool", version, after_help = EXIT_CODES, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// The queue name your services use (what they pass to SqliteBackend::open,
    /// RedisBackend::connect or PostgresBackend::connect).
    #[arg(
        long,
        short,
        global = true,
        env = "SCHEDPOOL_QUEUE",
        value_name = "NAME"
    )]
    pub(crate) queue: Option<String>,
    /// Print JSON for scripts instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Your name in the store's audit trail [default: $USER].
    #[arg(long, global = true, env = "SCHEDPOOL_BY", value_name = "NAME")]
    pub(crate) by: Option<String>,
    /// The PostgreSQL schema the services use [default: schedpool].
    #[arg(long, global = true, value_name = "SCHEMA")]
    pub(crate) schema: Option<String>,
    /// A PEM file with the CA that signed the server's certificate (Redis, PostgreSQL).
    #[arg(long, global = true, value_name = "PEM")]
    pub(crate) ca: Option<PathBuf>,
    /// How long to wait for the store per connect and per call (`5s`, `500ms`).
    #[arg(long, global = true, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) timeout: Duration,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let d: jiff::SignedDuration = text
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: write `5s`, `500ms` or `1m`"))?;
    Duration::try_from(d).map_err(|_| format!("{text:?}: a duration must not be negative"))
}

/// A state on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StateArg {
    Pending,
    InFlight,
    Dead,
}

/// Which items: kind, id prefix and time range.
#[derive(Debug, Args, Default)]
pub(crate) struct Narrow {
    /// Only items of this kind (a pool's handler name).
    #[arg(long, value_name = "KIND")]
    pub(crate) kind: Option<String>,
    /// Only ids that start with this.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) prefix: Option<String>,
    /// Only items whose time (due, lease end, death) is at or after this:
    /// `-1h`, `now`, `2026-12-05T06:00:00Z`.
    #[arg(long, value_name = "WHEN", allow_hyphen_values = true)]
    pub(crate) from: Option<String>,
    /// Only items whose time is before this (same forms as --from).
    #[arg(long, value_name = "WHEN", allow_hyphen_values = true)]
    pub(crate) until: Option<String>,
}

impl Narrow {
    pub(crate) fn any(&self) -> bool {
        self.kind.is_some() || self.prefix.is_some() || self.from.is_some() || self.until.is_some()
    }
}

/// A page of a listing.
#[derive(Debug, Args)]
pub(crate) struct Paging {
    /// At most this many items (1 to 1000).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) limit: u16,
    /// Start after this cursor (printed under the previous page).
    #[arg(long, value_name = "CURSOR")]
    pub(crate) cursor: Option<String>,
}

/// A bulk change to dead letters: the ids given, or every match of a filter.
#[derive(Debug, Args)]
pub(crate) struct BulkArgs {
    /// The store's URL.
    pub(crate) url: String,
    /// The dead letters' ids; or none, with --all or a filter.
    pub(crate) ids: Vec<String>,
    /// Every dead letter (narrowed by --kind, --prefix, --from, --until).
    #[arg(long)]
    pub(crate) all: bool,
    #[command(flatten)]
    pub(crate) narrow: Narrow,
    /// At most this many.
    #[arg(long, default_value_t = 1000)]
    pub(crate) max: usize,
    /// Count what would change, change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Do not ask: needed for a bulk change when not at a terminal.
    #[arg(long, short)]
    pub(crate) yes: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Counts by kind and state, paused kinds, the next deadline and the lag.
    Status {
        /// The store's URL.
        url: String,
    },
    /// List items in one state, a page at a time.
    Ls {
        /// The store's URL.
        url: String,
        /// Which state.
        #[arg(long, value_enum, default_value = "pending")]
        state: StateArg,
        #[command(flatten)]
        narrow: Narrow,
        #[command(flatten)]
        paging: Paging,
    },
    /// One item in full: state, attempts, last error, lease, payload.
    Show {
        /// The store's URL.
        url: String,
        /// The item's id.
        id: String,
        /// Write the payload's bytes to stdout, nothing else.
        #[arg(long, conflicts_with = "json")]
        raw: bool,
    },
    /// List dead letters with their errors.
    Dead {
        /// The store's URL.
        url: String,
        #[command(flatten)]
        narrow: Narrow,
        #[command(flatten)]
        paging: Paging,
    },
    /// Move dead letters back to pending (due now, attempts 0).
    Requeue(BulkArgs),
    /// Delete dead letters.
    Purge(BulkArgs),
    /// Cancel items wherever they are (pending, in flight or dead).
    Cancel {
        /// The store's URL.
        url: String,
        /// The items' ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Pause a kind for the whole fleet: claims skip it, its items wait.
    Pause {
        /// The store's URL.
        url: String,
        /// The kind.
        kind: String,
    },
    /// Resume a paused kind.
    Resume {
        /// The store's URL.
        url: String,
        /// The kind.
        kind: String,
    },
    /// Durable calendar schedules: rule, next and last fire, misfire policy.
    Schedules {
        /// The store's URL.
        url: String,
    },
    /// Fire a durable calendar schedule now (its regular fires go on).
    Fire {
        /// The store's URL.
        url: String,
        /// The schedule's name.
        name: String,
    },
    /// The changes operators made, newest first.
    Audit {
        /// The store's URL.
        url: String,
        /// At most this many records.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Serve the web console.
    Console {
        /// The store's URL.
        url: String,
        /// Where to listen. Anything but loopback makes every page need the token.
        #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR:PORT")]
        listen: SocketAddr,
        /// The token changes need (default: a random one, printed at start).
        #[arg(long, env = "SCHEDPOOL_CONSOLE_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// How often the charts sample the store.
        #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
        sample_every: Duration,
    },
}

impl Command {
    /// The store's URL the command names.
    pub(crate) fn url(&self) -> &str {
        match self {
            Command::Status { url }
            | Command::Ls { url, .. }
            | Command::Show { url, .. }
            | Command::Dead { url, .. }
            | Command::Cancel { url, .. }
            | Command::Pause { url, .. }
            | Command::Resume { url, .. }
            | Command::Schedules { url }
            | Command::Fire { url, .. }
            | Command::Audit { url, .. }
            | Command::Console { url, .. } => url,
            Command::Requeue(b) | Command::Purge(b) => &b.url,
        }
    }
}
