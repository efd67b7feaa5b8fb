/*
 * tests/test_cpu_stencil.c: the CPU backend against the interpreter for
 * stencil, stencil2, unit, reshape, replicate and slice.
 *
 * Every case builds one program twice, once in an interpreter context and
 * once in a CPU context (both ignore the environment), runs both on the
 * same random inputs and asks for the same status and, on success, the
 * same outputs: bit for bit for integers and booleans, and for floats
 * within a relative 1e-12 (f64), 1e-5 (f32) or 1e-2 (f16), although the
 * skeletons reassociate nothing and exact equality is what we see.
 * Shapes include empty extents, single elements, extents below the window
 * (where mirror falls back to the edge), odd and prime extents, rows long
 * enough to be cut into pieces, and a few million elements.
 */
#include "tu_cmp.h"

/* ---- element types ------------------------------------------------------ */

enum {
    E_I32,
    E_F32,
    E_F64,
    E_I8,
    E_U16,
    E_F16,
    E_BOOL,
    E_I64,
    E_PAIR,
    E_TRIPLE,
    E_COUNT
};

static weft_type mk_type(weft_context *ctx, int e)
{
    switch (e) {
    case E_I32: return WEFT_I32;
    case E_F32: return WEFT_F32;
    case E_F64: return WEFT_F64;
    case E_I8: return WEFT_I8;
    case E_U16: return WEFT_U16;
    case E_F16: return WEFT_F16;
    case E_BOOL: return WEFT_BOOL;
    case E_I64: return WEFT_I64;
    case E_PAIR:
        return weft_type_tuple(ctx, 2, (const weft_type[]){WEFT_I32, WEFT_F32});
    default:
        return weft_type_tuple(
            ctx, 3, (const weft_type[]){WEFT_I64, WEFT_F32, WEFT_BOOL});
    }
}

/* ---- random host data ----------------------------------------------------- */

static tu_rng rng = {0x9e3779b97f4a7c15ull};

static uint64_t rnd(void)
{
    return tu_rng_u64(&rng);
}

static uint16_t half_of_small(int v)
{
    return tu_double_to_half((double)v / 4.0);
}

static void fill_leaf(weft_type t, void *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        int v = (int)(rnd() % 201) - 100;
        switch (t) {
        case WEFT_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(rnd() & 1); break;
        case WEFT_I8: ((int8_t *)buf)[i] = (int8_t)rnd(); break;
        case WEFT_U16: ((uint16_t *)buf)[i] = (uint16_t)rnd(); break;
        case WEFT_I32: ((int32_t *)buf)[i] = (int32_t)rnd(); break;
        case WEFT_I64: ((int64_t *)buf)[i] = (int64_t)rnd(); break;
        case WEFT_F16: ((uint16_t *)buf)[i] = half_of_small(v); break;
        case WEFT_F32: ((float *)buf)[i] = (float)v / 8.0f; break;
        case WEFT_F64: ((double *)buf)[i] = (double)v / 3.0; break;
        default: break;
        }
    }
}

/* ---- the harness ---------------------------------------------------------- */

typedef struct input {
    int elt; /* E_* */
    int rank;
    int64_t shape[4];
} input;

/* Builds the program's results from its parameters; returns how many. */
typedef int (*build_fn)(weft_program *p, weft_acc **param, const void *arg,
                        weft_acc **res);

#define MAX_IN 3

static tu_cmp g_cmp; /* the interpreter and DT_BACKEND (tu_cmp.h) */

/* Floats within a relative 1e-12 (f64), 1e-5 (f32) or 1e-2 (f16), beyond
 * magnitude 1 (tu_tol_rel). */
static tu_tol tol_of(weft_type t, tu_tol tol)
{
    (void)tol;
    return tu_tol_rel(t == WEFT_F64 ? 1e-12 : t == WEFT_F32 ? 1e-5 : 1e-2);
}

static void open_both(void)
{
    tu_cmp_open2(&g_cmp, 2, 0);
    g_cmp.leaf_tol = tol_of;
}

static void close_both(void)
{
    tu_cmp_close(&g_cmp);
}

/* A case's program: parameters of the inputs' types, then build's
 * results. */
typedef struct case_arg {
    const input *in;
    int nin;
    build_fn build;
    const void *arg;
} case_arg;

static int build_case(weft_program *p, weft_context *ctx, const void *argp,
                      weft_acc **res)
{
    const case_arg *ca = argp;
    weft_acc *param[MAX_IN];
    for (int k = 0; k < ca->nin; k++) {
        param[k] = weft_param(p, mk_type(ctx, ca->in[k].elt), ca->in[k].rank);
    }
    return ca->build(p, param, ca->arg, res);
}

/* Run build on both backends with random inputs in[0..nin-1]; the two
 * statuses must agree (and equal want unless want < 0; a failure is
 * reported by weft_run), and so must the outputs. */
static void check_both(const char *what, const input *in, int nin,
                       build_fn build, const void *arg, int want)
{
    tu_host host[MAX_IN];
    for (int k = 0; k < nin; k++) {
        weft_context *c = g_cmp.ctx[0];
        weft_type t = mk_type(c, in[k].elt);
        weft_type leaf[4];
        int nleaf = weft_type_leaves(c, t);
        for (int l = 0; l < nleaf; l++) {
            leaf[l] = weft_type_leaf(c, t, l);
        }
        host[k] = tu_host_alloc(nleaf, leaf, in[k].rank, in[k].shape);
        for (int l = 0; l < nleaf; l++) {
            fill_leaf(leaf[l], host[k].data[l], host[k].size);
        }
    }
    case_arg ca = {in, nin, build, arg};
    tu_cmp_case(&g_cmp, "%s", what);
    tu_cmp_build(&g_cmp, build_case, &ca);
    weft_status st = tu_cmp_run(&g_cmp, host, nin, TU_EXACT);
    tu_cmp_check_run_msg(&g_cmp);
    if (want >= 0) {
        ck_assert_msg(st == (weft_status)want, "%s: %s, expected %s", what,
                      weft_status_name(st),
                      weft_status_name((weft_status)want));
    }
    for (int k = 0; k < nin; k++) {
        tu_host_free(&host[k]);
    }
}

/* ---- stencil programs ------------------------------------------------------- */

typedef struct sten_arg {
    int win[2][3];
    weft_boundary_kind bnd[2];
    bool two;
    bool free_var; /* f also adds a scalar from outside (size a) */
    int ncomp;     /* components of a tuple element type (2 or 3) */
} sten_arg;

static int win_size(const int *w, int rank)
{
    int k = 1;
    for (int d = 0; d < rank; d++) {
        k *= w[d];
    }
    return k;
}

/* c * x for a small integer c, in x's scalar type t. */
static weft_exp *scale(weft_program *p, weft_type t, int c, weft_exp *x)
{
    if (t == WEFT_BOOL) {
        return c % 2 ? weft_not(x) : x;
    }
    return weft_mul(weft_convert(weft_i32(p, c), t), x);
}

static weft_exp *combine(weft_type t, weft_exp *acc, weft_exp *x)
{
    if (t == WEFT_BOOL) {
        return weft_ne(acc, x);
    }
    return weft_add(acc, x);
}

/* The boundary value of a constant boundary for element type ty. */
static weft_exp *boundary_value(weft_program *p, weft_type ty)
{
    switch (ty) {
    case WEFT_BOOL: return weft_bool(p, 1);
    case WEFT_I8: return weft_i8(p, -7);
    case WEFT_U16: return weft_u16(p, 65000);
    case WEFT_I32: return weft_i32(p, 1234567);
    case WEFT_I64: return weft_i64(p, -99);
    case WEFT_F16: return weft_f16(p, 2.5f);
    case WEFT_F32: return weft_f32(p, -3.25f);
    case WEFT_F64: return weft_f64(p, 0.125);
    default: return NULL;
    }
}

/* f(x_0 .. x_{k-1}) = sum_j c_j x_j per leaf (bool: xor), c_j = j % 5 - 2,
 * with tuple elements summed per component (the f32 of a pair takes the
 * max instead); stencil2 sums both windows converted to the first's type
 * (scalar elements only). */
static int build_stencil(weft_program *p, weft_acc **param, const void *argp,
                         weft_acc **res)
{
    const sten_arg *sa = argp;
    weft_acc *a = param[0];
    weft_acc *b = sa->two ? param[1] : NULL;
    int rank = weft_acc_rank(a);
    weft_type ta = weft_acc_type(a), tb = b ? weft_acc_type(b) : 0;
    int k1 = win_size(sa->win[0], rank);
    int k2 = b ? win_size(sa->win[1], rank) : 0;
    weft_type *types = malloc(sizeof *types * (size_t)(k1 + k2));
    for (int j = 0; j < k1 + k2; j++) {
        types[j] = j < k1 ? ta : tb;
    }
    weft_fun *f = weft_fun_create(p, k1 + k2, types);
    free(types);
    /* tuple element types: E_PAIR (i32, f32) or E_TRIPLE (i64, f32, bool) */
    bool tuple = !(ta >= WEFT_BOOL && ta <= WEFT_F64);
    int nc = sa->ncomp;
    weft_type comp[3] = {nc == 2 ? WEFT_I32 : WEFT_I64, WEFT_F32, WEFT_BOOL};
    weft_exp *body = NULL;
    if (!tuple) {
        weft_exp *acc = NULL;
        for (int j = 0; j < k1 + k2; j++) {
            weft_exp *x = weft_arg(f, j);
            if (j >= k1 && tb != ta) {
                x = weft_convert(x, ta);
            }
            x = scale(p, ta, j % 5 - 2, x);
            acc = acc ? combine(ta, acc, x) : x;
        }
        if (sa->free_var && ta != WEFT_BOOL) {
            acc = weft_add(acc, weft_convert(weft_size(a), ta));
        }
        body = acc;
    } else {
        weft_exp *acc[3] = {NULL, NULL, NULL};
        for (int j = 0; j < k1; j++) {
            for (int c = 0; c < nc; c++) {
                weft_exp *x = weft_get(weft_arg(f, j), c);
                if (comp[c] == WEFT_F32 && nc == 2) {
                    acc[c] = acc[c] ? weft_max(acc[c], x) : x;
                    continue;
                }
                x = scale(p, comp[c], j % 5 - 2, x);
                acc[c] = acc[c] ? combine(comp[c], acc[c], x) : x;
            }
        }
        body = weft_tuple(p, nc, acc);
    }
    weft_fun_return(f, body);
    weft_boundary b1 = {sa->bnd[0], NULL}, b2 = {sa->bnd[1], NULL};
    if (b1.kind == WEFT_BOUNDARY_CONSTANT) {
        b1.value =
            tuple ? weft_tuple(p, nc,
                               (weft_exp *const[]){
                                   boundary_value(p, comp[0]),
                                   boundary_value(p, comp[1]),
                                   nc > 2 ? boundary_value(p, comp[2]) : NULL})
                  : boundary_value(p, ta);
    }
    if (b && b2.kind == WEFT_BOUNDARY_CONSTANT) {
        b2.value = boundary_value(p, tb);
    }
    res[0] = b ? weft_stencil2(f, sa->win[0], b1, a, sa->win[1], b2, b)
               : weft_stencil(f, sa->win[0], b1, a);
    return 1;
}

static const int wins[4] = {3, 5, 7, 9};

/* The stencil of sa (its window and boundary, one array) over an array
 * of rank `rank`, the given shape (3 extents) and element type elt. */
static void check_stencil(int rank, const int64_t *shape, sten_arg *sa, int elt)
{
    input in = {.elt = elt, .rank = rank};
    sa->ncomp = elt == E_PAIR ? 2 : 3;
    memcpy(in.shape, shape, 3 * sizeof *shape);
    char what[160];
    snprintf(what, sizeof what,
             "stencil rank %d shape %lld %lld %lld window %d %d %d "
             "boundary %d elt %d",
             rank, (long long)in.shape[0], (long long)in.shape[1],
             (long long)in.shape[2], sa->win[0][0], sa->win[0][1],
             sa->win[0][2], (int)sa->bnd[0], elt);
    check_both(what, &in, 1, build_stencil, sa, WEFT_OK);
}

/* Stencils of rank `rank` over every shape of `shapes`, every boundary,
 * windows and element types cycling. */
static void stencil_sweep(int rank, const int64_t (*shapes)[3], int nshape,
                          const int *elts, int nelt, int maxk)
{
    int turn = 0;
    for (int si = 0; si < nshape; si++) {
        for (int bi = 0; bi < 4; bi++) {
            sten_arg sa;
            memset(&sa, 0, sizeof sa);
            sa.bnd[0] = (weft_boundary_kind)bi;
            do {
                for (int d = 0; d < rank; d++) {
                    sa.win[0][d] = wins[(turn + 3 * d + si) % 4];
                }
                turn++;
            } while (win_size(sa.win[0], rank) > maxk);
            sa.free_var = turn % 3 == 0;
            check_stencil(rank, shapes[si], &sa, elts[(si + bi) % nelt]);
        }
    }
}

START_TEST(test_stencil_rank1)
{
    static const int64_t shapes[][3] = {{0},    {1},    {2},    {3},  {4},
                                        {5},    {7},    {8},    {13}, {97},
                                        {4099}, {8193}, {20011}};
    static const int elts[] = {E_I32, E_F32, E_F64,  E_I8,  E_PAIR,
                               E_U16, E_F16, E_BOOL, E_I64, E_TRIPLE};
    open_both();
    stencil_sweep(1, shapes, (int)(sizeof shapes / sizeof shapes[0]), elts,
                  (int)(sizeof elts / sizeof elts[0]), 9);
    close_both();
}
END_TEST

START_TEST(test_stencil_rank2)
{
    static const int64_t shapes[][3] = {{0, 5},   {5, 0},    {1, 1},  {2, 3},
                                        {3, 2},   {1, 13},   {13, 1}, {7, 11},
                                        {31, 17}, {4, 9000}, {64, 64}};
    static const int elts[] = {E_I32, E_F64,    E_PAIR, E_F32,
                               E_I8,  E_TRIPLE, E_BOOL};
    open_both();
    stencil_sweep(2, shapes, (int)(sizeof shapes / sizeof shapes[0]), elts,
                  (int)(sizeof elts / sizeof elts[0]), 81);
    close_both();
}
END_TEST

START_TEST(test_stencil_rank3)
{
    static const int64_t shapes[][3] = {{0, 2, 2},    {2, 0, 3},   {1, 1, 1},
                                        {2, 3, 4},    {5, 7, 3},   {9, 4, 11},
                                        {2, 2, 9001}, {11, 13, 17}};
    static const int elts[] = {E_F32, E_I32, E_PAIR, E_F64, E_I64};
    open_both();
    stencil_sweep(3, shapes, (int)(sizeof shapes / sizeof shapes[0]), elts,
                  (int)(sizeof elts / sizeof elts[0]), 125);
    /* the largest window on a small array */
    sten_arg sa = {.win = {{9, 9, 9}}, .bnd = {WEFT_BOUNDARY_MIRROR}};
    input in = {.elt = E_I32, .rank = 3, .shape = {4, 10, 6}};
    check_both("stencil 9x9x9", &in, 1, build_stencil, &sa, WEFT_OK);
    close_both();
}
END_TEST

/* Every window and boundary on every small extent: the border paths
 * where a window is wider than its array (mirror's reflections, wrap's
 * repeated periods). */
START_TEST(test_stencil_tiny)
{
    open_both();
    for (int n = 1; n <= 10; n++) {
        for (int wi = 0; wi < 4; wi++) {
            for (int bi = 0; bi < 4; bi++) {
                sten_arg sa = {.win = {{wins[wi]}},
                               .bnd = {(weft_boundary_kind)bi}};
                input in = {.elt = E_I32, .rank = 1, .shape = {n}};
                char what[64];
                snprintf(what, sizeof what, "tiny n %d window %d boundary %d",
                         n, wins[wi], bi);
                check_both(what, &in, 1, build_stencil, &sa, WEFT_OK);
            }
        }
    }
    static const int64_t sh2[][2] = {{1, 2}, {2, 1}, {3, 3}, {2, 5}, {4, 2}};
    for (int c = 0; c < 5; c++) {
        for (int bi = 0; bi < 4; bi++) {
            sten_arg sa = {.win = {{9, 5}}, .bnd = {(weft_boundary_kind)bi}};
            input in = {
                .elt = E_I64, .rank = 2, .shape = {sh2[c][0], sh2[c][1]}};
            char what[64];
            snprintf(what, sizeof what, "tiny 2d case %d boundary %d", c, bi);
            check_both(what, &in, 1, build_stencil, &sa, WEFT_OK);
        }
    }
    close_both();
}
END_TEST

/* stencil2 case c of a test under boundary bi of its first array (the
 * second's turns with c): arrays of rank `rank`, shapes a and b (`rank`
 * extents each), element types ea and eb, windows win[0] and win[1]. */
static void check_stencil2(const char *test, size_t c, int bi, int rank,
                           const int64_t *a, const int64_t *b, int ea, int eb,
                           const int (*win)[3])
{
    sten_arg sa;
    memset(&sa, 0, sizeof sa);
    sa.two = true;
    sa.bnd[0] = (weft_boundary_kind)bi;
    sa.bnd[1] = (weft_boundary_kind)((bi + 1 + (int)c) % 4);
    memcpy(sa.win, win, sizeof sa.win);
    input in[2] = {{.elt = ea, .rank = rank}, {.elt = eb, .rank = rank}};
    memcpy(in[0].shape, a, (size_t)rank * sizeof *a);
    memcpy(in[1].shape, b, (size_t)rank * sizeof *b);
    char what[96];
    snprintf(what, sizeof what, "%s case %zu boundary %d", test, c, bi);
    check_both(what, in, 2, build_stencil, &sa, WEFT_OK);
}

START_TEST(test_stencil2)
{
    static const struct {
        int rank;
        int64_t a[3], b[3];
        int ea, eb;
    } cases[] = {
        {1, {5}, {7}, E_I32, E_I32},
        {1, {0}, {3}, E_F64, E_I32},
        {1, {1}, {1}, E_F32, E_F32},
        {1, {20011}, {20000}, E_F64, E_F32},
        {2, {13, 7}, {11, 9}, E_I32, E_I8},
        {2, {1, 2}, {2, 1}, E_I64, E_I32},
        {2, {3, 9000}, {4, 8999}, E_F32, E_F32},
        {3, {3, 4, 5}, {5, 4, 3}, E_F64, E_F64},
        {3, {2, 9, 10}, {3, 8, 12}, E_I32, E_I64},
    };
    open_both();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int bi = 0; bi < 4; bi++) {
            int win[2][3] = {{0}};
            for (int d = 0; d < cases[c].rank; d++) {
                win[0][d] = wins[(c + (size_t)d + (size_t)bi) % 4];
                win[1][d] = wins[(2 * c + (size_t)bi + 1) % 4];
                if (cases[c].rank == 3) {
                    win[0][d] = 3;
                    win[1][d] = d == 1 ? 5 : 3;
                }
            }
            check_stencil2("stencil2", c, bi, cases[c].rank, cases[c].a,
                           cases[c].b, cases[c].ea, cases[c].eb,
                           (const int(*)[3])win);
        }
    }
    close_both();
}
END_TEST

/* Rank 2 around the GPU's tiles (ptx/stencil.c: 64 x 32 elements, fewer
 * rows for wide elements or windows): extents that are multiples of the
 * tile, one more, one less, narrower than the halo, one wide, empty;
 * every boundary with windows from 3 to 9 per dimension and every
 * element type, tuples included. */
/* Stencils of rank `rank` over shapes[0 .. ns-1] under every boundary,
 * the windows win[0 .. nw-1] and element types elts[0 .. ne-1] turning,
 * a free variable in f every third case. */
static void tile_sweep(int rank, const int64_t (*shapes)[3], int ns,
                       const int (*win)[3], int nw, const int *elts, int ne)
{
    for (int si = 0; si < ns; si++) {
        for (int bi = 0; bi < 4; bi++) {
            int turn = si * 4 + bi;
            sten_arg sa;
            memset(&sa, 0, sizeof sa);
            sa.bnd[0] = (weft_boundary_kind)bi;
            memcpy(sa.win[0], win[turn % nw], sizeof win[0]);
            sa.free_var = turn % 3 == rank - 2;
            check_stencil(rank, shapes[si], &sa, elts[turn % ne]);
        }
    }
}

START_TEST(test_stencil_tiles)
{
    static const int64_t shapes[][3] = {
        {32, 64},   {33, 65}, {31, 63}, {64, 128}, {97, 130},
        {1, 200},   {200, 1}, {3, 2},   {2, 3},    {65, 33},
        {130, 300}, {0, 0},   {4, 4},   {16, 64},  {17, 1}};
    static const int win[][3] = {{3, 3}, {5, 5}, {9, 9}, {3, 9},
                                 {9, 3}, {7, 3}, {3, 7}};
    static const int elts[] = {E_F32,  E_I32, E_F64, E_PAIR, E_TRIPLE,
                               E_BOOL, E_F16, E_I8,  E_U16,  E_I64};
    open_both();
    tile_sweep(2, shapes, (int)(sizeof shapes / sizeof shapes[0]), win,
               (int)(sizeof win / sizeof win[0]), elts,
               (int)(sizeof elts / sizeof elts[0]));
    /* more tiles than a GPU's grid holds at once: blocks take several */
    for (int bi = 0; bi < 4; bi++) {
        sten_arg sa = {.win = {{3, 3}}, .bnd = {(weft_boundary_kind)bi}};
        input in = {
            .elt = bi % 2 ? E_I32 : E_F32, .rank = 2, .shape = {1500, 1537}};
        char what[64];
        snprintf(what, sizeof what, "tiles 1500x1537 boundary %d", bi);
        check_both(what, &in, 1, build_stencil, &sa, WEFT_OK);
    }
    close_both();
}
END_TEST

/* Rank 3 around the GPU's tiles (a plane's 64 x 32 elements or fewer,
 * the window's planes in shared memory): planes at, above and below the
 * tile, thin and single planes, every boundary, windows of 3 to 7 per
 * dimension, and a stencil2. */
START_TEST(test_stencil_tiles3)
{
    static const int64_t shapes[][3] = {{3, 32, 64}, {4, 33, 65}, {5, 31, 63},
                                        {1, 1, 200}, {2, 70, 3},  {7, 2, 130},
                                        {1, 40, 40}, {6, 17, 100}};
    static const int win[][3] = {
        {3, 3, 3}, {3, 5, 3}, {5, 3, 3}, {3, 3, 7}, {3, 7, 3}};
    static const int elts[] = {E_F32, E_F64, E_I32, E_PAIR, E_I8, E_TRIPLE};
    open_both();
    tile_sweep(3, shapes, (int)(sizeof shapes / sizeof shapes[0]), win,
               (int)(sizeof win / sizeof win[0]), elts,
               (int)(sizeof elts / sizeof elts[0]));
    static const int w3[2][3] = {{3, 3, 3}, {3, 5, 3}};
    for (int bi = 0; bi < 4; bi++) {
        check_stencil2("stencil2 tiles3", 0, bi, 3,
                       (const int64_t[]){4, 40, 70},
                       (const int64_t[]){5, 33, 66}, E_F32, E_I32, w3);
    }
    close_both();
}
END_TEST

/* stencil2 of rank 2 in tiles: arrays of other shapes (the result is the
 * intersection), other windows and boundaries per array. */
START_TEST(test_stencil2_tiles)
{
    static const struct {
        int64_t a[3], b[3];
        int ea, eb;
        int win[2][3];
    } cases[] = {
        {{70, 130}, {66, 140}, E_F32, E_F32, {{3, 3}, {5, 5}}},
        {{33, 65}, {40, 64}, E_F64, E_F32, {{9, 3}, {3, 9}}},
        {{5, 200}, {7, 190}, E_I32, E_I8, {{7, 7}, {3, 3}}},
        {{128, 64}, {128, 64}, E_I64, E_I32, {{9, 9}, {9, 9}}},
        {{1, 1}, {3, 3}, E_F32, E_F64, {{5, 3}, {3, 5}}},
    };
    open_both();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int bi = 0; bi < 4; bi++) {
            check_stencil2("stencil2 tiles", c, bi, 2, cases[c].a, cases[c].b,
                           cases[c].ea, cases[c].eb, cases[c].win);
        }
    }
    close_both();
}
END_TEST

START_TEST(test_stencil_large)
{
    open_both();
    sten_arg sa = {.win = {{3}}, .bnd = {WEFT_BOUNDARY_WRAP}};
    input in = {.elt = E_F32, .rank = 1, .shape = {2000003}};
    check_both("stencil 1d large", &in, 1, build_stencil, &sa, WEFT_OK);
    sten_arg sb = {
        .win = {{3, 3}}, .bnd = {WEFT_BOUNDARY_CONSTANT}, .free_var = true};
    input in2 = {.elt = E_I32, .rank = 2, .shape = {601, 1699}};
    check_both("stencil 2d large", &in2, 1, build_stencil, &sb, WEFT_OK);
    sten_arg sc = {.win = {{3, 3, 3}}, .bnd = {WEFT_BOUNDARY_MIRROR}};
    input in3 = {.elt = E_F64, .rank = 3, .shape = {31, 47, 103}};
    check_both("stencil 3d large", &in3, 1, build_stencil, &sc, WEFT_OK);
    close_both();
}
END_TEST

/* Rows whose windows reach past an outer edge (every row of an array of
 * one to three rows): their interior columns are read unchecked, under a
 * constant boundary with the constant for the rows outside; rows long
 * and short, one row cut into pieces. */
START_TEST(test_stencil_edge_rows)
{
    static const int64_t shapes[][3] = {{1, 300},  {2, 301},  {3, 1000},
                                        {1, 9001}, {2, 9},    {3, 4},
                                        {5, 2},    {4, 4097}, {2, 17}};
    static const int win[][3] = {{3, 3}, {5, 5}, {7, 3}, {9, 9}, {3, 7}};
    static const int elts[] = {E_F32,  E_I32,    E_PAIR, E_F64,
                               E_BOOL, E_TRIPLE, E_I8};
    open_both();
    tile_sweep(2, shapes, (int)(sizeof shapes / sizeof shapes[0]), win,
               (int)(sizeof win / sizeof win[0]), elts,
               (int)(sizeof elts / sizeof elts[0]));
    static const int64_t sh3[][3] = {{1, 1, 300}, {2, 3, 130}, {1, 5, 77}};
    static const int w3[][3] = {{3, 3, 3}, {3, 5, 7}};
    tile_sweep(3, sh3, (int)(sizeof sh3 / sizeof sh3[0]), w3,
               (int)(sizeof w3 / sizeof w3[0]), elts,
               (int)(sizeof elts / sizeof elts[0]));
    close_both();
}
END_TEST

/* Windows of more than SK_STENCIL_COMPACT (100) elements, which the CPU
 * runs in strips: rows shorter than a border strip, as long as a few,
 * long enough to be cut into pieces; rows whose windows all lie inside
 * and rows at the edges (under a constant boundary, every combination of
 * rows outside); every boundary and element type, tuples and booleans
 * (stored as bytes in the copies) included. */
START_TEST(test_stencil_strips)
{
    static const int64_t shapes[][3] = {
        {1, 1, 1},   {2, 3, 4},  {6, 5, 37},   {3, 4, 203},  {7, 9, 16},
        {1, 1, 300}, {9, 2, 65}, {2, 3, 9001}, {11, 12, 13}, {5, 6, 5}};
    static const int win[][3] = {{5, 5, 5}, {7, 7, 3}, {3, 7, 7},
                                 {5, 5, 7}, {9, 9, 3}, {7, 5, 5}};
    static const int elts[] = {E_F32,  E_I32, E_F64, E_TRIPLE, E_BOOL,
                               E_PAIR, E_I8,  E_F16, E_U16,    E_I64};
    open_both();
    tile_sweep(3, shapes, (int)(sizeof shapes / sizeof shapes[0]), win,
               (int)(sizeof win / sizeof win[0]), elts,
               (int)(sizeof elts / sizeof elts[0]));
    /* more than about 250 window elements: the loop over the columns is
     * vectorised as parallel (rows long enough for vectors) */
    static const int64_t big[][3] = {{2, 3, 203}, {9, 10, 40}};
    static const int wbig[][3] = {{7, 7, 7}, {9, 9, 9}};
    static const int ebig[] = {E_F32, E_TRIPLE, E_I32, E_F64};
    tile_sweep(3, big, 2, wbig, 2, ebig, 4);
    /* stencil2 of 106 elements: the arrays' extents differ, so the
     * second's windows stay inside over fewer columns than the first's */
    static const int w2[2][3] = {{9, 9}, {5, 5}};
    static const int w3[2][3] = {{5, 5, 3}, {3, 3, 3}};
    for (int bi = 0; bi < 4; bi++) {
        check_stencil2("stencil2 strips", 0, bi, 2, (const int64_t[]){13, 150},
                       (const int64_t[]){11, 160}, E_F32, E_I32, w2);
        check_stencil2("stencil2 strips", 1, bi, 2, (const int64_t[]){3, 9000},
                       (const int64_t[]){4, 8200}, E_F64, E_F64, w2);
        check_stencil2("stencil2 strips", 2, bi, 3, (const int64_t[]){4, 6, 70},
                       (const int64_t[]){5, 5, 66}, E_I32, E_I8, w3);
    }
    close_both();
}
END_TEST

/* ---- unit, reshape, replicate, slice ------------------------------------------ */

typedef struct shape_arg {
    int rank;
    int64_t sh[4];
    int how; /* 0: of the parameter; 1: of a map over it (fused);
                       2: a map over the result */
} shape_arg;

/* x + 1 in x's type (bool: not), component-wise for tuples. */
static weft_acc *map_inc(weft_program *p, weft_acc *a)
{
    weft_type t = weft_acc_type(a);
    weft_fun *f = weft_fun1(p, t);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *y;
    if (t == WEFT_BOOL) {
        y = weft_not(x);
    } else if (t >= WEFT_I8 && t <= WEFT_F64) {
        y = weft_add(x, weft_convert(weft_i32(p, 1), t));
    } else {
        y = x; /* tuples pass through */
    }
    weft_fun_return(f, y);
    return weft_map(f, a);
}

static weft_exp *shape_exp(weft_program *p, int rank, const int64_t *sh)
{
    weft_exp *c[4];
    for (int d = 0; d < rank; d++) {
        c[d] = weft_i64(p, sh[d]);
    }
    return weft_index(p, rank, c);
}

static int build_reshape(weft_program *p, weft_acc **param, const void *argp,
                         weft_acc **res)
{
    const shape_arg *sa = argp;
    weft_acc *a = sa->how == 1 ? map_inc(p, param[0]) : param[0];
    weft_acc *r = weft_reshape(shape_exp(p, sa->rank, sa->sh), a);
    res[0] = sa->how == 2 ? map_inc(p, r) : r;
    return 1;
}

START_TEST(test_reshape)
{
    static const struct {
        int rank_in;
        int64_t in[3];
        int rank;
        int64_t out[4];
        int want;
    } cases[] = {
        {1, {12}, 2, {3, 4}, WEFT_OK},
        {2, {3, 4}, 3, {2, 2, 3}, WEFT_OK},
        {1, {0}, 2, {0, 5}, WEFT_OK},
        {3, {2, 3, 4}, 1, {24}, WEFT_OK},
        {1, {1}, 0, {0}, WEFT_OK},
        {2, {1, 1}, 4, {1, 1, 1, 1}, WEFT_OK},
        {1, {4099}, 2, {1, 4099}, WEFT_OK},
        {1, {3000000}, 2, {1000, 3000}, WEFT_OK},
        {1, {12}, 2, {5, 3}, WEFT_ERR_RESHAPE_SIZE},
        {1, {0}, 2, {-1, 0}, WEFT_ERR_BAD_SHAPE},
        {2, {2, 2}, 1, {5}, WEFT_ERR_RESHAPE_SIZE},
    };
    static const int elts[] = {E_I32, E_F64, E_BOOL, E_TRIPLE,
                               E_I8,  E_F16, E_U16,  E_PAIR};
    open_both();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int how = 0; how < 3; how++) {
            shape_arg sa = {.rank = cases[c].rank, .how = how};
            memcpy(sa.sh, cases[c].out, sizeof sa.sh);
            input in = {.elt = elts[(c + (size_t)how) % 8],
                        .rank = cases[c].rank_in};
            memcpy(in.shape, cases[c].in, sizeof cases[c].in);
            char what[64];
            snprintf(what, sizeof what, "reshape case %zu how %d", c, how);
            check_both(what, &in, 1, build_reshape, &sa, cases[c].want);
        }
    }
    close_both();
}
END_TEST

/* A reshape of a zipWith of arrays of different shapes (the general
 * variant of the fused input). */
static int build_reshape_zip(weft_program *p, weft_acc **param,
                             const void *argp, weft_acc **res)
{
    (void)argp;
    weft_fun *f = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(f, weft_sub(weft_arg(f, 0), weft_arg(f, 1)));
    weft_acc *z = weft_zipwith(f, param[0], param[1]);
    res[0] = weft_reshape(weft_index1(weft_size(z)), z);
    return 1;
}

START_TEST(test_reshape_zip)
{
    open_both();
    input in[2] = {{.elt = E_I32, .rank = 2, .shape = {3, 40}},
                   {.elt = E_I32, .rank = 2, .shape = {5, 31}}};
    check_both("reshape of a zipWith", in, 2, build_reshape_zip, NULL, WEFT_OK);
    input eq[2] = {{.elt = E_I32, .rank = 2, .shape = {301, 400}},
                   {.elt = E_I32, .rank = 2, .shape = {301, 400}}};
    check_both("reshape of a zipWith (equal)", eq, 2, build_reshape_zip, NULL,
               WEFT_OK);
    close_both();
}
END_TEST

/* A replicate / slice specification: for each entry, -1000 is `all`,
 * -2000 is (size of a) - 1 computed at run time, else that i64. */
typedef struct spec_arg {
    int n;
    int64_t spec[4];
    int how;
} spec_arg;

#define ALL (-1000)
#define SIZE_M1 (-2000)
#define NEG_SIZE (-3000)

static void make_spec(weft_program *p, weft_acc *a, const spec_arg *sa,
                      weft_exp **spec)
{
    for (int i = 0; i < sa->n; i++) {
        if (sa->spec[i] == ALL) {
            spec[i] = weft_all(p);
        } else if (sa->spec[i] == SIZE_M1) {
            spec[i] = weft_sub(weft_size(a), weft_i64(p, 1));
        } else if (sa->spec[i] == NEG_SIZE) {
            spec[i] = weft_sub(weft_i64(p, 0), weft_size(a));
        } else {
            spec[i] = weft_i64(p, sa->spec[i]);
        }
    }
}

static int build_replicate(weft_program *p, weft_acc **param, const void *argp,
                           weft_acc **res)
{
    const spec_arg *sa = argp;
    weft_exp *spec[4];
    make_spec(p, param[0], sa, spec);
    weft_acc *a = sa->how == 1 ? map_inc(p, param[0]) : param[0];
    weft_acc *r = weft_replicate(sa->n, spec, a);
    res[0] = sa->how == 2 ? map_inc(p, r) : r;
    return 1;
}

static int build_slice(weft_program *p, weft_acc **param, const void *argp,
                       weft_acc **res)
{
    const spec_arg *sa = argp;
    weft_exp *spec[4];
    make_spec(p, param[0], sa, spec);
    weft_acc *a = sa->how == 1 ? map_inc(p, param[0]) : param[0];
    weft_acc *r = weft_slice(a, sa->n, spec);
    res[0] = sa->how == 2 ? map_inc(p, r) : r;
    return 1;
}

START_TEST(test_replicate)
{
    static const struct {
        int rank;
        int64_t in[3];
        int n;
        int64_t spec[4];
        int want;
    } cases[] = {
        {1, {7}, 2, {3, ALL}, WEFT_OK},
        {1, {7}, 2, {ALL, 4}, WEFT_OK},
        {2, {3, 5}, 4, {2, ALL, 3, ALL}, WEFT_OK},
        {0, {0}, 1, {5}, WEFT_OK},
        {0, {0}, 3, {2, 3, 4}, WEFT_OK},
        {1, {0}, 2, {ALL, 9}, WEFT_OK},
        {1, {9}, 2, {0, ALL}, WEFT_OK},
        {1, {13}, 2, {ALL, SIZE_M1}, WEFT_OK},
        {3, {2, 3, 5}, 4, {ALL, ALL, 2, ALL}, WEFT_OK},
        {1, {1000}, 2, {ALL, 2003}, WEFT_OK},
        {1, {7}, 2, {NEG_SIZE, ALL}, WEFT_ERR_BAD_SHAPE},
        {1,
         {7},
         3,
         {ALL, (int64_t)1 << 40, (int64_t)1 << 40},
         WEFT_ERR_BAD_SHAPE},
    };
    static const int elts[] = {E_F32, E_I64, E_PAIR,  E_BOOL,
                               E_I8,  E_F16, E_TRIPLE};
    open_both();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int how = 0; how < 3; how++) {
            spec_arg sa = {.n = cases[c].n, .how = how};
            memcpy(sa.spec, cases[c].spec, sizeof sa.spec);
            input in = {.elt = elts[(c + (size_t)how) % 7],
                        .rank = cases[c].rank};
            memcpy(in.shape, cases[c].in, sizeof cases[c].in);
            char what[64];
            snprintf(what, sizeof what, "replicate case %zu how %d", c, how);
            check_both(what, &in, 1, build_replicate, &sa, cases[c].want);
        }
    }
    close_both();
}
END_TEST

START_TEST(test_slice)
{
    static const struct {
        int rank;
        int64_t in[3];
        int64_t spec[4];
        int want;
    } cases[] = {
        {3, {4, 5, 6}, {ALL, 1, ALL}, WEFT_OK},
        {3, {4, 5, 6}, {3, 4, ALL}, WEFT_OK},
        {3, {4, 5, 6}, {ALL, ALL, ALL}, WEFT_OK},
        {3, {4, 5, 6}, {0, 0, 5}, WEFT_OK},
        {1, {17}, {SIZE_M1}, WEFT_OK},
        {2, {0, 5}, {ALL, 2}, WEFT_OK},
        {2, {3, 7}, {ALL, SIZE_M1}, WEFT_ERR_SLICE_INDEX},
        {2, {3, 7}, {3, ALL}, WEFT_ERR_SLICE_INDEX},
        {2, {3, 7}, {NEG_SIZE, ALL}, WEFT_ERR_SLICE_INDEX},
        {2, {0, 5}, {0, ALL}, WEFT_ERR_SLICE_INDEX},
        {2, {1500, 1501}, {ALL, 700}, WEFT_OK},
        {3, {3, 1000, 1001}, {1, ALL, ALL}, WEFT_OK},
    };
    static const int elts[] = {E_I32, E_TRIPLE, E_F64, E_BOOL, E_U16, E_PAIR};
    open_both();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int how = 0; how < 3; how++) {
            spec_arg sa = {.n = cases[c].rank, .how = how};
            memcpy(sa.spec, cases[c].spec, sizeof sa.spec);
            input in = {.elt = elts[(c + (size_t)how) % 6],
                        .rank = cases[c].rank};
            memcpy(in.shape, cases[c].in, sizeof cases[c].in);
            char what[64];
            snprintf(what, sizeof what, "slice case %zu how %d", c, how);
            check_both(what, &in, 1, build_slice, &sa, cases[c].want);
        }
    }
    close_both();
}
END_TEST

/* unit of a scalar computed from the input, of a tuple, and of a fold's
 * result. */
static int build_unit(weft_program *p, weft_acc **param, const void *argp,
                      weft_acc **res)
{
    (void)argp;
    weft_acc *a = param[0];
    weft_fun *f = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_arg(f, 1)));
    weft_exp *sum = weft_the(weft_fold_all(f, weft_i32(p, 0), a));
    weft_exp *tup =
        weft_tuple(p, 3,
                   (weft_exp *const[]){weft_size(a), weft_f32(p, 1.5f),
                                       weft_lt(sum, weft_i32(p, 0))});
    res[0] = weft_unit(weft_add(sum, weft_convert(weft_size(a), WEFT_I32)));
    res[1] = weft_unit(tup);
    return 2;
}

START_TEST(test_unit)
{
    open_both();
    static const int64_t ns[] = {0, 1, 5, 100003};
    for (int i = 0; i < 4; i++) {
        input in = {.elt = E_I32, .rank = 1, .shape = {ns[i]}};
        check_both("unit", &in, 1, build_unit, NULL, WEFT_OK);
    }
    close_both();
}
END_TEST

static Suite *cpu_stencil_suite(void)
{
    Suite *s = suite_create("cpu_stencil");
    TCase *ts = tcase_create("stencil");
    tcase_set_timeout(ts, 240);
    tcase_add_test(ts, test_stencil_rank1);
    tcase_add_test(ts, test_stencil_rank2);
    tcase_add_test(ts, test_stencil_rank3);
    tcase_add_test(ts, test_stencil_tiny);
    tcase_add_test(ts, test_stencil2);
    tcase_add_test(ts, test_stencil_large);
    tcase_add_test(ts, test_stencil_tiles);
    tcase_add_test(ts, test_stencil2_tiles);
    tcase_add_test(ts, test_stencil_tiles3);
    tcase_add_test(ts, test_stencil_edge_rows);
    tcase_add_test(ts, test_stencil_strips);
    suite_add_tcase(s, ts);
    TCase *tr = tcase_create("reshape");
    tcase_set_timeout(tr, 120);
    tcase_add_test(tr, test_reshape);
    tcase_add_test(tr, test_reshape_zip);
    tcase_add_test(tr, test_replicate);
    tcase_add_test(tr, test_slice);
    tcase_add_test(tr, test_unit);
    suite_add_tcase(s, tr);
    return s;
}

TU_MAIN(cpu_stencil_suite)
