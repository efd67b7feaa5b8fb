#!/usr/bin/env python3
"""tools/file-loops.py: the source files of libweft that depend on each other
in a loop.

weft's layering reads top-down (include <- lib <- codegen <- skeletons-ir <-
runtime <- runtime-cpu / runtime-gpu), and inside a folder each file has one
job.  Two files that call each other break that reading: neither can be
understood (or moved, or tested) without the other.  This tool measures it
from a build, so the claim "no file loops" stays true:

  - every object file of the library (the `weft_objs` target of a CMake build
    directory) is read with `nm`: the global symbols it defines and the ones
    it leaves undefined;
  - a symbol that a.o leaves undefined and b.o defines is an edge a -> b (a
    call, or a reference to b's data such as a const table);
  - a `#include "x.c"` in a source file is an edge too (there are none today);
  - the strongly connected components of that graph (Tarjan) with more than
    one file are the loops.

It prints each loop with the symbols behind every edge inside it, and exits
1 when there is one, 0 when there is none, 2 when it cannot read the build.
A loop named with --allow (its files, comma-separated, exactly) is printed
as allowed and does not count: for a known loop that is being opened
elsewhere, so that CI can refuse every new one meanwhile.

  tools/file-loops.py            the build directory `build`
  tools/file-loops.py DIR        another one (built with any build type)
  tools/file-loops.py --allow lib/a.c,lib/b.c build
  NM=llvm-nm-19 tools/file-loops.py

Python 3 and binutils' nm only; it reads the objects, so build the library
(`cmake --build build --target weft`) first.
"""

import os
import re
import subprocess
import sys

OBJ_DIR = os.path.join("CMakeFiles", "weft_objs.dir")


def objects(build):
    """The (source path, object path) of every object of the library."""
    root = os.path.join(build, OBJ_DIR)
    found = []
    for top, _, names in os.walk(root):
        for name in names:
            if name.endswith(".o"):
                obj = os.path.join(top, name)
                found.append((os.path.relpath(obj, root)[: -len(".o")], obj))
    return sorted(found)


def symbols(nm, obj):
    """The global symbols obj defines and the ones it needs, as two sets."""
    out = subprocess.run([nm, "-g", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            needed.add(parts[1])
        elif len(parts) == 3 and parts[1] not in "Uw":
            defined.add(parts[2])
    return defined, needed


def included_sources(src_root, source):
    """The .c files that source includes (`#include "x.c"`), as paths."""
    path = os.path.join(src_root, source)
    if not os.path.exists(path):
        return []
    found = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r'\s*#\s*include\s+"([^"]+\.c)"', line)
            if m:
                inc = os.path.normpath(
                    os.path.join(os.path.dirname(source), m.group(1)))
                found.append(inc)
    return found


def components(nodes, edges):
    """Tarjan's strongly connected components of the graph, each sorted."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative, so that a deep graph cannot exhaust Python's stack.
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                result.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return result


def main(argv):
    args, allowed = argv[1:], []
    while len(args) >= 2 and args[0] == "--allow":
        allowed.append(frozenset(f for f in args[1].split(",") if f))
        args = args[2:]
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: tools/file-loops.py [--allow a.c,b.c ...] [BUILD_DIR]",
              file=sys.stderr)
        return 2
    build = args[0] if args else "build"
    nm = os.environ.get("NM", "nm")
    src_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    objs = objects(build)
    if not objs:
        print(f"file-loops: no objects under {os.path.join(build, OBJ_DIR)}"
              " (build the library first)", file=sys.stderr)
        return 2
    defined_by, needs = {}, {}
    try:
        for source, obj in objs:
            defined, needed = symbols(nm, obj)
            needs[source] = needed
            for sym in defined:
                defined_by[sym] = source
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"file-loops: {nm}: {e}", file=sys.stderr)
        return 2
    # edges[a][b]: why a depends on b (the symbols, or "#include").
    edges = {source: {} for source in needs}
    for source, needed in needs.items():
        for sym in needed:
            target = defined_by.get(sym)
            if target is not None and target != source:
                edges[source].setdefault(target, set()).add(sym)
        for inc in included_sources(src_root, source):
            edges[source].setdefault(inc, set()).add("#include")
    loops = [c for c in components(edges.keys(), edges) if len(c) > 1]
    counted = [c for c in loops if frozenset(c) not in allowed]
    for comp in loops:
        members = set(comp)
        note = " (allowed)" if frozenset(comp) in allowed else ""
        print(f"loop of {len(comp)} files{note}: {' '.join(comp)}")
        for a in comp:
            for b in sorted(edges[a]):
                if b in members:
                    syms = sorted(edges[a][b])
                    more = f" (+{len(syms) - 4} more)" if len(syms) > 4 else ""
                    print(f"  {a} -> {b}: {', '.join(syms[:4])}{more}")
    allowed_n = len(loops) - len(counted)
    more = f" ({allowed_n} allowed)" if allowed_n else ""
    print(f"{len(loops)} loop(s) among {len(objs)} files{more}")
    return 1 if counted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
