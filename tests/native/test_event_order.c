/*
 * test_event_order: the free event records put back in address order
 * (events.c), from C, under the sanitizers (run_sanitizers.sh).
 *
 * PHOLD on 3 threads, switched to the serial executor: once it has run
 * SEER_ORDER_AFTER_STEPS steps there (not before: a probe's visit), every
 * free record is on worker 0's list, none is lost or listed twice, and the
 * outputs are the serial executor's bit for bit.  A serial reset leaves
 * worker 0's list and the reserves in address order.  A list whose count is
 * not what it holds is left as it is.
 *
 * Homes (events.c): on a pool, every free list and reserve holds only
 * records of its own worker's blocks between calls, after steps on every
 * thread as after steps capped to the calling thread (the records of the
 * other threads' partitions go back to their homes when the call ends),
 * and no record is away.  seer_event_order_pool_host puts each of a
 * pool's lists and reserves in address order on its own (nothing moves
 * between them); a pool orders them at the first step after a reset and
 * SEER_ORDER_AFTER_STEPS steps after a switch, where a step's records
 * outgrow the cache (always with SEER_ORDER_POOLS=1, never with 0), its
 * outputs the same either way.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "phold.h"
#include "runtime.h"
#include "seer_runtime.h"

static const seer_phold_config cfg = {.num_entities = 61, .events_per_entity = 4,
                                      .remote = 0.7, .mean = 0.6, .lookahead = 0.3,
                                      .work = 0, .step_duration = 2.0};

static int fails = 0;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "test_event_order:%d: ", __LINE__);                              \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

#include "event_records.h"

/* A runtime of PHOLD, reset; no alone stretches (company.c): their caller
 * keeps the records it frees, whatever their homes, and asks for an
 * ordering when they end -- where the machine's timing says
 * (test_pool_alone.c tests them). */
static seer_runtime *make(int executor, uint32_t threads)
{
    const env_var env[] = {{"SEER_POOL_ALONE", "0"}};
    return make_phold(&cfg, executor, threads, env, 1);
}

/* Free records on the lists of workers 1.. (under the reserve's lock: a
 * worker that woke late for the last call may be restocking). */
static uint64_t others_free(seer_runtime *rt)
{
    uint64_t n = 0;
    pthread_mutex_lock(&rt->mem.lock);
    for (uint32_t t = 1; t < rt->pool.nthreads; t++) {
        const seer_worker *w = &rt->pool.workers[t];
        n += w->pool.nfree + (w->pool.free != NULL) + w->cross.nfree + (w->cross.free != NULL);
    }
    pthread_mutex_unlock(&rt->mem.lock);
    return n;
}

/* Between calls of a pool that never left it: every list and reserve holds
 * its home's records only, nothing is away, every block's home is a worker
 * of the pool. */
static void check_homes(seer_runtime *rt, const char *when)
{
    pthread_mutex_lock(&rt->mem.lock);
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        const seer_worker *w = &rt->pool.workers[t];
        CHECK(strangers(rt, w->pool.free, t) == 0 && strangers(rt, w->cross.free, t) == 0,
              "%s: worker %u's lists hold %llu + %llu records of other homes", when, t,
              (unsigned long long)strangers(rt, w->pool.free, t),
              (unsigned long long)strangers(rt, w->cross.free, t));
        CHECK(w->away_nh == 0, "%s: worker %u keeps records of %u homes away", when, t,
              w->away_nh);
        CHECK(strangers(rt, rt->mem.homes[t].free, t) == 0,
              "%s: reserve %u holds records of other homes", when, t);
    }
    for (size_t k = 0; k < rt->mem.nchunks; k++) {
        const seer_event_block *b = seer_event_chunk_block(&rt->mem.chunks[k]);
        CHECK(b->home < rt->pool.nthreads, "%s: block %zu homed to worker %u of %u", when, k,
              b->home, rt->pool.nthreads);
    }
    pthread_mutex_unlock(&rt->mem.lock);
}

int main(void)
{
    /* steps on 3 threads until the pool's workers hold free records: on a
     * loaded host the caller can handle every partition of 40 steps (the
     * workers woke late: 1 of 4 sanitizer runs beside other work), so more
     * are run, up to 1000 */
    seer_runtime *rt = make(SEER_EXECUTOR_PARALLEL, 3);
    int pre = 0;
    uint64_t h = 1;
    do {
        h = run(rt, 40, h);
        pre += 40;
    } while (others_free(rt) == 0 && pre < 1000);
    CHECK(others_free(rt) > 0, "the pool's workers hold no free record after %d steps", pre);
    /* the serial executor from the start: what the switched runtime must
     * give, 40 steps after the reset below and the ordering's */
    seer_runtime *ref = make(SEER_EXECUTOR_SERIAL, 1);
    const uint64_t want = run(ref, 40 + SEER_ORDER_AFTER_STEPS, 1);
    seer_runtime_destroy(ref);
    check_conserved(rt, "after 40 steps on 3 threads");
    check_homes(rt, "after 40 steps on 3 threads");
    /* the caller alone handles every partition (a thread budget of one):
     * the other threads' records go home all the same */
    if (seer_runtime_set_call_threads(rt, 1) != SEER_OK)
        return 2;
    h = run(rt, 3, h);
    check_homes(rt, "after 3 steps capped to the caller");
    check_conserved(rt, "after 3 steps capped to the caller");
    if (seer_runtime_set_call_threads(rt, 0) != SEER_OK)
        return 2;
    h = run(rt, 2, h);
    check_homes(rt, "after 2 more steps on 3 threads");
    /* a parallel reset (its clearing runs on the pool) */
    {
        const uint64_t s2[2] = {11, 12};
        if (seer_runtime_reset(rt, s2, NULL) != SEER_OK)
            return 2;
        check_homes(rt, "after a reset on 3 threads");
        h = run(rt, 40, 1);
    }
    /* each of the pool's lists in address order, on its own */
    {
        uint64_t counts[16];
        uint32_t nl = 0;
        for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
            counts[nl++] = rt->pool.workers[t].pool.nfree;
            counts[nl++] = rt->pool.workers[t].cross.nfree;
        }
        seer_event_order_pool_host(rt);
        int asc;
        nl = 0;
        for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
            const seer_event_pool *l[2] = {&rt->pool.workers[t].pool, &rt->pool.workers[t].cross};
            for (int j = 0; j < 2; j++, nl++) {
                const uint64_t n = walk(l[j]->free, &asc, NULL);
                CHECK(asc && n == counts[nl],
                      "worker %u list %d after seer_event_order_pool_host: %s, %llu of %llu", t,
                      j, asc ? "ascending" : "not ascending", (unsigned long long)n,
                      (unsigned long long)counts[nl]);
            }
        }
        for (uint32_t r = 0; r < rt->mem.nhomes; r++) {
            (void)walk(rt->mem.homes[r].free, &asc, NULL);
            CHECK(asc, "reserve %u is not in address order after seer_event_order_pool_host", r);
        }
        check_homes(rt, "after seer_event_order_pool_host");
        check_conserved(rt, "after seer_event_order_pool_host");
        /* records on another worker's list (as after the serial executor's
         * steps, which send nothing home) go home: five of the other
         * workers' records onto worker 0's list or, where they hold fewer
         * (on a loaded host the caller can handle every partition of the
         * steps since the reset: 1 of 3 sanitizer runs beside a test suite
         * found worker 1's list short), five of worker 0's onto worker 1's */
        seer_worker *w0 = &rt->pool.workers[0], *w1 = &rt->pool.workers[1];
        seer_worker *from = NULL, *to = w0;
        for (uint32_t t = 1; t < rt->pool.nthreads && !from; t++)
            if (walk(rt->pool.workers[t].pool.free, &asc, NULL) >= 5)
                from = &rt->pool.workers[t];
        if (!from) {
            from = w0;
            to = w1;
        }
        for (int k = 0; k < 5 && from->pool.free; k++) {
            seer_event *ev = from->pool.free;
            from->pool.free = ev->next_free;
            from->pool.nfree--;
            ev->next_free = to->pool.free;
            to->pool.free = ev;
            to->pool.nfree++;
        }
        CHECK(strangers(rt, to->pool.free, (uint32_t)(to - rt->pool.workers)) == 5,
              "the test moved no record");
        seer_event_order_pool_host(rt);
        check_homes(rt, "after seer_event_order_pool_host with records away from home");
        check_conserved(rt, "after seer_event_order_pool_host with records away from home");
    }
    const uint64_t others = others_free(rt);

    if (seer_runtime_set_executor(rt, SEER_EXECUTOR_SERIAL, 1) != SEER_OK) {
        fprintf(stderr, "set_executor: %s\n", seer_runtime_error(rt));
        return 2;
    }
    /* a probe's visit: nothing is ordered yet */
    h = run(rt, SEER_ORDER_AFTER_STEPS - 1, h);
    CHECK(others_free(rt) == others, "free records moved before %u serial steps", SEER_ORDER_AFTER_STEPS);
    /* then all of them go to the serial executor's list */
    h = run(rt, 1, h);
    CHECK(others_free(rt) == 0, "the pool's workers keep free records after the ordering");
    CHECK(rt->pool.workers[0].cross.nfree == 0 && !rt->pool.workers[0].cross.free,
          "worker 0 keeps records between partitions after the ordering");
    pthread_mutex_lock(&rt->mem.lock);
    const uint64_t kept = seer_event_reserved(rt);
    pthread_mutex_unlock(&rt->mem.lock);
    CHECK(kept == 0, "the reserve keeps %llu records", (unsigned long long)kept);
    CHECK(rt->mem.order_in == 0, "an ordering is still due");
    check_conserved(rt, "after the switch to serial");
    CHECK(h == want, "the outputs differ from the serial executor's after the ordering");

    /* ordered by hand (the step scrambled the head): worker 0's list ascends */
    seer_event_order_all_host(rt);
    int asc;
    (void)walk(rt->pool.workers[0].pool.free, &asc, NULL);
    CHECK(asc, "worker 0's list is not in address order after seer_event_order_all_host");
    check_conserved(rt, "after seer_event_order_all_host");

    /* a serial reset: worker 0's list and the reserve in address order */
    const uint64_t seeds[2] = {5, 6};
    if (seer_runtime_reset(rt, seeds, NULL) != SEER_OK)
        return 2;
    (void)walk(rt->pool.workers[0].pool.free, &asc, NULL);
    CHECK(asc, "worker 0's list is not in address order after a serial reset");
    for (uint32_t r = 0; r < rt->mem.nhomes; r++) {
        (void)walk(rt->mem.homes[r].free, &asc, NULL);
        CHECK(asc, "reserve %u is not in address order after a serial reset", r);
    }
    check_conserved(rt, "after a serial reset");

    /* a count that is not what the list holds: nothing moves */
    (void)run(rt, 3, 0);
    seer_worker *w0 = &rt->pool.workers[0];
    seer_event *head = w0->pool.free;
    const uint64_t n0 = w0->pool.nfree;
    w0->pool.nfree = n0 + 1;
    seer_event_order_all_host(rt);
    CHECK(w0->pool.free == head && w0->pool.nfree == n0 + 1, "a miscounted list was reordered");
    w0->pool.nfree = n0;
    check_conserved(rt, "after the miscounted list");
    seer_runtime_destroy(rt);

    /* a pool orders its lists at the first step after a reset (its
     * budget allowing), and SEER_ORDER_AFTER_STEPS steps after a switch, not
     * before (nor ever with SEER_ORDER_POOLS=0); the outputs are the same */
    {
        setenv("SEER_ORDER_POOLS", "1", 1); /* whatever the records and caches */
        seer_runtime *a = make(SEER_EXECUTOR_PARALLEL, 2);
        unsetenv("SEER_ORDER_POOLS");
        CHECK(a->mem.ordered_ns == 0, "a pool ordered its lists before a step");
        uint64_t ha = run(a, 1, 1);
        const uint64_t first = a->mem.ordered_ns;
        CHECK(first != 0 && a->mem.order_cost_ns != 0,
              "a pool did not order its lists at the first step after a reset");
        if (seer_runtime_set_executor(a, SEER_EXECUTOR_PARALLEL, 2) != SEER_OK)
            return 2;
        ha = run(a, SEER_ORDER_AFTER_STEPS - 1, ha);
        CHECK(a->mem.ordered_ns == first, "a pool ordered its lists before %u steps after a switch",
              SEER_ORDER_AFTER_STEPS);
        ha = run(a, 8, ha);
        CHECK(a->mem.ordered_ns != first, "a pool did not order its lists %u steps after a switch",
              SEER_ORDER_AFTER_STEPS);
        check_homes(a, "after a pool's ordering");
        check_conserved(a, "after a pool's ordering");
        setenv("SEER_ORDER_POOLS", "0", 1);
        seer_runtime *b = make(SEER_EXECUTOR_PARALLEL, 2);
        unsetenv("SEER_ORDER_POOLS");
        const uint64_t hb = run(b, SEER_ORDER_AFTER_STEPS + 8, 1);
        CHECK(b->mem.ordered_ns == 0, "SEER_ORDER_POOLS=0: a pool ordered its lists");
        CHECK(ha == hb, "the outputs differ with and without the pool's ordering");
        seer_runtime *c = make(SEER_EXECUTOR_SERIAL, 1);
        CHECK(run(c, SEER_ORDER_AFTER_STEPS + 8, 1) == ha,
              "the outputs differ from the serial executor's with the pool's ordering");
        /* by default, only where a step's records (a thread's share)
         * outgrow a quarter of the cache */
        seer_runtime *d = make(SEER_EXECUTOR_PARALLEL, 2);
        seer_runtime *e = make(SEER_EXECUTOR_PARALLEL, 2);
        d->mem.cache_bytes = UINT64_MAX;
        e->mem.cache_bytes = 1;
        CHECK(run(d, SEER_ORDER_AFTER_STEPS + 8, 1) == ha && run(e, SEER_ORDER_AFTER_STEPS + 8, 1) == ha,
              "the outputs differ with the cache's size");
        CHECK(d->mem.ordered_ns == 0, "a pool whose records fit the cache ordered its lists");
        CHECK(e->mem.ordered_ns != 0, "a pool whose records outgrow the cache did not order them");
        seer_runtime_destroy(a);
        seer_runtime_destroy(b);
        seer_runtime_destroy(c);
        seer_runtime_destroy(d);
        seer_runtime_destroy(e);
    }

    if (fails) {
        fprintf(stderr, "test_event_order: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_event_order: ok\n");
    return 0;
}
