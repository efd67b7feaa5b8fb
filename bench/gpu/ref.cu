/*
 * bench/gpu/ref.cu: the hand-written CUDA references of the GPU benchmark,
 * a shared library that bench/gpu/run.py drives through ctypes (the same
 * calls as weft_gpu.c: rf_open, rf_run, rf_result, rf_close), plus the
 * device's description, its copy bandwidth and rf_sync, with which
 * weft_gpu.c waits for weft's stream (the runtime API works in the
 * device's primary context, which weft, CuPy, PyTorch and JAX share).
 *
 * The strongest hand-written CUDA we know for each program, so that the
 * benchmark's ratios to it are honest:
 *
 *   saxpy, Black-Scholes   grid-stride loops of float4 loads and stores
 *                          (saxpy: two vectors per trip, all loads first),
 *                          the at most 3 elements past the last vector
 *                          done by scalars; the grid is as many blocks of
 *                          256 as the device runs at once (the occupancy
 *                          API), capped by the work.  Black-Scholes with
 *                          the accurate expf / logf and IEEE division (no
 *                          fast math), nvcc's default FMA contraction, one
 *                          vector per trip and launch bounds that hold it
 *                          to 40 registers (6 blocks per multiprocessor).
 *   sum, scan              CUB: DeviceReduce::Sum, DeviceScan::InclusiveSum
 *                          (32-bit offsets), their storage allocated once
 *                          when the program opens.
 *   dotp                   one launch: saxpy's grid-stride loop, a
 *                          warp-shuffle block sum, each block's share
 *                          stored and counted by an atomic ticket; the
 *                          block with the last ticket adds the shares (the
 *                          ticket counter wraps back to 0 by itself).
 *                          CUB's TransformReduce over float4 indices is
 *                          the other form (RF_DOTP_CUB below, or the
 *                          environment variable of that name, 0 or 1).
 *   n-body                 128 bodies per block of 512 threads, 4 threads
 *                          per body, whose shares of the bodies j (tiles
 *                          of 512 in shared memory) are added by shuffles;
 *                          rsqrt.approx.ftz in this kernel alone; one wave
 *                          of 4 blocks per multiprocessor for 65536
 *                          bodies on 132 multiprocessors (H100, H200).
 *   Mandelbrot             one pixel per thread in blocks of 16 x 16,
 *                          every step rounded on its own (as weft's).
 *   histogram              per-warp bins (32-bit counters) in shared
 *                          memory, added per block and into the global
 *                          bins with atomics; the grid-stride loop of int4
 *                          loads, two per trip, as saxpy's.
 *   smvm                   CSR vector kernel: L lanes of a warp per row
 *                          (L = 32, a warp per row, when rows average 32
 *                          nonzeros or more; else the power of two at or
 *                          below the average, at least 2: 8 for these
 *                          matrices' 10; RF_SMVM_LANES=32 forces a warp),
 *                          x read through the read-only path, the lanes'
 *                          sums added by shuffles.
 *   k-means                an iteration is two launches: every thread
 *                          takes points in a grid-stride loop, the k
 *                          centroids in shared memory, assigns the nearest
 *                          (the first on ties) and adds the point to its
 *                          block's sums and counts in shared memory
 *                          (shared atomics), which go to global ones by
 *                          atomics at the block's end, with the count of
 *                          points that moved; one block then divides
 *                          (a centroid without points stays) and zeroes
 *                          the sums.  The host reads the count after each
 *                          iteration (4 bytes) and stops at 0 or after
 *                          max_iter iterations.
 *   Jacobi                 a launch per step, ping-pong between two
 *                          buffers (the input is never written): tiles of
 *                          64 x 32 per block of 32 x 8 threads, the tile
 *                          and its one-element halo loaded once into
 *                          shared memory (clamped indices), each thread
 *                          two columns of 4 rows (k_jacobi).
 *
 * Each rf_run is timed two ways at once (a histogram run includes zeroing
 * its bins): by CUDA events recorded on the default stream before and
 * after the launch, and by the host clock from before the first event to
 * the return of cudaEventSynchronize on the second (the result is then
 * complete on the device).  rf_event_record / rf_event_finish do the same
 * for another library's run on its own stream (weft's: weft_gpu.c).
 *
 * Build: nvcc -O3 -arch=sm_90 -lineinfo -Xcompiler -fPIC -shared \
 *            bench/gpu/ref.cu -o bench_ref_gpu.so
 */
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

/* Threads of a block of the grid-stride kernels (saxpy, dotp, Black-
 * Scholes, histogram). */
#define THREADS 256
#define WARPS (THREADS / 32)
/* Blocks of THREADS per multiprocessor that the launch bounds of the
 * memory-bound kernels ask room for: 2048 threads, the most a Hopper
 * multiprocessor holds, so at most 32 registers (saxpy and dotp use 32,
 * the histogram 31, none spills). */
#define FULL_BLOCKS (2048 / THREADS)
#define FULL_MASK 0xffffffffu

/* The loop of the grid-stride kernels over n elements taken four at a
 * time: thread t of the grid takes the 128-bit vectors t, t + stride,
 * t + 2 stride, ... below n4 = n / 4; with Pairs, two per trip (load(i) of
 * both before use(i, loaded) of either, so that each thread has two
 * vectors of every input in flight), then the one left over when its count
 * is odd; without, one per trip (fewer registers for heavy uses).  The at
 * most 3 elements past 4 n4 go to threads 0, 1 and 2 of the grid (tail(e)
 * handles element e); a grid has at least THREADS threads.  The arrays
 * come from cudaMalloc and start at offset 0, so every vector is aligned. */
template <bool Pairs = true, typename Load, typename Use, typename Tail>
__device__ __forceinline__ void grid_stride4(int64_t n, Load load, Use use,
                                             Tail tail)
{
    const int64_t n4 = n >> 2;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t i = t;
    if (Pairs) {
        for (; i + stride < n4; i += 2 * stride) {
            auto a = load(i);
            auto b = load(i + stride);
            use(i, a);
            use(i + stride, b);
        }
        if (i < n4) {
            use(i, load(i));
        }
    } else {
        for (; i < n4; i += stride) {
            use(i, load(i));
        }
    }
    if (4 * n4 + t < n) {
        tail(4 * n4 + t);
    }
}

struct float4x2 {
    float4 a, b;
};

struct float4x3 {
    float4 a, b, c;
};

__device__ __forceinline__ float4 saxpy4(float a, float4 x, float4 y)
{
    return make_float4(a * x.x + y.x, a * x.y + y.y, a * x.z + y.z,
                       a * x.w + y.w);
}

__global__ void __launch_bounds__(THREADS, FULL_BLOCKS)
    k_saxpy(float a, const float *__restrict__ x, const float *__restrict__ y,
            float *__restrict__ z, int64_t n)
{
    const float4 *x4 = (const float4 *)x, *y4 = (const float4 *)y;
    float4 *z4 = (float4 *)z;
    grid_stride4(
        n, [&](int64_t i) { return float4x2{x4[i], y4[i]}; },
        [&](int64_t i, float4x2 v) { z4[i] = saxpy4(a, v.a, v.b); },
        [&](int64_t e) { z[e] = a * x[e] + y[e]; });
}

/* The sum of v over the block of THREADS threads (valid in thread 0).  A
 * second call must be separated from the first by a __syncthreads. */
__device__ float block_sum(float v)
{
    __shared__ float warp_sums[WARPS];
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, o);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        warp_sums[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < WARPS ? warp_sums[lane] : 0.0f;
        for (int o = WARPS / 2; o > 0; o >>= 1) {
            v += __shfl_down_sync(FULL_MASK, v, o);
        }
    }
    return v;
}

__device__ __forceinline__ float dot4(float4 u, float4 v)
{
    return u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
}

/* *out = sum x[i] * y[i], in one launch: each block writes its share into
 * partial[blockIdx.x] and takes a ticket (atomicInc on *ticket, after a
 * fence that makes the share visible); the block that draws the last
 * ticket, gridDim.x - 1, adds the shares.  atomicInc wraps at gridDim.x -
 * 1, so the last ticket puts *ticket back to 0 for the next launch (it is
 * 0 before the first). */
__global__ void __launch_bounds__(THREADS, FULL_BLOCKS)
    k_dotp(const float *__restrict__ x, const float *__restrict__ y,
           int64_t n, float *__restrict__ partial,
           unsigned int *__restrict__ ticket, float *__restrict__ out)
{
    const float4 *x4 = (const float4 *)x, *y4 = (const float4 *)y;
    __shared__ bool last;
    float acc = 0.0f;
    grid_stride4(
        n, [&](int64_t i) { return float4x2{x4[i], y4[i]}; },
        [&](int64_t, float4x2 v) { acc += dot4(v.a, v.b); },
        [&](int64_t e) { acc += x[e] * y[e]; });
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();
        last = atomicInc(ticket, gridDim.x - 1) == gridDim.x - 1;
        if (last) {
            __threadfence(); /* the shares before the reads that follow */
        }
    }
    __syncthreads();
    if (last) {
        acc = 0.0f;
        for (unsigned int b = threadIdx.x; b < gridDim.x; b += THREADS) {
            acc += __ldcg(&partial[b]); /* from L2, where the shares are */
        }
        acc = block_sum(acc);
        if (threadIdx.x == 0) {
            *out = acc;
        }
    }
}

/* CUB's form of dotp (RF_DOTP_CUB): DeviceReduce::TransformReduce over the
 * float4 indices 0 .. ceil(n / 4) - 1, each mapped to its 4-element dot
 * product (the last one, when n is not a multiple of 4, to the products
 * of what is left). */
struct dot4_at {
    const float *x, *y;
    int64_t n;
    __device__ float operator()(int i) const
    {
        int64_t e = 4 * (int64_t)i;
        if (e + 4 <= n) {
            return dot4(__ldg((const float4 *)x + i),
                        __ldg((const float4 *)y + i));
        }
        float s = 0.0f;
        for (; e < n; e++) {
            s += x[e] * y[e];
        }
        return s;
    }
};

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

/* One option: its call and put prices. */
__device__ __forceinline__ void bs_one(float s, float x, float t, float *call,
                                       float *put)
{
    const float drift = GB_RISKFREE + 0.5f * (GB_VOLATILITY * GB_VOLATILITY);
    float v_sqrtt = GB_VOLATILITY * sqrtf(t);
    float d1 = (logf(s / x) + drift * t) / v_sqrtt;
    float d2 = d1 - v_sqrtt;
    float c1 = cnd(d1), c2 = cnd(d2);
    float x_exprt = x * expf(-GB_RISKFREE * t);
    *call = s * c1 - x_exprt * c2;
    *put = x_exprt * (1.0f - c2) - s * (1.0f - c1);
}

/* Black-Scholes: 40 registers (6 blocks per multiprocessor) with one
 * vector per trip; two per trip take 46 and spill when held to 40. */
__global__ void __launch_bounds__(THREADS, 6)
    k_bs(const float *__restrict__ price, const float *__restrict__ strike,
         const float *__restrict__ years, float *__restrict__ call,
         float *__restrict__ put, int64_t n)
{
    const float4 *s4 = (const float4 *)price, *x4 = (const float4 *)strike,
                 *t4 = (const float4 *)years;
    float4 *c4 = (float4 *)call, *p4 = (float4 *)put;
    grid_stride4<false>(
        n, [&](int64_t i) { return float4x3{s4[i], x4[i], t4[i]}; },
        [&](int64_t i, float4x3 v) {
            float4 c, p;
            bs_one(v.a.x, v.b.x, v.c.x, &c.x, &p.x);
            bs_one(v.a.y, v.b.y, v.c.y, &c.y, &p.y);
            bs_one(v.a.z, v.b.z, v.c.z, &c.z, &p.z);
            bs_one(v.a.w, v.b.w, v.c.w, &c.w, &p.w);
            c4[i] = c;
            p4[i] = p;
        },
        [&](int64_t e) {
            bs_one(price[e], strike[e], years[e], &call[e], &put[e]);
        });
}

/* n-body: NB_SPLIT threads per body i (lanes next to each other, so that
 * their shares meet by shuffles), NB_BODIES bodies per block; the bodies j
 * pass through shared memory in tiles of NB_THREADS, one loaded by each
 * thread (a padding body has mass 0 and pulls nothing), and thread q of a
 * body takes the tile's bodies q, q + NB_SPLIT, ...  A grid of ceil(n /
 * NB_BODIES) blocks of NB_THREADS fills the device in one wave (65536
 * bodies: 512 blocks, 4 per multiprocessor at <= 32 registers, on 132
 * multiprocessors). */
#define NB_BODIES 128
#define NB_SPLIT 4
#define NB_THREADS (NB_BODIES * NB_SPLIT)

/* 1 / sqrt(x), the hardware's approximation (relative error within
 * 2^-22.9), subnormals flushed: what rsqrtf gives under -use_fast_math,
 * for this kernel alone. */
__device__ __forceinline__ float rsqrt_ftz(float x)
{
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

__global__ void __launch_bounds__(NB_THREADS, 2048 / NB_THREADS)
    k_nbody(const float *__restrict__ x, const float *__restrict__ y,
            const float *__restrict__ z, const float *__restrict__ m,
            float *__restrict__ ax, float *__restrict__ ay,
            float *__restrict__ az, int n, float eps2)
{
    __shared__ float4 tile[NB_THREADS];
    const int q = threadIdx.x % NB_SPLIT;
    const int i = blockIdx.x * NB_BODIES + threadIdx.x / NB_SPLIT;
    float xi = i < n ? x[i] : 0.0f, yi = i < n ? y[i] : 0.0f,
          zi = i < n ? z[i] : 0.0f;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (int base = 0; base < n; base += NB_THREADS) {
        int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? make_float4(x[j], y[j], z[j], m[j])
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < NB_THREADS / NB_SPLIT; k++) {
            float4 p = tile[k * NB_SPLIT + q];
            float dx = p.x - xi, dy = p.y - yi, dz = p.z - zi;
            float r2 = eps2 + dx * dx + dy * dy + dz * dz; /* 3 FMAs */
            float inv = rsqrt_ftz(r2);
            float s = p.w * (inv * inv * inv);
            sx += dx * s;
            sy += dy * s;
            sz += dz * s;
        }
        __syncthreads();
    }
    for (int o = 1; o < NB_SPLIT; o <<= 1) {
        sx += __shfl_xor_sync(FULL_MASK, sx, o);
        sy += __shfl_xor_sync(FULL_MASK, sy, o);
        sz += __shfl_xor_sync(FULL_MASK, sz, o);
    }
    if (q == 0 && i < n) {
        ax[i] = sx;
        ay[i] = sy;
        az[i] = sz;
    }
}

/* Mandelbrot: one pixel per thread, blocks of MB_SIDE x MB_SIDE. */
#define MB_SIDE 16

__global__ void __launch_bounds__(MB_SIDE * MB_SIDE)
    k_mandel(int32_t *__restrict__ out, int w, int h, int max_iter, float x0,
             float y0, float dx, float dy)
{
    int px = blockIdx.x * MB_SIDE + threadIdx.x;
    int py = blockIdx.y * MB_SIDE + threadIdx.y;
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

/* Histogram of keys in [0, bins): each warp counts into bins of its own
 * in shared memory (WARPS x bins 32-bit counters of dynamic shared
 * memory, so the atomics of different warps never meet); at the end the
 * block adds its warps' counts per bin and adds the nonzero sums into the
 * global bins with atomics.  The global bins are zeroed before. */
__global__ void __launch_bounds__(THREADS, FULL_BLOCKS)
    k_hist(const int32_t *__restrict__ keys, int64_t n,
           int32_t *__restrict__ bins_out, int bins)
{
    extern __shared__ int32_t h[];
    for (int b = threadIdx.x; b < WARPS * bins; b += THREADS) {
        h[b] = 0;
    }
    __syncthreads();
    int32_t *mine = h + (threadIdx.x >> 5) * bins;
    const int4 *k4 = (const int4 *)keys;
    grid_stride4(
        n, [&](int64_t i) { return k4[i]; },
        [&](int64_t, int4 k) {
            atomicAdd(&mine[k.x], 1);
            atomicAdd(&mine[k.y], 1);
            atomicAdd(&mine[k.z], 1);
            atomicAdd(&mine[k.w], 1);
        },
        [&](int64_t e) { atomicAdd(&mine[keys[e]], 1); });
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += THREADS) {
        int32_t c = 0;
        for (int w = 0; w < WARPS; w++) {
            c += h[w * bins + b];
        }
        if (c) {
            atomicAdd(&bins_out[b], c);
        }
    }
}

/* ---- smvm and k-means (helper smvm) -------------------------------------- */

/* y = A x, L lanes per row (L a power of two, 2 .. 32). */
template <int L>
__global__ void __launch_bounds__(THREADS)
    k_smvm(const int32_t *__restrict__ rowptr, const int32_t *__restrict__ cols,
           const float *__restrict__ vals, const float *__restrict__ x,
           float *__restrict__ y, int nrows)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int row = t / L, lane = t % L;
    if (row >= nrows) {
        return;
    }
    int lo = rowptr[row], hi = rowptr[row + 1];
    float acc = 0.0f;
    for (int k = lo + lane; k < hi; k += L) {
        acc += vals[k] * __ldg(&x[cols[k]]);
    }
    for (int d = L / 2; d > 0; d /= 2) {
        acc += __shfl_down_sync(0xffffffffu, acc, d, L);
    }
    if (lane == 0) {
        y[row] = acc;
    }
}

#define KM_MAX_K 64

/* Assign every point its nearest centroid (c: cx then cy, k of each), add
 * it to sums (sx, sy) and counts per cluster, count the points whose
 * cluster changed into *moved. */
__global__ void __launch_bounds__(THREADS)
    k_kmeans_assign(const float *__restrict__ px, const float *__restrict__ py,
                    int64_t n, const float *__restrict__ c, int k,
                    int32_t *__restrict__ assign, float *sums, int32_t *counts,
                    int32_t *moved)
{
    __shared__ float scx[KM_MAX_K], scy[KM_MAX_K], ssx[KM_MAX_K],
        ssy[KM_MAX_K];
    __shared__ int32_t scnt[KM_MAX_K], smoved;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        scx[j] = c[j];
        scy[j] = c[k + j];
        ssx[j] = ssy[j] = 0.0f;
        scnt[j] = 0;
    }
    if (threadIdx.x == 0) {
        smoved = 0;
    }
    __syncthreads();
    int mv = 0;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += stride) {
        float x = px[i], y = py[i];
        float bd = INFINITY;
        int best = 0;
        for (int j = 0; j < k; j++) {
            float dx = x - scx[j], dy = y - scy[j];
            float d = dx * dx + dy * dy;
            if (d < bd) {
                bd = d;
                best = j;
            }
        }
        if (assign[i] != best) {
            assign[i] = best;
            mv++;
        }
        atomicAdd(&ssx[best], x);
        atomicAdd(&ssy[best], y);
        atomicAdd(&scnt[best], 1);
    }
    for (int d = 16; d > 0; d /= 2) {
        mv += __shfl_down_sync(0xffffffffu, mv, d);
    }
    if ((threadIdx.x & 31) == 0 && mv) {
        atomicAdd(&smoved, mv);
    }
    __syncthreads();
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        if (scnt[j]) {
            atomicAdd(&sums[j], ssx[j]);
            atomicAdd(&sums[k + j], ssy[j]);
            atomicAdd(&counts[j], scnt[j]);
        }
    }
    if (threadIdx.x == 0 && smoved) {
        atomicAdd(moved, smoved);
    }
}

/* c = the means (a centroid without points stays), sums and counts back
 * to 0; one block. */
__global__ void k_kmeans_update(float *c, int k, float *sums, int32_t *counts)
{
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        if (counts[j] > 0) {
            c[j] = sums[j] / (float)counts[j];
            c[k + j] = sums[k + j] / (float)counts[j];
        }
        sums[j] = sums[k + j] = 0.0f;
        counts[j] = 0;
    }
}

/* k-means' device state beside prog_state: the centroids being moved, the
 * assignment, sums, counts and the moved count (in prog_state.temp). */
typedef struct km_state {
    float *c;        /* 2 k: cx, cy */
    int32_t *assign; /* n */
    float *sums;     /* 2 k */
    int32_t *counts; /* k */
    int32_t *moved;  /* 1 */
    int32_t *moved_host; /* pinned */
    int grid;
    int lanes;       /* smvm */
} km_state;

static km_state sv_state[GB_NPROG];

static bool sv_prog(int prog)
{
    return prog == GB_SMVM_BANDED || prog == GB_SMVM_POWER ||
           prog == GB_KMEANS || prog == GB_KMEANS_WHILE;
}
/* -- Jacobi (stencil) -- */

#define JB_TW 64 /* tile columns: two per thread */
#define JB_TH 32 /* tile rows: four per thread */
#define JB_BX 32
#define JB_BY 8

/* One Jacobi step v = 0.25 (((n + s) + w) + e) of the h x w grid u,
 * clamped: the block's tile and its halo into shared memory (every index
 * clamped, which costs a min and a max), then the tile's elements from
 * there.  Block (JB_BX, JB_BY), grid (ceil(w / JB_TW), ceil(h / JB_TH)). */
__global__ void __launch_bounds__(JB_BX * JB_BY)
    k_jacobi(const float *__restrict__ u, float *__restrict__ v, int h, int w)
{
    __shared__ float t[JB_TH + 2][JB_TW + 2];
    int x0 = blockIdx.x * JB_TW, y0 = blockIdx.y * JB_TH;
    int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int r = ty; r < JB_TH + 2; r += JB_BY) {
        int64_t gy = min(max(y0 + r - 1, 0), h - 1);
#pragma unroll
        for (int c = tx; c < JB_TW + 2; c += JB_BX) {
            int gx = min(max(x0 + c - 1, 0), w - 1);
            t[r][c] = u[gy * w + gx];
        }
    }
    __syncthreads();
#pragma unroll
    for (int r = ty; r < JB_TH; r += JB_BY) {
#pragma unroll
        for (int c = tx; c < JB_TW; c += JB_BX) {
            int y = y0 + r, x = x0 + c;
            if (y < h && x < w) {
                v[(int64_t)y * w + x] =
                    0.25f * (((t[r][c + 1] + t[r + 2][c + 1]) + t[r + 1][c]) +
                             t[r + 1][c + 2]);
            }
        }
    }
}

/* s->max_iter steps from in (never written) through out and tmp, the last
 * one into out. */
static int jacobi_launch(const gb_shape *s, const float *in, float *out,
                         float *tmp)
{
    dim3 block(JB_BX, JB_BY);
    dim3 grid((unsigned)((s->n + JB_TW - 1) / JB_TW),
              (unsigned)((s->h + JB_TH - 1) / JB_TH));
    const float *from = in;
    for (int32_t i = 0; i < s->max_iter; i++) {
        float *to = (s->max_iter - 1 - i) % 2 == 0 ? out : tmp;
        k_jacobi<<<grid, block>>>(from, to, (int)s->h, (int)s->n);
        from = to;
    }
    if (s->max_iter == 0) {
        CK(cudaMemcpyAsync(out, in, (size_t)(s->n * s->h) * sizeof(float),
                           cudaMemcpyDeviceToDevice));
    }
    return 0;
}

/* -- end Jacobi -- */

/* ---- programs ------------------------------------------------------------ */

#define MAX_BUF 4

/* dotp's form when the environment does not choose (RF_DOTP_CUB=0 or 1):
 * 0, the one-launch kernel k_dotp; 1, CUB's TransformReduce. */
#define RF_DOTP_CUB 0

typedef struct prog_state {
    int open;
    gb_shape s;
    void *in[MAX_BUF];
    void *out[MAX_BUF];
    int64_t out_bytes[MAX_BUF];
    int nin, nout;
    void *temp;        /* CUB's temporary storage; dotp's shares and ticket */
    size_t temp_bytes;
    int grid;          /* blocks of the grid-stride kernels */
    int dotp_cub;      /* dotp by CUB's TransformReduce */
    cudaEvent_t e0, e1;
} prog_state;

static prog_state progs[GB_NPROG];

/* One run of smvm or k-means on the default stream; k-means waits for
 * its moved count after each iteration. */
static int sv_launch(int prog, prog_state *p)
{
    const gb_shape *s = &p->s;
    km_state *st = &sv_state[prog];
    if (prog == GB_SMVM_BANDED || prog == GB_SMVM_POWER) {
        const int32_t *cols = (const int32_t *)p->in[1];
        const int32_t *rowptr = (const int32_t *)p->in[3];
        const float *vals = (const float *)p->in[0];
        const float *x = (const float *)p->in[2];
        float *y = (float *)p->out[0];
        int nrows = (int)s->n;
        unsigned grid =
            (unsigned)(((int64_t)nrows * st->lanes + THREADS - 1) / THREADS);
        switch (st->lanes) {
        case 2: k_smvm<2><<<grid, THREADS>>>(rowptr, cols, vals, x, y, nrows);
            break;
        case 4: k_smvm<4><<<grid, THREADS>>>(rowptr, cols, vals, x, y, nrows);
            break;
        case 8: k_smvm<8><<<grid, THREADS>>>(rowptr, cols, vals, x, y, nrows);
            break;
        case 16: k_smvm<16><<<grid, THREADS>>>(rowptr, cols, vals, x, y, nrows);
            break;
        default: k_smvm<32><<<grid, THREADS>>>(rowptr, cols, vals, x, y, nrows);
            break;
        }
        CK(cudaGetLastError());
        return 0;
    }
    int k = s->bins;
    const float *px = (const float *)p->in[0], *py = (const float *)p->in[1];
    CK(cudaMemcpyAsync(st->c, p->in[2], sizeof(float) * k,
                       cudaMemcpyDeviceToDevice));
    CK(cudaMemcpyAsync(st->c + k, p->in[3], sizeof(float) * k,
                       cudaMemcpyDeviceToDevice));
    CK(cudaMemsetAsync(st->assign, 0xff, sizeof(int32_t) * (size_t)s->n));
    int it = 0, moved = 1;
    while (moved > 0 && it < s->max_iter) {
        CK(cudaMemsetAsync(st->moved, 0, sizeof(int32_t)));
        k_kmeans_assign<<<st->grid, THREADS>>>(px, py, s->n, st->c, k,
                                                st->assign, st->sums,
                                                st->counts, st->moved);
        k_kmeans_update<<<1, 64>>>(st->c, k, st->sums, st->counts);
        CK(cudaMemcpyAsync(st->moved_host, st->moved, sizeof(int32_t),
                           cudaMemcpyDeviceToHost));
        CK(cudaStreamSynchronize(0));
        moved = *st->moved_host;
        it++;
    }
    float fit = (float)it;
    float *out = (float *)p->out[0];
    CK(cudaMemcpyAsync(out, st->c, sizeof(float) * 2 * k,
                       cudaMemcpyDeviceToDevice));
    CK(cudaMemcpyAsync(out + 2 * k, &fit, sizeof fit, cudaMemcpyHostToDevice));
    CK(cudaGetLastError());
    return 0;
}

/* Open smvm or k-means (rf_open's contract): inputs in gpubench.h's order
 * (smvm keeps vals, cols, x and rowptr: p->in[0..3], the row pointers
 * from input 4; weft reads its own copy, input 2). */
static int sv_open(int prog, prog_state *p, const gb_shape *sh,
                   const void *const *in)
{
    km_state *st = &sv_state[prog];
    memset(st, 0, sizeof *st);
    p->s = *sh;
    p->open = 1;
    CK(cudaEventCreate(&p->e0));
    CK(cudaEventCreate(&p->e1));
    if (prog == GB_SMVM_BANDED || prog == GB_SMVM_POWER) {
        const int64_t bytes[4] = {4 * sh->h, 4 * sh->h, 4 * (int64_t)sh->bins,
                                  4 * (sh->n + 1)};
        const void *src[4] = {in[0], in[1], in[3], in[4]};
        for (int i = 0; i < 4; i++) {
            CK(cudaMalloc(&p->in[i], (size_t)bytes[i]));
            CK(cudaMemcpy(p->in[i], src[i], (size_t)bytes[i],
                          cudaMemcpyHostToDevice));
        }
        p->nin = 4;
        p->nout = 1;
        p->out_bytes[0] = 4 * sh->n;
        CK(cudaMalloc(&p->out[0], (size_t)p->out_bytes[0]));
        int64_t avg = sh->n > 0 ? sh->h / sh->n : 1;
        int lanes = 2;
        while (lanes < 32 && lanes * 2 <= avg) {
            lanes *= 2;
        }
        const char *env = getenv("RF_SMVM_LANES");
        if (env && *env) {
            lanes = atoi(env);
        }
        st->lanes = lanes;
    } else {
        int64_t n = sh->n;
        int k = sh->bins;
        if (k < 1 || k > KM_MAX_K) {
            return rf_fail("rf_open: k = %d is outside [1, %d]", k, KM_MAX_K);
        }
        const int64_t bytes[4] = {4 * n, 4 * n, 4 * (int64_t)k, 4 * (int64_t)k};
        for (int i = 0; i < 4; i++) {
            CK(cudaMalloc(&p->in[i], (size_t)bytes[i]));
            CK(cudaMemcpy(p->in[i], in[i], (size_t)bytes[i],
                          cudaMemcpyHostToDevice));
        }
        p->nin = 4;
        p->nout = 1;
        p->out_bytes[0] = 4 * (2 * (int64_t)k + 1);
        CK(cudaMalloc(&p->out[0], (size_t)p->out_bytes[0]));
        /* one allocation: c, sums (2 k each), counts, moved, assignment */
        p->temp_bytes = sizeof(float) * 4 * k + sizeof(int32_t) * (k + 1) +
                        sizeof(int32_t) * (size_t)n;
        CK(cudaMalloc(&p->temp, p->temp_bytes));
        CK(cudaMemset(p->temp, 0, p->temp_bytes));
        st->c = (float *)p->temp;
        st->sums = st->c + 2 * k;
        st->counts = (int32_t *)(st->sums + 2 * k);
        st->moved = st->counts + k;
        st->assign = st->moved + 1;
        CK(cudaMallocHost(&st->moved_host, sizeof(int32_t)));
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, k_kmeans_assign, THREADS, 0));
        int64_t full = (int64_t)(sms > 0 ? sms : 132) * std::max(per_sm, 1);
        st->grid = (int)std::max<int64_t>(
            1, std::min(full, (n + THREADS - 1) / THREADS));
    }
    if (sv_launch(prog, p) != 0) {
        return -1;
    }
    CK(cudaDeviceSynchronize());
    return 0;
}

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
    if (sv_prog(prog) && sv_state[prog].moved_host) {
        cudaFreeHost(sv_state[prog].moved_host);
        sv_state[prog].moved_host = NULL;
    }
}

/* *grid = the blocks of THREADS threads (smem bytes of dynamic shared
 * memory each) of kernel that the device runs at once, but no more than
 * enough for one 4-element vector per thread over n elements, and at least
 * one. */
template <typename K>
static int occupancy_grid(K kernel, size_t smem, int64_t n, int *grid)
{
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THREADS,
                                                     smem));
    int64_t full = (int64_t)(sms > 0 ? sms : 132) * std::max(per_sm, 1);
    int64_t need = (n / 4 + THREADS - 1) / THREADS;
    *grid = (int)std::max<int64_t>(1, std::min(full, need));
    return 0;
}

/* dotp's transform-reduce by CUB: with temp == nullptr, the size of its
 * storage into *temp_bytes. */
static cudaError_t dotp_cub(void *temp, size_t *temp_bytes, const float *x,
                            const float *y, int64_t n, float *out)
{
    return cub::DeviceReduce::TransformReduce(
        temp, *temp_bytes, thrust::counting_iterator<int>(0), out,
        (int)((n + 3) / 4), cuda::std::plus<float>(), dot4_at{x, y, n},
        0.0f);
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
        CK(cub::DeviceReduce::Sum(p->temp, p->temp_bytes, in[0], out[0],
                                  (int)n));
        break;
    case GB_DOTP:
        if (p->dotp_cub) {
            CK(dotp_cub(p->temp, &p->temp_bytes, in[0], in[1], n, out[0]));
        } else {
            float *partial = (float *)p->temp;
            k_dotp<<<p->grid, THREADS>>>(
                in[0], in[1], n, partial,
                (unsigned int *)(partial + p->grid), out[0]);
        }
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
        k_nbody<<<(unsigned)((n + NB_BODIES - 1) / NB_BODIES), NB_THREADS>>>(
            in[0], in[1], in[2], in[3], out[0], out[1], out[2], (int)n,
            s->eps2);
        break;
    case GB_MANDEL: {
        dim3 block(MB_SIDE, MB_SIDE);
        dim3 grid((unsigned)((n + MB_SIDE - 1) / MB_SIDE),
                  (unsigned)((s->h + MB_SIDE - 1) / MB_SIDE));
        k_mandel<<<grid, block>>>((int32_t *)p->out[0], (int)n, (int)s->h,
                                  s->max_iter, s->x0, s->y0, s->dx, s->dy);
        break;
    }
    case GB_HIST:
        CK(cudaMemsetAsync(p->out[0], 0, (size_t)s->bins * sizeof(int32_t)));
        k_hist<<<p->grid, THREADS, (size_t)WARPS * s->bins * sizeof(int32_t)>>>(
            (const int32_t *)p->in[0], n, (int32_t *)p->out[0], s->bins);
        break;
    case GB_SMVM_BANDED:
    case GB_SMVM_POWER:
    case GB_KMEANS:
    case GB_KMEANS_WHILE: return sv_launch(prog, p);
    case GB_JACOBI:
        if (jacobi_launch(s, in[0], out[0], (float *)p->temp)) {
            return -1;
        }
        break;
    default: return rf_fail("rf: no program %d", prog);
    }
    CK(cudaGetLastError());
    return 0;
}

/* The largest histogram: WARPS copies of its bins in the 48 KB of shared
 * memory a block gets without asking. */
#define HIST_MAX_BINS (48 * 1024 / (WARPS * (int)sizeof(int32_t)))

/* Open program prog of size *sh: device buffers, the inputs copied from
 * the host buffers in[] (gpubench.h's order), the grid, CUB's storage or
 * dotp's; run once.  Returns 0, or -1 with rf_error() set (nothing stays
 * open). */
RF_API int rf_open(int prog, const gb_shape *sh, const void *const *in)
{
    if (prog < 0 || prog >= GB_NPROG || prog == GB_NBODY_FOLD ||
        prog == GB_JACOBI_LOOP) {
        return rf_fail("rf_open: no program %d", prog);
    }
    if (sv_prog(prog)) {
        rf_close(prog);
        int rc = sv_open(prog, &progs[prog], sh, in);
        if (rc) {
            rf_close(prog);
        }
        return rc;
    }
    if (sh->n < 0 || sh->n > INT32_MAX) {
        return rf_fail("rf_open: n = %lld is outside [0, 2^31)",
                       (long long)sh->n);
    }
    if (prog == GB_HIST && (sh->bins < 1 || sh->bins > HIST_MAX_BINS)) {
        return rf_fail("rf_open: %d bins is outside [1, %d]", (int)sh->bins,
                       HIST_MAX_BINS);
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
    case GB_JACOBI: /* a grid of h x n; tmp, the other buffer of a step */
        f4 = n * sh->h * 4;
        p->nin = 1;
        p->nout = 1;
        p->out_bytes[0] = f4;
        p->temp_bytes = (size_t)f4;
        break;
    }
    p->open = 1;
    const char *env = getenv("RF_DOTP_CUB");
    p->dotp_cub = env && *env ? atoi(env) != 0 : RF_DOTP_CUB;
    int rc = 0;
#define CKO(call)                                                            \
    do {                                                                     \
        if ((rc = [&]() -> int { CK(call); return 0; }()) != 0) {            \
            rf_close(prog);                                                  \
            return rc;                                                       \
        }                                                                    \
    } while (0)
#define CKI(call)                                                            \
    do {                                                                     \
        if ((rc = (call)) != 0) {                                            \
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
    float *const *din = (float *const *)p->in;
    float *const *dout = (float *const *)p->out;
    switch (prog) {
    case GB_SAXPY: CKI(occupancy_grid(k_saxpy, 0, n, &p->grid)); break;
    case GB_BS: CKI(occupancy_grid(k_bs, 0, n, &p->grid)); break;
    case GB_HIST:
        CKI(occupancy_grid(k_hist, (size_t)WARPS * sh->bins * 4, n,
                           &p->grid));
        break;
    case GB_SUM:
        CKO(cub::DeviceReduce::Sum(nullptr, p->temp_bytes, din[0], dout[0],
                                   (int)n));
        break;
    case GB_SCAN:
        CKO(cub::DeviceScan::InclusiveSum(nullptr, p->temp_bytes,
                                          (const int32_t *)din[0],
                                          (int32_t *)dout[0], (int)n));
        break;
    case GB_DOTP:
        if (p->dotp_cub) {
            CKO(dotp_cub(nullptr, &p->temp_bytes, din[0], din[1], n,
                         dout[0]));
        } else {
            CKI(occupancy_grid(k_dotp, 0, n, &p->grid));
            p->temp_bytes = (size_t)p->grid * sizeof(float) +
                            sizeof(unsigned int); /* shares, ticket */
        }
        break;
    }
    if (p->temp_bytes) {
        CKO(cudaMalloc(&p->temp, p->temp_bytes));
        CKO(cudaMemset(p->temp, 0, p->temp_bytes)); /* dotp's ticket 0 */
    }
    CKI(launch(prog, p));
    CKO(cudaDeviceSynchronize());
#undef CKO
#undef CKI
    return 0;
}

/* The host clock, ms. */
static double host_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Timing another library's run on its stream: rf_event_record(0, s)
 * before the run, rf_event_record(1, s) after it, then rf_event_finish
 * waits for the second event and gives the milliseconds between the two
 * on the device (-1 and rf_error() on a failure).  The events are made
 * on first use and kept. */
static cudaEvent_t rf_ev[2];

RF_API int rf_event_record(int which, void *stream)
{
    if (which < 0 || which > 1) {
        return rf_fail("rf_event_record: no event %d", which);
    }
    if (!rf_ev[which]) {
        CK(cudaEventCreate(&rf_ev[which]));
    }
    CK(cudaEventRecord(rf_ev[which], (cudaStream_t)stream));
    return 0;
}

RF_API double rf_event_finish(void)
{
    float ms = -1;
    cudaError_t e = cudaEventSynchronize(rf_ev[1]);
    if (e == cudaSuccess) {
        e = cudaEventElapsedTime(&ms, rf_ev[0], rf_ev[1]);
    }
    if (e != cudaSuccess) {
        rf_fail("rf_event_finish: %s", cudaGetErrorString(e));
        return -1;
    }
    return ms;
}

/* One run of the open program prog: the milliseconds between its events,
 * and in *host the host clock's (see the head comment); -1 with
 * rf_error() set on a failure. */
RF_API double rf_run(int prog, double *host)
{
    if (prog < 0 || prog >= GB_NPROG || !progs[prog].open) {
        rf_fail("rf_run: program %d is not open", prog);
        return -1;
    }
    prog_state *p = &progs[prog];
    float ms = -1;
    rf_msg[0] = 0;
    double t0 = host_ms();
    if (cudaEventRecord(p->e0) != cudaSuccess || launch(prog, p) != 0 ||
        cudaEventRecord(p->e1) != cudaSuccess) {
        if (!rf_msg[0]) {
            rf_fail("rf_run: %s", cudaGetErrorString(cudaGetLastError()));
        }
        return -1;
    }
    cudaError_t e = cudaEventSynchronize(p->e1);
    *host = host_ms() - t0;
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
