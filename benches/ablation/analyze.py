#!/usr/bin/env python3
"""Per variant and metric: the median over rounds of (variant / V0 of the same
round), its min..max, and in how many rounds the variant did worse than V0;
and V0's own spread (its runs' min..max over its median)."""
import csv, glob, os, re, statistics, sys
from collections import defaultdict
D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "ablation")
vals = defaultdict(dict)  # (w, metric) -> {(v, r): value}
for f in glob.glob(os.path.join(D, 'raw', '*-r*.csv')):
    m = re.match(r'(V\d+)-r(\d+)\.csv$', os.path.basename(f))
    v, r = m.group(1), int(m.group(2))
    for row in csv.DictReader(open(f)):
        try:
            x = float(row['value'])
        except ValueError:
            continue
        vals[(row['workload'], row['metric'])][(v, r)] = x
METRICS = [
    ('W1', 'schedule', 'lo'), ('W2', 'cancel', 'lo'),
    ('W3', 'throughput', 'hi'), ('W3', 'submit', 'lo'), ('W3S', 'throughput', 'hi'),
    ('W4', 'p50', 'lo'), ('W4', 'p99', 'lo'), ('W4', 'p99.9', 'lo'), ('W4', 'max', 'lo'),
    ('W5', 'runs/expected', 'hi'), ('W5', 'worst drift', 'lo'),
    ('W6', 'heap/task', 'lo'),
    ('W7', 'throughput', 'hi'), ('W7X8', 'throughput', 'hi'),
    ('W8', 'cancel@1k', 'lo'), ('W8', 'cancel@1M', 'lo'),
    ('W9', 'pair (caller)', 'lo'), ('W9', 'pair (caller cpu)', 'lo'), ('W9', 'cpu all threads', 'lo'),
    ('W9', 'pacing lag max', 'lo'),
    ('W4L', 'p50', 'lo'), ('W4L', 'p99', 'lo'), ('W4L', 'p99.9', 'lo'), ('W4L', 'max', 'lo'),
    ('W9L', 'pair (caller)', 'lo'), ('W9L', 'cancel (caller)', 'lo'), ('W9L', 'pair (caller cpu)', 'lo'), ('W9L', 'cpu all threads', 'lo'), ('W9L', 'pacing lag max', 'lo'),
]
VARS = ['V1', 'V2', 'V3', 'V4', 'V5', 'V6', 'V67', 'V7', 'V8']
rounds = sorted({r for d in vals.values() for (_, r) in d})
# ROUNDS=a-b: only rounds a..b (e.g. the ones on a quiet machine)
if os.environ.get('ROUNDS'):
    a, b = (int(x) for x in os.environ['ROUNDS'].split('-'))
    rounds = [r for r in rounds if a <= r <= b]
fmt = sys.argv[1] if len(sys.argv) > 1 else 'text'
def cell(w, met, v, better):
    d = vals.get((w, met), {})
    rs = [d[(v, r)] / d[('V0', r)] for r in rounds if (v, r) in d and ('V0', r) in d and d[('V0', r)] not in (0,)]
    if not rs:
        return '-', None
    med = statistics.median(rs)
    # rounds in which the variant (the structure removed) did worse than V0
    worse = sum(1 for x in rs if (x < 1 if better == 'hi' else x > 1))
    return '%.2f [%.2f..%.2f] %d/%d' % (med, min(rs), max(rs), worse, len(rs)), (med, len(rs))
def v0(w, met):
    d = vals.get((w, met), {})
    xs = [d[('V0', r)] for r in rounds if ('V0', r) in d]
    return ('%.4g' % statistics.median(xs)) if xs else '-'
def v0_spread(w, met):
    # V0's own noise: its runs' [min..max] over its median, the range a
    # variant's single-round ratio can move by with nothing removed
    d = vals.get((w, met), {})
    xs = [d[('V0', r)] for r in rounds if ('V0', r) in d]
    m = statistics.median(xs) if xs else 0
    return '[%.2f..%.2f]' % (min(xs) / m, max(xs) / m) if m else '-'
hdr = ['workload', 'metric', 'better', 'V0 median', 'V0 spread'] + VARS
if fmt == 'md':
    print('| ' + ' | '.join(hdr) + ' |')
    print('|' + '---|' * len(hdr))
for w, met, d in METRICS:
    cells = [cell(w, met, v, d)[0] for v in VARS]
    line = [w, met, 'higher' if d == 'hi' else 'lower', v0(w, met), v0_spread(w, met)] + cells
    if fmt == 'md':
        print('| ' + ' | '.join(line) + ' |')
    else:
        print('%-4s %-18s %-6s %9s %13s ' % tuple(line[:5]) + ' '.join('%24s' % c for c in cells))
print('rounds:', rounds, file=sys.stderr)
