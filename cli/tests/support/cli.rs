//! Running the `schedpool` binary the package builds.

#![allow(dead_code)]

use std::process::{Command, Output};

use super::QUEUE;

/// Runs the binary with `args` (as the operator `tester`).
pub fn schedpool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedpool"))
        .args(args)
        .env_remove("SCHEDPOOL_QUEUE")
        .env("SCHEDPOOL_BY", "tester")
        .output()
        .expect("run schedpool")
}

/// Its stdout, once it succeeded.
pub fn ok(args: &[&str]) -> String {
    let out = schedpool(args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// `--json --queue orders` and `args`: the one JSON document it prints.
pub fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json", "--queue", QUEUE];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(&all)).expect("one JSON document")
}

/// Its exit code and stderr.
pub fn code(args: &[&str]) -> (i32, String) {
    let out = schedpool(args);
    (
        out.status.code().expect("an exit code"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
