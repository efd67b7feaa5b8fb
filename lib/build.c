/*
 * lib/build.c: the program builder.
 *
 * Every builder call of weft.h lives here.  A call does three things in
 * order, and stops at the first that fails:
 *
 *   1. enter(): find the program from the call's handles and apply the
 *      sticky rules (cairo).  A program already in error makes the call
 *      return NULL with no new message; a NULL handle, or a handle of the
 *      wrong sort (an array term where a scalar is wanted, a function
 *      without a body) is recorded as the program's error; handles of
 *      several programs are recorded in each of them (mixed()).  When every handle is NULL there is no program to record in,
 *      so only the thread's last error is set.
 *   2. Type and rank checks, each failure with its own status and a message
 *      that names the call, the argument and the cause.
 *   3. new_term(): a term in the program's arena with its kids and
 *      functions laid out as fe.h's fe_kind comments say, its type, and
 *      has_arg (whether it depends on a scalar function argument).
 *
 * Array operations take only scalar arguments that do not depend on a
 * function argument (has_arg false): an array whose shape depends on the
 * element being computed would be nested data parallelism, which the
 * language does not have.  As a result no array term ever has has_arg set.
 * Whether arguments are used inside their own functions is checked later,
 * by sharing recovery, which sees the whole program.
 *
 * A few calls are sugar: weft_size is FE_SHAPE_SIZE of FE_SHAPE, weft_the
 * is FE_AT at the rank-0 index, and weft_fold_all / weft_fold1_all fold a
 * reshape of the array to one dimension.
 *
 * The contract of each weft_ function is its comment in weft.h, and that of
 * fe_fail is in fe.h; they are not repeated here.
 */
#include <stdio.h>
#include <string.h>

#include "fe.h"

#define T(x) ((fe_term *)(x))
#define F(x) ((fe_fun *)(x))
#define E(x) ((weft_exp *)(x))
#define A(x) ((weft_acc *)(x))

/* A readable type name, in a buffer that lives to the end of the block. */
#define TN(p, t) fe_type_name((p)->ctx, (t), (char[160]){0}, 160)
#define ATN(p, t) fe_atype_name((p)->ctx, (t), (char[240]){0}, 240)

/* ---- errors and programs ---------------------------------------------- */

/* The first error wins in p; the thread's last error is always set. */
void *fe_fail(weft_program *p, weft_status s, const char *fmt, ...)
{
    char buf[FE_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (p != NULL && p->status == WEFT_OK) {
        p->status = s;
        memcpy(p->msg, buf, sizeof p->msg);
    }
    fe_error_copy(s, buf);
    return NULL;
}

void *fe_fail_oom(weft_program *p, const char *who)
{
    return fe_fail(p, WEFT_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
}

weft_status weft_program_create(weft_context *ctx, weft_program **out)
{
    if (out == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_program_create: argument 2 is NULL");
    }
    *out = NULL;
    if (ctx == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_program_create: argument 1 is NULL");
    }
    weft_program *p = fe_calloc(ctx, sizeof *p);
    if (p == NULL) {
        return fe_oom("weft_program_create");
    }
    p->ctx = ctx;
    fe_arena_init(&p->arena, ctx);
    p->status = WEFT_OK;
    p->msg[0] = '\0';
    *out = p;
    return WEFT_OK;
}

void weft_program_free(weft_program *p)
{
    if (p == NULL) {
        return;
    }
    weft_context *ctx = p->ctx;
    for (int i = 0; i < p->nuse; i++) {
        weft_array_release(p->uses[i]);
    }
    if (p->uses != NULL) {
        fe_free(ctx, p->uses, (size_t)p->cap_use * sizeof *p->uses);
    }
    if (p->params != NULL) {
        fe_free(ctx, p->params, (size_t)p->cap_param * sizeof *p->params);
    }
    fe_arena_release(&p->arena);
    fe_free(ctx, p, sizeof *p);
}

weft_status weft_program_status(const weft_program *p)
{
    if (p == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_program_status: the program is NULL");
    }
    return p->status;
}

const char *weft_program_error(const weft_program *p)
{
    if (p == NULL) {
        fe_error(WEFT_ERR_NULL_ARGUMENT,
                 "weft_program_error: the program is NULL");
        return "weft_program_error: the program is NULL";
    }
    return p->msg;
}

/* ---- handles and the sticky rules ------------------------------------- */

/* The sort of a handle argument, checked by enter(). */
enum {
    H_PROG,     /* a weft_program */
    H_RAW,      /* any pointer that must not be NULL (no program) */
    H_EXP,      /* a scalar term, not the weft_all marker */
    H_SPEC,     /* a scalar term or the weft_all marker */
    H_ACC,      /* an array term, possibly a tuple of arrays */
    H_ARRAY,    /* an array term that is one array */
    H_FUN,      /* a scalar function with a body */
    H_FUN_OPEN, /* a scalar function, body or not */
    H_AFUN,     /* an array function with a body */
    H_AFUN_OPEN /* an array function, body or not */
};

typedef struct hnd {
    int kind;
    int argno; /* 1-based position in the C call */
    const void *ptr;
} hnd;

/* A list argument (components, a specification): n handles of one sort. */
typedef struct hlist {
    int kind;
    int argno;
    int n;
    fe_term *const *items;
} hlist;

#define HP(n, x) {H_PROG, (n), (x)}
#define HR(n, x) {H_RAW, (n), (x)}
#define HE(n, x) {H_EXP, (n), (x)}
#define HT(n, x) {H_ACC, (n), (x)}
#define HA(n, x) {H_ARRAY, (n), (x)}
#define HF(n, x) {H_FUN, (n), (x)}
#define HO(n, x) {H_FUN_OPEN, (n), (x)}
#define HG(n, x) {H_AFUN, (n), (x)}
#define HGO(n, x) {H_AFUN_OPEN, (n), (x)}

#define ENTER(who, ...)                                                        \
    enter((who), (int)(sizeof((hnd[]){__VA_ARGS__}) / sizeof(hnd)),            \
          (hnd[]){__VA_ARGS__}, NULL)
#define ENTER_LIST(who, list, ...)                                             \
    enter((who), (int)(sizeof((hnd[]){__VA_ARGS__}) / sizeof(hnd)),            \
          (hnd[]){__VA_ARGS__}, (list))

static weft_program *prog_of(int kind, const void *ptr)
{
    if (ptr == NULL) {
        return NULL;
    }
    switch (kind) {
    case H_PROG: return (weft_program *)ptr;
    case H_RAW: return NULL;
    case H_FUN:
    case H_FUN_OPEN:
    case H_AFUN:
    case H_AFUN_OPEN: return F(ptr)->prog;
    default: return T(ptr)->prog;
    }
}

/* Check that one non-NULL handle of p has the sort `kind`. */
static bool sort_ok(weft_program *p, const char *who, int kind, const void *ptr,
                    const char *name)
{
    switch (kind) {
    case H_EXP:
    case H_SPEC:
        if (T(ptr)->acc) {
            fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                    "%s: %s is an array term, expected a scalar term", who,
                    name);
            return false;
        }
        if (kind == H_EXP && T(ptr)->kind == FE_ALL) {
            fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                    "%s: %s is weft_all, which belongs only in a replicate "
                    "or slice specification",
                    who, name);
            return false;
        }
        return true;
    case H_ACC:
    case H_ARRAY:
        if (!T(ptr)->acc) {
            fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                    "%s: %s is a scalar term, expected an array term", who,
                    name);
            return false;
        }
        if (kind == H_ARRAY && T(ptr)->atype->arity != 0) {
            fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                    "%s: %s is a tuple of %d arrays, expected one array", who,
                    name, T(ptr)->atype->arity);
            return false;
        }
        return true;
    case H_FUN:
    case H_FUN_OPEN:
    case H_AFUN:
    case H_AFUN_OPEN: {
        bool want_acc = kind == H_AFUN || kind == H_AFUN_OPEN;
        if (F(ptr)->acc != want_acc) {
            fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                    "%s: %s is %s function, expected %s function", who, name,
                    want_acc ? "a scalar" : "an array",
                    want_acc ? "an array" : "a scalar");
            return false;
        }
        if ((kind == H_FUN || kind == H_AFUN) && F(ptr)->body == NULL) {
            fe_fail(p, WEFT_ERR_INCOMPLETE,
                    "%s: %s is a function without a body (call %s first)", who,
                    name, want_acc ? "weft_afun_return" : "weft_fun_return");
            return false;
        }
        return true;
    }
    default: return true;
    }
}

/* Handles of two programs in one call: WEFT_ERR_PROGRAM_MISMATCH, naming
 * the first handle that is not of p (the program of the first handle), is
 * recorded in every program that the call's handles belong to (each
 * keeping its first error), so that neither can be compiled as if the call
 * had not been made (weft_map(f of B, a of A) fails both A and B).  When
 * every one of them is already in error, nothing new is recorded.  NULL. */
static void *mixed(weft_program *p, const char *who, int n, const hnd *h,
                   const hlist *l)
{
    char what[64] = "";
    for (int i = 0; i < n && what[0] == '\0'; i++) {
        weft_program *q = prog_of(h[i].kind, h[i].ptr);
        if (q != NULL && q != p) {
            snprintf(what, sizeof what, "argument %d", h[i].argno);
        }
    }
    for (int i = 0;
         l != NULL && l->items != NULL && i < l->n && what[0] == '\0'; i++) {
        weft_program *q = prog_of(l->kind, l->items[i]);
        if (q != NULL && q != p) {
            snprintf(what, sizeof what, "argument %d, entry %d", l->argno,
                     i + 1);
        }
    }
    char msg[FE_MSG_MAX];
    snprintf(msg, sizeof msg,
             "%s: %s belongs to another program than the "
             "call's first argument",
             who, what);
    for (int i = 0; i < n; i++) {
        weft_program *q = prog_of(h[i].kind, h[i].ptr);
        if (q != NULL && q->status == WEFT_OK) {
            fe_fail(q, WEFT_ERR_PROGRAM_MISMATCH, "%s", msg);
        }
    }
    for (int i = 0; l != NULL && l->items != NULL && i < l->n; i++) {
        weft_program *q = prog_of(l->kind, l->items[i]);
        if (q != NULL && q->status == WEFT_OK) {
            fe_fail(q, WEFT_ERR_PROGRAM_MISMATCH, "%s", msg);
        }
    }
    return NULL;
}

/* Whether some handle of the call belongs to a program other than p. */
static bool is_mixed(weft_program *p, int n, const hnd *h, const hlist *l)
{
    for (int i = 0; i < n; i++) {
        weft_program *q = prog_of(h[i].kind, h[i].ptr);
        if (q != NULL && q != p) {
            return true;
        }
    }
    for (int i = 0; l != NULL && l->items != NULL && i < l->n; i++) {
        weft_program *q = prog_of(l->kind, l->items[i]);
        if (q != NULL && q != p) {
            return true;
        }
    }
    return false;
}

/* Apply the sticky rules to a call's handles h[0..n-1] and list l (may be
 * NULL).  Returns the program, or NULL when the call must return NULL (the
 * error, if new, is recorded). */
static weft_program *enter(const char *who, int n, const hnd *h, const hlist *l)
{
    weft_program *p = NULL;
    for (int i = 0; i < n && p == NULL; i++) {
        p = prog_of(h[i].kind, h[i].ptr);
    }
    if (p == NULL && l != NULL && l->items != NULL) {
        for (int i = 0; i < l->n && p == NULL; i++) {
            p = prog_of(l->kind, l->items[i]);
        }
    }
    if (p == NULL) {
        int argno = n > 0 ? h[0].argno : (l != NULL ? l->argno : 1);
        for (int i = 0; i < n; i++) {
            if (h[i].ptr == NULL) {
                argno = h[i].argno;
                break;
            }
        }
        fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: argument %d is NULL", who, argno);
        return NULL;
    }
    if (is_mixed(p, n, h, l)) {
        return mixed(p, who, n, h, l);
    }
    if (p->status != WEFT_OK) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (h[i].ptr == NULL) {
            return fe_fail(p, WEFT_ERR_NULL_ARGUMENT, "%s: argument %d is NULL",
                           who, h[i].argno);
        }
    }
    if (l != NULL) {
        if (l->n > 0 && l->items == NULL) {
            return fe_fail(p, WEFT_ERR_NULL_ARGUMENT, "%s: argument %d is NULL",
                           who, l->argno);
        }
        for (int i = 0; i < l->n; i++) {
            if (l->items[i] == NULL) {
                return fe_fail(p, WEFT_ERR_NULL_ARGUMENT,
                               "%s: argument %d, entry %d is NULL", who,
                               l->argno, i + 1);
            }
        }
    }
    char name[48];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "argument %d", h[i].argno);
        if (!sort_ok(p, who, h[i].kind, h[i].ptr, name)) {
            return NULL;
        }
    }
    if (l != NULL) {
        for (int i = 0; i < l->n; i++) {
            snprintf(name, sizeof name, "argument %d, entry %d", l->argno,
                     i + 1);
            if (!sort_ok(p, who, l->kind, l->items[i], name)) {
                return NULL;
            }
        }
    }
    return p;
}

/* ---- small checks ------------------------------------------------------ */

/* The status for a value of type `have` where `want` is expected: two
 * index types differ only in rank. */
static weft_status mismatch(weft_type have, weft_type want)
{
    return fe_is_dim(have) && fe_is_dim(want) ? WEFT_ERR_RANK_MISMATCH
                                              : WEFT_ERR_TYPE_MISMATCH;
}

/* Argument argno (scalar term e) must have type want. */
static bool want_type(weft_program *p, const char *who, int argno,
                      const fe_term *e, weft_type want)
{
    if (e->type != want) {
        fe_fail(p, mismatch(e->type, want),
                "%s: argument %d has type %s, expected %s", who, argno,
                TN(p, e->type), TN(p, want));
        return false;
    }
    return true;
}

/* Argument argno (scalar term e, described as `what`) of an array
 * operation must not depend on a function argument. */
static bool no_arg(weft_program *p, const char *who, int argno,
                   const fe_term *e, const char *what)
{
    if (e->has_arg) {
        fe_fail(p, WEFT_ERR_SCOPE,
                "%s: the %s (argument %d) depends on a function argument "
                "(nested data parallelism is not supported)",
                who, what, argno);
        return false;
    }
    return true;
}

/* Argument argno must be a shape (an index type) that does not depend on a
 * function argument; its rank is stored in *rank. */
static bool want_shape(weft_program *p, const char *who, int argno,
                       const fe_term *sh, int *rank)
{
    if (!fe_is_dim(sh->type)) {
        fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                "%s: argument %d has type %s, expected a shape", who, argno,
                TN(p, sh->type));
        return false;
    }
    if (!no_arg(p, who, argno, sh, "shape")) {
        return false;
    }
    *rank = fe_dim_rank(sh->type);
    return true;
}

static bool rank_ok(weft_program *p, const char *who, int argno, int rank)
{
    if (rank < 0 || rank > WEFT_MAX_RANK) {
        fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                "%s: argument %d is rank %d, expected 0 to %d", who, argno,
                rank, WEFT_MAX_RANK);
        return false;
    }
    return true;
}

static bool type_ok(weft_program *p, const char *who, int argno, weft_type t)
{
    if (!fe_type_valid(p->ctx, t)) {
        fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                "%s: argument %d (%d) is not a valid type", who, argno, (int)t);
        return false;
    }
    return true;
}

/* Array argument argno must have rank 1 or more. */
static bool want_rank1(weft_program *p, const char *who, int argno,
                       const fe_term *a)
{
    if (a->rank < 1) {
        fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                "%s: argument %d has rank %d, expected rank 1 or more", who,
                argno, a->rank);
        return false;
    }
    return true;
}

/* Function argument fno must take `arity` arguments. */
static bool fun_arity(weft_program *p, const char *who, int fno,
                      const fe_fun *f, int arity)
{
    if (f->arity != arity) {
        fe_fail(p, WEFT_ERR_ARITY,
                "%s: argument %d is a function of %d argument%s, expected %d",
                who, fno, f->arity, f->arity == 1 ? "" : "s", arity);
        return false;
    }
    return true;
}

/* Argument i of function fno must have type want, which comes from builder
 * argument srcno (0: from nowhere in particular); `what` is "type" or
 * "element type". */
static bool fun_takes(weft_program *p, const char *who, int fno,
                      const fe_fun *f, int i, weft_type want, int srcno,
                      const char *what)
{
    weft_type have = f->targ[i];
    if (have == want) {
        return true;
    }
    if (srcno > 0) {
        fe_fail(p, mismatch(want, have),
                "%s: argument %d has %s %s, the function takes %s", who, srcno,
                what, TN(p, want), TN(p, have));
    } else {
        fe_fail(p, mismatch(have, want),
                "%s: argument %d takes %s as its argument %d, expected %s", who,
                fno, TN(p, have), i + 1, TN(p, want));
    }
    return false;
}

/* Function fno must return type want. */
static bool fun_returns(weft_program *p, const char *who, int fno,
                        const fe_fun *f, weft_type want)
{
    if (f->ret != want) {
        fe_fail(p, mismatch(f->ret, want),
                "%s: argument %d returns %s, expected %s", who, fno,
                TN(p, f->ret), TN(p, want));
        return false;
    }
    return true;
}

/* ---- making terms ------------------------------------------------------ */

/* Recompute t->has_arg from its kids. */
static void fix_arg(fe_term *t)
{
    if (t->kind == FE_ARG) {
        t->has_arg = true;
        return;
    }
    t->has_arg = false;
    for (int i = 0; i < t->nkid; i++) {
        if (t->kid[i] != NULL && t->kid[i]->has_arg) {
            t->has_arg = true;
        }
    }
}

/* A new term of p with nkid kids (copied from kid, or left NULL for the
 * caller to fill, who then calls fix_arg) and nfun functions. */
static fe_term *new_term(weft_program *p, const char *who, fe_kind kind,
                         int nkid, fe_term *const *kid, int nfun,
                         fe_fun *const *fun)
{
    fe_term *t = fe_arena_alloc(&p->arena, sizeof *t);
    fe_term **k = NULL;
    fe_fun **f = NULL;
    if (t != NULL && nkid > 0) {
        k = fe_arena_alloc(&p->arena, (size_t)nkid * sizeof *k);
    }
    if (t != NULL && nfun > 0) {
        f = fe_arena_alloc(&p->arena, (size_t)nfun * sizeof *f);
    }
    if (t == NULL || (nkid > 0 && k == NULL) || (nfun > 0 && f == NULL)) {
        return fe_fail_oom(p, who);
    }
    t->kind = (uint8_t)kind;
    t->acc = fe_kind_is_acc(kind);
    t->prog = p;
    t->id = p->next_id++;
    t->rank = 0;
    t->nkid = nkid;
    t->kid = k;
    t->nfun = nfun;
    t->fun = f;
    for (int i = 0; kid != NULL && i < nkid; i++) {
        k[i] = kid[i];
    }
    for (int i = 0; fun != NULL && i < nfun; i++) {
        f[i] = fun[i];
    }
    fix_arg(t);
    return t;
}

/* A scalar term of type `type`. */
static weft_exp *new_exp(weft_program *p, const char *who, fe_kind kind,
                         weft_type type, int nkid, fe_term *const *kid,
                         int nfun, fe_fun *const *fun)
{
    fe_term *t = new_term(p, who, kind, nkid, kid, nfun, fun);
    if (t == NULL) {
        return NULL;
    }
    t->type = type;
    return E(t);
}

/* Give array term t the array type at (one array or a tuple). */
static void set_atype(fe_term *t, const fe_atype *at)
{
    t->atype = at;
    t->type = at->arity == 0 ? at->elt : 0;
    t->rank = at->arity == 0 ? at->rank : -1;
}

/* An array term of one array of type elt and rank `rank`. */
static weft_acc *new_acc(weft_program *p, const char *who, fe_kind kind,
                         weft_type elt, int rank, int nkid, fe_term *const *kid,
                         int nfun, fe_fun *const *fun)
{
    const fe_atype *at = fe_atype_array(&p->arena, elt, rank);
    if (at == NULL) {
        return fe_fail_oom(p, who);
    }
    fe_term *t = new_term(p, who, kind, nkid, kid, nfun, fun);
    if (t == NULL) {
        return NULL;
    }
    set_atype(t, at);
    return A(t);
}

/* A scalar constant. */
static weft_exp *new_const(weft_program *p, const char *who, weft_type type,
                           fe_val v)
{
    fe_term *t = new_term(p, who, FE_CONST, 0, NULL, 0, NULL);
    if (t == NULL) {
        return NULL;
    }
    t->type = type;
    t->u.c = v;
    return E(t);
}

/* ---- functions --------------------------------------------------------- */

static weft_fun *make_fun(weft_program *p, const char *who, int arity,
                          const weft_type *types)
{
    if (arity < 1) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: a function needs at least one argument (arity "
                       "%d)",
                       who, arity);
    }
    for (int i = 0; i < arity; i++) {
        if (!fe_type_valid(p->ctx, types[i])) {
            return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                           "%s: the type of function argument %d (%d) is "
                           "not a valid type",
                           who, i + 1, (int)types[i]);
        }
    }
    fe_fun *f = fe_arena_alloc(&p->arena, sizeof *f);
    weft_type *targ = NULL;
    fe_term **arg = NULL;
    if (f != NULL) {
        targ = fe_arena_alloc(&p->arena, (size_t)arity * sizeof *targ);
        arg = fe_arena_alloc(&p->arena, (size_t)arity * sizeof *arg);
    }
    if (f == NULL || targ == NULL || arg == NULL) {
        return fe_fail_oom(p, who);
    }
    f->prog = p;
    f->acc = false;
    f->arity = arity;
    f->targ = targ;
    f->arg = arg;
    f->id = p->next_id++;
    for (int i = 0; i < arity; i++) {
        targ[i] = types[i];
        fe_term *t = new_term(p, who, FE_ARG, 0, NULL, 0, NULL);
        if (t == NULL) {
            return NULL;
        }
        t->type = types[i];
        t->u.arg.fun = f;
        t->u.arg.index = i;
        arg[i] = t;
    }
    return (weft_fun *)f;
}

weft_fun *weft_fun_create(weft_program *p, int arity,
                          const weft_type *arg_types)
{
    static const char who[] = "weft_fun_create";
    if (ENTER(who, HP(1, p)) == NULL) {
        return NULL;
    }
    if (arity > 0 && arg_types == NULL) {
        return fe_fail(p, WEFT_ERR_NULL_ARGUMENT, "%s: argument 3 is NULL",
                       who);
    }
    return make_fun(p, who, arity, arg_types);
}

weft_fun *weft_fun1(weft_program *p, weft_type a)
{
    if (ENTER("weft_fun1", HP(1, p)) == NULL) {
        return NULL;
    }
    return make_fun(p, "weft_fun1", 1, (weft_type[]){a});
}

weft_fun *weft_fun2(weft_program *p, weft_type a, weft_type b)
{
    if (ENTER("weft_fun2", HP(1, p)) == NULL) {
        return NULL;
    }
    return make_fun(p, "weft_fun2", 2, (weft_type[]){a, b});
}

weft_fun *weft_fun3(weft_program *p, weft_type a, weft_type b, weft_type c)
{
    if (ENTER("weft_fun3", HP(1, p)) == NULL) {
        return NULL;
    }
    return make_fun(p, "weft_fun3", 3, (weft_type[]){a, b, c});
}

weft_exp *weft_arg(weft_fun *f, int i)
{
    static const char who[] = "weft_arg";
    weft_program *p = ENTER(who, HO(1, f));
    if (p == NULL) {
        return NULL;
    }
    if (i < 0 || i >= F(f)->arity) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: argument 2 is %d, the function has %d "
                       "argument%s",
                       who, i, F(f)->arity, F(f)->arity == 1 ? "" : "s");
    }
    return E(F(f)->arg[i]);
}

/* Give open function f (array: an array function) its body, once
 * weft_fun_return or weft_afun_return has entered its program p (NULL:
 * entering failed, and the status is the program's error, else
 * WEFT_ERR_NULL_ARGUMENT). */
static weft_status fun_body(weft_program *p, const char *who, fe_fun *f,
                            fe_term *body, bool array)
{
    if (p == NULL) {
        weft_program *q =
            f != NULL ? f->prog : (body != NULL ? body->prog : NULL);
        return q != NULL && q->status != WEFT_OK ? q->status
                                                 : WEFT_ERR_NULL_ARGUMENT;
    }
    if (f->body != NULL) {
        fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                "%s: the function already has a body", who);
        return p->status;
    }
    f->body = body;
    if (array) {
        f->aret = body->atype;
    } else {
        f->ret = body->type;
    }
    return WEFT_OK;
}

weft_status weft_fun_return(weft_fun *f, weft_exp *body)
{
    static const char who[] = "weft_fun_return";
    weft_program *p = ENTER(who, HO(1, f), HE(2, body));
    return fun_body(p, who, F(f), T(body), false);
}

int weft_fun_arity(const weft_fun *f)
{
    return f == NULL ? 0 : F(f)->arity;
}

weft_exp *weft_apply(weft_fun *f, weft_exp *const *args)
{
    static const char who[] = "weft_apply";
    int n = f != NULL ? F(f)->arity : 0;
    hlist l = {H_EXP, 2, n, (fe_term *const *)args};
    weft_program *p = ENTER_LIST(who, &l, HF(1, f));
    if (p == NULL) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        weft_type have = T(args[i])->type, want = F(f)->targ[i];
        if (have != want) {
            return fe_fail(p, mismatch(have, want),
                           "%s: argument 2, entry %d has type %s, the "
                           "function takes %s",
                           who, i + 1, TN(p, have), TN(p, want));
        }
    }
    return new_exp(p, who, FE_APPLY, F(f)->ret, n, (fe_term *const *)args, 1,
                   (fe_fun *[]){F(f)});
}

static weft_afun *make_afun(weft_program *p, const char *who,
                            const fe_atype *at)
{
    fe_fun *f = fe_arena_alloc(&p->arena, sizeof *f);
    fe_term **arg = f != NULL ? fe_arena_alloc(&p->arena, sizeof *arg) : NULL;
    if (f == NULL || arg == NULL) {
        return fe_fail_oom(p, who);
    }
    f->prog = p;
    f->acc = true;
    f->arity = 1;
    f->atarg = at;
    f->arg = arg;
    f->id = p->next_id++;
    fe_term *t = new_term(p, who, FE_AARG, 0, NULL, 0, NULL);
    if (t == NULL) {
        return NULL;
    }
    set_atype(t, at);
    t->u.arg.fun = f;
    t->u.arg.index = 0;
    arg[0] = t;
    return (weft_afun *)f;
}

weft_afun *weft_afun_create(weft_program *p, weft_type type, int rank)
{
    static const char who[] = "weft_afun_create";
    if (ENTER(who, HP(1, p)) == NULL) {
        return NULL;
    }
    if (!type_ok(p, who, 2, type) || !rank_ok(p, who, 3, rank)) {
        return NULL;
    }
    const fe_atype *at = fe_atype_array(&p->arena, type, rank);
    if (at == NULL) {
        return fe_fail_oom(p, who);
    }
    return make_afun(p, who, at);
}

weft_afun *weft_afun_like(weft_acc *like)
{
    static const char who[] = "weft_afun_like";
    weft_program *p = ENTER(who, HT(1, like));
    if (p == NULL) {
        return NULL;
    }
    return make_afun(p, who, T(like)->atype);
}

weft_acc *weft_afun_arg(weft_afun *f)
{
    if (ENTER("weft_afun_arg", HGO(1, f)) == NULL) {
        return NULL;
    }
    return A(F(f)->arg[0]);
}

weft_status weft_afun_return(weft_afun *f, weft_acc *body)
{
    static const char who[] = "weft_afun_return";
    weft_program *p = ENTER(who, HGO(1, f), HT(2, body));
    return fun_body(p, who, F(f), T(body), true);
}

/* ---- constants --------------------------------------------------------- */

/* Constants of each scalar type: the value is held as fe_val holds it. */
#define CONST_BUILDER(fn, ctype, wtype, field, expr)                           \
    weft_exp *fn(weft_program *p, ctype v)                                     \
    {                                                                          \
        if (ENTER(#fn, HP(1, p)) == NULL) {                                    \
            return NULL;                                                       \
        }                                                                      \
        fe_val c;                                                              \
        c.u = 0;                                                               \
        c.field = (expr);                                                      \
        return new_const(p, #fn, wtype, c);                                    \
    }

CONST_BUILDER(weft_bool, int, WEFT_BOOL, u, v != 0)
CONST_BUILDER(weft_i8, int8_t, WEFT_I8, i, v)
CONST_BUILDER(weft_i16, int16_t, WEFT_I16, i, v)
CONST_BUILDER(weft_i32, int32_t, WEFT_I32, i, v)
CONST_BUILDER(weft_i64, int64_t, WEFT_I64, i, v)
CONST_BUILDER(weft_u8, uint8_t, WEFT_U8, u, v)
CONST_BUILDER(weft_u16, uint16_t, WEFT_U16, u, v)
CONST_BUILDER(weft_u32, uint32_t, WEFT_U32, u, v)
CONST_BUILDER(weft_u64, uint64_t, WEFT_U64, u, v)
CONST_BUILDER(weft_f16, float, WEFT_F16, f,
              fe_half_to_float(fe_half_from_double(v)))
CONST_BUILDER(weft_f16_bits, uint16_t, WEFT_F16, f, fe_half_to_float(v))
CONST_BUILDER(weft_f32, float, WEFT_F32, f, (double)v)
CONST_BUILDER(weft_f64, double, WEFT_F64, f, v)

weft_exp *weft_const(weft_program *p, weft_type t, const void *value)
{
    static const char who[] = "weft_const";
    if (ENTER(who, HP(1, p), HR(3, value)) == NULL) {
        return NULL;
    }
    if (!fe_is_scalar(t)) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: argument 2 (%d) is not a scalar type", who, (int)t);
    }
    fe_val v = fe_load(t, value, 0);
    if (t == WEFT_BOOL) {
        v.u = v.u != 0;
    }
    return new_const(p, who, t, v);
}

/* ---- primitives -------------------------------------------------------- */

static bool is_op(weft_op op)
{
    return (unsigned)op < (unsigned)WEFT_OP_COUNT_;
}

/* Operand k (1-based) of op must satisfy ok(type); `what` names the
 * class for the message. */
static bool operand_in(weft_program *p, const char *who, weft_op op, int k,
                       weft_type t, bool ok, const char *what)
{
    if (!ok) {
        fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                "%s: operand %d of %s has type %s, expected %s", who, k,
                weft_op_name(op), TN(p, t), what);
        return false;
    }
    return true;
}

/* The result type of the untyped primitive op applied to a[0..arity-1], or
 * 0 (error recorded). */
static weft_type prim_type(weft_program *p, const char *who, weft_op op,
                           fe_term *const *a)
{
    const fe_prim_info *pi = &fe_prims[op];
    weft_type t0 = a[0]->type;
    weft_type t1 = pi->arity == 2 ? a[1]->type : 0;
    bool ok0, ok1;
    const char *what;
    weft_type result = t0;
    bool same = true;
    switch (pi->rule) {
    case FE_RULE_NUM:
        ok0 = fe_is_numeric(t0);
        what = "a numeric type";
        break;
    case FE_RULE_INT:
        ok0 = fe_is_int(t0);
        what = "an integral type";
        break;
    case FE_RULE_ORD:
        ok0 = fe_is_numeric(t0) || t0 == WEFT_BOOL;
        what = "a numeric type or bool";
        break;
    case FE_RULE_LOGIC:
        ok0 = fe_is_int(t0) || t0 == WEFT_BOOL;
        what = "an integral type or bool";
        break;
    case FE_RULE_FLT:
        ok0 = fe_is_float(t0);
        what = "a floating type";
        break;
    case FE_RULE_SHIFT:
        ok0 = fe_is_int(t0);
        what = "an integral type";
        same = false;
        break;
    case FE_RULE_BITS:
        ok0 = fe_is_int(t0);
        what = "an integral type";
        result = WEFT_I32;
        break;
    case FE_RULE_FPRED:
        ok0 = fe_is_float(t0);
        what = "a floating type";
        result = WEFT_BOOL;
        break;
    case FE_RULE_CMP:
        ok0 = fe_is_scalar(t0);
        what = "a scalar type";
        result = WEFT_BOOL;
        break;
    case FE_RULE_BOOL:
        ok0 = t0 == WEFT_BOOL;
        what = "bool";
        break;
    default:
        fe_fail(p, WEFT_ERR_INVALID_ARGUMENT, "%s: %s needs a result type", who,
                weft_op_name(op));
        return 0;
    }
    if (!operand_in(p, who, op, 1, t0, ok0, what)) {
        return 0;
    }
    if (pi->arity == 2) {
        if (same) {
            if (t1 != t0) {
                fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                        "%s: operand 2 of %s has type %s, operand 1 has type "
                        "%s",
                        who, weft_op_name(op), TN(p, t1), TN(p, t0));
                return 0;
            }
        } else {
            ok1 = fe_is_int(t1);
            if (!operand_in(p, who, op, 2, t1, ok1, "an integral type")) {
                return 0;
            }
        }
    }
    return result;
}

/* Check an untyped op (valid, not T) for arity n and build it on the
 * entered operands a[0..n-1]. */
static weft_exp *prim_build(weft_program *p, const char *who, weft_op op, int n,
                            fe_term *const *a)
{
    if (!is_op(op)) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: %d is not a primitive operation", who, (int)op);
    }
    if (fe_prims[op].typed) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: %s takes a result type; use weft_%s", who,
                       weft_op_name(op), weft_op_name(op));
    }
    if (fe_prims[op].arity != n) {
        return fe_fail(p, WEFT_ERR_ARITY, "%s: %s takes %d operand%s, given %d",
                       who, weft_op_name(op), fe_prims[op].arity,
                       fe_prims[op].arity == 1 ? "" : "s", n);
    }
    weft_type t = prim_type(p, who, op, a);
    if (t == 0) {
        return NULL;
    }
    fe_term *r = T(new_exp(p, who, FE_PRIM, t, n, a, 0, NULL));
    if (r != NULL) {
        r->op = (uint16_t)op;
    }
    return E(r);
}

weft_exp *weft_prim(weft_op op, weft_exp *const *args)
{
    static const char who[] = "weft_prim";
    if (args == NULL) {
        fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: argument 2 is NULL", who);
        return NULL;
    }
    int n = is_op(op) ? fe_prims[op].arity : 1;
    hlist l = {H_EXP, 2, n, (fe_term *const *)args};
    weft_program *p = enter(who, 0, NULL, &l);
    if (p == NULL) {
        return NULL;
    }
    return prim_build(p, who, op, n, (fe_term *const *)args);
}

weft_exp *weft_prim1(weft_op op, weft_exp *a)
{
    weft_program *p = ENTER("weft_prim1", HE(2, a));
    if (p == NULL) {
        return NULL;
    }
    return prim_build(p, "weft_prim1", op, 1, (fe_term *[]){T(a)});
}

weft_exp *weft_prim2(weft_op op, weft_exp *a, weft_exp *b)
{
    weft_program *p = ENTER("weft_prim2", HE(2, a), HE(3, b));
    if (p == NULL) {
        return NULL;
    }
    return prim_build(p, "weft_prim2", op, 2, (fe_term *[]){T(a), T(b)});
}

/* What the operand and the result type of a primitive with a result type
 * must be, by its type rule (and how the messages name them). */
typedef struct typed_rule {
    bool (*from_ok)(weft_type);
    const char *from;
    bool (*to_ok)(weft_type);
    const char *to;
    bool same_bits; /* a bitcast: as wide as each other */
} typed_rule;

static const typed_rule typed_rules[] = {
    [FE_RULE_ROUND] = {.from_ok = fe_is_float,
                       .from = "a floating",
                       .to_ok = fe_is_int,
                       .to = "an integral"},
    [FE_RULE_CONV] = {.from_ok = fe_is_scalar,
                      .from = "a scalar",
                      .to_ok = fe_is_scalar,
                      .to = "a scalar"},
    [FE_RULE_CAST] = {.from_ok = fe_is_numeric,
                      .from = "a numeric",
                      .to_ok = fe_is_numeric,
                      .to = "a numeric",
                      .same_bits = true},
};

/* A primitive with a result type (rules ROUND, CONV, CAST). */
static weft_exp *typed_build(const char *who, weft_op op, weft_exp *x,
                             weft_type to)
{
    weft_program *p = ENTER(who, HE(1, x));
    if (p == NULL) {
        return NULL;
    }
    weft_type from = T(x)->type;
    if (!type_ok(p, who, 2, to)) {
        return NULL;
    }
    const typed_rule *rule = &typed_rules[fe_prims[op].rule];
    if (!rule->from_ok(from)) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 1 has type %s, expected %s type", who,
                       TN(p, from), rule->from);
    }
    if (!rule->to_ok(to)) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 2 is %s, expected %s type", who, TN(p, to),
                       rule->to);
    }
    if (rule->same_bits && fe_type_bits(from) != fe_type_bits(to)) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: %s has %d bits, %s has %d", who, TN(p, from),
                       fe_type_bits(from), TN(p, to), fe_type_bits(to));
    }
    fe_term *r =
        T(new_exp(p, who, FE_PRIM, to, 1, (fe_term *[]){T(x)}, 0, NULL));
    if (r != NULL) {
        r->op = (uint16_t)op;
    }
    return E(r);
}

/* One builder per primitive of weft_ops.h: weft_add(a, b), weft_sqrt(x),
 * ...: the untyped ones weft_prim with their op, the typed ones
 * (weft_floor(x, to), weft_convert(x, to), ...) typed_build; their
 * messages name them. */
#define OP_DEF_1(name, lower)                                                  \
    weft_exp *weft_##lower(weft_exp *a)                                        \
    {                                                                          \
        weft_program *p = ENTER("weft_" #lower, HE(1, a));                     \
        if (p == NULL) {                                                       \
            return NULL;                                                       \
        }                                                                      \
        return prim_build(p, "weft_" #lower, WEFT_OP_##name, 1,                \
                          (fe_term *[]){T(a)});                                \
    }
#define OP_DEF_2(name, lower)                                                  \
    weft_exp *weft_##lower(weft_exp *a, weft_exp *b)                           \
    {                                                                          \
        weft_program *p = ENTER("weft_" #lower, HE(1, a), HE(2, b));           \
        if (p == NULL) {                                                       \
            return NULL;                                                       \
        }                                                                      \
        return prim_build(p, "weft_" #lower, WEFT_OP_##name, 2,                \
                          (fe_term *[]){T(a), T(b)});                          \
    }
#define OP_DEF_T(name, lower)                                                  \
    weft_exp *weft_##lower(weft_exp *x, weft_type to)                          \
    {                                                                          \
        return typed_build("weft_" #lower, WEFT_OP_##name, x, to);             \
    }
#define WEFT_OP(name, lower, arity, rule) OP_DEF_##arity(name, lower)
#include "weft_ops.h"
#undef WEFT_OP
#undef OP_DEF_1
#undef OP_DEF_2
#undef OP_DEF_T

/* ---- other scalar terms ------------------------------------------------ */

weft_exp *weft_cond(weft_exp *c, weft_exp *t, weft_exp *e)
{
    static const char who[] = "weft_cond";
    weft_program *p = ENTER(who, HE(1, c), HE(2, t), HE(3, e));
    if (p == NULL || !want_type(p, who, 1, T(c), WEFT_BOOL)) {
        return NULL;
    }
    if (T(e)->type != T(t)->type) {
        return fe_fail(p, mismatch(T(e)->type, T(t)->type),
                       "%s: argument 3 has type %s, argument 2 has type %s",
                       who, TN(p, T(e)->type), TN(p, T(t)->type));
    }
    return new_exp(p, who, FE_COND, T(t)->type, 3,
                   (fe_term *[]){T(c), T(t), T(e)}, 0, NULL);
}

weft_exp *weft_tuple(weft_program *p, int n, weft_exp *const *components)
{
    static const char who[] = "weft_tuple";
    hlist l = {H_EXP, 3, n > 0 ? n : 0, (fe_term *const *)components};
    if (ENTER_LIST(who, &l, HP(1, p)) == NULL) {
        return NULL;
    }
    if (n < 0) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: argument 2 is %d, a tuple has 0 (the unit) or "
                       "more components",
                       who, n);
    }
    weft_type *types =
        fe_arena_alloc(&p->arena, (size_t)(n + 1) * sizeof *types);
    if (types == NULL) {
        return fe_fail_oom(p, who);
    }
    for (int i = 0; i < n; i++) {
        types[i] = T(components[i])->type;
    }
    weft_type tt;
    weft_status s = fe_type_tuple(p->ctx, n, types, &tt);
    if (s != WEFT_OK) {
        if (s == WEFT_ERR_OUT_OF_MEMORY) {
            return fe_fail_oom(p, who);
        }
        return fe_fail(p, s, "%s: %s", who, weft_last_error());
    }
    return new_exp(p, who, FE_TUPLE, tt, n, (fe_term *const *)components, 0,
                   NULL);
}

weft_exp *weft_get(weft_exp *tuple, int i)
{
    static const char who[] = "weft_get";
    weft_program *p = ENTER(who, HE(1, tuple));
    if (p == NULL) {
        return NULL;
    }
    const weft_type *comps;
    weft_type tt = T(tuple)->type;
    int n = fe_is_tuple(tt) || fe_is_dim(tt) ? fe_type_comps(p->ctx, tt, &comps)
                                             : 0;
    if (!fe_is_tuple(tt) && !fe_is_dim(tt)) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 1 has type %s, expected a tuple or an "
                       "index",
                       who, TN(p, tt));
    }
    if (i < 0 || i >= n) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: argument 2 is %d, %s has %d component%s", who, i,
                       TN(p, tt), n, n == 1 ? "" : "s");
    }
    fe_term *r = T(
        new_exp(p, who, FE_GET, comps[i], 1, (fe_term *[]){T(tuple)}, 0, NULL));
    if (r != NULL) {
        r->u.index = i;
    }
    return E(r);
}

/* An index (FE_TUPLE of type DIM(n)) from n entered components: entries
 * of list argument argno, or (argno 0) the call's arguments 1..n. */
static weft_exp *make_index(weft_program *p, const char *who, int argno, int n,
                            fe_term *const *comps)
{
    for (int i = 0; i < n; i++) {
        if (comps[i]->type != WEFT_I64) {
            if (argno > 0) {
                return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                               "%s: argument %d, entry %d has type %s, "
                               "expected i64",
                               who, argno, i + 1, TN(p, comps[i]->type));
            }
            return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                           "%s: argument %d has type %s, expected i64", who,
                           i + 1, TN(p, comps[i]->type));
        }
    }
    return new_exp(p, who, FE_TUPLE, WEFT_DIM(n), n, comps, 0, NULL);
}

weft_exp *weft_index(weft_program *p, int rank, weft_exp *const *components)
{
    static const char who[] = "weft_index";
    int n = rank > 0 && rank <= WEFT_MAX_RANK ? rank : 0;
    hlist l = {H_EXP, 3, n, (fe_term *const *)components};
    if (ENTER_LIST(who, &l, HP(1, p)) == NULL) {
        return NULL;
    }
    if (!rank_ok(p, who, 2, rank)) {
        return NULL;
    }
    return make_index(p, who, 3, rank, (fe_term *const *)components);
}

weft_exp *weft_index1(weft_exp *i)
{
    weft_program *p = ENTER("weft_index1", HE(1, i));
    if (p == NULL) {
        return NULL;
    }
    return make_index(p, "weft_index1", 0, 1, (fe_term *[]){T(i)});
}

weft_exp *weft_index2(weft_exp *i, weft_exp *j)
{
    weft_program *p = ENTER("weft_index2", HE(1, i), HE(2, j));
    if (p == NULL) {
        return NULL;
    }
    return make_index(p, "weft_index2", 0, 2, (fe_term *[]){T(i), T(j)});
}

static weft_exp *make_shape(weft_program *p, const char *who, fe_term *a)
{
    return new_exp(p, who, FE_SHAPE, WEFT_DIM(a->rank), 1, (fe_term *[]){a}, 0,
                   NULL);
}

weft_exp *weft_shape(weft_acc *a)
{
    weft_program *p = ENTER("weft_shape", HA(1, a));
    if (p == NULL) {
        return NULL;
    }
    return make_shape(p, "weft_shape", T(a));
}

static weft_exp *make_size(weft_program *p, const char *who, fe_term *a)
{
    fe_term *sh = T(make_shape(p, who, a));
    if (sh == NULL) {
        return NULL;
    }
    return new_exp(p, who, FE_SHAPE_SIZE, WEFT_I64, 1, (fe_term *[]){sh}, 0,
                   NULL);
}

weft_exp *weft_size(weft_acc *a)
{
    weft_program *p = ENTER("weft_size", HA(1, a));
    if (p == NULL) {
        return NULL;
    }
    return make_size(p, "weft_size", T(a));
}

weft_exp *weft_shape_size(weft_exp *sh)
{
    static const char who[] = "weft_shape_size";
    weft_program *p = ENTER(who, HE(1, sh));
    if (p == NULL) {
        return NULL;
    }
    if (!fe_is_dim(T(sh)->type)) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 1 has type %s, expected a shape", who,
                       TN(p, T(sh)->type));
    }
    return new_exp(p, who, FE_SHAPE_SIZE, WEFT_I64, 1, (fe_term *[]){T(sh)}, 0,
                   NULL);
}

weft_exp *weft_to_index(weft_exp *sh, weft_exp *ix)
{
    static const char who[] = "weft_to_index";
    weft_program *p = ENTER(who, HE(1, sh), HE(2, ix));
    if (p == NULL) {
        return NULL;
    }
    if (!fe_is_dim(T(sh)->type)) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 1 has type %s, expected a shape", who,
                       TN(p, T(sh)->type));
    }
    if (!want_type(p, who, 2, T(ix), T(sh)->type)) {
        return NULL;
    }
    return new_exp(p, who, FE_TO_INDEX, WEFT_I64, 2,
                   (fe_term *[]){T(sh), T(ix)}, 0, NULL);
}

weft_exp *weft_from_index(weft_exp *sh, weft_exp *i)
{
    static const char who[] = "weft_from_index";
    weft_program *p = ENTER(who, HE(1, sh), HE(2, i));
    if (p == NULL) {
        return NULL;
    }
    if (!fe_is_dim(T(sh)->type)) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 1 has type %s, expected a shape", who,
                       TN(p, T(sh)->type));
    }
    if (!want_type(p, who, 2, T(i), WEFT_I64)) {
        return NULL;
    }
    return new_exp(p, who, FE_FROM_INDEX, T(sh)->type, 2,
                   (fe_term *[]){T(sh), T(i)}, 0, NULL);
}

weft_exp *weft_at(weft_acc *a, weft_exp *ix)
{
    static const char who[] = "weft_at";
    weft_program *p = ENTER(who, HA(1, a), HE(2, ix));
    if (p == NULL || !want_type(p, who, 2, T(ix), WEFT_DIM(T(a)->rank))) {
        return NULL;
    }
    return new_exp(p, who, FE_AT, T(a)->type, 2, (fe_term *[]){T(a), T(ix)}, 0,
                   NULL);
}

weft_exp *weft_at_linear(weft_acc *a, weft_exp *i)
{
    static const char who[] = "weft_at_linear";
    weft_program *p = ENTER(who, HA(1, a), HE(2, i));
    if (p == NULL || !want_type(p, who, 2, T(i), WEFT_I64)) {
        return NULL;
    }
    return new_exp(p, who, FE_AT_LINEAR, T(a)->type, 2,
                   (fe_term *[]){T(a), T(i)}, 0, NULL);
}

weft_exp *weft_the(weft_acc *a)
{
    static const char who[] = "weft_the";
    weft_program *p = ENTER(who, HA(1, a));
    if (p == NULL) {
        return NULL;
    }
    if (T(a)->rank != 0) {
        return fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                       "%s: argument 1 has rank %d, expected rank 0", who,
                       T(a)->rank);
    }
    fe_term *z = T(new_exp(p, who, FE_TUPLE, WEFT_DIM(0), 0, NULL, 0, NULL));
    if (z == NULL) {
        return NULL;
    }
    return new_exp(p, who, FE_AT, T(a)->type, 2, (fe_term *[]){T(a), z}, 0,
                   NULL);
}

weft_exp *weft_while(weft_fun *cond, weft_fun *body, weft_exp *init)
{
    static const char who[] = "weft_while";
    weft_program *p = ENTER(who, HF(1, cond), HF(2, body), HE(3, init));
    if (p == NULL) {
        return NULL;
    }
    weft_type t = T(init)->type;
    if (!fun_arity(p, who, 1, F(cond), 1) ||
        !fun_arity(p, who, 2, F(body), 1) ||
        !fun_takes(p, who, 1, F(cond), 0, t, 3, "type") ||
        !fun_returns(p, who, 1, F(cond), WEFT_BOOL) ||
        !fun_takes(p, who, 2, F(body), 0, t, 3, "type") ||
        !fun_returns(p, who, 2, F(body), t)) {
        return NULL;
    }
    return new_exp(p, who, FE_WHILE, t, 1, (fe_term *[]){T(init)}, 2,
                   (fe_fun *[]){F(cond), F(body)});
}

weft_exp *weft_all(weft_program *p)
{
    if (ENTER("weft_all", HP(1, p)) == NULL) {
        return NULL;
    }
    return new_exp(p, "weft_all", FE_ALL, 0, 0, NULL, 0, NULL);
}

weft_exp *weft_ignore(weft_program *p, int rank)
{
    if (ENTER("weft_ignore", HP(1, p)) == NULL ||
        !rank_ok(p, "weft_ignore", 2, rank)) {
        return NULL;
    }
    return new_exp(p, "weft_ignore", FE_IGNORE, WEFT_DIM(rank), 0, NULL, 0,
                   NULL);
}

/* ---- term queries ------------------------------------------------------ */

weft_program *weft_acc_program(const weft_acc *a)
{
    return a == NULL ? NULL : T(a)->prog;
}

weft_program *weft_exp_program(const weft_exp *e)
{
    return e == NULL ? NULL : T(e)->prog;
}

weft_type weft_acc_type(const weft_acc *a)
{
    return a == NULL ? 0 : T(a)->type;
}

int weft_acc_rank(const weft_acc *a)
{
    return a == NULL ? -1 : T(a)->rank;
}

int weft_acc_arity(const weft_acc *a)
{
    if (a == NULL) {
        return 0;
    }
    return T(a)->atype->arity == 0 ? 1 : T(a)->atype->arity;
}

weft_type weft_exp_type(const weft_exp *e)
{
    return e == NULL ? 0 : T(e)->type;
}

/* ---- array terms: helpers ---------------------------------------------- */

/* An array term of type at (one array or a tuple). */
static weft_acc *new_acc_at(weft_program *p, const char *who, fe_kind kind,
                            const fe_atype *at, int nkid, fe_term *const *kid,
                            int nfun, fe_fun *const *fun)
{
    if (at == NULL) {
        return fe_fail_oom(p, who);
    }
    fe_term *t = new_term(p, who, kind, nkid, kid, nfun, fun);
    if (t == NULL) {
        return NULL;
    }
    set_atype(t, at);
    return A(t);
}

/* Compare two array types: WEFT_OK when equal, WEFT_ERR_TYPE_MISMATCH when
 * an element type or the tuple structure differs, WEFT_ERR_RANK_MISMATCH
 * when only ranks differ. */
static weft_status atype_cmp(const fe_atype *x, const fe_atype *y)
{
    if (x->arity != y->arity) {
        return WEFT_ERR_TYPE_MISMATCH;
    }
    if (x->arity == 0) {
        if (x->elt != y->elt) {
            return WEFT_ERR_TYPE_MISMATCH;
        }
        return x->rank != y->rank ? WEFT_ERR_RANK_MISMATCH : WEFT_OK;
    }
    weft_status worst = WEFT_OK;
    for (int i = 0; i < x->arity; i++) {
        weft_status s = atype_cmp(x->comp[i], y->comp[i]);
        if (s == WEFT_ERR_TYPE_MISMATCH) {
            return s;
        }
        if (s != WEFT_OK) {
            worst = s;
        }
    }
    return worst;
}

/* Room for one more element in the growable array v (n used, *cap
 * allocated, elements of elt bytes).  Returns the buffer, moved or not, or
 * NULL on allocation failure (v is then unchanged). */
static void *grow(weft_context *ctx, void *v, int *cap, int n, size_t elt)
{
    if (n < *cap) {
        return v;
    }
    int nc = *cap > 0 ? 2 * *cap : 8;
    void *nv = fe_realloc(ctx, v, (size_t)*cap * elt, (size_t)nc * elt);
    if (nv != NULL) {
        *cap = nc;
    }
    return nv;
}

/* ---- leaves: use, param, unit ------------------------------------------ */

weft_acc *weft_use(weft_program *p, weft_array *a)
{
    static const char who[] = "weft_use";
    if (ENTER(who, HP(1, p), HR(2, a)) == NULL) {
        return NULL;
    }
    if (a->ctx != p->ctx) {
        return fe_fail(p, WEFT_ERR_PROGRAM_MISMATCH,
                       "%s: argument 2 belongs to another context", who);
    }
    weft_array **uses =
        grow(p->ctx, p->uses, &p->cap_use, p->nuse, sizeof *uses);
    if (uses == NULL) {
        return fe_fail_oom(p, who);
    }
    p->uses = uses;
    fe_term *t = T(new_acc(p, who, FE_USE, a->type, a->rank, 0, NULL, 0, NULL));
    if (t == NULL) {
        return NULL;
    }
    weft_array_retain(a);
    t->u.array = a;
    p->uses[p->nuse++] = a;
    return A(t);
}

weft_acc *weft_param(weft_program *p, weft_type type, int rank)
{
    static const char who[] = "weft_param";
    if (ENTER(who, HP(1, p)) == NULL || !type_ok(p, who, 2, type) ||
        !rank_ok(p, who, 3, rank)) {
        return NULL;
    }
    fe_term **params =
        grow(p->ctx, p->params, &p->cap_param, p->nparam, sizeof *params);
    if (params == NULL) {
        return fe_fail_oom(p, who);
    }
    p->params = params;
    fe_term *t = T(new_acc(p, who, FE_PARAM, type, rank, 0, NULL, 0, NULL));
    if (t == NULL) {
        return NULL;
    }
    t->u.index = p->nparam;
    p->params[p->nparam++] = t;
    return A(t);
}

weft_acc *weft_unit(weft_exp *e)
{
    static const char who[] = "weft_unit";
    weft_program *p = ENTER(who, HE(1, e));
    if (p == NULL || !no_arg(p, who, 1, T(e), "value")) {
        return NULL;
    }
    return new_acc(p, who, FE_UNIT, T(e)->type, 0, 1, (fe_term *[]){T(e)}, 0,
                   NULL);
}

/* ---- producers ----------------------------------------------------------- */

weft_acc *weft_generate(weft_exp *sh, weft_fun *f)
{
    static const char who[] = "weft_generate";
    weft_program *p = ENTER(who, HE(1, sh), HF(2, f));
    int n;
    if (p == NULL || !want_shape(p, who, 1, T(sh), &n) ||
        !fun_arity(p, who, 2, F(f), 1) ||
        !fun_takes(p, who, 2, F(f), 0, T(sh)->type, 1, "type")) {
        return NULL;
    }
    return new_acc(p, who, FE_GENERATE, F(f)->ret, n, 1, (fe_term *[]){T(sh)},
                   1, (fe_fun *[]){F(f)});
}

/* map and zipWith: f applied to n arrays (arguments 2..n+1). */
static weft_acc *zip(const char *who, weft_program *p, fe_fun *f, int n,
                     fe_term *const *a)
{
    if (p == NULL || !fun_arity(p, who, 1, f, n)) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!fun_takes(p, who, 1, f, i, a[i]->type, i + 2, "element type")) {
            return NULL;
        }
    }
    for (int i = 1; i < n; i++) {
        if (a[i]->rank != a[0]->rank) {
            return fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                           "%s: argument %d has rank %d, argument 2 has rank "
                           "%d",
                           who, i + 2, a[i]->rank, a[0]->rank);
        }
    }
    return new_acc(p, who, n == 1 ? FE_MAP : FE_ZIPWITH, f->ret, a[0]->rank, n,
                   a, 1, (fe_fun *[]){f});
}

weft_acc *weft_map(weft_fun *f, weft_acc *a)
{
    weft_program *p = ENTER("weft_map", HF(1, f), HA(2, a));
    return zip("weft_map", p, F(f), 1, (fe_term *[]){T(a)});
}

weft_acc *weft_zipwith(weft_fun *f, weft_acc *a, weft_acc *b)
{
    weft_program *p = ENTER("weft_zipwith", HF(1, f), HA(2, a), HA(3, b));
    return zip("weft_zipwith", p, F(f), 2, (fe_term *[]){T(a), T(b)});
}

weft_acc *weft_zipwith3(weft_fun *f, weft_acc *a, weft_acc *b, weft_acc *c)
{
    weft_program *p =
        ENTER("weft_zipwith3", HF(1, f), HA(2, a), HA(3, b), HA(4, c));
    return zip("weft_zipwith3", p, F(f), 3, (fe_term *[]){T(a), T(b), T(c)});
}

static weft_acc *make_reshape(weft_program *p, const char *who, fe_term *sh,
                              fe_term *a)
{
    return new_acc(p, who, FE_RESHAPE, a->type, fe_dim_rank(sh->type), 2,
                   (fe_term *[]){sh, a}, 0, NULL);
}

weft_acc *weft_reshape(weft_exp *sh, weft_acc *a)
{
    static const char who[] = "weft_reshape";
    weft_program *p = ENTER(who, HE(1, sh), HA(2, a));
    int n;
    if (p == NULL || !want_shape(p, who, 1, T(sh), &n)) {
        return NULL;
    }
    return make_reshape(p, who, T(sh), T(a));
}

/* Entry i of specification list argument argno: weft_all, or an i64 index
 * or extent that does not depend on a function argument.  A constant
 * negative slice index is refused at once. */
static bool spec_ok(weft_program *p, const char *who, int argno, int i,
                    const fe_term *e, bool slice)
{
    if (e->kind == FE_ALL) {
        return true;
    }
    if (e->type != WEFT_I64) {
        fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                "%s: argument %d, entry %d has type %s, expected i64 or "
                "weft_all",
                who, argno, i + 1, TN(p, e->type));
        return false;
    }
    if (e->has_arg) {
        fe_fail(p, WEFT_ERR_SCOPE,
                "%s: argument %d, entry %d depends on a function argument "
                "(nested data parallelism is not supported)",
                who, argno, i + 1);
        return false;
    }
    if (slice && e->kind == FE_CONST && e->u.c.i < 0) {
        fe_fail(p, WEFT_ERR_SLICE_INDEX,
                "%s: argument %d, entry %d is the index %lld, below 0", who,
                argno, i + 1, (long long)e->u.c.i);
        return false;
    }
    return true;
}

/* replicate and slice: kid[0] the array, then the n entries of spec. */
static weft_acc *spec_op(weft_program *p, const char *who, fe_kind kind,
                         int argno, int n, weft_exp *const *spec, fe_term *a,
                         int rank)
{
    fe_term *kid[1 + WEFT_MAX_RANK];
    kid[0] = a;
    for (int i = 0; i < n; i++) {
        if (!spec_ok(p, who, argno, i, T(spec[i]), kind == FE_SLICE)) {
            return NULL;
        }
        kid[1 + i] = T(spec[i]);
    }
    return new_acc(p, who, kind, a->type, rank, 1 + n, kid, 0, NULL);
}

static int count_all(int n, weft_exp *const *spec)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        k += T(spec[i])->kind == FE_ALL;
    }
    return k;
}

weft_acc *weft_replicate(int n, weft_exp *const *spec, weft_acc *a)
{
    static const char who[] = "weft_replicate";
    hlist l = {H_SPEC, 2, n > 0 && n <= WEFT_MAX_RANK ? n : 0,
               (fe_term *const *)spec};
    weft_program *p = ENTER_LIST(who, &l, HA(3, a));
    if (p == NULL) {
        return NULL;
    }
    if (n < 0 || n > WEFT_MAX_RANK) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: argument 1 is %d, expected 0 to %d", who, n,
                       WEFT_MAX_RANK);
    }
    int k = count_all(n, spec);
    if (k != T(a)->rank) {
        return fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                       "%s: argument 2 has %d weft_all entr%s, argument 3 "
                       "has rank %d",
                       who, k, k == 1 ? "y" : "ies", T(a)->rank);
    }
    return spec_op(p, who, FE_REPLICATE, 2, n, spec, T(a), n);
}

weft_acc *weft_slice(weft_acc *a, int n, weft_exp *const *spec)
{
    static const char who[] = "weft_slice";
    hlist l = {H_SPEC, 3, n > 0 && n <= WEFT_MAX_RANK ? n : 0,
               (fe_term *const *)spec};
    weft_program *p = ENTER_LIST(who, &l, HA(1, a));
    if (p == NULL) {
        return NULL;
    }
    if (n != T(a)->rank) {
        return fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                       "%s: argument 2 is %d, argument 1 has rank %d", who, n,
                       T(a)->rank);
    }
    return spec_op(p, who, FE_SLICE, 3, n, spec, T(a), count_all(n, spec));
}

/* backpermute and transform: ix (argument 2) maps the result's index,
 * DIM(rank sh), to an index of a, DIM(rank a). */
static bool ix_ok(weft_program *p, const char *who, const fe_term *sh,
                  fe_fun *ix, const fe_term *a)
{
    return fun_arity(p, who, 2, ix, 1) &&
           fun_takes(p, who, 2, ix, 0, sh->type, 1, "type") &&
           fun_returns(p, who, 2, ix, WEFT_DIM(a->rank));
}

weft_acc *weft_backpermute(weft_exp *sh, weft_fun *ix, weft_acc *a)
{
    static const char who[] = "weft_backpermute";
    weft_program *p = ENTER(who, HE(1, sh), HF(2, ix), HA(3, a));
    int n;
    if (p == NULL || !want_shape(p, who, 1, T(sh), &n) ||
        !ix_ok(p, who, T(sh), F(ix), T(a))) {
        return NULL;
    }
    return new_acc(p, who, FE_BACKPERMUTE, T(a)->type, n, 2,
                   (fe_term *[]){T(sh), T(a)}, 1, (fe_fun *[]){F(ix)});
}

weft_acc *weft_transform(weft_exp *sh, weft_fun *ix, weft_fun *f, weft_acc *a)
{
    static const char who[] = "weft_transform";
    weft_program *p = ENTER(who, HE(1, sh), HF(2, ix), HF(3, f), HA(4, a));
    int n;
    if (p == NULL || !want_shape(p, who, 1, T(sh), &n) ||
        !ix_ok(p, who, T(sh), F(ix), T(a)) || !fun_arity(p, who, 3, F(f), 1) ||
        !fun_takes(p, who, 3, F(f), 0, T(a)->type, 4, "element type")) {
        return NULL;
    }
    return new_acc(p, who, FE_TRANSFORM, F(f)->ret, n, 2,
                   (fe_term *[]){T(sh), T(a)}, 2, (fe_fun *[]){F(ix), F(f)});
}

/* ---- reductions and scans ---------------------------------------------- */

static bool has_seed(fe_kind k)
{
    return k == FE_FOLD || k == FE_FOLD_SEG || k == FE_SCANL ||
           k == FE_SCANL_ || k == FE_SCANR || k == FE_SCANR_;
}

static bool has_seg(fe_kind k)
{
    return k == FE_FOLD_SEG || k == FE_FOLD1_SEG;
}

/* A fold or scan of kind k on entered, sorted arguments: f (argument 1),
 * seed z (argument 2, NULL when k has none), a (argument `ano`), and seg
 * (argument ano + 1, NULL unless segmented: lengths or offsets by form). */
static weft_acc *reduce(weft_program *p, const char *who, fe_kind k, fe_fun *f,
                        fe_term *z, fe_term *a, int ano, fe_term *seg,
                        fe_seg_form form)
{
    weft_type elt = a->type;
    if (!want_rank1(p, who, ano, a) || !fun_arity(p, who, 1, f, 2) ||
        !fun_takes(p, who, 1, f, 0, elt, ano, "element type") ||
        !fun_takes(p, who, 1, f, 1, elt, ano, "element type") ||
        !fun_returns(p, who, 1, f, elt)) {
        return NULL;
    }
    if (z != NULL &&
        (!want_type(p, who, 2, z, elt) || !no_arg(p, who, 2, z, "seed"))) {
        return NULL;
    }
    if (seg != NULL) {
        if (!fe_is_int(seg->type)) {
            return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                           "%s: argument %d has element type %s, expected "
                           "an integral type",
                           who, ano + 1, TN(p, seg->type));
        }
        if (seg->rank != 1) {
            return fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                           "%s: argument %d has rank %d, expected rank 1", who,
                           ano + 1, seg->rank);
        }
    }
    fe_term *kid[3];
    int nkid = 0;
    if (z != NULL) {
        kid[nkid++] = z;
    }
    kid[nkid++] = a;
    if (seg != NULL) {
        kid[nkid++] = seg;
    }
    int rank = k == FE_FOLD || k == FE_FOLD1 ? a->rank - 1 : a->rank;
    const fe_atype *at;
    if (k == FE_SCANL_ || k == FE_SCANR_) {
        const fe_atype *c[2] = {fe_atype_array(&p->arena, elt, a->rank),
                                fe_atype_array(&p->arena, elt, a->rank - 1)};
        at = c[0] != NULL && c[1] != NULL ? fe_atype_tuple(&p->arena, 2, c)
                                          : NULL;
    } else {
        at = fe_atype_array(&p->arena, elt, rank);
    }
    weft_acc *r = new_acc_at(p, who, k, at, nkid, kid, 1, (fe_fun *[]){f});
    if (r != NULL) {
        T(r)->op = (uint16_t)form;
    }
    return r;
}

/* The public folds and scans: enter, then reduce. */
static weft_acc *reduce_call(const char *who, fe_kind k, weft_fun *f,
                             weft_exp *z, weft_acc *a, weft_acc *seg,
                             fe_seg_form form)
{
    hnd h[4];
    int n = 0;
    h[n++] = (hnd)HF(1, f);
    if (has_seed(k)) {
        h[n++] = (hnd)HE(2, z);
    }
    int ano = n + 1;
    h[n++] = (hnd)HA(ano, a);
    if (has_seg(k)) {
        h[n++] = (hnd)HA(ano + 1, seg);
    }
    weft_program *p = enter(who, n, h, NULL);
    if (p == NULL) {
        return NULL;
    }
    return reduce(p, who, k, F(f), has_seed(k) ? T(z) : NULL, T(a), ano,
                  has_seg(k) ? T(seg) : NULL, form);
}

/* The public folds and scans without segments, a line each: those with
 * a seed take z. */
#define REDUCE_SEEDED(fn, kind)                                                \
    weft_acc *fn(weft_fun *f, weft_exp *z, weft_acc *a)                        \
    {                                                                          \
        return reduce_call(#fn, kind, f, z, a, NULL, FE_SEG_LENGTHS);          \
    }
#define REDUCE_UNSEEDED(fn, kind)                                              \
    weft_acc *fn(weft_fun *f, weft_acc *a)                                     \
    {                                                                          \
        return reduce_call(#fn, kind, f, NULL, a, NULL, FE_SEG_LENGTHS);       \
    }

REDUCE_SEEDED(weft_fold, FE_FOLD)
REDUCE_UNSEEDED(weft_fold1, FE_FOLD1)
REDUCE_SEEDED(weft_scanl, FE_SCANL)
REDUCE_UNSEEDED(weft_scanl1, FE_SCANL1)
REDUCE_SEEDED(weft_scanl_, FE_SCANL_)
REDUCE_SEEDED(weft_scanr, FE_SCANR)
REDUCE_UNSEEDED(weft_scanr1, FE_SCANR1)
REDUCE_SEEDED(weft_scanr_, FE_SCANR_)
#undef REDUCE_SEEDED
#undef REDUCE_UNSEEDED

weft_acc *weft_fold_seg(weft_fun *f, weft_exp *z, weft_acc *a, weft_acc *seg)
{
    return reduce_call("weft_fold_seg", FE_FOLD_SEG, f, z, a, seg,
                       FE_SEG_LENGTHS);
}

weft_acc *weft_fold1_seg(weft_fun *f, weft_acc *a, weft_acc *seg)
{
    return reduce_call("weft_fold1_seg", FE_FOLD1_SEG, f, NULL, a, seg,
                       FE_SEG_LENGTHS);
}

weft_acc *weft_fold_seg_offsets(weft_fun *f, weft_exp *z, weft_acc *a,
                                weft_acc *off)
{
    return reduce_call("weft_fold_seg_offsets", FE_FOLD_SEG, f, z, a, off,
                       FE_SEG_OFFSETS);
}

weft_acc *weft_fold1_seg_offsets(weft_fun *f, weft_acc *a, weft_acc *off)
{
    return reduce_call("weft_fold1_seg_offsets", FE_FOLD1_SEG, f, NULL, a, off,
                       FE_SEG_OFFSETS);
}

/* fold_all and fold1_all: fold (kind k) of reshape (index1 (size a)) a. */
static weft_acc *fold_all(const char *who, fe_kind k, weft_fun *f, weft_exp *z,
                          weft_acc *a)
{
    weft_program *p = k == FE_FOLD ? ENTER(who, HF(1, f), HE(2, z), HA(3, a))
                                   : ENTER(who, HF(1, f), HA(2, a));
    if (p == NULL) {
        return NULL;
    }
    fe_term *size = T(make_size(p, who, T(a)));
    fe_term *sh = size != NULL ? T(make_index(p, who, 0, 1, &size)) : NULL;
    fe_term *flat = sh != NULL ? T(make_reshape(p, who, sh, T(a))) : NULL;
    if (flat == NULL) {
        return NULL;
    }
    return reduce(p, who, k, F(f), k == FE_FOLD ? T(z) : NULL, flat,
                  k == FE_FOLD ? 3 : 2, NULL, FE_SEG_LENGTHS);
}

weft_acc *weft_fold_all(weft_fun *f, weft_exp *z, weft_acc *a)
{
    return fold_all("weft_fold_all", FE_FOLD, f, z, a);
}

weft_acc *weft_fold1_all(weft_fun *f, weft_acc *a)
{
    return fold_all("weft_fold1_all", FE_FOLD1, f, NULL, a);
}

/* ---- permute and stencils ---------------------------------------------- */

weft_acc *weft_permute(weft_fun *f, weft_acc *def, weft_fun *ix, weft_acc *src)
{
    static const char who[] = "weft_permute";
    weft_program *p = ENTER(who, HF(1, f), HA(2, def), HF(3, ix), HA(4, src));
    if (p == NULL) {
        return NULL;
    }
    weft_type elt = T(def)->type;
    if (T(src)->type != elt) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 4 has element type %s, argument 2 has "
                       "element type %s",
                       who, TN(p, T(src)->type), TN(p, elt));
    }
    if (!fun_arity(p, who, 1, F(f), 2) ||
        !fun_takes(p, who, 1, F(f), 0, elt, 4, "element type") ||
        !fun_takes(p, who, 1, F(f), 1, elt, 2, "element type") ||
        !fun_returns(p, who, 1, F(f), elt) || !fun_arity(p, who, 3, F(ix), 1) ||
        !fun_takes(p, who, 3, F(ix), 0, WEFT_DIM(T(src)->rank), 0, "type") ||
        !fun_returns(p, who, 3, F(ix), WEFT_DIM(T(def)->rank))) {
        return NULL;
    }
    return new_acc(p, who, FE_PERMUTE, elt, T(def)->rank, 2,
                   (fe_term *[]){T(def), T(src)}, 2, (fe_fun *[]){F(f), F(ix)});
}

/* Check one stencil input: array a (argument ano, rank 1..3), window w
 * (argument wno), boundary b (argument bno).  Stores the window and the
 * boundary in st at slot k, the boundary value term (or NULL) in *value
 * and the window's element count in *count. */
static bool stencil_input(weft_program *p, const char *who, int ano,
                          const fe_term *a, int wno, const int *w, int bno,
                          weft_boundary b, fe_stencil_info *st, int k,
                          fe_term **value, int *count)
{
    if (a->rank < 1 || a->rank > 3) {
        fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                "%s: argument %d has rank %d, a stencil needs rank 1 to 3", who,
                ano, a->rank);
        return false;
    }
    if (w == NULL) {
        fe_fail(p, WEFT_ERR_NULL_ARGUMENT, "%s: argument %d is NULL", who, wno);
        return false;
    }
    *count = 1;
    for (int d = 0; d < a->rank; d++) {
        if (w[d] != 3 && w[d] != 5 && w[d] != 7 && w[d] != 9) {
            fe_fail(p, WEFT_ERR_STENCIL_WINDOW,
                    "%s: argument %d, entry %d is %d, expected a window of "
                    "3, 5, 7 or 9",
                    who, wno, d + 1, w[d]);
            return false;
        }
        st->window[k][d] = w[d];
        *count *= w[d];
    }
    if ((unsigned)b.kind > (unsigned)WEFT_BOUNDARY_CONSTANT) {
        fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                "%s: argument %d has boundary kind %d, expected clamp, "
                "mirror, wrap or constant",
                who, bno, (int)b.kind);
        return false;
    }
    st->bnd[k] = b.kind;
    *value = NULL;
    if (b.kind != WEFT_BOUNDARY_CONSTANT) {
        return true;
    }
    const fe_term *v = T(b.value);
    if (v == NULL) {
        fe_fail(p, WEFT_ERR_NULL_ARGUMENT,
                "%s: argument %d is a constant boundary without a value", who,
                bno);
        return false;
    }
    if (v->prog != p) {
        fe_fail(p, WEFT_ERR_PROGRAM_MISMATCH,
                "%s: the value of argument %d belongs to another program", who,
                bno);
        if (v->prog != NULL) {
            fe_fail(v->prog, WEFT_ERR_PROGRAM_MISMATCH,
                    "%s: the value of argument %d belongs to another "
                    "program",
                    who, bno);
        }
        return false;
    }
    char name[48];
    snprintf(name, sizeof name, "the value of argument %d", bno);
    if (!sort_ok(p, who, H_EXP, v, name)) {
        return false;
    }
    if (v->type != a->type) {
        fe_fail(p, mismatch(v->type, a->type),
                "%s: the value of argument %d has type %s, argument %d has "
                "element type %s",
                who, bno, TN(p, v->type), ano, TN(p, a->type));
        return false;
    }
    if (!no_arg(p, who, bno, v, "boundary value")) {
        return false;
    }
    *value = T(b.value);
    return true;
}

/* The stencil function (argument 1) takes count elements of type elt from
 * its argument `from` on (the window of argument ano). */
static bool stencil_fun(weft_program *p, const char *who, const fe_fun *f,
                        int from, int count, weft_type elt, int ano)
{
    for (int i = from; i < from + count; i++) {
        if (!fun_takes(p, who, 1, f, i, elt, ano, "element type")) {
            return false;
        }
    }
    return true;
}

weft_acc *weft_stencil(weft_fun *f, const int *window, weft_boundary b,
                       weft_acc *a)
{
    static const char who[] = "weft_stencil";
    weft_program *p = ENTER(who, HF(1, f), HA(4, a));
    if (p == NULL) {
        return NULL;
    }
    fe_stencil_info st;
    memset(&st, 0, sizeof st);
    fe_term *value;
    int count;
    if (!stencil_input(p, who, 4, T(a), 2, window, 3, b, &st, 0, &value,
                       &count)) {
        return NULL;
    }
    if (F(f)->arity != count) {
        return fe_fail(p, WEFT_ERR_ARITY,
                       "%s: argument 1 takes %d arguments, the window has "
                       "%d elements",
                       who, F(f)->arity, count);
    }
    if (!stencil_fun(p, who, F(f), 0, count, T(a)->type, 4)) {
        return NULL;
    }
    fe_term *t = T(new_acc(p, who, FE_STENCIL, F(f)->ret, T(a)->rank, 2,
                           (fe_term *[]){T(a), value}, 1, (fe_fun *[]){F(f)}));
    if (t != NULL) {
        t->u.st = st;
    }
    return A(t);
}

weft_acc *weft_stencil2(weft_fun *f, const int *window1, weft_boundary b1,
                        weft_acc *a1, const int *window2, weft_boundary b2,
                        weft_acc *a2)
{
    static const char who[] = "weft_stencil2";
    weft_program *p = ENTER(who, HF(1, f), HA(4, a1), HA(7, a2));
    if (p == NULL) {
        return NULL;
    }
    fe_stencil_info st;
    memset(&st, 0, sizeof st);
    fe_term *v1, *v2;
    int n1, n2;
    if (!stencil_input(p, who, 4, T(a1), 2, window1, 3, b1, &st, 0, &v1, &n1) ||
        !stencil_input(p, who, 7, T(a2), 5, window2, 6, b2, &st, 1, &v2, &n2)) {
        return NULL;
    }
    if (T(a2)->rank != T(a1)->rank) {
        return fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                       "%s: argument 7 has rank %d, argument 4 has rank %d",
                       who, T(a2)->rank, T(a1)->rank);
    }
    if (F(f)->arity != n1 + n2) {
        return fe_fail(p, WEFT_ERR_ARITY,
                       "%s: argument 1 takes %d arguments, the windows have "
                       "%d + %d elements",
                       who, F(f)->arity, n1, n2);
    }
    if (!stencil_fun(p, who, F(f), 0, n1, T(a1)->type, 4) ||
        !stencil_fun(p, who, F(f), n1, n2, T(a2)->type, 7)) {
        return NULL;
    }
    fe_term *t =
        T(new_acc(p, who, FE_STENCIL2, F(f)->ret, T(a1)->rank, 4,
                  (fe_term *[]){T(a1), v1, T(a2), v2}, 1, (fe_fun *[]){F(f)}));
    if (t != NULL) {
        t->u.st = st;
    }
    return A(t);
}

/* ---- control flow and tuples of arrays --------------------------------- */

weft_acc *weft_acond(weft_exp *c, weft_acc *t, weft_acc *e)
{
    static const char who[] = "weft_acond";
    weft_program *p = ENTER(who, HE(1, c), HT(2, t), HT(3, e));
    if (p == NULL || !want_type(p, who, 1, T(c), WEFT_BOOL) ||
        !no_arg(p, who, 1, T(c), "condition")) {
        return NULL;
    }
    weft_status s = atype_cmp(T(e)->atype, T(t)->atype);
    if (s != WEFT_OK) {
        return fe_fail(p, s,
                       "%s: argument 3 has type %s, argument 2 has "
                       "type %s",
                       who, ATN(p, T(e)->atype), ATN(p, T(t)->atype));
    }
    return new_acc_at(p, who, FE_ACOND, T(t)->atype, 3,
                      (fe_term *[]){T(c), T(t), T(e)}, 0, NULL);
}

weft_acc *weft_awhile(weft_afun *cond, weft_afun *body, weft_acc *init)
{
    static const char who[] = "weft_awhile";
    weft_program *p = ENTER(who, HG(1, cond), HG(2, body), HT(3, init));
    if (p == NULL) {
        return NULL;
    }
    const fe_atype *at = T(init)->atype;
    const fe_fun *fc = F(cond), *fb = F(body);
    weft_status s = atype_cmp(at, fc->atarg);
    if (s != WEFT_OK) {
        return fe_fail(p, s,
                       "%s: argument 3 has type %s, argument 1 takes "
                       "%s",
                       who, ATN(p, at), ATN(p, fc->atarg));
    }
    if (fc->aret->arity != 0 || fc->aret->elt != WEFT_BOOL) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 1 returns %s, expected a rank-0 bool "
                       "array",
                       who, ATN(p, fc->aret));
    }
    if (fc->aret->rank != 0) {
        return fe_fail(p, WEFT_ERR_RANK_MISMATCH,
                       "%s: argument 1 returns %s, expected a rank-0 bool "
                       "array",
                       who, ATN(p, fc->aret));
    }
    s = atype_cmp(at, fb->atarg);
    if (s != WEFT_OK) {
        return fe_fail(p, s,
                       "%s: argument 3 has type %s, argument 2 takes "
                       "%s",
                       who, ATN(p, at), ATN(p, fb->atarg));
    }
    s = atype_cmp(fb->aret, at);
    if (s != WEFT_OK) {
        return fe_fail(p, s,
                       "%s: argument 2 returns %s, argument 3 has "
                       "type %s",
                       who, ATN(p, fb->aret), ATN(p, at));
    }
    return new_acc_at(p, who, FE_AWHILE, at, 1, (fe_term *[]){T(init)}, 2,
                      (fe_fun *[]){F(cond), F(body)});
}

weft_acc *weft_atuple(weft_program *p, int n, weft_acc *const *components)
{
    static const char who[] = "weft_atuple";
    hlist l = {H_ACC, 3, n > 0 ? n : 0, (fe_term *const *)components};
    if (ENTER_LIST(who, &l, HP(1, p)) == NULL) {
        return NULL;
    }
    if (n < 1) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: argument 2 is %d, a tuple needs at least one "
                       "component",
                       who, n);
    }
    const fe_atype **c = fe_arena_alloc(&p->arena, (size_t)n * sizeof *c);
    if (c == NULL) {
        return fe_fail_oom(p, who);
    }
    for (int i = 0; i < n; i++) {
        c[i] = T(components[i])->atype;
    }
    return new_acc_at(p, who, FE_ATUPLE, fe_atype_tuple(&p->arena, n, c), n,
                      (fe_term *const *)components, 0, NULL);
}

weft_acc *weft_aget(weft_acc *tuple, int i)
{
    static const char who[] = "weft_aget";
    weft_program *p = ENTER(who, HT(1, tuple));
    if (p == NULL) {
        return NULL;
    }
    const fe_atype *at = T(tuple)->atype;
    if (at->arity == 0) {
        return fe_fail(p, WEFT_ERR_TYPE_MISMATCH,
                       "%s: argument 1 is one array, expected a tuple of "
                       "arrays",
                       who);
    }
    if (i < 0 || i >= at->arity) {
        return fe_fail(p, WEFT_ERR_INVALID_ARGUMENT,
                       "%s: argument 2 is %d, the tuple has %d arrays", who, i,
                       at->arity);
    }
    fe_term *t = T(new_acc_at(p, who, FE_AGET, at->comp[i], 1,
                              (fe_term *[]){T(tuple)}, 0, NULL));
    if (t != NULL) {
        t->u.index = i;
    }
    return A(t);
}
