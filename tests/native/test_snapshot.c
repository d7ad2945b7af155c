/*
 * test_snapshot: snapshot.c from C, under the sanitizers (run_sanitizers.sh).
 *
 * PHOLD on every executor: a snapshot restored into another runtime (another
 * executor, pool and batch size) continues bit for bit; every truncation of a
 * snapshot and a bit flip in every byte is refused with SEER_E_SNAPSHOT and
 * changes nothing -- the parser never reads past the bytes it was given
 * (ASan), whatever they hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phold.h"
#include "seer_runtime.h"

static const seer_phold_config cfg = {.num_entities = 23, .events_per_entity = 3,
                                      .remote = 0.6, .mean = 0.7, .lookahead = 0.3,
                                      .work = 0, .step_duration = 2.0};

static seer_runtime *make(int executor, uint32_t threads, uint32_t B)
{
    seer_runtime *rt = NULL;
    char err[512];
    seer_runtime_options o = {.num_instances = B, .executor = executor, .threads = threads,
                              .flags = SEER_RT_OVERSUBSCRIBE};
    if (seer_runtime_create(&seer_model_phold, &cfg, sizeof cfg, &o, &rt, err, sizeof err) !=
        SEER_OK) {
        fprintf(stderr, "create: %s\n", err);
        exit(2);
    }
    return rt;
}

/* A snapshot of instance i, malloc'd; *n its length. */
static unsigned char *snap(seer_runtime *rt, uint32_t i, uint64_t *n)
{
    uint64_t cap;
    if (seer_runtime_snapshot_size(rt, i, &cap) != SEER_OK) {
        fprintf(stderr, "snapshot_size: %s\n", seer_runtime_error(rt));
        exit(2);
    }
    unsigned char *b = malloc(cap);
    if (!b || seer_runtime_snapshot(rt, i, b, cap, n) != SEER_OK) {
        fprintf(stderr, "snapshot: %s\n", seer_runtime_error(rt));
        exit(2);
    }
    return b;
}

/* Step instance i of rt `steps` times with actions from `seed`; a checksum of
 * its observations and rewards after each step. */
static uint64_t run(seer_runtime *rt, uint32_t i, int steps, uint32_t seed)
{
    const seer_sizes *sz = seer_runtime_sizes(rt);
    const uint32_t B = seer_runtime_num_instances(rt), A = sz->num_agents;
    uint8_t *mask = calloc(B, 1);
    mask[i] = 1;
    uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < steps; k++) {
        int32_t *act = seer_runtime_buffer(rt, SEER_BUF_ACTIONS);
        for (uint32_t a = 0; a < A; a++)
            act[i * A + a] = (int32_t)((seed + 7 * (uint32_t)k + a) % (uint32_t)sz->action_n);
        if (seer_runtime_step(rt, mask) != SEER_OK) {
            fprintf(stderr, "step: %s\n", seer_runtime_error(rt));
            exit(2);
        }
        const unsigned char *o = seer_runtime_buffer(rt, SEER_BUF_OBS);
        const unsigned char *r = seer_runtime_buffer(rt, SEER_BUF_REWARD);
        const size_t ob = (size_t)A * sz->obs_dim * 4;
        for (size_t j = 0; j < ob; j++)
            h = (h ^ o[i * ob + j]) * 1099511628211ull;
        for (size_t j = 0; j < (size_t)A * 4; j++)
            h = (h ^ r[i * A * 4 + j]) * 1099511628211ull;
    }
    free(mask);
    return h;
}

int main(void)
{
    int fails = 0;
    const int executors[] = {SEER_EXECUTOR_SERIAL, SEER_EXECUTOR_PARALLEL,
                             SEER_EXECUTOR_OPTIMISTIC};
    for (int x = 0; x < 3; x++) {
        const int ex = executors[x];
        seer_runtime *rt = make(ex, ex == SEER_EXECUTOR_SERIAL ? 1 : 2, 2);
        const uint64_t seeds[2] = {3, 4};
        if (seer_runtime_reset(rt, seeds, NULL) != SEER_OK)
            return 2;
        (void)run(rt, 1, 3, 1);
        uint64_t n;
        unsigned char *s = snap(rt, 1, &n);
        const uint64_t want = run(rt, 1, 5, 2);
        /* into every executor, with another pool and batch size */
        for (int y = 0; y < 3; y++) {
            const int ey = executors[y];
            seer_runtime *other = make(ey, ey == SEER_EXECUTOR_SERIAL ? 1 : 3, 3);
            const uint64_t s3[3] = {9, 9, 9};
            if (seer_runtime_reset(other, s3, NULL) != SEER_OK ||
                seer_runtime_restore(other, 2, s, n) != SEER_OK) {
                fprintf(stderr, "restore: %s\n", seer_runtime_error(other));
                return 2;
            }
            uint64_t m;
            unsigned char *again = snap(other, 2, &m);
            if (m != n || memcmp(again, s, n) != 0) {
                fprintf(stderr, "executor %d -> %d: the restored snapshot differs\n", ex, ey);
                fails++;
            }
            free(again);
            if (run(other, 2, 5, 2) != want) {
                fprintf(stderr, "executor %d -> %d: the steps after a restore differ\n", ex, ey);
                fails++;
            }
            seer_runtime_destroy(other);
        }
        /* damaged bytes: refused, nothing changed (each in an exact-size copy,
         * so ASan sees any read past its end) */
        uint64_t m0;
        unsigned char *before = snap(rt, 1, &m0);
        int refused = 0, tried = 0;
        for (uint64_t len = 0; len < n; len += len < 256 ? 1 : 37) {
            unsigned char *cut = malloc(len ? len : 1);
            memcpy(cut, s, len);
            tried++;
            refused += seer_runtime_restore(rt, 1, cut, len) == SEER_E_SNAPSHOT;
            free(cut);
        }
        for (uint64_t pos = 0; pos < n; pos += pos < 256 ? 1 : 13) {
            unsigned char *bad = malloc(n);
            memcpy(bad, s, n);
            bad[pos] ^= (unsigned char)(1u << (pos % 8));
            tried++;
            refused += seer_runtime_restore(rt, 1, bad, n) == SEER_E_SNAPSHOT;
            free(bad);
        }
        uint64_t m1;
        unsigned char *after = snap(rt, 1, &m1);
        if (refused != tried || m1 != m0 || memcmp(before, after, m0) != 0) {
            fprintf(stderr, "executor %d: %d of %d damaged snapshots refused; instance %s\n", ex,
                    refused, tried, m1 == m0 && !memcmp(before, after, m0) ? "unchanged"
                                                                             : "CHANGED");
            fails++;
        }
        printf("test_snapshot: executor %d: restores on every executor identical, %d damaged "
               "snapshots refused\n", ex, refused);
        free(before);
        free(after);
        free(s);
        seer_runtime_destroy(rt);
    }
    return fails ? 1 : 0;
}
