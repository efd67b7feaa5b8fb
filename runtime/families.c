/*
 * runtime/families.c: kernels that differ only in their constants share
 * one compiled kernel (issue 21, "many kernels").
 *
 * Generated programs repeat one operation many times with a different
 * constant each time: a traced loop `for i: out[i] = map (* i) xs` makes
 * n kernels whose code differs in one immediate.  Each is a kernel of its
 * own to the code generators, and LLVM costs about 3 ms of CPU for even
 * the smallest (its pipeline's analyses and the code generator are per
 * function: runtime-cpu/jit.c, "Many kernels"), so 10^5 of them took
 * minutes.  This pass, run by rt_plan on every compiled backend before the
 * kernels are prepared, finds such families and takes their constants out
 * of the code:
 *
 *     map (\y -> y * 7) xs   =>   let c = 7 in map (\y -> y * c) xs
 *
 * (several constants: one let of a tuple of them, read by projections).
 * The let is host code that the interpreter's walk evaluates at run time;
 * inside the kernel, c is a free variable of the operation's function,
 * which sk_prepare passes in the argument block and sk_describe names by
 * its place in the layout, not by its value.  So every member of the
 * family has the same description, the same cache key, and the backend
 * compiles one kernel (the others find it in the JIT's table).
 *
 * A kernel here is a kernel root of the plan: an operation with a
 * skeleton that its consumer does not compute inline, with the delayed
 * producers fused into it.  Its shape is a hash of its terms with the
 * values of the constants inside its functions (the code) left out; the
 * values outside functions (host-evaluated operands, such as a fold's
 * initial value when the host passes it) are kept, which only makes a
 * family smaller.  Constants are lifted only where it pays and costs
 * little:
 *   - the family has at least FAMILY_MIN members and their constants are
 *     not all equal (equal ones share a key already);
 *   - the kernel's functions are small (FAMILY_MAX_TERMS terms) with at
 *     most FAMILY_MAX_CONSTS numeric constants: a constant that becomes a
 *     variable costs a register and the folds LLVM would have done with
 *     it, which is nothing next to a small kernel's memory traffic but
 *     could matter in a large arithmetic one;
 *   - numeric constants only (booleans stay: they decide branches).
 * The shape hash ignores which variable a term names, so two kernels of
 * one family may still differ in their code; they then get two keys, as
 * they would have anyway, and lose only the folding of their constants.
 *
 * Functions are copied before their constants are replaced (a scalar term
 * may be shared between functions); the operation and its delayed
 * producers, used once in the core, get the copies.  Variables bound
 * inside a copied function keep their identity: the copy replaces the
 * original in the only kernel that reads it.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

/* Members that make a family worth lifting. */
#define FAMILY_MIN 16
/* Numeric constants one kernel may have lifted, at most. */
#define FAMILY_MAX_CONSTS 16
/* Terms in a kernel's functions, at most. */
#define FAMILY_MAX_TERMS 256

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* What the scan of one kernel found. */
typedef struct scan {
    uint64_t shape;  /* the terms, constants in functions by type only */
    uint64_t values; /* those constants' values */
    int nconst;
    int nterm; /* terms in functions */
} scan;

static bool liftable(const fe_term *t)
{
    return t->kind == FE_CONST && fe_is_numeric(t->type);
}

static void scan_term(scan *s, const fe_term *t, bool in_fun, bool top)
{
    if (!t) {
        s->shape = mix(s->shape, 0x6e756c6c);
        return;
    }
    if (in_fun && ++s->nterm > FAMILY_MAX_TERMS) {
        return;
    }
    s->shape = mix(s->shape, (uint64_t)t->kind << 48 ^ (uint64_t)t->op << 32 ^
                                 (uint64_t)t->type);
    s->shape =
        mix(s->shape, (uint64_t)(uint32_t)t->rank << 32 ^
                          (uint64_t)t->nkid << 16 ^ (uint64_t)t->nfun ^
                          (uint64_t)t->acc << 60 ^ (uint64_t)t->delayed << 61);
    if (t->acc && !t->delayed && !top) {
        /* a manifest operand: an argument, whatever computes it */
        return;
    }
    switch ((fe_kind)t->kind) {
    case FE_CONST:
        if (in_fun && liftable(t)) {
            s->nconst++;
            s->values = mix(s->values, t->u.c.u);
        } else {
            s->shape = mix(s->shape, t->u.c.u);
        }
        break;
    case FE_GET:
    case FE_AGET:
    case FE_PARAM: s->shape = mix(s->shape, (uint64_t)t->u.index); break;
    case FE_USE:
        s->shape = mix(s->shape, (uint64_t)(uintptr_t)t->u.array);
        break;
    case FE_STENCIL:
    case FE_STENCIL2: {
        const int *w = &t->u.st.window[0][0];
        for (int i = 0; i < 6; i++) {
            s->shape = mix(s->shape, (uint64_t)w[i]);
        }
        s->shape = mix(s->shape, (uint64_t)t->u.st.bnd[0] << 8 ^
                                     (uint64_t)t->u.st.bnd[1]);
        break;
    }
    default: break;
    }
    for (int i = 0; i < t->nkid; i++) {
        scan_term(s, t->kid[i], in_fun, false);
    }
    for (int i = 0; i < t->nfun; i++) {
        scan_term(s, t->fun[i] ? t->fun[i]->body : NULL, true, false);
    }
}

/* ---- lifting ------------------------------------------------------------ */

typedef struct lift {
    fe_arena *ar;
    const fe_var *var; /* what the constants are read from */
    weft_type vtype;   /* its type: the constant's, or their tuple */
    int nconst;        /* > 1: var is a tuple */
    fe_term **consts;  /* the lifted constants, in order */
    int n;
    bool oom;
} lift;

static fe_term *new_term(lift *l, int kind, weft_type type, int nkid)
{
    fe_term *t = fe_arena_alloc(l->ar, sizeof *t);
    fe_term **kid =
        nkid ? fe_arena_alloc(l->ar, sizeof *kid * (size_t)nkid) : NULL;
    if (!t || (nkid && !kid)) {
        l->oom = true;
        return NULL;
    }
    t->kind = (uint8_t)kind;
    t->type = type;
    t->nkid = nkid;
    t->kid = kid;
    return t;
}

/* What replaces constant number i: the variable, or its component i. */
static fe_term *read_const(lift *l, const fe_term *c)
{
    fe_term *v = new_term(l, FE_VAR, l->vtype, 0);
    if (!v) {
        return NULL;
    }
    v->u.var = (fe_var *)l->var;
    if (l->nconst == 1) {
        return v;
    }
    fe_term *g = new_term(l, FE_GET, c->type, 1);
    if (!g) {
        return NULL;
    }
    g->kid[0] = v;
    g->u.index = l->n - 1;
    return g;
}

static void *grab(lift *l, size_t n)
{
    void *p = fe_arena_alloc(l->ar, n);
    if (!p) {
        l->oom = true;
    }
    return p;
}

static fe_fun **copy_funs(lift *l, fe_fun *const *fun, int n);

/* A copy of function term t with its numeric constants read from l->var
 * (recorded in l->consts, in order). */
static fe_term *copy_term(lift *l, const fe_term *t)
{
    if (!t || l->oom || t->acc) {
        return (fe_term *)t; /* an array a function reads: not its code */
    }
    if (liftable(t)) {
        l->consts[l->n++] = (fe_term *)t;
        return read_const(l, t);
    }
    fe_term *c = grab(l, sizeof *c);
    if (!c) {
        return NULL;
    }
    *c = *t;
    if (t->nkid && (c->kid = grab(l, sizeof *c->kid * (size_t)t->nkid))) {
        for (int i = 0; i < t->nkid; i++) {
            c->kid[i] = copy_term(l, t->kid[i]);
        }
    }
    if (t->nfun) {
        c->fun = copy_funs(l, t->fun, t->nfun);
    }
    return c;
}

/* Copies of functions fun[0 .. n-1], their bodies copied by copy_term. */
static fe_fun **copy_funs(lift *l, fe_fun *const *fun, int n)
{
    fe_fun **c = grab(l, sizeof *c * (size_t)n);
    for (int i = 0; c && i < n; i++) {
        c[i] = fun[i];
        if (fun[i] && (c[i] = grab(l, sizeof *c[i]))) {
            *c[i] = *fun[i];
            c[i]->body = copy_term(l, fun[i]->body);
        }
    }
    return c;
}

/* Give kernel root t (and the producers fused into it) copies of its
 * functions whose constants read l->var, in scan_term's order. */
static void lift_kernel(lift *l, fe_term *t, bool top)
{
    if (!t || l->oom || (t->acc && !t->delayed && !top)) {
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        if (t->kid[i] && t->kid[i]->acc) {
            lift_kernel(l, t->kid[i], false);
        }
    }
    if (t->nfun) {
        fe_fun **fun = copy_funs(l, t->fun, t->nfun);
        if (!l->oom) {
            t->fun = fun;
        }
    }
}

/* Collect the constants of kernel root t in lift_kernel's order, without
 * changing anything: scan_term visits kids before functions, and so does
 * lift_kernel, but scan_term also looks inside non-array kids (host
 * terms), which hold no function. */
static void count_consts(const fe_term *t, bool in_fun, bool top, lift *l)
{
    if (!t || (t->acc && !t->delayed && !top) || (!in_fun && !t->acc)) {
        return;
    }
    if (in_fun && liftable(t)) {
        l->consts[l->n++] = (fe_term *)t;
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        count_consts(t->kid[i], in_fun, false, l);
    }
    for (int i = 0; i < t->nfun; i++) {
        count_consts(t->fun[i] ? t->fun[i]->body : NULL, true, false, l);
    }
}

/* Lift the nconst constants of kernel root *slot: *slot becomes
 * `let v = (c0, c1, ...) in op`. */
static weft_status lift_one(weft_executable *exe, fe_term **slot, int nconst)
{
    fe_core *core = &exe->core;
    fe_term *consts[FAMILY_MAX_CONSTS];
    lift l = {.ar = core->arena, .consts = consts};
    count_consts(*slot, false, true, &l);
    if (l.n != nconst) {
        return WEFT_OK; /* the scan saw them differently: leave it */
    }
    weft_type types[FAMILY_MAX_CONSTS];
    for (int i = 0; i < nconst; i++) {
        types[i] = consts[i]->type;
    }
    weft_type vtype = types[0];
    if (nconst > 1) {
        weft_status s = fe_type_tuple(exe->ctx, nconst, types, &vtype);
        if (s != WEFT_OK) {
            return s;
        }
    }
    fe_var *v = fe_arena_alloc(core->arena, sizeof *v);
    if (!v) {
        return fe_oom("weft_compile");
    }
    v->type = vtype;
    l = (lift){.ar = core->arena,
               .var = v,
               .vtype = vtype,
               .nconst = nconst,
               .consts = consts};
    fe_term *op = *slot;
    fe_term *let = new_term(&l, FE_LET, op->type, 2);
    fe_term *val = nconst > 1 ? new_term(&l, FE_TUPLE, vtype, nconst) : NULL;
    if (let && !l.oom) {
        lift_kernel(&l, op, true);
    }
    if (l.oom || !let || l.n != nconst) {
        return fe_oom("weft_compile");
    }
    if (val) {
        for (int i = 0; i < nconst; i++) {
            val->kid[i] = consts[i];
        }
    }
    v->id = core->nvar++;
    let->acc = true;
    let->rank = op->rank;
    let->atype = op->atype;
    let->u.var = v;
    let->kid[0] = val ? val : consts[0];
    let->kid[1] = op;
    *slot = let;
    return WEFT_OK;
}

/* ---- families ----------------------------------------------------------- */

typedef struct family {
    uint64_t shape;
    uint64_t values; /* the first member's */
    int members;
    bool differ; /* a member's constants differ from the first's */
} family;

weft_status rt_families(weft_executable *exe, fe_term **const *slots, int n,
                        bool *lifted)
{
    *lifted = false;
    if (n < FAMILY_MIN) {
        return WEFT_OK;
    }
    fe_arena scratch;
    fe_arena_init(&scratch, exe->ctx);
    size_t cap = 64;
    while (cap < 2 * (size_t)n) {
        cap *= 2;
    }
    scan *sc = fe_arena_alloc(&scratch, sizeof *sc * (size_t)n);
    family *tab = fe_arena_alloc(&scratch, sizeof *tab * cap);
    int *fam = fe_arena_alloc(&scratch, sizeof *fam * (size_t)n);
    weft_status s = WEFT_OK;
    if (!sc || !tab || !fam) {
        s = fe_oom("weft_compile");
    }
    for (int i = 0; s == WEFT_OK && i < n; i++) {
        scan_term(&sc[i], *slots[i], false, true);
        fam[i] = -1;
        if (sc[i].nterm > FAMILY_MAX_TERMS || sc[i].nconst < 1 ||
            sc[i].nconst > FAMILY_MAX_CONSTS) {
            continue;
        }
        size_t h = (size_t)(sc[i].shape ^ sc[i].shape >> 29) & (cap - 1);
        while (tab[h].members && tab[h].shape != sc[i].shape) {
            h = (h + 1) & (cap - 1);
        }
        if (!tab[h].members) {
            tab[h].shape = sc[i].shape;
            tab[h].values = sc[i].values;
        } else if (tab[h].values != sc[i].values) {
            tab[h].differ = true;
        }
        tab[h].members++;
        fam[i] = (int)h;
    }
    for (int i = 0; s == WEFT_OK && i < n; i++) {
        const family *f = fam[i] >= 0 ? &tab[fam[i]] : NULL;
        if (f && f->members >= FAMILY_MIN && f->differ) {
            s = lift_one(exe, slots[i], sc[i].nconst);
            *lifted = true;
        }
    }
    fe_arena_release(&scratch);
    return s;
}
#endif /* WEFT_HAVE_LLVM */
