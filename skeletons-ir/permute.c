/*
 * skeletons-ir/permute.c: permute, the forward scatter with a combining
 * function.
 *
 *     r = copy of def;  for each i of src:  j = ix(index i);
 *                       if j is not ignore: r[j] = combine(src[i], r[j])
 *
 * The driver (runtime/exec_permute.c) copies def into the output, or,
 * where def is a fused producer (lib/fuse.c; only one whose computation
 * cannot store an error, sk_permute_fuses_default, so that a run reports
 * the interpreter's error), runs the default's entry first: the last
 * entry, out[i] = def[i] over the output's positions.  The kernel runs
 * over the linear positions of src.  For each one it reads
 * src[i] (through sk_read, so a producer fused into the source is computed
 * inline), applies ix to the multi-index of i, drops the element when the
 * result is `ignore` (every component INT64_MIN; at rank 0, where there
 * are no components, a flag that FE_IGNORE sets: fn->ignored), and stores
 * CG_ERR_PERMUTE in the error word instead of writing when the target is
 * outside the output.
 *
 * Several workers may hit one target at once, so the update of r[j] is
 * made atomic in one of three ways, chosen at prepare time from the
 * combine function and the element type (the mode goes into k->flags and
 * so into the kernel's key):
 *
 *   PERMUTE_RMW   the combine is add, min, max, band, bor or bxor of its
 *                 two parameters (either order) on an integer type, or add
 *                 on f32 / f64: one native atomicrmw; or a flat tuple of
 *                 such, component l of the result from component l of
 *                 both parameters (k-means' sums and counts as one
 *                 permute): one native atomicrmw a leaf.  The leaves land
 *                 one by one, which is exact: no leaf reads another;
 *   PERMUTE_CAS   any other combine on a one-leaf 32- or 64-bit type: load,
 *                 apply, compare-and-swap the bits, retry until it sticks;
 *   PERMUTE_LOCK  other tuples, 8- and 16-bit types, bool, f16: a striped
 *                 array of PERMUTE_LOCKS spin locks (aux 0, i32 words), hashed by
 *                 j; take = atomic exchange with 1 until it returns 0
 *                 (spinning on plain atomic loads while it is held), then
 *                 a plain read-modify-write, release = an atomic store of 0
 *                 with release ordering.
 *
 * Entry 0 is the atomic loop; entry 1 the same loop with a plain read,
 * apply and write, which the driver runs when one worker does all the work
 * (a gang of one, or a source small enough for one chunk).  The step of
 * one source position and the native update are shared (sk.h) with the
 * PTX target's own permute (ptx/permute.c), which adds a third entry that
 * combines into per-block copies of a small result.  Floating-point
 * results of a parallel run depend on the order in which updates land, as
 * in Accelerate: permute's combine is meant to be associative and
 * commutative.
 */
#include "sk.h"

/* The atomic update of one permute kernel (k->flags, k->permute_mode). */
enum { PERMUTE_RMW = 1, PERMUTE_CAS = 2, PERMUTE_LOCK = 3 };
enum { PERMUTE_VERSION = 1 }; /* of the emitted code (k->flags bits 4-7) */
#define PERMUTE_LOCKS 4096    /* striped locks (a power of two) */
#define PERMUTE_LOCK_BITS 12

/* Whether term t is the variable v. */
static bool is_var(const fe_term *t, const fe_var *v)
{
    return t && t->kind == FE_VAR && t->u.var == v;
}

/* Whether t is the combine's x (`get x l` where leaf >= 0). */
static bool is_leaf_of(const fe_term *t, const fe_var *v, int leaf)
{
    if (leaf < 0) {
        return is_var(t, v);
    }
    return t && t->kind == FE_GET && t->nkid == 1 && t->u.index == leaf &&
           is_var(t->kid[0], v);
}

/* The atomicrmw operation that b, the body of combine f or (leaf >= 0)
 * its component `leaf`, computes from the same leaf of f's two parameters
 * (either order) on its type, if it is one (see the head comment). */
static bool rmw_prim(const fe_fun *f, const fe_term *b, int leaf,
                     LLVMAtomicRMWBinOp *op)
{
    weft_type ty = b ? b->type : 0;
    if (!b || b->kind != FE_PRIM || b->nkid != 2 || !fe_is_scalar(ty)) {
        return false;
    }
    const fe_var *x = f->param[0], *y = f->param[1];
    if (!((is_leaf_of(b->kid[0], x, leaf) && is_leaf_of(b->kid[1], y, leaf)) ||
          (is_leaf_of(b->kid[0], y, leaf) && is_leaf_of(b->kid[1], x, leaf)))) {
        return false;
    }
    if (ty == WEFT_F32 || ty == WEFT_F64) {
        *op = LLVMAtomicRMWBinOpFAdd;
        return b->op == WEFT_OP_ADD;
    }
    if (!fe_is_int(ty)) {
        return false;
    }
    bool sgn = fe_is_signed(ty);
    switch ((weft_op)b->op) {
    case WEFT_OP_ADD: *op = LLVMAtomicRMWBinOpAdd; return true;
    case WEFT_OP_MIN:
        *op = sgn ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
        return true;
    case WEFT_OP_MAX:
        *op = sgn ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
        return true;
    case WEFT_OP_BAND: *op = LLVMAtomicRMWBinOpAnd; return true;
    case WEFT_OP_BOR: *op = LLVMAtomicRMWBinOpOr; return true;
    case WEFT_OP_BXOR: *op = LLVMAtomicRMWBinOpXor; return true;
    default: return false;
    }
}

/* The atomicrmw operations, one a leaf, that the combine f computes: a
 * prim of its two scalar parameters, or, componentwise, a tuple whose
 * component l is a prim of component l of each parameter (a flat tuple of
 * scalars: its components are its leaves).  Returns the number of leaves,
 * 0 when the combine is not of this form. */
static int rmw_ops(const fe_fun *f, LLVMAtomicRMWBinOp *ops)
{
    const fe_term *b = f->body;
    if (f->arity != 2 || !f->param || !b) {
        return 0;
    }
    if (b->kind != FE_TUPLE) {
        return rmw_prim(f, b, -1, &ops[0]) ? 1 : 0;
    }
    if (b->nkid < 1 || b->nkid > SK_PERMUTE_LEAVES_MAX) {
        return 0;
    }
    for (int l = 0; l < b->nkid; l++) {
        if (!rmw_prim(f, b->kid[l], l, &ops[l])) {
            return 0;
        }
    }
    return b->nkid;
}

bool sk_permute_rmw_op(const fe_term *t, LLVMAtomicRMWBinOp *op)
{
    LLVMAtomicRMWBinOp ops[SK_PERMUTE_LEAVES_MAX];
    if (fe_is_tuple(t->type) || rmw_ops(t->fun[0], ops) != 1) {
        return false;
    }
    *op = ops[0];
    return true;
}

int sk_permute_rmw_ops(const fe_term *t, LLVMAtomicRMWBinOp *ops)
{
    return rmw_ops(t->fun[0], ops);
}

/* The mode for operation t (see the head comment). */
static int permute_mode_of(const fe_term *t)
{
    LLVMAtomicRMWBinOp ops[SK_PERMUTE_LEAVES_MAX];
    weft_type ty = t->type;
    if (rmw_ops(t->fun[0], ops) > 0) {
        return PERMUTE_RMW;
    }
    if (fe_is_scalar(ty) && ty != WEFT_BOOL &&
        (fe_type_bits(ty) == 32 || fe_type_bits(ty) == 64)) {
        return PERMUTE_CAS;
    }
    return PERMUTE_LOCK;
}

static bool permute_supported(const fe_term *t)
{
    return t->atype->narrays == 1 && t->nfun == 2 && t->nkid == 2 &&
           t->fun[0]->arity == 2 && t->fun[1]->arity == 1;
}

bool sk_permute_fuses_default(const fe_term *t, bool checked)
{
    return !checked && t->kind == FE_PERMUTE && t->nkid == 2 && t->kid[0] &&
           (!t->kid[0]->delayed || !sk_gathers(t->kid[0], false));
}

int sk_permute_init_entry(const sk_kernel *k)
{
    return k->op->kid[0]->delayed ? k->nentry - 1 : -1;
}

static weft_status permute_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    /* the atomic and the plain loop, and the default's entry */
    k->nentry = k->op->kid[0]->delayed ? 3 : 2;
    k->permute_mode = permute_mode_of(k->op);
    /* the mode and the version of this file's code (the key: cached
     * kernels of older code are not reused) */
    k->flags = (unsigned)k->permute_mode | (unsigned)PERMUTE_VERSION << 4;
    if (k->permute_mode != PERMUTE_LOCK) {
        return WEFT_OK;
    }
    weft_status s =
        sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 0, WEFT_I32, 1);
    k->aux_item[0] = k->nitem - 1;
    return s;
}

/* The address of element j of leaf l of array a. */
static LLVMValueRef elem_ptr(cg_fn *fn, const cg_array *a, int l,
                             LLVMValueRef j)
{
    LLVMTypeRef mt = cg_mem_type(fn->llctx, a->leaf[l]);
    return LLVMBuildInBoundsGEP2(fn->b, mt, a->ptr[l], &j, 1, "");
}

weft_status sk_permute_update_plain(sk_fn *f, const cg_array *r, LLVMValueRef j,
                                    const cg_val *x)
{
    cg_fn *fn = &f->fn;
    cg_val args[2], y;
    args[0] = *x;
    weft_status s = cg_array_load(fn, r, j, &args[1]);
    if (s == WEFT_OK) {
        s = cg_apply(fn, f->e->k->op->fun[0], args, &y);
    }
    if (s == WEFT_OK) {
        cg_array_store(fn, r, j, &y);
    }
    return s;
}

LLVMValueRef sk_permute_identity(cg_fn *fn, LLVMAtomicRMWBinOp op, weft_type ty)
{
    LLVMTypeRef t = cg_type(fn->llctx, ty);
    if (op == LLVMAtomicRMWBinOpFAdd) {
        return LLVMConstReal(t, -0.0);
    }
    int bits = fe_type_bits(ty);
    uint64_t ones = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t v = 0;
    switch (op) {
    case LLVMAtomicRMWBinOpAnd:
    case LLVMAtomicRMWBinOpUMin: v = ones; break;
    case LLVMAtomicRMWBinOpMin: v = ones >> 1; break;
    case LLVMAtomicRMWBinOpMax: v = 1ull << (bits - 1); break;
    default: /* add, or, xor, umax */ v = 0; break;
    }
    return LLVMConstInt(t, v, 0);
}

/* One native atomicrmw a leaf. */
weft_status sk_permute_update_rmw(sk_fn *f, const cg_array *r, LLVMValueRef j,
                                  const cg_val *x)
{
    cg_fn *fn = &f->fn;
    LLVMAtomicRMWBinOp ops[SK_PERMUTE_LEAVES_MAX];
    int n = rmw_ops(f->e->k->op->fun[0], ops);
    if (n < 1 || n != r->nleaf || n != x->n) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: permute: the combine is not atomic");
    }
    for (int l = 0; l < n; l++) {
        fn->target->atomic_rmw(fn, ops[l], elem_ptr(fn, r, l, j), x->v[l]);
    }
    return WEFT_OK;
}

/* The CAS loop on the bits of a one-leaf 32/64-bit element:
 *     seen = load r[j]
 *   retry: old = phi(seen0, seen); y = combine(x, old as T);
 *     seen = cas(r[j], old, y as bits); if seen != old goto retry */
static weft_status update_cas(sk_fn *f, const cg_array *r, LLVMValueRef j,
                              const cg_val *x)
{
    cg_fn *fn = &f->fn;
    weft_type ty = r->leaf[0];
    LLVMTypeRef it =
        LLVMIntTypeInContext(fn->llctx, (unsigned)fe_type_bits(ty));
    LLVMTypeRef vt = cg_type(fn->llctx, ty);
    LLVMValueRef p = elem_ptr(fn, r, 0, j);
    LLVMValueRef first = LLVMBuildLoad2(fn->b, it, p, "");
    LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(first, (unsigned)fe_type_bits(ty) / 8);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(fn->b);
    LLVMBasicBlockRef loop =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "cas");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "cas.done");
    LLVMBuildBr(fn->b, loop);
    LLVMPositionBuilderAtEnd(fn->b, loop);
    LLVMValueRef old = LLVMBuildPhi(fn->b, it, "");
    cg_val args[2], y;
    args[0] = *x;
    weft_status s =
        cg_val_one(fn, LLVMBuildBitCast(fn->b, old, vt, ""), &args[1]);
    if (s == WEFT_OK) {
        s = cg_apply(fn, f->e->k->op->fun[0], args, &y);
    }
    if (s) {
        return s;
    }
    LLVMValueRef nb = LLVMBuildBitCast(fn->b, y.v[0], it, "");
    LLVMValueRef seen = fn->target->atomic_cas(fn, p, old, nb);
    LLVMValueRef ok = LLVMBuildICmp(fn->b, LLVMIntEQ, seen, old, "");
    LLVMBasicBlockRef tail = LLVMGetInsertBlock(fn->b);
    LLVMBuildCondBr(fn->b, ok, done, loop);
    LLVMValueRef in_v[2] = {first, seen};
    LLVMBasicBlockRef in_b[2] = {pre, tail};
    LLVMAddIncoming(old, in_v, in_b, 2);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return WEFT_OK;
}

/* Under the striped lock of j: a plain update. */
static weft_status update_lock(sk_fn *f, const cg_array *r, LLVMValueRef j,
                               const cg_val *x)
{
    cg_fn *fn = &f->fn;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
    const cg_array *locks = sk_aux_array(f, 0);
    if (!locks) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: permute: no lock array");
    }
    /* Fibonacci hashing of j onto the stripes. */
    LLVMValueRef gold = cg_i64(fn, (int64_t)0x9E3779B97F4A7C15ull);
    LLVMValueRef h = LLVMBuildMul(fn->b, j, gold, "");
    h = LLVMBuildLShr(fn->b, h, cg_i64(fn, 64 - PERMUTE_LOCK_BITS), "");
    LLVMValueRef lp =
        LLVMBuildInBoundsGEP2(fn->b, i32, locks->ptr[0], &h, 1, "");
    LLVMBasicBlockRef take =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lock");
    LLVMBasicBlockRef spin =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lock.spin");
    LLVMBasicBlockRef held =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lock.held");
    LLVMBuildBr(fn->b, take);
    /* take: if (xchg(lock, 1) == 0) held else spin */
    LLVMPositionBuilderAtEnd(fn->b, take);
    LLVMValueRef was = fn->target->atomic_rmw(fn, LLVMAtomicRMWBinOpXchg, lp,
                                              LLVMConstInt(i32, 1, 0));
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, was, zero, ""), held,
                    spin);
    /* spin: wait on plain atomic loads until the lock looks free */
    LLVMPositionBuilderAtEnd(fn->b, spin);
    LLVMValueRef cur = LLVMBuildLoad2(fn->b, i32, lp, "");
    LLVMSetOrdering(cur, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(cur, 4);
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, cur, zero, ""), take,
                    spin);
    LLVMPositionBuilderAtEnd(fn->b, held);
    /* A target whose atomics are relaxed (PTX) orders the update after
     * taking the lock and before releasing it with fences. */
    if (fn->target->fence) {
        fn->target->fence(fn);
    }
    weft_status s = sk_permute_update_plain(f, r, j, x);
    if (s) {
        return s;
    }
    if (fn->target->fence) {
        fn->target->fence(fn);
    }
    LLVMValueRef st = LLVMBuildStore(fn->b, zero, lp);
    LLVMSetOrdering(st, fn->target->fence ? LLVMAtomicOrderingMonotonic
                                          : LLVMAtomicOrderingRelease);
    LLVMSetAlignment(st, 4);
    return WEFT_OK;
}

/* The extents of permute t's source into sext.  A source that is a fused
 * generate over the shape of an array the kernel also reads (the
 * histogram's `generate (shape keys) 1` with an index function that reads
 * keys) takes that array's extents, the same values the host computed,
 * so that the index function's bounds checks on it compare against the
 * very extents the source loop runs to (ptx/permute.c tells LLVM that
 * every source position lies inside them). */
static weft_status source_extent(sk_fn *f, const fe_term *t, LLVMValueRef *sext)
{
    const fe_term *src = t->kid[1];
    const fe_term *sh = src->delayed && src->kind == FE_GENERATE && src->nkid
                            ? src->kid[0]
                            : NULL;
    const cg_array *a = NULL;
    if (sh && sh->kind == FE_SHAPE && sh->nkid == 1 && sh->kid[0]->acc &&
        sh->kid[0]->rank == src->rank) {
        a = sk_manifest_array(f, sh->kid[0]);
    }
    if (!a) {
        return sk_extent(f, src, sext);
    }
    for (int d = 0; d < src->rank; d++) {
        sext[d] = a->extent[d];
    }
    return WEFT_OK;
}

weft_status sk_permute_begin(sk_fn *f, LLVMValueRef *sext)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    weft_status s = source_extent(f, t, sext);
    if (s == WEFT_OK && sk_out_array(f, 0)->rank == 0) {
        fn->ignored =
            cg_alloca(fn, LLVMInt1TypeInContext(fn->llctx), "ignored");
    }
    return s;
}

weft_status sk_permute_target(sk_fn *f, const cg_array *r,
                              const LLVMValueRef *sext, LLVMValueRef i,
                              sk_permute_elem *e)
{
    weft_status s;
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    const fe_term *src = t->kid[1];
    const fe_fun *fix = t->fun[1];
    int drank = r->rank;
    LLVMTypeRef i1 = LLVMInt1TypeInContext(fn->llctx);
    cg_val ix, tv;
    e->i = i;
    /* The source element first: like the interpreter, which computes the
     * whole source, a gather fused into it is checked even where the
     * element is then ignored. */
    s = sk_read(f, src, i, NULL, &e->x);
    if (s == WEFT_OK) {
        s = sk_from_linear(f, src->rank, sext, i, &ix);
    }
    if (s == WEFT_OK && drank == 0) {
        LLVMBuildStore(fn->b, LLVMConstInt(i1, 0, 0), fn->ignored);
    }
    if (s == WEFT_OK) {
        s = cg_apply(fn, fix, &ix, &tv);
    }
    if (s) {
        return s;
    }
    e->inside = LLVMConstInt(i1, 1, 0);
    if (drank == 0) {
        e->ignored = LLVMBuildLoad2(fn->b, i1, fn->ignored, "");
        e->j = cg_i64(fn, 0);
        return WEFT_OK;
    }
    e->ignored = LLVMConstInt(i1, 1, 0);
    for (int d = 0; d < drank; d++) {
        e->ignored = LLVMBuildAnd(
            fn->b, e->ignored,
            LLVMBuildICmp(fn->b, LLVMIntEQ, tv.v[d], cg_i64(fn, INT64_MIN), ""),
            "");
        /* 0 <= c < extent, as one unsigned compare */
        e->inside = LLVMBuildAnd(
            fn->b, e->inside,
            LLVMBuildICmp(fn->b, LLVMIntULT, tv.v[d], r->extent[d], ""), "");
    }
    e->j = cg_to_index(fn, drank, r->extent, tv.v);
    return WEFT_OK;
}

weft_status sk_permute_put(sk_fn *f, const cg_array *r,
                           const sk_permute_elem *e, sk_permute_update update)
{
    cg_fn *fn = &f->fn;
    cg_if keep;
    cg_if_begin(fn, &keep, LLVMBuildNot(fn->b, e->ignored, ""));
    cg_if in;
    cg_if_begin(fn, &in, e->inside);
    weft_status s = update(f, r, e->j, &e->x);
    if (s) {
        return s;
    }
    cg_if_else(fn, &in);
    /* checked mode names the element: a target read after it may have
     * moved the current element on */
    cg_set_elem(fn, e->i);
    sk_set_error(f, CG_ERR_PERMUTE);
    cg_if_end(fn, &in);
    cg_if_end(fn, &keep);
    return WEFT_OK;
}

void sk_permute_assume_inside(sk_fn *f, LLVMValueRef i, LLVMValueRef ssize)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef in = LLVMBuildICmp(fn->b, LLVMIntULT, i, ssize, "");
    cg_intrinsic(fn, "llvm.assume", NULL, 0, &in, 1);
}

LLVMValueRef sk_permute_source_size(sk_fn *f, const LLVMValueRef *sext)
{
    cg_fn *fn = &f->fn;
    int rank = f->e->k->op->kid[1]->rank;
    LLVMValueRef n = rank > 0 ? sext[0] : cg_i64(fn, 1);
    for (int d = 1; d < rank; d++) {
        n = LLVMBuildNSWMul(fn->b, n, sext[d], "");
    }
    return n;
}

weft_status sk_permute_group(sk_fn *f, const cg_array *r,
                             const LLVMValueRef *sext, LLVMValueRef ssize,
                             const LLVMValueRef *g, int ng, int count,
                             sk_permute_put_fn put, void *user)
{
    cg_fn *fn = &f->fn;
    sk_permute_elem e[SK_PERMUTE_GROUP_MAX];
    weft_status s = WEFT_OK;
    int n = ng * count;
    if (n > SK_PERMUTE_GROUP_MAX) {
        return fe_error(WEFT_ERR_INTERNAL, "weft_compile: permute: a group "
                                           "too large");
    }
    for (int k = 0; k < n && s == WEFT_OK; k++) {
        LLVMValueRef i =
            LLVMBuildNSWAdd(fn->b, g[k / count], cg_i64(fn, k % count), "");
        sk_permute_assume_inside(f, i, ssize);
        s = sk_permute_target(f, r, sext, i, &e[k]);
    }
    for (int k = 0; k < n && s == WEFT_OK; k++) {
        s = put(f, r, &e[k], user);
    }
    return s;
}

weft_status sk_permute_step(sk_fn *f, const cg_array *r,
                            const LLVMValueRef *sext, LLVMValueRef i,
                            sk_permute_update update)
{
    sk_permute_elem e;
    weft_status s = sk_permute_target(f, r, sext, i, &e);
    return s ? s : sk_permute_put(f, r, &e, update);
}

typedef struct permute_loop {
    LLVMValueRef *sext;
    sk_permute_update update;
} permute_loop;

static weft_status permute_element(sk_fn *f, LLVMValueRef i, void *user)
{
    permute_loop *pl = user;
    return sk_permute_step(f, sk_out_array(f, 0), pl->sext, i, pl->update);
}

/* sk_permute_put with the loop's update (a sk_permute_group put). */
static weft_status put_update(sk_fn *f, const cg_array *r,
                              const sk_permute_elem *e, void *user)
{
    const permute_loop *pl = user;
    return sk_permute_put(f, r, e, pl->update);
}

/* The atomic loop on a target whose element-wise work comes in chunks of
 * K elements (PTX): a full chunk is one group (its K targets before its K
 * updates, so that its reads sit together and combine into a vector
 * load), any other range goes element by element. */
static weft_status emit_chunks(sk_fn *f, permute_loop *pl, int K)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef b = fn->b;
    LLVMValueRef kk = cg_i64(fn, K);
    const cg_array *out = sk_out_array(f, 0);
    LLVMValueRef ssize = sk_permute_source_size(f, pl->sext);
    cg_if full;
    cg_if_begin(fn, &full, sk_full_chunk(f, K));
    /* the chunk at c K, said with the constant K (its alignment) */
    LLVMValueRef g = LLVMBuildNSWMul(b, f->chunk, kk, "");
    weft_status s =
        sk_permute_group(f, out, pl->sext, ssize, &g, 1, K, put_update, pl);
    cg_if_else(fn, &full);
    if (s == WEFT_OK) {
        cg_loop l;
        LLVMValueRef i;
        cg_loop_begin(fn, &l, f->start, f->end, &i);
        sk_permute_assume_inside(f, i, ssize);
        s = sk_permute_step(f, out, pl->sext, i, pl->update);
        cg_loop_end(fn, &l);
    }
    cg_if_end(fn, &full);
    return s;
}

/* The body of one entry point: the loop over src positions [start, end). */
static weft_status emit_loop(sk_fn *f, bool atomic)
{
    int mode = f->e->k->permute_mode;
    sk_permute_update update = !atomic               ? sk_permute_update_plain
                               : mode == PERMUTE_RMW ? sk_permute_update_rmw
                               : mode == PERMUTE_CAS ? update_cas
                                                     : update_lock;
    LLVMValueRef sext[WEFT_MAX_RANK];
    weft_status s = sk_permute_begin(f, sext);
    if (s) {
        return s;
    }
    permute_loop pl = {.sext = sext, .update = update};
    int K = f->e->target->chunk_elems;
    if (atomic && K > 1 && K <= SK_PERMUTE_GROUP_MAX && f->chunk &&
        f->e->k->light) {
        return emit_chunks(f, &pl, K);
    }
    return sk_elements(f, permute_element, &pl);
}

/* One entry point; on failure the half-built function is closed (its
 * module is thrown away by the caller) so that nothing leaks. */
static weft_status emit_entry(sk_emit *e, const char *name, bool atomic)
{
    sk_fn f;
    weft_status s = sk_fn_begin(e, &f, name);
    if (s) {
        return s;
    }
    s = emit_loop(&f, atomic);
    if (s) {
        LLVMBuildUnreachable(f.fn.b);
        cg_fn_end(&f.fn);
        return s;
    }
    sk_fn_end(&f);
    return WEFT_OK;
}

/* out[i] = def[i], the default's element (an sk_elements body). */
static weft_status init_element(sk_fn *f, LLVMValueRef i, void *user)
{
    (void)user;
    cg_val y;
    weft_status s = sk_read(f, f->e->k->op->kid[0], i, NULL, &y);
    if (s == WEFT_OK) {
        cg_array_store(&f->fn, sk_out_array(f, 0), i, &y);
    }
    return s;
}

/* The default's entry: its elements over the output's positions. */
static weft_status emit_init(sk_emit *e, const char *name)
{
    sk_fn f;
    weft_status s = sk_fn_begin(e, &f, name);
    if (s) {
        return s;
    }
    s = sk_elements(&f, init_element, NULL);
    sk_fn_end(&f);
    return s;
}

static weft_status permute_emit(sk_emit *e, const char *const *names)
{
    int init = sk_permute_init_entry(e->k);
    weft_status s = emit_entry(e, names[0], true);
    if (s == WEFT_OK) {
        s = emit_entry(e, names[1], false);
    }
    if (s == WEFT_OK && init >= 0) {
        s = emit_init(e, names[init]);
    }
    return s;
}

const sk_skeleton sk_permute = {
    .name = "permute",
    .family = SK_PERMUTE,
    .supported = permute_supported,
    .prepare = permute_prepare,
    .emit = permute_emit,
    .fuses_input = true,
};
