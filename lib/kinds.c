/*
 * lib/kinds.c: the table of array terms, read by fusion, the skeletons'
 * family choice, dumps and plans.  The catalogue itself is lib/fe_kinds.h
 * (the interpreter expands its eval column on its own, lib/interp.c).
 */
#include "fe.h"

#define YES true
#define NO false
#define FUSIBLE_NONE 0u
#define FUSIBLE_K0 1u
#define FUSIBLE_K1 2u
#define FUSIBLE_K01 3u
#define FUSIBLE_ALL (~0u)

const fe_kind_info fe_kinds[FE_KIND_COUNT_] = {
#define FE_KIND(n_, name_, family_, producer_, fusible_, gather_, eval_)     \
    [FE_##n_] = {name_, FE_FAMILY_##family_, producer_, FUSIBLE_##fusible_,  \
                 gather_},
#include "fe_kinds.h"
#undef FE_KIND
};
