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
 * (seer_opt_serial_step).  So do handler errors during speculation (a
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
 * allocation per event once warm), bounded by rt->log_limit split between
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
 * Threads: seer_opt_prepare and seer_opt_serial_step run on the host
 * between calls; seer_opt_open_completer and seer_opt_finish_completer on
 * the thread completing the phase before and the speculation phase itself;
 * seer_opt_run_slot and everything under it on the worker holding the slot;
 * seer_opt_schedule_local inside a handler that worker runs.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define OPT_BATCH 16u                 /* events between looks at the mailboxes  */
#define OPT_RING_MIN 64u              /* messages a ring holds, at least ...     */
#define OPT_RING_MAX 1024u            /* ... and at most                         */
#define OPT_SPINS 256u                /* idle pauses before yielding the CPU     */
#define OPT_CHUNK_MAX (1u << 20)      /* arena chunk bytes (smaller when the
                                         limit is small)                          */
#define OPT_CHUNK_MIN (16u << 10)
#define OPT_LOG_MIN (64ull << 20)     /* the default log limit, at least         */
#define OPT_EPOCH_MAX ((1u << (32 - SEER_EV_EPOCH_SHIFT)) - 1u)

/* ---- the structures --------------------------------------------------------- */

/* An event a handling sent, and where to: its target's partition (so that
 * cancelling it never reads the event, which another slot may own). */
typedef struct opt_sent {
    seer_event *ev;
    uint32_t part;
    uint32_t inst;
} opt_sent;

/* One handling in an entity's log. */
typedef struct seer_opt_rec {
    struct seer_opt_rec *prev; /* the entity's previous handling this step     */
    seer_event *ev;            /* the event (NULL once undone)                 */
    opt_sent *sent;            /* the events it sent                           */
    uint32_t nsent;
    uint32_t inst;
    uint32_t handled;          /* handlings it covers: 1 + its cascade (see
                                  run_cascade)                                  */
    seer_entity_rec rec;       /* the entity's runtime record before it        */
    alignas(16) unsigned char state[]; /* the entity's state before it        */
} seer_opt_rec;

enum { MSG_EVENT = 0, MSG_ANTI = 1 };

typedef struct opt_msg {
    seer_event *ev;
    uint32_t inst;
    uint32_t kind; /* MSG_* */
} opt_msg;

/* A single-producer single-consumer ring of messages from one slot to
 * another: the producer's index and its copy of the consumer's on one line,
 * the consumer's index and its copy of the producer's on another. */
typedef struct opt_ring {
    alignas(SEER_CACHE_LINE) _Atomic uint32_t tail; /* next slot the producer fills */
    uint32_t head_seen;                             /* producer's copy of head      */
    alignas(SEER_CACHE_LINE) _Atomic uint32_t head; /* next slot the consumer reads */
    uint32_t tail_seen;                             /* consumer's copy of tail      */
    alignas(SEER_CACHE_LINE) opt_msg *buf;          /* set up by the host           */
    uint32_t mask;
} opt_ring;

/* Messages a slot could not push yet (its ring to that slot was full). */
typedef struct opt_backlog {
    opt_msg *a;
    uint32_t head, n, cap;
} opt_backlog;

typedef struct opt_chunk {
    struct opt_chunk *next;
    size_t size; /* bytes of mem */
    size_t fill; /* bytes used this step (set when the arena moves past it) */
    alignas(16) unsigned char mem[];
} opt_chunk;

/* A bump allocator over chunks kept from step to step. */
typedef struct opt_arena {
    opt_chunk *first, *cur;
    unsigned char *p, *end;
    size_t used; /* bytes of the chunks this step has started */
} opt_arena;

typedef struct seer_opt_worker {
    uint32_t slot;          /* the slot this worker holds in the current phase */
    opt_arena recs;         /* log records (one stride each)                   */
    opt_arena sends;        /* their lists of sent events                      */
    size_t cap;             /* bytes the two arenas may take in a step         */
    size_t chunk;           /* bytes of a new chunk                            */
    opt_sent *sent;         /* the current handler's sends                     */
    uint32_t nsent, sent_cap;
    seer_event **cascade;   /* the current handling's zero-delay events for its
                               own entity below its key (see run_cascade)      */
    uint32_t ncascade, cascade_cap;
    opt_sent *cancel;       /* cancellations to carry out                      */
    uint32_t ncancel, cancel_cap;
    opt_backlog *backlog;   /* [slots]: by receiving slot                      */
    uint32_t backlogged;    /* messages in the backlogs                        */
    int64_t *net;           /* [B]: handlings kept (minus undone) this step    */
    uint64_t *gross;        /* [B]: handlings this step                        */
    uint32_t *ncancelled;   /* [B * nparts]: cancelled events pending          */
    uint32_t B, nparts, slots; /* what the arrays were sized for               */
    /* statistics of the current call (the completer adds them up) */
    uint64_t rollbacks, undone, anti;
    uint64_t tick;          /* events since the last Ctrl-C / budget check     */
} seer_opt_worker;

struct seer_opt_shared {
    /* active slots + messages in flight: the phase ends at 0 */
    alignas(SEER_CACHE_LINE) _Atomic int64_t work;
    char pad_[SEER_CACHE_LINE - sizeof(int64_t)];
    uint32_t slots;     /* of the current sizing                        */
    uint32_t nparts;    /* partitions it was cut for                    */
    uint32_t ring_cap;  /* messages per ring                            */
    opt_ring *rings;    /* [slots * slots]: sender * slots + receiver   */
    opt_msg *ring_mem;
    uint32_t *first;    /* [slots + 1]: slot s holds [first[s], first[s+1]) */
    uint32_t *slot_of;  /* [nparts]                                     */
    uint32_t *scratch;  /* [B]: reordering the selection                */
    uint32_t B;
    size_t rec_stride;  /* bytes of one log record                      */
};

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

/* Is ev one of the current speculation's events? */
static inline int ev_spec(const seer_runtime *rt, const seer_event *ev)
{
    return (ev->flags >> SEER_EV_EPOCH_SHIFT) == rt->opt_epoch;
}

static inline int inst_abandoned(seer_inst *in)
{
    /* relaxed: a hint that saves work; an instance any slot abandoned is
     * undone whole after the phase, whose completion orders it */
    return atomic_load_explicit(&in->opt_abandon, memory_order_relaxed) != 0;
}

static void abandon(seer_inst *in)
{
    /* relaxed: see inst_abandoned */
    atomic_store_explicit(&in->opt_abandon, 1, memory_order_relaxed);
}

static int aborted(seer_runtime *rt)
{
    /* relaxed: a worker's error is the call's abort code (parallel.c); a
     * slot that sees it late only works a little longer */
    return atomic_load_explicit(&rt->abort_code, memory_order_relaxed) != 0;
}

static void propagate_error_local(seer_worker *w)
{
    if (w->err) {
        int expected = 0;
        /* relaxed: read by every slot as a hint, and by the completer after
         * the phase completes (acq_rel completions order it) */
        atomic_compare_exchange_strong_explicit(&w->rt->abort_code, &expected, w->err,
                                                memory_order_relaxed, memory_order_relaxed);
    }
}

static int grow(void **a, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return SEER_OK;
    uint64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX)
        return SEER_E_NOMEM;
    void *p = realloc(*a, (size_t)c * elem);
    if (!p)
        return SEER_E_NOMEM;
    *a = p;
    *cap = (uint32_t)c;
    return SEER_OK;
}

/* ---- arenas --------------------------------------------------------------------- */

static void arena_reset(opt_arena *a)
{
    a->cur = a->first;
    a->p = a->first ? a->first->mem : NULL;
    a->end = a->first ? a->first->mem + a->first->size : NULL;
    a->used = a->first ? a->first->size : 0;
    if (a->first)
        a->first->fill = 0;
}

static void arena_free(opt_arena *a)
{
    for (opt_chunk *c = a->first, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    memset(a, 0, sizeof *a);
}

/* Move to the next chunk holding n bytes (reusing the next one, else a new
 * one after the current), unless the step's bytes would pass `cap` (force:
 * ignore it).  0 on success. */
static int arena_next(opt_arena *a, size_t n, size_t chunk, size_t cap, int force)
{
    opt_chunk *next = a->cur ? a->cur->next : a->first;
    if (!next || next->size < n) {
        const size_t size = n > chunk ? n : chunk;
        if (!force && a->used + size > cap)
            return -1;
        opt_chunk *c = malloc(sizeof *c + size);
        if (!c)
            return -1;
        c->size = size;
        c->next = next;
        if (a->cur)
            a->cur->next = c;
        else
            a->first = c;
        next = c;
    } else if (!force && a->used + next->size > cap) {
        return -1;
    }
    if (a->cur)
        a->cur->fill = (size_t)(a->p - a->cur->mem);
    a->cur = next;
    a->cur->fill = 0;
    a->p = next->mem;
    a->end = next->mem + next->size;
    a->used += next->size;
    return 0;
}

static inline void *arena_alloc(opt_arena *a, size_t n, size_t chunk, size_t cap, int force)
{
    if (__builtin_expect(!a->p || (size_t)(a->end - a->p) < n, 0) &&
        arena_next(a, n, chunk, cap, force) != 0)
        return NULL;
    void *r = a->p;
    a->p += n;
    return r;
}

/* The records of an arena, in the order they were taken. */
static void arena_each_rec(opt_arena *a, size_t stride, void (*fn)(void *arg, seer_opt_rec *r),
                           void *arg)
{
    if (!a->cur)
        return;
    for (opt_chunk *c = a->first;; c = c->next) {
        const size_t fill = c == a->cur ? (size_t)(a->p - c->mem) : c->fill;
        for (size_t off = 0; off + stride <= fill; off += stride)
            fn(arg, (seer_opt_rec *)(void *)(c->mem + off));
        if (c == a->cur)
            break;
    }
}

/* ---- mailboxes ------------------------------------------------------------------ */

static inline opt_ring *ring_of(const struct seer_opt_shared *sh, uint32_t from, uint32_t to)
{
    return &sh->rings[(size_t)from * sh->slots + to];
}

/* Producer side: push m unless the ring is full. */
static inline int ring_push(opt_ring *r, opt_msg m)
{
    /* relaxed: only this thread (the producer) writes tail */
    const uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - r->head_seen > r->mask) {
        /* acquire: pairs with the consumer's release store of head, so its
         * reads of the slots it freed happen before we overwrite them */
        r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        if (t - r->head_seen > r->mask)
            return 0;
    }
    r->buf[t & r->mask] = m;
    /* release: publishes the message (and the event it points to, and the
     * count of it in `work`) to the consumer's acquire load of tail */
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return 1;
}

/* Consumer side: is a message waiting? */
static inline int ring_ready(opt_ring *r)
{
    /* relaxed: only this thread (the consumer) writes head */
    const uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h != r->tail_seen)
        return 1;
    /* acquire: pairs with the producer's release store of tail (the
     * messages up to it, and what they point to, are visible) */
    r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    return h != r->tail_seen;
}

/* ---- sending ----------------------------------------------------------------- */

static void send_msg(seer_worker *w, uint32_t to, opt_msg m)
{
    seer_opt_worker *o = w->opt;
    struct seer_opt_shared *sh = w->rt->opt;
    /* relaxed: counted before the message can be seen (the ring's release
     * push orders it before the receiver's acquire and its decrement, so the
     * count never drops to 0 while the message is in flight) */
    atomic_fetch_add_explicit(&sh->work, 1, memory_order_relaxed);
    opt_backlog *b = &o->backlog[to];
    if (b->head == b->n && ring_push(ring_of(sh, o->slot, to), m))
        return;
    if (b->head == b->n)
        b->head = b->n = 0;
    if (grow((void **)&b->a, &b->cap, b->n + 1, sizeof *b->a) != SEER_OK) {
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
    struct seer_opt_shared *sh = w->rt->opt;
    for (uint32_t to = 0; to < sh->slots && o->backlogged; to++) {
        opt_backlog *b = &o->backlog[to];
        opt_ring *r = ring_of(sh, o->slot, to);
        while (b->head < b->n && ring_push(r, b->a[b->head])) {
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
    if (__builtin_expect(grow((void **)&o->cancel, &o->cancel_cap, o->ncancel + 1,
                              sizeof *o->cancel) != SEER_OK, 0)) {
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
    const uint32_t part = rt->part_of[e];
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
    w->opt->ncancelled[(size_t)inst * rt->nparts + part]++;
}

/* Carry out the cancellations rollbacks asked for (which may roll back
 * more entities, and ask for more). */
static void run_cancels(seer_worker *w)
{
    seer_opt_worker *o = w->opt;
    const uint32_t *slot_of = w->rt->opt->slot_of;
    while (o->ncancel && !w->err) {
        const opt_sent s = o->cancel[--o->ncancel];
        if (slot_of[s.part] != o->slot) {
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
    const uint32_t part = rt->part_of[m.ev->target];
    if (m.kind == MSG_EVENT) {
        deliver_local(w, m.inst, part, m.ev);
    } else {
        cancel_local(w, m.inst, part, m.ev);
        run_cancels(w);
    }
}

/* Handle every message waiting for this slot; then push the backlogs.
 * Returns the messages handled. */
static uint32_t poll_mail(seer_worker *w)
{
    seer_opt_worker *o = w->opt;
    struct seer_opt_shared *sh = w->rt->opt;
    uint32_t n = 0;
    for (uint32_t from = 0; from < sh->slots; from++) {
        if (from == o->slot)
            continue;
        opt_ring *r = ring_of(sh, from, o->slot);
        while (ring_ready(r) && !w->err) {
            /* relaxed: only this thread writes head */
            uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
            const opt_msg m = r->buf[h & r->mask];
            /* release: our read of the slot happens before the producer
             * reuses it (its acquire load of head) */
            atomic_store_explicit(&r->head, h + 1, memory_order_release);
            handle_msg(w, m);
            n++;
        }
    }
    if (n)
        /* release: the messages' effects (and the counts of what they made
         * us send, added before) come before the count drops; a slot that
         * reads 0 (acquire) has nothing left to wait for */
        atomic_fetch_sub_explicit(&sh->work, n, memory_order_release);
    if (o->backlogged)
        flush_backlogs(w);
    return n;
}

static int mail_waiting(seer_worker *w)
{
    seer_opt_worker *o = w->opt;
    struct seer_opt_shared *sh = w->rt->opt;
    for (uint32_t from = 0; from < sh->slots; from++)
        if (from != o->slot && ring_ready(ring_of(sh, from, o->slot)))
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
    if (o->net[inst] > (int64_t)rt->max_step_events ||
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
        const int tracing = SEER_TRACING(w);
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
    const size_t stride = rt->opt->rec_stride;
    /* room for the record first: a full log abandons, before a pop */
    if (__builtin_expect(!o->recs.p || (size_t)(o->recs.end - o->recs.p) < stride, 0) &&
        (o->sends.used >= o->cap ||
         arena_next(&o->recs, stride, o->chunk, o->cap - o->sends.used, 0) != 0)) {
        abandon(in);
        return 0;
    }
    int qerr = 0;
    seer_event *ev = seer_squeue_pop_before_owner(&in->parts[p], in->boundary, &qerr);
    if (!ev) {
        if (qerr && !w->err)
            seer_worker_error_local(w, qerr, "out of memory for an event queue (model '%s')",
                                    rt->model->name);
        return 0;
    }
    if (ev->flags & SEER_EV_CANCEL) {
        o->ncancelled[(size_t)inst * rt->nparts + p]--;
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
    const int tracing = SEER_TRACING(w);
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
        opt_sent *sent = arena_alloc(&o->sends, ns * sizeof *sent, o->chunk, 0, 1);
        if (__builtin_expect(!sent, 0)) {
            drop_handling(w, in);
            return 1;
        }
        memcpy(sent, o->sent, ns * sizeof *sent);
        r->sent = sent;
        r->nsent = ns;
        o->nsent = 0;
        const uint32_t *slot_of = rt->opt->slot_of;
        for (uint32_t i = 0; i < ns && !w->err; i++) {
            if (slot_of[sent[i].part] == o->slot)
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
    if (__builtin_expect(ev->time == c->now && ev->key < c->cur_key, 0)) {
        /* non-monotone: the serial executor handles it next, before the
         * events of (now, key) above it.  For this entity itself that is
         * part of the same handling (run_cascade); for another entity it is
         * an order speculation by (time, key) does not reproduce. */
        if (ev->target == c->self &&
            grow((void **)&o->cascade, &o->cascade_cap, o->ncascade + 1,
                 sizeof *o->cascade) == SEER_OK) {
            o->cascade[o->ncascade++] = ev;
            return SEER_OK;
        }
        abandon(c->inst);
        seer_event_free_local(w, ev);
        return SEER_OK;
    }
    if (__builtin_expect(grow((void **)&o->sent, &o->sent_cap, o->nsent + 1, sizeof *o->sent) !=
                             SEER_OK,
                         0)) {
        abandon(c->inst);
        seer_event_free_local(w, ev);
        return SEER_OK;
    }
    o->sent[o->nsent++] = (opt_sent){ev, c->rt->part_of[ev->target], c->inst_idx};
    return SEER_OK;
}

/* The partition of this slot, of instance `inst`, with the earliest event
 * below the boundary; UINT32_MAX when none. */
static inline uint32_t next_part(const seer_inst *in, uint32_t p0, uint32_t p1)
{
    if (p1 == p0 + 1)
        return seer_squeue_min_time_owner(&in->parts[p0]) < in->boundary ? p0 : UINT32_MAX;
    uint32_t best = UINT32_MAX;
    seer_time bt = in->boundary;
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
    for (uint32_t j = 0; j < rt->nsel; j++) {
        uint32_t k = *rr + j;
        if (k >= rt->nsel)
            k -= rt->nsel;
        const uint32_t inst = rt->sel[k];
        seer_inst *in = &rt->inst[inst];
        if (inst_abandoned(in))
            continue;
        c->inst = in;
        c->inst_idx = inst;
        uint32_t n = 0;
        uint32_t p;
        while (n < OPT_BATCH && !w->err && !inst_abandoned(in) &&
               (p = next_part(in, p0, p1)) != UINT32_MAX) {
            if (!handle_next(w, c, inst, p))
                break;
            n++;
        }
        if (n) {
            *rr = k + 1 < rt->nsel ? k + 1 : 0;
            return n;
        }
    }
    return 0;
}

/* Nothing left to do here: leave `work`, and wait for a message (then
 * count this slot back in: returns 0) or for the end of the phase (returns
 * 1; also on an abort). */
static int idle(seer_worker *w)
{
    seer_runtime *rt = w->rt;
    struct seer_opt_shared *sh = rt->opt;
    /* acq_rel: release what this slot did (the last decrement is read by the
     * slots leaving the phase); acquire: if we make it 0, everybody else's */
    if (atomic_fetch_sub_explicit(&sh->work, 1, memory_order_acq_rel) == 1)
        return 1;
    for (uint32_t spins = 0;; spins++) {
        if (aborted(rt))
            return 1;
        /* acquire: pairs with the release decrements (above, poll_mail) */
        if (atomic_load_explicit(&sh->work, memory_order_acquire) == 0)
            return 1;
        if (mail_waiting(w)) {
            /* relaxed: the waiting message is still counted, so `work`
             * cannot reach 0 before this increment (only we retire it) */
            atomic_fetch_add_explicit(&sh->work, 1, memory_order_relaxed);
            return 0;
        }
        if ((spins & 1023u) == 1023u && seer_sigint_count() != rt->sigint_at_call) {
            seer_worker_error_local(w, SEER_E_INTERRUPTED,
                                    "interrupted by SIGINT (Ctrl-C) during a step of %u "
                                    "instance(s): the call was abandoned",
                                    rt->nsel);
            propagate_error_local(w);
            return 1;
        }
        if (spins < OPT_SPINS)
            seer_cpu_relax();
        else
            sched_yield();
    }
}

/* ---- commit ---------------------------------------------------------------------- */

struct commit_arg {
    seer_worker *w;
    int all; /* abort: free every record's event, abandoned or not */
};

static void commit_rec(void *arg, seer_opt_rec *r)
{
    struct commit_arg *a = arg;
    if (!r->ev || (!a->all && inst_abandoned(&a->w->rt->inst[r->inst])))
        return;
    seer_event_free_local(a->w, r->ev);
    r->ev = NULL;
}

static int keep_uncancelled(void *arg, seer_event *ev)
{
    if (ev->flags & SEER_EV_CANCEL) {
        seer_event_free_local(arg, ev);
        return 0;
    }
    return 1;
}

/* The phase is over: this slot's handlings are final.  Free their events,
 * forget the logs, drop the cancelled events still pending (at or past the
 * boundary). */
static void commit_slot(seer_worker *w, uint32_t p0, uint32_t p1)
{
    seer_runtime *rt = w->rt;
    seer_opt_worker *o = w->opt;
    struct commit_arg a = {w, 0};
    arena_each_rec(&o->recs, rt->opt->rec_stride, commit_rec, &a);
    for (uint32_t k = 0; k < rt->nsel; k++) {
        const uint32_t inst = rt->sel[k];
        seer_inst *in = &rt->inst[inst];
        if (inst_abandoned(in))
            continue;
        w->events += (uint64_t)o->net[inst];
        const uint32_t e0 = rt->part_start[p0], e1 = rt->part_start[p1];
        memset(in->opt_log + e0, 0, (size_t)(e1 - e0) * sizeof *in->opt_log);
        for (uint32_t p = p0; p < p1; p++) {
            uint32_t *nc = &o->ncancelled[(size_t)inst * rt->nparts + p];
            if (*nc) {
                seer_squeue_filter_owner(&in->parts[p], keep_uncancelled, w);
                *nc = 0;
            }
        }
    }
}

/* ---- the speculation phase ------------------------------------------------------- */

void seer_opt_run_slot(seer_worker *w, seer_ctx *c, uint32_t slot, uint32_t bank)
{
    seer_runtime *rt = w->rt;
    struct seer_opt_shared *sh = rt->opt;
    seer_opt_worker *o = w->opt;
    const uint32_t p0 = sh->first[slot], p1 = sh->first[slot + 1];
    o->slot = slot;
    arena_reset(&o->recs);
    arena_reset(&o->sends);
    o->nsent = o->ncancel = 0;
    for (uint32_t k = 0; k < rt->nsel; k++) {
        const uint32_t inst = rt->sel[k];
        o->net[inst] = 0;
        o->gross[inst] = 0;
        for (uint32_t p = p0; p < p1; p++)
            seer_merge_outboxes(w, &rt->inst[inst], inst, p, bank);
    }
    c->phase = PHASE_EVENT;
    c->spec = 1;
    uint32_t rr = 0, stalls = 0;
    int done = 0;
    while (!done) {
        if (w->err)
            propagate_error_local(w);
        if (aborted(rt))
            break;
        poll_mail(w);
        if (w->err)
            continue;
        if (run_batch(w, c, p0, p1, &rr) || w->err) {
            stalls = 0;
            continue;
        }
        if (o->backlogged) { /* a receiver is behind: let it run */
            if (++stalls > OPT_SPINS)
                sched_yield();
            else
                seer_cpu_relax();
            continue;
        }
        /* no event below the boundary, nothing to push: wait */
        done = idle(w);
    }
    c->spec = 0;
    if (!aborted(rt))
        commit_slot(w, p0, p1);
}

void seer_opt_open_completer(seer_runtime *rt)
{
    /* relaxed: published by the release store of the ticket that opens the
     * phase (every slot claims it with an acquire CAS before touching it) */
    atomic_store_explicit(&rt->opt->work, (int64_t)rt->opt->slots, memory_order_relaxed);
}

int seer_opt_speculates(const seer_runtime *rt)
{
    const seer_time L = rt->sz.lookahead;
    if (!(L > 0.0) || rt->sz.step_duration > (double)SEER_OPT_WINDOWS_MAX * L)
        return 1;
    for (uint32_t k = 0; k < rt->nsel; k++) {
        const seer_time b = rt->inst[rt->sel[k]].boundary;
        if (!(b + L > b))
            return 1;
    }
    return 0;
}

uint32_t seer_opt_slots(const seer_runtime *rt) { return rt->opt ? rt->opt->slots : 0; }

/* After an abort: drop every message in flight and every log (the failed
 * instances' queues are freed by the host, release_failed in runtime.c).
 * The events go to the free list of w, the completer's own: worker 0's
 * belongs to the host thread, which may be restocking it meanwhile (a call
 * whose other workers ran every phase up to here before the host joined). */
static void drop_everything_completer(seer_runtime *rt, seer_worker *w)
{
    struct seer_opt_shared *sh = rt->opt;
    for (uint32_t s = 0; s < sh->slots * sh->slots; s++) {
        opt_ring *r = &sh->rings[s];
        /* relaxed: no slot runs (the phase completed: acq_rel completions) */
        uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
        const uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        for (; h != t; h++)
            if (r->buf[h & r->mask].kind == MSG_EVENT)
                seer_event_free_local(w, r->buf[h & r->mask].ev);
        /* relaxed: as above */
        atomic_store_explicit(&r->head, h, memory_order_relaxed);
        r->tail_seen = h;
        r->head_seen = h;
    }
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        seer_opt_worker *o = rt->workers[t].opt;
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
        arena_each_rec(&o->recs, sh->rec_stride, commit_rec, &a);
        arena_reset(&o->recs);
        arena_reset(&o->sends);
        memset(o->ncancelled, 0, (size_t)o->B * o->nparts * sizeof *o->ncancelled);
    }
    for (uint32_t k = 0; k < rt->nsel; k++) {
        seer_inst *in = &rt->inst[rt->sel[k]];
        memset(in->opt_log, 0, rt->sz.num_entities * sizeof *in->opt_log);
    }
}

void seer_opt_finish_completer(seer_runtime *rt, seer_worker *w, int was_aborted)
{
    struct seer_opt_shared *sh = rt->opt;
    uint64_t peak = 0;
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        seer_opt_worker *o = rt->workers[t].opt;
        if (!o)
            continue;
        rt->opt_rollbacks += o->rollbacks;
        rt->opt_rolled_back += o->undone;
        rt->opt_anti += o->anti;
        o->rollbacks = o->undone = o->anti = 0;
        peak += o->recs.used + o->sends.used;
    }
    if (peak > rt->opt_log_peak)
        rt->opt_log_peak = peak;
    if (was_aborted) {
        /* every selected instance fails: free what speculation holds */
        drop_everything_completer(rt, w);
        rt->opt_abandoned = 0;
        return;
    }
    /* the abandoned instances to the end of the selection: the boundary
     * phases run the others; the host steps them serially afterwards */
    uint32_t n = 0, nab = 0;
    for (uint32_t k = 0; k < rt->nsel; k++) {
        const uint32_t i = rt->sel[k];
        if (inst_abandoned(&rt->inst[i]))
            sh->scratch[nab++] = i;
        else
            rt->sel[n++] = i;
    }
    memcpy(rt->sel + n, sh->scratch, nab * sizeof *rt->sel);
    rt->nsel = n;
    rt->opt_abandoned = nab;
}

/* ---- an abandoned speculation: undo, then the step serially ----------------------- */

static int keep_unspeculated(void *arg, seer_event *ev)
{
    seer_worker *w = arg;
    if (ev_spec(w->rt, ev)) {
        seer_event_free_local(w, ev);
        return 0;
    }
    return 1;
}

int seer_opt_serial_step(seer_runtime *rt, uint32_t i)
{
    seer_inst *in = &rt->inst[i];
    seer_worker *w = &rt->workers[0];
    int rc = SEER_OK;
    /* the speculation's events go; the handled events of before it are
     * pending again; every entity as at the step's start (after act) */
    for (uint32_t p = 0; p < rt->nparts; p++)
        seer_squeue_filter_owner(&in->parts[p], keep_unspeculated, w);
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
            if (seer_squeue_push_owner(&in->parts[rt->part_of[e]], ev) != SEER_OK) {
                seer_event_free_local(w, ev);
                rc = SEER_E_NOMEM;
            }
        }
        if (oldest) {
            memcpy(seer_inst_state(rt, in, e), oldest->state, rt->sz.entity_size);
            in->recs[e] = oldest->rec;
        }
        in->opt_log[e] = NULL;
    }
    /* relaxed: the host, between the phases that read it */
    atomic_store_explicit(&in->opt_abandon, 0, memory_order_relaxed);
    rt->opt_serial_steps++;
    if (rc != SEER_OK) {
        seer_fail(rt, "out of memory undoing instance %u's speculation", i);
        return rc;
    }
    return seer_step_serially(rt, i, 0);
}

void seer_opt_drop(seer_runtime *rt, uint32_t i)
{
    seer_inst *in = &rt->inst[i];
    seer_worker *w = &rt->workers[0];
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

/* ---- sizing (host) -------------------------------------------------------------- */

static int clear_epoch(void *arg, seer_event *ev)
{
    (void)arg;
    ev->flags &= (1u << SEER_EV_EPOCH_SHIFT) - 1u;
    return 1;
}

static void free_worker_opt(seer_opt_worker *o)
{
    if (!o)
        return;
    arena_free(&o->recs);
    arena_free(&o->sends);
    free(o->sent);
    free(o->cascade);
    free(o->cancel);
    for (uint32_t s = 0; o->backlog && s < o->slots; s++)
        free(o->backlog[s].a);
    free(o->backlog);
    free(o->net);
    free(o->gross);
    free(o->ncancelled);
    free(o);
}

static void free_shared(struct seer_opt_shared *sh)
{
    if (!sh)
        return;
    free(sh->rings);
    free(sh->ring_mem);
    free(sh->first);
    free(sh->slot_of);
    free(sh->scratch);
    free(sh);
}

void seer_opt_release(seer_runtime *rt)
{
    for (uint32_t t = 0; rt->workers && t < rt->nthreads; t++) {
        free_worker_opt(rt->workers[t].opt);
        rt->workers[t].opt = NULL;
    }
    free_shared(rt->opt);
    rt->opt = NULL;
    /* the logs point into the arenas, the rings may hold messages: between
     * calls both are empty, but a child of fork() may have been cut in the
     * middle of a call */
    for (uint32_t i = 0; rt->inst && i < rt->B; i++)
        if (rt->inst[i].opt_log)
            memset(rt->inst[i].opt_log, 0, rt->sz.num_entities * sizeof *rt->inst[i].opt_log);
}

void seer_opt_free(seer_runtime *rt)
{
    seer_opt_release(rt);
    for (uint32_t i = 0; rt->inst && i < rt->B; i++) {
        free(rt->inst[i].opt_log);
        rt->inst[i].opt_log = NULL;
    }
}

/* Mailboxes and slots for `slots` slots over the current partitions. */
static struct seer_opt_shared *make_shared(const seer_runtime *rt, uint32_t slots)
{
    struct seer_opt_shared *sh = aligned_alloc(SEER_CACHE_LINE,
                                               seer_round_up(sizeof *sh, SEER_CACHE_LINE));
    if (!sh)
        return NULL;
    memset(sh, 0, sizeof *sh);
    atomic_init(&sh->work, 0);
    sh->slots = slots;
    sh->nparts = rt->nparts;
    sh->B = rt->B;
    sh->rec_stride = seer_round_up(sizeof(seer_opt_rec) + rt->sz.entity_size, 16);
    uint32_t cap = OPT_RING_MAX;
    while (cap > OPT_RING_MIN && (uint64_t)cap * slots * slots > (1u << 16))
        cap /= 2;
    sh->ring_cap = cap;
    const size_t nr = (size_t)slots * slots;
    sh->rings = aligned_alloc(SEER_CACHE_LINE, seer_round_up(nr * sizeof(opt_ring),
                                                             SEER_CACHE_LINE));
    sh->ring_mem = malloc(nr * cap * sizeof(opt_msg));
    sh->first = malloc((slots + 1) * sizeof *sh->first);
    sh->slot_of = malloc(rt->nparts * sizeof *sh->slot_of);
    sh->scratch = malloc(rt->B * sizeof *sh->scratch);
    if (!sh->rings || !sh->ring_mem || !sh->first || !sh->slot_of || !sh->scratch) {
        free_shared(sh);
        return NULL;
    }
    for (size_t k = 0; k < nr; k++) {
        opt_ring *r = &sh->rings[k];
        memset(r, 0, sizeof *r);
        atomic_init(&r->tail, 0);
        atomic_init(&r->head, 0);
        r->buf = sh->ring_mem + k * cap;
        r->mask = cap - 1;
    }
    for (uint32_t s = 0; s <= slots; s++)
        sh->first[s] = (uint32_t)((uint64_t)rt->nparts * s / slots);
    for (uint32_t s = 0; s < slots; s++)
        for (uint32_t p = sh->first[s]; p < sh->first[s + 1]; p++)
            sh->slot_of[p] = s;
    return sh;
}

static seer_opt_worker *make_worker_opt(const seer_runtime *rt, uint32_t slots)
{
    seer_opt_worker *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->B = rt->B;
    o->nparts = rt->nparts;
    o->slots = slots;
    o->backlog = calloc(slots, sizeof *o->backlog);
    o->net = calloc(rt->B, sizeof *o->net);
    o->gross = calloc(rt->B, sizeof *o->gross);
    o->ncancelled = calloc((size_t)rt->B * rt->nparts, sizeof *o->ncancelled);
    if (!o->backlog || !o->net || !o->gross || !o->ncancelled) {
        free_worker_opt(o);
        return NULL;
    }
    return o;
}

int seer_opt_prepare(seer_runtime *rt)
{
    /* relaxed: the host is the only writer */
    const uint32_t active = atomic_load_explicit(&rt->pool_active, memory_order_relaxed);
    const uint32_t slots = active < rt->nparts ? active : rt->nparts;
    struct seer_opt_shared *sh = rt->opt;
    if (!sh || sh->slots != slots || sh->nparts != rt->nparts || sh->B != rt->B) {
        struct seer_opt_shared *n = make_shared(rt, slots);
        if (!n)
            goto nomem;
        free_shared(sh);
        rt->opt = sh = n;
    }
    for (uint32_t i = 0; i < rt->B; i++)
        if (!rt->inst[i].opt_log) {
            rt->inst[i].opt_log = calloc(rt->sz.num_entities, sizeof *rt->inst[i].opt_log);
            if (!rt->inst[i].opt_log)
                goto nomem;
        }
    /* every thread of the pool: a parked one may take a slot late (parallel.c) */
    const size_t cap = rt->log_limit / slots;
    size_t chunk = cap / 8;
    chunk = chunk > OPT_CHUNK_MAX ? OPT_CHUNK_MAX : chunk < OPT_CHUNK_MIN ? OPT_CHUNK_MIN : chunk;
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        seer_worker *w = &rt->workers[t];
        if (w->opt && (w->opt->slots != slots || w->opt->nparts != rt->nparts ||
                       w->opt->B != rt->B)) {
            free_worker_opt(w->opt);
            w->opt = NULL;
        }
        if (!w->opt && !(w->opt = make_worker_opt(rt, slots)))
            goto nomem;
        w->opt->cap = cap;
        w->opt->chunk = chunk;
    }
    for (uint32_t k = 0; k < rt->nsel; k++)
        /* relaxed: published to the workers with the call (publish_job) */
        atomic_store_explicit(&rt->inst[rt->sel[k]].opt_abandon, 0, memory_order_relaxed);
    /* a new epoch: the events this speculation schedules carry it */
    if (rt->opt_epoch == OPT_EPOCH_MAX) {
        /* after 2^30 speculative steps: clear every pending event's epoch
         * (between calls every event is in a queue) */
        for (uint32_t i = 0; i < rt->B; i++)
            for (uint32_t p = 0; p < rt->nparts; p++)
                seer_squeue_filter_owner(&rt->inst[i].parts[p], clear_epoch, NULL);
        rt->opt_epoch = 0;
    }
    rt->opt_epoch++;
    rt->opt_abandoned = 0;
    return SEER_OK;
nomem:
    seer_fail(rt, "out of memory preparing the optimistic executor (%u threads)", slots);
    return SEER_E_NOMEM;
}
