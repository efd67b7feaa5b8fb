/*
 * examples/dotp.c: the dot product of two vectors of a million floats.
 *
 *   dotp xs ys = fold (+) 0 (zipWith (*) xs ys)
 *
 * The program is built once, compiled for the default backend (the
 * environment variable WEFT_BACKEND may choose another), run, and its
 * result printed next to a plain C loop's.  Every call is checked; every
 * handle is freed on every path.  Exits 0 on success.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define N 1000000

static const char *backend_name(weft_backend b)
{
    switch (b) {
    case WEFT_BACKEND_INTERP: return "interp";
    case WEFT_BACKEND_CPU: return "cpu";
    case WEFT_BACKEND_PTX: return "ptx";
    }
    return "?";
}

int main(void)
{
    int rc = EXIT_FAILURE;
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    weft_array *in[2] = {NULL, NULL}, *out[1] = {NULL};
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    if (!x || !y) {
        fprintf(stderr, "dotp: out of memory\n");
        goto done;
    }
    double ref = 0;
    for (int i = 0; i < N; i++) {
        x[i] = (float)((i % 1000) * 0.001);
        y[i] = (float)(((i * 7) % 13) * 0.1);
        ref += (double)x[i] * (double)y[i];
    }

    weft_config cfg = weft_config_default();
    if (weft_context_create(&cfg, &ctx) != WEFT_OK) {
        goto fail;
    }
    int64_t n = N;
    const void *dx[1] = {x}, *dy[1] = {y};
    if (weft_array_from_host(ctx, WEFT_F32, 1, &n, dx, &in[0]) != WEFT_OK ||
        weft_array_from_host(ctx, WEFT_F32, 1, &n, dy, &in[1]) != WEFT_OK ||
        weft_program_create(ctx, &p) != WEFT_OK) {
        goto fail;
    }

    /* Build: builder calls are sticky, so check once at weft_compile. */
    weft_acc *xs = weft_param(p, WEFT_F32, 1), *ys = weft_param(p, WEFT_F32, 1);
    weft_fun *mul = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(mul, weft_mul(weft_arg(mul, 0), weft_arg(mul, 1)));
    weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *dot = weft_fold(add, weft_f32(p, 0), weft_zipwith(mul, xs, ys));

    if (weft_compile(p, &dot, 1, &exe) != WEFT_OK ||
        weft_run(exe, in, 2, out, 1) != WEFT_OK) {
        goto fail;
    }
    float got = *(const float *)weft_array_data(out[0], 0);
    printf("backend      %s\n", backend_name(weft_context_backend(ctx)));
    printf("elements     %d\n", N);
    printf("weft (f32)   %.6f\n", got);
    printf("C (f64)      %.6f\n", ref);
    printf("rel. error   %.2e\n", fabs(got - ref) / fabs(ref));
    rc = EXIT_SUCCESS;
    goto done;

fail:
    fprintf(stderr, "dotp: %s\n", weft_last_error());
done:
    weft_array_release(out[0]);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_context_free(ctx);
    free(x);
    free(y);
    return rc;
}
