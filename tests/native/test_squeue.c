/*
 * Randomized test of the event queue (squeue.c) against a naive reference
 * (linear search for the (time, key) minimum).  Covers ties at one time
 * (in key order and out of it, so both the sorted run, the side heap and the
 * run sort are used), pushes at the current time while a group drains, far
 * and near times, -0.0, pops bounded by a step boundary, and clears; and
 * what only the optimistic executor does: pushes before the current group
 * (the early heap: rollbacks, stragglers) and in-place filtering.
 * Built plain and under the sanitizers by run_sanitizers.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "squeue.h"

#define MAXN 4096

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) * 0x1.0p-53; }

static seer_event *ref[MAXN];
static size_t nref;

static int less(const seer_event *a, const seer_event *b)
{
    return a->time < b->time || (a->time == b->time && a->key < b->key);
}

static seer_event *ref_min(size_t *at)
{
    seer_event *m = NULL;
    for (size_t i = 0; i < nref; i++)
        if (!m || less(ref[i], m)) {
            m = ref[i];
            *at = i;
        }
    return m;
}

static void count_cb(void *arg, seer_event *ev)
{
    (void)ev;
    ++*(size_t *)arg;
}

static int drop_it(const seer_event *ev) { return (ev->key % 3) == 1; }

static int keep_cb(void *arg, seer_event *ev)
{
    (void)arg;
    return !drop_it(ev);
}

static int fail(const char *what, int round)
{
    fprintf(stderr, "test_squeue: %s (round %d)\n", what, round);
    return 1;
}

int main(void)
{
    static seer_event pool[MAXN];
    seer_event *free_list[MAXN];
    size_t nfree = MAXN;
    for (size_t i = 0; i < MAXN; i++)
        free_list[i] = &pool[i];
    seer_squeue q;
    seer_squeue_init(&q);
    double now = 0.0;
    uint64_t seq = 0;
    uint64_t pops = 0, pushes = 0;
    for (int round = 0; round < 200000; round++) {
        unsigned op = (unsigned)(rnd() % 16);
        if (op < 7 && nfree) {
            /* push a burst (ties in key order when the burst shares a time) */
            unsigned burst = 1 + (unsigned)(rnd() % 8);
            unsigned how = (unsigned)(rnd() % 6);
            double t = now;
            if (how == 1)
                t = now + (double)(rnd() % 4);           /* integer ties       */
            else if (how == 2)
                t = now + unif() * 0.01;                 /* near               */
            else if (how == 3)
                t = now + unif() * 1000.0;               /* far                */
            else if (how == 4)
                t = now + 1e6 * unif();                  /* very far           */
            else if (how == 5 && rnd() % 4 == 0)         /* before the current */
                t = now * unif();                        /* group (optimistic) */
            int in_order = (int)(rnd() % 2);
            uint64_t src = rnd() % 64;
            for (unsigned k = 0; k < burst && nfree; k++) {
                seer_event *ev = free_list[--nfree];
                memset(ev, 0, sizeof *ev);
                ev->time = (t == 0.0 && (rnd() & 1)) ? -0.0 : t;
                /* unique keys; out of order unless in_order */
                uint64_t s = in_order ? src : rnd() % 64;
                ev->key = (s << 40) | seq++;
                if (seer_squeue_push_owner(&q, ev) != SEER_OK)
                    return fail("push failed", round);
                ref[nref++] = ev;
                pushes++;
            }
        } else if (op < 15) {
            /* pop, bounded like a step */
            double bnd = (rnd() % 4 == 0) ? now : now + unif() * 50.0;
            int err = 0;
            seer_event *got = seer_squeue_pop_before_owner(&q, bnd, &err);
            size_t at = 0;
            seer_event *want = ref_min(&at);
            if (want && !(want->time < bnd))
                want = NULL;
            if (err)
                return fail("pop error", round);
            if (got != want) {
                fprintf(stderr, "got %p (t=%.17g) want %p (t=%.17g) bnd %.17g\n", (void *)got,
                        got ? got->time : -1.0, (void *)want, want ? want->time : -1.0, bnd);
                return fail("pop order differs from the reference", round);
            }
            if (got) {
                now = got->time + 0.0;
                ref[at] = ref[--nref];
                free_list[nfree++] = got;
                pops++;
            }
        } else if (rnd() % 64 == 1) {
            /* drop the events with an odd key mod 3 in place (cancellations) */
            size_t kept = 0;
            for (size_t i = 0; i < nref; i++) {
                if (drop_it(ref[i]))
                    free_list[nfree++] = ref[i];
                else
                    ref[kept++] = ref[i];
            }
            nref = kept;
            seer_squeue_filter_owner(&q, keep_cb, NULL);
            if (q.n != nref)
                return fail("filter kept a different number of events", round);
        } else if (rnd() % 64 == 0) {
            size_t n = 0;
            seer_squeue_foreach_owner(&q, count_cb, &n);
            if (n != nref || q.n != nref)
                return fail("foreach/size disagree with the reference", round);
            if (rnd() % 4 == 0) {
                for (size_t i = 0; i < nref; i++)
                    free_list[nfree++] = ref[i];
                nref = 0;
                seer_squeue_clear_owner(&q);
                now = 0.0;
            }
        }
    }
    /* drain everything */
    for (;;) {
        int err = 0;
        seer_event *got = seer_squeue_pop_before_owner(&q, 1e300, &err);
        size_t at = 0;
        seer_event *want = ref_min(&at);
        if (got != want)
            return fail("final drain order differs", -1);
        if (!got)
            break;
        ref[at] = ref[--nref];
    }
    if (q.n != 0)
        return fail("queue not empty after the drain", -1);
    seer_squeue_free(&q);
    printf("test_squeue: %llu pushes, %llu pops in reference order\n",
           (unsigned long long)pushes, (unsigned long long)pops);
    return 0;
}
