/*
 * phases.h -- the per-item operations of a call (phases.c; private).
 */
#ifndef SEER_PHASES_H
#define SEER_PHASES_H

#include <stdint.h>

#include "runtime.h"

/* ---- phases.c: the per-item operations of a call ------------------------- */

/* On the thread of w, for an item that thread holds for the phase; each
 * stops at (or records) the first error in w->err. */
/* After every handler: turn a non-zero return into w's error; returns
 * w->err. */
int seer_after_handler(seer_ctx *c, int rc, const char *what);
/* Reseed an entity and zero its state and snapshot (its pending events go
 * with its queue). */
void seer_clear_entity(seer_worker *w, seer_inst *in, uint32_t e, uint64_t seed);
int seer_init_entity(seer_worker *w, uint32_t inst, uint32_t e);
int seer_act_agent(seer_worker *w, uint32_t inst, uint32_t a);
void seer_boundary_instance(seer_worker *w, uint32_t inst);
void seer_observe_agent(seer_worker *w, uint32_t inst, uint32_t a);
void seer_publish_entity(seer_worker *w, uint32_t inst, uint32_t e);
/* After the boundary phases: count the step.  By the thread that ran them
 * (serial, whole-instance mode) or the completer of the last one. */
void seer_finish_instance(seer_runtime *rt, uint32_t inst);

/* Host buffer `which` (SEER_BUF_*): values per agent and bytes per value
 * (seer_buffer_bytes, seer_runtime.h, is the bytes of B instances). */
void seer_buffer_layout(const seer_sizes *sz, int which, size_t *values, size_t *bytes);

#endif /* SEER_PHASES_H */
