/*
 * events_layout.c -- where event records lie (event memory is events.c's):
 * between calls, on the host thread, the free records put back in address
 * order.
 *
 *   seer_event_order_all_host      between calls, on the serial executor
 *   seer_event_order_host          after a switch or a reset: the free
 *                                  records in address order
 *   seer_event_order_pool_host     on a pool, now and then: each list in
 *                                  address order, on its own
 *
 * Why free records are put back in address order: a list's order is the
 * order the records are next allocated in, and once records have flowed
 * between threads, or a reset has freed every pending event in the queue's
 * order, a list is scattered over the chunks, and stays so for thousands of
 * steps (allocation is LIFO).  Measured on PCS 64x64 (2 cores): the serial
 * executor after 200 steps on 2 threads ran 12% slower than one that never
 * left it beside a CPU burner, 3-5% alone; in order again, 0-2%.  After a
 * reset, episodes of 100-400 steps ran 1-3% faster in order.  A pool's
 * lists scatter too, as its records go home out of order (and before the
 * homes, walking lists of both threads' records cost more than it gained):
 * every free record is now sent home and each worker's lists put in
 * address order (seer_event_order_pool_host), at the first step after a
 * reset and SEER_ORDER_AFTER_STEPS steps after a switch to a pool, then
 * whenever SEER_ORDER_BUDGET times the last ordering's own time has passed
 * (at most 1/400 of the run's time, the user's loop included), where a
 * step's records, a thread's share, outgrow a quarter of a core's L2
 * (seer_event_order_pool_when_due_host).  PCS 64x64 (1.2 ms an ordering,
 * a step's time; 1.5 MB of records a thread and step against 2 MB of L2),
 * 2 envs with it and 2 without in one process, rotated blocks: parallel-2
 * 4-8% faster without resets (4 runs), 4-8% with one every 400 steps, 2-3%
 * every 100; optimistic-2 7%.  Where the records fit (PCS 32x32: 0.37 MB,
 * 16x16, PHOLD) ordering gained nothing (1.00-1.01x) or lost (16x16: 0.98x,
 * the freshly freed records on top being the warmest), so they are left
 * as they are.  An env that had run a pool, then another executor and the
 * pool again (STPA's probes) ran its pool 10-20% behind the same pool made
 * fresh until its lists were ordered.  SEER_ORDER_POOLS=0 turns it off,
 * =1 orders whatever the sizes.  Takes and gives keep a list's order.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* sysconf */

#include "base.h"
#include "event.h"
#include "events.h"
#include "runtime.h"
#include "sync.h"
#include "trace.h" /* seer_clock_ns */

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
    uint64_t records; /* bits in `bits` */
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
    m->records = records;
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

/* Records dealt out to lists ls[0..nl) in the order they come, each list
 * taking its quota, then the next (seer_event_order_pool_host keeps one
 * per home). */
typedef struct dealer {
    const free_list *ls;
    size_t nl, k;
    uint64_t left;
    seer_event *head, *tail;
} dealer;

static dealer dealer_start(const free_list *ls, size_t nl)
{
    return (dealer){.ls = ls, .nl = nl, .left = ls[0].quota};
}

static void dealer_put(dealer *x, seer_event *ev)
{
    while (x->left == 0 && x->k + 1 < x->nl) { /* list k is full: the next one */
        close_list(&x->ls[x->k], x->head, x->tail);
        x->head = x->tail = NULL;
        x->left = x->ls[++x->k].quota;
    }
    if (x->tail)
        x->tail->next_free = ev;
    else
        x->head = ev;
    x->tail = ev;
    x->left--;
}

static void dealer_finish(dealer *x)
{
    close_list(&x->ls[x->k], x->head, x->tail);
    while (x->k + 1 < x->nl)
        close_list(&x->ls[++x->k], NULL, NULL);
}

/* Lists ls[0..nl) (their records marked in m, their quotas adding up to
 * them): the records in address order, dealt out from the lowest, each
 * list taking its quota. */
static void deal(const free_map *m, const free_list *ls, size_t nl)
{
    dealer x = dealer_start(ls, nl);
    for (size_t c = 0; c < m->nchunks; c++)
        for (uint64_t i = 0; i < m->by[c].n; i++) {
            const uint64_t bit = m->first[c] + i;
            if (m->bits[bit / 64] & (1ull << (bit % 64)))
                dealer_put(&x, (seer_event *)(void *)(m->by[c].mem + i * m->stride));
        }
    dealer_finish(&x);
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
    const size_t nl = 2 * (size_t)nw + rt->mem.nhomes;
    free_list *ls = malloc((nl ? nl : 1) * sizeof *ls);
    pthread_mutex_lock(&rt->mem.lock);
    free_map m;
    if (ls && nw && map_chunks_locked(rt, &m)) {
        for (uint32_t t = 0; t < nw; t++) {
            seer_worker *w = &rt->pool.workers[t];
            ls[t] = (free_list){&w->pool.free, &w->pool.nfree, 0};
            ls[nw + t] = (free_list){&w->cross.free, &w->cross.nfree, 0};
        }
        for (uint32_t h = 0; h < rt->mem.nhomes; h++)
            ls[2 * (size_t)nw + h] =
                (free_list){&rt->mem.homes[h].free, &rt->mem.homes[h].n, 0};
        order_lists(&m, ls, nl, 1);
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
    const size_t nl = 1 + (size_t)rt->mem.nhomes;
    free_list *ls = malloc(nl * sizeof *ls);
    free_map m;
    pthread_mutex_lock(&rt->mem.lock);
    if (ls && map_chunks_locked(rt, &m)) {
        ls[0] = (free_list){&w0->pool.free, &w0->pool.nfree, 0};
        for (uint32_t h = 0; h < rt->mem.nhomes; h++)
            ls[1 + h] = (free_list){&rt->mem.homes[h].free, &rt->mem.homes[h].n, 0};
        /* each list on its own: a reserve keeps its home's records */
        for (size_t k = 0; k < nl; k++) {
            memset(m.bits, 0, (m.records + 63) / 64 * sizeof *m.bits);
            order_lists(&m, &ls[k], 1, 0);
        }
        map_free(&m);
    }
    pthread_mutex_unlock(&rt->mem.lock);
    free(ls);
}

/* One home's lists as seer_event_order_pool_host deals them: its worker's
 * pool and cross lists, then its reserve (a home beyond the pool: the
 * reserve alone), its free records and their dealer. */
typedef struct home_deal {
    free_list ls[3];
    size_t nl;
    uint64_t total;
    dealer x;
} home_deal;

static uint32_t block_home(const seer_event_chunk *c, uint32_t nhomes)
{
    const uint32_t h = seer_event_chunk_block(c)->home;
    return h < nhomes ? h : 0; /* (never beyond: seer_event_homes_host) */
}

void seer_event_order_pool_host(seer_runtime *rt)
{
    const uint32_t nw = rt->pool.workers ? rt->pool.nthreads : 0;
    const uint32_t nh = rt->mem.nhomes;
    if (!nw || nh < nw)
        return;
    home_deal *d = calloc(nh, sizeof *d);
    free_map m;
    pthread_mutex_lock(&rt->mem.lock);
    if (d && map_chunks_locked(rt, &m)) {
        int ok = 1;
        for (uint32_t h = 0; h < nh; h++) {
            seer_event_home *r = &rt->mem.homes[h];
            if (h < nw) {
                seer_worker *w = &rt->pool.workers[h];
                d[h].ls[0] = (free_list){&w->pool.free, &w->pool.nfree, 0};
                d[h].ls[1] = (free_list){&w->cross.free, &w->cross.nfree, 0};
            }
            d[h].nl = h < nw ? 3 : 1;
            d[h].ls[d[h].nl - 1] = (free_list){&r->free, &r->n, 0};
            for (size_t k = 0; k < d[h].nl; k++)
                ok &= mark_list(&m, &d[h].ls[k]) == *d[h].ls[k].n;
        }
        /* every free record marked once (else nothing moves): each home's */
        for (size_t c = 0; ok && c < m.nchunks; c++) {
            uint64_t n = 0;
            for (uint64_t i = 0; i < m.by[c].n; i++) {
                const uint64_t bit = m.first[c] + i;
                n += (m.bits[bit / 64] >> (bit % 64)) & 1u;
            }
            d[block_home(&m.by[c], nh)].total += n;
        }
        /* the worker's lists keep their counts as far as its home's records
         * go; its reserve takes the rest */
        for (uint32_t h = 0; ok && h < nh; h++) {
            uint64_t left = d[h].total;
            for (size_t k = 0; k < d[h].nl; k++) {
                const uint64_t n = *d[h].ls[k].n;
                d[h].ls[k].quota = k + 1 == d[h].nl ? left : n < left ? n : left;
                left -= d[h].ls[k].quota;
            }
            d[h].x = dealer_start(d[h].ls, d[h].nl);
        }
        /* dealt in address order: each home's records to its lists */
        for (size_t c = 0; ok && c < m.nchunks; c++) {
            dealer *x = &d[block_home(&m.by[c], nh)].x;
            for (uint64_t i = 0; i < m.by[c].n; i++) {
                const uint64_t bit = m.first[c] + i;
                if (m.bits[bit / 64] & (1ull << (bit % 64)))
                    dealer_put(x, (seer_event *)(void *)(m.by[c].mem + i * m.stride));
            }
        }
        for (uint32_t h = 0; ok && h < nh; h++)
            dealer_finish(&d[h].x);
        map_free(&m);
    }
    pthread_mutex_unlock(&rt->mem.lock);
    free(d);
}

uint64_t seer_event_cache_bytes(void)
{
    long n = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
    n = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return n > 0 ? (uint64_t)n : (uint64_t)1 << 20;
}

void seer_event_order_pool_when_due_host(seer_runtime *rt)
{
    if ((++rt->mem.pool_steps < SEER_ORDER_AFTER_STEPS && !rt->mem.order_now) ||
        !rt->mem.order_pools)
        return;
    const uint64_t t0 = seer_clock_ns();
    if (rt->mem.order_cost_ns &&
        t0 - rt->mem.ordered_ns < SEER_ORDER_BUDGET * rt->mem.order_cost_ns)
        return;
    /* the records a step went through, a thread's share, against a core's
     * L2: within a quarter of it they stay cached whatever their order, and
     * a list's own order (the records freed last on top) is the warmest */
    const uint32_t nt = rt->pool.nthreads ? rt->pool.nthreads : 1;
    const double bytes = (double)(rt->stats.events - rt->mem.order_events) /
                         rt->mem.pool_steps * (double)rt->event_stride / nt;
    rt->mem.order_events = rt->stats.events;
    rt->mem.pool_steps = 0; /* the next look SEER_ORDER_AFTER_STEPS steps on */
    rt->mem.order_now = 0;
    if (rt->mem.order_pools == 1 && 4.0 * bytes < (double)rt->mem.cache_bytes)
        return;
    seer_event_order_pool_host(rt);
    const uint64_t t1 = seer_clock_ns();
    rt->mem.order_cost_ns = t1 > t0 ? t1 - t0 : 1;
    rt->mem.ordered_ns = t1;
}
