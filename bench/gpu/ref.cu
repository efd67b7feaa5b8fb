/*
 * bench/gpu/ref.cu: the hand-written CUDA references of the GPU benchmark,
 * a shared library that bench/gpu/run.py drives through ctypes (the same
 * calls as weft_gpu.c: rf_open, rf_run, rf_result, rf_close), plus the
 * device's description, its copy bandwidth and rf_sync, with which
 * weft_gpu.c waits for weft's stream (the runtime API works in the
 * device's primary context, which weft, CuPy, PyTorch and JAX share).
 *
 * Straightforward good CUDA: grid-stride loops of float4 / int4 loads for
 * the memory-bound programs (a grid of 8 blocks of 256 threads per SM),
 * CUB for sum (DeviceReduce::Sum) and scan (DeviceScan::InclusiveSum), a
 * warp-shuffle block reduction and one finishing block for dotp, a
 * shared-memory tiled all-pairs kernel for n-body (rsqrtf), one thread per
 * pixel for Mandelbrot, and per-block shared-memory histograms added into
 * the global one with atomics.  Each rf_run is timed with CUDA events on
 * the default stream (a histogram run includes zeroing its bins).
 *
 * Build: nvcc -O3 -arch=sm_90 -lineinfo -Xcompiler -fPIC -shared \
 *            bench/gpu/ref.cu -o bench_ref_gpu.so
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpubench.h"

#define RF_API extern "C" __attribute__((visibility("default")))

static char rf_msg[512];

static int rf_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rf_msg, sizeof rf_msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* Every runtime call that can fail: record it and return -1. */
#define CK(call)                                                             \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            return rf_fail("%s: %s (%s:%d)", #call, cudaGetErrorString(e_),  \
                           __FILE__, __LINE__);                              \
        }                                                                    \
    } while (0)

RF_API const char *rf_error(void)
{
    return rf_msg;
}

static int sms = 0; /* multiprocessors */

/* Select device dev and create (retain) its primary context. */
RF_API int rf_init(int dev)
{
    CK(cudaSetDevice(dev));
    CK(cudaFree(0));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return 0;
}

/* The device's name, compute capability, multiprocessors, memory (bytes),
 * and the CUDA versions of the driver and of this runtime. */
RF_API int rf_device_info(char *name, int cap, int *cc, int *mp,
                          int64_t *mem, int *driver, int *runtime)
{
    int dev;
    cudaDeviceProp p;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&p, dev));
    snprintf(name, (size_t)cap, "%s", p.name);
    *cc = p.major * 10 + p.minor;
    *mp = p.multiProcessorCount;
    *mem = (int64_t)p.totalGlobalMem;
    CK(cudaDriverGetVersion(driver));
    CK(cudaRuntimeGetVersion(runtime));
    return 0;
}

/* Wait for all work on the device (every stream of the context). */
RF_API void rf_sync(void)
{
    cudaDeviceSynchronize();
}

/* Free and total device memory, bytes. */
RF_API int rf_mem_info(int64_t *free_b, int64_t *total_b)
{
    size_t f, t;
    CK(cudaMemGetInfo(&f, &t));
    *free_b = (int64_t)f;
    *total_b = (int64_t)t;
    return 0;
}

static double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The bandwidth of cudaMemcpy device to device of `bytes` bytes: the
 * median of reps copies after one to warm up, in GB/s counting bytes read
 * plus bytes written (2 bytes / time).  *ms gets the median time.  0 on
 * failure. */
RF_API double rf_copy_gbs(int64_t bytes, int reps, double *ms)
{
    void *a = nullptr, *b = nullptr;
    cudaEvent_t e0, e1;
    std::vector<float> t;
    double gbs = 0;
    if (cudaMalloc(&a, (size_t)bytes) != cudaSuccess ||
        cudaMalloc(&b, (size_t)bytes) != cudaSuccess) {
        rf_fail("rf_copy_gbs: cudaMalloc of %lld bytes failed",
                (long long)bytes);
        cudaFree(a);
        return 0;
    }
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaMemset(a, 1, (size_t)bytes);
    cudaMemset(b, 0, (size_t)bytes);
    for (int r = 0; r <= reps; r++) {
        cudaEventRecord(e0);
        cudaMemcpy(b, a, (size_t)bytes, cudaMemcpyDeviceToDevice);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float x = 0;
        cudaEventElapsedTime(&x, e0, e1);
        if (r > 0) {
            t.push_back(x);
        }
    }
    if (cudaGetLastError() == cudaSuccess && !t.empty()) {
        *ms = median(t);
        gbs = 2.0 * (double)bytes / (*ms * 1e6);
    } else {
        rf_fail("rf_copy_gbs: a copy failed");
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return gbs;
}

/* ---- kernels ------------------------------------------------------------ */

#define THREADS 256

__global__ void k_saxpy(float a, const float *__restrict__ x,
                        const float *__restrict__ y, float *__restrict__ z,
                        int64_t n)
{
    int64_t n4 = n / 4;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *x4 = (const float4 *)x, *y4 = (const float4 *)y;
    float4 *z4 = (float4 *)z;
    for (int64_t i = i0; i < n4; i += stride) {
        float4 u = x4[i], v = y4[i];
        z4[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z,
                            a * u.w + v.w);
    }
    for (int64_t i = 4 * n4 + i0; i < n; i += stride) {
        z[i] = a * x[i] + y[i];
    }
}

/* The sum of v over the block (valid in thread 0). */
__device__ float block_sum(float v)
{
    __shared__ float warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, o);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        warp_sums[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            v += __shfl_down_sync(0xffffffffu, v, o);
        }
    }
    return v;
}

/* partial[block] = the block's share of sum x[i] * y[i]. */
__global__ void k_dotp(const float *__restrict__ x,
                       const float *__restrict__ y, int64_t n,
                       float *__restrict__ partial)
{
    int64_t n4 = n / 4;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *x4 = (const float4 *)x, *y4 = (const float4 *)y;
    float acc = 0.0f;
    for (int64_t i = i0; i < n4; i += stride) {
        float4 u = x4[i], v = y4[i];
        acc += u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
    }
    for (int64_t i = 4 * n4 + i0; i < n; i += stride) {
        acc += x[i] * y[i];
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
    }
}

/* *out = sum of partial[0 .. m-1] (one block). */
__global__ void k_finish(const float *__restrict__ partial, int m,
                         float *__restrict__ out)
{
    float acc = 0.0f;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        acc += partial[i];
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        *out = acc;
    }
}

__device__ float cnd(float d)
{
    const float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float poly = 1.330274429f;
    poly = -1.821255978f + k * poly;
    poly = 1.781477937f + k * poly;
    poly = -0.356563782f + k * poly;
    poly = 0.31938153f + k * poly;
    float r = (GB_RSQRT2PI * expf(-0.5f * (d * d))) * (k * poly);
    return d > 0.0f ? 1.0f - r : r;
}

__global__ void k_bs(const float *__restrict__ price,
                     const float *__restrict__ strike,
                     const float *__restrict__ years, float *__restrict__ call,
                     float *__restrict__ put, int64_t n)
{
    const float drift = GB_RISKFREE + 0.5f * (GB_VOLATILITY * GB_VOLATILITY);
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        float s = price[i], x = strike[i], t = years[i];
        float v_sqrtt = GB_VOLATILITY * sqrtf(t);
        float d1 = (logf(s / x) + drift * t) / v_sqrtt;
        float d2 = d1 - v_sqrtt;
        float c1 = cnd(d1), c2 = cnd(d2);
        float x_exprt = x * expf(-GB_RISKFREE * t);
        call[i] = s * c1 - x_exprt * c2;
        put[i] = x_exprt * (1.0f - c2) - s * (1.0f - c1);
    }
}

#define NB_TILE 128

/* One thread per body i; the bodies j pass through shared memory in tiles
 * (a padding body has mass 0 and pulls nothing). */
__global__ void __launch_bounds__(NB_TILE)
    k_nbody(const float *__restrict__ x, const float *__restrict__ y,
            const float *__restrict__ z, const float *__restrict__ m,
            float *__restrict__ ax, float *__restrict__ ay,
            float *__restrict__ az, int n, float eps2)
{
    __shared__ float4 tile[NB_TILE];
    int i = blockIdx.x * NB_TILE + threadIdx.x;
    float xi = i < n ? x[i] : 0.0f, yi = i < n ? y[i] : 0.0f,
          zi = i < n ? z[i] : 0.0f;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (int base = 0; base < n; base += NB_TILE) {
        int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? make_float4(x[j], y[j], z[j], m[j])
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();
#pragma unroll 16
        for (int k = 0; k < NB_TILE; k++) {
            float4 p = tile[k];
            float dx = p.x - xi, dy = p.y - yi, dz = p.z - zi;
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv = rsqrtf(r2);
            float s = p.w * (inv * inv * inv);
            sx += dx * s;
            sy += dy * s;
            sz += dz * s;
        }
        __syncthreads();
    }
    if (i < n) {
        ax[i] = sx;
        ay[i] = sy;
        az[i] = sz;
    }
}

__global__ void k_mandel(int32_t *__restrict__ out, int w, int h,
                         int max_iter, float x0, float y0, float dx, float dy)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= w || py >= h) {
        return;
    }
    /* Every step rounded on its own (__fmul_rn and __fadd_rn are never
     * contracted into an FMA), as weft's program and the other peers
     * compute it: nvcc's contraction moves the escape iteration of some
     * boundary pixels. */
    float cr = __fadd_rn(x0, __fmul_rn(dx, (float)px));
    float ci = __fadd_rn(y0, __fmul_rn(dy, (float)py));
    float zr = 0.0f, zi = 0.0f;
    int it = 0;
    while (it < max_iter &&
           __fadd_rn(__fmul_rn(zr, zr), __fmul_rn(zi, zi)) <= 4.0f) {
        float nr = __fadd_rn(__fsub_rn(__fmul_rn(zr, zr), __fmul_rn(zi, zi)),
                             cr);
        zi = __fadd_rn(__fmul_rn(__fmul_rn(2.0f, zr), zi), ci);
        zr = nr;
        it++;
    }
    out[(int64_t)py * w + px] = it;
}

/* Keys in [0, bins): a histogram per block in shared memory (bins ints of
 * dynamic shared memory), added into the global one at the end. */
__global__ void k_hist(const int32_t *__restrict__ keys, int64_t n,
                       int32_t *__restrict__ bins_out, int bins)
{
    extern __shared__ int32_t h[];
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
        h[b] = 0;
    }
    __syncthreads();
    int64_t n4 = n / 4;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int4 *k4 = (const int4 *)keys;
    for (int64_t i = i0; i < n4; i += stride) {
        int4 k = k4[i];
        atomicAdd(&h[k.x], 1);
        atomicAdd(&h[k.y], 1);
        atomicAdd(&h[k.z], 1);
        atomicAdd(&h[k.w], 1);
    }
    for (int64_t i = 4 * n4 + i0; i < n; i += stride) {
        atomicAdd(&h[keys[i]], 1);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
        if (h[b]) {
            atomicAdd(&bins_out[b], h[b]);
        }
    }
}

/* ---- programs ------------------------------------------------------------ */

#define MAX_BUF 4

typedef struct prog_state {
    int open;
    gb_shape s;
    void *in[MAX_BUF];
    void *out[MAX_BUF];
    int64_t out_bytes[MAX_BUF];
    int nin, nout;
    void *temp;        /* CUB's temporary storage, dotp's partial sums */
    size_t temp_bytes;
    int grid;          /* blocks of the grid-stride kernels */
    cudaEvent_t e0, e1;
} prog_state;

static prog_state progs[GB_NPROG];

RF_API void rf_close(int prog)
{
    if (prog < 0 || prog >= GB_NPROG || !progs[prog].open) {
        return;
    }
    prog_state *p = &progs[prog];
    for (int i = 0; i < MAX_BUF; i++) {
        cudaFree(p->in[i]);
        cudaFree(p->out[i]);
    }
    cudaFree(p->temp);
    cudaEventDestroy(p->e0);
    cudaEventDestroy(p->e1);
    memset(p, 0, sizeof *p);
}

/* Launch program p once on the default stream (no wait). */
static int launch(int prog, prog_state *p)
{
    const gb_shape *s = &p->s;
    int64_t n = s->n;
    float *const *in = (float *const *)p->in;
    float *const *out = (float *const *)p->out;
    switch (prog) {
    case GB_SAXPY:
        k_saxpy<<<p->grid, THREADS>>>(s->a, in[0], in[1], out[0], n);
        break;
    case GB_SUM:
        CK(cub::DeviceReduce::Sum(p->temp, p->temp_bytes, in[0], out[0], n));
        break;
    case GB_DOTP:
        k_dotp<<<p->grid, THREADS>>>(in[0], in[1], n, (float *)p->temp);
        k_finish<<<1, 1024>>>((const float *)p->temp, p->grid, out[0]);
        break;
    case GB_SCAN:
        CK(cub::DeviceScan::InclusiveSum(p->temp, p->temp_bytes,
                                         (const int32_t *)p->in[0],
                                         (int32_t *)p->out[0], (int)n));
        break;
    case GB_BS:
        k_bs<<<p->grid, THREADS>>>(in[0], in[1], in[2], out[0], out[1], n);
        break;
    case GB_NBODY:
        k_nbody<<<(unsigned)((n + NB_TILE - 1) / NB_TILE), NB_TILE>>>(
            in[0], in[1], in[2], in[3], out[0], out[1], out[2], (int)n,
            s->eps2);
        break;
    case GB_MANDEL: {
        dim3 block(32, 8);
        dim3 grid((unsigned)((n + 31) / 32), (unsigned)((s->h + 7) / 8));
        k_mandel<<<grid, block>>>((int32_t *)p->out[0], (int)n, (int)s->h,
                                  s->max_iter, s->x0, s->y0, s->dx, s->dy);
        break;
    }
    case GB_HIST:
        CK(cudaMemsetAsync(p->out[0], 0, (size_t)s->bins * sizeof(int32_t)));
        k_hist<<<p->grid, THREADS, (size_t)s->bins * sizeof(int32_t)>>>(
            (const int32_t *)p->in[0], n, (int32_t *)p->out[0], s->bins);
        break;
    default: return rf_fail("rf: no program %d", prog);
    }
    CK(cudaGetLastError());
    return 0;
}

/* Open program prog of size *sh: device buffers, the inputs copied from
 * the host buffers in[] (gpubench.h's order), CUB's storage; run once.
 * Returns 0, or -1 with rf_error() set (nothing stays open). */
RF_API int rf_open(int prog, const gb_shape *sh, const void *const *in)
{
    if (prog < 0 || prog >= GB_NPROG || prog == GB_NBODY_FOLD) {
        return rf_fail("rf_open: no program %d", prog);
    }
    rf_close(prog);
    prog_state *p = &progs[prog];
    p->s = *sh;
    int64_t n = sh->n;
    int64_t f4 = n * 4; /* bytes of an f32 or i32 array of n */
    switch (prog) {
    case GB_SAXPY: p->nin = 2; p->nout = 1; p->out_bytes[0] = f4; break;
    case GB_SUM: p->nin = 1; p->nout = 1; p->out_bytes[0] = 4; break;
    case GB_DOTP: p->nin = 2; p->nout = 1; p->out_bytes[0] = 4; break;
    case GB_SCAN: p->nin = 1; p->nout = 1; p->out_bytes[0] = f4; break;
    case GB_BS:
        p->nin = 3;
        p->nout = 2;
        p->out_bytes[0] = p->out_bytes[1] = f4;
        break;
    case GB_NBODY:
        p->nin = 4;
        p->nout = 3;
        p->out_bytes[0] = p->out_bytes[1] = p->out_bytes[2] = f4;
        break;
    case GB_MANDEL: p->nin = 0; p->nout = 1; p->out_bytes[0] = n * sh->h * 4;
        break;
    case GB_HIST:
        p->nin = 1;
        p->nout = 1;
        p->out_bytes[0] = (int64_t)sh->bins * 4;
        break;
    }
    p->open = 1;
    p->grid = (sms > 0 ? sms : 132) * 8;
    int rc = 0;
#define CKO(call)                                                            \
    do {                                                                     \
        if ((rc = [&]() -> int { CK(call); return 0; }()) != 0) {            \
            rf_close(prog);                                                  \
            return rc;                                                       \
        }                                                                    \
    } while (0)
    CKO(cudaEventCreate(&p->e0));
    CKO(cudaEventCreate(&p->e1));
    for (int i = 0; i < p->nin; i++) {
        CKO(cudaMalloc(&p->in[i], (size_t)f4));
        CKO(cudaMemcpy(p->in[i], in[i], (size_t)f4, cudaMemcpyHostToDevice));
    }
    for (int i = 0; i < p->nout; i++) {
        CKO(cudaMalloc(&p->out[i], (size_t)p->out_bytes[i]));
    }
    if (prog == GB_SUM) {
        CKO(cub::DeviceReduce::Sum(nullptr, p->temp_bytes, (float *)p->in[0],
                                   (float *)p->out[0], n));
    } else if (prog == GB_SCAN) {
        CKO(cub::DeviceScan::InclusiveSum(nullptr, p->temp_bytes,
                                          (int32_t *)p->in[0],
                                          (int32_t *)p->out[0], (int)n));
    } else if (prog == GB_DOTP) {
        p->temp_bytes = (size_t)p->grid * sizeof(float);
    }
    if (p->temp_bytes) {
        CKO(cudaMalloc(&p->temp, p->temp_bytes));
    }
    if ((rc = launch(prog, p)) != 0) {
        rf_close(prog);
        return rc;
    }
    CKO(cudaDeviceSynchronize());
#undef CKO
    return 0;
}

/* One run of the open program prog, timed with events: milliseconds, or
 * -1 with rf_error() set. */
RF_API double rf_run(int prog)
{
    if (prog < 0 || prog >= GB_NPROG || !progs[prog].open) {
        rf_fail("rf_run: program %d is not open", prog);
        return -1;
    }
    prog_state *p = &progs[prog];
    float ms = -1;
    rf_msg[0] = 0;
    if (cudaEventRecord(p->e0) != cudaSuccess || launch(prog, p) != 0 ||
        cudaEventRecord(p->e1) != cudaSuccess) {
        if (!rf_msg[0]) {
            rf_fail("rf_run: %s", cudaGetErrorString(cudaGetLastError()));
        }
        return -1;
    }
    cudaError_t e = cudaEventSynchronize(p->e1);
    if (e != cudaSuccess) {
        rf_fail("rf_run: %s", cudaGetErrorString(e));
        return -1;
    }
    cudaEventElapsedTime(&ms, p->e0, p->e1);
    return ms;
}

/* Copy the last run's outputs into out[k] (bytes[k] bytes each, at most
 * the output's size). */
RF_API int rf_result(int prog, void *const *out, const int64_t *bytes)
{
    if (prog < 0 || prog >= GB_NPROG || !progs[prog].open) {
        return rf_fail("rf_result: program %d is not open", prog);
    }
    prog_state *p = &progs[prog];
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < p->nout; k++) {
        size_t b = (size_t)std::min(bytes[k], p->out_bytes[k]);
        CK(cudaMemcpy(out[k], p->out[k], b, cudaMemcpyDeviceToHost));
    }
    return 0;
}
