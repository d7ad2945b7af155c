/*
 * ctx.c -- what a handler calls (seer.h): the accessors of its context,
 * seer_schedule with the contract's checks, and seer_fail_step.  Every
 * function runs on the thread running the handler, with the context that
 * thread set up (ctx.h: seer_ctx_setup); what they write -- the
 * entity's record, the queue of its partition or instance, the thread's own
 * outboxes, free list and error slot -- belongs to that thread for the
 * phase.  The random draws (seer_rng_*) are in rng.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "ctx.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "runtime.h"
#include "squeue.h"

/* ---- accessors ------------------------------------------------------------- */

seer_time seer_now(const seer_ctx *ctx) { return ctx->now; }
uint32_t seer_self(const seer_ctx *ctx) { return ctx->self; }
uint32_t seer_instance(const seer_ctx *ctx) { return ctx->inst_idx; }
uint64_t seer_step_index(const seer_ctx *ctx) { return ctx->inst->step; }
uint64_t seer_seed(const seer_ctx *ctx) { return ctx->inst->seed; }
const void *seer_config(const seer_ctx *ctx) { return ctx->rt->config; }
const seer_sizes *seer_model_sizes(const seer_ctx *ctx) { return &ctx->rt->sz; }
const void *seer_instance_data(const seer_ctx *ctx) { return ctx->inst->idata; }

const void *seer_snapshot(const seer_ctx *ctx, uint32_t entity)
{
    if (entity >= ctx->rt->sz.num_entities)
        return NULL;
    return seer_inst_snapshot(ctx->rt, ctx->inst, entity);
}

const void *seer_entity_state(const seer_ctx *ctx, uint32_t entity)
{
    if (ctx->phase != PHASE_BOUNDARY || entity >= ctx->rt->sz.num_entities)
        return NULL;
    return seer_inst_state(ctx->rt, ctx->inst, entity);
}

int seer_agent_alive(const seer_ctx *ctx, uint32_t agent)
{
    if (agent >= ctx->rt->sz.num_agents)
        return 0;
    return ctx->rt->buf.alive[(size_t)ctx->inst_idx * ctx->rt->sz.num_agents + agent] != 0;
}

uint32_t seer_agent_group(const seer_ctx *ctx, uint32_t agent)
{
    if (agent >= ctx->rt->sz.num_agents)
        return UINT32_MAX;
    return ctx->rt->grp.of_agent[agent];
}

uint32_t seer_group_first(const seer_ctx *ctx, uint32_t group)
{
    if (group >= ctx->rt->grp.n)
        return UINT32_MAX;
    return ctx->rt->grp.g[group].first;
}

uint64_t seer_entity_events(const seer_ctx *ctx, uint32_t entity)
{
    if (ctx->phase != PHASE_BOUNDARY || entity >= ctx->rt->sz.num_entities)
        return 0;
    return ctx->inst->recs[entity].events;
}

/* ---- seer_schedule ---------------------------------------------------------- */

static const char *phase_name(int phase)
{
    switch (phase) {
    case PHASE_INIT: return "init";
    case PHASE_ACT: return "act";
    case PHASE_EVENT: return "handle";
    case PHASE_BOUNDARY: return "boundary";
    default: return "none";
    }
}

static int schedule_violation(seer_ctx *c, int code, uint32_t target, seer_time t,
                              uint32_t type, uint32_t size)
{
    seer_runtime *rt = c->rt;
    const seer_model *m = rt->model;
    char during[96];
    if (c->phase == PHASE_EVENT)
        snprintf(during, sizeof during, "handling event type %u (%s) at t=%.17g",
                 c->cur_type, seer_model_event_name(m, c->cur_type), c->now);
    else
        snprintf(during, sizeof during, "in %s at t=%.17g", phase_name(c->phase), c->now);
    const char *what;
    char detail[160];
    switch (code) {
    case SEER_E_PAST:
        what = "time in the past";
        snprintf(detail, sizeof detail, "t=%.17g < now=%.17g", t, c->now);
        break;
    case SEER_E_LOOKAHEAD:
        what = "cross-entity event inside the lookahead";
        snprintf(detail, sizeof detail, "t=%.17g < now + lookahead = %.17g + %.17g", t,
                 c->now, rt->sz.lookahead);
        break;
    case SEER_E_TARGET:
        what = "unknown target entity";
        snprintf(detail, sizeof detail, "target %u >= num_entities %u (t=%.17g, now=%.17g)",
                 target, rt->sz.num_entities, t, c->now);
        break;
    case SEER_E_PAYLOAD:
        if (size <= rt->sz.payload_size) { /* seer_schedule: a size with no payload */
            what = "NULL payload";
            snprintf(detail, sizeof detail,
                     "payload is NULL with size %u (pass NULL with size 0 for no payload; "
                     "t=%.17g, now=%.17g)",
                     size, t, c->now);
            break;
        }
        what = "payload too large";
        snprintf(detail, sizeof detail, "%u bytes > payload_size %u (t=%.17g, now=%.17g)",
                 size, rt->sz.payload_size, t, c->now);
        break;
    case SEER_E_TIME:
        what = "non-finite event time";
        snprintf(detail, sizeof detail, "t=%g (now=%.17g)", t, c->now);
        break;
    case SEER_E_TYPE:
        what = "unknown event type";
        snprintf(detail, sizeof detail,
                 "type %u >= event_type_count %u (t=%.17g, now=%.17g)", type,
                 m->event_type_count, t, c->now);
        break;
    default:
        what = "schedule outside init/act/handle";
        snprintf(detail, sizeof detail, "t=%.17g, now=%.17g", t, c->now);
        break;
    }
    seer_worker_error_local(c->w, code,
                            "contract violation (%s) in model '%s': entity %u of instance %u, "
                            "%s, scheduled event type %u (%s) for entity %u: %s",
                            what, m->name, c->self, c->inst_idx, during, type,
                            seer_model_event_name(m, type), target, detail);
    return code;
}

/* Payloads are small (tens of bytes): word copies beat a call into libc's
 * memcpy, whose size dispatch was 4% of a PCS step.  The empty asm makes the
 * pointer opaque so the compiler does not turn the loops back into that
 * call. */
static inline void copy_payload(unsigned char *restrict d, const void *restrict src,
                                uint32_t n)
{
    const unsigned char *p = src;
    for (; n >= 8; n -= 8, d += 8, p += 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        memcpy(d, &x, 8);
        __asm__("" : "+r"(d));
    }
    for (; n; n--) {
        *d++ = *p++;
        __asm__("" : "+r"(d));
    }
}

int seer_schedule(seer_ctx *c, uint32_t target, seer_time t, uint32_t type,
                  const void *payload, uint32_t size)
{
    seer_runtime *rt = c->rt;
    int code = SEER_OK;
    if (c->phase != PHASE_INIT && c->phase != PHASE_ACT && c->phase != PHASE_EVENT)
        code = SEER_E_PHASE;
    else if (!isfinite(t))
        code = SEER_E_TIME;
    else if (target >= rt->sz.num_entities)
        code = SEER_E_TARGET;
    else if (size > rt->sz.payload_size || (size && !payload))
        code = SEER_E_PAYLOAD;
    else if (type >= rt->model->event_type_count && rt->model->event_type_count)
        code = SEER_E_TYPE; /* a restore would refuse it (snapshot.c) */
    else if (t < c->now)
        code = SEER_E_PAST;
    else if (target != c->self && t < c->now + rt->sz.lookahead)
        code = SEER_E_LOOKAHEAD;
    if (__builtin_expect(code != SEER_OK, 0))
        return schedule_violation(c, code, target, t, type, size);

    /* A window's event for another partition takes its record from the
     * thread's cross list (events.c says why apart). */
    const int windows = rt->executor != SEER_EXECUTOR_SERIAL && !c->spec;
    const uint32_t pt = windows ? rt->part.of[target] : 0;
    const int cross = windows && pt != rt->part.of[c->self];
    seer_event *ev = seer_event_alloc_from_local(c->w, cross ? &c->w->cross : &c->w->pool);
    if (!ev) {
        seer_worker_error_local(c->w, SEER_E_NOMEM, "out of memory for events (model '%s')",
                                rt->model->name);
        return SEER_E_NOMEM;
    }
    ev->time = t;
    ev->key = ((uint64_t)c->self << SEER_KEY_SEQ_BITS) | c->rec->seq++;
    ev->target = target;
    ev->type = type;
    ev->size = size;
    copy_payload(ev->payload, payload, size);

    int rc;
    if (rt->executor == SEER_EXECUTOR_SERIAL) {
        ev->flags = 0;
        rc = seer_squeue_push_owner(&c->inst->queue, ev);
    } else if (c->spec) {
        /* Optimistic speculation: delivered when the handler returns, by
         * the executor that installed the hook (optimistic.c:
         * seer_opt_schedule_local, which marks it with its epoch). */
        return rt->opt.schedule_local(c, ev);
    } else {
        ev->flags = 0;
        /* Parallel: the scheduling thread owns the source's partition for
         * the whole phase.  Same partition (or a thread that holds every
         * partition of the phase: parallel.c's solo windows): straight into
         * its queue; other partitions: this thread's outbox, merged by the
         * target partition's visitor in the next phase (pool.c). */
        if (!cross || c->solo) {
            rc = seer_squeue_push_owner(&c->inst->parts[pt], ev);
        } else {
            rc = seer_qvec_append_owner(
                &c->w->out[rt->call.out_parity][(size_t)c->inst_idx * rt->part.n + pt],
                seer_qentry_of(ev));
            seer_note_window_min_local(c->w, c->inst_idx, t);
        }
    }
    if (rc != SEER_OK) {
        seer_event_free_local(c->w, ev);
        seer_worker_error_local(c->w, rc, "out of memory for the event queue (model '%s')",
                                rt->model->name);
    }
    return rc;
}

/* ---- a handler failing its call ------------------------------------------ */

int seer_fail_step(seer_ctx *ctx, const char *why)
{
    /* The first error of a worker wins: a handler that fails after a
     * contract violation (or twice) keeps the first message. */
    if (!ctx->w->err) {
        static const char *const what[] = {"a", "init", "act", "handle", "boundary-phase"};
        char ev[96] = "";
        if (ctx->phase == PHASE_EVENT)
            snprintf(ev, sizeof ev, " (event type %u, %s)", ctx->cur_type,
                     seer_model_event_name(ctx->rt->model, ctx->cur_type));
        int ph = ctx->phase >= 0 && ctx->phase <= PHASE_BOUNDARY ? ctx->phase : 0;
        seer_worker_error_local(ctx->w, SEER_E_MODEL,
                                "model '%s': %s handler%s for entity %u of instance %u failed "
                                "at t=%.17g: %s",
                                ctx->rt->model->name, what[ph], ev, ctx->self, ctx->inst_idx,
                                ctx->now, why ? why : "(no reason given)");
    }
    return SEER_E_MODEL;
}
