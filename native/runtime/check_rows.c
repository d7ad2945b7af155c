/*
 * check_rows.c -- the checking mode's fenced memory (SEER_CHECK_ISOLATE;
 * see check.c): the regions of an instance (entity states, snapshot
 * records, instance data), the output rows a handler writes (observe's,
 * global_state's, the action masks) and the inputs it reads (act's action,
 * handle's payload) lie in pages of their own between
 * PROT_NONE fences, so that a write past a region or row (the last
 * entity's state, an agent's index times obs_dim) faults and is named by
 * check.c's SIGSEGV handler, instead of landing in memory no check sees.
 *
 * Threads: the host, at creation and around its checked calls (checking
 * runs serially); seer_check_output_text runs on the faulting thread,
 * after its handler's siglongjmp.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base.h"
#include "check_rows.h"
#include "runtime.h"

/* The page size, read once: the SIGSEGV handler asks for it (through
 * seer_check_fence), where sysconf is not on POSIX's async-signal-safe
 * list.  Relaxed: every thread that reads it computes the same value. */
static _Atomic size_t g_page;

size_t seer_page_size(void)
{
    size_t p = atomic_load_explicit(&g_page, memory_order_relaxed);
    if (!p) {
        const long s = sysconf(_SC_PAGESIZE);
        p = s > 0 ? (size_t)s : 4096u;
        atomic_store_explicit(&g_page, p, memory_order_relaxed);
    }
    return p;
}

/* Guard bytes to compare with (memcmp, a chunk at a time); filled once. */
static unsigned char g_guard[4096];
static pthread_once_t g_guard_once = PTHREAD_ONCE_INIT;

static void guard_fill(void) { memset(g_guard, SEER_GUARD_BYTE, sizeof g_guard); }

/* g_guard filled (any thread, before a guard is compared). */
static void guard_ready(void) { (void)pthread_once(&g_guard_once, guard_fill); }

size_t seer_check_fence(size_t bytes)
{
    const size_t lo = (size_t)1 << 20, hi = (size_t)1 << 30;
    return seer_round_up(bytes < lo ? lo : bytes > hi ? hi : bytes, seer_page_size());
}

void *seer_check_region_alloc(size_t bytes)
{
    const size_t fence = seer_check_fence(bytes), len = seer_round_up(bytes, seer_page_size());
    unsigned char *m =
        mmap(NULL, 2 * fence + len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (mprotect(m + fence, len, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, 2 * fence + len);
        return NULL;
    }
    return m + fence;
}

void seer_check_region_free(void *p, size_t bytes)
{
    if (!p)
        return;
    const size_t fence = seer_check_fence(bytes), len = seer_round_up(bytes, seer_page_size());
    munmap((unsigned char *)p - fence, 2 * fence + len);
}

/* The slots' mapping (see seer_rt_check.out_map): PROT_NONE but for the
 * slots.  Fences as large as the largest host buffer (seer_check_fence): an
 * agent's index times a row's size lands in them.  Address space only:
 * PROT_NONE pages take no memory, nor count to RLIMIT_DATA. */
int seer_check_out_setup(seer_runtime *rt, size_t mask_bytes, size_t host_bytes)
{
    const size_t page = seer_page_size();
    const seer_sizes *sz = &rt->sz;
    const size_t len[SEER_OUT_SLOTS] = {
        [SEER_OUT_OBS] = sz->obs_dim * sizeof(float),
        [SEER_OUT_INFO] = sz->info_dim * sizeof(double),
        [SEER_OUT_REWARD] = sizeof(float),
        [SEER_OUT_TERMINATED] = 1,
        [SEER_OUT_TRUNCATED] = 1,
        [SEER_OUT_STATE] = sz->state_dim * sizeof(float),
        [SEER_OUT_MASK] = mask_bytes,
        [SEER_IN_ACTION] = (size_t)sz->action_dim * 4u,
        [SEER_IN_PAYLOAD] = sz->payload_size};
    const size_t fence =
        seer_check_fence(len[SEER_OUT_STATE] > host_bytes ? len[SEER_OUT_STATE] : host_bytes);
    size_t at = fence;
    for (int s = 0; s < SEER_OUT_SLOTS; s++) {
        rt->check.out_at[s] = at;
        rt->check.out_len[s] = len[s];
        /* an input's row ends at its slot's end, against the fence */
        rt->check.out_span[s] = seer_round_up(len[s] + (s < SEER_IN_ACTION ? SEER_GUARD_BYTES : 0),
                                              page);
        at += rt->check.out_span[s] + fence;
    }
    void *map = mmap(NULL, at, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED)
        return SEER_E_NOMEM;
    rt->check.out_map = map;
    rt->check.out_map_len = at;
    rt->check.out_fence = fence;
    for (int s = 0; s < SEER_OUT_SLOTS; s++)
        if (mprotect(rt->check.out_map + rt->check.out_at[s], rt->check.out_span[s],
                     PROT_READ | PROT_WRITE) != 0)
            return SEER_E_NOMEM; /* unmapped by seer_check_teardown */
    guard_ready();
    return SEER_OK;
}

unsigned char *seer_check_out_row(seer_runtime *rt, int slot, size_t len, size_t host_at,
                                  size_t host_len)
{
    rt->check.out_len[slot] = len; /* <= the slot's: its span is the largest's */
    rt->check.out_host_at[slot] = host_at;
    rt->check.out_host_len[slot] = host_len;
    unsigned char *p = rt->check.out_map + rt->check.out_at[slot];
    memset(p, 0, len);
    memset(p + len, SEER_GUARD_BYTE, rt->check.out_span[slot] - len);
    return p;
}

/* Where slot s's row starts in its slot: an output's at the start, an
 * input's so that it ends at the slot's end, as aligned as a plain run's
 * (a payload at 16 bytes, as an event record's: its last 15 bytes at most
 * lie before the fence; an action at its 4-byte values). */
static size_t row_off(const seer_runtime *rt, int s)
{
    if (s < SEER_IN_ACTION)
        return 0;
    return rt->check.out_span[s] -
           seer_round_up(rt->check.out_len[s], s == SEER_IN_PAYLOAD ? 16 : 4);
}

/* An input slot's guard bytes: at most SEER_GUARD_BYTES before its row,
 * [*lo, row), and the tail after it to the slot's end. */
static size_t in_guard_lo(const seer_runtime *rt, int slot)
{
    const size_t off = row_off(rt, slot);
    return off < SEER_GUARD_BYTES ? 0 : off - SEER_GUARD_BYTES;
}

const unsigned char *seer_check_in_row(seer_runtime *rt, int slot, const void *src, size_t len,
                                       size_t host_at, size_t host_len)
{
    rt->check.out_len[slot] = len; /* <= the slot's: its span is the largest's */
    rt->check.out_host_at[slot] = host_at;
    rt->check.out_host_len[slot] = host_len;
    unsigned char *base = rt->check.out_map + rt->check.out_at[slot];
    const size_t off = row_off(rt, slot), lo = in_guard_lo(rt, slot);
    memset(base + lo, SEER_GUARD_BYTE, off - lo);
    memcpy(base + off, src, len);
    memset(base + off + len, SEER_GUARD_BYTE, rt->check.out_span[slot] - off - len);
    return base + off;
}

size_t seer_check_in_guard(const seer_runtime *rt, int slot, int *past)
{
    const unsigned char *base = rt->check.out_map + rt->check.out_at[slot];
    const size_t off = row_off(rt, slot), lo = in_guard_lo(rt, slot);
    const size_t end = off + rt->check.out_len[slot];
    /* before the row: the nearest changed byte is the one to name */
    for (size_t j = off; j > lo; j--)
        if (base[j - 1] != SEER_GUARD_BYTE) {
            *past = 0;
            return off - (j - 1);
        }
    const size_t b = seer_check_guard_find(base + end, rt->check.out_span[slot] - end);
    *past = 1;
    return b;
}

const unsigned char *seer_check_in_copy(seer_runtime *rt, int slot, const void *src,
                                        uint32_t inst, uint32_t agent)
{
    if (slot == SEER_IN_PAYLOAD)
        return seer_check_in_row(rt, slot, src, rt->sz.payload_size, 0, rt->sz.payload_size);
    /* the agent's group's action; the host's rows are the largest group's */
    const size_t A = rt->sz.num_agents, row = (size_t)rt->sz.action_dim * 4u;
    const size_t len = (size_t)rt->grp.g[rt->grp.of_agent[agent]].action_dim * 4u;
    return seer_check_in_row(rt, slot, src, len, ((size_t)inst * A + agent) * row,
                             (size_t)rt->B * A * row);
}

size_t seer_check_guard_find(const unsigned char *p, size_t n)
{
    for (size_t b = 0; b < n; b += sizeof g_guard) {
        const size_t k = n - b < sizeof g_guard ? n - b : sizeof g_guard;
        if (memcmp(p + b, g_guard, k) != 0)
            for (size_t j = b; j < b + k; j++)
                if (p[j] != SEER_GUARD_BYTE)
                    return j;
    }
    return SIZE_MAX;
}

size_t seer_check_out_guard(const seer_runtime *rt, int slot, size_t len)
{
    const unsigned char *p = rt->check.out_map + rt->check.out_at[slot];
    return seer_check_guard_find(p + len, rt->check.out_span[slot] - len);
}

void seer_check_fill_pads(const seer_runtime *rt, seer_inst *in, int all)
{
    guard_ready();
    if (all) {
        for (size_t e = 0; e < rt->sz.num_entities; e++) {
            memset(in->states + e * rt->entity_stride, SEER_GUARD_BYTE, rt->entity_pad);
            memset(in->snapshot + e * rt->snapshot_stride, SEER_GUARD_BYTE, rt->snapshot_pad);
        }
    }
    memset(in->idata + rt->sz.instance_size, SEER_GUARD_BYTE,
           rt->idata_stride - rt->sz.instance_size);
}

const char *seer_check_far_words(int write)
{
    /* seer_env/check/runner.py reads "memory that is not the model's": the
     * passes that run the model unprotected would not run */
    return write == 0 ? "a plain run reads memory that is not the model's"
                         : "a plain run writes into memory that is not the model's";
}

int seer_check_out_far(const seer_runtime *rt, int slot, int past, size_t dist)
{
    const size_t at = rt->check.out_host_at[slot], all = rt->check.out_host_len[slot];
    const size_t end = at + rt->check.out_len[slot] + dist; /* past: where it lands */
    return past ? end >= all || end < at : dist > at;
}

/* A fence around the output rows: which of the hook's rows the address is
 * nearest, past its end or before its start. */
void seer_check_output_text(const seer_runtime *rt, int lo, int hi, uintptr_t addr, int write,
                            const char *verb, char *buf, size_t n)
{
    static const char *const what[SEER_OUT_SLOTS] = {
        "obs", "info", "reward", "terminated", "truncated", "state", "mask", "action", "payload"};
    int best = lo, past = 1;
    size_t dist = SIZE_MAX;
    for (int s = lo; s <= hi; s++) {
        const uintptr_t row = (uintptr_t)rt->check.out_map + rt->check.out_at[s] + row_off(rt, s);
        const uintptr_t end = row + rt->check.out_len[s];
        const size_t d = addr >= end ? addr - end : row - addr;
        if (d < dist) {
            dist = d;
            best = s;
            past = addr >= end;
        }
    }
    /* where a plain run's access would land: past the host's buffer, or in
     * another agent's row of it */
    char FAR[96];
    snprintf(FAR, sizeof FAR, "; %s",
             seer_check_out_far(rt, best, past, dist) ? seer_check_far_words(write)
             : write == 0 ? "a plain run reads another agent's row"
                          : "a plain run writes it into another agent's row");
    const size_t len = rt->check.out_len[best];
    if (best == SEER_IN_ACTION)
        snprintf(buf, n,
                 "%s byte %zu %s its action (%zu bytes): act reads only its own agent's "
                 "action[0..action_dim-1] (action_dim=%zu)%s",
                 verb, dist, past ? "past the end of" : "before the start of", len,
                 len / 4u,
                 past && len + dist < (size_t)rt->sz.action_dim * 4u
                     ? "; a plain run reads the padding after it (the largest group's action "
                       "is longer)"
                 : seer_check_out_far(rt, best, past, dist) ? FAR
                 : write == 0 ? "; a plain run reads another agent's action"
                              : "; a plain run writes another agent's action");
    else if (best == SEER_IN_PAYLOAD)
        snprintf(buf, n,
                 "%s byte %zu %s its payload (payload_size=%zu bytes): handle reads only "
                 "payload[0..payload_size-1], of which the sender wrote the first `size`%s",
                 verb, dist, past ? "past the end of" : "before the start of", len, FAR);
    else if (best == SEER_OUT_MASK)
        snprintf(buf, n,
                 "%s byte %zu %s the action masks (%zu bytes, every agent's mask row of every "
                 "instance): a mask hook writes only its own row (mask_dim=%u bytes)%s",
                 verb, dist, past ? "past the end of" : "before the start of", len,
                 rt->sz.mask_dim, FAR);
    else if (best == SEER_OUT_STATE)
        snprintf(buf, n,
                 "%s byte %zu %s its state row (%zu bytes): global_state writes only "
                 "out[0..state_dim-1] (state_dim=%u)%s",
                 verb, dist, past ? "past the end of" : "before the start of", len,
                 rt->sz.state_dim, FAR);
    else
        snprintf(buf, n,
                 "%s byte %zu %s its %s row (%zu bytes): observe writes only its own agent's "
                 "obs[0..obs_dim-1] (obs_dim=%u), *reward, *terminated, *truncated and "
                 "info[0..info_dim-1] (info_dim=%u)%s",
                 verb, dist, past ? "past the end of" : "before the start of", what[best], len,
                 rt->sz.obs_dim, rt->sz.info_dim, FAR);
}

