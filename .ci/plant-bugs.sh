#!/usr/bin/env bash
# Shows that the checks of the crate's `unsafe` catch what they are for:
# plants one bug at a time (a double free, a use after free, a leak, a data
# race) in a scratch copy of the tree, runs each tool's own script there
# (.ci/valgrind.sh, .ci/miri.sh, .ci/tsan.sh, unit tests only), and expects
# it to fail with the tool's own report, not merely a test's assertion.
# Never touches this tree's sources. Not part of .ci/run (some ten minutes
# on 2 cores); run it after changing the tests, the scripts or the unsafe.
#
#   .ci/plant-bugs.sh [TOOL...]       TOOL: valgrind miri tsan (default: all)
#
# Prints a table of tool, bug, caught or not, and the tool's first error
# line; the full logs stay in target/plant-bugs/. Exits non-zero if a tool
# misses a bug it is expected to catch (EXPECT below). Builds share this
# target/plant-bugs/target, never this tree's builds: cargo names the copy's
# crate as it names this tree's (by its path relative to the workspace), so
# in a shared target directory a planted build would pass for this tree's.
# The first run builds everything there once (a few minutes).
set -euo pipefail

# The files with the unsafe, relative to the tree (update after a move).
HEADER_RS=src/task/header.rs
ONCE_RS=src/task/once.rs
SLICE_RS=src/wait/slice.rs

# The bugs: name, file, the exact text, its replacement, what the bug is.
BUGS=()
declare -A FILE FROM TO WHAT
bug() { BUGS+=("$1"); FILE[$1]=$2 FROM[$1]=$3 TO[$1]=$4 WHAT[$1]=$5; }
bug double-free "$ONCE_RS" \
  'if !header.body_taken() {' \
  'if !header.body_taken() || header.body_taken() {' \
  "a task's Drop drops the body even when a run or a cancel claimed (moved out and dropped) it already"
bug use-after-free "$HEADER_RS" \
  'self.refs.fetch_sub(1, Ordering::AcqRel) == 1' \
  'self.refs.fetch_sub(1, Ordering::AcqRel) == 2' \
  "TaskPtr's Drop frees the task when the count goes from 2 to 1, while a reference is still live"
bug leak "$HEADER_RS" \
  'self.refs.fetch_sub(1, Ordering::AcqRel) == 1' \
  'self.refs.fetch_sub(1, Ordering::AcqRel) == 0' \
  "TaskPtr's Drop never frees the task (the old count is never 0)"
bug data-race "$HEADER_RS" \
  'self.refs.fetch_sub(1, Ordering::AcqRel) == 1' \
  'self.refs.fetch_sub(1, Ordering::Release) == 1' \
  "TaskPtr's final decrement is Release only, so the freeing thread does not acquire the other holders' accesses"
bug uninit-syscall "$SLICE_RS" \
  '&attr as *const SchedAttr' \
  'std::mem::MaybeUninit::<SchedAttr>::uninit().as_ptr()' \
  "sched_setattr is handed a sched_attr that was never written (its size included)"
# tool:bug pairs each tool must catch. valgrind runs one thread at a time
# and cannot see a race. Miri checks for leaks only when the program ends
# normally, and on the leak the tests' own drop counters fail first (a
# failing libtest binary calls exit), so Miri has no say there. TSan is no heap checker: it reports a free racing
# a use on another thread, and an access to freed memory it happens to meet,
# but not a double free as such (its failures on that bug are incidental).
# The system call's block is compiled out under Miri, and TSan does not run
# its test: only valgrind checks it.
EXPECT="valgrind:double-free valgrind:use-after-free valgrind:leak valgrind:uninit-syscall miri:double-free miri:use-after-free miri:data-race tsan:data-race"
# Each tool's own report (an extended regex on its output).
declare -A REPORT=(
  [valgrind]='^==[0-9]+== (Invalid (read|write|free)|Mismatched free|Conditional jump|Use of uninitialised|Syscall param|[0-9,]+ bytes in [0-9,]+ blocks are definitely lost)'
  [miri]='error: (Undefined Behavior|memory leaked)'
  [tsan]='WARNING: ThreadSanitizer'
)

cd "$(dirname "$0")/.."
root=$PWD
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(valgrind miri tsan)
logs=$root/target/plant-bugs
builds=$root/target/plant-bugs-target
rm -rf "$logs"
mkdir -p "$logs" "$builds"
# One fixed path for every bug's copy, in every run: Miri's test "binary" is
# a stub that names the source it interprets by its path, and cargo keeps it
# once made.
tree=$root/target/plant-bugs-tree
trap 'rm -rf "$tree"' EXIT

table=()
missed=0
for bug in "${BUGS[@]}"; do
  file=${FILE[$bug]} from=${FROM[$bug]} to=${TO[$bug]} what=${WHAT[$bug]}
  rm -rf "$tree"
  mkdir -p "$tree"
  tar -C "$root" --exclude=./target --exclude=./.git -cf - . | tar -C "$tree" -xf -
  # Newer than any earlier bug's build, so cargo rebuilds the crate.
  find "$tree/src" "$tree/tests" -name '*.rs' -exec touch {} +
  FROM=$from TO=$to perl -0777 -pi -e 's/\Q$ENV{FROM}\E/$ENV{TO}/ or die "plant-bugs: the text to replace is not in the file\n"' "$tree/$file"
  printf '\n=== planted %s in %s: %s\n' "$bug" "$file" "$what"
  diff -u "$root/$file" "$tree/$file" | sed -n '3,$p' | grep '^[-+]' || true
  for tool in "${tools[@]}"; do
    log=$logs/$tool-$bug.log
    printf -- '--- %s (log: %s)\n' "$tool" "${log#"$root"/}"
    start=$SECONDS
    if CARGO_TARGET_DIR=$builds STRESS_TESTS="" "$tree/.ci/$tool.sh" >"$log" 2>&1; then
      rc=0
    else
      rc=$?
    fi
    line=$(grep -Em1 "${REPORT[$tool]}" "$log" || true)
    if [ "$rc" -ne 0 ] && [ -n "$line" ]; then
      caught=yes
    elif [ "$rc" -ne 0 ]; then
      caught="no (failed, but without a $tool report)"
      line=$(grep -Em1 'panicked|error' "$log" || true)
    else
      caught=no
    fi
    expected=no
    case " $EXPECT " in *" $tool:$bug "*) expected=yes ;; esac
    if [ "$expected" = yes ] && [ "$caught" != yes ]; then missed=1; fi
    printf '%s -> %s: caught %s (expected: %s; exit %s; %ss)\n  %s\n' \
      "$tool" "$bug" "$caught" "$expected" "$rc" "$((SECONDS - start))" "${line:-(no error line)}"
    table+=("$(printf '%-8s | %-14s | %-3s | %-8s | %s' "$tool" "$bug" "${caught%% *}" "$expected" "${line:-}")")
  done
done

printf '\n%-8s | %-14s | %-6s | %-8s | %s\n' tool bug caught expected "first report line"
printf '%s\n' "${table[@]}"
if [ "$missed" -ne 0 ]; then
  echo "plant-bugs: a tool missed a bug it is expected to catch" >&2
  exit 1
fi
echo "plant-bugs: every tool caught every bug it is expected to catch"
