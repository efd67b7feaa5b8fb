/*
 * lib/fuse.c: array fusion (DESIGN.md pipeline step 4; seed 001, "Fusion").
 *
 * Needs: a simplified core (a tree: a producer that is used more than once
 * has been bound by a let, so a producer that appears as an operand is used
 * exactly once there).  Provides: the same core with `delayed` set on every
 * producer that its consumer computes inline instead of reading a manifest
 * array.
 *
 * The delayed representation of seed 001 maps onto the core as follows: a
 * term that is a variable, a parameter, a used array or any collective
 * operation that is not a producer is Done (manifest); a producer marked
 * delayed is Yield (an extent and a function from an index to a value:
 * generate, backpermute, transform, replicate, slice, reshape) or Step (a
 * value function over another array at the same index: map, zipWith).
 * Backends compose these index functions when they emit the consumer.
 *
 * Producers (generate, map, zipWith, backpermute, transform, replicate,
 * slice, reshape) fuse into each other and into the array input of fold,
 * fold1, foldSeg, fold1Seg, the scans, and the source and the default of
 * permute (the default where the backend can compute it inline without
 * changing which error a run reports: runtime/plan.c).  A
 * producer that is let-bound because it has several data uses stays
 * manifest: no work is duplicated.  The cost rule for gathers: a producer
 * fused into backpermute, transform, replicate or slice is computed once
 * per element of the consumer, which may be more often than once per
 * element of the producer (replicate reads each source element several
 * times); this is the trade Accelerate makes too, since it saves writing
 * and reading the intermediate array.  Stencils read every element several
 * times and take their input manifest.
 *
 * A backend may decline a fused operand (its skeleton for that consumer
 * cannot read it inline); it then clears `delayed` and computes the
 * producer as an array, which is always correct.  The interpreter ignores
 * the flag.  WEFT_FLAG_NO_FUSION turns the pass off.
 */
#include "fe.h"

/* A producer (lib/fe_kinds.h's producer column) of one array. */
static bool is_producer(const fe_term *t)
{
    return fe_kinds[t->kind].producer && t->atype &&
           t->atype->narrays == 1;
}

bool fe_fusible_operand(const fe_term *t, int k)
{
    return k < 32 && (fe_kinds[t->kind].fusible >> k & 1u);
}

/* ---- the let rule --------------------------------------------------------
 *
 * `let v = P in body`, P a producer: if body uses v's data exactly once, as
 * an operand of an array operation outside any function or awhile body,
 * and its other uses only ask for v's shape, then P is moved to that use
 * (where it may fuse) and each shape(v) becomes P's shape computed from
 * P's operands -- when that is cheap: P's operands are variables,
 * parameters, used arrays (or components of them) or constants.  A P
 * that costs nothing (a generate of a constant: k-means' zeros, the
 * default of two permutes) is copied to each of several such uses
 * instead, where it fuses.  Otherwise the let stays. */

typedef struct slots {
    int n, cap;
    fe_term ***at;
} slots;

typedef struct uses {
    bool data_ok;      /* every data use may take P */
    slots data;        /* uses of v's elements */
    slots shape;       /* shape(v) terms */
    bool oom;
} uses;

static void slot_add(fe_arena *ar, slots *s, fe_term **slot, bool *oom)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        fe_term ***n = fe_arena_alloc(ar, sizeof *n * (size_t)cap);
        if (!n) {
            *oom = true;
            return;
        }
        for (int i = 0; i < s->n; i++) {
            n[i] = s->at[i];
        }
        s->at = n;
        s->cap = cap;
    }
    s->at[s->n++] = slot;
}

static bool is_trivial(const fe_term *t)
{
    switch ((fe_kind)t->kind) {
    case FE_VAR:
    case FE_PARAM:
    case FE_USE:
    case FE_CONST:
        return true;
    case FE_TUPLE:
    case FE_GET:
    case FE_AGET:
        for (int i = 0; i < t->nkid; i++) {
            if (!is_trivial(t->kid[i])) {
                return false;
            }
        }
        return true;
    default:
        return false;
    }
}

static void count_uses(fe_arena *ar, fe_term **slot, const fe_var *v,
                       bool parent_acc, bool inside, uses *u)
{
    fe_term *t = *slot;
    if (!t) {
        return;
    }
    if (t->kind == FE_VAR && t->u.var == v) {
        u->data_ok = u->data_ok && parent_acc && !inside;
        slot_add(ar, &u->data, slot, &u->oom);
        return;
    }
    if (t->kind == FE_SHAPE && t->kid[0]->kind == FE_VAR &&
        t->kid[0]->u.var == v) {
        slot_add(ar, &u->shape, slot, &u->oom);
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        count_uses(ar, &t->kid[i], v, t->acc, inside, u);
    }
    for (int i = 0; i < t->nfun; i++) {
        count_uses(ar, &t->fun[i]->body, v, false, true, u);
    }
}

static fe_term *new_term(fe_arena *ar, const fe_term *like, int kind,
                         weft_type type, int nkid)
{
    fe_term *t = fe_arena_alloc(ar, sizeof *t);
    fe_term **kid = nkid ? fe_arena_alloc(ar, sizeof *kid * (size_t)nkid) : NULL;
    if (!t || (nkid && !kid)) {
        return NULL;
    }
    if (like) {
        *t = *like;
    }
    t->kind = (uint8_t)kind;
    t->type = type;
    t->nkid = nkid;
    t->kid = kid;
    if (!like) {
        t->acc = false;
        t->nfun = 0;
        t->fun = NULL;
    }
    return t;
}

/* A copy of trivial term t. */
static fe_term *copy_trivial(fe_arena *ar, const fe_term *t)
{
    fe_term *c = new_term(ar, t, t->kind, t->type, t->nkid);
    for (int i = 0; c && i < t->nkid; i++) {
        if (!(c->kid[i] = copy_trivial(ar, t->kid[i]))) {
            return NULL;
        }
    }
    return c;
}

/* A term computing the shape of producer p from its operands, or NULL
 * when that is not cheap (or on allocation failure). */
static fe_term *shape_expr(fe_arena *ar, const fe_term *p)
{
    switch ((fe_kind)p->kind) {
    case FE_MAP:
    case FE_ZIPWITH: {
        fe_term *sh[3];
        int n = p->nkid < 3 ? p->nkid : 3;
        for (int k = 0; k < n; k++) {
            const fe_term *a = p->kid[k];
            if (a->kind == FE_VAR || a->kind == FE_PARAM ||
                a->kind == FE_USE || (a->kind == FE_AGET && is_trivial(a))) {
                fe_term *s = new_term(ar, NULL, FE_SHAPE, WEFT_DIM(a->rank), 1);
                if (!s || !(s->kid[0] = copy_trivial(ar, a))) {
                    return NULL;
                }
                sh[k] = s;
            } else if (!(sh[k] = shape_expr(ar, a))) {
                return NULL;
            }
        }
        if (n == 1) {
            return sh[0];
        }
        /* the intersection: the minimum of each component */
        fe_term *ix = new_term(ar, NULL, FE_TUPLE, WEFT_DIM(p->rank), p->rank);
        for (int d = 0; ix && d < p->rank; d++) {
            fe_term *acc = NULL;
            for (int k = 0; k < n; k++) {
                fe_term *g = new_term(ar, NULL, FE_GET, WEFT_I64, 1);
                if (!g || !(g->kid[0] = copy_trivial(ar, sh[k]))) {
                    return NULL;
                }
                g->u.index = d;
                if (acc) {
                    fe_term *m = new_term(ar, NULL, FE_PRIM, WEFT_I64, 2);
                    if (!m) {
                        return NULL;
                    }
                    m->op = WEFT_OP_MIN;
                    m->kid[0] = acc;
                    m->kid[1] = g;
                    g = m;
                }
                acc = g;
            }
            ix->kid[d] = acc;
        }
        return ix;
    }
    case FE_GENERATE:
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
    case FE_RESHAPE:
        return is_trivial(p->kid[0]) ? copy_trivial(ar, p->kid[0]) : NULL;
    default:
        return NULL;
    }
}

/* Whether producer p costs nothing to compute at each of its uses: a
 * generate of a constant over a trivial shape (a permute's zeros). */
static bool is_cheap(const fe_term *p)
{
    if (p->kind != FE_GENERATE || !is_trivial(p->kid[0])) {
        return false;
    }
    const fe_term *b = p->fun[0]->body;
    if (b->kind == FE_TUPLE) {
        for (int i = 0; i < b->nkid; i++) {
            if (b->kid[i]->kind != FE_CONST) {
                return false;
            }
        }
        return true;
    }
    return b->kind == FE_CONST;
}

/* A copy of cheap producer p for one more use (its function shared: the
 * constant body reads no variable). */
static fe_term *copy_cheap(fe_arena *ar, const fe_term *p)
{
    fe_term *c = new_term(ar, p, p->kind, p->type, p->nkid);
    fe_fun **fun = fe_arena_alloc(ar, sizeof *fun);
    if (!c || !fun || !(c->kid[0] = copy_trivial(ar, p->kid[0]))) {
        return NULL;
    }
    fun[0] = p->fun[0];
    c->fun = fun;
    return c;
}

static void let_rule(fe_arena *ar, fe_term **slot, bool inside)
{
    fe_term *t = *slot;
    if (!t) {
        return;
    }
    if (t->kind == FE_LET && !inside && t->u.var && t->u.var->acc &&
        is_producer(t->kid[0])) {
        uses u = {.data_ok = true};
        count_uses(ar, &t->kid[1], t->u.var, t->acc, false, &u);
        /* one data use; or several, of a producer that costs nothing */
        bool ok = !u.oom && u.data_ok &&
                  (u.data.n == 1 || (u.data.n > 1 && is_cheap(t->kid[0])));
        fe_term **shapes = NULL, **copies = NULL;
        if (ok && u.shape.n > 0) {
            shapes = fe_arena_alloc(ar, sizeof *shapes * (size_t)u.shape.n);
            for (int i = 0; ok && shapes && i < u.shape.n; i++) {
                ok = (shapes[i] = shape_expr(ar, t->kid[0])) != NULL;
            }
            ok = ok && shapes;
        }
        if (ok && u.data.n > 1) {
            copies = fe_arena_alloc(ar, sizeof *copies * (size_t)u.data.n);
            for (int i = 1; ok && copies && i < u.data.n; i++) {
                ok = (copies[i] = copy_cheap(ar, t->kid[0])) != NULL;
            }
            ok = ok && copies;
        }
        if (ok) {
            for (int i = 0; i < u.shape.n; i++) {
                *u.shape.at[i] = shapes[i];
            }
            *u.data.at[0] = t->kid[0];
            for (int i = 1; i < u.data.n; i++) {
                *u.data.at[i] = copies[i];
            }
            *slot = t->kid[1];
            let_rule(ar, slot, inside);
            return;
        }
    }
    for (int i = 0; i < t->nkid; i++) {
        let_rule(ar, &t->kid[i], inside);
    }
    for (int i = 0; i < t->nfun; i++) {
        /* an awhile body is array code of its own; scalar functions hold
         * no array lets */
        let_rule(ar, &t->fun[i]->body, t->kind != FE_AWHILE);
    }
}

/* Lets float out of the operands of array operations (seed 001: a
 * manifest let floats), so that `map f (let e = s in backpermute ...)`
 * becomes `let e = s in map f (backpermute ...)` and the producer is next
 * to its consumer.  Variables are unique in the core, so moving a binding
 * outwards captures nothing; function and awhile bodies are not crossed,
 * and neither are the branches of acond (a let there may fail, and must
 * run only when its branch is taken). */
static void float_lets(fe_term **slot)
{
    fe_term *t = *slot;
    if (!t) {
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        float_lets(&t->kid[i]);
    }
    for (int i = 0; i < t->nfun; i++) {
        float_lets(&t->fun[i]->body);
    }
    if (!t->acc || t->kind == FE_LET) {
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        fe_term *let = t->kid[i];
        if (t->kind == FE_ACOND && i > 0) {
            break; /* a branch's lets run only when it is taken */
        }
        if (let && let->kind == FE_LET && let->acc) {
            /* t(.., let v = b in e, ..)  =>  let v = b in t(.., e, ..) */
            t->kid[i] = let->kid[1];
            let->kid[1] = t;
            let->type = t->type;
            let->rank = t->rank;
            let->atype = t->atype;
            *slot = let;
            float_lets(&let->kid[1]);
            return;
        }
    }
}

static void mark(fe_term *t)
{
    if (!t) {
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        fe_term *kid = t->kid[i];
        if (!kid) {
            continue;
        }
        if (fe_fusible_operand(t, i) && kid->acc && is_producer(kid)) {
            kid->delayed = true;
        }
        mark(kid);
    }
    for (int i = 0; i < t->nfun; i++) {
        mark(t->fun[i]->body);
    }
}

weft_status fe_fuse(fe_core *core)
{
    if (core->no_fusion) {
        return WEFT_OK;
    }
    let_rule(core->arena, &core->root, false);
    float_lets(&core->root);
    mark(core->root);
    return WEFT_OK;
}
