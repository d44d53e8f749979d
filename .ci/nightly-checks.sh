#!/usr/bin/env bash
# Miri (.ci/miri.sh) and ThreadSanitizer (.ci/tsan.sh) over the tests of the
# crate's `unsafe`, where the machine can have them: both need a nightly
# toolchain with `rust-src`, Miri its `miri` component too. This script adds
# the components itself (`rustup component add`: seconds where rustup's
# servers answer, nothing to fetch where they are installed already).
#
# A tool that cannot be had (no rustup, no nightly, rustup's servers not
# reachable, a nightly without miri, a host TSan does not support) is
# reported as NOT RUN, with the reason, and this script still exits 0:
# valgrind memcheck (.ci/valgrind.sh, the step before in .ci/run, needing
# nothing fetched) is the check that always runs. A tool that is there and
# fails fails this script.
set -euo pipefail
cd "$(dirname "$0")/.."

ran=()
missed=()
not_run() { # TOOL REASON
  printf '%s: NOT RUN: %s\n' "$1" "$2"
  missed+=("$1")
}
summary() {
  printf 'unsafe checks: ran %s%s\n' "${ran[*]:-no nightly tool}" \
    "${missed[*]:+; did NOT run: ${missed[*]}}"
  printf '(valgrind memcheck, .ci/valgrind.sh, runs in any case)\n'
}

nightly_why=""
if ! command -v rustup >/dev/null 2>&1; then
  nightly_why="rustup is not installed"
elif ! rustup run nightly rustc --version >/dev/null 2>&1; then
  nightly_why="no nightly toolchain (rustup toolchain install nightly)"
fi
if [ -n "$nightly_why" ]; then
  not_run miri "$nightly_why"
  not_run tsan "$nightly_why"
  summary
  exit 0
fi

installed() { rustup component list --installed --toolchain nightly 2>/dev/null | grep -q "^$1"; }
add() { # COMPONENT: adds it; prints rustup's error and returns 1 if it is still missing
  local out start=$SECONDS
  if out=$(timeout 300 rustup component add "$1" --toolchain nightly 2>&1); then
    printf '%s (%ss)\n' "$out" "$((SECONDS - start))"
  else
    printf '%s\n' "$out"
  fi
  installed "$1"
}
echo "adding rust-src and miri to the nightly toolchain (rustup component add)"
have_src=yes have_miri=yes
add rust-src || have_src=""
add miri || have_miri=""

if [ -z "$have_src" ]; then
  not_run miri "the nightly toolchain has no rust-src and rustup could not add it (above)"
elif [ -z "$have_miri" ]; then
  not_run miri "the nightly toolchain has no miri and rustup could not add it (above)"
else
  .ci/miri.sh
  ran+=(miri)
fi

host=$(rustup run nightly rustc -vV | sed -n 's/^host: //p')
if [ -z "$have_src" ]; then
  not_run tsan "the nightly toolchain has no rust-src (for -Zbuild-std) and rustup could not add it (above)"
else
  case "$host" in
    x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu)
      .ci/tsan.sh
      ran+=(tsan)
      ;;
    *) not_run tsan "ThreadSanitizer is not supported on $host" ;;
  esac
fi
summary
