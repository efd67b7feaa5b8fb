/*
 * lib/context.c: configuration and contexts.
 *
 * A context holds the configuration, the chosen backend (a table of
 * functions, lib/fe.h fe_backend) and the interned tuple types.  The
 * environment (WEFT_BACKEND, WEFT_THREADS, WEFT_CHECK, WEFT_TIMEOUT_MS,
 * WEFT_FAST_MATH, ...) overrides the configuration unless WEFT_FLAG_NO_ENV
 * is set.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

/* The most worker threads a context may ask for, for every backend: the
 * CPU gang's limit (runtime-cpu/cpu.h CPU_GANG_MAX_THREADS). */
enum { MAX_THREADS = 4096 };

weft_config weft_config_default(void)
{
    weft_config cfg;
    memset(&cfg, 0, sizeof cfg);
#ifdef WEFT_HAVE_LLVM
    cfg.backend = WEFT_BACKEND_CPU;
#else
    cfg.backend = WEFT_BACKEND_INTERP;
#endif
    return cfg;
}

static const char *const backend_names[] = {
    [WEFT_BACKEND_INTERP] = "interp",
    [WEFT_BACKEND_CPU] = "cpu",
    [WEFT_BACKEND_PTX] = "ptx",
};

static bool name_is(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) {
            return false;
        }
    }
    return *a == *b;
}

weft_status weft_backend_from_name(const char *name, weft_backend *out)
{
    if (!name || !out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_backend_from_name: %s is NULL",
                        name ? "out" : "name");
    }
    for (int b = 0; b < (int)(sizeof backend_names / sizeof *backend_names); b++) {
        if (name_is(name, backend_names[b])) {
            *out = (weft_backend)b;
            return WEFT_OK;
        }
    }
    return fe_error(WEFT_ERR_BACKEND_UNKNOWN,
                    "weft_backend_from_name: unknown backend \"%.64s\" "
                    "(known: interp, cpu, ptx)", name);
}

/* The table of a backend, or NULL where it is not built into this weft. */
static const fe_backend *backend_table(weft_backend b)
{
    switch (b) {
    case WEFT_BACKEND_INTERP: return &fe_backend_interp;
#ifdef WEFT_HAVE_LLVM
    case WEFT_BACKEND_CPU: return &fe_backend_cpu;
    case WEFT_BACKEND_PTX: return &fe_backend_ptx;
#endif
    default: return NULL;
    }
}

/* An on/off variable of the environment: $name=1 sets flag in *flags, 0
 * clears it, unset or empty leaves it; anything else is an error. */
static weft_status env_switch(const char *name, unsigned flag,
                              unsigned *flags)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        return WEFT_OK;
    }
    if (strcmp(v, "1") == 0) {
        *flags |= flag;
    } else if (strcmp(v, "0") == 0) {
        *flags &= ~flag;
    } else {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_context_create: %s=\"%.32s\" is neither 0 nor 1",
                        name, v);
    }
    return WEFT_OK;
}

weft_status weft_context_create(const weft_config *cfg, weft_context **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_context_create: out is NULL");
    }
    *out = NULL;
    weft_config c = cfg ? *cfg : weft_config_default();
    if (!(c.flags & WEFT_FLAG_NO_ENV)) {
        const char *env = getenv("WEFT_BACKEND");
        if (env && *env) {
            weft_backend b;
            if (weft_backend_from_name(env, &b)) {
                return fe_error(WEFT_ERR_BACKEND_UNKNOWN,
                                "weft_context_create: WEFT_BACKEND=\"%.64s\" "
                                "is not a backend (known: interp, cpu, ptx)",
                                env);
            }
            c.backend = b;
        }
        const char *dump = getenv("WEFT_DUMP");
        if (dump && *dump) {
            c.dump = dump;
        }
        const char *dump_dir = getenv("WEFT_DUMP_DIR");
        if (dump_dir && *dump_dir) {
            c.dump_dir = dump_dir;
        }
        const char *dev = getenv("WEFT_DEVICE");
        if (dev && *dev) {
            char *end;
            long n = strtol(dev, &end, 10);
            if (*end != '\0' || n < 0 || n > 1024) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "weft_context_create: WEFT_DEVICE=\"%.32s\" "
                                "is not a device number", dev);
            }
            c.device = (int)n;
        }
        const char *mem = getenv("WEFT_DEVICE_MEMORY");
        if (mem && *mem) {
            char *end;
            unsigned long long n = strtoull(mem, &end, 10);
            if (*end != '\0' || mem[0] == '-') {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "weft_context_create: WEFT_DEVICE_MEMORY="
                                "\"%.32s\" is not a number of bytes", mem);
            }
            c.device_memory = n;
        }
        weft_status st = env_switch("WEFT_CHECK", WEFT_FLAG_CHECKED, &c.flags);
        if (st != WEFT_OK) {
            return st;
        }
        const char *to = getenv("WEFT_TIMEOUT_MS");
        if (to && *to) {
            char *end;
            double ms = strtod(to, &end);
            if (*end != '\0' || !(ms >= 0) || isinf(ms)) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "weft_context_create: WEFT_TIMEOUT_MS="
                                "\"%.32s\" is not a number of milliseconds",
                                to);
            }
            c.timeout_ms = ms;
        }
        const char *spmd = getenv("WEFT_SPMD");
        if (spmd && strcmp(spmd, "0") == 0) {
            c.flags |= WEFT_FLAG_NO_SPMD;
        }
        st = env_switch("WEFT_FAST_MATH", WEFT_FLAG_FAST_MATH, &c.flags);
        if (st != WEFT_OK) {
            return st;
        }
        const char *tier = getenv("WEFT_TIERING");
        if (tier && *tier) {
            unsigned both = WEFT_FLAG_NO_TIERING | WEFT_FLAG_QUICK_CODE;
            if (strcmp(tier, "1") == 0) {
                c.flags &= ~both;
            } else if (strcmp(tier, "0") == 0) {
                c.flags = (c.flags & ~both) | WEFT_FLAG_NO_TIERING;
            } else if (strcmp(tier, "quick") == 0) {
                c.flags = (c.flags & ~both) | WEFT_FLAG_QUICK_CODE;
            } else {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "weft_context_create: WEFT_TIERING=\"%.32s\" "
                                "is not 0, 1 or quick", tier);
            }
        }
        const char *th = getenv("WEFT_THREADS");
        if (th && *th) {
            char *end;
            long n = strtol(th, &end, 10);
            if (*end != '\0' || n < 0 || n > MAX_THREADS) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "weft_context_create: WEFT_THREADS=\"%.32s\" "
                                "is not a thread count (0 to %d)", th,
                                MAX_THREADS);
            }
            c.threads = (int)n;
        }
    }
    if ((unsigned)c.backend > WEFT_BACKEND_PTX) {
        return fe_error(WEFT_ERR_BACKEND_UNKNOWN,
                        "weft_context_create: backend %d is not a backend",
                        (int)c.backend);
    }
    if (c.threads < 0 || c.threads > MAX_THREADS) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_context_create: config field threads is %d, "
                        "expected 0 (one per core) to %d", c.threads,
                        MAX_THREADS);
    }
    if (!(c.timeout_ms >= 0) || isinf(c.timeout_ms)) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_context_create: config field timeout_ms is %g, "
                        "expected 0 (no deadline) or a positive number of "
                        "milliseconds", c.timeout_ms);
    }
    const fe_backend *be = backend_table(c.backend);
    if (!be) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft_context_create: the %s backend is not available "
                        "in this build of weft", backend_names[c.backend]);
    }
    weft_context tmp = {.cfg = c};
    weft_context *ctx = fe_calloc(&tmp, sizeof *ctx);
    if (!ctx) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "weft_context_create: out of memory");
    }
    ctx->cfg = c;
    ctx->backend = c.backend;
    ctx->be = be;
    atomic_init(&ctx->cancel_epoch, 0);
    if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
        fe_free(ctx, ctx, sizeof *ctx);
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "weft_context_create: cannot create a mutex");
    }
    if (pthread_mutex_init(&ctx->pool_lock, NULL) != 0) {
        pthread_mutex_destroy(&ctx->lock);
        fe_free(ctx, ctx, sizeof *ctx);
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "weft_context_create: cannot create a mutex");
    }
    if (be->context_init) {
        weft_status st = be->context_init(ctx);
        if (st) {
            pthread_mutex_destroy(&ctx->pool_lock);
            pthread_mutex_destroy(&ctx->lock);
            fe_free(ctx, ctx, sizeof *ctx);
            return st;
        }
    }
    *out = ctx;
    return WEFT_OK;
}

void weft_context_free(weft_context *ctx)
{
    if (!ctx) {
        return;
    }
    if (ctx->be->context_fini) {
        ctx->be->context_fini(ctx);
    }
    fe_type_table_free(ctx);
    fe_pool_drain(ctx);
    pthread_mutex_destroy(&ctx->pool_lock);
    pthread_mutex_destroy(&ctx->lock);
    fe_free(ctx, ctx, sizeof *ctx);
}

weft_backend weft_context_backend(const weft_context *ctx)
{
    return ctx ? ctx->backend : WEFT_BACKEND_INTERP;
}

weft_status weft_context_wait_optimised(weft_context *ctx)
{
    if (!ctx) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_context_wait_optimised: the context is NULL");
    }
    return ctx->be->wait_optimised ? ctx->be->wait_optimised(ctx) : WEFT_OK;
}

weft_status weft_context_stats(const weft_context *ctx, weft_stats *out)
{
    if (!ctx || !out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_context_stats: %s is NULL",
                        ctx ? "out" : "the context");
    }
    memset(out, 0, sizeof *out);
    out->threads = 1;
    if (ctx->be->stats) {
        ctx->be->stats(ctx, out);
    }
    return WEFT_OK;
}
