/*
 * tests/fuzz/fuzz.h: weft's differential fuzzer (issue 10, item 4).
 *
 * The fuzzer keeps its own small AST of weft programs (fz_prog: a pool of
 * nodes, scalar and array terms and functions alike, that refer to each
 * other by index, so that a node used twice is a shared term, a let after
 * sharing recovery).  It
 *   - generates a random well-typed program from a seed   (gen.c)
 *   - rebuilds it through the public API in any context  (build.c)
 *   - runs it on the interpreter (the oracle) and on every compiled
 *     backend, fused and unfused, and compares          (run.c)
 *   - shrinks a mismatching program                      (shrink.c)
 *   - prints a program as C builder calls                (print.c)
 *   - drives all of this over seed ranges in worker processes (main.c).
 * Only weft.h is used, so the binary runs from the GPU bundle too.
 *
 * Exactness.  Every value whose type is not floating is exact by
 * construction: the generator feeds comparisons, conversions to integers,
 * bit-casts and index computations only with "exact" floats.  A float is
 * inexact when it went through a primitive whose result may differ between
 * libm, LLVM's intrinsics and libdevice (exp, log, sin, pow, ...) or a fold,
 * scan or permute whose combination order is unspecified; node.inexact
 * records it and the runner compares such floats with a tolerance.
 */
#ifndef WEFT_FUZZ_H
#define WEFT_FUZZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "weft.h"

#define FZ_MAXK 8 /* kids of one node */
#define FZ_MAXT 3 /* components of a tuple element type */
#define FZ_MAXNODES 1024
#define FZ_MAXROOTS 3

/* ------------------------------------------------------------------------
 * Types: a scalar, a flat tuple of scalars, or an index of some rank.
 * ---------------------------------------------------------------------- */

enum { FZ_SCALAR, FZ_TUPLE, FZ_DIMT };

typedef struct fz_ty {
    int8_t kind;          /* FZ_SCALAR, FZ_TUPLE, FZ_DIMT */
    int8_t n;             /* tuple: components; dim: rank */
    weft_type s[FZ_MAXT]; /* scalar: s[0]; tuple: s[0..n-1] */
} fz_ty;

fz_ty fz_scalar(weft_type t);
fz_ty fz_dim(int rank);
bool fz_ty_eq(fz_ty a, fz_ty b);
int fz_ty_leaves(fz_ty t);            /* buffers of an array of t */
weft_type fz_ty_leaf(fz_ty t, int i); /* scalar type of leaf i */
weft_type fz_ty_weft(weft_context *ctx, fz_ty t);
void fz_ty_str(fz_ty t, char *buf, size_t n);
const char *fz_tname(weft_type t);
bool fz_is_int(weft_type t);
bool fz_is_signed(weft_type t);
bool fz_is_float(weft_type t);
int fz_bits(weft_type t);
size_t fz_size(weft_type t);
bool fz_ty_has_float(fz_ty t);

/* ------------------------------------------------------------------------
 * Nodes
 * ---------------------------------------------------------------------- */

typedef enum fz_op {
#define FZ_OP(op, name, how, call, kids) op,
#include "ops.h"
#undef FZ_OP
    FZ_NOPS
} fz_op;

enum { FZ_SCANL, FZ_SCANL1, FZ_SCANL_, FZ_SCANR, FZ_SCANR1, FZ_SCANR_ };

typedef struct fz_node {
    fz_op op;
    int nkid;
    int kid[FZ_MAXK];
    fz_ty ty;  /* scalar terms: the type; arrays: the element type */
    int rank;  /* arrays */
    int arity; /* arrays: arrays in the term (a tuple of arrays > 1) */
    int aux, aux2;
    uint64_t val;        /* E_CONST */
    int win[3], win2[3]; /* stencils */
    /* functions: nargs arguments, the first cnt[0] of type argt[0], the
     * next cnt[1] of argt[1], the rest of argt[2] */
    int nargs, cnt[3];
    fz_ty argt[3];
    int64_t sh[3]; /* A_USE: the shape; others: as the generator knew it */
    bool shk;      /* sh known */
    void *data[FZ_MAXT]; /* A_USE: a buffer per leaf (malloc'd) */
    bool inexact;        /* may hold floats that differ between backends */
    bool unordered;      /* may hold floats of an f16 sum or product whose
                        order is unspecified: not compared at all */
    bool partial;        /* scalar: may fail at run (div, !, conversion) */
    int scope;           /* the function or afun node it was made in, -1 top */
    bool dead;           /* dropped by the shrinker */
} fz_node;

typedef struct fz_prog {
    int n;
    fz_node *node; /* node[0..n-1] */
    int nroot;
    int root[FZ_MAXROOTS];
    uint64_t seed;
    unsigned features; /* FZ_F_* it was generated with */
} fz_prog;

fz_prog *fz_prog_new(void);
fz_prog *fz_prog_clone(const fz_prog *p);
void fz_prog_free(fz_prog *p);
int fz_node_add(fz_prog *p, fz_node n); /* -1 when full */
int64_t fz_use_size(const fz_node *n);
bool fz_is_array_op(fz_op op);
const char *fz_op_name(fz_op op);
int fz_count_live(const fz_prog *p); /* nodes reachable from the roots */
void fz_mark_live(const fz_prog *p, bool *live);

/* ------------------------------------------------------------------------
 * Random numbers (splitmix64)
 * ---------------------------------------------------------------------- */

typedef struct fz_rng {
    uint64_t s;
} fz_rng;

uint64_t fz_next(fz_rng *r);
int fz_below(fz_rng *r, int n);     /* 0 .. n-1 */
bool fz_chance(fz_rng *r, int pct); /* true pct% of the time */

/* Half precision by hand (round to nearest even). */
uint16_t fz_half_from_double(double d);
double fz_half_to_double(uint16_t h);

/* ------------------------------------------------------------------------
 * Generator (gen.c)
 * ---------------------------------------------------------------------- */

/* Features the generator may use: all on by default; --without NAME turns
 * one off (for a construct known to be broken while it is being fixed). */
#define FZ_FEATURES(X)                                                         \
    X(PERMUTE, "permute")                                                      \
    X(STENCIL, "stencil")                                                      \
    X(AWHILE, "awhile")                                                        \
    X(WHILE, "while")                                                          \
    X(SEG, "seg")                                                              \
    X(SCAN, "scan")                                                            \
    X(FOLD, "fold")                                                            \
    X(TUPLES, "tuples")                                                        \
    X(F16, "f16")                                                              \
    X(INEXACT, "inexact")                                                      \
    X(PARTIAL, "partial")                                                      \
    X(BIG, "big")                                                              \
    X(PARAM, "param")                                                          \
    X(ACOND, "acond")                                                          \
    X(SHAPEOPS, "shapeops")

enum {
#define FZ_FEATURE_BIT(name, str) FZ_FB_##name,
    FZ_FEATURES(FZ_FEATURE_BIT)
#undef FZ_FEATURE_BIT
        FZ_NFEATURES
};
#define FZ_F(name) (1u << FZ_FB_##name)
#define FZ_F_ALL ((1u << FZ_NFEATURES) - 1)

fz_prog *fz_generate(uint64_t seed, unsigned features, int size);

/* ------------------------------------------------------------------------
 * Building (build.c)
 * ---------------------------------------------------------------------- */

typedef struct fz_built {
    weft_program *p;
    weft_acc *results[FZ_MAXROOTS];
    int nresults;
    int nouts;              /* arrays the executable returns */
    weft_array *params[64]; /* in weft_param order (owned) */
    int nparams;
    int out_root[16]; /* per output: its root */
    int out_comp[16]; /* per output: component of that root */
} fz_built;

/* Build prog in ctx.  WEFT_OK, or the program's builder status (message
 * in weft_last_error / the program). */
weft_status fz_build(weft_context *ctx, const fz_prog *prog, fz_built *b);
void fz_built_free(fz_built *b);

/* ------------------------------------------------------------------------
 * Running and comparing (run.c)
 * ---------------------------------------------------------------------- */

#define FZ_MAX_CONFIGS 7 /* the oracle and the configurations main.c knows */

typedef struct fz_config {
    const char *name; /* "interp", "cpu", "cpu-nofuse", ... */
    weft_backend backend;
    unsigned flags;
    weft_context *ctx;
} fz_config;

typedef struct fz_result {
    weft_status status;
    char msg[256];
    int nouts;
    weft_type type[16]; /* per output leaf buffer, flattened below */
    int rank[16];
    int64_t shape[16][8];
    int nleaf[16];
    weft_type leaft[16][FZ_MAXT];
    void *data[16][FZ_MAXT]; /* malloc'd copies */
    bool fused;              /* a compiled backend with fusion on */
    bool fusion;             /* any backend with fusion on */
    weft_backend backend;
} fz_result;

void fz_result_free(fz_result *r);
/* Build, compile and run prog on c; fills *r. */
void fz_run_one(const fz_prog *prog, fz_config *c, fz_result *r);

enum {
    FZ_SAME = 0,
    FZ_SKIP,  /* the oracle failed in a way that an unchecked
                         backend may not report; not compared */
    FZ_BUILD, /* the program does not build (generator bug) */
    FZ_DIFF_STATUS,
    FZ_DIFF_SHAPE,
    FZ_DIFF_VALUE,
    FZ_CRASH,       /* the worker died (signal) or hung */
    FZ_INTERNAL,    /* some configuration said WEFT_ERR_INTERNAL */
    FZ_OTHER_ERROR, /* both failed at run, with different errors, on a
                         configuration with fusion: agreed unless
                         --strict-status */
    FZ_FUSED_OK,    /* the oracle failed at run, a fused compiled run did
                         not: it never computed the failing element (agreed,
                         docs/language.md, "Fusion") */
};

/* Compare the result of config c against the oracle's; a description of
 * the first difference goes to why (size n). */
int fz_compare(const fz_prog *prog, const fz_result *oracle, const fz_result *r,
               char *why, size_t n);

/* How often the oracle returned each status (in this process). */
extern long fz_oracle_status[32];

/* Where fz_check writes the name of the configuration it is running (so
 * that a parent can tell which one a dead worker was in), or NULL. */
extern char *fz_running_name;

/* --strict-status: two different run-time errors are a mismatch. */
extern bool fz_strict_status;

/* Does the current build define checked mode? */
bool fz_checked(void);

/* Run prog on every config (configs[0] is the oracle); the verdict is the
 * worst; *bad names the first config that differs.  why: description. */
int fz_check(const fz_prog *prog, fz_config *configs, int nconfig, int *bad,
             char *why, size_t n);

/* ------------------------------------------------------------------------
 * Shrinking (shrink.c), printing (print.c)
 * ---------------------------------------------------------------------- */

/* test(prog, user) says whether prog still shows the failure. */
typedef bool (*fz_test_fn)(const fz_prog *prog, void *user);
fz_prog *fz_shrink(const fz_prog *prog, fz_test_fn test, void *user,
                   int max_tests, bool verbose);

void fz_print_c(const fz_prog *prog, FILE *out);

#endif
