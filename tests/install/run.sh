#!/bin/sh
# tests/install/run.sh: weft as a dependency, the CTest test install_consumer.
#
# Installs a built weft into a fresh prefix, then builds and runs
# tests/install/consumer.c against it three ways:
#   (a) find_package(weft CONFIG): tests/install/CMakeLists.txt with
#       CMAKE_PREFIX_PATH=<prefix>; `consumer` links weft::weft,
#       `consumer_static` weft::weft_static;
#   (b) pkg-config (PKG_CONFIG_LIBDIR=<prefix>/lib/pkgconfig, so only the
#       prefix's .pc files count): `$CC consumer.c $(pkg-config --cflags
#       --libs weft)`, and the same with weft_static;
#   (c) add_subdirectory of this source tree (the same CMakeLists.txt with
#       WEFT_SOURCE), which builds weft again as a subproject, tests and
#       examples off, -j$WEFT_INSTALL_TEST_JOBS (2); then the same through
#       FetchContent (SOURCE_DIR, so no download).  Unoptimised (no build
#       type), each takes a few seconds.
# Besides running each consumer (exit 0 when it sums 1..10 to 55), it
# checks what was installed (libraries, headers, the CMake package, the
# .pc files, LICENSE and NOTICE), that libweft.so's SONAME is libweft.so.0
# and that each shared consumer needs libweft.so.0 and loads the prefix's.
#
# The static-LLVM flavour (a build directory configured with
# -DWEFT_STATIC_LLVM=ON, e.g. tools/gpu-bundle.sh's build-gpu) is found in
# the build's CMakeCache.txt and checked the same way, less weft_static
# (not installed there), plus: libweft.so needs no libLLVM, and neither
# the CMake consumer's link command nor pkg-config's flags name LLVM; (c)
# then builds the subproject with -DWEFT_STATIC_LLVM=ON too.
#
# Usage: tests/install/run.sh BUILD [WORK]
#   BUILD  a built weft build directory (`cmake --install` copies, it
#          does not build: for build-gpu, `cmake --build build-gpu
#          --target weft` first)
#   WORK   where the prefix and the consumers' builds go; emptied first
#          (default BUILD/install-test)
# Environment: CC, the consumers' compiler (default cc).
# Exits 0 on success, 1 on a failure (with the failing step's log), 77
# (a CTest skip) when pkg-config, the C compiler or readelf is missing.
set -eu

if [ $# -lt 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
    echo "usage: $0 BUILD [WORK]  (BUILD: a configured and built weft build directory)" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=${2:-$build/install-test}
cc=${CC:-cc}
jobs=${WEFT_INSTALL_TEST_JOBS:-2}

skip() {
    echo "install_consumer: skipped: $*"
    exit 77
}
fail() {
    echo "install_consumer: FAILED: $*" >&2
    exit 1
}
command -v pkg-config >/dev/null 2>&1 || skip "pkg-config is not installed"
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler '$cc' (set CC)"
command -v readelf >/dev/null 2>&1 || skip "readelf (binutils) is not installed"

# cached NAME: the value of NAME in the build's CMakeCache.txt
cached() {
    sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"
}
case $(cached WEFT_STATIC_LLVM) in
    ON | on | 1 | TRUE | true | YES | yes) static_llvm=1 static_opt=ON ;;
    *) static_llvm=0 static_opt=OFF ;;
esac
libdir_name=$(cached CMAKE_INSTALL_LIBDIR)
case $libdir_name in
    "") libdir_name=lib ;;
    /*) fail "CMAKE_INSTALL_LIBDIR is absolute ($libdir_name): --prefix cannot move it" ;;
esac

rm -rf "$work"
mkdir -p "$work/pc" "$work/cache"
prefix=$work/prefix
libdir=$prefix/$libdir_name
# The consumers' disk cache of compiled kernels stays in WORK.
XDG_CACHE_HOME=$work/cache
export XDG_CACHE_HOME
t_start=$(date +%s)

# step NAME CMD...: run CMD with its output in WORK/NAME.log; on failure
# show the log's end and fail.
step() {
    name=$1
    shift
    if ! "$@" >"$work/$name.log" 2>&1; then
        tail -n 40 "$work/$name.log" >&2
        fail "$name: '$*' (log: $work/$name.log)"
    fi
}
# run_consumer EXE [DIR]: run it; it must succeed and, if it is
# dynamically linked against weft, load libweft.so.0 from DIR (default:
# the prefix's library folder).
run_consumer() {
    from=${2:-$libdir}
    step "run-$(basename "$(dirname "$1")")-$(basename "$1")" "$1"
    cat "$work/$name.log"
    if readelf -d "$1" | grep -q 'NEEDED.*libweft'; then
        readelf -d "$1" | grep -q 'NEEDED.*\[libweft\.so\.0\]' ||
            fail "$1 does not need libweft.so.0"
        if command -v ldd >/dev/null 2>&1; then
            ldd "$1" | grep -q "libweft\.so\.0 => $from/" ||
                fail "$1 does not load $from/libweft.so.0: $(ldd "$1" | grep libweft)"
        fi
    fi
}
# no_llvm WHAT TEXT: fail if TEXT names LLVM (the static-LLVM flavour)
no_llvm() {
    if printf '%s\n' "$2" | grep -qi llvm; then
        fail "$1 names LLVM in the static-LLVM flavour: $2"
    fi
}
# link_no_llvm LOG: in the static-LLVM flavour, the command that linked
# `consumer` in the verbose build LOG must not name LLVM.
link_no_llvm() {
    [ $static_llvm = 1 ] || return 0
    link=$(grep -e '-o consumer\( \|$\)' "$1") ||
        fail "no link command of consumer in $1"
    no_llvm "the consumer's link command" "$link"
}

# Install, and check what is there.
step install cmake --install "$build" --prefix "$prefix"
l=$libdir_name
want="$l/libweft.so $l/libweft.so.0 include/weft.h include/weft_ops.h
      $l/cmake/weft/weftConfig.cmake $l/cmake/weft/weftConfigVersion.cmake
      $l/cmake/weft/weftTargets.cmake $l/pkgconfig/weft.pc
      share/doc/weft/LICENSE share/doc/weft/NOTICE bin/weft-info"
if [ $static_llvm = 0 ]; then
    want="$want $l/libweft_static.a $l/pkgconfig/weft_static.pc"
fi
for f in $want; do
    [ -e "$prefix/$f" ] || fail "not installed: $prefix/$f"
done
readelf -d "$libdir/libweft.so" | grep -q 'SONAME.*\[libweft\.so\.0\]' ||
    fail "libweft.so's SONAME is not libweft.so.0: $(readelf -d "$libdir/libweft.so" | grep SONAME)"
if [ $static_llvm = 1 ]; then
    no_llvm "libweft.so's NEEDED" "$(readelf -d "$libdir/libweft.so" | grep NEEDED)"
    [ ! -e "$libdir/libweft_static.a" ] ||
        fail "libweft_static.a is installed in the static-LLVM flavour"
fi
# The installed weft-info finds the installed library (its RPATH) and
# names its version.
env -u LD_LIBRARY_PATH "$prefix/bin/weft-info" | grep -q '^weft [0-9]' ||
    fail "the installed weft-info did not run: $("$prefix/bin/weft-info" 2>&1 | head -3)"
echo "install_consumer: installed into $prefix (static LLVM: $static_llvm)"

# (a) find_package.
consumer_static=ON
[ $static_llvm = 0 ] || consumer_static=OFF
step find-configure cmake -S "$here" -B "$work/find" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCONSUMER_STATIC=$consumer_static
found=$(sed -n 's/^weft_DIR:PATH=//p' "$work/find/CMakeCache.txt")
[ "$found" = "$libdir/cmake/weft" ] ||
    fail "find_package(weft) found '$found', not $libdir/cmake/weft"
step find-build cmake --build "$work/find" --verbose
link_no_llvm "$work/find-build.log"
run_consumer "$work/find/consumer"
[ $static_llvm = 1 ] || run_consumer "$work/find/consumer_static"
echo "install_consumer: (a) find_package passed"

# (b) pkg-config.
PKG_CONFIG_LIBDIR=$libdir/pkgconfig
PKG_CONFIG_PATH=
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs weft) || fail "pkg-config weft failed"
echo "install_consumer: pkg-config --cflags --libs weft: $flags"
[ $static_llvm = 0 ] || no_llvm "pkg-config --cflags --libs weft" "$flags"
# shellcheck disable=SC2086 # the flags are words
step pc-build "$cc" -Wall -Wextra -Werror "$here/consumer.c" -o "$work/pc/consumer" \
    $flags -Wl,-rpath,"$libdir"
run_consumer "$work/pc/consumer"
if [ $static_llvm = 0 ]; then
    flags=$(pkg-config --cflags --libs weft_static) ||
        fail "pkg-config weft_static failed"
    echo "install_consumer: pkg-config --cflags --libs weft_static: $flags"
    # shellcheck disable=SC2086
    step pc-build-static "$cc" -Wall -Wextra -Werror "$here/consumer.c" \
        -o "$work/pc/consumer_static" $flags
    run_consumer "$work/pc/consumer_static"
fi
echo "install_consumer: (b) pkg-config passed"

# (c) add_subdirectory of the source tree, then FetchContent: in WORK/sub
# and WORK/fetch, weft's build in WEFTDIR.
for via in sub fetch; do
    if [ $via = sub ]; then
        fetch=OFF weftdir=$work/sub/weft
    else
        fetch=ON weftdir=$work/fetch/_deps/weft-build
    fi
    step $via-configure cmake -S "$here" -B "$work/$via" \
        -DCMAKE_C_COMPILER="$cc" -DWEFT_SOURCE="$src" \
        -DWEFT_FETCHCONTENT=$fetch -DCONSUMER_STATIC=$consumer_static \
        -DWEFT_STATIC_LLVM=$static_opt
    step $via-build cmake --build "$work/$via" -j"$jobs" --verbose
    link_no_llvm "$work/$via-build.log"
    [ -e "$weftdir/libweft.so.0" ] || fail "no $weftdir/libweft.so.0"
    for t in test_cpu dotp weft_fuzz; do
        [ ! -e "$weftdir/$t" ] ||
            fail "the subproject built $t (tests or examples on)"
    done
    run_consumer "$work/$via/consumer" "$weftdir"
    [ $static_llvm = 1 ] || run_consumer "$work/$via/consumer_static"
done
echo "install_consumer: (c) add_subdirectory and FetchContent passed"

echo "install_consumer: all passed in $(($(date +%s) - t_start)) s"
