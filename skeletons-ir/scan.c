/*
 * skeletons-ir/scan.c: the six scans (scanl, scanl1, scanl', scanr,
 * scanr1, scanr') along the innermost dimension.
 *
 * The input is `rows` rows of m elements.  Left scans combine as
 * acc = f(acc, x) walking a row forwards, right scans as acc = f(x, acc)
 * walking it backwards, exactly as the interpreter (lib/interp.c,
 * acc_scan) does.  Per row:
 *   scanl   n + 1 results: the exclusive scan from z, then the total;
 *   scanl'  the exclusive scan (n), and the total in the second output;
 *   scanl1  the inclusive scan, starting from x[0];
 *   scanr   n + 1 results: the inclusive scan from the right, ending with z;
 *   scanr'  the exclusive scan from the right (n), the total separately;
 *   scanr1  the inclusive scan from the right, starting from x[n-1].
 * "Exclusive" writes the accumulator before combining an element,
 * "inclusive" after.  Input element j of row r goes to output position
 * j + r for scanl and scanr (their rows are one longer), else to j.
 *
 * Two strategies, chosen at run time by the driver
 * (runtime/exec_scan.c):
 *
 *   entry 0, whole rows (many rows): one iteration per row, a sequential
 *       scan of the row, then its total.
 *   entries 1, 2, 3: three phases for few long rows, each row cut into C
 *       chunks (never empty: the driver keeps C <= m), so that no prefix
 *       is ever recomputed:
 *       1: over rows * C chunks, each chunk's reduction into partial[c]
 *          (fold1 forwards for left scans, backwards for right scans);
 *       2: over rows, a sequential scan of the row's C partials that
 *          replaces each by the carry-in of its chunk (seeded by z, or,
 *          for scanl1 / scanr1, starting after the first / last chunk),
 *          and writes the row's total (scanl, scanl', scanr, scanr');
 *       3: over rows * C chunks, each chunk rescanned from its carry-in
 *          (the first chunk of scanl1, the last of scanr1, from its own
 *          first element).
 *
 * The combine function carries the reassoc fast-math flag in phase 1
 * only, where it lets LLVM vectorise the chunk reductions; the user
 * declared it associative, and the chunking reassociates it anyway.  The
 * scans proper are a chain of dependent combines that no flag speeds up.
 * The input is read through sk_read, so a fused producer may stand there;
 * one whose linear read would divide per element (a gather, a generate, a
 * zipWith of different shapes) is read by multi-index, the row's outer
 * components computed once per row.  Aux items: 0 the partials (rank 1,
 * the element type), 1 the number of chunks per row C (i64).
 */
#include "sk.h"

sk_scan_info sk_scan_info_of(const fe_term *t)
{
    fe_kind k = (fe_kind)t->kind;
    sk_scan_info in;
    in.seeded =
        k == FE_SCANL || k == FE_SCANL_ || k == FE_SCANR || k == FE_SCANR_;
    in.left = k == FE_SCANL || k == FE_SCANL1 || k == FE_SCANL_;
    in.pair = k == FE_SCANL_ || k == FE_SCANR_;
    in.grow = k == FE_SCANL || k == FE_SCANR;
    in.exclusive = k == FE_SCANL || k == FE_SCANL_ || k == FE_SCANR_;
    in.elt = in.pair ? t->atype->comp[0]->elt : t->type;
    in.src = t->kid[in.seeded ? 1 : 0];
    in.comb = t->fun[0];
    return in;
}

bool sk_scan_supported(const fe_term *t)
{
    bool pair = t->kind == FE_SCANL_ || t->kind == FE_SCANR_;
    return t->atype->narrays == (pair ? 2 : 1) && t->nfun == 1;
}

typedef sk_scan_info scan_info;

static weft_status scan_prepare(weft_context *ctx, fe_arena *arena,
                                sk_kernel *k)
{
    scan_info in = sk_scan_info_of(k->op);
    k->nentry = 4;
    return sk_add_chunk_items(ctx, arena, k, in.elt);
}

/* acc = f(acc, x) for left scans, f(x, acc) for right ones. */
static weft_status combine(sk_fn *f, const scan_info *in, const cg_mut *acc,
                           const cg_val *x, bool reassoc)
{
    cg_fn *fn = &f->fn;
    cg_val a, args[2], y;
    weft_status s = cg_mut_get(fn, acc, &a);
    if (s) {
        return s;
    }
    args[0] = in->left ? a : *x;
    args[1] = in->left ? *x : a;
    fn->fmf = reassoc ? LLVMFastMathAllowReassoc : 0;
    s = cg_apply(fn, in->comb, args, &y);
    fn->fmf = 0;
    if (s == WEFT_OK) {
        cg_mut_set(fn, acc, &y);
    }
    return s;
}

/* Output position of input position j in row `row`. */
static LLVMValueRef out_pos(sk_fn *f, const scan_info *in, LLVMValueRef row,
                            LLVMValueRef j)
{
    return in->grow ? LLVMBuildAdd(f->fn.b, j, row, "") : j;
}

/* One step of a scan at input position j: read x[j], combine and store in
 * the order the scan asks for. */
static weft_status scan_step(sk_fn *f, const scan_info *in, const cg_mut *acc,
                             const sk_row *rr, LLVMValueRef row, LLVMValueRef j)
{
    cg_fn *fn = &f->fn;
    const cg_array *out = sk_out_array(f, 0);
    cg_val x, a;
    weft_status s = sk_row_read(f, rr, j, &x);
    if (s) {
        return s;
    }
    if (in->exclusive) {
        if ((s = cg_mut_get(fn, acc, &a)) != WEFT_OK) {
            return s;
        }
        cg_array_store(fn, out, out_pos(f, in, row, j), &a);
    }
    if ((s = combine(f, in, acc, &x, false)) != WEFT_OK) {
        return s;
    }
    if (!in->exclusive) {
        if ((s = cg_mut_get(fn, acc, &a)) != WEFT_OK) {
            return s;
        }
        cg_array_store(fn, out, out_pos(f, in, row, j), &a);
    }
    return WEFT_OK;
}

/* Scan input positions [lo, hi) of row `row` (forwards for left scans,
 * backwards for right ones) into the first output, leaving the last
 * accumulator in acc.  The scan starts from `carry` when from_elem is
 * NULL or false at run time, else (scanl1, scanr1) from the piece's own
 * first element, which is stored as it is.  carry may be NULL only when
 * from_elem is NULL too (then the piece always starts from its element). */
static weft_status scan_piece(sk_fn *f, const scan_info *in, const cg_mut *acc,
                              const sk_row *rr, LLVMValueRef row,
                              LLVMValueRef lo, LLVMValueRef hi,
                              LLVMValueRef from_elem, const cg_val *carry)
{
    cg_fn *fn = &f->fn;
    const cg_array *out = sk_out_array(f, 0);
    LLVMValueRef one = cg_i64(fn, 1);
    cg_mut bound; /* left: first position to scan; right: one past last */
    weft_status s = cg_mut_new(fn, WEFT_I64, &bound);
    if (s) {
        return s;
    }
    cg_val b;
    if ((s = cg_val_one(fn, in->left ? lo : hi, &b)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &bound, &b);
    if (carry) {
        cg_mut_set(fn, acc, carry);
    }
    if (!carry || from_elem) {
        cg_if iff;
        if (carry) {
            cg_if_begin(fn, &iff, from_elem);
        }
        LLVMValueRef p = in->left ? lo : LLVMBuildSub(fn->b, hi, one, "");
        cg_val x;
        if ((s = sk_row_read(f, rr, p, &x)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, acc, &x);
        cg_array_store(fn, out, out_pos(f, in, row, p), &x);
        LLVMValueRef nb = in->left ? LLVMBuildAdd(fn->b, lo, one, "") : p;
        if ((s = cg_val_one(fn, nb, &b)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &bound, &b);
        if (carry) {
            cg_if_end(fn, &iff);
        }
    }
    if ((s = cg_mut_get(fn, &bound, &b)) != WEFT_OK) {
        return s;
    }
    cg_loop l;
    LLVMValueRef i;
    if (in->left) {
        cg_loop_begin(fn, &l, b.v[0], hi, &i);
        s = scan_step(f, in, acc, rr, row, i);
    } else {
        /* k = 0 .. top - lo - 1 visits top - 1 down to lo */
        LLVMValueRef top = b.v[0];
        LLVMValueRef n = LLVMBuildSub(fn->b, top, lo, "");
        cg_loop_begin(fn, &l, cg_i64(fn, 0), n, &i);
        LLVMValueRef j =
            LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, top, one, ""), i, "");
        s = scan_step(f, in, acc, rr, row, j);
    }
    cg_loop_end(fn, &l);
    return s;
}

/* Store the row's total `tot` where the scan keeps it: scanl, scanr at
 * the end of the row (for scanr that is z itself), scanl', scanr' in the
 * second output.  Nothing for scanl1, scanr1. */
static void store_total(sk_fn *f, const scan_info *in, LLVMValueRef row,
                        LLVMValueRef m, const cg_val *tot)
{
    cg_fn *fn = &f->fn;
    if (in->grow) {
        /* row * (m + 1) + m */
        LLVMValueRef m1 = LLVMBuildAdd(fn->b, m, cg_i64(fn, 1), "");
        LLVMValueRef p =
            LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, row, m1, ""), m, "");
        cg_array_store(fn, sk_out_array(f, 0), p, tot);
    } else if (in->pair) {
        cg_array_store(fn, sk_out_array(f, 1), row, tot);
    }
}

/* store_total of the value of *acc. */
static weft_status store_acc_total(sk_fn *f, const scan_info *in,
                                   LLVMValueRef row, LLVMValueRef m,
                                   const cg_mut *acc)
{
    cg_val tot;
    weft_status s = cg_mut_get(&f->fn, acc, &tot);
    if (s == WEFT_OK) {
        store_total(f, in, row, m, &tot);
    }
    return s;
}

/* The input's extents, and the innermost one (the row length). */
static weft_status row_length(sk_fn *f, const scan_info *in, LLVMValueRef *ext,
                              LLVMValueRef *m)
{
    weft_status s = sk_extent(f, in->src, ext);
    if (s == WEFT_OK) {
        *m = ext[in->src->rank - 1];
    }
    return s;
}

/* Entry 0: whole rows. */
static weft_status emit_rows(sk_fn *f, const scan_info *in)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef m, ext[WEFT_MAX_RANK];
    weft_status s = row_length(f, in, ext, &m);
    cg_mut acc;
    if (s || (s = cg_mut_new(fn, in->elt, &acc)) != WEFT_OK) {
        return s;
    }
    const cg_val *z = in->seeded ? sk_kid_value(f, 0) : NULL;
    cg_loop l;
    LLVMValueRef r;
    cg_loop_begin(fn, &l, f->start, f->end, &r);
    LLVMValueRef lo = LLVMBuildMul(fn->b, r, m, "");
    LLVMValueRef hi = LLVMBuildAdd(fn->b, lo, m, "");
    if (in->grow && !in->left) {
        store_total(f, in, r, m, z);
    }
    sk_row rr;
    if ((s = sk_row_begin(f, in->src, ext, r, lo, false, &rr)) != WEFT_OK ||
        (s = scan_piece(f, in, &acc, &rr, r, lo, hi, NULL, z)) != WEFT_OK) {
        return s;
    }
    if (in->pair || (in->grow && in->left)) {
        if ((s = store_acc_total(f, in, r, m, &acc)) != WEFT_OK) {
            return s;
        }
    }
    cg_loop_end(fn, &l);
    return WEFT_OK;
}

/* What entries 1 and 3 open with: the accumulator, a loop over chunks
 * c, chunk c's bounds and the reader of its row; the entry closes the
 * loop (cg_loop_end of l). */
typedef struct chunk {
    const cg_array *part;
    LLVMValueRef C, c, row, q, base, lo, hi;
    cg_mut acc;
    cg_loop l;
    sk_row rr;
} chunk;

static weft_status chunk_begin(sk_fn *f, const scan_info *in, chunk *ch)
{
    cg_fn *fn = &f->fn;
    ch->part = sk_aux_array(f, 0);
    ch->C = sk_aux_value(f, 1)->v[0];
    LLVMValueRef m, ext[WEFT_MAX_RANK];
    weft_status s = row_length(f, in, ext, &m);
    if (s || (s = cg_mut_new(fn, in->elt, &ch->acc)) != WEFT_OK) {
        return s;
    }
    cg_loop_begin(fn, &ch->l, f->start, f->end, &ch->c);
    sk_chunk_bounds(f, ch->c, ch->C, m, &ch->row, &ch->q, &ch->base, &ch->lo,
                    &ch->hi);
    return sk_row_begin(f, in->src, ext, ch->row, ch->base, false, &ch->rr);
}

/* Entry 1: partial[c] = the reduction of chunk c in the scan's direction. */
static weft_status emit_reduce(sk_fn *f, const scan_info *in)
{
    cg_fn *fn = &f->fn;
    chunk ch;
    weft_status s = chunk_begin(f, in, &ch);
    if (s) {
        return s;
    }
    LLVMValueRef one = cg_i64(fn, 1);
    LLVMValueRef first = in->left ? ch.lo : LLVMBuildSub(fn->b, ch.hi, one, "");
    cg_val x;
    if ((s = sk_row_read(f, &ch.rr, first, &x)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &ch.acc, &x);
    /* the other hi - lo - 1 elements, in the scan's direction */
    LLVMValueRef n =
        LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, ch.hi, ch.lo, ""), one, "");
    cg_loop il;
    LLVMValueRef k;
    cg_loop_begin(fn, &il, cg_i64(fn, 0), n, &k);
    LLVMValueRef j =
        in->left
            ? LLVMBuildAdd(fn->b, LLVMBuildAdd(fn->b, ch.lo, one, ""), k, "")
            : LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, first, one, ""), k, "");
    s = sk_row_read(f, &ch.rr, j, &x);
    if (s == WEFT_OK) {
        s = combine(f, in, &ch.acc, &x, true);
    }
    cg_loop_end(fn, &il);
    if (s) {
        return s;
    }
    if ((s = sk_mut_store(f, &ch.acc, ch.part, ch.c)) != WEFT_OK) {
        return s;
    }
    cg_loop_end(fn, &ch.l);
    return WEFT_OK;
}

/* Entry 2: per row, each partial becomes its chunk's carry-in; the row's
 * total is stored.  For scanl1 (scanr1) the first (last) chunk has no
 * carry-in: its slot keeps its partial, which seeds the others. */
static weft_status emit_carries(sk_fn *f, const scan_info *in)
{
    cg_fn *fn = &f->fn;
    const cg_array *part = sk_aux_array(f, 0);
    LLVMValueRef C = sk_aux_value(f, 1)->v[0];
    LLVMValueRef one = cg_i64(fn, 1);
    LLVMValueRef m, ext[WEFT_MAX_RANK];
    weft_status s = row_length(f, in, ext, &m);
    cg_mut acc;
    if (s || (s = cg_mut_new(fn, in->elt, &acc)) != WEFT_OK) {
        return s;
    }
    cg_loop l;
    LLVMValueRef r;
    cg_loop_begin(fn, &l, f->start, f->end, &r);
    LLVMValueRef base = LLVMBuildMul(fn->b, r, C, "");
    LLVMValueRef n = C; /* slots to turn into carries */
    if (in->seeded) {
        cg_mut_set(fn, &acc, sk_kid_value(f, 0));
    } else {
        LLVMValueRef p =
            in->left ? base
                     : LLVMBuildSub(fn->b, LLVMBuildAdd(fn->b, base, C, ""),
                                    one, "");
        cg_val x0;
        if ((s = cg_array_load(fn, part, p, &x0)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &acc, &x0);
        n = LLVMBuildSub(fn->b, C, one, "");
    }
    cg_loop il;
    LLVMValueRef k;
    cg_loop_begin(fn, &il, cg_i64(fn, 0), n, &k);
    /* left: slots C - n .. C - 1 ascending; right: n - 1 .. 0 descending */
    LLVMValueRef q =
        in->left ? LLVMBuildAdd(fn->b, LLVMBuildSub(fn->b, C, n, ""), k, "")
                 : LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, n, one, ""), k, "");
    LLVMValueRef p = LLVMBuildAdd(fn->b, base, q, "");
    cg_val x, a;
    s = cg_array_load(fn, part, p, &x);
    if (s == WEFT_OK) {
        s = cg_mut_get(fn, &acc, &a);
    }
    if (s == WEFT_OK) {
        cg_array_store(fn, part, p, &a);
        s = combine(f, in, &acc, &x, false);
    }
    cg_loop_end(fn, &il);
    if (s) {
        return s;
    }
    if (in->grow && !in->left) {
        store_total(f, in, r, m, sk_kid_value(f, 0));
    } else if (in->pair || in->grow) {
        if ((s = store_acc_total(f, in, r, m, &acc)) != WEFT_OK) {
            return s;
        }
    }
    cg_loop_end(fn, &l);
    return WEFT_OK;
}

/* Entry 3: chunk c rescanned from its carry-in. */
static weft_status emit_rescan(sk_fn *f, const scan_info *in)
{
    cg_fn *fn = &f->fn;
    chunk ch;
    weft_status s = chunk_begin(f, in, &ch);
    if (s) {
        return s;
    }
    cg_val carry;
    if ((s = cg_array_load(fn, ch.part, ch.c, &carry)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef from_elem = NULL;
    if (!in->seeded) {
        LLVMValueRef own = in->left
                               ? cg_i64(fn, 0)
                               : LLVMBuildSub(fn->b, ch.C, cg_i64(fn, 1), "");
        from_elem = LLVMBuildICmp(fn->b, LLVMIntEQ, ch.q, own, "");
    }
    if ((s = scan_piece(f, in, &ch.acc, &ch.rr, ch.row, ch.lo, ch.hi, from_elem,
                        &carry)) != WEFT_OK) {
        return s;
    }
    cg_loop_end(fn, &ch.l);
    return WEFT_OK;
}

static weft_status scan_emit(sk_emit *e, const char *const *names)
{
    scan_info in = sk_scan_info_of(e->k->op);
    weft_status (*const emit[4])(sk_fn *, const scan_info *) = {
        emit_rows, emit_reduce, emit_carries, emit_rescan};
    for (int i = 0; i < 4; i++) {
        sk_fn f;
        weft_status s = sk_fn_begin(e, &f, names[i]);
        if (s == WEFT_OK) {
            s = emit[i](&f, &in);
        }
        if (s) {
            return s;
        }
        sk_fn_end(&f);
    }
    return WEFT_OK;
}

const sk_skeleton sk_scan = {
    .name = "scan",
    .family = SK_SCAN,
    .supported = sk_scan_supported,
    .prepare = scan_prepare,
    .emit = scan_emit,
    .fuses_input = true,
};
