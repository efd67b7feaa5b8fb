/*
 * lib/types.c: element types, scalar values, half floats, array types.
 *
 * Scalar types and WEFT_DIM(n) are fixed small integers; tuple types are
 * interned per context (equal tuples get one id, so type equality is
 * integer equality).  A value of any type is a vector of scalar leaves
 * (fe_val); arrays store one buffer per leaf.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fe.h"

static const weft_type dim_leaves[WEFT_MAX_RANK] = {
    WEFT_I64, WEFT_I64, WEFT_I64, WEFT_I64,
    WEFT_I64, WEFT_I64, WEFT_I64, WEFT_I64,
};
static const weft_type scalar_self[WEFT_F64 + 1] = {
    0,        WEFT_BOOL, WEFT_I8,  WEFT_I16, WEFT_I32, WEFT_I64, WEFT_U8,
    WEFT_U16, WEFT_U32,  WEFT_U64, WEFT_F16, WEFT_F32, WEFT_F64,
};

int fe_type_bits(weft_type t)
{
    switch (t) {
    case WEFT_BOOL:
    case WEFT_I8:
    case WEFT_U8: return 8;
    case WEFT_I16:
    case WEFT_U16:
    case WEFT_F16: return 16;
    case WEFT_I32:
    case WEFT_U32:
    case WEFT_F32: return 32;
    case WEFT_I64:
    case WEFT_U64:
    case WEFT_F64: return 64;
    default: return 0;
    }
}

size_t weft_type_size(weft_type t)
{
    return (size_t)fe_type_bits(t) / 8;
}

/* The interned tuple for id t, or NULL.  Tuples are never removed, and the
 * table only grows under the lock, so reading an entry below ntuples is
 * safe once the id has been handed out. */
static const fe_tuple *tuple_of(const weft_context *ctx, weft_type t)
{
    if (!ctx || !fe_is_tuple(t)) {
        return NULL;
    }
    int i = (int)(t - FE_TUPLE_BASE);
    pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
    const fe_tuple *r = i < ctx->ntuples ? ctx->tuples[i] : NULL;
    pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
    return r;
}

bool fe_type_valid(const weft_context *ctx, weft_type t)
{
    return fe_is_scalar(t) || fe_is_dim(t) || tuple_of(ctx, t) != NULL;
}

/* The leaves (or, unless `leaves`, the components) of type t when it is a
 * DIM (both: its i64 extents) or a tuple, and their number; NULL and 0
 * for a type that is neither. */
static int parts_of(const weft_context *ctx, weft_type t, bool leaves,
                    const weft_type **out)
{
    if (fe_is_dim(t)) {
        *out = dim_leaves;
        return fe_dim_rank(t);
    }
    const fe_tuple *tu = tuple_of(ctx, t);
    if (!tu) {
        *out = NULL;
        return 0;
    }
    *out = leaves ? tu->leaf : tu->comp;
    return leaves ? tu->nleaf : tu->arity;
}

int fe_type_leaves(const weft_context *ctx, weft_type t,
                   const weft_type **leaves)
{
    if (fe_is_scalar(t)) {
        *leaves = &scalar_self[t];
        return 1;
    }
    return parts_of(ctx, t, true, leaves);
}

int fe_type_comps(const weft_context *ctx, weft_type t, const weft_type **comps)
{
    return parts_of(ctx, t, false, comps);
}

int fe_type_leaf_offset(const weft_context *ctx, weft_type t, int i)
{
    if (fe_is_dim(t)) {
        return i;
    }
    const fe_tuple *tu = tuple_of(ctx, t);
    if (!tu || i < 0) {
        return 0;
    }
    return tu->leaf_off[i < tu->arity ? i : tu->arity];
}

static const char *scalar_names[] = {
    "?",   "bool", "i8",  "i16", "i32", "i64", "u8",
    "u16", "u32",  "u64", "f16", "f32", "f64",
};

const char *fe_type_name(const weft_context *ctx, weft_type t, char *buf,
                         size_t n)
{
    if (n == 0) {
        return buf;
    }
    buf[0] = '\0';
    if (fe_is_scalar(t)) {
        snprintf(buf, n, "%s", scalar_names[t]);
    } else if (fe_is_dim(t)) {
        snprintf(buf, n, "DIM%d", fe_dim_rank(t));
    } else if (fe_is_tuple(t) && tuple_of(ctx, t)) {
        const fe_tuple *tu = tuple_of(ctx, t);
        size_t len = 0;
        char part[128];
        len += (size_t)snprintf(buf, n, "(");
        for (int i = 0; i < tu->arity && len < n; i++) {
            fe_type_name(ctx, tu->comp[i], part, sizeof part);
            len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                                    part);
        }
        if (len < n) {
            snprintf(buf + len, n - len, ")");
        }
    } else {
        snprintf(buf, n, "<bad type %d>", (int)t);
    }
    return buf;
}

/* Bytes of an interned tuple: the struct, then comp, leaf and leaf_off. */
static size_t tuple_bytes(int n, int nleaf)
{
    return sizeof(fe_tuple) + sizeof(weft_type) * (size_t)(n + nleaf) +
           sizeof(int) * (size_t)(n + 1);
}

static uint64_t tuple_hash(int n, const weft_type *comps)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(uint32_t)comps[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

/* Grow the hash table of tuples to fit twice the tuples there will be
 * after one more (under ctx->lock); false when out of memory. */
static bool tuple_rehash(weft_context *ctx)
{
    uint32_t nslot = ctx->tuple_nslot ? 2 * ctx->tuple_nslot : 64;
    while (nslot < 2 * (uint32_t)(ctx->ntuples + 1)) {
        nslot *= 2;
    }
    int32_t *slots = fe_alloc(ctx, sizeof *slots * nslot);
    if (!slots) {
        return false;
    }
    memset(slots, 0xff, sizeof *slots * nslot);
    for (int i = 0; i < ctx->ntuples; i++) {
        const fe_tuple *tu = ctx->tuples[i];
        uint32_t j = (uint32_t)tuple_hash(tu->arity, tu->comp) & (nslot - 1);
        while (slots[j] >= 0) {
            j = (j + 1) & (nslot - 1);
        }
        slots[j] = i;
    }
    fe_free(ctx, ctx->tuple_slots, sizeof *slots * ctx->tuple_nslot);
    ctx->tuple_slots = slots;
    ctx->tuple_nslot = nslot;
    return true;
}

void fe_type_table_free(weft_context *ctx)
{
    for (int i = 0; i < ctx->ntuples; i++) {
        fe_tuple *tu = ctx->tuples[i];
        fe_free(ctx, tu, tuple_bytes(tu->arity, tu->nleaf));
    }
    fe_free(ctx, ctx->tuples, sizeof *ctx->tuples * (size_t)ctx->cap_tuples);
    fe_free(ctx, ctx->tuple_slots, sizeof *ctx->tuple_slots * ctx->tuple_nslot);
    ctx->tuples = NULL;
    ctx->tuple_slots = NULL;
    ctx->ntuples = ctx->cap_tuples = 0;
    ctx->tuple_nslot = 0;
}

weft_status fe_type_tuple(weft_context *ctx, int n, const weft_type *comps,
                          weft_type *out)
{
    *out = 0;
    if (n < 0 || (n > 0 && !comps)) {
        return fe_error(
            n < 0 ? WEFT_ERR_INVALID_ARGUMENT : WEFT_ERR_NULL_ARGUMENT,
            "weft_type_tuple: %s",
            n < 0 ? "a negative number of components" : "components is NULL");
    }
    int nleaf = 0;
    for (int i = 0; i < n; i++) {
        const weft_type *l;
        int k = fe_type_leaves(ctx, comps[i], &l);
        if (!fe_type_valid(ctx, comps[i])) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "weft_type_tuple: component %d is not a valid type",
                            i);
        }
        nleaf += k;
    }
    weft_status st = WEFT_OK;
    uint64_t h = tuple_hash(n, comps);
    pthread_mutex_lock(&ctx->lock);
    uint32_t slot = 0;
    if (ctx->tuple_nslot > 0) {
        uint32_t mask = ctx->tuple_nslot - 1;
        for (slot = (uint32_t)h & mask; ctx->tuple_slots[slot] >= 0;
             slot = (slot + 1) & mask) {
            fe_tuple *tu = ctx->tuples[ctx->tuple_slots[slot]];
            if (tu->arity == n &&
                (n == 0 ||
                 memcmp(tu->comp, comps, sizeof *comps * (size_t)n) == 0)) {
                *out = FE_TUPLE_BASE + ctx->tuple_slots[slot];
                pthread_mutex_unlock(&ctx->lock);
                return WEFT_OK;
            }
        }
    }
    if (ctx->ntuples == ctx->cap_tuples) {
        int cap = ctx->cap_tuples ? 2 * ctx->cap_tuples : 16;
        fe_tuple **nt =
            fe_realloc(ctx, ctx->tuples, sizeof *nt * (size_t)ctx->cap_tuples,
                       sizeof *nt * (size_t)cap);
        if (!nt) {
            st = WEFT_ERR_OUT_OF_MEMORY;
            goto done;
        }
        ctx->tuples = nt;
        ctx->cap_tuples = cap;
    }
    if (2 * (uint32_t)(ctx->ntuples + 1) > ctx->tuple_nslot) {
        if (!tuple_rehash(ctx)) {
            st = WEFT_ERR_OUT_OF_MEMORY;
            goto done;
        }
        uint32_t mask = ctx->tuple_nslot - 1;
        for (slot = (uint32_t)h & mask; ctx->tuple_slots[slot] >= 0;
             slot = (slot + 1) & mask) {
        }
    }
    fe_tuple *tu = fe_calloc(ctx, tuple_bytes(n, nleaf));
    if (!tu) {
        st = WEFT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    tu->arity = n;
    tu->comp = (weft_type *)(tu + 1);
    tu->nleaf = nleaf;
    tu->leaf = tu->comp + n;
    tu->leaf_off = (int *)(tu->leaf + nleaf);
    if (n > 0) {
        memcpy(tu->comp, comps, sizeof *comps * (size_t)n);
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        const weft_type *l;
        /* Components are scalars, DIMs or older tuples: no lock needed for
         * scalars and DIMs; for tuples read the table directly. */
        int m;
        if (fe_is_tuple(comps[i])) {
            fe_tuple *c = ctx->tuples[comps[i] - FE_TUPLE_BASE];
            l = c->leaf;
            m = c->nleaf;
        } else {
            m = fe_type_leaves(ctx, comps[i], &l);
        }
        if (m > 0) {
            memcpy(tu->leaf + k, l, sizeof *l * (size_t)m);
        }
        tu->leaf_off[i] = k;
        k += m;
    }
    tu->leaf_off[n] = k;
    ctx->tuple_slots[slot] = ctx->ntuples;
    ctx->tuples[ctx->ntuples] = tu;
    *out = FE_TUPLE_BASE + ctx->ntuples;
    ctx->ntuples++;
done:
    pthread_mutex_unlock(&ctx->lock);
    if (st) {
        return fe_oom("weft_type_tuple");
    }
    return WEFT_OK;
}

weft_type weft_type_tuple(weft_context *ctx, int n, const weft_type *components)
{
    weft_type t;
    if (!ctx) {
        fe_error(WEFT_ERR_NULL_ARGUMENT,
                 "weft_type_tuple: the context is NULL");
        return 0;
    }
    fe_type_tuple(ctx, n, components, &t);
    return t;
}

int weft_type_arity(const weft_context *ctx, weft_type t)
{
    const weft_type *c;
    return fe_type_comps(ctx, t, &c);
}

weft_type weft_type_component(const weft_context *ctx, weft_type t, int i)
{
    const weft_type *c;
    int n = fe_type_comps(ctx, t, &c);
    return i >= 0 && i < n ? c[i] : 0;
}

int weft_type_leaves(const weft_context *ctx, weft_type t)
{
    const weft_type *l;
    return fe_type_leaves(ctx, t, &l);
}

weft_type weft_type_leaf(const weft_context *ctx, weft_type t, int i)
{
    const weft_type *l;
    int n = fe_type_leaves(ctx, t, &l);
    return i >= 0 && i < n ? l[i] : 0;
}

/* ---- half precision ---------------------------------------------------- */

float fe_half_to_float(uint16_t h)
{
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) {
        v = ldexpf((float)m, -24);
    } else if (e == 31) {
        v = m ? NAN : INFINITY;
    } else {
        v = ldexpf((float)(m | 1024), e - 25);
    }
    return sign ? -v : v;
}

/* Round a double to the nearest half (ties to even), handling subnormals,
 * overflow to infinity and NaN, with one rounding step. */
uint16_t fe_half_from_double(double d)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d)) {
        return sign | 0x7e00;
    }
    if (a >= 65520.0) { /* 65504 + half an ulp rounds to infinity */
        return sign | 0x7c00;
    }
    if (a < ldexp(1.0, -14)) {
        /* subnormal: units of 2^-24 */
        double q = nearbyint(ldexp(a, 24));
        return sign | (uint16_t)q; /* q == 1024 becomes the smallest normal */
    }
    int e;
    double f = frexp(a, &e);            /* a = f * 2^e, f in [0.5, 1) */
    double q = nearbyint(ldexp(f, 11)); /* 11 significant bits */
    if (q >= 2048.0) {
        q /= 2;
        e++;
    }
    int be = e - 1 + 15;
    if (be >= 31) {
        return sign | 0x7c00;
    }
    return sign | (uint16_t)(be << 10) | ((uint16_t)q & 1023);
}

/* ---- scalar values ---------------------------------------------------- */

fe_val fe_norm(weft_type t, fe_val v)
{
    switch (t) {
    case WEFT_BOOL: v.u = v.u != 0; break;
    case WEFT_I8: v.i = (int8_t)v.u; break;
    case WEFT_I16: v.i = (int16_t)v.u; break;
    case WEFT_I32: v.i = (int32_t)v.u; break;
    case WEFT_I64: break;
    case WEFT_U8: v.u = (uint8_t)v.u; break;
    case WEFT_U16: v.u = (uint16_t)v.u; break;
    case WEFT_U32: v.u = (uint32_t)v.u; break;
    case WEFT_U64: break;
    case WEFT_F16: v.f = fe_half_to_float(fe_half_from_double(v.f)); break;
    case WEFT_F32: v.f = (float)v.f; break;
    default: break;
    }
    return v;
}

fe_val fe_load(weft_type t, const void *buf, int64_t i)
{
    fe_val v;
    v.u = 0;
    switch (t) {
    case WEFT_BOOL: v.u = ((const uint8_t *)buf)[i] != 0; break;
    case WEFT_I8: v.i = ((const int8_t *)buf)[i]; break;
    case WEFT_I16: v.i = ((const int16_t *)buf)[i]; break;
    case WEFT_I32: v.i = ((const int32_t *)buf)[i]; break;
    case WEFT_I64: v.i = ((const int64_t *)buf)[i]; break;
    case WEFT_U8: v.u = ((const uint8_t *)buf)[i]; break;
    case WEFT_U16: v.u = ((const uint16_t *)buf)[i]; break;
    case WEFT_U32: v.u = ((const uint32_t *)buf)[i]; break;
    case WEFT_U64: v.u = ((const uint64_t *)buf)[i]; break;
    case WEFT_F16: v.f = fe_half_to_float(((const uint16_t *)buf)[i]); break;
    case WEFT_F32: v.f = ((const float *)buf)[i]; break;
    case WEFT_F64: v.f = ((const double *)buf)[i]; break;
    default: break;
    }
    return v;
}

void fe_store(weft_type t, void *buf, int64_t i, fe_val v)
{
    switch (t) {
    case WEFT_BOOL: ((uint8_t *)buf)[i] = v.u != 0; break;
    case WEFT_I8: ((int8_t *)buf)[i] = (int8_t)v.i; break;
    case WEFT_I16: ((int16_t *)buf)[i] = (int16_t)v.i; break;
    case WEFT_I32: ((int32_t *)buf)[i] = (int32_t)v.i; break;
    case WEFT_I64: ((int64_t *)buf)[i] = v.i; break;
    case WEFT_U8: ((uint8_t *)buf)[i] = (uint8_t)v.u; break;
    case WEFT_U16: ((uint16_t *)buf)[i] = (uint16_t)v.u; break;
    case WEFT_U32: ((uint32_t *)buf)[i] = (uint32_t)v.u; break;
    case WEFT_U64: ((uint64_t *)buf)[i] = v.u; break;
    case WEFT_F16: ((uint16_t *)buf)[i] = fe_half_from_double(v.f); break;
    case WEFT_F32: ((float *)buf)[i] = (float)v.f; break;
    case WEFT_F64: ((double *)buf)[i] = v.f; break;
    default: break;
    }
}

/* ---- array types ------------------------------------------------------ */

const fe_atype *fe_atype_array(fe_arena *a, weft_type elt, int rank)
{
    fe_atype *t = fe_arena_alloc(a, sizeof *t);
    if (t) {
        t->elt = elt;
        t->rank = rank;
        t->narrays = 1;
    }
    return t;
}

const fe_atype *fe_atype_tuple(fe_arena *a, int n, const fe_atype *const *c)
{
    fe_atype *t = fe_arena_alloc(a, sizeof *t);
    const fe_atype **comp = fe_arena_alloc(a, sizeof *comp * (size_t)n);
    if (!t || !comp) {
        return NULL;
    }
    t->arity = n;
    t->comp = comp;
    t->rank = -1;
    for (int i = 0; i < n; i++) {
        comp[i] = c[i];
        t->narrays += c[i]->narrays;
    }
    return t;
}

const fe_atype *fe_atype_copy(fe_arena *a, const fe_atype *t)
{
    if (!t) {
        return NULL;
    }
    if (t->arity == 0) {
        return fe_atype_array(a, t->elt, t->rank);
    }
    const fe_atype *c[t->arity];
    for (int i = 0; i < t->arity; i++) {
        c[i] = fe_atype_copy(a, t->comp[i]);
        if (!c[i]) {
            return NULL;
        }
    }
    return fe_atype_tuple(a, t->arity, c);
}

bool fe_atype_equal(const fe_atype *x, const fe_atype *y)
{
    if (x == y) {
        return true;
    }
    if (!x || !y || x->arity != y->arity) {
        return false;
    }
    if (x->arity == 0) {
        return x->elt == y->elt && x->rank == y->rank;
    }
    for (int i = 0; i < x->arity; i++) {
        if (!fe_atype_equal(x->comp[i], y->comp[i])) {
            return false;
        }
    }
    return true;
}

int fe_atype_offset(const fe_atype *t, int i)
{
    int off = 0;
    for (int k = 0; k < i && k < t->arity; k++) {
        off += t->comp[k]->narrays;
    }
    return off;
}

const char *fe_atype_name(const weft_context *ctx, const fe_atype *t, char *buf,
                          size_t n)
{
    if (n == 0) {
        return buf;
    }
    if (!t) {
        snprintf(buf, n, "<no type>");
    } else if (t->arity == 0) {
        char e[160];
        snprintf(buf, n, "%s[%d]", fe_type_name(ctx, t->elt, e, sizeof e),
                 t->rank);
    } else {
        size_t len = (size_t)snprintf(buf, n, "(");
        char part[256];
        for (int i = 0; i < t->arity && len < n; i++) {
            fe_atype_name(ctx, t->comp[i], part, sizeof part);
            len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                                    part);
        }
        if (len < n) {
            snprintf(buf + len, n - len, ")");
        }
    }
    return buf;
}
