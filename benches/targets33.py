#!/usr/bin/env python3
"""Issue 33's "Targets" table, measured by one compare.sh run (python3 stdlib only).

    python3 benches/targets33.py --results target/bench-results [--baseline NAME]

Reads summary.csv (medians, min, max per workload, metric and scheduler) and
runs/*.csv (every run: W4L's per-run comparison). Prints one Markdown table:
each row of issue 33's "Targets" with the ratio(s) measured in this run and
MET / MISS. A row whose columns did not run says so ("not measured").

--baseline NAME: the column of the baseline build (compare.sh --baseline REF
names it `schedpool@REF`); the "no worse than today" rows compare schedpool's
median with it, metric by metric. "Beyond noise" is read off the baseline's own
runs: a metric misses when schedpool's median is worse than the baseline's
worst run (its max where lower is better, its min where higher is better).
"""

import argparse
import csv
import glob
import os
import re
import sys

SP, PEER, FJP, STPE25, TOKIO = "schedpool", "scheduled-thread-pool", "jdk25-fjp", "jdk25-stpe", "tokio"
NAMES = {PEER: "peer", FJP: "FJP", STPE25: "JDK 25 STPE", TOKIO: "tokio"}
NO_WORSE = ["W1", "W3", "W3S", "W4", "W5", "W6", "W7", "W8"]
HIGHER_IS_BETTER = {"tasks/s", "ratio"}


def load(results):
    med = {}
    with open(os.path.join(results, "summary.csv")) as f:
        for r in csv.DictReader(f):
            med[(r["workload"], r["metric"], r["impl"])] = (
                float(r["median"]), float(r["min"]), float(r["max"]), int(r["runs"]), r["unit"])
    runs = {}  # (workload, metric, impl) -> {run: value}
    for path in glob.glob(os.path.join(results, "runs", "*.csv")):
        run = re.search(r"-r(\d+)\.csv$", path)  # runs/<impl>-r<run>.csv
        if not run:
            continue
        with open(path) as f:
            for r in csv.DictReader(f):
                try:
                    v = float(r["value"])
                except (KeyError, ValueError):
                    continue
                runs.setdefault((r["workload"], r["metric"], r["impl"]), {})[int(run.group(1))] = v
    return med, runs


def fmt(x):
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default="target/bench-results")
    ap.add_argument("--baseline", default="", help="the baseline column's name (schedpool@REF)")
    a = ap.parse_args()
    med, runs = load(a.results)
    out = []

    def m(w, metric, imp):
        x = med.get((w, metric, imp))
        return x[0] if x else None

    def ratios(w, metric, specs):
        """specs: [(other, bound, 'le'|'ge')] -> (cells, met) on schedpool / other."""
        s = m(w, metric, SP)
        cells, met = [], True
        for other, bound, op in specs:
            o = m(w, metric, other)
            if s is None or o is None or o == 0:
                cells.append(f"vs {NAMES[other]}: not measured")
                met = None if met is not False else False
                continue
            r = s / o
            ok = r <= bound if op == "le" else r >= bound
            cells.append(f"{r:.2f}× {NAMES[other]} ({fmt(s)} vs {fmt(o)})")
            if not ok:
                met = False
        return cells, met

    def row(workload, target, specs_by_metric):
        cells, met = [], True
        for w, metric, specs in specs_by_metric:
            c, ok = ratios(w, metric, specs)
            label = f"{w} {metric}: " if len(specs_by_metric) > 1 else ""
            cells.append(label + "; ".join(c))
            if ok is False:
                met = False
            elif ok is None and met is not False:
                met = None
        verdict = {True: "met", False: "**missed**", None: "not measured"}[met]
        out.append(f"| {workload} | {target} | {'<br>'.join(cells)} | {verdict} |")

    out.append("| workload | target | this run (schedpool / other, medians) | |")
    out.append("|---|---|---|---|")
    row("W9L pair, caller", "≤ 2.0× FJP and ≤ 0.5× tokio",
        [("W9L", "pair (caller)", [(FJP, 2.0, "le"), (TOKIO, 0.5, "le")])])
    row("W9L cancel, caller", "≤ 2.0× FJP", [("W9L", "cancel (caller)", [(FJP, 2.0, "le")])])
    row("W9 pair, caller", "≤ 1.5× FJP and ≤ 0.6× tokio",
        [("W9", "pair (caller)", [(FJP, 1.5, "le"), (TOKIO, 0.6, "le")])])
    row("W9 and W9L, CPU of all threads per timeout", "≤ 1.0× FJP and ≤ 1.0× tokio",
        [(w, "cpu all threads", [(FJP, 1.0, "le"), (TOKIO, 1.0, "le")]) for w in ("W9", "W9L")])
    row("W2 cancel at 1M pending, caller", "≤ 1.0× FJP", [("W2", "cancel", [(FJP, 1.0, "le")])])
    row("W7x8 (W7 with 8 producer threads, 2 cores), throughput", "≥ 2× the peer crate, ≥ 1.5× JDK 25 STPE",
        [("W7X8", "throughput", [(PEER, 2.0, "ge"), (STPE25, 1.5, "ge")])])

    # W4L p99: run by run (run r of schedpool against run r of the peer).
    sp, pe = runs.get(("W4L", "p99", SP), {}), runs.get(("W4L", "p99", PEER), {})
    common = sorted(set(sp) & set(pe))
    if not common:
        out.append("| W4L p99 | ≤ the peer crate's in at least half of 20 alternating runs | not measured | not measured |")
    else:
        k = sum(1 for r in common if sp[r] <= pe[r])
        n = len(common)
        per = ", ".join(f"{fmt(sp[r])}/{fmt(pe[r])}" for r in common)
        if n >= 20:
            verdict = "met" if 2 * k >= n else "**missed**"
        else:
            verdict = ("met so far" if 2 * k >= n else "**missed so far**") + f" (only {n} runs, not 20)"
        out.append(f"| W4L p99 | ≤ the peer crate's in at least half of 20 alternating runs | "
                   f"≤ peer in {k} of {n} runs (µs, schedpool/peer per run: {per}) | {verdict} |")

    # Restated from issue 23.
    row("W1 schedule again (warm memory)", "≤ 0.75× the peer crate", [("W1", "schedule again", [(PEER, 0.75, "le")])])
    row("W1 schedule (first touch)", "≤ 1.0× the peer crate", [("W1", "schedule", [(PEER, 1.0, "le")])])
    row("W3S throughput", "≥ 2× FJP", [("W3S", "throughput", [(FJP, 2.0, "ge")])])

    # No worse than today: one row here, the metrics in a table of their own below.
    detail = []
    if a.baseline:
        worse, n = [], 0
        detail += ["", f"The \"no worse than today\" row, metric by metric (schedpool against {a.baseline}, "
                   "medians; beyond noise = worse than the baseline's worst run):", "",
                   f"| workload | metric | unit | schedpool | {a.baseline} (min..max) | ratio | |",
                   "|---|---|---|---|---|---|---|"]
        for w in NO_WORSE:
            for (w2, metric, imp), (s, _, _, _, unit) in sorted(med.items()):
                if w2 != w or imp != SP or metric.startswith("line xfer"):
                    continue
                b = med.get((w, metric, a.baseline))
                if b is None:
                    continue
                n += 1
                bmed, bmin, bmax, _, _ = b
                bad = s < bmin if unit in HIGHER_IS_BETTER else s > bmax
                r = f"{s / bmed:.2f}×" if bmed else "-"
                if bad:
                    worse.append(f"{w} {metric}")
                detail.append(f"| {w} | {metric} | {unit} | {fmt(s)} | {fmt(bmed)} ({fmt(bmin)}..{fmt(bmax)}) | "
                              f"{r} | {'**worse**' if bad else 'ok'} |")
        if n == 0:
            detail = []
            out.append(f"| W1, W3, W3S, W4, W5, W6, W7, W8 | no worse than today beyond noise | "
                       f"not measured ({a.baseline} has no such rows) | not measured |")
        else:
            verdict = "met" if not worse else "**missed**"
            out.append(f"| W1, W3, W3S, W4, W5, W6, W7, W8 | no worse than {a.baseline} beyond noise | "
                       f"{n - len(worse)} of {n} metrics within the baseline's runs"
                       f"{'; worse: ' + ', '.join(worse) if worse else ''} (table below) | {verdict} |")
    else:
        out.append("| W1, W3, W3S, W4, W5, W6, W7, W8 | no worse than today beyond noise | "
                   "not measured (no --baseline REF) | not measured |")
    out += detail
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
