/*
 * teams: a test model with three agent groups, each with its own spaces:
 *
 *   "hunter" (num_hunters agents): observation [a, k, s % 5] (3 floats),
 *            Discrete(5) actions, masked: choice (k + a) % 5 is forbidden
 *            (k = steps acted so far), and so is choice 4 when `strict`;
 *   "runner" (num_runners agents): observation [a, k] (2 floats), MultiDiscrete
 *            [3, 2] actions, masked: component 0 forbids (k + a) % 3, component 1
 *            allows only 1 - k % 2 when `strict`;
 *   "scout"  (num_scouts agents, may be 0 = no group): observation [a, k, s % 3, 1]
 *            (4 floats), Box(-1, 1, (2,)) actions, no mask.
 *
 * Agent a's reward is the sum of its last action's elements plus a / 8; its
 * infos are the group's own (hunter: "steps"; runner: "steps", "c0"; scout:
 * none).  Every agent terminates after `life` steps.  Each act pings the next
 * agent one lookahead later (events across entities, for the executors).
 * `solo` keeps the hunters alone (one group, still named by the hook).
 * `bad` breaks one rule on purpose (1: hunter masks allow nothing at step 2,
 * 2: the mask hook writes the next agent's row, 3: the groups' counts do not
 * add up, 4: two groups with one name, 5: a group with obs_dim 0).
 */
#include <stdio.h>
#include <string.h>

#include "seer.h"

typedef struct teams_config {
    uint32_t num_hunters;
    uint32_t num_runners;
    uint32_t num_scouts;
    uint32_t life;
    uint32_t strict;
    uint32_t bad;
    uint32_t solo;
} teams_config;

typedef struct teams_agent {
    uint32_t k;
    float last_sum;
    int32_t c0;
    uint64_t pings;
} teams_agent;

static const seer_param teams_params[] = {
    {SEER_MEMBER(teams_config, num_hunters), .def = 2, .lo = 1, .hi = 1000, .doc = "hunters"},
    {SEER_MEMBER(teams_config, num_runners), .def = 3, .lo = 1, .hi = 1000, .doc = "runners"},
    {SEER_MEMBER(teams_config, num_scouts), .def = 1, .lo = 0, .hi = 1000,
     .doc = "scouts (0: no scout group)"},
    {SEER_MEMBER(teams_config, life), .def = 6, .lo = 1, .hi = 1000000,
     .doc = "steps every agent lives"},
    {SEER_MEMBER(teams_config, strict), .def = 0, .lo = 0, .hi = 1,
     .doc = "masks forbid more (hunter choice 4, runner component 1)"},
    {SEER_MEMBER(teams_config, bad), .def = 0, .lo = 0, .hi = 5,
     .doc = "break one rule on purpose (tests)"},
    {SEER_MEMBER(teams_config, solo), .def = 0, .lo = 0, .hi = 1,
     .doc = "hunters only: one group (named by the group hook), masked"},
};

static const seer_field teams_fields[] = {
    {SEER_MEMBER(teams_agent, k)},
    {SEER_MEMBER(teams_agent, last_sum)},
    {SEER_MEMBER(teams_agent, c0)},
    {SEER_MEMBER(teams_agent, pings)},
};

static uint32_t num_agents(const teams_config *c)
{
    return c->solo ? c->num_hunters : c->num_hunters + c->num_runners + c->num_scouts;
}

static int teams_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const teams_config *c = config;
    out->num_agents = num_agents(c) + (c->bad == 3 ? 1u : 0u);
    out->num_entities = out->num_agents;
    out->num_groups = c->solo ? 1 : c->num_scouts ? 3 : 2;
    out->state_dim = 2;
    out->entity_size = sizeof(teams_agent);
    out->lookahead = 0.5;
    out->step_duration = 1.0;
    return SEER_OK;
}

static const char *const hunter_info[] = {"steps"};
static const char *const runner_info[] = {"steps", "c0"};

static int teams_group(const void *config, uint32_t g, seer_group *out, char *err, size_t errlen)
{
    const teams_config *c = config;
    switch (g) {
    case 0:
        *out = (seer_group){.name = "hunter", .count = c->num_hunters, .obs_dim = 3,
                            .action_kind = SEER_ACTION_DISCRETE, .action_dim = 1,
                            .action_n = 5, .info_dim = 1, .info_names = hunter_info};
        return 0;
    case 1:
        *out = (seer_group){.name = c->bad == 4 ? "hunter" : "runner", .count = c->num_runners,
                            .obs_dim = 2, .action_kind = SEER_ACTION_MULTI_DISCRETE,
                            .action_dim = 2, .info_dim = 2, .info_names = runner_info};
        return 0;
    case 2:
        *out = (seer_group){.name = "scout", .count = c->num_scouts,
                            .obs_dim = c->bad == 5 ? 0u : 4u, .action_kind = SEER_ACTION_BOX,
                            .action_dim = 2, .action_low = -1.0f, .action_high = 1.0f};
        return 0;
    default: snprintf(err, errlen, "no group %u", g); return 1;
    }
}

static void teams_nvec(const void *config, uint32_t g, int32_t *nvec)
{
    (void)config;
    if (g == 1) {
        nvec[0] = 3;
        nvec[1] = 2;
    }
}

static void teams_group_obs_bounds(const void *config, uint32_t g, float *low, float *high)
{
    const teams_config *c = config;
    const uint32_t n = g == 0 ? 3 : g == 1 ? 2 : 4;
    for (uint32_t i = 0; i < n; i++) {
        low[i] = 0.0f;
        high[i] = (float)(num_agents(c) + c->life + 8);
    }
}

static uint32_t group_of(const teams_config *c, uint32_t a)
{
    return a < c->num_hunters ? 0u : a < c->num_hunters + c->num_runners ? 1u : 2u;
}

static int teams_act(seer_ctx *ctx, void *entity, const void *action)
{
    const teams_config *c = seer_config(ctx);
    teams_agent *st = entity;
    const uint32_t a = seer_self(ctx), g = group_of(c, a);
    if (g == 0) {
        st->last_sum = (float)*(const int32_t *)action;
    } else if (g == 1) {
        const int32_t *v = action;
        st->last_sum = (float)(v[0] + v[1]);
        st->c0 += v[0];
    } else {
        const float *v = action;
        st->last_sum = v[0] + v[1];
    }
    st->k++;
    return seer_schedule(ctx, (a + 1) % num_agents(c), seer_now(ctx) + 0.5, 0, NULL, 0);
}

static int teams_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)ctx;
    (void)type;
    (void)payload;
    (void)size;
    ((teams_agent *)entity)->pings++;
    return 0;
}

static void teams_observe(seer_ctx *ctx, uint32_t a, const seer_output *out)
{
    const teams_config *c = seer_config(ctx);
    const teams_agent *st = seer_entity_state(ctx, a);
    const uint64_t s = seer_seed(ctx);
    const uint32_t g = seer_agent_group(ctx, a);
    out->obs[0] = (float)a;
    out->obs[1] = (float)st->k;
    if (g == 0)
        out->obs[2] = (float)(s % 5u);
    if (g == 2) {
        out->obs[2] = (float)(s % 3u);
        out->obs[3] = 1.0f;
    }
    *out->reward = st->last_sum + (float)a / 8.0f;
    *out->terminated = st->k >= c->life;
    if (g == 0)
        out->info[0] = (double)st->k;
    else if (g == 1) {
        out->info[0] = (double)st->k;
        out->info[1] = (double)st->c0;
    }
}

static void teams_mask(seer_ctx *ctx, uint32_t a, uint8_t *mask)
{
    const teams_config *c = seer_config(ctx);
    const teams_agent *st = seer_entity_state(ctx, a);
    const uint32_t g = seer_agent_group(ctx, a);
    const uint32_t k = st->k;
    if (g == 0) {
        mask[(k + a) % 5u] = 0;
        if (c->strict)
            mask[4] = 0;
        if (c->bad == 1 && k == 2)
            memset(mask, 0, 5);
        if (c->bad == 2 && a + 1 < c->num_hunters)
            mask[seer_model_sizes(ctx)->mask_dim] ^= 1; /* the next agent's row */
    } else if (g == 1) {
        mask[(k + a) % 3u] = 0;
        if (c->strict)
            mask[3 + (k % 2u)] = 0;
    }
}

static void teams_global_state(seer_ctx *ctx, float *out)
{
    const seer_sizes *sz = seer_model_sizes(ctx);
    uint64_t pings = 0, k = 0;
    for (uint32_t e = 0; e < sz->num_entities; e++) {
        const teams_agent *st = seer_entity_state(ctx, e);
        pings += st->pings;
        k += st->k;
    }
    out[0] = (float)pings;
    out[1] = (float)k;
}

static const char *const teams_event_names[] = {"PING"};

const seer_model teams_model = {
    .api_version = SEER_API_VERSION,
    .name = "teams",
    .config_size = sizeof(teams_config),
    .params = teams_params,
    .num_params = SEER_COUNT(teams_params),
    .describe = teams_describe,
    .act = teams_act,
    .handle = teams_handle,
    .observe = teams_observe,
    .global_state = teams_global_state,
    .event_names = teams_event_names,
    .event_type_count = 1,
    .state_fields = teams_fields,
    .num_state_fields = SEER_COUNT(teams_fields),
    .group = teams_group,
    .group_obs_bounds = teams_group_obs_bounds,
    .action_nvec = teams_nvec,
    .action_mask = teams_mask,
};
