//! `schedpool`: operate schedpool's durable timeouts from a shell.
//!
//! Layers: `args` (the command line), `output` (tables, JSON, errors),
//! `read` and `change` (the verbs), `serve` (the console), this file
//! (opening the store, dispatch, the exit code).

mod args;
mod change;
mod output;
mod read;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use schedpool_cli::{BulkAction, Error, ErrorKind, OpenOptions, Store};

use args::{Cli, Command};
use output::Out;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = Out {
        json: cli.global.json,
    };
    match run(cli, out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            out.error(&e);
            ExitCode::from(e.kind().exit_code())
        }
    }
}

/// The operator's name: --by, $SCHEDPOOL_BY, $USER, $LOGNAME.
fn operator(by: Option<String>) -> String {
    by.or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

fn run(cli: Cli, out: Out) -> Result<(), Error> {
    let g = cli.global;
    let queue = g.queue.ok_or_else(|| {
        Error::new(
            ErrorKind::Usage,
            "give the queue name with --queue NAME (or $SCHEDPOOL_QUEUE): the name your services \
             pass to SqliteBackend::open, RedisBackend::connect or PostgresBackend::connect",
        )
    })?;
    let opts = OpenOptions {
        schema: g.schema,
        ca_file: g.ca,
        timeout: g.timeout,
        ..OpenOptions::new(&queue)
    };
    let store = Store::open(cli.command.url(), &opts)?;
    let by = operator(g.by);
    match cli.command {
        Command::Status { .. } => read::status(&store, out),
        Command::Ls {
            state,
            narrow,
            paging,
            ..
        } => read::ls(&store, out, read::state_of(state), &narrow, &paging),
        Command::Show { id, raw, .. } => read::show(&store, out, &id, raw),
        Command::Dead { narrow, paging, .. } => read::dead(&store, out, &narrow, &paging),
        Command::Requeue(args) => change::bulk(&store, out, BulkAction::Requeue, &args, &by),
        Command::Purge(args) => change::bulk(&store, out, BulkAction::Purge, &args, &by),
        Command::Cancel { ids, .. } => change::cancel(&store, out, &ids, &by),
        Command::Pause { kind, .. } => change::pause(&store, out, &kind, true, &by),
        Command::Resume { kind, .. } => change::pause(&store, out, &kind, false, &by),
        Command::Schedules { .. } => read::schedules(&store, out),
        Command::Fire { name, .. } => change::fire(&store, out, &name, &by),
        Command::Audit { limit, .. } => read::audit(&store, out, limit),
        Command::Console {
            listen,
            token,
            sample_every,
            ..
        } => serve::console(store, listen, token, sample_every),
    }
}
