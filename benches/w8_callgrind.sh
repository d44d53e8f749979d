#!/usr/bin/env bash
# W8 in instructions: callgrind counts the instructions of the cancels alone
# (benches/cancel_ops.rs), for 1k, 10k, 100k and 1M pending tasks, on
# schedpool and scheduled-thread-pool. Exact and repeatable, unlike W8's
# nanoseconds, which also measure the cache. Writes
# target/bench-results/w8-instructions.csv for benches/charts.py. Needs valgrind (installs
# Debian's when missing). Takes about three minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
  echo "installing valgrind" >&2
  (apt-get update -qq && apt-get install -y -qq valgrind) >/dev/null
fi

bin=$(cargo bench --bench cancel_ops --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p')
[ -x "$bin" ] || { echo "cancel_ops did not build" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
results=${CARGO_TARGET_DIR:-target}/bench-results
mkdir -p "$results"
csv="$results/w8-instructions.csv"
echo "impl,pending,cancels,instructions_per_cancel" > "$csv"

printf '| pool | pending | cancels | instructions per cancel | vs 1k | log2(n) vs 1k |\n'
printf '|---|---|---|---|---|---|\n'
for pool in schedpool stp; do
  base=""
  for n in 1000 10000 100000 1000000; do
    k=$(( n / 10 < 10000 ? n / 10 : 10000 ))
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
      --toggle-collect='cancel_ops::cancel_batch*' "$bin" "$pool" "$n" "$k" \
      >/dev/null 2>"$out/log"
    ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/log" | tail -1)
    per=$(awk -v ir="$ir" -v k="$k" 'BEGIN { printf "%.0f", ir / k }')
    [ -n "$base" ] || base=$per
    name=$pool; [ "$pool" = stp ] && name=scheduled-thread-pool
    echo "$name,$n,$k,$per" >> "$csv"
    printf '| %s | %s | %s | %s | %.2fx | %.2fx |\n' "$pool" "$n" "$k" "$per" \
      "$(awk -v a="$per" -v b="$base" 'BEGIN { print a / b }')" \
      "$(awk -v n="$n" 'BEGIN { print log(n) / log(1000) }')"
  done
done
echo
echo "wrote $csv; python3 benches/charts.py draws it (docs/img/w8-instructions.svg)"
