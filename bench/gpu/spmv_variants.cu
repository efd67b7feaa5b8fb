/*
 * bench/gpu/spmv_variants.cu: the kernels of spmv_variants.c, a probe of
 * what a CSR sparse matrix-vector kernel reaches on the GPU (issue 22;
 * bench/results/gpu-profile.md, "smvm, session 33"): CSR-vector kernels of
 * L lanes a row reading U consecutive elements a lane a trip, a copy of
 * the matrix's arrays (the floor), and a merge path over the whole matrix
 * (Merrill and Garland's partition of row ends and nonzeros into equal
 * shares, unrefined: a search kernel, a memset of y, atomics where a row
 * is split between threads).  y = A x in f32.
 */
#include <cstdint>
#include <cuda_runtime.h>
#define TH 256
template <int L>
__global__ void __launch_bounds__(TH)
    k_vec(const int *__restrict__ rp, const int *__restrict__ c,
          const float *__restrict__ v, const float *__restrict__ x,
          float *__restrict__ y, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int row = t / L, lane = t % L;
    if (row >= n) {
        return;
    }
    int lo = rp[row], hi = rp[row + 1];
    float a = 0.f;
    for (int k = lo + lane; k < hi; k += L) {
        a += v[k] * __ldg(&x[c[k]]);
    }
    for (int d = L / 2; d > 0; d /= 2) {
        a += __shfl_down_sync(0xffffffffu, a, d, L);
    }
    if (lane == 0) {
        y[row] = a;
    }
}
// L lanes, U consecutive items a lane a trip, loads of a trip issued together
template <int L, int U>
__global__ void __launch_bounds__(TH)
    k_vecu(const int *__restrict__ rp, const int *__restrict__ c,
           const float *__restrict__ v, const float *__restrict__ x,
           float *__restrict__ y, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int row = t / L, lane = t % L;
    if (row >= n) {
        return;
    }
    int lo = rp[row], hi = rp[row + 1];
    float a = 0.f;
    for (int k0 = lo + lane * U; k0 < hi; k0 += L * U) {
        int cc[U];
        float vv[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int k = k0 + u;
            bool ok = k < hi;
            cc[u] = ok ? c[k] : 0;
            vv[u] = ok ? v[k] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            a += vv[u] * __ldg(&x[cc[u]]);
        }
    }
    for (int d = L / 2; d > 0; d /= 2) {
        a += __shfl_down_sync(0xffffffffu, a, d, L);
    }
    if (lane == 0) {
        y[row] = a;
    }
}
// the floor: vals and cols read once (16 bytes a load), y written
__global__ void k_copy(const int4 *__restrict__ a, const int4 *__restrict__ b,
                       float *__restrict__ y, long n4, int ny)
{
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long st = (long)gridDim.x * blockDim.x;
    int s = 0;
    for (; i < n4; i += st) {
        int4 p = a[i], q = b[i];
        s += p.x ^ q.y ^ p.z ^ q.w;
    }
    i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < ny) {
        y[i] = (float)s;
    }
}
// merge path over the whole matrix: tiles of T = TH * IPT path items (row ends + nonzeros)
#define IPT 7
__global__ void k_mp_search(const int *__restrict__ rp, int n, int nnz,
                            int ntiles, int2 *co)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > ntiles) {
        return;
    }
    long d = (long)b * TH * IPT;
    long tot = (long)n + nnz;
    if (d > tot) {
        d = tot;
    }
    int lo = d > nnz ? (int)(d - nnz) : 0, hi = d < n ? (int)d : n;
    while (lo < hi) {
        int m = (lo + hi) >> 1;
        if (rp[m + 1] <= d - m - 1) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    co[b] = make_int2(lo, (int)(d - lo));
}
__global__ void __launch_bounds__(TH)
    k_mp(const int *__restrict__ rp, const int *__restrict__ c,
         const float *__restrict__ v, const float *__restrict__ x,
         float *__restrict__ y, const int2 *__restrict__ co, int n, int nnz)
{
    __shared__ int ends[TH * IPT + 1];
    __shared__ float pr[TH * IPT + 1];
    int2 s = co[blockIdx.x], e = co[blockIdx.x + 1];
    int nr = e.x - s.x, nz = e.y - s.y;
    for (int i = threadIdx.x; i < nr; i += TH) {
        ends[i] = rp[s.x + 1 + i];
    }
    for (int i = threadIdx.x; i < nz; i += TH) {
        int k = s.y + i;
        pr[i] = v[k] * __ldg(&x[c[k]]);
    }
    __syncthreads();
    int d = min((int)threadIdx.x * IPT, nr + nz), de = min(d + IPT, nr + nz);
    int lo = max(0, d - nz), hi = min(d, nr);
    while (lo < hi) {
        int m = (lo + hi) >> 1;
        if (ends[m] - s.y <= d - m - 1) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    int r = lo, k = d - lo;
    float a = 0.f;
    bool started_here =
        (r < nr) && (r > 0 ? (ends[r - 1] - s.y >= k) : (rp[s.x] >= s.y + k));
    for (int i = d; i < de; i++) {
        if (r < nr && ends[r] - s.y <= k) { // close row r
            if (started_here) {
                y[s.x + r] = a;
            } else {
                atomicAdd(&y[s.x + r], a);
            }
            a = 0.f;
            r++;
            started_here = true;
        } else {
            a += pr[k];
            k++;
        }
    }
    if (r < n - s.x && a != 0.f) {
        atomicAdd(&y[s.x + r], a);
    }
}
extern "C" {
int kv(int L, int U, const int *rp, const int *c, const float *v,
       const float *x, float *y, int n)
{
    long th = (long)n * L;
    int g = (int)((th + TH - 1) / TH);
    if (U == 1) {
        switch (L) {
        case 1: k_vec<1><<<g, TH>>>(rp, c, v, x, y, n); break;
        case 2: k_vec<2><<<g, TH>>>(rp, c, v, x, y, n); break;
        case 4: k_vec<4><<<g, TH>>>(rp, c, v, x, y, n); break;
        case 8: k_vec<8><<<g, TH>>>(rp, c, v, x, y, n); break;
        default: k_vec<32><<<g, TH>>>(rp, c, v, x, y, n);
        }
    } else if (U == 4) {
        switch (L) {
        case 1: k_vecu<1, 4><<<g, TH>>>(rp, c, v, x, y, n); break;
        case 2: k_vecu<2, 4><<<g, TH>>>(rp, c, v, x, y, n); break;
        case 4: k_vecu<4, 4><<<g, TH>>>(rp, c, v, x, y, n); break;
        default: k_vecu<8, 4><<<g, TH>>>(rp, c, v, x, y, n);
        }
    } else {
        switch (L) {
        case 1: k_vecu<1, 8><<<g, TH>>>(rp, c, v, x, y, n); break;
        case 2: k_vecu<2, 8><<<g, TH>>>(rp, c, v, x, y, n); break;
        default: k_vecu<4, 8><<<g, TH>>>(rp, c, v, x, y, n);
        }
    }
    return (int)cudaGetLastError();
}
int kcopy(const void *a, const void *b, float *y, long nbytes, int ny)
{
    long n4 = nbytes / 16;
    k_copy<<<132 * 8, 256>>>((const int4 *)a, (const int4 *)b, y, n4, ny);
    return (int)cudaGetLastError();
}
int kmp(const int *rp, const int *c, const float *v, const float *x, float *y,
        int n, int nnz, void *co, int search)
{
    long tot = (long)n + nnz;
    int nt = (int)((tot + TH * IPT - 1) / (TH * IPT));
    if (search) {
        k_mp_search<<<(nt + 1 + 255) / 256, 256>>>(rp, n, nnz, nt, (int2 *)co);
    }
    cudaMemsetAsync(y, 0, sizeof(float) * n);
    k_mp<<<nt, TH>>>(rp, c, v, x, y, (const int2 *)co, n, nnz);
    return (int)cudaGetLastError();
}
}
