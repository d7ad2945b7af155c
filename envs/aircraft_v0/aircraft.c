/*
 * Aircraft on seer: N UAVs (point masses with drag, wind and gusts, RK4 in K
 * substep events per step), broadcasting their state to neighbours as
 * cross-entity messages, sensing with rays at the boundary and surveying M
 * static ground targets.  README.md (beside this file) is the specification; the
 * section names below follow it.
 *
 * Locality: a substep or message handler writes only its own UAV and reads
 * its own state, the config, the published snapshot (uav_record) and the
 * instance data written by the boundary hook (spatial hash of the UAVs, ray
 * directions, target grid and per-target coverage counts).  No handler
 * allocates; every neighbour search goes through the spatial hash or the
 * target grid (nothing scans all pairs).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aircraft.h"

enum { EV_SUBSTEP = 0, EV_MESSAGE = 1 };

enum { CRASH_NONE = 0, CRASH_GROUND = 1, CRASH_ARENA = 2, CRASH_BATTERY = 3 };

#define OWN_DIM 7u
#define NBR_DIM 8u
#define TGT_DIM 4u
#define INFO_DIM 8u
#define STATE_PER_UAV 8u
#define STATE_PER_TARGET 3u
#define CELL_MARGIN 1.0001       /* hash cells are this much larger than needed */
#define TGRID_MAX 512u           /* target grid at most TGRID_MAX^2 cells        */

static const double k_two_pi = 6.283185307179586476925286766559;
/* Golden angle pi * (3 - sqrt(5)), for the Fibonacci ray directions. */
static const double k_golden = 2.3999632297286533222315555066336;

typedef struct substep_payload {
    uint32_t j; /* substep index within the step */
    uint32_t pad_;
} substep_payload;

/* 32 bytes, so a message event is 80 bytes: the send time travels as the
 * global substep index (substep_time() turns it back into the exact time). */
typedef struct msg_payload {
    uint64_t tag; /* (global substep index kK + j) << 24 | sender (N <= 2^20) */
    float pos[3]; /* sender position and velocity (float32 on the wire)       */
    float vel[3];
} msg_payload;

#define TAG_SENDER_BITS 24

/* Published per-UAV record (frozen at the last boundary). */
typedef struct uav_record {
    double pos[3];
    double vel[3];
    uint32_t live;    /* 1: may act and receive in the next step */
    uint32_t crashed;
} uav_record;

/* One UAV in the spatial hash. */
typedef struct hash_item {
    double p[3];
    uint64_t key; /* packed cell coordinates (buckets may mix cells) */
    uint32_t e;
    uint32_t pad_;
} hash_item;

typedef struct target_item {
    double x, y;
    uint32_t id;
    uint32_t pad_;
} target_item;

/* Byte offsets of the instance-data arrays (a pure function of the config). */
typedef struct layout {
    uint32_t nbuckets; /* power of two >= 2N                         */
    uint32_t tgx, tgy; /* target grid                                 */
    uint32_t pad_;
    double cell;       /* UAV hash cell edge                          */
    double tcell;      /* target grid cell edge                       */
    size_t off_bstart, off_cursor, off_items, off_rays, off_targets, off_tstart,
        off_tcursor, off_tcount, total;
} layout;

/* Instance data header; the arrays follow at the layout's offsets. */
typedef struct idata_header {
    layout lay;
    uint32_t initialized;    /* targets and rays built                       */
    uint32_t reset_boundary; /* the current boundary is a reset's             */
    uint32_t covered;        /* targets with at least one coverer            */
    uint32_t pad_;
    double inv_cell, inv_tcell;
    int64_t gx, gy, gz;      /* largest cell coordinate per axis (>= -1 min)  */
    int64_t omin[3], omax[3]; /* occupied cell range of the hash (empty: min > max) */
} idata_header;

/* ---- small helpers ------------------------------------------------------- */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t splitmix64_next(uint64_t *x)
{
    return mix64(*x += 0x9E3779B97F4A7C15ull);
}

static inline double u01_of(uint64_t z) { return ((double)(z >> 11) + 0.5) * 0x1.0p-53; }

static size_t align16(size_t x) { return (x + 15u) & ~(size_t)15u; }

static inline double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* Time of global substep s = kK + j: kD for j = 0 (the act time), s * dt else. */
static inline double substep_time(const seer_aircraft_config *c, uint64_t s)
{
    const uint64_t K = c->substeps;
    if (s % K == 0)
        return (double)(s / K) * c->step_duration;
    return (double)s * (c->step_duration / (double)K);
}

static inline double sq3(const double a[3], const double b[3])
{
    const double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

static inline const idata_header *hdr_of(const void *idata) { return idata; }

#define ARR(idata, T, off) ((T *)(void *)((unsigned char *)(idata) + (off)))
#define CARR(idata, T, off) ((const T *)(const void *)((const unsigned char *)(idata) + (off)))

static void make_layout(const seer_aircraft_config *c, layout *l)
{
    memset(l, 0, sizeof *l);
    uint32_t p = 16;
    while (p < 2u * c->num_uavs)
        p <<= 1;
    l->nbuckets = p;
    double reach = c->comm_radius;
    if (c->collision_radius > reach)
        reach = c->collision_radius;
    if (c->num_rays && c->ray_range + 0.5 * c->collision_radius > reach)
        reach = c->ray_range + 0.5 * c->collision_radius;
    l->cell = reach * CELL_MARGIN;
    const double mt = c->num_targets ? (double)c->num_targets : 1.0;
    double tc = c->sensor_radius;
    const double area = sqrt(c->arena_x * c->arena_y / mt);
    if (area > tc)
        tc = area;
    if (c->arena_x / TGRID_MAX > tc)
        tc = c->arena_x / TGRID_MAX;
    if (c->arena_y / TGRID_MAX > tc)
        tc = c->arena_y / TGRID_MAX;
    l->tcell = tc;
    l->tgx = (uint32_t)floor(c->arena_x / tc) + 1u;
    l->tgy = (uint32_t)floor(c->arena_y / tc) + 1u;
    size_t off = align16(sizeof(idata_header));
    const size_t N = c->num_uavs, M = c->num_targets, TG = (size_t)l->tgx * l->tgy;
    l->off_bstart = off;
    off = align16(off + ((size_t)p + 1u) * sizeof(uint32_t));
    l->off_cursor = off;
    off = align16(off + (size_t)p * sizeof(uint32_t));
    l->off_items = off;
    off = align16(off + N * sizeof(hash_item));
    l->off_rays = off;
    off = align16(off + (size_t)c->num_rays * 3u * sizeof(double));
    l->off_targets = off;
    off = align16(off + M * sizeof(target_item));
    l->off_tstart = off;
    off = align16(off + (TG + 1u) * sizeof(uint32_t));
    l->off_tcursor = off;
    off = align16(off + TG * sizeof(uint32_t));
    l->off_tcount = off;
    off = align16(off + M * sizeof(uint32_t));
    l->total = off;
}

/* Cell coordinate of x along an axis with largest index g (clamped to [-1, g]). */
static inline int64_t cell_coord(double x, double inv, int64_t g)
{
    const double f = floor(x * inv);
    if (f < -1.0)
        return -1;
    if (f > (double)g)
        return g;
    return (int64_t)f;
}

static inline uint64_t cell_key(const idata_header *h, int64_t cx, int64_t cy, int64_t cz)
{
    return ((uint64_t)(cx + 1) * (uint64_t)(h->gy + 2) + (uint64_t)(cy + 1)) *
               (uint64_t)(h->gz + 2) +
           (uint64_t)(cz + 1);
}

static inline uint32_t bucket_of(const idata_header *h, uint64_t key)
{
    return (uint32_t)(mix64(key) & (uint64_t)(h->lay.nbuckets - 1u));
}

/* The cells a query must visit: the 3 x 3 x 3 block around p's cell, cut to
 * the occupied cell range and to cells whose box lies within r of p.  `g2`
 * holds, per axis and offset (-1, 0, +1), the squared gap from p to that
 * neighbour cell's slab (0 for p's own; never negative, so never too large). */
typedef struct hash_query {
    int64_t c[3];
    int64_t lo[3], hi[3];
    double g2[3][3];
    double r2;
} hash_query;

static inline void hash_query_init(const idata_header *h, const double p[3], double r,
                                   hash_query *q)
{
    const int64_t g[3] = {h->gx, h->gy, h->gz};
    const double cell = h->lay.cell;
    for (int a = 0; a < 3; a++) {
        const int64_t c = cell_coord(p[a], h->inv_cell, g[a]);
        q->c[a] = c;
        q->lo[a] = c - 1 > h->omin[a] ? c - 1 : h->omin[a];
        q->hi[a] = c + 1 < h->omax[a] ? c + 1 : h->omax[a];
        const double glo = p[a] - (double)c * cell;       /* to the slab below */
        const double ghi = (double)(c + 1) * cell - p[a]; /* to the slab above */
        q->g2[a][0] = glo > 0.0 ? glo * glo : 0.0;
        q->g2[a][1] = 0.0;
        q->g2[a][2] = ghi > 0.0 ? ghi * ghi : 0.0;
    }
    /* Prune only cells clearly out of reach (exact distance tests follow). */
    q->r2 = (r * CELL_MARGIN) * (r * CELL_MARGIN);
}

/* Visit every hashed UAV in the cells of a query around p within radius r
 * (r <= the cell edge): `body` sees `it`. */
#define FOR_HASH_NEAR(h, idata, p, r, it, ...)                                          \
    do {                                                                                 \
        const uint32_t *bs_ = CARR(idata, uint32_t, (h)->lay.off_bstart);                \
        const hash_item *items_ = CARR(idata, hash_item, (h)->lay.off_items);            \
        hash_query hq_;                                                                  \
        hash_query_init((h), (p), (r), &hq_);                                            \
        for (int64_t ix_ = hq_.lo[0]; ix_ <= hq_.hi[0]; ix_++) {                         \
            const double gx_ = hq_.g2[0][ix_ - hq_.c[0] + 1];                            \
            for (int64_t iy_ = hq_.lo[1]; iy_ <= hq_.hi[1]; iy_++) {                     \
                const double gxy_ = gx_ + hq_.g2[1][iy_ - hq_.c[1] + 1];                 \
                if (gxy_ > hq_.r2)                                                       \
                    continue;                                                            \
                for (int64_t iz_ = hq_.lo[2]; iz_ <= hq_.hi[2]; iz_++) {                 \
                    if (gxy_ + hq_.g2[2][iz_ - hq_.c[2] + 1] > hq_.r2)                   \
                        continue;                                                        \
                    const uint64_t key_ = cell_key((h), ix_, iy_, iz_);                  \
                    const uint32_t b_ = bucket_of((h), key_);                            \
                    for (uint32_t q_ = bs_[b_]; q_ < bs_[b_ + 1u]; q_++) {               \
                        const hash_item *it = &items_[q_];                               \
                        if (it->key != key_)                                             \
                            continue;                                                    \
                        __VA_ARGS__                                                      \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    } while (0)

/* ---- configuration -------------------------------------------------------- */

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            snprintf(err, errlen, "aircraft: " __VA_ARGS__);                             \
            return SEER_E_CONFIG;                                                        \
        }                                                                                \
    } while (0)


#define P(m) SEER_MEMBER(seer_aircraft_config, m)
/* Ranges keep every quantity finite; rules tying several parameters
 * together are in aircraft_describe. */
static const seer_param aircraft_params[] = {
    {P(num_uavs), .def = 16, .lo = 1, .hi = 1u << 20, .doc = "N: UAVs, each one an agent"},
    {P(num_targets), .def = 4294967295.0, .lo = 0, .hi = 1u << 20, .flags = SEER_P_NONE,
     .none = 4294967295.0, .doc = "M: ground targets (None: num_uavs)"},
    {P(substeps), .def = 10, .lo = 1, .hi = 1000, .doc = "K: RK4 substeps per step"},
    {P(num_rays), .def = 16, .lo = 0, .hi = 1024, .doc = "R: range rays per UAV"},
    {P(msg_every), .def = 2, .lo = 0, .hi = 1u << 20,
     .doc = "broadcast every msg_every substeps (0: never)"},
    {P(table_size), .def = 8, .lo = 1, .hi = SEER_AIRCRAFT_MAX_TABLE,
     .doc = "neighbour-table capacity"},
    {P(num_neighbors), .def = 4, .lo = 0, .hi = SEER_AIRCRAFT_MAX_TABLE,
     .doc = "neighbours in the observation (<= table_size)"},
    {P(num_obs_targets), .def = 4, .lo = 0, .hi = SEER_AIRCRAFT_MAX_OBS_TARGETS,
     .doc = "nearest targets in the observation"},
    {P(discrete), .def = 0, .doc = "Discrete(7) actions instead of Box(-1, 1, (3,))"},
    {P(step_duration), .def = 1.0, .lo = 1e-6, .hi = 1e6,
     .doc = "D: simulated seconds per step"},
    {P(arena_size), .def = NAN, .lo = 1, .hi = 1e7, .flags = SEER_P_NONE,
     .none = NAN,
     .doc = "(x, y, z) extent in metres, or a side S (S x S x arena_height); None: S = "
            "max(200, 40 sqrt(N))"},
    {P(arena_height), .def = 100.0, .lo = 1, .hi = 1e7,
     .doc = "z extent when arena_size does not give it"},
    {P(comm_radius), .def = 60.0, .lo = 1e-3, .hi = 1e7,
     .doc = "broadcast radius"},
    {P(latency), .def = NAN, .lo = 0, .hi = 1e6, .flags = SEER_P_GT | SEER_P_NONE, .none = NAN,
     .doc = "message latency, the lookahead (None: one substep, D / K)"},
    {P(msg_ttl), .def = NAN, .lo = 0, .hi = 1e9, .flags = SEER_P_GT | SEER_P_NONE, .none = NAN,
     .doc = "table entries older than this are not observed (None: D)"},
    {P(ray_range), .def = 30.0, .lo = 1e-3, .hi = 1e7,
     .doc = "maximum range of a ray"},
    {P(collision_radius), .def = 2.0, .lo = 1e-6, .hi = 1e6,
     .doc = "two UAVs closer than this collide"},
    {P(sensor_radius), .def = 20.0, .lo = 1e-3, .hi = 1e7,
     .doc = "horizontal radius of a UAV's ground footprint"},
    {P(sensor_ceiling), .def = 60.0, .lo = 0, .hi = 1e7,
     .doc = "a UAV above this altitude covers nothing"},
    {P(spawn_z_min), .def = 20.0, .lo = 1e-3, .hi = 1e7,
     .doc = "lowest spawn altitude"},
    {P(spawn_z_max), .def = 60.0, .lo = 1e-3, .hi = 1e7,
     .doc = "highest spawn altitude"},
    {P(accel_max), .def = 5.0, .lo = 0, .hi = 1e4, .doc = "acceleration for |u| = 1"},
    {P(v_max), .def = 15.0, .lo = 1e-3, .hi = 1e5, .doc = "speed limit"},
    {P(drag), .def = 0.3, .lo = 0, .hi = 1e3, .doc = "linear drag rate against the air (1/s)"},
    {P(wind_x), .def = 2.0, .lo = -1e4, .hi = 1e4, .doc = "mean wind, x"},
    {P(wind_y), .def = 1.0, .lo = -1e4, .hi = 1e4, .doc = "mean wind, y"},
    {P(wind_amp), .def = 3.0, .lo = -1e4, .hi = 1e4,
     .doc = "horizontal wind wave amplitude at the ceiling"},
    {P(wind_vert), .def = 0.5, .lo = -1e4, .hi = 1e4, .doc = "vertical wind amplitude"},
    {P(wind_wavelength), .def = 200.0, .lo = 1e-3, .hi = 1e9,
     .doc = "spatial period of the wind field"},
    {P(wind_period), .def = 60.0, .lo = 1e-3, .hi = 1e9,
     .doc = "temporal period of the wind field"},
    {P(gust_sigma), .def = 1.5, .lo = 0, .hi = 1e4,
     .doc = "gust components uniform in [-sigma, sigma]"},
    {P(gust_vert), .def = 0.25, .lo = 0, .hi = 100, .doc = "vertical gust scale"},
    {P(gust_mean), .def = 3.0, .lo = 1e-6, .hi = 1e9,
     .doc = "mean gust duration"},
    {P(battery_idle), .def = 0.001, .lo = 0, .hi = 1e3, .doc = "battery drain per second"},
    {P(battery_thrust), .def = 0.005, .lo = 0, .hi = 1e3,
     .doc = "extra drain per second per |u|^2"},
    {P(w_coverage), .def = 1.0, .lo = -1e6, .hi = 1e6, .doc = "reward weight of coverage"},
    {P(w_energy), .def = 10.0, .lo = -1e6, .hi = 1e6, .doc = "reward weight of energy used"},
    {P(collision_penalty), .def = 10.0, .lo = -1e6, .hi = 1e6,
     .doc = "reward penalty for a collision"},
    {P(crash_penalty), .def = 10.0, .lo = -1e6, .hi = 1e6,
     .doc = "penalty for ground impact, leaving the arena or an empty battery"},
};
#undef P

#define F(m) {SEER_MEMBER(seer_aircraft_uav, m)}
static const seer_field aircraft_state_fields[] = {
    F(pos), F(vel), F(gust), F(u), F(gust_until), F(battery), F(battery_step), F(t_crash),
    F(crashed), F(substeps), F(rx_step), F(tx_step), F(rx_total), F(tx_total), F(table_n),
    F(nbr_id), F(nbr_t), F(nbr_d2),
    {SEER_MEMBER_2D(seer_aircraft_uav, nbr_pos)}, {SEER_MEMBER_2D(seer_aircraft_uav, nbr_vel)},
};
#undef F

static int aircraft_describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    seer_aircraft_config *c = config;
    /* derived values (parameters left "not set") */
    if (c->num_targets == UINT32_MAX)
        c->num_targets = c->num_uavs;
    if (isnan(c->latency))
        c->latency = c->step_duration / c->substeps; /* >= 1e-9: step_duration >= 1e-6 */
    if (isnan(c->msg_ttl))
        c->msg_ttl = c->step_duration;
    if (isnan(c->arena_size[0]))
        c->arena_size[0] = fmax(200.0, 40.0 * sqrt((double)c->num_uavs));
    if (isnan(c->arena_size[1]))
        c->arena_size[1] = c->arena_size[0];
    if (isnan(c->arena_size[2]))
        c->arena_size[2] = c->arena_height;
    c->arena_x = c->arena_size[0];
    c->arena_y = c->arena_size[1];
    c->arena_z = c->arena_size[2];
    CHECK(c->num_neighbors <= c->table_size, "num_neighbors=%u must be in [0, table_size=%u]",
          c->num_neighbors, c->table_size);
    CHECK(c->spawn_z_min < c->arena_z,
          "spawn_z_min=%g must be in (0, arena z=%g) (the arena's height: arena_size[2], or "
          "arena_height)",
          c->spawn_z_min, c->arena_z);
    CHECK(c->spawn_z_max >= c->spawn_z_min && c->spawn_z_max < c->arena_z,
          "spawn_z_max=%g must be in [spawn_z_min=%g, arena z=%g) (the arena's height: "
          "arena_size[2], or arena_height)",
          c->spawn_z_max, c->spawn_z_min, c->arena_z);
    /* RK4 on the drag term is stable for drag * dt below about 2.78 */
    CHECK(c->drag * (c->step_duration / c->substeps) <= 2.5,
          "drag=%g is too large for the substep D / K = %g (drag * D / K must be <= 2.5; "
          "raise substeps)",
          c->drag, c->step_duration / c->substeps);

    layout l;
    make_layout(c, &l);
    const double cells = (c->arena_x / l.cell + 3.0) * (c->arena_y / l.cell + 3.0) *
                         (c->arena_z / l.cell + 3.0);
    CHECK(cells < 1e18, "arena_x/y/z=%g/%g/%g too large for comm_radius=%g", c->arena_x,
          c->arena_y, c->arena_z, c->comm_radius);
    const uint64_t state_dim =
        (uint64_t)STATE_PER_UAV * c->num_uavs + (uint64_t)STATE_PER_TARGET * c->num_targets;
    CHECK(l.total <= 0xFFFFFFF0u && state_dim <= 0xFFFFFFFFu,
          "num_uavs=%u / num_targets=%u too large", c->num_uavs, c->num_targets);

    out->num_entities = c->num_uavs;
    out->num_agents = c->num_uavs;
    out->obs_dim = OWN_DIM + NBR_DIM * c->num_neighbors + TGT_DIM * c->num_obs_targets +
                   c->num_rays;
    if (c->discrete) {
        out->action_dim = 1;
        out->action_kind = SEER_ACTION_DISCRETE;
        out->action_n = 7;
        out->action_low = 0.0f;
        out->action_high = 0.0f;
    } else {
        out->action_dim = 3;
        out->action_kind = SEER_ACTION_BOX;
        out->action_n = 0;
        out->action_low = -1.0f;
        out->action_high = 1.0f;
    }
    out->info_dim = INFO_DIM;
    out->state_dim = (uint32_t)state_dim;
    out->entity_size = sizeof(seer_aircraft_uav);
    out->payload_size = sizeof(msg_payload);
    out->snapshot_size = sizeof(uav_record);
    out->instance_size = (uint32_t)l.total;
    out->lookahead = c->latency;
    out->step_duration = c->step_duration;
    /* a substep per UAV, and the messages in flight to the UAVs in range
     * (uniform density over the arena's floor) */
    const double nbrs = fmin((double)c->num_uavs - 1.0,
                             (double)c->num_uavs * 3.141592653589793 * c->comm_radius *
                                 c->comm_radius / (c->arena_x * c->arena_y));
    out->pending_events = (uint64_t)((double)c->num_uavs * (1.0 + (c->msg_every ? nbrs : 0.0)));
    return SEER_OK;
}

/* ---- dynamics --------------------------------------------------------------- */

/* Acceleration at time t for position p and velocity v (README "Dynamics"). */
static inline void accel(const seer_aircraft_config *c, const seer_aircraft_uav *st,
                         double kw, double kt, double t, const double p[3],
                         const double v[3], double a[3])
{
    const double h = p[2] / c->arena_z;
    const double px = kw * p[0], py = kw * p[1], pt = kt * t;
    const double wx = c->wind_x + c->wind_amp * h * sin(py + pt);
    const double wy = c->wind_y + c->wind_amp * h * cos(px - pt);
    const double wz = c->wind_vert * sin(px + py) * cos(pt);
    a[0] = c->accel_max * st->u[0] - c->drag * (v[0] - (wx + st->gust[0]));
    a[1] = c->accel_max * st->u[1] - c->drag * (v[1] - (wy + st->gust[1]));
    a[2] = c->accel_max * st->u[2] - c->drag * (v[2] - (wz + st->gust[2]));
}

static void rk4(const seer_aircraft_config *c, seer_aircraft_uav *st, double t, double dt)
{
    const double kw = k_two_pi / c->wind_wavelength, kt = k_two_pi / c->wind_period;
    const double hdt = dt * 0.5, dt6 = dt / 6.0;
    double p1[3], v1[3], p2[3], v2[3], p3[3], v3[3], p4[3], v4[3];
    double a1[3], a2[3], a3[3], a4[3];
    for (int i = 0; i < 3; i++) {
        p1[i] = st->pos[i];
        v1[i] = st->vel[i];
    }
    accel(c, st, kw, kt, t, p1, v1, a1);
    for (int i = 0; i < 3; i++) {
        p2[i] = st->pos[i] + hdt * v1[i];
        v2[i] = st->vel[i] + hdt * a1[i];
    }
    accel(c, st, kw, kt, t + hdt, p2, v2, a2);
    for (int i = 0; i < 3; i++) {
        p3[i] = st->pos[i] + hdt * v2[i];
        v3[i] = st->vel[i] + hdt * a2[i];
    }
    accel(c, st, kw, kt, t + hdt, p3, v3, a3);
    for (int i = 0; i < 3; i++) {
        p4[i] = st->pos[i] + dt * v3[i];
        v4[i] = st->vel[i] + dt * a3[i];
    }
    accel(c, st, kw, kt, t + dt, p4, v4, a4);
    for (int i = 0; i < 3; i++) {
        st->pos[i] = st->pos[i] + dt6 * (((v1[i] + 2.0 * v2[i]) + 2.0 * v3[i]) + v4[i]);
        st->vel[i] = st->vel[i] + dt6 * (((a1[i] + 2.0 * a2[i]) + 2.0 * a3[i]) + a4[i]);
    }
    const double s2 = st->vel[0] * st->vel[0] + st->vel[1] * st->vel[1] +
                      st->vel[2] * st->vel[2];
    if (s2 > c->v_max * c->v_max) {
        const double f = c->v_max / sqrt(s2);
        for (int i = 0; i < 3; i++)
            st->vel[i] = st->vel[i] * f;
    }
}

/* ---- handlers ---------------------------------------------------------------- */

static int aircraft_init(seer_ctx *ctx, void *entity)
{
    const seer_aircraft_config *c = seer_config(ctx);
    seer_aircraft_uav *st = entity;
    st->pos[0] = c->arena_x * seer_rng_uniform(ctx);
    st->pos[1] = c->arena_y * seer_rng_uniform(ctx);
    st->pos[2] = c->spawn_z_min + (c->spawn_z_max - c->spawn_z_min) * seer_rng_uniform(ctx);
    st->battery = 1.0;
    st->battery_step = 1.0;
    return 0;
}

static const double k_discrete[7][3] = {
    {0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1},
};

static int aircraft_act(seer_ctx *ctx, void *entity, const void *action)
{
    const seer_aircraft_config *c = seer_config(ctx);
    seer_aircraft_uav *st = entity;
    if (c->discrete) {
        const int32_t a = *(const int32_t *)action;
        for (int i = 0; i < 3; i++)
            st->u[i] = k_discrete[a][i];
    } else {
        const float *a = action;
        for (int i = 0; i < 3; i++)
            st->u[i] = (double)a[i];
    }
    st->battery_step = st->battery;
    st->rx_step = 0;
    st->tx_step = 0;
    if (st->crashed)
        return 0;
    const substep_payload p = {.j = 0, .pad_ = 0};
    return seer_schedule(ctx, seer_self(ctx), seer_now(ctx), EV_SUBSTEP, &p, sizeof p);
}

static int broadcast(seer_ctx *ctx, const seer_aircraft_config *c, seer_aircraft_uav *st,
                     uint64_t s)
{
    const void *idata = seer_instance_data(ctx);
    const idata_header *h = hdr_of(idata);
    const uint32_t self = seer_self(ctx);
    const double now = seer_now(ctx);
    const double rc2 = c->comm_radius * c->comm_radius;
    const double t_arrive = now + c->latency;
    msg_payload m = {.tag = (s << TAG_SENDER_BITS) | self};
    for (int i = 0; i < 3; i++) {
        m.pos[i] = (float)st->pos[i];
        m.vel[i] = (float)st->vel[i];
    }
    int rc = 0;
    FOR_HASH_NEAR(h, idata, st->pos, c->comm_radius, it, {
        if (it->e == self || sq3(st->pos, it->p) > rc2)
            continue;
        const uav_record *r = seer_snapshot(ctx, it->e);
        if (!r->live)
            continue;
        rc = seer_schedule(ctx, it->e, t_arrive, EV_MESSAGE, &m, sizeof m);
        if (rc)
            return rc;
        st->tx_step++;
        st->tx_total++;
    });
    return rc;
}

static int substep(seer_ctx *ctx, seer_aircraft_uav *st, uint32_t j)
{
    const seer_aircraft_config *c = seer_config(ctx);
    if (st->crashed)
        return 0;
    const double now = seer_now(ctx);
    const uint64_t K = c->substeps;
    const double dt = c->step_duration / (double)K;
    if (now >= st->gust_until) {
        st->gust[0] = c->gust_sigma * (2.0 * seer_rng_uniform(ctx) - 1.0);
        st->gust[1] = c->gust_sigma * (2.0 * seer_rng_uniform(ctx) - 1.0);
        st->gust[2] = c->gust_vert * c->gust_sigma * (2.0 * seer_rng_uniform(ctx) - 1.0);
        st->gust_until = now + seer_rng_exponential(ctx, c->gust_mean);
    }
    rk4(c, st, now, dt);
    const double usq = st->u[0] * st->u[0] + st->u[1] * st->u[1] + st->u[2] * st->u[2];
    st->battery = st->battery - dt * (c->battery_idle + c->battery_thrust * usq);
    st->substeps++;
    const double *p = st->pos;
    if (p[2] <= 0.0)
        st->crashed = CRASH_GROUND;
    else if (p[0] < 0.0 || p[0] > c->arena_x || p[1] < 0.0 || p[1] > c->arena_y ||
             p[2] > c->arena_z)
        st->crashed = CRASH_ARENA;
    else if (st->battery <= 0.0)
        st->crashed = CRASH_BATTERY;
    if (st->battery < 0.0)
        st->battery = 0.0;
    if (st->crashed) {
        st->t_crash = now;
        return 0;
    }
    const uint64_t s = seer_step_index(ctx) * K + j;
    if (c->msg_every && s % c->msg_every == 0) {
        int rc = broadcast(ctx, c, st, s);
        if (rc)
            return rc;
    }
    if (j + 1u < K) {
        const substep_payload next = {.j = j + 1u, .pad_ = 0};
        return seer_schedule(ctx, seer_self(ctx), substep_time(c, s + 1u), EV_SUBSTEP, &next,
                             sizeof next);
    }
    return 0;
}

/* Is entry a worse than entry b (evicted first)?  Older, then farther, then
 * larger sender id. */
static inline int nbr_worse(double ta, double da, uint32_t ia, double tb, double db,
                            uint32_t ib)
{
    if (ta != tb)
        return ta < tb;
    if (da != db)
        return da > db;
    return ia > ib;
}

static void receive(seer_ctx *ctx, seer_aircraft_uav *st, const msg_payload *m)
{
    const seer_aircraft_config *c = seer_config(ctx);
    const uav_record *me = seer_snapshot(ctx, seer_self(ctx));
    if (!me->live)
        return;
    st->rx_step++;
    st->rx_total++;
    const double mp[3] = {(double)m->pos[0], (double)m->pos[1], (double)m->pos[2]};
    const double d2 = sq3(mp, me->pos);
    const double t_send = substep_time(c, m->tag >> TAG_SENDER_BITS);
    const uint32_t sender = (uint32_t)(m->tag & ((1u << TAG_SENDER_BITS) - 1u));
    uint32_t slot = UINT32_MAX;
    for (uint32_t q = 0; q < st->table_n; q++) {
        if (st->nbr_id[q] == sender) {
            slot = q;
            break;
        }
    }
    if (slot == UINT32_MAX) {
        if (st->table_n < c->table_size) {
            slot = st->table_n++;
        } else {
            uint32_t w = 0;
            for (uint32_t q = 1; q < st->table_n; q++)
                if (nbr_worse(st->nbr_t[q], st->nbr_d2[q], st->nbr_id[q], st->nbr_t[w],
                              st->nbr_d2[w], st->nbr_id[w]))
                    w = q;
            if (!nbr_worse(st->nbr_t[w], st->nbr_d2[w], st->nbr_id[w], t_send, d2, sender))
                return;
            slot = w;
        }
    }
    st->nbr_id[slot] = sender;
    st->nbr_t[slot] = t_send;
    st->nbr_d2[slot] = d2;
    for (int i = 0; i < 3; i++) {
        st->nbr_pos[slot][i] = m->pos[i];
        st->nbr_vel[slot][i] = m->vel[i];
    }
}

static int aircraft_handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                           uint32_t size)
{
    (void)size;
    seer_aircraft_uav *st = entity;
    if (type == EV_SUBSTEP) {
        const substep_payload *p = payload;
        return substep(ctx, st, p->j);
    }
    if (type == EV_MESSAGE) {
        receive(ctx, st, payload);
        return 0;
    }
    return 1;
}

/* ---- boundary --------------------------------------------------------------- */

static void build_static(seer_ctx *ctx, const seer_aircraft_config *c, void *idata)
{
    idata_header *h = idata;
    const layout *l = &h->lay;
    /* Ray directions: a Fibonacci sphere. */
    double *rays = ARR(idata, double, l->off_rays);
    for (uint32_t i = 0; i < c->num_rays; i++) {
        const double zc = 1.0 - (2.0 * (double)i + 1.0) / (double)c->num_rays;
        const double rr = sqrt(fmax(0.0, 1.0 - zc * zc));
        const double phi = k_golden * (double)i;
        rays[3 * i + 0] = rr * cos(phi);
        rays[3 * i + 1] = rr * sin(phi);
        rays[3 * i + 2] = zc;
    }
    /* Targets: uniform on the ground from the instance seed, bucketed by cell. */
    const uint32_t M = c->num_targets, TG = l->tgx * l->tgy;
    target_item *tg = ARR(idata, target_item, l->off_targets);
    uint32_t *tstart = ARR(idata, uint32_t, l->off_tstart);
    uint32_t *tcur = ARR(idata, uint32_t, l->off_tcursor);
    uint32_t *tcount = ARR(idata, uint32_t, l->off_tcount);
    memset(tstart, 0, ((size_t)TG + 1u) * sizeof(uint32_t));
    /* Two passes over the same generator: count targets per cell (tcount
     * holds each target's cell meanwhile), then place them; walking ids in
     * ascending order lists each cell's targets by ascending id. */
    uint64_t x = seer_seed(ctx) ^ 0x5EEDA1C7A26E7500ull;
    for (uint32_t t = 0; t < M; t++) {
        const double tx = c->arena_x * u01_of(splitmix64_next(&x));
        const double ty = c->arena_y * u01_of(splitmix64_next(&x));
        const int64_t cx = cell_coord(tx, h->inv_tcell, (int64_t)l->tgx - 1);
        const int64_t cy = cell_coord(ty, h->inv_tcell, (int64_t)l->tgy - 1);
        const uint32_t cell =
            (uint32_t)(cy < 0 ? 0 : cy) * l->tgx + (uint32_t)(cx < 0 ? 0 : cx);
        tcount[t] = cell;
        tstart[cell + 1u]++;
    }
    for (uint32_t k = 0; k < TG; k++)
        tstart[k + 1u] += tstart[k];
    memcpy(tcur, tstart, (size_t)TG * sizeof(uint32_t));
    x = seer_seed(ctx) ^ 0x5EEDA1C7A26E7500ull;
    for (uint32_t t = 0; t < M; t++) {
        const double tx = c->arena_x * u01_of(splitmix64_next(&x));
        const double ty = c->arena_y * u01_of(splitmix64_next(&x));
        const uint32_t slot = tcur[tcount[t]]++;
        tg[slot].x = tx;
        tg[slot].y = ty;
        tg[slot].id = t;
        tg[slot].pad_ = 0;
    }
    memset(tcount, 0, (size_t)M * sizeof(uint32_t));
}

static void build_hash(seer_ctx *ctx, const seer_aircraft_config *c, void *idata)
{
    idata_header *h = idata;
    const uint32_t P = h->lay.nbuckets, N = c->num_uavs;
    uint32_t *bs = ARR(idata, uint32_t, h->lay.off_bstart);
    uint32_t *cur = ARR(idata, uint32_t, h->lay.off_cursor);
    hash_item *items = ARR(idata, hash_item, h->lay.off_items);
    memset(bs, 0, ((size_t)P + 1u) * sizeof(uint32_t));
    for (uint32_t e = 0; e < N; e++) {
        if (!seer_agent_alive(ctx, e))
            continue;
        const seer_aircraft_uav *st = seer_entity_state(ctx, e);
        const uint64_t key = cell_key(h, cell_coord(st->pos[0], h->inv_cell, h->gx),
                                      cell_coord(st->pos[1], h->inv_cell, h->gy),
                                      cell_coord(st->pos[2], h->inv_cell, h->gz));
        bs[bucket_of(h, key) + 1u]++;
    }
    for (int a = 0; a < 3; a++) {
        h->omin[a] = INT64_MAX;
        h->omax[a] = INT64_MIN;
    }
    for (uint32_t b = 0; b < P; b++)
        bs[b + 1u] += bs[b];
    memcpy(cur, bs, (size_t)P * sizeof(uint32_t));
    for (uint32_t e = 0; e < N; e++) {
        if (!seer_agent_alive(ctx, e))
            continue;
        const seer_aircraft_uav *st = seer_entity_state(ctx, e);
        const uint64_t key = cell_key(h, cell_coord(st->pos[0], h->inv_cell, h->gx),
                                      cell_coord(st->pos[1], h->inv_cell, h->gy),
                                      cell_coord(st->pos[2], h->inv_cell, h->gz));
        const int64_t cc[3] = {cell_coord(st->pos[0], h->inv_cell, h->gx),
                               cell_coord(st->pos[1], h->inv_cell, h->gy),
                               cell_coord(st->pos[2], h->inv_cell, h->gz)};
        for (int a = 0; a < 3; a++) {
            if (cc[a] < h->omin[a])
                h->omin[a] = cc[a];
            if (cc[a] > h->omax[a])
                h->omax[a] = cc[a];
        }
        hash_item *it = &items[cur[bucket_of(h, key)]++];
        for (int i = 0; i < 3; i++)
            it->p[i] = st->pos[i];
        it->key = key;
        it->e = e;
        it->pad_ = 0;
    }
}

/* Visit the targets within the horizontal sensor radius of (x, y). */
#define FOR_TARGETS_NEAR(h, idata, c, qx_, qy_, tgt, ...)                                   \
    do {                                                                                 \
        const target_item *tg_ = CARR(idata, target_item, (h)->lay.off_targets);         \
        const uint32_t *ts_ = CARR(idata, uint32_t, (h)->lay.off_tstart);                \
        const double rs_ = (c)->sensor_radius, rs2_ = rs_ * rs_;                         \
        const int64_t gxm_ = (int64_t)(h)->lay.tgx - 1, gym_ = (int64_t)(h)->lay.tgy - 1; \
        int64_t x0_ = cell_coord((qx_)-rs_, (h)->inv_tcell, gxm_);                         \
        int64_t x1_ = cell_coord((qx_) + rs_, (h)->inv_tcell, gxm_);                       \
        int64_t y0_ = cell_coord((qy_)-rs_, (h)->inv_tcell, gym_);                         \
        int64_t y1_ = cell_coord((qy_) + rs_, (h)->inv_tcell, gym_);                       \
        if (x0_ < 0)                                                                     \
            x0_ = 0;                                                                     \
        if (y0_ < 0)                                                                     \
            y0_ = 0;                                                                     \
        for (int64_t iy_ = y0_; iy_ <= y1_; iy_++) {                                     \
            for (int64_t ix_ = x0_; ix_ <= x1_; ix_++) {                                 \
                const uint32_t cell_ = (uint32_t)iy_ * (h)->lay.tgx + (uint32_t)ix_;     \
                for (uint32_t q_ = ts_[cell_]; q_ < ts_[cell_ + 1u]; q_++) {             \
                    const target_item *tgt = &tg_[q_];                                   \
                    const double dx_ = tgt->x - (qx_), dy_ = tgt->y - (qy_);                 \
                    if (dx_ * dx_ + dy_ * dy_ > rs2_)                                    \
                        continue;                                                        \
                    __VA_ARGS__                                                                \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    } while (0)

static inline int covers(const seer_aircraft_config *c, const seer_aircraft_uav *st)
{
    return st->crashed == CRASH_NONE && st->pos[2] <= c->sensor_ceiling;
}

static void aircraft_boundary(seer_ctx *ctx, void *idata)
{
    const seer_aircraft_config *c = seer_config(ctx);
    idata_header *h = idata;
    h->reset_boundary = h->initialized ? 0u : 1u;
    if (!h->initialized) {
        make_layout(c, &h->lay);
        h->inv_cell = 1.0 / h->lay.cell;
        h->inv_tcell = 1.0 / h->lay.tcell;
        h->gx = (int64_t)floor(c->arena_x * h->inv_cell) + 1;
        h->gy = (int64_t)floor(c->arena_y * h->inv_cell) + 1;
        h->gz = (int64_t)floor(c->arena_z * h->inv_cell) + 1;
        build_static(ctx, c, idata);
        h->initialized = 1;
    }
    build_hash(ctx, c, idata);
    /* Coverage counts: live, flying UAVs at or below the sensor ceiling. */
    uint32_t *tcount = ARR(idata, uint32_t, h->lay.off_tcount);
    memset(tcount, 0, (size_t)c->num_targets * sizeof(uint32_t));
    for (uint32_t e = 0; e < c->num_uavs; e++) {
        if (!seer_agent_alive(ctx, e))
            continue;
        const seer_aircraft_uav *st = seer_entity_state(ctx, e);
        if (!covers(c, st))
            continue;
        FOR_TARGETS_NEAR(h, idata, c, st->pos[0], st->pos[1], tgt, { tcount[tgt->id]++; });
    }
    uint32_t covered = 0;
    for (uint32_t t = 0; t < c->num_targets; t++)
        covered += tcount[t] ? 1u : 0u;
    h->covered = covered;
}

/* Does UAV `self` at p collide (distance < r_col) with another hashed UAV? */
static int collided(const seer_aircraft_config *c, const void *idata, uint32_t self,
                    const double p[3])
{
    const idata_header *h = hdr_of(idata);
    if (h->reset_boundary)
        return 0;
    const double r2 = c->collision_radius * c->collision_radius;
    FOR_HASH_NEAR(h, idata, p, c->collision_radius, it, {
        if (it->e != self && sq3(p, it->p) < r2)
            return 1;
    });
    return 0;
}

typedef struct pick {
    double d2;
    uint32_t id;
    uint32_t idx;
} pick;

/* Insert (d2, id) into the list a[0..*n) sorted by (d2, id), keeping at most cap. */
static inline void pick_insert(pick *a, uint32_t *n, uint32_t cap, double d2, uint32_t id,
                               uint32_t idx)
{
    uint32_t k = *n;
    if (k == cap) {
        const pick *w = &a[k - 1u];
        if (!(d2 < w->d2 || (d2 == w->d2 && id < w->id)))
            return;
        k--;
    } else {
        (*n)++;
    }
    while (k > 0 && (d2 < a[k - 1u].d2 || (d2 == a[k - 1u].d2 && id < a[k - 1u].id))) {
        a[k] = a[k - 1u];
        k--;
    }
    a[k].d2 = d2;
    a[k].id = id;
    a[k].idx = idx;
}

static float *observe_neighbors(const seer_aircraft_config *c, const seer_aircraft_uav *st,
                                double now, float *o, uint32_t *valid_out)
{
    pick best[SEER_AIRCRAFT_MAX_TABLE];
    uint32_t n = 0, valid = 0;
    for (uint32_t q = 0; q < st->table_n; q++) {
        if (now - st->nbr_t[q] > c->msg_ttl)
            continue;
        valid++;
        if (c->num_neighbors) {
            const double np[3] = {(double)st->nbr_pos[q][0], (double)st->nbr_pos[q][1],
                                  (double)st->nbr_pos[q][2]};
            pick_insert(best, &n, c->num_neighbors, sq3(np, st->pos), st->nbr_id[q], q);
        }
    }
    *valid_out = valid;
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t q = best[k].idx;
        o[0] = 1.0f;
        for (int i = 0; i < 3; i++) {
            o[1 + i] = (float)clampd(((double)st->nbr_pos[q][i] - st->pos[i]) / c->comm_radius,
                                     -2.0, 2.0);
            o[4 + i] =
                (float)clampd(((double)st->nbr_vel[q][i] - st->vel[i]) / c->v_max, -2.0, 2.0);
        }
        o[7] = (float)clampd((now - st->nbr_t[q]) / c->msg_ttl, 0.0, 1.0);
        o += NBR_DIM;
    }
    return o + (size_t)NBR_DIM * (c->num_neighbors - n);
}

static float *observe_targets(const seer_aircraft_config *c, const void *idata,
                              const seer_aircraft_uav *st, float *o)
{
    const idata_header *h = hdr_of(idata);
    const uint32_t T = c->num_obs_targets;
    const uint32_t want = T < c->num_targets ? T : c->num_targets;
    if (want == 0)
        return o + (size_t)TGT_DIM * T;
    const target_item *tg = CARR(idata, target_item, h->lay.off_targets);
    const uint32_t *ts = CARR(idata, uint32_t, h->lay.off_tstart);
    const uint32_t *tcount = CARR(idata, uint32_t, h->lay.off_tcount);
    const int64_t gx = h->lay.tgx, gy = h->lay.tgy;
    const double x = st->pos[0], y = st->pos[1];
    int64_t cx = cell_coord(x, h->inv_tcell, gx - 1), cy = cell_coord(y, h->inv_tcell, gy - 1);
    if (cx < 0)
        cx = 0;
    if (cy < 0)
        cy = 0;
    const int64_t rmax = gx > gy ? gx : gy;
    pick best[SEER_AIRCRAFT_MAX_OBS_TARGETS];
    uint32_t n = 0;
    for (int64_t r = 0; r <= rmax; r++) {
        for (int64_t iy = cy - r; iy <= cy + r; iy++) {
            if (iy < 0 || iy >= gy)
                continue;
            const int edge = (iy == cy - r || iy == cy + r);
            for (int64_t ix = cx - r; ix <= cx + r; ix += (edge || r == 0) ? 1 : 2 * r) {
                if (ix < 0 || ix >= gx)
                    continue;
                const uint32_t cell = (uint32_t)iy * h->lay.tgx + (uint32_t)ix;
                for (uint32_t q = ts[cell]; q < ts[cell + 1u]; q++) {
                    const double dx = tg[q].x - x, dy = tg[q].y - y;
                    pick_insert(best, &n, want, dx * dx + dy * dy, tg[q].id, q);
                }
            }
        }
        if (n == want && r >= 1) {
            const double bound = (double)r * h->lay.tcell * (1.0 - 1e-9);
            if (best[n - 1u].d2 < bound * bound)
                break;
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        const target_item *t = &tg[best[k].idx];
        const uint32_t cnt = tcount[t->id];
        o[0] = 1.0f;
        o[1] = (float)clampd((t->x - x) / c->arena_x, -1.0, 1.0);
        o[2] = (float)clampd((t->y - y) / c->arena_y, -1.0, 1.0);
        o[3] = (float)((cnt > 4u ? 4.0 : (double)cnt) * 0.25);
        o += TGT_DIM;
    }
    return o + (size_t)TGT_DIM * (T - n);
}

static void observe_rays(const seer_aircraft_config *c, const void *idata, uint32_t self,
                         const seer_aircraft_uav *st, float *o)
{
    const uint32_t R = c->num_rays;
    if (R == 0)
        return;
    const idata_header *h = hdr_of(idata);
    const double *dirs = CARR(idata, double, h->lay.off_rays);
    const double *p = st->pos;
    double range[1024];
    for (uint32_t i = 0; i < R; i++) {
        const double *d = &dirs[3 * i];
        double t = c->ray_range;
        const double lim[3] = {c->arena_x, c->arena_y, c->arena_z};
        for (int a = 0; a < 3; a++) {
            double ta;
            if (d[a] > 0.0)
                ta = (lim[a] - p[a]) / d[a];
            else if (d[a] < 0.0)
                ta = (0.0 - p[a]) / d[a];
            else
                continue;
            if (ta < t)
                t = ta;
        }
        range[i] = t < 0.0 ? 0.0 : t;
    }
    const double rb = 0.5 * c->collision_radius, rb2 = rb * rb;
    const double reach = c->ray_range + rb, reach2 = reach * reach;
    FOR_HASH_NEAR(h, idata, p, reach, it, {
        if (it->e == self)
            continue;
        const double ox = it->p[0] - p[0], oy = it->p[1] - p[1], oz = it->p[2] - p[2];
        const double oc2 = ox * ox + oy * oy + oz * oz;
        if (oc2 > reach2)
            continue;
        for (uint32_t i = 0; i < R; i++) {
            const double *d = &dirs[3 * i];
            const double tca = ox * d[0] + oy * d[1] + oz * d[2];
            const double m2 = oc2 - tca * tca;
            if (m2 > rb2)
                continue;
            const double thc = sqrt(rb2 - m2);
            if (tca + thc < 0.0)
                continue;
            double t = tca - thc;
            if (t < 0.0)
                t = 0.0;
            if (t < range[i])
                range[i] = t;
        }
    });
    for (uint32_t i = 0; i < R; i++)
        o[i] = (float)clampd(range[i] / c->ray_range, 0.0, 1.0);
}

static void aircraft_observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const seer_aircraft_config *c = seer_config(ctx);
    const void *idata = seer_instance_data(ctx);
    const idata_header *h = hdr_of(idata);
    const seer_aircraft_uav *st = seer_entity_state(ctx, agent);
    const double now = seer_now(ctx);
    float *o = out->obs;
    o[0] = (float)clampd(st->pos[0] / c->arena_x, 0.0, 1.0);
    o[1] = (float)clampd(st->pos[1] / c->arena_y, 0.0, 1.0);
    o[2] = (float)clampd(st->pos[2] / c->arena_z, 0.0, 1.0);
    for (int i = 0; i < 3; i++)
        o[3 + i] = (float)clampd(st->vel[i] / c->v_max, -1.0, 1.0);
    o[6] = (float)clampd(st->battery, 0.0, 1.0);
    o += OWN_DIM;
    uint32_t valid = 0;
    o = observe_neighbors(c, st, now, o, &valid);
    o = observe_targets(c, idata, st, o);
    observe_rays(c, idata, agent, st, o);

    double share = 0.0;
    if (covers(c, st)) {
        const uint32_t *tcount = CARR(idata, uint32_t, h->lay.off_tcount);
        FOR_TARGETS_NEAR(h, idata, c, st->pos[0], st->pos[1], tgt,
                         { share += 1.0 / (double)tcount[tgt->id]; });
    }
    const int col = collided(c, idata, agent, st->pos);
    const double energy = st->battery_step - st->battery;
    double reward = c->w_coverage * share - c->w_energy * energy;
    if (col)
        reward -= c->collision_penalty;
    if (st->crashed)
        reward -= c->crash_penalty;
    *out->reward = (float)reward;
    *out->terminated = (uint8_t)((st->crashed || col) ? 1 : 0);
    out->info[0] = st->battery;
    out->info[1] = share;
    out->info[2] = energy;
    out->info[3] = col ? 1.0 : 0.0;
    out->info[4] = st->crashed ? (double)st->crashed : (col ? 4.0 : 0.0);
    out->info[5] = (double)st->rx_step;
    out->info[6] = (double)st->tx_step;
    out->info[7] = (double)valid;
}

static void aircraft_publish(seer_ctx *ctx, const void *entity, void *record)
{
    const seer_aircraft_config *c = seer_config(ctx);
    const seer_aircraft_uav *st = entity;
    uav_record *r = record;
    const uint32_t self = seer_self(ctx);
    for (int i = 0; i < 3; i++) {
        r->pos[i] = st->pos[i];
        r->vel[i] = st->vel[i];
    }
    r->crashed = st->crashed;
    int live = seer_agent_alive(ctx, self);
    if (live && (st->crashed || collided(c, seer_instance_data(ctx), self, st->pos)))
        live = 0;
    r->live = (uint32_t)live;
}

static void aircraft_global_state(seer_ctx *ctx, float *out)
{
    const seer_aircraft_config *c = seer_config(ctx);
    const void *idata = seer_instance_data(ctx);
    const idata_header *h = hdr_of(idata);
    for (uint32_t e = 0; e < c->num_uavs; e++) {
        const uav_record *r = seer_snapshot(ctx, e);
        const seer_aircraft_uav *st = seer_entity_state(ctx, e);
        float *o = out + (size_t)STATE_PER_UAV * e;
        o[0] = (float)clampd(r->pos[0] / c->arena_x, 0.0, 1.0);
        o[1] = (float)clampd(r->pos[1] / c->arena_y, 0.0, 1.0);
        o[2] = (float)clampd(r->pos[2] / c->arena_z, 0.0, 1.0);
        for (int i = 0; i < 3; i++)
            o[3 + i] = (float)clampd(r->vel[i] / c->v_max, -1.0, 1.0);
        o[6] = (float)clampd(st->battery, 0.0, 1.0);
        o[7] = r->live ? 1.0f : 0.0f;
    }
    if (!h->initialized)
        return;
    const target_item *tg = CARR(idata, target_item, h->lay.off_targets);
    const uint32_t *tcount = CARR(idata, uint32_t, h->lay.off_tcount);
    float *o = out + (size_t)STATE_PER_UAV * c->num_uavs;
    for (uint32_t q = 0; q < c->num_targets; q++) {
        const target_item *t = &tg[q];
        float *to = o + (size_t)STATE_PER_TARGET * t->id;
        to[0] = (float)(t->x / c->arena_x);
        to[1] = (float)(t->y / c->arena_y);
        to[2] = tcount[t->id] ? 1.0f : 0.0f;
    }
}

static int aircraft_agent_name(const void *config, uint32_t agent, char *buf, size_t len)
{
    (void)config;
    snprintf(buf, len, "uav_%u", agent);
    return 0;
}

/* README "Observation": own state, neighbours, targets, rays. */
static void aircraft_obs_bounds(const void *config, float *low, float *high)
{
    const seer_aircraft_config *c = config;
    static const float own_lo[OWN_DIM] = {0, 0, 0, -1, -1, -1, 0};
    static const float nbr_lo[NBR_DIM] = {0, -2, -2, -2, -2, -2, -2, 0};
    static const float nbr_hi[NBR_DIM] = {1, 2, 2, 2, 2, 2, 2, 1};
    static const float tgt_lo[TGT_DIM] = {0, -1, -1, 0};
    size_t o = 0;
    for (uint32_t i = 0; i < OWN_DIM; i++, o++) {
        low[o] = own_lo[i];
        high[o] = 1.0f;
    }
    for (uint32_t k = 0; k < c->num_neighbors; k++)
        for (uint32_t i = 0; i < NBR_DIM; i++, o++) {
            low[o] = nbr_lo[i];
            high[o] = nbr_hi[i];
        }
    for (uint32_t k = 0; k < c->num_obs_targets; k++)
        for (uint32_t i = 0; i < TGT_DIM; i++, o++) {
            low[o] = tgt_lo[i];
            high[o] = 1.0f;
        }
    for (uint32_t k = 0; k < c->num_rays; k++, o++) {
        low[o] = 0.0f;
        high[o] = 1.0f;
    }
}

static void aircraft_state_bounds(const void *config, float *low, float *high)
{
    const seer_aircraft_config *c = config;
    size_t o = 0;
    for (uint32_t e = 0; e < c->num_uavs; e++)
        for (uint32_t i = 0; i < STATE_PER_UAV; i++, o++) {
            low[o] = i >= 3 && i < 6 ? -1.0f : 0.0f;
            high[o] = 1.0f;
        }
    for (uint32_t q = 0; q < c->num_targets; q++)
        for (uint32_t i = 0; i < STATE_PER_TARGET; i++, o++) {
            low[o] = 0.0f;
            high[o] = 1.0f;
        }
}

static const char *const aircraft_info_names[INFO_DIM] = {
    "battery", "coverage", "energy", "collided", "crash_reason", "msgs_rx", "msgs_tx",
    "neighbors",
};
static const char *const aircraft_event_names[] = {"SUBSTEP", "MESSAGE"};

const seer_model seer_model_aircraft = {
    .api_version = SEER_API_VERSION,
    .name = "aircraft",
    .config_size = sizeof(seer_aircraft_config),
    .params = aircraft_params,
    .num_params = SEER_COUNT(aircraft_params),
    .describe = aircraft_describe,
    .init = aircraft_init,
    .act = aircraft_act,
    .handle = aircraft_handle,
    .boundary = aircraft_boundary,
    .observe = aircraft_observe,
    .publish = aircraft_publish,
    .global_state = aircraft_global_state,
    .info_names = aircraft_info_names,
    .event_names = aircraft_event_names,
    .event_type_count = 2,
    .agent_name = aircraft_agent_name,
    .obs_bounds = aircraft_obs_bounds,
    .state_bounds = aircraft_state_bounds,
    .state_fields = aircraft_state_fields,
    .num_state_fields = SEER_COUNT(aircraft_state_fields),
    .max_cycles = 500,
};
