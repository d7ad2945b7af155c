/*
 * spsc_ring.h -- a bounded single-producer single-consumer ring (private):
 * the optimistic executor's mailboxes, one per (sender slot, receiver slot)
 * (optimistic.c).
 *
 *   seer_spsc    the ring's indices; the element array is the caller's (any
 *                type: `buf`, `mask` + 1 elements, a power of two).  The
 *                producer's index and its copy of the consumer's on one
 *                line, the consumer's index and its copy of the producer's
 *                on another, the array's address on a third: each side
 *                reads the other's line only when its copy says the ring
 *                looks full (producer) or empty (consumer).
 *
 * Pushing: pos = seer_spsc_reserve_producer (0 when full), write element
 * pos & mask, seer_spsc_publish_producer(pos).  Popping: while
 * seer_spsc_ready_consumer, read element seer_spsc_front_consumer & mask,
 * then seer_spsc_release_consumer.  Indices are free-running uint32_t
 * (they wrap; the capacity is at most 2^31).
 *
 * Threads: _producer only on the ring's one producer thread, _consumer only
 * on its one consumer thread (the roles may change hands only at a point
 * that orders both sides, e.g. a phase transition, sync.h); init and
 * seer_spsc_drain_quiescent with neither running.  Progress: wait-free on
 * both sides (a bounded number of steps; a full ring refuses, an empty one
 * says so: the caller decides how to wait).
 *
 * Orders: the producer's writes before publish happen before the consumer's
 * reads after it observes the ring ready (release store of tail / acquire
 * load of tail); the consumer's reads of an element happen before the
 * producer overwrites it (release store of head / acquire load of head).
 *
 * tests/native/stress_spsc.c checks it (run_sanitizers.sh).
 */
#ifndef SEER_SPSC_RING_H
#define SEER_SPSC_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sync.h" /* SEER_CACHE_LINE */

typedef struct seer_spsc {
    alignas(SEER_CACHE_LINE) _Atomic uint32_t tail; /* next position the producer fills */
    uint32_t head_seen;                             /* producer's copy of head          */
    alignas(SEER_CACHE_LINE) _Atomic uint32_t head; /* next position the consumer reads */
    uint32_t tail_seen;                             /* consumer's copy of tail          */
    alignas(SEER_CACHE_LINE) void *buf;             /* the caller's elements            */
    uint32_t mask;                                  /* elements - 1                     */
} seer_spsc;

/* An empty ring over buf (cap elements, a power of two, <= 2^31).  Before
 * either side uses it (the thread that starts them publishes it). */
static inline void seer_spsc_init(seer_spsc *r, void *buf, uint32_t cap)
{
    atomic_init(&r->tail, 0);
    atomic_init(&r->head, 0);
    r->head_seen = 0;
    r->tail_seen = 0;
    r->buf = buf;
    r->mask = cap - 1;
}

/* Producer: is there room for one more?  1 and *pos (the position to fill:
 * element *pos & mask) when there is, 0 when the ring is full. */
static inline int seer_spsc_reserve_producer(seer_spsc *r, uint32_t *pos)
{
    /* relaxed: only this thread (the producer) writes tail */
    const uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - r->head_seen > r->mask) {
        /* acquire: pairs with the consumer's release store of head
         * (seer_spsc_release_consumer), so its reads of the elements it
         * freed happen before we overwrite them */
        r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        if (t - r->head_seen > r->mask)
            return 0;
    }
    *pos = t;
    return 1;
}

/* Producer: the element at pos (from seer_spsc_reserve_producer) is
 * written; hand it to the consumer. */
static inline void seer_spsc_publish_producer(seer_spsc *r, uint32_t pos)
{
    /* release: publishes the element (and whatever the producer wrote
     * before, e.g. what it points to) to the consumer's acquire load of
     * tail in seer_spsc_ready_consumer */
    atomic_store_explicit(&r->tail, pos + 1, memory_order_release);
}

/* Consumer: is an element waiting? */
static inline int seer_spsc_ready_consumer(seer_spsc *r)
{
    /* relaxed: only this thread (the consumer) writes head */
    const uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h != r->tail_seen)
        return 1;
    /* acquire: pairs with the producer's release store of tail
     * (seer_spsc_publish_producer): the elements up to it, and what they
     * point to, are visible */
    r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    return h != r->tail_seen;
}

/* Consumer, after seer_spsc_ready_consumer said 1: the position of the
 * oldest element (element pos & mask). */
static inline uint32_t seer_spsc_front_consumer(const seer_spsc *r)
{
    /* relaxed: only this thread (the consumer) writes head */
    return atomic_load_explicit(&r->head, memory_order_relaxed);
}

/* Consumer: done reading the element at pos (seer_spsc_front_consumer):
 * the producer may reuse it. */
static inline void seer_spsc_release_consumer(seer_spsc *r, uint32_t pos)
{
    /* release: our read of the element happens before the producer reuses
     * it (its acquire load of head in seer_spsc_reserve_producer) */
    atomic_store_explicit(&r->head, pos + 1, memory_order_release);
}

/* Neither side running (both have stopped at a point that orders them
 * before the caller, e.g. a completed phase): call fn on every element
 * still in the ring, oldest first, and empty it. */
static inline void seer_spsc_drain_quiescent(seer_spsc *r, void (*fn)(void *arg, void *elem),
                                             size_t elem_size, void *arg)
{
    /* relaxed: no side runs (the caller's ordering point covers both) */
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    const uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    for (; h != t; h++)
        fn(arg, (unsigned char *)r->buf + (size_t)(h & r->mask) * elem_size);
    /* relaxed: as above */
    atomic_store_explicit(&r->head, h, memory_order_relaxed);
    r->tail_seen = h;
    r->head_seen = h;
}

#endif /* SEER_SPSC_RING_H */
