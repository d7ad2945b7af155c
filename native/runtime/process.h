/*
 * process.h -- what the runtime must know about its process (process.c;
 * private): fork, Ctrl-C, CPUs, physical memory.
 */
#ifndef SEER_PROCESS_H
#define SEER_PROCESS_H

#include <pthread.h>
#include <stdint.h>

/* ---- process.c ------------------------------------------------------------- */

/* Bumped in every child of fork(): a runtime created before the fork sees a
 * new value in the child.  Any thread. */
unsigned seer_fork_generation(void);
/* Around a runtime's host-side bookkeeping (switching executors, resizing
 * the pool, ordering or freeing event lists, restoring, a call's
 * preparation): fork()'s prepare handler waits until no such work runs, so
 * that a child never finds lists half rewritten by a thread it does not
 * have.  Host thread; never around a model's hooks (a Python model's hook
 * may need the interpreter's lock, which a forking thread holds).  Holds
 * nest. */
void seer_fork_hold_host(void);
void seer_fork_release_host(void);
/* Put the runtime's SIGINT counter in front of the handler installed now. */
void seer_sigint_watch(void);
/* SIGINTs since the process started.  Any thread. */
uint64_t seer_sigint_count(void);
/* The calling thread's kernel thread id (Linux's gettid; 0 elsewhere: no
 * such id).  Any thread. */
int64_t seer_thread_id_any(void);
/* The CPU the calling thread runs on now (-1: unknown).  Any thread. */
int seer_cpu_now_any(void);
/* A thread's own CPUs (a cpu_set_t of 1024 CPUs), as it had them before
 * seer_thread_avoid_cpu_host first changed them; `known` 0 until then. */
typedef struct seer_cpus {
    uint64_t bits[16];
    int known;
} seer_cpus;
/* Let `thread` run on its own CPUs (`own`, read from the thread the first
 * time) but `cpu`, where that leaves one at least; cpu < 0, or one it may
 * not run on anyway: on all of its own again.  Returns 0 or the error of the
 * affinity call (best effort: the thread runs where it did).  The host
 * thread, for its pool's workers. */
int seer_thread_avoid_cpu_host(pthread_t thread, int cpu, seer_cpus *own);
uint32_t seer_cpu_count(void);
/* The free time so far of the CPUs in `cpus` (their idle, I/O-wait and
 * nice time: a core no task of normal priority held) in clock ticks
 * (sysconf(_SC_CLK_TCK) a second), from /proc/stat's text read from `fd`
 * (its cpuN lines, which come first; read no further; a last line cut
 * short is not counted).  Returns 0, or -1 where a cpu line is malformed
 * or none of `cpus` has one.  Any thread. */
int seer_cpu_stat_free_ticks_fd(int fd, const seer_cpus *cpus, uint64_t *ticks);
/* The free time of the calling thread's CPUs (its affinity mask) so far,
 * in ns: from /proc/stat, at the ticks' resolution.  Returns 0, or -1
 * where it cannot say (not Linux, /proc unreadable or malformed): the
 * caller then knows nothing of the CPUs.  Any thread (the host reads its
 * own CPUs). */
int seer_cpus_free_ns_any(uint64_t *free_ns);
uint64_t seer_physical_memory(void);

#endif /* SEER_PROCESS_H */
