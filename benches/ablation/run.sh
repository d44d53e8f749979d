#!/usr/bin/env bash
# Rounds FIRST..ROUNDS (default 1..7); in each, every variant once over W1-W9,
# W4L and W9L (`workloads --impl schedpool`), the order rotated by one each
# round. W9/W9L at SCHEDPOOL_BENCH_W9_RATE (default here 25000 per producer and
# second). Raw CSVs in target/ablation/raw/<V>-r<N>.csv, a log in runs.log.
# Then: python3 benches/ablation/analyze.py [md]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT/target/ablation"
FIRST=${FIRST:-1}
ROUNDS=${ROUNDS:-7}
read -r -a VARS <<<"${VARS:-V0 V1 V2 V3 V4 V5 V6 V67 V7 V8}"
K=${#VARS[@]}
export SCHEDPOOL_BENCH_W9_RATE=${SCHEDPOOL_BENCH_W9_RATE:-25000}
export SCHEDPOOL_BENCH_OUT="$ROOT/target/ablation/out"
mkdir -p raw
echo "start $(date -u +%FT%TZ) rounds=$FIRST..$ROUNDS vars=${VARS[*]} W9 rate $SCHEDPOOL_BENCH_W9_RATE" >>runs.log
for r in $(seq "$FIRST" "$ROUNDS"); do
    for i in $(seq 0 $((K - 1))); do
        v=${VARS[$(((i + r - 1) % K))]}
        l0=$(cut -d' ' -f1-3 /proc/loadavg)
        t0=$(date +%s)
        "./bin/$v" --impl schedpool --run "$r" --csv "raw/$v-r$r.csv" >"raw/$v-r$r.txt" 2>&1
        rc=$?
        echo "r$r $v rc=$rc $(date -u +%T) $(($(date +%s) - t0))s load $l0 -> $(cut -d' ' -f1-3 /proc/loadavg)" >>runs.log
    done
done
echo "end $(date -u +%FT%TZ)" >>runs.log
