/*
 * codegen/types.c: weft types as LLVM types, and moving leaves between
 * registers and memory.
 *
 * A scalar has two LLVM forms.  In registers bool is i1, so that it feeds
 * branches and selects directly; in memory it is one byte holding 0 or 1,
 * as weft's host arrays store it.  f16 is LLVM's half in both forms (the
 * same IEEE binary16 bits that host arrays hold).  Tuples and indices have
 * no LLVM aggregate type at all: a value is the flat list of its leaves
 * (cg_val), which keeps struct-of-arrays loads and stores trivial and lets
 * SROA-free code vectorise.
 */
#include "cg.h"

/* Register type of a scalar weft type (see cg.h). */
LLVMTypeRef cg_type(LLVMContextRef c, weft_type t)
{
    switch (t) {
    case WEFT_BOOL: return LLVMInt1TypeInContext(c);
    case WEFT_I8:
    case WEFT_U8: return LLVMInt8TypeInContext(c);
    case WEFT_I16:
    case WEFT_U16: return LLVMInt16TypeInContext(c);
    case WEFT_I32:
    case WEFT_U32: return LLVMInt32TypeInContext(c);
    case WEFT_I64:
    case WEFT_U64: return LLVMInt64TypeInContext(c);
    case WEFT_F16: return LLVMHalfTypeInContext(c);
    case WEFT_F32: return LLVMFloatTypeInContext(c);
    case WEFT_F64: return LLVMDoubleTypeInContext(c);
    default: return NULL;
    }
}

/* Memory type of a scalar weft type (see cg.h). */
LLVMTypeRef cg_mem_type(LLVMContextRef c, weft_type t)
{
    return t == WEFT_BOOL ? LLVMInt8TypeInContext(c) : cg_type(c, t);
}

/* Leaves of t (see cg.h). */
int cg_leaves(const cg_fn *fn, weft_type t, const weft_type **leaves)
{
    return fe_type_leaves(fn->ctx, t, leaves);
}

/* Room for n values (see cg.h). */
weft_status cg_val_make(cg_fn *fn, int n, cg_val *out)
{
    out->n = n;
    out->v = NULL;
    if (n > 0) {
        out->v = fe_arena_alloc(fn->arena, (size_t)n * sizeof *out->v);
        if (!out->v) {
            return fe_oom("weft_compile");
        }
    }
    return WEFT_OK;
}

/* A one-leaf value (see cg.h). */
weft_status cg_val_one(cg_fn *fn, LLVMValueRef x, cg_val *out)
{
    weft_status s = cg_val_make(fn, 1, out);
    if (s == WEFT_OK) {
        out->v[0] = x;
    }
    return s;
}

/* The alias scope of the arrays a kernel writes (outputs and auxiliary
 * arrays), as a one-scope list: stores to them carry !alias.scope of it and
 * loads of read-only arrays !noalias of it, so that LLVM may move and
 * combine reads across writes (vector loads of a chunk in the PTX target,
 * no run-time alias checks in the CPU's vectorised loops).  Read-only and
 * written arrays are distinct buffers: the runtimes allocate every written
 * array afresh for the run. */
static LLVMValueRef written_scope(LLVMContextRef c)
{
    LLVMMetadataRef dom_name = LLVMMDStringInContext2(c, "weft", 4);
    LLVMMetadataRef dom = LLVMMDNodeInContext2(c, &dom_name, 1);
    LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(c, "weft.written", 12),
                              dom};
    LLVMMetadataRef scope = LLVMMDNodeInContext2(c, ops, 2);
    return LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, &scope, 1));
}

/* Load element i of a leaf buffer (see cg.h). */
/* cg_load; a read-only array's load (`invariant`) carries !invariant.load
 * and is outside the written scope. */
static LLVMValueRef load_ptr(cg_fn *fn, weft_type t, LLVMValueRef p,
                             bool invariant)
{
    LLVMTypeRef mt = cg_mem_type(fn->llctx, t);
    LLVMValueRef x = LLVMBuildLoad2(fn->b, mt, p, "");
    if (invariant) {
        LLVMContextRef c = fn->llctx;
        LLVMSetMetadata(
            x, LLVMGetMDKindIDInContext(c, "invariant.load", 14),
            LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, NULL, 0)));
        LLVMSetMetadata(x, LLVMGetMDKindIDInContext(c, "noalias", 7),
                        written_scope(c));
    }
    if (t == WEFT_BOOL) {
        x = LLVMBuildICmp(fn->b, LLVMIntNE, x, LLVMConstInt(mt, 0, 0), "");
    }
    return x;
}

static LLVMValueRef load_leaf(cg_fn *fn, weft_type t, LLVMValueRef base,
                              LLVMValueRef i, bool invariant)
{
    LLVMTypeRef mt = cg_mem_type(fn->llctx, t);
    return load_ptr(fn, t, LLVMBuildInBoundsGEP2(fn->b, mt, base, &i, 1, ""),
                    invariant);
}

LLVMValueRef cg_load(cg_fn *fn, weft_type t, LLVMValueRef base, LLVMValueRef i)
{
    return load_leaf(fn, t, base, i, false);
}

/* cg_store, returning the store. */
static LLVMValueRef store_leaf(cg_fn *fn, weft_type t, LLVMValueRef base,
                               LLVMValueRef i, LLVMValueRef x)
{
    LLVMTypeRef mt = cg_mem_type(fn->llctx, t);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, mt, base, &i, 1, "");
    if (t == WEFT_BOOL) {
        x = LLVMBuildZExt(fn->b, x, mt, "");
    }
    return LLVMBuildStore(fn->b, x, p);
}

/* Store x at element i of a leaf buffer (see cg.h). */
void cg_store(cg_fn *fn, weft_type t, LLVMValueRef base, LLVMValueRef i,
              LLVMValueRef x)
{
    store_leaf(fn, t, base, i, x);
}

/* Load every leaf of an array element (see cg.h). */
weft_status cg_array_load(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                          cg_val *out)
{
    weft_status s = cg_val_make(fn, a->nleaf, out);
    if (s != WEFT_OK) {
        return s;
    }
    for (int k = 0; k < a->nleaf; k++) {
        out->v[k] = load_leaf(fn, a->leaf[k], a->ptr[k], i, a->readonly);
    }
    return WEFT_OK;
}

/* The cell of zeros that cg_array_load_or_zero reads outside an array:
 * 16 bytes (the widest leaf is 8), one per module, in the target's space
 * for globals (cg_target.global_space). */
static LLVMValueRef zero_cell(cg_fn *fn)
{
    static const char name[] = "weft.zero";
    LLVMValueRef g = LLVMGetNamedGlobal(fn->mod, name);
    unsigned space = fn->target->global_space;
    if (!g) {
        LLVMTypeRef at = LLVMArrayType2(LLVMInt64TypeInContext(fn->llctx), 2);
        g = LLVMAddGlobalInAddressSpace(fn->mod, at, name, space);
        LLVMSetLinkage(g, LLVMInternalLinkage);
        LLVMSetInitializer(g, LLVMConstNull(at));
        LLVMSetGlobalConstant(g, 1);
        LLVMSetAlignment(g, 16);
    }
    return space != 0 ? LLVMConstAddrSpaceCast(
                            g, LLVMPointerTypeInContext(fn->llctx, 0))
                      : g;
}

/* Load every leaf of an element, or zeros, with no branch (see cg.h):
 * outside, the load's address is the zero cell's.  (The element 0 of the
 * array, or the cell where it has none, and a select of the value took an
 * instruction more a leaf: smvm's two checks an element on the GPU.)  The
 * address is computed without inbounds, so that it is no poison where i
 * lies outside. */
weft_status cg_array_load_or_zero(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                                  LLVMValueRef inside, cg_val *out)
{
    weft_status s = cg_val_make(fn, a->nleaf, out);
    if (s != WEFT_OK) {
        return s;
    }
    LLVMValueRef zero = zero_cell(fn);
    if (fn->flat_mask) {
        inside = LLVMBuildAnd(fn->b, inside, fn->flat_mask, "");
    }
    for (int k = 0; k < a->nleaf; k++) {
        LLVMTypeRef mt = cg_mem_type(fn->llctx, a->leaf[k]);
        LLVMValueRef p = LLVMBuildGEP2(fn->b, mt, a->ptr[k], &i, 1, "");
        out->v[k] =
            load_ptr(fn, a->leaf[k],
                     LLVMBuildSelect(fn->b, inside, p, zero, ""), a->readonly);
    }
    return WEFT_OK;
}

/* Store every leaf of an array element (see cg.h). */
void cg_array_store(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                    const cg_val *x)
{
    LLVMContextRef c = fn->llctx;
    for (int k = 0; k < a->nleaf && k < x->n; k++) {
        LLVMValueRef st = store_leaf(fn, a->leaf[k], a->ptr[k], i, x->v[k]);
        LLVMSetMetadata(st, LLVMGetMDKindIDInContext(c, "alias.scope", 11),
                        written_scope(c));
    }
}

/* A constant in register form (see cg.h). */
LLVMValueRef cg_const(cg_fn *fn, weft_type t, fe_val c)
{
    LLVMTypeRef ty = cg_type(fn->llctx, t);
    if (fe_is_float(t)) {
        return LLVMConstReal(ty, c.f);
    }
    if (t == WEFT_BOOL) {
        return LLVMConstInt(ty, c.u != 0, 0);
    }
    return LLVMConstInt(ty, c.u, fe_is_signed(t));
}

/* An i64 constant (see cg.h). */
LLVMValueRef cg_i64(cg_fn *fn, int64_t x)
{
    return LLVMConstInt(LLVMInt64TypeInContext(fn->llctx), (uint64_t)x, 1);
}

LLVMValueRef cg_zext64(cg_fn *fn, LLVMValueRef x)
{
    return LLVMBuildZExt(fn->b, x, LLVMInt64TypeInContext(fn->llctx), "");
}

LLVMValueRef cg_smin(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, a, b, ""), a,
                           b, "");
}

LLVMValueRef cg_smax(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(fn->b, LLVMBuildICmp(fn->b, LLVMIntSGT, a, b, ""), a,
                           b, "");
}

LLVMValueRef cg_ceil_div(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef t =
        LLVMBuildAdd(fn->b, a, LLVMBuildSub(fn->b, b, cg_i64(fn, 1), ""), "");
    return LLVMBuildSDiv(fn->b, t, b, "");
}

LLVMValueRef cg_ceil_udiv(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef t =
        LLVMBuildAdd(fn->b, a, LLVMBuildSub(fn->b, b, cg_i64(fn, 1), ""), "");
    return LLVMBuildUDiv(fn->b, t, b, "");
}

LLVMValueRef cg_ceil_div_small(cg_fn *fn, LLVMValueRef a, LLVMValueRef n)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef sixteen = LLVMConstInt(i32, 16, 0);
    a = LLVMBuildAdd(fn->b, a, LLVMBuildSub(fn->b, n, cg_i64(fn, 1), ""), "");
    LLVMValueRef n32 = LLVMBuildTrunc(fn->b, n, i32, "");
    LLVMValueRef r = LLVMConstInt(i32, 0, 0), q = cg_i64(fn, 0);
    for (int d = 3; d >= 0; d--) {
        /* cur = r 2^16 + digit d of a; q's digit d = cur / n */
        LLVMValueRef shift = cg_i64(fn, 16 * d);
        LLVMValueRef digit = LLVMBuildAnd(
            fn->b, LLVMBuildLShr(fn->b, a, shift, ""), cg_i64(fn, 0xffff), "");
        digit = LLVMBuildTrunc(fn->b, digit, i32, "");
        LLVMValueRef cur =
            LLVMBuildOr(fn->b, LLVMBuildShl(fn->b, r, sixteen, ""), digit, "");
        LLVMValueRef qd = LLVMBuildUDiv(fn->b, cur, n32, "");
        r = LLVMBuildSub(fn->b, cur, LLVMBuildMul(fn->b, qd, n32, ""), "");
        q = LLVMBuildOr(fn->b, q,
                        LLVMBuildShl(fn->b, cg_zext64(fn, qd), shift, ""), "");
    }
    return q;
}
