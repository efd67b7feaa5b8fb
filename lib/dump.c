/*
 * lib/dump.c: print the core readably (fe_dump, for weft_program_dump).
 *
 * The text is meant for people and for tests that count lets and variable
 * references, so it is deterministic and every let starts its own line:
 *
 *   let a0 : f32[1] = map (\x1 : f32 -> add(x1, 1.0f)) p0
 *   let e2 : f32 = the(a0)
 *   in (zipwith (\x3 : f32, x4 : f32 -> mul(x3, e2)) a0 a0)
 *
 * Names: array variables aN (let-bound or parameters of array functions),
 * scalar let variables eN, scalar function parameters xN (N is the
 * variable's id, unique in the core), program parameters pK, arrays fixed
 * into the program use#K<type shape> (K their index in core->uses).
 *
 * Array operations are written as Haskell applications, `map f a`, with an
 * operand in parentheses when it is itself an application; scalar
 * operations as calls, `add(x, y)`, `convert<f64>(x)`, `the(a)`,
 * `at(a, index(i, j))`; functions as `(\x1 : f32, x2 : f32 -> body)`;
 * constants as 3, -1, true, 2.5f (f32), 2.5 (f64), 2.5h (f16).  The top
 * level is the chain of lets around the tuple of results; a let chain
 * anywhere else is written in parentheses over several lines, indented:
 *
 *   map (\x1 : f32 -> (
 *       let e2 : f32 = mul(x1, x1)
 *       in add(e2, sqrt(e2)))) p0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

typedef struct printer {
    const weft_context *ctx;
    const fe_core *core;
    FILE *out;
    char buf[512]; /* names and numbers: here, not on the recursion's stack */
} printer;

static void term(printer *pr, const fe_term *t, int ind);

static void put(printer *pr, const char *s)
{
    fputs(s, pr->out);
}

static void newline(printer *pr, int ind)
{
    fprintf(pr->out, "\n%*s", ind, "");
}

static void var_name(printer *pr, const fe_var *v)
{
    fprintf(pr->out, "%c%u",
            v->acc     ? 'a'
            : v->param ? 'x'
                       : 'e',
            (unsigned)v->id);
}

static void type_name(printer *pr, weft_type t)
{
    put(pr, fe_type_name(pr->ctx, t, pr->buf, sizeof pr->buf));
}

static void atype_name(printer *pr, const fe_atype *t)
{
    put(pr, fe_atype_name(pr->ctx, t, pr->buf, sizeof pr->buf));
}

/* The shortest of %.{lo..hi}g that reads back as v (through `narrow`). */
static void real(printer *pr, double v, int lo, int hi, bool single,
                 const char *suffix)
{
    char *buf = pr->buf;
    for (int p = lo; p <= hi; p++) {
        snprintf(buf, 64, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if (single ? (float)back == (float)v : back == v) {
            break;
        }
    }
    put(pr, buf);
    if (!strpbrk(buf, ".eEn")) { /* n: inf and nan */
        put(pr, ".0");
    }
    put(pr, suffix);
}

static void constant(printer *pr, const fe_term *t)
{
    fe_val v = t->u.c;
    switch (t->type) {
    case WEFT_BOOL: put(pr, v.u ? "true" : "false"); break;
    case WEFT_I8:
    case WEFT_I16:
    case WEFT_I32:
    case WEFT_I64: fprintf(pr->out, "%lld", (long long)v.i); break;
    case WEFT_U8:
    case WEFT_U16:
    case WEFT_U32:
    case WEFT_U64: fprintf(pr->out, "%llu", (unsigned long long)v.u); break;
    case WEFT_F16: real(pr, v.f, 1, 17, false, "h"); break;
    case WEFT_F32: real(pr, v.f, 1, 9, true, "f"); break;
    default: real(pr, v.f, 1, 17, false, ""); break;
    }
}

static void fun(printer *pr, const fe_fun *f, int ind)
{
    put(pr, "(\\");
    for (int i = 0; i < f->arity; i++) {
        const fe_var *v = f->param ? f->param[i] : NULL;
        if (i > 0) {
            put(pr, ", ");
        }
        if (!v) {
            put(pr, "?");
            continue;
        }
        var_name(pr, v);
        put(pr, " : ");
        if (v->acc) {
            atype_name(pr, v->atype);
        } else {
            type_name(pr, v->type);
        }
    }
    put(pr, " -> ");
    term(pr, f->body, ind);
    put(pr, ")");
}

/* Array operations written as applications (bracketed as operands). */
static bool is_application(const fe_term *t)
{
    return t->acc && t->kind != FE_USE && t->kind != FE_PARAM &&
           t->kind != FE_VAR && t->kind != FE_ATUPLE && t->kind != FE_LET;
}

static void operand(printer *pr, const fe_term *t, int ind)
{
    put(pr, " ");
    if (!t) {
        put(pr, "_");
    } else if (is_application(t)) {
        put(pr, "(");
        term(pr, t, ind);
        put(pr, ")");
    } else {
        term(pr, t, ind);
    }
}

static void fun_operand(printer *pr, const fe_fun *f, int ind)
{
    put(pr, " ");
    fun(pr, f, ind);
}

/* name(k0, k1, ...) over kids from..nkid-1. */
static void call(printer *pr, const char *name, const fe_term *t, int from,
                 int ind)
{
    put(pr, name);
    put(pr, "(");
    for (int i = from; i < t->nkid; i++) {
        if (i > from) {
            put(pr, ", ");
        }
        term(pr, t->kid[i], ind);
    }
    put(pr, ")");
}

static void let_line(printer *pr, const fe_term *t, int ind)
{
    put(pr, "let ");
    var_name(pr, t->u.var);
    put(pr, " : ");
    if (t->u.var->acc) {
        atype_name(pr, t->u.var->atype);
    } else {
        type_name(pr, t->u.var->type);
    }
    put(pr, " = ");
    term(pr, t->kid[0], ind);
}

/* A chain of lets, one per line at indent ind, then `in body`. */
static void let_chain(printer *pr, const fe_term *t, int ind)
{
    while (t->kind == FE_LET) {
        let_line(pr, t, ind);
        newline(pr, ind);
        t = t->kid[1];
    }
    put(pr, "in ");
    term(pr, t, ind);
}

static void stencil_side(printer *pr, const fe_term *t, int side,
                         const fe_term *a, const fe_term *value, int ind)
{
    static const char *const bnd[] = {"clamp", "mirror", "wrap", "constant"};
    int rank = a ? a->rank : 0;
    put(pr, " [");
    for (int d = 0; d < rank && d < 3; d++) {
        fprintf(pr->out, "%s%d", d ? "x" : "", t->u.st.window[side][d]);
    }
    put(pr, "] ");
    unsigned b = (unsigned)t->u.st.bnd[side];
    put(pr, b < 4 ? bnd[b] : "?");
    if (value) {
        put(pr, "(");
        term(pr, value, ind);
        put(pr, ")");
    }
    operand(pr, a, ind);
}

/* The name of array kind `kind` (lib/fe_kinds.h), or "?". */
static const char *acc_name(int kind)
{
    const char *n =
        kind >= 0 && kind < FE_KIND_COUNT_ ? fe_kinds[kind].name : NULL;
    return n ? n : "?";
}

const char *fe_acc_name(int kind)
{
    return acc_name(kind);
}

static void array_op(printer *pr, const fe_term *t, int ind)
{
    if (t->delayed) {
        put(pr, "fused ");
    }
    put(pr, acc_name(t->kind));
    if ((t->kind == FE_FOLD_SEG || t->kind == FE_FOLD1_SEG) &&
        t->op == FE_SEG_OFFSETS) {
        put(pr, "_offsets");
    }
    switch (t->kind) {
    case FE_GENERATE:
        operand(pr, t->kid[0], ind);
        fun_operand(pr, t->fun[0], ind);
        return;
    case FE_BACKPERMUTE:
        operand(pr, t->kid[0], ind);
        fun_operand(pr, t->fun[0], ind);
        operand(pr, t->kid[1], ind);
        return;
    case FE_TRANSFORM:
        operand(pr, t->kid[0], ind);
        fun_operand(pr, t->fun[0], ind);
        fun_operand(pr, t->fun[1], ind);
        operand(pr, t->kid[1], ind);
        return;
    case FE_PERMUTE:
        fun_operand(pr, t->fun[0], ind);
        operand(pr, t->kid[0], ind);
        fun_operand(pr, t->fun[1], ind);
        operand(pr, t->kid[1], ind);
        return;
    case FE_REPLICATE:
    case FE_SLICE:
        if (t->kind == FE_SLICE) {
            operand(pr, t->kid[0], ind);
        }
        put(pr, " [");
        for (int i = 1; i < t->nkid; i++) {
            if (i > 1) {
                put(pr, ", ");
            }
            term(pr, t->kid[i], ind);
        }
        put(pr, "]");
        if (t->kind == FE_REPLICATE) {
            operand(pr, t->kid[0], ind);
        }
        return;
    case FE_STENCIL:
        fun_operand(pr, t->fun[0], ind);
        stencil_side(pr, t, 0, t->kid[0], t->kid[1], ind);
        return;
    case FE_STENCIL2:
        fun_operand(pr, t->fun[0], ind);
        stencil_side(pr, t, 0, t->kid[0], t->kid[1], ind);
        stencil_side(pr, t, 1, t->kid[2], t->kid[3], ind);
        return;
    case FE_AGET:
        fprintf(pr->out, " %d", t->u.index);
        operand(pr, t->kid[0], ind);
        return;
    case FE_FOLD:
    case FE_FOLD1:
        /* with the map it stores through (lib/fuse.c): `fold f z a then
         * map g` */
        fun_operand(pr, t->fun[0], ind);
        for (int i = 0; i < t->nkid; i++) {
            operand(pr, t->kid[i], ind);
        }
        if (t->nfun > 1) {
            put(pr, " then map");
            fun_operand(pr, t->fun[1], ind);
        }
        return;
    default:
        for (int i = 0; i < t->nfun; i++) {
            fun_operand(pr, t->fun[i], ind);
        }
        for (int i = 0; i < t->nkid; i++) {
            operand(pr, t->kid[i], ind);
        }
        return;
    }
}

static void use_ref(printer *pr, const weft_array *a)
{
    int k = -1;
    for (int i = 0; i < pr->core->nuse; i++) {
        if (pr->core->uses[i] == a) {
            k = i;
            break;
        }
    }
    fprintf(pr->out, "use#%d<", k);
    if (a) {
        type_name(pr, a->type);
        put(pr, " [");
        for (int d = 0; d < a->rank; d++) {
            fprintf(pr->out, "%s%lld", d ? "x" : "", (long long)a->shape[d]);
        }
        put(pr, "]");
    }
    put(pr, ">");
}

static void term(printer *pr, const fe_term *t, int ind)
{
    if (!t) {
        put(pr, "_");
        return;
    }
    switch (t->kind) {
    case FE_CONST: constant(pr, t); return;
    case FE_VAR: var_name(pr, t->u.var); return;
    case FE_PRIM: {
        const char *name =
            t->op < WEFT_OP_COUNT_ ? weft_op_name((weft_op)t->op) : "?";
        put(pr, name);
        if (t->op < WEFT_OP_COUNT_ && fe_prims[t->op].typed) {
            put(pr, "<");
            type_name(pr, t->type);
            put(pr, ">");
        }
        call(pr, "", t, 0, ind);
        return;
    }
    case FE_COND:
        put(pr, "(");
        term(pr, t->kid[0], ind);
        put(pr, " ? ");
        term(pr, t->kid[1], ind);
        put(pr, " : ");
        term(pr, t->kid[2], ind);
        put(pr, ")");
        return;
    case FE_TUPLE:
        call(pr, fe_is_dim(t->type) ? "index" : "", t, 0, ind);
        return;
    case FE_GET:
        put(pr, "get(");
        term(pr, t->kid[0], ind);
        fprintf(pr->out, ", %d)", t->u.index);
        return;
    case FE_SHAPE: call(pr, "shape", t, 0, ind); return;
    case FE_SHAPE_SIZE: call(pr, "shape_size", t, 0, ind); return;
    case FE_TO_INDEX: call(pr, "to_index", t, 0, ind); return;
    case FE_FROM_INDEX: call(pr, "from_index", t, 0, ind); return;
    case FE_AT:
        if (t->nkid == 2 && t->kid[1] && t->kid[1]->kind == FE_TUPLE &&
            t->kid[1]->nkid == 0) {
            put(pr, "the(");
            term(pr, t->kid[0], ind);
            put(pr, ")");
        } else {
            call(pr, "at", t, 0, ind);
        }
        return;
    case FE_AT_LINEAR: call(pr, "at_linear", t, 0, ind); return;
    case FE_WHILE:
        put(pr, "while(");
        fun(pr, t->fun[0], ind);
        put(pr, ", ");
        fun(pr, t->fun[1], ind);
        put(pr, ", ");
        term(pr, t->kid[0], ind);
        put(pr, ")");
        return;
    case FE_ALL: put(pr, "all"); return;
    case FE_IGNORE: put(pr, "ignore"); return;
    case FE_LET:
        put(pr, "(");
        newline(pr, ind + 4);
        let_chain(pr, t, ind + 4);
        put(pr, ")");
        return;
    case FE_USE: use_ref(pr, t->u.array); return;
    case FE_PARAM: fprintf(pr->out, "p%d", t->u.index); return;
    case FE_ATUPLE: call(pr, "", t, 0, ind); return;
    case FE_ARG:
    case FE_AARG:
    case FE_APPLY: put(pr, "?builder-term"); return;
    default:
        if (t->acc) {
            array_op(pr, t, ind);
        } else {
            put(pr, "?");
        }
        return;
    }
}

weft_status fe_dump(const weft_context *ctx, const fe_core *core, FILE *out)
{
    if (!core || !out || !core->root) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_program_dump: nothing to print");
    }
    printer pr = {ctx, core, out, {0}};
    if (core->root->kind == FE_LET) {
        let_chain(&pr, core->root, 0);
    } else {
        term(&pr, core->root, 0);
    }
    put(&pr, "\n");
    if (ferror(out)) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_program_dump: writing to the stream failed");
    }
    return WEFT_OK;
}
