/*
 * optimistic_phases.c -- the optimistic executor between its speculation
 * phases (Time Warp inside a phase is optimistic.c): where each phase ends
 * (the horizons, adapted to about rt->opt.phase_events events per slot),
 * the commit of a phase and the instances abandoned in it (undone to the
 * end of the phase before, to run the rest of their step serially), and
 * the speculation phases as the events phases of the pool's phase machine
 * (seer_events_phases, pool.h; seer_opt_run).
 *
 * Threads: the *_completer functions run on the worker that completed a
 * phase, while no other thread touches the call's state; seer_opt_run,
 * seer_opt_take_abandoned and seer_opt_drop on the host, between calls.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "base.h"
#include "ctx.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "optimistic.h"
#include "optimistic_state.h"
#include "pool.h"
#include "process.h"
#include "runtime.h"
#include "spsc_ring.h"
#include "squeue.h"
#include "sync.h"
#include "trace.h"
#include "vec.h"

/* A pending event's filter: drop (and free into w's list) the cancelled. */
static int keep_uncancelled(void *arg, seer_event *ev)
{
    if (ev->flags & SEER_EV_CANCEL) {
        seer_event_free_local(arg, ev);
        return 0;
    }
    return 1;
}

/* ---- phases: where each one ends ------------------------------------------------ */

/* The horizon of instance `in`'s next phase, its earliest pending time
 * being t: t + the instance's phase width, at most the boundary.  Any
 * horizon gives the serial executor's handlings -- every event below it
 * is handled before any at or above it, as in the serial order, and the
 * handlers never see it -- so the width only trades the phases' fixed cost
 * against the log's size. */
/* Instance `in`'s phase width (before its first phase: D / OPT_FIRST_PHASES). */
static double phase_width(const seer_runtime *rt, const seer_inst *in)
{
    return in->opt_width > 0.0 ? in->opt_width : rt->sz.step_duration / OPT_FIRST_PHASES;
}

static void set_horizon_completer(const seer_runtime *rt, seer_inst *in, seer_time t)
{
    const seer_time end = t + phase_width(rt, in);
    in->spec_from = t;
    in->spec_end = end > t && end < in->boundary ? end : in->boundary;
}

/* After a phase that handled `events` of instance `in` between its start
 * and its horizon: the width that would have handled rt->opt.phase_events
 * per slot at the same rate, changed by at most a factor OPT_WIDTH_STEP. */
static void adapt_width_completer(const seer_runtime *rt, seer_inst *in, uint64_t events)
{
    const double D = rt->sz.step_duration;
    const double was = phase_width(rt, in);
    const double target = (double)rt->opt.phase_events * seer_opt_slots(rt);
    double width = was * OPT_WIDTH_STEP;
    if (events)
        width = (in->spec_end - in->spec_from) * target / (double)events;
    if (width > was * OPT_WIDTH_STEP)
        width = was * OPT_WIDTH_STEP;
    if (width < was / OPT_WIDTH_STEP)
        width = was / OPT_WIDTH_STEP;
    if (width > D * OPT_WIDTH_STEP)
        width = D * OPT_WIDTH_STEP;
    if (width < D * OPT_WIDTH_MIN)
        width = D * OPT_WIDTH_MIN;
    in->opt_width = width;
}

/* Instance i's handlings kept in the phase that ended, summed over the
 * workers' counts (reset for the next phase). */
static uint64_t take_events_completer(seer_runtime *rt, uint32_t i)
{
    uint64_t events = 0;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        seer_opt_worker *o = rt->pool.workers[t].opt;
        if (o) {
            events += (uint64_t)o->net[i];
            o->net[i] = 0;
            o->gross[i] = 0;
        }
    }
    return events;
}

/* Each selected instance's earliest pending time, as the workers noted it
 * (their local minima, reset for the next phase). */
static seer_time reduce_min_completer(seer_runtime *rt, uint32_t i)
{
    seer_time t = __builtin_inf();
    for (uint32_t p = 0; p < rt->pool.nthreads; p++) {
        double *m = &rt->pool.workers[p].local_min[i];
        if (*m < t)
            t = *m;
        *m = __builtin_inf();
    }
    return t;
}

/* A new epoch for the next phase's events; after 2^30 of them, every
 * pending event's epoch is cleared first (no worker runs: the completer
 * owns every queue). */
static int clear_epoch(void *arg, seer_event *ev)
{
    (void)arg;
    ev->flags &= (1u << SEER_EV_EPOCH_SHIFT) - 1u;
    return 1;
}

void seer_opt_next_epoch_quiescent(seer_runtime *rt)
{
    if (rt->opt.epoch == OPT_EPOCH_MAX) {
        for (uint32_t i = 0; i < rt->B; i++)
            for (uint32_t p = 0; p < rt->part.n && rt->inst[i].parts; p++)
                seer_squeue_filter_owner(&rt->inst[i].parts[p], clear_epoch, NULL);
        rt->opt.epoch = 0;
    }
    rt->opt.epoch++;
}

void seer_opt_begin_completer(seer_runtime *rt)
{
    rt->opt.phase = 0;
    seer_time first = __builtin_inf();
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        const uint32_t i = rt->call.sel[k];
        seer_inst *in = &rt->inst[i];
        in->opt_done = 0;
        const seer_time t = reduce_min_completer(rt, i);
        set_horizon_completer(rt, in, t);
        if (t < first)
            first = t;
    }
    rt->call.window_t = first;
}

/* ---- an abandoned speculation: undone after its phase ------------------------------ */

static int keep_unspeculated(void *arg, seer_event *ev)
{
    seer_worker *w = arg;
    /* this phase's events, and the cancelled ones of earlier phases */
    if (ev_spec(w->rt, ev) || (ev->flags & SEER_EV_CANCEL)) {
        seer_event_free_local(w, ev);
        return 0;
    }
    return 1;
}

/* Instance i's speculation in the phase that just ended is undone: the
 * events it scheduled go, the events it handled are pending again, every
 * entity is as when the phase opened (the phases before it are committed).
 * The completer (worker w: the events go to its free list), between
 * phases.  Out of memory re-queueing an event fails the call. */
static void undo_completer(seer_runtime *rt, seer_worker *w, uint32_t i)
{
    seer_inst *in = &rt->inst[i];
    for (uint32_t p = 0; p < rt->part.n; p++) {
        seer_squeue_filter_owner(&in->parts[p], keep_unspeculated, w);
        rt->opt.shared->ncancelled[(size_t)i * rt->part.n + p] = 0;
    }
    for (uint32_t e = 0; e < rt->sz.num_entities; e++) {
        seer_opt_rec *r = in->opt_log[e], *oldest = NULL;
        for (; r; oldest = r, r = r->prev) {
            seer_event *ev = r->ev;
            r->ev = NULL;
            if (ev_spec(rt, ev)) {
                seer_event_free_local(w, ev);
                continue;
            }
            ev->flags &= ~(uint32_t)(SEER_EV_HANDLED | SEER_EV_CANCEL);
            if (seer_squeue_push_owner(&in->parts[rt->part.of[e]], ev) != SEER_OK) {
                seer_event_free_local(w, ev);
                if (!w->err)
                    seer_worker_error_local(w, SEER_E_NOMEM,
                                            "out of memory undoing instance %u's speculation",
                                            i);
            }
        }
        if (oldest) {
            memcpy(seer_inst_state(rt, in, e), oldest->state, rt->sz.entity_size);
            in->recs[e] = oldest->rec;
        }
        in->opt_log[e] = NULL;
    }
    if (w->err)
        seer_propagate_error_local(w);
}

/* The step's events are done: the cancelled events still pending (at or
 * past the boundary) go (into w's free list). */
static void drop_cancelled_completer(seer_runtime *rt, seer_worker *w)
{
    uint32_t *nc = rt->opt.shared->ncancelled;
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        const uint32_t i = rt->call.sel[k];
        for (uint32_t p = 0; p < rt->part.n; p++)
            if (nc[(size_t)i * rt->part.n + p]) {
                seer_squeue_filter_owner(&rt->inst[i].parts[p], keep_uncancelled, w);
                nc[(size_t)i * rt->part.n + p] = 0;
            }
    }
}

int seer_opt_finish_completer(seer_runtime *rt, seer_worker *w, int was_aborted)
{
    struct seer_opt_shared *sh = rt->opt.shared;
    uint64_t peak = 0;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        seer_opt_worker *o = rt->pool.workers[t].opt;
        if (!o)
            continue;
        rt->opt.rollbacks += o->rollbacks;
        rt->opt.rolled_back += o->undone;
        rt->opt.anti += o->anti;
        o->rollbacks = o->undone = o->anti = 0;
        peak += o->recs.used + o->sends.used;
    }
    if (peak > rt->opt.log_peak)
        rt->opt.log_peak = peak;
    /* the abandoned instances are undone now: the next phase reuses the
     * arenas their logs are in */
    for (uint32_t k = 0; k < rt->call.nsel && !was_aborted && !seer_aborted_any(rt); k++)
        if (inst_abandoned(&rt->inst[rt->call.sel[k]]))
            undo_completer(rt, w, rt->call.sel[k]);
    if (was_aborted || seer_aborted_any(rt)) {
        /* every selected instance fails: free what speculation holds */
        seer_opt_drop_everything_completer(rt, w);
        rt->opt.abandoned = 0;
        return 0;
    }
    /* the abandoned instances to the end of the selection, before those of
     * earlier phases: the other phases and the boundary phases run the
     * others; the host steps them serially afterwards */
    uint32_t n = 0, nab = 0;
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        const uint32_t i = rt->call.sel[k];
        if (inst_abandoned(&rt->inst[i]))
            sh->scratch[nab++] = i;
        else
            rt->call.sel[n++] = i;
    }
    memcpy(rt->call.sel + n, sh->scratch, nab * sizeof *rt->call.sel);
    rt->call.nsel = n;
    rt->opt.abandoned += nab;
    /* the phase's handlings are committed; the next phase's horizons */
    int more = 0;
    seer_time first = __builtin_inf();
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t i = rt->call.sel[k];
        seer_inst *in = &rt->inst[i];
        const uint64_t events = take_events_completer(rt, i);
        in->opt_done += events;
        if (in->spec_end < in->boundary || events)
            adapt_width_completer(rt, in, events);
        const seer_time t = reduce_min_completer(rt, i);
        if (t < in->boundary) {
            set_horizon_completer(rt, in, t);
            more = 1;
            if (t < first)
                first = t;
        }
    }
    /* the abandoned instances' counts and minima go too (undone) */
    for (uint32_t k = n; k < n + nab; k++) {
        (void)take_events_completer(rt, rt->call.sel[k]);
        (void)reduce_min_completer(rt, rt->call.sel[k]);
    }
    if (!more) {
        drop_cancelled_completer(rt, w);
        return 0;
    }
    rt->opt.phase++;
    rt->call.window_t = first;
    seer_opt_next_epoch_quiescent(rt);
    return 1;
}

uint64_t seer_opt_take_abandoned(seer_runtime *rt, uint32_t i)
{
    seer_inst *in = &rt->inst[i];
    /* relaxed: the host, between the phases that read it */
    atomic_store_explicit(&in->opt_abandon, 0, memory_order_relaxed);
    rt->opt.serial_steps++;
    /* undone after its phase (undo_completer): the rest of the step, from
     * the last committed phase on */
    return in->opt_done;
}

void seer_opt_drop(seer_runtime *rt, uint32_t i)
{
    seer_inst *in = &rt->inst[i];
    seer_worker *w = &rt->pool.workers[0];
    /* an event is in a queue (freed with the failed instance's queues) or
     * held by exactly one record of a log: the handled ones */
    for (uint32_t e = 0; e < rt->sz.num_entities; e++) {
        for (seer_opt_rec *r = in->opt_log[e]; r; r = r->prev) {
            seer_event_free_local(w, r->ev);
            r->ev = NULL;
        }
        in->opt_log[e] = NULL;
    }
    /* relaxed: the host, between the phases that read it */
    atomic_store_explicit(&in->opt_abandon, 0, memory_order_relaxed);
}

/* ---- the phase machine's events phases (pool.h) ---------------------------- */

/* The completer, after the act phase: the first speculation phase, or FLUSH
 * after an error in act (it empties the outboxes and the call ends). */
static uint32_t spec_after_act_completer(seer_runtime *rt, seer_worker *w)
{
    (void)w;
    seer_opt_begin_completer(rt);
    if (seer_aborted_any(rt))
        return PH_FLUSH;
    rt->stats.windows++;
    seer_opt_open_completer(rt);
    return PH_EVENTS;
}

/* The bounds of rt->opt.gather_ns: how long the holder of a speculation
 * phase's first slot waits for the other workers to claim theirs before it
 * takes them all.  A worker that spins for the phase claims within a
 * microsecond of its opening; one woken for the call (parked between calls:
 * envs stepped in turn, a training loop) in tens of microseconds, and one
 * that is off its core (a CPU burner) perhaps not for milliseconds. */
#define OPT_GATHER_MIN_NS 5000u
#define OPT_GATHER_MAX_NS 200000u

/* Items are slots, each held until the phase ends, and every slot must be
 * held for the phase to end: a worker that does not come (descheduled: a
 * CPU burner, torch's OpenMP workers, other processes) would hold up the
 * others for as long as it is off its core.  So a worker that finds, a few
 * microseconds after its claim (rt->opt.gather_ns: twice the latest wait for
 * them that ended with their claims, halved by each phase they missed), that
 * nobody else claimed a slot of the phase takes every slot and runs their
 * partitions as one slot: the events in time order, each delivered locally
 * (a rollback only for ties across partitions), no message, no wait for
 * anyone.  Classic PCS 32x32 on 2 threads beside a CPU burner at full duty
 * ran 0.51-0.54x the serial executor without it (every phase waited for the
 * descheduled worker), 0.60-0.68x with it.  A worker that claims after
 * another finds the phase's other slots claimed and runs its own as before.
 * Not in checking mode (its passes run the slots as they are). */
static void spec_run_local(seer_worker *w, seer_ctx *c, uint32_t b, uint32_t e, uint32_t bank)
{
    seer_runtime *rt = w->rt;
    seer_phases *ph = &rt->pool.ph;
    const uint32_t slots = seer_opt_slots(rt);
    if (e == b + 1 && slots > 1 && !rt->check.mode) {
        /* relaxed: we hold a chunk of the current phase, which cannot end
         * under us: the ticket's sequence is ours */
        const uint64_t seq = atomic_load_explicit(&ph->ticket, memory_order_relaxed) >> 32;
        /* relaxed: a hint (any holder may adapt it) */
        const uint32_t grace = atomic_load_explicit(&rt->opt.gather_ns, memory_order_relaxed);
        const uint64_t t0 = seer_phase_clock_ns();
        uint64_t waited = 0;
        while (!seer_phases_others_claimed_holder(ph, seq) &&
               (waited = seer_phase_clock_ns() - t0) < grace)
            seer_cpu_relax();
        const uint32_t rest = seer_phases_claim_rest_holder(ph, seq);
        if (waited > OPT_GATHER_MIN_NS / 2) {
            /* they came after a wait (at most twice that next time), or
             * not at all (half as long) */
            uint64_t next = rest ? grace / 2 : 2 * waited;
            if (!rest && next < grace)
                next = grace;
            next = next < OPT_GATHER_MIN_NS ? OPT_GATHER_MIN_NS
                   : next > OPT_GATHER_MAX_NS ? OPT_GATHER_MAX_NS
                                              : next;
            atomic_store_explicit(&rt->opt.gather_ns, (uint32_t)next, memory_order_relaxed);
        }
        if (rest) {
            seer_opt_run_slot(w, c, 0, slots, bank);
            /* (the one holder of the phase's items writes it; the completer
             * reads it after the phase) */
            rt->stats.alone_windows++;
            /* the other slots' chunks: ours (completed by the caller) ends
             * the phase */
            for (uint32_t k = 0; k < rest; k++)
                (void)seer_phases_complete_any(ph);
            return;
        }
    }
    /* one slot, or (a call capped to its caller: one chunk, see
     * items_wait in pool.h) every slot, run as one */
    seer_opt_run_slot(w, c, b, e, bank);
    if (e - b == slots && slots > 1)
        rt->stats.alone_windows++; /* (the one holder of the phase's items) */
}

/* The completer, after a speculation phase: committed; the abandoned
 * instances leave the selection (the host steps them serially after the
 * call); another phase up to the next horizons, or the boundary; after an
 * abort the call ends. */
static uint32_t spec_after_phase_completer(seer_runtime *rt, seer_worker *w)
{
    if (seer_opt_finish_completer(rt, w, seer_aborted_any(rt))) {
        rt->stats.windows++;
        seer_opt_open_completer(rt);
        return PH_EVENTS;
    }
    return seer_aborted_any(rt) || rt->call.nsel == 0 ? PH_DONE : seer_first_boundary_phase(rt);
}

static const seer_events_phases speculation = {
    .after_act_completer = spec_after_act_completer,
    .items = seer_opt_slots,
    .run_local = spec_run_local,
    .after_events_completer = spec_after_phase_completer,
    .items_wait = 1,
};

int seer_opt_run(seer_runtime *rt) { return seer_pool_run(rt, JOB_STEP, &speculation); }
