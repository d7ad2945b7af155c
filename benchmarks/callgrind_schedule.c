/*
 * callgrind_schedule.c -- the driver of benchmarks/callgrind_schedule.sh: the
 * serial executor running PHOLD (no work per event) for a fixed number of
 * steps, so that callgrind's instruction counts of the per-event path
 * (seer_schedule, the event loop) can be compared between two versions of
 * the runtime.  Prints the events handled and the seer_schedule calls.
 *
 * Usage: callgrind_schedule [steps] [entities]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "phold.h"
#include "seer_runtime.h"

int main(int argc, char **argv)
{
    const int steps = argc > 1 ? atoi(argv[1]) : 200;
    const uint32_t n = argc > 2 ? (uint32_t)atoi(argv[2]) : 256;
    seer_phold_config cfg = {.num_entities = n, .events_per_entity = 4, .remote = 0.5,
                             .mean = 1.0, .lookahead = 0.5, .work = 0, .step_duration = 4.0};
    seer_runtime_options o = {.num_instances = 1, .executor = SEER_EXECUTOR_SERIAL,
                              .threads = 1};
    seer_runtime *rt = NULL;
    char err[512];
    if (seer_runtime_create(&seer_model_phold, &cfg, sizeof cfg, &o, &rt, err, sizeof err) !=
        SEER_OK) {
        fprintf(stderr, "create: %s\n", err);
        return 2;
    }
    const uint64_t seed = 7;
    if (seer_runtime_reset(rt, &seed, NULL) != SEER_OK) {
        fprintf(stderr, "reset: %s\n", seer_runtime_error(rt));
        return 2;
    }
    seer_stats s0;
    seer_runtime_stats(rt, &s0);
    for (int k = 0; k < steps; k++)
        if (seer_runtime_step(rt, NULL) != SEER_OK) {
            fprintf(stderr, "step %d: %s\n", k, seer_runtime_error(rt));
            return 2;
        }
    seer_stats s1;
    seer_runtime_stats(rt, &s1);
    /* PHOLD schedules one event per event handled (and one per agent's act) */
    printf("events %llu steps %d entities %u\n", (unsigned long long)(s1.events - s0.events),
           steps, n);
    seer_runtime_destroy(rt);
    return 0;
}
