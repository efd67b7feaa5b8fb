"""PyTorch's torch.mv of a sparse CSR tensor on bench/programs.h's two
matrices (rebuilt here with numpy: the same shapes, not the same random
values): its time by CUDA events with int64 and int32 indices, and the
kernels it runs (torch.profiler).  Issue 22; bench/results/gpu-profile.md,
"smvm, session 33".  Run: python3 bench/gpu/spmv_torch.py
"""
import numpy as np
import torch
def banded(n, band=10):
    r = np.arange(n); c0 = np.clip(r - band // 2, 0, n - band)
    cols = (c0[:, None] + np.arange(band)[None, :]).reshape(-1).astype(np.int32)
    rowptr = (np.arange(n + 1) * band).astype(np.int32)
    return rowptr, cols
def power(nnz, ncols, maxlen=10000, seed=5):
    rng = np.random.default_rng(seed); top = 1 - 1 / (maxlen + 1); lens = []; used = 0
    u = rng.random(nnz); i = 0
    while used < nnz:
        l = int(1 / (1 - u[i] * top)); i += 1; l = max(1, min(maxlen, l, nnz - used)); lens.append(l); used += l
    rowptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    return rowptr, rng.integers(0, ncols, nnz).astype(np.int32)
n = 1 << 20
for name, (rp, cols) in (("banded", banded(n)), ("power", power(10 * n, n))):
    vals = np.random.default_rng(1).random(cols.size, dtype=np.float32)
    A = torch.sparse_csr_tensor(torch.from_numpy(rp.astype(np.int64)).cuda(), torch.from_numpy(cols.astype(np.int64)).cuda(),
                                torch.from_numpy(vals).cuda(), size=(rp.size - 1, n))
    x = torch.rand(n, device="cuda")
    for _ in range(3): y = torch.mv(A, x)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(21):
        s.record(); y = torch.mv(A, x); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    # int32 indices too (PyTorch keeps the index dtype)
    A32 = torch.sparse_csr_tensor(torch.from_numpy(rp).cuda(), torch.from_numpy(cols).cuda(), torch.from_numpy(vals).cuda(), size=(rp.size - 1, n))
    ts32 = []
    for _ in range(21):
        s.record(); y = torch.mv(A32, x); e.record(); e.synchronize(); ts32.append(s.elapsed_time(e))
    print(name, "torch.mv events median ms: int64 idx %.4f  int32 idx %.4f" % (sorted(ts)[10], sorted(ts32)[10]))
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10): y = torch.mv(A32, x)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8, max_name_column_width=90))
