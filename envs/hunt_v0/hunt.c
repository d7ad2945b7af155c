/*
 * Hunt on seer: predators and prey on a width x height grid (a torus, or
 * bounded by walls) with obstacles.  Two agent groups with their own spaces:
 *
 *   "predator" (agents 0 .. P-1): MultiDiscrete([5, 2]) actions (move, signal),
 *   "prey"     (agents P .. P+Q-1): Discrete(5) actions (move);
 *
 * moves are 0 stay, 1 north (row - 1), 2 east (col + 1), 3 south (row + 1),
 * 4 west (col - 1).  The action mask forbids moves into an obstacle (and off
 * the grid when it is bounded); a forbidden move that reaches `act` (masks
 * not enforced) is a stay plus forbidden_penalty.
 *
 * One step (D = 1, lookahead L = 0.25), all from the snapshot of the last
 * boundary and the agent's own state:
 *   t = k       act: every live agent moves (its own state only); a predator
 *               sends STRIKE (its new cell) to every uncaught prey whose
 *               published cell is within one move of its new cell; a prey
 *               schedules RESOLVE to itself;
 *   t = k + L   STRIKE: a prey counts strikes on its (new) cell;
 *   t = k + 2L  RESOLVE: with at least catch_need strikes the prey is caught
 *               and sends CAUGHT to each predator that struck it;
 *   t = k + 3L  CAUGHT: the predator is credited with a catch.
 * A caught prey terminates; the predators terminate when no prey is left.
 * The obstacle map is a pure function of the instance seed (a hash of seed
 * and cell; README.md has the formula), so every entity computes the same
 * map without shared state; the agents' start cells are drawn from their own
 * random streams.  README.md states every observation element and reward.
 */
#include <stdio.h>
#include <string.h>

#include "hunt.h"

enum { HUNT_STRIKE = 0, HUNT_RESOLVE = 1, HUNT_CAUGHT = 2 };
enum { HUNT_MOVES = 5 };

#define HUNT_LOOKAHEAD 0.25
#define HUNT_NONE UINT32_MAX

typedef struct hunt_payload {
    uint32_t from; /* STRIKE: predator index; CAUGHT: prey agent index */
    uint32_t cell; /* STRIKE: the predator's new cell                 */
} hunt_payload;

typedef struct hunt_record {
    uint32_t cell;   /* published at each boundary */
    uint32_t caught;
} hunt_record;

static const seer_param hunt_params[] = {
    {SEER_MEMBER(seer_hunt_config, width), .def = 8, .lo = 3, .hi = 256,
     .doc = "grid columns"},
    {SEER_MEMBER(seer_hunt_config, height), .def = 8, .lo = 3, .hi = 256,
     .doc = "grid rows"},
    {SEER_MEMBER(seer_hunt_config, num_predators), .def = 3, .lo = 1, .hi = 64,
     .doc = "predators (group 'predator', MultiDiscrete([5, 2]): move, signal)"},
    {SEER_MEMBER(seer_hunt_config, num_prey), .def = 2, .lo = 1, .hi = 1024,
     .doc = "prey (group 'prey', Discrete(5): move)"},
    {SEER_MEMBER(seer_hunt_config, torus), .def = 1, .lo = 0, .hi = 1,
     .doc = "1: the grid wraps around; 0: bounded (moves off the grid are forbidden)"},
    {SEER_MEMBER(seer_hunt_config, view), .def = 2, .lo = 0, .hi = 7,
     .doc = "r: agents see the (2r+1) x (2r+1) cells around them"},
    {SEER_MEMBER(seer_hunt_config, catch_need), .def = 1, .lo = 1, .hi = 64,
     .doc = "predators that must land on a prey's cell in one step to catch it"},
    {SEER_MEMBER(seer_hunt_config, obstacle_density), .def = 0.15, .lo = 0, .hi = 0.9,
     .doc = "probability that a cell is an obstacle (the map follows the instance seed)"},
    {SEER_MEMBER(seer_hunt_config, catch_reward), .def = 1.0, .lo = 0, .hi = 1e6,
     .doc = "reward of every predator credited with a catch; the caught prey loses it"},
    {SEER_MEMBER(seer_hunt_config, step_cost), .def = 0.01, .lo = 0, .hi = 1e6,
     .doc = "predators pay it every step, prey earn it every step"},
    {SEER_MEMBER(seer_hunt_config, forbidden_penalty), .def = 0.1, .lo = 0, .hi = 1e6,
     .doc = "penalty for a move the mask forbids (the agent stays; enforce_masks=False)"},
};

static const seer_field hunt_state_fields[] = {
    {SEER_MEMBER(seer_hunt_agent, cell)},         {SEER_MEMBER(seer_hunt_agent, signal)},
    {SEER_MEMBER(seer_hunt_agent, forbidden)},    {SEER_MEMBER(seer_hunt_agent, caught)},
    {SEER_MEMBER(seer_hunt_agent, caught_now)},   {SEER_MEMBER(seer_hunt_agent, catches_step)},
    {SEER_MEMBER(seer_hunt_agent, hits)},         {SEER_MEMBER(seer_hunt_agent, pad)},
    {SEER_MEMBER(seer_hunt_agent, strikers)},     {SEER_MEMBER(seer_hunt_agent, catches)},
    {SEER_MEMBER(seer_hunt_agent, forbidden_total)},
    {SEER_MEMBER(seer_hunt_agent, signals_total)}, {SEER_MEMBER(seer_hunt_agent, steps_acted)},
};

/* ---- The grid ----------------------------------------------------------- */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int is_obstacle(const seer_hunt_config *c, uint64_t seed, uint32_t cell)
{
    if (!(c->obstacle_density > 0.0))
        return 0;
    const uint64_t z = mix64(seed + 0x9E3779B97F4A7C15ull * ((uint64_t)cell + 1u));
    return (double)(z >> 11) * 0x1.0p-53 < c->obstacle_density;
}

/* The cell at offset (dx, dy) from `cell` (|dx|, |dy| < width, height), or
 * HUNT_NONE off a bounded grid. */
static uint32_t offset_cell(const seer_hunt_config *c, uint32_t cell, int32_t dx, int32_t dy)
{
    const int32_t w = (int32_t)c->width, h = (int32_t)c->height;
    int32_t col = (int32_t)(cell % c->width) + dx, row = (int32_t)(cell / c->width) + dy;
    if (c->torus) {
        col = (col + w) % w;
        row = (row + h) % h;
    } else if (col < 0 || col >= w || row < 0 || row >= h) {
        return HUNT_NONE;
    }
    return (uint32_t)col + (uint32_t)row * c->width;
}

static const int32_t k_dx[HUNT_MOVES] = {0, 0, 1, 0, -1};
static const int32_t k_dy[HUNT_MOVES] = {0, -1, 0, 1, 0};

/* Whether `move` from `cell` is allowed: stay always; otherwise the target
 * exists and is free. */
static int move_allowed(const seer_hunt_config *c, uint64_t seed, uint32_t cell, int32_t move)
{
    if (move == 0)
        return 1;
    const uint32_t t = offset_cell(c, cell, k_dx[move], k_dy[move]);
    return t != HUNT_NONE && !is_obstacle(c, seed, t);
}

/* Offset from a to b along one axis of length n: wrapped into
 * (-n/2, n/2] on a torus, plain otherwise. */
static int32_t axis_delta(const seer_hunt_config *c, uint32_t a, uint32_t b, uint32_t n)
{
    if (!c->torus)
        return (int32_t)b - (int32_t)a;
    int32_t d = (int32_t)((b + n - a) % n);
    return 2 * d > (int32_t)n ? d - (int32_t)n : d;
}

static void delta(const seer_hunt_config *c, uint32_t a, uint32_t b, int32_t *dx, int32_t *dy)
{
    *dx = axis_delta(c, a % c->width, b % c->width, c->width);
    *dy = axis_delta(c, a / c->width, b / c->width, c->height);
}

static int32_t iabs(int32_t v) { return v < 0 ? -v : v; }

/* Manhattan distance on the torus (wrapped whatever `torus` says: a lower
 * bound of the bounded grid's distance). */
static int32_t torus_distance(const seer_hunt_config *c, uint32_t a, uint32_t b)
{
    const seer_hunt_config t = {.width = c->width, .height = c->height, .torus = 1};
    int32_t dx, dy;
    delta(&t, a, b, &dx, &dy);
    return iabs(dx) + iabs(dy);
}

/* ---- Description -------------------------------------------------------- */

static int hunt_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const seer_hunt_config *c = config;
    if (c->catch_need > c->num_predators) {
        snprintf(err, errlen, "hunt: catch_need (%u) must not exceed num_predators (%u)",
                 c->catch_need, c->num_predators);
        return SEER_E_CONFIG;
    }
    const uint32_t side = c->width < c->height ? c->width : c->height;
    if (2u * c->view + 1u > side) {
        snprintf(err, errlen,
                 "hunt: view (%u): the window 2*view+1 = %u must fit in min(width, height) = %u",
                 c->view, 2u * c->view + 1u, side);
        return SEER_E_CONFIG;
    }
    if (c->num_predators + c->num_prey > c->width * c->height) {
        snprintf(err, errlen,
                 "hunt: num_predators + num_prey (%u) must not exceed width * height (%u)",
                 c->num_predators + c->num_prey, c->width * c->height);
        return SEER_E_CONFIG;
    }
    const uint32_t A = c->num_predators + c->num_prey;
    out->num_entities = A;
    out->num_agents = A;
    out->num_groups = 2;
    out->state_dim = 3u * A + c->width * c->height;
    out->entity_size = sizeof(seer_hunt_agent);
    out->payload_size = sizeof(hunt_payload);
    out->snapshot_size = sizeof(hunt_record);
    out->instance_size = 0;
    out->lookahead = HUNT_LOOKAHEAD;
    out->step_duration = 1.0;
    out->pending_events = (uint64_t)c->num_predators * 4u + c->num_prey;
    return SEER_OK;
}

static uint32_t window(const seer_hunt_config *c)
{
    return (2u * c->view + 1u) * (2u * c->view + 1u);
}

static uint32_t predator_obs_dim(const seer_hunt_config *c)
{
    return 5u + c->num_predators + 3u * window(c);
}

static uint32_t prey_obs_dim(const seer_hunt_config *c) { return 4u + 2u * window(c); }

static const char *const predator_info[] = {"catches", "forbidden_moves", "signals_sent"};
static const char *const prey_info[] = {"steps_alive", "forbidden_moves"};

static int hunt_group(const void *config, uint32_t g, seer_group *out, char *err, size_t errlen)
{
    const seer_hunt_config *c = config;
    if (g == 0) {
        *out = (seer_group){.name = "predator", .count = c->num_predators,
                            .obs_dim = predator_obs_dim(c),
                            .action_kind = SEER_ACTION_MULTI_DISCRETE, .action_dim = 2,
                            .info_dim = 3, .info_names = predator_info};
        return 0;
    }
    if (g == 1) {
        *out = (seer_group){.name = "prey", .count = c->num_prey, .obs_dim = prey_obs_dim(c),
                            .action_kind = SEER_ACTION_DISCRETE, .action_dim = 1,
                            .action_n = HUNT_MOVES, .info_dim = 2, .info_names = prey_info};
        return 0;
    }
    snprintf(err, errlen, "hunt: no group %u", g);
    return 1;
}

static void hunt_action_nvec(const void *config, uint32_t g, int32_t *nvec)
{
    (void)config;
    if (g == 0) {
        nvec[0] = HUNT_MOVES;
        nvec[1] = 2;
    }
}

static void hunt_group_obs_bounds(const void *config, uint32_t g, float *low, float *high)
{
    const seer_hunt_config *c = config;
    const uint32_t S = window(c), P = c->num_predators;
    uint32_t i = 0;
    for (; i < 2; i++) { /* col / width, row / height */
        low[i] = 0.0f;
        high[i] = 1.0f;
    }
    if (g == 0) {
        low[i] = 0.0f; /* prey left / num_prey */
        high[i++] = 1.0f;
    }
    for (uint32_t j = 0; j < 2; j++, i++) { /* nearest offset / side */
        low[i] = -1.0f;
        high[i] = 1.0f;
    }
    if (g == 0) {
        for (uint32_t j = 0; j < P; j++, i++) { /* signals */
            low[i] = 0.0f;
            high[i] = 1.0f;
        }
    }
    for (uint32_t j = 0; j < S; j++, i++) { /* obstacles */
        low[i] = 0.0f;
        high[i] = 1.0f;
    }
    if (g == 0) {
        for (uint32_t j = 0; j < S; j++, i++) { /* uncaught prey per cell */
            low[i] = 0.0f;
            high[i] = (float)c->num_prey;
        }
    }
    for (uint32_t j = 0; j < S; j++, i++) { /* (other) predators per cell */
        low[i] = 0.0f;
        high[i] = (float)P;
    }
}

static void hunt_state_bounds(const void *config, float *low, float *high)
{
    const seer_hunt_config *c = config;
    const uint32_t n = 3u * (c->num_predators + c->num_prey) + c->width * c->height;
    for (uint32_t i = 0; i < n; i++) {
        low[i] = 0.0f;
        high[i] = 1.0f;
    }
}

/* ---- Handlers ----------------------------------------------------------- */

static int hunt_init(seer_ctx *ctx, void *entity)
{
    const seer_hunt_config *c = seer_config(ctx);
    seer_hunt_agent *st = entity;
    const uint64_t seed = seer_seed(ctx);
    const uint32_t n = c->width * c->height;
    const uint32_t c0 = seer_rng_below(ctx, n);
    st->cell = c0; /* kept if every cell is an obstacle */
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t cell = (c0 + i) % n;
        if (!is_obstacle(c, seed, cell)) {
            st->cell = cell;
            break;
        }
    }
    return 0;
}

static int hunt_act(seer_ctx *ctx, void *entity, const void *action)
{
    const seer_hunt_config *c = seer_config(ctx);
    seer_hunt_agent *st = entity;
    const int32_t *v = action;
    const uint32_t self = seer_self(ctx), P = c->num_predators;
    const seer_time now = seer_now(ctx);
    const int32_t move = v[0];
    st->steps_acted++;
    st->forbidden = 0;
    if (move_allowed(c, seer_seed(ctx), st->cell, move)) {
        st->cell = offset_cell(c, st->cell, k_dx[move], k_dy[move]);
    } else {
        st->forbidden = 1;
        st->forbidden_total++;
    }
    if (self >= P) { /* prey */
        st->hits = 0;
        st->strikers = 0;
        st->caught_now = 0;
        return seer_schedule(ctx, self, now + 2.0 * HUNT_LOOKAHEAD, HUNT_RESOLVE, NULL, 0);
    }
    st->signal = (uint32_t)v[1];
    st->signals_total += st->signal;
    st->catches_step = 0;
    const hunt_payload p = {.from = self, .cell = st->cell};
    for (uint32_t j = 0; j < c->num_prey; j++) {
        const hunt_record *rec = seer_snapshot(ctx, P + j);
        if (rec->caught || torus_distance(c, st->cell, rec->cell) > 1)
            continue; /* this prey cannot be on our cell now */
        int rc = seer_schedule(ctx, P + j, now + HUNT_LOOKAHEAD, HUNT_STRIKE, &p, sizeof p);
        if (rc != SEER_OK)
            return rc;
    }
    return 0;
}

static int hunt_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                       uint32_t size)
{
    (void)size;
    const seer_hunt_config *c = seer_config(ctx);
    seer_hunt_agent *st = entity;
    const hunt_payload *in = payload;
    switch (type) {
    case HUNT_STRIKE:
        if (!st->caught && in->cell == st->cell) {
            st->hits++;
            st->strikers |= 1ull << in->from;
        }
        return 0;
    case HUNT_RESOLVE:
        if (st->caught || st->hits < c->catch_need)
            return 0;
        st->caught = 1;
        st->caught_now = 1;
        for (uint32_t i = 0; i < c->num_predators; i++) {
            if (!(st->strikers >> i & 1u))
                continue;
            const hunt_payload p = {.from = seer_self(ctx), .cell = st->cell};
            int rc = seer_schedule(ctx, i, seer_now(ctx) + HUNT_LOOKAHEAD, HUNT_CAUGHT, &p,
                                   sizeof p);
            if (rc != SEER_OK)
                return rc;
        }
        return 0;
    case HUNT_CAUGHT:
        st->catches_step++;
        st->catches++;
        return 0;
    default: return seer_fail_step(ctx, "hunt: unknown event type");
    }
}

/* ---- Boundary ----------------------------------------------------------- */

static uint32_t window_index(const seer_hunt_config *c, int32_t dx, int32_t dy)
{
    const int32_t r = (int32_t)c->view;
    if (iabs(dx) > r || iabs(dy) > r)
        return HUNT_NONE;
    return (uint32_t)((dy + r) * (2 * r + 1) + (dx + r));
}

static void hunt_observe(seer_ctx *ctx, uint32_t a, const seer_output *out)
{
    const seer_hunt_config *c = seer_config(ctx);
    const seer_hunt_agent *st = seer_entity_state(ctx, a);
    const uint64_t seed = seer_seed(ctx);
    const uint32_t P = c->num_predators, Q = c->num_prey, S = window(c);
    const int32_t r = (int32_t)c->view;
    const int predator = a < P;
    float *o = out->obs;
    uint32_t i = 0;
    o[i++] = (float)((double)(st->cell % c->width) / (double)c->width);
    o[i++] = (float)((double)(st->cell / c->width) / (double)c->height);

    /* the others: predators see uncaught prey, prey see predators */
    uint32_t left = 0;
    for (uint32_t j = 0; j < Q; j++)
        left += !((const seer_hunt_agent *)seer_entity_state(ctx, P + j))->caught;
    if (predator)
        o[i++] = (float)((double)left / (double)Q);
    const uint32_t first = predator ? P : 0, end = predator ? P + Q : P;
    int32_t best = INT32_MAX, bdx = 0, bdy = 0;
    for (uint32_t e = first; e < end; e++) {
        const seer_hunt_agent *ot = seer_entity_state(ctx, e);
        if (ot->caught)
            continue;
        int32_t dx, dy;
        delta(c, st->cell, ot->cell, &dx, &dy);
        if (iabs(dx) + iabs(dy) < best) {
            best = iabs(dx) + iabs(dy);
            bdx = dx;
            bdy = dy;
        }
    }
    o[i++] = (float)((double)bdx / (double)c->width);
    o[i++] = (float)((double)bdy / (double)c->height);
    if (predator) {
        for (uint32_t j = 0; j < P; j++)
            o[i++] = (float)((const seer_hunt_agent *)seer_entity_state(ctx, j))->signal;
    }
    /* the obstacle window (off a bounded grid: 1) */
    for (int32_t dy = -r; dy <= r; dy++) {
        for (int32_t dx = -r; dx <= r; dx++) {
            const uint32_t t = offset_cell(c, st->cell, dx, dy);
            o[i++] = t == HUNT_NONE || is_obstacle(c, seed, t) ? 1.0f : 0.0f;
        }
    }
    /* predators: uncaught prey per cell, then the other predators per cell;
     * prey: predators per cell (the rows were zeroed by the runtime) */
    float *prey_win = predator ? o + i : NULL;
    float *pred_win = predator ? o + i + S : o + i;
    for (uint32_t e = 0; e < P + Q; e++) {
        const seer_hunt_agent *ot = seer_entity_state(ctx, e);
        if (e == a || (e >= P && (!predator || ot->caught)))
            continue;
        int32_t dx, dy;
        delta(c, st->cell, ot->cell, &dx, &dy);
        const uint32_t w = window_index(c, dx, dy);
        if (w == HUNT_NONE)
            continue;
        if (e >= P)
            prey_win[w] += 1.0f;
        else
            pred_win[w] += 1.0f;
    }

    double reward;
    if (predator) {
        reward = c->catch_reward * (double)st->catches_step - c->step_cost -
                 c->forbidden_penalty * (double)st->forbidden;
        *out->terminated = left == 0;
        out->info[0] = (double)st->catches;
        out->info[1] = (double)st->forbidden_total;
        out->info[2] = (double)st->signals_total;
    } else {
        reward = c->step_cost - c->catch_reward * (double)st->caught_now -
                 c->forbidden_penalty * (double)st->forbidden;
        *out->terminated = st->caught != 0;
        out->info[0] = (double)st->steps_acted;
        out->info[1] = (double)st->forbidden_total;
    }
    *out->reward = (float)reward;
}

static void hunt_action_mask(seer_ctx *ctx, uint32_t a, uint8_t *mask)
{
    const seer_hunt_config *c = seer_config(ctx);
    const seer_hunt_agent *st = seer_entity_state(ctx, a);
    const uint64_t seed = seer_seed(ctx);
    for (int32_t m = 1; m < HUNT_MOVES; m++)
        mask[m] = (uint8_t)move_allowed(c, seed, st->cell, m);
    /* the predators' signal (mask bytes 5 and 6) is never forbidden */
}

static void hunt_publish(seer_ctx *ctx, const void *entity, void *record)
{
    (void)ctx;
    const seer_hunt_agent *st = entity;
    hunt_record *r = record;
    r->cell = st->cell;
    r->caught = st->caught;
}

/* Per agent (col / width, row / height, 1 for a predator or an uncaught prey,
 * else 0), then the obstacle map (width * height, row-major). */
static void hunt_global_state(seer_ctx *ctx, float *out)
{
    const seer_hunt_config *c = seer_config(ctx);
    const uint32_t A = c->num_predators + c->num_prey, n = c->width * c->height;
    const uint64_t seed = seer_seed(ctx);
    for (uint32_t e = 0; e < A; e++) {
        const seer_hunt_agent *st = seer_entity_state(ctx, e);
        out[3 * e] = (float)((double)(st->cell % c->width) / (double)c->width);
        out[3 * e + 1] = (float)((double)(st->cell / c->width) / (double)c->height);
        out[3 * e + 2] = st->caught ? 0.0f : 1.0f;
    }
    for (uint32_t cell = 0; cell < n; cell++)
        out[3 * A + cell] = is_obstacle(c, seed, cell) ? 1.0f : 0.0f;
}

static const char *const hunt_event_names[] = {"STRIKE", "RESOLVE", "CAUGHT"};

const seer_model seer_model_hunt = {
    .api_version = SEER_API_VERSION,
    .name = "hunt",
    .config_size = sizeof(seer_hunt_config),
    .params = hunt_params,
    .num_params = SEER_COUNT(hunt_params),
    .describe = hunt_describe,
    .init = hunt_init,
    .act = hunt_act,
    .handle = hunt_handle,
    .observe = hunt_observe,
    .publish = hunt_publish,
    .global_state = hunt_global_state,
    .event_names = hunt_event_names,
    .event_type_count = 3,
    .state_bounds = hunt_state_bounds,
    .state_fields = hunt_state_fields,
    .num_state_fields = SEER_COUNT(hunt_state_fields),
    .max_cycles = 100,
    .flags = 0,
    .group = hunt_group,
    .group_obs_bounds = hunt_group_obs_bounds,
    .action_nvec = hunt_action_nvec,
    .action_mask = hunt_action_mask,
};
