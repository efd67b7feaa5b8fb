/*
 * runtime/kcache.c: the table of a context's kernels by key, and the
 * protocol by which threads that ask for the same kernel compile it once.
 * Both compiled backends use it: the CPU's cpu_jit (runtime-cpu/jit.c),
 * whose entries hold entry-point addresses, and the PTX backend
 * (runtime-gpu/backend.c), whose entries hold loaded modules.
 *
 * An entry is
 *
 *     COMPILING  a thread claimed it and is compiling it now
 *     READY      compiled; `value` is the runtime's
 *     FAILED     its compile failed: `status` and `msg` say how
 *
 * A request claims an entry (rt_kcache_claim): one that is absent or
 * FAILED becomes COMPILING and the caller compiles it with no lock held,
 * then publishes the outcome (rt_kcache_publish).  A request that finds
 * the entry COMPILING (claimed by another thread, or by another request
 * of its own still in progress) waits on the cache's condition variable
 * (rt_kcache_wait) until it is READY (the value is there) or FAILED (the
 * failure is the waiter's too, with the compiler's message).  So a FAILED
 * entry is compiled again by the next request.  A request that claims several
 * entries (a batch, a whole plan) publishes all of its own before it
 * waits for any other thread's: two requests that share kernels can then
 * not wait for each other.
 *
 * Keys are BLAKE3 hashes (rt_key_*), to which each runtime adds its
 * target and the kernel's canonical description; entry points are named
 * after them (rt_kernel_symbol).
 *
 * The table is open addressing by the key's first eight bytes (keys are
 * hashes already), at most half full.  Entries are never moved or freed
 * before the cache, so a waiter holds its pointer across the wait.  The
 * lock is the owner's (given to rt_kcache_init): the owner guards its
 * counters and its entries' values with the same mutex.
 */
#ifdef WEFT_HAVE_LLVM

#include <stdio.h>
#include <string.h>

#include "rt.h"

void rt_kcache_init(rt_kcache *c, weft_context *ctx, pthread_mutex_t *lock)
{
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->lock = lock;
    pthread_cond_init(&c->changed, NULL);
}

void rt_kcache_fini(rt_kcache *c, void (*free_value)(void *, rt_kentry *),
                    void *user)
{
    for (size_t i = 0; i < c->cap; i++) {
        rt_kentry *e = c->slots[i];
        if (e) {
            if (free_value) {
                free_value(user, e);
            }
            fe_free(c->ctx, e->msg, FE_MSG_MAX);
            fe_free(c->ctx, e, sizeof *e);
        }
    }
    fe_free(c->ctx, c->slots, c->cap * sizeof *c->slots);
    c->slots = NULL;
    c->cap = c->count = 0;
    pthread_cond_destroy(&c->changed);
}

static size_t slot_of(const uint8_t key[32], size_t cap)
{
    uint64_t h;
    memcpy(&h, key, sizeof h); /* the key is a hash already */
    return (size_t)h & (cap - 1);
}

rt_kentry *rt_kcache_find(rt_kcache *c, const uint8_t key[32])
{
    if (!c->cap) {
        return NULL;
    }
    for (size_t i = slot_of(key, c->cap);; i = (i + 1) & (c->cap - 1)) {
        rt_kentry *e = c->slots[i];
        if (!e) {
            return NULL;
        }
        if (memcmp(e->key, key, 32) == 0) {
            return e;
        }
    }
}

/* Put e (its key absent) into the table, doubling it when it would be
 * more than half full.  False when out of memory. */
static bool insert(rt_kcache *c, rt_kentry *e)
{
    if (2 * (c->count + 1) > c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 64;
        rt_kentry **ns = fe_calloc(c->ctx, nc * sizeof *ns);
        if (!ns) {
            return false;
        }
        for (size_t i = 0; i < c->cap; i++) {
            rt_kentry *x = c->slots[i];
            if (x) {
                size_t k = slot_of(x->key, nc);
                while (ns[k]) {
                    k = (k + 1) & (nc - 1);
                }
                ns[k] = x;
            }
        }
        fe_free(c->ctx, c->slots, c->cap * sizeof *c->slots);
        c->slots = ns;
        c->cap = nc;
    }
    size_t k = slot_of(e->key, c->cap);
    while (c->slots[k]) {
        k = (k + 1) & (c->cap - 1);
    }
    c->slots[k] = e;
    c->count++;
    return true;
}

weft_status rt_kcache_claim(rt_kcache *c, const uint8_t key[32],
                            rt_kentry **out, bool *mine, const char *who)
{
    *mine = false;
    rt_kentry *e = rt_kcache_find(c, key);
    if (!e) {
        e = fe_calloc(c->ctx, sizeof *e);
        char *msg = fe_calloc(c->ctx, FE_MSG_MAX);
        if (!e || !msg || (memcpy(e->key, key, 32), !insert(c, e))) {
            fe_free(c->ctx, e, sizeof *e);
            fe_free(c->ctx, msg, FE_MSG_MAX);
            *out = NULL;
            return fe_oom(who);
        }
        e->msg = msg;
        e->state = RT_KC_FAILED; /* claimed below */
    }
    if (e->state == RT_KC_FAILED) {
        e->state = RT_KC_COMPILING;
        *mine = true;
    }
    *out = e;
    return WEFT_OK;
}

weft_status rt_kcache_wait(rt_kcache *c, rt_kentry *e)
{
    while (e->state == RT_KC_COMPILING) {
        pthread_cond_wait(&c->changed, c->lock);
    }
    if (e->state == RT_KC_FAILED) {
        return fe_error_copy(e->status, e->msg);
    }
    return WEFT_OK;
}

void rt_kcache_publish(rt_kcache *c, rt_kentry *e, int state,
                       weft_status status, const char *msg)
{
    e->state = state;
    if (state == RT_KC_FAILED) {
        e->status = status;
        snprintf(e->msg, FE_MSG_MAX, "%s", msg ? msg : "");
    }
    pthread_cond_broadcast(&c->changed);
}

void rt_key_begin(rt_key *k)
{
    llvm_blake3_hasher_init(&k->h);
}

void rt_key_add(rt_key *k, const void *p, size_t n)
{
    llvm_blake3_hasher_update(&k->h, p, n);
}

void rt_key_add_i64(rt_key *k, int64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)((uint64_t)v >> (8 * i)); /* fixed byte order */
    }
    rt_key_add(k, b, 8);
}

void rt_key_add_str(rt_key *k, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    rt_key_add_i64(k, (int64_t)n);
    rt_key_add(k, s ? s : "", n);
}

void rt_key_sink(void *key, const void *p, size_t n)
{
    rt_key_add(key, p, n);
}

void rt_key_finish(rt_key *k, uint8_t key[32])
{
    llvm_blake3_hasher_finalize(&k->h, key, 32);
}

void rt_kernel_symbol(const uint8_t key[32], int bytes, int i, char *buf,
                      size_t size)
{
    char *p = buf + snprintf(buf, size, "wk_");
    for (int b = 0; b < bytes; b++) {
        p += snprintf(p, 3, "%02x", key[b]);
    }
    snprintf(p, size - (size_t)(p - buf), "_%d", i);
}

#endif /* WEFT_HAVE_LLVM */
