/*
 * tests/fuzz/print.c: a fuzzer program as C builder calls.
 *
 * The output is the body of a C function with `weft_context *ctx` and
 * `weft_program *p` in scope; it ends with `results[]`, ready for
 * weft_run1 (params[] holds the arrays to give it, in order).  Nodes are
 * printed in dependency order, each once, as a variable named after its
 * node (e12, a7, f3), so sharing is visible as reuse of a variable.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

typedef struct pstate {
    const fz_prog *prog;
    FILE *out;
    bool *done;
    int nparams;
} pstate;

static const char *tconst(weft_type t)
{
    static const char *names[] = {
        "0",        "WEFT_BOOL", "WEFT_I8",  "WEFT_I16", "WEFT_I32",
        "WEFT_I64", "WEFT_U8",   "WEFT_U16", "WEFT_U32", "WEFT_U64",
        "WEFT_F16", "WEFT_F32",  "WEFT_F64"};
    return t >= 0 && t <= WEFT_F64 ? names[t] : "0";
}

static const char *ctype(weft_type t)
{
    static const char *names[] = {
        "?",        "uint8_t", "int8_t",   "int16_t",  "int32_t",
        "int64_t",  "uint8_t", "uint16_t", "uint32_t", "uint64_t",
        "uint16_t", "float",   "double"};
    return t >= 0 && t <= WEFT_F64 ? names[t] : "?";
}

/* The C expression of a weft_type. */
static void ptype(FILE *o, fz_ty t)
{
    if (t.kind == FZ_SCALAR) {
        fprintf(o, "%s", tconst(t.s[0]));
    } else if (t.kind == FZ_DIMT) {
        fprintf(o, "WEFT_DIM(%d)", t.n);
    } else {
        fprintf(o, "weft_type_tuple(ctx, %d, (weft_type[]){", t.n);
        for (int i = 0; i < t.n; i++) {
            fprintf(o, "%s%s", i ? ", " : "", tconst(t.s[i]));
        }
        fprintf(o, "})");
    }
}

static void pvalue(FILE *o, weft_type t, const void *p)
{
    uint64_t v = 0;
    memcpy(&v, p, fz_size(t) ? fz_size(t) : 1);
    if (t == WEFT_F32) {
        float f;
        memcpy(&f, p, 4);
        if (isnan(f)) {
            fprintf(o, "NAN");
        } else if (isinf(f)) {
            fprintf(o, "%sINFINITY", f < 0 ? "-" : "");
        } else {
            fprintf(o, "%af", (double)f);
        }
    } else if (t == WEFT_F64) {
        double d;
        memcpy(&d, p, 8);
        if (isnan(d)) {
            fprintf(o, "NAN");
        } else if (isinf(d)) {
            fprintf(o, "%sINFINITY", d < 0 ? "-" : "");
        } else {
            fprintf(o, "%a", d);
        }
    } else if (t == WEFT_F16) {
        fprintf(o, "0x%04x", (unsigned)(v & 0xffff));
    } else if (fz_is_signed(t)) {
        int w = fz_bits(t);
        if (w < 64 && (v >> (w - 1)) & 1) {
            v |= ~(((uint64_t)1 << w) - 1);
        }
        if ((int64_t)v == INT64_MIN) {
            fprintf(o, "INT64_MIN");
        } else {
            fprintf(o, "%" PRId64, (int64_t)v);
        }
    } else {
        fprintf(o, "%" PRIu64 "u", v);
    }
}

static char kind_of(const fz_node *n)
{
    if (n->op == F_FUN || n->op == F_AFUN) {
        return 'f';
    }
    return fz_is_array_op(n->op) ? 'a' : 'e';
}

static void pnode(pstate *s, int i);

/* weft_<call>(k0, k1, ...) of a CALL node of ops.h: each kid named by its
 * kind in kids ("(E, F, A)": e, f, f for G, a). */
static void pcall(FILE *o, const char *call, const char *kids, const int *k)
{
    fprintf(o, "weft_%s(", call);
    int j = 0;
    for (const char *c = kids; *c; c++) {
        if (*c >= 'A' && *c <= 'Z') {
            char v = *c == 'G' ? 'f' : (char)(*c - 'A' + 'a');
            fprintf(o, "%s%c%d", j ? ", " : "", v, k[j]);
            j++;
        }
    }
    fprintf(o, ")");
}

#define PRINT_CALL(op, call, kids)                                             \
    case op: pcall(o, #call, #kids, k); break;
#define PRINT_SPECIAL(op, call, kids)

static void deps(pstate *s, int i)
{
    const fz_node *n = &s->prog->node[i];
    for (int k = 0; k < n->nkid; k++) {
        pnode(s, n->kid[k]);
    }
}

#define V(j) kind_of(&s->prog->node[j]), (j)

static void pnode(pstate *s, int i)
{
    if (i < 0 || s->done[i]) {
        return;
    }
    const fz_node *n = &s->prog->node[i];
    FILE *o = s->out;
    const int *k = n->kid;
    if (n->op == F_FUN) {
        s->done[i] = true;
        fprintf(o, "    weft_fun *f%d = weft_fun_create(p, %d, (weft_type[]){",
                i, n->nargs);
        int a = 0;
        for (int gi = 0; gi < 3; gi++) {
            for (int j = 0; j < n->cnt[gi]; j++, a++) {
                fprintf(o, "%s", a ? ", " : "");
                ptype(o, n->argt[gi]);
            }
        }
        fprintf(o, "});\n");
        pnode(s, k[0]);
        fprintf(o, "    weft_fun_return(f%d, %c%d);\n", i, V(k[0]));
        return;
    }
    if (n->op == F_AFUN) {
        s->done[i] = true;
        pnode(s, k[1]);
        fprintf(o, "    weft_afun *f%d = weft_afun_like(a%d);\n", i, k[1]);
        pnode(s, k[0]);
        fprintf(o, "    weft_afun_return(f%d, a%d);\n", i, k[0]);
        return;
    }
    if (n->op == E_ARG || n->op == A_AARG) {
        pnode(s, n->aux);
    }
    deps(s, i);
    if (s->done[i]) {
        return;
    }
    s->done[i] = true;
    if (n->op == A_USE) {
        int64_t size = fz_use_size(n);
        for (int l = 0; l < fz_ty_leaves(n->ty); l++) {
            weft_type t = fz_ty_leaf(n->ty, l);
            fprintf(o, "    static const %s d%d_%d[] = {", ctype(t), i, l);
            for (int64_t j = 0; j < size; j++) {
                fprintf(o, "%s", j ? ", " : "");
                pvalue(o, t,
                       (const char *)n->data[l] + j * (int64_t)fz_size(t));
            }
            fprintf(o, "%s};\n", size ? "" : "0");
        }
        fprintf(o, "    weft_array *u%d;\n    weft_array_from_host(ctx, ", i);
        ptype(o, n->ty);
        fprintf(o, ", %d, (int64_t[]){", n->rank);
        for (int d = 0; d < n->rank; d++) {
            fprintf(o, "%s%" PRId64, d ? ", " : "", n->sh[d]);
        }
        fprintf(o, "%s}, (const void *[]){", n->rank ? "" : "0");
        for (int l = 0; l < fz_ty_leaves(n->ty); l++) {
            fprintf(o, "%sd%d_%d", l ? ", " : "", i, l);
        }
        fprintf(o, "}, &u%d);\n", i);
        if (n->aux) {
            fprintf(o, "    weft_acc *a%d = weft_param(p, ", i);
            ptype(o, n->ty);
            fprintf(o, ", %d); params[%d] = u%d;\n", n->rank, s->nparams++, i);
        } else {
            fprintf(o, "    weft_acc *a%d = weft_use(p, u%d);\n", i, i);
            fprintf(o, "    weft_array_release(u%d);\n", i);
        }
        return;
    }
    fprintf(o, "    weft_%s *%c%d = ", kind_of(n) == 'a' ? "acc" : "exp",
            kind_of(n), i);
    switch (n->op) {
#define FZ_OP(op, name, how, call, kids) PRINT_##how(op, call, kids)
#include "ops.h"
#undef FZ_OP
    case E_CONST:
        switch (n->ty.s[0]) {
        case WEFT_BOOL: fprintf(o, "weft_bool(p, %d)", (int)n->val); break;
        case WEFT_F16:
            fprintf(o, "weft_f16_bits(p, 0x%04x)", (unsigned)n->val);
            break;
        default:
            fprintf(o, "weft_%s(p, ", fz_tname(n->ty.s[0]));
            pvalue(o, n->ty.s[0], &n->val);
            fprintf(o, ")");
        }
        break;
    case E_ARG: fprintf(o, "weft_arg(f%d, %d)", n->aux, n->aux2); break;
    case E_PRIM: {
        const char *name = weft_op_name((weft_op)n->aux);
        if (n->aux == WEFT_OP_EXP) {
            name = "fexp";
        }
        fprintf(o, "weft_%s(e%d", name, k[0]);
        if (n->nkid == 2) {
            fprintf(o, ", e%d", k[1]);
        }
        fprintf(o, ")");
        break;
    }
    case E_PRIMT:
        fprintf(o, "weft_%s(e%d, %s)", weft_op_name((weft_op)n->aux), k[0],
                tconst(n->ty.s[0]));
        break;
    case E_TUPLE:
    case E_INDEX:
        fprintf(o, "weft_%s(p, %d, (weft_exp *[]){",
                n->op == E_TUPLE ? "tuple" : "index", n->nkid);
        for (int j = 0; j < n->nkid; j++) {
            fprintf(o, "%se%d", j ? ", " : "", k[j]);
        }
        fprintf(o, "%s})", n->nkid ? "" : "NULL");
        break;
    case E_GET: fprintf(o, "weft_get(e%d, %d)", k[0], n->aux); break;
    case E_IGNORE: fprintf(o, "weft_ignore(p, %d)", n->ty.n); break;
    case E_APPLY:
        fprintf(o, "weft_apply(f%d, (weft_exp *[]){", k[0]);
        for (int j = 1; j < n->nkid; j++) {
            fprintf(o, "%se%d", j > 1 ? ", " : "", k[j]);
        }
        fprintf(o, "})");
        break;
    case A_AARG: fprintf(o, "weft_afun_arg(f%d)", n->aux); break;
    case A_REPLICATE:
    case A_SLICE: {
        if (n->op == A_REPLICATE) {
            fprintf(o, "weft_replicate(%d, (weft_exp *[]){", n->aux2);
        } else {
            fprintf(o, "weft_slice(a%d, %d, (weft_exp *[]){", k[0], n->aux2);
        }
        int j = 1;
        for (int d = 0; d < n->aux2; d++) {
            if ((n->aux >> d) & 1) {
                fprintf(o, "%sweft_all(p)", d ? ", " : "");
            } else {
                fprintf(o, "%se%d", d ? ", " : "", k[j++]);
            }
        }
        if (n->op == A_REPLICATE) {
            fprintf(o, "}, a%d)", k[0]);
        } else {
            fprintf(o, "})");
        }
        break;
    }
    case A_SCAN: {
        static const char *names[] = {"scanl", "scanl1", "scanl_",
                                      "scanr", "scanr1", "scanr_"};
        bool one = n->aux == FZ_SCANL1 || n->aux == FZ_SCANR1;
        if (one) {
            fprintf(o, "weft_%s(f%d, a%d)", names[n->aux], k[0], k[1]);
        } else {
            fprintf(o, "weft_%s(f%d, e%d, a%d)", names[n->aux], k[0], k[1],
                    k[2]);
        }
        break;
    }
    case A_STENCIL:
    case A_STENCIL2: {
        static const char *bk[] = {"WEFT_BOUNDARY_CLAMP",
                                   "WEFT_BOUNDARY_MIRROR", "WEFT_BOUNDARY_WRAP",
                                   "WEFT_BOUNDARY_CONSTANT"};
        int r = n->rank;
        bool two = n->op == A_STENCIL2;
        int j = two ? 3 : 2;
        int v1 = n->aux == WEFT_BOUNDARY_CONSTANT ? k[j++] : -1;
        int v2 = two && n->aux2 == WEFT_BOUNDARY_CONSTANT ? k[j++] : -1;
        fprintf(o, "weft_stencil%s(f%d, (int[]){", two ? "2" : "", k[0]);
        for (int d = 0; d < r; d++) {
            fprintf(o, "%s%d", d ? ", " : "", n->win[d]);
        }
        fprintf(o, "}, (weft_boundary){%s, ", bk[n->aux]);
        if (v1 >= 0) {
            fprintf(o, "e%d}, a%d", v1, k[1]);
        } else {
            fprintf(o, "NULL}, a%d", k[1]);
        }
        if (two) {
            fprintf(o, ", (int[]){");
            for (int d = 0; d < r; d++) {
                fprintf(o, "%s%d", d ? ", " : "", n->win2[d]);
            }
            fprintf(o, "}, (weft_boundary){%s, ", bk[n->aux2]);
            if (v2 >= 0) {
                fprintf(o, "e%d}, a%d", v2, k[2]);
            } else {
                fprintf(o, "NULL}, a%d", k[2]);
            }
        }
        fprintf(o, ")");
        break;
    }
    case A_ATUPLE:
        fprintf(o, "weft_atuple(p, %d, (weft_acc *[]){", n->nkid);
        for (int j = 0; j < n->nkid; j++) {
            fprintf(o, "%sa%d", j ? ", " : "", k[j]);
        }
        fprintf(o, "})");
        break;
    case A_AGET: fprintf(o, "weft_aget(a%d, %d)", k[0], n->aux); break;
    default: fprintf(o, "NULL /* ? */"); break;
    }
    fprintf(o, ";\n");
}

void fz_print_c(const fz_prog *prog, FILE *out)
{
    pstate s = {prog, out, calloc((size_t)prog->n + 1, 1), 0};
    fprintf(out, "    /* weft_context *ctx; weft_program *p; weft_array "
                 "*params[8]; */\n");
    for (int i = 0; i < prog->nroot; i++) {
        pnode(&s, prog->root[i]);
    }
    fprintf(out, "    weft_acc *results[] = {");
    for (int i = 0; i < prog->nroot; i++) {
        fprintf(out, "%sa%d", i ? ", " : "", prog->root[i]);
    }
    fprintf(out, "};\n");
    free(s.done);
}
