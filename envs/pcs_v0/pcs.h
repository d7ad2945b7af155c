/*
 * PCS: the Personal Communication Service benchmark (cellular channel
 * management) as a seer model.  README.md (beside this file) states the
 * dynamics, every formula, the RL face and classic mode.
 */
#ifndef SEER_PCS_H
#define SEER_PCS_H

#include <stdbool.h>
#include <stdint.h>

#include "seer.h"

/* Configuration (validated by the model's describe; every field is named in
 * its error messages).  Times are in simulated minutes. */
typedef struct seer_pcs_config {
    uint32_t width;              /* W: cells per row (torus)                      */
    uint32_t height;             /* H: rows                                      */
    uint32_t channels;           /* C: channels per cell                          */
    uint32_t portables_per_cell; /* P: portables that start in each cell          */
    uint32_t max_guard;          /* G: actions are Discrete(G + 1), G <= C        */
    bool classic;                /* the exact ROSS-Models dynamics                */
    double move_mean;            /* mean time between moves (+inf: no moves)      */
    double next_call_mean;       /* mean idle time before the next call attempt  */
    double call_time_mean;       /* mean call duration                            */
    double handoff_latency;      /* h > 0: latency of moves and reports (= L)     */
    double report_interval;      /* load-report period (0: reports off)           */
    double step_minutes;         /* D: simulated minutes per step                 */
    double handoff_weight;       /* reward weight of a dropped handoff            */
    double shared_reward;        /* s in [0, 1]: weight of the network-wide term  */
    double profile_amplitude;    /* daily call-rate profile amplitude in [0, 1)   */
} seer_pcs_config;

/* Per-cell state (public so tests and ports can read it). */
typedef struct seer_pcs_cell {
    /* cumulative counters since reset */
    uint64_t call_attempts;    /* new calls + busy lines (classic definition)   */
    uint64_t channel_blocks;   /* new calls refused (no channel, or guard)       */
    uint64_t busy_lines;       /* call attempts while the portable was on a call */
    uint64_t handoff_blocks;   /* handoffs dropped: no free channel on arrival   */
    uint64_t handoff_attempts; /* portables arriving while on a call             */
    uint64_t guard_blocks;     /* new calls refused while a channel was free     */
    uint64_t calls_completed;  /* calls that ended normally                      */
    uint64_t moves_in;         /* portable arrivals (every move event)           */
    uint64_t reports_received; /* load reports received                          */
    uint64_t clcg4[4];         /* classic: this cell's CLCG4 stream              */
    double report_time[4];     /* send time of the latest report per direction
                                  (-1: none yet)                                 */
    uint32_t report_busy[4];   /* busy channels in that report                   */
    uint32_t free_channels;    /* free (normal) channels                         */
    uint32_t reserve_channels; /* classic: free reserve channels (always 0)      */
    uint32_t guard;            /* guard channels in force (the last action)      */
    uint32_t report_ticks;     /* load reports sent so far (ticks)               */
    /* counters of the current step (reset by act) */
    uint32_t step_attempts;    /* new-call attempts (busy lines excluded)        */
    uint32_t step_blocks;      /* new calls refused                              */
    uint32_t step_handoffs;    /* handoff attempts (arrivals on a call)          */
    uint32_t step_drops;       /* handoffs dropped                               */
} seer_pcs_cell;

/* Observation layout (obs_dim = 14, or 16 with the daily profile). */
enum {
    PCS_OBS_BUSY = 0,
    PCS_OBS_GUARD = 1,
    PCS_OBS_ATTEMPTS = 2,
    PCS_OBS_BLOCKS = 3,
    PCS_OBS_HANDOFFS = 4,
    PCS_OBS_DROPS = 5,
    PCS_OBS_NB_BUSY = 6, /* 4 values, directions 0..3 */
    PCS_OBS_NB_AGE = 10, /* 4 values, directions 0..3 */
    PCS_OBS_DAY_SIN = 14,
    PCS_OBS_DAY_COS = 15,
    PCS_OBS_BASE_DIM = 14
};

/* Global state: PCS_STATE_PER_CELL values per cell, then sin and cos of the
 * time of day. */
enum { PCS_STATE_PER_CELL = 6 };

/* Info values per cell, in this order (see pcs.c: pcs_info_names). */
enum { PCS_INFO_DIM = 11 };

#define PCS_DAY_MINUTES 1440.0

extern const seer_model seer_model_pcs;

#endif
