#!/usr/bin/env python3
"""SVG charts of the schedpool benchmark results (python3 standard library only).

Reads what benches/compare.sh writes:
    <results>/summary.csv                  workload,metric,unit,impl,runs,median,min,max
    <results>/raw/w4-lateness-<impl>-r<N>.csv   one lateness (ns) per line
and writes into <out> (default docs/img/):
    throughput.svg   W3 and W7 tasks/s, bars = median, whiskers = min..max
    op-cost.svg      W1 ns per schedule and W2 ns per cancel
    memory.svg       W6 heap bytes per pending task
    w4-lateness.svg  W4 lateness tail (fraction of tasks later than x, log-log), 40/100 us targets
    w8-cancel.svg    W8 ns per cancel vs pending tasks (log x): a straight line = log n
    w8-instructions.svg  W8 instructions per cancel, if benches/w8_callgrind.sh wrote
                     <results>/w8-instructions.csv

usage: python3 benches/charts.py [--results target/bench-results] [--out docs/img]
"""

import argparse
import csv
import glob
import math
import os
import re
import statistics
import sys
from xml.sax.saxutils import escape

IMPLS = ["schedpool", "scheduled-thread-pool", "jdk17-stpe", "jdk25-stpe", "jdk25-fjp", "tokio"]
COLORS = {"schedpool": "#d9480f", "scheduled-thread-pool": "#1c7ed6", "jdk17-stpe": "#5c940d",
          "jdk25-stpe": "#94d82d", "jdk25-fjp": "#7048e8", "tokio": "#495057"}
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def load_summary(path):
    data = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["workload"], r["metric"], r["impl"])
            data[key] = {
                "unit": r["unit"],
                "runs": int(r["runs"]),
                "median": float(r["median"]),
                "min": float(r["min"]),
                "max": float(r["max"]),
            }
    return data


def fmt_num(v):
    a = abs(v)
    if a >= 1e9:
        return "%.3gG" % (v / 1e9)
    if a >= 1e6:
        return "%.3gM" % (v / 1e6)
    if a >= 1e4:
        return "%.3gk" % (v / 1e3)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    return "%.3g" % v


def fmt_tick(v):
    if abs(v) < 1e4 and float(v).is_integer():
        return "%d" % v
    return fmt_num(v)


def size_label(n):
    if n >= 1e6 and n % 1e6 == 0:
        return "%dM" % (n // 1e6)
    if n >= 1e3 and n % 1e3 == 0:
        return "%dk" % (n // 1e3)
    return "%g" % n


def nice_max(v):
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


class Svg:
    def __init__(self, w, h):
        self.w, self.h, self.parts = w, h, []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=12, anchor="start", color="#222", weight="normal", rotate=None):
        tr = ' transform="rotate(%d %.1f %.1f)"' % (rotate, x, y) if rotate else ""
        self.add(
            '<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" fill="%s" font-weight="%s" %s%s>%s</text>'
            % (x, y, size, anchor, color, weight, FONT, tr, escape(s))
        )

    def line(self, x1, y1, x2, y2, color="#999", width=1, dash=None):
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        self.add(
            '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"%s/>'
            % (x1, y1, x2, y2, color, width, d)
        )

    def rect(self, x, y, w, h, color, title=None):
        t = "<title>%s</title>" % escape(title) if title else ""
        self.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">%s</rect>' % (x, y, w, h, color, t))

    def polyline(self, pts, color, width=2):
        p = " ".join("%.1f,%.1f" % xy for xy in pts)
        self.add('<polyline points="%s" fill="none" stroke="%s" stroke-width="%s"/>' % (p, color, width))

    def circle(self, x, y, r, color, title=None):
        t = "<title>%s</title>" % escape(title) if title else ""
        self.add('<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s">%s</circle>' % (x, y, r, color, t))

    def legend(self, x, y, impls):
        for i, imp in enumerate(impls):
            self.rect(x, y + i * 18 - 10, 12, 12, COLORS.get(imp, "#666"))
            self.text(x + 18, y + i * 18, imp, 12)

    def save(self, path):
        with open(path, "w") as f:
            f.write(
                '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">\n'
                % (self.w, self.h, self.w, self.h)
            )
            f.write('<rect width="100%" height="100%" fill="white"/>\n')
            f.write("\n".join(self.parts))
            f.write("\n</svg>\n")
        print("wrote", path)


def bar_chart(path, title, groups, data, ylabel, note=None):
    """groups: list of (label, workload, metric). One panel, grouped bars per impl."""
    impls = [i for i in IMPLS if any((w, m, i) in data for _, w, m in groups)]
    if not impls:
        return
    W, H = 720, 380
    left, right, top, bottom = 80, 190, 50, 60
    pw, ph = W - left - right, H - top - bottom
    ymax = nice_max(max(data[(w, m, i)]["max"] for _, w, m in groups for i in impls if (w, m, i) in data))
    s = Svg(W, H)
    s.text(W / 2 - right / 2 + left / 2, 26, title, 15, "middle", weight="bold")
    for t in range(6):
        v = ymax * t / 5
        y = top + ph - ph * t / 5
        s.line(left, y, left + pw, y, "#e5e5e5")
        s.text(left - 6, y + 4, fmt_tick(v), 11, "end", "#555")
    s.line(left, top, left, top + ph, "#333")
    s.line(left, top + ph, left + pw, top + ph, "#333")
    s.text(18, top + ph / 2, ylabel, 12, "middle", "#333", rotate=-90)
    gw = pw / len(groups)
    bw = gw * 0.7 / len(impls)
    for gi, (label, w, m) in enumerate(groups):
        gx = left + gi * gw + gw * 0.15
        s.text(left + gi * gw + gw / 2, top + ph + 20, label, 12, "middle")
        for ii, imp in enumerate(impls):
            d = data.get((w, m, imp))
            if not d:
                continue
            x = gx + ii * bw
            h = ph * d["median"] / ymax
            s.rect(x + 2, top + ph - h, bw - 4, h, COLORS.get(imp, "#666"),
                   "%s %s: median %s [%s..%s] %s, %d runs" % (imp, label, fmt_num(d["median"]), fmt_num(d["min"]),
                                                            fmt_num(d["max"]), d["unit"], d["runs"]))
            cx = x + bw / 2
            y1, y2 = top + ph - ph * d["min"] / ymax, top + ph - ph * d["max"] / ymax
            s.line(cx, y1, cx, y2, "#222", 1.2)
            s.line(cx - 4, y1, cx + 4, y1, "#222", 1.2)
            s.line(cx - 4, y2, cx + 4, y2, "#222", 1.2)
            s.text(cx, min(top + ph - h, y2) - 6, fmt_num(d["median"]), 10, "middle", "#333")
    s.legend(left + pw + 20, top + 10, impls)
    if note:
        for k, line in enumerate(note.split("\n")):
            s.text(left + pw + 20, top + 90 + 15 * k, line, 10, "start", "#666")
    s.save(path)


def placement_chart(path, results):
    """W3 and W7 split by where the vCPUs sat (benches/placement.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import placement
    _, table = placement.split(results)
    data = {}
    for (w, imp), regs in table.items():
        if w not in ("W3", "W7"):
            continue
        for reg in ("near", "far"):
            vs = sorted(regs.get(reg, []))
            if vs:
                data[(w, reg, imp)] = {"median": statistics.median(vs), "min": vs[0], "max": vs[-1],
                                       "unit": "tasks/s", "runs": len(vs)}
    if not data:
        return
    bar_chart(path, "Throughput by vCPU placement (higher is better)",
              [("W3 near", "W3", "near"), ("W3 far", "W3", "far"),
               ("W7 near", "W7", "near"), ("W7 far", "W7", "far")],
              data, "tasks per second",
              "near: a cache line crosses\nbetween the cores in 30-90 ns;\nfar: in 170 ns or more.\n"
              "Runs that stayed in one\nplacement; median, min..max")


def lateness_cdf(path, results, label="w4", targets=((40, "p50 <= 40 us", 0.5), (100, "p99 <= 100 us", 0.01)),
                 what="W4 lateness (start - deadline), delays in [0, 1 s)"):
    files = glob.glob(os.path.join(results, "raw", label + "-lateness-*-r*.csv"))
    samples = {}
    for f in files:
        m = re.match(label + r"-lateness-(.+)-r\d+\.csv$", os.path.basename(f))
        if not m:
            continue
        with open(f) as fh:
            vals = [int(x) for x in fh.read().split()[1:] if x.lstrip("-").isdigit()]
        samples.setdefault(m.group(1), []).extend(vals)
    impls = [i for i in IMPLS if i in samples] + [i for i in samples if i not in IMPLS]
    if not impls:
        return
    W, H = 720, max(400, 140 + 48 * len(impls))
    left, right, top, bottom = 70, 200, 50, 60
    pw, ph = W - left - right, H - top - bottom
    # x: lateness in us, log10 from 1 us to max
    all_us = [max(v / 1000.0, 1.0) for i in impls for v in samples[i]]
    xmin, xmax = 0.0, math.ceil(math.log10(max(all_us) * 1.05))
    xmax = max(xmax, 3.0)

    nmax = max(len(samples[i]) for i in impls)
    ymin = -math.ceil(math.log10(nmax))  # log10 of the smallest fraction shown

    def X(us):
        return left + pw * (math.log10(max(us, 1.0)) - xmin) / (xmax - xmin)

    def Y(frac):
        return top + ph * (math.log10(frac)) / ymin

    s = Svg(W, H)
    runs = len({os.path.basename(f).rsplit("-r", 1)[1] for f in files})
    s.text(left + pw / 2, 26, "%s: %d samples, %d run(s)"
           % (what, nmax, runs), 13, "middle", weight="bold")
    for e in range(int(xmin), int(xmax) + 1):
        x = X(10 ** e)
        s.line(x, top, x, top + ph, "#e5e5e5")
        s.text(x, top + ph + 18, size_label(10 ** e) + " us", 11, "middle", "#555")
    for e in range(0, ymin - 1, -1):
        s.line(left, Y(10 ** e), left + pw, Y(10 ** e), "#eee")
        s.text(left - 6, Y(10 ** e) + 4, "%g" % (10 ** e), 11, "end", "#555")
    s.line(left, top, left, top + ph, "#333")
    s.line(left, top + ph, left + pw, top + ph, "#333")
    for t, lab, q in targets:
        s.line(X(t), Y(q), X(t), top + ph, "#aa0000", 1, "4,3")
        s.line(left, Y(q), X(t), Y(q), "#aa0000", 1, "4,3")
        s.text(left + 6, Y(q) - 4, "target " + lab, 10, "start", "#aa0000")
    s.text(left + pw / 2, H - 14, "lateness x (log scale; below 1 us drawn at 1 us)", 11, "middle", "#333")
    s.text(18, top + ph / 2, "fraction of tasks later than x", 12, "middle", "#333", rotate=-90)
    for imp in impls:
        v = sorted(samples[imp])
        n = len(v)
        if n == 0:
            continue
        pts = [(X(v[0] / 1000.0), Y(1.0))]
        step = max(1, n // 800)
        idx = list(range(0, n - 1, step))
        if n >= 2 and idx[-1] != n - 2:
            idx.append(n - 2)
        for k in idx:  # fraction strictly later than v[k]
            pts.append((X(v[k] / 1000.0), Y((n - 1 - k) / n)))
        pts.append((X(v[-1] / 1000.0), Y(1.0 / n)))
        s.polyline(pts, COLORS.get(imp, "#666"))
    s.legend(left + pw + 20, top + 10, impls)
    y = top + 80
    for imp in impls:
        v = sorted(samples[imp])
        n = len(v)

        def pct(p):
            return v[max(0, min(n - 1, math.ceil(p / 100.0 * n) - 1))] / 1000.0

        s.text(left + pw + 20, y, imp, 11, "start", COLORS.get(imp, "#666"), "bold")
        s.text(left + pw + 20, y + 14, "p50 %s  p99 %s us" % (fmt_num(pct(50)), fmt_num(pct(99))), 10, "start", "#444")
        s.text(left + pw + 20, y + 28, "p99.9 %s  max %s us" % (fmt_num(pct(99.9)), fmt_num(v[-1] / 1000.0)), 10,
               "start", "#444")
        y += 48
    s.save(path)


def cancel_curve(path, data):
    pts = {}
    for (w, m, imp), d in data.items():
        if w != "W8" or not m.startswith("cancel@"):
            continue
        lab = m.split("@", 1)[1]
        mult = {"k": 1e3, "M": 1e6}.get(lab[-1], 1)
        n = float(lab[:-1] if lab[-1] in "kM" else lab) * mult
        pts.setdefault(imp, []).append((n, d))
    curve(path, pts, "W8 cancel cost vs pending tasks (log n on x: log n growth = straight line)",
          "ns per cancel (median, min..max)",
          ["scheduled-thread-pool only sets", "a flag: O(1), but cancelled jobs",
           "stay in its heap (see W2 retained)"])


def instructions_curve(path, csv_path):
    """W8 in instructions per cancel, from benches/w8_callgrind.sh's CSV."""
    pts = {}
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            v = float(row["instructions_per_cancel"])
            pts.setdefault(row["impl"], []).append(
                (float(row["pending"]), {"median": v, "min": v, "max": v}))
    curve(path, pts, "W8 in instructions per cancel (callgrind: exact, no cache effects)",
          "instructions per cancel",
          ["the work per cancel; the", "nanoseconds (w8-cancel.svg)", "add the cache misses"])


def curve(path, pts, title, ylabel, notes):
    impls = [i for i in IMPLS if i in pts]
    if not impls:
        return
    W, H = 720, 400
    left, right, top, bottom = 70, 200, 50, 60
    pw, ph = W - left - right, H - top - bottom
    ns = sorted({n for i in impls for n, _ in pts[i]})
    xmin, xmax = math.log10(ns[0]) - 0.2, math.log10(ns[-1]) + 0.2
    ymax = nice_max(max(d["max"] for i in impls for _, d in pts[i]))

    def X(n):
        return left + pw * (math.log10(n) - xmin) / (xmax - xmin)

    def Y(v):
        return top + ph - ph * v / ymax

    s = Svg(W, H)
    s.text(left + pw / 2, 26, title, 13, "middle", weight="bold")
    for t in range(6):
        v = ymax * t / 5
        s.line(left, Y(v), left + pw, Y(v), "#e5e5e5")
        s.text(left - 6, Y(v) + 4, fmt_tick(v), 11, "end", "#555")
    for n in ns:
        s.line(X(n), top, X(n), top + ph, "#f0f0f0")
        s.text(X(n), top + ph + 18, size_label(n), 11, "middle", "#555")
    s.line(left, top, left, top + ph, "#333")
    s.line(left, top + ph, left + pw, top + ph, "#333")
    s.text(left + pw / 2, H - 14, "pending tasks in the queue (log scale)", 11, "middle", "#333")
    s.text(18, top + ph / 2, ylabel, 12, "middle", "#333", rotate=-90)
    for imp in impls:
        p = sorted(pts[imp], key=lambda t: t[0])
        c = COLORS.get(imp, "#666")
        s.polyline([(X(n), Y(d["median"])) for n, d in p], c)
        for n, d in p:
            s.line(X(n), Y(d["min"]), X(n), Y(d["max"]), c, 1)
            s.circle(X(n), Y(d["median"]), 3.5, c, "%s n=%s: %s" % (imp, fmt_num(n), fmt_num(d["median"])))
    s.legend(left + pw + 20, top + 10, impls)
    for i, note in enumerate(notes):
        s.text(left + pw + 20, top + 80 + 14 * i, note, 10, "start", "#666")
    s.save(path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(root, "target", "bench-results"))
    ap.add_argument("--out", default=os.path.join(root, "docs", "img"))
    a = ap.parse_args()
    summary = os.path.join(a.results, "summary.csv")
    if not os.path.exists(summary):
        raise SystemExit("no %s: run benches/compare.sh first" % summary)
    os.makedirs(a.out, exist_ok=True)
    data = load_summary(summary)
    bar_chart(os.path.join(a.out, "throughput.svg"), "Throughput (higher is better)",
              [("W3: 1M zero-delay, 1 submitter", "W3", "throughput"),
               ("W7: 2 producers x 500k, 0-10 ms", "W7", "throughput")],
              data, "tasks per second", "2 worker threads each;\nbars: median, whiskers:\nmin..max of the runs")
    bar_chart(os.path.join(a.out, "op-cost.svg"), "Cost per operation, 1M pending (lower is better)",
              [("W1: schedule, delay 1-2 h", "W1", "schedule"), ("W2: cancel, random order", "W2", "cancel")],
              data, "ns per operation", "bars: median, whiskers:\nmin..max of the runs")
    bar_chart(os.path.join(a.out, "memory.svg"), "Heap per pending task, 1M pending (lower is better)",
              [("W6: pool only (handles dropped)", "W6", "heap/task"),
               ("W6: with handles held", "W6", "heap/task+handle")],
              data, "bytes per task",
              "Rust: requested bytes (counting\nglobal allocator); JDK: heap\nused after System.gc()")
    lateness_cdf(os.path.join(a.out, "w4-lateness.svg"), a.results)
    lateness_cdf(os.path.join(a.out, "w4l-lateness.svg"), a.results, "w4l", (),
                 "W4L lateness, both cores held by two busy loops")
    bar_chart(os.path.join(a.out, "w9.svg"), "W9 timeouts: cost per timeout (lower is better)",
              [("W9: caller, schedule + cancel", "W9", "pair (caller)"),
               ("W9: CPU of all threads", "W9", "cpu all threads"),
               ("W9L: caller (cores busy)", "W9L", "pair (caller)"),
               ("W9L: CPU of all threads", "W9L", "cpu all threads")],
              data, "ns per timeout", "2 producers x 250k/s, 2 s;\n90 % cancelled;\nbars: median, whiskers:\nmin..max of the runs")
    placement_chart(os.path.join(a.out, "throughput-by-placement.svg"), a.results)
    cancel_curve(os.path.join(a.out, "w8-cancel.svg"), data)
    instr = os.path.join(a.results, "w8-instructions.csv")
    if os.path.exists(instr):
        instructions_curve(os.path.join(a.out, "w8-instructions.svg"), instr)


if __name__ == "__main__":
    main()
