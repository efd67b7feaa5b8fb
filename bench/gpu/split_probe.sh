#!/bin/sh
# bench/gpu/split_probe.sh: split_probe (bench/gpu/split_probe.c) on one
# GPU, on GPUs 0,1 and on GPUs 0-3, from the unpacked bundle (the
# several-GPU timings need the machine to themselves).
#
# Usage: sh bench/gpu/split_probe.sh [runs] [largest exponent] [smallest]
#        (21 28 24); SPLIT_ONLY=sum (or saxpy) times one program.
set -u
runs=${1:-21}
top=${2:-28}
low=${3:-24}
gcc -std=c17 -O2 -Iinclude bench/gpu/split_probe.c -o split_probe -L. \
    -lweft -Wl,-rpath,'$ORIGIN' -ldl -lm || exit 1
for d in 0 0,1 0,1,2,3; do
    WEFT_DEVICES=$d ./split_probe "$runs" "$top" "$low"
done
