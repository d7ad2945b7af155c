/*
 * check.h -- the checking mode (check.c; private).
 */
#ifndef SEER_CHECK_H
#define SEER_CHECK_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "check_rows.h"
#include "runtime.h"

/* ---- check.c: the checking mode -------------------------------------------- */

/* Handler kinds, and the regions a checked handler may find protected. */
enum seer_hook {
    SEER_HOOK_INIT = 0,
    SEER_HOOK_ACT,
    SEER_HOOK_HANDLE,
    SEER_HOOK_BOUNDARY,
    SEER_HOOK_OBSERVE,
    SEER_HOOK_PUBLISH,
    SEER_HOOK_STATE,
    SEER_HOOK_MASK
};
enum {
    SEER_REGION_STATE = 1,
    SEER_REGION_SNAPSHOT,
    SEER_REGION_INSTANCE,
    SEER_REGION_CONFIG,
    SEER_REGION_STATIC,
    SEER_REGION_NULL,   /* a NULL pointer (plus an offset) */
    SEER_REGION_OUTPUT  /* a fence around the output rows (seer_check_out_row) */
};

/* A handler's arguments, whatever its kind. */
typedef struct seer_hook_args {
    void *entity;            /* init/act/handle: state; boundary: instance data;
                                publish: the record; action_mask: the row      */
    const void *cptr;        /* act: action; handle: payload; publish: state   */
    uint32_t type;           /* handle: event type; observe, action_mask: agent */
    uint32_t size;           /* handle: payload bytes                         */
    const seer_output *out;  /* observe                                       */
    float *fout;             /* global_state                                  */
} seer_hook_args;

/* One checked handler call, on the stack of the thread that makes it. */
typedef struct seer_check_frame {
    sigjmp_buf jb;               /* where a protected access jumps back to      */
    struct seer_runtime *rt;
    struct seer_inst *inst;
    volatile int armed;          /* the handler is running                      */
    volatile int region;         /* SEER_REGION_* it touched (0: none)          */
    volatile uintptr_t addr;     /* the address                                 */
    volatile int write;          /* 1 write, 0 read, -1 unknown                 */
    const char *foreign;         /* first nondeterministic C function it called */
    int foreign_clock;           /* ... and whether it reads a clock            */
} seer_check_frame;
/* The checked handler running on this thread, NULL when none. */
extern _Thread_local seer_check_frame *seer_check_current;

/* At creation (after allocation) / destruction of a runtime in checking mode. */
int seer_check_setup(struct seer_runtime *rt);
void seer_check_teardown(struct seer_runtime *rt);
/* Around a call (reset, step, global state) of a runtime in checking mode. */
void seer_check_begin_call(struct seer_runtime *rt);
void seer_check_end_call(struct seer_runtime *rt);
/* Before the runtime itself writes states or snapshots during a call. */
void seer_check_disarm(struct seer_runtime *rt);
/* Call handler `hook` with the memory it must not touch protected (on the
 * handler's thread, which is the host: checking runs serially); returns the
 * handler's status or SEER_E_ISOLATION (the worker's error is set). */
int seer_check_run(seer_ctx *c, int hook, const seer_hook_args *a);
/* Is this runtime isolating its handlers? */
#define SEER_CHECKING(rt) __builtin_expect(((rt)->check.mode & SEER_CHECK_ISOLATE) != 0, 0)

#endif /* SEER_CHECK_H */
