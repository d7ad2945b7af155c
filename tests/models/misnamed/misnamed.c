/*
 * misnamed: a model that keeps the contract but whose table calls it
 * "someone_else" (its folder, and so its declared name, is "misnamed"), for
 * the contract checker's tests: every runtime message names the table's
 * name, so the checker reports the mismatch.
 */
#include <stdint.h>

#include "seer.h"

typedef struct misnamed_config {
    uint32_t num_entities;
} misnamed_config;

typedef struct misnamed_state {
    uint64_t ticks;
} misnamed_state;

static const seer_param misnamed_params[] = {
    {SEER_MEMBER(misnamed_config, num_entities), .def = 4, .lo = 1, .hi = 64, .doc = "entities"},
};

static int misnamed_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const misnamed_config *c = config;
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 1;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 2;
    out->entity_size = sizeof(misnamed_state);
    out->lookahead = 0.5;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int misnamed_act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)entity;
    return seer_schedule(ctx, seer_self(ctx),
                         seer_now(ctx) + 0.25 * (1 + *(const int32_t *)action), 0, NULL, 0);
}

static int misnamed_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                           uint32_t size)
{
    (void)ctx;
    (void)type;
    (void)payload;
    (void)size;
    ((misnamed_state *)entity)->ticks++;
    return SEER_OK;
}

static void misnamed_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const misnamed_state *st = seer_entity_state(ctx, agent);
    out->obs[0] = (float)st->ticks;
    *out->reward = 1.0f;
}

const seer_model misnamed_model = {
    .api_version = SEER_API_VERSION,
    .name = "someone_else",
    .config_size = sizeof(misnamed_config),
    .params = misnamed_params,
    .num_params = SEER_COUNT(misnamed_params),
    .describe = misnamed_describe,
    .act = misnamed_act,
    .handle = misnamed_handle,
    .observe = misnamed_observe,
    .max_cycles = 20,
};
