/*
 * check_rows.h -- the checking mode's fenced memory (check_rows.c; private):
 * regions between PROT_NONE fences, the output rows a checked handler
 * writes.  Below check.h, which reads faults in them.
 */
#ifndef SEER_CHECK_ROWS_H
#define SEER_CHECK_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* The system's page size. */
size_t seer_page_size(void);
/* Checking mode (SEER_CHECK_ISOLATE): the PROT_NONE fence put before and
 * after a region of `bytes` bytes (entity states, snapshot records,
 * instance data, the output rows): as large as the region (pointer
 * arithmetic over as many entities again lands in it), at least 1 MiB, at
 * most 1 GiB, whole pages.  Address space only. */
size_t seer_check_fence(size_t bytes);
/* Checking mode: `bytes` bytes, page-aligned, between two fences (NULL:
 * out of memory); the host, at creation.  seer_check_region_free (NULL:
 * nothing) takes the same `bytes`. */
void *seer_check_region_alloc(size_t bytes);
void seer_check_region_free(void *p, size_t bytes);

/* Checking mode: the output rows a hook writes (observe's, global_state's,
 * the action masks) are private copies in slots of their own pages
 * (seer_rt_check.out_map), each row followed by at least SEER_GUARD_BYTES
 * bytes of SEER_GUARD_BYTE to its slot's end, which must be as they were
 * after the hook (a write just past a row would land in the next agent's
 * row, or past the caller's buffer), and every slot between PROT_NONE
 * fences at least as large as the largest host buffer, so that a write far
 * past a row (an agent's index times obs_dim) faults and is named
 * (SEER_REGION_OUTPUT) instead of landing in the checker's own heap. */
#define SEER_GUARD_BYTES 64
#define SEER_GUARD_BYTE 0xA5
/* The inputs a checked handler reads (act's action, handle's payload) are
 * copies too, in slots SEER_IN_ACTION and SEER_IN_PAYLOAD of the same
 * mapping, each ending at its slot's end against the fence: a read past the
 * action (the next agent's, in a plain run) or past payload_size bytes (the
 * next event record's) faults and is named; check.c compares the row with
 * what it copied after the hook (a write into a const input). */
/* The output rows' mapping (seer_rt_check.out_map), after
 * seer_check_setup (the host, at creation, checking mode only):
 * `mask_bytes`, the action masks of every instance; `host_bytes`, the
 * largest host buffer (the fences' size); both seer_buffer_bytes.  Unmapped
 * by seer_check_teardown. */
int seer_check_out_setup(struct seer_runtime *rt, size_t mask_bytes, size_t host_bytes);
/* Slot `slot`'s row, its `len` bytes zeroed and its guard bytes set (the
 * host, around one checked call; len at most the slot's, the largest
 * group's: the slot's out_len is the call's from here on); the row it
 * stands for lies at byte `host_at` of a host buffer of `host_len` bytes. */
unsigned char *seer_check_out_row(struct seer_runtime *rt, int slot, size_t len, size_t host_at,
                                  size_t host_len);
/* Input slot `slot`'s row (SEER_IN_*): a copy of the `len` bytes at `src`
 * (at most the slot's: the largest group's action, payload_size), ending at
 * the slot's end (the host, around one checked call; the slot's out_len is
 * the call's); the input lies at byte `host_at` of a host buffer of
 * `host_len` bytes. */
const unsigned char *seer_check_in_row(struct seer_runtime *rt, int slot, const void *src,
                                       size_t len, size_t host_at, size_t host_len);
/* After the hook: how far from input slot `slot`'s row a guard byte it
 * changed lies (*past 0: that many bytes before its start, 1 the one just
 * before; *past 1: bytes past its end, 0 the first), or SIZE_MAX where
 * none did. */
size_t seer_check_in_guard(const struct seer_runtime *rt, int slot, int *past);
/* The copy act (SEER_IN_ACTION: agent `agent` of instance `inst`) or handle
 * (SEER_IN_PAYLOAD) gets of its input `src` (seer_check_in_row): the
 * agent's group's action, where it lies in the host's action buffer; the
 * payload's payload_size bytes. */
const unsigned char *seer_check_in_copy(struct seer_runtime *rt, int slot, const void *src,
                                        uint32_t inst, uint32_t agent);
/* The offset past the row of slot `slot` (of `len` bytes) of the first
 * guard byte a hook changed, or SIZE_MAX where none. */
size_t seer_check_out_guard(const struct seer_runtime *rt, int slot, size_t len);
/* The first of `n` bytes at `p` that is no SEER_GUARD_BYTE, or SIZE_MAX. */
size_t seer_check_guard_find(const unsigned char *p, size_t n);
/* Checking mode: guard bytes in the slack of an instance's pages, which no
 * fence covers because it shares a page with what a hook may write: before
 * each entity's state and snapshot record (`all`), after the instance data
 * (always; its clearing at reset and restore takes them).  The host, at
 * creation, reset and restore; checked after each hook (check.c). */
void seer_check_fill_pads(const struct seer_runtime *rt, struct seer_inst *in, int all);
/* Whether a plain run's access `dist` bytes past the end (`past`) or before
 * the start of slot `slot`'s row lands outside its host buffer (the row's
 * place there as the last seer_check_out_row gave it), not in another
 * agent's row. */
int seer_check_out_far(const struct seer_runtime *rt, int slot, int past, size_t dist);
/* What a plain run does with an access a fence caught (`write`: 1 a write,
 * 0 a read, -1 unknown): the words seer_env/check/runner.py reads to skip
 * the passes that run the model unprotected. */
const char *seer_check_far_words(int write);
/* The words for an access at `addr` in a fence of the output rows: which of
 * the slots lo..hi it is nearest, how far past its end or before its start
 * (the faulting thread, in check.c's report). */
void seer_check_output_text(const struct seer_runtime *rt, int lo, int hi, uintptr_t addr,
                            int write, const char *verb, char *buf, size_t n);

#endif /* SEER_CHECK_ROWS_H */
