#!/bin/sh
# bench/gpu/hist_dyn.sh: issue 20's histogram, the static chunks of entry
# 2 against units claimed dynamically ($WEFT_PTX_PERMUTE_DYN, the log2 of
# the unit), timed by bench/gpu/hist_probe.c on one, two and four GPUs,
# then each block's stamps ($WEFT_PTX_PERMUTE_STAMPS=1, summed up by
# bench/gpu/hist_stamps.py), from the unpacked bundle on the GPU machine.
# Usage: sh bench/gpu/hist_dyn.sh [runs]   (HIST_DYN: the variants,
# default "0 14 16 18"; HIST_STAMPS=0: no stamps)
set -u
cd "$(dirname "$0")/../.." || exit 2
runs=${1:-10}
gcc -std=c17 -O2 -Iinclude bench/gpu/hist_probe.c -o hist_probe -L. -lweft \
    -ldl -Wl,-rpath,'$ORIGIN' || exit 1
dyn=${HIST_DYN:-0 14 16 18}
echo "== one GPU"
HIST_DYN="$dyn" ./hist_probe "$runs" 67108864 268435456 1073741824
echo "== WEFT_DEVICES=0,1,2,3"
WEFT_DEVICES=0,1,2,3 HIST_DYN="$dyn" ./hist_probe "$runs" 67108864 \
    268435456 1073741824
echo "== WEFT_DEVICES=0,1"
WEFT_DEVICES=0,1 HIST_DYN="$dyn" ./hist_probe "$runs" 268435456 1073741824
echo "== WEFT_DEVICES=0,1,2,3 WEFT_PTX_PERMUTE_CHUNKS=16 (static, interleaved)"
WEFT_DEVICES=0,1,2,3 WEFT_PTX_PERMUTE_CHUNKS=16 HIST_DYN=0 ./hist_probe "$runs" \
    268435456 1073741824
[ "${HIST_STAMPS:-1}" = 0 ] && exit 0
tmp=$(mktemp -d)
stamps() { # stamps DEVICES N DYN (DEVICES 1: one GPU, no $WEFT_DEVICES)
    if [ "$1" = 1 ]; then
        WEFT_PTX_PERMUTE_STAMPS=1 HIST_DYN=$3 ./hist_probe 1 "$2" \
            >"$tmp/s.txt" 2>&1
    else
        WEFT_DEVICES=$1 WEFT_PTX_PERMUTE_STAMPS=1 HIST_DYN=$3 \
            ./hist_probe 1 "$2" >"$tmp/s.txt" 2>&1
    fi
    grep '^\[' "$tmp/s.txt"
    python3 bench/gpu/hist_stamps.py "$tmp/s.txt" "devices $1 n $2 dyn $3"
}
for n in 268435456 1073741824; do
    for d in 0 16; do
        stamps 1 $n $d
        stamps 0,1,2,3 $n $d
    done
done
rm -rf "$tmp"
