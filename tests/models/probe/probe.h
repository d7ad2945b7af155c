/* probe: a test fixture model that breaks the contract on demand. */
#ifndef SEER_PROBE_H
#define SEER_PROBE_H

#include <stdint.h>

#include "seer.h"

enum seer_probe_mode {
    PROBE_NONE = 0,      /* behave                                           */
    PROBE_PAST = 1,      /* schedule an event before now                      */
    PROBE_LOOKAHEAD = 2, /* schedule to another entity inside the lookahead   */
    PROBE_TARGET = 3,    /* schedule to an entity that does not exist         */
    PROBE_PAYLOAD = 4,   /* payload larger than payload_size                  */
    PROBE_NAN = 5,       /* NaN event time                                    */
    PROBE_RETURN = 6,    /* handler returns a non-zero status                 */
    PROBE_INIT = 7,      /* init schedules to another entity at t = 0        */
    PROBE_OBSERVE = 8,   /* observe tries to schedule                         */
    PROBE_NULL = 9,      /* a payload size with a NULL payload                */
    PROBE_TYPE = 10      /* an event type not below event_type_count          */
};

typedef struct seer_probe_config {
    uint32_t num_entities;
    uint32_t mode;      /* enum seer_probe_mode                               */
    uint32_t at_step;   /* step whose events misbehave                        */
    uint32_t culprit;   /* entity that misbehaves                              */
    double lookahead;
} seer_probe_config;

typedef struct seer_probe_entity {
    uint64_t ticks;
} seer_probe_entity;

extern const seer_model seer_model_probe;

#endif
