/*
 * lib/trace.c: WEFT_TRACE, a Chrome trace of what weft does, and the
 * compile time by phase that weft_context_stats reports.
 *
 * The file.  A trace is a JSON file in the Chrome trace-event format,
 *
 *     {"traceEvents":[
 *     {"name":"process_name","ph":"M","pid":...,"args":{"name":"weft"}},
 *     {"name":"llvm.opt","cat":"compile","ph":"X","pid":4711,"tid":1,
 *      "ts":1234.567,"dur":890.123,"args":{"kernel":"map"}},
 *     ...
 *     ],"displayTimeUnit":"ms"}
 *
 * which Perfetto (ui.perfetto.dev, "Open trace file") and chrome://tracing
 * load as they are.  Every span is a complete event ("X"): a name, a
 * category (frontend, compile, run, memory, device), the process id, a
 * track (tid: a small number per thread, fe_trace_tid, named by "M"
 * thread_name events; the GPU's device time has tracks of its own from
 * FE_TRACE_DEVICE_TID up), its start and duration in microseconds from
 * the moment the file was opened, and arguments.
 *
 * Writers.  One writer per file and process: contexts that trace to the
 * same path share it (a list of open writers under a global lock, a
 * reference count), so their events interleave in one valid file instead
 * of overwriting each other; "%p" in the path becomes the process id, for
 * a file per process.  Events are formatted into the writer's buffer
 * under its lock and written out when the buffer passes FLUSH_BYTES, when
 * a context that uses the writer is freed, and when the last one is.  At
 * each write the writer seeks back over the closing bracket it wrote last
 * time, appends the new events and writes the closing bracket again, so
 * the file on disk is valid JSON after every write, not only at the end.
 * A process that exits without freeing its contexts is covered by an
 * atexit handler that writes out and closes every writer (events that
 * come later, say from a background thread that another atexit handler
 * stops afterwards, are dropped); a forked child never writes its
 * parent's file (the writer remembers its process).
 *
 * Cost.  A site that traces tests ctx->trace (FE_TRACING: one predictable
 * branch) and reads no clock when it is NULL; the hot ones (weft_run,
 * rt_exec, rt_job_phases) keep their traced path out of line, so that the
 * untraced one is that test and nothing more.  bench/trace_overhead.c,
 * counted with callgrind (a shared machine blurs time): 7,335
 * instructions per weft_run of a small map or dot product against 7,310
 * without the trace code, most of the 25 from GCC no longer inlining
 * rt_job_phases into exec.c.  Compile phases read the clock always,
 * because weft_stats counts them whether or not a trace is written; a
 * compile is milliseconds, the clock tens of nanoseconds.  The writers'
 * memory comes from the C library, not a context's allocator: a writer
 * outlives the context that opened it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fe.h"

_Static_assert(FE_PHASE_COUNT <= sizeof((weft_context *)0)->phase_ns /
                                     sizeof((weft_context *)0)->phase_ns[0],
               "weft_context.phase_ns has a counter per phase");

enum {
    FLUSH_BYTES = 64 * 1024, /* buffered events written out beyond this */
    NAMED_MAX = 256,         /* tracks whose names a writer remembers */
    EVENT_MAX = 1024,        /* longest event (longer args are cut) */
};

static const char TRAILER[] = "\n],\"displayTimeUnit\":\"ms\"}\n";

struct fe_trace {
    struct fe_trace *next; /* under open_lock: the open writers */
    int refs;              /* under open_lock: contexts using it */
    char *path;            /* malloc'd: the file (after %p) */
    pid_t owner;           /* the process that opened it */
    uint64_t t_base;       /* fe_clock_ns at open: ts 0 */
    pthread_mutex_t lock;  /* guards everything below */
    FILE *f;               /* NULL once closed (at exit) */
    long data_end;         /* where the trailer starts in the file */
    char *buf;             /* malloc'd: events not yet written */
    size_t len, cap;
    int named[NAMED_MAX]; /* tracks named so far */
    int nnamed;
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static fe_trace *open_traces;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static _Atomic int next_tid = 1;
static _Thread_local int my_tid;
static _Thread_local const char *my_label;

uint64_t fe_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int fe_trace_tid(void)
{
    if (!my_tid) {
        my_tid = atomic_fetch_add(&next_tid, 1);
    }
    return my_tid;
}

void fe_trace_thread_label(const char *label)
{
    my_label = label;
}

/* ---- the buffer and the file (t->lock held) ---- */

/* Append n bytes to t's buffer; false when out of memory (dropped). */
static bool put(fe_trace *t, const char *s, size_t n)
{
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 2 * FLUSH_BYTES;
        while (cap < t->len + n) {
            cap *= 2;
        }
        char *b = realloc(t->buf, cap);
        if (!b) {
            return false;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    return true;
}

/* Write the buffer after the events already in the file, then the
 * trailer: the file is whole JSON again.  A forked child writes nothing. */
static void write_out(fe_trace *t)
{
    if (!t->f || t->owner != getpid()) {
        t->len = 0;
        return;
    }
    if (t->len > 0) {
        if (fseek(t->f, t->data_end, SEEK_SET) == 0 &&
            fwrite(t->buf, 1, t->len, t->f) == t->len) {
            t->data_end += (long)t->len;
        }
        t->len = 0;
    }
    if (fseek(t->f, t->data_end, SEEK_SET) == 0) {
        fwrite(TRAILER, 1, sizeof TRAILER - 1, t->f);
    }
    fflush(t->f);
}

/* One event: ",\n{...}" into the buffer (every event follows the
 * process_name event written at open, hence the leading comma). */
static void add_event(fe_trace *t, const char *ev, int n)
{
    if (n <= 0) {
        return;
    }
    if ((size_t)n >= EVENT_MAX) {
        n = EVENT_MAX - 1; /* cut: args too long (see fe_trace_span) */
    }
    if (put(t, ",\n", 2) && !put(t, ev, (size_t)n)) {
        t->len -= 2;
    }
}

/* Name track tid with label unless t has done so. */
static void name_track(fe_trace *t, int tid, const char *label)
{
    for (int i = 0; i < t->nnamed; i++) {
        if (t->named[i] == tid) {
            return;
        }
    }
    if (t->nnamed == NAMED_MAX) {
        return;
    }
    t->named[t->nnamed++] = tid;
    char ev[EVENT_MAX], dflt[32];
    if (!label) {
        snprintf(dflt, sizeof dflt, "thread %d", tid);
        label = dflt;
    }
    int n = snprintf(ev, sizeof ev,
                     "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
                     "\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                     (int)t->owner, tid, label);
    add_event(t, ev, n);
}

/* The event itself, with args formatted from fmt, t->lock held. */
static void emit(fe_trace *t, int tid, uint64_t t0, uint64_t dur,
                 const char *cat, const char *name, const char *fmt, va_list ap)
{
    char args[EVENT_MAX / 2];
    args[0] = '\0';
    if (fmt) {
        int a = vsnprintf(args, sizeof args, fmt, ap);
        if (a < 0 || (size_t)a >= sizeof args) {
            args[0] = '\0'; /* cut args would not be JSON */
        }
    }
    double ts = t0 > t->t_base ? (double)(t0 - t->t_base) / 1e3 : 0.0;
    char ev[EVENT_MAX];
    int n =
        snprintf(ev, sizeof ev,
                 "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\","
                 "\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                 "\"args\":{%s}}",
                 name, cat, (int)t->owner, tid, ts, (double)dur / 1e3, args);
    add_event(t, ev, n);
    if (t->len >= FLUSH_BYTES) {
        write_out(t);
    }
}

/* ---- events ---- */

static void vevent(weft_context *ctx, int tid, uint64_t t0, uint64_t dur,
                   const char *cat, const char *name, const char *fmt,
                   va_list ap)
{
    fe_trace *t = ctx->trace;
    pthread_mutex_lock(&t->lock);
    if (t->f) {
        if (tid < FE_TRACE_DEVICE_TID) {
            name_track(t, tid, my_label);
        }
        emit(t, tid, t0, dur, cat, name, fmt, ap);
    }
    pthread_mutex_unlock(&t->lock);
}

void fe_trace_span(weft_context *ctx, uint64_t t0, const char *cat,
                   const char *name, const char *args, ...)
{
    if (!ctx || !ctx->trace) {
        return;
    }
    uint64_t now = fe_clock_ns();
    va_list ap;
    va_start(ap, args);
    vevent(ctx, fe_trace_tid(), t0, now > t0 ? now - t0 : 0, cat, name, args,
           ap);
    va_end(ap);
}

void fe_trace_event(weft_context *ctx, int tid, uint64_t t0, uint64_t dur,
                    const char *cat, const char *name, const char *args, ...)
{
    if (!ctx || !ctx->trace) {
        return;
    }
    va_list ap;
    va_start(ap, args);
    vevent(ctx, tid, t0, dur, cat, name, args, ap);
    va_end(ap);
}

void fe_trace_track_name(weft_context *ctx, int tid, const char *name)
{
    if (!ctx || !ctx->trace) {
        return;
    }
    fe_trace *t = ctx->trace;
    pthread_mutex_lock(&t->lock);
    if (t->f) {
        name_track(t, tid, name);
    }
    pthread_mutex_unlock(&t->lock);
}

uint64_t fe_phase_end(weft_context *ctx, fe_phase ph, uint64_t t0,
                      const char *name, const char *args, ...)
{
    uint64_t now = fe_clock_ns();
    if (!ctx) {
        return now;
    }
    uint64_t dur = now > t0 ? now - t0 : 0;
    if (ph < FE_PHASE_COUNT) {
        atomic_fetch_add_explicit(&ctx->phase_ns[ph], dur,
                                  memory_order_relaxed);
    }
    if (ctx->trace) {
        va_list ap;
        va_start(ap, args);
        vevent(ctx, fe_trace_tid(), t0, dur,
               ph == FE_PHASE_FRONTEND ? "frontend" : "compile", name, args,
               ap);
        va_end(ap);
    }
    return now;
}

void fe_stats_add_phases(weft_stats *st, const weft_context *src)
{
    double ms[FE_PHASE_COUNT];
    for (int p = 0; p < FE_PHASE_COUNT; p++) {
        ms[p] = (double)atomic_load_explicit(&src->phase_ns[p],
                                             memory_order_relaxed) /
                1e6;
    }
    st->frontend_ms += ms[FE_PHASE_FRONTEND];
    st->ir_ms += ms[FE_PHASE_IR];
    st->llvm_opt_ms += ms[FE_PHASE_LLVM_OPT];
    st->llvm_codegen_ms += ms[FE_PHASE_LLVM_CODEGEN];
    st->ptx_ms += ms[FE_PHASE_PTX];
    st->driver_link_ms += ms[FE_PHASE_DRIVER_LINK];
    st->jit_link_ms += ms[FE_PHASE_JIT_LINK];
    st->disk_ms += ms[FE_PHASE_DISK];
}

/* ---- opening and closing ---- */

/* Write out and close every writer: the process is exiting. */
static void close_all_at_exit(void)
{
    pthread_mutex_lock(&open_lock);
    for (fe_trace *t = open_traces; t; t = t->next) {
        pthread_mutex_lock(&t->lock);
        if (t->f) {
            write_out(t);
            fclose(t->f);
            t->f = NULL;
        }
        pthread_mutex_unlock(&t->lock);
    }
    pthread_mutex_unlock(&open_lock);
}

static void register_exit(void)
{
    atexit(close_all_at_exit);
}

/* path with "%p" replaced by the process id (and "%%" by "%") into out. */
static bool resolve(const char *path, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = path; *p; p++) {
        char num[24];
        const char *piece = num;
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(num, sizeof num, "%d", (int)getpid());
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            num[0] = '%';
            num[1] = '\0';
            p++;
        } else {
            num[0] = *p;
            num[1] = '\0';
        }
        size_t k = strlen(piece);
        if (o + k >= n) {
            return false;
        }
        memcpy(out + o, piece, k);
        o += k;
    }
    out[o] = '\0';
    return true;
}

/* A new writer on a fresh file at path (open_lock held). */
static weft_status trace_new(const char *path, fe_trace **out)
{
    fe_trace *t = calloc(1, sizeof *t);
    char *p = t ? strdup(path) : NULL;
    if (!p) {
        free(t);
        return fe_oom("weft_context_create: trace");
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        int e = errno;
        free(p);
        free(t);
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_context_create: cannot write the trace file "
                        "\"%.256s\": %s",
                        path, strerror(e));
    }
    pthread_mutex_init(&t->lock, NULL);
    t->path = p;
    t->f = f;
    t->refs = 1;
    t->owner = getpid();
    t->t_base = fe_clock_ns();
    int n = fprintf(f,
                    "{\"traceEvents\":[\n{\"name\":\"process_name\","
                    "\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"weft "
                    "(pid %d)\"}}",
                    (int)t->owner, (int)t->owner);
    t->data_end = n > 0 ? n : 0;
    write_out(t);
    *out = t;
    return WEFT_OK;
}

weft_status fe_trace_open(weft_context *ctx, const char *path)
{
    char resolved[4096];
    if (!resolve(path, resolved, sizeof resolved)) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_context_create: the trace path \"%.64s...\" is "
                        "too long",
                        path);
    }
    pthread_once(&exit_once, register_exit);
    pthread_mutex_lock(&open_lock);
    fe_trace *t = open_traces;
    while (t &&
           !(strcmp(t->path, resolved) == 0 && t->f && t->owner == getpid())) {
        t = t->next;
    }
    weft_status s = WEFT_OK;
    if (t) {
        t->refs++;
    } else {
        s = trace_new(resolved, &t);
        if (s == WEFT_OK) {
            t->next = open_traces;
            open_traces = t;
        }
    }
    pthread_mutex_unlock(&open_lock);
    if (s == WEFT_OK) {
        ctx->trace = t;
    }
    return s;
}

void fe_trace_share(weft_context *dst, const weft_context *src)
{
    pthread_mutex_lock(&open_lock);
    fe_trace *t = src->trace;
    if (t) {
        t->refs++;
    }
    dst->trace = t;
    pthread_mutex_unlock(&open_lock);
}

void fe_trace_flush(weft_context *ctx)
{
    fe_trace *t = ctx ? ctx->trace : NULL;
    if (t) {
        pthread_mutex_lock(&t->lock);
        write_out(t);
        pthread_mutex_unlock(&t->lock);
    }
}

void fe_trace_close(weft_context *ctx)
{
    fe_trace *t = ctx->trace;
    if (!t) {
        return;
    }
    ctx->trace = NULL;
    pthread_mutex_lock(&open_lock);
    pthread_mutex_lock(&t->lock);
    write_out(t);
    bool last = --t->refs == 0;
    if (last && t->f) {
        fclose(t->f);
        t->f = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    if (last) {
        for (fe_trace **p = &open_traces; *p; p = &(*p)->next) {
            if (*p == t) {
                *p = t->next;
                break;
            }
        }
    }
    pthread_mutex_unlock(&open_lock);
    if (last) {
        pthread_mutex_destroy(&t->lock);
        free(t->buf);
        free(t->path);
        free(t);
    }
}
