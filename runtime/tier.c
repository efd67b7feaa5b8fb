/*
 * runtime/tier.c: the background worker of tiered compilation, for both
 * compiled backends.  A kernel's first code is quick to make; its
 * optimised code is made later by one thread per context, which takes
 * jobs in the order queued.  What a job is and how its code is built and
 * swapped in is the backend's (rt_tier_ops.run: runtime-cpu/tier.c emits
 * an object at -O3 and links it, runtime-gpu/backend.c has the driver
 * compile optimised PTX and swaps the functions under the device's lock);
 * the queue, the thread's life, waiting for it and stopping it are here.
 *
 *   rt_tier_queue      starts the thread on first use and appends a job
 *   rt_tier_wait       blocks until every job queued so far has run
 *                      (weft_context_wait_optimised) and returns the first
 *                      failure since the last wait
 *   rt_tier_stop       when the context is freed: `drain` workers (CPU)
 *                      finish their queue, others (GPU) drop it and finish
 *                      only the job in hand; with may_orphan a worker that
 *                      has work is left to finish it alone and then frees
 *                      its owner (ops->orphaned), so that freeing a context
 *                      never waits for LLVM (runtime-cpu/jit.c, "Freeing")
 *
 * Exit.  A process that exits with contexts not freed would run LLVM's
 * static destructors, and the driver's teardown, under a worker still
 * inside them.  The first worker started registers tier_at_exit (atexit
 * runs it before the destructors of LLVM's statics, which codegen/init.c's
 * warm-up makes before any worker exists): every live worker drops its
 * queue, finishes the job in hand and is joined, and the orphans are
 * waited for likewise; a worker asked for after that is refused and its
 * job runs in the caller (rt_tier_run_here).  So exit waits for at most
 * one job per worker, never for a queue.
 *
 * The warm-up does not make every static: LLVM makes some on first use
 * of a code path (an X86 table the first -O3 code generation builds, the
 * table of library function names the optimiser builds for the first
 * call it sees), and atexit runs handlers in the reverse order of their
 * making, so the destructor of a static first made after tier_at_exit's
 * registration ran before it, under a worker still in LLVM: an orphan
 * emitting -O3 code when a test process exited crashed about once in ten
 * runs in its code generator (test_cpu_permute's fold_seg, 2026-11-27).
 * So tier_at_exit is registered again after every compile that may have
 * made new statics (rt_tier_after_llvm: after each job, and after each of
 * the caller's compiles), up to EXIT_REGISTER_MAX times a process (32
 * bytes each); what remains is a static first made by a job that is
 * still running at exit, which the warm-up is there to make unlikely.
 *
 * Locks.  live_lock (the list of live workers and the orphan count), then
 * a worker's lock (its queue and flags).  The backend's run function is
 * called with neither held, and takes the backend's own locks.
 */
#ifdef WEFT_HAVE_LLVM

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_tier *live; /* under live_lock: started, not stopped */
static pthread_once_t live_once = PTHREAD_ONCE_INIT;
static int orphans_running; /* under live_lock */
static pthread_cond_t orphans_done = PTHREAD_COND_INITIALIZER;
static atomic_bool exiting;      /* tier_at_exit ran */
static atomic_bool registered;   /* tier_at_exit registered once */
static atomic_int registrations; /* by rt_tier_after_llvm */
atomic_int rt_tier_orphaned;

enum { EXIT_REGISTER_MAX = 1024 };

static void tier_at_exit(void)
{
    atomic_store(&exiting, true);
    pthread_mutex_lock(&live_lock);
    for (rt_tier *t = live; t; t = t->next_live) {
        pthread_mutex_lock(&t->lock);
        t->stop = true;
        t->abandon = true;
        pthread_cond_signal(&t->wake);
        t->joined = t->started; /* joined below */
        pthread_mutex_unlock(&t->lock);
    }
    for (rt_tier *t = live; t; t = t->next_live) {
        if (t->joined) {
            pthread_join(t->thread, NULL);
        }
    }
    live = NULL;
    while (orphans_running > 0) {
        pthread_cond_wait(&orphans_done, &live_lock);
    }
    pthread_mutex_unlock(&live_lock);
}

static void live_register(void)
{
    atexit(tier_at_exit);
    atomic_store(&registered, true);
}

void rt_tier_after_llvm(void)
{
    if (atomic_load(&registered) && !atomic_load(&exiting) &&
        atomic_fetch_add(&registrations, 1) < EXIT_REGISTER_MAX) {
        atexit(tier_at_exit); /* see "Exit" */
    }
}

void rt_tier_init(rt_tier *t, const rt_tier_ops *ops, void *user, bool drain)
{
    memset(t, 0, sizeof *t);
    t->ops = ops;
    t->user = user;
    t->drain = drain;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    pthread_cond_init(&t->idle, NULL);
}

/* Take the queue away (lock held): its jobs no longer pending.  Returns
 * them for free_jobs, to be freed with no lock held. */
static rt_tier_job *take_queue(rt_tier *t)
{
    rt_tier_job *q = t->queue;
    for (rt_tier_job *j = q; j; j = j->next) {
        t->pending--;
    }
    t->queue = t->tail = NULL;
    pthread_cond_broadcast(&t->idle);
    return q;
}

static void free_jobs(rt_tier *t, rt_tier_job *q)
{
    for (rt_tier_job *j = q, *next; j; j = next) {
        next = j->next;
        t->ops->free_job(t->user, j);
    }
}

/* Run job (no lock held) and count it done: its failure, the first since
 * the last wait, is kept for rt_tier_wait.  Frees the job. */
static void run_job(rt_tier *t, rt_tier_job *job)
{
    weft_status s = t->ops->run(t->user, job);
    rt_tier_after_llvm();
    char msg[FE_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", s != WEFT_OK ? weft_last_error() : "");
    t->ops->free_job(t->user, job);
    pthread_mutex_lock(&t->lock);
    if (s != WEFT_OK && t->status == WEFT_OK) {
        t->status = s;
        snprintf(t->msg, sizeof t->msg, "%s", msg);
    }
    t->pending--;
    pthread_cond_broadcast(&t->idle);
    pthread_mutex_unlock(&t->lock);
}

/* The worker: jobs in the order queued, until stopped (see rt_tier_stop
 * for what happens to the queue then). */
static void *worker(void *arg)
{
    rt_tier *t = arg;
    if (t->ops->label) {
        fe_trace_thread_label(t->ops->label);
    }
    rt_tier_job *dropped = NULL;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->queue && !t->stop) {
            pthread_cond_wait(&t->wake, &t->lock);
        }
        if (t->orphan && atomic_load(&exiting)) {
            t->abandon = true; /* the process exits: leave the queue */
        }
        if (t->stop && (!t->drain || t->abandon)) {
            dropped = take_queue(t);
            break;
        }
        rt_tier_job *job = t->queue;
        if (!job) {
            break; /* stopped, the queue finished */
        }
        t->queue = job->next;
        if (!t->queue) {
            t->tail = NULL;
        }
        t->busy = true;
        pthread_mutex_unlock(&t->lock);
        run_job(t, job);
        pthread_mutex_lock(&t->lock);
        t->busy = false;
    }
    bool orphan = t->orphan;
    pthread_mutex_unlock(&t->lock);
    free_jobs(t, dropped);
    if (orphan) {
        /* rt_tier_stop has returned: this thread owns the owner */
        t->ops->orphaned(t->user); /* frees t too */
        pthread_mutex_lock(&live_lock);
        orphans_running--;
        pthread_cond_broadcast(&orphans_done);
        pthread_mutex_unlock(&live_lock);
    }
    return NULL;
}

bool rt_tier_queue(rt_tier *t, rt_tier_job *job)
{
    pthread_mutex_lock(&t->lock);
    if (!t->started) {
        /* after the backend's first compile (LLVM's statics are made):
         * the handler runs before their destructors */
        pthread_mutex_unlock(&t->lock);
        pthread_once(&live_once, live_register);
        pthread_mutex_lock(&live_lock); /* the lock order */
        pthread_mutex_lock(&t->lock);
        if (!t->started && !t->stop && !atomic_load(&exiting) &&
            pthread_create(&t->thread, NULL, worker, t) == 0) {
            t->started = true;
            t->next_live = live;
            live = t;
        }
        pthread_mutex_unlock(&live_lock);
        if (!t->started) {
            pthread_mutex_unlock(&t->lock);
            return false; /* exiting, stopped, or no thread */
        }
    }
    job->next = NULL;
    if (t->tail) {
        t->tail->next = job;
    } else {
        t->queue = job;
    }
    t->tail = job;
    t->pending++;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    return true;
}

void rt_tier_run_here(rt_tier *t, rt_tier_job *job)
{
    pthread_mutex_lock(&t->lock);
    t->pending++;
    pthread_mutex_unlock(&t->lock);
    run_job(t, job);
}

weft_status rt_tier_wait(rt_tier *t, char msg[FE_MSG_MAX])
{
    pthread_mutex_lock(&t->lock);
    while (t->pending > 0) {
        pthread_cond_wait(&t->idle, &t->lock);
    }
    weft_status s = t->status;
    snprintf(msg, FE_MSG_MAX, "%s", t->msg);
    t->status = WEFT_OK;
    pthread_mutex_unlock(&t->lock);
    return s;
}

bool rt_tier_stopping(rt_tier *t)
{
    pthread_mutex_lock(&t->lock);
    bool stop = t->stop;
    pthread_mutex_unlock(&t->lock);
    return stop;
}

bool rt_tier_stop(rt_tier *t, bool may_orphan)
{
    pthread_mutex_lock(&live_lock);
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    bool orphan =
        may_orphan && t->started && !t->joined && (t->busy || t->queue);
    bool join = t->started && !t->joined && !orphan;
    t->orphan = orphan;
    t->joined = t->joined || join;
    if (orphan) {
        orphans_running++;
    }
    for (rt_tier **p = &live; *p; p = &(*p)->next_live) {
        if (*p == t) {
            *p = t->next_live;
            break;
        }
    }
    pthread_cond_signal(&t->wake);
    pthread_t th = t->thread;
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_unlock(&live_lock);
    if (orphan) {
        atomic_fetch_add(&rt_tier_orphaned, 1);
        pthread_detach(th); /* the worker frees the owner */
        return true;
    }
    if (join) {
        pthread_join(th, NULL);
    }
    return false;
}

void rt_tier_fini(rt_tier *t)
{
    pthread_mutex_lock(&t->lock);
    rt_tier_job *q = take_queue(t); /* what a worker stopped at exit left */
    pthread_mutex_unlock(&t->lock);
    free_jobs(t, q);
    pthread_cond_destroy(&t->wake);
    pthread_cond_destroy(&t->idle);
    pthread_mutex_destroy(&t->lock);
}

void rt_tier_wait_orphans(void)
{
    pthread_mutex_lock(&live_lock);
    while (orphans_running > 0) {
        pthread_cond_wait(&orphans_done, &live_lock);
    }
    pthread_mutex_unlock(&live_lock);
}

#endif /* WEFT_HAVE_LLVM */
