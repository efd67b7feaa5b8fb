/*
 * lib/alloc.c: allocation through the context's allocator, and arenas.
 *
 * Every byte weft allocates goes through the weft_alloc_fn of its context
 * (a test injects failures there).  An arena is a list of chunks; terms of
 * a program, the core of an executable and pass scratch live in arenas and
 * die in one call (QBE's pools).
 *
 * Large arena allocations.  Arena memory is zeroed, and some passes take
 * a table indexed by variable for each kernel or function (code
 * generation's environments, a kernel's free variables): n variables
 * times k kernels, quadratic in a generated program of many kernels
 * (10^5 maps: 10^10 bytes zeroed), though each kernel touches a few
 * entries.  So, with the default allocator, a request of MAPPED_MIN bytes
 * or more gets a chunk of its own from mmap, whose pages the kernel zeroes
 * when first touched: the cost follows what is used.  (A context with its
 * own allocator keeps every byte going through it.)  Mappings are a
 * resource of the process (vm.max_map_count, 65530 by default, which
 * malloc and the JIT need too), so at most MAPPED_MAX are live; meant
 * for scratch arenas, released soon.
 *
 * Guarded data blocks.  With WEFT_GUARD_ALLOC set in the environment (read
 * once per process; see docs/DESIGN.md, "Guarded allocation"), every array
 * buffer (fe_data_alloc) is a mapping of its own whose last byte sits right
 * before a PROT_NONE page, with another such page before its first page:
 * a kernel that reads or writes one element past an array's end faults on
 * every run, not only where malloc happened to end the buffer at an
 * unmapped page.  "front" puts the first byte right after the leading
 * guard page instead, for reads before the start.  The CPU kernels assume
 * no alignment beyond an element's (sk_target array_align is 0 there:
 * arrays may be the caller's memory), and an end-placed block is aligned
 * to the largest power of two that divides its size, a multiple of the
 * element size; so the guard keeps every promise the kernels rely on.  A
 * freed block is not unmapped at once but its pages are dropped and made
 * PROT_NONE, and kept so for the next QUARANTINE frees, so that a stale
 * pointer into it faults too.  A context with its own allocator keeps
 * every byte going through it (no guard).  Slow (two system calls a
 * block): a debugging mode, for test runs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fe.h"

struct fe_chunk {
    struct fe_chunk *next;
    size_t size; /* bytes of data[] */
    bool mapped; /* from mmap (a large allocation) */
    _Alignas(16) unsigned char data[];
};

enum { CHUNK_DEFAULT = 16 * 1024, MAPPED_MIN = 64 * 1024, MAPPED_MAX = 1024 };

static atomic_int mapped_live; /* chunks from mmap not yet unmapped */

/* A zeroed chunk of its own for a large request of the default allocator,
 * put behind the arena's current chunk (which stays current); NULL when
 * not taken this way. */
static void *arena_mapped(fe_arena *a, size_t n)
{
    if (n < MAPPED_MIN || (a->ctx && a->ctx->cfg.alloc) || n > SIZE_MAX / 2) {
        return NULL;
    }
    if (atomic_fetch_add(&mapped_live, 1) >= MAPPED_MAX) {
        atomic_fetch_sub(&mapped_live, 1);
        return NULL;
    }
    size_t size = sizeof(struct fe_chunk) + n;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        atomic_fetch_sub(&mapped_live, 1);
        return NULL;
    }
    struct fe_chunk *c = m;
    c->size = n;
    c->mapped = true;
    if (a->chunks) {
        c->next = a->chunks->next;
        a->chunks->next = c;
    } else {
        c->next = NULL;
        a->chunks = c;
        a->used = a->cap = n; /* full: the next request takes a new chunk */
    }
    return c->data;
}

static void *call_alloc(weft_context *ctx, void *p, size_t old_n, size_t new_n)
{
    if (ctx && ctx->cfg.alloc) {
        return ctx->cfg.alloc(ctx->cfg.alloc_user, p, old_n, new_n);
    }
    if (new_n == 0) {
        free(p);
        return NULL;
    }
    return realloc(p, new_n);
}

void *fe_alloc(weft_context *ctx, size_t n)
{
    return call_alloc(ctx, NULL, 0, n ? n : 1);
}

void *fe_calloc(weft_context *ctx, size_t n)
{
    void *p = fe_alloc(ctx, n);
    if (p) {
        memset(p, 0, n ? n : 1);
    }
    return p;
}

void *fe_realloc(weft_context *ctx, void *p, size_t old_n, size_t new_n)
{
    return call_alloc(ctx, p, p ? (old_n ? old_n : 1) : 0, new_n ? new_n : 1);
}

void fe_free(weft_context *ctx, void *p, size_t n)
{
    if (p) {
        call_alloc(ctx, p, n ? n : 1, 0);
    }
}

void fe_arena_init(fe_arena *a, weft_context *ctx)
{
    a->ctx = ctx;
    a->chunks = NULL;
    a->used = 0;
    a->cap = 0;
}

void *fe_arena_alloc(fe_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0) {
        n = 16;
    }
    void *big = arena_mapped(a, n);
    if (big) {
        return big;
    }
    if (!a->chunks || a->cap - a->used < n) {
        size_t size = n > CHUNK_DEFAULT ? n : CHUNK_DEFAULT;
        if (size > SIZE_MAX - sizeof(struct fe_chunk)) {
            return NULL;
        }
        struct fe_chunk *c = fe_alloc(a->ctx, sizeof *c + size);
        if (!c) {
            return NULL;
        }
        c->size = size;
        c->mapped = false;
        c->next = a->chunks;
        a->chunks = c;
        a->used = 0;
        a->cap = size;
    }
    void *p = a->chunks->data + a->used;
    a->used += n;
    memset(p, 0, n);
    return p;
}

void *fe_arena_dup(fe_arena *a, const void *src, size_t n)
{
    if (n == 0) {
        return NULL;
    }
    void *p = fe_arena_alloc(a, n);
    if (p) {
        memcpy(p, src, n);
    }
    return p;
}

void fe_arena_release(fe_arena *a)
{
    struct fe_chunk *c = a->chunks;
    while (c) {
        struct fe_chunk *next = c->next;
        if (c->mapped) {
            munmap(c, sizeof *c + c->size);
            atomic_fetch_sub(&mapped_live, 1);
        } else {
            fe_free(a->ctx, c, sizeof *c + c->size);
        }
        c = next;
    }
    a->chunks = NULL;
    a->used = a->cap = 0;
}

/* ---- guarded data blocks ------------------------------------------------ */

enum { GUARD_OFF, GUARD_END, GUARD_FRONT };
enum { QUARANTINE = 256 };

static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static int guard_mode_v;
static size_t guard_page;

static void guard_init(void)
{
    const char *v = getenv("WEFT_GUARD_ALLOC");
    guard_mode_v = !v || !*v || strcmp(v, "0") == 0 ? GUARD_OFF
                   : strcmp(v, "front") == 0        ? GUARD_FRONT
                                                    : GUARD_END;
    long pg = sysconf(_SC_PAGESIZE);
    guard_page = pg > 0 ? (size_t)pg : 4096;
}

/* The guard mode for ctx's data blocks (GUARD_OFF for a context with its
 * own allocator). */
static int guard_mode(const weft_context *ctx)
{
    pthread_once(&guard_once, guard_init);
    return ctx && ctx->cfg.alloc ? GUARD_OFF : guard_mode_v;
}

bool fe_data_guarded(const weft_context *ctx)
{
    return guard_mode(ctx) != GUARD_OFF;
}

/* The mapping of a guarded block of n bytes: its bytes in all (a guard
 * page, the data pages, a guard page) and the data's offset in it. */
static size_t guard_span(size_t n, int mode, size_t *at)
{
    size_t data = (n + guard_page - 1) / guard_page * guard_page;
    *at = mode == GUARD_FRONT ? guard_page : guard_page + data - n;
    return data + 2 * guard_page;
}

/* The freed blocks kept PROT_NONE (a ring; the oldest is unmapped when a
 * new one comes). */
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *base;
    size_t span;
} quarantine[QUARANTINE];
static int quarantine_next;

static void *guard_alloc(size_t n, int mode)
{
    if (n > SIZE_MAX / 2) {
        return NULL;
    }
    size_t at, span = guard_span(n, mode, &at);
    unsigned char *base =
        mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        return NULL;
    }
    if (span > 2 * guard_page &&
        mprotect(base + guard_page, span - 2 * guard_page,
                 PROT_READ | PROT_WRITE) != 0) {
        munmap(base, span);
        return NULL;
    }
    return base + at;
}

static void guard_free(void *p, size_t n, int mode)
{
    size_t at, span = guard_span(n, mode, &at);
    unsigned char *base = (unsigned char *)p - at;
    madvise(base, span, MADV_DONTNEED);
    mprotect(base, span, PROT_NONE);
    pthread_mutex_lock(&quarantine_lock);
    void *old = quarantine[quarantine_next].base;
    size_t old_span = quarantine[quarantine_next].span;
    quarantine[quarantine_next].base = base;
    quarantine[quarantine_next].span = span;
    quarantine_next = (quarantine_next + 1) % QUARANTINE;
    pthread_mutex_unlock(&quarantine_lock);
    if (old) {
        munmap(old, old_span);
    }
}

void *fe_data_alloc(weft_context *ctx, size_t n, bool zero)
{
    int mode = guard_mode(ctx);
    if (mode != GUARD_OFF) {
        return guard_alloc(n, mode); /* fresh pages are zero */
    }
    return zero ? fe_calloc(ctx, n) : fe_alloc(ctx, n);
}

void fe_data_free(weft_context *ctx, void *p, size_t n)
{
    int mode = guard_mode(ctx);
    if (!p) {
        return;
    }
    if (mode != GUARD_OFF) {
        guard_free(p, n, mode);
    } else {
        fe_free(ctx, p, n);
    }
}
