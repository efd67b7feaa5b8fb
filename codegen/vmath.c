/*
 * codegen/vmath.c: exp and log as branch-free IR, so that loops that call
 * them vectorise.
 *
 * LLVM lowers llvm.exp / llvm.log on a vector by calling the scalar libm
 * function once per lane, and its cost model then usually keeps the loop
 * scalar; glibc's vector library (libmvec) is reachable only through a
 * command-line option of LLVM's, a process-wide setting.  So weft emits
 * the two functions itself, with no branches and no calls: every step is
 * an IEEE operation, a bit operation or a select, on a scalar or on a
 * vector (the functions accept <N x double> as well as double, so that
 * vector code can call them too), and the loop vectoriser widens them like
 * any arithmetic.  Both work in double; the CPU target widens f32 (and
 * f16) arguments to double and rounds the result once, which makes the
 * single-precision results correctly rounded except in rare
 * double-rounding cases (within 1 ulp, measured by tests/test_vmath.c).
 *
 *   exp  Cody and Waite's reduction x = k ln2 + r, |r| <= ln2/2, with
 *        k = roundeven(x / ln2) by the 1.5 * 2^52 trick and ln2 split in
 *        two (fdlibm's ln2_hi has 11 trailing zero bits, so k * ln2_hi is
 *        exact); exp(r) = 1 + (r + r^2 q(r)) with q the Taylor series to
 *        r^13 (r^9 when the result is rounded to float); the result is
 *        scaled by 2^k as two powers of two, 2^(k/2) and 2^(k - k/2), so
 *        that results in the subnormal range are rounded once and k = 1024
 *        does not overflow.  Beyond the range, +inf and +0 by selects.
 *   log  fdlibm's __ieee754_log (Sun, 1993) without its branches:
 *        x = 2^k (1 + f) with sqrt(2)/2 <= 1 + f < sqrt(2), s = f / (2 + f),
 *        log(1 + f) = f - s (f - R(s^2)) with R fdlibm's degree-14 minimax
 *        polynomial, both of fdlibm's two final formulas computed and one
 *        selected; subnormal arguments are scaled by 2^54 first; log(0) =
 *        -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN stays NaN.
 * Measured against glibc over sweeps (tests/test_vmath.c): exp and log of
 * double within 1 ulp; of float within 1 ulp (almost always correctly
 * rounded).
 *
 * With fast math (WEFT_FLAG_FAST_MATH) the polynomial steps carry the
 * context's fast-math flags (contraction into FMA, reassociation); the
 * steps whose exactness the algorithms rely on (the rounding trick, the
 * reduction, the bit manipulation) never do.  And f32 then stays in float
 * (cg_vm_expf, cg_vm_logf: Cephes' expf and logf, branch-free), twice the
 * lanes per vector: measured within 2 ulp of glibc (tests/test_vmath.c).
 */
#include "cg.h"

#define B (fn->b)

/* The element type of a scalar or vector type. */
static LLVMTypeRef elt_of(LLVMTypeRef ty)
{
    return LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty)
                                                     : ty;
}

/* The integer type of the same shape and width as floating type ty (i64
 * for double, <N x i32> for <N x float>). */
static LLVMTypeRef int_like(cg_fn *fn, LLVMTypeRef ty)
{
    LLVMTypeRef it = LLVMGetTypeKind(elt_of(ty)) == LLVMFloatTypeKind
                         ? LLVMInt32TypeInContext(fn->llctx)
                         : LLVMInt64TypeInContext(fn->llctx);
    if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind) {
        return LLVMVectorType(it, LLVMGetVectorSize(ty));
    }
    return it;
}

/* A constant of (scalar or vector) type ty. */
static LLVMValueRef splat(LLVMTypeRef ty, LLVMValueRef c)
{
    if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) {
        return c;
    }
    unsigned n = LLVMGetVectorSize(ty);
    LLVMValueRef v[64];
    if (n > 64) {
        return NULL;
    }
    for (unsigned k = 0; k < n; k++) {
        v[k] = c;
    }
    return LLVMConstVector(v, n);
}

static LLVMValueRef kf(cg_fn *fn, LLVMTypeRef ty, double c)
{
    (void)fn;
    return splat(ty, LLVMConstReal(elt_of(ty), c));
}

/* The NaN the host's invalid operations give (x86: the negative
 * "indefinite" NaN), which is what the C library's log of a negative
 * number returns: log(x < 0) then has the interpreter's bits (seen by
 * weft_fuzz seed 21235 through a bitcast). */
static double invalid_nan(void)
{
    volatile double z = 0.0;
    return z / z;
}

static LLVMValueRef ki(cg_fn *fn, LLVMTypeRef ity, int64_t c)
{
    (void)fn;
    return splat(ity, LLVMConstInt(elt_of(ity), (uint64_t)c, 1));
}

/* Polynomial steps: a * b + c and friends, with the fast-math flags of
 * the context (none by default). */
static LLVMValueRef flagged(cg_fn *fn, LLVMValueRef v)
{
    LLVMFastMathFlags f = cg_fast_flags(fn);
    if (f && LLVMCanValueUseFastMathFlags(v)) {
        LLVMSetFastMathFlags(v, f);
    }
    return v;
}

static LLVMValueRef pmul(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    return flagged(fn, LLVMBuildFMul(B, a, b, ""));
}

static LLVMValueRef padd(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    return flagged(fn, LLVMBuildFAdd(B, a, b, ""));
}

static LLVMValueRef psub(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    return flagged(fn, LLVMBuildFSub(B, a, b, ""));
}

/* c[0] + x (c[1] + x (c[2] + ...)), n coefficients, Horner. */
static LLVMValueRef horner(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef x,
                           const double *c, int n)
{
    LLVMValueRef p = kf(fn, ty, c[n - 1]);
    for (int k = n - 2; k >= 0; k--) {
        p = padd(fn, pmul(fn, p, x), kf(fn, ty, c[k]));
    }
    return p;
}

static LLVMValueRef fcmp(cg_fn *fn, LLVMRealPredicate p, LLVMValueRef a,
                         LLVMValueRef b)
{
    return LLVMBuildFCmp(B, p, a, b, "");
}

static LLVMValueRef sel(cg_fn *fn, LLVMValueRef c, LLVMValueRef a,
                        LLVMValueRef b)
{
    return LLVMBuildSelect(B, c, a, b, "");
}

/* 2^k for integer k (ity) in the normal range of ty (double: [-1022,
 * 1023], float: [-126, 127]), as a ty. */
static LLVMValueRef pow2(cg_fn *fn, LLVMTypeRef ty, LLVMTypeRef ity,
                         LLVMValueRef k)
{
    bool f = LLVMGetTypeKind(elt_of(ty)) == LLVMFloatTypeKind;
    LLVMValueRef e = LLVMBuildShl(
        B, LLVMBuildAdd(B, k, ki(fn, ity, f ? 127 : 1023), ""),
        ki(fn, ity, f ? 23 : 52), "");
    return LLVMBuildBitCast(B, e, ty, "");
}

/* exp of double (or vector of double) x; `single`: the result will be
 * rounded to float, a shorter polynomial suffices (see the head). */
LLVMValueRef cg_vm_exp(cg_fn *fn, LLVMValueRef x, bool single)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    /* exp(x) is finite for x <= hi and rounds to 0 below lo */
    const double hi = 0x1.62e42fefa39efp+9;   /* 709.782712893384 */
    const double lo = -0x1.74910d52d3051p+9;  /* -745.1332191019411 */
    const double log2e = 0x1.71547652b82fep+0;
    const double ln2_hi = 0x1.62e42feep-1;
    const double ln2_lo = 0x1.a39ef35793c76p-33;
    const double magic = 0x1.8p52;
    LLVMValueRef nan = fcmp(fn, LLVMRealUNO, x, x);
    /* clamped, and 0 for NaN so that the conversion below is defined */
    LLVMValueRef xc = sel(fn, fcmp(fn, LLVMRealOGT, x, kf(fn, ty, hi)),
                          kf(fn, ty, hi), x);
    xc = sel(fn, fcmp(fn, LLVMRealOLT, xc, kf(fn, ty, lo)), kf(fn, ty, lo),
             xc);
    xc = sel(fn, nan, kf(fn, ty, 0), xc);
    /* k = roundeven(xc log2e): exact integers, no flags */
    LLVMValueRef t = LLVMBuildFMul(B, xc, kf(fn, ty, log2e), "");
    LLVMValueRef kd = LLVMBuildFSub(
        B, LLVMBuildFAdd(B, t, kf(fn, ty, magic), ""), kf(fn, ty, magic), "");
    LLVMValueRef k = LLVMBuildFPToSI(B, kd, ity, "");
    LLVMValueRef r = LLVMBuildFSub(
        B, xc, LLVMBuildFMul(B, kd, kf(fn, ty, ln2_hi), ""), "");
    r = LLVMBuildFSub(B, r, LLVMBuildFMul(B, kd, kf(fn, ty, ln2_lo), ""), "");
    /* q(r) = 1/2! + r/3! + ... */
    double c[12];
    double f = 2;
    int n = single ? 8 : 12;
    for (int i = 0; i < n; i++) {
        c[i] = 1.0 / f;
        f *= i + 3;
    }
    LLVMValueRef q = horner(fn, ty, r, c, n);
    LLVMValueRef s = padd(fn, r, pmul(fn, pmul(fn, r, r), q));
    LLVMValueRef p = padd(fn, kf(fn, ty, 1), s);
    LLVMValueRef k1 = LLVMBuildAShr(B, k, ki(fn, ity, 1), "");
    LLVMValueRef k2 = LLVMBuildSub(B, k, k1, "");
    LLVMValueRef v = LLVMBuildFMul(
        B, LLVMBuildFMul(B, p, pow2(fn, ty, ity, k1), ""),
        pow2(fn, ty, ity, k2), "");
    v = sel(fn, fcmp(fn, LLVMRealOGT, x, kf(fn, ty, hi)),
            kf(fn, ty, __builtin_inf()), v);
    v = sel(fn, fcmp(fn, LLVMRealOLT, x, kf(fn, ty, lo)), kf(fn, ty, 0), v);
    return sel(fn, nan, x, v);
}

/* log's special values over v, the polynomial's result: x itself for
 * NaN and +inf, the host's invalid NaN below 0, -inf at (either) 0. */
static LLVMValueRef log_special(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef x,
                                LLVMValueRef v)
{
    LLVMValueRef inf = kf(fn, ty, __builtin_inf());
    v = sel(fn,
            LLVMBuildOr(B, fcmp(fn, LLVMRealUNO, x, x),
                        fcmp(fn, LLVMRealOEQ, x, inf), ""),
            x, v);
    v = sel(fn, fcmp(fn, LLVMRealOLT, x, kf(fn, ty, 0)),
            kf(fn, ty, invalid_nan()), v);
    return sel(fn, fcmp(fn, LLVMRealOEQ, x, kf(fn, ty, 0)),
               kf(fn, ty, -__builtin_inf()), v);
}

/* log of double (or vector of double) x (see the head). */
LLVMValueRef cg_vm_log(cg_fn *fn, LLVMValueRef x, bool single)
{
    (void)single;
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    const double ln2_hi = 0x1.62e42feep-1;
    const double ln2_lo = 0x1.a39ef35793c76p-33;
    static const double lg_odd[4] = {
        0x1.5555555555593p-1, 0x1.2492494229359p-2, 0x1.7466496cb03dep-3,
        0x1.2f112df3e5244p-3}; /* Lg1, Lg3, Lg5, Lg7 */
    static const double lg_even[3] = {
        0x1.999999997fa04p-2, 0x1.c71c51d8e78afp-3,
        0x1.39a09d078c69fp-3}; /* Lg2, Lg4, Lg6 */
    /* subnormals (and 0, negatives: replaced below) scaled by 2^54 */
    LLVMValueRef sub = fcmp(fn, LLVMRealOLT, x, kf(fn, ty, 0x1p-1022));
    LLVMValueRef xs = sel(fn, sub, LLVMBuildFMul(B, x, kf(fn, ty, 0x1p54), ""),
                          x);
    LLVMValueRef k = sel(fn, sub, ki(fn, ity, -54), ki(fn, ity, 0));
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, ity, "");
    LLVMValueRef hx = LLVMBuildLShr(B, bits, ki(fn, ity, 32), "");
    k = LLVMBuildAdd(B, k,
                     LLVMBuildSub(B,
                                  LLVMBuildAnd(B,
                                               LLVMBuildLShr(B, hx,
                                                             ki(fn, ity, 20),
                                                             ""),
                                               ki(fn, ity, 0x7ff), ""),
                                  ki(fn, ity, 1023), ""),
                     "");
    hx = LLVMBuildAnd(B, hx, ki(fn, ity, 0xfffff), "");
    LLVMValueRef i = LLVMBuildAnd(
        B, LLVMBuildAdd(B, hx, ki(fn, ity, 0x95f64), ""),
        ki(fn, ity, 0x100000), "");
    /* x normalised into [sqrt(2)/2, sqrt(2)) */
    LLVMValueRef high = LLVMBuildOr(
        B, hx, LLVMBuildXor(B, i, ki(fn, ity, 0x3ff00000), ""), "");
    LLVMValueRef nb = LLVMBuildOr(
        B, LLVMBuildShl(B, high, ki(fn, ity, 32), ""),
        LLVMBuildAnd(B, bits, ki(fn, ity, 0xffffffff), ""), "");
    LLVMValueRef xn = LLVMBuildBitCast(B, nb, ty, "");
    k = LLVMBuildAdd(B, k, LLVMBuildLShr(B, i, ki(fn, ity, 20), ""), "");
    LLVMValueRef f = LLVMBuildFSub(B, xn, kf(fn, ty, 1), ""); /* exact */
    LLVMValueRef s =
        LLVMBuildFDiv(B, f, LLVMBuildFAdd(B, kf(fn, ty, 2), f, ""), "");
    LLVMValueRef dk = LLVMBuildSIToFP(B, k, ty, "");
    LLVMValueRef z = pmul(fn, s, s);
    LLVMValueRef w = pmul(fn, z, z);
    LLVMValueRef t1 = pmul(fn, w, horner(fn, ty, w, lg_even, 3));
    LLVMValueRef t2 = pmul(fn, z, horner(fn, ty, w, lg_odd, 4));
    LLVMValueRef R = padd(fn, t2, t1);
    LLVMValueRef hi = LLVMBuildFMul(B, dk, kf(fn, ty, ln2_hi), "");
    LLVMValueRef lo = LLVMBuildFMul(B, dk, kf(fn, ty, ln2_lo), "");
    /* fdlibm's choice: i = (hx - 0x6147a) | (0x6b851 - hx) > 0 */
    LLVMValueRef ic = LLVMBuildOr(
        B, LLVMBuildSub(B, hx, ki(fn, ity, 0x6147a), ""),
        LLVMBuildSub(B, ki(fn, ity, 0x6b851), hx, ""), "");
    LLVMValueRef big = LLVMBuildICmp(B, LLVMIntSGT, ic, ki(fn, ity, 0), "");
    /* big: hi - ((hfsq - (s (hfsq + R) + lo)) - f) */
    LLVMValueRef hfsq = pmul(fn, pmul(fn, kf(fn, ty, 0.5), f), f);
    LLVMValueRef a = psub(
        fn, hi,
        psub(fn,
             psub(fn, hfsq, padd(fn, pmul(fn, s, padd(fn, hfsq, R)), lo)),
             f));
    /* else: hi - ((s (f - R) - lo) - f) */
    LLVMValueRef b = psub(
        fn, hi, psub(fn, psub(fn, pmul(fn, s, psub(fn, f, R)), lo), f));
    LLVMValueRef v = sel(fn, big, a, b);
    return log_special(fn, ty, x, v);
}

/* ---- fast math, f32: in float, half the work per lane ---- */

/* exp of float (or vector of float) x, with fast math: Cephes' expf
 * (Moshier): the same reduction and scaling as cg_vm_exp in float, with
 * k by the 1.5 * 2^23 trick, ln2 as 0.693359375 - 2.12194440e-4 and a
 * degree-7 polynomial. */
LLVMValueRef cg_vm_expf(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    const double hi = 88.72283935546875;   /* expf finite up to here */
    const double lo = -103.97208404541015625; /* below, 0 */
    static const double p[6] = {5.0000001201e-1, 1.6666665459e-1,
                                4.1665795894e-2, 8.3334519073e-3,
                                1.3981999507e-3, 1.9875691500e-4};
    LLVMValueRef nan = fcmp(fn, LLVMRealUNO, x, x);
    LLVMValueRef xc = sel(fn, fcmp(fn, LLVMRealOGT, x, kf(fn, ty, hi)),
                          kf(fn, ty, hi), x);
    xc = sel(fn, fcmp(fn, LLVMRealOLT, xc, kf(fn, ty, lo)), kf(fn, ty, lo),
             xc);
    xc = sel(fn, nan, kf(fn, ty, 0), xc);
    LLVMValueRef t = LLVMBuildFMul(B, xc, kf(fn, ty, 1.44269504088896341),
                                   "");
    LLVMValueRef kd = LLVMBuildFSub(
        B, LLVMBuildFAdd(B, t, kf(fn, ty, 0x1.8p23), ""),
        kf(fn, ty, 0x1.8p23), "");
    LLVMValueRef k = LLVMBuildFPToSI(B, kd, ity, "");
    LLVMValueRef r = LLVMBuildFSub(
        B, xc, LLVMBuildFMul(B, kd, kf(fn, ty, 0.693359375), ""), "");
    r = LLVMBuildFSub(B, r, LLVMBuildFMul(B, kd, kf(fn, ty, -2.12194440e-4),
                                          ""), "");
    LLVMValueRef q = horner(fn, ty, r, p, 6);
    LLVMValueRef v = padd(fn, kf(fn, ty, 1),
                          padd(fn, r, pmul(fn, pmul(fn, r, r), q)));
    LLVMValueRef k1 = LLVMBuildAShr(B, k, ki(fn, ity, 1), "");
    LLVMValueRef k2 = LLVMBuildSub(B, k, k1, "");
    v = LLVMBuildFMul(B, LLVMBuildFMul(B, v, pow2(fn, ty, ity, k1), ""),
                      pow2(fn, ty, ity, k2), "");
    v = sel(fn, fcmp(fn, LLVMRealOGT, x, kf(fn, ty, hi)),
            kf(fn, ty, __builtin_inf()), v);
    v = sel(fn, fcmp(fn, LLVMRealOLT, x, kf(fn, ty, lo)), kf(fn, ty, 0), v);
    return sel(fn, nan, x, v);
}

/* log of float (or vector of float) x, with fast math: Cephes' logf
 * (Moshier): x = 2^e m with sqrt(1/2) <= m < sqrt(2), log(m) by a
 * degree-9 polynomial in m - 1, e ln2 in two parts; the special values as
 * cg_vm_log. */
LLVMValueRef cg_vm_logf(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    static const double p[9] = {3.3333331174e-1, -2.4999993993e-1,
                                2.0000714765e-1, -1.6668057665e-1,
                                1.4249322787e-1, -1.2420140846e-1,
                                1.1676998740e-1, -1.1514610310e-1,
                                7.0376836292e-2};
    LLVMValueRef sub = fcmp(fn, LLVMRealOLT, x, kf(fn, ty, 0x1p-126));
    LLVMValueRef xs = sel(fn, sub, LLVMBuildFMul(B, x, kf(fn, ty, 0x1p23), ""),
                          x);
    LLVMValueRef e0 = sel(fn, sub, ki(fn, ity, -23), ki(fn, ity, 0));
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, ity, "");
    /* m in [0.5, 1), x = 2^e m */
    LLVMValueRef be = LLVMBuildAnd(
        B, LLVMBuildLShr(B, bits, ki(fn, ity, 23), ""), ki(fn, ity, 0xff), "");
    LLVMValueRef e =
        LLVMBuildAdd(B, e0, LLVMBuildSub(B, be, ki(fn, ity, 126), ""), "");
    LLVMValueRef m = LLVMBuildBitCast(
        B, LLVMBuildOr(B, LLVMBuildAnd(B, bits, ki(fn, ity, 0x007fffff), ""),
                       ki(fn, ity, 0x3f000000), ""),
        ty, "");
    LLVMValueRef small =
        fcmp(fn, LLVMRealOLT, m, kf(fn, ty, 0.707106781186547524));
    e = LLVMBuildSub(B, e, LLVMBuildZExt(B, small, ity, ""), "");
    m = LLVMBuildFSub(B, sel(fn, small, LLVMBuildFAdd(B, m, m, ""), m),
                      kf(fn, ty, 1), "");
    LLVMValueRef fe = LLVMBuildSIToFP(B, e, ty, "");
    LLVMValueRef z = pmul(fn, m, m);
    LLVMValueRef y = pmul(fn, pmul(fn, m, z), horner(fn, ty, m, p, 9));
    y = padd(fn, y, pmul(fn, fe, kf(fn, ty, -2.12194440e-4)));
    y = padd(fn, y, pmul(fn, kf(fn, ty, -0.5), z));
    LLVMValueRef v = padd(fn, padd(fn, m, y),
                          pmul(fn, fe, kf(fn, ty, 0.693359375)));
    return log_special(fn, ty, x, v);
}
