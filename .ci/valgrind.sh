#!/usr/bin/env bash
# valgrind memcheck over the tests of the crate's `unsafe` (docs/design.md,
# "Checking the unsafe"): the unit tests of the task pointer and the one-shot
# task (racing ones among them) and the prefetch, then stress tests that push
# tasks through the pool. Catches use after free, double free, reads of
# freed or uninitialised memory, and leaks; not data races (valgrind runs one
# thread at a time: that is Miri's and ThreadSanitizer's job).
#
# Needs nothing fetched but Debian's `valgrind` package (installed if
# missing). Uses the release test binaries of `cargo test --release
# --all-features`, so in .ci/run, after the tests step, it builds nothing.
# Fails if valgrind cannot run, reports an error or a leak, or a filter
# below matches no test.
set -euo pipefail

# The unit tests, as libtest filters (substrings of the test paths).
UNIT_FILTERS="task::ptr::tests:: task::once::tests:: heap::tests::prefetch_ wait::slice::"
# Integration tests that run the unsafe code hard (STRESS_TESTS="" runs
# none), and their scale.
STRESS_TESTS="${STRESS_TESTS-ledger cancel handover_stress}"
export LEDGER_TASKS="${LEDGER_TASKS:-6000}" LEDGER_ROUNDS="${LEDGER_ROUNDS:-1}"

cd "$(dirname "$0")/.."
# shellcheck source=.ci/unsafe-lib.sh
. .ci/unsafe-lib.sh

if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind: not installed; installing Debian's valgrind package"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind
fi
valgrind --version

host=$(rustc -vV | sed -n 's/^host: //p')
runner_var="CARGO_TARGET_$(printf '%s' "$host" | tr 'a-z-' 'A-Z_')_RUNNER"
# Every test binary runs under memcheck. Errors and definite and indirect
# leaks fail the run (exit code 1; a failing test exits 101). Not "possibly
# lost": threads nobody joins before the process ends (libtest's test
# threads, the pool's detached workers) may still be exiting then, and
# glibc's and std's blocks for them (the TLS vector, the `Thread` handle and
# its name) are then held by interior pointers only, which memcheck calls
# "possibly lost", in a different set of blocks from run to run. A task or
# result cell this crate leaked has no pointer left to it at all: definitely
# (and its contents indirectly) lost. No suppressions.
export "$runner_var=valgrind --quiet --error-exitcode=1 --leak-check=full \
--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"
# A backtrace would be symbolised under valgrind (slow) for the test that
# expects a panic; valgrind prints its own stacks for what it finds.
export RUST_BACKTRACE=0

log=${TMPDIR:-/tmp}/valgrind-unsafe.$$.log
trap 'rm -f "$log"' EXIT
stress_args=()
for t in $STRESS_TESTS; do stress_args+=(--test "$t"); done

start=$SECONDS
# shellcheck disable=SC2086 # the filters are words
# The same package selection and features as the test step, so its
# binaries are reused (`-p schedpool` would resolve features anew and rebuild).
cargo test --release --all-features --lib -- $UNIT_FILTERS 2>&1 | tee "$log"
# shellcheck disable=SC2086
check_filters "$log" $UNIT_FILTERS
if [ ${#stress_args[@]} -gt 0 ]; then
  cargo test --release --all-features "${stress_args[@]}" -- --include-ignored 2>&1 | tee -a "$log"
fi
passed=$(grep -Eo '^test result: ok\. [0-9]+ passed' "$log" | awk '{ n += $4 } END { print n + 0 }')
printf 'valgrind: ran memcheck over %s tests (unit: %s; stress: %s): no errors, no leaks (%ss)\n' \
  "$passed" "$UNIT_FILTERS" "$STRESS_TESTS" "$((SECONDS - start))"
