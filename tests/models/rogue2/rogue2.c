/*
 * rogue2: a model that breaks, on demand, what the contract checker's bounds,
 * uninitialised-bytes and shared-heap passes catch (seer_env/check/bounds.py,
 * seer_env/check/race.py); one rule per mode, 0 breaks none.  Entities form a
 * ring, as in tests/models/rogue: every step each agent acts (a tick to
 * itself), every tick pings the right neighbour one lookahead later.  The
 * observation is 4 values in [0, 1e6], the global state 2 values in [0, 1].
 * In step `at_step`, entity `culprit` misbehaves as `mode` says; the modes
 * UNWRITTEN and SHARED_HEAP misbehave everywhere, always.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "seer.h"

enum rogue2_mode {
    R2_NONE = 0,
    R2_OBS_OUT = 1,     /* observe writes -5.5e25 into obs[1]                    */
    R2_STATE_OUT = 2,   /* global_state writes 2 into state[0] (bounds [0, 1])   */
    R2_NAN_REWARD = 3,  /* observe writes a NaN reward                           */
    R2_INF_INFO = 4,    /* observe writes +inf into info[0]                      */
    R2_NAN_OBS = 5,     /* observe writes NaN into obs[2]                        */
    R2_UNWRITTEN = 6,   /* observe never writes obs[3], for any agent            */
    R2_UNINIT = 7,      /* observe copies an uninitialised local into obs[3]     */
    R2_SHARED_HEAP = 8, /* every handle call works in one heap scratch buffer,
                           allocated by describe: shared by every entity and
                           thread                                                */
    R2_UNINIT_HANDLE = 9, /* handle adds an uninitialised local to its state    */
    R2_POINTER_STATE = 10, /* handle keeps a pointer (to a static of the model)
                              in its state                                       */
    R2_STATE_PAST = 11, /* global_state writes out[2], past its 2-value row      */
    R2_OBS_FAR = 12,    /* observe writes obs[4 + 100000]: far past the host's
                           buffer (into the checker's own heap, before)          */
    R2_OBS_BEFORE = 13, /* observe writes obs[-100000], far before its row      */
    R2_STATE_FAR = 14,  /* global_state writes out[2 + 100000]                   */
    R2_BEFORE_STATE = 15, /* handle writes the byte before its own state (the
                             previous entity's last, in a plain run)            */
    R2_BEFORE_RECORD = 16, /* publish writes the byte before its own record    */
    R2_IDATA_PAST = 17, /* the boundary hook writes the byte past its 8 bytes of
                           instance data                                         */
    R2_OBS_PREV = 18,   /* observe writes obs[-1]: the previous agent's last
                           element in a plain run                                */
    R2_ACTION_PAST = 19, /* act reads action[1], past its one value: the next
                            agent's action in a plain run                       */
    R2_PAYLOAD_PAST = 20, /* handle reads payload[16], past its payload_size (8)
                             bytes and the record's 16-byte alignment           */
    R2_ACTION_WRITE = 21, /* act writes its (const) action                       */
    R2_PAYLOAD_WRITE_FAIL = 22, /* handle writes its (const) payload, then fails
                                   (seer_fail_step) on what it read back       */
    R2_RECORD_PAST = 23, /* publish writes the byte past its own 8-byte record  */
    R2_ACTION_BEFORE = 24, /* act writes action[-1]: the previous agent's action
                              in a plain run                                    */
    R2_PAYLOAD_ALIGNED = 25, /* breaks nothing: handle fails where its payload is
                                not 16-byte aligned, as a plain run's always is
                                (event records are; a struct with 16-byte
                                members may be loaded from it)                  */
    R2_MODES = 26
};

typedef struct rogue2_config {
    uint32_t num_entities;
    uint32_t mode;
    uint32_t culprit;
    uint32_t at_step;
    double lookahead;
} rogue2_config;

typedef struct rogue2_state {
    uint64_t ticks;
    uint64_t pings;
    double value;
    uint32_t last_action;
    uint32_t pad_;
} rogue2_state;

typedef struct rogue2_record {
    uint64_t ticks;
} rogue2_record;

enum { TICK = 0, PING = 1 };

/* R2_SHARED_HEAP: the scratch buffer (describe allocates it once; the
 * handlers only read the pointer, so the isolation pass sees nothing). */
static double *rogue2_scratch;

static const seer_param rogue2_params[] = {
    {SEER_MEMBER(rogue2_config, num_entities), .def = 6, .lo = 2, .hi = 256, .doc = "entities"},
    {SEER_MEMBER(rogue2_config, mode), .def = R2_NONE, .lo = 0, .hi = R2_MODES - 1,
     .doc = "the rule to break (enum rogue2_mode)"},
    {SEER_MEMBER(rogue2_config, culprit), .def = 1, .lo = 0, .hi = 255,
     .doc = "the agent that breaks it"},
    {SEER_MEMBER(rogue2_config, at_step), .def = 2, .doc = "the step in which it does"},
    {SEER_MEMBER(rogue2_config, lookahead), .def = 0.5, .lo = 0, .hi = 1, .doc = "lookahead"},
};

static const seer_field rogue2_fields[] = {
    {SEER_MEMBER(rogue2_state, ticks)}, {SEER_MEMBER(rogue2_state, pings)},
    {SEER_MEMBER(rogue2_state, value)}, {SEER_MEMBER(rogue2_state, last_action)},
};

static const char *const rogue2_info[] = {"ticks"};
static const char *const rogue2_events[] = {"TICK", "PING"};

static int rogue2_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const rogue2_config *c = config;
    if (c->culprit >= c->num_entities) {
        snprintf(err, errlen, "rogue2: culprit=%u must be < num_entities=%u", c->culprit,
                 c->num_entities);
        return SEER_E_CONFIG;
    }
    if (c->mode == R2_SHARED_HEAP && !rogue2_scratch) {
        rogue2_scratch = calloc(64, sizeof(double));
        if (!rogue2_scratch) {
            snprintf(err, errlen, "rogue2: out of memory");
            return SEER_E_CONFIG;
        }
    }
    out->num_entities = c->num_entities;
    out->num_agents = c->num_entities;
    out->obs_dim = 4;
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = 3;
    out->info_dim = 1;
    out->state_dim = 2;
    out->entity_size = sizeof(rogue2_state);
    out->payload_size = 8;
    out->snapshot_size = sizeof(rogue2_record);
    out->instance_size = c->mode == R2_IDATA_PAST ? 8 : 0;
    out->lookahead = c->lookahead;
    out->step_duration = 1.0;
    return SEER_OK;
}

static int rogue2_act(seer_ctx *ctx, void *entity, const void *action)
{
    const rogue2_config *c = seer_config(ctx);
    rogue2_state *st = entity;
    st->last_action = (uint32_t)*(const int32_t *)action;
    if (seer_self(ctx) == c->culprit && seer_step_index(ctx) == c->at_step) {
        if (c->mode == R2_ACTION_PAST)
            st->value += (double)((const volatile int32_t *)action)[1];
        if (c->mode == R2_ACTION_WRITE)
            *(volatile int32_t *)(uintptr_t)action = 0;
        if (c->mode == R2_ACTION_BEFORE)
            ((volatile int32_t *)(uintptr_t)action)[-1] = 2;
    }
    return seer_schedule(ctx, seer_self(ctx), seer_now(ctx) + 0.125 * (1 + st->last_action),
                         TICK, NULL, 0);
}

/* R2_SHARED_HEAP: a "temporary" kept in heap memory every entity uses. */
static void rogue2_use_scratch(rogue2_state *st)
{
    double *s = rogue2_scratch;
    s[0] = st->value;
    s[1] = (double)st->ticks;
    st->value = s[0] * 0.5 + s[1];
}

static int rogue2_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                         uint32_t size)
{
    (void)size;
    const rogue2_config *c = seer_config(ctx);
    rogue2_state *st = entity;
    if (c->mode == R2_PAYLOAD_ALIGNED && ((uintptr_t)payload & 15u) != 0)
        return seer_fail_step(ctx, "rogue2: the payload is not 16-byte aligned");
    if (type == PING) {
        st->pings++;
        if (c->mode == R2_PAYLOAD_PAST && seer_self(ctx) == c->culprit &&
            seer_step_index(ctx) == c->at_step)
            st->value += (double)((const volatile unsigned char *)payload)[16];
        if (c->mode == R2_PAYLOAD_WRITE_FAIL && seer_self(ctx) == c->culprit &&
            seer_step_index(ctx) == c->at_step) {
            volatile unsigned char *w = (volatile unsigned char *)(uintptr_t)payload;
            w[0] = (unsigned char)(w[0] + 1);
            if (w[0] != 0)
                return seer_fail_step(ctx, "rogue2: a payload byte it changed reads wrong");
        }
        return SEER_OK;
    }
    st->ticks++;
    const rogue2_record *nb = seer_snapshot(ctx, (seer_self(ctx) + 1) % c->num_entities);
    st->value = st->value * 0.5 + (double)nb->ticks;
    if (c->mode == R2_SHARED_HEAP)
        rogue2_use_scratch(st);
    if (c->mode == R2_UNINIT_HANDLE && seer_self(ctx) == c->culprit &&
        seer_step_index(ctx) == c->at_step) {
        double terms[2];
        const uint32_t filled = c->mode == R2_UNINIT_HANDLE ? 1u : 2u;
        for (uint32_t i = 0; i < filled; i++)
            terms[i] = 1.0;
        st->value += terms[1];
    }
    if (c->mode == R2_POINTER_STATE && seer_self(ctx) == c->culprit &&
        seer_step_index(ctx) == c->at_step)
        st->pings = (uint64_t)(uintptr_t)&rogue2_scratch;
    if (c->mode == R2_BEFORE_STATE && seer_self(ctx) == c->culprit &&
        seer_step_index(ctx) == c->at_step)
        ((volatile unsigned char *)(void *)st)[-1] = 0x5A;
    if (c->lookahead > 0.0)
        return seer_schedule(ctx, (seer_self(ctx) + 1) % c->num_entities,
                             seer_now(ctx) + c->lookahead, PING, NULL, 0);
    return SEER_OK;
}

static void rogue2_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const rogue2_config *c = seer_config(ctx);
    const rogue2_state *st = seer_entity_state(ctx, agent);
    const int culprit = agent == c->culprit && seer_step_index(ctx) == c->at_step;
    /* the fourth observation comes through a small table; R2_UNINIT fills
     * only three of its entries */
    float table[4];
    const uint32_t filled = culprit && c->mode == R2_UNINIT ? 3u : 4u;
    for (uint32_t i = 0; i < filled; i++)
        table[i] = 0.25f * (float)i;
    out->obs[0] = (float)st->ticks;
    out->obs[1] = (float)st->pings;
    out->obs[2] = (float)fmod(fabs(st->value), 1000.0);
    if (c->mode != R2_UNWRITTEN)
        out->obs[3] = table[3];
    *out->reward = (float)st->last_action;
    out->info[0] = (double)st->ticks;
    if (!culprit)
        return;
    switch (c->mode) {
    case R2_OBS_OUT: out->obs[1] = -5.5e25f; break;
    case R2_NAN_REWARD: *out->reward = NAN; break;
    case R2_INF_INFO: out->info[0] = INFINITY; break;
    case R2_NAN_OBS: out->obs[2] = NAN; break;
    case R2_OBS_FAR: out->obs[4 + 100000] = 1.0f; break;
    case R2_OBS_BEFORE: out->obs[-100000] = 1.0f; break;
    case R2_OBS_PREV: out->obs[-1] = 1.0f; break;
    default: break;
    }
}

static void rogue2_publish(seer_ctx *ctx, const void *entity, void *record)
{
    const rogue2_config *c = seer_config(ctx);
    ((rogue2_record *)record)->ticks = ((const rogue2_state *)entity)->ticks;
    if (c->mode == R2_BEFORE_RECORD && seer_self(ctx) == c->culprit &&
        seer_step_index(ctx) == c->at_step)
        ((volatile unsigned char *)record)[-1] = 0x5A;
    if (c->mode == R2_RECORD_PAST && seer_self(ctx) == c->culprit &&
        seer_step_index(ctx) == c->at_step)
        ((volatile unsigned char *)record)[sizeof(rogue2_record)] = 0x5A;
}

static void rogue2_boundary(seer_ctx *ctx, void *instance_data)
{
    const rogue2_config *c = seer_config(ctx);
    if (c->mode == R2_IDATA_PAST && seer_step_index(ctx) == c->at_step)
        ((volatile unsigned char *)instance_data)[8] = 0x5A;
}

static void rogue2_global_state(seer_ctx *ctx, float *out)
{
    const rogue2_config *c = seer_config(ctx);
    const rogue2_state *st = seer_entity_state(ctx, 0);
    out[0] = (float)(st->ticks % 100) / 100.0f;
    out[1] = 0.5f;
    if (c->mode == R2_STATE_OUT && seer_step_index(ctx) == c->at_step)
        out[0] = 2.0f;
    if (c->mode == R2_STATE_PAST && seer_step_index(ctx) == c->at_step)
        out[2] = 0.25f;
    if (c->mode == R2_STATE_FAR && seer_step_index(ctx) == c->at_step)
        out[2 + 100000] = 0.25f;
}

static int rogue2_agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    (void)config;
    snprintf(buf, len, "ring_%u", agent);
    return 0;
}

static void rogue2_obs_bounds(const void *config, float *low, float *high)
{
    (void)config;
    for (int i = 0; i < 4; i++) {
        low[i] = 0.0f;
        high[i] = 1e6f;
    }
}

static void rogue2_state_bounds(const void *config, float *low, float *high)
{
    (void)config;
    for (int i = 0; i < 2; i++) {
        low[i] = 0.0f;
        high[i] = 1.0f;
    }
}

const seer_model rogue2_model = {
    .api_version = SEER_API_VERSION,
    .name = "rogue2",
    .config_size = sizeof(rogue2_config),
    .params = rogue2_params,
    .num_params = SEER_COUNT(rogue2_params),
    .describe = rogue2_describe,
    .act = rogue2_act,
    .handle = rogue2_handle,
    .observe = rogue2_observe,
    .publish = rogue2_publish,
    .boundary = rogue2_boundary,
    .global_state = rogue2_global_state,
    .info_names = rogue2_info,
    .event_names = rogue2_events,
    .event_type_count = 2,
    .agent_name = rogue2_agent_name,
    .obs_bounds = rogue2_obs_bounds,
    .state_bounds = rogue2_state_bounds,
    .state_fields = rogue2_fields,
    .num_state_fields = SEER_COUNT(rogue2_fields),
    .max_cycles = 20,
};
