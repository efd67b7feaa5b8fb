/*
 * lib/interp.c: the reference interpreter, a backend that evaluates the core
 * directly.
 *
 * Needs: a core from fe_share (a tree whose root is an FE_ATUPLE of the
 * results, possibly under lets; function parameters and let binders are
 * FE_VAR terms with ids 0 .. nvar-1).  Provides: fe_interp and the backend
 * table fe_backend_interp.
 *
 * How it works.  Two mutually recursive walkers: eval_exp computes a scalar
 * term into a vector of fe_val leaves (a tuple flattened depth-first, an
 * index as its i64 components), and eval_acc computes an array term into a
 * flat list of weft_array pointers (one for a single array, several for a
 * tuple of arrays), each holding one reference that the caller owns.  The
 * environment is an array indexed by variable id: a scalar variable has a
 * leaf vector allocated on its first binding, an array variable a list of
 * arrays whose references are held while it is bound.  A function is
 * applied by writing its arguments into its parameters' slots and
 * evaluating its body; collective operations do that once per element.
 * Temporaries of scalar evaluation come from a stack of chunks (push, then
 * release to a mark) so that no element costs an allocation.
 *
 * Everything lives in one `interp` per call, so one executable may run on
 * several threads.  Every path, error paths included, releases the arrays
 * it made: an operation either stores all of its results or none.
 *
 * The `ignore` marker of permute is an index whose components are all
 * INT64_MIN (no valid index has a negative component); for a rank-0 target,
 * where an index has no components, evaluating the marker (or reading a
 * let-bound variable that holds it) sets a flag that permute reads instead.
 *
 * A compiled backend runs the same walker (fe_interp_hooked) and takes
 * over the collective operations through its hook.  A backend whose
 * arrays live on a device (fe_interp_device, the GPU) also makes awhile
 * speculate: each body is queued before the host waits for its
 * condition, so that the device does not drain at every iteration
 * ("Speculation", at acc_awhile).
 *
 * Semantics are those of DESIGN.md, "The language"; the scalar primitives
 * are in interp_scalar.c.
 */
#include <stdio.h>
#include <string.h>

#include "fe.h"

#define WHO "weft_run"

/* ---- state ---------------------------------------------------------------- */

/* One variable's binding. */
typedef struct slot {
    fe_val *v; /* scalar variable: its leaves (allocated once) */
    int nv;
    bool ign;       /* a rank-0 index bound to `ignore` (no leaves) */
    weft_array **a; /* array variable: references held while bound */
    int na;
} slot;

/* A chunk of the scratch stack. */
typedef struct chunk {
    struct chunk *prev;
    size_t cap, used; /* in fe_val units */
    fe_val v[];
} chunk;

typedef struct mark {
    chunk *c;
    size_t used;
} mark;

/* Leaf counts of tuple types, cached to avoid the context's lock. */
#define LEAF_CACHE 32

typedef struct fe_ix {
    weft_context *ctx;
    const fe_core *core;
    weft_array *const *in;
    slot *env;          /* core->nvar slots */
    chunk *top, *spare; /* scratch stack and one spare chunk */
    bool ignored;       /* a rank-0 ignore was evaluated */
    struct {
        weft_type t;
        int n;
        const weft_type *l;
    } leaf_cache[LEAF_CACHE];
    fe_interp_hook hook; /* a compiled backend's operations, or NULL */
    void *hook_user;
    const fe_walk_ops *walk; /* a device backend's (fe_interp_device):
                                awhile speculates; else NULL */
    weft_status sync;        /* the first failure to bring an array's device
                              copy to the host (view_init), reported by
                              the operation that read it */
    fe_cancel *cancel;       /* the run's cancellation (may be NULL) */
    uint32_t ticks;          /* scalar terms evaluated, for polling it */
    /* weft_run_into: per output, the caller's array (or NULL), the
     * operation that computes it and which of that operation's arrays it
     * is (mark_dests), and whether it was handed out (fe_ix_dest) */
    weft_array *const *into;
    const fe_term **dest_term;
    int *dest_o;
    bool *dest_used;
    const fe_term *cur; /* the array operation being evaluated */
    int cur_out;        /* new_array calls made for it so far */
} interp;

/* Scalar terms evaluated between two polls of the run's cancellation: a
 * few microseconds of interpretation. */
#define POLL_EVERY 4096u

static weft_status eval_exp(interp *st, const fe_term *t, fe_val *out);
static weft_status eval_acc(interp *st, const fe_term *t, weft_array **out);

static weft_status oom(void)
{
    return fe_oom(WHO);
}

static weft_status internal(const char *what)
{
    return fe_error(WEFT_ERR_INTERNAL, WHO ": interpreter: %s", what);
}

/* Leaves of type t: count, and their scalar types in *lt. */
static int nleaves(interp *st, weft_type t, const weft_type **lt)
{
    if (!fe_is_tuple(t)) {
        return fe_type_leaves(st->ctx, t, lt);
    }
    unsigned h = (unsigned)t % LEAF_CACHE;
    if (st->leaf_cache[h].t != t) {
        st->leaf_cache[h].n = fe_type_leaves(st->ctx, t, &st->leaf_cache[h].l);
        st->leaf_cache[h].t = t;
    }
    *lt = st->leaf_cache[h].l;
    return st->leaf_cache[h].n;
}

static int leaves_of(interp *st, weft_type t)
{
    const weft_type *lt;
    return nleaves(st, t, &lt);
}

/* ---- scratch stack -------------------------------------------------------- */

/* n fe_vals of scratch, valid until the stack is released below them; NULL
 * when out of memory (no message). */
static fe_val *push(interp *st, size_t n)
{
    if (n == 0) {
        n = 1;
    }
    chunk *c = st->top;
    if (c && c->cap - c->used >= n) {
        fe_val *p = c->v + c->used;
        c->used += n;
        return p;
    }
    chunk *nc = NULL;
    if (st->spare && st->spare->cap >= n) {
        nc = st->spare;
        st->spare = NULL;
    } else {
        size_t cap = n > 4096 ? n : 4096;
        nc = fe_alloc(st->ctx, sizeof *nc + cap * sizeof(fe_val));
        if (!nc) {
            return NULL;
        }
        nc->cap = cap;
    }
    nc->prev = c;
    nc->used = n;
    st->top = nc;
    return nc->v;
}

static mark mark_now(interp *st)
{
    mark m = {st->top, st->top ? st->top->used : 0};
    return m;
}

static void free_chunk(interp *st, chunk *c)
{
    fe_free(st->ctx, c, sizeof *c + c->cap * sizeof(fe_val));
}

/* Pop the scratch stack back to m. */
static void release_to(interp *st, mark m)
{
    while (st->top != m.c) {
        chunk *c = st->top;
        st->top = c->prev;
        if (!st->spare) {
            st->spare = c;
        } else if (st->spare->cap < c->cap) {
            free_chunk(st, st->spare);
            st->spare = c;
        } else {
            free_chunk(st, c);
        }
    }
    if (st->top) {
        st->top->used = m.used;
    }
}

/* The end of an operation with one result r: on success hand r out in
 * out[0], else release it (NULL does nothing).  Returns s. */
static weft_status hand_out(weft_status s, weft_array *r, weft_array **out)
{
    if (s) {
        weft_array_release(r);
    } else {
        out[0] = r;
    }
    return s;
}

/* ---- variables ------------------------------------------------------------ */

/* The leaf vector of scalar variable var (allocated on first use); NULL with
 * a message on failure. */
static fe_val *scalar_slot(interp *st, const fe_var *var)
{
    if (!var || var->id >= st->core->nvar || var->acc) {
        internal("bad scalar variable");
        return NULL;
    }
    slot *s = &st->env[var->id];
    if (!s->v) {
        int n = leaves_of(st, var->type);
        s->v = fe_calloc(st->ctx, sizeof(fe_val) * (size_t)(n > 0 ? n : 1));
        if (!s->v) {
            oom();
            return NULL;
        }
        s->nv = n;
    }
    return s->v;
}

/* The array list of array variable var; NULL with a message on failure. */
static weft_array **array_slot(interp *st, const fe_var *var)
{
    if (!var || var->id >= st->core->nvar || !var->acc || !var->atype) {
        internal("bad array variable");
        return NULL;
    }
    slot *s = &st->env[var->id];
    if (!s->a) {
        int n = var->atype->narrays;
        s->a =
            fe_calloc(st->ctx, sizeof(weft_array *) * (size_t)(n > 0 ? n : 1));
        if (!s->a) {
            oom();
            return NULL;
        }
        s->na = n;
    }
    return s->a;
}

/* Drop the references an array variable holds. */
static void unbind_arrays(interp *st, const fe_var *var)
{
    slot *s = &st->env[var->id];
    for (int i = 0; s->a && i < s->na; i++) {
        weft_array_release(s->a[i]);
        s->a[i] = NULL;
    }
}

/* Bind array variable var to arrays x[0..n-1] (retaining each). */
static weft_status bind_arrays(interp *st, const fe_var *var,
                               weft_array *const *x)
{
    weft_array **a = array_slot(st, var);
    if (!a) {
        return WEFT_ERR_OUT_OF_MEMORY;
    }
    slot *s = &st->env[var->id];
    for (int i = 0; i < s->na; i++) {
        weft_array_retain(x[i]);
        weft_array_release(a[i]);
        a[i] = x[i];
    }
    return WEFT_OK;
}

/* Evaluate the bound value of let t into its variable's slot. */
static weft_status bind_let(interp *st, const fe_term *t)
{
    const fe_var *var = t->u.var;
    if (var && var->acc) {
        weft_array **a = array_slot(st, var);
        if (!a) {
            return WEFT_ERR_OUT_OF_MEMORY;
        }
        unbind_arrays(st, var);
        return eval_acc(st, t->kid[0], a);
    }
    fe_val *v = scalar_slot(st, var);
    if (!v) {
        return WEFT_ERR_OUT_OF_MEMORY;
    }
    /* A rank-0 ignore has no leaves to carry the marker: remember in the
     * slot whether the bound value was one. */
    bool saved = st->ignored;
    st->ignored = false;
    weft_status s = eval_exp(st, t->kid[0], v);
    st->env[var->id].ign = st->ignored;
    st->ignored = saved;
    return s;
}

static void unbind_let(interp *st, const fe_term *t)
{
    if (t->u.var && t->u.var->acc) {
        unbind_arrays(st, t->u.var);
    }
}

/* ---- arrays and indices --------------------------------------------------- */

/* An array with its leaf types at hand. */
typedef struct view {
    weft_array *a;
    int n;
    const weft_type *lt;
} view;

static void view_init(interp *st, view *v, weft_array *a)
{
    weft_status s = fe_array_host(a);
    if (s && !st->sync) {
        st->sync = s;
    }
    v->a = a;
    v->n = nleaves(st, a->type, &v->lt);
}

static void load_elem(const view *v, int64_t i, fe_val *dst)
{
    for (int l = 0; l < v->n; l++) {
        dst[l] = fe_load(v->lt[l], v->a->data[l], i);
    }
}

static void store_elem(const view *v, int64_t i, const fe_val *src)
{
    for (int l = 0; l < v->n; l++) {
        fe_store(v->lt[l], v->a->data[l], i, src[l]);
    }
}

/* Copy element i of src to element j of dst (same element type). */
static void copy_elem(const view *dst, int64_t j, const view *src, int64_t i)
{
    for (int l = 0; l < dst->n; l++) {
        size_t sz = weft_type_size(dst->lt[l]);
        memcpy((char *)dst->a->data[l] + (size_t)j * sz,
               (const char *)src->a->data[l] + (size_t)i * sz, sz);
    }
}

/* Advance multi-index ix in shape (row-major). */
static void ix_next(int rank, const int64_t *shape, int64_t *ix)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++ix[d] < shape[d]) {
            return;
        }
        ix[d] = 0;
    }
}

static int64_t ix_linear(int rank, const int64_t *shape, const int64_t *ix)
{
    int64_t r = 0;
    for (int d = 0; d < rank; d++) {
        r = r * shape[d] + ix[d];
    }
    return r;
}

static bool ix_inside(int rank, const int64_t *shape, const int64_t *ix)
{
    for (int d = 0; d < rank; d++) {
        if (ix[d] < 0 || ix[d] >= shape[d]) {
            return false;
        }
    }
    return true;
}

/* "(3, 7)" into buf. */
static const char *fmt_ix(char *buf, size_t n, int rank, const int64_t *ix)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < rank && len < n; d++) {
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "",
                                (long long)ix[d]);
    }
    if (len < n) {
        snprintf(buf + len, n - len, ")");
    }
    return buf;
}

static weft_status out_of_bounds(int rank, const int64_t *ix,
                                 const int64_t *shape, const char *where)
{
    char a[160], b[160];
    return fe_error(
        WEFT_ERR_OUT_OF_BOUNDS,
        WHO ": index %s is out of bounds for an array of shape %s%s",
        fmt_ix(a, sizeof a, rank, ix), fmt_ix(b, sizeof b, rank, shape), where);
}

/* A run-time error s met while computing element i of an operation: the
 * thread's message gets " at element i", as checked compiled kernels say
 * it (docs/language.md, "What checked mode reports": the result's linear
 * position for the generate family and stencil, the input's for folds,
 * scans and permute).  Other statuses (cancellation, memory) and a
 * message that already names its element (an error inside a nested
 * operation) pass through. */
static weft_status at_element(weft_status s, int64_t i)
{
    if (s != WEFT_ERR_OUT_OF_BOUNDS && s != WEFT_ERR_DIVIDE_BY_ZERO &&
        s != WEFT_ERR_UNDEFINED && s != WEFT_ERR_BAD_SHAPE) {
        return s;
    }
    const char *msg = weft_last_error();
    if (strstr(msg, " at element ")) {
        return s;
    }
    char buf[FE_MSG_MAX];
    snprintf(buf, sizeof buf, "%s", msg);
    return fe_error(s, "%s at element %lld", buf, (long long)i);
}

/* Copy leaves sh[0..rank-1] to shape and check it; *size gets its size. */
static weft_status take_shape(const char *op, int rank, const fe_val *sh,
                              int64_t *shape, int64_t *size)
{
    for (int d = 0; d < rank; d++) {
        shape[d] = sh[d].i;
    }
    *size = fe_shape_size(rank, shape);
    if (*size < 0) {
        char b[160];
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": %s: shape %s has a negative extent or too "
                            "many elements",
                        op, fmt_ix(b, sizeof b, rank, shape));
    }
    return WEFT_OK;
}

/* A new zero-filled array for the next result of the operation being
 * evaluated: the caller's own array when it is an output of
 * weft_run_into (fe_ix_dest). */
static weft_status new_array(interp *st, weft_type type, int rank,
                             const int64_t *shape, weft_array **out)
{
    if (st->into && st->cur) {
        weft_array *d =
            fe_ix_dest(st, st->cur, st->cur_out++, type, rank, shape, true);
        if (d) {
            for (int l = 0; l < d->nleaf; l++) {
                if (d->bytes[l] > 0) {
                    memset(d->data[l], 0, d->bytes[l]);
                }
            }
            *out = d;
            return WEFT_OK;
        }
    }
    return fe_array_new(st->ctx, WHO, type, rank, shape, out);
}

/* The result of an element-wise operation: a new array *r of type, rank
 * and shape, its view *rv, and *tmp, room on the stack for one element
 * (rv->n leaves).  Errors: new_array's, WEFT_ERR_OUT_OF_MEMORY. */
static weft_status new_result(interp *st, weft_type type, int rank,
                              const int64_t *shape, weft_array **r, view *rv,
                              fe_val **tmp)
{
    weft_status s = new_array(st, type, rank, shape, r);
    if (s) {
        return s;
    }
    view_init(st, rv, *r);
    *tmp = push(st, (size_t)rv->n);
    return *tmp ? WEFT_OK : oom();
}

/* Evaluate a single-array term: borrowed from the environment when it is a
 * variable (*own = NULL), else computed (*own = the array to release). */
static weft_status peek_acc(interp *st, const fe_term *t, weft_array **a,
                            weft_array **own)
{
    *a = NULL;
    *own = NULL;
    if (!t->atype || t->atype->narrays != 1) {
        return internal("a tuple of arrays where one array was expected");
    }
    if (t->kind == FE_VAR) {
        const fe_var *v = t->u.var;
        if (!v || v->id >= st->core->nvar || !st->env[v->id].a ||
            !st->env[v->id].a[0]) {
            return internal("an unbound array variable");
        }
        *a = st->env[v->id].a[0];
        return WEFT_OK;
    }
    weft_status s = eval_acc(st, t, own);
    *a = *own;
    return s;
}

/* Evaluate a single-array term into a new reference *a. */
static weft_status eval_one(interp *st, const fe_term *t, weft_array **a)
{
    *a = NULL;
    if (!t->atype || t->atype->narrays != 1) {
        return internal("a tuple of arrays where one array was expected");
    }
    return eval_acc(st, t, a);
}

/* ---- scalar terms --------------------------------------------------------- */

static weft_status exp_prim(interp *st, const fe_term *t, fe_val *out)
{
    weft_op op = (weft_op)t->op;
    if ((unsigned)op >= WEFT_OP_COUNT_) {
        return internal("an unknown primitive");
    }
    fe_val a[2];
    weft_status s = eval_exp(st, t->kid[0], &a[0]);
    if (s) {
        return s;
    }
    if (op == WEFT_OP_AND || op == WEFT_OP_OR) {
        bool first = a[0].u != 0;
        if (first == (op == WEFT_OP_OR)) {
            out->u = first;
            return WEFT_OK;
        }
        s = eval_exp(st, t->kid[1], out);
        out->u = s ? 0 : out->u != 0;
        return s;
    }
    weft_type t1 = 0;
    if (fe_prims[op].arity == 2) {
        s = eval_exp(st, t->kid[1], &a[1]);
        if (s) {
            return s;
        }
        t1 = t->kid[1]->type;
    }
    return fe_prim_eval(op, t->type, t->kid[0]->type, t1, a, out);
}

static weft_status exp_while(interp *st, const fe_term *t, fe_val *out)
{
    const fe_fun *cond = t->fun[0], *body = t->fun[1];
    int n = leaves_of(st, t->type);
    fe_val *pc = scalar_slot(st, cond->param[0]);
    fe_val *pb = scalar_slot(st, body->param[0]);
    if (!pc || !pb) {
        return WEFT_ERR_OUT_OF_MEMORY;
    }
    weft_status s = eval_exp(st, t->kid[0], out);
    while (!s) {
        fe_val c;
        memcpy(pc, out, sizeof *out * (size_t)n);
        s = eval_exp(st, cond->body, &c);
        if (s || !c.u) {
            break;
        }
        memcpy(pb, out, sizeof *out * (size_t)n);
        s = eval_exp(st, body->body, out);
    }
    return s;
}

static weft_status exp_at(interp *st, const fe_term *t, fe_val *out)
{
    weft_array *a, *own;
    weft_status s = peek_acc(st, t->kid[0], &a, &own);
    if (s) {
        return s;
    }
    mark m = mark_now(st);
    view v;
    view_init(st, &v, a);
    if (t->kind == FE_AT) {
        int64_t ix[WEFT_MAX_RANK];
        fe_val *iv = push(st, (size_t)a->rank);
        if (!iv) {
            s = oom();
            goto done;
        }
        s = eval_exp(st, t->kid[1], iv);
        if (s) {
            goto done;
        }
        for (int d = 0; d < a->rank; d++) {
            ix[d] = iv[d].i;
        }
        if (!ix_inside(a->rank, a->shape, ix)) {
            s = out_of_bounds(a->rank, ix, a->shape, "");
            goto done;
        }
        load_elem(&v, ix_linear(a->rank, a->shape, ix), out);
    } else {
        fe_val i;
        s = eval_exp(st, t->kid[1], &i);
        if (s) {
            goto done;
        }
        if (i.i < 0 || i.i >= a->size) {
            s = fe_error(WEFT_ERR_OUT_OF_BOUNDS,
                         WHO ": linear index %lld is out of bounds for an "
                             "array of %lld elements",
                         (long long)i.i, (long long)a->size);
            goto done;
        }
        load_elem(&v, i.i, out);
    }
done:
    release_to(st, m);
    weft_array_release(own);
    return s;
}

/* Index arithmetic: SHAPE_SIZE, TO_INDEX, FROM_INDEX. */
static weft_status exp_index(interp *st, const fe_term *t, fe_val *out)
{
    mark m = mark_now(st);
    weft_status s = WEFT_OK;
    weft_type sht = t->kid[0]->type;
    int n = fe_dim_rank(sht);
    fe_val *sh = push(st, (size_t)n), *ix = push(st, (size_t)n);
    if (!sh || !ix) {
        s = oom();
        goto done;
    }
    s = eval_exp(st, t->kid[0], sh);
    if (s) {
        goto done;
    }
    if (t->kind == FE_SHAPE_SIZE) {
        uint64_t p = 1;
        for (int d = 0; d < n; d++) {
            p *= sh[d].u;
        }
        out->u = p;
    } else if (t->kind == FE_TO_INDEX) {
        s = eval_exp(st, t->kid[1], ix);
        if (s) {
            goto done;
        }
        uint64_t r = 0;
        for (int d = 0; d < n; d++) {
            r = r * sh[d].u + ix[d].u;
        }
        out->u = r;
    } else {
        fe_val i;
        s = eval_exp(st, t->kid[1], &i);
        if (s) {
            goto done;
        }
        int64_t v = i.i;
        for (int d = n - 1; d >= 1; d--) {
            if (sh[d].i <= 0) {
                s = fe_error(sh[d].i ? WEFT_ERR_BAD_SHAPE
                                     : WEFT_ERR_DIVIDE_BY_ZERO,
                             WHO ": from_index in a shape with extent %lld",
                             (long long)sh[d].i);
                goto done;
            }
            out[d].i = v % sh[d].i;
            v /= sh[d].i;
        }
        if (n > 0) {
            out[0].i = v;
        }
    }
done:
    release_to(st, m);
    return s;
}

/* Evaluate scalar term t into out (leaves of t->type). */
static weft_status eval_exp(interp *st, const fe_term *t, fe_val *out)
{
    weft_status s = WEFT_OK;
    if (st->cancel && ++st->ticks % POLL_EVERY == 0 &&
        fe_cancelled(st->cancel)) {
        return fe_cancel_error(st->cancel);
    }
    switch ((fe_kind)t->kind) {
    case FE_CONST: out[0] = t->u.c; return WEFT_OK;
    case FE_VAR: {
        const fe_var *v = t->u.var;
        if (!v || v->acc || v->id >= st->core->nvar || !st->env[v->id].v) {
            return internal("an unbound scalar variable");
        }
        memcpy(out, st->env[v->id].v, sizeof *out * (size_t)st->env[v->id].nv);
        if (st->env[v->id].nv == 0 && st->env[v->id].ign) {
            st->ignored = true;
        }
        return WEFT_OK;
    }
    case FE_PRIM: return exp_prim(st, t, out);
    case FE_COND: {
        fe_val c;
        s = eval_exp(st, t->kid[0], &c);
        if (s) {
            return s;
        }
        return eval_exp(st, t->kid[c.u ? 1 : 2], out);
    }
    case FE_TUPLE: {
        int off = 0;
        for (int i = 0; i < t->nkid && !s; i++) {
            s = eval_exp(st, t->kid[i], out + off);
            off += leaves_of(st, t->kid[i]->type);
        }
        return s;
    }
    case FE_GET: {
        weft_type tt = t->kid[0]->type;
        if (t->kid[0]->kind == FE_VAR) {
            /* a component of a bound tuple: copy its leaves alone (a wide
             * tuple projected once per component would otherwise copy
             * the whole tuple each time) */
            const fe_var *v = t->kid[0]->u.var;
            if (!v || v->acc || v->id >= st->core->nvar || !st->env[v->id].v) {
                return internal("an unbound scalar variable");
            }
            int off = fe_type_leaf_offset(st->ctx, tt, t->u.index);
            memcpy(out, st->env[v->id].v + off,
                   sizeof *out * (size_t)leaves_of(st, t->type));
            return WEFT_OK;
        }
        mark m = mark_now(st);
        fe_val *tmp = push(st, (size_t)leaves_of(st, tt));
        if (!tmp) {
            return oom();
        }
        s = eval_exp(st, t->kid[0], tmp);
        if (!s) {
            int off = fe_type_leaf_offset(st->ctx, tt, t->u.index);
            memcpy(out, tmp + off,
                   sizeof *out * (size_t)leaves_of(st, t->type));
        }
        release_to(st, m);
        return s;
    }
    case FE_SHAPE: {
        weft_array *a, *own;
        s = peek_acc(st, t->kid[0], &a, &own);
        if (!s) {
            for (int d = 0; d < a->rank; d++) {
                out[d].i = a->shape[d];
            }
        }
        weft_array_release(own);
        return s;
    }
    case FE_SHAPE_SIZE:
    case FE_TO_INDEX:
    case FE_FROM_INDEX: return exp_index(st, t, out);
    case FE_AT:
    case FE_AT_LINEAR: return exp_at(st, t, out);
    case FE_WHILE: return exp_while(st, t, out);
    case FE_IGNORE: {
        int n = fe_dim_rank(t->type);
        for (int d = 0; d < n; d++) {
            out[d].i = INT64_MIN;
        }
        if (n == 0) {
            st->ignored = true;
        }
        return WEFT_OK;
    }
    case FE_LET:
        s = bind_let(st, t);
        if (!s) {
            s = eval_exp(st, t->kid[1], out);
        }
        unbind_let(st, t);
        return s;
    default: break;
    }
    return internal("an unexpected scalar term");
}

/* ---- producers ------------------------------------------------------------ */

/* Bind a multi-index to a DIM-typed parameter. */
static void put_ix(fe_val *p, int rank, const int64_t *ix)
{
    for (int d = 0; d < rank; d++) {
        p[d].i = ix[d];
    }
}

static weft_status acc_unit(interp *st, const fe_term *t, weft_array **out)
{
    mark m = mark_now(st);
    weft_array *r = NULL;
    fe_val *v = push(st, (size_t)leaves_of(st, t->type));
    weft_status s = v ? eval_exp(st, t->kid[0], v) : oom();
    if (!s) {
        s = new_array(st, t->type, 0, NULL, &r);
    }
    if (!s) {
        view rv;
        view_init(st, &rv, r);
        store_elem(&rv, 0, v);
        out[0] = r;
    }
    release_to(st, m);
    return s;
}

/* Element i of an element-wise result: f's body (its parameters already
 * set) into tmp, stored at i of rv; an error names the element. */
static weft_status put_elem(interp *st, const fe_fun *f, fe_val *tmp,
                            const view *rv, int64_t i)
{
    weft_status s = eval_exp(st, f->body, tmp);
    if (s) {
        return at_element(s, i);
    }
    store_elem(rv, i, tmp);
    return WEFT_OK;
}

static weft_status acc_generate(interp *st, const fe_term *t, weft_array **out)
{
    const fe_fun *f = t->fun[0];
    int rank = t->rank;
    int64_t shape[WEFT_MAX_RANK], ix[WEFT_MAX_RANK] = {0}, size;
    weft_array *r = NULL;
    mark m = mark_now(st);
    fe_val *sh = push(st, (size_t)rank);
    fe_val *p = scalar_slot(st, f->param[0]);
    weft_status s = (sh && p) ? WEFT_OK : oom();
    if (!s) {
        s = eval_exp(st, t->kid[0], sh);
    }
    if (!s) {
        s = take_shape("generate", rank, sh, shape, &size);
    }
    view rv;
    fe_val *tmp = NULL;
    if (!s) {
        s = new_result(st, t->type, rank, shape, &r, &rv, &tmp);
    }
    if (s) {
        goto done;
    }
    for (int64_t i = 0; i < (rv.n > 0 ? size : 0); i++) {
        put_ix(p, rank, ix);
        if ((s = put_elem(st, f, tmp, &rv, i)) != WEFT_OK) {
            goto done;
        }
        ix_next(rank, shape, ix);
    }
done:
    release_to(st, m);
    return hand_out(s, r, out);
}

/* *out = f applied to each element of a (its result type `type`). */
static weft_status map_array(interp *st, const fe_fun *f, weft_type type,
                             weft_array *a, weft_array **out)
{
    weft_array *r = NULL;
    mark m = mark_now(st);
    weft_status s = new_array(st, type, a->rank, a->shape, &r);
    if (s) {
        goto done;
    }
    view av, rv;
    view_init(st, &av, a);
    view_init(st, &rv, r);
    fe_val *p = scalar_slot(st, f->param[0]);
    fe_val *tmp = push(st, (size_t)rv.n);
    if (!p || !tmp) {
        s = p ? oom() : WEFT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    for (int64_t i = 0; i < (rv.n > 0 ? a->size : 0); i++) {
        load_elem(&av, i, p);
        if ((s = put_elem(st, f, tmp, &rv, i)) != WEFT_OK) {
            goto done;
        }
    }
done:
    release_to(st, m);
    return hand_out(s, r, out);
}

static weft_status acc_map(interp *st, const fe_term *t, weft_array **out)
{
    weft_array *a = NULL;
    weft_status s = eval_one(st, t->kid[0], &a);
    if (!s) {
        s = map_array(st, t->fun[0], t->type, a, out);
    }
    weft_array_release(a);
    return s;
}

static weft_status acc_zipwith(interp *st, const fe_term *t, weft_array **out)
{
    const fe_fun *f = t->fun[0];
    int n = t->nkid;
    weft_array *a[3] = {NULL, NULL, NULL}, *r = NULL;
    mark m = mark_now(st);
    weft_status s = WEFT_OK;
    if (n < 1 || n > 3 || f->arity != n) {
        return internal("zipWith of an unexpected arity");
    }
    for (int k = 0; k < n && !s; k++) {
        s = eval_one(st, t->kid[k], &a[k]);
    }
    if (s) {
        goto done;
    }
    int rank = t->rank;
    int64_t shape[WEFT_MAX_RANK], ix[WEFT_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) {
        shape[d] = a[0]->shape[d];
        for (int k = 1; k < n; k++) {
            if (a[k]->shape[d] < shape[d]) {
                shape[d] = a[k]->shape[d];
            }
        }
    }
    s = new_array(st, t->type, rank, shape, &r);
    if (s) {
        goto done;
    }
    view av[3], rv;
    fe_val *p[3];
    for (int k = 0; k < n; k++) {
        view_init(st, &av[k], a[k]);
        p[k] = scalar_slot(st, f->param[k]);
        if (!p[k]) {
            s = WEFT_ERR_OUT_OF_MEMORY;
            goto done;
        }
    }
    view_init(st, &rv, r);
    fe_val *tmp = push(st, (size_t)rv.n);
    if (!tmp) {
        s = oom();
        goto done;
    }
    for (int64_t i = 0; i < (rv.n > 0 ? r->size : 0); i++) {
        for (int k = 0; k < n; k++) {
            load_elem(&av[k], ix_linear(rank, a[k]->shape, ix), p[k]);
        }
        if ((s = put_elem(st, f, tmp, &rv, i)) != WEFT_OK) {
            goto done;
        }
        ix_next(rank, shape, ix);
    }
done:
    release_to(st, m);
    for (int k = 0; k < 3; k++) {
        weft_array_release(a[k]);
    }
    return hand_out(s, r, out);
}

static weft_status acc_reshape(interp *st, const fe_term *t, weft_array **out)
{
    int rank = t->rank;
    int64_t shape[WEFT_MAX_RANK], size;
    weft_array *a = NULL, *r = NULL;
    mark m = mark_now(st);
    fe_val *sh = push(st, (size_t)rank);
    weft_status s = sh ? eval_exp(st, t->kid[0], sh) : oom();
    if (!s) {
        s = take_shape("reshape", rank, sh, shape, &size);
    }
    if (!s) {
        s = eval_one(st, t->kid[1], &a);
    }
    if (!s && size != a->size) {
        char b1[160], b2[160];
        s = fe_error(WEFT_ERR_RESHAPE_SIZE,
                     WHO ": reshape to shape %s (%lld elements) of an array "
                         "of shape %s (%lld elements)",
                     fmt_ix(b1, sizeof b1, rank, shape), (long long)size,
                     fmt_ix(b2, sizeof b2, a->rank, a->shape),
                     (long long)a->size);
    }
    if (!s) {
        s = fe_array_host(a);
    }
    if (!s) {
        s = new_array(st, t->type, rank, shape, &r);
    }
    if (!s) {
        for (int l = 0; l < r->nleaf; l++) {
            if (r->bytes[l] > 0) {
                memcpy(r->data[l], a->data[l], r->bytes[l]);
            }
        }
        out[0] = r;
    }
    release_to(st, m);
    weft_array_release(a);
    return s;
}

/* Evaluate an i64 specification entry of replicate / slice. */
static weft_status spec_value(interp *st, const fe_term *t, int64_t *v)
{
    fe_val x;
    weft_status s = eval_exp(st, t, &x);
    *v = x.i;
    return s;
}

static weft_status acc_replicate(interp *st, const fe_term *t, weft_array **out)
{
    int rank = t->rank;
    int64_t shape[WEFT_MAX_RANK], ix[WEFT_MAX_RANK] = {0};
    int64_t six[WEFT_MAX_RANK] = {0};
    int from[WEFT_MAX_RANK]; /* result dim -> source dim, or -1 */
    weft_array *a = NULL, *r = NULL;
    weft_status s = eval_one(st, t->kid[0], &a);
    if (s) {
        return s;
    }
    if (t->nkid - 1 != rank) {
        s = internal("replicate with a bad specification");
        goto done;
    }
    int j = 0;
    for (int d = 0; d < rank; d++) {
        const fe_term *sp = t->kid[1 + d];
        if (sp->kind == FE_ALL) {
            if (j >= a->rank) {
                s = internal("replicate with too many `all`");
                goto done;
            }
            from[d] = j;
            shape[d] = a->shape[j++];
        } else {
            from[d] = -1;
            s = spec_value(st, sp, &shape[d]);
            if (s) {
                goto done;
            }
            if (shape[d] < 0) {
                s = fe_error(WEFT_ERR_BAD_SHAPE,
                             WHO ": replicate: negative extent %lld",
                             (long long)shape[d]);
                goto done;
            }
        }
    }
    if (fe_shape_size(rank, shape) < 0) {
        s = fe_error(WEFT_ERR_BAD_SHAPE,
                     WHO ": replicate: the result has too many elements");
        goto done;
    }
    s = new_array(st, t->type, rank, shape, &r);
    if (s) {
        goto done;
    }
    view av, rv;
    view_init(st, &av, a);
    view_init(st, &rv, r);
    for (int64_t i = 0; i < r->size; i++) {
        for (int d = 0; d < rank; d++) {
            if (from[d] >= 0) {
                six[from[d]] = ix[d];
            }
        }
        copy_elem(&rv, i, &av, ix_linear(a->rank, a->shape, six));
        ix_next(rank, shape, ix);
    }
done:
    weft_array_release(a);
    return hand_out(s, r, out);
}

static weft_status acc_slice(interp *st, const fe_term *t, weft_array **out)
{
    int rank = t->rank;
    int64_t shape[WEFT_MAX_RANK], ix[WEFT_MAX_RANK] = {0};
    int64_t six[WEFT_MAX_RANK] = {0};
    int to[WEFT_MAX_RANK]; /* source dim -> result dim, or -1 (fixed) */
    weft_array *a = NULL, *r = NULL;
    weft_status s = eval_one(st, t->kid[0], &a);
    if (s) {
        return s;
    }
    if (t->nkid - 1 != a->rank) {
        s = internal("slice with a bad specification");
        goto done;
    }
    int j = 0;
    for (int d = 0; d < a->rank; d++) {
        const fe_term *sp = t->kid[1 + d];
        if (sp->kind == FE_ALL) {
            if (j >= rank) {
                s = internal("slice with too many `all`");
                goto done;
            }
            to[d] = j;
            shape[j++] = a->shape[d];
        } else {
            to[d] = -1;
            s = spec_value(st, sp, &six[d]);
            if (s) {
                goto done;
            }
            if (six[d] < 0 || six[d] >= a->shape[d]) {
                s = fe_error(WEFT_ERR_SLICE_INDEX,
                             WHO ": slice index %lld is outside dimension %d "
                                 "of extent %lld",
                             (long long)six[d], d, (long long)a->shape[d]);
                goto done;
            }
        }
    }
    s = new_array(st, t->type, rank, shape, &r);
    if (s) {
        goto done;
    }
    view av, rv;
    view_init(st, &av, a);
    view_init(st, &rv, r);
    for (int64_t i = 0; i < r->size; i++) {
        for (int d = 0; d < a->rank; d++) {
            if (to[d] >= 0) {
                six[d] = ix[to[d]];
            }
        }
        copy_elem(&rv, i, &av, ix_linear(a->rank, a->shape, six));
        ix_next(rank, shape, ix);
    }
done:
    weft_array_release(a);
    return hand_out(s, r, out);
}

/* backpermute and transform. */
static weft_status acc_backpermute(interp *st, const fe_term *t,
                                   weft_array **out)
{
    const fe_fun *fix = t->fun[0];
    const fe_fun *f = t->kind == FE_TRANSFORM ? t->fun[1] : NULL;
    const char *where = f ? " (transform)" : " (backpermute)";
    int rank = t->rank;
    int64_t shape[WEFT_MAX_RANK], ix[WEFT_MAX_RANK] = {0}, size;
    int64_t six[WEFT_MAX_RANK];
    weft_array *a = NULL, *r = NULL;
    mark m = mark_now(st);
    fe_val *sh = push(st, (size_t)rank);
    weft_status s = sh ? eval_exp(st, t->kid[0], sh) : oom();
    if (!s) {
        s = take_shape(f ? "transform" : "backpermute", rank, sh, shape, &size);
    }
    if (!s) {
        s = eval_one(st, t->kid[1], &a);
    }
    if (!s) {
        s = new_array(st, t->type, rank, shape, &r);
    }
    if (s) {
        goto done;
    }
    view av, rv;
    view_init(st, &av, a);
    view_init(st, &rv, r);
    fe_val *pix = scalar_slot(st, fix->param[0]);
    fe_val *pf = f ? scalar_slot(st, f->param[0]) : NULL;
    fe_val *siv = push(st, (size_t)a->rank);
    fe_val *tmp = push(st, (size_t)rv.n);
    if (!pix || (f && !pf)) {
        s = WEFT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    if (!siv || !tmp) {
        s = oom();
        goto done;
    }
    for (int64_t i = 0; i < size; i++) {
        put_ix(pix, rank, ix);
        s = eval_exp(st, fix->body, siv);
        if (s) {
            s = at_element(s, i);
            goto done;
        }
        for (int d = 0; d < a->rank; d++) {
            six[d] = siv[d].i;
        }
        if (!ix_inside(a->rank, a->shape, six)) {
            s = out_of_bounds(a->rank, six, a->shape, where);
            goto done;
        }
        int64_t j = ix_linear(a->rank, a->shape, six);
        if (f) {
            load_elem(&av, j, pf);
            if ((s = put_elem(st, f, tmp, &rv, i)) != WEFT_OK) {
                goto done;
            }
        } else {
            copy_elem(&rv, i, &av, j);
        }
        ix_next(rank, shape, ix);
    }
done:
    release_to(st, m);
    weft_array_release(a);
    return hand_out(s, r, out);
}

/* ---- reductions and scans ------------------------------------------------- */

/* What every fold and scan shares: the function's two parameter slots and
 * a combining step acc = f(acc, x) or acc = f(x, acc). */
typedef struct comb {
    const fe_fun *f;
    fe_val *p0, *p1;
    int n; /* leaves of the element type */
} comb;

static weft_status comb_init(interp *st, comb *c, const fe_fun *f, int n)
{
    c->f = f;
    c->n = n;
    c->p0 = scalar_slot(st, f->param[0]);
    c->p1 = scalar_slot(st, f->param[1]);
    return c->p0 && c->p1 ? WEFT_OK : WEFT_ERR_OUT_OF_MEMORY;
}

/* acc = f(acc, element i of v) */
static weft_status comb_left(interp *st, const comb *c, fe_val *acc,
                             const view *v, int64_t i)
{
    memcpy(c->p0, acc, sizeof *acc * (size_t)c->n);
    load_elem(v, i, c->p1);
    weft_status s = eval_exp(st, c->f->body, acc);
    return s ? at_element(s, i) : s;
}

/* acc = f(element i of v, acc) */
static weft_status comb_right(interp *st, const comb *c, fe_val *acc,
                              const view *v, int64_t i)
{
    load_elem(v, i, c->p0);
    memcpy(c->p1, acc, sizeof *acc * (size_t)c->n);
    weft_status s = eval_exp(st, c->f->body, acc);
    return s ? at_element(s, i) : s;
}

/* Evaluate the input array of a fold or scan (rank >= 1) and split its
 * shape into rows: *outer rows of *inner elements. */
static weft_status rows_of(interp *st, const fe_term *t, weft_array **a,
                           int64_t *outer, int64_t *inner)
{
    weft_status s = eval_one(st, t, a);
    if (s) {
        return s;
    }
    if ((*a)->rank < 1) {
        weft_array_release(*a);
        *a = NULL;
        return internal("a fold or scan of a rank-0 array");
    }
    *inner = (*a)->shape[(*a)->rank - 1];
    *outer = fe_shape_size((*a)->rank - 1, (*a)->shape);
    return WEFT_OK;
}

/* A fold or scan in the making: the seed z (when seeded) and the
 * accumulator, n leaves each on the interpreter's stack from mark m; the
 * input array a as outer rows of inner elements, read through av; the
 * combining step c. */
typedef struct reduce {
    mark m;
    bool seeded;
    int n;
    fe_val *z, *acc;
    weft_array *a;
    int64_t outer, inner;
    view av;
    comb c;
} reduce;

/* Begin reduction t (a fold or scan) of elements of type elt: the seed
 * t->kid[0] when seeded, then the input (the next operand) as rows.
 * reduce_end releases what *rd holds, whatever this returns. */
static weft_status reduce_begin(interp *st, const fe_term *t, bool seeded,
                                weft_type elt, reduce *rd)
{
    rd->m = mark_now(st);
    rd->seeded = seeded;
    rd->n = leaves_of(st, elt);
    rd->z = push(st, (size_t)rd->n);
    rd->acc = push(st, (size_t)rd->n);
    rd->a = NULL;
    rd->outer = rd->inner = 0;
    weft_status s = (rd->z && rd->acc) ? WEFT_OK : oom();
    if (!s && seeded) {
        s = eval_exp(st, t->kid[0], rd->z);
    }
    if (!s) {
        s = rows_of(st, t->kid[seeded ? 1 : 0], &rd->a, &rd->outer, &rd->inner);
    }
    return s;
}

/* Ready the walk over the input, once the results are allocated: the
 * combining step of function f and the input's view. */
static weft_status reduce_walk(interp *st, reduce *rd, const fe_fun *f)
{
    weft_status s = comb_init(st, &rd->c, f, rd->n);
    if (s == WEFT_OK) {
        view_init(st, &rd->av, rd->a);
    }
    return s;
}

/* acc = the left fold of elements [i, end) of the input, from the seed,
 * or unseeded from element i (the range is then not empty). */
static weft_status reduce_range(interp *st, reduce *rd, int64_t i, int64_t end)
{
    if (rd->seeded) {
        memcpy(rd->acc, rd->z, sizeof *rd->z * (size_t)rd->n);
    } else {
        load_elem(&rd->av, i++, rd->acc);
    }
    for (; i < end; i++) {
        weft_status s = comb_left(st, &rd->c, rd->acc, &rd->av, i);
        if (s) {
            return s;
        }
    }
    return WEFT_OK;
}

static void reduce_end(interp *st, reduce *rd)
{
    release_to(st, rd->m);
    weft_array_release(rd->a);
}

/* fold and fold1. */
static weft_status acc_fold(interp *st, const fe_term *t, weft_array **out)
{
    reduce rd;
    weft_array *r = NULL;
    weft_status s =
        reduce_begin(st, t, t->kind == FE_FOLD, fe_fold_type(t), &rd);
    if (s) {
        goto done;
    }
    if (!rd.seeded && rd.inner == 0 && rd.outer > 0) {
        char b[160];
        s = fe_error(WEFT_ERR_EMPTY_ARRAY,
                     WHO ": fold1 of empty rows (an array of shape %s)",
                     fmt_ix(b, sizeof b, rd.a->rank, rd.a->shape));
        goto done;
    }
    s = new_array(st, fe_fold_type(t), rd.a->rank - 1, rd.a->shape, &r);
    if (!s) {
        s = reduce_walk(st, &rd, t->fun[0]);
    }
    if (s) {
        goto done;
    }
    view rv;
    view_init(st, &rv, r);
    for (int64_t o = 0; o < rd.outer; o++) {
        s = reduce_range(st, &rd, o * rd.inner, (o + 1) * rd.inner);
        if (s) {
            goto done;
        }
        store_elem(&rv, o, rd.acc);
    }
    if (fe_fold_post(t)) {
        /* fuse.c's store rule: the map it took in, over the results */
        weft_array *folded = r;
        r = NULL;
        s = map_array(st, fe_fold_post(t), t->type, folded, &r);
        weft_array_release(folded);
    }
done:
    reduce_end(st, &rd);
    return hand_out(s, r, out);
}

weft_status fe_seg_offsets(const weft_array *seg, int64_t from, int64_t nseg,
                           int64_t inner, const char *name, int64_t *off)
{
    for (int64_t k = from; k < nseg; k++) {
        fe_val v = fe_load(seg->type, seg->data[0], k);
        bool neg = fe_is_signed(seg->type) ? v.i < 0 : false;
        bool huge = !fe_is_signed(seg->type) && v.u > (uint64_t)INT64_MAX;
        if (neg) {
            return fe_error(WEFT_ERR_SEGMENTS,
                            WHO ": %s: segment %lld has negative length %lld",
                            name, (long long)k, (long long)v.i);
        }
        if (huge || v.i > inner - off[k]) {
            return fe_error(WEFT_ERR_SEGMENTS,
                            WHO ": %s: segment lengths sum past the innermost "
                                "extent %lld (at segment %lld)",
                            name, (long long)inner, (long long)k);
        }
        off[k + 1] = off[k] + v.i;
    }
    return WEFT_OK;
}

/* Offset k of descriptor off as an i64; *huge when an unsigned offset is
 * past INT64_MAX (past any extent). */
static int64_t offset_at(const weft_array *off, int64_t k, bool *huge)
{
    fe_val v = fe_load(off->type, off->data[0], k);
    *huge = !fe_is_signed(off->type) && v.u > (uint64_t)INT64_MAX;
    return v.i;
}

weft_status fe_seg_offsets_check(const weft_array *off, int64_t from,
                                 int64_t nseg, int64_t inner, const char *name,
                                 int64_t *out)
{
    bool huge = false;
    int64_t lo = from < nseg ? offset_at(off, from, &huge) : 0;
    if (huge || lo > inner) {
        return fe_error(WEFT_ERR_SEGMENTS,
                        WHO ": %s: segment %lld starts past the innermost "
                            "extent %lld",
                        name, (long long)from, (long long)inner);
    }
    if (lo < 0) {
        return fe_error(WEFT_ERR_SEGMENTS,
                        WHO ": %s: segment %lld starts at offset %lld, below 0",
                        name, (long long)from, (long long)lo);
    }
    for (int64_t k = from; k < nseg; k++) {
        int64_t hi = offset_at(off, k + 1, &huge);
        if (!huge && hi < lo) {
            return fe_error(WEFT_ERR_SEGMENTS,
                            WHO ": %s: segment %lld ends at offset %lld, "
                                "before its start %lld",
                            name, (long long)k, (long long)hi, (long long)lo);
        }
        if (huge || hi > inner) {
            return fe_error(WEFT_ERR_SEGMENTS,
                            WHO ": %s: segment %lld ends past the innermost "
                                "extent %lld",
                            name, (long long)k, (long long)inner);
        }
        if (out) {
            out[k] = lo;
            out[k + 1] = hi;
        }
        lo = hi;
    }
    return WEFT_OK;
}

/* fold_seg and fold1_seg, by lengths or by offsets. */
static weft_status acc_fold_seg(interp *st, const fe_term *t, weft_array **out)
{
    bool seeded = t->kind == FE_FOLD_SEG;
    bool byoff = t->op == FE_SEG_OFFSETS;
    const char *name = seeded  ? byoff ? "fold_seg_offsets" : "fold_seg"
                       : byoff ? "fold1_seg_offsets"
                               : "fold1_seg";
    const fe_term *tseg = t->kid[seeded ? 2 : 1];
    weft_array *seg = NULL, *r = NULL;
    int64_t *off = NULL, nseg = 0;
    reduce rd;
    weft_status s = reduce_begin(st, t, seeded, t->type, &rd);
    if (!s) {
        s = eval_one(st, tseg, &seg);
    }
    if (s) {
        goto done;
    }
    if (seg->rank != 1 || seg->nleaf != 1) {
        s = internal("segment descriptor is not a rank-1 integral array");
        goto done;
    }
    nseg = fe_seg_count(t->op, seg->shape[0]);
    if ((s = fe_array_host(seg)) != WEFT_OK) {
        goto done;
    }
    off = fe_alloc(st->ctx, sizeof *off * (size_t)(nseg + 1));
    if (!off) {
        s = oom();
        goto done;
    }
    off[0] = 0;
    s = byoff ? fe_seg_offsets_check(seg, 0, nseg, rd.inner, name, off)
              : fe_seg_offsets(seg, 0, nseg, rd.inner, name, off);
    if (s) {
        goto done;
    }
    int64_t shape[WEFT_MAX_RANK];
    memcpy(shape, rd.a->shape, sizeof shape);
    shape[rd.a->rank - 1] = nseg;
    if (fe_shape_size(rd.a->rank, shape) < 0) {
        s = fe_error(WEFT_ERR_BAD_SHAPE,
                     WHO ": %s: the result has too many elements", name);
        goto done;
    }
    if (!seeded && rd.outer > 0) {
        for (int64_t k = 0; k < nseg; k++) {
            if (off[k + 1] == off[k]) {
                s = fe_error(WEFT_ERR_EMPTY_ARRAY,
                             WHO ": %s: segment %lld is empty", name,
                             (long long)k);
                goto done;
            }
        }
    }
    s = new_array(st, t->type, rd.a->rank, shape, &r);
    if (!s) {
        s = reduce_walk(st, &rd, t->fun[0]);
    }
    if (s) {
        goto done;
    }
    view rv;
    view_init(st, &rv, r);
    for (int64_t o = 0; o < rd.outer; o++) {
        for (int64_t k = 0; k < nseg; k++) {
            int64_t row = o * rd.inner;
            s = reduce_range(st, &rd, row + off[k], row + off[k + 1]);
            if (s) {
                goto done;
            }
            store_elem(&rv, o * nseg + k, rd.acc);
        }
    }
done:
    reduce_end(st, &rd);
    if (off) {
        fe_free(st->ctx, off, sizeof *off * (size_t)(nseg + 1));
    }
    weft_array_release(seg);
    return hand_out(s, r, out);
}

/* The six scans.  For each row of n elements x:
 *   scanl   r[0] = z, r[k+1] = f(r[k], x[k])            (n + 1 elements)
 *   scanl1  r[0] = x[0], r[k] = f(r[k-1], x[k])          (n)
 *   scanl'  the first n of scanl, and its last as the total
 *   scanr   r[n] = z, r[k] = f(x[k], r[k+1])             (n + 1)
 *   scanr1  r[n-1] = x[n-1], r[k] = f(x[k], r[k+1])      (n)
 *   scanr'  the last n of scanr, and its first as the total */
static weft_status acc_scan(interp *st, const fe_term *t, weft_array **out)
{
    fe_kind k = (fe_kind)t->kind;
    bool seeded =
        k == FE_SCANL || k == FE_SCANL_ || k == FE_SCANR || k == FE_SCANR_;
    bool left = k == FE_SCANL || k == FE_SCANL1 || k == FE_SCANL_;
    bool pair = k == FE_SCANL_ || k == FE_SCANR_;
    bool grow = k == FE_SCANL || k == FE_SCANR; /* n + 1 per row */
    weft_type elt = pair ? t->atype->comp[0]->elt : t->type;
    weft_array *r = NULL, *tot = NULL;
    reduce rd;
    weft_status s = reduce_begin(st, t, seeded, elt, &rd);
    if (s) {
        goto done;
    }
    const weft_array *a = rd.a;
    int64_t outer = rd.outer, inner = rd.inner;
    fe_val *z = rd.z, *acc = rd.acc;
    int n = rd.n;
    int rank = a->rank;
    int64_t shape[WEFT_MAX_RANK];
    memcpy(shape, a->shape, sizeof shape);
    int64_t rinner = inner + (grow ? 1 : 0);
    shape[rank - 1] = rinner;
    if (fe_shape_size(rank, shape) < 0) {
        s = fe_error(WEFT_ERR_BAD_SHAPE,
                     WHO ": scan: the result has too many elements");
        goto done;
    }
    s = new_array(st, elt, rank, shape, &r);
    if (!s && pair) {
        s = new_array(st, elt, rank - 1, a->shape, &tot);
    }
    if (!s) {
        s = reduce_walk(st, &rd, t->fun[0]);
    }
    if (s) {
        goto done;
    }
    const comb *c = &rd.c;
    const view *av = &rd.av;
    view rv, tv;
    view_init(st, &rv, r);
    if (pair) {
        view_init(st, &tv, tot);
    }
    for (int64_t o = 0; o < outer; o++) {
        int64_t base = o * inner, rbase = o * rinner;
        if (inner == 0 && !seeded) {
            continue;
        }
        /* the row from its first element, left or right, storing acc at
         * position i before combining x[i] (scanl, scanl', scanr': the
         * result is offset by one from the combined prefix) or after */
        int64_t first = left ? 0 : inner - 1, step = left ? 1 : -1;
        bool before = left ? seeded : pair;
        int64_t i = first;
        if (seeded) {
            memcpy(acc, z, sizeof *z * (size_t)n);
            if (grow && !left) {
                store_elem(&rv, rbase + inner, acc);
            }
        } else {
            load_elem(av, base + first, acc);
            store_elem(&rv, rbase + first, acc);
            i += step;
        }
        for (; i >= 0 && i < inner; i += step) {
            if (before) {
                store_elem(&rv, rbase + i, acc);
            }
            s = left ? comb_left(st, c, acc, av, base + i)
                     : comb_right(st, c, acc, av, base + i);
            if (s) {
                goto done;
            }
            if (!before) {
                store_elem(&rv, rbase + i, acc);
            }
        }
        if (grow && left) {
            store_elem(&rv, rbase + inner, acc);
        }
        if (pair) {
            store_elem(&tv, o, acc);
        }
    }
done:
    reduce_end(st, &rd);
    if (s) {
        weft_array_release(r);
        weft_array_release(tot);
    } else {
        out[0] = r;
        if (pair) {
            out[1] = tot;
        }
    }
    return s;
}

/* ---- permute and stencils ------------------------------------------------- */

static weft_status acc_permute(interp *st, const fe_term *t, weft_array **out)
{
    const fe_fun *f = t->fun[0], *fix = t->fun[1];
    weft_array *def = NULL, *src = NULL, *r = NULL;
    mark m = mark_now(st);
    weft_status s = eval_one(st, t->kid[0], &def);
    if (!s) {
        s = eval_one(st, t->kid[1], &src);
    }
    if (!s) {
        s = new_array(st, def->type, def->rank, def->shape, &r);
    }
    if (!s) {
        s = fe_array_host(def);
    }
    if (s) {
        goto done;
    }
    for (int l = 0; l < r->nleaf; l++) {
        if (r->bytes[l] > 0) {
            memcpy(r->data[l], def->data[l], r->bytes[l]);
        }
    }
    int drank = def->rank, srank = src->rank;
    view sv, rv;
    view_init(st, &sv, src);
    view_init(st, &rv, r);
    comb c;
    s = comb_init(st, &c, f, rv.n);
    fe_val *pix = scalar_slot(st, fix->param[0]);
    if (s || !pix) {
        s = WEFT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    fe_val *tv = push(st, (size_t)drank), *tmp = push(st, (size_t)rv.n);
    if (!tv || !tmp) {
        s = oom();
        goto done;
    }
    int64_t ix[WEFT_MAX_RANK] = {0}, tix[WEFT_MAX_RANK];
    for (int64_t i = 0; i < src->size; i++) {
        put_ix(pix, srank, ix);
        ix_next(srank, src->shape, ix);
        st->ignored = false;
        s = eval_exp(st, fix->body, tv);
        if (s) {
            s = at_element(s, i);
            goto done;
        }
        bool ign = drank == 0 ? st->ignored : true;
        for (int d = 0; d < drank; d++) {
            tix[d] = tv[d].i;
            ign = ign && tix[d] == INT64_MIN;
        }
        if (ign) {
            continue;
        }
        if (!ix_inside(drank, def->shape, tix)) {
            s = out_of_bounds(drank, tix, def->shape, " (permute)");
            goto done;
        }
        int64_t j = ix_linear(drank, def->shape, tix);
        load_elem(&sv, i, c.p0);
        load_elem(&rv, j, c.p1);
        s = eval_exp(st, f->body, tmp);
        if (s) {
            s = at_element(s, i);
            goto done;
        }
        store_elem(&rv, j, tmp);
    }
done:
    release_to(st, m);
    weft_array_release(def);
    weft_array_release(src);
    return hand_out(s, r, out);
}

/* Where index i of an extent-n dimension reads under boundary b; false when
 * it falls outside under a constant boundary. */
static bool bound(weft_boundary_kind b, int64_t i, int64_t n, int64_t *r)
{
    if (i >= 0 && i < n) {
        *r = i;
        return true;
    }
    switch (b) {
    case WEFT_BOUNDARY_CLAMP: *r = i < 0 ? 0 : n - 1; return true;
    case WEFT_BOUNDARY_MIRROR:
        /* reflect until inside; tiny extents fall back to the edge */
        for (int k = 0; k < 16 && (i < 0 || i >= n); k++) {
            i = i < 0 ? -i : 2 * n - 2 - i;
        }
        *r = i < 0 ? 0 : i >= n ? n - 1 : i;
        return true;
    case WEFT_BOUNDARY_WRAP: *r = ((i % n) + n) % n; return true;
    default: return false;
    }
}

/* One array of a stencil: its window, boundary and parameter slots. */
typedef struct sten {
    view v;
    int rank, w[3], k; /* window extents, elements per window */
    weft_boundary_kind bnd;
    fe_val *cval; /* constant boundary value */
    fe_val **p;   /* k parameter slots */
} sten;

static weft_status sten_init(interp *st, sten *sn, weft_array *a,
                             const fe_term *t, int which, const fe_term *cterm,
                             const fe_fun *f, int first_param)
{
    sn->rank = a->rank;
    sn->k = 1;
    sn->bnd = t->u.st.bnd[which];
    sn->p = NULL;
    sn->cval = NULL;
    if (a->rank < 1 || a->rank > 3) {
        return internal("a stencil of rank outside 1..3");
    }
    for (int d = 0; d < a->rank; d++) {
        sn->w[d] = t->u.st.window[which][d];
        if (sn->w[d] < 1 || sn->w[d] % 2 == 0 || sn->w[d] > 9) {
            return internal("a stencil window that is not odd");
        }
        sn->k *= sn->w[d];
    }
    if (first_param + sn->k > f->arity) {
        return internal("a stencil function of the wrong arity");
    }
    view_init(st, &sn->v, a);
    if (sn->bnd == WEFT_BOUNDARY_CONSTANT) {
        sn->cval = push(st, (size_t)sn->v.n);
        if (!sn->cval) {
            return oom();
        }
        if (!cterm) {
            return internal("a constant stencil boundary without a value");
        }
        weft_status s = eval_exp(st, cterm, sn->cval);
        if (s) {
            return s;
        }
    }
    sn->p = fe_alloc(st->ctx, sizeof *sn->p * (size_t)sn->k);
    if (!sn->p) {
        return oom();
    }
    for (int j = 0; j < sn->k; j++) {
        sn->p[j] = scalar_slot(st, f->param[first_param + j]);
        if (!sn->p[j]) {
            return WEFT_ERR_OUT_OF_MEMORY;
        }
    }
    return WEFT_OK;
}

static void sten_fini(interp *st, sten *sn)
{
    if (sn->p) {
        fe_free(st->ctx, sn->p, sizeof *sn->p * (size_t)sn->k);
        sn->p = NULL;
    }
}

/* Bind the window around ix to the parameter slots. */
static void sten_fill(const sten *sn, const int64_t *ix)
{
    const weft_array *a = sn->v.a;
    for (int j = 0; j < sn->k; j++) {
        int64_t nb[3];
        int rest = j;
        bool inside = true;
        for (int d = sn->rank - 1; d >= 0; d--) {
            int off = rest % sn->w[d] - sn->w[d] / 2;
            rest /= sn->w[d];
            inside = bound(sn->bnd, ix[d] + off, a->shape[d], &nb[d]) && inside;
        }
        if (inside) {
            load_elem(&sn->v, ix_linear(sn->rank, a->shape, nb), sn->p[j]);
        } else {
            memcpy(sn->p[j], sn->cval, sizeof(fe_val) * (size_t)sn->v.n);
        }
    }
}

/* stencil and stencil2. */
static weft_status acc_stencil(interp *st, const fe_term *t, weft_array **out)
{
    bool two = t->kind == FE_STENCIL2;
    const fe_fun *f = t->fun[0];
    weft_array *a = NULL, *b = NULL, *r = NULL;
    sten s1 = {0}, s2 = {0};
    mark m = mark_now(st);
    weft_status s = eval_one(st, t->kid[0], &a);
    if (!s && two) {
        s = eval_one(st, t->kid[2], &b);
    }
    if (!s) {
        s = sten_init(st, &s1, a, t, 0, t->kid[1], f, 0);
    }
    if (!s && two) {
        s = sten_init(st, &s2, b, t, 1, t->kid[3], f, s1.k);
    }
    if (s) {
        goto done;
    }
    int rank = a->rank;
    int64_t shape[WEFT_MAX_RANK], ix[WEFT_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) {
        shape[d] = a->shape[d];
        if (two && b->shape[d] < shape[d]) {
            shape[d] = b->shape[d];
        }
    }
    view rv;
    fe_val *tmp = NULL;
    s = new_result(st, t->type, rank, shape, &r, &rv, &tmp);
    if (s) {
        goto done;
    }
    for (int64_t i = 0; i < r->size; i++) {
        sten_fill(&s1, ix);
        if (two) {
            sten_fill(&s2, ix);
        }
        if ((s = put_elem(st, f, tmp, &rv, i)) != WEFT_OK) {
            goto done;
        }
        ix_next(rank, shape, ix);
    }
done:
    sten_fini(st, &s1);
    sten_fini(st, &s2);
    release_to(st, m);
    weft_array_release(a);
    weft_array_release(b);
    return hand_out(s, r, out);
}

/* ---- control flow and tuples ---------------------------------------------- */

static void release_all(weft_array **a, int n)
{
    for (int i = 0; i < n; i++) {
        weft_array_release(a[i]);
        a[i] = NULL;
    }
}

/* Speculation.  On a backend whose arrays live on a device
 * (fe_interp_device) an awhile does not let the device run dry at every
 * iteration while the host learns the condition: the body of iteration i
 * is queued before the host waits for the condition of iteration i, so
 * that the device computes the body while the flag travels.  Two orders:
 *   - a condition that only reads the state (host_term: variables,
 *     projections, unit and scalar terms, as `unit (the n < 100)`) is
 *     computed by the walker itself, without the backend's kernels: the
 *     state's small arrays are prefetched (fe_array_prefetch: an
 *     asynchronous copy after the previous body; so they are in every
 *     iteration on a device, which reads them all in one wait), the body
 *     queued, then the condition computed on the host, its reads waiting
 *     for the prefetch only;
 *   - any other condition runs first as usual (its kernels queued), its
 *     flag is prefetched, the body queued, then the flag read.
 * When the flag says stop, the speculative body does not count: its
 * arrays are released, and what it reported is dropped: a failure, a
 * cancellation, the reports the backend held back (fe_walk_ops.settle:
 * permute's error words).  The awhile's result is the state the flag was
 * computed from, as without speculation.  When the flag says go, the
 * body's own status is reported as it would have been.  A condition that
 * fails wins over its body, which runs after it in the interpreter.  At
 * most one state besides the current one is alive (the body's result),
 * as without speculation.  The price: one body's work, discarded, per
 * awhile.  A body that would never end on the final state (a scalar
 * while loop that only the condition kept from running) must not be
 * waited for before its flag is known: the backend stops the loops of a
 * speculative body that something waits for, and settle then says that
 * the body, should it count, was spoiled and must run again
 * (runtime-gpu/cuda.c, "Speculation").  The CPU and the interpreter hold
 * their arrays on the host, where the flag costs nothing to read: they
 * take no part. */

/* Whether term t (array or scalar) needs no kernel: only variables,
 * projections, tuples, lets, use, param, unit and scalar terms over them
 * (depth bounds deep terms: then false). */
static bool host_term(const fe_term *t, int depth)
{
    if (!t) {
        return true;
    }
    if (depth > 64) {
        return false;
    }
    if (t->acc) {
        switch ((fe_kind)t->kind) {
        case FE_VAR:
        case FE_AGET:
        case FE_ATUPLE:
        case FE_LET:
        case FE_USE:
        case FE_PARAM:
        case FE_UNIT: break;
        default: return false;
        }
    }
    for (int i = 0; i < t->nkid; i++) {
        if (!host_term(t->kid[i], depth + 1)) {
            return false;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if (!host_term(t->fun[i]->body, depth + 1)) {
            return false;
        }
    }
    return true;
}

/* The condition of awhile t on state x into *c (a new reference); on the
 * host alone (without the backend's hook) when `host`. */
static weft_status awhile_cond(interp *st, const fe_term *t,
                               weft_array *const *x, bool host, weft_array **c)
{
    const fe_fun *cond = t->fun[0];
    fe_interp_hook hook = st->hook;
    if (host) {
        st->hook = NULL;
    }
    weft_status s = bind_arrays(st, cond->param[0], x);
    if (!s) {
        s = eval_one(st, cond->body, c);
    }
    unbind_arrays(st, cond->param[0]);
    st->hook = hook;
    return s;
}

/* The body of awhile t on state x into y (new references; nothing on
 * failure). */
static weft_status awhile_body(interp *st, const fe_term *t,
                               weft_array *const *x, weft_array **y)
{
    const fe_fun *body = t->fun[1];
    weft_status s = bind_arrays(st, body->param[0], x);
    if (!s) {
        s = eval_acc(st, body->body, y);
    }
    unbind_arrays(st, body->param[0]);
    return s;
}

static weft_status acc_awhile(interp *st, const fe_term *t, weft_array **out)
{
    int n = t->atype->narrays;
    weft_array **x = fe_calloc(st->ctx, sizeof *x * (size_t)(n > 0 ? n : 1));
    weft_array **y = fe_calloc(st->ctx, sizeof *y * (size_t)(n > 0 ? n : 1));
    weft_status s = (x && y) ? WEFT_OK : oom();
    if (!s) {
        s = eval_acc(st, t->kid[0], x);
    }
    /* "Speculation" above */
    bool spec = st->walk != NULL;
    bool host_cond = spec && host_term(t->fun[0]->body, 0);
    for (int64_t iter = 0; !s; iter++) {
        weft_array *c = NULL;
        uint64_t t0 = fe_trace_begin(st->ctx);
        if ((s = fe_cancel_check(st->cancel)) != WEFT_OK) {
            break;
        }
        bool ran = false;         /* the body was queued before the flag */
        weft_status sb = WEFT_OK; /* ... and its status */
        int held = 0;             /* reports held back before it */
        for (int i = 0; st->walk && i < n; i++) {
            fe_array_prefetch(x[i]); /* all in one wait, where read */
        }
        if (host_cond) {
            held = st->walk->held(st->hook_user);
            sb = awhile_body(st, t, x, y);
            ran = true;
            s = awhile_cond(st, t, x, true, &c);
        } else {
            s = awhile_cond(st, t, x, false, &c);
            if (!s && spec) {
                fe_array_prefetch(c);
                held = st->walk->held(st->hook_user);
                sb = awhile_body(st, t, x, y);
                ran = true;
            }
        }
        if (!s) {
            s = fe_array_host(c);
        }
        bool go = !s && c->size > 0 && fe_load(WEFT_BOOL, c->data[0], 0).u != 0;
        weft_array_release(c);
        if (s || !go) {
            if (ran) { /* a body that does not count */
                release_all(y, n);
                st->walk->settle(st->hook_user, held, false);
            }
            break;
        }
        if (ran && st->walk->settle(st->hook_user, held, true)) {
            release_all(y, n); /* spoiled: run again, for real */
            ran = false;
        }
        if (!ran) {
            sb = awhile_body(st, t, x, y);
        }
        if (sb) {
            s = sb;
            break;
        }
        release_all(x, n);
        memcpy(x, y, sizeof *x * (size_t)n);
        memset(y, 0, sizeof *y * (size_t)n);
        if (FE_TRACING(st->ctx)) {
            fe_trace_span(st->ctx, t0, "run", "awhile.iter",
                          "\"iteration\":%lld,\"speculative\":%s",
                          (long long)iter, ran ? "true" : "false");
        }
    }
    if (x) {
        if (s) {
            release_all(x, n);
        } else {
            memcpy(out, x, sizeof *x * (size_t)n);
        }
        fe_free(st->ctx, x, sizeof *x * (size_t)(n > 0 ? n : 1));
    }
    if (y) {
        fe_free(st->ctx, y, sizeof *y * (size_t)(n > 0 ? n : 1));
    }
    return s;
}

static weft_status acc_atuple(interp *st, const fe_term *t, weft_array **out)
{
    int off = 0;
    for (int i = 0; i < t->nkid; i++) {
        weft_status s = eval_acc(st, t->kid[i], out + off);
        if (s) {
            release_all(out, off);
            return s;
        }
        off += t->kid[i]->atype->narrays;
    }
    return WEFT_OK;
}

static weft_status acc_aget(interp *st, const fe_term *t, weft_array **out)
{
    const fe_atype *tt = t->kid[0]->atype;
    if (tt->arity < 1 || t->u.index < 0 || t->u.index >= tt->arity) {
        return internal("a projection of a tuple of arrays out of range");
    }
    int n = tt->narrays;
    weft_array **all = fe_calloc(st->ctx, sizeof *all * (size_t)n);
    if (!all) {
        return oom();
    }
    weft_status s = eval_acc(st, t->kid[0], all);
    if (!s) {
        int off = fe_atype_offset(tt, t->u.index);
        int m = tt->comp[t->u.index]->narrays;
        for (int i = 0; i < m; i++) {
            out[i] = all[off + i];
            all[off + i] = NULL;
        }
        release_all(all, n);
    }
    fe_free(st->ctx, all, sizeof *all * (size_t)n);
    return s;
}

/* Evaluate array term t into out[0 .. t->atype->narrays - 1], each a new
 * reference; on failure nothing is stored. */
static weft_status eval_acc_op(interp *st, const fe_term *t, weft_array **out);

/* Evaluate array term t into out (one new reference per array); a failure
 * to bring an operand's device copy to the host (view_init) wins over the
 * operation's own status, whose result was computed from stale data. */
static weft_status eval_acc(interp *st, const fe_term *t, weft_array **out)
{
    /* new_array makes t's results (for weft_run_into's fe_ix_dest) */
    const fe_term *cur = st->cur;
    int cur_out = st->cur_out;
    st->cur = t;
    st->cur_out = 0;
    weft_status s = eval_acc_op(st, t, out);
    st->cur = cur;
    st->cur_out = cur_out;
    if (st->sync) {
        if (s == WEFT_OK) {
            for (int i = 0; i < (t->atype ? t->atype->narrays : 1); i++) {
                weft_array_release(out[i]);
                out[i] = NULL;
            }
        }
        return st->sync;
    }
    return s;
}

/* Whether t is a generate, map or zipWith whose elements have no leaves
 * (the unit type, tuples of units): its result is a shape and nothing
 * else, so its function never runs (its value is never needed, as with
 * dead code; a generate over 2^40 units takes no time).  Every backend
 * leaves such a term to the interpreter's walker, so all agree. */
static bool nothing_to_compute(interp *st, const fe_term *t)
{
    return (t->kind == FE_GENERATE || t->kind == FE_MAP ||
            t->kind == FE_ZIPWITH) &&
           t->atype && t->atype->arity == 0 && leaves_of(st, t->type) == 0;
}

/* The evaluator of each array operation (lib/fe_kinds.h's eval column);
 * NULL for the kinds eval_acc_op handles itself. */
typedef weft_status (*evaluator)(interp *st, const fe_term *t,
                                 weft_array **out);
#define acc_NONE NULL
static const evaluator evaluators[FE_KIND_COUNT_] = {
#define FE_KIND(n_, name, family, producer, fusible, gather, kids, funs,       \
                eval_)                                                         \
    [FE_##n_] = acc_##eval_,
#include "fe_kinds.h"
#undef FE_KIND
};

static weft_status eval_acc_op(interp *st, const fe_term *t, weft_array **out)
{
    weft_status s;
    if (st->hook && t->kind != FE_VAR && t->kind != FE_LET &&
        t->kind != FE_AWHILE && t->kind != FE_ACOND &&
        !nothing_to_compute(st, t)) {
        bool handled = false;
        s = st->hook(st->hook_user, st, t, out, &handled);
        if (s || handled) {
            return s;
        }
    }
    switch ((fe_kind)t->kind) {
    case FE_VAR: {
        const fe_var *v = t->u.var;
        if (!v || !v->acc || v->id >= st->core->nvar || !st->env[v->id].a) {
            return internal("an unbound array variable");
        }
        slot *sl = &st->env[v->id];
        for (int i = 0; i < sl->na; i++) {
            if (!sl->a[i]) {
                return internal("an unbound array variable");
            }
        }
        for (int i = 0; i < sl->na; i++) {
            weft_array_retain(sl->a[i]);
            out[i] = sl->a[i];
        }
        return WEFT_OK;
    }
    case FE_LET:
        s = bind_let(st, t);
        if (!s) {
            s = eval_acc(st, t->kid[1], out);
        }
        unbind_let(st, t);
        return s;
    case FE_USE:
        if (!t->u.array) {
            return internal("use of no array");
        }
        weft_array_retain(t->u.array);
        out[0] = t->u.array;
        return WEFT_OK;
    case FE_PARAM:
        if (t->u.index < 0 || t->u.index >= st->core->nparam ||
            !st->in[t->u.index]) {
            return internal("a parameter out of range");
        }
        weft_array_retain(st->in[t->u.index]);
        out[0] = st->in[t->u.index];
        return WEFT_OK;
    case FE_ACOND: {
        fe_val c;
        s = eval_exp(st, t->kid[0], &c);
        if (s) {
            return s;
        }
        return eval_acc(st, t->kid[c.u ? 1 : 2], out);
    }
    default:
        if (t->kind < FE_KIND_COUNT_ && evaluators[t->kind]) {
            return evaluators[t->kind](st, t, out);
        }
        break;
    }
    return internal("an unexpected array term");
}

/* ---- entry points --------------------------------------------------------- */

weft_status fe_interp(weft_context *ctx, const fe_core *core,
                      weft_array *const *in, weft_array **out,
                      fe_cancel *cancel, weft_array *const *into)
{
    return fe_interp_hooked(ctx, core, in, out, cancel, into, NULL, NULL);
}

/* ---- outputs into the caller's arrays (weft_run_into) --------------------- */

/* The term a root-level let binds to variable v, or NULL. */
static const fe_term *root_binding(const fe_core *core, const fe_var *v)
{
    for (const fe_term *t = core->root; t && t->kind == FE_LET; t = t->kid[1]) {
        if (t->u.var == v) {
            return t->kid[0];
        }
    }
    return NULL;
}

/* Record which operation computes the outputs off.. of result term t:
 * through tuples and root-level lets to the operation itself.  Outputs
 * that no operation of the run's top level computes (a parameter, a use,
 * an awhile or acond, a component of a tuple-valued variable) get none
 * and are copied by weft_run_into.  depth bounds chains of variables. */
static void mark_dests(interp *st, const fe_term *t, int off, int depth)
{
    if (!t || depth > 64) {
        return;
    }
    switch ((fe_kind)t->kind) {
    case FE_ATUPLE:
        for (int i = 0; i < t->nkid; i++) {
            mark_dests(st, t->kid[i], off + fe_atype_offset(t->atype, i),
                       depth + 1);
        }
        return;
    case FE_VAR:
        mark_dests(st, root_binding(st->core, t->u.var), off, depth + 1);
        return;
    case FE_LET:
    case FE_PARAM:
    case FE_USE:
    case FE_AWHILE:
    case FE_ACOND:
    case FE_AGET: return;
    default: break;
    }
    int n = t->atype ? t->atype->narrays : 1;
    for (int i = 0; i < st->core->noutput; i++) {
        if (st->dest_term[i] == t) {
            return; /* a second use of one result: copied */
        }
    }
    for (int k = 0; k < n && off + k < st->core->noutput; k++) {
        st->dest_term[off + k] = t;
        st->dest_o[off + k] = k;
    }
}

weft_array *fe_ix_dest(fe_ix *ix, const fe_term *t, int o, weft_type type,
                       int rank, const int64_t *shape, bool host_only)
{
    if (!ix->into || !t) {
        return NULL;
    }
    for (int i = 0; i < ix->core->noutput; i++) {
        weft_array *a = ix->into[i];
        if (ix->dest_term[i] != t || ix->dest_o[i] != o || !a ||
            ix->dest_used[i]) {
            continue;
        }
        if (a->type != type || a->rank != rank ||
            (rank > 0 &&
             memcmp(a->shape, shape, sizeof *shape * (size_t)rank))) {
            return NULL; /* weft_run_into reports the mismatch */
        }
        if (host_only && (a->on_device || !fe_array_has_host(a))) {
            return NULL;
        }
        if (host_only && a->mirror) {
            a->mirror->host_written(a); /* all of it is written here */
        }
        ix->dest_used[i] = true;
        weft_array_retain(a);
        return a;
    }
    return NULL;
}

fe_cancel *fe_ix_cancel(fe_ix *ix)
{
    return ix ? ix->cancel : NULL;
}

weft_status fe_ix_acc(fe_ix *ix, const fe_term *t, weft_array **out)
{
    return eval_acc(ix, t, out);
}

weft_status fe_ix_exp(fe_ix *ix, const fe_term *t, fe_val *out)
{
    mark m = mark_now(ix);
    weft_status s = eval_exp(ix, t, out);
    release_to(ix, m);
    return s;
}

weft_status fe_ix_var(fe_ix *ix, const fe_var *v, const fe_val **vals,
                      weft_array *const **arrays)
{
    if (!v || v->id >= ix->core->nvar) {
        return internal("a variable out of range");
    }
    slot *sl = &ix->env[v->id];
    if (v->acc ? !sl->a : !sl->v) {
        return internal("an unbound variable");
    }
    if (vals) {
        *vals = sl->v;
    }
    if (arrays) {
        *arrays = sl->a;
    }
    return WEFT_OK;
}

bool fe_ix_var_ignored(fe_ix *ix, const fe_var *v)
{
    return v && !v->acc && v->id < ix->core->nvar && ix->env[v->id].v &&
           ix->env[v->id].nv == 0 && ix->env[v->id].ign;
}

weft_array *fe_ix_param(fe_ix *ix, int i)
{
    return i >= 0 && i < ix->core->nparam ? ix->in[i] : NULL;
}

/* fe_interp_hooked and fe_interp_device (walk: NULL for the former). */
static weft_status walk_core(weft_context *ctx, const fe_core *core,
                             weft_array *const *in, weft_array **out,
                             fe_cancel *cancel, weft_array *const *into,
                             fe_interp_hook hook, const fe_walk_ops *walk,
                             void *user)
{
    if (!ctx || !core || !core->root || !out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, WHO ": no program to run");
    }
    for (int i = 0; i < core->noutput; i++) {
        out[i] = NULL;
    }
    if (!core->root->acc || !core->root->atype ||
        core->root->atype->narrays != core->noutput) {
        return internal("the root is not a tuple of the outputs");
    }
    interp st;
    memset(&st, 0, sizeof st);
    st.ctx = ctx;
    st.core = core;
    st.in = in;
    st.hook = hook;
    st.hook_user = user;
    st.walk = walk;
    st.cancel = cancel;
    size_t nvar = core->nvar > 0 ? core->nvar : 1;
    st.env = fe_calloc(ctx, sizeof *st.env * nvar);
    if (!st.env) {
        return oom();
    }
    size_t nout = (size_t)core->noutput;
    if (into) {
        st.dest_term = fe_calloc(ctx, sizeof *st.dest_term * nout);
        st.dest_o = fe_calloc(ctx, sizeof *st.dest_o * nout);
        st.dest_used = fe_calloc(ctx, sizeof *st.dest_used * nout);
        if (!st.dest_term || !st.dest_o || !st.dest_used) {
            fe_free(ctx, st.dest_term, sizeof *st.dest_term * nout);
            fe_free(ctx, st.dest_o, sizeof *st.dest_o * nout);
            fe_free(ctx, st.dest_used, sizeof *st.dest_used * nout);
            fe_free(ctx, st.env, sizeof *st.env * nvar);
            return oom();
        }
        st.into = into;
        const fe_term *r = core->root;
        while (r && r->kind == FE_LET) {
            r = r->kid[1];
        }
        mark_dests(&st, r, 0, 0);
    }
    weft_status s = eval_acc(&st, core->root, out);
    if (into) {
        fe_free(ctx, st.dest_term, sizeof *st.dest_term * nout);
        fe_free(ctx, st.dest_o, sizeof *st.dest_o * nout);
        fe_free(ctx, st.dest_used, sizeof *st.dest_used * nout);
    }
    for (uint32_t v = 0; v < core->nvar; v++) {
        slot *sl = &st.env[v];
        if (sl->v) {
            fe_free(ctx, sl->v,
                    sizeof(fe_val) * (size_t)(sl->nv > 0 ? sl->nv : 1));
        }
        if (sl->a) {
            release_all(sl->a, sl->na);
            fe_free(ctx, sl->a,
                    sizeof(weft_array *) * (size_t)(sl->na > 0 ? sl->na : 1));
        }
    }
    fe_free(ctx, st.env, sizeof *st.env * nvar);
    release_to(&st, (mark){NULL, 0});
    if (st.spare) {
        free_chunk(&st, st.spare);
    }
    if (s) {
        for (int i = 0; i < core->noutput; i++) {
            out[i] = NULL;
        }
    }
    return s;
}

weft_status fe_interp_hooked(weft_context *ctx, const fe_core *core,
                             weft_array *const *in, weft_array **out,
                             fe_cancel *cancel, weft_array *const *into,
                             fe_interp_hook hook, void *user)
{
    return walk_core(ctx, core, in, out, cancel, into, hook, NULL, user);
}

weft_status fe_interp_device(weft_context *ctx, const fe_core *core,
                             weft_array *const *in, weft_array **out,
                             fe_cancel *cancel, weft_array *const *into,
                             const fe_walk_ops *ops, void *user)
{
    if (!ops || !ops->held || !ops->settle) {
        return internal("a device walk without its operations");
    }
    return walk_core(ctx, core, in, out, cancel, into, ops->hook, ops, user);
}

static weft_status interp_compile(weft_executable *exe)
{
    (void)exe;
    return WEFT_OK;
}

static weft_status interp_run(weft_executable *exe, weft_array *const *in,
                              weft_array **out, fe_cancel *cancel,
                              weft_array *const *into)
{
    return fe_interp(exe->ctx, &exe->core, in, out, cancel, into);
}

static void interp_exe_free(weft_executable *exe)
{
    (void)exe;
}

const fe_backend fe_backend_interp = {
    .name = "interp",
    .context_init = NULL,
    .context_fini = NULL,
    .compile = interp_compile,
    .run = interp_run,
    .exe_free = interp_exe_free,
};
