/*
 * Stress test of seer_phases (the executive list): T threads, some of them
 * deliberately slow (they sleep between claims, like descheduled workers),
 * run R phases whose sizes and chunk sizes change every phase.  Every item
 * of every phase must be handled exactly once, by a claim made in that
 * phase; exactly one completer per phase opens the next; and the final
 * DONE phase releases every thread, each of which must then see every chunk
 * of every phase completed (a thread that took DONE from a stale descriptor
 * slot would leave early and see fewer).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sync.h"

#define T 8
#define R 4000
#define MAXN 3000
#define KIND_WORK 1u
#define KIND_DONE 2u

static seer_phases ph;
static _Atomic uint32_t marks[MAXN];
static uint32_t phase_count_of[R + 2]; /* written by the completer only */
static int opened;                     /* phases opened (completer only) */
static int errors_found;               /* completer only */
static _Atomic uint64_t claims_total;
static _Atomic uint64_t completions; /* chunks completed, all phases */
static uint64_t chunks_total;        /* chunks of all phases (completer only) */
static _Atomic int early_exits;

static uint32_t size_of(int r) { return 1u + (uint32_t)((r * 2654435761u) % MAXN); }

static uint64_t chunks_of(uint32_t count, uint32_t chunk)
{
    return (count + chunk - 1) / chunk;
}

static uint32_t chunk_of(int r) { return r == 0 ? 5u : 1u + (uint32_t)(r % 37); }

static void complete_phase(void)
{
    uint32_t n = phase_count_of[opened];
    chunks_total += chunks_of(n, chunk_of(opened));
    for (uint32_t i = 0; i < n; i++) {
        /* relaxed: the acq_rel completions ordered every mark before this. */
        uint32_t m = atomic_load_explicit(&marks[i], memory_order_relaxed);
        if (m != 1) {
            fprintf(stderr, "phase %d: item %u handled %u times\n", opened, i, m);
            errors_found = 1;
        }
        atomic_store_explicit(&marks[i], 0, memory_order_relaxed);
    }
    opened++;
    if (opened == R) {
        seer_phases_open_completer(&ph, KIND_DONE, 0, 1, 0);
        return;
    }
    phase_count_of[opened] = size_of(opened);
    seer_phases_open_completer(&ph, KIND_WORK, phase_count_of[opened], chunk_of(opened), 0);
}

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    struct timespec nap = {0, 20000};
    for (;;) {
        uint64_t seq;
        uint32_t kind, tag, b, e;
        int got = seer_phases_claim_any(&ph, (int)(id & 1), &seq, &kind, &tag, &b, &e);
        if (kind == KIND_DONE) {
            /* relaxed: DONE was taken with acquire from its opener, which
             * completed the last chunk after every other completion. */
            uint64_t done = atomic_load_explicit(&completions, memory_order_relaxed);
            if (done != chunks_total)
                atomic_fetch_add_explicit(&early_exits, 1, memory_order_relaxed);
            return NULL;
        }
        if (got != SEER_CLAIMED) {
            seer_phases_wait_any(&ph, seq, 100);
            continue;
        }
        if (id % 3 == 2 && (seq % 16) == id)
            nanosleep(&nap, NULL); /* a slow thread holding a chunk */
        for (uint32_t i = b; i < e; i++)
            atomic_fetch_add_explicit(&marks[i], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&claims_total, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&completions, 1, memory_order_relaxed);
        if (seer_phases_complete_any(&ph))
            complete_phase();
        if (id % 3 == 1 && (seq % 64) == 0)
            nanosleep(&nap, NULL); /* a slow thread between claims */
    }
}

int main(void)
{
    seer_phases_init(&ph);
    phase_count_of[0] = size_of(0);
    seer_phases_open_completer(&ph, KIND_WORK, phase_count_of[0], chunk_of(0), 0);
    pthread_t th[T];
    for (uintptr_t t = 0; t < T; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    if (opened != R || atomic_load(&early_exits) != 0)
        errors_found = 1;
    printf("stress_phases: %d phases x %d threads, %llu claims, every item once, "
           "%d early exits: %s\n",
           opened, T, (unsigned long long)atomic_load(&claims_total),
           atomic_load(&early_exits), errors_found ? "FAIL" : "ok");
    return errors_found;
}
