/*
 * __NAME__: a seer model (written by `seer-env new __NAME__`; make it yours).
 *
 * The example dynamics: agents sit on a ring and pass tokens.  Every token
 * is one event chain: when an agent handles a token it counts it and sends
 * it on -- to itself, or to a ring neighbour one lookahead later -- as its
 * last action says.  An agent that has received `goal` tokens is done
 * (terminated) and keeps every token that reaches it.  Passing towards a
 * neighbour that is done would only keep the token, so the action mask
 * (__NAME___action_mask) forbids it.
 *
 * Every hook a model can have is here, commented.  The rules every handler
 * keeps (the event-locality contract; `seer-env check` tests them):
 *   1. write only your own entity's state (the `entity` argument);
 *   2. read your state, the configuration, other entities' *published*
 *      snapshot records (seer_snapshot) and the instance data;
 *   3. schedule to yourself at >= now, to others at >= now + lookahead;
 *   4. draw random numbers only from seer_rng_* (your entity's stream).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "seer.h"

/* ---- configuration --------------------------------------------------------
 * One struct; every member a host may set is listed in __NAME___params below
 * with its default, range and a line of doc.  Hosts set values by name and
 * the runtime checks them against that table before describe runs. */
typedef struct __NAME___config {
    uint32_t num_agents;       /* agents on the ring                              */
    uint32_t tokens_per_agent; /* tokens each agent starts with                   */
    uint32_t goal;             /* tokens an agent must receive to be done         */
    double mean_delay;         /* mean extra delay of a pass                      */
    double lookahead;          /* L: a token reaches a neighbour >= L later       */
    double step_duration;      /* D: simulated time per step                      */
} __NAME___config;

static const seer_param __NAME___params[] = {
    {SEER_MEMBER(__NAME___config, num_agents), .def = 8, .lo = 2, .hi = 1 << 20,
     .doc = "agents on the ring"},
    {SEER_MEMBER(__NAME___config, tokens_per_agent), .def = 2, .lo = 1, .hi = 64,
     .doc = "tokens each agent starts with"},
    {SEER_MEMBER(__NAME___config, goal), .def = 40, .lo = 1, .hi = 1000000,
     .doc = "tokens an agent must receive to be done"},
    {SEER_MEMBER(__NAME___config, mean_delay), .def = 1.0, .lo = 0, .hi = 1e6,
     .doc = "mean extra delay of a pass (exponential)"},
    {SEER_MEMBER(__NAME___config, lookahead), .def = 0.5, .lo = 0, .hi = 1e6,
     .flags = SEER_P_GT, .doc = "a token reaches a neighbour at least this much later"},
    {SEER_MEMBER(__NAME___config, step_duration), .def = 4.0, .lo = 0, .hi = 1e6,
     .flags = SEER_P_GT, .doc = "simulated time per step"},
};

/* ---- entity state, event payload, snapshot record, instance data -------- */
typedef struct __NAME___agent {
    uint64_t received;      /* tokens received since reset                       */
    uint32_t step_received; /* tokens received in the current step               */
    uint32_t route;         /* last action: 0 keep, 1 pass right, 2 pass left    */
    bool done;              /* received goal tokens                              */
} __NAME___agent;

/* The state's members, for hosts that read it (env.runtime.entity_array()). */
static const seer_field __NAME___fields[] = {
    {SEER_MEMBER(__NAME___agent, received)},
    {SEER_MEMBER(__NAME___agent, step_received)},
    {SEER_MEMBER(__NAME___agent, route)},
    {SEER_MEMBER(__NAME___agent, done)},
};

typedef struct __NAME___token {
    uint64_t hops; /* how often this token was passed on */
} __NAME___token;

/* What every agent publishes at each step boundary for the others to read
 * during the next step (reading another agent's live state is not allowed:
 * it may be half way through the step on another thread). */
typedef struct __NAME___record {
    uint64_t received;
} __NAME___record;

/* Written by the boundary hook, read by every handler. */
typedef struct __NAME___totals {
    uint64_t received; /* tokens received by every agent of the instance */
} __NAME___totals;

enum { TOKEN = 0 };
enum { OBS_DIM = 4 };

/* ---- describe: cross-parameter rules, derived values, sizes -------------- */
static int __NAME___describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const __NAME___config *c = config;
    /* single parameters were checked against __NAME___params already; here
     * the rules that tie several together */
    if (c->goal < c->tokens_per_agent) {
        snprintf(err, errlen,
                 "__NAME__: goal=%u must be >= tokens_per_agent=%u (an agent would be done "
                 "with its own tokens)",
                 c->goal, c->tokens_per_agent);
        return SEER_E_CONFIG;
    }
    out->num_entities = c->num_agents; /* every entity is an agent here */
    out->num_agents = c->num_agents;
    out->obs_dim = OBS_DIM;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_dim = 1;
    out->action_n = 3;
    out->info_dim = 1;
    out->state_dim = c->num_agents;
    out->entity_size = sizeof(__NAME___agent);
    out->payload_size = sizeof(__NAME___token);
    out->snapshot_size = sizeof(__NAME___record);
    out->instance_size = sizeof(__NAME___totals);
    out->lookahead = c->lookahead;
    out->step_duration = c->step_duration;
    out->pending_events = (uint64_t)c->num_agents * c->tokens_per_agent; /* memory estimate */
    return SEER_OK;
}

/* Send a token on as `route` says; a neighbour that was done at the last
 * boundary (its published record says so) takes no tokens: keep it then.
 * (The mask forbids such a route; this still holds with enforce_masks=False.) */
static int pass_on(seer_ctx *ctx, const __NAME___config *c, uint32_t route, uint64_t hops)
{
    const uint32_t self = seer_self(ctx), n = c->num_agents;
    const seer_time delay = seer_rng_exponential(ctx, c->mean_delay); /* own stream */
    __NAME___token tok = {.hops = hops};
    const uint32_t to = route == 1 ? (self + 1) % n : (self + n - 1) % n;
    if (route != 0) {
        const __NAME___record *r = seer_snapshot(ctx, to);
        if (r->received < c->goal) /* cross-entity: at least a lookahead later */
            return seer_schedule(ctx, to, seer_now(ctx) + c->lookahead + delay, TOKEN, &tok,
                                 sizeof tok);
    }
    return seer_schedule(ctx, self, seer_now(ctx) + delay, TOKEN, &tok, sizeof tok);
}

/* ---- init: each entity at reset (t = 0), its state zeroed --------------- */
static int __NAME___init(seer_ctx *ctx, void *entity)
{
    const __NAME___config *c = seer_config(ctx);
    (void)entity;
    for (uint32_t j = 0; j < c->tokens_per_agent; j++) {
        int rc = pass_on(ctx, c, 0, 0);
        if (rc)
            return rc;
    }
    return SEER_OK;
}

/* ---- act: each live agent's action at the start of a step --------------- */
static int __NAME___act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)ctx;
    __NAME___agent *st = entity;
    /* validated: in [0, action_n) and allowed by the agent's mask */
    st->route = (uint32_t)*(const int32_t *)action;
    st->step_received = 0;
    return SEER_OK;
}

/* ---- handle: one event for this entity ------------------------------------ */
static int __NAME___handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                           uint32_t size)
{
    (void)type;
    (void)size;
    const __NAME___config *c = seer_config(ctx);
    __NAME___agent *st = entity;
    const __NAME___token *tok = payload;
    st->received++;
    st->step_received++;
    if (st->received >= c->goal)
        st->done = true;
    /* a done agent keeps its tokens; the others route them */
    return pass_on(ctx, c, st->done ? 0u : st->route, tok->hops + 1);
}

/* ---- boundary: once per instance, before observe (optional) -------------- */
static void __NAME___boundary(seer_ctx *ctx, void *instance_data)
{
    const seer_sizes *sz = seer_model_sizes(ctx);
    __NAME___totals *t = instance_data;
    t->received = 0;
    for (uint32_t e = 0; e < sz->num_entities; e++) /* the instance is quiescent */
        t->received += ((const __NAME___agent *)seer_entity_state(ctx, e))->received;
}

/* ---- observe: each agent's outputs at the boundary ------------------------- */
static void __NAME___observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const __NAME___config *c = seer_config(ctx);
    const __NAME___agent *st = seer_entity_state(ctx, agent);
    const __NAME___totals *t = seer_instance_data(ctx);
    const uint32_t right = (agent + 1) % c->num_agents;
    const __NAME___agent *nb = seer_entity_state(ctx, right);
    const double goal = (double)c->goal;
    out->obs[0] = (float)((double)st->step_received / c->tokens_per_agent);
    out->obs[1] = (float)fmin(1.0, (double)st->received / goal);
    out->obs[2] = (float)fmin(1.0, (double)nb->received / goal);
    out->obs[3] = (float)((double)st->received / (double)(t->received ? t->received : 1));
    *out->reward = (float)st->step_received / (float)c->tokens_per_agent;
    *out->terminated = st->done;
    out->info[0] = (double)st->received;
}

/* ---- action_mask: the choices each agent may take in the next step ---------
 * Optional (drop the function and `.action_mask` from the table to have no
 * masks; the observations are then plain arrays).  It runs after observe for
 * every agent that acts next; `mask` holds one byte per choice (action_n
 * here), all 1 on entry: write 0 where a choice is forbidden, and write only
 * this row.  It may read what observe reads.  Keep one choice allowed (a row
 * with none fails the step): here 0, keep, always is.  The host shows the row
 * as obs[agent]["action_mask"] (ParallelEnv, AEC) or infos["action_mask"]
 * (vector_env, agent_vector_env) and refuses a forbidden action with
 * InvalidActionError before anything changes.  To let such actions reach
 * `act` instead, set `.flags = SEER_MODEL_MASK_ADVISORY` (the env keyword
 * enforce_masks=False does it for one env). */
static void __NAME___action_mask(seer_ctx *ctx, uint32_t agent, uint8_t *mask)
{
    const __NAME___config *c = seer_config(ctx);
    const uint32_t n = c->num_agents;
    const __NAME___agent *right = seer_entity_state(ctx, (agent + 1) % n);
    const __NAME___agent *left = seer_entity_state(ctx, (agent + n - 1) % n);
    if (right->done)
        mask[1] = 0; /* pass right: the neighbour takes no tokens */
    if (left->done)
        mask[2] = 0; /* pass left */
}

/* ---- publish: each entity's record for the next step ---------------------- */
static void __NAME___publish(seer_ctx *ctx, const void *entity, void *record)
{
    (void)ctx;
    ((__NAME___record *)record)->received = ((const __NAME___agent *)entity)->received;
}

/* ---- global_state: the instance's state for centralised critics ---------- */
static void __NAME___global_state(seer_ctx *ctx, float *out)
{
    const __NAME___config *c = seer_config(ctx);
    for (uint32_t e = 0; e < c->num_agents; e++)
        out[e] = (float)fmin(1.0, (double)((const __NAME___agent *)seer_entity_state(ctx, e))
                                          ->received / (double)c->goal);
}

/* ---- names and bounds -------------------------------------------------------- */
static int __NAME___agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    (void)config;
    snprintf(buf, len, "agent_%u", agent);
    return 0;
}

static void __NAME___obs_bounds(const void *config, float *low, float *high)
{
    const __NAME___config *c = config;
    (void)c;
    for (int i = 0; i < OBS_DIM; i++) {
        low[i] = 0.0f;
        high[i] = i == 0 ? HUGE_VALF : 1.0f; /* tokens per step are unbounded */
    }
}

static void __NAME___state_bounds(const void *config, float *low, float *high)
{
    const __NAME___config *c = config;
    for (uint32_t e = 0; e < c->num_agents; e++) {
        low[e] = 0.0f;
        high[e] = 1.0f;
    }
}

static const char *const __NAME___info_names[] = {"received"};
static const char *const __NAME___event_names[] = {"TOKEN"};

/* ---- the model table: the one symbol the build looks for ----------------- */
const seer_model __NAME___model = {
    .api_version = SEER_API_VERSION,
    .name = "__NAME__",
    .config_size = sizeof(__NAME___config),
    .params = __NAME___params,
    .num_params = SEER_COUNT(__NAME___params),
    .describe = __NAME___describe,
    .init = __NAME___init,
    .act = __NAME___act,
    .handle = __NAME___handle,
    .boundary = __NAME___boundary,
    .observe = __NAME___observe,
    .publish = __NAME___publish,
    .global_state = __NAME___global_state,
    .info_names = __NAME___info_names,
    .event_names = __NAME___event_names,
    .event_type_count = 1,
    .agent_name = __NAME___agent_name,
    .obs_bounds = __NAME___obs_bounds,
    .state_bounds = __NAME___state_bounds,
    .state_fields = __NAME___fields,
    .num_state_fields = SEER_COUNT(__NAME___fields),
    .max_cycles = 200,
    .action_mask = __NAME___action_mask, /* optional: leave out for no masks */
};
