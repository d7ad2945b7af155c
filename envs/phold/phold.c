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

static int phold_describe(const void *config, seer_sizes *out, char *err, size_t errlen)
{
    const seer_phold_config *c = config;
    if (c->num_entities < 1 || c->num_entities > (1u << 22)) {
        snprintf(err, errlen, "phold: num_entities=%u must be in [1, 4194304]",
                 c->num_entities);
        return SEER_E_CONFIG;
    }
    if (c->events_per_entity < 1 || c->events_per_entity > 1024) {
        snprintf(err, errlen, "phold: events_per_entity=%u must be in [1, 1024]",
                 c->events_per_entity);
        return SEER_E_CONFIG;
    }
    if (!(c->remote >= 0.0 && c->remote <= 1.0)) {
        snprintf(err, errlen, "phold: remote=%g must be in [0, 1]", c->remote);
        return SEER_E_CONFIG;
    }
    if (!(c->mean >= 0.0) || !isfinite(c->mean)) {
        snprintf(err, errlen, "phold: mean=%g must be finite and >= 0", c->mean);
        return SEER_E_CONFIG;
    }
    if (!(c->lookahead >= 0.0) || !isfinite(c->lookahead)) {
        snprintf(err, errlen, "phold: lookahead=%g must be finite and >= 0", c->lookahead);
        return SEER_E_CONFIG;
    }
    if (!(c->lookahead > 0.0 || c->mean > 0.0)) {
        snprintf(err, errlen, "phold: lookahead and mean cannot both be 0 (time would not advance)");
        return SEER_E_CONFIG;
    }
    if (!(c->step_duration > 0.0) || !isfinite(c->step_duration)) {
        snprintf(err, errlen, "phold: step_duration=%g must be finite and > 0",
                 c->step_duration);
        return SEER_E_CONFIG;
    }
    if (c->work > 100000000u) {
        snprintf(err, errlen, "phold: work=%u must be <= 100000000", c->work);
        return SEER_E_CONFIG;
    }
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 4;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->info_dim = 3;
    out->state_dim = c->num_entities;
    out->entity_size = sizeof(seer_phold_entity);
    out->payload_size = sizeof(phold_payload);
    out->snapshot_size = sizeof(phold_record);
    out->instance_size = 0;
    out->lookahead = c->lookahead;
    out->step_duration = c->step_duration;
    return SEER_OK;
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

static void phold_global_state(seer_ctx *ctx, float *out)
{
    const seer_sizes *sz = seer_model_sizes(ctx);
    for (uint32_t e = 0; e < sz->num_entities; e++) {
        const seer_phold_entity *st = seer_entity_state(ctx, e);
        out[e] = (float)st->handled_step;
    }
}

static const char *const phold_info_names[] = {"handled", "remote_in", "checksum"};
static const char *const phold_event_names[] = {"PHOLD_EVENT"};

const seer_model seer_model_phold = {
    .name = "phold",
    .config_size = sizeof(seer_phold_config),
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
};
