/*
 * runtime/job.c: a job, one run of one kernel in the making (rt.h
 * rt_job), and what every family's driver (exec.c, exec_*.c) does with
 * it: evaluate its operands and the operands of fused producers (and
 * choose the equal-shapes or general variant), work out the shapes of
 * array terms, allocate outputs and auxiliary arrays through the
 * backend's rt_ops, fill the argument block from the kernel's layout
 * (skeletons-ir/sk.h), cut rows into chunks and run the phases; then
 * release what the job owns.
 *
 * rt_exec (exec.c) makes the job and picks the driver; the drivers call
 * these helpers and nothing here calls a driver, so the files read top
 * down: exec.c -> exec_*.c -> job.c.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

typedef rt_job job;

void rt_job_release(job *j)
{
    if (j->ops->done) {
        j->ops->done(j);
    }
    for (int i = 0; i < 8; i++) {
        weft_array_release(j->kid[i]);
        weft_array_release(j->aux[i]);
        j->kid[i] = j->aux[i] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        weft_array_release(j->out[i]);
        j->out[i] = NULL;
    }
    if (j->w && j->w != j->wbuf) {
        fe_free(j->ctx, j->w, sizeof *j->w * (size_t)(j->k->nwords + 1));
    }
    j->w = NULL;
    int n = j->k->nitem;
    if (j->iarr) {
        for (int i = 0; i < n; i++) {
            weft_array_release(j->iarr[i]);
        }
        fe_free(j->ctx, j->iarr, sizeof *j->iarr * (size_t)(n + 1));
        j->iarr = NULL;
    }
    if (j->ival) {
        for (int i = 0; i < n; i++) {
            if (j->ival[i]) {
                fe_free(j->ctx, j->ival[i], sizeof(fe_val) * RT_MAX_LEAVES);
            }
        }
        fe_free(j->ctx, j->ival, sizeof *j->ival * (size_t)(n + 1));
        j->ival = NULL;
    }
}

/* Evaluate the operands of fused producers (SK_SRC_TERM items). */
static weft_status eval_terms(job *j)
{
    sk_kernel *k = j->k;
    int terms = 0;
    for (int i = 0; i < k->nitem; i++) {
        terms += k->item[i].src == SK_SRC_TERM;
    }
    if (terms == 0) {
        return WEFT_OK; /* nothing to hold: no allocation */
    }
    j->iarr = fe_calloc(j->ctx, sizeof *j->iarr * (size_t)(k->nitem + 1));
    j->ival = fe_calloc(j->ctx, sizeof *j->ival * (size_t)(k->nitem + 1));
    if (!j->iarr || !j->ival) {
        return fe_oom(WHO);
    }
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        weft_status s;
        if (it->src != SK_SRC_TERM) {
            continue;
        }
        if (it->kind == SK_ARRAY) {
            s = fe_ix_acc(j->ix, it->term, &j->iarr[i]);
        } else {
            if (it->nleaf > RT_MAX_LEAVES) {
                return fe_error(WEFT_ERR_INTERNAL, WHO ": a value too large");
            }
            j->ival[i] = fe_calloc(j->ctx, sizeof(fe_val) * RT_MAX_LEAVES);
            if (!j->ival[i]) {
                return fe_oom(WHO);
            }
            s = fe_ix_exp(j->ix, it->term, j->ival[i]);
        }
        if (s) {
            return s;
        }
    }
    return WEFT_OK;
}

/* The host value of a manifest array term of the kernel, or NULL. */
static const weft_array *term_array(job *j, const fe_term *t)
{
    const sk_kernel *k = j->k;
    for (int c = 0; c < k->op->nkid && c < 8; c++) {
        if (k->op->kid[c] == t && j->kid[c]) {
            return j->kid[c];
        }
    }
    for (int i = 0; i < k->nitem; i++) {
        if (k->item[i].src == SK_SRC_TERM && k->item[i].term == t) {
            return j->iarr[i];
        }
    }
    switch ((fe_kind)t->kind) {
    case FE_VAR: {
        weft_array *const *arrays;
        return fe_ix_var(j->ix, t->u.var, NULL, &arrays) ? NULL : arrays[0];
    }
    case FE_PARAM: return fe_ix_param(j->ix, t->u.index);
    case FE_USE: return t->u.array;
    default: return NULL;
    }
}

/* The host value of a scalar operand of the kernel, or NULL. */
static const fe_val *term_scalar(job *j, const fe_term *t)
{
    const sk_kernel *k = j->k;
    for (int c = 0; c < k->op->nkid && c < 8; c++) {
        if (k->op->kid[c] == t && j->val[c]) {
            return j->val[c];
        }
    }
    for (int i = 0; i < k->nitem; i++) {
        if (k->item[i].src == SK_SRC_TERM && k->item[i].term == t) {
            return j->ival[i];
        }
    }
    return NULL;
}

static weft_status no_operand(void)
{
    return fe_error(WEFT_ERR_INTERNAL, WHO ": a kernel operand is missing");
}

/* The shape of t; `defn`: compute it from t's definition (t is a fused
 * producer or the operation itself) rather than reading a manifest array.
 * *uniform is cleared when a zipWith met on the way has operands of
 * different shapes. */
static weft_status shape_rec(job *j, const fe_term *t, bool defn,
                             int64_t *shape, bool *uniform)
{
    weft_status s;
    int64_t sh2[WEFT_MAX_RANK];
    if (!defn) {
        const weft_array *a = term_array(j, t);
        if (!a) {
            return no_operand();
        }
        memcpy(shape, a->shape, sizeof a->shape[0] * (size_t)a->rank);
        return WEFT_OK;
    }
    const fe_val *v;
    switch ((fe_kind)t->kind) {
    case FE_MAP:
        return shape_rec(j, t->kid[0], t->kid[0]->delayed, shape, uniform);
    case FE_ZIPWITH:
        for (int k = 0; k < t->nkid; k++) {
            s = shape_rec(j, t->kid[k], t->kid[k]->delayed, k ? sh2 : shape,
                          uniform);
            if (s) {
                return s;
            }
            for (int d = 0; k > 0 && d < t->rank; d++) {
                if (sh2[d] != shape[d]) {
                    *uniform = false;
                }
                if (sh2[d] < shape[d]) {
                    shape[d] = sh2[d];
                }
            }
        }
        return WEFT_OK;
    case FE_GENERATE:
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
    case FE_RESHAPE:
        if (!(v = term_scalar(j, t->kid[0]))) {
            return no_operand();
        }
        if ((s = rt_shape_of(v, t->rank, shape, "an array")) != WEFT_OK) {
            return s;
        }
        if (t->kind == FE_BACKPERMUTE || t->kind == FE_TRANSFORM ||
            t->kind == FE_RESHAPE) {
            const fe_term *src = t->kid[1];
            if ((s = shape_rec(j, src, src->delayed, sh2, uniform)) !=
                WEFT_OK) {
                return s;
            }
            if (t->kind == FE_RESHAPE && fe_shape_size(t->rank, shape) !=
                                             fe_shape_size(src->rank, sh2)) {
                return fe_error(WEFT_ERR_RESHAPE_SIZE,
                                WHO ": reshape of %lld elements to %lld",
                                (long long)fe_shape_size(src->rank, sh2),
                                (long long)fe_shape_size(t->rank, shape));
            }
        }
        return WEFT_OK;
    case FE_REPLICATE:
    case FE_SLICE: {
        const fe_term *a = t->kid[0];
        if ((s = shape_rec(j, a, a->delayed, sh2, uniform)) != WEFT_OK) {
            return s;
        }
        int next = 0, o = 0;
        for (int d = 0; d < t->nkid - 1; d++) {
            const fe_term *sp = t->kid[1 + d];
            if (sp->kind == FE_ALL) {
                shape[o++] = sh2[next++];
                continue;
            }
            if (!(v = term_scalar(j, sp))) {
                return no_operand();
            }
            if (t->kind == FE_REPLICATE) {
                if (v->i < 0) {
                    return fe_error(WEFT_ERR_BAD_SHAPE,
                                    WHO ": replicate with a negative count");
                }
                shape[o++] = v->i;
            } else {
                if (v->i < 0 || v->i >= sh2[next]) {
                    return fe_error(WEFT_ERR_SLICE_INDEX,
                                    WHO ": slice index %lld is outside "
                                        "dimension %d of extent %lld",
                                    (long long)v->i, d, (long long)sh2[next]);
                }
                next++;
            }
        }
        return WEFT_OK;
    }
    default: return no_operand();
    }
}

weft_status rt_term_shape(rt_job *j, const fe_term *t, int64_t *shape)
{
    bool uniform = true;
    return shape_rec(j, t, t->delayed || t == j->k->op, shape, &uniform);
}

int rt_job_entry(rt_job *j, int entry)
{
    return j->variant * j->k->nentry + entry;
}

/* Whether every zipWith that the kernel computes (the operation or fused
 * producers) has operands of one shape. */
static weft_status uniformity(job *j)
{
    const fe_term *t = j->k->op;
    bool uniform = true;
    int64_t shape[WEFT_MAX_RANK];
    weft_status s = WEFT_OK;
    if (j->k->general) {
        if (t->kind == FE_ZIPWITH) {
            s = shape_rec(j, t, true, shape, &uniform);
        }
        for (int c = 0; s == WEFT_OK && c < t->nkid; c++) {
            if (t->kid[c] && t->kid[c]->acc && t->kid[c]->delayed) {
                s = shape_rec(j, t->kid[c], true, shape, &uniform);
            }
        }
    }
    j->variant = uniform ? 0 : 1;
    return s;
}

/* The kernel's own operands, into kid[] and val[]. */
static weft_status eval_operands(job *j)
{
    const fe_term *t = j->k->op;
    for (int i = 0; i < t->nkid && i < 8; i++) {
        const fe_term *kid = t->kid[i];
        if (!kid || kid->kind == FE_ALL || (kid->acc && kid->delayed)) {
            continue;
        }
        weft_status s;
        if (kid->acc) {
            s = fe_ix_acc(j->ix, kid, &j->kid[i]);
        } else {
            const weft_type *l;
            if (fe_type_leaves(j->ctx, kid->type, &l) > RT_MAX_LEAVES) {
                return fe_error(WEFT_ERR_INTERNAL, WHO ": a value too large");
            }
            j->val[i] = j->vals[i];
            s = fe_ix_exp(j->ix, kid, j->vals[i]);
        }
        if (s) {
            return s;
        }
    }
    return WEFT_OK;
}

weft_status rt_job_out(job *j, int o, weft_type type, int rank,
                       const int64_t *shape)
{
    return j->ops->out(j, o, type, rank, shape);
}

weft_status rt_job_aux(job *j, int a, weft_type type, int64_t n,
                       bool host_filled)
{
    return j->ops->aux(j, a, type, n, host_filled);
}

static weft_status put_array(job *j, const sk_item *it, weft_array *a,
                             bool written)
{
    uint64_t *w = j->w;
    weft_status s = j->ops->addr(j, a, written, &w[it->word]);
    for (int d = 0; d < it->rank; d++) {
        w[it->word + it->nleaf + d] = (uint64_t)a->shape[d];
    }
    return s;
}

static void put_scalar(uint64_t *w, const sk_item *it, const fe_val *v)
{
    for (int l = 0; l < it->nleaf; l++) {
        w[it->word + l] = 0;
        fe_store(it->leaf[l], &w[it->word + l], 0, v[l]);
    }
}

/* Fill the argument block from the layout. */
weft_status rt_job_fill(job *j)
{
    sk_kernel *k = j->k;
    size_t words = (size_t)k->nwords + 1;
    if (words <= RT_WBUF) { /* no allocation per run for common kernels */
        memset(j->wbuf, 0, sizeof j->wbuf[0] * words);
        j->w = j->wbuf;
    } else {
        j->w = fe_calloc(j->ctx, sizeof *j->w * words);
    }
    if (!j->w) {
        return fe_oom(WHO);
    }
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        weft_array *a = NULL;
        const fe_val *v = NULL;
        weft_array *const *arrays;
        weft_status s;
        switch (it->src) {
        case SK_SRC_OUT: a = j->out[it->index]; break;
        case SK_SRC_KID:
            a = j->kid[it->index];
            v = j->val[it->index];
            break;
        case SK_SRC_VAR:
            if ((s = fe_ix_var(j->ix, it->var, &v, &arrays)) != WEFT_OK) {
                return s;
            }
            a = it->var->acc ? arrays[0] : NULL;
            break;
        case SK_SRC_PARAM: a = fe_ix_param(j->ix, it->index); break;
        case SK_SRC_USE: a = it->array; break;
        case SK_SRC_AUX:
            a = j->aux[it->index];
            v = &j->auxval[it->index];
            break;
        case SK_SRC_TERM:
            a = j->iarr[i];
            v = j->ival[i];
            break;
        }
        if (it->kind == SK_ARRAY) {
            if (!a) {
                return fe_error(WEFT_ERR_INTERNAL,
                                WHO ": a kernel operand is missing");
            }
            s = put_array(j, it, a,
                          it->src == SK_SRC_OUT || it->src == SK_SRC_AUX);
            if (s) {
                return s;
            }
        } else {
            if (!v) {
                return fe_error(WEFT_ERR_INTERNAL,
                                WHO ": a kernel scalar is missing");
            }
            put_scalar(j->w, it, v);
            if (it->type == WEFT_DIM(0)) {
                /* the `ignore` flag of a rank-0 index (sk.h) */
                j->w[it->word] =
                    it->src == SK_SRC_VAR && fe_ix_var_ignored(j->ix, it->var);
            }
        }
    }
    return WEFT_OK;
}

/* A shape from the leaves of a DIM value. */
weft_status rt_shape_of(const fe_val *v, int rank, int64_t *shape,
                        const char *op)
{
    for (int d = 0; d < rank; d++) {
        shape[d] = v[d].i;
        if (shape[d] < 0) {
            return fe_error(WEFT_ERR_BAD_SHAPE,
                            WHO ": %s with a negative extent (%lld)", op,
                            (long long)shape[d]);
        }
    }
    if (fe_shape_size(rank, shape) < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE, WHO ": %s of a shape too large",
                        op);
    }
    return WEFT_OK;
}

/* j->ops->run as a "launch" span (out of line: the untraced path stays
 * one test). */
static __attribute__((noinline)) weft_status phases_traced(job *j, int n,
                                                           const rt_phase *ph)
{
    uint64_t t0 = fe_clock_ns();
    weft_status s = j->ops->run(j, n, ph);
    fe_trace_span(j->ctx, t0, "run", "launch",
                  "\"kernel\":%d,\"phases\":%d,\"elements\":%lld", j->k->number,
                  n, (long long)ph[0].n);
    return s;
}

weft_status rt_job_phases(job *j, int n, const rt_phase *phases)
{
    if (n < 1 || n > RT_PHASES_MAX) {
        return fe_error(WEFT_ERR_INTERNAL,
                        WHO ": %d phases in one kernel run (1 to %d)", n,
                        RT_PHASES_MAX);
    }
    rt_phase ph[RT_PHASES_MAX];
    for (int i = 0; i < n; i++) {
        ph[i] = phases[i];
        ph[i].entry = rt_job_entry(j, phases[i].entry);
    }
    if (FE_TRACING(j->ctx)) {
        return phases_traced(j, n, ph);
    }
    return j->ops->run(j, n, ph);
}

weft_status rt_job_run(job *j, int entry, int64_t n, int64_t grain)
{
    rt_phase ph = {.entry = entry, .n = n, .grain = grain};
    return rt_job_phases(j, 1, &ph);
}

int64_t rt_row_chunks(const job *j, int64_t rows, int64_t m)
{
    int64_t workers = j->workers, C = 1;
    int64_t least =
        j->k->chunk_min > j->chunk_min ? j->k->chunk_min : j->chunk_min;
    if (rows < 4 * workers && m >= 2 * least && workers > 1) {
        C = (8 * workers + rows - 1) / (rows > 0 ? rows : 1);
        if (C > m / least) {
            C = m / least;
        }
        if (C < 2) {
            C = 1;
        }
    }
    /* No chunk longer than RT_CHUNK_MAX elements, so that the workers,
     * which look for a cancel between chunks, look often. */
    if (m > RT_CHUNK_MAX) {
        int64_t c2 = (m + RT_CHUNK_MAX - 1) / RT_CHUNK_MAX;
        C = c2 > C ? c2 : C;
    }
    return C;
}

weft_status rt_job_operands(job *j)
{
    weft_status s = eval_operands(j);
    if (s == WEFT_OK) {
        s = eval_terms(j);
    }
    if (s == WEFT_OK) {
        s = uniformity(j);
    }
    return s;
}

#endif /* WEFT_HAVE_LLVM */
