/*
 * runtime/plan.c: which operations of a program become kernels, for every
 * compiled backend.
 *
 * rt_plan walks the core after fusion.  Every collective operation that
 * the target has a skeleton for, and that is not itself fused into its
 * consumer, becomes a kernel: kernels that differ only in constants get
 * the constants as arguments (families.c), then each kernel's layout is
 * prepared (sk_prepare) and the backend's `get` fills its entry points
 * (compiling it, or finding it in a cache).  A fused operand stays fused only where its consumer's
 * skeleton reads operands inline; elsewhere it becomes an array of its
 * own.  The kernels live in the executable's arena.
 */
#ifdef WEFT_HAVE_LLVM
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

static weft_status add(weft_executable *exe, rt_plan_t *pl, const sk_target *tg,
                       rt_get_fn get, void *user, const fe_term *t)
{
    sk_kernel *k = fe_arena_alloc(&exe->arena, sizeof *k);
    if (!k) {
        return fe_oom("weft_compile");
    }
    weft_status s = sk_prepare(exe->ctx, &exe->core, &exe->arena, tg, t, k);
    k->number = pl->n;
    if (s || (s = get(user, exe, k)) != WEFT_OK) {
        return s;
    }
    if (pl->n == pl->cap) {
        int cap = pl->cap ? 2 * pl->cap : 16;
        sk_kernel **nk = fe_arena_alloc(&exe->arena, sizeof *nk * (size_t)cap);
        if (!nk) {
            return fe_oom("weft_compile");
        }
        if (pl->n) {
            memcpy(nk, pl->k, sizeof *nk * (size_t)pl->n);
        }
        pl->k = nk;
        pl->cap = cap;
    }
    pl->k[pl->n++] = k;
    return WEFT_OK;
}

/* Whether operand i of t, a delayed producer, stays fused in the kernel
 * of t's skeleton sk (NULL: t has none).  A permute's default does only
 * where the skeleton can compute it without changing which error a run
 * reports (sk_permute_fuses_default). */
static bool stays_fused(const weft_executable *exe, const sk_skeleton *sk,
                        const fe_term *t, int i)
{
    if (!sk || !sk->fuses_input) {
        return false;
    }
    if (t->kind == FE_PERMUTE && i == 0) {
        return sk_permute_fuses_default(
            t, (exe->ctx->cfg.flags & WEFT_FLAG_CHECKED) != 0);
    }
    return true;
}

/* The kernel roots of a plan, in the order the kernels are numbered
 * (the operation before its operands), with the slot each hangs from
 * (NULL for one inside a scalar function, which rt_families leaves). */
typedef struct roots {
    fe_arena *ar;
    fe_term **op;
    fe_term ***slot;
    int n, cap;
} roots;

static weft_status push_root(roots *r, fe_term **slot, fe_term *t)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        fe_term **op = fe_arena_alloc(r->ar, sizeof *op * (size_t)cap);
        fe_term ***sl = fe_arena_alloc(r->ar, sizeof *sl * (size_t)cap);
        if (!op || !sl) {
            return fe_oom("weft_compile");
        }
        if (r->n) {
            memcpy(op, r->op, sizeof *op * (size_t)r->n);
            memcpy(sl, r->slot, sizeof *sl * (size_t)r->n);
        }
        r->op = op;
        r->slot = sl;
        r->cap = cap;
    }
    r->op[r->n] = t;
    r->slot[r->n++] = slot;
    return WEFT_OK;
}

/* Find the kernel roots under *slot, deciding which delayed operands stay
 * fused. */
static weft_status walk(weft_executable *exe, const sk_target *tg,
                        fe_term **slot, bool in_scalar, roots *r)
{
    weft_status s;
    fe_term *t = *slot;
    if (!t) {
        return WEFT_OK;
    }
    const sk_skeleton *sk = sk_skeleton_of(t, tg);
    for (int i = 0; i < t->nkid; i++) {
        fe_term *kid = t->kid[i];
        if (kid && kid->delayed && !stays_fused(exe, sk, t, i)) {
            kid->delayed = false;
        }
    }
    if (sk && !t->delayed &&
        (s = push_root(r, in_scalar ? NULL : slot, t)) != WEFT_OK) {
        return s;
    }
    for (int i = 0; i < t->nkid; i++) {
        if ((s = walk(exe, tg, &t->kid[i], in_scalar, r)) != WEFT_OK) {
            return s;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        /* an awhile's functions are array code; others are scalar */
        if ((s = walk(exe, tg, &t->fun[i]->body,
                      in_scalar || t->kind != FE_AWHILE, r)) != WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

/* The kernels of the roots: families first (families.c), which may put a
 * let above a root, then each prepared and handed to get. */
static weft_status make_kernels(weft_executable *exe, rt_plan_t *pl,
                                const sk_target *tg, rt_get_fn get, void *user,
                                roots *r)
{
    int nslot = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->slot[i]) {
            r->slot[nslot++] = r->slot[i];
        }
    }
    bool lifted = false;
    weft_status s = rt_families(exe, r->slot, nslot, &lifted);
    if (s == WEFT_OK && lifted) {
        /* the lets are levels of the tree that a run recurses through */
        uint64_t d = fe_core_depth(exe->ctx, &exe->core);
        exe->depth = d > exe->depth ? d : exe->depth;
    }
    for (int i = 0; s == WEFT_OK && i < r->n; i++) {
        s = add(exe, pl, tg, get, user, r->op[i]);
    }
    return s;
}

static int by_op(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)(*(struct sk_kernel *const *)a)->op;
    uintptr_t y = (uintptr_t)(*(struct sk_kernel *const *)b)->op;
    return x < y ? -1 : x > y;
}

weft_status rt_plan(weft_executable *exe, const sk_target *tg, rt_get_fn get,
                    void *user, rt_plan_t **out)
{
    rt_plan_t *pl = fe_arena_alloc(&exe->arena, sizeof *pl);
    if (!pl) {
        return fe_oom("weft_compile");
    }
    memset(pl, 0, sizeof *pl);
    fe_arena scratch;
    fe_arena_init(&scratch, exe->ctx);
    roots r = {.ar = &scratch};
    weft_status s = walk(exe, tg, &exe->core.root, false, &r);
    if (s == WEFT_OK) {
        s = make_kernels(exe, pl, tg, get, user, &r);
    }
    fe_arena_release(&scratch);
    if (s == WEFT_OK && pl->n > 0) {
        /* a program of many kernels looks each up by its operation at
         * every run: by binary search, not a walk of the list */
        pl->by_op =
            fe_arena_dup(&exe->arena, pl->k, sizeof *pl->k * (size_t)pl->n);
        if (!pl->by_op) {
            s = fe_oom("weft_compile");
        } else {
            qsort(pl->by_op, (size_t)pl->n, sizeof *pl->by_op, by_op);
        }
    }
    if (s == WEFT_OK) {
        *out = pl;
    }
    return s;
}

struct sk_kernel *rt_plan_kernel(const rt_plan_t *pl, const fe_term *t)
{
    int lo = 0, hi = pl ? pl->n : 0;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        uintptr_t op = (uintptr_t)pl->by_op[mid]->op;
        if (op == (uintptr_t)t) {
            return pl->by_op[mid];
        }
        if (op < (uintptr_t)t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* The delayed producers inside t, for the plan, appended at buf[*len]. */
static void fused_names(const fe_term *t, char *buf, size_t size, size_t *len,
                        int *n)
{
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *kid = t->kid[i];
        if (kid && kid->acc && kid->delayed) {
            if (*len < size) {
                *len += (size_t)snprintf(
                    buf + *len, size - *len, "%s%s",
                    (*n)++ ? ", " : ", fused: ", fe_acc_name(kid->kind));
            }
            fused_names(kid, buf, size, len, n);
        }
    }
}

const char *rt_kernel_name(const struct sk_kernel *k, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "%s", fe_acc_name(k->op->kind));
    int nf = 0;
    fused_names(k->op, buf, n, &len, &nf);
    if ((k->op->kind == FE_FOLD || k->op->kind == FE_FOLD1) &&
        k->op->nfun > 1 && len < n) {
        /* the map it stores through (lib/fuse.c, the store rule) */
        snprintf(buf + len, n - len, "; map at its store");
    }
    return buf;
}

void rt_plan_dump(const rt_plan_t *pl, FILE *out)
{
    for (int i = 0; pl && i < pl->n; i++) {
        const sk_kernel *k = pl->k[i];
        char name[256];
        fprintf(out, "kernel %d: %s (%d phase%s%s)\n", i,
                rt_kernel_name(k, name, sizeof name), k->nentry,
                k->nentry > 1 ? "s" : "", k->general ? ", two variants" : "");
    }
}
#endif /* WEFT_HAVE_LLVM */
