/*
 * park.h -- parking a thread on a 32-bit word until another thread changes it
 * (private, base layer).  On Linux a futex; elsewhere a short sleep, which is
 * correct (every waiter re-checks its condition) but slower to wake.
 *
 * The protocol that makes a wake never lost (sync.h uses it for phases, pool.c
 * for the optimistic executor's idle workers):
 *
 *   waiter:  sleepers += 1 (seq_cst); re-check the condition; if it still
 *            holds, seer_park_wait_any(word, value the condition read);
 *            sleepers -= 1
 *   waker:   change `word` (seq_cst); if sleepers > 0 (seq_cst load):
 *            seer_park_wake_all_any(word)
 *
 * Both sides' seq_cst operations are in one total order: either the waiter's
 * re-check sees the change, or the waker sees the waiter counted and wakes it;
 * a wake that comes between the re-check and the wait is not lost either: the
 * kernel compares `word` with the expected value under its own lock and
 * returns at once when they differ.
 *
 * Any thread (_any).  Both may return early (a signal, a spurious wake):
 * callers loop on their condition.
 */
#ifndef SEER_PARK_H
#define SEER_PARK_H

#include <stdatomic.h>
#include <stdint.h>

/* Sleep while *word == expected (at most `max_ns` nanoseconds: 0 = no limit). */
void seer_park_wait_any(_Atomic uint32_t *word, uint32_t expected, uint64_t max_ns);

/* Wake every thread parked on `word`. */
void seer_park_wake_all_any(_Atomic uint32_t *word);

#endif /* SEER_PARK_H */
