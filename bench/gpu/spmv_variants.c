/*
 * bench/gpu/spmv_variants.c: CSR sparse matrix-vector kernels on the GPU
 * (spmv_variants.cu) against the floor and cuSPARSE's SpMV, on
 * bench/programs.h's banded and power-law matrices (issue 22; the table
 * in bench/results/gpu-profile.md, "smvm, session 33").  Each line: the
 * median of 21 back-to-back runs by CUDA events, and the largest error
 * against a double-precision fold on the host (relative to 1 + |y|).
 *
 * Build and run on the GPU machine (from the unpacked bundle's root):
 *   nvcc -O3 -arch=sm_90 -c bench/gpu/spmv_variants.cu -o spmv_k.o
 *   gcc -std=c17 -O2 -I/usr/local/cuda/include -Iinclude -Ibench \
 *       -c bench/gpu/spmv_variants.c -o spmv_m.o
 *   nvcc spmv_k.o spmv_m.o -o spmv_variants -lcusparse
 *   ./spmv_variants [banded|power] [a substring of the variants' names]
 */
#include <cuda_runtime.h>
#include <cusparse.h>
#include <stdio.h>
#include <string.h>
#include "programs.h"
int kv(int L, int U, const int *rp, const int *c, const float *v,
       const float *x, float *y, int n);
int kcopy(const void *a, const void *b, float *y, long nbytes, int ny);
int kmp(const int *rp, const int *c, const float *v, const float *x, float *y,
        int n, int nnz, void *co, int search);
static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}
#define RUNS 21
static cudaEvent_t e0, e1;
static float *dy, *hy, *ref;
static int nrows;
static double check(void)
{
    cudaMemcpy(hy, dy, sizeof(float) * nrows, cudaMemcpyDeviceToHost);
    double m = 0;
    for (int i = 0; i < nrows; i++) {
        double d = fabs(hy[i] - ref[i]) / (1 + fabs(ref[i]));
        if (d > m) {
            m = d;
        }
    }
    return m;
}
static const char *filt;
#define TIME(name, call)                                                       \
    do {                                                                       \
        if (filt && !strstr(name, filt))                                       \
            break;                                                             \
        float t[RUNS];                                                         \
        cudaMemset(dy, 0, sizeof(float) * nrows);                              \
        call;                                                                  \
        cudaDeviceSynchronize();                                               \
        for (int r = 0; r < RUNS; r++) {                                       \
            cudaEventRecord(e0, 0);                                            \
            call;                                                              \
            cudaEventRecord(e1, 0);                                            \
            cudaEventSynchronize(e1);                                          \
            cudaEventElapsedTime(&t[r], e0, e1);                               \
        }                                                                      \
        qsort(t, RUNS, sizeof t[0], cmpf);                                     \
        printf("%-8s %-28s %8.1f us  err %.1e  %s\n", mname, name,             \
               t[RUNS / 2] * 1000, check(),                                    \
               cudaGetErrorString(cudaGetLastError()));                        \
    } while (0)
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    filt = argc > 2 ? argv[2] : NULL;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cusparseHandle_t h;
    cusparseCreate(&h);
    for (int mi = 0; mi < 2; mi++) {
        const char *mname = mi ? "power" : "banded";
        if (only && strcmp(only, mname)) {
            continue;
        }
        bp_csr m;
        int64_t n = 1 << 20;
        int ok = mi ? bp_csr_powerlaw(&m, n * 10, n, 10000, 0x5eed)
                    : bp_csr_banded(&m, n, 10, 0x5eed);
        if (!ok) {
            return 1;
        }
        nrows = (int)m.nrows;
        int nnz = (int)m.nnz;
        float *x = malloc(sizeof(float) * m.ncols);
        uint64_t sd = 7;
        for (int64_t i = 0; i < m.ncols; i++) {
            x[i] = 2 * bp_unit(&sd) - 1;
        }
        ref = malloc(sizeof(float) * nrows);
        hy = malloc(sizeof(float) * nrows);
        for (int r = 0; r < nrows; r++) {
            double a = 0;
            for (int k = m.rowptr[r]; k < m.rowptr[r + 1]; k++) {
                a += (double)m.vals[k] * x[m.cols[k]];
            }
            ref[r] = (float)a;
        }
        int *drp, *dc;
        float *dv, *dx;
        void *co;
        cudaMalloc((void **)&drp, 4 * (nrows + 1));
        cudaMalloc((void **)&dc, 4L * nnz);
        cudaMalloc((void **)&dv, 4L * nnz);
        cudaMalloc((void **)&dx, 4 * m.ncols);
        cudaMalloc((void **)&dy, 4 * nrows);
        cudaMalloc(&co, 8L * ((nrows + nnz) / 256 + 16));
        cudaMemcpy(drp, m.rowptr, 4 * (nrows + 1), cudaMemcpyHostToDevice);
        cudaMemcpy(dc, m.cols, 4L * nnz, cudaMemcpyHostToDevice);
        cudaMemcpy(dv, m.vals, 4L * nnz, cudaMemcpyHostToDevice);
        cudaMemcpy(dx, x, 4 * m.ncols, cudaMemcpyHostToDevice);
        printf("%s: %d rows, %d nonzeros, %.1f MB moved at least\n", mname,
               nrows, nnz, (8.0 * nnz + 8.0 * nrows + 4.0 * m.ncols) / 1e6);
        TIME("copy floor (read vals+cols)", kcopy(dc, dv, dy, 4L * nnz, nrows));
        int Ls[] = {1, 2, 4, 8, 32};
        char nm[64];
        for (int i = 0; i < 5; i++) {
            snprintf(nm, sizeof nm, "vector L=%d", Ls[i]);
            TIME(nm, kv(Ls[i], 1, drp, dc, dv, dx, dy, nrows));
        }
        for (int i = 0; i < 4; i++) {
            snprintf(nm, sizeof nm, "vector L=%d U=4", Ls[i]);
            TIME(nm, kv(Ls[i], 4, drp, dc, dv, dx, dy, nrows));
        }
        for (int i = 0; i < 3; i++) {
            snprintf(nm, sizeof nm, "vector L=%d U=8", Ls[i]);
            TIME(nm, kv(Ls[i], 8, drp, dc, dv, dx, dy, nrows));
        }
        TIME("merge path (search+memset+tile)",
             kmp(drp, dc, dv, dx, dy, nrows, nnz, co, 1));
        TIME("merge path (memset+tile)",
             kmp(drp, dc, dv, dx, dy, nrows, nnz, co, 0));
        cusparseSpMatDescr_t A;
        cusparseDnVecDescr_t X, Y;
        cusparseCreateCsr(&A, nrows, m.ncols, nnz, drp, dc, dv,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
        cusparseCreateDnVec(&X, m.ncols, dx, CUDA_R_32F);
        cusparseCreateDnVec(&Y, nrows, dy, CUDA_R_32F);
        float one = 1, zero = 0;
        cusparseSpMVAlg_t algs[] = {CUSPARSE_SPMV_CSR_ALG1,
                                    CUSPARSE_SPMV_CSR_ALG2};
        for (int a = 0; a < 2; a++) {
            size_t bs = 0;
            void *buf = NULL;
            cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                    A, X, &zero, Y, CUDA_R_32F, algs[a], &bs);
            cudaMalloc(&buf, bs ? bs : 16);
            snprintf(nm, sizeof nm, "cusparse ALG%d", a + 1);
            TIME(nm, cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A,
                                  X, &zero, Y, CUDA_R_32F, algs[a], buf));
#if CUSPARSE_VERSION >= 12400
            if (cusparseSpMV_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                        &one, A, X, &zero, Y, CUDA_R_32F,
                                        algs[a], buf) == 0) {
                snprintf(nm, sizeof nm, "cusparse ALG%d preprocessed", a + 1);
                TIME(nm,
                     cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A,
                                  X, &zero, Y, CUDA_R_32F, algs[a], buf));
            }
#endif
            cudaFree(buf);
        }
        cusparseDestroySpMat(A);
        cudaFree(drp);
        cudaFree(dc);
        cudaFree(dv);
        cudaFree(dx);
        cudaFree(dy);
        cudaFree(co);
        free(x);
        free(ref);
        free(hy);
        bp_csr_free(&m);
    }
    return 0;
}
