#!/bin/sh
# bench/gpu/run.sh: the GPU benchmark, on the GPU machine, from the unpacked
# bundle (tools/gpu-bundle.sh; it holds libweft.so, include/ and bench/gpu/).
# Builds bench_weft_gpu.so (weft_gpu.c, gcc, against ./libweft.so) and
# bench_ref_gpu.so (ref.cu, nvcc), runs bench/gpu/run.py, which writes
# gpu.md, gpu.json (the same tables, one object per program and
# implementation) and run.log into OUTDIR, and prints gpu.md.
#
# Usage: sh bench/gpu/run.sh OUTDIR
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# CUDA_ARCH (sm_90), PYTHON (python3), GPUBENCH_TIMEOUT (seconds, 560),
# GPUBENCH_ARGS (more run.py options, e.g. "--only saxpy,sum"),
# GPUBENCH_WRAP (a command put in front of run.py's, e.g. an ncu command
# line: bench/gpu/profile.sh).
set -eu
out=${1:?usage: sh bench/gpu/run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
[ -e libweft.so ] || { echo "run.sh: no libweft.so in $(pwd)" >&2; exit 2; }

nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
arch=${CUDA_ARCH:-sm_90}
# each library rebuilt only where a source (or libweft.so) is newer:
# scaling.sh runs this once per device list, and the reference's nvcc
# alone takes tens of seconds (another CUDA_ARCH: remove bench_ref_gpu.so)
if [ ! bench_weft_gpu.so -nt bench/gpu/weft_gpu.c ] ||
    [ ! bench_weft_gpu.so -nt bench/programs.h ] ||
    [ ! bench_weft_gpu.so -nt libweft.so ]; then
    ${CC:-gcc} -std=c17 -O2 -Wall -shared -fPIC -Iinclude bench/gpu/weft_gpu.c \
        -o bench_weft_gpu.so -L. -lweft -Wl,-rpath,'$ORIGIN' -lm
fi
if [ ! bench_ref_gpu.so -nt bench/gpu/ref.cu ]; then
    "$nvcc" -O3 -arch="$arch" -lineinfo -Xcompiler -fPIC -shared \
        bench/gpu/ref.cu -o bench_ref_gpu.so
fi

export XLA_PYTHON_CLIENT_PREALLOCATE=false
limit=${GPUBENCH_TIMEOUT:-560}
if command -v timeout >/dev/null 2>&1; then
    run() { timeout "$limit" "$@"; }
else
    run() { "$@"; }
fi
rc=0
# shellcheck disable=SC2086
run ${GPUBENCH_WRAP:-} ${PYTHON:-python3} -u bench/gpu/run.py "$out" \
    --weft-lib ./bench_weft_gpu.so --ref-lib ./bench_ref_gpu.so \
    ${GPUBENCH_ARGS:-} || rc=$?
[ $rc -eq 124 ] && echo "run.sh: run.py stopped after ${limit}s" >&2
echo
if [ -e "$out/gpu.md" ]; then
    cat "$out/gpu.md"
else
    echo "run.sh: run.py wrote no report (exit status $rc)" >&2
fi
exit $rc
