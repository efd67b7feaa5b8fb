/*
 * runtime-gpu/relay.c: a thread that runs one function again each time it
 * is asked, and the asker's wait for it (multi.c, "Queueing": a thread
 * per other device queues that device's part of a split launch while the
 * launching thread queues the others).
 *
 * The hand-off.  The asker writes what the function reads (its argument
 * is fixed at start), then bumps `posted`; the thread, seeing posted move,
 * runs the function and sets `acked` to the count it ran.  The two counts
 * are atomics (release on the store, acquire on the load), so what the
 * asker wrote before a post is seen by the run, and what the run wrote is
 * seen by the asker after its wait.  The asker writes nothing the function
 * reads between a post and the wait for it.
 *
 * Waking.  A hand-off is wanted within a microsecond or two: the parts of
 * a split launch cost a few microseconds each to queue.  So the thread
 * polls `posted` for RELAY_POLL_NS after its last run, then sleeps on a
 * condition variable (a sleeping thread takes tens of microseconds to
 * wake, and a thread that polls keeps a core busy).  Before it sleeps it
 * sets `sleeping` and reads `posted` again, both sequentially consistent,
 * as the asker stores `posted` and then reads `sleeping`: either the
 * thread sees the new count, or the asker sees it asleep and signals
 * under the mutex (which the thread holds from setting `sleeping` until
 * it waits).  The asker's wait polls too, yielding the CPU now and then:
 * it waits for a run that was handed over, microseconds long.
 *
 * Nothing here calls the CUDA driver or reports errors: the function
 * keeps its outcome where its asker reads it.
 */
#include <pthread.h>
#include <sched.h>

#include "gpu.h"

#define RELAY_POLL_NS 200000 /* a thread polls this long, then sleeps */

struct gpu_relay {
    weft_context *ctx; /* whose allocator made it */
    void (*fn)(void *arg);
    void *arg;
    pthread_t thread;
    unsigned posted, acked; /* __atomic */
    int sleeping;           /* __atomic: waiting on cv */
    bool quit;              /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Wait until r->posted differs from `seen` (polling RELAY_POLL_NS, then on
 * r->cv); the new count, or `seen` when told to quit. */
static unsigned next_post(gpu_relay *r, unsigned seen)
{
    uint64_t t0 = fe_clock_ns();
    for (unsigned k = 1;; k++) {
        unsigned p = __atomic_load_n(&r->posted, __ATOMIC_ACQUIRE);
        if (p != seen) {
            return p;
        }
        if ((k & 255) == 0 && fe_clock_ns() - t0 > RELAY_POLL_NS) {
            break;
        }
        fe_relax();
    }
    pthread_mutex_lock(&r->mu);
    __atomic_store_n(&r->sleeping, 1, __ATOMIC_SEQ_CST);
    unsigned p;
    while ((p = __atomic_load_n(&r->posted, __ATOMIC_SEQ_CST)) == seen &&
           !r->quit) {
        pthread_cond_wait(&r->cv, &r->mu);
    }
    __atomic_store_n(&r->sleeping, 0, __ATOMIC_RELAXED);
    bool quit = r->quit;
    pthread_mutex_unlock(&r->mu);
    return quit ? seen : p;
}

static void *relay_main(void *arg)
{
    gpu_relay *r = arg;
    unsigned seen = 0;
    for (;;) {
        unsigned p = next_post(r, seen);
        if (p == seen) {
            return NULL;
        }
        seen = p;
        r->fn(r->arg);
        __atomic_store_n(&r->acked, seen, __ATOMIC_RELEASE);
    }
}

gpu_relay *gpu_relay_start(weft_context *ctx, void (*fn)(void *arg), void *arg)
{
    gpu_relay *r = fe_calloc(ctx, sizeof *r);
    if (!r) {
        return NULL;
    }
    r->ctx = ctx;
    r->fn = fn;
    r->arg = arg;
    if (pthread_mutex_init(&r->mu, NULL) != 0) {
        fe_free(ctx, r, sizeof *r);
        return NULL;
    }
    if (pthread_cond_init(&r->cv, NULL) != 0) {
        pthread_mutex_destroy(&r->mu);
        fe_free(ctx, r, sizeof *r);
        return NULL;
    }
    if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        fe_free(ctx, r, sizeof *r);
        return NULL;
    }
    return r;
}

void gpu_relay_post(gpu_relay *r)
{
    unsigned p = __atomic_load_n(&r->posted, __ATOMIC_RELAXED) + 1;
    __atomic_store_n(&r->posted, p, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&r->sleeping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&r->mu);
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
}

void gpu_relay_wait(gpu_relay *r)
{
    unsigned p = __atomic_load_n(&r->posted, __ATOMIC_RELAXED);
    for (unsigned k = 1; __atomic_load_n(&r->acked, __ATOMIC_ACQUIRE) != p;
         k++) {
        if ((k & 1023) == 0) {
            sched_yield();
        } else {
            fe_relax();
        }
    }
}

void gpu_relay_stop(gpu_relay *r)
{
    if (!r) {
        return;
    }
    pthread_mutex_lock(&r->mu);
    r->quit = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    fe_free(r->ctx, r, sizeof *r);
}
