/*
 * lib/kinds.c: the table of array terms, read by fusion, the skeletons'
 * family choice, dumps, plans and the core's checker.  The catalogue
 * itself is lib/fe_kinds.h (the interpreter expands its eval column on its
 * own, lib/interp.c).
 */
#include <limits.h>

#include "fe.h"

#define YES true
#define NO false
#define FUSIBLE_NONE 0u
#define FUSIBLE_K0 1u
#define FUSIBLE_K1 2u
#define FUSIBLE_K01 3u
#define FUSIBLE_ALL (~0u)
#define KIDS_0 0, 0
#define KIDS_1 1, 1
#define KIDS_2 2, 2
#define KIDS_3 3, 3
#define KIDS_4 4, 4
#define KIDS_2_3 2, 3
#define KIDS_SPEC 1, 1 + WEFT_MAX_RANK
#define KIDS_MANY 1, INT_MAX

const fe_kind_info fe_kinds[FE_KIND_COUNT_] = {
#define FE_KIND(n_, name_, family_, producer_, fusible_, gather_, kids_,       \
                funs_, eval_)                                                  \
    [FE_##n_] = {name_,   FE_FAMILY_##family_, producer_, FUSIBLE_##fusible_,  \
                 gather_, KIDS_##kids_,        funs_},
#include "fe_kinds.h"
#undef FE_KIND
};
