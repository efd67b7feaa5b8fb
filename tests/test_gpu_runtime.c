/*
 * tests/test_gpu_runtime.c: the GPU runtime's driver layer (runtime-gpu/
 * cuda.c and mem.c), white-box through runtime-gpu/gpu.h.
 *
 * Without a CUDA driver (or without a device) only the "no driver" test
 * runs: gpu_dev_open must fail with WEFT_ERR_BACKEND_UNAVAILABLE and a
 * message that names libcuda.so.1 when the library is missing; then the
 * program prints that it skipped and exits with 77, which CTest reports as
 * a skip (SKIP_RETURN_CODE 77).
 *
 * With a driver, every test opens its own gpu_dev and asserts values, not
 * timings: device facts; the pool (a freed block of a size class comes
 * back for the next request of that class); upload, download, memset and
 * device copies of 1 MiB; mirrors of arrays (upload on first use and only
 * then, no download for an array whose host copy is current, download
 * after a kernel output, re-upload after a host write, wrapped arrays);
 * eviction under a test limit of three arrays (the evicted arrays' device
 * contents reach the host); WEFT_ERR_OUT_OF_MEMORY when everything is
 * pinned; hand-written PTX compiled and loaded, launched and checked,
 * loaded again at each optimisation level, a grid-stride kernel over a
 * million elements, a PTX syntax error with the compiler's log in the
 * message; and, last, a kernel that traps:
 * gpu_sync names it, later calls fail with WEFT_ERR_DEVICE, and (with
 * today's drivers, where no reset brings the device back within the
 * process) so does a new gpu_dev_open, saying why.
 *
 * Check runs the tests in this process (no fork): CUDA does not survive a
 * fork after cuInit.
 */
#ifdef WEFT_HAVE_LLVM
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "tu.h"

#define MIB ((size_t)1 << 20)
#define WHO "weft_run"

static gpu_dev *open_dev(weft_context *ctx)
{
    gpu_dev *d = NULL;
    weft_status s = gpu_dev_open(ctx, 0, &d);
    ck_assert_msg(s == WEFT_OK, "gpu_dev_open: %s", weft_last_error());
    ck_assert_ptr_nonnull(d);
    return d;
}

/* Close d as the backend does: its memory, then the device. */
static void close_dev(gpu_dev *d)
{
    gpu_mem_close(d);
    gpu_dev_close(d);
}

static weft_context *open_ctx(void)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

static gpu_mem_stats stats(gpu_dev *d)
{
    gpu_mem_stats s;
    gpu_mem_stats_get(d, &s);
    return s;
}

/* A 1 MiB f32 array (262144 elements). */
static weft_array *mib_array(weft_context *ctx)
{
    weft_array *a = NULL;
    TU_OK(weft_array_create(ctx, WEFT_F32, 1,
                            TU_SH((int64_t)(MIB / sizeof(float))), &a));
    return a;
}

/* Word i of pattern k. */
static uint32_t pat(uint32_t k, size_t i)
{
    return k * 2654435761u + (uint32_t)i * 40503u + 7u;
}

static void fill(uint32_t *w, size_t n, uint32_t k)
{
    for (size_t i = 0; i < n; i++) {
        w[i] = pat(k, i);
    }
}

/* Whether n words at w are pattern k (reports the first difference). */
static void check_pattern(const uint32_t *w, size_t n, uint32_t k,
                          const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (w[i] != pat(k, i)) {
            ck_abort_msg("%s: word %zu is %u, expected %u", what, i, w[i],
                         pat(k, i));
        }
    }
}

/* ---- without a driver ------------------------------------------------ */

START_TEST(open_without_driver)
{
    ck_assert(!gpu_available());
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    for (int i = 0; i < 2; i++) { /* the driver is looked for once */
        gpu_dev *d = (gpu_dev *)&h;
        TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE, gpu_dev_open(NULL, -1, &d));
        ck_assert_ptr_null(d);
        const char *msg = weft_last_error();
        ck_assert_msg(strncmp(msg, "weft_context_create: ", 21) == 0, "%s",
                      msg);
        if (!h) {
            ck_assert_msg(strstr(msg, "libcuda.so.1") != NULL, "%s", msg);
        } else {
            ck_assert_msg(strstr(msg, "device") || strstr(msg, "driver"), "%s",
                          msg);
        }
    }
    gpu_mem_close(NULL);
    gpu_dev_close(NULL);
    if (h) {
        dlclose(h);
    }
}
END_TEST

/* ---- with a driver --------------------------------------------------- */

START_TEST(device_facts)
{
    gpu_dev *d = open_dev(NULL);
    ck_assert_int_ge(gpu_dev_sm(d), 50);
    ck_assert_int_ge(gpu_dev_sms(d), 1);
    ck_assert_uint_gt(gpu_dev_memory(d), 0);
    ck_assert_uint_gt(strlen(gpu_dev_name(d)), 0);
    printf("test_gpu_runtime: %s, sm_%d, %d SMs, %llu MiB\n", gpu_dev_name(d),
           gpu_dev_sm(d), gpu_dev_sms(d),
           (unsigned long long)(gpu_dev_memory(d) >> 20));
    /* A second gpu_dev of the device shares its primary context. */
    gpu_dev *e = open_dev(NULL);
    close_dev(e);
    gpu_dev *x = (gpu_dev *)d;
    TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE, gpu_dev_open(NULL, 1 << 20, &x));
    ck_assert_ptr_null(x);
    ck_assert_msg(strstr(weft_last_error(), "no CUDA device"), "%s",
                  weft_last_error());
    close_dev(d);
}
END_TEST

START_TEST(alloc_and_pool)
{
    gpu_dev *d = open_dev(NULL);
    uint64_t p = 1, q = 0, r = 0;
    TU_OK(gpu_mem_alloc(d, 0, &p, WHO));
    ck_assert_uint_eq(p, 0);
    TU_OK(gpu_mem_alloc(d, 1000, &p, WHO));
    ck_assert_uint_ne(p, 0);
    ck_assert_uint_eq(stats(d).held, 1024); /* the class of 1000 bytes */
    gpu_mem_free(d, p, 1000);
    ck_assert_uint_eq(stats(d).pooled, 1024);
    TU_OK(gpu_mem_alloc(d, 1024, &q, WHO)); /* same class: same block */
    ck_assert_uint_eq(q, p);
    ck_assert_uint_eq(stats(d).pooled, 0);
    ck_assert_uint_eq(stats(d).held, 1024);
    TU_OK(gpu_mem_alloc(d, 5000, &r, WHO)); /* another class */
    ck_assert_uint_ne(r, q);
    ck_assert_uint_eq(stats(d).held, 1024 + 5120);
    gpu_mem_free(d, q, 1024);
    gpu_mem_free(d, r, 5000);
    gpu_mem_free(d, 0, 10); /* nothing */
    ck_assert_uint_eq(stats(d).pooled, 1024 + 5120);
    /* Large sizes round to an eighth of their power of two. */
    TU_OK(gpu_mem_alloc(d, MIB + 1, &p, WHO));
    ck_assert_uint_eq(stats(d).held, 1024 + 5120 + MIB + MIB / 8);
    gpu_mem_free(d, p, MIB + 1);
    close_dev(d);
}
END_TEST

START_TEST(copies)
{
    gpu_dev *d = open_dev(NULL);
    size_t n = MIB / 4;
    uint32_t *h = malloc(MIB), *back = malloc(MIB);
    ck_assert(h && back);
    fill(h, n, 1);
    uint64_t p, q;
    TU_OK(gpu_mem_alloc(d, MIB, &p, WHO));
    TU_OK(gpu_mem_alloc(d, MIB, &q, WHO));
    gpu_mem_stats s0 = stats(d);
    TU_OK(gpu_upload(d, p, h, MIB, WHO));
    TU_OK(gpu_download(d, back, p, MIB, WHO));
    check_pattern(back, n, 1, "round trip");
    ck_assert_uint_eq(stats(d).uploaded - s0.uploaded, MIB);
    ck_assert_uint_eq(stats(d).downloaded - s0.downloaded, MIB);
    /* memset32 the second half, copy the whole to q, read q back. */
    TU_OK(gpu_memset32(d, p + MIB / 2, 0xdeadbeefu, n / 2, WHO));
    TU_OK(gpu_copy(d, q, p, MIB, WHO));
    memset(back, 0, MIB);
    TU_OK(gpu_download(d, back, q, MIB, WHO));
    check_pattern(back, n / 2, 1, "first half");
    for (size_t i = n / 2; i < n; i++) {
        ck_assert_uint_eq(back[i], 0xdeadbeefu);
    }
    TU_OK(gpu_sync(d, WHO));
    gpu_mem_free(d, p, MIB);
    gpu_mem_free(d, q, MIB);
    free(h);
    free(back);
    close_dev(d);
}
END_TEST

START_TEST(mirror)
{
    weft_context *ctx = open_ctx();
    gpu_dev *d = open_dev(ctx);
    weft_array *a = mib_array(ctx);
    uint32_t *w = weft_array_data(a, 0);
    ck_assert_ptr_nonnull(w);
    fill(w, MIB / 4, 2);
    uint64_t p = 0, p2 = 0;

    gpu_mem_stats s0 = stats(d);
    TU_OK(gpu_array_in(d, a, &p, WHO)); /* uploads */
    ck_assert_uint_ne(p, 0);
    ck_assert_uint_eq(stats(d).uploaded - s0.uploaded, MIB);
    TU_OK(gpu_array_in(d, a, &p2, WHO)); /* current: no upload */
    ck_assert_uint_eq(p2, p);
    ck_assert_uint_eq(stats(d).uploaded - s0.uploaded, MIB);
    gpu_array_unpin(d, a);
    gpu_array_unpin(d, a);
    uint32_t *back = malloc(MIB);
    ck_assert_ptr_nonnull(back);
    TU_OK(gpu_download(d, back, p, MIB, WHO));
    check_pattern(back, MIB / 4, 2, "uploaded mirror");

    /* The host copy is current: reading it downloads nothing. */
    s0 = stats(d);
    TU_OK(fe_array_host(a));
    TU_OK(weft_array_read(a, 0, back, MIB));
    check_pattern(back, MIB / 4, 2, "host copy");
    ck_assert_uint_eq(stats(d).downloaded, s0.downloaded);

    /* A kernel output: the device copy is newer; the first host read
     * downloads it, the second does not. */
    TU_OK(gpu_array_out(d, a, &p2, WHO));
    ck_assert_uint_eq(p2, p);
    fill(back, MIB / 4, 3);
    TU_OK(gpu_upload(d, p, back, MIB, WHO)); /* "the kernel" */
    gpu_array_unpin(d, a);
    s0 = stats(d);
    memset(back, 0, MIB);
    TU_OK(weft_array_read(a, 0, back, MIB));
    check_pattern(back, MIB / 4, 3, "downloaded output");
    ck_assert_uint_eq(stats(d).downloaded - s0.downloaded, MIB);
    TU_OK(fe_array_host(a));
    ck_assert_uint_eq(stats(d).downloaded - s0.downloaded, MIB);

    /* A host write makes the device copy stale: the next use uploads into
     * the same buffer. */
    w = weft_array_data(a, 0);
    ck_assert_ptr_nonnull(w);
    fill(w, MIB / 4, 4);
    s0 = stats(d);
    TU_OK(gpu_array_in(d, a, &p2, WHO));
    ck_assert_uint_eq(p2, p);
    ck_assert_uint_eq(stats(d).uploaded - s0.uploaded, MIB);
    gpu_array_unpin(d, a);
    TU_OK(gpu_download(d, back, p, MIB, WHO));
    check_pattern(back, MIB / 4, 4, "re-uploaded mirror");

    /* A wrapped array: leaf bytes from its type and size. */
    int64_t *xs = malloc(1000 * sizeof *xs);
    ck_assert_ptr_nonnull(xs);
    for (int i = 0; i < 1000; i++) {
        xs[i] = (int64_t)i * i - 7;
    }
    weft_array *b = NULL;
    void *data[1] = {xs};
    TU_OK(weft_array_wrap(ctx, WEFT_I64, 1, TU_SH(1000), data, NULL, NULL, &b));
    s0 = stats(d);
    uint64_t pb = 0;
    TU_OK(gpu_array_in(d, b, &pb, WHO));
    ck_assert_uint_eq(stats(d).uploaded - s0.uploaded, 8000);
    gpu_array_unpin(d, b);
    int64_t got[1000];
    TU_OK(gpu_download(d, got, pb, sizeof got, WHO));
    ck_assert_mem_eq(got, xs, sizeof got);

    /* An empty array has no buffer. */
    weft_array *e = NULL;
    TU_OK(weft_array_create(ctx, WEFT_F64, 1, TU_SH(0), &e));
    uint64_t pe = 1;
    TU_OK(gpu_array_in(d, e, &pe, WHO));
    ck_assert_uint_eq(pe, 0);
    gpu_array_unpin(d, e);

    /* Released arrays give their buffers to the pool. */
    uint64_t pooled = stats(d).pooled;
    weft_array_release(a);
    weft_array_release(b);
    weft_array_release(e);
    ck_assert_uint_eq(stats(d).pooled - pooled, MIB + 8192);
    close_dev(d);
    weft_context_free(ctx);
    free(xs);
    free(back);
}
END_TEST

START_TEST(eviction)
{
    weft_context *ctx = open_ctx();
    gpu_dev *d = open_dev(ctx);
    gpu_mem_set_limit(d, 3 * MIB);
    weft_array *a[5];
    uint32_t *h = malloc(MIB);
    ck_assert_ptr_nonnull(h);
    for (uint32_t i = 0; i < 5; i++) {
        a[i] = mib_array(ctx);
        uint64_t p = 0;
        TU_OK(gpu_array_out(d, a[i], &p, WHO));
        fill(h, MIB / 4, 10 + i);
        TU_OK(gpu_upload(d, p, h, MIB, WHO)); /* the device copy is newer */
        gpu_array_unpin(d, a[i]);
        ck_assert_uint_le(stats(d).held, 3 * MIB);
    }
    gpu_mem_stats s = stats(d);
    ck_assert_uint_ge(s.evictions, 2);
    ck_assert_uint_ge(s.downloaded, 2 * MIB); /* evicted copies came back */
    for (uint32_t i = 0; i < 5; i++) {
        TU_OK(weft_array_read(a[i], 0, h, MIB));
        check_pattern(h, MIB / 4, 10 + i, "after eviction");
    }
    /* An evicted array comes back to the device intact. */
    uint64_t p = 0;
    TU_OK(gpu_array_in(d, a[0], &p, WHO));
    memset(h, 0, MIB);
    TU_OK(gpu_download(d, h, p, MIB, WHO));
    check_pattern(h, MIB / 4, 10, "re-uploaded after eviction");
    gpu_array_unpin(d, a[0]);
    for (int i = 0; i < 5; i++) {
        weft_array_release(a[i]);
    }
    free(h);
    close_dev(d);
    weft_context_free(ctx);
}
END_TEST

START_TEST(out_of_memory_when_pinned)
{
    weft_context *ctx = open_ctx();
    gpu_dev *d = open_dev(ctx);
    gpu_mem_set_limit(d, 3 * MIB);
    weft_array *a[4];
    uint64_t p[4];
    for (int i = 0; i < 4; i++) {
        a[i] = mib_array(ctx);
    }
    for (int i = 0; i < 3; i++) {
        TU_OK(gpu_array_in(d, a[i], &p[i], WHO)); /* stays pinned */
    }
    TU_STATUS(WEFT_ERR_OUT_OF_MEMORY, gpu_array_in(d, a[3], &p[3], WHO));
    const char *msg = weft_last_error();
    ck_assert_msg(strstr(msg, "weft_run: out of device memory") &&
                      strstr(msg, "3145728 held by pinned arrays"),
                  "%s", msg);
    uint64_t q = 0;
    TU_STATUS(WEFT_ERR_OUT_OF_MEMORY, gpu_mem_alloc(d, 1, &q, WHO));
    ck_assert_uint_eq(q, 0);
    /* Unpinning one makes room: it is evicted. */
    gpu_array_unpin(d, a[1]);
    TU_OK(gpu_array_in(d, a[3], &p[3], WHO));
    ck_assert_uint_eq(stats(d).evictions, 1);
    for (int i = 0; i < 4; i++) {
        gpu_array_unpin(d, a[i]);
        weft_array_release(a[i]);
    }
    gpu_mem_set_limit(d, 0);
    TU_OK(gpu_mem_alloc(d, 4 * MIB, &q, WHO));
    gpu_mem_free(d, q, 4 * MIB);
    close_dev(d);
    weft_context_free(ctx);
}
END_TEST

/* ---- modules and launches ----------------------------------------------- */

static const char ptx_ok[] = ".version 7.8\n"
                             ".target sm_70\n"
                             ".address_size 64\n"
                             "\n"
                             ".visible .entry weft_store(\n"
                             "    .param .u64 weft_store_p\n"
                             ")\n"
                             "{\n"
                             "    .reg .b32 %r<2>;\n"
                             "    .reg .b64 %rd<3>;\n"
                             "    ld.param.u64 %rd1, [weft_store_p];\n"
                             "    cvta.to.global.u64 %rd2, %rd1;\n"
                             "    mov.u32 %r1, 12345;\n"
                             "    st.global.u32 [%rd2], %r1;\n"
                             "    ret;\n"
                             "}\n"
                             "\n"
                             ".visible .entry weft_iota(\n"
                             "    .param .u64 weft_iota_p,\n"
                             "    .param .u32 weft_iota_n\n"
                             ")\n"
                             "{\n"
                             "    .reg .pred %p<2>;\n"
                             "    .reg .b32 %r<8>;\n"
                             "    .reg .b64 %rd<5>;\n"
                             "    ld.param.u64 %rd1, [weft_iota_p];\n"
                             "    ld.param.u32 %r1, [weft_iota_n];\n"
                             "    cvta.to.global.u64 %rd2, %rd1;\n"
                             "    mov.u32 %r2, %ntid.x;\n"
                             "    mov.u32 %r3, %ctaid.x;\n"
                             "    mov.u32 %r4, %tid.x;\n"
                             "    mad.lo.s32 %r5, %r3, %r2, %r4;\n"
                             "    mov.u32 %r6, %nctaid.x;\n"
                             "    mul.lo.s32 %r7, %r6, %r2;\n"
                             "LOOP:\n"
                             "    setp.ge.u32 %p1, %r5, %r1;\n"
                             "    @%p1 bra DONE;\n"
                             "    mul.wide.u32 %rd3, %r5, 4;\n"
                             "    add.s64 %rd4, %rd2, %rd3;\n"
                             "    st.global.u32 [%rd4], %r5;\n"
                             "    add.s32 %r5, %r5, %r7;\n"
                             "    bra LOOP;\n"
                             "DONE:\n"
                             "    ret;\n"
                             "}\n";

static const char ptx_bad[] = ".version 7.8\n"
                              ".target sm_70\n"
                              ".address_size 64\n"
                              ".visible .entry weft_bad()\n"
                              "{\n"
                              "    frobnicate.u32 %r1;\n"
                              "    ret;\n"
                              "}\n";

static const char ptx_trap[] = ".version 7.8\n"
                               ".target sm_70\n"
                               ".address_size 64\n"
                               ".visible .entry weft_trap()\n"
                               "{\n"
                               "    trap;\n"
                               "    ret;\n"
                               "}\n";

/* Launch weft_store of m at p and check that it stored 12345. */
static void store_and_check(gpu_dev *d, gpu_module *m, uint64_t p)
{
    gpu_fn f;
    TU_OK(gpu_module_fn(d, m, "weft_store", 0, 0, &f));
    ck_assert_str_eq(f.name, "weft_store");
    ck_assert_int_ge(f.block, 32);
    ck_assert_int_le(f.block, 1024);
    ck_assert_int_ge(f.blocks_per_sm, 1);
    TU_OK(gpu_memset32(d, p, 0, 1, WHO));
    unsigned long long arg = p;
    void *params[] = {&arg};
    TU_OK(gpu_launch(d, &f, 1, 1, 0, params, WHO));
    TU_OK(gpu_sync(d, WHO));
    uint32_t v = 0;
    TU_OK(gpu_download(d, &v, p, sizeof v, WHO));
    ck_assert_uint_eq(v, 12345);
}

START_TEST(ptx_module)
{
    gpu_dev *d = open_dev(NULL);
    gpu_module *m = NULL, *m2 = NULL;
    /* the text without its NUL: gpu_module_load adds one */
    TU_OK(gpu_module_load(d, ptx_ok, strlen(ptx_ok), -1, "test", WHO, &m));
    uint64_t p = 0;
    size_t n = 1000003; /* elements for weft_iota */
    TU_OK(gpu_mem_alloc(d, n * 4, &p, WHO));
    store_and_check(d, m, p);

    /* The same PTX again (the driver's cache may answer), at every
     * optimisation level; levels out of range give the default. */
    for (int level = -1; level <= 5; level++) {
        gpu_module *mo = NULL;
        TU_OK(gpu_module_load(d, ptx_ok, strlen(ptx_ok), level, "test", WHO,
                              &mo));
        store_and_check(d, mo, p + 4);
        gpu_module_free(d, mo);
    }
    TU_OK(gpu_module_load(d, ptx_ok, strlen(ptx_ok), 4, "test", WHO, &m2));
    gpu_module *m3 = (gpu_module *)d;
    TU_STATUS(WEFT_ERR_DEVICE,
              gpu_module_load(d, ptx_ok, 0, -1, "test", WHO, &m3));
    ck_assert_ptr_null(m3);

    /* A grid-stride kernel over a million elements, grid from
     * gpu_grid_for. */
    gpu_fn f;
    TU_OK(gpu_module_fn(d, m2, "weft_iota", 0, 0, &f));
    ck_assert_int_ge(f.regs, 1); /* the driver's count */
    ck_assert_int_le(f.regs, 255);
    unsigned cap = (unsigned)(gpu_dev_sms(d) * f.blocks_per_sm);
    ck_assert_uint_eq(gpu_grid_for(d, &f, 0, 0), 0);
    ck_assert_uint_eq(gpu_grid_for(d, &f, 0, 1), 1);
    ck_assert_uint_eq(gpu_grid_for(d, &f, 0, (int64_t)f.block + 1), 2);
    ck_assert_uint_eq(gpu_grid_for(d, &f, 0, (int64_t)1 << 40), cap);
    /* a smaller block: more blocks, as many resident threads */
    if (f.block >= 64) {
        ck_assert_uint_eq(gpu_grid_for(d, &f, f.block / 2, (int64_t)1 << 40),
                          2 * cap);
        ck_assert_uint_eq(gpu_grid_for(d, &f, f.block / 2, f.block), 2);
    }
    unsigned grid = gpu_grid_for(d, &f, 0, (int64_t)n);
    ck_assert_uint_ge(grid, 1);
    ck_assert_uint_le(grid, cap);
    unsigned long long arg_p = p;
    unsigned arg_n = (unsigned)n;
    void *params[] = {&arg_p, &arg_n};
    TU_OK(gpu_memset32(d, p, 0xffffffffu, n, WHO));
    TU_OK(gpu_launch(d, &f, grid, 0, 0, params, WHO));
    TU_OK(gpu_sync(d, WHO));
    uint32_t *back = malloc(n * 4);
    ck_assert_ptr_nonnull(back);
    TU_OK(gpu_download(d, back, p, n * 4, WHO));
    for (size_t i = 0; i < n; i++) {
        if (back[i] != (uint32_t)i) {
            ck_abort_msg("weft_iota: element %zu is %u", i, back[i]);
        }
    }
    free(back);

    /* A block size from shared memory per thread fits in 48 KiB. */
    gpu_fn g;
    TU_OK(gpu_module_fn(d, m, "weft_iota", 256, 0, &g));
    ck_assert_int_ge(g.block, 1);
    ck_assert_int_le(g.block * 256, 48 * 1024);

    /* Bad launches and names. */
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
              gpu_launch(d, &f, 0, 0, 0, params, WHO));
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
              gpu_launch(d, &f, 1, 2048, 0, params, WHO));
    TU_STATUS(WEFT_ERR_INTERNAL, gpu_module_fn(d, m, "no_such", 0, 0, &g));

    gpu_mem_free(d, p, n * 4);
    gpu_module_free(d, m);
    gpu_module_free(d, m2);
    gpu_module_free(d, NULL);
    close_dev(d);
}
END_TEST

START_TEST(ptx_syntax_error)
{
    gpu_dev *d = open_dev(NULL);
    gpu_module *m = (gpu_module *)d;
    TU_STATUS(WEFT_ERR_DEVICE, gpu_module_load(d, ptx_bad, strlen(ptx_bad), -1,
                                               "test", WHO, &m));
    ck_assert_ptr_null(m);
    const char *msg = weft_last_error();
    printf("test_gpu_runtime: PTX error: %s\n", msg);
    ck_assert_msg(strncmp(msg, "weft_run: cuModuleLoadDataEx: ", 30) == 0, "%s",
                  msg);
    ck_assert_msg(strstr(msg, "frobnicate") || strstr(msg, "line"), "%s", msg);
    ck_assert_ptr_null(strchr(msg, '\n'));
    /* The device is still fine. */
    uint64_t p = 0;
    TU_OK(gpu_mem_alloc(d, 4, &p, WHO));
    TU_OK(gpu_memset32(d, p, 7, 1, WHO));
    uint32_t v = 0;
    TU_OK(gpu_download(d, &v, p, 4, WHO));
    ck_assert_uint_eq(v, 7);
    gpu_mem_free(d, p, 4);
    close_dev(d);
}
END_TEST

/* Last: a trap leaves CUDA unusable in this process.  An older driver may
 * let a new primary context work once every retain of the old one is
 * released; the 580 driver on an H100 does not (cuDevicePrimaryCtxRetain
 * keeps returning the fault), so a reopen either works or fails with
 * WEFT_ERR_DEVICE and a message that says why. */
START_TEST(trap_names_the_kernel)
{
    gpu_dev *d = open_dev(NULL);
    gpu_module *m = NULL;
    TU_OK(gpu_module_load(d, ptx_trap, strlen(ptx_trap), -1, "test", WHO, &m));
    gpu_fn f;
    TU_OK(gpu_module_fn(d, m, "weft_trap", 0, 0, &f));
    TU_OK(gpu_launch(d, &f, 1, 32, 0, NULL, WHO));
    TU_STATUS(WEFT_ERR_DEVICE, gpu_sync(d, WHO));
    const char *msg = weft_last_error();
    printf("test_gpu_runtime: trap: %s\n", msg);
    ck_assert_msg(strncmp(msg, "weft_run: kernel weft_trap failed: ", 35) == 0,
                  "%s", msg);
    /* Sticky: the context stays broken. */
    uint64_t p = 0;
    weft_status s = gpu_mem_alloc(d, 4, &p, WHO);
    if (s == WEFT_OK) {
        uint32_t v;
        s = gpu_download(d, &v, p, 4, WHO);
    }
    ck_assert_int_eq(s, WEFT_ERR_DEVICE);
    gpu_module_free(d, m);
    close_dev(d);

    d = NULL;
    s = gpu_dev_open(NULL, 0, &d);
    if (s != WEFT_OK) {
        msg = weft_last_error();
        printf("test_gpu_runtime: reopen after the trap: %s\n", msg);
        ck_assert_int_eq(s, WEFT_ERR_DEVICE);
        ck_assert_ptr_null(d);
        ck_assert_msg(strstr(msg, "restarts"), "%s", msg);
        return;
    }
    TU_OK(gpu_mem_alloc(d, 4, &p, WHO));
    TU_OK(gpu_memset32(d, p, 99, 1, WHO));
    uint32_t v = 0;
    TU_OK(gpu_download(d, &v, p, 4, WHO));
    ck_assert_uint_eq(v, 99);
    gpu_mem_free(d, p, 4);
    close_dev(d);
}
END_TEST

static Suite *no_driver_suite(void)
{
    Suite *s = suite_create("gpu_runtime (no driver)");
    TCase *tc = tcase_create("no_driver");
    tcase_add_test(tc, open_without_driver);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *gpu_suite(void)
{
    Suite *s = suite_create("gpu_runtime");
    TCase *tc = tcase_create("device");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, device_facts);
    tcase_add_test(tc, alloc_and_pool);
    tcase_add_test(tc, copies);
    tcase_add_test(tc, mirror);
    tcase_add_test(tc, eviction);
    tcase_add_test(tc, out_of_memory_when_pinned);
    tcase_add_test(tc, ptx_module);
    tcase_add_test(tc, ptx_syntax_error);
    tcase_add_test(tc, trap_names_the_kernel);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    bool gpu = gpu_available();
    SRunner *sr = srunner_create(gpu ? gpu_suite() : no_driver_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed) {
        return EXIT_FAILURE;
    }
    if (!gpu) {
        printf("test_gpu_runtime: no CUDA driver here, skipped\n");
        return 77;
    }
    return EXIT_SUCCESS;
}

#else /* no LLVM: the GPU runtime is not built */

#include <stdio.h>

int main(void)
{
    printf("test_gpu_runtime: built without LLVM, skipped\n");
    return 77;
}

#endif
