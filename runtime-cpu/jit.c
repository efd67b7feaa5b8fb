/*
 * runtime-cpu/jit.c: from an LLVM module to callable machine code, once.
 *
 * Each CPU context owns one cpu_jit: an ORC LLJIT (its main JIT dylib holds
 * every kernel of the context) and a table of kernels by key.  A request
 * (cpu_jit_get) for a key goes
 *
 *     memory table -> disk cache (runtime/disk.c) -> build the module, optimise
 *     (LLVMRunPasses with CG_CPU_PIPELINE, codegen/cg.h: a function
 *     pipeline with the loop and SLP vectorisers), emit an ELF object in
 *     memory, write it to the disk cache
 *
 * and in both of the last two cases the object is handed to the LLJIT with
 * LLVMOrcLLJITAddObjectFile, so a fresh kernel and a cached one take the
 * same path, and the entry points are looked up by name.  ORC never sees
 * IR: we emit the object ourselves, with our own target machine.  The
 * pipeline (prepare, optimise, emit, link, the dumps and huge kernels) is
 * runtime-cpu/emit.c's; this file holds the jit, its requests and when
 * each tier runs.
 *
 * Tiers (the quick code and the background job: runtime-cpu/tier.c; the
 * worker, its queue and its life: runtime/tier.c).  Of a fresh kernel's
 * compile time, LLVM's code generation at -O3 (instruction selection,
 * scheduling, register allocation, loop strength reduction) takes about
 * three quarters: dotp, 20 ms of which 14 are code generation on a
 * 2-core EPYC.  With cpu_jit_options.tier = CPU_TIER_QUICK_FIRST the
 * requesting thread optimises the IR as always
 * (so the code computes exactly what the optimised code computes: the
 * vectorisers' reassociation is decided there), emits a copy of it with
 * LLVM's quick code generator (CodeGenOpt::None: fast instruction
 * selection, no scheduling, the fast register allocator; about a tenth of
 * the time), links it under names of its own (the symbols with a "q"
 * appended) and returns those addresses.  The optimised module then goes
 * to a background thread of the cpu_jit, which emits it at -O3, writes it
 * to the disk cache (only optimised code is ever written there), links it
 * under the kernel's own names and stores the new addresses into the
 * entry's table, which callers that asked for it (cpu_jit_get_live) read
 * at every run.  A run that started with the quick code finishes with it;
 * both kinds of code stay linked until cpu_jit_free, which does not wait
 * for the background thread: a thread with work left finishes it on its
 * own and then frees the jit ("Freeing" below), so a freed context's
 * kernels reach the disk cache after it is gone.  Kernels too large for
 * LLVM's superlinear passes skip the -O3 tier (emit.c, "Huge kernels").
 * cpu_jit_wait blocks until the queue is empty.  CPU_TIER_QUICK_ONLY keeps the quick code and never
 * reads or writes the disk cache (for tests and for telling a
 * code-generation bug from an optimiser bug).  Modules given to
 * cpu_jit_compile (in the caller's LLVM context, which the background
 * thread may not touch) and dumps are always compiled at -O3 at once.
 *
 * Concurrency.  The table is runtime/kcache.c's, guarded by the jit's
 * mutex.  The first request for a key claims its entry (COMPILING) and
 * compiles with no lock held; later requests for that key sleep until the
 * entry is READY (they copy the addresses) or FAILED (they return its
 * message).  A request that finds a FAILED entry tries again.  The
 * background thread, its queue and its life are runtime/tier.c's; this
 * file gives it the job (cpu_tier_run, tier.c) and what to free.  Different keys compile
 * in parallel: each compilation has its own LLVM context and its own target
 * machine (an LLVM target machine is not safe to share between threads that
 * emit code).  Adding objects and looking symbols up go through a second
 * mutex (ORC is thread-safe, but that keeps link failures attributable).
 *
 * Targets.  By default the host: triple, CPU name and features as LLVM
 * detects them; code runs.  With an explicit CPU name the code is compiled
 * for that CPU (and dumped) but never added to the JIT: that is how tests
 * check the vector code for x86-64-v3 or skylake-avx512 on any x86 host.
 *
 * Seeing the code (emit.c).  With dump flags, each compiled kernel leaves files in
 * the dump directory, named after its first symbol: the IR before and
 * after optimisation, the assembly, and a vectorisation report.  LLVM 19's
 * C API offers no hook for optimisation remarks, so the report reads the
 * optimised IR instead: a function whose loops carry the
 * llvm.loop.isvectorized mark was loop-vectorised; its widest vector type
 * gives the width; vector types without the mark mean SLP vectorisation.
 * While dumping, the disk cache is not read (so that there is something to
 * dump), but it is still written.
 *
 * Every LLVM call that can fail is checked; its message becomes the
 * request's message (WEFT_ERR_INTERNAL: a kernel LLVM rejects is a bug in
 * weft's code generators).  LLVM's diagnostics are caught by a handler on
 * every context we compile in, so nothing is printed.
 */
#ifdef WEFT_HAVE_LLVM

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include "cg.h"
#include "cpu.h"

/* A kernel of the table is a runtime/kcache.c entry whose value is its
 * n addresses (fe_alloc'd with the jit's context) once READY; a tier-up
 * replaces them (atomic stores, under the lock), so they are read
 * atomically. */

/* ---- errors from LLVM ---- */

/* ORC reports the cause of a failed materialisation (an unresolved symbol)
 * here, and by default prints it; the lookup that needed the code only
 * gets "failed to materialize".  Keep the cause for link_object. */
static void on_session_error(void *user, LLVMErrorRef err)
{
    cpu_jit *j = user;
    char *m = LLVMGetErrorMessage(err);
    pthread_mutex_lock(&j->session_lock);
    snprintf(j->session_msg, sizeof j->session_msg, "%s", m ? m : "");
    pthread_mutex_unlock(&j->session_lock);
    LLVMDisposeErrorMessage(m);
}

/* ---- options ---- */

/* x86 CPU names LLVM 19 knows: an unknown one would only draw a warning on
 * stderr from LLVM, so it is refused here instead. */
/* clang-format off */
static const char *const x86_cpus[] = {
    "alderlake", "amdfam10", "arrowlake", "arrowlake-s", "athlon",
    "athlon-4", "athlon-fx", "athlon-mp", "athlon-tbird", "athlon-xp",
    "athlon64", "athlon64-sse3", "atom", "barcelona", "bdver1", "bdver2",
    "bdver3", "bdver4", "bonnell", "broadwell", "btver1", "btver2",
    "cannonlake", "cascadelake", "clearwaterforest", "cooperlake",
    "core-avx-i", "core-avx2", "core2", "corei7", "corei7-avx",
    "emeraldrapids", "generic", "goldmont", "goldmont-plus", "gracemont",
    "grandridge", "graniterapids", "graniterapids-d", "haswell",
    "icelake-client", "icelake-server", "ivybridge", "k8", "k8-sse3", "knl",
    "knm", "lunarlake", "meteorlake", "nehalem", "nocona", "opteron",
    "opteron-sse3", "pantherlake", "penryn", "prescott", "raptorlake",
    "rocketlake", "sandybridge", "sapphirerapids", "sierraforest",
    "silvermont", "skx", "skylake", "skylake-avx512", "slm", "tigerlake",
    "tremont", "westmere", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4",
    "znver1", "znver2", "znver3", "znver4", "znver5",
};
/* clang-format on */

static bool known_cpu(const char *triple, const char *cpu)
{
    if (strncmp(triple, "x86_64", 6) != 0) {
        return true; /* no list for other hosts: LLVM decides */
    }
    for (size_t i = 0; i < sizeof x86_cpus / sizeof x86_cpus[0]; i++) {
        if (strcmp(cpu, x86_cpus[i]) == 0) {
            return true;
        }
    }
    return false;
}

unsigned cpu_dump_flags(const char *list)
{
    static const struct {
        const char *name;
        unsigned bit;
    } words[] = {
        {"ir", CPU_DUMP_IR},
        {"opt-ir", CPU_DUMP_OPT_IR},
        {"asm", CPU_DUMP_ASM},
        {"vec", CPU_DUMP_VEC},
    };
    unsigned flags = 0;
    const char *p = list;
    while (p && *p) {
        size_t n = strcspn(p, ", \t");
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
            if (strlen(words[i].name) == n &&
                strncmp(p, words[i].name, n) == 0) {
                flags |= words[i].bit;
            }
        }
        p += n;
        p += strspn(p, ", \t");
    }
    return flags;
}

/* ---- create and free ---- */

static char *dup_llvm(const char *s)
{
    /* LLVMCreateMessage copies into memory that LLVMDisposeMessage frees. */
    return LLVMCreateMessage(s ? s : "");
}

/* cpu_jit_free left the worker to finish its jobs: it frees the jit when
 * done ("Freeing"). */
static void tier_orphaned(void *user)
{
    cpu_jit_destroy(user);
}

/* The background worker's operations (runtime/tier.c): the CPU's job
 * (tier.c) and the jit's end. */
static const rt_tier_ops tier_ops = {
    .run = cpu_tier_run,
    .free_job = cpu_tier_job_release,
    .orphaned = tier_orphaned,
    .label = "weft tier-up",
};

weft_status cpu_jit_create(weft_context *ctx, const cpu_jit_options *opt,
                           cpu_jit **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "cpu_jit_create: out is NULL");
    }
    *out = NULL;
    cpu_jit_options none = {0};
    if (!opt) {
        opt = &none;
    }
    if (opt->dump && !opt->dump_dir) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "cpu_jit_create: dump flags given without a dump "
                        "directory");
    }
    if (opt->prefer_vector_width != 0 && opt->prefer_vector_width != 128 &&
        opt->prefer_vector_width != 256 && opt->prefer_vector_width != 512) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "cpu_jit_create: prefer_vector_width %d is not 0, "
                        "128, 256 or 512",
                        opt->prefer_vector_width);
    }
    weft_status s = cg_init(); /* LLVM's targets, once per process */
    if (s != WEFT_OK) {
        return s;
    }
    cpu_jit *j = fe_calloc(ctx, sizeof *j);
    if (!j) {
        return fe_oom("cpu_jit_create");
    }
    if (ctx) {
        j->actx.cfg = ctx->cfg;
        /* the jit's spans go to ctx's trace, kept open while the jit
         * lives (an orphan's included); its phases are counted in actx
         * and added to ctx's by cpu_jit_phases */
        fe_trace_share(&j->actx, ctx);
    }
    j->ctx = &j->actx;
    pthread_mutex_init(&j->lock, NULL);
    pthread_mutex_init(&j->link, NULL);
    pthread_mutex_init(&j->session_lock, NULL);
    rt_kcache_init(&j->cache, j->ctx, &j->lock);
    rt_tier_init(&j->worker, &tier_ops, j, true);
    j->prefer_vector_width = opt->prefer_vector_width;
    j->dump = opt->dump;
    bool runnable = opt->cpu == NULL;
    /* Tiers only where code runs and nothing is dumped (cpu.h). */
    j->tier = runnable && !opt->dump ? opt->tier : CPU_TIER_NONE;
    /* The disk structure is set up first so that cpu_jit_free can always
     * close it. */
    rt_disk_open(&j->disk, j->ctx, opt->cache_dir, opt->cache_max_bytes,
                 opt->no_disk_cache || !runnable ||
                     j->tier == CPU_TIER_QUICK_ONLY,
                 ".o");

    char *t = LLVMGetDefaultTargetTriple();
    j->triple = LLVMNormalizeTargetTriple(t);
    LLVMDisposeMessage(t);
    if (runnable) {
        j->cpu = LLVMGetHostCPUName();
        j->features = LLVMGetHostCPUFeatures();
    } else {
        j->cpu = dup_llvm(opt->cpu);
        j->features = dup_llvm(opt->features);
    }
    if (!j->triple || !j->cpu || !j->features) {
        s = fe_oom("cpu_jit_create");
        goto fail;
    }
    if (!runnable && !known_cpu(j->triple, j->cpu)) {
        s = fe_error(WEFT_ERR_INVALID_ARGUMENT,
                     "cpu_jit_create: LLVM 19 knows no CPU named '%s' for %s",
                     j->cpu, j->triple);
        goto fail;
    }
    char *err = NULL;
    if (LLVMGetTargetFromTriple(j->triple, &j->target, &err)) {
        s = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                     "cpu_jit_create: no LLVM target for %s: %s", j->triple,
                     err ? err : "");
        LLVMDisposeMessage(err);
        goto fail;
    }
    if (opt->dump_dir) {
        size_t n = strlen(opt->dump_dir) + 1;
        j->dump_dir = fe_alloc(j->ctx, n);
        if (!j->dump_dir) {
            s = fe_oom("cpu_jit_create");
            goto fail;
        }
        memcpy(j->dump_dir, opt->dump_dir, n);
    }
    if (runnable) {
        LLVMErrorRef e = LLVMOrcCreateLLJIT(&j->jit, NULL);
        if (e) {
            j->jit = NULL;
            char *m = LLVMGetErrorMessage(e);
            s = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                         "cpu_jit_create: cannot make an ORC LLJIT: %s", m);
            LLVMDisposeErrorMessage(m);
            goto fail;
        }
        LLVMOrcExecutionSessionSetErrorReporter(
            LLVMOrcLLJITGetExecutionSession(j->jit), on_session_error, j);
    }
    *out = j;
    return WEFT_OK;
fail:
    cpu_jit_free(j);
    return s;
}

/*
 * Freeing.  cpu_jit_free does not wait for the background thread, which
 * may be deep inside LLVM for seconds: while it has work (a job running
 * or queued) it is detached and made the jit's owner (tier_orphan); it
 * finishes the queue (the optimised objects still go to the disk cache),
 * then frees the jit, the LLJIT and all.  So the disk cache holds a
 * freed context's kernels some time after cpu_jit_free returns, or at
 * once when cpu_jit_wait was called first.
 * Everything the job touches belongs to the jit: its LLVM context and
 * module, the target description, the disk cache, and the allocator,
 * through actx, a copy of the configuration (the context itself is gone
 * by then).  Only when the configuration names its own allocator
 * (weft_config.alloc), which the caller may tear down once the context
 * is freed, does cpu_jit_free wait for the queue as before.  A process
 * that exits meanwhile abandons the queues and waits for the job each
 * orphan is doing, as for live jits (runtime/tier.c, "Exit"), so that no
 * thread is in LLVM when LLVM's static destructors run: exit waits for at
 * most one job per thread, never for a queue.
 */
void cpu_jit_free(cpu_jit *j)
{
    if (!j) {
        return;
    }
    if (j->tier != CPU_TIER_NONE &&
        rt_tier_stop(&j->worker, j->actx.cfg.alloc == NULL)) {
        return; /* the thread frees j */
    }
    cpu_jit_destroy(j);
}

static void free_addrs(void *user, rt_kentry *e)
{
    cpu_jit *j = user;
    fe_free(j->ctx, e->value, (size_t)e->n * sizeof(void *));
}

/* Free j and everything it holds (no thread uses it any more). */
void cpu_jit_destroy(cpu_jit *j)
{
    rt_tier_fini(&j->worker); /* frees what a thread stopped at exit left */
    if (j->jit) {
        LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->jit);
        if (e) {
            LLVMConsumeError(e); /* nothing to report it to */
        }
    }
    rt_kcache_fini(&j->cache, free_addrs, j);
    if (j->dump_dir) {
        fe_free(j->ctx, j->dump_dir, strlen(j->dump_dir) + 1);
    }
    LLVMDisposeMessage(j->triple);
    LLVMDisposeMessage(j->cpu);
    LLVMDisposeMessage(j->features);
    rt_disk_close(&j->disk);
    pthread_mutex_destroy(&j->link);
    pthread_mutex_destroy(&j->session_lock);
    pthread_mutex_destroy(&j->lock);
    fe_trace_close(&j->actx);
    fe_free(j->ctx, j, sizeof *j);
}

/* CPUs that LLVM 19 gives AVX-512F, and those with AVX2 but not it (for
 * an explicit CPU name, whose features string is empty). */
static const char *const avx512_cpus[] = {
    "x86-64-v4",
    "skylake-avx512",
    "cascadelake",
    "cooperlake",
    "cannonlake",
    "icelake-client",
    "icelake-server",
    "rocketlake",
    "tigerlake",
    "sapphirerapids",
    "graniterapids",
    "graniterapids-d",
    "emeraldrapids",
    "knl",
    "knm",
    "znver4",
    "znver5",
};
static const char *const avx2_cpus[] = {
    "x86-64-v3",    "haswell",    "broadwell",        "skylake",
    "alderlake",    "raptorlake", "meteorlake",       "arrowlake",
    "arrowlake-s",  "lunarlake",  "gracemont",        "pantherlake",
    "sierraforest", "grandridge", "clearwaterforest", "znver1",
    "znver2",       "znver3",     "bdver4",           "core-avx2",
};

static bool in_list(const char *cpu, const char *const *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(cpu, l[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether the LLVM feature string fs enables feature f ("+avx2"). */
static bool has_feature(const char *fs, const char *f)
{
    size_t n = strlen(f);
    for (const char *p = fs; p && (p = strstr(p, f)) != NULL; p += n) {
        if ((p == fs || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) {
            return true;
        }
    }
    return false;
}

int cpu_jit_vector_bits(const cpu_jit *j)
{
    if (!j) {
        return 0;
    }
    if (j->prefer_vector_width) {
        return j->prefer_vector_width;
    }
    if (strncmp(j->triple, "x86_64", 6) != 0) {
        return 128;
    }
    bool f512 = has_feature(j->features, "+avx512f");
    bool f256 =
        has_feature(j->features, "+avx2") || has_feature(j->features, "+avx");
    if (has_feature(j->features, "-avx512f")) {
        f512 = false;
    } else if (in_list(j->cpu, avx512_cpus,
                       sizeof avx512_cpus / sizeof avx512_cpus[0])) {
        f512 = true;
    }
    if (!has_feature(j->features, "-avx2") &&
        in_list(j->cpu, avx2_cpus, sizeof avx2_cpus / sizeof avx2_cpus[0])) {
        f256 = true;
    }
    return f512 ? 512 : f256 ? 256 : 128;
}

bool cpu_jit_runnable(const cpu_jit *j)
{
    return j && j->jit;
}

/* ---- keys and names ---- */

void cpu_key_begin(const cpu_jit *j, rt_key *k)
{
    unsigned major, minor, patch;
    LLVMGetVersion(&major, &minor, &patch);
    rt_key_begin(k);
    rt_key_add_str(k, "weft cpu kernel");
    rt_key_add_i64(k, RT_ABI_VERSION);
    rt_key_add_i64(k, major);
    rt_key_add_i64(k, minor);
    rt_key_add_i64(k, patch);
    rt_key_add_str(k, j->triple);
    rt_key_add_str(k, j->cpu);
    rt_key_add_str(k, j->features);
    rt_key_add_i64(k, j->prefer_vector_width);
    /* fast math changes the code of every kernel with floating operations */
    rt_key_add_i64(k, j->ctx && (j->ctx->cfg.flags & WEFT_FLAG_FAST_MATH));
}

void cpu_jit_symbol(const uint8_t key[32], int i, char *buf)
{
    rt_kernel_symbol(key, 32, i, buf, CPU_SYMBOL_MAX);
}

static weft_status build_batch(void *user, LLVMContextRef llctx,
                               LLVMModuleRef *out);

/* What a request builds from: a build function, or a module in hand. */
typedef struct source {
    cpu_build_fn build;
    void *user;
    LLVMModuleRef given; /* cpu_jit_compile's module; NULL once used */
} source;

/* Produce the kernel of key into addrs: from disk, else compiled.  No lock
 * held.  Counters updated.  With CPU_TIER_QUICK_FIRST, a compiled kernel's
 * addresses are its quick code's and *job is what the background thread
 * must do for the optimised code (NULL when nothing is left to do). */
static weft_status produce(cpu_jit *j, const uint8_t key[32], source *src,
                           const char *const *symbols, int nsym, void **addrs,
                           cpu_tier_job **job)
{
    *job = NULL;
    bool dumping = j->dump != 0;
    if (j->jit && !dumping) {
        LLVMMemoryBufferRef obj = NULL;
        void *bytes = NULL;
        size_t nbytes = 0;
        int r = rt_disk_load(&j->disk, key, &bytes, &nbytes);
        if (r > 0) {
            obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(bytes, nbytes,
                                                            "weft-cache");
            fe_free(j->disk.ctx, bytes, nbytes);
        }
        if (r > 0 && !obj) {
            r = 0;
        }
        if (r > 0) {
            if (cpu_jit_link(j, obj, symbols, nsym, addrs) == WEFT_OK) {
                pthread_mutex_lock(&j->lock);
                j->st.disk_loads++;
                pthread_mutex_unlock(&j->lock);
                return WEFT_OK;
            }
            /* An object that does not link is compiled afresh below. */
            r = -1;
        }
        if (r < 0) {
            pthread_mutex_lock(&j->lock);
            j->st.disk_rejects++;
            pthread_mutex_unlock(&j->lock);
        }
    }

    cg_warm_up(); /* before the first compile (codegen/init.c) */
    weft_status s = WEFT_OK;
    LLVMContextRef llctx = NULL;
    LLVMModuleRef m = NULL;
    cpu_diag dg = {{0}};
    LLVMDiagnosticHandler old_handler = NULL;
    void *old_user = NULL;
    if (src->given) {
        m = src->given;
        src->given = NULL;
    } else {
        llctx = LLVMContextCreate();
        if (!llctx) {
            return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                            "cpu_jit: cannot make an LLVM context");
        }
        LLVMContextSetDiagnosticHandler(llctx, cpu_on_diagnostic, &dg);
        s = src->build(src->user, llctx, &m);
        if (s == WEFT_OK && !m) {
            s = fe_error(WEFT_ERR_INTERNAL,
                         "cpu_jit: the kernel builder for "
                         "%s returned no module",
                         symbols[0]);
        }
        if (s) {
            goto out;
        }
    }
    LLVMContextRef mctx = LLVMGetModuleContext(m);
    if (!llctx) {
        old_handler = LLVMContextGetDiagnosticHandler(mctx);
        old_user = LLVMContextGetDiagnosticContext(mctx);
        LLVMContextSetDiagnosticHandler(mctx, cpu_on_diagnostic, &dg);
    }
    /* Only a module in a context of our own can go to the background. */
    bool tiered = llctx && j->tier != CPU_TIER_NONE;
    /* see emit.c, "Huge kernels" */
    bool huge = cpu_module_huge(m, src->build != build_batch);
    LLVMMemoryBufferRef obj = NULL;
    double opt_ms = 0, emit_ms = 0;
    s = cpu_jit_optimise(j, m, symbols, nsym, huge, &opt_ms);
    if (s == WEFT_OK && huge && j->jit && !dumping) {
        /* final quick code, linked under the kernel's own names */
        s = cpu_jit_emit(j, m, LLVMCodeGenLevelNone, symbols[0], false, &obj,
                         &emit_ms);
        if (s == WEFT_OK) {
            s = cpu_jit_link(j, obj, symbols, nsym, addrs);
            obj = NULL;
        }
        tiered = false;
    } else if (s == WEFT_OK && !tiered) {
        s = cpu_jit_emit(j, m, LLVMCodeGenLevelAggressive, symbols[0], false,
                         &obj, &emit_ms);
    } else if (s == WEFT_OK) {
        s = cpu_tier_emit_quick(j, m, symbols, nsym, addrs, &emit_ms);
    }
    if (s == WEFT_OK && dg.msg[0]) {
        s = fe_error(WEFT_ERR_INTERNAL, "cpu_jit: LLVM: %s", dg.msg);
    }
    if (!llctx) {
        LLVMContextSetDiagnosticHandler(mctx, old_handler, old_user);
    }
    if (s) {
        if (obj) {
            LLVMDisposeMemoryBuffer(obj);
        }
        goto out;
    }
    uint64_t written = 0;
    if (huge && j->jit && !dumping) {
        /* linked above; nothing for the background or the disk */
    } else if (tiered && j->tier == CPU_TIER_QUICK_FIRST) {
        LLVMContextSetDiagnosticHandler(llctx, NULL, NULL);
        *job = cpu_tier_job_new(j, key, llctx, m, symbols, nsym);
        if (*job) {
            llctx = NULL; /* the job's now */
            m = NULL;
        }
        /* out of memory: the quick code stays */
    } else if (tiered) {
        /* quick code only: linked by emit_quick */
    } else if (j->jit) {
        written = rt_disk_store(&j->disk, key, LLVMGetBufferStart(obj),
                                LLVMGetBufferSize(obj));
        s = cpu_jit_link(j, obj, symbols, nsym, addrs);
    } else {
        LLVMDisposeMemoryBuffer(obj);
        for (int i = 0; i < nsym; i++) {
            addrs[i] = NULL;
        }
    }
    rt_tier_after_llvm(); /* LLVM's new statics (runtime/tier.c, "Exit") */
    pthread_mutex_lock(&j->lock);
    j->st.compiled++;
    j->st.compile_ms += opt_ms + emit_ms;
    j->st.disk_bytes_written += written;
    pthread_mutex_unlock(&j->lock);
out:
    if (m) {
        LLVMDisposeModule(m);
    }
    if (llctx) {
        LLVMContextDispose(llctx);
    }
    return s;
}

/* Claim the entry of key, a kernel of nsym symbols, the first named
 * symbol0 (runtime/kcache.c; lock held): *mine when this request must
 * compile it, its room for the addresses then made.  A kernel known with
 * another number of symbols is an error, as is running out of memory (the
 * entry claimed is then FAILED). */
static weft_status claim(cpu_jit *j, const uint8_t key[32], int nsym,
                         const char *symbol0, rt_kentry **out, bool *mine,
                         const char *who)
{
    rt_kentry *e = rt_kcache_find(&j->cache, key);
    if (e && e->value && e->n != nsym) {
        *mine = false;
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: kernel %s has %d "
                        "symbols, %d asked for",
                        who, symbol0, e->n, nsym);
    }
    weft_status s = rt_kcache_claim(&j->cache, key, &e, mine, who);
    if (s == WEFT_OK && *mine && !e->value) {
        e->value = fe_calloc(j->ctx, (size_t)nsym * sizeof(void *));
        if (e->value) {
            e->n = nsym;
        } else {
            *mine = false;
            s = fe_oom(who);
            rt_kcache_publish(&j->cache, e, RT_KC_FAILED, s, weft_last_error());
        }
    }
    *out = e;
    return s;
}

static weft_status request(cpu_jit *j, const uint8_t key[32], source *src,
                           const char *const *symbols, int nsym, void **addrs,
                           void *const **live)
{
    static const char who[] = "cpu_jit_get";
    if (!j || !key || !symbols || !addrs || (!src->build && !src->given)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "%s: a required argument is "
                        "NULL",
                        who);
    }
    if (nsym < 1 || nsym > CPU_MAX_SYMBOLS) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: %d symbols asked for "
                        "(1 to %d)",
                        who, nsym, CPU_MAX_SYMBOLS);
    }
    for (int i = 0; i < nsym; i++) {
        if (!symbols[i] || !symbols[i][0]) {
            return fe_error(WEFT_ERR_NULL_ARGUMENT,
                            "%s: symbol %d is NULL or "
                            "empty",
                            who, i);
        }
    }
    pthread_mutex_lock(&j->lock);
    rt_kentry *e = NULL;
    bool mine = false;
    weft_status s = claim(j, key, nsym, symbols[0], &e, &mine, who);
    if (s == WEFT_OK && !mine) {
        s = rt_kcache_wait(&j->cache, e);
        if (s == WEFT_OK) {
            memcpy(addrs, e->value, (size_t)nsym * sizeof *addrs);
            if (live) {
                *live = e->value;
            }
            j->st.memory_hits++;
        }
    }
    pthread_mutex_unlock(&j->lock);
    if (s != WEFT_OK || !mine) {
        return s;
    }

    void **tmp = addrs; /* the caller's array is ours until we return */
    cpu_tier_job *job = NULL;
    s = produce(j, key, src, symbols, nsym, tmp, &job);

    char msg[FE_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", s != WEFT_OK ? weft_last_error() : "");
    pthread_mutex_lock(&j->lock);
    bool inline_job = false;
    if (s == WEFT_OK) {
        memcpy(e->value, tmp, (size_t)nsym * sizeof *tmp);
        if (live) {
            *live = e->value;
        }
        rt_kentry **es = job ? fe_alloc(j->ctx, sizeof *es) : NULL;
        if (es) {
            es[0] = e;
            inline_job = !cpu_tier_queue(j, es, 1, job);
        } else if (job) {
            /* out of memory: the quick code stays */
            cpu_tier_job_free(j, job);
            job = NULL;
        }
    }
    rt_kcache_publish(&j->cache, e, s == WEFT_OK ? RT_KC_READY : RT_KC_FAILED,
                      s, msg);
    pthread_mutex_unlock(&j->lock);
    if (inline_job) {
        cpu_tier_run_here(j, job); /* no background thread */
    }
    return s;
}

/*
 * Many kernels.  Each compile has fixed costs: an LLVM context, a target
 * machine, the pass pipeline's set-up, the code generator's per-module
 * work, an object to link and a disk cache file: about 10 ms, for a small
 * kernel nearly all its time, so a program of a thousand small kernels
 * took 13 s.  cpu_jit_get_many compiles the kernels of a batch that are
 * not in memory as one module: each built in the batch's LLVM context,
 * its functions but the entry points made internal, and linked into the
 * first (LLVMLinkModules2, which renames internal names that collide);
 * from there on the batch is one kernel to produce (one object, one disk
 * cache entry under a key hashed from the kernels' keys, one tier-up job
 * whose optimised addresses go to every entry).  The entries are claimed
 * (COMPILING) before compiling and published before waiting for entries
 * that other threads compile, so that two batches that share kernels
 * cannot wait for each other.
 */

/* The build function of a batch: every kernel claimed, linked into one
 * module. */
typedef struct batch {
    cpu_build_fn build;
    cpu_request *r;
    const bool *mine;
    int n;
    const char *const *symbols; /* all entry points, in order */
    int nsym;
} batch;

static weft_status build_batch(void *user, LLVMContextRef llctx,
                               LLVMModuleRef *out)
{
    batch *b = user;
    LLVMModuleRef all = NULL;
    weft_status s = WEFT_OK;
    for (int i = 0; i < b->n && s == WEFT_OK; i++) {
        if (!b->mine[i]) {
            continue;
        }
        LLVMModuleRef m = NULL;
        s = b->build(b->r[i].user, llctx, &m);
        if (s != WEFT_OK || !m) {
            s = s ? s
                  : fe_error(WEFT_ERR_INTERNAL, "cpu_jit: a kernel "
                                                "builder returned no module");
            break;
        }
        for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
             f = LLVMGetNextFunction(f)) {
            size_t n;
            const char *name = LLVMGetValueName2(f, &n);
            if (!LLVMIsDeclaration(f) &&
                !cpu_symbol_listed(name, n, b->symbols, b->nsym)) {
                LLVMSetLinkage(f, LLVMInternalLinkage);
            }
        }
        for (LLVMValueRef g = LLVMGetFirstGlobal(m); g;
             g = LLVMGetNextGlobal(g)) {
            if (!LLVMIsDeclaration(g)) {
                LLVMSetLinkage(g, LLVMInternalLinkage);
            }
        }
        if (!all) {
            all = m;
        } else if (LLVMLinkModules2(all, m)) { /* takes m */
            s = fe_error(WEFT_ERR_INTERNAL, "cpu_jit: the kernels of a "
                                            "batch do not link together");
        }
    }
    if (s != WEFT_OK && all) {
        LLVMDisposeModule(all);
        all = NULL;
    }
    *out = all;
    return s;
}

weft_status cpu_jit_get_many(cpu_jit *j, cpu_build_fn build, cpu_request *r,
                             int n)
{
    static const char who[] = "cpu_jit_get_many";
    if (!j || !build || !r) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "%s: a required argument is "
                        "NULL",
                        who);
    }
    if (n < 1 || n > CPU_BATCH_KERNELS) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT, "%s: %d kernels (1 to %d)",
                        who, n, CPU_BATCH_KERNELS);
    }
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (!r[i].key || !r[i].symbols || !r[i].addrs || r[i].nsym < 1 ||
            r[i].nsym > CPU_MAX_SYMBOLS) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: request %d has no "
                            "key, symbols or room, or %d symbols",
                            who, i, r[i].nsym);
        }
        for (int k = 0; k < r[i].nsym; k++) {
            if (!r[i].symbols[k] || !r[i].symbols[k][0]) {
                return fe_error(WEFT_ERR_NULL_ARGUMENT,
                                "%s: a symbol of "
                                "request %d is NULL or empty",
                                who, i);
            }
        }
        total += r[i].nsym;
        r[i].live = NULL;
    }
    if (total > CPU_BATCH_SYMBOLS) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: %d symbols (at most "
                        "%d)",
                        who, total, CPU_BATCH_SYMBOLS);
    }
    rt_kentry **es = fe_calloc(j->ctx, (size_t)n * sizeof *es);
    bool *mine = fe_calloc(j->ctx, (size_t)n * sizeof *mine);
    const char **syms = fe_calloc(j->ctx, (size_t)total * sizeof *syms);
    void **addrs = fe_calloc(j->ctx, (size_t)total * sizeof *addrs);
    rt_kentry **claimed = fe_calloc(j->ctx, (size_t)n * sizeof *claimed);
    weft_status s = WEFT_OK;
    if (!es || !mine || !syms || !addrs || !claimed) {
        s = fe_oom(who);
        goto out;
    }
    /* claim what is not there */
    int nmine = 0, nsym = 0;
    pthread_mutex_lock(&j->lock);
    for (int i = 0; i < n && s == WEFT_OK; i++) {
        bool m = false;
        s = claim(j, r[i].key, r[i].nsym, r[i].symbols[0], &es[i], &m, who);
        if (s != WEFT_OK || !m) {
            continue; /* ready, or compiled by another request */
        }
        mine[i] = true;
        claimed[nmine++] = es[i];
        for (int k = 0; k < r[i].nsym; k++) {
            syms[nsym++] = r[i].symbols[k];
        }
    }
    pthread_mutex_unlock(&j->lock);
    /* compile the claimed ones (also after a failure above: they must
     * leave COMPILING) */
    cpu_tier_job *job = NULL;
    if (nmine > 0) {
        weft_status c = s;
        if (c == WEFT_OK) {
            uint8_t key[32];
            rt_key h;
            rt_key_begin(&h);
            rt_key_add_str(&h, "weft cpu batch");
            for (int i = 0; i < n; i++) {
                if (mine[i]) {
                    rt_key_add(&h, r[i].key, 32);
                }
            }
            rt_key_finish(&h, key);
            batch b = {build, r, mine, n, syms, nsym};
            source src = {build_batch, &b, NULL};
            c = produce(j, key, &src, syms, nsym, addrs, &job);
        }
        char msg[FE_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", c ? weft_last_error() : "");
        pthread_mutex_lock(&j->lock);
        for (int i = 0, at = 0; i < n; i++) {
            if (!mine[i]) {
                continue;
            }
            rt_kentry *e = es[i];
            if (c == WEFT_OK) {
                memcpy(e->value, addrs + at, (size_t)e->n * sizeof *addrs);
                at += e->n;
            }
            rt_kcache_publish(&j->cache, e,
                              c == WEFT_OK ? RT_KC_READY : RT_KC_FAILED, c,
                              msg);
        }
        bool inline_job = false;
        rt_kentry **jes =
            job ? fe_alloc(j->ctx, (size_t)nmine * sizeof *jes) : NULL;
        if (jes) {
            memcpy(jes, claimed, (size_t)nmine * sizeof *jes);
            inline_job = !cpu_tier_queue(j, jes, nmine, job);
        } else if (job) {
            /* out of memory: the quick code stays */
            cpu_tier_job_free(j, job);
            job = NULL;
        }
        pthread_mutex_unlock(&j->lock);
        if (inline_job) {
            cpu_tier_run_here(j, job);
        }
        if (c != WEFT_OK) {
            s = fe_error_copy(c, msg);
        }
    }
    if (s != WEFT_OK) {
        goto out;
    }
    /* everything: ours, and what others compiled */
    pthread_mutex_lock(&j->lock);
    for (int i = 0; i < n && s == WEFT_OK; i++) {
        rt_kentry *e = es[i];
        s = rt_kcache_wait(&j->cache, e);
        if (s == WEFT_OK) {
            memcpy(r[i].addrs, e->value, (size_t)e->n * sizeof(void *));
            r[i].live = e->value;
            j->st.memory_hits += !mine[i];
        }
    }
    pthread_mutex_unlock(&j->lock);
out:
    fe_free(j->ctx, es, (size_t)n * sizeof *es);
    fe_free(j->ctx, mine, (size_t)n * sizeof *mine);
    fe_free(j->ctx, syms, (size_t)total * sizeof *syms);
    fe_free(j->ctx, addrs, (size_t)total * sizeof *addrs);
    fe_free(j->ctx, claimed, (size_t)n * sizeof *claimed);
    return s;
}

weft_status cpu_jit_get(cpu_jit *j, const uint8_t key[32], cpu_build_fn build,
                        void *user, const char *const *symbols, int nsym,
                        void **addrs)
{
    return cpu_jit_get_live(j, key, build, user, symbols, nsym, addrs, NULL);
}

weft_status cpu_jit_get_live(cpu_jit *j, const uint8_t key[32],
                             cpu_build_fn build, void *user,
                             const char *const *symbols, int nsym, void **addrs,
                             void *const **live)
{
    source src = {build, user, NULL};
    if (!build) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "cpu_jit_get: build is NULL");
    }
    return request(j, key, &src, symbols, nsym, addrs, live);
}

weft_status cpu_jit_compile(cpu_jit *j, LLVMModuleRef m, const uint8_t key[32],
                            const char *const *symbols, int nsym, void **addrs)
{
    if (!m) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "cpu_jit_compile: module is "
                                                "NULL");
    }
    source src = {NULL, NULL, m};
    weft_status s = request(j, key, &src, symbols, nsym, addrs, NULL);
    if (src.given) {
        LLVMDisposeModule(src.given); /* cached: not needed */
    }
    return s;
}

void cpu_jit_phases(cpu_jit *j, weft_stats *st)
{
    if (j) {
        fe_stats_add_phases(st, &j->actx);
    }
}

void cpu_jit_stats_get(cpu_jit *j, cpu_jit_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!j) {
        return;
    }
    pthread_mutex_lock(&j->lock);
    *out = j->st;
    pthread_mutex_unlock(&j->lock);
    pthread_mutex_lock(&j->disk.lock);
    out->disk_enabled = j->disk.enabled;
    snprintf(out->disk_note, sizeof out->disk_note, "%s", j->disk.note);
    pthread_mutex_unlock(&j->disk.lock);
}

#endif /* WEFT_HAVE_LLVM */
