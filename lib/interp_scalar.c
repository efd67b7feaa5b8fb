/*
 * lib/interp_scalar.c: the meaning of every scalar primitive of weft_ops.h.
 *
 * fe_prim_eval applies one primitive to operand values that are already
 * computed (fe_val leaves as fe.h describes them: signed integers sign-
 * extended in .i, unsigned integers and bool zero-extended in .u, floats as
 * the double .f).  The interpreter calls it for each FE_PRIM node, and the
 * simplifier may call it to fold constants, so that both agree by
 * construction.
 *
 * The rules, in one place:
 *   - integer arithmetic is done in 64 bits (unsigned, so that overflow is
 *     defined) and wrapped to the type's width with fe_norm;
 *   - f32 arithmetic is done in float, f64 in double, f16 in float and then
 *     rounded to half precision by fe_norm;
 *   - quot/rem truncate, idiv/mod round toward negative infinity; a zero
 *     divisor is WEFT_ERR_DIVIDE_BY_ZERO; quot and idiv of the minimum of a
 *     signed type by -1 are WEFT_ERR_UNDEFINED (rem and mod give 0);
 *   - shifts by a negative amount or by the width or more are
 *     WEFT_ERR_UNDEFINED; rotations take the amount modulo the width;
 *   - float to integer (floor, ceiling, round, truncate, convert) is
 *     WEFT_ERR_UNDEFINED for NaN and for results outside the target type;
 *   - round is half to even, computed exactly without the rounding mode.
 * `and` and `or` are evaluated here strictly; the interpreter short-
 * circuits them before calling.
 */
#include <math.h>
#include <string.h>

#include "fe.h"

static const char *op_name(weft_op op)
{
    const char *n = weft_op_name(op);
    return n ? n : "?";
}

static const char *tname(weft_type t)
{
    static const char *names[] = {
        "?",   "bool", "i8",  "i16", "i32", "i64", "u8",
        "u16", "u32",  "u64", "f16", "f32", "f64",
    };
    return fe_is_scalar(t) ? names[t] : "?";
}

/* All-ones mask of the low `bits` bits. */
static uint64_t mask_of(int bits)
{
    return bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
}

/* The minimum of a signed type, as int64. */
static int64_t signed_min(weft_type t)
{
    int w = fe_type_bits(t);
    return w >= 64 ? INT64_MIN : -((int64_t)1 << (w - 1));
}

/* a <= b for two values of scalar type t (IEEE for floats). */
static bool le(weft_type t, fe_val a, fe_val b)
{
    if (fe_is_float(t)) {
        return a.f <= b.f;
    }
    if (fe_is_signed(t)) {
        return a.i <= b.i;
    }
    return a.u <= b.u;
}

static bool lt(weft_type t, fe_val a, fe_val b)
{
    if (fe_is_float(t)) {
        return a.f < b.f;
    }
    if (fe_is_signed(t)) {
        return a.i < b.i;
    }
    return a.u < b.u;
}

static bool eq(weft_type t, fe_val a, fe_val b)
{
    if (fe_is_float(t)) {
        return a.f == b.f;
    }
    return a.u == b.u;
}

static fe_val from_bool(bool b)
{
    fe_val v;
    v.u = b ? 1 : 0;
    return v;
}

static fe_val from_double(weft_type t, double d)
{
    fe_val v;
    v.f = d;
    return fe_norm(t, v);
}

/* Floating binary arithmetic, in the precision of t: + - * / here, the
 * C library's functions of two arguments through fe_prims. */
static fe_val float2(weft_op op, weft_type t, double a, double b)
{
    const fe_prim_info *p = &fe_prims[op];
    if (t == WEFT_F64) {
        switch (op) {
        case WEFT_OP_ADD: return from_double(t, a + b);
        case WEFT_OP_SUB: return from_double(t, a - b);
        case WEFT_OP_MUL: return from_double(t, a * b);
        case WEFT_OP_FDIV: return from_double(t, a / b);
        default: break;
        }
        return from_double(t, p->libm2 ? p->libm2(a, b) : NAN);
    }
    float x = (float)a, y = (float)b;
    switch (op) {
    case WEFT_OP_ADD: return from_double(t, (double)(x + y));
    case WEFT_OP_SUB: return from_double(t, (double)(x - y));
    case WEFT_OP_MUL: return from_double(t, (double)(x * y));
    case WEFT_OP_FDIV: return from_double(t, (double)(x / y));
    default: break;
    }
    return from_double(t, p->libm2f ? (double)p->libm2f(x, y) : NAN);
}

/* The C library's floating function op of one argument, in the precision
 * of t (f16 through float). */
static fe_val float1(weft_op op, weft_type t, double a)
{
    const fe_prim_info *p = &fe_prims[op];
    if (t == WEFT_F64) {
        return from_double(t, p->libm1 ? p->libm1(a) : NAN);
    }
    return from_double(t, p->libm1f ? (double)p->libm1f((float)a) : NAN);
}

/* Round half to even without depending on the floating-point environment. */
static double round_even(double x)
{
    double f = floor(x);
    double d = x - f; /* exact for finite x */
    if (d > 0.5) {
        return f + 1;
    }
    if (d < 0.5) {
        return f;
    }
    return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

/* An integral double v to integer type t; WEFT_ERR_UNDEFINED when NaN or
 * out of range.  `what` names the operation for the message. */
static weft_status float_to_int(weft_type t, double src, double v,
                                const char *what, fe_val *r)
{
    int w = fe_type_bits(t);
    bool ok;
    if (isnan(v)) {
        ok = false;
    } else if (fe_is_signed(t)) {
        double lim = ldexp(1.0, w - 1);
        ok = v >= -lim && v < lim;
    } else {
        ok = v >= 0.0 && v < ldexp(1.0, w);
    }
    if (!ok) {
        return fe_error(WEFT_ERR_UNDEFINED,
                        "weft_run: %s of %g to %s is out of range", what, src,
                        tname(t));
    }
    if (fe_is_signed(t)) {
        r->i = (int64_t)v;
    } else {
        r->u = (uint64_t)v;
    }
    return WEFT_OK;
}

/* The raw bits of a value of scalar type t. */
static uint64_t bits_of(weft_type t, fe_val v)
{
    switch (t) {
    case WEFT_F16: return fe_half_from_double(v.f);
    case WEFT_F32: {
        float f = (float)v.f;
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        return b;
    }
    case WEFT_F64: {
        uint64_t b;
        memcpy(&b, &v.f, sizeof b);
        return b;
    }
    default: return v.u & mask_of(fe_type_bits(t));
    }
}

/* A value of scalar type t from raw bits. */
static fe_val from_bits(weft_type t, uint64_t b)
{
    fe_val v;
    switch (t) {
    case WEFT_F16: v.f = (double)fe_half_to_float((uint16_t)b); return v;
    case WEFT_F32: {
        uint32_t b32 = (uint32_t)b;
        float f;
        memcpy(&f, &b32, sizeof f);
        v.f = (double)f;
        return v;
    }
    case WEFT_F64: memcpy(&v.f, &b, sizeof v.f); return v;
    default: v.u = b; return fe_norm(t, v);
    }
}

/* convert: any scalar type `from` to any scalar type `to`. */
static weft_status convert(weft_type from, weft_type to, fe_val a, fe_val *r)
{
    if (to == WEFT_BOOL) {
        *r = from_bool(fe_is_float(from) ? a.f != 0.0 : a.u != 0);
        return WEFT_OK;
    }
    if (from == WEFT_BOOL || fe_is_int(from)) {
        if (fe_is_int(to)) {
            *r = fe_norm(to, a);
        } else if (to == WEFT_F64) {
            r->f = fe_is_signed(from) ? (double)a.i : (double)a.u;
        } else {
            float f = fe_is_signed(from) ? (float)a.i : (float)a.u;
            *r = from_double(to, (double)f);
        }
        return WEFT_OK;
    }
    /* from a float */
    if (fe_is_float(to)) {
        *r = from_double(to, a.f);
        return WEFT_OK;
    }
    return float_to_int(to, a.f, trunc(a.f), "convert", r);
}

/* Shift and rotate amounts: the amount as a (possibly huge) signed value. */
static int64_t amount_of(weft_type t, fe_val b)
{
    if (fe_is_signed(t)) {
        return b.i;
    }
    return b.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)b.u;
}

static weft_status int_div(weft_op op, weft_type t, fe_val a, fe_val b,
                           fe_val *r)
{
    if (b.u == 0) {
        return fe_error(WEFT_ERR_DIVIDE_BY_ZERO,
                        "weft_run: integer division by zero (%s)", op_name(op));
    }
    if (!fe_is_signed(t)) {
        r->u =
            (op == WEFT_OP_QUOT || op == WEFT_OP_IDIV) ? a.u / b.u : a.u % b.u;
        return WEFT_OK;
    }
    if (b.i == -1 && a.i == signed_min(t)) {
        if (op == WEFT_OP_QUOT || op == WEFT_OP_IDIV) {
            return fe_error(WEFT_ERR_UNDEFINED,
                            "weft_run: %s of the minimum %s by -1 is undefined",
                            op_name(op), tname(t));
        }
        r->i = 0;
        return WEFT_OK;
    }
    int64_t q = a.i / b.i, m = a.i % b.i;
    switch (op) {
    case WEFT_OP_QUOT: r->i = q; break;
    case WEFT_OP_REM: r->i = m; break;
    case WEFT_OP_IDIV:
        r->i = (m != 0 && ((m < 0) != (b.i < 0))) ? q - 1 : q;
        break;
    default: r->i = (m != 0 && ((m < 0) != (b.i < 0))) ? m + b.i : m; break;
    }
    *r = fe_norm(t, *r);
    return WEFT_OK;
}

static weft_status shift(weft_op op, weft_type t, weft_type ta, fe_val a,
                         fe_val b, fe_val *r)
{
    int w = fe_type_bits(t);
    int64_t k = amount_of(ta, b);
    uint64_t m = mask_of(w);
    if (op == WEFT_OP_ROTL || op == WEFT_OP_ROTR) {
        int s = (int)(((k % w) + w) % w);
        if (op == WEFT_OP_ROTR) {
            s = (w - s) % w;
        }
        uint64_t x = a.u & m;
        uint64_t y = s == 0 ? x : ((x << s) | (x >> (w - s))) & m;
        r->u = y;
        *r = fe_norm(t, *r);
        return WEFT_OK;
    }
    if (k < 0 || k >= w) {
        return fe_error(WEFT_ERR_UNDEFINED,
                        "weft_run: %s by %lld is undefined for %s", op_name(op),
                        (long long)k, tname(t));
    }
    if (op == WEFT_OP_SHL) {
        r->u = a.u << k;
    } else if (fe_is_signed(t)) {
        /* a.i is sign-extended, so the 64-bit arithmetic shift is right */
        r->i = a.i < 0 ? ~(~a.i >> k) : a.i >> k;
    } else {
        r->u = a.u >> k;
    }
    *r = fe_norm(t, *r);
    return WEFT_OK;
}

/* Apply primitive op (result type rt, first operand type t0, second t1 or 0)
 * to a[0..arity-1], storing the result in *r.  Returns WEFT_OK or a
 * run-time error with its message (division by zero, undefined shifts and
 * conversions).  and/or are strict here. */
weft_status fe_prim_eval(weft_op op, weft_type rt, weft_type t0, weft_type t1,
                         const fe_val *a, fe_val *r)
{
    weft_type t = t0;
    fe_val x = a[0];
    fe_val y = fe_prims[op].arity == 2 ? a[1] : x;
    r->u = 0;
    /* the C library's functions (lib/fe_ops.h's libm column) */
    if (fe_prims[op].libm1) {
        *r = float1(op, t, x.f);
        return WEFT_OK;
    }
    if (fe_prims[op].libm2) {
        *r = float2(op, t, x.f, y.f);
        return WEFT_OK;
    }
    switch (op) {
    case WEFT_OP_ADD:
    case WEFT_OP_SUB:
    case WEFT_OP_MUL:
        if (fe_is_float(t)) {
            *r = float2(op, t, x.f, y.f);
        } else {
            r->u = op == WEFT_OP_ADD   ? x.u + y.u
                   : op == WEFT_OP_SUB ? x.u - y.u
                                       : x.u * y.u;
            *r = fe_norm(t, *r);
        }
        return WEFT_OK;
    case WEFT_OP_FDIV: *r = float2(op, t, x.f, y.f); return WEFT_OK;
    case WEFT_OP_NEG:
        if (fe_is_float(t)) {
            r->f = -x.f;
        } else {
            r->u = 0 - x.u;
            *r = fe_norm(t, *r);
        }
        return WEFT_OK;
    case WEFT_OP_ABS:
        if (fe_is_float(t)) {
            r->f = fabs(x.f);
        } else if (fe_is_signed(t) && x.i < 0) {
            r->u = 0 - x.u;
            *r = fe_norm(t, *r);
        } else {
            *r = x;
        }
        return WEFT_OK;
    case WEFT_OP_SIGNUM:
        if (fe_is_float(t)) {
            r->f = x.f > 0 ? 1.0 : x.f < 0 ? -1.0 : x.f;
        } else if (fe_is_signed(t)) {
            r->i = (x.i > 0) - (x.i < 0);
        } else {
            r->u = x.u != 0;
        }
        return WEFT_OK;
    case WEFT_OP_MIN: *r = le(t, x, y) ? x : y; return WEFT_OK;
    case WEFT_OP_MAX: *r = le(t, x, y) ? y : x; return WEFT_OK;
    case WEFT_OP_QUOT:
    case WEFT_OP_REM:
    case WEFT_OP_IDIV:
    case WEFT_OP_MOD: return int_div(op, t, x, y, r);
    case WEFT_OP_BAND:
        r->u = x.u & y.u;
        *r = fe_norm(t, *r);
        return WEFT_OK;
    case WEFT_OP_BOR:
        r->u = x.u | y.u;
        *r = fe_norm(t, *r);
        return WEFT_OK;
    case WEFT_OP_BXOR:
        r->u = x.u ^ y.u;
        *r = fe_norm(t, *r);
        return WEFT_OK;
    case WEFT_OP_BNOT:
        r->u = ~x.u;
        *r = fe_norm(t, *r);
        return WEFT_OK;
    case WEFT_OP_SHL:
    case WEFT_OP_SHR:
    case WEFT_OP_ROTL:
    case WEFT_OP_ROTR: return shift(op, t, t1, x, y, r);
    case WEFT_OP_POPCOUNT:
    case WEFT_OP_CLZ:
    case WEFT_OP_CTZ: {
        int w = fe_type_bits(t);
        uint64_t v = x.u & mask_of(w);
        int n;
        if (op == WEFT_OP_POPCOUNT) {
            n = __builtin_popcountll(v);
        } else if (v == 0) {
            n = w;
        } else if (op == WEFT_OP_CLZ) {
            n = __builtin_clzll(v) - (64 - w);
        } else {
            n = __builtin_ctzll(v);
        }
        r->i = n;
        return WEFT_OK;
    }
    case WEFT_OP_ISNAN: *r = from_bool(isnan(x.f)); return WEFT_OK;
    case WEFT_OP_ISINF: *r = from_bool(isinf(x.f)); return WEFT_OK;
    case WEFT_OP_LT: *r = from_bool(lt(t, x, y)); return WEFT_OK;
    case WEFT_OP_LE: *r = from_bool(le(t, x, y)); return WEFT_OK;
    case WEFT_OP_GT: *r = from_bool(lt(t, y, x)); return WEFT_OK;
    case WEFT_OP_GE: *r = from_bool(le(t, y, x)); return WEFT_OK;
    case WEFT_OP_EQ: *r = from_bool(eq(t, x, y)); return WEFT_OK;
    case WEFT_OP_NE: *r = from_bool(!eq(t, x, y)); return WEFT_OK;
    case WEFT_OP_AND: *r = from_bool(x.u && y.u); return WEFT_OK;
    case WEFT_OP_OR: *r = from_bool(x.u || y.u); return WEFT_OK;
    case WEFT_OP_NOT: *r = from_bool(!x.u); return WEFT_OK;
    case WEFT_OP_FLOOR: return float_to_int(rt, x.f, floor(x.f), "floor", r);
    case WEFT_OP_CEILING: return float_to_int(rt, x.f, ceil(x.f), "ceiling", r);
    case WEFT_OP_ROUND:
        return float_to_int(rt, x.f, round_even(x.f), "round", r);
    case WEFT_OP_TRUNCATE:
        return float_to_int(rt, x.f, trunc(x.f), "truncate", r);
    case WEFT_OP_CONVERT: return convert(t, rt, x, r);
    case WEFT_OP_BITCAST:
        *r = from_bits(rt, bits_of(t, x));
        if (rt == WEFT_BOOL) {
            *r = from_bool(r->u != 0);
        }
        return WEFT_OK;
    default: break;
    }
    return fe_error(WEFT_ERR_INTERNAL,
                    "weft_run: the interpreter does not know primitive %d",
                    (int)op);
}
