/*
 * events.c -- event memory.  Every worker keeps a free list of event records
 * (seer_worker.pool) that only its own thread touches, with no
 * synchronization: seer_event_alloc_local and seer_event_free_local, inline
 * in events.h, are the per-event path (seer_schedule allocates, the event
 * loop frees).  A record is freed to the list of the thread that handled it,
 * so records flow from the threads that schedule events to the threads that
 * handle them; the lists are backed by a reserve of chunks shared by all
 * workers, under rt->mem.lock:
 *
 *   seer_event_refill_local        an empty list takes a batch (inside the
 *                                  event loop: counted in w->refills)
 *   seer_event_pool_balance_local  outside the event loop, when a call
 *                                  starts or the pool stops: bring a list
 *                                  to its target stock
 *   seer_event_stock_local         outside the event loop: at least n free
 *                                  (a restore's events, snapshot.c)
 *
 * Chunks are allocated as the reserve runs dry, up to the runtime's
 * memory_limit, and freed only with the runtime (or after a failed call:
 * release_failed in runtime.c).
 */
#include <stdlib.h>

#include "base.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "runtime.h"
#include "squeue.h"
#include "sync.h"

#define POOL_BATCH 256u  /* events a refill takes                  */
#define POOL_CHUNK 4096u /* events a new chunk holds, at least     */

/* Move up to `want` events from the shared reserve to w's free list
 * (allocating a chunk when the reserve is short).  Slow path: a mutex and,
 * rarely, malloc.  SEER_E_BUDGET past the memory limit. */
static int pool_take(seer_runtime *rt, seer_worker *w, uint64_t want)
{
    pthread_mutex_lock(&rt->mem.lock);
    if (rt->mem.reserve_n < want) {
        uint64_t n = want > POOL_CHUNK ? want : POOL_CHUNK;
        if ((double)(rt->mem.pool_events + n) * (double)rt->event_stride >
            (double)rt->memory_limit) {
            pthread_mutex_unlock(&rt->mem.lock);
            return SEER_E_BUDGET;
        }
        if (rt->mem.nchunks == rt->mem.chunks_cap) {
            size_t cap = rt->mem.chunks_cap ? rt->mem.chunks_cap * 2 : 16;
            void **c = realloc(rt->mem.chunks, cap * sizeof *c);
            if (!c) {
                pthread_mutex_unlock(&rt->mem.lock);
                return SEER_E_NOMEM;
            }
            rt->mem.chunks = c;
            rt->mem.chunks_cap = cap;
        }
        unsigned char *mem = aligned_alloc(SEER_CACHE_LINE,
                                           seer_round_up(n * rt->event_stride, SEER_CACHE_LINE));
        if (!mem) {
            pthread_mutex_unlock(&rt->mem.lock);
            return SEER_E_NOMEM;
        }
        rt->mem.chunks[rt->mem.nchunks++] = mem;
        rt->mem.pool_events += n;
        for (uint64_t i = 0; i < n; i++) {
            seer_event *ev = (seer_event *)(void *)(mem + i * rt->event_stride);
            ev->next_free = rt->mem.reserve;
            rt->mem.reserve = ev;
        }
        rt->mem.reserve_n += n;
    }
    for (uint64_t i = 0; i < want; i++) {
        seer_event *ev = rt->mem.reserve;
        rt->mem.reserve = ev->next_free;
        ev->next_free = w->pool.free;
        w->pool.free = ev;
    }
    rt->mem.reserve_n -= want;
    w->pool.nfree += want;
    pthread_mutex_unlock(&rt->mem.lock);
    return SEER_OK;
}

/* Give w's free events beyond `keep` back to the reserve. */
static void pool_give(seer_runtime *rt, seer_worker *w, uint64_t keep)
{
    if (w->pool.nfree <= keep)
        return;
    pthread_mutex_lock(&rt->mem.lock);
    while (w->pool.nfree > keep) {
        seer_event *ev = w->pool.free;
        w->pool.free = ev->next_free;
        ev->next_free = rt->mem.reserve;
        rt->mem.reserve = ev;
        rt->mem.reserve_n++;
        w->pool.nfree--;
    }
    pthread_mutex_unlock(&rt->mem.lock);
}

void seer_event_pool_balance_local(seer_worker *w, uint64_t lo, uint64_t hi)
{
    if (w->pool.nfree < lo)
        (void)pool_take(w->rt, w, lo - w->pool.nfree);
    else if (w->pool.nfree > hi)
        pool_give(w->rt, w, hi);
}

int seer_event_stock_local(seer_worker *w, uint64_t n)
{
    return w->pool.nfree >= n ? SEER_OK : pool_take(w->rt, w, n - w->pool.nfree);
}

int seer_event_refill_local(seer_worker *w)
{
    w->refills++;
    int rc = pool_take(w->rt, w, POOL_BATCH);
    if (rc == SEER_E_BUDGET)
        seer_worker_error_local(w, SEER_E_NOMEM,
                                "the pending events need more than the runtime's memory "
                                "limit (%.2f GiB, memory_limit): %llu events of %zu bytes "
                                "are in use; lower the event rate or raise memory_limit",
                                (double)w->rt->memory_limit / 1073741824.0,
                                (unsigned long long)w->rt->mem.pool_events, w->rt->event_stride);
    return rc;
}

static void free_event_cb(void *w, seer_event *ev) { seer_event_free_local(w, ev); }

void seer_event_free_all_local(seer_worker *w, seer_squeue *q)
{
    seer_squeue_foreach_owner(q, free_event_cb, w);
    seer_squeue_clear_owner(q);
}
