/*
 * create.c -- the host API's creation and destruction of a runtime
 * (seer_runtime.h): the memory a configuration takes (seer_runtime_estimate,
 * refused up front when over the limit), validating the options, building
 * the runtime (strides, buffers, groups, instances, pool) and
 * seer_runtime_destroy.  Host thread.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "check.h"
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
#include "sync.h"

/* ---- creation: validating the options -------------------------------------- */

/* ---- the memory a runtime takes -------------------------------------------- */

/* The parts of a runtime's memory, as seer_runtime_estimate reports them:
 * the runtime's own and the host buffers (MEM_BUFFERS + SEER_BUF_*),
 * whoever allocates them (the Python layer allocates them, before it
 * creates the runtime, once this estimate has passed). */
enum {
    MEM_STATES,       /* entity states, snapshot and entity records         */
    MEM_EVENTS,       /* the pending events and their queue entries        */
    MEM_INSTANCE,     /* the model's per-instance data                     */
    MEM_GLOBAL_STATE, /* global-state outputs (state_dim floats each)      */
    MEM_BUFFERS,      /* + SEER_BUF_*: the host buffers                     */
    MEM_PARTS = MEM_BUFFERS + SEER_BUF_COUNT
};

static const char *const mem_part_names[MEM_PARTS] = {
    [MEM_STATES] = "entity states",
    [MEM_EVENTS] = "pending events",
    [MEM_INSTANCE] = "instance data",
    [MEM_GLOBAL_STATE] = "global-state outputs",
    [MEM_BUFFERS + SEER_BUF_ACTIONS] = "action buffer",
    [MEM_BUFFERS + SEER_BUF_OBS] = "observation buffer",
    [MEM_BUFFERS + SEER_BUF_REWARD] = "reward buffer",
    [MEM_BUFFERS + SEER_BUF_TERMINATED] = "terminated flags",
    [MEM_BUFFERS + SEER_BUF_TRUNCATED] = "truncated flags",
    [MEM_BUFFERS + SEER_BUF_ALIVE] = "alive flags",
    [MEM_BUFFERS + SEER_BUF_INFO] = "info buffer",
    [MEM_BUFFERS + SEER_BUF_ACTIVE] = "active flags",
    [MEM_BUFFERS + SEER_BUF_MASK] = "action masks",
};

const char *seer_memory_part_name(size_t part)
{
    return part < MEM_PARTS ? mem_part_names[part] : NULL;
}

static uint64_t mem_bytes(double x)
{
    return x >= 1.8e19 ? UINT64_MAX : (uint64_t)ceil(x);
}

/* The bytes of an event record of a model whose payloads take
 * `payload_size` bytes (set_strides; events.c's blocks hold them): records
 * of at most a line never straddle two (blocks are line-aligned). */
static size_t event_stride_for(uint32_t payload_size)
{
    size_t stride = seer_round_up(sizeof(seer_event) + payload_size, 16);
    if (stride < SEER_CACHE_LINE && SEER_CACHE_LINE % stride)
        stride = SEER_CACHE_LINE;
    return stride;
}

/* Bytes a runtime of these sizes takes, by part (in doubles first: absurd
 * sizes must not wrap around); returns the total (saturated).  The events
 * are a guess: the model's pending_events, with their queue entries and a
 * quarter more for the free lists' slack, and at least a block of records
 * for each of the `threads` workers' own (events.c: 256 KiB or more each; a
 * memory_limit under one let the runtime be made and failed its every
 * reset, "0 events in use", and under one a worker, a pool's first calls
 * failed now and then, a worker's stock of records out of the others'
 * reach); the rest is exact but for alignment. */
static uint64_t memory_estimate(const seer_sizes *sz, uint32_t B, uint32_t check,
                                uint32_t threads, uint64_t part[MEM_PARTS])
{
    const double page = (check & SEER_CHECK_ISOLATE) ? (double)seer_page_size() : 16.0;
    const double ent = (double)seer_round_up(sz->entity_size ? sz->entity_size : 1,
                                             (size_t)page) +
                       (double)seer_round_up(sz->snapshot_size ? sz->snapshot_size : 1,
                                             (size_t)page) +
                       (double)sizeof(seer_entity_rec) + 8.0;
    const double ev = (double)seer_round_up(sizeof(seer_event) + sz->payload_size, 16) + 16.0;
    part[MEM_STATES] = mem_bytes((double)B * sz->num_entities * ent);
    const uint64_t blocks = ((uint64_t)1 << seer_event_block_shift(event_stride_for(
                                                  sz->payload_size))) * (threads ? threads : 1);
    part[MEM_EVENTS] = mem_bytes((double)B * 1.25 * (double)sz->pending_events * ev);
    if (part[MEM_EVENTS] < blocks)
        part[MEM_EVENTS] = blocks;
    part[MEM_INSTANCE] = mem_bytes((double)B * sz->instance_size);
    part[MEM_GLOBAL_STATE] = mem_bytes((double)B * sz->state_dim * sizeof(float));
    for (int b = 0; b < SEER_BUF_COUNT; b++) {
        size_t values, bytes;
        seer_buffer_layout(sz, b, &values, &bytes);
        part[MEM_BUFFERS + b] =
            mem_bytes((double)B * sz->num_agents * (double)values * (double)bytes);
    }
    uint64_t total = 0;
    for (int k = 0; k < MEM_PARTS; k++)
        total = part[k] > UINT64_MAX - total ? UINT64_MAX : total + part[k];
    return total;
}

/* "13.8 GiB", "12.0 MiB", "512 bytes" */
static const char *human_bytes(uint64_t n, char *buf, size_t len)
{
    if (n >= (1ull << 30))
        snprintf(buf, len, "%.1f GiB", (double)n / 1073741824.0);
    else if (n >= (1ull << 20))
        snprintf(buf, len, "%.1f MiB", (double)n / 1048576.0);
    else if (n >= (1ull << 10))
        snprintf(buf, len, "%.1f KiB", (double)n / 1024.0);
    else
        snprintf(buf, len, "%llu bytes", (unsigned long long)n);
    return buf;
}

/* What part k of the estimate is made of, in words. */
static void part_detail(const seer_sizes *sz, uint32_t B, int k, char *buf, size_t len)
{
    switch (k) {
    case MEM_STATES:
        snprintf(buf, len, "%u instance(s) x %u entities of %u bytes, with their snapshot "
                 "records", B, sz->num_entities, sz->entity_size);
        return;
    case MEM_EVENTS:
        snprintf(buf, len, "%u instance(s) x %llu pending events, at least a block of "
                 "event records a thread", B, (unsigned long long)sz->pending_events);
        return;
    case MEM_INSTANCE:
        snprintf(buf, len, "%u instance(s) x %u bytes", B, sz->instance_size);
        return;
    case MEM_GLOBAL_STATE:
        snprintf(buf, len, "%u instance(s) x %u floats", B, sz->state_dim);
        return;
    default: {
        size_t values, bytes;
        seer_buffer_layout(sz, k - MEM_BUFFERS, &values, &bytes);
        snprintf(buf, len, "%u instance(s) x %u agents x %zu value(s) of %zu byte(s)", B,
                 sz->num_agents, values, bytes);
        return;
    }
    }
}

/* The options on their own, before the model describes its sizes. */
static int check_options(const seer_runtime_options *o, char *err, size_t errlen)
{
    if (!o)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "options must not be NULL");
    if (o->num_instances == 0)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "num_instances must be >= 1");
    if (o->executor != SEER_EXECUTOR_SERIAL && o->executor != SEER_EXECUTOR_PARALLEL &&
        o->executor != SEER_EXECUTOR_OPTIMISTIC)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "unknown executor %d", o->executor);
    if (o->threads == 0 || o->threads > SEER_MAX_THREADS)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "threads=%u must be in [1, %u]",
                             o->threads, (unsigned)SEER_MAX_THREADS);
    if (o->executor == SEER_EXECUTOR_SERIAL && o->threads != 1)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "the serial executor runs on one thread");
    if (o->check & ~(uint32_t)(SEER_CHECK_ISOLATE | SEER_CHECK_SHUFFLE))
        return seer_fail_buf(err, errlen, SEER_E_ARG, "unknown check flags %#x", o->check);
    if (o->check && o->executor == SEER_EXECUTOR_OPTIMISTIC)
        return seer_fail_buf(err, errlen, SEER_E_EXECUTOR,
                             "the optimistic executor runs no checking mode (check flags "
                             "%#x): check on the serial executor (SEER_CHECK_ISOLATE) or the "
                             "parallel one (SEER_CHECK_SHUFFLE)",
                             o->check);
    if ((o->check & SEER_CHECK_ISOLATE) && o->executor != SEER_EXECUTOR_SERIAL)
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "SEER_CHECK_ISOLATE runs on the serial executor");
    if ((o->check & SEER_CHECK_SHUFFLE) && o->executor != SEER_EXECUTOR_PARALLEL)
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "SEER_CHECK_SHUFFLE runs on the parallel executor");
    return SEER_OK;
}

/* The model's sizes on these options: the checking mode's pages, the
 * parallel executor's lookahead, the memory limit, the executive list's
 * index space. */
static int check_fits(const seer_model *model, const seer_runtime_options *o,
                      const seer_sizes *sz, uint64_t part[MEM_PARTS], char *err, size_t errlen)
{
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
                             "find independent events; use executor='optimistic' (speculation, "
                             "several threads) or 'serial'",
                             model->name);
    /* every byte counts, the host buffers included, before any is allocated */
    const uint64_t limit = o->memory_limit ? o->memory_limit : seer_physical_memory();
    const uint64_t need = memory_estimate(sz, o->num_instances, o->check, o->threads, part);
    if (need > limit) {
        int big = 0;
        for (int k = 1; k < MEM_PARTS; k++)
            if (part[k] > part[big])
                big = k;
        char total[32], allowed[32], biggest[32], detail[160];
        part_detail(sz, o->num_instances, big, detail, sizeof detail);
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "model '%s': this configuration needs about %s (%llu bytes), "
                             "more than the %s (%llu bytes) allowed (%s); the biggest part "
                             "is the %s: %s (%s); make it smaller",
                             model->name, human_bytes(need, total, sizeof total),
                             (unsigned long long)need, human_bytes(limit, allowed, sizeof allowed),
                             (unsigned long long)limit,
                             o->memory_limit ? "memory_limit" : "the machine's memory",
                             mem_part_names[big], human_bytes(part[big], biggest, sizeof biggest),
                             detail);
    }
    /* The executive list indexes (instance, entity) pairs with 31 bits. */
    if ((uint64_t)o->num_instances * sz->num_entities >= (1ull << 31))
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "num_instances * num_entities = %llu must be below 2^31",
                             (unsigned long long)o->num_instances * sz->num_entities);
    return SEER_OK;
}

/* Check the model, the configuration (which describe completes) and the
 * options of seer_runtime_create; *sz gets the model's sizes. */
static int validate_options(const seer_model *model, void *config, size_t config_size,
                            const seer_runtime_options *o, seer_sizes *sz,
                            uint64_t part[MEM_PARTS], char *err, size_t errlen)
{
    int rc = seer_model_check(model, err, errlen);
    if (rc != SEER_OK)
        return rc;
    if (config_size != model->config_size)
        return seer_fail_buf(err, errlen, SEER_E_ARG,
                             "model '%s': config size %zu does not match the model's %zu",
                             model->name, config_size, model->config_size);
    rc = check_options(o, err, errlen);
    if (rc != SEER_OK)
        return rc;
    rc = seer_model_describe(model, config, sz, err, errlen);
    if (rc != SEER_OK)
        return rc;
    return check_fits(model, o, sz, part, err, errlen);
}

int seer_runtime_estimate(const seer_model *model, const void *config, size_t config_size,
                          const seer_runtime_options *opts, uint64_t *parts, size_t nparts,
                          char *err, size_t errlen)
{
    if (config_size && !config)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "config must not be NULL");
    void *cfg = calloc(1, config_size ? config_size : 1); /* describe completes a copy */
    if (!cfg)
        return seer_fail_buf(err, errlen, SEER_E_NOMEM, "out of memory");
    if (config_size)
        memcpy(cfg, config, config_size);
    seer_sizes sz;
    uint64_t part[MEM_PARTS] = {0};
    const int rc = validate_options(model, cfg, config_size, opts, &sz, part, err, errlen);
    free(cfg);
    for (size_t k = 0; parts && k < nparts; k++)
        parts[k] = k < MEM_PARTS ? part[k] : 0;
    return rc;
}

/* ---- creation: building the runtime ---------------------------------------- */

static void *xcalloc(size_t n, size_t size, int *ok)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        *ok = 0;
    return p;
}

/* Alignment of states, snapshot records and instance data: checking mode
 * gives each (and the configuration) pages of their own (check.c). */
static size_t region_align(const seer_runtime *rt)
{
    return (rt->check.mode & SEER_CHECK_ISOLATE) ? seer_page_size() : 16;
}

static void apply_options(seer_runtime *rt, const seer_model *model, const seer_sizes *sz,
                          void *config, const seer_runtime_options *o)
{
    rt->model = model;
    rt->sz = *sz;
    rt->B = o->num_instances;
    rt->executor = o->executor;
    rt->max_cycles = o->max_cycles;
    rt->config = config;
    rt->check.mode = o->check;
    rt->check.shuffle_seed = o->shuffle_seed;
    rt->rt_flags = o->flags;
    rt->max_step_events = o->max_step_events ? o->max_step_events : SEER_DEFAULT_STEP_EVENTS;
    rt->memory_limit = o->memory_limit ? o->memory_limit : seer_physical_memory();
    rt->opt.log_limit = o->log_limit;
    const char *env = getenv("SEER_LOG_LIMIT");
    if (!rt->opt.log_limit && env && *env)
        rt->opt.log_limit = strtoull(env, NULL, 10);
    if (!rt->opt.log_limit) {
        rt->opt.log_limit = rt->memory_limit / 8;
        if (rt->opt.log_limit < (64ull << 20))
            rt->opt.log_limit = 64ull << 20;
    }
    /* events per thread a speculation phase aims at (optimistic.c); tests
     * set it small to run many phases a step */
    const char *pe = getenv("SEER_PHASE_EVENTS");
    atomic_init(&rt->opt.gather_ns, SEER_OPT_GATHER_START_NS);
    rt->opt.phase_events = pe && *pe ? strtoull(pe, NULL, 10) : 0;
    if (!rt->opt.phase_events)
        rt->opt.phase_events = SEER_OPT_PHASE_EVENTS;
    /* the pool's workers kept off the caller's CPU between a training
     * loop's calls (company.c, seer_pool_keep_off_caller_host) unless this
     * says 0; alone stretches where they lose their cores (company.c)
     * unless SEER_POOL_ALONE says 0 */
    const char *pa = getenv("SEER_POOL_ALONE");
    rt->pool.alone.allowed = !(pa && pa[0] == '0' && pa[1] == '\0');
    /* ... and a stretch's end looks at the caller's CPUs unless this says 0 */
    const char *pc = getenv("SEER_POOL_ALONE_CPUS");
    rt->pool.alone.cpus_free =
        pc && pc[0] == '0' && pc[1] == '\0' ? NULL : seer_cpus_free_ns_any;
    const char *ko = getenv("SEER_KEEP_OFF_CALLER");
    rt->pool.keep_off_allowed = !(ko && ko[0] == '0' && ko[1] == '\0');
    /* a pool's free lists put back in address order now and then
     * (events_layout.c, seer_event_order_pool_when_due_host) unless this
     * says 0 */
    const char *op = getenv("SEER_ORDER_POOLS");
    rt->mem.order_pools = op && op[0] && !op[1] && (op[0] == '0' || op[0] == '1')
                              ? (op[0] == '0' ? 0 : 2)
                              : 1;
    rt->mem.cache_bytes = seer_event_cache_bytes();
    /* pending events moved into address order after a serial reset or a
     * switch, and at a pool's orderings (events_layout.c, seer_event_relayout_host)
     * unless this says 0 (=1: on the serial executor whatever the sizes) */
    const char *rl = getenv("SEER_RELAYOUT");
    rt->mem.relayout = rl && rl[0] && !rl[1] && (rl[0] == '0' || rl[0] == '1')
                           ? (rl[0] == '0' ? 0 : 2)
                           : 1;
    rt->fork_gen = seer_fork_generation();
}

/* Locks and atomics: before anything that can fail (destroy needs them). */
static void init_sync(seer_runtime *rt)
{
    pthread_mutex_init(&rt->mem.lock, NULL);
    pthread_mutex_init(&rt->pool.wake_lock, NULL);
    pthread_cond_init(&rt->pool.wake_cond, NULL);
    atomic_init(&rt->pool.job_gen, 0);
    atomic_init(&rt->pool.shutdown, 0);
    seer_phases_init(&rt->pool.ph);
    atomic_init(&rt->call.abort_code, 0);
}

/* The strides of event records, states, snapshot records, instance data. */
static void set_strides(seer_runtime *rt)
{
    const seer_sizes *sz = &rt->sz;
    const size_t align = region_align(rt);
    rt->event_stride = event_stride_for(sz->payload_size);
    rt->mem.block_shift = seer_event_block_shift(rt->event_stride);
    rt->entity_stride = seer_round_up(sz->entity_size ? sz->entity_size : 1, align);
    rt->snapshot_stride = seer_round_up(sz->snapshot_size ? sz->snapshot_size : 1, align);
    /* checking mode: flush with the page's end (sizeof a struct is a
     * multiple of its alignment, so the state stays aligned) */
    const size_t fit = (rt->check.mode & SEER_CHECK_ISOLATE) ? 1 : 16;
    rt->entity_pad = rt->entity_stride - seer_round_up(sz->entity_size ? sz->entity_size : 1, fit);
    rt->snapshot_pad =
        rt->snapshot_stride - seer_round_up(sz->snapshot_size ? sz->snapshot_size : 1, fit);
    rt->idata_stride = seer_round_up(sz->instance_size ? sz->instance_size : 1, align);
}

/* Checking mode: the configuration moves to pages of its own (protected
 * read-only by seer_check_setup). */
static int isolate_config(seer_runtime *rt, size_t config_size)
{
    if (!(rt->check.mode & SEER_CHECK_ISOLATE))
        return SEER_OK;
    void *cfg = rt->config;
    const size_t align = region_align(rt);
    rt->check.config_len = seer_round_up(config_size ? config_size : 1, align);
    rt->config = aligned_alloc(align, rt->check.config_len);
    if (rt->config) {
        memset(rt->config, 0, rt->check.config_len);
        memcpy(rt->config, cfg, config_size);
    }
    free(cfg);
    return rt->config ? SEER_OK : SEER_E_NOMEM;
}

/* The host buffers the caller did not provide, the selection, and
 * SEER_CHECK_SHUFFLE's visiting orders. */
static int alloc_buffers(seer_runtime *rt, const seer_runtime_options *o)
{
    int ok = 1;
    const size_t B = rt->B, N = rt->sz.num_entities;
    void *bufs[SEER_BUF_COUNT];
    for (int b = 0; b < SEER_BUF_COUNT; b++) {
        bufs[b] = o->buffers[b];
        if (!bufs[b]) {
            bufs[b] = xcalloc(seer_buffer_bytes(&rt->sz, rt->B, b), 1, &ok);
            rt->buf.owned |= 1u << b;
        }
    }
    rt->buf.actions = bufs[SEER_BUF_ACTIONS];
    rt->buf.obs = bufs[SEER_BUF_OBS];
    rt->buf.reward = bufs[SEER_BUF_REWARD];
    rt->buf.terminated = bufs[SEER_BUF_TERMINATED];
    rt->buf.truncated = bufs[SEER_BUF_TRUNCATED];
    rt->buf.alive = bufs[SEER_BUF_ALIVE];
    rt->buf.active = bufs[SEER_BUF_ACTIVE];
    rt->buf.info = bufs[SEER_BUF_INFO];
    rt->buf.mask = bufs[SEER_BUF_MASK];
    rt->call.sel = xcalloc(B, sizeof *rt->call.sel, &ok);
    if (rt->check.mode & SEER_CHECK_SHUFFLE) /* visiting orders: at most B x N items a phase */
        rt->call.perm = xcalloc(B * N, sizeof *rt->call.perm, &ok);
    return ok ? SEER_OK : SEER_E_NOMEM;
}

/* The agent groups, copied from the model (describe has checked them). */
static int set_groups(seer_runtime *rt, char *why, size_t whylen)
{
    const seer_sizes *sz = &rt->sz;
    seer_rt_groups *G = &rt->grp;
    int ok = 1;
    G->n = sz->num_groups ? sz->num_groups : 1;
    G->g = xcalloc(G->n, sizeof *G->g, &ok);
    G->of_agent = xcalloc(sz->num_agents, 1, &ok);
    G->nvec = xcalloc((size_t)G->n * SEER_MAX_COMPONENTS, sizeof *G->nvec, &ok);
    if (!ok)
        return SEER_E_NOMEM;
    char err[SEER_ERRLEN];
    uint32_t first = 0;
    size_t nv = 0;
    int multi = 0;
    for (uint32_t g = 0; g < G->n; g++) {
        seer_group x;
        uint64_t total = 0;
        seer_rt_group *t = &G->g[g];
        if (seer_model_group(rt->model, rt->config, sz, g, &x, err, sizeof err) != SEER_OK ||
            seer_model_action_nvec(rt->model, rt->config, sz, g, &x, G->nvec + nv, &total, err,
                                   sizeof err) != SEER_OK)
            /* describe accepted them: the model is not deterministic */
            return seer_fail_buf(why, whylen, SEER_E_MODEL,
                                 "%s (at the runtime's creation, after describe accepted the "
                                 "same configuration: a model's hooks must answer alike for "
                                 "it)",
                                 err);
        *t = (seer_rt_group){.first = first, .count = x.count, .obs_dim = x.obs_dim,
                             .info_dim = x.info_dim, .action_dim = x.action_dim,
                             .kind = x.action_kind, .action_n = x.action_n,
                             .low = x.action_low, .high = x.action_high};
        snprintf(t->name, sizeof t->name, "%s", x.name ? x.name : "agents");
        if (x.action_kind == SEER_ACTION_MULTI_DISCRETE) {
            t->nvec = G->nvec + nv;
            nv += x.action_dim;
            multi = 1;
        }
        t->mask_len = sz->mask_dim ? (uint32_t)seer_model_group_choices(&x, total) : 0;
        if (first + x.count > sz->num_agents)
            break; /* told below */
        memset(G->of_agent + first, (int)g, x.count);
        first += x.count;
    }
    G->enforce_mask = sz->mask_dim && !(rt->model->flags & SEER_MODEL_MASK_ADVISORY) &&
                      !(rt->rt_flags & SEER_RT_MASK_ADVISORY);
    G->simple = G->n == 1 && !multi && !G->enforce_mask;
    if (first != sz->num_agents)
        return seer_fail_buf(why, whylen, SEER_E_MODEL,
                             "model '%s': at the runtime's creation its groups did not add up "
                             "to num_agents=%u, as they did for describe: a model's hooks must "
                             "answer alike for the same configuration",
                             rt->model->name, sz->num_agents);
    return SEER_OK;
}

/* A region of an instance (states, snapshot records, instance data):
 * line-aligned, or, in checking mode, pages of its own between fences
 * (seer_check_region_alloc), where a write past its end faults. */
static void *region_alloc(const seer_runtime *rt, size_t bytes, size_t line)
{
    if (rt->check.mode & SEER_CHECK_ISOLATE)
        return seer_check_region_alloc(bytes);
    return aligned_alloc(line, seer_round_up(bytes, line));
}

static void region_free(const seer_runtime *rt, void *p, size_t bytes)
{
    if (rt->check.mode & SEER_CHECK_ISOLATE)
        seer_check_region_free(p, bytes);
    else
        free(p);
}

/* The instances: states, snapshot records, instance data, entity records
 * and the serial queue of each (line-aligned; see seer_inst). */
static int alloc_instances(seer_runtime *rt)
{
    const size_t B = rt->B, N = rt->sz.num_entities;
    rt->inst = aligned_alloc(SEER_CACHE_LINE, B * sizeof *rt->inst);
    if (!rt->inst)
        return SEER_E_NOMEM;
    memset(rt->inst, 0, B * sizeof *rt->inst);
    const size_t align = region_align(rt);
    const size_t line = align > 64 ? align : 64;
    for (size_t i = 0; i < B; i++) {
        seer_inst *in = &rt->inst[i];
        seer_squeue_init(&in->queue);
        in->states = region_alloc(rt, N * rt->entity_stride, line);
        in->snapshot = region_alloc(rt, N * rt->snapshot_stride, line);
        in->idata = region_alloc(rt, rt->idata_stride, line);
        in->recs = aligned_alloc(64, seer_round_up(N * sizeof(seer_entity_rec), 64));
        if (!in->states || !in->snapshot || !in->idata || !in->recs)
            return SEER_E_NOMEM;
        memset(in->states, 0, N * rt->entity_stride);
        memset(in->snapshot, 0, N * rt->snapshot_stride);
        memset(in->idata, 0, rt->idata_stride);
        memset(in->recs, 0, N * sizeof(seer_entity_rec));
        if (rt->check.mode & SEER_CHECK_ISOLATE)
            seer_check_fill_pads(rt, in, 1);
    }
    return SEER_OK;
}

/* The partitions and the worker pool (one thread for the serial executor),
 * then the checking mode's protections. */
static int start_pool(seer_runtime *rt, const seer_runtime_options *o)
{
    const uint32_t pool = rt->executor == SEER_EXECUTOR_SERIAL
                              ? 1
                              : seer_active_threads(o->flags, o->threads);
    if (seer_set_partitions(rt, pool) != SEER_OK || seer_pool_start(rt, pool) != SEER_OK ||
        seer_check_setup(rt) != SEER_OK)
        return SEER_E_NOMEM;
    if (!(rt->check.mode & SEER_CHECK_ISOLATE))
        return SEER_OK;
    size_t host = 0; /* the output rows' fences: as large as the largest host buffer */
    const int which[5] = {SEER_BUF_OBS, SEER_BUF_INFO, SEER_BUF_MASK, SEER_BUF_REWARD,
                          SEER_BUF_ACTIONS};
    for (int k = 0; k < 5; k++) {
        const size_t b = seer_buffer_bytes(&rt->sz, rt->B, which[k]);
        host = b > host ? b : host;
    }
    return seer_check_out_setup(rt, seer_buffer_bytes(&rt->sz, rt->B, SEER_BUF_MASK), host);
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
    uint64_t part[MEM_PARTS];
    int rc = validate_options(model, cfg, config_size, opts, &sz, part, err, errlen);
    if (rc != SEER_OK) {
        free(cfg);
        return rc;
    }
    seer_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) {
        free(cfg);
        return seer_fail_buf(err, errlen, SEER_E_NOMEM, "out of memory");
    }
    apply_options(rt, model, &sz, cfg, opts); /* rt owns cfg from here on */
    init_sync(rt);
    set_strides(rt);
    rc = isolate_config(rt, config_size);
    if (rc == SEER_OK)
        rc = alloc_buffers(rt, opts);
    char why[SEER_ERRLEN] = "";
    if (rc == SEER_OK)
        rc = set_groups(rt, why, sizeof why);
    if (rc == SEER_OK)
        rc = alloc_instances(rt);
    if (rc == SEER_OK)
        rc = start_pool(rt, opts);
    if (rc != SEER_OK) {
        seer_runtime_destroy(rt);
        /* the model's own failure is told as it is, never as memory */
        if (rc != SEER_E_NOMEM && why[0])
            return seer_fail_buf(err, errlen, rc, "%s", why);
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
    seer_opt_free(rt);
    if (rt->inst) {
        for (uint32_t i = 0; i < rt->B; i++) {
            seer_inst *in = &rt->inst[i];
            seer_squeue_free(&in->queue);
            seer_free_part_queues(rt, in->parts);
            const size_t N = rt->sz.num_entities;
            region_free(rt, in->states, N * rt->entity_stride);
            region_free(rt, in->snapshot, N * rt->snapshot_stride);
            region_free(rt, in->idata, rt->idata_stride);
            free(in->recs);
        }
    }
    seer_event_blocks_free(rt);
    free(rt->mem.chunks);
    free(rt->mem.homes);
    free(rt->inst);
    free(rt->part.of);
    free(rt->part.start);
    void *bufs[SEER_BUF_COUNT] = {
        rt->buf.actions, rt->buf.obs,  rt->buf.reward, rt->buf.terminated, rt->buf.truncated,
        rt->buf.alive,   rt->buf.info, rt->buf.active, rt->buf.mask};
    for (int b = 0; b < SEER_BUF_COUNT; b++)
        if (rt->buf.owned & (1u << b))
            free(bufs[b]);
    free(rt->call.sel);
    free(rt->call.perm);
    free(rt->snap_scratch);
    free(rt->grp.g);
    free(rt->grp.nvec);
    free(rt->grp.of_agent);
    seer_check_teardown(rt);
    free(rt->config);
    pthread_mutex_destroy(&rt->mem.lock);
    pthread_mutex_destroy(&rt->pool.wake_lock);
    pthread_cond_destroy(&rt->pool.wake_cond);
    free(rt);
}
