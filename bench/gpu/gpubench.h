/*
 * bench/gpu/gpubench.h: what weft_gpu.c (weft), ref.cu (CUDA) and run.py
 * (the driver, through ctypes) agree on: the programs' numbers and the
 * sizes and parameters of one program.
 *
 * Inputs and outputs cross the boundary as host buffers, one per array
 * (struct of arrays: n-body's result is three buffers ax, ay, az; Black-
 * Scholes' is call and put), in the order listed below.
 *
 *   program      inputs (host)                  outputs (host)
 *   SAXPY        x f32[n], y f32[n]             a*x+y f32[n]
 *   SUM          x f32[n]                       f32[1]
 *   DOTP         x f32[n], y f32[n]             f32[1]
 *   SCAN         x i32[n]                       inclusive prefix sum i32[n]
 *   BS           price, strike, years f32[n]    call f32[n], put f32[n]
 *   NBODY        x, y, z, m f32[n]              ax, ay, az f32[n]
 *   NBODY_FOLD   as NBODY (weft only: the other formulation)
 *   MANDEL       none                           iterations i32[h*w]
 *   HIST         keys i32[n] in [0, bins)       counts i32[bins]
 *   SMVM_BANDED  vals f32[h], cols i32[h],      y f32[n]
 *   SMVM_POWER   rowptr i32[n + 1], x f32[bins],
 *                rowptr i32[n + 1] again (the CSR
 *                matrix of bench/programs.h:
 *                n rows, h nonzeros, bins
 *                columns; weft reads the
 *                first, the others the second)
 *   KMEANS       px, py f32[n], cx, cy f32[bins]  cx, cy, iterations: f32[2 bins
 *   KMEANS_WHILE (k = bins centroids, at most     + 1] (the count as a float)
 *                max_iter iterations)
 *   JACOBI       u f32[h*n] (h rows of n)       u after max_iter steps
 *                                               f32[h*n]
 *   JACOBI_LOOP  as JACOBI (weft only: the other formulation)
 */
#ifndef GPUBENCH_H
#define GPUBENCH_H

#include <stdint.h>

enum {
    GB_SAXPY = 0,
    GB_SUM,
    GB_DOTP,
    GB_SCAN,
    GB_BS,
    GB_NBODY,
    GB_NBODY_FOLD,
    GB_MANDEL,
    GB_HIST,
    /* smvm and k-means (helper smvm) */
    GB_SMVM_BANDED,
    GB_SMVM_POWER,
    GB_KMEANS,
    GB_KMEANS_WHILE,
    /* -- Jacobi (stencil) -- */
    GB_JACOBI,
    GB_JACOBI_LOOP, /* as JACOBI (weft only: a host loop of one step) */
    /* -- end Jacobi -- */
    GB_NPROG
};

/* Black-Scholes' constants, as bench/weft_bench.c. */
#define GB_RISKFREE 0.02f
#define GB_VOLATILITY 0.30f
#define GB_RSQRT2PI 0.39894228040143267793994605993438f

/* The size and parameters of one program (run.py mirrors this layout as a
 * ctypes.Structure: keep the two in step). */
typedef struct gb_shape {
    int64_t n;            /* elements, options, bodies, keys; Mandelbrot,
                             Jacobi: w */
    int64_t h;            /* Mandelbrot, Jacobi: height */
    int32_t max_iter;     /* Mandelbrot; Jacobi: steps */
    int32_t bins;         /* histogram */
    float a;              /* saxpy */
    float eps2;           /* n-body softening */
    float x0, y0, dx, dy; /* Mandelbrot: pixel (i, j) is c = (x0 + dx j,
                             y0 + dy i) */
} gb_shape;

#endif
