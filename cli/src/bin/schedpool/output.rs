//! Output: tables for people (comfy-table), JSON for scripts, and the
//! error line on stderr.
//!
//! Invariant: with `--json`, stdout holds exactly one JSON document (the
//! result, or `{"error": {...}}`), whatever happens.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, ContentArrangement, Table};
use serde::Serialize;

use schedpool_cli::Error;

/// Where results go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Out {
    pub(crate) json: bool,
}

impl Out {
    /// Prints `value` as JSON (in `--json` mode) or runs `human`.
    pub(crate) fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce()) {
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(value).expect("views serialise")
            );
        } else {
            human();
        }
    }

    /// Reports `err` on stderr (and as JSON on stdout in `--json` mode).
    pub(crate) fn error(&self, err: &Error) {
        if self.json {
            let doc = serde_json::json!({
                "error": { "kind": err.kind().name(), "exit_code": err.kind().exit_code(), "message": err.message() }
            });
            println!("{doc}");
        }
        eprintln!("schedpool: {err}");
    }
}

/// A table with `header`, for a terminal or a log.
pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().copied().map(Cell::new));
    t
}

/// A right-aligned number cell.
pub(crate) fn num(n: impl std::fmt::Display) -> Cell {
    Cell::new(n).set_alignment(CellAlignment::Right)
}

/// `text` cut to `max` characters, with `…` when cut, on one line.
pub(crate) fn short(text: &str, max: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
