/*
 * process.c -- what the runtime needs to know about its process: forks,
 * Ctrl-C (SIGINT), the CPUs it may use and the memory it may take.
 *
 * Forks.  A child of fork() has the parent's memory but only the forking
 * thread: a runtime's workers are gone there, and a lock one of them held at
 * the fork stays held.  A process-wide generation, bumped in the child by a
 * pthread_atfork handler, tells a runtime that it now lives in a child; its
 * next call re-creates its locks and worker pool there (seer_pool_after_fork
 * in parallel.c), so the child can use it, close it or exit.
 *
 * Ctrl-C.  While a step runs in C the Python interpreter cannot act on
 * SIGINT.  The runtime chains a handler in front of the one installed (the
 * interpreter's): it counts the signal, then calls the previous handler as
 * if it had been called directly.  The event loops compare the count with
 * its value at the start of the call every few hundred events and abandon
 * the call (SEER_E_INTERRUPTED) when it changed: the interrupt reaches the
 * user within milliseconds, and the instances are marked as needing a reset.
 * A handler installed later in place of ours simply turns this off.
 *
 * Called by the host (runtime.c: seer_call_begin, create/destroy) but for
 * seer_sigint_count, which the workers poll too (any thread).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- fork -------------------------------------------------------------------- */

/* Bumped in each child of a fork.  relaxed everywhere: the child's handler
 * runs in the only thread there is, before fork() returns in it. */
static _Atomic unsigned g_fork_gen;
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
    /* relaxed: see g_fork_gen */
    atomic_fetch_add_explicit(&g_fork_gen, 1, memory_order_relaxed);
}

static void fork_register(void) { (void)pthread_atfork(NULL, NULL, fork_child); }

unsigned seer_fork_generation(void)
{
    (void)pthread_once(&g_fork_once, fork_register);
    /* relaxed: see g_fork_gen (the bump happened in this thread, if at all) */
    return atomic_load_explicit(&g_fork_gen, memory_order_relaxed);
}

/* ---- SIGINT ------------------------------------------------------------------ */

/* Signals counted since the process started (any thread may take one). */
static _Atomic uint64_t g_sigint;
static struct sigaction g_prev_int;
static pthread_mutex_t g_int_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigint(int sig, siginfo_t *si, void *uctx)
{
    /* relaxed: read by the event loops, which only need to see it soon */
    atomic_fetch_add_explicit(&g_sigint, 1, memory_order_relaxed);
    if (g_prev_int.sa_flags & SA_SIGINFO) {
        if (g_prev_int.sa_sigaction)
            g_prev_int.sa_sigaction(sig, si, uctx);
    } else if (g_prev_int.sa_handler == SIG_DFL) {
        /* the default action, as if we were not here: terminate */
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    } else if (g_prev_int.sa_handler != SIG_IGN) {
        g_prev_int.sa_handler(sig);
    }
}

void seer_sigint_watch(void)
{
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0)
        return;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigint)
        return; /* ours, still in front */
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
        return; /* the process ignores SIGINT: so do we */
    pthread_mutex_lock(&g_int_lock);
    if (sigaction(SIGINT, NULL, &cur) == 0 &&
        !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigint)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigint;
        sa.sa_flags = SA_SIGINFO | (cur.sa_flags & SA_RESTART);
        sa.sa_mask = cur.sa_mask;
        g_prev_int = cur;
        (void)sigaction(SIGINT, &sa, NULL);
    }
    pthread_mutex_unlock(&g_int_lock);
}

uint64_t seer_sigint_count(void)
{
    /* relaxed: a count compared with an earlier value of itself; nothing
     * else is published with it, and seeing it a little late is fine. */
    return atomic_load_explicit(&g_sigint, memory_order_relaxed);
}

/* ---- CPUs and memory ------------------------------------------------------- */

uint32_t seer_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (uint32_t)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1u;
}

uint64_t seer_physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return UINT64_MAX;
    return (uint64_t)pages * (uint64_t)page;
}
