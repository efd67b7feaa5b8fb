/*
 * tests/test_devices.c: the list of GPUs of a context (weft_config.devices,
 * $WEFT_DEVICES), parsed by runtime-gpu/multi.c's gpu_devices_parse, a
 * pure function: it runs here without a driver.  The machine is said to
 * have `count` devices; the cases are unset and empty (one GPU, as
 * without the setting), lists (repeats allowed: "0,0"), "all" (capped at
 * 8), and the errors: malformed lists, an ordinal past the devices (the
 * message names it), more than 8.  And a compile-only ptx context
 * (target sm_90) takes the setting without a driver: it compiles for one
 * GPU's architecture and never opens a device.
 */
#ifdef WEFT_HAVE_LLVM
#include <check.h>
#include <string.h>

#include "gpu.h"
#include "tu.h"

#define WHO "weft_context_create"
#define I32(...) ((const int[]){__VA_ARGS__})

static void parses(const char *spec, int count, int n, const int *want)
{
    int ords[GPU_MULTI_MAX], got = -1;
    weft_status s = gpu_devices_parse(spec, count, ords, &got, WHO);
    ck_assert_msg(s == WEFT_OK, "\"%s\": %s", spec ? spec : "(null)",
                  weft_last_error());
    ck_assert_int_eq(got, n);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(ords[i], want[i]);
    }
}

static void refuses(const char *spec, int count, const char *needle)
{
    int ords[GPU_MULTI_MAX], got = -1;
    weft_status s = gpu_devices_parse(spec, count, ords, &got, WHO);
    ck_assert_msg(s == WEFT_ERR_INVALID_ARGUMENT, "\"%s\" gave %d", spec,
                  (int)s);
    ck_assert_msg(strstr(weft_last_error(), needle), "\"%s\": %s", spec,
                  weft_last_error());
    ck_assert_int_eq(got, 0);
}

START_TEST(lists)
{
    parses(NULL, 4, 0, NULL);
    parses("", 4, 0, NULL);
    parses("0", 4, 1, I32(0));
    parses("2", 4, 1, I32(2));
    parses("0,1", 2, 2, I32(0, 1));
    parses("3,1,2,0", 4, 4, I32(3, 1, 2, 0));
    parses("0,0", 1, 2, I32(0, 0));
    parses("all", 1, 1, I32(0));
    parses("all", 4, 4, I32(0, 1, 2, 3));
    parses("all", 16, 8, I32(0, 1, 2, 3, 4, 5, 6, 7));
    parses("0,0,0,0,0,0,0,0", 1, 8, I32(0, 0, 0, 0, 0, 0, 0, 0));
}
END_TEST

START_TEST(errors)
{
    refuses("0,2", 2, "no CUDA device 2 (2 present)");
    refuses("7", 4, "no CUDA device 7 (4 present)");
    refuses("0,", 2, "not a list of device numbers");
    refuses(",0", 2, "not a list of device numbers");
    refuses("0,,1", 2, "not a list of device numbers");
    refuses("-1", 2, "not a list of device numbers");
    refuses("0 1", 2, "not a list of device numbers");
    refuses("0;1", 2, "not a list of device numbers");
    refuses("ALL", 2, "not a list of device numbers");
    refuses("99999999999999999999", 2, "not a list of device numbers");
    refuses("0,0,0,0,0,0,0,0,0", 1, "more than 8 devices");
}
END_TEST

START_TEST(compile_only_ignores_devices)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    cfg.target_cpu = "sm_90";
    cfg.devices = "0,1";
    weft_context *ctx = NULL;
    weft_status s = weft_context_create(&cfg, &ctx);
    if (s == WEFT_ERR_BACKEND_UNAVAILABLE) {
        return; /* a build without LLVM's NVPTX target */
    }
    ck_assert_msg(s == WEFT_OK, "%s", weft_last_error());
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert_int_eq(st.devices, 0); /* no device opened */
    weft_context_free(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, lists);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, compile_only_ignores_devices);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)
#else
int main(void)
{
    return 77; /* no ptx backend in a build without LLVM */
}
#endif
