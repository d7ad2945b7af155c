/*
 * trace.c -- tracing: per-worker buffers of seer_trace_rec (events, act,
 * windows, boundary phases, waits) that `seer_env.trace` turns into a
 * Perfetto trace.  The host turns tracing on or off and reads the records
 * between calls (seer_runtime_trace*, seer_runtime.h); during a call each
 * worker appends to its own buffer only, while it holds a chunk of a phase
 * (seer_trace_add_local, inline in trace.h: the event loop records every
 * event when tracing), so the records happen before the call returns.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "errors.h"
#include "runtime.h"
#include "trace.h"

uint64_t seer_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int seer_trace_alloc_worker(seer_runtime *rt, seer_worker *w)
{
    free(w->trace);
    w->trace = NULL;
    w->trace_n = 0;
    w->trace_dropped = 0;
    if (!rt->trace_cap)
        return SEER_OK;
    w->trace = malloc(rt->trace_cap * sizeof *w->trace);
    if (!w->trace)
        return SEER_E_NOMEM;
    /* Touch the pages now, not in the first traced event loop. */
    memset(w->trace, 0, rt->trace_cap * sizeof *w->trace);
    return SEER_OK;
}

void seer_runtime_trace_events(seer_runtime *rt, int on)
{
    rt->trace_no_events = !on;
}

int seer_runtime_trace(seer_runtime *rt, uint64_t capacity)
{
    if (capacity > (1ull << 28)) {
        seer_fail(rt, "trace capacity %llu is above 2^28 records per thread",
                  (unsigned long long)capacity);
        return SEER_E_ARG;
    }
    rt->trace_cap = capacity;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        if (seer_trace_alloc_worker(rt, &rt->pool.workers[t]) != SEER_OK) {
            rt->trace_cap = 0;
            for (uint32_t u = 0; u < rt->pool.nthreads; u++)
                seer_trace_alloc_worker(rt, &rt->pool.workers[u]);
            seer_fail(rt, "out of memory for %llu trace records per thread",
                      (unsigned long long)capacity);
            return SEER_E_NOMEM;
        }
    }
    return SEER_OK;
}

uint64_t seer_runtime_trace_count(const seer_runtime *rt, uint32_t worker)
{
    return worker < rt->pool.nthreads ? rt->pool.workers[worker].trace_n : 0;
}

const seer_trace_rec *seer_runtime_trace_records(const seer_runtime *rt, uint32_t worker)
{
    return worker < rt->pool.nthreads ? rt->pool.workers[worker].trace : NULL;
}

uint64_t seer_runtime_trace_dropped(const seer_runtime *rt)
{
    uint64_t n = 0;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++)
        n += rt->pool.workers[t].trace_dropped;
    return n;
}

void seer_runtime_trace_clear(seer_runtime *rt)
{
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        rt->pool.workers[t].trace_n = 0;
        rt->pool.workers[t].trace_dropped = 0;
    }
}
