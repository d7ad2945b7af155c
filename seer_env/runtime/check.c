/*
 * check.c -- the checking mode's watch on nondeterministic sources.
 *
 * The contract lets a handler draw random numbers only from its entity's
 * stream (seer_rng_*) and read no clock.  Every extension links the C
 * library's generators and clocks through the wrappers below (the build
 * passes -Wl,--wrap=NAME for each, see _build.py): outside a checked handler
 * they forward to the real function at the cost of one thread-local load;
 * inside one (checking mode, seer_check_frame set on this thread) they also
 * record which function the handler called, and the runtime fails the call
 * with SEER_E_ISOLATION once the handler returns.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#include "internal.h"

/* The checked handler running on this thread (NULL: none).  Set and cleared
 * by the thread itself around a handler call: no other thread reads it. */
_Thread_local seer_check_frame *seer_check_current;

static void foreign(const char *fn)
{
    seer_check_frame *f = seer_check_current;
    if (f && !f->foreign)
        f->foreign = fn;
}

#define WRAP0(ret, name)                                                                 \
    ret __real_##name(void);                                                             \
    ret __wrap_##name(void);                                                             \
    ret __wrap_##name(void)                                                              \
    {                                                                                    \
        foreign(#name);                                                                  \
        return __real_##name();                                                          \
    }
#define WRAP1(ret, name, T)                                                              \
    ret __real_##name(T a);                                                              \
    ret __wrap_##name(T a);                                                              \
    ret __wrap_##name(T a)                                                               \
    {                                                                                    \
        foreign(#name);                                                                  \
        return __real_##name(a);                                                         \
    }
#define WRAP2(ret, name, T, U)                                                           \
    ret __real_##name(T a, U b);                                                         \
    ret __wrap_##name(T a, U b);                                                         \
    ret __wrap_##name(T a, U b)                                                          \
    {                                                                                    \
        foreign(#name);                                                                  \
        return __real_##name(a, b);                                                      \
    }

WRAP0(int, rand)
WRAP1(int, rand_r, unsigned int *)
WRAP0(long, random)
WRAP0(double, drand48)
WRAP1(double, erand48, unsigned short *)
WRAP0(long, lrand48)
WRAP1(long, nrand48, unsigned short *)
WRAP0(long, mrand48)
WRAP1(long, jrand48, unsigned short *)
WRAP1(time_t, time, time_t *)
WRAP0(clock_t, clock)
WRAP2(int, gettimeofday, struct timeval *, void *)
WRAP2(int, clock_gettime, clockid_t, struct timespec *)
WRAP2(int, timespec_get, struct timespec *, int)

void __real_srand(unsigned int seed);
void __wrap_srand(unsigned int seed);
void __wrap_srand(unsigned int seed)
{
    foreign("srand");
    __real_srand(seed);
}

void __real_srandom(unsigned int seed);
void __wrap_srandom(unsigned int seed);
void __wrap_srandom(unsigned int seed)
{
    foreign("srandom");
    __real_srandom(seed);
}

void __real_srand48(long seed);
void __wrap_srand48(long seed);
void __wrap_srand48(long seed)
{
    foreign("srand48");
    __real_srand48(seed);
}
