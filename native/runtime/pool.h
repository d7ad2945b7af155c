/*
 * pool.h -- the worker pool and its phase machine (pool.c; private): the
 * phase kinds, the table through which an executor hands the machine its
 * events phases, the call's abort code.
 */
#ifndef SEER_POOL_H
#define SEER_POOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime.h"

/* ---- phase kinds ----------------------------------------------------------- */

/* The kinds of a call's phases (pool.c runs them; see there). */
enum {
    PH_CLEAR = 1,
    PH_INIT,
    PH_ACT,
    PH_EVENTS, /* the executor's: seer_events_phases */
    PH_FLUSH,
    PH_BINST,
    PH_OBSERVE,
    PH_PUBLISH,
    PH_INSTANCE,
    PH_DONE
};

/* An executor's events phases, between the act phase and the boundary
 * phases of a step: the parallel executor's windows (parallel.c), the
 * optimistic executor's speculation phases (optimistic.c).  The phase
 * machine calls them and nothing else of an executor. */
typedef struct seer_events_phases {
    /* The completer (worker w), after the act phase: the next phase's kind
     * (PH_EVENTS, or PH_FLUSH when no events phase follows). */
    uint32_t (*after_act_completer)(seer_runtime *rt, seer_worker *w);
    /* The items of an events phase. */
    uint32_t (*items)(const seer_runtime *rt);
    /* Items [b, e) of an events phase, on w's thread; `bank`: the previous
     * phase's outboxes. */
    void (*run_local)(seer_worker *w, seer_ctx *c, uint32_t b, uint32_t e, uint32_t bank);
    /* The completer (worker w), after an events phase: the next phase's
     * kind (PH_EVENTS for another). */
    uint32_t (*after_events_completer)(seer_runtime *rt, seer_worker *w);
    /* Optional (NULL: none).  Worker w holds every chunk of the events
     * phase whose items it has just handled (nobody else claimed one): it
     * may go on with the following phases' work alone, without their
     * hand-overs, until it is done or another worker is there to share it
     * (the phases' `arrivals` moved from `arrivals0`); the phase machine
     * then completes the phase as usual, and the completer reads what the
     * items left (queues, minima).  So a pool whose other threads are not
     * running (a loaded machine) costs a step about what one thread does. */
    void (*run_alone_holder)(seer_worker *w, seer_ctx *c, uint32_t arrivals0);
    /* Nonzero: the items of an events phase wait for each other (every one
     * must be held at once for the phase to end: the optimistic executor's
     * slots).  A call capped to one thread opens such a phase as one chunk,
     * so whoever claims it -- the caller, or a worker still in the last call
     * -- holds them all; one item claimed by a late worker left the rest to
     * threads the cap keeps out, and the phase never ended. */
    int items_wait;
} seer_events_phases;

/* The first boundary phase of a step (BINST when the model has a boundary
 * hook). */
static inline uint32_t seer_first_boundary_phase(const seer_runtime *rt)
{
    return rt->model->boundary ? PH_BINST : PH_OBSERVE;
}

/* Item x of a partition phase (per = partitions per instance): the index k
 * of its instance in the selection, and its partition (SEER_CHECK_SHUFFLE:
 * through the phase's visiting order). */
static inline void seer_phase_item(const seer_runtime *rt, uint32_t x, uint32_t per,
                                   uint32_t *k, uint32_t *item)
{
    const uint32_t v = rt->call.perm ? rt->call.perm[x] : x;
    *k = v / per;
    *item = v % per;
}

/* ---- the call's abort code (pool.c, the executors) -------------------------- */

/* Make this worker's error, if any, the call's abort code (the first one
 * wins): the completer then ends the call after the outboxes are flushed,
 * and a speculation slot that sees it leaves the phase.  w's thread. */
static inline void seer_propagate_error_local(seer_worker *w)
{
    if (w->err) {
        int expected = 0;
        /* relaxed: read by the phase completer after the phase completes
         * (ordered by the acq_rel completion that follows this store in the
         * same thread), and by every speculation slot as a hint (a slot that
         * sees it late only works a little longer) */
        atomic_compare_exchange_strong_explicit(&w->rt->call.abort_code, &expected, w->err,
                                                memory_order_relaxed,
                                                memory_order_relaxed);
    }
}

/* Has the current call been aborted?  Any thread. */
static inline int seer_aborted_any(const seer_runtime *rt)
{
    /* relaxed: see seer_propagate_error_local */
    return atomic_load_explicit(&rt->call.abort_code, memory_order_relaxed) != 0;
}

/* ---- pool.c: the worker pool and its phase machine -------------------------- */

/* Start a pool of `threads` workers (the host is worker 0).  All or nothing. */
int seer_pool_start(seer_runtime *rt, uint32_t threads);
/* seer_pool_start after a stop, with `active` (<= threads) of the workers
 * taking part in calls: the pool's parked workers stay parked. */
int seer_pool_restart(seer_runtime *rt, uint32_t threads, uint32_t active);
/* Stop the pool and start it anew (host, between calls): `n` workers,
 * `active` of them taking part, on the partitions of a pool of `parts_for`
 * threads.  On failure the old pool and partitions come back (if even that
 * runs out of memory the runtime is broken, and says so). */
int seer_pool_remake(seer_runtime *rt, uint32_t n, uint32_t active, uint32_t parts_for);
/* Steps a runtime runs on partitions other than its pool size's (after a
 * switch parked workers or changed executor) before it is cut anew. */
#define SEER_SETTLE_STEPS 16u
/* At a step's start (host thread, between calls): once a runtime has run
 * SEER_SETTLE_STEPS steps on partitions other than those of a runtime
 * created with its executor and pool size, cut it into those.  A pool of 2
 * parked down to 1 kept its 2 partitions, stepped window by window by one
 * thread: PCS 64x64 ran 9% slower alone, 14% beside another env process,
 * than on the 1-thread runtime's one partition; cutting at every switch
 * cost STPA's probe visits 2.5 ms a switch (the events move twice, the
 * pool is made anew).  On failure (out of memory) nothing changed, or the
 * instances that lost their events say so. */
int seer_pool_settle_host(seer_runtime *rt);
/* In a child of fork(): forget the parent's workers and start this
 * process's own (returns SEER_E_NOMEM when that fails). */
int seer_pool_after_fork(seer_runtime *rt);
void seer_pool_forget_threads(seer_runtime *rt);
/* Join the workers and free what the pool holds (their free events go back
 * to the reserve). */
void seer_pool_stop(seer_runtime *rt);
/* Run `job` on the selected instances with the pool (the host takes part as
 * worker 0), a step's events phases from `events` (NULL for a reset); the
 * first error is copied to rt->err. */
int seer_pool_run(seer_runtime *rt, int job, const seer_events_phases *events);

/* Merge the events every thread sent to partition p of instance `inst` in
 * the previous phase (outbox bank `bank`) into its queue: on the thread
 * holding p for the phase. */
void seer_merge_outboxes(seer_worker *w, seer_inst *in, uint32_t inst, uint32_t p,
                         uint32_t bank);

#endif /* SEER_POOL_H */
