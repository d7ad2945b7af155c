/*
 * partition.h -- partitions, executor switches, pool size (partition.c;
 * private).
 */
#ifndef SEER_PARTITION_H
#define SEER_PARTITION_H

#include <stdint.h>

#include "runtime.h"

/* ---- partition.c: partitions, executor switches, pool size ----------------- */

/* The pool size that takes part in calls: `threads`, capped at the usable
 * CPUs unless flags has SEER_RT_OVERSUBSCRIBE. */
uint32_t seer_active_threads(uint32_t flags, uint32_t threads);
/* Cut every instance's entities into partitions for a pool of `threads`
 * (moving pending events to the new partitions' queues).  On failure
 * nothing changed, or instances that could not be restored need a reset
 * (rt->err says which). */
int seer_set_partitions(seer_runtime *rt, uint32_t threads);
/* Free an instance's partition queues (rt->part.n of them) and the array. */
void seer_free_part_queues(const seer_runtime *rt, seer_squeue *parts);
/* Instance i's step on the serial executor, its events moved to the serial
 * queue and back: the serial fallback of a parallel step (act = 1: the
 * whole step), or the rest of an optimistic step whose speculation was
 * abandoned (act = 0: its act phase ran, and `done` events of the step were
 * handled and committed before: they count towards the step's budget). */
int seer_step_serially(seer_runtime *rt, uint32_t i, int act, uint64_t done);

#endif /* SEER_PARTITION_H */
