/*
 * Test of the growable arrays (vec.h): T threads, started on a barrier, each
 * own vectors that they grow to random sizes (appending, and reserving
 * ahead), then pass to the next thread at a barrier (ownership moves only at
 * such points, as at the runtime's phase transitions), which checks and
 * keeps growing them.  Invariants: the contents survive every growth; the
 * capacity is 64 doubled (or UINT32_MAX) and at least what was asked;
 * asking for no more than the capacity neither moves nor grows the array;
 * asking past UINT32_MAX fails and changes nothing.  Fails loudly.
 * Built plain and under the sanitizers by run_sanitizers.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "vec.h"

#define T 4
#define ROUNDS 100
#define MAXLEN 20000u

typedef struct vec {
    uint64_t *a;
    uint32_t n, cap;
    uint32_t tag; /* element i holds tag << 32 | i */
} vec;

static vec vecs[T];
static pthread_barrier_t bar;
static _Atomic int failures; /* seq_cst (default order): test-only counter */

#define FAIL(...)                                                                        \
    do {                                                                                 \
        fprintf(stderr, "test_vec: " __VA_ARGS__);                                       \
        fputc('\n', stderr);                                                             \
        atomic_fetch_add(&failures, 1);                                                  \
    } while (0)

static uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cap_ok(uint32_t cap)
{
    if (cap == UINT32_MAX)
        return 1;
    return cap >= 64 && cap % 64 == 0 && ((cap / 64) & (cap / 64 - 1)) == 0;
}

static void check(vec *v, uint32_t who)
{
    if (v->n > v->cap || (v->cap && !cap_ok(v->cap)))
        FAIL("thread %u: vector of %u in capacity %u", who, v->n, v->cap);
    for (uint32_t i = 0; i < v->n; i++)
        if (v->a[i] != ((uint64_t)v->tag << 32 | i)) {
            FAIL("thread %u: element %u of %u lost", who, i, v->n);
            return;
        }
}

static void work(vec *v, uint32_t who, uint64_t *rng)
{
    const uint32_t len = (uint32_t)(rnd(rng) % MAXLEN);
    if (rnd(rng) & 1) { /* reserve ahead, then fill without growing */
        if (SEER_VEC_GROW_OWNER(v->a, v->cap, len) != SEER_OK) {
            FAIL("thread %u: reserving %u failed", who, len);
            return;
        }
        uint64_t *at = v->a;
        const uint32_t cap = v->cap;
        if (cap < len)
            FAIL("thread %u: reserved %u, capacity %u", who, len, cap);
        for (uint32_t i = v->n; i < len; i++) {
            if (SEER_VEC_GROW_OWNER(v->a, v->cap, (uint64_t)i + 1) != SEER_OK ||
                v->a != at || v->cap != cap) {
                FAIL("thread %u: growing within the capacity moved the array", who);
                return;
            }
            v->a[i] = (uint64_t)v->tag << 32 | i;
        }
        if (len > v->n)
            v->n = len;
    } else { /* append one at a time */
        for (uint32_t i = v->n; i < len; i++) {
            if (SEER_VEC_GROW_OWNER(v->a, v->cap, (uint64_t)v->n + 1) != SEER_OK) {
                FAIL("thread %u: appending failed at %u", who, i);
                return;
            }
            v->a[v->n++] = (uint64_t)v->tag << 32 | i;
        }
    }
    uint64_t *at = v->a;
    const uint32_t cap = v->cap;
    if (SEER_VEC_GROW_OWNER(v->a, v->cap, (uint64_t)UINT32_MAX + 1) != SEER_E_NOMEM ||
        v->a != at || v->cap != cap)
        FAIL("thread %u: asking past UINT32_MAX did not fail cleanly", who);
    check(v, who);
}

static void *run(void *arg)
{
    const uint32_t me = (uint32_t)(uintptr_t)arg;
    uint64_t rng = 0x1234567ull * (me + 1);
    for (uint32_t round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&bar); /* own vector (me + round) % T */
        vec *v = &vecs[(me + round) % T];
        check(v, me);
        work(v, me, &rng);
    }
    return NULL;
}

int main(void)
{
    pthread_t th[T];
    if (pthread_barrier_init(&bar, NULL, T) != 0)
        return 1;
    for (uint32_t t = 0; t < T; t++)
        vecs[t].tag = 1000 + t;
    for (uint32_t t = 0; t < T; t++)
        if (pthread_create(&th[t], NULL, run, (void *)(uintptr_t)t) != 0) {
            fprintf(stderr, "test_vec: pthread_create failed\n");
            return 1;
        }
    for (uint32_t t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&bar);
    for (uint32_t t = 0; t < T; t++) {
        check(&vecs[t], t);
        free(vecs[t].a);
    }
    /* an empty vector: asking for nothing allocates nothing */
    vec e = {0};
    if (SEER_VEC_GROW_OWNER(e.a, e.cap, 0) != SEER_OK || e.a || e.cap)
        FAIL("asking an empty vector for nothing allocated");
    if (SEER_VEC_GROW_OWNER(e.a, e.cap, 1) != SEER_OK || !e.a || e.cap != 64)
        FAIL("a first growth gave capacity %u", e.cap);
    free(e.a);
    if (atomic_load(&failures))
        return 1;
    printf("test_vec: %d threads x %d rounds passed\n", T, ROUNDS);
    return 0;
}
