/*
 * company.h -- the worker pool in company (company.c; private, core layer):
 * what the host does between calls where the pool shares the cores with the
 * caller's own work and with other thread pools and processes.
 */
#ifndef SEER_COMPANY_H
#define SEER_COMPANY_H

#include <stdint.h>

#include "runtime.h"

/* A step of any executor ran from t0 to t1 (ns, seer_clock_ns): the ring of
 * steps and the gaps between them that keeps the workers off the caller's
 * CPU between a training loop's calls.  Host, after each step. */
void seer_pool_note_step_host(seer_runtime *rt, uint64_t t0, uint64_t t1);
/* Before a call on `n` threads (n > 1): the workers kept off the caller's
 * CPU of the moment, or back where they may run, as the loop's gaps say.
 * Host, between calls. */
void seer_pool_keep_off_caller_host(seer_runtime *rt, uint32_t n);

/* A pool call as the host saw it (seer_pool_alone_after_call_host). */
typedef struct seer_pool_call {
    int step;                /* a step (not a reset)                          */
    uint32_t threads;        /* the threads that took part in it              */
    uint64_t ns;             /* its time, from the call's start to DONE       */
    uint64_t events;         /* events every thread handled                   */
    uint64_t caller_events;  /* ... the caller's thread of them               */
    uint64_t caller_wait_ns; /* the caller's waits for phases others held     */
} seer_pool_call;

/* Alone stretches (company.c says what they are and why).  Host, between
 * calls: the state at a pool's start (allowed: SEER_POOL_ALONE is not 0). */
void seer_pool_alone_init_host(seer_runtime *rt, int allowed);
/* The threads of the next call, `n` before: 1 during a stretch (not for a
 * traced call, nor in checking mode, which end it). */
uint32_t seer_pool_alone_cap_host(seer_runtime *rt, uint32_t n);
/* After a pool call: a stretch's step counted, or a stretch begun where the
 * pool lost its threads and the steps alone were faster. */
void seer_pool_alone_after_call_host(seer_runtime *rt, const seer_pool_call *call);
/* Before a step's call (host, between calls): a stretch's first step
 * begins with the pending events in address order (company.c says why). */
void seer_pool_alone_before_step_host(seer_runtime *rt);
/* End a stretch now (an executor or thread switch): the next call runs on
 * the pool, its first steps are not judged (ALONE_SETTLE_STEPS), and a
 * stretch after them starts short. */
void seer_pool_alone_end_host(seer_runtime *rt);
/* Before a step (host, between calls, before its boundaries are set): a
 * long stretch's first step moves every pending event to the serial
 * executor's queues (rt->executor becomes SERIAL for the stretch), the step
 * after its last (or a traced step) moves them back.  Out of memory: the
 * stretch stays where its events are, and tries again the next step. */
void seer_pool_alone_queues_host(seer_runtime *rt);
/* The events back on the pool's queues now (an executor or thread switch,
 * before seer_pool_alone_end_host): SEER_E_NOMEM leaves them on the serial
 * queues, whole. */
int seer_pool_alone_leave_serial_host(seer_runtime *rt);

#endif /* SEER_COMPANY_H */
