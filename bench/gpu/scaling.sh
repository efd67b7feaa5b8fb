#!/bin/sh
# bench/gpu/scaling.sh: weft on 1, 2, 4 ... GPUs of one host (issue 20),
# from the unpacked bundle on the GPU machine.  Runs bench/gpu/run.sh once
# per device list ($WEFT_DEVICES: unset, then each list given), the
# programs' data resident as run.py keeps it, and prints one table: the
# median ms of weft per program and list, and the speed-up over one GPU.
# run.py checks every result against the reference, so a wrong split shows
# as a failed check in OUTDIR/<list>/run.log.
#
# Usage: sh bench/gpu/scaling.sh OUTDIR [LIST ...]
#   e.g. sh bench/gpu/scaling.sh /tmp/scaling 0,1 0,1,2,3
#   (0,0 runs the split over two blocks of one GPU: the cost of the
#   partitioning where there is one GPU; expect about 1x)
# Environment: SCALING_ONLY (run.py program keys, default
# saxpy,blackscholes,mandelbrot,nbody,sum,dotp,histogram,scan: all but
# the histogram are split over the devices; the histogram runs on the
# first GPU over the split memory), GPUBENCH_NBODY
# (n-body's bodies, default 65536: 256 blocks, too few to fill several
# GPUs; 262144 shows the scaling) and run.sh's.
set -eu
out=${1:?usage: sh bench/gpu/scaling.sh OUTDIR [LIST ...]}
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
    return ({(r["program"], r["size"]): (r["median_ms"], r["check"],
                                         r.get("bytes_moved"))
             for r in doc["rows"] if r["implementation"].startswith("weft")},
            doc.get("gpu") or "?")
one, gpu = medians("one")
cols = [medians(l)[0] for l in lists]
print(f"weft on several GPUs ({gpu}): median ms, speed-up over one GPU, "
      "bytes handed between the devices per run (partials; peer reads "
      "uncounted)")
print("| program | size | 1 GPU | " +
      " | ".join(f"{l}" for l in lists) + " |")
print("|---|---|---:|" + "---:|" * len(lists))
for key, (ms, check, _) in sorted(one.items()):
    cells = []
    for c in cols:
        m, ok, moved = c.get(key, (None, None, None))
        bad = " FAIL" if ok and "FAIL" in str(ok) else ""
        mv = f", {moved} B" if moved is not None else ""
        cells.append(f"{m:.3f} ({ms / m:.2f}x{mv}){bad}" if m and ms else "-")
    print(f"| {key[0]} | {key[1]} | {ms:.3f} | " + " | ".join(cells) + " |"
          if ms else f"| {key[0]} | {key[1]} | - | " + " | ".join(cells) + " |")
EOF
