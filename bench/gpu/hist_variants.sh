#!/bin/sh
# bench/gpu/hist_variants.sh: issue 20's histogram under the variants of
# entry 2 of the PTX permute (skeletons-ir/ptx/permute.c), from the
# unpacked bundle on the GPU machine: bench/gpu/hist_probe.c on one, four
# and two GPUs, each size with the default (chunks claimed in turn) and
# with $WEFT_PTX_PERMUTE_STATIC=1 (each block every grid-th chunk), then
# the default with $WEFT_PTX_PERMUTE_CHUNKS of HIST_CHUNKS chunks per
# resident block, then each block's stamps ($WEFT_PTX_PERMUTE_STAMPS=1,
# summed up by bench/gpu/hist_stamps.py; the stamps' vprintf slows the
# blocks' ends, so only the starts, keys and flushes are to be read).
# Usage: sh bench/gpu/hist_variants.sh [runs]
#   HIST_CHUNKS (default "4 16"), HIST_STAMPS=0: no stamps.
set -u
cd "$(dirname "$0")/../.." || exit 2
runs=${1:-10}
gcc -std=c17 -O2 -Iinclude bench/gpu/hist_probe.c -o hist_probe -L. -lweft \
    -ldl -Wl,-rpath,'$ORIGIN' || exit 1
vars="- WEFT_PTX_PERMUTE_STATIC=1"
probe() { # probe DEVICES [SIZE ...] (DEVICES 1: one GPU)
    devs=$1
    shift
    if [ "$devs" = 1 ]; then
        ./hist_probe "$runs" "$@"
    else
        WEFT_DEVICES=$devs ./hist_probe "$runs" "$@"
    fi
}
for devs in 1 0,1,2,3 0,1; do
    echo "== devices $devs"
    export HIST_VARS="$vars"
    probe $devs 67108864 268435456 1073741824
    unset HIST_VARS
done
for c in ${HIST_CHUNKS:-4 16}; do
    for devs in 1 0,1,2,3; do
        echo "== devices $devs WEFT_PTX_PERMUTE_CHUNKS=$c"
        export WEFT_PTX_PERMUTE_CHUNKS=$c
        probe $devs 268435456 1073741824
        unset WEFT_PTX_PERMUTE_CHUNKS
    done
done
[ "${HIST_STAMPS:-1}" = 0 ] && exit 0
tmp=$(mktemp -d)
runs=1
export WEFT_PTX_PERMUTE_STAMPS=1
for s in "1 268435456" "0,1,2,3 1073741824"; do
    set -- $s
    probe "$1" "$2" >"$tmp/s.txt" 2>&1
    grep '^hist' "$tmp/s.txt"
    python3 bench/gpu/hist_stamps.py "$tmp/s.txt" "devices $1 n $2"
done
rm -rf "$tmp"
