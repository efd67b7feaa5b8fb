/*
 * lib/fe.h: weft's frontend and core, one internal header sectioned by file.
 *
 * Names here carry the prefix fe_.  Nothing in lib/ knows LLVM.
 *
 * The life of a program:
 *   build.c      builder calls make terms (fe_term) in the program's arena;
 *                the terms form a DAG (a C pointer used twice is shared).
 *   sharing.c    CSE and sharing recovery turn the DAG into the core: a tree
 *                in which every shared term is bound once by FE_LET, and
 *                function arguments and let binders are variables (FE_VAR).
 *   simplify.c, fuse.c   later passes over the core (see each file); the
 *                plan of kernels is the runtime's (runtime/plan.c).
 *   exec.c       weft_compile / weft_run: the pipeline driver, then the
 *                backend (a table of functions, fe_backend).
 *   interp.c     the reference interpreter backend: evaluates the core.
 */
#ifndef WEFT_FE_H
#define WEFT_FE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>

#include "weft.h"

#if defined(__GNUC__)
#define FE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FE_PRINTF(f, a)
#endif

typedef struct fe_term fe_term;
typedef struct fe_fun fe_fun;
typedef struct fe_var fe_var;
typedef struct fe_atype fe_atype;
typedef struct fe_arena fe_arena;
typedef struct fe_core fe_core;

#define FE_MSG_MAX 512

/* ===== error.c: the one place every error passes through ===== */

/* Record status s with a printf-style one-line message as the calling
 * thread's last error; returns s.  (Set a breakpoint here.) */
weft_status fe_error(weft_status s, const char *fmt, ...) FE_PRINTF(2, 3);
weft_status fe_verror(weft_status s, const char *fmt, va_list ap);
/* Set the thread's last error to a message kept elsewhere (copied). */
weft_status fe_error_copy(weft_status s, const char *msg);
void fe_error_clear(void);

/* The one out-of-memory error: WEFT_ERR_OUT_OF_MEMORY with the message
 * "<who>: out of memory", who being the public call (or the phase inside
 * it) that could not get memory.  Returns WEFT_ERR_OUT_OF_MEMORY. */
weft_status fe_oom(const char *who);

/* A broken invariant: a bug in weft, never something a user caused.
 * FE_CHECK(cond) evaluates cond once.  When it is false, a debug build
 * (!NDEBUG) prints "file:line: weft: internal error: cond" to stderr and
 * aborts, so the bug stops where it happened; a release build records
 * WEFT_ERR_INTERNAL with that message and makes the enclosing function
 * return WEFT_ERR_INTERNAL (so use it only in functions returning
 * weft_status).  fe_internal is the release path, callable on its own
 * where a function cannot simply return the status. */
weft_status fe_internal(const char *file, int line, const char *cond);
_Noreturn void fe_internal_abort(const char *file, int line, const char *cond);
#ifdef NDEBUG
#define FE_CHECK(cond)                                                         \
    do {                                                                       \
        if (!(cond)) {                                                         \
            return fe_internal(__FILE__, __LINE__, #cond);                     \
        }                                                                      \
    } while (0)
#else
#define FE_CHECK(cond)                                                         \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fe_internal_abort(__FILE__, __LINE__, #cond);                      \
        }                                                                      \
    } while (0)
#endif

/* ===== abi.c: weft's version, sized copies of public structs ===== */

/* Copy the src_n bytes of a struct weft fills into the caller's dst of
 * dst_n bytes (a sized call: weft_context_stats_sized): the first
 * min(dst_n, src_n) bytes, then zeros up to dst_n. */
void fe_copy_sized(void *dst, size_t dst_n, const void *src, size_t src_n);

/* ===== alloc.c: allocation through the context's allocator, and arenas ===== */

/* Raw allocation through ctx's allocator: NULL on failure (no message).
 * fe_free takes the size given at allocation. */
void *fe_alloc(weft_context *ctx, size_t n);
void *fe_calloc(weft_context *ctx, size_t n);
void *fe_realloc(weft_context *ctx, void *p, size_t old_n, size_t new_n);
void fe_free(weft_context *ctx, void *p, size_t n);

/* An array's data buffer of n bytes (zeroed when zero), and its free (the
 * same n).  Through fe_alloc, or, with WEFT_GUARD_ALLOC in the
 * environment, a mapping of its own between PROT_NONE pages (alloc.c,
 * "Guarded data blocks"): then never a pooled buffer (fe_data_guarded). */
void *fe_data_alloc(weft_context *ctx, size_t n, bool zero);
void fe_data_free(weft_context *ctx, void *p, size_t n);
bool fe_data_guarded(const weft_context *ctx);

/* An arena: many allocations, freed together by fe_arena_release. */
struct fe_arena {
    weft_context *ctx;
    struct fe_chunk *chunks; /* newest first */
    size_t used, cap;        /* in the newest chunk */
};
void fe_arena_init(fe_arena *a, weft_context *ctx);
/* n zeroed bytes aligned to 16; NULL on allocation failure (no message). */
void *fe_arena_alloc(fe_arena *a, size_t n);
/* A copy of the n-element array src (NULL on failure; NULL for n == 0). */
void *fe_arena_dup(fe_arena *a, const void *src, size_t n);
void fe_arena_release(fe_arena *a);

/* ===== varmap.c: variable id -> nonzero number, costing what is put in ===== */
typedef struct fe_varmap {
    fe_arena *ar;
    uint32_t *key, *val; /* key: id + 1, 0 for a free slot */
    uint32_t cap, n;
} fe_varmap;
void fe_varmap_init(fe_varmap *m, fe_arena *ar);
/* The value of id, 0 when absent. */
uint32_t fe_varmap_get(const fe_varmap *m, uint32_t id);
/* Set id's value (nonzero); false when out of memory. */
bool fe_varmap_put(fe_varmap *m, uint32_t id, uint32_t val);

/* ===== types.c: element types, values and array types ===== */

#define FE_TUPLE_BASE 256 /* tuple type ids are FE_TUPLE_BASE + index */

static inline bool fe_is_scalar(weft_type t)
{
    return t >= WEFT_BOOL && t <= WEFT_F64;
}
static inline bool fe_is_int(weft_type t)
{
    return t >= WEFT_I8 && t <= WEFT_U64;
}
static inline bool fe_is_signed(weft_type t)
{
    return t >= WEFT_I8 && t <= WEFT_I64;
}
static inline bool fe_is_float(weft_type t)
{
    return t >= WEFT_F16 && t <= WEFT_F64;
}
static inline bool fe_is_numeric(weft_type t)
{
    return t >= WEFT_I8 && t <= WEFT_F64;
}
static inline bool fe_is_dim(weft_type t)
{
    return t >= WEFT_DIM(0) && t <= WEFT_DIM(WEFT_MAX_RANK);
}
static inline int fe_dim_rank(weft_type t)
{
    return (int)(t - WEFT_DIM(0));
}
static inline bool fe_is_tuple(weft_type t)
{
    return t >= FE_TUPLE_BASE;
}
/* Bits of a scalar type (bool: 8, as stored). */
int fe_type_bits(weft_type t);

/* A tuple type, interned in the context. */
typedef struct fe_tuple {
    int arity;
    weft_type *comp; /* arity components */
    int nleaf;
    weft_type *leaf; /* nleaf scalar leaf types, depth-first */
    int *leaf_off;   /* arity + 1: the first leaf of each component */
} fe_tuple;

/* Whether t is a valid type in ctx (scalar, DIM or an interned tuple). */
bool fe_type_valid(const weft_context *ctx, weft_type t);
/* Leaves of t: count and scalar types.  For scalars the type itself, for
 * DIM(n) n times i64.  *leaves points into static or context storage that
 * lives as long as ctx.  Returns 0 for an invalid type. */
int fe_type_leaves(const weft_context *ctx, weft_type t,
                   const weft_type **leaves);
/* Components of a tuple or DIM type (arity, component types). */
int fe_type_comps(const weft_context *ctx, weft_type t,
                  const weft_type **comps);
/* Leaf offset of component i of tuple/DIM type t. */
int fe_type_leaf_offset(const weft_context *ctx, weft_type t, int i);
/* A readable name: "f32", "DIM2", "(i32, f64)".  Writes into buf. */
const char *fe_type_name(const weft_context *ctx, weft_type t, char *buf,
                         size_t n);
/* Intern a tuple type (status and message on failure). */
weft_status fe_type_tuple(weft_context *ctx, int n, const weft_type *comps,
                          weft_type *out);
/* Free ctx's tuple table (weft_context_free). */
void fe_type_table_free(weft_context *ctx);

/* One scalar value, as the interpreter and constants hold it:
 *   signed integers sign-extended in i, unsigned and bool zero-extended in
 *   u, f16 / f32 / f64 as the double f (exact: every f16 and f32 is a
 *   double).  A value of a tuple or DIM type is an array of its leaves. */
typedef union fe_val {
    int64_t i;
    uint64_t u;
    double f;
} fe_val;

/* Element i of a buffer of leaf type t, and storing one. */
fe_val fe_load(weft_type t, const void *buf, int64_t i);
void fe_store(weft_type t, void *buf, int64_t i, fe_val v);
/* Normalise v to type t: wrap integers to the width (sign- or zero-
 * extending), round floats to the precision of t (f32 by a float cast, f16
 * by fe_half_*).  Integer results of arithmetic done in 64 bits are passed
 * through this. */
fe_val fe_norm(weft_type t, fe_val v);
float fe_half_to_float(uint16_t h);
uint16_t fe_half_from_double(double d); /* round to nearest even */

/* The type of an array term: one array, or a tuple of array types. */
struct fe_atype {
    int arity;             /* 0: one array; n >= 1: a tuple of n */
    weft_type elt;         /* one array: element type */
    int rank;              /* one array: rank */
    const fe_atype **comp; /* tuple: components */
    int narrays;           /* arrays in total (1 for one array) */
};
/* Make array types in arena a (NULL on failure). */
const fe_atype *fe_atype_array(fe_arena *a, weft_type elt, int rank);
const fe_atype *fe_atype_tuple(fe_arena *a, int n, const fe_atype *const *c);
const fe_atype *fe_atype_copy(fe_arena *a, const fe_atype *t);
bool fe_atype_equal(const fe_atype *x, const fe_atype *y);
/* Index of the first flattened array of component i of tuple type t. */
int fe_atype_offset(const fe_atype *t, int i);
const char *fe_atype_name(const weft_context *ctx, const fe_atype *t, char *buf,
                          size_t n);

/* ===== context.c ===== */

typedef struct fe_backend fe_backend;

/* The configuration a context made from cfg (NULL: defaults) would have:
 * cfg checked for its magic and size and copied into the full-size *out
 * (defaults for fields an older layout lacks), then the environment
 * applied (unless WEFT_FLAG_NO_ENV) and the values checked.  Errors as
 * weft_context_create's, with messages prefixed by `who`. */
weft_status fe_config_resolve(const weft_config *cfg, weft_config *out,
                              const char *who);
/* The table of backend b, or NULL where it is not built into this weft. */
const fe_backend *fe_backend_table(weft_backend b);

/* The disk cache's bound when neither weft_config.cache_max nor
 * $WEFT_CACHE_MAX sets it (runtime/disk.c). */
#define FE_CACHE_MAX_DEFAULT ((uint64_t)256 << 20)

struct weft_context {
    weft_config cfg;
    weft_backend backend;
    const fe_backend *be;
    void *be_state;       /* the backend's own per-context state */
    pthread_mutex_t lock; /* guards the tuple table */
    fe_tuple **tuples;    /* interned tuple types */
    int ntuples, cap_tuples;
    int32_t *tuple_slots;          /* hash table of tuple indices (-1: free) */
    uint32_t tuple_nslot;          /* its size, a power of two (0: none) */
    pthread_mutex_t pool_lock;     /* guards the buffer pool */
    struct fe_pooled *pool;        /* freed array buffers kept for reuse */
    size_t pool_bytes;             /* bytes held by the pool */
    int pool_count;                /* buffers held by the pool */
    _Atomic uint64_t cancel_epoch; /* weft_cancel calls so far (cancel.c) */
    struct fe_trace *trace;        /* the trace writer (trace.c); NULL: off */
    _Atomic uint64_t phase_ns[8];  /* compile time by fe_phase (trace.c) */
};

/* ===== trace.c: WEFT_TRACE, and the compile time by phase ===== */

/* Where compile time goes, as weft_stats reports it (weft.h says what
 * each phase covers).  FE_PHASE_NONE: a span counted nowhere. */
typedef enum fe_phase {
    FE_PHASE_FRONTEND,     /* sharing recovery, simplify, fuse */
    FE_PHASE_IR,           /* a kernel's LLVM IR from its skeleton */
    FE_PHASE_LLVM_OPT,     /* LLVM's optimisation (and libdevice's link) */
    FE_PHASE_LLVM_CODEGEN, /* CPU machine code on the compiling thread */
    FE_PHASE_PTX,          /* NVPTX's emission of PTX text */
    FE_PHASE_DRIVER_LINK,  /* the CUDA driver: ptxas, module load */
    FE_PHASE_JIT_LINK,     /* ORC: adding an object, looking symbols up */
    FE_PHASE_DISK,         /* disk cache reads and writes */
    FE_PHASE_COUNT,
    FE_PHASE_NONE = FE_PHASE_COUNT
} fe_phase;

typedef struct fe_trace fe_trace;

/* The monotonic clock in nanoseconds. */
uint64_t fe_clock_ns(void);

/* A pause in a loop that polls memory another thread writes (the gang's
 * workers, runtime-gpu/relay.c): the CPU's spin-wait hint. */
static inline void fe_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Whether ctx writes a trace: the one branch a site pays when it does
 * not. */
#define FE_TRACING(ctx) __builtin_expect((ctx)->trace != NULL, 0)

/* The start of a run-time span: the clock when ctx traces, else 0 (and
 * no clock read). */
static inline uint64_t fe_trace_begin(const weft_context *ctx)
{
    return FE_TRACING(ctx) ? fe_clock_ns() : 0;
}

/* Write a complete span [t0, now) of category cat named name on the
 * calling thread's track; args is a printf format of the inside of a
 * JSON object ("\"bytes\":%zu"; strings put in it must need no escape) or
 * NULL.  Does nothing when ctx is NULL or does not trace.  Thread-safe. */
void fe_trace_span(weft_context *ctx, uint64_t t0, const char *cat,
                   const char *name, const char *args, ...) FE_PRINTF(5, 6);
/* The same with an explicit track and times (ns of fe_clock_ns): for
 * spans measured elsewhere (the GPU's device time). */
void fe_trace_event(weft_context *ctx, int tid, uint64_t t0, uint64_t dur,
                    const char *cat, const char *name, const char *args, ...)
    FE_PRINTF(7, 8);
/* Name track tid (once per trace file; tid from fe_trace_tid or a
 * number of FE_TRACE_DEVICE_TID and up). */
void fe_trace_track_name(weft_context *ctx, int tid, const char *name);
#define FE_TRACE_DEVICE_TID 1000
/* The calling thread's track: a small number, stable for the thread's
 * life, 1 for the first thread that asks. */
int fe_trace_tid(void);
/* Name the calling thread's track in every trace it writes to from now
 * on (a static string: "weft tier-up"). */
void fe_trace_thread_label(const char *label);

/* Add [t0, now) to ctx's counter of phase ph and, when ctx traces, write
 * it as a span (category from ph: "frontend" or "compile") named name
 * with args as fe_trace_span.  ctx NULL: nothing.  Returns now. */
uint64_t fe_phase_end(weft_context *ctx, fe_phase ph, uint64_t t0,
                      const char *name, const char *args, ...) FE_PRINTF(5, 6);

/* weft_context_create / weft_context_free: open ctx's trace for path
 * (shared with every other context of the process tracing to the same
 * file; "%p" in path becomes the process id), and release it.  Errors:
 * WEFT_ERR_INVALID_ARGUMENT (the file cannot be written, or the path is
 * too long), WEFT_ERR_OUT_OF_MEMORY. */
weft_status fe_trace_open(weft_context *ctx, const char *path);
/* dst writes to src's trace too (one more reference to src's writer, which
 * fe_trace_close(dst) drops): for a shadow context that outlives src (the
 * CPU JIT's, runtime-cpu/jit.c "Freeing").  Nothing when src has none. */
void fe_trace_share(weft_context *dst, const weft_context *src);
/* Add src's compile phases (phase_ns) to st's *_ms fields. */
void fe_stats_add_phases(weft_stats *st, const weft_context *src);
void fe_trace_close(weft_context *ctx);
/* Write ctx's buffered events now (the file stays valid JSON). */
void fe_trace_flush(weft_context *ctx);

/* ===== cancel.c: stopping a run (weft_cancel, the deadline) ===== */

/* One run's view of cancellation.  weft_run makes one on its stack
 * (fe_cancel_begin) and hands it to the backend, which polls it where a
 * run may take long: awhile iterations and long scalar loops (interp.c),
 * the chunks of a gang job, the kernels (through fe_cancel_poll, whose
 * address CPU kernels get in their argument block; the PTX backend raises
 * a flag in mapped memory instead).  A run is cancelled when
 * ctx->cancel_epoch moved since it began (weft_cancel) or its deadline
 * passed.  Once seen, `hit` stays set: whoever stops early (a kernel that
 * returns in the middle of its range) sets it, and whoever waits for that
 * work checks it afterwards, so a partial result is never taken for a
 * whole one. */
typedef struct fe_cancel {
    atomic_int hit; /* first: 0 while the run may go on; then
                                  FE_CANCEL_CALL or FE_CANCEL_DEADLINE */
    int pad_;
    int (*poll)(struct fe_cancel *c); /* fe_cancel_poll (for kernels) */
    weft_context *ctx;
    uint64_t epoch;      /* ctx->cancel_epoch when the run began */
    int64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
} fe_cancel;

enum { FE_CANCEL_CALL = 1, FE_CANCEL_DEADLINE = 2 };

/* Start c for a run on ctx now (its deadline from ctx->cfg.timeout_ms). */
void fe_cancel_begin(weft_context *ctx, fe_cancel *c);
/* Whether the run is to stop (sets c->hit when it is); c NULL: false.
 * Cheap: two loads, and a clock read when there is a deadline.  Callable
 * from any thread.  fe_cancel_poll is the same with an int result, as
 * kernels call it. */
bool fe_cancelled(fe_cancel *c);
int fe_cancel_poll(fe_cancel *c);
/* Whether someone already saw the cancellation (c->hit; c NULL: false). */
static inline bool fe_cancel_hit(fe_cancel *c)
{
    return c && atomic_load_explicit(&c->hit, memory_order_acquire) != 0;
}
/* The message of a cancelled run ("weft_run: cancelled by weft_cancel"),
 * into buf (n bytes). */
void fe_cancel_message(const fe_cancel *c, char *buf, size_t n);
/* WEFT_ERR_CANCELLED with that message as the thread's last error. */
weft_status fe_cancel_error(const fe_cancel *c);
/* WEFT_OK, or fe_cancel_error when fe_cancelled(c). */
static inline weft_status fe_cancel_check(fe_cancel *c)
{
    return fe_cancelled(c) ? fe_cancel_error(c) : WEFT_OK;
}

/* ===== array.c ===== */

/* A device copy of an array, kept by a GPU backend (runtime-gpu/mem.c).
 * lib/ knows nothing of devices: it only calls these hooks, through
 * fe_array_host, fe_array_host_written and the array's death.  Each is
 * thread-safe on the backend's side. */
typedef struct fe_mirror_ops {
    /* Make a->data current (download from the device if the device copy is
     * newer).  Returns WEFT_OK, or a status with its message. */
    weft_status (*to_host)(weft_array *a);
    /* The host buffers are about to be written by someone other than the
     * backend: the device copy is no longer valid. */
    void (*host_written)(weft_array *a);
    /* a dies: release its device copy (a->dev). */
    void (*drop)(weft_array *a);
    /* Block until every write queued for a on the device is complete;
     * returns an asynchronous failure of the device (weft_array_wait). */
    weft_status (*wait)(weft_array *a);
    /* Whether the device copy is newer than the host's (or the host has
     * none). */
    bool (*device_newer)(weft_array *a);
    /* Optional: start bringing a small array's newer device copy to the
     * host without waiting, so that a later to_host waits only for that
     * copy, not for the work queued after it (awhile's speculation,
     * lib/interp.c).  Best effort: nothing happens when the copy is not
     * newer, too large, or cannot be started (to_host then downloads as
     * usual and reports any failure). */
    void (*prefetch)(weft_array *a);
} fe_mirror_ops;

struct weft_array {
    atomic_int refs;
    weft_context *ctx;
    weft_type type;
    int rank;
    int64_t shape[WEFT_MAX_RANK];
    int64_t size; /* product of the shape */
    int nleaf;
    void **data;             /* nleaf host buffers */
    size_t *bytes;           /* size of each leaf's buffer */
    void (*release)(void *); /* wrapped buffers: the caller's release */
    void *user;
    bool owned;                  /* weft allocated the buffers */
    bool on_device;              /* a device array (weft_array_wrap_device):
                                  the caller's device buffers are its home;
                                  data[] is NULL until the mirror makes
                                  host buffers for a host read */
    bool read_only;              /* from a read-only DLPack tensor: never
                                  an output, never written by weft */
    const fe_mirror_ops *mirror; /* NULL: no device copy */
    void *dev;                   /* the backend's device copy (mirror's) */
};

/* Make a's host buffers current (a no-op without a device copy). */
static inline weft_status fe_array_host(weft_array *a)
{
    return a && a->mirror ? a->mirror->to_host(a) : WEFT_OK;
}

/* Start making a's host buffers current without waiting
 * (fe_mirror_ops.prefetch; a no-op where there is none). */
static inline void fe_array_prefetch(weft_array *a)
{
    if (a && a->mirror && a->mirror->prefetch) {
        a->mirror->prefetch(a);
    }
}

/* fe_array_host, then forget the device copy: the caller will write the
 * host buffers. */
static inline weft_status fe_array_host_written(weft_array *a)
{
    weft_status s = fe_array_host(a);
    if (s == WEFT_OK && a && a->mirror) {
        a->mirror->host_written(a);
    }
    return s;
}

/* Whether a has host buffers (every array but a device array that was
 * never read on the host). */
static inline bool fe_array_has_host(const weft_array *a)
{
    return a->nleaf == 0 || a->size == 0 || a->data[0] != NULL;
}

/* Make dst's values those of src (same type and shape): on the device for
 * a device array dst (the backend's fe_device_ops.copy), else into dst's
 * host buffers (src brought to the host first; dst's device copy, if any,
 * becomes stale).  `who` names the API call in messages. */
weft_status fe_array_copy(weft_array *dst, weft_array *src, const char *who);

/* weft_array_wrap_device, with `who` naming the API call in messages. */
weft_status fe_array_wrap_device(weft_context *ctx, const char *who,
                                 weft_type type, int rank, const int64_t *shape,
                                 void *const *device_ptrs,
                                 void (*release)(void *user), void *user,
                                 weft_array **out);

/* The device address of leaf `leaf` of a (see fe_device_ops.export_ptr);
 * WEFT_ERR_BACKEND_UNAVAILABLE on a backend without a device. */
weft_status fe_array_export(weft_array *a, int leaf, bool writable,
                            uint64_t *ptr, const char *who);

/* The buffer pool: array buffers that weft allocated are not freed when
 * their array dies but kept (the newest FE_POOL_ENTRIES, up to FE_POOL_MAX
 * bytes; older ones are freed) for the next array of the same byte size,
 * so that a program run many times does not fault in fresh pages for its
 * outputs each time. */
#define FE_POOL_MAX ((size_t)1 << 30)
#define FE_POOL_ENTRIES 64
#define FE_POOL_MIN ((size_t)1 << 16) /* smaller buffers are just freed */
void fe_pool_drain(weft_context *ctx);

/* A new array whose contents are undefined (buffers may come from the
 * pool): for outputs that are written in full before anyone reads them. */
weft_status fe_array_new_raw(weft_context *ctx, const char *who, weft_type type,
                             int rank, const int64_t *shape, weft_array **out);

/* Size of a shape (product), or -1 if an extent is negative or the product
 * overflows int64. */
int64_t fe_shape_size(int rank, const int64_t *shape);
/* A new zero-filled array; status with message on failure (the message
 * names `who`). */
weft_status fe_array_new(weft_context *ctx, const char *who, weft_type type,
                         int rank, const int64_t *shape, weft_array **out);

/* ===== build.c: terms and functions as the builder makes them ===== */

typedef enum fe_kind {
    /* scalar terms */
    FE_CONST,      /* u.c: the value (scalar types only) */
    FE_ARG,        /* builder only: u.arg.fun, u.arg.index */
    FE_VAR,        /* core only: u.var */
    FE_PRIM,       /* op; kid[0..arity-1]; T ops: type is the result type */
    FE_COND,       /* kid: c, t, e */
    FE_TUPLE,      /* kid: components; type a tuple or WEFT_DIM(n) */
    FE_GET,        /* kid[0] tuple or index; u.index component */
    FE_SHAPE,      /* kid[0] acc */
    FE_SHAPE_SIZE, /* kid[0] shape */
    FE_TO_INDEX,   /* kid: sh, ix */
    FE_FROM_INDEX, /* kid: sh, i */
    FE_AT,         /* kid: acc, ix */
    FE_AT_LINEAR,  /* kid: acc, i */
    FE_WHILE,      /* fun: cond, body; kid[0] init */
    FE_ALL,        /* marker in replicate / slice specifications */
    FE_IGNORE,     /* marker: permute drops this element; type DIM(n) */
    FE_APPLY,      /* builder only: fun[0] applied to kid[0..arity-1] */
    FE_LET,        /* core only: u.var bound to kid[0] in kid[1]; scalar or
                       array depending on kid[1] (kid[0] may be either) */
/* array terms: lib/fe_kinds.h, FE_USE first */
#define FE_KIND(n_, name, family, producer, fusible, gather, kids, funs, eval) \
    FE_##n_,
#include "fe_kinds.h"
#undef FE_KIND
    FE_KIND_COUNT_
} fe_kind;

static inline bool fe_kind_is_acc(int k)
{
    return k >= FE_USE;
}

/* ===== kinds.c: the array-term table (lib/fe_kinds.h's columns) ===== */

typedef enum fe_family {
    FE_FAMILY_NONE,
    FE_FAMILY_GENERATE,
    FE_FAMILY_FOLD,
    FE_FAMILY_SCAN,
    FE_FAMILY_PERMUTE,
    FE_FAMILY_FOLD_SEG,
    FE_FAMILY_STENCIL,
    FE_FAMILY_RESHAPE
} fe_family;

typedef struct fe_kind_info {
    const char *name; /* in dumps, or NULL */
    fe_family family; /* the skeleton family of its kernel */
    bool producer;    /* may be fused into its consumer */
    unsigned fusible; /* bit k: operand k may be a delayed producer */
    bool gather;      /* reads an operand at indices it computes */
    int min_kids;     /* operands: min_kids .. max_kids */
    int max_kids;
    int funs; /* functions */
} fe_kind_info;

/* By kind; the scalar kinds' entries are all zero. */
extern const fe_kind_info fe_kinds[FE_KIND_COUNT_];

/* A variable of the core: a let binder or a function's parameter. */
struct fe_var {
    uint32_t id;           /* unique in its core, 0 .. core->nvar-1 */
    bool acc;              /* an array variable */
    bool param;            /* a function parameter (else a let binder) */
    weft_type type;        /* scalar variables */
    const fe_atype *atype; /* array variables */
};

typedef struct fe_stencil_info {
    int window[2][3];          /* extents per array, per dimension */
    weft_boundary_kind bnd[2]; /* boundary per array */
} fe_stencil_info;

/* How a segmented fold's descriptor cuts the rows (fe_term.op). */
typedef enum fe_seg_form {
    FE_SEG_LENGTHS = 0, /* weft_fold_seg: the segments' lengths */
    FE_SEG_OFFSETS = 1  /* weft_fold_seg_offsets: nseg + 1 offsets */
} fe_seg_form;

struct fe_term {
    uint8_t kind;          /* fe_kind */
    bool acc;              /* an array term */
    bool has_arg;          /* builder: depends on a scalar function argument */
    bool delayed;          /* core, set by fuse.c: this producer is not
                               computed as an array; its consumer (the
                               parent term) computes its elements inline */
    uint16_t op;           /* FE_PRIM: weft_op; FE_FOLD_SEG, FE_FOLD1_SEG:
                               fe_seg_form (a part of the term's identity,
                               as the op is: sharing and the kernel keys
                               compare it) */
    weft_type type;        /* scalar terms: the type; arrays: element type
                               (0 for a tuple of arrays) */
    int rank;              /* arrays: rank (-1 for a tuple of arrays) */
    const fe_atype *atype; /* arrays: the full type */
    weft_program *prog;    /* builder terms: the owner; core: NULL */
    uint32_t id;           /* builder: creation number in the program */
    int nkid;
    fe_term **kid;
    int nfun;
    fe_fun **fun;
    union {
        fe_val c; /* FE_CONST */
        struct {
            fe_fun *fun;
            int index;
        } arg;              /* FE_ARG, FE_AARG */
        fe_var *var;        /* FE_VAR, FE_LET */
        int index;          /* FE_GET, FE_AGET, FE_PARAM */
        weft_array *array;  /* FE_USE */
        fe_stencil_info st; /* FE_STENCIL, FE_STENCIL2 */
    } u;
};

/* A function: weft_fun and weft_afun are this struct.  Builder functions
 * have arg[] (FE_ARG / FE_AARG terms); core functions have param[]. */
struct fe_fun {
    weft_program *prog; /* builder only */
    bool acc;           /* an array function (weft_afun) */
    int arity;
    weft_type *targ;       /* scalar functions: argument types */
    const fe_atype *atarg; /* array functions: the argument's type */
    fe_term **arg;         /* builder: argument terms */
    fe_var **param;        /* core: parameter variables */
    fe_term *body;         /* NULL until returned */
    weft_type ret;         /* scalar functions: result type */
    const fe_atype *aret;  /* array functions: result type */
    uint32_t id;
};

struct weft_program {
    weft_context *ctx;
    fe_arena arena;
    weft_status status; /* first error, sticky */
    char msg[FE_MSG_MAX];
    uint32_t next_id; /* ids for terms and functions */
    int nparam, cap_param;
    fe_term **params; /* in order of weft_param */
    int nuse, cap_use;
    weft_array **uses; /* retained; released by weft_program_free */
};

/* Record a builder error in p (if it is the first) and as the thread's last
 * error; returns NULL so that builders can `return fe_fail(...)`. */
void *fe_fail(weft_program *p, weft_status s, const char *fmt, ...)
    FE_PRINTF(3, 4);
/* fe_fail with fe_oom's error: WEFT_ERR_OUT_OF_MEMORY, "<who>: out of
 * memory". */
void *fe_fail_oom(weft_program *p, const char *who);

/* ===== sharing.c: CSE, sharing recovery, scope checks ===== */

/* The core: a closed tree made from a program's DAG. */
struct fe_core {
    fe_arena *arena; /* where its terms live (not owned) */
    fe_term *root;   /* an array term: ATUPLE of the results,
                                 possibly under lets */
    int nresult;
    int noutput;             /* arrays of all results, flattened */
    const fe_atype **output; /* noutput single-array types */
    int nparam;
    const fe_atype **param; /* nparam single-array types */
    uint32_t nvar;          /* variables are numbered 0 .. nvar-1 */
    int nuse;
    weft_array **uses; /* retained by the core's owner */
    bool no_fusion;    /* WEFT_FLAG_NO_FUSION: fe_fuse does nothing */
};

/* Build the core of the program computing results[0..n-1] into arena
 * `into` (which may outlive p).  `who` names the API call for messages.
 * Errors: the program's sticky error, WEFT_ERR_SCOPE, WEFT_ERR_INCOMPLETE,
 * WEFT_ERR_OUT_OF_MEMORY.  The core's uses are retained by this call; the
 * caller releases them (fe_core_release_uses). */
weft_status fe_share(weft_program *p, const char *who, fe_term *const *results,
                     int n, fe_arena *into, fe_core *out);
void fe_core_release_uses(fe_core *core);
/* How deep the passes recurse over a program (the longest path of the
 * builder's DAG) and over a core (its tree's depth); iterative, 0 when out
 * of memory.  exec.c runs deep programs on a stack that fits them. */
uint64_t fe_program_depth(weft_program *p, fe_term *const *results, int n);
uint64_t fe_core_depth(weft_context *ctx, const fe_core *core);

/* ===== simplify.c, fuse.c: later passes ===== */

weft_status fe_simplify(fe_core *core);
weft_status fe_fuse(fe_core *core);
/* Whether scalar terms a and b compute the same (structurally; false when
 * unsure: functions, lets, array operations other than variables,
 * parameters, uses and projections), variable va in a standing for vb in
 * b where va is not NULL (two functions' parameters). */
bool fe_term_same(const fe_term *a, const fe_term *b, const fe_var *va,
                  const fe_var *vb);
/* Whether operand k of consumer t may be a delayed producer (fuse.c's
 * rules, which backends follow). */
bool fe_fusible_operand(const fe_term *t, int k);
/* A fold (FE_FOLD, FE_FOLD1) of the core: the type its combine works in,
 * and the function it applies to each result as it stores it (fuse.c's
 * store rule: then the term has that function's type), or NULL. */
static inline weft_type fe_fold_type(const fe_term *t)
{
    return t->fun[0]->ret;
}
static inline const fe_fun *fe_fold_post(const fe_term *t)
{
    return t->nfun > 1 ? t->fun[1] : NULL;
}

/* ===== verify.c: the checker of the core between passes ===== */

/* Check the invariants every pass keeps (lib/verify.c's head comment
 * lists them) on core, as it is after the pass named `after`.  Reads the
 * core only.  Returns WEFT_OK; WEFT_ERR_INTERNAL, with fe_internal's
 * message "file:line: weft: internal error: the core is broken after
 * <after>: <term>: <what>" (file:line the failed check's); or
 * WEFT_ERR_OUT_OF_MEMORY. */
weft_status fe_verify(weft_context *ctx, const fe_core *core,
                      const char *after);
/* Whether weft_compile checks the core between passes: $WEFT_VERIFY=1 (or
 * any value but 0) turns it on, =0 off (both unless WEFT_FLAG_NO_ENV);
 * otherwise on in a debug build (!NDEBUG), off in a release build. */
bool fe_verify_enabled(const weft_context *ctx);
/* fe_verify for the pipeline: a broken core is reported as FE_CHECK
 * reports a broken invariant (a debug build prints the message and
 * aborts; a release build returns WEFT_ERR_INTERNAL). */
weft_status fe_verify_pass(weft_context *ctx, const fe_core *core,
                           const char *after);

/* ===== dump.c ===== */

/* The name of an array operation ("map"), for dumps. */
const char *fe_acc_name(int kind);
/* Print the core readably (lets, functions, types). */
weft_status fe_dump(const weft_context *ctx, const fe_core *core, FILE *out);

/* ===== exec.c and backends ===== */

struct weft_executable {
    weft_context *ctx;
    fe_arena arena; /* the core lives here */
    fe_core core;
    void *be_state; /* the backend's compiled form */
    uint64_t depth; /* fe_core_depth of the compiled core */
};

/* A backend: what lib/ calls to compile and run.  Each implementation is a
 * const table (the interpreter in interp.c; CPU and PTX later). */
struct fe_backend {
    const char *name;
    /* Per-context set-up and tear-down (either may be NULL). */
    weft_status (*context_init)(weft_context *ctx);
    void (*context_fini)(weft_context *ctx);
    /* Prepare exe->be_state from exe->core. */
    weft_status (*compile)(weft_executable *exe);
    /* Run with checked inputs; store exe->core.noutput new arrays in out.
     * cancel (not NULL) is polled as cancel.c says.  into (NULL for
     * weft_run) has an array or NULL per output: where the operation that
     * computes output i may write it (fe_ix_dest); out[i] is then that
     * same array. */
    weft_status (*run)(weft_executable *exe, weft_array *const *in,
                       weft_array **out, fe_cancel *cancel,
                       weft_array *const *into);
    void (*exe_free)(weft_executable *exe);
    /* Fill the counters (may be NULL: all zero). */
    void (*stats)(const weft_context *ctx, weft_stats *out);
    /* Print the kernels of exe, a line each (may be NULL: none). */
    void (*dump_plan)(const weft_executable *exe, FILE *out);
    /* Wait for the optimised code of every kernel compiled so far (may be
     * NULL: kernels are final when compiled); weft_context_wait_optimised
     * says what it returns. */
    weft_status (*wait_optimised)(weft_context *ctx);
    /* Introspection (info.c), without a context; each may be NULL.
     * probe: whether the backend can run on this machine, WEFT_OK or a
     * status with the reason as its message (NULL: always).  device_count
     * and device_info: the devices, as weft_device_count and
     * weft_device_info_sized say (NULL: a backend without devices). */
    weft_status (*probe)(void);
    weft_status (*device_count)(int *n);
    weft_status (*device_info)(int ordinal, weft_device_info *out);
    /* Device arrays and DLPack's device tensors (NULL: no device). */
    const struct fe_device_ops *device;
};

/* What a backend with a device (ptx) gives lib/array.c and lib/dlpack.c.
 * Each returns a status with its message (`who` names the API call). */
/* The alignment of every device buffer a GPU kernel reads or writes: what
 * cuMemAlloc gives, and what the PTX target tells LLVM (sk_target
 * array_align), so that it may merge loads; memory handed in by the
 * caller (weft_array_wrap_device, DLPack) must have it too. */
#define FE_DEVICE_ALIGN 256

typedef struct fe_device_ops {
    /* The device's ordinal (WEFT_ERR_BACKEND_UNAVAILABLE for a context
     * that compiles for a GPU it does not run). */
    weft_status (*ordinal)(weft_context *ctx, int *out, const char *who);
    /* Wait for all work queued so far on the device's context by anyone,
     * weft or not (cuCtxSynchronize): a producer's writes are complete. */
    weft_status (*sync_all)(weft_context *ctx, const char *who);
    /* Give a, a new header with no buffers (a->on_device), the caller's
     * device buffers ptrs[leaf] as its only copy: never freed nor evicted
     * by weft; the stream is waited for before a->release runs. */
    weft_status (*wrap)(weft_array *a, void *const *ptrs, const char *who);
    /* The device address of leaf `leaf` of a, uploading a when the host
     * copy is newer; the copy stays on the device (never evicted) until a
     * dies, and every queued write to it is complete when this returns.
     * `writable`: the caller may write through the address, so the host
     * copy becomes stale. */
    weft_status (*export_ptr)(weft_array *a, int leaf, bool writable,
                              uint64_t *ptr, const char *who);
    /* Copy `bytes` bytes from device address src to host memory dst. */
    weft_status (*download)(weft_context *ctx, void *dst, uint64_t src,
                            size_t bytes, const char *who);
    /* dst = src on the device (dst a device array). */
    weft_status (*copy)(weft_array *dst, weft_array *src, const char *who);
    /* The stream the context's work runs on (weft_context_stream). */
    weft_status (*stream)(weft_context *ctx, void **out, const char *who);
} fe_device_ops;

extern const fe_backend fe_backend_interp;
#ifdef WEFT_HAVE_LLVM
extern const fe_backend fe_backend_cpu; /* runtime-cpu/backend.c */
extern const fe_backend fe_backend_ptx; /* runtime-gpu/backend.c */
#endif

/* ===== interp.c ===== */

/* Evaluate core on inputs in (types already checked), storing
 * core->noutput new arrays in out (each with one reference owned by the
 * caller).  On failure no array is left in out and the status names the
 * cause (run-time errors: WEFT_ERR_OUT_OF_BOUNDS, WEFT_ERR_DIVIDE_BY_ZERO,
 * WEFT_ERR_UNDEFINED, WEFT_ERR_RESHAPE_SIZE, WEFT_ERR_SLICE_INDEX,
 * WEFT_ERR_EMPTY_ARRAY, WEFT_ERR_SEGMENTS, WEFT_ERR_BAD_SHAPE,
 * WEFT_ERR_OUT_OF_MEMORY). Thread-safe: all state is per call. */
weft_status fe_interp(weft_context *ctx, const fe_core *core,
                      weft_array *const *in, weft_array **out,
                      fe_cancel *cancel, weft_array *const *into);

/* The offsets of a segmented fold's segments: off[k] .. off[k + 1] is
 * segment k of a row of `inner` elements, from the nseg lengths in seg
 * (rank 1, integral, in host memory), filled for k from `from` on
 * (off[0 .. from] already set; the runtime's fast paths set a prefix).
 * Errors: WEFT_ERR_SEGMENTS (a negative length, or lengths that sum past
 * the row), the message naming the operation `name`; the interpreter's,
 * so that every backend reports a bad descriptor alike. */
weft_status fe_seg_offsets(const weft_array *seg, int64_t from, int64_t nseg,
                           int64_t inner, const char *name, int64_t *off);

/* The offset form's check (FE_SEG_OFFSETS): the descriptor off (a rank-1
 * integral array of nseg + 1 entries) from segment `from` on, each
 * segment's offsets read in order; copies them into out[k] (k from `from`
 * to nseg, when out is not NULL).  Errors: WEFT_ERR_SEGMENTS for the
 * first segment that starts below 0, ends before it starts, or ends past
 * inner, the message naming `name`; the interpreter's, so that every
 * backend reports a bad descriptor alike. */
weft_status fe_seg_offsets_check(const weft_array *off, int64_t from,
                                 int64_t nseg, int64_t inner, const char *name,
                                 int64_t *out);

/* The segments of a descriptor of n entries in form `form`: n, or n - 1
 * offsets' segments (none for no offsets). */
static inline int64_t fe_seg_count(int form, int64_t n)
{
    return form == FE_SEG_OFFSETS ? (n > 0 ? n - 1 : 0) : n;
}

/* A compiled backend runs the core through the interpreter's walker and
 * takes over the collective operations: fe_interp_hooked calls hook for
 * every array term but variables, lets, acond and awhile; the hook either computes it into out (setting *handled) or
 * leaves it to the interpreter.  Inside a hook, fe_ix_acc evaluates an
 * array term (new references), fe_ix_exp a scalar term, fe_ix_var gives a
 * variable's current binding (leaves or arrays, borrowed), fe_ix_var_ignored
 * whether a scalar variable of type DIM(0) holds permute's `ignore` (it has
 * no leaves to show it) and fe_ix_param input i (borrowed). */
typedef struct fe_ix fe_ix;
typedef weft_status (*fe_interp_hook)(void *user, fe_ix *ix, const fe_term *t,
                                      weft_array **out, bool *handled);
weft_status fe_interp_hooked(weft_context *ctx, const fe_core *core,
                             weft_array *const *in, weft_array **out,
                             fe_cancel *cancel, weft_array *const *into,
                             fe_interp_hook hook, void *user);
/* A backend whose arrays live on a device walks the core with
 * fe_interp_device instead: the walker then speculates in awhile (each
 * body is queued before its condition is known: lib/interp.c,
 * "Speculation"), and ops->held and ops->settle (both required) let it
 * drop what a speculative body that does not count left behind: the
 * reports of kernels that the backend holds back to read later than the
 * kernel's own run (permute's error word, runtime-gpu/backend.c, "Held
 * reports").  held, called before each speculative body, gives the
 * number the body's first report will get (reports are numbered from 0
 * in the order their kernels are queued); settle(user, n, keep), once the
 * body's flag is known, says whether the reports from number n on count
 * (keep) or are to be forgotten unread, and returns whether a body that
 * counts must run again: the backend had to stop its work early
 * (runtime-gpu/cuda.c, "Speculation": a wait for one of its kernels with
 * a while loop before the flag was known). */
typedef struct fe_walk_ops {
    fe_interp_hook hook;
    int (*held)(void *user);
    bool (*settle)(void *user, int n, bool keep);
} fe_walk_ops;
weft_status fe_interp_device(weft_context *ctx, const fe_core *core,
                             weft_array *const *in, weft_array **out,
                             fe_cancel *cancel, weft_array *const *into,
                             const fe_walk_ops *ops, void *user);
/* Outputs into the caller's arrays (weft_run_into; fe_interp's `into`).
 * Output o of operation t, of this type and shape, is to be a new array:
 * when t computes one of the run's outputs and the caller gave an array
 * of that type and shape for it, that array (a new reference; host_only:
 * only if it has host buffers, whose device copy, if any, is then
 * dropped as stale), else NULL: allocate as usual.  Each caller's array
 * is handed out once. */
weft_array *fe_ix_dest(fe_ix *ix, const fe_term *t, int o, weft_type type,
                       int rank, const int64_t *shape, bool host_only);
/* The run's cancellation state (may be NULL). */
fe_cancel *fe_ix_cancel(fe_ix *ix);
weft_status fe_ix_acc(fe_ix *ix, const fe_term *t, weft_array **out);
weft_status fe_ix_exp(fe_ix *ix, const fe_term *t, fe_val *out);
weft_status fe_ix_var(fe_ix *ix, const fe_var *v, const fe_val **vals,
                      weft_array *const **arrays);
bool fe_ix_var_ignored(fe_ix *ix, const fe_var *v);
weft_array *fe_ix_param(fe_ix *ix, int i);

/* --- interp_scalar.c (added by the interpreter; usable for constant
 * folding): apply primitive op with result type rt and operand types t0, t1
 * (t1 is 0 for unary ops) to a[0..arity-1], storing the result in *r.
 * Errors (with message): WEFT_ERR_DIVIDE_BY_ZERO, WEFT_ERR_UNDEFINED.
 * and/or are strict here; callers short-circuit them. */
weft_status fe_prim_eval(weft_op op, weft_type rt, weft_type t0, weft_type t1,
                         const fe_val *a, fe_val *r);

/* ===== prims.c: the primitive table ===== */

typedef enum fe_rule {
    FE_RULE_NUM,
    FE_RULE_INT,
    FE_RULE_FLT,
    FE_RULE_SHIFT,
    FE_RULE_BITS,
    FE_RULE_FPRED,
    FE_RULE_CMP,
    FE_RULE_BOOL,
    FE_RULE_ROUND,
    FE_RULE_CONV,
    FE_RULE_CAST,
    FE_RULE_ORD,
    FE_RULE_LOGIC
} fe_rule;

/* The columns of lib/fe_ops.h (its head comment says what each means). */
typedef enum fe_failure {
    FE_FAIL_NEVER,
    FE_FAIL_DIVISOR,
    FE_FAIL_SHIFT,
    FE_FAIL_ALWAYS,
    FE_FAIL_TO_INT
} fe_failure;
typedef enum fe_cost { FE_COST_CHEAP, FE_COST_DEAR } fe_cost;
typedef enum fe_simd { FE_SIMD_VEC, FE_SIMD_LANES } fe_simd;
typedef enum fe_lower {
    FE_LOWER_INLINE,
    FE_LOWER_LLVM,
    FE_LOWER_CALL,
    FE_LOWER_VMATH
} fe_lower;

typedef struct fe_prim_info {
    const char *name; /* "add" */
    int arity;        /* 1 or 2; 1 for the T operations */
    bool typed;       /* a T operation: result type given */
    fe_rule rule;
    /* from lib/fe_ops.h: */
    bool fold; /* constant folding may evaluate it */
    fe_failure fail;
    fe_cost cost;
    fe_simd simd;
    fe_lower lower;
    const char *libm;        /* the C library's function ("tan"), or NULL */
    double (*libm1)(double); /* it, of one argument, or NULL */
    float (*libm1f)(float);
    double (*libm2)(double, double); /* it, of two arguments, or NULL */
    float (*libm2f)(float, float);
    const char *libdevice; /* libdevice's: __nv_ + this, or NULL */
} fe_prim_info;

extern const fe_prim_info fe_prims[WEFT_OP_COUNT_];

/* Whether a library function computes op in compiled code (lower CALL or
 * VMATH: the C library's, libdevice's or weft's vmath.c), rather than
 * cg_prim's own instructions or an LLVM intrinsic. */
static inline bool fe_prim_in_library(weft_op op)
{
    return fe_prims[op].lower == FE_LOWER_CALL ||
           fe_prims[op].lower == FE_LOWER_VMATH;
}

/* Whether evaluating primitive term t itself (not its kids) may fail: its
 * fail column, given its operands (a constant divisor or shift amount
 * makes DIVISOR and SHIFT safe when it is one). */
bool fe_prim_may_fail(const fe_term *t);

#endif /* WEFT_FE_H */
