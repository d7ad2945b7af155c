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
 *   seer_event_order_all_host      between calls, on the serial executor
 *   seer_event_order_host          after a switch or a reset: the free
 *                                  records in address order
 *
 * Chunks are allocated as the reserve runs dry, up to the runtime's
 * memory_limit, and freed only with the runtime (or after a failed call:
 * release_failed in runtime.c).
 *
 * Why free records are put back in address order: a list's order is the
 * order the records are next allocated in, and once records have flowed
 * between threads, or a reset has freed every pending event in the queue's
 * order, a list is scattered over the chunks, and stays so for thousands of
 * steps (allocation is LIFO).  Measured on PCS 64x64 (2 cores): the serial
 * executor after 200 steps on 2 threads ran 12% slower than one that never
 * left it beside a CPU burner, 3-5% alone; in order again, 0-2%.  After a
 * reset, episodes of 100-400 steps ran 1-3% faster in order.  The pools'
 * lists are not ordered: walking them (some 70,000 records, 36 ns each, on
 * 2 threads) cost more than the order gained in episodes of up to 100 steps
 * alone (25-step episodes 16% slower), though 10-12% beside a burner.
 * Takes and gives keep a list's order.
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
 * partitions) unchanged.  (Lists per partition instead of per thread kept
 * the one-thread figure but slowed parallel-2 to 1.67 ms; not understood,
 * not kept.)  seer_schedule takes the record from the list its event
 * belongs on; the event loop gives it back to the same kind of list.
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

#define POOL_BATCH 256u  /* events a refill takes                  */
#define POOL_CHUNK 4096u /* events a new chunk holds, at least     */

/* Under rt->mem.lock: a new chunk of at least `want` records onto the
 * reserve, in address order (its lowest record on top).  Slow path: malloc.
 * SEER_E_BUDGET past the memory limit. */
static int new_chunk_locked(seer_runtime *rt, uint64_t want)
{
    const uint64_t n = want > POOL_CHUNK ? want : POOL_CHUNK;
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
    unsigned char *mem =
        aligned_alloc(SEER_CACHE_LINE, seer_round_up(n * rt->event_stride, SEER_CACHE_LINE));
    if (!mem)
        return SEER_E_NOMEM;
    rt->mem.chunks[rt->mem.nchunks++] = (seer_event_chunk){mem, n};
    rt->mem.pool_events += n;
    for (uint64_t i = n; i-- > 0;) {
        seer_event *ev = (seer_event *)(void *)(mem + i * rt->event_stride);
        ev->next_free = rt->mem.reserve;
        rt->mem.reserve = ev;
    }
    rt->mem.reserve_n += n;
    return SEER_OK;
}

/* Under the lock: the reserve's top `want` records to the head of list p,
 * in the reserve's order (allocating a chunk when the reserve is
 * short).  SEER_E_NOMEM, or SEER_E_BUDGET past the memory limit. */
static int take_locked(seer_runtime *rt, seer_event_pool *p, uint64_t want)
{
    if (want == 0)
        return SEER_OK;
    if (rt->mem.reserve_n < want) {
        int rc = new_chunk_locked(rt, want);
        if (rc != SEER_OK)
            return rc;
    }
    seer_event *head = rt->mem.reserve, *tail = head;
    for (uint64_t i = 1; i < want; i++)
        tail = tail->next_free;
    rt->mem.reserve = tail->next_free;
    rt->mem.reserve_n -= want;
    tail->next_free = p->free;
    p->free = head;
    p->nfree += want;
    return SEER_OK;
}

/* Under the lock: all but `keep` of list p's records -- its head, the
 * first nfree - keep -- to the top of the reserve, in the list's order (p
 * keeps the rest, as before the lists were kept in order). */
static void give_locked(seer_runtime *rt, seer_event_pool *p, uint64_t keep)
{
    if (p->nfree <= keep)
        return;
    const uint64_t n = p->nfree - keep;
    seer_event *head = p->free, *tail = head;
    for (uint64_t i = 1; i < n; i++)
        tail = tail->next_free;
    p->free = tail->next_free;
    p->nfree = keep;
    tail->next_free = rt->mem.reserve;
    rt->mem.reserve = head;
    rt->mem.reserve_n += n;
}

void seer_event_pool_balance_local(seer_worker *w, seer_event_pool *p, uint64_t lo, uint64_t hi)
{
    seer_runtime *rt = w->rt;
    /* the count is read under the lock too, as every reader of the lists
     * reads it (the host orders them between calls: seer_event_order_all_host) */
    pthread_mutex_lock(&rt->mem.lock);
    if (p->nfree < lo)
        (void)take_locked(rt, p, lo - p->nfree);
    else if (p->nfree > hi)
        give_locked(rt, p, hi);
    pthread_mutex_unlock(&rt->mem.lock);
}

int seer_event_stock_local(seer_worker *w, uint64_t n)
{
    seer_runtime *rt = w->rt;
    pthread_mutex_lock(&rt->mem.lock);
    int rc = w->pool.nfree >= n ? SEER_OK : take_locked(rt, &w->pool, n - w->pool.nfree);
    pthread_mutex_unlock(&rt->mem.lock);
    return rc;
}

int seer_event_refill_local(seer_worker *w, seer_event_pool *p)
{
    seer_runtime *rt = w->rt;
    p->refills++;
    pthread_mutex_lock(&rt->mem.lock);
    int rc = take_locked(rt, p, POOL_BATCH);
    pthread_mutex_unlock(&rt->mem.lock);
    if (rc == SEER_E_BUDGET)
        seer_worker_error_local(w, SEER_E_NOMEM,
                                "the pending events need more than the runtime's memory "
                                "limit (%.2f GiB, memory_limit): %llu events of %zu bytes "
                                "are in use; lower the event rate or raise memory_limit",
                                (double)rt->memory_limit / 1073741824.0,
                                (unsigned long long)rt->mem.pool_events, rt->event_stride);
    return rc;
}

/* ---- free records in address order ------------------------------------------ */

static int chunk_cmp(const void *a, const void *b)
{
    const uintptr_t x = (uintptr_t)((const seer_event_chunk *)a)->mem;
    const uintptr_t y = (uintptr_t)((const seer_event_chunk *)b)->mem;
    return x < y ? -1 : x > y;
}

/* One free list to order: its head and count. */
typedef struct free_list {
    seer_event **head;
    uint64_t *n;
    uint64_t quota; /* records it takes back, in address order */
} free_list;

/* The chunks by address, the index of each one's first record among all,
 * and a bit per record (set: on one of the lists being ordered). */
typedef struct free_map {
    seer_event_chunk *by;
    uint64_t *first;
    uint64_t *bits;
    size_t nchunks;
    size_t stride;
} free_map;

static void map_free(free_map *m)
{
    free(m->bits);
    free(m->first);
    free(m->by);
}

/* The map of the chunks as they are (the caller holds the reserve's lock:
 * a refill may add one).  0 without the memory for it. */
static int map_chunks_locked(const seer_runtime *rt, free_map *m)
{
    const size_t nc = rt->mem.nchunks;
    *m = (free_map){.nchunks = nc, .stride = rt->event_stride};
    if (!nc)
        return 0;
    m->by = malloc(nc * sizeof *m->by);
    m->first = malloc(nc * sizeof *m->first);
    if (!m->by || !m->first) {
        map_free(m);
        return 0;
    }
    memcpy(m->by, rt->mem.chunks, nc * sizeof *m->by);
    qsort(m->by, nc, sizeof *m->by, chunk_cmp);
    uint64_t records = 0;
    for (size_t c = 0; c < nc; c++) {
        m->first[c] = records;
        records += m->by[c].n;
    }
    m->bits = calloc((records + 63) / 64, sizeof *m->bits);
    if (!m->bits) {
        map_free(m);
        return 0;
    }
    return 1;
}

/* Mark every record of list l: how many, or UINT64_MAX where one lies
 * outside every chunk or is marked twice (never, unless memory is corrupt:
 * then nothing moves). */
static uint64_t mark_list(free_map *m, const free_list *l)
{
    uint64_t n = 0;
    for (seer_event *ev = *l->head; ev; ev = ev->next_free) {
        const uintptr_t p = (uintptr_t)ev;
        size_t lo = 0, hi = m->nchunks; /* the last chunk starting at or below p */
        while (hi - lo > 1) {
            const size_t mid = (lo + hi) / 2;
            if ((uintptr_t)m->by[mid].mem <= p)
                lo = mid;
            else
                hi = mid;
        }
        const uintptr_t base = (uintptr_t)m->by[lo].mem;
        if (p < base || (p - base) % m->stride || (p - base) / m->stride >= m->by[lo].n)
            return UINT64_MAX;
        const uint64_t bit = m->first[lo] + (p - base) / m->stride;
        if (m->bits[bit / 64] & (1ull << (bit % 64)))
            return UINT64_MAX;
        m->bits[bit / 64] |= 1ull << (bit % 64);
        n++;
    }
    return n;
}

static void close_list(const free_list *l, seer_event *head, seer_event *tail)
{
    if (tail)
        tail->next_free = NULL;
    *l->head = head;
    *l->n = l->quota;
}

/* Lists ls[0..nl) (their records marked in m, their quotas adding up to
 * them): the records in address order, dealt out from the lowest, each
 * list taking its quota. */
static void deal(const free_map *m, const free_list *ls, size_t nl)
{
    size_t k = 0;
    uint64_t left = ls[0].quota;
    seer_event *head = NULL, *tail = NULL;
    for (size_t c = 0; c < m->nchunks; c++)
        for (uint64_t i = 0; i < m->by[c].n; i++) {
            const uint64_t bit = m->first[c] + i;
            if (!(m->bits[bit / 64] & (1ull << (bit % 64))))
                continue;
            while (left == 0 && k + 1 < nl) { /* list k is full: the next one */
                close_list(&ls[k], head, tail);
                head = tail = NULL;
                left = ls[++k].quota;
            }
            seer_event *ev = (seer_event *)(void *)(m->by[c].mem + i * m->stride);
            if (tail)
                tail->next_free = ev;
            else
                head = ev;
            tail = ev;
            left--;
        }
    close_list(&ls[k], head, tail);
    while (k + 1 < nl)
        close_list(&ls[++k], NULL, NULL);
}

/* Order lists ls[0..nl) with map m: all their records to the first
 * (`to_first`), else each keeps its count.  Nothing moves where a list is
 * not what its count says. */
static void order_lists(free_map *m, free_list *ls, size_t nl, int to_first)
{
    uint64_t total = 0;
    for (size_t k = 0; k < nl; k++) {
        const uint64_t n = mark_list(m, &ls[k]);
        if (n != *ls[k].n)
            return;
        total += n;
        ls[k].quota = to_first ? (k == 0 ? total : 0) : n;
    }
    if (to_first)
        ls[0].quota = total;
    deal(m, ls, nl);
}

void seer_event_order_all_host(seer_runtime *rt)
{
    const uint32_t nw = rt->pool.workers ? rt->pool.nthreads : 0;
    free_list *ls = malloc((2 * (size_t)nw + 1) * sizeof *ls);
    pthread_mutex_lock(&rt->mem.lock);
    free_map m;
    if (ls && map_chunks_locked(rt, &m)) {
        for (uint32_t t = 0; t < nw; t++) {
            seer_worker *w = &rt->pool.workers[t];
            ls[t] = (free_list){&w->pool.free, &w->pool.nfree, 0};
            ls[nw + 1 + t] = (free_list){&w->cross.free, &w->cross.nfree, 0};
        }
        ls[nw] = (free_list){&rt->mem.reserve, &rt->mem.reserve_n, 0};
        order_lists(&m, ls, 2 * (size_t)nw + 1, 1);
        map_free(&m);
    }
    pthread_mutex_unlock(&rt->mem.lock);
    free(ls);
}

void seer_event_order_host(seer_runtime *rt)
{
    if (!rt->pool.workers)
        return;
    seer_worker *w0 = &rt->pool.workers[0];
    free_list ls[2] = {{&w0->pool.free, &w0->pool.nfree, 0},
                       {&rt->mem.reserve, &rt->mem.reserve_n, 0}};
    free_map m;
    pthread_mutex_lock(&rt->mem.lock);
    if (map_chunks_locked(rt, &m)) {
        order_lists(&m, ls, 2, 0);
        map_free(&m);
    }
    pthread_mutex_unlock(&rt->mem.lock);
}

static void free_event_cb(void *w, seer_event *ev) { seer_event_free_local(w, ev); }

void seer_event_free_all_local(seer_worker *w, seer_squeue *q)
{
    seer_squeue_foreach_owner(q, free_event_cb, w);
    seer_squeue_clear_owner(q);
}
