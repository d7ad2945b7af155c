/*
 * events.c -- event memory.  Every worker keeps a free list of event records
 * (seer_worker.pool) that only its own thread touches, with no
 * synchronization: seer_event_alloc_local and seer_event_free_local, inline
 * in events.h, are the per-event path (seer_schedule allocates, the event
 * loop frees).  Records live in blocks, each homed to a worker (below); a
 * record is freed to the list of the thread that handled it when that
 * thread is its home, and otherwise, during a pool call, to that thread's
 * away list for its home, which the host puts on the home's list when the
 * call ends (seer_event_send_home_host).  The lists are backed by a reserve
 * per home, under rt->mem.lock:
 *
 *   seer_event_refill_local        an empty list takes a batch (inside the
 *                                  event loop: counted in w->refills)
 *   seer_event_pool_balance_local  outside the event loop, when a call
 *                                  starts or the pool stops: bring a list
 *                                  to its target stock
 *   seer_event_stock_local         outside the event loop: at least n free
 *                                  (a restore's events, snapshot.c)
 *
 * Where the records lie -- the free ones put back in address order, the
 * pending ones moved into it (seer_event_order_*_host,
 * seer_event_relayout_host) -- is events_layout.c's.
 *
 * Blocks (1 << block_shift bytes, aligned so: a header line with the home,
 * then the records) are allocated as a home's reserve runs dry, homed to
 * the worker that needs them, up to the runtime's memory_limit (past it a
 * worker takes other homes' records, which go home when freed), and freed
 * only with the runtime (or after a failed call: release_failed in
 * runtime.c).  A pool of another size deals the blocks of homes beyond it
 * out among its workers (seer_event_homes_host).
 *
 * Why records have homes.  Records flow between threads: a window's event
 * for another partition is freed by the target's thread, partition 1's act
 * phase runs on the caller in about half the steps (its worker not there
 * yet), the caller runs every partition when the other threads do not come
 * (a thread budget of one, a CPU burner) and a reset frees every pending
 * event.  Freed to the handler's list, such records stayed on it: the two
 * threads' records ended up side by side, line by line (64-byte records:
 * in the slow envs below, the other line of a free record's 128-byte pair
 * was on the other thread's list in 12-48% of the cases, in the fast ones
 * in none), and every event cost both threads about half as much
 * again (PCS 64x64, the phases' own time: 1188 against 756 us a step for
 * the same 23,049 events a thread), presumably the cores fetching each
 * other's lines as pairs.  Made alike in one process, parallel-2 envs ran
 * 1.05-1.2 ms a step or 1.45-1.6, each its own for a while; a fast one
 * turned slow for good, by itself now and then and after a few steps on
 * one thread (5 of 7) or a reset (3 of 3).  Sent home, each thread's
 * records stay in blocks of their own: in the same hour none of 18 envs
 * (3 runs of bench_pool_modes) ran slow, nor 26 of a first version
 * (1.07-1.23 ms fresh; after such steps 1.12-1.30, the lists' order).
 * From 18:00 that day the host showed no slow envs with the old runtime
 * either.  The cost: a load of the block's header and a compare per free
 * in pool calls, a splice per home at a call's end; the serial executor
 * sends nothing home (one predictable branch).
 *
 * Why a pool's windows keep the records of events between partitions on a
 * list of their own (w->cross).  Allocation is LIFO, so a list keeps the
 * order its records were freed in, and the serial executor frees a group
 * of equal-time events (PCS's load reports: 16,384 a step) in the order it
 * allocated them: the group's records stay next to each other from step
 * to step (a consecutive allocation was within 4 KiB of the last in 64% of
 * PCS 64x64's allocations).  Windows run a partition's events, then the
 * next partition's: an event between two of them is freed in the target's
 * turn, out of its allocation order, and on a list they shared every step
 * moved some records out of place for good; within 50 steps no allocation
 * was near the last (99% far), and every record written missed the cache.
 * PCS 64x64 on a pool of 2 running all its windows on one thread (as
 * beside a CPU burner, when the other thread does not come): 2.72 ms a
 * step against the serial executor's 1.97 with one list, 2.16 with the
 * events between partitions (1.1% of them) apart; parallel-2 alone, the
 * median of 5 processes, 1.35 -> 1.23 ms; PHOLD (half its events between
 * partitions) unchanged.  seer_schedule takes the record from the list
 * its event belongs on; the event loop gives it back to the same kind of
 * list (its home's).
 */
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "runtime.h"
#include "squeue.h"
#include "sync.h"

#define POOL_BATCH 256u /* events a refill takes */

uint32_t seer_event_block_shift(size_t stride)
{
    /* 256 KiB (4095 records of 64 bytes), or more: at least 16 records */
    uint32_t shift = 18;
    while (((size_t)1 << shift) - SEER_CACHE_LINE < 16 * stride)
        shift++;
    return shift;
}

uint64_t seer_event_reserved(const seer_runtime *rt)
{
    uint64_t n = 0;
    for (uint32_t h = 0; h < rt->mem.nhomes; h++)
        n += rt->mem.homes[h].n;
    return n;
}

void seer_event_blocks_free(seer_runtime *rt)
{
    for (size_t k = 0; k < rt->mem.nchunks; k++)
        free(seer_event_chunk_block(&rt->mem.chunks[k]));
    rt->mem.nchunks = 0;
    rt->mem.pool_events = 0;
    for (uint32_t h = 0; h < rt->mem.nhomes; h++)
        rt->mem.homes[h] = (seer_event_home){NULL, 0};
}

/* Under rt->mem.lock: a new block homed to `home` onto its reserve, in
 * address order (its lowest record on top).  Slow path: malloc.
 * SEER_E_BUDGET past the memory limit. */
static int new_block_locked(seer_runtime *rt, uint32_t home)
{
    const size_t bytes = (size_t)1 << rt->mem.block_shift;
    const uint64_t n = (bytes - SEER_CACHE_LINE) / rt->event_stride;
    if ((double)(rt->mem.pool_events + n) * (double)rt->event_stride > (double)rt->memory_limit)
        return SEER_E_BUDGET;
    if (rt->mem.nchunks == rt->mem.chunks_cap) {
        size_t cap = rt->mem.chunks_cap ? rt->mem.chunks_cap * 2 : 16;
        seer_event_chunk *c = realloc(rt->mem.chunks, cap * sizeof *c);
        if (!c)
            return SEER_E_NOMEM;
        rt->mem.chunks = c;
        rt->mem.chunks_cap = cap;
    }
    /* aligned to its size: a record's block is its address, masked */
    unsigned char *block = aligned_alloc(bytes, bytes);
    if (!block)
        return SEER_E_NOMEM;
    ((seer_event_block *)(void *)block)->home = home;
    unsigned char *mem = block + SEER_CACHE_LINE;
    rt->mem.chunks[rt->mem.nchunks++] = (seer_event_chunk){mem, n};
    rt->mem.pool_events += n;
    seer_event_home *r = &rt->mem.homes[home];
    seer_event_chunk_push(&rt->mem.chunks[rt->mem.nchunks - 1], rt->event_stride, &r->free,
                          &r->n);
    return SEER_OK;
}

/* Under the lock: the top `k` records of reserve r to the head of list p,
 * in the reserve's order (r holds at least k). */
static void move_locked(seer_event_home *r, seer_event_pool *p, uint64_t k)
{
    seer_event_splice(&r->free, &r->n, &p->free, &p->nfree, k);
}

/* Under the lock: `want` records to the head of list p, w's: from w's
 * home's reserve, with new blocks homed to w as it runs short.  Past the
 * memory limit, records of other homes' reserves make up the rest (they
 * go back to their homes when freed in a pool call).  All or nothing:
 * SEER_E_NOMEM, or SEER_E_BUDGET when even all reserves together are
 * short; p is as it was (new blocks stay in the reserve). */
static int take_locked(seer_runtime *rt, seer_worker *w, seer_event_pool *p, uint64_t want)
{
    if (want == 0)
        return SEER_OK;
    seer_event_home *own = &rt->mem.homes[w->id];
    while (own->n < want) {
        int rc = new_block_locked(rt, w->id);
        if (rc == SEER_E_BUDGET)
            break;
        if (rc != SEER_OK)
            return rc;
    }
    if (own->n >= want) {
        move_locked(own, p, want);
        return SEER_OK;
    }
    if (seer_event_reserved(rt) < want)
        return SEER_E_BUDGET;
    uint64_t left = want - own->n;
    move_locked(own, p, own->n);
    for (uint32_t h = 0; left && h < rt->mem.nhomes; h++) {
        seer_event_home *r = &rt->mem.homes[h];
        const uint64_t k = h == w->id ? 0 : r->n < left ? r->n : left;
        move_locked(r, p, k);
        left -= k;
    }
    return SEER_OK;
}

/* Under the lock: the records from head (to tail, NULL: to the list's
 * end), each to the top of its own home's reserve. */
static void to_home_reserves_locked(seer_runtime *rt, seer_event *head, const seer_event *tail)
{
    for (seer_event *ev = head, *next; ev; ev = next) {
        next = ev == tail ? NULL : ev->next_free;
        seer_event_home *r = &rt->mem.homes[seer_event_block_of(rt, ev)->home];
        ev->next_free = r->free;
        r->free = ev;
        r->n++;
    }
}

/* Under the lock: all but `keep` of list p's records -- its head, the
 * first nfree - keep -- to the top of their homes' reserves, in the list's
 * order (p keeps the rest, as before the lists were kept in order). */
static void give_locked(seer_runtime *rt, seer_event_pool *p, uint64_t keep, uint32_t home)
{
    if (p->nfree <= keep)
        return;
    const uint64_t n = p->nfree - keep;
    int mixed = 0;
    seer_event *head = p->free, *tail = head;
    for (uint64_t i = 0; i < n; i++) {
        if (i)
            tail = tail->next_free;
        mixed |= seer_event_block_of(rt, tail)->home != home;
    }
    p->free = tail->next_free;
    p->nfree = keep;
    if (!mixed) { /* the usual case: one splice */
        seer_event_home *r = &rt->mem.homes[home];
        tail->next_free = r->free;
        r->free = head;
        r->n += n;
        return;
    }
    /* records freed outside pool calls (the serial executor's, a reset's)
     * or taken past the memory limit: each to its own home's reserve */
    to_home_reserves_locked(rt, head, tail);
}

void seer_event_send_home_host(seer_runtime *rt)
{
    pthread_mutex_lock(&rt->mem.lock);
    for (uint32_t t = 0; rt->pool.workers && t < rt->pool.nthreads; t++) {
        seer_worker *w = &rt->pool.workers[t];
        for (uint32_t k = 0; k < w->away_nh; k++) {
            const uint32_t h = w->away_homes[k];
            seer_event_away *a = &w->away[h];
            seer_worker *to = &rt->pool.workers[h];
            for (int kind = 0; kind < 2; kind++) {
                if (!a->head[kind])
                    continue;
                seer_event_pool *p = kind ? &to->cross : &to->pool;
                a->tail[kind]->next_free = p->free;
                p->free = a->head[kind];
                p->nfree += a->n[kind];
            }
            *a = (seer_event_away){{NULL, NULL}, {NULL, NULL}, {0, 0}};
        }
        w->away_nh = 0;
    }
    pthread_mutex_unlock(&rt->mem.lock);
}

int seer_event_homes_host(seer_runtime *rt, uint32_t n)
{
    pthread_mutex_lock(&rt->mem.lock);
    if (rt->mem.nhomes < n) {
        seer_event_home *h = realloc(rt->mem.homes, n * sizeof *h);
        if (!h) {
            pthread_mutex_unlock(&rt->mem.lock);
            return SEER_E_NOMEM;
        }
        memset(h + rt->mem.nhomes, 0, (n - rt->mem.nhomes) * sizeof *h);
        rt->mem.homes = h;
        rt->mem.nhomes = n;
    }
    /* blocks of homes beyond the pool: dealt out among its workers */
    for (size_t k = 0; k < rt->mem.nchunks; k++) {
        seer_event_block *b = seer_event_chunk_block(&rt->mem.chunks[k]);
        if (b->home >= n)
            b->home = (uint32_t)(k % n);
    }
    for (uint32_t h = n; h < rt->mem.nhomes; h++) {
        seer_event *head = rt->mem.homes[h].free;
        rt->mem.homes[h] = (seer_event_home){NULL, 0};
        to_home_reserves_locked(rt, head, NULL);
    }
    pthread_mutex_unlock(&rt->mem.lock);
    return SEER_OK;
}

void seer_event_pool_balance_local(seer_worker *w, seer_event_pool *p, uint64_t lo, uint64_t hi)
{
    seer_runtime *rt = w->rt;
    /* the count is read under the lock too, as every reader of the lists
     * reads it (the host orders them between calls: seer_event_order_all_host) */
    pthread_mutex_lock(&rt->mem.lock);
    if (p->nfree < lo)
        (void)take_locked(rt, w, p, lo - p->nfree);
    else if (p->nfree > hi)
        give_locked(rt, p, hi, w->id);
    pthread_mutex_unlock(&rt->mem.lock);
}

int seer_event_stock_local(seer_worker *w, uint64_t n)
{
    seer_runtime *rt = w->rt;
    pthread_mutex_lock(&rt->mem.lock);
    int rc = w->pool.nfree >= n ? SEER_OK : take_locked(rt, w, &w->pool, n - w->pool.nfree);
    pthread_mutex_unlock(&rt->mem.lock);
    return rc;
}

int seer_event_refill_local(seer_worker *w, seer_event_pool *p)
{
    seer_runtime *rt = w->rt;
    p->refills++;
    pthread_mutex_lock(&rt->mem.lock);
    int rc = take_locked(rt, w, p, POOL_BATCH);
    pthread_mutex_unlock(&rt->mem.lock);
    if (rc == SEER_E_BUDGET)
        seer_worker_error_local(w, SEER_E_NOMEM,
                                "the pending events need more than the runtime's memory "
                                "limit (%llu bytes, memory_limit): %llu event records of "
                                "%zu bytes are in use, and a block of %llu bytes more would "
                                "pass it; lower the event rate or raise memory_limit",
                                (unsigned long long)rt->memory_limit,
                                (unsigned long long)rt->mem.pool_events, rt->event_stride,
                                (unsigned long long)1 << rt->mem.block_shift);
    return rc;
}

static void free_event_cb(void *w, seer_event *ev) { seer_event_free_local(w, ev); }

void seer_event_free_all_local(seer_worker *w, seer_squeue *q)
{
    seer_squeue_foreach_owner(q, free_event_cb, w);
    seer_squeue_clear_owner(q);
}
