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
uint64_t seer_physical_memory(void);

#endif /* SEER_PROCESS_H */
