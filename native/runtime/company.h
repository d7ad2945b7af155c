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

#endif /* SEER_COMPANY_H */
