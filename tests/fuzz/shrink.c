/*
 * tests/fuzz/shrink.c: reduce a failing program while it still fails.
 *
 * Greedy, one change at a time, first improvement wins, repeated until a
 * whole pass changes nothing (or the test budget is spent):
 *   - drop a result;
 *   - replace a node by one of its kids of the same type (a scalar term by
 *     an operand, an array term by an input of the same element type, rank
 *     and arity: map f a -> a, awhile -> its initial value, ...);
 *   - replace a scalar term by the constant 0 or 1 of its type;
 *   - replace an array term by a `use` of zeros of its shape;
 *   - shrink a `use`: halve a dimension, zero its data, make a param a use.
 * Nodes are tried from the last made (usually the outermost) down, so that
 * big subterms go first.  A node is replaced in place, so every use of a
 * shared node sees the change.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static bool scalar_term(fz_op op)
{
    return op < F_FUN && op != E_IGNORE && op != E_ARG;
}

static void free_data(fz_node *n)
{
    if (n->op == A_USE) {
        for (int l = 0; l < FZ_MAXT; l++) {
            free(n->data[l]);
            n->data[l] = NULL;
        }
    }
}

/* Overwrite node i with a copy of node j (deep for use data). */
static void copy_node(fz_prog *p, int i, int j)
{
    fz_node src = p->node[j];
    free_data(&p->node[i]);
    p->node[i] = src;
    if (src.op == A_USE) {
        int64_t size = fz_use_size(&src);
        for (int l = 0; l < fz_ty_leaves(src.ty); l++) {
            size_t bytes = (size_t)size * fz_size(fz_ty_leaf(src.ty, l));
            p->node[i].data[l] = malloc(bytes + 1);
            memcpy(p->node[i].data[l], src.data[l], bytes);
        }
    }
}

static int add_const(fz_prog *p, weft_type t, uint64_t v)
{
    fz_node n;
    memset(&n, 0, sizeof n);
    n.op = E_CONST;
    n.ty = fz_scalar(t);
    n.val = v;
    n.arity = 1;
    n.scope = -1;
    return fz_node_add(p, n);
}

static uint64_t one_of(weft_type t)
{
    switch (t) {
    case WEFT_F16: return 0x3c00;
    case WEFT_F32: return 0x3f800000;
    case WEFT_F64: return 0x3ff0000000000000ull;
    default: return 1;
    }
}

/* Make node i the constant v (0 or 1) of its type. */
static bool to_const(fz_prog *p, int i, bool one)
{
    fz_node *n = &p->node[i];
    fz_ty ty = n->ty;
    if (ty.kind == FZ_SCALAR) {
        uint64_t v = one ? one_of(ty.s[0]) : 0;
        if (n->op == E_CONST && n->val == v) {
            return false;
        }
        fz_node c = *n;
        memset(&c, 0, sizeof c);
        c.op = E_CONST;
        c.ty = ty;
        c.val = v;
        c.arity = 1;
        c.scope = n->scope;
        *n = c;
        return true;
    }
    if (one) {
        return false;
    }
    int kids[FZ_MAXT];
    int nk = ty.kind == FZ_DIMT ? ty.n : ty.n;
    for (int c = 0; c < nk; c++) {
        kids[c] = add_const(p, fz_ty_leaf(ty, c), 0);
        if (kids[c] < 0) {
            return false;
        }
    }
    n = &p->node[i];
    if ((n->op == E_TUPLE || n->op == E_INDEX) &&
        memcmp(n->kid, kids, 0) == 0) {
        bool all_zero = true;
        for (int c = 0; c < n->nkid; c++) {
            const fz_node *m = &p->node[n->kid[c]];
            all_zero &= m->op == E_CONST && m->val == 0;
        }
        if (all_zero) {
            return false;
        }
    }
    fz_node c;
    memset(&c, 0, sizeof c);
    c.op = ty.kind == FZ_DIMT ? E_INDEX : E_TUPLE;
    c.ty = ty;
    c.arity = 1;
    c.scope = n->scope;
    c.nkid = nk;
    memcpy(c.kid, kids, sizeof(int) * (size_t)nk);
    *n = c;
    return true;
}

/* Make array node i a use of zeros of its shape (or of ones). */
static bool to_zero_use(fz_prog *p, int i)
{
    fz_node *n = &p->node[i];
    if (n->arity != 1 || n->op == A_USE) {
        return false;
    }
    fz_node u;
    memset(&u, 0, sizeof u);
    u.op = A_USE;
    u.ty = n->ty;
    u.rank = n->rank;
    u.arity = 1;
    u.shk = true;
    u.scope = -1;
    for (int d = 0; d < n->rank; d++) {
        u.sh[d] = n->shk ? n->sh[d] : 1;
        if (u.sh[d] > 64) {
            u.sh[d] = 64;
        }
    }
    int64_t size = fz_use_size(&u);
    for (int l = 0; l < fz_ty_leaves(u.ty); l++) {
        size_t bytes = (size_t)size * fz_size(fz_ty_leaf(u.ty, l));
        u.data[l] = calloc(1, bytes + 1);
    }
    *n = u;
    return true;
}

/* Halve dimension d of use node i (keeping the leading box of data). */
static bool halve_use(fz_prog *p, int i, int d)
{
    fz_node *n = &p->node[i];
    if (n->sh[d] == 0) {
        return false;
    }
    int64_t old[3] = {1, 1, 1}, nw[3] = {1, 1, 1};
    for (int k = 0; k < n->rank; k++) {
        old[k] = nw[k] = n->sh[k];
    }
    nw[d] = old[d] / 2;
    int64_t size = 1;
    for (int k = 0; k < n->rank; k++) {
        size *= nw[k];
    }
    for (int l = 0; l < fz_ty_leaves(n->ty); l++) {
        size_t es = fz_size(fz_ty_leaf(n->ty, l));
        unsigned char *dst = malloc((size_t)size * es + 1);
        const unsigned char *src = n->data[l];
        for (int64_t j = 0; j < size; j++) {
            /* row-major index in the new shape -> in the old */
            int64_t rem = j, off = 0, ix[3];
            for (int k = n->rank - 1; k >= 0; k--) {
                ix[k] = rem % nw[k];
                rem /= nw[k];
            }
            for (int k = 0; k < n->rank; k++) {
                off = off * old[k] + ix[k];
            }
            memcpy(dst + j * (int64_t)es, src + off * (int64_t)es, es);
        }
        free(n->data[l]);
        n->data[l] = dst;
    }
    n->sh[d] = nw[d];
    return true;
}

static bool zero_use(fz_prog *p, int i)
{
    fz_node *n = &p->node[i];
    int64_t size = fz_use_size(n);
    bool changed = false;
    for (int l = 0; l < fz_ty_leaves(n->ty); l++) {
        size_t bytes = (size_t)size * fz_size(fz_ty_leaf(n->ty, l));
        unsigned char *d = n->data[l];
        for (size_t b = 0; b < bytes; b++) {
            changed |= d[b] != 0;
            d[b] = 0;
        }
    }
    return changed;
}

/* Candidate c (0, 1, ...) for node i of cand: apply it and say whether it
 * changed anything; -1 when there are no more candidates. */
static int apply(fz_prog *cand, int i, int c)
{
    fz_node *n = &cand->node[i];
    int idx = 0;
    /* kids of the same type */
    for (int k = 0; k < n->nkid; k++) {
        const fz_node *m = &cand->node[n->kid[k]];
        bool ok;
        if (scalar_term(n->op) || n->op == E_ARG) {
            ok = (scalar_term(m->op) || m->op == E_ARG) &&
                 fz_ty_eq(m->ty, n->ty);
        } else if (fz_is_array_op(n->op)) {
            ok = fz_is_array_op(m->op) && m->rank == n->rank &&
                 m->arity == n->arity && fz_ty_eq(m->ty, n->ty);
            if (n->arity > 1) {
                ok = ok && m->op != A_AARG;
            }
        } else {
            ok = false;
        }
        if (ok) {
            if (idx++ == c) {
                copy_node(cand, i, n->kid[k]);
                return 1;
            }
        }
    }
    if (scalar_term(n->op)) {
        if (idx++ == c) {
            return to_const(cand, i, false);
        }
        if (idx++ == c) {
            return to_const(cand, i, true);
        }
        return -1;
    }
    if (n->op == A_USE) {
        for (int d = 0; d < n->rank; d++) {
            if (idx++ == c) {
                return halve_use(cand, i, d);
            }
        }
        if (idx++ == c) {
            return zero_use(cand, i);
        }
        if (idx++ == c) {
            if (!n->aux) {
                return 0;
            }
            n->aux = 0;
            return 1;
        }
        return -1;
    }
    if (fz_is_array_op(n->op) && n->op != A_AARG) {
        if (idx++ == c) {
            return to_zero_use(cand, i);
        }
    }
    return -1;
}

fz_prog *fz_shrink(const fz_prog *prog, fz_test_fn test, void *user,
                   int max_tests, bool verbose)
{
    fz_prog *cur = fz_prog_clone(prog);
    int tests = 0;
    bool progress = true;
    while (progress && tests < max_tests) {
        progress = false;
        /* drop a result */
        for (int r = 0; r < cur->nroot && cur->nroot > 1 && tests < max_tests;
             r++) {
            fz_prog *cand = fz_prog_clone(cur);
            memmove(&cand->root[r], &cand->root[r + 1],
                    sizeof(int) * (size_t)(cand->nroot - r - 1));
            cand->nroot--;
            tests++;
            if (test(cand, user)) {
                fz_prog_free(cur);
                cur = cand;
                progress = true;
                r--;
            } else {
                fz_prog_free(cand);
            }
        }
        bool *live = malloc((size_t)cur->n + 1);
        fz_mark_live(cur, live);
        for (int i = cur->n - 1; i >= 0 && tests < max_tests; i--) {
            if (i >= cur->n || !live[i]) {
                continue;
            }
            for (int c = 0; tests < max_tests; c++) {
                fz_prog *cand = fz_prog_clone(cur);
                int a = apply(cand, i, c);
                if (a < 0) {
                    fz_prog_free(cand);
                    break;
                }
                if (a == 0 || fz_count_live(cand) > fz_count_live(cur) + 4) {
                    fz_prog_free(cand);
                    continue;
                }
                tests++;
                if (test(cand, user)) {
                    fz_prog_free(cur);
                    cur = cand;
                    progress = true;
                    if (verbose) {
                        fprintf(stderr, "  shrink: %d nodes (%d tests)\n",
                                fz_count_live(cur), tests);
                    }
                    /* node i changed: try its candidates again */
                    c = -1;
                    free(live);
                    live = malloc((size_t)cur->n + 1);
                    fz_mark_live(cur, live);
                    if (!live[i]) {
                        break;
                    }
                } else {
                    fz_prog_free(cand);
                }
            }
        }
        free(live);
    }
    if (verbose) {
        fprintf(stderr, "  shrink: done after %d tests, %d nodes\n", tests,
                fz_count_live(cur));
    }
    return cur;
}
