/*
 * test_event_relayout: pending events moved into address order
 * (seer_event_relayout_host, events_layout.c), from C, under the
 * sanitizers (run_sanitizers.sh).
 *
 * PHOLD, two instances.  On the serial executor a relayout puts every
 * pending event into the records of lowest address, in its queue's order,
 * instance after instance, and every free record after them on worker 0's
 * list in address order.  On a pool (parallel and optimistic executors,
 * 3 threads) each event goes into a record of its record's home, in
 * address order queue by queue, every home keeping its pending records'
 * count, the lists and reserves their homes' records only and the lists
 * their counts.  Nothing is lost or listed twice, and the outputs stay the
 * serial executor's bit for bit.  Where the free records and the pending ones do not make up every
 * record (a miscounted list), where the copy would outgrow an eighth of
 * memory_limit, or where a queue is broken, nothing moves.  The policy: after a serial reset of every
 * instance where the pending records outgrow the cache, its budget's time
 * after the last (not after a reset of some of them), and at a pool's
 * ordering (whenever with SEER_RELAYOUT=1, never with 0); at once after a
 * switch a controller times (seer_runtime_tidy_records), and not again
 * SEER_ORDER_AFTER_STEPS steps on.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "phold.h"
#include "runtime.h"
#include "seer_runtime.h"
#include "squeue.h"

static const seer_phold_config cfg = {.num_entities = 200, .events_per_entity = 4,
                                      .remote = 0.7, .mean = 0.6, .lookahead = 0.3,
                                      .work = 0, .step_duration = 2.0};

static int fails = 0;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "test_event_relayout:%d: ", __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

#include "event_records.h"

/* A runtime of PHOLD, reset; `relayout` as SEER_RELAYOUT says (NULL:
 * unset); no alone stretches (company.c): their caller keeps the records
 * it frees, whatever their homes, where the machine's timing says. */
static seer_runtime *make(int executor, uint32_t threads, const char *relayout)
{
    const env_var env[] = {{"SEER_RELAYOUT", relayout}, {"SEER_POOL_ALONE", "0"}};
    return make_phold(&cfg, executor, threads, env, 2);
}

/* Records of a queue, in its order, each checked against the last one
 * walked (ascending: *asc cleared where one is not above it) and its home
 * (wrong: counted where it is not `home`; UINT32_MAX: any). */
typedef struct walk_q {
    const seer_runtime *rt;
    uintptr_t last;
    int asc;
    uint32_t home;
    uint64_t n, wrong;
} walk_q;

static void walk_cb(void *arg, seer_event *ev)
{
    walk_q *w = arg;
    if ((uintptr_t)ev <= w->last)
        w->asc = 0;
    w->last = (uintptr_t)ev;
    w->n++;
    if (w->home != UINT32_MAX && seer_event_block_of(w->rt, ev)->home != w->home)
        w->wrong++;
}

/* Free records held by workers 1.. and the reserves. */
static uint64_t held_elsewhere(const seer_runtime *rt)
{
    uint64_t n = 0;
    for (uint32_t t = 1; t < rt->pool.nthreads; t++)
        n += rt->pool.workers[t].pool.nfree + rt->pool.workers[t].cross.nfree;
    return n + seer_event_reserved(rt);
}

/* The serial executor: pending events in the lowest records, queue by
 * queue in order, the free ones after them on worker 0's list (not checked
 * where `queues` is 0: a step ran since); every free record there. */
static void check_serial_layout(seer_runtime *rt, int queues, const char *when)
{
    walk_q w = {.rt = rt, .asc = 1, .home = UINT32_MAX};
    for (uint32_t i = 0; queues && i < rt->B; i++)
        seer_squeue_foreach_owner(&rt->inst[i].queue, walk_cb, &w);
    int asc;
    uintptr_t low;
    (void)walk(rt->pool.workers[0].pool.free, &asc, &low);
    CHECK(!queues || (w.n > 0 && w.asc),
          "%s: the pending events' records (%llu) do not ascend queue by queue", when,
          (unsigned long long)w.n);
    CHECK(!queues || asc, "%s: worker 0's list is not in address order", when);
    CHECK(!queues || low > w.last, "%s: a free record lies below a pending one", when);
    CHECK(held_elsewhere(rt) == 0, "%s: %llu free records are not on worker 0's list", when,
          (unsigned long long)held_elsewhere(rt));
    check_conserved(rt, when);
}

/* Pending records of a pool's queues in each home (counts[nhomes]). */
static void pending_homes(const seer_runtime *rt, uint64_t *counts)
{
    for (uint32_t h = 0; h < rt->mem.nhomes; h++)
        counts[h] = 0;
    for (uint32_t i = 0; i < rt->B; i++)
        for (uint32_t p = 0; p < rt->part.n; p++)
            for (uint32_t h = 0; h < rt->mem.nhomes; h++) {
                walk_q w = {.rt = rt, .asc = 1, .home = h};
                seer_squeue_foreach_owner(&rt->inst[i].parts[p], walk_cb, &w);
                counts[h] += w.n - w.wrong;
            }
}

/* Records of queue q in home h, in the queue's order: ascending? */
typedef struct walk_home {
    const seer_runtime *rt;
    uint32_t home;
    uintptr_t last;
    int asc;
} walk_home;

static void walk_home_cb(void *arg, seer_event *ev)
{
    walk_home *w = arg;
    if (seer_event_block_of(w->rt, ev)->home != w->home)
        return;
    if ((uintptr_t)ev <= w->last)
        w->asc = 0;
    w->last = (uintptr_t)ev;
}

/* A pool: each partition's events, home by home, in ascending records, the
 * records of one queue above those of the queues before it in each home
 * (not checked where `queues` is 0: steps ran since); every list and
 * reserve holds its home's records only. */
static void check_pool_layout(seer_runtime *rt, int queues, const char *when)
{
    const uint32_t np = rt->part.n, nt = rt->pool.nthreads;
    for (uint32_t h = 0; queues && h < rt->mem.nhomes; h++) {
        walk_home w = {.rt = rt, .home = h, .asc = 1};
        for (uint32_t i = 0; i < rt->B; i++)
            for (uint32_t p = 0; p < np; p++)
                seer_squeue_foreach_owner(&rt->inst[i].parts[p], walk_home_cb, &w);
        CHECK(w.asc, "%s: the pending records of home %u do not ascend queue by queue", when, h);
    }
    for (uint32_t t = 0; t < nt; t++) {
        const seer_worker *w = &rt->pool.workers[t];
        CHECK(strangers(rt, w->pool.free, t) == 0 && strangers(rt, w->cross.free, t) == 0 &&
                  strangers(rt, rt->mem.homes[t].free, t) == 0,
              "%s: worker %u's lists or reserve hold records of other homes", when, t);
    }
    check_conserved(rt, when);
}

/* A pool's relayout by hand: the layout, the lists' counts kept (as far as
 * their homes' records go); then the outputs against the serial
 * executor's. */
static void pool_case(int executor, const char *name, uint64_t want)
{
    char when[96];
    seer_runtime *rt = make(executor, 3, NULL);
    uint64_t h = run(rt, 20, 1);
    uint64_t counts[6], before_homes[3], after_homes[3];
    for (uint32_t t = 0; t < 3; t++) {
        counts[2 * t] = rt->pool.workers[t].pool.nfree;
        counts[2 * t + 1] = rt->pool.workers[t].cross.nfree;
    }
    pending_homes(rt, before_homes);
    snprintf(when, sizeof when, "%s, after a relayout", name);
    const uint64_t before = rt->mem.relayouts;
    CHECK(seer_event_relayout_host(rt) == 1 && rt->mem.relayouts == before + 1,
          "%s: the relayout did not move the events", name);
    check_pool_layout(rt, 1, when);
    /* every home keeps its pending records' count, every list its count */
    pending_homes(rt, after_homes);
    for (uint32_t t = 0; t < 3; t++) {
        CHECK(after_homes[t] == before_homes[t],
              "%s: home %u holds %llu pending events, held %llu", when, t,
              (unsigned long long)after_homes[t], (unsigned long long)before_homes[t]);
        CHECK(rt->pool.workers[t].pool.nfree == counts[2 * t] &&
                  rt->pool.workers[t].cross.nfree == counts[2 * t + 1],
              "%s: worker %u's lists hold %llu + %llu, held %llu + %llu", when, t,
              (unsigned long long)rt->pool.workers[t].pool.nfree,
              (unsigned long long)rt->pool.workers[t].cross.nfree,
              (unsigned long long)counts[2 * t], (unsigned long long)counts[2 * t + 1]);
    }
    h = run(rt, 20, h);
    CHECK(h == want, "%s: the outputs differ from the serial executor's after a relayout", name);
    seer_runtime_destroy(rt);
}

int main(void)
{
    /* the reference: the serial executor, never relaid */
    seer_runtime *ref = make(SEER_EXECUTOR_SERIAL, 1, "0");
    const uint64_t want = run(ref, 40, 1);
    CHECK(ref->mem.relayouts == 0, "SEER_RELAYOUT=0: a reset relaid the events");
    seer_runtime_destroy(ref);

    /* the serial executor, by hand after 20 steps */
    seer_runtime *rt = make(SEER_EXECUTOR_SERIAL, 1, "0");
    uint64_t h = run(rt, 20, 1);
    CHECK(seer_event_relayout_host(rt) == 1, "serial: the relayout did not move the events");
    check_serial_layout(rt, 1, "serial, after a relayout");
    h = run(rt, 20, h);
    CHECK(h == want, "serial: the outputs differ after a relayout");

    /* a count that is not what the list holds: nothing moves */
    {
        seer_worker *w0 = &rt->pool.workers[0];
        const uint64_t n0 = w0->pool.nfree;
        walk_q before = {.rt = rt, .asc = 1, .home = UINT32_MAX};
        seer_squeue_foreach_owner(&rt->inst[0].queue, walk_cb, &before);
        w0->pool.nfree = n0 + 1;
        CHECK(seer_event_relayout_host(rt) == 0, "a relayout moved events past a miscounted list");
        w0->pool.nfree = n0;
        walk_q after = {.rt = rt, .asc = 1, .home = UINT32_MAX};
        seer_squeue_foreach_owner(&rt->inst[0].queue, walk_cb, &after);
        CHECK(after.n == before.n && after.last == before.last,
              "the events moved past a miscounted list");
        check_conserved(rt, "after the miscounted list");
        /* nor where the copy would outgrow an eighth of memory_limit */
        const uint64_t limit = rt->memory_limit;
        rt->memory_limit = 8 * before.n * rt->event_stride;
        CHECK(seer_event_relayout_host(rt) == 0, "a relayout copied past memory_limit / 8");
        rt->memory_limit = limit;
        walk_q again = {.rt = rt, .asc = 1, .home = UINT32_MAX};
        seer_squeue_foreach_owner(&rt->inst[0].queue, walk_cb, &again);
        CHECK(again.last == before.last, "the events moved past memory_limit / 8");
        /* nor where a queue is broken (an allocation failed mid-move: its
         * instance needs a reset, which clearing the queue would hide) */
        rt->inst[1].queue.broken = 1;
        CHECK(seer_event_relayout_host(rt) == 0, "a relayout cleared a broken queue");
        CHECK(rt->inst[1].queue.broken == 1, "a relayout repaired a broken queue");
        rt->inst[1].queue.broken = 0;
        walk_q third = {.rt = rt, .asc = 1, .home = UINT32_MAX};
        seer_squeue_foreach_owner(&rt->inst[0].queue, walk_cb, &third);
        CHECK(third.last == before.last, "the events moved past a broken queue");
    }
    seer_runtime_destroy(rt);

    /* a pool's, by hand: the parallel executor and the optimistic one */
    pool_case(SEER_EXECUTOR_PARALLEL, "parallel", want);
    pool_case(SEER_EXECUTOR_OPTIMISTIC, "optimistic", want);

    /* a pool switched to the serial executor: the pool's records, of three
     * homes, become the serial executor's, in address order */
    {
        seer_runtime *a = make(SEER_EXECUTOR_PARALLEL, 3, "1");
        uint64_t ha = run(a, 20, 1);
        if (seer_runtime_set_executor(a, SEER_EXECUTOR_SERIAL, 1) != SEER_OK)
            return 2;
        const uint64_t before = a->mem.relayouts;
        ha = run(a, SEER_ORDER_AFTER_STEPS - 1, ha);
        CHECK(a->mem.relayouts == before, "a relayout before %u steps after a switch",
              SEER_ORDER_AFTER_STEPS);
        ha = run(a, 1, ha);
        CHECK(a->mem.relayouts == before + 1, "no relayout %u steps after a switch",
              SEER_ORDER_AFTER_STEPS);
        check_serial_layout(a, 0, "after a switch to serial and a step");
        seer_runtime *b = make(SEER_EXECUTOR_SERIAL, 1, "0");
        CHECK(ha == run(b, 20 + SEER_ORDER_AFTER_STEPS, 1),
              "the outputs differ after a switch to serial and a relayout");
        seer_runtime_destroy(a);
        seer_runtime_destroy(b);
    }

    /* a switch a controller times at once (seer_runtime_tidy_records): the
     * serial executor's records as SEER_ORDER_AFTER_STEPS steps would leave
     * them, now, and not again then; a pool's ordering, whatever its
     * budget, and its first look SEER_ORDER_AFTER_STEPS steps on kept */
    {
        seer_runtime *a = make(SEER_EXECUTOR_PARALLEL, 3, NULL);
        uint64_t ha = run(a, 20, 1);
        a->mem.cache_bytes = 1; /* the pending records outgrow it */
        if (seer_runtime_set_executor(a, SEER_EXECUTOR_SERIAL, 1) != SEER_OK)
            return 2;
        uint64_t before = a->mem.relayouts;
        CHECK(seer_runtime_tidy_records(a) == SEER_OK && a->mem.relayouts == before + 1,
              "tidy_records after a switch to serial did not relay the events");
        check_serial_layout(a, 1, "after a switch to serial and tidy_records");
        ha = run(a, SEER_ORDER_AFTER_STEPS + 1, ha);
        CHECK(a->mem.relayouts == before + 1, "a relayout %u steps after a tidied switch",
              SEER_ORDER_AFTER_STEPS);
        if (seer_runtime_set_executor(a, SEER_EXECUTOR_PARALLEL, 3) != SEER_OK)
            return 2;
        ha = run(a, 2, ha);
        before = a->mem.relayouts;
        CHECK(seer_runtime_tidy_records(a) == SEER_OK && a->mem.relayouts == before + 1,
              "tidy_records after a switch to a pool did not order its records");
        CHECK(a->mem.pool_steps == 0 && a->mem.order_cost_ns == 0,
              "tidy_records put off a pool's ordering SEER_ORDER_AFTER_STEPS steps on");
        check_pool_layout(a, 1, "after a switch to a pool and tidy_records");
        a->mem.cache_bytes = UINT64_MAX; /* they fit: nothing to do */
        CHECK(seer_runtime_tidy_records(a) == SEER_OK && a->mem.relayouts == before + 1,
              "tidy_records moved records that fit the cache");
        ha = run(a, 20, ha);
        seer_runtime *b = make(SEER_EXECUTOR_SERIAL, 1, "0");
        CHECK(ha == run(b, 20 + SEER_ORDER_AFTER_STEPS + 1 + 2 + 20, 1),
              "the outputs differ after tidied switches");
        seer_runtime_destroy(a);
        seer_runtime_destroy(b);
    }

    /* the policy: after a serial reset of every instance where the pending
     * records outgrow the cache, and its budget's time after the last;
     * whenever with SEER_RELAYOUT=1, never with 0 */
    {
        const uint64_t seeds[2] = {11, 12};
        seer_runtime *on = make(SEER_EXECUTOR_SERIAL, 1, "1");
        seer_runtime *off = make(SEER_EXECUTOR_SERIAL, 1, "0");
        seer_runtime *small = make(SEER_EXECUTOR_SERIAL, 1, NULL);
        seer_runtime *big = make(SEER_EXECUTOR_SERIAL, 1, NULL);
        CHECK(on->mem.relayouts == 1, "SEER_RELAYOUT=1: a reset did not relay the events");
        CHECK(off->mem.relayouts == 0, "SEER_RELAYOUT=0: a reset relaid the events");
        check_serial_layout(on, 1, "after a serial reset");
        small->mem.cache_bytes = UINT64_MAX; /* the records fit */
        big->mem.cache_bytes = 1;            /* they do not */
        const uint64_t s0 = small->mem.relayouts, b0 = big->mem.relayouts;
        if (seer_runtime_reset(small, seeds, NULL) != SEER_OK ||
            seer_runtime_reset(big, seeds, NULL) != SEER_OK)
            return 2;
        CHECK(small->mem.relayouts == s0, "a reset relaid events that fit the cache");
        CHECK(big->mem.relayouts == b0 + 1, "a reset did not relay events that outgrow the cache");
        /* again at once: within its budget's time (SEER_RELAYOUT_BUDGET times
         * the last relayout's) it does not */
        if (seer_runtime_reset(big, seeds, NULL) != SEER_OK)
            return 2;
        CHECK(big->mem.relayouts == b0 + 1, "a reset relaid the events within its budget's time");
        big->mem.relaid_ns = 0; /* long ago: due */
        if (seer_runtime_reset(big, seeds, NULL) != SEER_OK)
            return 2;
        CHECK(big->mem.relayouts == b0 + 2,
              "a reset did not relay the events past its budget's time");
        /* a reset of some of the instances: every instance's events for a
         * few would be copied; the free records ordered as before */
        const uint8_t one[2] = {1, 0};
        big->mem.relaid_ns = 0;
        if (seer_runtime_reset(big, seeds, one) != SEER_OK)
            return 2;
        CHECK(big->mem.relayouts == b0 + 2, "a reset of one of two instances relaid the events");
        int asc;
        uintptr_t low;
        (void)walk(big->pool.workers[0].pool.free, &asc, &low);
        CHECK(asc, "worker 0's list is not in address order after a partial reset");
        CHECK(run(on, 40, 1) == want && run(off, 40, 1) == want && run(small, 40, 1) == want &&
                  run(big, 40, 1) == want,
              "the outputs differ with the relayout's policy");
        seer_runtime_destroy(on);
        seer_runtime_destroy(off);
        seer_runtime_destroy(small);
        seer_runtime_destroy(big);
    }

    /* a pool's: at its ordering (the first step after a reset here), in
     * place of the lists' ordering; never with SEER_RELAYOUT=0 */
    {
        setenv("SEER_ORDER_POOLS", "1", 1); /* order whatever the sizes */
        seer_runtime *on = make(SEER_EXECUTOR_PARALLEL, 3, NULL);
        seer_runtime *off = make(SEER_EXECUTOR_PARALLEL, 3, "0");
        unsetenv("SEER_ORDER_POOLS");
        uint64_t hon = run(on, 1, 1), hoff = run(off, 1, 1);
        CHECK(on->mem.relayouts == 1, "a pool's ordering did not relay its events");
        CHECK(off->mem.relayouts == 0 && off->mem.ordered_ns != 0,
              "SEER_RELAYOUT=0: a pool relaid its events, or did not order its lists");
        check_pool_layout(on, 0, "after a pool's ordering and a step");
        hon = run(on, 39, hon);
        hoff = run(off, 39, hoff);
        CHECK(hon == want && hoff == want, "the outputs differ with a pool's relayout");
        seer_runtime_destroy(on);
        seer_runtime_destroy(off);
    }

    if (fails) {
        fprintf(stderr, "test_event_relayout: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_event_relayout: ok\n");
    return 0;
}
