/*
 * probe: a test fixture, not an environment.  Every entity ticks twice per
 * step (a self event every 0.5) and pings its right neighbour; in the
 * configured step, entity `culprit` breaks the contract in the configured way
 * so tests can check that every violation is caught and reported.
 */
#include <math.h>
#include <stdio.h>

#include "probe.h"

enum { PROBE_TICK = 0, PROBE_PING = 1 };

static int probe_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const seer_probe_config *c = config;
    (void)err;
    (void)errlen;
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 1;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 2;
    out->entity_size = sizeof(seer_probe_entity);
    out->payload_size = 8;
    out->snapshot_size = 0;
    out->lookahead = c->lookahead;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int probe_init(seer_ctx *ctx, void *entity)
{
    (void)entity;
    const seer_probe_config *c = seer_config(ctx);
    uint32_t self = seer_self(ctx);
    if (c->mode == PROBE_INIT && self == c->culprit)
        return seer_schedule(ctx, (self + 1) % c->num_entities, 0.0, PROBE_PING, NULL, 0);
    return seer_schedule(ctx, self, 0.25, PROBE_TICK, NULL, 0);
}

static int probe_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)payload;
    (void)size;
    const seer_probe_config *c = seer_config(ctx);
    seer_probe_entity *st = entity;
    const uint32_t self = seer_self(ctx);
    const seer_time now = seer_now(ctx);
    st->ticks++;
    if (type == PROBE_PING)
        return 0;
    const uint32_t next = (self + 1) % c->num_entities;
    if (self == c->culprit && seer_step_index(ctx) == c->at_step) {
        unsigned char big[16] = {0};
        switch (c->mode) {
        case PROBE_PAST:
            return seer_schedule(ctx, self, now - 1.0, PROBE_TICK, NULL, 0);
        case PROBE_LOOKAHEAD:
            return seer_schedule(ctx, next, now + 0.5 * c->lookahead, PROBE_PING, NULL, 0);
        case PROBE_TARGET:
            return seer_schedule(ctx, c->num_entities + 5, now + c->lookahead, PROBE_PING,
                                 NULL, 0);
        case PROBE_PAYLOAD:
            return seer_schedule(ctx, self, now, PROBE_TICK, big, sizeof big);
        case PROBE_NULL:
            return seer_schedule(ctx, self, now, PROBE_TICK, NULL, 4);
        case PROBE_TYPE:
            return seer_schedule(ctx, self, now, 2, NULL, 0);
        case PROBE_NAN:
            return seer_schedule(ctx, self, nan(""), PROBE_TICK, NULL, 0);
        case PROBE_RETURN:
            return 7;
        default:
            break;
        }
    }
    int rc = seer_schedule(ctx, next, (now + c->lookahead) + 0.125, PROBE_PING, NULL, 0);
    if (rc)
        return rc;
    return seer_schedule(ctx, self, now + 0.5, PROBE_TICK, NULL, 0);
}

static void probe_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const seer_probe_config *c = seer_config(ctx);
    const seer_probe_entity *st = seer_entity_state(ctx, agent);
    out->obs[0] = (float)st->ticks;
    if (c->mode == PROBE_OBSERVE && agent == c->culprit && seer_step_index(ctx) == c->at_step)
        seer_schedule(ctx, agent, seer_now(ctx) + 1.0, PROBE_TICK, NULL, 0);
}

static const char *const probe_event_names[] = {"PROBE_TICK", "PROBE_PING"};

static const seer_param probe_params[] = {
    {SEER_MEMBER(seer_probe_config, num_entities), .def = 4, .lo = 2, .hi = 1024,
     .doc = "entities (each one an agent)"},
    {SEER_MEMBER(seer_probe_config, mode), .def = PROBE_NONE, .lo = 0, .hi = PROBE_TYPE,
     .doc = "how the culprit breaks the contract (enum seer_probe_mode)"},
    {SEER_MEMBER(seer_probe_config, at_step), .def = 0, .doc = "step whose events misbehave"},
    {SEER_MEMBER(seer_probe_config, culprit), .def = 0, .doc = "entity that misbehaves"},
    {SEER_MEMBER(seer_probe_config, lookahead), .def = 1.0, .lo = 0, .hi = 1e9,
     .doc = "the model's lookahead"},
};

const seer_model seer_model_probe = {
    .api_version = SEER_API_VERSION,
    .name = "probe",
    .config_size = sizeof(seer_probe_config),
    .params = probe_params,
    .num_params = SEER_COUNT(probe_params),
    .describe = probe_describe,
    .init = probe_init,
    .handle = probe_handle,
    .observe = probe_observe,
    .event_names = probe_event_names,
    .event_type_count = 2,
};
