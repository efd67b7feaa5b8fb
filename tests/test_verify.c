/*
 * tests/test_verify.c: the checker of the core between passes
 * (lib/verify.c, fe_verify), white-box.
 *
 *   every_kind        one program that holds every kind of the core
 *                     language (the test counts them in its core, so it
 *                     fails if one goes missing) passes the checker after
 *                     sharing recovery, simplify and fuse, fused and with
 *                     fusion off; fused, some producer is delayed and a
 *                     function is shared (a permute's zeros, copied)
 *   compile_checks    weft_compile runs the checker when fe_verify_enabled
 *                     says so: $WEFT_VERIFY=1 / =0, else on in a debug
 *                     build and off in a release build
 *   broken_core       a valid core, corrupted by hand after the passes
 *                     (one corruption per loop iteration), is reported as
 *                     WEFT_ERR_INTERNAL (the release path: fe_verify never
 *                     aborts) with the check's file:line, the pass named
 *                     and the term: a primitive with an operand of another
 *                     type, a map whose operand has another element type,
 *                     a variable with an id out of range and one used
 *                     outside its binder, a fold whose combination has the
 *                     wrong type, a fold of the wrong rank, a cycle, a
 *                     shared term, `delayed` with fusion off and on a
 *                     fold, an operand count the kind table does not allow
 *   broken_shared_function
 *                     a function shared by two maps, its body reading a
 *                     variable that is not in scope at the second
 *   broken_let        a let whose variable has another type than its right
 *                     side (in every_kind's core, which has array lets)
 * WEFT_TEST_SHOW=1 prints each broken core's message on stderr.
 */
#include "fe.h"
#include "tu.h"

/* ---- helpers --------------------------------------------------------------
 */

/* The core of results[0..n-1] of t->p after sharing recovery, simplify
 * and fuse (fusion off with no_fusion), each checked by fe_verify. */
static void passes(tu *t, weft_acc *const *results, int n, bool no_fusion,
                   fe_arena *ar, fe_core *core)
{
    TU_PROGRAM_OK(t->p);
    fe_arena_init(ar, t->ctx);
    TU_OK(fe_share(t->p, "test", (fe_term *const *)results, n, ar, core));
    TU_OK(fe_verify(t->ctx, core, "sharing"));
    core->no_fusion = no_fusion;
    TU_OK(fe_simplify(core));
    TU_OK(fe_verify(t->ctx, core, "simplify"));
    TU_OK(fe_fuse(core));
    TU_OK(fe_verify(t->ctx, core, "fuse"));
}

static void done(fe_arena *ar, fe_core *core)
{
    fe_core_release_uses(core);
    fe_arena_release(ar);
}

/* The first term of kind `kind` (and, for FE_PRIM, primitive op) below t,
 * in pre-order through operands and function bodies; NULL if none. */
static fe_term *find(fe_term *t, int kind, int op)
{
    if (!t) {
        return NULL;
    }
    if (t->kind == kind && (kind != FE_PRIM || t->op == op)) {
        return t;
    }
    for (int i = 0; i < t->nkid; i++) {
        fe_term *r = find(t->kid[i], kind, op);
        if (r) {
            return r;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        fe_term *r = find(t->fun[i]->body, kind, op);
        if (r) {
            return r;
        }
    }
    return NULL;
}

/* t without the lets around it. */
static fe_term *below_lets(fe_term *t)
{
    while (t->kind == FE_LET) {
        t = t->kid[1];
    }
    return t;
}

/* Count the kinds below t into seen[], and delayed terms into *delayed. */
static void count_kinds(const fe_term *t, int *seen, int *delayed)
{
    if (!t) {
        return;
    }
    seen[t->kind]++;
    *delayed += t->delayed;
    for (int i = 0; i < t->nkid; i++) {
        count_kinds(t->kid[i], seen, delayed);
    }
    for (int i = 0; i < t->nfun; i++) {
        count_kinds(t->fun[i]->body, seen, delayed);
    }
}

/* Functions below t reached more than once (seen: room for 256). */
static int shared_funs(const fe_term *t, const fe_fun **seen, int *n)
{
    int shared = 0;
    for (int i = 0; t && i < t->nkid; i++) {
        shared += shared_funs(t->kid[i], seen, n);
    }
    for (int i = 0; t && i < t->nfun; i++) {
        bool again = false;
        for (int k = 0; k < *n; k++) {
            again = again || seen[k] == t->fun[i];
        }
        if (again) {
            shared++;
            continue;
        }
        ck_assert_int_lt(*n, 256);
        seen[(*n)++] = t->fun[i];
        shared += shared_funs(t->fun[i]->body, seen, n);
    }
    return shared;
}

/* fe_verify(core, "fuse") fails as a broken invariant whose message holds
 * each of the strings in `want` (NULL-terminated). */
static void expect_broken(tu *t, fe_core *core, const char *const *want)
{
    weft_status s = fe_verify(t->ctx, core, "fuse");
    const char *m = weft_last_error();
    if (getenv("WEFT_TEST_SHOW")) {
        fprintf(stderr, "%s\n", m);
    }
    ck_assert_msg(s == WEFT_ERR_INTERNAL, "status %s: %s", weft_status_name(s),
                  m);
    ck_assert_msg(strstr(m, "lib/verify.c:") != NULL, "no file:line: %s", m);
    ck_assert_msg(strstr(m, "weft: internal error: the core is broken after "
                            "fuse: ") != NULL,
                  "no pass: %s", m);
    for (int i = 0; want[i]; i++) {
        ck_assert_msg(strstr(m, want[i]) != NULL, "'%s' not in: %s", want[i],
                      m);
    }
}
#define EXPECT_BROKEN(t, core, ...)                                            \
    expect_broken(t, core, (const char *const[]){__VA_ARGS__, NULL})

static weft_array *f32_array(weft_context *ctx, int n)
{
    double v[16];
    for (int i = 0; i < n; i++) {
        v[i] = 0.5 * i;
    }
    return tu_arr_f(ctx, WEFT_F32, 1, TU_SH(n), v);
}

static weft_exp *f32c(weft_program *p, float x)
{
    return weft_const(p, WEFT_F32, &x);
}

static weft_exp *i64c(weft_program *p, int64_t x)
{
    return weft_const(p, WEFT_I64, &x);
}

/* ---- every kind, through every pass ------------------------------------- */

enum { NRES = 40 };

/* A program with every kind of the core (the kinds only the builder has
 * aside): its results in r, their count returned. */
static int every_kind(tu *t, weft_acc **r, weft_array **arrays)
{
    weft_program *p = t->p;
    int n = 0;
    arrays[0] = f32_array(t->ctx, 8);
    arrays[1] = tu_arr_i(t->ctx, WEFT_I32, 1, TU_SH(2), TU_I(3, 5));
    weft_acc *xs = weft_use(p, arrays[0]);
    weft_acc *seg = weft_use(p, arrays[1]);
    weft_acc *p0 = weft_param(p, WEFT_I32, 1);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32);
    weft_fun *mx = tu_fun_op2(p, WEFT_OP_MAX, WEFT_F32);

    weft_fun *dbl = weft_fun1(p, WEFT_F32);
    weft_fun_return(dbl,
                    weft_prim2(WEFT_OP_MUL, weft_arg(dbl, 0), f32c(p, 2.0f)));
    weft_acc *m = weft_map(dbl, xs);
    weft_acc *z2 = weft_zipwith(add, m, xs);
    weft_fun *pick = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(pick, weft_cond(weft_prim2(WEFT_OP_LT, weft_arg(pick, 0),
                                               weft_arg(pick, 1)),
                                    weft_arg(pick, 2), weft_arg(pick, 0)));
    r[n++] = weft_zipwith3(pick, m, z2, xs);
    r[n++] = z2;
    weft_fun *conv = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(conv,
                    weft_convert(weft_get(weft_arg(conv, 0), 0), WEFT_F32));
    weft_acc *g = weft_generate(weft_index1(i64c(p, 8)), conv);
    weft_acc *rs = weft_reshape(weft_index2(i64c(p, 2), i64c(p, 4)), g);
    r[n++] = weft_fold(add, f32c(p, 0.0f), rs);
    r[n++] = weft_fold1(mx, rs);
    weft_acc *rep =
        weft_replicate(2, (weft_exp *[]){weft_all(p), i64c(p, 3)}, xs);
    r[n++] = weft_slice(rep, 2, (weft_exp *[]){weft_all(p), i64c(p, 1)});
    weft_fun *half = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(half, weft_index1(weft_prim2(WEFT_OP_MUL,
                                                 weft_get(weft_arg(half, 0), 0),
                                                 i64c(p, 2))));
    r[n++] = weft_backpermute(weft_index1(i64c(p, 4)), half, xs);
    weft_fun *neg = tu_fun_op1(p, WEFT_OP_NEG, WEFT_F32);
    r[n++] = weft_transform(weft_index1(i64c(p, 4)), half, neg, xs);
    r[n++] = weft_fold_seg(add, f32c(p, 0.0f), xs, seg);
    r[n++] = weft_fold1_seg(add, xs, seg);
    r[n++] = weft_fold_seg_offsets(add, f32c(p, 0.0f), xs, seg);
    r[n++] = weft_fold1_seg_offsets(add, xs, seg);
    r[n++] = weft_scanl(add, f32c(p, 0.0f), xs);
    r[n++] = weft_scanl1(add, xs);
    r[n++] = weft_aget(weft_scanl_(add, f32c(p, 0.0f), xs), 1);
    r[n++] = weft_scanr(add, f32c(p, 0.0f), xs);
    r[n++] = weft_scanr1(add, xs);
    r[n++] = weft_scanr_(add, f32c(p, 0.0f), xs);
    /* permute with ignore: elements 4.. are dropped */
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, f32c(p, 0.0f));
    weft_acc *zeros = weft_generate(weft_index1(i64c(p, 4)), zero);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(ix, 0), 0);
    weft_fun_return(ix, weft_cond(weft_prim2(WEFT_OP_LT, i, i64c(p, 4)),
                                  weft_index1(i), weft_ignore(p, 1)));
    r[n++] = weft_permute(add, zeros, ix, weft_map(neg, xs));
    /* the zeros again: fuse copies them, their function shared */
    r[n++] = weft_permute(mx, zeros, ix, xs);
    weft_fun *s3 = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(s3,
                    weft_prim2(WEFT_OP_ADD, weft_arg(s3, 0), weft_arg(s3, 2)));
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    r[n++] = weft_stencil(s3, (const int[]){3}, clamp, xs);
    weft_fun *s6 =
        weft_fun_create(p, 6,
                        (const weft_type[]){WEFT_F32, WEFT_F32, WEFT_F32,
                                            WEFT_F32, WEFT_F32, WEFT_F32});
    weft_fun_return(s6,
                    weft_prim2(WEFT_OP_SUB, weft_arg(s6, 1), weft_arg(s6, 4)));
    weft_boundary one = {WEFT_BOUNDARY_CONSTANT, f32c(p, 1.0f)};
    r[n++] = weft_stencil2(s6, (const int[]){3}, clamp, xs, (const int[]){3},
                           one, m);
    /* unit, the, shape, size, to_index, at_linear, from_index, while */
    weft_acc *total = weft_fold1_all(add, xs);
    r[n++] = weft_unit(weft_prim2(WEFT_OP_ADD, weft_the(total),
                                  weft_convert(weft_size(xs), WEFT_F32)));
    weft_fun *rd = weft_fun1(p, WEFT_DIM(1));
    weft_exp *lin = weft_to_index(weft_shape(xs), weft_arg(rd, 0));
    weft_exp *back = weft_get(weft_from_index(weft_shape(xs), lin), 0);
    weft_fun_return(rd, weft_prim2(WEFT_OP_ADD, weft_at_linear(xs, lin),
                                   weft_at(xs, weft_index1(back))));
    r[n++] = weft_generate(weft_shape(xs), rd);
    weft_fun *lt = weft_fun1(p, WEFT_F32);
    weft_fun_return(lt,
                    weft_prim2(WEFT_OP_LT, weft_arg(lt, 0), f32c(p, 100.0f)));
    weft_fun *grow = weft_fun1(p, WEFT_F32);
    weft_fun_return(grow, weft_while(lt, dbl,
                                     weft_prim2(WEFT_OP_ADD, weft_arg(grow, 0),
                                                f32c(p, 1.0f))));
    r[n++] = weft_map(grow, xs);
    /* acond, awhile, tuples of arrays, a parameter */
    weft_exp *big = weft_prim2(WEFT_OP_GT, weft_the(total), f32c(p, 3.0f));
    r[n++] = weft_acond(big, m, xs);
    weft_afun *cond = weft_afun_like(xs);
    weft_fun *small = weft_fun1(p, WEFT_F32);
    weft_fun_return(
        small, weft_prim2(WEFT_OP_LT, weft_arg(small, 0), f32c(p, 1000.0f)));
    weft_afun_return(cond,
                     weft_map(small, weft_fold1_all(add, weft_afun_arg(cond))));
    weft_afun *body = weft_afun_like(xs);
    weft_afun_return(body, weft_map(dbl, weft_afun_arg(body)));
    r[n++] = weft_awhile(cond, body, weft_map(dbl, xs));
    r[n++] = weft_aget(weft_atuple(p, 2, (weft_acc *[]){g, m}), 0);
    weft_fun *inc = weft_fun1(p, WEFT_I32);
    weft_exp *one_i = weft_const(p, WEFT_I32, &(int32_t){1});
    weft_fun_return(inc, weft_prim2(WEFT_OP_ADD, weft_arg(inc, 0), one_i));
    r[n++] = weft_map(inc, p0);
    ck_assert_int_le(n, NRES);
    TU_PROGRAM_OK(p);
    return n;
}

START_TEST(every_kind_passes)
{
    tu t;
    tu_open(&t);
    weft_acc *r[NRES];
    weft_array *arrays[2];
    int n = every_kind(&t, r, arrays);
    for (int fusion = 0; fusion < 2; fusion++) {
        fe_arena ar;
        fe_core core;
        /* after sharing: every core kind is there */
        fe_arena_init(&ar, t.ctx);
        TU_OK(fe_share(t.p, "test", (fe_term *const *)r, n, &ar, &core));
        int seen[FE_KIND_COUNT_] = {0}, delayed = 0;
        count_kinds(core.root, seen, &delayed);
        for (int k = 0; k < FE_KIND_COUNT_; k++) {
            bool builder = k == FE_ARG || k == FE_AARG || k == FE_APPLY;
            ck_assert_msg(builder || seen[k] > 0,
                          "kind %d is not in the program's core", k);
        }
        done(&ar, &core);
        /* every pass, checked after each */
        passes(&t, r, n, fusion == 0, &ar, &core);
        memset(seen, 0, sizeof seen);
        delayed = 0;
        count_kinds(core.root, seen, &delayed);
        if (fusion) {
            ck_assert_int_gt(delayed, 0);
            /* the zeros' function, shared by their copies */
            const fe_fun *funs[256];
            int nfun = 0;
            ck_assert_int_gt(shared_funs(core.root, funs, &nfun), 0);
        } else {
            ck_assert_int_eq(delayed, 0);
        }
        done(&ar, &core);
    }
    /* the program is valid: it compiles and runs */
    weft_executable *exe;
    TU_OK(weft_compile(t.p, r, n, &exe));
    weft_array *in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), TU_I(1, 2, 3));
    weft_array *out[64];
    int nout = weft_executable_outputs(exe);
    ck_assert_int_le(nout, 64);
    TU_OK(weft_run(exe, &in, 1, out, nout));
    tu_release_all(out, nout);
    weft_array_release(in);
    weft_executable_free(exe);
    weft_array_release(arrays[0]);
    weft_array_release(arrays[1]);
    tu_close(&t);
}
END_TEST

/* ---- when weft_compile checks ------------------------------------------- */

START_TEST(compile_checks)
{
    const char *names[] = {"WEFT_VERIFY"};
    char *saved[1];
    tu_env_aside(names, 1, saved);
    weft_config cfg = weft_config_default();
    weft_context *ctx;
    TU_OK(weft_context_create(&cfg, &ctx));
#ifdef NDEBUG
    ck_assert(!fe_verify_enabled(ctx));
#else
    ck_assert(fe_verify_enabled(ctx));
#endif
    setenv("WEFT_VERIFY", "1", 1);
    ck_assert(fe_verify_enabled(ctx));
    setenv("WEFT_VERIFY", "0", 1);
    ck_assert(!fe_verify_enabled(ctx));
    weft_context_free(ctx);
    /* a context that ignores the environment keeps the build's default */
    cfg.flags |= WEFT_FLAG_NO_ENV;
    setenv("WEFT_VERIFY", "1", 1);
    TU_OK(weft_context_create(&cfg, &ctx));
#ifdef NDEBUG
    ck_assert(!fe_verify_enabled(ctx));
#else
    ck_assert(fe_verify_enabled(ctx));
#endif
    weft_context_free(ctx);
    /* a release-build compile with WEFT_VERIFY=1 runs it and succeeds */
    cfg.flags &= ~WEFT_FLAG_NO_ENV;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *a = weft_param(p, WEFT_F32, 1);
    weft_acc *s =
        weft_fold1_all(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32),
                       weft_map(tu_fun_op1(p, WEFT_OP_NEG, WEFT_F32), a));
    weft_executable *exe;
    TU_OK(weft_compile(p, &s, 1, &exe));
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    tu_env_restore(names, 1, saved);
}
END_TEST

/* ---- broken cores ----------------------------------------------------- */

/* sum (map (x -> x + 1) xs) and a fold over i32: the core that the
 * broken_* tests corrupt. */
typedef struct small {
    tu t;
    weft_array *xs, *ys;
    weft_acc *r[2];
    fe_arena ar;
    fe_core core;
} small;

static void small_open(small *s, bool no_fusion)
{
    tu_open(&s->t);
    weft_program *p = s->t.p;
    s->xs = f32_array(s->t.ctx, 8);
    s->ys = tu_arr_i(s->t.ctx, WEFT_I32, 1, TU_SH(3), TU_I(1, 2, 3));
    weft_fun *inc = weft_fun1(p, WEFT_F32);
    weft_fun_return(inc,
                    weft_prim2(WEFT_OP_ADD, weft_arg(inc, 0), f32c(p, 1.0f)));
    s->r[0] = weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32), f32c(p, 0.0f),
                        weft_map(inc, weft_use(p, s->xs)));
    int32_t zero = 0;
    s->r[1] = weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32),
                        weft_const(p, WEFT_I32, &zero), weft_use(p, s->ys));
    passes(&s->t, s->r, 2, no_fusion, &s->ar, &s->core);
}

static void small_close(small *s)
{
    done(&s->ar, &s->core);
    weft_array_release(s->xs);
    weft_array_release(s->ys);
    tu_close(&s->t);
}

/* The tuple of results (the root without its lets). */
static fe_term *results(small *s)
{
    fe_term *r = below_lets(s->core.root);
    ck_assert_int_eq(r->kind, FE_ATUPLE);
    return r;
}

/* A copy of term t in the core's arena. */
static fe_term *copy(small *s, const fe_term *t)
{
    fe_term *c = fe_arena_alloc(&s->ar, sizeof *c);
    ck_assert_ptr_nonnull(c);
    *c = *t;
    return c;
}

/* ---- the corruptions: each breaks one invariant of a valid core --------- */

/* x + 1.0 with the constant made an f64 */
static void prim_operand(small *s)
{
    fe_term *add = find(s->core.root, FE_PRIM, WEFT_OP_ADD);
    ck_assert_ptr_nonnull(add);
    fe_term *k = copy(s, add->kid[1]);
    k->type = WEFT_F64;
    add->kid[1] = k;
}

/* the f32 map's operand replaced by the i32 array */
static void map_operand(small *s)
{
    fe_term *map = find(s->core.root, FE_MAP, 0);
    fe_term *use_i32 = results(s)->kid[1]->kid[1];
    ck_assert_ptr_nonnull(map);
    ck_assert_int_eq(use_i32->kind, FE_USE);
    map->kid[0] = copy(s, use_i32);
}

/* a variable whose id is not below core->nvar */
static void var_range(small *s)
{
    fe_term *v = find(s->core.root, FE_VAR, 0);
    ck_assert_ptr_nonnull(v);
    fe_var *x = fe_arena_alloc(&s->ar, sizeof *x);
    ck_assert_ptr_nonnull(x);
    *x = *v->u.var;
    x->id = s->core.nvar + 3;
    v->u.var = x;
}

/* the i32 fold's parameter used in the f32 map's function, at f32: the
 * type fits, the scope does not */
static void var_scope(small *s)
{
    fe_term *map = find(s->core.root, FE_MAP, 0);
    fe_fun *f = results(s)->kid[1]->fun[0];
    ck_assert_ptr_nonnull(map);
    ck_assert_int_eq(f->targ[0], WEFT_I32);
    fe_term *body = map->fun[0]->body; /* x + 1.0 */
    ck_assert_int_eq(body->kind, FE_PRIM);
    fe_term *use = copy(s, body->kid[0]);
    ck_assert_int_eq(use->kind, FE_VAR);
    fe_var *y = fe_arena_alloc(&s->ar, sizeof *y);
    ck_assert_ptr_nonnull(y);
    *y = *f->param[0];
    y->type = WEFT_F32;
    use->u.var = y;
    body->kid[0] = use;
}

/* the folds' combinations swapped: the f32 fold combines with i32 */
static void fold_combine(small *s)
{
    fe_term *f32 = results(s)->kid[0], *i32 = results(s)->kid[1];
    ck_assert_int_eq(f32->kind, FE_FOLD);
    ck_assert_int_eq(i32->kind, FE_FOLD);
    fe_fun *tmp = f32->fun[0];
    f32->fun[0] = i32->fun[0];
    i32->fun[0] = tmp;
}

/* a fold that keeps its operand's rank (the tuple of results disagrees
 * too, but the fold is checked first) */
static void fold_rank(small *s)
{
    fe_term *fold = results(s)->kid[1];
    fold->atype = fe_atype_array(&s->ar, WEFT_I32, 1);
    fold->rank = 1;
}

/* a cycle: the map reads itself */
static void cycle(small *s)
{
    fe_term *map = find(s->core.root, FE_MAP, 0);
    ck_assert_ptr_nonnull(map);
    map->kid[0] = map;
}

/* a term with two parents: both folds read the f32 fold's seed */
static void shared(small *s)
{
    fe_term *r = results(s);
    r->kid[1]->kid[0] = r->kid[0]->kid[0];
}

/* a map delayed (with fusion off, or on) */
static void delay_map(small *s)
{
    fe_term *map = find(s->core.root, FE_MAP, 0);
    ck_assert_ptr_nonnull(map);
    ck_assert(!map->delayed);
    map->delayed = true;
}

/* a fold, no producer, delayed */
static void delay_fold(small *s)
{
    results(s)->kid[0]->delayed = true;
}

/* a map without its operand */
static void map_no_operand(small *s)
{
    fe_term *map = find(s->core.root, FE_MAP, 0);
    ck_assert_ptr_nonnull(map);
    map->nkid = 0;
}

static const struct {
    bool no_fusion;
    void (*corrupt)(small *s);
    const char *want[3]; /* in the message */
} broken[] = {
    {false, prim_operand, {"prim #", "outside its rule", "add of type f32"}},
    {true, map_operand, {"map #", "its function does not take"}},
    {false, var_range, {"var #", "core->nvar"}},
    {false, var_scope, {"var #", "used outside its binder"}},
    {false,
     fold_combine,
     {"fold #", "operand 0 of atuple", "a -> a -> a for a = f32"}},
    {false, fold_rank, {"fold #", "expected rank 0"}},
    {false, cycle, {"map #", "a cycle"}},
    {false, shared, {"const #", "shared"}},
    {true,
     delay_map,
     {"map #", "operand 1 of fold", "delayed where fusion does not allow"}},
    {false, delay_fold, {"fold #", "delayed where fusion does not allow"}},
    {false, map_no_operand, {"map #", "lib/fe_kinds.h says 1..1"}},
};

START_TEST(broken_core)
{
    small s;
    small_open(&s, broken[_i].no_fusion);
    broken[_i].corrupt(&s);
    const char *const *w = broken[_i].want;
    EXPECT_BROKEN(&s.t, &s.core, w[0], w[1], w[2]);
    small_close(&s);
}
END_TEST

/* A let of an f32 array variable below t (not in functions), or NULL. */
static fe_term *array_let(fe_term *t)
{
    if (!t) {
        return NULL;
    }
    if (t->kind == FE_LET && t->u.var->acc && t->u.var->atype->arity == 0 &&
        t->u.var->atype->elt == WEFT_F32) {
        return t;
    }
    for (int i = 0; i < t->nkid; i++) {
        fe_term *r = array_let(t->kid[i]);
        if (r) {
            return r;
        }
    }
    return NULL;
}

/* A variable read by a function's body that is bound outside it (its
 * argument excepted), below t; NULL if none. */
static const fe_var *outer_var(const fe_term *t, const fe_fun *f)
{
    if (t->kind == FE_VAR && t->u.var != f->param[0]) {
        return t->u.var;
    }
    for (int i = 0; i < t->nkid; i++) {
        const fe_var *x = outer_var(t->kid[i], f);
        if (x) {
            return x;
        }
    }
    return NULL;
}

START_TEST(broken_shared_function)
{
    /* map (\x -> x + s) xs, s the sum of xs (a let around the map), and
     * map neg ys; then the second map given the first one's function,
     * where s is not in scope */
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_array *a = f32_array(t.ctx, 8), *b = f32_array(t.ctx, 4);
    weft_acc *xs = weft_use(p, a);
    weft_exp *sum =
        weft_the(weft_fold1_all(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32), xs));
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_prim2(WEFT_OP_ADD, weft_arg(f, 0), sum));
    weft_acc *r[2] = {
        weft_map(f, xs),
        weft_map(tu_fun_op1(p, WEFT_OP_NEG, WEFT_F32), weft_use(p, b))};
    fe_arena ar;
    fe_core core;
    passes(&t, r, 2, true, &ar, &core); /* no fusion: lets stay put */
    fe_term *res = below_lets(core.root);
    fe_term *m0 = below_lets(res->kid[0]), *m1 = res->kid[1];
    ck_assert_int_eq(m0->kind, FE_MAP);
    ck_assert_int_eq(m1->kind, FE_MAP);
    ck_assert_ptr_nonnull(outer_var(m0->fun[0]->body, m0->fun[0]));
    m1->fun[0] = m0->fun[0];
    EXPECT_BROKEN(&t, &core, "map #", "operand 1 of atuple",
                  "function 0 is shared, and its body reads v");
    done(&ar, &core);
    weft_array_release(a);
    weft_array_release(b);
    tu_close(&t);
}
END_TEST

START_TEST(broken_let)
{
    /* a let whose variable has another type than its right side: m of
     * every_kind (f32, used often) bound to the i32 segments instead */
    tu t;
    tu_open(&t);
    weft_acc *r[NRES];
    weft_array *arrays[2];
    int n = every_kind(&t, r, arrays);
    fe_arena ar;
    fe_core core;
    passes(&t, r, n, false, &ar, &core);
    fe_term *let = array_let(core.root);
    ck_assert_ptr_nonnull(let);
    fe_term *seg = fe_arena_alloc(&ar, sizeof *seg);
    ck_assert_ptr_nonnull(seg);
    seg->kind = FE_USE;
    seg->acc = true;
    seg->type = WEFT_I32;
    seg->rank = 1;
    seg->atype = fe_atype_array(&ar, WEFT_I32, 1);
    seg->u.array = arrays[1];
    ck_assert(!fe_atype_equal(seg->atype, let->u.var->atype));
    let->kid[0] = seg;
    EXPECT_BROKEN(&t, &core, "let #", "is not of its right side's type");
    done(&ar, &core);
    weft_array_release(arrays[0]);
    weft_array_release(arrays[1]);
    tu_close(&t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("verify");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_kind_passes);
    tcase_add_test(tc, compile_checks);
    tcase_add_loop_test(tc, broken_core, 0,
                        (int)(sizeof broken / sizeof *broken));
    tcase_add_test(tc, broken_shared_function);
    tcase_add_test(tc, broken_let);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)
