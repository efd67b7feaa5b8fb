/*
 * codegen/exp.c: the scalar language of the core as LLVM IR.
 *
 * cg_exp walks a scalar core term and emits IR at the builder of the
 * function under construction, returning the term's value as one LLVM
 * value per leaf.  The walk itself (cg_walk: checks, tuples, projections,
 * lets, operands, indices, application) is shared with the SPMD code of
 * spmd.c, which emits a vector of lanes per leaf; each gives it hooks
 * (cg_walk_ops) for the terms whose code differs.  Variables are looked
 * up in the function's environment (filled by cg_bind and by lets and
 * function applications met on the way); array terms that the scalar
 * code looks at (shape, indexing) are resolved through array variables
 * or the skeleton's callback.
 *
 * Meaning.  Every primitive follows lib/interp_scalar.c exactly wherever
 * the interpreter gives a value:
 *   - integers wrap; quot/rem are sdiv/srem (udiv/urem unsigned), and
 *     div/mod round toward negative infinity by correcting the truncating
 *     quotient when the remainder is non-zero and its sign differs from the
 *     divisor's;
 *   - f16 arithmetic and functions are computed in float and rounded once
 *     to half, as the interpreter does; int -> f16 goes through float too;
 *   - floor, ceiling, round (half to even) and truncate round in floating
 *     point, then convert with the saturating llvm.fpto[su]i.sat;
 *   - min x y = x <= y ? x : y and max x y = x <= y ? y : x, with ordered
 *     comparisons, so NaN behaves as in the interpreter.
 * Where the interpreter reports an error the generated code must still not
 * trap or reach undefined behaviour, and gives the value that
 * docs/language.md documents ("Undefined operations"), the same on every
 * target: divisors that are zero, or -1 with the minimum dividend, are
 * replaced by 1 before sdiv/udiv (x quot 0 = x div 0 = x, x rem 0 = x mod
 * 0 = 0, minBound quot -1 = minBound); shift amounts are masked to the
 * width (their low log2(width) bits); float to integer conversions
 * saturate, NaN giving 0 (llvm.fpto[su]i.sat); `!` and `!!` outside their
 * array read nothing and give zero in every leaf; from_index divides by 1
 * where an inner extent is 0.
 *
 * Checked mode (fn->checked, WEFT_FLAG_CHECKED) adds, before each such
 * operation, the interpreter's test, which keeps a report key when it
 * fails (cg_check: branch-free, so that loops still vectorise); the value
 * is then the unchecked one, and the skeleton's driver turns the least key
 * into the interpreter's status.  Unchecked code has no test but the
 * bounds test of `!` and `!!`.
 *
 * Control.  `and` and `or` short-circuit with a branch unless the right
 * operand is trivially safe and cheap, when a select is used; the
 * conditional evaluates only the chosen side (branches and phis), but for
 * deeply nested ones ("Deep conditionals"); while is
 * a loop whose head holds one phi per leaf of the state.
 */
#include <math.h>
#include <string.h>

#include "cg.h"

#define B (fn->b)

/* a primitive fits the six bits of a report key (cg.h) */
_Static_assert(WEFT_OP_COUNT_ <= 64, "report keys hold 6-bit primitives");

static weft_status internal(const char *what, int k)
{
    return fe_error(WEFT_ERR_INTERNAL,
                    "weft_compile: code generation cannot emit %s (%d)", what,
                    k);
}

static LLVMTypeRef ty_of(cg_fn *fn, weft_type t)
{
    return cg_type(fn->llctx, t);
}

/* f16 values are computed in float. */
static LLVMValueRef widen(cg_fn *fn, weft_type t, LLVMValueRef x)
{
    return t == WEFT_F16
               ? LLVMBuildFPExt(B, x, LLVMFloatTypeInContext(fn->llctx), "")
               : x;
}

static LLVMValueRef narrow(cg_fn *fn, weft_type t, LLVMValueRef x)
{
    return t == WEFT_F16 ? LLVMBuildFPTrunc(B, x, ty_of(fn, t), "") : x;
}

/* Integer x of type `from` (or bool) to integer type `to`: wrap, sign- or
 * zero-extend by the source's signedness. */
static LLVMValueRef resize(cg_fn *fn, LLVMValueRef x, weft_type from,
                           weft_type to)
{
    int wf = from == WEFT_BOOL ? 1 : fe_type_bits(from);
    int wt = fe_type_bits(to);
    if (wf < wt) {
        return fe_is_signed(from) ? LLVMBuildSExt(B, x, ty_of(fn, to), "")
                                  : LLVMBuildZExt(B, x, ty_of(fn, to), "");
    }
    if (wf > wt) {
        return LLVMBuildTrunc(B, x, ty_of(fn, to), "");
    }
    return x;
}

/* quot, rem, div and mod of integers of type t, with divisors that would
 * trap replaced by 1. */
static LLVMValueRef int_div(cg_fn *fn, weft_op op, weft_type t, LLVMValueRef a,
                            LLVMValueRef b)
{
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef zero = LLVMConstInt(ty, 0, 0);
    LLVMValueRef one = LLVMConstInt(ty, 1, 0);
    LLVMValueRef bad = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
    bool quot = op == WEFT_OP_QUOT || op == WEFT_OP_IDIV;
    if (!fe_is_signed(t)) {
        LLVMValueRef d = LLVMBuildSelect(B, bad, one, b, "");
        return quot ? LLVMBuildUDiv(B, a, d, "") : LLVMBuildURem(B, a, d, "");
    }
    int w = fe_type_bits(t);
    LLVMValueRef min = LLVMConstInt(ty, (uint64_t)1 << (w - 1), 0);
    LLVMValueRef ovf = LLVMBuildAnd(
        B, LLVMBuildICmp(B, LLVMIntEQ, a, min, ""),
        LLVMBuildICmp(B, LLVMIntEQ, b, LLVMConstAllOnes(ty), ""), "");
    bad = LLVMBuildOr(B, bad, ovf, "");
    LLVMValueRef d = LLVMBuildSelect(B, bad, one, b, "");
    if (op == WEFT_OP_QUOT) {
        return LLVMBuildSDiv(B, a, d, "");
    }
    LLVMValueRef r = LLVMBuildSRem(B, a, d, "");
    if (op == WEFT_OP_REM) {
        return r;
    }
    /* the remainder is non-zero and its sign differs from the divisor's */
    LLVMValueRef fix = LLVMBuildAnd(
        B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
        LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, d, ""), zero, ""), "");
    if (op == WEFT_OP_IDIV) {
        LLVMValueRef q = LLVMBuildSDiv(B, a, d, "");
        return LLVMBuildSelect(B, fix, LLVMBuildSub(B, q, one, ""), q, "");
    }
    return LLVMBuildSelect(B, fix, LLVMBuildAdd(B, r, d, ""), r, "");
}

/* A shift or rotate amount k of type ta for a value of type t: the
 * value's width, and for rotations by u64 amounts the interpreter's clamp
 * of amounts past INT64_MAX. */
static LLVMValueRef amount(cg_fn *fn, weft_type t, weft_type ta, LLVMValueRef k,
                           bool rotate)
{
    if (rotate && ta == WEFT_U64) {
        LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, k,
                                         LLVMConstInt(LLVMTypeOf(k), 0, 0), "");
        k = LLVMBuildSelect(B, neg, LLVMConstInt(LLVMTypeOf(k), INT64_MAX, 0),
                            k, "");
    }
    return resize(fn, k, ta, t);
}

/* Checked mode: the interpreter's errors of quot, rem, div and mod: a zero
 * divisor, then quot and div of the minimum of a signed type by -1. */
static void check_div(cg_fn *fn, weft_op op, weft_type t, LLVMValueRef a,
                      LLVMValueRef b)
{
    if (!fn->checked) {
        return;
    }
    LLVMTypeRef ty = LLVMTypeOf(a);
    cg_check(fn, LLVMBuildICmp(B, LLVMIntEQ, b, LLVMConstInt(ty, 0, 0), ""),
             CG_ERR_DIV_ZERO, op, t);
    if (fe_is_signed(t) && (op == WEFT_OP_QUOT || op == WEFT_OP_IDIV)) {
        int w = fe_type_bits(t);
        LLVMValueRef min = LLVMConstInt(ty, (uint64_t)1 << (w - 1), 0);
        LLVMValueRef bad = LLVMBuildAnd(
            B, LLVMBuildICmp(B, LLVMIntEQ, a, min, ""),
            LLVMBuildICmp(B, LLVMIntEQ, b, LLVMConstAllOnes(ty), ""), "");
        cg_check(fn, bad, CG_ERR_DIV_MIN, op, t);
    }
}

/* Checked mode: a shift of a value of type t by k of type ta is undefined
 * when k is negative or at least the width (the interpreter's amount_of:
 * unsigned amounts are never negative). */
static void check_shift(cg_fn *fn, weft_op op, weft_type t, weft_type ta,
                        LLVMValueRef k)
{
    if (!fn->checked) {
        return;
    }
    LLVMTypeRef ty = LLVMTypeOf(k);
    LLVMValueRef w = LLVMConstInt(ty, (uint64_t)fe_type_bits(t), 0);
    LLVMValueRef bad =
        fe_is_signed(ta)
            ? LLVMBuildOr(
                  B,
                  LLVMBuildICmp(B, LLVMIntSLT, k, LLVMConstInt(ty, 0, 0), ""),
                  LLVMBuildICmp(B, LLVMIntSGE, k, w, ""), "")
            : LLVMBuildICmp(B, LLVMIntUGE, k, w, "");
    cg_check(fn, bad, CG_ERR_SHIFT, op, t);
}

/* Checked mode: v, an integral floating value (float or double), must be a
 * value of integer type rt (the interpreter's float_to_int; NaN is not). */
static void check_range(cg_fn *fn, weft_op op, weft_type rt, LLVMValueRef v)
{
    if (!fn->checked) {
        return;
    }
    LLVMTypeRef ty = LLVMTypeOf(v);
    int w = fe_type_bits(rt);
    double lo = fe_is_signed(rt) ? -ldexp(1.0, w - 1) : 0.0;
    double hi = fe_is_signed(rt) ? ldexp(1.0, w - 1) : ldexp(1.0, w);
    LLVMValueRef ok = LLVMBuildAnd(
        B, LLVMBuildFCmp(B, LLVMRealOGE, v, LLVMConstReal(ty, lo), ""),
        LLVMBuildFCmp(B, LLVMRealOLT, v, LLVMConstReal(ty, hi), ""), "");
    cg_check(fn, LLVMBuildNot(B, ok, ""), CG_ERR_CONVERT, op, rt);
}

/* Comparison op of a and b of type t (see cg.h). */
LLVMValueRef cg_compare(cg_fn *fn, weft_op op, weft_type t, LLVMValueRef a,
                        LLVMValueRef b)
{
    if (fe_is_float(t)) {
        LLVMRealPredicate p;
        switch (op) {
        case WEFT_OP_LT: p = LLVMRealOLT; break;
        case WEFT_OP_LE: p = LLVMRealOLE; break;
        case WEFT_OP_GT: p = LLVMRealOGT; break;
        case WEFT_OP_GE: p = LLVMRealOGE; break;
        case WEFT_OP_EQ: p = LLVMRealOEQ; break;
        default: p = LLVMRealUNE; break;
        }
        return LLVMBuildFCmp(B, p, a, b, "");
    }
    bool s = fe_is_signed(t);
    LLVMIntPredicate p;
    switch (op) {
    case WEFT_OP_LT: p = s ? LLVMIntSLT : LLVMIntULT; break;
    case WEFT_OP_LE: p = s ? LLVMIntSLE : LLVMIntULE; break;
    case WEFT_OP_GT: p = s ? LLVMIntSGT : LLVMIntUGT; break;
    case WEFT_OP_GE: p = s ? LLVMIntSGE : LLVMIntUGE; break;
    case WEFT_OP_EQ: p = LLVMIntEQ; break;
    default: p = LLVMIntNE; break;
    }
    return LLVMBuildICmp(B, p, a, b, "");
}

/* A floating value x (of LLVM type float/double) to integer type rt,
 * truncating toward zero and saturating. */
static LLVMValueRef float_to_int(cg_fn *fn, weft_type rt, LLVMValueRef x)
{
    LLVMTypeRef over[2] = {ty_of(fn, rt), LLVMTypeOf(x)};
    return cg_intrinsic(
        fn, fe_is_signed(rt) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", over, 2,
        &x, 1);
}

/* convert from t to rt. */
static LLVMValueRef convert(cg_fn *fn, weft_type t, weft_type rt,
                            LLVMValueRef x)
{
    if (t == rt) {
        return x;
    }
    LLVMTypeRef ty = LLVMTypeOf(x);
    if (rt == WEFT_BOOL) {
        return fe_is_float(t)
                   ? LLVMBuildFCmp(B, LLVMRealUNE, x, LLVMConstReal(ty, 0), "")
                   : LLVMBuildICmp(B, LLVMIntNE, x, LLVMConstInt(ty, 0, 0), "");
    }
    if (!fe_is_float(t)) {
        if (fe_is_int(rt)) {
            return resize(fn, x, t, rt);
        }
        /* int -> f16 rounds to float first, as the interpreter does */
        LLVMTypeRef ft = rt == WEFT_F64 ? ty_of(fn, WEFT_F64)
                                        : LLVMFloatTypeInContext(fn->llctx);
        LLVMValueRef f = fe_is_signed(t) ? LLVMBuildSIToFP(B, x, ft, "")
                                         : LLVMBuildUIToFP(B, x, ft, "");
        return narrow(fn, rt, f);
    }
    if (fe_is_float(rt)) {
        return fe_type_bits(rt) > fe_type_bits(t)
                   ? LLVMBuildFPExt(B, x, ty_of(fn, rt), "")
                   : LLVMBuildFPTrunc(B, x, ty_of(fn, rt), "");
    }
    return float_to_int(fn, rt, widen(fn, t, x));
}

static LLVMValueRef bitcast(cg_fn *fn, weft_type t, weft_type rt,
                            LLVMValueRef x)
{
    if (t == rt) {
        return x;
    }
    if (rt == WEFT_BOOL) {
        return LLVMBuildICmp(B, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0),
                             "");
    }
    if (t == WEFT_BOOL) {
        x = LLVMBuildZExt(B, x, LLVMInt8TypeInContext(fn->llctx), "");
    }
    return LLVMBuildBitCast(B, x, ty_of(fn, rt), "");
}

static LLVMValueRef fabs_of(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    return cg_intrinsic(fn, "llvm.fabs", &ty, 1, &x, 1);
}

/* Floating function op of x (and y, or NULL) of type t, by the target's
 * math1 / math2 (lib/fe_ops.h's lower column: not cg_prim's own code). */
static weft_status target_math(cg_fn *fn, weft_op op, weft_type t,
                               LLVMValueRef x, LLVMValueRef y, LLVMValueRef *r)
{
    if (!fe_is_float(t)) {
        return internal("a floating function of a non-float", (int)op);
    }
    const cg_target *tg = fn->target;
    LLVMValueRef v = NULL;
    weft_status s;
    if (y) {
        if (!tg || !tg->math2) {
            return internal("math on a target without math2", (int)op);
        }
        s = tg->math2(fn, op, widen(fn, t, x), widen(fn, t, y), &v);
    } else {
        if (!tg || !tg->math1) {
            return internal("math on a target without math1", (int)op);
        }
        s = tg->math1(fn, op, widen(fn, t, x), &v);
    }
    if (s != WEFT_OK) {
        return s;
    }
    *r = narrow(fn, t, v);
    return WEFT_OK;
}

/* Apply a primitive to emitted operands (see cg.h). */
weft_status cg_prim(cg_fn *fn, weft_op op, weft_type rt, weft_type t0,
                    weft_type t1, const LLVMValueRef *a, LLVMValueRef *r)
{
    weft_type t = t0;
    LLVMValueRef x = a[0];
    LLVMValueRef y =
        (unsigned)op < WEFT_OP_COUNT_ && fe_prims[op].arity == 2 ? a[1] : NULL;
    LLVMTypeRef ty = fe_is_scalar(t) ? ty_of(fn, t) : NULL;
    bool flt = fe_is_float(t);
    weft_status s = WEFT_OK;
    *r = NULL;
    if (!ty) {
        return internal("a primitive on a non-scalar operand", (int)op);
    }
    if ((unsigned)op < WEFT_OP_COUNT_ &&
        fe_prims[op].lower != FE_LOWER_INLINE) {
        s = target_math(fn, op, t, x, y, r);
        return s != WEFT_OK || *r ? s
                                  : internal("primitive (LLVM lacks an "
                                             "intrinsic)",
                                             (int)op);
    }
    switch (op) {
    case WEFT_OP_ADD:
    case WEFT_OP_SUB:
    case WEFT_OP_MUL:
    case WEFT_OP_FDIV:
        if (flt) {
            LLVMValueRef p = widen(fn, t, x), q = widen(fn, t, y);
            LLVMValueRef v = op == WEFT_OP_ADD   ? LLVMBuildFAdd(B, p, q, "")
                             : op == WEFT_OP_SUB ? LLVMBuildFSub(B, p, q, "")
                             : op == WEFT_OP_MUL ? LLVMBuildFMul(B, p, q, "")
                                                 : LLVMBuildFDiv(B, p, q, "");
            *r = narrow(fn, t, cg_fp_flag(fn, v));
        } else if (op == WEFT_OP_FDIV) {
            return internal("fdiv of integers", (int)t);
        } else {
            *r = op == WEFT_OP_ADD   ? LLVMBuildAdd(B, x, y, "")
                 : op == WEFT_OP_SUB ? LLVMBuildSub(B, x, y, "")
                                     : LLVMBuildMul(B, x, y, "");
        }
        break;
    case WEFT_OP_NEG:
        *r = flt ? cg_fp_flag(fn, LLVMBuildFNeg(B, x, ""))
                 : LLVMBuildSub(B, LLVMConstInt(ty, 0, 0), x, "");
        break;
    case WEFT_OP_ABS:
        if (flt) {
            *r = fabs_of(fn, x);
        } else if (fe_is_signed(t)) {
            LLVMValueRef zero = LLVMConstInt(ty, 0, 0);
            *r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, x, zero, ""),
                                 LLVMBuildSub(B, zero, x, ""), x, "");
        } else {
            *r = x;
        }
        break;
    case WEFT_OP_SIGNUM:
        if (flt) {
            LLVMValueRef zero = LLVMConstReal(ty, 0);
            LLVMValueRef neg =
                LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, zero, ""),
                                LLVMConstReal(ty, -1), x, "");
            *r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, x, zero, ""),
                                 LLVMConstReal(ty, 1), neg, "");
        } else {
            LLVMValueRef zero = LLVMConstInt(ty, 0, 0);
            if (fe_is_signed(t)) {
                LLVMValueRef p = LLVMBuildZExt(
                    B, LLVMBuildICmp(B, LLVMIntSGT, x, zero, ""), ty, "");
                LLVMValueRef n = LLVMBuildZExt(
                    B, LLVMBuildICmp(B, LLVMIntSLT, x, zero, ""), ty, "");
                *r = LLVMBuildSub(B, p, n, "");
            } else {
                *r = LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntNE, x, zero, ""),
                                   ty, "");
            }
        }
        break;
    case WEFT_OP_MIN:
    case WEFT_OP_MAX: {
        LLVMValueRef le = cg_compare(fn, WEFT_OP_LE, t, x, y);
        *r = op == WEFT_OP_MIN ? LLVMBuildSelect(B, le, x, y, "")
                               : LLVMBuildSelect(B, le, y, x, "");
        break;
    }
    case WEFT_OP_QUOT:
    case WEFT_OP_REM:
    case WEFT_OP_IDIV:
    case WEFT_OP_MOD:
        if (!fe_is_int(t)) {
            return internal("integer division of a non-integer", (int)t);
        }
        check_div(fn, op, t, x, y);
        *r = int_div(fn, op, t, x, y);
        break;
    case WEFT_OP_BAND: *r = LLVMBuildAnd(B, x, y, ""); break;
    case WEFT_OP_BOR: *r = LLVMBuildOr(B, x, y, ""); break;
    case WEFT_OP_BXOR: *r = LLVMBuildXor(B, x, y, ""); break;
    case WEFT_OP_BNOT: *r = LLVMBuildNot(B, x, ""); break;
    case WEFT_OP_SHL:
    case WEFT_OP_SHR: {
        if (!fe_is_int(t) || !fe_is_int(t1)) {
            return internal("a shift of a non-integer", (int)t);
        }
        check_shift(fn, op, t, t1, y);
        LLVMValueRef k = amount(fn, t, t1, y, false);
        k = LLVMBuildAnd(
            B, k, LLVMConstInt(ty, (unsigned)fe_type_bits(t) - 1, 0), "");
        *r = op == WEFT_OP_SHL ? LLVMBuildShl(B, x, k, "")
             : fe_is_signed(t) ? LLVMBuildAShr(B, x, k, "")
                               : LLVMBuildLShr(B, x, k, "");
        break;
    }
    case WEFT_OP_ROTL:
    case WEFT_OP_ROTR: {
        if (!fe_is_int(t) || !fe_is_int(t1)) {
            return internal("a rotation of a non-integer", (int)t);
        }
        LLVMValueRef args[3] = {x, x, amount(fn, t, t1, y, true)};
        *r = cg_intrinsic(fn, op == WEFT_OP_ROTL ? "llvm.fshl" : "llvm.fshr",
                          &ty, 1, args, 3);
        break;
    }
    case WEFT_OP_POPCOUNT:
    case WEFT_OP_CLZ:
    case WEFT_OP_CTZ: {
        if (!fe_is_int(t)) {
            return internal("a bit count of a non-integer", (int)t);
        }
        LLVMValueRef args[2] = {x, LLVMConstInt(ty_of(fn, WEFT_BOOL), 0, 0)};
        LLVMValueRef v =
            op == WEFT_OP_POPCOUNT
                ? cg_intrinsic(fn, "llvm.ctpop", &ty, 1, args, 1)
                : cg_intrinsic(fn,
                               op == WEFT_OP_CLZ ? "llvm.ctlz" : "llvm.cttz",
                               &ty, 1, args, 2);
        /* the count, at most 64, to i32 */
        if (v && fe_type_bits(t) < 32) {
            *r = LLVMBuildZExt(B, v, ty_of(fn, WEFT_I32), "");
        } else if (v && fe_type_bits(t) > 32) {
            *r = LLVMBuildTrunc(B, v, ty_of(fn, WEFT_I32), "");
        } else {
            *r = v;
        }
        break;
    }
    case WEFT_OP_ISNAN: *r = LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""); break;
    case WEFT_OP_ISINF:
        *r = LLVMBuildFCmp(B, LLVMRealOEQ, fabs_of(fn, x),
                           LLVMConstReal(ty, __builtin_inf()), "");
        break;
    case WEFT_OP_LT:
    case WEFT_OP_LE:
    case WEFT_OP_GT:
    case WEFT_OP_GE:
    case WEFT_OP_EQ:
    case WEFT_OP_NE: *r = cg_compare(fn, op, t, x, y); break;
    case WEFT_OP_AND: *r = LLVMBuildAnd(B, x, y, ""); break;
    case WEFT_OP_OR: *r = LLVMBuildOr(B, x, y, ""); break;
    case WEFT_OP_NOT: *r = LLVMBuildNot(B, x, ""); break;
    case WEFT_OP_FLOOR:
    case WEFT_OP_CEILING:
    case WEFT_OP_ROUND:
    case WEFT_OP_TRUNCATE: {
        if (!flt || !fe_is_int(rt)) {
            return internal("rounding outside float -> integer", (int)op);
        }
        LLVMValueRef w = widen(fn, t, x);
        LLVMTypeRef wt = LLVMTypeOf(w);
        const char *name = op == WEFT_OP_FLOOR     ? "llvm.floor"
                           : op == WEFT_OP_CEILING ? "llvm.ceil"
                           : op == WEFT_OP_ROUND   ? "llvm.roundeven"
                                                   : "llvm.trunc";
        LLVMValueRef v = cg_intrinsic(fn, name, &wt, 1, &w, 1);
        if (v) {
            check_range(fn, op, rt, v);
        }
        *r = v ? float_to_int(fn, rt, v) : NULL;
        break;
    }
    case WEFT_OP_CONVERT:
        if (!fe_is_scalar(rt)) {
            return internal("convert to a non-scalar", (int)rt);
        }
        if (fn->checked && fe_is_float(t) && fe_is_int(rt)) {
            LLVMValueRef w = widen(fn, t, x);
            LLVMTypeRef wt = LLVMTypeOf(w);
            LLVMValueRef v = cg_intrinsic(fn, "llvm.trunc", &wt, 1, &w, 1);
            if (v) {
                check_range(fn, op, rt, v);
            }
        }
        *r = convert(fn, t, rt, x);
        break;
    case WEFT_OP_BITCAST:
        if (!fe_is_scalar(rt) || fe_type_bits(rt) != fe_type_bits(t)) {
            return internal("bitcast between sizes", (int)rt);
        }
        *r = bitcast(fn, t, rt, x);
        break;
    default: return internal("primitive", (int)op);
    }
    if (!*r) {
        return internal("primitive (LLVM lacks an intrinsic)", (int)op);
    }
    return WEFT_OK;
}

/* Row-major linear index (see cg.h). */
LLVMValueRef cg_to_index(cg_fn *fn, int rank, const LLVMValueRef *sh,
                         const LLVMValueRef *ix)
{
    if (rank == 0) {
        return cg_i64(fn, 0);
    }
    LLVMValueRef r = ix[0];
    for (int k = 1; k < rank; k++) {
        r = LLVMBuildAdd(B, LLVMBuildMul(B, r, sh[k], ""), ix[k], "");
    }
    return r;
}

/* The unsigned quotient and remainder of a by d (i64, d not 0) by
 * restoring division, one bit a trip: 64 trips of a loop with no call,
 * kept rolled (llvm.loop.unroll.disable), so that it holds few registers
 * in the kernels it sits in, cold. */
static void udivrem_loop(cg_fn *fn, LLVMValueRef a, LLVMValueRef d,
                         LLVMValueRef *q, LLVMValueRef *r)
{
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c, fn->fn, "udiv");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(c, fn->fn, "udiv.done");
    LLVMBuildBr(B, body);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef bit = LLVMBuildPhi(B, i64, "bit"); /* 63 .. 0 */
    LLVMValueRef qq = LLVMBuildPhi(B, i64, "q");
    LLVMValueRef rr = LLVMBuildPhi(B, i64, "r");
    LLVMValueRef z = cg_i64(fn, 0), top = cg_i64(fn, 63);
    LLVMAddIncoming(bit, &top, &pre, 1);
    LLVMAddIncoming(qq, &z, &pre, 1);
    LLVMAddIncoming(rr, &z, &pre, 1);
    LLVMValueRef r2 = LLVMBuildOr(
        B, LLVMBuildShl(B, rr, cg_i64(fn, 1), ""),
        LLVMBuildAnd(B, LLVMBuildLShr(B, a, bit, ""), cg_i64(fn, 1), ""), "");
    LLVMValueRef ge = LLVMBuildICmp(B, LLVMIntUGE, r2, d, "");
    LLVMValueRef rn =
        LLVMBuildSelect(B, ge, LLVMBuildSub(B, r2, d, ""), r2, "");
    LLVMValueRef qn = LLVMBuildOr(
        B, qq, LLVMBuildShl(B, LLVMBuildZExt(B, ge, i64, ""), bit, ""), "");
    LLVMValueRef bn = LLVMBuildSub(B, bit, cg_i64(fn, 1), "");
    LLVMAddIncoming(bit, &bn, &body, 1);
    LLVMAddIncoming(qq, &qn, &body, 1);
    LLVMAddIncoming(rr, &rn, &body, 1);
    LLVMValueRef br =
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, bit, z, ""), done, body);
    LLVMMetadataRef kv[1] = {
        LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24)};
    cg_loop_id(fn, br, LLVMMDNodeInContext2(c, kv, 1));
    LLVMPositionBuilderAtEnd(B, done);
    *q = qn;
    *r = rn;
}

/* a quot d and a rem d of i64 values with int_div's replacement of the
 * divisors that would trap, where the target's 64-bit division is a call
 * (cg_target.div64_call): in 32 bits when a and the divisor both lie in
 * [0, 2^32), the common case of indices; else on the magnitudes by
 * udivrem_loop (cold), the signs as sdiv and srem give them. */
static void divrem_nocall(cg_fn *fn, LLVMValueRef a, LLVMValueRef b,
                          LLVMValueRef *q, LLVMValueRef *r)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef zero = cg_i64(fn, 0), one = cg_i64(fn, 1);
    LLVMValueRef bad = LLVMBuildOr(
        B, LLVMBuildICmp(B, LLVMIntEQ, b, zero, ""),
        LLVMBuildAnd(B,
                     LLVMBuildICmp(B, LLVMIntEQ, a, cg_i64(fn, INT64_MIN), ""),
                     LLVMBuildICmp(B, LLVMIntEQ, b, cg_i64(fn, -1), ""), ""),
        "");
    LLVMValueRef d = LLVMBuildSelect(B, bad, one, b, "");
    LLVMValueRef small = LLVMBuildICmp(
        B, LLVMIntEQ,
        LLVMBuildLShr(B, LLVMBuildOr(B, a, d, ""), cg_i64(fn, 32), ""), zero,
        "");
    cg_if c;
    cg_if_begin(fn, &c, small);
    cg_branch_weights(fn, c.br, CG_USUAL, CG_RARE);
    LLVMValueRef a32 = LLVMBuildTrunc(B, a, i32, "");
    LLVMValueRef d32 = LLVMBuildTrunc(B, d, i32, "");
    LLVMValueRef fq = LLVMBuildZExt(B, LLVMBuildUDiv(B, a32, d32, ""), i64, "");
    LLVMValueRef fr = LLVMBuildZExt(B, LLVMBuildURem(B, a32, d32, ""), i64, "");
    LLVMBasicBlockRef fast = LLVMGetInsertBlock(B);
    cg_if_else(fn, &c);
    LLVMValueRef an = LLVMBuildICmp(B, LLVMIntSLT, a, zero, "");
    LLVMValueRef dn = LLVMBuildICmp(B, LLVMIntSLT, d, zero, "");
    LLVMValueRef ua = LLVMBuildSelect(B, an, LLVMBuildNeg(B, a, ""), a, "");
    LLVMValueRef ud = LLVMBuildSelect(B, dn, LLVMBuildNeg(B, d, ""), d, "");
    LLVMValueRef uq, ur;
    udivrem_loop(fn, ua, ud, &uq, &ur);
    LLVMValueRef sq = LLVMBuildSelect(B, LLVMBuildXor(B, an, dn, ""),
                                      LLVMBuildNeg(B, uq, ""), uq, "");
    LLVMValueRef sr = LLVMBuildSelect(B, an, LLVMBuildNeg(B, ur, ""), ur, "");
    LLVMBasicBlockRef slow = LLVMGetInsertBlock(B);
    cg_if_end(fn, &c);
    *q = LLVMBuildPhi(B, i64, "");
    LLVMAddIncoming(*q, &fq, &fast, 1);
    LLVMAddIncoming(*q, &sq, &slow, 1);
    *r = LLVMBuildPhi(B, i64, "");
    LLVMAddIncoming(*r, &fr, &fast, 1);
    LLVMAddIncoming(*r, &sr, &slow, 1);
}

/* Inverse of cg_to_index (see cg.h): quot and rem by each inner extent
 * from the innermost out, the outermost component not reduced.  Extents
 * that would trap (0, or -1 with the minimum) divide by 1 instead. */
void cg_from_index(cg_fn *fn, int rank, const LLVMValueRef *sh, LLVMValueRef i,
                   LLVMValueRef *ix)
{
    bool nocall = fn->target && fn->target->div64_call;
    for (int k = rank - 1; k >= 1; k--) {
        if (nocall) {
            divrem_nocall(fn, i, sh[k], &i, &ix[k]);
            continue;
        }
        ix[k] = int_div(fn, WEFT_OP_REM, WEFT_I64, i, sh[k]);
        i = int_div(fn, WEFT_OP_QUOT, WEFT_I64, i, sh[k]);
    }
    if (rank > 0) {
        ix[0] = i;
    }
}

/* ---- scalar code: cg_walker's hooks ---- */

static const cg_walk_ops scalar_walk;

static weft_status array_of(cg_fn *fn, const fe_term *acc, cg_array *out)
{
    cg_walker w = {.ops = &scalar_walk, .fn = fn};
    return cg_walk_array(&w, acc, out);
}

weft_status cg_array_of(cg_fn *fn, const fe_term *acc, cg_array *out)
{
    return array_of(fn, acc, out);
}

/* An expression whose evaluation is cheap and cannot fault, so that `and`
 * and `or` may evaluate it unconditionally. */
static bool trivial(const fe_term *e, int depth)
{
    if (e->kind == FE_CONST || e->kind == FE_VAR) {
        return true;
    }
    if (e->kind != FE_PRIM || depth > 1) {
        return false;
    }
    switch (e->op) {
    case WEFT_OP_LT:
    case WEFT_OP_LE:
    case WEFT_OP_GT:
    case WEFT_OP_GE:
    case WEFT_OP_EQ:
    case WEFT_OP_NE:
    case WEFT_OP_NOT:
    case WEFT_OP_AND:
    case WEFT_OP_OR:
    case WEFT_OP_ISNAN: break;
    default: return false;
    }
    for (int k = 0; k < e->nkid; k++) {
        if (!trivial(e->kid[k], depth + 1)) {
            return false;
        }
    }
    return true;
}

/* One-leaf value of a term. */
static weft_status exp1(cg_fn *fn, const fe_term *e, LLVMValueRef *out)
{
    cg_walker w = {.ops = &scalar_walk, .fn = fn};
    return cg_walk1(&w, e, out);
}

static weft_status exp_short(cg_fn *fn, const fe_term *e, cg_val *out)
{
    LLVMValueRef x = NULL, y = NULL;
    weft_status s = exp1(fn, e->kid[0], &x);
    if (s != WEFT_OK) {
        return s;
    }
    bool and = e->op == WEFT_OP_AND;
    if (trivial(e->kid[1], 0)) {
        s = exp1(fn, e->kid[1], &y);
        if (s != WEFT_OK) {
            return s;
        }
        return cg_val_one(
            fn, and? LLVMBuildAnd(B, x, y, "") : LLVMBuildOr(B, x, y, ""), out);
    }
    /* and: x ? y : false; or: x ? true : y */
    LLVMValueRef k = LLVMConstInt(ty_of(fn, WEFT_BOOL), and? 0 : 1, 0);
    cg_val t, f;
    cg_if c;
    int stage_tile = fn->stage_tile;
    fn->stage_tile = 0; /* y may not run in every thread (stage.c) */
    cg_if_begin(fn, &c, x);
    s = and ? cg_exp(fn, e->kid[1], &t) : cg_val_one(fn, k, &t);
    if (s == WEFT_OK) {
        cg_if_else(fn, &c);
        s = and ? cg_val_one(fn, k, &f) : cg_exp(fn, e->kid[1], &f);
    }
    fn->stage_tile = stage_tile;
    if (s != WEFT_OK) {
        return s;
    }
    return cg_if_merge(fn, &c, &t, &f, out);
}

void cg_phis_open(cg_fn *fn, LLVMBasicBlockRef head, const cg_val *init,
                  cg_val *st)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    for (int k = 0; k < init->n; k++) {
        st->v[k] = LLVMBuildPhi(B, LLVMTypeOf(init->v[k]), "");
        LLVMAddIncoming(st->v[k], &init->v[k], &pre, 1);
    }
}

/* ---- reads taken out of while loops ----
 *
 * A read `a ! ix` in a while loop's functions whose index does not depend
 * on anything the loop binds (its functions' parameters and the lets in
 * them) reads the same element at every trip: n-body's `x ! i` beside
 * `x ! j`.  Its bounds test puts the load behind a branch, which LLVM
 * will not hoist, so exp_while reads it once before the loop and cg_exp
 * answers the read from there.  A read is pure (outside its array it
 * gives zero, reading nothing), so reading it when the loop runs no trip
 * is harmless; checked mode keeps reads where they are (a read that
 * falls outside reports, and only when it runs), and so does a kernel
 * that watches for `ignore`. */

typedef struct cg_hoisted {
    const fe_term *at; /* the FE_AT or FE_AT_LINEAR term */
    cg_val v;          /* its value, read before the loop */
} cg_hoisted;

enum { HOIST_MAX = 32 }; /* reads hoisted per loop, at most */

/* Collect in h[*n] (at most HOIST_MAX) the outermost invariant reads in
 * t, each term once. */
static void find_reads(const fe_term *t, const bool *inner, uint32_t nvar,
                       const fe_term **h, int *n)
{
    if (!t || t->acc) {
        return;
    }
    if ((t->kind == FE_AT || t->kind == FE_AT_LINEAR) &&
        cg_invariant(t, inner, nvar)) {
        for (int k = 0; k < *n; k++) {
            if (h[k] == t) {
                return;
            }
        }
        if (*n < HOIST_MAX) {
            h[(*n)++] = t;
        }
        return;
    }
    for (int i = 0; i < t->nfun; i++) {
        find_reads(t->fun[i] ? t->fun[i]->body : NULL, inner, nvar, h, n);
    }
    for (int i = 0; i < t->nkid; i++) {
        find_reads(t->kid[i], inner, nvar, h, n);
    }
}

/* Read the invariant reads of while loop e before it, onto fn->hoisted
 * (the caller drops them after the loop by restoring fn->nhoisted). */
static weft_status hoist_reads(cg_fn *fn, const fe_term *e)
{
    if (fn->checked || fn->ignored || fn->nvar == 0) {
        return WEFT_OK;
    }
    bool *inner = fe_arena_alloc(fn->arena, fn->nvar * sizeof *inner);
    if (!inner) {
        return fe_oom("weft_compile");
    }
    memset(inner, 0, fn->nvar * sizeof *inner);
    cg_mark_bound(e, inner, fn->nvar);
    const fe_term *h[HOIST_MAX];
    int n = 0;
    for (int i = 0; i < e->nfun; i++) {
        find_reads(e->fun[i]->body, inner, fn->nvar, h, &n);
    }
    if (n == 0) {
        return WEFT_OK;
    }
    cg_hoisted *all =
        fe_arena_alloc(fn->arena, (size_t)(fn->nhoisted + n) * sizeof *all);
    if (!all) {
        return fe_oom("weft_compile");
    }
    if (fn->nhoisted > 0) {
        memcpy(all, fn->hoisted, (size_t)fn->nhoisted * sizeof *all);
    }
    for (int k = 0; k < n; k++) {
        all[fn->nhoisted + k].at = h[k];
        weft_status s = cg_exp(fn, h[k], &all[fn->nhoisted + k].v);
        if (s != WEFT_OK) {
            return s;
        }
    }
    fn->hoisted = all;
    fn->nhoisted += n;
    return WEFT_OK;
}

/* The value of read t taken out of an enclosing loop, or NULL. */
static const cg_val *hoisted_read(const cg_fn *fn, const fe_term *t)
{
    for (int k = fn->nhoisted - 1; k >= 0; k--) {
        if (fn->hoisted[k].at == t) {
            return &fn->hoisted[k].v;
        }
    }
    return NULL;
}

static weft_status exp_while(cg_fn *fn, const fe_term *e, cg_val *out)
{
    if (e->nfun != 2 || e->nkid != 1 || e->fun[0]->arity != 1 ||
        e->fun[1]->arity != 1) {
        return internal("a malformed while", e->nfun);
    }
    cg_val init, st, c, next;
    int nhoisted = fn->nhoisted;
    weft_status s = cg_exp(fn, e->kid[0], &init);
    if (s == WEFT_OK) {
        s = cg_val_make(fn, init.n, &st);
    }
    if (s == WEFT_OK) {
        s = hoist_reads(fn, e);
    }
    bool staged = false;
    if (s == WEFT_OK) {
        cg_walker w = {.ops = &scalar_walk, .fn = fn};
        s = cg_stage_while(&w, e, &init, out, &staged);
    }
    if (s != WEFT_OK || staged) {
        fn->nhoisted = nhoisted;
        return s;
    }
    /* the trips are not block-uniform (stage.c) */
    int stage_tile = fn->stage_tile;
    fn->stage_tile = 0;
    /* With a cancel word, the loop counts its iterations and polls the
     * word every CG_POLL_EVERY of them (cg.h cancel_poll). */
    bool poll = fn->cancel && fn->target && fn->target->cancel_poll;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef count = NULL;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "while");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "while.body");
    LLVMBasicBlockRef latch =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "while.latch");
    LLVMBasicBlockRef exit =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "while.exit");
    cg_phis_open(fn, head, &init, &st);
    if (poll) {
        count = LLVMBuildPhi(B, i32, "while.count");
        LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
        LLVMAddIncoming(count, &zero, &pre, 1);
    }
    s = cg_apply(fn, e->fun[0], &st, &c);
    if (s != WEFT_OK) {
        return s;
    }
    if (c.n != 1) {
        return internal("a while condition with several leaves", c.n);
    }
    LLVMBuildCondBr(B, c.v[0], body, exit);
    LLVMPositionBuilderAtEnd(B, body);
    s = cg_apply(fn, e->fun[1], &st, &next);
    if (s != WEFT_OK) {
        return s;
    }
    if (next.n != st.n) {
        return internal("a while body of another type", next.n);
    }
    LLVMValueRef count1 = NULL;
    if (poll) {
        count1 = LLVMBuildAdd(B, count, LLVMConstInt(i32, 1, 0), "");
        LLVMValueRef low = LLVMBuildAnd(
            B, count1,
            LLVMConstInt(i32, (unsigned)fn->target->poll_every - 1, 0), "");
        LLVMValueRef due =
            LLVMBuildICmp(B, LLVMIntEQ, low, LLVMConstInt(i32, 0, 0), "");
        LLVMBasicBlockRef check =
            LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "while.poll");
        LLVMBasicBlockRef stop =
            LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "while.stop");
        LLVMBuildCondBr(B, due, check, latch);
        LLVMPositionBuilderAtEnd(B, check);
        LLVMValueRef halt = fn->target->cancel_poll(fn);
        LLVMBuildCondBr(B, halt, stop, latch);
        LLVMPositionBuilderAtEnd(B, stop);
        if (fn->target->cancel_returns) {
            LLVMBuildRetVoid(B);
        } else {
            LLVMBuildBr(B, exit);
        }
    } else {
        LLVMBuildBr(B, latch);
    }
    LLVMPositionBuilderAtEnd(B, latch);
    LLVMBuildBr(B, head);
    for (int k = 0; k < st.n; k++) {
        LLVMAddIncoming(st.v[k], &next.v[k], &latch, 1);
    }
    if (poll) {
        LLVMAddIncoming(count, &count1, &latch, 1);
    }
    LLVMPositionBuilderAtEnd(B, exit);
    fn->nhoisted = nhoisted;
    fn->stage_tile = stage_tile;
    *out = st;
    return WEFT_OK;
}

/* let v = rhs, v a rank-0 index, in a kernel that watches for `ignore`
 * (fn->ignored): a rank-0 index has no leaves to carry the marker, so, as
 * in the interpreter, whether rhs gave `ignore` is kept with the binding
 * (an i1 in v[0] of a value of no leaves) and an occurrence of v sets the
 * flag again; evaluating rhs itself leaves the flag as it was. */
static weft_status let_index0(cg_fn *fn, const fe_var *v, const fe_term *rhs)
{
    LLVMTypeRef i1 = ty_of(fn, WEFT_BOOL);
    LLVMValueRef saved = LLVMBuildLoad2(B, i1, fn->ignored, "");
    LLVMBuildStore(B, LLVMConstInt(i1, 0, 0), fn->ignored);
    cg_val x, bound;
    weft_status s = cg_exp(fn, rhs, &x);
    if (s == WEFT_OK) {
        s = cg_val_make(fn, 1, &bound);
    }
    if (s != WEFT_OK) {
        return s;
    }
    bound.v[0] = LLVMBuildLoad2(B, i1, fn->ignored, "");
    bound.n = 0;
    LLVMBuildStore(B, saved, fn->ignored);
    fn->env[v->id] = bound;
    fn->bound[v->id] = true;
    return WEFT_OK;
}

/* Whether array terms x and y name the same array. */
static bool same_array(const fe_term *x, const fe_term *y)
{
    if (x == y) {
        return true;
    }
    if (x->kind != y->kind) {
        return false;
    }
    switch ((fe_kind)x->kind) {
    case FE_VAR: return x->u.var == y->u.var;
    case FE_PARAM: return x->u.index == y->u.index;
    case FE_USE: return x->u.array == y->u.array;
    default: return false;
    }
}

/* Read e (a ! ix, a of rank 1) at the index of the loop in->index: in the
 * checked copy note a (true: noted, or noted before); in the copy inside,
 * whether a was noted (its read then goes unchecked).  cg_inside. */
static bool inside_read(cg_inside *in, const fe_term *e)
{
    const fe_term *a = e->kid[0];
    for (int k = 0; k < in->n; k++) {
        if (same_array(in->array[k], a)) {
            return true;
        }
    }
    if (in->skip || in->n == CG_INSIDE_MAX) {
        return false;
    }
    in->array[in->n++] = a;
    return true;
}

/* a ! ix (FE_AT) or a !! i (FE_AT_LINEAR), ix the index's leaves: the
 * element when the index is inside a, else zero in every leaf (and, in
 * checked mode, a report), without reading; unchecked where
 * fn->inside says the loop's range is inside a (cg_inside). */
static weft_status exp_at(cg_fn *fn, const fe_term *e, const cg_array *a,
                          const cg_val *ix, cg_val *out)
{
    LLVMValueRef i = NULL, inside = NULL;
    if (e->kind == FE_AT) {
        if (ix->n != a->rank) {
            return internal("an index of the wrong rank", ix->n);
        }
        i = cg_to_index(fn, a->rank, a->extent, ix->v);
        if (fn->inside && a->rank == 1 && ix->v[0] == fn->inside->index &&
            inside_read(fn->inside, e) && fn->inside->skip) {
            return cg_array_load(fn, a, i, out);
        }
        for (int d = 0; d < a->rank; d++) {
            LLVMValueRef in =
                LLVMBuildICmp(B, LLVMIntULT, ix->v[d], a->extent[d], "");
            inside = inside ? LLVMBuildAnd(B, inside, in, "") : in;
        }
    } else {
        if (ix->n != 1) {
            return internal("a linear index with several leaves", ix->n);
        }
        i = ix->v[0];
        LLVMValueRef n = cg_i64(fn, 1);
        for (int d = 0; d < a->rank; d++) {
            n = d == 0 ? a->extent[0] : LLVMBuildMul(B, n, a->extent[d], "");
        }
        inside = LLVMBuildICmp(B, LLVMIntULT, i, n, "");
    }
    if (!inside) {
        return cg_array_load(fn, a, i, out); /* rank 0: one element */
    }
    if (fn->flat_reads && !fn->checked) {
        return cg_array_load_or_zero(fn, a, i, inside, out);
    }
    cg_val x, z;
    cg_if c;
    cg_if_begin(fn, &c, inside);
    if (!fn->cold) {
        cg_branch_weights(fn, c.br, CG_USUAL, CG_RARE); /* for irce */
    }
    weft_status s = cg_array_load(fn, a, i, &x);
    if (s != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &c);
    cg_check(fn, NULL, e->kind == FE_AT ? CG_ERR_INDEX : CG_ERR_LINEAR, 0, 0);
    if ((s = cg_val_make(fn, a->nleaf, &z)) != WEFT_OK) {
        return s;
    }
    for (int l = 0; l < a->nleaf; l++) {
        z.v[l] = LLVMConstNull(ty_of(fn, a->leaf[l]));
    }
    return cg_if_merge(fn, &c, &x, &z, out);
}

/*
 * Deep conditionals.  A conditional is a branch, two sides and a join; a
 * generated chain of n conditionals nests n such regions, every jump
 * spanning the ones inside it, and LLVM's assembler lays that out in time
 * quadratic in n (its branch relaxation: minutes at 10^4).  So inside
 * CG_BRANCH_DEPTH nested conditional branches, a conditional computes both
 * of its sides and joins them by selects, unless the code watches for
 * `ignore` (which the side not taken must not set).  Code may compute a
 * side that is not wanted, since every operation is defined on every
 * input ("Undefined operations" above, reads outside an array included),
 * except a while loop, which need not end there: fn->spec holds the
 * condition under which the code being emitted is wanted, a while loop
 * met under it runs behind a branch on it (exp_wanted), and checked
 * code's tests report only where it holds (cg_check).  Only code nested
 * that deep pays for the side not taken.
 */
#define CG_BRANCH_DEPTH 8

static weft_status exp_cond(cg_fn *fn, const fe_term *e, cg_val *out)
{
    LLVMValueRef c = NULL;
    cg_val t, f;
    weft_status s = exp1(fn, e->kid[0], &c);
    if (s != WEFT_OK) {
        return s;
    }
    int stage_tile = fn->stage_tile;
    fn->stage_tile = 0; /* the sides may not be block-uniform (stage.c) */
    if (fn->cond_depth < CG_BRANCH_DEPTH || fn->ignored) {
        cg_if i;
        fn->cond_depth++;
        cg_if_begin(fn, &i, c);
        s = cg_exp(fn, e->kid[1], &t);
        if (s == WEFT_OK) {
            cg_if_else(fn, &i);
            s = cg_exp(fn, e->kid[2], &f);
        }
        fn->cond_depth--;
        fn->stage_tile = stage_tile;
        return s != WEFT_OK ? s : cg_if_merge(fn, &i, &t, &f, out);
    }
    LLVMValueRef outer = fn->spec, nc = LLVMBuildNot(B, c, "");
    fn->spec = outer ? LLVMBuildAnd(B, outer, c, "") : c;
    s = cg_exp(fn, e->kid[1], &t);
    if (s == WEFT_OK) {
        fn->spec = outer ? LLVMBuildAnd(B, outer, nc, "") : nc;
        s = cg_exp(fn, e->kid[2], &f);
    }
    fn->spec = outer;
    fn->stage_tile = stage_tile;
    if (s == WEFT_OK && t.n != f.n) {
        s = internal("a conditional with sides of different shapes", t.n);
    }
    if (s == WEFT_OK) {
        s = cg_val_make(fn, t.n, out);
    }
    for (int k = 0; s == WEFT_OK && k < t.n; k++) {
        out->v[k] = LLVMBuildSelect(B, c, t.v[k], f.v[k], "");
    }
    return s;
}

/* A while loop on a speculated side (fn->spec set): run only where the
 * side is wanted, zeros elsewhere (see "Deep conditionals"). */
static weft_status exp_wanted(cg_fn *fn, const fe_term *e, cg_val *out)
{
    LLVMValueRef wanted = fn->spec;
    cg_val t, z;
    cg_if i;
    cg_if_begin(fn, &i, wanted);
    fn->spec = NULL;
    fn->cond_depth++;
    weft_status s = exp_while(fn, e, &t);
    fn->cond_depth--;
    fn->spec = wanted;
    if (s == WEFT_OK) {
        s = cg_val_make(fn, t.n, &z);
    }
    if (s != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &i);
    for (int k = 0; k < t.n; k++) {
        z.v[k] = LLVMConstNull(LLVMTypeOf(t.v[k]));
    }
    return cg_if_merge(fn, &i, &t, &z, out);
}

/* Emit a scalar core term (see cg.h). */
/* The terms cg_walk leaves to scalar code. */
static weft_status scalar_term(const cg_walker *w, const fe_term *e,
                               cg_val *out)
{
    cg_fn *fn = w->fn;
    weft_status s;
    switch (e->kind) {
    case FE_CONST:
        if (!fe_is_scalar(e->type)) {
            return internal("a constant of a non-scalar type", (int)e->type);
        }
        return cg_val_one(fn, cg_const(fn, e->type, e->u.c), out);
    case FE_VAR: {
        const fe_var *v = e->u.var;
        if (!v || v->acc || v->id >= fn->nvar || !fn->bound[v->id]) {
            return internal("an unbound scalar variable", v ? (int)v->id : -1);
        }
        *out = fn->env[v->id];
        if (fn->ignored && out->n == 0 && out->v) {
            /* a rank-0 index bound by a let to `ignore` (see FE_LET) */
            LLVMValueRef was =
                LLVMBuildLoad2(B, ty_of(fn, WEFT_BOOL), fn->ignored, "");
            LLVMBuildStore(B, LLVMBuildOr(B, was, out->v[0], ""), fn->ignored);
        }
        return WEFT_OK;
    }
    case FE_COND: return exp_cond(fn, e, out);
    case FE_SHAPE: {
        cg_array a;
        if ((s = array_of(fn, e->kid[0], &a)) != WEFT_OK) {
            return s;
        }
        out->n = a.rank;
        out->v = a.extent;
        return WEFT_OK;
    }
    case FE_AT:
    case FE_AT_LINEAR: {
        cg_array a;
        cg_val ix;
        const cg_staged *r = fn->stage ? cg_staged_read(fn, e) : NULL;
        if (r) {
            return cg_staged_load(fn, r, out);
        }
        const cg_val *h = fn->nhoisted > 0 ? hoisted_read(fn, e) : NULL;
        if (h) {
            if ((s = cg_val_make(fn, h->n, out)) == WEFT_OK) {
                memcpy(out->v, h->v, (size_t)h->n * sizeof *h->v);
            }
            return s;
        }
        if ((s = array_of(fn, e->kid[0], &a)) != WEFT_OK ||
            (s = cg_exp(fn, e->kid[1], &ix)) != WEFT_OK) {
            return s;
        }
        return exp_at(fn, e, &a, &ix, out);
    }
    case FE_WHILE:
        return fn->spec ? exp_wanted(fn, e, out) : exp_while(fn, e, out);
    case FE_IGNORE: {
        /* every component INT64_MIN, as the interpreter; and the flag */
        int n = fe_is_dim(e->type) ? fe_dim_rank(e->type) : 0;
        if ((s = cg_val_make(fn, n, out)) != WEFT_OK) {
            return s;
        }
        for (int k = 0; k < n; k++) {
            out->v[k] = cg_i64(fn, INT64_MIN);
        }
        if (fn->ignored) {
            LLVMBuildStore(B, LLVMConstInt(ty_of(fn, WEFT_BOOL), 1, 0),
                           fn->ignored);
        }
        return WEFT_OK;
    }
    default: return internal("a term of this kind", e->kind);
    }
}

static weft_status scalar_prim(const cg_walker *w, weft_op op, weft_type rt,
                               weft_type t0, weft_type t1,
                               const LLVMValueRef *a, LLVMValueRef *r)
{
    return cg_prim(w->fn, op, rt, t0, t1, a, r);
}

static weft_status scalar_to_index(const cg_walker *w, int rank,
                                   const LLVMValueRef *sh,
                                   const LLVMValueRef *ix, LLVMValueRef *out)
{
    *out = cg_to_index(w->fn, rank, sh, ix);
    return WEFT_OK;
}

/* cg_from_index, after the interpreter's errors in checked mode,
 * innermost extent first. */
static weft_status scalar_from_index(const cg_walker *w, int rank,
                                     const LLVMValueRef *sh, LLVMValueRef i,
                                     LLVMValueRef *ix)
{
    cg_fn *fn = w->fn;
    for (int k = rank - 1; k >= 1 && fn->checked; k--) {
        LLVMValueRef z = cg_i64(fn, 0);
        cg_check(fn, LLVMBuildICmp(B, LLVMIntEQ, sh[k], z, ""),
                 CG_ERR_FROM_ZERO, 0, 0);
        cg_check(fn, LLVMBuildICmp(B, LLVMIntSLT, sh[k], z, ""),
                 CG_ERR_FROM_NEG, 0, 0);
    }
    cg_from_index(fn, rank, sh, i, ix);
    return WEFT_OK;
}

static weft_status scalar_short(const cg_walker *w, const fe_term *e,
                                cg_val *out)
{
    return exp_short(w->fn, e, out);
}

static weft_status scalar_let_index0(const cg_walker *w, const fe_var *v,
                                     const fe_term *rhs)
{
    return let_index0(w->fn, v, rhs);
}

static weft_status scalar_fail(const cg_walker *w, const char *what, int k)
{
    (void)w;
    return internal(what, k);
}

static const cg_walk_ops scalar_walk = {
    .term = scalar_term,
    .prim = scalar_prim,
    .short_circuit = scalar_short,
    .to_index = scalar_to_index,
    .from_index = scalar_from_index,
    .let_index0 = scalar_let_index0,
    .fail = scalar_fail,
};

weft_status cg_exp(cg_fn *fn, const fe_term *e, cg_val *out)
{
    cg_walker w = {.ops = &scalar_walk, .fn = fn};
    return cg_walk(&w, e, out);
}

cg_walker cg_scalar_walker(cg_fn *fn)
{
    return (cg_walker){.ops = &scalar_walk, .fn = fn};
}

/* Apply a core function (see cg.h). */
weft_status cg_apply(cg_fn *fn, const fe_fun *f, const cg_val *args,
                     cg_val *out)
{
    cg_walker w = {.ops = &scalar_walk, .fn = fn};
    return cg_walk_apply(&w, f, args, out);
}
