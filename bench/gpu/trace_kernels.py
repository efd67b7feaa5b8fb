#!/usr/bin/env python3
"""bench/gpu/trace_kernels.py: where a WEFT_TRACE of GPU runs spends its time.

Prints, for each kernel entry seen in "kernel.device" spans (the device
time of each launch, CUDA events), its launches, grid, block, registers per
thread and the median device microseconds; for each kernel split over
several devices ("kernel.split" spans, runtime-gpu/multi.c), each device's
median share of the work and kernel microseconds and the host's time to
queue the parts and their join, and that time by step (multi.c's
h_* and step fields); then the median duration
of the host spans per name (weft_run, kernel, launch, download, ...) and of
the compile's "cuda.module_load" spans with their driver-reported compile
time.

On the GPU machine, from the unpacked bundle:
  d=$(mktemp -d); WEFT_TRACE=$d/t.json ./overhead 200 && \\
      python3 bench/gpu/trace_kernels.py $d/t.json
"""
import collections
import json
import sys


def median(v):
    v = sorted(v)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    if len(sys.argv) != 2:
        print("usage: trace_kernels.py TRACE.json")
        sys.exit(2)
    with open(sys.argv[1]) as f:
        root = json.load(f)
    events = root.get("traceEvents", []) if isinstance(root, dict) else root
    dev = collections.defaultdict(list)
    host = collections.defaultdict(list)
    loads = []
    split = collections.defaultdict(list)  # kernel: [(sizes, ms)]
    steps = collections.defaultdict(list)  # (kernel, devices, step): [us]
    for e in events:
        name = e.get("name")
        args = e.get("args") or {}
        if name == "kernel.device":
            key = (args.get("fn", "?"), args.get("grid"), args.get("block"),
                   args.get("regs"))
            dev[key].append(float(args.get("device_us", 0)))
        elif name == "kernel.split":
            sizes = next((v for k, v in args.items()
                          if isinstance(v, list) and k != "ms"), [])
            split[args.get("kernel", "?")].append(
                (sizes, args.get("ms", []), args.get("issue_us", -1)))
            for k, v in args.items():
                if k.endswith("_us") and k != "issue_us":
                    steps[(args.get("kernel", "?"), len(args.get("ms", [])),
                           k)].append(float(v))
            if "dur" in e:
                host[name].append(float(e["dur"]))
        elif name == "cuda.module_load":
            loads.append((float(e.get("dur", 0)), args))
        elif e.get("ph") == "X" and "dur" in e:
            host[name].append(float(e["dur"]))
    print("kernel entry | launches | grid | block | regs | median device us")
    for (fn, grid, block, regs), v in sorted(dev.items()):
        print("%s | %d | %s | %s | %s | %.2f" % (fn, len(v), grid, block,
                                                 regs, median(v)))
    if split:
        print("\nsplit kernel | launches | median share per device | "
              "median kernel us per device | median host us to queue")
    for fn, v in sorted(split.items()):
        nd = max(len(ms) for _, ms, _ in v)
        share = [median([s[i] for s, _, _ in v if i < len(s)])
                 for i in range(nd)]
        us = [median([m[i] * 1e3 for _, m, _ in v if i < len(m) and m[i] >= 0])
              for i in range(nd)]
        issue = median([u for _, _, u in v if u >= 0])
        print("%s | %d | %s | %s | %.1f" % (fn, len(v),
                                          " ".join("%d" % x for x in share),
                                          " ".join("%.1f" % x for x in us),
                                          issue))
    if steps:
        print("\nsplit kernel | devices | host us by step (median; h_: the "
              "launching thread's, others summed over the other devices)")
    for fn, nd in sorted({(k[0], k[1]) for k in steps}):
        print("%s | %d | %s" % (fn, nd, " ".join(
            "%s=%.2f" % (k[2][:-3], median(v))
            for k, v in sorted(steps.items()) if k[:2] == (fn, nd))))
    print("\nhost span | count | median us")
    for name, v in sorted(host.items()):
        print("%s | %d | %.2f" % (name, len(v), median(v)))
    print("\ncuda.module_load | us | args")
    for dur, args in loads:
        print("| %.0f | %s" % (dur, json.dumps(args, sort_keys=True)))


if __name__ == "__main__":
    main()
