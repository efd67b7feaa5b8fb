/*
 * lib/prims.c: the table of scalar primitives, read by the builder, the
 * simplifier, the interpreter and the code generators.  The catalogue
 * itself is include/weft_ops.h (the public columns: name, arity, type
 * rule) and lib/fe_ops.h (what weft's own code needs: folding, failure,
 * cost, lowering, library functions); both expand here into fe_prims,
 * each into its own fields of the same entries.
 */
#include <math.h>

#include "fe.h"

/* fe_ops.h's rows are weft_ops.h's, one each, in its order */
enum {
#define FE_OP(name, fold, fail, cost, simd, lower, libm, nv) FE_ROW_##name,
#include "fe_ops.h"
#undef FE_OP
    FE_ROW_COUNT_
};
_Static_assert((int)FE_ROW_COUNT_ == (int)WEFT_OP_COUNT_,
               "lib/fe_ops.h needs one row per primitive of weft_ops.h");
#define FE_OP(name, fold, fail, cost, simd, lower, libm, nv)                   \
    _Static_assert((int)FE_ROW_##name == (int)WEFT_OP_##name,                  \
                   "lib/fe_ops.h: row " #name                                  \
                   " is not in weft_ops.h's order");
#include "fe_ops.h"
#undef FE_OP

/* weft_ops.h's columns */
#define ARITY_1 1
#define ARITY_2 2
#define ARITY_T 1
#define TYPED_1 false
#define TYPED_2 false
#define TYPED_T true

/* fe_ops.h's: M1(f), M2(f), NV(f) and NO become (kind, f), which LIBM and
 * LIBDEVICE turn into the designated fields of entry i */
#define FOLD true
#define KEEP false
#define NO (0, _)
#define M1(f) (1, f)
#define M2(f) (2, f)
#define NV(f) (1, f)
#define UNPACK(k, f) k, f
#define APPLY(m, ...) m(__VA_ARGS__)
#define LIBM(i, col) APPLY(LIBM_, i, UNPACK col)
#define LIBM_(i, k, fn) LIBM_##k(i, fn)
#define LIBM_0(i, fn)
#define LIBM_1(i, fn) [i].libm = #fn, [i].libm1 = fn, [i].libm1f = fn##f,
#define LIBM_2(i, fn) [i].libm = #fn, [i].libm2 = fn, [i].libm2f = fn##f,
#define LIBDEVICE(i, col) APPLY(LIBDEVICE_, i, UNPACK col)
#define LIBDEVICE_(i, k, fn) LIBDEVICE_##k(i, fn)
#define LIBDEVICE_0(i, fn)
#define LIBDEVICE_1(i, fn) [i].libdevice = #fn,

const fe_prim_info fe_prims[WEFT_OP_COUNT_] = {
#define WEFT_OP(n_, lower_, arity_, rule_)                                     \
    [WEFT_OP_##n_].name = #lower_, [WEFT_OP_##n_].arity = ARITY_##arity_,      \
    [WEFT_OP_##n_].typed = TYPED_##arity_,                                     \
    [WEFT_OP_##n_].rule = FE_RULE_##rule_,
#include "weft_ops.h"
#undef WEFT_OP
#define FE_OP(n_, fold_, fail_, cost_, simd_, lower_, libm_, nv_)              \
    [WEFT_OP_##n_].fold = fold_, [WEFT_OP_##n_].fail = FE_FAIL_##fail_,        \
    [WEFT_OP_##n_].cost = FE_COST_##cost_,                                     \
    [WEFT_OP_##n_].simd = FE_SIMD_##simd_,                                     \
    [WEFT_OP_##n_].lower = FE_LOWER_##lower_,                                  \
    LIBM(WEFT_OP_##n_, libm_) LIBDEVICE(WEFT_OP_##n_, nv_)
#include "fe_ops.h"
#undef FE_OP
};

const char *weft_op_name(weft_op op)
{
    if ((unsigned)op >= WEFT_OP_COUNT_) {
        return NULL;
    }
    /* the builder of exp is weft_fexp, but the primitive is exp */
    return op == WEFT_OP_EXP ? "exp" : fe_prims[op].name;
}

/* Whether primitive term t itself may fail (see fe.h). */
bool fe_prim_may_fail(const fe_term *t)
{
    const fe_term *b = t->nkid > 1 ? t->kid[1] : NULL;
    bool konst = b && b->kind == FE_CONST;
    if (t->op >= WEFT_OP_COUNT_) {
        return true;
    }
    switch (fe_prims[t->op].fail) {
    case FE_FAIL_NEVER: return false;
    case FE_FAIL_DIVISOR:
        /* safe by a constant divisor other than 0 and -1 */
        return !konst || b->u.c.i == 0 ||
               (fe_is_signed(b->type) && b->u.c.i == -1);
    case FE_FAIL_SHIFT:
        return !konst || b->u.c.u >= (uint64_t)fe_type_bits(t->type);
    case FE_FAIL_ALWAYS: return true;
    case FE_FAIL_TO_INT:
        /* float to integer out of range */
        return fe_is_int(t->type) && t->nkid > 0 &&
               fe_is_float(t->kid[0]->type);
    }
    return true;
}
