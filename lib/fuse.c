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
 * One rule runs the other way, a consumer into its producer: a map that
 * stays an array over a fold whose result nothing else reads becomes part
 * of the fold, which applies the map's function as it stores each result
 * (the store rule, below).
 *
 * A backend may decline a fused operand (its skeleton for that consumer
 * cannot read it inline); it then clears `delayed` and computes the
 * producer as an array, which is always correct.  The interpreter ignores
 * the flag.  WEFT_FLAG_NO_FUSION turns the pass off.
 */
#include <limits.h>
#include <string.h>

#include "fe.h"

/* A producer (lib/fe_kinds.h's producer column) of one array. */
static bool is_producer(const fe_term *t)
{
    return fe_kinds[t->kind].producer && t->atype && t->atype->narrays == 1;
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
    bool data_ok; /* every data use may take P */
    slots data;   /* uses of v's elements */
    slots shape;  /* shape(v) terms */
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
    case FE_CONST: return true;
    case FE_TUPLE:
    case FE_GET:
    case FE_AGET:
        for (int i = 0; i < t->nkid; i++) {
            if (!is_trivial(t->kid[i])) {
                return false;
            }
        }
        return true;
    default: return false;
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
    fe_term **kid =
        nkid ? fe_arena_alloc(ar, sizeof *kid * (size_t)nkid) : NULL;
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
            if (a->kind == FE_VAR || a->kind == FE_PARAM || a->kind == FE_USE ||
                (a->kind == FE_AGET && is_trivial(a))) {
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
    default: return NULL;
    }
}

/* Whether producer p costs nothing to compute at each of its uses: a
 * generate of a constant over a trivial shape (a permute's zeros), or a
 * map of a component of a trivial array's elements (the sibling rule's
 * projections: one read, as a use of the array itself would be). */
static bool is_cheap(const fe_term *p)
{
    if (p->kind == FE_MAP && p->nkid == 1 && is_trivial(p->kid[0])) {
        const fe_fun *f = p->fun[0];
        const fe_term *b = f->body;
        return f->arity == 1 && b && b->kind == FE_GET && b->nkid == 1 &&
               b->kid[0]->kind == FE_VAR && b->kid[0]->u.var == f->param[0];
    }
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

/* ---- the sibling rule ----------------------------------------------------
 *
 * Permutes of one scope (an array scope: the program, an awhile's body or
 * condition, an acond's branch) whose combines are each one native atomic
 * (siblings_op: add on integers and floats, min, max, band, bor, bxor on
 * integers), whose defaults are generates of a constant over the same
 * shape, whose index functions are the same function, and whose sources
 * have one rank and are each a parameter, a variable, a used array (at
 * most three of those, one zipWith's operands) or a generate of a
 * constant, become one permute of a tuple (k-means' sums of x, sums of y
 * and counts over one assignment):
 *
 *     let v = permute (\x y -> (x.0 op0 y.0, .., x.m op_m y.m))
 *                     (generate sh (\_ -> (c0, .., c_m)))  ix
 *                     (zipWith (\a b .. -> (.., a, .., c_l, .., b, ..))
 *                              src_a src_b ..)
 *     in .. map (\t -> t.l) v  in place of sibling l ..
 *
 * one kernel and one pass over the index function in place of m + 1, and
 * the skeletons' componentwise mode (skeletons-ir/permute.c, PERMUTE_RMW
 * over leaves) makes it one atomic a leaf.  Where the sources' shapes are
 * not provably one (the same term, up to let-bound shape variables and
 * `index (shape_size sh)` of a rank-1 sh), the zipWith would cut them to
 * the shortest, so v is `acond (their extents are equal) (the permute)
 * (the siblings as written, joined by a generate of tuples)`: the test is
 * a host scalar (no kernel), and the kernels of the other branch are
 * compiled but run only for sources of unequal lengths.  The fused let
 * goes just before the first sibling's place in the scope's chain of
 * lets, where everything the siblings read is bound.  Only siblings
 * whose places are operands that fuse (or lets whose every use is one)
 * take part, so that each projection is computed inline by its consumer
 * (the let rule, run again after, copies a let-bound one into its uses)
 * rather than by a kernel of its own. */

#define SIBLINGS_MAX                                                           \
    8 /* leaves of the fused permute: the skeletons'
                          SK_PERMUTE_LEAVES_MAX */

typedef struct sib_pass {
    fe_arena *ar;
    weft_context *ctx;
    fe_core *core;
    uint32_t nvar;         /* the variables before the rule: the maps' */
    const fe_term **bound; /* scalar let variables' right-hand sides */
    int *pos;              /* let variables' places in their scope's chain
                              (INT_MAX: a let off the chain) */
    int *scope;            /* and the scope (a number) that binds them */
    int cur, nscope;       /* the scope being looked at; scopes so far */
    bool oom;
} sib_pass;

/* Records let variable v bound at chain place `at` of the current scope,
 * to rhs. */
static void sib_bind(sib_pass *sp, const fe_var *v, int at, const fe_term *rhs)
{
    if (v->id < sp->nvar) {
        sp->pos[v->id] = at;
        sp->scope[v->id] = sp->cur;
        sp->bound[v->id] = v->acc ? NULL : rhs;
    }
}

/* A sibling candidate: its slot and its place in the chain. */
typedef struct sib {
    fe_term **slot;
    int at;
} sib;

/* Whether t reads variable v. */
static bool mentions(const fe_term *t, const fe_var *v)
{
    if (!t) {
        return false;
    }
    if (t->kind == FE_VAR && t->u.var == v) {
        return true;
    }
    for (int i = 0; i < t->nkid; i++) {
        if (mentions(t->kid[i], v)) {
            return true;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if (mentions(t->fun[i]->body, v)) {
            return true;
        }
    }
    return false;
}

/* Whether every use of array variable v in t reads its elements as an
 * operand that fuses (fe_fusible_operand, outside functions) or asks for
 * its shape: a projection put there (the let rule) is computed inline. */
static bool uses_fuse(const fe_term *t, const fe_var *v)
{
    if (!t || (t->kind == FE_VAR && t->u.var == v)) {
        return !t; /* a use met here is not an operand that fuses */
    }
    if (t->kind == FE_SHAPE && t->kid[0]->kind == FE_VAR &&
        t->kid[0]->u.var == v) {
        return true;
    }
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *k = t->kid[i];
        bool op = k && k->kind == FE_VAR && k->u.var == v;
        if (op ? !(t->acc && fe_fusible_operand(t, i)) : !uses_fuse(k, v)) {
            return false;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if (mentions(t->fun[i]->body, v)) {
            return false; /* the let rule moves nothing into functions */
        }
    }
    return true;
}

typedef struct sib_list {
    int n, cap;
    sib *s;
} sib_list;

/* The operation of a permute combine that is one native atomic (the
 * skeletons' PERMUTE_RMW), or -1. */
static int siblings_op(const fe_term *t)
{
    const fe_fun *f = t->fun[0];
    const fe_term *b = f->body;
    weft_type ty = t->type;
    if (f->arity != 2 || !f->param || !b || b->kind != FE_PRIM ||
        b->nkid != 2 || b->type != ty || !fe_is_scalar(ty)) {
        return -1;
    }
    const fe_term *x = b->kid[0], *y = b->kid[1];
    if (x->kind != FE_VAR || y->kind != FE_VAR ||
        !((x->u.var == f->param[0] && y->u.var == f->param[1]) ||
          (x->u.var == f->param[1] && y->u.var == f->param[0]))) {
        return -1;
    }
    switch ((weft_op)b->op) {
    case WEFT_OP_ADD:
        return fe_is_int(ty) || ty == WEFT_F32 || ty == WEFT_F64 ? b->op : -1;
    case WEFT_OP_MIN:
    case WEFT_OP_MAX:
    case WEFT_OP_BAND:
    case WEFT_OP_BOR:
    case WEFT_OP_BXOR: return fe_is_int(ty) ? b->op : -1;
    default: return -1;
    }
}

/* Shape term t with let-bound shape variables replaced by what they are
 * bound to, and `index (shape_size sh)` by sh where sh has rank 1. */
static const fe_term *shape_norm(const sib_pass *sp, const fe_term *t)
{
    for (;;) {
        if (t->kind == FE_VAR && !t->u.var->acc && t->u.var->id < sp->nvar &&
            sp->bound[t->u.var->id]) {
            t = sp->bound[t->u.var->id];
        } else if (t->kind == FE_TUPLE && t->type == WEFT_DIM(1) &&
                   t->nkid == 1 && t->kid[0]->kind == FE_SHAPE_SIZE &&
                   t->kid[0]->kid[0]->type == WEFT_DIM(1)) {
            t = t->kid[0]->kid[0];
        } else {
            return t;
        }
    }
}

static bool same_shape(const sib_pass *sp, const fe_term *a, const fe_term *b)
{
    return fe_term_same(shape_norm(sp, a), shape_norm(sp, b), NULL, NULL);
}

/* Whether t is a generate of a scalar constant over a trivial shape or
 * the shape of a trivial array. */
static bool const_generate(const fe_term *t)
{
    if (t->kind != FE_GENERATE || t->fun[0]->body->kind != FE_CONST) {
        return false;
    }
    const fe_term *sh = t->kid[0];
    return is_trivial(sh) ||
           (sh->kind == FE_SHAPE && sh->nkid == 1 && is_trivial(sh->kid[0]));
}

/* A source the rule takes: an array read as it is, or a generate of a
 * constant. */
static bool sibling_source(const fe_term *t)
{
    return t->kind == FE_VAR || t->kind == FE_PARAM || t->kind == FE_USE ||
           const_generate(t);
}

/* Whether permute t may join a group. */
static bool sibling_candidate(const fe_term *t)
{
    return t->kind == FE_PERMUTE && t->nkid == 2 && t->nfun == 2 && t->atype &&
           t->atype->narrays == 1 && fe_is_scalar(t->type) &&
           t->fun[1]->arity == 1 && siblings_op(t) >= 0 &&
           const_generate(t->kid[0]) && sibling_source(t->kid[1]);
}

/* The shape of source t (a term to copy). */
static const fe_term *source_shape(const fe_term *t)
{
    return t->kind == FE_GENERATE ? t->kid[0] : NULL;
}

/* Whether t and u may be fused. */
static bool siblings_match(const sib_pass *sp, const fe_term *t,
                           const fe_term *u)
{
    const fe_fun *ft = t->fun[1], *fu = u->fun[1];
    return t->rank == u->rank && t->kid[1]->rank == u->kid[1]->rank &&
           ft->targ[0] == fu->targ[0] &&
           same_shape(sp, t->kid[0]->kid[0], u->kid[0]->kid[0]) &&
           fe_term_same(ft->body, fu->body, ft->param[0], fu->param[0]);
}

static void sib_add(sib_pass *sp, sib_list *l, fe_term **slot, int at)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        sib *n = fe_arena_alloc(sp->ar, sizeof *n * (size_t)cap);
        if (!n) {
            sp->oom = true;
            return;
        }
        for (int i = 0; i < l->n; i++) {
            n[i] = l->s[i];
        }
        l->s = n;
        l->cap = cap;
    }
    l->s[l->n++] = (sib){.slot = slot, .at = at};
}

static void siblings_scope(sib_pass *sp, fe_term **root);

/* Candidates and let places under *slot (chain place `at`; fuses: the
 * slot is an operand that fuses, where a projection costs nothing);
 * awhile bodies and acond branches are scopes of their own. */
static void sib_collect(sib_pass *sp, fe_term **slot, int at, bool fuses,
                        sib_list *l)
{
    fe_term *t = *slot;
    if (!t) {
        return;
    }
    if (t->kind == FE_LET) {
        sib_bind(sp, t->u.var, INT_MAX, t->kid[0]); /* off the chain */
    }
    if (t->kind == FE_AWHILE) {
        sib_collect(sp, &t->kid[0], at, false, l);
        for (int i = 0; i < t->nfun; i++) {
            siblings_scope(sp, &t->fun[i]->body);
        }
        return;
    }
    if (t->kind == FE_ACOND) {
        sib_collect(sp, &t->kid[0], at, false, l);
        siblings_scope(sp, &t->kid[1]);
        siblings_scope(sp, &t->kid[2]);
        return;
    }
    if (fuses && sibling_candidate(t)) {
        sib_add(sp, l, slot, at);
        return;
    }
    if (!t->acc && t->kind != FE_LET) {
        return; /* scalar code: its array reads are other scopes' */
    }
    for (int i = 0; i < t->nkid; i++) {
        bool f = t->kind == FE_LET
                     ? i == 0 && t->u.var->acc && uses_fuse(t->kid[1], t->u.var)
                     : fe_fusible_operand(t, i);
        sib_collect(sp, &t->kid[i], at, f, l);
    }
}

/* Whether every let variable of the current scope that t reads is bound
 * before chain place at (the variables of enclosing scopes are). */
static bool bound_before(const sib_pass *sp, const fe_term *t, int at)
{
    if (!t) {
        return true;
    }
    if (t->kind == FE_VAR) {
        uint32_t id = t->u.var->id;
        return id >= sp->nvar || sp->scope[id] != sp->cur || sp->pos[id] < at;
    }
    for (int i = 0; i < t->nkid; i++) {
        if (!bound_before(sp, t->kid[i], at)) {
            return false;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if (!bound_before(sp, t->fun[i]->body, at)) {
            return false;
        }
    }
    return true;
}

/* ---- building the fused permute ---- */

static fe_var *sib_var(sib_pass *sp, bool acc, bool param, weft_type type,
                       const fe_atype *atype)
{
    fe_var *v = fe_arena_alloc(sp->ar, sizeof *v);
    if (!v) {
        sp->oom = true;
        return NULL;
    }
    *v = (fe_var){.id = sp->core->nvar++,
                  .acc = acc,
                  .param = param,
                  .type = acc ? 0 : type,
                  .atype = atype};
    return v;
}

/* A scalar function of arity n (at most SIBLINGS_MAX) over arguments of
 * types targ[0..n-1]. */
static fe_fun *sib_fun(sib_pass *sp, int n, const weft_type *targ,
                       weft_type ret)
{
    fe_fun *f = fe_arena_alloc(sp->ar, sizeof *f);
    weft_type *ta = fe_arena_alloc(sp->ar, sizeof *ta * (size_t)n);
    fe_var **pa = fe_arena_alloc(sp->ar, sizeof *pa * (size_t)n);
    if (!f || !ta || !pa) {
        sp->oom = true;
        return NULL;
    }
    f->arity = n;
    f->targ = ta;
    f->param = pa;
    f->ret = ret;
    for (int i = 0; i < n; i++) {
        ta[i] = targ[i];
        if (!(pa[i] = sib_var(sp, false, true, targ[i], NULL))) {
            return NULL;
        }
    }
    return f;
}

static fe_term *sib_term(sib_pass *sp, int kind, weft_type type, int nkid)
{
    fe_term *t = new_term(sp->ar, NULL, kind, type, nkid);
    if (!t) {
        sp->oom = true;
    }
    return t;
}

static fe_term *sib_varref(sib_pass *sp, fe_var *v)
{
    fe_term *t = sib_term(sp, FE_VAR, v->acc ? v->atype->elt : v->type, 0);
    if (t) {
        t->u.var = v;
        t->acc = v->acc;
        if (v->acc) {
            t->rank = v->atype->rank;
            t->atype = v->atype;
        }
    }
    return t;
}

/* get t l, of type ty. */
static fe_term *sib_get(sib_pass *sp, fe_term *t, int l, weft_type ty)
{
    fe_term *g = sib_term(sp, FE_GET, ty, 1);
    if (g && t) {
        g->kid[0] = t;
        g->u.index = l;
        return g;
    }
    return NULL;
}

static fe_term *sib_prim(sib_pass *sp, int op, weft_type ty, fe_term *a,
                         fe_term *b)
{
    fe_term *t = sib_term(sp, FE_PRIM, ty, 2);
    if (!t || !a || !b) {
        return NULL;
    }
    t->op = (uint16_t)op;
    t->kid[0] = a;
    t->kid[1] = b;
    return t;
}

/* An array term of kind k over element type ty (a generate or permute
 * being built: its kids and functions set by the caller). */
static fe_term *sib_array(sib_pass *sp, int kind, weft_type ty, int rank,
                          int nkid, int nfun)
{
    fe_term *t = sib_term(sp, kind, ty, nkid);
    fe_fun **fun = fe_arena_alloc(sp->ar, sizeof *fun * (size_t)nfun);
    const fe_atype *at = fe_atype_array(sp->ar, ty, rank);
    if (!t || !fun || !at) {
        sp->oom = true;
        return NULL;
    }
    t->acc = true;
    t->rank = rank;
    t->atype = at;
    t->nfun = nfun;
    t->fun = fun;
    return t;
}

/* The shape of source t, a new term. */
static fe_term *source_shape_term(sib_pass *sp, const fe_term *t)
{
    if (t->kind == FE_GENERATE) {
        return copy_trivial(sp->ar, t->kid[0]);
    }
    fe_term *sh = sib_term(sp, FE_SHAPE, WEFT_DIM(t->rank), 1);
    if (sh && !(sh->kid[0] = copy_trivial(sp->ar, t))) {
        sp->oom = true;
        return NULL;
    }
    return sh;
}

/* Whether the sources of group g provably have one shape; else *c is
 * the test that they have (the extents of each equal to the first's). */
static bool sources_same(sib_pass *sp, const sib *g, int m, fe_term **c)
{
    const fe_term *s0 = (*g[0].slot)->kid[1];
    const fe_term *sh0 = source_shape(s0);
    bool same = true;
    *c = NULL;
    for (int l = 1; l < m; l++) {
        const fe_term *sl = (*g[l].slot)->kid[1];
        const fe_term *shl = source_shape(sl);
        fe_term tmp0 = {.kind = FE_SHAPE,
                        .type = WEFT_DIM(s0->rank),
                        .nkid = 1,
                        .kid = (fe_term **)&s0};
        fe_term tmpl = {.kind = FE_SHAPE,
                        .type = WEFT_DIM(sl->rank),
                        .nkid = 1,
                        .kid = (fe_term **)&sl};
        if (same_shape(sp, sh0 ? sh0 : &tmp0, shl ? shl : &tmpl)) {
            continue;
        }
        same = false;
        for (int d = 0; d < s0->rank; d++) {
            fe_term *eq =
                sib_prim(sp, WEFT_OP_EQ, WEFT_BOOL,
                         sib_get(sp, source_shape_term(sp, s0), d, WEFT_I64),
                         sib_get(sp, source_shape_term(sp, sl), d, WEFT_I64));
            *c = *c ? sib_prim(sp, WEFT_OP_AND, WEFT_BOOL, *c, eq) : eq;
            if (!*c) {
                sp->oom = true;
                return false;
            }
        }
    }
    return same;
}

/* The fused source: map or zipWith of the array sources (at most 3) to
 * the tuple, each constant source's leaf its constant; a generate of the
 * constants when no source is an array. */
static fe_term *fused_source(sib_pass *sp, const sib *g, int m, weft_type tt)
{
    const fe_term *arr[3];
    weft_type at[3];
    int na = 0;
    for (int l = 0; l < m; l++) {
        const fe_term *src = (*g[l].slot)->kid[1];
        if (!const_generate(src)) {
            arr[na] = src;
            at[na++] = src->type;
        }
    }
    int srank = (*g[0].slot)->kid[1]->rank;
    fe_term *t;
    fe_fun *f;
    if (na == 0) {
        weft_type dim = WEFT_DIM(srank);
        t = sib_array(sp, FE_GENERATE, tt, srank, 1, 1);
        f = sib_fun(sp, 1, &dim, tt);
        if (t && !(t->kid[0] = source_shape_term(sp, (*g[0].slot)->kid[1]))) {
            t = NULL;
        }
    } else {
        t = sib_array(sp, na == 1 ? FE_MAP : FE_ZIPWITH, tt, srank, na, 1);
        f = sib_fun(sp, na, at, tt);
        for (int k = 0; t && k < na; k++) {
            if (!(t->kid[k] = copy_trivial(sp->ar, arr[k]))) {
                t = NULL;
            }
        }
    }
    fe_term *b = sib_term(sp, FE_TUPLE, tt, m);
    if (!t || !f || !b) {
        sp->oom = true;
        return NULL;
    }
    for (int l = 0, k = 0; l < m; l++) {
        const fe_term *src = (*g[l].slot)->kid[1];
        fe_term *v = const_generate(src) ? new_term(sp->ar, src->fun[0]->body,
                                                    FE_CONST, src->type, 0)
                                         : sib_varref(sp, f->param[k++]);
        if (!(b->kid[l] = v)) {
            sp->oom = true;
            return NULL;
        }
    }
    f->body = b;
    t->fun[0] = f;
    return t;
}

/* The siblings as they were, as one array of tuples (the acond's other
 * branch where the sources' shapes differ):
 *     let q0 = P0 in .. let q_m = P_m in
 *     generate (shape of the defaults) (\i -> (q0 ! i, .., q_m ! i)) */
static fe_term *siblings_as_written(sib_pass *sp, fe_term *const *perm, int m,
                                    weft_type tt)
{
    const fe_term *p0 = perm[0];
    int rank = p0->rank;
    weft_type dim = WEFT_DIM(rank);
    fe_term *gen = sib_array(sp, FE_GENERATE, tt, rank, 1, 1);
    fe_fun *f = sib_fun(sp, 1, &dim, tt);
    fe_term *b = sib_term(sp, FE_TUPLE, tt, m);
    if (!gen || !f || !b ||
        !(gen->kid[0] = copy_trivial(sp->ar, p0->kid[0]->kid[0]))) {
        sp->oom = true;
        return NULL;
    }
    f->body = b;
    gen->fun[0] = f;
    fe_term *r = gen;
    for (int l = m - 1; l >= 0; l--) {
        fe_var *q = sib_var(sp, true, false, 0, perm[l]->atype);
        fe_term *at = sib_term(sp, FE_AT, perm[l]->type, 2);
        fe_term *let = sib_term(sp, FE_LET, tt, 2);
        if (!q || !at || !let) {
            return NULL;
        }
        at->kid[0] = sib_varref(sp, q);
        at->kid[1] = sib_varref(sp, f->param[0]);
        b->kid[l] = at;
        let->u.var = q;
        let->acc = true;
        let->rank = rank;
        let->atype = gen->atype;
        let->kid[0] = perm[l];
        let->kid[1] = r;
        if (!at->kid[0] || !at->kid[1]) {
            sp->oom = true;
            return NULL;
        }
        r = let;
    }
    return r;
}

/* Fuses the m siblings of group g into `let v = permute ..` at *place,
 * each sibling becoming `map (\x -> get x l) v`; where their sources'
 * shapes may differ, `let v = acond (they are one) (permute ..) (the
 * siblings as written, as one array)`. */
static void fuse_group(sib_pass *sp, const sib *g, int m, fe_term **place)
{
    const fe_term *t0 = *g[0].slot;
    int rank = t0->rank;
    weft_type leaf[SIBLINGS_MAX], tt;
    fe_term *perm_l[SIBLINGS_MAX];
    for (int l = 0; l < m; l++) {
        perm_l[l] = *g[l].slot;
        leaf[l] = perm_l[l]->type;
    }
    if (fe_type_tuple(sp->ctx, m, leaf, &tt) != WEFT_OK) {
        sp->oom = true;
        return;
    }
    /* the combine, componentwise */
    weft_type pair[2] = {tt, tt};
    fe_fun *comb = sib_fun(sp, 2, pair, tt);
    fe_term *cb = comb ? sib_term(sp, FE_TUPLE, tt, m) : NULL;
    for (int l = 0; cb && l < m; l++) {
        if (!(cb->kid[l] = sib_prim(
                  sp, siblings_op(perm_l[l]), leaf[l],
                  sib_get(sp, sib_varref(sp, comb->param[0]), l, leaf[l]),
                  sib_get(sp, sib_varref(sp, comb->param[1]), l, leaf[l])))) {
            cb = NULL;
        }
    }
    /* the default: generate sh (\_ -> (c0, .., c_m)) */
    weft_type dim = WEFT_DIM(rank);
    fe_term *def = sib_array(sp, FE_GENERATE, tt, rank, 1, 1);
    fe_fun *dfun = sib_fun(sp, 1, &dim, tt);
    fe_term *db = sib_term(sp, FE_TUPLE, tt, m);
    for (int l = 0; db && l < m; l++) {
        const fe_term *c = perm_l[l]->kid[0]->fun[0]->body;
        if (!(db->kid[l] = new_term(sp->ar, c, FE_CONST, c->type, 0))) {
            db = NULL;
        }
    }
    fe_term *cond;
    bool same = sources_same(sp, g, m, &cond);
    fe_term *src = fused_source(sp, g, m, tt);
    fe_term *perm = sib_array(sp, FE_PERMUTE, tt, rank, 2, 2);
    fe_term *copied = copy_trivial(sp->ar, t0->kid[0]->kid[0]);
    fe_var *v = perm ? sib_var(sp, true, false, 0, perm->atype) : NULL;
    fe_term *let = sib_term(sp, FE_LET, 0, 2);
    if (sp->oom || !cb || !def || !dfun || !db || !src || !perm || !copied ||
        !v || !let || (!same && !cond)) {
        sp->oom = true;
        return;
    }
    comb->body = cb;
    dfun->body = db;
    def->kid[0] = copied;
    def->fun[0] = dfun;
    perm->kid[0] = def;
    perm->kid[1] = src;
    perm->fun[0] = comb;
    perm->fun[1] = t0->fun[1];
    fe_term *value = perm;
    if (!same) {
        fe_term *ac = sib_term(sp, FE_ACOND, tt, 3);
        fe_term *other = siblings_as_written(sp, perm_l, m, tt);
        if (!ac || !other) {
            sp->oom = true;
            return;
        }
        ac->acc = true;
        ac->rank = rank;
        ac->atype = perm->atype;
        ac->kid[0] = cond;
        ac->kid[1] = perm;
        ac->kid[2] = other;
        value = ac;
    }
    /* each sibling: map (\x -> get x l) v */
    for (int l = 0; l < m; l++) {
        fe_term *map = sib_array(sp, FE_MAP, leaf[l], rank, 1, 1);
        fe_fun *proj = sib_fun(sp, 1, &tt, leaf[l]);
        if (!map || !proj) {
            return;
        }
        proj->body = sib_get(sp, sib_varref(sp, proj->param[0]), l, leaf[l]);
        map->kid[0] = sib_varref(sp, v);
        map->fun[0] = proj;
        if (!proj->body || !map->kid[0]) {
            sp->oom = true;
            return;
        }
        *g[l].slot = map;
    }
    fe_term *body = *place;
    let->u.var = v;
    let->acc = true;
    let->kid[0] = value;
    let->kid[1] = body;
    let->type = body->type;
    let->rank = body->rank;
    let->atype = body->atype;
    *place = let;
}

/* The sibling rule in one scope: the chain of lets at *root. */
static void siblings_scope(sib_pass *sp, fe_term **root)
{
    int outer = sp->cur;
    sp->cur = ++sp->nscope;
    fe_term **chain[256];
    int n = 0;
    fe_term **s = root;
    while (*s && (*s)->kind == FE_LET && n < 256) {
        chain[n] = s;
        s = &(*s)->kid[1];
        n++;
    }
    sib_list l = {0};
    for (int k = 0; k < n && !sp->oom; k++) {
        fe_term *let = *chain[k];
        sib_collect(sp, &let->kid[0], k,
                    let->u.var->acc && uses_fuse(let->kid[1], let->u.var), &l);
        sib_bind(sp, let->u.var, k, let->kid[0]);
    }
    sib_collect(sp, s, n, false, &l);
    for (int i = 0; i < l.n && !sp->oom; i++) {
        if (!l.s[i].slot) {
            continue;
        }
        sib g[SIBLINGS_MAX] = {l.s[i]};
        int m = 1;
        /* array sources: at most 3, the operands of one zipWith */
        int na = !const_generate((*l.s[i].slot)->kid[1]);
        for (int j = i + 1; j < l.n && m < SIBLINGS_MAX; j++) {
            fe_term *u = l.s[j].slot ? *l.s[j].slot : NULL;
            int a = u ? !const_generate(u->kid[1]) : 0;
            if (u && na + a <= 3 && siblings_match(sp, *l.s[i].slot, u)) {
                g[m++] = l.s[j];
                na += a;
            }
        }
        /* the fused let before the first one's place (the list is in
         * chain order): everything the group reads bound by then */
        int at = g[0].at;
        bool ok = m > 1;
        for (int k = 0; ok && k < m; k++) {
            ok = bound_before(sp, *g[k].slot, at);
        }
        if (!ok) {
            continue;
        }
        fuse_group(sp, g, m, at < n ? chain[at] : s);
        for (int k = 0; k < m; k++) {
            for (int j = i; j < l.n; j++) {
                if (l.s[j].slot == g[k].slot) {
                    l.s[j].slot = NULL;
                }
            }
        }
    }
    sp->cur = outer;
}

/* The sibling rule over the whole core; false when out of memory. */
static bool siblings(fe_core *core)
{
    fe_arena *ar = core->arena;
    sib_pass sp = {.ar = ar, .ctx = ar->ctx, .core = core, .nvar = core->nvar};
    size_t n = core->nvar > 0 ? core->nvar : 1;
    sp.bound = fe_arena_alloc(ar, sizeof *sp.bound * n);
    sp.pos = fe_arena_alloc(ar, sizeof *sp.pos * n);
    sp.scope = fe_arena_alloc(ar, sizeof *sp.scope * n);
    if (!sp.bound || !sp.pos || !sp.scope) {
        return false;
    }
    siblings_scope(&sp, &core->root);
    return !sp.oom;
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

/* ---- the store rule --------------------------------------------------
 *
 * `map g (fold f z a)` (or fold1), a map that stays manifest over a fold
 * whose result nothing else reads (a fold read twice is let-bound: the
 * map's operand is then a variable): the fold applies g to each result as
 * it stores it, and the map is gone: the fold's term takes the map's type
 * and g as its second function (fe_fold_post), so that the pairs of
 * k-means' fold of (distance, j) are never written, only j.  Only for
 * results of rank 1 and more (a fold to a unit stores once: nothing to
 * gain, and its one-row paths stay as they are).  Run after mark, which
 * tells which maps stay manifest: a delayed map is computed inside its
 * consumer, and its fold must then be an array of its own. */
static fe_term *store_fold(fe_arena *ar, fe_term *map)
{
    fe_term *fold = map->kid[0];
    fe_fun **fun = fe_arena_alloc(ar, sizeof *fun * 2);
    fe_term *t = fe_arena_alloc(ar, sizeof *t);
    if (!fun || !t) {
        return NULL;
    }
    *t = *fold;
    fun[0] = fold->fun[0];
    fun[1] = map->fun[0];
    t->nfun = 2;
    t->fun = fun;
    t->type = map->type;
    t->rank = map->rank;
    t->atype = map->atype;
    return t;
}

static bool store_rule(fe_arena *ar, fe_term **slot)
{
    fe_term *t = *slot;
    if (!t) {
        return true;
    }
    if (t->kind == FE_MAP && !t->delayed && t->nkid == 1 && t->nfun == 1 &&
        t->rank >= 1 && t->atype && t->atype->narrays == 1) {
        const fe_term *a = t->kid[0];
        if ((a->kind == FE_FOLD || a->kind == FE_FOLD1) && a->nfun == 1 &&
            a->atype && a->atype->narrays == 1) {
            if (!(*slot = store_fold(ar, t))) {
                *slot = t;
                return false;
            }
            t = *slot;
        }
    }
    for (int i = 0; i < t->nkid; i++) {
        if (!store_rule(ar, &t->kid[i])) {
            return false;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if (!store_rule(ar, &t->fun[i]->body)) {
            return false;
        }
    }
    return true;
}

weft_status fe_fuse(fe_core *core)
{
    if (core->no_fusion) {
        return WEFT_OK;
    }
    let_rule(core->arena, &core->root, false);
    float_lets(&core->root);
    if (!siblings(core)) {
        return fe_oom("weft_compile");
    }
    /* the siblings' projections into their uses */
    let_rule(core->arena, &core->root, false);
    mark(core->root);
    if (!store_rule(core->arena, &core->root)) {
        return fe_oom("weft_compile");
    }
    return WEFT_OK;
}
