/*
 * PHOLD on seer.  On each event an entity schedules exactly one new event, to
 * itself or, with probability `remote`, to a uniformly random entity, at
 * (now + L) + scale * Exp(mean); `work` iterations of a dependent
 * floating-point recurrence stand in for model computation.
 *
 * RL face: every entity is an agent.  Action (Discrete(3)) sets the scale of
 * the entity's future delays: 0 -> 1.0, 1 -> 0.5, 2 -> 2.0.  Observation
 * (4 floats): events handled in the last step / events_per_entity,
 * log1p(total handled), checksum bits 40..63 / 2^24, fractional part of the
 * work accumulator.  Reward: events handled in the last step /
 * events_per_entity.  Infos: handled, remote_in, checksum >> 11.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "phold.h"

enum { PHOLD_EVENT = 0 };

typedef struct phold_payload {
    uint64_t hops;   /* how many times this event chain was forwarded */
    uint32_t origin; /* entity that created the chain                 */
    uint32_t pad;
} phold_payload;

typedef struct phold_record {
    uint64_t handled; /* published at each boundary */
} phold_record;

static const double k_scales[3] = {1.0, 0.5, 2.0};

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* The configuration's parameters: defaults, ranges and docs (hosts fill and
 * validate seer_phold_config through this table). */
static const seer_param phold_params[] = {
    {SEER_MEMBER(seer_phold_config, num_entities), .def = 64, .lo = 1, .hi = 1u << 22,
     .doc = "entities, each one an agent"},
    {SEER_MEMBER(seer_phold_config, events_per_entity), .def = 4, .lo = 1, .hi = 1024,
     .doc = "events each entity starts with"},
    {SEER_MEMBER(seer_phold_config, remote), .def = 0.5, .lo = 0, .hi = 1,
     .doc = "probability that an event goes to a uniformly random entity"},
    {SEER_MEMBER(seer_phold_config, mean), .def = 1.0, .lo = 0, .hi = 1e300,
     .doc = "mean of the exponential part of every delay"},
    {SEER_MEMBER(seer_phold_config, lookahead), .def = 0.5, .lo = 0, .hi = 1e300,
     .doc = "L: every new event is due at t + L + scale * Exp(mean)"},
    {SEER_MEMBER(seer_phold_config, work), .def = 0, .lo = 0, .hi = 100000000,
     .doc = "floating-point loop iterations per event (model computation)"},
    {SEER_MEMBER(seer_phold_config, step_duration), .def = 4.0, .lo = 0, .hi = 1e300,
     .flags = SEER_P_GT, .doc = "D: simulated time per step"},
};

static const seer_field phold_state_fields[] = {
    {SEER_MEMBER(seer_phold_entity, checksum)}, {SEER_MEMBER(seer_phold_entity, handled)},
    {SEER_MEMBER(seer_phold_entity, handled_step)}, {SEER_MEMBER(seer_phold_entity, remote_in)},
    {SEER_MEMBER(seer_phold_entity, acc)}, {SEER_MEMBER(seer_phold_entity, scale)},
};

static int phold_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const seer_phold_config *c = config;
    if (!(c->lookahead > 0.0 || c->mean > 0.0)) {
        snprintf(err, errlen, "phold: lookahead and mean cannot both be 0 (time would not advance)");
        return SEER_E_CONFIG;
    }
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 4;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->info_dim = 3;
    out->state_dim = 2u * c->num_entities;
    out->entity_size = sizeof(seer_phold_entity);
    out->payload_size = sizeof(phold_payload);
    out->snapshot_size = sizeof(phold_record);
    out->instance_size = 0;
    out->lookahead = c->lookahead;
    out->step_duration = c->step_duration;
    out->pending_events = (uint64_t)c->num_entities * c->events_per_entity;
    return SEER_OK;
}

static int phold_agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    (void)config;
    snprintf(buf, len, "entity_%u", agent);
    return 0;
}

/* The dynamics bound no count: an entity may handle any number of events in
 * a step (a lookahead of 0, or one below the resolution of the simulated time,
 * lets a chain come back at the same time).  The counters are 64-bit, so
 * handled_step / E <= (2^64 - 1) / E and log1p(handled) <= log1p(2^64 - 1)
 * (about 44.36), computed as observe computes the values (double, then float:
 * rounding is monotone, so the bounds hold).  The checksum bits and the
 * accumulator's fraction lie in [0, 1). */
static void phold_obs_bounds(const void *config, float *low, float *high)
{
    const seer_phold_config *c = config;
    for (int i = 0; i < 4; i++)
        low[i] = 0.0f;
    high[0] = (float)((double)UINT64_MAX / c->events_per_entity);
    high[1] = (float)log1p((double)UINT64_MAX);
    high[2] = high[3] = 1.0f;
}

static void phold_state_bounds(const void *config, float *low, float *high)
{
    const seer_phold_config *c = config;
    for (uint32_t e = 0; e < c->num_entities; e++) {
        low[2 * e] = low[2 * e + 1] = 0.0f;
        high[2 * e] = (float)UINT64_MAX; /* events handled in the step (64-bit) */
        high[2 * e + 1] = 1.0f;          /* checksum bits                       */
    }
}

static int phold_init(seer_ctx *ctx, void *entity)
{
    const seer_phold_config *c = seer_config(ctx);
    seer_phold_entity *st = entity;
    st->scale = 1.0;
    st->checksum = mix64(seer_self(ctx) + 1u);
    phold_payload p = {.hops = 0, .origin = seer_self(ctx), .pad = 0};
    for (uint32_t j = 0; j < c->events_per_entity; j++) {
        seer_time t = seer_now(ctx) + seer_rng_exponential(ctx, c->mean);
        int rc = seer_schedule(ctx, seer_self(ctx), t, PHOLD_EVENT, &p, sizeof p);
        if (rc != SEER_OK)
            return rc;
    }
    return 0;
}

static int phold_act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)ctx;
    seer_phold_entity *st = entity;
    const int32_t *a = action;
    st->scale = k_scales[*a];
    st->handled_step = 0;
    return 0;
}

static int phold_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)type;
    (void)size;
    const seer_phold_config *c = seer_config(ctx);
    seer_phold_entity *st = entity;
    const phold_payload *in = payload;
    const uint32_t self = seer_self(ctx);
    const seer_time now = seer_now(ctx);

    /* Floating-point work: a dependent recurrence the compiler cannot drop. */
    double x = st->acc + (double)(in->hops & 1023u) * 1e-3;
    for (uint32_t i = 0; i < c->work; i++)
        x = x * 0.999999 + 0.5;
    st->acc = x - floor(x);

    st->handled++;
    st->handled_step++;
    if (in->origin != self)
        st->remote_in++;
    uint32_t target = self;
    if (c->remote > 0.0 && seer_rng_uniform(ctx) < c->remote)
        target = seer_rng_below(ctx, c->num_entities);
    /* Reading another entity's published record exercises the snapshot. */
    const phold_record *rec = seer_snapshot(ctx, target);
    st->checksum = mix64(st->checksum ^ bits_of(now) ^ (in->hops << 32) ^ in->origin ^
                         (rec->handled * 0x9E3779B97F4A7C15ull));

    phold_payload p = {.hops = in->hops + 1, .origin = self, .pad = 0};
    seer_time t = (now + c->lookahead) + st->scale * seer_rng_exponential(ctx, c->mean);
    return seer_schedule(ctx, target, t, PHOLD_EVENT, &p, sizeof p);
}

static void phold_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const seer_phold_config *c = seer_config(ctx);
    const seer_phold_entity *st = seer_entity_state(ctx, agent);
    const double per = (double)c->events_per_entity;
    out->obs[0] = (float)((double)st->handled_step / per);
    out->obs[1] = (float)log1p((double)st->handled);
    out->obs[2] = (float)((double)(st->checksum >> 40) * 0x1.0p-24);
    out->obs[3] = (float)st->acc;
    *out->reward = (float)((double)st->handled_step / per);
    out->info[0] = (double)st->handled;
    out->info[1] = (double)st->remote_in;
    out->info[2] = (double)(st->checksum >> 11);
}

static void phold_publish(seer_ctx *ctx, const void *entity, void *record)
{
    (void)ctx;
    const seer_phold_entity *st = entity;
    phold_record *r = record;
    r->handled = st->handled;
}

/* Per entity: events handled in the step, and the checksum's top 24 bits
 * (different for every entity from reset on). */
static void phold_global_state(seer_ctx *ctx, float *out)
{
    const seer_sizes *sz = seer_model_sizes(ctx);
    for (uint32_t e = 0; e < sz->num_entities; e++) {
        const seer_phold_entity *st = seer_entity_state(ctx, e);
        out[2 * e] = (float)st->handled_step;
        out[2 * e + 1] = (float)((double)(st->checksum >> 40) * 0x1.0p-24);
    }
}

static const char *const phold_info_names[] = {"handled", "remote_in", "checksum"};
static const char *const phold_event_names[] = {"PHOLD_EVENT"};

const seer_model seer_model_phold = {
    .api_version = SEER_API_VERSION,
    .name = "phold",
    .config_size = sizeof(seer_phold_config),
    .params = phold_params,
    .num_params = SEER_COUNT(phold_params),
    .describe = phold_describe,
    .init = phold_init,
    .act = phold_act,
    .handle = phold_handle,
    .boundary = NULL,
    .observe = phold_observe,
    .publish = phold_publish,
    .global_state = phold_global_state,
    .info_names = phold_info_names,
    .event_names = phold_event_names,
    .event_type_count = 1,
    .agent_name = phold_agent_name,
    .obs_bounds = phold_obs_bounds,
    .state_bounds = phold_state_bounds,
    .state_fields = phold_state_fields,
    .num_state_fields = SEER_COUNT(phold_state_fields),
    .max_cycles = 100,
};
