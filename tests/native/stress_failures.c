/*
 * Stress test of the runtime's failure paths: every allocation and every
 * thread creation the runtime makes is made to fail in turn, through the
 * allocation-failure injection of native/runtime/faults.c (this test and
 * the runtime are built with -DSEER_FAULT_INJECTION by run_sanitizers.sh).
 *
 * For k = 1, 2, 3, ... the k-th allocation (then, separately, the k-th
 * thread creation) of a scenario fails, and in a second pass every one from
 * the k-th on.  A scenario drives PHOLD through the host API: create a
 * runtime, reset, step, grow the pool, switch executors, trace, step,
 * destroy.  Every call must succeed, or fail with SEER_E_NOMEM and a message
 * (SEER_E_ORDER, "needs a reset", only after a failure); after a failure the
 * runtime must still step again once reset (when one failure was injected)
 * and be destroyed without a leak (AddressSanitizer checks that, and every
 * access).  Every call that succeeds must produce exactly the outputs of an
 * uninjected reference run at the same step: a failure reported as success,
 * or a success with damaged state, shows up there.  k grows until a whole
 * scenario runs without reaching the countdown.
 *
 * The optimistic executor's scenarios speculate (one instance split over
 * the threads, a lookahead far below the step or 0): a failure inside the
 * speculation either fails the call or is absorbed (the instance's
 * speculation abandoned, its step rerun serially: still the reference's
 * outputs); one scenario caps the rollback logs so that every step is
 * abandoned part way, undone and rerun serially.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEER_FI_REAL_CALLS /* the test's own allocations are not counted */
#include "base.h"
#include "faults.h"
#include "seer_runtime.h"
#include "phold.h"

#define B 3 /* instances of the reference runs (a scenario runs the first nb) */
#define MAX_STEPS 24 /* reference steps (a scenario takes at most ~16) */
#define MAX_K 200000 /* a scenario never allocates this often */

/* The configurations: continuous times; every event of a step at the same
 * few times (mean 0: ties, ordered by key, exercise the queues' current
 * group and run sort); times so large that the lookahead is below
 * their resolution (steps fall back to the serial executor); a lookahead
 * far below the step, and 0 (the optimistic executor speculates); more
 * events (a step's speculation needs more than 48 KiB of log). */
enum { CFG_PLAIN, CFG_TIES, CFG_FALLBACK, CFG_SPEC, CFG_ZERO, CFG_DENSE, NCFG };
static const seer_phold_config cfgs[NCFG] = {
    {.num_entities = 17, .events_per_entity = 2, .remote = 0.6, .mean = 0.7,
     .lookahead = 0.3, .work = 5, .step_duration = 2.0},
    {.num_entities = 17, .events_per_entity = 2, .remote = 0.6, .mean = 0.0,
     .lookahead = 0.5, .work = 5, .step_duration = 2.0},
    {.num_entities = 17, .events_per_entity = 2, .remote = 0.6, .mean = 2e15,
     .lookahead = 1.0, .work = 5, .step_duration = 1e16},
    {.num_entities = 17, .events_per_entity = 2, .remote = 0.8, .mean = 0.7,
     .lookahead = 1e-6, .work = 5, .step_duration = 2.0},
    {.num_entities = 17, .events_per_entity = 2, .remote = 0.7, .mean = 0.5,
     .lookahead = 0.0, .work = 5, .step_duration = 2.0},
    {.num_entities = 17, .events_per_entity = 8, .remote = 0.8, .mean = 0.7,
     .lookahead = 1e-6, .work = 5, .step_duration = 2.0},
};
static const uint64_t seeds[B] = {101, 202, 303};

enum { A = 17, N = 17, OBS = 4, INFO = 3, STATE = 2 * 17 }; /* PHOLD's sizes for cfgs */

/* What an instance's outputs are after reset + s steps (actions depend on
 * the step index only). */
typedef struct ref_step {
    float obs[A * OBS];
    float reward[A];
    uint8_t terminated[A], truncated[A];
    double info[A * INFO];
    seer_phold_entity states[N];
    float gstate[STATE];
} ref_step;

static ref_step ref[NCFG][B][MAX_STEPS + 1];

static int unexpected; /* outcomes that break the rules */

#define FAIL(...)                                                                             \
    do {                                                                                      \
        fprintf(stderr, "stress_failures: " __VA_ARGS__);                                      \
        fputc('\n', stderr);                                                                  \
        unexpected++;                                                                         \
    } while (0)

static void set_actions(seer_runtime *rt)
{
    int32_t *a = seer_runtime_buffer(rt, SEER_BUF_ACTIONS);
    for (uint32_t i = 0; i < seer_runtime_num_instances(rt); i++) {
        uint64_t s = 0;
        seer_runtime_step_index(rt, i, &s);
        for (uint32_t j = 0; j < A; j++)
            a[i * A + j] = (int32_t)((j * 7u + (uint32_t)s) % 3u);
    }
}

static void capture(seer_runtime *rt, uint32_t i, ref_step *r)
{
    memset(r, 0, sizeof *r); /* the padding too: captures are compared whole */
    memcpy(r->obs, (float *)seer_runtime_buffer(rt, SEER_BUF_OBS) + i * A * OBS, sizeof r->obs);
    memcpy(r->reward, (float *)seer_runtime_buffer(rt, SEER_BUF_REWARD) + i * A,
           sizeof r->reward);
    memcpy(r->terminated, (uint8_t *)seer_runtime_buffer(rt, SEER_BUF_TERMINATED) + i * A, A);
    memcpy(r->truncated, (uint8_t *)seer_runtime_buffer(rt, SEER_BUF_TRUNCATED) + i * A, A);
    memcpy(r->info, (double *)seer_runtime_buffer(rt, SEER_BUF_INFO) + i * A * INFO,
           sizeof r->info);
    seer_runtime_entity_states(rt, i, r->states);
    (void)seer_runtime_global_state(rt, i, r->gstate);
}

static seer_runtime *create(int c, uint32_t nb, int executor, uint32_t threads,
                            uint64_t log_limit, int *rc, char *err, size_t len)
{
    seer_runtime *rt = (seer_runtime *)(uintptr_t)1; /* create must set it */
    seer_runtime_options o = {.num_instances = nb, .executor = executor, .threads = threads,
                              .flags = SEER_RT_OVERSUBSCRIBE, .log_limit = log_limit};
    err[0] = '\0';
    *rc = seer_runtime_create(&seer_model_phold, &cfgs[c], sizeof cfgs[c], &o, &rt, err, len);
    return rt;
}

static void build_reference(int c)
{
    char err[SEER_ERRLEN];
    int rc;
    seer_runtime *rt = create(c, B, SEER_EXECUTOR_SERIAL, 1, 0, &rc, err, sizeof err);
    const seer_sizes *sz = rc == SEER_OK ? seer_runtime_sizes(rt) : NULL;
    if (sz && (sz->num_agents != A || sz->num_entities != N || sz->obs_dim != OBS ||
               sz->info_dim != INFO || sz->state_dim != STATE ||
               sz->entity_size != sizeof(seer_phold_entity))) {
        fprintf(stderr, "stress_failures: PHOLD's sizes are not the test's\n");
        exit(2);
    }
    if (rc != SEER_OK || seer_runtime_reset(rt, seeds, NULL) != SEER_OK) {
        fprintf(stderr, "stress_failures: reference run: %s\n", rc ? err : seer_runtime_error(rt));
        exit(2);
    }
    for (uint32_t s = 0;; s++) {
        for (uint32_t i = 0; i < B; i++)
            capture(rt, i, &ref[c][i][s]);
        if (s == MAX_STEPS)
            break;
        set_actions(rt);
        if (seer_runtime_step(rt, NULL) != SEER_OK) {
            fprintf(stderr, "stress_failures: reference step: %s\n", seer_runtime_error(rt));
            exit(2);
        }
    }
    seer_runtime_destroy(rt);
}

/* ---- one scenario ---------------------------------------------------------- */

/* OP_STEP_MASKED: instance 1 sits out (a failed call leaves it as it was) */
enum {
    OP_RESET,
    OP_STEP,
    OP_STEP_MASKED,
    OP_THREADS,
    OP_SERIAL,
    OP_PARALLEL,
    OP_OPTIMISTIC,
    OP_TRACE,
    OP_END
};
typedef struct op {
    int kind;
    uint32_t arg;
} op;

typedef struct scenario {
    const char *name;
    int cfg; /* CFG_* */
    int executor;
    uint32_t threads;
    op ops[24];
    uint32_t nb;        /* instances (<= B) */
    uint64_t log_limit; /* optimistic executor's rollback logs (bytes) */
    int abandons;       /* uninjected, every speculation is abandoned (the log
                           limit): the steps run serially */
} scenario;

/* The optimistic scenarios' log limit: far more than a step of theirs
 * needs, and small arena chunks (64 KiB instead of the default's 1 MiB: the
 * sanitizers' large allocations are slow, and every run makes new ones). */
#define OPT_LOG (1u << 20)

static const scenario scenarios[] = {
    /* B = 3 on 3 threads: one partition per instance (whole steps); on 5:
     * five partitions (windows); serial and back. */
    {"parallel", CFG_PLAIN, SEER_EXECUTOR_PARALLEL, 3,
     {{OP_RESET, 0}, {OP_STEP, 0}, {OP_STEP, 0}, {OP_THREADS, 5}, {OP_STEP_MASKED, 0},
      {OP_SERIAL, 1}, {OP_STEP, 0}, {OP_PARALLEL, 5}, {OP_STEP, 0}, {OP_TRACE, 256},
      {OP_STEP, 0}, {OP_END, 0}},
     B, 0, 0},
    /* Serial, traced; to parallel on a growing pool (1 -> 2 threads: two
     * partitions), then 3 threads (back to one partition: the events are
     * parked in the serial queues meanwhile); serial again. */
    {"serial", CFG_PLAIN, SEER_EXECUTOR_SERIAL, 1,
     {{OP_RESET, 0}, {OP_STEP, 0}, {OP_STEP, 0}, {OP_TRACE, 256}, {OP_STEP, 0},
      {OP_PARALLEL, 2}, {OP_STEP_MASKED, 0}, {OP_THREADS, 3}, {OP_STEP, 0}, {OP_STEP, 0},
      {OP_SERIAL, 1}, {OP_STEP, 0}, {OP_END, 0}},
     B, 0, 0},
    /* Ties, on both executors (windows: 2 partitions, whose events at equal
     * times merge out of key order: the run sort).  3 threads: from 2
     * partitions to 1, the events parked meanwhile in serial queues that
     * never held any. */
    {"ties", CFG_TIES, SEER_EXECUTOR_PARALLEL, 2,
     {{OP_RESET, 0}, {OP_STEP, 0}, {OP_STEP, 0}, {OP_THREADS, 3}, {OP_STEP, 0}, {OP_SERIAL, 1},
      {OP_STEP, 0}, {OP_END, 0}},
     B, 0, 0},
    /* Steps that run serially inside a parallel call (seer_step_serially, serial.c). */
    {"fallback", CFG_FALLBACK, SEER_EXECUTOR_PARALLEL, 2,
     {{OP_RESET, 0}, {OP_STEP, 0}, {OP_STEP, 0}, {OP_END, 0}}, B, 0, 0},
    /* Optimistic, B = 1 split over 2 then 3 threads (speculation: L far
     * below the step); serial, parallel (one window per event time) and
     * back, traced. */
    {"optimistic", CFG_SPEC, SEER_EXECUTOR_OPTIMISTIC, 2,
     {{OP_RESET, 0}, {OP_STEP, 0}, {OP_STEP, 0}, {OP_THREADS, 3}, {OP_STEP, 0},
      {OP_SERIAL, 1}, {OP_STEP, 0}, {OP_OPTIMISTIC, 3}, {OP_TRACE, 256}, {OP_STEP, 0},
      {OP_PARALLEL, 2}, {OP_STEP, 0}, {OP_OPTIMISTIC, 2}, {OP_STEP, 0}, {OP_END, 0}},
     1, OPT_LOG, 0},
    /* Optimistic, B = 2, L = 0: split over 3 threads (speculation), whole
     * instances on 2, one instance (masked) split over 2; serial and back. */
    {"optimistic B=2", CFG_ZERO, SEER_EXECUTOR_OPTIMISTIC, 3,
     {{OP_RESET, 0}, {OP_STEP, 0}, {OP_STEP_MASKED, 0}, {OP_THREADS, 2}, {OP_STEP, 0},
      {OP_STEP_MASKED, 0}, {OP_SERIAL, 1}, {OP_STEP, 0}, {OP_OPTIMISTIC, 3}, {OP_STEP, 0},
      {OP_END, 0}},
     2, OPT_LOG, 0},
    /* Optimistic, logs capped at 48 KiB: every step's speculation is
     * abandoned part way, undone, and the step rerun serially. */
    {"optimistic log limit", CFG_DENSE, SEER_EXECUTOR_OPTIMISTIC, 2,
     {{OP_RESET, 0}, {OP_STEP, 0}, {OP_STEP, 0}, {OP_STEP, 0}, {OP_END, 0}}, 1, 48u << 10, 1},
    /* The same, B = 3 on 4 threads (96 KiB: a chunk of records per slot):
     * two or three abandoned instances per step, rerun one after the
     * other.  A failure in one's rerun fails the others before theirs: their
     * speculation is dropped (instance 1, sitting out, keeps its events, so
     * the pool and its arenas stay). */
    {"optimistic log limit B=3", CFG_DENSE, SEER_EXECUTOR_OPTIMISTIC, 4,
     {{OP_RESET, 0}, {OP_STEP_MASKED, 0}, {OP_STEP, 0}, {OP_END, 0}}, 3, 96u << 10, 1},
};

typedef struct run {
    seer_runtime *rt;
    int cfg;           /* CFG_* */
    uint32_t nb;       /* instances */
    const char *where; /* scenario and k, for messages */
    int kind;          /* SEER_FI_ALLOC or SEER_FI_THREAD */
    int sticky;        /* every call from the k-th on fails */
    int failures;      /* calls that failed (NOMEM) */
    int tainted;       /* a call failed since the last successful reset */
    int broken;        /* the runtime said it cannot run any more */
    int last_rc;       /* status of the last call */
} run;

static int has(const char *s, const char *w) { return strstr(s, w) != NULL; }

/* Compare the outputs of every instance the call ran (mask NULL: all) with
 * the reference at its step. */
static void compare(run *r, const char *what, const uint8_t *mask)
{
    ref_step now;
    for (uint32_t i = 0; i < r->nb; i++) {
        if (mask && !mask[i])
            continue;
        uint64_t s = 0;
        seer_runtime_step_index(r->rt, i, &s);
        if (s > MAX_STEPS) {
            FAIL("%s: %s: instance %u at step %llu, past the reference", r->where, what, i,
                 (unsigned long long)s);
            continue;
        }
        capture(r->rt, i, &now);
        if (memcmp(&now, &ref[r->cfg][i][s], sizeof now) != 0)
            FAIL("%s: %s succeeded but instance %u's outputs differ from the reference at "
                 "step %llu",
                 r->where, what, i, (unsigned long long)s);
    }
}

/* The rules for a call's status; returns it. */
static int check(run *r, const char *what, int rc)
{
    const char *msg = seer_runtime_error(r->rt);
    const uint64_t fired = seer_fi_failed(r->kind);
    r->last_rc = rc;
    if (rc == SEER_OK)
        return rc;
    if (!msg[0])
        FAIL("%s: %s failed (%d) with an empty message", r->where, what, rc);
    if (rc == SEER_E_ORDER) {
        /* only after a failure, and saying why */
        if (!r->tainted || !has(msg, "needs a reset"))
            FAIL("%s: %s: unexpected SEER_E_ORDER: %s", r->where, what, msg);
        return rc;
    }
    if (rc != SEER_E_NOMEM) {
        FAIL("%s: %s failed with %d, not SEER_E_NOMEM: %s", r->where, what, rc, msg);
        return rc;
    }
    if (!fired)
        FAIL("%s: %s failed with no failure injected: %s", r->where, what, msg);
    if (!has(msg, "memory") && !has(msg, "thread"))
        FAIL("%s: %s: SEER_E_NOMEM with the message of something else: %s", r->where, what,
             msg);
    /* One injected failure is reported once: the runtime then works again
     * (a reset at most away), it never breaks for good. */
    if (!r->sticky && r->failures)
        FAIL("%s: %s failed again after one injected failure: %s", r->where, what, msg);
    if (has(msg, "cannot run any more")) {
        r->broken = 1;
        if (!r->sticky)
            FAIL("%s: %s: the runtime broke after one injected failure: %s", r->where, what,
                 msg);
    }
    r->failures++;
    r->tainted = 1;
    return rc;
}

/* Queries between calls: none may crash, whatever state a failure left. */
static void probe(run *r)
{
    seer_runtime *rt = r->rt;
    seer_stats st;
    seer_runtime_stats(rt, &st);
    for (uint32_t i = 0; i < r->nb; i++) {
        uint64_t s, pend, ev[N];
        seer_phold_entity states[N];
        float g[STATE];
        seer_runtime_step_index(rt, i, &s);
        seer_runtime_pending_events(rt, i, &pend);
        seer_runtime_entity_events(rt, i, ev);
        seer_runtime_entity_states(rt, i, states);
        int rc = seer_runtime_global_state(rt, i, g);
        if (rc != SEER_OK && rc != SEER_E_ORDER && rc != SEER_E_NOMEM)
            FAIL("%s: global_state failed with %d: %s", r->where, rc, seer_runtime_error(rt));
        if (rc == SEER_E_NOMEM && !r->broken)
            FAIL("%s: global_state: SEER_E_NOMEM from a working runtime", r->where);
    }
    const uint32_t pool = seer_runtime_pool_size(rt), active = seer_runtime_threads(rt);
    if (pool == 0 && !r->broken) {
        /* the pool could not be restarted after a failed call: the next
         * call says the runtime cannot run any more */
        if (!r->sticky)
            FAIL("%s: the pool is gone after one injected failure", r->where);
        r->broken = 1;
    }
    if (active > pool || (!r->broken && active < 1))
        FAIL("%s: %u active threads in a pool of %u", r->where, active, pool);
    if (!r->broken && seer_runtime_executor(rt) == SEER_EXECUTOR_SERIAL && active != 1)
        FAIL("%s: the serial executor with %u active threads", r->where, active);
    for (uint32_t t = 0; t <= pool; t++) {
        const seer_trace_rec *rec = seer_runtime_trace_records(rt, t);
        uint64_t c = seer_runtime_trace_count(rt, t);
        for (uint64_t j = 0; j < c; j++)
            if (rec[j].t1_ns < rec[j].t0_ns || rec[j].kind > SEER_TRACE_ROLLBACK)
                FAIL("%s: trace record %llu of worker %u is damaged", r->where,
                     (unsigned long long)j, t);
    }
    seer_runtime_trace_clear(rt);
}

static int do_reset(run *r)
{
    int rc = check(r, "reset", seer_runtime_reset(r->rt, seeds, NULL));
    if (rc == SEER_OK) {
        r->tainted = 0;
        compare(r, "reset", NULL);
    }
    return rc;
}

static int do_step(run *r, const uint8_t *mask)
{
    set_actions(r->rt);
    int rc = check(r, "step", seer_runtime_step(r->rt, mask));
    if (rc == SEER_OK)
        compare(r, "step", mask);
    return rc;
}

static int do_op(run *r, op o)
{
    seer_runtime *rt = r->rt;
    const int ex = seer_runtime_executor(rt);
    const uint32_t th = seer_runtime_threads(rt);
    int rc;
    switch (o.kind) {
    case OP_RESET: return do_reset(r);
    case OP_STEP: return do_step(r, NULL);
    case OP_STEP_MASKED: return do_step(r, (const uint8_t[B]){1, 0, 1}); /* nb >= 2 */
    case OP_TRACE: return check(r, "trace", seer_runtime_trace(rt, o.arg));
    case OP_THREADS:
        if (ex == SEER_EXECUTOR_SERIAL) /* still serial: a switch failed */
            return SEER_OK;
        rc = check(r, "set_threads", seer_runtime_set_threads(rt, o.arg));
        break;
    default: {
        const int to = o.kind == OP_SERIAL     ? SEER_EXECUTOR_SERIAL
                       : o.kind == OP_PARALLEL ? SEER_EXECUTOR_PARALLEL
                                               : SEER_EXECUTOR_OPTIMISTIC;
        rc = check(r, "set_executor", seer_runtime_set_executor(rt, to, o.arg));
        /* "On failure nothing changed" (seer_runtime.h) */
        if (rc == SEER_OK && seer_runtime_executor(rt) != to)
            FAIL("%s: set_executor succeeded but the executor is %d", r->where,
                 seer_runtime_executor(rt));
        if (rc != SEER_OK && !r->broken && seer_runtime_executor(rt) != ex)
            FAIL("%s: set_executor failed but the executor changed", r->where);
        break;
    }
    }
    /* the pool: the new size, or on failure the old one */
    if (!r->broken && rc == SEER_OK && seer_runtime_threads(rt) != o.arg)
        FAIL("%s: the pool runs %u threads, not the %u asked for", r->where,
             seer_runtime_threads(rt), o.arg);
    if (!r->broken && rc != SEER_OK && seer_runtime_threads(rt) != th)
        FAIL("%s: a failed call changed the pool from %u to %u threads", r->where, th,
             seer_runtime_threads(rt));
    return rc;
}

/* After a failed call: step; if the runtime says the instances need a
 * reset, reset and step. */
static void recover(run *r)
{
    if (do_step(r, NULL) == SEER_E_ORDER && do_reset(r) == SEER_OK)
        (void)do_step(r, NULL);
}

/* Run scenario sc with the countdown armed at k (0: not armed).  Returns
 * whether the countdown was reached. */
static int run_scenario(const scenario *sc, int kind, uint64_t k, int sticky, int *reported)
{
    char where[96], err[SEER_ERRLEN];
    snprintf(where, sizeof where, "%s scenario, %s %llu%s", sc->name,
             kind == SEER_FI_ALLOC ? "allocation" : "thread creation", (unsigned long long)k,
             sticky ? " and on" : "");
    run r = {.where = where, .cfg = sc->cfg, .nb = sc->nb, .kind = kind, .sticky = sticky};
    *reported = 0;
    seer_fi_arm(kind, k, sticky);
    int rc;
    r.rt = create(sc->cfg, r.nb, sc->executor, sc->threads, sc->log_limit, &rc, err,
                  sizeof err);
    if (rc != SEER_OK) {
        if (r.rt != NULL)
            FAIL("%s: create failed but *out is not NULL", where);
        if (rc != SEER_E_NOMEM || !err[0] || !seer_fi_failed(kind))
            FAIL("%s: create failed with %d: '%s'", where, rc, err);
        *reported = 1;
    } else {
        for (const op *o = sc->ops; o->kind != OP_END; o++) {
            if (do_op(&r, *o) != SEER_OK)
                recover(&r);
            probe(&r);
        }
        seer_stats st;
        seer_runtime_stats(r.rt, &st);
        if (k == 0 && (st.serial_fallbacks != 0) != (sc->cfg == CFG_FALLBACK))
            FAIL("%s: %llu steps ran serially", where, (unsigned long long)st.serial_fallbacks);
        /* uninjected, speculation is abandoned only past the log limit
         * (and is, at every step: each needs far more than 48 KiB); under
         * injection a failure may be absorbed by a serial step */
        if (k == 0 && (st.serial_steps != 0) != sc->abandons)
            FAIL("%s: %llu optimistic steps ran serially", where,
                 (unsigned long long)st.serial_steps);
        /* one injected failure: the runtime ends up working whatever failed */
        if (!sticky && r.last_rc != SEER_OK)
            FAIL("%s: the runtime did not recover (a reset and a step)", where);
        *reported = r.failures > 0;
        seer_runtime_destroy(r.rt);
    }
    const int reached = seer_fi_failed(kind) != 0;
    seer_fi_arm(kind, 0, 0);
    return reached;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    /* argv[1]: run the "and on" pass at every stride-th k only, argv[2]:
     * the one-at-a-time pass over allocations at every once-th k (the
     * sanitizer runs keep to their time budget with them); argv[3]: that
     * scenario only. */
    const uint64_t stride = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    const uint64_t once = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    if (stride < 1 || once < 1) {
        fprintf(stderr, "usage: stress_failures [stride [once-stride [scenario]]]\n");
        return 2;
    }
    const double t0 = now_s();
    for (int c = 0; c < NCFG; c++)
        build_reference(c);
    uint64_t injected[2] = {0, 0}, reported[2] = {0, 0}, sticky_runs = 0;
    for (size_t s = 0; s < sizeof scenarios / sizeof scenarios[0]; s++) {
        if (argc > 3 && strcmp(argv[3], scenarios[s].name) != 0)
            continue;
        const double ts = now_s();
        /* uninjected: the scenario itself must pass */
        int rep;
        if (run_scenario(&scenarios[s], SEER_FI_ALLOC, 0, 0, &rep) || rep)
            FAIL("%s scenario: failed without injection", scenarios[s].name);
        uint64_t points[2] = {0, 0}; /* calls of each kind the scenario makes */
        for (int kind = SEER_FI_ALLOC; kind <= SEER_FI_THREAD; kind++) {
            for (int sticky = 0; sticky <= 1; sticky++) {
                uint64_t k = 1;
                /* (the few thread creations: each one, always) */
                const uint64_t step = sticky ? stride : kind == SEER_FI_ALLOC ? once : 1;
                for (; k < MAX_K; k += step) {
                    if (!run_scenario(&scenarios[s], kind, k, sticky, &rep))
                        break;
                    if (sticky) {
                        sticky_runs++;
                    } else {
                        injected[kind]++;
                        reported[kind] += (uint64_t)rep;
                    }
                    if (unexpected > 20) {
                        fprintf(stderr, "stress_failures: too many failures, stopping\n");
                        return 1;
                    }
                }
                if (k >= MAX_K)
                    FAIL("%s scenario: the countdown never ran out", scenarios[s].name);
                if (!sticky)
                    points[kind] = k - step; /* the last k that fired (within step) */
            }
        }
        char each[32] = "each";
        if (once > 1)
            snprintf(each, sizeof each, "one in %llu", (unsigned long long)once);
        printf("stress_failures: %s scenario: %s%llu allocations and %llu thread creations, %s "
               "failed alone (%.1f s)\n",
               scenarios[s].name, once > 1 ? "about " : "", (unsigned long long)points[0],
               (unsigned long long)points[1], each, now_s() - ts);
    }
    if (unexpected) {
        fprintf(stderr, "stress_failures: %d unexpected outcome(s)\n", unexpected);
        return 1;
    }
    printf("stress_failures: %llu allocation failures (%llu reported, the rest absorbed) and "
           "%llu thread-creation failures (%llu reported) injected one at a time, %llu runs "
           "failing every call from one on, every one handled cleanly (%.1f s)\n",
           (unsigned long long)injected[0], (unsigned long long)reported[0],
           (unsigned long long)injected[1], (unsigned long long)reported[1],
           (unsigned long long)sticky_runs, now_s() - t0);
    return 0;
}
