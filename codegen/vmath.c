/*
 * codegen/vmath.c: exp, log, sin, cos and pow as IR that vectorises.
 *
 * LLVM lowers llvm.exp / llvm.sin / ... on a vector by calling the scalar
 * libm function once per lane, and its cost model then usually keeps the
 * loop scalar; glibc's vector library (libmvec) is reachable only through
 * a command-line option of LLVM's, a process-wide setting.  So weft emits
 * these functions itself: every step is an IEEE operation, a bit operation
 * or a select, on a scalar or on a vector (the functions accept
 * <N x double> as well as double, so that vector code can call them too),
 * and the loop vectoriser widens them like any arithmetic.  All work in
 * double; the CPU target widens f32 (and f16) arguments to double and
 * rounds the result once, which makes the single-precision results
 * correctly rounded except in rare double-rounding cases (within 1 ulp,
 * measured by tests/test_vmath.c).  exp, log and pow have no branches
 * and no calls.  sin and cos leave the arguments beyond their reduction's
 * range to the C library: those lanes' results are replaced by the
 * library's (sin / cos of double, sinf / cosf of the float: what the
 * interpreter calls) in a block that a branch reaches only when some lane
 * of the vector needs it (libm_lanes), and the fast path is computed for
 * every lane, on a harmless argument where the lane is the library's.
 * (A loop with such a branch stays scalar for LLVM's loop vectoriser,
 * which would call the function for every lane if it could; SPMD code,
 * skeletons-ir/spmd.c, is vector code around it.)
 *
 *   exp  Cody and Waite's reduction x = k ln2 + r, |r| <= ln2/2, with
 *        k = roundeven(x / ln2) by the 1.5 * 2^52 trick and ln2 split in
 *        two (fdlibm's ln2_hi has 21 trailing zero bits, so k * ln2_hi is
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
 *   sin, cos  fdlibm's (s_sin.c, s_cos.c) for |x| <= 2^19 pi/2: n =
 *        roundeven(x 2/pi) by the same trick, and r = x - n pi/2 with
 *        pi/2 in four parts, the first three of 33 significant bits (those
 *        of fdlibm's __ieee754_rem_pio2), so that n times each is exact
 *        while n fits 20 bits; fdlibm subtracts the second and third parts
 *        only when the first cancels many bits, here all three always,
 *        keeping the rounding error of each subtraction (TwoSum), so r is
 *        a double-double y0 + y1 whatever the cancellation.  Then
 *        fdlibm's __kernel_sin(y0, y1) and __kernel_cos(y0, y1) (its
 *        correction qx for |y0| >= 0.3 by selects), both computed, and
 *        n mod 4 picks one and the sign.  Lanes with |x| beyond the range,
 *        infinite or NaN reduce 0 instead and take the library's sin / cos.
 *   pow  of f32: exp(y log|x|) with the two functions above, in double
 *        (the product's error, at most 2^-46 relative below overflow, is
 *        far below float's ulp), negated for x < 0 and odd integer y;
 *        C's special cases (x or y zero, infinite or NaN, x = 1, x < 0
 *        with y not an integer) by selects, the NaN of an invalid
 *        operation being the host's, as powf's.
 *   pow  of f64: the same, but y log|x| must be known to well below
 *        2^-54 absolute (exp turns its absolute error into the result's
 *        relative error, and half an ulp is at least 2^-54 relative), and
 *        |y log|x|| reaches 745, so log|x| is a double-double (log_dd):
 *        x = 2^k m as in log, s = (m - 1) / (m + 1) with its remainder by
 *        a fused multiply-add (the llvm.fma intrinsic: one instruction with
 *        FMA hardware, else libm's fma), log m = 2 atanh s = 2 s + s^3
 *        (2/3 + 2/5 z + z^2 W(z)), z = s^2, with W(z) = 2/7 + 2/9 z + ...
 *        + 2/25 z^9 in double (the series to s^25: for |s| <= 0.1716 the
 *        truncation is below 2^-70 relative), the rest in double-double
 *        arithmetic (Dekker's Fast2Sum, products exact by fma), and k ln2
 *        with ln2_hi as in exp; relative error below 2^-66 by our
 *        analysis.  Then t = y log|x| as th + tl (the product's error by
 *        fma), and exp(th + tl) (exp_dd): exp's reduction of th with tl
 *        joining r = rh + rl, and exp(r) = (1 + rh + rh^2/2) + (rh^3
 *        q(rh) + rl exp(rh)), the first sum kept exact as a double-double,
 *        q the Taylor series to rh^11/14!; scaled by 2^k as exp does, where
 *        the two multiplications overflow and underflow by themselves for
 *        th in [-750, 712], beyond which +0 and +inf are selected.
 *        The two polynomials (W, q) are evaluated by Estrin's scheme, for
 *        a shorter dependency chain.  Subnormal x are scaled as in log.
 *        The special cases are f32's, and glibc's pow(sNaN, 0) and
 *        pow(1, sNaN), which are NaN.  Measured within 0.53 ulp of the
 *        exact value (powl's; glibc's pow: 0.51).
 * Measured against glibc over sweeps (tests/test_vmath.c): exp, log, sin,
 * cos and pow of double within 1 ulp (sin and cos differ from glibc's,
 * which is correctly rounded, in about 2% of arguments below 2^19 pi/2,
 * pow in 0.6% of the sweep and 0.2% of finite results); exp, log, sin,
 * cos and pow of float within 1 ulp (sin and cos not bit for bit glibc's
 * in 0.1% of the sweep, exp, log and pow in 0.01%).
 *
 * With fast math (WEFT_FLAG_FAST_MATH) the polynomial steps carry the
 * context's fast-math flags (contraction into FMA, reassociation); the
 * steps whose exactness the algorithms rely on (the rounding trick, the
 * reduction, the bit manipulation) never do.  And f32 exp and log then
 * stay in float (cg_vm_expf, cg_vm_logf: Cephes' expf and logf,
 * branch-free), twice the lanes per vector: measured within 2 ulp of glibc
 * (tests/test_vmath.c); sin, cos and pow of f32 stay in double (measured
 * within 1 ulp with fast math too).  pow of f64's double-double steps never
 * carry the flags (reassociation would cancel them), only its
 * polynomials.
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

/* The same polynomial by Estrin's scheme: pairs c[2i] + c[2i+1] x, then
 * pairs of those with x^2, x^4, ...; more operations than Horner but a
 * dependency chain of about 2 log2(n) steps instead of 2 n. */
static LLVMValueRef estrin(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef x,
                           const double *c, int n)
{
    LLVMValueRef t[16];
    int m = 0;
    if (n > 32) {
        return horner(fn, ty, x, c, n);
    }
    for (int i = 0; i < n; i += 2) {
        t[m++] = i + 1 < n ? padd(fn, kf(fn, ty, c[i]),
                                  pmul(fn, kf(fn, ty, c[i + 1]), x))
                           : kf(fn, ty, c[i]);
    }
    LLVMValueRef p = x;
    while (m > 1) {
        p = pmul(fn, p, p);
        int j = 0;
        for (int i = 0; i < m; i += 2) {
            t[j++] = i + 1 < m ? padd(fn, t[i], pmul(fn, t[i + 1], p)) : t[i];
        }
        m = j;
    }
    return t[0];
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
    LLVMValueRef e =
        LLVMBuildShl(B, LLVMBuildAdd(B, k, ki(fn, ity, f ? 127 : 1023), ""),
                     ki(fn, ity, f ? 23 : 52), "");
    return LLVMBuildBitCast(B, e, ty, "");
}

/* roundeven(x c) as a ty, by adding and subtracting magic (1.5 * 2^52 for
 * double, 1.5 * 2^23 for float) while |x c| < 2^51 (2^22): exact steps,
 * no flags. */
static LLVMValueRef round_mul(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef x,
                              double c, double magic)
{
    LLVMValueRef t = LLVMBuildFMul(B, x, kf(fn, ty, c), "");
    return LLVMBuildFSub(B, LLVMBuildFAdd(B, t, kf(fn, ty, magic), ""),
                         kf(fn, ty, magic), "");
}

/* fdlibm's ln2 = LN2_HI + LN2_LO: LN2_HI has 11 trailing zero bits, so
 * k LN2_HI is exact for |k| < 2^11. */
#define LN2_HI 0x1.62e42feep-1
#define LN2_LO 0x1.a39ef35793c76p-33

/* x clamped to [lo, hi], and 0 for NaN, so that a conversion of it to an
 * integer is defined. */
static LLVMValueRef exp_clamp(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef x,
                              double hi, double lo)
{
    LLVMValueRef xc =
        sel(fn, fcmp(fn, LLVMRealOGT, x, kf(fn, ty, hi)), kf(fn, ty, hi), x);
    xc = sel(fn, fcmp(fn, LLVMRealOLT, xc, kf(fn, ty, lo)), kf(fn, ty, lo), xc);
    return sel(fn, fcmp(fn, LLVMRealUNO, x, x), kf(fn, ty, 0), xc);
}

/* exp's reduction of xc (clamped, so |xc| < 2^11 ln2): *kd = roundeven(xc
 * / ln2) (a double) and *k the same as an integer (ity); returns xc - kd
 * LN2_HI, exact. */
static LLVMValueRef exp_reduce(cg_fn *fn, LLVMTypeRef ty, LLVMTypeRef ity,
                               LLVMValueRef xc, LLVMValueRef *kd,
                               LLVMValueRef *k)
{
    *kd = round_mul(fn, ty, xc, 0x1.71547652b82fep+0, 0x1.8p52);
    *k = LLVMBuildFPToSI(B, *kd, ity, "");
    return LLVMBuildFSub(B, xc, LLVMBuildFMul(B, *kd, kf(fn, ty, LN2_HI), ""),
                         "");
}

/* The Taylor coefficients of exp after 1 + r: c[i] = 1 / (i + 2)!, n of
 * them. */
static void exp_taylor(double *c, int n)
{
    double f = 2;
    for (int i = 0; i < n; i++) {
        c[i] = 1.0 / f;
        f *= i + 3;
    }
}

/* v 2^k for integer k (ity), |k| <= 2 * 1022: as two powers of two,
 * 2^(k/2) and 2^(k - k/2), so that a result in the subnormal range is
 * rounded once and one beyond the largest finite is infinite. */
static LLVMValueRef scale2(cg_fn *fn, LLVMTypeRef ty, LLVMTypeRef ity,
                           LLVMValueRef v, LLVMValueRef k)
{
    LLVMValueRef k1 = LLVMBuildAShr(B, k, ki(fn, ity, 1), "");
    LLVMValueRef k2 = LLVMBuildSub(B, k, k1, "");
    return LLVMBuildFMul(B, LLVMBuildFMul(B, v, pow2(fn, ty, ity, k1), ""),
                         pow2(fn, ty, ity, k2), "");
}

/* exp's limits over v, the result computed for x clamped: +inf above hi,
 * +0 below lo, x itself for NaN. */
static LLVMValueRef exp_limits(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef x,
                               LLVMValueRef v, double hi, double lo)
{
    v = sel(fn, fcmp(fn, LLVMRealOGT, x, kf(fn, ty, hi)),
            kf(fn, ty, __builtin_inf()), v);
    v = sel(fn, fcmp(fn, LLVMRealOLT, x, kf(fn, ty, lo)), kf(fn, ty, 0), v);
    return sel(fn, fcmp(fn, LLVMRealUNO, x, x), x, v);
}

/* exp of double (or vector of double) x; `single`: the result will be
 * rounded to float, a shorter polynomial suffices (see the head). */
LLVMValueRef cg_vm_exp(cg_fn *fn, LLVMValueRef x, bool single)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    /* exp(x) is finite for x <= hi and rounds to 0 below lo */
    const double hi = 0x1.62e42fefa39efp+9;  /* 709.782712893384 */
    const double lo = -0x1.74910d52d3051p+9; /* -745.1332191019411 */
    LLVMValueRef xc = exp_clamp(fn, ty, x, hi, lo);
    LLVMValueRef kd, k;
    LLVMValueRef r = exp_reduce(fn, ty, ity, xc, &kd, &k);
    r = LLVMBuildFSub(B, r, LLVMBuildFMul(B, kd, kf(fn, ty, LN2_LO), ""), "");
    /* q(r) = 1/2! + r/3! + ... */
    double c[12];
    int n = single ? 8 : 12;
    exp_taylor(c, n);
    LLVMValueRef q = horner(fn, ty, r, c, n);
    LLVMValueRef s = padd(fn, r, pmul(fn, pmul(fn, r, r), q));
    LLVMValueRef p = padd(fn, kf(fn, ty, 1), s);
    return exp_limits(fn, ty, x, scale2(fn, ty, ity, p, k), hi, lo);
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

/* x = 2^k m with sqrt(2)/2 <= m < sqrt(2), for positive finite x
 * (subnormals are scaled by 2^54 first; 0, infinities and NaN give some m
 * and k, to be replaced): returns m, with *k (ity) and *hx, the high 20
 * bits of the (scaled) fraction (fdlibm's hx). */
static LLVMValueRef log_split(cg_fn *fn, LLVMTypeRef ty, LLVMTypeRef ity,
                              LLVMValueRef x, LLVMValueRef *k, LLVMValueRef *hx)
{
    LLVMValueRef sub = fcmp(fn, LLVMRealOLT, x, kf(fn, ty, 0x1p-1022));
    LLVMValueRef xs =
        sel(fn, sub, LLVMBuildFMul(B, x, kf(fn, ty, 0x1p54), ""), x);
    LLVMValueRef e = sel(fn, sub, ki(fn, ity, -54), ki(fn, ity, 0));
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, ity, "");
    LLVMValueRef h = LLVMBuildLShr(B, bits, ki(fn, ity, 32), "");
    e = LLVMBuildAdd(
        B, e,
        LLVMBuildSub(B,
                     LLVMBuildAnd(B, LLVMBuildLShr(B, h, ki(fn, ity, 20), ""),
                                  ki(fn, ity, 0x7ff), ""),
                     ki(fn, ity, 1023), ""),
        "");
    h = LLVMBuildAnd(B, h, ki(fn, ity, 0xfffff), "");
    LLVMValueRef i =
        LLVMBuildAnd(B, LLVMBuildAdd(B, h, ki(fn, ity, 0x95f64), ""),
                     ki(fn, ity, 0x100000), "");
    /* the exponent of 1, or of 1/2 where the fraction is above sqrt(2) */
    LLVMValueRef high =
        LLVMBuildOr(B, h, LLVMBuildXor(B, i, ki(fn, ity, 0x3ff00000), ""), "");
    LLVMValueRef nb =
        LLVMBuildOr(B, LLVMBuildShl(B, high, ki(fn, ity, 32), ""),
                    LLVMBuildAnd(B, bits, ki(fn, ity, 0xffffffff), ""), "");
    *k = LLVMBuildAdd(B, e, LLVMBuildLShr(B, i, ki(fn, ity, 20), ""), "");
    *hx = h;
    return LLVMBuildBitCast(B, nb, ty, "");
}

/* log of double (or vector of double) x (see the head). */
LLVMValueRef cg_vm_log(cg_fn *fn, LLVMValueRef x, bool single)
{
    (void)single;
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    static const double lg_odd[4] = {
        0x1.5555555555593p-1, 0x1.2492494229359p-2, 0x1.7466496cb03dep-3,
        0x1.2f112df3e5244p-3}; /* Lg1, Lg3, Lg5, Lg7 */
    static const double lg_even[3] = {0x1.999999997fa04p-2,
                                      0x1.c71c51d8e78afp-3,
                                      0x1.39a09d078c69fp-3}; /* Lg2, Lg4, Lg6 */
    LLVMValueRef k, hx;
    LLVMValueRef xn = log_split(fn, ty, ity, x, &k, &hx);
    LLVMValueRef f = LLVMBuildFSub(B, xn, kf(fn, ty, 1), ""); /* exact */
    LLVMValueRef s =
        LLVMBuildFDiv(B, f, LLVMBuildFAdd(B, kf(fn, ty, 2), f, ""), "");
    LLVMValueRef dk = LLVMBuildSIToFP(B, k, ty, "");
    LLVMValueRef z = pmul(fn, s, s);
    LLVMValueRef w = pmul(fn, z, z);
    LLVMValueRef t1 = pmul(fn, w, horner(fn, ty, w, lg_even, 3));
    LLVMValueRef t2 = pmul(fn, z, horner(fn, ty, w, lg_odd, 4));
    LLVMValueRef R = padd(fn, t2, t1);
    LLVMValueRef hi = LLVMBuildFMul(B, dk, kf(fn, ty, LN2_HI), "");
    LLVMValueRef lo = LLVMBuildFMul(B, dk, kf(fn, ty, LN2_LO), "");
    /* fdlibm's choice: i = (hx - 0x6147a) | (0x6b851 - hx) > 0 */
    LLVMValueRef ic =
        LLVMBuildOr(B, LLVMBuildSub(B, hx, ki(fn, ity, 0x6147a), ""),
                    LLVMBuildSub(B, ki(fn, ity, 0x6b851), hx, ""), "");
    LLVMValueRef big = LLVMBuildICmp(B, LLVMIntSGT, ic, ki(fn, ity, 0), "");
    /* big: hi - ((hfsq - (s (hfsq + R) + lo)) - f) */
    LLVMValueRef hfsq = pmul(fn, pmul(fn, kf(fn, ty, 0.5), f), f);
    LLVMValueRef a = psub(
        fn, hi,
        psub(fn, psub(fn, hfsq, padd(fn, pmul(fn, s, padd(fn, hfsq, R)), lo)),
             f));
    /* else: hi - ((s (f - R) - lo) - f) */
    LLVMValueRef b =
        psub(fn, hi, psub(fn, psub(fn, pmul(fn, s, psub(fn, f, R)), lo), f));
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
    const double hi = 88.72283935546875;      /* expf finite up to here */
    const double lo = -103.97208404541015625; /* below, 0 */
    static const double p[6] = {5.0000001201e-1, 1.6666665459e-1,
                                4.1665795894e-2, 8.3334519073e-3,
                                1.3981999507e-3, 1.9875691500e-4};
    LLVMValueRef xc = exp_clamp(fn, ty, x, hi, lo);
    LLVMValueRef kd = round_mul(fn, ty, xc, 1.44269504088896341, 0x1.8p23);
    LLVMValueRef k = LLVMBuildFPToSI(B, kd, ity, "");
    LLVMValueRef r = LLVMBuildFSub(
        B, xc, LLVMBuildFMul(B, kd, kf(fn, ty, 0.693359375), ""), "");
    r = LLVMBuildFSub(B, r,
                      LLVMBuildFMul(B, kd, kf(fn, ty, -2.12194440e-4), ""), "");
    LLVMValueRef q = horner(fn, ty, r, p, 6);
    LLVMValueRef v =
        padd(fn, kf(fn, ty, 1), padd(fn, r, pmul(fn, pmul(fn, r, r), q)));
    return exp_limits(fn, ty, x, scale2(fn, ty, ity, v, k), hi, lo);
}

/* log of float (or vector of float) x, with fast math: Cephes' logf
 * (Moshier): x = 2^e m with sqrt(1/2) <= m < sqrt(2), log(m) by a
 * degree-9 polynomial in m - 1, e ln2 in two parts; the special values as
 * cg_vm_log. */
LLVMValueRef cg_vm_logf(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    static const double p[9] = {
        3.3333331174e-1,  -2.4999993993e-1, 2.0000714765e-1,
        -1.6668057665e-1, 1.4249322787e-1,  -1.2420140846e-1,
        1.1676998740e-1,  -1.1514610310e-1, 7.0376836292e-2};
    LLVMValueRef sub = fcmp(fn, LLVMRealOLT, x, kf(fn, ty, 0x1p-126));
    LLVMValueRef xs =
        sel(fn, sub, LLVMBuildFMul(B, x, kf(fn, ty, 0x1p23), ""), x);
    LLVMValueRef e0 = sel(fn, sub, ki(fn, ity, -23), ki(fn, ity, 0));
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, ity, "");
    /* m in [0.5, 1), x = 2^e m */
    LLVMValueRef be = LLVMBuildAnd(
        B, LLVMBuildLShr(B, bits, ki(fn, ity, 23), ""), ki(fn, ity, 0xff), "");
    LLVMValueRef e =
        LLVMBuildAdd(B, e0, LLVMBuildSub(B, be, ki(fn, ity, 126), ""), "");
    LLVMValueRef m = LLVMBuildBitCast(
        B,
        LLVMBuildOr(B, LLVMBuildAnd(B, bits, ki(fn, ity, 0x007fffff), ""),
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
    LLVMValueRef v =
        padd(fn, padd(fn, m, y), pmul(fn, fe, kf(fn, ty, 0.693359375)));
    return log_special(fn, ty, x, v);
}

/* ---- the C library on the lanes the branch-free code does not cover ---- */

/* Branch to `rare` when cond holds, else to `common`, with branch weights
 * that say it rarely does (for the layout; not llvm.expect, which only
 * a pass weft does not run removes, and which keeps loops scalar). */
static void rare_branch(cg_fn *fn, LLVMValueRef cond, LLVMBasicBlockRef rare,
                        LLVMBasicBlockRef common)
{
    cg_branch_weights(fn, LLVMBuildCondBr(B, cond, rare, common), CG_RARE,
                      CG_USUAL);
}

/* v, the branch-free result (double or vector of double), with the lanes
 * where `slow` (i1 or vector of i1) holds replaced by the C library's
 * function `name` of x: of the float argument and widened back when
 * `single` (sinf: what the interpreter calls), else of the double.  When
 * no lane is slow, a branch skips the calls; else a block calls the
 * function lane by lane and selects per lane (so a lane that is not slow
 * keeps v's bits, as in code of one lane).  The builder is left at the end
 * of the join block. */
static LLVMValueRef libm_lanes(cg_fn *fn, const char *name, bool single,
                               LLVMValueRef slow, LLVMValueRef v,
                               LLVMValueRef x)
{
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef ty = LLVMTypeOf(v);
    bool vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
    LLVMTypeRef dty = LLVMDoubleTypeInContext(c);
    LLVMTypeRef aty = single ? LLVMFloatTypeInContext(c) : dty;
    LLVMTypeRef bty = LLVMTypeOf(slow);
    LLVMValueRef any =
        vec ? cg_intrinsic(fn, "llvm.vector.reduce.or", &bty, 1, &slow, 1)
            : slow;
    LLVMBasicBlockRef from = LLVMGetInsertBlock(B);
    LLVMValueRef f = LLVMGetBasicBlockParent(from);
    LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(c, f, "vm.libm");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(c, f, "vm.join");
    rare_branch(fn, any, call, join);

    LLVMPositionBuilderAtEnd(B, call);
    unsigned lanes = vec ? LLVMGetVectorSize(ty) : 1;
    LLVMValueRef lib = vec ? LLVMGetUndef(ty) : NULL;
    for (unsigned k = 0; k < lanes; k++) {
        LLVMValueRef lane = LLVMConstInt(LLVMInt32TypeInContext(c), k, 0);
        LLVMValueRef a = vec ? LLVMBuildExtractElement(B, x, lane, "") : x;
        if (single) {
            a = LLVMBuildFPTrunc(B, a, aty, ""); /* exact */
        }
        LLVMValueRef r = cg_libcall(fn, name, aty, &a, 1);
        if (single) {
            r = LLVMBuildFPExt(B, r, dty, "");
        }
        lib = vec ? LLVMBuildInsertElement(B, lib, r, lane, "") : r;
    }
    LLVMValueRef mixed = sel(fn, slow, lib, v);
    LLVMBuildBr(B, join);

    LLVMPositionBuilderAtEnd(B, join);
    LLVMValueRef phi = LLVMBuildPhi(B, ty, "");
    LLVMValueRef vals[2] = {v, mixed};
    LLVMBasicBlockRef blocks[2] = {from, call};
    LLVMAddIncoming(phi, vals, blocks, 2);
    return phi;
}

/* ---- sin and cos ---- */

/* a - b = *hi + *lo exactly (Knuth's TwoSum, six operations, whatever
 * the magnitudes). */
static void two_diff(cg_fn *fn, LLVMValueRef a, LLVMValueRef b,
                     LLVMValueRef *hi, LLVMValueRef *lo)
{
    LLVMValueRef s = LLVMBuildFSub(B, a, b, "");
    LLVMValueRef bb = LLVMBuildFSub(B, a, s, "");
    LLVMValueRef ab = LLVMBuildFAdd(B, s, bb, "");
    *hi = s;
    *lo = LLVMBuildFSub(B, LLVMBuildFSub(B, a, ab, ""),
                        LLVMBuildFSub(B, b, bb, ""), "");
}

/* fdlibm's __kernel_sin(x, y, 1): sin(x + y) for |x + y| <= ~pi/4, y the
 * tail of the reduced argument: x + x^3 (S1 + x^2 S(x^2)), the tail's
 * first-order term y (1 - x^2/2) added in. */
static LLVMValueRef kernel_sin(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef x,
                               LLVMValueRef y)
{
    static const double s[5] = {0x1.111111110f8a6p-7, -0x1.a01a019c161d5p-13,
                                0x1.71de357b1fe7dp-19, -0x1.ae5e68a2b9cebp-26,
                                0x1.5d93a5acfd57cp-33}; /* S2 .. S6 */
    const double s1 = -0x1.5555555555549p-3;
    LLVMValueRef z = pmul(fn, x, x);
    LLVMValueRef v = pmul(fn, z, x);
    LLVMValueRef r = horner(fn, ty, z, s, 5);
    /* x - ((z (y/2 - v r) - y) - v S1) */
    LLVMValueRef t = psub(fn, pmul(fn, kf(fn, ty, 0.5), y), pmul(fn, v, r));
    t = psub(fn, pmul(fn, z, t), y);
    t = psub(fn, t, pmul(fn, v, kf(fn, ty, s1)));
    return psub(fn, x, t);
}

/* fdlibm's __kernel_cos(x, y): cos(x + y) for |x + y| <= ~pi/4 as
 * 1 - (x^2/2 - (x^4 C(x^2) - x y)), where for |x| >= 0.3 a part qx of
 * x^2/2 is subtracted from 1 first, exactly (qx = x/4 with the low 32 bits
 * of its representation cleared, or 0.28125 above 0.78125); fdlibm's
 * branches on the high word of |x| are selects. */
static LLVMValueRef kernel_cos(cg_fn *fn, LLVMTypeRef ty, LLVMTypeRef ity,
                               LLVMValueRef x, LLVMValueRef y)
{
    static const double c[6] = {
        0x1.555555555554cp-5,  -0x1.6c16c16c15177p-10,
        0x1.a01a019cb159p-16,  -0x1.27e4f809c52adp-22,
        0x1.1ee9ebdb4b1c4p-29, -0x1.8fae9be8838d4p-37}; /* C1 .. C6 */
    LLVMValueRef z = pmul(fn, x, x);
    LLVMValueRef r = pmul(fn, z, horner(fn, ty, z, c, 6));
    LLVMValueRef hx = LLVMBuildAnd(
        B,
        LLVMBuildLShr(B, LLVMBuildBitCast(B, x, ity, ""), ki(fn, ity, 32), ""),
        ki(fn, ity, 0x7fffffff), "");
    /* qx: the high word of |x| less 2 in the exponent, the low word 0 */
    LLVMValueRef qx = LLVMBuildBitCast(
        B,
        LLVMBuildShl(B, LLVMBuildSub(B, hx, ki(fn, ity, 0x00200000), ""),
                     ki(fn, ity, 32), ""),
        ty, "");
    qx = sel(fn, LLVMBuildICmp(B, LLVMIntSGT, hx, ki(fn, ity, 0x3fe90000), ""),
             kf(fn, ty, 0.28125), qx);
    qx = sel(fn, LLVMBuildICmp(B, LLVMIntSLT, hx, ki(fn, ity, 0x3fd33333), ""),
             kf(fn, ty, 0), qx);
    LLVMValueRef hz =
        LLVMBuildFSub(B, LLVMBuildFMul(B, kf(fn, ty, 0.5), z, ""), qx, "");
    LLVMValueRef a = LLVMBuildFSub(B, kf(fn, ty, 1), qx, "");
    LLVMValueRef w = psub(fn, pmul(fn, z, r), pmul(fn, x, y));
    return LLVMBuildFSub(B, a, LLVMBuildFSub(B, hz, w, ""), "");
}

/* sin (or cos, want_cos) of double (or vector of double) x (see the head);
 * `single`: x is a float widened, and the lanes outside the reduction's
 * range take sinf / cosf of it. */
LLVMValueRef cg_vm_sincos(cg_fn *fn, LLVMValueRef x, bool single, bool want_cos)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    const double limit = 0x1.921fb54442d18p+19; /* 2^19 pi/2 */
    const double invpio2 = 0x1.45f306dc9c883p-1;
    /* pi/2 = pio2_1 + pio2_2 + pio2_3 + pio2_3t (to 2^-160), the first
     * three of 33 significant bits */
    const double pio2_1 = 0x1.921fb544p+0;
    const double pio2_2 = 0x1.0b4611a6p-34;
    const double pio2_3 = 0x1.3198a2ep-69;
    const double pio2_3t = 0x1.b839a252049c1p-104;
    LLVMValueRef ax = cg_intrinsic(fn, "llvm.fabs", &ty, 1, &x, 1);
    /* false for NaN and for |x| beyond the range (infinities too) */
    LLVMValueRef fast = fcmp(fn, LLVMRealOLE, ax, kf(fn, ty, limit));
    LLVMValueRef xs = sel(fn, fast, x, kf(fn, ty, 0));
    /* n = roundeven(x 2/pi), |n| <= 2^19: n pio2_k is exact (no flags
     * on the reduction) */
    LLVMValueRef nd = round_mul(fn, ty, xs, invpio2, 0x1.8p52);
    LLVMValueRef n = LLVMBuildFPToSI(B, nd, ity, "");
    /* r = x - n pio2_1 - n pio2_2 - n pio2_3 - n pio2_3t as y0 + y1: the
     * first difference is exact (Sterbenz), the next two keep their
     * rounding errors (TwoSum), which join the last, tiny, term */
    LLVMValueRef r =
        LLVMBuildFSub(B, xs, LLVMBuildFMul(B, nd, kf(fn, ty, pio2_1), ""), "");
    LLVMValueRef s2, e2, s3, e3;
    two_diff(fn, r, LLVMBuildFMul(B, nd, kf(fn, ty, pio2_2), ""), &s2, &e2);
    two_diff(fn, s2, LLVMBuildFMul(B, nd, kf(fn, ty, pio2_3), ""), &s3, &e3);
    LLVMValueRef tail =
        LLVMBuildFSub(B, LLVMBuildFAdd(B, e2, e3, ""),
                      LLVMBuildFMul(B, nd, kf(fn, ty, pio2_3t), ""), "");
    LLVMValueRef y0 = LLVMBuildFAdd(B, s3, tail, "");
    LLVMValueRef y1 = LLVMBuildFAdd(B, LLVMBuildFSub(B, s3, y0, ""), tail, "");
    /* quadrant q = n (+ 1 for cos) mod 4: sin(r), cos(r), -sin(r), -cos(r) */
    LLVMValueRef q = LLVMBuildAdd(B, n, ki(fn, ity, want_cos ? 1 : 0), "");
    LLVMValueRef odd =
        LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, q, ki(fn, ity, 1), ""),
                      ki(fn, ity, 0), "");
    LLVMValueRef neg =
        LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, q, ki(fn, ity, 2), ""),
                      ki(fn, ity, 0), "");
    LLVMValueRef v = sel(fn, odd, kernel_cos(fn, ty, ity, y0, y1),
                         kernel_sin(fn, ty, y0, y1));
    v = sel(fn, neg, LLVMBuildFNeg(B, v, ""), v);
    if (!want_cos) {
        /* sin(+-0) = +-0 whatever fast math's nsz did to the kernel's
         * zeros */
        v = sel(fn, fcmp(fn, LLVMRealOEQ, xs, kf(fn, ty, 0)), xs, v);
    }
    const char *name =
        want_cos ? (single ? "cosf" : "cos") : (single ? "sinf" : "sin");
    return libm_lanes(fn, name, single, LLVMBuildNot(B, fast, ""), v, x);
}

/* ---- pow ---- */

/* a + b = *s + *e exactly, where a's exponent is at least b's (|a| >=
 * |b| suffices) or a = 0 (Dekker's Fast2Sum). */
static void fast_two_sum(cg_fn *fn, LLVMValueRef a, LLVMValueRef b,
                         LLVMValueRef *s, LLVMValueRef *e)
{
    *s = LLVMBuildFAdd(B, a, b, "");
    *e = LLVMBuildFSub(B, b, LLVMBuildFSub(B, *s, a, ""), "");
}

/* a b = *p + *e, exactly unless e underflows: e by a fused
 * multiply-add. */
static void two_prod(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef a, LLVMValueRef b,
                     LLVMValueRef *p, LLVMValueRef *e)
{
    *p = LLVMBuildFMul(B, a, b, "");
    LLVMValueRef args[3] = {a, b, LLVMBuildFNeg(B, *p, "")};
    *e = cg_intrinsic(fn, "llvm.fma", &ty, 1, args, 3);
}

/* (ah + al)(bh + bl) as *p + *e, with the low parts' product left out
 * (relative error about 2^-104 when |al| and |bl| are within an ulp of
 * ah and bh). */
static void dd_mul(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef ah, LLVMValueRef al,
                   LLVMValueRef bh, LLVMValueRef bl, LLVMValueRef *p,
                   LLVMValueRef *e)
{
    LLVMValueRef err;
    two_prod(fn, ty, ah, bh, p, &err);
    *e = LLVMBuildFAdd(B, err,
                       LLVMBuildFAdd(B, LLVMBuildFMul(B, ah, bl, ""),
                                     LLVMBuildFMul(B, al, bh, ""), ""),
                       "");
}

/* log x as *hi + *lo for positive finite x, with a relative error below
 * 2^-66 (see the head): x = 2^k m, s = (m - 1) / (m + 1) as sh + sl,
 * log m = 2 s + s^3 (2/3 + z (2/5 + z W(z))), z = s^2, where W carries the
 * series' terms 2/7 .. 2/25 in double and the rest is double-double. */
static void log_dd(cg_fn *fn, LLVMTypeRef ty, LLVMTypeRef ity, LLVMValueRef x,
                   LLVMValueRef *hi, LLVMValueRef *lo)
{
    const double c3h = 0x1.5555555555555p-1, c3l = 0x1.5555555555555p-55;
    const double c5h = 0x1.999999999999ap-2, c5l = -0x1.999999999999ap-56;
    double wt[10];
    for (int i = 0; i < 10; i++) {
        wt[i] = 2.0 / (2 * i + 7);
    }
    LLVMValueRef k, hx;
    LLVMValueRef m = log_split(fn, ty, ity, x, &k, &hx);
    LLVMValueRef one = kf(fn, ty, 1);
    LLVMValueRef f = LLVMBuildFSub(B, m, one, ""); /* exact */
    LLVMValueRef dh, dl;
    fast_two_sum(fn, one, m, &dh, &dl);
    /* s = f / (dh + dl): the quotient's remainder f - sh dh is exact, and
     * the rest is divided by 1 + m as a multiplication by (1 - s) / 2 */
    LLVMValueRef sh = LLVMBuildFDiv(B, f, dh, "");
    LLVMValueRef fa[3] = {LLVMBuildFNeg(B, sh, ""), dh, f};
    LLVMValueRef rem = cg_intrinsic(fn, "llvm.fma", &ty, 1, fa, 3);
    LLVMValueRef sl = LLVMBuildFMul(
        B, LLVMBuildFSub(B, rem, LLVMBuildFMul(B, sh, dl, ""), ""),
        LLVMBuildFMul(B, LLVMBuildFSub(B, one, sh, ""), kf(fn, ty, 0.5), ""),
        "");
    /* z = s^2 and s^3 */
    LLVMValueRef zh, zl, s3h, s3l;
    two_prod(fn, ty, sh, sh, &zh, &zl);
    zl = LLVMBuildFAdd(
        B, zl, LLVMBuildFMul(B, LLVMBuildFAdd(B, sh, sh, ""), sl, ""), "");
    dd_mul(fn, ty, zh, zl, sh, sl, &s3h, &s3l);
    /* a = 2/5 + z Wt(z), then w = 2/3 + z a */
    LLVMValueRef zw = pmul(fn, zh, estrin(fn, ty, zh, wt, 10));
    LLVMValueRef ah, al, bh, bl, wh, wl;
    fast_two_sum(fn, kf(fn, ty, c5h), zw, &ah, &al);
    al = LLVMBuildFAdd(B, al, kf(fn, ty, c5l), "");
    dd_mul(fn, ty, zh, zl, ah, al, &bh, &bl);
    fast_two_sum(fn, kf(fn, ty, c3h), bh, &wh, &wl);
    wl = LLVMBuildFAdd(B, wl, LLVMBuildFAdd(B, bl, kf(fn, ty, c3l), ""), "");
    /* log m = 2 s + s^3 w, and log x = k ln2 + log m */
    LLVMValueRef th, tl, uh, ul, h, l;
    dd_mul(fn, ty, s3h, s3l, wh, wl, &th, &tl);
    fast_two_sum(fn, LLVMBuildFAdd(B, sh, sh, ""), th, &uh, &ul);
    ul = LLVMBuildFAdd(
        B, ul, LLVMBuildFAdd(B, LLVMBuildFAdd(B, sl, sl, ""), tl, ""), "");
    LLVMValueRef dk = LLVMBuildSIToFP(B, k, ty, "");
    /* |k ln2| >= ln2 > |log m| unless k = 0 */
    fast_two_sum(fn, LLVMBuildFMul(B, dk, kf(fn, ty, LN2_HI), ""), uh, &h, &l);
    l = LLVMBuildFAdd(
        B, l,
        LLVMBuildFAdd(B, ul, LLVMBuildFMul(B, dk, kf(fn, ty, LN2_LO), ""), ""),
        "");
    fast_two_sum(fn, h, l, hi, lo);
}

/* Whether double x is a signalling NaN (the quiet bit clear). */
static LLVMValueRef is_snan(cg_fn *fn, LLVMTypeRef ity, LLVMValueRef x)
{
    LLVMValueRef a = LLVMBuildAnd(B, LLVMBuildBitCast(B, x, ity, ""),
                                  ki(fn, ity, INT64_MAX), "");
    return LLVMBuildAnd(
        B, LLVMBuildICmp(B, LLVMIntUGT, a, ki(fn, ity, 0x7ff0000000000000), ""),
        LLVMBuildICmp(B, LLVMIntULT, a, ki(fn, ity, 0x7ff8000000000000), ""),
        "");
}

/* exp(t + tl), tl within a few ulps of t: exp's reduction of t, with tl
 * joining r = rh + rl (exactly, TwoSum); exp(r) = (1 + rh + rh^2/2) + (rh^3
 * q3(rh) + rl exp(rh)), q3 the Taylor series from 1/3! to rh^11/14!, the
 * first sum exact as a double-double; scaled by 2^k as exp is.  Beyond
 * [-750, 712] +0 or +inf (in between, the scaling underflows or overflows
 * by itself), NaN t passes through. */
static LLVMValueRef exp_dd(cg_fn *fn, LLVMTypeRef ty, LLVMTypeRef ity,
                           LLVMValueRef t, LLVMValueRef tl)
{
    const double hi = 712, lo = -750;
    LLVMValueRef tc = exp_clamp(fn, ty, t, hi, lo);
    tl = sel(fn, fcmp(fn, LLVMRealOEQ, tc, t), tl, kf(fn, ty, 0));
    LLVMValueRef kd, k, rh, rl;
    LLVMValueRef r = exp_reduce(fn, ty, ity, tc, &kd, &k);
    two_diff(
        fn, r,
        LLVMBuildFSub(B, LLVMBuildFMul(B, kd, kf(fn, ty, LN2_LO), ""), tl, ""),
        &rh, &rl);
    /* 1 + rh + rh^2/2 = h2 + l + l2 + sqe/2 exactly */
    double c[13];
    exp_taylor(c, 13);
    LLVMValueRef half = kf(fn, ty, 0.5);
    LLVMValueRef sq, sqe, h, l, h2, l2;
    two_prod(fn, ty, rh, rh, &sq, &sqe);
    fast_two_sum(fn, kf(fn, ty, 1), rh, &h, &l);
    fast_two_sum(fn, h, LLVMBuildFMul(B, sq, half, ""), &h2, &l2);
    LLVMValueRef p3 = pmul(fn, pmul(fn, rh, sq), estrin(fn, ty, rh, c + 1, 12));
    LLVMValueRef e = LLVMBuildFAdd(
        B, LLVMBuildFAdd(B, l, l2, ""),
        LLVMBuildFAdd(B, LLVMBuildFMul(B, sqe, half, ""), p3, ""), "");
    e = LLVMBuildFAdd(B, e, LLVMBuildFMul(B, rl, h2, ""), "");
    LLVMValueRef v = LLVMBuildFAdd(B, h2, e, "");
    return exp_limits(fn, ty, t, scale2(fn, ty, ity, v, k), hi, lo);
}

/* pow of x and y, doubles (or vectors of double), that hold floats and
 * will be rounded to float when `single`: see the head.  C's special cases
 * by selects, in the order that makes the later ones win: |x| = 1 gives 1
 * unless y is NaN (-1 to the power of +-inf is 1), x < 0 finite with y
 * finite and not an integer the host's invalid NaN (what powf returns),
 * y = 0 and x = 1 give 1 (even for NaN x or y; of double, not for a
 * signalling NaN, as glibc).  The rest
 * follows from exp(y log|x|): log gives -inf at 0, +inf at +inf and NaN for
 * NaN, exp gives 0 at -inf and +inf at +inf, and the sign is x's when y is
 * an odd integer. */
LLVMValueRef cg_vm_pow(cg_fn *fn, LLVMValueRef x, LLVMValueRef y, bool single)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef ity = int_like(fn, ty);
    LLVMValueRef one = kf(fn, ty, 1);
    LLVMValueRef ax = cg_intrinsic(fn, "llvm.fabs", &ty, 1, &x, 1);
    LLVMValueRef v;
    if (single) {
        LLVMValueRef l = cg_vm_log(fn, ax, single);
        v = cg_vm_exp(fn, LLVMBuildFMul(B, y, l, ""), single);
    } else {
        /* y log|x| as th + tl; log's special values on the high part (the
         * low part is dropped where th is not finite) */
        LLVMValueRef lh, ll, th, tl;
        log_dd(fn, ty, ity, ax, &lh, &ll);
        lh = log_special(fn, ty, ax, lh);
        two_prod(fn, ty, y, lh, &th, &tl);
        tl = LLVMBuildFAdd(B, tl, LLVMBuildFMul(B, y, ll, ""), "");
        v = exp_dd(fn, ty, ity, th, tl);
    }
    v = sel(fn,
            LLVMBuildAnd(B, fcmp(fn, LLVMRealOEQ, ax, one),
                         fcmp(fn, LLVMRealORD, y, y), ""),
            one, v);
    /* y is an integer (infinities count as even ones), and an odd one */
    LLVMValueRef h = LLVMBuildFMul(B, y, kf(fn, ty, 0.5), ""); /* exact */
    LLVMValueRef integral =
        fcmp(fn, LLVMRealOEQ, cg_intrinsic(fn, "llvm.trunc", &ty, 1, &y, 1), y);
    LLVMValueRef odd = LLVMBuildAnd(
        B, integral,
        fcmp(fn, LLVMRealUNE, cg_intrinsic(fn, "llvm.trunc", &ty, 1, &h, 1), h),
        "");
    LLVMValueRef xneg = LLVMBuildICmp(
        B, LLVMIntSLT, LLVMBuildBitCast(B, x, ity, ""), ki(fn, ity, 0), "");
    v = sel(fn, LLVMBuildAnd(B, odd, xneg, ""), LLVMBuildFNeg(B, v, ""), v);
    LLVMValueRef finite_neg = LLVMBuildAnd(
        B, fcmp(fn, LLVMRealOLT, x, kf(fn, ty, 0)),
        fcmp(fn, LLVMRealOGT, x, kf(fn, ty, -__builtin_inf())), "");
    LLVMValueRef ay = cg_intrinsic(fn, "llvm.fabs", &ty, 1, &y, 1);
    LLVMValueRef fraction = LLVMBuildAnd(
        B, LLVMBuildNot(B, integral, ""),
        fcmp(fn, LLVMRealOLT, ay, kf(fn, ty, __builtin_inf())), "");
    v = sel(fn, LLVMBuildAnd(B, finite_neg, fraction, ""),
            kf(fn, ty, invalid_nan()), v);
    LLVMValueRef unit = LLVMBuildOr(B, fcmp(fn, LLVMRealOEQ, y, kf(fn, ty, 0)),
                                    fcmp(fn, LLVMRealOEQ, x, one), "");
    if (!single) {
        /* glibc's pow gives NaN there when the other argument is a
         * signalling NaN (a float widened is quiet): y log|x| is NaN */
        unit = LLVMBuildAnd(B, unit,
                            LLVMBuildNot(B,
                                         LLVMBuildOr(B, is_snan(fn, ity, x),
                                                     is_snan(fn, ity, y), ""),
                                         ""),
                            "");
    }
    return sel(fn, unit, one, v);
}
