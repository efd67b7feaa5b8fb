/*
 * tests/test_dlpack.c: device arrays and DLPack exchange (weft.h, "Device
 * arrays and DLPack") on the interpreter and the CPU; CMake builds it again
 * as test_ptx_dlpack (-DDT_BACKEND=WEFT_BACKEND_PTX), which runs the GPU
 * cases instead and is skipped where there is no GPU.
 *
 * The test is a DLPack producer and consumer of its own: it declares the
 * DLPack 1.x structs from the specification (as any C consumer without
 * dlpack.h would), independently of weft's lib/dlpack_abi.h, and checks
 * their layout.
 *
 * interp and cpu:
 *   roundtrip        a host tensor in, a run, results out: zero copy both
 *                    ways (pointer equality), each deleter called once
 *   refused          bad version, dtypes, devices, ndim, shapes, flags:
 *                    the right status, *out NULL, the deleter not called
 *   dtypes           every dtype weft takes, both ways; a tuple's leaves
 *   strides          compact strides in place, others refused or copied
 *                    (transposed, reversed) with WEFT_DLPACK_COPY
 *   offset           byte_offset in place; a misaligned one refused or
 *                    copied
 *   rank0_empty      a rank-0 tensor (NULL shape) and an empty one
 *   read_only        a read-only tensor is an input, never an output, and
 *                    is exported read-only
 *   run_into         outputs written into created and wrapped arrays by
 *                    the kernel itself (no output-sized allocation during
 *                    the run, counted by the context's allocator), outputs
 *                    copied where they are not computed (an input
 *                    returned, an output that is also an input)
 *   run_into_shared  a result that the program also uses (let-bound at
 *                    the top) is still written in place
 *   run_into_refused shape, type, rank mismatches, an array twice
 *   no_device        wrap_device, device_ptr, kDLCUDA export,
 *                    weft_context_stream refused; weft_array_wait
 *                    returns at once; no driver calls counted
 * ptx (test_ptx_dlpack; cuMemAlloc through the driver, opened here with
 * dlopen, plays the producer):
 *   ptx_device       device buffers wrapped, a run into a device array,
 *                    results exported as CUDA tensors: no byte crosses the
 *                    bus (weft_context_stats), values right after an
 *                    explicit download, release callbacks called once
 *   ptx_dlpack_cuda  kDLCUDA tensors in (zero copy; another ordinal
 *                    refused; strided copied through the host)
 *   ptx_async        weft_run returns, weft_array_wait waits (the times
 *                    are printed, not asserted), values right
 *   ptx_stream       weft_context_stream: the same stream each time;
 *                    CUDA events recorded on it around weft_run complete
 *                    after the run's work; driver calls are counted
 */
#include <dlfcn.h>
#include <stddef.h>
#include <time.h>

#ifdef DT_BACKEND /* set by CMake for test_ptx_dlpack only */
#define DT_IS_PTX 1
#else
#define DT_IS_PTX 0
#endif

#include "tu.h"

/* ---- DLPack 1.x as the specification lays it out ------------------------- */

typedef struct {
    uint32_t major, minor;
} dl_version;
typedef struct {
    int32_t device_type, device_id;
} dl_device;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} dl_dtype;
typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} dl_tensor;
typedef struct DLManagedTensorVersioned {
    dl_version version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    dl_tensor dl_tensor;
} dl_managed;

_Static_assert(offsetof(dl_tensor, shape) == 24, "DLTensor.shape");
_Static_assert(offsetof(dl_tensor, byte_offset) == 40, "DLTensor.byte_offset");
_Static_assert(offsetof(dl_managed, flags) == 24, "flags");
_Static_assert(offsetof(dl_managed, dl_tensor) == 32, "dl_tensor");
_Static_assert(sizeof(dl_managed) == 80, "DLManagedTensorVersioned");

enum {
    DL_INT = 0,
    DL_UINT = 1,
    DL_FLOAT = 2,
    DL_BFLOAT = 4,
    DL_COMPLEX = 5,
    DL_BOOL = 6
};
enum { KDL_CPU = 1, KDL_CUDA = 2, KDL_OPENCL = 4 };
#define DL_READ_ONLY 1u

/* A tensor the test produced: the managed tensor, its shape and strides,
 * and a count of deleter calls. */
typedef struct producer {
    dl_managed m;
    int64_t shape[9], strides[9];
    int deleted;
} producer;

static void count_delete(dl_managed *m)
{
    ((producer *)m->manager_ctx)->deleted++;
}

/* Describe a tensor over data (host unless device_type says otherwise);
 * strides NULL: compact (none given). */
static dl_managed *make_tensor(producer *p, void *data, int32_t device_type,
                               dl_dtype dt, int ndim, const int64_t *shape,
                               const int64_t *strides)
{
    memset(p, 0, sizeof *p);
    p->m.version = (dl_version){1, 1};
    p->m.manager_ctx = p;
    p->m.deleter = count_delete;
    p->m.dl_tensor.data = data;
    p->m.dl_tensor.device = (dl_device){device_type, 0};
    p->m.dl_tensor.ndim = ndim;
    p->m.dl_tensor.dtype = dt;
    for (int d = 0; d < ndim && d < 9; d++) {
        p->shape[d] = shape[d];
        p->strides[d] = strides ? strides[d] : 0;
    }
    p->m.dl_tensor.shape = ndim > 0 ? p->shape : NULL;
    p->m.dl_tensor.strides = strides ? p->strides : NULL;
    return &p->m;
}

static const dl_dtype DT_F32 = {DL_FLOAT, 32, 1};

/* ---- programs ---------------------------------------------------------------- */

/* exe: x -> (map (\v -> v * 2 + 1) x) over f32 of rank `rank`. */
static weft_executable *affine_exe(weft_context *ctx, int rank)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_F32, rank);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(
        f, weft_add(weft_mul(weft_arg(f, 0), weft_f32(p, 2)), weft_f32(p, 1)));
    weft_acc *r = weft_map(f, x);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    return exe;
}

/* Leaf 0 of a as floats, checked against v * 2 + 1 of src (exact: small
 * integers in f32). */
static void expect_affine(weft_array *a, const float *src, int64_t n)
{
    const float *d = weft_array_data(a, 0);
    ck_assert_msg(n == 0 || d != NULL, "%s", weft_last_error());
    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(d[i] == src[i] * 2 + 1, "element %lld: %g, expected %g",
                      (long long)i, (double)d[i], (double)(src[i] * 2 + 1));
    }
}

#if !DT_IS_PTX

static const weft_backend backends[] = TU_BACKENDS;
enum { NBACKENDS = (int)(sizeof backends / sizeof *backends) };

/* A context on backend b; its allocator counts allocations of `watch`
 * bytes (see run_into). */
static size_t watch_bytes;
static int watch_hits;

static void *counting_alloc(void *user, void *ptr, size_t old, size_t n)
{
    (void)user;
    (void)old;
    if (n == 0) {
        free(ptr);
        return NULL;
    }
    if (!ptr && n == watch_bytes) {
        watch_hits++;
    }
    return realloc(ptr, n);
}

static weft_context *open_ctx(weft_backend b)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV | WEFT_FLAG_NO_TIERING;
    cfg.alloc = counting_alloc;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

START_TEST(roundtrip)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        weft_executable *exe = affine_exe(ctx, 2);
        float buf[6] = {0, 1, 2, 3, 4, 5};
        producer p;
        dl_managed *t =
            make_tensor(&p, buf, KDL_CPU, DT_F32, 2, TU_SH(2, 3), NULL);
        weft_array *x = NULL, *r = NULL;
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &x));
        ck_assert_ptr_eq(weft_array_data(x, 0), buf); /* no copy in */
        ck_assert_int_eq(weft_array_extent(x, 1), 3);
        TU_OK(weft_run(exe, &x, 1, &r, 1));
        expect_affine(r, buf, 6);
        /* out: the result's own buffer, then the input's, the caller's */
        dl_managed *o = NULL, *o2 = NULL;
        TU_OK(weft_array_to_dlpack(r, 0, 0, &o));
        ck_assert_ptr_eq(o->dl_tensor.data, weft_array_data(r, 0));
        ck_assert_int_eq(o->version.major, 1);
        ck_assert_int_eq(o->dl_tensor.device.device_type, KDL_CPU);
        ck_assert_int_eq(o->dl_tensor.ndim, 2);
        ck_assert_int_eq(o->dl_tensor.shape[0], 2);
        ck_assert_int_eq(o->dl_tensor.shape[1], 3);
        ck_assert_int_eq(o->dl_tensor.strides[0], 3);
        ck_assert_int_eq(o->dl_tensor.strides[1], 1);
        ck_assert_int_eq(o->dl_tensor.dtype.code, DL_FLOAT);
        ck_assert_int_eq(o->dl_tensor.dtype.bits, 32);
        ck_assert_int_eq(o->dl_tensor.dtype.lanes, 1);
        ck_assert_uint_eq(o->dl_tensor.byte_offset, 0);
        ck_assert_uint_eq(o->flags, 0);
        TU_OK(weft_array_to_dlpack(x, 0, 1, &o2));
        ck_assert_ptr_eq(o2->dl_tensor.data, buf);
        /* the tensors keep their arrays alive */
        weft_array_release(r);
        weft_array_release(x);
        ck_assert_int_eq(p.deleted, 0);
        ck_assert_float_eq(((const float *)o->dl_tensor.data)[5], 11.0f);
        o->deleter(o);
        ck_assert_int_eq(p.deleted, 0);
        o2->deleter(o2); /* the last reference to x: t is deleted */
        ck_assert_int_eq(p.deleted, 1);
        weft_executable_free(exe);
        weft_context_free(ctx);
        ck_assert_int_eq(p.deleted, 1);
    }
}
END_TEST

/* from_dlpack of t must fail with `want`, leave *out NULL and not delete
 * t. */
static void expect_refused(weft_context *ctx, dl_managed *t, unsigned flags,
                           weft_status want, const char *what)
{
    weft_array *a = (weft_array *)&a; /* not NULL: must be cleared */
    weft_status s = weft_array_from_dlpack(ctx, t, flags, &a);
    ck_assert_msg(s == want, "%s: %s (%s), expected %s", what,
                  weft_status_name(s), weft_last_error(),
                  weft_status_name(want));
    ck_assert_msg(a == NULL, "%s: *out not NULL", what);
    ck_assert_msg(((producer *)t->manager_ctx)->deleted == 0,
                  "%s: the deleter was called", what);
    ck_assert_msg(strstr(weft_last_error(), "weft_array_from_dlpack") != NULL,
                  "%s: %s", what, weft_last_error());
}

START_TEST(refused)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        float buf[4] = {0};
        producer p;
        dl_managed *t;
        t = make_tensor(&p, buf, KDL_CPU, DT_F32, 1, TU_SH(4), NULL);
        t->version.major = 0;
        expect_refused(ctx, t, 0, WEFT_ERR_INVALID_ARGUMENT, "version 0");
        t->version.major = 2;
        expect_refused(ctx, t, WEFT_DLPACK_COPY, WEFT_ERR_INVALID_ARGUMENT,
                       "version 2");
        ck_assert_msg(strstr(weft_last_error(), "version 2.1") != NULL, "%s",
                      weft_last_error());
        const dl_dtype bad[] = {
            {DL_COMPLEX, 64, 1}, {DL_BFLOAT, 16, 1}, {DL_FLOAT, 32, 4},
            {DL_BOOL, 16, 1},    {DL_INT, 24, 1},    {DL_FLOAT, 8, 1},
            {3, 64, 1},
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            t = make_tensor(&p, buf, KDL_CPU, bad[i], 1, TU_SH(1), NULL);
            expect_refused(ctx, t, WEFT_DLPACK_COPY, WEFT_ERR_TYPE_MISMATCH,
                           "dtype");
        }
        t = make_tensor(&p, buf, KDL_CUDA, DT_F32, 1, TU_SH(4), NULL);
        expect_refused(ctx, t, 0, WEFT_ERR_BACKEND_UNAVAILABLE, "kDLCUDA");
        expect_refused(ctx, t, WEFT_DLPACK_COPY, WEFT_ERR_BACKEND_UNAVAILABLE,
                       "kDLCUDA copied");
        ck_assert_msg(strstr(weft_last_error(), "kDLCUDA") != NULL, "%s",
                      weft_last_error());
        t = make_tensor(&p, buf, KDL_OPENCL, DT_F32, 1, TU_SH(4), NULL);
        expect_refused(ctx, t, 0, WEFT_ERR_INVALID_ARGUMENT, "OpenCL");
        int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 4};
        t = make_tensor(&p, buf, KDL_CPU, DT_F32, 9, nine, NULL);
        expect_refused(ctx, t, 0, WEFT_ERR_INVALID_ARGUMENT, "ndim 9");
        t = make_tensor(&p, buf, KDL_CPU, DT_F32, 2, TU_SH(2, -2), NULL);
        expect_refused(ctx, t, 0, WEFT_ERR_BAD_SHAPE, "negative extent");
        t = make_tensor(&p, NULL, KDL_CPU, DT_F32, 1, TU_SH(4), NULL);
        expect_refused(ctx, t, 0, WEFT_ERR_NULL_ARGUMENT, "NULL data");
        t = make_tensor(&p, buf, KDL_CPU, DT_F32, 1, TU_SH(4), NULL);
        t->dl_tensor.shape = NULL;
        expect_refused(ctx, t, 0, WEFT_ERR_NULL_ARGUMENT, "NULL shape");
        t = make_tensor(&p, buf, KDL_CPU, DT_F32, 1, TU_SH(4), NULL);
        expect_refused(ctx, t, 8, WEFT_ERR_INVALID_ARGUMENT, "flags");
        weft_array *a = NULL;
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT,
                  weft_array_from_dlpack(ctx, NULL, 0, &a));
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT,
                  weft_array_from_dlpack(NULL, t, 0, &a));
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT,
                  weft_array_from_dlpack(ctx, t, 0, NULL));
        ck_assert_int_eq(p.deleted, 0);
        /* a tensor without a deleter is fine */
        t->deleter = NULL;
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &a));
        weft_array_release(a);
        weft_context_free(ctx);
    }
}
END_TEST

START_TEST(dtypes)
{
    static const struct {
        dl_dtype dt;
        weft_type t;
    } map[] = {
        {{DL_BOOL, 8, 1}, WEFT_BOOL},  {{DL_INT, 8, 1}, WEFT_I8},
        {{DL_INT, 16, 1}, WEFT_I16},   {{DL_INT, 32, 1}, WEFT_I32},
        {{DL_INT, 64, 1}, WEFT_I64},   {{DL_UINT, 8, 1}, WEFT_U8},
        {{DL_UINT, 16, 1}, WEFT_U16},  {{DL_UINT, 32, 1}, WEFT_U32},
        {{DL_UINT, 64, 1}, WEFT_U64},  {{DL_FLOAT, 16, 1}, WEFT_F16},
        {{DL_FLOAT, 32, 1}, WEFT_F32}, {{DL_FLOAT, 64, 1}, WEFT_F64},
    };
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
            uint64_t buf[3] = {0};
            producer p;
            dl_managed *t =
                make_tensor(&p, buf, KDL_CPU, map[i].dt, 1, TU_SH(3), NULL);
            weft_array *a;
            TU_OK(weft_array_from_dlpack(ctx, t, 0, &a));
            ck_assert_int_eq(weft_array_type(a), map[i].t);
            dl_managed *o;
            TU_OK(weft_array_to_dlpack(a, 0, KDL_CPU, &o));
            ck_assert_int_eq(o->dl_tensor.dtype.code, map[i].dt.code);
            ck_assert_int_eq(o->dl_tensor.dtype.bits, map[i].dt.bits);
            ck_assert_int_eq(o->dl_tensor.dtype.lanes, 1);
            weft_array_release(a);
            o->deleter(o);
            ck_assert_int_eq(p.deleted, 1);
        }
        /* a tuple exports leaf by leaf */
        weft_type tt =
            weft_type_tuple(ctx, 2, (const weft_type[]){WEFT_I32, WEFT_F64});
        weft_array *a;
        TU_OK(weft_array_create(ctx, tt, 1, TU_SH(5), &a));
        dl_managed *o;
        TU_OK(weft_array_to_dlpack(a, 1, KDL_CPU, &o));
        ck_assert_int_eq(o->dl_tensor.dtype.code, DL_FLOAT);
        ck_assert_int_eq(o->dl_tensor.dtype.bits, 64);
        ck_assert_ptr_eq(o->dl_tensor.data, weft_array_data(a, 1));
        o->deleter(o);
        TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_array_to_dlpack(a, 2, 1, &o));
        ck_assert_ptr_null(o);
        TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
                  weft_array_to_dlpack(a, -1, 1, &o));
        TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_array_to_dlpack(a, 0, 3, &o));
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_array_to_dlpack(NULL, 0, 1, &o));
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_array_to_dlpack(a, 0, 1, NULL));
        weft_array_release(a);
        weft_context_free(ctx);
    }
}
END_TEST

START_TEST(strides)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        const dl_dtype DT_I32 = {DL_INT, 32, 1};
        int32_t buf[6] = {0, 1, 2, 3, 4, 5}; /* 2 x 3, row-major */
        producer p;
        weft_array *a;
        /* compact strides given explicitly: in place */
        dl_managed *t =
            make_tensor(&p, buf, KDL_CPU, DT_I32, 2, TU_SH(2, 3), TU_SH(3, 1));
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &a));
        ck_assert_ptr_eq(weft_array_data(a, 0), buf);
        weft_array_release(a);
        ck_assert_int_eq(p.deleted, 1);
        /* an extent of 1 may have any stride */
        t = make_tensor(&p, buf, KDL_CPU, DT_I32, 3, TU_SH(1, 3, 2),
                        TU_SH(99, 2, 1));
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &a));
        ck_assert_ptr_eq(weft_array_data(a, 0), buf);
        weft_array_release(a);
        /* the transpose (3 x 2, column-major): refused, or copied */
        t = make_tensor(&p, buf, KDL_CPU, DT_I32, 2, TU_SH(3, 2), TU_SH(1, 3));
        expect_refused(ctx, t, 0, WEFT_ERR_INVALID_ARGUMENT, "transposed");
        ck_assert_msg(strstr(weft_last_error(), "WEFT_DLPACK_COPY") != NULL,
                      "%s", weft_last_error());
        TU_OK(weft_array_from_dlpack(ctx, t, WEFT_DLPACK_COPY, &a));
        ck_assert_int_eq(p.deleted, 1); /* at once: weft copied */
        ck_assert_ptr_ne(weft_array_data(a, 0), buf);
        TU_CHECK_I(ctx, a, 0, 2, TU_SH(3, 2), TU_I(0, 3, 1, 4, 2, 5));
        weft_array_release(a);
        ck_assert_int_eq(p.deleted, 1);
        /* reversed rows of the second column: negative strides reach back
         * from the element at byte_offset */
        t = make_tensor(&p, buf, KDL_CPU, DT_I32, 2, TU_SH(2, 2),
                        TU_SH(-3, -1));
        t->dl_tensor.byte_offset = 5 * sizeof(int32_t);
        expect_refused(ctx, t, 0, WEFT_ERR_INVALID_ARGUMENT, "reversed");
        TU_OK(weft_array_from_dlpack(ctx, t, WEFT_DLPACK_COPY, &a));
        TU_CHECK_I(ctx, a, 0, 2, TU_SH(2, 2), TU_I(5, 4, 2, 1));
        weft_array_release(a);
        weft_context_free(ctx);
    }
}
END_TEST

START_TEST(offset)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        int64_t buf[8] = {10, 11, 12, 13, 14, 15, 16, 17};
        producer p;
        weft_array *a;
        dl_managed *t = make_tensor(&p, buf, KDL_CPU, (dl_dtype){DL_INT, 64, 1},
                                    1, TU_SH(4), NULL);
        t->dl_tensor.byte_offset = 2 * sizeof(int64_t);
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &a));
        ck_assert_ptr_eq(weft_array_data(a, 0), buf + 2);
        TU_CHECK_I(ctx, a, 0, 1, TU_SH(4), TU_I(12, 13, 14, 15));
        weft_array_release(a);
        /* 3 bytes into an i32 buffer: misaligned */
        int32_t w[4] = {0x01020304, 0x05060708, 0x090a0b0c, 0};
        t = make_tensor(&p, w, KDL_CPU, (dl_dtype){DL_INT, 32, 1}, 1, TU_SH(2),
                        NULL);
        t->dl_tensor.byte_offset = 3;
        expect_refused(ctx, t, 0, WEFT_ERR_INVALID_ARGUMENT, "misaligned");
        TU_OK(weft_array_from_dlpack(ctx, t, WEFT_DLPACK_COPY, &a));
        int32_t want[2];
        memcpy(want, (const char *)w + 3, sizeof want);
        TU_CHECK_I(ctx, a, 0, 1, TU_SH(2), TU_I(want[0], want[1]));
        weft_array_release(a);
        ck_assert_int_eq(p.deleted, 1);
        weft_context_free(ctx);
    }
}
END_TEST

START_TEST(rank0_empty)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        float one = 3;
        producer p, q;
        weft_array *a, *r;
        dl_managed *t = make_tensor(&p, &one, KDL_CPU, DT_F32, 0, NULL, NULL);
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &a));
        ck_assert_int_eq(weft_array_rank(a), 0);
        ck_assert_int_eq(weft_array_size(a), 1);
        weft_executable *exe0 = affine_exe(ctx, 0);
        TU_OK(weft_run(exe0, &a, 1, &r, 1));
        TU_CHECK_F(ctx, r, 0, 0, NULL, TU_F(7), 0);
        dl_managed *o;
        TU_OK(weft_array_to_dlpack(r, 0, KDL_CPU, &o));
        ck_assert_int_eq(o->dl_tensor.ndim, 0);
        ck_assert_float_eq(*(const float *)o->dl_tensor.data, 7.0f);
        o->deleter(o);
        weft_array_release(r);
        weft_array_release(a);
        ck_assert_int_eq(p.deleted, 1);
        /* empty: no data at all */
        t = make_tensor(&q, NULL, KDL_CPU, DT_F32, 2, TU_SH(0, 5), TU_SH(7, 9));
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &a));
        ck_assert_int_eq(weft_array_size(a), 0);
        weft_executable *exe2 = affine_exe(ctx, 2);
        TU_OK(weft_run(exe2, &a, 1, &r, 1));
        TU_OK(weft_array_to_dlpack(r, 0, 0, &o));
        ck_assert_int_eq(o->dl_tensor.ndim, 2);
        ck_assert_int_eq(o->dl_tensor.shape[0], 0);
        ck_assert_int_eq(o->dl_tensor.shape[1], 5);
        o->deleter(o);
        weft_array_release(r);
        weft_array_release(a);
        ck_assert_int_eq(q.deleted, 1);
        weft_executable_free(exe0);
        weft_executable_free(exe2);
        weft_context_free(ctx);
    }
}
END_TEST

START_TEST(read_only)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        weft_executable *exe = affine_exe(ctx, 1);
        float buf[3] = {1, 2, 3}, dst[3] = {0};
        producer p, q;
        weft_array *x, *y, *r;
        dl_managed *t =
            make_tensor(&p, buf, KDL_CPU, DT_F32, 1, TU_SH(3), NULL);
        t->flags = DL_READ_ONLY;
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &x));
        TU_OK(weft_run(exe, &x, 1, &r, 1)); /* an input: fine */
        expect_affine(r, buf, 3);
        t = make_tensor(&q, dst, KDL_CPU, DT_F32, 1, TU_SH(3), NULL);
        t->flags = DL_READ_ONLY;
        TU_OK(weft_array_from_dlpack(ctx, t, 0, &y));
        TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_run_into(exe, &x, 1, &y, 1));
        ck_assert_msg(strstr(weft_last_error(), "read-only") != NULL, "%s",
                      weft_last_error());
        ck_assert_float_eq(dst[0], 0.0f);
        dl_managed *o;
        TU_OK(weft_array_to_dlpack(x, 0, 0, &o));
        ck_assert_uint_eq(o->flags & DL_READ_ONLY, DL_READ_ONLY);
        ck_assert_ptr_eq(o->dl_tensor.data, buf);
        o->deleter(o);
        weft_array_release(r);
        weft_array_release(x);
        weft_array_release(y);
        ck_assert_int_eq(p.deleted + q.deleted, 2);
        weft_executable_free(exe);
        weft_context_free(ctx);
    }
}
END_TEST

static void release_count(void *user)
{
    (*(int *)user)++;
}

/* exe: (x, y) -> (map (*2+1) x, x, fold (+) 0 y): a kernel's output, an
 * input returned as it is, and a reduction (rank 2 to 1). */
static weft_executable *three_exe(weft_context *ctx)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_F32, 1);
    weft_acc *y = weft_param(p, WEFT_I64, 2);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(
        f, weft_add(weft_mul(weft_arg(f, 0), weft_f32(p, 2)), weft_f32(p, 1)));
    weft_acc *res[3] = {
        weft_map(f, x), x,
        weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64), weft_i64(p, 0), y)};
    weft_executable *exe;
    TU_OK(weft_compile(p, res, 3, &exe));
    weft_program_free(p);
    return exe;
}

START_TEST(run_into)
{
    enum { N = 1000, ROWS = 3, COLS = 700 };
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        weft_executable *exe = three_exe(ctx);
        static float xs[N], mine[N], copy[N];
        static int64_t ys[ROWS * COLS];
        for (int i = 0; i < N; i++) {
            xs[i] = (float)(i % 97);
            mine[i] = -1;
        }
        for (int i = 0; i < ROWS * COLS; i++) {
            ys[i] = i;
        }
        weft_array *in[2], *out[3];
        in[0] = tu_arr_host(ctx, WEFT_F32, 1, TU_SH(N), (const void *[]){xs});
        in[1] = tu_arr_host(ctx, WEFT_I64, 2, TU_SH(ROWS, COLS),
                            (const void *[]){ys});
        int released = 0;
        TU_OK(weft_array_wrap(ctx, WEFT_F32, 1, TU_SH(N), (void *[]){mine},
                              release_count, &released, &out[0]));
        TU_OK(weft_array_wrap(ctx, WEFT_F32, 1, TU_SH(N), (void *[]){copy},
                              NULL, NULL, &out[1]));
        TU_OK(weft_array_create(ctx, WEFT_I64, 1, TU_SH(ROWS), &out[2]));
        void *sums = weft_array_data(out[2], 0);
        /* no buffer of an output's size is allocated: the kernels write
         * into the caller's arrays (the copy of x goes into `copy`) */
        watch_bytes = N * sizeof(float);
        watch_hits = 0;
        TU_OK(weft_run_into(exe, in, 2, out, 3));
        ck_assert_int_eq(watch_hits, 0);
        expect_affine(out[0], xs, N);
        ck_assert_ptr_eq(weft_array_data(out[0], 0), mine);
        ck_assert_float_eq(mine[N - 1], xs[N - 1] * 2 + 1);
        ck_assert_mem_eq(copy, xs, sizeof xs);
        ck_assert_ptr_eq(weft_array_data(out[2], 0), sums);
        int64_t want[ROWS];
        for (int r = 0; r < ROWS; r++) {
            want[r] =
                (int64_t)COLS * (r * COLS) + (int64_t)COLS * (COLS - 1) / 2;
        }
        TU_CHECK_I(ctx, out[2], 0, 1, TU_SH(ROWS), want);
        /* weft_run itself allocates them: the count above can fail */
        weft_array *res[3];
        watch_hits = 0;
        TU_OK(weft_run(exe, in, 2, res, 3));
        ck_assert_int_ge(watch_hits, 1);
        tu_release_all(res, 3);
        /* an output that is also an input: computed aside, copied in */
        weft_array *inout[2] = {out[0], in[1]};
        weft_array *outs2[3] = {out[0], out[1], out[2]};
        TU_OK(weft_run_into(exe, inout, 2, outs2, 3));
        for (int i = 0; i < N; i++) {
            float once = xs[i] * 2 + 1;
            ck_assert_float_eq(mine[i], once * 2 + 1);
            ck_assert_float_eq(copy[i], once);
        }
        ck_assert_int_eq(weft_array_wait(out[0]), WEFT_OK);
        tu_release_all(out, 3);
        tu_release_all(in, 2);
        ck_assert_int_eq(released, 1);
        weft_executable_free(exe);
        weft_context_free(ctx);
    }
}
END_TEST

/* A result also used by the program (bound by a let at the top): still
 * written in place. */
START_TEST(run_into_shared)
{
    enum { N = 1000 };
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        weft_program *p;
        TU_OK(weft_program_create(ctx, &p));
        weft_acc *x = weft_param(p, WEFT_F32, 1);
        weft_fun *f = weft_fun1(p, WEFT_F32);
        weft_fun_return(f, weft_add(weft_mul(weft_arg(f, 0), weft_f32(p, 2)),
                                    weft_f32(p, 1)));
        weft_acc *m = weft_map(f, x);
        weft_acc *res[2] = {m, weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32),
                                         weft_f32(p, 0), m)};
        weft_executable *exe;
        TU_OK(weft_compile(p, res, 2, &exe));
        weft_program_free(p);
        static float xs[N], mine[N];
        for (int i = 0; i < N; i++) {
            xs[i] = (float)(i % 7);
        }
        weft_array *in =
            tu_arr_host(ctx, WEFT_F32, 1, TU_SH(N), (const void *[]){xs});
        weft_array *out[2];
        TU_OK(weft_array_wrap(ctx, WEFT_F32, 1, TU_SH(N), (void *[]){mine},
                              NULL, NULL, &out[0]));
        TU_OK(weft_array_create(ctx, WEFT_F32, 0, NULL, &out[1]));
        watch_bytes = N * sizeof(float);
        watch_hits = 0;
        TU_OK(weft_run_into(exe, &in, 1, out, 2));
        ck_assert_int_eq(watch_hits, 0);
        expect_affine(out[0], xs, N);
        double sum = 0; /* exact: integers below 2^24 */
        for (int i = 0; i < N; i++) {
            sum += xs[i] * 2 + 1;
        }
        TU_CHECK_F(ctx, out[1], 0, 0, NULL, TU_F(sum), 0);
        tu_release_all(out, 2);
        weft_array_release(in);
        weft_executable_free(exe);
        weft_context_free(ctx);
    }
}
END_TEST

START_TEST(run_into_refused)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        weft_executable *exe = affine_exe(ctx, 1);
        float xs[4] = {1, 2, 3, 4}, dst[5] = {9, 9, 9, 9, 9};
        weft_array *x =
            tu_arr_host(ctx, WEFT_F32, 1, TU_SH(4), (const void *[]){xs});
        weft_array *o5, *oi, *o2;
        TU_OK(weft_array_wrap(ctx, WEFT_F32, 1, TU_SH(5), (void *[]){dst}, NULL,
                              NULL, &o5));
        TU_STATUS(WEFT_ERR_BAD_SHAPE, weft_run_into(exe, &x, 1, &o5, 1));
        ck_assert_msg(strstr(weft_last_error(), "[5]") != NULL &&
                          strstr(weft_last_error(), "[4]") != NULL,
                      "%s", weft_last_error());
        for (int i = 0; i < 5; i++) {
            ck_assert_float_eq(dst[i], 9.0f); /* not written */
        }
        TU_OK(weft_array_create(ctx, WEFT_I32, 1, TU_SH(4), &oi));
        TU_STATUS(WEFT_ERR_TYPE_MISMATCH, weft_run_into(exe, &x, 1, &oi, 1));
        TU_OK(weft_array_create(ctx, WEFT_F32, 2, TU_SH(2, 2), &o2));
        TU_STATUS(WEFT_ERR_RANK_MISMATCH, weft_run_into(exe, &x, 1, &o2, 1));
        TU_STATUS(WEFT_ERR_ARGUMENT_COUNT, weft_run_into(exe, &x, 1, &o5, 2));
        weft_array *none = NULL;
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_run_into(exe, &x, 1, &none, 1));
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_run_into(NULL, &x, 1, &o5, 1));
        /* one array for two outputs */
        weft_executable *ex3 = three_exe(ctx);
        weft_array *y;
        TU_OK(weft_array_create(ctx, WEFT_I64, 2, TU_SH(1, 1), &y));
        weft_array *in2[2] = {x, y};
        weft_array *o4;
        TU_OK(weft_array_create(ctx, WEFT_F32, 1, TU_SH(4), &o4));
        weft_array *twice[3] = {o4, o4, o2};
        TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
                  weft_run_into(ex3, in2, 2, twice, 3));
        weft_array_release(y);
        weft_array_release(o4);
        weft_executable_free(ex3);
        weft_array_release(x);
        weft_array_release(o5);
        weft_array_release(oi);
        weft_array_release(o2);
        weft_executable_free(exe);
        weft_context_free(ctx);
    }
}
END_TEST

START_TEST(no_device)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi]);
        int released = 0;
        void *fake = (void *)(uintptr_t)0x1000;
        weft_array *a = (weft_array *)&a;
        TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
                  weft_array_wrap_device(ctx, WEFT_F32, 1, TU_SH(4),
                                         (void *const[]){fake}, release_count,
                                         &released, &a));
        ck_assert_ptr_null(a);
        ck_assert_int_eq(released, 0);
        TU_OK(weft_array_create(ctx, WEFT_F32, 1, TU_SH(4), &a));
        void *p = fake;
        TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
                  weft_array_device_ptr(a, 0, &p));
        ck_assert_ptr_null(p);
        dl_managed *o = (dl_managed *)&o;
        TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
                  weft_array_to_dlpack(a, 0, KDL_CUDA, &o));
        ck_assert_ptr_null(o);
        TU_OK(weft_array_wait(a));
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_array_wait(NULL));
        void *stream = fake;
        TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
                  weft_context_stream(ctx, &stream));
        ck_assert_ptr_null(stream);
        TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_context_stream(ctx, NULL));
        weft_stats st;
        TU_OK(weft_context_stats(ctx, &st));
        ck_assert_uint_eq(st.driver_calls, 0);
        weft_array_release(a);
        weft_context_free(ctx);
    }
}
END_TEST

static Suite *dlpack_suite(void)
{
    Suite *s = suite_create("dlpack");
    TCase *t = tcase_create("host");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, roundtrip);
    tcase_add_test(t, refused);
    tcase_add_test(t, dtypes);
    tcase_add_test(t, strides);
    tcase_add_test(t, offset);
    tcase_add_test(t, rank0_empty);
    tcase_add_test(t, read_only);
    tcase_add_test(t, run_into);
    tcase_add_test(t, run_into_shared);
    tcase_add_test(t, run_into_refused);
    tcase_add_test(t, no_device);
    suite_add_tcase(s, t);
    return s;
}

#else /* DT_IS_PTX */

/* ---- the producer: the CUDA driver, opened here ------------------------------ */

typedef int cu_result;
static struct {
    void *lib;
    cu_result (*init)(unsigned);
    cu_result (*device_get)(int *, int);
    cu_result (*retain)(void **, int);
    cu_result (*release)(int);
    cu_result (*set_current)(void *);
    cu_result (*mem_alloc)(uint64_t *, size_t);
    cu_result (*mem_free)(uint64_t);
    cu_result (*htod)(uint64_t, const void *, size_t);
    cu_result (*dtoh)(void *, uint64_t, size_t);
    cu_result (*event_create)(void **, unsigned);
    cu_result (*event_record)(void *, void *);
    cu_result (*event_sync)(void *);
    cu_result (*event_ms)(float *, void *, void *);
    cu_result (*event_destroy)(void *);
    cu_result (*stream_query)(void *);
    int dev;
} cu;

#define CU_OK(call) ck_assert_msg((call) == 0, "%s failed", #call)

/* Open the driver and make device 0's primary context (weft's) current on
 * this thread, as a CUDA runtime would. */
static void cu_open(void)
{
    if (cu.lib) {
        return;
    }
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW);
    ck_assert_msg(cu.lib != NULL, "%s", dlerror());
#define CU_SYM(field, name)                                                    \
    *(void **)&cu.field = dlsym(cu.lib, name);                                 \
    ck_assert_msg(cu.field != NULL, "no %s", name)
    CU_SYM(init, "cuInit");
    CU_SYM(device_get, "cuDeviceGet");
    CU_SYM(retain, "cuDevicePrimaryCtxRetain");
    CU_SYM(release, "cuDevicePrimaryCtxRelease");
    CU_SYM(set_current, "cuCtxSetCurrent");
    CU_SYM(mem_alloc, "cuMemAlloc_v2");
    CU_SYM(mem_free, "cuMemFree_v2");
    CU_SYM(htod, "cuMemcpyHtoD_v2");
    CU_SYM(dtoh, "cuMemcpyDtoH_v2");
    CU_SYM(event_create, "cuEventCreate");
    CU_SYM(event_record, "cuEventRecord");
    CU_SYM(event_sync, "cuEventSynchronize");
    CU_SYM(event_ms, "cuEventElapsedTime");
    CU_SYM(event_destroy, "cuEventDestroy_v2");
    CU_SYM(stream_query, "cuStreamQuery");
#undef CU_SYM
    void *c = NULL;
    CU_OK(cu.init(0));
    CU_OK(cu.device_get(&cu.dev, 0));
    CU_OK(cu.retain(&c, cu.dev));
    CU_OK(cu.set_current(c));
}

static weft_context *open_ptx(void)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.device = 0;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    cu_open();
    return ctx;
}

/* A device buffer holding n floats src[0..n-1] (src NULL: uninitialised). */
static uint64_t device_floats(const float *src, size_t n)
{
    uint64_t p = 0;
    CU_OK(cu.mem_alloc(&p, n * sizeof(float)));
    if (src) {
        CU_OK(cu.htod(p, src, n * sizeof(float)));
    }
    return p;
}

static void device_release(void *user)
{
    (*(int *)user)++;
}

static void stats_of(weft_context *ctx, weft_stats *s)
{
    TU_OK(weft_context_stats(ctx, s));
}

START_TEST(ptx_device)
{
    enum { N = 1 << 20 };
    weft_context *ctx = open_ptx();
    weft_executable *exe = affine_exe(ctx, 1);
    static float xs[N], back[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(i % 1001);
    }
    uint64_t din = device_floats(xs, N), dout = device_floats(NULL, N);
    int rel_in = 0, rel_out = 0;
    weft_array *x, *y, *r;
    weft_stats s0, s1;
    stats_of(ctx, &s0);
    TU_OK(weft_array_wrap_device(ctx, WEFT_F32, 1, TU_SH(N),
                                 (void *const[]){(void *)(uintptr_t)din},
                                 device_release, &rel_in, &x));
    TU_OK(weft_array_wrap_device(ctx, WEFT_F32, 1, TU_SH(N),
                                 (void *const[]){(void *)(uintptr_t)dout},
                                 device_release, &rel_out, &y));
    /* into the caller's device buffer, then a result of weft's own */
    TU_OK(weft_run_into(exe, &x, 1, &y, 1));
    TU_OK(weft_array_wait(y));
    TU_OK(weft_run(exe, &y, 1, &r, 1));
    void *p = NULL;
    TU_OK(weft_array_device_ptr(y, 0, &p));
    ck_assert_ptr_eq(p, (void *)(uintptr_t)dout);
    dl_managed *ty, *tr;
    TU_OK(weft_array_to_dlpack(y, 0, 0, &ty));
    ck_assert_int_eq(ty->dl_tensor.device.device_type, KDL_CUDA);
    ck_assert_int_eq(ty->dl_tensor.device.device_id, 0);
    ck_assert_ptr_eq(ty->dl_tensor.data, (void *)(uintptr_t)dout);
    TU_OK(weft_array_to_dlpack(r, 0, KDL_CUDA, &tr));
    ck_assert_int_eq(tr->dl_tensor.device.device_type, KDL_CUDA);
    stats_of(ctx, &s1);
    ck_assert_uint_eq(s1.bytes_uploaded - s0.bytes_uploaded, 0);
    ck_assert_uint_eq(s1.bytes_downloaded - s0.bytes_downloaded, 0);
    /* the exported address is device memory holding the values */
    CU_OK(cu.dtoh(back, (uint64_t)(uintptr_t)tr->dl_tensor.data,
                  N * sizeof(float)));
    for (int i = 0; i < N; i++) {
        float once = xs[i] * 2 + 1;
        ck_assert_msg(back[i] == once * 2 + 1, "r[%d] = %g", i,
                      (double)back[i]);
    }
    CU_OK(cu.dtoh(back, dout, N * sizeof(float)));
    for (int i = 0; i < N; i++) {
        ck_assert_msg(back[i] == xs[i] * 2 + 1, "y[%d] = %g", i,
                      (double)back[i]);
    }
    /* an explicit download into host buffers weft makes */
    expect_affine(y, xs, N);
    stats_of(ctx, &s1);
    ck_assert_uint_eq(s1.bytes_downloaded - s0.bytes_downloaded,
                      N * sizeof(float));
    ty->deleter(ty);
    tr->deleter(tr);
    weft_array_release(r);
    weft_array_release(x);
    ck_assert_int_eq(rel_in, 1);
    ck_assert_int_eq(rel_out, 0);
    weft_array_release(y);
    ck_assert_int_eq(rel_out, 1);
    CU_OK(cu.mem_free(din));
    CU_OK(cu.mem_free(dout));
    weft_executable_free(exe);
    weft_context_free(ctx);
}
END_TEST

START_TEST(ptx_dlpack_cuda)
{
    enum { N = 4096 };
    weft_context *ctx = open_ptx();
    weft_executable *exe = affine_exe(ctx, 1);
    static float xs[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(i % 31);
    }
    uint64_t din = device_floats(xs, N);
    producer p;
    dl_managed *t = make_tensor(&p, (void *)(uintptr_t)din, KDL_CUDA, DT_F32, 1,
                                TU_SH(N), NULL);
    t->dl_tensor.device.device_id = 7;
    weft_array *x, *r;
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_array_from_dlpack(ctx, t, 0, &x));
    ck_assert_int_eq(p.deleted, 0);
    t->dl_tensor.device.device_id = 0;
    weft_stats s0, s1;
    stats_of(ctx, &s0);
    TU_OK(weft_array_from_dlpack(ctx, t, 0, &x));
    TU_OK(weft_run(exe, &x, 1, &r, 1));
    dl_managed *o;
    TU_OK(weft_array_to_dlpack(r, 0, 0, &o));
    ck_assert_int_eq(o->dl_tensor.device.device_type, KDL_CUDA);
    stats_of(ctx, &s1);
    ck_assert_uint_eq(s1.bytes_uploaded - s0.bytes_uploaded, 0);
    ck_assert_uint_eq(s1.bytes_downloaded - s0.bytes_downloaded, 0);
    expect_affine(r, xs, N);
    o->deleter(o);
    weft_array_release(r);
    weft_array_release(x);
    ck_assert_int_eq(p.deleted, 1);
    /* every other element: copied through the host with the flag */
    t = make_tensor(&p, (void *)(uintptr_t)din, KDL_CUDA, DT_F32, 1,
                    TU_SH(N / 2), TU_SH(2));
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_array_from_dlpack(ctx, t, 0, &x));
    TU_OK(weft_array_from_dlpack(ctx, t, WEFT_DLPACK_COPY, &x));
    ck_assert_int_eq(p.deleted, 1);
    const float *h = weft_array_data(x, 0);
    for (int i = 0; i < N / 2; i++) {
        ck_assert_float_eq(h[i], xs[2 * i]);
    }
    weft_array_release(x);
    CU_OK(cu.mem_free(din));
    weft_executable_free(exe);
    weft_context_free(ctx);
}
END_TEST

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* map (\x -> rounds times x := sin (x + 1)): a long kernel without a
 * while loop, compiled in ctx. */
static weft_executable *sin_rounds(weft_context *ctx, int rounds)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_exp *v = weft_arg(f, 0);
    for (int i = 0; i < rounds; i++) {
        v = weft_sin(weft_add(v, weft_f32(p, 1)));
    }
    weft_fun_return(f, v);
    weft_acc *res = weft_map(f, x);
    weft_executable *exe;
    TU_OK(weft_compile(p, &res, 1, &exe));
    weft_program_free(p);
    return exe;
}

/* Check that the first and last of n elements of r, computed by
 * sin_rounds from 0, are sin_rounds' value (tolerance 1e-4: the device's
 * sin differs from the host's by a few ulp a round, and the rounds of a
 * contraction keep the error near that). */
static void check_sin_rounds(weft_array *r, int64_t n, int rounds)
{
    float want = 0;
    for (int i = 0; i < rounds; i++) {
        want = sinf(want + 1);
    }
    const float *d = weft_array_data(r, 0);
    ck_assert_ptr_nonnull(d);
    ck_assert_msg(fabsf(d[0] - want) < 1e-4f && fabsf(d[n - 1] - want) < 1e-4f,
                  "%g %g, expected %g", (double)d[0], (double)d[n - 1],
                  (double)want);
}

START_TEST(ptx_async)
{
    /* 256 rounds of sin per element */
    enum { N = 1 << 24 };
    weft_context *ctx = open_ptx();
    weft_executable *exe = sin_rounds(ctx, 256);
    weft_array *a, *r;
    TU_OK(weft_array_create(ctx, WEFT_F32, 1, TU_SH(N), &a));
    TU_OK(weft_run(exe, &a, 1, &r, 1)); /* warm: upload, module */
    weft_array_release(r);
    double t0 = now_ms();
    TU_OK(weft_run(exe, &a, 1, &r, 1));
    double t1 = now_ms();
    TU_OK(weft_array_wait(r));
    double t2 = now_ms();
    printf("ptx_async: weft_run returned after %.3f ms, weft_array_wait "
           "after %.3f ms more\n",
           t1 - t0, t2 - t1);
    check_sin_rounds(r, N, 256); /* every element started from 0 */
    weft_array_release(r);
    weft_array_release(a);
    weft_executable_free(exe);
    weft_context_free(ctx);
}
END_TEST

/* weft_context_stream: one stream for the context's life, on which CUDA
 * events recorded around weft_run time the run: once the second event
 * has completed, the stream is idle (cuStreamQuery) and the result is
 * there; every run makes driver calls, counted in weft_stats. */
START_TEST(ptx_stream)
{
    enum { N = 1 << 20 };
    weft_context *ctx = open_ptx();
    void *stream = NULL, *again = NULL;
    TU_OK(weft_context_stream(ctx, &stream));
    ck_assert_ptr_nonnull(stream);
    TU_OK(weft_context_stream(ctx, &again));
    ck_assert_ptr_eq(stream, again);
    weft_executable *exe = sin_rounds(ctx, 32);
    weft_array *a, *r;
    TU_OK(weft_array_create(ctx, WEFT_F32, 1, TU_SH(N), &a));
    TU_OK(weft_run(exe, &a, 1, &r, 1)); /* warm: upload, module */
    weft_array_release(r);
    weft_stats s0, s1;
    stats_of(ctx, &s0);
    void *e0, *e1;
    CU_OK(cu.event_create(&e0, 0));
    CU_OK(cu.event_create(&e1, 0));
    CU_OK(cu.event_record(e0, stream));
    TU_OK(weft_run(exe, &a, 1, &r, 1));
    CU_OK(cu.event_record(e1, stream));
    CU_OK(cu.event_sync(e1));
    CU_OK(cu.stream_query(stream)); /* 0: nothing left on weft's stream */
    float ms = -1;
    CU_OK(cu.event_ms(&ms, e0, e1));
    ck_assert_msg(ms > 0, "the run took %g ms on the device", (double)ms);
    stats_of(ctx, &s1);
    ck_assert_uint_gt(s1.driver_calls, s0.driver_calls);
    check_sin_rounds(r, N, 32);
    CU_OK(cu.event_destroy(e0));
    CU_OK(cu.event_destroy(e1));
    weft_array_release(r);
    weft_array_release(a);
    weft_executable_free(exe);
    weft_context_free(ctx);
}
END_TEST

/* Sums of device arrays whose base lies 4 bytes past a 16-byte boundary,
 * as a DLPack tensor's byte offset may put it: the PTX fold tests its
 * pointers' alignment and reads scalars there, 128-bit loads where every
 * pointer is aligned (skeletons-ir/ptx/fold.c).  Small integers in f32,
 * so every partial sum is exact (below 2^24) in any grouping. */
START_TEST(ptx_misaligned_fold)
{
    enum { N = (1 << 20) + 3 };
    weft_context *ctx = open_ptx();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_F32, 1), *y = weft_param(p, WEFT_F32, 1);
    weft_acc *res[2] = {
        weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32), weft_f32(p, 0), x),
        weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32), weft_f32(p, 0),
                  weft_zipwith(tu_fun_op2(p, WEFT_OP_MUL, WEFT_F32), x, y)),
    };
    weft_executable *exe;
    TU_OK(weft_compile(p, res, 2, &exe));
    weft_program_free(p);
    static float xs[N + 1], ys[N + 1];
    for (int i = 0; i <= N; i++) {
        xs[i] = (float)(i % 7);
        ys[i] = (float)(i % 3);
    }
    uint64_t dx = device_floats(xs, N + 1), dy = device_floats(ys, N + 1);
    int released = 0;
    /* x and y 0 or 1 element past their (256-byte aligned) buffers: weft's
     * GPU kernels assume 256-byte aligned arrays (FE_DEVICE_ALIGN), so an
     * offset one is refused, with no release call */
    static const int offs[3][2] = {{0, 0}, {1, 1}, {0, 1}};
    for (int c = 0; c < 3; c++) {
        int ox = offs[c][0], oy = offs[c][1];
        if (ox || oy) {
            weft_array *bad = NULL;
            ck_assert_int_eq(weft_array_wrap_device(
                                 ctx, WEFT_F32, 1, TU_SH(N),
                                 (void *const[]){(void *)(uintptr_t)(dy + 4)},
                                 device_release, &released, &bad),
                             WEFT_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_null(bad);
            ck_assert_ptr_nonnull(strstr(weft_last_error(), "aligned"));
            continue;
        }
        double sum = 0, dot = 0;
        for (int i = 0; i < N; i++) {
            sum += xs[i + ox];
            dot += (double)xs[i + ox] * ys[i + oy];
        }
        weft_array *in[2], *out[2];
        TU_OK(weft_array_wrap_device(
            ctx, WEFT_F32, 1, TU_SH(N),
            (void *const[]){(void *)(uintptr_t)(dx + 4 * (uint64_t)ox)},
            device_release, &released, &in[0]));
        TU_OK(weft_array_wrap_device(
            ctx, WEFT_F32, 1, TU_SH(N),
            (void *const[]){(void *)(uintptr_t)(dy + 4 * (uint64_t)oy)},
            device_release, &released, &in[1]));
        TU_OK(weft_run(exe, in, 2, out, 2));
        float got[2];
        TU_OK(weft_array_read(out[0], 0, &got[0], sizeof got[0]));
        TU_OK(weft_array_read(out[1], 0, &got[1], sizeof got[1]));
        ck_assert_msg(got[0] == (float)sum && got[1] == (float)dot,
                      "offsets %d %d: sum %g dot %g, expected %g %g", ox, oy,
                      (double)got[0], (double)got[1], sum, dot);
        for (int k = 0; k < 2; k++) {
            weft_array_release(out[k]);
            weft_array_release(in[k]);
        }
    }
    ck_assert_int_eq(released, 2);
    CU_OK(cu.mem_free(dx));
    CU_OK(cu.mem_free(dy));
    weft_executable_free(exe);
    weft_context_free(ctx);
}
END_TEST

static Suite *dlpack_suite(void)
{
    Suite *s = suite_create("dlpack_ptx");
    TCase *t = tcase_create("ptx");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, ptx_device);
    tcase_add_test(t, ptx_dlpack_cuda);
    tcase_add_test(t, ptx_async);
    tcase_add_test(t, ptx_stream);
    tcase_add_test(t, ptx_misaligned_fold);
    suite_add_tcase(s, t);
    return s;
}

#endif /* DT_IS_PTX */

TU_MAIN(dlpack_suite)
