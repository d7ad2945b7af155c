/*
 * runtime.c -- the entry points of the host API (seer_runtime.h) between
 * a runtime's creation and destruction (create.c): what a runtime is, the
 * call lifecycle, reset and step (selection, action validation, the rule
 * for failed calls), and the queries between calls.  All of it runs on the host thread (one at a time per
 * runtime).  A call selects its instances, validates, and hands them to an
 * executor: serial.c (seer_serial_run), parallel.c (seer_parallel_run) or
 * optimistic.c (seer_opt_run);
 * a failed call marks them as needing a reset here (fail_selected).  Pool
 * size and executor switches are in threads.c, tracing in trace.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base.h"
#include "check.h"
#include "company.h"
#include "ctx.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "optimistic.h"
#include "parallel.h"
#include "partition.h"
#include "phases.h"
#include "pool.h"
#include "process.h"
#include "runtime.h"
#include "serial.h"
#include "squeue.h"
#include "trace.h"
#include "sync.h"

/* ---- what a runtime is ------------------------------------------------------ */

const char *seer_runtime_error(const seer_runtime *rt) { return rt ? rt->err : "no runtime"; }
const seer_sizes *seer_runtime_sizes(const seer_runtime *rt) { return &rt->sz; }
const char *seer_runtime_model_name(const seer_runtime *rt) { return rt->model->name; }
const seer_model *seer_runtime_model(const seer_runtime *rt) { return rt->model; }
const void *seer_runtime_config(const seer_runtime *rt) { return rt->config; }
uint32_t seer_runtime_num_instances(const seer_runtime *rt) { return rt->B; }
uint32_t seer_runtime_threads(const seer_runtime *rt)
{
    /* relaxed: the host is the only writer. */
    return atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
}
uint32_t seer_runtime_pool_size(const seer_runtime *rt) { return rt->pool.nthreads; }
int seer_runtime_executor(const seer_runtime *rt)
{
    /* (a long alone stretch runs on the serial executor's queues: company.c) */
    return rt->pool.alone.serial ? rt->pool.alone.executor : rt->executor;
}

/* The tids of workers 1 .. end - 1 (within the pool), into out[0 .. cap - 1]. */
static uint32_t tids_host(const seer_runtime *rt, uint32_t end, int64_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t t = 1; t < end && t < rt->pool.nthreads && n < cap; t++)
        /* relaxed: see seer_worker.tid (a worker not started yet reads 0) */
        out[n++] = atomic_load_explicit(&rt->pool.workers[t].tid, memory_order_relaxed);
    return n;
}

uint32_t seer_runtime_worker_tids(const seer_runtime *rt, int64_t *out, uint32_t cap)
{
    /* relaxed: the host is the only writer of `active` */
    return tids_host(rt, atomic_load_explicit(&rt->pool.active, memory_order_relaxed), out, cap);
}

uint32_t seer_runtime_pool_tids(const seer_runtime *rt, int64_t *out, uint32_t cap)
{
    return tids_host(rt, rt->pool.nthreads, out, cap);
}

void *seer_runtime_buffer(seer_runtime *rt, int which)
{
    switch (which) {
    case SEER_BUF_ACTIONS: return rt->buf.actions;
    case SEER_BUF_OBS: return rt->buf.obs;
    case SEER_BUF_REWARD: return rt->buf.reward;
    case SEER_BUF_TERMINATED: return rt->buf.terminated;
    case SEER_BUF_TRUNCATED: return rt->buf.truncated;
    case SEER_BUF_ALIVE: return rt->buf.alive;
    case SEER_BUF_INFO: return rt->buf.info;
    case SEER_BUF_ACTIVE: return rt->buf.active;
    case SEER_BUF_MASK: return rt->buf.mask;
    default: return NULL;
    }
}

/* Every call that runs the model or changes the pool starts here.  In a
 * child of fork() the pool is re-created first (the parent's workers do not
 * exist there); a runtime whose pool could not be restarted fails; SIGINT is
 * watched from here on. */
int seer_call_begin(seer_runtime *rt)
{
    if (rt->fork_gen != seer_fork_generation() && seer_pool_after_fork(rt) != SEER_OK)
        rt->broken = 1;
    if (rt->broken) {
        seer_fail(rt, "this runtime cannot run any more (its worker pool could not be "
                      "restarted: out of memory or threads); close it and create a new one");
        return SEER_E_NOMEM;
    }
    seer_sigint_watch();
    rt->sigint_at_call = seer_sigint_count();
    return SEER_OK;
}

/* ---- reset and step ---------------------------------------------------------- */

static uint32_t select_instances(seer_runtime *rt, const uint8_t *mask)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < rt->B; i++)
        if (!mask || mask[i])
            rt->call.sel[n++] = i;
    rt->call.nsel = n;
    return n;
}

/* After a failed call: the failed instances' pending events go (a reset
 * would drop them anyway), and when no instance holds an event any more the
 * event memory itself is freed -- a step that ran out of memory gives it
 * back.  Freeing it needs no worker near the free lists: the pool is
 * stopped (joined) and started again. */
static void release_failed(seer_runtime *rt)
{
    if (!rt->pool.workers)
        return;
    seer_worker *w = &rt->pool.workers[0];
    int holding = 0;
    for (uint32_t i = 0; i < rt->B; i++) {
        seer_inst *in = &rt->inst[i];
        if (in->failed) {
            seer_event_free_all_local(w, &in->queue);
            for (uint32_t p = 0; in->parts && p < rt->part.n; p++)
                seer_event_free_all_local(w, &in->parts[p]);
        }
        holding |= in->queue.n != 0;
        for (uint32_t p = 0; in->parts && p < rt->part.n; p++)
            holding |= in->parts[p].n != 0;
    }
    if (holding)
        return;
    /* Under the reserve's lock, as every reader of the lists: a worker
     * restocks (restock_local, pool.c) only after claiming a chunk of a
     * call, so never after the call returned, but the lock costs nothing
     * here and keeps that a rule of pool.c alone. */
    pthread_mutex_lock(&rt->mem.lock);
    const size_t nchunks = rt->mem.nchunks;
    pthread_mutex_unlock(&rt->mem.lock);
    if (!nchunks)
        return;
    const uint32_t n = rt->pool.nthreads;
    /* relaxed: the host is the only writer. */
    const uint32_t active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    seer_pool_stop(rt); /* gives every worker's free events back to the reserve */
    seer_event_blocks_free(rt);
    if (seer_pool_restart(rt, n, active) != SEER_OK)
        rt->broken = 1;
}

/* One rule for every failed call, whatever the executor: each selected
 * instance may be half way through it, so all of them need a reset; the
 * failure is kept to say so on later calls. */
static void fail_selected(seer_runtime *rt)
{
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        rt->inst[rt->call.sel[k]].ready = 0;
        rt->inst[rt->call.sel[k]].failed = 1;
    }
    memcpy(rt->fail_msg, rt->err, sizeof rt->fail_msg);
    release_failed(rt);
}

static int reset_now(seer_runtime *rt, const uint64_t *seeds, const uint8_t *mask);

/* reset and step run held (seer_fork_hold_host) but for the model's hooks:
 * a fork then finds the call in_call, or none of its bookkeeping half done.
 * Whether the calling thread holds for the call it is in (calls of a
 * runtime do not nest): a step that succeeded takes the hold back only for
 * what follows a failure. */
static _Thread_local int t_held;

static void hold_call_host(void)
{
    seer_fork_hold_host();
    t_held = 1;
}

static void release_call_host(void)
{
    if (t_held) {
        t_held = 0;
        seer_fork_release_host();
    }
}

int seer_runtime_reset(seer_runtime *rt, const uint64_t *seeds, const uint8_t *mask)
{
    hold_call_host();
    const int rc = reset_now(rt, seeds, mask);
    release_call_host();
    return rc;
}

static int reset_now(seer_runtime *rt, const uint64_t *seeds, const uint8_t *mask)
{
    if (!seeds) {
        seer_fail(rt, "seeds must not be NULL");
        return SEER_E_ARG;
    }
    int rc = seer_call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    if (select_instances(rt, mask) == 0)
        return SEER_OK;
    size_t A = rt->sz.num_agents;
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        uint32_t i = rt->call.sel[k];
        seer_inst *in = &rt->inst[i];
        in->seed = seeds[i];
        in->step = 0;
        in->ready = 1;
        in->failed = 0;
        in->resetting = 1;
        in->boundary = 0.0;
        memset(in->idata, 0, rt->idata_stride);
        if (SEER_CHECKING(rt))
            seer_check_fill_pads(rt, in, 0);
        memset(rt->buf.alive + i * A, 1, A);
    }
    rt->in_call = 1;
    release_call_host(); /* the hooks run */
    rc = rt->executor == SEER_EXECUTOR_SERIAL ? seer_serial_run(rt, JOB_RESET)
                                              : seer_parallel_run(rt, JOB_RESET);
    hold_call_host(); /* the tidying below, or a failure's */
    rt->in_call = 0;
    if (rc)
        fail_selected(rt);
    else if (rt->executor == SEER_EXECUTOR_SERIAL)
        /* the reset freed the instances' events in the queues' order and
         * scheduled new ones in the model's: the pending events moved into
         * address order in their queues' order, the free records in address
         * order (events_layout.c says why) */
        seer_event_tidy_serial_host(rt, rt->call.nsel);
    else /* a pool's lists: at the next step, if the budget allows */
        seer_event_order_pool_after_reset_host(rt);
    return rc;
}

/* "'cell_3' (agent 3 of instance 0)": the model's name for the agent. */
static const char *agent_label(const seer_runtime *rt, uint32_t inst, uint32_t a, char *buf,
                               size_t n)
{
    char name[SEER_NAME_LEN] = "";
    const seer_rt_group *g = &rt->grp.g[rt->grp.of_agent[a]];
    if (rt->model->agent_name) {
        if (rt->model->agent_name(rt->config, a, name, sizeof name) != 0)
            name[0] = '\0';
    } else if (rt->model->group && rt->sz.num_groups >= 1) {
        snprintf(name, sizeof name, "%s_%u", g->name, a - g->first);
    }
    name[SEER_NAME_LEN - 1] = '\0';
    if (name[0])
        snprintf(buf, n, "'%s' (agent %u of instance %u)", name, a, inst);
    else
        snprintf(buf, n, "agent %u of instance %u", a, inst);
    return buf;
}

/* The simple case (one group, discrete or box, no mask to enforce): the
 * checks as they always were, one loop over instance i's live agents.  The
 * message goes to err (rt->err for a step); nothing is written elsewhere. */
static int check_simple(const seer_runtime *rt, uint32_t i, char *err, size_t errlen)
{
    char who[2 * SEER_NAME_LEN];
    const seer_sizes *sz = &rt->sz;
    size_t A = sz->num_agents, D = sz->action_dim;
    for (size_t a = 0; a < A; a++) {
        if (!rt->buf.alive[i * A + a])
            continue;
        if (sz->action_kind == SEER_ACTION_DISCRETE) {
            int32_t v = ((const int32_t *)rt->buf.actions)[i * A + a];
            if (v < 0 || v >= sz->action_n)
                return seer_fail_buf(err, errlen, SEER_E_ACTION,
                                     "invalid action for %s: %d is outside [0, %d)",
                                     agent_label(rt, i, (uint32_t)a, who, sizeof who), (int)v,
                                     (int)sz->action_n);
        } else {
            const float *v = (const float *)rt->buf.actions + (i * A + a) * D;
            for (size_t d = 0; d < D; d++) {
                if (!isfinite(v[d]))
                    return seer_fail_buf(err, errlen, SEER_E_ACTION,
                                         "invalid action for %s: element %zu is %g (actions "
                                         "must be finite)",
                                         agent_label(rt, i, (uint32_t)a, who, sizeof who), d,
                                         (double)v[d]);
            }
        }
    }
    return SEER_OK;
}

/* One live agent's action of group g: its range, and its mask (message to
 * err, as check_simple). */
static int check_one(const seer_runtime *rt, const seer_rt_group *g, uint32_t i, uint32_t a,
                     char *err, size_t errlen)
{
    char who[2 * SEER_NAME_LEN];
    const size_t A = rt->sz.num_agents, row = (size_t)i * A + a;
    const void *act = (const unsigned char *)rt->buf.actions + row * rt->sz.action_dim * 4u;
    const uint8_t *mask = rt->grp.enforce_mask ? rt->buf.mask + row * rt->sz.mask_dim : NULL;
    const unsigned long long step = (unsigned long long)rt->inst[i].step;
    if (g->kind == SEER_ACTION_BOX) {
        const float *v = act;
        for (uint32_t d = 0; d < g->action_dim; d++)
            if (!isfinite(v[d]))
                return seer_fail_buf(err, errlen, SEER_E_ACTION,
                                     "invalid action for %s: element %u is %g (actions must be "
                                     "finite)",
                                     agent_label(rt, i, a, who, sizeof who), d, (double)v[d]);
        return SEER_OK;
    }
    const int32_t *v = act;
    if (g->kind == SEER_ACTION_DISCRETE) {
        if (v[0] < 0 || v[0] >= g->action_n)
            return seer_fail_buf(err, errlen, SEER_E_ACTION,
                                 "invalid action for %s: %d is outside [0, %d)",
                                 agent_label(rt, i, a, who, sizeof who), (int)v[0],
                                 (int)g->action_n);
        if (mask && g->mask_len && !mask[v[0]])
            return seer_fail_buf(err, errlen, SEER_E_ACTION,
                                 "invalid action for %s at step %llu: %d is forbidden by its "
                                 "action mask (allowed: the choices whose mask entry is 1)",
                                 agent_label(rt, i, a, who, sizeof who), step, (int)v[0]);
        return SEER_OK;
    }
    uint32_t off = 0; /* multi-discrete: component j's choices start at off */
    for (uint32_t j = 0; j < g->action_dim; j++) {
        if (v[j] < 0 || v[j] >= g->nvec[j])
            return seer_fail_buf(err, errlen, SEER_E_ACTION,
                                 "invalid action for %s: component %u is %d, outside [0, %d)",
                                 agent_label(rt, i, a, who, sizeof who), j, (int)v[j],
                                 (int)g->nvec[j]);
        if (mask && g->mask_len && !mask[off + (uint32_t)v[j]])
            return seer_fail_buf(err, errlen, SEER_E_ACTION,
                                 "invalid action for %s at step %llu: component %u is %d, which "
                                 "its action mask forbids",
                                 agent_label(rt, i, a, who, sizeof who), step, j, (int)v[j]);
        off += (uint32_t)g->nvec[j];
    }
    return SEER_OK;
}

/* The actions of every live agent of instance i: the one rule of a valid
 * action, for a step (validate_actions) and for seer_runtime_check_actions.
 * Reads instance i's rows of the buffers and its record only. */
static int check_instance_actions(const seer_runtime *rt, uint32_t i, char *err, size_t errlen)
{
    if (rt->grp.simple)
        return check_simple(rt, i, err, errlen);
    const size_t A = rt->sz.num_agents;
    for (uint32_t gi = 0; gi < rt->grp.n; gi++) {
        const seer_rt_group *g = &rt->grp.g[gi];
        for (uint32_t a = g->first; a < g->first + g->count; a++) {
            if (!rt->buf.alive[i * A + a])
                continue;
            int rc = check_one(rt, g, i, a, err, errlen);
            if (rc != SEER_OK)
                return rc;
        }
    }
    return SEER_OK;
}

/* Validate (and clip) the actions of every live agent of the selected
 * instances.  Touches no state: box actions are clipped only once every
 * action passed. */
static int validate_actions(seer_runtime *rt)
{
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        int rc = check_instance_actions(rt, rt->call.sel[k], rt->err, sizeof rt->err);
        if (rc != SEER_OK)
            return rc;
    }
    const size_t A = rt->sz.num_agents, D = rt->sz.action_dim;
    if (rt->grp.simple) {
        if (rt->sz.action_kind != SEER_ACTION_BOX)
            return SEER_OK;
        for (uint32_t k = 0; k < rt->call.nsel; k++) {
            float *v = (float *)rt->buf.actions + (size_t)rt->call.sel[k] * A * D;
            for (size_t j = 0; j < A * D; j++) {
                if (v[j] < rt->sz.action_low)
                    v[j] = rt->sz.action_low;
                else if (v[j] > rt->sz.action_high)
                    v[j] = rt->sz.action_high;
            }
        }
        return SEER_OK;
    }
    for (uint32_t gi = 0; gi < rt->grp.n; gi++) {
        const seer_rt_group *g = &rt->grp.g[gi];
        if (g->kind != SEER_ACTION_BOX)
            continue;
        for (uint32_t k = 0; k < rt->call.nsel; k++)
            for (uint32_t a = g->first; a < g->first + g->count; a++) {
                float *v = (float *)rt->buf.actions + ((size_t)rt->call.sel[k] * A + a) * D;
                for (uint32_t d = 0; d < g->action_dim; d++) {
                    if (v[d] < g->low)
                        v[d] = g->low;
                    else if (v[d] > g->high)
                        v[d] = g->high;
                }
            }
    }
    return SEER_OK;
}

/* Whether instance i may step: reset, no call failed since, a live agent
 * left (message to err; fail_msg: the failed call's message, or NULL). */
static int instance_steppable(const seer_runtime *rt, uint32_t i, const char *fail_msg,
                              char *err, size_t errlen)
{
    size_t A = rt->sz.num_agents;
    if (!rt->inst[i].ready) {
        if (rt->inst[i].failed)
            return seer_fail_buf(err, errlen, SEER_E_ORDER,
                                 "instance %u needs a reset: its last call failed%s%s", i,
                                 fail_msg ? ": " : "", fail_msg ? fail_msg : "");
        return seer_fail_buf(err, errlen, SEER_E_ORDER, "instance %u was stepped before reset",
                             i);
    }
    int any = 0;
    for (size_t a = 0; a < A && !any; a++)
        any = rt->buf.alive[i * A + a];
    if (!any)
        return seer_fail_buf(err, errlen, SEER_E_ORDER,
                             "instance %u has no live agent left (episode over); reset it first",
                             i);
    return SEER_OK;
}

/* Every selected instance may step. */
static int check_steppable(seer_runtime *rt)
{
    for (uint32_t k = 0; k < rt->call.nsel; k++) {
        int rc = instance_steppable(rt, rt->call.sel[k], rt->fail_msg, rt->err, sizeof rt->err);
        if (rc)
            return rc;
    }
    return SEER_OK;
}

int seer_runtime_check_actions(const seer_runtime *rt, const uint8_t *mask, char *err,
                               size_t errlen)
{
    if (!mask)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "mask must not be NULL");
    for (uint32_t i = 0; i < rt->B; i++) {
        if (!mask[i])
            continue;
        /* not rt->fail_msg: a call running meanwhile may be writing it */
        int rc = instance_steppable(rt, i, NULL, err, errlen);
        if (rc == SEER_OK)
            rc = check_instance_actions(rt, i, err, errlen);
        if (rc)
            return rc;
    }
    return SEER_OK;
}

/* Set each selected instance's step boundary.  Instances whose windows
 * could not advance go last in the selection (seer_step_serially, in
 * partition.c); returns how many come first, for the parallel call. */
static uint32_t set_boundaries(seer_runtime *rt)
{
    uint32_t par = rt->call.nsel;
    for (uint32_t k = 0; k < par;) {
        seer_inst *in = &rt->inst[rt->call.sel[k]];
        in->boundary = (seer_time)(in->step + 1) * rt->sz.step_duration;
        if (rt->executor == SEER_EXECUTOR_PARALLEL && rt->part.n > 1 &&
            !(in->boundary + rt->sz.lookahead > in->boundary)) {
            uint32_t t = rt->call.sel[k];
            rt->call.sel[k] = rt->call.sel[par - 1];
            rt->call.sel[par - 1] = t;
            par--;
        } else {
            k++;
        }
    }
    return par;
}

static int step_now(seer_runtime *rt, const uint8_t *mask);

/* A step of a long alone stretch, on the serial executor's queues
 * (company.c): counted as the pool's stretch steps are. */
static int stretch_step_serially(seer_runtime *rt)
{
    const uint64_t t0 = seer_clock_ns(), events = rt->stats.events;
    const int rc = seer_serial_run(rt, JOB_STEP);
    if (rc == SEER_OK) {
        seer_pool_call call = {.step = 1, .threads = 1, .events = rt->stats.events - events};
        call.caller_events = call.events;
        const uint64_t t1 = seer_clock_ns();
        call.ns = t1 > t0 ? t1 - t0 : 1;
        seer_pool_alone_after_call_host(rt, &call);
    }
    return rc;
}

int seer_runtime_step(seer_runtime *rt, const uint8_t *mask)
{
    const uint64_t t0 = seer_clock_ns();
    hold_call_host();
    const int rc = step_now(rt, mask);
    release_call_host();
    if (rc == SEER_OK)
        seer_pool_note_step_host(rt, t0, seer_clock_ns());
    return rc;
}

static int step_now(seer_runtime *rt, const uint8_t *mask)
{
    int rc = seer_call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    rc = seer_pool_settle_host(rt);
    if (rc != SEER_OK)
        return rc;
    seer_pool_alone_queues_host(rt); /* a long stretch's queues (company.c) */
    if (select_instances(rt, mask) == 0)
        return SEER_OK;
    rc = check_steppable(rt);
    if (rc)
        return rc;
    rc = validate_actions(rt);
    if (rc)
        return rc;
    const uint32_t par = set_boundaries(rt);
    /* the optimistic executor speculates, or runs conservative windows where
     * the lookahead makes them wide (seer_opt_speculates); its mailboxes and
     * logs are sized before anything changes */
    const int spec = rt->executor == SEER_EXECUTOR_OPTIMISTIC && rt->part.n > 1 &&
                     seer_opt_speculates(rt);
    if (spec && (rc = seer_opt_prepare(rt)) != SEER_OK)
        return rc;
    if (rt->mem.order_in && rt->executor == SEER_EXECUTOR_SERIAL && --rt->mem.order_in == 0)
        seer_event_tidy_serial_host(rt, 0); /* a while after a switch to it (threads.c) */
    else if (rt->executor != SEER_EXECUTOR_SERIAL)
        seer_event_order_pool_when_due_host(rt); /* a while after a switch, then now and then */
    if (rt->executor != SEER_EXECUTOR_SERIAL || rt->pool.alone.serial)
        seer_pool_alone_before_step_host(rt); /* a stretch's first step (company.c) */
    rt->stats.steps++;
    rt->in_call = 1;
    release_call_host(); /* the hooks run */
    if (rt->pool.alone.serial) {
        rc = stretch_step_serially(rt);
    } else if (rt->executor == SEER_EXECUTOR_SERIAL) {
        rc = seer_serial_run(rt, JOB_STEP);
    } else if (spec) {
        /* instances whose speculation was abandoned come last in the
         * selection (seer_opt_finish_completer): their steps run serially */
        const uint32_t all = rt->call.nsel;
        rc = seer_opt_run(rt);
        rt->call.nsel = all;
        uint32_t k = all - rt->opt.abandoned;
        for (; k < all && rc == SEER_OK; k++) {
            const uint32_t i = rt->call.sel[k];
            rc = seer_step_serially(rt, i, 0, seer_opt_take_abandoned(rt, i));
        }
        /* A failed call (in a boundary phase, or one instance's serial
         * step) leaves the other abandoned speculations as they were: drop
         * them, the instances fail anyway -- their logs point into arenas
         * the next speculative step reuses. */
        for (; k < all; k++)
            seer_opt_drop(rt, rt->call.sel[k]);
    } else {
        const uint32_t all = rt->call.nsel;
        if (par) {
            rt->call.nsel = par;
            rc = seer_parallel_run(rt, JOB_STEP);
            rt->call.nsel = all;
        }
        for (uint32_t k = par; k < all && rc == SEER_OK; k++)
            rc = seer_step_serially(rt, rt->call.sel[k], 1, 0);
    }
    if (rc)
        hold_call_host(); /* the failure's release of the event memory */
    rt->in_call = 0;
    if (rc)
        fail_selected(rt);
    return rc;
}

/* ---- queries between calls ---------------------------------------------------- */

static int check_instance(seer_runtime *rt, uint32_t instance)
{
    if (instance >= rt->B) {
        seer_fail(rt,
                  "instance %u out of range (num_instances=%u)", instance, rt->B);
        return SEER_E_ARG;
    }
    return SEER_OK;
}

int seer_runtime_step_index(seer_runtime *rt, uint32_t instance, uint64_t *out)
{
    if (check_instance(rt, instance))
        return SEER_E_ARG;
    *out = rt->inst[instance].step;
    return SEER_OK;
}

int seer_runtime_entity_events(seer_runtime *rt, uint32_t instance, uint64_t *out)
{
    if (check_instance(rt, instance))
        return SEER_E_ARG;
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        out[e] = rt->inst[instance].recs[e].events;
    return SEER_OK;
}

int seer_runtime_pending_events(seer_runtime *rt, uint32_t instance, uint64_t *out)
{
    if (check_instance(rt, instance))
        return SEER_E_ARG;
    const seer_inst *in = &rt->inst[instance];
    /* Between calls every pending event is in a queue (outboxes are
     * merged before a call ends). */
    uint64_t n = in->queue.n;
    for (uint32_t p = 0; p < rt->part.n; p++)
        n += in->parts[p].n;
    *out = n;
    return SEER_OK;
}

int seer_runtime_entity_states(seer_runtime *rt, uint32_t instance, void *out)
{
    if (check_instance(rt, instance))
        return SEER_E_ARG;
    const seer_inst *in = &rt->inst[instance];
    unsigned char *o = out;
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        memcpy(o + (size_t)e * rt->sz.entity_size, seer_inst_state(rt, in, e),
               rt->sz.entity_size);
    return SEER_OK;
}

/* Checking mode: global_state writes into a private copy of the row
 * (seer_check_out_row) followed by guard bytes, which must be as they were
 * after it (a write past the row lands past the caller's buffer), and
 * fences, where a write far past it faults; the row then goes to `out`.
 * Host thread, inside seer_check_begin_call/end_call. */
static void check_state_call(seer_ctx *c, float *out)
{
    seer_runtime *rt = c->rt;
    const size_t len = rt->sz.state_dim * sizeof(float);
    unsigned char *mem = seer_check_out_row(rt, SEER_OUT_STATE, len, 0, len); /* the caller's */
    (void)seer_check_run(c, SEER_HOOK_STATE, &(seer_hook_args){.fout = (float *)(void *)mem});
    const size_t b = c->w->err ? SIZE_MAX : seer_check_out_guard(rt, SEER_OUT_STATE, len);
    if (b != SIZE_MAX)
        seer_worker_error_local(
            c->w, SEER_E_ISOLATION,
            "contract violation (isolation) in model '%s': global_state of instance %u "
            "wrote byte %zu past the end of its state row (%zu bytes): global_state "
            "writes only out[0..state_dim-1] (state_dim=%u); past the row a plain run "
            "writes into memory that is not the model's",
            rt->model->name, c->inst_idx, b, len, rt->sz.state_dim);
    memcpy(out, mem, len);
}

int seer_runtime_global_state(seer_runtime *rt, uint32_t instance, float *out)
{
    if (check_instance(rt, instance))
        return SEER_E_ARG;
    memset(out, 0, rt->sz.state_dim * sizeof(float));
    if (!rt->model->global_state)
        return SEER_OK;
    if (!rt->inst[instance].ready) {
        if (rt->inst[instance].failed) /* reset once: what it needs now is why */
            seer_fail(rt, "state: instance %u needs a reset: its last call failed: %s",
                      instance, rt->fail_msg);
        else
            seer_fail(rt, "state: instance %u has not been reset", instance);
        return SEER_E_ORDER;
    }
    if (!rt->pool.workers) { /* broken: the pool, worker 0 included, is gone */
        seer_fail(rt, "this runtime cannot run any more (its worker pool could not be "
                      "restarted: out of memory or threads); close it and create a new one");
        return SEER_E_NOMEM;
    }
    seer_ctx c;
    seer_ctx_setup(&c, rt, &rt->pool.workers[0], instance, PHASE_BOUNDARY);
    c.now = (seer_time)c.inst->step * rt->sz.step_duration;
    if (SEER_CHECKING(rt)) {
        seer_check_begin_call(rt);
        check_state_call(&c, out);
        seer_check_end_call(rt);
    } else {
        rt->model->global_state(&c, out);
    }
    if (c.w->err) {
        int code = c.w->err;
        memcpy(rt->err, c.w->msg, sizeof rt->err);
        c.w->err = 0;
        return code;
    }
    return SEER_OK;
}

void seer_runtime_stats(const seer_runtime *rt, seer_stats *out)
{
    out->events = rt->stats.events;
    out->windows = rt->stats.windows;
    out->steps = rt->stats.steps;
    uint64_t refills = rt->stats.refills;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++)
        refills += rt->pool.workers[t].pool.refills + rt->pool.workers[t].cross.refills;
    out->pool_refills = refills;
    /* Under the reserve's lock, as every reader of the lists (see
     * release_failed above).  The runtime itself is never const
     * (seer_runtime_create). */
    pthread_mutex_t *lock = (pthread_mutex_t *)&rt->mem.lock;
    pthread_mutex_lock(lock);
    out->pool_events = rt->mem.pool_events;
    pthread_mutex_unlock(lock);
    out->serial_fallbacks = rt->stats.serial_fallbacks;
    out->rollbacks = rt->opt.rollbacks;
    out->events_rolled_back = rt->opt.rolled_back;
    out->anti_messages = rt->opt.anti;
    out->serial_steps = rt->opt.serial_steps;
    out->log_bytes_peak = rt->opt.log_peak;
    out->alone_windows = rt->stats.alone_windows;
    out->alone_steps = rt->pool.alone.steps;
}

const char *seer_runtime_event_name(const seer_runtime *rt, uint32_t type)
{
    return seer_model_event_name(rt->model, type);
}
