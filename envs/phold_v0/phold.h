/* PHOLD: the standard parallel discrete-event benchmark, as a seer model. */
#ifndef SEER_PHOLD_H
#define SEER_PHOLD_H

#include <stdint.h>

#include "seer.h"

typedef struct seer_phold_config {
    uint32_t num_entities;      /* entities (each one an agent)                 */
    uint32_t events_per_entity; /* events each entity starts with               */
    double remote;              /* probability that an event goes to a random entity */
    double mean;                /* mean of the exponential part of each delay   */
    double lookahead;           /* L: new events at t + L + scale * Exp(mean)    */
    uint32_t work;              /* floating-point loop iterations per event      */
    double step_duration;       /* D: simulated time per step                    */
} seer_phold_config;

/* Per-entity state (public so tests can read checksums). */
typedef struct seer_phold_entity {
    uint64_t checksum;     /* hash chain over every event handled            */
    uint64_t handled;      /* events handled since reset                      */
    uint64_t handled_step; /* events handled in the current step              */
    uint64_t remote_in;    /* events received from other entities             */
    double acc;            /* result of the floating-point work               */
    double scale;          /* delay scale set by the last action              */
} seer_phold_entity;

extern const seer_model seer_model_phold;

#endif
