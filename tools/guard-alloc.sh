#!/usr/bin/env bash
# tools/guard-alloc.sh: the CPU tests with guarded array buffers.
#
# Runs the tests of the CPU backend (test_cpu*, test_spmd, test_programs,
# test_vectorise, test_large) from an existing build directory (build, or
# $1) with WEFT_GUARD_ALLOC=1: every array buffer weft allocates is a
# mapping of its own whose last byte sits right before a PROT_NONE page
# (lib/alloc.c, "Guarded data blocks"; docs/DESIGN.md, "Guarded
# allocation"), so that a JIT-compiled kernel that reads or writes past an
# array's end faults on every run instead of once in a while; ASan does
# not see such accesses, since it does not instrument JIT code.  Then
# once more with WEFT_GUARD_ALLOC=front (guard page right before the first
# byte) for the fold, scan and permute tests.  The exit status is ctest's.
#
#   tools/guard-alloc.sh            build, -j2
#   JOBS=8 tools/guard-alloc.sh dir another directory, more jobs
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
jobs=${JOBS:-2}
tests='^(test_cpu.*|test_spmd|test_programs|test_vectorise|test_large)$'
WEFT_GUARD_ALLOC=1 ctest --test-dir "$dir" -j"$jobs" --output-on-failure \
    -R "$tests"
WEFT_GUARD_ALLOC=front ctest --test-dir "$dir" -j"$jobs" --output-on-failure \
    -R '^test_cpu_(permute|scan|foldseg)$'
