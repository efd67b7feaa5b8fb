/*
 * codegen/stage.c: loops that read their arrays through shared-memory
 * tiles (PTX): while loops over a counter, and the columns of a
 * skeleton's rows (ptx/fold.c).
 *
 * n-body written with a while loop runs, in every thread, the same loop
 *
 *     while (j < n) { ... x ! j, y ! j, z ! j, m ! j ...; j = j + 1 }
 *
 * from the same j: every thread of a block reads the same elements in the
 * same order.  Read from global memory, each such read is a load per warp
 * and trip (an L1 hit at best) and a bounds test; the hand-written kernel
 * instead has the block load a tile of the arrays into shared memory
 * together, one element per thread, and then runs the loop over the tile
 * from there.  This file does the same for any while loop of that
 * pattern (stage_match):
 *
 *   - the state is an i64 counter j, or a tuple with an i64 component j;
 *   - the condition is exactly j < N, N not bound inside the loop;
 *   - the body's result (after its lets) gives j + 1 for j;
 *   - the body reads some manifest array a (a parameter, a used array, a
 *     variable bound outside the loop) at j: `a ! index j` of rank 1 or
 *     `a !! j` (the reads staged, at most STAGE_READS);
 *
 * and where the code is at a point every thread of the block reaches
 * together (cg_fn.stage_tile, which the skeleton sets and conditionals
 * and loops clear), and the initial j and N turn out to be the same in
 * every thread (uniform_value: computed from constants and the kernel's
 * parameters only).  The loop then becomes
 *
 *     if (j0 < N) {                          (the user's condition; j0:
 *         t = j0;                            the initial j)
 *         while (N - t > T) {                (the full tiles)
 *             tile(t, T);
 *             (the cancel poll, below)
 *             t = t + T;
 *         }
 *         tile(t, (N - j0 - 1) % T + 1);     (the last tile)
 *     }
 *
 *     tile(t, m):
 *         if (the tile does not hold t) {    (block-uniform)
 *             barrier;                       (its readers are done)
 *             for (q = tid; q < T; q += block)   (every thread)
 *                 tile_a[q] = t + q inside a ? a[t + q] : 0;
 *             barrier;
 *         }
 *         q = 0;                             (i32; j = t + q)
 *         do
 *             state = body(state), a ! j read as tile_a[q];
 *         while (++q < m);
 *
 * T = cg_fn.stage_tile.  Inside a tile, j = t + q < N, so the user's
 * condition holds and is not evaluated; the tile's reads need no bounds
 * test (a position outside a was staged as the zero that `!` gives
 * there), and the trip count is known, so LLVM unrolls the trips (by
 * STAGE_UNROLL) and the loads of several trips overlap.  The full tiles
 * have the constant count T (no remainder); the last tile's count and
 * its remainder are values of the loop's start and bound alone, so LLVM
 * hoists them out of the skeleton's loop over a thread's elements, and
 * where the loop has one tile (N - j0 <= T, as k-means' 16 centroids)
 * the full tiles' loop is one uniform branch an element.  The trips
 * count in 32 bits from a do-while: k-means' assignment took 237 SASS
 * instructions a point (sm_90, ptxas 13) with one tile loop of min(N -
 * t, T) trips counted in 64 bits, and takes 205; the body of the trips
 * is 73 of them per 8 centroids, so 59 are the point's own.  The body
 * is emitted twice (the full tiles and the last), the price of that.
 * The results are the plain loop's bit for bit: the same operations in
 * the same order.
 *
 * The tile outlives the loop: a thread's next element runs the loop
 * again from the same uniform j, and a tile that already holds t (the
 * staged arrays are inputs of the kernel, which no thread writes) is not
 * staged again.  k-means' 16 centroids are one tile, staged once per
 * block instead of once per point with two barriers (cg_stage_fresh); the
 * barrier before staging, not one after the trips, keeps a tile from
 * being overwritten while a thread still reads it.
 *
 * Cancellation: the plain loop polls every cg_target.poll_every trips;
 * here every thread polls once every poll_every / T full tiles of a loop
 * (the last tile ends it), through a barrier that ors the threads'
 * answers (cg_target.barrier_or), so that the whole block leaves
 * together (a thread that left alone would leave the others waiting at
 * the next barrier).  Checked mode never stages (fn->checked: a read outside its
 * array must report, and only when it runs), nor does code that watches
 * for `ignore`.
 *
 * The tile.  Record q of a tile holds position t + q of every leaf of
 * every staged array, leaves by decreasing size (each at a multiple of
 * its size) in R bytes, R a power of two up to 16 (or a multiple of the
 * largest leaf): n-body's x, y, z and m are one 16-byte record, written
 * by one st.shared.v4 and read by one ld.shared.v4, the same address in
 * every lane (a broadcast).  A tile of more than STAGE_BYTES is not
 * staged.
 *
 * Functions (cg_stage_fun).  A skeleton that applies a generate's
 * function to a row's columns in lockstep across the block (n-body's
 * fold: the pull of body j on body i, folded along j) stages the arrays
 * the function reads at `index j`, j the index's last component, the
 * same way, and fills the tiles itself (cg_stage_put: it knows which
 * columns come next); the function's reads at `index i` (another
 * component) it reads once per row (cg_stage_fix).
 */
#include <string.h>

#include "cg.h"

#define B (fn->b)

enum {
    STAGE_READS = 16,    /* staged reads per loop, at most */
    STAGE_ARRAYS = 8,    /* distinct arrays among them */
    MARK_COUNTER = 1,    /* a let bound to j */
    MARK_INDEX = 2,      /* a let bound to index j */
    MARK_ROW = 16,       /* + d: a let bound to component d != k of a
                           function's index (functions only) */
    MARK_ROW_INDEX = 64, /* + d: ... to index of it */
    UNIFORM_DEPTH = 32,  /* how deep uniform_value looks */
    STAGE_UNROLL = 8,    /* trips of a tile unrolled (cg_stage_unroll) */
    STAGE_BYTES = 16384  /* the most shared memory of one tile (a block
                           has 48 KB of static shared memory) */
};

/* One staged read: its term and its array's tile; or (a function's
 * read at another component d of its index, `fixed`) its value, read once
 * for the index the skeleton gives (cg_stage_fix). */
struct cg_staged {
    const fe_term *at;
    int slot;
    bool fixed;
    int d;
    cg_val v;
};

/* The tile of a staged loop: one shared-memory array of T records of R
 * bytes, record q holding element t + q of every leaf of every staged
 * array, leaf l of array a at byte off[a][l] (leaves by decreasing size,
 * each at a multiple of its size; R a power of two up to 16 bytes, so
 * that a record's four f32 leaves are one 16-byte load), and, while
 * the trips are emitted, the trip's position q. */
struct cg_stage {
    LLVMValueRef held;               /* i1 slot: the tile holds ... */
    LLVMValueRef key[CG_STAGE_KEYS]; /* ... the records of these (i64
                                    slots; cg_stage_fresh) */
    int narr;
    cg_array *arr; /* the staged arrays */
    int *off[STAGE_ARRAYS];
    int rec;           /* R */
    int tile;          /* T */
    LLVMValueRef base; /* the shared array (a generic pointer) */
    LLVMValueRef q;
    struct cg_staged *read;
    int nread;
    cg_walker walk; /* compiles the loop's terms (stage_build's caller's) */
};

/* A while loop of the staged pattern (stage_match). */
typedef struct stage_pat {
    int k;                /* the counter's component, -1: the state */
    const fe_term *bound; /* N */
    const fe_var *param;  /* the parameter of the function scanned */
    uint8_t *mark;        /* MARK_* by variable id */
    const bool *inner;    /* variables the loop binds */
    uint32_t nvar;
    int rank; /* a function's index: its rank (else 0) */
    int nread;
    struct cg_staged read[STAGE_READS];
    int narr;
    const fe_term *arr[STAGE_ARRAYS];
    bool over; /* more reads or arrays than room */
} stage_pat;

/* Component d != k of a function's index (a let of it), or -1. */
static int row_of(const stage_pat *p, const fe_term *t)
{
    if (t->kind == FE_VAR && t->u.var) {
        int m = t->u.var->id < p->nvar ? p->mark[t->u.var->id] : 0;
        return m >= MARK_ROW && m < MARK_ROW_INDEX ? m - MARK_ROW : -1;
    }
    return p->rank > 0 && t->kind == FE_GET && t->u.index != p->k &&
                   t->u.index < p->rank && t->kid[0]->kind == FE_VAR &&
                   t->kid[0]->u.var == p->param
               ? t->u.index
               : -1;
}

/* index d for such a component (a let of it), or -1. */
static int row_index_of(const stage_pat *p, const fe_term *t)
{
    if (t->kind == FE_VAR && t->u.var) {
        int m = t->u.var->id < p->nvar ? p->mark[t->u.var->id] : 0;
        return m >= MARK_ROW_INDEX ? m - MARK_ROW_INDEX : -1;
    }
    return t->kind == FE_TUPLE && t->nkid == 1 ? row_of(p, t->kid[0]) : -1;
}

static bool is_counter(const stage_pat *p, const fe_term *t)
{
    if (t->kind == FE_VAR && t->u.var) {
        if (p->k < 0 && t->u.var == p->param) {
            return true;
        }
        return t->u.var->id < p->nvar && p->mark[t->u.var->id] == MARK_COUNTER;
    }
    return p->k >= 0 && t->kind == FE_GET && t->u.index == p->k &&
           t->type == WEFT_I64 && t->kid[0]->kind == FE_VAR &&
           t->kid[0]->u.var == p->param;
}

static bool is_counter_index(const stage_pat *p, const fe_term *t)
{
    if (t->kind == FE_VAR && t->u.var) {
        return t->u.var->id < p->nvar && p->mark[t->u.var->id] == MARK_INDEX;
    }
    return t->kind == FE_TUPLE && t->nkid == 1 && is_counter(p, t->kid[0]);
}

/* Whether array term a is a manifest array bound outside the loop. */
static bool outer_array(const stage_pat *p, const fe_term *a)
{
    switch (a->kind) {
    case FE_PARAM:
    case FE_USE: return true;
    case FE_VAR:
        return a->u.var && a->u.var->acc && a->u.var->id < p->nvar &&
               !p->inner[a->u.var->id];
    default: return false;
    }
}

static bool same_array(const fe_term *a, const fe_term *b)
{
    if (a->kind != b->kind) {
        return false;
    }
    switch (a->kind) {
    case FE_PARAM: return a->u.index == b->u.index;
    case FE_USE: return a->u.array == b->u.array;
    default: return a->u.var == b->u.var;
    }
}

/* Record read t of array a (fixed: at component d of the index). */
static void add_read(stage_pat *p, const fe_term *t, const fe_term *a,
                     bool fixed, int d)
{
    for (int r = 0; r < p->nread; r++) {
        if (p->read[r].at == t) {
            return;
        }
    }
    if (p->nread == STAGE_READS) {
        p->over = true;
        return;
    }
    if (fixed) {
        p->read[p->nread] = (struct cg_staged){.at = t, .fixed = true, .d = d};
        p->nread++;
        return;
    }
    int slot = 0;
    while (slot < p->narr && !same_array(p->arr[slot], a)) {
        slot++;
    }
    if (slot == p->narr) {
        if (p->narr == STAGE_ARRAYS) {
            p->over = true;
            return;
        }
        p->arr[p->narr++] = a;
    }
    p->read[p->nread] = (struct cg_staged){.at = t, .slot = slot};
    p->nread++;
}

/* Mark the lets of t bound to j or index j, and collect the reads at j. */
static void scan(stage_pat *p, const fe_term *t)
{
    if (!t || t->acc) {
        return;
    }
    if (t->kind == FE_LET && t->u.var && !t->u.var->acc &&
        t->u.var->id < p->nvar) {
        int d = row_of(p, t->kid[0]), di = row_index_of(p, t->kid[0]);
        p->mark[t->u.var->id] = is_counter(p, t->kid[0])         ? MARK_COUNTER
                                : is_counter_index(p, t->kid[0]) ? MARK_INDEX
                                : d >= 0                         ? MARK_ROW + d
                                : di >= 0 ? MARK_ROW_INDEX + di
                                          : 0;
    }
    if (((t->kind == FE_AT && t->kid[0]->rank == 1 &&
          is_counter_index(p, t->kid[1])) ||
         (t->kind == FE_AT_LINEAR && is_counter(p, t->kid[1]))) &&
        outer_array(p, t->kid[0])) {
        add_read(p, t, t->kid[0], false, 0);
        return;
    }
    int d = t->kind == FE_AT && t->kid[0]->rank == 1
                ? row_index_of(p, t->kid[1])
                : -1;
    if (d >= 0 && outer_array(p, t->kid[0])) {
        add_read(p, t, t->kid[0], true, d);
        return;
    }
    for (int i = 0; i < t->nfun; i++) {
        scan(p, t->fun[i] ? t->fun[i]->body : NULL);
    }
    for (int i = 0; i < t->nkid; i++) {
        scan(p, t->kid[i]);
    }
}

/* Whether t is j + 1 (either order). */
static bool is_step(const stage_pat *p, const fe_term *t)
{
    if (t->kind != FE_PRIM || t->op != WEFT_OP_ADD || t->nkid != 2) {
        return false;
    }
    for (int s = 0; s < 2; s++) {
        const fe_term *c = t->kid[1 - s];
        if (is_counter(p, t->kid[s]) && c->kind == FE_CONST &&
            c->type == WEFT_I64 && c->u.c.i == 1) {
            return true;
        }
    }
    return false;
}

/* A pattern with zeroed marks for nvar variables, and `inner` marking
 * what term t binds; NULL when out of memory. */
static stage_pat *pat_new(fe_arena *arena, uint32_t nvar, const fe_term *t)
{
    stage_pat *p = fe_arena_alloc(arena, sizeof *p);
    uint8_t *mark = fe_arena_alloc(arena, nvar);
    bool *inner = fe_arena_alloc(arena, nvar * sizeof *inner);
    if (!p || !mark || !inner) {
        return NULL;
    }
    memset(p, 0, sizeof *p);
    memset(mark, 0, nvar);
    memset(inner, 0, nvar * sizeof *inner);
    cg_mark_bound(t, inner, nvar);
    p->mark = mark;
    p->inner = inner;
    p->nvar = nvar;
    return p;
}

/* Whether while loop e has the staged pattern (the head comment), with
 * at least one read to stage; fills *p (from pat_new(..., e)). */
static bool stage_match(const fe_term *e, stage_pat *p)
{
    if (e->kind != FE_WHILE || e->nfun != 2 || e->nkid != 1 || !e->fun[0] ||
        !e->fun[1] || e->fun[0]->arity != 1 || e->fun[1]->arity != 1 ||
        !e->fun[0]->param || !e->fun[1]->param) {
        return false;
    }
    weft_type st = e->kid[0]->type;
    const fe_term *c = e->fun[0]->body;
    if (!c || c->kind != FE_PRIM || c->op != WEFT_OP_LT || c->nkid != 2) {
        return false;
    }
    const fe_term *j = c->kid[0];
    if (st == WEFT_I64 && j->kind == FE_VAR &&
        j->u.var == e->fun[0]->param[0]) {
        p->k = -1;
    } else if (fe_is_tuple(st) && j->kind == FE_GET && j->type == WEFT_I64 &&
               j->kid[0]->kind == FE_VAR &&
               j->kid[0]->u.var == e->fun[0]->param[0]) {
        p->k = j->u.index;
    } else {
        return false;
    }
    p->bound = c->kid[1];
    p->param = e->fun[1]->param[0];
    scan(p, e->fun[1]->body);
    if (p->over || p->nread == 0) {
        return false;
    }
    const fe_term *r = e->fun[1]->body;
    while (r && r->kind == FE_LET) {
        r = r->kid[1];
    }
    if (!r) {
        return false;
    }
    if (p->k < 0) {
        return is_step(p, r);
    }
    return r->kind == FE_TUPLE && p->k < r->nkid && is_step(p, r->kid[p->k]);
}

static weft_status oom(void)
{
    return fe_oom("weft_compile");
}

/* Whether LLVM value v is the same in every thread of a block: built by
 * pure arithmetic from constants, the kernel's parameters and
 * non-volatile loads at such addresses. */
static bool uniform_value(LLVMValueRef v, int depth)
{
    if (LLVMIsAConstant(v) || LLVMIsAArgument(v)) {
        return true;
    }
    if (depth > UNIFORM_DEPTH || !LLVMIsAInstruction(v)) {
        return false;
    }
    switch (LLVMGetInstructionOpcode(v)) {
    case LLVMLoad:
        if (LLVMGetVolatile(v)) {
            return false;
        }
        break;
    case LLVMAdd:
    case LLVMSub:
    case LLVMMul:
    case LLVMShl:
    case LLVMLShr:
    case LLVMAShr:
    case LLVMAnd:
    case LLVMOr:
    case LLVMXor:
    case LLVMICmp:
    case LLVMSelect:
    case LLVMZExt:
    case LLVMSExt:
    case LLVMTrunc:
    case LLVMGetElementPtr:
    case LLVMBitCast:
    case LLVMAddrSpaceCast: break;
    default: return false;
    }
    int n = LLVMGetNumOperands(v);
    for (int i = 0; i < n; i++) {
        if (!uniform_value(LLVMGetOperand(v, i), depth + 1)) {
            return false;
        }
    }
    return true;
}

bool cg_stage_find(const fe_term *t, uint32_t nvar, fe_arena *arena)
{
    if (!t || nvar == 0) {
        return false;
    }
    if (t->kind == FE_WHILE) {
        stage_pat *p = pat_new(arena, nvar, t);
        if (p && stage_match(t, p)) {
            return true;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if (t->fun[i] && cg_stage_find(t->fun[i]->body, nvar, arena)) {
            return true;
        }
    }
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *kid = t->kid[i];
        if (kid && (!kid->acc || kid->delayed) &&
            cg_stage_find(kid, nvar, arena)) {
            return true;
        }
    }
    return false;
}

/* Whether every while loop in t counts j by one from a start to a bound
 * N that neither depends on what `op` binds (the element's index, its
 * lets): cg_stage_even's test, over t's functions and delayed
 * producers; *loops counts the loops seen. */
static bool even_loops(const fe_term *t, const bool *op_inner, uint32_t nvar,
                       fe_arena *arena, int *loops)
{
    if (!t) {
        return true;
    }
    if (t->kind == FE_WHILE) {
        stage_pat *p = pat_new(arena, nvar, t);
        if (!p || !stage_match(t, p) ||
            !cg_invariant(p->bound, op_inner, nvar)) {
            return false;
        }
        const fe_term *init = t->kid[0], *j0 = init;
        if (p->k >= 0) {
            j0 = init->kind == FE_TUPLE && p->k < init->nkid ? init->kid[p->k]
                                                             : NULL;
        }
        if (!j0 || !cg_invariant(j0, op_inner, nvar)) {
            return false;
        }
        (*loops)++;
    }
    for (int i = 0; i < t->nfun; i++) {
        if (t->fun[i] &&
            !even_loops(t->fun[i]->body, op_inner, nvar, arena, loops)) {
            return false;
        }
    }
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *kid = t->kid[i];
        if (kid && (!kid->acc || kid->delayed) &&
            !even_loops(kid, op_inner, nvar, arena, loops)) {
            return false;
        }
    }
    return true;
}

bool cg_stage_even(const fe_term *op, uint32_t nvar, fe_arena *arena)
{
    if (!op || nvar == 0) {
        return false;
    }
    bool *inner = fe_arena_alloc(arena, nvar * sizeof *inner);
    if (!inner) {
        return false;
    }
    memset(inner, 0, nvar * sizeof *inner);
    cg_mark_bound(op, inner, nvar);
    int loops = 0;
    return even_loops(op, inner, nvar, arena, &loops) && loops > 0;
}

const cg_staged *cg_staged_read(const cg_fn *fn, const fe_term *at)
{
    const struct cg_stage *g = fn->stage;
    for (int r = 0; g && r < g->nread; r++) {
        if (g->read[r].at == at) {
            return &g->read[r];
        }
    }
    return NULL;
}

/* The address of leaf l of array a in record q of tile g, and the
 * alignment it has (the shared array is 16-byte aligned). */
static LLVMValueRef record_leaf(cg_fn *fn, const struct cg_stage *g, int a,
                                int l, LLVMValueRef q, unsigned *align)
{
    int off = g->off[a][l];
    unsigned al = 16;
    while (al > 1 && ((g->rec % (int)al) != 0 || (off % (int)al) != 0)) {
        al /= 2;
    }
    *align = al;
    LLVMValueRef at = LLVMBuildAdd(
        B, LLVMBuildMul(B, q, cg_i64(fn, g->rec), ""), cg_i64(fn, off), "");
    return LLVMBuildInBoundsGEP2(B, LLVMInt8TypeInContext(fn->llctx), g->base,
                                 &at, 1, "");
}

weft_status cg_staged_load(cg_fn *fn, const cg_staged *r, cg_val *out)
{
    if (r->fixed) {
        weft_status s = cg_val_make(fn, r->v.n, out);
        if (s == WEFT_OK && r->v.n > 0) {
            memcpy(out->v, r->v.v, sizeof *out->v * (size_t)r->v.n);
        }
        return s;
    }
    const struct cg_stage *g = fn->stage;
    const cg_array *a = &g->arr[r->slot];
    weft_status s = cg_val_make(fn, a->nleaf, out);
    for (int l = 0; s == WEFT_OK && l < a->nleaf; l++) {
        unsigned align;
        LLVMValueRef p = record_leaf(fn, g, r->slot, l, g->q, &align);
        LLVMTypeRef mt = cg_mem_type(fn->llctx, a->leaf[l]);
        LLVMValueRef x = LLVMBuildLoad2(B, mt, p, "");
        LLVMSetAlignment(x, align);
        if (a->leaf[l] == WEFT_BOOL) {
            x = LLVMBuildICmp(B, LLVMIntNE, x, LLVMConstInt(mt, 0, 0), "");
        }
        out->v[l] = x;
    }
    return s;
}

/* Element i of manifest array a where i lies inside it, else zero in
 * every leaf (what `a !! i` gives), into *out. */
static weft_status load_or_zero(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                                cg_val *out)
{
    LLVMValueRef size = cg_i64(fn, 1);
    for (int d = 0; d < a->rank; d++) {
        size = d == 0 ? a->extent[0] : LLVMBuildMul(B, size, a->extent[d], "");
    }
    cg_val x, z;
    cg_if in;
    cg_if_begin(fn, &in, LLVMBuildICmp(B, LLVMIntULT, i, size, ""));
    cg_branch_weights(fn, in.br, CG_USUAL, CG_RARE);
    weft_status s = cg_array_load(fn, a, i, &x);
    if (s == WEFT_OK) {
        cg_if_else(fn, &in);
        s = cg_val_make(fn, a->nleaf, &z);
    }
    if (s != WEFT_OK) {
        return s;
    }
    for (int k = 0; k < a->nleaf; k++) {
        z.v[k] = LLVMConstNull(cg_type(fn->llctx, a->leaf[k]));
    }
    return cg_if_merge(fn, &in, &x, &z, out);
}

weft_status cg_stage_put(cg_fn *fn, const cg_stage *g, LLVMValueRef q,
                         LLVMValueRef at)
{
    cg_val v[STAGE_ARRAYS];
    for (int a = 0; a < g->narr; a++) {
        weft_status s = load_or_zero(fn, &g->arr[a], at, &v[a]);
        if (s != WEFT_OK) {
            return s;
        }
    }
    /* the stores together, so that a record's become one */
    for (int a = 0; a < g->narr; a++) {
        const cg_array *arr = &g->arr[a];
        for (int k = 0; k < arr->nleaf; k++) {
            unsigned align;
            LLVMValueRef p = record_leaf(fn, g, a, k, q, &align);
            LLVMValueRef x = v[a].v[k];
            if (arr->leaf[k] == WEFT_BOOL) {
                x = LLVMBuildZExt(B, x, cg_mem_type(fn->llctx, WEFT_BOOL), "");
            }
            LLVMSetAlignment(LLVMBuildStore(B, x, p), align);
        }
    }
    return WEFT_OK;
}

weft_status cg_stage_fix(cg_fn *fn, cg_stage *g, const cg_val *ix)
{
    for (int r = 0; r < g->nread; r++) {
        struct cg_staged *rd = &g->read[r];
        if (!rd->fixed) {
            continue;
        }
        cg_array a;
        weft_status s = cg_walk_array(&g->walk, rd->at->kid[0], &a);
        if (s == WEFT_OK) {
            s = rd->d < ix->n ? load_or_zero(fn, &a, ix->v[rd->d], &rd->v)
                              : fe_error(WEFT_ERR_INTERNAL,
                                         "weft_compile: a staged index");
        }
        if (s != WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

void cg_stage_use(cg_fn *fn, cg_stage *g, LLVMValueRef q)
{
    fn->stage = g;
    if (g) {
        g->q = q;
    }
}

/* Every thread: record q of the tile = the staged arrays at t + q (zero
 * outside them) for q = tid, tid + block, ... < T. */
static weft_status stage_tiles(cg_fn *fn, const struct cg_stage *g,
                               LLVMValueRef t, LLVMValueRef tid,
                               LLVMValueRef bs)
{
    cg_sloop l;
    LLVMValueRef q =
        cg_sloop_begin(fn, &l, tid, cg_i64(fn, g->tile), bs, "stage");
    weft_status s = cg_stage_put(fn, g, q, LLVMBuildAdd(B, t, q, ""));
    cg_sloop_end(fn, &l);
    return s;
}

/* Lay out the records of tile g (struct cg_stage) and make its shared
 * array. */
static weft_status stage_layout(cg_fn *fn, struct cg_stage *g)
{
    int most = 1, at = 0;
    for (int a = 0; a < g->narr; a++) {
        g->off[a] = fe_arena_alloc(fn->arena,
                                   sizeof *g->off[a] * (size_t)g->arr[a].nleaf);
        if (!g->off[a]) {
            return oom();
        }
    }
    /* by decreasing size: each leaf lands at a multiple of its size */
    for (int size = 8; size >= 1; size /= 2) {
        for (int a = 0; a < g->narr; a++) {
            for (int l = 0; l < g->arr[a].nleaf; l++) {
                if ((int)weft_type_size(g->arr[a].leaf[l]) == size) {
                    g->off[a][l] = at;
                    at += size;
                    most = size > most ? size : most;
                }
            }
        }
    }
    int rec = (at + most - 1) / most * most;
    if (rec <= 16) {
        int p = 1;
        while (p < rec) {
            p *= 2;
        }
        rec = p;
    }
    g->rec = rec;
    if ((int64_t)rec * g->tile > STAGE_BYTES) {
        g->base = NULL; /* too big: not staged */
        return WEFT_OK;
    }
    g->base = fn->target->shared_array(fn, LLVMInt8TypeInContext(fn->llctx),
                                       (int64_t)rec * g->tile);
    return WEFT_OK;
}

/* The tile of T records for the arrays that pattern p stages (*g NULL
 * where a leaf cannot be staged or there is no such array). */
static weft_status stage_build(const cg_walker *w, const stage_pat *p, int tile,
                               struct cg_stage **out)
{
    cg_fn *fn = w->fn;
    *out = NULL;
    if (p->narr == 0) {
        return WEFT_OK;
    }
    struct cg_stage *g = fe_arena_alloc(fn->arena, sizeof *g);
    cg_array *arr = fe_arena_alloc(fn->arena, sizeof *arr * (size_t)p->narr);
    struct cg_staged *read =
        fe_arena_alloc(fn->arena, sizeof *read * (size_t)p->nread);
    if (!g || !arr || !read) {
        return oom();
    }
    memset(g, 0, sizeof *g);
    memcpy(read, p->read, sizeof *read * (size_t)p->nread);
    g->narr = p->narr;
    g->arr = arr;
    g->read = read;
    g->nread = p->nread;
    g->tile = tile;
    g->walk = *w;
    for (int a = 0; a < p->narr; a++) {
        weft_status s = cg_walk_array(w, p->arr[a], &arr[a]);
        if (s != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < arr[a].nleaf; l++) {
            int size = (int)weft_type_size(arr[a].leaf[l]);
            if (size != 1 && size != 2 && size != 4 && size != 8) {
                return WEFT_OK;
            }
        }
    }
    weft_status s = stage_layout(fn, g);
    if (s == WEFT_OK && g->base) {
        *out = g;
    }
    return s;
}

/* Whether tile g must be staged for key[0 .. n-1] (see cg.h); the key
 * is kept in slots of the entry block, so across the elements of a
 * thread. */
LLVMValueRef cg_stage_fresh(cg_fn *fn, cg_stage *g, const LLVMValueRef *key,
                            int n)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMTypeRef i1 = LLVMInt1TypeInContext(fn->llctx);
    if (!g->held) {
        g->held = cg_alloca(fn, i1, "tile.held");
        LLVMBuilderRef b = LLVMCreateBuilderInContext(fn->llctx);
        LLVMPositionBuilderAtEnd(b, fn->entry);
        LLVMBuildStore(b, LLVMConstInt(i1, 0, 0), g->held);
        for (int k = 0; k < n; k++) {
            g->key[k] = cg_alloca(fn, i64, "tile.key");
            LLVMBuildStore(b, cg_i64(fn, 0), g->key[k]);
        }
        LLVMDisposeBuilder(b);
    }
    LLVMValueRef same = LLVMBuildLoad2(B, i1, g->held, "");
    for (int k = 0; k < n; k++) {
        LLVMValueRef eq = LLVMBuildICmp(
            B, LLVMIntEQ, LLVMBuildLoad2(B, i64, g->key[k], ""), key[k], "");
        same = LLVMBuildAnd(B, same, eq, "");
        LLVMBuildStore(B, key[k], g->key[k]);
    }
    LLVMBuildStore(B, LLVMConstInt(i1, 1, 0), g->held);
    return LLVMBuildNot(B, same, "fresh");
}

/* The poll at the end of a tile (count: the tiles so far, i32): *stop
 * gets the i1 that every thread of the block sees, whether the run is to
 * stop, polled by each thread once every poll_every / T tiles and agreed
 * by a barrier that ors the answers (count, hence the branch, is the same
 * in every thread).  No barrier otherwise: the next staging waits for
 * the readers of the tile first. */
static weft_status tile_poll(cg_fn *fn, LLVMValueRef count, LLVMValueRef *stop)
{
    const cg_target *tg = fn->target;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    int every = tg->poll_every / fn->stage_tile;
    LLVMValueRef due = LLVMBuildICmp(
        B, LLVMIntEQ,
        LLVMBuildAnd(
            B, count,
            LLVMConstInt(i32, (unsigned)(every > 1 ? every - 1 : 0), 0), ""),
        LLVMConstInt(i32, 0, 0), "");
    cg_if poll;
    cg_if_begin(fn, &poll, due);
    cg_val halt, no, any;
    LLVMValueRef h = tg->barrier_or(fn, tg->cancel_poll(fn));
    LLVMValueRef f = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 0, 0);
    halt.n = no.n = 1;
    halt.v = &h;
    no.v = &f;
    cg_if_else(fn, &poll);
    weft_status s = cg_if_merge(fn, &poll, &halt, &no, &any);
    *stop = s == WEFT_OK ? any.v[0] : NULL;
    return s;
}

void cg_stage_unroll(cg_fn *fn, LLVMValueRef br)
{
    LLVMContextRef c = fn->llctx;
    LLVMMetadataRef kv[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.unroll.count", 22),
        LLVMValueAsMetadata(
            LLVMConstInt(LLVMInt32TypeInContext(c), STAGE_UNROLL, 0))};
    cg_loop_id(fn, br, LLVMMDNodeInContext2(c, kv, 2));
}

/* Stage tile g from t (unless it holds that tile already) and run the
 * body of while loop e m times (1 <= m <= T, i32) from state in, whose
 * counter (leaf kl) is t, into *out. */
static weft_status tile_run(const cg_walker *w, const fe_term *e,
                            struct cg_stage *g, int kl, LLVMValueRef t,
                            LLVMValueRef m, const cg_val *in, cg_val *out)
{
    cg_fn *fn = w->fn;
    const cg_target *tg = fn->target;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    cg_if fresh;
    cg_if_begin(fn, &fresh, cg_stage_fresh(fn, g, &t, 1));
    tg->barrier(fn); /* every thread is done with the tile before */
    LLVMValueRef tid = LLVMBuildZExt(B, tg->thread_index(fn, 0), i64, "");
    LLVMValueRef bs = LLVMBuildZExt(B, tg->block_size(fn, 0), i64, "");
    /* t through an opaque copy: the full tiles' loop would otherwise keep
     * a pointer per staged array, stepped a tile at a time (k-means: 47
     * registers instead of 36) */
    fn->stage_tile = g->tile;
    weft_status s =
        stage_tiles(fn, g, tg->opaque ? tg->opaque(fn, t) : t, tid, bs);
    fn->stage_tile = 0;
    if (s != WEFT_OK) {
        return s;
    }
    tg->barrier(fn);
    cg_if_end(fn, &fresh);
    /* do { ... } while (++q < m), q in 32 bits and j = t + q (the body
     * gives j + 1): no 64-bit counter beside q, and the first trip needs
     * no test */
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef trip =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.trip");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.done");
    LLVMBuildBr(B, trip);
    LLVMPositionBuilderAtEnd(B, trip);
    cg_val st, next;
    if ((s = cg_val_make(fn, in->n, &st)) != WEFT_OK ||
        (s = cg_val_make(fn, in->n, out)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef q = LLVMBuildPhi(B, i32, "q");
    LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
    LLVMAddIncoming(q, &zero, &pre, 1);
    for (int k = 0; k < in->n; k++) {
        if (k != kl) {
            st.v[k] = LLVMBuildPhi(B, LLVMTypeOf(in->v[k]), "");
            LLVMAddIncoming(st.v[k], &in->v[k], &pre, 1);
        }
    }
    g->q = LLVMBuildZExt(B, q, i64, "");
    st.v[kl] = LLVMBuildAdd(B, t, g->q, "j");
    fn->stage = g;
    s = cg_walk_apply(w, e->fun[1], &st, &next);
    fn->stage = NULL;
    if (s == WEFT_OK && next.n != in->n) {
        s = fe_error(WEFT_ERR_INTERNAL, "weft_compile: a staged body");
    }
    if (s != WEFT_OK) {
        return s;
    }
    LLVMValueRef q1 = LLVMBuildNUWAdd(B, q, LLVMConstInt(i32, 1, 0), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    cg_stage_unroll(fn,
                    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, q1, m, ""),
                                    trip, done));
    LLVMAddIncoming(q, &q1, &latch, 1);
    LLVMPositionBuilderAtEnd(B, done);
    /* the block's phis first (an instruction before them does not verify),
     * then the counter's leaf */
    for (int k = 0; k < in->n; k++) {
        if (k != kl) {
            LLVMAddIncoming(st.v[k], &next.v[k], &latch, 1);
            out->v[k] = LLVMBuildPhi(B, LLVMTypeOf(in->v[k]), "");
            LLVMAddIncoming(out->v[k], &next.v[k], &latch, 1);
        }
    }
    out->v[kl] = LLVMBuildAdd(B, t, LLVMBuildZExt(B, m, i64, ""), "");
    return WEFT_OK;
}

weft_status cg_stage_while(const cg_walker *w, const fe_term *e,
                           const cg_val *init, cg_val *out, bool *done)
{
    cg_fn *fn = w->fn;
    *done = false;
    const cg_target *tg = fn->target;
    if (fn->stage_tile <= 0 || fn->checked || fn->ignored || fn->spec || !tg ||
        !tg->barrier || !tg->barrier_or || !tg->shared_array ||
        !tg->thread_index || fn->nvar == 0) {
        return WEFT_OK;
    }
    stage_pat *p = pat_new(fn->arena, fn->nvar, e);
    if (!p) {
        return oom();
    }
    if (!stage_match(e, p) || !cg_invariant(p->bound, p->inner, fn->nvar)) {
        return WEFT_OK;
    }
    int kl = p->k < 0 ? 0 : fe_type_leaf_offset(fn->ctx, e->kid[0]->type, p->k);
    if (kl < 0 || kl >= init->n) {
        return WEFT_OK;
    }
    cg_val nv;
    weft_status s = cg_walk(w, p->bound, &nv);
    if (s != WEFT_OK) {
        return s;
    }
    if (nv.n != 1 || !uniform_value(nv.v[0], 0) ||
        !uniform_value(init->v[kl], 0)) {
        return WEFT_OK; /* N's code is pure: LLVM drops it */
    }
    LLVMValueRef n = nv.v[0];
    int tile = fn->stage_tile;
    struct cg_stage *g;
    if ((s = stage_build(w, p, tile, &g)) != WEFT_OK || !g) {
        return s;
    }
    *done = true;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    bool poll = fn->cancel && tg->cancel_poll;
    /* the last tile's trips, 1 to T, from the loop's start and bound
     * alone (the same in every element: LLVM hoists it) */
    LLVMValueRef last =
        LLVMBuildSub(B, LLVMBuildSub(B, n, init->v[kl], ""), cg_i64(fn, 1), "");
    last = (tile & (tile - 1)) == 0
               ? LLVMBuildAnd(B, last, cg_i64(fn, tile - 1), "")
               : LLVMBuildURem(B, last, cg_i64(fn, tile), "");
    last = LLVMBuildNUWAdd(B, LLVMBuildTrunc(B, last, i32, ""),
                           LLVMConstInt(i32, 1, 0), "last");
    /* the user's condition, on the initial state only */
    fn->stage_tile = 0;
    cg_val c;
    s = cg_walk_apply(w, e->fun[0], init, &c);
    if (s == WEFT_OK && c.n != 1) {
        s = fe_error(WEFT_ERR_INTERNAL, "weft_compile: a staged condition");
    }
    if (s != WEFT_OK) {
        fn->stage_tile = tile;
        return s;
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged");
    LLVMBasicBlockRef full =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.full");
    LLVMBasicBlockRef lastb =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.last");
    LLVMBasicBlockRef exit =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.exit");
    LLVMBuildCondBr(B, c.v[0], head, exit);
    /* the full tiles, while N - t > T */
    LLVMPositionBuilderAtEnd(B, head);
    cg_val so, fo, lo;
    if ((s = cg_val_make(fn, init->n, &so)) != WEFT_OK ||
        (s = cg_val_make(fn, init->n, out)) != WEFT_OK) {
        fn->stage_tile = tile;
        return s;
    }
    for (int k = 0; k < init->n; k++) {
        so.v[k] = LLVMBuildPhi(B, LLVMTypeOf(init->v[k]), "");
        LLVMAddIncoming(so.v[k], &init->v[k], &pre, 1);
    }
    LLVMValueRef count = NULL;
    if (poll) {
        count = LLVMBuildPhi(B, i32, "tiles");
        LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
        LLVMAddIncoming(count, &zero, &pre, 1);
    }
    LLVMValueRef t = so.v[kl];
    LLVMBuildCondBr(B,
                    LLVMBuildICmp(B, LLVMIntUGT, LLVMBuildSub(B, n, t, ""),
                                  cg_i64(fn, tile), "more"),
                    full, lastb);
    LLVMPositionBuilderAtEnd(B, full);
    s = tile_run(w, e, g, kl, t, LLVMConstInt(i32, (unsigned)tile, 0), &so,
                 &fo);
    fn->stage_tile = tile;
    if (s != WEFT_OK) {
        return s;
    }
    LLVMValueRef stop = NULL, count1 = NULL;
    if (poll) {
        count1 = LLVMBuildAdd(B, count, LLVMConstInt(i32, 1, 0), "");
        if ((s = tile_poll(fn, count1, &stop)) != WEFT_OK) {
            return s;
        }
    }
    LLVMBasicBlockRef full_end = LLVMGetInsertBlock(B);
    if (poll) {
        LLVMAddIncoming(count, &count1, &full_end, 1);
    }
    if (stop) {
        LLVMBuildCondBr(B, stop, exit, head);
    } else {
        LLVMBuildBr(B, head);
    }
    for (int k = 0; k < init->n; k++) {
        LLVMAddIncoming(so.v[k], &fo.v[k], &full_end, 1);
    }
    /* the last tile, of `last` trips (no poll: the loop ends) */
    LLVMPositionBuilderAtEnd(B, lastb);
    fn->stage_tile = 0;
    s = tile_run(w, e, g, kl, t, last, &so, &lo);
    fn->stage_tile = tile;
    if (s != WEFT_OK) {
        return s;
    }
    LLVMBasicBlockRef last_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, exit);
    LLVMPositionBuilderAtEnd(B, exit);
    for (int k = 0; k < init->n; k++) {
        out->v[k] = LLVMBuildPhi(B, LLVMTypeOf(init->v[k]), "");
        LLVMAddIncoming(out->v[k], &init->v[k], &pre, 1);
        LLVMAddIncoming(out->v[k], &lo.v[k], &last_end, 1);
        if (stop) {
            LLVMAddIncoming(out->v[k], &fo.v[k], &full_end, 1);
        }
    }
    return WEFT_OK;
}

weft_status cg_stage_fun(const cg_walker *w, const fe_fun *f, int tile,
                         cg_stage **out)
{
    cg_fn *fn = w->fn;
    *out = NULL;
    const cg_target *tg = fn->target;
    if (fn->checked || fn->ignored || !tg || !tg->barrier ||
        !tg->shared_array || fn->nvar == 0 || !f || f->arity != 1 ||
        !f->param || !f->param[0] || !fe_is_dim(f->param[0]->type) ||
        fe_dim_rank(f->param[0]->type) < 1) {
        return WEFT_OK;
    }
    stage_pat *p = pat_new(fn->arena, fn->nvar, f->body);
    if (!p) {
        return oom();
    }
    p->param = f->param[0];
    p->rank = fe_dim_rank(f->param[0]->type);
    p->k = p->rank - 1;
    scan(p, f->body);
    if (p->over) {
        return WEFT_OK;
    }
    return stage_build(w, p, tile, out);
}
