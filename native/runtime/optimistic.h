/*
 * optimistic.h -- what the optimistic executor (optimistic.c,
 * optimistic_phases.c, optimistic_sizing.c) exports to the rest of the
 * runtime (private).  Its
 * structures are optimistic_state.h.
 */
#ifndef SEER_OPTIMISTIC_H
#define SEER_OPTIMISTIC_H

#include <stdint.h>

#include "runtime.h"

/* ---- optimistic.c, optimistic_sizing.c: the optimistic executor ------------- */

/* Host, before a step with instances split across threads: size the
 * mailboxes, logs and slots for the pool and the selection, and start a new
 * speculation epoch.  On failure (SEER_E_NOMEM, rt->err set) nothing has
 * changed. */
int seer_opt_prepare(seer_runtime *rt);
/* Host, before a step of the optimistic executor with instances split
 * across threads: speculate (1), or run the conservative executor's windows
 * (0: the lookahead is above the resolution of the simulated time for every
 * selected instance, and a step holds at most SEER_OPT_WINDOWS_MAX windows
 * of width L, so windows cost little and roll nothing back). */
int seer_opt_speculates(const seer_runtime *rt);
/* Slots of the speculation phase (each a set of partitions one worker holds
 * for the whole phase). */
uint32_t seer_opt_slots(const seer_runtime *rt);
/* The completer, after the act phase of a speculative step: each selected
 * instance's first phase horizon (from the workers' local minima). */
void seer_opt_begin_completer(seer_runtime *rt);
/* The completer, opening a speculation phase. */
void seer_opt_open_completer(seer_runtime *rt);
/* A new speculation epoch (the host before a call, or the completer between
 * phases: no worker touches a queue). */
void seer_opt_next_epoch_quiescent(seer_runtime *rt);
/* The speculation phase's item: slot `slot` (or, where w holds every slot
 * of the phase, slots [slot, slot_end): their partitions run as one slot's,
 * every event delivered locally, no message), run by w until every slot is
 * idle and no message is in flight (or the call aborts); `bank`: the act
 * phase's outboxes, merged first. */
void seer_opt_run_slot(seer_worker *w, seer_ctx *c, uint32_t slot, uint32_t slot_end,
                       uint32_t bank);
/* The completer (worker w), after a speculation phase: statistics; the
 * instances abandoned in it are undone (to the end of the phase before) and
 * go to the end of the selection (rt->opt.abandoned of them in all, out of
 * rt->call.nsel); the others' next horizons.  Returns 1 when another phase
 * follows (an instance has events below its boundary), 0 when the step's
 * events are done.  After an abort, every message and log is dropped
 * (their events freed into w's own free list) and it returns 0. */
int seer_opt_finish_completer(seer_runtime *rt, seer_worker *w, int aborted);
/* Host, after the call: abandoned instance i taken back from the
 * speculation (counted in the statistics); returns the events its committed
 * phases handled, for the serial rest of its step (seer_step_serially, from
 * the end of its last committed phase). */
uint64_t seer_opt_take_abandoned(seer_runtime *rt, uint32_t i);
/* Host, after a failed call: instance i's abandoned speculation, not rerun,
 * is dropped (the events its logs hold freed, the logs forgotten); the
 * instance fails with the call, release_failed frees its queues. */
void seer_opt_drop(seer_runtime *rt, uint32_t i);
/* seer_schedule during speculation: ev (filled in) is kept for delivery
 * after the handler returns.  Always SEER_OK: what goes wrong abandons the
 * speculation. */
int seer_opt_schedule_local(seer_ctx *c, seer_event *ev);
/* Host: a speculative step on the pool's phase machine (pool.c), with the
 * speculation phases as its events phases; after seer_opt_prepare.  The
 * instances abandoned are the last rt->opt.abandoned of the selection. */
int seer_opt_run(seer_runtime *rt);
/* Free the workers' optimistic state and the mailboxes, and forget the logs
 * (the pool stops: they are made again for the next speculative step). */
void seer_opt_release(seer_runtime *rt);
/* Free everything (destroy). */
void seer_opt_free(seer_runtime *rt);

#endif /* SEER_OPTIMISTIC_H */
