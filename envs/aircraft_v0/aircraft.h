/*
 * Aircraft: a UAV swarm surveying ground targets, as a seer model.
 *
 * Every formula, default and observation element is documented in
 * README.md (beside this file); aircraft.c implements exactly that text.
 * Hosts read the structs below through the tables in aircraft.c (the
 * configuration's parameters and the UAV state's fields).
 */
#ifndef SEER_AIRCRAFT_H
#define SEER_AIRCRAFT_H

#include <stdbool.h>
#include <stdint.h>

#include "seer.h"

/* Capacity of a UAV's neighbour table (config table_size <= this). */
#define SEER_AIRCRAFT_MAX_TABLE 8
/* Most nearest targets an observation may list (num_obs_targets <= this). */
#define SEER_AIRCRAFT_MAX_OBS_TARGETS 64

typedef struct seer_aircraft_config {
    uint32_t num_uavs;        /* N: UAVs (agents uav_0 .. uav_{N-1})              */
    uint32_t num_targets;     /* M: ground targets                                  */
    uint32_t substeps;        /* K: RK4 substeps per step (dt = D / K)              */
    uint32_t num_rays;        /* R: range rays per UAV                              */
    uint32_t msg_every;       /* broadcast every msg_every substeps (0: never)     */
    uint32_t table_size;      /* neighbour-table capacity C (<= MAX_TABLE)         */
    uint32_t num_neighbors;   /* k: neighbours in the observation (<= C)           */
    uint32_t num_obs_targets; /* nearest targets in the observation                */
    bool discrete;            /* Discrete(7) actions instead of Box(-1, 1, (3,))   */
    double step_duration;     /* D: simulated seconds per step                      */
    double arena_size[3];     /* (x, y, z) as given; NaN: derived (see describe)    */
    double arena_height;      /* z when arena_size does not give it                 */
    double arena_x;           /* derived: the arena is                              */
    double arena_y;           /*   [0, arena_x] x [0, arena_y] x [0, arena_z]       */
    double arena_z;
    double comm_radius;       /* R_c: broadcast radius                              */
    double latency;           /* L: message latency = the model's lookahead (> 0)  */
    double msg_ttl;           /* table entries older than this are not observed    */
    double ray_range;         /* maximum range of a ray                              */
    double collision_radius;  /* r_col: two UAVs closer than this collide           */
    double sensor_radius;     /* horizontal radius of a UAV's ground footprint      */
    double sensor_ceiling;    /* a UAV above this altitude covers nothing           */
    double spawn_z_min;       /* spawn altitude range                                */
    double spawn_z_max;
    double accel_max;         /* a_max: acceleration for |u| = 1                     */
    double v_max;             /* speed limit                                         */
    double drag;              /* c_d: linear drag rate against the air (1/s)        */
    double wind_x;            /* mean wind                                           */
    double wind_y;
    double wind_amp;          /* horizontal wind wave amplitude at the ceiling       */
    double wind_vert;         /* vertical wind amplitude                              */
    double wind_wavelength;   /* spatial period of the wind field                     */
    double wind_period;       /* temporal period of the wind field                    */
    double gust_sigma;        /* gust components uniform in [-sigma, sigma]          */
    double gust_vert;         /* vertical gust scale (fraction of sigma)              */
    double gust_mean;         /* mean gust duration (exponential)                     */
    double battery_idle;      /* battery drain per second at u = 0                    */
    double battery_thrust;    /* extra drain per second per |u|^2                     */
    double w_coverage;        /* reward weight of the coverage share                  */
    double w_energy;          /* reward weight of the energy used                     */
    double collision_penalty; /* reward penalty for a collision                       */
    double crash_penalty;     /* penalty for ground impact, leaving, empty battery   */
} seer_aircraft_config;

/* Per-UAV state (entity i = agent uav_i). */
typedef struct seer_aircraft_uav {
    double pos[3];
    double vel[3];
    double gust[3];       /* current gust (added to the wind)                  */
    double u[3];          /* commanded acceleration fraction for this step     */
    double gust_until;    /* time at which the next gust is drawn              */
    double battery;       /* in [0, 1]                                          */
    double battery_step;  /* battery when this step's action was applied       */
    double t_crash;       /* time of the in-flight crash (0 if none)           */
    uint32_t crashed;     /* 0 flying, 1 ground, 2 left the arena, 3 battery  */
    uint32_t substeps;    /* substeps integrated since reset                    */
    uint32_t rx_step;     /* messages accepted in the current/last step        */
    uint32_t tx_step;     /* messages sent in the current/last step            */
    uint64_t rx_total;    /* messages accepted since reset                      */
    uint64_t tx_total;    /* messages sent since reset                          */
    /* Neighbour table: slot q holds the newest message from sender nbr_id[q]
     * (structure of arrays: a message scans nbr_id only, an eviction nbr_t
     * and nbr_d2, so a UAV's hot state stays within a few cache lines). */
    uint32_t table_n;     /* slots in use                                       */
    uint32_t nbr_id[SEER_AIRCRAFT_MAX_TABLE];  /* sender entity              */
    uint32_t pad_;
    double nbr_t[SEER_AIRCRAFT_MAX_TABLE];     /* send time                  */
    double nbr_d2[SEER_AIRCRAFT_MAX_TABLE];    /* eviction key: squared distance
                                                  from the sender's position to
                                                  the receiver's published one */
    float nbr_pos[SEER_AIRCRAFT_MAX_TABLE][3]; /* sender position, velocity  */
    float nbr_vel[SEER_AIRCRAFT_MAX_TABLE][3]; /* (as sent, float32)         */
} seer_aircraft_uav;

extern const seer_model seer_model_aircraft;

#endif
