/*
 * runtime-gpu/backend.c: the PTX backend (WEFT_BACKEND_PTX).
 *
 * Per context: one device (cuda.c: the driver, its primary context, a
 * stream; mem.c: device memory and the mirrors of arrays), NVPTX target
 * machines for the device's compute capability (one per compile running,
 * kept for the next), and a table of the kernels loaded so far, by key
 * (runtime/kcache.c, as on the CPU).
 *
 * weft_compile: every collective operation that has a skeleton becomes a
 * kernel, exactly as on the CPU (runtime/plan.c), but emitted for
 * sk_target_ptx: each phase is a PTX kernel whose threads walk the
 * phase's chunks (skeletons-ir/ptx/target.c).  Its key covers the
 * kernel's canonical description, the SM, the LLVM version and the ABI
 * version.  A kernel is taken from the context's table, else its PTX from
 * the disk cache (runtime/disk.c, <key>.ptx next to the CPU's objects),
 * else built: IR from the skeleton, PTX from LLVM's NVPTX backend
 * in-process (codegen/target_ptx.c, libdevice linked when a math function
 * is called), stored on disk.  Either way the driver compiles the PTX as
 * a whole program and loads it (cuda.c, "Modules": its own cache of
 * compiled PTX makes that cheap for PTX it has seen).
 *
 * Tiers.  A kernel in neither cache is compiled twice, as on the CPU
 * (runtime-cpu/jit.c, "Tiers").  weft_compile builds its PTX quickly
 * (cg_ptx_finish_quick: a few of LLVM's passes, emitted at
 * CodeGenOpt::None; $WEFT_PTX_QUICK_LLVM picks others) and has the driver
 * compile it at a low optimisation level ($WEFT_PTX_QUICK_OPT, 0 by
 * default: on an H100 the driver's part of Black-Scholes 84 -> 43 ms, of
 * dotp 65 -> 45 ms), so the first run starts early; a
 * copy of the kernel's IR, taken before the quick pipeline, goes to the
 * context's tier-up thread (runtime/tier.c's worker, as on the CPU), which
 * makes the PTX of an untiered compile (cg_ptx_finish), has the driver
 * compile it at full optimisation, writes it to the disk cache, and swaps
 * the new functions into the kernel's table entry under the device's
 * lock.  Runs hold that lock from their first launch to their last
 * (ptx_run), and every launch reads its function, block and residency
 * from the entry (rt_run), so a run sees all of one tier or all of the
 * other; the quick module stays loaded until the context ends (launches
 * of it may still be queued on the stream).  No pass of either tier
 * changes floating-point semantics (the PTX's arithmetic is .rn, which
 * ptxas does not contract), so both compute the same bits.  A disk hit
 * loads the optimised PTX at once: only a tier-up writes the disk cache.
 * weft_context_wait_optimised waits until the queue is empty;
 * weft_context_free takes the queue away and waits only for the kernel
 * being optimised (it checks for the stop between LLVM and the driver),
 * then frees.  WEFT_FLAG_NO_TIERING compiles as before tiers (full
 * optimisation at once, $WEFT_PTX_JIT_OPT); WEFT_FLAG_QUICK_CODE keeps the
 * quick code and neither reads nor writes the disk cache; dumping
 * (WEFT_DUMP=ptx) and compile-only contexts (target sm_XY) do not tier
 * (but for tests, gpu_tier_without_device: the thread then makes the
 * optimised PTX and counts it), nor do kernels with a scalar while loop
 * (kernel_tier: a run of such a kernel may last long, on the code it
 * started with).
 *
 * weft_run: the interpreter's walker evaluates the core (lets, acond,
 * awhile, tuples, host scalars, unit) and hands each operation that has a
 * kernel to the shared drivers (runtime/exec*.c) with this file's rt_ops:
 * outputs are device buffers (the host copy of an output is stale until
 * someone reads it, lib/fe.h fe_array_host), inputs are uploaded on first
 * use (small ones without a wait, mem.c upload_leaves) and stay on the
 * device while they are not written on the host, the
 * argument block travels as a kernel parameter, and phases are launches
 * on one stream, ordered without host waits.  The host waits once per
 * kernel that may fail, to read its error word (a gather out of bounds),
 * and takes small outputs along in that wait, but for permute's, which
 * it holds back to read once at the end of the run ("Held reports").
 * The walker speculates in awhile (fe_interp_device, lib/interp.c
 * "Speculation"), so that a loop does not wait for the device at every
 * iteration.  A run holds the device's lock, so runs on one context are
 * serialised.
 */
#ifdef WEFT_HAVE_LLVM
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <llvm-c/blake3.h>

#include "gpu.h"
#include "../codegen/cg.h"
#include "../runtime/rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

/* A loaded kernel: its module and one function per entry point. */
typedef struct ptx_kernel {
    uint8_t key[32];
    gpu_module *mod;
    gpu_module *quick_mod; /* the quick tier's, after a tier-up (kept:
                                    launches of it may still be queued) */
    int nfn;
    gpu_fn fn[SK_MAX_ENTRY];
    char names[SK_MAX_ENTRY][80];
} ptx_kernel;

#define TM_SPARE 4       /* target machines of a kind kept for reuse */
#define CLEAN_BYTES 4096 /* of the clean area per aux index ("Clean words") */
#define HELD_MAX 512     /* error words a run holds back ("Held reports") */
/* The clean area: 8 aux indices, then the held words. */
#define CLEAN_AREA (CLEAN_BYTES * 8 + HELD_MAX * 8)

enum { PTX_TIER_NONE, PTX_TIER_UP, PTX_TIER_QUICK_ONLY };

/* A kernel waiting for its tier-up: the skeleton's IR, not yet finished,
 * in an LLVM context of its own (used by one thread at a time). */
typedef struct ptx_tier_job {
    rt_tier_job link; /* first: runtime/tier.c's queue */
    ptx_kernel *pk;   /* the table entry to swap (NULL without a
                                    device) */
    LLVMContextRef llctx;
    LLVMModuleRef mod;
    uint8_t key[32];
    char names[SK_MAX_ENTRY][80];
    int nfn;
    int block_max;
} ptx_tier_job;

bool gpu_tier_without_device;
void (*gpu_tier_hook)(void);
void (*gpu_build_hook)(void);

typedef struct ptx_state {
    gpu_dev *dev;
    int sm;               /* the SM the PTX is built for */
    pthread_mutex_t lock; /* guards the table, the spare target
                                    machines and the counters */
    rt_kcache cache;      /* the kernels by key (runtime/kcache.c);
                                    a READY entry's value is its
                                    ptx_kernel, none in a compile-only
                                    context */
    LLVMTargetMachineRef spare[2][TM_SPARE]; /* [quick]: target machines
                                    no compile is using ("Compiling in
                                    parallel") */
    int nspare[2];
    rt_disk disk; /* kernels' PTX on disk */
    uint64_t compiled, loaded, reused;
    double compile_ms;
    bool dump_ptx;
    bool no_replicas;        /* $WEFT_PTX_REPLICAS=0: split kernels of
                                    several devices read small arrays on
                                    device 0 (multi.c, "Replicas") */
    bool no_interleave;      /* $WEFT_PTX_INTERLEAVE=0: an uneven
                                    kernel's output laid out in blocks,
                                    its pieces not the granules (multi.c,
                                    "Pieces") */
    int scan_last;           /* the last part's share of a scan of one
                                    row over several devices, in
                                    thousandths ($WEFT_PTX_SCAN_LAST, a
                                    tuning knob; 0: equal parts) */
    int permute_chunks;      /* chunks per resident block of a
                                    permute's entry 2, or of a split
                                    one's part ($WEFT_PTX_PERMUTE_
                                    CHUNKS, a tuning knob, 1 to 64; 0: the
                                    driver's chunk) */
    int64_t grain;           /* elements per thread and chunk of
                                    element-wise work ($WEFT_PTX_GRAIN, a
                                    tuning knob; 1 by default) */
    int opt_level;           /* the driver's optimisation level of
                                    PTX ($WEFT_PTX_JIT_OPT, a tuning knob,
                                    0 to 4; -1: the driver's default) */
    int quick_opt;           /* its level for the quick tier
                                    ($WEFT_PTX_QUICK_OPT; 0) */
    cg_ptx_quick quick_llvm; /* the quick tier's LLVM passes
                                    ($WEFT_PTX_QUICK_LLVM: bare, o1) */
    int tier;                /* PTX_TIER_* ("Tiers") */
    weft_context *ctx;
    uint64_t optimised; /* kernels tiered up (under lock) */
    double optimise_ms; /* the tier-up thread's time (under lock) */
    rt_tier worker;     /* the tier-up thread (runtime/tier.c):
                                    freeing the context drops its queue */
    uint64_t clean;     /* CLEAN_AREA bytes kept zero between
                                    runs ("Clean words"; 0: not yet) */
    bool clean_ok;      /* clean is known to be all zero */
} ptx_state;

static const rt_tier_ops tier_ops;

static ptx_state *state_of(const weft_context *ctx)
{
    return (ptx_state *)ctx->be_state;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- context ----------------------------------------------------------- */

/* Free module m (NULL: nothing) and its copies on the other devices of
 * d's context (multi.c). */
static void module_free(gpu_dev *d, gpu_module *m)
{
    gpu_multi_module_free(d, m);
    gpu_module_free(d, m);
}

static void free_kernel(void *user, rt_kentry *e)
{
    ptx_state *st = user;
    ptx_kernel *k = e->value;
    if (k) {
        module_free(st->dev, k->mod);
        module_free(st->dev, k->quick_mod);
        fe_free(NULL, k, sizeof *k);
    }
}

static void tier_job_free(void *user, rt_tier_job *job)
{
    (void)user;
    ptx_tier_job *t = (ptx_tier_job *)job;
    if (t->llctx) {
        LLVMDisposeModule(t->mod);
        LLVMContextDispose(t->llctx);
    }
    fe_free(NULL, t, sizeof *t);
}

static void ptx_context_fini(weft_context *ctx)
{
    ptx_state *st = state_of(ctx);
    if (!st) {
        return;
    }
    rt_tier_stop(&st->worker, false);
    rt_tier_fini(&st->worker);
    rt_kcache_fini(&st->cache, free_kernel, st);
    if (st->clean) {
        gpu_mem_free(st->dev, st->clean, CLEAN_AREA);
    }
    rt_disk_close(&st->disk);
    for (int q = 0; q < 2; q++) {
        for (int i = 0; i < st->nspare[q]; i++) {
            LLVMDisposeTargetMachine(st->spare[q][i]);
        }
    }
    gpu_mem_close(st->dev);
    gpu_multi_end(st->dev);
    gpu_dev_close(st->dev);
    pthread_mutex_destroy(&st->lock);
    fe_free(ctx, st, sizeof *st);
    ctx->be_state = NULL;
}

/* Tuning knob `name` from the environment, or NULL (unset, or
 * WEFT_FLAG_NO_ENV). */
static const char *knob(const weft_context *ctx, const char *name)
{
    return (ctx->cfg.flags & WEFT_FLAG_NO_ENV) ? NULL : getenv(name);
}

static weft_status ptx_context_init(weft_context *ctx)
{
    weft_status s = cg_init();
    if (s) {
        return s;
    }
    ptx_state *st = fe_calloc(ctx, sizeof *st);
    if (!st) {
        return fe_oom("weft_context_create");
    }
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        fe_free(ctx, st, sizeof *st);
        return fe_oom("weft_context_create");
    }
    rt_kcache_init(&st->cache, ctx, &st->lock);
    rt_tier_init(&st->worker, &tier_ops, st, false);
    st->ctx = ctx;
    ctx->be_state = st;
    const char *target = ctx->cfg.target_cpu;
    if (target && strncmp(target, "sm_", 3) == 0) {
        /* compile only, for an explicit GPU: no driver needed */
        char *end;
        long sm = strtol(target + 3, &end, 10);
        if (*end != '\0' || sm < 50 || sm > 1000) {
            ptx_context_fini(ctx);
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "weft_context_create: target \"%.32s\" is not "
                            "an sm_XY of 50 or more",
                            target);
        }
        st->sm = (int)sm;
        s = cg_ptx_machine(st->sm, &st->spare[0][0]);
    } else {
        /* several devices (multi.c): the first one is st->dev */
        int ords[GPU_MULTI_MAX], nd = 0, count = 0;
        if (ctx->cfg.devices && *ctx->cfg.devices) {
            s = gpu_device_count(&count);
            if (s == WEFT_OK) {
                s = gpu_devices_parse(ctx->cfg.devices, count, ords, &nd,
                                      "weft_context_create");
            }
        }
        if (s == WEFT_OK) {
            s = gpu_dev_open(ctx, nd > 0 ? ords[0] : ctx->cfg.device, &st->dev);
        }
        if (s == WEFT_OK && nd > 1) {
            /* relays only on request: "Queueing" in multi.c says why */
            const char *rl = knob(ctx, "WEFT_PTX_RELAYS");
            s = gpu_multi_open(st->dev, ords, nd, rl && strcmp(rl, "1") == 0,
                               "weft_context_create");
        }
        if (s == WEFT_OK) {
            gpu_mem_set_limit(st->dev, ctx->cfg.device_memory);
            st->sm = gpu_dev_sm(st->dev);
            s = cg_ptx_machine(st->sm, &st->spare[0][0]);
        }
    }
    st->nspare[0] = s == WEFT_OK;
    if (s) {
        ptx_context_fini(ctx);
        return s;
    }
    const char *dump = ctx->cfg.dump;
    st->dump_ptx = dump && strstr(dump, "ptx") != NULL;
    st->grain = sk_target_ptx.chunk_elems; /* sk_elements' full chunks */
    const char *g = knob(ctx, "WEFT_PTX_GRAIN");
    if (g && atoi(g) >= 1 && atoi(g) <= 64) {
        st->grain = atoi(g);
    }
    const char *rp = knob(ctx, "WEFT_PTX_REPLICAS");
    st->no_replicas = rp && strcmp(rp, "0") == 0;
    const char *il = knob(ctx, "WEFT_PTX_INTERLEAVE");
    st->no_interleave = il && strcmp(il, "0") == 0;
    const char *sl = knob(ctx, "WEFT_PTX_SCAN_LAST");
    st->scan_last = sl && atoi(sl) > 0 && atoi(sl) < 1000 ? atoi(sl) : 0;
    const char *pc = knob(ctx, "WEFT_PTX_PERMUTE_CHUNKS");
    st->permute_chunks = pc && atoi(pc) >= 1 && atoi(pc) <= 64 ? atoi(pc) : 0;
    const char *o = knob(ctx, "WEFT_PTX_JIT_OPT");
    st->opt_level = o && *o >= '0' && *o <= '4' && !o[1] ? *o - '0' : -1;
    const char *q = knob(ctx, "WEFT_PTX_QUICK_OPT");
    st->quick_opt = q && *q >= '0' && *q <= '4' && !q[1] ? *q - '0' : 0;
    const char *ql = knob(ctx, "WEFT_PTX_QUICK_LLVM");
    st->quick_llvm = !ql                       ? CG_PTX_QUICK_PASSES
                     : strcmp(ql, "bare") == 0 ? CG_PTX_QUICK_BARE
                     : strcmp(ql, "o1") == 0   ? CG_PTX_QUICK_O1
                                               : CG_PTX_QUICK_PASSES;
    unsigned fl = ctx->cfg.flags;
    st->tier = fl & WEFT_FLAG_QUICK_CODE   ? PTX_TIER_QUICK_ONLY
               : fl & WEFT_FLAG_NO_TIERING ? PTX_TIER_NONE
                                           : PTX_TIER_UP;
    if (st->dump_ptx || (!st->dev && !gpu_tier_without_device)) {
        st->tier = PTX_TIER_NONE;
    }
    rt_disk_open(&st->disk, ctx, NULL, 0,
                 st->dev == NULL || st->tier == PTX_TIER_QUICK_ONLY, ".ptx");
    if (st->tier != PTX_TIER_NONE) {
        s = cg_ptx_machine_quick(st->sm, &st->spare[1][0]);
        st->nspare[1] = s == WEFT_OK;
        if (s) {
            ptx_context_fini(ctx);
            return s;
        }
    }
    return WEFT_OK;
}

static void ptx_stats(const weft_context *ctx, weft_stats *out)
{
    ptx_state *st = state_of(ctx);
    gpu_mem_stats ms = {0};
    if (st->dev) {
        gpu_mem_stats_get(st->dev, &ms);
    }
    pthread_mutex_lock(&st->lock);
    out->kernels_compiled = st->compiled;
    out->kernels_loaded = st->loaded;
    out->kernels_reused = st->reused;
    out->compile_ms = st->compile_ms;
    out->kernels_optimised = st->optimised;
    out->optimise_ms = st->optimise_ms;
    pthread_mutex_unlock(&st->lock);
    out->threads = 0;
    out->bytes_uploaded = ms.uploaded;
    out->bytes_downloaded = ms.downloaded;
    out->evictions = ms.evictions;
    out->device_bytes = ms.held;
    out->driver_calls = ms.calls;
    if (st->dev) { /* several devices: multi.c */
        out->devices = gpu_multi_count(st->dev);
        for (int i = 0; i < out->devices; i++) {
            gpu_multi_device(st->dev, i, &out->device_bytes_on[i]);
        }
        out->kernels_split = gpu_multi_launches(st->dev);
        out->device_bytes_moved = gpu_multi_moved(st->dev, 0);
    }
}

/* ---- compile ----------------------------------------------------------- */

/* The key of kernel k for this context's SM and fast-math setting. */
static void kernel_key(const ptx_state *st, const weft_context *ctx,
                       const fe_core *core, sk_kernel *k)
{
    rt_key h;
    rt_key_begin(&h);
    static const char tag[] = "weft-ptx";
    rt_key_add(&h, tag, sizeof tag);
    int64_t words[4] = {st->sm, LLVM_VERSION_MAJOR * 100 + LLVM_VERSION_MINOR,
                        RT_ABI_VERSION,
                        (ctx->cfg.flags & WEFT_FLAG_FAST_MATH) != 0};
    rt_key_add(&h, words, sizeof words); /* host order, as ever */
    sk_describe(core, k, rt_key_sink, &h);
    rt_key_finish(&h, k->key);
}

/* How kernel k is compiled in st (PTX_TIER_*): as st says, but that a
 * kernel with a scalar while loop (its cancel flag) is not tiered up: it
 * may run long, and a run of it runs the code it started with to its end
 * (and after a cancel its loops stop only every CG_POLL_EVERY_GPU trips:
 * on the quick code test_ptx_cancel's long fold stopped 5 s late on an
 * H100, round s3). */
static int kernel_tier(const ptx_state *st, const sk_kernel *k)
{
    return st->tier == PTX_TIER_UP && k->aux_item[SK_CANCEL_AUX] >= 0
               ? PTX_TIER_NONE
               : st->tier;
}

/* A target machine for one compile, quick (cg_ptx_machine_quick) or not
 * (cg_ptx_machine): a spare one, else a new one.  LLVM's target machines
 * may not be shared by threads that emit code at once. */
static weft_status tm_take(ptx_state *st, bool quick, LLVMTargetMachineRef *out)
{
    pthread_mutex_lock(&st->lock);
    int n = st->nspare[quick];
    *out = n > 0 ? st->spare[quick][n - 1] : NULL;
    st->nspare[quick] = n > 0 ? n - 1 : 0;
    pthread_mutex_unlock(&st->lock);
    if (*out) {
        return WEFT_OK;
    }
    return quick ? cg_ptx_machine_quick(st->sm, out)
                 : cg_ptx_machine(st->sm, out);
}

/* Give back what tm_take gave (NULL: nothing): kept as a spare, or
 * disposed of when TM_SPARE are. */
static void tm_give(ptx_state *st, bool quick, LLVMTargetMachineRef tm)
{
    if (!tm) {
        return;
    }
    pthread_mutex_lock(&st->lock);
    bool keep = st->nspare[quick] < TM_SPARE;
    if (keep) {
        st->spare[quick][st->nspare[quick]++] = tm;
    }
    pthread_mutex_unlock(&st->lock);
    if (!keep) {
        LLVMDisposeTargetMachine(tm);
    }
}

/* Build kernel k's PTX (a new buffer in *ptx): kernel_tier's quick PTX
 * unless PTX_TIER_NONE, and then, for PTX_TIER_UP, a job in *job (new,
 * fe_alloc'd with the default allocator) holding a copy of the IR taken
 * before the quick pipeline, for the tier-up thread; else NULL. */
static weft_status build_ptx(ptx_state *st, weft_executable *exe, sk_kernel *k,
                             const char *const *names, int n,
                             LLVMMemoryBufferRef *ptx, ptx_tier_job **job)
{
    *job = NULL;
    if (gpu_build_hook) {
        gpu_build_hook();
    }
    weft_context *ctx = exe->ctx;
    uint64_t t0 = fe_clock_ns();
    fe_arena scratch;
    fe_arena_init(&scratch, ctx);
    LLVMContextRef llctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("weft", llctx);
    sk_emit e = {
        .ctx = ctx,
        .core = &exe->core,
        .k = k,
        .arena = &scratch,
        .llctx = llctx,
        .mod = mod,
        .target = &sk_target_ptx,
    };
    weft_status s = sk_emit_kernel(&e, names);
    fe_arena_release(&scratch);
    char what[128];
    fe_phase_end(ctx, FE_PHASE_IR, t0, "ir",
                 "\"kernel\":\"%s\",\"what\":\"%s\"", names[0],
                 rt_kernel_name(k, what, sizeof what));
    int tier = kernel_tier(st, k);
    if (s == WEFT_OK && tier == PTX_TIER_UP) {
        ptx_tier_job *t = fe_calloc(NULL, sizeof *t);
        if (!t) {
            s = fe_oom("weft_compile");
        } else {
            t->llctx = llctx;
            t->mod = LLVMCloneModule(mod);
            memcpy(t->key, k->key, 32);
            for (int i = 0; i < n; i++) {
                snprintf(t->names[i], sizeof t->names[i], "%s", names[i]);
            }
            t->nfn = n;
            t->block_max = k->block_max;
            *job = t;
        }
    }
    bool quick = tier != PTX_TIER_NONE;
    LLVMTargetMachineRef tm = NULL;
    if (s == WEFT_OK) {
        s = tm_take(st, quick, &tm);
    }
    if (s == WEFT_OK && quick) {
        s = cg_ptx_finish_quick(mod, tm, names, n, ctx, st->quick_llvm, ptx);
    } else if (s == WEFT_OK) {
        char prefix[1024];
        const char *dump = NULL;
        if (st->dump_ptx) {
            snprintf(prefix, sizeof prefix, "%s/%s",
                     ctx->cfg.dump_dir ? ctx->cfg.dump_dir : ".", names[0]);
            dump = prefix;
        }
        s = cg_ptx_finish(mod, tm, names, n, dump, ctx, ptx);
    }
    tm_give(st, quick, tm);
    LLVMDisposeModule(mod);
    if (*job && s != WEFT_OK) {
        tier_job_free(NULL, &(*job)->link); /* disposes of llctx */
        *job = NULL;
    } else if (!*job) {
        LLVMContextDispose(llctx);
    }
    return s;
}

/* ---- tiers ("Tiers" in the head comment) -------------------------------- */

/* Tier-up job t on the tier-up thread (rt_tier_ops.run): the optimised
 * PTX, compiled and loaded by the
 * driver, swapped into t->pk under the device's lock, written to the
 * disk cache.  Gives up with WEFT_OK when the context is being freed. */
static weft_status tier_up(void *user, rt_tier_job *job)
{
    ptx_state *st = user;
    ptx_tier_job *t = (ptx_tier_job *)job;
    if (gpu_tier_hook) {
        gpu_tier_hook();
    }
    LLVMTargetMachineRef tm = NULL;
    weft_status made = tm_take(st, false, &tm);
    if (made != WEFT_OK) {
        return made;
    }
    double t0 = now_ms();
    const char *np[SK_MAX_ENTRY];
    for (int i = 0; i < t->nfn; i++) {
        np[i] = t->names[i];
    }
    LLVMMemoryBufferRef ptx = NULL;
    /* no ctx: this time is optimise_ms, not the compile's phases */
    weft_status s = cg_ptx_finish(t->mod, tm, np, t->nfn, NULL, NULL, &ptx);
    tm_give(st, false, tm);
    LLVMDisposeModule(t->mod);
    LLVMContextDispose(t->llctx);
    t->llctx = NULL;
    if (s != WEFT_OK) {
        return s;
    }
    bool stop = rt_tier_stopping(&st->worker);
    gpu_module *mod = NULL;
    gpu_fn fn[SK_MAX_ENTRY];
    if (!stop && t->pk) {
        s = gpu_module_load(st->dev, LLVMGetBufferStart(ptx),
                            LLVMGetBufferSize(ptx), st->opt_level, "tier-up",
                            "weft_compile", &mod);
        if (s == WEFT_OK) {
            /* the swap: no run is between two launches while the lock is
             * held here */
            gpu_lock(st->dev);
            for (int i = 0; s == WEFT_OK && i < t->nfn; i++) {
                s = gpu_module_fn(st->dev, mod, t->names[i], 0, t->block_max,
                                  &fn[i]);
            }
            if (s == WEFT_OK) {
                t->pk->quick_mod = t->pk->mod;
                t->pk->mod = mod;
                memcpy(t->pk->fn, fn, sizeof fn[0] * (size_t)t->nfn);
                mod = NULL;
            }
            gpu_unlock(st->dev);
            module_free(st->dev, mod);
        }
    }
    if (s == WEFT_OK && !stop) {
        if (t->pk) {
            rt_disk_store(&st->disk, t->key, LLVMGetBufferStart(ptx),
                          LLVMGetBufferSize(ptx));
        }
        pthread_mutex_lock(&st->lock);
        st->optimised++;
        st->optimise_ms += now_ms() - t0;
        pthread_mutex_unlock(&st->lock);
    }
    LLVMDisposeMemoryBuffer(ptx);
    return s;
}

static const rt_tier_ops tier_ops = {
    .run = tier_up,
    .free_job = tier_job_free,
};

/* Queue job t (taken over; its pk set) for the tier-up thread, started on
 * first use; without a thread to be had, it runs here. */
static void tier_queue(ptx_state *st, ptx_tier_job *t)
{
    if (!rt_tier_queue(&st->worker, &t->link)) {
        rt_tier_run_here(&st->worker, &t->link);
    }
}

static weft_status ptx_wait_optimised(weft_context *ctx)
{
    ptx_state *st = state_of(ctx);
    char msg[FE_MSG_MAX];
    weft_status s = rt_tier_wait(&st->worker, msg);
    if (s != WEFT_OK) {
        return fe_error(s, "weft_context_wait_optimised: %s", msg);
    }
    return WEFT_OK;
}

/* Make kernel k of module mod (compiled and loaded; taken over) into
 * *out: its functions looked up; `ptx` (n bytes, NULL for none) written
 * to the disk cache.  No lock of st held: the lookups take the device's
 * lock, which a run holds from its first launch to its last, and other
 * compiles need st's meanwhile. */
static weft_status add_kernel(ptx_state *st, sk_kernel *k, gpu_module *mod,
                              const void *ptx, size_t n, char names[][80],
                              int nfn, ptx_kernel **out)
{
    ptx_kernel *pk = fe_calloc(NULL, sizeof *pk);
    if (!pk) {
        module_free(st->dev, mod);
        return fe_oom("weft_compile");
    }
    pk->mod = mod;
    weft_status s = WEFT_OK;
    for (int i = 0; s == WEFT_OK && i < nfn; i++) {
        memcpy(pk->names[i], names[i], sizeof pk->names[i]);
        s = gpu_module_fn(st->dev, pk->mod, pk->names[i], 0, k->block_max,
                          &pk->fn[i]);
    }
    if (s) {
        module_free(st->dev, pk->mod);
        fe_free(NULL, pk, sizeof *pk);
        return s;
    }
    if (ptx) {
        rt_disk_store(&st->disk, k->key, ptx, n);
    }
    memcpy(pk->key, k->key, 32);
    pk->nfn = nfn;
    *out = pk;
    return WEFT_OK;
}

/* Compiling in parallel.  The driver's JIT runs in several threads at
 * once (bench/gpu/link_probe.c), so weft_compile does not wait for a
 * kernel's PTX to be compiled and loaded (gpu_module_load): each kernel's
 * PTX, new from LLVM or read from the disk cache, goes to a thread of its
 * own while the compile goes on with the next kernel, and the threads are
 * waited for (in order; at most JITS_MAX at a time) when the plan is
 * complete, their kernels' functions looked up, new PTX stored on disk.
 * A kernel met again in the same compile waits for the same thread.
 *
 * Several weft_compiles on one context run at once too: no lock is held
 * while LLVM builds a kernel (each build takes a target machine of its
 * own, tm_take) or while the driver compiles it.  The table is
 * runtime/kcache.c's: a compile claims each kernel it builds (COMPILING)
 * and publishes it when its JIT is finished; a kernel that another
 * compile is building is waited for at the end (jits_end), after this
 * compile has published all of its own, so two compiles that share
 * kernels never wait for each other.  A compile-only context keeps no
 * kernels: it publishes each as EMPTY once built. */
#define JITS_MAX 4

typedef struct ptx_waiter {
    struct ptx_waiter *next;
    sk_kernel *k;
} ptx_waiter;

typedef struct ptx_jit {
    struct ptx_jit *next;
    sk_kernel *k;        /* the kernel it was started for */
    ptx_waiter *waiters; /* others of the same key */
    char names[SK_MAX_ENTRY][80];
    int nfn;
    gpu_dev *dev;
    int opt_level; /* gpu_module_load's */
    char *ptx;     /* the text (fe_alloc'd), ptx_n bytes */
    size_t ptx_n;
    bool from_disk; /* read from the disk cache (else new) */
    pthread_t thread;
    bool threaded; /* thread runs it (else done in line) */
    bool done;     /* finished (waited for, added) */
    double ms;     /* the build's time before the JIT */
    double jit_ms;
    weft_status status;   /* the JIT's */
    char msg[FE_MSG_MAX]; /* its message, for the compiling thread */
    gpu_module *mod;      /* its module, until added */
    ptx_tier_job *tier;   /* the kernel's tier-up, queued once it is
                                   in the table (NULL: none) */
    rt_kentry *e;         /* the table's entry, claimed */
} ptx_jit;

/* A kernel that another compile is building: waited for in jits_end. */
typedef struct ptx_foreign {
    struct ptx_foreign *next;
    sk_kernel *k;
    rt_kentry *e;
    int nfn;
} ptx_foreign;

/* What rt_plan's get_kernel works with: the context's state and the JITs
 * of this compile, oldest first. */
typedef struct ptx_compiling {
    weft_context *ctx;
    ptx_state *st;
    ptx_jit *jits, *last;
    int running;
    ptx_foreign *foreign;
} ptx_compiling;

static void *jit_thread(void *arg)
{
    ptx_jit *l = arg;
    double t0 = now_ms();
    l->status = gpu_module_load(l->dev, l->ptx, l->ptx_n, l->opt_level,
                                l->from_disk ? "disk cache" : "llvm",
                                "weft_compile", &l->mod);
    if (l->status != WEFT_OK) {
        snprintf(l->msg, sizeof l->msg, "%s", weft_last_error());
    }
    l->jit_ms = now_ms() - t0;
    return NULL;
}

/* The claimed entry e failed with this thread's error: published so
 * (runtime/kcache.c: the next request compiles it again). */
static void publish_failed(ptx_state *st, rt_kentry *e, weft_status s)
{
    pthread_mutex_lock(&st->lock);
    rt_kcache_publish(&st->cache, e, RT_KC_FAILED, s, weft_last_error());
    pthread_mutex_unlock(&st->lock);
}

/* Wait for JIT l, publish its kernel in the table and fill its kernels'
 * entries.  The JIT's failure comes back as its status with its
 * message. */
static weft_status jit_finish(ptx_compiling *pc, ptx_jit *l)
{
    if (l->done) {
        return l->status;
    }
    if (l->threaded) {
        pthread_join(l->thread, NULL);
        pc->running--;
    }
    l->done = true;
    ptx_state *st = pc->st;
    weft_status s = l->status;
    if (s != WEFT_OK) {
        s = fe_error_copy(l->status, l->msg);
        publish_failed(st, l->e, s);
    } else {
        ptx_kernel *pk = NULL;
        /* quick PTX is not kept on disk: its tier-up's is */
        bool keep = !l->from_disk && kernel_tier(st, l->k) == PTX_TIER_NONE;
        s = add_kernel(st, l->k, l->mod, keep ? l->ptx : NULL, l->ptx_n,
                       l->names, l->nfn, &pk);
        l->mod = NULL; /* the kernel's, or freed */
        pthread_mutex_lock(&st->lock);
        l->e->value = pk;
        rt_kcache_publish(&st->cache, l->e,
                          s == WEFT_OK ? RT_KC_READY : RT_KC_FAILED, s,
                          s == WEFT_OK ? "" : weft_last_error());
        if (!l->from_disk) {
            st->compile_ms += l->ms + l->jit_ms;
        }
        if (s == WEFT_OK) {
            if (l->from_disk) {
                st->loaded++;
            } else {
                st->compiled++;
            }
            for (int i = 0; i < l->nfn; i++) {
                l->k->entry[i] = &pk->fn[i];
            }
            for (ptx_waiter *w = l->waiters; w; w = w->next) {
                for (int i = 0; i < l->nfn; i++) {
                    w->k->entry[i] = &pk->fn[i];
                }
                st->reused++;
            }
        }
        pthread_mutex_unlock(&st->lock);
        if (s == WEFT_OK && l->tier) {
            l->tier->pk = pk;
            tier_queue(st, l->tier);
            l->tier = NULL;
        }
    }
    if (l->tier) {
        tier_job_free(NULL, &l->tier->link);
        l->tier = NULL;
    }
    fe_free(pc->ctx, l->ptx, l->ptx_n);
    l->ptx = NULL;
    l->status = s;
    return s;
}

/* Start compiling and loading ptx (n bytes, fe_alloc'd with pc->ctx's
 * allocator, taken over) for kernel k, whose entry e this compile claimed,
 * on a thread when one can be had (else here, now), after waiting for the
 * oldest running one when JITS_MAX run.  Whatever happens, e is published
 * (here on failure, else by jit_finish). */
static weft_status jit_start(ptx_compiling *pc, sk_kernel *k, rt_kentry *e,
                             char names[][80], int nfn, char *ptx, size_t n,
                             bool from_disk, double ms, ptx_tier_job *tier)
{
    weft_status s = WEFT_OK;
    for (ptx_jit *l = pc->jits; pc->running >= JITS_MAX && l; l = l->next) {
        if (!l->done && (s = jit_finish(pc, l)) != WEFT_OK) {
            break;
        }
    }
    ptx_jit *l = s == WEFT_OK ? fe_calloc(pc->ctx, sizeof *l) : NULL;
    if (!l) {
        if (s == WEFT_OK) {
            s = fe_error(WEFT_ERR_OUT_OF_MEMORY, "weft_compile: out of "
                                                 "memory");
        }
        fe_free(pc->ctx, ptx, n);
        if (tier) {
            tier_job_free(NULL, &tier->link);
        }
        publish_failed(pc->st, e, s);
        return s;
    }
    l->e = e;
    l->tier = tier;
    l->k = k;
    memcpy(l->names, names, sizeof l->names[0] * (size_t)nfn);
    l->nfn = nfn;
    l->dev = pc->st->dev;
    /* quick PTX at the quick level; a disk hit is the optimised PTX */
    l->opt_level = !from_disk && kernel_tier(pc->st, k) != PTX_TIER_NONE
                       ? pc->st->quick_opt
                       : pc->st->opt_level;
    l->ptx = ptx;
    l->ptx_n = n;
    l->from_disk = from_disk;
    l->ms = ms;
    if (pc->last) {
        pc->last->next = l;
    } else {
        pc->jits = l;
    }
    pc->last = l;
    if (pthread_create(&l->thread, NULL, jit_thread, l) == 0) {
        l->threaded = true;
        pc->running++;
        return WEFT_OK;
    }
    jit_thread(l); /* no thread to be had: compile here */
    return l->status == WEFT_OK ? WEFT_OK : fe_error_copy(l->status, l->msg);
}

/* Wait for every JIT of the compile and free them, then for the kernels
 * other compiles were building (unless this one failed); the first
 * failure's status (with its message), else `s`. */
static weft_status jits_end(ptx_compiling *pc, weft_status s)
{
    for (ptx_jit *l = pc->jits, *next; l; l = next) {
        next = l->next;
        weft_status r = jit_finish(pc, l);
        if (s == WEFT_OK) {
            s = r;
        }
        for (ptx_waiter *w = l->waiters, *wn; w; w = wn) {
            wn = w->next;
            fe_free(pc->ctx, w, sizeof *w);
        }
        module_free(pc->st->dev, l->mod);
        fe_free(pc->ctx, l, sizeof *l);
    }
    pc->jits = pc->last = NULL;
    ptx_state *st = pc->st;
    for (ptx_foreign *f = pc->foreign, *next; f; f = next) {
        next = f->next;
        if (s == WEFT_OK) {
            pthread_mutex_lock(&st->lock);
            s = rt_kcache_wait(&st->cache, f->e);
            if (s == WEFT_OK) {
                ptx_kernel *pk = f->e->value;
                for (int i = 0; i < f->nfn; i++) {
                    f->k->entry[i] = &pk->fn[i];
                }
                st->reused++;
            }
            pthread_mutex_unlock(&st->lock);
        }
        fe_free(pc->ctx, f, sizeof *f);
    }
    pc->foreign = NULL;
    return s;
}

/* rt_get_fn: the kernel's functions from the table, else its PTX from the
 * disk or LLVM, compiled and loaded beside the compile (jit_start). */
static weft_status get_kernel(void *user, weft_executable *exe, sk_kernel *k)
{
    ptx_compiling *pc = user;
    ptx_state *st = pc->st;
    kernel_key(st, exe->ctx, &exe->core, k);
    int nfn = k->nentry * (k->general ? 2 : 1);
    if (nfn > SK_MAX_ENTRY) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: too many entry points");
    }
    if (k->nwords * 8 > 4000) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_compile: a kernel of the ptx backend takes %d "
                        "bytes of arguments (at most 4000: fewer free "
                        "variables or arrays per operation)",
                        k->nwords * 8);
    }
    char names[SK_MAX_ENTRY][80];
    const char *np[SK_MAX_ENTRY];
    for (int i = 0; i < nfn; i++) {
        rt_kernel_symbol(k->key, 16, i, names[i], sizeof names[i]);
        np[i] = names[i];
    }
    for (ptx_jit *l = pc->jits; l; l = l->next) {
        /* being compiled: wait for the same thread.  A finished one has
         * filled its waiters already (jit_finish) and its kernel is in
         * the table, where the lookup below finds it (a waiter added now
         * would keep no entry points: k-means' third unit kernel after
         * JITS_MAX others, a NULL gpu_fn at rt_run) */
        if (!l->done && memcmp(l->k->key, k->key, 32) == 0) {
            ptx_waiter *w = fe_calloc(pc->ctx, sizeof *w);
            if (!w) {
                return fe_oom("weft_compile");
            }
            w->k = k;
            w->next = l->waiters;
            l->waiters = w;
            return WEFT_OK;
        }
    }
    rt_kentry *e = NULL;
    bool mine = true;
    if (st->dev) { /* a compile-only context keeps no kernels */
        pthread_mutex_lock(&st->lock);
        weft_status s =
            rt_kcache_claim(&st->cache, k->key, &e, &mine, "weft_compile");
        if (s == WEFT_OK && !mine && e->state == RT_KC_READY) {
            ptx_kernel *pk = e->value;
            st->reused++;
            for (int i = 0; i < nfn; i++) {
                k->entry[i] = &pk->fn[i];
            }
        }
        pthread_mutex_unlock(&st->lock);
        if (s != WEFT_OK || (!mine && e->state == RT_KC_READY)) {
            return s;
        }
    }
    if (!mine) { /* another compile builds it: waited for in jits_end */
        ptx_foreign *f = fe_calloc(pc->ctx, sizeof *f);
        if (!f) {
            return fe_oom("weft_compile");
        }
        *f = (ptx_foreign){pc->foreign, k, e, nfn};
        pc->foreign = f;
        return WEFT_OK;
    }
    void *img = NULL;
    size_t n = 0;
    if (st->dev && rt_disk_load(&st->disk, k->key, &img, &n) == 1) {
        return jit_start(pc, k, e, names, nfn, img, n, true, 0, NULL);
    }
    double t0 = now_ms();
    LLVMMemoryBufferRef ptx = NULL;
    ptx_tier_job *tier = NULL;
    weft_status s = build_ptx(st, exe, k, np, nfn, &ptx, &tier);
    if (s == WEFT_OK && !st->dev) {
        /* compile only: the PTX is the product (WEFT_DUMP=ptx) */
        LLVMDisposeMemoryBuffer(ptx);
        pthread_mutex_lock(&st->lock);
        st->compile_ms += now_ms() - t0;
        st->compiled++;
        pthread_mutex_unlock(&st->lock);
        if (tier) {
            tier_queue(st, tier); /* gpu_tier_without_device */
        }
        return WEFT_OK;
    }
    char *text = NULL;
    if (s == WEFT_OK) {
        n = LLVMGetBufferSize(ptx);
        text = fe_alloc(pc->ctx, n);
        if (text) {
            memcpy(text, LLVMGetBufferStart(ptx), n);
        } else {
            s = fe_oom("weft_compile");
        }
    }
    if (ptx) {
        LLVMDisposeMemoryBuffer(ptx);
    }
    if (s != WEFT_OK) {
        if (tier) {
            tier_job_free(NULL, &tier->link);
        }
        if (e) {
            publish_failed(st, e, s);
        }
        return s;
    }
    return jit_start(pc, k, e, names, nfn, text, n, false, now_ms() - t0, tier);
}

static weft_status ptx_compile(weft_executable *exe)
{
    rt_plan_t *pl;
    ptx_compiling pc = {.ctx = exe->ctx, .st = state_of(exe->ctx)};
    weft_status s = rt_plan(exe, &sk_target_ptx, get_kernel, &pc, &pl);
    s = jits_end(&pc, s);
    if (s == WEFT_OK) {
        exe->be_state = pl;
    }
    return s;
}

/* ---- run: the GPU's half of runtime/rt.h ------------------------------- */

/* Clean words.  Some auxiliary words must be zero when a kernel starts
 * and are zero again when it ends: a fold's ticket, which its last block
 * puts back (RT_AUX_KEPT_ZERO), and the error word, which only a failing
 * kernel writes and which the runtime puts back when it finds it set
 * (rt_read_error) or cannot tell (rt_done: the job ended before reading
 * it).  Those live in the context's clean area, CLEAN_BYTES per aux
 * index, zeroed once when it is made (and again should a reset fail), so
 * that no run zeroes them: the runs of a context are ordered on its one
 * stream, so each kernel finds them as the last one left them.  Every
 * other zeroed auxiliary array lives in one device block per job, zeroed
 * by one memset unless nothing in it needs zeroing (RT_AUX_ANY, or only
 * an error word no kernel writes). */

/* Held reports.  A permute's error word (a target outside the result)
 * is not read when its kernel has run, which would cost a wait for the
 * device per permute (three per k-means iteration), but held back: the
 * kernel gets the next of the run's HELD_MAX words after the clean area
 * (zeroed with it, kept zero between runs), and the run remembers the
 * kernel (ptx_run_state).  At the end of the run the held words come to
 * the host in one copy, and the first one set, in the order the kernels
 * were queued, is reported as rt_exec would have reported it when its
 * kernel ran (rt_kernel_error: the same status and message), in place of
 * whatever the run reported after it; the words set are put back to
 * zero.  Until then the run goes on from a permute that failed: its
 * result is the default with every source inside it combined, as
 * defined as any, and whatever the walker does with it is replaced by
 * the permute's report.
 *
 * Reports are numbered in queue order for the whole run (the walker's
 * marks, fe_walk_ops.held).  Those of a speculative awhile body that does
 * not count are dropped (fe_walk_ops.settle): their words put back to
 * zero on the stream, unread.  A run that holds HELD_MAX words reads
 * them before it holds another: a report set there is returned at once
 * when no speculative body is unsettled, else kept, the earliest, until
 * a later read or the end of the run, unless the body it came from is
 * dropped. */

/* What one run holds (the walker's hook user). */
typedef struct ptx_run_state {
    weft_executable *exe;
    int base;                        /* the number of held[0] */
    int nheld;                       /* held words in use */
    const sk_kernel *held[HELD_MAX]; /* the kernel of each */
    int spec;                        /* the first report of the outermost
                                          unsettled speculative body
                                          (INT_MAX: none) */
    int late;                        /* the earliest report read set that
                                          may not count yet (INT_MAX:
                                          none), its kernel and word */
    const sk_kernel *late_k;
    int64_t late_w;
} ptx_run_state;

/* The arrays a job pinned on the device (unpinned when it is done), and
 * its zeroed auxiliary arrays: those live in the clean area (above) or in
 * one device block of the pool, zeroed by one memset when the first of
 * them is given an address (rt_addr), and have no device mirror (nothing
 * reads them back through one; the error word is read by its address,
 * rt_read_error). */
typedef struct ptx_job {
    ptx_state *st;
    int n;
    weft_array *pinned[64];
    weft_array *zero[8]; /* auxiliary arrays to zero on the device */
    uint64_t zero_at[8]; /* the address of each one's first leaf
                                    (the others follow: leaf_bytes) */
    uint64_t block;      /* the block holding them (0: not yet) */
    size_t block_bytes;
    uint64_t err_at; /* the error word, when a kernel that may
                                    fail may have written it since it was
                                    last seen zero (else 0) */
    ptx_run_state *run;
    int held; /* the held word the job's kernel got,
                                    until read_error keeps it (else -1) */
    /* the elements of one granule of the output's smallest leaf, when its
     * leaves are interleaved for dealt pieces (out_interleaved; else 0) */
    int64_t piece;
} ptx_job;

/* Whether kernel k's error word is held back ("Held reports"). */
static bool holds_report(const sk_kernel *k)
{
    return k->may_fail && k->skel->family == SK_PERMUTE;
}

/* The device address of held word i of the run. */
static uint64_t held_at(const ptx_state *st, int i)
{
    return st->clean + (uint64_t)CLEAN_BYTES * 8 + (uint64_t)i * 8;
}

/* Read the run's held words (one copy and wait, which brings outs[0 ..
 * nout) along as gpu_read_words does: at the end of a run, its small
 * results), put those set back to zero and free them all.  The earliest report set, with the one kept
 * from before (run->late), is returned (rt_kernel_error) when no
 * speculative body is unsettled (run->spec), else kept in run->late:
 * returned inside a speculative body, it would be taken for that body's
 * failure, and dropped with it should the body not count, although it
 * may come from an iteration that did.  WEFT_OK when none is to be
 * returned. */
static weft_status held_read(ptx_state *st, ptx_run_state *run,
                             weft_array *const *outs, int nout)
{
    int n = run->nheld;
    int64_t words[HELD_MAX];
    weft_status s = n > 0 ? gpu_read_words(st->dev, held_at(st, 0), words, n,
                                           outs, nout, WHO)
                          : WEFT_OK;
    if (s) {
        st->clean_ok = false; /* zeroed again by the next run */
        run->nheld = 0;
        return s;
    }
    int first = 0;
    while (first < n && words[first] == 0) {
        first++;
    }
    if (first < n) {
        if (run->base + first < run->late) {
            run->late = run->base + first;
            run->late_k = run->held[first];
            run->late_w = words[first];
        }
        if (gpu_memset32(st->dev, held_at(st, 0), 0, (size_t)n * 2, WHO) !=
            WEFT_OK) {
            st->clean_ok = false;
        }
    }
    run->base += n;
    run->nheld = 0;
    if (run->late != INT_MAX && run->spec == INT_MAX) {
        run->late = INT_MAX;
        return rt_kernel_error(run->late_k, (uint64_t)run->late_w);
    }
    return WEFT_OK;
}

/* Forget the run's reports from number n on, unread (their words put
 * back to zero on the stream). */
static void held_forget(ptx_run_state *run, int n)
{
    int from = n > run->base ? n - run->base : 0;
    if (from < run->nheld) {
        ptx_state *st = state_of(run->exe->ctx);
        if (gpu_memset32(st->dev, held_at(st, from), 0,
                         (size_t)(run->nheld - from) * 2, WHO) != WEFT_OK) {
            st->clean_ok = false;
        }
        run->nheld = from;
    }
    if (run->late >= n) {
        run->late = INT_MAX;
    }
}

/* fe_walk_ops.held and .settle ("Held reports"). */
static int run_held(void *user)
{
    ptx_run_state *run = user;
    int n = run->base + run->nheld;
    if (run->spec == INT_MAX) {
        /* the outermost speculative body: its loop kernels get a flag of
         * their own (cuda.c, "Speculation"); should this fail, the next
         * driver call fails too */
        gpu_spec_begin(state_of(run->exe->ctx)->dev, WHO);
        run->spec = n;
    }
    return n;
}

static bool run_settle(void *user, int n, bool keep)
{
    ptx_run_state *run = user;
    if (n > run->spec) {
        /* an awhile inside a speculative body: the outer one decides */
        if (!keep) {
            held_forget(run, n);
        }
        return false;
    }
    run->spec = INT_MAX; /* the outermost speculation is settled */
    bool spoiled = gpu_spec_end(state_of(run->exe->ctx)->dev, !keep);
    if (!keep || spoiled) {
        held_forget(run, n);
    }
    return keep && spoiled;
}

static gpu_dev *dev_of(rt_job *j)
{
    return j->be;
}

/* An output: the caller's own array under weft_run_into (a device
 * array's buffers are then written in place), else a new one. */
static weft_status rt_out(rt_job *j, int o, weft_type type, int rank,
                          const int64_t *shape)
{
    j->out[o] = fe_ix_dest(j->ix, j->k->op, o, type, rank, shape, false);
    if (j->out[o]) {
        return WEFT_OK;
    }
    return fe_array_new_raw(j->ctx, WHO, type, rank, shape, &j->out[o]);
}

/* Auxiliary arrays that the driver fills on the host are uploaded as
 * inputs; the others live on the device only and are zeroed there (no
 * host buffer is touched, nothing crosses the bus).  What kernels write
 * into them is never read back through the mirror but for the error word
 * (rt_read_error). */
static weft_status rt_aux(rt_job *j, int a, weft_type type, int64_t n,
                          bool host_filled)
{
    if (host_filled) {
        return fe_array_new(j->ctx, WHO, type, 1, &n, &j->aux[a]);
    }
    ptx_job *pj = j->be_job;
    pj->zero[a] = NULL;
    if (a >= 3 && a <= 4 && j->k->skel && j->k->skel->family == SK_SCAN_PASS &&
        j->devices > 1) {
        /* a scan spread over the devices (launch_spread;
         * skeletons-ir/ptx/scan.c, "Several devices"): aux 3 a tile
         * counter per part for its reduce and for its scan, then the
         * partials of its reduce's runs; aux 4 the parts' totals, as
         * packed words (two elements each) where the status is packed */
        n = a == 3 ? 2 * SK_DEVICES_MAX + SK_DEVICES_MAX * SK_SCAN_RUNS_MAX
                   : 2 * SK_DEVICES_MAX;
    }
    weft_status s = fe_array_new_raw(j->ctx, WHO, type, 1, &n, &j->aux[a]);
    if (s == WEFT_OK) {
        pj->zero[a] = j->aux[a];
    }
    return s;
}

/* The index of a among the job's zeroed auxiliary arrays, or -1. */
static int zero_index(const rt_job *j, const weft_array *a)
{
    const ptx_job *pj = j->be_job;
    for (int i = 0; i < 8; i++) {
        if (a && pj->zero[i] == a) {
            return i;
        }
    }
    return -1;
}

/* The bytes leaf l of a takes in the job's block: a multiple of 256. */
static size_t leaf_bytes(const rt_job *j, const weft_array *a, int l)
{
    const weft_type *leaf;
    fe_type_leaves(j->ctx, a->type, &leaf);
    size_t bytes = (size_t)a->size * weft_type_size(leaf[l]);
    return (bytes + 255) & ~(size_t)255;
}

/* Whether zeroed auxiliary array i of the job lives in the clean area. */
static bool in_clean(const rt_job *j, int i)
{
    const ptx_job *pj = j->be_job;
    const weft_array *a = pj->zero[i];
    return a && a->nleaf == 1 && leaf_bytes(j, a, 0) <= CLEAN_BYTES &&
           (i == SK_ERR_AUX || j->aux_start[i] == RT_AUX_KEPT_ZERO);
}

/* Give every zeroed auxiliary array of the job that is not in the clean
 * area its place in one pooled device block (its leaves one after
 * another, each at a multiple of 256 bytes) and zero the block with one
 * memset, unless every array there may start as it is (RT_AUX_ANY). */
static weft_status zero_block(rt_job *j)
{
    ptx_job *pj = j->be_job;
    size_t total = 0;
    bool needed = false;
    for (int i = 0; i < 8; i++) {
        weft_array *a = pj->zero[i];
        if (!a || in_clean(j, i)) {
            continue;
        }
        for (int l = 0; l < a->nleaf; l++) {
            total += leaf_bytes(j, a, l);
        }
        needed |= (i != SK_ERR_AUX || j->k->may_fail) &&
                  j->aux_start[i] != RT_AUX_ANY;
    }
    weft_status s = gpu_mem_alloc(dev_of(j), total, &pj->block, WHO);
    if (s) {
        return s;
    }
    pj->block_bytes = total;
    if (needed && total > 0) {
        s = gpu_memset32(dev_of(j), pj->block, 0, total / 4, WHO);
    }
    uint64_t at = pj->block;
    for (int i = 0; i < 8; i++) {
        weft_array *a = pj->zero[i];
        pj->zero_at[i] = at;
        if (!a || in_clean(j, i)) {
            continue;
        }
        for (int l = 0; l < a->nleaf; l++) {
            at += leaf_bytes(j, a, l);
        }
    }
    return s;
}

static bool is_out(const rt_job *j, const weft_array *a)
{
    return a == j->out[0] || a == j->out[1];
}

/* Whether job j's kernel is dealt out in pieces over several devices
 * (multi.c, "Pieces": an uneven element-wise kernel), its output
 * interleaved to match. */
static bool dealt(rt_job *j)
{
    const ptx_job *pj = j->be_job;
    return gpu_multi_count(dev_of(j)) > 1 && !pj->st->no_interleave &&
           j->k->skel && j->k->skel->family == SK_GENERATE &&
           sk_ptx_uneven(j->k) && !sk_ptx_wide(j->k);
}

/* The buffers of output a of a dealt kernel (dealt), interleaved so that
 * a piece of one granule of its smallest leaf falls, in every leaf, in
 * granules of the device that computes it (multi.c, "Pieces"): a leaf of
 * elements k times as large has runs of k granules.  pj->piece is that
 * piece's elements when every large leaf got that layout (a buffer kept
 * from before may have another), else 0: the pieces as without it. */
static weft_status out_interleaved(rt_job *j, weft_array *a, uint64_t *ptrs)
{
    ptx_job *pj = j->be_job;
    gpu_dev *d = dev_of(j);
    const weft_type *leaf;
    fe_type_leaves(j->ctx, a->type, &leaf);
    size_t least = 0;
    for (int l = 0; l < a->nleaf; l++) {
        size_t e = weft_type_size(leaf[l]);
        least = least == 0 || e < least ? e : least;
    }
    int runs[RT_MAX_LEAVES];
    bool whole = least > 0 && a->nleaf <= RT_MAX_LEAVES;
    for (int l = 0; whole && l < a->nleaf; l++) {
        size_t e = weft_type_size(leaf[l]);
        whole = e % least == 0;
        runs[l] = (int)(e / least);
    }
    weft_status s = gpu_array_out_laid(d, a, whole ? runs : NULL, ptrs, WHO);
    size_t g = gpu_multi_granule(d);
    pj->piece = whole && g % least == 0 ? (int64_t)(g / least) : 0;
    for (int l = 0; s == WEFT_OK && whole && l < a->nleaf; l++) {
        if (leaf_bytes(j, a, l) >= GPU_MULTI_MIN &&
            gpu_multi_run(d, ptrs[l]) != runs[l]) {
            pj->piece = 0;
        }
    }
    return s;
}

static weft_status rt_addr(rt_job *j, weft_array *a, bool written,
                           uint64_t *ptrs)
{
    (void)written;
    ptx_job *pj = j->be_job;
    if (pj->n == (int)(sizeof pj->pinned / sizeof pj->pinned[0])) {
        return fe_error(WEFT_ERR_INTERNAL,
                        WHO ": a kernel with too many arrays");
    }
    int z = is_out(j, a) ? -1 : zero_index(j, a);
    if (z == SK_ERR_AUX && in_clean(j, z) && pj->run && holds_report(j->k)) {
        ptx_run_state *run = pj->run;
        if (pj->held < 0) {
            weft_status s = run->nheld < HELD_MAX
                                ? WEFT_OK
                                : held_read(pj->st, run, NULL, 0);
            if (s) {
                return s;
            }
            pj->held = run->nheld;
            run->held[run->nheld++] = j->k;
        }
        ptrs[0] = held_at(pj->st, pj->held);
        return WEFT_OK;
    }
    if (z >= 0 && in_clean(j, z)) {
        ptrs[0] = pj->st->clean + (uint64_t)z * CLEAN_BYTES;
        if (z == SK_ERR_AUX && j->k->may_fail) {
            pj->err_at = ptrs[0];
        }
        return WEFT_OK;
    }
    if (z >= 0) {
        weft_status s = pj->block || pj->block_bytes ? WEFT_OK : zero_block(j);
        uint64_t at = pj->zero_at[z];
        for (int l = 0; s == WEFT_OK && l < a->nleaf; l++) {
            size_t bytes = leaf_bytes(j, a, l);
            ptrs[l] = bytes > 0 ? at : 0;
            at += bytes;
        }
        return s;
    }
    weft_status s = a == j->out[0] && dealt(j) ? out_interleaved(j, a, ptrs)
                    : is_out(j, a) ? gpu_array_out(dev_of(j), a, ptrs, WHO)
                                   : gpu_array_in(dev_of(j), a, ptrs, WHO);
    if (s == WEFT_OK) {
        pj->pinned[pj->n++] = a;
    }
    return s;
}

_Static_assert(GPU_MULTI_MAX == SK_DEVICES_MAX, "one count of devices");

/* The arrays of at least REPLICA_MIN bytes and below GPU_MULTI_MIN (on
 * device 0) that job j's kernel reads, its leaves' words, for the other
 * devices of a split kernel to read from replicas (multi.c, "Replicas"):
 * an array that every element reads whole (n-body's bodies) then costs
 * one copy per device instead of reads over NVLink from every block.
 * Smaller ones stay where they are (a copy costs about a launch).  Where
 * every while loop of the kernel reads its arrays at the loop's counter
 * from one start to one bound (sk_kernel.even_loops: n-body's), every
 * element reads them whole, and arrays up to REPLICA_LOOP_MAX are copied
 * too, REPLICA_TOTAL bytes in all: 2^18 bodies are four arrays of 1 MiB,
 * all on device 0 (one granule of 2 MiB each), which every block of the
 * other devices would read over device 0's links, once per tile of
 * elements: 1.5 GiB a device against 12 MiB of copies. */
#define REPLICA_MIN 4096
#define REPLICA_LOOP_MAX ((size_t)16 << 20)
#define REPLICA_TOTAL ((size_t)64 << 20)
static void small_inputs(const rt_job *j, gpu_replicas *rep)
{
    const sk_kernel *k = j->k;
    rep->words = (size_t)k->nwords + 1;
    rep->n = 0;
    if (((const ptx_job *)j->be_job)->st->no_replicas) {
        return;
    }
    size_t most = k->even_loops ? REPLICA_LOOP_MAX : GPU_MULTI_MIN - 1;
    size_t total = 0;
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        if (it->kind != SK_ARRAY || it->src == SK_SRC_OUT ||
            it->src == SK_SRC_AUX) {
            continue;
        }
        int64_t n = 1;
        for (int d = 0; d < it->rank; d++) {
            n *= (int64_t)j->w[it->word + it->nleaf + d];
        }
        for (int l = 0; l < it->nleaf && rep->n < GPU_REPLICAS_MAX; l++) {
            size_t bytes = (size_t)n * weft_type_size(it->leaf[l]);
            if (bytes >= REPLICA_MIN && bytes <= most &&
                total + bytes <= REPLICA_TOTAL && j->w[it->word + l] != 0) {
                rep->r[rep->n].word = it->word + l;
                rep->r[rep->n++].bytes = bytes;
                total += bytes;
            }
        }
    }
}

/* The bytes of one value of type t (its leaves). */
static uint64_t elem_bytes(const rt_job *j, weft_type t)
{
    const weft_type *leaf;
    int n = fe_type_leaves(j->ctx, t, &leaf);
    uint64_t bytes = 0;
    for (int l = 0; l < n; l++) {
        bytes += weft_type_size(leaf[l]);
    }
    return bytes;
}

/* The tile status and counters of a scan spread over the devices
 * (ptx/scan.c's aux items 0 to 3: flags, aggregates and inclusive
 * prefixes where they are used, the counters), for every device but the
 * first to take a copy of its own before its part (multi.c, "Replicas"):
 * its look-back's spins, its publishing and its tile takes then stay on
 * the device instead of crossing NVLink to the small arrays' device 0,
 * per tile.  A copy is taken per launch from device 0's arrays, where
 * the parts of the other devices' slots are zero still (each part
 * touches its own tiles' slots and counters only); `slots`, the tiles'
 * slots any part uses (the arrays are sized for the smallest block).
 * Not aux 4, the parts' totals, which the reduce hands to the later
 * parts.  None with $WEFT_PTX_REPLICAS=0 (all on device 0, to measure
 * both). */
static void scan_status(const rt_job *j, int64_t slots, gpu_replicas *rep)
{
    const sk_kernel *k = j->k;
    rep->words = (size_t)k->nwords + 1;
    rep->n = 0;
    if (((const ptx_job *)j->be_job)->st->no_replicas) {
        return;
    }
    for (int a = 0; a < 4; a++) {
        const sk_item *it = &k->item[k->aux_item[a]];
        int64_t n = (int64_t)j->w[it->word + it->nleaf];
        if (a < 3 && n <= 1) {
            continue; /* values of a packed status: unused */
        }
        n = a < 3 && n > slots ? slots : n;
        for (int l = 0; l < it->nleaf && rep->n < GPU_REPLICAS_MAX; l++) {
            if (j->w[it->word + l] != 0) {
                rep->r[rep->n].word = it->word + l;
                rep->r[rep->n++].bytes =
                    (size_t)n * weft_type_size(it->leaf[l]);
            }
        }
    }
}

/* A fold of one row spread over the devices: the `skip` of a part of m
 * elements run by `grid` blocks (skeletons-ir/ptx/fold.c, emit_one_row),
 * P pieces of L elements, a multiple of SK_SPREAD_ALIGN, as P <<
 * SK_PIECES_SHIFT | L.  The blocks take them in a fixed order, so P is
 * the grid (a piece a block), at most the row's C chunks, and no piece
 * shorter than the kernel's least chunk: the part's own share of chunks,
 * where C counts the whole row's.  (A part that cut itself by C had
 * pieces of a quarter of the least chunk on four devices: a part of 2^24
 * elements took 50 us against 26-27 with at most one piece a block, four
 * H200, session 31.) */
static int64_t fold_pieces(const rt_job *j, unsigned grid, int64_t m)
{
    int64_t P = grid, C = j->auxval[1].i, least = m / j->k->chunk_min;
    P = P < C ? P : C;
    P = P < least ? P : least;
    P = P > 1 ? P : 1;
    int64_t L =
        ((m + P - 1) / P + SK_SPREAD_ALIGN - 1) & -(int64_t)SK_SPREAD_ALIGN;
    P = (m + L - 1) / L;
    return P << SK_PIECES_SHIFT | L;
}

/* A kernel spread over the devices of d's context (rt_phase.spread: m
 * the elements of its rows), part r of D on device r.  A fold of one row
 * (skeletons-ir/ptx/fold.c entry 1): part r folds elements [first, n),
 * cut at multiples of SK_SPREAD_ALIGN, as grain 2 + r, with the grid one
 * device would take.  A scan (ptx/scan.c, "Several devices"): part r its
 * tiles [first, n), grain 2 + r (the tiles of entry 0's block as the
 * kernel cuts them: whole rows each part where there are several, else
 * the one row's tiles, part r on device D - 1 - r for a right scan, whose
 * logical positions run from the row's end, so that each part runs where
 * its memory is); entry 0 scans them.  One row: every part but the last
 * first reduces its tiles, fused into entry 0 where the status is packed
 * and the devices are distinct (its `skip` the runs asked: as many as
 * the grid has blocks, at most SK_SCAN_RUNS_MAX; entry 1's phase then
 * launches nothing), else apart, entry 1 with entry 0's block, so that
 * its tiles are entry 0's.  The other devices' parts run on copies of the
 * tile status of their own (scan_status).  The parts of one row are
 * equal, but with $WEFT_PTX_SCAN_LAST (a tuning knob: the last part's
 * share, to measure unequal splits). */
static weft_status launch_spread(rt_job *j, gpu_dev *d, const gpu_fn *f,
                                 unsigned grid, int block, const rt_phase *ph)
{
    int nd = gpu_multi_count(d);
    int64_t m = ph->spread;
    const sk_kernel *k = j->k;
    bool scan = k->skel->family == SK_SCAN_PASS;
    fe_kind kind = (fe_kind)k->op->kind;
    bool right =
        scan && (kind == FE_SCANR || kind == FE_SCANR1 || kind == FE_SCANR_);
    bool reduce = scan && ph->entry % k->nentry == 1;
    int64_t ts = 1, T = m, rows = 1, last = 0;
    bool fuse = false;
    if (scan) {
        /* entry 0's tile: its block's warps of 32 K positions; the
         * driver's n, rows of tiles of the smallest block */
        const gpu_fn *f0 = k->entry[rt_job_entry(j, 0)];
        ts = (int64_t)f0->block / 32 * k->chunk_min;
        T = (m + ts - 1) / ts;
        rows = ph->n / ((m + k->chunk_min - 1) / k->chunk_min);
        if (reduce) {
            block = f0->block;
            grid = gpu_grid_for(d, f, block, T * block);
        }
        /* one row, a packed status, every part on a device of its own
         * (a part spins for the totals of those before it: two parts on
         * one device could starve the one it waits for) */
        fuse = rows == 1 && k->item[k->aux_item[0]].type == WEFT_I64 &&
               !gpu_multi_repeats(d);
        int share = ((const ptx_job *)j->be_job)->st->scan_last;
        if (rows == 1 && share > 0) {
            last = T * share / 1000;
            last = last < 1 ? 1 : (last > T - (nd - 1) ? T - (nd - 1) : last);
        }
        if (reduce && fuse) {
            return WEFT_OK; /* entry 0 reduces */
        }
        if (rows == 1 && T < nd) {
            /* a part's first tile past piece 0 takes the totals of the
             * parts before it: none may be empty (the driver spreads
             * rows of RT_SPLIT_MIN or more: hundreds of tiles) */
            return fe_error(WEFT_ERR_INTERNAL,
                            WHO ": a scan of %lld tiles spread over %d devices",
                            (long long)T, nd);
        }
    }
    gpu_part part[GPU_MULTI_MAX];
    int64_t sizes[GPU_MULTI_MAX];
    for (int r = 0; r < nd; r++) {
        int dev = right && rows == 1 ? nd - 1 - r : r;
        int64_t lo, hi;
        if (scan && rows > 1) { /* whole rows */
            lo = rows * r / nd * T;
            hi = rows * (r + 1) / nd * T;
        } else if (scan && last > 0) {
            /* the last part `last` of the tiles, the others equal */
            lo = (T - last) * r / (nd - 1);
            hi = r == nd - 1 ? T : (T - last) * (r + 1) / (nd - 1);
        } else if (scan) {
            lo = T * r / nd;
            hi = T * (r + 1) / nd;
        } else {
            lo = (m / nd * r) & -(int64_t)SK_SPREAD_ALIGN;
            hi = r == nd - 1 ? m
                             : (m / nd * (r + 1)) & -(int64_t)SK_SPREAD_ALIGN;
        }
        bool runs = hi > lo && !(reduce && r == nd - 1);
        /* a fused scan's part but the last: its reduce's runs (scan.c);
         * a fold's part: its pieces */
        int64_t asked = hi - lo < (int64_t)grid ? hi - lo : (int64_t)grid;
        asked = asked < SK_SCAN_RUNS_MAX ? asked : SK_SCAN_RUNS_MAX;
        int64_t skip = 0;
        if (scan) {
            skip = fuse && r < nd - 1 ? asked : 0;
        } else if (runs) {
            skip = fold_pieces(j, grid, hi - lo);
        }
        part[dev] = (gpu_part){.grid = runs ? grid : 0,
                               .n = hi,
                               .grain = 2 + r,
                               .first = lo,
                               .skip = skip};
        sizes[dev] = runs ? hi - lo : 0;
    }
    /* the parts' folds (entry 1 of a fold), or the totals of the parts
     * before it that each part of a scan reads (parts 1 .. D - 1), handed
     * over by devices 1 .. D - 1 */
    int64_t handed =
        scan ? (reduce || fuse ? (int64_t)nd * (nd - 1) / 2 : 0) : nd - 1;
    gpu_multi_moved(d, (uint64_t)handed * elem_bytes(j, j->out[0]->type));
    gpu_replicas rep;
    if (scan) {
        scan_status(j, rows * T, &rep);
    }
    return gpu_launch_parts(d, f, block, part, j->w, scan ? &rep : NULL,
                            scan ? "tiles" : "elements", sizes, WHO);
}

/* The chunk of entry 2 of a PTX permute over n sources a device: the
 * driver's (grain), or with $WEFT_PTX_PERMUTE_CHUNKS (a tuning knob)
 * that many chunks per resident block, in multiples of SK_SPREAD_ALIGN. */
static int64_t permute_grain(const ptx_state *st, gpu_dev *d, const gpu_fn *f,
                             int block, int64_t n, int64_t grain)
{
    if (st->permute_chunks <= 0) {
        return grain;
    }
    int64_t blocks = gpu_grid_for(d, f, block, INT64_MAX / 2);
    int64_t cut = blocks * st->permute_chunks;
    grain = (n + cut - 1) / cut;
    return (grain + SK_SPREAD_ALIGN - 1) & -(int64_t)SK_SPREAD_ALIGN;
}

/* Entry 2 of a PTX permute split over the devices of d's context
 * (runtime/exec_permute.c; n sources in chunks of `grain`): device r
 * the sources [s_r, s_r+1), s_r = r n / D down to a multiple of
 * SK_SPREAD_ALIGN (where an array split by bytes over the devices puts
 * its blocks, for the 2^k sizes at least: so each part reads its keys
 * from its own memory), cut into chunks of `grain` from s_r (its
 * `skip`: skeletons-ir/ptx/permute.c), a block per chunk up to the grid
 * one device takes, `first` its mode (skeletons-ir/sk.h
 * SK_PERMUTE_SPLIT): each part combines its blocks' copies in
 * accumulators on its own device (aux 1: the first device's in its
 * second half, the others' in replicas of its zero first half, copied
 * with the small inputs, multi.c "Replicas"), and its last block reduces
 * them into the output, so that each device makes one reduction a bin
 * over NVLink, not one a block and bin (4 H200: 1.14x with those);
 * without replicas ($WEFT_PTX_REPLICAS=0), every block reduces its
 * copies into the output.  $WEFT_PTX_PERMUTE_CHUNKS (a tuning knob)
 * recuts each part into that many chunks per resident block.  The last
 * blocks' reductions are peer atomics, not counted in device_bytes_moved (the
 * replicas are). */
static weft_status launch_permute(rt_job *j, gpu_dev *d, const gpu_fn *f,
                                  int64_t n, int64_t grain, int block)
{
    int nd = gpu_multi_count(d);
    const ptx_state *st = ((const ptx_job *)j->be_job)->st;
    gpu_replicas rep;
    small_inputs(j, &rep);
    const sk_item *acc = &j->k->item[j->k->aux_item[1]];
    /* aux 1 holds two sets of accumulators (exec_permute.c); a fused
     * default needs them (no launch writes the default first) */
    bool fused = sk_permute_init_entry(j->k) >= 0;
    size_t set = (size_t)j->w[acc->word + acc->nleaf] / 2 * sizeof(uint32_t);
    bool own = (fused || !st->no_replicas) && set > 0;
    if (own && rep.n >= GPU_REPLICAS_MAX) {
        rep.n--; /* that small input is read on device 0 instead */
    }
    if (own) {
        rep.r[rep.n].word = acc->word;
        rep.r[rep.n++].bytes = set;
    }
    grain = permute_grain(st, d, f, block, (n + nd - 1) / nd, grain);
    gpu_part part[GPU_MULTI_MAX];
    int64_t sizes[GPU_MULTI_MAX];
    int parts = 0;
    for (int r = 0; r < nd; r++) {
        int64_t lo = (n / nd * r) & -(int64_t)SK_SPREAD_ALIGN;
        int64_t hi =
            r == nd - 1 ? n : (n / nd * (r + 1)) & -(int64_t)SK_SPREAD_ALIGN;
        int64_t chunks = hi > lo ? (hi - lo + grain - 1) / grain : 0;
        int64_t mode = SK_PERMUTE_SPLIT;
        if (own) {
            mode |= SK_PERMUTE_ACC | (r == 0 ? SK_PERMUTE_HIGH : 0);
        }
        part[r] = (gpu_part){
            .grid = chunks > 0 ? gpu_grid_for(d, f, block, chunks * block) : 0,
            .n = hi,
            .grain = grain,
            .first = mode,
            .skip = lo};
        sizes[r] = hi - lo;
        parts += part[r].grid > 0;
    }
    for (int r = 0; r < nd; r++) {
        part[r].first |= SK_PERMUTE_PARTS(parts);
    }
    return gpu_launch_parts(d, f, block, part, j->w, &rep, "sources", sizes,
                            WHO);
}

static weft_status rt_run(rt_job *j, int n, const rt_phase *ph)
{
    gpu_dev *d = dev_of(j);
    const ptx_job *pj = j->be_job;
    for (int i = 0; i < n; i++) {
        const gpu_fn *f = j->k->entry[ph[i].entry];
        int64_t total = ph[i].n, grain = ph[i].grain > 0 ? ph[i].grain : 1;
        if (total <= 0) {
            continue;
        }
        int64_t first = 0, skip = 0;
        void *params[5] = {j->w, &total, &grain, &first, &skip};
        /* items of a raw entry take a warp or a block each; a grid-stride
         * entry takes smaller blocks where its own would leave SMs idle */
        int per = j->k->item_threads[ph[i].entry];
        int block = f->block;
        if (per == SK_ITEM_BLOCK && j->k->skel &&
            j->k->skel->family == SK_PERMUTE && !ph[i].split) {
            grain = permute_grain(pj->st, d, f, block, total, grain);
        }
        int64_t items = (total + grain - 1) / grain;
        if (per == SK_ITEM_BLOCK) {
            items *= f->block;
        } else if (per > 1) {
            items *= per;
        } else if (j->k->block_max == 0) {
            block = sk_ptx_launch_block(f->block, items, gpu_dev_sms(d));
        }
        unsigned grid = gpu_grid_for(d, f, block, items);
        if (per == 0 && sk_ptx_uneven(j->k)) {
            /* a chunk per thread: a persistent grid's stride can resonate
             * with the rows of uneven work (ptx/target.c, "The grid") */
            int64_t all = (items + block - 1) / block;
            grid = all < 0x7fffffff ? (unsigned)all : 0x7fffffffu;
        }
        /* element-wise kernels over several devices (multi.c): each
         * device its range of the kernel's own chunks; raw entries a
         * driver lets split (rt_phase), their items or parts of a row */
        bool split = false;
        int64_t unit = 1;
        int nd = gpu_multi_count(d);
        if (nd > 1 && per == 0 && j->k->skel &&
            j->k->skel->family == SK_GENERATE) {
            bool wide = sk_ptx_wide(j->k);
            unit = wide ? sk_target_ptx.chunk_elems : 1;
            split = wide || grain == 1;
        } else if (nd > 1 && per == 0 && j->k->skel &&
                   j->k->skel->family == SK_STENCIL) {
            /* the shared stencil's pieces of rows, by its chunks of
             * `grain` pieces (halos read over peer access) */
            unit = grain;
            split = true;
        }
        weft_status s;
        if (nd > 1 && ph[i].spread > 0) {
            s = launch_spread(j, d, f, grid, block, &ph[i]);
        } else if (nd > 1 && ph[i].split && j->k->skel &&
                   j->k->skel->family == SK_PERMUTE) {
            s = launch_permute(j, d, f, total, grain, block);
        } else if (nd > 1 && ph[i].split && per != 0 && total >= nd) {
            gpu_replicas rep;
            small_inputs(j, &rep);
            s = gpu_launch_items(d, f, total, grain,
                                 per == SK_ITEM_BLOCK ? block : per, block,
                                 j->w, &rep, WHO);
            if (ph[i].entry % j->k->nentry == 1) {
                /* a fold's chunks: the other devices' partials, folded on
                 * device 0 */
                gpu_multi_moved(d, (uint64_t)(total - total / nd) *
                                       elem_bytes(j, j->out[0]->type));
            }
        } else if (split) {
            gpu_replicas rep;
            small_inputs(j, &rep);
            s = gpu_launch_split(d, f, total, grain, unit, block,
                                 sk_ptx_uneven(j->k), pj->piece, j->w, &rep,
                                 WHO);
        } else {
            s = gpu_launch(d, f, grid, block, 0, params, WHO);
        }
        if (s) {
            return s;
        }
    }
    /* A kernel with a scalar while loop may run for ever: the waits
     * until the next one of the stream watch the run's cancellation, to
     * raise its cancel flag (cuda.c, "Loops"). */
    if (j->k->aux_item[SK_CANCEL_AUX] >= 0 && j->cancel) {
        gpu_loop_queued(d, j->cancel);
    }
    return WEFT_OK;
}

static weft_status rt_copy(rt_job *j, weft_array *dst, weft_array *src)
{
    gpu_dev *d = dev_of(j);
    uint64_t sp[RT_MAX_LEAVES], dp[RT_MAX_LEAVES];
    weft_status s = rt_addr(j, src, false, sp);
    if (s == WEFT_OK) {
        s = rt_addr(j, dst, true, dp);
    }
    const weft_type *leaf;
    fe_type_leaves(j->ctx, dst->type, &leaf);
    for (int l = 0; s == WEFT_OK && l < dst->nleaf; l++) {
        size_t bytes = (size_t)dst->size * weft_type_size(leaf[l]);
        if (bytes > 0) {
            s = gpu_copy(d, dp[l], sp[l], bytes, WHO);
        }
    }
    return s;
}

/* The error word, and small outputs with it (gpu_read_words); the word put
 * back to zero when set (it is in the clean area). */
static weft_status rt_read_error(rt_job *j, int64_t *word)
{
    ptx_job *pj = j->be_job;
    const sk_kernel *k = j->k;
    if (pj->held >= 0) {
        pj->held = -1; /* kept: read at the end of the run */
        *word = 0;
        return WEFT_OK;
    }
    uint64_t p = j->w[k->item[k->err_item].word];
    /* small outputs come along: a result read right after the run needs
     * no second wait */
    weft_status s = gpu_read_words(dev_of(j), p, word, 1, j->out, k->nout, WHO);
    if (s == WEFT_OK && *word != 0) {
        s = gpu_memset32(dev_of(j), p, 0, sizeof *word / 4, WHO);
    }
    if (s == WEFT_OK && p == pj->err_at) {
        pj->err_at = 0; /* seen zero, or put back */
    }
    return s;
}

static void rt_done(rt_job *j)
{
    ptx_job *pj = j->be_job;
    if (pj->err_at) {
        /* the job ended before the error word was read (a cancel, a
         * failure), maybe between its launches, before the one that puts a
         * kept-zero word back (foldSeg's count, ptx/foldseg.c): its words
         * of the clean area put back, the error word among them, keeping
         * the job's message; should that fail, the next run zeroes the
         * whole clean area */
        char msg[FE_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", weft_last_error());
        for (int z = 0; z < 8; z++) {
            if (in_clean(j, z) &&
                gpu_memset32(
                    dev_of(j), pj->st->clean + (uint64_t)z * CLEAN_BYTES, 0,
                    leaf_bytes(j, pj->zero[z], 0) / 4, WHO) != WEFT_OK) {
                pj->st->clean_ok = false;
            }
        }
        fe_error_copy(WEFT_ERR_DEVICE, msg);
        pj->err_at = 0;
    }
    if (pj->held >= 0) {
        /* the job failed after its kernel got a held word: the job's own
         * failure is reported, the word (the run's last) put back */
        held_forget(pj->run, pj->run->base + pj->held);
        pj->held = -1;
    }
    for (int i = 0; i < pj->n; i++) {
        gpu_array_unpin(dev_of(j), pj->pinned[i]);
    }
    pj->n = 0;
    /* the stream is ordered: the block may serve the next job at once */
    gpu_mem_free(dev_of(j), pj->block, pj->block_bytes);
    pj->block = 0;
    pj->block_bytes = 0;
}

static const rt_ops ptx_rt_ops = {
    .name = "ptx",
    .out = rt_out,
    .aux = rt_aux,
    .addr = rt_addr,
    .run = rt_run,
    .copy = rt_copy,
    .read_error = rt_read_error,
    .done = rt_done,
};

static weft_status hook(void *user, fe_ix *ix, const fe_term *t,
                        weft_array **out, bool *handled)
{
    ptx_run_state *run = user;
    weft_executable *exe = run->exe;
    sk_kernel *k = rt_plan_kernel(exe->be_state, t);
    if (!k || t->kind == FE_UNIT) {
        /* unit's value is computed on the host anyway: the walker makes
         * it a host array, which a kernel gets by a small upload without
         * a wait (mem.c, upload_leaves) and the host reads at no cost
         * (an awhile's counter: no kernel and no download per
         * iteration) */
        return WEFT_OK;
    }
    *handled = true;
    ptx_state *st = state_of(exe->ctx);
    gpu_dev *d = st->dev;
    if (!st->clean_ok) {
        /* the clean area: made and zeroed on first use (the stream
         * orders the memset before every kernel) */
        weft_status s =
            st->clean ? WEFT_OK : gpu_mem_alloc(d, CLEAN_AREA, &st->clean, WHO);
        if (s == WEFT_OK) {
            s = gpu_memset32(d, st->clean, 0, CLEAN_AREA / 4, WHO);
        }
        if (s) {
            return s;
        }
        st->clean_ok = true;
    }
    ptx_job pj = {.st = st, .n = 0, .run = run, .held = -1};
    /* Enough chunks of fold and scan rows that every SM has work, each of
     * at least 256 elements; light element-wise work st->grain (4)
     * elements per thread and chunk (sk_elements), any other one. */
    rt_backend rb = {.ops = &ptx_rt_ops,
                     .be = d,
                     .workers = (int64_t)gpu_dev_sms(d) * 64,
                     .grain = k->light ? st->grain : 1,
                     .chunk_min = 256,
                     .be_job = &pj,
                     .devices = gpu_multi_count(d)};
    if (k->aux_item[SK_CANCEL_AUX] >= 0) {
        /* lowered before each such kernel: runs on one device are
         * serialised, and a run whose flag was raised stops (rt_exec) */
        weft_status s = gpu_cancel_flag(d, &rb.cancel_word, WHO);
        if (s) {
            return s;
        }
    }
    return rt_exec(exe->ctx, &rb, ix, k, out);
}

static weft_status ptx_run(weft_executable *exe, weft_array *const *in,
                           weft_array **out, fe_cancel *cancel,
                           weft_array *const *into)
{
    gpu_dev *d = state_of(exe->ctx)->dev;
    if (!d) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft_run: this context compiles for another GPU "
                        "(target %s) and cannot run kernels",
                        exe->ctx->cfg.target_cpu);
    }
    /* entered once for the whole run: its kernels, copies and waits make
     * the context current no more (cuda.c, "Contexts and threads") */
    weft_status s = gpu_enter(d, WHO);
    if (s) {
        return s;
    }
    static const fe_walk_ops walk = {
        .hook = hook, .held = run_held, .settle = run_settle};
    ptx_run_state run; /* run.held[] is written as it fills */
    run.exe = exe;
    run.base = 0;
    run.nheld = 0;
    run.spec = INT_MAX;
    run.late = INT_MAX;
    s = fe_interp_device(exe->ctx, &exe->core, in, out, cancel, into, &walk,
                         &run);
    /* kernels with while loops still queued: waited for, watching the
     * cancellation (cuda.c, "Loops"); then a held report came first: it
     * wins ("Held reports") */
    weft_status w = gpu_loops_wait(d, WHO);
    if (run.spec != INT_MAX) {
        gpu_spec_end(d, true); /* unsettled (a walker bug): stopped */
    }
    run.spec = INT_MAX; /* every report counts now */
    weft_status h = w == WEFT_OK || w == WEFT_ERR_CANCELLED
                        ? held_read(state_of(exe->ctx), &run, out,
                                    s == WEFT_OK ? exe->core.noutput : 0)
                        : WEFT_OK;
    if (h == WEFT_OK && s == WEFT_OK) {
        h = w;
    }
    if (h != WEFT_OK) {
        for (int i = 0; s == WEFT_OK && i < exe->core.noutput; i++) {
            weft_array_release(out[i]);
            out[i] = NULL;
        }
        s = h;
    }
    gpu_leave(d);
    return s;
}

static void ptx_dump_plan(const weft_executable *exe, FILE *out)
{
    rt_plan_dump(exe->be_state, out);
}

static void ptx_exe_free(weft_executable *exe)
{
    (void)exe; /* kernels belong to the context's table */
}

/* ---- device arrays and DLPack (lib/fe.h fe_device_ops) ------------------ */

/* The context's device, or a status: a compile-only context has none. */
static weft_status device(weft_context *ctx, const char *who, gpu_dev **out)
{
    *out = state_of(ctx)->dev;
    if (!*out) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "%s: this context compiles for another GPU (target "
                        "%s) and has no device",
                        who, ctx->cfg.target_cpu);
    }
    return WEFT_OK;
}

static weft_status dev_ordinal(weft_context *ctx, int *out, const char *who)
{
    gpu_dev *d;
    weft_status s = device(ctx, who, &d);
    *out = s ? -1 : gpu_dev_ordinal(d);
    return s;
}

static weft_status dev_sync_all(weft_context *ctx, const char *who)
{
    gpu_dev *d;
    weft_status s = device(ctx, who, &d);
    return s ? s : gpu_ctx_sync(d, who);
}

static weft_status dev_wrap(weft_array *a, void *const *ptrs, const char *who)
{
    gpu_dev *d;
    weft_status s = device(a->ctx, who, &d);
    return s ? s : gpu_array_wrap(d, a, ptrs, who);
}

static weft_status dev_export(weft_array *a, int leaf, bool writable,
                              uint64_t *ptr, const char *who)
{
    gpu_dev *d;
    weft_status s = device(a->ctx, who, &d);
    return s ? s : gpu_array_export(d, a, leaf, writable, ptr, who);
}

static weft_status dev_download(weft_context *ctx, void *dst, uint64_t src,
                                size_t bytes, const char *who)
{
    gpu_dev *d;
    weft_status s = device(ctx, who, &d);
    return s ? s : gpu_download(d, dst, src, bytes, who);
}

/* dst = src on the device: src uploaded if need be, dst's buffers written
 * on the stream. */
static weft_status dev_copy(weft_array *dst, weft_array *src, const char *who)
{
    gpu_dev *d;
    weft_status s = device(dst->ctx, who, &d);
    if (s) {
        return s;
    }
    size_t n = sizeof(uint64_t) * (size_t)(dst->nleaf > 0 ? dst->nleaf : 1);
    uint64_t *sp = fe_calloc(dst->ctx, n), *dp = fe_calloc(dst->ctx, n);
    if (!sp || !dp) {
        fe_free(dst->ctx, sp, n);
        fe_free(dst->ctx, dp, n);
        return fe_oom(who);
    }
    gpu_lock(d);
    s = gpu_array_in(d, src, sp, who);
    if (s == WEFT_OK) {
        s = gpu_array_out(d, dst, dp, who);
        for (int l = 0; s == WEFT_OK && l < dst->nleaf; l++) {
            s = gpu_copy(d, dp[l], sp[l], dst->bytes[l], who);
        }
        gpu_array_unpin(d, dst);
        gpu_array_unpin(d, src);
    }
    gpu_unlock(d);
    fe_free(dst->ctx, sp, n);
    fe_free(dst->ctx, dp, n);
    return s;
}

static weft_status dev_stream(weft_context *ctx, void **out, const char *who)
{
    gpu_dev *d;
    weft_status s = device(ctx, who, &d);
    *out = s ? NULL : gpu_dev_stream(d);
    return s;
}

static const fe_device_ops ptx_device_ops = {
    .ordinal = dev_ordinal,
    .sync_all = dev_sync_all,
    .wrap = dev_wrap,
    .export_ptr = dev_export,
    .download = dev_download,
    .copy = dev_copy,
    .stream = dev_stream,
};

const fe_backend fe_backend_ptx = {
    .name = "ptx",
    .context_init = ptx_context_init,
    .context_fini = ptx_context_fini,
    .compile = ptx_compile,
    .run = ptx_run,
    .exe_free = ptx_exe_free,
    .stats = ptx_stats,
    .wait_optimised = ptx_wait_optimised,
    .dump_plan = ptx_dump_plan,
    .probe = gpu_probe,
    .device_count = gpu_device_count,
    .device_info = gpu_device_info,
    .device = &ptx_device_ops,
};

#endif /* WEFT_HAVE_LLVM */
