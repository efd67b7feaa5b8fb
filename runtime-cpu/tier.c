/*
 * runtime-cpu/tier.c: the CPU's half of tiered compilation (jit.c,
 * "Tiers"): the quick code of a fresh kernel, and the job that the
 * background worker (runtime/tier.c, shared with the ptx backend) runs
 * for its optimised code.
 *
 * The quick code (cpu_tier_emit_quick) is the optimised IR emitted with
 * LLVM's quick code generator (CodeGenOpt::None) and linked under the
 * kernel's names with "q" appended, so that both kinds of code live in
 * the jit's one dylib.  The job (cpu_tier_job) owns the optimised module
 * and its LLVM context; the worker emits it at -O3 (tier_up), writes the
 * object to the disk cache, links it under the kernel's own names and
 * stores the new addresses into its entries' tables (cpu_tier_run), which
 * callers that asked for them (cpu_jit_get_live) read at every run.  A
 * worker that cpu_jit_free leaves with work frees the jit when done
 * (tier_orphaned; jit.c, "Freeing").
 */
#ifdef WEFT_HAVE_LLVM

#include <stdio.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "cpu.h"

void (*cpu_jit_tier_hook)(void);

/* The name of entry point i of a kernel's quick code: the symbol with "q"
 * appended, so that it and the optimised code can live in one dylib. */
static void quick_name(const char *symbol, char buf[CPU_SYMBOL_MAX])
{
    snprintf(buf, CPU_SYMBOL_MAX, "%sq", symbol);
}

void cpu_tier_job_release(void *user, rt_tier_job *job)
{
    cpu_jit *j = user;
    cpu_tier_job *t = (cpu_tier_job *)job;
    if (t->m) {
        LLVMDisposeModule(t->m);
    }
    if (t->llctx) {
        LLVMContextDispose(t->llctx);
    }
    fe_free(j->ctx, t->symbols, (size_t)t->nsym * sizeof *t->symbols);
    fe_free(j->ctx, t->es, (size_t)t->ne * sizeof *t->es);
    fe_free(j->ctx, t, sizeof *t);
}

void cpu_tier_job_free(cpu_jit *j, cpu_tier_job *t)
{
    cpu_tier_job_release(j, &t->link);
}

/* A job for the background thread: m (optimised) and its context, whose
 * ownership it takes when it returns non-NULL; the caller sets its
 * entries (tier_queue). */
cpu_tier_job *cpu_tier_job_new(cpu_jit *j, const uint8_t key[32],
                               LLVMContextRef llctx, LLVMModuleRef m,
                               const char *const *symbols, int nsym)
{
    cpu_tier_job *t = fe_calloc(j->ctx, sizeof *t);
    if (!t) {
        return NULL;
    }
    memcpy(t->key, key, 32);
    t->symbols = fe_calloc(j->ctx, (size_t)nsym * sizeof *t->symbols);
    if (!t->symbols) {
        fe_free(j->ctx, t, sizeof *t);
        return NULL;
    }
    for (int i = 0; i < nsym; i++) {
        snprintf(t->symbols[i], CPU_SYMBOL_MAX, "%s", symbols[i]);
    }
    t->nsym = nsym;
    t->llctx = llctx;
    t->m = m;
    return t;
}

/* Emit the quick code of the optimised module m (CodeGenOpt::None) and
 * link it into addrs: for CPU_TIER_QUICK_FIRST, a copy of m with the entry
 * points renamed (quick_name), m itself being kept for the optimised code;
 * for CPU_TIER_QUICK_ONLY, m itself under the kernel's own names. */
weft_status cpu_tier_emit_quick(cpu_jit *j, LLVMModuleRef m,
                                const char *const *symbols, int nsym,
                                void **addrs, double *ms)
{
    *ms = 0; /* nsym <= CPU_BATCH_SYMBOLS: request, get_many refuse more */
    bool copy = j->tier == CPU_TIER_QUICK_FIRST;
    LLVMModuleRef q = copy ? LLVMCloneModule(m) : m;
    if (!q) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY, "cpu_jit: cannot copy the "
                                                "kernel module");
    }
    char names[CPU_BATCH_SYMBOLS][CPU_SYMBOL_MAX];
    const char *np[CPU_BATCH_SYMBOLS];
    for (int i = 0; i < nsym; i++) {
        np[i] = symbols[i];
        if (copy) {
            quick_name(symbols[i], names[i]);
            LLVMValueRef f = LLVMGetNamedFunction(q, symbols[i]);
            LLVMSetValueName2(f, names[i], strlen(names[i]));
            np[i] = names[i];
        }
    }
    LLVMMemoryBufferRef obj = NULL;
    weft_status s =
        cpu_jit_emit(j, q, LLVMCodeGenLevelNone, symbols[0], false, &obj, ms);
    if (copy) {
        LLVMDisposeModule(q);
    }
    if (s == WEFT_OK) {
        s = cpu_jit_link(j, obj, np, nsym, addrs);
    }
    return s;
}

/* The background thread's work on one job: emit t's module at -O3, write
 * it to the disk cache, link it into addrs.  *written: bytes written to
 * disk; *ms: time spent emitting. */
static weft_status tier_up(cpu_jit *j, cpu_tier_job *t, void **addrs,
                           uint64_t *written, double *ms)
{
    *written = 0;
    if (cpu_jit_tier_hook) {
        cpu_jit_tier_hook();
    }
    cpu_diag dg = {{0}};
    LLVMContextSetDiagnosticHandler(t->llctx, cpu_on_diagnostic, &dg);
    LLVMMemoryBufferRef obj = NULL;
    weft_status s = cpu_jit_emit(j, t->m, LLVMCodeGenLevelAggressive,
                                 t->symbols[0], true, &obj, ms);
    if (s == WEFT_OK && dg.msg[0]) {
        s = fe_error(WEFT_ERR_INTERNAL, "cpu_jit: LLVM: %s", dg.msg);
    }
    if (s) {
        if (obj) {
            LLVMDisposeMemoryBuffer(obj);
        }
        return s;
    }
    *written = rt_disk_store(&j->disk, t->key, LLVMGetBufferStart(obj),
                             LLVMGetBufferSize(obj));
    const char *np[CPU_BATCH_SYMBOLS];
    for (int i = 0; i < t->nsym; i++) {
        np[i] = t->symbols[i];
    }
    return cpu_jit_link(j, obj, np, t->nsym, addrs);
}

/* The worker's job (rt_tier_ops.run): job's optimised code, published
 * into its entries' tables; on failure they keep their quick code. */
weft_status cpu_tier_run(void *user, rt_tier_job *job)
{
    cpu_jit *j = user;
    cpu_tier_job *t = (cpu_tier_job *)job;
    void *addrs[CPU_BATCH_SYMBOLS];
    uint64_t written = 0;
    double ms = 0;
    weft_status s = tier_up(j, t, addrs, &written, &ms);
    if (s == WEFT_OK) {
        pthread_mutex_lock(&j->lock);
        int at = 0;
        for (int k = 0; k < t->ne; k++) {
            rt_kentry *e = t->es[k];
            void **ea = e->value;
            for (int i = 0; i < e->n; i++) {
                __atomic_store_n(&ea[i], addrs[at++], __ATOMIC_RELEASE);
            }
        }
        j->st.optimised++;
        j->st.optimise_ms += ms;
        j->st.disk_bytes_written += written;
        pthread_mutex_unlock(&j->lock);
    }
    return s;
}

/* Queue t for its ne entries es (lock held; each READY with quick code;
 * es fe_alloc'd, now t's).  False when no thread can be had: the caller
 * then runs the job itself, unlocked (cpu_tier_run_here). */
bool cpu_tier_queue(cpu_jit *j, rt_kentry **es, int ne, cpu_tier_job *t)
{
    t->es = es;
    t->ne = ne;
    return rt_tier_queue(&j->worker, &t->link);
}

void cpu_tier_run_here(cpu_jit *j, cpu_tier_job *t)
{
    rt_tier_run_here(&j->worker, &t->link);
}

weft_status cpu_jit_wait(cpu_jit *j)
{
    if (!j) {
        return WEFT_OK;
    }
    char msg[FE_MSG_MAX];
    weft_status s = rt_tier_wait(&j->worker, msg);
    return s != WEFT_OK ? fe_error_copy(s, msg) : WEFT_OK;
}

#endif /* WEFT_HAVE_LLVM */
