/*
 * parallel.h -- the worker pool and the parallel executor (parallel.c;
 * private), the call's abort code and the window minima the workers note.
 */
#ifndef SEER_PARALLEL_H
#define SEER_PARALLEL_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime.h"

/* ---- the call's abort code (parallel.c, optimistic.c) ---------------------- */

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

/* ---- window minima (parallel executor) ------------------------------------ */

/* Note that w saw time t pending for instance `inst` (its partition's
 * earliest time, or a cross-partition event it sent): the completer reduces
 * the workers' minima into the next window (parallel.c). */
static inline void seer_note_window_min_local(seer_worker *w, uint32_t inst, double t)
{
    if (t < w->local_min[inst])
        w->local_min[inst] = t;
}

/* ---- parallel.c: the worker pool and the parallel executor ----------------- */

/* Start a pool of `threads` workers (the host is worker 0).  All or nothing. */
int seer_pool_start(seer_runtime *rt, uint32_t threads);
/* seer_pool_start after a stop, with `active` (<= threads) of the workers
 * taking part in calls: the pool's parked workers stay parked. */
int seer_pool_restart(seer_runtime *rt, uint32_t threads, uint32_t active);
/* In a child of fork(): forget the parent's workers and start this
 * process's own (returns SEER_E_NOMEM when that fails). */
int seer_pool_after_fork(seer_runtime *rt);
void seer_pool_forget_threads(seer_runtime *rt);
/* Join the workers and free what the pool holds (their free events go back
 * to the reserve). */
void seer_pool_stop(seer_runtime *rt);
/* The parallel executor: run `job` on the selected instances with the pool
 * (the host takes part as worker 0); the first error is copied to rt->err. */
int seer_parallel_run(seer_runtime *rt, int job);

/* Merge the events every thread sent to partition p of instance `inst` in
 * the previous phase (outbox bank `bank`) into its queue: on the thread
 * holding p for the phase. */
void seer_merge_outboxes(seer_worker *w, seer_inst *in, uint32_t inst, uint32_t p,
                         uint32_t bank);

#endif /* SEER_PARALLEL_H */
