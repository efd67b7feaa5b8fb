#!/bin/sh
# bench/gpu/km3_variants.sh: TEMPORARY (helper km3, issue 22; removed
# before the branch is final).  k-means (loop_probe), the histogram and
# sum (run.py) under $WEFT_KM3 variants, "copies,bound,chunk": copies 1 =
# the old copy a warp in ptx/permute.c's entry 2, 2 = no batched f32
# adds; bound = that entry's launch bound (threads) for several leaves;
# chunk = ptx/fold.c's chunk_min; each variant with its own kernel cache.
# Run from the unpacked bundle: sh bench/gpu/km3_variants.sh OUTDIR
out=${1:-/tmp/km3v}
mkdir -p "$out"
cd "$(dirname "$0")/../.." || exit 2
gcc -std=c17 -O2 -Iinclude bench/gpu/loop_probe.c -o loop_probe -L. -lweft \
    -Wl,-rpath,'$ORIGIN' -lm || exit 1
[ -e bench_weft_gpu.so ] && [ -e bench_ref_gpu.so ] ||
    GPUBENCH_ARGS="--only sum --no-peers" sh bench/gpu/run.sh "$out/build" \
        >/dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
probe() { # variant, programs for run.py
    v=$1
    echo "== WEFT_KM3=$v"
    WEFT_KM3=$v WEFT_CACHE_DIR=/tmp/km3c/$v WEFT_TIERING=0 \
        LOOP_PROBE_ONLY=kmeans-while ./loop_probe 5 2>&1 | tail -1
    WEFT_KM3=$v WEFT_CACHE_DIR=/tmp/km3c/$v timeout 200 python3 -u \
        bench/gpu/run.py "$out/$v" --weft-lib ./bench_weft_gpu.so \
        --ref-lib ./bench_ref_gpu.so --only "$2" --no-peers \
        >"$out/$v.log" 2>&1
    grep -E "^\| *(kmeans|kmeans-while|histogram|sum) \| [0-9]" \
        "$out/$v/gpu.md" 2>/dev/null
}
probe 0,0,0 kmeans-while,kmeans,histogram,sum
probe 2,0,0 kmeans-while,kmeans
probe 1,0,0 kmeans-while,histogram
probe 0,1024,0 kmeans-while
probe 0,0,32768 kmeans-while,sum
probe 0,0,8192 kmeans-while,sum
probe 0,0,0 kmeans-while,histogram,sum
