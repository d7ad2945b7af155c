/*
 * wreck: a model that wrecks the process running it, or misbehaves late, on
 * demand, for the contract checker's tests (tests/test_check.py).  Entities
 * form a ring; every step each agent acts (a tick to itself), every tick
 * pings the right neighbour one lookahead later.  Entity `culprit` breaks
 * one rule as `mode` says (0: never), in step `at_step` unless said
 * otherwise; the other entities always behave.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "seer.h"

enum wreck_mode {
    WRECK_NONE = 0,
    WRECK_LOOP = 1,      /* handle never returns                                 */
    WRECK_ABORT = 2,     /* handle calls abort()                                 */
    WRECK_WILD = 3,      /* handle writes through a garbage pointer              */
    WRECK_EXIT = 4,      /* handle calls exit(3)                                 */
    WRECK_STORM = 5,     /* handle schedules itself at now, without end: the
                            step never ends, every handler returns               */
    WRECK_LATE_READ = 6, /* from step at_step on, handle reads the next
                            entity's live state                                  */
    WRECK_FAIL_LATE = 7, /* handle fails once simulated time reaches fail_time   */
    WRECK_SILENT = 8,    /* describe fails without saying why                    */
    WRECK_THIRD = 9,     /* handle calls abort() in instance 2 only: only runs
                            of 3 instances (the matrix's) meet it                */
    WRECK_DESCRIBE = 10, /* describe calls abort()                               */
    WRECK_MODES = 11
};

typedef struct wreck_config {
    uint32_t num_entities;
    uint32_t mode;
    uint32_t culprit;
    uint32_t at_step;
    double fail_time;
    double lookahead;
} wreck_config;

typedef struct wreck_state {
    uint64_t ticks;
    uint64_t pings;
    double value;
    uint32_t last_action;
    uint32_t pad_;
} wreck_state;

typedef struct wreck_record {
    uint64_t ticks;
} wreck_record;

enum { TICK = 0, PING = 1 };

static const seer_param wreck_params[] = {
    {SEER_MEMBER(wreck_config, num_entities), .def = 6, .lo = 2, .hi = 256, .doc = "entities"},
    {SEER_MEMBER(wreck_config, mode), .def = WRECK_NONE, .lo = 0, .hi = WRECK_MODES - 1,
     .doc = "what to wreck (enum wreck_mode)"},
    {SEER_MEMBER(wreck_config, culprit), .def = 1, .lo = 0, .hi = 254,
     .doc = "the entity that does it (not the last: it reads the next one)"},
    {SEER_MEMBER(wreck_config, at_step), .def = 2, .doc = "the step in which it does"},
    {SEER_MEMBER(wreck_config, fail_time), .def = 31, .lo = 0, .hi = 1e9,
     .doc = "WRECK_FAIL_LATE: from this simulated time on"},
    {SEER_MEMBER(wreck_config, lookahead), .def = 0.5, .lo = 0, .hi = 1, .flags = SEER_P_GT,
     .doc = "lookahead"},
};

static const seer_field wreck_fields[] = {
    {SEER_MEMBER(wreck_state, ticks)}, {SEER_MEMBER(wreck_state, pings)},
    {SEER_MEMBER(wreck_state, value)}, {SEER_MEMBER(wreck_state, last_action)},
};

static int wreck_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const wreck_config *c = config;
    if (c->mode == WRECK_SILENT)
        return SEER_E_CONFIG; /* and no message */
    if (c->mode == WRECK_DESCRIBE)
        abort();
    if (c->culprit + 1 >= c->num_entities) {
        snprintf(err, errlen, "wreck: culprit=%u must be < num_entities - 1 = %u", c->culprit,
                 c->num_entities - 1);
        return SEER_E_CONFIG;
    }
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 3;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->entity_size = sizeof(wreck_state);
    out->payload_size = 8;
    out->snapshot_size = sizeof(wreck_record);
    out->lookahead = c->lookahead;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int wreck_act(seer_ctx *ctx, void *entity, const void *action)
{
    wreck_state *st = entity;
    st->last_action = (uint32_t)*(const int32_t *)action;
    return seer_schedule(ctx, seer_self(ctx), seer_now(ctx) + 0.125 * (1 + st->last_action),
                         TICK, NULL, 0);
}

/* The culprit's misbehaviour in the step it is due. */
static int wreck_now(seer_ctx *ctx, const wreck_config *c, wreck_state *st)
{
    switch (c->mode) {
    case WRECK_LOOP: {
        volatile uint64_t spin = 0;
        for (;;)
            spin++;
    }
    case WRECK_ABORT:
        abort();
    case WRECK_WILD: {
        volatile uintptr_t garbage = (uintptr_t)0xdeadbeef000ull;
        *(uint64_t *)garbage = st->ticks;
        break;
    }
    case WRECK_EXIT:
        exit(3);
    case WRECK_STORM:
        return seer_schedule(ctx, seer_self(ctx), seer_now(ctx), TICK, NULL, 0);
    case WRECK_THIRD:
        if (seer_instance(ctx) == 2)
            abort();
        break;
    default:
        break;
    }
    return SEER_OK;
}

static int wreck_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                        uint32_t size)
{
    (void)payload;
    (void)size;
    const wreck_config *c = seer_config(ctx);
    wreck_state *st = entity;
    const uint32_t me = seer_self(ctx), next = (me + 1) % c->num_entities;
    if (type == PING) {
        st->pings++;
        return SEER_OK;
    }
    st->ticks++;
    const wreck_record *nb = seer_snapshot(ctx, next);
    st->value = st->value * 0.5 + (double)nb->ticks;
    if (me == c->culprit) {
        if (c->mode == WRECK_LATE_READ && seer_step_index(ctx) >= c->at_step)
            st->value += (double)(st + 1)->ticks; /* the neighbour's live state */
        if (c->mode == WRECK_FAIL_LATE && seer_now(ctx) >= c->fail_time)
            return seer_fail_step(ctx, "wreck: failing on purpose from fail_time on");
        if (seer_step_index(ctx) == c->at_step) {
            int rc = wreck_now(ctx, c, st);
            if (rc)
                return rc;
        }
    }
    return seer_schedule(ctx, next, seer_now(ctx) + c->lookahead, PING, NULL, 0);
}

static void wreck_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const wreck_state *st = seer_entity_state(ctx, agent);
    out->obs[0] = (float)st->ticks;
    out->obs[1] = (float)st->pings;
    out->obs[2] = (float)st->value;
    *out->reward = (float)st->last_action;
}

static void wreck_publish(seer_ctx *ctx, const void *entity, void *record)
{
    (void)ctx;
    ((wreck_record *)record)->ticks = ((const wreck_state *)entity)->ticks;
}

static const char *const wreck_events[] = {"TICK", "PING"};

const seer_model wreck_model = {
    .api_version = SEER_API_VERSION,
    .name = "wreck",
    .config_size = sizeof(wreck_config),
    .params = wreck_params,
    .num_params = SEER_COUNT(wreck_params),
    .describe = wreck_describe,
    .act = wreck_act,
    .handle = wreck_handle,
    .observe = wreck_observe,
    .publish = wreck_publish,
    .event_names = wreck_events,
    .event_type_count = 2,
    .state_fields = wreck_fields,
    .num_state_fields = SEER_COUNT(wreck_fields),
    .max_cycles = 80,
};
