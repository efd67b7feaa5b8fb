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

/* The version of this header, kept equal to project(VERSION) in
 * CMakeLists.txt (tests/test_info.c checks it); weft_version() gives the
 * library's at run time. */
#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_MAX_RANK 8 /* arrays have rank 0 .. WEFT_MAX_RANK */

/* ------------------------------------------------------------------------
 * Status codes and errors
 * ---------------------------------------------------------------------- */

typedef enum weft_status {
    WEFT_OK = 0,
    WEFT_ERR_NULL_ARGUMENT,    /* a required handle or pointer is NULL */
    WEFT_ERR_INVALID_ARGUMENT, /* a value is out of its documented range */
    WEFT_ERR_TYPE_MISMATCH,    /* element types do not agree */
    WEFT_ERR_RANK_MISMATCH,    /* ranks do not agree */
    WEFT_ERR_PROGRAM_MISMATCH, /* terms of two different programs mixed */
    WEFT_ERR_ARITY,          /* a function has the wrong number of arguments */
    WEFT_ERR_INCOMPLETE,     /* a function used before weft_fun_return */
    WEFT_ERR_SCOPE,          /* a function argument used outside its function,
                                     or an array term that depends on one */
    WEFT_ERR_RESHAPE_SIZE,   /* reshape to a different number of elements */
    WEFT_ERR_SLICE_INDEX,    /* a slice index outside its dimension */
    WEFT_ERR_EMPTY_ARRAY,    /* fold1 (all, seg) of an empty row or segment */
    WEFT_ERR_STENCIL_WINDOW, /* a stencil window that is not 3, 5, 7 or 9 */
    WEFT_ERR_SEGMENTS,       /* segment lengths negative or past the extent */
    WEFT_ERR_BAD_SHAPE,      /* a negative extent, or a size that overflows */
    WEFT_ERR_OUT_OF_BOUNDS,  /* an array index outside the array (at run) */
    WEFT_ERR_DIVIDE_BY_ZERO, /* integer division or remainder by zero (at run) */
    WEFT_ERR_UNDEFINED,      /* other undefined operation at run: shift by the
                                     width or more, quot of INT_MIN by -1,
                                     float to integer out of range */
    WEFT_ERR_BACKEND_UNKNOWN,     /* a backend name that weft does not know */
    WEFT_ERR_BACKEND_UNAVAILABLE, /* a known backend that cannot run here */
    WEFT_ERR_OUT_OF_MEMORY,       /* an allocation failed */
    WEFT_ERR_ARGUMENT_COUNT, /* weft_run given the wrong number of arrays */
    WEFT_ERR_INTERNAL,       /* a bug in weft: please report it */
    WEFT_ERR_DEVICE,         /* the GPU failed: a kernel trapped or faulted,
                                     or the driver reported an error (the
                                     message names the kernel or the call) */
    WEFT_ERR_CANCELLED       /* the run was stopped by weft_cancel or by
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

/* A configuration.  Make one with weft_config_init (or
 * weft_config_default) and then set fields: never zero-initialise one by
 * hand, since weft_context_create refuses a configuration without its
 * size and magic.  docs/abi.md says how the struct may grow. */
typedef struct weft_config {
    uint32_t size;          /* sizeof(weft_config) in the caller's header:
                             set by weft_config_init, do not change */
    uint32_t magic;         /* WEFT_CONFIG_MAGIC: set by weft_config_init */
    weft_backend backend;   /* overridden by $WEFT_BACKEND */
    int threads;            /* worker threads, 0 = one per core, at most 4096
                             (else weft_context_create fails with
                             WEFT_ERR_INVALID_ARGUMENT); $WEFT_THREADS */
    int device;             /* GPU ordinal for the PTX backend; $WEFT_DEVICE */
    const char *cache_dir;  /* NULL = $WEFT_CACHE_DIR or $XDG_CACHE_HOME/weft */
    unsigned flags;         /* WEFT_FLAG_* */
    weft_alloc_fn alloc;    /* NULL = the C library's malloc family */
    void *alloc_user;       /* passed to alloc */
    const char *target_cpu; /* CPU backend: NULL = the host; a CPU name
                               ("x86-64-v3", "skylake-avx512") compiles for
                               that CPU without running (weft_run then
                               returns WEFT_ERR_BACKEND_UNAVAILABLE).  PTX
                               backend: NULL = the device; "sm_XY" compiles
                               PTX for that GPU without one (dump it with
                               WEFT_DUMP=ptx) and does not run */
    const char *dump;       /* what to write for each kernel, as $WEFT_DUMP:
                              a list of plan, ir, opt-ir, asm, vec, ptx;
                              NULL = none */
    const char *dump_dir;   /* where dumps go ($WEFT_DUMP_DIR); NULL = "." */
    uint64_t device_memory; /* PTX backend: use at most this many bytes of
                               device memory, moving the least recently
                               used arrays to the host beyond it (0: all
                               the device has; $WEFT_DEVICE_MEMORY); on
                               several devices (`devices`), this many on
                               each */
    double timeout_ms;      /* a deadline for every weft_run (and the run of
                              weft_run1): a run still going this many
                              milliseconds after it started stops with
                              WEFT_ERR_CANCELLED (0: none; negative or not a
                              number: WEFT_ERR_INVALID_ARGUMENT at
                              weft_context_create); $WEFT_TIMEOUT_MS */
    /* ---- fields added since the first sized layout (docs/abi.md): a
     * configuration from an older header gets their defaults ---- */
    uint64_t cache_max;  /* bound of the disk cache of compiled kernels
                              in bytes: past it the oldest entries are
                              deleted (0: 256 MiB; $WEFT_CACHE_MAX, in
                              bytes or with a suffix K, M or G, powers of
                              1024) */
    const char *trace;   /* a Chrome trace of compile and run phases is
                              written to this file ($WEFT_TRACE, which
                              overrides it; "%p" in it becomes the process
                              id; NULL or "": none).  Contexts of one
                              process that name the same file share it;
                              it is valid JSON once the last of them is
                              freed, or the process exits (README,
                              "Tracing").  A file that cannot be written
                              fails weft_context_create with
                              WEFT_ERR_INVALID_ARGUMENT */
    const char *devices; /* PTX backend: the GPUs of one context, a list
                              of ordinals ("0,1,2,3"; one may repeat: "0,0"
                              runs the partitioned code on one GPU) or
                              "all"; $WEFT_DEVICES overrides it.  NULL, ""
                              or one ordinal: one GPU (`device`), exactly
                              as without this field.  Several: large arrays
                              are split by rows over the devices and
                              element-wise kernels run on every device
                              (docs/distributed.md; with three devices
                              or more and $WEFT_PTX_RELAYS=1 the context
                              has a thread per other device that queues
                              its part of each split kernel, polling 0.2
                              ms after one, then asleep).  An ordinal out of
                              range, a device of another compute
                              capability, or a driver without the virtual
                              memory calls fails weft_context_create with
                              WEFT_ERR_INVALID_ARGUMENT (out of range,
                              malformed) or WEFT_ERR_BACKEND_UNAVAILABLE,
                              naming the cause */
} weft_config;

/* The value of weft_config.magic ("weft" in ASCII). */
#define WEFT_CONFIG_MAGIC 0x77656674u

#define WEFT_FLAG_NO_ENV 1u /* ignore the WEFT_* environment variables */
#define WEFT_FLAG_NO_FUSION                                                    \
    2u /* compute every operation as its own array
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
#define WEFT_FLAG_NO_SPMD                                                      \
    0x100u /* CPU backend: emit element functions one
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
/* Tiered compilation (CPU and PTX backends).  By default a kernel that is in
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
 * to have them all cached).  On the PTX backend the quick tier is LLVM's
 * light optimisation and quick code generation, compiled by the driver
 * at its lowest optimisation level, and the background thread builds the
 * PTX of an untiered compile, has the driver compile it and swaps it in;
 * there weft_context_free drops the kernels still waiting (they do not
 * reach the disk cache) and waits for the one being optimised, and a
 * float fold or scan may differ in its last bits between the tiers (the
 * order of its additions follows the block size, which each tier's
 * register use sets); a kernel with a scalar while loop, which may run
 * long on the code it started with, is optimised at once there.
 * WEFT_FLAG_NO_TIERING
 * ($WEFT_TIERING=0) makes weft_compile emit the optimised code itself
 * before it returns.  WEFT_FLAG_QUICK_CODE ($WEFT_TIERING=quick) keeps
 * the quick code and never optimises it, nor reads or writes the disk
 * cache: for telling a bug of LLVM's optimising code generator from one
 * of weft's; it wins when both flags are set.  Neither flag changes a
 * result (but for those PTX folds and scans).  Ignored by the other
 * backends, by target_cpu and while dumping (always optimised at once). */
#define WEFT_FLAG_NO_TIERING 0x200u
#define WEFT_FLAG_QUICK_CODE 0x400u

/* Fill *cfg with the default configuration: the CPU backend on all cores
 * (the reference interpreter in a build without LLVM), the default cache
 * directory and bound, no flags; cfg->size = size, cfg->magic =
 * WEFT_CONFIG_MAGIC.  size is sizeof(weft_config) as the caller's weft.h
 * declares it: call it through the macro weft_config_init, so that a
 * program built against an older or newer weft.h keeps working (a binding
 * that lays out the struct itself passes its own size).  Of a larger size
 * than this weft knows (a newer header), the fields it knows get their
 * defaults and the rest is zeroed, which is every newer field's default.
 * Errors: WEFT_ERR_NULL_ARGUMENT; WEFT_ERR_INVALID_ARGUMENT for a size
 * smaller than the first sized layout (the fields up to timeout_ms), larger
 * than 4096, or not a multiple of the struct's alignment (nothing is
 * written then). */
WEFT_API weft_status weft_config_init_sized(weft_config *cfg, size_t size);
#define weft_config_init(cfg) weft_config_init_sized((cfg), sizeof(weft_config))

/* The default configuration by value (as weft_config_init), with the size
 * of the caller's header: `weft_config c = weft_config_default();`. */
static inline weft_config weft_config_default(void)
{
    weft_config cfg;
    weft_config_init(&cfg);
    return cfg;
}

/* Parse a backend name ("interp", "cpu", "ptx"; case-insensitive).
 * Returns WEFT_ERR_BACKEND_UNKNOWN for any other name. */
WEFT_API weft_status weft_backend_from_name(const char *name,
                                            weft_backend *out);

typedef struct weft_context weft_context;

/* Create a context from cfg (NULL = defaults).  The environment variable
 * WEFT_BACKEND, when set, overrides cfg->backend.  On success *out owns the
 * context; free it with weft_context_free() after every program, executable
 * and array made with it.  cfg must come from weft_config_init (or
 * weft_config_default): a cfg->magic other than WEFT_CONFIG_MAGIC, or a
 * cfg->size that no weft.h could have, is WEFT_ERR_INVALID_ARGUMENT.  A
 * configuration of an older, smaller layout is read as far as it goes,
 * the newer fields taking their defaults; one of a newer, larger layout is
 * accepted when every byte past the fields this weft knows is zero (the
 * newer fields at their defaults), else WEFT_ERR_INVALID_ARGUMENT naming
 * the size.  Errors: WEFT_ERR_NULL_ARGUMENT, WEFT_ERR_INVALID_ARGUMENT,
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
    uint64_t kernels_compiled;  /* built by LLVM in this context */
    uint64_t kernels_loaded;    /* loaded from the disk cache */
    uint64_t kernels_reused;    /* found already compiled in memory */
    double compile_ms;          /* time spent optimising and emitting */
    int threads;                /* workers running kernels (CPU backend) */
    uint64_t bytes_uploaded;    /* host to device copies (PTX backend) */
    uint64_t bytes_downloaded;  /* device to host copies (PTX backend) */
    uint64_t evictions;         /* device copies moved to the host to make
                                  room (PTX backend) */
    uint64_t device_bytes;      /* device memory held now, pool included */
    uint64_t kernels_optimised; /* CPU, PTX: quick code replaced by
                                   optimised code (WEFT_FLAG_NO_TIERING) */
    double optimise_ms;         /* CPU: time the background thread spent
                                  emitting optimised code; PTX: building,
                                  compiling and loading it */
    /* Compile time by phase, in milliseconds, summed over every kernel
     * and thread of the context (the background thread's included, but
     * for its code generation, which is optimise_ms); every backend
     * counts the phases it has, and WEFT_TRACE shows each as spans. */
    double frontend_ms;     /* weft_compile's passes over the program:
                               sharing recovery, simplify, fuse
                               (every backend) */
    double ir_ms;           /* building each kernel's LLVM IR from its
                               skeleton */
    double llvm_opt_ms;     /* LLVM's optimisation pipeline on kernel IR
                               (PTX: with the link of libdevice) */
    double llvm_codegen_ms; /* CPU: machine code emitted by the threads
                               that compile (the quick tier, or -O3 with
                               WEFT_FLAG_NO_TIERING) */
    double ptx_ms;          /* PTX: LLVM's NVPTX emission of PTX text */
    double driver_link_ms;  /* PTX: the CUDA driver's link of PTX to a
                               cubin (ptxas) and its loading of cubins */
    double jit_link_ms;     /* CPU: linking objects into the JIT and
                               looking up their entry points */
    double disk_ms;         /* reading and writing the disk cache of
                               compiled kernels */
    uint64_t driver_calls;  /* PTX: calls into the CUDA driver made for
                               this context (launches, copies, waits,
                               context switches, allocations, links):
                               divided by the runs, weft's fixed cost per
                               run (bench/gpu/overhead.c) */
    /* PTX over several GPUs (weft_config.devices; docs/distributed.md) */
    int devices;                 /* GPUs of the context: 1 for one, 0 for the
                               other backends */
    uint64_t device_bytes_on[8]; /* device memory held now on device i of
                               the context's list (entry 0 of one GPU:
                               device_bytes); with several, the bytes of
                               arrays split over the devices (1 MiB and
                               larger; smaller ones live on device 0 and
                               are not counted) */
    uint64_t kernels_split;      /* kernels run split over several devices */
    uint64_t device_bytes_moved; /* bytes moved between the devices by
                               weft: partial results that a device other
                               than the first hands to it (folds' and
                               scans' parts) and copies of small arrays
                               to the others (replicas); reads by a
                               kernel of another device's block go over
                               NVLink uncounted (peer reads cannot be
                               counted), as do a split permute's atomics
                               into its result on the first device */
} weft_stats;

/* Block until every kernel that ctx has compiled so far runs its fully
 * optimised code (see WEFT_FLAG_NO_TIERING) and is in the disk cache;
 * returns at once when none is waiting for it, and on backends without
 * tiers.  Call it before timing steady-state runs.  Errors:
 * WEFT_ERR_NULL_ARGUMENT; WEFT_ERR_INTERNAL when LLVM failed to optimise
 * a kernel's code since the last call (that kernel keeps its quick code,
 * whose results are the same); on the PTX backend also the status of the
 * driver's failed compile or load of optimised code (WEFT_ERR_DEVICE,
 * WEFT_ERR_OUT_OF_MEMORY), with its message. */
WEFT_API weft_status weft_context_wait_optimised(weft_context *ctx);

/* Read ctx's counters into *out, which is `size` bytes: of the struct as
 * this weft knows it, the first min(size, sizeof) bytes are written, and
 * any bytes past that up to size are zeroed (newer fields of a newer
 * header read 0).  Call it through the macro weft_context_stats, which
 * passes the caller's sizeof(weft_stats).  Errors: WEFT_ERR_NULL_ARGUMENT. */
WEFT_API weft_status weft_context_stats_sized(const weft_context *ctx,
                                              weft_stats *out, size_t size);
#define weft_context_stats(ctx, out)                                           \
    weft_context_stats_sized((ctx), (out), sizeof(weft_stats))

/* ------------------------------------------------------------------------
 * Introspection: versions, backends, devices, the disk cache
 *
 * What a program (or `weft-info`, tools/weft-info.c) may ask before making
 * a context.  None of these needs a context; all may be called from any
 * thread, and again (the GPU driver is opened once per process and never
 * closed).  Structs that weft fills carry no size of their own: each
 * function takes the caller's sizeof, as weft_context_stats_sized does.
 * ---------------------------------------------------------------------- */

/* weft's version at run time, "MAJOR.MINOR.PATCH" (static).  A program
 * built against an older weft.h may compare it with WEFT_VERSION_*. */
WEFT_API const char *weft_version(void);
/* The same as numbers; any pointer may be NULL. */
WEFT_API void weft_version_numbers(int *major, int *minor, int *patch);
/* The version of LLVM weft was built with ("19.1.7"), or "none" in a
 * build without LLVM (where only the interp backend exists).  Static. */
WEFT_API const char *weft_llvm_version(void);

/* Whether backend b can run here: 1 if so, else 0 with *why (when why is
 * not NULL) set to a one-line reason, owned by weft and valid until this
 * thread's next call of weft_backend_available (weft_last_error says the
 * same); *why is set to NULL when the backend is available.  interp is
 * always available; cpu when weft was built with LLVM and LLVM has a
 * target machine for this host; ptx when libcuda.so.1 loads, cuInit
 * succeeds and the driver sees a device (libdevice is needed only by
 * kernels that call math functions, and is not checked: see
 * weft_libdevice_path).  A backend number weft does not know gives 0. */
WEFT_API int weft_backend_available(weft_backend b, const char **why);

/* The CUDA devices the ptx backend may use (weft_config.device is an
 * ordinal below *n).  Errors: WEFT_ERR_NULL_ARGUMENT;
 * WEFT_ERR_BACKEND_UNAVAILABLE, with *n set to 0 and the reason (no
 * driver, the dlopen message; no device; a build without LLVM) in
 * weft_last_error. */
WEFT_API weft_status weft_device_count(int *n);

/* Facts about one CUDA device. */
typedef struct weft_device_info {
    char name[256];         /* "NVIDIA H100 80GB HBM3" */
    int ordinal;            /* as asked for */
    int sm_major, sm_minor; /* compute capability: 9 and 0 for sm_90 */
    int multiprocessors;
    int clock_khz;         /* peak core clock (0: not reported) */
    uint64_t memory_bytes; /* total device memory */
    int driver_version;    /* cuDriverGetVersion: 1000 * major + 10 *
                                minor of the CUDA version the driver
                                supports, 12080 for 12.8 */
} weft_device_info;

/* Fill *out (`size` bytes, as weft_context_stats_sized; call it through
 * the macro weft_device_info_get) with the facts of device `ordinal`.
 * Cheap: no context is created on the device.  Errors:
 * WEFT_ERR_NULL_ARGUMENT; WEFT_ERR_BACKEND_UNAVAILABLE as
 * weft_device_count; WEFT_ERR_INVALID_ARGUMENT for an ordinal outside
 * 0 .. count - 1; WEFT_ERR_DEVICE when the driver fails to answer. */
WEFT_API weft_status weft_device_info_sized(int ordinal, weft_device_info *out,
                                            size_t size);
#define weft_device_info_get(ordinal, out)                                     \
    weft_device_info_sized((ordinal), (out), sizeof(weft_device_info))

/* Where the ptx backend finds libdevice (NVIDIA's bitcode library of math
 * functions, libdevice.10.bc, linked into kernels that call exp, sin,
 * pow...): $WEFT_LIBDEVICE if set, else under $CUDA_HOME, $CUDA_PATH and
 * the usual CUDA install directories.  Copies the path into buf (n
 * bytes).  Errors: WEFT_ERR_NULL_ARGUMENT; WEFT_ERR_BACKEND_UNAVAILABLE
 * when it is not found (weft_last_error lists every path tried) or in a
 * build without LLVM; WEFT_ERR_INVALID_ARGUMENT when the path does not fit
 * in n bytes. */
WEFT_API weft_status weft_libdevice_path(char *buf, size_t n);

/* Where the ptx backend finds NCCL (libnccl.so.2, opened at run time, for
 * the collectives of a context over several GPUs; docs/distributed.md):
 * $WEFT_NCCL (a path) if it opens, else the library path, else pip's
 * nvidia-nccl-cu13 / -cu12 packages (site-packages/nvidia/nccl/lib under
 * $VIRTUAL_ENV, ~/.local and the system's Python).  Copies the path (or
 * "libnccl.so.2" when the library path found it) into buf (n bytes).
 * When NCCL is found, NCCL_NVLS_ENABLE=0 is set in the process's
 * environment unless already set (NVLink multicast stays off).  Errors:
 * WEFT_ERR_NULL_ARGUMENT; WEFT_ERR_BACKEND_UNAVAILABLE when it is not
 * found (weft then works without it) or weft has no ptx backend;
 * WEFT_ERR_INVALID_ARGUMENT when the path does not fit in n bytes. */
WEFT_API weft_status weft_nccl_path(char *buf, size_t n);

/* The disk cache of compiled kernels as a context made from a
 * configuration would use it. */
typedef struct weft_cache_info {
    int enabled;        /* 1: compiled kernels are kept in dir */
    char dir[4096];     /* the directory ("" when there is none) */
    char why[256];      /* enabled 0: why not ("" otherwise) */
    uint64_t bytes;     /* bytes of the entries in dir now */
    uint64_t entries;   /* number of entries in dir now */
    uint64_t max_bytes; /* the bound: past it the oldest entries go */
} weft_cache_info;

/* Fill *out (`size` bytes; call it through the macro weft_cache_info_get)
 * with the disk cache that a context made from cfg (NULL: defaults) would
 * use on a compiled backend (cpu or ptx), the environment applied as there ($WEFT_CACHE_DIR,
 * $XDG_CACHE_HOME, $HOME, $WEFT_CACHE_MAX; not with WEFT_FLAG_NO_ENV).
 * Like a context, it creates the directory when it is missing.  A cache
 * that cannot be used is not an error: enabled is 0 and why says why (no
 * directory, not writable, a build without LLVM).  Errors:
 * WEFT_ERR_NULL_ARGUMENT; the status weft_context_create gives a cfg or
 * an environment it refuses (WEFT_ERR_INVALID_ARGUMENT for a bad magic or
 * size, or a bad $WEFT_CACHE_MAX; WEFT_ERR_BACKEND_UNKNOWN for a bad
 * $WEFT_BACKEND). */
WEFT_API weft_status weft_cache_info_sized(const weft_config *cfg,
                                           weft_cache_info *out, size_t size);
#define weft_cache_info_get(cfg, out)                                          \
    weft_cache_info_sized((cfg), (out), sizeof(weft_cache_info))

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
WEFT_API weft_type weft_type_leaf(const weft_context *ctx, weft_type t, int i);

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
 * ptx run uses it.  The pointer of a read-only array (from a read-only
 * DLPack tensor) must not be written through.  A device array
 * (weft_array_wrap_device) gets host buffers here, made by weft. */
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
typedef struct weft_acc weft_acc; /* array term (possibly a tuple of arrays) */
typedef struct weft_exp weft_exp; /* scalar term */
typedef struct weft_fun weft_fun; /* scalar function */
typedef struct weft_afun weft_afun; /* array function (for awhile) */

/* A new, empty program in ctx.  Free it with weft_program_free(), which
 * frees every term built in it.  Errors: WEFT_ERR_NULL_ARGUMENT,
 * WEFT_ERR_OUT_OF_MEMORY.  A program is built by one thread at a time. */
WEFT_API weft_status weft_program_create(weft_context *ctx, weft_program **out);
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
WEFT_API weft_afun *weft_afun_create(weft_program *p, weft_type type, int rank);
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
WEFT_API weft_exp *weft_const(weft_program *p, weft_type t, const void *value);

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
#define WEFT_OP_DECL_2(lower)                                                  \
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
WEFT_API weft_exp *weft_shape(weft_acc *a);       /* the extent of a */
WEFT_API weft_exp *weft_size(weft_acc *a);        /* i64: elements of a */
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
WEFT_API weft_exp *weft_while(weft_fun *cond, weft_fun *body, weft_exp *init);

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
WEFT_API weft_acc *weft_unit(weft_exp *e); /* rank-0 array holding e */

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
WEFT_API weft_acc *weft_replicate(int n, weft_exp *const *spec, weft_acc *a);
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
/* The same with the segments given as offsets (Accelerate's foldSeg' and
 * fold1Seg'): off is a rank-1 integral array of nseg + 1 entries (CSR's
 * row pointers, scanl (+) 0 of the lengths), segment k the elements
 * [off[k], off[k + 1]) of each row; an empty off has no segments, and the
 * elements before off[0] or from off[nseg] on belong to none.  At run:
 * WEFT_ERR_SEGMENTS where an offset is below 0, past the innermost extent
 * or below the one before it (the message names the first bad segment);
 * fold1 of an empty segment WEFT_ERR_EMPTY_ARRAY, as with lengths.  On
 * the GPU this form needs no scan of the descriptor. */
WEFT_API weft_acc *weft_fold_seg_offsets(weft_fun *f, weft_exp *z, weft_acc *a,
                                         weft_acc *off);
WEFT_API weft_acc *weft_fold1_seg_offsets(weft_fun *f, weft_acc *a,
                                          weft_acc *off);

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
    WEFT_BOUNDARY_CLAMP,   /* repeat the edge element */
    WEFT_BOUNDARY_MIRROR,  /* reflect without repeating the edge */
    WEFT_BOUNDARY_WRAP,    /* periodic */
    WEFT_BOUNDARY_CONSTANT /* the value given */
} weft_boundary_kind;

typedef struct weft_boundary {
    weft_boundary_kind kind;
    weft_exp *value; /* WEFT_BOUNDARY_CONSTANT only: of the element type */
} weft_boundary;

WEFT_API weft_acc *weft_stencil(weft_fun *f, const int *window, weft_boundary b,
                                weft_acc *a);
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
 * may run on several threads at once.  On ptx it may return before the
 * device has computed the outputs ("Device arrays and DLPack" below says
 * when, and what can still fail); weft_run_into writes into the caller's
 * arrays instead. */
WEFT_API weft_status weft_run(weft_executable *exe, weft_array *const *in,
                              int n_in, weft_array **out, int n_out);

/* Compile and run once (the executable is freed before returning). */
WEFT_API weft_status weft_run1(weft_program *p, weft_acc *const *results, int n,
                               weft_array *const *in, int n_in,
                               weft_array **out, int n_out);

/* ------------------------------------------------------------------------
 * Device arrays and DLPack
 *
 * For runtimes that hand weft their own buffers (numpy, PyTorch, CuPy,
 * JAX) and take its results without copies.
 *
 * When weft_run returns.  On interp and cpu, weft_run returns when every
 * output is computed.  On ptx it queues the kernels of the run on the
 * context's one CUDA stream and returns without waiting for the last of
 * them: its outputs may still be being computed on the device.  It waits
 * only where the host needs a value: an awhile's or acond's condition (an
 * awhile queues its next body before it waits for the condition, and
 * drops that body's work and errors when the loop ends there), a scalar
 * read from an array, the error word of a kernel that can report one
 * (gathers, checked mode; permutes' words are read once, at the end of
 * the run), at its end when it queued a kernel with a scalar while loop
 * (for cancellation), an upload of host data.  Every error of the language
 * (out of bounds, division by zero, ...) is still returned by weft_run
 * itself; what can arise after it returned is only a fault of the device
 * (an illegal address, e.g. from a device buffer the caller freed, a
 * trap, a launch failure), reported as WEFT_ERR_DEVICE by the next call
 * that waits for the stream: weft_array_wait, weft_array_data,
 * weft_array_read, weft_array_device_ptr, weft_array_to_dlpack, or a
 * later weft_run on the context.  Anything that reads an output through
 * weft (weft_array_data, _read, _device_ptr, _to_dlpack) waits for it
 * first, so a host runtime may do its own work between weft_run and the
 * first read.
 *
 * Streams.  weft's GPU work runs on one non-blocking stream per context
 * (it does not synchronise with CUDA's legacy default stream; its handle:
 * weft_context_stream).  Imports
 * (weft_array_wrap_device, weft_array_from_dlpack of a CUDA tensor) wait
 * for all work queued so far on the device's primary context, by anyone
 * (cuCtxSynchronize; the primary context is the one CUDA's runtime, and
 * so PyTorch, CuPy and JAX, use): whatever stream the producer wrote on,
 * its writes are complete before weft's kernels read.  So from Python, call
 * __dlpack__() with no stream (or any stream of the current device):
 * weft does not need the producer to order its writes before a stream of
 * weft's.  A caller that writes a wrapped device buffer again later must
 * itself make that write complete (cudaStreamSynchronize) before the next
 * weft_run that reads it.  Exports (weft_array_device_ptr,
 * weft_array_to_dlpack) wait for weft's stream before they return: the
 * consumer may read the memory on any stream at once, so weft ignores
 * the stream argument of Python's __dlpack__(stream=...).  When an
 * exported array dies (the tensor's deleter released the last
 * reference), weft waits for the whole context before its device memory
 * is used again, in case the consumer's kernels still read it.  When a
 * device array dies, weft waits for its stream before calling the
 * caller's release callback.
 *
 * Device arrays (ptx only).  weft_array_wrap_device makes an array whose
 * home is the caller's device buffers: kernels read and write them in
 * place, they are never freed, pooled or evicted by weft, and the array
 * has no host copy until weft_array_data or weft_array_read downloads it
 * into host buffers weft allocates (freed with the array).  A host write
 * through weft_array_data is uploaded back into the caller's buffers at
 * the next kernel that reads the array.  The release callback runs once,
 * when the last reference goes.
 *
 * Outputs into the caller's arrays (weft_run_into).  An output computed
 * by a kernel at the top level of the program (a map, fold, scan, ...
 * that is a result, or bound by a top-level let to a result) is written
 * straight into the caller's array when its type and shape match: host
 * memory on interp and cpu, and on ptx the device buffers of a device
 * array (no copy at all) or the device copy of a host array.  Other
 * outputs (an input or `use` returned as it is, a reshape view, the
 * result of an acond or awhile, one result given twice, an output array
 * that is also an input of the run) are computed into weft's own arrays
 * and copied in (on the device for a device array).  Distinct arrays
 * over overlapping memory (one tensor imported twice, once as an input
 * and once as an output) are not detected: their results are undefined.  After weft_run_into
 * returns, a host output array (weft_array_create / _wrap / from_dlpack
 * of a host tensor) holds its values in its host buffers (on ptx they
 * are downloaded before it returns); a device array's values may still
 * be being computed (see above: weft_array_wait).
 *
 * DLPack.  weft speaks the versioned managed tensor of DLPack 1.x (weft
 * declares its ABI itself; the header dlpack.h is not needed, and a
 * caller that has it passes its DLManagedTensorVersioned as it is).
 * Accepted on import: version major 1 (any minor); dtypes bool (kDLBool,
 * 8 bits), int and uint of 8, 16, 32, 64 bits, float of 16, 32, 64 bits,
 * one lane, to the weft type of the same name (anything else:
 * WEFT_ERR_TYPE_MISMATCH); ndim 0 .. WEFT_MAX_RANK; byte_offset; strides
 * NULL or compact row-major (an extent of 1 may have any stride; an
 * empty tensor any strides), others WEFT_ERR_INVALID_ARGUMENT unless
 * WEFT_DLPACK_COPY; devices:
 *   kDLCPU, kDLCUDAHost   host memory, wrapped on every backend (on ptx
 *                         uploaded when a kernel reads it);
 *   kDLCUDA               on ptx a device array of the same device
 *                         ordinal (another ordinal:
 *                         WEFT_ERR_INVALID_ARGUMENT); on interp and cpu
 *                         WEFT_ERR_BACKEND_UNAVAILABLE (weft has no
 *                         driver there to copy it, even with the flag);
 *   kDLCUDAManaged        on ptx a device array, elsewhere host memory;
 *   others                WEFT_ERR_INVALID_ARGUMENT.
 * A pointer not aligned to its element size (a device array: to 256
 * bytes, as cuMemAlloc's are, since weft's GPU kernels assume it; a
 * slice's offset breaks it) is refused (or copied with the flag).  The read-only flag is honoured: the array is never written
 * by weft, weft_run_into refuses it as an output
 * (WEFT_ERR_INVALID_ARGUMENT), and the caller must not write through
 * weft_array_data of it; it is exported read-only again.  Host tensors
 * on kDLCUDAHost or kDLCUDAManaged memory on interp and cpu must be
 * complete when imported (weft has no stream to wait for there).
 * ---------------------------------------------------------------------- */

struct DLManagedTensorVersioned; /* DLPack >= 1.0 (dlpack.h) */

/* weft_array_from_dlpack: allow a copy when the tensor cannot be used in
 * place (strides that are not compact, a misaligned pointer); the copy
 * is a weft array on the host, and the tensor is deleted at once. */
#define WEFT_DLPACK_COPY 1u

/* Make an array of tensor t (flags: WEFT_DLPACK_COPY or 0).  On success
 * weft owns t: its deleter (if not NULL) is called exactly once, when the
 * array is freed, or before this returns if weft copied.  On failure the
 * caller still owns t and *out is NULL.  The array shares t's memory (see
 * the section's head for devices and streams).  Errors:
 * WEFT_ERR_NULL_ARGUMENT, WEFT_ERR_INVALID_ARGUMENT (version, strides,
 * device, alignment, rank), WEFT_ERR_TYPE_MISMATCH (dtype),
 * WEFT_ERR_BAD_SHAPE, WEFT_ERR_BACKEND_UNAVAILABLE (a CUDA tensor where
 * there is no GPU), WEFT_ERR_DEVICE, WEFT_ERR_OUT_OF_MEMORY. */
WEFT_API weft_status weft_array_from_dlpack(weft_context *ctx,
                                            struct DLManagedTensorVersioned *t,
                                            unsigned flags, weft_array **out);

/* Export leaf `leaf` of a as a new DLPack 1.1 tensor in *out, compact
 * row-major with explicit strides, on device_type 1 (kDLCPU: a's host
 * buffer, downloaded first when the device copy is newer), 2 (kDLCUDA,
 * ptx only: a's device buffer, uploaded first when the host copy is
 * newer; device_id the context's device) or 0 (where the newest copy
 * is: kDLCUDA on ptx when a's newer copy is on the device or a is a
 * device array, else kDLCPU).  No copy of the data is made (the flag
 * IS_COPIED is never set).  The tensor holds a reference to a; its
 * deleter releases it (call it exactly once, before weft_context_free).
 * The consumer may write through the tensor unless it is read-only (a
 * read-only array): weft then takes the exported copy as the newer one.
 * Errors: WEFT_ERR_NULL_ARGUMENT, WEFT_ERR_INVALID_ARGUMENT (leaf,
 * device_type), WEFT_ERR_BACKEND_UNAVAILABLE (kDLCUDA without a GPU),
 * WEFT_ERR_DEVICE, WEFT_ERR_OUT_OF_MEMORY. */
WEFT_API weft_status
weft_array_to_dlpack(weft_array *a, int leaf, int device_type,
                     struct DLManagedTensorVersioned **out);

/* As weft_array_wrap, for device memory of the ptx context's GPU:
 * device_ptrs[leaf] (CUdeviceptr values as pointers) become the array's
 * home (see the section's head).  release(user), if not NULL, is called
 * once when the last reference goes (not on failure).  Each pointer must
 * be aligned to 256 bytes, as cuMemAlloc's are (weft's GPU kernels
 * assume it), else WEFT_ERR_INVALID_ARGUMENT.  Errors: those of
 * weft_array_wrap, WEFT_ERR_BACKEND_UNAVAILABLE (not a ptx context that
 * runs on a GPU), WEFT_ERR_DEVICE. */
WEFT_API weft_status weft_array_wrap_device(weft_context *ctx, weft_type type,
                                            int rank, const int64_t *shape,
                                            void *const *device_ptrs,
                                            void (*release)(void *user),
                                            void *user, weft_array **out);

/* The device address of leaf `leaf` of a (ptx only) in *out: uploaded
 * first when the host has the newer copy; every queued write to a is
 * complete when this returns.  The address stays valid while a lives
 * (its device copy is never evicted afterwards).  The caller may write
 * through it (not for a read-only array): the device copy becomes the
 * newer one.  NULL for an empty array.  Errors: WEFT_ERR_NULL_ARGUMENT,
 * WEFT_ERR_INVALID_ARGUMENT (leaf), WEFT_ERR_BACKEND_UNAVAILABLE,
 * WEFT_ERR_DEVICE, WEFT_ERR_OUT_OF_MEMORY. */
WEFT_API weft_status weft_array_device_ptr(weft_array *a, int leaf, void **out);

/* As weft_run, with the outputs written into the caller's arrays
 * out[0..n_out-1] (each made by weft_array_create, _wrap, _wrap_device
 * or weft_array_from_dlpack in exe's context, of the output's element
 * type and rank, no array twice, none read-only): see the section's head
 * for which outputs are written in place and when their values are
 * there.  The caller keeps its references.  Errors: those of weft_run;
 * WEFT_ERR_TYPE_MISMATCH, WEFT_ERR_RANK_MISMATCH,
 * WEFT_ERR_INVALID_ARGUMENT (an array twice, or read-only) before
 * anything runs; WEFT_ERR_BAD_SHAPE when an output's shape is not the
 * one the run computes (that array is not written; other outputs may
 * have been).  On any failure the contents of the output arrays are
 * unspecified. */
WEFT_API weft_status weft_run_into(weft_executable *exe, weft_array *const *in,
                                   int n_in, weft_array *const *out, int n_out);

/* Block until every write queued for a on the device is complete (on
 * ptx: the context's stream is waited for); returns at once for an array
 * without a device copy and on interp and cpu.  Returns an asynchronous
 * failure of the device (WEFT_ERR_DEVICE) if one occurred; also
 * WEFT_ERR_NULL_ARGUMENT. */
WEFT_API weft_status weft_array_wait(weft_array *a);

/* ---- weft_context_stream (ptx): weft's CUDA stream ---------------------
 * The CUDA stream on which ctx runs all its GPU work (kernels, copies),
 * into *stream: a CUstream of the driver API, which is also a
 * cudaStream_t of the runtime API (in the device's primary context).  A
 * caller may record CUDA events on it around weft_run to time the run on
 * the device (cudaEventRecord before and after, cudaEventElapsedTime:
 * weft_run queues its kernels on this stream and returns without waiting
 * unless it must read a kernel's error word), or make its own streams wait
 * for weft's work (cudaStreamWaitEvent) instead of the host.  The stream
 * belongs to ctx: never destroy it; it is valid until weft_context_free.
 * Errors: WEFT_ERR_NULL_ARGUMENT; WEFT_ERR_BACKEND_UNAVAILABLE on interp
 * and cpu and for a ptx context that compiles for another GPU (target
 * "sm_XY"), *stream NULL then. */
WEFT_API weft_status weft_context_stream(weft_context *ctx, void **stream);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
