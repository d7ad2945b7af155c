/*
 * Stress test of the whole runtime through its host API: PHOLD on the
 * parallel and the optimistic executor with many threads (oversubscribed)
 * and a batch, against the serial executor; every step's outputs and entity
 * states must be equal.
 *
 * Parallel: many events cross partitions (remote = 0.6), so the per-thread
 * outboxes and their merges into the partition queues carry much of the
 * traffic; the pool grows mid-run and the executor switches back and forth.
 * Every third step the call is capped to the calling thread
 * (seer_runtime_set_call_threads): it holds every partition and runs the
 * windows alone (parallel.c), and in the other steps an oversubscribed pool
 * does so where its other threads are late, and stops when one arrives.
 * The optimistic executor's capped steps (and phases no other worker came
 * for) run every slot on one thread (optimistic_phases.c).  Three steps in
 * eight come after a pause of three times the last step (a training loop's
 * policy between the calls): the pool keeps its workers off the caller's
 * CPU (company.c, seer_pool_keep_off_caller_host) and lets them go again after.
 *
 * Optimistic: B = 1 (the instance split across the threads: it speculates,
 * or runs conservative windows where the lookahead makes them wide) and
 * B = 3 (whole instances per thread on 2 threads, split on 4 and 7), on
 * configurations that speculate: a lookahead tiny next to the step, a
 * lookahead of 0, every event at a multiple of L (ties ordered by key),
 * and the nonmono test model (tests/models/nonmono: zero-delay events that
 * abandon the speculation, the step rerun serially).  Half the runs switch
 * executors mid-run (serial, optimistic and parallel in every order), half
 * are traced; the pool grows in every run; two runs cap the rollback logs
 * (seer_runtime_options.log_limit) so that speculation is abandoned.
 *
 * Built under ThreadSanitizer and AddressSanitizer+UBSan by run_sanitizers.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phold.h"
#include "seer_runtime.h"

/* the test model with non-monotone zero-delay events (static functions and
 * its model table: one translation unit with this test) */
#include "../models/nonmono/nonmono.c"

#define MAX_B 3

/* executor switches mid-run */
enum {
    SW_NONE,
    SW_SERIAL_PARALLEL, /* serial <-> parallel */
    SW_ALL              /* serial, optimistic and parallel, every transition */
};

typedef struct plan {
    const char *name;
    const seer_model *model;
    const void *cfg;
    size_t cfg_size;
    uint32_t nb;
    int executor;
    uint32_t threads;
    int traced;
    int switches;
    uint64_t log_limit; /* 0: the default */
    int steps;
} plan;

static seer_runtime *make(const plan *p, int executor, uint32_t threads)
{
    seer_runtime *rt = NULL;
    char err[512];
    seer_runtime_options o = {.num_instances = p->nb, .executor = executor, .threads = threads,
                              .flags = SEER_RT_OVERSUBSCRIBE, .log_limit = p->log_limit};
    if (seer_runtime_create(p->model, p->cfg, p->cfg_size, &o, &rt, err, sizeof err) !=
        SEER_OK) {
        fprintf(stderr, "create (%s): %s\n", p->name, err);
        exit(2);
    }
    return rt;
}

static const char *executor_name(int e)
{
    return e == SEER_EXECUTOR_SERIAL ? "serial" : e == SEER_EXECUTOR_PARALLEL ? "parallel"
                                                                              : "optimistic";
}

/* Switch p's executor before step k (SW_ALL): every 5 steps to the next of
 * a cycle holding every transition; the pool size alternates. */
static int switch_all(seer_runtime *p, const plan *pl, int k, double lookahead)
{
    static const int cycle[6] = {SEER_EXECUTOR_SERIAL,   SEER_EXECUTOR_OPTIMISTIC,
                                 SEER_EXECUTOR_PARALLEL, SEER_EXECUTOR_SERIAL,
                                 SEER_EXECUTOR_PARALLEL, SEER_EXECUTOR_OPTIMISTIC};
    if (k % 5 != 4)
        return 0;
    int ex = cycle[(k / 5) % 6];
    const uint32_t th = ex == SEER_EXECUTOR_SERIAL ? 1 : pl->threads + (uint32_t)((k / 5) & 1);
    if (ex == SEER_EXECUTOR_PARALLEL && !(lookahead > 0.0)) {
        /* the parallel executor needs L > 0: refused, nothing changes */
        const int before = seer_runtime_executor(p);
        const uint32_t bth = seer_runtime_threads(p);
        if (seer_runtime_set_executor(p, ex, th) != SEER_E_EXECUTOR ||
            seer_runtime_executor(p) != before || seer_runtime_threads(p) != bth) {
            fprintf(stderr, "%s: set_executor(parallel) with L = 0 was not refused cleanly\n",
                    pl->name);
            return 1;
        }
        ex = SEER_EXECUTOR_OPTIMISTIC;
    }
    if (seer_runtime_set_executor(p, ex, th) != SEER_OK) {
        fprintf(stderr, "%s: set_executor(%s, %u) failed: %s\n", pl->name, executor_name(ex),
                th, seer_runtime_error(p));
        exit(2);
    }
    return 0;
}

/* Run plan pl against the serial executor; returns the mismatches. */
static int run_plan(const plan *pl, seer_stats *st)
{
    seer_runtime *s = make(pl, SEER_EXECUTOR_SERIAL, 1);
    seer_runtime *p = make(pl, pl->executor, pl->threads);
    const seer_sizes *sz = seer_runtime_sizes(s);
    int fails = 0;
    /* Trace half of the runs: the host reads every worker's records
     * between calls, which TSan checks for races with the workers. */
    if (pl->traced && seer_runtime_trace(p, 2048) != SEER_OK)
        exit(2);
    uint64_t seeds[MAX_B] = {11, 12, 13};
    if (seer_runtime_reset(s, seeds, NULL) || seer_runtime_reset(p, seeds, NULL)) {
        fprintf(stderr, "%s: reset failed\n", pl->name);
        exit(2);
    }
    const size_t A = (size_t)pl->nb * sz->num_agents;
    const size_t state_bytes = (size_t)sz->num_entities * sz->entity_size;
    unsigned char *ss = malloc(state_bytes), *ps = malloc(state_bytes);
    uint64_t *se = malloc(sz->num_entities * sizeof *se);
    uint64_t *pe = malloc(sz->num_entities * sizeof *pe);
    if (!ss || !ps || !se || !pe)
        exit(2);
    uint8_t mask[MAX_B] = {1, 1, 1};
    uint64_t last_ns = 0; /* the last parallel step's wall time */
    for (int k = 0; k < pl->steps; k++) {
        if (k % 8 >= 2 && k % 8 <= 4 && last_ns) {
            /* the caller's work between calls: 3x the step (50 ms at most) */
            uint64_t ns = 3 * last_ns < 50000000u ? 3 * last_ns : 50000000u;
            struct timespec pause = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
            nanosleep(&pause, NULL);
        }
        int32_t *as = seer_runtime_buffer(s, SEER_BUF_ACTIONS);
        int32_t *ap = seer_runtime_buffer(p, SEER_BUF_ACTIONS);
        for (size_t i = 0; i < A; i++)
            as[i] = ap[i] = (int32_t)((i * 7 + (size_t)k) % 3);
        if (pl->nb > 1)
            mask[1] = (uint8_t)(k % 3 != 0); /* instance 1 sits out some steps */
        if (seer_runtime_set_call_threads(p, k % 3 == 1 ? 1u : 0u) != SEER_OK)
            exit(2);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (seer_runtime_step(s, mask) || seer_runtime_step(p, mask)) {
            fprintf(stderr, "%s: step %d failed: %s %s\n", pl->name, k, seer_runtime_error(s),
                    seer_runtime_error(p));
            exit(2);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        last_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
                  (uint64_t)t0.tv_nsec;
        uint64_t traced = 0;
        /* every worker of the pool, parked ones too: a late worker may
         * take a chunk of the next call (counts are 0 past the pool) */
        for (uint32_t t = 0; t < 64; t++) {
            const seer_trace_rec *r = seer_runtime_trace_records(p, t);
            uint64_t c = seer_runtime_trace_count(p, t);
            for (uint64_t j = 0; j < c; j++)
                traced += r[j].t1_ns >= r[j].t0_ns && r[j].kind <= SEER_TRACE_ROLLBACK;
        }
        if (pl->traced && traced == 0) {
            fprintf(stderr, "%s: step %d: no trace record\n", pl->name, k);
            fails++;
        }
        seer_runtime_trace_clear(p);
        if (k == pl->steps / 2 && seer_runtime_executor(p) != SEER_EXECUTOR_SERIAL &&
            seer_runtime_set_threads(p, pl->threads + 1)) {
            fprintf(stderr, "%s: set_threads failed\n", pl->name);
            exit(2);
        }
        /* Switch executors now and then: pending events migrate between
         * the serial executor's per-instance queue and the partition
         * queues (what STPA does). */
        if (pl->switches == SW_SERIAL_PARALLEL) {
            if (k % 7 == 3 && seer_runtime_set_executor(p, SEER_EXECUTOR_SERIAL, 1)) {
                fprintf(stderr, "set_executor(serial) failed: %s\n", seer_runtime_error(p));
                exit(2);
            }
            if (k % 7 == 5 &&
                seer_runtime_set_executor(p, SEER_EXECUTOR_PARALLEL, pl->threads + (k & 1))) {
                fprintf(stderr, "set_executor(parallel) failed: %s\n", seer_runtime_error(p));
                exit(2);
            }
        } else if (pl->switches == SW_ALL) {
            fails += switch_all(p, pl, k, sz->lookahead);
        }
        static const struct {
            int buf;
            size_t elem; /* bytes per agent and element */
        } outs[] = {{SEER_BUF_OBS, sizeof(float)},         {SEER_BUF_REWARD, sizeof(float)},
                    {SEER_BUF_TERMINATED, 1},              {SEER_BUF_TRUNCATED, 1},
                    {SEER_BUF_INFO, sizeof(double)}};
        int bad = 0;
        for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
            const size_t per = outs[o].buf == SEER_BUF_OBS    ? sz->obs_dim
                               : outs[o].buf == SEER_BUF_INFO ? sz->info_dim
                                                              : 1;
            bad |= memcmp(seer_runtime_buffer(s, outs[o].buf), seer_runtime_buffer(p, outs[o].buf),
                          A * per * outs[o].elem) != 0;
        }
        for (uint32_t i = 0; i < pl->nb; i++) {
            seer_runtime_entity_states(s, i, ss);
            seer_runtime_entity_states(p, i, ps);
            seer_runtime_entity_events(s, i, se);
            seer_runtime_entity_events(p, i, pe);
            bad |= memcmp(ss, ps, state_bytes) != 0 ||
                   memcmp(se, pe, sz->num_entities * sizeof *se) != 0;
        }
        if (bad) {
            fprintf(stderr, "%s: step %d differs from the serial executor\n", pl->name, k);
            fails++;
        }
    }
    seer_runtime_stats(p, st);
    free(ss);
    free(ps);
    free(se);
    free(pe);
    seer_runtime_destroy(s);
    seer_runtime_destroy(p);
    return fails;
}

int main(void)
{
    int fails = 0;
    const uint32_t threads[] = {2, 4, 7};
    seer_stats st;

    /* ---- the parallel executor --------------------------------------------------- */
    static const seer_phold_config windows = {.num_entities = 97, .events_per_entity = 3,
                                              .remote = 0.6, .mean = 0.7, .lookahead = 0.3,
                                              .work = 20, .step_duration = 2.0};
    for (size_t ti = 0; ti < 3; ti++) {
        const plan pl = {"parallel", &seer_model_phold, &windows, sizeof windows, 3,
                         SEER_EXECUTOR_PARALLEL, threads[ti], ti % 2 == 0, SW_SERIAL_PARALLEL,
                         0, 60};
        int f = run_plan(&pl, &st);
        /* deterministic: the capped steps on the parallel executor ran
         * their windows after the first alone */
        if (st.alone_windows == 0) {
            fprintf(stderr, "parallel threads=%u: no window ran alone\n", threads[ti]);
            f++;
        }
        fails += f;
        printf("stress_runtime: threads=%u: %llu events, %llu windows (%llu alone), %s\n",
               threads[ti], (unsigned long long)st.events, (unsigned long long)st.windows,
               (unsigned long long)st.alone_windows, f ? "MISMATCH" : "identical to serial");
    }

    /* ---- the optimistic executor ------------------------------------------------- */
    /* speculation: L far below the step (step > 256 L), many remote events */
    static const seer_phold_config tiny_l = {.num_entities = 61, .events_per_entity = 3,
                                             .remote = 0.9, .mean = 0.7, .lookahead = 1e-6,
                                             .work = 5, .step_duration = 2.0};
    /* speculation: L = 0 (the parallel executor refuses it) */
    static const seer_phold_config zero_l = {.num_entities = 61, .events_per_entity = 3,
                                             .remote = 0.6, .mean = 0.7, .lookahead = 0.0,
                                             .work = 5, .step_duration = 2.0};
    /* speculation: every event at a multiple of L (mean 0), ties ordered by
     * key; step = 257 L */
    static const seer_phold_config ties = {.num_entities = 6, .events_per_entity = 1,
                                           .remote = 0.8, .mean = 0.0, .lookahead = 2.0 / 257,
                                           .work = 0, .step_duration = 2.0};
    /* conservative windows on the optimistic executor (step <= 256 L) */
    static const seer_phold_config wide_l = {.num_entities = 61, .events_per_entity = 3,
                                             .remote = 0.6, .mean = 0.7, .lookahead = 0.3,
                                             .work = 5, .step_duration = 2.0};
    /* zero-delay events to entities below the source: abandoned speculation */
    static const nonmono_config nonmono = {.num_entities = 40, .mean = 0.25, .echo = 0.004,
                                           .step_duration = 1.0};
    /* the models and their steps; the rest of each plan is set per run */
#define MODEL(n, m, c, s) {.name = n, .model = m, .cfg = c, .cfg_size = sizeof *(c), .steps = s}
    static const plan cfgs[] = {
        MODEL("phold L=1e-6", &seer_model_phold, &tiny_l, 30),
        MODEL("phold L=0", &seer_model_phold, &zero_l, 30),
        /* lockstep chains: rollbacks by the hundred thousand (TSan's time) */
        MODEL("phold ties", &seer_model_phold, &ties, 3),
        MODEL("phold L=0.3", &seer_model_phold, &wide_l, 20),
        MODEL("nonmono", &nonmono_model, &nonmono, 30),
    };
#undef MODEL
    seer_stats sum = {0};
    unsigned run = 0;
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (uint32_t nb = 1; nb <= 3; nb += 2)
            for (size_t ti = 0; ti < 3; ti++, run++) {
                char name[96];
                const int traced = run & 1, sw = (run >> 1) & 1;
                snprintf(name, sizeof name, "optimistic %s B=%u threads=%u%s%s", cfgs[c].name, nb,
                         threads[ti], traced ? " traced" : "", sw ? " switching" : "");
                plan pl = cfgs[c];
                pl.name = name;
                pl.nb = nb;
                pl.executor = SEER_EXECUTOR_OPTIMISTIC;
                pl.threads = threads[ti];
                pl.traced = traced;
                pl.switches = sw ? SW_ALL : SW_NONE;
                int f = run_plan(&pl, &st);
                /* deterministic: one instance split over the threads, every
                 * third step capped to the caller, who ran its phases (or
                 * windows) alone */
                if (nb == 1 && st.alone_windows == 0) {
                    fprintf(stderr, "%s: no phase ran on one thread alone\n", name);
                    f++;
                }
                fails += f;
                printf("stress_runtime: %s: %llu events, %llu rollbacks (%llu handlings undone), "
                       "%llu anti-messages, %llu serial steps, log peak %llu KiB, %llu of %llu "
                       "phases alone, %s\n",
                       name, (unsigned long long)st.events, (unsigned long long)st.rollbacks,
                       (unsigned long long)st.events_rolled_back,
                       (unsigned long long)st.anti_messages,
                       (unsigned long long)st.serial_steps,
                       (unsigned long long)st.log_bytes_peak >> 10,
                       (unsigned long long)st.alone_windows, (unsigned long long)st.windows,
                       f ? "MISMATCH" : "identical to serial");
                sum.rollbacks += st.rollbacks;
                sum.events_rolled_back += st.events_rolled_back;
                sum.anti_messages += st.anti_messages;
                sum.serial_steps += st.serial_steps;
            }

    /* ---- the log limit: speculation abandoned, the steps run serially -------------- */
    /* 4 KiB: no slot gets a first chunk (every speculative step is
     * abandoned at its first event); 48 KiB: a chunk or so per slot, far
     * fewer records than a step's ~500 handlings (abandoned part way) */
    static const uint64_t limits[] = {4u << 10, 48u << 10};
    for (size_t li = 0; li < 2; li++) {
        char name[96];
        snprintf(name, sizeof name, "optimistic phold L=1e-6 B=1 threads=%zu log_limit=%llu KiB",
                 2 + li, (unsigned long long)limits[li] >> 10);
        const plan pl = {name, &seer_model_phold, &tiny_l, sizeof tiny_l, 1,
                         SEER_EXECUTOR_OPTIMISTIC, (uint32_t)(2 + li), (int)li, SW_NONE,
                         limits[li], 20};
        int f = run_plan(&pl, &st);
        /* deterministic: every step's speculation needs more log than
         * that, so at least the steps before the pool grows ran serially */
        if (st.serial_steps < (uint64_t)pl.steps / 2) {
            fprintf(stderr, "%s: only %llu serial steps\n", name,
                    (unsigned long long)st.serial_steps);
            f++;
        }
        fails += f;
        printf("stress_runtime: %s: %llu events, %llu rollbacks, %llu serial steps, log peak "
               "%llu KiB, %s\n",
               name, (unsigned long long)st.events, (unsigned long long)st.rollbacks,
               (unsigned long long)st.serial_steps, (unsigned long long)st.log_bytes_peak >> 10,
               f ? "MISMATCH" : "identical to serial");
    }
    printf("stress_runtime: optimistic, all runs: %llu rollbacks, %llu handlings undone, %llu "
           "anti-messages, %llu serial steps\n",
           (unsigned long long)sum.rollbacks, (unsigned long long)sum.events_rolled_back,
           (unsigned long long)sum.anti_messages, (unsigned long long)sum.serial_steps);
    return fails != 0;
}
