/*
 * faults.c -- allocation-failure injection for the runtime's failure-path
 * tests (tests/native/stress_failures.c; see faults.h).  Compiled only
 * with -DSEER_FAULT_INJECTION: the normal build compiles this file to
 * nothing.
 *
 * One countdown per kind (allocations, thread creations), shared by every
 * thread: each wrapped call takes one tick, and the call that takes the last
 * one fails.  "From then on" keeps the countdown at its last tick, so every
 * later call fails too.  The workers allocate (event chunks, queue vectors)
 * while the host does: which call fails is then up to the schedule, but
 * exactly one does (or, from then on, all that follow).
 */
#ifdef SEER_FAULT_INJECTION
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define SEER_FI_REAL_CALLS /* this file calls the real functions */
#include "faults.h"

/* Every access below is seq_cst (the default order): test-only code, where
 * the simplest argument beats speed.  Arming happens while no runtime
 * thread allocates (between scenarios), the countdown itself is one CAS
 * loop, and the test reads the counters between calls. */
static _Atomic uint64_t g_left[2];   /* ticks left; 0: disarmed          */
static _Atomic int g_sticky[2];      /* fail every call after the n-th   */
static _Atomic uint64_t g_failed[2]; /* calls made to fail since arming  */

void seer_fi_arm(int kind, uint64_t n, int from_then_on)
{
    atomic_store(&g_left[kind], 0); /* no call fails while re-arming */
    atomic_store(&g_failed[kind], 0);
    atomic_store(&g_sticky[kind], from_then_on);
    atomic_store(&g_left[kind], n);
}

uint64_t seer_fi_failed(int kind) { return atomic_load(&g_failed[kind]); }

/* Take one tick: does this call fail? */
static int fail_now(int kind)
{
    uint64_t left = atomic_load(&g_left[kind]);
    for (;;) {
        if (left == 0)
            return 0;
        if (left == 1 && atomic_load(&g_sticky[kind])) {
            atomic_fetch_add(&g_failed[kind], 1);
            return 1;
        }
        if (atomic_compare_exchange_weak(&g_left[kind], &left, left - 1)) {
            if (left != 1)
                return 0;
            atomic_fetch_add(&g_failed[kind], 1);
            return 1;
        }
    }
}

void *seer_fi_malloc(size_t size) { return fail_now(SEER_FI_ALLOC) ? NULL : malloc(size); }

void *seer_fi_calloc(size_t n, size_t size)
{
    return fail_now(SEER_FI_ALLOC) ? NULL : calloc(n, size);
}

/* A failed realloc leaves the block as it was (and allocated). */
void *seer_fi_realloc(void *p, size_t size)
{
    return fail_now(SEER_FI_ALLOC) ? NULL : realloc(p, size);
}

void *seer_fi_aligned_alloc(size_t align, size_t size)
{
    return fail_now(SEER_FI_ALLOC) ? NULL : aligned_alloc(align, size);
}

int seer_fi_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                           void *arg)
{
    return fail_now(SEER_FI_THREAD) ? EAGAIN : pthread_create(t, attr, fn, arg);
}

#endif /* SEER_FAULT_INJECTION */
