/*
 * pool.c -- the worker pool and its phase machine, shared by the parallel
 * and the optimistic executors.
 *
 * Each instance's entities are cut into partitions of consecutive entities,
 * one per thread of the pool; each partition has one event queue (squeue.c,
 * the serial executor's queue) holding every pending event of its entities.
 *
 * One call (reset or step of the selected instances) is a sequence of
 * phases on the executive list (seer_phases in sync.h).  Each phase is a
 * list of work items (partitions, agents, entities or instances of the
 * selected instances); any worker -- the calling thread included -- claims
 * chunks of it and handles them; whoever completes the last chunk runs the
 * transition and opens the next phase:
 *
 *   step:  ACT      every partition: its agents act at k*D; report the
 *                   partition's earliest pending time
 *          EVENTS*  the executor's events phases, as long as its table
 *                   (seer_events_phases, pool.h) says: the parallel
 *                   executor's windows (parallel.c), or the optimistic
 *                   executor's speculation phases (optimistic.c)
 *          FLUSH    every partition merges the last phase's events (the
 *                   windows; an act phase that failed)
 *          BINST    the model's per-instance boundary hook (if any)
 *          OBSERVE  per agent;  PUBLISH  per entity;  DONE
 *   reset: CLEAR, INIT, FLUSH, then BINST/OBSERVE/PUBLISH, DONE
 *
 * The phase machine never calls an executor by name: a call's events
 * phases come from the table its executor hands to seer_pool_run
 * (rt->call.events), and the optimistic executor's per-worker state is
 * freed when the pool stops through the function it installs
 * (rt->pool.release_exec).
 *
 * Events between partitions: the thread that handles a partition during a
 * phase owns its queue, so an event for the same partition goes straight
 * into it.  An event for another partition goes into the scheduling thread's
 * own outbox for that partition -- a plain vector, no atomic operation per
 * event -- in the bank of the current phase's parity; the target
 * partition's visitor in the next phase merges every thread's outbox of the
 * other parity.  Producers and mergers never touch the same bank in one
 * phase, and the phase transition (acq_rel completion, release open, acquire
 * claim) orders the writes before the merge.  Merging an event that cannot
 * be due in the window it arrives for is harmless: the queue orders it.
 *
 * Every visit of a partition reports its earliest queued time, and every
 * cross-partition event reports its time in the sending thread's local
 * minimum (seer_note_window_min_local): the parallel executor's completer
 * reduces the per-worker minima into its next window.
 *
 * No fixed team: a worker that is descheduled (a loaded or oversubscribed
 * machine) and has claimed nothing is never waited for; the others -- at
 * worst the calling thread alone -- do the whole call.
 *
 * Threads: the host calls seer_pool_run (through the executors, from
 * seer_runtime_reset/step) and the pool functions (create/destroy, threads
 * and executor switches, after a fork), and
 * takes part in every call as worker 0; worker_main runs on each other
 * pool thread.  run_phases and everything under it run on any worker,
 * for the chunks it claimed; the *_completer functions run on whichever
 * worker completed a phase.  The partitions themselves are cut in
 * partition.c; the item operations are in phases.c and loop.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "company.h"
#include "ctx.h"
#include "errors.h"
#include "events.h"
#include "loop.h"
#include "partition.h"
#include "phases.h"
#include "pool.h"
#include "process.h"
#include "runtime.h"
#include "squeue.h"
#include "sync.h"
#include "trace.h"

#define WAKE_SPINS 4000u  /* pauses before a worker sleeps between calls   */
/* A worker spins for the next call only where one of the last three gaps
 * between calls was at most this long (about what WAKE_SPINS pauses take:
 * 105 us on the AMD EPYC of the benchmarks).  Gaps that are all longer -- a
 * training loop's policy and update, the other envs' steps of a round-robin
 * loop -- would see the spin run out anyway, and meanwhile it takes a core
 * from the caller's own work (torch's threads) or the next env's pool.  One
 * long gap among short ones (the caller preempted by a burner) keeps the
 * spin: a worker asleep under load wakes late. */
#define WAKE_SPIN_NS 100000u
#define WAKE_GAPS 3u
#define PHASE_SPINS 2000u /* pauses before a waiting worker yields the CPU */
#define POOL_LO 1024u      /* initial free events per worker at a call's start */
#define POOL_MAX (1u << 22) /* cap of the adaptive stock                        */

/* ---- phase plumbing ---------------------------------------------------------- */

static uint32_t phase_count(const seer_runtime *rt, uint32_t kind)
{
    switch (kind) {
    case PH_BINST:
    case PH_INSTANCE: return rt->call.nsel;
    case PH_OBSERVE: return rt->call.nsel * rt->sz.num_agents;
    case PH_PUBLISH: return rt->call.nsel * rt->sz.num_entities;
    case PH_DONE: return 0;
    case PH_EVENTS: return rt->call.events->items(rt);
    default: return rt->call.nsel * rt->part.n; /* partition phases */
    }
}

/* SEER_CHECK_SHUFFLE: a fresh random visiting order for the next phase
 * (Fisher-Yates on splitmix64 from the options' seed).  Run by the thread
 * that opens the phase, before opening it: the release of the open
 * publishes it to the claimers. */
static void shuffle_visits_completer(seer_runtime *rt, uint32_t count)
{
    uint32_t *p = rt->call.perm;
    for (uint32_t i = 0; i < count; i++)
        p[i] = i;
    for (uint32_t i = count; i > 1; i--) {
        const uint64_t z = seer_splitmix64_next(&rt->check.shuffle_seed);
        uint32_t j = (uint32_t)((z >> 32) * (uint64_t)i >> 32);
        uint32_t t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
}

static void open_phase_completer(seer_runtime *rt, uint32_t kind)
{
    uint32_t count = phase_count(rt, kind);
    if (rt->call.perm && count)
        shuffle_visits_completer(rt, count);
    /* relaxed: written by the host before the call, published with it. */
    uint32_t active = atomic_load_explicit(&rt->pool.call_active, memory_order_relaxed);
    uint32_t chunk = count / (active * 16u);
    if (chunk < 1)
        chunk = 1;
    if (chunk > 256)
        chunk = 256;
    if (kind == PH_EVENTS && active == 1 && rt->call.events->items_wait && !rt->check.mode)
        chunk = count; /* one holder for items that wait for each other */
    seer_phases_open_completer(&rt->pool.ph, kind, count, chunk, rt->pool.call_tag);
}

/* The transition after phase `done`, run by the thread that completed it
 * (worker w) while no other thread touches the call's shared state. */
static void advance_phase_completer(seer_runtime *rt, seer_worker *w, uint32_t done)
{
    uint32_t next = PH_DONE;
    switch (done) {
    case PH_CLEAR:
        next = PH_INIT;
        break;
    case PH_INIT:
        next = PH_FLUSH;
        break;
    case PH_ACT:
        /* the executor's first events phase, or FLUSH (none, or an error
         * in act: FLUSH empties the outboxes and the call ends) */
        next = rt->call.events->after_act_completer(rt, w);
        break;
    case PH_EVENTS:
        next = rt->call.events->after_events_completer(rt, w);
        break;
    case PH_FLUSH:
        /* Even after an error: a call leaves no event in an outbox. */
        next = seer_aborted_any(rt) ? PH_DONE : seer_first_boundary_phase(rt);
        break;
    case PH_BINST:
        next = PH_OBSERVE;
        break;
    case PH_OBSERVE:
        next = PH_PUBLISH;
        break;
    case PH_PUBLISH:
        for (uint32_t k = 0; k < rt->call.nsel; k++)
            seer_finish_instance(rt, rt->call.sel[k]);
        next = PH_DONE;
        break;
    case PH_INSTANCE: /* each instance finished by its thread */
        next = PH_DONE;
        break;
    default:
        break;
    }
    /* The next phase merges what this one scheduled across partitions and
     * schedules into the other bank. */
    rt->call.out_parity ^= 1u;
    open_phase_completer(rt, next);
}

static uint32_t trace_kind(uint32_t phase)
{
    switch (phase) {
    case PH_CLEAR:
    case PH_INIT: return SEER_TRACE_INIT;
    case PH_ACT: return SEER_TRACE_ACT;
    case PH_EVENTS:
    case PH_INSTANCE: return SEER_TRACE_WINDOW; /* a window of one whole step */
    default: return SEER_TRACE_BOUNDARY;
    }
}

/* ---- per-partition work --------------------------------------------------- */

/* Move the events every thread sent to partition p in the previous phase
 * (outbox bank `bank`) into its queue. */
void seer_merge_outboxes(seer_worker *w, seer_inst *in, uint32_t inst, uint32_t p,
                         uint32_t bank)
{
    seer_runtime *rt = w->rt;
    seer_squeue *q = &in->parts[p];
    const size_t slot = (size_t)inst * rt->part.n + p;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        seer_qvec *o = &rt->pool.workers[t].out[bank][slot];
        for (uint32_t k = 0; k < o->n; k++) {
            if (__builtin_expect(seer_squeue_push_entry_owner(q, o->a[k]) != SEER_OK, 0)) {
                /* Out of memory: drop the event and fail the call. */
                seer_worker_error_local(w, SEER_E_NOMEM,
                                        "out of memory for a partition's event queue");
                seer_event_free_local(w, o->a[k].ev);
            }
        }
        o->n = 0;
    }
}

/* Reset: drop partition `item`'s pending events (its queue's, and any the
 * outboxes hold for it: none once a call has flushed them) and clear its
 * entities [e0, e1). */
static void clear_partition(seer_worker *w, seer_inst *in, uint32_t inst, uint32_t item,
                            uint32_t e0, uint32_t e1)
{
    seer_runtime *rt = w->rt;
    seer_event_free_all_local(w, &in->parts[item]);
    for (uint32_t t = 0; t < rt->pool.nthreads; t++)
        for (uint32_t j = 0; j < 2; j++) {
            seer_qvec *o = &rt->pool.workers[t].out[j][(size_t)inst * rt->part.n + item];
            for (uint32_t i = 0; i < o->n; i++)
                seer_event_free_local(w, o->a[i].ev);
            o->n = 0;
        }
    for (uint32_t en = e0; en < e1; en++)
        seer_clear_entity(w, in, en, in->seed);
}

/* Handle items [b, e) of the flattened (selected instance, item) space. */
static void run_chunk(seer_worker *w, seer_ctx *c, uint32_t kind, uint32_t b, uint32_t e)
{
    seer_runtime *rt = w->rt;
    const uint32_t A = rt->sz.num_agents, N = rt->sz.num_entities;
    const uint32_t per = kind == PH_BINST || kind == PH_INSTANCE ? 1u
                         : kind == PH_OBSERVE                ? A
                         : kind == PH_PUBLISH                ? N
                                                             : rt->part.n;
    const uint32_t bank = rt->call.out_parity ^ 1u; /* the previous phase's outboxes */
    if (kind == PH_EVENTS) { /* the executor's items */
        rt->call.events->run_local(w, c, b, e, bank);
        return;
    }
    uint32_t k = b / per, item = b % per;
    for (uint32_t x = b; x < e; x++) {
        if (rt->call.perm) { /* SEER_CHECK_SHUFFLE: the phase's visiting order */
            k = rt->call.perm[x] / per;
            item = rt->call.perm[x] % per;
        }
        const uint32_t inst = rt->call.sel[k];
        seer_inst *in = &rt->inst[inst];
        /* partition phases: the partition's entities [e0, e1) */
        const uint32_t e0 = kind <= PH_FLUSH ? rt->part.start[item] : 0;
        const uint32_t e1 = kind <= PH_FLUSH ? rt->part.start[item + 1] : 0;
        switch (kind) {
        case PH_CLEAR:
            clear_partition(w, in, inst, item, e0, e1);
            break;
        case PH_INIT:
            for (uint32_t en = e0; en < e1 && !w->err; en++)
                seer_init_entity(w, inst, en);
            break;
        case PH_ACT:
            for (uint32_t en = e0; en < e1 && en < A && !w->err; en++)
                seer_act_agent(w, inst, en);
            seer_note_window_min_local(w, inst, seer_squeue_min_time_owner(&in->parts[item]));
            break;
        case PH_FLUSH:
            seer_merge_outboxes(w, in, inst, item, bank);
            break;
        case PH_BINST:
            seer_boundary_instance(w, inst);
            break;
        case PH_INSTANCE: /* its only partition's queue holds all its events */
            /* the budget is per instance: this one may handle max_step_events
             * from here (call_events stays the thread's running count) */
            w->call_budget = w->call_events + rt->max_step_events;
            w->events += seer_step_instance(w, c, inst, &in->parts[0], 0, 1);
            break;
        case PH_OBSERVE:
            seer_observe_agent(w, inst, item);
            break;
        case PH_PUBLISH:
            seer_publish_entity(w, inst, item);
            break;
        default:
            break;
        }
        if (++item == per) {
            item = 0;
            k++;
        }
    }
}

/* Outside the event loop, as a call starts: a worker whose free list ran
 * dry in the last call (events flow from the threads that schedule them to
 * the threads that handle them) starts the next one with twice the stock,
 * so after a few steps the event loop no longer takes the reserve's lock. */
static void restock_list_local(seer_worker *w, seer_event_pool *p)
{
    if (p->refills != p->refills_seen) {
        p->refills_seen = p->refills;
        if (p->target < POOL_MAX)
            p->target *= 2;
    }
    seer_event_pool_balance_local(w, p, p->target, 4 * p->target);
}

static void restock_local(seer_worker *w)
{
    restock_list_local(w, &w->pool);
    /* the records of events between partitions (windows only) */
    if (w->rt->part.n > 1)
        restock_list_local(w, &w->cross);
}

/* A worker's trace of one call: a span per phase it works in (from its
 * first claim to its last completion, with the events it handled), and
 * the waits for the next phase.  Trace records are written only while
 * holding a chunk, i.e. before its completion: so they happen before the
 * call returns and the host reads them.  A wait is recorded when a claim
 * ends it. */
typedef struct phase_spans {
    uint64_t seq;     /* phase of the open span (UINT64_MAX: none)  */
    uint64_t rec;     /* its record index                           */
    uint64_t wait_t0; /* start of an unrecorded wait                */
} phase_spans;

/* A chunk of phase `seq` claimed: end the wait, open the phase's span. */
static void spans_claimed_local(seer_worker *w, phase_spans *s, uint64_t seq, uint32_t kind)
{
    seer_runtime *rt = w->rt;
    uint64_t now = seer_clock_ns();
    if (s->wait_t0)
        seer_trace_add_local(w, SEER_TRACE_BARRIER, s->wait_t0, now, 0.0, 0, 0, 0, 0);
    if (seq != s->seq) {
        double sim = kind == PH_EVENTS || kind == PH_INSTANCE ? rt->call.window_t
                                                              : rt->inst[rt->call.sel[0]].boundary;
        s->seq = seq;
        s->rec = w->trace_n;
        seer_trace_add_local(w, trace_kind(kind), now, now, sim, 0, 0, 0, 0);
    }
}

/* The chunk handled (`events` events): extend the phase's span. */
static void spans_handled_local(seer_worker *w, const phase_spans *s, uint64_t events)
{
    if (s->rec < w->trace_n) {
        w->trace[s->rec].t1_ns = seer_clock_ns();
        w->trace[s->rec].count += (uint32_t)events;
    }
}

/* Work on the phases of call `tag` until it is done.  Every worker runs
 * this when woken; the calling thread runs it too, and returns at DONE.  A
 * worker that finds a phase of another call (it missed this call's DONE
 * while descheduled) returns too: it joins a call only through worker_main,
 * so parked workers stay out and nobody waits between calls. */
static void run_phases(seer_worker *w, uint32_t tag)
{
    seer_runtime *rt = w->rt;
    /* restocked at its first claim: a worker that comes after the call's
     * last chunk takes nothing, and leaves the lists as they are */
    int stocked = 0;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, 0, PHASE_EVENT);
    phase_spans spans = {.seq = UINT64_MAX};
    /* Chunks of the current events phase this worker claimed, and the
     * phases' arrivals when it claimed the first (run_alone_holder). */
    uint64_t mine_seq = UINT64_MAX;
    uint32_t mine = 0, arrivals0 = 0;
    for (;;) {
        uint64_t seq;
        uint32_t kind, ptag, b, e;
        /* A worker still here when the host has published its next call
         * leaves before claiming, where that call leaves it out (capped to
         * the caller: an alone stretch, a budget): descheduled again while
         * it held the call's chunk, it held the caller up.  acquire: pairs
         * with publish_job's release (call_active is written before it); a
         * hint -- a claim just after a publish is handled as any other. */
        if (w->id && (uint32_t)atomic_load_explicit(&rt->pool.job_gen, memory_order_acquire) !=
                         tag &&
            w->id >= atomic_load_explicit(&rt->pool.call_active, memory_order_relaxed))
            return;
        int got = seer_phases_claim_any(&rt->pool.ph, (int)(w->id & 1u), &seq, &kind, &ptag, &b,
                                        &e);
        if (spans.wait_t0 && w->id == 0 && (kind == PH_DONE || got == SEER_CLAIMED))
            w->wait_ns += seer_clock_ns() - spans.wait_t0; /* company.c reads it */
        if (kind == PH_DONE)
            return;
        if (got != SEER_CLAIMED) {
            if (ptag != tag)
                return; /* another call: re-enter through worker_main */
            /* Not SEER_TRACING(w) here: between calls the host may switch
             * tracing (rewriting w->trace) while a late worker still waits
             * here; w->trace is only read while holding a chunk.  One clock
             * read per wait is noise next to the wait itself. */
            if (!spans.wait_t0)
                spans.wait_t0 = seer_clock_ns();
            seer_phases_wait_any(&rt->pool.ph, seq, PHASE_SPINS);
            continue;
        }
        if (!stocked) {
            restock_local(w);
            stocked = 1;
        }
        const int tracing = SEER_TRACING(w);
        if (tracing)
            spans_claimed_local(w, &spans, seq, kind);
        spans.wait_t0 = 0;
        uint64_t ev0 = w->events;
        if (kind == PH_EVENTS && seq != mine_seq) {
            mine_seq = seq;
            mine = 0;
            /* relaxed: a hint (sync.h) */
            arrivals0 = atomic_load_explicit(&rt->pool.ph.arrivals, memory_order_relaxed);
        }
        run_chunk(w, &c, kind, b, e);
        if (tracing)
            spans_handled_local(w, &spans, w->events - ev0);
        /* Every chunk of the phase was ours: nobody else is running (or
         * they came too late).  Unless someone arrived meanwhile, go on
         * alone while we still hold the last one (not in checking mode,
         * whose passes run the phases as they are); its windows are traced
         * on their own. */
        if (kind == PH_EVENTS && rt->call.events->run_alone_holder &&
            ++mine == seer_phases_chunks_holder(&rt->pool.ph, seq) && !rt->check.mode && !w->err &&
            atomic_load_explicit(&rt->pool.ph.arrivals, memory_order_relaxed) == arrivals0)
            rt->call.events->run_alone_holder(w, &c, arrivals0);
        if (__builtin_expect(seer_sigint_count() != rt->sigint_at_call, 0) && !w->err)
            seer_worker_error_local(w, SEER_E_INTERRUPTED,
                                    "interrupted by SIGINT (Ctrl-C) during a call on %u "
                                    "instance(s): the call was abandoned",
                                    rt->call.nsel);
        seer_propagate_error_local(w);
        if (seer_phases_complete_any(&rt->pool.ph))
            advance_phase_completer(rt, w, kind);
        /* A chunk of a later call (claimed while late) is handled like any
         * other -- any worker may take any chunk -- but then we leave. */
        if (ptag != tag)
            return;
    }
}

/* ---- the pool --------------------------------------------------------------- */

static void *worker_main(void *arg)
{
    seer_worker *w = arg;
    seer_runtime *rt = w->rt;
    /* Ctrl-C goes to the host's threads, never to a worker. */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    /* relaxed: the value is all a reader needs (nothing is published with it) */
    atomic_store_explicit(&w->tid, seer_thread_id_any(), memory_order_relaxed);
    uint64_t seen = w->gen_seen;
    for (;;) {
        uint64_t g;
        uint32_t spins = 0;
        /* relaxed: a hint (a parked worker sleeps at once instead of spinning);
         * the host changes it between calls. */
        const int parked =
            w->id >= atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
        /* relaxed: a hint written before the call we took part in. */
        const uint32_t spin_limit =
            parked ? 0u : atomic_load_explicit(&rt->pool.wake_spins, memory_order_relaxed);
        /* acquire: pairs with the release fetch_add in publish_job, so the
         * call's description and first phase are visible. */
        while ((g = atomic_load_explicit(&rt->pool.job_gen, memory_order_acquire)) == seen) {
            if (spins++ < spin_limit) {
                seer_cpu_relax();
                continue;
            }
            pthread_mutex_lock(&rt->pool.wake_lock);
            /* acquire (as above); the mutex orders it with the broadcast. */
            while ((g = atomic_load_explicit(&rt->pool.job_gen, memory_order_acquire)) == seen)
                pthread_cond_wait(&rt->pool.wake_cond, &rt->pool.wake_lock);
            pthread_mutex_unlock(&rt->pool.wake_lock);
            break;
        }
        seen = g;
        /* relaxed: stored before the release bump of job_gen we acquired. */
        if (atomic_load_explicit(&rt->pool.shutdown, memory_order_relaxed))
            return NULL;
        /* relaxed: stored before the release bump of job_gen we acquired.  A
         * parked worker, or one the call's cap leaves out, skips the call
         * (nobody waits for it). */
        if (w->id >= atomic_load_explicit(&rt->pool.call_active, memory_order_relaxed))
            continue;
        run_phases(w, (uint32_t)g);
    }
}

/* All or nothing: on failure everything started or allocated here is
 * stopped and freed again (rt->pool.workers NULL, nthreads and pool_active 0). */
int seer_pool_start(seer_runtime *rt, uint32_t threads)
{
    rt->pool.nthreads = threads;
    /* relaxed: no worker runs yet. */
    atomic_store_explicit(&rt->pool.active, threads, memory_order_relaxed);
    rt->pool.workers = aligned_alloc(SEER_CACHE_LINE,
                                seer_round_up(threads * sizeof(seer_worker), SEER_CACHE_LINE));
    if (!rt->pool.workers) {
        rt->pool.nthreads = 0;
        /* relaxed: no worker runs (nor will: the pool failed to start). */
        atomic_store_explicit(&rt->pool.active, 0, memory_order_relaxed);
        return SEER_E_NOMEM;
    }
    memset(rt->pool.workers, 0, threads * sizeof(seer_worker));
    for (uint32_t t = 0; t < threads; t++) {
        seer_worker *w = &rt->pool.workers[t];
        w->rt = rt;
        w->id = t;
        w->pool.target = POOL_LO;
        w->cross.target = POOL_LO;
        w->avoid_cpu = -1;
        w->home_mask = ~(((uintptr_t)1 << rt->mem.block_shift) - 1);
        /* the workers free records only in pool calls; the host (worker 0)
         * sends records home only there too (seer_pool_run) */
        w->home_limit = t ? threads : 0;
    }
    rt->pool.keep_off = 0;
    seer_pool_alone_init_host(rt, rt->pool.alone.allowed);
    for (uint32_t t = 0; t < threads; t++) {
        seer_worker *w = &rt->pool.workers[t];
        /* own lines: written while the other threads write theirs */
        w->local_min = aligned_alloc(SEER_CACHE_LINE,
                                     seer_round_up(rt->B * sizeof(double), SEER_CACHE_LINE));
        for (int j = 0; j < 2; j++)
            w->out[j] = calloc((size_t)rt->B * rt->part.n, sizeof(seer_qvec));
        w->away = calloc(threads, sizeof *w->away);
        w->away_homes = malloc(threads * sizeof *w->away_homes);
        if (!w->local_min || !w->out[0] || !w->out[1] || !w->away || !w->away_homes ||
            seer_trace_alloc_worker(rt, w) != SEER_OK) {
            seer_pool_stop(rt);
            /* relaxed: no worker runs (none was started). */
            atomic_store_explicit(&rt->pool.active, 0, memory_order_relaxed);
            return SEER_E_NOMEM;
        }
        for (uint32_t i = 0; i < rt->B; i++)
            w->local_min[i] = __builtin_inf();
    }
    /* a reserve per worker (before any of them takes records) */
    if (seer_event_homes_host(rt, threads) != SEER_OK) {
        seer_pool_stop(rt);
        /* relaxed: no worker runs (none was started). */
        atomic_store_explicit(&rt->pool.active, 0, memory_order_relaxed);
        return SEER_E_NOMEM;
    }
    /* relaxed: no worker runs yet; pthread_create orders this for them.  A
     * restarted pool must not mistake the last call (the exit) for a new one. */
    atomic_store_explicit(&rt->pool.shutdown, 0, memory_order_relaxed);
    /* relaxed: only the host writes job_gen. */
    uint64_t gen = atomic_load_explicit(&rt->pool.job_gen, memory_order_relaxed);
    for (uint32_t t = 1; t < threads; t++) {
        rt->pool.workers[t].gen_seen = gen;
        if (pthread_create(&rt->pool.workers[t].thread, NULL, worker_main,
                           &rt->pool.workers[t]) != 0) {
            seer_pool_stop(rt); /* joins the workers started */
            /* relaxed: no worker runs any more. */
            atomic_store_explicit(&rt->pool.active, 0, memory_order_relaxed);
            return SEER_E_NOMEM;
        }
        rt->pool.workers[t].started = 1;
    }
    return SEER_OK;
}

int seer_pool_restart(seer_runtime *rt, uint32_t threads, uint32_t active)
{
    int rc = seer_pool_start(rt, threads);
    /* relaxed: as in a resize (published by the next call's release bump of
     * job_gen). */
    if (rc == SEER_OK)
        atomic_store_explicit(&rt->pool.active, active, memory_order_relaxed);
    return rc;
}

/* Stop the pool and start it anew: `n` workers, `active` of them taking
 * part in calls, on the partitions of a pool of `parts_for` threads (each
 * worker's outboxes are sized by the partitions).  On failure the old pool
 * and partitions come back (if even that runs out of memory the runtime is
 * broken, and says so). */
int seer_pool_remake(seer_runtime *rt, uint32_t n, uint32_t active, uint32_t parts_for)
{
    const uint32_t old = rt->pool.nthreads, old_np = rt->part.n;
    /* relaxed: the host is the only writer. */
    const uint32_t old_active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    seer_pool_stop(rt);
    int rc = seer_set_partitions(rt, parts_for);
    if (rc == SEER_OK) {
        if (seer_pool_restart(rt, n, active) == SEER_OK)
            return SEER_OK;
        rc = SEER_E_NOMEM;
        seer_fail(rt, "could not start %u threads (out of memory or threads); the pool keeps "
                      "its %u",
                  n, old_active);
        /* the old pool's partitions (best effort: the events stay where they
         * are should this run out of memory too) */
        (void)seer_set_partition_count(rt, old_np);
    }
    /* Back to the old pool, its parked workers parked (its memory was just
     * freed, so this fails only if memory ran out meanwhile: then the
     * runtime cannot run). */
    if (seer_pool_restart(rt, old, old_active) != SEER_OK) {
        rt->broken = 1;
        seer_fail(rt, "out of memory restarting the worker pool: this runtime cannot run any "
                      "more; close it and create a new one");
    }
    return rc;
}

int seer_pool_settle_host(seer_runtime *rt)
{
    /* relaxed: the host is the only writer. */
    const uint32_t active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    if (!seer_uses_parts(rt->executor) || seer_partition_count(rt, active) == rt->part.n) {
        rt->pool.unsettled_steps = 0;
        return SEER_OK;
    }
    if (++rt->pool.unsettled_steps < SEER_SETTLE_STEPS)
        return SEER_OK;
    rt->pool.unsettled_steps = 0;
    return seer_pool_remake(rt, rt->pool.nthreads, active, active);
}

/* The parent's workers do not exist in a child of fork(), and a lock one of
 * them held at the fork stays held: re-create the locks, forget the threads
 * (nothing to join) and free what the pool held. */
void seer_pool_forget_threads(seer_runtime *rt)
{
    pthread_mutex_init(&rt->mem.lock, NULL);
    pthread_mutex_init(&rt->pool.wake_lock, NULL);
    pthread_cond_init(&rt->pool.wake_cond, NULL);
    seer_phases_init(&rt->pool.ph);
    for (uint32_t t = 0; rt->pool.workers && t < rt->pool.nthreads; t++)
        rt->pool.workers[t].started = 0;
    rt->fork_gen = seer_fork_generation();
}

int seer_pool_after_fork(seer_runtime *rt)
{
    const uint32_t n = rt->pool.nthreads ? rt->pool.nthreads : 1;
    /* relaxed: the host is the only writer (and the only thread here). */
    const uint32_t active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    seer_pool_forget_threads(rt);
    if (rt->in_call) {
        /* another thread of the parent was inside a call at the fork: this
         * copy of its instances is half way through it, and so may be any
         * queue, outbox or free list (a push or pop cut in the middle).
         * None of them is walked or freed here: each starts empty, and the
         * event records they held are abandoned in the chunks that destroy
         * frees whole (their vectors' memory is abandoned too: a child that
         * forked inside a call leaks that much, once). */
        for (uint32_t t = 0; rt->pool.workers && t < rt->pool.nthreads; t++) {
            seer_worker *w = &rt->pool.workers[t];
            w->pool.free = w->cross.free = NULL;
            w->pool.nfree = w->cross.nfree = 0;
            if (w->away) /* possibly half written, as the lists */
                memset(w->away, 0, rt->pool.nthreads * sizeof *w->away);
            w->away_nh = 0;
            for (int j = 0; j < 2; j++)
                if (w->out[j])
                    memset(w->out[j], 0, (size_t)rt->B * rt->part.n * sizeof(seer_qvec));
        }
        for (uint32_t h = 0; h < rt->mem.nhomes; h++)
            rt->mem.homes[h] = (seer_event_home){NULL, 0};
        for (uint32_t i = 0; i < rt->B; i++) {
            seer_inst *in = &rt->inst[i];
            seer_squeue_init(&in->queue);
            for (uint32_t p = 0; in->parts && p < rt->part.n; p++)
                seer_squeue_init(&in->parts[p]);
            in->ready = 0;
            in->failed = 1;
        }
        snprintf(rt->fail_msg, sizeof rt->fail_msg,
                 "the process forked while another thread was inside a call of this runtime");
        rt->in_call = 0;
    }
    seer_pool_stop(rt);
    return seer_pool_restart(rt, n, active ? active : n); /* parked ones stay parked */
}

/* Every call bumps job_gen (its low 32 bits tag the call's phases); the
 * sleepers are woken only when other workers take part. */
static void publish_job(seer_runtime *rt, int wake)
{
    /* release: publishes the call (first phase, actions, selection) to the
     * workers' acquire loads of job_gen. */
    atomic_fetch_add_explicit(&rt->pool.job_gen, 1, memory_order_release);
    if (!wake)
        return;
    pthread_mutex_lock(&rt->pool.wake_lock);
    pthread_cond_broadcast(&rt->pool.wake_cond);
    pthread_mutex_unlock(&rt->pool.wake_lock);
}

void seer_pool_stop(seer_runtime *rt)
{
    if (!rt->pool.workers)
        return;
    int any = 0;
    for (uint32_t t = 1; t < rt->pool.nthreads; t++)
        any |= rt->pool.workers[t].started;
    if (any) {
        /* relaxed: published by the release bump in publish_job. */
        atomic_store_explicit(&rt->pool.shutdown, 1, memory_order_relaxed);
        publish_job(rt, 1);
    }
    for (uint32_t t = 1; t < rt->pool.nthreads; t++)
        if (rt->pool.workers[t].started)
            pthread_join(rt->pool.workers[t].thread, NULL);
    /* (every call sent its records home as it ended; a pool that failed to
     * start has none) */
    if (rt->pool.workers[0].away)
        seer_event_send_home_host(rt);
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        seer_worker *w = &rt->pool.workers[t];
        /* Return free events to the reserve so a new pool can use them. */
        seer_event_pool_balance_local(w, &w->pool, 0, 0);
        seer_event_pool_balance_local(w, &w->cross, 0, 0);
        rt->stats.refills += w->pool.refills + w->cross.refills;
        free(w->local_min);
        /* Outboxes are empty between calls (FLUSH merges them). */
        for (int j = 0; j < 2; j++) {
            if (w->out[j])
                for (size_t k = 0; k < (size_t)rt->B * rt->part.n; k++)
                    free(w->out[j][k].a);
            free(w->out[j]);
        }
        free(w->trace);
        free(w->away);
        free(w->away_homes);
    }
    /* the optimistic executor's per-worker state: made again for the next
     * speculative step (seer_opt_prepare installs this) */
    if (rt->pool.release_exec)
        rt->pool.release_exec(rt);
    free(rt->pool.workers);
    rt->pool.workers = NULL;
    rt->pool.nthreads = 0;
}

int seer_pool_run(seer_runtime *rt, int job, const seer_events_phases *events)
{
    /* No worker handles anything between calls (a late one may still be
     * looking at the last call's DONE phase, which has nothing to claim):
     * the host sets up the call alone.  relaxed: published with the rest of
     * the call by the release open of its first phase and the release bump
     * of job_gen (publish_job). */
    atomic_store_explicit(&rt->call.abort_code, 0, memory_order_relaxed);
    const uint64_t call_t0 = seer_clock_ns();
    rt->pool.workers[0].wait_ns = 0;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        rt->pool.workers[t].err = 0;
        rt->pool.workers[t].msg[0] = '\0';
        rt->pool.workers[t].call_events = 0;
        rt->pool.workers[t].call_budget =
            job == JOB_RESET ? UINT64_MAX : rt->max_step_events * (uint64_t)rt->call.nsel;
    }
    rt->call.any_running = 0;
    rt->call.events = events;
    /* relaxed: only the host writes job_gen. */
    uint64_t gen = atomic_load_explicit(&rt->pool.job_gen, memory_order_relaxed) + 1;
    rt->pool.call_tag = (uint32_t)gen;
    /* One partition per instance (many instances per thread, see
     * partition_count in partition.c): a step is one item per instance, each taken whole by
     * one thread, without windows.  Otherwise act, windows, boundary. */
    const int whole = job != JOB_RESET && rt->part.n == 1;
    if (whole) { /* the whole step is one window */
        rt->call.window_t = rt->inst[rt->call.sel[0]].boundary - rt->sz.step_duration;
        rt->stats.windows++;
    }
    /* relaxed: the host is the only writer of active and call_active; the
     * workers read call_active after the release bump in publish_job. */
    uint32_t n = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    /* the optimistic executor's slots each need a thread: it takes a cap of
     * one (one chunk of every slot, items_wait), not a larger one, and none
     * in checking mode (whose passes run the slots as they are) */
    if (rt->pool.call_cap && rt->pool.call_cap < n &&
        (rt->executor != SEER_EXECUTOR_OPTIMISTIC ||
         (rt->pool.call_cap == 1 && !rt->check.mode)))
        n = rt->pool.call_cap;
    n = seer_pool_alone_cap_host(rt, n); /* 1 in an alone stretch (company.c) */
    atomic_store_explicit(&rt->pool.call_active, n, memory_order_relaxed);
    if (n > 1) {
        const uint64_t now = seer_clock_ns();
        int soon = 1;
        if (rt->pool.last_end_ns) {
            rt->pool.gaps_ns[rt->pool.gap_next] = now - rt->pool.last_end_ns;
            rt->pool.gap_next = (rt->pool.gap_next + 1) % WAKE_GAPS;
            soon = 0;
            for (uint32_t k = 0; k < WAKE_GAPS; k++)
                soon |= rt->pool.gaps_ns[k] <= WAKE_SPIN_NS;
        }
        /* relaxed: a hint, published with the call by publish_job's release. */
        atomic_store_explicit(&rt->pool.wake_spins, soon ? WAKE_SPINS : 0u,
                              memory_order_relaxed);
        seer_pool_keep_off_caller_host(rt, n);
    }
    open_phase_completer(rt, job == JOB_RESET ? PH_CLEAR : whole ? PH_INSTANCE : PH_ACT);
    publish_job(rt, n > 1);
    seer_worker *w0 = &rt->pool.workers[0];
    /* an alone stretch's call keeps what it frees, as the serial executor
     * does (sent to an idle worker's home, the caller's own grew anew:
     * company.c) */
    w0->home_limit = n == 1 && rt->pool.alone.left ? 0 : rt->pool.nthreads;
    run_phases(w0, rt->pool.call_tag);
    w0->home_limit = 0;
    /* DONE: no worker touches a list before the next call */
    if (rt->pool.nthreads > 1)
        seer_event_send_home_host(rt);
    /* DONE was opened after the last chunk completed: every worker's writes
     * are visible here (acq_rel completions, release open, acquire claim). */
    int code = SEER_OK;
    seer_pool_call seen = {.step = job == JOB_STEP, .threads = n,
                           .caller_events = w0->events, .caller_wait_ns = w0->wait_ns};
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        seer_worker *w = &rt->pool.workers[t];
        seen.events += w->events;
        w->events = 0;
        if (w->err && code == SEER_OK) {
            code = w->err;
            memcpy(rt->err, w->msg, sizeof rt->err);
        }
    }
    rt->stats.events += seen.events;
    const uint64_t call_t1 = seer_clock_ns();
    if (n > 1)
        rt->pool.last_end_ns = call_t1;
    seen.ns = call_t1 - call_t0;
    if (code == SEER_OK)
        seer_pool_alone_after_call_host(rt, &seen);
    return code;
}
