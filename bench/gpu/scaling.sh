#!/bin/sh
# bench/gpu/scaling.sh: weft on 1, 2, 4 ... GPUs of one host (issue 20),
# from the unpacked bundle on the GPU machine.  Runs bench/gpu/run.sh once
# per device list ($WEFT_DEVICES: unset, then each list given), the
# programs' data resident as run.py keeps it, and prints two tables (below
# the options): weft's median ms per program and list, and the speed-up
# over one GPU.
# run.py checks every result against the reference, so a wrong split shows
# as a failed check in OUTDIR/<list>/run.log.
#
# Usage: sh bench/gpu/scaling.sh [-n N] [-b N] [-g N] [-m N] OUTDIR [LIST ...]
#   e.g. sh bench/gpu/scaling.sh /tmp/scaling 0,1 0,1,2,3
#   (0,0 runs the split over two blocks of one GPU: the cost of the
#   partitioning where there is one GPU; expect about 1x)
# Environment: SCALING_ONLY (run.py program keys, default
# saxpy,blackscholes,mandelbrot,nbody,sum,dotp,histogram,scan: all are
# split over the devices, the histogram by ranges of its keys, each
# device's bins reduced into the one result by system-scope atomics),
# GPUBENCH_NBODY
# (n-body's bodies, default 65536: 256 blocks, too few to fill several
# GPUs; 262144 shows the scaling) and run.sh's.
set -eu
# Options (each sets run.py's variable of the same size, for every list):
#   -n N  GPUBENCH_N: elements of saxpy, sum, dotp, scan and the histogram
#         (default 2^28; 2^30 f32 is 4 GiB an array, which one H100 holds
#         for dotp's two and the reference's copies)
#   -b N  GPUBENCH_BS: Black-Scholes' options (default 2^26)
#   -g N  GPUBENCH_NBODY: n-body's bodies
#   -m N  GPUBENCH_MANDEL: Mandelbrot's side (default 8192: 8192 x 8192)
# The tables: the host clock's medians (run.py's "ms": from the call to
# the result complete, the host's work per run included), then the
# medians of CUDA events on weft's stream (device 0's, which waits for
# the others): where the first is well above the second, the host's work
# per run (launches, events, the split's bookkeeping) is what costs.
usage="usage: sh bench/gpu/scaling.sh [-n N] [-b N] [-g N] [-m N] OUTDIR [LIST ...]"
while getopts n:b:g:m: opt; do
    case $opt in
    n) GPUBENCH_N=$OPTARG; export GPUBENCH_N ;;
    b) GPUBENCH_BS=$OPTARG; export GPUBENCH_BS ;;
    g) GPUBENCH_NBODY=$OPTARG; export GPUBENCH_NBODY ;;
    m) GPUBENCH_MANDEL=$OPTARG; export GPUBENCH_MANDEL ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
out=${1:?$usage}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
only=${SCALING_ONLY:-saxpy,blackscholes,mandelbrot,nbody,sum,dotp,histogram,scan}
here=$(dirname "$0")
GPUBENCH_ARGS="--only $only --no-peers" sh "$here/run.sh" "$out/one" \
    >/dev/null 2>&1 || echo "scaling: one GPU: run.sh failed (see $out/one)"
for list in "$@"; do
    WEFT_DEVICES=$list GPUBENCH_ARGS="--only $only --no-peers" \
        sh "$here/run.sh" "$out/$list" >/dev/null 2>&1 ||
        echo "scaling: $list: run.sh failed (see $out/$list)"
done
${PYTHON:-python3} - "$out" "$@" <<'EOF'
import json, os, sys
out, lists = sys.argv[1], sys.argv[2:]
def medians(d):
    try:
        doc = json.load(open(os.path.join(out, d, "gpu.json")))
    except OSError:
        return {}, "-"
    # a program with several weft rows (n-body's "weft (fold)") keeps
    # each, named by what follows "weft" in its implementation
    return ({(r["program"] + r["implementation"][4:], r["size"]):
             (r["median_ms"], r["check"], r.get("bytes_moved"),
              r.get("median_event_ms"))
             for r in doc["rows"] if r["implementation"].startswith("weft")},
            doc.get("gpu") or "?")
one, gpu = medians("one")
cols = [medians(l)[0] for l in lists]
for which, title in ((0, "median ms (host clock)"),
                     (3, "median ms by CUDA events on weft's stream")):
    print(f"weft on several GPUs ({gpu}): {title}, speed-up over one GPU, "
          "bytes handed between the devices per run (partials and "
          "replicas; peer reads uncounted)")
    print("| program | size | 1 GPU | " +
          " | ".join(f"{l}" for l in lists) + " |")
    print("|---|---|---:|" + "---:|" * len(lists))
    for key, row in sorted(one.items()):
        ms = row[which]
        cells = []
        for c in cols:
            got = c.get(key, (None,) * 4)
            m, ok, moved = got[which], got[1], got[2]
            bad = " FAIL" if ok and "FAIL" in str(ok) else ""
            mv = f", {moved} B" if moved is not None else ""
            cells.append(f"{m:.3f} ({ms / m:.2f}x{mv}){bad}"
                         if m and ms else "-")
        first = f"{ms:.3f}" if ms else "-"
        print(f"| {key[0]} | {key[1]} | {first} | " + " | ".join(cells) + " |")
    print()
EOF
