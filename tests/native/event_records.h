/*
 * event_records.h -- what the native tests of event memory's layout and of
 * the pool's alone stretches share (test_event_order.c,
 * test_event_relayout.c, test_pool_alone.c): a PHOLD runtime made with some
 * SEER_* variables set, its steps with a checksum of their outputs, and
 * walks of the free lists.  Included after the test's CHECK macro (which
 * counts its failures); two instances.
 */
#ifndef SEER_TEST_EVENT_RECORDS_H
#define SEER_TEST_EVENT_RECORDS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "events.h"
#include "phold.h"
#include "runtime.h"
#include "seer_runtime.h"

/* A variable set while a runtime is made (make_phold; value NULL: unset). */
typedef struct env_var {
    const char *name, *value;
} env_var;

/* PHOLD of `cfg` on `executor` and `threads` (more than the CPUs if need
 * be), two instances reset with seeds 11 and 12; the `n` variables of `env`
 * set while it is made (the runtime reads them then), unset after.  Exits
 * (status 2) where it cannot be made. */
static seer_runtime *make_phold(const seer_phold_config *cfg, int executor, uint32_t threads,
                                const env_var *env, size_t n)
{
    seer_runtime *rt = NULL;
    char err[512];
    seer_runtime_options o = {.num_instances = 2, .executor = executor, .threads = threads,
                              .flags = SEER_RT_OVERSUBSCRIBE};
    for (size_t k = 0; k < n; k++)
        if (env[k].value)
            setenv(env[k].name, env[k].value, 1);
    const int rc = seer_runtime_create(&seer_model_phold, cfg, sizeof *cfg, &o, &rt, err,
                                       sizeof err);
    for (size_t k = 0; k < n; k++)
        unsetenv(env[k].name);
    if (rc != SEER_OK) {
        fprintf(stderr, "create: %s\n", err);
        exit(2);
    }
    const uint64_t seeds[2] = {11, 12};
    if (seer_runtime_reset(rt, seeds, NULL) != SEER_OK) {
        fprintf(stderr, "reset: %s\n", seer_runtime_error(rt));
        exit(2);
    }
    return rt;
}

/* `steps` steps of both instances, the actions drawn from the step's index;
 * a checksum of the observations and rewards after each. */
static uint64_t run(seer_runtime *rt, int steps, uint64_t h)
{
    uint64_t at;
    (void)seer_runtime_step_index(rt, 0, &at);
    const seer_sizes *sz = seer_runtime_sizes(rt);
    const uint32_t A = sz->num_agents;
    for (int k = 0; k < steps; k++) {
        int32_t *act = seer_runtime_buffer(rt, SEER_BUF_ACTIONS);
        for (uint32_t a = 0; a < 2 * A; a++)
            act[a] = (int32_t)((7u * (uint32_t)(at + (uint64_t)k) + a) % (uint32_t)sz->action_n);
        if (seer_runtime_step(rt, NULL) != SEER_OK) {
            fprintf(stderr, "step: %s\n", seer_runtime_error(rt));
            exit(2);
        }
        const unsigned char *o = seer_runtime_buffer(rt, SEER_BUF_OBS);
        const unsigned char *r = seer_runtime_buffer(rt, SEER_BUF_REWARD);
        for (size_t j = 0; j < (size_t)2 * A * sz->obs_dim * 4; j++)
            h = (h ^ o[j]) * 1099511628211ull;
        for (size_t j = 0; j < (size_t)2 * A * 4; j++)
            h = (h ^ r[j]) * 1099511628211ull;
    }
    return h;
}

/* Records on a list; *ascending: each above the one before; *lowest (where
 * not NULL): the first one's address. */
static uint64_t walk(const seer_event *ev, int *ascending, uintptr_t *lowest)
{
    uint64_t n = 0;
    *ascending = 1;
    if (lowest)
        *lowest = ev ? (uintptr_t)ev : UINTPTR_MAX;
    for (const seer_event *prev = NULL; ev; prev = ev, ev = ev->next_free, n++)
        if (prev && (uintptr_t)ev <= (uintptr_t)prev)
            *ascending = 0;
    return n;
}

/* Every free record (the workers' lists, the reserve) and every pending one
 * add up to the records allocated, each counted once. */
static void check_conserved(seer_runtime *rt, const char *when)
{
    pthread_mutex_lock(&rt->mem.lock);
    uint64_t free_n = 0;
    int asc;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        /* each worker's two lists: its events' and those between partitions */
        const seer_event_pool *lists[2] = {&rt->pool.workers[t].pool, &rt->pool.workers[t].cross};
        for (int j = 0; j < 2; j++) {
            const uint64_t n = walk(lists[j]->free, &asc, NULL);
            CHECK(n == lists[j]->nfree, "%s: worker %u list %d lists %llu, counts %llu", when, t,
                  j, (unsigned long long)n, (unsigned long long)lists[j]->nfree);
            free_n += n;
        }
    }
    uint64_t r = 0;
    for (uint32_t h = 0; h < rt->mem.nhomes; h++) {
        const uint64_t n = walk(rt->mem.homes[h].free, &asc, NULL);
        CHECK(n == rt->mem.homes[h].n, "%s: reserve %u lists %llu, counts %llu", when, h,
              (unsigned long long)n, (unsigned long long)rt->mem.homes[h].n);
        r += n;
    }
    CHECK(r == seer_event_reserved(rt), "%s: the reserves hold %llu, count %llu", when,
          (unsigned long long)r, (unsigned long long)seer_event_reserved(rt));
    const uint64_t pool_events = rt->mem.pool_events;
    pthread_mutex_unlock(&rt->mem.lock);
    uint64_t pending = 0;
    for (uint32_t i = 0; i < 2; i++) {
        uint64_t p;
        (void)seer_runtime_pending_events(rt, i, &p);
        pending += p;
    }
    CHECK(free_n + r + pending == pool_events,
          "%s: %llu free + %llu in reserve + %llu pending != %llu records", when,
          (unsigned long long)free_n, (unsigned long long)r, (unsigned long long)pending,
          (unsigned long long)pool_events);
}

/* Records on `ev`'s list whose block is homed elsewhere than `home`. */
__attribute__((unused)) static uint64_t strangers(const seer_runtime *rt, const seer_event *ev, uint32_t home)
{
    uint64_t n = 0;
    for (; ev; ev = ev->next_free)
        n += seer_event_block_of(rt, ev)->home != home;
    return n;
}

#endif /* SEER_TEST_EVENT_RECORDS_H */
