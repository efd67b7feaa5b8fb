/*
 * tests/install/consumer.c: a program that uses weft as any other project
 * would, through the installed weft.h and library only (tests/install/run.sh
 * builds it with find_package, with pkg-config and with add_subdirectory).
 *
 * It sums 1..10 as i32 on the cpu backend (the interpreter where the build
 * has no LLVM: weft_context_create says WEFT_ERR_BACKEND_UNAVAILABLE) and
 * exits 0 when the sum is 55, printing "consumer: sum 55 on <backend>";
 * otherwise it prints what went wrong and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft.h>

int main(void)
{
    int rc = EXIT_FAILURE;
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    weft_array *in = NULL, *out = NULL;
    const char *backend = "cpu";

    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    weft_status s = weft_context_create(&cfg, &ctx);
    if (s == WEFT_ERR_BACKEND_UNAVAILABLE) {
        backend = "interp";
        cfg.backend = WEFT_BACKEND_INTERP;
        s = weft_context_create(&cfg, &ctx);
    }
    if (s != WEFT_OK) {
        goto fail;
    }

    int32_t xs[10];
    for (int i = 0; i < 10; i++) {
        xs[i] = i + 1;
    }
    int64_t n = 10;
    const void *data[1] = {xs};
    if (weft_array_from_host(ctx, WEFT_I32, 1, &n, data, &in) != WEFT_OK ||
        weft_program_create(ctx, &p) != WEFT_OK) {
        goto fail;
    }
    /* sum xs = fold (+) 0 xs; builder calls are sticky, weft_run1 reports */
    weft_acc *x = weft_param(p, WEFT_I32, 1);
    weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *sum = weft_fold(add, weft_i32(p, 0), x);
    if (weft_run1(p, &sum, 1, &in, 1, &out, 1) != WEFT_OK) {
        goto fail;
    }
    int32_t got = *(const int32_t *)weft_array_data(out, 0);
    if (got != 55) {
        fprintf(stderr, "consumer: sum of 1..10 on %s is %d, not 55\n", backend,
                (int)got);
        goto done;
    }
    printf("consumer: sum 55 on %s\n", backend);
    rc = EXIT_SUCCESS;
    goto done;

fail:
    fprintf(stderr, "consumer: %s\n", weft_last_error());
done:
    weft_array_release(out);
    weft_program_free(p);
    weft_array_release(in);
    weft_context_free(ctx);
    return rc;
}
