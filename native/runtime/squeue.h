/*
 * squeue.h -- the event queue (squeue.c): a radix heap on the time's bit
 * pattern, with its growable entry vectors (private).
 */
#ifndef SEER_SQUEUE_H
#define SEER_SQUEUE_H

#include <stdalign.h>
#include <stdint.h>

#include "base.h"
#include "event.h"
#include "sync.h" /* SEER_CACHE_LINE */

/* The event queue (squeue.c): a radix heap on the time's bit pattern.  One
 * per instance in the serial executor, one per partition in the parallel
 * one.  Single owner: every operation on a live queue is _owner. */
/* 16 bytes: the key, needed only to order equal times, is read from the
 * event (whose record the handler loads anyway). */
typedef struct seer_qentry {
    uint64_t tb;  /* bit pattern of the (non-negative) event time */
    seer_event *ev;
} seer_qentry;

/* A growable vector of entries: a queue's buckets and run, and the
 * parallel executor's outboxes.  Single owner. */
typedef struct seer_qvec {
    seer_qentry *a;
    uint32_t n;
    uint32_t cap;
} seer_qvec;

#ifndef SEER_SQ_DIGIT
#define SEER_SQ_DIGIT 4 /* bits per radix digit: 16 levels of 16 buckets */
#endif
_Static_assert(64 % SEER_SQ_DIGIT == 0, "the digits must tile the 64 time bits");
#define SEER_SQ_BUCKETS ((64 / SEER_SQ_DIGIT) << SEER_SQ_DIGIT)
#define SEER_SQ_WORDS ((SEER_SQ_BUCKETS + 63) / 64)
/* Per-queue counts of seer_squeue_reserve_owner: the current group, each
 * bucket, and the early heap (seer_squeue_bucket_of_owner). */
#define SEER_SQ_COUNTS (SEER_SQ_BUCKETS + 2)

/* A bucket with its minimum kept beside it: a push touches one line. */
typedef struct seer_qbucket {
    seer_qvec v;
    uint64_t min;       /* smallest time bits held (UINT64_MAX when empty) */
    seer_event *minev;  /* the event with them (a prefetch hint)           */
} seer_qbucket;

typedef struct seer_squeue {
    /* time bits of the current group; all pending >= it but those in
     * `early` */
    alignas(SEER_CACHE_LINE) uint64_t last;
    uint64_t nonempty[SEER_SQ_WORDS]; /* bit b: bucket[b] holds entries       */
    uint64_t n;           /* entries held                                      */
    uint32_t head;        /* read position in run                              */
    int broken;           /* an allocation failed mid-move: pops fail          */
    seer_qvec run;        /* current group, sorted by key                      */
    seer_qvec side;       /* current group, arrived out of order: heap on key  */
    seer_qvec scratch;    /* merge buffer of the run's sort                    */
    seer_qvec early;      /* entries below `last` (the optimistic executor's
                             rollbacks put events back): heap on (time, key)  */
    seer_qbucket bucket[SEER_SQ_BUCKETS]; /* see squeue.c                      */
} seer_squeue;

/* ---- squeue.c: the event queue (all _owner but init/free) ------------------ */

/* A zeroed seer_squeue is not ready: call seer_squeue_init first. */
void seer_squeue_init(seer_squeue *q);
void seer_squeue_free(seer_squeue *q); /* frees its vectors (not the events) */

int seer_squeue_push_owner(seer_squeue *q, seer_event *ev);
int seer_squeue_push_entry_owner(seer_squeue *q, seer_qentry e);
/* Earliest queued time, +inf when empty. */
seer_time seer_squeue_min_time_owner(const seer_squeue *q);
static inline seer_qentry seer_qentry_of(const seer_event *ev)
{
    return (seer_qentry){seer_time_bits(ev->time), (seer_event *)ev};
}
/* Grow v to hold at least cap entries (slow path of seer_qvec_append_owner). */
int seer_qvec_reserve_owner(seer_qvec *v, uint64_t cap);
static inline int seer_qvec_append_owner(seer_qvec *v, seer_qentry e)
{
    if (__builtin_expect(v->n == v->cap, 0) &&
        seer_qvec_reserve_owner(v, (uint64_t)v->n + 1) != 0)
        return SEER_E_NOMEM;
    v->a[v->n++] = e;
    return SEER_OK;
}
/* The next event in (time, key) order if its time is < bnd, else NULL (and
 * *err set when the queue failed). */
seer_event *seer_squeue_pop_before_owner(seer_squeue *q, seer_time bnd, int *err);
/* 0 for the current group, 1 + b for bucket b, SEER_SQ_BUCKETS + 1 for the
 * early heap (a time below the current group's): what
 * seer_squeue_reserve_owner's counts index (SEER_SQ_COUNTS of them). */
int seer_squeue_bucket_of_owner(const seer_squeue *q, seer_time t);
/* What seer_squeue_bucket_of_owner gives for t once the queue is cleared
 * (seer_squeue_clear_owner: every time is at or after its group).  Pure. */
int seer_squeue_bucket_of_cleared(seer_time t);
/* Make room for counts[k] more entries in each bucket: pushes that follow
 * (as counted) cannot fail. */
int seer_squeue_reserve_owner(seer_squeue *q, const uint64_t counts[SEER_SQ_COUNTS]);
/* Drop, in place, every entry whose event `keep` rejects (keep may free it:
 * the queue no longer holds it).  Allocates nothing, cannot fail; the pop
 * order of the entries kept does not change. */
void seer_squeue_filter_owner(seer_squeue *q, int (*keep)(void *arg, seer_event *ev),
                              void *arg);
void seer_squeue_foreach_owner(const seer_squeue *q, void (*fn)(void *arg, seer_event *ev),
                               void *arg);
void seer_squeue_clear_owner(seer_squeue *q); /* drops the entries (not the events) */

#endif /* SEER_SQUEUE_H */
