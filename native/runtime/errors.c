/*
 * errors.c -- error messages.  Three places hold one:
 *
 *   rt->err      the message of the last failed API call, which
 *                seer_runtime_error returns: written by seer_fail on the
 *                host thread (and by the executors, which copy the first
 *                worker error there when a call ends)
 *   w->msg       the first error a worker hit in the current call, with its
 *                code in w->err: written by seer_worker_error_local on that
 *                worker's thread (handlers' contract violations, a model's
 *                failure, out of memory, Ctrl-C, the event budget)
 *   err buffer   seer_fail_buf, for calls that have no runtime yet (create,
 *                the model boundary in model.c): any thread
 *
 * seer_fmt_double formats simulated times for messages; any thread.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "errors.h"
#include "runtime.h"

void seer_fail(seer_runtime *rt, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->err, sizeof rt->err, fmt, ap);
    va_end(ap);
}

void seer_worker_error_local(seer_worker *w, int code, const char *fmt, ...)
{
    if (w->err)
        return;
    w->err = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof w->msg, fmt, ap);
    va_end(ap);
}

int seer_fail_buf(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* The shortest %g form of v that reads back as v (like Python's repr). */
const char *seer_fmt_double(char buf[32], double v)
{
    if (v == floor(v) && fabs(v) < 1e15) { /* integral: as an integer */
        snprintf(buf, 32, "%.0f", v);
        return buf;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (isnan(v) || strtod(buf, NULL) == v)
            break;
    }
    return buf;
}
