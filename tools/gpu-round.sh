#!/bin/sh
# tools/gpu-round.sh: one round of checks on the GPU machine, in one device
# call, from the repository root there (the working tree travels; carry
# .device for the bundle of tools/gpu-bundle.sh and .whl for the Python
# wheels that machine lacks: cffi, pycparser, pytest and its needs).
#
# Usage: sh tools/gpu-round.sh STAGE...   (logs and pictures into $OUT)
#
#   info      weft-info, text and --json                     -> info.txt
#   tests     run-tests.sh on ptx ($TESTS: which; all if unset) -> tests.txt
#   phases    each bench/gpu program's first compile, by phase, on a new
#             CUDA cache (the driver's own of compiled PTX) -> phases.md
#   overhead  weft's cost per run against CUDA's floor (bench/gpu/overhead.c)
#             -> overhead.md
#   link      the driver's PTX link, by option, first call, threads
#             (bench/gpu/link_probe.c on bench/gpu/ptx/, the driver's own
#             cache off, then on)                            -> link.txt
#   trace     a WEFT_TRACE of examples/dotp on ptx, checked   -> trace.txt
#   python    the pytest suite with torch and cupy present     -> python.txt
#   examples  Mandelbrot on cpu and ptx (PNGs), torch_interop  -> examples.txt
#   bench     bench/gpu/run.sh with every peer                 -> gpu/
#   pybench   bench/python on ptx and cpu, and the per-call overhead
#             -> pybench.txt, python-ptx.{md,json}, python-cpu.{md,json}
#
# Each stage runs even when an earlier one failed; the exit status is the
# number of failed stages.  The device tool brings back at most 8 files:
# pick stages accordingly.
set -u
out=${OUT:-/tmp/gpu-round}
mkdir -p "$out"
root=$(pwd)
w=/tmp/weft-bundle
if [ ! -x "$w/weft-info" ]; then
    mkdir -p "$w" && tar -xJf .device/weft-gpu.tar.xz -C "$w" || exit 2
fi
if [ -d .whl ] && [ ! -d /tmp/site ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile \
        --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 ||
        echo "gpu-round: the wheels did not install" >&2
fi
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
py_env="WEFT_LIBRARY=$w/libweft.so WEFT_INCLUDE=$root/include"

failed=0
stage() {  # stage NAME LOG COMMAND...: run COMMAND, log to $out/LOG
    name=$1 log=$out/$2
    shift 2
    t0=$(date +%s)
    if "$@" >>"$log" 2>&1; then
        r=ok
    else
        r="FAILED ($?)"
        failed=$((failed + 1))
    fi
    echo "gpu-round: $name: $r in $(($(date +%s) - t0)) s" | tee -a "$log"
}

for s in "$@"; do
    case $s in
    info)
        stage info info.txt sh -c "cd $w && ./weft-info && ./weft-info --json"
        ;;
    tests)
        # shellcheck disable=SC2086
        stage tests tests.txt sh -c \
            "cd $w && WEFT_BACKEND=ptx WEFT_TEST_TIMEOUT=400 ./run-tests.sh ${TESTS:-}"
        ;;
    phases)
        # a new, empty CUDA cache (the driver keeps the cubins of PTX it
        # compiled; a warm one would hide its link)
        stage phases phases.md sh -c "cd $w && gcc -std=c17 -O2 \
            -DWG_PHASES_MAIN -Iinclude bench/gpu/weft_gpu.c -o wg_phases \
            -L. -lweft -Wl,-rpath,'\$ORIGIN' -lm && \
            CUDA_CACHE_PATH=\$(mktemp -d) ./wg_phases && ./wg_phases cpu"
        ;;
    overhead)
        stage overhead overhead.md sh -c "cd $w && gcc -std=c17 -O2 -Iinclude \
            bench/gpu/overhead.c -o overhead -L. -lweft -Wl,-rpath,'\$ORIGIN' \
            -ldl -lm && WEFT_CACHE_DIR=\$(mktemp -d) ./overhead"
        ;;
    link)
        stage link link.txt sh -c "cd $w/bench/gpu/ptx && \
            f='saxpy.ptx mandelbrot.ptx blackscholes.ptx dotp.ptx scan.ptx nbody-fold.ptx' && \
            gcc -std=c17 -O2 ../link_probe.c -o ../lp -ldl -lpthread && \
            gcc -std=c17 -O2 -DLP_WEFT -I$w/include ../link_probe.c -o ../lpw \
                -L$w -lweft -Wl,-rpath,$w -ldl -lpthread && \
            echo '== the driver cache off' && CUDA_CACHE_DISABLE=1 ../lp \$f && \
            echo '== off, after a failed link' && \
            LP_WARM=1 CUDA_CACHE_DISABLE=1 ../lp saxpy.ptx mandelbrot.ptx && \
            echo '== off, in a weft process' && \
            CUDA_CACHE_DISABLE=1 ../lpw saxpy.ptx mandelbrot.ptx && \
            echo '== on, a new cache' && \
            CUDA_CACHE_PATH=\$(mktemp -d) ../lp saxpy.ptx mandelbrot.ptx"
        ;;
    trace)
        stage trace trace.txt sh -c "d=\$(mktemp -d) && cd $w && \
            WEFT_BACKEND=ptx WEFT_CACHE_DIR=\$d WEFT_TRACE=\$d/t.json ./dotp && \
            python3 bench/gpu/trace_check.py \$d/t.json ptx"
        ;;
    python)
        stage python python.txt sh -c "env $py_env python3 -m pytest -q \
            -p no:cacheprovider -rs python/tests"
        ;;
    examples)
        stage examples examples.txt sh -c "export $py_env PYTHONPATH=\${PYTHONPATH:-}:python && \
            python3 examples/python/mandelbrot.py --backend ptx --out $out/mandelbrot-ptx.png && \
            python3 examples/python/mandelbrot.py --backend cpu --out $out/mandelbrot-cpu.png && \
            python3 examples/python/torch_interop.py"
        ;;
    pybench)
        stage pybench pybench.txt sh -c "export $py_env && \
            python3 bench/python/overhead.py --backend cpu && \
            python3 bench/python/overhead.py --backend ptx && \
            python3 bench/python/bench.py --backend ptx --out $out/python-ptx && \
            python3 bench/python/bench.py --backend cpu --out $out/python-cpu"
        ;;
    bench)
        stage bench bench.txt sh "$w/bench/gpu/run.sh" "$out/gpu"
        ;;
    *)
        echo "gpu-round: no stage $s" >&2
        failed=$((failed + 1))
        ;;
    esac
done
exit $failed
