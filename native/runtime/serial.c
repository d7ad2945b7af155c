/*
 * serial.c -- the serial executor, built on the event loop (loop.c).
 *
 * The serial executor -- the reference the parallel one must match bit for
 * bit -- runs a call on the host thread as worker 0: the selected instances
 * one after the other, each with one queue holding all its pending events
 * (seer_serial_run, called by seer_runtime_reset/step in runtime.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "check.h"
#include "ctx.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "loop.h"
#include "partition.h"
#include "phases.h"
#include "process.h"
#include "runtime.h"
#include "serial.h"
#include "squeue.h"
#include "trace.h"

/* ---- the serial executor -------------------------------------------------- */

/* The call failed: w's error becomes the runtime's. */
static int serial_fail(seer_runtime *rt, seer_worker *w)
{
    int code = w->err;
    memcpy(rt->err, w->msg, sizeof rt->err);
    w->err = 0;
    return code;
}

/* Reset instance i: clear and reseed its entities, init, boundary. */
static int serial_reset(seer_runtime *rt, uint32_t i)
{
    seer_worker *w = &rt->pool.workers[0];
    w->call_events = 0;
    w->call_budget = UINT64_MAX;
    seer_inst *in = &rt->inst[i];
    if (SEER_CHECKING(rt))
        seer_check_disarm(rt); /* the runtime clears states and records below */
    seer_event_free_all_local(w, &in->queue);
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        seer_clear_entity(w, in, e, in->seed);
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        if (seer_init_entity(w, i, e))
            return serial_fail(rt, w);
    seer_boundary_phases(rt, w, i);
    return w->err ? serial_fail(rt, w) : SEER_OK;
}

static int serial_step(seer_runtime *rt, uint32_t i, int act, uint64_t done)
{
    seer_worker *w = &rt->pool.workers[0];
    w->call_events = done; /* the step's budget counts what ran before */
    w->call_budget = rt->max_step_events;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, i, PHASE_EVENT);
    rt->stats.events += seer_step_instance(w, &c, i, &rt->inst[i].queue, 1, act);
    return w->err ? serial_fail(rt, w) : SEER_OK;
}

int seer_serial_step(seer_runtime *rt, uint32_t i) { return serial_step(rt, i, 1, 0); }

int seer_serial_step_events(seer_runtime *rt, uint32_t i, uint64_t done)
{
    return serial_step(rt, i, 0, done);
}

int seer_serial_run(seer_runtime *rt, int job)
{
    int rc = SEER_OK;
    if (SEER_CHECKING(rt))
        seer_check_begin_call(rt);
    for (uint32_t k = 0; k < rt->call.nsel && rc == SEER_OK; k++)
        rc = job == JOB_RESET ? serial_reset(rt, rt->call.sel[k])
                              : seer_serial_step(rt, rt->call.sel[k]);
    if (SEER_CHECKING(rt))
        seer_check_end_call(rt);
    return rc;
}

/* ---- a step on the serial executor inside a parallel call ------------------ */

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
    uint64_t *counts = malloc((size_t)(rt->part.n > 1 ? rt->part.n : 1) * SEER_MIG_NB *
                              sizeof *counts);
    if (!counts || seer_migrate_instance(rt, in, SEER_EXECUTOR_SERIAL, counts) != SEER_OK) {
        free(counts);
        seer_fail(rt, "out of memory moving instance %u's events for a serial step", i);
        return SEER_E_NOMEM;
    }
    const int executor = rt->executor;
    rt->executor = SEER_EXECUTOR_SERIAL;
    int rc = act ? seer_serial_step(rt, i) : seer_serial_step_events(rt, i, done);
    rt->executor = executor;
    if (seer_migrate_instance(rt, in, executor, counts) != SEER_OK && rc == SEER_OK) {
        seer_squeue_clear_owner(&in->queue); /* its records return with the pool's chunks */
        seer_fail(rt, "out of memory moving instance %u's events back after a serial step", i);
        rc = SEER_E_NOMEM;
    }
    free(counts);
    if (act)
        rt->stats.serial_fallbacks++;
    return rc;
}
