/*
 * lib/fe_ops.h: what weft's own code needs to know about each scalar
 * primitive, one row per primitive of include/weft_ops.h, in the same
 * order, as an X-macro table:
 *   FE_OP(NAME, fold, fail, cost, simd, lower, libm, libdevice)
 * lib/prims.c expands it into fe_prims[] (fe.h) beside the public columns
 * and checks at compile time that the rows are weft_ops.h's, one each, in
 * its order.  Every pass that asks a question about a primitive reads a
 * column here instead of listing primitives in a switch: the simplifier
 * (fold, fail), sharing recovery (fail), the interpreter and constant
 * folding (libm), the CPU and PTX targets (lower, libm, libdevice), SPMD
 * code generation (simd, lower) and the skeletons' light-kernel rule
 * (cost).
 *
 * Why a second table: weft_ops.h is public and its four columns are API
 * (C code expands WEFT_OP(name, lower, arity, rule) itself, the Python
 * binding reads it); these columns say how weft computes a primitive
 * today and change without the API changing.
 *
 * The columns:
 *   fold   FOLD: constant folding may evaluate it (fe_prim_eval gives the
 *          compiled code's bits); KEEP: the compiled code may differ from
 *          the C library (another library's function), so it is not folded.
 *   fail   whether evaluating it may fail (a run-time error, or undefined
 *          in unchecked code), so that it is not hoisted to where it might
 *          be evaluated when the program would not have: NEVER; DIVISOR
 *          (unless the divisor is a constant other than 0 and -1); SHIFT
 *          (unless the amount is a constant below the width); ALWAYS
 *          (float to integer: NaN or out of range); TO_INT (a conversion
 *          from a floating to an integral type).
 *   cost   CHEAP, or DEAR (division and the math functions: several
 *          operations in sk_kernel.light's count).
 *   simd   VEC: one vector instruction gives each lane the scalar code's
 *          bits (codegen/spmd.c's vnative, which may still decline some
 *          types); LANES: the scalar code lane by lane, after the target's
 *          vector math (cg_target.vmath) for a CALL or VMATH function.
 *   lower  how compiled code computes it: INLINE (cg_prim's instructions,
 *          codegen/exp.c); LLVM (the intrinsic llvm.<libm> on every
 *          target); CALL (the CPU calls the C library's libm function, the
 *          GPU libdevice's); VMATH (the CPU runs weft's own vector code,
 *          codegen/vmath.c, the GPU libdevice's).
 *   libm   M1(f) or M2(f): the C library's function of one or two
 *          arguments (f for double, ff for float), which the interpreter
 *          and constant folding call, and the CPU by name; NO: none.
 *   libdevice  NV(f): libdevice's __nv_f (__nv_ff for float); NO: none.
 * A new primitive appends its row here when it appends its line to
 * weft_ops.h.  No guard: included once, by lib/prims.c.
 */
/* A table, one column a fact: laid out by hand. */
/* clang-format off */
/*    NAME      fold  fail     cost   simd   lower   libm       libdevice */
FE_OP(ADD,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(SUB,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(MUL,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(NEG,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(ABS,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(SIGNUM,   FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(MIN,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(MAX,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(QUOT,     FOLD, DIVISOR, CHEAP, LANES, INLINE, NO,        NO)
FE_OP(REM,      FOLD, DIVISOR, CHEAP, LANES, INLINE, NO,        NO)
FE_OP(IDIV,     FOLD, DIVISOR, CHEAP, LANES, INLINE, NO,        NO)
FE_OP(MOD,      FOLD, DIVISOR, CHEAP, LANES, INLINE, NO,        NO)
FE_OP(BAND,     FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(BOR,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(BXOR,     FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(BNOT,     FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(SHL,      FOLD, SHIFT,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(SHR,      FOLD, SHIFT,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(ROTL,     FOLD, NEVER,   CHEAP, LANES, INLINE, NO,        NO)
FE_OP(ROTR,     FOLD, NEVER,   CHEAP, LANES, INLINE, NO,        NO)
FE_OP(POPCOUNT, FOLD, NEVER,   CHEAP, LANES, INLINE, NO,        NO)
FE_OP(CLZ,      FOLD, NEVER,   CHEAP, LANES, INLINE, NO,        NO)
FE_OP(CTZ,      FOLD, NEVER,   CHEAP, LANES, INLINE, NO,        NO)
FE_OP(FDIV,     FOLD, NEVER,   DEAR,  VEC,   INLINE, NO,        NO)
FE_OP(POW,      KEEP, NEVER,   DEAR,  LANES, VMATH,  M2(pow),   NV(pow))
FE_OP(ATAN2,    KEEP, NEVER,   DEAR,  LANES, CALL,   M2(atan2), NV(atan2))
FE_OP(EXP,      KEEP, NEVER,   DEAR,  LANES, VMATH,  M1(exp),   NV(exp))
FE_OP(LOG,      KEEP, NEVER,   DEAR,  LANES, VMATH,  M1(log),   NV(log))
FE_OP(SQRT,     FOLD, NEVER,   DEAR,  VEC,   LLVM,   M1(sqrt),  NO)
FE_OP(SIN,      KEEP, NEVER,   DEAR,  LANES, VMATH,  M1(sin),   NV(sin))
FE_OP(COS,      KEEP, NEVER,   DEAR,  LANES, VMATH,  M1(cos),   NV(cos))
FE_OP(TAN,      KEEP, NEVER,   DEAR,  LANES, CALL,   M1(tan),   NV(tan))
FE_OP(ASIN,     KEEP, NEVER,   DEAR,  LANES, CALL,   M1(asin),  NV(asin))
FE_OP(ACOS,     KEEP, NEVER,   DEAR,  LANES, CALL,   M1(acos),  NV(acos))
FE_OP(ATAN,     KEEP, NEVER,   DEAR,  LANES, CALL,   M1(atan),  NV(atan))
FE_OP(SINH,     KEEP, NEVER,   DEAR,  LANES, CALL,   M1(sinh),  NV(sinh))
FE_OP(COSH,     KEEP, NEVER,   DEAR,  LANES, CALL,   M1(cosh),  NV(cosh))
FE_OP(TANH,     KEEP, NEVER,   DEAR,  LANES, CALL,   M1(tanh),  NV(tanh))
FE_OP(ASINH,    KEEP, NEVER,   DEAR,  LANES, CALL,   M1(asinh), NV(asinh))
FE_OP(ACOSH,    KEEP, NEVER,   DEAR,  LANES, CALL,   M1(acosh), NV(acosh))
FE_OP(ATANH,    KEEP, NEVER,   DEAR,  LANES, CALL,   M1(atanh), NV(atanh))
FE_OP(ISNAN,    FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(ISINF,    FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(LT,       FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(LE,       FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(GT,       FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(GE,       FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(EQ,       FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(NE,       FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(AND,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(OR,       FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(NOT,      FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(FLOOR,    FOLD, ALWAYS,  CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(CEILING,  FOLD, ALWAYS,  CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(ROUND,    FOLD, ALWAYS,  CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(TRUNCATE, FOLD, ALWAYS,  CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(CONVERT,  FOLD, TO_INT,  CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(BITCAST,  FOLD, NEVER,   CHEAP, VEC,   INLINE, NO,        NO)
FE_OP(EXPM1,    KEEP, NEVER,   DEAR,  LANES, CALL,   M1(expm1), NV(expm1))
FE_OP(LOG1P,    KEEP, NEVER,   DEAR,  LANES, CALL,   M1(log1p), NV(log1p))
/* clang-format on */
