#!/usr/bin/env bash
# tools/tsan.sh: the threaded tests under ThreadSanitizer.
#
# Builds weft with -DWEFT_SANITIZE=thread into its own build directory
# (build-tsan, or $1) and runs the tests that use several threads: the gang
# (test_gang), the JIT and its caches under concurrent requests (test_jit),
# the kernel cache's protocol that both runtimes share (test_kcache),
# the CPU backend's concurrent runs of one executable and its multi-chunk
# folds and scans (test_cpu cases concurrent_runs, fold_large, scan_large,
# awhile), cancellation from another thread (test_cancel), and tiered
# compilation: the background thread that swaps optimised code in while
# other threads run the quick code (test_tier), and 8 threads compiling at
# once (test_large concurrent_compiles; batches of kernels on threads and
# an exit during a tier-up, concurrent_batches, many_kernels,
# exit_during_tier_up), the ptx backend's tier-up thread without a GPU
# (test_gpu_tier) and a split launch's queueing threads (test_relay).  Any
# report
# fails the run (halt_on_error); the exit status is 0 when all are clean.
#
#   tools/tsan.sh              build-tsan, -j2
#   JOBS=8 tools/tsan.sh dir   another directory, more jobs
#
# Kernels compiled by the JIT are not instrumented (TSan sees the calls
# into them, not their memory accesses); everything weft's C code does is.
# On kernels with high mmap randomisation TSan needs ASLR off for its
# process: the tests run under `setarch -R` where it exists.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-tsan}
jobs=${JOBS:-2}

cmake -S . -B "$dir" -DWEFT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DWEFT_SANITIZE=thread -DWEFT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$dir" -j"$jobs" --target test_gang test_jit test_cpu \
      test_cancel test_tier test_large test_trace test_gpu_tier test_kcache \
      test_relay

run=()
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
  run=(setarch "$(uname -m)" -R)
fi
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export CK_FORK=no
# Each test gets its own cache directory, so that runs do not share one.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export WEFT_CACHE_DIR=$cache

status=0
one() {
  local name=$1; shift
  printf '%-40s' "$name"
  if "${run[@]}" "$@" >"$dir/tsan-$name.log" 2>&1; then
    echo clean
  else
    echo "FAILED (see $dir/tsan-$name.log)"
    status=1
  fi
}
one test_gang "$dir/test_gang"
one test_jit "$dir/test_jit"
one test_kcache "$dir/test_kcache"
for c in concurrent_runs fold_large scan_large awhile; do
  CK_RUN_CASE=$c one "test_cpu-$c" "$dir/test_cpu"
done
one test_cancel "$dir/test_cancel"
one test_tier "$dir/test_tier"
# the ptx backend's tier-up thread, without a GPU (its test hook)
one test_gpu_tier "$dir/test_gpu_tier"
# a split launch's queueing threads' hand-off (runtime-gpu/relay.c)
one test_relay "$dir/test_relay"
# 8 threads compiling at once (LLVM's pass instrumentation, issue 21)
CK_RUN_CASE=concurrent_compiles one test_large-concurrent_compiles \
  "$dir/test_large"
# A context freed while its tier-up runs: the detached thread owns the jit
CK_RUN_CASE=free_during_tier_up one test_large-free_during_tier_up \
  "$dir/test_large"
# Batches of kernels compiled on several threads, and a process that exits
# while a tier-up runs (the exit handler and LLVM's statics)
for c in concurrent_batches many_kernels exit_during_tier_up; do
  CK_RUN_CASE=$c one "test_large-$c" "$dir/test_large"
done
# The trace writer, shared by contexts, their tier-up threads and exit
one test_trace "$dir/test_trace"
exit $status
