#!/bin/sh
# bench/gpu/split_probe.sh: split_probe (bench/gpu/split_probe.c) on one
# GPU, on GPUs 0-3 with and without its device-side timeline (stamps:
# runtime-gpu/multi.c, "Timeline", a temporary measurement of session 31),
# with device 0's joins on a side stream ($WEFT_PTX_SPLIT_MODE=2), with 2
# and 4 pieces a block of a spread fold's part
# ($WEFT_PTX_SPREAD_PIECES, the sum alone), and on GPUs 0,1.  Run from the
# unpacked bundle; needs four GPUs to itself.
#
# Usage: sh bench/gpu/split_probe.sh [runs] [largest exponent] [smallest]
#        (21 30 24)
set -u
runs=${1:-21}
top=${2:-30}
low=${3:-24}
gcc -std=c17 -O2 -Iinclude bench/gpu/split_probe.c -o split_probe -L. \
    -lweft -Wl,-rpath,'$ORIGIN' -ldl -lm || exit 1
echo "== one GPU"
WEFT_DEVICES=0 ./split_probe "$runs" "$top" "$low"
echo "== 0,1,2,3"
WEFT_DEVICES=0,1,2,3 ./split_probe "$runs" "$top" "$low"
echo "== 0,1,2,3, device 0's joins on a side stream (WEFT_PTX_SPLIT_MODE=2)"
WEFT_DEVICES=0,1,2,3 WEFT_PTX_SPLIT_MODE=2 ./split_probe "$runs" "$top" "$low"
echo "== 0,1,2,3 timeline"
SPLIT_STAMPS=1 WEFT_DEVICES=0,1,2,3 ./split_probe "$runs" "$top" "$low"
for p in 2 4; do
    echo "== 0,1,2,3 timeline, sum, $p pieces a block"
    SPLIT_STAMPS=1 SPLIT_ONLY=sum WEFT_DEVICES=0,1,2,3 \
        WEFT_PTX_SPREAD_PIECES=$p ./split_probe "$runs" "$top" "$low"
done
echo "== 0,1"
WEFT_DEVICES=0,1 ./split_probe "$runs" "$top" "$low"
