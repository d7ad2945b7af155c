/*
 * partition.h -- partitions, moving pending events between the executors'
 * queues, the threads that take part in calls (partition.c; private).
 */
#ifndef SEER_PARTITION_H
#define SEER_PARTITION_H

#include <stdint.h>

#include "runtime.h"

/* ---- partition.c: partitions, migration, active threads ------------------- */

/* The pool size that takes part in calls: `threads`, capped at the usable
 * CPUs unless flags has SEER_RT_OVERSUBSCRIBE. */
uint32_t seer_active_threads(uint32_t flags, uint32_t threads);
/* The partitions per instance a pool of `threads` works on (one per
 * thread, one per instance where instances outnumber the threads, one per
 * entity when checking with shuffled visits).  Any thread. */
uint32_t seer_partition_count(const seer_runtime *rt, uint32_t threads);
/* Cut every instance's entities into partitions for a pool of `threads`
 * (moving pending events to the new partitions' queues).  On failure
 * nothing changed, or instances that could not be restored need a reset
 * (rt->err says which). */
int seer_set_partitions(seer_runtime *rt, uint32_t threads);
/* The same, `np` partitions (1 to the entities). */
int seer_set_partition_count(seer_runtime *rt, uint32_t np);
/* Free an instance's partition queues (rt->part.n of them) and the array. */
void seer_free_part_queues(const seer_runtime *rt, seer_squeue *parts);
/* Migration counts per destination queue (the scratch of
 * seer_migrate_instance: SEER_MIG_NB per queue). */
#define SEER_MIG_NB SEER_SQ_COUNTS
/* Move instance `in`'s pending events to executor `to`'s queues (the serial
 * queue, or the partition queues), reserving first with `counts` (scratch
 * of SEER_MIG_NB per destination queue): on failure (SEER_E_NOMEM) nothing
 * moved.  Host, between calls. */
int seer_migrate_instance(seer_runtime *rt, seer_inst *in, int to, uint64_t *counts);
/* Move every instance's events to `executor`'s queues; on failure those
 * moved go back (*lost: an instance could not, and needs a reset). */
int seer_migrate_all(seer_runtime *rt, int executor, int *lost);

#endif /* SEER_PARTITION_H */
