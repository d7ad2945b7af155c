/*
 * trace.h -- trace buffers (trace.c; private), and the record writer the
 * event loop inlines.
 */
#ifndef SEER_TRACE_H
#define SEER_TRACE_H

#include <stdint.h>

#include "runtime.h"

/* ---- trace.c, and the record writer the event loop inlines --------------- */

/* Is this worker tracing?  Tracing off costs one predictable branch per
 * entity visit / phase; -DSEER_NO_TRACE compiles the checks out (the build
 * `python benchmarks/bench_suite.py trace-overhead` compares against). */
#ifdef SEER_NO_TRACE
#define SEER_TRACING(w) ((void)(w), 0)
#define SEER_TRACING_EVENTS(w) ((void)(w), 0)
#else
#define SEER_TRACING(w) __builtin_expect((w)->trace != NULL, 0)
/* ... and recording each handled event (seer_runtime_trace_events) */
#define SEER_TRACING_EVENTS(w) __builtin_expect((w)->trace != NULL && !(w)->rt->trace_no_events, 0)
#endif

/* CLOCK_MONOTONIC in ns (trace.c).  Any thread. */
uint64_t seer_clock_ns(void);

/* Append a record to w's trace (counted as dropped when full).  w's thread,
 * while it holds a chunk (the host reads the records after the call). */
static inline void seer_trace_add_local(seer_worker *w, uint32_t kind, uint64_t t0, uint64_t t1,
                                        double sim_time, uint32_t instance, uint32_t entity,
                                        uint32_t type, uint32_t count)
{
    if (w->trace_n >= w->rt->trace_cap) {
        w->trace_dropped++;
        return;
    }
    seer_trace_rec *r = &w->trace[w->trace_n++];
    r->t0_ns = t0;
    r->t1_ns = t1;
    r->sim_time = sim_time;
    r->kind = kind;
    r->instance = instance;
    r->entity = entity;
    r->type = type;
    r->count = count;
    r->pad_ = 0;
}

/* (Re)allocate w's trace buffer for rt->trace_cap records (host, or the pool
 * starting). */
int seer_trace_alloc_worker(seer_runtime *rt, seer_worker *w);

#endif /* SEER_TRACE_H */
