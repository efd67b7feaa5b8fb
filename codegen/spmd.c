/*
 * codegen/spmd.c: element functions over W lanes (SPMD vectorisation).
 *
 * cg_spmd_exp emits a scalar core term the way cg_exp does, but for W
 * elements at once, as ISPC and Intel's SPMD-on-SIMD compilers do; it
 * walks the term through exp.c's cg_walk, with hooks (spmd_walk) for the
 * terms, primitives and indices whose code differs.  Every
 * leaf of a value is either
 *
 *   uniform   one scalar LLVM value, the same for every lane (constants,
 *             free variables, array extents, anything computed from
 *             uniform values only), or
 *   varying   a <W x T> vector, one element per lane;
 *
 * the LLVM type tells which.  Operations on uniform operands are emitted by
 * cg_prim exactly as in scalar code; an operation with a varying operand
 * broadcasts the uniform ones and becomes a vector operation where the
 * vector instruction computes the same bits as the scalar one per lane
 * (IEEE arithmetic, comparisons, selects, casts, sqrt, rounding), and
 * otherwise cg_prim is applied lane by lane (integer division, bit
 * counts, rotations, f16, and the math functions unless the target gives
 * a vector version through cg_target.vmath): results are therefore the
 * scalar code's, bit for bit.
 *
 * Varying values that are base + (0, 1, ..., W-1) for a uniform base
 * (consecutive: the lane's own position, and sums of it with uniform
 * values) are remembered with their base, so that an array read at such
 * an index is one vector load instead of a gather.
 *
 * Control.  The function carries a mask of active lanes (NULL: all).
 *   - A conditional with a uniform condition is a branch, as in scalar
 *     code.  With a varying condition both sides are computed, each under
 *     its part of the mask, and joined by selects; a side that reads
 *     memory, loops, or is large is skipped by a branch when none of its
 *     lanes is active.  `and` and `or` likewise.
 *   - A `while` whose condition is uniform is a scalar loop (its uniform
 *     state in scalar phis, its varying state in vector phis).  With a
 *     varying condition it is a masked loop: it runs while any lane is
 *     active; each iteration computes the body for all lanes and keeps the
 *     new state only in the active ones (selects), so a finished lane's
 *     state is frozen.  Which state components are uniform is decided
 *     before emitting, by a uniformity analysis over the loop (a fixpoint:
 *     a component is uniform when its initial value is and the body keeps
 *     it so; a varying condition makes every component varying).
 *   - Reads of memory are masked (llvm.masked.load / llvm.masked.gather)
 *     so that inactive lanes touch nothing (consecutive elements of all
 *     active lanes by a plain load: load_under_mask); a uniform read
 *     inside a masked region is reached only when some lane is active (the
 *     branch above), where the scalar code would read the same address.
 *     Partial operations (division by zero, shifts by the width) do not
 *     trap in any lane, as in cg_exp.
 * A term this file cannot vectorise makes cg_spmd_exp fail with
 * WEFT_ERR_INTERNAL and a message, and sets cg_spmd.declined; the
 * skeleton then emits its scalar code instead (skeletons-ir/spmd.c).
 * Any other failure (a primitive marked VEC in lib/fe_ops.h without a
 * vector form here, an error of the target's vector math) is a fault:
 * declined stays false and the compile reports it.
 *
 * Vector math: a math function (exp, log, sin, pow, ...) goes through
 * cg_target.vmath when the target has one (the hook for vector math
 * libraries), else lane by lane through the scalar math1 / math2.
 */
#include <string.h>

#include "cg.h"

#define B (fn->b)

/* "Cannot vectorise this": s->declined tells the skeleton to emit scalar
 * code instead; any other error of cg_spmd_exp is a fault and is reported
 * (skeletons-ir/spmd.c). */
static weft_status no(cg_spmd *s, const char *what, int k)
{
    s->declined = true;
    return fe_error(WEFT_ERR_INTERNAL,
                    "weft_compile: SPMD code generation cannot emit %s (%d)",
                    what, k);
}

/* ---- lanes, broadcasts, masks ------------------------------------------ */

bool cg_spmd_is_varying(LLVMValueRef x)
{
    return LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMVectorTypeKind;
}

static LLVMTypeRef vec_of(cg_spmd *s, LLVMTypeRef t)
{
    return LLVMVectorType(t, s->w);
}

static LLVMValueRef i32c(cg_fn *fn, unsigned k)
{
    return LLVMConstInt(LLVMInt32TypeInContext(fn->llctx), k, 0);
}

LLVMValueRef cg_spmd_broadcast(cg_spmd *s, LLVMValueRef x)
{
    cg_fn *fn = s->fn;
    if (cg_spmd_is_varying(x)) {
        return x;
    }
    LLVMTypeRef vt = vec_of(s, LLVMTypeOf(x));
    if (LLVMIsConstant(x)) {
        LLVMValueRef e[64];
        for (unsigned k = 0; k < s->w; k++) {
            e[k] = x;
        }
        return LLVMConstVector(e, s->w);
    }
    LLVMValueRef v =
        LLVMBuildInsertElement(B, LLVMGetPoison(vt), x, i32c(fn, 0), "");
    LLVMTypeRef mt = vec_of(s, LLVMInt32TypeInContext(fn->llctx));
    return LLVMBuildShuffleVector(B, v, LLVMGetPoison(vt), LLVMConstNull(mt),
                                  "");
}

static LLVMValueRef all_true(cg_spmd *s)
{
    return LLVMConstAllOnes(vec_of(s, LLVMInt1TypeInContext(s->fn->llctx)));
}

/* The mask as a vector (all ones for NULL). */
static LLVMValueRef mask_of(cg_spmd *s)
{
    return s->mask ? s->mask : all_true(s);
}

/* mask & c (c a varying i1 vector). */
static LLVMValueRef mask_and(cg_spmd *s, LLVMValueRef c)
{
    cg_fn *fn = s->fn;
    return s->mask ? LLVMBuildAnd(B, s->mask, c, "") : c;
}

/* Whether any lane of the i1 vector m is set (an i1). */
LLVMValueRef cg_spmd_any(cg_spmd *s, LLVMValueRef m)
{
    LLVMTypeRef t = LLVMTypeOf(m);
    return cg_intrinsic(s->fn, "llvm.vector.reduce.or", &t, 1, &m, 1);
}

/* base + (0, 1, ..., W-1), remembered as consecutive. */
LLVMValueRef cg_spmd_consecutive(cg_spmd *s, LLVMValueRef base)
{
    cg_fn *fn = s->fn;
    LLVMTypeRef t = LLVMTypeOf(base);
    LLVMValueRef e[64];
    for (unsigned k = 0; k < s->w; k++) {
        e[k] = LLVMConstInt(t, k, 0);
    }
    LLVMValueRef v = LLVMBuildAdd(B, cg_spmd_broadcast(s, base),
                                  LLVMConstVector(e, s->w), "");
    if (s->ncons == s->capcons) {
        int cap = s->capcons ? 2 * s->capcons : 16;
        LLVMValueRef *nv =
            fe_arena_alloc(fn->arena, sizeof *nv * (size_t)cap * 2);
        if (!nv) {
            return v; /* only a lost optimisation */
        }
        if (s->ncons) {
            memcpy(nv, s->cons, sizeof *nv * (size_t)s->ncons * 2);
        }
        s->cons = nv;
        s->capcons = cap;
    }
    s->cons[2 * s->ncons] = v;
    s->cons[2 * s->ncons + 1] = base;
    s->ncons++;
    return v;
}

/* The base of consecutive value v, or NULL. */
LLVMValueRef cg_spmd_base(const cg_spmd *s, LLVMValueRef v)
{
    for (int k = s->ncons - 1; k >= 0; k--) {
        if (s->cons[2 * k] == v) {
            return s->cons[2 * k + 1];
        }
    }
    return NULL;
}

weft_status cg_spmd_begin(cg_spmd *s, cg_fn *fn, unsigned w)
{
    memset(s, 0, sizeof *s);
    s->fn = fn;
    s->w = w;
    if (w < 2 || w > 64 || (w & (w - 1))) {
        return no(s, "a lane count that is not a power of two up to 64",
                  (int)w);
    }
    s->venv = fe_arena_alloc(fn->arena, sizeof *s->venv * (fn->nvar + 1));
    s->vgen = fe_arena_alloc(fn->arena, sizeof *s->vgen * (fn->nvar + 1));
    if (!s->venv || !s->vgen) {
        return fe_oom("weft_compile");
    }
    return WEFT_OK;
}

/* ---- memory ------------------------------------------------------------- */

/* The alignment of one element of leaf type t in memory. */
static unsigned align_of(weft_type t)
{
    return t == WEFT_BOOL ? 1u : (unsigned)fe_type_bits(t) / 8;
}

static void set_invariant(cg_fn *fn, LLVMValueRef ld)
{
    LLVMContextRef c = fn->llctx;
    LLVMSetMetadata(ld, LLVMGetMDKindIDInContext(c, "invariant.load", 14),
                    LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, NULL, 0)));
}

static LLVMValueRef zero_block(cg_fn *fn);

/* W consecutive elements (vector type vt) at p under s->mask, the
 * masked-off lanes zero, without a branch: a plain load reads them when
 * every lane is active (a bounds check that passes: the usual case; from
 * zero_block otherwise), a masked load, whose mask is empty when every
 * lane is active, when some are not.  On AMD Zen a masked load of memory
 * that is not in the cache took 2.4 times as long as a plain one (a loop
 * of k-means' fold over 2^22 points, which reads its rows through a
 * bounds check: 7.2 against 2.9 ms on one core); unconditional, both
 * loads are hoisted out of a loop where the masked one was. */
static LLVMValueRef load_under_mask(cg_spmd *s, LLVMTypeRef vt, LLVMValueRef p,
                                    unsigned align, bool invariant)
{
    cg_fn *fn = s->fn;
    LLVMTypeRef mt = LLVMTypeOf(s->mask);
    LLVMValueRef all =
        cg_intrinsic(fn, "llvm.vector.reduce.and", &mt, 1, &s->mask, 1);
    LLVMValueRef q = LLVMBuildSelect(B, all, p, zero_block(fn), "");
    LLVMValueRef plain = LLVMBuildLoad2(B, vt, q, "");
    LLVMSetAlignment(plain, align);
    if (invariant) {
        set_invariant(fn, plain);
    }
    LLVMValueRef rest = LLVMBuildSelect(B, all, LLVMConstNull(mt), s->mask, "");
    LLVMTypeRef over[2] = {vt, LLVMTypeOf(p)};
    LLVMValueRef a[4] = {p, i32c(fn, align), rest, LLVMConstNull(vt)};
    LLVMValueRef masked = cg_intrinsic(fn, "llvm.masked.load", over, 2, a, 4);
    return LLVMBuildSelect(B, all, plain, masked, "");
}

LLVMValueRef cg_spmd_load(cg_spmd *s, weft_type t, LLVMValueRef base,
                          LLVMValueRef i, bool invariant)
{
    cg_fn *fn = s->fn;
    if (!cg_spmd_is_varying(i)) {
        LLVMValueRef x = cg_load(fn, t, base, i);
        if (invariant) {
            LLVMValueRef ld = t == WEFT_BOOL ? LLVMGetOperand(x, 0) : x;
            if (LLVMIsALoadInst(ld)) {
                set_invariant(fn, ld);
            }
        }
        return x;
    }
    LLVMTypeRef mt = cg_mem_type(fn->llctx, t);
    LLVMTypeRef vt = vec_of(s, mt);
    unsigned align = align_of(t);
    LLVMValueRef b0 = cg_spmd_base(s, i);
    LLVMValueRef x;
    if (b0) {
        LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &b0, 1, "");
        if (!s->mask) {
            x = LLVMBuildLoad2(B, vt, p, "");
            LLVMSetAlignment(x, align);
            if (invariant) {
                set_invariant(fn, x);
            }
        } else {
            x = load_under_mask(s, vt, p, align, invariant);
        }
    } else {
        LLVMValueRef ps = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
        LLVMTypeRef over[2] = {vt, LLVMTypeOf(ps)};
        LLVMValueRef a[4] = {ps, i32c(fn, align), mask_of(s),
                             LLVMConstNull(vt)};
        x = cg_intrinsic(fn, "llvm.masked.gather", over, 2, a, 4);
    }
    if (t == WEFT_BOOL) {
        x = LLVMBuildICmp(B, LLVMIntNE, x, LLVMConstNull(vt), "");
    }
    return x;
}

weft_status cg_spmd_array_load(cg_spmd *s, const cg_array *a, LLVMValueRef i,
                               cg_val *out)
{
    weft_status st = cg_val_make(s->fn, a->nleaf, out);
    for (int k = 0; st == WEFT_OK && k < a->nleaf; k++) {
        out->v[k] = cg_spmd_load(s, a->leaf[k], a->ptr[k], i, a->readonly);
    }
    return st;
}

void cg_spmd_store(cg_spmd *s, weft_type t, LLVMValueRef base, LLVMValueRef i0,
                   LLVMValueRef x)
{
    cg_fn *fn = s->fn;
    LLVMTypeRef mt = cg_mem_type(fn->llctx, t);
    x = cg_spmd_broadcast(s, x);
    if (t == WEFT_BOOL) {
        x = LLVMBuildZExt(B, x, vec_of(s, mt), "");
    }
    LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &i0, 1, "");
    LLVMSetAlignment(LLVMBuildStore(B, x, p), align_of(t));
}

/* ---- uniformity analysis ------------------------------------------------ */

/* Which leaves of a value are varying. */
typedef struct vflags {
    int n;
    bool *v;
} vflags;

static weft_status vf_make(cg_spmd *s, int n, vflags *out)
{
    out->n = n;
    out->v =
        n > 0 ? fe_arena_alloc(s->fn->arena, sizeof(bool) * (size_t)n) : NULL;
    if (n > 0 && !out->v) {
        return fe_oom("weft_compile");
    }
    return WEFT_OK;
}

static weft_status vf_all(cg_spmd *s, int n, bool x, vflags *out)
{
    weft_status st = vf_make(s, n, out);
    for (int k = 0; st == WEFT_OK && k < n; k++) {
        out->v[k] = x;
    }
    return st;
}

/* Copy n flags from src to dst: nothing for n == 0, where both may be
 * NULL (a unit-typed value has no leaves, and memcpy of NULL is undefined
 * even for no bytes). */
static void vf_copy(bool *dst, const bool *src, int n)
{
    if (n > 0) {
        memcpy(dst, src, sizeof(bool) * (size_t)n);
    }
}

static bool vf_any(const vflags *f)
{
    for (int k = 0; k < f->n; k++) {
        if (f->v[k]) {
            return true;
        }
    }
    return false;
}

static int leaves_of(cg_spmd *s, weft_type t)
{
    const weft_type *l;
    return cg_leaves(s->fn, t, &l);
}

static weft_status vf_bind(cg_spmd *s, const fe_var *v, const vflags *f)
{
    if (!v || v->id >= s->fn->nvar) {
        return no(s, "a variable outside the environment", -1);
    }
    vflags *c = fe_arena_alloc(s->fn->arena, sizeof *c);
    if (!c) {
        return fe_oom("weft_compile");
    }
    *c = *f;
    s->venv[v->id] = c;
    s->vgen[v->id] = s->gen;
    return WEFT_OK;
}

static weft_status vary(cg_spmd *s, const fe_term *e, vflags *out);

static weft_status vary_apply(cg_spmd *s, const fe_fun *f, const vflags *args,
                              vflags *out)
{
    if (!f || !f->body || (f->arity > 0 && !f->param)) {
        return no(s, "a malformed function", 0);
    }
    for (int k = 0; k < f->arity; k++) {
        weft_status st = vf_bind(s, f->param[k], &args[k]);
        if (st) {
            return st;
        }
    }
    return vary(s, f->body, out);
}

/* The flags of while term e given the flags of its initial state; *cv
 * whether its condition is varying. */
static weft_status vary_while(cg_spmd *s, const fe_term *e, const vflags *init,
                              vflags *out, bool *cv)
{
    vflags st, c, nb;
    weft_status r = vf_make(s, init->n, &st);
    if (r) {
        return r;
    }
    vf_copy(st.v, init->v, init->n);
    *cv = false;
    for (;;) {
        if ((r = vary_apply(s, e->fun[0], &st, &c)) != WEFT_OK) {
            return r;
        }
        if (vf_any(&c)) {
            *cv = true;
            return vf_all(s, st.n, true, out);
        }
        if ((r = vary_apply(s, e->fun[1], &st, &nb)) != WEFT_OK) {
            return r;
        }
        if (nb.n != st.n) {
            return no(s, "a while body of another type", nb.n);
        }
        bool changed = false;
        for (int k = 0; k < st.n; k++) {
            if (nb.v[k] && !st.v[k]) {
                st.v[k] = true;
                changed = true;
            }
        }
        if (!changed) {
            *out = st;
            return WEFT_OK;
        }
    }
}

static weft_status vary(cg_spmd *s, const fe_term *e, vflags *out)
{
    cg_fn *fn = s->fn;
    weft_status r;
    vflags a, b, c;
    if (!e) {
        return no(s, "a missing term", 0);
    }
    switch (e->kind) {
    case FE_CONST:
    case FE_SHAPE: return vf_all(s, leaves_of(s, e->type), false, out);
    case FE_VAR: {
        const fe_var *v = e->u.var;
        if (!v || v->acc || v->id >= fn->nvar) {
            return no(s, "an unknown variable", -1);
        }
        if (s->vgen[v->id] == s->gen && s->venv[v->id]) {
            *out = *s->venv[v->id];
            return WEFT_OK;
        }
        if (!fn->bound[v->id]) {
            return no(s, "an unbound variable", (int)v->id);
        }
        const cg_val *x = &fn->env[v->id];
        if ((r = vf_make(s, x->n, out)) != WEFT_OK) {
            return r;
        }
        for (int k = 0; k < x->n; k++) {
            out->v[k] = cg_spmd_is_varying(x->v[k]);
        }
        return WEFT_OK;
    }
    case FE_PRIM:
    case FE_SHAPE_SIZE:
    case FE_TO_INDEX: {
        bool any = false;
        for (int k = 0; k < e->nkid; k++) {
            if ((r = vary(s, e->kid[k], &a)) != WEFT_OK) {
                return r;
            }
            any = any || vf_any(&a);
        }
        return vf_all(s, 1, any, out);
    }
    case FE_FROM_INDEX:
    case FE_AT:
    case FE_AT_LINEAR: {
        int k0 = e->kind == FE_FROM_INDEX ? 0 : 1;
        bool any = false;
        for (int k = k0; k < e->nkid; k++) {
            if ((r = vary(s, e->kid[k], &a)) != WEFT_OK) {
                return r;
            }
            any = any || vf_any(&a);
        }
        return vf_all(s, leaves_of(s, e->type), any, out);
    }
    case FE_COND:
        if ((r = vary(s, e->kid[0], &c)) != WEFT_OK ||
            (r = vary(s, e->kid[1], &a)) != WEFT_OK ||
            (r = vary(s, e->kid[2], &b)) != WEFT_OK) {
            return r;
        }
        if (a.n != b.n) {
            return no(s, "a conditional with sides of different shapes", a.n);
        }
        if ((r = vf_make(s, a.n, out)) != WEFT_OK) {
            return r;
        }
        for (int k = 0; k < a.n; k++) {
            out->v[k] = c.v[0] || a.v[k] || b.v[k];
        }
        return WEFT_OK;
    case FE_TUPLE: {
        int n = leaves_of(s, e->type), at = 0;
        if ((r = vf_make(s, n, out)) != WEFT_OK) {
            return r;
        }
        for (int k = 0; k < e->nkid; k++) {
            if ((r = vary(s, e->kid[k], &a)) != WEFT_OK) {
                return r;
            }
            if (at + a.n > n) {
                return no(s, "a tuple with too many leaves", at + a.n);
            }
            vf_copy(out->v + at, a.v, a.n);
            at += a.n;
        }
        return WEFT_OK;
    }
    case FE_GET: {
        if ((r = vary(s, e->kid[0], &a)) != WEFT_OK) {
            return r;
        }
        int off = fe_type_leaf_offset(fn->ctx, e->kid[0]->type, e->u.index);
        int n = leaves_of(s, e->type);
        if (off < 0 || off + n > a.n) {
            return no(s, "a projection outside its tuple", e->u.index);
        }
        out->n = n;
        out->v = a.v + off;
        return WEFT_OK;
    }
    case FE_WHILE: {
        bool cv;
        if (e->nfun != 2 || e->nkid != 1) {
            return no(s, "a malformed while", e->nfun);
        }
        if ((r = vary(s, e->kid[0], &a)) != WEFT_OK) {
            return r;
        }
        return vary_while(s, e, &a, out, &cv);
    }
    case FE_LET: {
        const fe_var *v = e->u.var;
        if (!v || v->id >= fn->nvar) {
            return no(s, "a let of an unknown variable", -1);
        }
        if (!v->acc && !e->kid[0]->acc) {
            if ((r = vary(s, e->kid[0], &a)) != WEFT_OK ||
                (r = vf_bind(s, v, &a)) != WEFT_OK) {
                return r;
            }
        }
        return vary(s, e->kid[1], out);
    }
    default: return no(s, "a term of this kind", e->kind);
    }
}

/* ---- primitives --------------------------------------------------------- */

/* Apply cg_prim lane by lane. */
static weft_status per_lane(cg_spmd *s, weft_op op, weft_type rt, weft_type t0,
                            weft_type t1, const LLVMValueRef *a, int n,
                            LLVMValueRef *r)
{
    cg_fn *fn = s->fn;
    LLVMValueRef acc = NULL;
    for (unsigned k = 0; k < s->w; k++) {
        LLVMValueRef x[2], y;
        for (int j = 0; j < n; j++) {
            x[j] = cg_spmd_is_varying(a[j])
                       ? LLVMBuildExtractElement(B, a[j], i32c(fn, k), "")
                       : a[j];
        }
        weft_status st = cg_prim(fn, op, rt, t0, t1, x, &y);
        if (st) {
            return st;
        }
        if (!acc) {
            acc = LLVMGetPoison(vec_of(s, LLVMTypeOf(y)));
        }
        acc = LLVMBuildInsertElement(B, acc, y, i32c(fn, k), "");
    }
    *r = acc;
    return WEFT_OK;
}

static LLVMValueRef vconst_int(cg_spmd *s, LLVMTypeRef et, uint64_t v)
{
    return cg_spmd_broadcast(s, LLVMConstInt(et, v, 0));
}

/* The vector form of op (simd VEC in lib/fe_ops.h) on varying operands
 * (after broadcasting), where it computes the scalar code's bits lane for
 * lane; NULL where it does not for these types (the caller goes lane by
 * lane), and *missing set where op has no vector form here at all. */
static LLVMValueRef vnative(cg_spmd *s, weft_op op, weft_type rt, weft_type t,
                            weft_type t1, LLVMValueRef x, LLVMValueRef y,
                            bool *missing)
{
    cg_fn *fn = s->fn;
    if (t == WEFT_F16 || rt == WEFT_F16 || !fe_is_scalar(t)) {
        return NULL;
    }
    bool flt = fe_is_float(t);
    LLVMTypeRef vt = LLVMTypeOf(x);
    LLVMTypeRef et = LLVMGetElementType(vt);
    if (fe_prims[op].rule == FE_RULE_CMP) { /* lt .. ne, as cg_prim */
        return cg_compare(fn, op, t, x, y);
    }
    switch (op) {
    case WEFT_OP_ADD:
    case WEFT_OP_SUB:
    case WEFT_OP_MUL:
    case WEFT_OP_FDIV: {
        LLVMValueRef v;
        if (flt) {
            v = op == WEFT_OP_ADD   ? LLVMBuildFAdd(B, x, y, "")
                : op == WEFT_OP_SUB ? LLVMBuildFSub(B, x, y, "")
                : op == WEFT_OP_MUL ? LLVMBuildFMul(B, x, y, "")
                                    : LLVMBuildFDiv(B, x, y, "");
            return cg_fp_flag(fn, v);
        }
        if (op == WEFT_OP_FDIV) {
            return NULL;
        }
        return op == WEFT_OP_ADD   ? LLVMBuildAdd(B, x, y, "")
               : op == WEFT_OP_SUB ? LLVMBuildSub(B, x, y, "")
                                   : LLVMBuildMul(B, x, y, "");
    }
    case WEFT_OP_NEG:
        return flt ? cg_fp_flag(fn, LLVMBuildFNeg(B, x, ""))
                   : LLVMBuildSub(B, LLVMConstNull(vt), x, "");
    case WEFT_OP_ABS:
        if (flt) {
            return cg_intrinsic(fn, "llvm.fabs", &vt, 1, &x, 1);
        }
        if (!fe_is_signed(t)) {
            return x;
        }
        return LLVMBuildSelect(
            B, LLVMBuildICmp(B, LLVMIntSLT, x, LLVMConstNull(vt), ""),
            LLVMBuildSub(B, LLVMConstNull(vt), x, ""), x, "");
    case WEFT_OP_SIGNUM:
        if (flt) {
            LLVMValueRef zero = LLVMConstNull(vt);
            LLVMValueRef neg = LLVMBuildSelect(
                B, LLVMBuildFCmp(B, LLVMRealOLT, x, zero, ""),
                cg_spmd_broadcast(s, LLVMConstReal(et, -1)), x, "");
            return LLVMBuildSelect(
                B, LLVMBuildFCmp(B, LLVMRealOGT, x, zero, ""),
                cg_spmd_broadcast(s, LLVMConstReal(et, 1)), neg, "");
        }
        return NULL;
    case WEFT_OP_MIN:
    case WEFT_OP_MAX: {
        LLVMValueRef le = cg_compare(s->fn, WEFT_OP_LE, t, x, y);
        return op == WEFT_OP_MIN ? LLVMBuildSelect(B, le, x, y, "")
                                 : LLVMBuildSelect(B, le, y, x, "");
    }
    case WEFT_OP_BAND: return LLVMBuildAnd(B, x, y, "");
    case WEFT_OP_BOR: return LLVMBuildOr(B, x, y, "");
    case WEFT_OP_BXOR: return LLVMBuildXor(B, x, y, "");
    case WEFT_OP_BNOT: return LLVMBuildNot(B, x, "");
    case WEFT_OP_AND: return LLVMBuildAnd(B, x, y, "");
    case WEFT_OP_OR: return LLVMBuildOr(B, x, y, "");
    case WEFT_OP_NOT: return LLVMBuildNot(B, x, "");
    case WEFT_OP_SHL:
    case WEFT_OP_SHR: {
        if (!fe_is_int(t) || t1 != t) {
            return NULL;
        }
        LLVMValueRef k = LLVMBuildAnd(
            B, y, vconst_int(s, et, (unsigned)fe_type_bits(t) - 1), "");
        return op == WEFT_OP_SHL ? LLVMBuildShl(B, x, k, "")
               : fe_is_signed(t) ? LLVMBuildAShr(B, x, k, "")
                                 : LLVMBuildLShr(B, x, k, "");
    }
    case WEFT_OP_SQRT: {
        /* with the context's fast-math flags, as the target's math1 */
        LLVMValueRef v =
            flt ? cg_intrinsic(fn, "llvm.sqrt", &vt, 1, &x, 1) : NULL;
        LLVMFastMathFlags f = cg_fast_flags(fn);
        if (v && f && LLVMCanValueUseFastMathFlags(v)) {
            LLVMSetFastMathFlags(v, f);
        }
        return v;
    }
    case WEFT_OP_ISNAN: return LLVMBuildFCmp(B, LLVMRealUNO, x, x, "");
    case WEFT_OP_ISINF:
        return LLVMBuildFCmp(
            B, LLVMRealOEQ, cg_intrinsic(fn, "llvm.fabs", &vt, 1, &x, 1),
            cg_spmd_broadcast(s, LLVMConstReal(et, __builtin_inf())), "");
    case WEFT_OP_FLOOR:
    case WEFT_OP_CEILING:
    case WEFT_OP_ROUND:
    case WEFT_OP_TRUNCATE: {
        if (!flt || !fe_is_int(rt)) {
            return NULL;
        }
        const char *name = op == WEFT_OP_FLOOR     ? "llvm.floor"
                           : op == WEFT_OP_CEILING ? "llvm.ceil"
                           : op == WEFT_OP_ROUND   ? "llvm.roundeven"
                                                   : "llvm.trunc";
        LLVMValueRef v = cg_intrinsic(fn, name, &vt, 1, &x, 1);
        LLVMTypeRef over[2] = {vec_of(s, cg_type(fn->llctx, rt)), vt};
        return cg_intrinsic(
            fn, fe_is_signed(rt) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", over,
            2, &v, 1);
    }
    case WEFT_OP_CONVERT: {
        if (!fe_is_scalar(rt)) {
            return NULL;
        }
        LLVMTypeRef rvt = vec_of(s, cg_type(fn->llctx, rt));
        if (rt == t) {
            return x;
        }
        if (rt == WEFT_BOOL) {
            return flt ? LLVMBuildFCmp(B, LLVMRealUNE, x, LLVMConstNull(vt), "")
                       : LLVMBuildICmp(B, LLVMIntNE, x, LLVMConstNull(vt), "");
        }
        if (!flt) {
            int wf = t == WEFT_BOOL ? 1 : fe_type_bits(t);
            if (fe_is_int(rt)) {
                int wt = fe_type_bits(rt);
                if (wf < wt) {
                    return fe_is_signed(t) ? LLVMBuildSExt(B, x, rvt, "")
                                           : LLVMBuildZExt(B, x, rvt, "");
                }
                return wf > wt ? LLVMBuildTrunc(B, x, rvt, "") : x;
            }
            return fe_is_signed(t) ? LLVMBuildSIToFP(B, x, rvt, "")
                                   : LLVMBuildUIToFP(B, x, rvt, "");
        }
        if (fe_is_float(rt)) {
            return fe_type_bits(rt) > fe_type_bits(t)
                       ? LLVMBuildFPExt(B, x, rvt, "")
                       : LLVMBuildFPTrunc(B, x, rvt, "");
        }
        LLVMTypeRef over[2] = {rvt, vt};
        return cg_intrinsic(
            fn, fe_is_signed(rt) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", over,
            2, &x, 1);
    }
    case WEFT_OP_BITCAST:
        if (rt == WEFT_BOOL || t == WEFT_BOOL || rt == t ||
            fe_type_bits(rt) != fe_type_bits(t)) {
            return rt == t ? x : NULL;
        }
        return LLVMBuildBitCast(B, x, vec_of(s, cg_type(fn->llctx, rt)), "");
    default: *missing = true; return NULL;
    }
}

weft_status cg_spmd_prim(cg_spmd *s, weft_op op, weft_type rt, weft_type t0,
                         weft_type t1, const LLVMValueRef *a, LLVMValueRef *r)
{
    cg_fn *fn = s->fn;
    int n = (unsigned)op < WEFT_OP_COUNT_ ? fe_prims[op].arity : 0;
    bool vary_any = false;
    for (int k = 0; k < n; k++) {
        vary_any = vary_any || cg_spmd_is_varying(a[k]);
    }
    if (!vary_any) {
        return cg_prim(fn, op, rt, t0, t1, a, r);
    }
    /* consecutive + uniform stays consecutive */
    if ((op == WEFT_OP_ADD || op == WEFT_OP_SUB) && fe_is_int(t0)) {
        LLVMValueRef b0 = cg_spmd_base(s, a[0]);
        LLVMValueRef b1 = n == 2 ? cg_spmd_base(s, a[1]) : NULL;
        LLVMValueRef sb = NULL;
        weft_status st = WEFT_OK;
        if (b0 && !cg_spmd_is_varying(a[1])) {
            LLVMValueRef q[2] = {b0, a[1]};
            st = cg_prim(fn, op, rt, t0, t1, q, &sb);
        } else if (b1 && op == WEFT_OP_ADD && !cg_spmd_is_varying(a[0])) {
            LLVMValueRef q[2] = {a[0], b1};
            st = cg_prim(fn, op, rt, t0, t1, q, &sb);
        }
        if (st) {
            return st;
        }
        if (sb) {
            *r = cg_spmd_consecutive(s, sb);
            return WEFT_OK;
        }
    }
    LLVMValueRef v[2] = {NULL, NULL};
    for (int k = 0; k < n; k++) {
        v[k] = cg_spmd_broadcast(s, a[k]);
    }
    if (fe_prim_in_library(op) && fn->target && fn->target->vmath &&
        t0 != WEFT_F16) {
        LLVMValueRef m = NULL;
        weft_status st = fn->target->vmath(fn, op, v[0], v[1], &m);
        if (st) {
            return st;
        }
        if (m) {
            *r = m;
            return WEFT_OK;
        }
    }
    if (fe_prims[op].simd == FE_SIMD_VEC) {
        bool missing = false;
        LLVMValueRef x = vnative(s, op, rt, t0, t1, v[0], v[1], &missing);
        if (missing) {
            return fe_error(WEFT_ERR_INTERNAL,
                            "weft_compile: primitive %s is VEC in "
                            "lib/fe_ops.h but SPMD code generation has no "
                            "vector form of it",
                            weft_op_name(op));
        }
        if (x) {
            *r = x;
            return WEFT_OK;
        }
    }
    return per_lane(s, op, rt, t0, t1, a, n, r);
}

/* ---- terms -------------------------------------------------------------- */

#define CG_SPMD_GUARDS 8

/* Whether e (up to a budget of nodes) reads memory or loops: such a side
 * of a varying conditional is skipped when none of its lanes is active,
 * unless CG_SPMD_GUARDS such branches are around it already (a generated
 * chain of conditionals would nest them as deep as the chain, which LLVM's
 * assembler lays out in quadratic time: codegen/exp.c, "Deep
 * conditionals").  *size counts nodes. */
static bool heavy(const fe_term *e, int *budget)
{
    if (!e || --*budget < 0) {
        return true;
    }
    if (e->kind == FE_AT || e->kind == FE_AT_LINEAR || e->kind == FE_WHILE) {
        return true;
    }
    for (int k = 0; k < e->nkid; k++) {
        if (e->kid[k] && !e->kid[k]->acc && heavy(e->kid[k], budget)) {
            return true;
        }
    }
    return false;
}

static bool needs_guard(const cg_spmd *s, const fe_term *e)
{
    int budget = 24;
    return s->guards < CG_SPMD_GUARDS && heavy(e, &budget);
}

static const cg_walk_ops spmd_walk;

static weft_status exp1(cg_spmd *s, const fe_term *e, LLVMValueRef *out)
{
    cg_walker w = {.ops = &spmd_walk, .fn = s->fn, .self = s};
    return cg_walk1(&w, e, out);
}

/* A zero of the type of x, varying. */
static LLVMValueRef vzero(cg_spmd *s, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    return LLVMConstNull(cg_spmd_is_varying(x) ? t : vec_of(s, t));
}

/* Emit e under mask m (varying), skipped by a branch when no lane of m is
 * active if `guard`; every leaf of *out is varying. */
static weft_status under_mask(cg_spmd *s, const fe_term *e, LLVMValueRef m,
                              bool guard, cg_val *out)
{
    cg_fn *fn = s->fn;
    LLVMValueRef saved = s->mask;
    weft_status r;
    s->mask = m;
    if (!guard) {
        r = cg_spmd_exp(s, e, out);
        for (int k = 0; r == WEFT_OK && k < out->n; k++) {
            out->v[k] = cg_spmd_broadcast(s, out->v[k]);
        }
        s->mask = saved;
        return r;
    }
    s->guards++;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "spmd.on");
    LLVMBasicBlockRef join =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "spmd.join");
    LLVMBuildCondBr(B, cg_spmd_any(s, m), body, join);
    LLVMPositionBuilderAtEnd(B, body);
    cg_val x;
    r = cg_spmd_exp(s, e, &x);
    s->mask = saved;
    s->guards--;
    if (r == WEFT_OK) {
        r = cg_val_make(fn, x.n, out);
    }
    if (r) {
        return r;
    }
    for (int k = 0; k < x.n; k++) {
        x.v[k] = cg_spmd_broadcast(s, x.v[k]);
    }
    LLVMBasicBlockRef end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
    for (int k = 0; k < x.n; k++) {
        LLVMValueRef z = vzero(s, x.v[k]);
        out->v[k] = LLVMBuildPhi(B, LLVMTypeOf(x.v[k]), "");
        LLVMValueRef in[2] = {x.v[k], z};
        LLVMBasicBlockRef bb[2] = {end, pre};
        LLVMAddIncoming(out->v[k], in, bb, 2);
    }
    return WEFT_OK;
}

/* c ? t : f leaf by leaf, c varying. */
static weft_status vselect(cg_spmd *s, LLVMValueRef c, const cg_val *t,
                           const cg_val *f, cg_val *out)
{
    cg_fn *fn = s->fn;
    if (t->n != f->n) {
        return no(s, "a conditional with sides of different shapes", t->n);
    }
    weft_status r = cg_val_make(fn, t->n, out);
    for (int k = 0; r == WEFT_OK && k < t->n; k++) {
        out->v[k] = LLVMBuildSelect(B, c, cg_spmd_broadcast(s, t->v[k]),
                                    cg_spmd_broadcast(s, f->v[k]), "");
    }
    return r;
}

/* A branch on uniform c between terms et and ef (NULL: the value k). */
static weft_status uniform_if(cg_spmd *s, LLVMValueRef c, const fe_term *et,
                              const fe_term *ef, LLVMValueRef k, cg_val *out)
{
    cg_fn *fn = s->fn;
    LLVMBasicBlockRef tb =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "u.then");
    LLVMBasicBlockRef eb =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "u.else");
    LLVMBasicBlockRef jb =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "u.join");
    LLVMBuildCondBr(B, c, tb, eb);
    cg_val t, f;
    weft_status r;
    LLVMPositionBuilderAtEnd(B, tb);
    if (et) {
        r = cg_spmd_exp(s, et, &t);
    } else {
        r = cg_val_one(fn, k, &t);
    }
    if (r) {
        return r;
    }
    LLVMBasicBlockRef te = LLVMGetInsertBlock(B);
    LLVMPositionBuilderAtEnd(B, eb);
    if (ef) {
        r = cg_spmd_exp(s, ef, &f);
    } else {
        r = cg_val_one(fn, k, &f);
    }
    if (r) {
        return r;
    }
    LLVMBasicBlockRef fe = LLVMGetInsertBlock(B);
    if (t.n != f.n) {
        return no(s, "a conditional with sides of different shapes", t.n);
    }
    if ((r = cg_val_make(fn, t.n, out)) != WEFT_OK) {
        return r;
    }
    bool *vec = fe_arena_alloc(fn->arena, sizeof(bool) * (size_t)(t.n + 1));
    if (!vec) {
        return fe_oom("weft_compile");
    }
    for (int j = 0; j < t.n; j++) {
        vec[j] = cg_spmd_is_varying(t.v[j]) || cg_spmd_is_varying(f.v[j]);
    }
    LLVMPositionBuilderAtEnd(B, te);
    for (int j = 0; j < t.n; j++) {
        if (vec[j]) {
            t.v[j] = cg_spmd_broadcast(s, t.v[j]);
        }
    }
    LLVMBuildBr(B, jb);
    LLVMPositionBuilderAtEnd(B, fe);
    for (int j = 0; j < t.n; j++) {
        if (vec[j]) {
            f.v[j] = cg_spmd_broadcast(s, f.v[j]);
        }
    }
    LLVMBuildBr(B, jb);
    LLVMPositionBuilderAtEnd(B, jb);
    for (int j = 0; j < t.n; j++) {
        out->v[j] = LLVMBuildPhi(B, LLVMTypeOf(t.v[j]), "");
        LLVMValueRef in[2] = {t.v[j], f.v[j]};
        LLVMBasicBlockRef bb[2] = {te, fe};
        LLVMAddIncoming(out->v[j], in, bb, 2);
    }
    return WEFT_OK;
}

static weft_status exp_short(cg_spmd *s, const fe_term *e, cg_val *out)
{
    cg_fn *fn = s->fn;
    bool and = e->op == WEFT_OP_AND;
    LLVMValueRef x = NULL, y = NULL;
    weft_status r = exp1(s, e->kid[0], &x);
    if (r) {
        return r;
    }
    LLVMTypeRef i1 = LLVMInt1TypeInContext(fn->llctx);
    if (!cg_spmd_is_varying(x)) {
        /* as cg_exp: and = x ? y : false, or = x ? true : y */
        return and ? uniform_if(s, x, e->kid[1], NULL, LLVMConstInt(i1, 0, 0),
                                out)
                   : uniform_if(s, x, NULL, e->kid[1], LLVMConstInt(i1, 1, 0),
                                out);
    }
    if (!needs_guard(s, e->kid[1])) {
        if ((r = exp1(s, e->kid[1], &y)) != WEFT_OK) {
            return r;
        }
    } else {
        cg_val yv;
        LLVMValueRef m = mask_and(s, and? x : LLVMBuildNot(B, x, ""));
        if ((r = under_mask(s, e->kid[1], m, true, &yv)) != WEFT_OK) {
            return r;
        }
        y = yv.v[0];
    }
    y = cg_spmd_broadcast(s, y);
    LLVMValueRef k = cg_spmd_broadcast(s, LLVMConstInt(i1, and? 0 : 1, 0));
    return cg_val_one(fn,
                      and? LLVMBuildSelect(B, x, y, k, "")
                         : LLVMBuildSelect(B, x, k, y, ""),
                      out);
}

static weft_status exp_while(cg_spmd *s, const fe_term *e, cg_val *out)
{
    cg_fn *fn = s->fn;
    if (e->nfun != 2 || e->nkid != 1 || e->fun[0]->arity != 1 ||
        e->fun[1]->arity != 1) {
        return no(s, "a malformed while", e->nfun);
    }
    cg_val init, st, c, next;
    vflags fi, fo;
    bool cv;
    cg_val in;
    weft_status r = cg_spmd_exp(s, e->kid[0], &in);
    if (r == WEFT_OK) {
        r = vf_make(s, in.n, &fi);
    }
    /* a copy: in.v may be a variable's binding (a let-bound or free
     * initial state), which the broadcasts below must not change */
    if (r == WEFT_OK) {
        r = cg_val_make(fn, in.n, &init);
    }
    if (r) {
        return r;
    }
    for (int k = 0; k < init.n; k++) {
        init.v[k] = in.v[k];
        fi.v[k] = cg_spmd_is_varying(init.v[k]);
    }
    s->gen++;
    if ((r = vary_while(s, e, &fi, &fo, &cv)) != WEFT_OK ||
        (r = cg_val_make(fn, init.n, &st)) != WEFT_OK) {
        return r;
    }
    s->gen++;
    if (fo.n != init.n) {
        return no(s, "a while state of another shape", fo.n);
    }
    for (int k = 0; k < init.n; k++) {
        if (fo.v[k]) {
            init.v[k] = cg_spmd_broadcast(s, init.v[k]);
        }
    }
    LLVMValueRef saved = s->mask;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    /* named for what it is: a masked loop or a uniform one */
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(
        fn->llctx, fn->fn, cv ? "spmd.mwhile" : "spmd.uwhile");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "spmd.while.body");
    LLVMBasicBlockRef exit =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "spmd.while.exit");
    cg_phis_open(fn, head, &init, &st);
    /* with a cancel word, poll it every CG_POLL_EVERY iterations, as
     * cg_exp's while does */
    bool poll = fn->cancel && fn->target && fn->target->cancel_poll;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef count = NULL;
    if (poll) {
        count = LLVMBuildPhi(B, i32, "while.count");
        LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
        LLVMAddIncoming(count, &zero, &pre, 1);
    }
    LLVMValueRef active = NULL, act_in = NULL;
    if (cv) {
        active = LLVMBuildPhi(B, LLVMTypeOf(all_true(s)), "active");
        act_in = mask_of(s);
        LLVMAddIncoming(active, &act_in, &pre, 1);
        s->mask = active;
    }
    r = cg_spmd_apply(s, e->fun[0], &st, &c);
    if (r == WEFT_OK && c.n != 1) {
        r = no(s, "a while condition with several leaves", c.n);
    }
    if (r) {
        s->mask = saved;
        return r;
    }
    LLVMValueRef go;
    if (cv) {
        LLVMValueRef now =
            LLVMBuildAnd(B, active, cg_spmd_broadcast(s, c.v[0]), "");
        s->mask = now;
        go = cg_spmd_any(s, now);
        act_in = now;
    } else {
        if (cg_spmd_is_varying(c.v[0])) {
            return no(s, "a while whose condition the analysis took as uniform",
                      0);
        }
        go = c.v[0];
    }
    LLVMBuildCondBr(B, go, body, exit);
    LLVMPositionBuilderAtEnd(B, body);
    r = cg_spmd_apply(s, e->fun[1], &st, &next);
    if (r == WEFT_OK && next.n != st.n) {
        r = no(s, "a while body of another type", next.n);
    }
    if (r) {
        s->mask = saved;
        return r;
    }
    for (int k = 0; k < st.n; k++) {
        bool sv = cg_spmd_is_varying(st.v[k]);
        if (cg_spmd_is_varying(next.v[k]) && !sv) {
            s->mask = saved;
            return no(s, "a while state the analysis took as uniform", k);
        }
        if (sv) {
            next.v[k] = cg_spmd_broadcast(s, next.v[k]);
            if (cv) {
                next.v[k] = LLVMBuildSelect(B, act_in, next.v[k], st.v[k], "");
            }
        }
    }
    LLVMValueRef count1 = NULL;
    if (poll) {
        count1 = LLVMBuildAdd(B, count, LLVMConstInt(i32, 1, 0), "");
        LLVMValueRef due = LLVMBuildICmp(
            B, LLVMIntEQ,
            LLVMBuildAnd(B, count1, LLVMConstInt(i32, CG_POLL_EVERY - 1, 0),
                         ""),
            LLVMConstInt(i32, 0, 0), "");
        LLVMBasicBlockRef check =
            LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "spmd.while.poll");
        LLVMBasicBlockRef stop =
            LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "spmd.while.stop");
        LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(
            fn->llctx, fn->fn, "spmd.while.latch");
        LLVMBuildCondBr(B, due, check, cont);
        LLVMPositionBuilderAtEnd(B, check);
        LLVMBuildCondBr(B, fn->target->cancel_poll(fn), stop, cont);
        LLVMPositionBuilderAtEnd(B, stop);
        if (fn->target->cancel_returns) {
            LLVMBuildRetVoid(B);
        } else {
            LLVMBuildBr(B, exit);
        }
        LLVMPositionBuilderAtEnd(B, cont);
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, head);
    for (int k = 0; k < st.n; k++) {
        LLVMAddIncoming(st.v[k], &next.v[k], &latch, 1);
    }
    if (cv) {
        LLVMAddIncoming(active, &act_in, &latch, 1);
    }
    if (poll) {
        LLVMAddIncoming(count, &count1, &latch, 1);
    }
    s->mask = saved;
    LLVMPositionBuilderAtEnd(B, exit);
    *out = st;
    return WEFT_OK;
}

/* x < y unsigned, either side uniform or varying. */
static LLVMValueRef ult_any(cg_spmd *s, LLVMValueRef x, LLVMValueRef y)
{
    if (cg_spmd_is_varying(x) || cg_spmd_is_varying(y)) {
        x = cg_spmd_broadcast(s, x);
        y = cg_spmd_broadcast(s, y);
    }
    return LLVMBuildICmp(s->fn->b, LLVMIntULT, x, y, "");
}

/* a & b (a may be NULL: b), either side uniform or varying. */
static LLVMValueRef and_any(cg_spmd *s, LLVMValueRef a, LLVMValueRef b)
{
    if (!a) {
        return b;
    }
    if (cg_spmd_is_varying(a) || cg_spmd_is_varying(b)) {
        a = cg_spmd_broadcast(s, a);
        b = cg_spmd_broadcast(s, b);
    }
    return LLVMBuildAnd(s->fn->b, a, b, "");
}

/* A module constant of 512 zero bytes (64 lanes of the widest leaf, 8
 * bytes), read in place of elements outside their array. */
static LLVMValueRef zero_block(cg_fn *fn)
{
    static const char name[] = "weft.zeros";
    LLVMModuleRef mod = LLVMGetGlobalParent(fn->fn);
    LLVMValueRef g = LLVMGetNamedGlobal(mod, name);
    if (!g) {
        LLVMTypeRef ty = LLVMArrayType2(LLVMInt64TypeInContext(fn->llctx), 64);
        g = LLVMAddGlobal(mod, ty, name);
        LLVMSetInitializer(g, LLVMConstNull(ty));
        LLVMSetGlobalConstant(g, 1);
        LLVMSetLinkage(g, LLVMPrivateLinkage);
        LLVMSetAlignment(g, 64);
    }
    return g;
}

/* a ! ix or a !! i at linear position i: as exp.c's exp_at in unchecked
 * mode, zero in every leaf where the index is outside a (inside false),
 * without reading there.  Varying: a load masked by inside (its masked-off
 * lanes give zero); uniform: a scalar load from the element or from
 * zero_block. */
static weft_status at_inside(cg_spmd *s, const cg_array *a, LLVMValueRef i,
                             LLVMValueRef inside, cg_val *out)
{
    cg_fn *fn = s->fn;
    weft_status r;
    if (!inside) { /* rank 0: always inside */
        return cg_spmd_array_load(s, a, i, out);
    }
    if (cg_spmd_is_varying(inside) || cg_spmd_is_varying(i)) {
        LLVMValueRef saved = s->mask;
        s->mask = LLVMBuildAnd(B, mask_of(s), cg_spmd_broadcast(s, inside), "");
        r = cg_spmd_array_load(s, a, cg_spmd_broadcast(s, i), out);
        s->mask = saved;
        return r;
    }
    /* A uniform index: no branch.  Each leaf is read from its element when
     * the index is inside, else from a constant zero (nothing of the array
     * is read), so that the load feeds the lanes' broadcast directly (an
     * operand of the arithmetic on x86) instead of through a phi: n-body's
     * inner loop reads four arrays at body j this way. */
    LLVMValueRef zeros = zero_block(fn);
    if ((r = cg_val_make(fn, a->nleaf, out)) != WEFT_OK) {
        return r;
    }
    for (int k = 0; k < a->nleaf; k++) {
        /* a plain (not inbounds) address: outside, it is computed but
         * never used */
        LLVMTypeRef mt = cg_mem_type(fn->llctx, a->leaf[k]);
        LLVMValueRef p = LLVMBuildGEP2(B, mt, a->ptr[k], &i, 1, "");
        p = LLVMBuildSelect(B, inside, p, zeros, "");
        out->v[k] = cg_spmd_load(s, a->leaf[k], p, cg_i64(fn, 0), a->readonly);
    }
    return WEFT_OK;
}

static weft_status array_of(cg_spmd *s, const fe_term *acc, cg_array *out)
{
    cg_walker w = {.ops = &spmd_walk, .fn = s->fn, .self = s};
    return cg_walk_array(&w, acc, out);
}

/* The terms cg_walk leaves to SPMD code. */
static weft_status spmd_term(const cg_walker *w, const fe_term *e, cg_val *out)
{
    cg_spmd *s = w->self;
    cg_fn *fn = s->fn;
    weft_status r;
    switch (e->kind) {
    case FE_CONST: return cg_exp(fn, e, out);
    case FE_VAR: {
        const fe_var *v = e->u.var;
        if (!v || v->acc || v->id >= fn->nvar || !fn->bound[v->id]) {
            return no(s, "an unbound scalar variable", v ? (int)v->id : -1);
        }
        /* a copy: callers broadcast leaves in place (uniform_if, vselect),
         * which must not reach the environment the scalar tail loop and
         * later terms read */
        const cg_val *x = &fn->env[v->id];
        if ((r = cg_val_make(fn, x->n, out)) != WEFT_OK) {
            return r;
        }
        for (int k = 0; k < x->n; k++) {
            out->v[k] = x->v[k];
        }
        return WEFT_OK;
    }
    case FE_COND: {
        LLVMValueRef c = NULL;
        if ((r = exp1(s, e->kid[0], &c)) != WEFT_OK) {
            return r;
        }
        if (!cg_spmd_is_varying(c)) {
            return uniform_if(s, c, e->kid[1], e->kid[2], NULL, out);
        }
        cg_val t, f;
        LLVMValueRef mt = mask_and(s, c);
        LLVMValueRef mf = mask_and(s, LLVMBuildNot(B, c, ""));
        bool gt = needs_guard(s, e->kid[1]), gf = needs_guard(s, e->kid[2]);
        if ((r = under_mask(s, e->kid[1], mt, gt, &t)) != WEFT_OK ||
            (r = under_mask(s, e->kid[2], mf, gf, &f)) != WEFT_OK) {
            return r;
        }
        return vselect(s, c, &t, &f, out);
    }
    case FE_SHAPE: return cg_exp(fn, e, out);
    case FE_AT:
    case FE_AT_LINEAR: {
        cg_array a;
        cg_val ix;
        if ((r = array_of(s, e->kid[0], &a)) != WEFT_OK ||
            (r = cg_spmd_exp(s, e->kid[1], &ix)) != WEFT_OK) {
            return r;
        }
        LLVMValueRef i = NULL, inside = NULL;
        if (e->kind == FE_AT) {
            if (ix.n != a.rank) {
                return no(s, "an index of the wrong rank", ix.n);
            }
            if ((r = cg_spmd_to_index(s, a.rank, a.extent, ix.v, &i)) !=
                WEFT_OK) {
                return r;
            }
            for (int d = 0; d < a.rank; d++) {
                inside = and_any(s, inside, ult_any(s, ix.v[d], a.extent[d]));
            }
        } else {
            if (ix.n != 1) {
                return no(s, "a linear index with several leaves", ix.n);
            }
            i = ix.v[0];
            LLVMValueRef n = cg_i64(fn, 1);
            for (int d = 0; d < a.rank; d++) {
                n = d == 0 ? a.extent[0] : LLVMBuildMul(B, n, a.extent[d], "");
            }
            inside = ult_any(s, i, n);
        }
        return at_inside(s, &a, i, inside, out);
    }
    case FE_WHILE: return exp_while(s, e, out);
    default: return no(s, "a term of this kind", e->kind);
    }
}

static weft_status spmd_prim(const cg_walker *w, weft_op op, weft_type rt,
                             weft_type t0, weft_type t1, const LLVMValueRef *a,
                             LLVMValueRef *r)
{
    return cg_spmd_prim(w->self, op, rt, t0, t1, a, r);
}

static weft_status spmd_to_index(const cg_walker *w, int rank,
                                 const LLVMValueRef *sh, const LLVMValueRef *ix,
                                 LLVMValueRef *out)
{
    return cg_spmd_to_index(w->self, rank, sh, ix, out);
}

static weft_status spmd_from_index(const cg_walker *w, int rank,
                                   const LLVMValueRef *sh, LLVMValueRef i,
                                   LLVMValueRef *ix)
{
    return cg_spmd_from_index(w->self, rank, sh, i, ix);
}

static weft_status spmd_short(const cg_walker *w, const fe_term *e, cg_val *out)
{
    return exp_short(w->self, e, out);
}

static weft_status spmd_fail(const cg_walker *w, const char *what, int k)
{
    return no(w->self, what, k);
}

weft_status cg_spmd_exp(cg_spmd *s, const fe_term *e, cg_val *out)
{
    cg_walker w = {.ops = &spmd_walk, .fn = s->fn, .self = s};
    return cg_walk(&w, e, out);
}

weft_status cg_spmd_apply(cg_spmd *s, const fe_fun *f, const cg_val *args,
                          cg_val *out)
{
    cg_walker w = {.ops = &spmd_walk, .fn = s->fn, .self = s};
    return cg_walk_apply(&w, f, args, out);
}

weft_status cg_spmd_to_index(cg_spmd *s, int rank, const LLVMValueRef *sh,
                             const LLVMValueRef *ix, LLVMValueRef *out)
{
    weft_status r = WEFT_OK;
    if (rank == 0) {
        *out = cg_i64(s->fn, 0);
        return WEFT_OK;
    }
    LLVMValueRef x = ix[0];
    for (int k = 1; r == WEFT_OK && k < rank; k++) {
        LLVMValueRef a[2] = {x, sh[k]};
        r = cg_spmd_prim(s, WEFT_OP_MUL, WEFT_I64, WEFT_I64, WEFT_I64, a, &x);
        if (r == WEFT_OK) {
            LLVMValueRef b[2] = {x, ix[k]};
            r = cg_spmd_prim(s, WEFT_OP_ADD, WEFT_I64, WEFT_I64, WEFT_I64, b,
                             &x);
        }
    }
    *out = x;
    return r;
}

weft_status cg_spmd_from_index(cg_spmd *s, int rank, const LLVMValueRef *sh,
                               LLVMValueRef i, LLVMValueRef *ix)
{
    bool vary_any = cg_spmd_is_varying(i);
    for (int k = 0; k < rank; k++) {
        vary_any = vary_any || cg_spmd_is_varying(sh[k]);
    }
    if (!vary_any) {
        cg_from_index(s->fn, rank, sh, i, ix);
        return WEFT_OK;
    }
    weft_status r = WEFT_OK;
    for (int k = rank - 1; r == WEFT_OK && k >= 1; k--) {
        LLVMValueRef a[2] = {i, sh[k]};
        r = cg_spmd_prim(s, WEFT_OP_REM, WEFT_I64, WEFT_I64, WEFT_I64, a,
                         &ix[k]);
        if (r == WEFT_OK) {
            r = cg_spmd_prim(s, WEFT_OP_QUOT, WEFT_I64, WEFT_I64, WEFT_I64, a,
                             &i);
        }
    }
    if (rank > 0) {
        ix[0] = i;
    }
    return r;
}

/* How cg_walk emits SPMD code (forward-declared above). */
static const cg_walk_ops spmd_walk = {.term = spmd_term,
                                      .prim = spmd_prim,
                                      .short_circuit = spmd_short,
                                      .to_index = spmd_to_index,
                                      .from_index = spmd_from_index,
                                      .fail = spmd_fail};
