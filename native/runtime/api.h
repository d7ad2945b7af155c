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

#endif /* SEER_API_H */
