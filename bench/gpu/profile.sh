#!/bin/sh
# bench/gpu/profile.sh: Nsight Compute profiles of the GPU benchmark's
# kernels (weft's and the hand-written CUDA/CUB reference's), on the GPU
# machine, from the unpacked bundle.
#
# Usage: sh bench/gpu/profile.sh OUTDIR PROGRAM...
# For each program (a run.py key: saxpy, sum, dotp, scan, blackscholes,
# nbody, mandelbrot, histogram) it runs the benchmark for that program
# alone, without the Python peers, under ncu, profiling the first
# NCU_LAUNCHES (16) kernel launches (weft's kernels are named wk_*; the
# reference's are ref.cu's and CUB's), and writes OUTDIR/ncu-PROGRAM.txt
# (ncu's details page: speed of light, occupancy, launch statistics,
# scheduler and warp state statistics, memory workload).
set -eu
out=${1:?usage: sh bench/gpu/profile.sh OUTDIR PROGRAM...}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
[ -x "$ncu" ] || { echo "profile.sh: no ncu (set NCU)" >&2; exit 2; }
rc=0
for prog in "$@"; do
    GPUBENCH_WRAP="$ncu --target-processes all --launch-count ${NCU_LAUNCHES:-16} \
--section SpeedOfLight --section Occupancy --section LaunchStats \
--section SchedulerStats --section WarpStateStats \
--section MemoryWorkloadAnalysis --log-file $out/ncu-$prog.txt" \
    GPUBENCH_ARGS="--only $prog --no-peers" \
    GPUBENCH_TIMEOUT=${GPUBENCH_TIMEOUT:-300} \
        sh bench/gpu/run.sh "$out/run-$prog" >"$out/run-$prog.log" 2>&1 || rc=$?
    echo "profile.sh: $prog: $(grep -c 'Section: GPU Speed Of Light' \
        "$out/ncu-$prog.txt" 2>/dev/null || echo 0) kernel launches profiled"
done
exit $rc
