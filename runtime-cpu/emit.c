/*
 * runtime-cpu/emit.c: the CPU's LLVM pipeline, from a kernel's module to
 * linked machine code: prepare the module (entry points external,
 * everything else internal, the target's triple, layout and vector
 * width), optimise it (CG_CPU_PIPELINE, or CPU_HUGE_PIPELINE for huge
 * kernels, below), emit an object with the jit's own target machine at
 * the level asked, and add it to the LLJIT and look the entry points up.
 * Dumps (WEFT_DUMP=ir,opt-ir,asm,vec) are written on the way, and LLVM's
 * diagnostics are caught (cpu_on_diagnostic) so that nothing is printed.
 *
 * The jit (jit.c: caches, requests, tiers' scheduling) and the tiers
 * (tier.c: the quick code and the background job) both call this file;
 * it calls neither, so the three read top-down: jit.c -> tier.c ->
 * emit.c.
 *
 * Every LLVM call that can fail is checked; its message becomes the
 * request's message (WEFT_ERR_INTERNAL: a kernel LLVM rejects is a bug in
 * weft's code generators).
 */
#ifdef WEFT_HAVE_LLVM

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg.h"
#include "cpu.h"

/* ---- errors from LLVM ---- */

/* Take an LLVMErrorRef's message into the thread's last error. */
static weft_status llvm_error(LLVMErrorRef err, const char *what)
{
    char *m = LLVMGetErrorMessage(err);
    weft_status s = fe_error(WEFT_ERR_INTERNAL, "cpu_jit: %s: %s", what,
                             m ? m : "unknown LLVM error");
    LLVMDisposeErrorMessage(m);
    return s;
}

static weft_status llvm_message(char *m, const char *what)
{
    weft_status s = fe_error(WEFT_ERR_INTERNAL, "cpu_jit: %s: %s", what,
                             m && *m ? m : "unknown LLVM error");
    if (m) {
        LLVMDisposeMessage(m);
    }
    return s;
}

void cpu_on_diagnostic(LLVMDiagnosticInfoRef info, void *user)
{
    cpu_diag *d = user;
    if (LLVMGetDiagInfoSeverity(info) == LLVMDSError && !d->msg[0]) {
        char *m = LLVMGetDiagInfoDescription(info);
        snprintf(d->msg, sizeof d->msg, "%s", m ? m : "");
        LLVMDisposeMessage(m);
    }
}

/* ---- dumps ---- */

/* fopen dump_dir/name+suffix for writing, or NULL (a dump that cannot be
 * written is skipped: it never fails a compilation). */
static FILE *dump_open(cpu_jit *j, const char *name, const char *suffix)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s%s", j->dump_dir, name, suffix);
    if (n < 0 || (size_t)n >= sizeof path) {
        return NULL;
    }
    return fopen(path, "w");
}

static void dump_module(cpu_jit *j, LLVMModuleRef m, const char *name,
                        const char *suffix)
{
    FILE *f = dump_open(j, name, suffix);
    if (!f) {
        return;
    }
    char *text = LLVMPrintModuleToString(m);
    if (text) {
        fputs(text, f);
        LLVMDisposeMessage(text);
    }
    fclose(f);
}

/* Whether loop metadata node md (a metadata-as-value) says the loop was
 * vectorised. */
static bool loop_is_vectorised(LLVMValueRef md)
{
    unsigned n = LLVMGetMDNodeNumOperands(md);
    if (n == 0 || n > 64) {
        return false;
    }
    LLVMValueRef ops[64];
    LLVMGetMDNodeOperands(md, ops);
    for (unsigned i = 0; i < n; i++) {
        if (!ops[i] || !LLVMIsAMDNode(ops[i])) {
            continue;
        }
        unsigned k = LLVMGetMDNodeNumOperands(ops[i]);
        if (k == 0 || k > 8) {
            continue;
        }
        LLVMValueRef sub[8];
        LLVMGetMDNodeOperands(ops[i], sub);
        unsigned len = 0;
        const char *s = sub[0] ? LLVMGetMDString(sub[0], &len) : NULL;
        if (s && len == 22 && memcmp(s, "llvm.loop.isvectorized", 22) == 0) {
            return true;
        }
    }
    return false;
}

/* Append one line per defined function to name.vec.txt: whether its loops
 * were vectorised and its widest vector type. */
static void dump_vec_report(cpu_jit *j, LLVMModuleRef m, const char *name)
{
    FILE *f = dump_open(j, name, ".vec.txt");
    if (!f) {
        return;
    }
    LLVMContextRef c = LLVMGetModuleContext(m);
    unsigned loop_kind = LLVMGetMDKindIDInContext(c, "llvm.loop", 9);
    fprintf(f, "# %s, cpu %s\n", j->triple, j->cpu);
    for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn;
         fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn)) {
            continue;
        }
        int vloops = 0;
        unsigned width = 0;
        LLVMTypeRef widest = NULL;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in;
                 in = LLVMGetNextInstruction(in)) {
                LLVMTypeRef t = LLVMTypeOf(in);
                if (LLVMGetInstructionOpcode(in) == LLVMStore) {
                    t = LLVMTypeOf(LLVMGetOperand(in, 0));
                }
                if (LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
                    LLVMGetVectorSize(t) > width) {
                    width = LLVMGetVectorSize(t);
                    widest = t;
                }
                if (LLVMIsATerminatorInst(in) && LLVMHasMetadata(in)) {
                    LLVMValueRef md = LLVMGetMetadata(in, loop_kind);
                    if (md) {
                        vloops += loop_is_vectorised(md);
                    }
                }
            }
        }
        size_t n;
        const char *fname = LLVMGetValueName2(fn, &n);
        char *ty = widest ? LLVMPrintTypeToString(widest) : NULL;
        LLVMAttributeRef spmd = LLVMGetStringAttributeAtIndex(
            fn, LLVMAttributeFunctionIndex, "weft-spmd", 9);
        if (spmd) {
            /* emitted over vector lanes by skeletons-ir/spmd.c */
            unsigned ln;
            const char *lanes = LLVMGetStringAttributeValue(spmd, &ln);
            fprintf(f, "%s: SPMD-vectorised, %.*s lanes, widest %s\n", fname,
                    (int)ln, lanes, ty ? ty : "?");
        } else if (vloops > 0 && !widest) {
            /* The loop vectoriser marks loops it only interleaved, too. */
            fprintf(f, "%s: not vectorised (loops interleaved, width 1)\n",
                    fname);
        } else if (vloops > 0) {
            fprintf(f, "%s: vectorised, width %u (%s)\n", fname, width,
                    ty ? ty : "?");
        } else if (widest) {
            fprintf(f,
                    "%s: SLP-vectorised, widest %s, loops not "
                    "vectorised\n",
                    fname, ty ? ty : "?");
        } else {
            fprintf(f, "%s: not vectorised\n", fname);
        }
        if (ty) {
            LLVMDisposeMessage(ty);
        }
    }
    fclose(f);
}

/* ---- compilation ---- */

bool cpu_symbol_listed(const char *name, size_t n, const char *const *symbols,
                       int nsym)
{
    for (int i = 0; i < nsym; i++) {
        if (strlen(symbols[i]) == n && memcmp(symbols[i], name, n) == 0) {
            return true;
        }
    }
    return false;
}

/* Prepare m: every entry point defined, everything else internal, the
 * target's triple and layout, the vector width preference. */
static weft_status prepare(cpu_jit *j, LLVMModuleRef m, LLVMTargetMachineRef tm,
                           const char *const *symbols, int nsym)
{
    for (int i = 0; i < nsym; i++) {
        LLVMValueRef f = LLVMGetNamedFunction(m, symbols[i]);
        if (!f || LLVMIsDeclaration(f)) {
            return fe_error(WEFT_ERR_INTERNAL,
                            "cpu_jit: the kernel module defines no function "
                            "%s",
                            symbols[i]);
        }
        LLVMSetLinkage(f, LLVMExternalLinkage);
        LLVMSetVisibility(f, LLVMDefaultVisibility);
    }
    char width[8];
    snprintf(width, sizeof width, "%d", j->prefer_vector_width);
    LLVMContextRef c = LLVMGetModuleContext(m);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
         f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f)) {
            continue;
        }
        size_t n;
        const char *name = LLVMGetValueName2(f, &n);
        if (!cpu_symbol_listed(name, n, symbols, nsym)) {
            LLVMSetLinkage(f, LLVMInternalLinkage);
        }
        if (j->prefer_vector_width) {
            LLVMAttributeRef a = LLVMCreateStringAttribute(
                c, "prefer-vector-width", 19, width, (unsigned)strlen(width));
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
        }
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g)) {
        if (!LLVMIsDeclaration(g)) {
            LLVMSetLinkage(g, LLVMInternalLinkage);
        }
    }
    LLVMSetTarget(m, j->triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(m, td);
    LLVMDisposeTargetData(td);
    char *msg = NULL;
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        return llvm_message(msg, "the kernel module does not verify");
    }
    LLVMDisposeMessage(msg);
    return WEFT_OK;
}

/* A target machine for j's target at code generation level `level`, or
 * NULL with the last error set. */
static LLVMTargetMachineRef target_machine(cpu_jit *j,
                                           LLVMCodeGenOptLevel level)
{
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(j->target, j->triple, j->cpu, j->features,
                                level, LLVMRelocPIC, LLVMCodeModelSmall);
    if (!tm) {
        fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                 "cpu_jit: cannot make a target machine for %s, cpu %s",
                 j->triple, j->cpu);
    }
    return tm;
}

/*
 * Huge kernels.  A generated program can make one element function of a
 * million instructions, and several of LLVM's passes and its -O3 code
 * generation take time superlinear in the size of a function (minutes at
 * 20,000 conditionals; the loop and SLP vectorisers already take a
 * second or more at 10,000 straight-line instructions).  A module of more
 * than CPU_HUGE_INSTRUCTIONS instructions is therefore optimised by
 * CPU_HUGE_PIPELINE (passes linear in practice: scalar replacement, early
 * CSE with its simplifications, dead code elimination; no instcombine,
 * whose known-bits queries took a third of the time of a 10^5-deep chain
 * of conditionals, no loop passes, vectorisers or CFG simplification) and
 * emitted by the quick code generator only, as its final code: no
 * background -O3 tier-up, nothing written to the disk cache (which holds
 * optimised code only).  Such a kernel's loop is one of a few iterations
 * around a huge body, so the loop optimisations would gain little; its
 * module is built again without SPMD code (runtime-cpu/backend.c): half
 * the size, and scalar instructions take LLVM's fast instruction
 * selector, vector ones its SelectionDAG.
 */
#define CPU_HUGE_INSTRUCTIONS 5000
#define CPU_HUGE_PIPELINE "function(sroa,early-cse,adce)"

/* Whether m holds more than CPU_HUGE_INSTRUCTIONS instructions: in one
 * function, or when `total`, in all (a kernel may be many small functions,
 * one per fused map; a batch of small kernels, see "Many kernels", is no
 * huge kernel). */
bool cpu_module_huge(LLVMModuleRef m, bool total)
{
    size_t n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
         f = LLVMGetNextFunction(f)) {
        size_t k = cg_function_instructions(f, CPU_HUGE_INSTRUCTIONS);
        n = total ? n + k : k;
        if (n > CPU_HUGE_INSTRUCTIONS) {
            return true;
        }
    }
    return false;
}

/*
 * Constants of huge kernels.  LLVM's code generator keeps a function's
 * floating-point and vector constants in a pool, which it searches
 * linearly for each constant it adds (MachineConstantPool::
 * getConstantPoolIndex): quadratic time in a huge function of distinct
 * constants (half the time of a 30,000-term chain of f64 additions).  So
 * the constants of those kinds in a huge module move into one table of
 * its own, a global, loaded from where they are used: a splat vector as
 * its element, loaded and broadcast.  The table is not marked constant,
 * so that nothing folds the loads back.  Left in place: integer scalars
 * (immediates, never pooled), and the operands of calls (an intrinsic may
 * need a constant there) and of phis, switches and address arithmetic.
 */

/* Pointer to index, open addressing (the constants are uniqued by LLVM,
 * so the pointer is the value). */
typedef struct const_map {
    LLVMValueRef *key;
    uint32_t *at;
    size_t cap, n;
} const_map;

static bool const_map_grow(cpu_jit *j, const_map *m)
{
    size_t nc = m->cap ? 2 * m->cap : 1024;
    LLVMValueRef *nk = fe_calloc(j->ctx, nc * sizeof *nk);
    uint32_t *na = fe_calloc(j->ctx, nc * sizeof *na);
    if (!nk || !na) {
        fe_free(j->ctx, nk, nc * sizeof *nk);
        fe_free(j->ctx, na, nc * sizeof *na);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->key[i]) {
            size_t h = ((uintptr_t)m->key[i] >> 4) * 0x9E3779B97F4A7C15u;
            size_t k = h & (nc - 1);
            while (nk[k]) {
                k = (k + 1) & (nc - 1);
            }
            nk[k] = m->key[i];
            na[k] = m->at[i];
        }
    }
    fe_free(j->ctx, m->key, m->cap * sizeof *m->key);
    fe_free(j->ctx, m->at, m->cap * sizeof *m->at);
    m->key = nk;
    m->at = na;
    m->cap = nc;
    return true;
}

/* The slot of c in m (inserted with index m->n when absent), or NULL when
 * out of memory. */
static uint32_t *const_map_slot(cpu_jit *j, const_map *m, LLVMValueRef c)
{
    if (2 * (m->n + 1) > m->cap && !const_map_grow(j, m)) {
        return NULL;
    }
    size_t h = ((uintptr_t)c >> 4) * 0x9E3779B97F4A7C15u;
    size_t k = h & (m->cap - 1);
    while (m->key[k] && m->key[k] != c) {
        k = (k + 1) & (m->cap - 1);
    }
    if (!m->key[k]) {
        m->key[k] = c;
        m->at[k] = (uint32_t)m->n++;
    }
    return &m->at[k];
}

/* What of operand c goes into the table: c itself, or the element of a
 * splat vector (*splat set); NULL when c stays. */
static LLVMValueRef tabled(LLVMValueRef c, bool *splat)
{
    *splat = false;
    if (LLVMIsAConstantFP(c)) {
        return c;
    }
    if (!LLVMIsAConstantDataVector(c) && !LLVMIsAConstantVector(c)) {
        return NULL;
    }
    LLVMTypeRef t = LLVMTypeOf(c);
    LLVMTypeRef et = LLVMGetElementType(t);
    if (LLVMGetTypeKind(et) == LLVMIntegerTypeKind &&
        LLVMGetIntTypeWidth(et) == 1) {
        return NULL; /* masks: made in mask registers */
    }
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef first = LLVMGetAggregateElement(c, 0);
    bool same =
        first && (LLVMIsAConstantInt(first) || LLVMIsAConstantFP(first));
    for (unsigned i = 1; same && i < n; i++) {
        same = LLVMGetAggregateElement(c, i) == first;
    }
    *splat = same;
    return same ? first : c;
}

static bool operands_stay(LLVMValueRef in)
{
    switch (LLVMGetInstructionOpcode(in)) {
    case LLVMCall:
    case LLVMPHI:
    case LLVMSwitch:
    case LLVMGetElementPtr:
    case LLVMAlloca:
    case LLVMShuffleVector:
    case LLVMExtractElement:
    case LLVMInsertElement:
    case LLVMExtractValue:
    case LLVMInsertValue: return true;
    default: return false;
    }
}

/* What the passes of table_constants share. */
typedef struct tabling {
    cpu_jit *j;
    const_map map;
    LLVMValueRef *elts; /* the table's entries, by index */
    size_t cap;
    bool failed;        /* out of memory */
    LLVMBuilderRef bld; /* second pass */
    LLVMTypeRef ty;     /* the table's type */
    LLVMValueRef table;
} tabling;

/* Call fn for every operand of m that goes into the table: c, what of it
 * goes there (tabled). */
static void each_tabled(LLVMModuleRef m,
                        void (*fn)(tabling *t, LLVMValueRef in, unsigned k,
                                   LLVMValueRef c, LLVMValueRef e, bool splat),
                        tabling *t)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f && !t->failed;
         f = LLVMGetNextFunction(f)) {
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b;
             b = LLVMGetNextBasicBlock(b)) {
            for (LLVMValueRef in = LLVMGetFirstInstruction(b); in;
                 in = LLVMGetNextInstruction(in)) {
                int nop = operands_stay(in) ? 0 : LLVMGetNumOperands(in);
                for (int k = 0; k < nop && !t->failed; k++) {
                    bool splat;
                    LLVMValueRef c = LLVMGetOperand(in, (unsigned)k);
                    LLVMValueRef e = tabled(c, &splat);
                    if (e) {
                        fn(t, in, (unsigned)k, c, e, splat);
                    }
                }
            }
        }
    }
}

/* First pass: the table's entries, in order of first use. */
static void collect(tabling *t, LLVMValueRef in, unsigned k, LLVMValueRef c,
                    LLVMValueRef e, bool splat)
{
    (void)in;
    (void)k;
    (void)c;
    (void)splat;
    size_t had = t->map.n;
    if (!const_map_slot(t->j, &t->map, e)) {
        t->failed = true;
        return;
    }
    if (t->map.n == had) {
        return;
    }
    if (t->map.n > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 1024;
        LLVMValueRef *ne = fe_realloc(t->j->ctx, t->elts, t->cap * sizeof *ne,
                                      nc * sizeof *ne);
        if (!ne) {
            t->failed = true;
            return;
        }
        t->elts = ne;
        t->cap = nc;
    }
    t->elts[t->map.n - 1] = e;
}

/* Second pass: the operand loads its constant (a splat: its element,
 * broadcast). */
static void replace(tabling *t, LLVMValueRef in, unsigned k, LLVMValueRef c,
                    LLVMValueRef e, bool splat)
{
    uint32_t at = *const_map_slot(t->j, &t->map, e); /* present */
    LLVMBuilderRef b = t->bld;
    LLVMPositionBuilderBefore(b, in);
    LLVMValueRef p = LLVMBuildStructGEP2(b, t->ty, t->table, at, "");
    LLVMValueRef v = LLVMBuildLoad2(b, LLVMTypeOf(e), p, "");
    if (splat) {
        LLVMTypeRef vt = LLVMTypeOf(c);
        LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(vt));
        v = LLVMBuildInsertElement(b, LLVMGetPoison(vt), v,
                                   LLVMConstInt(i32, 0, 0), "");
        v = LLVMBuildShuffleVector(
            b, v, LLVMGetPoison(vt),
            LLVMConstNull(LLVMVectorType(i32, LLVMGetVectorSize(vt))), "");
    }
    LLVMSetOperand(in, k, v);
}

/* Move m's pooled constants into a table (see above).  Out of memory
 * leaves them in place: only time is lost. */
static void table_constants(cpu_jit *j, LLVMModuleRef m)
{
    tabling t = {.j = j};
    each_tabled(m, collect, &t);
    size_t n = t.map.n;
    LLVMTypeRef *types = NULL;
    if (!t.failed && n > 0 && n <= UINT32_MAX / 2) {
        types = fe_alloc(j->ctx, n * sizeof *types);
    }
    if (types) {
        LLVMContextRef c = LLVMGetModuleContext(m);
        for (size_t i = 0; i < n; i++) {
            types[i] = LLVMTypeOf(t.elts[i]);
        }
        t.ty = LLVMStructTypeInContext(c, types, (unsigned)n, 0);
        fe_free(j->ctx, types, n * sizeof *types);
        t.table = LLVMAddGlobal(m, t.ty, "weft.constants");
        LLVMSetInitializer(t.table,
                           LLVMConstStructInContext(c, t.elts, (unsigned)n, 0));
        LLVMSetLinkage(t.table, LLVMInternalLinkage);
        t.bld = LLVMCreateBuilderInContext(c);
        each_tabled(m, replace, &t);
        LLVMDisposeBuilder(t.bld);
    }
    fe_free(j->ctx, t.elts, t.cap * sizeof *t.elts);
    fe_free(j->ctx, t.map.key, t.map.cap * sizeof *t.map.key);
    fe_free(j->ctx, t.map.at, t.map.cap * sizeof *t.map.at);
}

/* Prepare and optimise m (CG_CPU_PIPELINE, or CPU_HUGE_PIPELINE when huge)
 * for j's target, dumping the IR as asked.  *ms gets the time spent in the
 * passes. */
weft_status cpu_jit_optimise(cpu_jit *j, LLVMModuleRef m,
                             const char *const *symbols, int nsym, bool huge,
                             double *ms)
{
    *ms = 0;
    LLVMTargetMachineRef tm = target_machine(j, LLVMCodeGenLevelAggressive);
    if (!tm) {
        return WEFT_ERR_BACKEND_UNAVAILABLE;
    }
    LLVMPassBuilderOptionsRef po = NULL;
    weft_status s = prepare(j, m, tm, symbols, nsym);
    if (s) {
        goto out;
    }
    const char *name = symbols[0];
    if (j->dump & CPU_DUMP_IR) {
        dump_module(j, m, name, ".ll");
    }
    uint64_t t0 = fe_clock_ns();
    po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
    LLVMErrorRef e =
        LLVMRunPasses(m, huge ? CPU_HUGE_PIPELINE : CG_CPU_PIPELINE, tm, po);
    if (e) {
        s = llvm_error(e, "optimisation failed");
        goto out;
    }
    if (huge) {
        table_constants(j, m);
    }
    *ms = (double)(fe_phase_end(j->ctx, FE_PHASE_LLVM_OPT, t0, "llvm.opt",
                                "\"kernel\":\"%s\"", name) -
                   t0) /
          1e6;
    if (j->dump & CPU_DUMP_OPT_IR) {
        dump_module(j, m, name, ".opt.ll");
    }
    if (j->dump & CPU_DUMP_VEC) {
        dump_vec_report(j, m, name);
    }
out:
    if (po) {
        LLVMDisposePassBuilderOptions(po);
    }
    LLVMDisposeTargetMachine(tm);
    return s;
}

/* Emit the optimised module m as an object into *obj (the caller owns
 * it), with code generation at `level`; the assembly too when dumping
 * (named after `name`).  *ms gets the time spent emitting the object,
 * which counts as the context's FE_PHASE_LLVM_CODEGEN unless `background`
 * (the tier-up thread's, optimise_ms). */
weft_status cpu_jit_emit(cpu_jit *j, LLVMModuleRef m, LLVMCodeGenOptLevel level,
                         const char *name, bool background,
                         LLVMMemoryBufferRef *obj, double *ms)
{
    *obj = NULL;
    *ms = 0;
    LLVMTargetMachineRef tm = target_machine(j, level);
    if (!tm) {
        return WEFT_ERR_BACKEND_UNAVAILABLE;
    }
    weft_status s = WEFT_OK;
    if (j->dump & CPU_DUMP_ASM) {
        /* Code generation changes the module a little: print the assembly
         * of a copy, and emit the object from the original. */
        LLVMModuleRef copy = LLVMCloneModule(m);
        LLVMMemoryBufferRef text = NULL;
        char *err = NULL;
        if (copy && !LLVMTargetMachineEmitToMemoryBuffer(
                        tm, copy, LLVMAssemblyFile, &err, &text)) {
            FILE *f = dump_open(j, name, ".s");
            if (f) {
                fwrite(LLVMGetBufferStart(text), 1, LLVMGetBufferSize(text), f);
                fclose(f);
            }
            LLVMDisposeMemoryBuffer(text);
        }
        LLVMDisposeMessage(err);
        if (copy) {
            LLVMDisposeModule(copy);
        }
    }
    uint64_t t0 = fe_clock_ns();
    char *err = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &err, obj)) {
        *obj = NULL;
        s = llvm_message(err, "cannot emit the object file");
    } else {
        LLVMDisposeMessage(err);
        uint64_t t1 = fe_phase_end(
            j->ctx, background ? FE_PHASE_NONE : FE_PHASE_LLVM_CODEGEN, t0,
            "llvm.codegen",
            "\"kernel\":\"%s\",\"level\":\"%s\",\"thread\":\"%s\"", name,
            level == LLVMCodeGenLevelNone ? "quick" : "O3",
            background ? "background" : "caller");
        *ms = (double)(t1 - t0) / 1e6;
    }
    LLVMDisposeTargetMachine(tm);
    return s;
}

/* Add object obj (ownership taken) to the JIT and look up the entry
 * points. */
weft_status cpu_jit_link(cpu_jit *j, LLVMMemoryBufferRef obj,
                         const char *const *symbols, int nsym, void **addrs)
{
    weft_status s = WEFT_OK;
    pthread_mutex_lock(&j->link);
    uint64_t t0 = fe_clock_ns();
    /* A tracker of its own, so that a kernel that fails to link leaves no
     * half-defined symbols behind and can be tried again. */
    LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(
        LLVMOrcLLJITGetMainJITDylib(j->jit));
    LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(j->jit, rt, obj);
    if (e) {
        s = llvm_error(e, "cannot add the kernel's object file");
        goto out;
    }
    for (int i = 0; i < nsym; i++) {
        LLVMOrcExecutorAddress a = 0;
        pthread_mutex_lock(&j->session_lock);
        j->session_msg[0] = '\0';
        pthread_mutex_unlock(&j->session_lock);
        e = LLVMOrcLLJITLookup(j->jit, &a, symbols[i]);
        if (e) {
            char *m = LLVMGetErrorMessage(e);
            pthread_mutex_lock(&j->session_lock);
            s = fe_error(WEFT_ERR_INTERNAL, "cpu_jit: cannot link %s: %s%s%s",
                         symbols[i], j->session_msg,
                         j->session_msg[0] ? "; " : "", m ? m : "");
            pthread_mutex_unlock(&j->session_lock);
            LLVMDisposeErrorMessage(m);
            goto out;
        }
        addrs[i] = (void *)(uintptr_t)a;
    }
out:
    if (s != WEFT_OK) {
        LLVMErrorRef r = LLVMOrcResourceTrackerRemove(rt);
        if (r) {
            LLVMConsumeError(r);
        }
    }
    /* On success the code stays: a released tracker hands its resources
     * to the dylib's default tracker. */
    LLVMOrcReleaseResourceTracker(rt);
    fe_phase_end(j->ctx, FE_PHASE_JIT_LINK, t0, "jit.link",
                 "\"kernel\":\"%s\",\"ok\":%s", symbols[0],
                 s == WEFT_OK ? "true" : "false");
    pthread_mutex_unlock(&j->link);
    return s;
}

#endif /* WEFT_HAVE_LLVM */
