/*
 * lib/simplify.c: the simplifier (DESIGN.md pipeline step 3).
 *
 * Needs: a core from fe_share (a tree; every variable has a unique id below
 * core->nvar and is bound once, by a let or as a function parameter).
 * Provides: the same core, rewritten so that it computes the same values
 * with less work.  Later passes (fuse, plan, the backends) accept any core,
 * simplified or not.
 *
 * One round is two walks over the tree:
 *
 *   1. Count.  For every variable: how often it occurs, whether some
 *      occurrence sits inside a function (or a while / awhile body) that
 *      its binding does not, and, for array variables, whether the
 *      occurrence is an operand of an array operation.
 *   2. Rewrite, going down for lets and up for everything else.  At a let
 *      whose right side has been rewritten:
 *        - a trivial right side (variable, constant, parameter, a tuple or
 *          projection of those) is substituted at every use (copied);
 *        - an unused variable makes the let dead: it is dropped;
 *        - a variable used exactly once, at the same function level (and,
 *          for arrays, as an operand of an array operation) has its right
 *          side moved to that use; moving it into a function or loop body
 *          would repeat it per element or iteration, so that is never done.
 *      Substitutions are recorded per variable and applied when the walk
 *      reaches the use, which it always does after the binding, so the
 *      walk stays linear.  Coming back up, each scalar term is folded:
 *        - a primitive over constants is evaluated by fe_prim_eval, the
 *          interpreter's own evaluator, so folding and running agree by
 *          construction (integer wrap-around, conversions, bit-casts, IEEE
 *          arithmetic on f16/f32/f64).  Transcendental functions (exp, log,
 *          the trigonometric and hyperbolic ones, pow, atan2) are not
 *          folded: compiled code may call another implementation.  An
 *          evaluation that fails (division by zero, an undefined shift or
 *          conversion) is left for run time, so that the error is reported
 *          there;
 *        - exact algebraic identities: x+0, 0+x, x-0, x*0 and x-x for
 *          integers only (x+0 is not x for x = -0.0), x*1 and 1*x for every
 *          type, x/1, bitwise identities, double negations, comparisons of
 *          a term with itself for integers only (NaN), conversions to the
 *          same type, and/or with a constant operand, cond with a constant
 *          condition or equal branches, projections of tuples, the size of
 *          a shape of constants; acond with a constant condition.
 *   3. CSE.  Folding can make subterms equal that were not (x*(2+3) and
 *      x*5).  In each scalar function body, equal subterms that cannot fail
 *      and use only variables in scope at the top of the body are bound
 *      once by a new let there (largest first, so that a let for a part
 *      lies outside the let of the whole).  Terms that may fail are left
 *      alone: hoisting one out of a branch could raise an error the program
 *      never raises.
 *
 * Rounds repeat until nothing changes, at most MAX_ROUNDS times, so the pass
 * terminates on every program.  Dropping dead code means an error in a
 * term that is never needed is not reported (as in every lazy language).
 * Floating-point results never change: only exact rewrites are made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

enum { MAX_ROUNDS = 16 };

typedef struct simp {
    fe_core *core;
    fe_arena *ar;
    weft_context *ctx;
    bool oom;
    bool changed;
    uint32_t cap;     /* size of the per-variable tables */
    int32_t *uses;    /* occurrences of each variable */
    int32_t *level;   /* function nesting level of each let binder */
    uint8_t *inside;  /* an occurrence deeper than the binder */
    uint8_t *operand; /* arrays: the (last) occurrence is an operand */
    fe_term **subst;  /* the term that replaces the variable */
    uint8_t *copy;    /* subst is trivial: copy it at each use */
    uint32_t *local;  /* CSE: the body serial that binds the variable */
    uint32_t serial;
} simp;

/* ---- small helpers ------------------------------------------------------ */

static void *salloc(simp *s, size_t n)
{
    void *p = fe_arena_alloc(s->ar, n);
    if (!p) {
        s->oom = true;
    }
    return p;
}

static bool is_const(const fe_term *t)
{
    return t && t->kind == FE_CONST;
}

/* Whether t may be copied to every use of a variable bound to it. */
static bool is_trivial(const fe_term *t)
{
    switch ((fe_kind)t->kind) {
    case FE_VAR:
    case FE_CONST:
    case FE_PARAM:
    case FE_IGNORE: return true;
    case FE_TUPLE:
    case FE_GET:
        for (int i = 0; i < t->nkid; i++) {
            if (!t->kid[i] || !is_trivial(t->kid[i])) {
                return false;
            }
        }
        return true;
    default: return false;
    }
}

/* Whether t, a scalar term, is small enough and free of binders and
 * array operations to be copied like a trivial term: how a rank-0 index
 * (a let of type DIM(0)) goes back to each of its uses.  Such a value has
 * no leaves; all it carries is whether it is permute's `ignore`, which
 * compiled kernels see only where the marker is evaluated, not through a
 * free variable computed outside them.  So a let of a rank-0 index is
 * always undone: copied to every use when copyable, else moved to its one
 * use even inside a function (a let used twice that cannot be copied is
 * left; the interpreter and the code generator also track the marker
 * through lets inside a function). */
static bool is_copyable(const fe_term *t)
{
    enum { MAX_NODES = 64 };
    const fe_term *stack[MAX_NODES];
    int n = 0, seen = 0;
    stack[n++] = t;
    while (n > 0) {
        const fe_term *u = stack[--n];
        if (!u || ++seen > MAX_NODES || u->nfun > 0 || u->kind == FE_LET) {
            return false;
        }
        if (u->acc) {
            if (u->kind != FE_VAR && u->kind != FE_PARAM) {
                return false;
            }
            continue;
        }
        for (int i = 0; i < u->nkid; i++) {
            if (n == MAX_NODES) {
                return false;
            }
            stack[n++] = u->kid[i];
        }
    }
    return true;
}

/* A copy of trivial term t (NULL on allocation failure). */
static fe_term *copy_trivial(simp *s, const fe_term *t)
{
    fe_term *c = salloc(s, sizeof *c);
    if (!c) {
        return NULL;
    }
    *c = *t;
    if (t->nkid > 0) {
        c->kid = salloc(s, sizeof *c->kid * (size_t)t->nkid);
        if (!c->kid) {
            return NULL;
        }
        for (int i = 0; i < t->nkid; i++) {
            if (!(c->kid[i] = copy_trivial(s, t->kid[i]))) {
                return NULL;
            }
        }
    }
    return c;
}

/* A constant of t's type (t's other fields kept), or t on failure. */
static fe_term *make_const(simp *s, fe_term *t, fe_val v)
{
    fe_term *c = salloc(s, sizeof *c);
    if (!c) {
        return t;
    }
    *c = *t;
    c->kind = FE_CONST;
    c->op = 0;
    c->nkid = 0;
    c->kid = NULL;
    c->nfun = 0;
    c->fun = NULL;
    memset(&c->u, 0, sizeof c->u);
    c->u.c = v;
    s->changed = true;
    return c;
}

static fe_val val_u(uint64_t u)
{
    fe_val v;
    v.u = u;
    return v;
}

/* Constant tests on integer and floating constants. */
static bool is_zero_int(const fe_term *t)
{
    return is_const(t) && fe_is_int(t->type) && t->u.c.u == 0;
}

/* false and true, as the zero and the all-ones of bool for band, bor,
 * bxor, min (and) and max (or). */
static bool is_false(const fe_term *t)
{
    return is_const(t) && t->type == WEFT_BOOL && t->u.c.u == 0;
}

static bool is_true(const fe_term *t)
{
    return is_const(t) && t->type == WEFT_BOOL && t->u.c.u != 0;
}

static bool is_one(const fe_term *t)
{
    if (!is_const(t)) {
        return false;
    }
    if (fe_is_float(t->type)) {
        return t->u.c.f == 1.0;
    }
    return fe_is_int(t->type) && t->u.c.u == 1;
}

static bool is_all_ones(const fe_term *t)
{
    if (!is_const(t) || !fe_is_int(t->type)) {
        return false;
    }
    int w = fe_type_bits(t->type);
    uint64_t m = w >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
    return fe_is_signed(t->type) ? t->u.c.i == -1 : t->u.c.u == m;
}

bool fe_term_same(const fe_term *a, const fe_term *b, const fe_var *va,
                  const fe_var *vb)
{
    if (a == b) {
        return true;
    }
    if (!a || !b || a->kind != b->kind || a->type != b->type ||
        a->nkid != b->nkid || a->nfun != 0 || b->nfun != 0) {
        return false;
    }
    switch ((fe_kind)a->kind) {
    case FE_CONST:
        if (a->u.c.u != b->u.c.u) {
            return false;
        }
        break;
    case FE_VAR:
        return a->u.var == b->u.var || (va && a->u.var == va && b->u.var == vb);
    case FE_PARAM: return a->u.index == b->u.index;
    case FE_USE: return a->u.array == b->u.array;
    case FE_PRIM:
        if (a->op != b->op) {
            return false;
        }
        break;
    case FE_GET:
    case FE_AGET:
        if (a->u.index != b->u.index) {
            return false;
        }
        break;
    case FE_COND:
    case FE_TUPLE:
    case FE_SHAPE:
    case FE_SHAPE_SIZE:
    case FE_TO_INDEX:
    case FE_FROM_INDEX:
    case FE_AT:
    case FE_AT_LINEAR: break;
    default: return false;
    }
    for (int i = 0; i < a->nkid; i++) {
        if (!fe_term_same(a->kid[i], b->kid[i], va, vb)) {
            return false;
        }
    }
    return true;
}

static bool same(const fe_term *a, const fe_term *b)
{
    return fe_term_same(a, b, NULL, NULL);
}

/* ---- 1. counting uses --------------------------------------------------- */

static void count(simp *s, const fe_term *t, int level, bool parent_acc)
{
    if (!t) {
        return;
    }
    if (t->kind == FE_VAR) {
        const fe_var *v = t->u.var;
        if (v && v->id < s->cap) {
            s->uses[v->id]++;
            if (level > s->level[v->id]) {
                s->inside[v->id] = 1;
            }
            s->operand[v->id] = parent_acc;
        }
        return;
    }
    if (t->kind == FE_LET && t->u.var && t->u.var->id < s->cap) {
        s->level[t->u.var->id] = level;
    }
    for (int i = 0; i < t->nkid; i++) {
        count(s, t->kid[i], level, t->acc);
    }
    for (int i = 0; i < t->nfun; i++) {
        if (t->fun[i]) {
            count(s, t->fun[i]->body, level + 1, false);
        }
    }
}

/* ---- 2b. folding and identities ----------------------------------------- */

/* Primitives whose compiled implementation may differ from the C library's
 * (so folding them could change results) are not folded: lib/fe_ops.h's
 * fold column. */
static bool foldable(weft_op op)
{
    return op < WEFT_OP_COUNT_ && fe_prims[op].fold;
}

/* Evaluate primitive t over its constant operands; t when it fails (the
 * thread's last error is left as it was). */
static fe_term *fold_prim(simp *s, fe_term *t)
{
    int n = fe_prims[t->op].arity;
    if (t->nkid != n || !foldable((weft_op)t->op)) {
        return t;
    }
    fe_val a[2];
    for (int i = 0; i < n; i++) {
        if (!is_const(t->kid[i])) {
            return t;
        }
        a[i] = t->kid[i]->u.c;
    }
    char saved[FE_MSG_MAX];
    snprintf(saved, sizeof saved, "%s", weft_last_error());
    fe_val r;
    weft_type t1 = n == 2 ? t->kid[1]->type : 0;
    if (fe_prim_eval((weft_op)t->op, t->type, t->kid[0]->type, t1, a, &r)) {
        fe_error_copy(WEFT_OK, saved);
        return t;
    }
    return make_const(s, t, r);
}

/* The result of an identity: x replaces t. */
static fe_term *to(simp *s, fe_term *x)
{
    s->changed = true;
    return x;
}

static fe_term *identity(simp *s, fe_term *t)
{
    fe_term *x = t->kid[0];
    fe_term *y = t->nkid > 1 ? t->kid[1] : NULL;
    weft_type ty = t->type;
    bool in = fe_is_int(ty);
    switch ((weft_op)t->op) {
    case WEFT_OP_ADD:
        if (in && is_zero_int(y)) {
            return to(s, x);
        }
        if (in && is_zero_int(x)) {
            return to(s, y);
        }
        break;
    case WEFT_OP_SUB:
        if (in && is_zero_int(y)) {
            return to(s, x);
        }
        if (in && same(x, y)) {
            return make_const(s, t, val_u(0));
        }
        break;
    case WEFT_OP_MUL:
        if (is_one(y)) {
            return to(s, x);
        }
        if (is_one(x)) {
            return to(s, y);
        }
        if (in && (is_zero_int(x) || is_zero_int(y))) {
            return make_const(s, t, val_u(0));
        }
        break;
    case WEFT_OP_FDIV:
    case WEFT_OP_QUOT:
    case WEFT_OP_IDIV:
        if (is_one(y)) {
            return to(s, x);
        }
        break;
    case WEFT_OP_BAND:
        if (is_zero_int(x) || is_zero_int(y) || is_false(x) || is_false(y)) {
            return make_const(s, t, val_u(0));
        }
        if (is_all_ones(y) || is_true(y) || same(x, y)) {
            return to(s, x);
        }
        if (is_all_ones(x) || is_true(x)) {
            return to(s, y);
        }
        break;
    case WEFT_OP_BOR:
    case WEFT_OP_BXOR:
        if (t->op == WEFT_OP_BOR && (is_true(x) || is_true(y))) {
            return make_const(s, t, val_u(1));
        }
        if (is_zero_int(y) || is_false(y)) {
            return to(s, x);
        }
        if (is_zero_int(x) || is_false(x)) {
            return to(s, y);
        }
        if (t->op == WEFT_OP_BOR && same(x, y)) {
            return to(s, x);
        }
        if (t->op == WEFT_OP_BXOR && same(x, y)) {
            return make_const(s, t, val_u(0));
        }
        break;
    case WEFT_OP_SHL:
    case WEFT_OP_SHR:
    case WEFT_OP_ROTL:
    case WEFT_OP_ROTR:
        if (is_zero_int(y)) {
            return to(s, x);
        }
        break;
    case WEFT_OP_NEG:
    case WEFT_OP_BNOT:
    case WEFT_OP_NOT:
        if (x->kind == FE_PRIM && x->op == t->op && x->nkid == 1) {
            return to(s, x->kid[0]);
        }
        break;
    case WEFT_OP_MIN:
    case WEFT_OP_MAX:
        /* x <= x ? x : x is x whatever x is, NaN included */
        if (same(x, y)) {
            return to(s, x);
        }
        /* on bool, min is and, max is or: false and true absorb or vanish */
        if (is_false(x) || is_false(y) || is_true(x) || is_true(y)) {
            bool absorb = t->op == WEFT_OP_MIN ? is_false(x) || is_false(y)
                                               : is_true(x) || is_true(y);
            if (absorb) {
                return make_const(s, t, val_u(t->op == WEFT_OP_MAX));
            }
            return to(s, is_const(x) ? y : x);
        }
        break;
    case WEFT_OP_EQ:
    case WEFT_OP_LE:
    case WEFT_OP_GE:
    case WEFT_OP_NE:
    case WEFT_OP_LT:
    case WEFT_OP_GT:
        if (!fe_is_float(x->type) && fe_is_scalar(x->type) && same(x, y)) {
            bool r = t->op == WEFT_OP_EQ || t->op == WEFT_OP_LE ||
                     t->op == WEFT_OP_GE;
            return make_const(s, t, val_u(r));
        }
        break;
    case WEFT_OP_AND:
    case WEFT_OP_OR: {
        /* and(true, y) = y, and(false, _) = false; or the mirror */
        uint64_t unit = t->op == WEFT_OP_AND ? 1 : 0;
        if (is_const(x)) {
            return x->u.c.u == unit ? to(s, y) : to(s, x);
        }
        if (is_const(y) && y->u.c.u == unit) {
            return to(s, x);
        }
        if (same(x, y)) {
            return to(s, x);
        }
        break;
    }
    case WEFT_OP_CONVERT:
    case WEFT_OP_BITCAST:
        if (x->type == ty) {
            return to(s, x);
        }
        break;
    default: break;
    }
    return t;
}

/* Fold scalar term t (its kids already folded); returns its replacement. */
static fe_term *fold(simp *s, fe_term *t)
{
    switch ((fe_kind)t->kind) {
    case FE_PRIM: {
        fe_term *r = fold_prim(s, t);
        return r != t ? r : identity(s, t);
    }
    case FE_COND:
        if (is_const(t->kid[0])) {
            return to(s, t->kid[0]->u.c.u ? t->kid[1] : t->kid[2]);
        }
        if (same(t->kid[1], t->kid[2])) {
            return to(s, t->kid[1]);
        }
        return t;
    case FE_GET: {
        fe_term *x = t->kid[0];
        if (x->kind == FE_TUPLE && t->u.index >= 0 && t->u.index < x->nkid &&
            x->kid[t->u.index]->type == t->type) {
            return to(s, x->kid[t->u.index]);
        }
        return t;
    }
    case FE_SHAPE_SIZE: {
        fe_term *x = t->kid[0];
        if (x->kind != FE_TUPLE) {
            return t;
        }
        uint64_t p = 1; /* wraps as the interpreter's product does */
        for (int i = 0; i < x->nkid; i++) {
            if (!is_const(x->kid[i])) {
                return t;
            }
            p *= x->kid[i]->u.c.u;
        }
        return make_const(s, t, val_u(p));
    }
    default: return t;
    }
}

/* ---- 2. the rewriting walk ---------------------------------------------- */

static void walk(simp *s, fe_term **slot);

/* Decide what becomes of the let at *slot (its right side rewritten);
 * returns true when the let is gone (*slot is its body). */
static bool shrink_let(simp *s, fe_term **slot)
{
    fe_term *t = *slot;
    fe_var *v = t->u.var;
    fe_term *rhs = t->kid[0];
    if (!v || v->id >= s->cap || !rhs) {
        return false;
    }
    uint32_t id = v->id;
    if (s->uses[id] == 0) {
        *slot = t->kid[1];
        s->changed = true;
        return true;
    }
    bool index0 = !v->acc && v->type == WEFT_DIM(0);
    if (is_trivial(rhs) || (index0 && is_copyable(rhs))) {
        s->subst[id] = rhs;
        s->copy[id] = 1;
        *slot = t->kid[1];
        s->changed = true;
        return true;
    }
    bool here = s->uses[id] == 1 && (!s->inside[id] || index0);
    if (here && v->acc) {
        here = s->operand[id] && rhs->acc;
    }
    if (here) {
        s->subst[id] = rhs;
        s->copy[id] = 0;
        *slot = t->kid[1];
        s->changed = true;
        return true;
    }
    return false;
}

static void walk(simp *s, fe_term **slot)
{
    for (;;) {
        fe_term *t = *slot;
        if (!t || s->oom) {
            return;
        }
        if (t->kind == FE_VAR) {
            const fe_var *v = t->u.var;
            fe_term *r = v && v->id < s->cap ? s->subst[v->id] : NULL;
            if (r) {
                /* a moved right side was rewritten at its let already */
                *slot = s->copy[v->id] ? copy_trivial(s, r) : r;
                if (!*slot) {
                    *slot = t;
                }
            }
            return;
        }
        if (t->kind != FE_LET) {
            break;
        }
        walk(s, &t->kid[0]);
        if (!shrink_let(s, slot)) {
            walk(s, &t->kid[1]);
            return;
        }
    }
    fe_term *t = *slot;
    for (int i = 0; i < t->nkid; i++) {
        walk(s, &t->kid[i]);
    }
    for (int i = 0; i < t->nfun; i++) {
        if (t->fun[i]) {
            walk(s, &t->fun[i]->body);
        }
    }
    if (t->kind == FE_ACOND && t->nkid == 3 && is_const(t->kid[0])) {
        /* acond with a constant condition: the chosen branch */
        *slot = to(s, t->kid[0]->u.c.u ? t->kid[1] : t->kid[2]);
        return;
    }
    if (!t->acc && !s->oom) {
        for (int i = 0; i < t->nkid; i++) {
            if (!t->kid[i]) {
                return;
            }
        }
        *slot = fold(s, t);
    }
}

/* ---- 3. CSE in scalar function bodies ----------------------------------- */

typedef struct cand {
    fe_term **slot;
    uint64_t hash;
    int size;
    int parent;   /* the nearest enclosing candidate, or -1 */
    bool dead;    /* replaced by a variable */
    int8_t under; /* memo of cand_dead for the enclosing candidates:
                       -1 not known yet, else 0 or 1 */
} cand;

typedef struct cse {
    cand *c;
    int n, cap;
} cse;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Collect the candidates under *slot (not entering functions).  Returns
 * whether the term may be hoisted to the top of the body; *h and *size get
 * its hash and size. */
static bool collect(simp *s, cse *q, fe_term **slot, int parent, uint64_t *h,
                    int *size)
{
    fe_term *t = *slot;
    *h = mix(t->kind, t->type);
    *size = 1;
    switch ((fe_kind)t->kind) {
    case FE_CONST: *h = mix(*h, t->u.c.u); return true;
    case FE_VAR:
        *h = mix(*h, (uint64_t)(uintptr_t)t->u.var);
        return t->u.var && !t->u.var->acc && t->u.var->id < s->cap &&
               s->local[t->u.var->id] != s->serial;
    case FE_LET:
        if (t->u.var && t->u.var->id < s->cap) {
            s->local[t->u.var->id] = s->serial;
        }
        break;
    case FE_PRIM:
    case FE_COND:
    case FE_TUPLE:
    case FE_GET: break;
    default:
        /* not a candidate, but its scalar kids may hold some */
        for (int i = 0; i < t->nkid; i++) {
            uint64_t kh;
            int ks;
            if (t->kid[i] && !t->kid[i]->acc) {
                collect(s, q, &t->kid[i], parent, &kh, &ks);
            }
        }
        return false;
    }
    int me = -1;
    bool ok = t->kind != FE_LET && t->nfun == 0 &&
              !(t->kind == FE_PRIM && fe_prim_may_fail(t));
    if (ok && t->kind == FE_PRIM) {
        if (q->n == q->cap) {
            int cap = q->cap ? 2 * q->cap : 64;
            cand *c = fe_realloc(s->ctx, q->c, sizeof *c * (size_t)q->cap,
                                 sizeof *c * (size_t)cap);
            if (!c) {
                s->oom = true;
                return false;
            }
            q->c = c;
            q->cap = cap;
        }
        me = q->n++;
        q->c[me] = (cand){slot, 0, 0, parent, false, -1};
    }
    *h = mix(*h, t->op);
    *h = mix(*h, (uint64_t)(t->kind == FE_GET ? t->u.index : 0));
    for (int i = 0; i < t->nkid; i++) {
        uint64_t kh = 0;
        int ks = 0;
        if (!t->kid[i] || t->kid[i]->acc) {
            ok = false;
            continue;
        }
        ok = collect(s, q, &t->kid[i], me >= 0 ? me : parent, &kh, &ks) && ok;
        *h = mix(*h, kh);
        *size += ks;
    }
    if (me >= 0) {
        if (ok) {
            q->c[me].hash = *h;
            q->c[me].size = *size;
        } else {
            q->c[me].size = -1; /* not hoistable */
        }
    }
    return ok;
}

/* Whether candidate i or one enclosing it was replaced by a variable.
 * Candidates are handled largest first and an enclosing one is larger, so
 * when i is asked about, every candidate above it is final: what the
 * chain above a candidate says is remembered (c[].under), and a chain of
 * n nested candidates costs O(n) in all rather than O(n) per query. */
static bool cand_dead(cse *q, int i)
{
    if (q->c[i].dead) {
        return true;
    }
    /* find the nearest ancestor whose answer is known */
    int j = q->c[i].parent;
    int8_t ans = 0;
    while (j >= 0) {
        if (q->c[j].dead) {
            ans = 1;
            break;
        }
        if (q->c[j].under >= 0) {
            ans = q->c[j].under;
            break;
        }
        j = q->c[j].parent;
    }
    /* fill the memo on the way */
    for (int k = i; k >= 0 && k != j; k = q->c[k].parent) {
        q->c[k].under = ans;
    }
    return ans != 0;
}

static int cand_order(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->size != y->size) {
        return x->size > y->size ? -1 : 1;
    }
    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    return 0;
}

static fe_term *var_ref(simp *s, fe_var *v)
{
    fe_term *r = salloc(s, sizeof *r);
    if (r) {
        r->kind = FE_VAR;
        r->type = v->type;
        r->rank = -1;
        r->u.var = v;
    }
    return r;
}

/* CSE in the body of scalar function f. */
static void cse_body(simp *s, fe_fun *f)
{
    if (!f->body || f->body->acc) {
        return;
    }
    cse q = {0};
    uint64_t h;
    int size;
    s->serial++;
    collect(s, &q, &f->body, -1, &h, &size);
    /* order: largest first; parents keep their index through a map */
    int n = q.n;
    int *order = n ? fe_alloc(s->ctx, sizeof *order * (size_t)n) : NULL;
    cand *sorted = n ? fe_alloc(s->ctx, sizeof *sorted * (size_t)n) : NULL;
    if (n && (!order || !sorted)) {
        s->oom = true;
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        sorted[i] = q.c[i];
        sorted[i].parent = i; /* remember the original index */
    }
    if (n) {
        qsort(sorted, (size_t)n, sizeof *sorted, cand_order);
    }
    for (int i = 0; i < n; i++) {
        order[i] = sorted[i].parent;
    }
    for (int i = 0; i < n && !s->oom;) {
        int j = i + 1;
        while (j < n && sorted[j].size == sorted[i].size &&
               sorted[j].hash == sorted[i].hash) {
            j++;
        }
        if (sorted[i].size < 2) {
            i = j;
            continue;
        }
        /* within [i, j): group members equal to the first live one */
        for (int a = i; a < j && !s->oom; a++) {
            cand *ca = &q.c[order[a]];
            if (cand_dead(&q, order[a])) {
                continue;
            }
            fe_term *rhs = *ca->slot;
            int nsame = 1;
            for (int b = a + 1; b < j; b++) {
                if (!cand_dead(&q, order[b]) &&
                    same(rhs, *q.c[order[b]].slot)) {
                    nsame++;
                }
            }
            if (nsame < 2) {
                continue;
            }
            fe_var *v = salloc(s, sizeof *v);
            fe_term *let = salloc(s, sizeof *let);
            if (!v || !let) {
                break;
            }
            v->id = s->core->nvar++;
            v->type = rhs->type;
            let->kind = FE_LET;
            let->type = f->body->type;
            let->rank = f->body->rank;
            let->u.var = v;
            let->nkid = 2;
            let->kid = salloc(s, sizeof *let->kid * 2);
            if (!let->kid) {
                break;
            }
            for (int b = a + 1; b < j; b++) {
                cand *cb = &q.c[order[b]];
                if (!cand_dead(&q, order[b]) && same(rhs, *cb->slot)) {
                    fe_term *r = var_ref(s, v);
                    if (!r) {
                        break;
                    }
                    *cb->slot = r;
                    cb->dead = true;
                }
            }
            fe_term *r = var_ref(s, v);
            if (!r) {
                break;
            }
            *ca->slot = r;
            ca->dead = true;
            let->kid[0] = rhs;
            let->kid[1] = f->body;
            f->body = let;
            s->changed = true;
        }
        i = j;
    }
    fe_free(s->ctx, order, sizeof *order * (size_t)q.n);
    fe_free(s->ctx, sorted, sizeof *sorted * (size_t)q.n);
    fe_free(s->ctx, q.c, sizeof *q.c * (size_t)q.cap);
}

static void cse_walk(simp *s, fe_term *t)
{
    if (!t || s->oom) {
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        cse_walk(s, t->kid[i]);
    }
    for (int i = 0; i < t->nfun; i++) {
        fe_fun *f = t->fun[i];
        if (f) {
            cse_walk(s, f->body);
            if (!f->acc) {
                cse_body(s, f);
            }
        }
    }
}

/* ---- the pass ------------------------------------------------------------ */

static void tables_free(simp *s)
{
    weft_context *ctx = s->ctx;
    size_t n = s->cap ? s->cap : 1;
    fe_free(ctx, s->uses, sizeof *s->uses * n);
    fe_free(ctx, s->level, sizeof *s->level * n);
    fe_free(ctx, s->inside, sizeof *s->inside * n);
    fe_free(ctx, s->operand, sizeof *s->operand * n);
    fe_free(ctx, s->subst, sizeof *s->subst * n);
    fe_free(ctx, s->copy, sizeof *s->copy * n);
    fe_free(ctx, s->local, sizeof *s->local * n);
    s->uses = s->level = NULL;
    s->inside = s->operand = s->copy = NULL;
    s->subst = NULL;
    s->local = NULL;
}

static bool tables_new(simp *s)
{
    weft_context *ctx = s->ctx;
    s->cap = s->core->nvar;
    size_t n = s->cap ? s->cap : 1;
    s->uses = fe_calloc(ctx, sizeof *s->uses * n);
    s->level = fe_calloc(ctx, sizeof *s->level * n);
    s->inside = fe_calloc(ctx, sizeof *s->inside * n);
    s->operand = fe_calloc(ctx, sizeof *s->operand * n);
    s->subst = fe_calloc(ctx, sizeof *s->subst * n);
    s->copy = fe_calloc(ctx, sizeof *s->copy * n);
    s->local = fe_calloc(ctx, sizeof *s->local * n);
    return s->uses && s->level && s->inside && s->operand && s->subst &&
           s->copy && s->local;
}

/* Simplify core in place (see the top of this file).  Errors:
 * WEFT_ERR_OUT_OF_MEMORY (the core may then be half rewritten: the caller
 * discards it, as weft_compile does). */
weft_status fe_simplify(fe_core *core)
{
    if (!core || !core->root) {
        return WEFT_OK;
    }
    simp s = {0};
    s.core = core;
    s.ar = core->arena;
    s.ctx = core->arena->ctx;
    for (int round = 0; round < MAX_ROUNDS && !s.oom; round++) {
        if (!tables_new(&s)) {
            s.oom = true;
            tables_free(&s);
            break;
        }
        s.changed = false;
        count(&s, core->root, 0, true);
        walk(&s, &core->root);
        if (!s.oom) {
            cse_walk(&s, core->root);
        }
        tables_free(&s);
        if (!s.changed) {
            break;
        }
    }
    if (s.oom) {
        return fe_oom("weft_compile");
    }
    return WEFT_OK;
}
