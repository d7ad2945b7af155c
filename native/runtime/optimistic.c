/*
 * optimistic.c -- the optimistic executor: the events of a step run
 * speculatively on the worker pool, and an entity that handled events too
 * early is rolled back (Time Warp, Jefferson 1985), so that every entity
 * ends the step having handled exactly the serial executor's events in the
 * serial order.  It runs models of any lookahead, L = 0 included.
 *
 * Why it matches the serial executor.  The serial executor pops, per
 * instance, the pending event of least (time, key) (key = source entity <<
 * 40 | source sequence).  When every event a handler creates has a (time,
 * key) above the one being handled ("monotone" creation), the serial order
 * is the global (time, key) order, and an entity's handlings are its events
 * in (time, key) order, each seeing the state the previous one left.  Here
 * each entity handles its events in that order too, speculatively: when an
 * event reaches an entity that has already handled a later one (a
 * straggler), or an event it handled is cancelled, the entity goes back --
 * its state and runtime record (sequence, RNG, event count) restored from
 * its log, the undone events pending again, the events they sent cancelled
 * (anti-messages).  When the phase ends nothing is in flight and nothing
 * below the boundary is pending, so each entity's handlings are those of
 * the serial run.  A non-monotone creation ((t, new key) < (now, key of the
 * event being handled): a zero-delay event from an entity numbered below
 * the source of the event being handled) breaks the premise: the serial
 * executor handles it next, out of (time, key) order.  When its target is
 * the handling entity itself (a cell asked to act "now" by an arrival), it
 * is handled at once as part of the same handling (run_cascade).  For
 * another entity, seer_schedule detects it and the instance's speculation
 * is abandoned: after the phase,
 * every entity goes back to the step's start and the step runs serially
 * (seer_step_serially, serial.c).  So do handler errors during speculation (a
 * speculative handling may see inputs the serial run never gives it: the
 * serial rerun reports the error, with the serial executor's message, if
 * it is real), an instance past its event budget, and logs past their
 * memory limit.
 *
 * The step.  Like the parallel executor's: ACT per partition (cross-
 * partition events through the outboxes), then one speculation phase
 * instead of the windows, then the boundary phases.  The speculation phase
 * has one item per slot: slot s holds partitions [first[s], first[s+1]) of
 * every selected instance for the whole phase (contiguous, so neighbouring
 * partitions share a thread), and whoever claims it runs it until the phase
 * ends: only that thread pops those partitions' queues, writes their
 * entities' states, records and logs, and the flags of events pending or
 * handled there.  Every active worker claims one slot (a worker holds its
 * slot until the phase ends, so no thread takes two): slots = min(active
 * threads, partitions).
 *
 * Per entity, a log of the events it handled in this step, newest first:
 * one record per handling (seer_opt_rec: the event, the entity's state and
 * runtime record before it, the events it sent).  Records come from the
 * slot's arena (chunks kept from step to step, reset when a step starts; no
 * allocation per event once warm), bounded by rt->opt.log_limit split between
 * the slots: a slot that runs out abandons the instance it was handling.
 * Commit is free: when the phase ends every log is right, so the slot frees
 * the events its records hold (walking its arena in order) and forgets the
 * logs.
 *
 * Between slots, messages travel through single-producer single-consumer
 * rings, one per (sender slot, receiver slot): an event for another slot's
 * partition, or an anti-message for one sent earlier, in send order (a
 * message that finds its ring full waits in the sender's backlog, behind
 * which later ones queue: FIFO per pair, so an anti-message never overtakes
 * its event).  Sends of a handler are kept until it returns and delivered
 * then, so a rollback never happens inside a handler.  Only the owner of an
 * event's target partition writes its flags: a cancelled event that is
 * still pending is marked and freed when popped (or at commit); one already
 * handled first rolls its target back to before it.
 *
 * Termination: `work` counts active slots plus messages in flight (from
 * before a message is pushed until its receiver has handled it).  A slot
 * with nothing left to do (no event below the boundary, no backlog) leaves
 * it; an idle slot that finds a message counts itself back in before it
 * retires the message.  The phase is over when `work` reaches 0: then no
 * slot is active and no message in flight, and none can appear again.
 *
 * The building blocks are apart: the rings (spsc_ring.h), the arenas
 * (arena.h), the growable lists (vec.h); the structures (optimistic_state.h);
 * sizing and freeing them on the host (optimistic_sizing.c); the phases'
 * ends, the undo of an abandoned instance and the phase machine's table
 * (optimistic_phases.c).
 *
 * Threads: seer_opt_prepare (optimistic_sizing.c) and seer_opt_take_abandoned
 * run on the host between calls; seer_opt_open_completer and seer_opt_finish_completer on
 * the thread completing the phase before and the speculation phase itself;
 * seer_opt_run_slot and everything under it on the worker holding the slot;
 * seer_opt_schedule_local inside a handler that worker runs.
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

/* ---- small helpers ------------------------------------------------------------- */

/* Is (t, k) before event b's (time, key)? */
static inline int ev_before(seer_time t, uint64_t k, const seer_event *b)
{
    return t < b->time || (t == b->time && k < b->key);
}

/* Is event a's (time, key) before (t, k)? */
static inline int before_tk(const seer_event *a, seer_time t, uint64_t k)
{
    return a->time < t || (a->time == t && a->key < k);
}

/* Does this worker hold slot s in the current phase? */
static inline int held(const seer_opt_worker *o, uint32_t s)
{
    return s >= o->slot && s < o->slot_end;
}

static void abandon(seer_inst *in)
{
    /* relaxed: see inst_abandoned */
    atomic_store_explicit(&in->opt_abandon, 1, memory_order_relaxed);
}

/* ---- mailboxes ------------------------------------------------------------------ */

static inline seer_spsc *ring_of(const struct seer_opt_shared *sh, uint32_t from, uint32_t to)
{
    return &sh->rings[(size_t)from * sh->slots + to];
}

/* Producer side: push m unless the ring is full (spsc_ring.h orders it). */
static inline int ring_push_producer(seer_spsc *r, opt_msg m)
{
    uint32_t pos;
    if (!seer_spsc_reserve_producer(r, &pos))
        return 0;
    ((opt_msg *)r->buf)[pos & r->mask] = m;
    /* publishes the message, the event it points to, and the count of it
     * in `work` (send_msg) to the receiver */
    seer_spsc_publish_producer(r, pos);
    return 1;
}

/* ---- sending ----------------------------------------------------------------- */

static void send_msg(seer_worker *w, uint32_t to, opt_msg m)
{
    seer_opt_worker *o = w->opt;
    struct seer_opt_shared *sh = w->rt->opt.shared;
    /* relaxed: counted before the message can be seen (the ring's release
     * push orders it before the receiver's acquire and its decrement, so the
     * count never drops to 0 while the message is in flight) */
    atomic_fetch_add_explicit(&sh->work, 1, memory_order_relaxed);
    opt_backlog *b = &o->backlog[to];
    if (b->head == b->n && ring_push_producer(ring_of(sh, o->slot, to), m))
        return;
    if (b->head == b->n)
        b->head = b->n = 0;
    if (SEER_VEC_GROW_OWNER(b->a, b->cap, (uint64_t)b->n + 1) != SEER_OK) {
        /* the message is lost: the call fails (and stays counted, which no
         * longer matters: every slot leaves on the abort) */
        if (!w->err)
            seer_worker_error_local(w, SEER_E_NOMEM,
                                    "out of memory for the optimistic executor's messages");
        if (m.kind == MSG_EVENT)
            seer_event_free_local(w, m.ev);
        return;
    }
    b->a[b->n++] = m;
    o->backlogged++;
}

/* Push what the backlogs hold, as far as the rings take it. */
static void flush_backlogs(seer_worker *w)
{
    seer_opt_worker *o = w->opt;
    struct seer_opt_shared *sh = w->rt->opt.shared;
    for (uint32_t to = 0; to < sh->slots && o->backlogged; to++) {
        opt_backlog *b = &o->backlog[to];
        seer_spsc *r = ring_of(sh, o->slot, to);
        while (b->head < b->n && ring_push_producer(r, b->a[b->head])) {
            b->head++;
            o->backlogged--;
        }
        if (b->head == b->n)
            b->head = b->n = 0;
    }
}

/* ---- rollback and cancellation ----------------------------------------------- */

static void push_pending(seer_worker *w, seer_inst *in, uint32_t part, seer_event *ev)
{
    if (__builtin_expect(seer_squeue_push_owner(&in->parts[part], ev) != SEER_OK, 0)) {
        seer_event_free_local(w, ev);
        if (!w->err)
            seer_worker_error_local(w, SEER_E_NOMEM,
                                    "out of memory for a partition's event queue");
    }
}

static void add_cancel(seer_worker *w, opt_sent s)
{
    seer_opt_worker *o = w->opt;
    if (__builtin_expect(SEER_VEC_GROW_OWNER(o->cancel, o->cancel_cap,
                                             (uint64_t)o->ncancel + 1) != SEER_OK, 0)) {
        if (!w->err)
            seer_worker_error_local(w, SEER_E_NOMEM,
                                    "out of memory for the optimistic executor's "
                                    "cancellations");
        return;
    }
    o->cancel[o->ncancel++] = s;
}

/* Undo entity e's handlings of events at or after (t, k), newest first: its
 * state and record as before the oldest of them, those events pending
 * again, the events they sent to be cancelled (run_cancels). */
static void rollback(seer_worker *w, uint32_t inst, uint32_t e, seer_time t, uint64_t k)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    seer_opt_worker *o = w->opt;
    const uint64_t t0 = SEER_TRACING(w) ? seer_clock_ns() : 0;
    const uint32_t part = rt->part.of[e];
    seer_opt_rec *r = in->opt_log[e], *oldest = NULL;
    uint32_t n = 0;
    while (r && !before_tk(r->ev, t, k)) {
        seer_event *ev = r->ev;
        n += r->handled - 1; /* the cascade it covers (n++ below: itself) */
        ev->flags &= ~(uint32_t)SEER_EV_HANDLED;
        r->ev = NULL; /* undone: commit skips it */
        push_pending(w, in, part, ev);
        for (uint32_t i = 0; i < r->nsent; i++)
            add_cancel(w, r->sent[i]);
        oldest = r;
        r = r->prev;
        n++;
    }
    if (!oldest)
        return;
    memcpy(seer_inst_state(rt, in, e), oldest->state, rt->sz.entity_size);
    in->recs[e] = oldest->rec;
    in->opt_log[e] = r;
    o->net[inst] -= n;
    o->rollbacks++;
    o->undone += n;
    if (SEER_TRACING(w))
        seer_trace_add_local(w, SEER_TRACE_ROLLBACK, t0, seer_clock_ns(), t, inst, e, 0, n);
}

/* Cancel ev, pending or handled in partition `part` of this slot. */
static void cancel_local(seer_worker *w, uint32_t inst, uint32_t part, seer_event *ev)
{
    seer_runtime *rt = w->rt;
    if (ev->flags & SEER_EV_HANDLED)
        rollback(w, inst, ev->target, ev->time, ev->key);
    ev->flags |= SEER_EV_CANCEL;
    rt->opt.shared->ncancelled[(size_t)inst * rt->part.n + part]++;
}

/* Carry out the cancellations rollbacks asked for (which may roll back
 * more entities, and ask for more). */
static void run_cancels(seer_worker *w)
{
    seer_opt_worker *o = w->opt;
    const uint32_t *slot_of = w->rt->opt.shared->slot_of;
    while (o->ncancel && !w->err) {
        const opt_sent s = o->cancel[--o->ncancel];
        if (!held(o, slot_of[s.part])) {
            o->anti++;
            send_msg(w, slot_of[s.part], (opt_msg){s.ev, s.inst, MSG_ANTI});
        } else {
            cancel_local(w, s.inst, s.part, s.ev);
        }
    }
    o->ncancel = 0;
}

/* ev arrives for partition `part` of this slot: roll its target back first
 * if it has handled a later event (a straggler), then queue it. */
static void deliver_local(seer_worker *w, uint32_t inst, uint32_t part, seer_event *ev)
{
    seer_inst *in = &w->rt->inst[inst];
    const seer_opt_rec *top = in->opt_log[ev->target];
    if (top && ev_before(ev->time, ev->key, top->ev)) {
        rollback(w, inst, ev->target, ev->time, ev->key);
        run_cancels(w);
    }
    push_pending(w, in, part, ev);
}

static void handle_msg(seer_worker *w, opt_msg m)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[m.inst];
    if (inst_abandoned(in)) {
        /* undone whole after the phase: an event sent during speculation
         * is dropped (its sender never reads it again), an anti-message
         * ignored (its event is dropped too, wherever it is) */
        if (m.kind == MSG_EVENT)
            seer_event_free_local(w, m.ev);
        return;
    }
    const uint32_t part = rt->part.of[m.ev->target];
    if (m.kind == MSG_EVENT) {
        deliver_local(w, m.inst, part, m.ev);
    } else {
        cancel_local(w, m.inst, part, m.ev);
        run_cancels(w);
    }
}

/* `work` reached 0: wake the slots parked in idle() (park.h's waker side). */
static void ring_bell_any(struct seer_opt_shared *sh)
{
    /* seq_cst (the add, the load): the waker's half of park.h's protocol. */
    atomic_fetch_add_explicit(&sh->bell, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&sh->sleepers, memory_order_seq_cst))
        seer_park_wake_all_any(&sh->bell);
}

/* A slot that has waited through its spins and yields: sleep until the bell
 * rings or OPT_PARK_NS pass (mail is looked for after each nap). */
static void nap_any(struct seer_opt_shared *sh)
{
    /* seq_cst (the add, the load): the waiter's half of park.h's protocol;
     * the caller re-reads `work` and its mailboxes with their own orders. */
    atomic_fetch_add_explicit(&sh->sleepers, 1, memory_order_seq_cst);
    const uint32_t b = atomic_load_explicit(&sh->bell, memory_order_seq_cst);
    /* acquire: as idle()'s load of work */
    if (atomic_load_explicit(&sh->work, memory_order_acquire) != 0)
        seer_park_wait_any(&sh->bell, b, OPT_PARK_NS);
    /* relaxed: only a count (the waker's seq_cst load pairs with the add). */
    atomic_fetch_sub_explicit(&sh->sleepers, 1, memory_order_relaxed);
}

/* Handle every message waiting for this slot; then push the backlogs.
 * Returns the messages handled. */
static uint32_t poll_mail(seer_worker *w)
{
    seer_opt_worker *o = w->opt;
    struct seer_opt_shared *sh = w->rt->opt.shared;
    uint32_t n = 0;
    for (uint32_t from = 0; from < sh->slots && o->slot_end == o->slot + 1; from++) {
        if (from == o->slot)
            continue;
        seer_spsc *r = ring_of(sh, from, o->slot);
        while (seer_spsc_ready_consumer(r) && !w->err) {
            const uint32_t h = seer_spsc_front_consumer(r);
            const opt_msg m = ((const opt_msg *)r->buf)[h & r->mask];
            seer_spsc_release_consumer(r, h);
            handle_msg(w, m);
            n++;
        }
    }
    if (n &&
        /* release: the messages' effects (and the counts of what they made
         * us send, added before) come before the count drops; a slot that
         * reads 0 (acquire) has nothing left to wait for */
        atomic_fetch_sub_explicit(&sh->work, n, memory_order_release) == (int64_t)n)
        ring_bell_any(sh);
    if (o->backlogged)
        flush_backlogs(w);
    return n;
}

static int mail_waiting(seer_worker *w)
{
    seer_opt_worker *o = w->opt;
    struct seer_opt_shared *sh = w->rt->opt.shared;
    for (uint32_t from = 0; from < sh->slots && o->slot_end == o->slot + 1; from++)
        if (from != o->slot && seer_spsc_ready_consumer(ring_of(sh, from, o->slot)))
            return 1;
    return 0;
}

/* ---- handling events ---------------------------------------------------------- */

/* Every 16 events: Ctrl-C, and each instance's event budget (past it, the
 * instance runs serially, where the budget is checked exactly). */
__attribute__((cold, noinline)) static void check_stop_local(seer_worker *w, uint32_t inst)
{
    seer_runtime *rt = w->rt;
    seer_opt_worker *o = w->opt;
    if (seer_sigint_count() != rt->sigint_at_call && !w->err)
        seer_worker_error_local(w, SEER_E_INTERRUPTED,
                                "interrupted by SIGINT (Ctrl-C) in step %llu of instance %u: "
                                "the call was abandoned",
                                (unsigned long long)rt->inst[inst].step, inst);
    /* the step's committed phases count: a step's budget is the serial one's */
    const uint64_t net = o->net[inst] > 0 ? (uint64_t)o->net[inst] : 0;
    if (net + rt->inst[inst].opt_done > rt->max_step_events ||
        o->gross[inst] > 4 * rt->max_step_events + 1000000u)
        abandon(&rt->inst[inst]);
}

/* The handler failed, or the speculation was abandoned inside it: drop what
 * it sent (kept, not delivered) and leave the instance to the serial rerun,
 * which reports the failure if it is real. */
static void drop_handling(seer_worker *w, seer_inst *in)
{
    seer_opt_worker *o = w->opt;
    w->err = 0;
    w->msg[0] = '\0';
    for (uint32_t i = 0; i < o->nsent; i++)
        seer_event_free_local(w, o->sent[i].ev);
    o->nsent = 0;
    for (uint32_t i = 0; i < o->ncascade; i++)
        seer_event_free_local(w, o->cascade[i]);
    o->ncascade = 0;
    abandon(in);
}

/* After a handling of (now, K) at entity e: the events it scheduled for e at
 * `now` with keys below K (and those they schedule alike), in key order.
 * The serial executor pops exactly these next -- every other pending event
 * is above (now, K), and a zero-delay event below K for another entity
 * abandons the speculation -- so they belong to the same handling: one log
 * record (the state before the first) covers them all, what they send is
 * sent by it, and a rollback re-creates them by re-running it.  c->cur_key
 * stays K throughout.  Returns 0 when a handler failed or the speculation
 * was abandoned (the caller drops the handling). */
static int run_cascade(seer_worker *w, seer_ctx *c, uint32_t inst, void *st)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    seer_opt_worker *o = w->opt;
    while (o->ncascade) {
        uint32_t best = 0; /* a handful at most: a linear search */
        for (uint32_t i = 1; i < o->ncascade; i++)
            if (o->cascade[i]->key < o->cascade[best]->key)
                best = i;
        seer_event *ev = o->cascade[best];
        o->cascade[best] = o->cascade[--o->ncascade];
        c->cur_type = ev->type;
        const int tracing = SEER_TRACING_EVENTS(w);
        const uint64_t t0 = tracing ? seer_clock_ns() : 0;
        const int rc = rt->model->handle(c, st, ev->type, ev->payload, ev->size);
        if (tracing)
            seer_trace_add_local(w, SEER_TRACE_EVENT, t0, seer_clock_ns(), c->now, inst,
                                 c->self, c->cur_type, 1);
        seer_event_free_local(w, ev);
        if (rc != 0 || w->err != 0 || inst_abandoned(in))
            return 0;
        c->rec->events++;
        o->net[inst]++;
        o->gross[inst]++;
    }
    return 1;
}

/* Pop and handle the next event of partition p of instance `inst` (held by
 * this slot): log first, then the handler, then deliver what it sent.
 * Returns 0 when nothing was popped. */
static int handle_next(seer_worker *w, seer_ctx *c, uint32_t inst, uint32_t p)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    seer_opt_worker *o = w->opt;
    const size_t stride = rt->opt.shared->rec_stride;
    /* room for the record first: a full log abandons, before a pop (unless
     * there is nothing to pop) */
    if (__builtin_expect(!seer_arena_room_owner(&o->recs, stride), 0)) {
        if (seer_squeue_min_time_owner(&in->parts[p]) >= in->spec_end)
            return 0;
        if (o->sends.used >= o->cap ||
            seer_arena_next_owner(&o->recs, stride, o->chunk, o->cap - o->sends.used, 0) != 0) {
            abandon(in);
            return 0;
        }
    }
    int qerr = 0;
    seer_event *ev = seer_squeue_pop_before_owner(&in->parts[p], in->spec_end, &qerr);
    if (!ev) {
        if (qerr && !w->err)
            seer_worker_error_local(w, qerr, "out of memory for an event queue (model '%s')",
                                    rt->model->name);
        return 0;
    }
    if (ev->flags & SEER_EV_CANCEL) {
        rt->opt.shared->ncancelled[(size_t)inst * rt->part.n + p]--;
        seer_event_free_local(w, ev);
        return 1;
    }
    const uint32_t e = ev->target;
    void *st = seer_inst_state(rt, in, e);
    seer_opt_rec *r = (seer_opt_rec *)(void *)o->recs.p;
    o->recs.p += stride;
    memcpy(r->state, st, rt->sz.entity_size);
    r->rec = in->recs[e];
    r->ev = ev;
    r->prev = in->opt_log[e];
    r->sent = NULL;
    r->nsent = 0;
    r->inst = inst;
    r->handled = 1;
    in->opt_log[e] = r;
    ev->flags |= SEER_EV_HANDLED;

    seer_ctx_enter_entity(c, e);
    c->now = ev->time;
    c->cur_type = ev->type;
    c->cur_key = ev->key;
    o->nsent = 0;
    const int tracing = SEER_TRACING_EVENTS(w);
    const uint64_t t0 = tracing ? seer_clock_ns() : 0;
    const int rc = rt->model->handle(c, st, ev->type, ev->payload, ev->size);
    if (tracing)
        seer_trace_add_local(w, SEER_TRACE_EVENT, t0, seer_clock_ns(), c->now, inst, e,
                             c->cur_type, 1);
    if (__builtin_expect(rc != 0 || w->err != 0 || inst_abandoned(in), 0)) {
        drop_handling(w, in);
        return 1;
    }
    c->rec->events++;
    o->net[inst]++;
    o->gross[inst]++;
    if (__builtin_expect(o->ncascade != 0, 0)) {
        const uint64_t before = o->gross[inst];
        if (!run_cascade(w, c, inst, st)) {
            drop_handling(w, in);
            return 1;
        }
        r->handled += (uint32_t)(o->gross[inst] - before);
    }
    const uint32_t ns = o->nsent;
    if (ns) {
        opt_sent *sent = seer_arena_alloc_owner(&o->sends, ns * sizeof *sent, o->chunk, 0, 1);
        if (__builtin_expect(!sent, 0)) {
            drop_handling(w, in);
            return 1;
        }
        memcpy(sent, o->sent, ns * sizeof *sent);
        r->sent = sent;
        r->nsent = ns;
        o->nsent = 0;
        const uint32_t *slot_of = rt->opt.shared->slot_of;
        for (uint32_t i = 0; i < ns && !w->err; i++) {
            if (held(o, slot_of[sent[i].part]))
                deliver_local(w, inst, sent[i].part, sent[i].ev);
            else
                send_msg(w, slot_of[sent[i].part], (opt_msg){sent[i].ev, inst, MSG_EVENT});
        }
    }
    if (__builtin_expect((++o->tick & 15u) == 0, 0))
        check_stop_local(w, inst);
    return 1;
}

int seer_opt_schedule_local(seer_ctx *c, seer_event *ev)
{
    seer_worker *w = c->w;
    seer_opt_worker *o = w->opt;
    ev->flags = c->rt->opt.epoch << SEER_EV_EPOCH_SHIFT; /* this speculation's */
    if (__builtin_expect(ev->time == c->now && ev->key < c->cur_key, 0)) {
        /* non-monotone: the serial executor handles it next, before the
         * events of (now, key) above it.  For this entity itself that is
         * part of the same handling (run_cascade); for another entity it is
         * an order speculation by (time, key) does not reproduce. */
        if (ev->target == c->self &&
            SEER_VEC_GROW_OWNER(o->cascade, o->cascade_cap, (uint64_t)o->ncascade + 1) == SEER_OK) {
            o->cascade[o->ncascade++] = ev;
            return SEER_OK;
        }
        abandon(c->inst);
        seer_event_free_local(w, ev);
        return SEER_OK;
    }
    if (__builtin_expect(SEER_VEC_GROW_OWNER(o->sent, o->sent_cap, (uint64_t)o->nsent + 1) !=
                             SEER_OK,
                         0)) {
        abandon(c->inst);
        seer_event_free_local(w, ev);
        return SEER_OK;
    }
    o->sent[o->nsent++] = (opt_sent){ev, c->rt->part.of[ev->target], c->inst_idx};
    return SEER_OK;
}

/* The partition of this slot, of instance `inst`, with the earliest event
 * below the phase's horizon; UINT32_MAX when none. */
static inline uint32_t next_part(const seer_inst *in, uint32_t p0, uint32_t p1)
{
    uint32_t best = UINT32_MAX;
    seer_time bt = in->spec_end;
    for (uint32_t p = p0; p < p1; p++) {
        const seer_time t = seer_squeue_min_time_owner(&in->parts[p]);
        if (t < bt) {
            bt = t;
            best = p;
        }
    }
    return best;
}

/* Up to OPT_BATCH events of the next instance with work (round robin from
 * *rr).  Returns the events popped (0: no work anywhere). */
static uint32_t run_batch(seer_worker *w, seer_ctx *c, uint32_t p0, uint32_t p1, uint32_t *rr)
{
    seer_runtime *rt = w->rt;
    for (uint32_t j = 0; j < rt->call.nsel; j++) {
        uint32_t k = *rr + j;
        if (k >= rt->call.nsel)
            k -= rt->call.nsel;
        const uint32_t inst = rt->call.sel[k];
        seer_inst *in = &rt->inst[inst];
        if (inst_abandoned(in))
            continue;
        c->inst = in;
        c->inst_idx = inst;
        uint32_t n = 0;
        uint32_t p;
        /* a slot of one partition pops it directly (the pop finds nothing
         * below the horizon just as fast as next_part would) */
        while (n < OPT_BATCH && !w->err && !inst_abandoned(in) &&
               (p = p1 == p0 + 1 ? p0 : next_part(in, p0, p1)) != UINT32_MAX) {
            if (!handle_next(w, c, inst, p))
                break;
            n++;
        }
        if (n) {
            *rr = k + 1 < rt->call.nsel ? k + 1 : 0;
            return n;
        }
    }
    return 0;
}

/* Nothing left to do here: leave `work` (each slot held counts one), and
 * wait for a message (then count back in: returns 0) or for the end of the
 * phase (returns 1; also on an abort). */
static int idle_wait(seer_worker *w)
{
    seer_runtime *rt = w->rt;
    struct seer_opt_shared *sh = rt->opt.shared;
    const int64_t held_n = (int64_t)(w->opt->slot_end - w->opt->slot);
    /* acq_rel: release what this slot did (the last decrement is read by the
     * slots leaving the phase); acquire: if we make it 0, everybody else's */
    if (atomic_fetch_sub_explicit(&sh->work, held_n, memory_order_acq_rel) == held_n) {
        ring_bell_any(sh);
        return 1;
    }
    for (uint32_t spins = 0;; spins++) {
        if (seer_aborted_any(rt))
            return 1;
        /* acquire: pairs with the release decrements (above, poll_mail) */
        if (atomic_load_explicit(&sh->work, memory_order_acquire) == 0)
            return 1;
        if (mail_waiting(w)) {
            /* relaxed: the waiting message is still counted, so `work`
             * cannot reach 0 before this increment (only we retire it) */
            atomic_fetch_add_explicit(&sh->work, held_n, memory_order_relaxed);
            return 0;
        }
        if ((spins & 1023u) == 1023u && seer_sigint_count() != rt->sigint_at_call) {
            seer_worker_error_local(w, SEER_E_INTERRUPTED,
                                    "interrupted by SIGINT (Ctrl-C) during a step of %u "
                                    "instance(s): the call was abandoned",
                                    rt->call.nsel);
            seer_propagate_error_local(w);
            return 1;
        }
        if (spins < OPT_SPINS)
            seer_cpu_relax();
        else if (spins < OPT_SPINS + OPT_YIELDS)
            sched_yield();
        else
            nap_any(sh);
    }
}

/* idle_wait, the caller's time in it counted with its waits for phases
 * (w->wait_ns: a peer descheduled while others wait for its messages is a
 * pool that lost its threads, company.c) */
static int idle(seer_worker *w)
{
    if (w->id)
        return idle_wait(w);
    const uint64_t t0 = seer_clock_ns();
    const int r = idle_wait(w);
    w->wait_ns += seer_clock_ns() - t0;
    return r;
}

/* ---- commit ---------------------------------------------------------------------- */

struct commit_arg {
    seer_worker *w;
    int all; /* abort: free every record's event, abandoned or not */
};

static void commit_rec(void *arg, void *rec)
{
    seer_opt_rec *r = rec;
    struct commit_arg *a = arg;
    if (!r->ev || (!a->all && inst_abandoned(&a->w->rt->inst[r->inst])))
        return;
    seer_event_free_local(a->w, r->ev);
    r->ev = NULL;
}

/* The phase is over: this slot's handlings are final.  Free their events,
 * forget the logs, and note each instance's earliest pending time here
 * (w->local_min: the completer opens the next phase from it).  Cancelled
 * events still pending (at or past the horizon) stay, marked: a later phase
 * pops and frees them, the completer drops the rest when the step's events
 * are done (drop_cancelled_completer). */
static void commit_slot(seer_worker *w, uint32_t p0, uint32_t p1)
{
    seer_runtime *rt = w->rt;
    seer_opt_worker *o = w->opt;
    struct commit_arg a = {w, 0};
    seer_arena_each_owner(&o->recs, rt->opt.shared->rec_stride, commit_rec, &a);
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        const uint32_t inst = rt->call.sel[k];
        seer_inst *in = &rt->inst[inst];
        if (inst_abandoned(in))
            continue;
        w->events += (uint64_t)o->net[inst];
        const uint32_t e0 = rt->part.start[p0], e1 = rt->part.start[p1];
        memset(in->opt_log + e0, 0, (size_t)(e1 - e0) * sizeof *in->opt_log);
        for (uint32_t p = p0; p < p1; p++)
            seer_note_window_min_local(w, inst, seer_squeue_min_time_owner(&in->parts[p]));
    }
}

/* ---- the speculation phase ------------------------------------------------------- */

void seer_opt_run_slot(seer_worker *w, seer_ctx *c, uint32_t slot, uint32_t slot_end,
                       uint32_t bank)
{
    seer_runtime *rt = w->rt;
    struct seer_opt_shared *sh = rt->opt.shared;
    seer_opt_worker *o = w->opt;
    const uint32_t p0 = sh->first[slot], p1 = sh->first[slot_end];
    o->slot = slot;
    o->slot_end = slot_end;
    seer_arena_reset_owner(&o->recs);
    seer_arena_reset_owner(&o->sends);
    o->nsent = o->ncancel = 0;
    /* net and gross are 0 (the completer zeroes them after each phase);
     * the act phase's outboxes hold events for the step's first phase */
    if (rt->opt.phase == 0)
        for (uint32_t k = 0; k < rt->call.nsel; k++)
            for (uint32_t p = p0; p < p1; p++)
                seer_merge_outboxes(w, &rt->inst[rt->call.sel[k]], rt->call.sel[k], p, bank);
    c->phase = PHASE_EVENT;
    c->spec = 1;
    uint32_t rr = 0, stalls = 0;
    int done = 0;
    while (!done) {
        if (w->err)
            seer_propagate_error_local(w);
        if (seer_aborted_any(rt))
            break;
        poll_mail(w);
        if (w->err)
            continue;
        if (run_batch(w, c, p0, p1, &rr) || w->err) {
            stalls = 0;
            continue;
        }
        if (o->backlogged) { /* a receiver is behind: let it run */
            if (++stalls > OPT_SPINS + OPT_YIELDS)
                nap_any(sh);
            else if (stalls > OPT_SPINS)
                sched_yield();
            else
                seer_cpu_relax();
            continue;
        }
        /* no event below the boundary, nothing to push: wait */
        done = idle(w);
    }
    c->spec = 0;
    if (!seer_aborted_any(rt))
        commit_slot(w, p0, p1);
}

void seer_opt_open_completer(seer_runtime *rt)
{
    /* relaxed: published by the release store of the ticket that opens the
     * phase (every slot claims it with an acquire CAS before touching it) */
    atomic_store_explicit(&rt->opt.shared->work, (int64_t)rt->opt.shared->slots,
                          memory_order_relaxed);
}

int seer_opt_speculates(const seer_runtime *rt)
{
    const seer_time L = rt->sz.lookahead;
    if (!(L > 0.0) || rt->sz.step_duration > (double)SEER_OPT_WINDOWS_MAX * L)
        return 1;
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        const seer_time b = rt->inst[rt->call.sel[k]].boundary;
        if (!(b + L > b))
            return 1;
    }
    return 0;
}

uint32_t seer_opt_slots(const seer_runtime *rt)
{
    return rt->opt.shared ? rt->opt.shared->slots : 0;
}

/* After an abort: drop every message in flight and every log (the failed
 * instances' queues are freed by the host, release_failed in runtime.c).
 * The events go to the free list of w, the completer's own: worker 0's
 * belongs to the host thread, which may be restocking it meanwhile (a call
 * whose other workers ran every phase up to here before the host joined). */
static void drop_msg(void *arg, void *elem)
{
    const opt_msg *m = elem;
    if (m->kind == MSG_EVENT)
        seer_event_free_local(arg, m->ev);
}

void seer_opt_drop_everything_completer(seer_runtime *rt, seer_worker *w)
{
    struct seer_opt_shared *sh = rt->opt.shared;
    for (uint32_t s = 0; s < sh->slots * sh->slots; s++) {
        /* quiescent: no slot runs (the phase completed: acq_rel completions) */
        seer_spsc_drain_quiescent(&sh->rings[s], drop_msg, sizeof(opt_msg), w);
    }
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        seer_opt_worker *o = rt->pool.workers[t].opt;
        if (!o)
            continue;
        for (uint32_t to = 0; to < o->slots; to++) {
            opt_backlog *b = &o->backlog[to];
            for (uint32_t k = b->head; k < b->n; k++)
                if (b->a[k].kind == MSG_EVENT)
                    seer_event_free_local(w, b->a[k].ev);
            b->head = b->n = 0;
        }
        o->backlogged = 0;
        o->ncancel = 0;
        o->nsent = 0;
        o->ncascade = 0; /* always empty between handlings */
        struct commit_arg a = {w, 1};
        seer_arena_each_owner(&o->recs, sh->rec_stride, commit_rec, &a);
        seer_arena_reset_owner(&o->recs);
        seer_arena_reset_owner(&o->sends);
    }
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        seer_inst *in = &rt->inst[rt->call.sel[k]];
        memset(in->opt_log, 0, rt->sz.num_entities * sizeof *in->opt_log);
    }
    memset(sh->ncancelled, 0, (size_t)sh->B * sh->nparts * sizeof *sh->ncancelled);
}
