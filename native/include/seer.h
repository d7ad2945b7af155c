/*
 * seer.h -- the ONE header an environment model includes.
 *
 * A model is a `const seer_model` table of typed handlers (designated
 * initializers, no casts) plus a `describe` function that validates a
 * model-specific configuration struct and reports the model's sizes.  The
 * runtime (native/src) owns all memory, queues and threads; a model only sees
 * the opaque `seer_ctx` handed to each handler and the accessors below.
 *
 * The event-locality contract (what a model promises; see DESIGN.md):
 *   1. a handler running for entity x writes only x's own state;
 *   2. it reads x's state, the immutable configuration, the published snapshot
 *      (frozen at the last step boundary) and the per-instance boundary data;
 *   3. it schedules events to itself at any time >= now and to another entity
 *      at >= now + lookahead, never to another instance (targets are
 *      instance-local indices, so another instance cannot even be named);
 *   4. it draws random numbers only from x's own stream (seer_rng_*).
 * The runtime checks 3 on every seer_schedule call and reports violations as
 * status codes with a message; it never aborts.
 *
 * Lifecycle of one instance:
 *   reset : every entity's `init` runs at t = 0, then the boundary (below).
 *   step k: covers simulated time [k*D, (k+1)*D)
 *     act      -- `act` runs for every live agent at t = k*D;
 *     events   -- every pending event with time < (k+1)*D is handled, each
 *                 entity in (time, source entity, source sequence) order;
 *     boundary -- `boundary` once per instance (may write the instance data),
 *                 then `observe` per agent (may read every entity: the
 *                 instance is quiescent), then `publish` per entity.
 *
 * Agents are the first `num_agents` entities: agent i is entity i.
 */
#ifndef SEER_H
#define SEER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SEER_API_VERSION 1

/* Simulated time.  Events are ordered by (time, source entity, source seq). */
typedef double seer_time;

/* Status codes.  Every fallible call returns one; 0 is success. */
typedef enum seer_status {
    SEER_OK = 0,
    SEER_E_PAST = 1,        /* event time earlier than the current time     */
    SEER_E_LOOKAHEAD = 2,   /* cross-entity event earlier than now + L       */
    SEER_E_TARGET = 3,      /* target entity index out of range              */
    SEER_E_PAYLOAD = 4,     /* payload larger than the model's payload_size  */
    SEER_E_TIME = 5,        /* event time NaN or infinite                     */
    SEER_E_PHASE = 6,       /* call not allowed in the current phase         */
    SEER_E_MODEL = 7,       /* a model handler returned a non-zero status    */
    SEER_E_ACTION = 8,      /* invalid action value (range, NaN, inf)        */
    SEER_E_CONFIG = 9,      /* invalid configuration                         */
    SEER_E_NOMEM = 10,      /* allocation failed                              */
    SEER_E_ORDER = 11,      /* call in the wrong order (e.g. step before reset) */
    SEER_E_ARG = 12,        /* invalid argument to a runtime API call        */
    SEER_E_EXECUTOR = 13    /* executor cannot run this model (e.g. L = 0)   */
} seer_status;

typedef enum seer_action_kind {
    SEER_ACTION_DISCRETE = 0, /* one int32 per agent in [0, action_n)       */
    SEER_ACTION_BOX = 1       /* action_dim float32 per agent; finite values
                                 are clipped to [action_low, action_high]   */
} seer_action_kind;

/* Filled by a model's `describe` from its configuration. */
typedef struct seer_sizes {
    uint32_t num_entities;   /* entities per instance (>= num_agents)        */
    uint32_t num_agents;     /* agents per instance: entities 0..num_agents-1 */
    uint32_t obs_dim;        /* float32 observation length per agent         */
    uint32_t action_dim;     /* elements per agent action (1 for discrete)   */
    seer_action_kind action_kind;
    int32_t action_n;        /* number of discrete actions                    */
    float action_low;        /* Box bounds (same for every element)          */
    float action_high;
    uint32_t info_dim;       /* float64 info values per agent (named by the
                                model's info_names)                          */
    uint32_t state_dim;      /* float32 global state length per instance      */
    uint32_t entity_size;    /* bytes of per-entity state                     */
    uint32_t payload_size;   /* maximum event payload bytes                   */
    uint32_t snapshot_size;  /* bytes of one published snapshot record        */
    uint32_t instance_size;  /* bytes of per-instance boundary data           */
    seer_time lookahead;     /* L >= 0; L = 0 runs on the serial executor only */
    seer_time step_duration; /* D > 0                                         */
} seer_sizes;

/* Per-handler context: which instance/entity/time a handler runs for. */
typedef struct seer_ctx seer_ctx;

/* Where `observe` writes one agent's boundary outputs. */
typedef struct seer_output {
    float *obs;          /* obs_dim floats                                    */
    float *reward;       /* one float                                          */
    uint8_t *terminated; /* set to 1 when the agent ends (it then stops acting) */
    uint8_t *truncated;  /* the runtime also sets it at max_cycles             */
    double *info;        /* info_dim doubles                                   */
} seer_output;

typedef struct seer_model {
    const char *name;
    /* sizeof the model's configuration struct (checked by the runtime). */
    size_t config_size;
    /* Validate `config` and fill `out`.  On error write a message naming the
     * offending field into err (errlen bytes) and return SEER_E_CONFIG. */
    int (*describe)(const void *config, seer_sizes *out, char *err, size_t errlen);
    /* Entity init at reset (t = 0); the entity state arrives zeroed. */
    int (*init)(seer_ctx *ctx, void *entity);
    /* Apply a live agent's validated action at t = k*D.  `action` points to
     * action_dim int32 (discrete) or float32 (box) values. */
    int (*act)(seer_ctx *ctx, void *entity, const void *action);
    /* Handle one event.  `payload` holds payload_size bytes (the first
     * `size` of them were written by the sender). */
    int (*handle)(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                  uint32_t size);
    /* Optional: once per instance at the boundary, before observe. */
    void (*boundary)(seer_ctx *ctx, void *instance_data);
    /* Per agent at the boundary (after a step, and after reset, where the
     * reward is ignored). */
    void (*observe)(seer_ctx *ctx, uint32_t agent, const seer_output *out);
    /* Write the entity's snapshot record (snapshot_size bytes). */
    void (*publish)(seer_ctx *ctx, const void *entity, void *record);
    /* Optional: the instance's global state (state_dim floats) at the boundary. */
    void (*global_state)(seer_ctx *ctx, float *out);
    /* Names of the info values (info_dim entries) and of event types
     * (event_type_count entries) for messages and traces; may be NULL. */
    const char *const *info_names;
    const char *const *event_names;
    uint32_t event_type_count;
} seer_model;

/* ---- Accessors available to every handler ------------------------------ */
seer_time seer_now(const seer_ctx *ctx);
uint32_t seer_self(const seer_ctx *ctx);      /* entity (or agent) index      */
uint32_t seer_instance(const seer_ctx *ctx);  /* instance index in the batch   */
uint64_t seer_step_index(const seer_ctx *ctx);/* k of the current/last step    */
uint64_t seer_seed(const seer_ctx *ctx);      /* the instance's reset seed     */
const void *seer_config(const seer_ctx *ctx);
const seer_sizes *seer_model_sizes(const seer_ctx *ctx);
/* Published snapshot record of `entity` (NULL if out of range). */
const void *seer_snapshot(const seer_ctx *ctx, uint32_t entity);
/* Per-instance data written by `boundary`; read-only to other handlers. */
const void *seer_instance_data(const seer_ctx *ctx);

/* ---- Scheduling (init, act, handle only) -------------------------------- */
/* Schedule an event of `type` for `target` at time `t` with `size` payload
 * bytes copied from `payload`.  Returns SEER_OK or a violation code; on a
 * violation nothing is scheduled, a message is recorded and the current step
 * fails with that error once the handler returns. */
int seer_schedule(seer_ctx *ctx, uint32_t target, seer_time t, uint32_t type,
                  const void *payload, uint32_t size);

/* ---- Per-entity random stream (xoshiro256**, seeded via splitmix64 from
 *      the instance seed and the entity index) ---------------------------- */
uint64_t seer_rng_u64(seer_ctx *ctx);
double seer_rng_uniform(seer_ctx *ctx);         /* in (0, 1), 53-bit        */
double seer_rng_exponential(seer_ctx *ctx, double mean); /* -mean*log(u)    */
uint32_t seer_rng_below(seer_ctx *ctx, uint32_t n); /* uniform in [0, n)     */

/* ---- Boundary only (boundary, observe, global_state) -------------------- */
/* Read any entity's state of this instance (NULL outside the boundary). */
const void *seer_entity_state(const seer_ctx *ctx, uint32_t entity);
/* Whether an agent was alive at the start of this step. */
int seer_agent_alive(const seer_ctx *ctx, uint32_t agent);
/* Events handled so far by an entity since reset. */
uint64_t seer_entity_events(const seer_ctx *ctx, uint32_t entity);

#ifdef __cplusplus
}
#endif
#endif /* SEER_H */
