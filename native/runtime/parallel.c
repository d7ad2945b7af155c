/*
 * parallel.c -- the parallel executor: conservative windows on the worker
 * pool's phase machine (pool.c), whose act, flush, boundary and
 * whole-instance phases it shares with the optimistic executor.
 *
 *   step:  ACT      (pool.c) every partition: its agents act at k*D; report
 *                   the partition's earliest pending time
 *          WINDOW*  while some instance has T < boundary: every partition
 *                   merges the events sent to it in the previous phase, then
 *                   (if its instance runs) handles, in (time, key) order, its
 *                   events with time < W = min(T + L, boundary); reports its
 *                   earliest time
 *          FLUSH    (pool.c) every partition merges the last window's events
 *          then the boundary phases (pool.c)
 *
 * Why a window is safe: every event left has time >= T; an event handled in
 * [T, W) can only create cross-entity events at >= T + L >= W, so no entity
 * can receive, during the window, an event it would have to handle in it.
 * Each entity therefore handles exactly the events the serial executor hands
 * it, in the same (time, key) order, and reads only frozen data besides its
 * own state: outputs are bit-identical to the serial executor's.
 *
 * How T is known exactly without a serial scan: every visit reports its
 * partition's earliest queued time, and every cross-partition event reports
 * its time in the sending thread's local minimum; the phase's completer
 * reduces the per-worker minima.
 *
 * The windows are the phase machine's events phases (seer_events_phases):
 * the *_completer functions run on whichever worker completed a phase, the
 * window items on any worker, for the chunks it claimed.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "base.h"
#include "errors.h"
#include "loop.h"
#include "parallel.h"
#include "pool.h"
#include "runtime.h"
#include "squeue.h"
#include "trace.h"

/* Instance `in`'s next window from its earliest pending time t: it runs
 * when t is before its boundary, up to W = min(t + L, boundary).  By the
 * owner of the instance's state between windows: the completer's reduction,
 * or a thread that holds every partition (run_windows_alone_holder). */
static int open_window_owner(const seer_runtime *rt, seer_inst *in, double t)
{
    in->running = t < in->boundary;
    const double w_end = t + rt->sz.lookahead;
    in->w_end = w_end < in->boundary ? w_end : in->boundary;
    return in->running;
}

/* After the act phase or a window: reduce the minima into the next window. */
static void reduce_windows_completer(seer_runtime *rt)
{
    int any = 0;
    double first = __builtin_inf();
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        uint32_t i = rt->call.sel[k];
        seer_inst *in = &rt->inst[i];
        double t = __builtin_inf();
        for (uint32_t p = 0; p < rt->pool.nthreads; p++) {
            double *m = &rt->pool.workers[p].local_min[i];
            if (*m < t)
                t = *m;
            *m = __builtin_inf();
        }
        if (open_window_owner(rt, in, t)) {
            any = 1;
            if (t < first)
                first = t;
        }
    }
    rt->call.window_t = first;
    uint64_t events = 0;
    for (uint32_t p = 0; p < rt->pool.nthreads; p++)
        events += rt->pool.workers[p].call_events;
    if (events > rt->max_step_events * (uint64_t)rt->call.nsel && !seer_aborted_any(rt)) {
        char t[32];
        seer_worker *w0 = &rt->pool.workers[0];
        /* the completer owns the call's shared state (no thread holds a
         * chunk, so none writes its error slot); worker 0's slot is read
         * with the others' after DONE */
        seer_worker_error_local(w0, SEER_E_BUDGET,
                                "step %llu of %u instance(s) handled more than %llu events per "
                                "instance (the event budget of a step, max_step_events) by "
                                "simulated time t=%s: the step duration may be too long for the "
                                "model's event rate; shorten the step or raise max_step_events",
                                (unsigned long long)rt->inst[rt->call.sel[0]].step, rt->call.nsel,
                                (unsigned long long)rt->max_step_events,
                                seer_fmt_double(t, first));
        seer_propagate_error_local(w0);
    }
    if (seer_aborted_any(rt))
        any = 0;
    rt->call.any_running = any;
    if (any)
        rt->stats.windows++;
}

/* The completer, after the act phase or a window: the next window, or
 * FLUSH when no instance has events before its boundary. */
static uint32_t next_window_completer(seer_runtime *rt, seer_worker *w)
{
    (void)w;
    reduce_windows_completer(rt);
    return rt->call.any_running ? PH_EVENTS : PH_FLUSH;
}

static uint32_t window_items(const seer_runtime *rt) { return rt->call.nsel * rt->part.n; }

/* Partitions [b, e) of the flattened (selected instance, partition) space:
 * merge what was sent to each, handle its events before the window's end,
 * report its earliest time. */
static void run_windows_local(seer_worker *w, seer_ctx *c, uint32_t b, uint32_t e,
                              uint32_t bank)
{
    seer_runtime *rt = w->rt;
    for (uint32_t x = b; x < e; x++) {
        uint32_t k, item;
        seer_phase_item(rt, x, rt->part.n, &k, &item);
        const uint32_t inst = rt->call.sel[k];
        seer_inst *in = &rt->inst[inst];
        seer_merge_outboxes(w, in, inst, item, bank);
        if (in->running)
            w->events += seer_run_queue(w, c, inst, &in->parts[item], in->w_end);
        seer_note_window_min_local(w, inst, seer_squeue_min_time_owner(&in->parts[item]));
    }
}

/* The earliest time pending in any partition of instance `inst`. */
static double instance_min_holder(const seer_runtime *rt, const seer_inst *in)
{
    double t = __builtin_inf();
    for (uint32_t p = 0; p < rt->part.n; p++) {
        const double m = seer_squeue_min_time_owner(&in->parts[p]);
        if (m < t)
            t = m;
    }
    return t;
}

/* Worker w holds every partition of the window phase it has just run (nobody
 * else claimed one): the following windows, alone, without the phases'
 * hand-overs, until no selected instance has events before its boundary or
 * another worker arrives.  The windows are the ones the phases would run,
 * round by round: each running instance handles, partition after partition,
 * its events before W = min(T + L, boundary), T its earliest pending time,
 * so every entity handles the events it would, in the same order (the
 * module comment's argument holds for one thread as for many), and the
 * rounds counted are the phases' (`windows` does not depend on who ran
 * them).  An event for another partition goes straight into its queue
 * (c->solo: at >= T + L >= W it is not due in this window), after the
 * outboxes this phase filled were merged.  An arrival ends the run after
 * the round: the queues then hold what is left, and w's minima say where
 * each instance is, for the completer's reduction (the next window, or the
 * flush).
 *
 * Why: on a loaded machine (a CPU burner, torch's OpenMP workers spinning
 * after each op, a container's quota) a pool's other threads often do not
 * get a core during a step, and the caller ran every window's phases
 * alone: PCS 64x64 on 2 threads so ran 18% slower than the serial executor,
 * the phases' hand-overs and the outboxes paid by one thread. */
static void run_windows_alone_holder(seer_worker *w, seer_ctx *c, uint32_t arrivals0)
{
    seer_runtime *rt = w->rt;
    const uint32_t bank = rt->call.out_parity; /* this phase's outboxes */
    for (uint32_t k = 0; k < rt->call.nsel; k++)
        for (uint32_t p = 0; p < rt->part.n; p++)
            seer_merge_outboxes(w, &rt->inst[rt->call.sel[k]], rt->call.sel[k], p, bank);
    c->solo = 1;
    while (!w->err) {
        int any = 0;
        double first = __builtin_inf();
        for (uint32_t k = 0; k < rt->call.nsel; k++) {
            seer_inst *in = &rt->inst[rt->call.sel[k]];
            const double t = instance_min_holder(rt, in);
            if (open_window_owner(rt, in, t)) {
                any = 1;
                if (t < first)
                    first = t;
            }
        }
        if (!any)
            break;
        const uint64_t t0 = SEER_TRACING(w) ? seer_clock_ns() : 0, ev0 = w->events;
        for (uint32_t k = 0; k < rt->call.nsel && !w->err; k++) {
            const uint32_t inst = rt->call.sel[k];
            seer_inst *in = &rt->inst[inst];
            for (uint32_t p = 0; in->running && p < rt->part.n && !w->err; p++)
                w->events += seer_run_queue(w, c, inst, &in->parts[p], in->w_end);
        }
        if (SEER_TRACING(w)) /* a window span, as the phases' are (pool.c) */
            seer_trace_add_local(w, SEER_TRACE_WINDOW, t0, seer_clock_ns(), first, 0, 0, 0,
                                 (uint32_t)(w->events - ev0));
        rt->stats.windows++;
        rt->stats.alone_windows++;
        /* relaxed: a hint (sync.h) */
        if (atomic_load_explicit(&rt->pool.ph.arrivals, memory_order_relaxed) != arrivals0)
            break;
    }
    c->solo = 0;
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        const uint32_t inst = rt->call.sel[k];
        w->local_min[inst] = __builtin_inf();
        seer_note_window_min_local(w, inst, instance_min_holder(rt, &rt->inst[inst]));
    }
}

static const seer_events_phases windows = {
    .after_act_completer = next_window_completer,
    .items = window_items,
    .run_local = run_windows_local,
    .after_events_completer = next_window_completer,
    .run_alone_holder = run_windows_alone_holder,
};

int seer_parallel_run(seer_runtime *rt, int job)
{
    return seer_pool_run(rt, job, job == JOB_RESET ? NULL : &windows);
}
