/*
 * optimistic_state.h -- the optimistic executor's structures (private to
 * optimistic.c, Time Warp itself, and optimistic_sizing.c, which sizes and
 * frees them on the host).  See optimistic.c for how they are used.
 */
#ifndef SEER_OPTIMISTIC_STATE_H
#define SEER_OPTIMISTIC_STATE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "arena.h"
#include "runtime.h"
#include "spsc_ring.h"

#define OPT_BATCH 16u                 /* events between looks at the mailboxes  */
#define OPT_RING_MIN 64u              /* messages a ring holds, at least ...     */
#define OPT_RING_MAX 1024u            /* ... and at most                         */
#define OPT_SPINS 256u                /* idle pauses before yielding the CPU     */
#define OPT_YIELDS 8u                 /* ... and yields before parking           */
#define OPT_PARK_NS 50000u            /* a parked slot's longest nap: it is woken
                                         at the phase's end, and looks at its
                                         mailboxes after each nap (a sender never
                                         pays for a wake)                         */
#define OPT_CHUNK_MAX (1u << 20)      /* arena chunk bytes (smaller when the
                                         limit is small)                          */
#define OPT_CHUNK_MIN (16u << 10)
#define OPT_LOG_MIN (64ull << 20)     /* the default log limit, at least         */
#define OPT_EPOCH_MAX ((1u << (32 - SEER_EV_EPOCH_SHIFT)) - 1u)
/* A step runs as phases, each committed at its horizon (optimistic.c):
 * their width is adapted so that a phase handles about rt->opt.phase_events
 * events per slot (SEER_OPT_PHASE_EVENTS, runtime.h). */
#define OPT_FIRST_PHASES 1024.0 /* an instance's first phase: D / 1024 (the
                                   width then grows 4x a phase at most)      */
#define OPT_WIDTH_STEP 4.0      /* the width changes by this factor at most   */
#define OPT_WIDTH_MIN 0x1p-30   /* ... and stays within [D 2^-30, 4 D]        */

/* ---- the structures --------------------------------------------------------- */

/* An event a handling sent, and where to: its target's partition (so that
 * cancelling it never reads the event, which another slot may own). */
typedef struct opt_sent {
    seer_event *ev;
    uint32_t part;
    uint32_t inst;
} opt_sent;

/* One handling in an entity's log. */
typedef struct seer_opt_rec {
    struct seer_opt_rec *prev; /* the entity's previous handling this step     */
    seer_event *ev;            /* the event (NULL once undone)                 */
    opt_sent *sent;            /* the events it sent                           */
    uint32_t nsent;
    uint32_t inst;
    uint32_t handled;          /* handlings it covers: 1 + its cascade (see
                                  run_cascade)                                  */
    seer_entity_rec rec;       /* the entity's runtime record before it        */
    alignas(16) unsigned char state[]; /* the entity's state before it        */
} seer_opt_rec;

enum { MSG_EVENT = 0, MSG_ANTI = 1 };

typedef struct opt_msg {
    seer_event *ev;
    uint32_t inst;
    uint32_t kind; /* MSG_* */
} opt_msg;

/* Messages a slot could not push yet (its ring to that slot was full). */
typedef struct opt_backlog {
    opt_msg *a;
    uint32_t head, n, cap;
} opt_backlog;

typedef struct seer_opt_worker {
    uint32_t slot;          /* the slot this worker holds in the current phase */
    uint32_t slot_end;      /* ... or slots [slot, slot_end): all of them, where
                               no other worker came (seer_opt_run_slot)        */
    seer_arena recs;        /* log records (one stride each)                   */
    seer_arena sends;       /* their lists of sent events                      */
    size_t cap;             /* bytes the two arenas may take in a step         */
    size_t chunk;           /* bytes of a new chunk                            */
    opt_sent *sent;         /* the current handler's sends                     */
    uint32_t nsent, sent_cap;
    seer_event **cascade;   /* the current handling's zero-delay events for its
                               own entity below its key (see run_cascade)      */
    uint32_t ncascade, cascade_cap;
    opt_sent *cancel;       /* cancellations to carry out                      */
    uint32_t ncancel, cancel_cap;
    opt_backlog *backlog;   /* [slots]: by receiving slot                      */
    uint32_t backlogged;    /* messages in the backlogs                        */
    int64_t *net;           /* [B]: handlings kept (minus undone) this phase   */
    uint64_t *gross;        /* [B]: handlings this phase                       */
    uint32_t B, nparts, slots; /* what the arrays were sized for               */
    /* statistics of the current call (the completer adds them up) */
    uint64_t rollbacks, undone, anti;
    uint64_t tick;          /* events since the last Ctrl-C / budget check     */
} seer_opt_worker;

struct seer_opt_shared {
    /* active slots + messages in flight: the phase ends at 0 */
    alignas(SEER_CACHE_LINE) _Atomic int64_t work;
    char pad_[SEER_CACHE_LINE - sizeof(int64_t)];
    /* A slot that waits longer than its spins and yields parks on `bell`
     * (park.h), counted in `sleepers`, so that a peer that is not running
     * (descheduled: another thread pool, another process) gets the core back.
     * The slot that brings `work` to 0 rings the bell. */
    alignas(SEER_CACHE_LINE) _Atomic uint32_t bell;
    _Atomic uint32_t sleepers;
    char pad2_[SEER_CACHE_LINE - 2 * sizeof(uint32_t)];
    uint32_t slots;     /* of the current sizing                        */
    uint32_t nparts;    /* partitions it was cut for                    */
    uint32_t ring_cap;  /* messages per ring                            */
    seer_spsc *rings;   /* [slots * slots]: sender * slots + receiver   */
    opt_msg *ring_mem;  /* [slots * slots * ring_cap]: the rings' elements */
    uint32_t *first;    /* [slots + 1]: slot s holds [first[s], first[s+1]) */
    uint32_t *slot_of;  /* [nparts]                                     */
    uint32_t *scratch;  /* [B]: reordering the selection                */
    /* [B * nparts]: cancelled events still pending in each partition's
     * queue (marked, freed when popped; the rest when the step's last phase
     * ends).  Written by the slot holding the partition during a phase and
     * by the completer between phases. */
    uint32_t *ncancelled;
    uint32_t B;
    size_t rec_stride;  /* bytes of one log record                      */
};

/* ---- shared by optimistic.c and optimistic_phases.c --------------------------- */

/* Is ev one of the current speculation's events? */
static inline int ev_spec(const seer_runtime *rt, const seer_event *ev)
{
    return (ev->flags >> SEER_EV_EPOCH_SHIFT) == rt->opt.epoch;
}

static inline int inst_abandoned(seer_inst *in)
{
    /* relaxed: a hint that saves work; an instance any slot abandoned is
     * undone whole after the phase, whose completion orders it */
    return atomic_load_explicit(&in->opt_abandon, memory_order_relaxed) != 0;
}

/* The completer (worker w), after an abort: every message and log dropped,
 * their events freed into w's own free list (optimistic.c). */
void seer_opt_drop_everything_completer(seer_runtime *rt, seer_worker *w);

#endif /* SEER_OPTIMISTIC_STATE_H */
