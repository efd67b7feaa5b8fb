#!/bin/sh
# tools/format.sh [--check]: lay out every tracked C source and header as
# .clang-format says (clang-format-19).  With --check, change nothing and
# exit 1, naming the files, when any file is not laid out so (.ci/run does
# this after its builds).
set -eu
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format-19}
command -v "$cf" >/dev/null 2>&1 || { echo "format.sh: $cf not found (apt-get install clang-format-19)" >&2; exit 2; }
files=$(git ls-files '*.c' '*.h')
if [ "${1:-}" = --check ]; then
    bad=""
    for f in $files; do
        "$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
    done
    if [ -n "$bad" ]; then
        echo "format.sh: not laid out as .clang-format says (run tools/format.sh):" >&2
        for f in $bad; do echo "  $f" >&2; done
        exit 1
    fi
    exit 0
fi
"$cf" -i $files
