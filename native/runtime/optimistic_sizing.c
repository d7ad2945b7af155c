/*
 * optimistic_sizing.c -- the optimistic executor's host side: sizing the
 * mailboxes, slots, logs and per-worker state for the pool and the
 * selection before a speculative step (seer_opt_prepare), and freeing them
 * (seer_opt_release, seer_opt_free).  Time Warp itself is optimistic.c.
 *
 * Threads: the host, between calls.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "base.h"
#include "errors.h"
#include "event.h"
#include "optimistic.h"
#include "optimistic_state.h"
#include "runtime.h"
#include "spsc_ring.h"
#include "squeue.h"
#include "sync.h"

/* ---- sizing (host) -------------------------------------------------------------- */

static void free_worker_opt(seer_opt_worker *o)
{
    if (!o)
        return;
    seer_arena_free(&o->recs);
    seer_arena_free(&o->sends);
    free(o->sent);
    free(o->cascade);
    free(o->cancel);
    for (uint32_t s = 0; o->backlog && s < o->slots; s++)
        free(o->backlog[s].a);
    free(o->backlog);
    free(o->net);
    free(o->gross);
    free(o);
}

static void free_shared(struct seer_opt_shared *sh)
{
    if (!sh)
        return;
    free(sh->rings);
    free(sh->ring_mem);
    free(sh->first);
    free(sh->slot_of);
    free(sh->scratch);
    free(sh->ncancelled);
    free(sh);
}

void seer_opt_release(seer_runtime *rt)
{
    for (uint32_t t = 0; rt->pool.workers && t < rt->pool.nthreads; t++) {
        free_worker_opt(rt->pool.workers[t].opt);
        rt->pool.workers[t].opt = NULL;
    }
    free_shared(rt->opt.shared);
    rt->opt.shared = NULL;
    /* the logs point into the arenas, the rings may hold messages: between
     * calls both are empty, but a child of fork() may have been cut in the
     * middle of a call */
    for (uint32_t i = 0; rt->inst && i < rt->B; i++)
        if (rt->inst[i].opt_log)
            memset(rt->inst[i].opt_log, 0, rt->sz.num_entities * sizeof *rt->inst[i].opt_log);
}

void seer_opt_free(seer_runtime *rt)
{
    seer_opt_release(rt);
    for (uint32_t i = 0; rt->inst && i < rt->B; i++) {
        free(rt->inst[i].opt_log);
        rt->inst[i].opt_log = NULL;
    }
}

/* Mailboxes and slots for `slots` slots over the current partitions. */
static struct seer_opt_shared *make_shared(const seer_runtime *rt, uint32_t slots)
{
    struct seer_opt_shared *sh = aligned_alloc(SEER_CACHE_LINE,
                                               seer_round_up(sizeof *sh, SEER_CACHE_LINE));
    if (!sh)
        return NULL;
    memset(sh, 0, sizeof *sh);
    atomic_init(&sh->work, 0);
    sh->slots = slots;
    sh->nparts = rt->part.n;
    sh->B = rt->B;
    sh->rec_stride = seer_round_up(sizeof(seer_opt_rec) + rt->sz.entity_size, 16);
    uint32_t cap = OPT_RING_MAX;
    while (cap > OPT_RING_MIN && (uint64_t)cap * slots * slots > (1u << 16))
        cap /= 2;
    sh->ring_cap = cap;
    const size_t nr = (size_t)slots * slots;
    sh->rings = aligned_alloc(SEER_CACHE_LINE, seer_round_up(nr * sizeof(seer_spsc),
                                                             SEER_CACHE_LINE));
    sh->ring_mem = malloc(nr * cap * sizeof(opt_msg));
    sh->first = malloc((slots + 1) * sizeof *sh->first);
    sh->slot_of = malloc(rt->part.n * sizeof *sh->slot_of);
    sh->scratch = malloc(rt->B * sizeof *sh->scratch);
    sh->ncancelled = calloc((size_t)rt->B * rt->part.n, sizeof *sh->ncancelled);
    if (!sh->rings || !sh->ring_mem || !sh->first || !sh->slot_of || !sh->scratch ||
        !sh->ncancelled) {
        free_shared(sh);
        return NULL;
    }
    for (size_t k = 0; k < nr; k++) {
        memset(&sh->rings[k], 0, sizeof sh->rings[k]);
        seer_spsc_init(&sh->rings[k], sh->ring_mem + k * cap, cap);
    }
    for (uint32_t s = 0; s <= slots; s++)
        sh->first[s] = (uint32_t)((uint64_t)rt->part.n * s / slots);
    for (uint32_t s = 0; s < slots; s++)
        for (uint32_t p = sh->first[s]; p < sh->first[s + 1]; p++)
            sh->slot_of[p] = s;
    return sh;
}

static seer_opt_worker *make_worker_opt(const seer_runtime *rt, uint32_t slots)
{
    seer_opt_worker *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->B = rt->B;
    o->nparts = rt->part.n;
    o->slots = slots;
    o->backlog = calloc(slots, sizeof *o->backlog);
    o->net = calloc(rt->B, sizeof *o->net);
    o->gross = calloc(rt->B, sizeof *o->gross);
    if (!o->backlog || !o->net || !o->gross) {
        free_worker_opt(o);
        return NULL;
    }
    return o;
}

int seer_opt_prepare(seer_runtime *rt)
{
    /* the hooks through which the core reaches this executor: seer_schedule
     * during speculation (ctx.c), the pool's stop (pool.c) */
    rt->opt.schedule_local = seer_opt_schedule_local;
    rt->pool.release_exec = seer_opt_release;
    /* relaxed: the host is the only writer */
    const uint32_t active = atomic_load_explicit(&rt->pool.active, memory_order_relaxed);
    const uint32_t slots = active < rt->part.n ? active : rt->part.n;
    struct seer_opt_shared *sh = rt->opt.shared;
    if (!sh || sh->slots != slots || sh->nparts != rt->part.n || sh->B != rt->B) {
        struct seer_opt_shared *n = make_shared(rt, slots);
        if (!n)
            goto nomem;
        free_shared(sh);
        rt->opt.shared = sh = n;
    }
    for (uint32_t i = 0; i < rt->B; i++)
        if (!rt->inst[i].opt_log) {
            rt->inst[i].opt_log = calloc(rt->sz.num_entities, sizeof *rt->inst[i].opt_log);
            if (!rt->inst[i].opt_log)
                goto nomem;
        }
    /* every thread of the pool: a parked one may take a slot late (pool.c) */
    const size_t cap = rt->opt.log_limit / slots;
    size_t chunk = cap / 8;
    chunk = chunk > OPT_CHUNK_MAX ? OPT_CHUNK_MAX : chunk < OPT_CHUNK_MIN ? OPT_CHUNK_MIN : chunk;
    for (uint32_t t = 0; t < rt->pool.nthreads; t++) {
        seer_worker *w = &rt->pool.workers[t];
        if (w->opt && (w->opt->slots != slots || w->opt->nparts != rt->part.n ||
                       w->opt->B != rt->B)) {
            free_worker_opt(w->opt);
            w->opt = NULL;
        }
        if (!w->opt && !(w->opt = make_worker_opt(rt, slots)))
            goto nomem;
        w->opt->cap = cap;
        w->opt->chunk = chunk;
    }
    for (uint32_t k = 0; k < rt->call.nsel; k++)
        /* relaxed: published to the workers with the call (publish_job) */
        atomic_store_explicit(&rt->inst[rt->call.sel[k]].opt_abandon, 0, memory_order_relaxed);
    /* a new epoch: the events the step's first phase schedules carry it
     * (between calls every event is in a queue) */
    seer_opt_next_epoch_quiescent(rt);
    rt->opt.abandoned = 0;
    rt->opt.phase = 0;
    return SEER_OK;
nomem:
    seer_fail(rt, "out of memory preparing the optimistic executor (%u threads)", slots);
    return SEER_E_NOMEM;
}
