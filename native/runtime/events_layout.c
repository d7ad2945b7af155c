/*
 * events_layout.c -- where event records lie (event memory is events.c's):
 * between calls, on the host thread, the free records put back in address
 * order and the pending events moved into records in address order.
 *
 *   seer_event_order_all_host      between calls, on the serial executor
 *   seer_event_order_host          after a switch or a reset: the free
 *                                  records in address order
 *   seer_event_order_pool_host     on a pool, now and then: each list in
 *                                  address order, on its own
 *   seer_event_relayout_host       between calls, after a reset or a switch
 *                                  and then on a pool's orderings: the
 *                                  pending events moved into records in
 *                                  address order, queue by queue
 *
 * Why free records are put back in address order: a list's order is the
 * order the records are next allocated in, and once records have flowed
 * between threads, or a reset has freed every pending event in the queue's
 * order, a list is scattered over the chunks, and stays so for thousands of
 * steps (allocation is LIFO).  Measured on PCS 64x64 (2 cores): the serial
 * executor after 200 steps on 2 threads ran 12% slower than one that never
 * left it beside a CPU burner, 3-5% alone; in order again, 0-2% (in later
 * runs 7-12% beside a burner: the pending events' places, below).  After a
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
 *
 * Why pending events are moved (seer_event_relayout_host).  Ordering the
 * free records leaves the pending ones where they are, and a step handles
 * mostly events that were pending when it started (PCS 64x64: 69,632
 * pending between steps, 46,000 handled in a step): their records are
 * where the model's init or the pool's threads put them (after a reset, in
 * the order the entities were initialized; after a pool, spread over the
 * blocks of both homes), and allocation being LIFO they keep circulating
 * there.  Copied out and written back in the queues' order (bucket by
 * bucket: roughly the order they are handled in) into the records of
 * lowest address, queue by queue (a pool's: each into a record of its
 * record's home), they are read about in address order.  Measured on PCS 64x64 (2 cores; 2 envs
 * with it, 2 without, in one process, rotated 40-step blocks; 5-9 runs
 * each, benchmarks/bench_relayout.py and the same by hand), its time with
 * it against without: the serial executor 0.90-0.95 alone, 0.91-0.95
 * beside a CPU burner, lasting (0.91-0.95 still 2000 steps on), after a
 * reset and after 100 steps alike; sorting the events by (time, key) first
 * gained nothing more (0.91-0.95 either way) and cost 8 ms a reset more.
 * The serial executor after a pool ran 14-19% behind a fresh one beside a
 * burner (the free records in order; 31-36% without): relaid, 0.99-1.04.
 * A pool, relaid at its orderings: parallel-2 0.90-0.98 alone, 0.91-0.98
 * beside a burner; optimistic-2 0.93-1.00 and 0.93-0.96.  The cost: a copy
 * of the pending events (4.4 MB, about 1 ms on PCS 64x64 against a reset's
 * 4.4 ms).  Where the pending records fit a core's L2 nothing is moved on
 * the serial executor (PCS 32x32, 1.1 MB: 0.98-1.01x), nor on a pool where
 * its lists are not ordered (a step's records, a thread's share, within a
 * quarter of it); nor after a reset of some of the instances (a vector
 * env's instances ending their episodes one by one: every instance's
 * events would be copied for a few), nor at a reset before
 * SEER_RELAYOUT_BUDGET times the last relayout's time has passed (at most
 * 1% of the run's time).  SEER_RELAYOUT=0 turns it off, =1 moves the serial
 * executor's whatever the sizes, at every reset.  Only where the free
 * records and the pending ones make up every record (nothing else holds
 * one: not the optimistic executor's logs), and the copy fits an eighth of
 * memory_limit.
 */
#include <stddef.h> /* offsetof */
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* sysconf */

#include "base.h"
#include "event.h"
#include "events.h"
#include "runtime.h"
#include "squeue.h"
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

/* A pool's ordering (seer_event_order_pool_when_due_host), begun at t0,
 * for steps that go through `per_step` events: the records a step went
 * through, a thread's share, against a core's L2 -- within a quarter of it
 * they stay cached whatever their order, and a list's own order (the
 * records freed last on top) is the warmest. */
static void order_pool_host(seer_runtime *rt, double per_step, uint64_t t0)
{
    const uint32_t nt = rt->pool.nthreads ? rt->pool.nthreads : 1;
    const double bytes = per_step * (double)rt->event_stride / nt;
    rt->mem.order_events = rt->stats.events;
    rt->mem.pool_steps = 0; /* the next look SEER_ORDER_AFTER_STEPS steps on */
    rt->mem.order_now = 0;
    if (rt->mem.order_pools == 1 && 4.0 * bytes < (double)rt->mem.cache_bytes)
        return;
    if (!rt->mem.relayout || !seer_event_relayout_host(rt))
        seer_event_order_pool_host(rt);
    const uint64_t t1 = seer_clock_ns();
    rt->mem.order_cost_ns = t1 > t0 ? t1 - t0 : 1;
    rt->mem.ordered_ns = t1;
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
    order_pool_host(rt, (double)(rt->stats.events - rt->mem.order_events) /
                            rt->mem.pool_steps, t0);
}

void seer_event_tidy_pool_host(seer_runtime *rt)
{
    if (rt->mem.order_pools)
        order_pool_host(rt, (double)rt->stats.events / (rt->stats.steps ? rt->stats.steps : 1),
                        seer_clock_ns());
    /* and SEER_ORDER_AFTER_STEPS steps on, whatever it takes, as after any
     * switch: a pool's first steps move records between its threads, and
     * this ordering's budget would put the next one off by some 400 times
     * its time (in early runs, parallel-2 on PCS 64x64 after such a switch
     * ran slower for a few hundred steps, within the spread of envs made
     * alike) */
    seer_event_order_pool_soon_host(rt);
}

/* ---- pending events in the order they are handled ------------------------- */

/* The queues a relayout moves and what it needs: each queue's events
 * (evs[.. end[q]]), the home of each one's record, and their copy. */
typedef struct relayout {
    seer_squeue **qs;
    uint64_t *end;
    size_t nq;
    seer_event **evs;
    uint32_t *home;
    uint64_t n;
    uint64_t *counts;
    unsigned char *copy;
} relayout;

static void relayout_free(relayout *r)
{
    free(r->copy);
    free(r->counts);
    free(r->evs);
    free(r->end);
    free(r->home);
    free(r->qs);
}

static void relayout_cb(void *arg, seer_event *ev)
{
    relayout *r = arg;
    r->evs[r->n++] = ev;
}

/* Each queue's events collected, copied out, and room for them in the queue
 * once cleared; nothing moved.  0 without the memory (or where the copy
 * would take more than an eighth of memory_limit, as the optimistic
 * executor's logs), or where the free records and these do not make up
 * every record (another holds some: the optimistic executor's logs, say). */
static int relayout_prepare(seer_runtime *rt, relayout *r, uint64_t total)
{
    const size_t stride = rt->event_stride, hdr = offsetof(seer_event, payload);
    if ((double)total * (double)(stride + sizeof(seer_event *)) > (double)rt->memory_limit / 8.0)
        return 0;
    uint64_t free_n = seer_event_reserved(rt);
    for (uint32_t t = 0; rt->pool.workers && t < rt->pool.nthreads; t++)
        free_n += rt->pool.workers[t].pool.nfree + rt->pool.workers[t].cross.nfree;
    if (free_n + total != rt->mem.pool_events)
        return 0;
    r->evs = malloc((total ? total : 1) * sizeof *r->evs);
    r->home = malloc((total ? total : 1) * sizeof *r->home);
    r->counts = malloc(SEER_SQ_COUNTS * sizeof *r->counts);
    r->copy = malloc((total ? total : 1) * stride);
    if (!r->evs || !r->home || !r->counts || !r->copy)
        return 0;
    for (size_t q = 0; q < r->nq; q++) {
        const uint64_t from = r->n;
        seer_squeue_foreach_owner(r->qs[q], relayout_cb, r);
        r->end[q] = r->n;
        memset(r->counts, 0, SEER_SQ_COUNTS * sizeof *r->counts);
        for (uint64_t k = from; k < r->n; k++)
            r->counts[seer_squeue_bucket_of_cleared(r->evs[k]->time)]++;
        if (r->n - from != r->qs[q]->n || seer_squeue_reserve_owner(r->qs[q], r->counts))
            return 0;
    }
    /* in the queues' order: bucket by bucket, roughly the order they are
     * handled in */
    for (uint64_t k = 0; k < total; k++) {
        memcpy(r->copy + k * stride, r->evs[k], hdr + r->evs[k]->size);
        r->home[k] = seer_event_block_of(rt, r->evs[k])->home;
    }
    return 1;
}

/* The top record of a home's free records (it holds one). */
static seer_event *home_pop(seer_event_home *l)
{
    seer_event *ev = l->free;
    l->free = ev->next_free;
    l->n--;
    return ev;
}

/* Under the lock, prepared (every record free or in r's copy; the queues
 * not yet cleared): the queues cleared; every record dealt from the blocks
 * in address order -- the queues' events first, queue by queue, each into
 * a record of its record's home (`one`: of any home, worker 0's list
 * taking every record), then each worker's pool and cross lists as many as
 * they held, its reserve the rest.  Each home keeps as many pending and
 * free records as it had: where a guess of which thread handles a queue
 * decided the home instead, a home that got more pending events than it
 * had filled its lists with new blocks while the others' records lay idle
 * (PHOLD 2048x4 on 2 loaded cores: 7 blocks grew to 17-18 in 3000 steps,
 * 13-14 without relayouts). */
static int relayout_commit_locked(seer_runtime *rt, relayout *r, int one)
{
    const size_t stride = rt->event_stride, hdr = offsetof(seer_event, payload);
    const uint32_t nh = rt->mem.nhomes, nw = rt->pool.nthreads;
    const size_t nc = rt->mem.nchunks;
    seer_event_home *hl = calloc(nh, sizeof *hl); /* each home's records, in address order */
    seer_event_chunk *by = malloc((nc ? nc : 1) * sizeof *by);
    uint64_t *keep = malloc(2 * (size_t)nw * sizeof *keep);
    if (!hl || !by || !keep) { /* nothing moved: the events stay where they are */
        free(keep);
        free(by);
        free(hl);
        return 0;
    }
    memcpy(by, rt->mem.chunks, nc * sizeof *by);
    qsort(by, nc, sizeof *by, chunk_cmp);
    for (size_t c = nc; c-- > 0;) { /* from the highest block down: the lowest on top */
        seer_event_home *l = &hl[one ? 0 : block_home(&by[c], nh)];
        seer_event_chunk_push(&by[c], stride, &l->free, &l->n);
    }
    for (uint32_t t = 0; t < nw; t++) {
        seer_worker *w = &rt->pool.workers[t];
        keep[2 * t] = one ? (t ? 0 : UINT64_MAX) : w->pool.nfree;
        keep[2 * t + 1] = one ? 0 : w->cross.nfree;
        w->pool = (seer_event_pool){NULL, 0, w->pool.refills, w->pool.refills_seen,
                                    w->pool.target};
        w->cross = (seer_event_pool){NULL, 0, w->cross.refills, w->cross.refills_seen,
                                     w->cross.target};
    }
    for (uint32_t h = 0; h < nh; h++)
        rt->mem.homes[h] = (seer_event_home){NULL, 0};
    uint64_t k = 0;
    for (size_t q = 0; q < r->nq; q++) {
        seer_squeue_clear_owner(r->qs[q]);
        for (; k < r->end[q]; k++) {
            seer_event_home *l = &hl[one || r->home[k] >= nh ? 0 : r->home[k]];
            for (uint32_t h = 0; !l->n; h++) /* (never: each home's count kept) */
                l = &hl[h];
            seer_event *ev = home_pop(l);
            const seer_event *src = (const seer_event *)(const void *)(r->copy + k * stride);
            memcpy(ev, src, hdr + src->size);
            (void)seer_squeue_push_owner(r->qs[q], ev); /* reserved */
        }
    }
    for (uint32_t h = 0; h < nh; h++) {
        if (h < nw) {
            seer_worker *w = &rt->pool.workers[h];
            seer_event_splice(&hl[h].free, &hl[h].n, &w->pool.free, &w->pool.nfree, keep[2 * h]);
            seer_event_splice(&hl[h].free, &hl[h].n, &w->cross.free, &w->cross.nfree,
                              keep[2 * h + 1]);
        }
        seer_event_splice(&hl[h].free, &hl[h].n, &rt->mem.homes[h].free, &rt->mem.homes[h].n,
                          hl[h].n);
    }
    free(keep);
    free(by);
    free(hl);
    return 1;
}

int seer_event_relayout_host(seer_runtime *rt)
{
    if (!rt->pool.workers || rt->mem.nhomes < rt->pool.nthreads)
        return 0;
    const int serial = !seer_uses_parts(rt->executor);
    const uint32_t np = serial ? 1 : rt->part.n, B = rt->B;
    relayout r = {.nq = (size_t)B * np};
    r.qs = malloc((r.nq ? r.nq : 1) * sizeof *r.qs);
    r.end = malloc((r.nq ? r.nq : 1) * sizeof *r.end);
    uint64_t total = 0;
    int ok = r.qs && r.end;
    for (uint32_t i = 0; ok && i < B; i++) {
        seer_inst *in = &rt->inst[i];
        if (!serial && in->queue.n) /* (never: a pool's events are in its partitions) */
            ok = 0;
        for (uint32_t p = 0; ok && p < np; p++) {
            const size_t q = (size_t)i * np + p;
            r.qs[q] = serial ? &in->queue : &in->parts[p];
            total += r.qs[q]->n;
            /* a queue an allocation failed in mid-move stays as it is
             * (its instance needs a reset: clearing would hide that) */
            ok = !r.qs[q]->broken;
        }
    }
    pthread_mutex_lock(&rt->mem.lock);
    ok = ok && relayout_prepare(rt, &r, total) && relayout_commit_locked(rt, &r, serial);
    rt->mem.relayouts += (uint64_t)ok;
    pthread_mutex_unlock(&rt->mem.lock);
    relayout_free(&r);
    return ok;
}

int seer_event_pending_fit_cache_host(const seer_runtime *rt)
{
    uint64_t pending = 0;
    for (uint32_t i = 0; i < rt->B; i++) {
        if (rt->executor == SEER_EXECUTOR_SERIAL)
            pending += rt->inst[i].queue.n;
        else
            for (uint32_t p = 0; p < rt->part.n; p++)
                pending += rt->inst[i].parts[p].n;
    }
    return (double)pending * (double)rt->event_stride < (double)rt->mem.cache_bytes;
}

void seer_event_tidy_serial_host(seer_runtime *rt, uint32_t reset)
{
    const uint64_t t0 = seer_clock_ns();
    /* where the pending records fit a core's L2 their places matter little
     * (PCS 32x32, 1.1 MB against 2 MB: 0.98-1.01x); a reset of some of the
     * instances would copy every instance's events for a few (a vector
     * env's instances ending their episodes one by one); and resets come
     * as often as the user likes: at most 1/SEER_RELAYOUT_BUDGET of the
     * time goes to their relayouts (the first is free) */
    const int due =
        rt->mem.relayout == 2 ||
        (rt->mem.relayout == 1 && !seer_event_pending_fit_cache_host(rt) &&
         (reset == 0 ||
          (reset == rt->B && (!rt->mem.relayout_cost_ns ||
                              t0 - rt->mem.relaid_ns >=
                                  SEER_RELAYOUT_BUDGET * rt->mem.relayout_cost_ns))));
    if (due && seer_event_relayout_host(rt)) {
        const uint64_t t1 = seer_clock_ns();
        rt->mem.relayout_cost_ns = t1 > t0 ? t1 - t0 : 1;
        rt->mem.relaid_ns = t1;
        return;
    }
    if (reset == 0)
        seer_event_order_all_host(rt);
    else
        seer_event_order_host(rt);
}
