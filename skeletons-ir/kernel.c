/*
 * skeletons-ir/kernel.c: what every skeleton shares.
 *
 * sk_add_item adds an item to a kernel's argument block (sk.h):
 * sk_prepare (prepare.c, which sits above every skeleton) lays out the
 * outputs, the operands and the free variables of the functions with it,
 * and each skeleton its auxiliary items.  sk_gathers and
 * sk_zipwith_general say what both need to know of an operation.
 *
 * sk_describe writes a canonical description for the cache key: the
 * skeleton, the layout's types, and the functions' bodies with variables
 * numbered by first appearance, so two structurally equal operations in
 * different programs (or runs) share one compiled kernel.
 *
 * sk_fn_begin starts one entry point: it loads every item from the
 * argument block and binds the free variables in the codegen environment,
 * so that cg_exp / cg_apply of the functions just work.
 */
#include <string.h>

#include "sk.h"

/* ---- layout ------------------------------------------------------------- */

weft_status sk_add_item(weft_context *ctx, fe_arena *arena, sk_kernel *k,
                        sk_item_kind kind, sk_src src, int index,
                        weft_type type, int rank)
{
    if (k->nitem == k->cap_item) {
        int cap = k->cap_item ? 2 * k->cap_item : 16;
        sk_item *n = fe_arena_alloc(arena, sizeof *n * (size_t)cap);
        if (!n) {
            return fe_oom("weft_compile");
        }
        if (k->nitem) {
            memcpy(n, k->item, sizeof *n * (size_t)k->nitem);
        }
        k->item = n;
        k->cap_item = cap;
    }
    sk_item *it = &k->item[k->nitem++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->src = src;
    it->index = index;
    it->type = type;
    it->rank = rank;
    it->nleaf = fe_type_leaves(ctx, type, &it->leaf);
    it->word = k->nwords;
    k->nwords += it->nleaf + (kind == SK_ARRAY ? rank : 0);
    if (kind == SK_SCALAR && type == WEFT_DIM(0)) {
        k->nwords += 1; /* the `ignore` flag (sk.h) */
    }
    return WEFT_OK;
}

bool sk_zipwith_general(const fe_term *t)
{
    return t->kind == FE_ZIPWITH && t->atype->rank >= 2;
}

bool sk_gathers(const fe_term *t, bool top)
{
    if (!t || !t->acc || (!top && !t->delayed)) {
        return false;
    }
    if (fe_kinds[t->kind].gather) {
        return true;
    }
    for (int i = 0; i < t->nkid; i++) {
        if (sk_gathers(t->kid[i], false)) {
            return true;
        }
    }
    return false;
}

/* ---- keys --------------------------------------------------------------- */

typedef struct desc {
    void (*add)(void *user, const void *p, size_t n);
    void *user;
    const sk_kernel *k;
    fe_varmap num; /* var id -> canonical number (from 1) */
    bool oom;
    uint32_t next;
    uint32_t nvar;
} desc;

static void put(desc *d, const void *p, size_t n)
{
    d->add(d->user, p, n);
}

static void put_i(desc *d, int64_t v)
{
    put(d, &v, sizeof v);
}

static void describe_var(desc *d, const fe_var *v)
{
    /* Free variables are named by their item, bound ones by order. */
    for (int i = 0; i < d->k->nitem; i++) {
        if (d->k->item[i].src == SK_SRC_VAR && d->k->item[i].var == v) {
            put_i(d, -1 - i);
            return;
        }
    }
    if (!v || v->id >= d->nvar) {
        put_i(d, -999999);
        return;
    }
    uint32_t n = fe_varmap_get(&d->num, v->id);
    if (n == 0 && !d->oom) {
        n = ++d->next;
        d->oom = !fe_varmap_put(&d->num, v->id, n);
    }
    /* out of memory: no number, and a key no other kernel can have */
    put_i(d, d->oom ? -(int64_t)(uintptr_t)d->k : (int64_t)n);
}

static void describe_term(desc *d, const fe_term *t, bool top);

static void describe_fun(desc *d, const fe_fun *f)
{
    put_i(d, f->arity);
    for (int i = 0; i < f->arity; i++) {
        describe_var(d, f->param ? f->param[i] : NULL);
        if (f->targ) {
            put_i(d, f->targ[i]);
        }
    }
    describe_term(d, f->body, false);
}

static void describe_term(desc *d, const fe_term *t, bool top)
{
    if (!t) {
        put_i(d, -1);
        return;
    }
    put_i(d, t->kind);
    put_i(d, t->op);
    put_i(d, t->type);
    put_i(d, t->rank);
    put_i(d, t->nkid);
    put_i(d, t->nfun);
    put_i(d, t->delayed);
    switch ((fe_kind)t->kind) {
    case FE_CONST: put(d, &t->u.c, sizeof t->u.c); break;
    case FE_VAR:
    case FE_LET: describe_var(d, t->u.var); break;
    case FE_GET:
    case FE_AGET:
    case FE_PARAM: put_i(d, t->u.index); break;
    case FE_USE:
        for (int i = 0; i < d->k->nitem; i++) {
            if (d->k->item[i].src == SK_SRC_USE &&
                d->k->item[i].array == t->u.array) {
                put_i(d, i);
            }
        }
        break;
    case FE_STENCIL:
    case FE_STENCIL2: put(d, &t->u.st, sizeof t->u.st); break;
    default: break;
    }
    /* The operation's own operands are inputs: only their types count,
     * unless they are delayed producers, whose code is the kernel's. */
    for (int i = 0; i < t->nkid; i++) {
        if (top || (t->delayed && t->kid[i] && !t->kid[i]->delayed)) {
            put_i(d, t->kid[i] ? t->kid[i]->type : -1);
            put_i(d, t->kid[i] ? t->kid[i]->rank : -1);
        } else {
            describe_term(d, t->kid[i], false);
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        describe_fun(d, t->fun[i]);
    }
}

void sk_describe(const fe_core *core, const sk_kernel *k,
                 void (*add)(void *user, const void *p, size_t n), void *user)
{
    desc d = {.add = add, .user = user, .k = k, .nvar = core->nvar};
    fe_arena scratch; /* the table costs what is put in (lib/varmap.c) */
    fe_arena_init(&scratch, NULL);
    fe_varmap_init(&d.num, &scratch);
    put_i(&d, 0x77656674); /* "weft" */
    put(&d, k->skel->name, strlen(k->skel->name));
    put_i(&d, k->nitem);
    put_i(&d, (int64_t)k->flags);
    put_i(&d, k->checked);
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        put_i(&d, it->kind);
        put_i(&d, it->src);
        put_i(&d, it->rank);
        put_i(&d, it->nleaf);
        for (int l = 0; l < it->nleaf; l++) {
            put_i(&d, it->leaf[l]);
        }
    }
    put_i(&d, k->general);
    describe_term(&d, k->op, true);
    for (int i = 0; i < k->op->nkid; i++) {
        const fe_term *kid = k->op->kid[i];
        if (kid && kid->acc && kid->delayed) {
            describe_term(&d, kid, false);
        }
    }
    fe_arena_release(&scratch);
}

/* ---- entry points ------------------------------------------------------- */

static weft_status array_of(cg_fn *fn, const fe_term *acc, cg_array *out)
{
    sk_fn *f = (sk_fn *)fn->user;
    const sk_kernel *k = f->e->k;
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        if ((acc->kind == FE_PARAM && it->src == SK_SRC_PARAM &&
             it->index == acc->u.index) ||
            (acc->kind == FE_USE && it->src == SK_SRC_USE &&
             it->array == acc->u.array)) {
            *out = f->arr[i];
            return WEFT_OK;
        }
    }
    return fe_error(WEFT_ERR_INTERNAL,
                    "weft_compile: a kernel indexes an array it was not given");
}

static weft_status fn_begin(sk_emit *e, sk_fn *f, const char *name, bool raw)
{
    memset(f, 0, sizeof *f);
    f->e = e;
    f->raw = raw;
    const sk_kernel *k = e->k;
    cg_fn *fn = &f->fn;
    weft_status s = e->target->entry_begin(e, f, name);
    if (s) {
        return s;
    }
    fn->array_of = array_of;
    fn->user = f;
    if (k->checked) {
        cg_checked(fn);
    }
    f->arr = fe_arena_alloc(e->arena, sizeof *f->arr * (size_t)(k->nitem + 1));
    f->val = fe_arena_alloc(e->arena, sizeof *f->val * (size_t)(k->nitem + 1));
    if (!f->arr || !f->val) {
        return fe_oom("weft_compile");
    }
    LLVMContextRef c = e->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0);
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        if (it->kind == SK_ARRAY) {
            cg_array *a = &f->arr[i];
            a->readonly = it->src != SK_SRC_OUT && it->src != SK_SRC_AUX;
            a->rank = it->rank;
            a->nleaf = it->nleaf;
            a->leaf = it->leaf;
            a->ptr = fe_arena_alloc(e->arena,
                                    sizeof *a->ptr * (size_t)(it->nleaf + 1));
            a->extent = fe_arena_alloc(e->arena, sizeof *a->extent *
                                                     (size_t)(it->rank + 1));
            if (!a->ptr || !a->extent) {
                return fe_oom("weft_compile");
            }
            for (int l = 0; l < it->nleaf; l++) {
                LLVMValueRef w = cg_i64(fn, it->word + l);
                LLVMValueRef p = LLVMBuildGEP2(fn->b, i64, f->args, &w, 1, "");
                LLVMValueRef ld = LLVMBuildLoad2(fn->b, ptr, p, "");
                LLVMSetMetadata(
                    ld, LLVMGetMDKindIDInContext(c, "invariant.load", 14),
                    LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, NULL, 0)));
                if (e->target->array_align > 0) {
                    LLVMMetadataRef al = LLVMValueAsMetadata(
                        cg_i64(fn, (int64_t)e->target->array_align));
                    LLVMSetMetadata(ld, LLVMGetMDKindIDInContext(c, "align", 5),
                                    LLVMMetadataAsValue(
                                        c, LLVMMDNodeInContext2(c, &al, 1)));
                }
                a->ptr[l] = ld;
            }
            for (int d = 0; d < it->rank; d++) {
                LLVMValueRef w = cg_i64(fn, it->word + it->nleaf + d);
                LLVMValueRef p = LLVMBuildGEP2(fn->b, i64, f->args, &w, 1, "");
                a->extent[d] = LLVMBuildLoad2(fn->b, i64, p, "");
            }
            if (it->src == SK_SRC_VAR) {
                if ((s = cg_bind_array(fn, it->var, a)) != WEFT_OK) {
                    return s;
                }
            }
        } else {
            cg_val *v = &f->val[i];
            if (it->type == WEFT_DIM(0)) {
                /* no leaves: v[0] is the `ignore` flag, as cg_exp keeps
                 * it for a let-bound rank-0 index (codegen/exp.c) */
                if ((s = cg_val_make(fn, 1, v)) != WEFT_OK) {
                    return s;
                }
                LLVMValueRef w = cg_i64(fn, it->word);
                LLVMValueRef p = LLVMBuildGEP2(fn->b, i64, f->args, &w, 1, "");
                v->v[0] = cg_load(fn, WEFT_BOOL, p, cg_i64(fn, 0));
                v->n = 0;
                if (it->src == SK_SRC_VAR) {
                    fn->env[it->var->id] = *v;
                    fn->bound[it->var->id] = true;
                }
                continue;
            }
            if ((s = cg_val_make(fn, it->nleaf, v)) != WEFT_OK) {
                return s;
            }
            for (int l = 0; l < it->nleaf; l++) {
                LLVMValueRef w = cg_i64(fn, it->word + l);
                LLVMValueRef p = LLVMBuildGEP2(fn->b, i64, f->args, &w, 1, "");
                v->v[l] = cg_load(fn, it->leaf[l], p, cg_i64(fn, 0));
            }
            if (it->src == SK_SRC_VAR) {
                if ((s = cg_bind(fn, it->var, v)) != WEFT_OK) {
                    return s;
                }
            }
        }
    }
    int ci = k->aux_item[SK_CANCEL_AUX];
    if (ci >= 0 && e->target->cg->cancel_poll) {
        fn->cancel = LLVMBuildIntToPtr(fn->b, f->val[ci].v[0], ptr, "cancel");
    }
    if (!raw) {
        e->target->range_begin(f);
    }
    return WEFT_OK;
}

weft_status sk_fn_begin(sk_emit *e, sk_fn *f, const char *name)
{
    return fn_begin(e, f, name, false);
}

weft_status sk_fn_begin_raw(sk_emit *e, sk_fn *f, const char *name)
{
    return fn_begin(e, f, name, true);
}

/* One loop of sk_elements over [lo, hi). */
static weft_status elements_loop(sk_fn *f, LLVMValueRef lo, LLVMValueRef hi,
                                 sk_elem_body body, void *user)
{
    cg_loop l;
    LLVMValueRef i;
    cg_loop_begin(&f->fn, &l, lo, hi, &i);
    weft_status s = body(f, i, user);
    cg_loop_end(&f->fn, &l);
    return s;
}

LLVMValueRef sk_full_chunk(sk_fn *f, int k)
{
    LLVMBuilderRef b = f->fn.b;
    LLVMValueRef kk = cg_i64(&f->fn, k);
    return LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, f->grain, kk, ""),
                        LLVMBuildICmp(b, LLVMIntEQ,
                                      LLVMBuildSub(b, f->end, f->start, ""), kk,
                                      ""),
                        "full");
}

weft_status sk_elements(sk_fn *f, sk_elem_body body, void *user)
{
    cg_fn *fn = &f->fn;
    int k = f->e->target->chunk_elems;
    if (k <= 1 || !f->chunk || !f->e->k->light) {
        return elements_loop(f, f->start, f->end, body, user);
    }
    /* a full chunk: grain K, K elements from c K, where c K is said with
     * the constant K so that LLVM knows its alignment (K f32 are then 16
     * bytes at a multiple of 16 in a buffer aligned to array_align) */
    LLVMBuilderRef b = fn->b;
    LLVMValueRef kk = cg_i64(fn, k);
    cg_if full;
    cg_if_begin(fn, &full, sk_full_chunk(f, k));
    LLVMValueRef lo = LLVMBuildNSWMul(b, f->chunk, kk, "");
    LLVMValueRef hi = LLVMBuildNSWAdd(b, lo, kk, "");
    weft_status s = elements_loop(f, lo, hi, body, user);
    cg_if_else(fn, &full);
    if (s == WEFT_OK) {
        s = elements_loop(f, f->start, f->end, body, user);
    }
    cg_if_end(fn, &full);
    return s;
}

/* Put report key `key` into the kernel's error word: a compare-and-swap
 * loop that replaces the word while it is zero or larger (sk.h). */
static void put_key(sk_fn *f, LLVMValueRef key)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef p = f->arr[f->e->k->err_item].ptr[0];
    LLVMValueRef old = LLVMBuildLoad2(B, i64, p, "");
    LLVMSetOrdering(old, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(old, 8);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef loop =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "report");
    LLVMBasicBlockRef swap =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "report.swap");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "report.done");
    LLVMBuildBr(B, loop);
    LLVMPositionBuilderAtEnd(B, loop);
    LLVMValueRef cur = LLVMBuildPhi(B, i64, "");
    LLVMAddIncoming(cur, &old, &pre, 1);
    LLVMValueRef keep =
        LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, cur, cg_i64(fn, 0), ""),
                     LLVMBuildICmp(B, LLVMIntULE, cur, key, ""), "");
    LLVMBuildCondBr(B, keep, done, swap);
    LLVMPositionBuilderAtEnd(B, swap);
    LLVMValueRef prev = fn->target->atomic_cas(fn, p, cur, key);
    LLVMBasicBlockRef swap_end = LLVMGetInsertBlock(B);
    LLVMAddIncoming(cur, &prev, &swap_end, 1);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, prev, cur, ""), done, loop);
    LLVMPositionBuilderAtEnd(B, done);
}

void sk_report_key(sk_fn *f, LLVMValueRef key)
{
    put_key(f, key);
}

/* The CPU's codes reported so far by an unchecked entry, a bit per
 * cg_err, in a local variable (an i32 zeroed at the entry) that
 * sk_flush_error puts into the error word once, at the end: a gather's
 * bounds check then costs the loop an `or` into a register, where a
 * compare-and-swap on a word all workers share kept LLVM from vectorising
 * it (smvm's gather of x).  The least code set is the least key the
 * stores would have left: unchecked keys differ only in their code.  A
 * PTX skeleton may ask for the same (sk_fn.local_errors): there the
 * compare-and-swap loop inside each read kept ptxas from issuing a
 * thread's next loads before the read was complete (ptx/foldseg.c's
 * staging of smvm's products). */
LLVMValueRef sk_err_bits(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    if (!f->err_bits) {
        LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
        f->err_bits = cg_alloca(fn, i32, "err.bits");
        LLVMBuilderRef b = LLVMCreateBuilderInContext(fn->llctx);
        LLVMValueRef next = LLVMGetNextInstruction(f->err_bits);
        if (next) {
            LLVMPositionBuilderBefore(b, next);
        } else {
            LLVMPositionBuilderAtEnd(b, fn->entry);
        }
        LLVMBuildStore(b, LLVMConstInt(i32, 0, 0), f->err_bits);
        LLVMDisposeBuilder(b);
    }
    return f->err_bits;
}

void sk_set_error(sk_fn *f, int code)
{
    cg_fn *fn = &f->fn;
    if (fn->checked) {
        cg_check(fn, NULL, code, 0, 0);
        return;
    }
    if (fn->target == &cg_target_cpu || f->local_errors) {
        LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
        LLVMValueRef p = sk_err_bits(f);
        LLVMValueRef v = LLVMBuildLoad2(fn->b, i32, p, "");
        v = LLVMBuildOr(fn->b, v, LLVMConstInt(i32, 1u << code, 0), "");
        LLVMBuildStore(fn->b, v, p);
        return;
    }
    put_key(f, cg_i64(fn, (int64_t)((uint64_t)CG_KEY_ELEM_NONE
                                        << CG_KEY_ELEM_SHIFT |
                                    (uint64_t)code << 10)));
}

void sk_flush_error(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    if (f->err_bits) {
        /* the least code reported (err_bits), as its key */
        LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
        LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
        LLVMValueRef v = LLVMBuildLoad2(fn->b, i32, f->err_bits, "");
        cg_if c;
        cg_if_begin(
            fn, &c,
            LLVMBuildICmp(fn->b, LLVMIntNE, v, LLVMConstInt(i32, 0, 0), ""));
        LLVMValueRef a[2] = {
            v, LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0)};
        LLVMValueRef code = cg_intrinsic(fn, "llvm.cttz", &i32, 1, a, 2);
        code = LLVMBuildShl(fn->b, LLVMBuildZExt(fn->b, code, i64, ""),
                            cg_i64(fn, 10), "");
        put_key(f, LLVMBuildOr(fn->b, code,
                               cg_i64(fn, (int64_t)((uint64_t)CG_KEY_ELEM_NONE
                                                    << CG_KEY_ELEM_SHIFT)),
                               ""));
        cg_if_end(fn, &c);
    }
    if (!fn->checked) {
        return;
    }
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef key = LLVMBuildLoad2(fn->b, i64, fn->fail, "");
    cg_if c;
    cg_if_begin(fn, &c,
                LLVMBuildICmp(fn->b, LLVMIntNE, key, cg_i64(fn, -1), ""));
    put_key(f, key);
    cg_if_end(fn, &c);
}

void sk_fn_end(sk_fn *f)
{
    if (!f->raw) {
        f->e->target->range_end(f);
    }
    sk_flush_error(f);
    LLVMBuildRetVoid(f->fn.b);
    cg_fn_end(&f->fn);
}

static const sk_item *item_at(sk_fn *f, int i)
{
    return i >= 0 && i < f->e->k->nitem ? &f->e->k->item[i] : NULL;
}

const cg_array *sk_kid_array(sk_fn *f, int k)
{
    int i = k >= 0 && k < 8 ? f->e->k->kid_item[k] : -1;
    return item_at(f, i) ? &f->arr[i] : NULL;
}

const cg_val *sk_kid_value(sk_fn *f, int k)
{
    int i = k >= 0 && k < 8 ? f->e->k->kid_item[k] : -1;
    return item_at(f, i) ? &f->val[i] : NULL;
}

const cg_array *sk_out_array(sk_fn *f, int o)
{
    return o >= 0 && o < f->e->k->nout ? &f->arr[o] : NULL;
}

const cg_array *sk_aux_array(sk_fn *f, int a)
{
    int i = a >= 0 && a < 8 ? f->e->k->aux_item[a] : -1;
    return item_at(f, i) ? &f->arr[i] : NULL;
}

const cg_val *sk_aux_value(sk_fn *f, int a)
{
    int i = a >= 0 && a < 8 ? f->e->k->aux_item[a] : -1;
    return item_at(f, i) ? &f->val[i] : NULL;
}

LLVMValueRef sk_size(sk_fn *f, const cg_array *a)
{
    LLVMValueRef n = cg_i64(&f->fn, 1);
    for (int d = 0; d < a->rank; d++) {
        n = LLVMBuildMul(f->fn.b, n, a->extent[d], "");
    }
    return n;
}

weft_status sk_from_linear(sk_fn *f, int rank, LLVMValueRef const *extent,
                           LLVMValueRef i, cg_val *ix)
{
    weft_status s = cg_val_make(&f->fn, rank, ix);
    if (s == WEFT_OK && rank > 0) {
        cg_from_index(&f->fn, rank, (LLVMValueRef *)extent, i, ix->v);
    }
    return s;
}

weft_status sk_emit_variant(sk_emit *e, bool uniform, const char *const *names)
{
    e->uniform = uniform;
    return e->k->skel->emit(e, names);
}

weft_status sk_emit_kernel(sk_emit *e, const char *const *names)
{
    e->uniform = true;
    weft_status s = e->k->skel->emit(e, names);
    if (s == WEFT_OK && e->k->general) {
        e->uniform = false;
        s = e->k->skel->emit(e, names + e->k->nentry);
    }
    return s;
}
