#!/bin/sh
# bench/gpu/seg3_variants.sh: TEMPORARY (helper seg3, issue 22; removed
# before the branch is final).  smvm_probe under the $WEFT_SEG3 variants of
# skeletons-ir/ptx/foldseg.c ("stage_bytes,min_blocks,cascade,narrow,S,
# short_seg,flight,total,walk32,reload": bytes a thread stages a round, launch
# bounds, the short round's guards, 32-bit reads where the arrays allow,
# segments
# a thread, the longest segment of a short tile, slots read before their
# stores, the merge path's round total from the last thread's own carry,
# the merge path's walk in 32 bits, offsets reloaded after the look-back),
# each with its own kernel cache, and test_ptx_foldseg under some of them.
# Run from the unpacked bundle: sh bench/gpu/seg3_variants.sh
cd "$(dirname "$0")/../.." || exit 2
# the optimised code from the first run (a fresh cache would otherwise time
# the quick code of tiered compilation)
export WEFT_TIERING=0
gcc -std=c17 -O2 -Iinclude bench/gpu/smvm_probe.c -o smvm_probe -L. -lweft \
    -Wl,-rpath,'$ORIGIN' -lm || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
echo "== default"
WEFT_CACHE_DIR=/tmp/seg3c$$/def ./smvm_probe ptx 21 smvm
# main's code first (no guards, no narrow reads, the old round total, the
# 64-bit walk, no reload)
for v in 32,3,0,0,1,256,8,0,0,0 32,3,1,1,1,256,8,1,1,0 32,3,1,1,2 32,4,1,1,1 32,4,1,1,2 \
         64,3,1,1,1 64,3,1,1,2 32,3,1,0,1 32,3,1,1,1,256,8,1,0 \
         32,5,1,1,1,256,2 64,3,1,1,2,128 64,4,1,1,2; do
    echo "== WEFT_SEG3=$v"
    WEFT_SEG3=$v WEFT_CACHE_DIR=/tmp/seg3c$$/$v ./smvm_probe ptx 21 smvm
done
echo "== default again"
WEFT_CACHE_DIR=/tmp/seg3c$$/def ./smvm_probe ptx 21 smvm
for v in 32,3,1,1,2 64,4,1,1,2 32,3,1,0,1,256,8,0,0,0; do
    echo "== test_ptx_foldseg WEFT_SEG3=$v"
    WEFT_SEG3=$v WEFT_CACHE_DIR=/tmp/seg3c$$/t$v CK_FORK=no ./test_ptx_foldseg \
        2>&1 | tail -5
done
