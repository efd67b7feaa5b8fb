#!/bin/sh
# bench/gpu/hist_probe.sh: the histogram's scaling over the GPUs of one
# host (issue 20), from the unpacked bundle on the GPU machine: builds
# bench/gpu/hist_probe.c and runs it on one GPU, `0,0`, two and four GPUs
# (2^26, 2^28 and 2^30 keys), each traced once more at 2^28 and 2^30 keys
# for the kernel times (one GPU's kernel, each split part's:
# bench/gpu/trace_kernels.py); four GPUs again with each
# $WEFT_PTX_PERMUTE_CHUNKS of HIST_CHUNKS; and, where ncu is found, an
# Nsight Compute profile of device 1's part on four GPUs (2^28 keys).
# Everything goes to stdout.
#
# Usage: sh bench/gpu/hist_probe.sh [runs]
#   HIST_LISTS (default "0,0 0,1 0,1,2,3"),
#   HIST_CHUNKS (default none), NCU (the ncu binary), HIST_NCU=0 (no
#   profiles).
set -u
cd "$(dirname "$0")/../.." || exit 2
runs=${1:-20}
gcc -std=c17 -O2 -Iinclude bench/gpu/hist_probe.c -o hist_probe -L. -lweft \
    -ldl -Wl,-rpath,'$ORIGIN' || exit 1
tmp=$(mktemp -d)
probe() { # probe LABEL [ENV...]: the probe, then traced at 2^28 and 2^30
    label=$1
    shift
    echo "== $label"
    env "$@" ./hist_probe "$runs"
    for n in 268435456 1073741824; do
        echo "-- traced, $n keys"
        env "$@" WEFT_TRACE="$tmp/t.json" ./hist_probe 5 "$n" >/dev/null &&
            python3 bench/gpu/trace_kernels.py "$tmp/t.json" |
            sed -n '/^kernel entry/,/^$/p;/^split kernel | launches/,/^$/p'
        rm -f "$tmp/t.json"
    done
}
probe "one GPU"
for list in ${HIST_LISTS:-0,0 0,1 0,1,2,3}; do
    probe "WEFT_DEVICES=$list" WEFT_DEVICES="$list"
done
for c in ${HIST_CHUNKS:-}; do
    echo "== WEFT_DEVICES=0,1,2,3 WEFT_PTX_PERMUTE_CHUNKS=$c"
    WEFT_DEVICES=0,1,2,3 WEFT_PTX_PERMUTE_CHUNKS=$c ./hist_probe "$runs"
done
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
if [ "${HIST_NCU:-1}" != 0 ] && [ -x "$ncu" ]; then
    echo "== ncu: four GPUs, device 1's part, 2^28 keys, its third launch"
    WEFT_DEVICES=0,1,2,3 $ncu --devices 1 \
        --launch-skip 2 --launch-count 1 --section SpeedOfLight \
        --section LaunchStats --section WarpStateStats \
        --section SchedulerStats ./hist_probe 2 268435456
fi
rm -rf "$tmp"
