/*
 * skeletons-ir/sk.h: the skeletons, one internal header sectioned by file.
 * Names carry the prefix sk_.
 *
 * A skeleton turns one collective operation of the core (map, fold,
 * permute, ...) into a kernel: one LLVM function per phase, whose body
 * works on a range [start, end) of its phase's iteration space.  How a
 * phase becomes an entry point is the target's (sk_target): on the CPU
 * the body is the entry point itself, with the ABI
 *
 *     void entry(int64_t start, int64_t end, const void *args)
 *
 * (the gang hands out the ranges); on PTX the entry point is a kernel
 *
 *     void entry(args byval, int64_t n, int64_t grain)
 *
 * whose threads walk the chunks [c grain, min(n, (c + 1) grain)) of
 * [0, n) in a grid-stride loop and run the body on each (cpu/target.c,
 * ptx/target.c).  So the skeletons in this folder serve every target; a
 * target may replace one by its own where the parallel structure really
 * differs (sk_target.own: ptx/ for block reductions).  Everything a
 * kernel reads comes through `args`, a block of 8-byte words described by
 * the kernel's layout (sk_layout): each item is an array (one pointer word
 * per leaf, then one i64 word per extent, outermost first) or a scalar (one
 * word per leaf, the leaf stored in its memory type at the start of the
 * word; a rank-0 index, which has no leaves, has one word that is 1 when it
 * is permute's `ignore`, as a let at host level may bind it).  Items are, in order: the outputs, the operation's operands (its
 * array kids and the scalar kids that the host evaluates: seeds, shapes,
 * boundary values), the free variables of its functions (let-bound scalars
 * and arrays outside the operation, parameters and used arrays that the
 * functions index), then the skeleton's own auxiliary items (partial
 * results, flags, sizes) that the runtime's driver fills.
 *
 * prepare.c lays a kernel out and chooses its skeleton; kernel.c builds
 * keys and modules; each skeleton file emits its phases (generate.c:
 * generate, map, zipWith, backpermute, transform; fold.c; ...).  The
 * runtime (runtime/exec.c, runtime/job.c) fills the argument block and
 * runs the phases.
 */
#ifndef WEFT_SK_H
#define WEFT_SK_H

#include "../codegen/cg.h"

typedef enum sk_item_kind {
    SK_ARRAY, /* nleaf pointer words, then rank extent words */
    SK_SCALAR /* nleaf words */
} sk_item_kind;

typedef enum sk_src {
    SK_SRC_OUT,   /* output array `index` of the operation */
    SK_SRC_KID,   /* kid `index` of the operation */
    SK_SRC_VAR,   /* free variable `var` of the operation's functions */
    SK_SRC_PARAM, /* program parameter `index`, indexed by the functions */
    SK_SRC_USE,   /* used array `array`, indexed by the functions */
    SK_SRC_AUX,   /* the driver's auxiliary item `index` */
    SK_SRC_TERM   /* an operand of a fused (delayed) producer: term `term`,
                     evaluated by the host (an array or a scalar) */
} sk_src;

typedef struct sk_item {
    sk_item_kind kind;
    sk_src src;
    int index;
    const fe_var *var;   /* SK_SRC_VAR */
    weft_array *array;   /* SK_SRC_USE */
    const fe_term *term; /* SK_SRC_TERM */
    weft_type type;      /* element type (arrays) or value type */
    int rank;            /* arrays */
    int nleaf;
    const weft_type *leaf; /* nleaf scalar leaf types */
    int word;              /* first word in the argument block */
} sk_item;

#define SK_MAX_ENTRY                                                           \
    10 /* entry points, both variants together (the
                          CPU permute with a fused default has 5) */
#define SK_ITEM_BLOCK (-1)
#define SK_DEVICES_MAX                                                         \
    8 /* devices of one context (runtime-gpu's
                            GPU_MULTI_MAX): a fold of one row over several
                            keeps their parts' folds in its partials
                            [0, SK_DEVICES_MAX) (ptx/fold.c) */
#define SK_SCAN_RUNS_MAX                                                       \
    1024 /* runs of tiles a part of a scan of one row over several
            devices reduces, at most (ptx/scan.c, "Several devices": their
            partials follow the tile counters in aux 3) */
#define SK_SPREAD_ALIGN                                                        \
    512 /* elements: a device's part of a fold of one
                               row starts at a multiple of this, so of
                               every tile (ptx/fold.c: 32 lanes x K <= 16) */
#define SK_PIECES_SHIFT                                                        \
    40 /* a part of a fold of one row over several devices: its `skip` is
          its pieces P << SK_PIECES_SHIFT | their length L, a multiple of
          SK_SPREAD_ALIGN (ptx/fold.c, runtime-gpu/backend.c
          fold_pieces) */
/* foldSeg's offset form on the GPU: what skeletons-ir/ptx/foldseg.c's
 * three entries and their driver (runtime/exec_foldseg_pass.c) must agree
 * on.  Aux indices: SK_SEGOFF_LIST the long segments (i64, listed by the
 * check, at most one a SK_SEGOFF_LONG + 1 elements of a row), SK_SEGOFF_MID
 * the middle ones (longer than entry 2's lanes fold, sk_segoff_limit, at
 * most one a limit + 1 elements), SK_SEGOFF_LANES the scalar log2 of entry
 * 2's lanes a segment, SK_SEGOFF_COUNT [0] the listed long segments, [1]
 * entry 1's ticket of them, [2] the listed middle ones of
 * SK_SEGOFF_MID_SMALL elements at most, [3] entry 1's blocks that have
 * ended, [4] the listed longer middle ones (i64, kept zero: entry 1's last
 * block puts them back); then the shapes. */
enum {
    SK_SEGOFF_LIST = 0,
    SK_SEGOFF_LANES = 1,
    SK_SEGOFF_COUNT = 2,
    SK_SEGOFF_MID = 3,
    SK_SEGOFF_GROUP = 32,     /* segments of a warp item of entries 0, 2 */
    SK_SEGOFF_TILE = 128,     /* segments of the check's warp item */
    SK_SEGOFF_LONG = 1024,    /* a longer segment takes a block (entry 1) */
    SK_SEGOFF_LANE_ITEMS = 4, /* elements a lane of entry 2 reads a trip */
    SK_SEGOFF_LANE_TRIPS = 2, /* entry 2's lanes' longest segment, in trips
                                 (a longer one takes the warp) */
    SK_SEGOFF_LONE_TRIPS = 4, /* the same where a segment has one lane */
    SK_SEGOFF_MID_SMALL = 64, /* middle segments up to this long are listed
                                 from the front of SK_SEGOFF_MID, longer
                                 ones from its back */
    SK_SEGOFF_COUNTS = 5,     /* SK_SEGOFF_COUNT's words */
};
/* The longest segment entry 2 folds with 2^lg lanes a segment. */
static inline int64_t sk_segoff_limit(int lg)
{
    return lg == 0 ? SK_SEGOFF_LANE_ITEMS * SK_SEGOFF_LONE_TRIPS
                   : (int64_t)SK_SEGOFF_LANE_ITEMS * SK_SEGOFF_LANE_TRIPS << lg;
}
#define SK_ERR_AUX 7 /* aux index of the error word (every kernel) */
#define SK_CANCEL_AUX                                                          \
    6 /* aux index of the cancel word: a scalar u64 item,
                           only in kernels whose functions have a scalar
                           while loop, which polls it (codegen/exp.c; what
                           the word holds is the target's, cg_target
                           .cancel_poll) */

/* The error word (an i64, zero when nothing went wrong) holds the least
 * report key (codegen/cg.h, CG_KEY_*) of the kernel's run: each entry
 * point keeps the least key its own checks met (cg_checked) and, at its
 * end, replaces the word by it when the word is zero or larger (a
 * compare-and-swap loop).  So the lowest element wins whatever the
 * threads' order, and within one element the first check that failed.
 * Without checked mode the checks a skeleton always makes (gathers,
 * slices, permute targets) store a key with no element. */

typedef struct sk_kernel sk_kernel;
typedef struct sk_emit sk_emit;
typedef struct sk_fn sk_fn;
typedef struct sk_target sk_target;

/* Skeleton families: the runtime has one driver per family. */
typedef enum sk_family {
    SK_GENERATE, /* generate.c: generate, map, zipWith, backpermute, transform */
    SK_FOLD,     /* fold.c: fold, fold1 */
    SK_SCAN,     /* scan.c: the six scans */
    SK_PERMUTE,  /* permute.c */
    SK_FOLD_SEG,  /* foldseg.c: foldSeg, fold1Seg */
    SK_STENCIL,   /* stencil.c: stencil, stencil2 */
    SK_RESHAPE,   /* reshape.c: unit, reshape, replicate, slice */
    SK_SCAN_PASS, /* ptx/scan.c: the scans in one pass (decoupled look-back) */
    SK_FOLD_SEG_PASS, /* ptx/foldseg.c: foldSeg in one pass (lengths scanned
                         by look-back, merge path) */
    SK_FAMILY_COUNT_
} sk_family;

/* A skeleton: which operations it takes, how it lays out and emits them. */
typedef struct sk_skeleton {
    const char *name;
    sk_family family;
    /* Whether this skeleton compiles operation t (kind already matched). */
    bool (*supported)(const fe_term *t);
    /* Add the auxiliary items and set nentry (after the common items). */
    weft_status (*prepare)(weft_context *ctx, fe_arena *arena, sk_kernel *k);
    /* Emit the entry points names[0 .. nentry-1]. */
    weft_status (*emit)(sk_emit *e, const char *const *names);
    /* It reads its array operands with sk_read, so fused (delayed)
     * producers may stand there (lib/fuse.c). */
    bool fuses_input;
} sk_skeleton;

/* How a target turns phases into entry points (see the head comment). */
struct sk_target {
    const char *name;
    const cg_target *cg;
    /* By family: this target's own skeleton that replaces the shared one,
     * or NULL (NULL own: none replaced). */
    const sk_skeleton *const *own;
    /* Add entry point `name` to e->mod with the target's signature and
     * calling convention, begin f->fn on it (cg_fn_begin) and set f->args
     * (a pointer to the argument block). */
    weft_status (*entry_begin)(sk_emit *e, sk_fn *f, const char *name);
    /* Open the body: set f->start and f->end (i64) of one range; close
     * it again (after the body, fn->b where the body ended). */
    void (*range_begin)(sk_fn *f);
    void (*range_end)(sk_fn *f);
    /* Elements in the chunks the target's runtime usually hands one
     * thread of element-wise work (0 or 1: no such size): sk_elements
     * gives a full chunk a straight-line body, whose consecutive loads
     * and stores the backend combines into vector accesses. */
    int chunk_elems;
    /* Bytes to which every array's base address is aligned (0: nothing
     * known; CPU arrays may be the caller's own memory). */
    unsigned array_align;
};

extern const sk_target sk_target_cpu; /* cpu/target.c */
extern const sk_target sk_target_ptx; /* ptx/target.c */
/* The most threads in a block of a PTX grid-stride kernel (.maxntid):
 * blocks of 256 reach full occupancy as well as larger ones, and a grid
 * of 2^16 elements still fills 132 SMs (1024-thread blocks filled 64). */
#define SK_PTX_ELEMENT_BLOCK 256
/* ... of a staged kernel (sk_emit.stage), whose threads each compute one
 * element with a long loop: blocks of 128 spread 65,536 n-body threads
 * evenly (512 blocks, 3.9 an SM of 132), where the occupancy API's 224
 * for 71 registers gave 293 blocks, some SMs 3 and most 2 (H100: the
 * kernel ran as long as its SMs of 3 blocks).  Its tiles stay
 * SK_PTX_ELEMENT_BLOCK records (each thread fills two). */
#define SK_PTX_STAGED_BLOCK 128
/* ... and at least this many of them resident per SM (.minnctapersm):
 * without it ptxas keeps such a kernel to 32 registers, as for full
 * occupancy, and runs the unrolled trips of a tile one after the other;
 * with it (up to 128 registers) it loads eight trips ahead and overlaps
 * their arithmetic, which a grid of 65,536 threads (four blocks of 128
 * an SM) needs, having no more warps to switch to. */
#define SK_PTX_STAGED_MIN_BLOCKS 4
/* Whether the PTX kernel k computes sk_target_ptx.chunk_elems elements
 * per chunk whatever grain the runtime passes (ptx/target.c): the
 * generate family without a while loop, whose full chunks then read and
 * write 16 bytes at a time (generate.c). */
bool sk_ptx_wide(const sk_kernel *k);
/* The block to launch a grid-stride entry with over `items` items (chunks,
 * or threads of raw entries) on a device of `sms` SMs, given `block`, the
 * occupancy API's choice: block itself when ceil(items / block) blocks
 * fill every SM, else the largest power of two below block, down to 64,
 * that does, else 64 (65,536 n-body threads: 256, not
 * 1024, whose 64 blocks leave 68 of 132 SMs idle), else 64.  A larger
 * block beats a smaller one once the grid fills the device (measured on
 * an H200: Mandelbrot 2.17 ms in blocks of 640, 2.32 in blocks of 256).
 * runtime-gpu takes it for every grid-stride entry. */
int sk_ptx_launch_block(int block, int64_t items, int sms);
/* Whether the work per element of k's grid-stride entries varies (a while
 * loop in its operation or fused producers, unless every such loop runs
 * as many trips in every element: sk_kernel.even_loops): runtime-gpu
 * then launches a thread per chunk rather than a persistent grid
 * (ptx/target.c). */
bool sk_ptx_uneven(const sk_kernel *k);

/* The skeleton of operation t on target tg, or NULL (the interpreter runs
 * it) (prepare.c). */
const sk_skeleton *sk_skeleton_of(const fe_term *t, const sk_target *tg);

/* A kernel: what the runtime needs to run one collective operation. */
struct sk_kernel {
    const fe_term *op; /* the operation in the core */
    const sk_skeleton *skel;
    int nitem, cap_item;
    sk_item *item;
    int nwords;                     /* size of the argument block in words */
    int nout;                       /* output items come first */
    int kid_item[8];                /* item of kid k, or -1 */
    int aux_item[8];                /* item of auxiliary k, or -1 */
    int nentry;                     /* phases (entry points) of one variant */
    bool general;                   /* a zipWith of rank >= 2 (itself or fused:
                                 sk_zipwith_general): each phase comes in two
                                 variants, entries [0, nentry) for operands
                                 of equal shapes (linear reads) and
                                 [nentry, 2 nentry) for any shapes */
    int err_item;                   /* the error word (aux SK_ERR_AUX) */
    void *entry[SK_MAX_ENTRY];      /* their addresses, filled by the runtime */
    void *const *live[2];           /* CPU: where the JIT keeps the addresses of
                                 variant 0 (equal shapes) and 1 (general),
                                 which a tier-up replaces (cpu_jit_get_live);
                                 runs read them there when set */
    uint8_t key[32];                /* the kernel's cache key */
    unsigned flags;                 /* skeleton-specific (SK_FOLD_*) */
    int item_threads[SK_MAX_ENTRY]; /* GPU: threads that work together on
                                  one item of entry e's [0, n) (raw
                                  entries): 0 or 1 one thread, 32 a warp,
                                  SK_ITEM_BLOCK a whole block; the runtime
                                  sizes the grid by it */
    int permute_mode;   /* permute: how the combine is made atomic */
    bool privatise;     /* permute (ptx/permute.c): entry 2 combines
                                 into per-block copies of a result of at
                                 most SK_PERMUTE_SHARED_BYTES */
    bool private_parts; /* permute (cpu/permute.c): entry 2 combines
                                 each chunk of sources into its own copy
                                 of the result (aux 1), entry 3 those
                                 copies into the output */
    int block_max;      /* GPU: the most threads in a block (0: as
                                 the occupancy API likes); a skeleton
                                 that sizes shared memory for it sets it */
    int64_t chunk_min;  /* fewest elements per chunk when a row is
                                 cut into chunks (0: the backend's own) */
    bool even_loops;    /* its while loops run as many trips in
                                 every element (cg_stage_even): k-means'
                                 16 centroids a point */
    bool light;         /* little scalar work per element (at most
                                 SK_LIGHT_COST; no while loop): element-wise
                                 work is memory-bound, so sk_elements
                                 gives full chunks a straight-line body and
                                 the GPU runtime hands out chunks of
                                 sk_target.chunk_elems; heavy bodies, four
                                 at a time, only raise register pressure
                                 and divergence (measured on the H100:
                                 Black-Scholes 0.71 -> 0.86 ms, Mandelbrot
                                 2.17 -> 2.52 ms) */
    bool may_fail;      /* it can store an error code (a gather
                                 that may fall outside its source, a
                                 permute, any kernel in checked mode): the
                                 driver reads the error word only then */
    bool checked;       /* WEFT_FLAG_CHECKED: its functions report
                                 undefined operations (part of the key) */
    int number;         /* its position in the plan (messages) */
};

/* sk_kernel.flags of a fold: entry 0 (whole rows) is an empty function,
 * and the driver cuts every row into chunks (entries 1 and 2), C >= 1, or
 * C = 0 for rows of no element.  Both folds (fold.c, ptx/fold.c) set it
 * for an input of rank 1 (one row): entry 0 would only serve short
 * arrays, and it costs as much compile time as entry 1 (on the GPU a
 * short array then takes one block of entry 1 instead of one warp, see
 * SK_FOLD_LAST_BLOCK). */
#define SK_FOLD_CHUNKS_ONLY 1u
/* sk_kernel.flags of a fold of rank-1 input on the GPU (ptx/fold.c, with
 * SK_FOLD_CHUNKS_ONLY): entry 1 also finishes the fold, in the block that
 * draws the last ticket of a counter in aux 2 (an i32 array of one
 * element, zero before the run and again after it), so the driver runs
 * entry 1 alone when C > 0, and entry 2 only for an empty input (C = 0). */
#define SK_FOLD_LAST_BLOCK 2u
/* Set SK_FOLD_CHUNKS_ONLY on fold kernel k when its input has rank 1
 * (fold.c; the PTX fold too). */
void sk_fold_chunks_only(sk_kernel *k);

/* Reading one row of a fold's or a scan's input (fold.c; the scans and
 * the PTX fold too).  A fused input whose linear read costs a division
 * per element (a gather, a generate, a zipWith of different shapes) is
 * read by multi-index instead: the row's outer index components are
 * computed once per row, the innermost one per element. */
typedef struct sk_row {
    const fe_term *src; /* the input term (NULL: nothing to read) */
    cg_val ix;          /* by_index: the outer components, room for the
                           innermost one */
    LLVMValueRef base;  /* linear position of the row's first element */
    bool by_index;
} sk_row;
/* Prepare *rw to read row `row` of src (extents ext, rank >= 1; src may
 * be NULL) from linear position base; rank1 says whether an input of
 * rank 1 that is not read linearly goes by index too (the folds) or
 * linearly (the scans).  Errors: WEFT_ERR_OUT_OF_MEMORY. */
weft_status sk_row_begin(sk_fn *f, const fe_term *src, LLVMValueRef *ext,
                         LLVMValueRef row, LLVMValueRef base, bool rank1,
                         sk_row *rw);
/* The element at linear position j of the row into *out (sk_read's
 * errors). */
weft_status sk_row_read(sk_fn *f, const sk_row *rw, LLVMValueRef j,
                        cg_val *out);
/* The element at position k inside the row (k from 0) into *out. */
weft_status sk_row_read_in(sk_fn *f, const sk_row *rw, LLVMValueRef k,
                           cg_val *out);
/* Emit entry `name` of fold kernel e (sk_fn_begin, or sk_fn_begin_raw
 * when raw: a target's own skeleton) through emit(f, has_seed), or
 * nothing when empty (fold.c; the PTX fold too). */
weft_status sk_fold_entry(sk_emit *e, const char *name, bool raw, bool empty,
                          weft_status (*emit)(sk_fn *, bool), bool has_seed);
/* Whether both folds take t: one array (fold.c). */
bool sk_fold_supported(const fe_term *t);
/* Add to fold or scan kernel k the aux items of its chunked entries:
 * aux 0 the partials (rank 1 of elt), aux 1 the number of chunks per row
 * C (i64) (fold.c).  Errors: sk_add_item's. */
weft_status sk_add_chunk_items(weft_context *ctx, fe_arena *arena, sk_kernel *k,
                               weft_type elt);
/* out[i] = y, a result of fold kernel f's combine, through the function
 * the fold applies as it stores (lib/fe.h, fe_fold_post) where it has
 * one (fold.c; the PTX fold too).  Errors: cg_apply's. */
weft_status sk_fold_put(sk_fn *f, LLVMValueRef i, const cg_val *y);
/* a[i] = the value of *acc (fold.c).  Errors: cg_mut_get's. */
weft_status sk_mut_store(sk_fn *f, const cg_mut *acc, const cg_array *a,
                         LLVMValueRef i);
/* The bounds [*lo, *hi) of chunk c of a fold or scan cut into C chunks a
 * row of m elements (row c / C, piece *q = c % C, covering [q m / C,
 * (q + 1) m / C) of the row) in input positions, its row and the row's
 * first position *base (fold.c). */
void sk_chunk_bounds(sk_fn *f, LLVMValueRef c, LLVMValueRef C, LLVMValueRef m,
                     LLVMValueRef *row, LLVMValueRef *q, LLVMValueRef *base,
                     LLVMValueRef *lo, LLVMValueRef *hi);

/* The context in which a kernel's functions are emitted. */
struct sk_emit {
    weft_context *ctx;
    const fe_core *core;
    sk_kernel *k;
    fe_arena *arena; /* scratch for this module */
    LLVMContextRef llctx;
    LLVMModuleRef mod;
    const sk_target *target;
    bool uniform;  /* emitting the equal-shapes variant */
    int spmd_bits; /* CPU: vector register width in bits for SPMD element
                      functions (spmd.c); 0: none */
    bool stage;    /* PTX: a generate-family kernel whose while loops read
                      tiles through shared memory (codegen/stage.c): one
                      element per chunk, and every thread of a block runs
                      the chunk loop's trips together (ptx/target.c,
                      generate.c) */
};

/* ===== prepare.c: a kernel's layout and skeleton ===== */

/* Lay out the kernel of operation t: outputs, operands, free variables,
 * then auxiliaries; set nentry.  Memory from arena.  Errors:
 * WEFT_ERR_OUT_OF_MEMORY, WEFT_ERR_INTERNAL. */
weft_status sk_prepare(weft_context *ctx, const fe_core *core, fe_arena *arena,
                       const sk_target *tg, const fe_term *t, sk_kernel *k);

/* ===== kernel.c ===== */

/* Add an item (used by sk_prepare and the skeletons' aux items). */
weft_status sk_add_item(weft_context *ctx, fe_arena *arena, sk_kernel *k,
                        sk_item_kind kind, sk_src src, int index,
                        weft_type type, int rank);

/* Whether reading t (the operation, top, or a delayed producer inside
 * it) gathers: the reads that check bounds and may set the error word. */
bool sk_gathers(const fe_term *t, bool top);

/* Feed a canonical description of kernel k (skeleton, layout types, the
 * operation's functions with variables renumbered) to add(user, p, n). */
void sk_describe(const fe_core *core, const sk_kernel *k,
                 void (*add)(void *user, const void *p, size_t n), void *user);

/* Whether t is a zipWith that needs the any-shapes variant (sk_kernel.
 * general): of rank 2 or more, where operands of other shapes than the
 * result's put its element i at other linear positions.  Of rank 0 or 1,
 * linear position i is the index itself in every operand, so the linear
 * reads of the equal-shapes variant are right for any shapes. */
bool sk_zipwith_general(const fe_term *t);

/* Emit every entry point of k into e->mod, named names[i]. */
weft_status sk_emit_kernel(sk_emit *e, const char *const *names);
/* Emit the entry points of one variant of k (uniform: the equal-shapes
 * one, the only one unless k->general) into e->mod, named names[0 ..
 * k->nentry - 1], so that a backend may compile the general variant only
 * when a run needs it. */
weft_status sk_emit_variant(sk_emit *e, bool uniform, const char *const *names);

/* Begin entry point `name`: a cg_fn whose environment has every free
 * variable bound from the argument block, fn->array_of answering
 * parameters and used arrays, and start, end the range of the body (the
 * target's range_begin).  arr / val: the items as cg_arrays or values
 * (indexed like the items). */
struct sk_fn {
    cg_fn fn;
    LLVMValueRef start, end, args;
    LLVMValueRef n, grain; /* PTX: the kernel's n and grain parameters */
    LLVMValueRef first;    /* PTX: its first parameter (ptx/target.c):
                                 raw entries that a context over several
                                 devices splits start their items there */
    cg_array *arr;         /* per item (arrays) */
    cg_val *val;           /* per item (scalars) */
    sk_emit *e;
    bool raw; /* no range loop (sk_fn_begin_raw) */
    /* the target's range loop, between range_begin and range_end */
    LLVMBasicBlockRef loop_head, loop_exit;
    LLVMValueRef loop_i, loop_step;
    LLVMValueRef chunk;    /* PTX: c of the range [c grain, ...) */
    LLVMValueRef err_bits; /* CPU, unchecked: the i32 of the codes
                                 reported (kernel.c), or NULL */
    bool local_errors;     /* PTX, unchecked: report into err_bits too,
                                 flushed once at the end (a skeleton whose
                                 every thread reaches sk_fn_end sets it) */
};
weft_status sk_fn_begin(sk_emit *e, sk_fn *f, const char *name);
/* sk_fn_begin without the range loop: for a target's own skeletons,
 * which organise their threads themselves (start and end stay NULL). */
weft_status sk_fn_begin_raw(sk_emit *e, sk_fn *f, const char *name);
/* Close the function: the range loop, the report of checked mode
 * (sk_flush_error), ret void, and finish. */
void sk_fn_end(sk_fn *f);
/* Checked mode: put the least report key the function met into the
 * kernel's error word (nothing when none, or unchecked). */
void sk_flush_error(sk_fn *f);

/* The element loop of a range: body(f, i, user) for each i in
 * [f->start, f->end).  Where the target has a chunk size K
 * (sk_target.chunk_elems), the body is emitted twice: for a range of
 * exactly K elements as a loop of constant trip count (unrolled, so that
 * its accesses combine into vector loads and stores), and as a plain loop
 * for any other range (the full chunk is at c K, see sk_fn.chunk, when
 * the kernel's grain is K).  The body must therefore be emittable twice: it
 * may not keep values between calls. */
typedef weft_status (*sk_elem_body)(sk_fn *f, LLVMValueRef i, void *user);
weft_status sk_elements(sk_fn *f, sk_elem_body body, void *user);
/* The i1 that says the range is a full chunk of k elements (the kernel's
 * grain is k and the range has k elements: it starts at f->chunk k). */
LLVMValueRef sk_full_chunk(sk_fn *f, int k);

/* Reading array operands, manifest or fused.  sk_read gives the element of
 * array term t (the operation itself when it is a producer, one of its
 * operands, or a delayed producer inside them) at linear position i of t's
 * extent, or at multi-index ix (exactly one of i and ix is not NULL);
 * delayed producers are computed inline (fuse.c).  sk_extent gives t's
 * extents (rank values).  Gathers outside their source store
 * CG_ERR_GATHER in the error word and yield zero.  In checked mode sk_read
 * makes the position it reads the element that reports name (the linear
 * position in t's extent). */
weft_status sk_read(sk_fn *f, const fe_term *t, LLVMValueRef i,
                    const cg_val *ix, cg_val *out);
weft_status sk_extent(sk_fn *f, const fe_term *t, LLVMValueRef *ext);
/* Whether reading t by linear position costs no division (manifest
 * arrays, and maps / zipWiths of equal shapes over them): else a consumer
 * that walks rows does better to pass multi-indices. */
bool sk_linear_ok(sk_fn *f, const fe_term *t);
/* The index in the source (t->kid[0]) of replicate or slice t's element
 * at multi-index ix (leaves scalar, or vectors in SPMD code): the
 * replicated dimensions dropped, or the sliced ones filled in from the
 * slice's scalar operands.  Errors: WEFT_ERR_OUT_OF_MEMORY,
 * WEFT_ERR_INTERNAL. */
weft_status sk_source_index(sk_fn *f, const fe_term *t, const cg_val *ix,
                            cg_val *out);
/* The manifest array that array term t denotes in this kernel (an
 * operand, a free array variable, a parameter, a used array), or NULL. */
const cg_array *sk_manifest_array(sk_fn *f, const fe_term *t);
/* A report of code (cg_err) where fn->b is: in checked mode a cg_check
 * for the current element, else straight into the kernel's error word
 * with no element. */
void sk_set_error(sk_fn *f, int code);
/* Put report key `key` (an i64, codegen/cg.h CG_KEY_*) into the kernel's
 * error word where it is less than what is there: for a skeleton's own
 * reports that name an element of their own (ptx/foldseg.c: a segment). */
void sk_report_key(sk_fn *f, LLVMValueRef key);
/* The i32 of the codes an unchecked CPU entry (or a PTX one with
 * local_errors) reported so far, a bit per cg_err, made and zeroed at the
 * function's entry on first use; sk_flush_error stores the least. */
LLVMValueRef sk_err_bits(sk_fn *f);

/* Helpers for emitters. */
/* The cg_array of kid k of the operation / output o / aux a. */
const cg_array *sk_kid_array(sk_fn *f, int k);
const cg_array *sk_out_array(sk_fn *f, int o);
/* An sk_elements body: store the kernel's operation at i into output 0
 * (generate.c; the element-wise producers and reshape's transforms). */
weft_status sk_store_element(sk_fn *f, LLVMValueRef i, void *user);
const cg_val *sk_kid_value(sk_fn *f, int k);
const cg_array *sk_aux_array(sk_fn *f, int a);
const cg_val *sk_aux_value(sk_fn *f, int a);
/* The product of the extents of array a (i64). */
LLVMValueRef sk_size(sk_fn *f, const cg_array *a);
/* A multi-index as a cg_val of i64 leaves from linear index i in a shape
 * given as rank extents. */
weft_status sk_from_linear(sk_fn *f, int rank, LLVMValueRef const *extent,
                           LLVMValueRef i, cg_val *ix);

/* ===== spmd.c: the generate family over W lanes (CPU) ===== */

/* Emit entry point `name` of a generate-family kernel with its element
 * function over W lanes (W from e->spmd_bits), a vector loop and a scalar
 * remainder.  *done false (and nothing added to e->mod) where the kernel
 * is not vectorised: the caller emits its scalar loop.  Errors:
 * WEFT_ERR_OUT_OF_MEMORY, and those of sk_fn_begin. */
weft_status sk_spmd_generate(sk_emit *e, const char *name, bool *done);
/* fold.c's acc = f(acc, src[j]) for j in [lo, hi) of a row starting at
 * linear position base, when src's elements run a while loop: W elements
 * at a time over lanes, combined lane after lane in order (the scalar
 * code's order), and *rest where the scalar loop must go on (lo when
 * nothing was emitted).  row_ix: the row's multi-index (its outer
 * components), when src is read by multi-index; NULL: by linear position.
 * Errors: those of code generation (nothing is left half-emitted only on
 * success). */
weft_status sk_spmd_fold_range(sk_fn *f, const cg_mut *acc, const fe_term *src,
                               const cg_val *row_ix, LLVMValueRef base,
                               LLVMValueRef lo, LLVMValueRef hi,
                               LLVMValueRef *rest);
/* fold.c's entry 0 (whole rows) of a light kernel (sk_kernel.light) over
 * W rows at a time, for rows of at most max_len elements: emit entry
 * point `name`, whose lanes hold W
 * consecutive rows (lane k row r + k) and run acc = f(acc, src[row, j])
 * for j from 0 (fold: acc the seed) or 1 (fold1: acc element 0) up the
 * row, each lane in the scalar loop's order, so the results are the
 * scalar code's; then rest(f, has_seed) emits the scalar loop over the
 * rows left (f->start moved past the vector rows; all of them when rows
 * are longer).  *done false (and nothing added to e->mod) where the
 * kernel is not vectorised: the caller emits its scalar entry.  Errors:
 * WEFT_ERR_OUT_OF_MEMORY, and those of sk_fn_begin. */
typedef weft_status (*sk_fold_rest)(sk_fn *f, bool has_seed);
/* W above is SK_FOLD_ROW_GROUPS vectors of the target's width: the
 * combine's chain through the accumulator (k-means' nearest centroid: a
 * compare, an or and a blend a column) is a loop-carried latency, which
 * four independent vectors hide (k-means' fold on 2^18 cached points,
 * one core: 0.66 -> 0.31 ms; on 2^22, 11.0 -> 5.2 ms).  W is at most
 * SK_FOLD_ROWS_LANES_MAX, and the CPU driver cuts such a fold's rows in
 * chunks of a multiple of that (runtime-cpu/backend.c, phase_grain), so
 * that few rows of a chunk are left to the scalar loop. */
#define SK_FOLD_ROW_GROUPS 4
#define SK_FOLD_ROWS_LANES_MAX 64
weft_status sk_spmd_fold_rows(sk_emit *e, const char *name, bool has_seed,
                              int64_t max_len, sk_fold_rest rest, bool *done);

/* ===== permute.c: what a target's own permute shares ===== */

/* Whether permute t computes a fused (delayed) default inline, in its
 * default's entry (and on PTX in entry 2): where computing it cannot
 * store an error (no gather in it, not checked mode), so that the errors
 * a run reports stay the interpreter's, which computes the default
 * first.  runtime/plan.c makes other defaults arrays of their own. */
bool sk_permute_fuses_default(const fe_term *t, bool checked);
/* The default's entry of permute kernel k (the last one, k->nentry - 1:
 * out[i] = def[i] over the output's positions, run before the loop over
 * the sources), or -1 when the default is an array the driver copies. */
int sk_permute_init_entry(const sk_kernel *k);

/* r[j] = combine(x, r[j]) for one element, r an array of the output's
 * type and shape (the output itself, or a block's copy of it). */
typedef weft_status (*sk_permute_update)(sk_fn *f, const cg_array *r,
                                         LLVMValueRef j, const cg_val *x);
/* Whether permute t's combine is one native atomicrmw on a scalar result
 * (PERMUTE_RMW), and which operation. */
bool sk_permute_rmw_op(const fe_term *t, LLVMAtomicRMWBinOp *op);
/* The most leaves of a componentwise combine (sk_permute_rmw_ops). */
#define SK_PERMUTE_LEAVES_MAX 8
/* Whether permute t's combine is one native atomicrmw a leaf of its
 * result (PERMUTE_RMW): a scalar combine as sk_permute_rmw_op, or a flat
 * tuple whose component l combines component l of both arguments alone
 * (`\(a, b) (c, d) -> (a + c, min b d)`).  The operations into
 * ops[SK_PERMUTE_LEAVES_MAX]; returns the number of leaves, 0 when the
 * combine is not of this form. */
int sk_permute_rmw_ops(const fe_term *t, LLVMAtomicRMWBinOp *ops);
/* Those atomicrmws, one a leaf, through the target's atomic_rmw. */
weft_status sk_permute_update_rmw(sk_fn *f, const cg_array *r, LLVMValueRef j,
                                  const cg_val *x);
/* r[j] = combine(x, r[j]) with a plain read and write (one worker owns
 * r's element j). */
weft_status sk_permute_update_plain(sk_fn *f, const cg_array *r, LLVMValueRef j,
                                    const cg_val *x);
/* The identity of atomicrmw op on type ty (a constant): 0 for add, or,
 * xor and unsigned max, all ones for and and unsigned min, the largest
 * value for min and the smallest for max, and -0.0 for fadd (x + -0.0 is
 * x for every x, -0.0 and NaN included, where 0.0 turns -0.0 into 0.0).
 * Combining it changes nothing, bit for bit. */
LLVMValueRef sk_permute_identity(cg_fn *fn, LLVMAtomicRMWBinOp op,
                                 weft_type ty);
/* Before the loop over source positions: the source's extents into
 * sext[WEFT_MAX_RANK] and, for a rank-0 result, fn->ignored.  A source
 * that is a fused `generate (shape a) f`, a an array the kernel reads,
 * takes a's extents (the same values), so that an index function reading
 * a at the source position compares against them. */
weft_status sk_permute_begin(sk_fn *f, LLVMValueRef *sext);
/* Source position i (i64): read src[i] (sk_read), apply the index
 * function; nothing when the target is `ignore`, CG_ERR_PERMUTE when it
 * lies outside r's extents, else update(f, r, linear target, src[i]). */
weft_status sk_permute_step(sk_fn *f, const cg_array *r,
                            const LLVMValueRef *sext, LLVMValueRef i,
                            sk_permute_update update);
/* sk_permute_step in two halves, so that a target may compute several
 * positions' targets before it updates (their reads then sit together):
 * sk_permute_target reads src[i] and applies the index function (no
 * branch of its own), sk_permute_put makes the update or the report. */
typedef struct sk_permute_elem {
    LLVMValueRef i;       /* the source position */
    cg_val x;             /* src[i] */
    LLVMValueRef ignored; /* i1: the target is `ignore` */
    LLVMValueRef inside;  /* i1: the target lies inside r */
    LLVMValueRef j;       /* the linear target (meaningful when inside) */
} sk_permute_elem;
weft_status sk_permute_target(sk_fn *f, const cg_array *r,
                              const LLVMValueRef *sext, LLVMValueRef i,
                              sk_permute_elem *e);
weft_status sk_permute_put(sk_fn *f, const cg_array *r,
                           const sk_permute_elem *e, sk_permute_update update);
/* The number of source positions (the product of sext, the source's
 * extents from sk_permute_begin), and an llvm.assume that position i lies
 * below it: every position a loop over [0, n) reaches does, and an index
 * function's bounds check against the same extents then folds away (see
 * sk_permute_begin). */
LLVMValueRef sk_permute_source_size(sk_fn *f, const LLVMValueRef *sext);
void sk_permute_assume_inside(sk_fn *f, LLVMValueRef i, LLVMValueRef ssize);
/* The positions g[b] .. g[b] + count - 1 for b < ng (ng count <=
 * SK_PERMUTE_GROUP_MAX, each inside the source): their targets first
 * (sk_permute_target), then put(f, r, e, user) for each in order
 * (sk_permute_put, or a target's own). */
#define SK_PERMUTE_GROUP_MAX 8
typedef weft_status (*sk_permute_put_fn)(sk_fn *f, const cg_array *r,
                                         const sk_permute_elem *e, void *user);
weft_status sk_permute_group(sk_fn *f, const cg_array *r,
                             const LLVMValueRef *sext, LLVMValueRef ssize,
                             const LLVMValueRef *g, int ng, int count,
                             sk_permute_put_fn put, void *user);

/* ===== stencil.c: what a target's own stencil shares ===== */

/* Window elements (both arrays together) above which stencil.c's kernel
 * takes its compact form (a loop over the window): LLVM's optimisation
 * time grows faster than linearly with an unrolled window (a 7x7x7 one
 * costs seconds).  The GPU's tiles unroll the window, so such stencils
 * run stencil.c's kernel there too. */
#define SK_STENCIL_COMPACT 100

/* The value of side `which` (0 or 1) of the stencil's constant boundary
 * into *out, or NULL when its boundary is not constant.  Errors:
 * WEFT_ERR_INTERNAL (a constant boundary without its value). */
weft_status sk_stencil_boundary_value(sk_fn *f, int which, const cg_val **out);

/* ===== scan.c: what the PTX scan shares ===== */

/* What kind of scan an operation is. */
typedef struct sk_scan_info {
    bool seeded; /* has z (scanl, scanl', scanr, scanr') */
    bool left;
    bool pair;          /* scanl', scanr': a second output of totals */
    bool grow;          /* scanl, scanr: rows of m + 1 */
    bool exclusive;     /* scanl, scanl', scanr' write acc before combining */
    weft_type elt;      /* element type */
    const fe_term *src; /* the input array term */
    const fe_fun *comb;
} sk_scan_info;
/* The kind of scan t (any of the six) is. */
sk_scan_info sk_scan_info_of(const fe_term *t);
/* Whether both scans take t: one output array (two for scanl', scanr')
 * and one function. */
bool sk_scan_supported(const fe_term *t);

/* ===== ptx/common.c: what the PTX target's own skeletons share ===== */

/* x (i64) through an inline-assembly copy that the optimiser cannot see
 * through: what it computes from x stays where it is used, instead of
 * being strength-reduced or hoisted out of a loop into registers kept
 * across it. */
LLVMValueRef sk_ptx_opaque(cg_fn *fn, LLVMValueRef x);

/* Opens *fin, entered by the grid's last block to take a ticket: thread
 * 0 of each block (fenced first when fence is true) adds one to *ticket
 * (i32) and the block that drew the grid's size less one (of the ticket's
 * bits in mask, unless mask is 0) enters, after a barrier and a fence.
 * The caller closes *fin.  Returns tid == 0. */
LLVMValueRef sk_ptx_last_block(cg_fn *fn, LLVMValueRef tid, LLVMValueRef ticket,
                               bool fence, uint32_t mask, cg_if *fin);

/* Volatile load / store of element i of a leaf buffer of type t at base
 * (cg_array_load and cg_array_store of one leaf, volatile, with the
 * leaf's natural alignment stated): the tile status words of the
 * look-back scans (ptx/scan.c, ptx/foldseg.c).  A bool is i1 in
 * registers and a byte in memory. */
LLVMValueRef sk_ptx_vload(cg_fn *fn, weft_type t, LLVMValueRef base,
                          LLVMValueRef i);
void sk_ptx_vstore(cg_fn *fn, weft_type t, LLVMValueRef base, LLVMValueRef i,
                   LLVMValueRef x);

/* ===== ptx/stencil.c ===== */

/* sk_kernel.flags of a stencil of rank 2 or 3 on the GPU in shared-memory
 * tiles (ptx/stencil.c): entry 0 takes a tile of sk_stencil_tile_w x
 * sk_stencil_tile_h result elements of one plane per block (n = the
 * number of tiles, grain 1, item_threads SK_ITEM_BLOCK), and the driver
 * counts the tiles (runtime/exec_stencil.c).  Without it the kernel is
 * stencil.c's. */
#define SK_STENCIL_TILED 1u
/* sk_kernel.flags of the GPU's other stencils (stencil.c's kernel: rank
 * 1, and ranks 2 and 3 where no tile fits): the driver cuts rows into
 * pieces of a few columns (ST_FINE_PIECE), so that consecutive threads
 * take consecutive pieces of a row (coalesced) and a row of any length
 * spreads over the grid (pieces of 4096 columns, the CPU's, gave a
 * rank-1 array of 2 million elements 488 threads). */
#define SK_STENCIL_FINE 2u
int sk_stencil_tile_w(unsigned flags);
int sk_stencil_tile_h(unsigned flags);

/* ===== ptx/permute.c ===== */

/* The most bytes of result that entry 2 of the PTX permute keeps per block
 * in shared memory (its shared array's static size). */
#define SK_PERMUTE_SHARED_BYTES 32768
/* Entry 2's `first` for a part of a launch split over several devices
 * (runtime-gpu/backend.c launch_permute, ptx/permute.c "Several
 * devices"; the part's sources start at its `skip`): its first chunk
 * from there with SK_PERMUTE_SPLIT, and how its blocks
 * flush: each straight into the output (reductions of system scope), or,
 * with SK_PERMUTE_ACC, into accumulators in aux 1 on the part's device
 * (the second half of aux 1 with SK_PERMUTE_HIGH: the first device's;
 * the others' are copies of its zero first half), which the part's last
 * block reduces into the output.  Without a part `first` is 0. */
#define SK_PERMUTE_SPLIT ((int64_t)1 << 62)
#define SK_PERMUTE_ACC ((int64_t)1 << 61)
#define SK_PERMUTE_HIGH ((int64_t)1 << 60)
/* ... and, with a fused default, the number of parts (each part's last
 * block reduces into a set of the first device's, and the last part's
 * writes the output: no launch writes the default first) */
#define SK_PERMUTE_PARTS_SHIFT 52
#define SK_PERMUTE_PARTS_MAX 0xff
#define SK_PERMUTE_PARTS(n) ((int64_t)(n) << SK_PERMUTE_PARTS_SHIFT)
#define SK_PERMUTE_MODE                                                        \
    (SK_PERMUTE_SPLIT | SK_PERMUTE_ACC | SK_PERMUTE_HIGH |                     \
     SK_PERMUTE_PARTS(SK_PERMUTE_PARTS_MAX))
#define SK_LIGHT_COST 32 /* sk_kernel.light: operations (math functions 8) */

/* ===== the skeletons, one file each (see each file's head comment) ===== */

extern const sk_skeleton sk_generate;     /* generate.c */
extern const sk_skeleton sk_fold;         /* fold.c */
extern const sk_skeleton sk_scan;         /* scan.c */
extern const sk_skeleton sk_permute;      /* permute.c */
extern const sk_skeleton sk_fold_seg;     /* foldseg.c */
extern const sk_skeleton sk_stencil;      /* stencil.c */
extern const sk_skeleton sk_reshape;      /* reshape.c */
extern const sk_skeleton sk_ptx_fold;     /* ptx/fold.c */
extern const sk_skeleton sk_ptx_scan;     /* ptx/scan.c */
extern const sk_skeleton sk_ptx_permute;  /* ptx/permute.c */
extern const sk_skeleton sk_ptx_fold_seg; /* ptx/foldseg.c */
extern const sk_skeleton sk_ptx_stencil;  /* ptx/stencil.c */
extern const sk_skeleton sk_cpu_permute;  /* cpu/permute.c */

#endif /* WEFT_SK_H */
