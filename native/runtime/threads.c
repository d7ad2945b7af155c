/*
 * threads.c -- the host API's thread and executor switches: how many
 * workers take part in calls (seer_runtime_set_threads: parking and
 * unparking workers, or a new, larger pool and partitions), and which
 * executor runs them (seer_runtime_set_executor: the pool first, then the
 * pending events moved to the other executor's queues, partition.c), and
 * the event records put where a while on that configuration would leave
 * them, at once (seer_runtime_tidy_records, after a switch a controller
 * times).
 *
 * Everything here runs on the host thread between calls, when no worker
 * touches a queue and every outbox is empty; on failure nothing changed,
 * or the instances concerned need a reset and say why.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "api.h"
#include "base.h"
#include "company.h"
#include "errors.h"
#include "events.h"
#include "partition.h"
#include "pool.h"
#include "process.h"
#include "runtime.h"
#include "sync.h"

/* ---- pool size -------------------------------------------------------------- */

/* A new configuration: its pool first (an alone stretch ends, its events
 * back on the pool's queues first: company.c). */
static int leave_stretch(seer_runtime *rt)
{
    if (seer_pool_alone_leave_serial_host(rt) != SEER_OK) {
        seer_fail(rt, "out of memory moving the pending events back to the pool's queues "
                      "after an alone stretch; nothing changed");
        return SEER_E_NOMEM;
    }
    seer_pool_alone_end_host(rt);
    return SEER_OK;
}

/* Make `threads` workers take part in calls.  Within the created pool this
 * only parks or unparks workers (no thread is created or joined, nothing
 * can fail; the partitions follow once the new size has lasted:
 * seer_pool_settle_host); a larger pool is created anew, with new
 * partitions.  A pool that cannot grow keeps its size. */
static int resize_pool(seer_runtime *rt, uint32_t threads)
{
    if (threads <= rt->pool.nthreads) {
        /* relaxed: published to the workers by the next call's release bump
         * of job_gen; until then a parked worker at most spins a little. */
        atomic_store_explicit(&rt->pool.active, threads, memory_order_relaxed);
        return SEER_OK;
    }
    return seer_pool_remake(rt, threads, threads, threads);
}

static int set_threads_held(seer_runtime *rt, uint32_t threads);

/* set_threads, set_executor and tidy_records run held (seer_fork_hold_host):
 * they rewrite the pool and the event lists, and no hook runs in them. */
int seer_runtime_set_threads(seer_runtime *rt, uint32_t threads)
{
    seer_fork_hold_host();
    const int rc = set_threads_held(rt, threads);
    seer_fork_release_host();
    return rc;
}

static int set_threads_held(seer_runtime *rt, uint32_t threads)
{
    if (threads == 0 || threads > SEER_MAX_THREADS) {
        seer_fail(rt, "threads=%u must be in [1, %u]", threads, (unsigned)SEER_MAX_THREADS);
        return SEER_E_ARG;
    }
    if (seer_runtime_executor(rt) == SEER_EXECUTOR_SERIAL && threads != 1) {
        seer_fail(rt, "the serial executor runs on one thread");
        return SEER_E_ARG;
    }
    int rc = seer_call_begin(rt);
    if (rc != SEER_OK || (rc = leave_stretch(rt)) != SEER_OK)
        return rc;
    if (rt->executor == SEER_EXECUTOR_SERIAL)
        return SEER_OK;
    return resize_pool(rt, seer_active_threads(rt->rt_flags, threads));
}

int seer_runtime_set_call_threads(seer_runtime *rt, uint32_t threads)
{
    if (threads > SEER_MAX_THREADS) {
        seer_fail(rt, "call threads=%u must be in [0, %u]", threads, (unsigned)SEER_MAX_THREADS);
        return SEER_E_ARG;
    }
    /* host only, between calls: read by the host at the next call's start */
    rt->pool.call_cap = threads;
    return SEER_OK;
}

/* ---- executor switches ------------------------------------------------------ */

static int check_executor_args(seer_runtime *rt, int executor, uint32_t threads)
{
    if (executor != SEER_EXECUTOR_SERIAL && executor != SEER_EXECUTOR_PARALLEL &&
        executor != SEER_EXECUTOR_OPTIMISTIC) {
        seer_fail(rt, "unknown executor %d", executor);
        return SEER_E_ARG;
    }
    if (threads == 0 || threads > SEER_MAX_THREADS) {
        seer_fail(rt, "threads=%u must be in [1, %u]", threads, (unsigned)SEER_MAX_THREADS);
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

static int set_executor_held(seer_runtime *rt, int executor, uint32_t threads);

int seer_runtime_set_executor(seer_runtime *rt, int executor, uint32_t threads)
{
    seer_fork_hold_host();
    const int rc = set_executor_held(rt, executor, threads);
    seer_fork_release_host();
    return rc;
}

static int set_executor_held(seer_runtime *rt, int executor, uint32_t threads)
{
    int rc = check_executor_args(rt, executor, threads);
    if (rc != SEER_OK)
        return rc;
    rc = seer_call_begin(rt);
    if (rc != SEER_OK || (rc = leave_stretch(rt)) != SEER_OK)
        return rc;
    /* relaxed: the host is the only writer. */
    const uint32_t old_active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    /* The pool first: one that cannot grow keeps its size (resize_pool), and
     * the executor has not changed yet.  Then the events, which on failure
     * go back, and the pool back to its old size (within the pool just
     * started: parking only, which cannot fail).  So on failure nothing
     * changed. */
    rc = resize_pool(rt, seer_active_threads(rt->rt_flags, threads));
    /* a pool (of another size, or after another executor): its lists in
     * address order a while on (events_layout.c says why) */
    if (rc == SEER_OK && executor != SEER_EXECUTOR_SERIAL)
        seer_event_order_pool_soon_host(rt);
    if (rc != SEER_OK || executor == rt->executor)
        return rc;
    if (seer_uses_parts(executor) == seer_uses_parts(rt->executor)) {
        /* parallel <-> optimistic: the events stay in the partition queues */
        rt->executor = executor;
        return SEER_OK;
    }
    int lost = 0;
    if (seer_migrate_all(rt, executor, &lost) != SEER_OK) {
        (void)resize_pool(rt, old_active);
        seer_fail(rt, "out of memory switching executors%s",
                  lost ? ": instances need a reset" : "");
        return SEER_E_NOMEM;
    }
    rt->executor = executor;
    /* the records flowed between the pool's threads: once the serial
     * executor has run a while (not for a probe's visit), every free record
     * goes to its list in address order (events_layout.c says why) */
    rt->mem.order_in = executor == SEER_EXECUTOR_SERIAL ? SEER_ORDER_AFTER_STEPS : 0;
    return SEER_OK;
}

/* ---- records after a switch -------------------------------------------------- */

int seer_runtime_tidy_records(seer_runtime *rt)
{
    seer_fork_hold_host();
    int rc = seer_call_begin(rt);
    if (rc == SEER_OK && rt->executor == SEER_EXECUTOR_SERIAL) {
        rt->mem.order_in = 0; /* done now, not SEER_ORDER_AFTER_STEPS steps on */
        seer_event_tidy_serial_host(rt, 0);
    } else if (rc == SEER_OK) {
        seer_event_tidy_pool_host(rt);
    }
    seer_fork_release_host();
    return rc;
}
