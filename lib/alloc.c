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
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
