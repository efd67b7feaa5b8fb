/*
 * bench/gen_large.h: the shapes of large generated programs (issue 21),
 * shared by the benchmark that times them (bench/compile_scaling.c) and
 * the test that checks their values (tests/test_large.c).
 *
 * Programs that reach weft from another runtime are generated, so they
 * are large and deep in ways hand-written ones are not.  Each function
 * below builds one such shape from terms of program p (public API only,
 * no allocation that outlives the call):
 *
 *   gl_wide_sum   sum_i get(t, i), t = (x + 0, ..., x + n-1): one tuple
 *                 of n components and n projections of it;
 *   gl_nested     n nested 1-tuples of e, then n projections: e again;
 *   gl_chain      n links e' = (e * 3 xor e >> 1) + s (s may be NULL:
 *                 no addition): every link uses e twice, so each is bound
 *                 by a let, and s is one term shared by every link;
 *   gl_times      \x -> x * c (c >= 1, i64) by Horner's rule on c's bits:
 *                 additions only, a structure of its own for each c and no
 *                 constant, so that kernels made of these share no code
 *                 (runtime/families.c makes maps that differ only in a
 *                 constant one kernel).
 */
#ifndef WEFT_BENCH_GEN_LARGE_H
#define WEFT_BENCH_GEN_LARGE_H

#include <stdint.h>
#include <stdlib.h>

#include "weft.h"

/* sum_i get(t, i) over t = (x + 0, ..., x + n-1), n >= 1; NULL when out
 * of memory. */
static inline weft_exp *gl_wide_sum(weft_program *p, weft_exp *x, int n)
{
    weft_exp **c = malloc((size_t)n * sizeof *c);
    if (!c) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        c[i] = weft_add(x, weft_i64(p, i));
    }
    weft_exp *t = weft_tuple(p, n, c), *e = weft_get(t, 0);
    free(c);
    for (int i = 1; i < n; i++) {
        e = weft_add(e, weft_get(t, i));
    }
    return e;
}

/* e wrapped in n nested 1-tuples and unwrapped by n projections. */
static inline weft_exp *gl_nested(weft_program *p, weft_exp *e, long n)
{
    for (long i = 0; i < n; i++) {
        e = weft_tuple(p, 1, &e);
    }
    for (long i = 0; i < n; i++) {
        e = weft_get(e, 0);
    }
    return e;
}

/* n links e' = (e * 3 xor e >> 1) + s of i64 e (no + s when s is NULL). */
static inline weft_exp *gl_chain(weft_program *p, weft_exp *e, long n,
                                 weft_exp *s)
{
    for (long i = 0; i < n; i++) {
        e = weft_bxor(weft_mul(e, weft_i64(p, 3)), weft_shr(e, weft_i64(p, 1)));
        if (s) {
            e = weft_add(e, s);
        }
    }
    return e;
}

/* \x -> x * c on i64, c >= 1, by Horner's rule on c's bits. */
static inline weft_fun *gl_times(weft_program *p, int64_t c)
{
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *x = weft_arg(f, 0), *e = x;
    int top = 62;
    while (!(c >> top & 1)) {
        top--;
    }
    for (int b = top - 1; b >= 0; b--) {
        e = weft_add(e, e);
        if (c >> b & 1) {
            e = weft_add(e, x);
        }
    }
    weft_fun_return(f, e);
    return f;
}

#endif /* WEFT_BENCH_GEN_LARGE_H */
