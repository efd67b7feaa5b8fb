/*
 * lib/alloc.c: allocation through the context's allocator, and arenas.
 *
 * Every byte weft allocates goes through the weft_alloc_fn of its context
 * (a test injects failures there).  An arena is a list of chunks; terms of
 * a program, the core of an executable and pass scratch live in arenas and
 * die in one call (QBE's pools).
 */
#include <stdlib.h>
#include <string.h>

#include "fe.h"

struct fe_chunk {
    struct fe_chunk *next;
    size_t size;                     /* bytes of data[] */
    _Alignas(16) unsigned char data[];
};

enum { CHUNK_DEFAULT = 16 * 1024 };

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
        fe_free(a->ctx, c, sizeof *c + c->size);
        c = next;
    }
    a->chunks = NULL;
    a->used = a->cap = 0;
}
