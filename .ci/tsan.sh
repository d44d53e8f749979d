#!/usr/bin/env bash
# ThreadSanitizer over the tests of the crate's `unsafe` (docs/design.md,
# "Checking the unsafe"): the unit tests of the task pointer and the one-shot
# task (racing ones among them) and the prefetch, then stress tests that push
# tasks through the pool on real threads. Reports data races: two accesses,
# one a write (a free counts as one), with no happens-before between them.
# std is rebuilt with the sanitizer (-Zbuild-std), so its atomics and
# locks are seen too.
#
# Needs a nightly toolchain with rust-src (.ci/run adds it through
# .ci/nightly-checks.sh where it can) on x86_64 or aarch64 Linux; fails
# without them. Runs on a copy of the crate without its dev-dependencies
# (.ci/unsafe-lib.sh).
set -euo pipefail

# The unit tests, as libtest filters (substrings of the test paths).
UNIT_FILTERS="task::ptr::tests:: task::once::tests:: heap::tests::prefetch_"
# Integration tests that run the unsafe code hard (STRESS_TESTS="" runs
# none), and their scale (TSan
# costs 5-15x in time and memory).
STRESS_TESTS="${STRESS_TESTS-ledger cancel handover_stress one_shot}"
export LEDGER_TASKS="${LEDGER_TASKS:-50000}" LEDGER_ROUNDS="${LEDGER_ROUNDS:-2}"

cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=.ci/unsafe-lib.sh
. "$root/.ci/unsafe-lib.sh"

fail() { printf 'tsan: %s\n' "$*" >&2; exit 1; }
rustup run nightly rustc --version >/dev/null 2>&1 || fail "no nightly toolchain"
rustup component list --toolchain nightly 2>/dev/null | grep -q '^rust-src (installed)' \
  || fail "nightly has no rust-src (rustup component add rust-src --toolchain nightly)"
host=$(rustup run nightly rustc -vV | sed -n 's/^host: //p')
case "$host" in
  x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu) ;;
  *) fail "ThreadSanitizer is not supported on $host" ;;
esac
rustup run nightly rustc --version

tree=$(make_unsafe_tree "$root" "$root/target/unsafe-tree")
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
# Stop at the first report, with a non-zero exit (66).
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}/tsan"
log=${TMPDIR:-/tmp}/tsan-unsafe.$$.log
trap 'rm -f "$log"' EXIT
stress_args=()
for t in $STRESS_TESTS; do stress_args+=(--test "$t"); done

start=$SECONDS
cd "$tree"
tsan_test() { cargo +nightly test -Zbuild-std --target "$host" --release "$@"; }
# shellcheck disable=SC2086 # the filters are words
tsan_test --lib -- $UNIT_FILTERS 2>&1 | tee "$log"
# shellcheck disable=SC2086
check_filters "$log" $UNIT_FILTERS
if [ ${#stress_args[@]} -gt 0 ]; then
  tsan_test "${stress_args[@]}" -- --include-ignored 2>&1 | tee -a "$log"
fi
passed=$(grep -Eo '^test result: ok\. [0-9]+ passed' "$log" | awk '{ n += $4 } END { print n + 0 }')
printf 'tsan: ran %s tests (unit: %s; stress: %s): no data race (%ss)\n' \
  "$passed" "$UNIT_FILTERS" "$STRESS_TESTS" "$((SECONDS - start))"
