/*
 * leaky: a model that keeps part of its state outside runtime-owned memory,
 * for the contract checker's snapshot pass.  Entity 0 of each instance
 * counts its events in a heap block of its own (allocated once, in describe)
 * and copies the count into its state; init sets the count to 0.  Every run
 * from a reset is deterministic -- the replay, order and matrix passes see
 * nothing, and no handler touches protected memory -- but a restored
 * snapshot does not hold the count, so the steps after a restore differ.
 */
#include <stdio.h>
#include <stdlib.h>

#include "seer.h"

typedef struct leaky_config {
    uint32_t num_entities;
} leaky_config;

typedef struct leaky_state {
    uint64_t ticks;
    uint64_t seen;
} leaky_state;

enum { TICK = 0, SLOTS = 64 };

/* One counter per instance (index mod SLOTS), each its own heap block. */
static uint64_t *leaky_slots[SLOTS];

static const seer_param leaky_params[] = {
    {SEER_MEMBER(leaky_config, num_entities), .def = 4, .lo = 1, .hi = 64, .doc = "entities"},
};

static const seer_field leaky_fields[] = {
    {SEER_MEMBER(leaky_state, ticks)},
    {SEER_MEMBER(leaky_state, seen)},
};

static int leaky_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const leaky_config *c = config;
    for (int i = 0; i < SLOTS; i++)
        if (!leaky_slots[i] && !(leaky_slots[i] = calloc(1, sizeof(uint64_t)))) {
            snprintf(err, errlen, "leaky: out of memory");
            return SEER_E_NOMEM;
        }
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 2;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 2;
    out->entity_size = sizeof(leaky_state);
    out->payload_size = 8;
    out->lookahead = 0.5;
    out->step_duration = 1.0;
    return SEER_OK;
}

static uint64_t *slot(seer_ctx *ctx) { return leaky_slots[seer_instance(ctx) % SLOTS]; }

static int leaky_init(seer_ctx *ctx, void *entity)
{
    (void)entity;
    if (seer_self(ctx) == 0)
        *slot(ctx) = 0;
    return SEER_OK;
}

static int leaky_act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)entity;
    const int32_t a = *(const int32_t *)action;
    return seer_schedule(ctx, seer_self(ctx), seer_now(ctx) + 0.25 * (1 + a), TICK, NULL, 0);
}

static int leaky_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)type;
    (void)payload;
    (void)size;
    leaky_state *st = entity;
    st->ticks++;
    if (seer_self(ctx) == 0)
        st->seen = ++*slot(ctx); /* the count lives outside the runtime */
    return SEER_OK;
}

static void leaky_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const leaky_state *st = seer_entity_state(ctx, agent);
    out->obs[0] = (float)st->ticks;
    out->obs[1] = (float)st->seen;
}

const seer_model leaky_model = {
    .api_version = SEER_API_VERSION,
    .name = "leaky",
    .config_size = sizeof(leaky_config),
    .params = leaky_params,
    .num_params = SEER_COUNT(leaky_params),
    .describe = leaky_describe,
    .init = leaky_init,
    .act = leaky_act,
    .handle = leaky_handle,
    .observe = leaky_observe,
    .state_fields = leaky_fields,
    .num_state_fields = SEER_COUNT(leaky_fields),
    .max_cycles = 20,
};
