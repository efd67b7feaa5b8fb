/*
 * tests/fuzz/ops.h: the fuzzer's node kinds, as an X-macro table:
 *   FZ_OP(NAME, name, how, call, kids)
 * expanded into fz_op (fuzz.h, in this order: scalar terms, functions,
 * then array terms from A_USE), the summary's names (ast.c), and the
 * builder (build.c) and printer (print.c) of the kinds that are one call
 * of weft.h.
 *   name   the name in the run's summary.
 *   how    CALL: the node is weft_<call>(kid0, kid1, ...), each kid as
 *          kids says; SPECIAL: build.c and print.c handle it by hand (its
 *          call takes more than its kids in order: aux, p, a list).
 *   call   the weft.h function without weft_ (CALL), _ (SPECIAL).
 *   kids   the kids' kinds, in order: E (scalar term), F (function), G
 *          (array function), A (array term); () for SPECIAL.
 * The comment after a row is the node's layout.  A new operation is a row
 * here and, in the generator (gen.c), the code that makes one.  No guard:
 * included where expanded.
 */
/*    NAME           name           how      call         kids */
/* scalar terms */
FZ_OP(E_CONST, "const", SPECIAL, _, ())
/* val (bits of the scalar) */
FZ_OP(E_ARG, "arg", SPECIAL, _, ())
/* aux: function node, aux2: argument number */
FZ_OP(E_PRIM, "prim", SPECIAL, _, ())
/* aux: weft_op; kids: 1 or 2 operands */
FZ_OP(E_PRIMT, "primt", SPECIAL, _, ())
/* aux: floor, ceiling, round, truncate, convert, bitcast */
FZ_OP(E_COND, "cond", CALL, cond, (E, E, E))
/* c, t, e */
FZ_OP(E_TUPLE, "tuple", SPECIAL, _, ())
/* n components */
FZ_OP(E_GET, "get", SPECIAL, _, ())
/* aux: component; kid: tuple or index */
FZ_OP(E_INDEX, "index", SPECIAL, _, ())
/* rank components (i64) */
FZ_OP(E_SHAPE, "shape", CALL, shape, (A))
/* kid: array */
FZ_OP(E_SIZE, "size", CALL, size, (A))
/* kid: array */
FZ_OP(E_SHAPE_SIZE, "shape_size", CALL, shape_size, (E))
/* kid: shape */
FZ_OP(E_TO_INDEX, "to_index", CALL, to_index, (E, E))
/* sh, ix */
FZ_OP(E_FROM_INDEX, "from_index", CALL, from_index, (E, E))
/* sh, i */
FZ_OP(E_AT, "at", CALL, at, (A, E))
/* array, index */
FZ_OP(E_AT_LIN, "at_linear", CALL, at_linear, (A, E))
/* array, i64 */
FZ_OP(E_THE, "the", CALL, the, (A))
/* rank-0 array */
FZ_OP(E_WHILE, "while", CALL, while, (F, F, E))
/* cond fun, body fun, init */
FZ_OP(E_IGNORE, "ignore", SPECIAL, _, ())
/* ty: DIM(rank) */
FZ_OP(E_APPLY, "apply", SPECIAL, _, ())
/* f, then its arguments */
/* functions */
FZ_OP(F_FUN, "fun", SPECIAL, _, ())
/* kid0: body; nargs, argt */
FZ_OP(F_AFUN, "afun", SPECIAL, _, ())
/* kid0: body; kid1: the array its argument is like */
/* array terms */
FZ_OP(A_USE, "use", SPECIAL, _, ())
/* aux: 1 for a param; data, sh */
FZ_OP(A_AARG, "afun_arg", SPECIAL, _, ())
/* aux: afun node */
FZ_OP(A_UNIT, "unit", CALL, unit, (E))
/* exp */
FZ_OP(A_GENERATE, "generate", CALL, generate, (E, F))
/* sh, f */
FZ_OP(A_MAP, "map", CALL, map, (F, A))
/* f, a */
FZ_OP(A_ZIP, "zipwith", CALL, zipwith, (F, A, A))
/* f, a, b */
FZ_OP(A_ZIP3, "zipwith3", CALL, zipwith3, (F, A, A, A))
/* f, a, b, c */
FZ_OP(A_RESHAPE, "reshape", CALL, reshape, (E, A))
/* sh, a */
FZ_OP(A_REPLICATE, "replicate", SPECIAL, _, ())
/* a, then the non-`all` entries; aux: `all` mask, aux2: n */
FZ_OP(A_SLICE, "slice", SPECIAL, _, ())
/* a, then the non-`all` entries; aux: `all` mask, aux2: n */
FZ_OP(A_BACKPERMUTE, "backpermute", CALL, backpermute, (E, F, A))
/* sh, ixf, a */
FZ_OP(A_TRANSFORM, "transform", CALL, transform, (E, F, F, A))
/* sh, ixf, f, a */
FZ_OP(A_FOLD, "fold", CALL, fold, (F, E, A))
/* f, z, a */
FZ_OP(A_FOLD1, "fold1", CALL, fold1, (F, A))
/* f, a */
FZ_OP(A_FOLDALL, "fold_all", CALL, fold_all, (F, E, A))
/* f, z, a */
FZ_OP(A_FOLD1ALL, "fold1_all", CALL, fold1_all, (F, A))
/* f, a */
FZ_OP(A_FOLDSEG, "fold_seg", CALL, fold_seg, (F, E, A, A))
/* f, z, a, seg */
FZ_OP(A_FOLD1SEG, "fold1_seg", CALL, fold1_seg, (F, A, A))
/* f, a, seg */
FZ_OP(A_FOLDSEGOFF, "fold_seg_offsets", CALL, fold_seg_offsets, (F, E, A, A))
/* f, z, a, offsets */
FZ_OP(A_FOLD1SEGOFF, "fold1_seg_offsets", CALL, fold1_seg_offsets, (F, A, A))
/* f, a, offsets */
FZ_OP(A_SCAN, "scan", SPECIAL, _, ())
/* aux: FZ_SCANL..; f, [z,] a */
FZ_OP(A_PERMUTE, "permute", CALL, permute, (F, A, F, A))
/* f, def, ixf, src */
FZ_OP(A_STENCIL, "stencil", SPECIAL, _, ())
/* f, a, [bval]; aux: boundary kind; win */
FZ_OP(A_STENCIL2, "stencil2", SPECIAL, _, ())
/* f, a1, a2, [bval1], [bval2]; aux, aux2: boundaries */
FZ_OP(A_ACOND, "acond", CALL, acond, (E, A, A))
/* c, t, e */
FZ_OP(A_AWHILE, "awhile", CALL, awhile, (G, G, A))
/* cond afun, body afun, init */
FZ_OP(A_ATUPLE, "atuple", SPECIAL, _, ())
/* n components */
FZ_OP(A_AGET, "aget", SPECIAL, _, ())
/* aux: component */
