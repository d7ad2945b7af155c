/*
 * partition.c -- where pending events wait, and how many threads work:
 *
 *   partitions      the parallel executor cuts each instance's entities into
 *                   contiguous, equal partitions, one queue each
 *                   (seer_set_partitions)
 *   migration       moving an instance's pending events between the serial
 *                   executor's one queue and the partition queues
 *                   (seer_migrate_instance): executor switches
 *                   (seer_migrate_all, for seer_runtime_set_executor in
 *                   threads.c), repartitioning, and the serial fallback of a
 *                   step (seer_step_serially, serial.c)
 *   pool size       the threads that take part in calls
 *                   (seer_active_threads)
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
#include "partition.h"
#include "process.h"
#include "runtime.h"
#include "squeue.h"
#include "sync.h"

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
 * Capacity is reserved first (counts: nparts * SEER_MIG_NB scratch): once moving
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
    *row = (size_t)p * SEER_MIG_NB;
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

int seer_migrate_instance(seer_runtime *rt, seer_inst *in, int to, uint64_t *counts)
{
    struct migrate_ctx m = {rt, in, counts, to};
    const uint32_t np = to == SEER_EXECUTOR_SERIAL ? 1 : rt->part.n;
    const uint32_t nsrc = to == SEER_EXECUTOR_SERIAL ? rt->part.n : 1;
    seer_squeue *src = to == SEER_EXECUTOR_SERIAL ? in->parts : &in->queue;
    memset(counts, 0, (size_t)np * SEER_MIG_NB * sizeof *counts);
    for (uint32_t k = 0; k < nsrc; k++)
        seer_squeue_foreach_owner(&src[k], count_cb, &m);
    seer_squeue *dst = to == SEER_EXECUTOR_SERIAL ? &in->queue : in->parts;
    for (uint32_t p = 0; p < np; p++)
        if (seer_squeue_reserve_owner(&dst[p], counts + (size_t)p * SEER_MIG_NB) != SEER_OK)
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
uint32_t seer_partition_count(const seer_runtime *rt, uint32_t np)
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
    n->counts = malloc((size_t)rows * SEER_MIG_NB * sizeof *n->counts);
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
            ok = seer_migrate_instance(rt, &rt->inst[k], SEER_EXECUTOR_SERIAL, counts) == SEER_OK;
    *parked = k;
    if (ok)
        return SEER_OK;
    /* instance k - 1 failed before moving anything; those before it go back */
    for (uint32_t i = 0; i + 1 < k; i++)
        if (seer_migrate_instance(rt, &rt->inst[i], SEER_EXECUTOR_PARALLEL, counts) != SEER_OK) {
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
        if (seer_migrate_instance(rt, &rt->inst[i], SEER_EXECUTOR_PARALLEL, counts) != SEER_OK) {
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
    return seer_set_partition_count(rt, seer_partition_count(rt, threads));
}

int seer_set_partition_count(seer_runtime *rt, uint32_t np)
{
    struct new_parts n = {.np = np};
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

/* ---- executor switches ------------------------------------------------------ */

/* Move every instance's events to `executor`'s queues.  Reserve-then-move
 * per instance: a failure leaves every instance whole, its events in one
 * executor's queues; those already moved are moved back so the runtime
 * stays on its old executor (*lost: an instance could not even move back
 * and needs a reset). */
int seer_migrate_all(seer_runtime *rt, int executor, int *lost)
{
    uint64_t *counts = malloc((size_t)rt->part.n * SEER_MIG_NB * sizeof *counts);
    uint32_t done = 0;
    int rc = counts ? SEER_OK : SEER_E_NOMEM;
    for (; counts && done < rt->B && rc == SEER_OK; done++)
        rc = seer_migrate_instance(rt, &rt->inst[done], executor, counts);
    if (rc != SEER_OK)
        for (uint32_t i = 0; i + 1 < done; i++)
            if (seer_migrate_instance(rt, &rt->inst[i], rt->executor, counts) != SEER_OK) {
                abandon_events(rt, &rt->inst[i], "out of memory moving its pending events "
                                                 "back after a failed executor switch");
                *lost = 1;
            }
    free(counts);
    return rc;
}
