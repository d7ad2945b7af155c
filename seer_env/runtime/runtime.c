/*
 * runtime.c -- the runtime core: API, contexts, RNG, event memory, the
 * per-phase operations both executors share, and the serial reference
 * executor.  parallel.c adds the worker pool and the parallel executor.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- errors ---------------------------------------------------------- */

void seer_fail(seer_runtime *rt, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->err, sizeof rt->err, fmt, ap);
    va_end(ap);
}

/* Record the first error of this worker in the current call. */
void seer_worker_error(seer_worker *w, int code, const char *fmt, ...)
{
    if (w->err)
        return;
    w->err = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof w->msg, fmt, ap);
    va_end(ap);
}

/* ---- RNG: splitmix64 seeding, xoshiro256** streams ---------------------- */

static inline uint64_t splitmix64_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void seer_rng_seed_state(uint64_t seed, uint32_t entity, uint64_t s[4])
{
    /* One splitmix64 output keyed by (seed, entity) starts the stream's
     * own splitmix64 sequence, which fills the four state words. */
    uint64_t x = seed ^ (0xD1B54A32D192ED03ull * ((uint64_t)entity + 1u));
    uint64_t sm = splitmix64_next(&x);
    for (int i = 0; i < 4; i++)
        s[i] = splitmix64_next(&sm);
    if (!(s[0] | s[1] | s[2] | s[3]))
        s[0] = 1;
}

static inline uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t xoshiro_next(uint64_t s[4])
{
    const uint64_t result = rotl64(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* The stream of the context's entity.  boundary and global_state run for
 * the instance, with no entity and so no stream: a draw there is a contract
 * violation (reported when the call ends) and gets a fixed stand-in state. */
static uint64_t *stream_of(seer_ctx *ctx)
{
    if (__builtin_expect(ctx->rec != NULL, 1))
        return ctx->rec->rng;
    static _Thread_local uint64_t none[4];
    none[0] = 1;
    none[1] = none[2] = none[3] = 0;
    seer_worker_error(ctx->w, SEER_E_PHASE,
                      "contract violation (random draw without an entity) in model '%s': "
                      "seer_rng_* called in the instance-level %s hook of instance %u: only "
                      "init, act, handle, observe and publish have an entity, and with it a "
                      "stream",
                      ctx->rt->model->name, ctx->phase == PHASE_BOUNDARY ? "boundary" : "?",
                      ctx->inst_idx);
    return none;
}

uint64_t seer_rng_u64(seer_ctx *ctx)
{
    return xoshiro_next(stream_of(ctx));
}

double seer_rng_uniform(seer_ctx *ctx)
{
    return ((double)(xoshiro_next(stream_of(ctx)) >> 11) + 0.5) * 0x1.0p-53;
}

double seer_rng_exponential(seer_ctx *ctx, double mean)
{
    return -mean * log(seer_rng_uniform(ctx));
}

uint32_t seer_rng_below(seer_ctx *ctx, uint32_t n)
{
    return (uint32_t)(((xoshiro_next(stream_of(ctx)) >> 32) * (uint64_t)n) >> 32);
}

/* ---- event memory -------------------------------------------------------- */


#define POOL_BATCH 256u
#define POOL_CHUNK 4096u

/* Take up to `want` events from the shared reserve (allocating a chunk when
 * it is empty).  Slow path: a mutex and, rarely, malloc. */
static int pool_take(seer_runtime *rt, seer_worker *w, uint64_t want)
{
    pthread_mutex_lock(&rt->reserve_lock);
    if (rt->reserve_n < want) {
        uint64_t n = want > POOL_CHUNK ? want : POOL_CHUNK;
        if ((double)(rt->pool_events + n) * (double)rt->event_stride >
            (double)rt->memory_limit) {
            pthread_mutex_unlock(&rt->reserve_lock);
            return SEER_E_BUDGET;
        }
        if (rt->nchunks == rt->chunks_cap) {
            size_t cap = rt->chunks_cap ? rt->chunks_cap * 2 : 16;
            void **c = realloc(rt->chunks, cap * sizeof *c);
            if (!c) {
                pthread_mutex_unlock(&rt->reserve_lock);
                return SEER_E_NOMEM;
            }
            rt->chunks = c;
            rt->chunks_cap = cap;
        }
        unsigned char *mem = aligned_alloc(SEER_CACHE_LINE,
                                           seer_round_up(n * rt->event_stride, SEER_CACHE_LINE));
        if (!mem) {
            pthread_mutex_unlock(&rt->reserve_lock);
            return SEER_E_NOMEM;
        }
        rt->chunks[rt->nchunks++] = mem;
        rt->pool_events += n;
        for (uint64_t i = 0; i < n; i++) {
            seer_event *ev = (seer_event *)(void *)(mem + i * rt->event_stride);
            ev->next_free = rt->reserve;
            rt->reserve = ev;
        }
        rt->reserve_n += n;
    }
    for (uint64_t i = 0; i < want; i++) {
        seer_event *ev = rt->reserve;
        rt->reserve = ev->next_free;
        ev->next_free = w->pool.free;
        w->pool.free = ev;
    }
    rt->reserve_n -= want;
    w->pool.nfree += want;
    pthread_mutex_unlock(&rt->reserve_lock);
    return SEER_OK;
}

/* Give events beyond `keep` back to the reserve. */
static void pool_give(seer_runtime *rt, seer_worker *w, uint64_t keep)
{
    if (w->pool.nfree <= keep)
        return;
    pthread_mutex_lock(&rt->reserve_lock);
    while (w->pool.nfree > keep) {
        seer_event *ev = w->pool.free;
        w->pool.free = ev->next_free;
        ev->next_free = rt->reserve;
        rt->reserve = ev;
        rt->reserve_n++;
        w->pool.nfree--;
    }
    pthread_mutex_unlock(&rt->reserve_lock);
}

void seer_pool_balance(seer_worker *w, uint64_t lo, uint64_t hi)
{
    if (w->pool.nfree < lo)
        (void)pool_take(w->rt, w, lo - w->pool.nfree);
    else if (w->pool.nfree > hi)
        pool_give(w->rt, w, hi);
}

seer_event *seer_event_alloc(seer_worker *w)
{
    if (__builtin_expect(w->pool.free == NULL, 0)) {
        w->refills++;
        int rc = pool_take(w->rt, w, POOL_BATCH);
        if (rc != SEER_OK) {
            if (rc == SEER_E_BUDGET)
                seer_worker_error(w, SEER_E_NOMEM,
                                  "the pending events need more than the runtime's memory "
                                  "limit (%.2f GiB, memory_limit): %llu events of %zu bytes "
                                  "are in use; lower the event rate or raise memory_limit",
                                  (double)w->rt->memory_limit / 1073741824.0,
                                  (unsigned long long)w->rt->pool_events,
                                  w->rt->event_stride);
            return NULL;
        }
    }
    seer_event *ev = w->pool.free;
    w->pool.free = ev->next_free;
    w->pool.nfree--;
    /* Handlers often schedule several events in a row, and the free list
     * reaches back to records handled long ago: start loading the next one
     * (its link is read, its header and payload written, by that alloc). */
    __builtin_prefetch(w->pool.free, 1);
    return ev;
}

void seer_event_free(seer_worker *w, seer_event *ev)
{
    ev->next_free = w->pool.free;
    w->pool.free = ev;
    w->pool.nfree++;
}

/* ---- contexts and accessors --------------------------------------------- */

void seer_ctx_setup(seer_ctx *c, seer_runtime *rt, seer_worker *w, uint32_t inst, int phase)
{
    c->rt = rt;
    c->inst = &rt->inst[inst];
    c->w = w;
    c->rec = NULL;
    c->now = 0.0;
    c->inst_idx = inst;
    c->self = 0;
    c->phase = phase;
    c->cur_type = UINT32_MAX;
}

static inline void ctx_entity(seer_ctx *c, uint32_t e)
{
    c->self = e;
    c->rec = &c->inst->recs[e];
}

/* Entity e's state (checking mode: at the end of its pages, so a handler
 * that steps past either end of its struct reaches a neighbour's page). */
static inline void *entity_state(const seer_runtime *rt, const seer_inst *in, uint32_t e)
{
    return in->states + (size_t)e * rt->entity_stride + rt->entity_pad;
}

static inline unsigned char *snapshot_record(const seer_runtime *rt, const seer_inst *in,
                                             uint32_t e)
{
    return in->snapshot + (size_t)e * rt->snapshot_stride + rt->snapshot_pad;
}

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
    return snapshot_record(ctx->rt, ctx->inst, entity);
}

const void *seer_entity_state(const seer_ctx *ctx, uint32_t entity)
{
    if (ctx->phase != PHASE_BOUNDARY || entity >= ctx->rt->sz.num_entities)
        return NULL;
    return entity_state(ctx->rt, ctx->inst, entity);
}

int seer_agent_alive(const seer_ctx *ctx, uint32_t agent)
{
    if (agent >= ctx->rt->sz.num_agents)
        return 0;
    return ctx->rt->alive[(size_t)ctx->inst_idx * ctx->rt->sz.num_agents + agent] != 0;
}

uint64_t seer_entity_events(const seer_ctx *ctx, uint32_t entity)
{
    if (ctx->phase != PHASE_BOUNDARY || entity >= ctx->rt->sz.num_entities)
        return 0;
    return ctx->inst->recs[entity].events;
}

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
        what = "payload too large";
        snprintf(detail, sizeof detail, "%u bytes > payload_size %u (t=%.17g, now=%.17g)",
                 size, rt->sz.payload_size, t, c->now);
        break;
    case SEER_E_TIME:
        what = "non-finite event time";
        snprintf(detail, sizeof detail, "t=%g (now=%.17g)", t, c->now);
        break;
    default:
        what = "schedule outside init/act/handle";
        snprintf(detail, sizeof detail, "t=%.17g, now=%.17g", t, c->now);
        break;
    }
    seer_worker_error(c->w, code,
                 "contract violation (%s) in model '%s': entity %u of instance %u, %s, "
                 "scheduled event type %u (%s) for entity %u: %s",
                 what, m->name, c->self, c->inst_idx, during, type, seer_model_event_name(m, type),
                 target, detail);
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
    else if (size > rt->sz.payload_size)
        code = SEER_E_PAYLOAD;
    else if (t < c->now)
        code = SEER_E_PAST;
    else if (target != c->self && t < c->now + rt->sz.lookahead)
        code = SEER_E_LOOKAHEAD;
    if (__builtin_expect(code != SEER_OK, 0))
        return schedule_violation(c, code, target, t, type, size);

    seer_event *ev = seer_event_alloc(c->w);
    if (!ev) {
        seer_worker_error(c->w, SEER_E_NOMEM, "out of memory for events (model '%s')",
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
        rc = seer_squeue_push(&c->inst->queue, ev);
    } else {
        /* Parallel: the scheduling thread owns the source's partition for
         * the whole phase.  Same partition: straight into its queue; other
         * partitions: this thread's outbox, merged by the target
         * partition's visitor in the next phase (see parallel.c). */
        const uint32_t pt = rt->part_of[target];
        if (pt == rt->part_of[c->self]) {
            rc = seer_squeue_push(&c->inst->parts[pt], ev);
        } else {
            rc = seer_qvec_append(
                &c->w->out[rt->out_parity][(size_t)c->inst_idx * rt->nparts + pt],
                seer_qentry_of(ev));
            double *m = &c->w->local_min[c->inst_idx];
            if (t < *m)
                *m = t;
        }
    }
    if (rc != SEER_OK) {
        seer_event_free(c->w, ev);
        seer_worker_error(c->w, rc, "out of memory for the event queue (model '%s')",
                     rt->model->name);
    }
    return rc;
}

/* After every handler: turn a non-zero return into an error. */
int seer_after_handler(seer_ctx *c, int rc, const char *what)
{
    if (__builtin_expect(rc != 0, 0) && !c->w->err) {
        char ev[64] = "";
        if (c->phase == PHASE_EVENT)
            snprintf(ev, sizeof ev, " (event type %u, %s)", c->cur_type,
                     seer_model_event_name(c->rt->model, c->cur_type));
        seer_worker_error(c->w, SEER_E_MODEL,
                     "model '%s': %s handler%s for entity %u of instance %u returned %d "
                     "at t=%.17g",
                     c->rt->model->name, what, ev, c->self, c->inst_idx, rc, c->now);
    }
    return c->w->err;
}

/* ---- per-phase operations (shared by both executors) ---------------------- */

static void free_event_cb(void *w, seer_event *ev) { seer_event_free(w, ev); }

/* Free every event a queue holds and empty it. */
void seer_squeue_drop(seer_worker *w, seer_squeue *q)
{
    seer_squeue_foreach(q, free_event_cb, w);
    seer_squeue_clear(q);
}

/* Reseed an entity and zero its state and snapshot (its pending events go
 * with its queue). */
void seer_clear_entity(seer_worker *w, seer_inst *in, uint32_t e, uint64_t seed)
{
    seer_entity_rec *r = &in->recs[e];
    r->seq = 0;
    r->events = 0;
    seer_rng_seed_state(seed, e, r->rng);
    seer_runtime *rt = w->rt;
    memset(entity_state(rt, in, e), 0, rt->sz.entity_size);
    memset(snapshot_record(rt, in, e), 0, rt->sz.snapshot_size);
}

int seer_init_entity(seer_worker *w, uint32_t inst, uint32_t e)
{
    seer_runtime *rt = w->rt;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, inst, PHASE_INIT);
    ctx_entity(&c, e);
    if (!rt->model->init)
        return SEER_OK;
    void *st = entity_state(rt, c.inst, e);
    int rc = SEER_CHECKING(rt) ? seer_check_run(&c, SEER_HOOK_INIT, &(seer_hook_args){.entity = st})
                               : rt->model->init(&c, st);
    return seer_after_handler(&c, rc, "init");
}

int seer_act_agent(seer_worker *w, uint32_t inst, uint32_t a)
{
    seer_runtime *rt = w->rt;
    size_t A = rt->sz.num_agents;
    if (!rt->alive[inst * A + a] || !rt->model->act)
        return SEER_OK;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, inst, PHASE_ACT);
    ctx_entity(&c, a);
    c.now = (seer_time)c.inst->step * rt->sz.step_duration;
    const unsigned char *act = (const unsigned char *)rt->actions +
                               ((size_t)inst * A + a) * rt->sz.action_dim * 4u;
    void *st = entity_state(rt, c.inst, a);
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

void seer_observe_agent(seer_worker *w, uint32_t inst, uint32_t a)
{
    seer_runtime *rt = w->rt;
    const seer_sizes *sz = &rt->sz;
    size_t i = (size_t)inst * sz->num_agents + a;
    seer_output out = {
        .obs = rt->obs + i * sz->obs_dim,
        .reward = rt->reward + i,
        .terminated = rt->terminated + i,
        .truncated = rt->truncated + i,
        .info = rt->info + i * sz->info_dim,
    };
    memset(out.obs, 0, sz->obs_dim * sizeof(float));
    memset(out.info, 0, sz->info_dim * sizeof(double));
    *out.reward = 0.0f;
    *out.terminated = 0;
    *out.truncated = 0;
    if (!rt->alive[i]) {
        rt->active[i] = 0;
        return;
    }
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, inst, PHASE_BOUNDARY);
    ctx_entity(&c, a);
    c.now = c.inst->boundary;
    if (SEER_CHECKING(rt))
        (void)seer_check_run(&c, SEER_HOOK_OBSERVE, &(seer_hook_args){.type = a, .out = &out});
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
    rt->active[i] = 1;
}

void seer_publish_entity(seer_worker *w, uint32_t inst, uint32_t e)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    if (rt->model->publish && rt->sz.snapshot_size) {
        seer_ctx c;
        seer_ctx_setup(&c, rt, w, inst, PHASE_BOUNDARY);
        ctx_entity(&c, e);
        c.now = in->boundary;
        void *rec = snapshot_record(rt, in, e);
        if (SEER_CHECKING(rt))
            (void)seer_check_run(&c, SEER_HOOK_PUBLISH, &(seer_hook_args){
                                     .entity = rec, .cptr = entity_state(rt, in, e)});
        else
            rt->model->publish(&c, entity_state(rt, in, e), rec);
    }
    if (e < rt->sz.num_agents) {
        size_t i = (size_t)inst * rt->sz.num_agents + e;
        if (rt->terminated[i] || rt->truncated[i])
            rt->alive[i] = 0;
    }
}

void seer_finish_instance(seer_runtime *rt, uint32_t inst)
{
    seer_inst *in = &rt->inst[inst];
    if (!in->resetting)
        in->step++;
    in->resetting = 0;
}

/* ---- tracing ---------------------------------------------------------------- */

uint64_t seer_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void seer_trace_add(seer_worker *w, uint32_t kind, uint64_t t0, uint64_t t1, double sim_time,
                    uint32_t instance, uint32_t entity, uint32_t type, uint32_t count)
{
    if (w->trace_n >= w->rt->trace_cap) {
        w->trace_dropped++;
        return;
    }
    seer_trace_rec *r = &w->trace[w->trace_n++];
    r->t0_ns = t0;
    r->t1_ns = t1;
    r->sim_time = sim_time;
    r->kind = kind;
    r->instance = instance;
    r->entity = entity;
    r->type = type;
    r->count = count;
    r->pad_ = 0;
}

int seer_trace_alloc_worker(seer_runtime *rt, seer_worker *w)
{
    free(w->trace);
    w->trace = NULL;
    w->trace_n = 0;
    w->trace_dropped = 0;
    if (!rt->trace_cap)
        return SEER_OK;
    w->trace = malloc(rt->trace_cap * sizeof *w->trace);
    if (!w->trace)
        return SEER_E_NOMEM;
    /* Touch the pages now, not in the first traced event loop. */
    memset(w->trace, 0, rt->trace_cap * sizeof *w->trace);
    return SEER_OK;
}

int seer_runtime_trace(seer_runtime *rt, uint64_t capacity)
{
    if (capacity > (1ull << 28)) {
        seer_fail(rt, "trace capacity %llu is above 2^28 records per thread",
                  (unsigned long long)capacity);
        return SEER_E_ARG;
    }
    rt->trace_cap = capacity;
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        if (seer_trace_alloc_worker(rt, &rt->workers[t]) != SEER_OK) {
            rt->trace_cap = 0;
            for (uint32_t u = 0; u < rt->nthreads; u++)
                seer_trace_alloc_worker(rt, &rt->workers[u]);
            seer_fail(rt, "out of memory for %llu trace records per thread",
                      (unsigned long long)capacity);
            return SEER_E_NOMEM;
        }
    }
    return SEER_OK;
}

uint64_t seer_runtime_trace_count(const seer_runtime *rt, uint32_t worker)
{
    return worker < rt->nthreads ? rt->workers[worker].trace_n : 0;
}

const seer_trace_rec *seer_runtime_trace_records(const seer_runtime *rt, uint32_t worker)
{
    return worker < rt->nthreads ? rt->workers[worker].trace : NULL;
}

uint64_t seer_runtime_trace_dropped(const seer_runtime *rt)
{
    uint64_t n = 0;
    for (uint32_t t = 0; t < rt->nthreads; t++)
        n += rt->workers[t].trace_dropped;
    return n;
}

void seer_runtime_trace_clear(seer_runtime *rt)
{
    for (uint32_t t = 0; t < rt->nthreads; t++) {
        rt->workers[t].trace_n = 0;
        rt->workers[t].trace_dropped = 0;
    }
}

const char *seer_runtime_event_name(const seer_runtime *rt, uint32_t type)
{
    return seer_model_event_name(rt->model, type);
}

/* ---- the event loop (both executors) ------------------------------------- */

uint64_t seer_run_queue(seer_worker *w, seer_ctx *c, uint32_t inst, seer_squeue *q,
                        seer_time bnd)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    const seer_model *m = rt->model;
    const int tracing = SEER_TRACING(w);
    c->inst = in;
    c->inst_idx = inst;
    uint64_t n = 0;
    int qerr = 0;
    seer_event *ev;
    while (!w->err && (ev = seer_squeue_pop_before(q, bnd, &qerr)) != NULL) {
        ctx_entity(c, ev->target);
        c->now = ev->time;
        c->cur_type = ev->type;
        uint64_t t0 = tracing ? seer_clock_ns() : 0;
        void *st = entity_state(rt, in, ev->target);
        int rc = SEER_CHECKING(rt)
                     ? seer_check_run(c, SEER_HOOK_HANDLE,
                                      &(seer_hook_args){.entity = st, .cptr = ev->payload,
                                                        .type = ev->type, .size = ev->size})
                     : m->handle(c, st, ev->type, ev->payload, ev->size);
        if (tracing)
            seer_trace_add(w, SEER_TRACE_EVENT, t0, seer_clock_ns(), c->now, inst, c->self,
                           c->cur_type, 1);
        c->rec->events++;
        n++;
        seer_event_free(w, ev);
        if (__builtin_expect(rc != 0 || w->err != 0, 0)) {
            seer_after_handler(c, rc, "event");
            break;
        }
        /* every 16 events of this thread (whatever entities they were for):
         * Ctrl-C reaches the user within 16 events per thread */
        if (__builtin_expect((++w->stop_tick & 15u) == 0, 0) &&
            seer_call_stop(w, inst, c->now, n))
            break;
    }
    w->call_events += n;
    if (__builtin_expect(qerr != 0, 0) && !w->err)
        seer_worker_error(w, qerr, "out of memory for an event queue (model '%s')", m->name);
    return n;
}

int seer_call_stop(seer_worker *w, uint32_t inst, seer_time now, uint64_t n)
{
    seer_runtime *rt = w->rt;
    char t[32], b[32];
    if (seer_sigint_count() != rt->sigint_at_call) {
        seer_worker_error(w, SEER_E_INTERRUPTED,
                          "interrupted by SIGINT (Ctrl-C) in step %llu of instance %u at "
                          "simulated time t=%s: the call was abandoned",
                          (unsigned long long)rt->inst[inst].step, inst,
                          seer_fmt_double(t, now));
        return 1;
    }
    if (w->call_events + n > w->call_budget) {
        seer_worker_error(w, SEER_E_BUDGET,
                          "step %llu of instance %u handled more than %llu events (the event "
                          "budget of a step, max_step_events) and reached only t=%s of its "
                          "end at %s: the step duration may be too long for the model's event "
                          "rate; shorten the step or raise max_step_events",
                          (unsigned long long)rt->inst[inst].step, inst,
                          (unsigned long long)rt->max_step_events, seer_fmt_double(t, now),
                          seer_fmt_double(b, rt->inst[inst].boundary));
        return 1;
    }
    return 0;
}

/* The boundary phases of one instance on this thread. */
static void instance_boundary(seer_runtime *rt, seer_worker *w, uint32_t i)
{
    seer_boundary_instance(w, i);
    for (uint32_t a = 0; a < rt->sz.num_agents; a++)
        seer_observe_agent(w, i, a);
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        seer_publish_entity(w, i, e);
    seer_finish_instance(rt, i);
}

uint64_t seer_step_instance(seer_worker *w, seer_ctx *c, uint32_t inst, seer_squeue *q,
                            int spans)
{
    seer_runtime *rt = w->rt;
    seer_inst *in = &rt->inst[inst];
    const int tracing = spans && SEER_TRACING(w);
    uint64_t t0 = tracing ? seer_clock_ns() : 0;
    for (uint32_t a = 0; a < rt->sz.num_agents && !w->err; a++)
        seer_act_agent(w, inst, a);
    if (w->err)
        return 0;
    if (tracing)
        seer_trace_add(w, SEER_TRACE_ACT, t0, seer_clock_ns(),
                       (double)in->step * rt->sz.step_duration, inst, 0, 0, 0);
    const uint64_t n = seer_run_queue(w, c, inst, q, in->boundary);
    if (w->err)
        return n;
    t0 = tracing ? seer_clock_ns() : 0;
    instance_boundary(rt, w, inst);
    if (tracing)
        seer_trace_add(w, SEER_TRACE_BOUNDARY, t0, seer_clock_ns(), in->boundary, inst, 0, 0,
                       0);
    return n;
}

/* ---- serial reference executor ------------------------------------------ */

static int serial_fail(seer_runtime *rt, seer_worker *w)
{
    int code = w->err;
    memcpy(rt->err, w->msg, sizeof rt->err);
    w->err = 0;
    return code;
}

static int serial_reset(seer_runtime *rt, uint32_t i)
{
    seer_worker *w = &rt->workers[0];
    w->call_events = 0;
    w->call_budget = UINT64_MAX;
    seer_inst *in = &rt->inst[i];
    if (SEER_CHECKING(rt))
        seer_check_disarm(rt); /* the runtime clears states and records below */
    seer_squeue_drop(w, &in->queue);
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        seer_clear_entity(w, in, e, in->seed);
    for (uint32_t e = 0; e < rt->sz.num_entities; e++)
        if (seer_init_entity(w, i, e))
            return serial_fail(rt, w);
    instance_boundary(rt, w, i);
    return w->err ? serial_fail(rt, w) : SEER_OK;
}

static int serial_step(seer_runtime *rt, uint32_t i)
{
    seer_worker *w = &rt->workers[0];
    w->call_events = 0;
    w->call_budget = rt->max_step_events;
    seer_ctx c;
    seer_ctx_setup(&c, rt, w, i, PHASE_EVENT);
    rt->events_total += seer_step_instance(w, &c, i, &rt->inst[i].queue, 1);
    return w->err ? serial_fail(rt, w) : SEER_OK;
}

/* ---- API ------------------------------------------------------------------ */

static void *xcalloc(size_t n, size_t size, int *ok)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        *ok = 0;
    return p;
}

static int set_partitions(seer_runtime *rt, uint32_t np);
static void free_parts(const seer_runtime *rt, seer_squeue *parts);

/* The pool size that takes part in calls: at most the CPUs this process may
 * run on (more threads would only wait for each other: 64 threads on 2 cores
 * once ran 16 times slower than 2), unless SEER_RT_OVERSUBSCRIBE. */
static uint32_t active_threads(uint32_t flags, uint32_t threads)
{
    if (flags & SEER_RT_OVERSUBSCRIBE)
        return threads;
    const uint32_t cpus = seer_cpu_count();
    return threads < cpus ? threads : cpus;
}

/* Bytes a runtime of these sizes takes, roughly: states, snapshots and
 * records per entity, outputs per agent, and the pending events with their
 * queue entries (a quarter more for the free lists' slack). */
double seer_memory_estimate(const seer_sizes *sz, uint32_t B, uint32_t check)
{
    const double page = (check & SEER_CHECK_ISOLATE) ? (double)seer_page_size() : 16.0;
    const double ent = (double)seer_round_up(sz->entity_size ? sz->entity_size : 1,
                                             (size_t)page) +
                       (double)seer_round_up(sz->snapshot_size ? sz->snapshot_size : 1,
                                             (size_t)page) +
                       (double)sizeof(seer_entity_rec) + 8.0;
    const double agent = 4.0 * sz->obs_dim + 8.0 * sz->info_dim + 16.0 + 4.0 * sz->action_dim;
    const double ev = (double)seer_round_up(sizeof(seer_event) + sz->payload_size, 16) + 16.0;
    return (double)B * ((double)sz->num_entities * ent + (double)sz->num_agents * agent +
                        1.25 * (double)sz->pending_events * ev + 4.0 * sz->state_dim +
                        (double)sz->instance_size);
}

/* Check the arguments of seer_runtime_create and describe the config copy. */
static int create_args(const seer_model *model, void *config, size_t config_size,
                       const seer_runtime_options *o, seer_sizes *sz, char *err, size_t errlen)
{
    int rc = seer_model_check(model, err, errlen);
    if (rc != SEER_OK)
        return rc;
    if (config_size != model->config_size)
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "model '%s': config size %zu does not match the model's %zu",
                             model->name, config_size, model->config_size);
    if (!o)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "options must not be NULL");
    if (o->num_instances == 0)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "num_instances must be >= 1");
    if (o->executor != SEER_EXECUTOR_SERIAL && o->executor != SEER_EXECUTOR_PARALLEL)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "unknown executor %d", o->executor);
    if (o->threads == 0 || o->threads > 1024)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "threads=%u must be in [1, 1024]",
                             o->threads);
    if (o->executor == SEER_EXECUTOR_SERIAL && o->threads != 1)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "the serial executor runs on one thread");
    if (o->check & ~(uint32_t)(SEER_CHECK_ISOLATE | SEER_CHECK_SHUFFLE))
        return seer_fail_buf(err, errlen, SEER_E_ARG, "unknown check flags %#x", o->check);
    if ((o->check & SEER_CHECK_ISOLATE) && o->executor != SEER_EXECUTOR_SERIAL)
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "SEER_CHECK_ISOLATE runs on the serial executor");
    if ((o->check & SEER_CHECK_SHUFFLE) && o->executor != SEER_EXECUTOR_PARALLEL)
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "SEER_CHECK_SHUFFLE runs on the parallel executor");
    rc = seer_model_describe(model, config, sz, err, errlen);
    if (rc != SEER_OK)
        return rc;
    if (o->check & SEER_CHECK_ISOLATE) {
        /* a page per entity state and per snapshot record */
        const size_t page = seer_page_size();
        const double bytes =
            (double)o->num_instances * sz->num_entities *
            (double)(seer_round_up(sz->entity_size ? sz->entity_size : 1, page) +
                     seer_round_up(sz->snapshot_size ? sz->snapshot_size : 1, page));
        if (bytes > (double)(1ull << 30))
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "checking mode gives every entity pages of its own: %u "
                                 "instance(s) x %u entities need %.0f MiB (at most 1024); "
                                 "check a smaller configuration",
                                 o->num_instances, sz->num_entities, bytes / 1048576.0);
    }
    if (o->executor == SEER_EXECUTOR_PARALLEL && !(sz->lookahead > 0.0))
        return seer_fail_buf(err, errlen, SEER_E_EXECUTOR,
                             "model '%s' has lookahead 0: the parallel executor needs L > 0 to "
                             "find independent events; use executor='serial'",
                             model->name);
    const uint64_t limit = o->memory_limit ? o->memory_limit : seer_physical_memory();
    const double need = seer_memory_estimate(sz, o->num_instances, o->check);
    if (need > (double)limit)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "model '%s': this configuration needs about %.1f GiB (%u "
                             "instance(s) x %u entities of %u bytes, %llu pending events "
                             "each), more than the %.3f GiB allowed (%s); make it smaller",
                             model->name, need / 1073741824.0, o->num_instances,
                             sz->num_entities, sz->entity_size,
                             (unsigned long long)sz->pending_events,
                             (double)limit / 1073741824.0,
                             o->memory_limit ? "memory_limit" : "the machine's memory");
    /* The executive list indexes (instance, entity) pairs with 31 bits. */
    if ((uint64_t)o->num_instances * sz->num_entities >= (1ull << 31))
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "num_instances * num_entities = %llu must be below 2^31",
                             (unsigned long long)o->num_instances * sz->num_entities);
    return SEER_OK;
}

int seer_runtime_create(const seer_model *model, const void *config, size_t config_size,
                        const seer_runtime_options *opts, seer_runtime **out, char *err,
                        size_t errlen)
{
    if (!out)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "out must not be NULL");
    *out = NULL;
    if (config_size && !config)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "config must not be NULL");
    /* describe completes the runtime's own copy of the configuration */
    void *cfg = calloc(1, config_size ? config_size : 1);
    if (!cfg)
        return seer_fail_buf(err, errlen, SEER_E_NOMEM, "out of memory");
    if (config_size)
        memcpy(cfg, config, config_size);
    seer_sizes sz;
    int rc = create_args(model, cfg, config_size, opts, &sz, err, errlen);
    if (rc != SEER_OK) {
        free(cfg);
        return rc;
    }
    const uint32_t num_instances = opts->num_instances;
    const uint32_t threads = active_threads(opts->flags, opts->threads);
    const int executor = opts->executor;
    const uint64_t max_cycles = opts->max_cycles;

    seer_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) {
        free(cfg);
        return seer_fail_buf(err, errlen, SEER_E_NOMEM, "out of memory");
    }
    int ok = 1;
    rt->model = model;
    rt->sz = sz;
    rt->B = num_instances;
    rt->executor = executor;
    rt->max_cycles = max_cycles;
    rt->config = cfg;
    rt->check = opts->check;
    rt->shuffle_seed = opts->shuffle_seed;
    rt->rt_flags = opts->flags;
    rt->requested_threads = opts->threads;
    rt->max_step_events = opts->max_step_events ? opts->max_step_events
                                                : SEER_DEFAULT_STEP_EVENTS;
    rt->memory_limit = opts->memory_limit ? opts->memory_limit : seer_physical_memory();
    rt->fork_gen = seer_fork_generation();
    /* Checking mode: every entity state and snapshot record, the instance
     * data and the configuration get pages of their own (check.c). */
    const size_t align = (rt->check & SEER_CHECK_ISOLATE) ? seer_page_size() : 16;
    /* Records of at most a line never straddle two (chunks are line-aligned). */
    rt->event_stride = seer_round_up(sizeof(seer_event) + sz.payload_size, 16);
    if (rt->event_stride < SEER_CACHE_LINE && SEER_CACHE_LINE % rt->event_stride)
        rt->event_stride = SEER_CACHE_LINE;
    rt->entity_stride = seer_round_up(sz.entity_size ? sz.entity_size : 1, align);
    rt->snapshot_stride = seer_round_up(sz.snapshot_size ? sz.snapshot_size : 1, align);
    /* checking mode: flush with the page's end (sizeof a struct is a
     * multiple of its alignment, so the state stays aligned) */
    const size_t fit = (rt->check & SEER_CHECK_ISOLATE) ? 1 : 16;
    rt->entity_pad = rt->entity_stride - seer_round_up(sz.entity_size ? sz.entity_size : 1, fit);
    rt->snapshot_pad =
        rt->snapshot_stride - seer_round_up(sz.snapshot_size ? sz.snapshot_size : 1, fit);
    rt->idata_stride = seer_round_up(sz.instance_size ? sz.instance_size : 1, align);
    if (rt->check & SEER_CHECK_ISOLATE) {
        rt->check_config_len = seer_round_up(config_size ? config_size : 1, align);
        rt->config = aligned_alloc(align, rt->check_config_len);
        if (rt->config) {
            memset(rt->config, 0, rt->check_config_len);
            memcpy(rt->config, cfg, config_size);
        } else {
            ok = 0;
        }
        free(cfg);
    }
    pthread_mutex_init(&rt->reserve_lock, NULL);
    pthread_mutex_init(&rt->wake_lock, NULL);
    pthread_cond_init(&rt->wake_cond, NULL);
    atomic_init(&rt->job_gen, 0);
    atomic_init(&rt->shutdown, 0);
    seer_phases_init(&rt->ph);
    atomic_init(&rt->abort_code, 0);

    size_t B = num_instances, N = sz.num_entities;
    rt->inst = aligned_alloc(SEER_CACHE_LINE, B * sizeof *rt->inst);
    if (rt->inst)
        memset(rt->inst, 0, B * sizeof *rt->inst);
    else
        ok = 0;
    void *bufs[8];
    for (int b = 0; b < 8; b++) {
        bufs[b] = opts->buffers[b];
        if (!bufs[b]) {
            bufs[b] = xcalloc(seer_buffer_bytes(&sz, num_instances, b), 1, &ok);
            rt->owned_buffers |= 1u << b;
        }
    }
    rt->actions = bufs[SEER_BUF_ACTIONS];
    rt->obs = bufs[SEER_BUF_OBS];
    rt->reward = bufs[SEER_BUF_REWARD];
    rt->terminated = bufs[SEER_BUF_TERMINATED];
    rt->truncated = bufs[SEER_BUF_TRUNCATED];
    rt->alive = bufs[SEER_BUF_ALIVE];
    rt->active = bufs[SEER_BUF_ACTIVE];
    rt->info = bufs[SEER_BUF_INFO];
    rt->sel = xcalloc(B, sizeof *rt->sel, &ok);
    if (rt->check & SEER_CHECK_SHUFFLE) /* visiting orders: at most B x N items a phase */
        rt->perm = xcalloc(B * N, sizeof *rt->perm, &ok);
    const size_t line = align > 64 ? align : 64;
    for (size_t i = 0; ok && i < B; i++) {
        seer_inst *in = &rt->inst[i];
        seer_squeue_init(&in->queue);
        in->states = aligned_alloc(line, seer_round_up(N * rt->entity_stride, line));
        in->snapshot = aligned_alloc(line, seer_round_up(N * rt->snapshot_stride, line));
        in->idata = aligned_alloc(line, seer_round_up(rt->idata_stride, line));
        in->recs = aligned_alloc(64, seer_round_up(N * sizeof(seer_entity_rec), 64));
        if (!in->states || !in->snapshot || !in->idata || !in->recs) {
            ok = 0;
            break;
        }
        memset(in->states, 0, N * rt->entity_stride);
        memset(in->snapshot, 0, N * rt->snapshot_stride);
        memset(in->idata, 0, rt->idata_stride);
        memset(in->recs, 0, N * sizeof(seer_entity_rec));
    }
    const uint32_t pool = executor == SEER_EXECUTOR_SERIAL ? 1 : threads;
    if (ok && (set_partitions(rt, pool) != SEER_OK || seer_pool_start(rt, pool) != SEER_OK ||
               seer_check_setup(rt) != SEER_OK))
        ok = 0;
    if (!ok) {
        seer_runtime_destroy(rt);
        return seer_fail_buf(err, errlen, SEER_E_NOMEM, "out of memory creating the runtime");
    }
    *out = rt;
    return SEER_OK;
}

void seer_runtime_destroy(seer_runtime *rt)
{
    if (!rt)
        return;
    if (rt->fork_gen != seer_fork_generation())
        seer_pool_forget_threads(rt); /* a child of fork(): nothing to join */
    seer_pool_stop(rt);
    if (rt->inst) {
        for (uint32_t i = 0; i < rt->B; i++) {
            seer_inst *in = &rt->inst[i];
            seer_squeue_free(&in->queue);
            free_parts(rt, in->parts);
            free(in->states);
            free(in->snapshot);
            free(in->idata);
            free(in->recs);
        }
    }
    for (size_t k = 0; k < rt->nchunks; k++)
        free(rt->chunks[k]);
    free(rt->chunks);
    free(rt->inst);
    free(rt->part_of);
    free(rt->part_start);
    void *bufs[8] = {rt->actions, rt->obs, rt->reward, rt->terminated, rt->truncated,
                     rt->alive, rt->info, rt->active};
    for (int b = 0; b < 8; b++)
        if (rt->owned_buffers & (1u << b))
            free(bufs[b]);
    free(rt->sel);
    free(rt->perm);
    seer_check_teardown(rt);
    free(rt->config);
    pthread_mutex_destroy(&rt->reserve_lock);
    pthread_mutex_destroy(&rt->wake_lock);
    pthread_cond_destroy(&rt->wake_cond);
    free(rt);
}

const char *seer_runtime_error(const seer_runtime *rt) { return rt ? rt->err : "no runtime"; }
const seer_sizes *seer_runtime_sizes(const seer_runtime *rt) { return &rt->sz; }
const char *seer_runtime_model_name(const seer_runtime *rt) { return rt->model->name; }
const seer_model *seer_runtime_model(const seer_runtime *rt) { return rt->model; }
const void *seer_runtime_config(const seer_runtime *rt) { return rt->config; }
uint32_t seer_runtime_num_instances(const seer_runtime *rt) { return rt->B; }
uint32_t seer_runtime_threads(const seer_runtime *rt)
{
    /* relaxed: the host is the only writer. */
    return atomic_load_explicit(&rt->pool_active, memory_order_relaxed);
}
uint32_t seer_runtime_pool_size(const seer_runtime *rt) { return rt->nthreads; }
int seer_runtime_executor(const seer_runtime *rt) { return rt->executor; }

size_t seer_buffer_bytes(const seer_sizes *sz, uint32_t B, int which)
{
    const size_t n = (size_t)B * sz->num_agents;
    switch (which) {
    case SEER_BUF_ACTIONS: return n * sz->action_dim * 4u;
    case SEER_BUF_OBS: return n * sz->obs_dim * sizeof(float);
    case SEER_BUF_REWARD: return n * sizeof(float);
    case SEER_BUF_INFO: return n * sz->info_dim * sizeof(double);
    default: return n; /* the uint8 flags */
    }
}

void *seer_runtime_buffer(seer_runtime *rt, int which)
{
    switch (which) {
    case SEER_BUF_ACTIONS: return rt->actions;
    case SEER_BUF_OBS: return rt->obs;
    case SEER_BUF_REWARD: return rt->reward;
    case SEER_BUF_TERMINATED: return rt->terminated;
    case SEER_BUF_TRUNCATED: return rt->truncated;
    case SEER_BUF_ALIVE: return rt->alive;
    case SEER_BUF_INFO: return rt->info;
    case SEER_BUF_ACTIVE: return rt->active;
    default: return NULL;
    }
}

/* Make `threads` workers take part in calls.  Within the created pool this
 * only parks or unparks workers (no thread is created or joined); a larger
 * pool is created anew. */
static void free_parts(const seer_runtime *rt, seer_squeue *parts)
{
    if (parts)
        for (uint32_t p = 0; p < rt->nparts; p++)
            seer_squeue_free(&parts[p]);
    free(parts);
}

#define MIG_NB (SEER_SQ_BUCKETS + 1) /* migration counts per destination queue */
static int migrate_instance(seer_runtime *rt, seer_inst *in, int to, uint64_t *counts);

/* An instance whose pending events could not be moved back after a move
 * between queues failed half way (out of memory again): its events are
 * dropped from every queue (their records return with the pool's chunks)
 * and it needs a reset, for the reason given -- as after a failed call, so
 * that a step says why. */
static void abandon_events(seer_runtime *rt, seer_inst *in, const char *why)
{
    seer_squeue_clear(&in->queue);
    for (uint32_t p = 0; in->parts && p < rt->nparts; p++)
        seer_squeue_clear(&in->parts[p]);
    in->ready = 0;
    in->failed = 1;
    snprintf(rt->fail_msg, sizeof rt->fail_msg, "%s", why);
}

/* Cut every instance's entities into `np` contiguous, equal partitions (np
 * is the pool size: one partition a thread keeps the events that cross
 * partitions, and with them the traffic between cores, few; a PCS 64x64
 * step ran 1.9x faster on 2 threads than serially with 2 partitions, 1.75x
 * with 4 and 1.6x with 16).  Between calls only.  Pending events move to
 * the new partitions' queues. */
static int set_partitions(seer_runtime *rt, uint32_t np)
{
    const uint32_t N = rt->sz.num_entities;
    /* Many instances per thread (a multiple of the threads, or at least
     * three per thread): one partition each, so that a step is one item per
     * instance, taken whole by one thread without windows (parallel.c).
     * PCS 64x64 B=8 on 2 threads: windows advance all eight instances in
     * lockstep, whose working sets then do not fit the caches together. */
    if (rt->B >= np && (rt->B % np == 0 || rt->B >= 3 * np))
        np = 1;
    /* SEER_CHECK_SHUFFLE: a partition per entity, whatever the pool */
    if (rt->check & SEER_CHECK_SHUFFLE)
        np = N;
    /* at most SEER_MAX_PARTS: every thread keeps an outbox per partition
     * and a visit reads every thread's, so partitions times threads must
     * stay modest (threads beyond it share the partitions' work) */
    np = np < 1 ? 1 : np > N ? N : np;
    np = np > SEER_MAX_PARTS ? SEER_MAX_PARTS : np;
    if (np == rt->nparts)
        return SEER_OK;
    uint32_t *of = malloc(N * sizeof *of);
    uint32_t *start = malloc((np + 1) * sizeof *start);
    seer_squeue **parts = calloc(rt->B, sizeof *parts);
    /* rows for the new partitions, and for the old ones should the events
     * have to go back to them */
    const uint32_t rows = np > rt->nparts ? np : rt->nparts;
    uint64_t *counts = malloc((size_t)rows * MIG_NB * sizeof *counts);
    int ok = of && start && parts && counts;
    for (uint32_t i = 0; ok && i < rt->B; i++) {
        parts[i] = aligned_alloc(SEER_CACHE_LINE, np * sizeof(seer_squeue));
        if (!parts[i])
            ok = 0;
        else
            for (uint32_t p = 0; p < np; p++)
                seer_squeue_init(&parts[i][p]);
    }
    /* On the parallel executor, park every instance's events in its serial
     * queue while the partitions change (nothing can fail in between: the
     * moves reserve first). */
    uint32_t parked = 0;
    if (ok && rt->executor == SEER_EXECUTOR_PARALLEL && rt->nparts)
        for (; parked < rt->B && ok; parked++)
            ok = migrate_instance(rt, &rt->inst[parked], SEER_EXECUTOR_SERIAL, counts) ==
                 SEER_OK;
    if (!ok) {
        int lost = 0;
        for (uint32_t i = 0; i + 1 < parked; i++)
            if (migrate_instance(rt, &rt->inst[i], SEER_EXECUTOR_PARALLEL, counts) != SEER_OK) {
                abandon_events(rt, &rt->inst[i], "out of memory moving its pending events "
                                                 "back to their partitions");
                lost = 1;
            }
        for (uint32_t i = 0; parts && i < rt->B; i++)
            if (parts[i]) {
                for (uint32_t p = 0; p < np; p++)
                    seer_squeue_free(&parts[i][p]);
                free(parts[i]);
            }
        free(of);
        free(start);
        free(parts);
        free(counts);
        seer_fail(rt, "out of memory partitioning the entities%s",
                  lost ? ": instances need a reset" : "");
        return SEER_E_NOMEM;
    }
    for (uint32_t i = 0; i < rt->B; i++) {
        free_parts(rt, rt->inst[i].parts);
        rt->inst[i].parts = parts[i];
    }
    for (uint32_t p = 0; p <= np; p++)
        start[p] = (uint32_t)((uint64_t)N * p / np);
    for (uint32_t p = 0; p < np; p++)
        for (uint32_t e = start[p]; e < start[p + 1]; e++)
            of[e] = p;
    free(rt->part_of);
    free(rt->part_start);
    rt->part_of = of;
    rt->part_start = start;
    rt->nparts = np;
    free(parts);
    int rc = SEER_OK;
    for (uint32_t i = 0; i < parked; i++)
        if (migrate_instance(rt, &rt->inst[i], SEER_EXECUTOR_PARALLEL, counts) != SEER_OK) {
            /* Out of memory moving back: the instance must be reset. */
            abandon_events(rt, &rt->inst[i], "out of memory moving its pending events to "
                                             "new partitions");
            rc = SEER_E_NOMEM;
        }
    free(counts);
    if (rc != SEER_OK)
        seer_fail(rt, "out of memory partitioning the entities: instances need a reset");
    return rc;
}

/* Every call that runs the model or changes the pool starts here.  In a
 * child of fork() the pool is re-created first (the parent's workers do not
 * exist there); a runtime whose pool could not be restarted fails; SIGINT is
 * watched from here on. */
static int call_begin(seer_runtime *rt)
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

static int resize_pool(seer_runtime *rt, uint32_t threads)
{
    if (threads <= rt->nthreads) {
        /* relaxed: published to the workers by the next call's release bump
         * of job_gen; until then a parked worker at most spins a little. */
        atomic_store_explicit(&rt->pool_active, threads, memory_order_relaxed);
        return SEER_OK;
    }
    const uint32_t old = rt->nthreads;
    /* relaxed: the host is the only writer. */
    const uint32_t old_active = atomic_load_explicit(&rt->pool_active, memory_order_relaxed);
    seer_pool_stop(rt);
    int rc = set_partitions(rt, threads);
    if (rc == SEER_OK) {
        if (seer_pool_start(rt, threads) == SEER_OK)
            return SEER_OK;
        rc = SEER_E_NOMEM;
        seer_fail(rt, "could not start %u threads (out of memory or threads); the pool keeps "
                      "its %u",
                  threads, old_active);
    }
    /* Back to the old pool, its parked workers parked (its memory was just
     * freed, so this fails only if memory ran out meanwhile: then the
     * runtime cannot run). */
    if (seer_pool_restart(rt, old, old_active) != SEER_OK) {
        rt->broken = 1;
        seer_fail(rt, "out of memory restarting the worker pool: this runtime cannot run any "
                      "more; close it and create a new one");
    }
    return rc;
}

int seer_runtime_set_threads(seer_runtime *rt, uint32_t threads)
{
    if (threads == 0 || threads > 1024) {
        seer_fail(rt, "threads=%u must be in [1, 1024]", threads);
        return SEER_E_ARG;
    }
    if (rt->executor == SEER_EXECUTOR_SERIAL && threads != 1) {
        seer_fail(rt, "the serial executor runs on one thread");
        return SEER_E_ARG;
    }
    int rc = call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    rt->requested_threads = threads;
    if (rt->executor == SEER_EXECUTOR_SERIAL)
        return SEER_OK;
    return resize_pool(rt, active_threads(rt->rt_flags, threads));
}

/* Move one instance's pending events between the executors' queues: the
 * serial executor's one queue and the parallel executor's partition queues.
 * Runs between calls, when the outboxes are empty.  Both executors order an
 * entity's events by the same (time, key), and the key travels with the
 * event, so the outcome does not depend on where the events waited.
 * Capacity is reserved first (counts: nparts * (SEER_SQ_BUCKETS + 1)
 * scratch): once moving starts nothing can fail half way. */

struct migrate_ctx {
    seer_runtime *rt;
    seer_inst *in;
    uint64_t *counts;
    int to;
};

static seer_squeue *dest_queue(const struct migrate_ctx *m, const seer_event *ev, size_t *row)
{
    if (m->to == SEER_EXECUTOR_SERIAL) {
        *row = 0;
        return &m->in->queue;
    }
    uint32_t p = m->rt->part_of[ev->target];
    *row = (size_t)p * MIG_NB;
    return &m->in->parts[p];
}

static void count_cb(void *arg, seer_event *ev)
{
    struct migrate_ctx *m = arg;
    size_t row;
    seer_squeue *q = dest_queue(m, ev, &row);
    m->counts[row + (size_t)seer_squeue_bucket_of(q, ev->time)]++;
}

static void move_cb(void *arg, seer_event *ev)
{
    size_t row;
    (void)seer_squeue_push(dest_queue(arg, ev, &row), ev); /* reserved: cannot fail */
}

static int migrate_instance(seer_runtime *rt, seer_inst *in, int to, uint64_t *counts)
{
    struct migrate_ctx m = {rt, in, counts, to};
    const uint32_t np = to == SEER_EXECUTOR_SERIAL ? 1 : rt->nparts;
    const uint32_t nsrc = to == SEER_EXECUTOR_SERIAL ? rt->nparts : 1;
    seer_squeue *src = to == SEER_EXECUTOR_SERIAL ? in->parts : &in->queue;
    memset(counts, 0, (size_t)np * MIG_NB * sizeof *counts);
    for (uint32_t k = 0; k < nsrc; k++)
        seer_squeue_foreach(&src[k], count_cb, &m);
    seer_squeue *dst = to == SEER_EXECUTOR_SERIAL ? &in->queue : in->parts;
    for (uint32_t p = 0; p < np; p++)
        if (seer_squeue_reserve(&dst[p], counts + (size_t)p * MIG_NB) != SEER_OK)
            return SEER_E_NOMEM;
    for (uint32_t k = 0; k < nsrc; k++) {
        seer_squeue_foreach(&src[k], move_cb, &m);
        seer_squeue_clear(&src[k]);
    }
    return SEER_OK;
}

int seer_runtime_set_executor(seer_runtime *rt, int executor, uint32_t threads)
{
    if (executor != SEER_EXECUTOR_SERIAL && executor != SEER_EXECUTOR_PARALLEL) {
        seer_fail(rt, "unknown executor %d", executor);
        return SEER_E_ARG;
    }
    if (threads == 0 || threads > 1024) {
        seer_fail(rt, "threads=%u must be in [1, 1024]", threads);
        return SEER_E_ARG;
    }
    if (executor == SEER_EXECUTOR_SERIAL && threads != 1) {
        seer_fail(rt, "the serial executor runs on one thread");
        return SEER_E_ARG;
    }
    if (executor == SEER_EXECUTOR_PARALLEL && !(rt->sz.lookahead > 0.0)) {
        seer_fail(rt, "model '%s' has lookahead 0: the parallel executor needs L > 0",
                  rt->model->name);
        return SEER_E_EXECUTOR;
    }
    if (rt->check) {
        seer_fail(rt, "a runtime in checking mode keeps its executor");
        return SEER_E_ARG;
    }
    int rc = call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    rt->requested_threads = threads;
    /* relaxed: the host is the only writer. */
    const uint32_t old_active = atomic_load_explicit(&rt->pool_active, memory_order_relaxed);
    /* The pool first: one that cannot grow keeps its size (resize_pool), and
     * the executor has not changed yet.  Then the events, which on failure
     * go back, and the pool back to its old size (within the pool just
     * started: parking only, which cannot fail).  So on failure nothing
     * changed. */
    rc = resize_pool(rt, active_threads(rt->rt_flags, threads));
    if (rc != SEER_OK || executor == rt->executor)
        return rc;
    uint64_t *counts = malloc((size_t)rt->nparts * MIG_NB * sizeof *counts);
    /* Reserve-then-move per instance: a failure leaves every instance
     * whole, its events in one executor's queues; those already moved are
     * moved back so the runtime stays on its old executor (an instance that
     * cannot even move back needs a reset). */
    uint32_t done = 0;
    rc = counts ? SEER_OK : SEER_E_NOMEM;
    for (; counts && done < rt->B && rc == SEER_OK; done++)
        rc = migrate_instance(rt, &rt->inst[done], executor, counts);
    if (rc != SEER_OK) {
        int lost = 0;
        for (uint32_t i = 0; i + 1 < done; i++)
            if (migrate_instance(rt, &rt->inst[i], rt->executor, counts) != SEER_OK) {
                abandon_events(rt, &rt->inst[i], "out of memory moving its pending events "
                                                 "back after a failed executor switch");
                lost = 1;
            }
        free(counts);
        (void)resize_pool(rt, old_active);
        seer_fail(rt, "out of memory switching executors%s",
                  lost ? ": instances need a reset" : "");
        return SEER_E_NOMEM;
    }
    free(counts);
    rt->executor = executor;
    return SEER_OK;
}

static uint32_t select_instances(seer_runtime *rt, const uint8_t *mask)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < rt->B; i++)
        if (!mask || mask[i])
            rt->sel[n++] = i;
    rt->nsel = n;
    return n;
}

/* After a failed call: the failed instances' pending events go (a reset
 * would drop them anyway), and when no instance holds an event any more the
 * event memory itself is freed -- a step that ran out of memory gives it
 * back.  Freeing it needs no worker near the free lists: the pool is
 * stopped (joined) and started again. */
static void release_failed(seer_runtime *rt)
{
    if (!rt->workers)
        return;
    seer_worker *w = &rt->workers[0];
    int holding = 0;
    for (uint32_t i = 0; i < rt->B; i++) {
        seer_inst *in = &rt->inst[i];
        if (in->failed) {
            seer_squeue_drop(w, &in->queue);
            for (uint32_t p = 0; in->parts && p < rt->nparts; p++)
                seer_squeue_drop(w, &in->parts[p]);
        }
        holding |= in->queue.n != 0;
        for (uint32_t p = 0; in->parts && p < rt->nparts; p++)
            holding |= in->parts[p].n != 0;
    }
    if (holding)
        return;
    /* Under the reserve's lock: a worker that woke late may still be taking
     * its stock of free events (run_phases), a chunk perhaps. */
    pthread_mutex_lock(&rt->reserve_lock);
    const size_t nchunks = rt->nchunks;
    pthread_mutex_unlock(&rt->reserve_lock);
    if (!nchunks)
        return;
    const uint32_t n = rt->nthreads;
    /* relaxed: the host is the only writer. */
    const uint32_t active = atomic_load_explicit(&rt->pool_active, memory_order_relaxed);
    seer_pool_stop(rt); /* gives every worker's free events back to the reserve */
    for (size_t k = 0; k < rt->nchunks; k++)
        free(rt->chunks[k]);
    rt->nchunks = 0;
    rt->reserve = NULL;
    rt->reserve_n = 0;
    rt->pool_events = 0;
    if (seer_pool_restart(rt, n, active) != SEER_OK)
        rt->broken = 1;
}

/* One rule for every failed call, whatever the executor: each selected
 * instance may be half way through it, so all of them need a reset; the
 * failure is kept to say so on later calls. */
static void fail_selected(seer_runtime *rt)
{
    for (uint32_t k = 0; k < rt->nsel; k++) {
        rt->inst[rt->sel[k]].ready = 0;
        rt->inst[rt->sel[k]].failed = 1;
    }
    memcpy(rt->fail_msg, rt->err, sizeof rt->fail_msg);
    release_failed(rt);
}

int seer_runtime_reset(seer_runtime *rt, const uint64_t *seeds, const uint8_t *mask)
{
    if (!seeds) {
        seer_fail(rt, "seeds must not be NULL");
        return SEER_E_ARG;
    }
    int rc = call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    if (select_instances(rt, mask) == 0)
        return SEER_OK;
    size_t A = rt->sz.num_agents;
    for (uint32_t k = 0; k < rt->nsel; k++) {
        uint32_t i = rt->sel[k];
        seer_inst *in = &rt->inst[i];
        in->seed = seeds[i];
        in->step = 0;
        in->ready = 1;
        in->failed = 0;
        in->resetting = 1;
        in->boundary = 0.0;
        memset(in->idata, 0, rt->idata_stride);
        memset(rt->alive + i * A, 1, A);
    }
    rt->in_call = 1;
    if (rt->executor == SEER_EXECUTOR_SERIAL) {
        if (SEER_CHECKING(rt))
            seer_check_begin_call(rt);
        for (uint32_t k = 0; k < rt->nsel && rc == SEER_OK; k++)
            rc = serial_reset(rt, rt->sel[k]);
        if (SEER_CHECKING(rt))
            seer_check_end_call(rt);
    } else {
        rc = seer_parallel_run(rt, JOB_RESET);
    }
    rt->in_call = 0;
    if (rc)
        fail_selected(rt);
    return rc;
}

/* "'cell_0_3' (agent 3 of instance 0)": the model's name for the agent. */
static const char *agent_label(const seer_runtime *rt, uint32_t inst, uint32_t a, char *buf,
                               size_t n)
{
    char name[SEER_NAME_LEN] = "";
    if (!rt->model->agent_name || rt->model->agent_name(rt->config, a, name, sizeof name) != 0)
        name[0] = '\0';
    name[SEER_NAME_LEN - 1] = '\0';
    if (name[0])
        snprintf(buf, n, "'%s' (agent %u of instance %u)", name, a, inst);
    else
        snprintf(buf, n, "agent %u of instance %u", a, inst);
    return buf;
}

/* Validate (and clip) the actions of every live agent of the selected
 * instances.  Touches no state. */
static int validate_actions(seer_runtime *rt)
{
    char who[2 * SEER_NAME_LEN];
    const seer_sizes *sz = &rt->sz;
    size_t A = sz->num_agents, D = sz->action_dim;
    for (uint32_t k = 0; k < rt->nsel; k++) {
        uint32_t i = rt->sel[k];
        for (size_t a = 0; a < A; a++) {
            if (!rt->alive[i * A + a])
                continue;
            if (sz->action_kind == SEER_ACTION_DISCRETE) {
                int32_t v = ((const int32_t *)rt->actions)[i * A + a];
                if (v < 0 || v >= sz->action_n) {
                    seer_fail(rt, "invalid action for %s: %d is outside [0, %d)",
                              agent_label(rt, i, (uint32_t)a, who, sizeof who), (int)v,
                              (int)sz->action_n);
                    return SEER_E_ACTION;
                }
            } else {
                const float *v = (const float *)rt->actions + (i * A + a) * D;
                for (size_t d = 0; d < D; d++) {
                    if (!isfinite(v[d])) {
                        seer_fail(rt, "invalid action for %s: element %zu is %g (actions must "
                                  "be finite)",
                                  agent_label(rt, i, (uint32_t)a, who, sizeof who), d,
                                  (double)v[d]);
                        return SEER_E_ACTION;
                    }
                }
            }
        }
    }
    if (sz->action_kind == SEER_ACTION_BOX) {
        for (uint32_t k = 0; k < rt->nsel; k++) {
            float *v = (float *)rt->actions + (size_t)rt->sel[k] * A * D;
            for (size_t j = 0; j < A * D; j++) {
                if (v[j] < sz->action_low)
                    v[j] = sz->action_low;
                else if (v[j] > sz->action_high)
                    v[j] = sz->action_high;
            }
        }
    }
    return SEER_OK;
}

/* A window [T, T + L) of the parallel executor advances only while T + L
 * > T in double precision.  At simulated times where the lookahead is below
 * that resolution (L < ulp(T)), an instance's step runs on the serial
 * executor instead: its events move to the serial queue and back (outputs
 * are the same either way; only speed differs). */
static int step_serially(seer_runtime *rt, uint32_t i)
{
    seer_inst *in = &rt->inst[i];
    uint64_t *counts = malloc((size_t)(rt->nparts > 1 ? rt->nparts : 1) * MIG_NB *
                              sizeof *counts);
    if (!counts || migrate_instance(rt, in, SEER_EXECUTOR_SERIAL, counts) != SEER_OK) {
        free(counts);
        seer_fail(rt, "out of memory moving instance %u's events for a serial step", i);
        return SEER_E_NOMEM;
    }
    rt->executor = SEER_EXECUTOR_SERIAL;
    int rc = serial_step(rt, i);
    rt->executor = SEER_EXECUTOR_PARALLEL;
    if (migrate_instance(rt, in, SEER_EXECUTOR_PARALLEL, counts) != SEER_OK && rc == SEER_OK) {
        seer_squeue_clear(&in->queue); /* its records return with the pool's chunks */
        seer_fail(rt, "out of memory moving instance %u's events back after a serial step", i);
        rc = SEER_E_NOMEM;
    }
    free(counts);
    rt->serial_fallbacks++;
    return rc;
}

int seer_runtime_step(seer_runtime *rt, const uint8_t *mask)
{
    int rc = call_begin(rt);
    if (rc != SEER_OK)
        return rc;
    if (select_instances(rt, mask) == 0)
        return SEER_OK;
    size_t A = rt->sz.num_agents;
    for (uint32_t k = 0; k < rt->nsel; k++) {
        uint32_t i = rt->sel[k];
        if (!rt->inst[i].ready) {
            if (rt->inst[i].failed)
                seer_fail(rt, "instance %u needs a reset: its last call failed: %s", i,
                          rt->fail_msg);
            else
                seer_fail(rt, "instance %u was stepped before reset", i);
            return SEER_E_ORDER;
        }
        int any = 0;
        for (size_t a = 0; a < A && !any; a++)
            any = rt->alive[i * A + a];
        if (!any) {
            seer_fail(rt, "instance %u has no live agent left (episode over); reset it first", i);
            return SEER_E_ORDER;
        }
    }
    rc = validate_actions(rt);
    if (rc)
        return rc;
    /* Instances whose windows could not advance go last in the selection
     * (step_serially); the parallel call takes the first `par`. */
    uint32_t par = rt->nsel;
    for (uint32_t k = 0; k < par;) {
        seer_inst *in = &rt->inst[rt->sel[k]];
        in->boundary = (seer_time)(in->step + 1) * rt->sz.step_duration;
        if (rt->executor == SEER_EXECUTOR_PARALLEL && rt->nparts > 1 &&
            !(in->boundary + rt->sz.lookahead > in->boundary)) {
            uint32_t t = rt->sel[k];
            rt->sel[k] = rt->sel[par - 1];
            rt->sel[par - 1] = t;
            par--;
        } else {
            k++;
        }
    }
    rt->steps_total++;
    rt->in_call = 1;
    if (rt->executor == SEER_EXECUTOR_SERIAL) {
        if (SEER_CHECKING(rt))
            seer_check_begin_call(rt);
        for (uint32_t k = 0; k < rt->nsel && rc == SEER_OK; k++)
            rc = serial_step(rt, rt->sel[k]);
        if (SEER_CHECKING(rt))
            seer_check_end_call(rt);
    } else {
        const uint32_t all = rt->nsel;
        if (par) {
            rt->nsel = par;
            rc = seer_parallel_run(rt, JOB_STEP);
            rt->nsel = all;
        }
        for (uint32_t k = par; k < all && rc == SEER_OK; k++)
            rc = step_serially(rt, rt->sel[k]);
    }
    rt->in_call = 0;
    if (rc)
        fail_selected(rt);
    return rc;
}

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
    for (uint32_t p = 0; p < rt->nparts; p++)
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
        memcpy(o + (size_t)e * rt->sz.entity_size, entity_state(rt, in, e),
               rt->sz.entity_size);
    return SEER_OK;
}

int seer_runtime_global_state(seer_runtime *rt, uint32_t instance, float *out)
{
    if (check_instance(rt, instance))
        return SEER_E_ARG;
    memset(out, 0, rt->sz.state_dim * sizeof(float));
    if (!rt->model->global_state)
        return SEER_OK;
    if (!rt->inst[instance].ready) {
        seer_fail(rt, "instance %u has not been reset", instance);
        return SEER_E_ORDER;
    }
    if (!rt->workers) { /* broken: the pool, worker 0 included, is gone */
        seer_fail(rt, "this runtime cannot run any more (its worker pool could not be "
                      "restarted: out of memory or threads); close it and create a new one");
        return SEER_E_NOMEM;
    }
    seer_ctx c;
    seer_ctx_setup(&c, rt, &rt->workers[0], instance, PHASE_BOUNDARY);
    c.now = (seer_time)c.inst->step * rt->sz.step_duration;
    if (SEER_CHECKING(rt)) {
        seer_check_begin_call(rt);
        (void)seer_check_run(&c, SEER_HOOK_STATE, &(seer_hook_args){.fout = out});
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
    out->events = rt->events_total;
    out->windows = rt->windows_total;
    out->steps = rt->steps_total;
    uint64_t refills = rt->refills_total;
    for (uint32_t t = 0; t < rt->nthreads; t++)
        refills += rt->workers[t].refills;
    out->pool_refills = refills;
    /* Under the reserve's lock: a worker that woke late may still be taking
     * its stock of free events from the reserve (run_phases) after the call
     * returned.  The runtime itself is never const (seer_runtime_create). */
    pthread_mutex_t *lock = (pthread_mutex_t *)&rt->reserve_lock;
    pthread_mutex_lock(lock);
    out->pool_events = rt->pool_events;
    pthread_mutex_unlock(lock);
    out->serial_fallbacks = rt->serial_fallbacks;
}
