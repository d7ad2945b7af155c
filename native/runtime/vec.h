/*
 * vec.h -- the runtime's growable arrays (private): one growth rule for
 * every vector of the runtime (the event queue's entry vectors, squeue.c;
 * the optimistic executor's send, cascade, cancellation and backlog lists,
 * optimistic.c).
 *
 *   seer_vec_grow_owner   make room for `need` elements in an array of
 *                         `*cap`: capacity 64, then doubling (at most
 *                         UINT32_MAX elements); never shrinks, so after
 *                         warm-up a vector does not allocate.
 *
 * Threads: single owner (_owner, base.h): the thread that holds the
 * vector; no synchronization inside.  Ownership passes only through the
 * phase transitions or between calls, which order the accesses (sync.h).
 * Progress: not applicable (no shared state); one realloc at most per call.
 *
 * tests/native/test_vec.c checks it (run_sanitizers.sh).
 */
#ifndef SEER_VEC_H
#define SEER_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "seer.h" /* SEER_OK, SEER_E_NOMEM */

#include "faults.h" /* after the system headers: realloc may be the test's */

/* Grow *a (elements of `elem` bytes, *cap of them) to hold at least `need`:
 * SEER_OK, or SEER_E_NOMEM with *a and *cap unchanged (need above
 * UINT32_MAX, or realloc failed).  Nothing happens when need <= *cap. */
static inline int seer_vec_grow_owner(void **a, uint32_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return SEER_OK;
    if (need > UINT32_MAX)
        return SEER_E_NOMEM;
    uint64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX)
        c = UINT32_MAX;
    void *p = realloc(*a, (size_t)c * elem);
    if (!p)
        return SEER_E_NOMEM;
    *a = p;
    *cap = (uint32_t)c;
    return SEER_OK;
}

/* seer_vec_grow_owner on an array lvalue `arr` (T *) and its uint32_t
 * capacity lvalue `cap`: the element size is the array's own. */
#define SEER_VEC_GROW_OWNER(arr, cap, need) \
    seer_vec_grow_owner((void **)&(arr), &(cap), (need), sizeof *(arr))

#endif /* SEER_VEC_H */
