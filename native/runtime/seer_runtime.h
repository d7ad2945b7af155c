/*
 * seer_runtime.h -- the runtime's API for its host (the cffi extension and
 * the C stress tests).  Models never include this file: they see seer.h only.
 *
 * One runtime holds B independent instances of one model that share one
 * executor (and, for the parallel executor, one worker pool).  Buffers for
 * actions and boundary outputs are allocated once, laid out
 * [instance][agent][...], and written in place by the runtime.
 *
 * Every call returns a seer_status; after a failure seer_runtime_error()
 * returns a message describing what went wrong (kept per runtime, valid until
 * the next call on that runtime).  A runtime is used by one host thread at a
 * time.
 */
#ifndef SEER_RUNTIME_H
#define SEER_RUNTIME_H

#include "seer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct seer_runtime seer_runtime;

typedef enum seer_executor {
    SEER_EXECUTOR_SERIAL = 0,    /* the reference: one (time, key) queue per instance */
    SEER_EXECUTOR_PARALLEL = 1,  /* partition queues, conservative windows, worker pool */
    SEER_EXECUTOR_OPTIMISTIC = 2 /* partition queues, speculation with rollback (Time
                                    Warp) inside a step, worker pool; any L >= 0 */
} seer_executor;

/* The optimistic executor speculates on a step whose instance is split across
 * threads unless the lookahead L > 0 gives at most this many windows of width
 * L per step (step_duration <= SEER_OPT_WINDOWS_MAX * L): then it runs the
 * parallel executor's windows, which roll nothing back. */
enum { SEER_OPT_WINDOWS_MAX = 256 };

/* Buffers returned by seer_runtime_buffer. */
typedef enum seer_buffer {
    SEER_BUF_ACTIONS = 0,    /* [B][A][action_dim] int32 or float32 (host writes) */
    SEER_BUF_OBS = 1,        /* [B][A][obs_dim] float32                            */
    SEER_BUF_REWARD = 2,     /* [B][A] float32                                     */
    SEER_BUF_TERMINATED = 3, /* [B][A] uint8                                       */
    SEER_BUF_TRUNCATED = 4,  /* [B][A] uint8                                       */
    SEER_BUF_ALIVE = 5,      /* [B][A] uint8: agent may act in the next step       */
    SEER_BUF_INFO = 6,       /* [B][A][info_dim] float64                           */
    SEER_BUF_ACTIVE = 7,     /* [B][A] uint8: agent had outputs in the last call   */
    SEER_BUF_MASK = 8        /* [B][A][mask_dim] uint8: 1 where an agent may take
                                a choice in the next step (models with masks)      */
} seer_buffer;
/* The number of host buffers (SEER_BUF_*).  With agent groups every agent
 * row has the largest group's stride (obs_dim, action_dim, info_dim and
 * mask_dim of seer_sizes); an agent of a smaller group uses the first
 * elements of its row and the rest stay 0. */
#define SEER_BUF_COUNT 9

typedef struct seer_stats {
    uint64_t events;        /* events handled since creation (all instances) */
    uint64_t windows;       /* parallel windows (rounds) since creation      */
    uint64_t steps;         /* step calls since creation                     */
    uint64_t pool_refills;  /* event-pool refills inside the event loop      */
    uint64_t pool_events;   /* event records allocated in total              */
    uint64_t serial_fallbacks; /* steps of an instance run serially because its
                                 lookahead was below the resolution of the
                                 simulated time (see seer_runtime_step)        */
    /* optimistic executor */
    uint64_t rollbacks;          /* an entity rolled back (a straggler, or a
                                    cancelled event it had handled)           */
    uint64_t events_rolled_back; /* handlings undone by those rollbacks        */
    uint64_t anti_messages;      /* cancellations sent to another thread      */
    uint64_t serial_steps;       /* steps of an instance whose speculation was
                                    abandoned (an event created before the one
                                    being handled, a handler error, the log
                                    limit) and that ran serially instead      */
    uint64_t log_bytes_peak;     /* most rollback-log bytes one step took     */
    /* parallel and optimistic executors */
    uint64_t alone_windows; /* windows (speculation phases) one thread ran
                               alone, holding every partition because no other
                               thread of the pool came for one (descheduled:
                               a loaded machine)                              */
    uint64_t alone_steps;   /* steps a pool ran on the calling thread alone, in
                               stretches it began where its other threads did
                               not get a core (company.c)                     */
} seer_stats;

/* Trace records (see seer_runtime_trace).  Times are CLOCK_MONOTONIC ns. */
typedef enum seer_trace_kind {
    SEER_TRACE_EVENT = 0,    /* one handled event: entity, type, sim_time         */
    SEER_TRACE_ACT = 1,      /* the act phase of one call on this worker          */
    SEER_TRACE_WINDOW = 2,   /* one window on this worker: sim_time = window start,
                                count = events it handled in the window            */
    SEER_TRACE_BOUNDARY = 3, /* the boundary phases (observe, publish)             */
    SEER_TRACE_BARRIER = 4,  /* waiting for the next phase (recorded when a claim
                                ends the wait)                                     */
    SEER_TRACE_INIT = 5,     /* the reset phases (clear, init)                      */
    SEER_TRACE_ROLLBACK = 6  /* optimistic executor: an entity rolled back: entity,
                                sim_time = the time it went back to, count = the
                                handlings undone                                   */
} seer_trace_kind;

typedef struct seer_trace_rec {
    uint64_t t0_ns;
    uint64_t t1_ns;
    double sim_time;
    uint32_t kind;
    uint32_t instance;
    uint32_t entity;
    uint32_t type;  /* event type (SEER_TRACE_EVENT)                        */
    uint32_t count; /* events (SEER_TRACE_WINDOW, SEER_TRACE_ROLLBACK)      */
    uint32_t pad_;
} seer_trace_rec;

/* ---- The model boundary (model.c) -------------------------------------- */

/* Check a model table: API version, required handlers, parameter and field
 * tables.  SEER_E_VERSION names both versions; SEER_E_ARG says what to fix. */
int seer_model_check(const seer_model *model, char *err, size_t errlen);
/* Zero `config` (config_size bytes) and store every parameter's default. */
void seer_config_defaults(const seer_model *model, void *config);
/* Set element `index` of parameter `name` after checking the value against
 * the parameter's type and range (SEER_E_CONFIG with a message naming the
 * parameter otherwise; nothing is stored then).  _none stores the "not set"
 * value of a SEER_P_NONE parameter. */
int seer_config_set_f64(const seer_model *model, void *config, const char *name, uint32_t index,
                        double value, char *err, size_t errlen);
int seer_config_set_i64(const seer_model *model, void *config, const char *name, uint32_t index,
                        int64_t value, char *err, size_t errlen);
int seer_config_set_u64(const seer_model *model, void *config, const char *name, uint32_t index,
                        uint64_t value, char *err, size_t errlen);
int seer_config_set_none(const seer_model *model, void *config, const char *name,
                         uint32_t index, char *err, size_t errlen);
/* Run the model's describe on `config` (which it may complete with derived
 * values) and check the sizes it reports. */
int seer_model_describe(const seer_model *model, void *config, seer_sizes *out, char *err,
                        size_t errlen);
/* Names of agents 0..n-1 into n slots of SEER_NAME_LEN bytes each (the
 * model's agent_name, else "<group>_<i>" for a model with groups, else
 * "agent_<i>"); SEER_E_MODEL for a failed, empty or repeated name. */
#define SEER_NAME_LEN 64
int seer_model_agent_names(const seer_model *model, const void *config, const seer_sizes *sizes,
                           uint32_t n, char *out, char *err, size_t errlen);
/* Group `group` of a described configuration (a model without groups has
 * one, "agents", made of its sizes); SEER_E_CONFIG with the model's reason
 * if its group hook fails. */
int seer_model_group(const seer_model *model, const void *config, const seer_sizes *sizes,
                     uint32_t group, seer_group *out, char *err, size_t errlen);
/* A multi-discrete group's choices per component (group->action_dim
 * entries) and their sum (*total; 0 for other kinds). */
int seer_model_action_nvec(const seer_model *model, const void *config, const seer_sizes *sizes,
                           uint32_t group, const seer_group *g, int32_t *nvec, uint64_t *total,
                           char *err, size_t errlen);
/* The discrete choices of one agent of group g, one mask byte each:
 * action_n (discrete), nvec_total (multi-discrete, the sum of its nvec), 0
 * (box).  A model with masks has mask rows of this length per group. */
uint64_t seer_model_group_choices(const seer_group *g, uint64_t nvec_total);
/* Bounds of group `group`'s observation elements (obs_dim each: the
 * group's); -inf..+inf where the model declares none.  SEER_E_MODEL when a
 * declared bound is no valid interval (NaN, low > high, low = +inf, high =
 * -inf): no space can be made of it. */
int seer_model_group_bounds(const seer_model *model, const void *config, const seer_sizes *sizes,
                            uint32_t group, uint32_t obs_dim, float *low, float *high, char *err,
                            size_t errlen);
/* Observation bounds (obs_dim each; a model with groups: all infinite, see
 * seer_model_group_bounds) and state bounds (state_dim each); -inf..+inf
 * where the model declares none.  SEER_E_MODEL as seer_model_group_bounds. */
int seer_model_bounds(const seer_model *model, const void *config, const seer_sizes *sizes,
                      float *obs_low, float *obs_high, float *state_low, float *state_high,
                      char *err, size_t errlen);
/* The name of an info value / event type ("" / "?" when the model has none). */
const char *seer_model_info_name(const seer_model *model, uint32_t i);
const char *seer_model_event_name(const seer_model *model, uint32_t type);

/* ---- Runtimes -------------------------------------------------------------- */

/* Checking mode (seer_runtime_options.check), used by `seer-env check`. */
enum {
    /* Serial executor: every handler runs with the memory it must not touch
     * protected (other entities' state, the snapshot, the configuration,
     * the model's static data) and with rand(), time() and friends
     * watched; a breach fails the call with SEER_E_ISOLATION. */
    SEER_CHECK_ISOLATE = 1u,
    /* Parallel executor: one partition per entity, visited in a fresh
     * random order in every window (outputs of a model that keeps the
     * contract do not change). */
    SEER_CHECK_SHUFFLE = 2u
    /* The optimistic executor runs no checking mode (SEER_E_EXECUTOR). */
};

/* The largest pool a runtime runs (threads, the calling thread included):
 * seer_runtime_create, seer_runtime_set_threads and seer_runtime_set_executor
 * refuse more, seer_runtime_set_call_threads a larger cap.  The Python layer
 * reads it from here (seer_env._bind.runtime.max_threads). */
#define SEER_MAX_THREADS 1024

typedef struct seer_runtime_options {
    uint32_t num_instances; /* B >= 1                                         */
    int executor;           /* SEER_EXECUTOR_*                                */
    uint32_t threads;       /* pool size, the calling thread included (>= 1)  */
    uint64_t max_cycles;    /* > 0: every agent is truncated after that many
                               steps (0: never)                               */
    uint32_t check;         /* SEER_CHECK_* (0 for normal runs)               */
    uint64_t shuffle_seed;  /* seed of SEER_CHECK_SHUFFLE's visiting orders   */
    uint64_t max_step_events; /* events one instance may handle in one step;
                               a step past it fails with SEER_E_BUDGET
                               (0: SEER_DEFAULT_STEP_EVENTS)                  */
    uint64_t memory_limit;  /* bytes the runtime may take, host buffers
                               included (0: the machine's physical memory)    */
    uint32_t flags;         /* SEER_RT_*                                      */
    /* Caller-owned host buffers, by SEER_BUF_* (seer_buffer_bytes bytes
     * each, 16-byte aligned); NULL: the runtime allocates (and frees) it.
     * Buffers the caller owns outlive the runtime: views of them stay
     * valid whatever is freed first. */
    void *buffers[9]; /* SEER_BUF_COUNT */
    uint64_t log_limit;     /* optimistic executor: bytes the rollback logs of
                               one step may take, to a chunk per thread (chunks
                               of 16 KiB-1 MiB: log_limit / threads / 8); a step
                               past it runs serially (0: the environment
                               variable SEER_LOG_LIMIT if set, else
                               memory_limit / 8, at least 64 MiB)             */
} seer_runtime_options;

/* Bytes of host buffer `which` (SEER_BUF_*) for B instances of these sizes. */
size_t seer_buffer_bytes(const seer_sizes *sizes, uint32_t num_instances, int which);
/* What seer_runtime_create checks, without allocating anything: the model,
 * the options, the configuration (describe completes a copy) and the memory
 * the runtime takes -- states, events and the host buffers, whoever
 * allocates them -- against memory_limit.  parts[k] (k < nparts) gets the
 * bytes of part k, named by seer_memory_part_name(k) (NULL past the last),
 * even when they do not fit; their sum is what is checked. */
int seer_runtime_estimate(const seer_model *model, const void *config, size_t config_size,
                          const seer_runtime_options *options, uint64_t *parts, size_t nparts,
                          char *err, size_t errlen);
const char *seer_memory_part_name(size_t part);

#define SEER_DEFAULT_STEP_EVENTS 100000000ull
enum {
    /* Let more threads take part in calls than the process has CPUs.  By
     * default the pool's active threads are capped at the CPU count: the
     * others would only wait for each other (stress tests set this). */
    SEER_RT_OVERSUBSCRIBE = 1u,
    /* The masks of a model with masks advise instead of forbidding (as if the
     * model had SEER_MODEL_MASK_ADVISORY): actions they rule out reach the
     * model's act, e.g. for a baseline trained without masks. */
    SEER_RT_MASK_ADVISORY = 2u
};

/* Create a runtime.  `config` points to the model's configuration struct of
 * `config_size` bytes (usually filled with seer_config_defaults and
 * seer_config_set_*); it is copied and then completed by the model's
 * describe.  On failure *out is NULL and err holds a message. */
int seer_runtime_create(const seer_model *model, const void *config, size_t config_size,
                        const seer_runtime_options *options, seer_runtime **out, char *err,
                        size_t errlen);
/* Join the workers and free everything.  NULL is ignored. */
void seer_runtime_destroy(seer_runtime *rt);

const char *seer_runtime_error(const seer_runtime *rt);
const seer_sizes *seer_runtime_sizes(const seer_runtime *rt);
const char *seer_runtime_model_name(const seer_runtime *rt);
const seer_model *seer_runtime_model(const seer_runtime *rt);
/* The runtime's configuration (as completed by describe); read-only. */
const void *seer_runtime_config(const seer_runtime *rt);
uint32_t seer_runtime_num_instances(const seer_runtime *rt);
/* Threads taking part in calls (the pool size asked for, capped at the
 * CPU count unless SEER_RT_OVERSUBSCRIBE). */
uint32_t seer_runtime_threads(const seer_runtime *rt);
/* Threads created (>= seer_runtime_threads: the others are parked). */
uint32_t seer_runtime_pool_size(const seer_runtime *rt);
/* The kernel thread ids of the pool's threads that take part in calls other
 * than the calling one (workers 1 .. threads - 1), into out[0 .. cap - 1]:
 * what STPA reads /proc/self/task/<tid>/schedstat by, to see how long they
 * waited for a core.  0 for a worker that has not started yet, and outside
 * Linux.  Returns how many it wrote.  Host thread, between calls. */
uint32_t seer_runtime_worker_tids(const seer_runtime *rt, int64_t *out, uint32_t cap);
/* ... and of every thread of the pool other than the calling one, the parked
 * ones too (workers 1 .. pool size - 1): the threads of this runtime STPA
 * leaves out where it reads what this process's other threads do.  Host
 * thread, between calls. */
uint32_t seer_runtime_pool_tids(const seer_runtime *rt, int64_t *out, uint32_t cap);
/* The executor the runtime was made with or switched to (SEER_EXECUTOR_*),
 * also while a pool's long alone stretch runs its steps on the serial
 * executor's queues. */
int seer_runtime_executor(const seer_runtime *rt);
void *seer_runtime_buffer(seer_runtime *rt, int which);

/* Change the pool size (parallel executor; outputs do not depend on it). */
int seer_runtime_set_threads(seer_runtime *rt, uint32_t threads);
/* Cap the threads the next calls use (0: no cap; at most the pool's active
 * ones are used anyway), without resizing the pool: the host lends a runtime
 * fewer threads while other runtimes of its process run (the process's thread
 * budget, seer_env.budget).  The workers beyond the cap skip those calls.
 * Outputs do not depend on it.  The optimistic executor takes a cap of 1 (its
 * calling thread then runs every slot of each speculation phase as one) and
 * uses every active thread under a larger cap (each slot needs a thread of
 * its own).  Host thread, between calls. */
int seer_runtime_set_call_threads(seer_runtime *rt, uint32_t threads);
/* Switch executor (and pool size) between calls; the pending events of every
 * instance move to the new executor's queues.  Outputs do not depend on it:
 * every executor hands each entity the same events in the same (time, key)
 * order.  threads must be 1 for the serial executor; the parallel executor
 * needs lookahead > 0 (SEER_E_EXECUTOR otherwise); the optimistic one runs
 * any lookahead.  On failure nothing changed. */
int seer_runtime_set_executor(seer_runtime *rt, int executor, uint32_t threads);
/* Put the event records now where the running configuration would have them
 * a while after a switch: on the serial executor the pending events moved
 * into address order (where they outgrow a core's L2) or the free records in
 * address order, as SEER_ORDER_AFTER_STEPS steps after a switch would (and
 * not again then); on a pool its ordering, whatever the budget (and its
 * first look after the switch kept).  For a controller that times
 * the steps right after a switch (STPA's probe visits): each configuration
 * then runs as it would after a while, not on the records the last one left
 * (the serial executor's first steps after parallel-2: up to 1.7x its
 * later ones, PCS 64x64).  An optimization only; outputs do not depend on
 * it.  Host thread, between calls. */
int seer_runtime_tidy_records(seer_runtime *rt);

/* Reset the instances whose mask byte is non-zero (mask NULL = all) with
 * seeds[i]; their outputs are the boundary outputs at t = 0. */
int seer_runtime_reset(seer_runtime *rt, const uint64_t *seeds, const uint8_t *mask);

/* Step the instances whose mask byte is non-zero (mask NULL = all) with the
 * actions in SEER_BUF_ACTIONS.  Actions of agents that are not alive are
 * ignored.  Every action of the stepped instances is validated before any
 * state changes (its range, and for a model with masks the mask of the last
 * boundary, unless SEER_MODEL_MASK_ADVISORY): on SEER_E_ACTION nothing has
 * changed.  Box actions are clipped in place. */
int seer_runtime_step(seer_runtime *rt, const uint8_t *mask);

/* The checks a step makes before anything changes, for the instances whose
 * mask byte is non-zero (mask must not be NULL), without stepping: each is
 * reset, not failed since, has a live agent, and every live agent's action
 * is valid (SEER_E_ORDER or SEER_E_ACTION, the message written to err).
 * Writes nothing of the runtime (not even its error message), and reads
 * only the selected instances' records and buffer rows: the host may call
 * it from a second thread while a call runs on instances it does not select
 * (seer_env's asynchronous send() checks its actions while the previous
 * send steps).  The one host function that may overlap a call; the caller
 * keeps the runtime alive meanwhile. */
int seer_runtime_check_actions(const seer_runtime *rt, const uint8_t *mask, char *err,
                               size_t errlen);

/* Per-instance queries, valid between calls. */
int seer_runtime_step_index(seer_runtime *rt, uint32_t instance, uint64_t *out);
int seer_runtime_entity_events(seer_runtime *rt, uint32_t instance, uint64_t *out);
int seer_runtime_global_state(seer_runtime *rt, uint32_t instance, float *out);
/* Copy entity states (num_entities * entity_size bytes) of one instance. */
int seer_runtime_entity_states(seer_runtime *rt, uint32_t instance, void *out);
int seer_runtime_pending_events(seer_runtime *rt, uint32_t instance, uint64_t *out);
void seer_runtime_stats(const seer_runtime *rt, seer_stats *out);

/* ---- Snapshots (snapshot.c) ------------------------------------------------
 *
 * One instance's whole state between calls, as bytes that another runtime of
 * the same model and configuration restores -- whatever its executor, thread
 * count or number of instances: the step index, seed and boundary time, every
 * entity's state, published record and runtime record (sequence counter,
 * events handled, RNG stream), the instance data, the pending events with
 * their payloads (ordered by key: the bytes do not depend on the executor or
 * the partitioning) and the instance's rows of the output buffers
 * (observations, rewards, flags, infos, masks; not the actions, which are the
 * host's input).  A restored instance continues bit for bit as the original
 * would have.  Host thread, between calls.
 *
 * The bytes carry a header (magic, SEER_SNAPSHOT_FORMAT, SEER_API_VERSION,
 * the byte order, the model's name, a hash of the completed configuration,
 * the sizes) and a checksum of everything before it.  Restore validates all
 * of it (and every event's target, time, key, payload size and type: one of
 * the model's event_type_count, where it declares them) before it
 * changes anything: a snapshot of another model or configuration, another
 * format, corrupted or truncated bytes fails with SEER_E_SNAPSHOT and a
 * message saying which, and the instance stays as it was.
 *
 * What a model keeps outside runtime-owned memory (a static variable, a
 * pointer into its own heap) is not in a snapshot: the contract forbids it. */
#define SEER_SNAPSHOT_FORMAT 1
/* Bytes enough for `instance`'s snapshot now, read without visiting its
 * events (exact when every pending payload has payload_size bytes; the
 * snapshot itself may be shorter).  SEER_E_ORDER before the instance's reset
 * or after a failed call. */
int seer_runtime_snapshot_size(seer_runtime *rt, uint32_t instance, uint64_t *out);
/* Write `instance`'s snapshot into out (cap bytes); *written gets its exact
 * length (SEER_E_ARG, with *written the length needed, when cap is too
 * small). */
int seer_runtime_snapshot(seer_runtime *rt, uint32_t instance, void *out, uint64_t cap,
                          uint64_t *written);
/* Replace `instance`'s state by a snapshot's (len bytes).  On failure nothing
 * changed; on success the instance is ready to step (a failed instance too). */
int seer_runtime_restore(seer_runtime *rt, uint32_t instance, const void *data, uint64_t len);
/* Every check seer_runtime_restore makes, changing nothing (a host restoring
 * several instances checks them all first). */
int seer_runtime_restore_check(seer_runtime *rt, uint32_t instance, const void *data,
                               uint64_t len);
/* seer_runtime_restore_check, and the snapshot's alive flags (its row of
 * SEER_BUF_ALIVE: num_agents bytes) into alive when every check passes (a
 * host checks its own state of the instance against them). */
int seer_runtime_restore_check_alive(seer_runtime *rt, uint32_t instance, const void *data,
                                     uint64_t len, uint8_t *alive);

/* Tracing: keep up to `capacity` records per worker thread (0 turns tracing
 * off and frees the buffers).  Records past the capacity are counted as
 * dropped.  When off, the event loop pays one predictable branch per entity
 * visit.  Enabling clears earlier records. */
int seer_runtime_trace(seer_runtime *rt, uint64_t capacity);
/* Trace every handled event (on: the default) or not (off: only the spans of
 * phases with their event counts, barrier waits, acts and boundaries, so a
 * traced step costs about what an untraced one does).  Host thread, between
 * calls. */
void seer_runtime_trace_events(seer_runtime *rt, int on);
uint64_t seer_runtime_trace_count(const seer_runtime *rt, uint32_t worker);
const seer_trace_rec *seer_runtime_trace_records(const seer_runtime *rt, uint32_t worker);
uint64_t seer_runtime_trace_dropped(const seer_runtime *rt);
void seer_runtime_trace_clear(seer_runtime *rt);
const char *seer_runtime_event_name(const seer_runtime *rt, uint32_t type);

/* The per-entity stream seeding, exposed so independent ports can check it:
 * fills s[4] with the xoshiro256** state of (seed, entity). */
void seer_rng_seed_state(uint64_t seed, uint32_t entity, uint64_t s[4]);

#ifdef __cplusplus
}
#endif
#endif /* SEER_RUNTIME_H */
