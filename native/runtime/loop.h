/*
 * loop.h -- the event loop (loop.c; private): shared by every executor.
 */
#ifndef SEER_LOOP_H
#define SEER_LOOP_H

#include <stdint.h>

#include "runtime.h"

/* ---- loop.c: the event loop ------------------------------------------------- */

/* Handle q's events with time < bnd in (time, key) order (the event loop of
 * both executors), on w's thread, which owns q; stops at the first error
 * (w->err).  Returns the events handled. */
uint64_t seer_run_queue(seer_worker *w, seer_ctx *c, uint32_t inst, seer_squeue *q,
                        seer_time bnd);
/* A whole step of one instance on w's thread: its agents act, the events
 * before its boundary are handled (q holds all of them), then its boundary
 * phases.  The serial executor's step, and an item of the parallel
 * executor's whole-instance mode.  `spans`: record the act and boundary
 * trace spans (the parallel executor records one span around the item).
 * act = 0: from after its act phase (the rest of a step whose act phase
 * ran).  Stops at the first error (w->err); returns the events handled. */
uint64_t seer_step_instance(seer_worker *w, seer_ctx *c, uint32_t inst, seer_squeue *q,
                            int spans, int act);
/* The boundary phases of instance i on w's thread (boundary hook, observe,
 * publish, the step counted). */
void seer_boundary_phases(seer_runtime *rt, seer_worker *w, uint32_t i);

#endif /* SEER_LOOP_H */
