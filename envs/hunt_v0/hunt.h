/* Hunt: predators and prey on a grid with obstacles (agent groups, a
 * multi-discrete action space and action masks), as a seer model. */
#ifndef SEER_HUNT_H
#define SEER_HUNT_H

#include <stdint.h>

#include "seer.h"

typedef struct seer_hunt_config {
    uint32_t width;           /* grid columns                                  */
    uint32_t height;          /* grid rows                                     */
    uint32_t num_predators;   /* group "predator" (agents 0 .. P-1)            */
    uint32_t num_prey;        /* group "prey" (agents P .. P+Q-1)              */
    uint32_t torus;           /* 1: the grid wraps; 0: bounded (edges are walls) */
    uint32_t view;            /* r: agents see a (2r+1) x (2r+1) window        */
    uint32_t catch_need;      /* predators a catch needs on the prey's cell    */
    double obstacle_density;  /* probability that a cell is an obstacle        */
    double catch_reward;      /* reward of each predator on a catch (the prey loses it) */
    double step_cost;         /* predators pay it every step, prey earn it     */
    double forbidden_penalty; /* paid for a move the mask forbids (it stays)   */
} seer_hunt_config;

/* Per-agent state (one layout for both groups; the fields a group does not
 * use stay 0). */
typedef struct seer_hunt_agent {
    uint32_t cell;            /* col + row * width                             */
    uint32_t signal;          /* predator: signal of its last action (0/1)     */
    uint32_t forbidden;       /* 1: the last action's move was forbidden        */
    uint32_t caught;          /* prey: 1 once caught                           */
    uint32_t caught_now;      /* prey: caught in the last step                 */
    uint32_t catches_step;    /* predator: catches credited in the last step   */
    uint32_t hits;            /* prey: strikes on its cell in this step        */
    uint32_t pad;
    uint64_t strikers;        /* prey: bit i = predator i struck it this step  */
    uint64_t catches;         /* predator: catches since reset                 */
    uint64_t forbidden_total; /* forbidden moves since reset                   */
    uint64_t signals_total;   /* predator: actions with signal 1 since reset    */
    uint64_t steps_acted;     /* actions taken since reset                     */
} seer_hunt_agent;

extern const seer_model seer_model_hunt;

#endif
