/*
 * serial.h -- the serial executor (serial.c; private).
 */
#ifndef SEER_SERIAL_H
#define SEER_SERIAL_H

#include <stdint.h>

#include "runtime.h"

/* ---- serial.c: the serial executor ------------------------------------------ */

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
/* Instance i's step on the serial executor, its events moved to the serial
 * queue and back: the serial fallback of a parallel step (act = 1: the
 * whole step), or the rest of an optimistic step whose speculation was
 * abandoned (act = 0: its act phase ran, and `done` events of the step were
 * handled and committed before: they count towards the step's budget). */
int seer_step_serially(seer_runtime *rt, uint32_t i, int act, uint64_t done);

#endif /* SEER_SERIAL_H */
