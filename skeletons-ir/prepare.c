/*
 * skeletons-ir/prepare.c: a kernel for an array operation: the layout of
 * its argument block (sk.h) and the skeleton that computes it.
 *
 * sk_prepare lays out the outputs, the operands, then the free variables
 * of the operation's functions, found by walking their bodies and keeping
 * every FE_VAR not bound inside them (parameters of the functions and of
 * nested while loops, inner lets), and every parameter or used array that
 * the bodies index; the operands of fused (delayed) producers follow.
 * Then it chooses the skeleton (sk_skeleton_of: the family's shared one,
 * lib/fe_kinds.h's family column, or the target's own for that family,
 * sk_target.own, where it has one and supports the operation), which adds
 * its auxiliary items.
 *
 * This is the one file that names every skeleton, so it sits above them:
 * the skeletons call kernel.c's helpers and never this file
 * (tools/file-loops.py keeps it so).
 */
#include <string.h>

#include "sk.h"

/* The shared skeleton of each family of array operations (lib/fe_kinds.h's
 * family column). */
static const sk_skeleton *const by_family[] = {
    [FE_FAMILY_NONE] = NULL,           [FE_FAMILY_GENERATE] = &sk_generate,
    [FE_FAMILY_FOLD] = &sk_fold,       [FE_FAMILY_SCAN] = &sk_scan,
    [FE_FAMILY_PERMUTE] = &sk_permute, [FE_FAMILY_FOLD_SEG] = &sk_fold_seg,
    [FE_FAMILY_STENCIL] = &sk_stencil, [FE_FAMILY_RESHAPE] = &sk_reshape,
};

const sk_skeleton *sk_skeleton_of(const fe_term *t, const sk_target *tg)
{
    if (!t->acc || !t->atype) {
        return NULL;
    }
    const sk_skeleton *s = by_family[fe_kinds[t->kind].family];
    if (!s) {
        return NULL;
    }
    if (tg && tg->own && tg->own[s->family] &&
        tg->own[s->family]->supported(t)) {
        return tg->own[s->family];
    }
    return s->supported && s->supported(t) ? s : NULL;
}

typedef struct walk {
    weft_context *ctx;
    fe_arena *arena;
    sk_kernel *k;
    fe_varmap vars; /* var id -> WALK_BOUND (bound inside the functions)
                         | WALK_SEEN (already an item) */
    bool oom;
    uint32_t nvar;
    int cost;       /* scalar work per element, roughly (sk_kernel.light) */
    bool has_while; /* a scalar while loop inside the functions */
} walk;

enum { WALK_BOUND = 1, WALK_SEEN = 2 };

static void walk_mark(walk *w, uint32_t id, uint32_t flag)
{
    if (!fe_varmap_put(&w->vars, id, fe_varmap_get(&w->vars, id) | flag)) {
        w->oom = true;
    }
}

static weft_status walk_term(walk *w, const fe_term *t);

static weft_status walk_fun(walk *w, const fe_fun *f)
{
    for (int i = 0; i < f->arity; i++) {
        if (f->param && f->param[i] && f->param[i]->id < w->nvar) {
            walk_mark(w, f->param[i]->id, WALK_BOUND);
        }
    }
    return walk_term(w, f->body);
}

static bool have_item(const sk_kernel *k, sk_src src, int index,
                      const weft_array *a)
{
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        if (it->src == src && ((src == SK_SRC_PARAM && it->index == index) ||
                               (src == SK_SRC_USE && it->array == a))) {
            return true;
        }
    }
    return false;
}

static weft_status walk_term(walk *w, const fe_term *t)
{
    weft_status s;
    if (!t) {
        return WEFT_OK;
    }
    if (t->kind == FE_WHILE) {
        w->has_while = true;
    }
    switch ((fe_kind)t->kind) {
    case FE_VAR: {
        const fe_var *v = t->u.var;
        if (!v || v->id >= w->nvar) {
            return fe_error(WEFT_ERR_INTERNAL, "weft_compile: a bad variable");
        }
        if (fe_varmap_get(&w->vars, v->id)) {
            return WEFT_OK;
        }
        walk_mark(w, v->id, WALK_SEEN);
        if (v->acc) {
            if (!v->atype || v->atype->narrays != 1) {
                return fe_error(WEFT_ERR_INTERNAL,
                                "weft_compile: a function indexes a tuple of "
                                "arrays");
            }
            s = sk_add_item(w->ctx, w->arena, w->k, SK_ARRAY, SK_SRC_VAR, 0,
                            v->atype->elt, v->atype->rank);
        } else {
            s = sk_add_item(w->ctx, w->arena, w->k, SK_SCALAR, SK_SRC_VAR, 0,
                            v->type, 0);
        }
        if (s == WEFT_OK) {
            w->k->item[w->k->nitem - 1].var = v;
        }
        return s;
    }
    case FE_PARAM:
        if (have_item(w->k, SK_SRC_PARAM, t->u.index, NULL)) {
            return WEFT_OK;
        }
        return sk_add_item(w->ctx, w->arena, w->k, SK_ARRAY, SK_SRC_PARAM,
                           t->u.index, t->type, t->rank);
    case FE_USE:
        if (have_item(w->k, SK_SRC_USE, 0, t->u.array)) {
            return WEFT_OK;
        }
        s = sk_add_item(w->ctx, w->arena, w->k, SK_ARRAY, SK_SRC_USE, 0,
                        t->type, t->rank);
        if (s == WEFT_OK) {
            w->k->item[w->k->nitem - 1].array = t->u.array;
        }
        return s;
    case FE_LET:
        if (t->u.var && t->u.var->id < w->nvar) {
            walk_mark(w, t->u.var->id, WALK_BOUND);
        }
        break;
    case FE_PRIM:
        /* floating division and the math functions (cost DEAR in
         * lib/fe_ops.h) count as several */
        w->cost +=
            t->op < WEFT_OP_COUNT_ && fe_prims[t->op].cost == FE_COST_DEAR ? 8
                                                                           : 1;
        break;
    case FE_WHILE:
        w->cost += SK_LIGHT_COST + 1; /* unbounded: never light */
        break;
    default: break;
    }
    for (int i = 0; i < t->nkid; i++) {
        if ((s = walk_term(w, t->kid[i])) != WEFT_OK) {
            return s;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if ((s = walk_fun(w, t->fun[i])) != WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

/* The operands of delayed producer t, recursively: manifest arrays and
 * host scalars become items, free variables of its functions too. */
static weft_status walk_delayed(walk *w, const fe_term *t)
{
    weft_status s;
    if (sk_zipwith_general(t)) {
        w->k->general = true;
    }
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *kid = t->kid[i];
        if (!kid || kid->kind == FE_ALL) {
            continue;
        }
        if (kid->acc && kid->delayed) {
            s = walk_delayed(w, kid);
        } else if (kid->acc && (kid->kind == FE_VAR || kid->kind == FE_PARAM ||
                                kid->kind == FE_USE)) {
            s = walk_term(w, kid);
        } else {
            s = sk_add_item(w->ctx, w->arena, w->k,
                            kid->acc ? SK_ARRAY : SK_SCALAR, SK_SRC_TERM, 0,
                            kid->type, kid->acc ? kid->rank : 0);
            if (s == WEFT_OK) {
                w->k->item[w->k->nitem - 1].term = kid;
            }
        }
        if (s) {
            return s;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if ((s = walk_fun(w, t->fun[i])) != WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

weft_status sk_prepare(weft_context *ctx, const fe_core *core, fe_arena *arena,
                       const sk_target *tg, const fe_term *t, sk_kernel *k)
{
    weft_status s;
    memset(k, 0, sizeof *k);
    k->op = t;
    for (int i = 0; i < 8; i++) {
        k->kid_item[i] = -1;
        k->aux_item[i] = -1;
    }
    if (t->nkid > 8) {
        return fe_error(WEFT_ERR_INTERNAL, "weft_compile: too many operands");
    }
    /* outputs */
    const fe_atype *at = t->atype;
    int nout = at->arity == 0 ? 1 : at->arity;
    for (int o = 0; o < nout; o++) {
        const fe_atype *c = at->arity == 0 ? at : at->comp[o];
        s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_OUT, o, c->elt,
                        c->rank);
        if (s) {
            return s;
        }
    }
    k->nout = nout;
    /* operands (delayed ones after the free variables, below) */
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *kid = t->kid[i];
        if (!kid || (kid->acc && kid->delayed)) {
            continue;
        }
        if (kid->acc) {
            s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_KID, i, kid->type,
                            kid->rank);
        } else if (kid->kind == FE_ALL) {
            continue;
        } else {
            s = sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_KID, i, kid->type,
                            0);
        }
        if (s) {
            return s;
        }
        k->kid_item[i] = k->nitem - 1;
    }
    /* free variables of the functions */
    walk w = {.ctx = ctx, .arena = arena, .k = k, .nvar = core->nvar};
    fe_arena scratch; /* the variables' table costs what is put in
                         (lib/varmap.c) */
    fe_arena_init(&scratch, ctx);
    fe_varmap_init(&w.vars, &scratch);
    s = WEFT_OK;
    for (int i = 0; s == WEFT_OK && i < t->nfun; i++) {
        s = walk_fun(&w, t->fun[i]);
    }
    for (int i = 0; s == WEFT_OK && i < t->nkid; i++) {
        if (t->kid[i] && t->kid[i]->acc && t->kid[i]->delayed) {
            s = walk_delayed(&w, t->kid[i]);
        }
    }
    fe_arena_release(&scratch);
    if (s == WEFT_OK && w.oom) {
        s = fe_oom("weft_compile");
    }
    if (s) {
        return s;
    }
    k->light = w.cost <= SK_LIGHT_COST;
    /* the error word, then the skeleton's own items */
    s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, SK_ERR_AUX, WEFT_I64,
                    1);
    if (s) {
        return s;
    }
    k->err_item = k->aux_item[SK_ERR_AUX] = k->nitem - 1;
    k->checked = (ctx->cfg.flags & WEFT_FLAG_CHECKED) != 0;
    k->may_fail = sk_gathers(t, true) || k->checked;
    /* the cancel word, which scalar while loops poll */
    if (w.has_while) {
        fe_arena_init(&scratch, ctx);
        k->even_loops = cg_stage_even(t, core->nvar, &scratch);
        fe_arena_release(&scratch);
        s = sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_AUX, SK_CANCEL_AUX,
                        WEFT_U64, 0);
        if (s) {
            return s;
        }
        k->aux_item[SK_CANCEL_AUX] = k->nitem - 1;
    }
    k->skel = sk_skeleton_of(t, tg);
    if (!k->skel) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: no skeleton for this operation");
    }
    return k->skel->prepare(ctx, arena, k);
}
