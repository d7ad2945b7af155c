/*
 * events.h -- event memory (events.c; private): the per-event allocation
 * path, inline.
 */
#ifndef SEER_EVENTS_H
#define SEER_EVENTS_H

#include <stdint.h>

#include "runtime.h"

/* ---- events.c: event memory ---------------------------------------------- */

/* Slow path of seer_event_alloc_from_local: refill p, one of w's free
 * lists, from the shared reserve.  SEER_OK, SEER_E_NOMEM, or SEER_E_BUDGET
 * past the memory limit (then w's error says so). */
int seer_event_refill_local(seer_worker *w, seer_event_pool *p);

/* A free event record from p, one of w's own free lists; NULL when no
 * memory is left for one (see seer_event_refill_local).  The per-event
 * path: inline. */
static inline seer_event *seer_event_alloc_from_local(seer_worker *w, seer_event_pool *p)
{
    if (__builtin_expect(p->free == NULL, 0) && seer_event_refill_local(w, p) != SEER_OK)
        return NULL;
    seer_event *ev = p->free;
    p->free = ev->next_free;
    p->nfree--;
    /* Handlers often schedule several events in a row, and the free list
     * reaches back to records handled long ago: start loading the next one
     * (its link is read, its header and payload written, by that alloc). */
    __builtin_prefetch(p->free, 1);
    return ev;
}

/* A free event record from w's main list (w->pool). */
static inline seer_event *seer_event_alloc_local(seer_worker *w)
{
    return seer_event_alloc_from_local(w, &w->pool);
}

/* Put ev on top of list p (whatever its home). */
static inline void seer_event_push_local(seer_event_pool *p, seer_event *ev)
{
    ev->next_free = p->free;
    p->free = ev;
    p->nfree++;
}

/* The top k records of the list *from (counted in *from_n; all of them
 * where it holds fewer) onto the top of the list *to (counted in *to_n),
 * in their order.  Whoever owns both lists (the reserve's lock). */
static inline void seer_event_splice(seer_event **from, uint64_t *from_n, seer_event **to,
                                     uint64_t *to_n, uint64_t k)
{
    if (k > *from_n)
        k = *from_n;
    if (k == 0)
        return;
    seer_event *head = *from, *tail = head;
    for (uint64_t i = 1; i < k; i++)
        tail = tail->next_free;
    *from = tail->next_free;
    *from_n -= k;
    tail->next_free = *to;
    *to = head;
    *to_n += k;
}

/* Every record of chunk c (of `stride` bytes) onto the top of the list
 * *head (counted in *n), the lowest on top.  Whoever owns the list. */
static inline void seer_event_chunk_push(const seer_event_chunk *c, size_t stride,
                                         seer_event **head, uint64_t *n)
{
    for (uint64_t i = c->n; i-- > 0;) {
        seer_event *ev = (seer_event *)(void *)(c->mem + i * stride);
        ev->next_free = *head;
        *head = ev;
    }
    *n += c->n;
}

/* The header of a chunk's block (its records start a line after it). */
static inline seer_event_block *seer_event_chunk_block(const seer_event_chunk *c)
{
    return (seer_event_block *)(void *)(c->mem - SEER_CACHE_LINE);
}

/* The header of ev's block (blocks are aligned to their size). */
static inline seer_event_block *seer_event_block_of(const seer_runtime *rt, const seer_event *ev)
{
    return (seer_event_block *)((uintptr_t)ev & ~(((uintptr_t)1 << rt->mem.block_shift) - 1));
}

/* The worker whose lists ev goes back to in pool calls (its block's home;
 * the per-event path: the worker's copy of the block mask). */
static inline uint32_t seer_event_home_of(const seer_worker *w, const seer_event *ev)
{
    return ((const seer_event_block *)((uintptr_t)ev & w->home_mask))->home;
}

/* Slow path of seer_event_give_local: ev, of another worker's home, to
 * w's away list for that home (`kind`: 0 its pool list, 1 its cross list). */
static inline void seer_event_send_away_local(seer_worker *w, uint32_t home, int kind,
                                              seer_event *ev)
{
    seer_event_away *a = &w->away[home];
    if (!a->head[0] && !a->head[1])
        w->away_homes[w->away_nh++] = home;
    if (!a->head[kind])
        a->tail[kind] = ev;
    ev->next_free = a->head[kind];
    a->head[kind] = ev;
    a->n[kind]++;
}

/* Give ev back: to p, w's list of that kind (`kind`: 0 w->pool, 1
 * w->cross), or during a pool call, when its home is another worker, to
 * that worker's list of that kind (when the call ends). */
static inline void seer_event_give_local(seer_worker *w, seer_event_pool *p, int kind,
                                         seer_event *ev)
{
    if (w->home_limit) {
        const uint32_t h = seer_event_home_of(w, ev);
        if (__builtin_expect(h != w->id && h < w->home_limit, 0)) {
            seer_event_send_away_local(w, h, kind, ev);
            return;
        }
    }
    seer_event_push_local(p, ev);
}

/* Give ev back to w's main list (w->pool), or its home's. */
static inline void seer_event_free_local(seer_worker *w, seer_event *ev)
{
    seer_event_give_local(w, &w->pool, 0, ev);
}

/* Give ev, the record of a window's event between two partitions, back
 * to w's cross list, or its home's. */
static inline void seer_event_free_cross_local(seer_worker *w, seer_event *ev)
{
    seer_event_give_local(w, &w->cross, 1, ev);
}

/* Host, between calls (the pool's workers done with the last one): every
 * worker's away records on top of their homes' lists (under the
 * reserve's lock). */
void seer_event_send_home_host(seer_runtime *rt);
/* Host, between calls, as a pool of n workers starts (its workers not yet
 * running): homes for n workers; blocks homed to a worker beyond them
 * move to one within, with their reserved records (under the lock).
 * SEER_OK or SEER_E_NOMEM (nothing changed). */
int seer_event_homes_host(seer_runtime *rt, uint32_t n);
/* The bytes of a block of records of `stride` bytes, as a power of two
 * (create.c). */
uint32_t seer_event_block_shift(size_t stride);
/* Free every block (the records in them are gone) and empty the reserve. */
void seer_event_blocks_free(seer_runtime *rt);
/* Free records in the reserve, all homes (under the lock or between calls). */
uint64_t seer_event_reserved(const seer_runtime *rt);

/* Outside the event loop: bring p, one of w's free lists, into [lo, hi]
 * (the reserve's mutex). */
void seer_event_pool_balance_local(seer_worker *w, seer_event_pool *p, uint64_t lo, uint64_t hi);
/* Outside the event loop: make w's free list hold at least n events (the
 * reserve's mutex; chunks allocated as needed).  SEER_OK, SEER_E_NOMEM, or
 * SEER_E_BUDGET past the memory limit; the list keeps what it took. */
int seer_event_stock_local(seer_worker *w, uint64_t n);
/* Free every event q holds into w's free list and empty q (the caller owns
 * q). */
void seer_event_free_all_local(seer_worker *w, seer_squeue *q);

/* ---- events_layout.c: where the records lie ------------------------------ */

/* Free records in address order (events_layout.c says why).  Host only,
 * between calls, under the reserve's lock (as every reader of the lists).  An
 * optimization only: without memory for its map, or where a list is not
 * what its count says, nothing moves.
 *
 * seer_event_order_all_host: every free record -- both lists of every
 * worker and the reserve -- to worker 0's list, the host's (the serial
 * executor's).
 * seer_event_order_host: worker 0's list and the reserve, each in address
 * order (the serial executor after a reset). */
void seer_event_order_all_host(seer_runtime *rt);
void seer_event_order_host(seer_runtime *rt);
/* Host, between calls (events_layout.c says why): every queue's pending
 * events copied out and written back, in the queue's order (bucket by
 * bucket: roughly the order they are handled in), into records in address
 * order, queue by queue, from the lowest; then the free records in address
 * order.  The serial executor's: every record on worker 0's list, its
 * instances' events first.  A pool's: each event into a record of its
 * record's home (each home keeps its pending and free counts), then each
 * worker's pool and cross lists as many as they held, its reserve the
 * rest.  An optimization only: 1 where the events moved, 0 where nothing
 * changed -- without the memory, where the copy would take more than an
 * eighth of memory_limit, or where the free and the pending records do not
 * make up every record. */
int seer_event_relayout_host(seer_runtime *rt);
/* Host, between calls, on the serial executor, after a reset of `reset`
 * instances or SEER_ORDER_AFTER_STEPS steps after a switch to it (reset =
 * 0): seer_event_relayout_host where the pending records outgrow
 * cache_bytes, after a switch or a reset of every instance, and
 * SEER_RELAYOUT_BUDGET times the last relayout's time after it
 * (SEER_RELAYOUT: 0 never, 1 whatever the sizes and whenever); else the
 * free records in address order (after a switch seer_event_order_all_host,
 * after a reset seer_event_order_host). */
void seer_event_tidy_serial_host(seer_runtime *rt, uint32_t reset);
#ifndef SEER_RELAYOUT_BUDGET
#define SEER_RELAYOUT_BUDGET 100u
#endif
/* Steps on the serial executor after a switch to it before
 * seer_event_order_all_host (seer_runtime_step): more than two of STPA's
 * probe visits in a row (at most 9 steps each), which would pay the
 * ordering (2-3 ms on PCS 64x64 after 2 threads) for a few steps. */
#define SEER_ORDER_AFTER_STEPS 32u
/* Host, between calls, as a pool runs (events_layout.c says why): every free
 * record to its home, in address order -- each worker's pool list, then its
 * cross list, as many as they held (as far as its home's records go), its
 * home's reserve the rest.  Nothing moves where a list is not what its
 * count says (or without the memory for the map). */
void seer_event_order_pool_host(seer_runtime *rt);
/* Host, before a step on a pool (any executor but the serial one):
 * seer_event_order_pool_host when due, i.e. SEER_ORDER_AFTER_STEPS steps
 * after a switch (seer_event_order_pool_soon_host) or the last look, and,
 * after the first, once SEER_ORDER_BUDGET times the last ordering's own
 * time has passed since it (at most 1/SEER_ORDER_BUDGET of the run's time,
 * the user's loop included), where the records of a step, a thread's
 * share, outgrow a quarter of cache_bytes (SEER_ORDER_POOLS: 0 never, 1
 * whatever the sizes). */
void seer_event_order_pool_when_due_host(seer_runtime *rt);
/* Host, between calls, on a pool: its ordering now, whatever the budget
 * (as seer_event_order_pool_when_due_host where a step's records, here the
 * run's mean so far, a thread's share, outgrow a quarter of cache_bytes);
 * and again SEER_ORDER_AFTER_STEPS steps on, whatever that takes, as after
 * any switch (seer_runtime_tidy_records). */
void seer_event_tidy_pool_host(seer_runtime *rt);
/* Host, between calls: the pending events' records, in the running
 * executor's queues, fit cache_bytes (a core's L2)?  Where they do, their
 * places matter little and a relayout is not worth its copy
 * (seer_event_tidy_serial_host, a pool's alone stretches: company.c). */
int seer_event_pending_fit_cache_host(const seer_runtime *rt);
/* A core's L2 cache in bytes (sysconf; 1 MiB where it does not say). */
uint64_t seer_event_cache_bytes(void);
#ifndef SEER_ORDER_BUDGET
#define SEER_ORDER_BUDGET 400u
#endif
/* A switch to a pool: order its lists SEER_ORDER_AFTER_STEPS steps on. */
static inline void seer_event_order_pool_soon_host(seer_runtime *rt)
{
    rt->mem.pool_steps = 0;
    rt->mem.order_now = 0;
    rt->mem.order_cost_ns = 0;
    rt->mem.order_events = rt->stats.events;
}
/* A reset on a pool: order its lists at the next step if the budget allows
 * (not SEER_ORDER_AFTER_STEPS steps on). */
static inline void seer_event_order_pool_after_reset_host(seer_runtime *rt)
{
    rt->mem.order_now = 1;
}

#endif /* SEER_EVENTS_H */
