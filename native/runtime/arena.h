/*
 * arena.h -- a bump allocator over chunks kept from use to use (private):
 * the optimistic executor's rollback logs and their lists of sent events
 * (optimistic.c).
 *
 *   seer_arena   chunks in a list; allocation bumps a pointer in the current
 *                chunk and moves to the next one (reusing it, else a new one)
 *                when it is full; reset rewinds to the first chunk without
 *                freeing anything, so once warm an arena does not allocate.
 *                `used` counts the bytes of the chunks started since the
 *                reset, which a caller bounds (`cap`): the optimistic
 *                executor's log limit.
 *
 * Threads: single owner (_owner, base.h): the thread that holds the
 * arena -- during a call the worker holding a speculation slot; between
 * phases the completer (which reads every arena after the phase completed:
 * the acq_rel completions order it, sync.h).  No synchronization inside.
 * Progress: not applicable (no shared state); an allocation takes O(1) steps
 * plus at most one malloc.
 *
 * tests/native/test_arena.c checks it (run_sanitizers.sh).
 */
#ifndef SEER_ARENA_H
#define SEER_ARENA_H

#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h" /* after the system headers: malloc may be the test's */

typedef struct seer_arena_chunk {
    struct seer_arena_chunk *next;
    size_t size; /* bytes of mem */
    size_t fill; /* bytes used since the reset (set when the arena moves past it) */
    alignas(16) unsigned char mem[];
} seer_arena_chunk;

/* A zeroed seer_arena is an empty one.  p/end: the current chunk's free
 * bytes (NULL before the first allocation); callers may test them for room
 * inline (seer_arena_room_owner). */
typedef struct seer_arena {
    seer_arena_chunk *first, *cur;
    unsigned char *p, *end;
    size_t used; /* bytes of the chunks started since the reset */
} seer_arena;

/* Rewind to the first chunk (kept, as are the others). */
static inline void seer_arena_reset_owner(seer_arena *a)
{
    a->cur = a->first;
    a->p = a->first ? a->first->mem : NULL;
    a->end = a->first ? a->first->mem + a->first->size : NULL;
    a->used = a->first ? a->first->size : 0;
    if (a->first)
        a->first->fill = 0;
}

/* Free every chunk; the arena is empty (zeroed) after. */
static inline void seer_arena_free(seer_arena *a)
{
    for (seer_arena_chunk *c = a->first, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    memset(a, 0, sizeof *a);
}

/* Does the current chunk hold n more bytes? */
static inline int seer_arena_room_owner(const seer_arena *a, size_t n)
{
    return a->p && (size_t)(a->end - a->p) >= n;
}

/* Move to the next chunk holding n bytes (reusing the next one, else a new
 * one of max(n, chunk) bytes after the current), unless the bytes started
 * since the reset would pass `cap` (force: ignore it).  0 on success, -1
 * (nothing changed) otherwise.  The slow path: not inlined. */
__attribute__((noinline, unused)) static int seer_arena_next_owner(seer_arena *a, size_t n,
                                                                 size_t chunk, size_t cap,
                                                                 int force)
{
    seer_arena_chunk *next = a->cur ? a->cur->next : a->first;
    if (!next || next->size < n) {
        const size_t size = n > chunk ? n : chunk;
        if (!force && a->used + size > cap)
            return -1;
        seer_arena_chunk *c = malloc(sizeof *c + size);
        if (!c)
            return -1;
        c->size = size;
        c->next = next;
        if (a->cur)
            a->cur->next = c;
        else
            a->first = c;
        next = c;
    } else if (!force && a->used + next->size > cap) {
        return -1;
    }
    if (a->cur)
        a->cur->fill = (size_t)(a->p - a->cur->mem);
    a->cur = next;
    a->cur->fill = 0;
    a->p = next->mem;
    a->end = next->mem + next->size;
    a->used += next->size;
    return 0;
}

/* n bytes (16-aligned when every allocation's n is a multiple of 16), or
 * NULL (see seer_arena_next_owner). */
static inline void *seer_arena_alloc_owner(seer_arena *a, size_t n, size_t chunk, size_t cap,
                                           int force)
{
    if (__builtin_expect(!seer_arena_room_owner(a, n), 0) &&
        seer_arena_next_owner(a, n, chunk, cap, force) != 0)
        return NULL;
    void *r = a->p;
    a->p += n;
    return r;
}

/* Every record of `stride` bytes taken since the reset, in the order they
 * were taken (an arena used with one stride only: a chunk's tail too short
 * for a record is skipped, as the allocation skipped it). */
static inline void seer_arena_each_owner(seer_arena *a, size_t stride,
                                         void (*fn)(void *arg, void *rec), void *arg)
{
    if (!a->cur)
        return;
    for (seer_arena_chunk *c = a->first;; c = c->next) {
        const size_t fill = c == a->cur ? (size_t)(a->p - c->mem) : c->fill;
        for (size_t off = 0; off + stride <= fill; off += stride)
            fn(arg, c->mem + off);
        if (c == a->cur)
            break;
    }
}

#endif /* SEER_ARENA_H */
