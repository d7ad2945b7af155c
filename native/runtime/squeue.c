/* squeue.c -- the event queue of both executors: one per instance in the
 * serial executor, one per partition in the parallel executor.
 *
 * A radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990) on the bit pattern of
 * the event time, with 4-bit digits, plus a sorted run for the events at the
 * current time.
 *
 * Why not a binary heap: the serial executor holds every pending event of an
 * instance (tens of thousands at PCS 32x32), and a pop's sift-down then walks
 * ~15 levels of an L2-resident array with a hard-to-predict branch at each;
 * it was 60% of the step.  Pops are monotone (every event is scheduled at >=
 * the time being handled), which is what a radix heap needs, and its work is
 * sequential appends and scans.  PCS 32x32 with load reports: 0.89 -> 0.31 ms
 * per step.
 *
 * Order: for non-negative doubles (every event time: the runtime refuses
 * NaN, infinities and times before `now`, and `now >= 0`), the IEEE-754 bit
 * pattern read as an unsigned integer orders like the value, so the queue
 * works on those bits.  `last` is the bit pattern of the time of the events
 * being popped; every pending event has bits >= last.  An event with bits ==
 * last is in the current group (below); otherwise, with L the 4-bit digit
 * (level) holding the highest bit in which it differs from last and d its
 * own digit there (d > last's digit, as it is larger), it is in bucket
 * (L, d).  Buckets order like their contents: by level, then digit.  Popping
 * from an empty current group takes the lowest non-empty bucket, reads its
 * minimum m (kept beside the bucket on every append, so no scan is needed),
 * makes m the new last and redistributes that bucket: every entry agrees
 * with m on every digit from L up, so it lands in a lower level or in the
 * current group.  An event thus moves at most 16 times, in practice once or
 * twice, each move a sequential read and append.
 *
 * Ties: events with equal time pop in key order (the key is unique).  The
 * current group is a run sorted by key, read from `head`, plus a small heap
 * for events that arrive at the current time with a key below the run's
 * tail.  A run that a redistribution produces is usually sorted already
 * (groups of equal-time events -- load reports, substeps -- are scheduled in
 * key order); otherwise it is a few ascending stretches (e.g. events merged
 * from other partitions), which a natural merge sort orders.
 *
 * Since keys are unique, the pop sequence is the (time, key) order: the
 * same as any other correct priority queue's.
 *
 * Below the current group: only the optimistic executor (optimistic.c)
 * pushes an event earlier than `last` -- a rollback puts handled events back,
 * and a straggler arrives in a partition that has run ahead.  Such entries
 * go to the early heap, a binary heap on (time bits, key): every one of them
 * is earlier than anything in the radix heap, so a pop takes the early
 * heap's top while it has one, and the radix heap is left as it was (its
 * invariant, bits >= last, holds for what it holds).  The other executors
 * never fill it: their cost is one predictable test per push and pop.
 * seer_squeue_filter_owner drops entries in place (cancelled events at a
 * step's end, a speculation abandoned), without allocating.
 *
 * Memory: vectors grow geometrically and never shrink, so after warm-up the
 * queue does not allocate.
 *
 * Threads: single owner, no synchronization (hence the _owner suffix of
 * every operation; base.h).  The owner is the thread that holds the
 * queue: the host for the serial executor's queues and for every queue
 * between calls (partition.c moves events between queues); during a
 * parallel call, the worker that claimed the partition for the phase.  The
 * event loop pops (loop.c), seer_schedule pushes (ctx.c), the parallel
 * executor merges outboxes in (pool.c).
 */
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "event.h"
#include "squeue.h"
#include "vec.h"

static inline seer_time bits_time(uint64_t u)
{
    seer_time t;
    memcpy(&t, &u, sizeof t);
    return t;
}

/* The slow path of every push: kept out of line, as it was before vec.h
 * (inlined, the growth code bloats the pops and pushes that call it: about
 * 1% more instructions per event on PCS, measured with callgrind). */
__attribute__((noinline)) int seer_qvec_reserve_owner(seer_qvec *v, uint64_t cap)
{
    return SEER_VEC_GROW_OWNER(v->a, v->cap, cap);
}

/* ---- binary heaps on (time bits, key) -------------------------------------
 *
 * Two queues use them: the side heap (events of the current group that
 * arrived out of key order: all have the group's time bits, so the order is
 * the key's) and the early heap (entries below `last`, see above). */

static inline int entry_less(seer_qentry a, seer_qentry b)
{
    return a.tb < b.tb || (a.tb == b.tb && a.ev->key < b.ev->key);
}

static int heap_push(seer_qvec *h, seer_qentry e)
{
    if (__builtin_expect(h->n == h->cap, 0) &&
        seer_qvec_reserve_owner(h, (uint64_t)h->n + 1) != SEER_OK)
        return SEER_E_NOMEM;
    uint32_t i = h->n++;
    seer_qentry *a = h->a;
    while (i > 0) {
        uint32_t p = (i - 1) >> 1;
        if (entry_less(a[p], e))
            break;
        a[i] = a[p];
        i = p;
    }
    a[i] = e;
    return SEER_OK;
}

static void sift_down_min(seer_qentry *a, uint32_t n, uint32_t i)
{
    seer_qentry x = a[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && entry_less(a[c + 1], a[c]))
            c++;
        if (entry_less(x, a[c]))
            break;
        a[i] = a[c];
        i = c;
    }
    a[i] = x;
}

static seer_qentry heap_pop(seer_qvec *h)
{
    seer_qentry top = h->a[0];
    if (--h->n) {
        h->a[0] = h->a[h->n];
        sift_down_min(h->a, h->n, 0);
    }
    return top;
}

/* In-place heapsort (the run's entries share their time bits: by key),
 * ascending: run_sort's fallback.  The min-heap moves each minimum to the
 * end (a descending array), then the array is reversed. */
static void heap_sort(seer_qentry *a, uint32_t n)
{
    for (uint32_t i = n / 2; i-- > 0;)
        sift_down_min(a, n, i);
    for (uint32_t m = n; m > 1;) {
        seer_qentry t = a[0];
        a[0] = a[--m];
        a[m] = t;
        sift_down_min(a, m, 0);
    }
    for (uint32_t i = 0, j = n ? n - 1 : 0; i < j; i++, j--) {
        seer_qentry t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Sort the current group's run by key.  A run comes out of a
 * redistribution unsorted when equal-time events were scheduled by several
 * streams (in the parallel executor: events merged from other partitions
 * after the partition's own); it is then a few ascending stretches, so a
 * natural merge sort takes O(n log stretches).  The scratch vector grows like
 * the others (warm-up only); if it cannot, heapsort in place.  Stretches
 * are non-descending: the optimistic executor may hold a cancelled event and
 * its re-sent replacement, with one key (the order between them does not
 * matter: the cancelled one is dropped when popped), and a strict test would
 * never see one stretch. */
static void run_sort(seer_squeue *q)
{
    seer_qvec *r = &q->run;
    const uint32_t n = r->n;
    if (seer_qvec_reserve_owner(&q->scratch, n) != SEER_OK) {
        heap_sort(r->a, n);
        return;
    }
    for (;;) {
        const seer_qentry *a = r->a;
        seer_qentry *o = q->scratch.a;
        uint32_t i = 0, runs = 0;
        while (i < n) {
            uint32_t m = i + 1;
            while (m < n && a[m - 1].ev->key <= a[m].ev->key)
                m++;
            uint32_t j = m;
            if (m < n) {
                j = m + 1;
                while (j < n && a[j - 1].ev->key <= a[j].ev->key)
                    j++;
            }
            /* merge [i, m) and [m, j) into o[i, j) */
            uint32_t x = i, y = m, w = i;
            while (x < m && y < j)
                o[w++] = a[y].ev->key < a[x].ev->key ? a[y++] : a[x++];
            while (x < m)
                o[w++] = a[x++];
            while (y < j)
                o[w++] = a[y++];
            i = j;
            runs++;
        }
        seer_qvec t = *r;
        r->a = q->scratch.a;
        r->cap = q->scratch.cap;
        q->scratch.a = t.a;
        q->scratch.cap = t.cap;
        if (runs == 1)
            return;
    }
}

/* ---- queue ---------------------------------------------------------------- */

#define DIGIT_MASK ((1u << SEER_SQ_DIGIT) - 1)

/* -1 for the current group, else (level, digit) as level << DIGIT | digit:
 * the level holds the highest bit in which bits and last differ, the digit
 * is bits' digit at that level (greater than last's, as bits > last). */
static inline int bucket_of(uint64_t bits, uint64_t last)
{
    if (bits == last)
        return -1;
    int level = (63 - __builtin_clzll(bits ^ last)) / SEER_SQ_DIGIT;
    int digit = (int)(bits >> (level * SEER_SQ_DIGIT)) & DIGIT_MASK;
    return level * (1 << SEER_SQ_DIGIT) + digit;
}

static inline void mark(seer_squeue *q, int b)
{
    q->nonempty[b >> 6] |= (uint64_t)1 << (b & 63);
}

static inline void unmark(seer_squeue *q, int b)
{
    q->nonempty[b >> 6] &= ~((uint64_t)1 << (b & 63));
}

/* The lowest non-empty bucket, or -1. */
static inline int first_bucket(const seer_squeue *q)
{
    for (int w = 0; w < SEER_SQ_WORDS; w++)
        if (q->nonempty[w])
            return w * 64 + __builtin_ctzll(q->nonempty[w]);
    return -1;
}

/* Keep bucket b's minimum (and its event, the prefetch candidate). */
static inline void bucket_note_min(seer_squeue *q, int b, seer_qentry e)
{
    const int lt = e.tb < q->bucket[b].min;
    q->bucket[b].min = lt ? e.tb : q->bucket[b].min;
    q->bucket[b].minev = lt ? e.ev : q->bucket[b].minev;
}

int seer_squeue_push_entry_owner(seer_squeue *q, seer_qentry e)
{
    int rc;
    if (__builtin_expect(e.tb < q->last, 0)) { /* optimistic executor only */
        rc = heap_push(&q->early, e);
        q->n += (rc == SEER_OK);
        return rc;
    }
    int b = bucket_of(e.tb, q->last);
    if (b >= 0) {
        rc = seer_qvec_append_owner(&q->bucket[b].v, e);
        if (rc == SEER_OK) { /* a failed append leaves the bucket as it was */
            mark(q, b);
            bucket_note_min(q, b, e);
        }
    } else if (q->head == q->run.n) {
        q->run.n = q->head = 0;
        rc = seer_qvec_append_owner(&q->run, e);
    } else if (e.ev->key > q->run.a[q->run.n - 1].ev->key) {
        rc = seer_qvec_append_owner(&q->run, e);
    } else {
        rc = heap_push(&q->side, e);
    }
    q->n += (rc == SEER_OK);
    return rc;
}

int seer_squeue_push_owner(seer_squeue *q, seer_event *ev)
{
    /* ev->time >= the time being handled >= bits_time(q->last) (the runtime
     * refuses past times before an event reaches a queue), except for the
     * optimistic executor's early events (above). */
    seer_qentry e = {seer_time_bits(ev->time), ev};
    return seer_squeue_push_entry_owner(q, e);
}

/* Make the lowest non-empty bucket's minimum the current time, if that is
 * before `bnd`.  Returns 1 when the current group is now non-empty, 0 when
 * nothing is before `bnd`, or -1 when a vector could
 * not grow: the entries not yet moved then stay in bucket b and the queue is
 * marked broken (every event is still held, for reset to free, but the
 * order is lost, so pops fail until a clear). */
static int open_next_group(seer_squeue *q, seer_time bnd)
{
    const int b = first_bucket(q);
    if (b < 0)
        return 0;
    seer_qvec *v = &q->bucket[b].v;
    const uint64_t m = q->bucket[b].min;
    if (!(bits_time(m) < bnd))
        return 0;
    q->last = m;
    q->run.n = q->head = 0;
    unmark(q, b);
    q->bucket[b].min = UINT64_MAX;
    int sorted = 1;
    uint64_t prev_key = 0;
    for (uint32_t k = 0; k < v->n; k++) {
        seer_qentry e = v->a[k];
        /* The entries of the lowest bucket are the next to be handled:
         * start loading their records now (a small bucket: one group of
         * equal times streams in order anyway). */
        if (v->n <= 16)
            __builtin_prefetch(e.ev);
        seer_qvec *t;
        if (e.tb == m) {
            t = &q->run;
            const uint64_t key = e.ev->key; /* the record is handled next anyway */
            sorted &= !(t->n && key < prev_key);
            prev_key = key;
        } else {
            /* a lower level: e and m agree on every digit from b's level up */
            int nb = bucket_of(e.tb, m);
            t = &q->bucket[nb].v;
            mark(q, nb);
            bucket_note_min(q, nb, e);
        }
        if (__builtin_expect(seer_qvec_append_owner(t, e) != SEER_OK, 0)) {
            memmove(v->a, v->a + k, (size_t)(v->n - k) * sizeof *v->a);
            v->n -= k;
            mark(q, b);
            q->bucket[b].min = m; /* unused: pops fail until a clear */
            q->broken = 1;
            return -1;
        }
    }
    v->n = 0;
    if (!sorted)
        run_sort(q);
    return 1;
}

seer_event *seer_squeue_pop_before_owner(seer_squeue *q, seer_time bnd, int *err)
{
    seer_qvec *run = &q->run;
    if (__builtin_expect(q->broken, 0)) {
        *err = SEER_E_NOMEM;
        return NULL;
    }
    if (__builtin_expect(q->early.n != 0, 0)) { /* earlier than anything else */
        if (!(bits_time(q->early.a[0].tb) < bnd))
            return NULL;
        seer_qentry e = heap_pop(&q->early);
        if (q->early.n)
            __builtin_prefetch(q->early.a[0].ev);
        q->n--;
        return e.ev;
    }
    if (q->head == run->n && q->side.n == 0) {
        int rc = open_next_group(q, bnd);
        if (rc <= 0) {
            if (rc < 0)
                *err = SEER_E_NOMEM;
            return NULL;
        }
    } else if (!(bits_time(q->last) < bnd)) {
        return NULL;
    }
    seer_qentry e;
    if (q->side.n == 0 ||
        (q->head < run->n && run->a[q->head].ev->key < q->side.a[0].ev->key))
        e = run->a[q->head++];
    else
        e = heap_pop(&q->side);
    /* The next event's record is cold (the queue is far larger than the
     * caches): start loading it while this one is handled.  The next event
     * is the one at the run's head, or the side heap's top, or the lowest
     * bucket's minimum, unless the handler schedules an earlier one. */
    if (q->head < run->n)
        __builtin_prefetch(run->a[q->head].ev);
    else if (q->side.n)
        __builtin_prefetch(q->side.a[0].ev);
    else if (first_bucket(q) >= 0)
        __builtin_prefetch(q->bucket[first_bucket(q)].minev);
    q->n--;
    return e.ev;
}

seer_time seer_squeue_min_time_owner(const seer_squeue *q)
{
    if (q->early.n)
        return bits_time(q->early.a[0].tb);
    if (q->head < q->run.n || q->side.n)
        return bits_time(q->last);
    int b = first_bucket(q);
    return b < 0 ? __builtin_inf() : bits_time(q->bucket[b].min);
}

int seer_squeue_bucket_of_owner(const seer_squeue *q, seer_time t)
{
    const uint64_t tb = seer_time_bits(t);
    if (tb < q->last)
        return SEER_SQ_BUCKETS + 1;
    return bucket_of(tb, q->last) + 1;
}

int seer_squeue_bucket_of_cleared(seer_time t)
{
    return bucket_of(seer_time_bits(t), 0) + 1;
}

int seer_squeue_reserve_owner(seer_squeue *q, const uint64_t counts[SEER_SQ_COUNTS])
{
    if (seer_qvec_reserve_owner(&q->run, (uint64_t)q->run.n + counts[0]) != SEER_OK ||
        seer_qvec_reserve_owner(&q->side, (uint64_t)q->side.n + counts[0]) != SEER_OK ||
        seer_qvec_reserve_owner(&q->early,
                                (uint64_t)q->early.n + counts[SEER_SQ_BUCKETS + 1]) != SEER_OK)
        return SEER_E_NOMEM;
    for (int b = 0; b < SEER_SQ_BUCKETS; b++)
        if (seer_qvec_reserve_owner(&q->bucket[b].v,
                                    (uint64_t)q->bucket[b].v.n + counts[b + 1]) != SEER_OK)
            return SEER_E_NOMEM;
    return SEER_OK;
}

void seer_squeue_foreach_owner(const seer_squeue *q, void (*fn)(void *arg, seer_event *ev),
                               void *arg)
{
    for (uint32_t k = q->head; k < q->run.n; k++)
        fn(arg, q->run.a[k].ev);
    for (uint32_t k = 0; k < q->side.n; k++)
        fn(arg, q->side.a[k].ev);
    for (uint32_t k = 0; k < q->early.n; k++)
        fn(arg, q->early.a[k].ev);
    for (int b = 0; b < SEER_SQ_BUCKETS; b++)
        for (uint32_t k = 0; k < q->bucket[b].v.n; k++)
            fn(arg, q->bucket[b].v.a[k].ev);
}

/* Keep the entries of a[from, n) that `keep` accepts, in order; returns the
 * new length. */
static uint32_t filter_vec(seer_qentry *a, uint32_t from, uint32_t n,
                           int (*keep)(void *arg, seer_event *ev), void *arg)
{
    uint32_t w = from;
    for (uint32_t k = from; k < n; k++)
        if (keep(arg, a[k].ev))
            a[w++] = a[k];
    return w;
}

void seer_squeue_filter_owner(seer_squeue *q, int (*keep)(void *arg, seer_event *ev),
                              void *arg)
{
    /* the run stays sorted, the heaps are rebuilt, the buckets keep their
     * places (their entries still differ from `last` where they did) and
     * get their minima recomputed */
    q->run.n = filter_vec(q->run.a, q->head, q->run.n, keep, arg);
    uint64_t n = q->run.n - q->head;
    q->side.n = filter_vec(q->side.a, 0, q->side.n, keep, arg);
    for (uint32_t i = q->side.n / 2; i-- > 0;)
        sift_down_min(q->side.a, q->side.n, i);
    q->early.n = filter_vec(q->early.a, 0, q->early.n, keep, arg);
    for (uint32_t i = q->early.n / 2; i-- > 0;)
        sift_down_min(q->early.a, q->early.n, i);
    n += q->side.n + q->early.n;
    for (int b = 0; b < SEER_SQ_BUCKETS; b++) {
        seer_qbucket *bk = &q->bucket[b];
        if (!bk->v.n)
            continue;
        bk->v.n = filter_vec(bk->v.a, 0, bk->v.n, keep, arg);
        bk->min = UINT64_MAX;
        bk->minev = NULL;
        for (uint32_t k = 0; k < bk->v.n; k++)
            bucket_note_min(q, b, bk->v.a[k]);
        if (!bk->v.n && !q->broken)
            unmark(q, b);
        n += bk->v.n;
    }
    q->n = n;
}

void seer_squeue_clear_owner(seer_squeue *q)
{
    q->run.n = q->head = 0;
    q->side.n = 0;
    q->early.n = 0;
    for (int b = 0; b < SEER_SQ_BUCKETS; b++) {
        q->bucket[b].v.n = 0;
        q->bucket[b].min = UINT64_MAX;
    }
    memset(q->nonempty, 0, sizeof q->nonempty);
    q->n = 0;
    q->broken = 0;
    q->last = 0; /* time 0.0: every time is >= it */
}

void seer_squeue_init(seer_squeue *q)
{
    memset(q, 0, sizeof *q);
    seer_squeue_clear_owner(q);
}

void seer_squeue_free(seer_squeue *q)
{
    free(q->run.a);
    free(q->side.a);
    free(q->scratch.a);
    free(q->early.a);
    for (int b = 0; b < SEER_SQ_BUCKETS; b++)
        free(q->bucket[b].v.a);
    seer_squeue_init(q);
}
