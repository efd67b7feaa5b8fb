#!/bin/sh
# bench/gpu/km3_variants.sh: TEMPORARY (helper km3, issue 22; removed
# before the branch is final).  k-means, the histogram and sum under the
# $WEFT_KM3 variants ("copies,bound,chunk": copies 1 = the old copy a
# warp in ptx/permute.c's entry 2, bound = that entry's launch bound in
# threads for several leaves, chunk = ptx/fold.c's chunk_min), each with
# its own kernel cache.  Run from the unpacked bundle:
#   sh bench/gpu/km3_variants.sh OUTDIR
out=${1:-/tmp/km3v}
mkdir -p "$out"
cd "$(dirname "$0")/../.." || exit 2
gcc -std=c17 -O2 -Iinclude bench/gpu/loop_probe.c -o loop_probe -L. -lweft \
    -Wl,-rpath,'$ORIGIN' -lm || exit 1
[ -e bench_weft_gpu.so ] && [ -e bench_ref_gpu.so ] ||
    GPUBENCH_ARGS="--only sum --no-peers" sh bench/gpu/run.sh "$out/build" \
        >/dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for v in 0,0,0 1,0,0 0,1024,0 0,0,32768 0,0,8192 0,0,0; do
    echo "== WEFT_KM3=$v"
    WEFT_KM3=$v WEFT_CACHE_DIR=/tmp/km3c/$v LOOP_PROBE_ONLY=kmeans-while \
        ./loop_probe 5 2>&1 | tail -3
    WEFT_KM3=$v WEFT_CACHE_DIR=/tmp/km3c/$v timeout 300 python3 -u \
        bench/gpu/run.py "$out/$v" --weft-lib ./bench_weft_gpu.so \
        --ref-lib ./bench_ref_gpu.so --only kmeans-while,histogram,sum \
        --no-peers >"$out/$v.log" 2>&1
    grep -E "^\| *(kmeans|histogram|sum)" "$out/$v/gpu.md" 2>/dev/null |
        head -20
done
