/*
 * process.h -- what the runtime must know about its process (process.c;
 * private): fork, Ctrl-C, CPUs, physical memory.
 */
#ifndef SEER_PROCESS_H
#define SEER_PROCESS_H

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
uint32_t seer_cpu_count(void);
uint64_t seer_physical_memory(void);

#endif /* SEER_PROCESS_H */
