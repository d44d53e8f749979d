#!/usr/bin/env bash
# Runs the workloads W1–W9 of the "Performance" issue, and W4L and W9L (W4 and W9
# while two busy loops hold both cores), on the three schedulers
#   schedpool              (this crate)                 benches/workloads.rs
#   scheduled-thread-pool  (crates.io, 0.2)             benches/workloads.rs
#   jdk17-stpe             (JDK 17 ScheduledThreadPoolExecutor, 2 threads,
#                           removeOnCancel)               benches/jdk/StpeBench.java
#                           (W1–W8 only: with --only naming none of them, the JDK is skipped)
# N times each (one process per scheduler and run, the order rotated every run),
# then prints ONE table (median [min..max] over the runs) and writes
#   target/bench-results/summary.csv   workload,metric,unit,impl,runs,median,min,max
#   target/bench-results/runs/*.csv    the raw per-run numbers (+ .json)
#   target/bench-results/raw/          W4 lateness samples (ns), per scheduler and run
#   docs/img/*.svg                     charts (benches/charts.py, python3 stdlib only)
#
# usage: benches/compare.sh [-n RUNS] [--quick] [--only W1,W4,...] [--criterion]
#                           [--no-jdk] [--no-charts] [--img DIR]
#   -n RUNS       runs per scheduler (default 3)
#   --only LIST   workloads, e.g. W4,W9,W4L,W9L (default all)
#   --quick       SCHEDPOOL_BENCH_QUICK=1: scaled-down smoke run (seconds); results go
#                 to target/bench-results/quick/ and charts there too, not to docs/img
#   --criterion   afterwards also run the criterion bench `peer_compare` (adds ~3–4 min)
#   --img DIR     write the charts to DIR instead of docs/img
# Honours CARGO_TARGET_DIR. Benchmarks mean something only on an otherwise idle
# machine: the load average at start and end of every run is kept in runs/*.json.
set -euo pipefail

RUNS=3
QUICK=0
ONLY=""
CRITERION=0
JDK=1
CHARTS=1
IMG_DIR=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n) RUNS="$2"; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --only) ONLY="$2"; shift 2 ;;
        --criterion) CRITERION=1; shift ;;
        --no-jdk) JDK=0; shift ;;
        --no-charts) CHARTS=0; shift ;;
        --img) IMG_DIR="$2"; shift 2 ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

# The JDK side has W1–W8 only.
if [ -n "$ONLY" ] && ! echo ",$ONLY," | tr 'a-z' 'A-Z' | grep -qE ',W[1-8],'; then
    JDK=0
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
START=$(date +%s)

if [ "$QUICK" = 1 ]; then
    export SCHEDPOOL_BENCH_QUICK=1
    OUT="$ROOT/target/bench-results/quick"
    IMG="$OUT/img"
else
    unset SCHEDPOOL_BENCH_QUICK || true
    OUT="$ROOT/target/bench-results"
    IMG="$ROOT/docs/img"
fi
[ -n "$IMG_DIR" ] && IMG="$(mkdir -p "$IMG_DIR" && cd "$IMG_DIR" && pwd)"
export SCHEDPOOL_BENCH_OUT="$OUT"
rm -rf "$OUT/runs" "$OUT/raw"
mkdir -p "$OUT/runs" "$OUT/raw"

log() { echo "== $*" >&2; }

# ---- JDK -------------------------------------------------------------------
if [ "$JDK" = 1 ]; then
    if ! command -v javac >/dev/null 2>&1; then
        log "javac not found: installing openjdk-17-jdk-headless"
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
        else
            sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
        fi
    fi
    JAVA_MAJOR=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
    if [ "${JAVA_MAJOR:-0}" != 17 ]; then
        log "warning: java is version ${JAVA_MAJOR:-?}, not 17 (still used)"
    fi
    mkdir -p "$ROOT/target/jdk-bench"
    log "javac benches/jdk/StpeBench.java -> target/jdk-bench/"
    javac -d "$ROOT/target/jdk-bench" "$ROOT/benches/jdk/StpeBench.java"
fi

# ---- Rust ------------------------------------------------------------------
log "cargo bench --bench workloads --no-run"
BUILD_LOG="$OUT/build.log"
if ! cargo bench --bench workloads --no-run >"$BUILD_LOG" 2>&1; then
    tail -30 "$BUILD_LOG" >&2
    exit 1
fi
BIN=$(sed -n 's/.*Executable .*workloads\.rs (\(.*\))$/\1/p' "$BUILD_LOG" | tail -1)
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "could not find the workloads executable in $BUILD_LOG" >&2
    exit 1
fi

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
    echo "rustc: $(rustc --version 2>/dev/null)"
    [ "$JDK" = 1 ] && echo "java: $(java -version 2>&1 | head -2 | tr '\n' ' ')"
    echo "runs: $RUNS  quick: $QUICK  only: ${ONLY:-all}"
    echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
} >"$OUT/machine.txt"

ONLY_ARGS=()
[ -n "$ONLY" ] && ONLY_ARGS=(--only "$ONLY")

IMPLS=(schedpool scheduled-thread-pool)
[ "$JDK" = 1 ] && IMPLS+=(jdk17-stpe)

# Where the vCPUs sit, before and after every run (ns for a cache line to move
# between two cores; see line_transfer_ns in benches/common/mod.rs): on a shared
# VM the host switches between placements, and W3, W5 and W7 follow them.
PLACEMENT="$OUT/placement.csv"
echo "impl,run,line_xfer_before_ns,line_xfer_after_ns" >"$PLACEMENT"

run_one() { # impl run
    local impl="$1" r="$2" csv="$OUT/runs/$1-r$2.csv" before after
    before=$(timeout 10 "$BIN" --probe 2>/dev/null || echo NaN)
    log "run $r/$RUNS: $impl (loadavg $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null), line transfer $before ns)"
    if [ "$impl" = jdk17-stpe ]; then
        java -Xms3g -Xmx3g -cp "$ROOT/target/jdk-bench" StpeBench --run "$r" --csv "$csv" \
            --out-dir "$OUT" "${ONLY_ARGS[@]}" >"$OUT/runs/$impl-r$r.txt" 2>&1
    else
        "$BIN" --impl "$impl" --run "$r" --csv "$csv" "${ONLY_ARGS[@]}" >"$OUT/runs/$impl-r$r.txt" 2>&1
    fi || { echo "run failed: $impl r$r (see $OUT/runs/$impl-r$r.txt)" >&2; tail -20 "$OUT/runs/$impl-r$r.txt" >&2; exit 1; }
    after=$(timeout 10 "$BIN" --probe 2>/dev/null || echo NaN)
    echo "$impl,$r,$before,$after" >>"$PLACEMENT"
}

for r in $(seq 1 "$RUNS"); do
    k=${#IMPLS[@]}
    for i in $(seq 0 $((k - 1))); do
        run_one "${IMPLS[$(((i + r - 1) % k))]}" "$r"
    done
done
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" >>"$OUT/machine.txt"

# ---- aggregate: median and min..max per (workload, metric, impl) -----------
SUMMARY="$OUT/summary.csv"
# key order = first appearance (schedpool's rows first)
ORDER=$(for f in "$OUT"/runs/schedpool-r1.csv "$OUT"/runs/*.csv; do [ -f "$f" ] && tail -n +2 "$f"; done |
    awk -F, '{k=$2","$3","$4; if (!(k in s)) {s[k]=1; print k}}')
{
    echo "workload,metric,unit,impl,runs,median,min,max"
    for f in "$OUT"/runs/*.csv; do tail -n +2 "$f"; done |
        awk -F, '$5 != "NaN" && $5 != "nan" && $5 != "" {print $2","$3","$4","$1","$5}' |
        LC_ALL=C sort -t, -k1,1 -k2,2 -k3,3 -k4,4 -k5,5g |
        awk -F, '
            function flush(   med) {
                if (c == 0) return
                med = (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
                printf "%s,%d,%.6g,%.6g,%.6g\n", key, c, med, v[1], v[c]
                c = 0
            }
            { k = $1","$2","$3","$4; if (k != key) { flush(); key = k } v[++c] = $5 }
            END { flush() }'
} >"$SUMMARY"

# ---- the combined table ------------------------------------------------------
print_table() {
    awk -F, -v order="$ORDER" -v impls="${IMPLS[*]}" '
        function fmt(x) {
            if (x == "") return "-"
            x += 0
            if (x >= 1000 || x <= -1000) return sprintf("%.0f", x)
            if (x >= 10 || x <= -10) return sprintf("%.1f", x)
            return sprintf("%.3f", x)
        }
        NR > 1 { k = $1","$2","$3; med[k, $4] = $6; lo[k, $4] = $7; hi[k, $4] = $8; n[k, $4] = $5 }
        END {
            ni = split(impls, im, " ")
            nk = split(order, ks, "\n")
            printf "%-4s %-17s %-8s", "work", "metric", "unit"
            for (i = 1; i <= ni; i++) printf " %28s", im[i]
            printf " %8s %8s\n", "sp/stp", "sp/jdk"
            nw = split("W1 W2 W3 W4 W5 W6 W7 W8 W9 W4L W9L", ws, " ")
            for (w = 1; w <= nw; w++) for (j = 1; j <= nk; j++) {
                split(ks[j], f, ",")
                if (f[1] != ws[w]) continue
                k = ks[j]
                printf "%-4s %-17s %-8s", f[1], f[2], f[3]
                for (i = 1; i <= ni; i++) {
                    if ((k, im[i]) in med)
                        cell = fmt(med[k, im[i]]) " [" fmt(lo[k, im[i]]) ".." fmt(hi[k, im[i]]) "]"
                    else cell = "-"
                    printf " %28s", cell
                }
                s = med[k, "schedpool"]; a = med[k, "scheduled-thread-pool"]; b = med[k, "jdk17-stpe"]
                if (f[2] ~ /^line xfer/) { a = ""; b = "" } # the machine, not a scheduler
                printf " %8s %8s\n", (s != "" && a != "" && a + 0 != 0) ? sprintf("%.2fx", s / a) : "-",
                                     (s != "" && b != "" && b + 0 != 0) ? sprintf("%.2fx", s / b) : "-"
            }
        }' "$SUMMARY"
}

# ---- the targets of the issue, checked on the medians -------------------------
print_targets() {
    awk -F, '
        NR > 1 { m[$1 "|" $2 "|" $4] = $6 }
        function g(w, met, imp) { return m[w "|" met "|" imp] }
        function chk(name, ok, detail) {
            if (detail == "") { printf "  %-44s %s\n", name, "n/a"; return }
            printf "  %-44s %-4s %s\n", name, ok ? "PASS" : "MISS", detail
        }
        END {
            sp = "schedpool"; st = "scheduled-thread-pool"; jd = "jdk17-stpe"
            print "targets (on the medians):"
            a = g("W1", "schedule", sp); b = g("W1", "schedule", st)
            chk("W1 schedule <= 0.5x scheduled-thread-pool", a != "" && b != "" && a <= 0.5 * b,
                (a != "" && b != "") ? sprintf("%.1f vs %.1f ns (%.2fx)", a, b, a / b) : "")
            a = g("W2", "cancel", sp); b = g("W2", "cancel", jd)
            chk("W2 cancel <= 0.25x JDK", a != "" && b != "" && a <= 0.25 * b,
                (a != "" && b != "") ? sprintf("%.1f vs %.1f ns (%.2fx)", a, b, a / b) : "")
            a = g("W2", "retained", sp)
            chk("W2 retained <= 1 MiB", a != "" && a <= 1048576, a != "" ? sprintf("%.0f bytes", a) : "")
            a = g("W3", "throughput", sp); b = g("W3", "throughput", st)
            chk("W3 >= 2x scheduled-thread-pool", a != "" && b != "" && a >= 2 * b,
                (a != "" && b != "") ? sprintf("%.0f vs %.0f tasks/s (%.2fx)", a, b, a / b) : "")
            a = g("W4", "p50", sp); b = g("W4", "p99", sp)
            chk("W4 p50 <= 40 us, p99 <= 100 us", a != "" && b != "" && a <= 40 && b <= 100,
                (a != "" && b != "") ? sprintf("p50 %.1f us, p99 %.1f us", a, b) : "")
            a = g("W5", "runs/expected", sp)
            chk("W5 runs/expected >= 0.999", a != "" && a >= 0.999, a != "" ? sprintf("%.4f", a) : "")
            a = g("W6", "heap/task", sp)
            chk("W6 <= 64 B/task", a != "" && a <= 64, a != "" ? sprintf("%.1f B/task", a) : "")
            a = g("W7", "throughput", sp); b = g("W7", "throughput", st)
            chk("W7 >= 1.5x scheduled-thread-pool", a != "" && b != "" && a >= 1.5 * b,
                (a != "" && b != "") ? sprintf("%.0f vs %.0f tasks/s (%.2fx)", a, b, a / b) : "")
            a = g("W8", "cancel@1k", sp); b = g("W8", "cancel@1M", sp)
            if (b == "") b = g("W8", "cancel@10k", sp)
            # log2(1M)/log2(1k) = 2: allow 2x that for cache misses
            chk("W8 ~log n (cost@max / cost@1k <= 4)", a != "" && b != "" && b <= 4 * a,
                (a != "" && b != "") ? sprintf("%.1f -> %.1f ns (%.2fx)", a, b, b / a) : "")
        }' "$SUMMARY"
}

{
    echo
    echo "schedpool vs scheduled-thread-pool vs JDK 17 STPE — median [min..max] of $RUNS run(s)$([ "$QUICK" = 1 ] && echo ", QUICK mode (scaled down)")"
    cat "$OUT/machine.txt"
    echo
    print_table
    echo
    print_targets
    echo
    echo "placement (ns for a cache line to move between the two cores; ~30-90 near, ~170+ far),"
    echo "before -> after each run:"
    awk -F, 'NR > 1 { printf "  run %s  %-22s %6s -> %s\n", $2, $1, $3, $4 }' "$PLACEMENT"
    echo
    echo "W6 heap: Rust = requested bytes counted by a global allocator; JDK = heap used after System.gc()."
    echo "wall time: $(($(date +%s) - START)) s"
} | tee "$OUT/summary.txt"
echo "wrote $SUMMARY and $OUT/summary.txt" >&2

# ---- the placement-sensitive workloads, split by placement ---------------------
if command -v python3 >/dev/null 2>&1; then
    python3 "$ROOT/benches/placement.py" --results "$OUT" >"$OUT/placement.txt" &&
        sed -n '/^median by placement/,$p' "$OUT/placement.txt" || log "placement split failed"
fi

# ---- charts -------------------------------------------------------------------
if [ "$CHARTS" = 1 ]; then
    if command -v python3 >/dev/null 2>&1; then
        python3 "$ROOT/benches/charts.py" --results "$OUT" --out "$IMG" || log "charts failed"
    else
        log "python3 not found: no charts"
    fi
fi

# ---- criterion (optional) ---------------------------------------------------------
if [ "$CRITERION" = 1 ]; then
    log "cargo bench --bench peer_compare"
    cargo bench --bench peer_compare 2>&1 | tee "$OUT/criterion.txt" | grep -E '^[A-Za-z0-9_]+/|time:|thrpt:' || true
fi
log "total wall time: $(($(date +%s) - START)) s"
