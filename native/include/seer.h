/*
 * seer.h -- the ONE header a seer model includes.
 *
 * A model is a `const seer_model` table (designated initializers, no casts):
 * typed handlers the runtime calls, plus tables that describe the model's
 * configuration struct (seer_param) and entity state (seer_field) so that a
 * host -- the Python package, the checker, a C program -- can fill, validate
 * and inspect them without a second copy of any layout.  The runtime owns all
 * memory, queues and threads; a handler only sees the opaque `seer_ctx` and
 * the accessors below.  `seer-env new NAME` writes a commented example.
 *
 * The event-locality contract (what a model promises):
 *   1. a handler running for entity x writes only x's own state;
 *   2. it reads x's state, the immutable configuration, the published snapshot
 *      (records frozen at the last step boundary) and the per-instance data;
 *   3. it schedules events to itself at any time >= now and to another entity
 *      at >= now + lookahead, never to another instance (targets are
 *      instance-local indices, so another instance cannot even be named);
 *   4. it draws random numbers only from x's own stream (seer_rng_*), and
 *      reads no clock.
 * The runtime checks 3 on every seer_schedule call and reports a violation as
 * a status code with a message; it never aborts.  `seer-env check` runs a
 * model in a checking mode that also catches breaches of 1, 2 and 4.
 *
 * Lifecycle of one instance:
 *   create: describe(config) validates the configuration, fills in derived
 *           values and reports the sizes;
 *   reset : every entity's `init` runs at t = 0, then the boundary (below);
 *   step k: covers simulated time [k*D, (k+1)*D)
 *     act      -- `act` runs for every live agent at t = k*D;
 *     events   -- every pending event with time < (k+1)*D is handled, each
 *                 entity in (time, source entity, source sequence) order;
 *     boundary -- `boundary` once per instance (may write the instance data),
 *                 then `observe` per agent (may read every entity: the
 *                 instance is quiescent) and, for a model with masks,
 *                 `action_mask` per agent that acts next, then `publish` per
 *                 entity.
 *
 * Agents are the first `num_agents` entities: agent i is entity i.
 *
 * Agent groups (optional): agents that see and choose different things
 * (predators and prey, base stations and users).  `describe` sets
 * `num_groups` > 1 and the `group` hook describes each group (name, count,
 * observation size, action kind and size, info names); group 0 takes the
 * first `count` agents, group 1 the next, and so on.  A model that leaves
 * num_groups at 0 has one group described by seer_sizes itself, as before.
 *
 * Action masks (optional): the `action_mask` hook says, at each boundary,
 * which discrete choices each agent that acts next may take.  An action the
 * mask forbids is refused before anything changes (SEER_E_ACTION), unless the
 * model sets SEER_MODEL_MASK_ADVISORY and treats such actions in `act`.
 *
 * Versioning: SEER_API_VERSION changes whenever this header changes in a way
 * that breaks models built against an older one.  Every model table carries
 * the version it was compiled with (`.api_version = SEER_API_VERSION`) and
 * the runtime refuses a table of another version.
 */
#ifndef SEER_H
#define SEER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 3: agent groups, multi-discrete actions, action masks (the `group`,
 *    `group_obs_bounds`, `action_nvec` and `action_mask` hooks, `flags`,
 *    seer_sizes.num_groups and .mask_dim).  A model written for version 2
 *    builds unchanged: every new member may be left out. */
#define SEER_API_VERSION 3

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
    SEER_E_MODEL = 7,       /* a handler returned a non-zero status, or the
                               model table is invalid                        */
    SEER_E_ACTION = 8,      /* invalid action value (range, NaN, inf)        */
    SEER_E_CONFIG = 9,      /* invalid configuration                         */
    SEER_E_NOMEM = 10,      /* allocation failed                              */
    SEER_E_ORDER = 11,      /* call in the wrong order (e.g. step before reset) */
    SEER_E_ARG = 12,        /* invalid argument to a runtime API call        */
    SEER_E_EXECUTOR = 13,   /* executor cannot run this model (e.g. L = 0)   */
    SEER_E_VERSION = 14,    /* model table built against another API version */
    SEER_E_ISOLATION = 15,  /* checking mode: a handler touched memory or a
                               source of randomness outside its entity       */
    SEER_E_INTERRUPTED = 16,/* the call was abandoned on SIGINT (Ctrl-C)     */
    SEER_E_BUDGET = 17,     /* a step handled more events than its budget    */
    SEER_E_SNAPSHOT = 18,   /* a snapshot that cannot be restored here (another
                               model, configuration or format; corrupted or
                               truncated bytes): nothing was changed          */
    SEER_E_TYPE = 19        /* event type not below the model's
                               event_type_count (when that is not 0)         */
} seer_status;

typedef enum seer_action_kind {
    SEER_ACTION_DISCRETE = 0, /* one int32 per agent in [0, action_n)       */
    SEER_ACTION_BOX = 1,      /* action_dim float32 per agent; finite values
                                 are clipped to [action_low, action_high]   */
    SEER_ACTION_MULTI_DISCRETE = 2 /* action_dim int32 per agent (the
                                 components), component j in [0, nvec[j]);
                                 the model's action_nvec hook gives nvec    */
} seer_action_kind;

/* Most agent groups one model may declare; most components of one
 * multi-discrete action. */
#define SEER_MAX_GROUPS 64
#define SEER_MAX_COMPONENTS 1024

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
    uint64_t pending_events; /* events an instance typically holds pending
                                (0: unknown); the runtime refuses a
                                configuration whose states and events cannot
                                fit in memory                                 */
    uint32_t num_groups;     /* agent groups: 0 for one group described by
                                the members above (1 too, for a model without
                                a `group` hook); >= 1 with the hook: it
                                describes each (1: one group it names), and
                                the runtime sets obs_dim, action_dim and
                                info_dim to the largest group's (the stride of
                                the host buffers' agent rows) and action_kind,
                                action_n and the bounds to group 0's          */
    uint32_t mask_dim;       /* set by the runtime, not by describe: bytes of
                                one agent's action mask row (the largest
                                group's: action_n for discrete, the sum of nvec
                                for multi-discrete); 0 without action_mask    */
} seer_sizes;

/* One agent group, as the `group` hook describes it. */
typedef struct seer_group {
    const char *name;        /* [A-Za-z_][A-Za-z0-9_]*, unique; agents are
                                named "<name>_<i>" (i within the group) unless
                                the model has agent_name; the runtime copies it */
    uint32_t count;          /* agents in the group (>= 1)                     */
    uint32_t obs_dim;        /* float32 observation length (>= 1)              */
    seer_action_kind action_kind;
    uint32_t action_dim;     /* 1 (discrete), elements (box) or components
                                (multi-discrete)                               */
    int32_t action_n;        /* discrete: number of actions                    */
    float action_low;        /* box: bounds of every element                   */
    float action_high;
    uint32_t info_dim;       /* float64 info values per agent                  */
    const char *const *info_names; /* info_dim names (NULL if info_dim = 0)    */
} seer_group;

/* ---- Describing structs: configuration parameters and state fields ------ */

/* The kind of a struct member: its element type is kind x size bytes. */
typedef enum seer_kind {
    SEER_KIND_BOOL = 1,  /* _Bool / bool (size 1)                */
    SEER_KIND_INT = 2,   /* signed integer of `size` bytes       */
    SEER_KIND_UINT = 3,  /* unsigned integer of `size` bytes     */
    SEER_KIND_FLOAT = 4  /* float (4) or double (8)              */
} seer_kind;

/* Flags of a configuration parameter. */
enum {
    SEER_P_GT = 1u,    /* the range's low end is exclusive: value > lo       */
    SEER_P_INF = 2u,   /* floats: +inf is accepted (hi bounds finite values) */
    SEER_P_NONE = 4u   /* "not set" (Python None) is accepted and stores the
                          `none` value, e.g. NaN for describe to derive     */
};

/* One member of the configuration struct.  Declare it with SEER_MEMBER (or
 * SEER_MEMBER_2D) and designated fields:
 *     {SEER_MEMBER(my_config, rate), .def = 0.5, .lo = 0, .hi = 1,
 *      .doc = "events per second"}
 * lo = hi = 0 (both left out) means the type's whole range (finite values
 * for floats).  Hosts set parameters by name through the runtime, which
 * checks type and range against this table; `describe` then checks the
 * rules that involve several parameters. */
typedef struct seer_param {
    const char *name;
    seer_kind kind;
    uint32_t size;     /* bytes of one element                               */
    uint32_t offset;   /* offsetof(config struct, member)                    */
    uint32_t count;    /* elements (1 for a scalar)                          */
    uint32_t inner;    /* 2-D arrays: elements per row (0 otherwise)         */
    uint32_t flags;    /* SEER_P_*                                           */
    double def;        /* default of every element                           */
    double lo;         /* range [lo, hi] (see SEER_P_GT, SEER_P_INF)         */
    double hi;
    double none;       /* stored for "not set" when SEER_P_NONE              */
    const char *doc;   /* one line for help texts                            */
} seer_param;

/* One member of a struct whose layout hosts read (the entity state):
 *     {SEER_MEMBER(my_state, pos)}  */
typedef struct seer_field {
    const char *name;
    seer_kind kind;
    uint32_t size;
    uint32_t offset;
    uint32_t count;
    uint32_t inner;
} seer_field;

/* Per-handler context: which instance/entity/time a handler runs for. */
typedef struct seer_ctx seer_ctx;

/* Flags of a model table (seer_model.flags). */
enum {
    /* Masks advise, they do not forbid: an action the mask rules out reaches
     * `act` like any other (the model treats it there), instead of being
     * refused with SEER_E_ACTION. */
    SEER_MODEL_MASK_ADVISORY = 1u
};

/* Where `observe` writes one agent's boundary outputs. */
typedef struct seer_output {
    float *obs;          /* obs_dim floats                                    */
    float *reward;       /* one float                                          */
    uint8_t *terminated; /* set to 1 when the agent ends (it then stops acting) */
    uint8_t *truncated;  /* the runtime also sets it at max_cycles             */
    double *info;        /* info_dim doubles                                   */
} seer_output;

typedef struct seer_model {
    /* SEER_API_VERSION as this model was compiled (checked at load). */
    uint32_t api_version;
    /* Unique among the models a process loads; used in every message. */
    const char *name;
    /* sizeof the model's configuration struct (0: no configuration). */
    size_t config_size;
    /* The configuration struct's members (defaults, ranges, docs). */
    const seer_param *params;
    uint32_t num_params;
    /* Required.  Check the rules that involve several parameters, fill in
     * derived values (members left at a SEER_P_NONE parameter's `none`
     * value), and fill `out`.  On error write a message naming the
     * offending parameter into err (errlen bytes) and return
     * SEER_E_CONFIG. */
    int (*describe)(void *config, seer_sizes *out, char *err, size_t errlen);
    /* Entity init at reset (t = 0); the entity state arrives zeroed. */
    int (*init)(seer_ctx *ctx, void *entity);
    /* Apply a live agent's validated action at t = k*D.  `action` points to
     * action_dim int32 (discrete, multi-discrete) or float32 (box) values:
     * the agent's group's action_dim (with groups, seer_sizes.action_dim is
     * the largest group's, the host rows' stride); read no further. */
    int (*act)(seer_ctx *ctx, void *entity, const void *action);
    /* Required.  Handle one event.  `payload` holds payload_size bytes (the
     * first `size` of them were written by the sender). */
    int (*handle)(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                  uint32_t size);
    /* Optional: once per instance at the boundary, before observe. */
    void (*boundary)(seer_ctx *ctx, void *instance_data);
    /* Required.  Per agent at the boundary (after a step, and after reset,
     * where the reward and flags are ignored). */
    void (*observe)(seer_ctx *ctx, uint32_t agent, const seer_output *out);
    /* Write the entity's snapshot record (snapshot_size bytes). */
    void (*publish)(seer_ctx *ctx, const void *entity, void *record);
    /* Optional: the instance's global state (state_dim floats) at the boundary. */
    void (*global_state)(seer_ctx *ctx, float *out);
    /* Names of the info values (info_dim entries) and of event types
     * (event_type_count entries) for messages and traces; may be NULL.
     * Where event_type_count is not 0, every event's type is below it:
     * seer_schedule refuses another (SEER_E_TYPE, a contract violation),
     * and so does restoring a snapshot that holds one (0: any type). */
    const char *const *info_names;
    const char *const *event_names;
    uint32_t event_type_count;
    /* Optional: the name of agent `agent` (at most 63 bytes), e.g.
     * "cell_34"; default "agent_<i>" ("<group>_<i>" in a model with groups).
     * Keep the form "<prefix>_<int>" with one prefix per group: TorchRL,
     * BenchMARL and AgileRL group agents by the name before the last "_<int>".
     * Names must differ (each is the agent's key in the env's dicts): two
     * alike make building an env fail with a ModelError naming them.
     * Return 0, or non-zero on error. */
    int (*agent_name)(const void *config, uint32_t agent, char *buf, size_t len);
    /* Optional: bounds of every observation element (obs_dim each) and of
     * the global state (state_dim each); default -inf..+inf.  Each element's
     * must be an interval: no NaN, low <= high, low below +inf, high above
     * -inf (else building an env fails with a ModelError naming the hook). */
    void (*obs_bounds)(const void *config, float *low, float *high);
    void (*state_bounds)(const void *config, float *low, float *high);
    /* Optional: the entity state's members, for hosts that inspect it. */
    const seer_field *state_fields;
    uint32_t num_state_fields;
    /* Steps after which every agent is truncated unless the host says
     * otherwise (0: never). */
    uint64_t max_cycles;

    /* ---- API version 3: groups, multi-discrete actions, masks ---------- */
    /* SEER_MODEL_* flags. */
    uint32_t flags;
    /* Required when describe sets num_groups > 1: describe group `group`
     * (0 <= group < num_groups) of this (completed) configuration into `out`
     * (zeroed).  On error write a message into err and return non-zero. */
    int (*group)(const void *config, uint32_t group, seer_group *out, char *err,
                 size_t errlen);
    /* Optional, groups only (instead of obs_bounds): bounds of group
     * `group`'s observation elements (its obs_dim each), intervals as
     * obs_bounds'. */
    void (*group_obs_bounds)(const void *config, uint32_t group, float *low, float *high);
    /* Required when a group's actions are multi-discrete: the number of
     * choices of each component (action_dim values >= 1) of group `group`
     * (0 for a model without groups). */
    void (*action_nvec)(const void *config, uint32_t group, int32_t *nvec);
    /* Optional: at the boundary (after observe) for every agent that acts
     * in the next step, which choices it may take: `mask` holds one byte per
     * choice (action_n for discrete actions, the components' choices one
     * after another for multi-discrete ones), all 1 (allowed) on entry;
     * write 0 where a choice is forbidden.  It may read what observe may
     * read and write only its own row; a row with no allowed choice (in any
     * component) fails the call.  Not called for box actions; the rows of
     * agents that do not act next are all 1. */
    void (*action_mask)(seer_ctx *ctx, uint32_t agent, uint8_t *mask);
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
 * bytes copied from `payload` (NULL only with size 0).  Returns SEER_OK or a
 * violation code; on a violation nothing is scheduled, a message is recorded
 * and the current step fails with that error once the handler returns. */
int seer_schedule(seer_ctx *ctx, uint32_t target, seer_time t, uint32_t type,
                  const void *payload, uint32_t size);

/* ---- Per-entity random stream (xoshiro256**, seeded via splitmix64 from
 *      the instance seed and the entity index) ---------------------------- */
uint64_t seer_rng_u64(seer_ctx *ctx);
double seer_rng_uniform(seer_ctx *ctx);         /* in (0, 1), 53-bit        */
double seer_rng_exponential(seer_ctx *ctx, double mean); /* -mean*log(u)    */
/* uniform in [0, n); n = 0 fails the handler's call (a ModelError) */
uint32_t seer_rng_below(seer_ctx *ctx, uint32_t n);

/* ---- Boundary only (boundary, observe, action_mask, global_state) ------- */
/* Read any entity's state of this instance (NULL outside the boundary). */
const void *seer_entity_state(const seer_ctx *ctx, uint32_t entity);
/* Whether an agent was alive at the start of this step. */
int seer_agent_alive(const seer_ctx *ctx, uint32_t agent);
/* The group of an agent (0 for a model without groups) and the first agent
 * of a group; UINT32_MAX when out of range.  Any handler. */
uint32_t seer_agent_group(const seer_ctx *ctx, uint32_t agent);
uint32_t seer_group_first(const seer_ctx *ctx, uint32_t group);
/* Events handled so far by an entity since reset. */
uint64_t seer_entity_events(const seer_ctx *ctx, uint32_t entity);

/* ---- Failing (any handler) ---------------------------------------------- */
/* Fail the current call: the host's error names the model, the handler, the
 * entity, the instance and the time, then `why`.  Returns SEER_E_MODEL, so a
 * handler that returns a status can `return seer_fail_step(ctx, "...");`
 * (the call fails whatever the handler returns afterwards). */
int seer_fail_step(seer_ctx *ctx, const char *why);

#ifndef SEER_CFFI
/* ---- Helpers for the tables (C only) ------------------------------------ */

/* Kind and element size of a struct member (scalars and 1-D arrays;
 * anything else fails to compile with "no matching association"). */
#define SEER__ASSOC(T, k) T: k, T *: k
#define SEER_KIND_OF(x)                                                            \
    _Generic((x), SEER__ASSOC(_Bool, SEER_KIND_BOOL),                              \
             SEER__ASSOC(signed char, SEER_KIND_INT),                              \
             SEER__ASSOC(short, SEER_KIND_INT), SEER__ASSOC(int, SEER_KIND_INT),   \
             SEER__ASSOC(long, SEER_KIND_INT), SEER__ASSOC(long long, SEER_KIND_INT), \
             SEER__ASSOC(unsigned char, SEER_KIND_UINT),                           \
             SEER__ASSOC(unsigned short, SEER_KIND_UINT),                          \
             SEER__ASSOC(unsigned int, SEER_KIND_UINT),                            \
             SEER__ASSOC(unsigned long, SEER_KIND_UINT),                           \
             SEER__ASSOC(unsigned long long, SEER_KIND_UINT),                      \
             SEER__ASSOC(float, SEER_KIND_FLOAT), SEER__ASSOC(double, SEER_KIND_FLOAT))
#define SEER_SIZE_OF_ELEM(x)                                                       \
    _Generic((x), SEER__ASSOC(_Bool, 1), SEER__ASSOC(signed char, 1),              \
             SEER__ASSOC(short, sizeof(short)), SEER__ASSOC(int, sizeof(int)),     \
             SEER__ASSOC(long, sizeof(long)), SEER__ASSOC(long long, sizeof(long long)), \
             SEER__ASSOC(unsigned char, 1),                                        \
             SEER__ASSOC(unsigned short, sizeof(short)),                           \
             SEER__ASSOC(unsigned int, sizeof(int)),                               \
             SEER__ASSOC(unsigned long, sizeof(long)),                             \
             SEER__ASSOC(unsigned long long, sizeof(long long)),                   \
             SEER__ASSOC(float, 4), SEER__ASSOC(double, 8))
#define SEER__M(T, m) (((T *)0)->m)

/* Name, kind, size, offset and count of member m of struct type T, for a
 * seer_param or seer_field initializer.  2-D arrays: SEER_MEMBER_2D. */
#define SEER_MEMBER(T, m)                                                          \
    .name = #m, .kind = SEER_KIND_OF(SEER__M(T, m)),                              \
    .size = (uint32_t)SEER_SIZE_OF_ELEM(SEER__M(T, m)), .offset = (uint32_t)offsetof(T, m), \
    .count = (uint32_t)(sizeof SEER__M(T, m) / SEER_SIZE_OF_ELEM(SEER__M(T, m))), .inner = 0
#define SEER_MEMBER_2D(T, m)                                                       \
    .name = #m, .kind = SEER_KIND_OF(SEER__M(T, m)[0]),                           \
    .size = (uint32_t)SEER_SIZE_OF_ELEM(SEER__M(T, m)[0]),                         \
    .offset = (uint32_t)offsetof(T, m),                                            \
    .count = (uint32_t)(sizeof SEER__M(T, m) / SEER_SIZE_OF_ELEM(SEER__M(T, m)[0])), \
    .inner = (uint32_t)(sizeof SEER__M(T, m)[0] / SEER_SIZE_OF_ELEM(SEER__M(T, m)[0]))

/* Number of entries of a static array (for num_params, num_state_fields). */
#define SEER_COUNT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#endif /* SEER_CFFI */

#ifdef __cplusplus
}
#endif
#endif /* SEER_H */
