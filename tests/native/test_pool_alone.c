/*
 * test_pool_alone: a pool's alone stretches (company.c), from C, under the
 * sanitizers (run_sanitizers.sh).
 *
 * The policy, on calls described to it (seer_pool_call: no clock, no
 * load): a pool call that kept its threads begins nothing; three in a row
 * that lost them (the caller waited a quarter of the call, or the others
 * or the caller handled under a quarter of their share) begin a stretch of
 * 8 steps, in which every call is capped to the caller; after it, the
 * first two pool steps are not judged (its workers just woken), and the
 * three after them, together slower an event than the stretch's, begin
 * one twice as long (up to 256; one fast step among them is no win),
 * faster together they keep the pool and halve it; a stretch's cold step
 * counts as one a quarter slower than its others; a stretch's relayout
 * put off by its budget comes at the stretch's first step out of it; the
 * first three pool steps of a new pool or after a switch are not judged; resets,
 * calls on one thread, a traced call, SEER_POOL_ALONE=0 and a thread or
 * executor switch begin none (or end it).  Then real steps of PHOLD on the
 * parallel and optimistic executors (3 threads) through stretches: only
 * the caller takes part in a stretch's calls, its steps are counted in
 * alone_steps, the records it frees stay on its own lists (none sent to
 * the idle workers' homes), every record is accounted for after them, and
 * the outputs stay the serial executor's bit for bit.  Long stretches (64
 * steps and more) on the serial executor's queues: moved there at their
 * first step, back at the step after their last, before a thread switch
 * and a traced step; a reset and executor switches within one; and, under
 * fault injection, the moves failing (the stretch stays where its events
 * are, a switch says out of memory).  A stretch's end that finds the
 * caller's CPUs busy over its steps' time (a reading put in by the test)
 * begins the next at once, at most seven in a row; more free (between the
 * steps too: a round-robin loop's), a short stretch or CPUs it cannot read
 * try the pool; and /proc/stat's cpu lines as the reading parses them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "company.h"
#include "events.h"
#include "phold.h"
#include "process.h"
#include "runtime.h"
#include "seer_runtime.h"
#include "trace.h"

static const seer_phold_config cfg = {.num_entities = 200, .events_per_entity = 4,
                                      .remote = 0.7, .mean = 0.6, .lookahead = 0.3,
                                      .work = 0, .step_duration = 2.0};

static int fails = 0;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "test_pool_alone:%d: ", __LINE__);                               \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

#include "event_records.h"

/* `steps` steps of a runtime and of its serial reference, each one's
 * checksum carried on (run). */
static void run_both(seer_runtime *rt, seer_runtime *ref, int steps, uint64_t *h,
                     uint64_t *h_ref)
{
    *h = run(rt, steps, *h);
    *h_ref = run(ref, steps, *h_ref);
}

/* A runtime of PHOLD, reset; `alone` as SEER_POOL_ALONE says (NULL: unset).
 * Its stretches' ends look at no CPUs (the machine's load would decide
 * whether they run on): test_look puts in its own reading. */
static seer_runtime *make(int executor, uint32_t threads, const char *alone)
{
    const env_var env[] = {{"SEER_POOL_ALONE", alone}};
    seer_runtime *rt = make_phold(&cfg, executor, threads, env, 1);
    rt->pool.alone.cpus_free = NULL;
    return rt;
}

/* Calls described to the policy: 10000 events in 1 ms on 2 threads, the
 * caller handling half and waiting 1% (kept its threads), or as given. */
static seer_pool_call pool_call(uint64_t ns, uint64_t caller_events, uint64_t wait_ns)
{
    return (seer_pool_call){.step = 1, .threads = 2, .ns = ns, .events = 10000,
                            .caller_events = caller_events, .caller_wait_ns = wait_ns};
}
static const seer_pool_call alone_call = {.step = 1, .threads = 1, .ns = 1500000,
                                          .events = 10000, .caller_events = 10000};

/* A stretch's calls: each capped to the caller, `steps` of them, then the
 * pool again. */
static void stretch(seer_runtime *rt, uint32_t steps, const char *what)
{
    for (uint32_t k = 0; k < steps; k++) {
        const uint32_t n = seer_pool_alone_cap_host(rt, 2);
        CHECK(n == 1, "%s: step %u of a %u-step stretch on %u threads", what, k, steps, n);
        seer_pool_alone_after_call_host(rt, &alone_call);
    }
    CHECK(seer_pool_alone_cap_host(rt, 2) == 2, "%s: the stretch outlasted %u steps", what,
          steps);
}

static void after(seer_runtime *rt, seer_pool_call c) { seer_pool_alone_after_call_host(rt, &c); }

/* The pool's first two steps after a stretch, its workers just woken: fast
 * (50 ns an event against the stretch's 150), and not judged -- judged,
 * they would keep the pool whatever the three after them say. */
static void woken(seer_runtime *rt)
{
    for (int k = 0; k < 2; k++) {
        CHECK(seer_pool_alone_cap_host(rt, 2) == 2, "a woken step %d ran alone", k);
        after(rt, pool_call(500000, 5000, 0));
    }
    CHECK(rt->pool.alone.left == 0 && rt->pool.alone.probe == 3,
          "woken steps judged: left %u, judged steps to come %u", rt->pool.alone.left,
          rt->pool.alone.probe);
}

/* A new pool's first three steps (or a switch's), kept: not judged anyway. */
static void settled(seer_runtime *rt)
{
    for (int k = 0; k < 3; k++)
        after(rt, pool_call(1000000, 5000, 10000));
    CHECK(rt->pool.alone.settling == 0, "still settling after three steps: %u",
          rt->pool.alone.settling);
}

static void lost_thrice(seer_runtime *rt, seer_pool_call c)
{
    for (int k = 0; k < 3; k++) {
        CHECK(seer_pool_alone_cap_host(rt, 2) == 2, "a stretch after %d lost steps", k);
        seer_pool_alone_after_call_host(rt, &c);
    }
}

static void test_policy(void)
{
    seer_runtime *rt = make(SEER_EXECUTOR_PARALLEL, 2, NULL);
    const seer_rt_alone *a = &rt->pool.alone;
    /* kept its threads: nothing, however often */
    for (int k = 0; k < 20; k++)
        after(rt, pool_call(1000000, 5000, 10000));
    CHECK(a->left == 0 && a->stretches == 0, "a stretch after steps that kept their threads");
    /* two lost, one kept, two lost: none (three in a row) */
    const seer_pool_call waited = pool_call(1000000, 5000, 300000);
    const seer_pool_call few = pool_call(1000000, 8800, 0); /* others 1200 < 10000/8 */
    seer_pool_alone_after_call_host(rt, &waited);
    seer_pool_alone_after_call_host(rt, &few);
    after(rt, pool_call(1000000, 5000, 10000));
    seer_pool_alone_after_call_host(rt, &waited);
    seer_pool_alone_after_call_host(rt, &few);
    CHECK(a->left == 0, "a stretch after two lost steps");
    /* the third lost in a row (before any stretch: by waits and shares; here
     * the caller's: descheduled while a worker ran the call) */
    after(rt, pool_call(1000000, 1000, 0));
    CHECK(a->left == 8 && a->stretches == 1, "no 8-step stretch: %u left", a->left);
    /* resets and calls on one thread during it count nothing */
    seer_pool_alone_after_call_host(rt, &(seer_pool_call){.step = 0, .threads = 1, .ns = 5,
                                                          .events = 100});
    CHECK(a->left == 8, "a reset counted as a stretch step");
    stretch(rt, 8, "first");
    CHECK(a->steps == 8 && a->alone_ns > 149.9 && a->alone_ns < 150.1,
          "stretch steps %llu, %.2f ns an event", (unsigned long long)a->steps, a->alone_ns);
    /* after a stretch: by speed.  1.6 ms (160 ns an event: slower than the
     * stretch's 150) three times after the woken ones: twice as long */
    woken(rt);
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    stretch(rt, 16, "second");
    /* the three pool steps after a stretch, taken together: one fast among
     * slow ones (a worker that got a time slice) is no win */
    woken(rt);
    after(rt, pool_call(700000, 9900, 900000));
    after(rt, pool_call(2000000, 5000, 0));
    CHECK(a->left == 0, "judged before three pool steps");
    after(rt, pool_call(2000000, 5000, 0));
    CHECK(a->left == 32 && a->next == 64, "one fast step of three: left %u, next %u", a->left,
          a->next);
    stretch(rt, 32, "third");
    /* faster together (100 ns an event against 150): the pool stays, the next
     * stretch halves */
    woken(rt);
    after(rt, pool_call(700000, 9900, 900000));
    after(rt, pool_call(700000, 9900, 900000));
    after(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 0 && a->next == 32, "a faster pool: left %u, next %u", a->left, a->next);
    /* a pool a little faster than alone (143 ns an event against 150) keeps
     * every step, however many */
    for (int k = 0; k < 12; k++)
        after(rt, pool_call(1430000, 5000, 0));
    CHECK(a->left == 0 && a->lost == 0, "a pool 5%% faster than alone: left %u", a->left);
    /* never longer than 256 */
    for (int k = 0; k < 6; k++) {
        lost_thrice(rt, pool_call(1600000, 5000, 0));
        const uint32_t len = a->left;
        stretch(rt, len, "doubling");
        woken(rt);
    }
    CHECK(a->next == 256, "stretches grew to %u", a->next);
    /* a traced call ends a stretch and sees the pool; a traced step begins none */
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 256, "no stretch before the trace");
    CHECK(seer_runtime_trace(rt, 1000) == SEER_OK, "trace: %s", seer_runtime_error(rt));
    CHECK(seer_pool_alone_cap_host(rt, 2) == 2 && a->left == 0, "a traced call ran alone");
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 0, "a stretch begun by traced steps");
    CHECK(seer_runtime_trace(rt, 0) == SEER_OK, "trace off: %s", seer_runtime_error(rt));
    /* a thread switch ends one, and the next starts short */
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left > 0, "no stretch before the switch");
    CHECK(seer_runtime_set_threads(rt, 2) == SEER_OK, "set_threads: %s", seer_runtime_error(rt));
    CHECK(a->left == 0 && a->next == 8, "after a switch: left %u, next %u", a->left, a->next);
    /* ... whose first three pool steps are not judged (settling: STPA's probe
     * visits timed stretches begun by them); three lost after them begin one */
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 0 && a->settling == 0,
          "settling steps after a switch judged: left %u, settling %u", a->left, a->settling);
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 8, "no stretch after the settling steps: left %u", a->left);
    seer_runtime_destroy(rt);
    /* a new pool's first three steps too (before any stretch: by waits) */
    rt = make(SEER_EXECUTOR_PARALLEL, 2, NULL);
    a = &rt->pool.alone;
    lost_thrice(rt, waited);
    CHECK(a->left == 0 && a->stretches == 0, "a new pool's settling steps began a stretch");
    lost_thrice(rt, waited);
    CHECK(a->left == 8, "no stretch after a new pool's settling steps: left %u", a->left);
    seer_runtime_destroy(rt);

    /* SEER_POOL_ALONE=0: never */
    rt = make(SEER_EXECUTOR_PARALLEL, 2, "0");
    for (int k = 0; k < 10; k++)
        seer_pool_alone_after_call_host(rt, &few);
    CHECK(rt->pool.alone.left == 0 && seer_pool_alone_cap_host(rt, 2) == 2,
          "a stretch with SEER_POOL_ALONE=0");
    seer_runtime_destroy(rt);
}

/* Real steps through a stretch on `executor` (3 threads): the caller alone
 * in its calls, counted, every record accounted for, the outputs the serial
 * executor's. */
static void test_steps(int executor, const char *name)
{
    seer_runtime *ref = make(SEER_EXECUTOR_SERIAL, 1, NULL);
    seer_runtime *rt = make(executor, 3, NULL);
    uint64_t h_ref = run(ref, 6, 1469598103934665603ull);
    uint64_t h = run(rt, 6, 1469598103934665603ull);
    const seer_pool_call few = {.step = 1, .threads = 3, .ns = 1000000, .events = 10000,
                                .caller_events = 9900};
    /* whatever the real steps so far began (their timings are the
     * machine's): a stretch described to the policy afresh */
    seer_pool_alone_end_host(rt);
    rt->pool.alone.alone_ns = 0;
    rt->pool.alone.settling = 0;
    for (int k = 0; k < 3; k++)
        seer_pool_alone_after_call_host(rt, &few);
    CHECK(rt->pool.alone.left == 8, "%s: no stretch begun (%u)", name, rt->pool.alone.left);
    seer_stats s0, s1;
    seer_runtime_stats(rt, &s0);
    /* the idle workers' lists and reserves, which a stretch leaves alone:
     * the caller keeps what it frees, as the serial executor does */
    uint64_t idle[2] = {0, 0};
    for (uint32_t t = 1; t < 3; t++)
        idle[t - 1] = rt->pool.workers[t].pool.nfree + rt->pool.workers[t].cross.nfree +
                      rt->mem.homes[t].n;
    for (int k = 0; k < 8; k++) {
        run_both(rt, ref, 1, &h, &h_ref);
        for (uint32_t t = 1; t < 3; t++) {
            const uint64_t now = rt->pool.workers[t].pool.nfree +
                                 rt->pool.workers[t].cross.nfree + rt->mem.homes[t].n;
            CHECK(now == idle[t - 1], "%s: stretch step %d sent worker %u's home %lld records",
                  name, k, t, (long long)(now - idle[t - 1]));
        }
        /* relaxed: between calls, the host's own store */
        CHECK(atomic_load_explicit(&rt->pool.call_active, memory_order_relaxed) == 1,
              "%s: stretch step %d on %u threads", name, k,
              atomic_load_explicit(&rt->pool.call_active, memory_order_relaxed));
    }
    seer_runtime_stats(rt, &s1);
    CHECK(s1.alone_steps - s0.alone_steps == 8, "%s: %llu alone steps counted", name,
          (unsigned long long)(s1.alone_steps - s0.alone_steps));
    check_conserved(rt, name);
    /* the pool again, as long as its steps keep their threads (PHOLD's are
     * real: their timings may begin another stretch, which changes nothing
     * but the threads) */
    run_both(rt, ref, 10, &h, &h_ref);
    CHECK(h == h_ref, "%s: outputs differ from the serial executor's", name);
    check_conserved(rt, name);
    seer_runtime_destroy(rt);
    seer_runtime_destroy(ref);
}

/* A stretch's step that began cold (6 ms: 600 ns an event, the caches
 * another env's steps left) counts as one a quarter slower than the
 * stretch's others (187.5 against 150): the pool's steps after it at 160
 * ns an event still lose (counted whole, the average would be 262.5). */
static void test_cold_step(void)
{
    seer_runtime *rt = make(SEER_EXECUTOR_PARALLEL, 2, NULL);
    const seer_rt_alone *a = &rt->pool.alone;
    settled(rt);
    lost_thrice(rt, pool_call(1000000, 1000, 0));
    CHECK(a->left == 8, "cold: no stretch begun (%u)", a->left);
    const seer_pool_call cold = {.step = 1, .threads = 1, .ns = 6000000, .events = 10000,
                                 .caller_events = 10000};
    for (int k = 0; k < 8; k++) {
        CHECK(seer_pool_alone_cap_host(rt, 2) == 1, "cold: stretch step %d on the pool", k);
        seer_pool_alone_after_call_host(rt, k == 7 ? &cold : &alone_call);
    }
    CHECK(a->alone_ns > 159.3 && a->alone_ns < 159.4, "cold: %.2f ns an event", a->alone_ns);
    woken(rt);
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 16, "cold: the pool kept after a cold stretch step (left %u)", a->left);
    seer_runtime_destroy(rt);
}

/* A stretch that begins within its relayout budget's time (the last
 * relayout's cost, 20 times over) relays its events at its first step out
 * of it, not never; a stretch's end drops the pending one. */
static void test_tidy_put_off(void)
{
    const env_var env[] = {{"SEER_RELAYOUT", "1"}};
    seer_runtime *rt = make_phold(&cfg, SEER_EXECUTOR_PARALLEL, 2, env, 1);
    seer_rt_alone *a = &rt->pool.alone;
    settled(rt);
    lost_thrice(rt, pool_call(1000000, 1000, 0));
    CHECK(a->left == 8 && a->tidy, "put off: no stretch begun (%u)", a->left);
    const uint64_t r0 = rt->mem.relayouts;
    a->tidy_cost_ns = 1000000000ull; /* 1 s: its budget's time 20 s */
    a->tidied_ns = seer_clock_ns();
    seer_pool_alone_before_step_host(rt);
    CHECK(rt->mem.relayouts == r0 && a->tidy, "put off: relaid within the budget (%d)",
          a->tidy);
    a->tidied_ns -= 21000000000ull; /* the budget's time passed */
    seer_pool_alone_before_step_host(rt);
    CHECK(rt->mem.relayouts == r0 + 1 && !a->tidy, "put off: not relaid out of the budget");
    /* within it again, to the stretch's end: dropped with it */
    a->tidy = 1;
    a->tidied_ns = seer_clock_ns();
    a->left = 0;
    seer_pool_alone_before_step_host(rt);
    CHECK(rt->mem.relayouts == r0 + 1 && !a->tidy, "put off: pending after the stretch");
    seer_runtime_destroy(rt);
}

/* A long stretch (64 steps and more) described to the policy afresh: its
 * length set, three calls that lost their threads. */
static void begin_long(seer_runtime *rt, uint32_t len, const char *what)
{
    const seer_pool_call few = {.step = 1, .threads = 3, .ns = 1000000, .events = 10000,
                                .caller_events = 9900};
    seer_pool_alone_end_host(rt);
    rt->pool.alone.settling = 0;
    rt->pool.alone.alone_ns = 0; /* (judged by waits and shares) */
    rt->pool.alone.next = len;
    for (int k = 0; k < 3; k++)
        seer_pool_alone_after_call_host(rt, &few);
    CHECK(rt->pool.alone.left == len && rt->pool.alone.long_stretch,
          "%s: no long stretch begun (%u)", what, rt->pool.alone.left);
}

/* Real steps of a long stretch on `executor` (`threads`): at its first
 * step every pending event moves to the serial executor's queues, the
 * steps run there (counted in alone_steps, the runtime still says
 * `executor`), and the step after the stretch moves them back; a thread or
 * executor switch, a traced step and a reset within it leave the runtime
 * whole; the outputs are the serial executor's at every step. */
static void test_long_stretch(int executor, uint32_t threads, const char *name)
{
    seer_runtime *ref = make(SEER_EXECUTOR_SERIAL, 1, NULL);
    seer_runtime *rt = make(executor, threads, NULL);
    const seer_rt_alone *a = &rt->pool.alone;
    /* (two instances on two threads: one partition each, whole-instance steps) */
    CHECK((threads == 2) == (rt->part.n == 1), "%s: %u partitions on %u threads", name,
          rt->part.n, threads);
    uint64_t h_ref = run(ref, 6, 1469598103934665603ull);
    uint64_t h = run(rt, 6, 1469598103934665603ull);
    begin_long(rt, 64, name);
    seer_stats s0, s1;
    seer_runtime_stats(rt, &s0);
    for (int k = 0; k < 64; k++) {
        run_both(rt, ref, 1, &h, &h_ref);
        CHECK(h == h_ref, "%s: long stretch step %d differs from the serial executor's", name,
              k);
        CHECK(a->serial && rt->executor == SEER_EXECUTOR_SERIAL,
              "%s: long stretch step %d not on the serial queues", name, k);
        CHECK(seer_runtime_executor(rt) == executor, "%s: step %d: the runtime says %d", name,
              k, seer_runtime_executor(rt));
    }
    seer_runtime_stats(rt, &s1);
    CHECK(s1.alone_steps - s0.alone_steps == 64 && s1.windows == s0.windows,
          "%s: %llu alone steps counted, %llu windows", name,
          (unsigned long long)(s1.alone_steps - s0.alone_steps),
          (unsigned long long)(s1.windows - s0.windows));
    CHECK(a->left == 0, "%s: the stretch outlasted 64 steps (%u)", name, a->left);
    /* the step after it: the pool's queues again */
    run_both(rt, ref, 1, &h, &h_ref);
    CHECK(!a->serial && rt->executor == executor && h == h_ref,
          "%s: after the stretch: serial %d, executor %d, outputs %s", name, a->serial,
          rt->executor, h == h_ref ? "equal" : "differ");
    check_conserved(rt, name);

    /* a thread switch within one: the events back first, the stretch over */
    begin_long(rt, 128, name);
    run_both(rt, ref, 3, &h, &h_ref);
    CHECK(a->serial, "%s: not on the serial queues before the switch", name);
    CHECK(seer_runtime_set_threads(rt, 2) == SEER_OK, "%s: set_threads: %s", name,
          seer_runtime_error(rt));
    CHECK(!a->serial && !a->left && rt->executor == executor,
          "%s: after set_threads: serial %d, left %u, executor %d", name, a->serial, a->left,
          rt->executor);
    run_both(rt, ref, 2, &h, &h_ref);
    CHECK(h == h_ref, "%s: outputs differ after a thread switch in a long stretch", name);
    check_conserved(rt, name);
    CHECK(seer_runtime_set_threads(rt, threads) == SEER_OK, "%s: set_threads: %s", name,
          seer_runtime_error(rt));

    /* a traced step within one sees the pool */
    begin_long(rt, 64, name);
    run_both(rt, ref, 2, &h, &h_ref);
    CHECK(seer_runtime_trace(rt, 1000) == SEER_OK, "%s: trace: %s", name,
          seer_runtime_error(rt));
    run_both(rt, ref, 1, &h, &h_ref);
    CHECK(!a->serial && !a->left && rt->executor == executor,
          "%s: a traced step on the serial queues (serial %d, left %u)", name, a->serial,
          a->left);
    CHECK(seer_runtime_trace(rt, 0) == SEER_OK, "%s: trace off: %s", name,
          seer_runtime_error(rt));

    /* a reset within one, then a switch to the serial executor and back */
    begin_long(rt, 64, name);
    run_both(rt, ref, 2, &h, &h_ref);
    const uint64_t seeds[2] = {21, 22};
    CHECK(seer_runtime_reset(rt, seeds, NULL) == SEER_OK &&
              seer_runtime_reset(ref, seeds, NULL) == SEER_OK,
          "%s: reset: %s", name, seer_runtime_error(rt));
    run_both(rt, ref, 2, &h, &h_ref);
    CHECK(h == h_ref && a->serial, "%s: after a reset in a long stretch: outputs %s, serial %d",
          name, h == h_ref ? "equal" : "differ", a->serial);
    CHECK(seer_runtime_set_executor(rt, SEER_EXECUTOR_SERIAL, 1) == SEER_OK,
          "%s: to serial: %s", name, seer_runtime_error(rt));
    CHECK(!a->serial && rt->executor == SEER_EXECUTOR_SERIAL &&
              seer_runtime_executor(rt) == SEER_EXECUTOR_SERIAL,
          "%s: a switch to the serial executor in a long stretch: serial %d", name, a->serial);
    run_both(rt, ref, 2, &h, &h_ref);
    CHECK(seer_runtime_set_executor(rt, executor, threads) == SEER_OK, "%s: back: %s", name,
          seer_runtime_error(rt));
    run_both(rt, ref, 4, &h, &h_ref);
    CHECK(h == h_ref, "%s: outputs differ after switches in a long stretch", name);
    check_conserved(rt, name);
    seer_runtime_destroy(rt);
    seer_runtime_destroy(ref);
}

/* The CPUs as test_look has them: their free time (ns), or unreadable. */
static uint64_t look_free_ns;
static int look_fails, look_reads;
static int look_read(uint64_t *free_ns)
{
    look_reads++;
    if (look_fails)
        return -1;
    *free_ns = look_free_ns;
    return 0;
}

/* A stretch of `steps` steps that took `ms` in all, in `wall_ms` of the
 * caller's time (its other work between them included), with `cores` of
 * the caller's CPUs free over that time. */
static void look_stretch_in(seer_runtime *rt, uint32_t steps, double ms, double wall_ms,
                            double cores, const char *what)
{
    seer_pool_call c = alone_call; /* 150 ns an event, as alone_call's */
    c.ns = (uint64_t)(ms * 1e6 / steps);
    c.events = c.caller_events = c.ns / 150;
    for (uint32_t k = 0; k < steps; k++) {
        if (seer_pool_alone_cap_host(rt, 2) != 1) {
            CHECK(0, "%s: step %u of %u on the pool", what, k, steps);
            return;
        }
        look_free_ns += (uint64_t)(cores * wall_ms * 1e6 / steps);
        seer_pool_alone_after_call_host(rt, &c);
    }
}

/* ... its steps back to back. */
static void look_stretch(seer_runtime *rt, uint32_t steps, double ms, double cores,
                         const char *what)
{
    look_stretch_in(rt, steps, ms, ms, cores, what);
}

/* A stretch's end looks at the caller's CPUs: with under a quarter of a
 * core free over the time of its steps (others held them: a burner,
 * torch's spinning workers), the next stretch begins at once, twice as
 * long, without the pool's steps in between -- at most 7 in a row; with
 * more free, steps that took under 200 ms in all, CPUs it cannot read (at
 * the start or the end), or free time gone backwards: the pool's steps as
 * before.  Free time between its steps counts too (a round-robin loop's
 * other envs): held to the steps' time, not the stretch's whole. */
static void test_look(void)
{
    seer_runtime *rt = make(SEER_EXECUTOR_PARALLEL, 2, NULL);
    const seer_rt_alone *a = &rt->pool.alone;
    rt->pool.alone.cpus_free = look_read;
    look_free_ns = 7000000000ull;
    settled(rt);
    lost_thrice(rt, pool_call(1000000, 1000, 0));
    CHECK(a->left == 8 && a->looked && look_reads == 1, "look: no stretch, or no look at it");
    /* 8 steps of 30 ms, a tenth of a core free: the next begins at once */
    look_stretch(rt, 8, 240, 0.1, "busy");
    CHECK(a->left == 16 && a->next == 32 && a->went_on == 1 && a->probe == 0 && a->looked,
          "busy CPUs: left %u, next %u, went on %u, pool steps to come %u", a->left, a->next,
          a->went_on, a->probe);
    /* ... with a third of a core free: the pool's steps */
    look_stretch(rt, 16, 400, 0.34, "a third free");
    CHECK(a->left == 0 && a->probe == 5 && a->went_on == 0 && a->stretches == 2,
          "a third of a core free: left %u, pool steps %u, went on %u", a->left, a->probe,
          a->went_on);
    woken(rt);
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 32, "no stretch after lost pool steps: %u", a->left);
    /* steps of 190 ms in all, however busy: the pool's steps */
    look_stretch_in(rt, 32, 190, 900, 0.0, "short");
    CHECK(a->left == 0 && a->probe == 5, "190 ms of steps went on: left %u", a->left);
    woken(rt);
    /* a round-robin loop: 250 ms of steps in 1000 ms, the other core free
     * during them (a tenth of a core over the whole): held to the steps'
     * time (0.4 of a core), the pool's steps */
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    look_stretch_in(rt, 64, 250, 1000, 0.1, "round-robin");
    CHECK(a->left == 0 && a->probe == 5, "free during the steps went on: left %u", a->left);
    woken(rt);
    /* ... and a loop whose other work kept the cores busy too: goes on */
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    look_stretch_in(rt, 128, 250, 1000, 0.05, "busy loop");
    CHECK(a->left == 256 && a->went_on == 1, "a busy loop: left %u, went on %u", a->left,
          a->went_on);
    look_stretch(rt, 256, 500, 0.5, "busy loop ends");
    CHECK(a->left == 0 && a->probe == 5, "half a core free went on: left %u", a->left);
    woken(rt);
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    /* free time gone backwards (a CPU taken offline): the pool's steps */
    look_free_ns -= 1000000000ull;
    look_stretch(rt, 256, 500, 0.0, "backwards");
    CHECK(a->left == 0 && a->probe == 5, "free time gone backwards went on: left %u", a->left);
    woken(rt);
    /* unreadable at the start, then at the end */
    look_fails = 1;
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    CHECK(a->left == 256 && !a->looked, "unreadable at the start: left %u, looked %d", a->left,
          a->looked);
    look_fails = 0;
    look_stretch(rt, 256, 500, 0.0, "unread start");
    CHECK(a->left == 0 && a->probe == 5, "went on without a first reading");
    woken(rt);
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    look_fails = 1;
    look_stretch(rt, 256, 500, 0.0, "unread end");
    CHECK(a->left == 0 && a->probe == 5, "went on without a last reading");
    look_fails = 0;
    woken(rt);
    /* busy for good: seven stretches in a row go on, the eighth tries the pool */
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    const uint64_t total = a->went_on_total, stretches = a->stretches;
    for (int k = 0; k < 7; k++) {
        look_stretch(rt, 256, 500, 0.05, "busy for good");
        CHECK(a->left == 256 && a->went_on == (uint32_t)k + 1, "busy %d: left %u, went on %u", k,
              a->left, a->went_on);
    }
    look_stretch(rt, 256, 500, 0.05, "the eighth");
    CHECK(a->left == 0 && a->probe == 5 && a->went_on == 0 &&
              a->went_on_total == total + 7 && a->stretches == stretches + 7,
          "eight busy stretches: left %u, pool steps %u, went on %llu", a->left, a->probe,
          (unsigned long long)(a->went_on_total - total));
    /* the pool lost again: the count starts anew */
    woken(rt);
    lost_thrice(rt, pool_call(1600000, 5000, 0));
    look_stretch(rt, 256, 500, 0.05, "again");
    CHECK(a->left == 256 && a->went_on == 1, "after the pool's steps: went on %u", a->went_on);
    /* a thread switch ends the stretch; the look is carried to the new pool */
    CHECK(seer_runtime_set_threads(rt, 2) == SEER_OK, "set_threads: %s", seer_runtime_error(rt));
    CHECK(a->left == 0 && a->went_on == 0 && a->cpus_free == look_read,
          "after a switch: left %u, went on %u, look %s", a->left, a->went_on,
          a->cpus_free == look_read ? "kept" : "lost");
    seer_runtime_destroy(rt);
}

/* The free ticks of `cpus` in `text` as /proc/stat (a file of it). */
static int stat_text(const char *text, const seer_cpus *cpus, uint64_t *ticks)
{
    FILE *f = tmpfile();
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fflush(f) != 0) {
        fprintf(stderr, "test_pool_alone: no temporary file\n");
        exit(2);
    }
    rewind(f);
    const int rc = seer_cpu_stat_free_ticks_fd(fileno(f), cpus, ticks);
    fclose(f);
    return rc;
}

/* /proc/stat's cpu lines: the free time (nice + idle + iowait) of the CPUs
 * asked for, read a piece at a time (300 CPUs, a long line after them);
 * malformed lines, none of the CPUs and no cpu lines refused; and this
 * machine's, for the calling thread's CPUs, between two whole readings. */
static void test_cpu_stat(void)
{
    static const char stat[] =
        "cpu  100 20 30 4000 50 6 7 8 0 0\n"
        "cpu0 10 2 3 400 5 0 1 0 0 0\n"
        "cpu1 20 4 6 800 10 0 2 0 0 0\n"
        "cpu12 30 6 9 1200 15 0 3 0 0 0\n"
        "intr 12345 1 2 3\n"
        "cpu3 1 1 1 1 1 1 1 1 1 1\n";
    seer_cpus cpus = {{0}, 1};
    uint64_t t = 0;
    cpus.bits[0] = 1u << 1 | 1u << 12 | 1u << 3; /* cpu3 comes after intr: not a cpu line */
    CHECK(stat_text(stat, &cpus, &t) == 0 && t == (4 + 800 + 10) + (6 + 1200 + 15),
          "cpu1 and cpu12: %llu ticks", (unsigned long long)t);
    cpus.bits[0] = 1;
    CHECK(stat_text(stat, &cpus, &t) == 0 && t == 407, "cpu0: %llu ticks", (unsigned long long)t);
    cpus.bits[0] = 1u << 5;
    CHECK(stat_text(stat, &cpus, &t) == -1, "cpu5 found");
    cpus.bits[0] = 3;
    static const char *bad[] = {
        "cpu0 10 2 3 400\n",              /* four fields */
        "cpu0 10 2 x 400 5 0 0\n",        /* not a number */
        "cpux 10 2 3 400 5 0 0\n",        /* no CPU number */
        "cpu0\n",                          /* nothing */
        "cpu0 10 2 3 400 5 0 0\ncpu1 7\n", /* the second malformed */
        "",                                 /* empty */
        "intr 1 2 3\ncpu0 1 2 3 4 5 6\n",  /* no cpu lines first */
        "cpu  1 2 3 4 5 6 7\n",             /* the total only */
        "cpu0 1 2 3 4 5 6",                 /* cut short: not counted */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK(stat_text(bad[k], &cpus, &t) == -1, "malformed /proc/stat %zu taken", k);
    /* 300 CPUs (lines cut across the reader's pieces), then an "intr" line
     * of 20000 bytes and a cpu line after it, not counted */
    char *big = malloc(300 * 64 + 20100);
    size_t n = (size_t)sprintf(big, "cpu  1 1 1 1 1 1 1\n");
    uint64_t want = 0;
    memset(cpus.bits, 0, sizeof cpus.bits);
    for (int c = 0; c < 300; c++) {
        n += (size_t)sprintf(big + n, "cpu%d %d %d %d %d %d 0 0 0 0 0\n", c, c, c + 1, 7,
                             1000 * c, 3);
        if (c % 3 == 0) {
            cpus.bits[c / 64] |= 1ull << (c % 64);
            want += (uint64_t)(c + 1) + 1000u * (uint64_t)c + 3u;
        }
    }
    memcpy(big + n, "intr", 4);
    memset(big + n + 4, '7', 20000);
    n += 20004;
    n += (size_t)sprintf(big + n, "\ncpu0 9 9 9 9 9 9\n");
    CHECK(stat_text(big, &cpus, &t) == 0 && t == want, "300 CPUs: %llu ticks, %llu wanted",
          (unsigned long long)t, (unsigned long long)want);
    /* a cpu line longer than the reader's piece: refused */
    memset(big, '1', 3000);
    memcpy(big, "cpu0 ", 5);
    big[3000] = '\n';
    big[3001] = '\0';
    cpus.bits[0] = 1;
    CHECK(stat_text(big, &cpus, &t) == -1, "a 3000-byte cpu line taken");
    free(big);
    /* this machine's: between two whole readings of /proc/stat */
    cpu_set_t set;
    FILE *f = fopen("/proc/stat", "r");
    if (f && sched_getaffinity(0, sizeof set, &set) == 0) {
        fclose(f);
        memcpy(cpus.bits, &set, sizeof set);
        const uint64_t tick = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
        uint64_t before = 0, after = 0, free_ns;
        int fd = open("/proc/stat", O_RDONLY);
        CHECK(seer_cpu_stat_free_ticks_fd(fd, &cpus, &before) == 0, "this machine's /proc/stat");
        close(fd);
        CHECK(seer_cpus_free_ns_any(&free_ns) == 0, "this machine's CPUs unread");
        fd = open("/proc/stat", O_RDONLY);
        CHECK(seer_cpu_stat_free_ticks_fd(fd, &cpus, &after) == 0, "this machine's /proc/stat");
        close(fd);
        CHECK(before * tick <= free_ns && free_ns <= after * tick,
              "this machine's CPUs: %llu ns free, between %llu and %llu",
              (unsigned long long)free_ns, (unsigned long long)(before * tick),
              (unsigned long long)(after * tick));
    } else if (f) {
        fclose(f);
    }
}

#ifdef SEER_FAULT_INJECTION
/* Out of memory moving a long stretch's events (the first allocation of
 * either move fails): into the serial queues, the stretch runs on the
 * pool's; back, one more step on the serial queues, then back; a thread
 * switch says so and changes nothing.  Outputs the serial executor's. */
static void test_long_stretch_no_memory(void)
{
    seer_runtime *ref = make(SEER_EXECUTOR_SERIAL, 1, NULL);
    seer_runtime *rt = make(SEER_EXECUTOR_PARALLEL, 3, NULL);
    const seer_rt_alone *a = &rt->pool.alone;
    uint64_t h_ref = run(ref, 4, 1469598103934665603ull);
    uint64_t h = run(rt, 4, 1469598103934665603ull);
    begin_long(rt, 64, "no memory");
    seer_fi_arm(SEER_FI_ALLOC, 1, 0);
    run_both(rt, ref, 1, &h, &h_ref);
    CHECK(seer_fi_failed(SEER_FI_ALLOC) == 1 && !a->serial && a->left == 63 &&
              rt->executor == SEER_EXECUTOR_PARALLEL && h == h_ref,
          "no memory in: failed %llu, serial %d, left %u, outputs %s",
          (unsigned long long)seer_fi_failed(SEER_FI_ALLOC), a->serial, a->left,
          h == h_ref ? "equal" : "differ");
    begin_long(rt, 64, "no memory");
    run_both(rt, ref, 64, &h, &h_ref);
    CHECK(a->serial && !a->left, "no memory: the stretch not on the serial queues");
    seer_fi_arm(SEER_FI_ALLOC, 1, 0);
    run_both(rt, ref, 1, &h, &h_ref);
    CHECK(seer_fi_failed(SEER_FI_ALLOC) == 1 && a->serial && !a->left &&
              rt->executor == SEER_EXECUTOR_SERIAL && h == h_ref,
          "no memory out: serial %d, left %u, outputs %s", a->serial, a->left,
          h == h_ref ? "equal" : "differ");
    run_both(rt, ref, 1, &h, &h_ref);
    CHECK(!a->serial && rt->executor == SEER_EXECUTOR_PARALLEL && h == h_ref,
          "no memory: not back after a failed move");
    begin_long(rt, 64, "no memory");
    run_both(rt, ref, 2, &h, &h_ref);
    seer_fi_arm(SEER_FI_ALLOC, 1, 0);
    CHECK(seer_runtime_set_threads(rt, 2) == SEER_E_NOMEM &&
              strstr(seer_runtime_error(rt), "alone stretch") && a->serial && a->left == 62,
          "no memory: set_threads in a long stretch: %s", seer_runtime_error(rt));
    seer_fi_arm(SEER_FI_ALLOC, 0, 0);
    run_both(rt, ref, 62, &h, &h_ref);
    run_both(rt, ref, 2, &h, &h_ref);
    CHECK(!a->serial && h == h_ref, "no memory: outputs differ (serial %d)", a->serial);
    check_conserved(rt, "no memory");
    seer_runtime_destroy(rt);
    seer_runtime_destroy(ref);
}
#endif

int main(void)
{
    test_policy();
    test_cold_step();
    test_tidy_put_off();
    test_look();
    test_cpu_stat();
    test_steps(SEER_EXECUTOR_PARALLEL, "parallel");
    test_steps(SEER_EXECUTOR_OPTIMISTIC, "optimistic");
    test_long_stretch(SEER_EXECUTOR_PARALLEL, 3, "parallel");
    test_long_stretch(SEER_EXECUTOR_OPTIMISTIC, 3, "optimistic");
    /* two instances on two threads: one partition each (whole-instance steps) */
    test_long_stretch(SEER_EXECUTOR_PARALLEL, 2, "parallel, whole instances");
#ifdef SEER_FAULT_INJECTION
    test_long_stretch_no_memory();
#endif
    if (fails) {
        fprintf(stderr, "test_pool_alone: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_pool_alone: stretches begun, capped, counted and ended as the policy says; "
           "outputs identical to the serial executor's\n");
    return 0;
}
