//! The README's main demo (`examples/order_timeouts.rs`), run as a user runs
//! it with its output going to a log: it succeeds, closes no order early,
//! and writes plain lines (no carriage-return progress line, which a log
//! would keep as one long line). Also the examples whose output names the
//! API or counts what the guide defines: they use today's names and count
//! as the guide does.
//!
//! Each example's binary is the one `cargo test` builds beside this test
//! (examples are built, not run, by `cargo test`); when it is missing (a
//! `cargo test --test main_demo` alone), the test fails and says so.

use std::path::PathBuf;
use std::process::Command;

fn example_binary(name: &str) -> PathBuf {
    // target/<profile>/deps/main_demo-<hash> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is not built: run the README's test command (it builds the examples), \
         or `cargo build --examples` with this test's profile first",
        bin.display()
    );
    bin
}

/// Runs an example to its end; its standard output, once it succeeded.
fn run_example(name: &str) -> String {
    let out = Command::new(example_binary(name))
        .output()
        .unwrap_or_else(|e| panic!("run the example {name}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name}: {}\n{}\n{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_main_demo_closes_no_order_early_and_logs_plain_lines() {
    let stdout = run_example("order_timeouts");
    assert!(
        !stdout.contains('\r'),
        "a carriage return in piped output: {stdout:?}"
    );
    let closed_early = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("closed early"))
        .expect("a 'closed early' line");
    assert_eq!(
        closed_early.split_whitespace().nth(2),
        Some("0"),
        "{closed_early}"
    );
    assert!(
        stdout.contains("pool terminated           true"),
        "{stdout}"
    );
    // About one progress line a second over ~7 s, then the summary.
    let lines = stdout.lines().count();
    assert!((5..60).contains(&lines), "{lines} lines:\n{stdout}");
}

#[test]
fn periodic_control_prints_no_removed_name() {
    let stdout = run_example("periodic_control");
    for removed in [
        "on_panic",
        "OnPanic",
        "panic handler",
        "panic_handler",
        "TaskPanic",
    ] {
        assert!(!stdout.contains(removed), "{removed:?} in:\n{stdout}");
    }
    assert!(stdout.contains("on_failure(Backoff"), "{stdout}");
    assert!(stdout.contains("failure handler: task"), "{stdout}");
}

#[test]
fn idle_connections_counts_closes_as_runs_and_re_arms_not() {
    let stdout = run_example("idle_connections");
    let runs = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("timer runs in the pool"))
        .unwrap_or_else(|| panic!("a 'timer runs' line in:\n{stdout}"));
    // One run per connection (its close); re-arms are not runs (the guide,
    // "Idle timers").
    assert_eq!(runs.split_whitespace().nth(5), Some("400"), "{runs}");
    assert!(!runs.contains("re-arms +"), "{runs}");
}
