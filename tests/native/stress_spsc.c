/*
 * Stress test of the single-producer single-consumer ring (spsc_ring.h):
 * PAIRS producer/consumer pairs, started together on a barrier, pass N
 * messages each through a small ring (so it is full and empty often) whose
 * free-running indices start just below the uint32_t wrap.  Each message
 * points to a block the producer wrote just before publishing it: the
 * consumer must see every message once, in order, with its block's contents
 * (release/acquire publication), and frees the block.  Then, quiescent, a
 * partly filled ring is drained: every element once, oldest first.
 * Built plain and under the sanitizers by run_sanitizers.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spsc_ring.h"

#define PAIRS 2
#define N 200000u
#define CAP 8u

typedef struct msg {
    uint64_t seq;
    uint64_t *block; /* [2]: seq, ~seq */
} msg;

typedef struct pair {
    seer_spsc ring;
    msg buf[CAP];
    int id;
    uint64_t full, empty; /* refusals seen (each side's own counter) */
    int bad;              /* consumer only */
} pair;

static pair pairs[PAIRS];
static pthread_barrier_t start;

static void *producer(void *arg)
{
    pair *p = arg;
    pthread_barrier_wait(&start);
    for (uint64_t s = 0; s < N; s++) {
        uint64_t *b = malloc(2 * sizeof *b);
        if (!b)
            abort();
        b[0] = s;
        b[1] = ~s;
        uint32_t pos;
        while (!seer_spsc_reserve_producer(&p->ring, &pos)) {
            p->full++;
            sched_yield();
        }
        p->buf[pos & p->ring.mask] = (msg){s, b};
        seer_spsc_publish_producer(&p->ring, pos);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    pair *p = arg;
    pthread_barrier_wait(&start);
    for (uint64_t want = 0; want < N;) {
        if (!seer_spsc_ready_consumer(&p->ring)) {
            p->empty++;
            sched_yield();
            continue;
        }
        const uint32_t h = seer_spsc_front_consumer(&p->ring);
        const msg m = p->buf[h & p->ring.mask];
        seer_spsc_release_consumer(&p->ring, h);
        if (m.seq != want || m.block[0] != want || m.block[1] != ~want) {
            fprintf(stderr, "stress_spsc: pair %d: got message %llu (block %llu) for %llu\n",
                    p->id, (unsigned long long)m.seq, (unsigned long long)m.block[0],
                    (unsigned long long)want);
            p->bad = 1;
        }
        free(m.block);
        want++;
    }
    return NULL;
}

static uint64_t drained[CAP];
static uint32_t ndrained;

static void drain_cb(void *arg, void *elem)
{
    (void)arg;
    drained[ndrained++] = ((const msg *)elem)->seq;
}

int main(void)
{
    pthread_t th[2 * PAIRS];
    if (pthread_barrier_init(&start, NULL, 2 * PAIRS) != 0)
        return 1;
    for (int i = 0; i < PAIRS; i++) {
        pair *p = &pairs[i];
        p->id = i;
        seer_spsc_init(&p->ring, p->buf, CAP);
        /* indices just below the wrap: the test crosses it */
        atomic_init(&p->ring.tail, UINT32_MAX - 1000u);
        atomic_init(&p->ring.head, UINT32_MAX - 1000u);
        p->ring.head_seen = p->ring.tail_seen = UINT32_MAX - 1000u;
    }
    for (int i = 0; i < PAIRS; i++) {
        if (pthread_create(&th[2 * i], NULL, producer, &pairs[i]) != 0 ||
            pthread_create(&th[2 * i + 1], NULL, consumer, &pairs[i]) != 0) {
            fprintf(stderr, "stress_spsc: pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < 2 * PAIRS; i++)
        pthread_join(th[i], NULL);
    int bad = 0;
    for (int i = 0; i < PAIRS; i++) {
        pair *p = &pairs[i];
        bad |= p->bad;
        if (seer_spsc_ready_consumer(&p->ring)) {
            fprintf(stderr, "stress_spsc: pair %d: ring not empty at the end\n", i);
            bad = 1;
        }
    }
    /* quiescent drain of a partly filled ring: 5 in, 2 out, 3 drained */
    pair *p = &pairs[0];
    for (uint64_t s = 0; s < 5; s++) {
        uint32_t pos;
        if (!seer_spsc_reserve_producer(&p->ring, &pos)) {
            fprintf(stderr, "stress_spsc: an empty ring refused a push\n");
            return 1;
        }
        p->buf[pos & p->ring.mask] = (msg){100 + s, NULL};
        seer_spsc_publish_producer(&p->ring, pos);
    }
    for (int k = 0; k < 2; k++)
        seer_spsc_release_consumer(&p->ring, seer_spsc_front_consumer(&p->ring));
    seer_spsc_drain_quiescent(&p->ring, drain_cb, sizeof(msg), NULL);
    if (ndrained != 3 || drained[0] != 102 || drained[1] != 103 || drained[2] != 104 ||
        seer_spsc_ready_consumer(&p->ring)) {
        fprintf(stderr, "stress_spsc: drain saw %u elements\n", ndrained);
        bad = 1;
    }
    /* a full ring refuses */
    for (uint32_t k = 0; k < CAP; k++) {
        uint32_t pos;
        if (!seer_spsc_reserve_producer(&p->ring, &pos))
            return fprintf(stderr, "stress_spsc: refused below capacity\n"), 1;
        seer_spsc_publish_producer(&p->ring, pos);
    }
    uint32_t pos;
    if (seer_spsc_reserve_producer(&p->ring, &pos)) {
        fprintf(stderr, "stress_spsc: a full ring took one more\n");
        bad = 1;
    }
    pthread_barrier_destroy(&start);
    if (bad)
        return 1;
    printf("stress_spsc: %d pairs x %u messages passed (%llu full, %llu empty waits)\n",
           PAIRS, N, (unsigned long long)(pairs[0].full + pairs[1].full),
           (unsigned long long)(pairs[0].empty + pairs[1].empty));
    return 0;
}
