/*
 * tests/fuzz/build.c: rebuild a fuzzer AST through weft's public API.
 *
 * Each node is built once and memoised, so a node reached twice is one
 * weft term used twice (a let after sharing recovery).  A function is
 * created before its body, so that its arguments exist when the body asks
 * for them; an array function likewise, from the array it is like.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

typedef struct bstate {
    weft_context *ctx;
    const fz_prog *prog;
    fz_built *b;
    void **memo;
} bstate;

static void *bnode(bstate *s, int i);

static weft_exp *E(bstate *s, int i)
{
    return (weft_exp *)bnode(s, i);
}

static weft_acc *A(bstate *s, int i)
{
    return (weft_acc *)bnode(s, i);
}

static weft_fun *F(bstate *s, int i)
{
    return (weft_fun *)bnode(s, i);
}

static weft_afun *G(bstate *s, int i)
{
    return (weft_afun *)bnode(s, i);
}

/* The kids of a CALL node of ops.h, built as their kinds say. */
#define ARGS(...) ARGS_N(__VA_ARGS__, 4, 3, 2, 1, 0)(__VA_ARGS__)
#define ARGS_N(a, b, c, d, n, ...) ARGS_##n
#define ARGS_1(a) a(s, k[0])
#define ARGS_2(a, b) ARGS_1(a), b(s, k[1])
#define ARGS_3(a, b, c) ARGS_2(a, b), c(s, k[2])
#define ARGS_4(a, b, c, d) ARGS_3(a, b, c), d(s, k[3])
#define BUILD_CALL(op, call, kids)                                             \
    case op: r = weft_##call(ARGS kids); break;
#define BUILD_SPECIAL(op, call, kids)

static weft_boundary boundary(bstate *s, int kind, int value_kid)
{
    weft_boundary b = {(weft_boundary_kind)kind, NULL};
    if (kind == WEFT_BOUNDARY_CONSTANT) {
        b.value = E(s, value_kid);
    }
    return b;
}

static void *bnode(bstate *s, int i)
{
    if (i < 0 || i >= s->prog->n) {
        return NULL;
    }
    if (s->memo[i]) {
        return s->memo[i];
    }
    const fz_node *n = &s->prog->node[i];
    weft_program *p = s->b->p;
    const int *k = n->kid;
    void *r = NULL;
    switch (n->op) {
#define FZ_OP(op, name, how, call, kids) BUILD_##how(op, call, kids)
#include "ops.h"
#undef FZ_OP
    case E_CONST: r = weft_const(p, n->ty.s[0], &n->val); break;
    case E_ARG: r = weft_arg(F(s, n->aux), n->aux2); break;
    case E_PRIM:
        r = n->nkid == 1 ? weft_prim1((weft_op)n->aux, E(s, k[0]))
                         : weft_prim2((weft_op)n->aux, E(s, k[0]), E(s, k[1]));
        break;
    case E_PRIMT: {
        weft_exp *x = E(s, k[0]);
        weft_type to = n->ty.s[0];
        switch (n->aux) {
        case WEFT_OP_FLOOR: r = weft_floor(x, to); break;
        case WEFT_OP_CEILING: r = weft_ceiling(x, to); break;
        case WEFT_OP_ROUND: r = weft_round(x, to); break;
        case WEFT_OP_TRUNCATE: r = weft_truncate(x, to); break;
        case WEFT_OP_CONVERT: r = weft_convert(x, to); break;
        default: r = weft_bitcast(x, to); break;
        }
        break;
    }
    case E_TUPLE:
    case E_INDEX: {
        weft_exp *c[FZ_MAXK];
        for (int j = 0; j < n->nkid; j++) {
            c[j] = E(s, k[j]);
        }
        r = n->op == E_TUPLE ? weft_tuple(p, n->nkid, c)
                             : weft_index(p, n->nkid, c);
        break;
    }
    case E_GET: r = weft_get(E(s, k[0]), n->aux); break;
    case E_IGNORE: r = weft_ignore(p, n->ty.n); break;
    case E_APPLY: {
        weft_exp *a[FZ_MAXK];
        for (int j = 1; j < n->nkid; j++) {
            a[j - 1] = E(s, k[j]);
        }
        r = weft_apply(F(s, k[0]), a);
        break;
    }
    case F_FUN: {
        weft_type t[64];
        int a = 0;
        for (int gi = 0; gi < 3; gi++) {
            for (int j = 0; j < n->cnt[gi] && a < 64; j++) {
                t[a++] = fz_ty_weft(s->ctx, n->argt[gi]);
            }
        }
        weft_fun *f = weft_fun_create(p, n->nargs, t);
        s->memo[i] = f;
        if (f) {
            weft_fun_return(f, E(s, k[0]));
        }
        return f;
    }
    case F_AFUN: {
        weft_afun *f = weft_afun_like(A(s, k[1]));
        s->memo[i] = f;
        if (f) {
            weft_afun_return(f, A(s, k[0]));
        }
        return f;
    }
    case A_USE: {
        weft_type t = fz_ty_weft(s->ctx, n->ty);
        weft_array *arr = NULL;
        const void *d[FZ_MAXT];
        for (int l = 0; l < FZ_MAXT; l++) {
            d[l] = n->data[l];
        }
        if (weft_array_from_host(s->ctx, t, n->rank, n->sh, d, &arr)) {
            return NULL;
        }
        if (n->aux && s->b->nparams < 64) {
            r = weft_param(p, t, n->rank);
            s->b->params[s->b->nparams++] = arr;
        } else {
            r = weft_use(p, arr);
            weft_array_release(arr);
        }
        break;
    }
    case A_AARG: r = weft_afun_arg((weft_afun *)bnode(s, n->aux)); break;
    case A_REPLICATE:
    case A_SLICE: {
        weft_exp *spec[8];
        int j = 1;
        for (int d = 0; d < n->aux2; d++) {
            spec[d] = (n->aux >> d) & 1 ? weft_all(p) : E(s, k[j++]);
        }
        weft_acc *a = A(s, k[0]);
        r = n->op == A_REPLICATE ? weft_replicate(n->aux2, spec, a)
                                 : weft_slice(a, n->aux2, spec);
        break;
    }
    case A_SCAN: {
        weft_fun *f = F(s, k[0]);
        bool one = n->aux == FZ_SCANL1 || n->aux == FZ_SCANR1;
        weft_exp *z = one ? NULL : E(s, k[1]);
        weft_acc *a = A(s, k[one ? 1 : 2]);
        switch (n->aux) {
        case FZ_SCANL: r = weft_scanl(f, z, a); break;
        case FZ_SCANL1: r = weft_scanl1(f, a); break;
        case FZ_SCANL_: r = weft_scanl_(f, z, a); break;
        case FZ_SCANR: r = weft_scanr(f, z, a); break;
        case FZ_SCANR1: r = weft_scanr1(f, a); break;
        default: r = weft_scanr_(f, z, a); break;
        }
        break;
    }
    case A_STENCIL: {
        weft_boundary b = boundary(s, n->aux, k[2]);
        r = weft_stencil(F(s, k[0]), n->win, b, A(s, k[1]));
        break;
    }
    case A_STENCIL2: {
        int j = 3;
        int v1 = n->aux == WEFT_BOUNDARY_CONSTANT ? k[j++] : -1;
        int v2 = n->aux2 == WEFT_BOUNDARY_CONSTANT ? k[j++] : -1;
        weft_boundary b1 = boundary(s, n->aux, v1);
        weft_boundary b2 = boundary(s, n->aux2, v2);
        r = weft_stencil2(F(s, k[0]), n->win, b1, A(s, k[1]), n->win2, b2,
                          A(s, k[2]));
        break;
    }
    case A_ATUPLE: {
        weft_acc *c[FZ_MAXK];
        for (int j = 0; j < n->nkid; j++) {
            c[j] = A(s, k[j]);
        }
        r = weft_atuple(p, n->nkid, c);
        break;
    }
    case A_AGET: r = weft_aget(A(s, k[0]), n->aux); break;
    default: break;
    }
    s->memo[i] = r;
    return r;
}

weft_status fz_build(weft_context *ctx, const fz_prog *prog, fz_built *b)
{
    memset(b, 0, sizeof *b);
    weft_status st = weft_program_create(ctx, &b->p);
    if (st) {
        return st;
    }
    bstate s = {ctx, prog, b, calloc((size_t)prog->n + 1, sizeof(void *))};
    for (int i = 0; i < prog->nroot; i++) {
        b->results[i] = A(&s, prog->root[i]);
        int ar = prog->node[prog->root[i]].arity;
        for (int c = 0; c < ar && b->nouts < 16; c++) {
            b->out_root[b->nouts] = i;
            b->out_comp[b->nouts] = c;
            b->nouts++;
        }
    }
    b->nresults = prog->nroot;
    free(s.memo);
    st = weft_program_status(b->p);
    if (st == WEFT_OK) {
        for (int i = 0; i < prog->nroot; i++) {
            if (!b->results[i]) {
                return WEFT_ERR_INTERNAL; /* a node the builder lacks */
            }
        }
    }
    return st;
}

void fz_built_free(fz_built *b)
{
    for (int i = 0; i < b->nparams; i++) {
        weft_array_release(b->params[i]);
    }
    b->nparams = 0;
    weft_program_free(b->p);
    b->p = NULL;
}
