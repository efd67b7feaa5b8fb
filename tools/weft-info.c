/*
 * tools/weft-info.c: what this weft is and what it can use on this
 * machine, for a person (the default) or a script (--json).
 *
 *     weft-info            weft's and LLVM's versions, each backend and
 *                          why it cannot run if not, the CUDA devices,
 *                          libdevice (or the paths tried), the disk cache
 *                          (directory, size, bound, or why it is off), the
 *                          CPU backend's worker threads, and the WEFT_*
 *                          variables set
 *     weft-info --json     the same as one JSON object
 *
 * Public API only (weft.h's introspection section), so it links libweft
 * and runs wherever the library does, the GPU bundle included.  It exits
 * 0 whenever it could report, whatever is unavailable; 2 for a bad
 * argument.  The environment applies as it does to a context: the cache
 * shown is the one weft_context_create would use.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

extern char **environ;

static const char *const backend_names[] = {"interp", "cpu", "ptx"};
enum { NBACKENDS = 3, MAX_DEVICES = 64 };

/* Everything weft-info reports, gathered before either format prints. */
typedef struct report {
    int available[NBACKENDS];
    char why[NBACKENDS][512];
    int threads; /* cpu workers; 0 when cpu is unavailable */
    int ndev;
    weft_device_info dev[MAX_DEVICES];
    char dev_why[512]; /* ndev 0: why */
    int libdevice_found;
    char libdevice[4096]; /* the path, or why not (the paths tried) */
    int nccl_found;
    char nccl[4096]; /* the path, or why not */
    weft_status cache_status;
    weft_cache_info cache;
    char cache_error[512]; /* cache_status not WEFT_OK: why */
} report;

/* The worker threads a CPU context would have, made as the user's would
 * be but on the cpu backend whatever $WEFT_BACKEND says; 0 on failure. */
static int cpu_threads(void)
{
    const char *b = getenv("WEFT_BACKEND");
    char *saved = b ? strdup(b) : NULL;
    unsetenv("WEFT_BACKEND");
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    weft_context *ctx = NULL;
    int threads = 0;
    weft_stats st;
    if (weft_context_create(&cfg, &ctx) == WEFT_OK &&
        weft_context_stats(ctx, &st) == WEFT_OK) {
        threads = st.threads;
    }
    weft_context_free(ctx);
    if (saved) {
        setenv("WEFT_BACKEND", saved, 1);
        free(saved);
    }
    return threads;
}

static void gather(report *r)
{
    memset(r, 0, sizeof *r);
    for (int b = 0; b < NBACKENDS; b++) {
        const char *why = NULL;
        r->available[b] = weft_backend_available((weft_backend)b, &why);
        if (why) {
            /* Without the function's name: the line says what it is. */
            const char *p = strstr(why, ": ");
            snprintf(r->why[b], sizeof r->why[b], "%s", p ? p + 2 : why);
        }
    }
    if (r->available[WEFT_BACKEND_CPU]) {
        r->threads = cpu_threads();
    }
    int n = 0;
    if (weft_device_count(&n) != WEFT_OK) {
        const char *p = strstr(weft_last_error(), ": ");
        snprintf(r->dev_why, sizeof r->dev_why, "%s",
                 p ? p + 2 : weft_last_error());
        n = 0;
    }
    for (int i = 0; i < n && r->ndev < MAX_DEVICES; i++) {
        if (weft_device_info_get(i, &r->dev[r->ndev]) == WEFT_OK) {
            r->ndev++;
        } else {
            snprintf(r->dev_why, sizeof r->dev_why, "%s", weft_last_error());
        }
    }
    r->libdevice_found =
        weft_libdevice_path(r->libdevice, sizeof r->libdevice) == WEFT_OK;
    if (!r->libdevice_found) {
        const char *p = strstr(weft_last_error(), ": ");
        snprintf(r->libdevice, sizeof r->libdevice, "%s",
                 p ? p + 2 : weft_last_error());
    }
    r->nccl_found = weft_nccl_path(r->nccl, sizeof r->nccl) == WEFT_OK;
    if (!r->nccl_found) {
        const char *p = strstr(weft_last_error(), ": ");
        snprintf(r->nccl, sizeof r->nccl, "%s", p ? p + 2 : weft_last_error());
    }
    r->cache_status = weft_cache_info_get(NULL, &r->cache);
    if (r->cache_status != WEFT_OK) {
        snprintf(r->cache_error, sizeof r->cache_error, "%s",
                 weft_last_error());
    }
}

/* bytes as "12.3 MiB" (or "512 B"). */
static const char *human(uint64_t bytes, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0) {
        snprintf(buf, n, "%llu B", (unsigned long long)bytes);
    } else {
        snprintf(buf, n, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v,
                 units[u]);
    }
    return buf;
}

static void print_text(const report *r)
{
    char a[32], b[32];
    printf("weft %s (LLVM %s)\n", weft_version(), weft_llvm_version());
    printf("backends:\n");
    for (int i = 0; i < NBACKENDS; i++) {
        if (!r->available[i]) {
            printf("  %s: unavailable: %s\n", backend_names[i], r->why[i]);
        } else if (i == WEFT_BACKEND_CPU && r->threads > 0) {
            printf("  %s: available (%d worker threads)\n", backend_names[i],
                   r->threads);
        } else {
            printf("  %s: available\n", backend_names[i]);
        }
    }
    if (r->ndev == 0) {
        printf("gpus: none: %s\n", r->dev_why);
    } else {
        printf("gpus:\n");
    }
    for (int i = 0; i < r->ndev; i++) {
        const weft_device_info *d = &r->dev[i];
        printf("  %d: %s, sm_%d%d, %s, %d SMs", d->ordinal, d->name,
               d->sm_major, d->sm_minor, human(d->memory_bytes, a, sizeof a),
               d->multiprocessors);
        if (d->clock_khz > 0) {
            printf(", %d MHz", d->clock_khz / 1000);
        }
        printf(", driver CUDA %d.%d\n", d->driver_version / 1000,
               d->driver_version % 1000 / 10);
    }
    if (r->libdevice_found) {
        printf("libdevice: %s\n", r->libdevice);
    } else {
        printf("libdevice: not found: %s\n", r->libdevice);
    }
    if (r->nccl_found) {
        printf("nccl: %s\n", r->nccl);
    } else {
        printf("nccl: not found: %s (several GPUs work without it)\n", r->nccl);
    }
    if (r->cache_status != WEFT_OK) {
        printf("cache: error: %s\n", r->cache_error);
    } else if (r->cache.enabled) {
        printf("cache: %s: %s in %llu entries, bound %s\n", r->cache.dir,
               human(r->cache.bytes, a, sizeof a),
               (unsigned long long)r->cache.entries,
               human(r->cache.max_bytes, b, sizeof b));
    } else {
        printf("cache: off: %s (bound %s)\n", r->cache.why,
               human(r->cache.max_bytes, b, sizeof b));
    }
    int any = 0;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "WEFT_", 5) == 0) {
            printf("%s  %s\n", any ? "" : "environment:\n", *e);
            any = 1;
        }
    }
}

/* s as a JSON string. */
static void json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p);
        } else if (*p < 0x20) {
            printf("\\u%04x", *p);
        } else {
            putchar(*p);
        }
    }
    putchar('"');
}

/* "key": "value" with a comma before unless first. */
static void json_kv(const char *key, const char *value, int first)
{
    printf("%s", first ? "" : ", ");
    json_str(key);
    printf(": ");
    json_str(value);
}

static void print_json(const report *r)
{
    printf("{");
    json_kv("version", weft_version(), 1);
    json_kv("llvm_version", weft_llvm_version(), 0);
    printf(", \"backends\": {");
    for (int i = 0; i < NBACKENDS; i++) {
        printf("%s\"%s\": {\"available\": %s", i ? ", " : "", backend_names[i],
               r->available[i] ? "true" : "false");
        if (!r->available[i]) {
            json_kv("why", r->why[i], 0);
        }
        if (i == WEFT_BACKEND_CPU && r->available[i]) {
            printf(", \"threads\": %d", r->threads);
        }
        printf("}");
    }
    printf("}, \"gpus\": [");
    for (int i = 0; i < r->ndev; i++) {
        const weft_device_info *d = &r->dev[i];
        printf("%s{\"ordinal\": %d", i ? ", " : "", d->ordinal);
        json_kv("name", d->name, 0);
        printf(", \"sm\": \"sm_%d%d\", \"memory_bytes\": %llu, "
               "\"multiprocessors\": %d, \"clock_khz\": %d, "
               "\"driver_version\": %d}",
               d->sm_major, d->sm_minor, (unsigned long long)d->memory_bytes,
               d->multiprocessors, d->clock_khz, d->driver_version);
    }
    printf("]");
    if (r->ndev == 0) {
        json_kv("gpus_why", r->dev_why, 0);
    }
    printf(", \"libdevice\": {\"found\": %s",
           r->libdevice_found ? "true" : "false");
    json_kv(r->libdevice_found ? "path" : "why", r->libdevice, 0);
    printf("}, \"nccl\": {\"found\": %s", r->nccl_found ? "true" : "false");
    json_kv(r->nccl_found ? "path" : "why", r->nccl, 0);
    printf("}, \"cache\": {");
    if (r->cache_status != WEFT_OK) {
        json_kv("error", r->cache_error, 1);
    } else {
        printf("\"enabled\": %s", r->cache.enabled ? "true" : "false");
        json_kv("dir", r->cache.dir, 0);
        if (!r->cache.enabled) {
            json_kv("why", r->cache.why, 0);
        }
        printf(", \"bytes\": %llu, \"entries\": %llu, \"max_bytes\": %llu",
               (unsigned long long)r->cache.bytes,
               (unsigned long long)r->cache.entries,
               (unsigned long long)r->cache.max_bytes);
    }
    printf("}, \"environment\": {");
    int first = 1;
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "WEFT_", 5) == 0 && eq) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
            json_kv(name, eq + 1, first);
            first = 0;
        }
    }
    printf("}}\n");
}

int main(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr,
                    "usage: %s [--json]\n"
                    "weft's version, backends, GPUs, libdevice and disk "
                    "cache on this machine\n",
                    argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    static report r; /* large: the device table */
    gather(&r);
    if (json) {
        print_json(&r);
    } else {
        print_text(&r);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
