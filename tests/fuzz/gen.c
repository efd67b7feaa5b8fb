/*
 * tests/fuzz/gen.c: random well-typed weft programs.
 *
 * fz_generate grows a program top-down from its results: gen_acc makes an
 * array term of a wanted element type and rank, gen_exp a scalar term of a
 * wanted type.  Each picks an operation that can produce what is wanted and
 * asks recursively for its operands, until a budget of nodes or the depth
 * runs out and leaves (constants, `use` arrays, arguments) finish it.
 *
 * Sharing: a term already made and visible here (not inside a function
 * that has been closed) is reused with some probability instead of a new
 * one; reusing a node is how the fuzzer writes `let`.  Arguments of the
 * innermost function are preferred leaves, so bodies depend on them.
 *
 * Scopes: g->stk lists the functions (F_FUN) and array functions (F_AFUN)
 * open around the point of generation.  Array terms cannot depend on the
 * argument of a scalar function (WEFT_ERR_SCOPE), so an array wanted from
 * inside a scalar function is made with the stack cut back to the
 * innermost array function.
 *
 * Exactness (see fuzz.h): `exact` asks for a term whose floats agree
 * bit for bit on every backend.  Every non-float term is asked for exactly,
 * so only floats are ever inexact.
 *
 * Partial operations (division, `!`, `!!`, conversions from floats,
 * shifts) are often wrapped in a guard that makes them safe, sharing their
 * operands with the guard: cond(y /= 0, x `quot` y, alt), i >= 0 && i <
 * size a ... a !! i; the interpreter must not evaluate them outside it,
 * and neither may the backends.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

typedef struct gen {
    fz_rng r;
    fz_prog *p;
    unsigned feat;
    int budget;  /* nodes left */
    int stk[32]; /* open functions and array functions */
    int nstk;
    int nparam;
} gen;

#define HAS(f) ((g->feat & FZ_F(f)) != 0)

static int gen_exp(gen *g, fz_ty ty, int depth, bool exact);
static int gen_acc(gen *g, fz_ty ty, int rank, int depth);

/* ------------------------------------------------------------------------
 * Node helpers
 * ---------------------------------------------------------------------- */

static int top_scope(gen *g)
{
    return g->nstk ? g->stk[g->nstk - 1] : -1;
}

static bool visible(gen *g, int i)
{
    int s = g->p->node[i].scope;
    if (s < 0) {
        return true;
    }
    for (int k = 0; k < g->nstk; k++) {
        if (g->stk[k] == s) {
            return true;
        }
    }
    return false;
}

/* The innermost open array function, where array terms are made. */
static int ascope(gen *g)
{
    int s = -1;
    for (int i = 0; i < g->nstk; i++) {
        if (g->p->node[g->stk[i]].op == F_AFUN) {
            s = g->stk[i];
        }
    }
    return s;
}

static fz_node blank(void)
{
    fz_node n;
    memset(&n, 0, sizeof n);
    n.arity = 1;
    n.aux = n.aux2 = 0;
    n.scope = -1;
    return n;
}

/* Add n with kids k[0..nk-1]; inexact and partial from the kids. */
static int add(gen *g, fz_node n, int nk, const int *k)
{
    n.nkid = nk;
    for (int i = 0; i < nk; i++) {
        n.kid[i] = k[i];
        const fz_node *c = &g->p->node[k[i]];
        if (c->op != F_FUN && c->op != F_AFUN) {
            n.partial |= c->partial && !fz_is_array_op(c->op);
        }
        n.inexact |= c->inexact;
        n.unordered |= c->unordered;
    }
    n.scope = top_scope(g);
    g->budget--;
    int id = fz_node_add(g->p, n);
    return id < 0 ? 0 : id;
}

static int mk(gen *g, fz_op op, fz_ty ty, int nk, const int *k)
{
    fz_node n = blank();
    n.op = op;
    n.ty = ty;
    return add(g, n, nk, k);
}

static int mk1(gen *g, fz_op op, fz_ty ty, int a)
{
    return mk(g, op, ty, 1, (int[]){a});
}

static int mk2(gen *g, fz_op op, fz_ty ty, int a, int b)
{
    return mk(g, op, ty, 2, (int[]){a, b});
}

static int prim1(gen *g, weft_op op, fz_ty ty, int a)
{
    fz_node n = blank();
    n.op = E_PRIM;
    n.aux = op;
    n.ty = ty;
    return add(g, n, 1, (int[]){a});
}

static int prim2(gen *g, weft_op op, fz_ty ty, int a, int b)
{
    fz_node n = blank();
    n.op = E_PRIM;
    n.aux = op;
    n.ty = ty;
    return add(g, n, 2, (int[]){a, b});
}

static int cond(gen *g, fz_ty ty, int c, int t, int e)
{
    return mk(g, E_COND, ty, 3, (int[]){c, t, e});
}

/* ------------------------------------------------------------------------
 * Constants and data
 * ---------------------------------------------------------------------- */

static const weft_type all_scalars[] = {
    WEFT_BOOL, WEFT_I8,  WEFT_I16, WEFT_I32, WEFT_I64, WEFT_U8,
    WEFT_U16,  WEFT_U32, WEFT_U64, WEFT_F16, WEFT_F32, WEFT_F64};

static weft_type rand_scalar(gen *g)
{
    for (;;) {
        weft_type t = all_scalars[fz_below(&g->r, 12)];
        if (t == WEFT_F16 && !HAS(F16)) {
            continue;
        }
        return t;
    }
}

static weft_type rand_int_type(gen *g)
{
    static const weft_type ints[] = {WEFT_I8, WEFT_I16, WEFT_I32, WEFT_I64,
                                     WEFT_U8, WEFT_U16, WEFT_U32, WEFT_U64};
    return ints[fz_below(&g->r, 8)];
}

static weft_type rand_float_type(gen *g)
{
    for (;;) {
        weft_type t = WEFT_F16 + fz_below(&g->r, 3);
        if (t != WEFT_F16 || HAS(F16)) {
            return t;
        }
    }
}

static fz_ty rand_ty(gen *g)
{
    if (HAS(TUPLES) && fz_chance(&g->r, 12)) {
        fz_ty t = {FZ_TUPLE, (int8_t)(2 + fz_below(&g->r, 2)), {0, 0, 0}};
        for (int i = 0; i < t.n; i++) {
            t.s[i] = rand_scalar(g);
        }
        return t;
    }
    return fz_scalar(rand_scalar(g));
}

static uint64_t mask_bits(weft_type t, uint64_t v)
{
    int w = fz_bits(t);
    return w >= 64 ? v : v & (((uint64_t)1 << w) - 1);
}

/* The stored bits of a double in float type t. */
static uint64_t float_bits(weft_type t, double d)
{
    if (t == WEFT_F16) {
        return fz_half_from_double(d);
    }
    if (t == WEFT_F32) {
        float f = (float)d;
        uint32_t b;
        memcpy(&b, &f, 4);
        return b;
    }
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

/* A random value of scalar type t; `edge` in percent: how often an edge
 * value (extremes, NaN, infinities, -0) is chosen. */
static uint64_t rand_value(gen *g, weft_type t, int edge)
{
    fz_rng *r = &g->r;
    if (t == WEFT_BOOL) {
        return fz_below(r, 2);
    }
    if (fz_is_int(t)) {
        int w = fz_bits(t);
        uint64_t v;
        if (fz_chance(r, edge)) {
            switch (fz_below(r, 5)) {
            case 0: v = ~(uint64_t)0; break;                 /* -1, max */
            case 1: v = (uint64_t)1 << (w - 1); break;       /* min */
            case 2: v = ((uint64_t)1 << (w - 1)) - 1; break; /* max */
            case 3: v = fz_next(r); break;
            default: v = (uint64_t)w; break; /* the width */
            }
        } else {
            v = (uint64_t)(int64_t)(fz_below(r, 21) -
                                    (fz_is_signed(t) ? 10 : 0));
        }
        return mask_bits(t, v);
    }
    double d;
    if (fz_chance(r, edge)) {
        static const double edges[] = {
            0.0,     -0.0,  NAN, INFINITY, -INFINITY, 1e10,         -1e10,
            65504.0, 1e-40, 0.5, 2.5,      -2.5,      2147483648.0, 1e300};
        d = edges[fz_below(r, 14)];
    } else if (fz_chance(r, 70)) {
        d = fz_below(r, 21) - 10;
    } else {
        d = (fz_below(r, 2001) - 1000) / 16.0;
    }
    return float_bits(t, d);
}

static int gen_const(gen *g, fz_ty ty)
{
    if (ty.kind == FZ_SCALAR) {
        fz_node n = blank();
        n.op = E_CONST;
        n.ty = ty;
        n.val = rand_value(g, ty.s[0], 15);
        return add(g, n, 0, NULL);
    }
    int k[FZ_MAXT];
    if (ty.kind == FZ_DIMT) {
        int kk[3];
        for (int i = 0; i < ty.n; i++) {
            fz_node n = blank();
            n.op = E_CONST;
            n.ty = fz_scalar(WEFT_I64);
            n.val = (uint64_t)fz_below(&g->r, 4);
            kk[i] = add(g, n, 0, NULL);
        }
        return mk(g, E_INDEX, ty, ty.n, kk);
    }
    for (int i = 0; i < ty.n; i++) {
        k[i] = gen_const(g, fz_scalar(ty.s[i]));
    }
    return mk(g, E_TUPLE, ty, ty.n, k);
}

static int const_of(gen *g, weft_type t, uint64_t v)
{
    fz_node n = blank();
    n.op = E_CONST;
    n.ty = fz_scalar(t);
    n.val = mask_bits(t, v);
    return add(g, n, 0, NULL);
}

static int const_f(gen *g, weft_type t, double d)
{
    fz_node n = blank();
    n.op = E_CONST;
    n.ty = fz_scalar(t);
    n.val = float_bits(t, d);
    return add(g, n, 0, NULL);
}

/* ------------------------------------------------------------------------
 * Reuse (sharing)
 * ---------------------------------------------------------------------- */

static bool scalar_term(fz_op op)
{
    return op < F_FUN && op != E_IGNORE;
}

/* A visible node of type ty (exact when asked); prefer_top: only nodes of
 * the innermost scope.  -1 if none. */
static int pick_existing(gen *g, fz_ty ty, bool exact, bool prefer_top)
{
    int cand[64], nc = 0;
    int top = top_scope(g);
    for (int i = g->p->n - 1; i >= 0 && nc < 64; i--) {
        const fz_node *n = &g->p->node[i];
        if (!scalar_term(n->op) || !fz_ty_eq(n->ty, ty) || !visible(g, i)) {
            continue;
        }
        if (exact && n->inexact) {
            continue;
        }
        if (prefer_top && n->scope != top) {
            continue;
        }
        cand[nc++] = i;
    }
    return nc ? cand[fz_below(&g->r, nc)] : -1;
}

static int pick_existing_acc(gen *g, fz_ty ty, int rank)
{
    int cand[64], nc = 0;
    for (int i = g->p->n - 1; i >= 0 && nc < 64; i--) {
        const fz_node *n = &g->p->node[i];
        if (!fz_is_array_op(n->op) || n->arity != 1 || n->rank != rank ||
            !fz_ty_eq(n->ty, ty) || !visible(g, i)) {
            continue;
        }
        cand[nc++] = i;
    }
    return nc ? cand[fz_below(&g->r, nc)] : -1;
}

/* ------------------------------------------------------------------------
 * Functions
 * ---------------------------------------------------------------------- */

/* Open a function of nargs arguments in up to three groups (cnt[i] of type
 * argt[i]; inexact[i]: whether those arguments may hold inexact floats).
 * Arguments and their components become nodes of its scope. */
static int fun_open(gen *g, int ngroups, const int *cnt, const fz_ty *argt,
                    const bool *inexact)
{
    fz_node f = blank();
    f.op = F_FUN;
    f.nargs = 0;
    for (int i = 0; i < ngroups; i++) {
        f.cnt[i] = cnt[i];
        f.argt[i] = argt[i];
        f.nargs += cnt[i];
    }
    f.scope = top_scope(g);
    int id = fz_node_add(g->p, f);
    if (id < 0) {
        return -1;
    }
    g->stk[g->nstk++] = id;
    int a = 0;
    for (int gi = 0; gi < ngroups; gi++) {
        for (int j = 0; j < cnt[gi]; j++, a++) {
            fz_node n = blank();
            n.op = E_ARG;
            n.ty = argt[gi];
            n.aux = id;
            n.aux2 = a;
            n.inexact = inexact && inexact[gi] && fz_ty_has_float(argt[gi]);
            int arg = add(g, n, 0, NULL);
            /* the components of a tuple or index argument, as leaves */
            if (argt[gi].kind != FZ_SCALAR && cnt[gi] <= 2) {
                for (int c = 0; c < argt[gi].n; c++) {
                    fz_node m = blank();
                    m.op = E_GET;
                    m.aux = c;
                    m.ty = fz_scalar(fz_ty_leaf(argt[gi], c));
                    add(g, m, 1, (int[]){arg});
                }
            }
        }
    }
    return id;
}

/* Whether node `want` is reachable from node `from` (through kids). */
static bool reaches(gen *g, int from, int want, bool *seen)
{
    if (from == want) {
        return true;
    }
    if (from < 0 || seen[from]) {
        return false;
    }
    seen[from] = true;
    const fz_node *n = &g->p->node[from];
    for (int k = 0; k < n->nkid; k++) {
        if (reaches(g, n->kid[k], want, seen)) {
            return true;
        }
    }
    return false;
}

/* Fold a scalar leaf x into body (of scalar type ty), so that an argument
 * the body ignores is used: body + convert x, or body xor (x /= 0). */
static int mix_in(gen *g, int body, int x, fz_ty ty)
{
    const fz_node *xn = &g->p->node[x];
    weft_type t = ty.s[0], xt = xn->ty.s[0];
    fz_ty b = fz_scalar(WEFT_BOOL);
    if (xn->ty.kind != FZ_SCALAR ||
        (fz_is_float(xt) && !fz_is_float(t) && t != WEFT_BOOL)) {
        return body;
    }
    if (t == WEFT_BOOL) {
        if (xn->inexact) {
            return body;
        }
        return prim2(g, WEFT_OP_BXOR, b, body,
                     prim2(g, WEFT_OP_NE, b, x, const_of(g, xt, 0)));
    }
    fz_node m = blank();
    m.op = E_PRIMT;
    m.aux = WEFT_OP_CONVERT;
    m.ty = ty;
    int c = add(g, m, 1, (int[]){x});
    return prim2(g, fz_chance(&g->r, 50) ? WEFT_OP_ADD : WEFT_OP_SUB, ty, body,
                 c);
}

static int fun_close(gen *g, int f, int body)
{
    /* a function of a few arguments uses each of them (a zipWith that
     * ignores an input tests less) */
    fz_node *fn = &g->p->node[f];
    fz_ty ty = g->p->node[body].ty;
    if (fn->nargs >= 2 && fn->nargs <= 3 && ty.kind == FZ_SCALAR &&
        fz_chance(&g->r, 80)) {
        bool *seen = calloc(FZ_MAXNODES, 1); /* mix_in adds nodes */
        for (int i = f + 1; i < g->p->n; i++) {
            const fz_node *a = &g->p->node[i];
            if (a->op != E_ARG || a->aux != f) {
                continue;
            }
            memset(seen, 0, FZ_MAXNODES);
            bool used = reaches(g, body, i, seen);
            if (!used) {
                memset(seen, 0, FZ_MAXNODES);
                /* its first component, if it is a tuple */
                int leaf = a->ty.kind == FZ_SCALAR ? i
                           : i + 1 < g->p->n && g->p->node[i + 1].op == E_GET &&
                                   g->p->node[i + 1].kid[0] == i
                               ? i + 1
                               : -1;
                if (leaf >= 0 && !reaches(g, body, leaf, seen)) {
                    body = mix_in(g, body, leaf, ty);
                }
            }
        }
        free(seen);
    }
    g->nstk--;
    fz_node *n = &g->p->node[f];
    n->kid[0] = body;
    n->nkid = 1;
    n->ty = g->p->node[body].ty;
    n->inexact = g->p->node[body].inexact;
    n->unordered = g->p->node[body].unordered;
    return f;
}

/* A function of one group of arguments, returning ty. */
static int gen_fun(gen *g, int nargs, fz_ty argt, bool arg_inexact, fz_ty ty,
                   int depth, bool exact)
{
    int f = fun_open(g, 1, (int[]){nargs}, &argt, (bool[]){arg_inexact});
    if (f < 0) {
        return 0;
    }
    int body = gen_exp(g, ty, depth, exact);
    return fun_close(g, f, body);
}

/* An associative and commutative combination for fold, scan and permute.
 * Float + and * are marked inexact: their order is unspecified. */
static int gen_combine(gen *g, fz_ty ty)
{
    /* one function passed to several operations */
    if (fz_chance(&g->r, 25)) {
        for (int i = g->p->n - 1; i >= 0; i--) {
            const fz_node *n = &g->p->node[i];
            if (n->op == F_FUN && n->aux2 == 1 && n->nkid == 1 &&
                fz_ty_eq(n->argt[0], ty) && visible(g, i)) {
                return i;
            }
        }
    }
    int f = fun_open(g, 1, (int[]){2}, &ty, (bool[]){false});
    if (f < 0) {
        return 0;
    }
    int a0 = g->p->node[f + 1].op == E_ARG ? f + 1 : -1;
    int x = f + 1, y;
    /* find the second argument */
    for (y = x + 1; g->p->node[y].op != E_ARG; y++) {
    }
    (void)a0;
    int n = fz_ty_leaves(ty);
    int comp[FZ_MAXT];
    bool inexact = false, unordered = false;
    for (int i = 0; i < n; i++) {
        weft_type t = fz_ty_leaf(ty, i);
        int xi = x, yi = y;
        if (ty.kind != FZ_SCALAR) {
            fz_node m = blank();
            m.op = E_GET;
            m.aux = i;
            m.ty = fz_scalar(t);
            xi = add(g, m, 1, (int[]){x});
            yi = add(g, m, 1, (int[]){y});
        }
        weft_op op;
        if (t == WEFT_BOOL) {
            static const weft_op ops[] = {
                WEFT_OP_BAND, WEFT_OP_BOR, WEFT_OP_BXOR, WEFT_OP_MIN,
                WEFT_OP_MAX,  WEFT_OP_AND, WEFT_OP_OR};
            op = ops[fz_below(&g->r, 7)];
        } else if (fz_is_int(t)) {
            static const weft_op ops[] = {
                WEFT_OP_ADD,  WEFT_OP_MUL, WEFT_OP_BAND, WEFT_OP_BOR,
                WEFT_OP_BXOR, WEFT_OP_MIN, WEFT_OP_MAX,  WEFT_OP_ADD};
            op = ops[fz_below(&g->r, 8)];
        } else {
            op = fz_chance(&g->r, 75) ? WEFT_OP_ADD : WEFT_OP_MUL;
            inexact = true;
            /* an f16 sum in one order stalls at 2048 (2048 + 1 rounds to
             * 2048) where another order reaches 20000: no tolerance fits */
            unordered |= t == WEFT_F16;
        }
        comp[i] = prim2(g, op, fz_scalar(t), xi, yi);
    }
    int body =
        n == 1 && ty.kind == FZ_SCALAR ? comp[0] : mk(g, E_TUPLE, ty, n, comp);
    fun_close(g, f, body);
    g->p->node[f].inexact = inexact;
    g->p->node[f].unordered = unordered;
    g->p->node[f].aux2 = 1; /* a combination: may be reused */
    return f;
}

/* ------------------------------------------------------------------------
 * Scalar terms
 * ---------------------------------------------------------------------- */

static bool is_inexact_op(weft_op op)
{
    switch (op) {
    case WEFT_OP_POW:
    case WEFT_OP_ATAN2:
    case WEFT_OP_EXP:
    case WEFT_OP_LOG:
    case WEFT_OP_SIN:
    case WEFT_OP_COS:
    case WEFT_OP_TAN:
    case WEFT_OP_ASIN:
    case WEFT_OP_ACOS:
    case WEFT_OP_ATAN:
    case WEFT_OP_SINH:
    case WEFT_OP_COSH:
    case WEFT_OP_TANH:
    case WEFT_OP_ASINH:
    case WEFT_OP_ACOSH:
    case WEFT_OP_ATANH: return true;
    default: return false;
    }
}

static int gen_leaf(gen *g, fz_ty ty, bool exact)
{
    int k;
    if (fz_chance(&g->r, 60) && (k = pick_existing(g, ty, exact, true)) >= 0) {
        return k;
    }
    if (fz_chance(&g->r, 40) && (k = pick_existing(g, ty, exact, false)) >= 0) {
        return k;
    }
    return gen_const(g, ty);
}

/* An array term to index from a function body: an existing one (shared
 * with other uses) or a new one made at array level. */
static int acc_for_index(gen *g, fz_ty ty, int rank, int depth)
{
    int a;
    if (fz_chance(&g->r, 50) && (a = pick_existing_acc(g, ty, rank)) >= 0) {
        return a;
    }
    /* cut the scope back to the innermost array function */
    int saved[32], ns = g->nstk;
    memcpy(saved, g->stk, sizeof saved);
    int keep = 0;
    for (int i = 0; i < g->nstk; i++) {
        if (g->p->node[g->stk[i]].op == F_AFUN) {
            keep = i + 1;
        }
    }
    g->nstk = keep;
    a = gen_acc(g, ty, rank, depth);
    memcpy(g->stk, saved, sizeof saved);
    g->nstk = ns;
    return a;
}

static int i64c(gen *g, int64_t v)
{
    return const_of(g, WEFT_I64, (uint64_t)v);
}

/* a ! ix or a !! i, guarded or not. */
static int gen_index_into(gen *g, fz_ty ty, int depth)
{
    int rank = fz_below(&g->r, 4);
    int a = acc_for_index(g, ty, rank, depth - 1);
    fz_ty i64 = fz_scalar(WEFT_I64), b = fz_scalar(WEFT_BOOL);
    bool guard = !HAS(PARTIAL) || fz_chance(&g->r, 70);
    if (rank == 0 && fz_chance(&g->r, 50)) {
        return mk1(g, E_THE, ty, a);
    }
    if (fz_chance(&g->r, 40)) {
        int i = gen_exp(g, i64, depth - 1, true);
        int r = mk2(g, E_AT_LIN, ty, a, i);
        if (!guard) {
            return r;
        }
        int sz = mk1(g, E_SIZE, i64, a);
        int c = prim2(g, WEFT_OP_AND, b, prim2(g, WEFT_OP_GE, b, i, i64c(g, 0)),
                      prim2(g, WEFT_OP_LT, b, i, sz));
        return cond(g, ty, c, r, gen_exp(g, ty, depth - 1, false));
    }
    int comps[3] = {0, 0, 0};
    int sh = mk1(g, E_SHAPE, fz_dim(rank), a);
    for (int k = 0; k < rank; k++) {
        int e = gen_exp(g, i64, depth - 1, true);
        if (guard) {
            fz_node m = blank();
            m.op = E_GET;
            m.aux = k;
            m.ty = i64;
            int ext = add(g, m, 1, (int[]){sh});
            e = prim2(g, WEFT_OP_MOD, i64, e, ext);
        }
        comps[k] = e;
    }
    int ix = mk(g, E_INDEX, fz_dim(rank), rank, comps);
    int r = mk2(g, E_AT, ty, a, ix);
    if (!guard || rank == 0) {
        return r;
    }
    int c = prim2(g, WEFT_OP_GT, b, mk1(g, E_SIZE, i64, a), i64c(g, 0));
    return cond(g, ty, c, r, gen_exp(g, ty, depth - 1, false));
}

/* while over (i32 counter, t): at most K steps. */
static int gen_while(gen *g, fz_ty ty, int depth, bool exact)
{
    fz_ty st = {FZ_TUPLE, 2, {WEFT_I32, ty.s[0], 0}};
    fz_ty i32 = fz_scalar(WEFT_I32), b = fz_scalar(WEFT_BOOL);
    bool inex = !exact && HAS(INEXACT);
    int init =
        mk(g, E_TUPLE, st, 2,
           (int[]){const_of(g, WEFT_I32, 0), gen_exp(g, ty, depth - 1, exact)});
    /* cond */
    int cf = fun_open(g, 1, (int[]){1}, &st, (bool[]){inex});
    if (cf < 0) {
        return gen_const(g, ty);
    }
    int x = cf + 1;
    int cnt = cf + 2; /* the GET 0 leaf */
    int c = prim2(g, WEFT_OP_LT, b, cnt,
                  const_of(g, WEFT_I32, (uint64_t)fz_below(&g->r, 4)));
    if (fz_chance(&g->r, 40)) {
        c = prim2(g, WEFT_OP_AND, b, c, gen_exp(g, b, depth - 1, true));
    }
    (void)x;
    fun_close(g, cf, c);
    /* body */
    int bf = fun_open(g, 1, (int[]){1}, &st, (bool[]){inex});
    if (bf < 0) {
        return gen_const(g, ty);
    }
    int bcnt = bf + 2;
    int next = prim2(g, WEFT_OP_ADD, i32, bcnt, const_of(g, WEFT_I32, 1));
    int val = gen_exp(g, ty, depth - 1, exact);
    fun_close(g, bf, mk(g, E_TUPLE, st, 2, (int[]){next, val}));
    int w = mk(g, E_WHILE, st, 3, (int[]){cf, bf, init});
    fz_node m = blank();
    m.op = E_GET;
    m.aux = 1;
    m.ty = ty;
    return add(g, m, 1, (int[]){w});
}

static const weft_op num_ops[] = {WEFT_OP_ADD, WEFT_OP_SUB, WEFT_OP_MUL,
                                  WEFT_OP_NEG, WEFT_OP_ABS, WEFT_OP_SIGNUM,
                                  WEFT_OP_MIN, WEFT_OP_MAX};
static const weft_op int_ops[] = {WEFT_OP_QUOT, WEFT_OP_REM,  WEFT_OP_IDIV,
                                  WEFT_OP_MOD,  WEFT_OP_BAND, WEFT_OP_BOR,
                                  WEFT_OP_BXOR, WEFT_OP_BNOT, WEFT_OP_SHL,
                                  WEFT_OP_SHR,  WEFT_OP_ROTL, WEFT_OP_ROTR};
static const weft_op flt_ops[] = {
    WEFT_OP_FDIV,  WEFT_OP_SQRT,  WEFT_OP_POW,  WEFT_OP_ATAN2, WEFT_OP_EXP,
    WEFT_OP_LOG,   WEFT_OP_SIN,   WEFT_OP_COS,  WEFT_OP_TAN,   WEFT_OP_ASIN,
    WEFT_OP_ACOS,  WEFT_OP_ATAN,  WEFT_OP_SINH, WEFT_OP_COSH,  WEFT_OP_TANH,
    WEFT_OP_ASINH, WEFT_OP_ACOSH, WEFT_OP_ATANH};
static const weft_op cmp_ops[] = {WEFT_OP_LT, WEFT_OP_LE, WEFT_OP_GT,
                                  WEFT_OP_GE, WEFT_OP_EQ, WEFT_OP_NE};

/* An integral or float operation of type t (a scalar). */
static int gen_arith(gen *g, weft_type t, int depth, bool exact)
{
    fz_ty ty = fz_scalar(t);
    fz_rng *r = &g->r;
    if (fz_is_float(t) && fz_chance(r, 35)) {
        weft_op op = flt_ops[fz_below(r, 18)];
        if (is_inexact_op(op) && (exact || !HAS(INEXACT))) {
            op = fz_chance(r, 50) ? WEFT_OP_FDIV : WEFT_OP_SQRT;
        }
        int a = gen_exp(g, ty, depth - 1, exact);
        int n = weft_op_name(op) && (op == WEFT_OP_FDIV || op == WEFT_OP_POW ||
                                     op == WEFT_OP_ATAN2)
                    ? 2
                    : 1;
        int k = n == 2 ? prim2(g, op, ty, a, gen_exp(g, ty, depth - 1, exact))
                       : prim1(g, op, ty, a);
        if (is_inexact_op(op)) {
            g->p->node[k].inexact = true;
        }
        return k;
    }
    if (fz_is_int(t) && fz_chance(r, 45)) {
        weft_op op = int_ops[fz_below(r, 12)];
        int a = gen_exp(g, ty, depth - 1, true);
        if (op == WEFT_OP_BNOT) {
            return prim1(g, op, ty, a);
        }
        if (op == WEFT_OP_BAND || op == WEFT_OP_BOR || op == WEFT_OP_BXOR) {
            return prim2(g, op, ty, a, gen_exp(g, ty, depth - 1, true));
        }
        if (op >= WEFT_OP_SHL && op <= WEFT_OP_ROTR) {
            weft_type at = fz_chance(r, 50) ? t : rand_int_type(g);
            fz_ty aty = fz_scalar(at);
            int amt = gen_exp(g, aty, depth - 1, true);
            if ((op == WEFT_OP_SHL || op == WEFT_OP_SHR) &&
                (!HAS(PARTIAL) || fz_chance(r, 75))) {
                amt = prim2(g, WEFT_OP_BAND, aty, amt,
                            const_of(g, at, (uint64_t)(fz_bits(t) - 1)));
            }
            return prim2(g, op, ty, a, amt);
        }
        /* division */
        int y = gen_exp(g, ty, depth - 1, true);
        int q = prim2(g, op, ty, a, y);
        g->p->node[q].partial = true;
        if (!HAS(PARTIAL) || fz_chance(r, 60)) {
            fz_ty b = fz_scalar(WEFT_BOOL);
            int c = prim2(g, WEFT_OP_NE, b, y, const_of(g, t, 0));
            if (fz_is_signed(t)) {
                /* also min `quot` -1 */
                c = prim2(g, WEFT_OP_AND, b, c,
                          prim2(g, WEFT_OP_NE, b, y, const_of(g, t, ~0ull)));
            }
            return fz_chance(r, 50)
                       ? cond(g, ty, c, q, gen_exp(g, ty, depth - 1, true))
                       : cond(g, ty, prim1(g, WEFT_OP_NOT, b, c),
                              gen_exp(g, ty, depth - 1, true), q);
        }
        return q;
    }
    weft_op op = num_ops[fz_below(r, 8)];
    int a = gen_exp(g, ty, depth - 1, exact);
    if (op == WEFT_OP_NEG || op == WEFT_OP_ABS || op == WEFT_OP_SIGNUM) {
        return prim1(g, op, ty, a);
    }
    return prim2(g, op, ty, a, gen_exp(g, ty, depth - 1, exact));
}

/* A conversion into scalar type t from some other scalar type. */
static int gen_convert(gen *g, weft_type t, int depth)
{
    fz_rng *r = &g->r;
    fz_ty ty = fz_scalar(t);
    fz_ty b = fz_scalar(WEFT_BOOL);
    int choice = fz_below(r, 3);
    if (choice == 0 && t != WEFT_BOOL) {
        /* bit-cast from the other type of this size */
        static const weft_type same8[] = {WEFT_I8, WEFT_U8};
        static const weft_type same16[] = {WEFT_I16, WEFT_U16, WEFT_F16};
        static const weft_type same32[] = {WEFT_I32, WEFT_U32, WEFT_F32};
        static const weft_type same64[] = {WEFT_I64, WEFT_U64, WEFT_F64};
        const weft_type *s;
        int n;
        switch (fz_bits(t)) {
        case 8:
            s = same8;
            n = 2;
            break;
        case 16:
            s = same16;
            n = HAS(F16) ? 3 : 2;
            break;
        case 32:
            s = same32;
            n = 3;
            break;
        default:
            s = same64;
            n = 3;
            break;
        }
        weft_type from = s[fz_below(r, n)];
        fz_node m = blank();
        m.op = E_PRIMT;
        m.aux = WEFT_OP_BITCAST;
        m.ty = ty;
        return add(g, m, 1,
                   (int[]){gen_exp(g, fz_scalar(from), depth - 1, true)});
    }
    if (fz_is_int(t) && fz_chance(r, 50)) {
        /* from a float: floor, ceiling, round, truncate or convert */
        static const weft_op ops[] = {WEFT_OP_FLOOR, WEFT_OP_CEILING,
                                      WEFT_OP_ROUND, WEFT_OP_TRUNCATE,
                                      WEFT_OP_CONVERT};
        weft_type ft = rand_float_type(g);
        fz_ty fty = fz_scalar(ft);
        int x = gen_exp(g, fty, depth - 1, true);
        fz_node m = blank();
        m.op = E_PRIMT;
        m.aux = ops[fz_below(r, 5)];
        m.ty = ty;
        int k = add(g, m, 1, (int[]){x});
        g->p->node[k].partial = true;
        if (!HAS(PARTIAL) || fz_chance(r, 70)) {
            double lo = fz_is_signed(t) ? -100 : 0, hi = 100;
            int c = prim2(g, WEFT_OP_AND, b,
                          prim2(g, WEFT_OP_GE, b, x, const_f(g, ft, lo)),
                          prim2(g, WEFT_OP_LT, b, x, const_f(g, ft, hi)));
            return cond(g, ty, c, k, gen_exp(g, ty, depth - 1, true));
        }
        return k;
    }
    weft_type from = rand_scalar(g);
    if (fz_is_float(from) && !fz_is_float(t) && t != WEFT_BOOL) {
        from = rand_int_type(g);
    }
    fz_node m = blank();
    m.op = E_PRIMT;
    m.aux = WEFT_OP_CONVERT;
    m.ty = ty;
    bool ex = !fz_is_float(t) || !fz_is_float(from);
    return add(g, m, 1, (int[]){gen_exp(g, fz_scalar(from), depth - 1, ex)});
}

/* A partial operation on the right of && or ||, guarded by the left:
 *   i >= 0 && i < size a && a !! i `cmp` y      (or the || dual)
 *   y /= 0 && x `quot` y `cmp` z */
static int gen_short_circuit(gen *g, int depth)
{
    fz_ty b = fz_scalar(WEFT_BOOL), i64 = fz_scalar(WEFT_I64);
    fz_rng *r = &g->r;
    int guard, partial;
    if (fz_chance(r, 50)) {
        fz_ty et = fz_scalar(rand_scalar(g));
        int a = acc_for_index(g, et, 1 + fz_below(r, 2), depth - 1);
        int i = gen_exp(g, i64, depth - 1, true);
        guard = prim2(g, WEFT_OP_AND, b, prim2(g, WEFT_OP_GE, b, i, i64c(g, 0)),
                      prim2(g, WEFT_OP_LT, b, i, mk1(g, E_SIZE, i64, a)));
        int x = mk2(g, E_AT_LIN, et, a, i);
        partial = prim2(g, cmp_ops[fz_below(r, 6)], b, x,
                        gen_exp(g, et, depth - 1, true));
    } else {
        weft_type t = rand_int_type(g);
        fz_ty ty = fz_scalar(t);
        int y = gen_exp(g, ty, depth - 1, true);
        guard = prim2(g, WEFT_OP_NE, b, y, const_of(g, t, 0));
        if (fz_is_signed(t)) {
            guard = prim2(g, WEFT_OP_AND, b, guard,
                          prim2(g, WEFT_OP_NE, b, y, const_of(g, t, ~0ull)));
        }
        static const weft_op divs[] = {WEFT_OP_QUOT, WEFT_OP_REM, WEFT_OP_IDIV,
                                       WEFT_OP_MOD};
        int q = prim2(g, divs[fz_below(r, 4)], ty,
                      gen_exp(g, ty, depth - 1, true), y);
        g->p->node[q].partial = true;
        partial = prim2(g, cmp_ops[fz_below(r, 6)], b, q,
                        gen_exp(g, ty, depth - 1, true));
    }
    if (fz_chance(r, 50)) {
        return prim2(g, WEFT_OP_AND, b, guard, partial);
    }
    return prim2(g, WEFT_OP_OR, b, prim1(g, WEFT_OP_NOT, b, guard), partial);
}

static int gen_bool(gen *g, int depth)
{
    fz_ty b = fz_scalar(WEFT_BOOL);
    fz_rng *r = &g->r;
    if (fz_chance(r, 12)) {
        return gen_short_circuit(g, depth);
    }
    switch (fz_below(r, 6)) {
    case 0:
    case 1: {
        fz_ty t = fz_scalar(rand_scalar(g));
        return prim2(g, cmp_ops[fz_below(r, 6)], b,
                     gen_exp(g, t, depth - 1, true),
                     gen_exp(g, t, depth - 1, true));
    }
    case 2: {
        weft_op op = fz_chance(r, 50) ? WEFT_OP_AND : WEFT_OP_OR;
        return prim2(g, op, b, gen_exp(g, b, depth - 1, true),
                     gen_exp(g, b, depth - 1, true));
    }
    case 3: return prim1(g, WEFT_OP_NOT, b, gen_exp(g, b, depth - 1, true));
    case 4: {
        fz_ty t = fz_scalar(rand_float_type(g));
        return prim1(g, fz_chance(r, 50) ? WEFT_OP_ISNAN : WEFT_OP_ISINF, b,
                     gen_exp(g, t, depth - 1, true));
    }
    default: {
        static const weft_op ops[] = {WEFT_OP_BAND, WEFT_OP_BOR, WEFT_OP_BXOR,
                                      WEFT_OP_MIN, WEFT_OP_MAX};
        return prim2(g, ops[fz_below(r, 5)], b, gen_exp(g, b, depth - 1, true),
                     gen_exp(g, b, depth - 1, true));
    }
    }
}

static int gen_i64_special(gen *g, int depth)
{
    fz_ty i64 = fz_scalar(WEFT_I64);
    int rank = 1 + fz_below(&g->r, 3);
    fz_ty et = fz_scalar(rand_scalar(g));
    switch (fz_below(&g->r, 4)) {
    case 0: return mk1(g, E_SIZE, i64, acc_for_index(g, et, rank, depth - 1));
    case 1:
        return mk1(g, E_SHAPE_SIZE, i64,
                   gen_exp(g, fz_dim(rank), depth - 1, true));
    case 2: {
        int a = acc_for_index(g, et, rank, depth - 1);
        int sh = mk1(g, E_SHAPE, fz_dim(rank), a);
        return mk2(g, E_TO_INDEX, i64, sh,
                   gen_exp(g, fz_dim(rank), depth - 1, true));
    }
    default: {
        int ix = gen_exp(g, fz_dim(rank), depth - 1, true);
        fz_node m = blank();
        m.op = E_GET;
        m.aux = fz_below(&g->r, rank);
        m.ty = i64;
        return add(g, m, 1, (int[]){ix});
    }
    }
}

static int gen_dim(gen *g, fz_ty ty, int depth)
{
    int rank = ty.n;
    switch (fz_below(&g->r, 4)) {
    case 0: {
        fz_ty et = fz_scalar(rand_scalar(g));
        return mk1(g, E_SHAPE, ty, acc_for_index(g, et, rank, depth - 1));
    }
    case 1:
        if (rank > 0) {
            int sh = gen_exp(g, ty, depth - 1, true);
            return mk2(g, E_FROM_INDEX, ty, sh,
                       gen_exp(g, fz_scalar(WEFT_I64), depth - 1, true));
        }
        /* fall through */
    default: {
        int k[3];
        for (int i = 0; i < rank; i++) {
            k[i] = gen_exp(g, fz_scalar(WEFT_I64), depth - 1, true);
        }
        return mk(g, E_INDEX, ty, rank, k);
    }
    }
}

static int gen_exp(gen *g, fz_ty ty, int depth, bool exact)
{
    fz_rng *r = &g->r;
    if (!fz_ty_has_float(ty)) {
        exact = true;
    }
    if (depth <= 0 || g->budget <= 0 || g->p->n > FZ_MAXNODES - 64) {
        return gen_leaf(g, ty, exact);
    }
    int roll = fz_below(r, 100);
    if (roll < 22) {
        return gen_leaf(g, ty, exact);
    }
    if (roll < 30) {
        int c = gen_exp(g, fz_scalar(WEFT_BOOL), depth - 1, true);
        return cond(g, ty, c, gen_exp(g, ty, depth - 1, exact),
                    gen_exp(g, ty, depth - 1, exact));
    }
    if (roll < 37 && ty.kind != FZ_DIMT) {
        return gen_index_into(g, ty, depth);
    }
    if (ty.kind == FZ_DIMT) {
        return gen_dim(g, ty, depth);
    }
    if (ty.kind == FZ_TUPLE) {
        int k[FZ_MAXT];
        for (int i = 0; i < ty.n; i++) {
            k[i] = gen_exp(g, fz_scalar(ty.s[i]), depth - 1, exact);
        }
        return mk(g, E_TUPLE, ty, ty.n, k);
    }
    weft_type t = ty.s[0];
    if (roll < 40 && HAS(WHILE)) {
        return gen_while(g, ty, depth, exact);
    }
    if (roll < 42) {
        /* apply a function to arguments: lets of the arguments */
        int na = 1 + fz_below(r, 2);
        fz_ty at[2] = {fz_scalar(rand_scalar(g)), fz_scalar(rand_scalar(g))};
        int args[2];
        bool inex[2];
        for (int i = 0; i < na; i++) {
            args[i] = gen_exp(g, at[i], depth - 1, exact);
            inex[i] = g->p->node[args[i]].inexact;
        }
        int f = fun_open(g, na, (int[]){1, 1}, at, inex);
        if (f < 0) {
            return gen_const(g, ty);
        }
        fun_close(g, f, gen_exp(g, ty, depth - 1, exact));
        return mk(g, E_APPLY, ty, na + 1, (int[]){f, args[0], args[1]});
    }
    if (roll < 44 && HAS(TUPLES)) {
        /* a component of a tuple */
        fz_ty tt = {FZ_TUPLE, 2, {t, rand_scalar(g), 0}};
        int i = 0;
        if (fz_chance(r, 50)) {
            tt.s[0] = tt.s[1];
            tt.s[1] = t;
            i = 1;
        }
        fz_node m = blank();
        m.op = E_GET;
        m.aux = i;
        m.ty = ty;
        return add(g, m, 1, (int[]){gen_exp(g, tt, depth - 1, exact)});
    }
    if (roll < 55) {
        return gen_convert(g, t, depth);
    }
    if (t == WEFT_I64 && roll < 62) {
        return gen_i64_special(g, depth);
    }
    if (t == WEFT_I32 && roll < 68) {
        static const weft_op ops[] = {WEFT_OP_POPCOUNT, WEFT_OP_CLZ,
                                      WEFT_OP_CTZ};
        return prim1(g, ops[fz_below(r, 3)], ty,
                     gen_exp(g, fz_scalar(rand_int_type(g)), depth - 1, true));
    }
    if (t == WEFT_BOOL) {
        return gen_bool(g, depth);
    }
    return gen_arith(g, t, depth, exact);
}

/* ------------------------------------------------------------------------
 * Array terms
 * ---------------------------------------------------------------------- */

static int64_t rand_extent(gen *g)
{
    int k = fz_below(&g->r, 100);
    if (k < 5) {
        return 0;
    }
    if (k < 20) {
        return 1;
    }
    if (k < 80) {
        return 2 + fz_below(&g->r, 6);
    }
    return 8 + fz_below(&g->r, 10);
}

static void set_shape(fz_node *n, int rank, const int64_t *sh)
{
    n->rank = rank;
    n->shk = sh != NULL;
    for (int d = 0; d < rank && sh; d++) {
        n->sh[d] = sh[d];
    }
}

static int gen_use(gen *g, fz_ty ty, int rank, const int64_t *want)
{
    fz_node n = blank();
    n.op = A_USE;
    n.ty = ty;
    n.rank = rank;
    n.shk = true;
    int64_t size = 1;
    /* big: past the CPU gang's grain and the GPU's block, so that the
     * multi-phase skeletons (fold, scan, permute) run all their phases */
    bool big = HAS(BIG) && fz_chance(&g->r, 8);
    for (int d = 0; d < rank; d++) {
        n.sh[d] = want ? want[d] : rand_extent(g);
        if (big && !want) {
            n.sh[d] = rank == 1   ? 500 + fz_below(&g->r, 20000)
                      : rank == 2 ? 10 + fz_below(&g->r, 150)
                                  : 3 + fz_below(&g->r, 25);
        }
        size *= n.sh[d];
    }
    int edge = fz_chance(&g->r, 30) ? 10 : 1;
    for (int l = 0; l < fz_ty_leaves(ty); l++) {
        weft_type lt = fz_ty_leaf(ty, l);
        size_t es = fz_size(lt);
        unsigned char *d = malloc(size * es + 1);
        for (int64_t i = 0; i < size; i++) {
            uint64_t v = rand_value(g, lt, edge);
            memcpy(d + i * es, &v, es);
        }
        n.data[l] = d;
    }
    n.aux = HAS(PARAM) && g->nparam < 8 && fz_chance(&g->r, 25);
    g->nparam += n.aux;
    /* floats read from data are exact */
    n.scope = -1;
    g->budget--;
    int id = fz_node_add(g->p, n);
    return id < 0 ? 0 : id;
}

static int mka(gen *g, fz_op op, fz_ty ty, int rank, const int64_t *sh, int nk,
               const int *k)
{
    fz_node n = blank();
    n.op = op;
    n.ty = ty;
    set_shape(&n, rank, sh);
    int id = add(g, n, nk, k);
    /* an array's scope is the innermost array function */
    int s = -1;
    for (int i = 0; i < g->nstk; i++) {
        if (g->p->node[g->stk[i]].op == F_AFUN) {
            s = g->stk[i];
        }
    }
    g->p->node[id].scope = s;
    g->p->node[id].partial = false;
    return id;
}

static const int64_t *shape_of(gen *g, int a)
{
    return g->p->node[a].shk ? g->p->node[a].sh : NULL;
}

/* An index expression (type DIM(rank)) that is a constant shape: sh. */
static int shape_const(gen *g, int rank, const int64_t *sh)
{
    int k[3];
    for (int i = 0; i < rank; i++) {
        k[i] = i64c(g, sh[i]);
    }
    return mk(g, E_INDEX, fz_dim(rank), rank, k);
}

/* The extent of the result for generate / backpermute: a constant, or the
 * shape of another array. */
static int gen_extent_exp(gen *g, int rank, int64_t *sh, bool *shk, int depth)
{
    if (fz_chance(&g->r, 30)) {
        fz_ty et = fz_scalar(rand_scalar(g));
        int a = pick_existing_acc(g, et, rank);
        if (a < 0) {
            a = gen_acc(g, et, rank, depth - 1);
        }
        *shk = g->p->node[a].shk;
        memcpy(sh, g->p->node[a].sh, sizeof(int64_t) * 3);
        return mk1(g, E_SHAPE, fz_dim(rank), a);
    }
    for (int d = 0; d < rank; d++) {
        sh[d] = rand_extent(g);
    }
    *shk = true;
    return shape_const(g, rank, sh);
}

/* An index function DIM(rin) -> DIM(rank of a) that lands inside a (by mod
 * of its extents), or anywhere (partial). */
static int gen_ixfun(gen *g, int rin, int a, bool allow_ignore, int rout)
{
    fz_ty din = fz_dim(rin), i64 = fz_scalar(WEFT_I64),
          b = fz_scalar(WEFT_BOOL);
    int f = fun_open(g, 1, (int[]){1}, &din, (bool[]){false});
    if (f < 0) {
        return 0;
    }
    bool safe = !HAS(PARTIAL) || fz_chance(&g->r, 85);
    int sh = mk1(g, E_SHAPE, fz_dim(rout), a);
    int comps[3] = {0, 0, 0};
    for (int k = 0; k < rout; k++) {
        int e;
        if (rin > 0 && fz_chance(&g->r, 60)) {
            /* an affine function of a component of the argument */
            int c = f + 2 + fz_below(&g->r, rin);
            e = c;
            if (fz_chance(&g->r, 50)) {
                e = prim2(g, WEFT_OP_ADD, i64,
                          prim2(g, WEFT_OP_MUL, i64, c,
                                i64c(g, fz_below(&g->r, 5) - 2)),
                          i64c(g, fz_below(&g->r, 7) - 3));
            }
        } else {
            e = gen_exp(g, i64, 2, true);
        }
        if (safe) {
            fz_node m = blank();
            m.op = E_GET;
            m.aux = k;
            m.ty = i64;
            e = prim2(g, WEFT_OP_MOD, i64, e, add(g, m, 1, (int[]){sh}));
        }
        comps[k] = e;
    }
    int ix = mk(g, E_INDEX, fz_dim(rout), rout, comps);
    if (allow_ignore) {
        fz_node ig = blank();
        ig.op = E_IGNORE;
        ig.ty = fz_dim(rout);
        int ign = add(g, ig, 0, NULL);
        int c =
            safe ? prim2(g, WEFT_OP_GT, b, mk1(g, E_SIZE, i64, a), i64c(g, 0))
                 : gen_exp(g, b, 2, true);
        if (fz_chance(&g->r, 40)) {
            c = prim2(g, WEFT_OP_AND, b, c, gen_exp(g, b, 2, true));
        }
        ix = cond(g, fz_dim(rout), c, ix, ign);
    }
    return fun_close(g, f, ix);
}

static int gen_stencil(gen *g, fz_ty ty, int rank, int depth, bool two)
{
    if (rank < 1 || rank > 3) {
        return -1;
    }
    int win[2][3], n[2] = {1, 1}, arr[2], bk[2], bv[2] = {-1, -1};
    fz_ty et[2];
    for (int s = 0; s < (two ? 2 : 1); s++) {
        for (int d = 0; d < rank; d++) {
            win[s][d] = rank == 1   ? 3 + 2 * fz_below(&g->r, 4)
                        : rank == 2 ? 3 + 2 * fz_below(&g->r, 2)
                                    : 3;
            n[s] *= win[s][d];
        }
        et[s] = fz_chance(&g->r, 50) ? ty : rand_ty(g);
        arr[s] = gen_acc(g, et[s], rank, depth - 1);
        bk[s] = fz_below(&g->r, 4);
        if (bk[s] == WEFT_BOUNDARY_CONSTANT) {
            bv[s] = gen_const(g, et[s]);
        }
    }
    int nargs = n[0] + (two ? n[1] : 0);
    bool inex[2] = {g->p->node[arr[0]].inexact,
                    two ? g->p->node[arr[1]].inexact : false};
    int f = fun_open(g, two ? 2 : 1, (int[]){n[0], n[1]}, et, inex);
    if (f < 0) {
        return -1;
    }
    (void)nargs;
    int body = gen_exp(g, ty, 3, false);
    if (fz_chance(&g->r, 50) && ty.kind == FZ_SCALAR && ty.s[0] != WEFT_BOOL &&
        fz_ty_eq(et[0], ty)) {
        /* a plain sum of a few window elements */
        for (int i = 0; i < 3; i++) {
            int a = f + 1 + fz_below(&g->r, n[0]);
            while (g->p->node[a].op != E_ARG) {
                a--;
            }
            body = prim2(g, WEFT_OP_ADD, ty, body, a);
        }
    }
    fun_close(g, f, body);
    int64_t sh[3];
    bool shk = g->p->node[arr[0]].shk && (!two || g->p->node[arr[1]].shk);
    for (int d = 0; d < rank && shk; d++) {
        sh[d] = g->p->node[arr[0]].sh[d];
        if (two && g->p->node[arr[1]].sh[d] < sh[d]) {
            sh[d] = g->p->node[arr[1]].sh[d];
        }
    }
    int k[5], nk = 0;
    k[nk++] = f;
    k[nk++] = arr[0];
    if (two) {
        k[nk++] = arr[1];
    }
    /* constant boundaries: kids after the arrays, -1 marks none */
    fz_node nn = blank();
    nn.op = two ? A_STENCIL2 : A_STENCIL;
    nn.ty = ty;
    set_shape(&nn, rank, shk ? sh : NULL);
    nn.aux = bk[0];
    nn.aux2 = two ? bk[1] : 0;
    memcpy(nn.win, win[0], sizeof nn.win);
    memcpy(nn.win2, win[1], sizeof nn.win2);
    if (bv[0] >= 0) {
        k[nk++] = bv[0];
    }
    if (two && bv[1] >= 0) {
        k[nk++] = bv[1];
    }
    int id = add(g, nn, nk, k);
    g->p->node[id].partial = false;
    int s = -1;
    for (int i = 0; i < g->nstk; i++) {
        if (g->p->node[g->stk[i]].op == F_AFUN) {
            s = g->stk[i];
        }
    }
    g->p->node[id].scope = s;
    return id;
}

/* Segment lengths for an innermost extent n (unknown: n < 0). */
/* A segment descriptor for rows of n elements (-1: not known): lengths,
 * or (offsets) the offsets of such lengths from a start within what they
 * leave of the row (n + 1 entries; none at times); a bad length becomes a
 * decrease or an offset past the row. */
static int gen_segments(gen *g, int64_t n, bool nonempty, bool offsets)
{
    fz_node s = blank();
    s.op = A_USE;
    weft_type t = rand_int_type(g);
    if (offsets && fz_bits(t) < 32 && (fz_bits(t) == 8 || n > 30000)) {
        t = WEFT_I32; /* offsets reach n */
    }
    s.ty = fz_scalar(t);
    s.rank = 1;
    s.shk = true;
    /* few short segments; for a long row, up to 60 of mixed lengths (the
     * GPU gives a short segment a warp and a long one a block) */
    int64_t lens[64];
    int k = 0;
    int64_t left = n < 0 ? 4 : n;
    int want = fz_below(&g->r, 6);
    int64_t most = 6;
    if (n > 64 && fz_chance(&g->r, 70)) {
        want = 1 + fz_below(&g->r, 60);
        most = 2 * n / want + 1;
    }
    while (k < want && k < 62) {
        int64_t cap = left < most ? left : most;
        int64_t l =
            left > 0 ? (int64_t)(fz_next(&g->r) % (uint64_t)(cap + 1)) : 0;
        if (nonempty && l == 0) {
            if (left == 0) {
                break;
            }
            l = 1;
        }
        if (fz_bits(t) == 8 && l > 100) {
            l = 100;
        }
        lens[k++] = l;
        left -= l;
    }
    if (HAS(PARTIAL) && fz_chance(&g->r, 5)) {
        lens[k++] = fz_chance(&g->r, 50) ? 1000 : -1; /* bad */
    }
    if (offsets) {
        /* lens[0 .. k] become offsets from a start in [0, left] */
        int64_t at =
            left > 0 ? (int64_t)(fz_next(&g->r) % (uint64_t)(left + 1)) : 0;
        for (int i = 0; i <= k; i++) {
            int64_t l = i < k ? lens[i] : 0;
            lens[i] = at;
            at += l;
        }
        k = k == 0 && fz_chance(&g->r, 30) ? 0 : k + 1;
    }
    s.sh[0] = k;
    size_t es = fz_size(t);
    unsigned char *d = malloc((size_t)k * es + 1);
    for (int i = 0; i < k; i++) {
        memcpy(d + i * es, &lens[i], es);
    }
    s.data[0] = d;
    g->budget--;
    int id = fz_node_add(g->p, s);
    return id < 0 ? 0 : id;
}

/* The awhile: state (unit counter, x); at most K steps. */
static int gen_awhile(gen *g, fz_ty ty, int rank, int depth)
{
    fz_ty i32 = fz_scalar(WEFT_I32), b = fz_scalar(WEFT_BOOL);
    int x0 = gen_acc(g, ty, rank, depth - 1);
    int cnt0 =
        mka(g, A_UNIT, i32, 0, NULL, 1, (int[]){const_of(g, WEFT_I32, 0)});
    fz_node t = blank();
    t.op = A_ATUPLE;
    t.ty = ty;
    t.rank = rank;
    int init = add(g, t, 2, (int[]){cnt0, x0});
    g->p->node[init].arity = 2;
    g->p->node[init].scope = ascope(g);
    int K = fz_below(&g->r, 4);
    int afun[2];
    for (int which = 0; which < 2; which++) {
        fz_node af = blank();
        af.op = F_AFUN;
        af.scope = top_scope(g);
        int f = fz_node_add(g->p, af);
        if (f < 0) {
            return x0;
        }
        g->stk[g->nstk++] = f;
        fz_node arg = blank();
        arg.op = A_AARG;
        arg.aux = f;
        arg.ty = ty;
        arg.rank = rank;
        arg.arity = 2;
        int a = fz_node_add(g->p, arg);
        g->p->node[a].scope = f;
        /* the state after some steps: inexact whenever it holds floats */
        g->p->node[a].inexact =
            g->p->node[x0].inexact || (HAS(INEXACT) && fz_ty_has_float(ty));
        fz_node gc = blank();
        gc.op = A_AGET;
        gc.aux = 0;
        gc.ty = i32;
        gc.rank = 0;
        int c = fz_node_add(g->p, gc);
        g->p->node[c].kid[0] = a;
        g->p->node[c].nkid = 1;
        g->p->node[c].scope = f;
        int counter = mk1(g, E_THE, i32, c);
        fz_node gx = blank();
        gx.op = A_AGET;
        gx.aux = 1;
        gx.ty = ty;
        int x = mka(g, A_AGET, ty, rank, shape_of(g, x0), 1, (int[]){a});
        g->p->node[x].aux = 1;
        (void)gx;
        int body;
        if (which == 0) {
            int e = prim2(g, WEFT_OP_LT, b, counter,
                          const_of(g, WEFT_I32, (uint64_t)K));
            if (fz_chance(&g->r, 40)) {
                e = prim2(g, WEFT_OP_AND, b, e, gen_exp(g, b, 2, true));
            }
            body = mka(g, A_UNIT, b, 0, NULL, 1, (int[]){e});
        } else {
            int step;
            int roll = fz_below(&g->r, 3);
            if (roll == 0) {
                int fn = gen_fun(g, 1, ty, g->p->node[x].inexact, ty, 3, false);
                step =
                    mka(g, A_MAP, ty, rank, shape_of(g, x), 2, (int[]){fn, x});
            } else if (roll == 1 && rank > 0 && HAS(SCAN)) {
                int fn = gen_combine(g, ty);
                step =
                    mka(g, A_SCAN, ty, rank, shape_of(g, x), 2, (int[]){fn, x});
                g->p->node[step].aux =
                    fz_chance(&g->r, 50) ? FZ_SCANL1 : FZ_SCANR1;
            } else {
                step = gen_acc(g, ty, rank, depth - 1);
            }
            int next = mka(g, A_UNIT, i32, 0, NULL, 1,
                           (int[]){prim2(g, WEFT_OP_ADD, i32, counter,
                                         const_of(g, WEFT_I32, 1))});
            fz_node tt = blank();
            tt.op = A_ATUPLE;
            tt.ty = ty;
            tt.rank = rank;
            body = add(g, tt, 2, (int[]){next, step});
            g->p->node[body].arity = 2;
            g->p->node[body].scope = f;
        }
        g->nstk--;
        g->p->node[f].inexact = g->p->node[body].inexact;
        g->p->node[f].unordered = g->p->node[body].unordered;
        g->p->node[f].kid[0] = body;
        g->p->node[f].kid[1] = init;
        g->p->node[f].nkid = 2;
        afun[which] = f;
    }
    fz_node w = blank();
    w.op = A_AWHILE;
    w.ty = ty;
    w.rank = rank;
    int aw = add(g, w, 3, (int[]){afun[0], afun[1], init});
    g->p->node[aw].arity = 2;
    g->p->node[aw].scope = ascope(g);
    int r = mka(g, A_AGET, ty, rank, NULL, 1, (int[]){aw});
    g->p->node[r].aux = 1;
    return r;
}

/* The generator's array operations, each a choice of gen_acc with its
 * weight (its share of the draws; the weights' order is the draws', so
 * that a seed gives the program it gave before).  A choice makes a node
 * of type ty and rank `rank`, or returns RETRY when it cannot (a feature
 * off, a rank it does not take), and gen_acc draws again. */
#define RETRY (-2)

static int choose_use(gen *g, fz_ty ty, int rank, int depth)
{
    (void)depth;
    return gen_use(g, ty, rank, NULL);
}

static int choose_unit(gen *g, fz_ty ty, int rank, int depth)
{
    (void)depth;
    if (rank == 0) {
        return mka(g, A_UNIT, ty, 0, NULL, 1,
                   (int[]){gen_exp(g, ty, 3, false)});
    }
    return RETRY;
}

static int choose_generate(gen *g, fz_ty ty, int rank, int depth)
{
    int64_t sh[3];
    bool shk;
    int e = gen_extent_exp(g, rank, sh, &shk, depth);
    int f = gen_fun(g, 1, fz_dim(rank), false, ty, 4, false);
    return mka(g, A_GENERATE, ty, rank, shk ? sh : NULL, 2, (int[]){e, f});
}

static int choose_map(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    fz_ty st = fz_chance(r, 50) ? ty : rand_ty(g);
    int s = gen_acc(g, st, rank, depth - 1);
    int f = gen_fun(g, 1, st, g->p->node[s].inexact, ty, 4, false);
    return mka(g, A_MAP, ty, rank, shape_of(g, s), 2, (int[]){f, s});
}

static int choose_zip(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    bool three = fz_chance(r, 25);
    fz_ty st[3];
    int s[3];
    bool inex[3];
    int64_t sh[3];
    bool shk = true;
    for (int i = 0; i < (three ? 3 : 2); i++) {
        st[i] = fz_chance(r, 50) ? ty : rand_ty(g);
        s[i] = gen_acc(g, st[i], rank, depth - 1);
        inex[i] = g->p->node[s[i]].inexact;
        shk &= g->p->node[s[i]].shk;
        for (int d = 0; d < rank && shk; d++) {
            int64_t x = g->p->node[s[i]].sh[d];
            sh[d] = i == 0 || x < sh[d] ? x : sh[d];
        }
    }
    int f = fun_open(g, three ? 3 : 2, (int[]){1, 1, 1}, st, inex);
    if (f < 0) {
        return RETRY;
    }
    fun_close(g, f, gen_exp(g, ty, 4, false));
    return three ? mka(g, A_ZIP3, ty, rank, shk ? sh : NULL, 4,
                       (int[]){f, s[0], s[1], s[2]})
                 : mka(g, A_ZIP, ty, rank, shk ? sh : NULL, 3,
                       (int[]){f, s[0], s[1]});
}

static int choose_reshape(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    if (HAS(SHAPEOPS)) {
        /* reshape a known-shape array to rank `rank` */
        int rs = fz_below(r, 4);
        int s = gen_acc(g, ty, rs, depth - 1);
        if (!g->p->node[s].shk) {
            return RETRY;
        }
        int64_t n = 1;
        for (int d = 0; d < rs; d++) {
            n *= g->p->node[s].sh[d];
        }
        if (rank == 0 && n != 1) {
            return RETRY;
        }
        int64_t sh[3] = {1, 1, 1};
        if (rank > 0) {
            sh[fz_below(r, rank)] = n;
            if (rank >= 2 && n % 2 == 0 && n > 0 && fz_chance(r, 50)) {
                int d0 = fz_below(r, rank), d1 = (d0 + 1) % rank;
                sh[0] = sh[1] = sh[2] = 1;
                sh[d0] = 2;
                sh[d1] = n / 2;
            }
        }
        if (HAS(PARTIAL) && rank > 0 && fz_chance(r, 4)) {
            sh[0] += 1; /* a reshape to another size: an error */
        }
        int e = shape_const(g, rank, sh);
        return mka(g, A_RESHAPE, ty, rank, sh, 2, (int[]){e, s});
    }
    return RETRY;
}

static int choose_replicate(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    if (HAS(SHAPEOPS) && rank > 0) {
        /* replicate: rank-ra array plus (rank - ra) new dims */
        int ra = fz_below(r, rank + 1);
        int s = gen_acc(g, ty, ra, depth - 1);
        int k[FZ_MAXK], nk = 0;
        k[nk++] = s;
        int mask = 0, placed = 0;
        int64_t sh[3];
        bool shk = g->p->node[s].shk;
        for (int d = 0; d < rank; d++) {
            bool all =
                placed < ra && (rank - d == ra - placed || fz_chance(r, 50));
            if (all) {
                mask |= 1 << d;
                sh[d] = g->p->node[s].sh[placed++];
            } else {
                sh[d] = fz_below(r, 4);
                k[nk++] = i64c(g, sh[d]);
            }
        }
        int id = mka(g, A_REPLICATE, ty, rank, shk ? sh : NULL, nk, k);
        g->p->node[id].aux = mask;
        g->p->node[id].aux2 = rank;
        return id;
    }
    return RETRY;
}

static int choose_slice(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    if (HAS(SHAPEOPS) && rank < 3) {
        int rs = rank + 1 + fz_below(r, 3 - rank);
        int s = gen_acc(g, ty, rs, depth - 1);
        int k[FZ_MAXK], nk = 0;
        k[nk++] = s;
        int fixed = rs - rank, mask = 0;
        int64_t sh[3];
        int nd = 0;
        bool shk = g->p->node[s].shk;
        for (int d = 0; d < rs; d++) {
            bool fix = fixed > 0 && (rs - d == fixed || fz_chance(r, 50));
            if (fix) {
                fixed--;
                int64_t ext = shk ? g->p->node[s].sh[d] : 1;
                int64_t i = ext > 0 ? fz_below(r, (int)ext) : 0;
                if (HAS(PARTIAL) && fz_chance(r, 3)) {
                    i = ext;
                }
                k[nk++] = i64c(g, i);
            } else {
                mask |= 1 << d;
                sh[nd++] = shk ? g->p->node[s].sh[d] : 0;
            }
        }
        int id = mka(g, A_SLICE, ty, rank, shk ? sh : NULL, nk, k);
        g->p->node[id].aux = mask;
        g->p->node[id].aux2 = rs;
        return id;
    }
    return RETRY;
}

static int choose_backpermute(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    /* backpermute / transform */
    int ra = fz_below(r, 4);
    bool tr = fz_chance(r, 40);
    fz_ty st = tr ? rand_ty(g) : ty;
    int s = gen_acc(g, st, ra, depth - 1);
    int64_t sh[3];
    bool shk;
    int e = gen_extent_exp(g, rank, sh, &shk, depth);
    int ixf = gen_ixfun(g, rank, s, false, ra);
    if (tr) {
        int f = gen_fun(g, 1, st, g->p->node[s].inexact, ty, 3, false);
        return mka(g, A_TRANSFORM, ty, rank, shk ? sh : NULL, 4,
                   (int[]){e, ixf, f, s});
    }
    return mka(g, A_BACKPERMUTE, ty, rank, shk ? sh : NULL, 3,
               (int[]){e, ixf, s});
}

static int choose_fold(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    if (HAS(FOLD)) {
        /* fold, fold1 (rank <= 2), fold_all, fold1_all (rank 0),
         * fold_seg, fold1_seg (rank >= 1) */
        int cands[6], nc = 0;
        for (int k = 0; k < 6; k++) {
            bool ok = k <= 1   ? rank <= 2
                      : k <= 3 ? rank == 0
                               : rank >= 1 && HAS(SEG);
            if (ok) {
                cands[nc++] = k;
            }
        }
        int kind = cands[fz_below(r, nc)];
        int f = gen_combine(g, ty);
        bool one = kind & 1;
        int z = one ? -1 : gen_exp(g, ty, 2, false);
        int rs = kind <= 1 ? rank + 1 : kind <= 3 ? fz_below(r, 4) : rank;
        int s = gen_acc(g, ty, rs, depth - 1);
        const int64_t *ssh = shape_of(g, s);
        int64_t sh[3];
        int id;
        if (kind <= 1) {
            if (ssh) {
                memcpy(sh, ssh, sizeof sh);
            }
            id = one ? mka(g, A_FOLD1, ty, rank, ssh ? sh : NULL, 2,
                           (int[]){f, s})
                     : mka(g, A_FOLD, ty, rank, ssh ? sh : NULL, 3,
                           (int[]){f, z, s});
        } else if (kind <= 3) {
            id = one ? mka(g, A_FOLD1ALL, ty, 0, NULL, 2, (int[]){f, s})
                     : mka(g, A_FOLDALL, ty, 0, NULL, 3, (int[]){f, z, s});
        } else {
            int64_t n = ssh ? ssh[rank - 1] : -1;
            bool offs = fz_chance(r, 50);
            int seg = gen_segments(g, n, one, offs);
            int64_t nd = g->p->node[seg].sh[0];
            if (ssh) {
                memcpy(sh, ssh, sizeof sh);
                sh[rank - 1] = offs ? (nd > 0 ? nd - 1 : 0) : nd;
            }
            fz_op op1 = offs ? A_FOLD1SEGOFF : A_FOLD1SEG;
            fz_op op = offs ? A_FOLDSEGOFF : A_FOLDSEG;
            id = one ? mka(g, op1, ty, rank, ssh ? sh : NULL, 3,
                           (int[]){f, s, seg})
                     : mka(g, op, ty, rank, ssh ? sh : NULL, 4,
                           (int[]){f, z, s, seg});
        }
        g->p->node[id].inexact |= g->p->node[f].inexact;
        return id;
    }
    return RETRY;
}

static int choose_scan(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    if (HAS(SCAN) && (rank > 0 || fz_chance(r, 100))) {
        int kind = fz_below(r, 6);
        bool totals =
            (kind == FZ_SCANL_ || kind == FZ_SCANR_) && fz_chance(r, 40);
        if (rank == 0 && !totals) {
            if (rank + 1 > 3) {
                return RETRY;
            }
            kind = fz_chance(r, 50) ? FZ_SCANL_ : FZ_SCANR_;
            totals = true;
        }
        if (totals && rank == 3) {
            totals = false;
        }
        int rs = totals ? rank + 1 : rank;
        int f = gen_combine(g, ty);
        bool one = kind == FZ_SCANL1 || kind == FZ_SCANR1;
        int z = one ? -1 : gen_exp(g, ty, 2, false);
        int s = gen_acc(g, ty, rs, depth - 1);
        const int64_t *ssh = shape_of(g, s);
        int64_t sh[3];
        if (ssh) {
            memcpy(sh, ssh, sizeof sh);
            if (kind == FZ_SCANL || kind == FZ_SCANR) {
                sh[rs - 1]++;
            }
        }
        int k[3] = {f, z, s};
        int id;
        if (one) {
            k[1] = s;
        }
        bool pair = kind == FZ_SCANL_ || kind == FZ_SCANR_;
        id = mka(g, A_SCAN, ty, rs, ssh ? sh : NULL, one ? 2 : 3, k);
        g->p->node[id].aux = kind;
        g->p->node[id].inexact |= g->p->node[f].inexact;
        if (pair) {
            g->p->node[id].arity = 2;
            int gid = mka(g, A_AGET, ty, rank, ssh ? sh : NULL, 1, (int[]){id});
            g->p->node[gid].aux = totals ? 1 : 0;
            return gid;
        }
        return id;
    }
    return RETRY;
}

static int choose_permute(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    if (HAS(PERMUTE)) {
        int def = gen_acc(g, ty, rank, depth - 1);
        int rs = fz_below(r, 4);
        int src = gen_acc(g, ty, rs, depth - 1);
        int f = gen_combine(g, ty);
        int ixf = gen_ixfun(g, rs, def, true, rank);
        int id = mka(g, A_PERMUTE, ty, rank, shape_of(g, def), 4,
                     (int[]){f, def, ixf, src});
        g->p->node[id].inexact |= g->p->node[f].inexact;
        return id;
    }
    return RETRY;
}

static int choose_stencil(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    if (HAS(STENCIL) && rank >= 1) {
        int id = gen_stencil(g, ty, rank, depth, fz_chance(r, 30));
        if (id >= 0) {
            return id;
        }
    }
    return RETRY;
}

static int choose_acond(gen *g, fz_ty ty, int rank, int depth)
{
    if (HAS(ACOND)) {
        int c = gen_exp(g, fz_scalar(WEFT_BOOL), 3, true);
        int t = gen_acc(g, ty, rank, depth - 1);
        int e = gen_acc(g, ty, rank, depth - 1);
        bool same = g->p->node[t].shk && g->p->node[e].shk &&
                    memcmp(g->p->node[t].sh, g->p->node[e].sh,
                           sizeof(int64_t) * (size_t)rank) == 0;
        return mka(g, A_ACOND, ty, rank, same ? g->p->node[t].sh : NULL, 3,
                   (int[]){c, t, e});
    }
    return RETRY;
}

static int choose_awhile(gen *g, fz_ty ty, int rank, int depth)
{
    if (HAS(AWHILE)) {
        return gen_awhile(g, ty, rank, depth);
    }
    return RETRY;
}

static int choose_unit_maybe(gen *g, fz_ty ty, int rank, int depth)
{
    (void)depth;
    fz_rng *r = &g->r;
    if (rank == 0 && fz_chance(r, 50)) {
        return mka(g, A_UNIT, ty, 0, NULL, 1,
                   (int[]){gen_exp(g, ty, 3, false)});
    }
    return RETRY;
}

typedef struct choice {
    int weight;
    int (*make)(gen *g, fz_ty ty, int rank, int depth);
} choice;

static const choice choices[] = {
    {1, choose_use},        {1, choose_unit},  {2, choose_generate},
    {2, choose_map},        {2, choose_zip},   {1, choose_reshape},
    {1, choose_replicate},  {1, choose_slice}, {2, choose_backpermute},
    {2, choose_fold},       {2, choose_scan},  {2, choose_permute},
    {2, choose_stencil},    {1, choose_acond}, {1, choose_awhile},
    {1, choose_unit_maybe},
};
enum { NCHOICES = (int)(sizeof choices / sizeof choices[0]) };

static int gen_acc(gen *g, fz_ty ty, int rank, int depth)
{
    fz_rng *r = &g->r;
    int a;
    if (depth <= 0 || g->budget <= 0 || g->p->n > FZ_MAXNODES - 200) {
        if (fz_chance(r, 30) && (a = pick_existing_acc(g, ty, rank)) >= 0) {
            return a;
        }
        return gen_use(g, ty, rank, NULL);
    }
    if (fz_chance(r, 12) && (a = pick_existing_acc(g, ty, rank)) >= 0) {
        return a;
    }
    int total = 0;
    for (int c = 0; c < NCHOICES; c++) {
        total += choices[c].weight;
    }
    for (int tries = 0; tries < 20; tries++) {
        int pick = fz_below(r, total), c = 0;
        while (pick >= choices[c].weight) {
            pick -= choices[c++].weight;
        }
        if ((a = choices[c].make(g, ty, rank, depth)) != RETRY) {
            return a;
        }
    }
    return gen_use(g, ty, rank, NULL);
}

/* ------------------------------------------------------------------------
 * Programs
 * ---------------------------------------------------------------------- */

fz_prog *fz_generate(uint64_t seed, unsigned features, int size)
{
    gen g;
    memset(&g, 0, sizeof g);
    g.r.s = seed * 0x2545f4914f6cdd1dull + 0x1234567;
    fz_next(&g.r);
    g.p = fz_prog_new();
    g.p->seed = seed;
    g.p->features = features;
    g.feat = features;
    /* a few programs are tiny, most middling, a few large */
    int roll = fz_below(&g.r, 10);
    g.budget = roll < 2 ? size / 4 : roll < 9 ? size : size * 2;
    int nroot = 1 + (fz_chance(&g.r, 25) ? 1 + fz_below(&g.r, 2) : 0);
    for (int i = 0; i < nroot; i++) {
        fz_ty ty = rand_ty(&g);
        int rank = fz_below(&g.r, 4);
        int depth = 2 + fz_below(&g.r, 3);
        g.p->root[g.p->nroot++] = gen_acc(&g, ty, rank, depth);
    }
    /* now and then a result that is also used inside another, or a tuple
     * of arrays (scanl' whole, an awhile's state) */
    if (g.p->nroot < FZ_MAXROOTS && fz_chance(&g.r, 20)) {
        int cand[64], nc = 0;
        for (int i = 0; i < g.p->n && nc < 64; i++) {
            const fz_node *n = &g.p->node[i];
            if (fz_is_array_op(n->op) && n->op != A_AARG && n->scope < 0) {
                cand[nc++] = i;
            }
        }
        if (nc) {
            g.p->root[g.p->nroot++] = cand[fz_below(&g.r, nc)];
        }
    }
    return g.p;
}
