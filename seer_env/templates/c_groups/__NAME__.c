/*
 * __NAME__: a seer model with two agent groups (written by
 * `seer-env new __NAME__ --groups`; make it yours).
 *
 * The example dynamics: scouts find jobs and send them to workers, who
 * process them.
 *   "scout_<i>"  (num_scouts agents): each step a scout chooses its search
 *                effort e in [0, 1] (Box(0, 1, (1,))).  Its search is one
 *                event chain: at every FIND event it finds a job with
 *                probability e and sends it to the least loaded worker (as
 *                the workers published at the last boundary), one lookahead
 *                later.  Reward: jobs found in the step - effort_cost * e.
 *   "worker_<i>" (num_workers agents): each step a worker chooses two things
 *                (MultiDiscrete([3, 2])): its pace (0 rest, 1 work, 2 rush:
 *                twice as fast, but it tires) and whether to hand one waiting
 *                job to the next worker (0 keep, 1 hand over).  Its jobs are
 *                one event chain too: a FINISH event per job in service.
 *                Reward: jobs finished in the step - queue_cost * jobs waiting.
 * The action mask forbids a worker to rush once it is tired (fatigue ==
 * max_fatigue; resting lowers it) and to hand over a job when none waits.
 * Nobody terminates; every agent is truncated after max_cycles steps.
 *
 * Every hook a grouped model can have is here, commented.  The rules every
 * handler keeps (the event-locality contract; `seer-env check` tests them):
 *   1. write only your own entity's state (the `entity` argument);
 *   2. read your state, the configuration, other entities' *published*
 *      snapshot records (seer_snapshot) and the instance data;
 *   3. schedule to yourself at >= now, to others at >= now + lookahead;
 *   4. draw random numbers only from seer_rng_* (your entity's stream).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "seer.h"

/* ---- configuration --------------------------------------------------------
 * One struct; every member a host may set is listed in __NAME___params below
 * with its default, range and a line of doc.  Hosts set values by name and
 * the runtime checks them against that table before describe runs. */
typedef struct __NAME___config {
    uint32_t num_scouts;  /* agents of group 0, "scout"                       */
    uint32_t num_workers; /* agents of group 1, "worker"                      */
    uint32_t max_fatigue; /* a worker this tired may not rush                 */
    double mean_find;     /* mean time between a scout's search attempts      */
    double mean_work;     /* mean time a worker needs for a job (pace 1)      */
    double effort_cost;   /* a scout's reward cost per unit of effort         */
    double queue_cost;    /* a worker's reward cost per waiting job           */
    double lookahead;     /* L: a job reaches another agent >= L later        */
    double step_duration; /* D: simulated time per step                       */
} __NAME___config;

static const seer_param __NAME___params[] = {
    {SEER_MEMBER(__NAME___config, num_scouts), .def = 2, .lo = 1, .hi = 1 << 16,
     .doc = "scout agents (group 0)"},
    {SEER_MEMBER(__NAME___config, num_workers), .def = 3, .lo = 2, .hi = 1 << 16,
     .doc = "worker agents (group 1)"},
    {SEER_MEMBER(__NAME___config, max_fatigue), .def = 3, .lo = 1, .hi = 1000,
     .doc = "a worker this tired may not rush (rushing adds 1, resting takes 1)"},
    {SEER_MEMBER(__NAME___config, mean_find), .def = 1.0, .lo = 0, .hi = 1e6,
     .flags = SEER_P_GT, .doc = "mean time between a scout's search attempts (exponential)"},
    {SEER_MEMBER(__NAME___config, mean_work), .def = 2.0, .lo = 0, .hi = 1e6,
     .flags = SEER_P_GT, .doc = "mean time a worker needs for a job at pace 1 (exponential)"},
    {SEER_MEMBER(__NAME___config, effort_cost), .def = 0.5, .lo = 0, .hi = 1e6,
     .doc = "a scout's reward cost per unit of effort"},
    {SEER_MEMBER(__NAME___config, queue_cost), .def = 0.1, .lo = 0, .hi = 1e6,
     .doc = "a worker's reward cost per waiting job"},
    {SEER_MEMBER(__NAME___config, lookahead), .def = 0.5, .lo = 0, .hi = 1e6,
     .flags = SEER_P_GT, .doc = "a job reaches another agent at least this much later"},
    {SEER_MEMBER(__NAME___config, step_duration), .def = 4.0, .lo = 0, .hi = 1e6,
     .flags = SEER_P_GT, .doc = "simulated time per step"},
};

/* ---- entity state, event payload, snapshot record, instance data --------
 * A model has one entity state struct for all its entities; here scouts use
 * the first members, workers the others. */
typedef struct __NAME___agent {
    /* scouts */
    float effort;           /* last action                                      */
    uint32_t step_found;    /* jobs found in the current step                   */
    uint64_t found;         /* jobs found since reset                           */
    /* workers */
    uint32_t pace;          /* last action, component 0: 0 rest, 1 work, 2 rush */
    uint32_t queue;         /* jobs waiting (not counting the one in service)   */
    uint32_t busy;          /* 1 while a job is in service                      */
    uint32_t fatigue;       /* 0 .. max_fatigue                                 */
    uint32_t step_finished; /* jobs finished in the current step                */
    uint64_t finished;      /* jobs finished since reset                        */
    uint64_t handed;        /* jobs handed to the next worker since reset       */
} __NAME___agent;

/* The state's members, for hosts that read it (env.runtime.entity_array()). */
static const seer_field __NAME___fields[] = {
    {SEER_MEMBER(__NAME___agent, effort)},        {SEER_MEMBER(__NAME___agent, step_found)},
    {SEER_MEMBER(__NAME___agent, found)},         {SEER_MEMBER(__NAME___agent, pace)},
    {SEER_MEMBER(__NAME___agent, queue)},         {SEER_MEMBER(__NAME___agent, busy)},
    {SEER_MEMBER(__NAME___agent, fatigue)},       {SEER_MEMBER(__NAME___agent, step_finished)},
    {SEER_MEMBER(__NAME___agent, finished)},      {SEER_MEMBER(__NAME___agent, handed)},
};

/* FIND: a scout's next search attempt (to itself, no payload); JOB: a job
 * arrives at a worker; FINISH: a worker's job in service is done. */
enum { FIND = 0, JOB = 1, FINISH = 2 };

typedef struct __NAME___job {
    uint32_t from; /* the agent that sent it */
} __NAME___job;

/* What every agent publishes at each step boundary for the others to read
 * during the next step: a worker's load (0 for scouts). */
typedef struct __NAME___record {
    uint32_t load; /* queue + busy */
} __NAME___record;

/* Written by the boundary hook, read by every handler. */
typedef struct __NAME___totals {
    double mean_load; /* the workers' mean load */
} __NAME___totals;

enum { SCOUT = 0, WORKER = 1 };            /* the groups, in agent order     */
enum { SCOUT_OBS = 3, WORKER_OBS = 5 };    /* their observation sizes        */
enum { PACES = 3, HAND = 2 };              /* the workers' components        */

static bool is_scout(const __NAME___config *c, uint32_t agent)
{
    return agent < c->num_scouts; /* group 0 takes the first count agents */
}

/* ---- describe: cross-parameter rules, derived values, sizes --------------
 * With groups, describe gives the totals and what all agents share; the
 * `group` hook below gives each group's spaces (the runtime then sets
 * obs_dim, action_dim and info_dim to the largest group's). */
static int __NAME___describe(void *config, seer_sizes *out, char *err, size_t errlen)
{
    const __NAME___config *c = config;
    /* single parameters were checked against __NAME___params already; here
     * the rules that tie several together (on error: a message naming the
     * parameter into err, return SEER_E_CONFIG) */
    if ((uint64_t)c->num_scouts * 64 < c->num_workers) {
        snprintf(err, errlen,
                 "__NAME__: num_workers=%u is more than 64 per scout (num_scouts=%u): most "
                 "workers would never see a job",
                 c->num_workers, c->num_scouts);
        return SEER_E_CONFIG;
    }
    out->num_agents = c->num_scouts + c->num_workers;
    out->num_entities = out->num_agents; /* every entity is an agent here */
    out->num_groups = 2;                 /* > 1: the group hook describes each */
    out->state_dim = 2;
    out->entity_size = sizeof(__NAME___agent);
    out->payload_size = sizeof(__NAME___job);
    out->snapshot_size = sizeof(__NAME___record);
    out->instance_size = sizeof(__NAME___totals);
    out->lookahead = c->lookahead;
    out->step_duration = c->step_duration;
    out->pending_events = (uint64_t)out->num_agents * 4; /* memory estimate */
    return SEER_OK;
}

/* ---- group: each group's name, size, spaces and info names ---------------
 * Group 0 is agents 0 .. count-1, group 1 the next count, and so on; the
 * counts must add up to num_agents, names must differ, and no space may be
 * empty (the runtime refuses the model otherwise).  Agents are named
 * "<name>_<i>", i counted within the group. */
static const char *const scout_info[] = {"found"};
static const char *const worker_info[] = {"finished", "handed"};

static int __NAME___group(const void *config, uint32_t group, seer_group *out, char *err,
                          size_t errlen)
{
    const __NAME___config *c = config;
    switch (group) {
    case SCOUT:
        *out = (seer_group){.name = "scout", .count = c->num_scouts, .obs_dim = SCOUT_OBS,
                            .action_kind = SEER_ACTION_BOX, .action_dim = 1,
                            .action_low = 0.0f, .action_high = 1.0f,
                            .info_dim = 1, .info_names = scout_info};
        return 0;
    case WORKER:
        *out = (seer_group){.name = "worker", .count = c->num_workers, .obs_dim = WORKER_OBS,
                            .action_kind = SEER_ACTION_MULTI_DISCRETE, .action_dim = 2,
                            .info_dim = 2, .info_names = worker_info};
        return 0;
    default: snprintf(err, errlen, "__NAME__: no group %u", group); return 1;
    }
}

/* ---- action_nvec: the choices of each multi-discrete component ---------- */
static void __NAME___action_nvec(const void *config, uint32_t group, int32_t *nvec)
{
    (void)config;
    if (group == WORKER) {
        nvec[0] = PACES; /* 0 rest, 1 work, 2 rush */
        nvec[1] = HAND;  /* 0 keep, 1 hand one waiting job to the next worker */
    }
}

/* Start the next waiting job if the worker is free and not resting. */
static int start_job(seer_ctx *ctx, const __NAME___config *c, __NAME___agent *st)
{
    if (st->busy || st->queue == 0 || st->pace == 0)
        return SEER_OK;
    st->queue--;
    st->busy = 1;
    const seer_time t = seer_rng_exponential(ctx, c->mean_work) / (double)st->pace;
    return seer_schedule(ctx, seer_self(ctx), seer_now(ctx) + t, FINISH, NULL, 0);
}

/* The least loaded worker, as published at the last boundary; ties go to
 * the first after a per-scout offset, so scouts spread their jobs. */
static uint32_t least_loaded(seer_ctx *ctx, const __NAME___config *c, const __NAME___agent *st)
{
    const uint32_t w0 = c->num_scouts, n = c->num_workers;
    const uint32_t off = (uint32_t)((seer_self(ctx) + st->found) % n);
    uint32_t best = w0 + off, load = UINT32_MAX;
    for (uint32_t j = 0; j < n; j++) {
        const uint32_t w = w0 + (off + j) % n;
        const __NAME___record *r = seer_snapshot(ctx, w);
        if (r->load < load) {
            load = r->load;
            best = w;
        }
    }
    return best;
}

/* ---- init: each entity at reset (t = 0), its state zeroed --------------- */
static int __NAME___init(seer_ctx *ctx, void *entity)
{
    const __NAME___config *c = seer_config(ctx);
    (void)entity;
    if (!is_scout(c, seer_self(ctx)))
        return SEER_OK; /* workers wait for jobs */
    return seer_schedule(ctx, seer_self(ctx), seer_rng_exponential(ctx, c->mean_find), FIND,
                         NULL, 0);
}

/* ---- act: each live agent's action at the start of a step ---------------
 * `action` is the agent's group's: a scout's 1 float32 (clipped to [0, 1]),
 * a worker's 2 int32 components, each in range and allowed by its mask. */
static int __NAME___act(seer_ctx *ctx, void *entity, const void *action)
{
    const __NAME___config *c = seer_config(ctx);
    __NAME___agent *st = entity;
    if (is_scout(c, seer_self(ctx))) {
        st->effort = *(const float *)action;
        st->step_found = 0;
        return SEER_OK;
    }
    const int32_t *v = action;
    st->pace = (uint32_t)v[0];
    st->step_finished = 0;
    if (st->pace == 2 && st->fatigue < c->max_fatigue) /* the mask forbids rushing  */
        st->fatigue++;                                 /* at max_fatigue (advisory: */
    else if (st->pace == 0 && st->fatigue > 0)         /* it stays at max)          */
        st->fatigue--;
    if (v[1] == 1 && st->queue > 0) { /* the mask forbids it with no job waiting */
        const uint32_t w0 = c->num_scouts, self = seer_self(ctx);
        const uint32_t next = w0 + (self - w0 + 1) % c->num_workers;
        __NAME___job job = {.from = self};
        st->queue--;
        st->handed++;
        int rc = seer_schedule(ctx, next, seer_now(ctx) + c->lookahead, JOB, &job, sizeof job);
        if (rc)
            return rc;
    }
    return start_job(ctx, c, st);
}

/* ---- handle: one event for this entity ------------------------------------ */
static int __NAME___handle(seer_ctx *ctx, void *entity, uint32_t type, const void *payload,
                           uint32_t size)
{
    (void)payload;
    (void)size;
    const __NAME___config *c = seer_config(ctx);
    __NAME___agent *st = entity;
    switch (type) {
    case FIND: {
        if (seer_rng_uniform(ctx) < st->effort) {
            __NAME___job job = {.from = seer_self(ctx)};
            const uint32_t to = least_loaded(ctx, c, st);
            st->found++;
            st->step_found++;
            int rc = seer_schedule(ctx, to, seer_now(ctx) + c->lookahead, JOB, &job, sizeof job);
            if (rc)
                return rc;
        }
        return seer_schedule(ctx, seer_self(ctx),
                             seer_now(ctx) + seer_rng_exponential(ctx, c->mean_find), FIND,
                             NULL, 0);
    }
    case JOB:
        st->queue++;
        return start_job(ctx, c, st);
    case FINISH:
        st->busy = 0;
        st->finished++;
        st->step_finished++;
        return start_job(ctx, c, st);
    default: return seer_fail_step(ctx, "unknown event type");
    }
}

/* ---- boundary: once per instance, before observe (optional) -------------- */
static void __NAME___boundary(seer_ctx *ctx, void *instance_data)
{
    const __NAME___config *c = seer_config(ctx);
    __NAME___totals *t = instance_data;
    double load = 0.0;
    for (uint32_t w = c->num_scouts; w < c->num_scouts + c->num_workers; w++) {
        const __NAME___agent *st = seer_entity_state(ctx, w); /* the instance is quiescent */
        load += (double)(st->queue + st->busy);
    }
    t->mean_load = load / (double)c->num_workers;
}

/* ---- observe: each agent's outputs at the boundary -------------------------
 * out->obs holds the agent's group's obs_dim floats, out->info its group's
 * info values (the buffers' rows are as wide as the largest group's). */
static void __NAME___observe(seer_ctx *ctx, uint32_t agent, const seer_output *out)
{
    const __NAME___config *c = seer_config(ctx);
    const __NAME___agent *st = seer_entity_state(ctx, agent);
    const __NAME___totals *t = seer_instance_data(ctx);
    if (seer_agent_group(ctx, agent) == SCOUT) {
        out->obs[0] = st->effort;
        out->obs[1] = (float)st->step_found;
        out->obs[2] = (float)t->mean_load;
        *out->reward = (float)st->step_found - (float)(c->effort_cost * st->effort);
        out->info[0] = (double)st->found;
    } else {
        const uint32_t w0 = c->num_scouts;
        const uint32_t next = w0 + (agent - w0 + 1) % c->num_workers;
        const __NAME___agent *nb = seer_entity_state(ctx, next);
        out->obs[0] = (float)st->queue;
        out->obs[1] = (float)st->busy;
        out->obs[2] = (float)st->fatigue / (float)c->max_fatigue;
        out->obs[3] = (float)st->step_finished;
        out->obs[4] = (float)(nb->queue + nb->busy);
        *out->reward = (float)st->step_finished - (float)(c->queue_cost * st->queue);
        out->info[0] = (double)st->finished;
        out->info[1] = (double)st->handed;
    }
    *out->terminated = 0; /* nobody ends; max_cycles truncates */
}

/* ---- action_mask: the choices each agent may take in the next step ---------
 * Optional (drop the function and `.action_mask` from the table to have no
 * masks).  It runs after observe for every agent that acts next, except
 * those with Box actions (the scouts here).  A worker's row holds one byte
 * per choice, the components' one after another: [rest, work, rush, keep,
 * hand over], all 1 on entry; write 0 where a choice is forbidden, and write
 * only this row.  Every component must keep one choice allowed (here rest,
 * work and keep always are).  The host shows the row as
 * obs[agent]["action_mask"] (ParallelEnv, AEC) or
 * infos["action_mask"]["worker"] (vector_env) and refuses a forbidden action
 * with InvalidActionError before anything changes.  To let such actions
 * reach `act` instead, set `.flags = SEER_MODEL_MASK_ADVISORY` (the env
 * keyword enforce_masks=False does it for one env). */
static void __NAME___action_mask(seer_ctx *ctx, uint32_t agent, uint8_t *mask)
{
    const __NAME___config *c = seer_config(ctx);
    const __NAME___agent *st = seer_entity_state(ctx, agent);
    if (st->fatigue >= c->max_fatigue)
        mask[2] = 0; /* component 0, choice 2: rush */
    if (st->queue == 0)
        mask[PACES + 1] = 0; /* component 1, choice 1: hand over (nothing waits) */
}

/* ---- publish: each entity's record for the next step ---------------------- */
static void __NAME___publish(seer_ctx *ctx, const void *entity, void *record)
{
    (void)ctx;
    const __NAME___agent *st = entity;
    ((__NAME___record *)record)->load = st->queue + st->busy;
}

/* ---- global_state: the instance's state for centralised critics ---------- */
static void __NAME___global_state(seer_ctx *ctx, float *out)
{
    const __NAME___config *c = seer_config(ctx);
    uint64_t waiting = 0, finished = 0;
    for (uint32_t w = c->num_scouts; w < c->num_scouts + c->num_workers; w++) {
        const __NAME___agent *st = seer_entity_state(ctx, w);
        waiting += st->queue;
        finished += st->finished;
    }
    out[0] = (float)waiting;
    out[1] = (float)finished;
}

/* ---- bounds ------------------------------------------------------------------
 * group_obs_bounds (instead of obs_bounds): each group's own obs_dim
 * elements.  No agent_name hook: agents are "scout_<i>" and "worker_<i>". */
static void __NAME___group_obs_bounds(const void *config, uint32_t group, float *low,
                                      float *high)
{
    (void)config;
    const uint32_t n = group == SCOUT ? SCOUT_OBS : WORKER_OBS;
    for (uint32_t i = 0; i < n; i++) {
        low[i] = 0.0f;
        high[i] = HUGE_VALF; /* counts of jobs are unbounded */
    }
    if (group == SCOUT)
        high[0] = 1.0f; /* effort */
    else
        high[1] = high[2] = 1.0f; /* busy, fatigue / max_fatigue */
}

static void __NAME___state_bounds(const void *config, float *low, float *high)
{
    (void)config;
    for (int i = 0; i < 2; i++) {
        low[i] = 0.0f;
        high[i] = HUGE_VALF;
    }
}

static const char *const __NAME___event_names[] = {"FIND", "JOB", "FINISH"};

/* ---- the model table: the one symbol the build looks for ----------------- */
const seer_model __NAME___model = {
    .api_version = SEER_API_VERSION,
    .name = "__NAME__",
    .config_size = sizeof(__NAME___config),
    .params = __NAME___params,
    .num_params = SEER_COUNT(__NAME___params),
    .describe = __NAME___describe,
    .init = __NAME___init,
    .act = __NAME___act,
    .handle = __NAME___handle,
    .boundary = __NAME___boundary,
    .observe = __NAME___observe,
    .publish = __NAME___publish,
    .global_state = __NAME___global_state,
    .event_names = __NAME___event_names,
    .event_type_count = 3,
    .state_bounds = __NAME___state_bounds,
    .state_fields = __NAME___fields,
    .num_state_fields = SEER_COUNT(__NAME___fields),
    .max_cycles = 100,
    /* API version 3: groups, multi-discrete actions, masks */
    .group = __NAME___group,
    .group_obs_bounds = __NAME___group_obs_bounds,
    .action_nvec = __NAME___action_nvec,
    .action_mask = __NAME___action_mask, /* optional: leave out for no masks */
};
