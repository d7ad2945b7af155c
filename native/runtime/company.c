/*
 * company.c -- a worker pool in company (private, core layer): what the pool
 * does where it shares the cores with the caller's own work (a training
 * loop's policy, its learner) and with other thread pools and processes.
 * The host, between calls: the workers kept off the caller's CPU between a
 * training loop's calls; alone stretches of steps on the calling thread
 * where the pool's other threads lose their cores.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdint.h>

#include "base.h"
#include "company.h"
#include "events.h"
#include "partition.h"
#include "process.h"
#include "runtime.h"
#include "trace.h"

/* Between the calls of a training loop (the policy's forward, the learner's
 * update: calls that take a small part of the time), the workers run
 * anywhere but on the caller's CPU of the moment.  Woken onto its run queue
 * (the kernel places a wakee near its waker), a worker waits behind the
 * caller, who is busy with the call, or takes the CPU from it, while the
 * other core is held by a thread that merely spins and soon sleeps (torch's
 * OpenMP workers between operations).  Measured in bench company's torch
 * loop (PCS 64x64, 2 cores): the worker last ran on the caller's CPU in 99%
 * of the steps, the caller waited 1.3 ms an iteration for its core, and
 * parallel-2 ran 0.91-0.98x the serial executor; kept off, 1.03-1.14x.
 * Where calls come back to back (an env stepped alone, beside a CPU burner,
 * several env processes) the workers run where the kernel puts them: kept
 * off there, a worker busy most of the time made the kernel move a burner
 * onto the caller's CPU (parallel-2 beside a burner at full duty 0.52x
 * instead of 0.87x).  On: the gaps between the last three steps, on
 * whatever executor (seer_pool_note_step_host: a pool's first call after
 * the serial executor's steps knows the loop), at least KEEP_OFF_GAPS times
 * the steps' own time; off again once they are shorter than the steps
 * (between: as it was).  Set only when the caller's CPU or
 * the mode changed (one affinity call per worker; off again, each worker
 * gets back the CPUs it had); best effort: a failure
 * leaves a worker where it may run.  SEER_KEEP_OFF_CALLER=0 turns it off
 * (pool.keep_off_allowed). */
#define KEEP_OFF_GAPS 2u
void seer_pool_note_step_host(seer_runtime *rt, uint64_t t0, uint64_t t1)
{
    if (rt->pool.loop_end_ns) {
        const uint32_t k = rt->pool.loop_next;
        rt->pool.loop_gaps_ns[k] = t0 > rt->pool.loop_end_ns ? t0 - rt->pool.loop_end_ns : 0;
        rt->pool.loop_calls_ns[k] = t1 > t0 ? t1 - t0 : 1;
        rt->pool.loop_next = (k + 1) % SEER_LOOP_CALLS;
    }
    rt->pool.loop_end_ns = t1;
}

void seer_pool_keep_off_caller_host(seer_runtime *rt, uint32_t n)
{
    uint64_t gaps = 0, calls = 0;
    for (uint32_t k = 0; k < SEER_LOOP_CALLS; k++) {
        if (!rt->pool.loop_calls_ns[k])
            return; /* not three steps yet */
        gaps += rt->pool.loop_gaps_ns[k];
        calls += rt->pool.loop_calls_ns[k];
    }
    if (gaps >= KEEP_OFF_GAPS * calls)
        rt->pool.keep_off = rt->pool.keep_off_allowed;
    else if (gaps < calls)
        rt->pool.keep_off = 0;
    const int cpu = rt->pool.keep_off ? seer_cpu_now_any() : -1;
    for (uint32_t t = 1; t < n; t++) {
        seer_worker *w = &rt->pool.workers[t];
        if (!w->started || w->avoid_cpu == cpu)
            continue;
        if (w->avoid_cpu < 0)
            w->own_cpus.known = 0; /* at its own CPUs: read them afresh (a
                                      user's taskset since counts) */
        (void)seer_thread_avoid_cpu_host(w->thread, cpu, &w->own_cpus);
        w->avoid_cpu = cpu;
    }
}

/* ---- alone stretches ------------------------------------------------------------ */

/* A pool's other threads that do not get a core cost a step more than they
 * give: a worker that comes late leaves the caller its windows alone
 * (parallel.c), and one descheduled while it holds a chunk holds the phase
 * up until the kernel runs it again (a time slice of a burner, of torch's
 * spinning OpenMP workers, of another env process).  Measured (PCS 64x64,
 * 2 cores, the serial executor's time over theirs): parallel-2 and
 * optimistic-2 beside a CPU burner at full duty 0.59-0.84x, two env
 * processes of parallel-2 each 0.61x; every call capped to the caller
 * 0.93-0.94x alone.
 *
 * A pool step lost its threads -- before the pool's first stretch: the
 * caller waited a quarter of the call for phases others held (or,
 * speculating, for other slots' messages), or the others handled under a
 * quarter of their share of the events, or the caller did (descheduled
 * while a worker ran the call on its CPU); after it: the step took longer
 * an event than the stretches' steps (a worker that took the caller's CPU
 * and ran the step while the caller waited looks busy, and is no faster).
 * Three such steps in a row (one is noise: a worker woken cold, a
 * neighbour's spin) begin a stretch: its `next` steps run on the caller
 * alone, the workers neither woken nor left spinning for the calls
 * (pool.c), the caller keeping the records it frees (sent to the idle
 * workers' homes, they made the caller's own home grow anew: 2.46 ms a
 * step beside a burner against 2.0) until the pool's next ordering sends
 * them home (events_layout.c).  Then three steps on the pool, judged
 * together (beside a burner a worker that gets a time slice makes one step
 * fast and the next slow): slower an event than the stretch's, the next
 * stretch begins, twice as long (up to ALONE_LONGEST steps); faster, the
 * pool stays, and the next stretch is half as long (at least ALONE_FIRST).
 * The ALONE_WARM_STEPS pool steps right after a stretch are not judged: a
 * worker asleep through the stretch is run by the kernel ahead of a busy
 * neighbour for a while once woken (beside a burner at full duty the first
 * two took 1.2-1.5 ms where the pool's steps took 2.5-3.3 over time;
 * judged, they kept the pool on after most stretches, and optimistic-2 ran
 * half its steps on the pool and 0.78-0.85x the serial executor; with two
 * not judged, 5% of them and 0.87-0.91x).  A stretch's step counts at most
 * ALONE_COLD times the stretches' so far in their average: a step that
 * began with cold caches (another env's steps in between, the learner's
 * update: 4-8 ms) raised it so far that the pool's steps, slower than the
 * stretch's, were not judged lost for dozens of steps.
 * Measured against other rules (bench_alone.py, PCS 64x64; PHOLD of
 * 128-192 entities, a pool a few percent faster than alone): wanting the
 * pool 10% faster than alone put PHOLD's pool into stretches on a quiet
 * machine (7% slower); judging every three steady pool steps together
 * followed a burner at half duty too late (parallel-2 2-8% slower than
 * without stretches), as it ran longer stretches beside one at full duty.
 * The ALONE_SETTLE_STEPS first pool steps of a new pool or after a switch
 * (of executor or threads) are not judged either: its threads just started
 * or woken after the other configuration's steps, its records just moved,
 * the caller's caches another configuration's.  Judged, STPA's probe
 * visits began stretches: on a 2-core VM, parallel-2's first three steps
 * on PCS 64x64 after a switch from parallel-1 took 4.7, 3.2 and 5.0 ms
 * (1.45 over time), a stretch began at the third, and the visit after it
 * timed the caller alone (2.0-2.2 ms, the serial executor's speed): the
 * probe chose the serial executor in 3 of 8 runs alone on the machine.
 * A pool that keeps its cores begins none, and outputs do not depend on it
 * (any thread gives the serial executor's).
 *
 * The stretch's first step begins with the pending events moved into
 * address order (seer_event_relayout_host): the steps a pool lost left
 * them scattered over records grown by half again (PCS 64x64: 98k records
 * to 160k in 40 steps beside a burner), and the caller alone then ran 30%
 * slower (2.55-2.64 ms a step against 1.99 after 40 quiet pool steps); at
 * most once in ALONE_TIDY_BUDGET times its own time (4-7 ms beside a
 * burner); only where the pending records outgrow a core's L2, as the
 * serial executor's (PHOLD of 128 entities: a relayout a stretch cost 5%
 * of its time and gained nothing).  Relaid only where the records had
 * grown by an eighth, the stretches' steps in torch's loop took 2.8 ms
 * against 2.0.  A stretch that begins within the budget relays at its
 * first step that is out of it: skipped, its steps ran a quarter slower
 * the whole stretch.
 *
 * Short stretches keep the partitions: cutting them to one for a stretch
 * (parallel-1's whole-instance steps, 2-3% faster than the windows alone)
 * moved every pending event twice a stretch, 3-5 ms a move beside a
 * burner; cut only for stretches of 64 steps and more, the gain was within
 * the runs' spread.  Long ones (ALONE_SERIAL_MIN steps and more: beside a
 * burner at full duty nearly every stretch after the first few is 256
 * long) run on the serial executor's queues instead
 * (seer_pool_alone_queues_host): the windows' phase machine, the partition
 * lookups of every scheduled event and the two queues cost a step on the
 * caller alone 8% more instructions than the serial executor's
 * (callgrind, PCS 16x16) and, with the caches another env's steps left,
 * 16-20% more time (PCS 64x64 beside a burner, paired in one process:
 * 2.93-3.02 ms a step against 2.49-2.53), where the move there and back
 * costs about three steps a stretch (4-5 ms there, 2-2.5 back).  Measured
 * the same way, a long stretch's steps then took 2.72-2.79 ms against the
 * serial executor's 2.67-2.70; paired with and without long stretches (a
 * local build switch), after their first 200 steps parallel-2 ran
 * 0.98-1.04x the serial executor (0.76-0.92x without), optimistic-2
 * 0.97-1.02x (0.79-0.93x), and 1.00-1.01x on classic PCS 32x32, whose
 * stretches had run the speculation on one thread (0.78-0.81x).  The
 * runtime still says its executor (seer_runtime_executor); a thread or
 * executor switch, a traced step (STPA's) and the stretch's end move the
 * events back first.
 *
 * A stretch's end looks at the caller's CPUs first (its affinity mask: their
 * idle, I/O-wait and nice time in /proc/stat, seer_cpus_free_ns_any): where
 * they had under ALONE_FREE_MIN of a core free during the stretch, every
 * core but the caller's was held by others (a burner, torch's OpenMP
 * workers spinning after each forward pass, other env processes), and the
 * pool's threads could only have shared those cores: the next stretch
 * begins at once, twice as long, without the pool's steps, the moves of the
 * events and the relayout between (about 20 ms a stretch on PCS 64x64: 3-4%
 * of a 256-step stretch's time in torch's loop).  The free time of the
 * whole stretch, the caller's work between its steps included, is held to
 * the time of its steps alone: it bounds what was free during them (in a
 * round-robin loop over several envs the other core is free during this
 * env's steps and busy with the others' pools between them: held to the
 * stretch's whole time, the pool would never be tried again; a caller that
 * waits for a GPU or I/O leaves its own CPU free, and the pool is tried).
 * At most ALONE_GO_ON_MAX in a row (a core held by a task the kernel would
 * put behind our workers, a cgroup's weight, is busy to /proc/stat as
 * well: the pool is tried at least every 8th stretch), only stretches whose
 * steps took ALONE_LOOK_NS and more (the counts are in clock ticks, 10 ms a
 * CPU at 100 Hz), and anything the CPUs cannot say (no /proc, a malformed
 * or shrinking count) tries the pool as before.  Paired in one process
 * (benchmarks/bench_alone.py --var SEER_POOL_ALONE_CPUS, PCS 64x64, 2
 * cores, four runs): beside a burner at full duty the time with the look
 * over the time without 0.92-1.02 for parallel-2, 0.86-0.98 for
 * optimistic-2 (envs made alike spread by 5-10% there); the step's time in
 * torch's loop 2% less; company that leaves is seen as before (the pool
 * back within the stretch it left in).
 * SEER_POOL_ALONE_CPUS=0 turns the look off. */
#define ALONE_FIRST 8u
#define ALONE_LONGEST 256u
#define ALONE_SHARE 4u /* events under 1/4 of a side's share: lost */
#define ALONE_LOST_STEPS 3u /* lost pool steps in a row; the steps after a stretch */
#define ALONE_TIDY_BUDGET 20u /* relayouts at most 1/20 of the time */
#define ALONE_WARM_STEPS 2u /* pool steps after a stretch not judged */
#define ALONE_COLD 1.25     /* a stretch's step counts at most this times the average */
#define ALONE_SETTLE_STEPS 3u /* pool steps of a new configuration not judged */
#define ALONE_SERIAL_MIN 64u  /* stretches this long: on the serial executor's queues */
#define ALONE_LOOK_NS 200000000ull /* stretches whose steps took this long (ns) look at the CPUs */
#define ALONE_FREE_MIN 0.25 /* ... their free time under this many cores over the steps: runs on */
#define ALONE_GO_ON_MAX 7u  /* ... at most this many stretches in a row */

static int tracing_host(const seer_runtime *rt)
{
    return rt->pool.workers && rt->pool.workers[0].trace != NULL;
}

void seer_pool_alone_init_host(seer_runtime *rt, int allowed)
{
    /* (a pool made anew keeps where the events are: the next step moves
     * them back, seer_pool_alone_queues_host) */
    const seer_rt_alone *a = &rt->pool.alone;
    rt->pool.alone = (seer_rt_alone){.allowed = allowed, .next = ALONE_FIRST,
                                     .settling = ALONE_SETTLE_STEPS,
                                     .serial = a->serial, .executor = a->executor,
                                     .cpus_free = a->cpus_free};
}

void seer_pool_alone_end_host(seer_runtime *rt)
{
    seer_rt_alone *a = &rt->pool.alone;
    a->left = a->lost = a->probe = 0;
    a->probe_ns = a->probe_events = 0;
    a->next = ALONE_FIRST;
    a->settling = ALONE_SETTLE_STEPS;
    a->looked = 0;
    a->went_on = 0;
}

uint32_t seer_pool_alone_cap_host(seer_runtime *rt, uint32_t n)
{
    seer_rt_alone *a = &rt->pool.alone;
    if (!a->left || n <= 1)
        return n;
    if (tracing_host(rt) || rt->check.mode) {
        a->left = 0; /* a traced step (STPA's) must see the pool as it is */
        return n;
    }
    /* relaxed: a hint the workers read; published with the call */
    atomic_store_explicit(&rt->pool.wake_spins, 0u, memory_order_relaxed);
    return 1;
}

/* A stretch begins (`tidy`: its events in order first; not where one runs
 * on: they are in order since the last one's first step) and reads the
 * caller's CPUs' free time for its end (go_on_alone). */
static void begin_stretch(seer_rt_alone *a, int tidy)
{
    a->lost = 0;
    a->left = a->next;
    a->long_stretch = a->left >= ALONE_SERIAL_MIN;
    a->next = a->next * 2 < ALONE_LONGEST ? a->next * 2 : ALONE_LONGEST;
    a->stretches++;
    a->tidy = tidy;
    a->looked = a->cpus_free && a->cpus_free(&a->look_free_ns) == 0;
    a->look_steps_ns = 0;
}

/* At a stretch's end: 1 where the caller's CPUs had under ALONE_FREE_MIN
 * cores' worth of free time during it, counted against the time of its
 * steps alone (at most ALONE_GO_ON_MAX times in a row), so that the pool's
 * threads could only have taken cores that others held: the next stretch
 * begins at once, without the pool's steps. */
static int go_on_alone(seer_rt_alone *a)
{
    uint64_t free_ns;
    const int ok = a->looked && a->went_on < ALONE_GO_ON_MAX &&
                   a->look_steps_ns >= ALONE_LOOK_NS && a->cpus_free(&free_ns) == 0 &&
                   free_ns >= a->look_free_ns &&
                   (double)(free_ns - a->look_free_ns) <
                       ALONE_FREE_MIN * (double)a->look_steps_ns;
    a->went_on = ok ? a->went_on + 1 : 0;
    a->went_on_total += (uint64_t)ok;
    return ok;
}

void seer_pool_alone_after_call_host(seer_runtime *rt, const seer_pool_call *call)
{
    seer_rt_alone *a = &rt->pool.alone;
    if (!call->step || !call->events)
        return;
    if (a->left) { /* a step of the stretch */
        double per = (double)call->ns / (double)call->events;
        if (a->alone_ns > 0 && per > ALONE_COLD * a->alone_ns)
            per = ALONE_COLD * a->alone_ns; /* a cold step: as one a quarter slower */
        a->alone_ns = a->alone_ns > 0 ? 0.75 * a->alone_ns + 0.25 * per : per;
        a->left--;
        a->steps++;
        a->look_steps_ns += call->ns;
        if (!a->left && go_on_alone(a)) {
            begin_stretch(a, !a->serial);
            return;
        }
        if (!a->left) {
            rt->mem.order_now = 1; /* the records the caller kept go home */
            a->probe = ALONE_WARM_STEPS + ALONE_LOST_STEPS;
            a->probe_ns = a->probe_events = 0;
        }
        return;
    }
    if (call->threads < 2 || !a->allowed || rt->check.mode || tracing_host(rt))
        return;
    if (a->settling) { /* a new configuration's first steps: not judged */
        a->settling--;
        return;
    }
    if (a->probe) { /* the pool's steps after a stretch, taken together */
        if (a->probe-- > ALONE_LOST_STEPS)
            return; /* its workers just woken: not judged */
        a->probe_ns += call->ns;
        a->probe_events += call->events;
        if (a->probe)
            return;
        if ((double)a->probe_ns / (double)a->probe_events > a->alone_ns)
            begin_stretch(a, 1);
        else
            a->next = a->next / 2 > ALONE_FIRST ? a->next / 2 : ALONE_FIRST;
        return;
    }
    const uint64_t others = call->events - call->caller_events;
    const int lost = a->alone_ns > 0
                         ? (double)call->ns / (double)call->events > a->alone_ns
                         : call->caller_wait_ns * 4u > call->ns ||
                               others * ALONE_SHARE * call->threads < call->events ||
                               call->caller_events * ALONE_SHARE * call->threads <
                                   call->events;
    if (!lost) {
        a->next = a->next / 2 > ALONE_FIRST ? a->next / 2 : ALONE_FIRST;
        a->lost = 0;
        return;
    }
    if (++a->lost == ALONE_LOST_STEPS)
        begin_stretch(a, 1);
}

void seer_pool_alone_before_step_host(seer_runtime *rt)
{
    seer_rt_alone *a = &rt->pool.alone;
    if (!a->tidy)
        return;
    const uint64_t t0 = seer_clock_ns();
    /* as the serial executor's (events_layout.c): where the pending records
     * fit a core's L2 their places matter little, and SEER_RELAYOUT=1 says
     * whatever the sizes */
    if (!a->left || !rt->mem.relayout ||
        (rt->mem.relayout == 1 && seer_event_pending_fit_cache_host(rt))) {
        a->tidy = 0;
        return;
    }
    if (a->tidy_cost_ns && t0 - a->tidied_ns < ALONE_TIDY_BUDGET * a->tidy_cost_ns)
        return; /* a later step of the stretch */
    a->tidy = 0;
    (void)seer_event_relayout_host(rt);
    a->tidied_ns = seer_clock_ns();
    a->tidy_cost_ns = a->tidied_ns > t0 ? a->tidied_ns - t0 : 1;
}

/* ---- long stretches on the serial executor's queues --------------------------- */

static int to_serial_host(seer_runtime *rt)
{
    seer_rt_alone *a = &rt->pool.alone;
    int lost = 0;
    const int executor = rt->executor;
    if (seer_migrate_all(rt, SEER_EXECUTOR_SERIAL, &lost) != SEER_OK)
        return SEER_E_NOMEM; /* (lost: the instances say they need a reset) */
    a->executor = executor;
    a->serial = 1;
    rt->executor = SEER_EXECUTOR_SERIAL;
    return SEER_OK;
}

int seer_pool_alone_leave_serial_host(seer_runtime *rt)
{
    seer_rt_alone *a = &rt->pool.alone;
    if (!a->serial)
        return SEER_OK;
    int lost = 0;
    if (seer_migrate_all(rt, a->executor, &lost) != SEER_OK)
        return SEER_E_NOMEM; /* still whole on the serial queues (or lost) */
    rt->executor = a->executor;
    a->serial = 0;
    a->long_stretch = 0;
    rt->mem.order_now = 1; /* the records the caller kept go home */
    return SEER_OK;
}

void seer_pool_alone_queues_host(seer_runtime *rt)
{
    seer_rt_alone *a = &rt->pool.alone;
    const int traced = tracing_host(rt) || rt->check.mode;
    if (a->serial) {
        if (a->left && !traced)
            return;
        if (traced)
            a->left = 0; /* a traced step (STPA's) must see the pool as it is */
        if (seer_pool_alone_leave_serial_host(rt) != SEER_OK && !a->left)
            a->left = 1; /* out of memory: one more step alone, then again */
        return;
    }
    if (a->left && a->long_stretch && !traced && rt->executor != SEER_EXECUTOR_SERIAL &&
        to_serial_host(rt) != SEER_OK)
        a->long_stretch = 0; /* out of memory: the stretch on the pool's queues */
}
