#!/bin/sh
# bench/gpu/seg4_variants.sh: TEMPORARY (helper seg4, issue 22; removed
# before the branch is final).  smvm_probe and test_ptx_foldseg under the
# knobs of the two-pass foldSeg (skeletons-ir/ptx/foldseg.c, entries 1 and
# 2): $WEFT_SEG4=1 the one-pass kernel (entry 0, main's), $WEFT_SEG4_LG
# log2 of the lanes a segment (the driver's choice otherwise),
# $WEFT_SEG4_U elements a lane reads a trip, $WEFT_SEG4_LONG trips past
# which a segment is long (0: no long path), $WEFT_SEG4_UL a lane's
# elements a trip of a long one, $WEFT_SEG4_BLK entry 2's
# launch bounds (blocks of 256 a multiprocessor); each variant with its
# own kernel cache.  Run from the unpacked bundle:
#   sh bench/gpu/seg4_variants.sh [probe|shapes|tests|all]
cd "$(dirname "$0")/../.." || exit 2
export WEFT_TIERING=0
what=${1:-all}
gcc -std=c17 -O2 -Iinclude bench/gpu/smvm_probe.c -o smvm_probe -L. -lweft \
    -Wl,-rpath,'$ORIGIN' -lm || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
c=/tmp/seg4c$$
run() { # name, then env assignments
    name=$1
    shift
    echo "== $name"
    env "$@" WEFT_CACHE_DIR=$c/$name ./smvm_probe ptx 21 smvm
}
if [ "$what" = probe ] || [ "$what" = all ]; then
    run onepass WEFT_SEG4=1
    run default
    run nolong WEFT_SEG4_LONG=0
    run nolong-U1 WEFT_SEG4_LONG=0 WEFT_SEG4_U=1
    run nolong-U4-L4 WEFT_SEG4_LONG=0 WEFT_SEG4_U=4 WEFT_SEG4_LG=2
    run nolong-U2-L4 WEFT_SEG4_LONG=0 WEFT_SEG4_LG=2
    run blk5 WEFT_SEG4_BLK=5
    run blk4 WEFT_SEG4_BLK=4
    run UL2 WEFT_SEG4_UL=2
    run long4 WEFT_SEG4_LONG=4
    run long1-blk4 WEFT_SEG4_LONG=1 WEFT_SEG4_BLK=4
    run U4-L2-blk4 WEFT_SEG4_U=4 WEFT_SEG4_LG=1 WEFT_SEG4_BLK=4
    run onepass-again WEFT_SEG4=1
    run default-again
fi
if [ "$what" = shapes ] || [ "$what" = all ]; then
    gcc -std=c17 -O2 -Iinclude bench/gpu/seg4_probe.c -o seg4_probe -L. \
        -lweft -Wl,-rpath,'$ORIGIN' -lm || exit 1
    for v in "WEFT_SEG4=1" "def" "WEFT_SEG4_LONG=0" "WEFT_SEG4_BLK=5"; do
        echo "== seg4_probe $v"
        env $([ "$v" = def ] || echo "$v") WEFT_CACHE_DIR=$c/s$(echo "$v" | tr ' =' '__') \
            ./seg4_probe 21
    done
fi
if [ "$what" != probe ] && [ "$what" != shapes ]; then
    for v in "def" "WEFT_SEG4_LG=0" "WEFT_SEG4_LG=1" "WEFT_SEG4_LG=5" \
             "WEFT_SEG4_U=1" "WEFT_SEG4_LONG=0" "WEFT_SEG4_LONG=1" \
             "WEFT_SEG4_U=3 WEFT_SEG4_LG=2 WEFT_SEG4_UL=3" "WEFT_SEG4=1"; do
        echo "== test_ptx_foldseg $v"
        env $([ "$v" = def ] || echo "$v") WEFT_CACHE_DIR=$c/t$(echo "$v" | tr ' =' '__') \
            CK_FORK=no ./test_ptx_foldseg 2>&1 | tail -3
    done
fi
rm -rf $c
