#!/usr/bin/env bash
# The header-free wheel fill, re-measured (issue 33, item 4). Two `workloads`
# binaries: V0, the code as it is (the ready batch's fill moves the wheel's
# run without reading headers, so `Location::Wheel` has three meanings), and
# wheel-fill, V0 with wheel-fill.patch (the fill reads every header and marks
# it `Ready`, a slot's tasks record `Location::Run` when it joins the run, and
# `Location::Wheel` means "in a slot"). Then ROUNDS rounds (default 20) of W3
# and W7, one process per run, both variants in each round, the one that goes
# first alternating. Raw CSVs in $OUT/<V>-r<N>.csv (default
# target/ablation/wheel-fill). The summary pools the directories it is given:
# per round the ratio without / with the fill (wheel-fill / V0), its median,
# range and the rounds it was better in, and the median cache-line transfer
# W7 started with (`line xfer before`; benches/README.md, the placements).
# W3 never enters the wheel: it is the control.
#
#   benches/ablation/wheel-fill.sh build     # needs a clean src/
#   benches/ablation/wheel-fill.sh run       # on a machine running nothing else
#   benches/ablation/wheel-fill.sh summary [DIR...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT=${OUT:-target/ablation/wheel-fill}
case "${1:-}" in
build)
    benches/ablation/build.sh V0 wheel-fill
    ;;
run)
    mkdir -p "$OUT"
    ROUNDS=${ROUNDS:-20}
    FIRST=${FIRST:-1}
    echo "start $(date -u +%FT%TZ) rounds=$FIRST..$ROUNDS" >>"$OUT/runs.log"
    for r in $(seq "$FIRST" "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then order="V0 wheel-fill"; else order="wheel-fill V0"; fi
        for v in $order; do
            l0=$(cut -d' ' -f1-3 /proc/loadavg)
            target/ablation/bin/$v --impl schedpool --only W3,W7 --run "$r" \
                --csv "$OUT/$v-r$r.csv" >"$OUT/$v-r$r.txt" 2>&1
            echo "r$r $v rc=$? $(date -u +%T) load $l0" >>"$OUT/runs.log"
        done
    done
    echo "end $(date -u +%FT%TZ)" >>"$OUT/runs.log"
    ;;
summary)
    shift
    python3 - "${@:-$OUT}" <<'EOF'
import csv, glob, os, re, statistics, sys
WITH, WITHOUT = 'V0', 'wheel-fill'
vals = {}  # (variant, round) -> {(workload, metric): value}
# Each directory named is one batch; its rounds are pooled with the others'.
for i, out in enumerate(sys.argv[1:]):
    for f in glob.glob(os.path.join(out, '*-r*.csv')):
        m = re.match(r'(.+)-r(\d+)\.csv$', os.path.basename(f))
        d = vals.setdefault((m.group(1), 1000 * i + int(m.group(2))), {})
        for row in csv.DictReader(open(f)):
            try:
                d[(row['workload'], row['metric'])] = float(row['value'])
            except ValueError:
                pass
rounds = sorted({r for (_, r) in vals if (WITH, r) in vals and (WITHOUT, r) in vals})
print('rounds:', len(rounds))
xfer = [vals[(v, r)].get(('W7', 'line xfer before'), float('nan'))
        for r in rounds for v in (WITH, WITHOUT)]
xfer = [x for x in xfer if x == x]
if xfer:
    print('W7 line xfer before: median %.0f ns [%.0f..%.0f]'
          % (statistics.median(xfer), min(xfer), max(xfer)))
for w, metric in (('W7', 'throughput'), ('W3', 'throughput'),
                  ('W7', 'cpu all threads'), ('W3', 'cpu all threads')):
    key = (w, metric)
    rs = [r for r in rounds if key in vals[(WITH, r)] and key in vals[(WITHOUT, r)]]
    if not rs:
        continue
    unit, name = (1e6, 'M/s') if metric == 'throughput' else (1, 'ns/task')
    a = [vals[(WITHOUT, r)][key] for r in rs]
    b = [vals[(WITH, r)][key] for r in rs]
    q = [x / y for x, y in zip(a, b)]
    better = sum(x > 1 if metric == 'throughput' else x < 1 for x in q)
    print('%s %-15s n=%2d  without the fill %.4g, with it %.4g (medians, %s); '
          'ratio without/with median %.3f [%.3f..%.3f], without better in %d of %d'
          % (w, metric, len(rs), statistics.median(a) / unit, statistics.median(b) / unit,
             name, statistics.median(q), min(q), max(q), better, len(q)))
EOF
    ;;
*)
    echo "usage: $0 build|run|summary" >&2
    exit 2
    ;;
esac
