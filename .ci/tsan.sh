#!/usr/bin/env bash
# ThreadSanitizer over the concurrency stress tests (ledger, panics, huge
# durations, one-shot chains, delay queue, cancel, shutdown, the ready batch) and the unit tests (among them the racing
# tests of `task_ptr.rs` and `once.rs`, the crate's `unsafe`). Needs a nightly toolchain with rust-src
# (-Zbuild-std rebuilds std with the sanitizer); skips with a message, and
# exit code 0, where that is unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { printf 'tsan: skipped: %s\n' "$*"; exit 0; }

command -v rustup >/dev/null || skip "rustup not found"
rustup run nightly rustc --version >/dev/null 2>&1 || skip "no nightly toolchain"
rustup component list --toolchain nightly 2>/dev/null | grep -q '^rust-src (installed)' \
  || skip "nightly has no rust-src (rustup component add rust-src --toolchain nightly)"
host=$(rustup run nightly rustc -vV | sed -n 's/^host: //p')
case "$host" in
  x86_64-unknown-linux-gnu|aarch64-unknown-linux-gnu) ;;
  *) skip "TSan is not supported on $host" ;;
esac

# Scaled down: TSan costs 5-15x in time and memory.
export LEDGER_TASKS="${LEDGER_TASKS:-100000}" LEDGER_ROUNDS="${LEDGER_ROUNDS:-2}"
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/tsan}"
cargo +nightly test -Zbuild-std --target "$host" --release \
  --lib --test ledger --test panics --test huge_durations --test one_shot --test model \
  --test delay_queue --test cancel --test shutdown --test ready_batch \
  -- --include-ignored
