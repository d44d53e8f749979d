#!/usr/bin/env python3
"""Splits compare.sh's per-run results by where the vCPUs sat.

On a shared VM the host moves the vCPUs between placements in which a cache
line crosses between the two cores in ~30-90 ns ("near") or ~170 ns or more
("far"); workloads where two workers take turns on one lock (W3, W5, W7) run
markedly slower in the far one, on every scheduler. A run counts as near or
far only when the readings before and after it agree, which still does not
prove the placement held in between. This script reads
target/bench-results/runs/*.csv (the Rust side records the line-transfer time
before and after W3, W4, W5 and W7) and placement.csv (compare.sh's readings
before and after every process, the JDK's included) and prints, per workload
and scheduler, the medians of the runs that were near throughout, far
throughout, and the rest.

    python3 benches/placement.py [--results target/bench-results]
"""
import argparse
import csv
import glob
import math
import os
import statistics

NEAR_MAX = 120.0  # ns: below this a line transfer is "near"
METRICS = {"W3": "throughput", "W5": "runs/expected", "W7": "throughput", "W7X8": "throughput"}


def regime(before, after):
    if before is None or after is None or math.isnan(before) or math.isnan(after):
        return "?"
    if before < NEAR_MAX and after < NEAR_MAX:
        return "near"
    if before >= NEAR_MAX and after >= NEAR_MAX:
        return "far"
    return "mixed"


def split(results):
    """Returns (rows, table): every run's (workload, impl, run, before, after,
    placement, value), and {(workload, impl): {placement: [values]}}."""
    process = {}
    placement = os.path.join(results, "placement.csv")
    if os.path.exists(placement):
        for r in csv.DictReader(open(placement)):
            try:
                process[(r["impl"], r["run"])] = (float(r["line_xfer_before_ns"]),
                                                  float(r["line_xfer_after_ns"]))
            except ValueError:
                pass
    table = {}  # (workload, impl) -> regime -> [values]
    rows = []
    for path in sorted(glob.glob(os.path.join(results, "runs", "*.csv"))):
        name = os.path.basename(path)[:-4]
        impl, _, run = name.rpartition("-r")
        got = {}
        for r in csv.DictReader(open(path)):
            try:
                got[(r["workload"], r["metric"])] = float(r["value"])
            except ValueError:
                pass
        for w, metric in METRICS.items():
            if (w, metric) not in got or math.isnan(got[(w, metric)]):
                continue
            before = got.get((w, "line xfer before"))
            after = got.get((w, "line xfer after"))
            if before is None:  # the JDK: the process's readings
                before, after = process.get((impl, run), (None, None))
            reg = regime(before, after)
            table.setdefault((w, impl), {}).setdefault(reg, []).append(got[(w, metric)])
            rows.append((w, impl, run, before, after, reg, got[(w, metric)]))
    return rows, table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default="target/bench-results")
    args = ap.parse_args()
    rows, table = split(args.results)
    print("per run (line transfer ns before -> after the workload; the JDK's are per process):")
    for w, impl, run, b, a, reg, v in sorted(rows):
        print(f"  {w} {impl:22s} r{run:>2s}  {b or 0:6.1f} -> {a or 0:6.1f}  {reg:5s}  {fmt(w, v)}")
    print("\nmedian by placement (number of runs):")
    for (w, impl), regs in sorted(table.items()):
        cells = []
        for reg in ("near", "far", "mixed", "?"):
            if reg in regs:
                vs = regs[reg]
                cells.append(f"{reg} {fmt(w, statistics.median(vs))} ({len(vs)})")
        print(f"  {w} {impl:22s} " + ", ".join(cells))


def fmt(w, v):
    return f"{v:.4f}" if w == "W5" else f"{v / 1e6:.2f} M/s"


if __name__ == "__main__":
    main()
