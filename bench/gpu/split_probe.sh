#!/bin/sh
# bench/gpu/split_probe.sh: split_probe (bench/gpu/split_probe.c) with its
# device-side timeline on one GPU and on GPUs 0-3 under each queueing
# variant of $WEFT_PTX_SPLIT_MODE (runtime-gpu/multi.c, "Timeline"; a
# temporary measurement of session 31) and of $WEFT_PTX_SPREAD_PIECES (a
# cap on the pieces of a spread fold's part, whose last block reads their
# partials over NVLink), then once without the stamps (what they cost),
# and, where the machine has nsys, its kernel trace of one four-GPU probe.  Run from the unpacked bundle; needs four GPUs to itself.
#
# Usage: sh bench/gpu/split_probe.sh [runs] [largest exponent] [smallest]
#        (21 28 24)
set -u
runs=${1:-21}
top=${2:-28}
low=${3:-24}
gcc -std=c17 -O2 -Iinclude bench/gpu/split_probe.c -o split_probe -L. \
    -lweft -Wl,-rpath,'$ORIGIN' -ldl -lm || exit 1
echo "== one GPU"
SPLIT_STAMPS=1 WEFT_DEVICES=0 ./split_probe "$runs" "$top" "$low"
for m in 0 1 2 3; do
    echo "== 0,1,2,3 mode $m"
    SPLIT_STAMPS=1 WEFT_DEVICES=0,1,2,3 WEFT_PTX_SPLIT_MODE=$m \
        ./split_probe "$runs" "$top" "$low"
done
echo "== 0,1,2,3 relays"
SPLIT_STAMPS=1 WEFT_DEVICES=0,1,2,3 WEFT_PTX_RELAYS=1 \
    ./split_probe "$runs" "$top" "$low"
for c in 1024 256; do
    echo "== 0,1,2,3 mode 0, a spread fold's part in $c pieces at most"
    SPLIT_STAMPS=1 WEFT_DEVICES=0,1,2,3 WEFT_PTX_SPREAD_PIECES=$c \
        ./split_probe "$runs" "$top" "$low"
done
echo "== 0,1,2,3 mode 3, 1024 pieces"
SPLIT_STAMPS=1 WEFT_DEVICES=0,1,2,3 WEFT_PTX_SPLIT_MODE=3 \
    WEFT_PTX_SPREAD_PIECES=1024 ./split_probe "$runs" "$top" "$low"
echo "== 0,1,2,3 mode 0, no stamps"
WEFT_DEVICES=0,1,2,3 ./split_probe "$runs" "$top" "$low"
if command -v nsys >/dev/null 2>&1; then
    echo "== nsys: 0,1,2,3 mode 0, 2^$top, 5 runs"
    tmp=$(mktemp -d)
    WEFT_DEVICES=0,1,2,3 timeout 60 nsys profile -t cuda -o "$tmp/sp" \
        ./split_probe 5 "$top" "$top" >/dev/null 2>&1 &&
        timeout 30 nsys stats -q -r cuda_gpu_trace -f csv "$tmp/sp.nsys-rep" |
        tail -n 80
    rm -rf "$tmp"
else
    echo "== no nsys"
fi
