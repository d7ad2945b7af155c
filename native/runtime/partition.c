/*
 * partition.c -- where pending events wait, and how many threads work:
 *
 *   partitions      the parallel executor cuts each instance's entities into
 *                   contiguous, equal partitions, one queue each
 *                   (seer_set_partitions)
 *   migration       moving an instance's pending events between the serial
 *                   executor's one queue and the partition queues
 *                   (migrate_instance): executor switches
 *                   (seer_runtime_set_executor), repartitioning, and the
 *                   serial fallback of a step (seer_step_serially)
 *   pool size       seer_runtime_set_threads: parking and unparking
 *                   workers, or a new, larger pool (and partitions)
 *
 * Everything here runs on the host thread between calls, when no worker
 * touches a queue and every outbox is empty.  Every change is reserve-then-
 * move: on failure nothing changed, or -- when even moving events back ran
 * out of memory -- the instances concerned need a reset and say why.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "errors.h"
#include "event.h"
#include "parallel.h"
#include "partition.h"
#include "process.h"
#include "runtime.h"
#include "serial.h"
#include "squeue.h"
#include "sync.h"

#define MIG_NB SEER_SQ_COUNTS /* migration counts per destination queue */

/* The pool size that takes part in calls: at most the CPUs this process may
 * run on (more threads would only wait for each other: 64 threads on 2 cores
 * once ran 16 times slower than 2), unless SEER_RT_OVERSUBSCRIBE. */
uint32_t seer_active_threads(uint32_t flags, uint32_t threads)
{
    if (flags & SEER_RT_OVERSUBSCRIBE)
        return threads;
    const uint32_t cpus = seer_cpu_count();
    return threads < cpus ? threads : cpus;
}

void seer_free_part_queues(const seer_runtime *rt, seer_squeue *parts)
{
    if (parts)
        for (uint32_t p = 0; p < rt->part.n; p++)
            seer_squeue_free(&parts[p]);
    free(parts);
}

/* ---- migration ------------------------------------------------------------ */

/* Move one instance's pending events between the executors' queues: the
 * serial executor's one queue and the parallel executor's partition queues.
 * Runs between calls, when the outboxes are empty.  Both executors order an
 * entity's events by the same (time, key), and the key travels with the
 * event, so the outcome does not depend on where the events waited.
 * Capacity is reserved first (counts: nparts * MIG_NB scratch): once moving
 * starts nothing can fail half way. */

struct migrate_ctx {
    seer_runtime *rt;
    seer_inst *in;
    uint64_t *counts;
    int to;
};

static seer_squeue *dest_queue(const struct migrate_ctx *m, const seer_event *ev, size_t *row)
{
    if (m->to == SEER_EXECUTOR_SERIAL) {
        *row = 0;
        return &m->in->queue;
    }
    uint32_t p = m->rt->part.of[ev->target];
    *row = (size_t)p * MIG_NB;
    return &m->in->parts[p];
}

static void count_cb(void *arg, seer_event *ev)
{
    struct migrate_ctx *m = arg;
    size_t row;
    seer_squeue *q = dest_queue(m, ev, &row);
    m->counts[row + (size_t)seer_squeue_bucket_of_owner(q, ev->time)]++;
}

static void move_cb(void *arg, seer_event *ev)
{
    size_t row;
    (void)seer_squeue_push_owner(dest_queue(arg, ev, &row), ev); /* reserved: cannot fail */
}

static int migrate_instance(seer_runtime *rt, seer_inst *in, int to, uint64_t *counts)
{
    struct migrate_ctx m = {rt, in, counts, to};
    const uint32_t np = to == SEER_EXECUTOR_SERIAL ? 1 : rt->part.n;
    const uint32_t nsrc = to == SEER_EXECUTOR_SERIAL ? rt->part.n : 1;
    seer_squeue *src = to == SEER_EXECUTOR_SERIAL ? in->parts : &in->queue;
    memset(counts, 0, (size_t)np * MIG_NB * sizeof *counts);
    for (uint32_t k = 0; k < nsrc; k++)
        seer_squeue_foreach_owner(&src[k], count_cb, &m);
    seer_squeue *dst = to == SEER_EXECUTOR_SERIAL ? &in->queue : in->parts;
    for (uint32_t p = 0; p < np; p++)
        if (seer_squeue_reserve_owner(&dst[p], counts + (size_t)p * MIG_NB) != SEER_OK)
            return SEER_E_NOMEM;
    for (uint32_t k = 0; k < nsrc; k++) {
        seer_squeue_foreach_owner(&src[k], move_cb, &m);
        seer_squeue_clear_owner(&src[k]);
    }
    return SEER_OK;
}

/* An instance whose pending events could not be moved back after a move
 * between queues failed half way (out of memory again): its events are
 * dropped from every queue (their records return with the pool's chunks)
 * and it needs a reset, for the reason given -- as after a failed call, so
 * that a step says why. */
static void abandon_events(seer_runtime *rt, seer_inst *in, const char *why)
{
    seer_squeue_clear_owner(&in->queue);
    for (uint32_t p = 0; in->parts && p < rt->part.n; p++)
        seer_squeue_clear_owner(&in->parts[p]);
    in->ready = 0;
    in->failed = 1;
    snprintf(rt->fail_msg, sizeof rt->fail_msg, "%s", why);
}

/* ---- partitions ------------------------------------------------------------- */

/* The partitions per instance for a pool of `np` threads: one partition a
 * thread keeps the events that cross partitions, and with them the traffic
 * between cores, few (a PCS 64x64 step ran 1.9x faster on 2 threads than
 * serially with 2 partitions, 1.75x with 4 and 1.6x with 16). */
static uint32_t partition_count(const seer_runtime *rt, uint32_t np)
{
    const uint32_t N = rt->sz.num_entities;
    /* Many instances per thread (a multiple of the threads, or at least
     * three per thread): one partition each, so that a step is one item per
     * instance, taken whole by one thread without windows (parallel.c).
     * PCS 64x64 B=8 on 2 threads: windows advance all eight instances in
     * lockstep, whose working sets then do not fit the caches together. */
    if (rt->B >= np && (rt->B % np == 0 || rt->B >= 3 * np))
        np = 1;
    /* SEER_CHECK_SHUFFLE: a partition per entity, whatever the pool */
    if (rt->check.mode & SEER_CHECK_SHUFFLE)
        np = N;
    /* at most SEER_MAX_PARTS: every thread keeps an outbox per partition
     * and a visit reads every thread's, so partitions times threads must
     * stay modest (threads beyond it share the partitions' work) */
    np = np < 1 ? 1 : np > N ? N : np;
    return np > SEER_MAX_PARTS ? SEER_MAX_PARTS : np;
}

/* A new partitioning, allocated whole before anything moves. */
struct new_parts {
    uint32_t np;
    uint32_t *of;        /* [num_entities]: part_of                          */
    uint32_t *start;     /* [np + 1]: part_start                             */
    seer_squeue **parts; /* [B]: each instance's np (empty) queues           */
    uint64_t *counts;    /* migration scratch, rows for the new partitions
                            and for the old ones (should events go back)     */
};

static int alloc_new_parts(const seer_runtime *rt, struct new_parts *n)
{
    const uint32_t N = rt->sz.num_entities, np = n->np;
    n->of = malloc(N * sizeof *n->of);
    n->start = malloc((np + 1) * sizeof *n->start);
    n->parts = calloc(rt->B, sizeof *n->parts);
    const uint32_t rows = np > rt->part.n ? np : rt->part.n;
    n->counts = malloc((size_t)rows * MIG_NB * sizeof *n->counts);
    int ok = n->of && n->start && n->parts && n->counts;
    for (uint32_t i = 0; ok && i < rt->B; i++) {
        n->parts[i] = aligned_alloc(SEER_CACHE_LINE, np * sizeof(seer_squeue));
        if (!n->parts[i])
            ok = 0;
        else
            for (uint32_t p = 0; p < np; p++)
                seer_squeue_init(&n->parts[i][p]);
    }
    return ok ? SEER_OK : SEER_E_NOMEM;
}

static void free_new_parts(const seer_runtime *rt, struct new_parts *n)
{
    for (uint32_t i = 0; n->parts && i < rt->B; i++)
        if (n->parts[i]) {
            for (uint32_t p = 0; p < n->np; p++)
                seer_squeue_free(&n->parts[i][p]);
            free(n->parts[i]);
        }
    free(n->of);
    free(n->start);
    free(n->parts);
    free(n->counts);
}

/* On the parallel executor, park every instance's events in its serial
 * queue while the partitions change (nothing can fail in between: the
 * moves reserve first); *parked says how many instances were parked.  On
 * failure those parked go back to their partitions (*lost: some could not,
 * and need a reset). */
static int park_events(seer_runtime *rt, uint64_t *counts, uint32_t *parked, int *lost)
{
    uint32_t k = 0;
    int ok = 1;
    if (seer_uses_parts(rt->executor) && rt->part.n)
        for (; k < rt->B && ok; k++)
            ok = migrate_instance(rt, &rt->inst[k], SEER_EXECUTOR_SERIAL, counts) == SEER_OK;
    *parked = k;
    if (ok)
        return SEER_OK;
    /* instance k - 1 failed before moving anything; those before it go back */
    for (uint32_t i = 0; i + 1 < k; i++)
        if (migrate_instance(rt, &rt->inst[i], SEER_EXECUTOR_PARALLEL, counts) != SEER_OK) {
            abandon_events(rt, &rt->inst[i], "out of memory moving its pending events "
                                             "back to their partitions");
            *lost = 1;
        }
    return SEER_E_NOMEM;
}

/* Replace the old partitions (empty now) with the new ones.  Cannot fail. */
static void install_partitions(seer_runtime *rt, struct new_parts *n)
{
    const uint32_t N = rt->sz.num_entities, np = n->np;
    for (uint32_t i = 0; i < rt->B; i++) {
        seer_free_part_queues(rt, rt->inst[i].parts);
        rt->inst[i].parts = n->parts[i];
    }
    for (uint32_t p = 0; p <= np; p++)
        n->start[p] = (uint32_t)((uint64_t)N * p / np);
    for (uint32_t p = 0; p < np; p++)
        for (uint32_t e = n->start[p]; e < n->start[p + 1]; e++)
            n->of[e] = p;
    free(rt->part.of);
    free(rt->part.start);
    rt->part.of = n->of;
    rt->part.start = n->start;
    rt->part.n = np;
    free(n->parts); /* the queues now belong to the instances */
}

/* The parked instances' events into the new partitions' queues. */
static int unpark_events(seer_runtime *rt, uint64_t *counts, uint32_t parked)
{
    int rc = SEER_OK;
    for (uint32_t i = 0; i < parked; i++)
        if (migrate_instance(rt, &rt->inst[i], SEER_EXECUTOR_PARALLEL, counts) != SEER_OK) {
            /* Out of memory moving back: the instance must be reset. */
            abandon_events(rt, &rt->inst[i], "out of memory moving its pending events to "
                                             "new partitions");
            rc = SEER_E_NOMEM;
        }
    if (rc != SEER_OK)
        seer_fail(rt, "out of memory partitioning the entities: instances need a reset");
    return rc;
}

/* Cut every instance's entities into contiguous, equal partitions, one per
 * thread (partition_count).  Between calls only.  Pending events move to
 * the new partitions' queues. */
int seer_set_partitions(seer_runtime *rt, uint32_t threads)
{
    struct new_parts n = {.np = partition_count(rt, threads)};
    if (n.np == rt->part.n)
        return SEER_OK;
    uint32_t parked = 0;
    int lost = 0;
    int rc = alloc_new_parts(rt, &n);
    if (rc == SEER_OK)
        rc = park_events(rt, n.counts, &parked, &lost);
    if (rc != SEER_OK) {
        free_new_parts(rt, &n);
        seer_fail(rt, "out of memory partitioning the entities%s",
                  lost ? ": instances need a reset" : "");
        return SEER_E_NOMEM;
    }
    install_partitions(rt, &n);
    rc = unpark_events(rt, n.counts, parked);
    free(n.counts);
    return rc;
}

/* ---- pool size -------------------------------------------------------------- */

/* Make `threads` workers take part in calls.  Within the created pool this
 * only parks or unparks workers (no thread is created or joined, nothing
 * can fail); a larger pool is created anew, with new partitions.  A pool
 * that cannot grow keeps its size. */
static int resize_pool(seer_runtime *rt, uint32_t threads)
{
    if (threads <= rt->pool.nthreads) {
        /* relaxed: published to the workers by the next call's release bump
         * of job_gen; until then a parked worker at most spins a little. */
        atomic_store_explicit(&rt->pool.active, threads, memory_order_relaxed);
        return SEER_OK;
    }
    const uint32_t old = rt->pool.nthreads;
    /* relaxed: the host is the only writer. */
    const uint32_t old_active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    seer_pool_stop(rt);
    int rc = seer_set_partitions(rt, threads);
    if (rc == SEER_OK) {
        if (seer_pool_start(rt, threads) == SEER_OK)
            return SEER_OK;
        rc = SEER_E_NOMEM;
        seer_fail(rt, "could not start %u threads (out of memory or threads); the pool keeps "
                      "its %u",
                  threads, old_active);
    }
    /* Back to the old pool, its parked workers parked (its memory was just
     * freed, so this fails only if memory ran out meanwhile: then the
     * runtime cannot run). */
    if (seer_pool_restart(rt, old, old_active) != SEER_OK) {
        rt->broken = 1;
        seer_fail(rt, "out of memory restarting the worker pool: this runtime cannot run any "
                      "more; close it and create a new one");
    }
    return rc;
}

int seer_runtime_set_threads(seer_runtime *rt, uint32_t threads)
{
    if (threads == 0 || threads > 1024) {
        seer_fail(rt, "threads=%u must be in [1, 1024]", threads);
        return SEER_E_ARG;
    }
    if (rt->executor == SEER_EXECUTOR_SERIAL && threads != 1) {
        seer_fail(rt, "the serial executor runs on one thread");
        return SEER_E_ARG;
    }
    int rc = seer_call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    if (rt->executor == SEER_EXECUTOR_SERIAL)
        return SEER_OK;
    return resize_pool(rt, seer_active_threads(rt->rt_flags, threads));
}

/* ---- executor switches ------------------------------------------------------ */

static int check_executor_args(seer_runtime *rt, int executor, uint32_t threads)
{
    if (executor != SEER_EXECUTOR_SERIAL && executor != SEER_EXECUTOR_PARALLEL &&
        executor != SEER_EXECUTOR_OPTIMISTIC) {
        seer_fail(rt, "unknown executor %d", executor);
        return SEER_E_ARG;
    }
    if (threads == 0 || threads > 1024) {
        seer_fail(rt, "threads=%u must be in [1, 1024]", threads);
        return SEER_E_ARG;
    }
    if (executor == SEER_EXECUTOR_SERIAL && threads != 1) {
        seer_fail(rt, "the serial executor runs on one thread");
        return SEER_E_ARG;
    }
    if (executor == SEER_EXECUTOR_PARALLEL && !(rt->sz.lookahead > 0.0)) {
        seer_fail(rt, "model '%s' has lookahead 0: the parallel executor needs L > 0 "
                  "(the optimistic executor runs it)",
                  rt->model->name);
        return SEER_E_EXECUTOR;
    }
    if (rt->check.mode) {
        seer_fail(rt, "a runtime in checking mode keeps its executor");
        return SEER_E_ARG;
    }
    return SEER_OK;
}

/* Move every instance's events to `executor`'s queues.  Reserve-then-move
 * per instance: a failure leaves every instance whole, its events in one
 * executor's queues; those already moved are moved back so the runtime
 * stays on its old executor (*lost: an instance could not even move back
 * and needs a reset). */
static int migrate_all(seer_runtime *rt, int executor, int *lost)
{
    uint64_t *counts = malloc((size_t)rt->part.n * MIG_NB * sizeof *counts);
    uint32_t done = 0;
    int rc = counts ? SEER_OK : SEER_E_NOMEM;
    for (; counts && done < rt->B && rc == SEER_OK; done++)
        rc = migrate_instance(rt, &rt->inst[done], executor, counts);
    if (rc != SEER_OK)
        for (uint32_t i = 0; i + 1 < done; i++)
            if (migrate_instance(rt, &rt->inst[i], rt->executor, counts) != SEER_OK) {
                abandon_events(rt, &rt->inst[i], "out of memory moving its pending events "
                                                 "back after a failed executor switch");
                *lost = 1;
            }
    free(counts);
    return rc;
}

int seer_runtime_set_executor(seer_runtime *rt, int executor, uint32_t threads)
{
    int rc = check_executor_args(rt, executor, threads);
    if (rc != SEER_OK)
        return rc;
    rc = seer_call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    /* relaxed: the host is the only writer. */
    const uint32_t old_active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    /* The pool first: one that cannot grow keeps its size (resize_pool), and
     * the executor has not changed yet.  Then the events, which on failure
     * go back, and the pool back to its old size (within the pool just
     * started: parking only, which cannot fail).  So on failure nothing
     * changed. */
    rc = resize_pool(rt, seer_active_threads(rt->rt_flags, threads));
    if (rc != SEER_OK || executor == rt->executor)
        return rc;
    if (seer_uses_parts(executor) == seer_uses_parts(rt->executor)) {
        /* parallel <-> optimistic: the events stay in the partition queues */
        rt->executor = executor;
        return SEER_OK;
    }
    int lost = 0;
    if (migrate_all(rt, executor, &lost) != SEER_OK) {
        (void)resize_pool(rt, old_active);
        seer_fail(rt, "out of memory switching executors%s",
                  lost ? ": instances need a reset" : "");
        return SEER_E_NOMEM;
    }
    rt->executor = executor;
    return SEER_OK;
}

/* ---- a step on the serial executor inside a parallel call ------------------- */

/* A window [T, T + L) of the parallel executor advances only while T + L
 * > T in double precision.  At simulated times where the lookahead is below
 * that resolution (L < ulp(T)), an instance's step runs on the serial
 * executor instead: its events move to the serial queue and back (outputs
 * are the same either way; only speed differs).  The optimistic executor
 * runs the rest of a step whose speculation it abandoned here too (act = 0:
 * the act phase ran). */
int seer_step_serially(seer_runtime *rt, uint32_t i, int act, uint64_t done)
{
    seer_inst *in = &rt->inst[i];
    uint64_t *counts = malloc((size_t)(rt->part.n > 1 ? rt->part.n : 1) * MIG_NB *
                              sizeof *counts);
    if (!counts || migrate_instance(rt, in, SEER_EXECUTOR_SERIAL, counts) != SEER_OK) {
        free(counts);
        seer_fail(rt, "out of memory moving instance %u's events for a serial step", i);
        return SEER_E_NOMEM;
    }
    const int executor = rt->executor;
    rt->executor = SEER_EXECUTOR_SERIAL;
    int rc = act ? seer_serial_step(rt, i) : seer_serial_step_events(rt, i, done);
    rt->executor = executor;
    if (migrate_instance(rt, in, executor, counts) != SEER_OK && rc == SEER_OK) {
        seer_squeue_clear_owner(&in->queue); /* its records return with the pool's chunks */
        seer_fail(rt, "out of memory moving instance %u's events back after a serial step", i);
        rc = SEER_E_NOMEM;
    }
    free(counts);
    if (act)
        rt->stats.serial_fallbacks++;
    return rc;
}
