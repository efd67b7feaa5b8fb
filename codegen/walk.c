/*
 * codegen/walk.c: the SSA walker over the core's scalar terms, and what a
 * loop's terms depend on.
 *
 * The walker does what every emitter of scalar code does alike (the
 * checks every term passes, tuples, projections, lets, a primitive's
 * operands, function application, the arrays a term names) and hands the
 * rest to the emitter's hooks (cg_walk_ops, cg.h): exp.c's scalar code,
 * spmd.c's W lanes.  stage.c compiles a staged loop's bound, condition and
 * body through the walker it is given, so that exp.c (which stages its
 * while loops through stage.c) and stage.c (which compiles the loop's
 * terms) do not call each other: both sit above this file.
 *
 * cg_mark_bound and cg_invariant tell which terms of a loop depend on
 * nothing the loop binds: exp.c hoists such reads out of while loops,
 * stage.c asks it of a staged loop's bound and record indices.
 */
#include "cg.h"

/* ---- the SSA walker ----
 *
 * cg_exp (scalar code, exp.c) and cg_spmd_exp (W lanes, spmd.c) walk a
 * term alike wherever the code's shape does not depend on how a leaf is
 * held: the checks every term passes, tuples, projections, lets, a
 * primitive's operands, function application and the arrays they name.
 * Each gives the walker its cg_walk_ops (cg.h) for the rest. */

weft_status cg_walk_array(const cg_walker *w, const fe_term *acc, cg_array *out)
{
    cg_fn *fn = w->fn;
    if (acc->kind == FE_VAR && acc->u.var && acc->u.var->id < fn->nvar &&
        fn->aenv[acc->u.var->id]) {
        *out = *fn->aenv[acc->u.var->id];
        return WEFT_OK;
    }
    if (fn->array_of) {
        return fn->array_of(fn, acc, out);
    }
    return w->ops->fail(w, "an array term the kernel was not given", acc->kind);
}

weft_status cg_walk1(const cg_walker *w, const fe_term *e, LLVMValueRef *out)
{
    cg_val v;
    weft_status s = cg_walk(w, e, &v);
    if (s != WEFT_OK) {
        return s;
    }
    if (v.n != 1) {
        return w->ops->fail(w, "a scalar operand with several leaves", v.n);
    }
    *out = v.v[0];
    return WEFT_OK;
}

static weft_status walk_prim(const cg_walker *w, const fe_term *e, cg_val *out)
{
    weft_op op = (weft_op)e->op;
    if ((unsigned)op >= WEFT_OP_COUNT_ || e->nkid != fe_prims[op].arity) {
        return w->ops->fail(w, "a primitive with a bad operand count", (int)op);
    }
    if (op == WEFT_OP_AND || op == WEFT_OP_OR) {
        return w->ops->short_circuit(w, e, out);
    }
    LLVMValueRef a[2], r;
    for (int k = 0; k < e->nkid; k++) {
        weft_status s = cg_walk1(w, e->kid[k], &a[k]);
        if (s != WEFT_OK) {
            return s;
        }
    }
    weft_status s = w->ops->prim(w, op, e->type, e->kid[0]->type,
                                 e->nkid == 2 ? e->kid[1]->type : 0, a, &r);
    if (s != WEFT_OK) {
        return s;
    }
    return cg_val_one(w->fn, r, out);
}

static weft_status walk_tuple(const cg_walker *w, const fe_term *e, cg_val *out)
{
    const weft_type *leaves;
    int n = cg_leaves(w->fn, e->type, &leaves);
    weft_status s = cg_val_make(w->fn, n, out);
    if (s != WEFT_OK) {
        return s;
    }
    int at = 0;
    for (int k = 0; k < e->nkid; k++) {
        cg_val c;
        if ((s = cg_walk(w, e->kid[k], &c)) != WEFT_OK) {
            return s;
        }
        if (at + c.n > n) {
            return w->ops->fail(w, "a tuple with too many leaves", at + c.n);
        }
        for (int j = 0; j < c.n; j++) {
            out->v[at++] = c.v[j];
        }
    }
    if (at != n) {
        return w->ops->fail(w, "a tuple with too few leaves", at);
    }
    return WEFT_OK;
}

static weft_status walk_get(const cg_walker *w, const fe_term *e, cg_val *out)
{
    cg_val x;
    const weft_type *leaves;
    weft_status s = cg_walk(w, e->kid[0], &x);
    if (s != WEFT_OK) {
        return s;
    }
    int off = fe_type_leaf_offset(w->fn->ctx, e->kid[0]->type, e->u.index);
    int n = cg_leaves(w->fn, e->type, &leaves);
    if (off < 0 || off + n > x.n) {
        return w->ops->fail(w, "a projection outside its tuple", e->u.index);
    }
    out->n = n;
    out->v = x.v + off;
    return WEFT_OK;
}

static weft_status walk_let(const cg_walker *w, const fe_term *e, cg_val *out)
{
    cg_fn *fn = w->fn;
    const fe_var *v = e->u.var;
    weft_status s;
    if (!v || v->id >= fn->nvar) {
        return w->ops->fail(w, "a let of an unknown variable", -1);
    }
    if (v->acc || e->kid[0]->acc) {
        cg_array a;
        if ((s = cg_walk_array(w, e->kid[0], &a)) != WEFT_OK ||
            (s = cg_bind_array(fn, v, &a)) != WEFT_OK) {
            return s;
        }
    } else if (w->ops->let_index0 && fn->ignored && v->type == WEFT_DIM(0)) {
        if ((s = w->ops->let_index0(w, v, e->kid[0])) != WEFT_OK) {
            return s;
        }
    } else {
        cg_val x;
        if ((s = cg_walk(w, e->kid[0], &x)) != WEFT_OK) {
            return s;
        }
        fn->env[v->id] = x;
        fn->bound[v->id] = true;
    }
    return cg_walk(w, e->kid[1], out);
}

static weft_status walk_shape_size(const cg_walker *w, const fe_term *e,
                                   cg_val *out)
{
    cg_val sh;
    weft_status s = cg_walk(w, e->kid[0], &sh);
    if (s != WEFT_OK) {
        return s;
    }
    LLVMValueRef x = cg_i64(w->fn, 1);
    for (int k = 0; k < sh.n; k++) {
        if (k == 0) {
            x = sh.v[0];
        } else {
            LLVMValueRef a[2] = {x, sh.v[k]};
            if ((s = w->ops->prim(w, WEFT_OP_MUL, WEFT_I64, WEFT_I64, WEFT_I64,
                                  a, &x)) != WEFT_OK) {
                return s;
            }
        }
    }
    return cg_val_one(w->fn, x, out);
}

static weft_status walk_to_index(const cg_walker *w, const fe_term *e,
                                 cg_val *out)
{
    cg_val sh, ix;
    LLVMValueRef x;
    weft_status s;
    if ((s = cg_walk(w, e->kid[0], &sh)) != WEFT_OK ||
        (s = cg_walk(w, e->kid[1], &ix)) != WEFT_OK) {
        return s;
    }
    if (sh.n != ix.n) {
        return w->ops->fail(w, "to_index of different ranks", ix.n);
    }
    if ((s = w->ops->to_index(w, sh.n, sh.v, ix.v, &x)) != WEFT_OK) {
        return s;
    }
    return cg_val_one(w->fn, x, out);
}

static weft_status walk_from_index(const cg_walker *w, const fe_term *e,
                                   cg_val *out)
{
    cg_val sh;
    LLVMValueRef i = NULL;
    weft_status s;
    if ((s = cg_walk(w, e->kid[0], &sh)) != WEFT_OK ||
        (s = cg_walk1(w, e->kid[1], &i)) != WEFT_OK ||
        (s = cg_val_make(w->fn, sh.n, out)) != WEFT_OK) {
        return s;
    }
    return w->ops->from_index(w, sh.n, sh.v, i, out->v);
}

weft_status cg_walk(const cg_walker *w, const fe_term *e, cg_val *out)
{
    out->n = 0;
    out->v = NULL;
    if (!e) {
        return w->ops->fail(w, "a missing term", 0);
    }
    if (e->acc) {
        return w->ops->fail(w, "an array term in scalar position", e->kind);
    }
    switch (e->kind) {
    case FE_PRIM: return walk_prim(w, e, out);
    case FE_TUPLE: return walk_tuple(w, e, out);
    case FE_GET: return walk_get(w, e, out);
    case FE_LET: return walk_let(w, e, out);
    case FE_SHAPE_SIZE: return walk_shape_size(w, e, out);
    case FE_TO_INDEX: return walk_to_index(w, e, out);
    case FE_FROM_INDEX: return walk_from_index(w, e, out);
    default: return w->ops->term(w, e, out);
    }
}

weft_status cg_walk_apply(const cg_walker *w, const fe_fun *f,
                          const cg_val *args, cg_val *out)
{
    if (!f || !f->body || f->acc || (f->arity > 0 && !f->param)) {
        return w->ops->fail(w, "a malformed scalar function",
                            f ? f->arity : -1);
    }
    for (int k = 0; k < f->arity; k++) {
        weft_status s = cg_bind(w->fn, f->param[k], &args[k]);
        if (s != WEFT_OK) {
            return s;
        }
    }
    return cg_walk(w, f->body, out);
}

/* ---- what a loop's terms depend on ---- */

/* Mark in `inner` the variables that t binds: lets, and the parameters
 * of its functions (nested while loops). */
static void mark_bound(const fe_term *t, bool *inner, uint32_t nvar)
{
    if (!t) {
        return;
    }
    if (t->kind == FE_LET && t->u.var && t->u.var->id < nvar) {
        inner[t->u.var->id] = true;
    }
    for (int i = 0; i < t->nfun; i++) {
        const fe_fun *f = t->fun[i];
        for (int k = 0; f && f->param && k < f->arity; k++) {
            if (f->param[k] && f->param[k]->id < nvar) {
                inner[f->param[k]->id] = true;
            }
        }
        mark_bound(f ? f->body : NULL, inner, nvar);
    }
    for (int i = 0; i < t->nkid; i++) {
        mark_bound(t->kid[i], inner, nvar);
    }
}

/* Whether scalar term t is the same at every trip of the loop whose
 * bound variables `inner` marks, and cheap and safe to compute before
 * it: constants, outer variables, primitives (their undefined cases give
 * values, exp.c's head), tuples, projections, shapes and reads of
 * parameter arrays. */
static bool invariant(const fe_term *t, const bool *inner, uint32_t nvar,
                      int depth)
{
    if (!t || depth > 16 || t->nfun > 0) {
        return false;
    }
    switch (t->kind) {
    case FE_VAR: return t->u.var && t->u.var->id < nvar && !inner[t->u.var->id];
    case FE_PARAM:
    case FE_USE: return true;
    case FE_CONST:
    case FE_PRIM:
    case FE_TUPLE:
    case FE_GET:
    case FE_SHAPE:
    case FE_SHAPE_SIZE:
    case FE_TO_INDEX:
    case FE_FROM_INDEX:
    case FE_AT:
    case FE_AT_LINEAR: break;
    default: return false;
    }
    if ((t->kind == FE_AT || t->kind == FE_AT_LINEAR || t->kind == FE_SHAPE) &&
        t->kid[0]->kind != FE_PARAM && t->kid[0]->kind != FE_USE &&
        t->kid[0]->kind != FE_VAR) {
        return false; /* a fused producer: computed inline, maybe costly */
    }
    for (int i = 0; i < t->nkid; i++) {
        if (!invariant(t->kid[i], inner, nvar, depth + 1)) {
            return false;
        }
    }
    return true;
}

void cg_mark_bound(const fe_term *t, bool *inner, uint32_t nvar)
{
    mark_bound(t, inner, nvar);
}

bool cg_invariant(const fe_term *t, const bool *inner, uint32_t nvar)
{
    return invariant(t, inner, nvar, 0);
}
