/*
 * lib/error.c: the one place every error passes through.
 *
 * Each thread keeps the message of its last failed call in a fixed buffer
 * (no allocation, so an out-of-memory error can always be reported).
 * fe_error is the breakpoint for "where did this status come from".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

static _Thread_local char last_msg[FE_MSG_MAX];

weft_status fe_verror(weft_status s, const char *fmt, va_list ap)
{
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    return s;
}

weft_status fe_error(weft_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fe_verror(s, fmt, ap);
    va_end(ap);
    return s;
}

weft_status fe_error_copy(weft_status s, const char *msg)
{
    if (msg != last_msg) {
        snprintf(last_msg, sizeof last_msg, "%s", msg ? msg : "");
    }
    return s;
}

weft_status fe_oom(const char *who)
{
    return fe_error(WEFT_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
}

weft_status fe_internal(const char *file, int line, const char *cond)
{
    return fe_error(WEFT_ERR_INTERNAL, "%s:%d: weft: internal error: %s", file,
                    line, cond);
}

/* The debug path of FE_CHECK: the message where a debugger or a test log
 * shows it, then abort.  The library never aborts for anything a user can
 * cause; a broken invariant is weft's own bug. */
_Noreturn void fe_internal_abort(const char *file, int line, const char *cond)
{
    fprintf(stderr, "%s:%d: weft: internal error: %s\n", file, line, cond);
    fflush(stderr);
    abort();
}

void fe_error_clear(void)
{
    last_msg[0] = '\0';
}

const char *weft_last_error(void)
{
    return last_msg;
}

const char *weft_status_name(weft_status s)
{
    switch (s) {
    case WEFT_OK: return "WEFT_OK";
    case WEFT_ERR_NULL_ARGUMENT: return "WEFT_ERR_NULL_ARGUMENT";
    case WEFT_ERR_INVALID_ARGUMENT: return "WEFT_ERR_INVALID_ARGUMENT";
    case WEFT_ERR_TYPE_MISMATCH: return "WEFT_ERR_TYPE_MISMATCH";
    case WEFT_ERR_RANK_MISMATCH: return "WEFT_ERR_RANK_MISMATCH";
    case WEFT_ERR_PROGRAM_MISMATCH: return "WEFT_ERR_PROGRAM_MISMATCH";
    case WEFT_ERR_ARITY: return "WEFT_ERR_ARITY";
    case WEFT_ERR_INCOMPLETE: return "WEFT_ERR_INCOMPLETE";
    case WEFT_ERR_SCOPE: return "WEFT_ERR_SCOPE";
    case WEFT_ERR_RESHAPE_SIZE: return "WEFT_ERR_RESHAPE_SIZE";
    case WEFT_ERR_SLICE_INDEX: return "WEFT_ERR_SLICE_INDEX";
    case WEFT_ERR_EMPTY_ARRAY: return "WEFT_ERR_EMPTY_ARRAY";
    case WEFT_ERR_STENCIL_WINDOW: return "WEFT_ERR_STENCIL_WINDOW";
    case WEFT_ERR_SEGMENTS: return "WEFT_ERR_SEGMENTS";
    case WEFT_ERR_BAD_SHAPE: return "WEFT_ERR_BAD_SHAPE";
    case WEFT_ERR_OUT_OF_BOUNDS: return "WEFT_ERR_OUT_OF_BOUNDS";
    case WEFT_ERR_DIVIDE_BY_ZERO: return "WEFT_ERR_DIVIDE_BY_ZERO";
    case WEFT_ERR_UNDEFINED: return "WEFT_ERR_UNDEFINED";
    case WEFT_ERR_BACKEND_UNKNOWN: return "WEFT_ERR_BACKEND_UNKNOWN";
    case WEFT_ERR_BACKEND_UNAVAILABLE: return "WEFT_ERR_BACKEND_UNAVAILABLE";
    case WEFT_ERR_OUT_OF_MEMORY: return "WEFT_ERR_OUT_OF_MEMORY";
    case WEFT_ERR_ARGUMENT_COUNT: return "WEFT_ERR_ARGUMENT_COUNT";
    case WEFT_ERR_INTERNAL: return "WEFT_ERR_INTERNAL";
    case WEFT_ERR_DEVICE: return "WEFT_ERR_DEVICE";
    case WEFT_ERR_CANCELLED: return "WEFT_ERR_CANCELLED";
    }
    return "WEFT_ERR_UNKNOWN_STATUS";
}
