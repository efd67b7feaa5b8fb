/*
 * tests/fuzz/ast.c: the fuzzer's types, node pool, random numbers and half
 * floats.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* ------------------------------------------------------------------------
 * Types
 * ---------------------------------------------------------------------- */

fz_ty fz_scalar(weft_type t)
{
    fz_ty r = {FZ_SCALAR, 0, {t, 0, 0}};
    return r;
}

fz_ty fz_dim(int rank)
{
    fz_ty r = {FZ_DIMT, (int8_t)rank, {0, 0, 0}};
    return r;
}

bool fz_ty_eq(fz_ty a, fz_ty b)
{
    if (a.kind != b.kind) {
        return false;
    }
    if (a.kind == FZ_SCALAR) {
        return a.s[0] == b.s[0];
    }
    if (a.n != b.n) {
        return false;
    }
    if (a.kind == FZ_DIMT) {
        return true;
    }
    for (int i = 0; i < a.n; i++) {
        if (a.s[i] != b.s[i]) {
            return false;
        }
    }
    return true;
}

int fz_ty_leaves(fz_ty t)
{
    return t.kind == FZ_SCALAR ? 1 : t.n;
}

weft_type fz_ty_leaf(fz_ty t, int i)
{
    if (t.kind == FZ_DIMT) {
        return WEFT_I64;
    }
    return t.kind == FZ_SCALAR ? t.s[0] : t.s[i];
}

weft_type fz_ty_weft(weft_context *ctx, fz_ty t)
{
    switch (t.kind) {
    case FZ_SCALAR: return t.s[0];
    case FZ_DIMT: return WEFT_DIM(t.n);
    default: return weft_type_tuple(ctx, t.n, t.s);
    }
}

static const char *tnames[] = {"?",   "bool", "i8",  "i16", "i32", "i64", "u8",
                               "u16", "u32",  "u64", "f16", "f32", "f64"};

const char *fz_tname(weft_type t)
{
    return t >= 0 && t <= WEFT_F64 ? tnames[t] : "?";
}

void fz_ty_str(fz_ty t, char *buf, size_t n)
{
    if (t.kind == FZ_SCALAR) {
        snprintf(buf, n, "%s", fz_tname(t.s[0]));
    } else if (t.kind == FZ_DIMT) {
        snprintf(buf, n, "DIM%d", t.n);
    } else {
        size_t k = (size_t)snprintf(buf, n, "(");
        for (int i = 0; i < t.n && k < n; i++) {
            k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "",
                                  fz_tname(t.s[i]));
        }
        if (k < n) {
            snprintf(buf + k, n - k, ")");
        }
    }
}

bool fz_is_int(weft_type t)
{
    return t >= WEFT_I8 && t <= WEFT_U64;
}

bool fz_is_signed(weft_type t)
{
    return t >= WEFT_I8 && t <= WEFT_I64;
}

bool fz_is_float(weft_type t)
{
    return t >= WEFT_F16 && t <= WEFT_F64;
}

int fz_bits(weft_type t)
{
    static const int bits[] = {0, 8, 8, 16, 32, 64, 8, 16, 32, 64, 16, 32, 64};
    return t >= 0 && t <= WEFT_F64 ? bits[t] : 0;
}

size_t fz_size(weft_type t)
{
    return (size_t)fz_bits(t) / 8;
}

bool fz_ty_has_float(fz_ty t)
{
    for (int i = 0; i < fz_ty_leaves(t); i++) {
        if (fz_is_float(fz_ty_leaf(t, i))) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------
 * Programs
 * ---------------------------------------------------------------------- */

fz_prog *fz_prog_new(void)
{
    fz_prog *p = calloc(1, sizeof *p);
    p->node = calloc(FZ_MAXNODES, sizeof *p->node);
    return p;
}

fz_prog *fz_prog_clone(const fz_prog *src)
{
    fz_prog *p = fz_prog_new();
    p->n = src->n;
    p->nroot = src->nroot;
    memcpy(p->root, src->root, sizeof p->root);
    p->seed = src->seed;
    p->features = src->features;
    memcpy(p->node, src->node, (size_t)src->n * sizeof *p->node);
    for (int i = 0; i < p->n; i++) {
        fz_node *n = &p->node[i];
        if (n->op != A_USE) {
            continue;
        }
        int64_t size = fz_use_size(n);
        for (int l = 0; l < fz_ty_leaves(n->ty); l++) {
            size_t bytes = (size_t)size * fz_size(fz_ty_leaf(n->ty, l));
            void *d = malloc(bytes ? bytes : 1);
            if (bytes) {
                memcpy(d, src->node[i].data[l], bytes);
            }
            n->data[l] = d;
        }
    }
    return p;
}

void fz_prog_free(fz_prog *p)
{
    if (!p) {
        return;
    }
    for (int i = 0; i < p->n; i++) {
        if (p->node[i].op == A_USE) {
            for (int l = 0; l < FZ_MAXT; l++) {
                free(p->node[i].data[l]);
            }
        }
    }
    free(p->node);
    free(p);
}

int fz_node_add(fz_prog *p, fz_node n)
{
    if (p->n >= FZ_MAXNODES) {
        return -1;
    }
    p->node[p->n] = n;
    return p->n++;
}

int64_t fz_use_size(const fz_node *n)
{
    int64_t s = 1;
    for (int d = 0; d < n->rank; d++) {
        s *= n->sh[d];
    }
    return s;
}

bool fz_is_array_op(fz_op op)
{
    return op >= A_USE;
}

const char *fz_op_name(fz_op op)
{
    static const char *const names[FZ_NOPS] = {
#define FZ_OP(op_, name, how, call, kids) [op_] = name,
#include "ops.h"
#undef FZ_OP
    };
    return op < FZ_NOPS && names[op] ? names[op] : "?";
}

/* Mark what the roots reach, following kids and the function an argument
 * belongs to. */
void fz_mark_live(const fz_prog *p, bool *live)
{
    memset(live, 0, (size_t)p->n * sizeof *live);
    int *stack = malloc((size_t)(p->n * (FZ_MAXK + 2) + 8) * sizeof *stack);
    int sp = 0;
    for (int i = 0; i < p->nroot; i++) {
        stack[sp++] = p->root[i];
    }
    while (sp > 0) {
        int i = stack[--sp];
        if (i < 0 || live[i]) {
            continue;
        }
        live[i] = true;
        const fz_node *n = &p->node[i];
        for (int k = 0; k < n->nkid; k++) {
            stack[sp++] = n->kid[k];
        }
        if (n->op == E_ARG || n->op == A_AARG) {
            stack[sp++] = n->aux;
        }
    }
    free(stack);
}

int fz_count_live(const fz_prog *p)
{
    bool *live = malloc((size_t)p->n + 1);
    fz_mark_live(p, live);
    int c = 0;
    for (int i = 0; i < p->n; i++) {
        c += live[i];
    }
    free(live);
    return c;
}

/* ------------------------------------------------------------------------
 * Random numbers
 * ---------------------------------------------------------------------- */

uint64_t fz_next(fz_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int fz_below(fz_rng *r, int n)
{
    return n <= 1 ? 0 : (int)(fz_next(r) % (uint64_t)n);
}

bool fz_chance(fz_rng *r, int pct)
{
    return fz_below(r, 100) < pct;
}

/* ------------------------------------------------------------------------
 * Half floats
 * ---------------------------------------------------------------------- */

uint16_t fz_half_from_double(double d)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    if (isnan(d)) {
        return 0x7e00;
    }
    double a = fabs(d);
    if (a >= 65520.0) {
        return sign | 0x7c00;
    }
    if (a < ldexp(1.0, -25)) {
        return sign; /* below half the smallest subnormal (ties to 0) */
    }
    int e;
    frexp(a, &e);    /* a = m * 2^e, 0.5 <= m < 1 */
    int exp = e - 1; /* a = 1.f * 2^exp */
    if (exp < -14) {
        exp = -14; /* subnormal: unit 2^-24 */
    }
    double q = ldexp(a, 10 - exp); /* in units of the last place */
    double r = nearbyint(q);       /* round to nearest even (default mode) */
    uint32_t mant = (uint32_t)r;
    if (mant >= 2048) {
        mant >>= 1;
        exp++;
    }
    if (exp > 15) {
        return sign | 0x7c00;
    }
    if (mant < 1024) {
        return sign | (uint16_t)mant; /* subnormal */
    }
    return sign | (uint16_t)((exp + 15) << 10) | (uint16_t)(mant & 0x3ff);
}

double fz_half_to_double(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 0x3ff;
    double v;
    if (e == 31) {
        v = m ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp(m, -24);
    } else {
        v = ldexp(m + 1024, e - 25);
    }
    return s ? -v : v;
}
