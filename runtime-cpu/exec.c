/*
 * runtime-cpu/exec.c: running one kernel, the host half of each skeleton.
 *
 * cpu_exec evaluates the operation's operands through the interpreter's
 * walk (array operands may themselves be kernels), works out the result's
 * shape, allocates the outputs and the skeleton's auxiliary buffers, fills
 * the argument block from the kernel's layout (skeletons-ir/sk.h) and runs
 * the phases on the gang.  Errors that depend on data and that the host
 * can see (negative extents, fold1 of an empty row) are reported here;
 * errors a kernel meets (a gather outside its source) come back in an
 * auxiliary error word.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "cpu.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

typedef cpu_job job;

static weft_status (*const drivers[SK_FAMILY_COUNT_])(cpu_job *) = {
    [SK_GENERATE] = cpu_exec_generate,
    [SK_FOLD] = cpu_exec_fold,
    [SK_SCAN] = cpu_exec_scan,
    [SK_PERMUTE] = cpu_exec_permute,
    [SK_FOLD_SEG] = cpu_exec_fold_seg,
    [SK_STENCIL] = cpu_exec_stencil,
    [SK_RESHAPE] = cpu_exec_reshape,
};

static void job_release(job *j)
{
    for (int i = 0; i < 8; i++) {
        weft_array_release(j->kid[i]);
        weft_array_release(j->aux[i]);
        j->kid[i] = j->aux[i] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        weft_array_release(j->out[i]);
        j->out[i] = NULL;
    }
    if (j->w) {
        fe_free(j->ctx, j->w, sizeof *j->w * (size_t)(j->k->nwords + 1));
        j->w = NULL;
    }
}

static weft_status eval_operands(job *j)
{
    const fe_term *t = j->k->op;
    for (int i = 0; i < t->nkid && i < 8; i++) {
        const fe_term *kid = t->kid[i];
        if (!kid || kid->kind == FE_ALL) {
            continue;
        }
        weft_status s;
        if (kid->acc) {
            s = fe_ix_acc(j->ix, kid, &j->kid[i]);
        } else {
            const weft_type *l;
            if (fe_type_leaves(j->ctx, kid->type, &l) > CPU_MAX_LEAVES) {
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

weft_status cpu_job_out(job *j, int o, weft_type type, int rank,
                           const int64_t *shape)
{
    return fe_array_new(j->ctx, WHO, type, rank, shape, &j->out[o]);
}

weft_status cpu_job_aux(job *j, int a, weft_type type, int64_t n)
{
    return fe_array_new(j->ctx, WHO, type, 1, &n, &j->aux[a]);
}

static void put_array(uint64_t *w, const sk_item *it, const weft_array *a)
{
    for (int l = 0; l < it->nleaf; l++) {
        w[it->word + l] = (uint64_t)(uintptr_t)a->data[l];
    }
    for (int d = 0; d < it->rank; d++) {
        w[it->word + it->nleaf + d] = (uint64_t)a->shape[d];
    }
}

static void put_scalar(uint64_t *w, const sk_item *it, const fe_val *v)
{
    for (int l = 0; l < it->nleaf; l++) {
        w[it->word + l] = 0;
        fe_store(it->leaf[l], &w[it->word + l], 0, v[l]);
    }
}

/* Fill the argument block from the layout. */
weft_status cpu_job_fill(job *j)
{
    sk_kernel *k = j->k;
    j->w = fe_calloc(j->ctx, sizeof *j->w * (size_t)(k->nwords + 1));
    if (!j->w) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY, WHO ": out of memory");
    }
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        const weft_array *a = NULL;
        const fe_val *v = NULL;
        weft_array *const *arrays;
        weft_status s;
        switch (it->src) {
        case SK_SRC_OUT:
            a = j->out[it->index];
            break;
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
        case SK_SRC_PARAM:
            a = fe_ix_param(j->ix, it->index);
            break;
        case SK_SRC_USE:
            a = it->array;
            break;
        case SK_SRC_AUX:
            a = j->aux[it->index];
            v = &j->auxval[it->index];
            break;
        }
        if (it->kind == SK_ARRAY) {
            if (!a) {
                return fe_error(WEFT_ERR_INTERNAL, WHO ": a kernel operand is missing");
            }
            put_array(j->w, it, a);
        } else {
            if (!v) {
                return fe_error(WEFT_ERR_INTERNAL, WHO ": a kernel scalar is missing");
            }
            put_scalar(j->w, it, v);
        }
    }
    return WEFT_OK;
}

/* A shape from the leaves of a DIM value. */
weft_status cpu_shape_of(const fe_val *v, int rank, int64_t *shape,
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
        return fe_error(WEFT_ERR_BAD_SHAPE, WHO ": %s of a shape too large", op);
    }
    return WEFT_OK;
}

weft_status cpu_job_run(job *j, int entry, int64_t n, int64_t grain)
{
    return cpu_gang_run(j->g, (cpu_kernel_fn)j->k->entry[entry], j->w, n,
                        grain);
}

/* ---- generate, map, zipWith, backpermute, transform ---------------------- */

weft_status cpu_exec_generate(job *j)
{
    const fe_term *t = j->k->op;
    int64_t shape[WEFT_MAX_RANK];
    int rank = t->rank;
    weft_status s;
    switch ((fe_kind)t->kind) {
    case FE_MAP:
        memcpy(shape, j->kid[0]->shape, sizeof shape);
        break;
    case FE_ZIPWITH: {
        bool general = false;
        for (int d = 0; d < rank; d++) {
            shape[d] = j->kid[0]->shape[d];
            for (int k = 1; k < t->nkid; k++) {
                if (j->kid[k]->shape[d] != shape[d]) {
                    general = true;
                }
                if (j->kid[k]->shape[d] < shape[d]) {
                    shape[d] = j->kid[k]->shape[d];
                }
            }
        }
        j->auxval[0].i = general;
        break;
    }
    default: /* generate, backpermute, transform: the shape is kid 0 */
        if ((s = cpu_shape_of(j->val[0], rank, shape, "an array")) != WEFT_OK) {
            return s;
        }
        break;
    }
    if ((s = cpu_job_out(j, 0, t->type, rank, shape)) != WEFT_OK) {
        return s;
    }
    bool gather = t->kind == FE_BACKPERMUTE || t->kind == FE_TRANSFORM;
    if (gather && (s = cpu_job_aux(j, 0, WEFT_I64, 1)) != WEFT_OK) {
        return s;
    }
    if ((s = cpu_job_fill(j)) != WEFT_OK ||
        (s = cpu_job_run(j, 0, j->out[0]->size, CPU_GRAIN)) != WEFT_OK) {
        return s;
    }
    if (gather && ((int64_t *)j->aux[0]->data[0])[0] != 0) {
        return fe_error(WEFT_ERR_OUT_OF_BOUNDS,
                        WHO ": %s reads outside its source array",
                        t->kind == FE_BACKPERMUTE ? "backpermute" : "transform");
    }
    return WEFT_OK;
}

/* ---- fold, fold1 ---------------------------------------------------------- */

weft_status cpu_exec_fold(job *j)
{
    const fe_term *t = j->k->op;
    bool seed = t->kind == FE_FOLD;
    weft_array *src = j->kid[seed ? 1 : 0];
    int rank = src->rank;
    int64_t m = src->shape[rank - 1];
    int64_t rows = fe_shape_size(rank - 1, src->shape);
    weft_status s;
    if (!seed && m == 0 && rows > 0) {
        return fe_error(WEFT_ERR_EMPTY_ARRAY,
                        WHO ": fold1 of an empty row (the innermost extent is 0)");
    }
    if ((s = cpu_job_out(j, 0, t->type, rank - 1, src->shape)) != WEFT_OK) {
        return s;
    }
    int workers = cpu_gang_size(j->g);
    /* Few long rows: cut each row into C chunks so that every worker has
     * several; else one row per iteration. */
    int64_t C = 1;
    if (rows < 4 * (int64_t)workers && m >= 2 * CPU_GRAIN && workers > 1) {
        C = (8 * (int64_t)workers + rows - 1) / (rows > 0 ? rows : 1);
        if (C > m / CPU_GRAIN) {
            C = m / CPU_GRAIN;
        }
        if (C < 2) {
            C = 1;
        }
    }
    j->auxval[1].i = C;
    if ((s = cpu_job_aux(j, 0, t->type, C > 1 ? rows * C : 1)) != WEFT_OK ||
        (s = cpu_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (C == 1) {
        int64_t grain = m > 0 ? CPU_GRAIN / m : CPU_GRAIN;
        return cpu_job_run(j, 0, rows, grain > 0 ? grain : 1);
    }
    cpu_phase ph[2] = {
        {.kernel = (cpu_kernel_fn)j->k->entry[1], .args = j->w,
         .n = rows * C, .grain = 1},
        {.kernel = (cpu_kernel_fn)j->k->entry[2], .args = j->w,
         .n = rows, .grain = 1},
    };
    return cpu_gang_run_phases(j->g, 2, ph);
}

/* ---- entry ------------------------------------------------------------------ */

weft_status cpu_exec(weft_context *ctx, cpu_gang *g, fe_ix *ix, sk_kernel *k,
                     weft_array **out)
{
    job j;
    memset(&j, 0, sizeof j);
    j.ctx = ctx;
    j.g = g;
    j.ix = ix;
    j.k = k;
    weft_status s = eval_operands(&j);
    if (s == WEFT_OK) {
        s = drivers[k->skel->family](&j);
    }
    if (s == WEFT_OK) {
        for (int o = 0; o < k->nout; o++) {
            out[o] = j.out[o];
            j.out[o] = NULL;
        }
    }
    job_release(&j);
    return s;
}

#endif /* WEFT_HAVE_LLVM */
