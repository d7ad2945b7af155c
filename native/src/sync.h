/*
 * sync.h -- the runtime's concurrent building blocks (private).
 *
 *   seer_inbox     multi-producer / single-consumer event inbox.
 *                  push_mp: lock-free (CAS loop; a push fails to finish only
 *                  if another push succeeded).  drain_sc: wait-free (one
 *                  atomic exchange).  No pop-one operation, hence no ABA.
 *   seer_worklist  the parallel executive list for one phase: a fixed array
 *                  of work items (set up by one thread before the phase) that
 *                  any number of threads claim in chunks with one
 *                  fetch_add each: wait-free.
 *   seer_barrier   sense-reversing centralized barrier for a fixed team;
 *                  blocking (spins, then yields the CPU).  The last thread to
 *                  arrive runs a callback before anyone leaves, which is where
 *                  the per-window reductions happen.
 *
 * Correctness argument, in one place:
 *  - An event's fields are written by the producer before the release CAS
 *    that links it into an inbox; the consumer's acquire exchange reads that
 *    CAS (or a later one in the same release sequence, since every update of
 *    the head is an RMW), so every event it reaches is fully visible.
 *  - Everything a thread wrote before arriving at a barrier is visible to
 *    every thread after it leaves: arrivals are acq_rel RMWs on `count`
 *    (a release sequence), the last arriver acquires them all, then
 *    publishes with a release store of `sense`, which the waiters acquire.
 *  - Worklist cursors are reset only inside the barrier callback, so the
 *    relaxed fetch_add claims never race with a reset.
 */
#ifndef SEER_SYNC_H
#define SEER_SYNC_H

#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SEER_CACHE_LINE 64

static inline void seer_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- inbox ------------------------------------------------------------ */

typedef struct seer_inbox_node {
    struct seer_inbox_node *next;
} seer_inbox_node;

typedef struct seer_inbox {
    _Atomic(seer_inbox_node *) head;
} seer_inbox;

static inline void seer_inbox_init(seer_inbox *q)
{
    atomic_init(&q->head, NULL);
}

/* Any thread.  Lock-free. */
static inline void seer_inbox_push_mp(seer_inbox *q, seer_inbox_node *n)
{
    /* relaxed: the value is only a guess that the CAS validates. */
    seer_inbox_node *old = atomic_load_explicit(&q->head, memory_order_relaxed);
    do {
        n->next = old;
        /* release on success: publishes n (and its payload) to the
         * consumer's acquire exchange in seer_inbox_drain_sc.  relaxed on
         * failure: we only retry with the fresh head. */
    } while (!atomic_compare_exchange_weak_explicit(&q->head, &old, n,
                                                    memory_order_release,
                                                    memory_order_relaxed));
}

/* Owner only.  Wait-free.  Returns the list (most recent first) or NULL. */
static inline seer_inbox_node *seer_inbox_drain_sc(seer_inbox *q)
{
    /* relaxed pre-check: an empty inbox costs no RMW.  A push racing with it
     * is simply picked up by the next drain. */
    if (atomic_load_explicit(&q->head, memory_order_relaxed) == NULL)
        return NULL;
    /* acquire: pairs with the release CAS in seer_inbox_push_mp. */
    return atomic_exchange_explicit(&q->head, NULL, memory_order_acquire);
}

/* Quiescent use only (no concurrent push): the current head. */
static inline seer_inbox_node *seer_inbox_peek_quiescent(seer_inbox *q)
{
    /* relaxed: the caller guarantees quiescence (after a barrier). */
    return atomic_load_explicit(&q->head, memory_order_relaxed);
}

/* ---- worklist (executive list) ----------------------------------------- */

typedef struct seer_worklist {
    alignas(SEER_CACHE_LINE) _Atomic uint32_t cursor;
    char pad_[SEER_CACHE_LINE - sizeof(uint32_t)];
    uint32_t count; /* items in this phase, set before the phase starts */
    uint32_t chunk; /* items per claim (>= 1)                            */
} seer_worklist;

static inline void seer_worklist_reset_quiescent(seer_worklist *w, uint32_t count,
                                                 uint32_t chunk)
{
    w->count = count;
    w->chunk = chunk ? chunk : 1;
    /* relaxed: called by one thread while no other touches the list; the
     * barrier that starts the phase publishes it. */
    atomic_store_explicit(&w->cursor, 0, memory_order_relaxed);
}

/* Any thread.  Wait-free.  Claims [*begin, *end); returns 0 when empty. */
static inline int seer_worklist_claim_mc(seer_worklist *w, uint32_t *begin, uint32_t *end)
{
    /* relaxed: the cursor only partitions indices; the data behind them was
     * published by the barrier that opened the phase. */
    uint32_t b = atomic_fetch_add_explicit(&w->cursor, w->chunk, memory_order_relaxed);
    if (b >= w->count)
        return 0;
    uint32_t e = b + w->chunk;
    *begin = b;
    *end = e < w->count ? e : w->count;
    return 1;
}

/* ---- barrier ----------------------------------------------------------- */

typedef void (*seer_barrier_fn)(void *arg);

typedef struct seer_barrier {
    alignas(SEER_CACHE_LINE) _Atomic uint32_t count;
    char pad0_[SEER_CACHE_LINE - sizeof(uint32_t)];
    alignas(SEER_CACHE_LINE) _Atomic uint32_t sense;
    char pad1_[SEER_CACHE_LINE - sizeof(uint32_t)];
    uint32_t team;
    uint32_t spin_limit; /* pauses before yielding the CPU */
} seer_barrier;

static inline void seer_barrier_init(seer_barrier *b, uint32_t team, uint32_t spin_limit)
{
    atomic_init(&b->count, 0);
    atomic_init(&b->sense, 0);
    b->team = team;
    b->spin_limit = spin_limit;
}

/* Every team member calls it with its own *local_sense (starting at 0).
 * Blocking.  `fn` runs once, on the last arriver, before anyone leaves. */
static inline void seer_barrier_wait(seer_barrier *b, uint32_t *local_sense,
                                     seer_barrier_fn fn, void *arg)
{
    uint32_t s = *local_sense ^ 1u;
    *local_sense = s;
    /* acq_rel: release our writes to the last arriver; if we are the last
     * arriver, acquire every earlier arriver's writes (release sequence). */
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) == b->team - 1) {
        if (fn)
            fn(arg);
        /* relaxed: nobody reads count until after the release below. */
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        /* release: publishes fn's results and the count reset to the
         * waiters' acquire loads below. */
        atomic_store_explicit(&b->sense, s, memory_order_release);
        return;
    }
    uint32_t spins = 0;
    /* acquire: pairs with the last arriver's release store of sense. */
    while (atomic_load_explicit(&b->sense, memory_order_acquire) != s) {
        if (spins < b->spin_limit) {
            spins++;
            seer_cpu_relax();
        } else {
            sched_yield();
        }
    }
}

#endif /* SEER_SYNC_H */
