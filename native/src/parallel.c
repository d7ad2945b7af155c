/*
 * parallel.c -- the worker pool and the parallel executor.
 *
 * One call (reset or step of the selected instances) is one job.  The
 * calling thread publishes the job, wakes the pool and works as worker 0;
 * every worker runs the same sequence of phases separated by barriers:
 *
 *   step:  [act]      every entity: drain its inbox; agents act at k*D;
 *                     report the earliest pending time
 *          [window]*  while some instance has T < boundary:
 *                     every entity of a running instance drains its inbox and
 *                     handles its events with time < W = min(T + L, boundary);
 *                     reports its new earliest time
 *          [boundary] per instance hook, observe per agent, publish per entity
 *   reset: [clear] [init] [boundary]
 *
 * Why a window is safe: every event left has time >= T; an event handled in
 * [T, W) can only create cross-entity events at >= T + L >= W, so no entity
 * can receive, during the window, an event it would have to handle in it.
 * Each entity therefore handles exactly the events the serial executor hands
 * it, in the same (time, key) order, and reads only frozen data besides its
 * own state: outputs are bit-identical to the serial executor's.
 *
 * How T is known exactly without a serial scan: in every phase each entity is
 * visited once by some worker, which drains its inbox and reports its heap's
 * earliest time after handling; every cross-entity push reports its time in
 * the pushing worker's local minimum.  An event pushed into an inbox after the
 * owner was visited is thus counted by its pusher, and drained at the next
 * phase's visit.  The last worker to reach the barrier reduces the per-worker
 * minima (barrier callback) and sets the next windows.
 *
 * Per-entity work is claimed from an executive list (seer_worklist) with one
 * wait-free fetch_add per chunk, so idle workers take load from busy ones.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void seer_pool_balance(seer_worker *w, uint64_t lo, uint64_t hi);

#define WAKE_SPINS 4000u     /* pauses before a worker sleeps between jobs */
#define BARRIER_SPINS 2000u  /* pauses before a barrier waiter yields       */
#define POOL_LO 1024u      /* initial free events per worker at a call's start */
#define POOL_MAX (1u << 22) /* cap of the adaptive stock                        */

/* ---- phase plumbing ---------------------------------------------------------- */

static void wl_set(seer_runtime *rt, uint32_t count)
{
    uint32_t chunk = count / (rt->nthreads * 16u);
    if (chunk < 1)
        chunk = 1;
    if (chunk > 256)
        chunk = 256;
    seer_worklist_reset_quiescent(&rt->wl, count, chunk);
}

static void barrier(seer_worker *w, seer_barrier_fn fn)
{
    if (__builtin_expect(w->trace != NULL, 0)) {
        uint64_t t0 = seer_clock_ns();
        seer_barrier_wait(&w->rt->barrier, &w->sense, fn, w->rt);
        seer_trace_add(w, SEER_TRACE_BARRIER, t0, seer_clock_ns(), 0.0, 0, 0, 0, 0);
        return;
    }
    seer_barrier_wait(&w->rt->barrier, &w->sense, fn, w->rt);
}

/* The last barrier of a call: the caller returns (and the host may read the
 * trace) as soon as it passes, so a worker records its arrival before
 * waiting, as an instant (t0 == t1); only the caller's record has a length. */
static void cb_finish(void *arg);

static void final_barrier(seer_worker *w)
{
    if (__builtin_expect(w->trace != NULL, 0) && w->id != 0) {
        uint64_t t0 = seer_clock_ns();
        seer_trace_add(w, SEER_TRACE_BARRIER, t0, t0, 0.0, 0, 0, 0, 0);
        seer_barrier_wait(&w->rt->barrier, &w->sense, cb_finish, w->rt);
        return;
    }
    barrier(w, cb_finish);
}

/* Start/end of a traced phase on this worker (no-ops when tracing is off). */
static inline uint64_t phase_t0(const seer_worker *w)
{
    return w->trace ? seer_clock_ns() : 0;
}

static inline void phase_end(seer_worker *w, uint32_t kind, uint64_t t0, double sim,
                             uint64_t events_before)
{
    if (w->trace)
        seer_trace_add(w, kind, t0, seer_clock_ns(), sim, 0, 0, 0,
                       (uint32_t)(w->events - events_before));
}

static void note_error(seer_worker *w)
{
    if (w->err) {
        int expected = 0;
        /* relaxed: only the barrier callbacks read abort_code, after the
         * barrier's acquire/release ordering. */
        atomic_compare_exchange_strong_explicit(&w->rt->abort_code, &expected, w->err,
                                                memory_order_relaxed,
                                                memory_order_relaxed);
    }
}

static int aborted(seer_runtime *rt)
{
    /* relaxed: read in barrier callbacks, ordered by the barrier. */
    return atomic_load_explicit(&rt->abort_code, memory_order_relaxed) != 0;
}

/* Barrier callbacks: run by the last arriver while everybody waits. */
static void cb_entities(void *arg)
{
    seer_runtime *rt = arg;
    wl_set(rt, rt->nsel * rt->sz.num_entities);
}

static void cb_agents(void *arg)
{
    seer_runtime *rt = arg;
    wl_set(rt, rt->nsel * rt->sz.num_agents);
}

static void cb_instances(void *arg)
{
    seer_runtime *rt = arg;
    wl_set(rt, rt->nsel);
}

/* After the act phase or a window: reduce the minima into the next window. */
static void cb_window(void *arg)
{
    seer_runtime *rt = arg;
    int any = 0;
    for (uint32_t k = 0; k < rt->nsel; k++) {
        uint32_t i = rt->sel[k];
        seer_inst *in = &rt->inst[i];
        double t = __builtin_inf();
        for (uint32_t p = 0; p < rt->nthreads; p++) {
            double *m = &rt->workers[p].local_min[i];
            if (*m < t)
                t = *m;
            *m = __builtin_inf();
        }
        in->t_next = t;
        in->running = t < in->boundary;
        double w_end = t + rt->sz.lookahead;
        in->w_end = w_end < in->boundary ? w_end : in->boundary;
        any |= in->running;
    }
    if (aborted(rt))
        any = 0;
    rt->any_running = any;
    if (any)
        rt->windows_total++;
    wl_set(rt, rt->nsel * rt->sz.num_entities);
}

static void cb_finish(void *arg)
{
    seer_runtime *rt = arg;
    for (uint32_t k = 0; k < rt->nsel; k++)
        seer_finish_instance(rt, rt->sel[k]);
}

/* ---- per-entity work ------------------------------------------------------ */

static inline void drain_inbox(seer_worker *w, seer_entity_rec *r)
{
    seer_inbox_node *n = seer_inbox_drain_sc(&r->inbox);
    while (n) {
        seer_inbox_node *next = n->next;
        seer_event *ev = (seer_event *)(void *)n;
        if (seer_heap_push(&r->heap, ev) != SEER_OK) {
            /* Out of memory: drop the rest and fail the call. */
            if (!w->err) {
                w->err = SEER_E_NOMEM;
                strcpy(w->msg, "out of memory for an entity's event queue");
            }
            seer_event_free(w, ev);
        }
        n = next;
    }
}

static inline void report_min(seer_worker *w, uint32_t inst, const seer_entity_rec *r)
{
    double t = seer_heap_top_time(&r->heap);
    if (t < w->local_min[inst])
        w->local_min[inst] = t;
}

/* Handle one entity's events with time < its instance's window end. */
static void run_entity(seer_worker *w, seer_ctx *c, uint32_t inst, uint32_t e)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    seer_entity_rec *r = &in->recs[e];
    drain_inbox(w, r);
    const seer_time w_end = in->w_end;
    seer_heap *h = &r->heap;
    if (h->n && h->a[0].time < w_end && !w->err) {
        c->inst = in;
        c->inst_idx = inst;
        c->self = e;
        c->rec = r;
        void *state = in->states + (size_t)e * rt->entity_stride;
        const seer_model *m = rt->model;
        uint64_t n = 0;
        const int tracing = w->trace != NULL;
        while (h->n && h->a[0].time < w_end) {
            seer_event *ev = seer_heap_pop(h);
            c->now = ev->time;
            c->cur_type = ev->type;
            uint64_t t0 = tracing ? seer_clock_ns() : 0;
            int rc = m->handle(c, state, ev->type, ev->payload, ev->size);
            if (tracing)
                seer_trace_add(w, SEER_TRACE_EVENT, t0, seer_clock_ns(), c->now, inst, e,
                               c->cur_type, 1);
            n++;
            seer_event_free(w, ev);
            if (__builtin_expect(rc != 0 || w->err != 0, 0)) {
                seer_after_handler(c, rc, "event");
                break;
            }
        }
        r->events += n;
        w->events += n;
    }
    report_min(w, inst, r);
}

/* Iterate the claimed chunks of the flattened (selected instance, item) space. */
#define FOR_CLAIMED(rt, per, inst, item, body)                                          \
    do {                                                                                \
        uint32_t b_, e_;                                                                \
        while (seer_worklist_claim_mc(&(rt)->wl, &b_, &e_)) {                           \
            uint32_t k_ = b_ / (per), item = b_ % (per);                                \
            for (uint32_t x_ = b_; x_ < e_; x_++) {                                     \
                uint32_t inst = (rt)->sel[k_];                                          \
                body;                                                                   \
                if (++item == (per)) {                                                  \
                    item = 0;                                                           \
                    k_++;                                                               \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    } while (0)

static void boundary_phases(seer_worker *w)
{
    seer_runtime *rt = w->rt;
    const uint32_t A = rt->sz.num_agents, N = rt->sz.num_entities;
    if (rt->model->boundary) {
        FOR_CLAIMED(rt, 1u, inst, it, { (void)it; seer_boundary_instance(w, inst); });
        barrier(w, cb_agents);
    }
    FOR_CLAIMED(rt, A, inst, a, seer_observe_agent(w, inst, a));
    barrier(w, cb_entities);
    FOR_CLAIMED(rt, N, inst, e, seer_publish_entity(w, inst, e));
}

static void run_job(seer_worker *w, int job)
{
    seer_runtime *rt = w->rt;
    const uint32_t A = rt->sz.num_agents, N = rt->sz.num_entities;
    /* Outside the event loop: a worker whose free list ran dry in the last
     * call (events flow from the threads that schedule them to the threads
     * that handle them) starts the next one with twice the stock, so after a
     * few steps the event loop no longer takes the reserve's lock. */
    if (w->refills != w->refills_seen) {
        w->refills_seen = w->refills;
        if (w->pool_target < POOL_MAX)
            w->pool_target *= 2;
    }
    seer_pool_balance(w, w->pool_target, 4 * w->pool_target);
    seer_barrier_fn before_boundary = rt->model->boundary ? cb_instances : cb_agents;

    uint64_t t0 = phase_t0(w);
    if (job == JOB_RESET) {
        FOR_CLAIMED(rt, N, inst, e, seer_clear_entity(w, &rt->inst[inst], e, rt->inst[inst].seed));
        barrier(w, cb_entities);
        FOR_CLAIMED(rt, N, inst, e, {
            if (!w->err)
                seer_init_entity(w, inst, e);
        });
        note_error(w);
        phase_end(w, SEER_TRACE_INIT, t0, 0.0, w->events);
        barrier(w, before_boundary);
        if (!aborted(rt)) {
            t0 = phase_t0(w);
            boundary_phases(w);
            phase_end(w, SEER_TRACE_BOUNDARY, t0, 0.0, w->events);
        }
        final_barrier(w);
        return;
    }

    /* JOB_STEP */
    FOR_CLAIMED(rt, N, inst, e, {
        seer_entity_rec *r = &rt->inst[inst].recs[e];
        drain_inbox(w, r);
        if (e < A && !w->err)
            seer_act_agent(w, inst, e);
        report_min(w, inst, r);
    });
    note_error(w);
    phase_end(w, SEER_TRACE_ACT, t0, rt->inst[rt->sel[0]].boundary - rt->sz.step_duration,
              w->events);
    barrier(w, cb_window);

    seer_ctx c;
    seer_ctx_setup(&c, rt, w, rt->sel[0], PHASE_EVENT);
    while (rt->any_running) {
        t0 = phase_t0(w);
        uint64_t ev0 = w->events;
        double start = rt->inst[rt->sel[0]].t_next;
        FOR_CLAIMED(rt, N, inst, e, {
            if (rt->inst[inst].running)
                run_entity(w, &c, inst, e);
        });
        note_error(w);
        phase_end(w, SEER_TRACE_WINDOW, t0, start, ev0);
        barrier(w, cb_window);
    }
    if (!aborted(rt)) {
        barrier(w, before_boundary);
        t0 = phase_t0(w);
        boundary_phases(w);
        phase_end(w, SEER_TRACE_BOUNDARY, t0, rt->inst[rt->sel[0]].boundary, w->events);
    }
    final_barrier(w);
}

/* ---- the pool --------------------------------------------------------------- */

static void *worker_main(void *arg)
{
    seer_worker *w = arg;
    seer_runtime *rt = w->rt;
    uint64_t seen = w->gen_seen;
    for (;;) {
        uint64_t g;
        uint32_t spins = 0;
        /* acquire: pairs with the release fetch_add in seer_parallel_run, so
         * the job description written before it is visible. */
        while ((g = atomic_load_explicit(&rt->job_gen, memory_order_acquire)) == seen) {
            if (spins++ < WAKE_SPINS) {
                seer_cpu_relax();
                continue;
            }
            pthread_mutex_lock(&rt->wake_lock);
            /* acquire (as above); the mutex orders it with the broadcast. */
            while ((g = atomic_load_explicit(&rt->job_gen, memory_order_acquire)) == seen)
                pthread_cond_wait(&rt->wake_cond, &rt->wake_lock);
            pthread_mutex_unlock(&rt->wake_lock);
            break;
        }
        seen = g;
        int job = rt->job;
        if (job == JOB_EXIT)
            return NULL;
        run_job(w, job);
    }
}

int seer_pool_start(seer_runtime *rt, uint32_t threads)
{
    rt->nthreads = threads;
    rt->workers = aligned_alloc(SEER_CACHE_LINE,
                                ((threads * sizeof(seer_worker) + SEER_CACHE_LINE - 1) /
                                 SEER_CACHE_LINE) * SEER_CACHE_LINE);
    if (!rt->workers)
        return SEER_E_NOMEM;
    memset(rt->workers, 0, threads * sizeof(seer_worker));
    seer_barrier_init(&rt->barrier, threads, BARRIER_SPINS);
    for (uint32_t t = 0; t < threads; t++) {
        seer_worker *w = &rt->workers[t];
        w->rt = rt;
        w->id = t;
        w->pool_target = POOL_LO;
        w->local_min = malloc(rt->B * sizeof(double));
        if (!w->local_min)
            return SEER_E_NOMEM;
        for (uint32_t i = 0; i < rt->B; i++)
            w->local_min[i] = __builtin_inf();
        if (seer_trace_alloc_worker(rt, w) != SEER_OK)
            return SEER_E_NOMEM;
    }
    rt->job = JOB_NONE;
    /* relaxed: no worker runs yet; pthread_create orders this for them.  A
     * restarted pool must not mistake the last job (the exit) for a new one. */
    uint64_t gen = atomic_load_explicit(&rt->job_gen, memory_order_relaxed);
    for (uint32_t t = 1; t < threads; t++) {
        rt->workers[t].gen_seen = gen;
        if (pthread_create(&rt->workers[t].thread, NULL, worker_main, &rt->workers[t]) != 0)
            return SEER_E_NOMEM;
        rt->workers[t].started = 1;
    }
    return SEER_OK;
}

static void publish_job(seer_runtime *rt, int job)
{
    rt->job = job;
    /* release: publishes the job description (and everything the host wrote,
     * actions included) to the workers' acquire loads of job_gen. */
    atomic_fetch_add_explicit(&rt->job_gen, 1, memory_order_release);
    pthread_mutex_lock(&rt->wake_lock);
    pthread_cond_broadcast(&rt->wake_cond);
    pthread_mutex_unlock(&rt->wake_lock);
}

void seer_pool_stop(seer_runtime *rt)
{
    if (!rt->workers)
        return;
    int any = 0;
    for (uint32_t t = 1; t < rt->nthreads; t++)
        any |= rt->workers[t].started;
    if (any)
        publish_job(rt, JOB_EXIT);
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        seer_worker *w = &rt->workers[t];
        if (t > 0 && w->started)
            pthread_join(w->thread, NULL);
        /* Return free events to the reserve so a new pool can use them. */
        seer_pool_balance(w, 0, 0);
        rt->refills_total += w->refills;
        free(w->local_min);
        free(w->trace);
    }
    free(rt->workers);
    rt->workers = NULL;
    rt->nthreads = 0;
}

int seer_parallel_run(seer_runtime *rt, int job)
{
    atomic_store_explicit(&rt->abort_code, 0, memory_order_relaxed);
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        rt->workers[t].err = 0;
        rt->workers[t].msg[0] = '\0';
    }
    rt->any_running = 0;
    wl_set(rt, rt->nsel * rt->sz.num_entities);
    if (rt->nthreads > 1)
        publish_job(rt, job);
    run_job(&rt->workers[0], job);
    /* Every worker has passed the final barrier: their writes are visible. */
    int code = SEER_OK;
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        seer_worker *w = &rt->workers[t];
        rt->events_total += w->events;
        w->events = 0;
        if (w->err && code == SEER_OK) {
            code = w->err;
            memcpy(rt->err, w->msg, sizeof rt->err);
        }
    }
    return code;
}
