/*
 * dying: a test model whose agents finish at different steps (the shipped
 * models finish every agent at once), for the Python layers' handling of
 * agents that die while others live.
 *
 * Agent a of an instance seeded s lives life = 1 + (s + a / 2) % 4 steps and
 * then terminates if s + a is even, else truncates; so agents 2j and 2j + 1
 * finish in the same step, one terminated and one truncated.  After k steps
 * its observation is [a, k, s % 7], its reward action + 0.5 * a, its infos
 * [k, sum of its actions].  Every step each agent also pings its right
 * neighbour (an event one lookahead later), whose count shows in `pings`.
 */
#include <stdio.h>

#include "seer.h"

typedef struct dying_config {
    uint32_t num_agents;
} dying_config;

typedef struct dying_agent {
    uint32_t k;      /* steps acted                  */
    uint32_t last;   /* last action                  */
    uint64_t asum;   /* sum of its actions           */
    uint64_t pings;  /* pings received               */
} dying_agent;

static const seer_param dying_params[] = {
    {SEER_MEMBER(dying_config, num_agents), .def = 4, .lo = 1, .hi = 4096,
     .doc = "agents (each one an entity)"},
};

static const seer_field dying_fields[] = {
    {SEER_MEMBER(dying_agent, k)}, {SEER_MEMBER(dying_agent, last)},
    {SEER_MEMBER(dying_agent, asum)}, {SEER_MEMBER(dying_agent, pings)},
};

static int dying_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const dying_config *c = config;
    out->num_entities = c->num_agents;
    out->num_agents = c->num_agents;
    out->obs_dim = 3;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->info_dim = 2;
    out->state_dim = 1;
    out->entity_size = sizeof(dying_agent);
    out->payload_size = 0;
    out->lookahead = 0.5;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int dying_act(seer_ctx *ctx, void *entity, const void *action)
{
    dying_agent *st = entity;
    const int32_t a = *(const int32_t *)action;
    st->k++;
    st->last = (uint32_t)a;
    st->asum += (uint64_t)a;
    const dying_config *c = seer_config(ctx);
    uint32_t next = (seer_self(ctx) + 1) % c->num_agents;
    return seer_schedule(ctx, next, seer_now(ctx) + 0.5, 0, NULL, 0);
}

static int dying_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)ctx;
    (void)type;
    (void)payload;
    (void)size;
    ((dying_agent *)entity)->pings++;
    return 0;
}

static void dying_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const dying_agent *st = seer_entity_state(ctx, agent);
    const uint64_t s = seer_seed(ctx);
    const uint32_t life = 1u + (uint32_t)((s + agent / 2u) % 4u);
    out->obs[0] = (float)agent;
    out->obs[1] = (float)st->k;
    out->obs[2] = (float)(s % 7u);
    *out->reward = (float)st->last + 0.5f * (float)agent;
    if (st->k >= life) {
        const int term = (s + agent) % 2u == 0u;
        *out->terminated = (uint8_t)term;
        *out->truncated = (uint8_t)!term;
    }
    out->info[0] = (double)st->k;
    out->info[1] = (double)st->asum;
}

static void dying_global_state(seer_ctx *ctx, float *out)
{
    const seer_sizes *sz = seer_model_sizes(ctx);
    uint32_t k = 0;
    for (uint32_t e = 0; e < sz->num_entities; e++) {
        const dying_agent *st = seer_entity_state(ctx, e);
        k = st->k > k ? st->k : k;
    }
    out[0] = (float)k;
}

static const char *const dying_info_names[] = {"steps", "action_sum"};
static const char *const dying_event_names[] = {"PING"};

const seer_model dying_model = {
    .api_version = SEER_API_VERSION,
    .name = "dying",
    .config_size = sizeof(dying_config),
    .params = dying_params,
    .num_params = SEER_COUNT(dying_params),
    .describe = dying_describe,
    .act = dying_act,
    .handle = dying_handle,
    .observe = dying_observe,
    .global_state = dying_global_state,
    .info_names = dying_info_names,
    .event_names = dying_event_names,
    .event_type_count = 1,
    .state_fields = dying_fields,
    .num_state_fields = SEER_COUNT(dying_fields),
    .max_cycles = 0,
};
