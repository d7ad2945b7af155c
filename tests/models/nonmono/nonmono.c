/*
 * nonmono: a test model whose handlers create "non-monotone" zero-delay
 * events, for the optimistic executor.  The serial executor handles the
 * pending event of least (time, source entity, source sequence); an event
 * created at the current time by an entity numbered below the source of the
 * event being handled comes before everything else pending at that time, so
 * the serial order is not the (time, key) order of the events as they were
 * first pending.  Lookahead 0 (cross-entity events at delay 0).
 *
 * Every entity (each one an agent) ticks (a self event every exponential
 * `mean`) and on each tick sends a MSG to a random entity a multiple of
 * 1/8 later (1/8 to 4/8: many MSGs share a time, ordered by their keys).
 * An entity handling a MSG from a higher-numbered entity echoes it, with
 * probability `echo`, to a random entity numbered at most its own at the
 * same time (an ECHO, which creates nothing).  An agent's action a sends a
 * MSG to entity (self + 1 + a) % n at 1/8.  Each handling folds the time,
 * type, source and a random draw into the entity's checksum, so a handling
 * in another order or with another RNG position shows in the outputs.
 */
#include <stdint.h>
#include <string.h>

#include "seer.h"

typedef struct nonmono_config {
    uint32_t num_entities;
    double mean;
    double echo;
    double step_duration;
} nonmono_config;

typedef struct nonmono_entity {
    uint64_t handled;
    uint64_t checksum;
    uint64_t echoes;  /* ECHOs handled           */
    uint64_t echoed;  /* ECHOs sent              */
} nonmono_entity;

enum { NM_TICK = 0, NM_MSG = 1, NM_ECHO = 2 };

static const seer_param nonmono_params[] = {
    {SEER_MEMBER(nonmono_config, num_entities), .def = 12, .lo = 2, .hi = 4096,
     .doc = "entities (each one an agent)"},
    {SEER_MEMBER(nonmono_config, mean), .def = 0.25, .lo = 0, .hi = 1e6, .flags = SEER_P_GT,
     .doc = "mean time between an entity's ticks"},
    {SEER_MEMBER(nonmono_config, echo), .def = 0.02, .lo = 0, .hi = 1,
     .doc = "probability that a MSG from a higher-numbered entity is echoed at delay 0"},
    {SEER_MEMBER(nonmono_config, step_duration), .def = 1.0, .lo = 0, .hi = 1e6,
     .flags = SEER_P_GT, .doc = "simulated time per step"},
};

static const seer_field nonmono_fields[] = {
    {SEER_MEMBER(nonmono_entity, handled)}, {SEER_MEMBER(nonmono_entity, checksum)},
    {SEER_MEMBER(nonmono_entity, echoes)}, {SEER_MEMBER(nonmono_entity, echoed)},
};

static int nonmono_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const nonmono_config *c = config;
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 3;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->info_dim = 2;
    out->state_dim = 2;
    out->entity_size = sizeof(nonmono_entity);
    out->payload_size = sizeof(uint32_t);
    out->lookahead = 0.0;
    out->step_duration = c->step_duration;
    return SEER_OK;
}

static void mix(nonmono_entity *st, seer_time now, uint64_t what)
{
    uint64_t t;
    memcpy(&t, &now, sizeof t);
    uint64_t h = st->checksum ^ (t + 0x9e3779b97f4a7c15ull * (what + 1));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    st->checksum = h;
    st->handled++;
}

static int send_msg(seer_ctx *ctx, uint32_t target, seer_time t, uint32_t type)
{
    const uint32_t self = seer_self(ctx);
    return seer_schedule(ctx, target, t, type, &self, sizeof self);
}

static int nonmono_init(seer_ctx *ctx, void *entity)
{
    (void)entity;
    const nonmono_config *c = seer_config(ctx);
    return seer_schedule(ctx, seer_self(ctx), seer_rng_exponential(ctx, c->mean), NM_TICK,
                         NULL, 0);
}

static int nonmono_act(seer_ctx *ctx, void *entity, const void *action)
{
    const nonmono_config *c = seer_config(ctx);
    const int32_t a = *(const int32_t *)action;
    mix(entity, seer_now(ctx), 100u + (uint64_t)a);
    const uint32_t target = (seer_self(ctx) + 1u + (uint32_t)a) % c->num_entities;
    return send_msg(ctx, target, seer_now(ctx) + 0.125, NM_MSG);
}

static int nonmono_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                          uint32_t size)
{
    const nonmono_config *c = seer_config(ctx);
    nonmono_entity *st = entity;
    const uint32_t self = seer_self(ctx);
    const seer_time now = seer_now(ctx);
    uint32_t src = self;
    if (size >= sizeof src)
        memcpy(&src, payload, sizeof src);
    mix(st, now, ((uint64_t)type << 32 | src) ^ (seer_rng_u64(ctx) & 0xffff0000ull));
    switch (type) {
    case NM_TICK: {
        const uint32_t to = seer_rng_below(ctx, c->num_entities);
        const seer_time at = now + 0.125 * (double)(1u + seer_rng_below(ctx, 4));
        int rc = send_msg(ctx, to, at, NM_MSG);
        if (rc)
            return rc;
        return seer_schedule(ctx, self, now + seer_rng_exponential(ctx, c->mean), NM_TICK,
                             NULL, 0);
    }
    case NM_MSG:
        if (src > self && seer_rng_uniform(ctx) < c->echo) {
            st->echoed++;
            /* at the same time, from an entity below the event's source: the
             * serial executor handles it before anything else pending now */
            return send_msg(ctx, seer_rng_below(ctx, self + 1u), now, NM_ECHO);
        }
        return 0;
    default: /* NM_ECHO */
        st->echoes++;
        return 0;
    }
}

static void nonmono_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const nonmono_entity *st = seer_entity_state(ctx, agent);
    out->obs[0] = (float)st->handled;
    out->obs[1] = (float)st->echoes;
    out->obs[2] = (float)(st->checksum & 0xffffu);
    *out->reward = (float)((st->checksum >> 16) & 0xffu) / 255.0f;
    out->info[0] = (double)st->echoed;
    out->info[1] = (double)(st->checksum >> 11);
}

static void nonmono_global_state(seer_ctx *ctx, float *out)
{
    const seer_sizes *sz = seer_model_sizes(ctx);
    uint64_t handled = 0, x = 0;
    for (uint32_t e = 0; e < sz->num_entities; e++) {
        const nonmono_entity *st = seer_entity_state(ctx, e);
        handled += st->handled;
        x ^= st->checksum;
    }
    out[0] = (float)handled;
    out[1] = (float)(x & 0xffffffu);
}

static const char *const nonmono_info_names[] = {"echoed", "checksum"};
static const char *const nonmono_event_names[] = {"TICK", "MSG", "ECHO"};

const seer_model nonmono_model = {
    .api_version = SEER_API_VERSION,
    .name = "nonmono",
    .config_size = sizeof(nonmono_config),
    .params = nonmono_params,
    .num_params = SEER_COUNT(nonmono_params),
    .describe = nonmono_describe,
    .init = nonmono_init,
    .act = nonmono_act,
    .handle = nonmono_handle,
    .observe = nonmono_observe,
    .global_state = nonmono_global_state,
    .info_names = nonmono_info_names,
    .event_names = nonmono_event_names,
    .event_type_count = 3,
    .state_fields = nonmono_fields,
    .num_state_fields = SEER_COUNT(nonmono_fields),
    .max_cycles = 0,
};
