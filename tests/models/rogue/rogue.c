/*
 * rogue: a model that breaks one rule of the event-locality contract on
 * demand, for the contract checker's tests.  Entities form a ring; every
 * step each agent acts (a tick to itself), every tick pings the right
 * neighbour one lookahead later.  In step `at_step`, entity `culprit`
 * misbehaves as `mode` says (0: never); the other entities always behave.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "seer.h"

enum rogue_mode {
    ROGUE_NONE = 0,
    ROGUE_WRITE_OTHER = 1,  /* handle writes the next entity's state            */
    ROGUE_READ_LIVE = 2,    /* handle reads the next entity's live state        */
    ROGUE_STATIC = 3,       /* handle counts in a static variable               */
    ROGUE_RAND = 4,         /* handle draws from rand()                         */
    ROGUE_CLOCK = 5,        /* handle reads the wall clock                       */
    ROGUE_LOOKAHEAD = 6,    /* handle pings the neighbour inside the lookahead   */
    ROGUE_SNAPSHOT = 7,     /* handle writes its published record               */
    ROGUE_CONFIG = 8,       /* handle writes the configuration                  */
    ROGUE_OBSERVE = 9,      /* observe writes the agent's state                 */
    ROGUE_THREAD = 10,      /* handle keeps a thread-local counter: its results
                               depend on which events this thread ran before    */
    ROGUE_BOUNDARY_RNG = 11,/* the boundary hook draws a random number           */
    ROGUE_NULL = 12,        /* handle reads another entity through
                               seer_entity_state (NULL outside the boundary)    */
    ROGUE_OBS_ROW = 13,     /* observe writes one element past its obs row (the
                               next agent's obs[0])                              */
    ROGUE_MODES = 14
};

typedef struct rogue_config {
    uint32_t num_entities;
    uint32_t mode;
    uint32_t culprit;
    uint32_t at_step;
    double lookahead;
} rogue_config;

typedef struct rogue_state {
    uint64_t ticks;
    uint64_t pings;
    double value;
    uint32_t last_action;
    uint32_t pad_;
} rogue_state;

typedef struct rogue_record {
    uint64_t ticks;
} rogue_record;

enum { TICK = 0, PING = 1 };

static uint64_t rogue_counter;                 /* ROGUE_STATIC */
static _Thread_local uint64_t rogue_thread_count; /* ROGUE_THREAD */

static const seer_param rogue_params[] = {
    {SEER_MEMBER(rogue_config, num_entities), .def = 6, .lo = 2, .hi = 256, .doc = "entities"},
    {SEER_MEMBER(rogue_config, mode), .def = ROGUE_NONE, .lo = 0, .hi = ROGUE_MODES - 1,
     .doc = "the rule to break (enum rogue_mode)"},
    {SEER_MEMBER(rogue_config, culprit), .def = 1, .lo = 0, .hi = 255,
     .doc = "the entity that breaks it"},
    {SEER_MEMBER(rogue_config, at_step), .def = 2, .doc = "the step in which it does"},
    {SEER_MEMBER(rogue_config, lookahead), .def = 0.5, .lo = 0, .hi = 1, .flags = SEER_P_GT,
     .doc = "lookahead"},
};

static const seer_field rogue_fields[] = {
    {SEER_MEMBER(rogue_state, ticks)}, {SEER_MEMBER(rogue_state, pings)},
    {SEER_MEMBER(rogue_state, value)}, {SEER_MEMBER(rogue_state, last_action)},
};

static int rogue_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const rogue_config *c = config;
    if (c->culprit >= c->num_entities) {
        snprintf(err, errlen, "rogue: culprit=%u must be < num_entities=%u", c->culprit,
                 c->num_entities);
        return SEER_E_CONFIG;
    }
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 3;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->entity_size = sizeof(rogue_state);
    out->payload_size = 8;
    out->snapshot_size = sizeof(rogue_record);
    out->lookahead = c->lookahead;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int rogue_act(seer_ctx *ctx, void *entity, const void *action)
{
    rogue_state *st = entity;
    st->last_action = (uint32_t)*(const int32_t *)action;
    return seer_schedule(ctx, seer_self(ctx), seer_now(ctx) + 0.125 * (1 + st->last_action),
                         TICK, NULL, 0);
}

static int misbehave(seer_ctx *ctx, const rogue_config *c, rogue_state *st)
{
    const uint32_t next = (seer_self(ctx) + 1) % c->num_entities;
    switch (c->mode) {
    case ROGUE_WRITE_OTHER:
        (st + 1)->pings += 100; /* "the next entity's state" */
        break;
    case ROGUE_READ_LIVE:
        st->value += (double)(st + 1)->ticks;
        break;
    case ROGUE_STATIC:
        st->value += (double)++rogue_counter;
        break;
    case ROGUE_RAND:
        st->value += (double)(rand() % 7);
        break;
    case ROGUE_CLOCK:
        st->value += (double)(time(NULL) % 2);
        break;
    case ROGUE_LOOKAHEAD:
        return seer_schedule(ctx, next, seer_now(ctx), PING, NULL, 0);
    case ROGUE_SNAPSHOT:
        ((rogue_record *)(void *)seer_snapshot(ctx, seer_self(ctx)))->ticks = 99;
        break;
    case ROGUE_CONFIG:
        ((rogue_config *)(void *)seer_config(ctx))->lookahead = 0.25;
        break;
    case ROGUE_NULL:
        st->value += (double)((const rogue_state *)seer_entity_state(ctx, next))->ticks;
        break;
    default:
        break;
    }
    return SEER_OK;
}

static int rogue_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)payload;
    (void)size;
    const rogue_config *c = seer_config(ctx);
    rogue_state *st = entity;
    if (type == PING) {
        st->pings++;
        return SEER_OK;
    }
    st->ticks++;
    const rogue_record *nb = seer_snapshot(ctx, (seer_self(ctx) + 1) % c->num_entities);
    st->value = st->value * 0.5 + (double)nb->ticks;
    if (c->mode == ROGUE_THREAD && seer_self(ctx) == c->culprit)
        st->value += (double)(rogue_thread_count++ % 5);
    else if (c->mode == ROGUE_THREAD)
        rogue_thread_count++;
    if (c->mode && seer_self(ctx) == c->culprit && seer_step_index(ctx) == c->at_step) {
        int rc = misbehave(ctx, c, st);
        if (rc)
            return rc;
    }
    return seer_schedule(ctx, (seer_self(ctx) + 1) % c->num_entities,
                         seer_now(ctx) + c->lookahead, PING, NULL, 0);
}

static void rogue_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const rogue_config *c = seer_config(ctx);
    const rogue_state *st = seer_entity_state(ctx, agent);
    if (c->mode == ROGUE_OBSERVE && agent == c->culprit && seer_step_index(ctx) == c->at_step)
        ((rogue_state *)(void *)st)->value += 1.0;
    out->obs[0] = (float)st->ticks;
    out->obs[1] = (float)st->pings;
    out->obs[2] = (float)fmod(st->value, 1000.0);
    *out->reward = (float)st->last_action;
    if (c->mode == ROGUE_OBS_ROW && agent == c->culprit && seer_step_index(ctx) == c->at_step)
        out->obs[3] = 7.0f; /* obs_dim is 3: an off-by-one loop bound */
}

static void rogue_boundary(seer_ctx *ctx, void *instance_data)
{
    (void)instance_data;
    const rogue_config *c = seer_config(ctx);
    if (c->mode == ROGUE_BOUNDARY_RNG && seer_step_index(ctx) == c->at_step)
        (void)seer_rng_u64(ctx);
}

static void rogue_publish(seer_ctx *ctx, const void *entity, void *record)
{
    (void)ctx;
    ((rogue_record *)record)->ticks = ((const rogue_state *)entity)->ticks;
}

static const char *const rogue_events[] = {"TICK", "PING"};

const seer_model rogue_model = {
    .api_version = SEER_API_VERSION,
    .name = "rogue",
    .config_size = sizeof(rogue_config),
    .params = rogue_params,
    .num_params = SEER_COUNT(rogue_params),
    .describe = rogue_describe,
    .act = rogue_act,
    .handle = rogue_handle,
    .boundary = rogue_boundary,
    .observe = rogue_observe,
    .publish = rogue_publish,
    .event_names = rogue_events,
    .event_type_count = 2,
    .state_fields = rogue_fields,
    .num_state_fields = SEER_COUNT(rogue_fields),
    .max_cycles = 20,
};
