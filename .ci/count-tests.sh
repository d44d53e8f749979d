#!/usr/bin/env bash
# Counts the tests of a revision, so a reorganisation of tests/ can show that none was lost.
#
#   .ci/count-tests.sh [REV]          counts per tree: #[test] functions, loom models
#   .ci/count-tests.sh --names [REV]  one line per #[test] function: "name path"
#
# REV defaults to the work tree (uncommitted files included). A #[test] is counted in
# every file under tests/ and src/ (proptest! blocks included); a loom model is a
# `loom::model(` call in a file under tests/ that is compiled only with --cfg loom.
set -euo pipefail
cd "$(dirname "$0")/.."

names=0
if [ "${1:-}" = "--names" ]; then names=1; shift; fi
rev="${1:-}"

files() { # $1: tree
  if [ -n "$rev" ]; then git ls-tree -r --name-only "$rev" -- "$1"; else git ls-files -co --exclude-standard -- "$1"; fi | grep '\.rs$'
}
show() { # $1: path
  if [ -n "$rev" ]; then git show "$rev:$1"; else cat "$1"; fi
}
# "name path" for each #[test]: the first `fn NAME` after the attribute (`$name` in a macro).
test_names() { # $1: tree
  files "$1" | while read -r f; do
    show "$f" | awk -v f="$f" '
      /^[[:space:]]*#\[test\]/ { want = 1; next }
      want && match($0, /fn \$?[A-Za-z_][A-Za-z0-9_]*/) {
        print substr($0, RSTART + 3, RLENGTH - 3), f; want = 0
      }'
  done
}

if [ "$names" = 1 ]; then
  { test_names tests; test_names src; } | sort
  exit 0
fi
for tree in tests src; do
  printf '%-6s #[test] functions: %s\n' "$tree" "$(test_names "$tree" | wc -l)"
done
loom=0
for f in $(files tests); do
  n=$(show "$f" | grep -c 'loom::model(' || true)
  loom=$((loom + n))
done
printf 'tests  loom models (loom::model calls): %s\n' "$loom"
