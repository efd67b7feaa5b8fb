/*
 * tests/fuzz/run.c: run a program on several configurations and compare.
 *
 * configs[0] is the oracle: the reference interpreter without fusion, the
 * most literal reading of the program.  Every other configuration
 * (interpreter with fusion, cpu, cpu without fusion, ptx, ptx without
 * fusion) must agree with it:
 *   - statuses exactly, except that two different run-time errors agree
 *     on a configuration with fusion, or on ptx where one is a bad segment
 *     descriptor (see run_error; a second run of one executable must
 *     repeat the first's status).  Without checked mode (WEFT_FLAG_CHECKED,
 *     when weft.h defines it) a compiled kernel need not report an index
 *     out of bounds, a division by zero or another undefined operation (it
 *     may even write out of bounds), so a program for which the oracle
 *     reports one of those is not run on the compiled backends at all
 *     (FZ_SKIP).  With checked mode the statuses must match.
 *   - shapes exactly;
 *   - integers and bools exactly (every non-float value is exact by
 *     construction, see fuzz.h);
 *   - floats bit for bit, except that any NaN equals any NaN (payloads and
 *     signs of NaN are not specified), when the output is exact;
 *   - floats of an inexact output (a libm function, or a float fold / scan
 *     / permute whose order of combination is unspecified) within a
 *     relative tolerance of 1e-3 (f16: 1e-2) plus an absolute one of 1e-3
 *     times the largest finite magnitude in that output or in the
 *     program's float data and constants (reassociating a sum loses
 *     absolute, not relative, precision); an infinity matches only itself
 *     or a finite value beyond half the type's largest (an overflow that
 *     one order of summation reaches and another does not); a NaN matches
 *     anything (a product that overflows in one order and meets a zero
 *     is NaN, in another 0).  Inexact floats are checked loosely: the
 *     exact ones carry the weight.  Floats that went through an f16 sum or
 *     product of unspecified order are not compared at all (node.unordered:
 *     one order stalls at 2048, another reaches 20000).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

long fz_oracle_status[32];
bool fz_strict_status;
char *fz_running_name;

static void note_running(const char *name)
{
    if (fz_running_name) {
        snprintf(fz_running_name, 32, "%s", name);
    }
}

bool fz_checked(void)
{
#ifdef WEFT_FLAG_CHECKED
    return true;
#else
    return false;
#endif
}

void fz_result_free(fz_result *r)
{
    for (int o = 0; o < 16; o++) {
        for (int l = 0; l < FZ_MAXT; l++) {
            free(r->data[o][l]);
            r->data[o][l] = NULL;
        }
    }
    r->nouts = 0;
}

static void collect(fz_config *c, weft_executable *exe, fz_built *bp,
                    fz_result *r);

void fz_run_one(const fz_prog *prog, fz_config *c, fz_result *r)
{
    memset(r, 0, sizeof *r);
    r->backend = c->backend;
    r->fusion = !(c->flags & WEFT_FLAG_NO_FUSION);
    r->fused = c->backend != WEFT_BACKEND_INTERP && r->fusion;
    fz_built b;
    weft_status st = fz_build(c->ctx, prog, &b);
    if (st) {
        r->status = st;
        snprintf(r->msg, sizeof r->msg, "build: %s",
                 b.p ? weft_program_error(b.p) : weft_last_error());
        r->nouts = -1; /* marks a build failure */
        fz_built_free(&b);
        return;
    }
    weft_executable *exe = NULL;
    st = weft_compile(b.p, b.results, b.nresults, &exe);
    if (st) {
        r->status = st;
        snprintf(r->msg, sizeof r->msg, "compile: %s", weft_last_error());
        fz_built_free(&b);
        return;
    }
    collect(c, exe, &b, r);
    /* compile once, run many: a second run must agree with the first
     * (pools, caches and device copies are reused between runs), with the
     * same status: the same code meets its errors in the same order */
    fz_result again;
    memset(&again, 0, sizeof again);
    collect(c, exe, &b, &again);
    char why[200];
    int v = fz_compare(prog, r, &again, why, sizeof why);
    if (v != FZ_SAME && v != FZ_FUSED_OK) {
        fz_result_free(r);
        r->status = WEFT_ERR_INTERNAL;
        snprintf(r->msg, sizeof r->msg,
                 "a second run of the executable differs: %s", why);
    }
    fz_result_free(&again);
    weft_executable_free(exe);
    fz_built_free(&b);
}

/* Run exe once and read its outputs into *r. */
static void collect(fz_config *c, weft_executable *exe, fz_built *bp,
                    fz_result *r)
{
    fz_built b = *bp;
    weft_array *out[16] = {NULL};
    weft_status st = weft_run(exe, b.params, b.nparams, out, b.nouts);
    r->status = st;
    if (st) {
        snprintf(r->msg, sizeof r->msg, "%s", weft_last_error());
    } else {
        r->nouts = b.nouts;
        for (int o = 0; o < b.nouts; o++) {
            weft_array *a = out[o];
            weft_type t = weft_array_type(a);
            r->type[o] = t;
            r->rank[o] = weft_array_rank(a);
            for (int d = 0; d < r->rank[o] && d < 8; d++) {
                r->shape[o][d] = weft_array_extent(a, d);
            }
            int nl = weft_type_leaves(c->ctx, t);
            r->nleaf[o] = nl > FZ_MAXT ? FZ_MAXT : nl;
            int64_t size = weft_array_size(a);
            for (int l = 0; l < r->nleaf[o]; l++) {
                weft_type lt = weft_type_leaf(c->ctx, t, l);
                size_t bytes = (size_t)size * weft_type_size(lt);
                r->leaft[o][l] = lt;
                r->data[o][l] = malloc(bytes + 1);
                if (weft_array_read(a, l, r->data[o][l], bytes)) {
                    r->status = WEFT_ERR_INTERNAL;
                    snprintf(r->msg, sizeof r->msg, "weft_array_read: %s",
                             weft_last_error());
                }
            }
            weft_array_release(a);
        }
    }
}

static double load_float(weft_type t, const unsigned char *p)
{
    if (t == WEFT_F16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return fz_half_to_double(h);
    }
    if (t == WEFT_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    double d;
    memcpy(&d, p, 8);
    return d;
}

static double type_max(weft_type t)
{
    return t == WEFT_F16   ? 65504.0
           : t == WEFT_F32 ? 3.4028234663852886e38
                           : 1.7976931348623157e308;
}

/* The largest finite magnitude of a float in the program's arrays and
 * constants: sums that cancel (1e10 + 1 - 1e10) lose absolute precision of
 * that order whatever their result. */
static double data_scale(const fz_prog *prog)
{
    double m = 0;
    for (int i = 0; i < prog->n; i++) {
        const fz_node *n = &prog->node[i];
        int64_t size = n->op == A_USE ? fz_use_size(n) : 1;
        if (n->op != A_USE && n->op != E_CONST) {
            continue;
        }
        for (int l = 0; l < fz_ty_leaves(n->ty); l++) {
            weft_type t = fz_ty_leaf(n->ty, l);
            if (!fz_is_float(t)) {
                continue;
            }
            const unsigned char *d =
                n->op == A_USE ? n->data[l] : (const void *)&n->val;
            for (int64_t j = 0; j < size; j++) {
                double v = fabs(load_float(t, d + j * (int64_t)fz_size(t)));
                if (isfinite(v) && v > m) {
                    m = v;
                }
            }
        }
    }
    return m;
}

static bool close_enough(weft_type t, double a, double b, double scale)
{
    if (isnan(a) || isnan(b)) {
        /* a product that overflows in one order and meets a zero gives
         * NaN, in another order 0; inf - inf likewise */
        return true;
    }
    if (isinf(a) || isinf(b)) {
        if (a == b) {
            return true;
        }
        double fin = isinf(a) ? b : a, inf = isinf(a) ? a : b;
        return !isinf(fin) && (fin > 0) == (inf > 0) &&
               fabs(fin) > type_max(t) / 2;
    }
    double rtol = t == WEFT_F16 ? 1e-2 : 1e-3;
    double m = fmax(fabs(a), fabs(b));
    return fabs(a - b) <= rtol * m + 1e-3 * scale + 1e-300;
}

static void val_str(weft_type t, const unsigned char *p, char *buf, size_t n)
{
    if (fz_is_float(t)) {
        snprintf(buf, n, "%.17g", load_float(t, p));
        return;
    }
    uint64_t v = 0;
    memcpy(&v, p, fz_size(t) ? fz_size(t) : 1);
    int w = fz_bits(t);
    if (fz_is_signed(t) && w < 64 && (v >> (w - 1)) & 1) {
        v |= ~(((uint64_t)1 << w) - 1);
    }
    if (fz_is_signed(t)) {
        snprintf(buf, n, "%lld", (long long)v);
    } else {
        snprintf(buf, n, "%llu", (unsigned long long)v);
    }
}

static bool kernel_error(weft_status s)
{
    return s == WEFT_ERR_OUT_OF_BOUNDS || s == WEFT_ERR_DIVIDE_BY_ZERO ||
           s == WEFT_ERR_UNDEFINED;
}

/* An error that depends on the data, found at run.  Without fusion every
 * backend evaluates a program in the same order (the interpreter's walk;
 * a compiled kernel evaluates its operands in order, then runs), so it
 * reports the oracle's error.  With fusion a program with two of them may
 * report either (docs/language.md, checked mode, "Fusion"): the pass
 * moves a let-bound producer to its one use, or drops it where only its
 * shape is used, and a fused producer is computed inside its consumer,
 * after the consumer's own checks on the host (a segment descriptor, a
 * reshape's size, a slice's indices) and only at the elements it reads
 * (a gather's index out of bounds comes first).  And on the GPU,
 * foldSeg's kernel checks the segment lengths itself, reporting the lower
 * of the bad segment and an element that fails in the same kernel. */
static bool run_error(weft_status s)
{
    switch (s) {
    case WEFT_ERR_OUT_OF_BOUNDS:
    case WEFT_ERR_DIVIDE_BY_ZERO:
    case WEFT_ERR_UNDEFINED:
    case WEFT_ERR_RESHAPE_SIZE:
    case WEFT_ERR_SLICE_INDEX:
    case WEFT_ERR_EMPTY_ARRAY:
    case WEFT_ERR_SEGMENTS:
    case WEFT_ERR_BAD_SHAPE: return true;
    default: return false;
    }
}

int fz_compare(const fz_prog *prog, const fz_result *o, const fz_result *r,
               char *why, size_t n)
{
    if (o->nouts < 0) {
        snprintf(why, n, "the program does not build: %s", o->msg);
        return FZ_BUILD;
    }
    if (r->status == WEFT_ERR_INTERNAL) {
        snprintf(why, n, "%s", r->msg);
        return FZ_INTERNAL;
    }
    if (o->status != r->status && r->status == WEFT_OK && r->fused &&
        run_error(o->status)) {
        /* a fused producer is computed only where its consumer reads it:
         * an element never read never fails (the interpreter computes
         * every array in full) */
        snprintf(why, n, "ok, oracle %s (%s)", weft_status_name(o->status),
                 o->msg);
        return FZ_FUSED_OK;
    }
    if (o->status != r->status) {
        snprintf(why, n, "status %s (%s), oracle %s (%s)",
                 weft_status_name(r->status), r->msg,
                 weft_status_name(o->status), o->msg);
        bool either = r->fusion || (r->backend == WEFT_BACKEND_PTX &&
                                    (o->status == WEFT_ERR_SEGMENTS ||
                                     r->status == WEFT_ERR_SEGMENTS));
        return either && run_error(o->status) && run_error(r->status)
                   ? FZ_OTHER_ERROR
                   : FZ_DIFF_STATUS;
    }
    if (o->status != WEFT_OK) {
        return FZ_SAME;
    }
    if (o->nouts != r->nouts) {
        snprintf(why, n, "%d outputs, oracle %d", r->nouts, o->nouts);
        return FZ_DIFF_SHAPE;
    }
    fz_built dummy;
    (void)dummy;
    for (int out = 0, root = 0, comp = 0; out < o->nouts; out++) {
        /* which root this output belongs to, for its exactness */
        while (root < prog->nroot &&
               comp >= prog->node[prog->root[root]].arity) {
            root++;
            comp = 0;
        }
        bool inexact =
            root < prog->nroot && prog->node[prog->root[root]].inexact;
        bool unordered =
            root < prog->nroot && prog->node[prog->root[root]].unordered;
        comp++;
        /* tuple types are interned per context: compare their leaves */
        bool same_type = o->nleaf[out] == r->nleaf[out];
        for (int l = 0; l < o->nleaf[out] && same_type; l++) {
            same_type = o->leaft[out][l] == r->leaft[out][l];
        }
        if (!same_type || o->rank[out] != r->rank[out]) {
            snprintf(why, n,
                     "output %d: type %d rank %d, oracle type %d rank %d", out,
                     r->type[out], r->rank[out], o->type[out], o->rank[out]);
            return FZ_DIFF_SHAPE;
        }
        int64_t size = 1;
        for (int d = 0; d < o->rank[out]; d++) {
            if (o->shape[out][d] != r->shape[out][d]) {
                char a[128] = "", b[128] = "";
                for (int e = 0; e < o->rank[out]; e++) {
                    size_t la = strlen(a), lb = strlen(b);
                    snprintf(a + la, sizeof a - la, " %lld",
                             (long long)r->shape[out][e]);
                    snprintf(b + lb, sizeof b - lb, " %lld",
                             (long long)o->shape[out][e]);
                }
                snprintf(why, n, "output %d: shape%s, oracle%s", out, a, b);
                return FZ_DIFF_SHAPE;
            }
            size *= o->shape[out][d];
        }
        for (int l = 0; l < o->nleaf[out]; l++) {
            weft_type t = o->leaft[out][l];
            size_t es = weft_type_size(t);
            const unsigned char *x = o->data[out][l], *y = r->data[out][l];
            double scale = data_scale(prog);
            if (fz_is_float(t) && inexact) {
                for (int64_t i = 0; i < size; i++) {
                    double v = fabs(load_float(t, x + i * es));
                    if (isfinite(v) && v > scale) {
                        scale = v;
                    }
                }
            }
            if (fz_is_float(t) && unordered) {
                continue; /* an f16 reduction: order-dependent */
            }
            for (int64_t i = 0; i < size; i++) {
                bool same;
                if (fz_is_float(t)) {
                    double a = load_float(t, x + i * es);
                    double b = load_float(t, y + i * es);
                    if (inexact) {
                        same = close_enough(t, a, b, scale);
                    } else {
                        same = (isnan(a) && isnan(b)) ||
                               memcmp(x + i * es, y + i * es, es) == 0;
                    }
                } else {
                    same = memcmp(x + i * es, y + i * es, es) == 0;
                }
                if (!same) {
                    char va[64], vb[64];
                    val_str(t, y + i * es, va, sizeof va);
                    val_str(t, x + i * es, vb, sizeof vb);
                    snprintf(why, n,
                             "output %d leaf %d (%s%s) element %lld: %s, "
                             "oracle %s",
                             out, l, fz_tname(t), inexact ? ", inexact" : "",
                             (long long)i, va, vb);
                    return FZ_DIFF_VALUE;
                }
            }
        }
    }
    return FZ_SAME;
}

int fz_check(const fz_prog *prog, fz_config *configs, int nconfig, int *bad,
             char *why, size_t n)
{
    fz_result oracle, r;
    *bad = 0;
    why[0] = 0;
    note_running(configs[0].name);
    fz_run_one(prog, &configs[0], &oracle);
    if (oracle.status >= 0 && oracle.status < 32) {
        fz_oracle_status[oracle.status]++;
    }
    if (oracle.nouts < 0) {
        snprintf(why, n, "the program does not build: %s", oracle.msg);
        fz_result_free(&oracle);
        return FZ_BUILD;
    }
    if (oracle.status == WEFT_ERR_INTERNAL) {
        snprintf(why, n, "the oracle: %s", oracle.msg);
        fz_result_free(&oracle);
        return FZ_INTERNAL;
    }
    if (kernel_error(oracle.status) && !fz_checked()) {
        fz_result_free(&oracle);
        return FZ_SKIP;
    }
    int verdict = FZ_SAME, other = 0, other_verdict = FZ_SAME;
    char other_why[512];
    /* WEFT_FUZZ_SELFTEST=1: flip a bit of the last configuration's first
     * non-empty output, to show that differences are caught and shrunk */
    const char *self = getenv("WEFT_FUZZ_SELFTEST");
    for (int c = 1; c < nconfig && verdict == FZ_SAME; c++) {
        note_running(configs[c].name);
        fz_run_one(prog, &configs[c], &r);
        if (self && *self == '1' && c == nconfig - 1 && r.status == WEFT_OK) {
            for (int o = 0; o < r.nouts; o++) {
                int64_t size = 1;
                for (int d = 0; d < r.rank[o]; d++) {
                    size *= r.shape[o][d];
                }
                if (size > 0) {
                    *(unsigned char *)r.data[o][0] ^= 2;
                    break;
                }
            }
        }
        verdict = fz_compare(prog, &oracle, &r, why, n);
        if ((verdict == FZ_OTHER_ERROR && !fz_strict_status) ||
            verdict == FZ_FUSED_OK) {
            /* remembered, and the other configurations still compared */
            if (!other || verdict == FZ_OTHER_ERROR) {
                other = c;
                other_verdict = verdict;
                snprintf(other_why, sizeof other_why, "%s", why);
            }
            verdict = FZ_SAME;
        }
        if (verdict != FZ_SAME) {
            *bad = c;
        }
        fz_result_free(&r);
    }
    fz_result_free(&oracle);
    if (verdict == FZ_SAME && other > 0) {
        *bad = other;
        snprintf(why, n, "%s", other_why);
        return other_verdict;
    }
    return verdict;
}
