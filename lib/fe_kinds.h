/*
 * lib/fe_kinds.h: the array terms of the core language and what each pass
 * needs to know about them, as an X-macro table, one row per kind:
 *   FE_KIND(NAME, name, family, producer, fusible, gather, kids, funs, eval)
 * It is expanded into the array part of fe_kind (fe.h: FE_NAME, in this
 * order), into fe_kinds[] (lib/kinds.c) and into the interpreter's
 * dispatch (lib/interp.c); each pass reads a column instead of listing
 * kinds in a switch: fusion (producer, fusible), the choice of skeleton
 * (family, skeletons-ir/kernel.c), bounds-checked reads (gather), dumps
 * and plan names (name), the core's checker (kids, funs: lib/verify.c),
 * the interpreter (eval).
 *
 * The columns:
 *   name      the name in dumps ("?" for NULL: terms printed otherwise).
 *   family    the skeleton family that computes it as a kernel: GENERATE,
 *             FOLD, SCAN, PERMUTE, FOLD_SEG, STENCIL, RESHAPE; NONE for
 *             what the plan does without a kernel of its own.
 *   producer  YES: it may be fused (delayed) into its consumer, computed
 *             element by element where the consumer reads it (when it is
 *             one array, not a tuple of them); NO otherwise.
 *   fusible   which operands (kid numbers) may be delayed producers:
 *             NONE, K0, K1, K01, or ALL.
 *   gather    YES: it reads an operand at indices it computes (checked
 *             against the operand's extent); NO otherwise.
 *   kids      how many operands (fe_term kid) it has: a number, 2_3 (two
 *             or three), SPEC (the array and 0 to WEFT_MAX_RANK entries of
 *             a specification) or MANY (one or more).
 *   funs      how many functions (fe_term fun) it has.
 *   eval      the interpreter's evaluator acc_<eval> (lib/interp.c), or
 *             NONE where eval_acc_op handles the kind itself.
 * The comment after a row is the term's layout (fe_term: kid, fun, u).
 * A new array operation is a row here, its builder (build.c), its
 * evaluator, and its skeleton's support.  No guard: included where
 * expanded.
 */
/* A table, one column a fact: laid out by hand. */
/* clang-format off */
/*      NAME         name           family    prod fusible gather kids funs eval */
FE_KIND(USE,         NULL,          NONE,     NO,  NONE, NO,  0,    0,    NONE)
    /* u.array */
FE_KIND(PARAM,       NULL,          NONE,     NO,  NONE, NO,  0,    0,    NONE)
    /* u.index: parameter number */
FE_KIND(AARG,        NULL,          NONE,     NO,  NONE, NO,  0,    0,    NONE)
    /* builder only: u.arg.fun (an afun), its argument */
FE_KIND(UNIT,        "unit",        RESHAPE,  NO,  NONE, NO,  1,    0,    unit)
    /* kid[0] exp */
FE_KIND(GENERATE,    "generate",    GENERATE, YES, NONE, NO,  1,    1,    generate)
    /* kid[0] sh; fun[0] */
FE_KIND(MAP,         "map",         GENERATE, YES, K0,   NO,  1,    1,    map)
    /* fun[0]; kid[0] */
FE_KIND(ZIPWITH,     "zipwith",     GENERATE, YES, ALL,  NO,  2_3,  1,    zipwith)
    /* fun[0]; kid[0..nkid-1] (2 or 3 arrays) */
FE_KIND(RESHAPE,     "reshape",     RESHAPE,  YES, K1,   NO,  2,    0,    reshape)
    /* kid: sh, a */
FE_KIND(REPLICATE,   "replicate",   RESHAPE,  YES, K0,   YES, SPEC, 0,    replicate)
    /* kid[0] a; kid[1..] spec (FE_ALL or i64 exp) */
FE_KIND(SLICE,       "slice",       RESHAPE,  YES, K0,   YES, SPEC, 0,    slice)
    /* kid[0] a; kid[1..] spec (FE_ALL or i64 exp) */
FE_KIND(BACKPERMUTE, "backpermute", GENERATE, YES, K1,   YES, 2,    1,    backpermute)
    /* kid: sh, a; fun[0] ix */
FE_KIND(TRANSFORM,   "transform",   GENERATE, YES, K1,   YES, 2,    2,    backpermute)
    /* kid: sh, a; fun: ix, f */
FE_KIND(FOLD,        "fold",        FOLD,     NO,  K1,   NO,  2,    1,    fold)
    /* fun[0]; kid: z, a */
FE_KIND(FOLD1,       "fold1",       FOLD,     NO,  K0,   NO,  1,    1,    fold)
    /* fun[0]; kid: a */
FE_KIND(FOLD_SEG,    "fold_seg",    FOLD_SEG, NO,  K1,   NO,  3,    1,    fold_seg)
    /* fun[0]; kid: z, a, seg */
FE_KIND(FOLD1_SEG,   "fold1_seg",   FOLD_SEG, NO,  K0,   NO,  2,    1,    fold_seg)
    /* fun[0]; kid: a, seg */
FE_KIND(SCANL,       "scanl",       SCAN,     NO,  K1,   NO,  2,    1,    scan)
    /* fun[0]; kid: z, a */
FE_KIND(SCANL1,      "scanl1",      SCAN,     NO,  K0,   NO,  1,    1,    scan)
    /* fun[0]; kid: a */
FE_KIND(SCANL_,      "scanl'",      SCAN,     NO,  K1,   NO,  2,    1,    scan)
    /* fun[0]; kid: z, a; a pair (scan, totals) */
FE_KIND(SCANR,       "scanr",       SCAN,     NO,  K1,   NO,  2,    1,    scan)
    /* fun[0]; kid: z, a */
FE_KIND(SCANR1,      "scanr1",      SCAN,     NO,  K0,   NO,  1,    1,    scan)
    /* fun[0]; kid: a */
FE_KIND(SCANR_,      "scanr'",      SCAN,     NO,  K1,   NO,  2,    1,    scan)
    /* fun[0]; kid: z, a; a pair (scan, totals) */
FE_KIND(PERMUTE,     "permute",     PERMUTE,  NO,  K01,  YES, 2,    2,    permute)
    /* fun: combine, ix; kid: def, src */
FE_KIND(STENCIL,     "stencil",     STENCIL,  NO,  NONE, NO,  2,    1,    stencil)
    /* fun[0]; kid: a, boundary value or NULL; u.st */
FE_KIND(STENCIL2,    "stencil2",    STENCIL,  NO,  NONE, NO,  4,    1,    stencil)
    /* fun[0]; kid: a1, value1|NULL, a2, value2|NULL; u.st */
FE_KIND(ACOND,       "acond",       NONE,     NO,  NONE, NO,  3,    0,    NONE)
    /* kid: c, t, e */
FE_KIND(AWHILE,      "awhile",      NONE,     NO,  NONE, NO,  1,    2,    awhile)
    /* fun: cond, body (afuns); kid[0] init */
FE_KIND(ATUPLE,      NULL,          NONE,     NO,  NONE, NO,  MANY, 0,    atuple)
    /* kid: components */
FE_KIND(AGET,        "aget",        NONE,     NO,  NONE, NO,  1,    0,    aget)
    /* kid[0]; u.index */
/* clang-format on */
