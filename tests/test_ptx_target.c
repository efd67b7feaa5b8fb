/*
 * tests/test_ptx_target.c: the PTX target's launch shape for grid-stride
 * kernels (skeletons-ir/ptx/target.c).  Nothing here needs a GPU.
 *
 * sk_ptx_launch_block keeps the occupancy API's block when the grid
 * fills every SM, and otherwise takes the largest power of two below it
 * (at least 64) that does: n-body's 65,536 threads on an H100's 132 SMs
 * take blocks of 256 (in 1024 they left 68 SMs idle), Mandelbrot's 2^26
 * pixels keep the occupancy API's 640.
 */
#include <check.h>
#include <stdio.h>

#include "sk.h"

START_TEST(launch_block)
{
    /* (block, items, sms) -> block */
    static const struct {
        int block;
        int64_t items;
        int sms;
        int want;
    } cases[] = {
        {1024, 65536, 132, 256},      /* 64 blocks would not fill 132 */
        {640, 67108864, 132, 640},    /* plenty: the occupancy API's */
        {1024, 132 * 1024, 132, 1024},/* exactly one block per SM */
        {1024, 131 * 1024, 132, 512}, /* 131 blocks: one SM idle */
        {640, 65536, 132, 256},       /* 128 of 512 too few; 256 of 256 */
        {640, 20000, 132, 128},       /* 512, 256: too few; 157 of 128 */
        {1024, 1000, 132, 64},        /* nothing fills: the least */
        {256, 0, 132, 256},           /* no items: as given */
        {48, 100000, 132, 48},        /* small blocks stay */
        {1024, 65536, 0, 1024},       /* unknown SMs: as given */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int got = sk_ptx_launch_block(cases[k].block, cases[k].items,
                                      cases[k].sms);
        ck_assert_msg(got == cases[k].want,
                      "case %zu: block %d, %lld items, %d SMs: %d, want %d",
                      k, cases[k].block, (long long)cases[k].items,
                      cases[k].sms, got, cases[k].want);
        ck_assert_int_eq(got % 16, 0);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ptx_target");
    TCase *tc = tcase_create("launch");
    tcase_add_test(tc, launch_block);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
