/*
 * tests/test_ptx_target.c: the PTX target's launch shape for grid-stride
 * kernels (skeletons-ir/ptx/target.c).  Nothing here needs a GPU.
 *
 * sk_ptx_launch_block keeps the occupancy API's block when the grid
 * fills every SM, and otherwise takes the largest power of two below it
 * (at least 64) that does: n-body's 65,536 threads on an H100's 132 SMs
 * take blocks of 256 (in 1024 they left 68 SMs idle), Mandelbrot's 2^26
 * pixels keep the occupancy API's 640.
 *
 * sk_ptx_uneven: a kernel with a while loop runs a thread per element
 * (its elements' work may vary), unless every loop counts j by one from
 * a start to a bound that are the same in every element
 * (sk_kernel.even_loops, cg_stage_even): k-means' loop over the
 * centroids from 0 to k is even; from the element's own index, to a
 * bound computed from it, or under a condition of another shape it is
 * not.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "sk.h"
#include "weft.h"

START_TEST(launch_block)
{
    /* (block, items, sms) -> block */
    static const struct {
        int block;
        int64_t items;
        int sms;
        int want;
    } cases[] = {
        {1024, 65536, 132, 256},       /* 64 blocks would not fill 132 */
        {640, 67108864, 132, 640},     /* plenty: the occupancy API's */
        {1024, 132 * 1024, 132, 1024}, /* exactly one block per SM */
        {1024, 131 * 1024, 132, 512},  /* 131 blocks: one SM idle */
        {640, 65536, 132, 256},        /* 128 of 512 too few; 256 of 256 */
        {640, 20000, 132, 128},        /* 512, 256: too few; 157 of 128 */
        {1024, 1000, 132, 64},         /* nothing fills: the least */
        {256, 0, 132, 256},            /* no items: as given */
        {48, 100000, 132, 48},         /* small blocks stay */
        {1024, 65536, 0, 1024},        /* unknown SMs: as given */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int got =
            sk_ptx_launch_block(cases[k].block, cases[k].items, cases[k].sms);
        ck_assert_msg(got == cases[k].want,
                      "case %zu: block %d, %lld items, %d SMs: %d, want %d", k,
                      cases[k].block, (long long)cases[k].items, cases[k].sms,
                      got, cases[k].want);
        ck_assert_int_eq(got % 16, 0);
    }
}
END_TEST

/* generate (shape x) (\i -> the sum of c ! j over a while loop on
 * (j, s)): from j = 0 to size c (variant 0), from j = i (1), to i + 1
 * (2), or while j < size c and s < 100 (3). */
static weft_acc *build_loop(weft_context *ctx, weft_program *p, int variant)
{
    weft_acc *x = weft_param(p, WEFT_F32, 1), *c = weft_param(p, WEFT_F32, 1);
    weft_type st = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I64, WEFT_F32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_fun *cond = weft_fun1(p, st);
    weft_exp *cs = weft_arg(cond, 0);
    weft_exp *n = variant == 2 ? weft_add(i, weft_i64(p, 1)) : weft_size(c);
    weft_exp *go = weft_lt(weft_get(cs, 0), n);
    if (variant == 3) {
        go = weft_and(go, weft_lt(weft_get(cs, 1), weft_f32(p, 100)));
    }
    weft_fun_return(cond, go);
    weft_fun *body = weft_fun1(p, st);
    weft_exp *b = weft_arg(body, 0), *j = weft_get(b, 0);
    weft_exp *next[2] = {weft_add(j, weft_i64(p, 1)),
                         weft_add(weft_get(b, 1), weft_at(c, weft_index1(j)))};
    weft_fun_return(body, weft_tuple(p, 2, next));
    weft_exp *init[2] = {variant == 1 ? i : weft_i64(p, 0), weft_f32(p, 0)};
    weft_fun_return(
        g, weft_get(weft_while(cond, body, weft_tuple(p, 2, init)), 1));
    return weft_generate(weft_shape(x), g);
}

/* The first term of kind `kind` in t (depth first), or NULL. */
static const fe_term *find_kind(const fe_term *t, int kind)
{
    if (!t || t->kind == kind) {
        return t;
    }
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *r = find_kind(t->kid[i], kind);
        if (r) {
            return r;
        }
    }
    return NULL;
}

START_TEST(even_loops)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.target_cpu = "sm_90"; /* compiles without a GPU */
    cfg.flags = WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    ck_assert_int_eq(weft_context_create(&cfg, &ctx), WEFT_OK);
    for (int v = 0; v < 4; v++) {
        weft_program *p = NULL;
        weft_executable *exe = NULL;
        ck_assert_int_eq(weft_program_create(ctx, &p), WEFT_OK);
        weft_acc *r = build_loop(ctx, p, v);
        ck_assert_msg(weft_compile(p, &r, 1, &exe) == WEFT_OK, "%s",
                      weft_last_error());
        const fe_term *op = find_kind(exe->core.root, FE_GENERATE);
        ck_assert_ptr_nonnull(op);
        fe_arena arena;
        fe_arena_init(&arena, ctx);
        sk_kernel k;
        ck_assert_int_eq(
            sk_prepare(ctx, &exe->core, &arena, &sk_target_ptx, op, &k),
            WEFT_OK);
        ck_assert_msg(k.even_loops == (v == 0), "variant %d: even_loops %d", v,
                      (int)k.even_loops);
        ck_assert_msg(sk_ptx_uneven(&k) == (v != 0), "variant %d", v);
        fe_arena_release(&arena);
        weft_executable_free(exe);
        weft_program_free(p);
    }
    weft_context_free(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ptx_target");
    TCase *tc = tcase_create("launch");
    tcase_add_test(tc, launch_block);
    tcase_add_test(tc, even_loops);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
