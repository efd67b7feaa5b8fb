/*
 * tests/test_ptx_fold.c: the PTX target's own fold skeleton (ptx/fold.c)
 * emits kernels that ptxas accepts.  Nothing here needs a GPU.
 *
 * Each case builds a small program through weft.h, runs the frontend's
 * passes as weft_compile does (fe_share, fe_simplify, fe_fuse)
 * into an executable of the test's own, and plans it for the PTX target
 * (rt_plan with sk_target_ptx).  Every fold kernel of the plan must be
 * sk_ptx_fold, with a warp per item for entries 0 and 2 and a block per
 * item for entry 1 (in both variants when a fused zipWith makes the kernel
 * general); its entries are emitted into a module of their own, finished
 * with cg_ptx_finish for sm_90 and checked: every entry is an .entry,
 * there are warp shuffles (shfl.sync.down) and barriers (bar.sync), and
 * ptxas -arch=sm_90 assembles the text (skipped with a note without
 * ptxas on $PATH or in /usr/local/cuda/bin).
 *
 * The programs:
 *   sum2      fold (+) 0 over an f32 matrix (rows);
 *   affine    fold1 of affine-map composition over an (i32, i32) matrix:
 *             a tuple, not commutative;
 *   last      fold1 (\a b -> b) over (bool, f16, i16, u8, f64, i64)
 *             vectors: every leaf width the shuffles move;
 *   dotp      fold (+) 0 (zipWith (*) xs ys) of f64 matrices: a fused
 *             zipWith, so the kernel has the general variant (multi-index
 *             reads) too;
 *   all       foldAll (+) 0 of map (* 2) over an i64 array of rank 3;
 *   computed  fold (+) 0 of a generate reading a ! j - a ! i (n-body's
 *             shape), of rank 1 and 2: elements computed, not streamed.
 * The differential runs against the interpreter happen on a GPU
 * (tests/test_cpu.c's fold cases on the ptx backend).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "fe.h"
#include "rt.h"
#include "sk.h"
#include "tu_ptx.h"

/* ---- PTX text ---- */

#define ASSERT_HAS(text, s)                                                    \
    ck_assert_msg(strstr((text), (s)) != NULL, "PTX lacks \"%s\"", (s))

static int count(const char *text, const char *s)
{
    int n = 0;
    for (const char *p = strstr(text, s); p; p = strstr(p + 1, s)) {
        n++;
    }
    return n;
}

/* ---- planning a program for the PTX target ---- */

typedef struct seen {
    const char *what;
    int folds;   /* fold kernels emitted */
    int general; /* of which general */
    int vec;     /* 128-bit loads of the input (ld.global.nc.v2/v4) */
    int last;    /* kernels finished by their last block: a ticket
                          (SK_FOLD_LAST_BLOCK, atom.global.add) */
    weft_context *ctx;
} seen;

/* rt_get_fn: emit a fold kernel's entries, finish them and check the PTX;
 * other kernels (none expected) are left alone. */
static weft_status get_kernel(void *user, weft_executable *exe, sk_kernel *k)
{
    seen *sn = user;
    if (k->skel->family != SK_FOLD) {
        return WEFT_OK;
    }
    ck_assert_msg(k->skel == &sk_ptx_fold, "%s: fold kernel is %s", sn->what,
                  k->skel->name);
    ck_assert_int_eq(k->nentry, 3);
    int nsym = k->nentry * (k->general ? 2 : 1);
    for (int v = 0; v < (k->general ? 2 : 1); v++) {
        ck_assert_int_eq(k->item_threads[3 * v + 0], 32);
        ck_assert_int_eq(k->item_threads[3 * v + 1], SK_ITEM_BLOCK);
        ck_assert_int_eq(k->item_threads[3 * v + 2], 32);
    }
    char names[SK_MAX_ENTRY][32];
    const char *np[SK_MAX_ENTRY];
    for (int i = 0; i < nsym; i++) {
        snprintf(names[i], sizeof names[i], "fold_e%d", i);
        np[i] = names[i];
    }
    LLVMContextRef llctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("weft", llctx);
    fe_arena scratch;
    fe_arena_init(&scratch, sn->ctx);
    sk_emit e = {
        .ctx = exe->ctx,
        .core = &exe->core,
        .k = k,
        .arena = &scratch,
        .llctx = llctx,
        .mod = mod,
        .target = &sk_target_ptx,
    };
    weft_status s = sk_emit_kernel(&e, np);
    fe_arena_release(&scratch);
    ck_assert_msg(s == WEFT_OK, "%s: sk_emit_kernel: %s", sn->what,
                  weft_last_error());
    ck_assert_msg(cg_verify(mod, "test") == WEFT_OK, "%s: %s", sn->what,
                  weft_last_error());
    LLVMTargetMachineRef tm;
    ck_assert_msg(cg_ptx_machine(90, &tm) == WEFT_OK, "%s", weft_last_error());
    LLVMMemoryBufferRef buf;
    s = cg_ptx_finish(mod, tm, np, nsym, NULL, NULL, &buf);
    ck_assert_msg(s == WEFT_OK, "%s: cg_ptx_finish: %s", sn->what,
                  weft_last_error());
    char *text = strdup(LLVMGetBufferStart(buf));
    LLVMDisposeMemoryBuffer(buf);
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeModule(mod);
    LLVMContextDispose(llctx);
    ck_assert_int_eq(count(text, ".entry"), nsym);
    for (int i = 0; i < nsym; i++) {
        ASSERT_HAS(text, names[i]);
    }
    ASSERT_HAS(text, "shfl.sync.down");
    ASSERT_HAS(text, "bar.sync");
    ASSERT_HAS(text, ".shared");
    if (getenv("WEFT_TEST_PTX_PRINT")) {
        printf("---- %s ----\n%s\n", sn->what, text);
    }
    tu_assert_assembles(text, sn->what);
    sn->vec += count(text, "ld.global.nc.v");
    bool ticket = (k->flags & SK_FOLD_LAST_BLOCK) != 0;
    ck_assert_int_eq(count(text, "atom.global.add.u32") > 0, ticket);
    ck_assert_int_eq(ticket, (k->flags & SK_FOLD_CHUNKS_ONLY) != 0);
    sn->last += ticket;
    free(text);
    sn->folds++;
    sn->general += k->general;
    return WEFT_OK;
}

typedef struct tcase {
    weft_context *ctx;
    weft_program *p;
} tcase;

static void tc_open(tcase *t)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    ck_assert_msg(weft_context_create(&cfg, &t->ctx) == WEFT_OK, "%s",
                  weft_last_error());
    ck_assert_msg(cg_init() == WEFT_OK, "%s", weft_last_error());
    ck_assert_msg(weft_program_create(t->ctx, &t->p) == WEFT_OK, "%s",
                  weft_last_error());
}

static void tc_close(tcase *t)
{
    weft_program_free(t->p);
    weft_context_free(t->ctx);
}

/* Plan result r of t's program for the PTX target; returns what the fold
 * kernels were. */
static seen plan(tcase *t, const char *what, weft_acc *r)
{
    ck_assert_msg(r != NULL, "%s: %s", what, weft_last_error());
    weft_executable exe;
    memset(&exe, 0, sizeof exe);
    exe.ctx = t->ctx;
    fe_arena_init(&exe.arena, t->ctx);
    weft_status s =
        fe_share(t->p, "test", (fe_term *const *)&r, 1, &exe.arena, &exe.core);
    ck_assert_msg(s == WEFT_OK, "%s: %s", what, weft_last_error());
    weft_status (*const passes[])(fe_core *) = {fe_simplify, fe_fuse};
    for (size_t i = 0; i < sizeof passes / sizeof *passes; i++) {
        ck_assert_msg(passes[i](&exe.core) == WEFT_OK, "%s: %s", what,
                      weft_last_error());
    }
    seen sn = {.what = what, .ctx = t->ctx};
    rt_plan_t *pl;
    s = rt_plan(&exe, &sk_target_ptx, get_kernel, &sn, &pl);
    ck_assert_msg(s == WEFT_OK, "%s: rt_plan: %s", what, weft_last_error());
    fe_core_release_uses(&exe.core);
    fe_arena_release(&exe.arena);
    return sn;
}

static weft_type tuple(weft_context *ctx, int n, const weft_type *ts)
{
    weft_type t = weft_type_tuple(ctx, n, ts);
    ck_assert_int_ne(t, 0);
    return t;
}

/* ---- cases ---- */

/* (+) on t. */
static weft_fun *add_fun(weft_program *p, weft_type t)
{
    weft_fun *add = weft_fun2(p, t, t);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    return add;
}

/* A sum of f32 of rank `rank`: one kernel with `vec` 128-bit loads,
 * finished by its last block or not. */
static void sum_case(int rank, int vec, int last)
{
    tcase t;
    tc_open(&t);
    weft_acc *a = weft_param(t.p, WEFT_F32, rank);
    seen sn =
        plan(&t, "sum", weft_fold(add_fun(t.p, WEFT_F32), weft_f32(t.p, 0), a));
    ck_assert_int_eq(sn.folds, 1);
    ck_assert_int_eq(sn.general, 0);
    ck_assert_int_eq(sn.vec, vec);
    ck_assert_int_eq(sn.last, last);
    tc_close(&t);
}

/* Runs of K = 16 f32, four v4 loads, in entries 0 and 1. */
START_TEST(sum2)
{
    sum_case(2, 8, 0);
}
END_TEST

/* A vector: entry 1 alone has the loads, and one launch (the last
 * block). */
START_TEST(sum1)
{
    sum_case(1, 4, 1);
}
END_TEST

/* A fold of a map from 1-byte elements reads scalars. */
START_TEST(narrow)
{
    tcase t;
    tc_open(&t);
    weft_acc *a = weft_param(t.p, WEFT_I8, 1);
    weft_fun *cvt = weft_fun1(t.p, WEFT_I8);
    weft_fun_return(cvt, weft_convert(weft_arg(cvt, 0), WEFT_F32));
    seen sn = plan(&t, "narrow",
                   weft_fold1(add_fun(t.p, WEFT_F32), weft_map(cvt, a)));
    ck_assert_int_eq(sn.folds, 1);
    ck_assert_int_eq(sn.vec, 0);
    ck_assert_int_eq(sn.last, 1);
    tc_close(&t);
}
END_TEST

START_TEST(affine)
{
    tcase t;
    tc_open(&t);
    weft_type pt = tuple(t.ctx, 2, (const weft_type[]){WEFT_I32, WEFT_I32});
    weft_acc *a = weft_param(t.p, pt, 2);
    weft_fun *f = weft_fun2(t.p, pt, pt);
    weft_exp *x = weft_arg(f, 0), *y = weft_arg(f, 1);
    weft_exp *c[2] = {
        weft_mul(weft_get(x, 0), weft_get(y, 0)),
        weft_add(weft_mul(weft_get(x, 1), weft_get(y, 0)), weft_get(y, 1))};
    weft_fun_return(f, weft_tuple(t.p, 2, c));
    seen sn = plan(&t, "affine", weft_fold1(f, a));
    ck_assert_int_eq(sn.folds, 1);
    tc_close(&t);
}
END_TEST

START_TEST(last)
{
    tcase t;
    tc_open(&t);
    weft_type lt = tuple(t.ctx, 6,
                         (const weft_type[]){WEFT_BOOL, WEFT_F16, WEFT_I16,
                                             WEFT_U8, WEFT_F64, WEFT_I64});
    weft_acc *a = weft_param(t.p, lt, 1);
    weft_fun *f = weft_fun2(t.p, lt, lt);
    weft_fun_return(f, weft_arg(f, 1));
    seen sn = plan(&t, "last", weft_fold1(f, a));
    ck_assert_int_eq(sn.folds, 1);
    ck_assert_int_eq(sn.vec, 0); /* 1- and 2-byte leaves */
    tc_close(&t);
}
END_TEST

START_TEST(dotp)
{
    tcase t;
    tc_open(&t);
    weft_acc *xs = weft_param(t.p, WEFT_F64, 2);
    weft_acc *ys = weft_param(t.p, WEFT_F64, 2);
    weft_fun *mul = weft_fun2(t.p, WEFT_F64, WEFT_F64);
    weft_fun_return(mul, weft_mul(weft_arg(mul, 0), weft_arg(mul, 1)));
    weft_fun *add = weft_fun2(t.p, WEFT_F64, WEFT_F64);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    seen sn = plan(&t, "dotp",
                   weft_fold(add, weft_f64(t.p, 0), weft_zipwith(mul, xs, ys)));
    ck_assert_int_eq(sn.folds, 1);
    ck_assert_int_eq(sn.general, 1);
    /* the equal-shapes variant: K = 4 f64 per array, two v2 loads each,
     * in entries 0 and 1; the general one reads by multi-index */
    ck_assert_int_eq(sn.vec, 8);
    tc_close(&t);
}
END_TEST

/* A fold of computed elements (a generate that reads its array at its
 * own index, as n-body's fold does): teams of lanes with contiguous runs,
 * scalar reads; of rank 1 it is still one launch. */
static void computed_case(int rank, int last)
{
    tcase t;
    tc_open(&t);
    weft_acc *a = weft_param(t.p, WEFT_F32, 1);
    weft_fun *g = weft_fun1(t.p, WEFT_DIM(rank));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *j = weft_index1(weft_get(ix, rank - 1));
    weft_exp *i = weft_index1(weft_get(ix, 0));
    weft_fun_return(g, weft_sub(weft_at(a, j), weft_at(a, i)));
    weft_exp *n = weft_size(a);
    weft_exp *sh = rank == 1 ? weft_index1(n) : weft_index2(n, n);
    seen sn = plan(&t, "computed",
                   weft_fold(add_fun(t.p, WEFT_F32), weft_f32(t.p, 0),
                             weft_generate(sh, g)));
    ck_assert_int_eq(sn.folds, 1);
    ck_assert_int_eq(sn.vec, 0);
    ck_assert_int_eq(sn.last, last);
    tc_close(&t);
}

START_TEST(computed)
{
    computed_case(1, 1);
    computed_case(2, 0);
}
END_TEST

START_TEST(all)
{
    tcase t;
    tc_open(&t);
    weft_acc *a = weft_param(t.p, WEFT_I64, 3);
    weft_fun *dbl = weft_fun1(t.p, WEFT_I64);
    weft_fun_return(dbl, weft_mul(weft_arg(dbl, 0), weft_i64(t.p, 2)));
    weft_fun *add = weft_fun2(t.p, WEFT_I64, WEFT_I64);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    seen sn =
        plan(&t, "all", weft_fold_all(add, weft_i64(t.p, 0), weft_map(dbl, a)));
    ck_assert_int_eq(sn.folds, 1);
    tc_close(&t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ptx_fold");
    TCase *tc = tcase_create("emit");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sum2);
    tcase_add_test(tc, sum1);
    tcase_add_test(tc, computed);
    tcase_add_test(tc, narrow);
    tcase_add_test(tc, affine);
    tcase_add_test(tc, last);
    tcase_add_test(tc, dotp);
    tcase_add_test(tc, all);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
