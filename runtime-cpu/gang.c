/*
 * runtime-cpu/gang.c: the gang, a work-stealing pool of threads that runs
 * kernels over index ranges.
 *
 * A gang holds size - 1 pthreads; the thread that calls cpu_gang_run is
 * the size-th worker.  Between jobs the threads sleep on a condition
 * variable (after a short bounded spin, so that back-to-back jobs do not
 * pay for a wake-up); they never spin while idle for long.
 *
 * A job is a list of at most CPU_GANG_MAX_PHASES phases, each a kernel
 * over [0, n) cut into chunks of `grain` elements.  It lives on the stack
 * of the calling thread.  Each phase has one slot per participant: a range
 * of chunk numbers [start, end) packed into one 64-bit atomic (start in
 * the high half), so that both ends move with one compare-and-swap.  The
 * chunks of a phase are first split evenly among the participants' slots.
 * A participant takes chunks one at a time from the front of its own slot
 * (a CAS that rarely meets another thread); when its slot is empty it
 * sweeps the other slots from a random one and takes the back half
 * (rounded up) of the first non-empty range it finds, which it stores in
 * its own, empty, slot.  Only the owner makes a slot non-empty again, and
 * the chunks it puts there were never in that slot before within the
 * phase, so a thief's CAS cannot succeed on a stale value (no ABA).
 *
 * Completion is an atomic countdown of the elements left in each phase.
 * Participants add up what they ran and subtract it when they run out of
 * local work, so the counter is touched once per range, not per chunk.
 * The participant whose subtraction reaches zero moves the job to the
 * next phase (release) and wakes anyone sleeping on the phase condition.
 * A participant with nothing left to take spins briefly, then sleeps,
 * until the phase it worked on is over; then it starts on the next phase,
 * so a multi-phase job (fold or scan: per-chunk partials, combine, apply)
 * never goes back to the idle sleep in between.
 *
 * Joining and leaving, without a lock.  The gang has one 64-bit join
 * word: a generation, a closed bit, the number of helpers the job wants
 * (no more than it has chunks) and the number that joined.  The caller
 * publishes a job by storing a new word (generation + 1, open, none
 * joined); an idle worker that sees a generation new to it joins with a
 * CAS that adds one to `joined` (its participant number, which is also
 * its worker id for the job) while the word is open and not full.  When
 * the last phase is over the caller closes the word with a fetch-or,
 * which also tells it how many joined, and returns.  The job and its
 * slots are the gang's, one of JOB_RING used in turn (generation gen
 * takes jobs[gen % JOB_RING]); a helper counts itself out of its job (an
 * atomic count) when it has left it, and a job is set up again only when
 * every helper that joined it last time has left, so a straggler never
 * finds its job or slots reused under it; a worker that comes late finds
 * the word closed (or a newer generation) and goes back to sleep.
 * Mutexes and condition variables are used only to sleep, and taken only
 * when someone sleeps.
 *
 * Several host threads: jobs are serialised by a mutex (run_mu), each job
 * using the whole gang.  A kernel that calls cpu_gang_run on the gang it
 * runs on gets its job run inline on its own thread (a thread-local
 * records which gang a thread works for), so nesting cannot deadlock.
 *
 * Failures: a kernel calls cpu_gang_fail; the first status wins (CAS) and
 * its message is kept in the job; chunks claimed after that are counted
 * but not run, so the countdown still reaches zero and no join hangs (as
 * in Futhark's scheduler); later phases are skipped; the caller returns
 * the status with the message as its last error.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* sigset_t, sysconf */
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"

#define MAX_CHUNKS ((int64_t)1 << 31) /* chunk numbers fit 32 bits */
#define AUTO_MIN_GRAIN 1024           /* grain <= 0: at least this */
#define AUTO_CHUNKS_PER_WORKER 8      /* grain <= 0: chunks per worker */
#define SPIN_IDLE 2000                /* pauses before sleeping between jobs */
#define SPIN_WAIT 4000                /* pauses before sleeping in a job */
#define STEAL_SWEEPS 4                /* empty sweeps before giving up */
#define JOB_RING 16                   /* jobs used in turn (run_job) */
#define CACHE_LINE 64

/* One participant's range of chunks in one phase, on a line of its own. */
typedef struct slot {
    _Atomic uint64_t range; /* start << 32 | end, in chunks */
    char pad[CACHE_LINE - sizeof(uint64_t)];
} slot;

/* The first failure of a job. */
typedef struct failure {
    atomic_int status;    /* WEFT_OK until a kernel fails */
    char msg[FE_MSG_MAX]; /* written once by the thread that won the CAS */
} failure;

/* A job: one of the gang's JOB_RING, the one of generation gen at
 * jobs[gen % JOB_RING], with its slots. */
typedef struct job {
    cpu_phase ph[CPU_GANG_MAX_PHASES]; /* non-empty phases, grain > 0 */
    int nphases;
    int nslots;       /* participants: caller + helpers */
    atomic_int phase; /* running phase; nphases: done */
    _Atomic int64_t left[CPU_GANG_MAX_PHASES]; /* elements not yet counted */
    failure fail;
    slot *slots;       /* [phase * gang size + participant] */
    int joined;        /* helpers that joined (set when the job closed) */
    atomic_int leaves; /* helpers that have left */
} job;

struct cpu_gang {
    weft_context *ctx;  /* allocator */
    int size;           /* workers, the caller included */
    int nthreads;       /* threads started (size - 1 once made) */
    pthread_t *threads; /* size - 1 */
    void *slot_mem;     /* raw allocation behind the jobs' slots */
    size_t slot_bytes;
    job *jobs;              /* JOB_RING of them */
    pthread_mutex_t run_mu; /* one job at a time */
    _Atomic uint64_t ctl;   /* the join word (see CTL_*) */
    /* Sleeping: each condition variable has a count of its sleepers, so
     * that whoever changes the condition takes mu and signals only when
     * someone sleeps.  Both sides use sequentially consistent atomics
     * (change the condition, then read the count; count oneself, then
     * read the condition), so a wake-up cannot be lost. */
    pthread_mutex_t mu;      /* pairs with the condition variables */
    pthread_cond_t wake_cv;  /* idle workers wait for a new generation */
    pthread_cond_t phase_cv; /* participants wait for a phase to end */
    pthread_cond_t done_cv;  /* the caller waits for helpers to leave */
    atomic_int wake_sleepers;
    atomic_int phase_sleepers;
    atomic_int done_sleeping; /* the caller sleeps on done_cv */
    bool quit;                /* cpu_gang_free: workers exit (under mu) */
};

/* The join word: generation (bits 32-63), closed (bit 24), helpers wanted
 * (bits 12-23), helpers joined (bits 0-11).  A worker joins by a CAS that
 * adds one to `joined` while the generation is new to it, the word is
 * open and joined < wanted; the caller closes the word with a fetch-or,
 * which also tells it how many joined. */
#define CTL_JOINED(w) ((int)((w) & 0xfff))
#define CTL_WANT(w) ((int)(((w) >> 12) & 0xfff))
#define CTL_CLOSED ((uint64_t)1 << 24)
#define CTL_GEN(w) ((uint32_t)((w) >> 32))
#define CTL_MAKE(gen, want) ((uint64_t)(gen) << 32 | (uint64_t)(want) << 12)

static _Thread_local int tls_id;         /* cpu_gang_worker_id */
static _Thread_local cpu_gang *tls_gang; /* gang this thread works for */
static _Thread_local failure *tls_fail;  /* failure record of the job */

/* ---- small helpers ---------------------------------------------------- */

static inline uint64_t pack(uint32_t start, uint32_t end)
{
    return (uint64_t)start << 32 | end;
}

static inline uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static inline int64_t div_up(int64_t a, int64_t b)
{
    return a == 0 ? 0 : (a - 1) / b + 1;
}

static inline slot *phase_slots(const cpu_gang *g, job *j, int k)
{
    return &j->slots[(size_t)k * (size_t)g->size];
}

/* ---- one participant -------------------------------------------------- */

/* Take the front chunk of *s into *c; false when s is empty. */
static bool take_front(slot *s, uint32_t *c)
{
    uint64_t r = atomic_load_explicit(&s->range, memory_order_acquire);
    for (;;) {
        uint32_t start = (uint32_t)(r >> 32), end = (uint32_t)r;
        if (start >= end) {
            return false;
        }
        if (atomic_compare_exchange_weak_explicit(
                &s->range, &r, pack(start + 1, end), memory_order_acq_rel,
                memory_order_acquire)) {
            *c = start;
            return true;
        }
    }
}

/* Steal the back half of another participant's range of phase k into
 * participant me's (empty) slot.  Gives up after a few sweeps that find
 * nothing, or as soon as the phase has no element left. */
static bool steal(cpu_gang *g, job *j, int k, int me, uint64_t *rng)
{
    int p = j->nslots;
    slot *base = phase_slots(g, j, k);
    for (int sweep = 0; sweep < STEAL_SWEEPS; sweep++) {
        if (atomic_load_explicit(&j->left[k], memory_order_acquire) == 0) {
            return false;
        }
        int first = (int)(next_random(rng) % (uint64_t)p);
        for (int i = 0; i < p; i++) {
            int v = (first + i) % p;
            if (v == me) {
                continue;
            }
            uint64_t r =
                atomic_load_explicit(&base[v].range, memory_order_acquire);
            for (;;) {
                uint32_t start = (uint32_t)(r >> 32), end = (uint32_t)r;
                if (start >= end) {
                    break;
                }
                uint32_t take = (end - start + 1) / 2;
                if (atomic_compare_exchange_weak_explicit(
                        &base[v].range, &r, pack(start, end - take),
                        memory_order_acq_rel, memory_order_acquire)) {
                    atomic_store_explicit(&base[me].range,
                                          pack(end - take, end),
                                          memory_order_release);
                    return true;
                }
            }
        }
        for (int i = 0; i < 16; i++) {
            fe_relax();
        }
    }
    return false;
}

/* Count `done` elements of phase k as run; the one who counts the last
 * moves the job to the next phase and wakes the sleepers. */
static void commit(cpu_gang *g, job *j, int k, int64_t done)
{
    if (done == 0) {
        return;
    }
    if (atomic_fetch_sub_explicit(&j->left[k], done, memory_order_acq_rel) ==
        done) {
        atomic_store(&j->phase, k + 1);
        if (atomic_load(&g->phase_sleepers) > 0) {
            pthread_mutex_lock(&g->mu);
            pthread_cond_broadcast(&g->phase_cv);
            pthread_mutex_unlock(&g->mu);
        }
    }
}

/* The job of the calling thread fails with WEFT_ERR_CANCELLED. */
static void fail_cancelled(fe_cancel *c)
{
    char msg[FE_MSG_MAX];
    fe_cancel_message(c, msg, sizeof msg);
    cpu_gang_fail(WEFT_ERR_CANCELLED, "%s", msg);
}

/* Run chunks of phase k, own first, then stolen, until none can be had. */
static void work_phase(cpu_gang *g, job *j, int k, int me, uint64_t *rng)
{
    const cpu_phase *ph = &j->ph[k];
    slot *mine = &phase_slots(g, j, k)[me];
    for (;;) {
        int64_t done = 0;
        uint32_t c;
        while (take_front(mine, &c)) {
            int64_t lo = (int64_t)c * ph->grain;
            int64_t hi = ph->n - lo < ph->grain ? ph->n : lo + ph->grain;
            if (atomic_load_explicit(&j->fail.status, memory_order_relaxed) ==
                WEFT_OK) {
                if (ph->cancel && fe_cancelled(ph->cancel)) {
                    fail_cancelled(ph->cancel);
                } else {
                    ph->kernel(lo, hi, ph->args);
                }
            }
            done += hi - lo;
        }
        commit(g, j, k, done);
        if (!steal(g, j, k, me, rng)) {
            return;
        }
    }
}

/* Wait (spin, then sleep) until phase k of j is over. */
static void wait_phase(cpu_gang *g, job *j, int k)
{
    for (int i = 0; i < SPIN_WAIT; i++) {
        if (atomic_load_explicit(&j->phase, memory_order_acquire) != k) {
            return;
        }
        fe_relax();
    }
    pthread_mutex_lock(&g->mu);
    atomic_fetch_add(&g->phase_sleepers, 1);
    while (atomic_load(&j->phase) == k) {
        pthread_cond_wait(&g->phase_cv, &g->mu);
    }
    atomic_fetch_sub(&g->phase_sleepers, 1);
    pthread_mutex_unlock(&g->mu);
}

/* Take part in job j as participant me until its last phase is over. */
static void participate(cpu_gang *g, job *j, int me)
{
    uint64_t rng = 0x9E3779B97F4A7C15u * (uint64_t)(me + 1);
    for (;;) {
        int k = atomic_load_explicit(&j->phase, memory_order_acquire);
        if (k >= j->nphases) {
            return;
        }
        work_phase(g, j, k, me, &rng);
        wait_phase(g, j, k);
    }
}

/* ---- workers ------------------------------------------------------------ */

/* Join the job of the generation in *w, if it is new to the worker
 * (seen) and has room: the participant number, or 0.  *w is left at the
 * last word seen, whose generation the worker has then dealt with. */
static int try_join(cpu_gang *g, uint64_t *w, uint32_t seen)
{
    for (;;) {
        if (CTL_GEN(*w) == seen || (*w & CTL_CLOSED) != 0 ||
            CTL_JOINED(*w) >= CTL_WANT(*w)) {
            return 0;
        }
        if (atomic_compare_exchange_weak_explicit(&g->ctl, w, *w + 1,
                                                  memory_order_acq_rel,
                                                  memory_order_acquire)) {
            return CTL_JOINED(*w) + 1;
        }
    }
}

static void *worker_main(void *arg)
{
    cpu_gang *g = arg;
    tls_gang = g;
    uint32_t seen = 0;
    for (;;) {
        uint64_t w = atomic_load_explicit(&g->ctl, memory_order_acquire);
        for (int i = 0; i < SPIN_IDLE && CTL_GEN(w) == seen; i++) {
            fe_relax();
            w = atomic_load_explicit(&g->ctl, memory_order_acquire);
        }
        if (CTL_GEN(w) == seen) {
            pthread_mutex_lock(&g->mu);
            atomic_fetch_add(&g->wake_sleepers, 1);
            while (!g->quit && CTL_GEN(w = atomic_load(&g->ctl)) == seen) {
                pthread_cond_wait(&g->wake_cv, &g->mu);
            }
            atomic_fetch_sub(&g->wake_sleepers, 1);
            bool quit = g->quit;
            pthread_mutex_unlock(&g->mu);
            if (quit) {
                return NULL;
            }
        }
        int me = try_join(g, &w, seen);
        seen = CTL_GEN(w);
        if (me == 0) {
            continue;
        }
        /* Joined: the job of that generation is not reused until this
         * worker has left it (the increment of leaves below). */
        job *j = &g->jobs[seen % JOB_RING];
        tls_id = me;
        tls_fail = &j->fail;
        participate(g, j, me);
        tls_fail = NULL;
        tls_id = 0;
        atomic_fetch_add(&j->leaves, 1);
        if (atomic_load(&g->done_sleeping)) {
            pthread_mutex_lock(&g->mu);
            pthread_cond_broadcast(&g->done_cv);
            pthread_mutex_unlock(&g->mu);
        }
    }
}

/* ---- create and free -------------------------------------------------- */

/* Stop the threads started so far, destroy the sync objects and free. */
static void destroy(cpu_gang *g)
{
    pthread_mutex_lock(&g->mu);
    g->quit = true;
    pthread_cond_broadcast(&g->wake_cv);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->nthreads; i++) {
        pthread_join(g->threads[i], NULL);
    }
    pthread_cond_destroy(&g->done_cv);
    pthread_cond_destroy(&g->phase_cv);
    pthread_cond_destroy(&g->wake_cv);
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->run_mu);
    weft_context *ctx = g->ctx;
    fe_free(ctx, g->slot_mem, g->slot_bytes);
    fe_free(ctx, g->jobs, sizeof(job) * JOB_RING);
    fe_free(ctx, g->threads, sizeof(pthread_t) * (size_t)(g->size - 1));
    fe_free(ctx, g, sizeof *g);
}

/* Initialise g's mutexes and condition variables; on failure none is
 * left initialised. */
static int init_sync(cpu_gang *g)
{
    int rc = pthread_mutex_init(&g->run_mu, NULL);
    if (rc != 0) {
        return rc;
    }
    if ((rc = pthread_mutex_init(&g->mu, NULL)) != 0) {
        goto fail_mu;
    }
    if ((rc = pthread_cond_init(&g->wake_cv, NULL)) != 0) {
        goto fail_wake;
    }
    if ((rc = pthread_cond_init(&g->phase_cv, NULL)) != 0) {
        goto fail_phase;
    }
    if ((rc = pthread_cond_init(&g->done_cv, NULL)) != 0) {
        goto fail_done;
    }
    return 0;
fail_done:
    pthread_cond_destroy(&g->phase_cv);
fail_phase:
    pthread_cond_destroy(&g->wake_cv);
fail_wake:
    pthread_mutex_destroy(&g->mu);
fail_mu:
    pthread_mutex_destroy(&g->run_mu);
    return rc;
}

weft_status cpu_gang_create(weft_context *ctx, int nthreads, cpu_gang **out)
{
    if (out == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "cpu_gang_create: out is NULL");
    }
    *out = NULL;
    if (nthreads < 0 || nthreads > CPU_GANG_MAX_THREADS) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "cpu_gang_create: %d threads (expected 0 to %d)",
                        nthreads, CPU_GANG_MAX_THREADS);
    }
    if (nthreads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = cores < 1                      ? 1
                   : cores > CPU_GANG_MAX_THREADS ? CPU_GANG_MAX_THREADS
                                                  : (int)cores;
    }

    cpu_gang *g = fe_calloc(ctx, sizeof *g);
    if (g == NULL) {
        return fe_oom("cpu_gang_create");
    }
    g->ctx = ctx;
    g->size = nthreads;
    atomic_init(&g->ctl, 0); /* generation 0, wanting no one */
    atomic_init(&g->wake_sleepers, 0);
    atomic_init(&g->phase_sleepers, 0);
    atomic_init(&g->done_sleeping, 0);
    g->threads = fe_calloc(ctx, sizeof(pthread_t) * (size_t)(nthreads - 1));
    size_t per_job = (size_t)nthreads * CPU_GANG_MAX_PHASES;
    g->slot_bytes = sizeof(slot) * per_job * JOB_RING + CACHE_LINE;
    g->slot_mem = fe_calloc(ctx, g->slot_bytes);
    g->jobs = fe_calloc(ctx, sizeof(job) * JOB_RING);
    if (g->threads == NULL || g->slot_mem == NULL || g->jobs == NULL) {
        fe_free(ctx, g->jobs, sizeof(job) * JOB_RING);
        fe_free(ctx, g->slot_mem, g->slot_bytes);
        fe_free(ctx, g->threads, sizeof(pthread_t) * (size_t)(nthreads - 1));
        fe_free(ctx, g, sizeof *g);
        return fe_oom("cpu_gang_create");
    }
    uintptr_t at = ((uintptr_t)g->slot_mem + CACHE_LINE - 1) &
                   ~(uintptr_t)(CACHE_LINE - 1);
    for (int i = 0; i < JOB_RING; i++) {
        g->jobs[i].slots = (slot *)at + per_job * (size_t)i;
        g->jobs[i].joined = 0;
        atomic_init(&g->jobs[i].leaves, 0);
    }
    int rc = init_sync(g);
    if (rc != 0) {
        fe_free(ctx, g->jobs, sizeof(job) * JOB_RING);
        fe_free(ctx, g->slot_mem, g->slot_bytes);
        fe_free(ctx, g->threads, sizeof(pthread_t) * (size_t)(nthreads - 1));
        fe_free(ctx, g, sizeof *g);
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "cpu_gang_create: cannot make a mutex (error %d)", rc);
    }

    /* Workers start with every asynchronous signal blocked, so that the
     * host's handlers run on the host's own threads; faults stay open so
     * that a crash in a kernel is reported as usual. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGTRAP);
    sigdelset(&all, SIGABRT);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < nthreads - 1; i++) {
        rc = pthread_create(&g->threads[i], NULL, worker_main, g);
        if (rc != 0) {
            break;
        }
        g->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        int started = g->nthreads;
        destroy(g);
        return fe_error(
            rc == EAGAIN || rc == ENOMEM ? WEFT_ERR_OUT_OF_MEMORY
                                         : WEFT_ERR_BACKEND_UNAVAILABLE,
            "cpu_gang_create: cannot start worker thread %d of "
            "%d (%s)",
            started + 1, nthreads - 1,
            rc == EAGAIN ? "no thread left (EAGAIN)" : "pthread_create failed");
    }
    *out = g;
    return WEFT_OK;
}

void cpu_gang_free(cpu_gang *g)
{
    if (g != NULL) {
        destroy(g);
    }
}

int cpu_gang_size(const cpu_gang *g)
{
    return g != NULL ? g->size : 1;
}

int cpu_gang_worker_id(void)
{
    return tls_id;
}

/* ---- failures ----------------------------------------------------------- */

weft_status cpu_gang_fail(weft_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failure *f = tls_fail;
    if (f == NULL) {
        fe_verror(s, fmt, ap);
    } else if (s != WEFT_OK) {
        int expect = WEFT_OK;
        if (atomic_compare_exchange_strong(&f->status, &expect, (int)s)) {
            vsnprintf(f->msg, sizeof f->msg, fmt, ap);
        }
    }
    va_end(ap);
    return s;
}

bool cpu_gang_failed(void)
{
    failure *f = tls_fail;
    return f != NULL &&
           atomic_load_explicit(&f->status, memory_order_relaxed) != WEFT_OK;
}

/* ---- running ------------------------------------------------------------ */

static int64_t resolve_grain(const cpu_gang *g, const cpu_phase *p);

/* Run phases[0..n-1] one after the other on the calling thread. */
static weft_status run_inline(cpu_gang *g, int n, const cpu_phase *phases)
{
    failure f;
    atomic_init(&f.status, WEFT_OK);
    f.msg[0] = '\0';
    failure *saved_fail = tls_fail;
    cpu_gang *saved_gang = tls_gang;
    int saved_id = tls_id;
    if (saved_gang != g) {
        tls_id = 0; /* a nested call keeps its worker id */
    }
    tls_fail = &f;
    tls_gang = g;
    for (int i = 0; i < n; i++) {
        if (atomic_load_explicit(&f.status, memory_order_relaxed) != WEFT_OK) {
            break;
        }
        const cpu_phase *p = &phases[i];
        if (p->n > 0 && !p->cancel) {
            p->kernel(0, p->n, p->args);
        } else if (p->n > 0) {
            /* chunk by chunk, looking for a cancel in between */
            int64_t grain = resolve_grain(g, p);
            for (int64_t lo = 0; lo < p->n; lo += grain) {
                if (atomic_load_explicit(&f.status, memory_order_relaxed) !=
                    WEFT_OK) {
                    break;
                }
                if (fe_cancelled(p->cancel)) {
                    fail_cancelled(p->cancel);
                    break;
                }
                p->kernel(lo, p->n - lo < grain ? p->n : lo + grain, p->args);
            }
        }
    }
    tls_fail = saved_fail;
    tls_gang = saved_gang;
    tls_id = saved_id;
    weft_status s = (weft_status)atomic_load(&f.status);
    return s == WEFT_OK ? WEFT_OK : fe_error_copy(s, f.msg);
}

/* The grain of phase p on g: positive, and small enough that the number
 * of chunks fits in 32 bits. */
static int64_t resolve_grain(const cpu_gang *g, const cpu_phase *p)
{
    int64_t grain = p->grain;
    if (grain <= 0) {
        grain = div_up(p->n, (int64_t)g->size * AUTO_CHUNKS_PER_WORKER);
        if (grain < AUTO_MIN_GRAIN) {
            grain = AUTO_MIN_GRAIN;
        }
    }
    if (div_up(p->n, grain) > MAX_CHUNKS) {
        grain = div_up(p->n, MAX_CHUNKS);
    }
    return grain;
}

/* Wait (spin, then sleep) until every helper that joined job j, the
 * last time it was used, has left it. */
static void wait_leaves(cpu_gang *g, job *j)
{
    for (int i = 0; i < SPIN_WAIT; i++) {
        if (atomic_load_explicit(&j->leaves, memory_order_acquire) ==
            j->joined) {
            return;
        }
        fe_relax();
    }
    pthread_mutex_lock(&g->mu);
    atomic_store(&g->done_sleeping, 1);
    while (atomic_load(&j->leaves) != j->joined) {
        pthread_cond_wait(&g->done_cv, &g->mu);
    }
    atomic_store(&g->done_sleeping, 0);
    pthread_mutex_unlock(&g->mu);
}

/* Run at most CPU_GANG_MAX_PHASES valid phases as one job.  The caller
 * returns when the last phase is over, without waiting for the helpers
 * that joined to leave: on an oversubscribed machine a helper preempted
 * after its last chunk held the caller up for its time slice, although
 * nothing was left to do (k-means on 2 cores beside 6 busy loops: the
 * caller waited 0.3 to 1.3 s of 3.5 to 5.5 s for helpers to leave).  The
 * job a straggler holds is one of JOB_RING that the gang uses in turn,
 * so that it stays valid until the helper leaves: only the job JOB_RING
 * generations later, on the same entry, waits for that (with 4 entries
 * the same k-means still waited 1 to 3.6 s there, with 16 under 1 ms). */
static weft_status run_job(cpu_gang *g, int nphases, const cpu_phase *phases)
{
    cpu_phase ph[CPU_GANG_MAX_PHASES];
    int n = 0;
    int64_t most = 0; /* chunks of the largest phase */
    for (int i = 0; i < nphases; i++) {
        if (phases[i].n == 0) {
            continue;
        }
        cpu_phase *p = &ph[n++];
        *p = phases[i];
        p->grain = resolve_grain(g, p);
        int64_t c = div_up(p->n, p->grain);
        most = c > most ? c : most;
    }
    if (n == 0) {
        return WEFT_OK;
    }
    if (g->size == 1 || tls_gang == g || most <= 1) {
        return run_inline(g, n, ph);
    }

    pthread_mutex_lock(&g->run_mu);
    uint32_t gen = CTL_GEN(atomic_load_explicit(&g->ctl, memory_order_relaxed));
    gen = gen + 1 == 0 ? 1 : gen + 1; /* workers start having seen 0 */
    job *j = &g->jobs[gen % JOB_RING];
    wait_leaves(g, j);
    memcpy(j->ph, ph, sizeof(cpu_phase) * (size_t)n);
    j->nphases = n;
    j->nslots = most < g->size ? (int)most : g->size;
    int want = j->nslots - 1;
    atomic_store_explicit(&j->phase, 0, memory_order_relaxed);
    atomic_store_explicit(&j->fail.status, WEFT_OK, memory_order_relaxed);
    j->fail.msg[0] = '\0';
    atomic_store_explicit(&j->leaves, 0, memory_order_relaxed);
    for (int k = 0; k < j->nphases; k++) {
        int64_t c = div_up(j->ph[k].n, j->ph[k].grain);
        atomic_store_explicit(&j->left[k], j->ph[k].n, memory_order_relaxed);
        slot *base = phase_slots(g, j, k);
        for (int i = 0; i < j->nslots; i++) {
            uint32_t lo = (uint32_t)(c * i / j->nslots);
            uint32_t hi = (uint32_t)(c * (i + 1) / j->nslots);
            atomic_store_explicit(&base[i].range, pack(lo, hi),
                                  memory_order_relaxed);
        }
    }

    /* Publish: every helper that ever joined this job has left, so it is
     * ours to set; the new join word (seq_cst) releases it. */
    atomic_store(&g->ctl, CTL_MAKE(gen, want));
    if (atomic_load(&g->wake_sleepers) > 0) {
        pthread_mutex_lock(&g->mu);
        if (want >= g->size - 1) {
            pthread_cond_broadcast(&g->wake_cv);
        } else {
            for (int i = 0; i < want; i++) {
                pthread_cond_signal(&g->wake_cv);
            }
        }
        pthread_mutex_unlock(&g->mu);
    }

    failure *saved_fail = tls_fail;
    cpu_gang *saved_gang = tls_gang;
    int saved_id = tls_id;
    tls_fail = &j->fail;
    tls_gang = g;
    tls_id = 0;
    participate(g, j, 0);
    tls_fail = saved_fail;
    tls_gang = saved_gang;
    tls_id = saved_id;

    /* Close the job to joiners; those who joined leave in their own time
     * (wait_leaves, when the job comes round again).  Every kernel of the
     * job has returned: a helper's chunks are counted after they ran. */
    j->joined = CTL_JOINED(atomic_fetch_or(&g->ctl, CTL_CLOSED));
    weft_status s = (weft_status)atomic_load(&j->fail.status);
    if (s != WEFT_OK) {
        s = fe_error_copy(s, j->fail.msg);
    }
    pthread_mutex_unlock(&g->run_mu);
    return s;
}

weft_status cpu_gang_run_phases(cpu_gang *g, int nphases,
                                const cpu_phase *phases)
{
    if (g == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "cpu_gang_run_phases: gang is NULL");
    }
    if (nphases < 0) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "cpu_gang_run_phases: %d phases", nphases);
    }
    if (nphases > 0 && phases == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "cpu_gang_run_phases: phases is NULL");
    }
    for (int i = 0; i < nphases; i++) {
        if (phases[i].n < 0) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "cpu_gang_run_phases: phase %d has %lld "
                            "elements",
                            i, (long long)phases[i].n);
        }
        if (phases[i].n > 0 && phases[i].kernel == NULL) {
            return fe_error(WEFT_ERR_NULL_ARGUMENT,
                            "cpu_gang_run_phases: phase %d has no kernel", i);
        }
    }
    for (int i = 0; i < nphases; i += CPU_GANG_MAX_PHASES) {
        int m = nphases - i < CPU_GANG_MAX_PHASES ? nphases - i
                                                  : CPU_GANG_MAX_PHASES;
        weft_status s = run_job(g, m, phases + i);
        if (s != WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

weft_status cpu_gang_run(cpu_gang *g, cpu_kernel_fn k, const void *args,
                         int64_t n, int64_t grain)
{
    if (g == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "cpu_gang_run: gang is NULL");
    }
    if (n < 0) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "cpu_gang_run: %lld elements", (long long)n);
    }
    if (n > 0 && k == NULL) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "cpu_gang_run: kernel is NULL");
    }
    cpu_phase p = {.kernel = k, .args = args, .n = n, .grain = grain};
    if (n == 0) {
        return WEFT_OK;
    }
    if (n <= grain || g->size == 1 || tls_gang == g) {
        return run_inline(g, 1, &p); /* the fast path of small jobs */
    }
    return run_job(g, 1, &p);
}
