/*
 * parallel.h -- the parallel executor (parallel.c; private): conservative
 * windows on the worker pool (pool.h).
 */
#ifndef SEER_PARALLEL_H
#define SEER_PARALLEL_H

#include "runtime.h"

/* ---- parallel.c: the parallel executor ------------------------------------- */

/* The parallel executor: run `job` on the selected instances with the pool
 * (the host takes part as worker 0); a step's events are handled in
 * conservative windows; the first error is copied to rt->err.  Also the
 * reset of the optimistic executor, and its steps that do not speculate
 * (seer_opt_speculates). */
int seer_parallel_run(seer_runtime *rt, int job);

#endif /* SEER_PARALLEL_H */
