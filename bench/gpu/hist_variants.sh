#!/bin/sh
# bench/gpu/hist_variants.sh: issue 20's histogram under the variants of
# entry 2 of the PTX permute (skeletons-ir/ptx/permute.c), from the
# unpacked bundle on the GPU machine: bench/gpu/hist_probe.c on one, four
# and two GPUs, each size with the default (each block every grid-th
# chunk, two a block) and, with $WEFT_PTX_PERMUTE_CHUNKS=8, the same and
# with chunks claimed in turn ($WEFT_PTX_PERMUTE_CLAIM=1), over the same
# keys; then the claims with $WEFT_PTX_PERMUTE_CHUNKS of HIST_CHUNKS
# chunks per resident block.  Each hist_probe line prints as it
# is made (its own timeout, so that one slow probe does not hide the
# others' lines).
# Usage: sh bench/gpu/hist_variants.sh [runs]
#   HIST_CHUNKS (default "4 16"), HIST_TIMEOUT (seconds a probe, 40).
set -u
cd "$(dirname "$0")/../.." || exit 2
runs=${1:-10}
gcc -std=c17 -O2 -Iinclude bench/gpu/hist_probe.c -o hist_probe -L. -lweft \
    -ldl -Wl,-rpath,'$ORIGIN' || exit 1
vars="- WEFT_PTX_PERMUTE_CLAIM=1"
probe() { # probe DEVICES [SIZE ...] (DEVICES 1: one GPU)
    devs=$1
    shift
    if [ "$devs" = 1 ]; then
        timeout "${HIST_TIMEOUT:-40}" ./hist_probe "$runs" "$@"
    else
        WEFT_DEVICES=$devs timeout "${HIST_TIMEOUT:-40}" ./hist_probe \
            "$runs" "$@"
    fi
}
for devs in 1 0,1,2,3 0,1; do
    echo "== devices $devs"
    probe $devs 67108864 268435456 1073741824
    echo "== devices $devs WEFT_PTX_PERMUTE_CHUNKS=8"
    export HIST_VARS="$vars" WEFT_PTX_PERMUTE_CHUNKS=8
    probe $devs 67108864 268435456 1073741824
    unset HIST_VARS WEFT_PTX_PERMUTE_CHUNKS
done
for c in ${HIST_CHUNKS:-4 16}; do
    for devs in 1 0,1,2,3; do
        echo "== devices $devs WEFT_PTX_PERMUTE_CLAIM=1 CHUNKS=$c"
        export WEFT_PTX_PERMUTE_CLAIM=1 WEFT_PTX_PERMUTE_CHUNKS=$c
        probe $devs 268435456 1073741824
        unset WEFT_PTX_PERMUTE_CLAIM WEFT_PTX_PERMUTE_CHUNKS
    done
done
