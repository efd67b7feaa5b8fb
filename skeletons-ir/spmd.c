/*
 * skeletons-ir/spmd.c: the generate family over W lanes on the CPU.
 *
 * generate.c's loop `for (i = start; i < end; i++) out[i] = element(i)`
 * becomes, when the kernel's target asks for SPMD code (sk_emit.spmd_bits)
 * and everything the element reads is something this file can read for W
 * consecutive positions at once,
 *
 *     for (i = start; i + W <= end; i += W)      element over W lanes
 *         out[i .. i+W-1] = element(i .. i+W-1);  (codegen/spmd.c)
 *     for (; i < end; i++)                        scalar remainder
 *         out[i] = element(i);                    (input.c, as before)
 *
 * The lanes hold consecutive linear positions, so reads of manifest
 * operands at the same position (map, zipWith of equal shapes, reshape)
 * are vector loads and the stores are vector stores.  A generate of rank
 * r >= 2 needs the multi-index: the range is walked row by row (a row is
 * the innermost dimension), so that the outer components are uniform
 * (computed once per row, with one division) and only the innermost one
 * varies, consecutively, and each row has its own scalar remainder.
 *
 * fold.c calls sk_spmd_fold_range for the elements of a row whose
 * computation runs a while loop: W of them over lanes, then combined lane
 * after lane in order with the scalar combine (the result the scalar loop
 * gives), the rest by the scalar loop.
 *
 * Operands are read as input.c's sk_read reads them (the same cases, by
 * linear position or by multi-index), over lanes: backpermute, transform
 * and slice gather under the mask of the lanes whose index lies inside
 * the source, and set the error word when an active lane's does not.
 * What codegen/spmd.c cannot emit (cg_spmd.declined) leaves *done false
 * and no function behind: generate.c then emits the scalar loop.  Any
 * other failure (a fault in code generation) is the compile's error.
 */
#include <stdio.h>
#include <string.h>

#include "sk.h"

static bool is_delayed(sk_fn *f, const fe_term *t)
{
    return t->delayed || t == f->e->k->op;
}

/* Whether t can be read over lanes here (everything sk_read reads). */
static bool readable(sk_emit *e, const fe_term *t, bool top)
{
    if (!top && !t->delayed) {
        return true;
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP: return readable(e, t->kid[0], false);
    case FE_ZIPWITH:
        for (int k = 0; k < t->nkid; k++) {
            if (!readable(e, t->kid[k], false)) {
                return false;
            }
        }
        return t->nkid <= 3;
    case FE_GENERATE: return true;
    case FE_RESHAPE: return readable(e, t->kid[1], false);
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
    case FE_REPLICATE:
    case FE_SLICE:
        return readable(e,
                        t->kind == FE_REPLICATE || t->kind == FE_SLICE
                            ? t->kid[0]
                            : t->kid[1],
                        false);
    default: return false;
    }
}

/* Whether reading t needs the multi-index of its positions (a generate of
 * rank 2 or more reached through maps and zipWiths). */
static bool needs_ix(sk_fn *f, const fe_term *t)
{
    if (!is_delayed(f, t)) {
        return false;
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP: return needs_ix(f, t->kid[0]);
    case FE_ZIPWITH:
        if (!f->e->uniform) {
            return t->rank >= 2;
        }
        for (int k = 0; k < t->nkid; k++) {
            if (needs_ix(f, t->kid[k])) {
                return true;
            }
        }
        return false;
    case FE_GENERATE:
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
    case FE_REPLICATE:
    case FE_SLICE: return t->rank >= 2;
    default: return false;
    }
}

static weft_status vread(sk_fn *f, cg_spmd *s, const fe_term *t, LLVMValueRef i,
                         const cg_val *ix, cg_val *out);

/* ix from i in t's extent when the caller gave only i (input.c's
 * index_of over lanes). */
static weft_status vindex_of(sk_fn *f, cg_spmd *s, const fe_term *t,
                             LLVMValueRef i, const cg_val *ix, cg_val *tmp,
                             const cg_val **out)
{
    if (ix) {
        *out = ix;
        return WEFT_OK;
    }
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status r = sk_extent(f, t, ext);
    if (r == WEFT_OK) {
        r = cg_val_make(&f->fn, t->rank, tmp);
    }
    if (r == WEFT_OK) {
        r = cg_spmd_from_index(s, t->rank, ext, i, tmp->v);
    }
    *out = tmp;
    return r;
}

/* a[jx] where jx lies inside a's extent, zero elsewhere, and the error
 * word set when an active lane lies outside (input.c's gather over
 * lanes).  The read is masked by `inside`. */
static weft_status vgather(sk_fn *f, cg_spmd *s, const fe_term *a,
                           const cg_val *jx, int code, cg_val *out)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef b = fn->b;
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status r = sk_extent(f, a, ext);
    if (r) {
        return r;
    }
    LLVMValueRef inside = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    for (int d = 0; d < a->rank; d++) {
        LLVMValueRef q[2] = {jx->v[d], ext[d]}, lt;
        /* unsigned: a negative index is outside too */
        if ((r = cg_spmd_prim(s, WEFT_OP_LT, WEFT_BOOL, WEFT_U64, WEFT_U64, q,
                              &lt)) != WEFT_OK) {
            return r;
        }
        LLVMValueRef c[2] = {inside, lt};
        if ((r = cg_spmd_prim(s, WEFT_OP_AND, WEFT_BOOL, WEFT_BOOL, WEFT_BOOL,
                              c, &inside)) != WEFT_OK) {
            return r;
        }
    }
    if (!cg_spmd_is_varying(inside)) {
        /* uniform: as the scalar code, a branch; an error only when some
         * lane is active (the scalar code of an active lane would read) */
        cg_if c, e;
        cg_val x, z;
        cg_if_begin(fn, &c, inside);
        if ((r = vread(f, s, a, NULL, jx, &x)) != WEFT_OK) {
            return r;
        }
        cg_if_else(fn, &c);
        if (s->mask) {
            cg_if_begin(fn, &e, cg_spmd_any(s, s->mask));
            sk_set_error(f, code);
            cg_if_end(fn, &e);
        } else {
            sk_set_error(f, code);
        }
        const weft_type *leaves;
        int n = cg_leaves(fn, a->type, &leaves);
        if ((r = cg_val_make(fn, n, &z)) != WEFT_OK) {
            return r;
        }
        for (int l = 0; l < n; l++) {
            z.v[l] = LLVMConstNull(LLVMTypeOf(x.v[l]));
        }
        return cg_if_merge(fn, &c, &x, &z, out);
    }
    LLVMValueRef all = s->mask ? s->mask : LLVMConstAllOnes(LLVMTypeOf(inside));
    LLVMValueRef bad = LLVMBuildAnd(b, all, LLVMBuildNot(b, inside, ""), "");
    cg_if c;
    cg_if_begin(fn, &c, cg_spmd_any(s, bad));
    sk_set_error(f, code);
    cg_if_end(fn, &c);
    LLVMValueRef saved = s->mask;
    s->mask = LLVMBuildAnd(b, all, inside, "");
    cg_val x;
    r = vread(f, s, a, NULL, jx, &x);
    s->mask = saved;
    if (r == WEFT_OK) {
        r = cg_val_make(fn, x.n, out);
    }
    for (int l = 0; r == WEFT_OK && l < x.n; l++) {
        LLVMValueRef v = cg_spmd_broadcast(s, x.v[l]);
        out->v[l] =
            LLVMBuildSelect(b, inside, v, LLVMConstNull(LLVMTypeOf(v)), "");
    }
    return r;
}

/* The element of t over the lanes at linear positions i (uniform or
 * varying; consecutive ones read as vectors), or at multi-index ix;
 * exactly one of i and ix is given (input.c's sk_read over lanes). */
static weft_status vread(sk_fn *f, cg_spmd *s, const fe_term *t, LLVMValueRef i,
                         const cg_val *ix, cg_val *out)
{
    weft_status r;
    cg_val x[3], tmp, jx;
    const cg_val *ixv;
    if (!is_delayed(f, t)) {
        const cg_array *a = sk_manifest_array(f, t);
        if (!a) {
            return fe_error(WEFT_ERR_INTERNAL,
                            "weft_compile: a kernel reads an operand it was "
                            "not given");
        }
        LLVMValueRef j = i;
        if (!j && (r = cg_spmd_to_index(s, a->rank, a->extent, ix->v, &j)) !=
                      WEFT_OK) {
            return r;
        }
        return cg_spmd_array_load(s, a, j, out);
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP:
        if ((r = vread(f, s, t->kid[0], i, ix, &x[0])) != WEFT_OK) {
            return r;
        }
        return cg_spmd_apply(s, t->fun[0], x, out);
    case FE_ZIPWITH:
        if (i && f->e->uniform) {
            for (int k = 0; k < t->nkid && k < 3; k++) {
                if ((r = vread(f, s, t->kid[k], i, NULL, &x[k])) != WEFT_OK) {
                    return r;
                }
            }
        } else {
            if ((r = vindex_of(f, s, t, i, ix, &tmp, &ixv)) != WEFT_OK) {
                return r;
            }
            for (int k = 0; k < t->nkid && k < 3; k++) {
                if ((r = vread(f, s, t->kid[k], NULL, ixv, &x[k])) != WEFT_OK) {
                    return r;
                }
            }
        }
        return cg_spmd_apply(s, t->fun[0], x, out);
    case FE_GENERATE:
        if ((r = vindex_of(f, s, t, i, ix, &tmp, &ixv)) != WEFT_OK) {
            return r;
        }
        return cg_spmd_apply(s, t->fun[0], ixv, out);
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
        if ((r = vindex_of(f, s, t, i, ix, &tmp, &ixv)) != WEFT_OK ||
            (r = cg_spmd_apply(s, t->fun[0], ixv, &jx)) != WEFT_OK) {
            return r;
        }
        if (t->kind == FE_BACKPERMUTE) {
            return vgather(f, s, t->kid[1], &jx, CG_ERR_GATHER, out);
        }
        if ((r = vgather(f, s, t->kid[1], &jx, CG_ERR_GATHER, &x[0])) !=
            WEFT_OK) {
            return r;
        }
        return cg_spmd_apply(s, t->fun[1], x, out);
    case FE_RESHAPE:
        if (!i) {
            LLVMValueRef ext[WEFT_MAX_RANK];
            if ((r = sk_extent(f, t, ext)) != WEFT_OK ||
                (r = cg_spmd_to_index(s, t->rank, ext, ix->v, &i)) != WEFT_OK) {
                return r;
            }
        }
        return vread(f, s, t->kid[1], i, NULL, out);
    case FE_REPLICATE:
    case FE_SLICE: {
        if ((r = vindex_of(f, s, t, i, ix, &tmp, &ixv)) != WEFT_OK) {
            return r;
        }
        const fe_term *a = t->kid[0];
        if ((r = sk_source_index(f, t, ixv, &jx)) != WEFT_OK) {
            return r;
        }
        if (t->kind == FE_REPLICATE) {
            return vread(f, s, a, NULL, &jx, out);
        }
        return vgather(f, s, a, &jx, CG_ERR_SLICE, out);
    }
    default:
        s->declined = true; /* not vectorised: the scalar loop reads it */
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: SPMD code cannot read this operand");
    }
}

/* Store y, over s's lanes, as element i of output 0 (i: the first
 * lane's).  WEFT_ERR_INTERNAL, `what` naming y, where y has not the
 * output's leaves. */
static weft_status store_out(sk_fn *f, cg_spmd *s, LLVMValueRef i,
                             const cg_val *y, const char *what)
{
    const cg_array *o = sk_out_array(f, 0);
    if (y->n != o->nleaf) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: %s of the wrong shape", what);
    }
    for (int k = 0; k < o->nleaf; k++) {
        cg_spmd_store(s, o->leaf[k], o->ptr[k], i, y->v[k]);
    }
    return WEFT_OK;
}

/* out[i .. i+W-1] = element(i .. i+W-1), with ix the multi-index of i (or
 * NULL). */
static weft_status vstep(sk_fn *f, cg_spmd *s, LLVMValueRef i, const cg_val *ix)
{
    cg_val y;
    LLVMValueRef iv = cg_spmd_consecutive(s, i);
    weft_status r = ix ? vread(f, s, f->e->k->op, NULL, ix, &y)
                       : vread(f, s, f->e->k->op, iv, NULL, &y);
    if (r) {
        return r;
    }
    return store_out(f, s, i, &y, "an element");
}

/* for (i = from; i < to; i++) out[i] = element(i), scalar. */
static weft_status scalar_loop(sk_fn *f, LLVMValueRef from, LLVMValueRef to)
{
    cg_fn *fn = &f->fn;
    cg_loop l;
    LLVMValueRef i;
    cg_val y;
    bool was = fn->cold;
    fn->cold = true; /* fewer than W elements */
    cg_loop_begin(fn, &l, from, to, &i);
    weft_status r = sk_read(f, f->e->k->op, i, NULL, &y);
    fn->cold = was;
    if (r == WEFT_OK) {
        cg_array_store(fn, sk_out_array(f, 0), i, &y);
    }
    cg_loop_end(fn, &l);
    return r;
}

/* from + ((to - from) rounded down to a multiple of w), to >= from. */
static LLVMValueRef vector_end(cg_fn *fn, unsigned w, LLVMValueRef from,
                               LLVMValueRef to)
{
    LLVMValueRef n = LLVMBuildSub(fn->b, to, from, "");
    LLVMValueRef m = LLVMBuildAnd(fn->b, n, cg_i64(fn, -(int64_t)w), "");
    return LLVMBuildAdd(fn->b, from, m, "vend");
}

/* The flat loop: the lanes are W consecutive linear positions. */
static weft_status emit_flat(sk_fn *f, cg_spmd *s)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef lo = f->start;
    LLVMValueRef hi =
        LLVMBuildSelect(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, f->end, lo, ""),
                        lo, f->end, "");
    LLVMValueRef vend = vector_end(fn, s->w, lo, hi);
    cg_sloop l;
    LLVMValueRef i = cg_sloop_begin(fn, &l, lo, vend, cg_i64(fn, s->w), "vi");
    weft_status r = vstep(f, s, i, NULL);
    cg_sloop_end(fn, &l);
    if (r) {
        return r;
    }
    return scalar_loop(f, vend, hi);
}

/* Row by row (rank >= 2): outer index components uniform per row. */
static weft_status emit_rows(sk_fn *f, cg_spmd *s)
{
    cg_fn *fn = &f->fn;
    const fe_term *op = f->e->k->op;
    int rank = op->rank;
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status r = sk_extent(f, op, ext);
    if (r) {
        return r;
    }
    LLVMValueRef inner = ext[rank - 1];
    LLVMBuilderRef b = fn->b;
    /* for (i = start; i < end; i = seg_end) */
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "row");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "row.body");
    LLVMBasicBlockRef exit =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "row.end");
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef i = LLVMBuildPhi(b, LLVMInt64TypeInContext(fn->llctx), "ri");
    LLVMAddIncoming(i, &f->start, &pre, 1);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i, f->end, ""), body, exit);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef q[2] = {i, inner}, row, col;
    if ((r = cg_prim(fn, WEFT_OP_QUOT, WEFT_I64, WEFT_I64, WEFT_I64, q,
                     &row)) != WEFT_OK ||
        (r = cg_prim(fn, WEFT_OP_REM, WEFT_I64, WEFT_I64, WEFT_I64, q, &col)) !=
            WEFT_OK) {
        return r;
    }
    cg_val ix;
    if ((r = cg_val_make(fn, rank, &ix)) != WEFT_OK) {
        return r;
    }
    cg_from_index(fn, rank - 1, ext, row, ix.v);
    LLVMValueRef left = LLVMBuildSub(b, inner, col, "");
    LLVMValueRef seg = LLVMBuildAdd(b, i, left, "");
    LLVMValueRef seg_end = LLVMBuildSelect(
        b, LLVMBuildICmp(b, LLVMIntSLT, f->end, seg, ""), f->end, seg, "");
    LLVMValueRef vend = vector_end(fn, s->w, i, seg_end);
    cg_sloop l;
    LLVMValueRef p = cg_sloop_begin(fn, &l, i, vend, cg_i64(fn, s->w), "vi");
    LLVMValueRef c = LLVMBuildAdd(b, col, LLVMBuildSub(b, p, i, ""), "");
    ix.v[rank - 1] = cg_spmd_consecutive(s, c);
    r = vstep(f, s, p, &ix);
    cg_sloop_end(fn, &l);
    if (r == WEFT_OK) {
        r = scalar_loop(f, vend, seg_end);
    }
    if (r) {
        return r;
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    LLVMAddIncoming(i, &seg_end, &latch, 1);
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, exit);
    return WEFT_OK;
}

/* Lanes for kernel k at spmd_bits: the vector holds W of the widest leaf
 * the kernel stores (at least 32 bits); 0 where the kernel gets no SPMD
 * code: no vector width, a target other than the CPU, or fewer than two
 * lanes. */
static unsigned lanes_for(const sk_emit *e)
{
    if (e->spmd_bits <= 0 || e->target != &sk_target_cpu) {
        return 0;
    }
    const sk_item *o = &e->k->item[0];
    int widest = 32;
    for (int l = 0; l < o->nleaf; l++) {
        int b = o->leaf[l] == WEFT_BOOL ? 8 : fe_type_bits(o->leaf[l]);
        widest = b > widest ? b : widest;
    }
    unsigned w = (unsigned)(e->spmd_bits / widest);
    return w < 2 ? 0 : w > 16 ? 16 : w;
}

/* Mark function g as emitted over w lanes (for the vectorisation report). */
static void mark_spmd(sk_emit *e, LLVMValueRef g, unsigned w)
{
    char lanes[16];
    snprintf(lanes, sizeof lanes, "%u", w);
    LLVMAddAttributeAtIndex(g, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(e->llctx, "weft-spmd", 9,
                                                      lanes,
                                                      (unsigned)strlen(lanes)));
}

/* Close entry f of an SPMD emission s over w lanes that ended with status
 * r: on success mark and finish it (*done); else remove what was emitted.
 * A failure that was "cannot vectorise this" (s->declined) returns
 * WEFT_OK, so that the caller emits its scalar entry; any other (a fault,
 * out of memory) is the compile's error, with its message. */
static weft_status spmd_finish(sk_emit *e, sk_fn *f, const cg_spmd *s,
                               weft_status r, bool *done)
{
    if (r == WEFT_OK) {
        mark_spmd(e, f->fn.fn, s->w);
        sk_fn_end(f);
        *done = true;
        return WEFT_OK;
    }
    LLVMValueRef g = f->fn.fn;
    if (s->declined) {
        r = WEFT_OK;
        fe_error_clear();
    }
    cg_fn_end(&f->fn);
    LLVMDeleteFunction(g);
    return r;
}

weft_status sk_spmd_generate(sk_emit *e, const char *name, bool *done)
{
    *done = false;
    unsigned w = lanes_for(e);
    if (w == 0 || e->k->nout != 1 || !readable(e, e->k->op, true)) {
        return WEFT_OK;
    }
    sk_fn f;
    weft_status r = sk_fn_begin(e, &f, name);
    if (r) {
        return r;
    }
    cg_spmd s;
    r = cg_spmd_begin(&s, &f.fn, w);
    if (r == WEFT_OK) {
        r = e->k->op->rank >= 2 && needs_ix(&f, e->k->op) ? emit_rows(&f, &s)
                                                          : emit_flat(&f, &s);
    }
    return spmd_finish(e, &f, &s, r, done);
}

/* ---- the per-element part of fold ----------------------------------------- */

/* Whether scalar term e contains a while loop (up to a budget of nodes),
 * and whether every term in it is one codegen/spmd.c emits. */
static void scan_term(const fe_term *e, int *budget, bool *loops, bool *ok)
{
    if (!e || !*ok) {
        return;
    }
    if (--*budget < 0) {
        *ok = false;
        return;
    }
    switch ((fe_kind)e->kind) {
    case FE_CONST:
    case FE_VAR:
    case FE_COND:
    case FE_TUPLE:
    case FE_GET:
    case FE_SHAPE:
    case FE_SHAPE_SIZE:
    case FE_TO_INDEX:
    case FE_FROM_INDEX:
    case FE_AT:
    case FE_AT_LINEAR:
    case FE_LET: break;
    case FE_PRIM:
        /* sin and cos branch to the C library for some arguments
         * (codegen/vmath.c), which keeps LLVM from vectorising a scalar
         * loop over them: they count as a loop */
        if (e->op == WEFT_OP_SIN || e->op == WEFT_OP_COS) {
            *loops = true;
        }
        break;
    case FE_WHILE: *loops = true; break;
    default:
        if (!e->acc) {
            *ok = false;
            return;
        }
        return; /* an array operand of FE_SHAPE / FE_AT / a let */
    }
    for (int k = 0; k < e->nkid; k++) {
        if (e->kid[k] && !e->kid[k]->acc) {
            scan_term(e->kid[k], budget, loops, ok);
        }
    }
    for (int k = 0; k < e->nfun; k++) {
        scan_term(e->fun[k] ? e->fun[k]->body : NULL, budget, loops, ok);
    }
}

/* Whether reading t element by element runs a while loop (or sin, cos),
 * every function on the way being one codegen/spmd.c emits. */
static bool costly(sk_fn *f, const fe_term *t, int *budget, bool *ok)
{
    if (!is_delayed(f, t)) {
        return false;
    }
    bool loops = false;
    for (int k = 0; k < t->nfun; k++) {
        scan_term(t->fun[k] ? t->fun[k]->body : NULL, budget, &loops, ok);
    }
    for (int k = 0; k < t->nkid; k++) {
        if (t->kid[k] && t->kid[k]->acc && costly(f, t->kid[k], budget, ok)) {
            loops = true;
        }
    }
    return loops && *ok;
}

weft_status sk_spmd_fold_range(sk_fn *f, const cg_mut *acc, const fe_term *src,
                               const cg_val *row_ix, LLVMValueRef base,
                               LLVMValueRef lo, LLVMValueRef hi,
                               LLVMValueRef *rest)
{
    sk_emit *e = f->e;
    cg_fn *fn = &f->fn;
    int budget = 4096;
    bool ok = true;
    *rest = lo;
    unsigned w = lanes_for(e);
    if (w == 0 || !readable(e, src, false) || !costly(f, src, &budget, &ok)) {
        return WEFT_OK;
    }
    cg_spmd s;
    weft_status r = cg_spmd_begin(&s, fn, w);
    if (r) {
        return r;
    }
    const fe_fun *comb = e->k->op->fun[0];
    LLVMBuilderRef b = fn->b;
    LLVMValueRef top = LLVMBuildSelect(
        b, LLVMBuildICmp(b, LLVMIntSLT, hi, lo, ""), lo, hi, "");
    LLVMValueRef vend = vector_end(fn, w, lo, top);
    cg_sloop l;
    LLVMValueRef p = cg_sloop_begin(fn, &l, lo, vend, cg_i64(fn, w), "vf");
    cg_val y, ix;
    if (row_ix) {
        if ((r = cg_val_make(fn, row_ix->n, &ix)) != WEFT_OK) {
            return r;
        }
        for (int d = 0; d < ix.n - 1; d++) {
            ix.v[d] = row_ix->v[d];
        }
        ix.v[ix.n - 1] = cg_spmd_consecutive(&s, LLVMBuildSub(b, p, base, ""));
        r = vread(f, &s, src, NULL, &ix, &y);
    } else {
        r = vread(f, &s, src, cg_spmd_consecutive(&s, p), NULL, &y);
    }
    /* the combine, lane after lane in order, as the scalar loop would */
    for (unsigned k = 0; r == WEFT_OK && k < w; k++) {
        cg_val args[2], z;
        if ((r = cg_mut_get(fn, acc, &args[0])) != WEFT_OK ||
            (r = cg_val_make(fn, y.n, &args[1])) != WEFT_OK) {
            break;
        }
        for (int j = 0; j < y.n; j++) {
            args[1].v[j] =
                cg_spmd_is_varying(y.v[j])
                    ? LLVMBuildExtractElement(
                          b, y.v[j],
                          LLVMConstInt(LLVMInt32TypeInContext(fn->llctx), k, 0),
                          "")
                    : y.v[j];
        }
        fn->fmf = LLVMFastMathAllowReassoc;
        r = cg_apply(fn, comb, args, &z);
        fn->fmf = 0;
        if (r == WEFT_OK) {
            cg_mut_set(fn, acc, &z);
        }
    }
    cg_sloop_end(fn, &l);
    *rest = vend;
    mark_spmd(e, fn->fn, w);
    return r;
}

/* ---- fold across short rows ------------------------------------------------- */

/* A variable of W-lane values, one alloca per leaf (mem2reg makes them
 * phis). */
typedef struct vmut {
    int n;
    LLVMValueRef *slot;
} vmut;

/* Set v (made on first use, its slots in the entry block) to x, every
 * leaf widened to W lanes. */
static weft_status vmut_set(cg_spmd *s, vmut *v, const cg_val *x)
{
    cg_fn *fn = s->fn;
    if (!v->slot) {
        v->n = x->n;
        v->slot =
            fe_arena_alloc(fn->arena, sizeof *v->slot * (size_t)(x->n + 1));
        if (!v->slot) {
            return fe_oom("weft_compile");
        }
        for (int l = 0; l < x->n; l++) {
            LLVMTypeRef t = LLVMTypeOf(cg_spmd_broadcast(s, x->v[l]));
            v->slot[l] = cg_alloca(fn, t, "vacc");
        }
    }
    if (x->n != v->n) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: a fold value of the wrong shape");
    }
    for (int l = 0; l < x->n; l++) {
        LLVMBuildStore(fn->b, cg_spmd_broadcast(s, x->v[l]), v->slot[l]);
    }
    return WEFT_OK;
}

static weft_status vmut_get(cg_spmd *s, const vmut *v, cg_val *out)
{
    cg_fn *fn = s->fn;
    weft_status r = cg_val_make(fn, v->n, out);
    for (int l = 0; r == WEFT_OK && l < v->n; l++) {
        out->v[l] = LLVMBuildLoad2(fn->b, LLVMGetAllocatedType(v->slot[l]),
                                   v->slot[l], "");
    }
    return r;
}

/* src at (the rows' outer components rix, column j). */
static weft_status vread_at_column(sk_fn *f, cg_spmd *s, const fe_term *src,
                                   const cg_val *rix, LLVMValueRef j,
                                   cg_val *out)
{
    cg_val ix;
    weft_status r = cg_val_make(&f->fn, src->rank, &ix);
    if (r) {
        return r;
    }
    for (int d = 0; d < src->rank - 1; d++) {
        ix.v[d] = rix->v[d];
    }
    ix.v[src->rank - 1] = j;
    return vread(f, s, src, NULL, &ix, out);
}

/* The vector part of sk_spmd_fold_rows: rows [f->start, vend), W at a
 * time; *vend where the scalar rows begin. */
static weft_status fold_rows_vector(sk_fn *f, cg_spmd *s, bool has_seed,
                                    int64_t max_len, LLVMValueRef *vend)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef b = fn->b;
    const fe_term *op = f->e->k->op;
    const fe_term *src = op->kid[has_seed ? 1 : 0];
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status r = sk_extent(f, src, ext);
    if (r) {
        return r;
    }
    LLVMValueRef m = ext[src->rank - 1];
    /* short rows (and, for fold1, not empty ones: the scalar code reads
     * element 0 of every row) go W at a time */
    LLVMValueRef use = LLVMBuildICmp(b, LLVMIntULE, m, cg_i64(fn, max_len), "");
    if (!has_seed) {
        use = LLVMBuildAnd(
            b, use, LLVMBuildICmp(b, LLVMIntSGT, m, cg_i64(fn, 0), ""), "");
    }
    LLVMValueRef hi =
        LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, f->end, f->start, ""),
                        f->start, f->end, "");
    *vend = LLVMBuildSelect(b, use, vector_end(fn, s->w, f->start, hi),
                            f->start, "rows.vend");
    vmut acc = {0};
    cg_sloop rl;
    LLVMValueRef row =
        cg_sloop_begin(fn, &rl, f->start, *vend, cg_i64(fn, s->w), "vr");
    cg_val rix, x;
    if ((r = cg_val_make(fn, src->rank, &rix)) != WEFT_OK ||
        (r = cg_spmd_from_index(s, src->rank - 1, ext,
                                cg_spmd_consecutive(s, row), rix.v)) !=
            WEFT_OK) {
        return r;
    }
    LLVMValueRef first = cg_i64(fn, has_seed ? 0 : 1);
    if (has_seed) {
        r = vmut_set(s, &acc, sk_kid_value(f, 0));
    } else if ((r = vread_at_column(f, s, src, &rix, cg_i64(fn, 0), &x)) ==
               WEFT_OK) {
        r = vmut_set(s, &acc, &x);
    }
    if (r) {
        return r;
    }
    /* acc = f(acc, src[rows, j]) for j in [first, m): each lane the
     * scalar loop's order, so the results are the scalar code's */
    cg_sloop jl;
    LLVMValueRef j = cg_sloop_begin(fn, &jl, first, m, cg_i64(fn, 1), "vj");
    cg_val args[2], y;
    if ((r = vmut_get(s, &acc, &args[0])) == WEFT_OK &&
        (r = vread_at_column(f, s, src, &rix, j, &args[1])) == WEFT_OK &&
        (r = cg_spmd_apply(s, op->fun[0], args, &y)) == WEFT_OK) {
        r = vmut_set(s, &acc, &y);
    }
    cg_sloop_end(fn, &jl);
    if (r || (r = vmut_get(s, &acc, &y)) != WEFT_OK) {
        return r;
    }
    /* a fold that took in the map after it (lib/fuse.c) stores through it */
    cg_val z;
    if (fe_fold_post(op) &&
        (r = cg_spmd_apply(s, fe_fold_post(op), &y, &z)) != WEFT_OK) {
        return r;
    }
    if ((r = store_out(f, s, row, fe_fold_post(op) ? &z : &y,
                       "a fold value")) != WEFT_OK) {
        return r;
    }
    cg_sloop_end(fn, &rl);
    return WEFT_OK;
}

weft_status sk_spmd_fold_rows(sk_emit *e, const char *name, bool has_seed,
                              int64_t max_len, sk_fold_rest rest, bool *done)
{
    *done = false;
    const fe_term *src = e->k->op->kid[has_seed ? 1 : 0];
    /* Only light kernels (sk_kernel.light: k-means' distances, a sum):
     * heavy elements (n-body's fold) come in long rows, where a second
     * copy of them over lanes only doubled the compile time (n-body: LLVM
     * 22 -> 56 ms). */
    unsigned w = lanes_for(e) * SK_FOLD_ROW_GROUPS;
    if (w == 0 || e->k->nout != 1 || !e->k->light || src->rank < 2 ||
        !readable(e, src, false)) {
        return WEFT_OK;
    }
    sk_fn f;
    weft_status r = sk_fn_begin(e, &f, name);
    if (r) {
        return r;
    }
    cg_spmd s;
    LLVMValueRef vend = NULL;
    r = cg_spmd_begin(&s, &f.fn, w);
    if (r == WEFT_OK) {
        r = fold_rows_vector(&f, &s, has_seed, max_len, &vend);
    }
    if (r == WEFT_OK) {
        f.start = vend;
        r = rest(&f, has_seed);
    }
    return spmd_finish(e, &f, &s, r, done);
}
