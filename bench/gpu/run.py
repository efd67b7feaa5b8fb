#!/usr/bin/env python3
"""bench/gpu/run.py: the GPU benchmark of weft's ptx backend.

One process, one GPU, one CUDA primary context: weft (bench_weft_gpu.so,
built from weft_gpu.c against libweft.so), the hand-written CUDA references
(bench_ref_gpu.so, from ref.cu), CuPy, PyTorch and JAX.  For each program
(saxpy, sum, dotp, scan, Black-Scholes, n-body, Mandelbrot, histogram):

  1. the inputs are made once on the host (weft_gpu.c's generators: a hash
     of the index, so every implementation gets the same numbers) and each
     implementation copies them to the device and runs once (weft: compile,
     upload; JAX: jit);
  2. each result is checked against the CUDA reference's (the tolerances
     are in CHECKS below and in the report);
  3. one warm-up run each, then rounds in which every implementation runs
     once in turn (interleaved, so that all meet the same device state);
     an implementation takes part in at most ROUNDS rounds and in fewer when
     its runs are slow (at least MIN_ROUNDS, and no more than about
     BUDGET_MS of timed runs); the median is reported.
  4. everything of the program is freed before the next.

Timing: every implementation the same two ways in each timed run.  The
host clock, from before the run is started to the moment its result is
complete on the device (nothing is copied back, a scalar is not read):
an event recorded after the run on the stream the run uses is waited for
(CUDA reference, weft, CuPy, PyTorch), or block_until_ready (JAX).  And
CUDA events recorded on that stream before and after the run, where there
is one: the CUDA reference (the default stream), weft (its own stream,
weft_context_stream), CuPy and PyTorch (their current streams); JAX has
none (n/a).  Both medians are reported, with the ratios on both.

The report (gpu.md in the output directory) has the device, the copy
bandwidth (cudaMemcpy device to device of 1 GiB; 2 x bytes / time), a table
per program and weft's compile times.  gpu.json beside it has the same
numbers for scripts that compare runs: the machine and commit, then "rows"
(one object per program and implementation: median ms, runs, ratio to the
best peer and to CUDA, check, or why n/a) and "compile" (one per weft
program).

Usage:
  run.py OUTDIR [--weft-lib PATH] [--ref-lib PATH]     (on the GPU machine)
  run.py OUTDIR --quick --backend cpu [--weft-lib PATH]
      a smoke check without a GPU: small sizes, weft on the given backend
      against weft_gpu.c's sequential C reference; no CUDA, no peers.
"""

import argparse
import ctypes
import datetime
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

try:
    import numpy as np
except ImportError:  # the quick mode works without numpy
    np = None

ROUNDS = 7
MIN_ROUNDS = 3
BUDGET_MS = 3000.0

# gpubench.h's programs
SAXPY, SUM, DOTP, SCAN, BS, NBODY, NBODY_FOLD, MANDEL, HIST = range(9)
# smvm and k-means (helper smvm; their Program is SparseProgram below)
SMVM_B, SMVM_P, KMEANS, KMEANS_W = range(9, 13)
SV_PIDS = (SMVM_B, SMVM_P, KMEANS, KMEANS_W)
# -- Jacobi (stencil) --
JACOBI, JACOBI_LOOP = 13, 14
JACOBI_STEPS = 100
# -- end Jacobi --


class Shape(ctypes.Structure):
    """gpubench.h's gb_shape."""

    _fields_ = [
        ("n", ctypes.c_int64),
        ("h", ctypes.c_int64),
        ("max_iter", ctypes.c_int32),
        ("bins", ctypes.c_int32),
        ("a", ctypes.c_float),
        ("eps2", ctypes.c_float),
        ("x0", ctypes.c_float),
        ("y0", ctypes.c_float),
        ("dx", ctypes.c_float),
        ("dy", ctypes.c_float),
    ]


# ---- host buffers -----------------------------------------------------------


class Buf:
    """A host array of n f32 or i32: .a (numpy, or a ctypes array without
    numpy), .ptr (its address)."""

    def __init__(self, dtype, n):
        self.dtype, self.n = dtype, n
        if np is not None:
            self.a = np.zeros(n, dtype=np.float32 if dtype == "f32" else np.int32)
            self.ptr = self.a.ctypes.data
        else:
            ct = ctypes.c_float if dtype == "f32" else ctypes.c_int32
            self.a = (ct * n)()
            self.ptr = ctypes.addressof(self.a)

    @property
    def nbytes(self):
        return 4 * self.n


def ptrs(bufs):
    arr = (ctypes.c_void_p * max(1, len(bufs)))()
    for i, b in enumerate(bufs):
        arr[i] = b.ptr
    return arr


def sizes(bufs):
    arr = (ctypes.c_int64 * max(1, len(bufs)))()
    for i, b in enumerate(bufs):
        arr[i] = b.nbytes
    return arr


def to_buf(x, dtype):
    """A numpy result of a peer as a Buf (converted, contiguous)."""
    b = Buf.__new__(Buf)
    b.dtype = dtype
    b.a = np.ascontiguousarray(
        np.asarray(x).reshape(-1), dtype=np.float32 if dtype == "f32" else np.int32
    )
    b.n = b.a.size
    b.ptr = b.a.ctypes.data
    return b


# ---- the libraries ----------------------------------------------------------


def load_weft(path):
    lib = ctypes.CDLL(path)
    V, I, D, P, S = (ctypes.c_void_p, ctypes.c_int, ctypes.c_double,
                     ctypes.c_char_p, ctypes.POINTER(Shape))
    I64 = ctypes.c_int64
    sig = {
        "wg_error": (P, []),
        "wg_configure": (None, [I, P]),
        "wg_set_events": (None, [V, V]),
        "wg_fill_f32": (None, [V, I64, ctypes.c_float, ctypes.c_float, ctypes.c_uint64]),
        "wg_fill_f32_16ths": (None, [V, I64, ctypes.c_uint64]),
        "wg_fill_i32": (None, [V, I64, ctypes.c_int32, ctypes.c_uint64]),
        "wg_compare_f32": (I64, [V, V, I64, D, D, ctypes.POINTER(D)]),
        "wg_compare_i32": (I64, [V, V, I64]),
        "wg_max_abs_f32": (D, [V, I64]),
        "wg_sum_i32": (D, [V, I64]),
        "wg_cref": (I, [I, S, V, V]),
        "wg_open": (I, [I, S, V]),
        "wg_run": (D, [I, ctypes.POINTER(D)]),
        "wg_result": (I, [I, V, V]),
        "wg_close": (None, [I]),
        "wg_compile_info": (D, [I, ctypes.POINTER(I64), ctypes.POINTER(I64)]),
        "wg_plan": (I, [I, P, I64]),
        "wg_moved": (I64, [I]),
        "wg_backend_name": (P, []),
        "wg_compile_dotp": (I, [P, ctypes.POINTER(D), ctypes.POINTER(I64)]),
        "wg_smvm_make": (I, [I, I64, ctypes.POINTER(I64)]),
        "wg_smvm_copy": (None, [V, V, V, V]),
        "wg_kmeans_points": (None, [V, V, I64, ctypes.c_int32, V, V]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def load_ref(path):
    lib = ctypes.CDLL(path)
    V, I, D, P, S = (ctypes.c_void_p, ctypes.c_int, ctypes.c_double,
                     ctypes.c_char_p, ctypes.POINTER(Shape))
    I64 = ctypes.c_int64
    pi = ctypes.POINTER(I)
    sig = {
        "rf_error": (P, []),
        "rf_init": (I, [I]),
        "rf_device_info": (I, [P, I, pi, pi, ctypes.POINTER(I64), pi, pi]),
        "rf_sync": (None, []),
        "rf_mem_info": (I, [ctypes.POINTER(I64), ctypes.POINTER(I64)]),
        "rf_copy_gbs": (D, [I64, I, ctypes.POINTER(D)]),
        "rf_open": (I, [I, S, V]),
        "rf_run": (D, [I, ctypes.POINTER(D)]),
        "rf_event_record": (I, [I, V]),
        "rf_event_finish": (D, []),
        "rf_result": (I, [I, V, V]),
        "rf_close": (None, [I]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


class Unavailable(Exception):
    """An implementation that cannot run this program."""


def short(e):
    s = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")
    return s[:160]


# ---- programs ---------------------------------------------------------------


class Program:
    """One benchmark program: its size, inputs, outputs, and how to judge."""

    def __init__(self, key, pid, title, quick):
        self.key, self.pid, self.title = key, pid, title
        s = Shape()
        s.bins = 256
        s.max_iter = 255
        s.a = 2.5
        s.eps2 = 0.01
        # $GPUBENCH_N, $GPUBENCH_BS: other sizes of the memory-bound
        # programs and of Black-Scholes (scaling.sh -n, -b: on several GPUs
        # the default sizes leave each device a part of 0.1-0.3 ms)
        big = int(os.environ.get("GPUBENCH_N", 1 << 28))
        small = (1 << 20) + 3
        if pid in (SAXPY, SUM, DOTP, SCAN, HIST):
            s.n = small if quick else big
        elif pid == BS:
            s.n = (1 << 18) + 1 if quick else int(os.environ.get("GPUBENCH_BS", 1 << 26))
        elif pid in (NBODY, NBODY_FOLD):
            # $GPUBENCH_NBODY: another size (scaling.sh on several GPUs:
            # 65536 bodies are 256 blocks, too few to fill two devices)
            s.n = 1000 if quick else int(os.environ.get("GPUBENCH_NBODY", 65536))
        elif pid == MANDEL:
            # $GPUBENCH_MANDEL: another side of the square image
            # (scaling.sh -m: 16384 on several GPUs)
            side = int(os.environ.get("GPUBENCH_MANDEL", 8192))
            s.n, s.h = (300, 200) if quick else (side, side)
            s.x0, s.y0 = -2.0, -1.25
            s.dx, s.dy = 2.5 / s.n, 2.5 / s.h
        elif pid == JACOBI:  # -- Jacobi: an h x n grid, n columns --
            s.n, s.h = (131, 77) if quick else (8192, 8192)
            s.max_iter = JACOBI_STEPS
        self.shape = s
        n = s.n
        # elements of each input (Jacobi: the whole grid)
        self.in_n = n * s.h if pid == JACOBI else n
        # inputs: (dtype, fill) with fill ("u", lo, hi), ("16",), ("i", m)
        self.inputs = {
            SAXPY: [("f32", ("u", -1, 1)), ("f32", ("u", -1, 1))],
            SUM: [("f32", ("16",))],
            DOTP: [("f32", ("16",)), ("f32", ("16",))],
            SCAN: [("i32", ("i", 16))],
            BS: [("f32", ("u", 5, 30)), ("f32", ("u", 1, 100)),
                 ("f32", ("u", 0.25, 10))],
            NBODY: [("f32", ("u", -1, 1))] * 3 + [("f32", ("u", 0.5, 1.5))],
            MANDEL: [],
            HIST: [("i32", ("i", s.bins))],
            JACOBI: [("f32", ("u", 0, 1))],
        }[pid]
        self.outputs = {
            SAXPY: [("f32", n)],
            SUM: [("f32", 1)],
            DOTP: [("f32", 1)],
            SCAN: [("i32", n)],
            BS: [("f32", n), ("f32", n)],
            NBODY: [("f32", n)] * 3,
            MANDEL: [("i32", s.n * s.h)],
            HIST: [("i32", s.bins)],
            JACOBI: [("f32", s.n * s.h)],
        }[pid]
        # bytes a memory-bound program must move (inputs once, outputs once)
        self.bytes = {SAXPY: 12 * n, SUM: 4 * n, DOTP: 8 * n, SCAN: 8 * n,
                      BS: 20 * n, HIST: 4 * n + 4 * s.bins,
                      JACOBI: 8 * n * s.h * s.max_iter}.get(pid, 0)
        self.flops = 20.0 * n * n if pid == NBODY else 0.0  # Mandelbrot: later
        self.size = {
            SAXPY: "%d f32" % n, SUM: "%d f32" % n, DOTP: "%d f32" % n,
            SCAN: "%d i32" % n, BS: "%d options" % n, NBODY: "%d bodies" % n,
            MANDEL: "%dx%d, %d iterations" % (s.n, s.h, s.max_iter),
            HIST: "%d i32 keys, %d bins" % (n, s.bins),
            JACOBI: "%dx%d f32, %d steps" % (s.h, n, s.max_iter),
        }[pid]

    @property
    def memory_bound(self):
        return self.bytes > 0


PROGRAM_LIST = [
    ("saxpy", SAXPY, "saxpy: zipWith (\\x y -> a*x + y), a = 2.5"),
    ("sum", SUM, "sum: fold_all (+) 0"),
    ("dotp", DOTP, "dotp: fold (+) 0 (zipWith (*) xs ys)"),
    ("scan", SCAN, "inclusive scan: scanl1 (+) on i32"),
    ("blackscholes", BS, "Black-Scholes: zipWith3 to (call, put), f32"),
    ("nbody", NBODY, "n-body: accelerations, all pairs, one step"),
    ("mandelbrot", MANDEL, "Mandelbrot: generate with a while loop"),
    ("histogram", HIST, "histogram: permute (+) of ones into 256 zeros"),
    ("smvm", SMVM_B, "smvm, banded CSR (10 a row): foldSeg (+) 0 (zipWith (*) "
     "vals (backpermute cols x)) rowptr"),
    ("smvm-powerlaw", SMVM_P, "smvm, power-law CSR (rows of 1 to 10^4): as smvm"),
    ("kmeans", KMEANS, "k-means, 2-D, k = 16, until no point moves or 50 "
     "iterations: fold of (distance, j) per point, permute (+)"),
    ("kmeans-while", KMEANS_W, "k-means, the nearest centroid by a while "
     "loop per point: as kmeans"),
    ("jacobi", JACOBI, "Jacobi: 5-point stencil 3x3 (clamp), awhile of 100 steps"),
]

CHECKS = {
    SAXPY: "max |r - c| / max(1, |c|) <= 1e-5 per element",
    SUM: "relative error <= 1e-3 (f32 sums in different orders)",
    DOTP: "relative error <= 1e-3",
    SCAN: "exact (i32, wrapping); the count of differing elements",
    BS: "max |r - c| / max(1, |c|) <= 1e-3 over calls and puts (every option)",
    NBODY: "max |r - c| / max |c| <= 1e-3 over ax, ay, az (every body)",
    MANDEL: "counts compared at every pixel with the CUDA reference, which "
            "rounds every step as weft's program does (no FMA contraction); "
            "peers that contract, and fast math, move a few boundary pixels: "
            "the mismatches are reported, 'ok' when at most 0.1% of pixels",
    HIST: "exact",
    SMVM_B: "max |r - c| / max(1, |c|) <= 5e-4 per row (f32 sums of a row "
            "in other orders)",
    SMVM_P: "as smvm",
    KMEANS: "centroids: max |r - c| / max(1, |c|) <= 1e-2 (f32 sums of 2^18 "
            "points in other orders); iterations within 2 of the reference's",
    KMEANS_W: "as kmeans",
    JACOBI: "max |r - c| / max(1, |c|) <= 1e-5 per element (the sums in the "
            "same order everywhere; values in [0, 1))",
}


def fill_inputs(wg, prog):
    if prog.pid in SV_PIDS:
        return prog.make_inputs(wg)
    bufs = []
    for k, (dtype, fill) in enumerate(prog.inputs):
        b = Buf(dtype, prog.in_n)
        seed = 1000 * prog.pid + k + 1
        if fill[0] == "u":
            wg.wg_fill_f32(b.ptr, b.n, fill[1], fill[2], seed)
        elif fill[0] == "16":
            wg.wg_fill_f32_16ths(b.ptr, b.n, seed)
        else:
            wg.wg_fill_i32(b.ptr, b.n, fill[1], seed)
        bufs.append(b)
    return bufs


def out_bufs(prog):
    return [Buf(dtype, n) for dtype, n in prog.outputs]


def check(wg, prog, got, ref):
    """(ok, text) comparing the host Bufs got with ref (the reference)."""
    pid = prog.pid
    if len(got) != len(ref) or any(g.n != r.n for g, r in zip(got, ref)):
        return False, "FAIL (result of %s elements)" % [g.n for g in got]
    if pid in SV_PIDS:
        return sv_check(wg, prog, got, ref)
    err = ctypes.c_double()
    if pid in (SUM, DOTP):
        g, r = float(got[0].a[0]), float(ref[0].a[0])
        e = abs(g - r) / max(abs(r), 1e-30)
        return e <= 1e-3, "%s (rel. err. %.1e)" % ("ok" if e <= 1e-3 else "FAIL", e)
    if pid in (SAXPY, BS, NBODY, JACOBI):
        tol = {SAXPY: 1e-5, BS: 1e-3, NBODY: 1e-3, JACOBI: 1e-5}[pid]
        floor = 1.0
        if pid == NBODY:
            floor = max(wg.wg_max_abs_f32(r.ptr, r.n) for r in ref) or 1.0
        bad, worst = 0, 0.0
        for g, r in zip(got, ref):
            bad += wg.wg_compare_f32(g.ptr, r.ptr, r.n, floor, tol, ctypes.byref(err))
            worst = max(worst, err.value)
        ok = bad == 0
        return ok, "%s (max err. %.1e%s)" % (
            "ok" if ok else "FAIL", worst, "" if ok else ", %d over" % bad)
    bad = wg.wg_compare_i32(got[0].ptr, ref[0].ptr, ref[0].n)
    if pid == MANDEL:
        frac = bad / ref[0].n
        return frac <= 1e-3, "%s (%d of %d pixels differ)" % (
            "ok" if frac <= 1e-3 else "DIFFERS", bad, ref[0].n)
    return bad == 0, "ok (exact)" if bad == 0 else "FAIL (%d differ)" % bad


# ---- implementations --------------------------------------------------------


class Impl:
    """One implementation of one program: open() prepares (inputs on the
    device, first run), time_once() -> (host ms, events ms or None),
    result() -> [Buf], close()."""

    name = "?"
    timer = "?"

    def close(self):
        pass


class WeftImpl(Impl):
    timer = "host clock; CUDA events on weft's stream"

    def __init__(self, wg, pid, name="weft"):
        self.wg, self.pid, self.name = wg, pid, name

    def open(self, prog, inputs):
        self.prog = prog
        if self.wg.wg_open(self.pid, ctypes.byref(prog.shape), ptrs(inputs)):
            raise Unavailable(self.wg.wg_error().decode())
        self.opened = True

    def time_once(self):
        ev = ctypes.c_double()
        before = self.wg.wg_moved(self.pid)
        ms = self.wg.wg_run(self.pid, ctypes.byref(ev))
        if ms < 0:
            raise Unavailable(self.wg.wg_error().decode())
        # bytes handed between devices by this run (several GPUs)
        self.moved = self.wg.wg_moved(self.pid) - before
        return ms, (ev.value if ev.value >= 0 else None)

    def result(self):
        out = out_bufs(self.prog)
        if self.wg.wg_result(self.pid, ptrs(out), sizes(out)):
            raise Unavailable(self.wg.wg_error().decode())
        return out

    def compile_info(self):
        c, l = ctypes.c_int64(), ctypes.c_int64()
        ms = self.wg.wg_compile_info(self.pid, ctypes.byref(c), ctypes.byref(l))
        buf = ctypes.create_string_buffer(1024)
        k = self.wg.wg_plan(self.pid, buf, len(buf))
        return ms, c.value, l.value, k, buf.value.decode()

    def close(self):
        self.wg.wg_close(self.pid)


class CrefImpl(Impl):
    """weft_gpu.c's sequential C reference (quick mode only)."""

    name = "C (sequential)"
    timer = "host clock"

    def __init__(self, wg):
        self.wg = wg

    def open(self, prog, inputs):
        self.prog, self.inputs = prog, inputs
        self.out = out_bufs(prog)

    def time_once(self):
        t0 = time.perf_counter()
        if self.wg.wg_cref(self.prog.pid, ctypes.byref(self.prog.shape),
                           ptrs(self.inputs), ptrs(self.out)):
            raise Unavailable(self.wg.wg_error().decode())
        return (time.perf_counter() - t0) * 1e3, None

    def result(self):
        self.time_once()
        return self.out


class CudaImpl(Impl):
    name = "CUDA (hand-written, CUB)"
    timer = "host clock; CUDA events on the default stream"

    def __init__(self, rf):
        self.rf = rf

    def open(self, prog, inputs):
        self.prog = prog
        if self.rf.rf_open(prog.pid, ctypes.byref(prog.shape), ptrs(inputs)):
            raise Unavailable(self.rf.rf_error().decode())

    def time_once(self):
        host = ctypes.c_double()
        ms = self.rf.rf_run(self.prog.pid, ctypes.byref(host))
        if ms < 0:
            raise Unavailable(self.rf.rf_error().decode())
        return host.value, ms

    def result(self):
        out = out_bufs(self.prog)
        if self.rf.rf_result(self.prog.pid, ptrs(out), sizes(out)):
            raise Unavailable(self.rf.rf_error().decode())
        return out

    def close(self):
        self.rf.rf_close(self.prog.pid)


# -- the Python peers: fn(xp-module, device inputs, shape) builders --


def chunk_rows(n, want=1024):
    c = min(want, n)
    while n % c:
        c -= 1
    return c


class PeerImpl(Impl):
    """Common to CuPy, PyTorch and JAX: self.fn(*self.dev) -> result(s)."""

    def open(self, prog, inputs):
        self.prog = prog
        self.out = None
        self.label = None
        self.setup(prog, [b.a for b in inputs])
        if self.label:
            self.name = self.label
        self.out = None

    def outputs(self):
        o = self.out
        return list(o) if isinstance(o, (tuple, list)) else [o]

    def result(self):
        self.out = None
        self.run()
        self.sync()
        res = [to_buf(self.to_host(o), dt)
               for o, (dt, _) in zip(self.outputs(), self.prog.outputs)]
        self.out = None
        return res


class CupyImpl(PeerImpl):
    name = "CuPy"
    timer = "host clock; CUDA events on the current stream"

    def __init__(self):
        import cupy as cp  # noqa: F401 (ImportError: n/a)

        self.cp = cp
        cp.cuda.runtime.getDeviceCount()

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def to_host(self, o):
        return self.cp.asnumpy(o)

    def run(self):
        self.out = self.fn(*self.dev)

    def time_once(self):
        cp = self.cp
        self.out = None
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        t0 = time.perf_counter()
        e0.record()
        self.out = self.fn(*self.dev)
        e1.record()
        e1.synchronize()
        host = (time.perf_counter() - t0) * 1e3
        return host, cp.cuda.get_elapsed_time(e0, e1)

    def setup(self, prog, host):
        cp = self.cp
        s = prog.shape
        self.dev = [cp.asarray(h) for h in host]
        pid = prog.pid
        f32 = np.float32
        if pid in (SAXPY, BS):
            plain = saxpy_xp(cp, f32(s.a)) if pid == SAXPY else bs_xp(cp, cp)
            try:
                fused = cp.fuse(saxpy_xp(cp, f32(s.a)) if pid == SAXPY else bs_xp(cp, cp))
                r = fused(*self.dev)
                self.sync()
                del r
                self.fn, self.label = fused, "CuPy (cp.fuse)"
            except Exception as e:  # fall back to one kernel per ufunc
                self.fn, self.label = plain, "CuPy (ufuncs; cp.fuse failed: %s)" % short(e)[:60]
        elif pid == SUM:
            self.fn = lambda x: cp.sum(x)
        elif pid == DOTP:
            self.fn = lambda x, y: cp.dot(x, y)
        elif pid == SCAN:
            self.fn = lambda x: cp.cumsum(x, dtype=cp.int32)
        elif pid == NBODY:
            self.fn = nbody_xp(cp, s, cp.sqrt, lambda a, b: cp.sum(a, axis=b))
            self.label = "CuPy (ufuncs, %d-row chunks)" % chunk_rows(s.n)
        elif pid == MANDEL:
            self.fn = mandel_xp(cp, s, lambda n: cp.arange(n, dtype=cp.float32),
                                lambda shp: cp.zeros(shp, dtype=cp.float32),
                                lambda shp: cp.zeros(shp, dtype=cp.int32),
                                lambda shp: cp.ones(shp, dtype=cp.bool_))
            self.label = "CuPy (ufuncs, %d iterations over the image)" % s.max_iter
        elif pid == HIST:
            self.fn = lambda k: cp.bincount(k, minlength=s.bins)
        elif pid in SV_PIDS:
            self.fn, self.label = sv_cupy(cp, prog, self.dev)
        elif pid == JACOBI:
            self.dev = [d.reshape(int(s.h), int(s.n)) for d in self.dev]
            self.fn = jacobi_xp(lambda u: cp.pad(u, 1, mode="edge"), s.max_iter)
            self.label = "CuPy (pad edge + slices, %d steps)" % s.max_iter
        self.out = self.fn(*self.dev)
        self.sync()

    def close(self):
        self.out = self.dev = self.fn = None
        gc.collect()
        self.cp.get_default_memory_pool().free_all_blocks()


class TorchImpl(PeerImpl):
    name = "PyTorch"
    timer = "host clock; CUDA events on the current stream"

    def __init__(self):
        import torch

        if not torch.cuda.is_available():
            raise Unavailable("torch.cuda.is_available() is False")
        self.torch = torch

    def sync(self):
        self.torch.cuda.synchronize()

    def to_host(self, o):
        return o.cpu().numpy()

    def run(self):
        self.out = self.fn(*self.dev)

    def time_once(self):
        torch = self.torch
        self.out = None
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        e0.record()
        self.out = self.fn(*self.dev)
        e1.record()
        e1.synchronize()
        host = (time.perf_counter() - t0) * 1e3
        return host, e0.elapsed_time(e1)

    def setup(self, prog, host):
        torch = self.torch
        s = prog.shape
        self.dev = [torch.from_numpy(h).cuda() for h in host]
        pid = prog.pid
        if pid == SAXPY:
            a = float(s.a)
            self.fn = lambda x, y: torch.add(y, x, alpha=a)
        elif pid == BS:
            self.fn = bs_xp(torch, TorchMath(torch))
            self.label = "PyTorch (eager ops)"
        elif pid == SUM:
            self.fn = lambda x: torch.sum(x)
        elif pid == DOTP:
            self.fn = lambda x, y: torch.dot(x, y)
        elif pid == SCAN:
            self.fn = lambda x: torch.cumsum(x, 0, dtype=torch.int32)
        elif pid == NBODY:
            self.fn = nbody_xp(TorchMath(torch), s, torch.sqrt,
                               lambda a, b: torch.sum(a, dim=b))
            self.label = "PyTorch (eager, %d-row chunks)" % chunk_rows(s.n)
        elif pid == MANDEL:
            dev = "cuda"
            self.fn = mandel_xp(TorchMath(torch), s,
                                lambda n: torch.arange(n, dtype=torch.float32, device=dev),
                                lambda shp: torch.zeros(shp, dtype=torch.float32, device=dev),
                                lambda shp: torch.zeros(shp, dtype=torch.int32, device=dev),
                                lambda shp: torch.ones(shp, dtype=torch.bool, device=dev))
            self.label = "PyTorch (eager, %d iterations over the image)" % s.max_iter
        elif pid == HIST:
            k = self.dev[0]
            try:
                torch.bincount(k[:16], minlength=s.bins)
                self.fn = lambda k: torch.bincount(k, minlength=s.bins)
            except Exception:
                self.dev = [k.long()]
                self.fn = lambda k: torch.bincount(k, minlength=s.bins)
                self.label = "PyTorch (keys as int64)"
        elif pid in SV_PIDS:
            self.fn, self.label = sv_torch(torch, prog, self.dev)
        elif pid == JACOBI:
            import torch.nn.functional as F

            self.dev = [d.reshape(int(s.h), int(s.n)) for d in self.dev]
            self.fn = jacobi_xp(
                lambda u: F.pad(u[None, None], (1, 1, 1, 1), mode="replicate")[0, 0],
                s.max_iter)
            self.label = "PyTorch (pad replicate + slices, %d steps)" % s.max_iter
        self.out = self.fn(*self.dev)
        self.sync()

    def close(self):
        self.out = self.dev = self.fn = None
        gc.collect()
        self.torch.cuda.empty_cache()


class TorchMath:
    """The few numpy-style names the shared formulations use, for torch."""

    def __init__(self, torch):
        self.t = torch
        self.float32 = torch.float32
        self.log, self.exp, self.sqrt, self.abs = torch.log, torch.exp, torch.sqrt, torch.abs
        self.where = torch.where

    def empty(self, n, dtype=None):
        return self.t.empty(n, dtype=self.t.float32, device="cuda")


class JaxImpl(PeerImpl):
    name = "JAX (jit)"
    timer = "host clock (no events)"

    def __init__(self):
        import jax

        devs = jax.devices()
        if not devs or devs[0].platform != "gpu":
            raise Unavailable("JAX has no GPU (%s)" % (devs[0].platform if devs else "none"))
        self.jax = jax

    def sync(self):
        if self.out is not None:
            self.jax.block_until_ready(self.out)

    def to_host(self, o):
        return np.asarray(o)

    def run(self):
        self.out = self.fn(*self.dev)

    def time_once(self):
        self.out = None
        t0 = time.perf_counter()
        out = self.fn(*self.dev)
        self.jax.block_until_ready(out)
        ms = (time.perf_counter() - t0) * 1e3
        self.out = out
        return ms, None

    def setup(self, prog, host):
        jax = self.jax
        import jax.numpy as jnp
        from jax import lax

        s = prog.shape
        self.dev = [jax.device_put(h) for h in host]
        pid = prog.pid
        if pid == SAXPY:
            a = np.float32(s.a)
            f = lambda x, y: a * x + y  # noqa: E731
        elif pid == BS:
            f = bs_xp(jnp, jnp)
        elif pid == SUM:
            f = jnp.sum
        elif pid == DOTP:
            f = lambda x, y: jnp.dot(x, y, precision=lax.Precision.HIGHEST)  # noqa: E731
        elif pid == SCAN:
            f = lambda x: jnp.cumsum(x, dtype=jnp.int32)  # noqa: E731
        elif pid == NBODY:
            c = chunk_rows(s.n)
            eps2 = np.float32(s.eps2)

            def f(x, y, z, m):
                def rows(p):
                    xc, yc, zc = p
                    dx = x[None, :] - xc[:, None]
                    dy = y[None, :] - yc[:, None]
                    dz = z[None, :] - zc[:, None]
                    inv = lax.rsqrt(dx * dx + dy * dy + dz * dz + eps2)
                    w = m[None, :] * (inv * inv * inv)
                    return ((dx * w).sum(1), (dy * w).sum(1), (dz * w).sum(1))

                ax, ay, az = lax.map(rows, (x.reshape(-1, c), y.reshape(-1, c),
                                            z.reshape(-1, c)))
                return ax.reshape(-1), ay.reshape(-1), az.reshape(-1)

            self.label = "JAX (jit, lax.map over %d-row chunks)" % c
        elif pid == MANDEL:
            w, h, mi = int(s.n), int(s.h), int(s.max_iter)
            x0, y0 = np.float32(s.x0), np.float32(s.y0)
            dx, dy = np.float32(s.dx), np.float32(s.dy)

            def f():
                cr = x0 + dx * jnp.arange(w, dtype=jnp.float32)[None, :]
                ci = y0 + dy * jnp.arange(h, dtype=jnp.float32)[:, None]
                z0 = jnp.zeros((h, w), jnp.float32)

                def body(_, st):
                    zr, zi, act, cnt = st
                    act = act & (zr * zr + zi * zi <= 4.0)
                    cnt = cnt + act.astype(jnp.int32)
                    return (zr * zr - zi * zi + cr, 2.0 * zr * zi + ci, act, cnt)

                st = (z0, z0, jnp.ones((h, w), bool), jnp.zeros((h, w), jnp.int32))
                return lax.fori_loop(0, mi, body, st)[3]

            self.label = "JAX (jit, lax.fori_loop over the image)"
        elif pid == HIST:
            f = lambda k: jnp.bincount(k, length=int(s.bins))  # noqa: E731
        elif pid in SV_PIDS:
            f, self.label = sv_jax(jax, prog)
        elif pid == JACOBI:
            self.dev = [d.reshape(int(s.h), int(s.n)) for d in self.dev]
            step = jacobi_xp(lambda u: jnp.pad(u, 1, mode="edge"), 1)
            iters = int(s.max_iter)
            f = lambda u: lax.fori_loop(0, iters, lambda _, v: step(v), u)  # noqa: E731
            self.label = "JAX (jit, lax.fori_loop of pad edge + slices)"
        self.fn = jax.jit(f)
        self.out = self.fn(*self.dev)
        self.sync()

    def close(self):
        self.out = self.fn = None
        for d in self.dev or []:
            try:
                d.delete()
            except Exception:
                pass
        self.dev = None
        gc.collect()


# -- formulations shared by the peers (xp: cupy, jax.numpy, or TorchMath) --


def saxpy_xp(xp, a):
    def saxpy(x, y):
        return x * a + y  # (the array first: a traced operand under cp.fuse)

    return saxpy


def bs_xp(xp, m):
    """Black-Scholes as elementwise ops: m provides log, exp, sqrt, abs,
    where (cupy / jnp / TorchMath)."""
    r, v = 0.02, 0.30
    drift = r + 0.5 * (v * v)
    c = (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429)
    rsqrt2pi = 0.39894228040143267793994605993438

    def cnd(d):
        k = 1.0 / (1.0 + 0.2316419 * m.abs(d))
        poly = c[0] + k * (c[1] + k * (c[2] + k * (c[3] + k * c[4])))
        rr = (rsqrt2pi * m.exp(-0.5 * (d * d))) * (k * poly)
        return m.where(d > 0.0, 1.0 - rr, rr)

    def bs(s, x, t):
        v_sqrtt = v * m.sqrt(t)
        d1 = (m.log(s / x) + drift * t) / v_sqrtt
        d2 = d1 - v_sqrtt
        c1, c2 = cnd(d1), cnd(d2)
        x_exprt = x * m.exp(-r * t)
        return (s * c1 - x_exprt * c2, x_exprt * (1.0 - c2) - s * (1.0 - c1))

    return bs


def nbody_xp(m, s, sqrt, rowsum):
    """All-pairs accelerations in chunks of rows (c x n temporaries)."""
    n = int(s.n)
    c = chunk_rows(n)
    eps2 = float(s.eps2)

    def nbody(x, y, z, mass):
        outs = [m.empty(n, dtype=m.float32) for _ in range(3)]
        for i0 in range(0, n, c):
            dx = x[None, :] - x[i0:i0 + c, None]
            dy = y[None, :] - y[i0:i0 + c, None]
            dz = z[None, :] - z[i0:i0 + c, None]
            inv = 1.0 / sqrt(dx * dx + dy * dy + dz * dz + eps2)
            w = mass[None, :] * (inv * inv * inv)
            outs[0][i0:i0 + c] = rowsum(dx * w, 1)
            outs[1][i0:i0 + c] = rowsum(dy * w, 1)
            outs[2][i0:i0 + c] = rowsum(dz * w, 1)
        return tuple(outs)

    return nbody


def jacobi_xp(pad, iters):
    """iters Jacobi steps, each 0.25 (((n + s) + w) + e) of the grid
    padded by its edge (the clamped boundary), in weft's order."""
    iters = int(iters)

    def jacobi(u):
        for _ in range(iters):
            p = pad(u)
            u = 0.25 * (((p[:-2, 1:-1] + p[2:, 1:-1]) + p[1:-1, :-2]) + p[1:-1, 2:])
        return u

    return jacobi


def mandel_xp(m, s, arange, zeros_f, zeros_i, ones_b):
    w, h, mi = int(s.n), int(s.h), int(s.max_iter)
    x0, y0, dx, dy = float(s.x0), float(s.y0), float(s.dx), float(s.dy)

    def mandel():
        cr = (x0 + dx * arange(w))[None, :]
        ci = (y0 + dy * arange(h))[:, None]
        zr, zi = zeros_f((h, w)), zeros_f((h, w))
        act, cnt = ones_b((h, w)), zeros_i((h, w))
        for _ in range(mi):
            act &= zr * zr + zi * zi <= 4.0
            cnt += act
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        return cnt

    return mandel


# ---- smvm and k-means (helper smvm) -------------------------------------------


class SparseProgram(Program):
    """smvm (the CSR matrices of bench/programs.h, made by weft_gpu.c) and
    k-means (its points): inputs of several lengths (gpubench.h's table).
    shape: smvm n rows, h nonzeros, bins columns; k-means n points, bins
    centroids, max_iter iterations at most."""

    def __init__(self, key, pid, title, quick):
        self.key, self.pid, self.title = key, pid, title
        s = Shape()
        if pid in (SMVM_B, SMVM_P):
            s.n = 4096 if quick else 1 << 20  # columns; rows once made
        else:
            s.n = (1 << 14) if quick else 1 << 22
            s.bins, s.max_iter = 16, 50
        self.shape = s
        self.flops = 0.0
        self.bytes = 0
        self.size = ""
        if pid in (KMEANS, KMEANS_W):
            self.outputs = [("f32", 2 * s.bins + 1)]
            self.size = "%d points, k = %d" % (s.n, s.bins)

    def make_inputs(self, wg):
        s = self.shape
        if self.pid in (SMVM_B, SMVM_P):
            dims = (ctypes.c_int64 * 3)()
            if wg.wg_smvm_make(1 if self.pid == SMVM_P else 0, s.n, dims):
                raise Unavailable(wg.wg_error().decode())
            rows, nnz, cols = dims[0], dims[1], dims[2]
            vals, cidx = Buf("f32", nnz), Buf("i32", nnz)
            rowlen, rowptr = Buf("i32", rows), Buf("i32", rows + 1)
            x = Buf("f32", cols)
            wg.wg_smvm_copy(vals.ptr, cidx.ptr, rowlen.ptr, rowptr.ptr)
            wg.wg_fill_f32(x.ptr, x.n, -1, 1, 1000 * self.pid + 4)
            s.n, s.h, s.bins = rows, nnz, cols
            self.outputs = [("f32", rows)]
            # values and columns once, the row pointers (lengths), x, y
            self.bytes = 8 * nnz + 4 * (rows + 1) + 4 * cols + 4 * rows
            self.size = "%d rows, %d nonzeros" % (rows, nnz)
            # weft's foldSeg' reads rowptr (input 2), the peers input 4
            return [vals, cidx, rowptr, x, rowptr]
        px, py = Buf("f32", s.n), Buf("f32", s.n)
        cx, cy = Buf("f32", s.bins), Buf("f32", s.bins)
        wg.wg_kmeans_points(px.ptr, py.ptr, s.n, s.bins, cx.ptr, cy.ptr)
        return [px, py, cx, cy]

    def reference_result(self, ref):
        """k-means: the reference's iterations set the bytes (per iteration
        the points, and each point's cluster read and written)."""
        if self.pid in (KMEANS, KMEANS_W):
            it = int(round(float(ref[0].a[2 * self.shape.bins])))
            self.bytes = 16 * self.shape.n * it
            self.size = "%d points, k = %d, %d iterations" % (
                self.shape.n, self.shape.bins, it)


def sv_check(wg, prog, got, ref):
    err = ctypes.c_double()
    g, r = got[0], ref[0]
    if prog.pid in (SMVM_B, SMVM_P):
        bad = wg.wg_compare_f32(g.ptr, r.ptr, r.n, 1.0, 5e-4, ctypes.byref(err))
        return bad == 0, "%s (max err. %.1e%s)" % (
            "ok" if bad == 0 else "FAIL", err.value, "" if bad == 0 else ", %d over" % bad)
    k = prog.shape.bins
    bad = wg.wg_compare_f32(g.ptr, r.ptr, 2 * k, 1.0, 1e-2, ctypes.byref(err))
    gi, ri = float(g.a[2 * k]), float(r.a[2 * k])
    ok = bad == 0 and abs(gi - ri) <= 2
    return ok, "%s (centroids max err. %.1e; %d iterations, reference %d)" % (
        "ok" if ok else "FAIL", err.value, gi, ri)


def sv_kmeans_step_np(xp, px, py, cx, cy, k, argmin, bincount):
    """One Lloyd step in array idioms: distances (n x k), the nearest (the
    first on ties), sums and counts by bincount; a centroid without points
    stays."""
    d = (px[:, None] - cx[None, :]) ** 2 + (py[:, None] - cy[None, :]) ** 2
    a = argmin(d)
    cnt = bincount(a, None)
    sx, sy = bincount(a, px), bincount(a, py)
    has = cnt > 0
    safe = xp.where(has, cnt, 1)
    return a, xp.where(has, sx / safe, cx), xp.where(has, sy / safe, cy)


def sv_cupy(cp, prog, dev):
    s = prog.shape
    if prog.pid in (SMVM_B, SMVM_P):
        import cupyx.scipy.sparse as sp

        vals, cols, _, x, rowptr = dev
        a = sp.csr_matrix((vals, cols, rowptr), shape=(int(s.n), int(s.bins)))
        return (lambda *_: a @ x), "CuPy (cupyx.scipy.sparse csr @ x: cuSPARSE)"
    k, mi = int(s.bins), int(s.max_iter)

    def run(px, py, cx0, cy0):
        cx, cy = cx0.astype(cp.float32), cy0.astype(cp.float32)
        old = cp.full(px.shape[0], -1, dtype=cp.int64)
        it, moved = 0, 1
        while moved > 0 and it < mi:
            a, cx, cy = sv_kmeans_step_np(
                cp, px, py, cx, cy, k, lambda d: cp.argmin(d, axis=1),
                lambda a, w: cp.bincount(a, weights=w, minlength=k))
            cx, cy = cx.astype(cp.float32), cy.astype(cp.float32)
            moved = int((a != old).sum())
            old = a
            it += 1
        return cp.concatenate([cx, cy, cp.asarray([it], dtype=cp.float32)])

    return run, "CuPy (argmin of n x k distances, bincount; host loop)"


def sv_torch(torch, prog, dev):
    s = prog.shape
    if prog.pid in (SMVM_B, SMVM_P):
        vals, cols, _, x, rowptr = dev
        a = torch.sparse_csr_tensor(rowptr, cols, vals, size=(int(s.n), int(s.bins)))
        return (lambda *_: torch.mv(a, x)), "PyTorch (sparse_csr_tensor, torch.mv)"
    k, mi = int(s.bins), int(s.max_iter)

    def bincount(a, w):
        return torch.bincount(a, weights=w, minlength=k)

    def run(px, py, cx0, cy0):
        cx, cy = cx0.clone(), cy0.clone()
        old = torch.full((px.shape[0],), -1, dtype=torch.int64, device=px.device)
        it, moved = 0, 1
        while moved > 0 and it < mi:
            a, cx, cy = sv_kmeans_step_np(torch, px, py, cx, cy, k,
                                          lambda d: torch.argmin(d, dim=1), bincount)
            cx, cy = cx.float(), cy.float()
            moved = int((a != old).sum())
            old = a
            it += 1
        return torch.cat([cx, cy, torch.tensor([float(it)], device=px.device)])

    return run, "PyTorch (argmin of n x k distances, bincount; host loop)"


def sv_jax(jax, prog):
    import jax.numpy as jnp
    from jax import lax

    s = prog.shape
    if prog.pid in (SMVM_B, SMVM_P):
        shape = (int(s.n), int(s.bins))
        try:
            from jax.experimental import sparse

            def f(vals, cols, rowlen, x, rowptr):
                return sparse.BCSR((vals, cols, rowptr), shape=shape) @ x

            return f, "JAX (jit, jax.experimental.sparse.BCSR @ x)"
        except Exception:
            def g(vals, cols, _, x, rowptr):
                rows = jnp.repeat(jnp.arange(shape[0]), jnp.diff(rowptr),
                                  total_repeat_length=vals.shape[0])
                return jax.ops.segment_sum(vals * x[cols], rows,
                                           num_segments=shape[0])

            return g, "JAX (jit, segment_sum)"
    k, mi = int(s.bins), int(s.max_iter)

    def f(px, py, cx0, cy0):
        def step(st):
            cx, cy, old, it, _ = st
            a, nx, ny = sv_kmeans_step_np(
                jnp, px, py, cx, cy, k,
                lambda d: jnp.argmin(d, axis=1).astype(jnp.int32),
                lambda a, w: jnp.bincount(a, weights=w, length=k))
            moved = jnp.sum(a != old).astype(jnp.int32)
            return (nx.astype(jnp.float32), ny.astype(jnp.float32), a, it + 1, moved)

        init = (cx0, cy0, jnp.full(px.shape[0], -1, jnp.int32), jnp.int32(0),
                jnp.int32(1))
        cx, cy, _, it, _ = lax.while_loop(
            lambda st: (st[4] > 0) & (st[3] < mi), step, init)
        return jnp.concatenate([cx, cy, it.astype(jnp.float32)[None]])

    return f, "JAX (jit, lax.while_loop of argmin and bincount)"


# ---- timing -----------------------------------------------------------------


class Row:
    """One implementation's results: ms and ems, the medians of the host
    clock's and of the events' times (None: none)."""

    def __init__(self, name):
        self.name, self.ms, self.runs, self.check, self.na = name, None, 0, "-", None
        self.ems = None
        self.moved = None  # weft: bytes handed between devices per run
        self.times, self.etimes, self.timer = [], [], ""


def bench_program(prog, impls, ref_impl, wg, log):
    """Run one program on every implementation (the first one is the
    reference whose results the others are checked against).  Returns
    [Row], the reference result and the compile info of weft rows."""
    inputs = fill_inputs(wg, prog)
    rows, live, ref, compile_info = [], [], None, {}
    for make in [ref_impl] + impls:
        row = Row("?")
        rows.append(row)
        impl = None
        try:
            impl = make()
            row.name = impl.name
            row.timer = impl.timer
            impl.open(prog, inputs)
            row.name = impl.name
            got = impl.result()
            if ref is None:
                ref = got
                row.check = "(reference)"
                if prog.pid in SV_PIDS:
                    prog.reference_result(ref)
                if prog.pid == MANDEL:
                    prog.flops = 9.0 * wg.wg_sum_i32(ref[0].ptr, ref[0].n)
            else:
                ok, row.check = check(wg, prog, got, ref)
            del got
            if isinstance(impl, WeftImpl):
                compile_info[impl.name] = impl.compile_info()
            row.warm = impl.time_once()[0]
            live.append((impl, row))
        except Exception as e:  # missing, out of memory, failed
            row.na = short(e)
            if not isinstance(e, (Unavailable, ImportError)):
                log("    %s: %s" % (row.name, traceback.format_exc().strip().splitlines()[-1]))
            if impl is not None:
                try:
                    impl.close()
                except Exception:
                    pass
            if ref is None:
                break
        log("  %-45s %s" % (row.name, row.na or row.check))
    # rounds
    want = {}
    for impl, row in live:
        want[id(impl)] = max(MIN_ROUNDS, min(ROUNDS, int(BUDGET_MS / max(row.warm, 1e-3))))
    for r in range(ROUNDS):
        for impl, row in live:
            if row.na or r >= want[id(impl)]:
                continue
            try:
                host, ev = impl.time_once()
                row.times.append(host)
                if ev is not None:
                    row.etimes.append(ev)
            except Exception as e:
                row.na = short(e)
    for impl, row in live:
        row.moved = getattr(impl, "moved", None)
        if row.times and not row.na:
            row.ms = statistics.median(row.times)
            row.runs = len(row.times)
            if len(row.etimes) == len(row.times):
                row.ems = statistics.median(row.etimes)
        try:
            impl.close()
        except Exception:
            pass
    del inputs
    gc.collect()
    return rows, compile_info


# ---- the report -------------------------------------------------------------


def fmt_ms(ms):
    if ms is None:
        return "-"
    return "%.3f" % ms if ms < 1 else "%.2f" % ms if ms < 100 else "%.0f" % ms


def both_ms(r):
    """A row's medians, "host / events"."""
    return "%s / %s" % (fmt_ms(r.ms), fmt_ms(r.ems))


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"


def both_ratio(r, base):
    """r's times over base's, by each clock: "host / events"."""
    if not r or not base:
        return "-"
    return "%s / %s" % (ratio(r.ms, base.ms), ratio(r.ems, base.ems))


def rate(prog, ms):
    if ms is None or ms <= 0:
        return "-"
    if prog.memory_bound:
        return "%.0f GB/s" % (prog.bytes / (ms * 1e6))
    return "%.0f GFLOP/s" % (prog.flops / (ms * 1e6))


def machine_info(rf, quick, backend):
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    for p in ("VERSION", os.path.join(os.path.dirname(__file__), "..", "..", "VERSION")):
        if os.path.exists(p):
            info["commit"] = open(p).read().strip()
            break
    else:
        try:
            info["commit"] = subprocess.run(
                ["git", "describe", "--always", "--dirty"], capture_output=True,
                text=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
        except Exception:
            info["commit"] = "unknown"
    info["host"] = "%s %s, Python %s" % (platform.system(), platform.release(),
                                         platform.python_version())
    if rf is not None:
        name = ctypes.create_string_buffer(256)
        cc, mp, drv, rt = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        mem = ctypes.c_int64()
        if rf.rf_device_info(name, 256, ctypes.byref(cc), ctypes.byref(mp),
                             ctypes.byref(mem), ctypes.byref(drv), ctypes.byref(rt)) == 0:
            info["gpu"] = "%s (sm_%d, %d SMs, %.1f GiB)" % (
                name.value.decode(), cc.value, mp.value, mem.value / 2**30)
            info["cuda"] = "driver supports CUDA %d.%d; ref.cu built with runtime %d.%d" % (
                drv.value // 1000, drv.value % 1000 // 10, rt.value // 1000, rt.value % 1000 // 10)
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,"
                                  "clocks.max.mem,power.limit", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip()
            info["driver"] = smi.splitlines()[0] if smi else "unknown"
        except Exception:
            info["driver"] = "unknown (no nvidia-smi)"
    else:
        info["gpu"] = "none: quick check on the %s backend" % backend
    return info


def versions(peers_used):
    out = []
    for mod in ("cupy", "torch", "jax", "jaxlib", "numpy"):
        m = sys.modules.get(mod)
        if m is not None:
            out.append("%s %s" % (mod, getattr(m, "__version__", "?")))
    return ", ".join(out) or "none"


def write_report(path, info, copy, results, compiles, dotp_compile, quick, backend, log_lines):
    L = []
    w = L.append
    w("# weft on the GPU: benchmark\n")
    w("Written by `bench/gpu/run.py` (through `bench/gpu/run.sh`); numbers as "
      "measured in this one run.%s\n" % (
          " **QUICK CHECK (small sizes, %s backend, no GPU): not a benchmark.**" % backend
          if quick else ""))
    w("## Machine\n")
    w("- GPU: %s" % info.get("gpu", "?"))
    if "driver" in info:
        w("- NVIDIA driver, max SM / memory clocks, power limit: %s" % info["driver"])
    if "cuda" in info:
        w("- CUDA: %s" % info["cuda"])
    w("- host: %s" % info["host"])
    w("- peers: %s" % versions(None))
    w("- weft: %s (the bundle's VERSION, `git describe --always --dirty`)" % info.get("commit"))
    w("- date: %s" % info["date"])
    if copy:
        w("- copy bandwidth: **%.0f GB/s** (cudaMemcpy device to device of 1 GiB, "
          "median of 10, 2 x bytes / time; %.3f ms per copy)" % copy)
    w("- timing: every implementation prepared once (inputs on the device, one run "
      "to compile / upload), checked, warmed up once, then %d interleaved rounds "
      "(each implementation once per round; at least %d and at most %d runs, fewer "
      "when one run is slow: about %.0f s of runs each); the medians.  Every "
      "run is timed two ways at once: **host**, the host clock from before the "
      "run starts until its result is complete on the device (an event "
      "recorded after the run on its stream is waited for; JAX: "
      "`block_until_ready`; nothing is copied back, a scalar is not read), "
      "which counts each library's cost per call; and **events**, CUDA events "
      "recorded before and after the run on the stream it uses (the CUDA "
      "reference: the default stream; weft: its own, `weft_context_stream`; "
      "CuPy, PyTorch: the current stream; JAX: none), the device's time from "
      "the first event to the end of the last kernel, which still includes "
      "what the host takes to launch the first kernel after the first event."
      % (ROUNDS, MIN_ROUNDS, ROUNDS, BUDGET_MS / 1e3))
    w("")
    # summary
    w("## Summary\n")
    w("Each cell: host clock / CUDA events (ms, or the ratio of the two "
      "implementations' times by the same clock; - where there is none).\n")
    w("| program | size | weft ms | best peer (host) | best peer ms | weft / best | "
      "CUDA ms | weft / CUDA |")
    w("|---|---|---:|---|---:|---:|---:|---:|")
    for prog, rows in results:
        weft_rows = [r for r in rows if r.name.startswith("weft") and r.ms]
        peers = [r for r in rows if not r.name.startswith("weft") and r.ms]
        best = min(peers, key=lambda r: r.ms) if peers else None
        cuda = next((r for r in rows if r.name.startswith("CUDA") and r.ms), None)
        wr = min(weft_rows, key=lambda r: r.ms) if weft_rows else None
        w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            prog.key, prog.size, both_ms(wr) if wr else "n/a",
            best.name if best else "-", both_ms(best) if best else "-",
            both_ratio(wr, best), both_ms(cuda) if cuda else "-",
            both_ratio(wr, cuda)))
    w("")
    w("## Programs\n")
    for prog, rows in results:
        w("### %s (%s)\n" % (prog.title, prog.size))
        peers = [r for r in rows if not r.name.startswith("weft") and r.ms]
        best = min(peers, key=lambda r: r.ms) if peers else None
        hdr = ("| implementation | host ms | events ms | runs | throughput (host) "
               "| x best peer (host / events) |")
        sep = "|---|---:|---:|---:|---:|---:|"
        if prog.memory_bound and copy:
            hdr += " of copy bandwidth (host) |"
            sep += "---:|"
        hdr += " check |"
        sep += "---|"
        w(hdr)
        w(sep)
        for r in rows:
            if r.na:
                line = "| %s | n/a (%s) | | | | |" % (r.name, r.na.replace("|", "/"))
                if prog.memory_bound and copy:
                    line += " |"
                w(line + " %s |" % r.check)
                continue
            line = "| %s | %s | %s | %d | %s | %s |" % (
                r.name, fmt_ms(r.ms), fmt_ms(r.ems), r.runs, rate(prog, r.ms),
                both_ratio(r, best) if best and r.ms else "-")
            if prog.memory_bound and copy:
                line += " %s |" % ("%.0f%%" % (100 * prog.bytes / (r.ms * 1e6) / copy[0])
                                   if r.ms else "-")
            w(line + " %s |" % r.check)
        w("")
        notes = "Check: %s." % CHECKS[prog.pid]
        if prog.memory_bound:
            notes += " Throughput: %d bytes moved at least (inputs read once, outputs written once) over the time." % prog.bytes
        else:
            notes += (" Throughput: 20 flops per interaction (sqrt and / one each)." if prog.pid == NBODY
                      else " Throughput: 9 flops per iteration done (%.3g iterations in all, from the reference's counts)." % (prog.flops / 9))
        w(notes + "\n")
    w("## weft compile times\n")
    if dotp_compile:
        (first, disk), (k_first, k_loaded, k_compiled) = dotp_compile
        w("- dotp, first compile (fresh `WEFT_CACHE_DIR`: IR, PTX, cubin): **%.1f ms** "
          "(%d kernels compiled)" % (first, k_first))
        w("- dotp, from the disk cache (a second context): **%.1f ms** (%d loaded, "
          "%d compiled)\n" % (disk, k_loaded, k_compiled))
    w("Each program's first compile in this run (its own context on a fresh cache "
      "directory) and its plan:\n")
    w("| program | compile ms | kernels compiled | loaded | plan |")
    w("|---|---:|---:|---:|---|")
    for key, name, (ms, c, l, k, plan) in compiles:
        w("| %s | %.1f | %d | %d | %d: %s |" % (key if name == "weft" else "%s (%s)" % (key, name),
                                                ms, c, l, k, plan.replace("|", "/")))
    w("")
    w("## Implementations\n")
    w("- **weft**: `bench/gpu/weft_gpu.c`, the public API only, on the %s backend; "
      "n-body as `generate n` with a `weft_while` over j (**weft**) and as "
      "`fold (+) (generate (n, n) pull)` (**weft (fold)**), as bench/weft_bench.c; "
      "the histogram as `permute (+) (generate 256 0) (\\i -> keys ! i) (generate n 1)` "
      "with keys in [0, 256)." % backend)
    w("- **CUDA**: `bench/gpu/ref.cu`, nvcc -O3 -arch=sm_90 -lineinfo (FMA "
      "contraction on, no fast math): grid-stride float4 / int4 loops, CUB "
      "DeviceReduce::Sum and DeviceScan::InclusiveSum, dotp by a warp-shuffle "
      "block reduction and a finishing block, n-body tiled through shared memory "
      "with rsqrtf, histogram per block in shared memory then global atomics.  It "
      "is the reference the others are checked against.")
    w("- **CuPy**, **PyTorch**, **JAX**: idiomatic code (`bench/gpu/run.py`): "
      "elementwise expressions (`cp.fuse` where it works; eager torch ops; "
      "`jax.jit`), `sum`, `dot`, `cumsum(dtype=int32)`, `bincount`; n-body in "
      "chunks of rows (c x n temporaries); Mandelbrot as 255 masked steps over "
      "the whole image.")
    w("- **smvm, k-means** (bench/programs.h, written once for the CPU and "
      "GPU benchmarks): weft's smvm is `foldSeg' (+) 0` over the row pointers "
      "(offsets), as the others take them; CUDA is a CSR vector kernel (L lanes "
      "a row, L the power of two at or below the average row, 8 here; "
      "RF_SMVM_LANES=32 gives a warp per row) and a k-means iteration of an "
      "assignment kernel with shared-memory sums and an update kernel, the "
      "host reading the moved count each iteration; CuPy `cupyx.scipy.sparse."
      "csr_matrix @ x` (cuSPARSE), PyTorch `torch.mv` of a `sparse_csr_tensor`, "
      "JAX `jax.experimental.sparse.BCSR @ x` under jit; their k-means is "
      "argmin over the n x k distances and bincount sums (CuPy, PyTorch: a "
      "host loop reading the moved count; JAX: `lax.while_loop`).  weft's "
      "k-means returns its centroids and count packed into one array (one "
      "more small kernel).")
    # -- Jacobi (stencil) --
    w("- **Jacobi**: weft as `bench/programs.h` writes it (an `awhile` over "
      "(grid, unit count) of a 3x3 clamped `stencil`; the GPU waits for the "
      "count's test every step), and **weft (host loop)**: one step compiled, "
      "run %d times by `weft_run`, each on the last result (which stays on "
      "the device; released once the next run is queued); CUDA: a launch per step of a 64 x 32 shared-memory tile "
      "kernel; CuPy, PyTorch, JAX: each step `pad` (edge / replicate) and four "
      "slices added in weft's order (JAX in one `lax.fori_loop` under `jit`)."
      % JACOBI_STEPS)
    # -- end Jacobi --
    w("- n/a: the implementation is missing or failed (the reason is given).")
    w("")
    with open(path, "w") as f:
        f.write("\n".join(L))
    return "\n".join(L)


def write_json(path, info, copy, results, compiles, dotp_compile, quick, backend):
    """The report's numbers as one JSON object (see the module's doc)."""
    rows = []
    for prog, prog_rows in results:
        peers = [r for r in prog_rows if not r.name.startswith("weft") and r.ms]
        best = min(peers, key=lambda r: r.ms) if peers else None
        cuda = next((r for r in prog_rows if r.name.startswith("CUDA") and r.ms), None)
        for r in prog_rows:
            rows.append({
                "program": prog.key, "size": prog.size, "implementation": r.name,
                "median_ms": r.ms, "median_event_ms": r.ems, "runs": r.runs,
                "timer": r.timer,
                "ratio_to_best_peer": r.ms / best.ms if r.ms and best else None,
                "event_ratio_to_best_peer": (r.ems / best.ems
                                             if r.ems and best and best.ems else None),
                "best_peer": best.name if best else None,
                "ratio_to_cuda": r.ms / cuda.ms if r.ms and cuda else None,
                "event_ratio_to_cuda": (r.ems / cuda.ems
                                        if r.ems and cuda and cuda.ems else None),
                "check": r.check, "na": r.na, "bytes_moved": r.moved})
    doc = {
        "bench": "gpu", "format": 2, "commit": info.get("commit"),
        "date": info.get("date"), "host": info.get("host"),
        "node": platform.node(), "gpu": info.get("gpu"),
        "driver": info.get("driver"), "cuda": info.get("cuda"),
        "backend": backend, "quick": bool(quick),
        "copy_gbs": copy[0] if copy else None,
        "rows": rows,
        "compile": [{"program": key, "implementation": name, "compile_ms": ms,
                     "kernels_compiled": c, "loaded": l, "kernels": k,
                     "plan": plan}
                    for key, name, (ms, c, l, k, plan) in compiles],
    }
    if dotp_compile:
        (first, disk), (k_first, k_loaded, k_compiled) = dotp_compile
        doc["dotp_compile"] = {"first_ms": first, "from_disk_ms": disk,
                               "compiled": k_first, "loaded": k_loaded,
                               "from_disk_compiled": k_compiled}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


# ---- main -------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--weft-lib", default="./bench_weft_gpu.so")
    ap.add_argument("--ref-lib", default="./bench_ref_gpu.so")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--backend", default="ptx", choices=["ptx", "cpu", "interp"])
    ap.add_argument("--only", default="", help="comma-separated program keys")
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    quick, backend = args.quick, args.backend
    if backend != "ptx" and not quick:
        sys.exit("run.py: --backend %s needs --quick (no GPU peers to compare)" % backend)
    os.makedirs(args.outdir, exist_ok=True)
    os.environ["WEFT_BACKEND"] = backend
    t_start = time.time()
    log_lines = []

    logf = open(os.path.join(args.outdir, "run.log"), "w")

    def log(s):
        print(s, flush=True)
        log_lines.append(s)
        logf.write(s + "\n")
        logf.flush()

    wg = load_weft(os.path.abspath(args.weft_lib))
    rf = None
    if not quick:
        rf = load_ref(os.path.abspath(args.ref_lib))
        if rf.rf_init(0):
            sys.exit("run.py: CUDA: %s" % rf.rf_error().decode())
        wg.wg_set_events(ctypes.cast(rf.rf_event_record, ctypes.c_void_p),
                         ctypes.cast(rf.rf_event_finish, ctypes.c_void_p))
    tmp = tempfile.mkdtemp(prefix="weft-gpubench-")
    wg.wg_configure({"interp": 0, "cpu": 1, "ptx": 2}[backend],
                    os.path.join(tmp, "cache").encode())
    name = wg.wg_backend_name()
    if name is None:
        sys.exit("run.py: weft: %s" % wg.wg_error().decode())
    if name.decode() != backend:
        sys.exit("run.py: weft runs on %s, not %s" % (name.decode(), backend))
    info = machine_info(rf, quick, backend)
    log("weft GPU benchmark: %s; weft %s on %s" % (info.get("gpu"), info.get("commit"), backend))

    copy = None
    if rf is not None:
        ms = ctypes.c_double()
        gbs = rf.rf_copy_gbs(1 << 30, 10, ctypes.byref(ms))
        if gbs > 0:
            copy = (gbs, ms.value)
            log("copy bandwidth: %.0f GB/s (%.3f ms per GiB)" % copy)

    # weft's compile times for dotp: a fresh cache, then from disk
    dotp_compile = None
    ms = (ctypes.c_double * 2)()
    k = (ctypes.c_int64 * 3)()
    if wg.wg_compile_dotp(os.path.join(tmp, "dotp-cache").encode(), ms, k) == 0:
        dotp_compile = ((ms[0], ms[1]), (k[0], k[1], k[2]))
        log("dotp compile: first %.1f ms, from the disk cache %.1f ms" % (ms[0], ms[1]))
    else:
        log("dotp compile failed: %s" % wg.wg_error().decode())

    # the peers: each imported once; a missing one is n/a everywhere
    peer_classes = []
    if not quick and not args.no_peers:
        for cls in (CupyImpl, TorchImpl, JaxImpl):
            try:
                cls()
                peer_classes.append((cls, None))
            except Exception as e:
                peer_classes.append((cls, short(e)))
                log("%s: n/a (%s)" % (cls.name, short(e)))

    def peer_maker(cls, why):
        def make():
            if why:
                raise Unavailable(why)
            return cls()
        make.__name__ = cls.name
        return make

    path = os.path.join(args.outdir, "gpu.md")
    json_path = os.path.join(args.outdir, "gpu.json")
    only = [s for s in args.only.split(",") if s]
    results, compiles = [], []
    for key, pid, title in PROGRAM_LIST:
        if only and key not in only:
            continue
        prog = (SparseProgram if pid in SV_PIDS else Program)(key, pid, title, quick)
        log("%s (%s) ..." % (key, prog.size))
        impls = [lambda: WeftImpl(wg, pid)]
        if pid == NBODY:
            impls.append(lambda: WeftImpl(wg, NBODY_FOLD, "weft (fold)"))
        if pid == JACOBI:
            impls.append(lambda: WeftImpl(wg, JACOBI_LOOP, "weft (host loop)"))
        if quick:
            ref_impl = lambda: CrefImpl(wg)  # noqa: E731
        else:
            ref_impl = lambda: CudaImpl(rf)  # noqa: E731
            impls += [peer_maker(c, why) for c, why in peer_classes]
        rows, cinfo = bench_program(prog, impls, ref_impl, wg, log)
        # a peer that was n/a before it had a name
        for r, make in zip(rows[1:], impls):
            if r.name == "?":
                r.name = getattr(make, "__name__", "?")
        for r in rows:
            if r.ms is not None:
                log("  %-45s %10s ms  (%d runs)  %s  (host clock; events: %s ms)" % (
                    r.name, fmt_ms(r.ms), r.runs, rate(prog, r.ms), fmt_ms(r.ems)))
        results.append((prog, rows))
        for nm, ci in cinfo.items():
            compiles.append((key, nm, ci))
        if "torch" in sys.modules:
            try:
                sys.modules["torch"].cuda.empty_cache()
            except Exception:
                pass
        if "cupy" in sys.modules:
            try:
                sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
            except Exception:
                pass
        gc.collect()
        # the report so far (a run stopped later still leaves one)
        write_report(path, info, copy, results, compiles, dotp_compile, quick,
                     backend, log_lines)
        write_json(json_path, info, copy, results, compiles, dotp_compile,
                   quick, backend)

    if rf is not None:
        ms = ctypes.c_double()
        gbs = rf.rf_copy_gbs(1 << 30, 10, ctypes.byref(ms))
        if gbs > 0:
            log("copy bandwidth again: %.0f GB/s" % gbs)
            if not copy or gbs > copy[0]:
                copy = (gbs, ms.value)

    text = write_report(path, info, copy, results, compiles, dotp_compile, quick,
                        backend, log_lines)
    write_json(json_path, info, copy, results, compiles, dotp_compile, quick,
               backend)
    shutil.rmtree(tmp, ignore_errors=True)
    log("wrote %s and %s (%.0f s in all)" % (path, json_path, time.time() - t_start))
    bad = any(r.check.startswith("FAIL") for _, rows in results for r in rows
              if r.name.startswith("weft"))
    bad |= any(r.na for _, rows in results for r in rows if r.name.startswith("weft"))
    return 1 if bad else 0, text


if __name__ == "__main__":
    rc, _ = main()
    sys.exit(rc)
