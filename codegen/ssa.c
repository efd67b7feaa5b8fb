/*
 * codegen/ssa.c: building one function in SSA form without an SSA pass of
 * our own.
 *
 * Skeletons write straight-line code with a few structured shapes: counted
 * loops, if/else, and the occasional variable updated in a loop.  The
 * first two are built here directly in SSA form, with phis placed where
 * control flow joins (the join of an if, the head of a loop).  Variables
 * that change are allocas in the entry block; LLVM's mem2reg / SROA turn
 * them into SSA values at the start of any optimisation pipeline, which is
 * the simplest way to get the on-the-fly SSA construction of seed 003
 * without reimplementing it.
 *
 * The loop is the rotated, canonical form that LLVM's vectoriser expects:
 *     guard:  br (start < end), body, exit
 *     body:   i = phi [start, guard], [i + 1, latch] ... ;
 *     latch:  i1 = add nsw i, 1; br (i1 < end), body, exit
 * The increment carries nsw but not nuw, since a skeleton may count up
 * from a negative start; nsw alone lets SCEV compute the trip count.
 */
#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode */

#include "cg.h"

/* Start function `name` (see cg.h). */
weft_status cg_fn_begin(cg_fn *fn, weft_context *ctx, const cg_target *t,
                        fe_arena *arena, LLVMModuleRef mod, const char *name,
                        LLVMTypeRef fnty, uint32_t nvar)
{
    fn->ctx = ctx;
    fn->target = t;
    fn->arena = arena;
    fn->mod = mod;
    fn->llctx = LLVMGetModuleContext(mod);
    fn->nvar = nvar;
    fn->env = NULL;
    fn->aenv = NULL;
    fn->bound = NULL;
    fn->b = NULL;
    fn->array_of = NULL; /* the skeleton sets these after cg_fn_begin */
    fn->user = NULL;
    fn->fmf = 0;
    fn->ignored = NULL;
    fn->cond_depth = 0;
    fn->spec = NULL;
    fn->checked = false;
    fn->flat_reads = false; /* the skeleton sets it after cg_fn_begin */
    fn->flat_mask = NULL;
    fn->cold = false;
    fn->elem = NULL;
    fn->fail = NULL;
    fn->nsite = 0;
    fn->cancel = NULL; /* set by skeletons-ir/kernel.c for a cancel word */
    fn->hoisted = NULL;
    fn->nhoisted = 0;
    fn->stage_tile = 0;
    fn->stage = NULL;
    fn->inside = NULL;
    if (nvar > 0) {
        fn->env = fe_arena_alloc(arena, nvar * sizeof *fn->env);
        fn->aenv = fe_arena_alloc(arena, nvar * sizeof *fn->aenv);
        fn->bound = fe_arena_alloc(arena, nvar * sizeof *fn->bound);
        if (!fn->env || !fn->aenv || !fn->bound) {
            return fe_oom("weft_compile");
        }
    }
    fn->fn = LLVMAddFunction(mod, name, fnty);
    fn->entry = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "entry");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "body");
    fn->b = LLVMCreateBuilderInContext(fn->llctx);
    LLVMPositionBuilderAtEnd(fn->b, body);
    return WEFT_OK;
}

/* Finish the function (see cg.h). */
void cg_fn_end(cg_fn *fn)
{
    if (!fn->b) {
        return;
    }
    LLVMBasicBlockRef body = LLVMGetNextBasicBlock(fn->entry);
    LLVMPositionBuilderAtEnd(fn->b, fn->entry);
    LLVMBuildBr(fn->b, body);
    LLVMDisposeBuilder(fn->b);
    fn->b = NULL;
}

/* Checked mode (see cg.h). */
void cg_checked(cg_fn *fn)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    fn->checked = true;
    fn->elem = cg_alloca(fn, i64, "elem");
    fn->fail = cg_alloca(fn, i64, "fail");
    /* the entry block holds allocas and, after them, these stores */
    LLVMBuilderRef b = LLVMCreateBuilderInContext(fn->llctx);
    LLVMPositionBuilderAtEnd(b, fn->entry);
    LLVMBuildStore(b, cg_i64(fn, -1), fn->elem);
    LLVMBuildStore(b, cg_i64(fn, -1), fn->fail);
    LLVMDisposeBuilder(b);
}

void cg_set_elem(cg_fn *fn, LLVMValueRef i)
{
    if (fn->checked) {
        LLVMBuildStore(fn->b, i, fn->elem);
    }
}

void cg_check(cg_fn *fn, LLVMValueRef bad, int code, int op, weft_type type)
{
    if (!fn->checked) {
        return;
    }
    if (bad && LLVMIsAConstantInt(bad) && LLVMConstIntGetZExtValue(bad) == 0) {
        return;
    }
    LLVMBuilderRef B = fn->b;
    if (fn->spec) { /* a speculated side: reports where it is wanted only
                       (exp.c, "Deep conditionals") */
        bad = bad ? LLVMBuildAnd(B, bad, fn->spec, "") : fn->spec;
    }
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    int site = fn->nsite < CG_KEY_SITE_MAX ? fn->nsite : CG_KEY_SITE_MAX;
    fn->nsite++;
    uint64_t low = (uint64_t)site << 14 | (uint64_t)(code & 0xf) << 10 |
                   (uint64_t)(op & 0x3f) << 4 | (uint64_t)((int)type & 0xf);
    /* -1 (no element known) and anything past the field: none */
    LLVMValueRef none = cg_i64(fn, CG_KEY_ELEM_NONE);
    LLVMValueRef e = LLVMBuildLoad2(B, i64, fn->elem, "");
    e = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, e, none, ""), e, none,
                        "");
    LLVMValueRef key =
        LLVMBuildOr(B, LLVMBuildShl(B, e, cg_i64(fn, CG_KEY_ELEM_SHIFT), ""),
                    LLVMConstInt(i64, low, 0), "");
    if (bad) {
        key = LLVMBuildSelect(B, bad, key, cg_i64(fn, -1), "");
    }
    LLVMValueRef old = LLVMBuildLoad2(B, i64, fn->fail, "");
    LLVMValueRef args[2] = {old, key};
    LLVMValueRef m = cg_intrinsic(fn, "llvm.umin", &i64, 1, args, 2);
    LLVMBuildStore(B, m, fn->fail);
}

/* noalias on a parameter (see cg.h). */
void cg_noalias(cg_fn *fn, unsigned k)
{
    unsigned kind = LLVMGetEnumAttributeKindForName("noalias", 7);
    LLVMAddAttributeAtIndex(fn->fn, k + 1,
                            LLVMCreateEnumAttribute(fn->llctx, kind, 0));
}

/* Bind a scalar variable (see cg.h). */
weft_status cg_bind(cg_fn *fn, const fe_var *v, const cg_val *x)
{
    if (!v || v->id >= fn->nvar) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: codegen: variable outside the "
                        "environment");
    }
    cg_val c;
    weft_status s = cg_val_make(fn, x->n, &c);
    if (s != WEFT_OK) {
        return s;
    }
    for (int k = 0; k < x->n; k++) {
        c.v[k] = x->v[k];
    }
    fn->env[v->id] = c;
    fn->bound[v->id] = true;
    return WEFT_OK;
}

/* Bind an array variable (see cg.h). */
weft_status cg_bind_array(cg_fn *fn, const fe_var *v, const cg_array *a)
{
    if (!v || v->id >= fn->nvar) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: codegen: array variable outside the "
                        "environment");
    }
    cg_array *c = fe_arena_alloc(fn->arena, sizeof *c);
    if (!c) {
        return fe_oom("weft_compile");
    }
    *c = *a;
    fn->aenv[v->id] = c;
    return WEFT_OK;
}

/* Open a counted loop (see cg.h). */
void cg_loop_begin(cg_fn *fn, cg_loop *l, LLVMValueRef start, LLVMValueRef end,
                   LLVMValueRef *i)
{
    LLVMBasicBlockRef guard = LLVMGetInsertBlock(fn->b);
    l->body = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "loop");
    l->exit = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "loop.exit");
    l->end = end;
    l->scalar = fn->cold;
    LLVMValueRef go = LLVMBuildICmp(fn->b, LLVMIntSLT, start, end, "");
    LLVMBuildCondBr(fn->b, go, l->body, l->exit);
    LLVMPositionBuilderAtEnd(fn->b, l->body);
    l->i = LLVMBuildPhi(fn->b, LLVMInt64TypeInContext(fn->llctx), "i");
    LLVMAddIncoming(l->i, &start, &guard, 1);
    *i = l->i;
}

/* Mark a loop's back-edge br with a loop ID holding prop (see cg.h). */
void cg_loop_id(cg_fn *fn, LLVMValueRef br, LLVMMetadataRef prop)
{
    cg_loop_props(fn, br, &prop, 1);
}

/* The same with n (1 to 3) properties (see cg.h). */
void cg_loop_props(cg_fn *fn, LLVMValueRef br, const LLVMMetadataRef *prop,
                   int n)
{
    LLVMContextRef c = fn->llctx;
    LLVMMetadataRef self = LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef ops[4] = {self};
    n = n < 1 ? 1 : n > 3 ? 3 : n;
    for (int k = 0; k < n; k++) {
        ops[k + 1] = prop[k];
    }
    LLVMMetadataRef id = LLVMMDNodeInContext2(c, ops, (size_t)n + 1);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c, "llvm.loop", 9),
                    LLVMMetadataAsValue(c, id));
}

/* For a loop the IR vectorisers must leave alone (asked, or on a target
 * with cg_target.scalar_loops), mark the back-edge br with a loop ID
 * saying llvm.loop.vectorize.enable false. */
static void scalar_loop(cg_fn *fn, LLVMValueRef br, bool asked)
{
    if (!asked && (!fn->target || !fn->target->scalar_loops)) {
        return;
    }
    LLVMContextRef c = fn->llctx;
    LLVMMetadataRef kv[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.vectorize.enable", 26),
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(c), 0, 0))};
    cg_loop_id(fn, br, LLVMMDNodeInContext2(c, kv, 2));
}

/* Close a counted loop (see cg.h). */
void cg_loop_end(cg_fn *fn, cg_loop *l)
{
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(fn->b);
    LLVMValueRef next = LLVMBuildNSWAdd(fn->b, l->i, cg_i64(fn, 1), "");
    LLVMValueRef go = LLVMBuildICmp(fn->b, LLVMIntSLT, next, l->end, "");
    scalar_loop(fn, LLVMBuildCondBr(fn->b, go, l->body, l->exit), l->scalar);
    LLVMAddIncoming(l->i, &next, &latch, 1);
    LLVMPositionBuilderAtEnd(fn->b, l->exit);
}

/* Open an if (see cg.h). */
void cg_if_begin(cg_fn *fn, cg_if *f, LLVMValueRef c)
{
    f->then_bb = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "then");
    f->else_bb = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "else");
    f->join_bb = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "join");
    f->then_end = f->else_end = NULL;
    f->in_else = false;
    f->br = LLVMBuildCondBr(fn->b, c, f->then_bb, f->else_bb);
    LLVMPositionBuilderAtEnd(fn->b, f->then_bb);
}

/* Branch weights (see cg.h). */
void cg_branch_weights(cg_fn *fn, LLVMValueRef br, unsigned then_w,
                       unsigned else_w)
{
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
    LLVMMetadataRef w[3] = {LLVMMDStringInContext2(c, "branch_weights", 14),
                            LLVMValueAsMetadata(LLVMConstInt(i32, then_w, 0)),
                            LLVMValueAsMetadata(LLVMConstInt(i32, else_w, 0))};
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c, "prof", 4),
                    LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, w, 3)));
}

/* Switch to the else side (see cg.h). */
void cg_if_else(cg_fn *fn, cg_if *f)
{
    f->then_end = LLVMGetInsertBlock(fn->b);
    LLVMBuildBr(fn->b, f->join_bb);
    LLVMPositionBuilderAtEnd(fn->b, f->else_bb);
    f->in_else = true;
}

/* Close the if (see cg.h). */
void cg_if_end(cg_fn *fn, cg_if *f)
{
    if (!f->in_else) {
        cg_if_else(fn, f);
    }
    f->else_end = LLVMGetInsertBlock(fn->b);
    LLVMBuildBr(fn->b, f->join_bb);
    LLVMPositionBuilderAtEnd(fn->b, f->join_bb);
}

/* Close the if, joining values (see cg.h). */
weft_status cg_if_merge(cg_fn *fn, cg_if *f, const cg_val *t, const cg_val *e,
                        cg_val *out)
{
    cg_if_end(fn, f);
    if (t->n != e->n) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: codegen: if sides of different shapes");
    }
    weft_status s = cg_val_make(fn, t->n, out);
    if (s != WEFT_OK) {
        return s;
    }
    for (int k = 0; k < t->n; k++) {
        LLVMValueRef phi = LLVMBuildPhi(fn->b, LLVMTypeOf(t->v[k]), "");
        LLVMValueRef vals[2] = {t->v[k], e->v[k]};
        LLVMBasicBlockRef bbs[2] = {f->then_end, f->else_end};
        LLVMAddIncoming(phi, vals, bbs, 2);
        out->v[k] = phi;
    }
    return WEFT_OK;
}

/* An alloca in the entry block (see cg.h). */
LLVMValueRef cg_alloca(cg_fn *fn, LLVMTypeRef ty, const char *name)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(fn->llctx);
    LLVMValueRef first = LLVMGetFirstInstruction(fn->entry);
    if (first) {
        LLVMPositionBuilderBefore(b, first);
    } else {
        LLVMPositionBuilderAtEnd(b, fn->entry);
    }
    LLVMValueRef a = LLVMBuildAlloca(b, ty, name);
    LLVMDisposeBuilder(b);
    return a;
}

/* A mutable variable (see cg.h). */
weft_status cg_mut_new(cg_fn *fn, weft_type t, cg_mut *m)
{
    m->n = cg_leaves(fn, t, &m->leaf);
    m->slot = NULL;
    if (m->n == 0 && !fe_type_valid(fn->ctx, t)) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: codegen: variable of unknown type %d",
                        (int)t);
    }
    if (m->n > 0) {
        m->slot = fe_arena_alloc(fn->arena, (size_t)m->n * sizeof *m->slot);
        if (!m->slot) {
            return fe_oom("weft_compile");
        }
    }
    for (int k = 0; k < m->n; k++) {
        m->slot[k] = cg_alloca(fn, cg_type(fn->llctx, m->leaf[k]), "var");
    }
    return WEFT_OK;
}

/* Read a mutable variable (see cg.h). */
weft_status cg_mut_get(cg_fn *fn, const cg_mut *m, cg_val *out)
{
    weft_status s = cg_val_make(fn, m->n, out);
    if (s != WEFT_OK) {
        return s;
    }
    for (int k = 0; k < m->n; k++) {
        out->v[k] = LLVMBuildLoad2(fn->b, cg_type(fn->llctx, m->leaf[k]),
                                   m->slot[k], "");
    }
    return WEFT_OK;
}

/* Write a mutable variable (see cg.h). */
void cg_mut_set(cg_fn *fn, const cg_mut *m, const cg_val *x)
{
    for (int k = 0; k < m->n && k < x->n; k++) {
        LLVMBuildStore(fn->b, x->v[k], m->slot[k]);
    }
}

/* A strided loop (see cg.h). */
LLVMValueRef cg_sloop_begin(cg_fn *fn, cg_sloop *l, LLVMValueRef start,
                            LLVMValueRef end, LLVMValueRef step,
                            const char *name)
{
    LLVMBuilderRef B = fn->b;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    l->step = step;
    l->head = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, name);
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "sloop.body");
    l->exit = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "sloop.end");
    LLVMBuildBr(B, l->head);
    LLVMPositionBuilderAtEnd(B, l->head);
    l->i = LLVMBuildPhi(B, LLVMInt64TypeInContext(fn->llctx), name);
    LLVMAddIncoming(l->i, &start, &pre, 1);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, l->i, end, ""), body,
                    l->exit);
    LLVMPositionBuilderAtEnd(B, body);
    return l->i;
}

void cg_sloop_end(cg_fn *fn, cg_sloop *l)
{
    LLVMValueRef next = LLVMBuildAdd(fn->b, l->i, l->step, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(fn->b);
    LLVMAddIncoming(l->i, &next, &latch, 1);
    LLVMBuildBr(fn->b, l->head);
    LLVMPositionBuilderAtEnd(fn->b, l->exit);
}
