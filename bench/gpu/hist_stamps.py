#!/usr/bin/env python3
"""bench/gpu/hist_stamps.py: summary of the per-block stamps that entry 2
of the PTX permute prints under $WEFT_PTX_PERMUTE_STAMPS=1
(skeletons-ir/ptx/permute.c): lines "HS base block sm units t0 t1 t2 t3",
t0 the block's start, t1 its keys done, t2 its flush done, t3 its end
(%globaltimer, ns).  For the last launch of each part (by base; launches
told apart by gaps in the starts), times in us from the part's first
start: the starts' spread, the keys done (quantiles), the flush, the end
of the last block, and where the last blocks' time went.

Usage: python3 bench/gpu/hist_stamps.py FILE [label]
"""
import sys


def q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * (len(xs) - 1) + 0.5))]


def main():
    rows = []
    with open(sys.argv[1], errors="replace") as fh:
        for line in fh:
            p = line.split()
            if len(p) == 9 and p[0] == "HS":
                rows.append([int(x) for x in p[1:]])
    label = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
    print("stamps %s: %d lines" % (label, len(rows)))
    parts = {}
    for r in rows:
        parts.setdefault(r[0], []).append(r)
    for base in sorted(parts):
        rs = sorted(parts[base], key=lambda r: r[4])
        launches, cur = [], [rs[0]]
        for r in rs[1:]:
            if r[4] - cur[-1][4] > 30000:  # 30 us between starts
                launches.append(cur)
                cur = []
            cur.append(r)
        launches.append(cur)
        L = launches[-1]
        z = min(r[4] for r in L)
        us = lambda t: (t - z) / 1000.0
        t0 = [us(r[4]) for r in L]
        t1 = [us(r[5]) for r in L]
        fl = [(r[6] - r[5]) / 1000.0 for r in L]
        t3 = [us(r[7]) for r in L]
        last = max(L, key=lambda r: r[7])
        slow = max(L, key=lambda r: r[5])
        units = [r[3] for r in L]
        print(" part base=%d launches=%d blocks=%d SMs=%d units/block %d-%d"
              % (base, len(launches), len(L), len(set(r[2] for r in L)),
                 min(units), max(units)))
        print("  start spread %.1f us; keys done min/p10/p50/p90/max "
              "%.1f/%.1f/%.1f/%.1f/%.1f us" %
              (max(t0), min(t1), q(t1, .1), q(t1, .5), q(t1, .9), max(t1)))
        print("  flush p50/max %.2f/%.2f us; end p50/max %.1f/%.1f us" %
              (q(fl, .5), max(fl), q(t3, .5), max(t3)))
        print("  last block %d (sm %d): start %.1f keys %.1f flush %.1f "
              "end %.1f (its last-block work %.1f us)" %
              (last[1], last[2], us(last[4]), us(last[5]), us(last[6]),
               us(last[7]), (last[7] - last[6]) / 1000.0))
        print("  slowest keys block %d (sm %d, %d units): start %.1f keys "
              "%.1f" % (slow[1], slow[2], slow[3], us(slow[4]),
                        us(slow[5])))
        # the keys-done times in 10-us bins, from the first
        lo = min(t1)
        hist = {}
        for t in t1:
            hist[int((t - lo) // 10)] = hist.get(int((t - lo) // 10), 0) + 1
        print("  keys done by 10 us from %.1f: %s" %
              (lo, " ".join("%d" % hist.get(i, 0)
                            for i in range(max(hist) + 1))))


if __name__ == "__main__":
    main()
