/*
 * company.c -- a worker pool in company (private, core layer): what the pool
 * does where it shares the cores with the caller's own work (a training
 * loop's policy, its learner) and with other thread pools and processes.
 * The phase machine itself (pool.c) calls in here between calls: the host
 * keeps the workers off the caller's CPU between a training loop's calls.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "base.h"
#include "company.h"
#include "process.h"
#include "runtime.h"

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
