/*
 * traffic: traffic-signal control on a grid of intersections (a seer model).
 *
 * A width x height grid of signalised intersections, one agent each.  Every
 * intersection has four incoming approaches, named by the side a car comes
 * from (N, E, S, W), each a FIFO queue of at most queue_capacity cars.
 *
 *   - Cars enter the network at the approaches on the grid's edge: one
 *     Poisson stream per edge approach (mean gap arrival_mean), a chain of
 *     self-scheduled ARRIVAL events.  An arrival at a full queue is rejected.
 *   - The signal has two phases: north-south green (approaches N and S) or
 *     east-west green (E and W).  The agent picks one at every step start; a
 *     change costs switch_time seconds of all-red.
 *   - While an approach is green and holds cars, its first car leaves every
 *     headway seconds: one DISCHARGE event per intersection serves both green
 *     approaches and schedules the next one (at most one is pending).  The
 *     car goes straight, turns left or right (its turn is drawn when it joins
 *     the queue), and reaches the next intersection's approach after
 *     travel_time + Exp(travel_jitter) seconds (a CAR event); travel_time is
 *     the lookahead.  A car that leaves the grid has completed its trip.
 *   - Spillback: a link (the road into a neighbour's approach) holds at most
 *     queue_capacity cars, queued or still driving.  The sender knows the
 *     neighbour's queue and arrival count as published at the last step
 *     boundary (seer_snapshot) and how many cars it has sent since, so it
 *     keeps a car (blocked; it tries again one headway later) when the link
 *     may be full.  Queues therefore never exceed queue_capacity.
 *   - Gridlock: an intersection holding more than `gridlock` cars at a step
 *     boundary is terminated (with a one-off penalty).  Its entity keeps
 *     running -- under fixed-time control, switching phase every fixed_cycle
 *     seconds (FIXED_SWITCH events) -- so the rest of the network goes on.
 *
 * The event-locality contract (`seer-env check` tests it): a handler writes
 * only its own intersection, reads others only through their published
 * records, sends cars at >= now + travel_time, and draws from its own stream.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "seer.h"

/* Room for the cars of one approach (queue_capacity <= QMAX; a power of 2). */
#define QMAX 64u

/* Sides, approaches and exits: 0 N, 1 E, 2 S, 3 W.  A car on approach a
 * came from side a; straight on it leaves through side (a + 2) % 4, a left
 * turn through (a + 1) % 4, a right turn through (a + 3) % 4. */
enum { SIDE_N = 0, SIDE_E = 1, SIDE_S = 2, SIDE_W = 3 };
enum { TURN_STRAIGHT = 0, TURN_LEFT = 1, TURN_RIGHT = 2 };
static const uint32_t turn_offset[3] = {2, 1, 3};

/* Phase p is green for the approaches a with a % 2 == p. */
enum { PHASE_NS = 0, PHASE_EW = 1 };

enum { ARRIVAL = 0, CAR = 1, DISCHARGE = 2, FIXED_SWITCH = 3, NUM_EVENT_TYPES = 4 };

/* Observation: 4 own queues, phase one-hot (2), time since the last switch,
 * 4 upstream and 4 downstream neighbour queues. */
enum { OBS_QUEUE = 0, OBS_PHASE = 4, OBS_SINCE = 6, OBS_UP = 7, OBS_DOWN = 11, OBS_DIM = 15 };
/* Info values (traffic_info_names). */
enum { NUM_INFOS = 9 };
/* Global state: per intersection 4 queues and the phase. */
enum { STATE_PER_NODE = 5 };

#define NO_NEIGHBOUR UINT32_MAX

/* ---- configuration -------------------------------------------------------- */
typedef struct traffic_config {
    uint32_t width;          /* intersections per row                          */
    uint32_t height;         /* rows                                           */
    uint32_t queue_capacity; /* cars per approach (and per link)               */
    uint32_t gridlock;       /* more queued cars at a boundary: terminated     */
    double arrival_mean;     /* mean seconds between cars per edge approach    */
    double headway;          /* seconds between departures of a green approach */
    double switch_time;      /* all-red seconds after a phase change           */
    double travel_time;      /* L: minimum seconds to the next intersection    */
    double travel_jitter;    /* mean of the exponential extra travel time      */
    double p_left;           /* probability that a car turns left              */
    double p_right;          /* probability that a car turns right             */
    double gridlock_penalty; /* subtracted once from a gridlocked agent's reward */
    double fixed_cycle;      /* seconds between switches under fixed-time control */
    double step_duration;    /* D: simulated seconds per step                  */
} traffic_config;

#define P(m) SEER_MEMBER(traffic_config, m)
static const seer_param traffic_params[] = {
    {P(width), .def = 3, .lo = 1, .hi = 256, .doc = "intersections per row"},
    {P(height), .def = 3, .lo = 1, .hi = 256, .doc = "rows of intersections"},
    {P(queue_capacity), .def = 20, .lo = 1, .hi = QMAX,
     .doc = "cars an approach (and the link into it) holds"},
    {P(gridlock), .def = 60, .lo = 0, .hi = 4 * QMAX,
     .doc = "an intersection with more queued cars at a boundary is terminated "
            "(< 4 * queue_capacity)"},
    {P(arrival_mean), .def = 6.0, .lo = 0, .hi = 1e9, .flags = SEER_P_GT,
     .doc = "mean seconds between cars entering at each edge approach (Poisson)"},
    {P(headway), .def = 2.0, .lo = 0, .hi = 1e6, .flags = SEER_P_GT,
     .doc = "seconds between departures from a green approach"},
    {P(switch_time), .def = 2.0, .lo = 0, .hi = 1e6,
     .doc = "seconds of all-red after a phase change (< step_duration)"},
    {P(travel_time), .def = 10.0, .lo = 0, .hi = 1e6, .flags = SEER_P_GT,
     .doc = "minimum seconds from one intersection to the next (the lookahead)"},
    {P(travel_jitter), .def = 2.0, .lo = 0, .hi = 1e6,
     .doc = "mean of the exponential extra travel time in seconds"},
    {P(p_left), .def = 0.2, .lo = 0, .hi = 1, .doc = "probability that a car turns left"},
    {P(p_right), .def = 0.2, .lo = 0, .hi = 1,
     .doc = "probability that a car turns right (p_left + p_right <= 1; the rest go straight)"},
    {P(gridlock_penalty), .def = 100.0, .lo = 0, .hi = 1e9,
     .doc = "reward subtracted once when an intersection gridlocks"},
    {P(fixed_cycle), .def = 30.0, .lo = 0, .hi = 1e6, .flags = SEER_P_GT,
     .doc = "seconds between phase switches of a gridlocked (fixed-time) intersection"},
    {P(step_duration), .def = 10.0, .lo = 0, .hi = 1e6, .flags = SEER_P_GT,
     .doc = "D: simulated seconds per step"},
};
#undef P

/* ---- entity state: one intersection ---------------------------------------
 * Doubles first, then 8-byte counters, then 4-byte ones, then bytes: no
 * padding.  The queues are rings: the cars of approach a are at
 * (head[a] + i) % QMAX, i < queue[a]. */
typedef struct traffic_node {
    double car_entry[4][QMAX]; /* time each queued car entered the network     */
    double trip_time;          /* summed trip times of the cars that left here */
    double green_from;         /* the green phase discharges from this time    */
    double last_switch;        /* time of the last phase change                */
    double next_free;          /* earliest next discharge (one per headway)    */
    double queue_area;         /* integral of the queued cars since step start */
    double area_since;         /* time queue_area runs up to                   */
    uint64_t arrived[4];       /* cars that joined each approach since reset   */
    uint64_t sent[4];          /* cars that left through each side since reset */
    uint64_t entered;          /* cars that entered the network here           */
    uint64_t rejected;         /* arrivals turned away by a full edge approach */
    uint64_t departed;         /* cars discharged                              */
    uint64_t completed;        /* cars that left the grid here                 */
    uint64_t blocked;          /* discharges held back by a full link          */
    uint64_t trip_hops;        /* summed intersections of those trips          */
    uint32_t car_hops[4][QMAX];/* intersections each queued car has passed     */
    uint32_t queue[4];         /* cars queued per approach                     */
    uint32_t head[4];          /* ring index of each approach's first car      */
    uint32_t phase;            /* PHASE_NS or PHASE_EW                         */
    uint32_t switches;         /* phase changes since reset                    */
    uint32_t discharge_pending;/* a DISCHARGE event is scheduled               */
    uint32_t pad;              /* (no implicit padding in the layout)          */
    uint8_t car_turn[4][QMAX]; /* each queued car's turn (TURN_*)              */
} traffic_node;

static const seer_field traffic_fields[] = {
    {SEER_MEMBER_2D(traffic_node, car_entry)},
    {SEER_MEMBER(traffic_node, trip_time)},
    {SEER_MEMBER(traffic_node, green_from)},
    {SEER_MEMBER(traffic_node, last_switch)},
    {SEER_MEMBER(traffic_node, next_free)},
    {SEER_MEMBER(traffic_node, queue_area)},
    {SEER_MEMBER(traffic_node, area_since)},
    {SEER_MEMBER(traffic_node, arrived)},
    {SEER_MEMBER(traffic_node, sent)},
    {SEER_MEMBER(traffic_node, entered)},
    {SEER_MEMBER(traffic_node, rejected)},
    {SEER_MEMBER(traffic_node, departed)},
    {SEER_MEMBER(traffic_node, completed)},
    {SEER_MEMBER(traffic_node, blocked)},
    {SEER_MEMBER(traffic_node, trip_hops)},
    {SEER_MEMBER_2D(traffic_node, car_hops)},
    {SEER_MEMBER(traffic_node, queue)},
    {SEER_MEMBER(traffic_node, head)},
    {SEER_MEMBER(traffic_node, phase)},
    {SEER_MEMBER(traffic_node, switches)},
    {SEER_MEMBER(traffic_node, discharge_pending)},
    {SEER_MEMBER_2D(traffic_node, car_turn)},
};

/* The event payload: one car.  ARRIVAL events carry only `approach`. */
typedef struct traffic_car {
    double entry;      /* time the car entered the network          */
    uint32_t hops;     /* intersections it passed before this one   */
    uint32_t approach; /* the approach it joins at the target        */
} traffic_car;

/* Published at every boundary: what the upstream neighbours need to know
 * how full the links into this intersection are. */
typedef struct traffic_record {
    uint64_t arrived[4]; /* cars that joined each approach since reset */
    uint32_t queue[4];   /* cars queued per approach                   */
} traffic_record;

/* Instance data (written by the boundary hook): one byte per intersection,
 * non-zero once it has gridlocked; it is then under fixed-time control. */
typedef uint8_t traffic_gridlocked;

/* ---- helpers ---------------------------------------------------------------- */
static uint32_t total_queue(const traffic_node *st)
{
    return st->queue[0] + st->queue[1] + st->queue[2] + st->queue[3];
}

/* The intersection beyond side `side` of intersection e, or NO_NEIGHBOUR. */
static uint32_t neighbour(const traffic_config *c, uint32_t e, uint32_t side)
{
    const uint32_t row = e / c->width, col = e % c->width;
    switch (side) {
    case SIDE_N: return row > 0 ? e - c->width : NO_NEIGHBOUR;
    case SIDE_E: return col + 1 < c->width ? e + 1 : NO_NEIGHBOUR;
    case SIDE_S: return row + 1 < c->height ? e + c->width : NO_NEIGHBOUR;
    default: return col > 0 ? e - 1 : NO_NEIGHBOUR;
    }
}

static bool is_green(const traffic_node *st, uint32_t approach)
{
    return approach % 2u == st->phase;
}

/* Add the queued cars' time up to `now` to the step's queue integral (call
 * before every change of a queue). */
static void account(traffic_node *st, seer_time now)
{
    st->queue_area += (double)total_queue(st) * (now - st->area_since);
    st->area_since = now;
}

/* Make sure a DISCHARGE event is pending when a green approach holds cars:
 * at the earliest time the signal (all-red) and the headway allow. */
static int ensure_discharge(seer_ctx *ctx, traffic_node *st)
{
    if (st->discharge_pending)
        return SEER_OK;
    if (st->queue[st->phase] == 0 && st->queue[st->phase + 2u] == 0)
        return SEER_OK;
    seer_time t = seer_now(ctx);
    if (st->green_from > t)
        t = st->green_from;
    if (st->next_free > t)
        t = st->next_free;
    st->discharge_pending = 1;
    return seer_schedule(ctx, seer_self(ctx), t, DISCHARGE, NULL, 0);
}

static int set_phase(seer_ctx *ctx, const traffic_config *c, traffic_node *st, uint32_t phase)
{
    if (phase == st->phase)
        return SEER_OK;
    const seer_time now = seer_now(ctx);
    st->phase = phase;
    st->green_from = now + c->switch_time;
    st->last_switch = now;
    st->switches++;
    return ensure_discharge(ctx, st);
}

/* A car joins approach a (its turn drawn from this intersection's stream). */
static int join(seer_ctx *ctx, const traffic_config *c, traffic_node *st, uint32_t a,
                double entry, uint32_t hops)
{
    const double u = seer_rng_uniform(ctx);
    const uint8_t turn = u < c->p_left ? TURN_LEFT
                         : u < c->p_left + c->p_right ? TURN_RIGHT
                                                      : TURN_STRAIGHT;
    account(st, seer_now(ctx));
    const uint32_t slot = (st->head[a] + st->queue[a]) % QMAX;
    st->car_entry[a][slot] = entry;
    st->car_hops[a][slot] = hops;
    st->car_turn[a][slot] = turn;
    st->queue[a]++;
    st->arrived[a]++;
    return is_green(st, a) ? ensure_discharge(ctx, st) : SEER_OK;
}

/* The first car of green approach a leaves, unless the link it takes may be
 * full (then it waits: blocked). */
static int depart(seer_ctx *ctx, const traffic_config *c, traffic_node *st, uint32_t a)
{
    const seer_time now = seer_now(ctx);
    const uint32_t slot = st->head[a];
    const uint32_t side = (a + turn_offset[st->car_turn[a][slot]]) % 4u;
    const uint32_t to = neighbour(c, seer_self(ctx), side);
    if (to != NO_NEIGHBOUR) {
        /* cars on the link: queued at the last boundary, plus every car sent
         * since that the neighbour had not received by then (the only
         * source of that approach is this intersection) */
        const uint32_t b = (side + 2u) % 4u;
        const traffic_record *r = seer_snapshot(ctx, to);
        if ((uint64_t)r->queue[b] + (st->sent[side] - r->arrived[b]) >= c->queue_capacity) {
            st->blocked++;
            return SEER_OK;
        }
        const traffic_car car = {.entry = st->car_entry[a][slot],
                                 .hops = st->car_hops[a][slot] + 1u, .approach = b};
        const seer_time t = now + c->travel_time + seer_rng_exponential(ctx, c->travel_jitter);
        const int rc = seer_schedule(ctx, to, t, CAR, &car, sizeof car);
        if (rc)
            return rc;
    } else {
        st->completed++;
        st->trip_time += now - st->car_entry[a][slot];
        st->trip_hops += st->car_hops[a][slot] + 1u;
    }
    account(st, now);
    st->head[a] = (slot + 1u) % QMAX;
    st->queue[a]--;
    st->sent[side]++;
    st->departed++;
    return SEER_OK;
}

/* ---- describe: cross-parameter rules, sizes --------------------------------- */
static int traffic_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const traffic_config *c = config;
    if (c->p_left + c->p_right > 1.0) {
        snprintf(err, errlen, "traffic: p_left + p_right = %g must be <= 1",
                 c->p_left + c->p_right);
        return SEER_E_CONFIG;
    }
    if (c->gridlock >= 4u * c->queue_capacity) {
        snprintf(err, errlen,
                 "traffic: gridlock = %u must be < 4 * queue_capacity = %u (an intersection "
                 "holds at most that many cars)",
                 c->gridlock, 4u * c->queue_capacity);
        return SEER_E_CONFIG;
    }
    if (c->switch_time >= c->step_duration) {
        snprintf(err, errlen, "traffic: switch_time = %g must be < step_duration = %g",
                 c->switch_time, c->step_duration);
        return SEER_E_CONFIG;
    }
    const uint32_t n = c->width * c->height; /* <= 65536 by the ranges */
    out->num_entities = n; /* every intersection is an agent */
    out->num_agents = n;
    out->obs_dim = OBS_DIM;
    out->action_kind = SEER_ACTION_DISCRETE;
    out->action_dim = 1;
    out->action_n = 2;
    out->info_dim = NUM_INFOS;
    out->state_dim = STATE_PER_NODE * n;
    out->entity_size = sizeof(traffic_node);
    out->payload_size = sizeof(traffic_car);
    out->snapshot_size = sizeof(traffic_record);
    out->instance_size = n * (uint32_t)sizeof(traffic_gridlocked);
    out->lookahead = c->travel_time;
    out->step_duration = c->step_duration;
    /* memory estimate: an ARRIVAL per edge approach, a FIXED_SWITCH and a
     * DISCHARGE per intersection, and the cars driving on the links between
     * intersections (about one per headway for a travel time each) */
    const uint64_t links = 2u * ((uint64_t)c->width * (c->height - 1u) +
                                 (uint64_t)c->height * (c->width - 1u));
    const double driving = fmin((double)c->queue_capacity,
                                ceil((c->travel_time + c->travel_jitter) / c->headway));
    out->pending_events = 2u * ((uint64_t)c->width + c->height) + 2u * (uint64_t)n +
                          (uint64_t)((double)links * driving);
    return SEER_OK;
}

/* ---- init: at reset, NS green; start the arrival streams and the timer ----- */
static int traffic_init(seer_ctx *ctx, void *entity)
{
    const traffic_config *c = seer_config(ctx);
    (void)entity; /* zeroed: empty queues, phase NS green since t = 0 */
    const uint32_t self = seer_self(ctx);
    for (uint32_t a = 0; a < 4; a++) {
        if (neighbour(c, self, a) != NO_NEIGHBOUR)
            continue; /* fed by a neighbour, not from outside */
        const traffic_car next = {.entry = 0.0, .hops = 0, .approach = a};
        const int rc = seer_schedule(ctx, self, seer_rng_exponential(ctx, c->arrival_mean),
                                     ARRIVAL, &next, sizeof next);
        if (rc)
            return rc;
    }
    return seer_schedule(ctx, self, c->fixed_cycle, FIXED_SWITCH, NULL, 0);
}

/* ---- act: a live agent's phase for the step ----------------------------------- */
static int traffic_act(seer_ctx *ctx, void *entity, const void *action)
{
    traffic_node *st = entity;
    st->queue_area = 0.0; /* the step's queue integral starts now */
    st->area_since = seer_now(ctx);
    return set_phase(ctx, seer_config(ctx), st, (uint32_t)*(const int32_t *)action);
}

/* ---- handle: one event -------------------------------------------------------- */
static int traffic_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                          uint32_t size)
{
    (void)size;
    const traffic_config *c = seer_config(ctx);
    traffic_node *st = entity;
    const seer_time now = seer_now(ctx);
    switch (type) {
    case ARRIVAL: {
        /* the next car of this edge approach, then this one */
        const traffic_car *in = payload;
        const uint32_t a = in->approach;
        const traffic_car next = {.entry = 0.0, .hops = 0, .approach = a};
        const seer_time t = now + seer_rng_exponential(ctx, c->arrival_mean);
        const int rc = seer_schedule(ctx, seer_self(ctx), t, ARRIVAL, &next, sizeof next);
        if (rc)
            return rc;
        if (st->queue[a] >= c->queue_capacity) {
            st->rejected++;
            return SEER_OK;
        }
        st->entered++;
        return join(ctx, c, st, a, now, 0);
    }
    case CAR: {
        const traffic_car *car = payload;
        if (st->queue[car->approach] >= c->queue_capacity)
            return SEER_E_MODEL; /* cannot happen: the sender reserved room */
        return join(ctx, c, st, car->approach, car->entry, car->hops);
    }
    case DISCHARGE: {
        st->discharge_pending = 0;
        if (now >= st->green_from) { /* not all-red: serve both green approaches */
            for (uint32_t a = st->phase; a < 4; a += 2) {
                if (st->queue[a]) {
                    const int rc = depart(ctx, c, st, a);
                    if (rc)
                        return rc;
                }
            }
            st->next_free = now + c->headway;
        }
        return ensure_discharge(ctx, st);
    }
    case FIXED_SWITCH: {
        /* the fixed-time controller's clock runs all episode; it switches
         * the signal only once the intersection has gridlocked */
        const int rc = seer_schedule(ctx, seer_self(ctx), now + c->fixed_cycle, FIXED_SWITCH,
                                     NULL, 0);
        if (rc)
            return rc;
        const traffic_gridlocked *gridlocked = seer_instance_data(ctx);
        if (gridlocked[seer_self(ctx)])
            return set_phase(ctx, c, st, 1u - st->phase);
        return SEER_OK;
    }
    default:
        return SEER_E_MODEL;
    }
}

/* ---- boundary: mark the intersections that gridlock now (for good) ------------ */
static void traffic_boundary(seer_ctx *ctx, void *instance_data)
{
    const traffic_config *c = seer_config(ctx);
    const uint32_t n = seer_model_sizes(ctx)->num_entities;
    traffic_gridlocked *gridlocked = instance_data; /* zeroed at reset */
    for (uint32_t e = 0; e < n; e++) {
        const traffic_node *st = seer_entity_state(ctx, e);
        if (total_queue(st) > c->gridlock)
            gridlocked[e] = 1;
    }
}

/* ---- observe: each live agent's outputs at the boundary -------------------------- */
static void traffic_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const traffic_config *c = seer_config(ctx);
    const traffic_node *st = seer_entity_state(ctx, agent);
    const traffic_gridlocked *gridlocked = seer_instance_data(ctx);
    const seer_time now = seer_now(ctx);
    const double cap = (double)c->queue_capacity;
    uint64_t in_transit = 0;
    for (uint32_t s = 0; s < 4; s++) {
        out->obs[OBS_QUEUE + s] = (float)(st->queue[s] / cap);
        const uint32_t nb = neighbour(c, agent, s);
        if (nb == NO_NEIGHBOUR)
            continue; /* edge: 0 */
        const traffic_node *o = seer_entity_state(ctx, nb);
        out->obs[OBS_UP + s] = (float)(o->queue[s] / cap);               /* coming my way */
        out->obs[OBS_DOWN + s] = (float)(o->queue[(s + 2) % 4] / cap);   /* where mine go */
        in_transit += st->sent[s] - o->arrived[(s + 2) % 4];
    }
    out->obs[OBS_PHASE + 0] = st->phase == PHASE_NS ? 1.0f : 0.0f;
    out->obs[OBS_PHASE + 1] = st->phase == PHASE_EW ? 1.0f : 0.0f;
    out->obs[OBS_SINCE] = (float)fmin(1.0, (now - st->last_switch) / (6.0 * c->step_duration));

    /* mean number of queued cars over the step (act started the integral) */
    const double area = st->queue_area + (double)total_queue(st) * (now - st->area_since);
    *out->reward = (float)(-(area / c->step_duration) / (4.0 * cap));
    if (gridlocked[agent]) { /* observe runs for live agents only: once */
        *out->terminated = 1;
        *out->reward -= (float)c->gridlock_penalty;
    }
    out->info[0] = (double)total_queue(st);
    out->info[1] = (double)st->entered;
    out->info[2] = (double)st->rejected;
    out->info[3] = (double)st->departed;
    out->info[4] = (double)st->completed;
    out->info[5] = (double)in_transit;
    out->info[6] = (double)st->blocked;
    out->info[7] = st->trip_time;
    out->info[8] = (double)st->trip_hops;
}

/* ---- publish: queues and arrival counts for the upstream neighbours ------------- */
static void traffic_publish(seer_ctx *ctx, const void *entity, void *record)
{
    (void)ctx;
    const traffic_node *st = entity;
    traffic_record *r = record;
    for (uint32_t a = 0; a < 4; a++) {
        r->arrived[a] = st->arrived[a];
        r->queue[a] = st->queue[a];
    }
}

/* ---- global_state: every intersection's queues and phase --------------------------- */
static void traffic_global_state(seer_ctx *ctx, float *out)
{
    const traffic_config *c = seer_config(ctx);
    const uint32_t n = seer_model_sizes(ctx)->num_entities;
    for (uint32_t e = 0; e < n; e++) {
        const traffic_node *st = seer_entity_state(ctx, e);
        for (uint32_t a = 0; a < 4; a++)
            out[STATE_PER_NODE * e + a] = (float)((double)st->queue[a] / c->queue_capacity);
        out[STATE_PER_NODE * e + 4] = (float)st->phase;
    }
}

/* ---- names and bounds -------------------------------------------------------------- */
static int traffic_agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    /* "int_<row * width + col>": one name prefix for every intersection, so
     * clients that group agents by the name before the last "_<int>" (TorchRL,
     * BenchMARL, AgileRL) make one group of them */
    (void)config;
    snprintf(buf, len, "int_%u", agent);
    return 0;
}

static void traffic_obs_bounds(const void *config, float *low, float *high)
{
    (void)config;
    for (int i = 0; i < OBS_DIM; i++) { /* every element is a share in [0, 1] */
        low[i] = 0.0f;
        high[i] = 1.0f;
    }
}

static void traffic_state_bounds(const void *config, float *low, float *high)
{
    const traffic_config *c = config;
    const uint32_t n = STATE_PER_NODE * c->width * c->height;
    for (uint32_t i = 0; i < n; i++) {
        low[i] = 0.0f;
        high[i] = 1.0f;
    }
}

static const char *const traffic_info_names[] = {
    "queued", "entered", "rejected", "departed", "completed", "in_transit", "blocked",
    "trip_time", "trip_hops"};
static const char *const traffic_event_names[] = {"ARRIVAL", "CAR", "DISCHARGE",
                                                  "FIXED_SWITCH"};

/* ---- the model table ------------------------------------------------------------------ */
const seer_model traffic_model = {
    .api_version = SEER_API_VERSION,
    .name = "traffic",
    .config_size = sizeof(traffic_config),
    .params = traffic_params,
    .num_params = SEER_COUNT(traffic_params),
    .describe = traffic_describe,
    .init = traffic_init,
    .act = traffic_act,
    .handle = traffic_handle,
    .boundary = traffic_boundary,
    .observe = traffic_observe,
    .publish = traffic_publish,
    .global_state = traffic_global_state,
    .info_names = traffic_info_names,
    .event_names = traffic_event_names,
    .event_type_count = NUM_EVENT_TYPES,
    .agent_name = traffic_agent_name,
    .obs_bounds = traffic_obs_bounds,
    .state_bounds = traffic_state_bounds,
    .state_fields = traffic_fields,
    .num_state_fields = SEER_COUNT(traffic_fields),
    .max_cycles = 360,
};
