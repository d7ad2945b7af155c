/*
 * Stress test of seer_inbox (multi-producer push, single-consumer drain).
 * P producers push M nodes each, spread over K inboxes, while one consumer
 * per inbox drains concurrently.  After the barrier every node must have been
 * received exactly once, by the consumer of the inbox it was pushed to.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../src/sync.h"

#define P 6
#define K 3
#define M 200000

typedef struct node {
    seer_inbox_node link;
    uint32_t producer;
    uint32_t seq;
    uint32_t inbox;
} node;

static seer_inbox inboxes[K];
static node *nodes;
static unsigned char *seen;
static _Atomic int producers_left = P;
static uint64_t received[K];
static int errors_found;

static void *producer(void *arg)
{
    uint32_t p = (uint32_t)(uintptr_t)arg;
    for (uint32_t i = 0; i < M; i++) {
        node *n = &nodes[(size_t)p * M + i];
        n->producer = p;
        n->seq = i;
        n->inbox = (p * 7 + i) % K;
        seer_inbox_push_mp(&inboxes[n->inbox], &n->link);
    }
    atomic_fetch_sub_explicit(&producers_left, 1, memory_order_release);
    return NULL;
}

static void consume(uint32_t k, seer_inbox_node *x)
{
    while (x) {
        node *n = (node *)(void *)x;
        size_t id = (size_t)n->producer * M + n->seq;
        if (n->inbox != k || seen[id]) {
            fprintf(stderr, "node %zu delivered twice or to the wrong inbox\n", id);
            errors_found = 1;
        }
        seen[id] = 1;
        received[k]++;
        x = x->next;
    }
}

static void *consumer(void *arg)
{
    uint32_t k = (uint32_t)(uintptr_t)arg;
    for (;;) {
        int done = atomic_load_explicit(&producers_left, memory_order_acquire) == 0;
        consume(k, seer_inbox_drain_sc(&inboxes[k]));
        if (done) {
            consume(k, seer_inbox_drain_sc(&inboxes[k]));
            return NULL;
        }
    }
}

int main(void)
{
    nodes = calloc((size_t)P * M, sizeof *nodes);
    seen = calloc((size_t)P * M, 1);
    if (!nodes || !seen)
        return 2;
    for (int k = 0; k < K; k++)
        seer_inbox_init(&inboxes[k]);
    pthread_t tp[P], tc[K];
    for (uintptr_t k = 0; k < K; k++)
        pthread_create(&tc[k], NULL, consumer, (void *)k);
    for (uintptr_t p = 0; p < P; p++)
        pthread_create(&tp[p], NULL, producer, (void *)p);
    for (int p = 0; p < P; p++)
        pthread_join(tp[p], NULL);
    for (int k = 0; k < K; k++)
        pthread_join(tc[k], NULL);
    uint64_t total = 0;
    for (int k = 0; k < K; k++)
        total += received[k];
    for (size_t i = 0; i < (size_t)P * M; i++)
        if (!seen[i])
            errors_found = 1;
    printf("stress_inbox: %llu of %llu nodes delivered exactly once: %s\n",
           (unsigned long long)total, (unsigned long long)P * M, errors_found ? "FAIL" : "ok");
    free(nodes);
    free(seen);
    return errors_found || total != (uint64_t)P * M;
}
