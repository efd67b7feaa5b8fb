/*
 * runtime/exec.c: running one kernel, the host half of each skeleton, for
 * every compiled backend (rt.h).
 *
 * rt_exec makes a job (runtime/job.c): it evaluates the operation's
 * operands through the interpreter's walk (array operands may themselves
 * be kernels), then hands the job to its family's driver (generate and
 * fold here, the others in exec_*.c), which works out the result's shape,
 * allocates the outputs and the skeleton's auxiliary buffers, fills the
 * argument block from the kernel's layout (skeletons-ir/sk.h) and runs
 * the phases through the backend's rt_ops.  Errors that depend on data
 * and that the host can see (negative extents, fold1 of an empty row) are reported here;
 * errors a kernel meets (a gather outside its source; in checked mode
 * every undefined operation) come back in an auxiliary error word
 * (skeletons-ir/sk.h), which kernel_error turns into the interpreter's
 * status.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

typedef rt_job job;

static weft_status (*const drivers[SK_FAMILY_COUNT_])(rt_job *) = {
    [SK_GENERATE] = rt_exec_generate,
    [SK_FOLD] = rt_exec_fold,
    [SK_SCAN] = rt_exec_scan,
    [SK_PERMUTE] = rt_exec_permute,
    [SK_FOLD_SEG] = rt_exec_fold_seg,
    [SK_STENCIL] = rt_exec_stencil,
    [SK_RESHAPE] = rt_exec_reshape,
    [SK_SCAN_PASS] = rt_exec_scan_pass,
    [SK_FOLD_SEG_PASS] = rt_exec_fold_seg_pass,
};

/* ---- generate, map, zipWith, backpermute, transform ---------------------- */

weft_status rt_exec_generate(job *j)
{
    const fe_term *t = j->k->op;
    int64_t shape[WEFT_MAX_RANK];
    weft_status s = rt_term_shape(j, t, shape);
    if (s || (s = rt_job_out(j, 0, t->type, t->rank, shape)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    return rt_job_run(j, 0, j->out[0]->size, j->grain);
}

/* ---- fold, fold1 ---------------------------------------------------------- */

weft_status rt_exec_fold(job *j)
{
    const fe_term *t = j->k->op;
    bool seed = t->kind == FE_FOLD;
    const fe_term *in = t->kid[seed ? 1 : 0];
    int64_t shape[WEFT_MAX_RANK];
    weft_status s = rt_term_shape(j, in, shape);
    if (s) {
        return s;
    }
    int rank = in->rank;
    int64_t m = shape[rank - 1];
    int64_t rows = fe_shape_size(rank - 1, shape);
    if (!seed && m == 0 && rows > 0) {
        return fe_error(WEFT_ERR_EMPTY_ARRAY, WHO
                        ": fold1 of an empty row (the innermost extent is 0)");
    }
    if ((s = rt_job_out(j, 0, t->type, rank - 1, shape)) != WEFT_OK) {
        return s;
    }
    /* Few long rows: cut each row into C chunks so that every worker has
     * several; else one row per iteration.  A kernel without the whole-row
     * entry always goes by chunks: C = 0 when rows are empty (entry 2 then
     * gives z), else at least 1. */
    bool chunks_only = j->k->flags & SK_FOLD_CHUNKS_ONLY;
    bool last_block = j->k->flags & SK_FOLD_LAST_BLOCK;
    int64_t C = rt_row_chunks(j, rows, m);
    if (chunks_only && m == 0) {
        C = 0;
    }
    j->auxval[1].i = C;
    bool by_chunks = C > 1 || chunks_only;
    /* over several devices: rows or chunks split, or one row spread (its
     * parts' folds and tickets per device, skeletons-ir/ptx/fold.c) */
    bool several = j->devices > 1 && rows * m >= RT_SPLIT_MIN;
    bool spread = several && last_block && C > 0;
    int64_t parts = by_chunks && C > 0 ? rows * C : 1;
    /* every partial is written before it is read; the last block puts
     * its ticket back to zero (skeletons-ir/ptx/fold.c) */
    j->aux_start[0] = RT_AUX_ANY;
    j->aux_start[2] = RT_AUX_KEPT_ZERO;
    if ((s = rt_job_aux(j, 0, fe_fold_type(t),
                        spread ? SK_DEVICES_MAX + j->devices * C : parts,
                        false)) != WEFT_OK ||
        (last_block && (s = rt_job_aux(j, 2, WEFT_I32, spread ? j->devices : 1,
                                       false)) != WEFT_OK) ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (!by_chunks) {
        int64_t grain = m > 0 ? j->grain / m : j->grain;
        rt_phase ph = {.entry = 0,
                       .n = rows,
                       .grain = grain > 0 ? grain : 1,
                       .split = several};
        return rt_job_phases(j, 1, &ph);
    }
    if (spread) {
        rt_phase ph[2] = {
            {.entry = 1, .n = C, .grain = 1, .spread = m},
            {.entry = 2, .n = 1, .grain = j->devices},
        };
        return rt_job_phases(j, 2, ph);
    }
    if (last_block && C > 0) {
        /* the last block of entry 1 writes the result (sk.h) */
        return rt_job_run(j, 1, rows * C, 1);
    }
    rt_phase ph[2] = {
        {.entry = 1, .n = rows * C, .grain = 1, .split = several},
        {.entry = 2, .n = rows, .grain = 1},
    };
    return C > 0 ? rt_job_phases(j, 2, ph) : rt_job_phases(j, 1, ph + 1);
}

/* ---- entry ------------------------------------------------------------------ */

static const char *type_name(int t)
{
    static const char *names[] = {
        "?",   "bool", "i8",  "i16", "i32", "i64", "u8",
        "u16", "u32",  "u64", "f16", "f32", "f64",
    };
    return fe_is_scalar((weft_type)t) ? names[t] : "?";
}

static const char *op_name(int op)
{
    const char *n = op > 0 ? weft_op_name((weft_op)op) : NULL;
    return n ? n : "?";
}

weft_status rt_kernel_error(const sk_kernel *k, uint64_t w)
{
    int code = CG_KEY_CODE(w), op = CG_KEY_OP(w);
    int type = (int)CG_KEY_TYPE(w);
    uint64_t elem = CG_KEY_ELEM(w);
    char name[256], at[64] = "", what[160];
    rt_kernel_name(k, name, sizeof name);
    if (elem != (uint64_t)CG_KEY_ELEM_NONE) {
        snprintf(at, sizeof at, " at element %llu", (unsigned long long)elem);
    }
    weft_status s = WEFT_ERR_UNDEFINED;
    switch ((cg_err)code) {
    case CG_ERR_GATHER:
        s = WEFT_ERR_OUT_OF_BOUNDS;
        snprintf(what, sizeof what,
                 "a gather (backpermute or transform) "
                 "reads outside its source");
        break;
    case CG_ERR_SLICE:
        s = WEFT_ERR_SLICE_INDEX;
        snprintf(what, sizeof what, "a slice index is outside its dimension");
        break;
    case CG_ERR_PERMUTE:
        s = WEFT_ERR_OUT_OF_BOUNDS;
        snprintf(what, sizeof what, "permute writes outside its result");
        break;
    case CG_ERR_INDEX:
    case CG_ERR_LINEAR:
        s = WEFT_ERR_OUT_OF_BOUNDS;
        snprintf(what, sizeof what, "%s is out of bounds for its array",
                 code == CG_ERR_INDEX ? "an index (a ! ix)"
                                      : "a linear index (a !! i)");
        break;
    case CG_ERR_DIV_ZERO:
        s = WEFT_ERR_DIVIDE_BY_ZERO;
        snprintf(what, sizeof what, "integer division by zero (%s on %s)",
                 op_name(op), type_name(type));
        break;
    case CG_ERR_DIV_MIN:
        snprintf(what, sizeof what, "%s of the minimum %s by -1 is undefined",
                 op_name(op), type_name(type));
        break;
    case CG_ERR_SHIFT:
        snprintf(what, sizeof what,
                 "%s by a negative amount or by the width "
                 "or more is undefined for %s",
                 op_name(op), type_name(type));
        break;
    case CG_ERR_CONVERT:
        snprintf(what, sizeof what,
                 "%s to %s of NaN or of a value out of "
                 "range",
                 op_name(op), type_name(type));
        break;
    case CG_ERR_FROM_ZERO:
        s = WEFT_ERR_DIVIDE_BY_ZERO;
        snprintf(what, sizeof what,
                 "from_index in a shape with an inner "
                 "extent 0");
        break;
    case CG_ERR_FROM_NEG:
        s = WEFT_ERR_BAD_SHAPE;
        snprintf(what, sizeof what,
                 "from_index in a shape with a negative "
                 "inner extent");
        break;
    case CG_ERR_SEG_NEG:
    case CG_ERR_SEG_PAST:
        /* the element is the segment (ptx/foldseg.c); the same codes
         * for the offset form, said in its terms */
        s = WEFT_ERR_SEGMENTS;
        if (k->op->op == FE_SEG_OFFSETS) {
            snprintf(what, sizeof what, "fold_seg_offsets: %s",
                     code == CG_ERR_SEG_NEG
                         ? "a segment starts below 0 or ends before its start"
                         : "a segment ends past the innermost extent");
        } else {
            snprintf(what, sizeof what, "fold_seg: %s",
                     code == CG_ERR_SEG_NEG
                         ? "a segment has a negative length"
                         : "segment lengths sum past the innermost extent");
        }
        snprintf(at, sizeof at, " at segment %llu", (unsigned long long)elem);
        break;
    default:
        return fe_error(WEFT_ERR_INTERNAL,
                        WHO ": unknown error word %#llx (kernel %d: %s)",
                        (unsigned long long)w, k->number, name);
    }
    return fe_error(s, WHO ": %s%s (kernel %d: %s)", what, at, k->number, name);
}

/* rt_exec without its span. */
static weft_status exec_kernel(weft_context *ctx, const rt_backend *rb,
                               fe_ix *ix, sk_kernel *k, weft_array **out)
{
    job j;
    memset(&j, 0, sizeof j);
    j.ctx = ctx;
    j.ops = rb->ops;
    j.be = rb->be;
    j.workers = rb->workers;
    j.grain = rb->grain;
    j.chunk_min = rb->chunk_min;
    j.devices = rb->devices;
    j.be_job = rb->be_job;
    j.ix = ix;
    j.k = k;
    j.cancel = fe_ix_cancel(ix);
    j.auxval[SK_CANCEL_AUX].u = rb->cancel_word;
    weft_status s = fe_cancel_check(j.cancel);
    if (s == WEFT_OK) {
        s = rt_job_operands(&j);
    }
    if (s == WEFT_OK && j.variant == 1 && j.ops->general) {
        s = j.ops->general(&j);
    }
    if (s == WEFT_OK) {
        s = rt_job_aux(&j, SK_ERR_AUX, WEFT_I64, 1, false);
    }
    if (s == WEFT_OK) {
        s = drivers[k->skel->family](&j);
    }
    if (s == WEFT_OK && fe_cancel_hit(j.cancel)) {
        s = fe_cancel_error(j.cancel); /* a kernel stopped early */
    }
    int64_t word = 0;
    if (s == WEFT_OK && k->may_fail) {
        /* a backend may hold the word back, to read it later (word 0) */
        s = j.ops->read_error(&j, &word);
    }
    if (s == WEFT_OK && word != 0) {
        s = rt_kernel_error(k, (uint64_t)word);
    }
    if (s == WEFT_OK) {
        for (int o = 0; o < k->nout; o++) {
            out[o] = j.out[o];
            j.out[o] = NULL;
        }
    }
    rt_job_release(&j);
    return s;
}

/* exec_kernel as a "kernel" span. */
static __attribute__((noinline)) weft_status exec_traced(weft_context *ctx,
                                                         const rt_backend *rb,
                                                         fe_ix *ix,
                                                         sk_kernel *k,
                                                         weft_array **out)
{
    uint64_t t0 = fe_clock_ns();
    weft_status s = exec_kernel(ctx, rb, ix, k, out);
    char name[128];
    fe_trace_span(ctx, t0, "run", "kernel",
                  "\"kernel\":%d,\"what\":\"%s\",\"backend\":\"%s\"", k->number,
                  rt_kernel_name(k, name, sizeof name), rb->ops->name);
    return s;
}

weft_status rt_exec(weft_context *ctx, const rt_backend *rb, fe_ix *ix,
                    sk_kernel *k, weft_array **out)
{
    if (FE_TRACING(ctx)) {
        return exec_traced(ctx, rb, ix, k, out);
    }
    return exec_kernel(ctx, rb, ix, k, out);
}

#endif /* WEFT_HAVE_LLVM */
