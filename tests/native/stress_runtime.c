/*
 * Stress test of the whole runtime through its host API: PHOLD on the
 * parallel executor with many threads (oversubscribed) and a batch, against
 * the serial executor; every step's outputs and entity states must be equal.
 * Many events cross partitions (remote = 0.6), so the per-thread outboxes
 * and their merges into the partition queues carry much of the traffic;
 * the pool grows mid-run and the executor switches back and forth.
 * Built under ThreadSanitizer and AddressSanitizer+UBSan by run_sanitizers.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phold.h"
#include "seer_runtime.h"

#define B 3
#define STEPS 60

static seer_runtime *make(int executor, uint32_t threads, const seer_phold_config *cfg)
{
    seer_runtime *rt = NULL;
    char err[512];
    seer_runtime_options o = {.num_instances = B, .executor = executor, .threads = threads,
                              .flags = SEER_RT_OVERSUBSCRIBE};
    if (seer_runtime_create(&seer_model_phold, cfg, sizeof *cfg, &o, &rt, err, sizeof err) !=
        SEER_OK) {
        fprintf(stderr, "create: %s\n", err);
        exit(2);
    }
    return rt;
}

int main(void)
{
    seer_phold_config cfg = {.num_entities = 97, .events_per_entity = 3, .remote = 0.6,
                             .mean = 0.7, .lookahead = 0.3, .work = 20, .step_duration = 2.0};
    uint64_t seeds[B] = {11, 12, 13};
    int fails = 0;
    const uint32_t threads[] = {2, 4, 7};
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        seer_runtime *s = make(SEER_EXECUTOR_SERIAL, 1, &cfg);
        seer_runtime *p = make(SEER_EXECUTOR_PARALLEL, threads[ti], &cfg);
        /* Trace half of the runs: the host reads every worker's records
         * between calls, which TSan checks for races with the workers. */
        if (ti % 2 == 0 && seer_runtime_trace(p, 2048) != SEER_OK)
            return 2;
        if (seer_runtime_reset(s, seeds, NULL) || seer_runtime_reset(p, seeds, NULL)) {
            fprintf(stderr, "reset failed\n");
            return 2;
        }
        size_t n = (size_t)B * cfg.num_entities;
        size_t state_bytes = cfg.num_entities * sizeof(seer_phold_entity);
        unsigned char *ss = malloc(state_bytes), *ps = malloc(state_bytes);
        uint8_t mask[B] = {1, 1, 1};
        for (int k = 0; k < STEPS; k++) {
            int32_t *as = seer_runtime_buffer(s, SEER_BUF_ACTIONS);
            int32_t *ap = seer_runtime_buffer(p, SEER_BUF_ACTIONS);
            for (size_t i = 0; i < n; i++)
                as[i] = ap[i] = (int32_t)((i * 7 + (size_t)k) % 3);
            mask[1] = (uint8_t)(k % 3 != 0); /* instance 1 sits out some steps */
            if (seer_runtime_step(s, mask) || seer_runtime_step(p, mask)) {
                fprintf(stderr, "step failed: %s %s\n", seer_runtime_error(s),
                        seer_runtime_error(p));
                return 2;
            }
            uint64_t traced = 0;
            /* every worker of the pool, parked ones too: a late worker may
             * take a chunk of the next call (counts are 0 past the pool) */
            for (uint32_t t = 0; t < 64; t++) {
                const seer_trace_rec *r = seer_runtime_trace_records(p, t);
                uint64_t c = seer_runtime_trace_count(p, t);
                for (uint64_t j = 0; j < c; j++)
                    traced += r[j].t1_ns >= r[j].t0_ns;
            }
            if (ti % 2 == 0 && traced == 0)
                fails++;
            seer_runtime_trace_clear(p);
            if (k == STEPS / 2 && seer_runtime_set_threads(p, threads[ti] + 1)) {
                fprintf(stderr, "set_threads failed\n");
                return 2;
            }
            /* Switch executors now and then: pending events migrate between
             * the serial executor's per-instance queue and the parallel
             * executor's partition queues (what STPA does). */
            if (k % 7 == 3 && seer_runtime_set_executor(p, SEER_EXECUTOR_SERIAL, 1)) {
                fprintf(stderr, "set_executor(serial) failed: %s\n", seer_runtime_error(p));
                return 2;
            }
            if (k % 7 == 5 &&
                seer_runtime_set_executor(p, SEER_EXECUTOR_PARALLEL, threads[ti] + (k & 1))) {
                fprintf(stderr, "set_executor(parallel) failed: %s\n", seer_runtime_error(p));
                return 2;
            }
            if (memcmp(seer_runtime_buffer(s, SEER_BUF_OBS), seer_runtime_buffer(p, SEER_BUF_OBS),
                       n * 4 * sizeof(float)) != 0)
                fails++;
            for (uint32_t i = 0; i < B; i++) {
                seer_runtime_entity_states(s, i, ss);
                seer_runtime_entity_states(p, i, ps);
                if (memcmp(ss, ps, state_bytes) != 0)
                    fails++;
            }
        }
        seer_stats st;
        seer_runtime_stats(p, &st);
        printf("stress_runtime: threads=%u: %llu events, %llu windows, %s\n", threads[ti],
               (unsigned long long)st.events, (unsigned long long)st.windows,
               fails ? "MISMATCH" : "identical to serial");
        free(ss);
        free(ps);
        seer_runtime_destroy(s);
        seer_runtime_destroy(p);
    }
    return fails != 0;
}
