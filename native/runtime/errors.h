/*
 * errors.h -- error messages (errors.c; private).
 */
#ifndef SEER_ERRORS_H
#define SEER_ERRORS_H

#include <stddef.h>

#include "runtime.h"

/* ---- errors.c -------------------------------------------------------------- */

/* Record the message of a failed API call in rt->err (host). */
void seer_fail(seer_runtime *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record the first error of this worker in the current call (w's thread; the
 * completer may use worker 0's slot between phases, when no thread holds a
 * chunk). */
void seer_worker_error_local(seer_worker *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Write a message into err (when given) and return code.  Pure. */
int seer_fail_buf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The shortest %g form of v that reads back as v.  Pure. */
const char *seer_fmt_double(char buf[32], double v);

#endif /* SEER_ERRORS_H */
