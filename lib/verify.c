/*
 * lib/verify.c: the checker of the core between passes (fe_verify).
 *
 * Needs: a core (from fe_share, or after any later pass).  Provides: a
 * verdict, nothing else: the core is only read.  weft_compile runs it
 * after sharing recovery and after every pass of lib/exec.c's list in a
 * debug build, and in any build when $WEFT_VERIFY=1 (fe_verify_enabled);
 * a broken core is a bug in weft, so the pipeline reports it as FE_CHECK
 * does (a debug build aborts with the check's file:line, a release build
 * fails the compile with WEFT_ERR_INTERNAL), naming the pass after which
 * it broke and the term.
 *
 * One recursive walk from the root checks, at every term:
 *   form     its kind is a core kind (no builder-only FE_ARG, FE_AARG,
 *            FE_APPLY; no term owned by a program), and its operands and
 *            functions are as many as lib/fe_kinds.h's kids and funs
 *            columns say (scalar kinds: as its type or primitive says);
 *   tree     no term is reached twice: the core is a tree, so a term
 *            reached again is shared or on a cycle (told apart).  A
 *            function may be shared (fuse.c copies a constant generate
 *            with its function) when every variable its body reads from
 *            outside it is in scope at each use;
 *   scope    every variable is bound once (a let or a function's
 *            parameter), has an id below core->nvar, and is used only
 *            inside its binder, with its binder's type;
 *   types    each kind's typing rule, as the builder (build.c) enforces it
 *            on the program: a map's function takes the operand's element
 *            type, a fold's combination is a -> a -> a of the element type
 *            and lowers the rank by one (after fusion a fold of rows may
 *            carry a second function, a -> b, b its element type: fuse.c's
 *            store rule), replicate and slice ranks count
 *            their specification's weft_all entries, a primitive's
 *            operands are in its rule's class (lib/fe_ops.h), lets and
 *            variables keep their right side's type, the root is a tuple
 *            of core->output's types;
 *   levels   an array operand of a scalar term is a variable, a used
 *            array, a parameter or a component of one of them (no array
 *            is computed inside a scalar function);
 *   fusion   `delayed` is set only on a one-array producer (the producer
 *            column) that is operand k of a consumer whose fusible column
 *            has bit k, and never when fusion is off.
 * A reshape's size is not checked: a wrong one is the program's error,
 * reported at run time (WEFT_ERR_RESHAPE_SIZE), not a broken core.
 *
 * Cost: linear in the core (a hash-set entry per term and function, a few
 * bytes per variable), run three times per compile.  Measured with
 * bench/compile_scaling.c on the interpreter, whose compile is the
 * frontend alone, at 100,000 steps (a shared, loaded 2-core machine, so
 * +-20%): compile 166 -> 290 ms (add), 633 -> 1060 ms (let), 583 -> 847 ms
 * (wide), 497 -> 813 ms (maps), 298 -> 610 ms (zipwith); on the CPU
 * backend, where LLVM's work dominates, within the noise (maps at 10,000:
 * 127 -> 175 ms; distinct at 10,000: 35.5 -> 37.3 s).  Hence off by
 * default in release builds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

/* A function's state in the walk, or an array of core->uses. */
enum { SEEN_OPEN = 1, SEEN_DONE, SEEN_USE };

/* A set of pointers (open addressing, linear probing, at most half full),
 * with a state and a word each where `state` is not NULL. */
typedef struct pset {
    const void **key;
    uint8_t *state;
    uint64_t *aux;
    size_t cap, n;
    int shift; /* 64 - log2(cap): the hash's top bits index */
} pset;

typedef struct verify {
    weft_context *ctx;
    const fe_core *core;
    fe_arena ar;
    pset terms; /* the terms met */
    pset objs;  /* functions (aux: the bindings made in them, visit_fun)
                   and core->uses */
    /* the terms from the root down to the one being visited */
    const fe_term **path;
    size_t depth, path_cap;
    /* variables by id */
    const fe_var **bound; /* the variable bound with this id, or NULL */
    uint8_t *in_scope;
    uint64_t *serial; /* when it was bound (in bindings so far) */
    uint64_t nbound;
    /* the term being checked and where it hangs */
    const fe_term *parent;
    int slot; /* operand number in parent; -1: a body or root */
    /* the first failure */
    char names[4][96]; /* type names for its message (tn) */
    int next_name;
    const char *file; /* the failed check's (NULL: none failed) */
    int line;
    char msg[FE_MSG_MAX - 80];
} verify;

/* The names of the scalar kinds (the array kinds' are fe_kinds[].name). */
static const char *const scalar_names[FE_USE] = {
    [FE_CONST] = "const",
    [FE_ARG] = "arg",
    [FE_VAR] = "var",
    [FE_PRIM] = "prim",
    [FE_COND] = "cond",
    [FE_TUPLE] = "tuple",
    [FE_GET] = "get",
    [FE_SHAPE] = "shape",
    [FE_SHAPE_SIZE] = "shape_size",
    [FE_TO_INDEX] = "to_index",
    [FE_FROM_INDEX] = "from_index",
    [FE_AT] = "at",
    [FE_AT_LINEAR] = "at_linear",
    [FE_WHILE] = "while",
    [FE_ALL] = "all",
    [FE_IGNORE] = "ignore",
    [FE_APPLY] = "apply",
    [FE_LET] = "let",
};

static const char *kind_name(int kind)
{
    if (kind >= 0 && kind < FE_USE) {
        return scalar_names[kind];
    }
    if (kind == FE_USE) {
        return "use";
    }
    if (kind == FE_PARAM) {
        return "param";
    }
    if (kind == FE_ATUPLE) {
        return "atuple";
    }
    return fe_acc_name(kind);
}

/* Record the first failure: `what` about term t (NULL: the core), at the
 * check's file and line.  Returns false. */
static bool broken(verify *v, const fe_term *t, const char *file, int line,
                   const char *fmt, ...) FE_PRINTF(5, 6);
static bool broken(verify *v, const fe_term *t, const char *file, int line,
                   const char *fmt, ...)
{
    if (v->file) {
        return false;
    }
    v->file = file;
    v->line = line;
    const fe_term *up = v->parent;
    size_t size = sizeof v->msg;
    int n = 0;
    if (t && up && v->slot >= 0) {
        n = snprintf(v->msg, size,
                     "%s #%u (operand %d of %s #%u): ", kind_name(t->kind),
                     t->id, v->slot, kind_name(up->kind), up->id);
    } else if (t && up) {
        n = snprintf(v->msg, size,
                     "%s #%u (a function body of %s #%u): ", kind_name(t->kind),
                     t->id, kind_name(up->kind), up->id);
    } else if (t) {
        n = snprintf(v->msg, size, "%s #%u: ", kind_name(t->kind), t->id);
    }
    if (n >= 0 && (size_t)n < size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->msg + n, size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* The name of type t, for a message ("f32", "DIM2"); four at a time. */
static const char *tn(verify *v, weft_type t)
{
    char *buf = v->names[v->next_name++ & 3];
    return fe_type_name(v->ctx, t, buf, sizeof v->names[0]);
}

/* Check cond about term t; on failure record the message and make the
 * enclosing function (returning bool) return false. */
#define VCHECK(v, t, cond, ...)                                                \
    do {                                                                       \
        if (!(cond)) {                                                         \
            return broken(v, t, __FILE__, __LINE__, __VA_ARGS__);              \
        }                                                                      \
    } while (0)

/* ---- the set of terms seen ------------------------------------------------
 */

static size_t slot_of(const pset *s, const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> s->shift);
    while (s->key[i] && s->key[i] != p) {
        i = (i + 1) & (s->cap - 1);
    }
    return i;
}

/* p's state in s (0: not there). */
static uint8_t seen(const pset *s, const void *p)
{
    if (s->cap == 0) {
        return 0;
    }
    size_t i = slot_of(s, p);
    return s->key[i] ? s->state[i] : 0;
}

/* Make room for one more key in s, with states when `states` (false when
 * out of memory). */
static bool room(fe_arena *ar, pset *s, bool states)
{
    if (2 * (s->n + 1) <= s->cap) {
        return true;
    }
    pset old = *s;
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->shift = 64 - __builtin_ctzll(s->cap);
    s->key = fe_arena_alloc(ar, s->cap * sizeof *s->key);
    s->state = states ? fe_arena_alloc(ar, s->cap) : NULL;
    s->aux = states ? fe_arena_alloc(ar, s->cap * sizeof *s->aux) : NULL;
    if (!s->key || (states && (!s->state || !s->aux))) {
        return false;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (old.key[i]) {
            size_t j = slot_of(s, old.key[i]);
            s->key[j] = old.key[i];
            if (states) {
                s->state[j] = old.state[i];
                s->aux[j] = old.aux[i];
            }
        }
    }
    return true;
}

/* Put term t in v's set of terms: 0 when it was not there, 1 when it was,
 * -1 when out of memory. */
static int insert(verify *v, const fe_term *t)
{
    if (!room(&v->ar, &v->terms, false)) {
        return -1;
    }
    size_t i = slot_of(&v->terms, t);
    if (v->terms.key[i]) {
        return 1;
    }
    v->terms.key[i] = t;
    v->terms.n++;
    return 0;
}

/* Set p's state in v's objects to st, putting it in if need be. */
static bool set_seen(verify *v, const void *p, uint8_t st)
{
    if (!room(&v->ar, &v->objs, true)) {
        return false;
    }
    size_t i = slot_of(&v->objs, p);
    if (!v->objs.key[i]) {
        v->objs.key[i] = p;
        v->objs.n++;
    }
    v->objs.state[i] = st;
    return true;
}

/* The aux word of object p, which set_seen has put in. */
static uint64_t *aux_of(verify *v, const void *p)
{
    return &v->objs.aux[slot_of(&v->objs, p)];
}

/* Push t on the path (false when out of memory). */
static bool push(verify *v, const fe_term *t)
{
    if (v->depth == v->path_cap) {
        size_t cap = v->path_cap ? 2 * v->path_cap : 256;
        const fe_term **path = fe_arena_alloc(&v->ar, cap * sizeof *path);
        if (!path) {
            return false;
        }
        if (v->depth) {
            memcpy(path, v->path, v->depth * sizeof *path);
        }
        v->path = path;
        v->path_cap = cap;
    }
    v->path[v->depth++] = t;
    return true;
}

/* Whether t is on the path (a term met again: on a cycle, else shared). */
static bool on_path(const verify *v, const fe_term *t)
{
    for (size_t i = 0; i < v->depth; i++) {
        if (v->path[i] == t) {
            return true;
        }
    }
    return false;
}

/* ---- types ----------------------------------------------------------------
 */

/* Whether t is a term of one array (not a tuple of them). */
static bool single(const fe_term *t)
{
    return t && t->acc && t->atype && t->atype->arity == 0;
}

static bool scalar(const fe_term *t)
{
    return t && !t->acc;
}

/* An array type's own consistency: ranks in range, components present,
 * narrays their sum. */
static bool atype_ok(const weft_context *ctx, const fe_atype *a)
{
    if (!a) {
        return false;
    }
    if (a->arity == 0) {
        return a->rank >= 0 && a->rank <= WEFT_MAX_RANK && a->narrays == 1 &&
               fe_type_valid(ctx, a->elt) && a->elt != 0;
    }
    int n = 0;
    for (int i = 0; i < a->arity; i++) {
        if (!a->comp || !atype_ok(ctx, a->comp[i])) {
            return false;
        }
        n += a->comp[i]->narrays;
    }
    return a->arity > 0 && n == a->narrays;
}

/* Whether scalar function f takes arity arguments of types args and
 * returns ret (f's parameters and body agree with its types: visit_fun). */
static bool takes(const fe_fun *f, int arity, const weft_type *args,
                  weft_type ret)
{
    if (!f || f->acc || f->arity != arity || f->ret != ret) {
        return false;
    }
    for (int i = 0; i < arity; i++) {
        if (f->targ[i] != args[i]) {
            return false;
        }
    }
    return true;
}

/* Whether a primitive's operand types and result type fit its rule (the
 * rules of lib/fe_ops.h, as build.c's prim_type and typed_build apply
 * them). */
static bool prim_typed(const fe_term *t)
{
    const fe_prim_info *pi = &fe_prims[t->op];
    weft_type t0 = t->kid[0]->type;
    weft_type t1 = pi->arity == 2 ? t->kid[1]->type : t0;
    weft_type r = t->type;
    switch (pi->rule) {
    case FE_RULE_NUM: return fe_is_numeric(t0) && t1 == t0 && r == t0;
    case FE_RULE_INT: return fe_is_int(t0) && t1 == t0 && r == t0;
    case FE_RULE_ORD:
        return (fe_is_numeric(t0) || t0 == WEFT_BOOL) && t1 == t0 && r == t0;
    case FE_RULE_LOGIC:
        return (fe_is_int(t0) || t0 == WEFT_BOOL) && t1 == t0 && r == t0;
    case FE_RULE_FLT: return fe_is_float(t0) && t1 == t0 && r == t0;
    case FE_RULE_SHIFT: return fe_is_int(t0) && fe_is_int(t1) && r == t0;
    case FE_RULE_BITS: return fe_is_int(t0) && r == WEFT_I32;
    case FE_RULE_FPRED: return fe_is_float(t0) && r == WEFT_BOOL;
    case FE_RULE_CMP: return fe_is_scalar(t0) && t1 == t0 && r == WEFT_BOOL;
    case FE_RULE_BOOL: return t0 == WEFT_BOOL && t1 == t0 && r == WEFT_BOOL;
    case FE_RULE_ROUND: return fe_is_float(t0) && fe_is_int(r);
    case FE_RULE_CONV: return fe_is_scalar(t0) && fe_is_scalar(r);
    case FE_RULE_CAST:
        return fe_is_numeric(t0) && fe_is_numeric(r) &&
               fe_type_bits(t0) == fe_type_bits(r);
    }
    return false;
}

/* The type rules of the scalar kinds (variables and lets: visit). */
static bool check_scalar(verify *v, const fe_term *t)
{
    const weft_type *comps;
    int n;
    switch ((fe_kind)t->kind) {
    case FE_CONST:
        VCHECK(v, t, t->nkid == 0 && fe_is_scalar(t->type),
               "a constant of type %s with %d operands", tn(v, t->type),
               t->nkid);
        return true;
    case FE_PRIM:
        VCHECK(v, t, t->op < WEFT_OP_COUNT_, "primitive %d", t->op);
        VCHECK(v, t, t->nkid == fe_prims[t->op].arity,
               "%s with %d operands, it takes %d", weft_op_name(t->op), t->nkid,
               fe_prims[t->op].arity);
        for (int i = 0; i < t->nkid; i++) {
            VCHECK(v, t, scalar(t->kid[i]), "operand %d is not scalar", i);
        }
        VCHECK(v, t, prim_typed(t),
               "%s of type %s on operands of types %s, %s outside its rule",
               weft_op_name(t->op), tn(v, t->type), tn(v, t->kid[0]->type),
               t->nkid > 1 ? tn(v, t->kid[1]->type) : "-");
        return true;
    case FE_COND:
        VCHECK(v, t, t->nkid == 3, "%d operands", t->nkid);
        VCHECK(v, t,
               scalar(t->kid[0]) && t->kid[0]->type == WEFT_BOOL &&
                   scalar(t->kid[1]) && t->kid[1]->type == t->type &&
                   scalar(t->kid[2]) && t->kid[2]->type == t->type,
               "a condition that is not bool or branches not of its type");
        return true;
    case FE_TUPLE:
        VCHECK(v, t, fe_is_tuple(t->type) || fe_is_dim(t->type),
               "type %s is neither a tuple nor an index", tn(v, t->type));
        n = fe_type_comps(v->ctx, t->type, &comps);
        VCHECK(v, t, t->nkid == n, "%d operands for %d components", t->nkid, n);
        for (int i = 0; i < n; i++) {
            VCHECK(v, t, scalar(t->kid[i]) && t->kid[i]->type == comps[i],
                   "component %d is not of the tuple's type", i);
        }
        return true;
    case FE_GET:
        VCHECK(v, t, t->nkid == 1 && scalar(t->kid[0]), "its operand");
        n = fe_is_tuple(t->kid[0]->type) || fe_is_dim(t->kid[0]->type)
                ? fe_type_comps(v->ctx, t->kid[0]->type, &comps)
                : 0;
        VCHECK(v, t, t->u.index >= 0 && t->u.index < n,
               "component %d of a value with %d", t->u.index, n);
        VCHECK(v, t, t->type == comps[t->u.index],
               "type %s, component %d has type %s", tn(v, t->type), t->u.index,
               tn(v, comps[t->u.index]));
        return true;
    case FE_SHAPE:
        VCHECK(v, t,
               t->nkid == 1 && single(t->kid[0]) &&
                   t->type == WEFT_DIM(t->kid[0]->rank),
               "not the shape of one array of its rank");
        return true;
    case FE_SHAPE_SIZE:
        VCHECK(v, t,
               t->nkid == 1 && scalar(t->kid[0]) &&
                   fe_is_dim(t->kid[0]->type) && t->type == WEFT_I64,
               "not an i64 of a shape");
        return true;
    case FE_TO_INDEX:
    case FE_FROM_INDEX:
        VCHECK(v, t,
               t->nkid == 2 && scalar(t->kid[0]) && scalar(t->kid[1]) &&
                   fe_is_dim(t->kid[0]->type),
               "operands are not a shape and a scalar");
        VCHECK(v, t,
               t->kind == FE_TO_INDEX
                   ? t->kid[1]->type == t->kid[0]->type && t->type == WEFT_I64
                   : t->kid[1]->type == WEFT_I64 && t->type == t->kid[0]->type,
               "operand or result types");
        return true;
    case FE_AT:
    case FE_AT_LINEAR:
        VCHECK(v, t, t->nkid == 2 && single(t->kid[0]) && scalar(t->kid[1]),
               "operands are not an array and an index");
        VCHECK(v, t,
               t->kid[1]->type == (t->kind == FE_AT
                                       ? (weft_type)WEFT_DIM(t->kid[0]->rank)
                                       : (weft_type)WEFT_I64) &&
                   t->type == t->kid[0]->type,
               "an index of type %s into a rank-%d array",
               tn(v, t->kid[1]->type), t->kid[0]->rank);
        return true;
    case FE_WHILE:
        VCHECK(v, t,
               t->nkid == 1 && t->nfun == 2 && scalar(t->kid[0]) &&
                   t->kid[0]->type == t->type,
               "an initial value not of its type");
        VCHECK(v, t,
               takes(t->fun[0], 1, &t->type, WEFT_BOOL) &&
                   takes(t->fun[1], 1, &t->type, t->type),
               "functions not of types a -> bool and a -> a");
        return true;
    case FE_ALL:
        VCHECK(v, t,
               t->nkid == 0 && v->parent && v->slot >= 1 &&
                   (v->parent->kind == FE_REPLICATE ||
                    v->parent->kind == FE_SLICE),
               "weft_all outside a specification");
        return true;
    case FE_IGNORE:
        VCHECK(v, t, t->nkid == 0 && fe_is_dim(t->type), "type %s",
               tn(v, t->type));
        return true;
    default: return broken(v, t, __FILE__, __LINE__, "not a core kind");
    }
}

/* The operand and result types of a fold, scan or segmented fold: the
 * layout (seed, array, segments) follows from the kid count, which the
 * table fixes per kind. */
static bool check_reduce(verify *v, const fe_term *t)
{
    fe_family fam = fe_kinds[t->kind].family;
    int seg = fam == FE_FAMILY_FOLD_SEG;
    int seeded = t->nkid - 1 - seg;
    const fe_term *a = t->kid[seeded];
    VCHECK(v, t, single(a) && a->rank >= 1, "operand %d is not one array",
           seeded);
    weft_type e = a->type;
    VCHECK(v, t, takes(t->fun[0], 2, (weft_type[]){e, e}, e),
           "its function is not of type a -> a -> a for a = %s", tn(v, e));
    VCHECK(v, t, !seeded || (scalar(t->kid[0]) && t->kid[0]->type == e),
           "its seed is not of the element type");
    VCHECK(v, t,
           !seg || (single(t->kid[seeded + 1]) &&
                    fe_is_int(t->kid[seeded + 1]->type) &&
                    t->kid[seeded + 1]->rank == 1),
           "its segments are not one rank-1 integral array");
    VCHECK(v, t, seg ? t->op <= FE_SEG_OFFSETS : t->op == 0,
           "its descriptor form %d is not one of fe_seg_form", (int)t->op);
    const fe_atype *r = t->atype;
    if (t->kind == FE_SCANL_ || t->kind == FE_SCANR_) {
        VCHECK(v, t,
               r->arity == 2 && r->comp[0]->arity == 0 &&
                   r->comp[0]->elt == e && r->comp[0]->rank == a->rank &&
                   r->comp[1]->arity == 0 && r->comp[1]->elt == e &&
                   r->comp[1]->rank == a->rank - 1,
               "not a pair of the scan and its totals");
        return true;
    }
    int rank = fam == FE_FAMILY_FOLD ? a->rank - 1 : a->rank;
    if (t->nfun > 1) {
        /* fuse.c's store rule: each result through fun[1] */
        VCHECK(v, t,
               (t->kind == FE_FOLD || t->kind == FE_FOLD1) && rank >= 1 &&
                   takes(t->fun[1], 1, &e, t->type),
               "its second function does not take its results (%s) to "
               "its element type %s, or it is not a fold of rows",
               tn(v, e), tn(v, t->type));
        e = t->type;
    }
    VCHECK(v, t, r->arity == 0 && r->elt == e && r->rank == rank,
           "rank %d of element type %s, expected rank %d of %s", t->rank,
           tn(v, t->type), rank, tn(v, e));
    return true;
}

/* One side of a stencil: array kid[2k], boundary value kid[2k+1]; adds
 * the window's element count to *count. */
static bool check_stencil_side(verify *v, const fe_term *t, int k, int *count)
{
    const fe_term *a = t->kid[2 * k], *value = t->kid[2 * k + 1];
    VCHECK(v, t,
           single(a) && a->rank >= 1 && a->rank <= 3 && a->rank == t->rank,
           "array %d is not of rank 1 to 3 and the stencil's", k);
    int c = 1;
    for (int d = 0; d < a->rank; d++) {
        int w = t->u.st.window[k][d];
        VCHECK(v, t, w == 3 || w == 5 || w == 7 || w == 9,
               "window %d is %d wide in dimension %d", k, w, d);
        c *= w;
    }
    weft_boundary_kind b = t->u.st.bnd[k];
    VCHECK(v, t, (unsigned)b <= (unsigned)WEFT_BOUNDARY_CONSTANT,
           "boundary kind %d", (int)b);
    VCHECK(v, t,
           b == WEFT_BOUNDARY_CONSTANT ? scalar(value) && value->type == a->type
                                       : value == NULL,
           "boundary value %d does not match its kind", k);
    const fe_fun *f = t->fun[0];
    VCHECK(v, t, f && !f->acc && f->arity >= *count + c,
           "its function takes fewer arguments than the windows have");
    for (int i = *count; i < *count + c; i++) {
        VCHECK(v, t, f->targ[i] == a->type,
               "argument %d of its function is not array %d's element", i, k);
    }
    *count += c;
    return true;
}

/* The type rules of the array kinds (variables and lets: visit). */
static bool check_array(verify *v, const fe_term *t)
{
    const fe_atype *r = t->atype;
    const fe_term *a;
    switch ((fe_kind)t->kind) {
    case FE_USE:
        VCHECK(v, t, t->u.array && seen(&v->objs, t->u.array) == SEEN_USE,
               "an array not among the core's uses");
        VCHECK(v, t,
               r->arity == 0 && r->elt == t->u.array->type &&
                   r->rank == t->u.array->rank,
               "not of its array's type");
        return true;
    case FE_PARAM:
        VCHECK(v, t, t->u.index >= 0 && t->u.index < v->core->nparam,
               "parameter %d of %d", t->u.index, v->core->nparam);
        VCHECK(v, t, fe_atype_equal(r, v->core->param[t->u.index]),
               "not of parameter %d's type", t->u.index);
        return true;
    case FE_UNIT:
        VCHECK(v, t,
               scalar(t->kid[0]) && r->arity == 0 && r->rank == 0 &&
                   r->elt == t->kid[0]->type,
               "not a rank-0 array of its operand's type");
        return true;
    case FE_GENERATE:
        VCHECK(v, t,
               scalar(t->kid[0]) && t->kid[0]->type == WEFT_DIM(t->rank) &&
                   r->arity == 0,
               "a shape not of its rank");
        VCHECK(v, t, takes(t->fun[0], 1, &t->kid[0]->type, t->type),
               "its function does not map an index to its element type");
        return true;
    case FE_MAP:
    case FE_ZIPWITH: {
        weft_type args[3];
        for (int i = 0; i < t->nkid; i++) {
            VCHECK(v, t, single(t->kid[i]) && t->kid[i]->rank == t->rank,
                   "operand %d is not one array of its rank", i);
            args[i] = t->kid[i]->type;
        }
        VCHECK(v, t, r->arity == 0 && takes(t->fun[0], t->nkid, args, t->type),
               "its function does not take its operands' element types to "
               "its own");
        return true;
    }
    case FE_RESHAPE:
        VCHECK(v, t,
               scalar(t->kid[0]) && t->kid[0]->type == WEFT_DIM(t->rank) &&
                   single(t->kid[1]) && r->arity == 0 &&
                   t->type == t->kid[1]->type,
               "not an array of its operand's elements in a shape of its "
               "rank");
        return true;
    case FE_REPLICATE:
    case FE_SLICE: {
        a = t->kid[0];
        VCHECK(v, t, single(a) && r->arity == 0 && t->type == a->type,
               "not of its operand's element type");
        int all = 0;
        for (int i = 1; i < t->nkid; i++) {
            const fe_term *e = t->kid[i];
            VCHECK(
                v, t,
                e && (e->kind == FE_ALL || (scalar(e) && e->type == WEFT_I64)),
                "specification entry %d is neither weft_all nor i64", i);
            all += e->kind == FE_ALL;
        }
        int n = t->nkid - 1;
        VCHECK(v, t,
               t->kind == FE_REPLICATE ? all == a->rank && t->rank == n
                                       : n == a->rank && t->rank == all,
               "rank %d from an operand of rank %d and %d entries, %d of "
               "them weft_all",
               t->rank, a->rank, n, all);
        return true;
    }
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
        a = t->kid[1];
        VCHECK(v, t,
               scalar(t->kid[0]) && t->kid[0]->type == WEFT_DIM(t->rank) &&
                   single(a) && r->arity == 0,
               "operands are not a shape of its rank and one array");
        VCHECK(v, t, takes(t->fun[0], 1, &t->kid[0]->type, WEFT_DIM(a->rank)),
               "its index function does not map its index to the operand's");
        VCHECK(v, t,
               t->kind == FE_TRANSFORM ? takes(t->fun[1], 1, &a->type, t->type)
                                       : t->type == a->type,
               "its elements are not of the operand's type (through its "
               "function)");
        return true;
    case FE_FOLD:
    case FE_FOLD1:
    case FE_FOLD_SEG:
    case FE_FOLD1_SEG:
    case FE_SCANL:
    case FE_SCANL1:
    case FE_SCANL_:
    case FE_SCANR:
    case FE_SCANR1:
    case FE_SCANR_: return check_reduce(v, t);
    case FE_PERMUTE: {
        const fe_term *def = t->kid[0], *src = t->kid[1];
        VCHECK(v, t,
               single(def) && single(src) && src->type == def->type &&
                   r->arity == 0 && t->type == def->type &&
                   t->rank == def->rank,
               "not of its default's type, or a source of another element "
               "type");
        VCHECK(v, t,
               takes(t->fun[0], 2, (weft_type[]){t->type, t->type}, t->type),
               "its combination is not a -> a -> a");
        VCHECK(v, t,
               takes(t->fun[1], 1,
                     (weft_type[]){(weft_type)WEFT_DIM(src->rank)},
                     WEFT_DIM(def->rank)),
               "its index function does not map the source's index to the "
               "default's");
        return true;
    }
    case FE_STENCIL:
    case FE_STENCIL2: {
        int count = 0;
        for (int k = 0; k < t->nkid / 2; k++) {
            if (!check_stencil_side(v, t, k, &count)) {
                return false;
            }
        }
        VCHECK(v, t,
               r->arity == 0 && t->fun[0]->arity == count &&
                   t->fun[0]->ret == t->type,
               "its function takes %d arguments for windows of %d, or "
               "returns another type",
               t->fun[0]->arity, count);
        return true;
    }
    case FE_ACOND:
        VCHECK(v, t,
               scalar(t->kid[0]) && t->kid[0]->type == WEFT_BOOL &&
                   t->kid[1]->acc && t->kid[2]->acc &&
                   fe_atype_equal(r, t->kid[1]->atype) &&
                   fe_atype_equal(r, t->kid[2]->atype),
               "a condition that is not bool or branches not of its type");
        return true;
    case FE_AWHILE: {
        const fe_fun *c = t->fun[0], *b = t->fun[1];
        VCHECK(v, t, t->kid[0]->acc && fe_atype_equal(r, t->kid[0]->atype),
               "an initial value not of its type");
        VCHECK(v, t,
               c && c->acc && fe_atype_equal(c->atarg, r) && c->aret &&
                   c->aret->arity == 0 && c->aret->elt == WEFT_BOOL &&
                   c->aret->rank == 0,
               "its condition is not a -> a rank-0 bool array");
        VCHECK(v, t,
               b && b->acc && fe_atype_equal(b->atarg, r) &&
                   fe_atype_equal(b->aret, r),
               "its body is not a -> a");
        return true;
    }
    case FE_ATUPLE:
        VCHECK(v, t, r->arity == t->nkid, "%d components for a %d-tuple",
               t->nkid, r->arity);
        for (int i = 0; i < t->nkid; i++) {
            VCHECK(v, t,
                   t->kid[i]->acc &&
                       fe_atype_equal(r->comp[i], t->kid[i]->atype),
                   "component %d is not of the tuple's type", i);
        }
        return true;
    case FE_AGET:
        a = t->kid[0];
        VCHECK(v, t,
               a->acc && a->atype->arity > 0 && t->u.index >= 0 &&
                   t->u.index < a->atype->arity,
               "component %d of an operand that is no tuple that long",
               t->u.index);
        VCHECK(v, t, fe_atype_equal(r, a->atype->comp[t->u.index]),
               "not of component %d's type", t->u.index);
        return true;
    default: return broken(v, t, __FILE__, __LINE__, "not a core kind");
    }
}

/* ---- the walk -------------------------------------------------------------
 */

/* Whether t is an array a scalar term may read: a variable, a used array,
 * a parameter, or a component of one. */
static bool readable(const fe_term *t)
{
    while (t->kind == FE_AGET) {
        t = t->kid[0];
    }
    return t->kind == FE_VAR || t->kind == FE_USE || t->kind == FE_PARAM;
}

/* The form of t: kind, owner, operand and function counts, array type. */
static bool check_form(verify *v, const fe_term *t)
{
    VCHECK(v, t, t->kind < FE_KIND_COUNT_, "kind %d", t->kind);
    VCHECK(v, t,
           t->kind != FE_ARG && t->kind != FE_AARG && t->kind != FE_APPLY &&
               t->prog == NULL,
           "a builder term in the core");
    VCHECK(v, t,
           t->nkid >= 0 && t->nfun >= 0 && (!t->nkid || t->kid) &&
               (!t->nfun || t->fun),
           "%d operands and %d functions", t->nkid, t->nfun);
    if (fe_kind_is_acc(t->kind)) {
        const fe_kind_info *k = &fe_kinds[t->kind];
        /* a fold may carry the function it applies as it stores (fuse.c's
         * store rule) */
        bool post = (t->kind == FE_FOLD || t->kind == FE_FOLD1) &&
                    t->nfun == k->funs + 1;
        VCHECK(v, t,
               t->nkid >= k->min_kids && t->nkid <= k->max_kids &&
                   (t->nfun == k->funs || post),
               "%d operands and %d functions, lib/fe_kinds.h says %d..%d "
               "and %d",
               t->nkid, t->nfun, k->min_kids, k->max_kids, k->funs);
        VCHECK(v, t, t->acc, "an array kind marked as scalar");
    } else if (t->kind == FE_LET || t->kind == FE_VAR) {
        VCHECK(v, t,
               t->u.var && t->nfun == 0 &&
                   t->nkid == (t->kind == FE_LET ? 2 : 0),
               "not a %s of a variable", kind_name(t->kind));
    } else {
        VCHECK(v, t, !t->acc, "a scalar kind marked as an array");
        VCHECK(v, t, t->nfun == (t->kind == FE_WHILE ? 2 : 0), "%d functions",
               t->nfun);
    }
    for (int i = 0; i < t->nkid; i++) {
        VCHECK(v, t,
               t->kid[i] || (t->kind == FE_STENCIL && i == 1) ||
                   (t->kind == FE_STENCIL2 && (i == 1 || i == 3)),
               "operand %d is missing", i);
    }
    if (t->acc) {
        VCHECK(v, t, atype_ok(v->ctx, t->atype), "a malformed array type");
        VCHECK(v, t,
               t->atype->arity == 0
                   ? t->type == t->atype->elt && t->rank == t->atype->rank
                   : t->type == 0 && t->rank == -1,
               "type %s rank %d disagree with its array type", tn(v, t->type),
               t->rank);
    } else if (t->kind != FE_ALL) {
        VCHECK(v, t, fe_type_valid(v->ctx, t->type), "type %d is not one",
               (int)t->type);
    }
    VCHECK(v, t, !t->delayed || t->acc, "a scalar term marked delayed");
    return true;
}

/* Bring variable x, bound by term or function `by`, into scope. */
static bool bind(verify *v, const fe_term *by, const fe_var *x)
{
    VCHECK(v, by, x && x->id < v->core->nvar,
           "a binder without a variable or with id %u of %u", x ? x->id : 0u,
           v->core->nvar);
    VCHECK(v, by, !v->bound[x->id], "variable v%u is bound twice", x->id);
    v->bound[x->id] = x;
    v->in_scope[x->id] = 1;
    v->serial[x->id] = v->nbound++;
    return true;
}

static bool visit(verify *v, const fe_term *t, const fe_term *parent, int slot);

/* Whether every variable that e (in the body of function `number` of t,
 * met again) reads is bound inside the function (its bindings are numbered
 * lo .. hi-1) or in scope here. */
static bool free_in_scope(verify *v, const fe_term *t, int number,
                          const fe_term *e, uint64_t lo, uint64_t hi)
{
    if (!e) {
        return true;
    }
    if (e->kind == FE_VAR) {
        const fe_var *x = e->u.var;
        uint64_t s = v->serial[x->id];
        VCHECK(v, t,
               (s >= lo && s < hi) ||
                   (v->in_scope[x->id] && v->bound[x->id] == x),
               "function %d is shared, and its body reads v%u, which is not "
               "in scope at this use",
               number, x->id);
    }
    for (int i = 0; i < e->nkid; i++) {
        if (!free_in_scope(v, t, number, e->kid[i], lo, hi)) {
            return false;
        }
    }
    for (int i = 0; i < e->nfun; i++) {
        if (!free_in_scope(v, t, number, e->fun[i]->body, lo, hi)) {
            return false;
        }
    }
    return true;
}

/* Function `number` of term t (v->parent and v->slot: t's place): its
 * parameters bound around its body, its types agreeing with them.  A function
 * met again (shared: fuse.c copies a constant generate with its function, and
 * its sibling rule gives the permute of a tuple the first sibling's index
 * function) was checked where it was met first; here its body's free variables
 * must be in scope too. */
static bool visit_fun(verify *v, const fe_term *t, int number)
{
    const fe_fun *f = t->fun[number];
    VCHECK(v, t, f, "function %d is missing", number);
    uint8_t st = seen(&v->objs, f);
    VCHECK(v, t, st != SEEN_OPEN, "function %d is its own ancestor", number);
    if (st == SEEN_DONE) {
        uint64_t span = *aux_of(v, f);
        return free_in_scope(v, t, number, f->body, span >> 32,
                             span & 0xffffffffu);
    }
    VCHECK(v, t,
           f->body && f->arity >= 0 && (f->arity == 0 || f->param) &&
               (f->acc ? f->arity == 1 && f->atarg && f->aret
                       : f->arity == 0 || f->targ),
           "function %d is not a complete core function", number);
    for (int i = 0; i < f->arity; i++) {
        const fe_var *x = f->param[i];
        VCHECK(v, t, x && x->param && x->acc == f->acc,
               "parameter %d of function %d is not a parameter variable", i,
               number);
        VCHECK(v, t,
               f->acc ? fe_atype_equal(x->atype, f->atarg)
                      : x->type == f->targ[i],
               "parameter %d of function %d is not of its argument type", i,
               number);
    }
    VCHECK(v, t,
           f->body->acc == f->acc &&
               (f->acc ? fe_atype_equal(f->body->atype, f->aret)
                       : f->body->type == f->ret),
           "the body of function %d is not of its result type", number);
    uint64_t entry = v->nbound;
    for (int i = 0; i < f->arity; i++) {
        if (!bind(v, t, f->param[i])) {
            return false;
        }
    }
    if (!set_seen(v, f, SEEN_OPEN) || !visit(v, f->body, t, -1)) {
        return false;
    }
    for (int i = 0; i < f->arity; i++) {
        v->in_scope[f->param[i]->id] = 0;
    }
    if (!set_seen(v, f, SEEN_DONE)) {
        return false;
    }
    *aux_of(v, f) = entry << 32 | v->nbound;
    return true;
}

/* A use of variable t->u.var. */
static bool check_var(verify *v, const fe_term *t)
{
    const fe_var *x = t->u.var;
    VCHECK(v, t, x->id < v->core->nvar, "variable v%u, core->nvar is %u", x->id,
           v->core->nvar);
    VCHECK(v, t, v->in_scope[x->id] && v->bound[x->id] == x,
           "variable v%u is used outside its binder", x->id);
    VCHECK(v, t,
           t->acc == x->acc && (x->acc ? fe_atype_equal(t->atype, x->atype)
                                       : t->type == x->type),
           "variable v%u is used at another type than its binder's", x->id);
    return true;
}

/* `let x = kid[0] in kid[1]`: the let's type is its body's. */
static bool check_let(verify *v, const fe_term *t)
{
    const fe_var *x = t->u.var;
    const fe_term *rhs = t->kid[0], *body = t->kid[1];
    VCHECK(v, t, !x->param, "a let binding a parameter variable");
    VCHECK(v, t,
           x->acc == rhs->acc && (x->acc ? fe_atype_equal(x->atype, rhs->atype)
                                         : x->type == rhs->type),
           "variable v%u is not of its right side's type", x->id);
    VCHECK(v, t,
           t->acc == body->acc && t->type == body->type &&
               (!t->acc || (t->rank == body->rank &&
                            fe_atype_equal(t->atype, body->atype))),
           "not of its body's type");
    return true;
}

static bool visit(verify *v, const fe_term *t, const fe_term *parent, int slot)
{
    v->parent = parent;
    v->slot = slot;
    int st = insert(v, t);
    if (st < 0) {
        return false;
    }
    VCHECK(v, t, st == 0, "%s",
           on_path(v, t) ? "a cycle: the term is its own ancestor"
                         : "the term is shared (the core is a tree)");
    if (!push(v, t) || !check_form(v, t)) {
        return false;
    }
    if (t->kind == FE_LET) {
        if (!visit(v, t->kid[0], t, 0) || !bind(v, t, t->u.var) ||
            !visit(v, t->kid[1], t, 1)) {
            return false;
        }
        v->in_scope[t->u.var->id] = 0;
    } else {
        for (int i = 0; i < t->nkid; i++) {
            if (t->kid[i] && !visit(v, t->kid[i], t, i)) {
                return false;
            }
        }
        for (int i = 0; i < t->nfun; i++) {
            v->parent = parent;
            v->slot = slot;
            if (!visit_fun(v, t, i)) {
                return false;
            }
        }
    }
    v->parent = parent;
    v->slot = slot;
    VCHECK(v, t, !parent || !t->acc || parent->acc || readable(t),
           "an array computed inside a scalar term");
    VCHECK(v, t,
           !t->delayed ||
               (!v->core->no_fusion && parent && parent->acc && slot >= 0 &&
                fe_fusible_operand(parent, slot) &&
                fe_kinds[t->kind].producer && t->atype->narrays == 1),
           "delayed where fusion does not allow it");
    bool ok = t->kind == FE_LET   ? check_let(v, t)
              : t->kind == FE_VAR ? check_var(v, t)
              : t->acc            ? check_array(v, t)
                                  : check_scalar(v, t);
    v->depth--;
    return ok;
}

/* Whether the single-array types of a, depth-first, are out[*k..]
 * (advancing *k past them). */
static bool outputs_match(const fe_atype *a, const fe_atype *const *out, int *k)
{
    if (a->arity == 0) {
        return fe_atype_equal(a, out[(*k)++]);
    }
    for (int i = 0; i < a->arity; i++) {
        if (!outputs_match(a->comp[i], out, k)) {
            return false;
        }
    }
    return true;
}

/* The core's own fields: uses, parameters, the root's results. */
static bool check_core(verify *v)
{
    const fe_core *c = v->core;
    VCHECK(v, NULL, c->root && c->root->acc, "the core has no array root");
    for (int i = 0; i < c->nuse; i++) {
        VCHECK(v, NULL, c->uses[i] && atomic_load(&c->uses[i]->refs) > 0,
               "use %d is not a live array", i);
        if (!set_seen(v, c->uses[i], SEEN_USE)) {
            return false;
        }
    }
    for (int i = 0; i < c->nparam; i++) {
        VCHECK(v, NULL,
               atype_ok(v->ctx, c->param[i]) && c->param[i]->arity == 0,
               "parameter %d's type", i);
    }
    const fe_term *r = c->root;
    while (r->kind == FE_LET && r->nkid == 2 && r->kid[1]) {
        r = r->kid[1];
    }
    VCHECK(v, NULL,
           r->kind == FE_ATUPLE && r->nkid == c->nresult && r->atype &&
               r->atype->narrays == c->noutput,
           "the root is not a tuple of %d results with %d arrays", c->nresult,
           c->noutput);
    int k = 0;
    VCHECK(v, NULL, outputs_match(r->atype, c->output, &k),
           "output %d is not of its result's type", k);
    return true;
}

weft_status fe_verify(weft_context *ctx, const fe_core *core, const char *after)
{
    verify v;
    memset(&v, 0, sizeof v);
    v.ctx = ctx;
    v.core = core;
    fe_arena_init(&v.ar, ctx);
    size_t nvar = core->nvar > 0 ? core->nvar : 1;
    v.bound = fe_arena_alloc(&v.ar, nvar * sizeof *v.bound);
    v.in_scope = fe_arena_alloc(&v.ar, nvar);
    v.serial = fe_arena_alloc(&v.ar, nvar * sizeof *v.serial);
    bool ok = v.bound && v.in_scope && v.serial && check_core(&v) &&
              visit(&v, core->root, NULL, -1);
    weft_status st = WEFT_OK;
    if (!ok && v.file) {
        char text[FE_MSG_MAX];
        snprintf(text, sizeof text, "the core is broken after %s: %s", after,
                 v.msg);
        st = fe_internal(v.file, v.line, text);
    } else if (!ok) {
        st = fe_oom("weft_compile (checking the core)");
    }
    fe_arena_release(&v.ar);
    return st;
}

bool fe_verify_enabled(const weft_context *ctx)
{
    const char *env =
        (ctx->cfg.flags & WEFT_FLAG_NO_ENV) ? NULL : getenv("WEFT_VERIFY");
    if (env && *env) {
        return strcmp(env, "0") != 0;
    }
#ifdef NDEBUG
    return false;
#else
    return true;
#endif
}

weft_status fe_verify_pass(weft_context *ctx, const fe_core *core,
                           const char *after)
{
    weft_status st = fe_verify(ctx, core, after);
#ifndef NDEBUG
    if (st == WEFT_ERR_INTERNAL) {
        fprintf(stderr, "%s\n", weft_last_error());
        fflush(stderr);
        abort();
    }
#endif
    return st;
}
