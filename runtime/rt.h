/*
 * runtime/rt.h: what the compiled backends share at run time, one internal
 * header.  Names carry the prefix rt_.
 *
 * A kernel (skeletons-ir/sk.h) runs the same way on every backend: the
 * host evaluates its operands through the interpreter's walk, works out
 * the result's shape and the data-dependent errors the host can see,
 * allocates the outputs and the skeleton's auxiliary buffers, fills the
 * argument block from the kernel's layout, and runs the phases; errors a
 * kernel meets come back in its error word.  That host half, with one
 * driver per skeleton family (exec_*.c), lives here once.  What differs
 * between backends is a small table (rt_ops): where arrays live and what
 * address a kernel sees for them, how phases run (the CPU's gang, a GPU
 * stream), how an array is copied, and the sizes that tune the drivers
 * (workers, grain).
 */
#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../lib/fe.h"

/* Bumped whenever the kernel ABI, the argument block layout or anything
 * else that makes an old cached kernel wrong changes; it is mixed into
 * every kernel key, so old disk entries are simply never found again. */
#define RT_ABI_VERSION                                                         \
    19 /* 11: ptx fold by 128-bit loads and a last-block
                             ticket, ptx scan status words; 12: foldSeg's
                             parts (aux 1 and 2); 13: ptx scan by blocks of
                             256, staged values; 14: ptx element kernels'
                             launch bounds, fold pieces, permute's fused
                             default; 15: ptx generate's four-element
                             chunks, irce, reads hoisted out of while
                             loops; 16: ptx foldSeg in one pass, its
                             error codes; 17: ptx entries' `first`
                             chunk (several GPUs), staged tiles kept
                             across elements, even while loops on the
                             persistent grid; 18: ptx entries' `skip`
                             (uneven kernels' pieces on several GPUs);
                             19: stencils' unchecked interior in every
                             row, the CPU's strips for large windows */

/* ===== disk.c: the disk cache of compiled kernels ===== */

typedef struct rt_disk {
    weft_context *ctx;
    pthread_mutex_t lock; /* guards enabled and note */
    bool enabled;
    char *dir; /* fe_alloc'd, no trailing slash */
    size_t dir_len;
    uint64_t max_bytes;
    const char *ext; /* ".o" (CPU objects), ".ptx" (GPU) */
    char note[256];  /* the directory, or why the cache is off */
} rt_disk;

/* Choose and create (mkdir -p) the cache directory: dir if not NULL, else
 * ctx's cache_dir, else the environment (unless WEFT_FLAG_NO_ENV).  Entries
 * are files <key>.<ext>.  The bound is max_bytes, else ctx's cache_max,
 * else FE_CACHE_MAX_DEFAULT.  Never fails: a problem leaves the cache
 * disabled with the reason in d->note. */
void rt_disk_open(rt_disk *d, weft_context *ctx, const char *dir,
                  uint64_t max_bytes, bool disabled, const char *ext);
void rt_disk_close(rt_disk *d);
bool rt_disk_enabled(rt_disk *d);
/* The entry's file name: <dir>/<64 hex><ext> (fe_alloc'd, *n its size for
 * fe_free), or NULL. */
char *rt_disk_path(rt_disk *d, const uint8_t key[32], size_t *n);
/* Load the entry of key into *out (fe_alloc'd with d's context, *n bytes;
 * the caller frees it with fe_free(d->ctx, ...)).  Returns 1 when found
 * and sound, 0 when absent, -1 when an entry was there but corrupt or
 * truncated (it is deleted). */
int rt_disk_load(rt_disk *d, const uint8_t key[32], void **out, size_t *n);
/* Write the entry p[0..n) for key (temporary file and rename), then trim
 * the directory to max_bytes, oldest first (entries of every extension
 * count).  Returns the bytes written (0 when the cache is off or the
 * write failed, which switches the cache off with the reason noted). */
uint64_t rt_disk_store(rt_disk *d, const uint8_t key[32], const void *p,
                       size_t n);
/* The bytes and number of the entries in d's directory now (every
 * extension).  False (zeros) when there is no directory or it cannot be
 * read, or when out of memory (part counted). */
bool rt_disk_usage(rt_disk *d, uint64_t *bytes, uint64_t *entries);

/* ===== kcache.c: a context's kernels by key, compiled once ===== */

enum { RT_KC_COMPILING, RT_KC_READY, RT_KC_FAILED };

/* One kernel of a cache.  Never moved or freed before the cache, so a
 * waiter may hold it across a wait. */
typedef struct rt_kentry {
    uint8_t key[32];
    int state;          /* RT_KC_*, under the cache's lock */
    weft_status status; /* when FAILED */
    char *msg;          /* when FAILED: FE_MSG_MAX bytes */
    void *value;        /* the owner's (CPU: its addresses; GPU: the
                                loaded kernel), under the cache's lock */
    int n;              /* the owner's (CPU: its symbols) */
} rt_kentry;

typedef struct rt_kcache {
    weft_context *ctx;      /* what entries are allocated with */
    pthread_mutex_t *lock;  /* the owner's: guards the table and states */
    pthread_cond_t changed; /* an entry left COMPILING */
    rt_kentry **slots;      /* open addressing by the key's first bytes */
    size_t cap, count;
} rt_kcache;

/* An empty cache whose entries are allocated with ctx's allocator and
 * guarded by the owner's mutex `lock` (which outlives the cache). */
void rt_kcache_init(rt_kcache *c, weft_context *ctx, pthread_mutex_t *lock);
/* Free every entry (free_value, when not NULL, first frees each entry's
 * value) and the table.  No thread may use c any more. */
void rt_kcache_fini(rt_kcache *c, void (*free_value)(void *, rt_kentry *),
                    void *user);
/* The entry of key, or NULL.  Lock held. */
rt_kentry *rt_kcache_find(rt_kcache *c, const uint8_t key[32]);
/* The entry of key in *out, made when absent; one new or FAILED becomes
 * COMPILING and *mine is set: the caller compiles it, with no lock held,
 * and publishes it.  Otherwise it is READY or being compiled
 * (rt_kcache_wait).  Lock held.  WEFT_ERR_OUT_OF_MEMORY (`who` names the
 * call) when a new entry cannot be made. */
weft_status rt_kcache_claim(rt_kcache *c, const uint8_t key[32],
                            rt_kentry **out, bool *mine, const char *who);
/* Wait (lock held, released while waiting) until e is not COMPILING.
 * READY: WEFT_OK.  FAILED: its status, with its message as this thread's
 * error. */
weft_status rt_kcache_wait(rt_kcache *c, rt_kentry *e);
/* The end of the claimed e's compile (lock held): `state` READY (its
 * value set) or FAILED with status and msg; wakes the waiters. */
void rt_kcache_publish(rt_kcache *c, rt_kentry *e, int state,
                       weft_status status, const char *msg);
#ifdef WEFT_HAVE_LLVM
#include <llvm-c/blake3.h>

/* A kernel key being made: BLAKE3 over a canonical description of the
 * kernel and its target (each runtime adds its own words: runtime-cpu's
 * cpu_key_begin, runtime-gpu's kernel_key), 32 bytes. */
typedef struct rt_key {
    llvm_blake3_hasher h;
} rt_key;
void rt_key_begin(rt_key *k);
void rt_key_add(rt_key *k, const void *p, size_t n);
/* v as 8 bytes, least significant first (the same on every host). */
void rt_key_add_i64(rt_key *k, int64_t v);
/* s's length (rt_key_add_i64), then its bytes; NULL as "". */
void rt_key_add_str(rt_key *k, const char *s);
/* rt_key_add for a describer's callback (sk_describe): key is an rt_key. */
void rt_key_sink(void *key, const void *p, size_t n);
void rt_key_finish(rt_key *k, uint8_t key[32]);
#endif

/* The name of entry point i of the kernel of key, "wk_", the key's first
 * `bytes` bytes in hex, "_i", into buf (size bytes; the CPU names by the
 * whole key, the PTX backend by 16 bytes). */
void rt_kernel_symbol(const uint8_t key[32], int bytes, int i, char *buf,
                      size_t size);

/* ===== tier.c: the background worker of tiered compilation ===== */

/* A job: the backend's structure begins with one. */
typedef struct rt_tier_job {
    struct rt_tier_job *next;
} rt_tier_job;

/* What a backend supplies; user is rt_tier_init's. */
typedef struct rt_tier_ops {
    /* Build job's optimised code and swap it in (on the worker, or in the
     * caller for rt_tier_run_here; no lock of the worker held).  A
     * failure's message is the thread's error. */
    weft_status (*run)(void *user, rt_tier_job *job);
    void (*free_job)(void *user, rt_tier_job *job);
    /* A worker left alone by rt_tier_stop(may_orphan) has finished: free
     * the owner (and its rt_tier).  NULL when never orphaned. */
    void (*orphaned)(void *user);
    const char *label; /* the worker's trace label, or NULL */
} rt_tier_ops;

typedef struct rt_tier {
    const rt_tier_ops *ops;
    void *user;
    bool drain;           /* a stopped worker finishes its queue (else
                                drops it and finishes the job in hand) */
    pthread_mutex_t lock; /* guards what follows */
    pthread_cond_t wake;  /* a job was queued, or stop */
    pthread_cond_t idle;  /* a job finished or was dropped */
    rt_tier_job *queue, *tail;
    int pending;  /* jobs queued or running */
    bool started; /* the worker runs (or ran) */
    bool stop;    /* rt_tier_stop or exit */
    bool abandon; /* the process exits: drop the queue */
    bool busy;    /* the worker is doing a job */
    bool orphan;  /* the worker frees the owner when done */
    bool joined;  /* joined, or to be joined by the exit handler */
    pthread_t thread;
    weft_status status; /* the first failure since the last wait */
    char msg[FE_MSG_MAX];
    struct rt_tier *next_live; /* under tier.c's live_lock */
} rt_tier;

/* Workers that rt_tier_stop left to finish alone, ever (for tests). */
extern atomic_int rt_tier_orphaned;

/* A worker of ops for user, not started; `drain` as in rt_tier. */
void rt_tier_init(rt_tier *t, const rt_tier_ops *ops, void *user, bool drain);
/* Append job (taken over) to the queue, starting the worker on first use.
 * False, job not taken, when no worker can be had (the process exits, t
 * was stopped, no thread): the caller may rt_tier_run_here. */
bool rt_tier_queue(rt_tier *t, rt_tier_job *job);
/* Run job (taken over) in the calling thread, counted as the worker's. */
void rt_tier_run_here(rt_tier *t, rt_tier_job *job);
/* Block until no job is queued or running; the first failure since the
 * last wait (its message into msg; WEFT_OK and "" for none), then
 * forgotten. */
weft_status rt_tier_wait(rt_tier *t, char msg[FE_MSG_MAX]);
/* Whether rt_tier_stop (or exit) has been asked: a job checks it before
 * work that a freed context does not need. */
bool rt_tier_stopping(rt_tier *t);
/* Stop the worker for the owner's free.  With may_orphan, a worker that
 * has a job in hand or queued is detached and left to finish (then it
 * calls ops->orphaned): true, and the owner must not be freed by the
 * caller.  Otherwise the worker is joined (after its queue when drain,
 * else after the job in hand): false. */
bool rt_tier_stop(rt_tier *t, bool may_orphan);
/* Free t's queue (jobs a worker stopped at exit left) and locks; the
 * worker, if any, has been joined or is the caller. */
void rt_tier_fini(rt_tier *t);
/* Block until every orphaned worker has finished. */
void rt_tier_wait_orphans(void);
/* After a compile that may have made LLVM statics (a job's, done by
 * run_job; the caller's, by the backend): the exit handler registered
 * again, so that it runs before their destructors (tier.c, "Exit"). */
void rt_tier_after_llvm(void);

#ifdef WEFT_HAVE_LLVM
struct sk_kernel;
typedef struct rt_job rt_job;

/* One phase of a kernel run: entry point `entry` over [0, n), in chunks of
 * `grain` elements.  A run has 1 .. RT_PHASES_MAX phases.  For a backend
 * over several devices (rt_job.devices > 1; runtime-gpu/multi.c) a
 * driver may say more: `split`, the phase's items [0, n) may be cut into
 * one range per device (an entry that starts its items at the kernel's
 * `first`, skeletons-ir/ptx/target.c); `spread` > 0, the phase is a fold
 * of one row of `spread` elements that every device runs over its own part
 * of the row (skeletons-ir/ptx/fold.c, entry 1). */
#define RT_PHASES_MAX 4
typedef struct rt_phase {
    int entry;
    int64_t n;
    int64_t grain;
    bool split;
    int64_t spread;
} rt_phase;
/* Work of fewer elements than this stays on one device (the joins of the
 * devices' streams cost about what such a kernel does). */
#define RT_SPLIT_MIN ((int64_t)1 << 20)

/* A phase of host work (rt_ops.host_phases): fn over [0, n) in chunks of
 * grain, each call given [start, end) and arg. */
typedef struct rt_host_phase {
    void (*fn)(int64_t start, int64_t end, const void *arg);
    const void *arg;
    int64_t n;
    int64_t grain;
} rt_host_phase;

/* What a backend gives the drivers (a const table per backend). */
typedef struct rt_ops {
    const char *name;
    /* Make output o (contents undefined) / auxiliary array a of n elements
     * (zeroed, or, when host_filled, to be written by the driver on the
     * host before rt_job_fill) in j->out[o] / j->aux[a]. */
    weft_status (*out)(rt_job *j, int o, weft_type type, int rank,
                       const int64_t *shape);
    weft_status (*aux)(rt_job *j, int a, weft_type type, int64_t n,
                       bool host_filled);
    /* The address a kernel sees for each leaf of array a (ptrs[l]); the
     * kernel writes a when `written` (outputs, auxiliary arrays). */
    weft_status (*addr)(rt_job *j, weft_array *a, bool written, uint64_t *ptrs);
    /* Run phases[0 .. n-1] in order, each complete before the next. */
    weft_status (*run)(rt_job *j, int n, const rt_phase *phases);
    /* dst = src, element for element (same type and shape). */
    weft_status (*copy)(rt_job *j, weft_array *dst, weft_array *src);
    /* Bring the error word (aux SK_ERR_AUX, skeletons-ir/sk.h) to the
     * host; or hold it back, giving 0, to read it later and report it
     * through rt_kernel_error then (the GPU: permute's, read with the
     * run's last wait, runtime-gpu/backend.c "Held reports"). */
    weft_status (*read_error)(rt_job *j, int64_t *word);
    /* The job is over (success or not): release what addr held. */
    void (*done)(rt_job *j);
    /* Optional: make sure the general variant of j->k (entries
     * [nentry, 2 nentry)) is there before a job runs it, for a backend
     * that compiles it only when first needed (the CPU); NULL where
     * compilation filled every entry. */
    weft_status (*general)(rt_job *j);
    /* Optional: run host functions ph[0 .. n-1] in order, each complete
     * before the next, on the backend's host threads (the CPU: the gang);
     * NULL where the backend has none (a driver then does that work on
     * the calling thread). */
    weft_status (*host_phases)(rt_job *j, int n, const rt_host_phase *ph);
} rt_ops;

#define RT_MAX_LEAVES 64
#define RT_WBUF 64 /* words of an argument block kept in the job itself */

/* How an auxiliary array that is not host_filled must start (rt_job's
 * aux_start, which a driver sets before rt_job_aux).  A backend may do
 * the cheaper thing the weaker kinds allow (the GPU: no memset per run)
 * or simply zero. */
enum {
    RT_AUX_ZERO = 0,  /* zeroed (the default) */
    RT_AUX_ANY,       /* any contents: the kernel writes every element
                         before it reads it */
    RT_AUX_KEPT_ZERO, /* zeroed, and the kernel puts it back to zero
                         before it ends (a fold's ticket word), so memory
                         that such a kernel left zero serves as it is */
};

/* One run of one kernel, as the drivers (exec_*.c) see it.  rt_exec has
 * evaluated the operands into kid[] (arrays) and val[] (scalars) before
 * the driver runs; the driver allocates out[] and aux[] (rt_job_out,
 * rt_job_aux), sets auxval[], calls rt_job_fill and runs the phases.
 * Everything owned here is released by rt_exec. */
struct rt_job {
    weft_context *ctx;
    const rt_ops *ops;
    void *be;          /* the backend's (gang, device) */
    int64_t workers;   /* parallel workers to keep busy */
    int64_t grain;     /* elements per chunk of element-wise work */
    int64_t chunk_min; /* fewest elements in a chunk of a row cut
                                  into chunks (fold, scan) */
    fe_ix *ix;
    struct sk_kernel *k;
    weft_array *kid[8]; /* evaluated array operands (owned) */
    fe_val *val[8];     /* evaluated scalar operands (or NULL) */
    fe_val vals[8][RT_MAX_LEAVES];
    weft_array *out[2]; /* outputs (owned until handed out) */
    weft_array *aux[8]; /* auxiliary arrays (owned) */
    fe_val auxval[8];   /* auxiliary scalars (one leaf each) */
    uint64_t *w;        /* the argument block: wbuf when it fits */
    uint64_t wbuf[RT_WBUF];
    weft_array **iarr;          /* per item: operands of fused producers */
    fe_val **ival;              /* (SK_SRC_TERM), evaluated by rt_exec */
    int variant;                /* 0: equal-shapes entries; 1: general */
    void *be_job;               /* the backend's per-job state */
    fe_cancel *cancel;          /* the run's cancellation (may be NULL) */
    unsigned char aux_start[8]; /* how aux[a] must start: RT_AUX_* */
    int devices;                /* devices the backend runs a kernel on (0
                                  or 1: one; rt_phase) */
};

/* Run kernel k of operation k->op inside the interpreter's walk ix with
 * backend ops (its state be; workers, grain, chunk_min as in rt_job):
 * evaluate the operands, allocate the outputs, fill the argument block and
 * run the phases.  On success out[] holds new references to the outputs;
 * on failure nothing (status with message).  The run's cancellation
 * (fe_ix_cancel) is checked before the kernel starts and after it ends:
 * WEFT_ERR_CANCELLED when it was seen. */
typedef struct rt_backend {
    const rt_ops *ops;
    void *be;
    int64_t workers, grain, chunk_min;
    void *be_job;         /* the backend's per-job state */
    int devices;          /* as rt_job.devices */
    uint64_t cancel_word; /* what a kernel with a scalar while loop gets
                                 in its cancel item (sk.h SK_CANCEL_AUX):
                                 the CPU, the address of the run's
                                 fe_cancel; PTX, the device address of the
                                 flag the host raises */
} rt_backend;
weft_status rt_exec(weft_context *ctx, const rt_backend *rb, fe_ix *ix,
                    struct sk_kernel *k, weft_array **out);
/* The status and message of kernel k's error word w (a report key,
 * codegen/cg.h): the interpreter's status for the same operation, and a
 * message naming the kernel and the element. */
weft_status rt_kernel_error(const struct sk_kernel *k, uint64_t w);

/* ===== job.c: a job's operands, shapes, buffers, argument block, phases ===== */

/* Evaluate the kernel's operands into j->kid[] / j->val[] and the
 * operands of its fused producers, and choose its variant (equal shapes
 * or general).  Errors: the operands' own, WEFT_ERR_OUT_OF_MEMORY. */
weft_status rt_job_operands(rt_job *j);
/* Release what j owns, after the backend's own done (rt_ops.done). */
void rt_job_release(rt_job *j);
/* The shape of array term t of the kernel: an operand (manifest, or a
 * fused producer, computed from its operands), or the operation itself
 * when it is a producer.  Errors as the interpreter's for the same
 * producer (WEFT_ERR_BAD_SHAPE, WEFT_ERR_RESHAPE_SIZE,
 * WEFT_ERR_SLICE_INDEX). */
weft_status rt_term_shape(rt_job *j, const fe_term *t, int64_t *shape);
/* The index of entry point `entry` in the variant the job runs. */
int rt_job_entry(rt_job *j, int entry);

/* Allocate output o / a rank-1 auxiliary array a of n elements (see
 * rt_ops.out and .aux). */
weft_status rt_job_out(rt_job *j, int o, weft_type type, int rank,
                       const int64_t *shape);
weft_status rt_job_aux(rt_job *j, int a, weft_type type, int64_t n,
                       bool host_filled);
/* Fill the argument block from the kernel's layout (after out/aux). */
weft_status rt_job_fill(rt_job *j);
/* Run entry point `entry` over [0, n) with the given grain; run n phases
 * in order (1 <= n <= RT_PHASES_MAX; another n is weft's bug, reported as
 * WEFT_ERR_INTERNAL naming it). */
weft_status rt_job_run(rt_job *j, int entry, int64_t n, int64_t grain);
weft_status rt_job_phases(rt_job *j, int n, const rt_phase *phases);
/* Chunks per row for a fold or scan of `rows` rows of m elements: 1 when
 * the rows alone keep the workers busy, else enough that each worker has
 * several, none shorter than j->chunk_min or the kernel's own chunk_min,
 * and none longer than RT_CHUNK_MAX elements. */
#define RT_CHUNK_MAX ((int64_t)1 << 22)
int64_t rt_row_chunks(const rt_job *j, int64_t rows, int64_t m);
/* A shape from the leaves of a DIM value (WEFT_ERR_BAD_SHAPE if an extent
 * is negative or the size overflows); `op` names the operation. */
weft_status rt_shape_of(const fe_val *v, int rank, int64_t *shape,
                        const char *op);

/* ===== plan.c ===== */

struct sk_target;
/* The kernels of an executable. */
typedef struct rt_plan_t {
    int n, cap;
    struct sk_kernel **k;
    struct sk_kernel **by_op; /* the n kernels by address of op, for
                                 rt_plan_kernel's binary search */
} rt_plan_t;
/* Fill kernel k's entry points (k->entry) for the backend: compile it or
 * find it in a cache.  Returns a status with its message on failure. */
typedef weft_status (*rt_get_fn)(void *user, weft_executable *exe,
                                 struct sk_kernel *k);
/* Make a kernel of every operation of exe's core that target tg has a
 * skeleton for (see plan.c), calling get for each; *out lives in exe's
 * arena.  Errors: those of sk_prepare and get. */
weft_status rt_plan(weft_executable *exe, const struct sk_target *tg,
                    rt_get_fn get, void *user, rt_plan_t **out);
/* families.c: of the n kernel roots *slots[i] (operations with a
 * skeleton that are not fused into their consumer, with the producers
 * fused into them), those of a family that differ only in the numeric
 * constants of their functions get the constants from a let put above
 * them (*slots[i] replaced), so that the family shares one compiled
 * kernel.  *lifted: whether any was.  Errors: out of memory. */
weft_status rt_families(weft_executable *exe, fe_term **const *slots, int n,
                        bool *lifted);
/* The kernel of operation t, or NULL (the interpreter computes it). */
struct sk_kernel *rt_plan_kernel(const rt_plan_t *pl, const fe_term *t);
/* Print the kernels, a line each: what was fused into each. */
void rt_plan_dump(const rt_plan_t *pl, FILE *out);
/* What kernel k computes, "fold, fused: map", into buf (n bytes), which it
 * returns. */
const char *rt_kernel_name(const struct sk_kernel *k, char *buf, size_t n);

/* ===== exec*.c: the drivers, one per skeleton family ===== */
weft_status rt_exec_generate(rt_job *j);  /* exec.c */
weft_status rt_exec_fold(rt_job *j);      /* exec.c */
weft_status rt_exec_scan(rt_job *j);      /* exec_scan.c */
weft_status rt_exec_scan_pass(rt_job *j); /* exec_scan.c: ptx/scan.c */
weft_status rt_exec_permute(rt_job *j);   /* exec_permute.c */
weft_status rt_exec_fold_seg(rt_job *j);  /* exec_foldseg.c */
/* The input of segmented fold job j, for both drivers: its shape (rank
 * in *rank) and the segment descriptor *seg (j's operand, borrowed).
 * WEFT_ERR_INTERNAL, naming `name`, where the input has rank 0 or the
 * descriptor is not an array of one leaf and rank 1 (exec_foldseg.c). */
weft_status rt_fold_seg_input(rt_job *j, const char *name, int64_t *shape,
                              int *rank, weft_array **seg);
weft_status rt_exec_fold_seg_pass(rt_job *j); /* exec_foldseg_pass.c:
                                                  ptx/foldseg.c */
weft_status rt_exec_stencil(rt_job *j);       /* exec_stencil.c */
weft_status rt_exec_reshape(rt_job *j);       /* exec_reshape.c: unit,
                                            reshape, replicate, slice */
#endif                                        /* WEFT_HAVE_LLVM */

#endif /* WEFT_RT_H */
