/*
 * runtime-cpu/cpu.h: weft's CPU runtime, one internal header sectioned by
 * file.
 *
 * Names here carry the prefix cpu_.  The CPU backend runs JIT-compiled
 * kernels with the ABI
 *
 *     void kernel(int64_t start, int64_t end, const void *args);
 *
 * over index ranges on a gang of threads (gang.c).
 */
#ifndef WEFT_CPU_H
#define WEFT_CPU_H

#include <stdbool.h>
#include <stdint.h>

/* By path, so that a file including this one needs no -Ilib. */
#include "../lib/fe.h"
#include "../runtime/rt.h"

/* ===== gang.c: the work-stealing gang that runs kernels on all cores ===== */

/* A kernel: runs the elements [start, end) of a job; args is the job's
 * argument block, shared by every call. */
typedef void (*cpu_kernel_fn)(int64_t start, int64_t end, const void *args);

typedef struct cpu_gang cpu_gang;

/* One phase of a job (see cpu_gang_run_phases). */
typedef struct cpu_phase {
    cpu_kernel_fn kernel; /* run over [0, n) */
    const void *args;     /* passed to every call of kernel */
    int64_t n;            /* elements; 0 skips the phase */
    int64_t grain;        /* elements per chunk; <= 0: chosen by the gang */
    fe_cancel *cancel;    /* NULL, or the run's cancellation: looked at
                             before each chunk (a job of one chunk, run on
                             the calling thread, is cut into chunks of
                             the grain so that it is looked at too); once
                             seen, the job fails with WEFT_ERR_CANCELLED */
} cpu_phase;

/* Most phases in one job; cpu_gang_run_phases runs longer lists as several
 * jobs one after the other. */
#define CPU_GANG_MAX_PHASES 4
/* Most workers in one gang. */
#define CPU_GANG_MAX_THREADS 4096

/* Make a gang of nthreads workers (0: one per online core), the thread
 * that calls cpu_gang_run counting as one, so nthreads - 1 threads are
 * started; they sleep until a job comes.  Memory comes from ctx's
 * allocator (ctx may be NULL: the default allocator).  *out is the gang,
 * freed by cpu_gang_free, or NULL on failure.  Errors (with a message):
 * WEFT_ERR_NULL_ARGUMENT, WEFT_ERR_INVALID_ARGUMENT (nthreads < 0 or
 * above CPU_GANG_MAX_THREADS), WEFT_ERR_OUT_OF_MEMORY (also when the
 * system has no thread left to give), WEFT_ERR_BACKEND_UNAVAILABLE (a
 * thread could not be started for another reason). */
weft_status cpu_gang_create(weft_context *ctx, int nthreads, cpu_gang **out);

/* Stop and join the workers and free g.  No job may be running on g.
 * NULL does nothing. */
void cpu_gang_free(cpu_gang *g);

/* Workers in g, the caller included (>= 1). */
int cpu_gang_size(const cpu_gang *g);

/* The index of the worker running the calling kernel, in [0, size) of the
 * gang running it: 0 is the thread that called cpu_gang_run; within one
 * job no two threads share an index, so a kernel may keep per-worker
 * partial results indexed by it.  0 outside any job. */
int cpu_gang_worker_id(void);

/* Run kernel k over [0, n) on g and return when every element has run.
 * [0, n) is cut into chunks of `grain` elements (grain <= 0: the gang
 * picks one, at least 1024); each call of k gets one or more whole chunks
 * (the last may be short), every element exactly once.  A job of at most
 * one chunk, a gang of one, or a call from inside a kernel running on g
 * runs k(0, n, args) on the calling thread with no wake-up.
 *
 * Blocks.  Several threads may call it on one gang at once: their jobs run
 * one after the other (a mutex), each on the whole gang.  Returns WEFT_OK,
 * or the first failure a kernel reported with cpu_gang_fail (its message
 * then becomes the calling thread's last error). */
weft_status cpu_gang_run(cpu_gang *g, cpu_kernel_fn k, const void *args,
                         int64_t n, int64_t grain);

/* Run phases[0..nphases-1] in order as one job: every element of phase i
 * has run, and its writes are visible, before any element of phase i + 1
 * starts.  Workers go from one phase to the next without sleeping in
 * between (an atomic countdown of the elements left in each phase).
 * Blocks; returns as cpu_gang_run, and a failure skips the phases after
 * it.  Nothing runs unless every phase is valid: g NULL, phases NULL with
 * nphases > 0, or a NULL kernel with n > 0 is WEFT_ERR_NULL_ARGUMENT;
 * nphases < 0 or n < 0 is WEFT_ERR_INVALID_ARGUMENT. */
weft_status cpu_gang_run_phases(cpu_gang *g, int nphases,
                                const cpu_phase *phases);

/* Called from inside a kernel: report that the job failed with status s
 * and a printf-style message.  The first failure of a job wins; the
 * elements not yet started are skipped (later calls of kernels in the
 * job may still happen for chunks already claimed) and cpu_gang_run
 * returns s.  Outside a job it only sets the thread's last error.
 * Returns s. */
weft_status cpu_gang_fail(weft_status s, const char *fmt, ...) FE_PRINTF(2, 3);

/* Whether the job the calling kernel belongs to has failed (a kernel may
 * stop early).  false outside a job. */
bool cpu_gang_failed(void);

/* ===== jit.c: ORC LLJIT, optimisation, kernel caches ===== */

#ifdef WEFT_HAVE_LLVM
#include <llvm-c/Core.h>
#include <llvm-c/blake3.h>

/* What cpu_jit writes to files in cpu_jit_options.dump_dir (a bit set). */
enum {
    CPU_DUMP_IR = 1,     /* <name>.ll: the module as built, before -O3 */
    CPU_DUMP_OPT_IR = 2, /* <name>.opt.ll: after -O3 */
    CPU_DUMP_ASM = 4,    /* <name>.s: the machine code as assembly */
    CPU_DUMP_VEC = 8     /* <name>.vec.txt: one line per function, whether
                            and how wide it was vectorised */
};

/* How a fresh kernel is compiled (jit.c, "Tiers"). */
enum {
    CPU_TIER_NONE = 0,    /* optimised code, made before cpu_jit_get
                                returns */
    CPU_TIER_QUICK_FIRST, /* quick code at once, replaced by optimised
                                code that a background thread makes */
    CPU_TIER_QUICK_ONLY   /* quick code only; no disk cache */
};

/* Options of cpu_jit_create; zero-initialise and set what you need. */
typedef struct cpu_jit_options {
    const char *cpu;          /* NULL: the host CPU, code is run; else a CPU
                              name ("skylake-avx512", "x86-64-v3"): code is
                              compiled (and dumped) but never run */
    const char *features;     /* with cpu: e.g. "+avx2,-avx512f"; NULL = the
                              CPU's own features */
    const char *cache_dir;    /* NULL: from the context's config, then
                              $WEFT_CACHE_DIR, $XDG_CACHE_HOME/weft,
                              $HOME/.cache/weft */
    bool no_disk_cache;       /* keep kernels in memory only */
    uint64_t cache_max_bytes; /* disk cache bound; 0 = 256 MiB */
    int prefer_vector_width;  /* 0: the CPU's own preference; else 128,
                              256 or 512, set on every kernel function
                              (skylake-avx512 prefers 256 by default) */
    unsigned dump;            /* CPU_DUMP_* */
    const char *dump_dir;     /* where dumps go; required when dump != 0 */
    int tier;                 /* CPU_TIER_*; only CPU_TIER_NONE for an explicit
                              cpu or with dump flags */
} cpu_jit_options;

typedef struct cpu_jit cpu_jit;

/* Counters of one cpu_jit, as cpu_jit_stats reads them. */
typedef struct cpu_jit_stats {
    uint64_t compiled;     /* kernels built, optimised and emitted */
    uint64_t disk_loads;   /* kernels loaded from the disk cache */
    uint64_t memory_hits;  /* requests answered from memory (or by waiting
                               for another thread's compilation) */
    uint64_t disk_rejects; /* disk entries found corrupt and recompiled */
    double compile_ms;     /* time spent optimising and emitting by the
                               threads that asked for kernels */
    uint64_t optimised;    /* quick code replaced by optimised code */
    double optimise_ms;    /* time the background thread spent emitting */
    uint64_t disk_bytes_written;
    bool disk_enabled;   /* the disk cache is in use */
    char disk_note[256]; /* its directory, or why it is off */
} cpu_jit_stats;

/* Parse a $WEFT_DUMP-style list ("ir,opt-ir,asm,vec", commas or spaces;
 * unknown words are ignored, "plan" and "ptx" belong to others) into
 * CPU_DUMP_* bits. */
unsigned cpu_dump_flags(const char *list);

/* Make the JIT of context ctx (ctx may be NULL in tests: default allocator,
 * no config).  Initialises LLVM once per process (cg_init).  Errors:
 * WEFT_ERR_NULL_ARGUMENT, WEFT_ERR_INVALID_ARGUMENT (an unknown CPU name,
 * dump without dump_dir), WEFT_ERR_BACKEND_UNAVAILABLE (LLVM could not make
 * a JIT or a target machine here), WEFT_ERR_OUT_OF_MEMORY.  A disk cache
 * that cannot be used is not an error: it is switched off, and the reason
 * shows in cpu_jit_stats.  Free with cpu_jit_free (NULL does nothing); the
 * kernels' code dies with it. */
weft_status cpu_jit_create(weft_context *ctx, const cpu_jit_options *opt,
                           cpu_jit **out);
void cpu_jit_free(cpu_jit *j);
/* Tests only: called by the background thread before each tier-up (NULL:
 * nothing).  The jits cpu_jit_free has left to their background thread to
 * free, because it was doing a job (jit.c, "Freeing"), are counted in
 * runtime/tier.c's rt_tier_orphaned; rt_tier_wait_orphans waits for them. */
extern void (*cpu_jit_tier_hook)(void);

/* Whether module m is huge: over the instruction count above which the
 * JIT compiles it with linear passes and quick code only (emit.c, "Huge
 * kernels"), in one function or, when `total`, in all (one kernel: a
 * kernel may be many small functions, one per fused map; a batch of small
 * kernels is no huge kernel).  runtime-cpu/backend.c then builds a huge
 * kernel again without SPMD code. */
bool cpu_module_huge(LLVMModuleRef m, bool total);

/* The vector register width, in bits, that j's target CPU has for SPMD
 * element functions (skeletons-ir/spmd.c): prefer_vector_width when set,
 * else 512 with AVX-512F, 256 with AVX2 (or AVX), 128 otherwise. */
int cpu_jit_vector_bits(const cpu_jit *j);

/* Whether j's code can be called (false for an explicit target CPU). */
bool cpu_jit_runnable(const cpu_jit *j);

/* Kernel keys (runtime/kcache.c's rt_key).  The caller hashes a
 * canonical description of the kernel (skeleton, element types, ranks,
 * fused functions) with rt_key_add*; cpu_key_begin has already mixed in
 * the target triple, CPU name and features of j, the LLVM version and
 * RT_ABI_VERSION, so a key names one object file. */
void cpu_key_begin(const cpu_jit *j, rt_key *k);

/* The name a kernel's i-th entry point must have: "wk_<64 hex of key>_<i>"
 * (buf of at least CPU_SYMBOL_MAX bytes).  Entry points are looked up by
 * name in one JIT dylib for the whole context, so names must differ
 * between kernels; deriving them from the key guarantees that, and makes
 * an object loaded from disk define exactly the names asked for. */
#define CPU_SYMBOL_MAX 96
#define CPU_MAX_SYMBOLS 16 /* entry points of one kernel, at most */
void cpu_jit_symbol(const uint8_t key[32], int i, char *buf);

/* Builds the kernel's module in llctx (owned by cpu_jit, disposed after
 * the module) and stores it in *out.  It must define a function for every
 * symbol asked for; every other function or global it defines is made
 * internal.  Called only when neither memory nor disk has the kernel, on
 * the requesting thread, with no lock held.  On failure it returns a
 * status with its message set (fe_error) and leaves *out NULL (or a module
 * to be disposed). */
typedef weft_status (*cpu_build_fn)(void *user, LLVMContextRef llctx,
                                    LLVMModuleRef *out);

/* The entry points of kernel `key`: addrs[i] is the address of
 * symbols[i] (NULL for every i when j is not runnable).  The kernel is
 * taken from memory, else loaded from the disk cache, else built with
 * build(user, ...), optimised (CG_CPU_PIPELINE, with the loop and SLP
 * vectorisers), emitted as an object file, written to the disk cache and
 * linked; with CPU_TIER_QUICK_FIRST, emitted quickly and linked, the rest
 * left to the background thread (jit.c, "Tiers").  Each
 * key is compiled once per cpu_jit; concurrent requests for one key wait
 * for the first.  Thread-safe; blocks while compiling.  Errors: those of
 * build, WEFT_ERR_INVALID_ARGUMENT (nsym < 1, or a request for a key
 * with a different symbol count), WEFT_ERR_INTERNAL (LLVM rejected the
 * module or could not link it: the message has LLVM's words),
 * WEFT_ERR_OUT_OF_MEMORY.  A failed kernel is tried again by the next
 * request (threads already waiting get the failure). */
weft_status cpu_jit_get(cpu_jit *j, const uint8_t key[32], cpu_build_fn build,
                        void *user, const char *const *symbols, int nsym,
                        void **addrs);

/* cpu_jit_get, and *live: the kernel's table of nsym addresses inside j,
 * where a tier-up (CPU_TIER_QUICK_FIRST) stores the optimised code's
 * addresses in place of the quick code's.  Read it with atomic loads
 * (__atomic_load_n, acquire); it stays valid until cpu_jit_free. */
weft_status cpu_jit_get_live(cpu_jit *j, const uint8_t key[32],
                             cpu_build_fn build, void *user,
                             const char *const *symbols, int nsym, void **addrs,
                             void *const **live);

/* One kernel of cpu_jit_get_many: as cpu_jit_get_live's arguments. */
typedef struct cpu_request {
    const uint8_t *key; /* 32 bytes */
    void *user;         /* for the build function */
    const char *const *symbols;
    int nsym;          /* 1 .. CPU_MAX_SYMBOLS */
    void **addrs;      /* out: nsym addresses */
    void *const *live; /* out: the jit's table of them */
} cpu_request;
/* Kernels in one batch, at most, and their symbols together. */
#define CPU_BATCH_KERNELS 128
#define CPU_BATCH_SYMBOLS 512

/* cpu_jit_get_live for n kernels (n <= CPU_BATCH_KERNELS, their symbols
 * together at most CPU_BATCH_SYMBOLS), built by `build` with each one's
 * user: those not in memory are compiled together, as one module, and
 * kept in the disk cache as one object, under a key made of all their
 * keys (jit.c, "Many kernels").  Errors: as cpu_jit_get; on failure no
 * kernel of the batch is ready (they may be asked for again). */
weft_status cpu_jit_get_many(cpu_jit *j, cpu_build_fn build, cpu_request *r,
                             int n);

/* Block until every kernel that j compiled with quick code so far has its
 * optimised code (or failed to get it: the kernel keeps its quick code,
 * and the first such failure since the last call is returned, with LLVM's
 * message).  Returns at once when nothing is pending.  NULL: WEFT_OK. */
weft_status cpu_jit_wait(cpu_jit *j);

/* cpu_jit_get for a module already built (in any LLVM context; ownership
 * of m is taken, its context stays the caller's).  When the key is cached,
 * m is disposed unused. */
weft_status cpu_jit_compile(cpu_jit *j, LLVMModuleRef m, const uint8_t key[32],
                            const char *const *symbols, int nsym, void **addrs);

/* Copy j's counters into *out. */
void cpu_jit_stats_get(cpu_jit *j, cpu_jit_stats *out);
/* Add the compile phases j counted (weft_stats' *_ms fields) to *st. */
void cpu_jit_phases(cpu_jit *j, weft_stats *st);

/* ===== jit.c, tier.c and emit.c: the jit's insides ===== */

#include <llvm-c/LLJIT.h>
#include <llvm-c/TargetMachine.h>

struct cpu_jit {
    weft_context *ctx;   /* &actx: what the jit allocates with */
    weft_context actx;   /* only cfg is set: a copy of the context's
                                configuration, so that a tier-up left
                                running by cpu_jit_free (see "Freeing")
                                needs nothing of the context */
    LLVMOrcLLJITRef jit; /* NULL when compiling for another CPU */
    LLVMTargetRef target;
    char *triple; /* LLVM-allocated strings (LLVMDisposeMessage) */
    char *cpu;
    char *features;
    int prefer_vector_width;
    unsigned dump;
    char *dump_dir; /* fe_alloc'd, or NULL */
    rt_disk disk;
    pthread_mutex_t lock; /* guards the table and the counters */
    rt_kcache cache;      /* the kernels by key (under lock) */
    cpu_jit_stats st;
    pthread_mutex_t link;         /* serialises AddObjectFile and lookups */
    int tier;                     /* CPU_TIER_* */
    rt_tier worker;               /* the background thread (runtime/tier.c);
                                its jobs drain when the jit is freed, or
                                it is orphaned ("Freeing") */
    pthread_mutex_t session_lock; /* guards session_msg */
    char session_msg[256];        /* ORC's last reported error */
};

/* Kernels whose optimised code the background thread is to make: one,
 * or a batch (see "Many kernels"). */
typedef struct cpu_tier_job {
    rt_tier_job link; /* first: runtime/tier.c's queue */
    uint8_t key[32];  /* of the object in the disk cache */
    rt_kentry **es;   /* ne entries, whose symbols follow each
                                other in symbols */
    int ne;
    LLVMContextRef llctx; /* owned: the job alone uses it */
    LLVMModuleRef m;      /* the optimised IR, the kernel's own names */
    int nsym;
    char (*symbols)[CPU_SYMBOL_MAX];
} cpu_tier_job;

/* ===== emit.c: the LLVM pipeline, module to linked code ===== */

/* Diagnostics of a compilation: the first error is kept, the rest
 * (warnings, remarks) dropped, so that LLVM prints nothing; the handler
 * (user: a cpu_diag) for LLVMContextSetDiagnosticHandler. */
typedef struct cpu_diag {
    char msg[256];
} cpu_diag;
void cpu_on_diagnostic(LLVMDiagnosticInfoRef info, void *user);
/* Whether the name (n bytes) is one of the nsym symbols. */
bool cpu_symbol_listed(const char *name, size_t n, const char *const *symbols,
                       int nsym);
/* Prepare and optimise m (CG_CPU_PIPELINE, or CPU_HUGE_PIPELINE when huge)
 * for j's target, dumping the IR as asked; *ms the time in the passes.
 * Errors: WEFT_ERR_INTERNAL (a module that does not verify, LLVM's
 * failure), WEFT_ERR_BACKEND_UNAVAILABLE (no target machine). */
weft_status cpu_jit_optimise(cpu_jit *j, LLVMModuleRef m,
                             const char *const *symbols, int nsym, bool huge,
                             double *ms);
/* Emit m at `level` into a new object *obj (named after `name` for dumps;
 * `background`: the tier-up's emit, whose time is not a compile phase);
 * *ms the time taken. */
weft_status cpu_jit_emit(cpu_jit *j, LLVMModuleRef m, LLVMCodeGenOptLevel level,
                         const char *name, bool background,
                         LLVMMemoryBufferRef *obj, double *ms);
/* Add object obj (taken over) to the JIT and look up its nsym symbols
 * into addrs. */
weft_status cpu_jit_link(cpu_jit *j, LLVMMemoryBufferRef obj,
                         const char *const *symbols, int nsym, void **addrs);

/* ===== jit.c and tier.c ===== */

/* jit.c.  Free j and everything it holds (no thread uses it any more). */
void cpu_jit_destroy(cpu_jit *j);

/* tier.c.  The worker's operations on the CPU's jobs (rt_tier_ops.run and
 * .free_job; user: the cpu_jit): emit the optimised code, write it to the
 * disk cache and link it in; free a job. */
weft_status cpu_tier_run(void *user, rt_tier_job *job);
void cpu_tier_job_release(void *user, rt_tier_job *job);
/* A job for the background thread: m (optimised) and its context llctx,
 * taken over when it returns non-NULL (NULL: out of memory); the caller
 * sets its entries (cpu_tier_queue). */
cpu_tier_job *cpu_tier_job_new(cpu_jit *j, const uint8_t key[32],
                               LLVMContextRef llctx, LLVMModuleRef m,
                               const char *const *symbols, int nsym);
void cpu_tier_job_free(cpu_jit *j, cpu_tier_job *t);
/* Queue t for its ne entries es (j's lock held; each READY with quick
 * code; es fe_alloc'd, now t's).  False when no thread can be had: the
 * caller then runs it, unlocked, with cpu_tier_run_here. */
bool cpu_tier_queue(cpu_jit *j, rt_kentry **es, int ne, cpu_tier_job *t);
void cpu_tier_run_here(cpu_jit *j, cpu_tier_job *t);
/* Emit the quick code of the optimised module m and link it into addrs:
 * for CPU_TIER_QUICK_FIRST a renamed copy of m ("q" appended to each
 * symbol; m is kept for the optimised code), for CPU_TIER_QUICK_ONLY m
 * itself under the kernel's own names.  *ms: time taken. */
weft_status cpu_tier_emit_quick(cpu_jit *j, LLVMModuleRef m,
                                const char *const *symbols, int nsym,
                                void **addrs, double *ms);

#endif /* WEFT_HAVE_LLVM */

/* ===== backend.c ===== */

#define CPU_GRAIN 4096 /* elements per chunk of element-wise work */
#define CPU_GRAIN_HEAVY                                                        \
    128 /* ... of a kernel that is not light (loops,
                               math functions: sk_kernel.light), so that a
                               few thousand such elements still spread over
                               every core (n-body written with a while loop,
                               8192 bodies: 2 chunks of 4096 kept 16 cores at
                               a 1.6x speed-up) */
#define CPU_GRAIN_HEAVY_MIN                                                    \
    16 /* ... and the least such chunk (backend.c:
                                  phase_grain) */

#endif /* WEFT_CPU_H */
