/*
 * park.c -- parking a thread on a word (park.h): a futex on Linux, a short
 * sleep elsewhere.  Own translation unit: the futex system call needs
 * _GNU_SOURCE, which the runtime's other files do not define.
 */
#define _GNU_SOURCE
#include "park.h"

#include <time.h>

#if defined(__linux__)
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void seer_park_wait_any(_Atomic uint32_t *word, uint32_t expected, uint64_t max_ns)
{
    struct timespec ts, *limit = NULL;
    if (max_ns) {
        ts.tv_sec = (time_t)(max_ns / 1000000000u);
        ts.tv_nsec = (long)(max_ns % 1000000000u);
        limit = &ts;
    }
    /* The kernel reads *word itself (atomically, under the futex's lock);
     * the cast drops only the _Atomic qualifier of a lock-free 32-bit word.
     * EINTR, EAGAIN (the word changed) and ETIMEDOUT all mean: re-check. */
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, limit, NULL, 0);
}

void seer_park_wake_all_any(_Atomic uint32_t *word)
{
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

#else

void seer_park_wait_any(_Atomic uint32_t *word, uint32_t expected, uint64_t max_ns)
{
    /* relaxed: a hint; the caller re-checks its condition with its own order. */
    if (atomic_load_explicit(word, memory_order_relaxed) != expected)
        return;
    uint64_t ns = max_ns && max_ns < 50000u ? max_ns : 50000u;
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
}

void seer_park_wake_all_any(_Atomic uint32_t *word) { (void)word; }

#endif
