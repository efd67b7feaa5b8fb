#!/bin/sh
# bench/run.sh: build libweft (Release, in build-bench/) and the CPU
# benchmark, run it, and write bench/results/cpu.md, with the same tables
# as JSON in bench/results/cpu.json (one object per program and
# implementation, with the commit and the machine: for comparing runs).
#
# Usage: bench/run.sh [weft_bench options]   e.g. bench/run.sh -t 4 -r 9
# (-p n-body runs only the programs whose name contains "n-body")
# Columns: weft (strict and with WEFT_FLAG_FAST_MATH) against C/OpenMP
# (strict and -ffast-math) and numba where it is installed, the floor
# (bytes over copy bandwidth); scipy.sparse and scikit-learn beside smvm
# and k-means; the CPU use of each implementation's runs (CPU time over
# wall time, with a warning where a run on T > 1 threads kept fewer than
# (T + 1) / 2 CPUs busy: its time is not a T-thread time); thread scaling
# of the compute-bound programs.
# (-q runs a quick smoke at 1/16 of the sizes and writes nothing unless -o
# is given.)  Needs what the library needs (LLVM 19) and GCC with OpenMP.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-bench"
cd "$root"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF \
      -DWEFT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target weft -j "$(nproc)" >/dev/null

llvm=$( (llvm-config-19 --version || llvm-config --version) 2>/dev/null ||
        echo 19)
commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
cc=${CC:-gcc}
# One program: weft_bench.c (uses only weft.h) and ref.c (the references),
# both with the flags the references are judged by; ref.c once more with
# -ffast-math (-DREF_FAST names its functions reff_*: the fast columns).
flags="-std=c17 -O3 -march=native -fopenmp -fno-math-errno -Wall -Wextra"
$cc $flags -c bench/ref.c -o "$build/ref.o"
$cc $flags -ffast-math -DREF_FAST -c bench/ref.c -o "$build/ref_fast.o"
$cc $flags -DWEFT_BENCH_LLVM="\"$llvm\"" -DWEFT_BENCH_COMMIT="\"$commit\"" \
    -Iinclude bench/weft_bench.c "$build/ref.o" "$build/ref_fast.o" \
    -o "$build/weft_bench" -L"$build" -lweft -Wl,-rpath,"$build" -lm

# The numba column (bench/numba_ref.py) appears where python3 can import
# numba (`pip install numba`); without it the column says "-".  Likewise
# the other peers of smvm and k-means: scipy.sparse and scikit-learn
# (`pip install scipy scikit-learn`).  bench/programs.h holds the weft
# programs of smvm, Jacobi and k-means (shared with the GPU benchmark).

# OpenMP threads sleep between parallel regions rather than spin, so that
# they do not take cores from weft's gang while weft is timed (and the
# gang's workers sleep when idle too).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
quick=0
for a in "$@"; do
    [ "$a" = "-q" ] && quick=1
done
if [ $quick = 1 ]; then
    exec "$build/weft_bench" "$@"
fi
mkdir -p bench/results
exec "$build/weft_bench" -o bench/results/cpu.md "$@"
