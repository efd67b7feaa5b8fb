#!/bin/sh
# tools/gpu-bundle.sh: build what the GPU machine runs and pack it into
# .device/weft-gpu.tar.xz (see docs/gpu-machine.md).
#
# The GPU machine has gcc and the CUDA driver but no LLVM and no Check, so
# everything is built here: a Release build with -DWEFT_STATIC_LLVM=ON in
# build-gpu/ (libweft.so with LLVM, libstdc++ and libgcc inside, exporting
# only weft_*; the public-API tests and the examples link it with RPATH
# $ORIGIN and Check statically) and weft-info, stripped into
# build-gpu/bundle/ with the public headers, the benchmark's sources and
# run-tests.sh.
#
# Usage: tools/gpu-bundle.sh            (WEFT_JOBS sets the build's -j)
# Running it again when nothing changed rebuilds nothing and keeps the
# archive as it is.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-gpu"
stage="$build/bundle"
out="$root/.device/weft-gpu.tar.xz"
jobs=${WEFT_JOBS:-$(nproc)}

# Configure (quick once configured), then build only what the bundle holds.
cmake -S "$root" -B "$build" -DWEFT_STATIC_LLVM=ON \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build "$build" --target weft_public -j "$jobs" \
        >"$build/bundle-build.log" 2>&1; then
    tail -n 40 "$build/bundle-build.log" >&2
    echo "gpu-bundle: the build failed; see $build/bundle-build.log" >&2
    exit 1
fi

# Stage: a binary is stripped again only when the build's copy is newer.
mkdir -p "$stage/include" "$stage/bench"
put_bin() {  # put_bin NAME: build/NAME, stripped, to stage/NAME
    if [ ! -e "$stage/$1" ] || [ "$build/$1" -nt "$stage/$1" ]; then
        strip --strip-unneeded -o "$stage/$1.tmp" "$build/$1"
        mv "$stage/$1.tmp" "$stage/$1"
    fi
}
put_src() {  # put_src FILE DIR: copy FILE to stage/DIR when it differs
    cmp -s "$1" "$stage/$2/${1##*/}" || cp "$1" "$stage/$2/"
}
# libweft.so.0 (the SONAME, which the binaries need) and libweft.so, the
# name -lweft links (build-bench.sh, bench/gpu/run.sh), a link to it.
put_bin libweft.so.0
[ -L "$stage/libweft.so" ] || { rm -f "$stage/libweft.so" &&
                                 ln -s libweft.so.0 "$stage/libweft.so"; }
tests=$(awk '$1 == "test" { print $2 }' "$build/weft-public.txt")
examples=$(awk '$1 == "example" { print $2 }' "$build/weft-public.txt")
tools=$(awk '$1 == "tool" { print $2 }' "$build/weft-public.txt")
for t in $tests $examples $tools; do
    put_bin "$t"
done
files="libweft.so.0 libweft.so $tests $examples $tools"
rm -f "$stage"/include/*
for h in "$root"/include/*.h; do
    put_src "$h" include
    files="$files include/${h##*/}"
done
for f in "$root"/bench/weft_bench.c "$root"/bench/ref.c "$root"/bench/ref.h \
         "$root"/bench/programs.h "$root"/bench/gen_large.h \
         "$root"/bench/timing.h "$root"/bench/numba_ref.py \
         "$root"/bench/compile_scaling.c; do
    if [ -e "$f" ]; then
        put_src "$f" bench
        files="$files bench/${f##*/}"
    fi
done
# The GPU benchmark's sources (bench/gpu/run.sh builds and runs them there),
# overhead.c and link_probe.c with the PTX the probe links (bench/gpu/ptx/).
mkdir -p "$stage/bench/gpu/ptx"
for f in "$root"/bench/gpu/*.c "$root"/bench/gpu/*.cu "$root"/bench/gpu/*.h \
         "$root"/bench/gpu/*.py "$root"/bench/gpu/*.sh; do
    if [ -e "$f" ]; then
        put_src "$f" bench/gpu
        files="$files bench/gpu/${f##*/}"
    fi
done
for f in "$root"/bench/gpu/ptx/*.ptx; do
    if [ -e "$f" ]; then
        put_src "$f" bench/gpu/ptx
        files="$files bench/gpu/ptx/${f##*/}"
    fi
done
files="$files tests.txt run-tests.sh build-bench.sh build-scaling.sh VERSION"

# What run-tests.sh runs: the tests, then the examples, then the tools
# (weft-info: its log lists the GPU, the driver and libdevice).
list=$(printf '%s\n' $tests $examples $tools)
[ "$(cat "$stage/tests.txt" 2>/dev/null)" = "$list" ] ||
    printf '%s\n' "$list" >"$stage/tests.txt"

write() {  # write NAME: stdin to stage/NAME when it differs (*.sh: +x)
    cat >"$stage/$1.tmp"
    case $1 in *.sh) chmod +x "$stage/$1.tmp" ;; esac
    if cmp -s "$stage/$1.tmp" "$stage/$1"; then
        rm "$stage/$1.tmp"
    else
        mv "$stage/$1.tmp" "$stage/$1"
    fi
}

write run-tests.sh <<'EOF'
#!/bin/sh
# run-tests.sh: run weft's tests (and examples) from this folder, one line
# each: PASS, FAIL or SKIP (exit status 77), the seconds, the last line of
# its output.  A failure's output follows its line; every output is kept in
# logs/ ($WEFT_TEST_LOGS).  Exits 1 when any failed.
# Usage: ./run-tests.sh [name...]   (default: every name in tests.txt)
# The WEFT_* environment reaches the tests: WEFT_BACKEND=ptx, WEFT_DEVICE,
# WEFT_LIBDEVICE.  WEFT_TEST_TIMEOUT: seconds per binary (default 600).
cd "$(dirname "$0")" || exit 2
export CK_FORK=no
logs=${WEFT_TEST_LOGS:-logs}
mkdir -p "$logs"
limit=${WEFT_TEST_TIMEOUT:-600}
if command -v timeout >/dev/null 2>&1; then
    run() { timeout "$limit" "$@"; }
else
    run() { "$@"; }
fi
[ $# -gt 0 ] || set -- $(cat tests.txt)
pass=0 fail=0 skip=0 failed=
for t in "$@"; do
    log="$logs/$t.log"
    t0=$(date +%s)
    run "./$t" >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    case $rc in
        0) r=PASS pass=$((pass + 1)) ;;
        77) r=SKIP skip=$((skip + 1)) ;;
        124) r=FAIL fail=$((fail + 1)) failed="$failed $t"
             echo "timed out after ${limit}s" >>"$log" ;;
        *) r=FAIL fail=$((fail + 1)) failed="$failed $t" ;;
    esac
    printf '%s %-20s %4ss  %s\n' "$r" "$t" "$secs" \
           "$(tail -n 1 "$log" | cut -c1-160)"
    if [ "$r" = FAIL ]; then
        echo "---- $t exited $rc; last lines of $log:"
        tail -n 40 "$log"
        echo "----"
    fi
done
echo "weft: $pass passed, $fail failed, $skip skipped (backend ${WEFT_BACKEND:-default})"
[ "$fail" -eq 0 ] || { echo "failed:$failed"; exit 1; }
EOF

write build-bench.sh <<'EOF'
#!/bin/sh
# build-bench.sh: build the CPU benchmark here against ./libweft.so, as
# bench/run.sh does (the references use OpenMP: gcc's libgomp; ref.c once
# more with -ffast-math for the fast columns).  Then, as bench/run.sh
# runs it: OMP_WAIT_POLICY=PASSIVE ./weft_bench (OpenMP's threads
# otherwise spin after each reference and take cores from weft's next run)
# (run it from this folder: it finds bench/numba_ref.py for the numba
# column where python3 imports numba).
set -eu
cd "$(dirname "$0")"
flags="-std=c17 -O3 -march=native -fopenmp -fno-math-errno"
${CC:-gcc} $flags -c bench/ref.c -o ref.o
${CC:-gcc} $flags -ffast-math -DREF_FAST -c bench/ref.c -o ref_fast.o
commit="$(cat VERSION 2>/dev/null || echo unknown) (the GPU bundle)"
${CC:-gcc} $flags -DWEFT_BENCH_COMMIT="\"$commit\"" -Iinclude \
    bench/weft_bench.c ref.o ref_fast.o \
    -o weft_bench -L. -lweft -Wl,-rpath,'$ORIGIN' -lm
EOF

write build-scaling.sh <<'EOF'
#!/bin/sh
# build-scaling.sh: build the compile-scaling benchmark (issue 21,
# bench/compile_scaling.c) here against ./libweft.so, e.g. for ptx:
#   ./build-scaling.sh && ./compile_scaling -b ptx -n 1000,10000,100000 \
#       -t 60 -T 500
# (-T: the whole run's seconds; cases past it are reported "not tried").
set -eu
cd "$(dirname "$0")"
${CC:-gcc} -std=c17 -O2 -Iinclude bench/compile_scaling.c -o compile_scaling \
    -L. -lweft -Wl,-rpath,'$ORIGIN' -lm
EOF

(cd "$root" && git describe --always --dirty 2>/dev/null || echo unknown) |
    write VERSION

# Pack only when the staged files differ from those of the last archive.
sums=$(cd "$stage" && sha256sum $files)
if [ -e "$out" ] && [ "$(cat "$build/bundle.sums" 2>/dev/null)" = "$sums" ]
then
    echo "gpu-bundle: $out is up to date ($(du -h "$out" | cut -f1))"
    exit 0
fi
mkdir -p "$root/.device"
(cd "$stage" && tar --owner=0 --group=0 -cf - $files) |
    xz -9 -T1 >"$out.tmp"
mv "$out.tmp" "$out"
printf '%s\n' "$sums" >"$build/bundle.sums"
size=$(wc -c <"$out")
echo "gpu-bundle: wrote $out ($size bytes)"
if [ "$size" -gt 60000000 ]; then
    echo "gpu-bundle: warning: over 60 MB; the device takes at most 64 MiB" >&2
fi
