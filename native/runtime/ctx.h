/*
 * ctx.h -- handler contexts (private): entity state addresses and context
 * setup, inline (ctx.c has the handler-facing functions of seer.h).
 */
#ifndef SEER_CTX_H
#define SEER_CTX_H

#include <stdint.h>

#include "runtime.h"

/* ---- contexts (ctx.c has the handler-facing functions) ---------------------- */

/* Entity e's state (checking mode: at the end of its pages, so a handler
 * that steps past either end of its struct reaches a neighbour's page). */
static inline void *seer_inst_state(const struct seer_runtime *rt, const seer_inst *in,
                                    uint32_t e)
{
    return in->states + (size_t)e * rt->entity_stride + rt->entity_pad;
}

/* Entity e's published snapshot record. */
static inline unsigned char *seer_inst_snapshot(const struct seer_runtime *rt,
                                                const seer_inst *in, uint32_t e)
{
    return in->snapshot + (size_t)e * rt->snapshot_stride + rt->snapshot_pad;
}

/* A context for a handler of instance `inst` in `phase` on w's thread, with
 * no entity yet. */
static inline void seer_ctx_setup(seer_ctx *c, struct seer_runtime *rt, seer_worker *w,
                                  uint32_t inst, int phase)
{
    c->spec = 0;
    c->solo = 0;
    c->cur_key = 0;
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

/* Point the context at entity e (its runtime record: sequence, RNG). */
static inline void seer_ctx_enter_entity(seer_ctx *c, uint32_t e)
{
    c->self = e;
    c->rec = &c->inst->recs[e];
}

#endif /* SEER_CTX_H */
