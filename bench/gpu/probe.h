/*
 * bench/gpu/probe.h: what the standalone probes of bench/gpu share (each
 * is one C file that gcc builds against libweft.so on the GPU machine):
 * the monotonic clock in ms, the order of doubles for qsort (medians),
 * and, where the probe defines PROBE_NAME before including this, the exit
 * on a weft failure that names the probe.
 */
#ifndef PROBE_H
#define PROBE_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "weft.h"

static inline double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* For qsort: ascending doubles. */
static inline int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#ifdef PROBE_NAME
/* "PROBE_NAME: what: weft's last error" on stderr, and exit 1. */
static inline void die(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", PROBE_NAME, what, weft_last_error());
    exit(1);
}
#endif

#ifdef PROBE_EVENTS
#include <dlfcn.h>
#include <string.h>

/* CUDA events on weft's stream (PROBE_EVENTS): the driver's entries
 * through dlopen (libcuda needs no build-time dependency), the stream's
 * own context pushed on this thread, two events around each timed run.
 * probe_events_open is 0 when they work; otherwise the probe keeps to
 * the host clock. */
typedef struct probe_events {
    int (*record)(void *ev, void *stream);
    int (*sync)(void *ev);
    int (*elapsed)(float *ms, void *a, void *b);
    void *ev[2];
    void *stream; /* NULL: no events */
} probe_events;

static inline int probe_events_open(probe_events *e, weft_context *ctx)
{
    memset(e, 0, sizeof *e);
    void *stream = NULL, *cuctx = NULL;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || weft_context_stream(ctx, &stream)) {
        return -1;
    }
    int (*stream_ctx)(void *, void **) =
        (int (*)(void *, void **))dlsym(h, "cuStreamGetCtx");
    int (*push)(void *) = (int (*)(void *))dlsym(h, "cuCtxPushCurrent_v2");
    int (*create)(void **, unsigned) =
        (int (*)(void **, unsigned))dlsym(h, "cuEventCreate");
    e->record = (int (*)(void *, void *))dlsym(h, "cuEventRecord");
    e->sync = (int (*)(void *))dlsym(h, "cuEventSynchronize");
    e->elapsed =
        (int (*)(float *, void *, void *))dlsym(h, "cuEventElapsedTime");
    if (!stream_ctx || !push || !create || !e->record || !e->sync ||
        !e->elapsed || stream_ctx(stream, &cuctx) || push(cuctx) ||
        create(&e->ev[0], 0) || create(&e->ev[1], 0)) {
        return -1;
    }
    e->stream = stream;
    return 0;
}

/* Event `which` (0 before a run, 1 after it) on weft's stream. */
static inline void probe_events_mark(probe_events *e, int which)
{
    if (e->stream) {
        e->record(e->ev[which], e->stream);
    }
}

/* The ms between the two marks (after the second is done), or -1. */
static inline double probe_events_ms(probe_events *e)
{
    float ms = -1;
    if (!e->stream || e->sync(e->ev[1]) ||
        e->elapsed(&ms, e->ev[0], e->ev[1])) {
        return -1;
    }
    return ms;
}
#endif

#endif
