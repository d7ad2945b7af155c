/*
 * base.h -- what every file of the runtime includes first (private): the
 * small pure helpers and limits, the fault-injection macros (faults.h), and
 * the rule the runtime's names follow.  Each file then includes the headers
 * of the concerns it uses (runtime.h: the structures; one header per source
 * file for its exports).
 *
 * Where things are: docs/architecture.md is the map of every runtime file
 * (and of the rest of the project); it is not repeated here.
 *
 * Who may call what.  A function that is safe only on particular threads
 * says which in a suffix of its name, in the manner of Concurrency Kit
 * (ck_ring_enqueue_spsc):
 *
 *   _any        any thread, concurrently with the others: it synchronizes
 *               itself (atomics)
 *   _completer  only the thread that completed the current phase, while it
 *               runs the transition to the next (no other thread touches the
 *               call's shared state until it opens that phase), or the host
 *               while no phase is open
 *   _holder     only a thread that holds a chunk of the phase concerned
 *               (claimed and not yet completed; sync.h): the phase cannot end
 *               under it.  Where the comment says every chunk, nobody else
 *               holds an item of the phase either
 *   _owner      only the current owner of a single-owner structure (an event
 *               queue, an outbox vector): no synchronization inside.
 *               Ownership changes hands only at phase transitions or between
 *               calls, which order the accesses (sync.h)
 *   _local      only the thread of the worker `w` it is given: it touches
 *               that worker's private state (free list, error slot, trace
 *               records) unsynchronized
 *   _producer   only the one producer thread of a single-producer
 *   _consumer   single-consumer ring, or only its one consumer thread
 *               (spsc_ring.h); the roles change hands only at a point that
 *               orders both sides
 *   _quiescent  only while no other thread uses the structure (after a point
 *               that orders every earlier use before the caller, e.g. a
 *               completed phase)
 *
 * Without a suffix: pure functions (they touch only their arguments),
 * lifecycle functions (init/free of a structure no other thread can reach
 * yet or any more), and the rest, which runs on the host thread between
 * calls -- except the phase operations (phases.c) and the event loop
 * (loop.c), which run on the thread of the worker they are given, on the
 * items (partition, agent, entity, instance) that thread holds for the
 * current phase.
 */
#ifndef SEER_BASE_H
#define SEER_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "seer.h"

#include "faults.h" /* after the system headers (see there) */

#define SEER_ERRLEN 512

static inline size_t seer_round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }
#define SEER_KEY_SEQ_BITS 40
#define SEER_MAX_ENTITIES (1u << 24) /* entity ids fill the key's top 24 bits */
#define SEER_MAX_PARTS 256u /* parallel executor: partitions per instance, at most */

/* The bit pattern of a non-negative time, which orders like the time
 * (squeue.c).  -0.0 -> +0.0: the two compare equal, so they must share bits. */
static inline uint64_t seer_time_bits(seer_time t)
{
    t += 0.0;
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    return u;
}

/* One step of splitmix64: the seeding of the entity streams (rng.c) and the
 * visiting orders of SEER_CHECK_SHUFFLE (pool.c). */
static inline uint64_t seer_splitmix64_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif /* SEER_BASE_H */
