/*
 * lib/prims.c: the table of scalar primitives, read by the builder, the
 * simplifier, the interpreter and the code generators.  The catalogue
 * itself is include/weft_ops.h.
 */
#include "fe.h"

#define ARITY_1 1
#define ARITY_2 2
#define ARITY_T 1
#define TYPED_1 false
#define TYPED_2 false
#define TYPED_T true

const fe_prim_info fe_prims[WEFT_OP_COUNT_] = {
#define WEFT_OP(name, lower, arity, rule)                                    \
    [WEFT_OP_##name] = {#lower, ARITY_##arity, TYPED_##arity, FE_RULE_##rule},
#include "weft_ops.h"
#undef WEFT_OP
};

const char *weft_op_name(weft_op op)
{
    if ((unsigned)op >= WEFT_OP_COUNT_) {
        return NULL;
    }
    /* the builder of exp is weft_fexp, but the primitive is exp */
    return op == WEFT_OP_EXP ? "exp" : fe_prims[op].name;
}
