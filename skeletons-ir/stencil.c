/*
 * skeletons-ir/stencil.c: stencil and stencil2 over arrays of rank 1 to 3,
 * with windows of 3, 5, 7 or 9 elements per dimension.
 *
 * The result has the extent of its array (stencil2: the intersection of
 * both).  Its element at ix is f applied to the window around ix in each
 * array, in row-major order of the window (stencil2: the first window's
 * elements, then the second's).  A window element that falls outside its
 * array reads what the array's boundary says, exactly as the interpreter's
 * bound(): clamp repeats the edge, mirror reflects without repeating it
 * (an extent of one reads its only element), wrap is periodic, and a
 * constant boundary reads the value given.
 *
 * The kernel has one entry point over "pieces": the result is seen as
 * rows (every dimension but the innermost) of m columns, and each row is
 * cut into C pieces of consecutive columns (the driver picks C, aux 0, so
 * that a rank-1 array of millions of elements still spreads over the gang).
 * For piece q:
 *
 *     row = q / C; columns [c0, c1) of that row
 *     for each array and each combination of outer window offsets:
 *         rowbase = linear position of the row it reads (outer indices
 *                   passed through the boundary), and whether that row
 *                   lies inside the array (constant boundary)
 *     border loop: columns of [c0, c1) below lo or from hi on, each window
 *         element read at rowbase + bound(column + offset), checked
 *     interior loop: columns [lo, hi), each window element read at
 *         rowbase + offset + column, no check: linear in the column, so
 *         LLVM vectorises it (under a constant boundary twice: for a row
 *         whose combinations' rows all lie inside, and for one where some
 *         do not, whose copy selects the constant for those, the same
 *         test for the whole row)
 *
 * where lo is the largest inner radius and hi the smallest inner extent
 * less inner radius over the arrays.  Every row has its interior loop, those
 * near an outer edge too (their rows are already passed through the
 * boundary), so an array of a few rows is not read column by column through
 * the boundary.  The border loop walks both border stretches of the piece
 * as one loop, so f is emitted twice in all (border and interior; three
 * times under a constant boundary).  Reads under a constant boundary load
 * at the clamped position (always inside) and select the constant, so
 * nothing is ever read outside an array.  Loads of the arrays and stores of
 * the result carry scoped no-alias metadata (the result is a fresh buffer).
 *
 * Large windows (more than SK_STENCIL_COMPACT elements in all, e.g.
 * 5x5x5), whose unrolled form makes LLVM's optimisation take seconds, emit
 * f once.  Where loops vectorise (the CPU) they take the strip form
 * (emit_strips below): each combination reads through a pointer to its row,
 * into the array itself for a row's interior columns (one strip) or into a
 * copy on the stack of a border strip's stretch, made through the boundary;
 * f runs over the strip's columns in vector lanes, in a loop marked
 * parallel (a 5x5x5 f32 stencil of 160^3 elements: 2 s before, 12 ms after,
 * 2 threads; bench/stencil_sweep.c).  On the GPU (a thread has a few
 * columns) they take the compact form: one loop over every column of the
 * piece, whose windows are gathered by a loop over their elements (all
 * reads checked) into stack arrays that f's arguments are loaded from; it
 * compiles in about a second even for 9x9x9.
 */
#include <llvm-c/IRReader.h>

#include "sk.h"

#define ST_MAX_WIN 9

/* One array of the stencil as the entry point sees it. */
typedef struct side {
    const cg_array *a;
    int rank;
    int w[3], h[3]; /* window extents and radii */
    int k;          /* window elements */
    int ncombo;     /* combinations of outer offsets */
    weft_boundary_kind bnd;
    const cg_val *cval;    /* constant boundary value, or NULL */
    LLVMValueRef *rowbase; /* per combination, for the current row */
    LLVMValueRef *rowin;   /* per combination, i1: row inside (constant) */
} side;

/* Scoped no-alias metadata: the output is a fresh buffer that no input
 * overlaps.  Telling LLVM so spares the loop vectoriser the run-time
 * overlap checks of every window element against the output (hundreds of
 * pointers for a large window: slow to compile and to run). */
typedef struct scopes {
    unsigned scope_kind, noalias_kind;
    LLVMValueRef in, out; /* one-scope lists */
    unsigned group_kind;
    LLVMValueRef group; /* the access group of a parallel loop, or NULL */
} scopes;

static void scopes_init(cg_fn *fn, scopes *sc)
{
    LLVMContextRef c = fn->llctx;
    LLVMMetadataRef dname = LLVMMDStringInContext2(c, "weft.stencil", 12);
    LLVMMetadataRef dom = LLVMMDNodeInContext2(c, &dname, 1);
    LLVMMetadataRef in[2] = {LLVMMDStringInContext2(c, "weft.stencil.in", 15),
                             dom};
    LLVMMetadataRef out[2] = {LLVMMDStringInContext2(c, "weft.stencil.out", 16),
                              dom};
    LLVMMetadataRef sin = LLVMMDNodeInContext2(c, in, 2);
    LLVMMetadataRef sout = LLVMMDNodeInContext2(c, out, 2);
    sc->scope_kind = LLVMGetMDKindIDInContext(c, "alias.scope", 11);
    sc->noalias_kind = LLVMGetMDKindIDInContext(c, "noalias", 7);
    sc->in = LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, &sin, 1));
    sc->out = LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, &sout, 1));
    sc->group_kind = LLVMGetMDKindIDInContext(c, "llvm.access.group", 17);
    sc->group = NULL;
}

/* Element i of array a (every leaf), loads tagged as inputs. */
static weft_status load_in(cg_fn *fn, const scopes *sc, const cg_array *a,
                           LLVMValueRef i, cg_val *out)
{
    weft_status s = cg_val_make(fn, a->nleaf, out);
    for (int l = 0; s == WEFT_OK && l < a->nleaf; l++) {
        LLVMTypeRef mt = cg_mem_type(fn->llctx, a->leaf[l]);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, mt, a->ptr[l], &i, 1, "");
        LLVMValueRef x = LLVMBuildLoad2(fn->b, mt, p, "");
        LLVMSetMetadata(x, sc->scope_kind, sc->in);
        LLVMSetMetadata(x, sc->noalias_kind, sc->out);
        if (a->leaf[l] == WEFT_BOOL) {
            x = LLVMBuildICmp(fn->b, LLVMIntNE, x, LLVMConstInt(mt, 0, 0), "");
        }
        out->v[l] = x;
    }
    return s;
}

/* Store x at element i of the output, tagged as the output. */
static void store_out(cg_fn *fn, const scopes *sc, const cg_array *a,
                      LLVMValueRef i, const cg_val *x)
{
    for (int l = 0; l < a->nleaf && l < x->n; l++) {
        LLVMTypeRef mt = cg_mem_type(fn->llctx, a->leaf[l]);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, mt, a->ptr[l], &i, 1, "");
        LLVMValueRef v = x->v[l];
        if (a->leaf[l] == WEFT_BOOL) {
            v = LLVMBuildZExt(fn->b, v, mt, "");
        }
        LLVMValueRef st = LLVMBuildStore(fn->b, v, p);
        LLVMSetMetadata(st, sc->scope_kind, sc->out);
        LLVMSetMetadata(st, sc->noalias_kind, sc->in);
        if (sc->group) {
            LLVMSetMetadata(st, sc->group_kind, sc->group);
        }
    }
}

static weft_status stencil_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    k->nentry = 1;
    weft_status s =
        sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_AUX, 0, WEFT_I64, 0);
    k->aux_item[0] = k->nitem - 1;
    return s;
}

static LLVMValueRef i64c(cg_fn *fn, int64_t x)
{
    return cg_i64(fn, x);
}

/* Where index i of an extent-n dimension (n >= 1) reads under boundary b,
 * and in *inside (constant boundary only) whether i is inside; the result
 * is always inside [0, n). */
static LLVMValueRef bound(cg_fn *fn, weft_boundary_kind b, LLVMValueRef i,
                          LLVMValueRef n, LLVMValueRef *inside)
{
    LLVMBuilderRef B = fn->b;
    LLVMValueRef zero = i64c(fn, 0), one = i64c(fn, 1);
    switch (b) {
    case WEFT_BOUNDARY_WRAP: {
        LLVMValueRef r = LLVMBuildSRem(B, i, n, "");
        LLVMValueRef rn = LLVMBuildICmp(B, LLVMIntSLT, r, zero, "");
        return LLVMBuildSelect(B, rn, LLVMBuildAdd(B, r, n, ""), r, "");
    }
    case WEFT_BOUNDARY_MIRROR: {
        /* Reflection without repeating the edge has period p = 2n - 2:
         * r = i mod p, then p - r when r >= n.  n = 1 reads element 0. */
        LLVMValueRef p =
            LLVMBuildSub(B, LLVMBuildShl(B, n, one, ""), i64c(fn, 2), "");
        LLVMValueRef tiny = LLVMBuildICmp(B, LLVMIntSLT, p, one, "");
        p = LLVMBuildSelect(B, tiny, one, p, "");
        LLVMValueRef r = LLVMBuildSRem(B, i, p, "");
        LLVMValueRef rn = LLVMBuildICmp(B, LLVMIntSLT, r, zero, "");
        r = LLVMBuildSelect(B, rn, LLVMBuildAdd(B, r, p, ""), r, "");
        LLVMValueRef hi = LLVMBuildICmp(B, LLVMIntSGE, r, n, "");
        r = LLVMBuildSelect(B, hi, LLVMBuildSub(B, p, r, ""), r, "");
        return LLVMBuildSelect(B, tiny, zero, r, "");
    }
    case WEFT_BOUNDARY_CONSTANT:
    case WEFT_BOUNDARY_CLAMP:
    default: {
        /* constant: read at the clamped position, the caller selects */
        if (b == WEFT_BOUNDARY_CONSTANT) {
            *inside = LLVMBuildICmp(B, LLVMIntULT, i, n, "");
        }
        LLVMValueRef big = LLVMBuildICmp(B, LLVMIntSGE, i, n, "");
        LLVMValueRef r =
            LLVMBuildSelect(B, big, LLVMBuildSub(B, n, one, ""), i, "");
        LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, i, zero, "");
        return LLVMBuildSelect(B, neg, zero, r, "");
    }
    }
}

weft_status sk_stencil_boundary_value(sk_fn *f, int which, const cg_val **out)
{
    *out = NULL;
    if (f->e->k->op->u.st.bnd[which] == WEFT_BOUNDARY_CONSTANT &&
        !(*out = sk_kid_value(f, 2 * which + 1))) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: a constant stencil boundary without "
                        "its value");
    }
    return WEFT_OK;
}

static weft_status side_init(sk_fn *f, side *sd, int which, int kid)
{
    const fe_term *t = f->e->k->op;
    sd->a = sk_kid_array(f, kid);
    if (!sd->a) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: a stencil without its array");
    }
    sd->rank = t->rank;
    sd->bnd = t->u.st.bnd[which];
    sd->k = 1;
    sd->ncombo = 1;
    for (int d = 0; d < sd->rank; d++) {
        sd->w[d] = t->u.st.window[which][d];
        sd->h[d] = sd->w[d] / 2;
        sd->k *= sd->w[d];
        if (d < sd->rank - 1) {
            sd->ncombo *= sd->w[d];
        }
    }
    weft_status s = sk_stencil_boundary_value(f, which, &sd->cval);
    if (s) {
        return s;
    }
    fe_arena *ar = f->e->arena;
    sd->rowbase = fe_arena_alloc(ar, sizeof *sd->rowbase * (size_t)sd->ncombo);
    sd->rowin = fe_arena_alloc(ar, sizeof *sd->rowin * (size_t)sd->ncombo);
    if (!sd->rowbase || !sd->rowin) {
        return fe_oom("weft_compile");
    }
    return WEFT_OK;
}

/* For the row at outer index ox: every combination's row base (its
 * outer indices passed through the boundary) and insideness. */
static void side_row(cg_fn *fn, side *sd, const LLVMValueRef *ox)
{
    LLVMBuilderRef B = fn->b;
    int outer = sd->rank - 1;
    LLVMValueRef bi[2][ST_MAX_WIN], in[2][ST_MAX_WIN];
    LLVMValueRef t1 = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    for (int d = 0; d < outer; d++) {
        LLVMValueRef n = sd->a->extent[d];
        for (int o = 0; o < sd->w[d]; o++) {
            LLVMValueRef i = LLVMBuildAdd(B, ox[d], i64c(fn, o - sd->h[d]), "");
            in[d][o] = t1;
            bi[d][o] = bound(fn, sd->bnd, i, n, &in[d][o]);
        }
    }
    LLVMValueRef inner = sd->a->extent[sd->rank - 1];
    for (int c = 0; c < sd->ncombo; c++) {
        /* combination c: outer offsets in row-major order */
        int off[2] = {0, 0}, rest = c;
        for (int d = outer - 1; d >= 0; d--) {
            off[d] = rest % sd->w[d];
            rest /= sd->w[d];
        }
        LLVMValueRef base = i64c(fn, 0), inside = t1;
        for (int d = 0; d < outer; d++) {
            if (d > 0) {
                base = LLVMBuildMul(B, base, sd->a->extent[d], "");
            }
            base = LLVMBuildAdd(B, base, bi[d][off[d]], "");
            inside = LLVMBuildAnd(B, inside, in[d][off[d]], "");
        }
        sd->rowbase[c] = LLVMBuildMul(B, base, inner, "");
        sd->rowin[c] = inside;
    }
}

/* How side_window reads: every column through the boundary (a border
 * column), or unchecked (an interior column) with the constant boundary's
 * rows tested (a row some of whose combinations lie outside) or not
 * (every row inside: no test, the constant's select kept out of the hot
 * loop). */
enum { RD_CHECKED, RD_ROWS, RD_INSIDE };

/* The window of side sd at column col into args[0 .. k-1], read as `how`
 * says. */
static weft_status side_window(cg_fn *fn, const scopes *sc, const side *sd,
                               LLVMValueRef col, int how, cg_val *args)
{
    bool checked = how == RD_CHECKED;
    LLVMBuilderRef B = fn->b;
    int wi = sd->w[sd->rank - 1], hi = sd->h[sd->rank - 1];
    LLVMValueRef n = sd->a->extent[sd->rank - 1];
    LLVMValueRef bi[ST_MAX_WIN], in[ST_MAX_WIN];
    LLVMValueRef t1 = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    for (int o = 0; o < wi; o++) {
        LLVMValueRef i = LLVMBuildAdd(B, col, i64c(fn, o - hi), "");
        in[o] = t1;
        bi[o] = checked ? bound(fn, sd->bnd, i, n, &in[o]) : i;
    }
    for (int j = 0; j < sd->k; j++) {
        int c = j / wi, o = j % wi;
        LLVMValueRef at = LLVMBuildAdd(B, sd->rowbase[c], bi[o], "");
        weft_status s = load_in(fn, sc, sd->a, at, &args[j]);
        if (s) {
            return s;
        }
        if (sd->cval && how != RD_INSIDE) {
            /* unchecked: the row's test alone, the same for every column */
            LLVMValueRef inside = checked
                                      ? LLVMBuildAnd(B, sd->rowin[c], in[o], "")
                                      : sd->rowin[c];
            for (int l = 0; l < args[j].n; l++) {
                args[j].v[l] = LLVMBuildSelect(B, inside, args[j].v[l],
                                               sd->cval->v[l], "");
            }
        }
    }
    return WEFT_OK;
}

/* The compact form, for large windows: the window of side sd around
 * (ox, col) is gathered by a loop over its elements into tmp (one stack
 * array of k values per leaf), every read checked, then loaded into args.
 * The code is then one copy of f and a small loop, whatever the window. */
static weft_status side_gather(cg_fn *fn, const scopes *sc, const side *sd,
                               const LLVMValueRef *ox, LLVMValueRef col,
                               LLVMValueRef *tmp, cg_val *args)
{
    LLVMBuilderRef B = fn->b;
    int r = sd->rank;
    LLVMValueRef ix[3];
    for (int d = 0; d < r - 1; d++) {
        ix[d] = ox[d];
    }
    ix[r - 1] = col;
    weft_status s;
    cg_loop l;
    LLVMValueRef j;
    cg_loop_begin(fn, &l, i64c(fn, 0), i64c(fn, sd->k), &j);
    LLVMValueRef rest = j, b[3] = {NULL, NULL, NULL},
                 in[3] = {NULL, NULL, NULL};
    LLVMValueRef inside = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    for (int d = r - 1; d >= 0; d--) {
        LLVMValueRef w = i64c(fn, sd->w[d]);
        LLVMValueRef o = LLVMBuildURem(B, rest, w, "");
        rest = LLVMBuildUDiv(B, rest, w, "");
        LLVMValueRef i = LLVMBuildAdd(
            B, ix[d], LLVMBuildSub(B, o, i64c(fn, sd->h[d]), ""), "");
        in[d] = inside;
        b[d] = bound(fn, sd->bnd, i, sd->a->extent[d], &in[d]);
        inside = LLVMBuildAnd(B, inside, in[d], "");
    }
    LLVMValueRef lin = b[0];
    for (int d = 1; d < r; d++) {
        lin = LLVMBuildAdd(B, LLVMBuildMul(B, lin, sd->a->extent[d], ""), b[d],
                           "");
    }
    cg_val x;
    if ((s = load_in(fn, sc, sd->a, lin, &x)) != WEFT_OK) {
        return s;
    }
    for (int v = 0; v < x.n; v++) {
        LLVMValueRef y = x.v[v];
        if (sd->cval) {
            y = LLVMBuildSelect(B, inside, y, sd->cval->v[v], "");
        }
        LLVMTypeRef ty = LLVMTypeOf(y);
        LLVMValueRef idx[2] = {i64c(fn, 0), j};
        LLVMBuildStore(
            B, y,
            LLVMBuildInBoundsGEP2(B, LLVMArrayType2(ty, (uint64_t)sd->k),
                                  tmp[v], idx, 2, ""));
    }
    cg_loop_end(fn, &l);
    for (int q = 0; q < sd->k; q++) {
        if ((s = cg_val_make(fn, sd->a->nleaf, &args[q])) != WEFT_OK) {
            return s;
        }
        for (int v = 0; v < sd->a->nleaf; v++) {
            LLVMTypeRef ty = cg_type(fn->llctx, sd->a->leaf[v]);
            LLVMValueRef idx[2] = {i64c(fn, 0), i64c(fn, q)};
            LLVMValueRef p = LLVMBuildInBoundsGEP2(
                B, LLVMArrayType2(ty, (uint64_t)sd->k), tmp[v], idx, 2, "");
            args[q].v[v] = LLVMBuildLoad2(B, ty, p, "");
        }
    }
    return WEFT_OK;
}

/* out[outbase + col] = f(windows at col). */
static weft_status apply_at(sk_fn *f, const scopes *sc, const side *sd,
                            int nside, LLVMValueRef outbase, LLVMValueRef col,
                            int how, LLVMValueRef *const *tmp,
                            const LLVMValueRef *ox, cg_val *args)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    int at = 0;
    for (int i = 0; i < nside; i++) {
        s = tmp ? side_gather(fn, sc, &sd[i], ox, col, tmp[i], args + at)
                : side_window(fn, sc, &sd[i], col, how, args + at);
        if (s) {
            return s;
        }
        at += sd[i].k;
    }
    cg_val y;
    LLVMValueRef at_out = LLVMBuildAdd(fn->b, outbase, col, "");
    cg_set_elem(fn, at_out); /* reports of f name the result's element */
    if ((s = cg_apply(fn, f->e->k->op->fun[0], args, &y)) != WEFT_OK) {
        return s;
    }
    store_out(fn, sc, sk_out_array(f, 0), at_out, &y);
    return WEFT_OK;
}

/* The strip form of large windows, where loops vectorise (the CPU).
 * Each combination of a side has a pointer per leaf to the stretch of
 * its row that the window's first column reads at the strip's first
 * column: into the array itself where the strip's windows lie inside the
 * row (the interior columns [lo, hi), as one strip, of a row whose
 * windows' rows all count: a constant boundary's rows outside make it a
 * border row), else into a copy on the stack of the stretch (V + 2h
 * columns for a strip of V), made straight where it lies inside the row
 * and through the boundary where not.  One loop over the strip's columns
 * then reads every window element at a constant offset from its
 * combination's pointer, so that f, emitted once, runs over vector
 * lanes.  Border strips have at most V columns, V the widest power of two
 * up to ST_STRIP_MAX whose copies fit in ST_STRIP_BYTES. */
#define ST_STRIP_MAX 16
#define ST_STRIP_MIN 4
#define ST_STRIP_BYTES 16384

typedef struct strip {
    int s;             /* columns of a combination's copy: V + 2h */
    LLVMValueRef *tmp; /* per leaf: [ncombo * s] of its memory type */
    LLVMValueRef *ptr; /* per leaf: [ncombo] ptr, the current strip's */
    LLVMValueRef base; /* [ncombo] i64: the row's bases */
    LLVMValueRef in;   /* [ncombo] i1: rows inside (constant boundary) */
} strip;

/* Columns per border strip (see above). */
static int strip_width(const side *sd, int nside)
{
    int v = ST_STRIP_MAX;
    for (; v > ST_STRIP_MIN; v /= 2) {
        int64_t bytes = 0;
        for (int i = 0; i < nside; i++) {
            int64_t elem = 0;
            for (int l = 0; l < sd[i].a->nleaf; l++) {
                elem += (int64_t)weft_type_size(sd[i].a->leaf[l]);
            }
            bytes += (int64_t)sd[i].ncombo * (v + 2 * sd[i].h[sd[i].rank - 1]) *
                     elem;
        }
        if (bytes <= ST_STRIP_BYTES) {
            break;
        }
    }
    return v;
}

/* Element i of the stack array arr of n elements of type ty. */
static LLVMValueRef slot(cg_fn *fn, LLVMTypeRef ty, int n, LLVMValueRef arr,
                         LLVMValueRef i)
{
    LLVMValueRef idx[2] = {i64c(fn, 0), i};
    return LLVMBuildInBoundsGEP2(fn->b, LLVMArrayType2(ty, (uint64_t)n), arr,
                                 idx, 2, "");
}

static weft_status strip_init(cg_fn *fn, fe_arena *ar, const side *sd, int v,
                              strip *st)
{
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i1 = LLVMInt1TypeInContext(c);
    LLVMTypeRef pt = LLVMPointerTypeInContext(c, 0);
    int nl = sd->a->nleaf;
    st->s = v + 2 * sd->h[sd->rank - 1];
    st->tmp = fe_arena_alloc(ar, sizeof *st->tmp * (size_t)nl);
    st->ptr = fe_arena_alloc(ar, sizeof *st->ptr * (size_t)nl);
    if (!st->tmp || !st->ptr) {
        return fe_oom("weft_compile");
    }
    for (int l = 0; l < nl; l++) {
        LLVMTypeRef ty = cg_mem_type(c, sd->a->leaf[l]);
        st->tmp[l] = cg_alloca(
            fn, LLVMArrayType2(ty, (uint64_t)(sd->ncombo * st->s)), "copy");
        st->ptr[l] =
            cg_alloca(fn, LLVMArrayType2(pt, (uint64_t)sd->ncombo), "from");
    }
    st->base =
        cg_alloca(fn, LLVMArrayType2(i64, (uint64_t)sd->ncombo), "rowbase");
    st->in = cg_alloca(fn, LLVMArrayType2(i1, (uint64_t)sd->ncombo), "rowin");
    return WEFT_OK;
}

/* The row's bases (side_row's) into st's arrays; ANDed into *all, under a
 * constant boundary, whether every combination's row lies inside. */
static void strip_row(cg_fn *fn, side *sd, const strip *st,
                      const LLVMValueRef *ox, LLVMValueRef *all)
{
    LLVMContextRef c = fn->llctx;
    side_row(fn, sd, ox);
    for (int q = 0; q < sd->ncombo; q++) {
        LLVMBuildStore(fn->b, sd->rowbase[q],
                       slot(fn, LLVMInt64TypeInContext(c), sd->ncombo, st->base,
                            i64c(fn, q)));
        if (sd->cval) {
            LLVMBuildStore(fn->b, sd->rowin[q],
                           slot(fn, LLVMInt1TypeInContext(c), sd->ncombo,
                                st->in, i64c(fn, q)));
            *all = LLVMBuildAnd(fn->b, *all, sd->rowin[q], "");
        }
    }
}

/* Copy element at of side sd into position j of st's copies, as stored
 * in memory; where inside (constant boundary) is false, the constant. */
static void strip_put(cg_fn *fn, const scopes *sc, const side *sd,
                      const strip *st, LLVMValueRef at, LLVMValueRef inside,
                      LLVMValueRef j)
{
    LLVMBuilderRef B = fn->b;
    for (int l = 0; l < sd->a->nleaf; l++) {
        LLVMTypeRef mt = cg_mem_type(fn->llctx, sd->a->leaf[l]);
        LLVMValueRef x = LLVMBuildLoad2(
            B, mt, LLVMBuildInBoundsGEP2(B, mt, sd->a->ptr[l], &at, 1, ""), "");
        LLVMSetMetadata(x, sc->scope_kind, sc->in);
        LLVMSetMetadata(x, sc->noalias_kind, sc->out);
        if (sd->cval) {
            LLVMValueRef k = sd->cval->v[l];
            if (sd->a->leaf[l] == WEFT_BOOL) {
                k = LLVMBuildZExt(B, k, mt, "");
            }
            x = LLVMBuildSelect(B, inside, x, k, "");
        }
        LLVMBuildStore(B, x, slot(fn, mt, sd->ncombo * st->s, st->tmp[l], j));
    }
}

/* Point side sd's combinations at the strip whose columns start at x,
 * len of them (the row's bases in st): straight into the array (direct),
 * or into copies, each combination's stretch [x - h, x + len + h) with
 * its columns inside the row [a, b) copied straight and those outside
 * through the boundary. */
static void strip_point(cg_fn *fn, const scopes *sc, const side *sd,
                        const strip *st, LLVMValueRef direct, LLVMValueRef x,
                        LLVMValueRef len)
{
    LLVMBuilderRef B = fn->b;
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i1 = LLVMInt1TypeInContext(c);
    LLVMTypeRef pt = LLVMPointerTypeInContext(c, 0);
    int h = sd->h[sd->rank - 1], nl = sd->a->nleaf;
    LLVMValueRef n = sd->a->extent[sd->rank - 1];
    LLVMValueRef s0 = LLVMBuildSub(B, x, i64c(fn, h), "");
    cg_loop lq;
    LLVMValueRef q;
    cg_loop_begin(fn, &lq, i64c(fn, 0), i64c(fn, sd->ncombo), &q);
    LLVMValueRef base =
        LLVMBuildLoad2(B, i64, slot(fn, i64, sd->ncombo, st->base, q), "");
    cg_if fd;
    cg_if_begin(fn, &fd, direct);
    LLVMValueRef at = LLVMBuildAdd(B, base, s0, "");
    for (int l = 0; l < nl; l++) {
        LLVMTypeRef mt = cg_mem_type(c, sd->a->leaf[l]);
        LLVMBuildStore(B,
                       LLVMBuildInBoundsGEP2(B, mt, sd->a->ptr[l], &at, 1, ""),
                       slot(fn, pt, sd->ncombo, st->ptr[l], q));
    }
    cg_if_else(fn, &fd);
    LLVMValueRef L = LLVMBuildAdd(B, len, i64c(fn, 2 * h), "");
    LLVMValueRef a =
        cg_smin(fn, L, cg_smax(fn, i64c(fn, 0), LLVMBuildNeg(B, s0, "")));
    LLVMValueRef b = cg_smax(fn, a, cg_smin(fn, L, LLVMBuildSub(B, n, s0, "")));
    LLVMValueRef nb = LLVMBuildAdd(B, a, LLVMBuildSub(B, L, b, ""), "");
    LLVMValueRef rin =
        sd->cval
            ? LLVMBuildLoad2(B, i1, slot(fn, i1, sd->ncombo, st->in, q), "")
            : NULL;
    LLVMValueRef j0 = LLVMBuildMul(B, q, i64c(fn, st->s), "");
    for (int l = 0; l < nl; l++) {
        LLVMTypeRef mt = cg_mem_type(c, sd->a->leaf[l]);
        LLVMBuildStore(B, slot(fn, mt, sd->ncombo * st->s, st->tmp[l], j0),
                       slot(fn, pt, sd->ncombo, st->ptr[l], q));
    }
    for (int checked = 0; checked < 2; checked++) {
        cg_loop lt;
        LLVMValueRef t, at2, inside = rin;
        cg_loop_begin(fn, &lt, checked ? i64c(fn, 0) : a, checked ? nb : b, &t);
        if (checked) {
            /* both ends as one loop: [0, a), then [b, L) */
            LLVMValueRef first = LLVMBuildICmp(B, LLVMIntSLT, t, a, "");
            t = LLVMBuildSelect(
                B, first, t, LLVMBuildAdd(B, b, LLVMBuildSub(B, t, a, ""), ""),
                "");
            LLVMValueRef in = LLVMConstInt(i1, 1, 0);
            at2 = LLVMBuildAdd(
                B, base, bound(fn, sd->bnd, LLVMBuildAdd(B, s0, t, ""), n, &in),
                "");
            if (sd->cval) {
                inside = LLVMBuildAnd(B, rin, in, "");
            }
        } else {
            at2 = LLVMBuildAdd(B, base, LLVMBuildAdd(B, s0, t, ""), "");
        }
        strip_put(fn, sc, sd, st, at2, inside, LLVMBuildAdd(B, j0, t, ""));
        cg_loop_end(fn, &lt);
    }
    cg_if_end(fn, &fd);
    cg_loop_end(fn, &lq);
}

/* A new access group of context c: a distinct empty node, which LLVM-C
 * cannot make but its IR parser can (a uniqued one trips LLVM's
 * assertions); it outlives the small module that held it, as distinct
 * nodes live as long as their context.  NULL where the text does not
 * parse (then the loop is not marked). */
static LLVMMetadataRef access_group(LLVMContextRef c)
{
    static const char ir[] = "define void @g(ptr %p) {\n"
                             "  %x = load i8, ptr %p, !llvm.access.group !0\n"
                             "  ret void\n"
                             "}\n"
                             "!0 = distinct !{}\n";
    LLVMMemoryBufferRef src = LLVMCreateMemoryBufferWithMemoryRangeCopy(
        ir, sizeof ir - 1, "weft_access_group");
    LLVMModuleRef m = NULL;
    char *err = NULL;
    LLVMMetadataRef g = NULL;
    /* takes src */
    if (LLVMParseIRInContext(c, src, &m, &err) == 0) {
        LLVMValueRef x = LLVMGetFirstInstruction(
            LLVMGetFirstBasicBlock(LLVMGetFirstFunction(m)));
        LLVMValueRef v = x ? LLVMGetMetadata(x, LLVMGetMDKindIDInContext(
                                                    c, "llvm.access.group", 17))
                           : NULL;
        g = v ? LLVMValueAsMetadata(v) : NULL;
        LLVMDisposeModule(m);
    }
    LLVMDisposeMessage(err);
    return g;
}

/* The columns [c0, c1) of the row at ox (outbase its first element) in
 * strips: the border columns [c0, b1) and [b2, c1) in strips of v, the
 * interior [b1, b2) as one direct strip (or in strips of v in a border
 * row); per strip, every side's pointers, then f over its columns. */
static weft_status emit_strips(sk_fn *f, const scopes *sc, side *sd, int nside,
                               const strip *st, int v, const LLVMValueRef *ox,
                               LLVMValueRef outbase, LLVMValueRef c0,
                               LLVMValueRef b1, LLVMValueRef b2,
                               LLVMValueRef c1, cg_val *args)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    LLVMContextRef ctx = fn->llctx;
    LLVMTypeRef i1 = LLVMInt1TypeInContext(ctx);
    LLVMTypeRef pt = LLVMPointerTypeInContext(ctx, 0);
    weft_status s = WEFT_OK;
    LLVMValueRef all = LLVMConstInt(i1, 1, 0);
    for (int i = 0; i < nside; i++) {
        strip_row(fn, &sd[i], &st[i], ox, &all);
    }
    /* a border stretch takes a whole strip of v columns where the row has
     * them (interior ones too: f then runs over full vectors there, not
     * column by column) */
    LLVMValueRef left = LLVMBuildICmp(B, LLVMIntSGT, b1, c0, "");
    b1 = LLVMBuildSelect(
        B, left,
        cg_smin(fn, c1, cg_smax(fn, b1, LLVMBuildAdd(B, c0, i64c(fn, v), ""))),
        b1, "");
    b2 = cg_smax(fn, b1, b2);
    LLVMValueRef right = LLVMBuildICmp(B, LLVMIntSLT, b2, c1, "");
    b2 = LLVMBuildSelect(
        B, right,
        cg_smax(fn, b1, cg_smin(fn, b2, LLVMBuildSub(B, c1, i64c(fn, v), ""))),
        b2, "");
    /* three stretches: border, interior, border */
    cg_loop lk;
    LLVMValueRef kk;
    cg_loop_begin(fn, &lk, i64c(fn, 0), i64c(fn, 3), &kk);
    LLVMValueRef mid = LLVMBuildICmp(B, LLVMIntEQ, kk, i64c(fn, 1), "");
    LLVMValueRef last = LLVMBuildICmp(B, LLVMIntEQ, kk, i64c(fn, 2), "");
    LLVMValueRef sx =
        LLVMBuildSelect(B, mid, b1, LLVMBuildSelect(B, last, b2, c0, ""), "");
    LLVMValueRef ex =
        LLVMBuildSelect(B, mid, b2, LLVMBuildSelect(B, last, c1, b1, ""), "");
    LLVMValueRef direct = LLVMBuildAnd(B, mid, all, "");
    LLVMValueRef step = LLVMBuildSelect(
        B, direct, cg_smax(fn, LLVMBuildSub(B, ex, sx, ""), i64c(fn, 1)),
        i64c(fn, v), "");
    cg_sloop ls;
    LLVMValueRef x = cg_sloop_begin(fn, &ls, sx, ex, step, "strip");
    LLVMValueRef len = cg_smin(fn, step, LLVMBuildSub(B, ex, x, ""));
    for (int i = 0; i < nside; i++) {
        strip_point(fn, sc, &sd[i], &st[i], direct, x, len);
    }
    /* the combinations' pointers, before the loop over the columns */
    LLVMValueRef *from[2] = {NULL, NULL};
    for (int i = 0; i < nside && s == WEFT_OK; i++) {
        int nl = sd[i].a->nleaf;
        from[i] = fe_arena_alloc(f->e->arena,
                                 sizeof *from[i] * (size_t)(nl * sd[i].ncombo));
        if (!from[i]) {
            s = fe_oom("weft_compile");
            break;
        }
        for (int q = 0; q < sd[i].ncombo; q++) {
            for (int l = 0; l < nl; l++) {
                from[i][q * nl + l] = LLVMBuildLoad2(
                    B, pt,
                    slot(fn, pt, sd[i].ncombo, st[i].ptr[l], i64c(fn, q)), "");
            }
        }
    }
    /* The loop over the columns is parallel: its reads (of arrays and
     * copies that it does not write) and its stores (one element per
     * column) in one access group that the loop's ID names, so that the
     * loop vectoriser need not prove it, which it cannot for more than
     * about 250 reads (LLVM's alias sets saturate: 7x7x7 windows).  A
     * read or store of f's own (a checked mode's error word) is outside
     * the group, and then the vectoriser checks the loop as any other. */
    LLVMMetadataRef group = access_group(ctx);
    scopes psc = *sc;
    psc.group = group ? LLVMMetadataAsValue(ctx, group) : NULL;
    sc = &psc;
    cg_loop lc;
    LLVMValueRef c;
    cg_loop_begin(fn, &lc, i64c(fn, 0), len, &c);
    int at = 0;
    for (int i = 0; i < nside && s == WEFT_OK; i++) {
        int w = sd[i].w[sd[i].rank - 1], nl = sd[i].a->nleaf;
        for (int j = 0; j < sd[i].k && s == WEFT_OK; j++) {
            /* window element j: combination j / w, column c + j % w */
            LLVMValueRef p = LLVMBuildAdd(B, c, i64c(fn, j % w), "");
            s = cg_val_make(fn, nl, &args[at + j]);
            for (int l = 0; s == WEFT_OK && l < nl; l++) {
                weft_type t = sd[i].a->leaf[l];
                LLVMTypeRef mt = cg_mem_type(ctx, t);
                LLVMValueRef y = LLVMBuildLoad2(
                    B, mt,
                    LLVMBuildInBoundsGEP2(B, mt, from[i][(j / w) * nl + l], &p,
                                          1, ""),
                    "");
                LLVMSetMetadata(y, sc->scope_kind, sc->in);
                LLVMSetMetadata(y, sc->noalias_kind, sc->out);
                if (sc->group) {
                    LLVMSetMetadata(y, sc->group_kind, sc->group);
                }
                if (t == WEFT_BOOL) {
                    y = LLVMBuildICmp(B, LLVMIntNE, y, LLVMConstInt(mt, 0, 0),
                                      "");
                }
                args[at + j].v[l] = y;
            }
        }
        at += sd[i].k;
    }
    if (s == WEFT_OK) {
        cg_val y;
        LLVMValueRef out_at =
            LLVMBuildAdd(B, outbase, LLVMBuildAdd(B, x, c, ""), "");
        cg_set_elem(fn, out_at);
        if ((s = cg_apply(fn, f->e->k->op->fun[0], args, &y)) == WEFT_OK) {
            store_out(fn, sc, sk_out_array(f, 0), out_at, &y);
        }
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    cg_loop_end(fn, &lc);
    if (group) {
        LLVMMetadataRef kv[2] = {
            LLVMMDStringInContext2(ctx, "llvm.loop.parallel_accesses", 27),
            group};
        cg_loop_id(fn, LLVMGetBasicBlockTerminator(latch),
                   LLVMMDNodeInContext2(ctx, kv, 2));
    }
    cg_sloop_end(fn, &ls);
    cg_loop_end(fn, &lk);
    return s;
}

static weft_status stencil_emit(sk_emit *e, const char *const *names)
{
    const fe_term *t = e->k->op;
    int nside = t->kind == FE_STENCIL2 ? 2 : 1;
    sk_fn f;
    weft_status s = sk_fn_begin(e, &f, names[0]);
    if (s) {
        return s;
    }
    cg_fn *fn = &f.fn;
    LLVMBuilderRef B = fn->b;
    side sd[2];
    for (int i = 0; i < nside && s == WEFT_OK; i++) {
        s = side_init(&f, &sd[i], i, 2 * i);
    }
    cg_val *args = NULL;
    int ktotal = 0;
    if (s == WEFT_OK) {
        ktotal = sd[0].k + (nside > 1 ? sd[1].k : 0);
        args = fe_arena_alloc(e->arena, sizeof *args * (size_t)ktotal);
        if (!args) {
            s = fe_oom("weft_compile");
        }
    }
    if (s) {
        sk_fn_end(&f);
        return s;
    }
    int rank = t->rank;
    scopes sc;
    scopes_init(fn, &sc);
    const cg_array *out = sk_out_array(&f, 0);
    LLVMValueRef m = out->extent[rank - 1];
    LLVMValueRef C = sk_aux_value(&f, 0)->v[0];
    /* divisions through cg_from_index: 32-bit ones where the values fit
     * on a target whose 64-bit division is a call (the GPU) */
    LLVMValueRef sh2[2] = {m, C}, qq[2];
    cg_from_index(fn, 2, sh2, m, qq);
    LLVMValueRef qn = qq[0], qr = qq[1];
    /* the interior's columns, before the row's own test: [lo, hi) */
    int lo_c = 0;
    LLVMValueRef hi = m;
    for (int i = 0; i < nside; i++) {
        int h = sd[i].h[rank - 1];
        lo_c = h > lo_c ? h : lo_c;
        hi = cg_smin(
            fn, hi,
            LLVMBuildSub(B, sd[i].a->extent[rank - 1], i64c(fn, h), ""));
    }
    LLVMValueRef lo = cg_smin(fn, i64c(fn, lo_c), m);
    hi = cg_smax(fn, hi, lo);

    cg_loop lq;
    LLVMValueRef q;
    cg_loop_begin(fn, &lq, f.start, f.end, &q);
    LLVMValueRef rp[2];
    cg_from_index(fn, 2, sh2, q, rp);
    LLVMValueRef row = rp[0], piece = rp[1];
    LLVMValueRef c0 = LLVMBuildAdd(B, LLVMBuildMul(B, piece, qn, ""),
                                   cg_smin(fn, piece, qr), "");
    LLVMValueRef extra =
        LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntSLT, piece, qr, ""),
                      LLVMInt64TypeInContext(fn->llctx), "");
    LLVMValueRef c1 = LLVMBuildAdd(B, LLVMBuildAdd(B, c0, qn, ""), extra, "");
    LLVMValueRef ox[3] = {NULL, NULL, NULL};
    if (rank > 1) {
        cg_from_index(fn, rank - 1, out->extent, row, ox);
    }
    LLVMValueRef outbase = LLVMBuildMul(B, row, m, "");
    /* border 1: [c0, b1); interior: [b1, b2); border 2: [b2, c1) */
    LLVMValueRef b1 = cg_smax(fn, c0, cg_smin(fn, c1, lo));
    LLVMValueRef b2 = cg_smax(fn, b1, cg_smin(fn, c1, hi));
    if (ktotal > SK_STENCIL_COMPACT && !fn->target->scalar_loops) {
        /* large windows where loops vectorise: strips */
        strip st[2];
        int v = strip_width(sd, nside);
        for (int i = 0; i < nside && s == WEFT_OK; i++) {
            s = strip_init(fn, e->arena, &sd[i], v, &st[i]);
        }
        if (s == WEFT_OK) {
            s = emit_strips(&f, &sc, sd, nside, st, v, ox, outbase, c0, b1, b2,
                            c1, args);
        }
        cg_loop_end(fn, &lq);
        sk_fn_end(&f);
        return s;
    }
    if (ktotal > SK_STENCIL_COMPACT) {
        /* compact: every column gathers its windows through a loop */
        LLVMValueRef *tmp[2];
        for (int i = 0; i < nside && s == WEFT_OK; i++) {
            tmp[i] = fe_arena_alloc(e->arena,
                                    sizeof *tmp[i] * (size_t)sd[i].a->nleaf);
            if (!tmp[i]) {
                s = fe_oom("weft_compile");
                break;
            }
            for (int v = 0; v < sd[i].a->nleaf; v++) {
                LLVMTypeRef ty = cg_type(fn->llctx, sd[i].a->leaf[v]);
                tmp[i][v] =
                    cg_alloca(fn, LLVMArrayType2(ty, (uint64_t)sd[i].k), "win");
            }
        }
        if (s == WEFT_OK) {
            cg_loop lc;
            LLVMValueRef c;
            cg_loop_begin(fn, &lc, c0, c1, &c);
            s = apply_at(&f, &sc, sd, nside, outbase, c, RD_CHECKED, tmp, ox,
                         args);
            cg_loop_end(fn, &lc);
        }
        cg_loop_end(fn, &lq);
        sk_fn_end(&f);
        return s;
    }
    /* every combination's row inside (always, but under a constant
     * boundary) */
    LLVMValueRef inside = NULL;
    for (int i = 0; i < nside; i++) {
        side_row(fn, &sd[i], ox);
        for (int c = 0; sd[i].cval && c < sd[i].ncombo; c++) {
            inside = inside ? LLVMBuildAnd(B, inside, sd[i].rowin[c], "")
                            : sd[i].rowin[c];
        }
    }
    LLVMValueRef n1 = LLVMBuildSub(B, b1, c0, "");
    LLVMValueRef nb = LLVMBuildAdd(B, n1, LLVMBuildSub(B, c1, b2, ""), "");

    cg_loop lb;
    LLVMValueRef kk;
    cg_loop_begin(fn, &lb, i64c(fn, 0), nb, &kk);
    LLVMValueRef first = LLVMBuildICmp(B, LLVMIntSLT, kk, n1, "");
    LLVMValueRef col = LLVMBuildSelect(
        B, first, LLVMBuildAdd(B, c0, kk, ""),
        LLVMBuildAdd(B, b2, LLVMBuildSub(B, kk, n1, ""), ""), "");
    s = apply_at(&f, &sc, sd, nside, outbase, col, RD_CHECKED, NULL, NULL,
                 args);
    cg_loop_end(fn, &lb);

    /* the interior; under a constant boundary twice, for rows all inside
     * and for rows some of whose combinations are outside */
    cg_if fi;
    if (inside) {
        cg_if_begin(fn, &fi, inside);
    }
    for (int pass = 0; pass < (inside ? 2 : 1) && s == WEFT_OK; pass++) {
        if (pass) {
            cg_if_else(fn, &fi);
        }
        cg_loop li;
        LLVMValueRef c;
        cg_loop_begin(fn, &li, b1, b2, &c);
        s = apply_at(&f, &sc, sd, nside, outbase, c, pass ? RD_ROWS : RD_INSIDE,
                     NULL, NULL, args);
        cg_loop_end(fn, &li);
    }
    if (inside) {
        cg_if_end(fn, &fi);
    }
    cg_loop_end(fn, &lq);
    sk_fn_end(&f);
    return s;
}

static bool window_ok(const fe_term *t, int which)
{
    for (int d = 0; d < t->rank; d++) {
        int w = t->u.st.window[which][d];
        if (w < 1 || w % 2 == 0 || w > ST_MAX_WIN) {
            return false;
        }
    }
    return true;
}

static bool array_ok(const fe_term *t, const fe_term *a)
{
    return a && a->acc && a->atype && a->atype->narrays == 1 &&
           a->rank == t->rank;
}

static bool stencil_supported(const fe_term *t)
{
    bool two = t->kind == FE_STENCIL2;
    int nside = two ? 2 : 1;
    int k = 0;
    if (t->atype->narrays != 1 || t->rank < 1 || t->rank > 3 || t->nfun != 1 ||
        !t->fun[0] || t->nkid != 2 * nside) {
        return false;
    }
    for (int i = 0; i < nside; i++) {
        const fe_term *a = t->kid[2 * i];
        if (!array_ok(t, a) || !window_ok(t, i)) {
            return false;
        }
        if (t->u.st.bnd[i] == WEFT_BOUNDARY_CONSTANT &&
            (!t->kid[2 * i + 1] || t->kid[2 * i + 1]->acc)) {
            return false;
        }
        int ki = 1;
        for (int d = 0; d < t->rank; d++) {
            ki *= t->u.st.window[i][d];
        }
        k += ki;
    }
    return t->fun[0]->arity == k;
}

const sk_skeleton sk_stencil = {
    .name = "stencil",
    .family = SK_STENCIL,
    .supported = stencil_supported,
    .prepare = stencil_prepare,
    .emit = stencil_emit,
};
