/*
 * runtime.h -- the runtime's private structures: the per-entity record,
 * the instance, the worker, the handler's context and the runtime itself,
 * grouped by concern; and what runtime.c exports to the other files.
 */
#ifndef SEER_RUNTIME_INTERNAL_H
#define SEER_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base.h"
#include "event.h"
#include "process.h"
#include "seer_runtime.h"
#include "squeue.h"
#include "sync.h"

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
    /* optimistic executor: a step runs as speculation phases, each up to a
     * horizon (spec_end) and committed at its end (optimistic.c) */
    seer_time spec_end;  /* the current phase's horizon (<= boundary)     */
    seer_time spec_from; /* the earliest pending time when it opened      */
    double opt_width;    /* simulated time the next phase covers (adapted
                            from phase to phase; 0: not known yet)        */
    uint64_t opt_done;   /* events this step's committed phases handled   */
    unsigned char *states;
    unsigned char *snapshot;
    unsigned char *idata;
    seer_entity_rec *recs;
    seer_squeue *parts; /* parallel executor: one queue per partition
                           (line-aligned; see pool.c) */
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
    uint64_t refills;      /* ran dry inside the event loop                    */
    uint64_t refills_seen; /* refills already answered by a larger target      */
    uint64_t target;       /* free records to hold when a call starts          */
} seer_event_pool;

struct seer_runtime;

/* Per-thread state (the calling thread is worker 0).  Private to its
 * thread during a call (the _local functions), except `out` (see below) and
 * what the phase completer reads between phases (local_min, call_events). */
typedef struct seer_worker {
    alignas(SEER_CACHE_LINE) struct seer_runtime *rt;
    uint32_t id;
    /* Free records: `pool` for the events of the serial executor, of the
     * optimistic executor's speculation and, in a pool's windows, of events
     * between entities of one partition; `cross` for a window's events
     * between partitions (events.c says why apart). */
    seer_event_pool pool;
    seer_event_pool cross;
    /* Every record has a home, the worker its block belongs to (events.c
     * says why).  During a pool call (home_limit: the pool's size; 0
     * otherwise, and then nothing is sent home) a record of another
     * worker's home that this thread frees goes to away[its home], and
     * the host hands those to their homes when the call ends
     * (seer_event_send_home_host).  away_homes: the homes with records in
     * `away`, away_nh of them.  home_mask: an address to its block's. */
    uint32_t home_limit;
    uint32_t away_nh;
    uintptr_t home_mask;
    struct seer_event_away *away; /* [pool size] */
    uint32_t *away_homes;         /* [pool size] */
    double *local_min; /* [num_instances] earliest time this thread saw */
    int err;           /* first error this thread hit in the current call */
    char msg[SEER_ERRLEN];
    uint64_t events;
    uint64_t call_events;  /* events handled in the current call               */
    uint64_t call_budget;  /* ... at most (SEER_E_BUDGET beyond)               */
    uint32_t stop_tick;    /* events since the last Ctrl-C / budget check      */
    /* Worker 0 (the caller) only: ns it waited in the current call for a
     * phase other threads held (pool.c) or, speculating, for other slots'
     * messages or the phase's end (optimistic.c); company.c reads it after
     * the call */
    uint64_t wait_ns;
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
    /* The worker's kernel thread id (seer_thread_id_any), stored by the
     * worker as it starts; 0 before that and for worker 0 (the caller).
     * Read by the host (seer_runtime_worker_tids) to see, in /proc, how
     * long the pool's threads waited for a core. */
    _Atomic int64_t tid;
    /* The CPU this worker is kept off (the caller's:
     * seer_pool_keep_off_caller_host in company.c), -1 for none, and its own CPUs before that.  Host only. */
    int avoid_cpu;
    seer_cpus own_cpus;
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
    int solo;          /* parallel executor: this thread holds every partition
                        * of the instance (seer_schedule pushes into the
                        * target's queue, no outbox) */
    uint64_t cur_key;  /* ... the key of the event being handled */
};

enum seer_job { JOB_RESET = 1, JOB_STEP };

/* The runtime's state, by concern.  Each group is a named struct so that a
 * file can say which concern it touches (rt->check.mode, rt->opt.rollbacks). */

/* The output rows a checked handler writes into (check.c): observe's five,
 * global_state's row, the action masks of every instance; then the inputs
 * it reads (act's action, handle's payload), which end at their slot's end
 * (check_rows.h). */
enum seer_out_slot {
    SEER_OUT_OBS = 0,
    SEER_OUT_INFO,
    SEER_OUT_REWARD,
    SEER_OUT_TERMINATED,
    SEER_OUT_TRUNCATED,
    SEER_OUT_STATE,
    SEER_OUT_MASK,
    SEER_IN_ACTION,
    SEER_IN_PAYLOAD,
    SEER_OUT_SLOTS
};

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
    /* SEER_CHECK_ISOLATE: the output rows handlers write into (check.c,
     * seer_check_out_row): one mapping, slot s at out_map + out_at[s], its
     * row's out_len[s] bytes then guard bytes to out_span[s] (an input's
     * row, seer_check_in_row: its out_len[s] bytes end at out_span[s]), the
     * slots between PROT_NONE fences of out_fence bytes. */
    unsigned char *out_map;
    size_t out_map_len, out_fence;
    size_t out_at[SEER_OUT_SLOTS], out_len[SEER_OUT_SLOTS], out_span[SEER_OUT_SLOTS];
    /* where the row of the call in progress lies in its host buffer (byte
     * offset, the buffer's bytes): what a plain run's write past the row
     * would reach (set by the host before each checked call) */
    size_t out_host_at[SEER_OUT_SLOTS], out_host_len[SEER_OUT_SLOTS];
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
    uint8_t *mask;  /* mask_dim bytes per agent (NULL-sized when mask_dim = 0) */
    uint32_t owned; /* bit SEER_BUF_x: the runtime allocated it */
} seer_rt_buffers;

/* One agent group, as the runtime keeps it (copied at creation). */
typedef struct seer_rt_group {
    uint32_t first, count;   /* agents [first, first + count)                  */
    uint32_t obs_dim, info_dim;
    uint32_t action_dim;     /* elements (box), components (multi-discrete), 1  */
    uint32_t mask_len;       /* bytes of its mask rows (0: box actions)        */
    seer_action_kind kind;
    int32_t action_n;
    float low, high;
    const int32_t *nvec;     /* multi-discrete: choices per component          */
    char name[SEER_NAME_LEN - 12]; /* room for "_<index>" in an agent's name   */
} seer_rt_group;

/* The agent groups (one for a model without groups). */
typedef struct seer_rt_groups {
    uint32_t n;
    seer_rt_group *g;        /* n entries                                      */
    int32_t *nvec;           /* every multi-discrete group's choices, in order */
    uint8_t *of_agent;       /* group of each agent (num_agents entries)       */
    int simple;              /* one group whose actions only need the old
                                checks (no masks to enforce, not multi-discrete) */
    int enforce_mask;        /* masks refuse what they forbid (not advisory)    */
} seer_rt_groups;

/* A block of event records (events.c): a header line (seer_event_block),
 * then n records of event_stride bytes from mem. */
typedef struct seer_event_chunk {
    unsigned char *mem;
    uint64_t n;
} seer_event_chunk;

/* The header of a block of event records, at its start (its address is a
 * record's with the low block_shift bits cleared).  `home`: the worker
 * whose lists its free records go to during pool calls.  Written by the
 * thread that makes the block and by the host between calls (a pool of
 * another size), under the reserve's lock; read by any thread during a
 * call (published with the call). */
typedef struct seer_event_block {
    uint32_t home;
} seer_event_block;

/* One home's reserve: free records of the blocks homed to one worker. */
typedef struct seer_event_home {
    seer_event *free;
    uint64_t n;
} seer_event_home;

/* A worker's records of another home, freed during the current call: a
 * list each for the home's `pool` and `cross` lists ([0], [1]), with its
 * tail, to be put on top of them when the call ends. */
typedef struct seer_event_away {
    seer_event *head[2];
    seer_event *tail[2];
    uint64_t n[2];
} seer_event_away;

/* The event reserve shared by all workers (events.c; mutex: slow path only).
 * The lock also guards every worker's free list between calls: outside a
 * call's chunks a worker touches its list only under it (its restock as a
 * call starts), so the host may order all lists under it
 * (seer_event_order_all_host). */
typedef struct seer_rt_reserve {
    pthread_mutex_t lock;
    /* the reserve, home by home ([nhomes]: at least the pool's size) */
    seer_event_home *homes;
    uint32_t nhomes;
    uint32_t block_shift; /* blocks are 1 << block_shift bytes, so aligned */
    seer_event_chunk *chunks;
    size_t nchunks, chunks_cap;
    uint64_t pool_events;
    /* steps on the serial executor, after a switch to it, before every free
     * record goes to its list in address order (0: none due; host only) */
    uint32_t order_in;
    /* a pool's orderings (seer_event_order_pool_when_due_host; host only):
     * steps since the last look (or a switch), a reset asking for one at
     * the next step, when the last ended and what it took (0: order at
     * SEER_ORDER_AFTER_STEPS steps whatever it takes) */
    int order_pools; /* 1: where a step's records outgrow the caches; 0: never
                        (SEER_ORDER_POOLS=0), 2: always (=1; create) */
    uint32_t pool_steps;
    int order_now;
    uint64_t ordered_ns;
    uint64_t order_cost_ns;
    uint64_t order_events; /* events handled before those steps          */
    uint64_t cache_bytes;  /* a core's L2 (seer_event_cache_bytes; create) */
    /* pending events moved into address order (seer_event_relayout_host):
     * on the serial executor after a reset or a switch, 1 where they
     * outgrow the cache, 2 whatever the sizes (SEER_RELAYOUT=1); on a pool
     * at its orderings, 1 or 2; 0 never (SEER_RELAYOUT=0: the free records
     * ordered alone, as before; create) */
    int relayout;
    uint64_t relayouts; /* relayouts that moved the events (host only) */
    /* the serial executor's last relayout at a reset: when it ended and
     * what it took (0: none yet; seer_event_tidy_serial_host) */
    uint64_t relaid_ns;
    uint64_t relayout_cost_ns;
} seer_rt_reserve;

/* Steps the keep-off of the workers looks back on (company.c). */
#define SEER_LOOP_CALLS 3u

/* A pool's alone stretches (company.c): steps run on the caller's thread
 * alone where the pool's other threads did not get a core.  Host only. */
typedef struct seer_rt_alone {
    int allowed;     /* SEER_POOL_ALONE=0: never (create)                       */
    uint32_t left;   /* steps left in the current stretch (0: none)             */
    uint32_t next;   /* steps of the next stretch (doubles while the pool loses) */
    double alone_ns; /* ns an event of the stretches' steps took (a moving
                        average; 0: no stretch yet)                             */
    uint64_t steps;  /* steps run in stretches                                  */
    uint64_t stretches; /* stretches begun                                      */
    int tidy;        /* a stretch began: its events in order first (its first
                        step out of the relayout budget)                        */
    uint32_t lost;   /* pool steps in a row that lost their threads               */
    uint32_t settling; /* pool steps of a new configuration left before they are
                          judged (ALONE_SETTLE_STEPS)                          */
    uint32_t probe;  /* pool steps left after a stretch before they are judged
                        (the first ALONE_WARM_STEPS of them not counted)        */
    uint64_t probe_ns, probe_events; /* ... their time and events so far       */
    uint64_t tidied_ns, tidy_cost_ns; /* the last such relayout: its end, its time */
    int long_stretch; /* the stretch is long (ALONE_SERIAL_MIN): on the serial
                         executor's queues                                     */
    int serial;      /* its events are on them now: rt->executor is SERIAL,   */
    int executor;    /* ... and this the pool's (seer_runtime_executor says it) */
    /* the free time of the caller's CPUs (seer_cpus_free_ns_any; NULL:
     * SEER_POOL_ALONE_CPUS=0, a stretch's end never looks; tests put their
     * own), its reading at the stretch's start (looked: it could read), and
     * the stretches run on in a row since the pool was last tried         */
    int (*cpus_free)(uint64_t *free_ns);
    uint64_t look_free_ns;
    uint64_t look_steps_ns; /* the time of the stretch's steps so far     */
    int looked;
    uint32_t went_on;
    uint64_t went_on_total; /* stretches run on, in all (tests)           */
} seer_rt_alone;

/* The worker pool (pool.c). */
typedef struct seer_rt_pool {
    uint32_t nthreads;        /* workers created, the caller included             */
    _Atomic uint32_t active;  /* workers that take part in calls (<= nthreads);
                                 the others are parked, asleep: resizing the
                                 pool within nthreads costs no thread creation */
    /* The host's cap on the threads of the next calls (0: none), below
     * `active`: the process's thread budget, shared by its runtimes, lends
     * this runtime fewer threads while others run (seer_runtime_set_call_threads).
     * The optimistic executor takes only a cap of 1 (a caller that holds
     * every slot runs them as one, optimistic_phases.c; under a larger cap
     * a slot nobody claims would hold the phase up). */
    uint32_t call_cap;
    /* The threads taking part in the current call (<= active): written by the
     * host before it publishes the call, read by workers after acquiring it. */
    _Atomic uint32_t call_active;
    seer_worker *workers;
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    _Atomic uint64_t job_gen;
    /* Pauses a worker spins for the next call once its part of this one is
     * done, before it sleeps (pool.c): WAKE_SPINS where the gap before this
     * call was short enough for a spin to catch the next, else none.  The
     * host writes it before publishing a call (a hint: relaxed). */
    _Atomic uint32_t wake_spins;
    uint64_t last_end_ns; /* host: when the last call returned (0: none yet) */
    uint64_t gaps_ns[3];  /* host: the last gaps between calls (a ring)          */
    uint32_t gap_next;    /* host: the ring's next slot                          */
    /* host: the last steps, on whatever executor (seer_pool_note_step_host):
     * the gaps between them and their own times (a ring) */
    uint64_t loop_gaps_ns[SEER_LOOP_CALLS];
    uint64_t loop_calls_ns[SEER_LOOP_CALLS];
    uint64_t loop_end_ns;
    uint32_t loop_next;
    int keep_off;         /* host: the workers are kept off the caller's CPU     */
    int keep_off_allowed; /* ... may be (SEER_KEEP_OFF_CALLER=0: never; create) */
    uint32_t unsettled_steps; /* host: steps run on partitions other than the
                                 pool size's (seer_pool_settle_host)         */
    seer_rt_alone alone;      /* host: alone stretches (company.c)           */
    _Atomic int shutdown;
    seer_phases ph;    /* the executive list: phases of the current call
                          (its ticket and counter on lines of their own) */
    uint32_t call_tag; /* tag of the current call's phases (low bits of job_gen) */
    /* Frees an executor's per-worker state when the pool stops (installed
     * by the optimistic executor, seer_opt_prepare; NULL: none). */
    void (*release_exec)(struct seer_runtime *rt);
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
    /* the executor's events phases of this call (pool.h; NULL: a reset) */
    const struct seer_events_phases *events;
} seer_rt_call;

/* Statistics since creation. */
typedef struct seer_rt_stats {
    uint64_t events;
    uint64_t windows;
    uint64_t steps;
    uint64_t refills;
    uint64_t serial_fallbacks; /* steps run serially: lookahead below the
                                  resolution of the simulated time */
    uint64_t alone_windows;    /* of `windows`: run by one thread holding every
                                  partition (parallel.c) */
} seer_rt_stats;

/* Events per thread a speculation phase of the optimistic executor aims at
 * (optimistic.c): enough that a phase's fixed cost (a barrier, the commit's
 * walk of its log) stays small next to its events, few enough that the log
 * stays in cache and does not grow with the step's length. */
#define SEER_OPT_PHASE_EVENTS 1024u
/* The first wait of a speculation phase's first holder for the other
 * workers (rt->opt.gather_ns adapts it, optimistic_phases.c). */
#define SEER_OPT_GATHER_START_NS 50000u

/* The optimistic executor (optimistic.c, optimistic_sizing.c). */
typedef struct seer_rt_opt {
    struct seer_opt_shared *shared; /* mailboxes, slots, termination counter:
                                       NULL until its first speculative step */
    uint64_t log_limit;          /* bytes of rollback logs a step may take     */
    uint64_t phase_events;       /* events per slot a phase aims at
                                    (SEER_OPT_PHASE_EVENTS; SEER_PHASE_EVENTS) */
    uint32_t epoch;              /* the current speculation's epoch (flags)    */
    /* seer_schedule during speculation (seer_opt_schedule_local, installed
     * by seer_opt_prepare: ctx.c calls the executor through it) */
    int (*schedule_local)(seer_ctx *c, seer_event *ev);
    uint32_t abandoned;          /* this call: instances whose speculation was
                                    abandoned, moved to the end of call.sel    */
    uint32_t phase;              /* this call: the speculation phase running
                                    (0: the step's first)                     */
    uint64_t rollbacks;          /* statistics since creation                  */
    uint64_t rolled_back;
    uint64_t anti;
    uint64_t serial_steps;
    uint64_t log_peak;
    /* How long the holder of a speculation phase's first slot waits for the
     * other workers to claim theirs before it takes every slot (ns): twice
     * the latest wait that ended with them coming (a worker woken for the
     * call takes tens of microseconds), halved by each phase nobody came for
     * (optimistic_phases.c).  Any worker; relaxed: a hint. */
    _Atomic uint32_t gather_ns;
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
    seer_rt_groups grp;
    seer_rt_reserve mem;
    seer_rt_pool pool;
    seer_rt_call call;
    seer_rt_stats stats;

    uint64_t trace_cap; /* records per worker; 0 = tracing off */
    uint8_t trace_no_events; /* tracing leaves out event records (trace_events) */

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

    /* snapshot.c's scratch (collected events, keys, the events' staging
     * buffer), kept from call to call: fresh megabytes each time cost more
     * in page faults than the snapshot itself.  Host only. */
    unsigned char *snap_scratch;
    size_t snap_scratch_cap;
};

/* Does this executor keep its pending events in the partition queues? */
static inline int seer_uses_parts(int executor)
{
    return executor == SEER_EXECUTOR_PARALLEL || executor == SEER_EXECUTOR_OPTIMISTIC;
}

/* ---- window minima (the parallel executor's windows) ----------------------- */

/* Note that w saw time t pending for instance `inst` (its partition's
 * earliest time, or a cross-partition event it sent): the completer reduces
 * the workers' minima into the next window (parallel.c). */
static inline void seer_note_window_min_local(seer_worker *w, uint32_t inst, double t)
{
    if (t < w->local_min[inst])
        w->local_min[inst] = t;
}

#endif /* SEER_RUNTIME_INTERNAL_H */
