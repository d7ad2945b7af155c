/*
 * sync.h -- the runtime's concurrent building blocks (private).
 *
 *   seer_phases    the parallel executive list: a sequence of phases, each a
 *                  list of work items that any thread claims in chunks from
 *                  either end (CAS on a (phase, front, back) ticket:
 *                  lock-free) and completes
 *                  (fetch_sub: wait-free); the thread completing the last
 *                  chunk runs the phase transition (the per-window reductions)
 *                  and opens the next phase.  No fixed team: a thread that
 *                  claimed nothing is never waited for.
 *
 * Correctness argument, in one place:
 *  - Events cross threads only through the phase transitions: a thread
 *    appends an event for another partition to its own outbox during one
 *    phase, and the partition's visitor merges it in the next (pool.c),
 *    so the point below covers them.
 *  - Everything a thread wrote while handling its chunks of a phase is
 *    visible to the thread that completes the phase: completions are acq_rel
 *    RMWs on `remaining` (a release sequence).  The completer's writes (the
 *    transition) reach every claimer of the next phase through the release
 *    store of the ticket that opens it, which claims acquire.
 *  - A claim succeeds only by CAS on the (phase, front, back) ticket, so work is
 *    never taken from a phase other than the one the claimer read.
 *
 * Included by runtime.h (the pool holds the executive list); the parallel
 * executor (pool.c) and tests/native/stress_phases.c use it.  Names say
 * who may call (base.h):
 * _any for every thread, _completer for the thread that completed a phase.
 */
#ifndef SEER_SYNC_H
#define SEER_SYNC_H

#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "park.h"

#define SEER_CACHE_LINE 64

static inline void seer_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- phases: the executive list ------------------------------------------ */

/* A phase is a list of `count` work items (indices) that any thread claims in
 * chunks and completes; the thread that completes the last chunk opens the
 * next phase.  Nobody waits for a thread that has claimed nothing, so a
 * descheduled worker never holds the others up (a fixed-team barrier would);
 * at worst the others wait for one chunk held by a descheduled thread.
 *
 *   ticket     (phase sequence number << 32) | (back << 16) | front: the
 *              chunks claimed from each end.  Claims CAS it, so a claim can
 *              only succeed in the phase the claimer read: a slow thread
 *              holding a stale sequence number fails its CAS.  Claiming from
 *              both ends gives affinity: with two threads, one takes the low
 *              items and the other the high ones in every phase, meeting
 *              where the load balances, so the data of an item (a partition's
 *              queue and entities) tends to stay in one core's cache.
 *   desc[2]    kind/count/chunk of the phase with sequence s, in slot s & 1.
 *              The opener of phase s+1 writes slot (s+1) & 1 while phase s is
 *              still current: no claimer of s reads it.  The slot is rewritten
 *              only when phase s+2 opens, after every claim of s+1 completed,
 *              and a claim that read it during the rewrite fails its CAS.
 *   remaining  chunks of the current phase not yet completed.
 *
 *   seq_word   the low 32 bits of the current phase's sequence number, stored
 *              after the ticket: the word a waiter parks on (park.h)
 *   sleepers   waiters parked (or about to park) on seq_word: the opener
 *              wakes them only when there are any
 *   arrivals   bumped by a waiter each time it is running and waiting: as
 *              it starts to wait, and after each yield or park returns.  A
 *              thread that holds every chunk of a phase reads it to learn
 *              whether another thread is there to share the next one (a
 *              hint: no correctness rests on it)
 *
 * Progress: claim is lock-free (CAS loop), complete is wait-free; waiting for
 * the next phase is blocking: spin briefly, then yield (a yield gives the
 * core to whoever else is runnable on it -- a descheduled worker that holds
 * the phase's last chunk, another thread pool, another process -- and keeps
 * the waiter runnable, so it answers the next phase at once), and after
 * SEER_PHASE_YIELD_NS park (a futex): a wait that long gives the core back
 * for good.
 */

typedef struct seer_phase_desc {
    _Atomic uint32_t kind;
    _Atomic uint32_t count;
    _Atomic uint32_t chunk;
    _Atomic uint32_t tag; /* the host's label of the run this phase belongs to */
} seer_phase_desc;

typedef struct seer_phases {
    alignas(SEER_CACHE_LINE) _Atomic uint64_t ticket;
    char pad0_[SEER_CACHE_LINE - sizeof(uint64_t)];
    alignas(SEER_CACHE_LINE) _Atomic uint32_t remaining;
    char pad1_[SEER_CACHE_LINE - sizeof(uint32_t)];
    alignas(SEER_CACHE_LINE) _Atomic uint32_t seq_word;
    _Atomic uint32_t sleepers;
    _Atomic uint32_t arrivals;
    char pad2_[SEER_CACHE_LINE - 3 * sizeof(uint32_t)];
    seer_phase_desc desc[2];
} seer_phases;

/* Yields, after the spins, before a waiter parks: on an idle machine a
 * yield returns at once, so a wait a little longer than the spins costs no
 * wake-up; on a busy one each gives the core away for a time slice. */
#define SEER_PHASE_YIELDS 8u
/* ... then yields on for this long before it parks (ns): a waiter that
 * parked at once lost the core to a spinning neighbour pool (torch's OpenMP
 * workers) for a whole wake-up, where one that yields stays runnable; only a
 * wait this long (a straggler descheduled for a time slice or more) parks. */
#define SEER_PHASE_YIELD_NS 2000000u

static inline uint64_t seer_phase_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum { SEER_CLAIMED = 1, SEER_EXHAUSTED = 0 };

static inline void seer_phases_init(seer_phases *p)
{
    atomic_init(&p->ticket, 0);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->seq_word, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->arrivals, 0);
    for (int i = 0; i < 2; i++) {
        atomic_init(&p->desc[i].kind, 0);
        atomic_init(&p->desc[i].count, 0);
        atomic_init(&p->desc[i].chunk, 1);
        atomic_init(&p->desc[i].tag, 0);
    }
}

/* Open the next phase.  Called only by the thread that completed the current
 * phase (or by the host while no phase is open): _completer.  `count` < 2^31.  Returns
 * the new sequence number.  A phase with count 0 is open but has nothing to
 * claim and never completes: use it only for a terminal kind. */
static inline uint64_t seer_phases_open_completer(seer_phases *p, uint32_t kind,
                                                  uint32_t count, uint32_t chunk, uint32_t tag)
{
    /* relaxed: we are the only writer of the ticket's sequence part; this
     * thread completed the last chunk, so no claim of the old phase is
     * pending (a late CAS on the old phase fails on the sequence number). */
    uint64_t seq = (atomic_load_explicit(&p->ticket, memory_order_relaxed) >> 32) + 1;
    seer_phase_desc *d = &p->desc[seq & 1];
    if (chunk < 1)
        chunk = 1;
    /* at most 2^16 - 1 chunks: the ticket counts them in 16 bits per end */
    if ((count + chunk - 1) / chunk > 0xFFFFu)
        chunk = (count + 0xFFFEu) / 0xFFFFu;
    /* release: a claimer that reads these (possibly while it still holds an
     * older ticket value) then re-reads the ticket with acquire and must see
     * this phase or a later one: see seer_phases_claim_any. */
    atomic_store_explicit(&d->kind, kind, memory_order_release);
    atomic_store_explicit(&d->count, count, memory_order_release);
    atomic_store_explicit(&d->chunk, chunk, memory_order_release);
    atomic_store_explicit(&d->tag, tag, memory_order_release);
    /* relaxed: only completers read it, after claiming a chunk of this
     * phase, i.e. after acquiring the ticket stored (release) below. */
    atomic_store_explicit(&p->remaining, (count + chunk - 1) / chunk, memory_order_relaxed);
    /* release: makes the descriptor, `remaining` and everything this thread
     * wrote before (the window reductions, the job description) visible to
     * every thread that acquires this ticket value or a later one of the same
     * release sequence (the claims' CAS are RMWs). */
    atomic_store_explicit(&p->ticket, seq << 32, memory_order_release);
    /* seq_cst (store and load): the waker's half of park.h's protocol, in
     * one total order with a waiter's count and re-check.  The waiters read
     * the ticket for everything else; seq_word only tells them to wake. */
    atomic_store_explicit(&p->seq_word, (uint32_t)seq, memory_order_seq_cst);
    if (atomic_load_explicit(&p->sleepers, memory_order_seq_cst))
        seer_park_wake_all_any(&p->seq_word);
    return seq;
}

/* Any thread (_any).  Lock-free.  Claims items [*begin, *end) of the current phase,
 * the lowest chunk left or (from_back) the highest; *seq, *kind and *tag say
 * which phase.  SEER_EXHAUSTED when everything of the current phase is
 * claimed (wait for the sequence number to change). */
static inline int seer_phases_claim_any(seer_phases *p, int from_back, uint64_t *seq,
                                        uint32_t *kind, uint32_t *tag, uint32_t *begin,
                                        uint32_t *end)
{
    /* acquire: pairs with the opener's release store (or a claim's CAS in its
     * release sequence), so the descriptor of this sequence is visible. */
    uint64_t v = atomic_load_explicit(&p->ticket, memory_order_acquire);
    for (;;) {
        uint64_t s = v >> 32;
        uint32_t front = (uint32_t)v & 0xFFFFu, back = ((uint32_t)v >> 16) & 0xFFFFu;
        const seer_phase_desc *d = &p->desc[s & 1];
        /* acquire: pairs with the release stores in
         * seer_phases_open_completer.  The slot may already hold a later
         * phase's values (s + 2): then the opener of s + 1 happened before,
         * so the ticket re-read below (or the CAS) sees a newer sequence and
         * we retry. */
        uint32_t k = atomic_load_explicit(&d->kind, memory_order_acquire);
        uint32_t count = atomic_load_explicit(&d->count, memory_order_acquire);
        uint32_t chunk = atomic_load_explicit(&d->chunk, memory_order_acquire);
        uint32_t t = atomic_load_explicit(&d->tag, memory_order_acquire);
        uint32_t nchunks = (count + chunk - 1) / chunk;
        if (front + back >= nchunks) {
            /* Nothing to claim (or a terminal phase): only trust the kind if
             * the ticket still names phase s.  acquire: as the first load;
             * it also orders our caller after the opener of a DONE phase. */
            uint64_t v2 = atomic_load_explicit(&p->ticket, memory_order_acquire);
            if ((v2 >> 32) != s) {
                v = v2;
                continue;
            }
            *seq = s;
            *kind = k;
            *tag = t;
            return SEER_EXHAUSTED;
        }
        *seq = s;
        *kind = k;
        *tag = t;
        uint32_t c = from_back ? nchunks - 1 - back : front;
        uint64_t next = v + (from_back ? (uint64_t)1 << 16 : 1);
        /* acquire on success and failure: as the load above. */
        if (atomic_compare_exchange_weak_explicit(&p->ticket, &v, next,
                                                  memory_order_acquire,
                                                  memory_order_acquire)) {
            *begin = c * chunk;
            *end = count - *begin < chunk ? count : *begin + chunk;
            return SEER_CLAIMED;
        }
    }
}

/* After handling a claimed chunk, by the thread that claimed it (any
 * thread: _any).  Wait-free.  Returns 1 for exactly one
 * caller per phase: the one that completed it, which must open the next. */
static inline int seer_phases_complete_any(seer_phases *p)
{
    /* acq_rel: release this thread's work on the chunk; the completer
     * acquires every other completer's work (release sequence of RMWs). */
    return atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_acq_rel) == 1;
}

/* Chunks of phase `seq`, for a thread that holds a chunk of it (the
 * descriptor slot is rewritten only when phase seq + 2 opens, after every
 * claim of seq + 1 completed: not while a chunk of seq is held). */
static inline uint32_t seer_phases_chunks_holder(const seer_phases *p, uint64_t seq)
{
    const seer_phase_desc *d = &p->desc[seq & 1];
    /* relaxed: the claim that returned `seq` acquired these (claim_any). */
    const uint32_t count = atomic_load_explicit(&d->count, memory_order_relaxed);
    const uint32_t chunk = atomic_load_explicit(&d->chunk, memory_order_relaxed);
    return (count + chunk - 1) / chunk;
}

/* For the holder of one chunk of phase `seq`: have other threads claimed
 * chunks of it too?  (Any thread may read it; a holder knows the phase is
 * still `seq`.) */
static inline int seer_phases_others_claimed_holder(const seer_phases *p, uint64_t seq)
{
    /* relaxed: a hint; a claim that races with it is settled by the CAS in
     * seer_phases_claim_rest_holder */
    const uint64_t v = atomic_load_explicit(&p->ticket, memory_order_relaxed);
    const uint32_t front = (uint32_t)v & 0xFFFFu, back = ((uint32_t)v >> 16) & 0xFFFFu;
    return (v >> 32) != seq || front + back > 1;
}

/* For the holder of one chunk of phase `seq` while no other chunk of it is
 * claimed: claim every other chunk at once (a CAS on the ticket: it fails
 * when another thread claimed one first).  Returns the chunks taken (0:
 * none, someone else came); the caller completes each of them
 * (seer_phases_complete_any) besides its own, which it completes last. */
static inline uint32_t seer_phases_claim_rest_holder(seer_phases *p, uint64_t seq)
{
    const uint32_t nchunks = seer_phases_chunks_holder(p, seq);
    uint64_t v = atomic_load_explicit(&p->ticket, memory_order_relaxed);
    const uint32_t front = (uint32_t)v & 0xFFFFu, back = ((uint32_t)v >> 16) & 0xFFFFu;
    if ((v >> 32) != seq || front + back != 1 || nchunks <= 1)
        return 0;
    /* the rest taken from the holder's own end (front + back = nchunks) */
    const uint64_t next =
        front ? v - front + (nchunks - back) : v + ((uint64_t)(nchunks - 1) << 16);
    /* acquire (success and failure), as every claim's: what the phase's
     * opener published was acquired by the holder's own claim already, so
     * this orders nothing new; relaxed would do */
    return atomic_compare_exchange_strong_explicit(&p->ticket, &v, next, memory_order_acquire,
                                                   memory_order_acquire)
               ? nchunks - 1
               : 0;
}

/* A waiter is running (park.h's protocol is unaffected): see `arrivals`. */
static inline void seer_phases_arrive_any(seer_phases *p)
{
    /* relaxed: a hint read by a thread that holds a whole phase; nothing is
     * published through it. */
    atomic_fetch_add_explicit(&p->arrivals, 1, memory_order_relaxed);
}

/* Wait until the phase sequence number differs from `seq`.  Any thread.
 * Blocking: `spin_limit` pauses, SEER_PHASE_YIELDS yields, more yields until
 * SEER_PHASE_YIELD_NS have passed, then parked until the opener of the next
 * phase wakes it. */
static inline void seer_phases_wait_any(seer_phases *p, uint64_t seq, uint32_t spin_limit)
{
    uint32_t spins = 0;
    uint64_t yield_from = 0;
    seer_phases_arrive_any(p);
    /* acquire: pairs with seer_phases_open_completer's release store. */
    while ((atomic_load_explicit(&p->ticket, memory_order_acquire) >> 32) == seq) {
        if (spins < spin_limit) {
            spins++;
            seer_cpu_relax();
            continue;
        }
        if (spins < spin_limit + SEER_PHASE_YIELDS) {
            spins++;
            sched_yield();
            seer_phases_arrive_any(p);
            continue;
        }
        if (spins == spin_limit + SEER_PHASE_YIELDS) {
            spins++;
            yield_from = seer_phase_clock_ns();
        }
        if (seer_phase_clock_ns() - yield_from < SEER_PHASE_YIELD_NS) {
            sched_yield();
            seer_phases_arrive_any(p);
            continue;
        }
        /* seq_cst (the add, the load): the waiter's half of park.h's
         * protocol; the loop's acquire load of the ticket then orders what
         * the opener published. */
        atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&p->seq_word, memory_order_seq_cst) == (uint32_t)seq)
            seer_park_wait_any(&p->seq_word, (uint32_t)seq, 0);
        /* relaxed: only a count; the opener's seq_cst load pairs with the add. */
        atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_relaxed);
        seer_phases_arrive_any(p);
    }
}

#endif /* SEER_SYNC_H */
