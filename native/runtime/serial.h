/*
 * serial.h -- the event loop and the serial executor (serial.c; private).
 */
#ifndef SEER_SERIAL_H
#define SEER_SERIAL_H

#include <stdint.h>

#include "runtime.h"

/* ---- serial.c: the event loop and the serial executor ---------------------- */

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
 * Stops at the first error (w->err); returns the events handled. */
uint64_t seer_step_instance(seer_worker *w, seer_ctx *c, uint32_t inst, seer_squeue *q,
                            int spans);
/* The rest of a step of instance i on the serial executor whose act phase
 * already ran: its events (in in->queue) and its boundary phases; `done`
 * events of the step ran before (they count towards its budget). */
int seer_serial_step_events(seer_runtime *rt, uint32_t i, uint64_t done);
/* The serial executor (host, as worker 0): run `job` (JOB_RESET, JOB_STEP)
 * on the selected instances, one after the other; the first error stops it
 * and is copied to rt->err. */
int seer_serial_run(seer_runtime *rt, int job);
/* One step of instance i on the serial executor (its events in in->queue). */
int seer_serial_step(seer_runtime *rt, uint32_t i);

#endif /* SEER_SERIAL_H */
