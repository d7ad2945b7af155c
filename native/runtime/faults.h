/*
 * faults.h -- allocation-failure injection (faults.c), for the runtime's
 * failure-path tests only (private).  Included by base.h (so by every file
 * of the runtime) and by every header whose inline functions allocate
 * (vec.h, arena.h), after the system headers, so that the macros rename the
 * runtime's own calls alone.
 */
#ifndef SEER_FAULTS_H
#define SEER_FAULTS_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* Allocation-failure injection (faults.c), for tests/native/stress_failures.c
 * only: the test build defines SEER_FAULT_INJECTION, the normal build never
 * does and compiles to the same code as without this block.  Every
 * allocation of the runtime (malloc, calloc, realloc, aligned_alloc) and
 * every thread it creates (pthread_create) then goes through a wrapper that
 * counts down: seer_fi_arm(kind, n, from_then_on) makes the n-th call of
 * that kind from now fail (NULL, or EAGAIN for a thread), and with
 * from_then_on every call after it too; n = 0 disarms.  The macros come
 * after the standard headers, so they rename only the runtime's own calls
 * (every runtime file and header includes this one after its system headers);
 * faults.c and the test define SEER_FI_REAL_CALLS to call the real ones. */
#ifdef SEER_FAULT_INJECTION
#include <stdlib.h>
enum { SEER_FI_ALLOC = 0, SEER_FI_THREAD = 1 };
void seer_fi_arm(int kind, uint64_t n, int from_then_on);
/* Calls of that kind made to fail since it was last armed. */
uint64_t seer_fi_failed(int kind);
void *seer_fi_malloc(size_t size);
void *seer_fi_calloc(size_t n, size_t size);
void *seer_fi_realloc(void *p, size_t size);
void *seer_fi_aligned_alloc(size_t align, size_t size);
int seer_fi_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                           void *arg);
#ifndef SEER_FI_REAL_CALLS
#define malloc(size) seer_fi_malloc(size)
#define calloc(n, size) seer_fi_calloc(n, size)
#define realloc(p, size) seer_fi_realloc(p, size)
#define aligned_alloc(align, size) seer_fi_aligned_alloc(align, size)
#define pthread_create(t, attr, fn, arg) seer_fi_pthread_create(t, attr, fn, arg)
#endif
#endif /* SEER_FAULT_INJECTION */

#endif /* SEER_FAULTS_H */
