/*
 * runtime-cpu/backend.c: the CPU backend (WEFT_BACKEND_CPU).
 *
 * Per context: one ORC LLJIT with its kernel caches (jit.c, runtime/disk.c) and
 * one gang of workers (gang.c).
 *
 * weft_compile: every collective operation of the core that has a skeleton
 * becomes a kernel (skeletons-ir/): its layout is prepared, its cache key
 * computed from a canonical description, and its entry points fetched from
 * the JIT, which builds the module only when neither memory nor disk has
 * it.  Of a kernel with two variants (sk_kernel.general) only the
 * equal-shapes one is compiled then; the general one when a run first
 * needs it (cpu_general).
 *
 * weft_run: the interpreter's walker evaluates the core (lets, acond,
 * awhile, tuples, the scalar terms the host computes), and hands each
 * operation that has a kernel to this file's hook, which evaluates the
 * operands, allocates the outputs, fills the argument block and runs the
 * kernel's phases on the gang (runtime/exec.c: one driver per skeleton
 * family, shared with the PTX backend, through this file's cpu_rt_ops).
 */
#ifdef WEFT_HAVE_LLVM
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "../runtime/rt.h"
#include "../skeletons-ir/sk.h"

typedef struct cpu_state {
    cpu_jit *jit;
    cpu_gang *gang;
} cpu_state;

static cpu_state *state_of(const weft_context *ctx)
{
    return (cpu_state *)ctx->be_state;
}

/* ---- context ----------------------------------------------------------- */

/* The backend's probe (weft_backend_available): LLVM makes a target
 * machine for this host. */
static weft_status cpu_probe(void)
{
    LLVMTargetMachineRef tm;
    weft_status s = cg_cpu_machine(NULL, NULL, LLVMCodeGenLevelNone, &tm);
    if (s == WEFT_OK) {
        LLVMDisposeTargetMachine(tm);
    }
    return s;
}

static weft_status cpu_context_init(weft_context *ctx)
{
    cpu_state *st = fe_calloc(ctx, sizeof *st);
    if (!st) {
        return fe_oom("weft_context_create");
    }
    cpu_jit_options opt;
    memset(&opt, 0, sizeof opt);
    opt.cpu = ctx->cfg.target_cpu;
    opt.cache_dir = ctx->cfg.cache_dir;
    opt.dump = ctx->cfg.dump ? cpu_dump_flags(ctx->cfg.dump) : 0;
    opt.dump_dir = ctx->cfg.dump_dir ? ctx->cfg.dump_dir : ".";
    opt.tier = ctx->cfg.flags & WEFT_FLAG_QUICK_CODE   ? CPU_TIER_QUICK_ONLY
               : ctx->cfg.flags & WEFT_FLAG_NO_TIERING ? CPU_TIER_NONE
                                                       : CPU_TIER_QUICK_FIRST;
    weft_status s = cpu_jit_create(ctx, &opt, &st->jit);
    if (s == WEFT_OK) {
        s = cpu_gang_create(ctx, ctx->cfg.threads, &st->gang);
    }
    if (s) {
        cpu_jit_free(st->jit);
        fe_free(ctx, st, sizeof *st);
        return s;
    }
    ctx->be_state = st;
    return WEFT_OK;
}

static void cpu_context_fini(weft_context *ctx)
{
    cpu_state *st = state_of(ctx);
    if (st) {
        cpu_gang_free(st->gang);
        cpu_jit_free(st->jit);
        fe_free(ctx, st, sizeof *st);
        ctx->be_state = NULL;
    }
}

static void cpu_stats(const weft_context *ctx, weft_stats *out)
{
    cpu_state *st = state_of(ctx);
    cpu_jit_stats js;
    cpu_jit_stats_get(st->jit, &js);
    out->kernels_compiled = js.compiled;
    out->kernels_loaded = js.disk_loads;
    out->kernels_reused = js.memory_hits;
    out->compile_ms = js.compile_ms;
    out->kernels_optimised = js.optimised;
    out->optimise_ms = js.optimise_ms;
    out->threads = cpu_gang_size(st->gang);
    cpu_jit_phases(st->jit, out);
}

static weft_status cpu_wait_optimised(weft_context *ctx)
{
    weft_status s = cpu_jit_wait(state_of(ctx)->jit);
    if (s != WEFT_OK) {
        char msg[FE_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", weft_last_error());
        return fe_error(s, "weft_context_wait_optimised: %s", msg);
    }
    return s;
}

/* ---- compile ----------------------------------------------------------- */

typedef struct build {
    weft_context *ctx;
    const fe_core *core;
    sk_kernel *k;
    bool uniform; /* which variant */
    const char *const *names;
    int spmd_bits; /* sk_emit.spmd_bits */
} build;

/* The SPMD width, 0 for none: WEFT_FLAG_NO_SPMD, and checked mode, whose
 * per-element reports (cg_check) only the scalar emission makes. */
static int spmd_bits_of(const weft_context *ctx, const cpu_jit *j)
{
    return ctx->cfg.flags & (WEFT_FLAG_NO_SPMD | WEFT_FLAG_CHECKED)
               ? 0
               : cpu_jit_vector_bits(j);
}

static weft_status build_module(void *user, LLVMContextRef llctx,
                                LLVMModuleRef *out)
{
    build *b = user;
    *out = NULL;
    uint64_t t0 = fe_clock_ns();
    fe_arena scratch;
    fe_arena_init(&scratch, b->ctx);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("weft", llctx);
    sk_emit e = {
        .ctx = b->ctx,
        .core = b->core,
        .k = b->k,
        .arena = &scratch,
        .llctx = llctx,
        .mod = mod,
        .target = &sk_target_cpu,
        .spmd_bits = b->spmd_bits,
    };
    weft_status s = sk_emit_variant(&e, b->uniform, b->names);
    fe_arena_release(&scratch);
    if (s == WEFT_OK && e.spmd_bits && cpu_module_huge(mod, true)) {
        /* Huge: scalar code only, half the size, and scalar instructions
         * take LLVM's fast instruction selector, where vector ones go
         * through the SelectionDAG (emit.c, "Huge kernels"). */
        LLVMDisposeModule(mod);
        mod = LLVMModuleCreateWithNameInContext("weft", llctx);
        fe_arena_init(&scratch, b->ctx);
        e.arena = &scratch;
        e.mod = mod;
        e.spmd_bits = 0;
        s = sk_emit_variant(&e, b->uniform, b->names);
        fe_arena_release(&scratch);
    }
    char name[128];
    fe_phase_end(b->ctx, FE_PHASE_IR, t0, "ir",
                 "\"kernel\":\"%s\",\"what\":\"%s\",\"variant\":\"%s\"",
                 b->names[0], rt_kernel_name(b->k, name, sizeof name),
                 b->uniform ? "equal shapes" : "general");
    if (s) {
        LLVMDisposeModule(mod);
        return s;
    }
    *out = mod;
    return WEFT_OK;
}

/* One variant of kernel k from the JIT (key: that variant's key) into
 * addrs[0 .. k->nentry - 1]; *live: the JIT's table of them. */
static weft_status get_variant(weft_executable *exe, sk_kernel *k, bool uniform,
                               const uint8_t key[32], void **addrs,
                               void *const **live)
{
    cpu_state *st = state_of(exe->ctx);
    char names[SK_MAX_ENTRY][CPU_SYMBOL_MAX];
    const char *np[SK_MAX_ENTRY];
    int nsym = k->nentry;
    FE_CHECK(2 * nsym <= SK_MAX_ENTRY);
    for (int i = 0; i < nsym; i++) {
        cpu_jit_symbol(key, i, names[i]);
        np[i] = names[i];
    }
    build b = {.ctx = exe->ctx,
               .core = &exe->core,
               .k = k,
               .uniform = uniform,
               .names = np,
               .spmd_bits = spmd_bits_of(exe->ctx, st->jit)};
    return cpu_jit_get_live(st->jit, key, build_module, &b, np, nsym, addrs,
                            live);
}

/* The key of the general variant: the kernel's key (which names the
 * equal-shapes variant) hashed again with a tag. */
static void general_key(const sk_kernel *k, uint8_t key[32])
{
    rt_key h;
    rt_key_begin(&h);
    rt_key_add_str(&h, "general variant");
    rt_key_add(&h, k->key, 32);
    rt_key_finish(&h, key);
}

/* The kernels of a plan, whose entry points cpu_compile gets after
 * rt_plan: together when there are many (runtime-cpu/jit.c, "Many
 * kernels"). */
typedef struct pending {
    sk_kernel **k;
    int n, cap;
} pending;

/* Kernels in a plan from which they are compiled in batches (fewer: one
 * by one, each its own disk cache entry and tier-up). */
#define CPU_BATCH_MIN 16

/* rt_get_fn: the kernel's key, and the kernel on the list (user) of
 * those cpu_compile gets.  A kernel with two variants (a fused zipWith)
 * gets only its equal-shapes variant there; the general one, for operands
 * of different shapes, is compiled by the first run that needs it
 * (cpu_general), so the common case compiles half as much. */
static weft_status get_kernel(void *user, weft_executable *exe, sk_kernel *k)
{
    pending *pd = user;
    cpu_state *st = state_of(exe->ctx);
    rt_key key;
    cpu_key_begin(st->jit, &key);
    int spmd_bits = spmd_bits_of(exe->ctx, st->jit);
    /* the version of the SPMD code generator and of what CPU kernels emit
     * (2: folds of short rows across rows, errors gathered in a local; 3:
     * consecutive elements of all active lanes by a plain load, short
     * rows SK_FOLD_ROW_GROUPS vectors at a time; 4: foldSeg's short
     * segments as masked vector trips where asked (taken out again); 5:
     * foldSeg's short loop in two copies, skeletons-ir/foldseg.c's
     * fold_short) */
    rt_key_add_str(&key, "spmd 5");
    rt_key_add_i64(&key, spmd_bits);
    sk_describe(&exe->core, k, rt_key_sink, &key);
    rt_key_finish(&key, k->key);
    for (int i = k->nentry; i < SK_MAX_ENTRY; i++) {
        k->entry[i] = NULL;
    }
    k->live[1] = NULL;
    if (pd->n == pd->cap) {
        int cap = pd->cap ? 2 * pd->cap : 64;
        sk_kernel **nk = fe_arena_alloc(&exe->arena, sizeof *nk * (size_t)cap);
        if (!nk) {
            return fe_oom("weft_compile");
        }
        if (pd->n) {
            memcpy(nk, pd->k, sizeof *nk * (size_t)pd->n);
        }
        pd->k = nk;
        pd->cap = cap;
    }
    pd->k[pd->n++] = k;
    return WEFT_OK;
}

/* Kernels k[0 .. n-1] in one batch (n <= CPU_BATCH_KERNELS, their entry
 * points together at most CPU_BATCH_SYMBOLS). */
static weft_status get_batch(weft_executable *exe, sk_kernel **k, int n)
{
    cpu_state *st = state_of(exe->ctx);
    fe_arena scratch;
    fe_arena_init(&scratch, exe->ctx);
    cpu_request *r = fe_arena_alloc(&scratch, sizeof *r * (size_t)n);
    build *b = fe_arena_alloc(&scratch, sizeof *b * (size_t)n);
    weft_status s = WEFT_OK;
    if (!r || !b) {
        s = fe_oom("weft_compile");
    }
    int spmd_bits = spmd_bits_of(exe->ctx, st->jit);
    for (int i = 0; i < n && s == WEFT_OK; i++) {
        int nsym = k[i]->nentry;
        char(*names)[CPU_SYMBOL_MAX] =
            fe_arena_alloc(&scratch, sizeof *names * (size_t)nsym);
        const char **np = fe_arena_alloc(&scratch, sizeof *np * (size_t)nsym);
        if (!names || !np) {
            s = fe_oom("weft_compile");
            break;
        }
        for (int e = 0; e < nsym; e++) {
            cpu_jit_symbol(k[i]->key, e, names[e]);
            np[e] = names[e];
        }
        b[i] = (build){.ctx = exe->ctx,
                       .core = &exe->core,
                       .k = k[i],
                       .uniform = true,
                       .names = np,
                       .spmd_bits = spmd_bits};
        r[i] = (cpu_request){.key = k[i]->key,
                             .user = &b[i],
                             .symbols = np,
                             .nsym = nsym,
                             .addrs = k[i]->entry};
    }
    if (s == WEFT_OK) {
        s = cpu_jit_get_many(st->jit, build_module, r, n);
    }
    for (int i = 0; i < n && s == WEFT_OK; i++) {
        k[i]->live[0] = r[i].live;
    }
    fe_arena_release(&scratch);
    return s;
}

/* The batches of a plan, compiled by the calling thread and up to
 * CPU_BATCH_THREADS - 1 others (the gang's size at most), each taking
 * the next batch: LLVM's cost per kernel is the same in a batch, so
 * threads are what is left to divide it. */
#define CPU_BATCH_THREADS 8
/* Deeper programs compile on one thread: lib/exec.c's DEEP_DIRECT, the
 * levels of recursion a thread's own stack holds. */
#define CPU_BATCH_DEPTH 256

typedef struct batches {
    weft_executable *exe;
    sk_kernel **k;
    int *first; /* batch b: kernels first[b] .. first[b+1]-1 */
    int n;
    atomic_int next; /* the next batch to take */
    pthread_mutex_t lock;
    weft_status status; /* under lock: the first failure */
    char msg[FE_MSG_MAX];
} batches;

static void *batch_worker(void *arg)
{
    batches *w = arg;
    for (int b; (b = atomic_fetch_add(&w->next, 1)) < w->n;) {
        weft_status s = get_batch(w->exe, w->k + w->first[b],
                                  w->first[b + 1] - w->first[b]);
        if (s != WEFT_OK) {
            pthread_mutex_lock(&w->lock);
            if (w->status == WEFT_OK) {
                w->status = s;
                snprintf(w->msg, sizeof w->msg, "%s", weft_last_error());
            }
            pthread_mutex_unlock(&w->lock);
            atomic_store(&w->next, w->n); /* the others stop */
        }
    }
    return NULL;
}

/* The entry points of the plan's kernels: one by one when few, else in
 * batches, on several threads when there are several batches and the
 * program is shallow (a thread's own stack holds its recursion: see
 * lib/exec.c, deep_call_run). */
static weft_status get_pending(weft_executable *exe, const pending *pd)
{
    if (pd->n < CPU_BATCH_MIN) {
        for (int i = 0; i < pd->n; i++) {
            sk_kernel *k = pd->k[i];
            weft_status s =
                get_variant(exe, k, true, k->key, k->entry, &k->live[0]);
            if (s != WEFT_OK) {
                return s;
            }
        }
        return WEFT_OK;
    }
    fe_arena scratch;
    fe_arena_init(&scratch, exe->ctx);
    batches w = {.exe = exe, .k = pd->k};
    w.first = fe_arena_alloc(&scratch, sizeof *w.first * (size_t)(pd->n + 1));
    if (!w.first) {
        fe_arena_release(&scratch);
        return fe_oom("weft_compile");
    }
    for (int i = 0; i < pd->n; w.n++) {
        int m = 0, nsym = 0;
        while (i + m < pd->n && m < CPU_BATCH_KERNELS &&
               nsym + pd->k[i + m]->nentry <= CPU_BATCH_SYMBOLS) {
            nsym += pd->k[i + m]->nentry;
            m++;
        }
        w.first[w.n] = i;
        i += m;
        w.first[w.n + 1] = i;
    }
    int nth = cpu_gang_size(state_of(exe->ctx)->gang);
    nth = nth < CPU_BATCH_THREADS ? nth : CPU_BATCH_THREADS;
    nth = nth < w.n ? nth : w.n;
    if (exe->depth == 0 || exe->depth > CPU_BATCH_DEPTH) {
        nth = 1;
    }
    pthread_mutex_init(&w.lock, NULL);
    pthread_t th[CPU_BATCH_THREADS];
    int started = 0;
    while (started < nth - 1 &&
           pthread_create(&th[started], NULL, batch_worker, &w) == 0) {
        started++; /* fewer threads than asked: the others do more */
    }
    batch_worker(&w);
    for (int t = 0; t < started; t++) {
        pthread_join(th[t], NULL);
    }
    pthread_mutex_destroy(&w.lock);
    weft_status s = w.status;
    if (s != WEFT_OK) {
        fe_error_copy(s, w.msg);
    }
    fe_arena_release(&scratch);
    return s;
}

/* rt_ops.general: the general variant of the job's kernel, compiled (or
 * loaded) at its first use.  Several runs may ask at once: the JIT makes
 * the latecomers wait for the first, and every one stores the same
 * addresses (atomically: runs on other threads read them). */
static weft_status cpu_general(rt_job *j)
{
    sk_kernel *k = j->k;
    if (__atomic_load_n(&k->entry[2 * k->nentry - 1], __ATOMIC_ACQUIRE)) {
        return WEFT_OK;
    }
    uint8_t key[32];
    general_key(k, key);
    void *addrs[SK_MAX_ENTRY];
    void *const *live = NULL;
    weft_status s = get_variant(j->be_job, k, false, key, addrs, &live);
    if (s != WEFT_OK) {
        return s;
    }
    __atomic_store_n(&k->live[1], live, __ATOMIC_RELEASE);
    for (int i = 0; i < k->nentry; i++) {
        __atomic_store_n(&k->entry[k->nentry + i], addrs[i], __ATOMIC_RELEASE);
    }
    return WEFT_OK;
}

static weft_status cpu_compile(weft_executable *exe)
{
    rt_plan_t *pl;
    pending pd = {0};
    weft_status s = rt_plan(exe, &sk_target_cpu, get_kernel, &pd, &pl);
    if (s == WEFT_OK) {
        s = get_pending(exe, &pd);
    }
    if (s == WEFT_OK) {
        exe->be_state = pl;
    }
    return s;
}

/* ---- run --------------------------------------------------------------- */

/* The CPU's half of runtime/rt.h: arrays live in host memory, kernels see
 * their host pointers, phases run on the gang. */

/* An output: the caller's own array under weft_run_into, else new. */
static weft_status rt_out(rt_job *j, int o, weft_type type, int rank,
                          const int64_t *shape)
{
    j->out[o] = fe_ix_dest(j->ix, j->k->op, o, type, rank, shape, true);
    if (j->out[o]) {
        return WEFT_OK;
    }
    return fe_array_new_raw(j->ctx, "weft_run", type, rank, shape, &j->out[o]);
}

/* An auxiliary array: zeroed unless the driver fills it (host_filled) or
 * the kernel writes it first (RT_AUX_ANY): a foldSeg's 8 MB of offsets for
 * a million segments took a memset per run on the calling thread, about a
 * quarter of smvm's run on 16 cores. */
static weft_status rt_aux(rt_job *j, int a, weft_type type, int64_t n,
                          bool host_filled)
{
    if (host_filled || j->aux_start[a] == RT_AUX_ANY) {
        return fe_array_new_raw(j->ctx, "weft_run", type, 1, &n, &j->aux[a]);
    }
    return fe_array_new(j->ctx, "weft_run", type, 1, &n, &j->aux[a]);
}

static weft_status rt_addr(rt_job *j, weft_array *a, bool written,
                           uint64_t *ptrs)
{
    (void)j;
    /* An array another context computed on a GPU is read here. */
    weft_status s = written ? WEFT_OK : fe_array_host(a);
    for (int l = 0; l < a->nleaf; l++) {
        ptrs[l] = (uint64_t)(uintptr_t)a->data[l];
    }
    return s;
}

/* The grain of a phase of n items: a heavy kernel's phase over few items
 * is cut finer than CPU_GRAIN_HEAVY, so that every worker gets about 32
 * chunks and the last one to finish waits for at most a 32nd of its share
 * (n-body written with a while loop, 8192 bodies on 16 cores: chunks of
 * 128 left the cores idle for a quarter of the run), but never below
 * CPU_GRAIN_HEAVY_MIN, a multiple of the SPMD lanes.  A fold's whole
 * short rows (entry 0) go in chunks of a multiple of
 * SK_FOLD_ROWS_LANES_MAX rows. */
static int64_t phase_grain(const rt_job *j, int entry, int64_t n, int64_t grain)
{
    if (j->k->light && entry == 0 && j->k->skel &&
        j->k->skel->family == SK_FOLD && grain >= SK_FOLD_ROWS_LANES_MAX) {
        /* short rows, many to a chunk: whole groups of the SPMD entry's
         * lanes (spmd.c's sk_spmd_fold_rows), whose rest of a chunk goes
         * row by row */
        return (grain + SK_FOLD_ROWS_LANES_MAX - 1) / SK_FOLD_ROWS_LANES_MAX *
               SK_FOLD_ROWS_LANES_MAX;
    }
    if (j->k->light || grain <= CPU_GRAIN_HEAVY_MIN) {
        return grain;
    }
    int64_t fine = n / ((int64_t)cpu_gang_size(j->be) * 32);
    fine -= fine % CPU_GRAIN_HEAVY_MIN;
    if (fine < CPU_GRAIN_HEAVY_MIN) {
        fine = CPU_GRAIN_HEAVY_MIN;
    }
    return fine < grain ? fine : grain;
}

/* The address of entry point e of kernel k: from the JIT's table, where
 * a tier-up may have put the optimised code, else from k->entry (atomic:
 * cpu_general may be storing the general variant's, the same values, from
 * another run). */
static void *entry_addr(const sk_kernel *k, int e)
{
    int v = e >= k->nentry;
    void *const *live = __atomic_load_n(&k->live[v], __ATOMIC_ACQUIRE);
    if (live) {
        return __atomic_load_n(&live[e - v * k->nentry], __ATOMIC_ACQUIRE);
    }
    return __atomic_load_n(&k->entry[e], __ATOMIC_ACQUIRE);
}

static weft_status rt_run(rt_job *j, int n, const rt_phase *ph)
{
    cpu_phase p[CPU_GANG_MAX_PHASES];
    for (int i = 0; i < n && i < CPU_GANG_MAX_PHASES; i++) {
        void *e = entry_addr(j->k, ph[i].entry);
        p[i] = (cpu_phase){
            .kernel = (cpu_kernel_fn)e,
            .args = j->w,
            .n = ph[i].n,
            .grain = phase_grain(j, ph[i].entry, ph[i].n, ph[i].grain),
            .cancel = j->cancel};
    }
    return cpu_gang_run_phases(j->be, n, p);
}

/* Host work on the gang (rt_ops.host_phases). */
static weft_status rt_host_phases(rt_job *j, int n, const rt_host_phase *ph)
{
    cpu_phase p[CPU_GANG_MAX_PHASES];
    weft_status s = WEFT_OK;
    for (int at = 0; s == WEFT_OK && at < n; at += CPU_GANG_MAX_PHASES) {
        int m = n - at < CPU_GANG_MAX_PHASES ? n - at : CPU_GANG_MAX_PHASES;
        for (int i = 0; i < m; i++) {
            p[i] = (cpu_phase){.kernel = ph[at + i].fn,
                               .args = ph[at + i].arg,
                               .n = ph[at + i].n,
                               .grain = ph[at + i].grain,
                               .cancel = j->cancel};
        }
        s = cpu_gang_run_phases(j->be, m, p);
    }
    return s;
}

static weft_status rt_copy(rt_job *j, weft_array *dst, weft_array *src)
{
    (void)j;
    weft_status s = fe_array_host(src);
    for (int l = 0; s == WEFT_OK && l < dst->nleaf; l++) {
        if (dst->bytes[l] > 0) {
            memcpy(dst->data[l], src->data[l], dst->bytes[l]);
        }
    }
    return s;
}

static weft_status rt_read_error(rt_job *j, int64_t *word)
{
    *word = ((const int64_t *)j->aux[SK_ERR_AUX]->data[0])[0];
    return WEFT_OK;
}

static const rt_ops cpu_rt_ops = {
    .name = "cpu",
    .out = rt_out,
    .aux = rt_aux,
    .addr = rt_addr,
    .run = rt_run,
    .copy = rt_copy,
    .read_error = rt_read_error,
    .general = cpu_general,
    .host_phases = rt_host_phases,
};

static weft_status hook(void *user, fe_ix *ix, const fe_term *t,
                        weft_array **out, bool *handled)
{
    weft_executable *exe = user;
    sk_kernel *k = rt_plan_kernel(exe->be_state, t);
    if (!k) {
        return WEFT_OK;
    }
    *handled = true;
    cpu_gang *g = state_of(exe->ctx)->gang;
    /* kernels with a scalar while loop call the run's poll function (a
     * run without cancellation, from tests, gets one that never stops) */
    static fe_cancel never = {.poll = fe_cancel_poll};
    fe_cancel *c = fe_ix_cancel(ix);
    rt_backend rb = {.ops = &cpu_rt_ops,
                     .be = g,
                     .workers = cpu_gang_size(g),
                     .grain = k->light ? CPU_GRAIN : CPU_GRAIN_HEAVY,
                     .chunk_min = CPU_GRAIN,
                     .be_job = exe,
                     .cancel_word = (uint64_t)(uintptr_t)(c ? c : &never)};
    return rt_exec(exe->ctx, &rb, ix, k, out);
}

static weft_status cpu_run(weft_executable *exe, weft_array *const *in,
                           weft_array **out, fe_cancel *cancel,
                           weft_array *const *into)
{
    if (!cpu_jit_runnable(state_of(exe->ctx)->jit)) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft_run: this context compiles for another CPU "
                        "(target_cpu) and cannot run kernels");
    }
    return fe_interp_hooked(exe->ctx, &exe->core, in, out, cancel, into, hook,
                            exe);
}

static void cpu_dump_plan(const weft_executable *exe, FILE *out)
{
    rt_plan_dump(exe->be_state, out);
}

static void cpu_exe_free(weft_executable *exe)
{
    (void)exe; /* everything lives in the executable's arena */
}

const fe_backend fe_backend_cpu = {
    .name = "cpu",
    .context_init = cpu_context_init,
    .context_fini = cpu_context_fini,
    .compile = cpu_compile,
    .run = cpu_run,
    .exe_free = cpu_exe_free,
    .stats = cpu_stats,
    .dump_plan = cpu_dump_plan,
    .wait_optimised = cpu_wait_optimised,
    .probe = cpu_probe,
};

#endif /* WEFT_HAVE_LLVM */
