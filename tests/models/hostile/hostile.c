/*
 * hostile: a test model that attacks the process running it, on demand (the
 * contract checker's fork, memory and hook-attribution findings,
 * seer_env/check.py); 0 does nothing wrong.  Agents form a ring: every step
 * each acts (Discrete(3), all allowed by its mask) and pings its right
 * neighbour one lookahead later.  Episodes last 12 steps.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "seer.h"

enum hostile_mode {
    H_NONE = 0,
    H_FORK = 1,               /* act of `culprit` in step `at_step` calls fork()      */
    H_LEAK = 2,               /* act of `culprit` leaks `leak_mib` MiB in every call  */
    H_MASK_HANG = 3,          /* action_mask of `culprit` never returns from `at_step` */
    H_STATE_BOUNDS_CRASH = 4, /* state_bounds raises SIGSEGV                          */
    H_OBS_BOUNDS_HANG = 5,    /* obs_bounds never returns                             */
    H_AGENT_NAME_CRASH = 6,   /* agent_name of `culprit` raises SIGSEGV               */
    H_LEAK_CRASH = 7,         /* as H_LEAK, writing its block unchecked: SIGSEGV once */
                              /* malloc fails                                         */
    H_MODES = 8
};

typedef struct hostile_config {
    uint32_t num_agents;
    uint32_t mode;
    uint32_t culprit;
    uint32_t at_step;
    uint32_t leak_mib;
} hostile_config;

typedef struct hostile_agent {
    uint64_t k;
    uint64_t pings;
} hostile_agent;

static const seer_param hostile_params[] = {
    {SEER_MEMBER(hostile_config, num_agents), .def = 4, .lo = 2, .hi = 64, .doc = "agents"},
    {SEER_MEMBER(hostile_config, mode), .def = H_NONE, .lo = 0, .hi = H_MODES - 1,
     .doc = "the attack (enum hostile_mode)"},
    {SEER_MEMBER(hostile_config, culprit), .def = 1, .lo = 0, .hi = 63,
     .doc = "the agent that attacks"},
    {SEER_MEMBER(hostile_config, at_step), .def = 2, .lo = 0, .hi = 1000,
     .doc = "the step from which it does"},
    {SEER_MEMBER(hostile_config, leak_mib), .def = 16, .lo = 1, .hi = 1024,
     .doc = "MiB leaked per call (H_LEAK)"},
};

static const seer_field hostile_fields[] = {
    {SEER_MEMBER(hostile_agent, k)}, {SEER_MEMBER(hostile_agent, pings)},
};

static void hostile_spin(void)
{
    for (volatile int x = 1; x;) {
    }
}

static int hostile_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const hostile_config *c = config;
    if (c->culprit >= c->num_agents) {
        snprintf(err, errlen, "culprit must be below num_agents");
        return SEER_E_CONFIG;
    }
    out->num_entities = c->num_agents;
    out->num_agents = c->num_agents;
    out->obs_dim = 2;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->info_dim = 0;
    out->state_dim = 1;
    out->entity_size = sizeof(hostile_agent);
    out->lookahead = 0.5;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int hostile_act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)action;
    hostile_agent *st = entity;
    const hostile_config *c = seer_config(ctx);
    const uint32_t self = seer_self(ctx);
    st->k++;
    if (self == c->culprit && c->mode == H_FORK && seer_step_index(ctx) == c->at_step)
        (void)fork(); /* both copies carry on */
    if (self == c->culprit && (c->mode == H_LEAK || c->mode == H_LEAK_CRASH)) {
        volatile char *p = malloc((size_t)c->leak_mib << 20);
        if (p || c->mode == H_LEAK_CRASH)
            p[0] = 1; /* never freed */
    }
    return seer_schedule(ctx, (self + 1) % c->num_agents, seer_now(ctx) + 0.5, 0, NULL, 0);
}

static int hostile_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                          uint32_t size)
{
    (void)ctx;
    (void)type;
    (void)payload;
    (void)size;
    ((hostile_agent *)entity)->pings++;
    return 0;
}

static void hostile_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const hostile_agent *st = seer_entity_state(ctx, agent);
    out->obs[0] = (float)st->k;
    out->obs[1] = (float)st->pings;
    *out->reward = 1.0f;
}

static void hostile_action_mask(seer_ctx *ctx, uint32_t agent, uint8_t *mask)
{
    (void)mask;
    const hostile_config *c = seer_config(ctx);
    if (c->mode == H_MASK_HANG && agent == c->culprit && seer_step_index(ctx) >= c->at_step)
        hostile_spin();
}

static void hostile_global_state(seer_ctx *ctx, float *out)
{
    out[0] = (float)seer_step_index(ctx);
}

static int hostile_agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    const hostile_config *c = config;
    if (c->mode == H_AGENT_NAME_CRASH && agent == c->culprit)
        raise(SIGSEGV);
    snprintf(buf, len, "ring_%u", agent);
    return 0;
}

static void hostile_obs_bounds(const void *config, float *low, float *high)
{
    const hostile_config *c = config;
    if (c->mode == H_OBS_BOUNDS_HANG)
        hostile_spin();
    low[0] = low[1] = 0.0f;
    high[0] = high[1] = 1e9f;
}

static void hostile_state_bounds(const void *config, float *low, float *high)
{
    const hostile_config *c = config;
    if (c->mode == H_STATE_BOUNDS_CRASH)
        raise(SIGSEGV);
    low[0] = 0.0f;
    high[0] = 1e9f;
}

static const char *const hostile_events[] = {"PING"};

const seer_model hostile_model = {
    .api_version = SEER_API_VERSION,
    .name = "hostile",
    .config_size = sizeof(hostile_config),
    .params = hostile_params,
    .num_params = SEER_COUNT(hostile_params),
    .describe = hostile_describe,
    .act = hostile_act,
    .handle = hostile_handle,
    .observe = hostile_observe,
    .global_state = hostile_global_state,
    .agent_name = hostile_agent_name,
    .obs_bounds = hostile_obs_bounds,
    .state_bounds = hostile_state_bounds,
    .action_mask = hostile_action_mask,
    .event_names = hostile_events,
    .event_type_count = 1,
    .state_fields = hostile_fields,
    .num_state_fields = SEER_COUNT(hostile_fields),
    .max_cycles = 12,
};
