/*
 * internal.h -- the runtime's one private header, included by every source
 * file of the runtime (and by the C tests that reach inside: test_squeue.c,
 * stress_failures.c).  It holds the private structures (event record,
 * queue, instance, worker, runtime), the hot helpers that must inline across
 * files (contexts, event memory, trace records), and the declarations of
 * what each file exports, grouped by file.
 *
 * Where things are: docs/architecture.md is the map of every runtime file
 * (and of the rest of the project); it is not repeated here.
 *
 * Who may call what.  A function that is safe only on particular threads
 * says which in a suffix of its name, in the manner of Concurrency Kit
 * (ck_ring_enqueue_spsc):
 *
 *   _any        any thread, concurrently with the others: it synchronizes
 *               itself (atomics)
 *   _completer  only the thread that completed the current phase, while it
 *               runs the transition to the next (no other thread touches the
 *               call's shared state until it opens that phase), or the host
 *               while no phase is open
 *   _owner      only the current owner of a single-owner structure (an event
 *               queue, an outbox vector): no synchronization inside.
 *               Ownership changes hands only at phase transitions or between
 *               calls, which order the accesses (sync.h)
 *   _local      only the thread of the worker `w` it is given: it touches
 *               that worker's private state (free list, error slot, trace
 *               records) unsynchronized
 *
 * Without a suffix: pure functions (they touch only their arguments),
 * lifecycle functions (init/free of a structure no other thread can reach
 * yet or any more), and the rest, which runs on the host thread between
 * calls -- except the phase operations (phases.c) and the event loop
 * (serial.c), which run on the thread of the worker they are given, on the
 * items (partition, agent, entity, instance) that thread holds for the
 * current phase.
 */
#ifndef SEER_INTERNAL_H
#define SEER_INTERNAL_H

#include <pthread.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "seer_runtime.h"
#include "sync.h"

#include "faults.h"

#define SEER_ERRLEN 512

static inline size_t seer_round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }
#define SEER_KEY_SEQ_BITS 40
#define SEER_MAX_ENTITIES (1u << 24) /* entity ids fill the key's top 24 bits */
#define SEER_MAX_PARTS 256u /* parallel executor: partitions per instance, at most */

/* The bit pattern of a non-negative time, which orders like the time
 * (squeue.c).  -0.0 -> +0.0: the two compare equal, so they must share bits. */
static inline uint64_t seer_time_bits(seer_time t)
{
    t += 0.0;
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    return u;
}

/* One step of splitmix64: the seeding of the entity streams (rng.c) and the
 * visiting orders of SEER_CHECK_SHUFFLE (parallel.c). */
static inline uint64_t seer_splitmix64_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- the structures ------------------------------------------------------- */

/* One event record: a 32-byte header, then the payload (a PCS or Aircraft
 * event is one 64-byte line). */
typedef struct seer_event {
    union {
        seer_time time;                /* pending: when it is due          */
        struct seer_event *next_free;  /* free: the free list's link       */
    };
    uint64_t key; /* source entity << 40 | source sequence */
    uint32_t target;
    uint32_t type;
    uint32_t size;
    uint32_t flags; /* SEER_EV_* (optimistic executor; 0 elsewhere): written
                       only by the event's current owner.  The header stays
                       32 bytes. */
    alignas(16) unsigned char payload[];
} seer_event;

/* seer_event.flags: the optimistic executor's marks (optimistic.c).  The
 * bits above SEER_EV_EPOCH_SHIFT hold the epoch of the speculation that
 * scheduled the event (0: none), so an event belongs to the current step's
 * speculation when they equal rt->opt.epoch -- nothing has to clear them
 * when a step commits. */
enum {
    SEER_EV_HANDLED = 1u, /* handled speculatively: held by its target's log  */
    SEER_EV_CANCEL = 2u,  /* cancelled (an anti-message): freed when popped   */
    SEER_EV_EPOCH_SHIFT = 2
};


/* The event queue (squeue.c): a radix heap on the time's bit pattern.  One
 * per instance in the serial executor, one per partition in the parallel
 * one.  Single owner: every operation on a live queue is _owner. */
/* 16 bytes: the key, needed only to order equal times, is read from the
 * event (whose record the handler loads anyway). */
typedef struct seer_qentry {
    uint64_t tb;  /* bit pattern of the (non-negative) event time */
    seer_event *ev;
} seer_qentry;

/* A growable vector of entries: a queue's buckets and run, and the
 * parallel executor's outboxes.  Single owner. */
typedef struct seer_qvec {
    seer_qentry *a;
    uint32_t n;
    uint32_t cap;
} seer_qvec;

#ifndef SEER_SQ_DIGIT
#define SEER_SQ_DIGIT 4 /* bits per radix digit: 16 levels of 16 buckets */
#endif
_Static_assert(64 % SEER_SQ_DIGIT == 0, "the digits must tile the 64 time bits");
#define SEER_SQ_BUCKETS ((64 / SEER_SQ_DIGIT) << SEER_SQ_DIGIT)
#define SEER_SQ_WORDS ((SEER_SQ_BUCKETS + 63) / 64)
/* Per-queue counts of seer_squeue_reserve_owner: the current group, each
 * bucket, and the early heap (seer_squeue_bucket_of_owner). */
#define SEER_SQ_COUNTS (SEER_SQ_BUCKETS + 2)

/* A bucket with its minimum kept beside it: a push touches one line. */
typedef struct seer_qbucket {
    seer_qvec v;
    uint64_t min;       /* smallest time bits held (UINT64_MAX when empty) */
    seer_event *minev;  /* the event with them (a prefetch hint)           */
} seer_qbucket;

typedef struct seer_squeue {
    /* time bits of the current group; all pending >= it but those in
     * `early` */
    alignas(SEER_CACHE_LINE) uint64_t last;
    uint64_t nonempty[SEER_SQ_WORDS]; /* bit b: bucket[b] holds entries       */
    uint64_t n;           /* entries held                                      */
    uint32_t head;        /* read position in run                              */
    int broken;           /* an allocation failed mid-move: pops fail          */
    seer_qvec run;        /* current group, sorted by key                      */
    seer_qvec side;       /* current group, arrived out of order: heap on key  */
    seer_qvec scratch;    /* merge buffer of the run's sort                    */
    seer_qvec early;      /* entries below `last` (the optimistic executor's
                             rollbacks put events back): heap on (time, key)  */
    seer_qbucket bucket[SEER_SQ_BUCKETS]; /* see squeue.c                      */
} seer_squeue;

/* Per-entity runtime record.  Written only by the thread handling the
 * entity's partition. */
typedef struct seer_entity_rec {
    uint64_t seq;    /* events this entity has scheduled since reset */
    uint64_t events; /* events this entity has handled since reset */
    uint64_t rng[4];
} seer_entity_rec;

/* One instance.  Line-aligned (and allocated so): the fields the workers
 * read on every entity visit must not share a line with anything that other
 * threads write during a call.  A step once ran 3x slower because `recs`
 * shared its line with the next heap allocation. */
typedef struct seer_inst {
    alignas(SEER_CACHE_LINE) uint64_t seed;
    uint64_t step;       /* steps completed since reset */
    int ready;           /* reset, and no call failed since */
    int failed;          /* a call failed since the last reset */
    seer_time w_end;     /* parallel: current window end */
    seer_time boundary;  /* end of the step being run */
    int running;         /* parallel: window loop still active this step */
    int resetting;       /* the current boundary is a reset's */
    unsigned char *states;
    unsigned char *snapshot;
    unsigned char *idata;
    seer_entity_rec *recs;
    seer_squeue *parts; /* parallel executor: one queue per partition
                           (line-aligned; see parallel.c) */
    /* optimistic executor: each entity's log of the events it handled in
     * the current step, newest first ([num_entities]; written only by the
     * worker holding the entity's partition; NULL between calls) */
    struct seer_opt_rec **opt_log;
    alignas(SEER_CACHE_LINE) seer_squeue queue; /* serial executor: all pending
                                                   events */
    /* optimistic executor: this step's speculation was abandoned (it runs
     * serially once every worker has let go of it).  Any worker sets it
     * during the speculation phase; its own line. */
    alignas(SEER_CACHE_LINE) _Atomic int opt_abandon;
} seer_inst;

/* A worker's free list of event records (events.c). */
typedef struct seer_event_pool {
    seer_event *free;
    uint64_t nfree;
} seer_event_pool;

struct seer_runtime;

/* Per-thread state (the calling thread is worker 0).  Private to its
 * thread during a call (the _local functions), except `out` (see below) and
 * what the phase completer reads between phases (local_min, call_events). */
typedef struct seer_worker {
    alignas(SEER_CACHE_LINE) struct seer_runtime *rt;
    uint32_t id;
    seer_event_pool pool;
    double *local_min; /* [num_instances] earliest time this thread saw */
    int err;           /* first error this thread hit in the current call */
    char msg[SEER_ERRLEN];
    uint64_t events;
    uint64_t call_events;  /* events handled in the current call               */
    uint64_t call_budget;  /* ... at most (SEER_E_BUDGET beyond)               */
    uint32_t stop_tick;    /* events since the last Ctrl-C / budget check      */
    uint64_t refills;      /* free list ran dry inside the event loop          */
    uint64_t refills_seen; /* refills already answered by a larger target      */
    uint64_t pool_target;  /* free events to hold when a call starts           */
    uint64_t gen_seen; /* job generation this worker last ran (or started at) */
    /* Cross-partition events this thread scheduled, by parity of the phase
     * that scheduled them, then [instance * nparts + partition].  A bank is
     * owned by this thread in the phases of its parity and by the target
     * partitions' visitors in the next. */
    seer_qvec *out[2];
    seer_trace_rec *trace; /* NULL when tracing is off */
    uint64_t trace_n;
    uint64_t trace_dropped;
    pthread_t thread;
    int started;
    struct seer_opt_worker *opt; /* optimistic executor (optimistic.c); NULL
                                    until its first speculative step */
} seer_worker;

enum seer_phase {
    PHASE_NONE = 0,
    PHASE_INIT,
    PHASE_ACT,
    PHASE_EVENT,
    PHASE_BOUNDARY
};

/* The context a handler gets (seer.h's opaque seer_ctx): on the stack of
 * the thread that calls the handler. */
struct seer_ctx {
    struct seer_runtime *rt;
    seer_inst *inst;
    seer_worker *w;
    seer_entity_rec *rec;
    seer_time now;
    uint32_t inst_idx;
    uint32_t self;
    int phase;
    uint32_t cur_type; /* event type being handled (for messages) */
    int spec;          /* optimistic executor: handling speculatively */
    uint64_t cur_key;  /* ... the key of the event being handled */
};

enum seer_job { JOB_RESET = 1, JOB_STEP };

/* The runtime's state, by concern.  Each group is a named struct so that a
 * file can say which concern it touches (rt->check.mode, rt->opt.rollbacks). */

/* The checking mode (check.c). */
typedef struct seer_rt_check {
    uint32_t mode;           /* SEER_CHECK_* flags                             */
    uint64_t shuffle_seed;   /* SEER_CHECK_SHUFFLE: seed of the visiting orders */
    size_t config_len;       /* bytes of the (page-aligned) config             */
    uintptr_t static_lo;     /* the model's writable static data               */
    uintptr_t static_hi;
    struct seer_inst *armed_inst; /* whose regions are protected               */
    int armed_cls;                /* ... for which class of handler            */
    uint32_t armed_entity;        /* ... and which entity                      */
} seer_rt_check;

/* Partitions of the parallel executor: contiguous, equal ranges of
 * entities, one per thread of the pool (see partition.c). */
typedef struct seer_rt_parts {
    uint32_t n;      /* per instance                                           */
    uint32_t *of;    /* [num_entities]: an entity's partition                  */
    uint32_t *start; /* [n + 1]: partition p is [start[p], start[p+1])         */
} seer_rt_parts;

/* The host buffers (caller's or runtime-owned). */
typedef struct seer_rt_buffers {
    void *actions;
    float *obs;
    float *reward;
    uint8_t *terminated;
    uint8_t *truncated;
    uint8_t *alive;
    uint8_t *active;
    double *info;
    uint32_t owned; /* bit SEER_BUF_x: the runtime allocated it */
} seer_rt_buffers;

/* The event reserve shared by all workers (events.c; mutex: slow path only). */
typedef struct seer_rt_reserve {
    pthread_mutex_t lock;
    seer_event *reserve;
    uint64_t reserve_n;
    void **chunks;
    size_t nchunks, chunks_cap;
    uint64_t pool_events;
} seer_rt_reserve;

/* The worker pool (parallel.c). */
typedef struct seer_rt_pool {
    uint32_t nthreads;        /* workers created, the caller included             */
    _Atomic uint32_t active;  /* workers that take part in calls (<= nthreads);
                                 the others are parked, asleep: resizing the
                                 pool within nthreads costs no thread creation */
    seer_worker *workers;
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    _Atomic uint64_t job_gen;
    _Atomic int shutdown;
    seer_phases ph;    /* the executive list: phases of the current call
                          (its ticket and counter on lines of their own) */
    uint32_t call_tag; /* tag of the current call's phases (low bits of job_gen) */
} seer_rt_pool;

/* The current call (written by the host before it, by the completer between
 * phases). */
typedef struct seer_rt_call {
    uint32_t *sel;   /* selected instance indices */
    uint32_t *perm;  /* SEER_CHECK_SHUFFLE: the current phase's visiting order */
    uint32_t nsel;
    int any_running;
    uint32_t out_parity; /* outboxes the current phase writes (the previous
                            phase's, the other parity, are merged) */
    seer_time window_t; /* earliest window start of the running instances */
    _Atomic int abort_code;
} seer_rt_call;

/* Statistics since creation. */
typedef struct seer_rt_stats {
    uint64_t events;
    uint64_t windows;
    uint64_t steps;
    uint64_t refills;
    uint64_t serial_fallbacks; /* steps run serially: lookahead below the
                                  resolution of the simulated time */
} seer_rt_stats;

/* The optimistic executor (optimistic.c, optimistic_sizing.c). */
typedef struct seer_rt_opt {
    struct seer_opt_shared *shared; /* mailboxes, slots, termination counter:
                                       NULL until its first speculative step */
    uint64_t log_limit;          /* bytes of rollback logs a step may take     */
    uint32_t epoch;              /* the current speculation's epoch (flags)    */
    int spec;                    /* this call speculates (else: windows)       */
    uint32_t abandoned;          /* this call: instances whose speculation was
                                    abandoned, moved to the end of call.sel    */
    uint64_t rollbacks;          /* statistics since creation                  */
    uint64_t rolled_back;
    uint64_t anti;
    uint64_t serial_steps;
    uint64_t log_peak;
} seer_rt_opt;

struct seer_runtime {
    const seer_model *model;
    seer_sizes sz;
    void *config;
    uint32_t B;
    int executor;
    uint64_t max_cycles;
    seer_rt_check check;
    size_t event_stride;
    size_t entity_stride;
    size_t snapshot_stride;
    size_t entity_pad;   /* offset of a state in its stride (checking mode) */
    size_t snapshot_pad; /* offset of a record in its stride (checking mode) */
    size_t idata_stride;
    seer_rt_parts part;

    seer_inst *inst;
    seer_rt_buffers buf;
    seer_rt_reserve mem;
    seer_rt_pool pool;
    seer_rt_call call;
    seer_rt_stats stats;

    uint64_t trace_cap; /* records per worker; 0 = tracing off */

    char err[SEER_ERRLEN];
    char fail_msg[SEER_ERRLEN]; /* the message of the last failed call */
    int broken;                 /* the pool could not be restarted: every call fails */
    unsigned fork_gen;          /* seer_fork_generation() when the pool started */
    int in_call;                /* a reset or step is running (fork detection) */
    uint64_t sigint_at_call;    /* seer_sigint_count() when the call started   */
    uint64_t max_step_events;   /* per instance and step                        */
    uint64_t memory_limit;      /* bytes                                        */
    uint32_t rt_flags;          /* SEER_RT_*                                    */

    seer_rt_opt opt;
};

/* Does this executor keep its pending events in the partition queues? */
static inline int seer_uses_parts(int executor)
{
    return executor == SEER_EXECUTOR_PARALLEL || executor == SEER_EXECUTOR_OPTIMISTIC;
}

/* ---- the call's abort code (parallel.c, optimistic.c) ---------------------- */

/* Make this worker's error, if any, the call's abort code (the first one
 * wins): the completer then ends the call after the outboxes are flushed,
 * and a speculation slot that sees it leaves the phase.  w's thread. */
static inline void seer_propagate_error_local(seer_worker *w)
{
    if (w->err) {
        int expected = 0;
        /* relaxed: read by the phase completer after the phase completes
         * (ordered by the acq_rel completion that follows this store in the
         * same thread), and by every speculation slot as a hint (a slot that
         * sees it late only works a little longer) */
        atomic_compare_exchange_strong_explicit(&w->rt->call.abort_code, &expected, w->err,
                                                memory_order_relaxed,
                                                memory_order_relaxed);
    }
}

/* Has the current call been aborted?  Any thread. */
static inline int seer_aborted_any(const seer_runtime *rt)
{
    /* relaxed: see seer_propagate_error_local */
    return atomic_load_explicit(&rt->call.abort_code, memory_order_relaxed) != 0;
}

/* ---- runtime.c ------------------------------------------------------------- */

/* Every call that runs the model or changes the pool starts here (host):
 * re-creates the pool in a child of fork(), refuses on a broken runtime,
 * watches SIGINT from here on. */
int seer_call_begin(seer_runtime *rt);

/* ---- errors.c -------------------------------------------------------------- */

/* Record the message of a failed API call in rt->err (host). */
void seer_fail(seer_runtime *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record the first error of this worker in the current call (w's thread; the
 * completer may use worker 0's slot between phases, when no thread holds a
 * chunk). */
void seer_worker_error_local(seer_worker *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Write a message into err (when given) and return code.  Pure. */
int seer_fail_buf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The shortest %g form of v that reads back as v.  Pure. */
const char *seer_fmt_double(char buf[32], double v);

/* ---- events.c: event memory ---------------------------------------------- */

/* Slow path of seer_event_alloc_local: refill w's empty free list from the
 * shared reserve.  SEER_OK, SEER_E_NOMEM, or SEER_E_BUDGET past the memory
 * limit (then w's error says so). */
int seer_event_refill_local(seer_worker *w);

/* A free event record from w's own free list; NULL when no memory is left
 * for one (see seer_event_refill_local).  The per-event path: inline. */
static inline seer_event *seer_event_alloc_local(seer_worker *w)
{
    if (__builtin_expect(w->pool.free == NULL, 0) && seer_event_refill_local(w) != SEER_OK)
        return NULL;
    seer_event *ev = w->pool.free;
    w->pool.free = ev->next_free;
    w->pool.nfree--;
    /* Handlers often schedule several events in a row, and the free list
     * reaches back to records handled long ago: start loading the next one
     * (its link is read, its header and payload written, by that alloc). */
    __builtin_prefetch(w->pool.free, 1);
    return ev;
}

/* Give ev back to w's own free list (whoever allocated it: events flow from
 * the threads that schedule them to the threads that handle them). */
static inline void seer_event_free_local(seer_worker *w, seer_event *ev)
{
    ev->next_free = w->pool.free;
    w->pool.free = ev;
    w->pool.nfree++;
}

/* Outside the event loop: bring w's free list into [lo, hi] (the reserve's
 * mutex). */
void seer_event_pool_balance_local(seer_worker *w, uint64_t lo, uint64_t hi);
/* Free every event q holds into w's free list and empty q (the caller owns
 * q). */
void seer_event_free_all_local(seer_worker *w, seer_squeue *q);

/* ---- squeue.c: the event queue (all _owner but init/free) ------------------ */

/* A zeroed seer_squeue is not ready: call seer_squeue_init first. */
void seer_squeue_init(seer_squeue *q);
void seer_squeue_free(seer_squeue *q); /* frees its vectors (not the events) */

int seer_squeue_push_owner(seer_squeue *q, seer_event *ev);
int seer_squeue_push_entry_owner(seer_squeue *q, seer_qentry e);
/* Earliest queued time, +inf when empty. */
seer_time seer_squeue_min_time_owner(const seer_squeue *q);
static inline seer_qentry seer_qentry_of(const seer_event *ev)
{
    return (seer_qentry){seer_time_bits(ev->time), (seer_event *)ev};
}
/* Grow v to hold at least cap entries (slow path of seer_qvec_append_owner). */
int seer_qvec_reserve_owner(seer_qvec *v, uint64_t cap);
static inline int seer_qvec_append_owner(seer_qvec *v, seer_qentry e)
{
    if (__builtin_expect(v->n == v->cap, 0) &&
        seer_qvec_reserve_owner(v, (uint64_t)v->n + 1) != 0)
        return SEER_E_NOMEM;
    v->a[v->n++] = e;
    return SEER_OK;
}
/* The next event in (time, key) order if its time is < bnd, else NULL (and
 * *err set when the queue failed). */
seer_event *seer_squeue_pop_before_owner(seer_squeue *q, seer_time bnd, int *err);
/* 0 for the current group, 1 + b for bucket b, SEER_SQ_BUCKETS + 1 for the
 * early heap (a time below the current group's): what
 * seer_squeue_reserve_owner's counts index (SEER_SQ_COUNTS of them). */
int seer_squeue_bucket_of_owner(const seer_squeue *q, seer_time t);
/* Make room for counts[k] more entries in each bucket: pushes that follow
 * (as counted) cannot fail. */
int seer_squeue_reserve_owner(seer_squeue *q, const uint64_t counts[SEER_SQ_COUNTS]);
/* Drop, in place, every entry whose event `keep` rejects (keep may free it:
 * the queue no longer holds it).  Allocates nothing, cannot fail; the pop
 * order of the entries kept does not change. */
void seer_squeue_filter_owner(seer_squeue *q, int (*keep)(void *arg, seer_event *ev),
                              void *arg);
void seer_squeue_foreach_owner(const seer_squeue *q, void (*fn)(void *arg, seer_event *ev),
                               void *arg);
void seer_squeue_clear_owner(seer_squeue *q); /* drops the entries (not the events) */

/* ---- window minima (parallel executor) ------------------------------------ */

/* Note that w saw time t pending for instance `inst` (its partition's
 * earliest time, or a cross-partition event it sent): the completer reduces
 * the workers' minima into the next window (parallel.c). */
static inline void seer_note_window_min_local(seer_worker *w, uint32_t inst, double t)
{
    if (t < w->local_min[inst])
        w->local_min[inst] = t;
}

/* ---- contexts (ctx.c has the handler-facing functions) ---------------------- */

/* Entity e's state (checking mode: at the end of its pages, so a handler
 * that steps past either end of its struct reaches a neighbour's page). */
static inline void *seer_inst_state(const struct seer_runtime *rt, const seer_inst *in,
                                    uint32_t e)
{
    return in->states + (size_t)e * rt->entity_stride + rt->entity_pad;
}

/* Entity e's published snapshot record. */
static inline unsigned char *seer_inst_snapshot(const struct seer_runtime *rt,
                                                const seer_inst *in, uint32_t e)
{
    return in->snapshot + (size_t)e * rt->snapshot_stride + rt->snapshot_pad;
}

/* A context for a handler of instance `inst` in `phase` on w's thread, with
 * no entity yet. */
static inline void seer_ctx_setup(seer_ctx *c, struct seer_runtime *rt, seer_worker *w,
                                  uint32_t inst, int phase)
{
    c->spec = 0;
    c->cur_key = 0;
    c->rt = rt;
    c->inst = &rt->inst[inst];
    c->w = w;
    c->rec = NULL;
    c->now = 0.0;
    c->inst_idx = inst;
    c->self = 0;
    c->phase = phase;
    c->cur_type = UINT32_MAX;
}

/* Point the context at entity e (its runtime record: sequence, RNG). */
static inline void seer_ctx_enter_entity(seer_ctx *c, uint32_t e)
{
    c->self = e;
    c->rec = &c->inst->recs[e];
}

/* ---- phases.c: the per-item operations of a call ------------------------- */

/* On the thread of w, for an item that thread holds for the phase; each
 * stops at (or records) the first error in w->err. */
/* After every handler: turn a non-zero return into w's error; returns
 * w->err. */
int seer_after_handler(seer_ctx *c, int rc, const char *what);
/* Reseed an entity and zero its state and snapshot (its pending events go
 * with its queue). */
void seer_clear_entity(seer_worker *w, seer_inst *in, uint32_t e, uint64_t seed);
int seer_init_entity(seer_worker *w, uint32_t inst, uint32_t e);
int seer_act_agent(seer_worker *w, uint32_t inst, uint32_t a);
void seer_boundary_instance(seer_worker *w, uint32_t inst);
void seer_observe_agent(seer_worker *w, uint32_t inst, uint32_t a);
void seer_publish_entity(seer_worker *w, uint32_t inst, uint32_t e);
/* After the boundary phases: count the step.  By the thread that ran them
 * (serial, whole-instance mode) or the completer of the last one. */
void seer_finish_instance(seer_runtime *rt, uint32_t inst);

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
 * already ran: its events (in in->queue) and its boundary phases. */
int seer_serial_step_events(seer_runtime *rt, uint32_t i);
/* The serial executor (host, as worker 0): run `job` (JOB_RESET, JOB_STEP)
 * on the selected instances, one after the other; the first error stops it
 * and is copied to rt->err. */
int seer_serial_run(seer_runtime *rt, int job);
/* One step of instance i on the serial executor (its events in in->queue). */
int seer_serial_step(seer_runtime *rt, uint32_t i);

/* ---- parallel.c: the worker pool and the parallel executor ----------------- */

/* Start a pool of `threads` workers (the host is worker 0).  All or nothing. */
int seer_pool_start(seer_runtime *rt, uint32_t threads);
/* seer_pool_start after a stop, with `active` (<= threads) of the workers
 * taking part in calls: the pool's parked workers stay parked. */
int seer_pool_restart(seer_runtime *rt, uint32_t threads, uint32_t active);
/* In a child of fork(): forget the parent's workers and start this
 * process's own (returns SEER_E_NOMEM when that fails). */
int seer_pool_after_fork(seer_runtime *rt);
void seer_pool_forget_threads(seer_runtime *rt);
/* Join the workers and free what the pool holds (their free events go back
 * to the reserve). */
void seer_pool_stop(seer_runtime *rt);
/* The parallel executor: run `job` on the selected instances with the pool
 * (the host takes part as worker 0); the first error is copied to rt->err. */
int seer_parallel_run(seer_runtime *rt, int job);

/* Merge the events every thread sent to partition p of instance `inst` in
 * the previous phase (outbox bank `bank`) into its queue: on the thread
 * holding p for the phase. */
void seer_merge_outboxes(seer_worker *w, seer_inst *in, uint32_t inst, uint32_t p,
                         uint32_t bank);

/* ---- optimistic.c, optimistic_sizing.c: the optimistic executor ------------- */

/* Host, before a step with instances split across threads: size the
 * mailboxes, logs and slots for the pool and the selection, and start a new
 * speculation epoch.  On failure (SEER_E_NOMEM, rt->err set) nothing has
 * changed. */
int seer_opt_prepare(seer_runtime *rt);
/* Host, before a step of the optimistic executor with instances split
 * across threads: speculate (1), or run the conservative executor's windows
 * (0: the lookahead is above the resolution of the simulated time for every
 * selected instance, and a step holds at most SEER_OPT_WINDOWS_MAX windows
 * of width L, so windows cost little and roll nothing back). */
int seer_opt_speculates(const seer_runtime *rt);
/* Slots of the speculation phase (each a set of partitions one worker holds
 * for the whole phase). */
uint32_t seer_opt_slots(const seer_runtime *rt);
/* The completer, opening the speculation phase. */
void seer_opt_open_completer(seer_runtime *rt);
/* The speculation phase's item: slot `slot`, run by w until every slot is
 * idle and no message is in flight (or the call aborts); `bank`: the act
 * phase's outboxes, merged first. */
void seer_opt_run_slot(seer_worker *w, seer_ctx *c, uint32_t slot, uint32_t bank);
/* The completer (worker w), after the speculation phase: statistics;
 * abandoned instances go to the end of the selection (rt->opt.abandoned of
 * them, out of rt->call.nsel); after an abort, every message and log is dropped
 * (their events freed into w's own free list). */
void seer_opt_finish_completer(seer_runtime *rt, seer_worker *w, int aborted);
/* Host, after the call: instance i's abandoned speculation undone, its
 * step run serially (from after its act phase). */
int seer_opt_serial_step(seer_runtime *rt, uint32_t i);
/* Host, after a failed call: instance i's abandoned speculation, not rerun,
 * is dropped (the events its logs hold freed, the logs forgotten); the
 * instance fails with the call, release_failed frees its queues. */
void seer_opt_drop(seer_runtime *rt, uint32_t i);
/* seer_schedule during speculation: ev (filled in) is kept for delivery
 * after the handler returns.  Always SEER_OK: what goes wrong abandons the
 * speculation. */
int seer_opt_schedule_local(seer_ctx *c, seer_event *ev);
/* Free the workers' optimistic state and the mailboxes, and forget the logs
 * (the pool stops: they are made again for the next speculative step). */
void seer_opt_release(seer_runtime *rt);
/* Free everything (destroy). */
void seer_opt_free(seer_runtime *rt);

/* ---- partition.c: partitions, executor switches, pool size ----------------- */

/* The pool size that takes part in calls: `threads`, capped at the usable
 * CPUs unless flags has SEER_RT_OVERSUBSCRIBE. */
uint32_t seer_active_threads(uint32_t flags, uint32_t threads);
/* Cut every instance's entities into partitions for a pool of `threads`
 * (moving pending events to the new partitions' queues).  On failure
 * nothing changed, or instances that could not be restored need a reset
 * (rt->err says which). */
int seer_set_partitions(seer_runtime *rt, uint32_t threads);
/* Free an instance's partition queues (rt->part.n of them) and the array. */
void seer_free_part_queues(const seer_runtime *rt, seer_squeue *parts);
/* Instance i's step on the serial executor, its events moved to the serial
 * queue and back: the serial fallback of a parallel step (act = 1: the
 * whole step), or the rest of an optimistic step whose speculation was
 * abandoned (act = 0: its act phase ran). */
int seer_step_serially(seer_runtime *rt, uint32_t i, int act);

/* ---- trace.c, and the record writer the event loop inlines --------------- */

/* Is this worker tracing?  Tracing off costs one predictable branch per
 * entity visit / phase; -DSEER_NO_TRACE compiles the checks out (the build
 * `python benchmarks/bench_suite.py trace-overhead` compares against). */
#ifdef SEER_NO_TRACE
#define SEER_TRACING(w) ((void)(w), 0)
#else
#define SEER_TRACING(w) __builtin_expect((w)->trace != NULL, 0)
#endif

/* CLOCK_MONOTONIC in ns (trace.c).  Any thread. */
uint64_t seer_clock_ns(void);

/* Append a record to w's trace (counted as dropped when full).  w's thread,
 * while it holds a chunk (the host reads the records after the call). */
static inline void seer_trace_add_local(seer_worker *w, uint32_t kind, uint64_t t0, uint64_t t1,
                                        double sim_time, uint32_t instance, uint32_t entity,
                                        uint32_t type, uint32_t count)
{
    if (w->trace_n >= w->rt->trace_cap) {
        w->trace_dropped++;
        return;
    }
    seer_trace_rec *r = &w->trace[w->trace_n++];
    r->t0_ns = t0;
    r->t1_ns = t1;
    r->sim_time = sim_time;
    r->kind = kind;
    r->instance = instance;
    r->entity = entity;
    r->type = type;
    r->count = count;
    r->pad_ = 0;
}

/* (Re)allocate w's trace buffer for rt->trace_cap records (host, or the pool
 * starting). */
int seer_trace_alloc_worker(seer_runtime *rt, seer_worker *w);

/* ---- check.c: the checking mode -------------------------------------------- */

/* Handler kinds, and the regions a checked handler may find protected. */
enum seer_hook {
    SEER_HOOK_INIT = 0,
    SEER_HOOK_ACT,
    SEER_HOOK_HANDLE,
    SEER_HOOK_BOUNDARY,
    SEER_HOOK_OBSERVE,
    SEER_HOOK_PUBLISH,
    SEER_HOOK_STATE
};
enum {
    SEER_REGION_STATE = 1,
    SEER_REGION_SNAPSHOT,
    SEER_REGION_INSTANCE,
    SEER_REGION_CONFIG,
    SEER_REGION_STATIC,
    SEER_REGION_NULL    /* a NULL pointer (plus an offset) */
};

/* A handler's arguments, whatever its kind. */
typedef struct seer_hook_args {
    void *entity;            /* init/act/handle: state; boundary: instance data;
                                publish: the record                           */
    const void *cptr;        /* act: action; handle: payload; publish: state   */
    uint32_t type;           /* handle: event type; observe: agent            */
    uint32_t size;           /* handle: payload bytes                         */
    const seer_output *out;  /* observe                                       */
    float *fout;             /* global_state                                  */
} seer_hook_args;

/* One checked handler call, on the stack of the thread that makes it. */
typedef struct seer_check_frame {
    sigjmp_buf jb;               /* where a protected access jumps back to      */
    struct seer_runtime *rt;
    struct seer_inst *inst;
    volatile int armed;          /* the handler is running                      */
    volatile int region;         /* SEER_REGION_* it touched (0: none)          */
    volatile uintptr_t addr;     /* the address                                 */
    volatile int write;          /* 1 write, 0 read, -1 unknown                 */
    const char *foreign;         /* first nondeterministic C function it called */
    int foreign_clock;           /* ... and whether it reads a clock            */
} seer_check_frame;
/* The checked handler running on this thread, NULL when none. */
extern _Thread_local seer_check_frame *seer_check_current;

size_t seer_page_size(void);
/* At creation (after allocation) / destruction of a runtime in checking mode. */
int seer_check_setup(struct seer_runtime *rt);
void seer_check_teardown(struct seer_runtime *rt);
/* Around a call (reset, step, global state) of a runtime in checking mode. */
void seer_check_begin_call(struct seer_runtime *rt);
void seer_check_end_call(struct seer_runtime *rt);
/* Before the runtime itself writes states or snapshots during a call. */
void seer_check_disarm(struct seer_runtime *rt);
/* Call handler `hook` with the memory it must not touch protected (on the
 * handler's thread, which is the host: checking runs serially); returns the
 * handler's status or SEER_E_ISOLATION (the worker's error is set). */
int seer_check_run(seer_ctx *c, int hook, const seer_hook_args *a);
/* Is this runtime isolating its handlers? */
#define SEER_CHECKING(rt) __builtin_expect(((rt)->check.mode & SEER_CHECK_ISOLATE) != 0, 0)

/* ---- process.c ------------------------------------------------------------- */

/* Bumped in every child of fork(): a runtime created before the fork sees a
 * new value in the child.  Any thread. */
unsigned seer_fork_generation(void);
/* Put the runtime's SIGINT counter in front of the handler installed now. */
void seer_sigint_watch(void);
/* SIGINTs since the process started.  Any thread. */
uint64_t seer_sigint_count(void);
uint32_t seer_cpu_count(void);
uint64_t seer_physical_memory(void);

#endif /* SEER_INTERNAL_H */
