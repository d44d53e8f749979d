#!/usr/bin/env bash
# Miri over the unit tests of the crate's `unsafe` (docs/design.md,
# "Checking the unsafe"): the task pointer's and the one-shot task's tests,
# racing ones among them, and the prefetch. Miri interprets the code and
# reports undefined behaviour: use after free, double free, out-of-bounds
# and misaligned accesses, Stacked Borrows violations, and data races (its
# race detector) under the interleavings it picks.
#
# With -Zmiri-strict-provenance, as crossbeam runs it, every test. (Until
# the crate's locks became std's, a test that parked a thread ran in a
# second, permissive pass: parking_lot_core's word lock keeps a pointer in
# an integer, which strict provenance refuses.)
#
# Needs a nightly toolchain with the miri and rust-src components (.ci/run
# adds them through .ci/nightly-checks.sh where it can); fails without them.
# Runs on a copy of the crate without its dev-dependencies (.ci/unsafe-lib.sh).
set -euo pipefail

# The tests, as libtest filters (substrings of the test paths).
UNIT_FILTERS="task::ptr::tests:: task::once::tests:: heap::tests::prefetch_"

cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=.ci/unsafe-lib.sh
. "$root/.ci/unsafe-lib.sh"

if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri: the nightly toolchain has no miri (rustup component add miri rust-src --toolchain nightly)" >&2
  exit 1
fi
cargo +nightly miri --version

tree=$(make_unsafe_tree "$root" "$root/target/unsafe-tree")
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export RUST_BACKTRACE=0
log=${TMPDIR:-/tmp}/miri-unsafe.$$.log
trap 'rm -f "$log"' EXIT

start=$SECONDS
cd "$tree"
# Builds (or finds) Miri's own std; a minute or two the first time.
cargo +nightly miri setup
# shellcheck disable=SC2086 # the filters are words
MIRIFLAGS="-Zmiri-strict-provenance" \
  cargo +nightly miri test --lib -- $UNIT_FILTERS 2>&1 | tee "$log"
# shellcheck disable=SC2086
check_filters "$log" $UNIT_FILTERS
passed=$(grep -Eo '^test result: ok\. [0-9]+ passed' "$log" | awk '{ n += $4 } END { print n + 0 }')
printf 'miri: ran %s tests (%s), strict provenance: no undefined behaviour (%ss)\n' \
  "$passed" "$UNIT_FILTERS" "$((SECONDS - start))"
