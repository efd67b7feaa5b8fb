/*
 * lib/sharing.c: CSE, sharing recovery and scope checks, from the builder's
 * DAG to the core (fe_share).
 *
 * The builder leaves a DAG: a C pointer used twice is shared, and a weft_fun
 * passed to several operations is one fe_fun.  The core that later passes
 * read is a tree in which every shared term is bound once by FE_LET and
 * every function argument and let binder is an FE_VAR.  We get there in four
 * steps, all over a scratch arena that is released before returning:
 *
 *   1. Walk and hash-cons.  An iterative depth-first walk from the results
 *      (a term's children are its kids, then its functions; a function's
 *      child is its body) gives every term, when it is finished, a canonical
 *      node: structurally equal terms (kind, op, type, payload, canonical
 *      children) share one node, so two weft_use of one array or two equal
 *      sums built separately become one.  Functions are nodes too, never
 *      merged.  Nodes are numbered as they are made, children first, so the
 *      numbering is a topological order with the results highest.  The walk
 *      also reports functions without a body and cycles (a function used in
 *      its own body), and counts the uses of each node (its incoming edges).
 *   2. Scope.  Each node gets the sorted set of argument terms it uses
 *      freely (a function removes its own arguments from its body's set).
 *      An array term must use no scalar argument, and the results none at
 *      all: that is exactly "an argument is used only inside its function".
 *   3. Dominators.  On a DAG in topological order one pass suffices: going
 *      down from the virtual root (the results' parent), each child's idom
 *      is the meet of its parents in the dominator tree built so far (as in
 *      Cooper, Harvey and Kennedy's intersect, with jump pointers for long
 *      chains).  The idom of a node is the lowest point enclosing all its
 *      uses.
 *   4. Decide and emit.  Going down, each term decides whether and where it
 *      is bound.  A term used twice is bound at its meet; an array term used
 *      by a scalar term (shape, !, !!) is bound at the first array-level
 *      point above its meet; a closed scalar term (using no argument) whose
 *      meet lies inside a scalar function climbs the dominator tree out of
 *      every function, so that it is computed once and becomes a free
 *      variable of the function (pure constant arithmetic used once stays,
 *      and so does a term that may fail or loop, such as a division or an
 *      index, since the function might never have evaluated it).  A term
 *      that may fail is bound at its meet only when evaluating the meet
 *      always evaluates it (it is reached through operands that always
 *      run: not a branch of cond, unless both branches reach it, not the
 *      right side of `and` / `or`, not a function, which may run for no
 *      element or iteration); otherwise it is copied into each use, so
 *      that it runs only where the program runs it (a guarded division
 *      shared by two conds, an index on the right of `||` shared by two
 *      functions).  Terms that cannot fail are shared as before.
 *      Then one recursive walk builds the core tree: at each point the lets
 *      placed there come first, in node order (so each comes after those it
 *      uses), then the point's own term; a function is instantiated afresh
 *      at each use with new parameter variables; FE_APPLY becomes lets of
 *      the arguments around an instance of the body.
 *
 * Trivial terms (constants, markers, arguments, parameters, the index Z)
 * are copied at each use.  FE_USE is not trivial: an array used twice is
 * bound once (an FE_USE used once may stay an operand of a scalar term).
 */
#include <stdio.h>
#include <string.h>

#include "fe.h"

/* Levels of a point: where a let placed there is evaluated. */
enum { LV_FUN, LV_HOST, LV_ARR };

/* Node flags. */
enum { NF_FUN = 1, NF_PURE = 2, NF_SARG = 4, NF_BOUND = 8, NF_FAIL = 16 };

typedef struct frame {
    void *obj; /* fe_term or fe_fun */
    bool is_fun;
    int next; /* next child to visit */
} frame;

typedef struct share {
    weft_program *p;
    weft_context *ctx;
    const char *who;
    weft_status status;
    fe_arena scratch;
    fe_arena *into;
    uint32_t nid;
    int32_t *term_node, *fun_node; /* by builder id: node, or -1 */
    uint8_t *tgray, *fgray;        /* by builder id: on the walk's stack */
    /* nodes 0 .. nnode-1; the virtual root is nnode */
    int32_t nnode, cap;
    fe_term **nterm; /* a term node's representative */
    fe_fun **nfn;    /* a function node's function */
    int32_t **ch;    /* children (-1 for a NULL kid) */
    int32_t *nch;
    int32_t *uses, *idom;
    int32_t *depth, *jump; /* dominator tree: depth, jump pointer */
    int32_t **fv;          /* free argument nodes, sorted */
    int32_t *nfv;
    uint8_t *flags, *eff;
    int32_t *bind_at; /* the point of a bound node, or -1 */
    int32_t *let_head, *let_tail, *let_next, *let_prev; /* lets per point */
    fe_var **env;           /* bound nodes: the variable in scope */
    fe_term **rhs;          /* bound nodes: the emitted right side */
    fe_var ***params;       /* function nodes: current instance */
    const fe_atype **acopy; /* array nodes: type copied into `into` */
    int32_t *use_index;     /* FE_USE nodes: index in the core's uses */
    int32_t *htab;
    uint32_t hmask;
    frame *stack;
    uint32_t *mstamp; /* always_evaluates: memo per query */
    uint8_t *mval;
    uint32_t mquery;
    struct mframe *mstack;
    uint8_t *plev;                /* the lowest level of a node's parents */
    int32_t *top;                 /* the nearest bound node on the chain
                                      that emits a node, or -1 */
    int32_t *req;                 /* a point a node's let must be at or
                                      above (-1: none) */
    int32_t *cpar, *cjump, *cdep; /* bound nodes: the chain tree
                                      (note_hoists) */
    /* the core being made */
    uint32_t nvar, nterm_out;
    int nuse;
    weft_array **uses_out;
} share;

/* ---- errors and allocation --------------------------------------------- */

/* Record the first error of this call (message prefixed by `who`); NULL. */
static void *fail(share *s, weft_status st, const char *fmt, ...)
    FE_PRINTF(3, 4);
static void *fail(share *s, weft_status st, const char *fmt, ...)
{
    if (s->status == WEFT_OK) {
        char buf[FE_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        s->status = fe_error(st, "%s: %s", s->who, buf);
    }
    return NULL;
}

static void *oom(share *s)
{
    return fail(s, WEFT_ERR_OUT_OF_MEMORY, "out of memory");
}

/* n zeroed bytes of scratch (never NULL for n == 0 unless out of memory). */
static void *salloc(share *s, size_t n)
{
    void *q = fe_arena_alloc(&s->scratch, n ? n : 1);
    return q ? q : oom(s);
}

/* n zeroed bytes of the core's arena. */
static void *calloc_core(share *s, size_t n)
{
    void *q = fe_arena_alloc(s->into, n ? n : 1);
    return q ? q : oom(s);
}

static int32_t *ints(share *s, size_t n, int32_t init)
{
    int32_t *a = salloc(s, n * sizeof *a);
    for (size_t i = 0; a && init != 0 && i < n; i++) {
        a[i] = init;
    }
    return a;
}

/* ---- step 1: walk and hash-cons ----------------------------------------- */

/* Terms copied at each use rather than bound: leaves that cost nothing
 * (the rank-0 index Z, a tuple of no components, among them). */
static bool is_trivial(const fe_term *t)
{
    int k = t->kind;
    return k == FE_CONST || k == FE_ALL || k == FE_IGNORE || k == FE_ARG ||
           k == FE_AARG || k == FE_PARAM || (k == FE_TUPLE && t->nkid == 0);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Whether evaluating t itself (not its kids) may fail or not terminate:
 * such a term is not hoisted out of a function when used once, since the
 * function might never evaluate it (a guarded index, a division). */
static bool may_fail(const fe_term *t)
{
    switch (t->kind) {
    case FE_AT:
        return !(t->nkid == 2 && t->kid[1] && t->kid[1]->kind == FE_TUPLE &&
                 t->kid[1]->nkid == 0);
    case FE_AT_LINEAR:
    case FE_FROM_INDEX:
    case FE_WHILE:
    case FE_APPLY: return true;
    case FE_PRIM: return fe_prim_may_fail(t);
    default: return false;
    }
}

/* The payload of t that takes part in its identity. */
static uint64_t payload_hash(const fe_term *t)
{
    uint64_t h = 0;
    switch (t->kind) {
    case FE_CONST: return t->u.c.u;
    case FE_ARG:
    case FE_AARG:
        return mix((uint64_t)(uintptr_t)t->u.arg.fun, (uint64_t)t->u.arg.index);
    case FE_GET:
    case FE_AGET:
    case FE_PARAM: return (uint64_t)t->u.index;
    case FE_USE: return (uint64_t)(uintptr_t)t->u.array;
    case FE_STENCIL:
    case FE_STENCIL2:
        for (int a = 0; a < 2; a++) {
            for (int d = 0; d < 3; d++) {
                h = mix(h, (uint64_t)t->u.st.window[a][d]);
            }
            h = mix(h, (uint64_t)t->u.st.bnd[a]);
        }
        return h;
    default: return 0;
    }
}

static bool payload_equal(const fe_term *x, const fe_term *y)
{
    switch (x->kind) {
    case FE_CONST: return x->u.c.u == y->u.c.u;
    case FE_ARG:
    case FE_AARG:
        return x->u.arg.fun == y->u.arg.fun && x->u.arg.index == y->u.arg.index;
    case FE_GET:
    case FE_AGET:
    case FE_PARAM: return x->u.index == y->u.index;
    case FE_USE: return x->u.array == y->u.array;
    case FE_STENCIL:
    case FE_STENCIL2:
        for (int a = 0; a < 2; a++) {
            for (int d = 0; d < 3; d++) {
                if (x->u.st.window[a][d] != y->u.st.window[a][d]) {
                    return false;
                }
            }
            if (x->u.st.bnd[a] != y->u.st.bnd[a]) {
                return false;
            }
        }
        return true;
    default: return true;
    }
}

static uint64_t term_hash(const fe_term *t, const int32_t *ch, int nch)
{
    uint64_t h = mix(t->kind, t->op);
    h = mix(h, (uint64_t)(uint32_t)t->type);
    h = mix(h, (uint64_t)(uint32_t)t->rank);
    h = mix(h, payload_hash(t));
    for (int i = 0; i < nch; i++) {
        h = mix(h, (uint64_t)(uint32_t)ch[i]);
    }
    /* mix only carries upwards, and the table takes the low bits: fold the
     * high half down, or constants that differ only in their high bits
     * (the f64 values 1.0, 2.0, ...) share one slot and probe in a line,
     * quadratic in their number */
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static bool term_same(const share *s, int32_t n, const fe_term *t,
                      const int32_t *ch, int nch)
{
    const fe_term *r = s->nterm[n];
    if (r->kind != t->kind || r->op != t->op || r->type != t->type ||
        r->rank != t->rank || r->acc != t->acc || r->nkid != t->nkid ||
        r->nfun != t->nfun || s->nch[n] != nch || !payload_equal(r, t)) {
        return false;
    }
    if (r->acc && r->atype && t->atype && !fe_atype_equal(r->atype, t->atype)) {
        return false;
    }
    return memcmp(s->ch[n], ch, (size_t)nch * sizeof *ch) == 0;
}

/* The union of sorted sets a and b (shared when one contains the other's
 * elements trivially: empty, or the same pointer). */
static int32_t *set_union(share *s, int32_t *a, int32_t na, int32_t *b,
                          int32_t nb, int32_t *nout)
{
    if (nb == 0 || a == b) {
        *nout = na;
        return a;
    }
    if (na == 0) {
        *nout = nb;
        return b;
    }
    int32_t *u = salloc(s, (size_t)(na + nb) * sizeof *u);
    if (!u) {
        return NULL;
    }
    int32_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        if (j >= nb || (i < na && a[i] < b[j])) {
            u[k++] = a[i++];
        } else if (i >= na || b[j] < a[i]) {
            u[k++] = b[j++];
        } else {
            u[k++] = a[i++];
            j++;
        }
    }
    *nout = k;
    return u;
}

static bool set_has_sarg(const share *s, const int32_t *a, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (s->nterm[a[i]]->kind == FE_ARG) {
            return true;
        }
    }
    return false;
}

/* The scope error for free argument node e escaping. */
static void *scope_error(share *s, int32_t e)
{
    const fe_term *a = s->nterm[e];
    if (a->kind == FE_ARG) {
        return fail(s, WEFT_ERR_SCOPE,
                    "argument %d of a function is used outside the function",
                    a->u.arg.index);
    }
    return fail(s, WEFT_ERR_SCOPE,
                "the argument of an array function is used outside the "
                "function");
}

static int32_t new_node(share *s)
{
    if (s->nnode >= s->cap) {
        fail(s, WEFT_ERR_INTERNAL, "too many nodes (internal error)");
        return -1;
    }
    return s->nnode++;
}

/* t is finished (its children have nodes): find or make its node. */
static bool finish_term(share *s, fe_term *t)
{
    int nch = t->nkid + t->nfun;
    int32_t *ch = salloc(s, (size_t)nch * sizeof *ch);
    if (!ch) {
        return false;
    }
    for (int i = 0; i < t->nkid; i++) {
        ch[i] = t->kid[i] ? s->term_node[t->kid[i]->id] : -1;
    }
    for (int i = 0; i < t->nfun; i++) {
        ch[t->nkid + i] = s->fun_node[t->fun[i]->id];
    }
    uint32_t h = (uint32_t)term_hash(t, ch, nch) & s->hmask;
    while (s->htab[h] >= 0) {
        if (term_same(s, s->htab[h], t, ch, nch)) {
            s->term_node[t->id] = s->htab[h];
            return true;
        }
        h = (h + 1) & s->hmask;
    }
    int32_t n = new_node(s);
    if (n < 0) {
        return false;
    }
    s->htab[h] = n;
    s->term_node[t->id] = n;
    s->nterm[n] = t;
    s->ch[n] = ch;
    s->nch[n] = nch;
    bool pure = t->kind == FE_CONST || t->kind == FE_PRIM ||
                t->kind == FE_COND || t->kind == FE_TUPLE || t->kind == FE_GET;
    bool fails = !t->acc && may_fail(t);
    if (t->kind == FE_ARG || t->kind == FE_AARG) {
        int32_t *one = ints(s, 1, 0);
        if (!one) {
            return false;
        }
        one[0] = n;
        s->fv[n] = one;
        s->nfv[n] = 1;
    }
    for (int i = 0; i < nch; i++) {
        int32_t c = ch[i];
        if (c < 0) {
            continue;
        }
        s->uses[c]++;
        if (!(s->flags[c] & NF_PURE)) {
            pure = false;
        }
        if (s->flags[c] & NF_FAIL) {
            fails = true;
        }
        s->fv[n] =
            set_union(s, s->fv[n], s->nfv[n], s->fv[c], s->nfv[c], &s->nfv[n]);
        if (s->nfv[n] > 0 && !s->fv[n]) {
            return false;
        }
    }
    /* an array operand is bound at array level anyway: its failures do not
     * make its scalar users fail */
    fails = fails && !t->acc;
    s->flags[n] =
        (uint8_t)((pure ? NF_PURE : 0) | (fails ? NF_FAIL : 0) |
                  (set_has_sarg(s, s->fv[n], s->nfv[n]) ? NF_SARG : 0));
    if (t->acc && (s->flags[n] & NF_SARG)) {
        for (int32_t i = 0; i < s->nfv[n]; i++) {
            if (s->nterm[s->fv[n][i]]->kind == FE_ARG) {
                scope_error(s, s->fv[n][i]);
                return false;
            }
        }
    }
    return true;
}

/* f is finished (its body has a node): make its node. */
static bool finish_fun(share *s, fe_fun *f)
{
    int32_t n = new_node(s);
    int32_t *ch = ints(s, 1, 0);
    if (n < 0 || !ch) {
        return false;
    }
    int32_t b = s->term_node[f->body->id];
    ch[0] = b;
    s->fun_node[f->id] = n;
    s->nfn[n] = f;
    s->ch[n] = ch;
    s->nch[n] = 1;
    s->flags[n] = (uint8_t)(NF_FUN | (s->flags[b] & NF_FAIL));
    s->uses[b]++;
    /* free arguments of the body but f's own */
    int32_t k = 0;
    for (int32_t i = 0; i < s->nfv[b]; i++) {
        k += s->nterm[s->fv[b][i]]->u.arg.fun != f;
    }
    if (k == s->nfv[b]) {
        s->fv[n] = s->fv[b];
        s->nfv[n] = k;
    } else if (k > 0) {
        int32_t *set = ints(s, (size_t)k, 0);
        if (!set) {
            return false;
        }
        k = 0;
        for (int32_t i = 0; i < s->nfv[b]; i++) {
            if (s->nterm[s->fv[b][i]]->u.arg.fun != f) {
                set[k++] = s->fv[b][i];
            }
        }
        s->fv[n] = set;
        s->nfv[n] = k;
    }
    if (set_has_sarg(s, s->fv[n], s->nfv[n])) {
        s->flags[n] |= NF_SARG;
    }
    return true;
}

/* Push term t on the walk's stack unless it is done; false on error. */
static bool push_term(share *s, int *sp, fe_term *t)
{
    if (t->prog != s->p) {
        fail(s, WEFT_ERR_PROGRAM_MISMATCH,
             "a term of another program is used in this one");
        return false;
    }
    if (t->id >= s->nid) {
        fail(s, WEFT_ERR_INTERNAL, "term id %u out of range (internal error)",
             (unsigned)t->id);
        return false;
    }
    if (t->kind == FE_VAR || t->kind == FE_LET || t->kind >= FE_KIND_COUNT_) {
        fail(s, WEFT_ERR_INTERNAL, "a core term in a program (internal error)");
        return false;
    }
    if (s->term_node[t->id] >= 0) {
        return true;
    }
    if (s->tgray[t->id]) {
        fail(s, WEFT_ERR_SCOPE, "a term depends on itself");
        return false;
    }
    s->tgray[t->id] = 1;
    s->stack[*sp] = (frame){t, false, 0};
    ++*sp;
    return true;
}

static bool push_fun(share *s, int *sp, fe_fun *f)
{
    if (f->prog != s->p) {
        fail(s, WEFT_ERR_PROGRAM_MISMATCH,
             "a function of another program is used in this one");
        return false;
    }
    if (f->id >= s->nid) {
        fail(s, WEFT_ERR_INTERNAL,
             "function id %u out of range (internal error)", (unsigned)f->id);
        return false;
    }
    if (s->fun_node[f->id] >= 0) {
        return true;
    }
    if (f->body == NULL) {
        fail(s, WEFT_ERR_INCOMPLETE,
             f->acc ? "an array function is used before weft_afun_return "
                      "gave it a body"
                    : "a function is used before weft_fun_return gave it a "
                      "body");
        return false;
    }
    if (s->fgray[f->id]) {
        fail(s, WEFT_ERR_SCOPE,
             "a function is used inside its own body (no recursion)");
        return false;
    }
    s->fgray[f->id] = 1;
    s->stack[*sp] = (frame){f, true, 0};
    ++*sp;
    return true;
}

/* Walk the DAG under result r, making nodes in post-order. */
static bool walk(share *s, fe_term *r)
{
    int sp = 0;
    if (!push_term(s, &sp, r)) {
        return false;
    }
    while (sp > 0) {
        frame *fr = &s->stack[sp - 1];
        if (fr->is_fun) {
            fe_fun *f = fr->obj;
            if (fr->next == 0) {
                fr->next = 1;
                if (!push_term(s, &sp, f->body)) {
                    return false;
                }
                continue;
            }
            sp--;
            s->fgray[f->id] = 0;
            if (!finish_fun(s, f)) {
                return false;
            }
            continue;
        }
        fe_term *t = fr->obj;
        if (fr->next < t->nkid + t->nfun) {
            int i = fr->next++;
            bool ok;
            if (i < t->nkid) {
                ok = t->kid[i] == NULL || push_term(s, &sp, t->kid[i]);
            } else if (t->fun[i - t->nkid] == NULL) {
                ok = fail(s, WEFT_ERR_NULL_ARGUMENT, "a function is NULL");
            } else {
                ok = push_fun(s, &sp, t->fun[i - t->nkid]);
            }
            if (!ok) {
                return false;
            }
            continue;
        }
        sp--;
        s->tgray[t->id] = 0;
        if (!finish_term(s, t)) {
            return false;
        }
    }
    return true;
}

/* ---- step 3: dominators ------------------------------------------------- */

/* The dominator tree so far is kept with depths and one jump pointer per
 * node (Myers' skew-binary scheme), so that the meet of two nodes costs
 * O(log depth) even on long chains, where walking idom one step at a time
 * would be quadratic (a function used by each of 100k chained maps). */
/* Node u joins a tree with depths dep and jump pointers jump as a child
 * of p (its jump pointer per the skew-binary scheme). */
static void jump_link(int32_t *dep, int32_t *jump, int32_t u, int32_t p)
{
    dep[u] = dep[p] + 1;
    int32_t j = jump[p];
    jump[u] = dep[p] - dep[j] == dep[j] - dep[jump[j]] ? jump[j] : p;
}

static void tree_link(share *s, int32_t u)
{
    jump_link(s->depth, s->jump, u, s->idom[u]);
}

static int32_t ancestor_at(const share *s, int32_t u, int32_t d)
{
    while (s->depth[u] > d) {
        u = s->depth[s->jump[u]] >= d ? s->jump[u] : s->idom[u];
    }
    return u;
}

static int32_t meet(const share *s, int32_t a, int32_t b)
{
    if (s->depth[a] > s->depth[b]) {
        a = ancestor_at(s, a, s->depth[b]);
    } else if (s->depth[b] > s->depth[a]) {
        b = ancestor_at(s, b, s->depth[a]);
    }
    while (a != b) {
        if (s->jump[a] != s->jump[b]) {
            a = s->jump[a];
            b = s->jump[b];
        } else {
            a = s->idom[a];
            b = s->idom[b];
        }
    }
    return a;
}

/* Nodes are numbered children first and the root is highest, so one pass
 * from the root down sees every parent of a node before the node: when u
 * is reached its idom is final and it joins the tree. */
static void dominators(share *s)
{
    int32_t root = s->nnode;
    s->idom[root] = root;
    s->jump[root] = root;
    s->depth[root] = 0;
    for (int32_t u = root; u >= 0; u--) {
        if (u != root) {
            tree_link(s, u);
        }
        for (int32_t i = 0; i < s->nch[u]; i++) {
            int32_t c = s->ch[u][i];
            if (c < 0) {
                continue;
            }
            s->idom[c] = s->idom[c] < 0 ? u : meet(s, u, s->idom[c]);
        }
    }
}

/* ---- step 4a: where each term is bound ----------------------------------- */

/* How evaluating point u reaches its child edge i: EDGE_NEVER when the
 * child may not be evaluated (a branch of `and` / `or`, a function, which
 * may run for no element or iteration), EDGE_ALWAYS when it is, EDGE_THEN
 * and EDGE_ELSE for the branches of cond and acond (one of them is). */
enum { EDGE_NEVER, EDGE_ALWAYS, EDGE_THEN, EDGE_ELSE };

static int edge_kind(const share *s, int32_t u, int i)
{
    if (u == s->nnode || (s->flags[u] & NF_FUN)) {
        return EDGE_ALWAYS; /* the results; a running function's body */
    }
    const fe_term *x = s->nterm[u];
    if (i >= x->nkid) {
        return EDGE_NEVER;
    }
    switch (x->kind) {
    case FE_COND:
    case FE_ACOND: return i == 0 ? EDGE_ALWAYS : i == 1 ? EDGE_THEN : EDGE_ELSE;
    case FE_PRIM:
        if ((x->op == WEFT_OP_AND || x->op == WEFT_OP_OR) && i == 1) {
            return EDGE_NEVER;
        }
        return EDGE_ALWAYS;
    default: return EDGE_ALWAYS;
    }
}

typedef struct mframe {
    int32_t n;    /* the node */
    int32_t next; /* its next edge */
    int32_t wait; /* the edge whose answer is awaited, or -1 */
    bool then_ok; /* cond: the first branch always evaluates the target */
} mframe;

/* Whether evaluating point `from` always evaluates node t: t is reached
 * from it through operands that are always evaluated (for cond, through
 * both branches).  A term that may fail is bound at its meet only then;
 * otherwise binding it there would evaluate it where the program does not
 * (a division guarded by a cond, an index on the right of `||`).  An
 * iterative depth-first search memoised per query; only nodes numbered
 * above t can reach it. */
static bool always_evaluates(share *s, int32_t from, int32_t t)
{
    if (from == t) {
        return true;
    }
    uint32_t q = ++s->mquery;
    int sp = 0;
    bool ret = false;
    s->mstack[sp++] = (mframe){from, 0, -1, false};
    while (sp > 0) {
        mframe *f = &s->mstack[sp - 1];
        int32_t u = f->n;
        bool done = false, val = false;
        if (f->wait >= 0) {
            int k = edge_kind(s, u, f->wait);
            if (k == EDGE_ALWAYS && ret) {
                done = val = true;
            } else if (k == EDGE_THEN) {
                f->then_ok = ret;
            } else if (k == EDGE_ELSE && ret && f->then_ok) {
                done = val = true;
            }
            f->wait = -1;
        }
        while (!done && f->wait < 0) {
            if (f->next >= s->nch[u]) {
                done = true;
                val = false;
                break;
            }
            int i = f->next++;
            int32_t c = s->ch[u][i];
            int k = edge_kind(s, u, i);
            if (c < 0 || k == EDGE_NEVER || (k == EDGE_ELSE && !f->then_ok)) {
                continue;
            }
            f->wait = i;
            if (c == t || c < t || s->mstamp[c] == q) {
                ret = c == t || (c > t && s->mval[c]);
                break; /* answered without a visit */
            }
            s->mstack[sp++] = (mframe){c, 0, -1, false};
        }
        if (done) {
            s->mstamp[u] = q;
            s->mval[u] = val;
            ret = val;
            sp--;
        }
    }
    return ret;
}

/* The level at which a let placed at point P is evaluated, or at which a
 * child of P is (for unbound children). */
static int level(const share *s, int32_t P)
{
    if (P == s->nnode) {
        return LV_ARR;
    }
    if (s->flags[P] & NF_FUN) {
        return s->nfn[P]->acc ? LV_ARR : LV_FUN;
    }
    if (s->nterm[P]->acc) {
        return LV_ARR;
    }
    return s->eff[P];
}

static int32_t climb(const share *s, int32_t P, int until)
{
    while (level(s, P) < until) {
        P = s->idom[P];
    }
    return P;
}

/* Record the level at which u evaluates its children, for a child that
 * is copied into each of its uses. */
static void note_parent_level(share *s, int32_t u)
{
    uint8_t l = (uint8_t)level(s, u);
    for (int32_t i = 0; i < s->nch[u]; i++) {
        int32_t c = s->ch[u][i];
        if (c >= 0 && l < s->plev[c]) {
            s->plev[c] = l;
        }
    }
}

/* A term u bound at a point P above it is emitted at P, outside the points
 * between P and u: a let placed there is not in scope at u.  So a child c of
 * u whose meet lies strictly between (above u's chain, below P) is bound at
 * P instead: s->req[c].  u's chain is the run of unbound terms emitted
 * inside their parent, up to the nearest bound one (s->top); hoists above
 * that one are followed too. */
/*
 * Walking that chain one bound term at a time is quadratic on long chains
 * (a let chain of n terms whose every link uses one shared term).  The
 * bound terms w_1 = top[u], w_2 = top[bind_at[w_1]], ... form a tree (the
 * chain tree, parent cpar), and the depth of bind_at[w_k] in the dominator
 * tree (its key) strictly decreases along it.  Following the chain, the
 * first w_k whose key is below the depth of c's meet B decides: if B lies
 * strictly between bind_at[w_k] and w_k, c is bound at bind_at[w_k];
 * otherwise B is on the chain and in scope.  Since keys are monotone, that
 * w_k is found with jump pointers as in the dominator tree: O(log n).
 */
static int32_t chain_key(const share *s, int32_t w)
{
    return s->depth[s->bind_at[w]];
}

/* Bound term w joins the chain tree (its bind_at is set). */
static void chain_link(share *s, int32_t w)
{
    int32_t p = s->top[s->bind_at[w]];
    s->cpar[w] = p;
    if (p < 0) {
        s->cdep[w] = 0;
        s->cjump[w] = w;
        return;
    }
    jump_link(s->cdep, s->cjump, w, p);
}

/* The first bound term from w up the chain tree whose key is below d, or
 * -1. */
static int32_t chain_first_below(const share *s, int32_t w, int32_t d)
{
    while (w >= 0 && chain_key(s, w) >= d) {
        int32_t j = s->cjump[w];
        w = j != w && chain_key(s, j) >= d ? j : s->cpar[w];
    }
    return w;
}

static void note_hoists(share *s, int32_t u)
{
    for (int32_t i = 0; i < s->nch[u]; i++) {
        int32_t c = s->ch[u][i];
        if (c < 0) {
            continue;
        }
        int32_t B = s->idom[c];
        int32_t w = chain_first_below(s, s->top[u], s->depth[B]);
        if (w >= 0 && s->depth[B] < s->depth[w]) {
            B = s->bind_at[w]; /* strictly between: bound at w's point */
        }
        if (B != s->idom[c]) {
            s->req[c] = s->req[c] < 0 ? B : meet(s, s->req[c], B);
        }
    }
}

static void place(share *s)
{
    int32_t root = s->nnode;
    note_parent_level(s, root);
    s->top[root] = -1;
    for (int32_t t = root - 1; t >= 0; t--) {
        s->bind_at[t] = -1;
        if (s->flags[t] & NF_FUN) {
            note_parent_level(s, t);
            s->top[t] = s->top[s->idom[t]];
            note_hoists(s, t);
            continue;
        }
        const fe_term *x = s->nterm[t];
        int32_t M = s->req[t] >= 0 ? s->req[t] : s->idom[t];
        int lm = level(s, M);
        int32_t P = -1;
        if (!is_trivial(x)) {
            if (x->acc) {
                /* an FE_USE may stay an operand of a scalar term */
                if (s->uses[t] >= 2 || (lm != LV_ARR && x->kind != FE_USE)) {
                    P = climb(s, M, LV_ARR);
                }
            } else {
                bool closed = !(s->flags[t] & NF_SARG);
                bool pure_once = (s->flags[t] & NF_PURE) && s->uses[t] < 2;
                bool fails = (s->flags[t] & NF_FAIL) != 0;
                if (closed && !pure_once && !fails && lm == LV_FUN) {
                    P = climb(s, M, LV_HOST);
                } else if (s->uses[t] >= 2) {
                    if (!fails || always_evaluates(s, M, t)) {
                        P = M;
                    } else {
                        /* not bound: copied into each use, where it is
                         * evaluated only as the program says */
                        lm = s->plev[t];
                    }
                }
            }
        }
        s->bind_at[t] = P;
        if (P >= 0) {
            s->flags[t] |= NF_BOUND;
            int lp = level(s, P);
            s->eff[t] = (uint8_t)(lp == LV_ARR ? LV_HOST : lp);
        } else {
            s->eff[t] = (uint8_t)(lm == LV_ARR ? LV_HOST : lm);
        }
        note_parent_level(s, t);
        s->top[t] = P >= 0 ? t : s->top[s->idom[t]];
        if (P >= 0) {
            chain_link(s, t);
        }
        note_hoists(s, t);
    }
    for (int32_t t = 0; t < root; t++) {
        int32_t P = s->bind_at[t];
        if (P < 0) {
            continue;
        }
        s->let_next[t] = -1;
        s->let_prev[t] = s->let_tail[P];
        if (s->let_tail[P] >= 0) {
            s->let_next[s->let_tail[P]] = t;
        } else {
            s->let_head[P] = t;
        }
        s->let_tail[P] = t;
    }
}

/* ---- step 4b: emitting the core ------------------------------------------ */

static fe_term *emit_use(share *s, int32_t n);

static fe_term *core_term(share *s, int kind, int nkid, int nfun)
{
    fe_term *t = calloc_core(s, sizeof *t);
    if (!t) {
        return NULL;
    }
    t->kind = (uint8_t)kind;
    t->acc = fe_kind_is_acc(kind);
    t->id = s->nterm_out++;
    t->nkid = nkid;
    t->nfun = nfun;
    if (nkid > 0 && !(t->kid = calloc_core(s, (size_t)nkid * sizeof *t->kid))) {
        return NULL;
    }
    if (nfun > 0 && !(t->fun = calloc_core(s, (size_t)nfun * sizeof *t->fun))) {
        return NULL;
    }
    return t;
}

static const fe_atype *acopy(share *s, int32_t n)
{
    if (!s->acopy[n] && s->nterm[n]->atype) {
        s->acopy[n] = fe_atype_copy(s->into, s->nterm[n]->atype);
        if (!s->acopy[n]) {
            oom(s);
        }
    }
    return s->acopy[n];
}

static fe_var *new_var(share *s, bool acc, bool param, weft_type type,
                       const fe_atype *atype)
{
    fe_var *v = calloc_core(s, sizeof *v);
    if (!v) {
        return NULL;
    }
    v->id = s->nvar++;
    v->acc = acc;
    v->param = param;
    v->type = acc ? 0 : type;
    v->atype = atype;
    return v;
}

static fe_term *var_term(share *s, fe_var *v)
{
    fe_term *t = core_term(s, FE_VAR, 0, 0);
    if (!t) {
        return NULL;
    }
    t->acc = v->acc;
    t->u.var = v;
    if (v->acc) {
        t->atype = v->atype;
        t->type = v->atype->arity == 0 ? v->atype->elt : 0;
        t->rank = v->atype->arity == 0 ? v->atype->rank : -1;
    } else {
        t->type = v->type;
        t->rank = -1;
    }
    return t;
}

static fe_term *let_term(share *s, fe_var *v, fe_term *rhs, fe_term *body)
{
    fe_term *t = core_term(s, FE_LET, 2, 0);
    if (!t) {
        return NULL;
    }
    t->acc = body->acc;
    t->type = body->type;
    t->rank = body->rank;
    t->atype = body->atype;
    t->u.var = v;
    t->kid[0] = rhs;
    t->kid[1] = body;
    return t;
}

/* Emit the right sides of the lets placed at point P, in order, bringing
 * each variable into scope before the next right side. */
static fe_term *emit_expr(share *s, int32_t n);

static bool open_lets(share *s, int32_t P)
{
    for (int32_t t = s->let_head[P]; t >= 0; t = s->let_next[t]) {
        fe_term *r = emit_expr(s, t);
        if (!r) {
            return false;
        }
        const fe_term *x = s->nterm[t];
        fe_var *v =
            new_var(s, x->acc, false, x->type, x->acc ? acopy(s, t) : NULL);
        if (!v || (x->acc && !v->atype)) {
            return false;
        }
        s->rhs[t] = r;
        s->env[t] = v;
    }
    return true;
}

/* Wrap inner in the lets placed at P and take their variables out of
 * scope. */
static fe_term *close_lets(share *s, int32_t P, fe_term *inner)
{
    for (int32_t t = s->let_tail[P]; t >= 0; t = s->let_prev[t]) {
        if (inner) {
            inner = let_term(s, s->env[t], s->rhs[t], inner);
        }
        s->env[t] = NULL;
        s->rhs[t] = NULL;
    }
    return inner;
}

/* The body of function node g under the current parameters, with the lets
 * placed at the top of the body. */
static fe_term *emit_body(share *s, int32_t g)
{
    if (!open_lets(s, g)) {
        return NULL;
    }
    fe_term *b = emit_use(s, s->ch[g][0]);
    return close_lets(s, g, b);
}

/* A fresh core instance of function node g. */
static fe_fun *instantiate(share *s, int32_t g)
{
    const fe_fun *f = s->nfn[g];
    fe_fun *c = calloc_core(s, sizeof *c);
    if (!c) {
        return NULL;
    }
    c->acc = f->acc;
    c->arity = f->arity;
    c->ret = f->ret;
    c->id = f->id;
    if (f->targ && f->arity > 0 &&
        !(c->targ = fe_arena_dup(s->into, f->targ,
                                 (size_t)f->arity * sizeof *f->targ))) {
        return oom(s);
    }
    if (f->atarg && !(c->atarg = fe_atype_copy(s->into, f->atarg))) {
        return oom(s);
    }
    if (f->aret && !(c->aret = fe_atype_copy(s->into, f->aret))) {
        return oom(s);
    }
    if (f->acc && !c->aret && f->body->atype &&
        !(c->aret = fe_atype_copy(s->into, f->body->atype))) {
        return oom(s);
    }
    c->param = calloc_core(s, (size_t)(f->arity > 0 ? f->arity : 1) *
                                  sizeof *c->param);
    if (!c->param) {
        return NULL;
    }
    for (int i = 0; i < f->arity; i++) {
        c->param[i] = new_var(s, f->acc, true, f->acc ? 0 : f->targ[i],
                              f->acc ? c->atarg : NULL);
        if (!c->param[i]) {
            return NULL;
        }
    }
    fe_var **saved = s->params[g];
    s->params[g] = c->param;
    c->body = emit_body(s, g);
    s->params[g] = saved;
    return c->body ? c : NULL;
}

/* FE_APPLY node n: lets of the arguments around an instance of the body. */
static fe_term *emit_apply(share *s, int32_t n)
{
    const fe_term *x = s->nterm[n];
    int32_t g = s->ch[n][x->nkid];
    const fe_fun *f = s->nfn[g];
    fe_term **args = salloc(s, (size_t)x->nkid * sizeof *args);
    fe_var **vars = calloc_core(s, (size_t)x->nkid * sizeof *vars);
    if (!args || !vars) {
        return NULL;
    }
    for (int i = 0; i < x->nkid; i++) {
        if (!(args[i] = emit_use(s, s->ch[n][i]))) {
            return NULL;
        }
        if (!(vars[i] = new_var(s, false, false, f->targ[i], NULL))) {
            return NULL;
        }
    }
    fe_var **saved = s->params[g];
    s->params[g] = vars;
    fe_term *body = emit_body(s, g);
    s->params[g] = saved;
    for (int i = x->nkid - 1; i >= 0 && body; i--) {
        body = let_term(s, vars[i], args[i], body);
    }
    return body;
}

/* The core term of node n itself (not its variable), without the lets
 * placed at n. */
static fe_term *build(share *s, int32_t n)
{
    const fe_term *x = s->nterm[n];
    if (x->kind == FE_ARG || x->kind == FE_AARG) {
        int32_t g = s->fun_node[x->u.arg.fun->id];
        if (g < 0 || !s->params[g]) {
            return fail(s, WEFT_ERR_SCOPE,
                        "argument %d of a function is used outside the "
                        "function",
                        x->u.arg.index);
        }
        return var_term(s, s->params[g][x->u.arg.index]);
    }
    if (x->kind == FE_APPLY) {
        return emit_apply(s, n);
    }
    fe_term *t = core_term(s, x->kind, x->nkid, x->nfun);
    if (!t) {
        return NULL;
    }
    t->acc = x->acc;
    t->op = x->op;
    t->type = x->type;
    t->rank = x->rank;
    t->u = x->u;
    if (x->acc && !(t->atype = acopy(s, n))) {
        return NULL;
    }
    if (x->kind == FE_USE && s->use_index[n] < 0) {
        s->use_index[n] = s->nuse;
        s->uses_out[s->nuse++] = x->u.array;
    }
    for (int i = 0; i < x->nkid; i++) {
        if (s->ch[n][i] >= 0 && !(t->kid[i] = emit_use(s, s->ch[n][i]))) {
            return NULL;
        }
    }
    for (int i = 0; i < x->nfun; i++) {
        if (!(t->fun[i] = instantiate(s, s->ch[n][x->nkid + i]))) {
            return NULL;
        }
    }
    return t;
}

/* Node n's own term with the lets placed at n around it. */
static fe_term *emit_expr(share *s, int32_t n)
{
    if (!open_lets(s, n)) {
        return NULL;
    }
    return close_lets(s, n, build(s, n));
}

/* Node n where it is used: its variable if it is bound, else its term. */
static fe_term *emit_use(share *s, int32_t n)
{
    if (s->flags[n] & NF_BOUND && s->env[n]) {
        return var_term(s, s->env[n]);
    }
    /* Unbound, or bound where this use cannot see it: a use inside a term
     * that was hoisted above n's let by a way note_hoists does not follow
     * (a failing term copied into uses at several levels).  Computing n
     * again here gives the same value, and runs only where the program
     * runs this use. */
    return emit_expr(s, n);
}

/* Append the single-array types of t, depth-first, to out. */
static void flatten(const fe_atype *t, const fe_atype **out, int *k)
{
    if (t->arity == 0) {
        out[(*k)++] = t;
        return;
    }
    for (int i = 0; i < t->arity; i++) {
        flatten(t->comp[i], out, k);
    }
}

/* ---- the entry point ------------------------------------------------------ */

static bool setup(share *s)
{
    size_t cap = (size_t)s->nid + 2;
    s->cap = (int32_t)cap - 1;
    size_t hcap = 16;
    while (hcap < 2 * cap) {
        hcap *= 2;
    }
    s->hmask = (uint32_t)(hcap - 1);
    s->term_node = ints(s, s->nid, -1);
    s->fun_node = ints(s, s->nid, -1);
    s->tgray = salloc(s, s->nid);
    s->fgray = salloc(s, s->nid);
    s->nterm = salloc(s, cap * sizeof *s->nterm);
    s->nfn = salloc(s, cap * sizeof *s->nfn);
    s->ch = salloc(s, cap * sizeof *s->ch);
    s->nch = ints(s, cap, 0);
    s->uses = ints(s, cap, 0);
    s->idom = ints(s, cap, -1);
    s->depth = ints(s, cap, 0);
    s->jump = ints(s, cap, 0);
    s->fv = salloc(s, cap * sizeof *s->fv);
    s->nfv = ints(s, cap, 0);
    s->flags = salloc(s, cap);
    s->eff = salloc(s, cap);
    s->bind_at = ints(s, cap, -1);
    s->top = ints(s, cap, -1);
    s->req = ints(s, cap, -1);
    s->cpar = ints(s, cap, -1);
    s->cjump = ints(s, cap, -1);
    s->cdep = ints(s, cap, 0);
    s->let_head = ints(s, cap, -1);
    s->let_tail = ints(s, cap, -1);
    s->let_next = ints(s, cap, -1);
    s->let_prev = ints(s, cap, -1);
    s->env = salloc(s, cap * sizeof *s->env);
    s->rhs = salloc(s, cap * sizeof *s->rhs);
    s->params = salloc(s, cap * sizeof *s->params);
    s->acopy = salloc(s, cap * sizeof *s->acopy);
    s->use_index = ints(s, cap, -1);
    s->htab = ints(s, hcap, -1);
    s->stack = salloc(s, cap * sizeof *s->stack);
    s->mstamp = salloc(s, cap * sizeof *s->mstamp);
    s->mval = salloc(s, cap);
    s->mstack = salloc(s, cap * sizeof *s->mstack);
    s->plev = salloc(s, cap);
    for (size_t i = 0; s->plev && i < cap; i++) {
        s->plev[i] = LV_ARR;
    }
    return s->status == WEFT_OK;
}

/* Fill `out` from the emitted root (uses retained last, so that nothing
 * needs undoing on an error). */
static bool finish_core(share *s, fe_term *const *results, int n, fe_term *root,
                        fe_core *out)
{
    int noutput = 0;
    for (int i = 0; i < n; i++) {
        noutput += results[i]->atype ? results[i]->atype->narrays : 1;
    }
    const fe_atype **output = calloc_core(s, (size_t)noutput * sizeof *output);
    const fe_atype **param = calloc_core(
        s, (size_t)(s->p->nparam > 0 ? s->p->nparam : 1) * sizeof *param);
    weft_array **uses =
        calloc_core(s, (size_t)(s->nuse > 0 ? s->nuse : 1) * sizeof *uses);
    if (!output || !param || !uses) {
        return false;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        const fe_atype *t = s->acopy[s->term_node[results[i]->id]];
        if (!t || t->narrays + k > noutput) {
            fail(s, WEFT_ERR_INTERNAL,
                 "result %d has no type (internal "
                 "error)",
                 i);
            return false;
        }
        flatten(t, output, &k);
    }
    for (int i = 0; i < s->p->nparam; i++) {
        const fe_term *pt = s->p->params[i];
        if (!(param[i] = fe_atype_array(s->into, pt->type, pt->rank))) {
            oom(s);
            return false;
        }
    }
    for (int i = 0; i < s->nuse; i++) {
        uses[i] = s->uses_out[i];
        weft_array_retain(uses[i]);
    }
    memset(out, 0, sizeof *out);
    out->arena = s->into;
    out->root = root;
    out->nresult = n;
    out->noutput = k;
    out->output = output;
    out->nparam = s->p->nparam;
    out->param = param;
    out->nvar = s->nvar;
    out->nuse = s->nuse;
    out->uses = uses;
    return true;
}

static weft_status share_run(share *s, fe_term *const *results, int n,
                             fe_core *out)
{
    if (!setup(s)) {
        return s->status;
    }
    for (int i = 0; i < n; i++) {
        if (!walk(s, results[i])) {
            return s->status;
        }
    }
    int32_t root = s->nnode;
    int32_t *rch = ints(s, (size_t)n, 0);
    if (!rch) {
        return s->status;
    }
    s->ch[root] = rch;
    s->nch[root] = n;
    for (int i = 0; i < n; i++) {
        int32_t r = s->term_node[results[i]->id];
        rch[i] = r;
        s->uses[r]++;
        if (s->nfv[r] > 0) {
            scope_error(s, s->fv[r][0]);
            return s->status;
        }
    }
    dominators(s);
    place(s);
    s->uses_out = salloc(s, (size_t)(root + 1) * sizeof *s->uses_out);
    fe_term **kids = salloc(s, (size_t)n * sizeof *kids);
    const fe_atype **types = salloc(s, (size_t)n * sizeof *types);
    if (!s->uses_out || !kids || !types || !open_lets(s, root)) {
        return s->status;
    }
    fe_term *tuple = core_term(s, FE_ATUPLE, n, 0);
    if (!tuple) {
        return s->status;
    }
    for (int i = 0; i < n; i++) {
        if (!(tuple->kid[i] = emit_use(s, rch[i]))) {
            return s->status;
        }
        if (!(types[i] = acopy(s, rch[i]))) {
            return s->status ? s->status
                             : fe_error(WEFT_ERR_INTERNAL,
                                        "%s: a result has no type", s->who);
        }
    }
    tuple->type = 0;
    tuple->rank = -1;
    if (!(tuple->atype = fe_atype_tuple(s->into, n, types))) {
        oom(s);
        return s->status;
    }
    fe_term *top = close_lets(s, root, tuple);
    if (!top || !finish_core(s, results, n, top, out)) {
        return s->status
                   ? s->status
                   : fe_error(WEFT_ERR_INTERNAL, "%s: internal error", s->who);
    }
    return WEFT_OK;
}

weft_status fe_share(weft_program *p, const char *who, fe_term *const *results,
                     int n, fe_arena *into, fe_core *out)
{
    if (who == NULL) {
        who = "weft_compile";
    }
    if (p == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: the program is NULL", who);
    }
    if (p->status != WEFT_OK) {
        return fe_error_copy(p->status, p->msg);
    }
    if (results == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: results is NULL", who);
    }
    if (into == NULL || out == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: no place for the core",
                        who);
    }
    if (n < 1) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: a program needs at least one result", who);
    }
    for (int i = 0; i < n; i++) {
        if (results[i] == NULL) {
            return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: result %d is NULL",
                            who, i);
        }
        if (results[i]->prog != p) {
            return fe_error(WEFT_ERR_PROGRAM_MISMATCH,
                            "%s: result %d belongs to another program", who, i);
        }
        if (!results[i]->acc) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: result %d is not an array term", who, i);
        }
    }
    share s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.ctx = p->ctx;
    s.who = who;
    s.into = into;
    s.nid = p->next_id;
    fe_arena_init(&s.scratch, p->ctx);
    weft_status st = share_run(&s, results, n, out);
    fe_arena_release(&s.scratch);
    return st;
}

void fe_core_release_uses(fe_core *core)
{
    if (core == NULL) {
        return;
    }
    for (int i = 0; i < core->nuse; i++) {
        weft_array_release(core->uses[i]);
    }
    core->nuse = 0;
}

/* ---- depth ------------------------------------------------------------------ */

typedef struct dframe {
    const fe_term *t; /* a term, or NULL for a function's body */
    const fe_fun *f;
    int next;
    uint32_t deep; /* the deepest child so far */
} dframe;

/* The longest path, in terms, from the results of p down the builder's
 * DAG (through function bodies): how deep the passes over the program
 * recurse, give or take the lets sharing recovery adds.  Iterative; 0 when
 * out of memory.  Malformed programs are measured as far as they go
 * (fe_share reports what is wrong with them). */
uint64_t fe_program_depth(weft_program *p, fe_term *const *results, int n)
{
    weft_context *ctx = p->ctx;
    size_t nid = (size_t)p->next_id + 1;
    uint32_t *td = fe_calloc(ctx, nid * sizeof *td); /* depth + 1; 0: not yet */
    uint32_t *fd = fe_calloc(ctx, nid * sizeof *fd);
    size_t cap = 64, sp = 0;
    dframe *st = fe_alloc(ctx, cap * sizeof *st);
    uint64_t best = 0;
    bool ok = td && fd && st;
    for (int r = 0; ok && r < n; r++) {
        const fe_term *t0 = results[r];
        if (!t0 || t0->prog != p || t0->id >= nid) {
            continue;
        }
        sp = 0;
        st[sp++] = (dframe){t0, NULL, 0, 0};
        while (sp > 0 && ok) {
            dframe *fr = &st[sp - 1];
            const fe_term *child = NULL;
            const fe_fun *cf = NULL;
            uint32_t got = 0;
            bool have = false;
            if (fr->f) {
                if (fr->next++ == 0 && fr->f->body) {
                    child = fr->f->body;
                }
            } else if (fr->next < fr->t->nkid + fr->t->nfun) {
                int i = fr->next++;
                if (i < fr->t->nkid) {
                    child = fr->t->kid[i];
                } else {
                    cf = fr->t->fun[i - fr->t->nkid];
                }
                have = true;
            }
            if (child && (child->prog != p || child->id >= nid)) {
                child = NULL;
            }
            if (cf && (cf->prog != p || cf->id >= nid)) {
                cf = NULL;
            }
            if (child || cf) {
                uint32_t memo = child ? td[child->id] : fd[cf->id];
                if (memo == UINT32_MAX) {
                    got = 0; /* a cycle: fe_share reports it */
                } else if (memo > 0) {
                    got = memo;
                } else {
                    if (sp == cap) {
                        dframe *q = fe_realloc(ctx, st, cap * sizeof *st,
                                               2 * cap * sizeof *st);
                        if (!q) {
                            ok = false;
                            break;
                        }
                        st = q;
                        cap *= 2;
                        fr = &st[sp - 1];
                    }
                    if (child) {
                        td[child->id] = UINT32_MAX;
                    } else {
                        fd[cf->id] = UINT32_MAX;
                    }
                    st[sp++] = (dframe){child, cf, 0, 0};
                    continue;
                }
                if (got > fr->deep) {
                    fr->deep = got;
                }
                continue;
            }
            if (have || (fr->f && fr->next == 1)) {
                continue; /* a NULL or foreign child */
            }
            /* finished: pass the depth up */
            uint32_t d = fr->deep + 1;
            if (fr->f) {
                fd[fr->f->id] = d;
            } else {
                td[fr->t->id] = d;
            }
            sp--;
            if (sp > 0 && d > st[sp - 1].deep) {
                st[sp - 1].deep = d;
            }
            if (sp == 0 && d > best) {
                best = d;
            }
        }
    }
    fe_free(ctx, td, nid * sizeof *td);
    fe_free(ctx, fd, nid * sizeof *fd);
    fe_free(ctx, st, cap * sizeof *st);
    return ok ? best : 0;
}

/* The depth of the core's tree (terms, lets and function bodies), by an
 * iterative walk; 0 when out of memory. */
uint64_t fe_core_depth(weft_context *ctx, const fe_core *core)
{
    typedef struct {
        const fe_term *t;
        uint64_t d;
    } item;
    size_t cap = 64, sp = 0;
    item *st = fe_alloc(ctx, cap * sizeof *st);
    uint64_t best = 0;
    if (!st) {
        return 0;
    }
    if (core->root) {
        st[sp++] = (item){core->root, 1};
    }
    while (sp > 0) {
        item it = st[--sp];
        if (it.d > best) {
            best = it.d;
        }
        const fe_term *t = it.t;
        size_t need = sp + (size_t)t->nkid + (size_t)t->nfun;
        if (need > cap) {
            size_t ncap = cap;
            while (ncap < need) {
                ncap *= 2;
            }
            item *q = fe_realloc(ctx, st, cap * sizeof *st, ncap * sizeof *st);
            if (!q) {
                fe_free(ctx, st, cap * sizeof *st);
                return 0;
            }
            st = q;
            cap = ncap;
        }
        for (int i = 0; i < t->nkid; i++) {
            if (t->kid[i]) {
                st[sp++] = (item){t->kid[i], it.d + 1};
            }
        }
        for (int i = 0; i < t->nfun; i++) {
            if (t->fun[i] && t->fun[i]->body) {
                st[sp++] = (item){t->fun[i]->body, it.d + 1};
            }
        }
    }
    fe_free(ctx, st, cap * sizeof *st);
    return best;
}
