/*
 * phases.c -- the operations a call is made of, one item at a time, shared
 * by both executors: an entity's clear and init (reset), an agent's act, an
 * instance's boundary hook, an agent's observe, an entity's publish, and
 * the end of an instance's boundary.  The serial executor runs them in order
 * on the host thread (serial.c); the parallel executor's workers run them
 * on the items of the phases they claim (pool.c).  Each runs on the
 * thread of the worker it is given, which holds the item for the phase, and
 * records the first error in that worker's slot.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "check.h"
#include "ctx.h"
#include "errors.h"
#include "phases.h"
#include "runtime.h"

/* After every handler: turn a non-zero return into an error. */
int seer_after_handler(seer_ctx *c, int rc, const char *what)
{
    if (__builtin_expect(rc != 0, 0) && !c->w->err) {
        char ev[64] = "";
        if (c->phase == PHASE_EVENT)
            snprintf(ev, sizeof ev, " (event type %u, %s)", c->cur_type,
                     seer_model_event_name(c->rt->model, c->cur_type));
        seer_worker_error_local(c->w, SEER_E_MODEL,
                                "model '%s': %s handler%s for entity %u of instance %u "
                                "returned %d at t=%.17g",
                                c->rt->model->name, what, ev, c->self, c->inst_idx, rc, c->now);
    }
    return c->w->err;
}

void seer_clear_entity(seer_worker *w, seer_inst *in, uint32_t e, uint64_t seed)
{
    seer_entity_rec *r = &in->recs[e];
    r->seq = 0;
    r->events = 0;
    seer_rng_seed_state(seed, e, r->rng);
    seer_runtime *rt = w->rt;
    memset(seer_inst_state(rt, in, e), 0, rt->sz.entity_size);
    memset(seer_inst_snapshot(rt, in, e), 0, rt->sz.snapshot_size);
}

int seer_init_entity(seer_worker *w, uint32_t inst, uint32_t e)
{
    seer_runtime *rt = w->rt;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, inst, PHASE_INIT);
    seer_ctx_enter_entity(&c, e);
    if (!rt->model->init)
        return SEER_OK;
    void *st = seer_inst_state(rt, c.inst, e);
    int rc = SEER_CHECKING(rt)
                 ? seer_check_run(&c, SEER_HOOK_INIT, &(seer_hook_args){.entity = st})
                 : rt->model->init(&c, st);
    return seer_after_handler(&c, rc, "init");
}

int seer_act_agent(seer_worker *w, uint32_t inst, uint32_t a)
{
    seer_runtime *rt = w->rt;
    size_t A = rt->sz.num_agents;
    if (!rt->buf.alive[inst * A + a] || !rt->model->act)
        return SEER_OK;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, inst, PHASE_ACT);
    seer_ctx_enter_entity(&c, a);
    c.now = (seer_time)c.inst->step * rt->sz.step_duration;
    const unsigned char *act = (const unsigned char *)rt->buf.actions +
                               ((size_t)inst * A + a) * rt->sz.action_dim * 4u;
    void *st = seer_inst_state(rt, c.inst, a);
    int rc = SEER_CHECKING(rt)
                 ? seer_check_run(&c, SEER_HOOK_ACT, &(seer_hook_args){.entity = st, .cptr = act})
                 : rt->model->act(&c, st, act);
    return seer_after_handler(&c, rc, "act");
}

void seer_boundary_instance(seer_worker *w, uint32_t inst)
{
    seer_runtime *rt = w->rt;
    if (!rt->model->boundary)
        return;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, inst, PHASE_BOUNDARY);
    c.now = c.inst->boundary;
    if (SEER_CHECKING(rt))
        (void)seer_check_run(&c, SEER_HOOK_BOUNDARY, &(seer_hook_args){.entity = c.inst->idata});
    else
        rt->model->boundary(&c, c.inst->idata);
}

/* A mask row the hook wrote: 0/1 bytes, and at least one allowed choice in
 * every component (else the call fails: the agent could not act). */
static void check_mask_row(seer_ctx *c, const seer_rt_group *g, uint8_t *row, uint32_t a)
{
    uint32_t off = 0;
    const uint32_t parts = g->kind == SEER_ACTION_MULTI_DISCRETE ? g->action_dim : 1;
    for (uint32_t j = 0; j < parts; j++) {
        const uint32_t len = g->kind == SEER_ACTION_MULTI_DISCRETE ? (uint32_t)g->nvec[j]
                                                                   : (uint32_t)g->action_n;
        uint8_t any = 0;
        for (uint32_t k = off; k < off + len; k++) {
            row[k] = row[k] ? 1 : 0;
            any |= row[k];
        }
        if (!any && !c->w->err) {
            char comp[48] = "";
            if (g->kind == SEER_ACTION_MULTI_DISCRETE)
                snprintf(comp, sizeof comp, " in component %u", j);
            seer_worker_error_local(c->w, SEER_E_MODEL,
                                    "model '%s': action_mask of agent %u ('%s_%u' of group '%s') "
                                    "of instance %u allows no choice%s at step %llu: an agent "
                                    "that acts next needs at least one (end it with terminated "
                                    "or truncated instead)",
                                    c->rt->model->name, a, g->name, a - g->first, g->name,
                                    c->inst_idx, comp, (unsigned long long)c->inst->step);
        }
        off += len;
    }
}

/* Checking mode: the hook runs with what observe may not touch protected,
 * on a copy of the whole mask buffer in a slot of its own
 * (seer_check_out_row: guard bytes after it, fences around it), and must
 * leave every other agent's row as it was; its own row then goes back to
 * the host's buffer. */
static void check_mask_call(seer_ctx *c, uint8_t *row, uint32_t a)
{
    seer_runtime *rt = c->rt;
    const size_t bytes = seer_buffer_bytes(&rt->sz, rt->B, SEER_BUF_MASK);
    const size_t own = (size_t)(row - rt->buf.mask);
    uint8_t *copy = seer_check_out_row(rt, SEER_OUT_MASK, bytes, 0, bytes); /* all of it */
    memcpy(copy, rt->buf.mask, bytes);
    (void)seer_check_run(c, SEER_HOOK_MASK, &(seer_hook_args){.type = a, .entity = copy + own});
    /* its own row's bytes past its group's choices (a smaller group's row
     * is padded to mask_dim): as they were */
    const seer_rt_group *g = &rt->grp.g[rt->grp.of_agent[a]];
    for (size_t k = own + g->mask_len; k < own + rt->sz.mask_dim && !c->w->err; k++)
        if (copy[k] != rt->buf.mask[k])
            seer_worker_error_local(
                c->w, SEER_E_ISOLATION,
                "contract violation (isolation) in model '%s': action_mask for agent %u of "
                "instance %u wrote byte %zu of its mask row, past its group's %u choices "
                "(group '%s'; rows are padded to the largest group's mask_dim=%u bytes): a "
                "mask hook writes only its own group's choices",
                rt->model->name, a, c->inst_idx, k - own, g->mask_len, g->name,
                rt->sz.mask_dim);
    for (size_t k = 0; k < bytes && !c->w->err; k++) {
        if (k == own) {
            k += rt->sz.mask_dim - 1;
            continue;
        }
        if (copy[k] != rt->buf.mask[k]) {
            const size_t r = k / rt->sz.mask_dim;
            seer_worker_error_local(
                c->w, SEER_E_ISOLATION,
                "contract violation (isolation) in model '%s': action_mask for agent %u of "
                "instance %u wrote byte %zu of agent %zu's mask row (instance %zu): a mask "
                "hook writes only its own row (mask_dim=%u bytes)",
                rt->model->name, a, c->inst_idx, k % rt->sz.mask_dim, r % rt->sz.num_agents,
                r / rt->sz.num_agents, rt->sz.mask_dim);
        }
    }
    const size_t b = c->w->err ? SIZE_MAX : seer_check_out_guard(rt, SEER_OUT_MASK, bytes);
    if (b != SIZE_MAX)
        seer_worker_error_local(
            c->w, SEER_E_ISOLATION,
            "contract violation (isolation) in model '%s': action_mask for agent %u of "
            "instance %u wrote byte %zu past the end of the action masks (%zu bytes, every "
            "agent's mask row of every instance): a mask hook writes only its own row "
            "(mask_dim=%u bytes); a plain run writes into memory that is not the model's",
            rt->model->name, a, c->inst_idx, b, bytes, rt->sz.mask_dim);
    memcpy(row, copy + own, rt->sz.mask_dim);
}

/* The mask row of agent a (models with masks): all 1, then, for an agent
 * that acts next, the model's action_mask. */
static void mask_agent(seer_ctx *c, size_t i, uint32_t a, int acts_next)
{
    seer_runtime *rt = c->rt;
    uint8_t *row = rt->buf.mask + i * rt->sz.mask_dim;
    memset(row, 1, rt->sz.mask_dim);
    const seer_rt_group *g = &rt->grp.g[rt->grp.of_agent[a]];
    if (!acts_next || !g->mask_len)
        return;
    if (SEER_CHECKING(rt))
        check_mask_call(c, row, a);
    else
        rt->model->action_mask(c, a, row);
    check_mask_row(c, g, row, a);
}

/* Checking mode: observe writes into private copies of its agent's output
 * rows (seer_check_out_row), each followed by guard bytes which must be as
 * they were after it (a write past a row lands in the next agent's, or, for
 * the last agent, past the host's buffer), and fences, where a write far
 * past a row faults; the rows then go where they belong. */

static void check_observe_call(seer_ctx *c, uint32_t a, const seer_output *out)
{
    seer_runtime *rt = c->rt;
    const seer_sizes *sz = &rt->sz;
    /* the agent's group's rows (the host's are the largest group's) */
    const seer_rt_group *g = &rt->grp.g[rt->grp.of_agent[a]];
    const size_t len[5] = {g->obs_dim * sizeof(float), g->info_dim * sizeof(double),
                           sizeof(float), 1, 1};
    const size_t full[2] = {sz->obs_dim * sizeof(float), sz->info_dim * sizeof(double)};
    static const char *const what[5] = {"obs", "info", "reward", "terminated", "truncated"};
    /* where each row lies in the host's buffer: a write past it that a
     * plain run would make past the buffer's end (seer_check_out_far) is
     * said to be (the checker then runs no plain run: seer_env/check/
     * runner.py reads the words) */
    const unsigned char *host[5] = {(void *)out->obs, (void *)out->info, (void *)out->reward,
                                    out->terminated, out->truncated};
    const unsigned char *base[5] = {(void *)rt->buf.obs, (void *)rt->buf.info,
                                    (void *)rt->buf.reward, rt->buf.terminated,
                                    rt->buf.truncated};
    static const int which[5] = {SEER_BUF_OBS, SEER_BUF_INFO, SEER_BUF_REWARD,
                                 SEER_BUF_TERMINATED, SEER_BUF_TRUNCATED};
    unsigned char *row[5];
    for (int k = 0; k < 5; k++)
        row[k] = seer_check_out_row(rt, SEER_OUT_OBS + k, len[k], (size_t)(host[k] - base[k]),
                                    seer_buffer_bytes(sz, rt->B, which[k]));
    seer_output mine = {.obs = (float *)(void *)row[0], .info = (double *)(void *)row[1],
                        .reward = (float *)(void *)row[2], .terminated = row[3],
                        .truncated = row[4]};
    (void)seer_check_run(c, SEER_HOOK_OBSERVE, &(seer_hook_args){.type = a, .out = &mine});
    for (int k = 0; k < 5 && !c->w->err; k++) {
        const size_t b = seer_check_out_guard(rt, SEER_OUT_OBS + k, len[k]);
        if (b == SIZE_MAX)
            continue;
        seer_worker_error_local(
            c->w, SEER_E_ISOLATION,
            "contract violation (isolation) in model '%s': observe for agent %u of "
            "instance %u wrote byte %zu past the end of its %s row (%zu bytes): "
            "observe writes only its own agent's obs[0..obs_dim-1] (obs_dim=%u), "
            "*reward, *terminated, *truncated and info[0..info_dim-1] (info_dim=%u); "
            "%s",
            rt->model->name, a, c->inst_idx, b, what[k], len[k], g->obs_dim, g->info_dim,
            k < 2 && len[k] + b < full[k]
                ? "a plain run writes it into its row's padding (the largest group's row "
                  "is longer)"
            : seer_check_out_far(rt, SEER_OUT_OBS + k, 1, b)
                ? "past the last row: a plain run writes into memory that is not the model's"
                : "a plain run writes it into another agent's row");
    }
    memcpy(out->obs, mine.obs, len[0]);
    memcpy(out->info, mine.info, len[1]);
    *out->reward = *mine.reward;
    *out->terminated = *mine.terminated;
    *out->truncated = *mine.truncated;
}

void seer_observe_agent(seer_worker *w, uint32_t inst, uint32_t a)
{
    seer_runtime *rt = w->rt;
    const seer_sizes *sz = &rt->sz;
    size_t i = (size_t)inst * sz->num_agents + a;
    seer_output out = {
        .obs = rt->buf.obs + i * sz->obs_dim,
        .reward = rt->buf.reward + i,
        .terminated = rt->buf.terminated + i,
        .truncated = rt->buf.truncated + i,
        .info = rt->buf.info + i * sz->info_dim,
    };
    memset(out.obs, 0, sz->obs_dim * sizeof(float));
    memset(out.info, 0, sz->info_dim * sizeof(double));
    *out.reward = 0.0f;
    *out.terminated = 0;
    *out.truncated = 0;
    if (!rt->buf.alive[i]) {
        rt->buf.active[i] = 0;
        if (sz->mask_dim)
            memset(rt->buf.mask + i * sz->mask_dim, 1, sz->mask_dim);
        return;
    }
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, inst, PHASE_BOUNDARY);
    seer_ctx_enter_entity(&c, a);
    c.now = c.inst->boundary;
    if (SEER_CHECKING(rt))
        check_observe_call(&c, a, &out);
    else
        rt->model->observe(&c, a, &out);
    *out.terminated = *out.terminated ? 1 : 0;
    *out.truncated = *out.truncated ? 1 : 0;
    if (c.inst->resetting) {
        *out.reward = 0.0f;
        *out.terminated = 0;
        *out.truncated = 0;
    } else if (rt->max_cycles && c.inst->step + 1 >= rt->max_cycles) {
        *out.truncated = 1;
    }
    rt->buf.active[i] = 1;
    if (sz->mask_dim)
        mask_agent(&c, i, a, !*out.terminated && !*out.truncated);
}

void seer_publish_entity(seer_worker *w, uint32_t inst, uint32_t e)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    if (rt->model->publish && rt->sz.snapshot_size) {
        seer_ctx c;
        seer_ctx_setup(&c, rt, w, inst, PHASE_BOUNDARY);
        seer_ctx_enter_entity(&c, e);
        c.now = in->boundary;
        void *rec = seer_inst_snapshot(rt, in, e);
        if (SEER_CHECKING(rt))
            (void)seer_check_run(&c, SEER_HOOK_PUBLISH, &(seer_hook_args){
                                     .entity = rec, .cptr = seer_inst_state(rt, in, e)});
        else
            rt->model->publish(&c, seer_inst_state(rt, in, e), rec);
    }
    if (e < rt->sz.num_agents) {
        size_t i = (size_t)inst * rt->sz.num_agents + e;
        if (rt->buf.terminated[i] || rt->buf.truncated[i])
            rt->buf.alive[i] = 0;
    }
}

void seer_finish_instance(seer_runtime *rt, uint32_t inst)
{
    seer_inst *in = &rt->inst[inst];
    if (!in->resetting)
        in->step++;
    in->resetting = 0;
}

/* ---- the host buffers' layout ---------------------------------------------- */

/* Host buffer `which`: values per agent and bytes per value -- the one
 * layout seer_buffer_bytes (what is allocated), the phases that write the
 * rows and the estimate (create.c) share. */
void seer_buffer_layout(const seer_sizes *sz, int which, size_t *values, size_t *bytes)
{
    switch (which) {
    case SEER_BUF_ACTIONS: *values = sz->action_dim, *bytes = 4; return; /* int32 / float32 */
    case SEER_BUF_OBS: *values = sz->obs_dim, *bytes = sizeof(float); return;
    case SEER_BUF_REWARD: *values = 1, *bytes = sizeof(float); return;
    case SEER_BUF_INFO: *values = sz->info_dim, *bytes = sizeof(double); return;
    case SEER_BUF_MASK: *values = sz->mask_dim, *bytes = 1; return;
    default: *values = 1, *bytes = 1; return; /* the uint8 flags */
    }
}

size_t seer_buffer_bytes(const seer_sizes *sz, uint32_t B, int which)
{
    size_t values, bytes;
    seer_buffer_layout(sz, which, &values, &bytes);
    return (size_t)B * sz->num_agents * values * bytes;
}
