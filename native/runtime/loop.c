/*
 * loop.c -- the event loop, shared by every executor.
 *
 * seer_run_queue pops a queue's events in (time, key) order up to a bound
 * and calls the model's handler for each: the event loop of the serial and
 * the parallel executors, run on the thread of the worker it is given,
 * which owns the queue (the serial executor: the host, with the instance's
 * queue; the parallel executor: a worker, with a partition's queue for one
 * window).  seer_step_instance is a whole step of one instance on one
 * thread: act, the event loop to the boundary, the boundary phases (the
 * serial executor's step, and an item of the phase machine's whole-instance
 * mode, pool.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "base.h"
#include "check.h"
#include "ctx.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "loop.h"
#include "phases.h"
#include "process.h"
#include "runtime.h"
#include "squeue.h"
#include "trace.h"

/* ---- the event loop (both executors) ------------------------------------- */

/* Every 16 events of a thread: SIGINT since the call started, or more
 * events than its budget?  Then w's error is set (returns 1).  Out of line:
 * the event loop keeps its hot path small. */
__attribute__((cold, noinline)) static int call_should_stop_local(seer_worker *w, uint32_t inst,
                                                                  seer_time now, uint64_t n)
{
    seer_runtime *rt = w->rt;
    char t[32], b[32];
    if (seer_sigint_count() != rt->sigint_at_call) {
        seer_worker_error_local(w, SEER_E_INTERRUPTED,
                                "interrupted by SIGINT (Ctrl-C) in step %llu of instance %u at "
                                "simulated time t=%s: the call was abandoned",
                                (unsigned long long)rt->inst[inst].step, inst,
                                seer_fmt_double(t, now));
        return 1;
    }
    if (w->call_events + n > w->call_budget) {
        seer_worker_error_local(w, SEER_E_BUDGET,
                                "step %llu of instance %u handled more than %llu events (the "
                                "event budget of a step, max_step_events) and reached only t=%s "
                                "of its end at %s: the step duration may be too long for the "
                                "model's event rate; shorten the step or raise max_step_events",
                                (unsigned long long)rt->inst[inst].step, inst,
                                (unsigned long long)rt->max_step_events, seer_fmt_double(t, now),
                                seer_fmt_double(b, rt->inst[inst].boundary));
        return 1;
    }
    return 0;
}

uint64_t seer_run_queue(seer_worker *w, seer_ctx *c, uint32_t inst, seer_squeue *q,
                        seer_time bnd)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    const seer_model *m = rt->model;
    const int tracing = SEER_TRACING_EVENTS(w);
    c->inst = in;
    c->inst_idx = inst;
    uint64_t n = 0;
    int qerr = 0;
    /* windows on several partitions: the record of an event between two
     * of them goes back to the thread's cross list (events.c) */
    const uint32_t *of =
        rt->executor != SEER_EXECUTOR_SERIAL && rt->part.n > 1 ? rt->part.of : NULL;
    seer_event *ev;
    while (!w->err && (ev = seer_squeue_pop_before_owner(q, bnd, &qerr)) != NULL) {
        seer_ctx_enter_entity(c, ev->target);
        c->now = ev->time;
        c->cur_type = ev->type;
        uint64_t t0 = tracing ? seer_clock_ns() : 0;
        void *st = seer_inst_state(rt, in, ev->target);
        int rc = SEER_CHECKING(rt)
                     ? seer_check_run(c, SEER_HOOK_HANDLE,
                                      &(seer_hook_args){.entity = st, .cptr = ev->payload,
                                                        .type = ev->type, .size = ev->size})
                     : m->handle(c, st, ev->type, ev->payload, ev->size);
        if (tracing)
            seer_trace_add_local(w, SEER_TRACE_EVENT, t0, seer_clock_ns(), c->now, inst,
                                 c->self, c->cur_type, 1);
        c->rec->events++;
        n++;
        if (of && of[ev->target] != of[ev->key >> SEER_KEY_SEQ_BITS])
            seer_event_free_cross_local(w, ev);
        else
            seer_event_free_local(w, ev);
        if (__builtin_expect(rc != 0 || w->err != 0, 0)) {
            seer_after_handler(c, rc, "event");
            break;
        }
        /* every 16 events of this thread (whatever entities they were for):
         * Ctrl-C reaches the user within 16 events per thread */
        if (__builtin_expect((++w->stop_tick & 15u) == 0, 0) &&
            call_should_stop_local(w, inst, c->now, n))
            break;
    }
    w->call_events += n;
    if (__builtin_expect(qerr != 0, 0) && !w->err)
        seer_worker_error_local(w, qerr, "out of memory for an event queue (model '%s')",
                                m->name);
    return n;
}

void seer_boundary_phases(seer_runtime *rt, seer_worker *w, uint32_t i)
{
    seer_boundary_instance(w, i);
    for (uint32_t a = 0; a < rt->sz.num_agents; a++)
        seer_observe_agent(w, i, a);
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        seer_publish_entity(w, i, e);
    seer_finish_instance(rt, i);
}

uint64_t seer_step_instance(seer_worker *w, seer_ctx *c, uint32_t inst, seer_squeue *q,
                            int spans, int act)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    const int tracing = spans && SEER_TRACING(w);
    uint64_t t0 = tracing ? seer_clock_ns() : 0;
    for (uint32_t a = 0; act && a < rt->sz.num_agents && !w->err; a++)
        seer_act_agent(w, inst, a);
    if (w->err)
        return 0;
    if (tracing && act)
        seer_trace_add_local(w, SEER_TRACE_ACT, t0, seer_clock_ns(),
                             (double)in->step * rt->sz.step_duration, inst, 0, 0, 0);
    const uint64_t n = seer_run_queue(w, c, inst, q, in->boundary);
    if (w->err)
        return n;
    t0 = tracing ? seer_clock_ns() : 0;
    seer_boundary_phases(rt, w, inst);
    if (tracing)
        seer_trace_add_local(w, SEER_TRACE_BOUNDARY, t0, seer_clock_ns(), in->boundary, inst,
                             0, 0, 0);
    return n;
}
