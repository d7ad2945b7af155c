/*
 * faces: a test model whose agent names and bounds can be made invalid on
 * demand (`fault`), for the checks that refuse a model no env can be built
 * of: names alike, and bounds that are no interval.
 *
 *   fault 0  valid (obs in [0, 1], state in [-1, 1], names "agent_<i>")
 *   fault 1  agents 2j and 2j + 1 named alike
 *   fault 2  obs element 1 with a NaN low bound
 *   fault 3  obs element 0 with low 2 > high 1
 *   fault 4  state element 0 with a NaN high bound
 *   fault 5  obs element 1 with low +inf
 */
#include <math.h>
#include <stdio.h>

#include "seer.h"

typedef struct faces_config {
    uint32_t num_agents;
    uint32_t fault;
} faces_config;

typedef struct faces_agent {
    uint32_t k;
} faces_agent;

static const seer_param faces_params[] = {
    {SEER_MEMBER(faces_config, num_agents), .def = 4, .lo = 2, .hi = 4096,
     .doc = "agents (each one an entity)"},
    {SEER_MEMBER(faces_config, fault), .def = 0, .lo = 0, .hi = 5,
     .doc = "which name or bound is made invalid (see faces.c)"},
};

static int faces_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const faces_config *c = config;
    out->num_entities = c->num_agents;
    out->num_agents = c->num_agents;
    out->obs_dim = 2;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 2;
    out->state_dim = 1;
    out->entity_size = sizeof(faces_agent);
    out->lookahead = 0.5;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int faces_act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)ctx;
    ((faces_agent *)entity)->k += (uint32_t)*(const int32_t *)action;
    return 0;
}

static int faces_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)ctx;
    (void)entity;
    (void)type;
    (void)payload;
    (void)size;
    return 0;
}

static void faces_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const faces_agent *st = seer_entity_state(ctx, agent);
    out->obs[0] = st->k % 2 ? 1.0f : 0.0f;
    out->obs[1] = 0.5f;
}

static void faces_global_state(seer_ctx *ctx, float *out)
{
    (void)ctx;
    out[0] = 0.0f;
}

static int faces_agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    const faces_config *c = config;
    snprintf(buf, len, "agent_%u", c->fault == 1 ? agent / 2 : agent);
    return 0;
}

static void faces_obs_bounds(const void *config, float *low, float *high)
{
    const faces_config *c = config;
    low[0] = c->fault == 3 ? 2.0f : 0.0f;
    high[0] = 1.0f;
    low[1] = c->fault == 2 ? NAN : c->fault == 5 ? INFINITY : 0.0f;
    high[1] = c->fault == 5 ? INFINITY : 1.0f;
}

static void faces_state_bounds(const void *config, float *low, float *high)
{
    const faces_config *c = config;
    low[0] = -1.0f;
    high[0] = c->fault == 4 ? NAN : 1.0f;
}

static const char *const faces_event_names[] = {"NONE"};

const seer_model faces_model = {
    .api_version = SEER_API_VERSION,
    .name = "faces",
    .config_size = sizeof(faces_config),
    .params = faces_params,
    .num_params = SEER_COUNT(faces_params),
    .describe = faces_describe,
    .act = faces_act,
    .handle = faces_handle,
    .observe = faces_observe,
    .global_state = faces_global_state,
    .agent_name = faces_agent_name,
    .obs_bounds = faces_obs_bounds,
    .state_bounds = faces_state_bounds,
    .event_names = faces_event_names,
    .event_type_count = 1,
};
