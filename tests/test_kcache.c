/*
 * tests/test_kcache.c: runtime/kcache.c, the kernel table both compiled
 * backends share, with threads and without LLVM's help (the values are
 * the test's own):
 *
 *   one_compiles   8 threads ask for one key at once: exactly one claims
 *                  it and "compiles" (slowly); every other one waits or
 *                  finds it READY, and all see the compiler's value.
 *   failure_kept   4 threads wait on an entry whose compile fails: each
 *                  gets the failure's status and message; the next
 *                  request claims the entry again and its value sticks.
 *   many_keys      1,000 keys (the table grows from 64 slots, entries
 *                  keep their places in memory): each found with its own
 *                  value, none claimed twice.
 *   symbols        rt_kernel_symbol's names: the CPU's whole key, the
 *                  PTX backend's 16 bytes.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "tu.h"

#ifdef WEFT_HAVE_LLVM
#include "rt.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static rt_kcache cache;
static int compiles; /* under lock */
static int waiting;  /* under lock: threads about to wait */
static int token;    /* its address is the compiled value */

static void key_of(int i, uint8_t key[32])
{
    memset(key, 0, 32);
    /* spread over the slots, and two keys that share their first bytes */
    uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull;
    memcpy(key, &h, 8);
    key[31] = (uint8_t)i;
    key[30] = (uint8_t)(i >> 8);
}

/* A request as a backend makes one: claim, then compile (no lock held)
 * and publish, or wait.  Returns its status; *value what it saw. */
static weft_status request(const uint8_t key[32], void **value, bool count)
{
    pthread_mutex_lock(&lock);
    rt_kentry *e;
    bool mine;
    weft_status s = rt_kcache_claim(&cache, key, &e, &mine, "test");
    if (s == WEFT_OK && mine) {
        compiles++;
        pthread_mutex_unlock(&lock);
        struct timespec ts = {0, 20 * 1000 * 1000}; /* a slow compile */
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&lock);
        e->value = &token;
        rt_kcache_publish(&cache, e, RT_KC_READY, WEFT_OK, NULL);
    } else if (s == WEFT_OK) {
        waiting += count;
        s = rt_kcache_wait(&cache, e);
    }
    *value = s == WEFT_OK ? e->value : NULL;
    pthread_mutex_unlock(&lock);
    return s;
}

typedef struct req {
    uint8_t key[32];
    weft_status s;
    void *value;
    char msg[FE_MSG_MAX];
} req;

static void *request_main(void *arg)
{
    req *r = arg;
    r->s = request(r->key, &r->value, true);
    snprintf(r->msg, sizeof r->msg, "%s", r->s ? weft_last_error() : "");
    return NULL;
}

START_TEST(one_compiles)
{
    rt_kcache_init(&cache, NULL, &lock);
    compiles = 0;
    req r[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        key_of(7, r[i].key);
        ck_assert_int_eq(pthread_create(&th[i], NULL, request_main, &r[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(r[i].s, WEFT_OK);
        ck_assert_ptr_eq(r[i].value, &token);
    }
    ck_assert_int_eq(compiles, 1);
    rt_kcache_fini(&cache, NULL, NULL);
}
END_TEST

START_TEST(failure_kept)
{
    rt_kcache_init(&cache, NULL, &lock);
    uint8_t key[32];
    key_of(3, key);
    pthread_mutex_lock(&lock);
    rt_kentry *e;
    bool mine;
    TU_OK(rt_kcache_claim(&cache, key, &e, &mine, "test"));
    ck_assert(mine);
    waiting = 0;
    pthread_mutex_unlock(&lock);
    req r[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        memcpy(r[i].key, key, 32);
        ck_assert_int_eq(pthread_create(&th[i], NULL, request_main, &r[i]), 0);
    }
    /* a thread counts itself and waits in one hold of the lock: once all
     * four are counted, all four are waiting */
    for (;;) {
        pthread_mutex_lock(&lock);
        int n = waiting;
        pthread_mutex_unlock(&lock);
        if (n == 4) {
            break;
        }
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&lock);
    rt_kcache_publish(&cache, e, RT_KC_FAILED, WEFT_ERR_INTERNAL,
                      "test: the compile broke");
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(r[i].s, WEFT_ERR_INTERNAL);
        ck_assert_str_eq(r[i].msg, "test: the compile broke");
    }
    /* a failure is compiled again by the next request */
    compiles = 0;
    void *v;
    TU_OK(request(key, &v, false));
    ck_assert_int_eq(compiles, 1);
    ck_assert_ptr_eq(v, &token);
    TU_OK(request(key, &v, false));
    ck_assert_int_eq(compiles, 1);
    rt_kcache_fini(&cache, NULL, NULL);
}
END_TEST

static int freed;

static void free_value(void *user, rt_kentry *e)
{
    ck_assert_ptr_eq(user, &freed);
    freed += e->value != NULL;
}

START_TEST(many_keys)
{
    enum { N = 1000 };
    static int values[N];
    rt_kcache_init(&cache, NULL, &lock);
    rt_kentry *first = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N; i++) {
        uint8_t key[32];
        key_of(i, key);
        rt_kentry *e;
        bool mine;
        TU_OK(rt_kcache_claim(&cache, key, &e, &mine, "test"));
        ck_assert_msg(mine, "key %d claimed twice", i);
        e->value = &values[i];
        rt_kcache_publish(&cache, e, RT_KC_READY, WEFT_OK, NULL);
        first = first ? first : e;
    }
    for (int i = 0; i < N; i++) {
        uint8_t key[32];
        key_of(i, key);
        rt_kentry *e = rt_kcache_find(&cache, key);
        ck_assert_ptr_nonnull(e);
        ck_assert_ptr_eq(e->value, &values[i]);
        ck_assert_int_eq(e->state, RT_KC_READY);
        bool mine;
        TU_OK(rt_kcache_claim(&cache, key, &e, &mine, "test"));
        ck_assert(!mine);
    }
    uint8_t key[32];
    key_of(0, key);
    ck_assert_ptr_eq(rt_kcache_find(&cache, key), first); /* not moved */
    key_of(N, key);
    ck_assert_ptr_null(rt_kcache_find(&cache, key));
    pthread_mutex_unlock(&lock);
    freed = 0;
    rt_kcache_fini(&cache, free_value, &freed);
    ck_assert_int_eq(freed, N);
}
END_TEST

START_TEST(symbols)
{
    uint8_t key[32];
    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)(i * 8 + 7);
    }
    char buf[160];
    rt_kernel_symbol(key, 16, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "wk_070f171f272f373f474f575f676f777f_3");
    rt_kernel_symbol(key, 32, 12, buf, sizeof buf);
    ck_assert_str_eq(buf, "wk_070f171f272f373f474f575f676f777f"
                          "878f979fa7afb7bfc7cfd7dfe7eff7ff_12");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kcache");
    TCase *tc = tcase_create("kcache");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, one_compiles);
    tcase_add_test(tc, failure_kept);
    tcase_add_test(tc, many_keys);
    tcase_add_test(tc, symbols);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)

#else
int main(void)
{
    return 77; /* the kernel cache is built with LLVM only */
}
#endif
