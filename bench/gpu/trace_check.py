#!/usr/bin/env python3
"""bench/gpu/trace_check.py: check a WEFT_TRACE file where cJSON is not
(the GPU machine), as tests/test_trace.c checks it with cJSON.

Usage: python3 bench/gpu/trace_check.py TRACE.json [cpu|ptx|interp]

The file must be one JSON object whose traceEvents are well formed
(complete "X" spans with name, cat, pid, tid >= 1, ts >= 0, dur >= 0 and
args; "M" metadata), and hold the spans a first compile and a run on the
backend make (no awhile: examples/dotp has none; tests/test_trace.c checks
awhile.iter).  On ptx a kernel.device span must sit on a device track
(tid >= 1000).  Prints each span name with its count and total ms; exits
1 on the first problem.

On the GPU machine, from the unpacked bundle:
  d=$(mktemp -d); WEFT_BACKEND=ptx WEFT_CACHE_DIR=$d WEFT_TRACE=$d/t.json \\
      ./dotp && python3 bench/gpu/trace_check.py $d/t.json ptx
"""
import json
import sys

EXPECT = {
    "interp": ["sharing", "simplify", "fuse", "plan", "weft_compile",
               "weft_run"],
    "cpu": ["sharing", "simplify", "fuse", "plan", "weft_compile", "weft_run",
            "ir", "llvm.opt", "llvm.codegen", "jit.link", "kernel", "launch"],
    "ptx": ["sharing", "simplify", "fuse", "plan", "weft_compile", "weft_run",
            "ir", "llvm.opt", "ptx.emit", "cuda.module_load",
            "disk.store", "kernel", "launch", "kernel.device", "upload",
            "download"],
}


def fail(msg):
    print("trace_check: " + msg)
    sys.exit(1)


def main():
    if len(sys.argv) < 2:
        fail("usage: trace_check.py TRACE.json [cpu|ptx|interp]")
    backend = sys.argv[2] if len(sys.argv) > 2 else "ptx"
    with open(sys.argv[1]) as f:
        root = json.load(f)
    events = root.get("traceEvents") if isinstance(root, dict) else None
    if not isinstance(events, list):
        fail("no traceEvents array")
    spans = {}
    for e in events:
        if e.get("ph") == "M":
            continue
        if e.get("ph") != "X":
            fail("an event that is neither X nor M: %r" % e)
        for key in ("name", "cat", "pid", "tid", "ts", "dur", "args"):
            if key not in e:
                fail("a span without %s: %r" % (key, e))
        if e["tid"] < 1 or e["ts"] < 0 or e["dur"] < 0:
            fail("a span with a bad tid, ts or dur: %r" % e)
        spans.setdefault(e["name"], []).append(e)
    for name in sorted(spans):
        total = sum(e["dur"] for e in spans[name]) / 1e3
        print("%-18s %5d spans %10.3f ms" % (name, len(spans[name]), total))
    missing = [n for n in EXPECT[backend] if n not in spans]
    if missing:
        fail("no span " + ", ".join(missing))
    if backend == "ptx":
        if not all(e["tid"] >= 1000 for e in spans["kernel.device"]):
            fail("a kernel.device span off the device track")
        if not all(e["args"].get("device_us", -1) >= 0
                   for e in spans["kernel.device"]):
            fail("a kernel.device span without device_us")
    print("trace_check: ok (%s, %d events)" % (backend, len(events)))


if __name__ == "__main__":
    main()
