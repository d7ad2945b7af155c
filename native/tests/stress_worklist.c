/*
 * Stress test of seer_worklist (multi-consumer claims) and seer_barrier.
 * T threads run R rounds; in each round they claim every item of a worklist
 * whose size and chunk change every round (set in the barrier callback, which
 * must run exactly once per round) and mark it.  After each barrier the
 * callback checks that every item was claimed exactly once.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../src/sync.h"

#define T 8
#define R 3000
#define MAXN 5000

static seer_worklist wl;
static seer_barrier bar;
static _Atomic uint32_t marks[MAXN];
static int round_no;
static int callbacks;
static int errors_found;

static void check_and_next(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < wl.count; i++) {
        /* relaxed: the barrier orders these reads after every mark. */
        if (atomic_load_explicit(&marks[i], memory_order_relaxed) != 1) {
            fprintf(stderr, "round %d: item %u claimed %u times\n", round_no, i,
                    atomic_load_explicit(&marks[i], memory_order_relaxed));
            errors_found = 1;
        }
        atomic_store_explicit(&marks[i], 0, memory_order_relaxed);
    }
    callbacks++;
    round_no++;
    uint32_t n = (uint32_t)((round_no * 2654435761u) % MAXN);
    seer_worklist_reset_quiescent(&wl, n, 1 + (uint32_t)(round_no % 97));
}

static void *worker(void *arg)
{
    uint32_t sense = 0;
    (void)arg;
    for (int r = 0; r < R; r++) {
        uint32_t b, e;
        while (seer_worklist_claim_mc(&wl, &b, &e))
            for (uint32_t i = b; i < e; i++)
                atomic_fetch_add_explicit(&marks[i], 1, memory_order_relaxed);
        seer_barrier_wait(&bar, &sense, check_and_next, NULL);
    }
    return NULL;
}

int main(void)
{
    seer_barrier_init(&bar, T, 100);
    seer_worklist_reset_quiescent(&wl, 1234, 7);
    pthread_t th[T];
    for (int t = 0; t < T; t++)
        pthread_create(&th[t], NULL, worker, NULL);
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    if (callbacks != R)
        errors_found = 1;
    printf("stress_worklist: %d rounds x %d threads, %d barrier callbacks: %s\n", R, T,
           callbacks, errors_found ? "FAIL" : "ok");
    return errors_found;
}
