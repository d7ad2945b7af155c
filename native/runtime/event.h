/*
 * event.h -- the event record and its flags (private).
 */
#ifndef SEER_EVENT_H
#define SEER_EVENT_H

#include <stdalign.h>
#include <stdint.h>

#include "seer.h"

/* One event record: a 32-byte header, then the payload (a PCS or Aircraft
 * event is one 64-byte line). */
typedef struct seer_event {
    union {
        seer_time time;                /* pending: when it is due          */
        struct seer_event *next_free;  /* free: the free list's link       */
    };
    uint64_t key; /* source entity << 40 | source sequence */
    uint32_t target;
    uint32_t type;
    uint32_t size;
    uint32_t flags; /* SEER_EV_* (optimistic executor; 0 elsewhere): written
                       only by the event's current owner.  The header stays
                       32 bytes. */
    alignas(16) unsigned char payload[];
} seer_event;

/* seer_event.flags: the optimistic executor's marks (optimistic.c).  The
 * bits above SEER_EV_EPOCH_SHIFT hold the epoch of the speculation that
 * scheduled the event (0: none), so an event belongs to the current step's
 * speculation when they equal rt->opt.epoch -- nothing has to clear them
 * when a step commits. */
enum {
    SEER_EV_HANDLED = 1u, /* handled speculatively: held by its target's log  */
    SEER_EV_CANCEL = 2u,  /* cancelled (an anti-message): freed when popped   */
    SEER_EV_EPOCH_SHIFT = 2
};

#endif /* SEER_EVENT_H */
