/*
 * lib/context.c: configuration and contexts.
 *
 * A context holds the configuration, the chosen backend (a table of
 * functions, lib/fe.h fe_backend) and the interned tuple types.  The
 * environment (WEFT_BACKEND, WEFT_THREADS, WEFT_CHECK, WEFT_TIMEOUT_MS,
 * WEFT_FAST_MATH, WEFT_CACHE_MAX, WEFT_TRACE, ...) overrides the configuration unless
 * WEFT_FLAG_NO_ENV is set.
 *
 * The configuration crosses the API as the caller's struct, whose layout
 * may be an older or newer weft.h's (docs/abi.md): it carries its size and
 * a magic number, and config_copy reads it into a full-size weft_config
 * first, so everything after that reads fields as declared here.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

/* The most worker threads a context may ask for, for every backend: the
 * CPU gang's limit (runtime-cpu/cpu.h CPU_GANG_MAX_THREADS). */
enum { MAX_THREADS = 4096 };

/* The first sized layout of weft_config: every field up to timeout_ms.
 * Fields after it are newer (docs/abi.md), and a configuration from a
 * header without them takes their defaults. */
#define CONFIG_MIN_SIZE (offsetof(weft_config, timeout_ms) + sizeof(double))
/* No weft.h will have a configuration larger than this. */
enum { CONFIG_MAX_SIZE = 4096 };

/* Whether size could be sizeof(weft_config) in some weft.h. */
static bool config_size_plausible(size_t size)
{
    return size >= CONFIG_MIN_SIZE && size <= CONFIG_MAX_SIZE &&
           size % _Alignof(weft_config) == 0;
}

weft_status weft_config_init_sized(weft_config *cfg, size_t size)
{
    if (!cfg) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_config_init: the configuration is NULL");
    }
    if (!config_size_plausible(size)) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_config_init: size %zu is not the size of a "
                        "weft_config (%zu to %d bytes, a multiple of %zu; "
                        "this weft's is %zu)",
                        size, CONFIG_MIN_SIZE, CONFIG_MAX_SIZE,
                        _Alignof(weft_config), sizeof(weft_config));
    }
    weft_config d;
    memset(&d, 0, sizeof d);
#ifdef WEFT_HAVE_LLVM
    d.backend = WEFT_BACKEND_CPU;
#else
    d.backend = WEFT_BACKEND_INTERP;
#endif
    d.size = (uint32_t)size;
    d.magic = WEFT_CONFIG_MAGIC;
    size_t known = size < sizeof d ? size : sizeof d;
    memcpy(cfg, &d, known);
    if (size > known) {
        memset((char *)cfg + known, 0, size - known); /* newer fields */
    }
    return WEFT_OK;
}

/* Copy the caller's configuration cfg (NULL: defaults) into the full-size
 * *out: check its magic and size, read an older layout as far as it goes
 * (the rest keeps its defaults), and accept a newer one whose unknown
 * tail is all zero.  `who` prefixes messages. */
static weft_status config_copy(const weft_config *cfg, weft_config *out,
                               const char *who)
{
    weft_config_init(out);
    if (!cfg) {
        return WEFT_OK;
    }
    if (cfg->magic != WEFT_CONFIG_MAGIC) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: the configuration was not made by "
                        "weft_config_init or weft_config_default (its magic "
                        "is 0x%08x, not 0x%08x)",
                        who, (unsigned)cfg->magic, WEFT_CONFIG_MAGIC);
    }
    size_t size = cfg->size;
    if (!config_size_plausible(size)) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: the configuration's size is %zu, which no "
                        "weft_config has (%zu to %d bytes; this weft's is "
                        "%zu)",
                        who, size, CONFIG_MIN_SIZE, CONFIG_MAX_SIZE,
                        sizeof(weft_config));
    }
    for (size_t i = sizeof *out; i < size; i++) {
        if (((const unsigned char *)cfg)[i] != 0) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: the configuration has size %zu, from a "
                            "newer weft.h, and sets fields (byte %zu) that "
                            "this weft (%s, size %zu) does not know",
                            who, size, i, weft_version(), sizeof *out);
        }
    }
    memcpy(out, cfg, size < sizeof *out ? size : sizeof *out);
    out->size = (uint32_t)sizeof *out;
    return WEFT_OK;
}

static const char *const backend_names[] = {
    [WEFT_BACKEND_INTERP] = "interp",
    [WEFT_BACKEND_CPU] = "cpu",
    [WEFT_BACKEND_PTX] = "ptx",
};

#define NBACKENDS (sizeof backend_names / sizeof *backend_names)

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
    for (int b = 0; b < (int)NBACKENDS; b++) {
        if (name_is(name, backend_names[b])) {
            *out = (weft_backend)b;
            return WEFT_OK;
        }
    }
    return fe_error(WEFT_ERR_BACKEND_UNKNOWN,
                    "weft_backend_from_name: unknown backend \"%.64s\" "
                    "(known: interp, cpu, ptx)",
                    name);
}

/* The table of a backend (see fe.h). */
const fe_backend *fe_backend_table(weft_backend b)
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
static weft_status env_switch(const char *name, unsigned flag, unsigned *flags,
                              const char *who)
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
                        "%s: %s=\"%.32s\" is neither 0 nor 1", who, name, v);
    }
    return WEFT_OK;
}

/* A size in bytes: decimal digits, then optionally K, M or G (either
 * case) for 1024, 1024^2 or 1024^3.  False for anything else or for a
 * value past 2^64 - 1. */
static bool parse_bytes(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (p == s) {
        return false;
    }
    static const char units[] = "KMG";
    int shift = 0;
    if (*p != '\0') {
        const char *u = strchr(units, toupper((unsigned char)*p));
        if (!u) {
            return false;
        }
        shift = 10 * (int)(u - units + 1);
        p++;
    }
    if (*p != '\0' || v > (UINT64_MAX >> shift)) {
        return false;
    }
    *out = v << shift;
    return true;
}

/* The configuration a context made from cfg would have (see fe.h). */
weft_status fe_config_resolve(const weft_config *cfg, weft_config *out,
                              const char *who)
{
    weft_config c;
    weft_status copied = config_copy(cfg, &c, who);
    if (copied != WEFT_OK) {
        return copied;
    }
    if (!(c.flags & WEFT_FLAG_NO_ENV)) {
        const char *env = getenv("WEFT_BACKEND");
        if (env && *env) {
            weft_backend b;
            if (weft_backend_from_name(env, &b)) {
                return fe_error(WEFT_ERR_BACKEND_UNKNOWN,
                                "%s: WEFT_BACKEND=\"%.64s\" is not a "
                                "backend (known: interp, cpu, ptx)",
                                who, env);
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
                                "%s: WEFT_DEVICE=\"%.32s\" is not a device "
                                "number",
                                who, dev);
            }
            c.device = (int)n;
        }
        const char *devs = getenv("WEFT_DEVICES");
        if (devs && *devs) {
            c.devices = devs; /* parsed by the ptx backend (multi.c) */
        }
        const char *mem = getenv("WEFT_DEVICE_MEMORY");
        if (mem && *mem) {
            char *end;
            unsigned long long n = strtoull(mem, &end, 10);
            if (*end != '\0' || mem[0] == '-') {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "%s: WEFT_DEVICE_MEMORY=\"%.32s\" is not a "
                                "number of bytes",
                                who, mem);
            }
            c.device_memory = n;
        }
        weft_status st =
            env_switch("WEFT_CHECK", WEFT_FLAG_CHECKED, &c.flags, who);
        if (st != WEFT_OK) {
            return st;
        }
        const char *to = getenv("WEFT_TIMEOUT_MS");
        if (to && *to) {
            char *end;
            double ms = strtod(to, &end);
            if (*end != '\0' || !(ms >= 0) || isinf(ms)) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "%s: WEFT_TIMEOUT_MS=\"%.32s\" is not a "
                                "number of milliseconds",
                                who, to);
            }
            c.timeout_ms = ms;
        }
        const char *spmd = getenv("WEFT_SPMD");
        if (spmd && strcmp(spmd, "0") == 0) {
            c.flags |= WEFT_FLAG_NO_SPMD;
        }
        st = env_switch("WEFT_FAST_MATH", WEFT_FLAG_FAST_MATH, &c.flags, who);
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
                                "%s: WEFT_TIERING=\"%.32s\" is not 0, 1 "
                                "or quick",
                                who, tier);
            }
        }
        const char *trace = getenv("WEFT_TRACE");
        if (trace && *trace) {
            c.trace = trace;
        }
        const char *th = getenv("WEFT_THREADS");
        if (th && *th) {
            char *end;
            long n = strtol(th, &end, 10);
            if (*end != '\0' || n < 0 || n > MAX_THREADS) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "%s: WEFT_THREADS=\"%.32s\" is not a "
                                "thread count (0 to %d)",
                                who, th, MAX_THREADS);
            }
            c.threads = (int)n;
        }
        const char *cmax = getenv("WEFT_CACHE_MAX");
        if (cmax && *cmax) {
            if (!parse_bytes(cmax, &c.cache_max)) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "%s: WEFT_CACHE_MAX=\"%.32s\" is not a "
                                "number of bytes (digits, then K, M or G "
                                "for powers of 1024)",
                                who, cmax);
            }
        }
    }
    if ((unsigned)c.backend > WEFT_BACKEND_PTX) {
        return fe_error(WEFT_ERR_BACKEND_UNKNOWN,
                        "%s: backend %d is not a backend", who, (int)c.backend);
    }
    if (c.threads < 0 || c.threads > MAX_THREADS) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: config field threads is %d, expected 0 (one "
                        "per core) to %d",
                        who, c.threads, MAX_THREADS);
    }
    if (!(c.timeout_ms >= 0) || isinf(c.timeout_ms)) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: config field timeout_ms is %g, expected 0 (no "
                        "deadline) or a positive number of milliseconds",
                        who, c.timeout_ms);
    }
    *out = c;
    return WEFT_OK;
}

weft_status weft_context_create(const weft_config *cfg, weft_context **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_context_create: out is NULL");
    }
    *out = NULL;
    weft_config c;
    weft_status resolved = fe_config_resolve(cfg, &c, "weft_context_create");
    if (resolved != WEFT_OK) {
        return resolved;
    }
    const fe_backend *be = fe_backend_table(c.backend);
    if (!be) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft_context_create: the %s backend is not available "
                        "in this build of weft",
                        /* in range (fe_config_resolve), as gcc cannot see */
                        backend_names[(unsigned)c.backend % NBACKENDS]);
    }
    weft_context tmp = {.cfg = c};
    weft_context *ctx = fe_calloc(&tmp, sizeof *ctx);
    if (!ctx) {
        return fe_oom("weft_context_create");
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
    /* The trace first, so that it sees the backend's set-up. */
    weft_status st =
        c.trace && *c.trace ? fe_trace_open(ctx, c.trace) : WEFT_OK;
    if (st == WEFT_OK && be->context_init) {
        st = be->context_init(ctx);
    }
    if (st) {
        fe_trace_close(ctx);
        pthread_mutex_destroy(&ctx->pool_lock);
        pthread_mutex_destroy(&ctx->lock);
        fe_free(ctx, ctx, sizeof *ctx);
        return st;
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
    fe_trace_close(ctx); /* after the backend's last events */
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

weft_status weft_context_stats_sized(const weft_context *ctx, weft_stats *out,
                                     size_t size)
{
    if (!ctx || !out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_context_stats: %s is NULL",
                        ctx ? "out" : "the context");
    }
    weft_stats st;
    memset(&st, 0, sizeof st);
    st.threads = 1;
    fe_stats_add_phases(&st, ctx);
    if (ctx->be->stats) { /* a backend's own phases are added there */
        ctx->be->stats(ctx, &st);
    }
    fe_copy_sized(out, size, &st, sizeof st);
    return WEFT_OK;
}
