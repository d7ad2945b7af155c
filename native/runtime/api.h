/*
 * api.h -- what the host API's entry points share (runtime.c; private to the
 * api layer: create.c, runtime.c, threads.c, snapshot.c).  No core, base or
 * executor file includes it: they are called by the entry points, never the
 * other way round.
 */
#ifndef SEER_API_H
#define SEER_API_H

#include "runtime.h"

/* ---- runtime.c: the call lifecycle ------------------------------------------ */

/* Every call that runs the model or changes the pool starts here (host
 * thread, under the caller's lock): re-creates the pool in a child of fork(),
 * refuses on a broken runtime, watches SIGINT from here on. */
int seer_call_begin(seer_runtime *rt);

/* ---- threads.c: the pool's size and partitions ------------------------------ */

/* Steps a runtime runs on partitions other than its pool size's (after a
 * switch parked workers or changed executor) before it is cut anew. */
#define SEER_SETTLE_STEPS 16u

/* At a step's start (host thread, between calls): once a runtime has run
 * SEER_SETTLE_STEPS steps on partitions other than those of a runtime
 * created with its executor and pool size, cut it into those.  A pool of 2
 * parked down to 1 kept its 2 partitions, stepped window by window by one
 * thread: PCS 64x64 ran 9% slower alone, 14% beside another env process,
 * than on the 1-thread runtime's one partition; cutting at every switch
 * cost STPA's probe visits 2.5 ms a switch (the events move twice, the
 * pool is made anew).  On failure (out of memory) nothing changed, or the
 * instances that lost their events say so. */
int seer_settle_partitions_host(seer_runtime *rt);

#endif /* SEER_API_H */
