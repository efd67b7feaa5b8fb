/*
 * The catalogue of weft's scalar primitives, as an X-macro table:
 *   WEFT_OP(NAME, c_name, arity, rule)
 * NAME gives the enum constant WEFT_OP_NAME; c_name the builder function
 * weft_<c_name>; arity is 1 or 2, or T for the operations that also take a
 * result type (they have their own builder functions in weft.h); rule is
 * the type rule:
 *   NUM    numeric operands of one type, same result type
 *   INT    integral operands of one type, same result type
 *   ORD    numeric or bool operands of one type, same result type (bool is
 *          ordered false < true: min is and, max is or)
 *   LOGIC  integral or bool operands of one type, same result type (on
 *          bool: band is and, bor is or, bxor is xor, all strict)
 *   FLT    floating operands of one type, same result type
 *   SHIFT  an integral value and an integral amount, result of the value's type
 *   BITS   one integral operand, i32 result
 *   FPRED  one floating operand, bool result
 *   CMP    two operands of one scalar type, bool result
 *   BOOL   bool operands, bool result (and, or short-circuit)
 *   ROUND  floating operand, integral result type given
 *   CONV   any scalar (not a tuple) to the scalar type given
 *   CAST   any scalar to a scalar type of the same size
 * This header is included by weft.h and by weft's sources; it has no guard.
 * New primitives go at the end: the order numbers weft_op, which bindings
 * may hard-code (docs/abi.md).  How weft computes each (folding, failure,
 * cost, vector code, library functions) is weft's own table,
 * lib/fe_ops.h: one row per line here, in this order.
 */
WEFT_OP(ADD, add, 2, NUM)
WEFT_OP(SUB, sub, 2, NUM)
WEFT_OP(MUL, mul, 2, NUM)
WEFT_OP(NEG, neg, 1, NUM)
WEFT_OP(ABS, abs, 1, NUM)
WEFT_OP(SIGNUM, signum, 1, NUM)
WEFT_OP(MIN, min, 2, ORD)
WEFT_OP(MAX, max, 2, ORD)
WEFT_OP(QUOT, quot, 2, INT) /* toward zero */
WEFT_OP(REM, rem, 2, INT)   /* sign of the dividend */
WEFT_OP(IDIV, idiv, 2, INT) /* Haskell div: toward negative infinity */
WEFT_OP(MOD, mod, 2, INT)   /* sign of the divisor */
WEFT_OP(BAND, band, 2, LOGIC)
WEFT_OP(BOR, bor, 2, LOGIC)
WEFT_OP(BXOR, bxor, 2, LOGIC)
WEFT_OP(BNOT, bnot, 1, INT)
WEFT_OP(SHL, shl, 2, SHIFT)
WEFT_OP(SHR, shr, 2, SHIFT)   /* arithmetic for signed, logical for unsigned */
WEFT_OP(ROTL, rotl, 2, SHIFT) /* amount modulo the width */
WEFT_OP(ROTR, rotr, 2, SHIFT)
WEFT_OP(POPCOUNT, popcount, 1, BITS)
WEFT_OP(CLZ, clz, 1, BITS)  /* of 0: the width */
WEFT_OP(CTZ, ctz, 1, BITS)  /* of 0: the width */
WEFT_OP(FDIV, fdiv, 2, FLT) /* floating division, Haskell (/) */
WEFT_OP(POW, pow, 2, FLT)
WEFT_OP(ATAN2, atan2, 2, FLT)
WEFT_OP(EXP, fexp, 1, FLT) /* weft_fexp: weft_exp names the term type */
WEFT_OP(LOG, log, 1, FLT)
WEFT_OP(SQRT, sqrt, 1, FLT)
WEFT_OP(SIN, sin, 1, FLT)
WEFT_OP(COS, cos, 1, FLT)
WEFT_OP(TAN, tan, 1, FLT)
WEFT_OP(ASIN, asin, 1, FLT)
WEFT_OP(ACOS, acos, 1, FLT)
WEFT_OP(ATAN, atan, 1, FLT)
WEFT_OP(SINH, sinh, 1, FLT)
WEFT_OP(COSH, cosh, 1, FLT)
WEFT_OP(TANH, tanh, 1, FLT)
WEFT_OP(ASINH, asinh, 1, FLT)
WEFT_OP(ACOSH, acosh, 1, FLT)
WEFT_OP(ATANH, atanh, 1, FLT)
WEFT_OP(ISNAN, isnan, 1, FPRED)
WEFT_OP(ISINF, isinf, 1, FPRED)
WEFT_OP(LT, lt, 2, CMP)
WEFT_OP(LE, le, 2, CMP)
WEFT_OP(GT, gt, 2, CMP)
WEFT_OP(GE, ge, 2, CMP)
WEFT_OP(EQ, eq, 2, CMP)
WEFT_OP(NE, ne, 2, CMP)
WEFT_OP(AND, and, 2, BOOL) /* short-circuit */
WEFT_OP(OR, or, 2, BOOL)   /* short-circuit */
WEFT_OP(NOT, not, 1, BOOL)
WEFT_OP(FLOOR, floor, T, ROUND)
WEFT_OP(CEILING, ceiling, T, ROUND)
WEFT_OP(ROUND, round, T, ROUND) /* half to even */
WEFT_OP(TRUNCATE, truncate, T, ROUND)
WEFT_OP(CONVERT, convert, T, CONV)
WEFT_OP(BITCAST, bitcast, T, CAST)
WEFT_OP(EXPM1, expm1, 1, FLT) /* exp x - 1, accurate for x near 0 */
WEFT_OP(LOG1P, log1p, 1, FLT) /* log (1 + x), accurate for x near 0 */
