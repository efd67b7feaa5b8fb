/*
 * weft: data-parallel array programs for C.
 *
 * A program is a term of a small typed array language (the language of
 * Haskell's Accelerate), built at run time with the calls below, compiled
 * once and run many times on a backend chosen by configuration.
 *
 * Conventions used throughout this header:
 *   - Calls that can fail return a weft_status; WEFT_OK is 0.  The message
 *     of the last failure on the calling thread is weft_last_error().
 *   - Builder calls (those returning weft_acc *, weft_exp *, weft_fun *)
 *     are sticky: the program keeps its first error; a builder given NULL or
 *     called on a program in error returns NULL and adds nothing.  Check once
 *     with weft_program_status() or at weft_compile().
 *   - Terms (weft_acc, weft_exp, weft_fun, weft_afun) live in their program
 *     and die with weft_program_free().  Arrays are reference counted.
 *     Callers free only what they created; freeing NULL does nothing.
 *   - Shapes and indices list the outermost dimension first; arrays are
 *     row-major (the last index varies fastest).
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(WEFT_BUILDING) && defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_MAX_RANK 8 /* arrays have rank 0 .. WEFT_MAX_RANK */

/* ------------------------------------------------------------------------
 * Status codes and errors
 * ---------------------------------------------------------------------- */

typedef enum weft_status {
    WEFT_OK = 0,
    WEFT_ERR_NULL_ARGUMENT,       /* a required handle or pointer is NULL */
    WEFT_ERR_INVALID_ARGUMENT,    /* a value is out of its documented range */
    WEFT_ERR_TYPE_MISMATCH,       /* element types do not agree */
    WEFT_ERR_RANK_MISMATCH,       /* ranks do not agree */
    WEFT_ERR_PROGRAM_MISMATCH,    /* terms of two different programs mixed */
    WEFT_ERR_ARITY,               /* a function has the wrong number of arguments */
    WEFT_ERR_INCOMPLETE,          /* a function used before weft_fun_return */
    WEFT_ERR_SCOPE,               /* a function argument used outside its function,
                                     or an array term that depends on one */
    WEFT_ERR_RESHAPE_SIZE,        /* reshape to a different number of elements */
    WEFT_ERR_SLICE_INDEX,         /* a slice index outside its dimension */
    WEFT_ERR_EMPTY_ARRAY,         /* fold1 (all, seg) of an empty row or segment */
    WEFT_ERR_STENCIL_WINDOW,      /* a stencil window that is not 3, 5, 7 or 9 */
    WEFT_ERR_SEGMENTS,            /* segment lengths negative or past the extent */
    WEFT_ERR_BAD_SHAPE,           /* a negative extent, or a size that overflows */
    WEFT_ERR_OUT_OF_BOUNDS,       /* an array index outside the array (at run) */
    WEFT_ERR_DIVIDE_BY_ZERO,      /* integer division or remainder by zero (at run) */
    WEFT_ERR_UNDEFINED,           /* other undefined operation at run: shift by the
                                     width or more, quot of INT_MIN by -1,
                                     float to integer out of range */
    WEFT_ERR_BACKEND_UNKNOWN,     /* a backend name that weft does not know */
    WEFT_ERR_BACKEND_UNAVAILABLE, /* a known backend that cannot run here */
    WEFT_ERR_OUT_OF_MEMORY,       /* an allocation failed */
    WEFT_ERR_ARGUMENT_COUNT,      /* weft_run given the wrong number of arrays */
    WEFT_ERR_INTERNAL,            /* a bug in weft: please report it */
    WEFT_ERR_DEVICE,              /* the GPU failed: a kernel trapped or faulted,
                                     or the driver reported an error (the
                                     message names the kernel or the call) */
    WEFT_ERR_CANCELLED            /* the run was stopped by weft_cancel or by
                                     the context's deadline (timeout_ms) */
} weft_status;

/* The one-line message of the last failed call on this thread ("" if none).
 * The string is owned by weft and valid until the thread's next weft call. */
WEFT_API const char *weft_last_error(void);

/* The name of a status code, e.g. "WEFT_ERR_TYPE_MISMATCH".  Static. */
WEFT_API const char *weft_status_name(weft_status s);

/* ------------------------------------------------------------------------
 * Element types
 *
 * A weft_type is a small integer.  Scalar types are the constants below;
 * WEFT_DIM(n) is the type of shapes and indices of rank n (n components of
 * i64); tuple types are made by weft_type_tuple() and belong to a context.
 * ---------------------------------------------------------------------- */

typedef int32_t weft_type;

enum {
    WEFT_BOOL = 1,
    WEFT_I8,
    WEFT_I16,
    WEFT_I32,
    WEFT_I64,
    WEFT_U8,
    WEFT_U16,
    WEFT_U32,
    WEFT_U64,
    WEFT_F16, /* IEEE binary16, stored as uint16_t bits */
    WEFT_F32,
    WEFT_F64
};
#define WEFT_DIM(n) ((weft_type)(64 + (n))) /* shape / index of rank n */

/* ------------------------------------------------------------------------
 * Configuration and context
 * ---------------------------------------------------------------------- */

typedef enum weft_backend {
    WEFT_BACKEND_INTERP = 0, /* reference interpreter: simple and slow */
    WEFT_BACKEND_CPU = 1,    /* LLVM JIT on all cores (the default) */
    WEFT_BACKEND_PTX = 2     /* NVIDIA GPU: NVPTX and the CUDA driver */
} weft_backend;

/* A replaceable allocator (as Lua's lua_Alloc): with new_size 0 it frees ptr
 * and returns NULL; otherwise it behaves as realloc(ptr, new_size).  A NULL
 * return for a non-zero size is an allocation failure, reported as
 * WEFT_ERR_OUT_OF_MEMORY.  It may be called from several threads at once. */
typedef void *(*weft_alloc_fn)(void *user, void *ptr, size_t old_size,
                               size_t new_size);

typedef struct weft_config {
    weft_backend backend; /* overridden by $WEFT_BACKEND */
    int threads;          /* worker threads, 0 = one per core, at most 4096
                             (else weft_context_create fails with
                             WEFT_ERR_INVALID_ARGUMENT); $WEFT_THREADS */
    int device;           /* GPU ordinal for the PTX backend; $WEFT_DEVICE */
    const char *cache_dir; /* NULL = $WEFT_CACHE_DIR or $XDG_CACHE_HOME/weft */
    unsigned flags;        /* WEFT_FLAG_* */
    weft_alloc_fn alloc;   /* NULL = the C library's malloc family */
    void *alloc_user;      /* passed to alloc */
    const char *target_cpu; /* CPU backend: NULL = the host; a CPU name
                               ("x86-64-v3", "skylake-avx512") compiles for
                               that CPU without running (weft_run then
                               returns WEFT_ERR_BACKEND_UNAVAILABLE).  PTX
                               backend: NULL = the device; "sm_XY" compiles
                               PTX for that GPU without one (dump it with
                               WEFT_DUMP=ptx) and does not run */
    const char *dump;      /* what to write for each kernel, as $WEFT_DUMP:
                              a list of plan, ir, opt-ir, asm, vec, ptx;
                              NULL = none */
    const char *dump_dir;  /* where dumps go ($WEFT_DUMP_DIR); NULL = "." */
    uint64_t device_memory; /* PTX backend: use at most this many bytes of
                               device memory, moving the least recently
                               used arrays to the host beyond it (0: all
                               the device has; $WEFT_DEVICE_MEMORY) */
    double timeout_ms;     /* a deadline for every weft_run (and the run of
                              weft_run1): a run still going this many
                              milliseconds after it started stops with
                              WEFT_ERR_CANCELLED (0: none; negative or not a
                              number: WEFT_ERR_INVALID_ARGUMENT at
                              weft_context_create); $WEFT_TIMEOUT_MS */
} weft_config;

#define WEFT_FLAG_NO_ENV 1u    /* ignore the WEFT_* environment variables */
#define WEFT_FLAG_NO_FUSION 2u /* compute every operation as its own array
                                  (for comparisons and debugging) */
/* Checked mode ($WEFT_CHECK=1; $WEFT_CHECK=0 turns it off): compiled
 * kernels report every undefined operation that the interpreter reports,
 * with its status (WEFT_ERR_OUT_OF_BOUNDS for `!`, `!!`, gathers and
 * permute targets; WEFT_ERR_DIVIDE_BY_ZERO; WEFT_ERR_UNDEFINED for shifts
 * by a negative amount or the width or more, quot/div of the minimum by
 * -1, float to integer of NaN or out of range) and a message naming the
 * kernel and the element.  Without it (the default, and as fast as weft
 * goes) these operations give defined values, the same on cpu and ptx:
 * `!`/`!!` outside the array give zero; x quot 0 = x div 0 = x, x rem 0 =
 * x mod 0 = 0; minBound quot -1 = minBound; shifts use the amount modulo
 * the width; float to integer saturates, NaN giving 0 (docs/language.md,
 * "Undefined operations").  Gathers of backpermute, transform and slice
 * and permute targets are checked in both modes. */
#define WEFT_FLAG_CHECKED 4u
#define WEFT_FLAG_NO_SPMD 0x100u /* CPU backend: emit element functions one
                                    element at a time, not over vector
                                    lanes (for comparisons and debugging;
                                    $WEFT_SPMD=0) */
/* Fast math ($WEFT_FAST_MATH=1 sets it, =0 clears it): floating-point
 * operations in kernels may be reassociated, contracted into fused
 * multiply-adds, and computed with approximate functions and reciprocals,
 * and the sign of zero may be ignored; NaN and infinity are still
 * honoured.  Results may differ from the default (strict IEEE, the
 * interpreter's) in the last bits, or more where a sum is reordered.
 * The reference interpreter ignores the flag.  Part of every kernel's
 * cache key. */
#define WEFT_FLAG_FAST_MATH 8u
/* Tiered compilation (CPU backend).  By default a kernel that is in
 * neither cache is compiled in two tiers: weft_compile optimises its IR
 * and emits it with LLVM's quick code generator (about a tenth of the
 * time of the optimising one), so it returns soon with code that already
 * computes exactly the results of the optimised code, only more slowly;
 * a background thread of the context then emits the same IR with full
 * optimisation, writes that to the disk cache, and swaps it in: runs that
 * start after that use it.  weft_context_wait_optimised waits for it;
 * weft_context_free does not: the thread finishes on its own and the
 * optimised code reaches the disk cache after the free (a process that
 * exits meanwhile waits only for the kernel being optimised; wait first
 * to have them all cached).  WEFT_FLAG_NO_TIERING
 * ($WEFT_TIERING=0) makes weft_compile emit the optimised code itself
 * before it returns.  WEFT_FLAG_QUICK_CODE ($WEFT_TIERING=quick) keeps
 * the quick code and never optimises it, nor reads or writes the disk
 * cache: for telling a bug of LLVM's optimising code generator from one
 * of weft's; it wins when both flags are set.  Neither flag changes a
 * result.  Ignored by the other
 * backends, by target_cpu and while dumping (always optimised at once). */
#define WEFT_FLAG_NO_TIERING 0x200u
#define WEFT_FLAG_QUICK_CODE 0x400u

/* The default configuration: the CPU backend on all cores (the reference
 * interpreter in a build without LLVM), the default cache directory, no
 * flags. */
WEFT_API weft_config weft_config_default(void);

/* Parse a backend name ("interp", "cpu", "ptx"; case-insensitive).
 * Returns WEFT_ERR_BACKEND_UNKNOWN for any other name. */
WEFT_API weft_status weft_backend_from_name(const char *name,
                                            weft_backend *out);

typedef struct weft_context weft_context;

/* Create a context from cfg (NULL = defaults).  The environment variable
 * WEFT_BACKEND, when set, overrides cfg->backend.  On success *out owns the
 * context; free it with weft_context_free() after every program, executable
 * and array made with it.  Errors: WEFT_ERR_NULL_ARGUMENT,
 * WEFT_ERR_BACKEND_UNKNOWN (bad $WEFT_BACKEND), WEFT_ERR_BACKEND_UNAVAILABLE,
 * WEFT_ERR_OUT_OF_MEMORY.  A context may be used from several threads. */
WEFT_API weft_status weft_context_create(const weft_config *cfg,
                                         weft_context **out);
WEFT_API void weft_context_free(weft_context *ctx);

/* The backend the context runs on. */
WEFT_API weft_backend weft_context_backend(const weft_context *ctx);

/* Cancellation.  weft_cancel(ctx) stops every run of ctx that is in
 * progress when it is called (weft_run, the run of weft_run1, on any
 * thread): each returns WEFT_ERR_CANCELLED as soon as it next looks, and
 * stores no output.  Runs that start after the call are not affected: a
 * cancel is not remembered for the future.  Compilation is not cancelled.
 * The context, its executables and arrays stay usable: the next run
 * starts afresh.  A deadline (weft_config.timeout_ms) cancels one run the
 * same way when its time is up.
 *
 * Where a run looks: between iterations of an awhile, between the kernels
 * of a run, between the chunks that the CPU's workers take (a few
 * thousand elements each), and every few thousand iterations of a scalar
 * while loop inside an element function (on every backend; on a GPU the
 * host raises a flag in mapped host memory that the running kernel
 * reads).  A single element whose function runs long without a while loop
 * is not interrupted, nor is a GPU kernel without a while loop.  On a GPU
 * a cancelled while loop ends early and its thread finishes the kernel
 * with that state (whose results are discarded); an index computed from
 * it that falls outside an array is unchecked there as everywhere in
 * unchecked mode.
 *
 * weft_cancel only increments an atomic counter: it takes no lock,
 * allocates nothing and may be called from any thread, from a signal
 * handler, or with NULL (which does nothing). */
WEFT_API void weft_cancel(weft_context *ctx);

/* Counters of a context's kernel caches (compiled backends; all zero for
 * the interpreter). */
typedef struct weft_stats {
    uint64_t kernels_compiled; /* built by LLVM in this context */
    uint64_t kernels_loaded;   /* loaded from the disk cache */
    uint64_t kernels_reused;   /* found already compiled in memory */
    double compile_ms;         /* time spent optimising and emitting */
    int threads;               /* workers running kernels (CPU backend) */
    uint64_t bytes_uploaded;   /* host to device copies (PTX backend) */
    uint64_t bytes_downloaded; /* device to host copies (PTX backend) */
    uint64_t evictions;        /* device copies moved to the host to make
                                  room (PTX backend) */
    uint64_t device_bytes;     /* device memory held now, pool included */
    uint64_t kernels_optimised; /* CPU: quick code replaced by optimised
                                   code (WEFT_FLAG_NO_TIERING) */
    double optimise_ms;        /* CPU: time the background thread spent
                                  emitting optimised code */
} weft_stats;

/* Block until every kernel that ctx has compiled so far runs its fully
 * optimised code (see WEFT_FLAG_NO_TIERING) and is in the disk cache;
 * returns at once when none is waiting for it, and on backends without
 * tiers.  Call it before timing steady-state runs.  Errors:
 * WEFT_ERR_NULL_ARGUMENT; WEFT_ERR_INTERNAL when LLVM failed to optimise
 * a kernel's code since the last call (that kernel keeps its quick code,
 * whose results are the same). */
WEFT_API weft_status weft_context_wait_optimised(weft_context *ctx);

/* Read ctx's counters into *out.  Errors: WEFT_ERR_NULL_ARGUMENT. */
WEFT_API weft_status weft_context_stats(const weft_context *ctx,
                                        weft_stats *out);

/* A tuple type of n >= 0 component types (which may be tuples), interned in
 * ctx: equal tuples give the same weft_type.  Returns 0 (no type) and sets
 * the last error on a bad component or allocation failure.
 *
 * The unit type: weft_type_tuple(ctx, 0, NULL), the empty tuple, has one
 * value, weft_tuple(p, 0, NULL).  It has no leaves, so an array of unit
 * has a shape and no buffer at all (weft_array_data gives NULL; from_host
 * and wrap take no buffers); it may stand wherever a type may (arrays,
 * function arguments and results, tuple components, while states, seeds),
 * e.g. a generate of unit as a shape alone, or a unit field in a tuple. */
WEFT_API weft_type weft_type_tuple(weft_context *ctx, int n,
                                   const weft_type *components);

/* Number of components of a tuple type (of a WEFT_DIM(n) type: n; of a
 * scalar type: 0), and component i of it (0 if out of range). */
WEFT_API int weft_type_arity(const weft_context *ctx, weft_type t);
WEFT_API weft_type weft_type_component(const weft_context *ctx, weft_type t,
                                       int i);

/* Number of scalar leaves of a type: an array of this type has one buffer
 * per leaf (struct of arrays), leaves ordered depth-first, left to right.
 * weft_type_leaf() gives the scalar type of leaf i. Both 0 on a bad type
 * (and weft_type_leaves 0 for the unit type and tuples of units). */
WEFT_API int weft_type_leaves(const weft_context *ctx, weft_type t);
WEFT_API weft_type weft_type_leaf(const weft_context *ctx, weft_type t,
                                  int i);

/* Size in bytes of one element of a scalar type (bool: 1), 0 otherwise. */
WEFT_API size_t weft_type_size(weft_type t);

/* ------------------------------------------------------------------------
 * Arrays
 *
 * An array has an element type, a rank and a shape, and one host buffer per
 * leaf of its type.  Arrays are reference counted: the creator holds one
 * reference; weft_array_release() drops it.
 * ---------------------------------------------------------------------- */

typedef struct weft_array weft_array;

/* A new array of the given type, rank and shape (shape[0..rank-1]),
 * zero-filled.  Errors: WEFT_ERR_NULL_ARGUMENT, WEFT_ERR_INVALID_ARGUMENT
 * (bad type or rank), WEFT_ERR_BAD_SHAPE, WEFT_ERR_OUT_OF_MEMORY. */
WEFT_API weft_status weft_array_create(weft_context *ctx, weft_type type,
                                       int rank, const int64_t *shape,
                                       weft_array **out);

/* As weft_array_create, then copy data[leaf] (one pointer per leaf, each
 * size * sizeof(leaf type) bytes) into it.  The caller keeps its buffers. */
WEFT_API weft_status weft_array_from_host(weft_context *ctx, weft_type type,
                                          int rank, const int64_t *shape,
                                          const void *const *data,
                                          weft_array **out);

/* Wrap the caller's buffers (one per leaf) without copying.  When the last
 * reference goes, release(user) is called (if not NULL); until then the
 * buffers must stay valid and weft may write to them when the array is an
 * output.  Errors as weft_array_create. */
WEFT_API weft_status weft_array_wrap(weft_context *ctx, weft_type type,
                                     int rank, const int64_t *shape,
                                     void *const *data,
                                     void (*release)(void *user), void *user,
                                     weft_array **out);

WEFT_API void weft_array_retain(weft_array *a);
WEFT_API void weft_array_release(weft_array *a); /* NULL is a no-op */

WEFT_API weft_type weft_array_type(const weft_array *a);
WEFT_API int weft_array_rank(const weft_array *a);
/* Extent of dimension d (0 = outermost), 0 if d is out of range. */
WEFT_API int64_t weft_array_extent(const weft_array *a, int d);
/* Number of elements (the product of the extents; 1 for rank 0). */
WEFT_API int64_t weft_array_size(const weft_array *a);

/* The host buffer of leaf `leaf`, valid while the array lives.  NULL on a
 * bad argument, or when the array's newer copy on a GPU cannot be brought
 * to the host (WEFT_ERR_DEVICE; weft_last_error says why).  An array a GPU
 * (the ptx backend) computed stays on the device until it is read here or
 * with weft_array_read; this call downloads it.  The caller may write
 * through the pointer: the next run that uses the array on a GPU uploads
 * it again.  A wrapped buffer (weft_array_wrap) that the caller writes
 * directly must be passed through this call once after writing, before a
 * ptx run uses it. */
WEFT_API void *weft_array_data(weft_array *a, int leaf);

/* Copy leaf `leaf` into dst (bytes bytes, at least size * element size),
 * downloading the array first if a GPU has the newer copy.  Errors:
 * WEFT_ERR_NULL_ARGUMENT, WEFT_ERR_INVALID_ARGUMENT, WEFT_ERR_DEVICE. */
WEFT_API weft_status weft_array_read(weft_array *a, int leaf, void *dst,
                                     size_t bytes);

/* ------------------------------------------------------------------------
 * Programs and terms
 * ---------------------------------------------------------------------- */

typedef struct weft_program weft_program;
typedef struct weft_acc weft_acc;   /* array term (possibly a tuple of arrays) */
typedef struct weft_exp weft_exp;   /* scalar term */
typedef struct weft_fun weft_fun;   /* scalar function */
typedef struct weft_afun weft_afun; /* array function (for awhile) */

/* A new, empty program in ctx.  Free it with weft_program_free(), which
 * frees every term built in it.  Errors: WEFT_ERR_NULL_ARGUMENT,
 * WEFT_ERR_OUT_OF_MEMORY.  A program is built by one thread at a time. */
WEFT_API weft_status weft_program_create(weft_context *ctx,
                                         weft_program **out);
WEFT_API void weft_program_free(weft_program *p);

/* The program's first builder error (WEFT_OK if none), and its message
 * ("" if none; owned by the program).  For NULL: WEFT_ERR_NULL_ARGUMENT,
 * and a message saying so (also in weft_last_error()).  A builder call
 * that mixes terms or functions of several programs records
 * WEFT_ERR_PROGRAM_MISMATCH in each of them. */
WEFT_API weft_status weft_program_status(const weft_program *p);
WEFT_API const char *weft_program_error(const weft_program *p);

/* The program a term belongs to (NULL for NULL). */
WEFT_API weft_program *weft_acc_program(const weft_acc *a);
WEFT_API weft_program *weft_exp_program(const weft_exp *e);

/* Types of terms.  For a tuple of arrays weft_acc_type is 0 and
 * weft_acc_arity its number of arrays (1 for a single array). */
WEFT_API weft_type weft_acc_type(const weft_acc *a);
WEFT_API int weft_acc_rank(const weft_acc *a);
WEFT_API int weft_acc_arity(const weft_acc *a);
WEFT_API weft_type weft_exp_type(const weft_exp *e);

/* Print the program that computes results[0..n-1] after sharing recovery:
 * every term used more than once is bound once by a let, shown as
 * `let aN = ...` (arrays) or `let eN = ...` (scalars).  Errors: those of the
 * program, WEFT_ERR_NULL_ARGUMENT. */
WEFT_API weft_status weft_program_dump(weft_program *p,
                                       weft_acc *const *results, int n,
                                       FILE *out);

/* ------------------------------------------------------------------------
 * Scalar functions
 *
 * A function is created with its argument types, its body built from
 * weft_arg() and other terms, and closed with weft_fun_return().  Scalar
 * terms built outside the function may be used in its body (they become its
 * free variables); an argument may be used only inside its own function or
 * functions nested in it.  A function may be passed to several operations.
 * ---------------------------------------------------------------------- */

WEFT_API weft_fun *weft_fun_create(weft_program *p, int arity,
                                   const weft_type *arg_types);
WEFT_API weft_fun *weft_fun1(weft_program *p, weft_type a);
WEFT_API weft_fun *weft_fun2(weft_program *p, weft_type a, weft_type b);
WEFT_API weft_fun *weft_fun3(weft_program *p, weft_type a, weft_type b,
                             weft_type c);
/* Argument i (0-based) of f. */
WEFT_API weft_exp *weft_arg(weft_fun *f, int i);
/* Set f's body; once only.  Returns f's status (WEFT_OK or the sticky
 * error). */
WEFT_API weft_status weft_fun_return(weft_fun *f, weft_exp *body);
WEFT_API int weft_fun_arity(const weft_fun *f);
/* Apply f to args[0..arity-1]: a let binding each argument. */
WEFT_API weft_exp *weft_apply(weft_fun *f, weft_exp *const *args);

/* Array functions (one array argument, possibly a tuple of arrays). */
WEFT_API weft_afun *weft_afun_create(weft_program *p, weft_type type,
                                     int rank);
/* An array function whose argument has the same type as `like` (which may
 * be a tuple of arrays, e.g. the initial value of an awhile). */
WEFT_API weft_afun *weft_afun_like(weft_acc *like);
WEFT_API weft_acc *weft_afun_arg(weft_afun *f);
WEFT_API weft_status weft_afun_return(weft_afun *f, weft_acc *body);

/* ------------------------------------------------------------------------
 * Scalar terms
 * ---------------------------------------------------------------------- */

/* Constants. */
WEFT_API weft_exp *weft_bool(weft_program *p, int v);
WEFT_API weft_exp *weft_i8(weft_program *p, int8_t v);
WEFT_API weft_exp *weft_i16(weft_program *p, int16_t v);
WEFT_API weft_exp *weft_i32(weft_program *p, int32_t v);
WEFT_API weft_exp *weft_i64(weft_program *p, int64_t v);
WEFT_API weft_exp *weft_u8(weft_program *p, uint8_t v);
WEFT_API weft_exp *weft_u16(weft_program *p, uint16_t v);
WEFT_API weft_exp *weft_u32(weft_program *p, uint32_t v);
WEFT_API weft_exp *weft_u64(weft_program *p, uint64_t v);
WEFT_API weft_exp *weft_f16(weft_program *p, float v); /* rounded to half */
WEFT_API weft_exp *weft_f16_bits(weft_program *p, uint16_t bits);
WEFT_API weft_exp *weft_f32(weft_program *p, float v);
WEFT_API weft_exp *weft_f64(weft_program *p, double v);
/* A constant of any scalar type from its value as stored in an array of
 * that type (bool: one byte, 0 or 1). */
WEFT_API weft_exp *weft_const(weft_program *p, weft_type t,
                              const void *value);

/* Primitive operations.  The names follow Haskell's Prelude and
 * Data.Bits; the type rules are:
 *   NUM   numeric (integral or floating) operands of one type, same result
 *   INT   integral operands of one type, same result
 *   ORD   numeric or bool operands of one type, same result (min, max; bool
 *         is ordered false < true, so on bool min is and, max is or)
 *   LOGIC integral or bool operands of one type, same result (band, bor,
 *         bxor; on bool: and, or, xor, evaluating both operands)
 *   FLT   floating operands of one type, same result
 *   CMP   two operands of one scalar type, bool result
 * Integer arithmetic wraps around.  Division by zero, shifts by the width
 * or more, and quot/div of the minimum by -1 are WEFT_ERR_DIVIDE_BY_ZERO or
 * WEFT_ERR_UNDEFINED at run time in the interpreter (and in checked mode). */
typedef enum weft_op {
#define WEFT_OP(name, lower, arity, rule) WEFT_OP_##name,
#include "weft_ops.h"
#undef WEFT_OP
    WEFT_OP_COUNT_
} weft_op;

/* Apply a primitive of arity 1 or 2 to its arguments (arity from
 * weft_ops.h; the T operations need their own builders below). */
WEFT_API weft_exp *weft_prim(weft_op op, weft_exp *const *args);
WEFT_API weft_exp *weft_prim1(weft_op op, weft_exp *a);
WEFT_API weft_exp *weft_prim2(weft_op op, weft_exp *a, weft_exp *b);
/* The name of a primitive ("add"), or NULL for an unknown one. */
WEFT_API const char *weft_op_name(weft_op op);

/* One function per primitive: weft_add(a, b), weft_sqrt(x), ... as listed
 * in weft_ops.h, each the same as weft_prim with its op. */
#define WEFT_OP(name, lower, arity, rule) WEFT_OP_DECL_##arity(lower)
#define WEFT_OP_DECL_1(lower) WEFT_API weft_exp *weft_##lower(weft_exp *a);
#define WEFT_OP_DECL_2(lower)                                                \
    WEFT_API weft_exp *weft_##lower(weft_exp *a, weft_exp *b);
#define WEFT_OP_DECL_T(lower)
#include "weft_ops.h"
#undef WEFT_OP
#undef WEFT_OP_DECL_1
#undef WEFT_OP_DECL_2
#undef WEFT_OP_DECL_T

/* floor, ceiling, round (half to even) and truncate: from a floating type
 * to the integral type `to`. */
WEFT_API weft_exp *weft_floor(weft_exp *x, weft_type to);
WEFT_API weft_exp *weft_ceiling(weft_exp *x, weft_type to);
WEFT_API weft_exp *weft_round(weft_exp *x, weft_type to);
WEFT_API weft_exp *weft_truncate(weft_exp *x, weft_type to);

/* Conversion between any two of bool and the numeric types (bool to a
 * number is 0 or 1; a number to bool is x != 0; integer to integer wraps;
 * float to integer truncates toward zero, WEFT_ERR_UNDEFINED at run when out
 * of range or NaN in the interpreter and in checked mode; compiled code
 * without it saturates, NaN giving 0).  Bit-cast between scalar types of one
 * size. */
WEFT_API weft_exp *weft_convert(weft_exp *x, weft_type to);
WEFT_API weft_exp *weft_bitcast(weft_exp *x, weft_type to);

/* The conditional c ? t : e (only the chosen branch is evaluated; t and e
 * have one type).  weft_and and weft_or (above) evaluate b only when
 * needed. */
WEFT_API weft_exp *weft_cond(weft_exp *c, weft_exp *t, weft_exp *e);

/* Tuples: build one from n >= 0 components (its type is interned in the
 * program's context; n 0 is the unit value, of weft_type_tuple(ctx, 0,
 * NULL)), and take component i of a tuple or of an index. */
WEFT_API weft_exp *weft_tuple(weft_program *p, int n,
                              weft_exp *const *components);
WEFT_API weft_exp *weft_get(weft_exp *tuple, int i);

/* Shapes and indices (type WEFT_DIM(rank), components i64, outermost
 * first).  weft_index(p, 0, NULL) is the rank-0 index Z. */
WEFT_API weft_exp *weft_index(weft_program *p, int rank,
                              weft_exp *const *components);
WEFT_API weft_exp *weft_index1(weft_exp *i);
WEFT_API weft_exp *weft_index2(weft_exp *i, weft_exp *j);
WEFT_API weft_exp *weft_shape(weft_acc *a);      /* the extent of a */
WEFT_API weft_exp *weft_size(weft_acc *a);       /* i64: elements of a */
WEFT_API weft_exp *weft_shape_size(weft_exp *sh); /* i64: product */
/* Row-major linear position of ix in shape sh, and its inverse.  The
 * outermost component of from_index is not reduced modulo its extent. */
WEFT_API weft_exp *weft_to_index(weft_exp *sh, weft_exp *ix);
WEFT_API weft_exp *weft_from_index(weft_exp *sh, weft_exp *i);

/* Indexing any array term of the program: a ! ix (ix of type
 * WEFT_DIM(rank a)) and a !! i (i64, row-major position).  Out-of-bounds
 * indices are WEFT_ERR_OUT_OF_BOUNDS at run in the interpreter and in
 * checked mode (WEFT_FLAG_CHECKED); compiled code without it gives zero. */
WEFT_API weft_exp *weft_at(weft_acc *a, weft_exp *ix);
WEFT_API weft_exp *weft_at_linear(weft_acc *a, weft_exp *i);
/* The single element of a rank-0 array. */
WEFT_API weft_exp *weft_the(weft_acc *a);

/* while: start from init, and while cond(x) is true replace x by body(x).
 * cond: T -> bool, body: T -> T, init: T. */
WEFT_API weft_exp *weft_while(weft_fun *cond, weft_fun *body,
                              weft_exp *init);

/* Markers used only as arguments: `all` in a replicate / slice
 * specification, and `ignore` as the result of a permute index function
 * (drops that element; of type WEFT_DIM(rank)). */
WEFT_API weft_exp *weft_all(weft_program *p);
WEFT_API weft_exp *weft_ignore(weft_program *p, int rank);

/* ------------------------------------------------------------------------
 * Array terms
 * ---------------------------------------------------------------------- */

/* An array fixed into the program (retained until the program and every
 * executable compiled from it are freed). */
WEFT_API weft_acc *weft_use(weft_program *p, weft_array *a);
/* The next parameter: an array of this type and rank given at each run, in
 * the order of weft_param calls. */
WEFT_API weft_acc *weft_param(weft_program *p, weft_type type, int rank);
WEFT_API weft_acc *weft_unit(weft_exp *e);  /* rank-0 array holding e */

/* generate sh f: f takes the index (WEFT_DIM(rank sh)). */
WEFT_API weft_acc *weft_generate(weft_exp *sh, weft_fun *f);
WEFT_API weft_acc *weft_map(weft_fun *f, weft_acc *a);
/* zipWith: the result's extent is the intersection of the extents. */
WEFT_API weft_acc *weft_zipwith(weft_fun *f, weft_acc *a, weft_acc *b);
WEFT_API weft_acc *weft_zipwith3(weft_fun *f, weft_acc *a, weft_acc *b,
                                 weft_acc *c);

/* reshape to sh (same number of elements, else WEFT_ERR_RESHAPE_SIZE). */
WEFT_API weft_acc *weft_reshape(weft_exp *sh, weft_acc *a);
/* replicate: spec[0..n-1] lists the result's dimensions, outermost first:
 * weft_all(p) takes the next dimension of a, an i64 term adds a new
 * dimension of that extent.  The number of `all` entries is a's rank. */
WEFT_API weft_acc *weft_replicate(int n, weft_exp *const *spec,
                                  weft_acc *a);
/* slice: spec[0..rank a - 1]: weft_all(p) keeps a dimension, an i64 term
 * fixes that dimension at that index (WEFT_ERR_SLICE_INDEX at run when
 * outside it). */
WEFT_API weft_acc *weft_slice(weft_acc *a, int n, weft_exp *const *spec);
/* backpermute sh ix a: result[i] = a[ix(i)], ix: DIM(rank sh) ->
 * DIM(rank a). transform also maps f over the fetched values. */
WEFT_API weft_acc *weft_backpermute(weft_exp *sh, weft_fun *ix, weft_acc *a);
WEFT_API weft_acc *weft_transform(weft_exp *sh, weft_fun *ix, weft_fun *f,
                                  weft_acc *a);

/* Reductions along the innermost dimension (rank n >= 1 to rank n-1).
 * f: (T, T) -> T.  fold's seed z enters once per result, on the left. */
WEFT_API weft_acc *weft_fold(weft_fun *f, weft_exp *z, weft_acc *a);
WEFT_API weft_acc *weft_fold1(weft_fun *f, weft_acc *a);
/* Reductions of all elements to a rank-0 array (any rank). */
WEFT_API weft_acc *weft_fold_all(weft_fun *f, weft_exp *z, weft_acc *a);
WEFT_API weft_acc *weft_fold1_all(weft_fun *f, weft_acc *a);
/* Segmented: seg is a rank-1 array of integral segment lengths; the result's
 * innermost extent is the number of segments. */
WEFT_API weft_acc *weft_fold_seg(weft_fun *f, weft_exp *z, weft_acc *a,
                                 weft_acc *seg);
WEFT_API weft_acc *weft_fold1_seg(weft_fun *f, weft_acc *a, weft_acc *seg);

/* Scans along the innermost dimension.  scanl has n+1 elements starting
 * with z; scanl1 n; scanl' is a pair of arrays: the exclusive scan (n) and
 * the totals (rank one less).  scanr, scanr1, scanr' mirror them. */
WEFT_API weft_acc *weft_scanl(weft_fun *f, weft_exp *z, weft_acc *a);
WEFT_API weft_acc *weft_scanl1(weft_fun *f, weft_acc *a);
WEFT_API weft_acc *weft_scanl_(weft_fun *f, weft_exp *z, weft_acc *a);
WEFT_API weft_acc *weft_scanr(weft_fun *f, weft_exp *z, weft_acc *a);
WEFT_API weft_acc *weft_scanr1(weft_fun *f, weft_acc *a);
WEFT_API weft_acc *weft_scanr_(weft_fun *f, weft_exp *z, weft_acc *a);

/* permute f def ix src: start from a copy of def; for each index i of src
 * with ix(i) not ignore, set r[ix(i)] = f(src[i], r[ix(i)]).  ix: DIM(rank
 * src) -> DIM(rank def).  An index outside def is WEFT_ERR_OUT_OF_BOUNDS. */
WEFT_API weft_acc *weft_permute(weft_fun *f, weft_acc *def, weft_fun *ix,
                                weft_acc *src);

/* Stencils.  window[d] is the odd window extent (3, 5, 7 or 9) along
 * dimension d of a (rank 1 to 3).  f takes the window's elements in
 * row-major order (its arity is the product of the extents); stencil2's f
 * takes the first window's elements then the second's, and its result's
 * extent is the intersection. */
typedef enum weft_boundary_kind {
    WEFT_BOUNDARY_CLAMP,    /* repeat the edge element */
    WEFT_BOUNDARY_MIRROR,   /* reflect without repeating the edge */
    WEFT_BOUNDARY_WRAP,     /* periodic */
    WEFT_BOUNDARY_CONSTANT  /* the value given */
} weft_boundary_kind;

typedef struct weft_boundary {
    weft_boundary_kind kind;
    weft_exp *value; /* WEFT_BOUNDARY_CONSTANT only: of the element type */
} weft_boundary;

WEFT_API weft_acc *weft_stencil(weft_fun *f, const int *window,
                                weft_boundary b, weft_acc *a);
WEFT_API weft_acc *weft_stencil2(weft_fun *f, const int *window1,
                                 weft_boundary b1, weft_acc *a1,
                                 const int *window2, weft_boundary b2,
                                 weft_acc *a2);

/* acond: t if c (bool) else e; t and e have one array type. */
WEFT_API weft_acc *weft_acond(weft_exp *c, weft_acc *t, weft_acc *e);
/* awhile: start from init and while cond(x) (a rank-0 bool array) holds,
 * replace x by body(x).  Both take and body returns init's array type. */
WEFT_API weft_acc *weft_awhile(weft_afun *cond, weft_afun *body,
                               weft_acc *init);

/* Tuples of arrays: group n >= 1 terms into one, and take array i of one. */
WEFT_API weft_acc *weft_atuple(weft_program *p, int n,
                               weft_acc *const *components);
WEFT_API weft_acc *weft_aget(weft_acc *tuple, int i);

/* ------------------------------------------------------------------------
 * Compile once, run many
 * ---------------------------------------------------------------------- */

typedef struct weft_executable weft_executable;

/* Compile the program that computes results[0..n-1] for the context's
 * backend.  Each result may be a tuple of arrays; the executable's outputs
 * are all their arrays in order.  The executable does not depend on the
 * program afterwards (the program may be freed).  Errors: the program's
 * first error, WEFT_ERR_SCOPE, WEFT_ERR_INCOMPLETE, WEFT_ERR_NULL_ARGUMENT,
 * WEFT_ERR_OUT_OF_MEMORY. */
WEFT_API weft_status weft_compile(weft_program *p, weft_acc *const *results,
                                  int n, weft_executable **out);
WEFT_API void weft_executable_free(weft_executable *exe);

/* Print the executable's plan: the program after simplification and
 * fusion (a producer computed inside its consumer shows as `fused`), then
 * the kernels the backend runs, one line each ("kernel N: fold, fused:
 * zipwith").  $WEFT_DUMP=plan writes the same to a file in the dump
 * directory at each weft_compile.  Errors: WEFT_ERR_NULL_ARGUMENT. */
WEFT_API weft_status weft_executable_dump(const weft_executable *exe,
                                          FILE *out);

WEFT_API int weft_executable_inputs(const weft_executable *exe);
WEFT_API int weft_executable_outputs(const weft_executable *exe);

/* Run exe on in[0..n_in-1] (one array per weft_param, with its type and
 * rank) and store new arrays in out[0..n_out-1]; the caller releases each
 * output.  On failure no output is stored (out[i] is set to NULL).  Errors:
 * WEFT_ERR_ARGUMENT_COUNT, WEFT_ERR_TYPE_MISMATCH, WEFT_ERR_RANK_MISMATCH
 * for inputs; run-time errors (WEFT_ERR_OUT_OF_BOUNDS, ...).  An executable
 * may run on several threads at once. */
WEFT_API weft_status weft_run(weft_executable *exe, weft_array *const *in,
                              int n_in, weft_array **out, int n_out);

/* Compile and run once (the executable is freed before returning). */
WEFT_API weft_status weft_run1(weft_program *p, weft_acc *const *results,
                               int n, weft_array *const *in, int n_in,
                               weft_array **out, int n_out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
