/*
 * PCS on seer: a W x H torus of cells (one agent each) with C channels;
 * portables travel as event payloads, each one perpetual event chain.
 *
 * Two dynamics share the cell state and the RL face:
 *   - the default mode (lookahead h > 0, runs on every executor): calls,
 *     busy lines, moves that reach the neighbour after h, handoffs, dropped
 *     handoffs, periodic load reports to the 4 neighbours, an optional daily
 *     call-rate profile; random numbers from the runtime's per-entity stream;
 *   - classic mode: the ROSS-Models PCS dynamics to the letter (CLCG4 stream per cell kept in the cell state, idle walks,
 *     zero-latency handoffs), lookahead 0, serial executor only.
 * README.md (beside this file) states every formula.  Handlers allocate nothing.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pcs.h"

/* Event types.  The portable's method is the event type. */
enum {
    PCS_EV_CALL = 0,     /* NEXTCALL: a call attempt                        */
    PCS_EV_COMPLETE = 1, /* COMPLETIONCALL: the call ends                   */
    PCS_EV_MOVE_OUT = 2, /* MOVECALLOUT: a portable on a call leaves        */
    PCS_EV_MOVE_IN = 3,  /* MOVECALLIN (classic) / arrival (default mode)   */
    PCS_EV_TICK = 4,     /* load-report timer (self)                        */
    PCS_EV_REPORT = 5,   /* a neighbour's load report                       */
    PCS_EV_COUNT = 6
};

enum { KIND_NONE = 0, KIND_NORMAL = 1, KIND_RESERVE = 2 };

/* A portable's record, carried by its event chain. */
typedef struct pcs_portable {
    double c;      /* call completion time (+inf: no call in progress) */
    double n;      /* next call attempt time                            */
    double m;      /* next move time                                    */
    uint32_t kind; /* channel held: KIND_*                              */
    uint32_t pad;
} pcs_portable;

/* A load report. */
typedef struct pcs_report {
    double sent;      /* time the occupancy was measured       */
    uint32_t busy;    /* busy channels of the sender           */
    uint32_t from;    /* direction of the sender, seen from the receiver */
} pcs_report;

/* Per-instance data written by the boundary hook (for the shared reward). */
typedef struct pcs_totals {
    uint64_t step_blocks;
    uint64_t step_drops;
} pcs_totals;

#define PCS_MAX_CELLS (1u << 20)
#define PCS_MAX_PORTABLES (1u << 26)
#define PCS_TWO_PI 6.283185307179586

/* ---- classic CLCG4 (L'Ecuyer & Andres) ----------------------------------- */

#define CLCG4_M0 2147483647u
#define CLCG4_M1 2147483543u
#define CLCG4_M2 2147483423u
#define CLCG4_M3 2147483323u

static const uint64_t k_clcg4_m[4] = {CLCG4_M0, CLCG4_M1, CLCG4_M2, CLCG4_M3};
static const uint64_t k_clcg4_a[4] = {45991u, 207707u, 138556u, 49689u};
static const uint64_t k_clcg4_base[4] = {11111111u, 22222222u, 33333333u, 44444444u};

static inline double clcg4_uniform(uint64_t s[4])
{
    /* The moduli are constants, so `%` compiles to multiplications. */
    s[0] = (s[0] * 45991u) % CLCG4_M0;
    s[1] = (s[1] * 207707u) % CLCG4_M1;
    s[2] = (s[2] * 138556u) % CLCG4_M2;
    s[3] = (s[3] * 49689u) % CLCG4_M3;
    double u = (double)s[0] * 4.65661287524579692e-10;
    u -= (double)s[1] * 4.65661310075985993e-10;
    if (u < 0.0)
        u += 1.0;
    u += (double)s[2] * 4.65661336096842131e-10;
    if (u >= 1.0)
        u -= 1.0;
    u -= (double)s[3] * 4.65661357780891134e-10;
    if (u < 0.0)
        u += 1.0;
    return u;
}

static inline uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m) { return a * b % m; }

static uint64_t powmod(uint64_t b, uint64_t e, uint64_t m)
{
    uint64_t r = 1;
    b %= m;
    while (e) {
        if (e & 1u)
            r = mulmod(r, b, m);
        b = mulmod(b, b, m);
        e >>= 1;
    }
    return r;
}

static inline uint64_t splitmix64_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Stream of cell g: seed_j * (a_j^(2^72))^g mod m_j (0 becomes 1).  Seed 0
 * is the engine's base seed; another seed s gives the base seed
 * 1 + splitmix64_j(s) mod (m_j - 1), j = 0..3 (splitmix64 sequence from s). */
static void clcg4_seed_cell(uint64_t seed, uint32_t g, uint64_t s[4])
{
    uint64_t base[4];
    if (seed == 0) {
        memcpy(base, k_clcg4_base, sizeof base);
    } else {
        uint64_t x = seed;
        for (int j = 0; j < 4; j++)
            base[j] = 1u + splitmix64_next(&x) % (k_clcg4_m[j] - 1u);
    }
    for (int j = 0; j < 4; j++) {
        uint64_t m = k_clcg4_m[j];
        uint64_t a = k_clcg4_a[j];
        for (int i = 0; i < 72; i++) /* a^(2^72) */
            a = mulmod(a, a, m);
        uint64_t v = mulmod(base[j], powmod(a, g, m), m);
        s[j] = v ? v : 1u;
    }
}

/* ---- helpers -------------------------------------------------------------- */

/* Neighbour of `cell` in direction d: 0 = x-1, 1 = x+1, 2 = y-1, 3 = y+1. */
static inline uint32_t neighbour(const seer_pcs_config *c, uint32_t cell, uint32_t d)
{
    const uint32_t w = c->width, h = c->height;
    uint32_t x = cell % w, y = cell / w;
    switch (d) {
    case 0: x = x ? x - 1 : w - 1; break;
    case 1: x = x + 1 == w ? 0 : x + 1; break;
    case 2: y = y ? y - 1 : h - 1; break;
    default: y = y + 1 == h ? 0 : y + 1; break;
    }
    return x + y * w;
}

static inline uint32_t busy_of(const seer_pcs_config *c, const seer_pcs_cell *st)
{
    return c->channels - st->free_channels;
}

/* ---- describe --------------------------------------------------------------- */

static const seer_param pcs_params[] = {
    {SEER_MEMBER(seer_pcs_config, width), .def = 8, .lo = 1, .hi = PCS_MAX_CELLS,
     .doc = "cells per row of the torus"},
    {SEER_MEMBER(seer_pcs_config, height), .def = 8, .lo = 1, .hi = PCS_MAX_CELLS,
     .doc = "rows of the torus"},
    {SEER_MEMBER(seer_pcs_config, channels), .def = 10, .lo = 1, .hi = 65535,
     .doc = "channels per cell"},
    {SEER_MEMBER(seer_pcs_config, portables_per_cell), .def = 16, .lo = 1, .hi = 65535,
     .doc = "portables that start in each cell"},
    {SEER_MEMBER(seer_pcs_config, max_guard), .def = 4, .lo = 0, .hi = 65535,
     .doc = "actions are Discrete(max_guard + 1) guard channels (<= channels)"},
    {SEER_MEMBER(seer_pcs_config, classic), .def = 0,
     .doc = "the exact ROSS-Models dynamics (lookahead 0: the serial executor, or the optimistic "
            "one on several threads)"},
    {SEER_MEMBER(seer_pcs_config, move_mean), .def = 4500.0, .lo = 0, .hi = 1e300,
     .flags = SEER_P_GT | SEER_P_INF | SEER_P_NONE, .none = HUGE_VAL,
     .doc = "mean minutes between moves (None or inf: no moves)"},
    {SEER_MEMBER(seer_pcs_config, next_call_mean), .def = 360.0, .lo = 0, .hi = 1e300,
     .flags = SEER_P_GT, .doc = "mean idle minutes before the next call attempt"},
    {SEER_MEMBER(seer_pcs_config, call_time_mean), .def = 180.0, .lo = 0, .hi = 1e300,
     .flags = SEER_P_GT, .doc = "mean call duration in minutes"},
    {SEER_MEMBER(seer_pcs_config, handoff_latency), .def = 1.0, .lo = 0, .hi = 1e300,
     .flags = SEER_P_GT,
     .doc = "minutes a move or report takes to reach the neighbour (the lookahead; unused in "
            "classic mode)"},
    {SEER_MEMBER(seer_pcs_config, report_interval), .def = 10.0, .lo = 0, .hi = 1e300,
     .flags = SEER_P_NONE, .none = 0.0,
     .doc = "minutes between load reports (0 or None: off; unused in classic mode)"},
    {SEER_MEMBER(seer_pcs_config, step_minutes), .def = 20.0, .lo = 0, .hi = 1e300,
     .flags = SEER_P_GT, .doc = "simulated minutes per step"},
    {SEER_MEMBER(seer_pcs_config, handoff_weight), .def = 10.0, .lo = 0, .hi = 1e6,
     .doc = "reward weight of a dropped handoff"},
    {SEER_MEMBER(seer_pcs_config, shared_reward), .def = 0.0, .lo = 0, .hi = 1,
     .doc = "weight of the network-wide term in each cell's reward"},
    /* [0, 1): the largest double below 1 as the (inclusive) high end */
    {SEER_MEMBER(seer_pcs_config, profile_amplitude), .def = 0.0, .lo = 0,
     .hi = 0x1.fffffffffffffp-1, .doc = "amplitude of the daily call-rate profile in [0, 1) (0: off; unused in classic "
            "mode)"},
};

static const seer_field pcs_state_fields[] = {
    {SEER_MEMBER(seer_pcs_cell, call_attempts)},    {SEER_MEMBER(seer_pcs_cell, channel_blocks)},
    {SEER_MEMBER(seer_pcs_cell, busy_lines)},       {SEER_MEMBER(seer_pcs_cell, handoff_blocks)},
    {SEER_MEMBER(seer_pcs_cell, handoff_attempts)}, {SEER_MEMBER(seer_pcs_cell, guard_blocks)},
    {SEER_MEMBER(seer_pcs_cell, calls_completed)},  {SEER_MEMBER(seer_pcs_cell, moves_in)},
    {SEER_MEMBER(seer_pcs_cell, reports_received)}, {SEER_MEMBER(seer_pcs_cell, clcg4)},
    {SEER_MEMBER(seer_pcs_cell, report_time)},      {SEER_MEMBER(seer_pcs_cell, report_busy)},
    {SEER_MEMBER(seer_pcs_cell, free_channels)},    {SEER_MEMBER(seer_pcs_cell, reserve_channels)},
    {SEER_MEMBER(seer_pcs_cell, guard)},            {SEER_MEMBER(seer_pcs_cell, report_ticks)},
    {SEER_MEMBER(seer_pcs_cell, step_attempts)},    {SEER_MEMBER(seer_pcs_cell, step_blocks)},
    {SEER_MEMBER(seer_pcs_cell, step_handoffs)},    {SEER_MEMBER(seer_pcs_cell, step_drops)},
};

static int bad(char *err, size_t errlen, const char *msg, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    snprintf(err, errlen, "pcs: %s (got %s)", msg, buf);
    return SEER_E_CONFIG;
}

/* Ranges of single parameters are in pcs_params; here the rules that tie
 * several together, and classic mode's fixed values. */
static int pcs_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    seer_pcs_config *c = config;
    if ((uint64_t)c->width * c->height > PCS_MAX_CELLS)
        return bad(err, errlen, "width * height must be <= 1048576 cells",
                   (double)c->width * (double)c->height);
    if ((uint64_t)c->width * c->height * c->portables_per_cell > PCS_MAX_PORTABLES)
        return bad(err, errlen,
                   "width * height * portables_per_cell must be <= 67108864 portables",
                   (double)c->width * (double)c->height * (double)c->portables_per_cell);
    if (c->max_guard > c->channels)
        return bad(err, errlen, "max_guard must be <= channels", (double)c->max_guard);
    /* A call counts call_time_mean / next_call_mean busy lines on average,
     * one loop turn each (and a classic idle walk next_call_mean /
     * move_mean moves): bound the work one event may take. */
    if (c->call_time_mean / c->next_call_mean > 1e5)
        return bad(err, errlen,
                   "call_time_mean / next_call_mean must be <= 100000 (each call would count "
                   "that many busy lines); raise next_call_mean",
                   c->call_time_mean / c->next_call_mean);
    if (c->classic && c->next_call_mean / c->move_mean > 1e5)
        return bad(err, errlen,
                   "next_call_mean / move_mean must be <= 100000 in classic mode (each idle "
                   "walk would take that many moves); raise move_mean",
                   c->next_call_mean / c->move_mean);
    if (c->classic) {
        if (!isfinite(c->move_mean))
            return bad(err, errlen, "move_mean must be finite in classic mode", c->move_mean);
        /* classic mode has zero-latency handoffs (handoff_latency is not
         * read) and no load reports or call-rate profile */
        c->report_interval = 0.0;
        c->profile_amplitude = 0.0;
    } else {
        if (!(c->report_interval == 0.0 || c->report_interval >= 1e-3))
            return bad(err, errlen, "report_interval must be 0 (off) or finite and >= 0.001",
                       c->report_interval);
    }
    const uint32_t cells = c->width * c->height;
    const int profile = !c->classic && c->profile_amplitude > 0.0;
    out->num_entities = cells;
    out->num_agents = cells;
    out->obs_dim = PCS_OBS_BASE_DIM + (profile ? 2u : 0u);
    out->action_dim = 1;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_n = (int32_t)c->max_guard + 1;
    out->info_dim = PCS_INFO_DIM;
    out->state_dim = PCS_STATE_PER_CELL * cells + 2u;
    out->entity_size = sizeof(seer_pcs_cell);
    out->payload_size = sizeof(pcs_portable);
    out->snapshot_size = 0;
    out->instance_size = sizeof(pcs_totals);
    out->lookahead = c->classic ? 0.0 : c->handoff_latency;
    out->step_duration = c->step_minutes;
    /* a chain per portable, and a report timer per cell */
    out->pending_events = (uint64_t)cells * (c->portables_per_cell + 1u);
    return SEER_OK;
}

/* "cell_<index>", index = row * width + col (the entity index): one name
 * prefix for every cell, so clients that group agents by the name before the
 * last "_<int>" (TorchRL, BenchMARL, AgileRL) put all cells in one group. */
static int pcs_agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    (void)config;
    snprintf(buf, len, "cell_%u", agent);
    return 0;
}

/* Upper bound of a per-step count over P.  The dynamics bound no count: a
 * portable may make any number of call attempts within one step (each blocked
 * attempt redraws an exponential gap, which may be shorter than the time's
 * resolution), and in classic mode any number of zero-latency handoffs.  The
 * per-step counters are 32-bit (seer_pcs_cell.step_*), so count / P never
 * exceeds (2^32 - 1) / P, computed as observe computes the count's value
 * (double division, then float: rounding is monotone, so the bound holds). */
static float count_high(const seer_pcs_config *c)
{
    return (float)((double)UINT32_MAX / (double)c->portables_per_cell);
}

/* Fractions lie in [0, 1]; per-step counts over portables_per_cell in
 * [0, count_high]; the time of day in [-1, 1]. */
static void pcs_obs_bounds(const void *config, float *low, float *high)
{
    const seer_pcs_config *c = config;
    const float counts = count_high(c);
    for (int i = 0; i < PCS_OBS_BASE_DIM; i++) {
        low[i] = 0.0f;
        high[i] = i >= PCS_OBS_ATTEMPTS && i <= PCS_OBS_DROPS ? counts : 1.0f;
    }
    if (!c->classic && c->profile_amplitude > 0.0)
        for (int i = PCS_OBS_DAY_SIN; i <= PCS_OBS_DAY_COS; i++) {
            low[i] = -1.0f;
            high[i] = 1.0f;
        }
}

static void pcs_state_bounds(const void *config, float *low, float *high)
{
    const seer_pcs_config *c = config;
    const size_t cells = (size_t)c->width * c->height;
    const float counts = count_high(c);
    for (size_t e = 0; e < cells; e++)
        for (int j = 0; j < PCS_STATE_PER_CELL; j++) {
            low[e * PCS_STATE_PER_CELL + j] = 0.0f;
            high[e * PCS_STATE_PER_CELL + j] = j < 2 ? 1.0f : counts;
        }
    low[cells * PCS_STATE_PER_CELL] = low[cells * PCS_STATE_PER_CELL + 1] = -1.0f;
    high[cells * PCS_STATE_PER_CELL] = high[cells * PCS_STATE_PER_CELL + 1] = 1.0f;
}

/* t + d, but always later than t: where d is below the resolution of t (a
 * simulated time far beyond any sensible run) the loops that add delays
 * would otherwise never end.  Elsewhere exactly t + d. */
static inline double advance(double t, double d)
{
    const double u = t + d;
    return u > t ? u : nextafter(t, HUGE_VAL);
}

/* ---- classic dynamics ------------------------------------------------------ */

/* Receive time of an event for time T sent at `now`: offset max(0, T - now). */
static inline seer_time classic_at(seer_time now, double t)
{
    double d = t - now;
    return now + (d > 0.0 ? d : 0.0);
}

static inline double classic_exp(uint64_t s[4], double mean)
{
    return -mean * log(clcg4_uniform(s));
}

static inline uint32_t classic_dir(uint64_t s[4])
{
    return (uint32_t)(4.0 * clcg4_uniform(s));
}

static int classic_idle(seer_ctx *ctx, const seer_pcs_config *c, seer_pcs_cell *st,
                        pcs_portable *p)
{
    const seer_time now = seer_now(ctx);
    const uint32_t self = seer_self(ctx);
    if (p->n < p->m)
        return seer_schedule(ctx, self, classic_at(now, p->n), PCS_EV_CALL, p, sizeof *p);
    uint32_t cur = 0, nw = self;
    while (p->m < p->n) {
        cur = nw;
        nw = neighbour(c, cur, classic_dir(st->clcg4));
        p->m = advance(p->m, classic_exp(st->clcg4, c->move_mean));
    }
    return seer_schedule(ctx, cur, classic_at(now, p->n), PCS_EV_CALL, p, sizeof *p);
}

static int classic_busy(seer_ctx *ctx, const seer_pcs_config *c, seer_pcs_cell *st,
                        pcs_portable *p)
{
    const seer_time now = seer_now(ctx);
    const uint32_t self = seer_self(ctx);
    for (;;) {
        if (p->c < p->n) {
            if (p->c < p->m)
                return seer_schedule(ctx, self, classic_at(now, p->c), PCS_EV_COMPLETE, p,
                                     sizeof *p);
            break;
        }
        if (!(p->n < p->m))
            break;
        st->busy_lines++;
        st->call_attempts++;
        p->n = advance(p->n, classic_exp(st->clcg4, c->next_call_mean));
    }
    return seer_schedule(ctx, self, classic_at(now, p->m), PCS_EV_MOVE_OUT, p, sizeof *p);
}

static inline void classic_release(seer_pcs_cell *st, pcs_portable *p)
{
    if (p->kind == KIND_NORMAL)
        st->free_channels++;
    else if (p->kind == KIND_RESERVE)
        st->reserve_channels++;
    p->kind = KIND_NONE;
}

/* A new-call attempt (both modes): count it, and take a normal channel
 * unless free channels <= guard, which counts a block (a guard block when
 * channels were free).  Returns 1 when the call got a channel. */
static inline int admit_call(seer_pcs_cell *st)
{
    st->call_attempts++;
    st->step_attempts++;
    if (st->free_channels <= st->guard) {
        st->channel_blocks++;
        st->step_blocks++;
        if (st->free_channels)
            st->guard_blocks++;
        return 0;
    }
    st->free_channels--;
    return 1;
}

static int classic_handle(seer_ctx *ctx, const seer_pcs_config *c, seer_pcs_cell *st,
                          uint32_t type, pcs_portable *p)
{
    switch (type) {
    case PCS_EV_CALL:
        if (!admit_call(st)) {
            p->n += classic_exp(st->clcg4, c->next_call_mean);
            return classic_idle(ctx, c, st, p);
        }
        p->kind = KIND_NORMAL;
        p->c = classic_exp(st->clcg4, c->call_time_mean) + p->n;
        p->n += classic_exp(st->clcg4, c->next_call_mean);
        return classic_busy(ctx, c, st, p);
    case PCS_EV_COMPLETE:
        classic_release(st, p);
        p->c = INFINITY;
        st->calls_completed++;
        return classic_idle(ctx, c, st, p);
    case PCS_EV_MOVE_OUT: {
        classic_release(st, p);
        uint32_t dest = neighbour(c, seer_self(ctx), classic_dir(st->clcg4));
        return seer_schedule(ctx, dest, seer_now(ctx), PCS_EV_MOVE_IN, p, sizeof *p);
    }
    case PCS_EV_MOVE_IN:
        p->m += classic_exp(st->clcg4, c->move_mean);
        st->moves_in++;
        st->handoff_attempts++;
        st->step_handoffs++;
        if (st->free_channels) {
            st->free_channels--;
            p->kind = KIND_NORMAL;
        } else if (st->reserve_channels) {
            st->reserve_channels--;
            p->kind = KIND_RESERVE;
        } else {
            st->handoff_blocks++;
            st->step_drops++;
            p->c = INFINITY;
            return classic_idle(ctx, c, st, p);
        }
        return classic_busy(ctx, c, st, p);
    default:
        return -1;
    }
}

/* ---- default dynamics --------------------------------------------------------- */

/* Mean idle time before a call attempt drawn at time t (daily profile). */
static inline double next_mean(const seer_pcs_config *c, seer_time t)
{
    if (c->profile_amplitude > 0.0)
        return c->next_call_mean /
               (1.0 + c->profile_amplitude * sin(PCS_TWO_PI * t / PCS_DAY_MINUTES));
    return c->next_call_mean;
}

/* An idle portable: a call attempt here at max(N, now) if N < M, else a move
 * that reaches a uniformly chosen neighbour at max(M, now) + h. */
static int pcs_idle(seer_ctx *ctx, const seer_pcs_config *c, pcs_portable *p)
{
    const seer_time now = seer_now(ctx);
    if (p->n < p->m)
        return seer_schedule(ctx, seer_self(ctx), p->n > now ? p->n : now, PCS_EV_CALL, p,
                             sizeof *p);
    uint32_t dest = neighbour(c, seer_self(ctx), seer_rng_below(ctx, 4));
    seer_time t = (p->m > now ? p->m : now) + c->handoff_latency;
    return seer_schedule(ctx, dest, t, PCS_EV_MOVE_IN, p, sizeof *p);
}

/* A portable on a call: busy lines until the call ends or the portable moves
 * (the classic MinTS loop), then a completion or a move-out here. */
static int pcs_busy(seer_ctx *ctx, const seer_pcs_config *c, seer_pcs_cell *st,
                    pcs_portable *p)
{
    const seer_time now = seer_now(ctx);
    const uint32_t self = seer_self(ctx);
    for (;;) {
        if (p->c < p->n) {
            if (p->c < p->m)
                return seer_schedule(ctx, self, p->c, PCS_EV_COMPLETE, p, sizeof *p);
            break;
        }
        if (!(p->n < p->m))
            break;
        st->busy_lines++;
        st->call_attempts++;
        p->n = advance(p->n, seer_rng_exponential(ctx, next_mean(c, now)));
    }
    return seer_schedule(ctx, self, p->m, PCS_EV_MOVE_OUT, p, sizeof *p);
}

static int pcs_report_tick(seer_ctx *ctx, const seer_pcs_config *c, seer_pcs_cell *st)
{
    static const uint32_t opposite[4] = {1, 0, 3, 2};
    const seer_time now = seer_now(ctx);
    const uint32_t self = seer_self(ctx);
    pcs_report r = {.sent = now, .busy = busy_of(c, st), .from = 0};
    for (uint32_t d = 0; d < 4; d++) {
        r.from = opposite[d];
        int rc = seer_schedule(ctx, neighbour(c, self, d), now + c->handoff_latency,
                               PCS_EV_REPORT, &r, sizeof r);
        if (rc)
            return rc;
    }
    st->report_ticks++;
    return seer_schedule(ctx, self, (double)st->report_ticks * c->report_interval, PCS_EV_TICK,
                         NULL, 0);
}

static int default_handle(seer_ctx *ctx, const seer_pcs_config *c, seer_pcs_cell *st,
                          uint32_t type, const void *payload)
{
    const seer_time now = seer_now(ctx);
    if (type == PCS_EV_REPORT) {
        const pcs_report *r = payload;
        st->reports_received++;
        st->report_busy[r->from] = r->busy;
        st->report_time[r->from] = r->sent;
        return 0;
    }
    if (type == PCS_EV_TICK)
        return pcs_report_tick(ctx, c, st);
    pcs_portable p;
    memcpy(&p, payload, sizeof p);
    switch (type) {
    case PCS_EV_CALL:
        if (!admit_call(st)) {
            p.n = now + seer_rng_exponential(ctx, next_mean(c, now));
            return pcs_idle(ctx, c, &p);
        }
        p.kind = KIND_NORMAL;
        p.c = now + seer_rng_exponential(ctx, c->call_time_mean);
        p.n = now + seer_rng_exponential(ctx, next_mean(c, now));
        return pcs_busy(ctx, c, st, &p);
    case PCS_EV_COMPLETE:
        st->free_channels++;
        p.kind = KIND_NONE;
        p.c = INFINITY;
        st->calls_completed++;
        return pcs_idle(ctx, c, &p);
    case PCS_EV_MOVE_OUT: {
        st->free_channels++;
        p.kind = KIND_NONE;
        uint32_t dest = neighbour(c, seer_self(ctx), seer_rng_below(ctx, 4));
        return seer_schedule(ctx, dest, now + c->handoff_latency, PCS_EV_MOVE_IN, &p,
                             sizeof p);
    }
    case PCS_EV_MOVE_IN:
        st->moves_in++;
        p.m = now + seer_rng_exponential(ctx, c->move_mean);
        if (p.c < INFINITY) {
            if (p.c <= now) { /* the call ended while the portable was moving */
                p.c = INFINITY;
                st->calls_completed++;
                return pcs_idle(ctx, c, &p);
            }
            st->handoff_attempts++;
            st->step_handoffs++;
            if (st->free_channels == 0) {
                st->handoff_blocks++;
                st->step_drops++;
                p.c = INFINITY;
                return pcs_idle(ctx, c, &p);
            }
            st->free_channels--;
            p.kind = KIND_NORMAL;
            return pcs_busy(ctx, c, st, &p);
        }
        return pcs_idle(ctx, c, &p);
    default:
        return -1;
    }
}

/* ---- handlers ---------------------------------------------------------------- */

static int pcs_init(seer_ctx *ctx, void *entity)
{
    const seer_pcs_config *c = seer_config(ctx);
    seer_pcs_cell *st = entity;
    st->free_channels = c->channels;
    st->reserve_channels = 0;
    for (int d = 0; d < 4; d++)
        st->report_time[d] = -1.0;
    pcs_portable p = {.c = INFINITY, .n = 0.0, .m = 0.0, .kind = KIND_NONE, .pad = 0};
    if (c->classic) {
        clcg4_seed_cell(seer_seed(ctx), seer_self(ctx), st->clcg4);
        for (uint32_t j = 0; j < c->portables_per_cell; j++) {
            p.m = classic_exp(st->clcg4, c->move_mean);
            p.n = classic_exp(st->clcg4, c->next_call_mean);
            p.c = INFINITY;
            int rc = classic_idle(ctx, c, st, &p);
            if (rc)
                return rc;
        }
        return 0;
    }
    const int moves = isfinite(c->move_mean);
    for (uint32_t j = 0; j < c->portables_per_cell; j++) {
        p.m = moves ? seer_rng_exponential(ctx, c->move_mean) : INFINITY;
        p.n = seer_rng_exponential(ctx, next_mean(c, 0.0));
        p.c = INFINITY;
        int rc = pcs_idle(ctx, c, &p);
        if (rc)
            return rc;
    }
    if (c->report_interval > 0.0)
        return seer_schedule(ctx, seer_self(ctx), 0.0, PCS_EV_TICK, NULL, 0);
    return 0;
}

static int pcs_act(seer_ctx *ctx, void *entity, const void *action)
{
    (void)ctx;
    seer_pcs_cell *st = entity;
    st->guard = (uint32_t) * (const int32_t *)action;
    st->step_attempts = 0;
    st->step_blocks = 0;
    st->step_handoffs = 0;
    st->step_drops = 0;
    return 0;
}

static int pcs_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                      uint32_t size)
{
    (void)size;
    const seer_pcs_config *c = seer_config(ctx);
    if (c->classic) {
        pcs_portable p;
        memcpy(&p, payload, sizeof p);
        return classic_handle(ctx, c, entity, type, &p);
    }
    return default_handle(ctx, c, entity, type, payload);
}

static void pcs_boundary(seer_ctx *ctx, void *instance_data)
{
    const seer_sizes *sz = seer_model_sizes(ctx);
    pcs_totals *tot = instance_data;
    tot->step_blocks = 0;
    tot->step_drops = 0;
    for (uint32_t e = 0; e < sz->num_entities; e++) {
        const seer_pcs_cell *st = seer_entity_state(ctx, e);
        tot->step_blocks += st->step_blocks;
        tot->step_drops += st->step_drops;
    }
}

static inline double age_obs(const seer_pcs_config *c, seer_time now, double sent)
{
    if (!(c->report_interval > 0.0) || sent < 0.0)
        return 1.0;
    double a = (now - sent) / (4.0 * c->report_interval);
    return a < 1.0 ? a : 1.0;
}

static void pcs_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const seer_pcs_config *c = seer_config(ctx);
    const seer_pcs_cell *st = seer_entity_state(ctx, agent);
    const pcs_totals *tot = seer_instance_data(ctx);
    const seer_sizes *sz = seer_model_sizes(ctx);
    const seer_time now = seer_now(ctx);
    const double C = (double)c->channels, P = (double)c->portables_per_cell;
    float *o = out->obs;
    o[PCS_OBS_BUSY] = (float)((double)busy_of(c, st) / C);
    o[PCS_OBS_GUARD] = (float)((double)st->guard / C);
    o[PCS_OBS_ATTEMPTS] = (float)((double)st->step_attempts / P);
    o[PCS_OBS_BLOCKS] = (float)((double)st->step_blocks / P);
    o[PCS_OBS_HANDOFFS] = (float)((double)st->step_handoffs / P);
    o[PCS_OBS_DROPS] = (float)((double)st->step_drops / P);
    for (int d = 0; d < 4; d++) {
        o[PCS_OBS_NB_BUSY + d] = (float)((double)st->report_busy[d] / C);
        o[PCS_OBS_NB_AGE + d] = (float)age_obs(c, now, st->report_time[d]);
    }
    if (sz->obs_dim > PCS_OBS_BASE_DIM) {
        double ph = PCS_TWO_PI * now / PCS_DAY_MINUTES;
        o[PCS_OBS_DAY_SIN] = (float)sin(ph);
        o[PCS_OBS_DAY_COS] = (float)cos(ph);
    }
    double local = -((double)st->step_blocks + c->handoff_weight * (double)st->step_drops) / P;
    double r = local;
    if (c->shared_reward > 0.0) {
        double shared = -((double)tot->step_blocks + c->handoff_weight * (double)tot->step_drops) /
                        (P * (double)sz->num_agents);
        r = (1.0 - c->shared_reward) * local + c->shared_reward * shared;
    }
    *out->reward = (float)r;
    double *info = out->info;
    info[0] = (double)st->call_attempts;
    info[1] = (double)st->channel_blocks;
    info[2] = (double)st->busy_lines;
    info[3] = (double)st->handoff_blocks;
    info[4] = (double)st->handoff_attempts;
    info[5] = (double)st->guard_blocks;
    info[6] = (double)st->calls_completed;
    info[7] = (double)st->moves_in;
    info[8] = (double)st->reports_received;
    info[9] = (double)seer_entity_events(ctx, agent);
    info[10] = (double)busy_of(c, st);
}

static void pcs_global_state(seer_ctx *ctx, float *out)
{
    const seer_pcs_config *c = seer_config(ctx);
    const seer_sizes *sz = seer_model_sizes(ctx);
    const double C = (double)c->channels, P = (double)c->portables_per_cell;
    for (uint32_t e = 0; e < sz->num_entities; e++) {
        const seer_pcs_cell *st = seer_entity_state(ctx, e);
        float *o = out + (size_t)e * PCS_STATE_PER_CELL;
        o[0] = (float)((double)busy_of(c, st) / C);
        o[1] = (float)((double)st->guard / C);
        o[2] = (float)((double)st->step_attempts / P);
        o[3] = (float)((double)st->step_blocks / P);
        o[4] = (float)((double)st->step_handoffs / P);
        o[5] = (float)((double)st->step_drops / P);
    }
    double ph = PCS_TWO_PI * seer_now(ctx) / PCS_DAY_MINUTES;
    out[(size_t)sz->num_entities * PCS_STATE_PER_CELL] = (float)sin(ph);
    out[(size_t)sz->num_entities * PCS_STATE_PER_CELL + 1] = (float)cos(ph);
}

static const char *const pcs_info_names[PCS_INFO_DIM] = {
    "call_attempts", "channel_blocks",  "busy_lines", "handoff_blocks",
    "handoff_attempts", "guard_blocks", "calls_completed", "moves_in",
    "reports_received", "events", "busy_channels",
};
static const char *const pcs_event_names[PCS_EV_COUNT] = {
    "NEXTCALL", "COMPLETIONCALL", "MOVECALLOUT", "MOVECALLIN", "REPORT_TICK", "LOAD_REPORT",
};

const seer_model seer_model_pcs = {
    .api_version = SEER_API_VERSION,
    .name = "pcs",
    .config_size = sizeof(seer_pcs_config),
    .params = pcs_params,
    .num_params = SEER_COUNT(pcs_params),
    .describe = pcs_describe,
    .init = pcs_init,
    .act = pcs_act,
    .handle = pcs_handle,
    .boundary = pcs_boundary,
    .observe = pcs_observe,
    .publish = NULL,
    .global_state = pcs_global_state,
    .info_names = pcs_info_names,
    .event_names = pcs_event_names,
    .event_type_count = PCS_EV_COUNT,
    .agent_name = pcs_agent_name,
    .obs_bounds = pcs_obs_bounds,
    .state_bounds = pcs_state_bounds,
    .state_fields = pcs_state_fields,
    .num_state_fields = SEER_COUNT(pcs_state_fields),
    .max_cycles = 500, /* x 20 minutes: t = 10000, the classic run length */
};
