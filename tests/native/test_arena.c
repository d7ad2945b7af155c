/*
 * Test of the bump arena (arena.h), as the optimistic executor uses it: T
 * threads, started on a barrier, each own two arenas -- one of fixed-stride
 * records under a byte cap, one of varying sizes allocated past the cap
 * (force) -- and fill them with patterns each round.  At a barrier each
 * arena passes to the next thread (as the completer reads every slot's
 * arena after the phase), which checks: every record, in the order taken
 * (seer_arena_each_owner), 16-aligned and intact (no two allocations
 * overlap); the capped arena's bytes within the cap and refusing past it;
 * and, the rounds repeating the same sequence, no chunk allocated after the
 * first round (a reset keeps and reuses them).  Fails loudly.
 * Built plain and under the sanitizers by run_sanitizers.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arena.h"

#define T 4
#define ROUNDS 200
#define STRIDE 48u    /* a multiple of 16, like a log record's */
#define CHUNK 1024u
#define CAP (6u * CHUNK)
#define NVAR 300

typedef struct owned {
    seer_arena recs, var;
    uint32_t nrecs;           /* records taken this round (the owner's count) */
    uint32_t chunks_after_r0; /* chunks of recs after round 0                 */
    unsigned char *varp[NVAR];
    uint32_t varn[NVAR];
    int refused;              /* the capped arena refused this round          */
} owned;

static owned arenas[T];
static pthread_barrier_t bar;
static _Atomic int failures; /* seq_cst (default order): test-only counter */

#define FAIL(...)                                                                        \
    do {                                                                                 \
        fprintf(stderr, "test_arena: " __VA_ARGS__);                                     \
        fputc('\n', stderr);                                                             \
        atomic_fetch_add(&failures, 1);                                                  \
    } while (0)

static uint32_t count_chunks(const seer_arena *a)
{
    uint32_t n = 0;
    for (const seer_arena_chunk *c = a->first; c; c = c->next)
        n++;
    return n;
}

static unsigned char pat(uint32_t owner, uint32_t round, uint32_t i, uint32_t b)
{
    return (unsigned char)(owner * 131u + round * 31u + i * 7u + b);
}

static void fill(uint32_t me, uint32_t round)
{
    owned *o = &arenas[me];
    seer_arena_reset_owner(&o->recs);
    seer_arena_reset_owner(&o->var);
    o->nrecs = 0;
    o->refused = 0;
    for (;;) {
        unsigned char *r = seer_arena_alloc_owner(&o->recs, STRIDE, CHUNK, CAP, 0);
        if (!r) {
            o->refused = 1;
            break;
        }
        for (uint32_t b = 0; b < STRIDE; b++)
            r[b] = pat(me, round, o->nrecs, b);
        o->nrecs++;
    }
    for (uint32_t i = 0; i < NVAR; i++) {
        const uint32_t n = 16u * (1u + (i * 2654435761u + round) % 80u); /* up to 1280 > CHUNK */
        unsigned char *p = seer_arena_alloc_owner(&o->var, n, CHUNK, 0, 1);
        if (!p) {
            FAIL("thread %u: a forced allocation of %u bytes failed", me, n);
            return;
        }
        for (uint32_t b = 0; b < n; b++)
            p[b] = pat(me, round, i, b);
        o->varp[i] = p;
        o->varn[i] = n;
    }
}

struct walk {
    uint32_t owner, round, next;
};

static void check_rec(void *arg, void *rec)
{
    struct walk *w = arg;
    const unsigned char *r = rec;
    if ((uintptr_t)r % 16 != 0)
        FAIL("record %u of thread %u not 16-aligned", w->next, w->owner);
    for (uint32_t b = 0; b < STRIDE; b++)
        if (r[b] != pat(w->owner, w->round, w->next, b)) {
            FAIL("record %u of thread %u (round %u) overwritten", w->next, w->owner, w->round);
            break;
        }
    w->next++;
}

static void check(uint32_t me, uint32_t round)
{
    const uint32_t of = (me + 1) % T;
    owned *o = &arenas[of];
    struct walk w = {of, round, 0};
    seer_arena_each_owner(&o->recs, STRIDE, check_rec, &w);
    if (w.next != o->nrecs)
        FAIL("thread %u's arena walked %u records of %u", of, w.next, o->nrecs);
    if (!o->refused || o->recs.used > CAP || o->nrecs < (CAP - CHUNK) / STRIDE)
        FAIL("thread %u's capped arena: %zu bytes used of %u, %u records", of, o->recs.used,
             CAP, o->nrecs);
    for (uint32_t i = 0; i < NVAR; i++) {
        if ((uintptr_t)o->varp[i] % 16 != 0)
            FAIL("allocation %u of thread %u not 16-aligned", i, of);
        for (uint32_t b = 0; b < o->varn[i]; b++)
            if (o->varp[i][b] != pat(of, round, i, b)) {
                FAIL("allocation %u of thread %u (round %u) overwritten", i, of, round);
                break;
            }
    }
    const uint32_t nc = count_chunks(&o->recs);
    if (round == 0)
        o->chunks_after_r0 = nc;
    else if (nc != o->chunks_after_r0)
        FAIL("thread %u's arena grew from %u to %u chunks after warm-up", of,
             o->chunks_after_r0, nc);
}

static void *run(void *arg)
{
    const uint32_t me = (uint32_t)(uintptr_t)arg;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&bar); /* own arena me */
        fill(me, round);
        pthread_barrier_wait(&bar); /* hand it to thread me - 1; take me + 1's */
        check(me, round);
    }
    return NULL;
}

int main(void)
{
    pthread_t th[T];
    if (pthread_barrier_init(&bar, NULL, T) != 0)
        return 1;
    for (uint32_t t = 0; t < T; t++)
        if (pthread_create(&th[t], NULL, run, (void *)(uintptr_t)t) != 0) {
            fprintf(stderr, "test_arena: pthread_create failed\n");
            return 1;
        }
    for (uint32_t t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&bar);
    /* an empty arena: nothing to walk, a reset is harmless */
    seer_arena empty = {0};
    seer_arena_reset_owner(&empty);
    struct walk w = {0, 0, 0};
    seer_arena_each_owner(&empty, STRIDE, check_rec, &w);
    if (w.next != 0)
        FAIL("an empty arena walked %u records", w.next);
    for (uint32_t t = 0; t < T; t++) {
        seer_arena_free(&arenas[t].recs);
        seer_arena_free(&arenas[t].var);
        if (arenas[t].recs.first || arenas[t].recs.used)
            FAIL("a freed arena is not empty");
    }
    if (atomic_load(&failures))
        return 1;
    printf("test_arena: %d threads x %d rounds passed\n", T, ROUNDS);
    return 0;
}
