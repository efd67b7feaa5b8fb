/*
 * codegen/cg.h: LLVM helpers shared by every target, one internal header
 * sectioned by file.  Names carry the prefix cg_.
 *
 * A skeleton (skeletons-ir/) builds one LLVM function per kernel.  It asks
 * codegen for:
 *   init.c        one-time, thread-safe LLVM initialisation (cg_init);
 *   types.c       weft types as LLVM types, loads and stores of leaves,
 *                 small integer helpers (cg_smin, cg_ceil_div, ...);
 *   ssa.c         the function under construction (cg_fn), counted loops,
 *                 if/else with merged values, mutable variables;
 *   exp.c         the scalar language of the core as IR (cg_exp, cg_apply),
 *                 through the SSA walker that SPMD code shares (cg_walk);
 *   target_cpu.c  the target interface (cg_target) for the host CPU, and
 *                 host target machines;
 *   opt.c         verification, optimisation (the CPU pass pipeline),
 *                 intrinsic helpers and the fast-math flags of fp ops;
 *   vmath.c       exp, log, sin, cos and f32 pow as vector-friendly IR.
 *
 * Values.  A weft value of a scalar type is one LLVM value; a value of a
 * tuple or DIM type is a flat list of LLVM values, one per leaf in the
 * order of fe_type_leaves (cg_val).  In registers bool is i1 and f16 is
 * half; in memory bool is one byte (i8, 0 or 1) and f16 is half.
 *
 * Arrays reach a kernel as one base pointer per leaf and rank i64 extents
 * (outermost first); the skeleton describes them as cg_array, either bound
 * to an array variable (cg_bind_array) or given on demand by its callback
 * (cg_fn.array_of) for any other array term that the scalar code indexes.
 */
#ifndef WEFT_CG_H
#define WEFT_CG_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "fe.h"

typedef struct cg_fn cg_fn;
typedef struct cg_target cg_target;

/* ===== init.c ===== */

/* Initialise LLVM's targets (native and NVPTX, with their printers and
 * parsers) once per process; safe to call from several threads.  Returns
 * WEFT_OK, or WEFT_ERR_BACKEND_UNAVAILABLE when the host target is missing. */
weft_status cg_init(void);
/* Make LLVM's lazily made state (pass timers, code generation tables) by
 * compiling an empty and a small module, once per process (init.c): call
 * it, after cg_init, before anything that optimises or emits code and
 * before registering an exit handler that waits for such work.  Safe from
 * several threads. */
void cg_warm_up(void);

/* ===== types.c ===== */

/* A weft value: n LLVM values, one per leaf (v lives in the fn's arena). */
typedef struct cg_val {
    int n;
    LLVMValueRef *v;
} cg_val;

/* An array as a kernel sees it. */
typedef struct cg_array {
    int rank;
    int nleaf;
    const weft_type *leaf; /* nleaf leaf types */
    LLVMValueRef *ptr;     /* nleaf base pointers */
    LLVMValueRef *extent;  /* rank i64 extents, outermost first */
    bool readonly;         /* nothing writes it while the kernel runs (an
                               input): its loads carry !invariant.load, so
                               they may move past the kernel's stores
                               (ld.global.nc on PTX) */
} cg_array;

/* The register type of scalar type t (bool: i1, f16: half), or NULL. */
LLVMTypeRef cg_type(LLVMContextRef c, weft_type t);
/* The memory type of scalar type t (bool: i8), or NULL. */
LLVMTypeRef cg_mem_type(LLVMContextRef c, weft_type t);
/* Leaves of type t (count and types), 0 and NULL for an invalid type. */
int cg_leaves(const cg_fn *fn, weft_type t, const weft_type **leaves);
/* A cg_val with room for n values in fn's arena (WEFT_ERR_OUT_OF_MEMORY). */
weft_status cg_val_make(cg_fn *fn, int n, cg_val *out);
/* One value from the register value x (out->n = 1). */
weft_status cg_val_one(cg_fn *fn, LLVMValueRef x, cg_val *out);
/* Element i (an i64) of the buffer at base holding leaf type t, and the
 * store of register value x there.  bool is converted between i1 and i8. */
LLVMValueRef cg_load(cg_fn *fn, weft_type t, LLVMValueRef base, LLVMValueRef i);
void cg_store(cg_fn *fn, weft_type t, LLVMValueRef base, LLVMValueRef i,
              LLVMValueRef x);
/* Element i of every leaf of an array, and a store of a whole value. */
weft_status cg_array_load(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                          cg_val *out);
/* Element i of every leaf of a where `inside` (i1) holds, zero in every
 * leaf elsewhere, with no branch: outside, each leaf is read from a cell of
 * zeros (a module global), so that the read may be issued before it is
 * known to be wanted (cg_fn.flat_reads; also where cg_fn.flat_mask is
 * false).  Errors: WEFT_ERR_OUT_OF_MEMORY. */
weft_status cg_array_load_or_zero(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                                  LLVMValueRef inside, cg_val *out);
void cg_array_store(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                    const cg_val *x);
/* A constant of scalar type t in register form. */
LLVMValueRef cg_const(cg_fn *fn, weft_type t, fe_val c);
LLVMValueRef cg_i64(cg_fn *fn, int64_t x);
/* x (an integer narrower than 64 bits) zero-extended to i64. */
LLVMValueRef cg_zext64(cg_fn *fn, LLVMValueRef x);
/* The signed minimum and maximum of two integers of one type (a compare
 * and a select). */
LLVMValueRef cg_smin(cg_fn *fn, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_smax(cg_fn *fn, LLVMValueRef a, LLVMValueRef b);
/* ceil(a / b) of i64 a >= 0 and b > 0, (a + b - 1) / b (signed, or
 * unsigned: cg_ceil_udiv). */
LLVMValueRef cg_ceil_div(cg_fn *fn, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_ceil_udiv(cg_fn *fn, LLVMValueRef a, LLVMValueRef b);
/* ceil(a / n) of i64 a and n with 0 <= a + n - 1 < 2^63 and 1 <= n <=
 * 2^16, by four 32-bit divisions of 16-bit digits: on a target where a
 * 64-bit division by a value known only at run time is a call (PTX:
 * __cuda_sm20_div_u64), the call's convention costs ptxas registers and
 * spills across the whole kernel. */
LLVMValueRef cg_ceil_div_small(cg_fn *fn, LLVMValueRef a, LLVMValueRef n);

/* ===== ssa.c ===== */

/* Gives the array that an array term denotes (a FE_PARAM, FE_USE, an
 * unbound array variable...), for FE_SHAPE, FE_AT, FE_AT_LINEAR and array
 * lets.  Returns a status with a message on failure. */
typedef weft_status (*cg_array_fn)(cg_fn *fn, const fe_term *acc,
                                   cg_array *out);

/* A function under construction. */
struct cg_fn {
    weft_context *ctx; /* for tuple types */
    const cg_target *target;
    fe_arena *arena; /* scratch: values, environments */
    LLVMContextRef llctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b; /* positioned where code goes next */
    LLVMValueRef fn;
    LLVMBasicBlockRef entry;    /* allocas only; branches to the body */
    uint32_t nvar;              /* environment size (core->nvar) */
    cg_val *env;                /* scalar variables by id */
    cg_array **aenv;            /* array variables by id */
    bool *bound;                /* scalar variable bound */
    cg_array_fn array_of;       /* may be NULL */
    void *user;                 /* for array_of */
    LLVMFastMathFlags fmf;      /* flags put on the floating arithmetic
                                   that cg_exp emits (0: none; a fold's
                                   combine: LLVMFastMathAllowReassoc) */
    LLVMValueRef ignored;       /* NULL, or an i1 slot (cg_alloca) that
                                   FE_IGNORE sets to true: how a permute
                                   skeleton sees `ignore` of rank 0, which
                                   has no leaves (of rank n >= 1 every
                                   component is INT64_MIN, as in the
                                   interpreter) */
    bool checked;               /* checked mode (cg_checked) */
    bool flat_reads;            /* unchecked a ! ix reads through
                                   cg_array_load_or_zero, not a branch: a
                                   skeleton that wants several reads of a
                                   thread in flight at once sets it (PTX:
                                   ptxas does not move a load above the
                                   join of an earlier read's branch) */
    LLVMValueRef flat_mask;     /* with flat_reads, NULL or an i1: where it
                                   is false the element read is not wanted,
                                   and its gathers read the cell of zeros
                                   (one line, not a line of their own) and
                                   report nothing */
    bool cold;                  /* emitting code that runs for a few
                                   elements only (a remainder loop): its
                                   counted loops are left scalar, and a ! ix
                                   gets no branch weights, so that irce
                                   does not copy its loops for nothing */
    LLVMValueRef elem;          /* checked mode: an i64 slot holding the
                                   element being computed, -1 when none is
                                   known (cg_set_elem); reports name it */
    LLVMValueRef fail;          /* checked mode: an i64 slot holding the
                                   least report key met so far (CG_KEY_*),
                                   all ones when none */
    int nsite;                  /* checks emitted so far (report keys) */
    struct cg_hoisted *hoisted; /* reads taken out of the while loops
                                   being emitted (exp.c), nhoisted of
                                   them, innermost loop's last */
    int nhoisted;
    LLVMValueRef cancel;    /* NULL, or the kernel's cancel word as a
                                   pointer (skeletons-ir SK_CANCEL_AUX):
                                   scalar while loops poll it every
                                   CG_POLL_EVERY iterations through the
                                   target's cancel_poll */
    int cond_depth;         /* conditional branches around the code
                                   being emitted (exp.c, "Deep
                                   conditionals") */
    LLVMValueRef spec;      /* NULL, or an i1: the code being emitted
                                   is a speculated side of a deep
                                   conditional, wanted only where this
                                   holds (exp.c, "Deep conditionals") */
    int stage_tile;         /* GPU: > 0 where every thread of the
                                   block runs the code being emitted
                                   together (the skeleton sets it;
                                   conditionals and loops clear it inside
                                   them): a while loop of stage.c's
                                   pattern there reads tiles of this many
                                   elements through shared memory */
    struct cg_stage *stage; /* stage.c: the tile whose trips are
                                   being emitted (their reads at j come
                                   from shared memory), or NULL */
    /* NULL, or the loop being emitted reads arrays at its own index
     * (cg_inside) */
    struct cg_inside *inside;
};

/* A loop that a skeleton emits twice, versioned on whether its range lies
 * inside every array of rank 1 that its body reads at the loop's own index
 * by `a ! i` (skeletons-ir/foldseg.c: a segment's elements, where smvm reads
 * cols ! i).  First the copy that checks as usual, in which exp.c notes each
 * such array (up to CG_INSIDE_MAX; a read beyond them stays checked in both
 * copies); then, with skip set, the copy that runs only where the range is
 * inside them all, whose reads of those arrays at i go unchecked: no branch
 * an element for them.  The skeleton tests the range against the arrays'
 * extents once, before the loop. */
#define CG_INSIDE_MAX 8
typedef struct cg_inside {
    LLVMValueRef index; /* the loop's i (the skeleton sets it) */
    bool skip;          /* the copy inside: the noted reads go unchecked */
    int n;
    const fe_term *array[CG_INSIDE_MAX]; /* the arrays noted */
} cg_inside;

/* Codes of the undefined operations a kernel reports in checked mode (and
 * of the errors a skeleton always checks: gathers, slices, permute
 * targets).  runtime/exec.c turns each into the interpreter's status. */
typedef enum cg_err {
    CG_ERR_NONE,
    CG_ERR_GATHER,    /* backpermute / transform outside its source */
    CG_ERR_SLICE,     /* a slice index outside its dimension */
    CG_ERR_PERMUTE,   /* a permute target outside the result */
    CG_ERR_INDEX,     /* a ! ix outside a */
    CG_ERR_LINEAR,    /* a !! i outside a */
    CG_ERR_DIV_ZERO,  /* quot, rem, div, mod by zero */
    CG_ERR_DIV_MIN,   /* quot or div of a signed minimum by -1 */
    CG_ERR_SHIFT,     /* shift by a negative amount or the width or more */
    CG_ERR_CONVERT,   /* float to integer: NaN or out of range */
    CG_ERR_FROM_ZERO, /* from_index in a shape with an inner extent 0 */
    CG_ERR_FROM_NEG,  /* ... with a negative inner extent */
    CG_ERR_SEG_NEG,   /* foldSeg: a segment of negative length (the report's
                          element is the segment) */
    CG_ERR_SEG_PAST,  /* foldSeg: lengths that sum past the innermost
                          extent (at the segment named) */
    CG_ERR_COUNT_
} cg_err;

/* A report key (an i64), ordered as reports must win:
 *
 *     element << CG_KEY_ELEM_SHIFT | site << 14 | code << 10 | op << 4 | type
 *
 * the element (CG_KEY_ELEM_NONE when none is known), the check's site (its
 * place in emission order, which is evaluation order, at most
 * CG_KEY_SITE_MAX), the cg_err code, the primitive and its type.  The
 * least key of a run is its report: the lowest element, and in it the
 * first check that failed.  The skeletons keep the least key of a kernel
 * in its error word (skeletons-ir/sk.h), runtime/exec.c decodes it. */
#define CG_KEY_ELEM_SHIFT 24
#define CG_KEY_ELEM_NONE ((INT64_C(1) << (64 - CG_KEY_ELEM_SHIFT)) - 1)
#define CG_KEY_SITE_MAX 1023
#define CG_KEY_ELEM(k) ((uint64_t)(k) >> CG_KEY_ELEM_SHIFT)
#define CG_KEY_CODE(k) ((int)((uint64_t)(k) >> 10 & 0xf))
#define CG_KEY_OP(k) ((int)((uint64_t)(k) >> 4 & 0x3f))
#define CG_KEY_TYPE(k) ((weft_type)((uint64_t)(k) & 0xf))

/* Iterations of a scalar while loop between two polls of the cancel word
 * (a power of two). */
#define CG_POLL_EVERY 1024
/* ... on the GPU, whose poll is a read of host memory over the bus: every
 * 1,024 iterations, n-body written with a while loop (65,536 iterations a
 * thread) measured 28 -> 140 ms on the H100 */
#define CG_POLL_EVERY_GPU 65536

/* Add function `name` of type fnty to mod and start its body: an entry
 * block for allocas and a first body block where fn->b is positioned.
 * nvar sizes the environment.  The builder is owned by fn (cg_fn_end).
 * Errors: WEFT_ERR_OUT_OF_MEMORY. */
weft_status cg_fn_begin(cg_fn *fn, weft_context *ctx, const cg_target *t,
                        fe_arena *arena, LLVMModuleRef mod, const char *name,
                        LLVMTypeRef fnty, uint32_t nvar);
/* Close the entry block (branch to the body) and dispose of the builder.
 * The caller has terminated the last body block (e.g. ret void). */
void cg_fn_end(cg_fn *fn);

/* Checked mode for fn: the undefined operations that cg_exp meets are
 * tested, and the least report key kept in fn->fail (all ones at entry);
 * fn->elem (-1 at entry) is the element for cg_set_elem.  Call before
 * emitting the body; the caller stores fn->fail where it belongs before
 * returning.  The keeping is branch-free (an unsigned minimum per check),
 * so loops with checks still vectorise. */
void cg_checked(cg_fn *fn);
/* Checked mode only (else nothing): the element being computed is i. */
void cg_set_elem(cg_fn *fn, LLVMValueRef i);
/* Checked mode only (else nothing): a report of `code` (op, type) for the
 * current element when the i1 `bad` holds (NULL: always); the code after
 * it runs either way. */
void cg_check(cg_fn *fn, LLVMValueRef bad, int code, int op, weft_type type);

/* Mark pointer parameter k of fn->fn noalias. */
void cg_noalias(cg_fn *fn, unsigned k);

/* Bind scalar variable v to x (copied) / array variable v to a. */
weft_status cg_bind(cg_fn *fn, const fe_var *v, const cg_val *x);
weft_status cg_bind_array(cg_fn *fn, const fe_var *v, const cg_array *a);

/* A canonical counted loop: for (i = start; i < end; i++) { body }.
 * cg_loop_begin emits the guard and positions fn->b in the body with *i
 * the induction variable (phi i64); cg_loop_end closes the body (i + 1
 * with nsw, compare, branch back) and positions fn->b after the loop.
 * The body may contain any control flow. */
typedef struct cg_loop {
    LLVMBasicBlockRef body, exit;
    LLVMValueRef i, end;
    bool scalar; /* begun in cold code (cg_fn.cold): the IR vectorisers
                    leave this loop alone (as every loop where
                    cg_target.scalar_loops) */
} cg_loop;
void cg_loop_begin(cg_fn *fn, cg_loop *l, LLVMValueRef start, LLVMValueRef end,
                   LLVMValueRef *i);
void cg_loop_end(cg_fn *fn, cg_loop *l);
/* Mark br, the back edge of a loop, with a loop ID (llvm.loop) holding
 * the one property node prop (e.g. !{"llvm.loop.unroll.disable"}). */
void cg_loop_id(cg_fn *fn, LLVMValueRef br, LLVMMetadataRef prop);
/* The same with n property nodes prop[0 .. n-1], n 1 to 3. */
void cg_loop_props(cg_fn *fn, LLVMValueRef br, const LLVMMetadataRef *prop,
                   int n);

/* A strided loop: for (i = start; i < end; i += step), i64 with a signed
 * compare; on a GPU, every thread of the group that runs it with the same
 * bounds.  cg_sloop_begin positions fn->b in the body and returns i (named
 * `name`); cg_sloop_end closes it and positions fn->b after the loop. */
typedef struct cg_sloop {
    LLVMBasicBlockRef head, exit;
    LLVMValueRef i, step;
} cg_sloop;

LLVMValueRef cg_sloop_begin(cg_fn *fn, cg_sloop *l, LLVMValueRef start,
                            LLVMValueRef end, LLVMValueRef step,
                            const char *name);
void cg_sloop_end(cg_fn *fn, cg_sloop *l);

/* if (c) { then } else { else }: cg_if_begin positions fn->b in the then
 * block; cg_if_else closes it and moves to the else block (optional);
 * cg_if_end closes the open side and moves to the join block.
 * cg_if_merge is cg_if_end that also joins the values each side produced
 * (t from the then side, e from the else side, of one shape) with phis. */
typedef struct cg_if {
    LLVMBasicBlockRef then_bb, else_bb, join_bb;
    LLVMBasicBlockRef then_end, else_end; /* where each side ended */
    LLVMValueRef br;                      /* the conditional branch */
    bool in_else;
} cg_if;
void cg_if_begin(cg_fn *fn, cg_if *f, LLVMValueRef c);
/* Branch weights on br (a conditional branch): how often each side is
 * taken, relatively.  They guide block layout and, on the CPU, LLVM's
 * inductive range check elimination (irce in CG_CPU_PIPELINE), which
 * takes only checks whose in-range side is likely. */
void cg_branch_weights(cg_fn *fn, LLVMValueRef br, unsigned then_w,
                       unsigned else_w);
/* Weights that say a side is taken about once in a million. */
#define CG_RARE 1u
#define CG_USUAL (1u << 20)
void cg_if_else(cg_fn *fn, cg_if *f);
void cg_if_end(cg_fn *fn, cg_if *f);
weft_status cg_if_merge(cg_fn *fn, cg_if *f, const cg_val *t, const cg_val *e,
                        cg_val *out);

/* A mutable variable of weft type t: one alloca per leaf in the entry
 * block (mem2reg / SROA turn them back into SSA values). */
typedef struct cg_mut {
    int n;
    const weft_type *leaf;
    LLVMValueRef *slot;
} cg_mut;
weft_status cg_mut_new(cg_fn *fn, weft_type t, cg_mut *m);
weft_status cg_mut_get(cg_fn *fn, const cg_mut *m, cg_val *out);
void cg_mut_set(cg_fn *fn, const cg_mut *m, const cg_val *x);
/* An alloca of LLVM type ty in the entry block. */
LLVMValueRef cg_alloca(cg_fn *fn, LLVMTypeRef ty, const char *name);

/* ===== walk.c: the SSA walker; what a loop's terms depend on ===== */

/* The SSA walker (walk.c) that cg_exp and cg_spmd_exp share: the checks
 * every term passes, tuples, projections, lets, a primitive's operands,
 * shapes' sizes and linear indices, and function application are walked
 * the same whether a leaf is one scalar or a vector of lanes; what
 * differs is in cg_walk_ops: the other term kinds (term), how a primitive
 * or an index is emitted from its operands (prim; and, or:
 * short_circuit; to_index, from_index), and how a term it cannot emit is
 * reported (fail: scalar code gives WEFT_ERR_INTERNAL, SPMD code also
 * declines). */
typedef struct cg_walker cg_walker;
typedef struct cg_walk_ops {
    weft_status (*term)(const cg_walker *w, const fe_term *e, cg_val *out);
    weft_status (*prim)(const cg_walker *w, weft_op op, weft_type rt,
                        weft_type t0, weft_type t1, const LLVMValueRef *a,
                        LLVMValueRef *r);
    weft_status (*short_circuit)(const cg_walker *w, const fe_term *e,
                                 cg_val *out);
    /* cg_to_index and cg_from_index on such leaves */
    weft_status (*to_index)(const cg_walker *w, int rank,
                            const LLVMValueRef *sh, const LLVMValueRef *ix,
                            LLVMValueRef *out);
    weft_status (*from_index)(const cg_walker *w, int rank,
                              const LLVMValueRef *sh, LLVMValueRef i,
                              LLVMValueRef *ix);
    /* a let of a rank-0 index in a kernel that watches for `ignore`
     * (fn->ignored), or NULL: bound as any scalar */
    weft_status (*let_index0)(const cg_walker *w, const fe_var *v,
                              const fe_term *rhs);
    weft_status (*fail)(const cg_walker *w, const char *what, int k);
} cg_walk_ops;
struct cg_walker {
    const cg_walk_ops *ops;
    cg_fn *fn;
    void *self; /* the emitter's state (SPMD: cg_spmd) */
};
/* Term e through w into *out.  Errors: w's fail, those of its hooks. */
weft_status cg_walk(const cg_walker *w, const fe_term *e, cg_val *out);
/* A term of one leaf into *out. */
weft_status cg_walk1(const cg_walker *w, const fe_term *e, LLVMValueRef *out);
/* Apply f to args through w. */
weft_status cg_walk_apply(const cg_walker *w, const fe_fun *f,
                          const cg_val *args, cg_val *out);
/* The array that array term acc names (an array variable or
 * fn->array_of). */
weft_status cg_walk_array(const cg_walker *w, const fe_term *acc,
                          cg_array *out);
/* Mark in inner (nvar entries, false on entry) the variables that term t
 * binds: its lets and its functions' parameters. */
void cg_mark_bound(const fe_term *t, bool *inner, uint32_t nvar);
/* Whether scalar term t is the same at every trip of a loop whose bound
 * variables inner marks, and cheap and safe to compute before it. */
bool cg_invariant(const fe_term *t, const bool *inner, uint32_t nvar);

/* ===== exp.c ===== */

/* Emit the scalar core term e at fn->b, storing its leaves in *out.  Free
 * variables must be bound (cg_bind); array terms are found through array
 * variables (cg_bind_array) or fn->array_of.  Semantics are the
 * interpreter's (fe_prim_eval) for every defined input; where the
 * interpreter reports an error (an index out of bounds, division by zero,
 * shifts by the width or more, float to integer out of range) the
 * generated code gives the value that docs/language.md documents, without
 * trapping or undefined behaviour, and in checked mode (fn->checked) also
 * reports it (cg_check).
 * Errors: WEFT_ERR_INTERNAL for a term it cannot emit,
 * WEFT_ERR_OUT_OF_MEMORY. */
weft_status cg_exp(cg_fn *fn, const fe_term *e, cg_val *out);
/* Apply core function f to args (one cg_val per parameter). */
weft_status cg_apply(cg_fn *fn, const fe_fun *f, const cg_val *args,
                     cg_val *out);
/* The walker cg_exp and cg_apply use (exp.c's scalar hooks) over fn. */
cg_walker cg_scalar_walker(cg_fn *fn);
/* A loop's head: branch from the current block to head and open head
 * with one phi per leaf of *init (st->v has room for init->n), fed with
 * init from the block left (exp.c; the while loops of exp.c and spmd.c). */
void cg_phis_open(cg_fn *fn, LLVMBasicBlockRef head, const cg_val *init,
                  cg_val *st);
/* Primitive op on operand values (types of fe_prim_eval: rt result, t0 and
 * t1 operands); and/or are strict here (cg_exp short-circuits them). */
weft_status cg_prim(cg_fn *fn, weft_op op, weft_type rt, weft_type t0,
                    weft_type t1, const LLVMValueRef *a, LLVMValueRef *r);
/* Shape helpers on i64 leaves: row-major linear index of ix in sh, and the
 * inverse (outermost component not reduced; on a target whose 64-bit
 * division is a call, cg_target.div64_call, it divides in 32 bits where
 * it can and otherwise by a loop, with the same results). */
LLVMValueRef cg_to_index(cg_fn *fn, int rank, const LLVMValueRef *sh,
                         const LLVMValueRef *ix);
void cg_from_index(cg_fn *fn, int rank, const LLVMValueRef *sh, LLVMValueRef i,
                   LLVMValueRef *ix);

/* The array that array term acc denotes: a bound array variable
 * (cg_bind_array), else fn->array_of's answer.  Errors: WEFT_ERR_INTERNAL
 * for an array the kernel was not given. */
weft_status cg_array_of(cg_fn *fn, const fe_term *acc, cg_array *out);

/* Comparison op (LT, LE, GT, GE, EQ, NE) of a and b of scalar type
 * t, or of vectors of it (spmd.c): ordered for floats except NE, signed
 * or unsigned as t is. */
LLVMValueRef cg_compare(cg_fn *fn, weft_op op, weft_type t, LLVMValueRef a,
                        LLVMValueRef b);

/* ===== spmd.c: element functions over W lanes ===== */

/* The state of one SPMD region: the scalar language emitted for W
 * elements at once (see spmd.c).  A leaf of a value is uniform (a scalar
 * LLVM value, the same in every lane) or varying (a <W x T> vector). */
typedef struct cg_spmd {
    cg_fn *fn;
    unsigned w;         /* lanes: a power of two, 2 .. 64 */
    LLVMValueRef mask;  /* <w x i1> active lanes; NULL: all */
    int guards;         /* branches on "any lane active" around
                                 the code being emitted (spmd.c,
                                 needs_guard) */
    LLVMValueRef *cons; /* pairs (vector, base): vector = base +
                                 (0, 1, ..., w-1) */
    int ncons, capcons;
    struct vflags **venv; /* uniformity analysis: flags by variable */
    uint32_t *vgen, gen;  /* venv[v] is current when vgen[v] == gen */
    bool declined;        /* a failure was "cannot vectorise this" (the
                                 caller emits scalar code), not a fault */
} cg_spmd;

/* Start a region of w lanes in fn (fn's environment as bound so far is
 * visible; scalar bindings are uniform).  Errors: WEFT_ERR_INTERNAL for a
 * bad w (declined), WEFT_ERR_OUT_OF_MEMORY. */
weft_status cg_spmd_begin(cg_spmd *s, cg_fn *fn, unsigned w);
/* cg_exp / cg_apply over the lanes of s under s->mask.  Errors:
 * WEFT_ERR_INTERNAL (with a message) for what is not vectorised, with
 * s->declined set: the caller then emits scalar code instead; any other
 * error (s->declined false) is a fault to report. */
weft_status cg_spmd_exp(cg_spmd *s, const fe_term *e, cg_val *out);
weft_status cg_spmd_apply(cg_spmd *s, const fe_fun *f, const cg_val *args,
                          cg_val *out);
/* cg_prim on uniform or varying operands (uniform ones only: cg_prim). */
weft_status cg_spmd_prim(cg_spmd *s, weft_op op, weft_type rt, weft_type t0,
                         weft_type t1, const LLVMValueRef *a, LLVMValueRef *r);
/* Whether x is varying (a vector). */
bool cg_spmd_is_varying(LLVMValueRef x);
/* x as a varying value (x itself when it is one). */
LLVMValueRef cg_spmd_broadcast(cg_spmd *s, LLVMValueRef x);
/* base + (0, 1, ..., w-1) for a uniform integer base, remembered so that
 * reads at it are vector loads; cg_spmd_base gives the base of such a
 * value (NULL for any other). */
LLVMValueRef cg_spmd_consecutive(cg_spmd *s, LLVMValueRef base);
LLVMValueRef cg_spmd_base(const cg_spmd *s, LLVMValueRef v);
/* Whether any lane of i1 vector m is set (i1). */
LLVMValueRef cg_spmd_any(cg_spmd *s, LLVMValueRef m);
/* Element(s) i of a leaf buffer / of every leaf of an array: a scalar load
 * for uniform i, a vector load for consecutive i, else a gather; masked by
 * s->mask. */
LLVMValueRef cg_spmd_load(cg_spmd *s, weft_type t, LLVMValueRef base,
                          LLVMValueRef i, bool invariant);
weft_status cg_spmd_array_load(cg_spmd *s, const cg_array *a, LLVMValueRef i,
                               cg_val *out);
/* Store x (broadcast if uniform) at elements i0 .. i0 + w - 1 of a leaf
 * buffer (every lane: no mask). */
void cg_spmd_store(cg_spmd *s, weft_type t, LLVMValueRef base, LLVMValueRef i0,
                   LLVMValueRef x);
/* cg_to_index / cg_from_index on uniform or varying values. */
weft_status cg_spmd_to_index(cg_spmd *s, int rank, const LLVMValueRef *sh,
                             const LLVMValueRef *ix, LLVMValueRef *out);
weft_status cg_spmd_from_index(cg_spmd *s, int rank, const LLVMValueRef *sh,
                               LLVMValueRef i, LLVMValueRef *ix);

/* ===== target_cpu.c: the target interface ===== */

/* What a skeleton needs from a target.  Entries a target does not have are
 * NULL (the CPU has no thread indices, barriers or shared memory: its
 * kernels take [start, end) ranges instead).  Each is called with fn->b
 * positioned where the code goes. */
struct cg_target {
    const char *name;
    /* Floating function op (EXP .. ATANH, POW, ATAN2) on x (and y) of type
     * float or double (f16 is widened by the caller).  *out gets the
     * result.  CPU: LLVM intrinsics and libm; PTX: libdevice __nv_*. */
    weft_status (*math1)(cg_fn *fn, weft_op op, LLVMValueRef x,
                         LLVMValueRef *out);
    weft_status (*math2)(cg_fn *fn, weft_op op, LLVMValueRef x, LLVMValueRef y,
                         LLVMValueRef *out);
    /* GPU only (NULL on the CPU); dim 0..2 is x, y, z.  The PTX target
     * maps them to llvm.nvvm.read.ptx.sreg.* and llvm.nvvm.barrier0. */
    LLVMValueRef (*thread_index)(cg_fn *fn, int dim); /* i32 */
    LLVMValueRef (*block_index)(cg_fn *fn, int dim);  /* i32 */
    LLVMValueRef (*block_size)(cg_fn *fn, int dim);   /* i32 */
    LLVMValueRef (*grid_size)(cg_fn *fn, int dim);    /* i32, in blocks */
    LLVMValueRef (*lane_index)(cg_fn *fn);            /* i32 */
    void (*barrier)(cg_fn *fn);
    /* A copy of i64 x that LLVM cannot see through (PTX: an inline-assembly
     * mov), so that loop strength reduction does not turn addresses
     * computed from it into pointers of their own kept across an outer
     * loop (registers); NULL where no target needs it. */
    LLVMValueRef (*opaque)(cg_fn *fn, LLVMValueRef x);
    /* Loops the IR vectorisers must leave alone: cg_loop marks them
     * (NVPTX in LLVM 19 aborts the process on some short vectors the
     * loop vectoriser makes, such as a v2i16 compare: weft_fuzz seed
     * 550081; PTX threads are the vector lanes anyway). */
    bool scalar_loops;
    /* 64-bit integer division is a call of a library routine (PTX: its
     * slow path; in code that ptxas compiles as relocatable, as the
     * driver's link does, the call's convention costs registers in the
     * whole kernel): cg_from_index divides in 32 bits where both operands
     * fit and otherwise by a loop, with no call. */
    bool div64_call;
    /* The address space of the module-level globals weft makes (the zero
     * cell of cg_array_load_or_zero): 0 on the CPU, PTX's global space
     * (1) on the GPU, where code reaches them through a cast to the
     * generic space. */
    unsigned global_space;
    /* A barrier of the warp alone (every lane takes part): orders the
     * lanes' shared-memory accesses before it before those after it. */
    void (*warp_barrier)(cg_fn *fn);
    /* A shared-memory array of n elements of ty (pointer). */
    LLVMValueRef (*shared_array)(cg_fn *fn, LLVMTypeRef ty, int64_t n);
    /* Atomics (every target): old = *p; *p = old op x, returning old; and
     * compare-and-swap returning the old value. */
    LLVMValueRef (*atomic_rmw)(cg_fn *fn, LLVMAtomicRMWBinOp op, LLVMValueRef p,
                               LLVMValueRef x);
    LLVMValueRef (*atomic_cas)(cg_fn *fn, LLVMValueRef p, LLVMValueRef cmp,
                               LLVMValueRef x);
    /* Warp-level operations, GPU only (NULL on the CPU).  Every lane of
     * the warp must take part (full mask).  shuffle_down gives x of lane
     * (lane + delta), or the lane's own x past lane 31; shuffle_up x of
     * lane (lane - delta), or the lane's own x below lane delta
     * (shfl.sync.up: where the source lanes of a warp scan are
     * shuffle_idx's, they are five loop invariants that take five
     * registers through the whole tile loop); shuffle_idx gives
     * x of lane `lane` (i32, 0..31).  x may be any scalar register type
     * (i1 .. i64, half, float, double, a pointer): wider or narrower
     * values move as 32-bit pieces. */
    LLVMValueRef (*shuffle_down)(cg_fn *fn, LLVMValueRef x, LLVMValueRef delta);
    LLVMValueRef (*shuffle_up)(cg_fn *fn, LLVMValueRef x, LLVMValueRef delta);
    LLVMValueRef (*shuffle_idx)(cg_fn *fn, LLVMValueRef x, LLVMValueRef lane);
    /* A device-scope memory fence (orders this thread's earlier memory
     * operations, atomics included, before its later ones for every
     * thread of the device). */
    void (*fence)(cg_fn *fn);
    /* The i32 mask of the warp's lanes whose i1 pred is true. */
    LLVMValueRef (*ballot)(cg_fn *fn, LLVMValueRef pred);
    /* Cancellation: an i1 that is true when the run is to stop, from the
     * cancel word fn->cancel.  CPU: the word is the address of the run's
     * fe_cancel (lib/fe.h), and this calls its poll function (which also
     * reads the clock for the deadline); PTX: the word is the device
     * address of a flag in mapped host memory that the host raises, read
     * volatile.  When it is true, a CPU kernel returns at once (the
     * runtime sees fe_cancel.hit and discards the results); a GPU thread
     * leaves the loop with its current state and goes on (a thread that
     * returned could leave a barrier, a warp shuffle or a look-back scan
     * waiting for it), so that every loop after it ends within
     * CG_POLL_EVERY iterations. */
    LLVMValueRef (*cancel_poll)(cg_fn *fn);
    int poll_every; /* iterations between polls (a power of two) */
    bool cancel_returns;
    /* GPU only: a barrier of the block (as barrier) that returns, in
     * every thread, whether the i1 pred held in any thread of the block. */
    LLVMValueRef (*barrier_or)(cg_fn *fn, LLVMValueRef pred);
    /* SPMD hook (spmd.c), optional: the vector form of floating function
     * op (EXP .. ATANH, POW, ATAN2) on x (and y), vectors of float or
     * double.  Sets *out NULL to decline, and spmd.c then calls math1 /
     * math2 lane by lane; it must then give each lane the bits math1 /
     * math2 would (or the configuration must allow otherwise). */
    weft_status (*vmath)(cg_fn *fn, weft_op op, LLVMValueRef x, LLVMValueRef y,
                         LLVMValueRef *out);
};

extern const cg_target cg_target_cpu;

/* A target machine for the host (triple, CPU name and features), or for
 * an explicit cpu / features (NULL: the host's) on the host triple, at
 * optimisation level `level`.  The caller disposes of *out with
 * LLVMDisposeTargetMachine.  Errors: WEFT_ERR_BACKEND_UNAVAILABLE. */
weft_status cg_cpu_machine(const char *cpu, const char *features,
                           LLVMCodeGenOptLevel level,
                           LLVMTargetMachineRef *out);

/* ===== opt.c ===== */

/* Set mod's triple and data layout to tm's. */
void cg_module_target(LLVMModuleRef mod, LLVMTargetMachineRef tm);
/* Verify mod (WEFT_ERR_INTERNAL with LLVM's first message line). */
weft_status cg_verify(LLVMModuleRef mod, const char *who);
/* Run the new pass manager pipeline `passes` ("default<O3>") on mod for
 * tm (may be NULL); in debug builds mod is verified first.
 * Errors: WEFT_ERR_INTERNAL. */
weft_status cg_optimise(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                        const char *passes, const char *who);
/* A call of the overloaded intrinsic `name` ("llvm.sqrt") with overload
 * types over[0..nover-1] on args; NULL if LLVM does not know it. */
LLVMValueRef cg_intrinsic(cg_fn *fn, const char *name, LLVMTypeRef *over,
                          int nover, LLVMValueRef *args, int nargs);
/* A call of the C function `name` : ty(args) -> ty (declared on demand). */
LLVMValueRef cg_libcall(cg_fn *fn, const char *name, LLVMTypeRef ty,
                        LLVMValueRef *args, int nargs);

/* The fast-math flags that WEFT_FLAG_FAST_MATH puts on floating
 * operations: reassoc, contract, afn, arcp and nsz.  Not nnan or ninf:
 * NaN and infinity stay observable results (isnan, isinf, comparisons),
 * and LLVM may assume their absence into wrong answers rather than merely
 * less precise ones. */
#define CG_FAST_MATH_FLAGS                                                     \
    (LLVMFastMathAllowReassoc | LLVMFastMathAllowContract |                    \
     LLVMFastMathApproxFunc | LLVMFastMathAllowReciprocal |                    \
     LLVMFastMathNoSignedZeros)
/* Whether fn's context has WEFT_FLAG_FAST_MATH. */
bool cg_fast_math(const cg_fn *fn);
/* CG_FAST_MATH_FLAGS when fn's context asks for fast math, else 0. */
LLVMFastMathFlags cg_fast_flags(const cg_fn *fn);
/* The flags for a floating operation that cg_exp emits: the skeleton's
 * own (fn->fmf, e.g. reassoc for a fold's combine) and the context's. */
LLVMFastMathFlags cg_fp_flags(const cg_fn *fn);
/* Put cg_fp_flags(fn) on v when it is an operation that takes them;
 * returns v. */
LLVMValueRef cg_fp_flag(const cg_fn *fn, LLVMValueRef v);

/* The pipeline of LLVM passes for CPU kernels: a function pipeline that
 * keeps what weft's skeletons need (SROA, instcombine, LICM, loop rotation
 * and induction variables, the loop and SLP vectorisers) instead of
 * default<O3>'s module pipeline (inliner, IPO, two rounds of everything):
 * kernels are single functions with no calls to inline.  (Measured on
 * dotp, 2 threads: 15 ms of compile instead of 41, the same run time;
 * without interleaving it compiled in 14 ms but sum ran 13% slower.)
 * irce (inductive range check elimination) splits a loop whose reads
 * check their index against an array's extent (a ! ix, exp.c, with
 * branch weights saying inside) into a main loop without the checks and
 * short loops before and after it, so that the vectoriser widens plain
 * loads instead of masked ones behind 64-bit compares: n-body written as
 * a fold, one thread, 23.6 -> 10.8 ms (its compile 29 -> 57 ms; dotp's,
 * with no such read, 0.1 ms more).
 * instcombine as the default pipelines run it: without its fixpoint
 * check, which aborts the process when a second round would still change
 * something. */
#define CG_IC "instcombine<no-verify-fixpoint>"
#define CG_CPU_PIPELINE                                                        \
    "function(sroa,early-cse<memssa>,simplifycfg," CG_IC ","                   \
    "loop-mssa(loop-rotate,licm),simplifycfg," CG_IC ","                       \
    "loop(indvars),irce,loop-vectorize," CG_IC ","                             \
    "simplifycfg,slp-vectorizer," CG_IC ",simplifycfg)"

/* ===== stage.c: while loops that read tiles through shared memory ===== */

typedef struct cg_staged cg_staged;
/* Whether term t (an operation, or a scalar term), its functions or the
 * delayed producers in it hold a while loop of stage.c's pattern (which
 * cg_stage_while may stage where fn->stage_tile allows).  nvar: the
 * core's variables; scratch from arena. */
bool cg_stage_find(const fe_term *t, uint32_t nvar, fe_arena *arena);
/* While loop e, its initial state init already emitted: where
 * w->fn->stage_tile allows and e has the pattern, emit it staged (*done
 * true, *out the final state), its bound, condition and body compiled
 * through walker w (exp.c's scalar walker); else emit nothing (*done
 * false).  Errors: those of w. */
weft_status cg_stage_while(const cg_walker *w, const fe_term *e,
                           const cg_val *init, cg_val *out, bool *done);
/* Whether every while loop of operation op (in its functions and the
 * producers fused into it; at least one) has stage.c's pattern with a
 * start and a bound that do not depend on anything op binds (its
 * element's index, its lets): then every element runs as many trips,
 * and the kernel's work is even (ptx/target.c, "The grid").  nvar: the
 * core's variables; scratch from arena. */
bool cg_stage_even(const fe_term *op, uint32_t nvar, fe_arena *arena);
/* The staged read that read term `at` is in the tile being emitted, or
 * NULL; and its value there. */
const cg_staged *cg_staged_read(const cg_fn *fn, const fe_term *at);
weft_status cg_staged_load(cg_fn *fn, const cg_staged *r, cg_val *out);

/* For a skeleton that applies function f (of an index of rank r >= 1)
 * to indices whose last component walks columns in the same order in
 * every thread of a block (ptx/fold.c): *out a tile of `tile` records
 * holding the manifest arrays that f reads at `index (last component)`,
 * or NULL when it reads none (or in checked mode, or where a leaf
 * cannot be staged); f's reads at `index (component d)`, d < r - 1,
 * become the values cg_stage_fix reads once.  The skeleton fills record
 * q with the arrays at column c (cg_stage_put: every thread its records,
 * then a barrier), sets the reads' values for the index's other
 * components (cg_stage_fix), and emits f's applications at columns whose
 * records are q between cg_stage_use(fn, g, q) and cg_stage_use(fn,
 * NULL, NULL), a barrier before the next fill.  The arrays are found
 * through walker w (cg_scalar_walker(fn)).  Errors: those of code
 * generation. */
typedef struct cg_stage cg_stage;
weft_status cg_stage_fun(const cg_walker *w, const fe_fun *f, int tile,
                         cg_stage **out);
weft_status cg_stage_put(cg_fn *fn, const cg_stage *g, LLVMValueRef q,
                         LLVMValueRef c);
weft_status cg_stage_fix(cg_fn *fn, cg_stage *g, const cg_val *ix);
void cg_stage_use(cg_fn *fn, cg_stage *g, LLVMValueRef q);
/* Whether tile g must be filled for the key key[0 .. n-1] (n at most
 * CG_STAGE_KEYS, i64 values that together fix the tile's records, the
 * same in every thread of the block, and the same n at every call for
 * g): it holds no records yet, or another key's.  The key is then taken
 * as held; the caller fills the tile when the answer is true (a barrier
 * first, as its readers may not be done, and one after).  A loop that
 * runs again from the same key, in a thread's next element, reads the
 * records it staged the first time: the staged arrays are the kernel's
 * inputs, which no thread writes. */
#define CG_STAGE_KEYS 3
LLVMValueRef cg_stage_fresh(cg_fn *fn, cg_stage *g, const LLVMValueRef *key,
                            int n);
/* Ask LLVM to unroll the loop whose back-edge is br by a few trips (8),
 * so that their loads and chains of arithmetic overlap (the hand-written
 * n-body unrolls by 8). */
void cg_stage_unroll(cg_fn *fn, LLVMValueRef br);

/* ===== vmath.c ===== */

/* exp and log of x, a double or a vector of double, as branch-free IR
 * (see vmath.c for the algorithms and their accuracy).  single: the
 * result will be rounded to float (exp then uses a shorter polynomial). */
LLVMValueRef cg_vm_exp(cg_fn *fn, LLVMValueRef x, bool single);
LLVMValueRef cg_vm_log(cg_fn *fn, LLVMValueRef x, bool single);
/* sin (cos when want_cos) of x, a double or a vector of double: branch-free
 * for |x| <= 2^19 pi/2, the C library's sin / cos (sinf / cosf of the float
 * when single: x is then a float widened) on the other lanes, behind a
 * branch taken only when some lane needs it.  The builder is left at the
 * end of a new block. */
LLVMValueRef cg_vm_sincos(cg_fn *fn, LLVMValueRef x, bool single,
                          bool want_cos);
/* pow of x and y, doubles (or vectors), that hold floats when single, as
 * exp(y log|x|) (for double with log|x| and y log|x| in double-double) and
 * C's special cases by selects: branch-free, no calls but llvm.fma. */
LLVMValueRef cg_vm_pow(cg_fn *fn, LLVMValueRef x, LLVMValueRef y, bool single);
/* With fast math, f32: exp and log of x, a float or a vector of float, in
 * float (fewer correct bits, twice the lanes; see vmath.c). */
LLVMValueRef cg_vm_expf(cg_fn *fn, LLVMValueRef x);
LLVMValueRef cg_vm_logf(cg_fn *fn, LLVMValueRef x);

/* ===== target_ptx.c ===== */

/* The target interface for NVIDIA GPUs (NVPTX): libdevice math, PTX
 * special registers, shared memory, warp shuffles, relaxed device-scope
 * atomics. */
extern const cg_target cg_target_ptx;

/* A target machine for "nvptx64-nvidia-cuda" and the device of compute
 * capability sm (major * 10 + minor: 90 for H100), capped at the newest
 * SM that LLVM 19 knows (sm_90) and otherwise rounded down to the nearest
 * SM it knows; PTX ISA at least 6.3.  The caller disposes of *out with
 * LLVMDisposeTargetMachine; a machine must not emit from two threads at
 * once.  Errors: WEFT_ERR_INVALID_ARGUMENT for sm < 50,
 * WEFT_ERR_BACKEND_UNAVAILABLE when LLVM has no NVPTX target. */
weft_status cg_ptx_machine(int sm, LLVMTargetMachineRef *out);
/* The same at CodeGenOpt::None, for cg_ptx_finish_quick. */
weft_status cg_ptx_machine_quick(int sm, LLVMTargetMachineRef *out);

/* The path of libdevice.10.bc into buf (n bytes): $WEFT_LIBDEVICE when set
 * and not empty (it must then name a readable file: no fallback), else the
 * first readable of $CUDA_HOME/nvvm/libdevice/libdevice.10.bc, the same
 * under $CUDA_PATH, /usr/local/cuda/nvvm/libdevice/, Debian's
 * /usr/lib/nvidia-cuda-toolkit/libdevice/ and /usr/lib/cuda/nvvm/libdevice/.
 * Errors: WEFT_ERR_BACKEND_UNAVAILABLE naming every path tried. */
weft_status cg_ptx_libdevice_path(char *buf, size_t n);

/* Launch bounds of kernel fn->fn, as !nvvm.annotations beside the
 * "kernel" entry that cg_ptx_finish adds: blocks of at most max_threads
 * threads (.maxntid; the runtime's occupancy query then never picks a
 * larger block) and, when min_blocks > 0, that many blocks resident per
 * SM (.minnctapersm), which holds ptxas to 64K / (min_blocks max_threads)
 * registers a thread. */
void cg_ptx_launch_bounds(cg_fn *fn, int max_threads, int min_blocks);

/* A reduction of system scope (PTX red.sys.<op>: atomic with respect to
 * every device of the host, where the default scope, .gpu, says nothing
 * about another GPU's atomics on the same address): *p = *p op x, for a
 * leaf of a permute split over several devices (skeletons-ir/ptx/
 * permute.c).  cg_ptx_red_sys_ok says whether op on leaves of type t has
 * one (i32 and i64 add, min, max, umin, umax, and, or, xor; f32 and f64
 * fadd); cg_ptx_red_sys must only be asked for those.  p is a generic
 * pointer. */
bool cg_ptx_red_sys_ok(LLVMAtomicRMWBinOp op, LLVMTypeRef t);
void cg_ptx_red_sys(cg_fn *fn, LLVMAtomicRMWBinOp op, LLVMValueRef p,
                    LLVMValueRef x);

/* The fence of system scope (membar.sys) and the i32 atomic add of
 * system scope that returns the old value (atom.sys.add.u32; p a generic
 * pointer to an i32): the ticket of a permute's parts on several
 * devices, each of which publishes its reductions before it draws one
 * (skeletons-ir/ptx/permute.c). */
void cg_ptx_fence_sys(cg_fn *fn);
LLVMValueRef cg_ptx_atom_sys_add(cg_fn *fn, LLVMValueRef p, LLVMValueRef x);

/* huge.c: function f's instructions, and mod's, counted until they pass
 * limit. */
size_t cg_function_instructions(LLVMValueRef f, size_t limit);
size_t cg_module_instructions(LLVMModuleRef mod, size_t limit);

/* Turn mod, built by skeletons for cg_target_ptx, into PTX text for tm
 * (cg_ptx_machine): sets mod's triple and data layout, marks the functions
 * kernels[0..nkernels-1] as kernels (PTX_Kernel calling convention and
 * !nvvm.annotations), links in libdevice when mod declares a __nv_*
 * function (its file is read once per process), internalises everything
 * but the kernels, optimises with "default<O3>" and emits PTX.  mod is
 * changed in place and stays the caller's.  *ptx gets the text, which the
 * caller disposes of with LLVMDisposeMemoryBuffer; its LLVMGetBufferSize
 * bytes are followed by a NUL, so LLVMGetBufferStart is a C string.  When
 * dump_prefix is not NULL the text is also written to <dump_prefix>.ptx,
 * and the optimised IR to <dump_prefix>.opt.ll (each skipped if the file
 * cannot be written).  While it runs, diagnostics of
 * mod's context go to a handler of its own (nothing is printed).  The
 * time of its steps counts in ctx's phases (libdevice's link and the
 * optimisation as FE_PHASE_LLVM_OPT, the emission as FE_PHASE_PTX) and
 * shows in its trace; ctx may be NULL.
 * Errors: WEFT_ERR_BACKEND_UNAVAILABLE when libdevice is needed and not
 * found, WEFT_ERR_INTERNAL with LLVM's message for anything else. */
weft_status cg_ptx_finish(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                          const char *const *kernels, int nkernels,
                          const char *dump_prefix, weft_context *ctx,
                          LLVMMemoryBufferRef *ptx);
/* The quick tier's LLVM passes: a few function passes (the default), the
 * bare ones of a huge module (NVVMReflect, SROA, early CSE, dead code),
 * or default<O1>. */
typedef enum cg_ptx_quick {
    CG_PTX_QUICK_PASSES,
    CG_PTX_QUICK_BARE,
    CG_PTX_QUICK_O1
} cg_ptx_quick;

/* cg_ptx_finish for the quick tier of tiered compilation (runtime-gpu/
 * backend.c, "Tiers"): `pipeline`'s passes instead of "default<O3>", and
 * tm should come from cg_ptx_machine_quick (target_ptx.c,
 * PTX_QUICK_PIPELINE, says what each costs).  The PTX computes the same
 * results (no pass changes floating-point semantics), more slowly; for
 * the fold of a dot product about a third of the time of cg_ptx_finish.
 * Nothing is dumped.  Errors as cg_ptx_finish. */
weft_status cg_ptx_finish_quick(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                                const char *const *kernels, int nkernels,
                                weft_context *ctx, cg_ptx_quick pipeline,
                                LLVMMemoryBufferRef *ptx);

#endif /* WEFT_CG_H */
