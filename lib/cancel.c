/*
 * lib/cancel.c: stopping a run from outside (weft_cancel) or by deadline.
 *
 * A context counts weft_cancel calls in an atomic epoch.  Each run notes
 * the epoch when it begins and its deadline (the context's timeout_ms);
 * it is cancelled once the epoch has moved or the deadline has passed.
 * So a cancel reaches exactly the runs in progress when it is made, on
 * every thread, and needs no list of runs, no lock and no reset: a run
 * that begins later notes the new epoch.  weft_cancel is one atomic add,
 * safe in a signal handler.
 *
 * Polling (fe_cancelled) is where the backends look: the first poll that
 * sees the cancellation records its cause in the run's `hit` word, which
 * later polls read first and which kernels and waiters check (fe.h).
 */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "fe.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void weft_cancel(weft_context *ctx)
{
    if (ctx) {
        atomic_fetch_add_explicit(&ctx->cancel_epoch, 1, memory_order_seq_cst);
    }
}

void fe_cancel_begin(weft_context *ctx, fe_cancel *c)
{
    atomic_init(&c->hit, 0);
    c->pad_ = 0;
    c->poll = fe_cancel_poll;
    c->ctx = ctx;
    c->epoch = atomic_load(&ctx->cancel_epoch);
    c->deadline_ns = 0;
    double ms = ctx->cfg.timeout_ms;
    if (ms > 0 && isfinite(ms)) {
        double ns = ms * 1e6;
        c->deadline_ns = now_ns() + (ns > 9e18 ? (int64_t)9e18 : (int64_t)ns);
        if (c->deadline_ns <= 0) {
            c->deadline_ns = 1; /* already due */
        }
    }
}

bool fe_cancelled(fe_cancel *c)
{
    if (!c) {
        return false;
    }
    if (atomic_load_explicit(&c->hit, memory_order_relaxed) != 0) {
        return true;
    }
    if (!c->ctx) {
        return false; /* a run that cannot be cancelled */
    }
    int why = 0;
    if (atomic_load_explicit(&c->ctx->cancel_epoch, memory_order_relaxed) !=
        c->epoch) {
        why = FE_CANCEL_CALL;
    } else if (c->deadline_ns != 0 && now_ns() >= c->deadline_ns) {
        why = FE_CANCEL_DEADLINE;
    }
    if (why == 0) {
        return false;
    }
    int expect = 0;
    atomic_compare_exchange_strong(&c->hit, &expect, why);
    return true;
}

int fe_cancel_poll(fe_cancel *c)
{
    return fe_cancelled(c) ? 1 : 0;
}

void fe_cancel_message(const fe_cancel *c, char *buf, size_t n)
{
    int why = c ? atomic_load((atomic_int *)&c->hit) : 0;
    if (why == FE_CANCEL_DEADLINE) {
        snprintf(buf, n,
                 "weft_run: stopped after its deadline (timeout_ms "
                 "%g)",
                 c->ctx->cfg.timeout_ms);
    } else {
        snprintf(buf, n, "weft_run: cancelled by weft_cancel");
    }
}

weft_status fe_cancel_error(const fe_cancel *c)
{
    char msg[FE_MSG_MAX];
    fe_cancel_message(c, msg, sizeof msg);
    return fe_error_copy(WEFT_ERR_CANCELLED, msg);
}
