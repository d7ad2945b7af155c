/*
 * optgroups: a model with a `group` hook whose configuration chooses whether
 * it has groups: `groups=0` leaves num_groups at 0 in describe (one group,
 * described by seer_sizes itself: the hook describes nothing), `groups=2`
 * makes two ("left" and "right", 3 and 2 discrete choices, 3 and 2
 * observations).  Every agent observes its last action and the steps it has
 * taken; every choice is allowed.  `bad` breaks a rule of the right group's
 * rows, which are padded to the left group's: 1, action_mask writes mask[2];
 * 2, observe writes obs[2].
 */
#include <stdio.h>

#include "seer.h"

typedef struct optgroups_config {
    uint32_t num_agents;
    uint32_t groups;
    uint32_t bad;
} optgroups_config;

typedef struct optgroups_state {
    uint64_t steps;
    int32_t last;
    int32_t pad_;
} optgroups_state;

static const seer_param optgroups_params[] = {
    {SEER_MEMBER(optgroups_config, num_agents), .def = 4, .lo = 2, .hi = 64, .doc = "agents"},
    {SEER_MEMBER(optgroups_config, groups), .def = 0, .lo = 0, .hi = 2,
     .doc = "0: no groups (the group hook unused), 2: two groups"},
    {SEER_MEMBER(optgroups_config, bad), .def = 0, .lo = 0, .hi = 2,
     .doc = "break a rule in the right group's padded rows (tests)"},
};

static const seer_field optgroups_fields[] = {
    {SEER_MEMBER(optgroups_state, steps)},
    {SEER_MEMBER(optgroups_state, last)},
};

static int optgroups_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const optgroups_config *c = config;
    if (c->groups == 1) {
        snprintf(err, errlen, "optgroups: groups is 0 or 2");
        return SEER_E_CONFIG;
    }
    out->num_entities = c->num_agents;
    out->num_agents = c->num_agents;
    out->num_groups = c->groups;
    out->obs_dim = 2;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 4;
    out->entity_size = sizeof(optgroups_state);
    out->lookahead = 1.0;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int optgroups_group(const void *config, uint32_t g, seer_group *out, char *err,
                           size_t errlen)
{
    const optgroups_config *c = config;
    if (g > 1) {
        snprintf(err, errlen, "no group %u", g);
        return 1;
    }
    const uint32_t left = c->num_agents / 2;
    *out = (seer_group){.name = g ? "right" : "left", .count = g ? c->num_agents - left : left,
                        .obs_dim = g ? 2 : 3, .action_kind = SEER_ACTION_DISCRETE,
                        .action_dim = 1, .action_n = g ? 2 : 3};
    return 0;
}

static int optgroups_act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)ctx;
    optgroups_state *st = entity;
    st->last = *(const int32_t *)action;
    st->steps++;
    return SEER_OK;
}

static int optgroups_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                            uint32_t size)
{
    (void)ctx;
    (void)entity;
    (void)type;
    (void)payload;
    (void)size;
    return SEER_OK;
}

/* Whether agent `agent` is in the right group of a configuration with groups. */
static int right(const optgroups_config *c, uint32_t agent)
{
    return c->groups == 2 && agent >= c->num_agents / 2;
}

static void optgroups_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const optgroups_config *c = seer_config(ctx);
    const optgroups_state *st = seer_entity_state(ctx, agent);
    out->obs[0] = (float)st->last;
    out->obs[1] = (float)st->steps;
    if (c->groups == 2 && !right(c, agent))
        out->obs[2] = 7.0f;
    if (c->bad == 2 && right(c, agent))
        out->obs[2] = 7.0f;
    *out->reward = (float)st->last;
}

static void optgroups_mask(seer_ctx *ctx, uint32_t agent, uint8_t *mask)
{
    const optgroups_config *c = seer_config(ctx);
    const uint32_t n = c->groups == 2 ? (right(c, agent) ? 2u : 3u) : 4u;
    for (uint32_t k = 0; k < n; k++)
        mask[k] = 1;
    if (c->bad == 1 && right(c, agent))
        mask[2] = 0;
}

const seer_model optgroups_model = {
    .api_version = SEER_API_VERSION,
    .name = "optgroups",
    .config_size = sizeof(optgroups_config),
    .params = optgroups_params,
    .num_params = SEER_COUNT(optgroups_params),
    .describe = optgroups_describe,
    .act = optgroups_act,
    .handle = optgroups_handle,
    .observe = optgroups_observe,
    .state_fields = optgroups_fields,
    .num_state_fields = SEER_COUNT(optgroups_fields),
    .group = optgroups_group,
    .action_mask = optgroups_mask,
    .max_cycles = 5,
};
