/*
 * check_rows.c -- the checking mode's fenced memory (SEER_CHECK_ISOLATE;
 * see check.c): the regions of an instance (entity states, snapshot
 * records, instance data) and the output rows a handler writes (observe's,
 * global_state's, the action masks) lie in pages of their own between
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
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base.h"
#include "check_rows.h"
#include "runtime.h"

size_t seer_page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

/* Guard bytes to compare with (memcmp, a chunk at a time); filled once. */
static unsigned char g_guard[4096];
static pthread_once_t g_guard_once = PTHREAD_ONCE_INIT;

static void guard_fill(void) { memset(g_guard, SEER_GUARD_BYTE, sizeof g_guard); }

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
        [SEER_OUT_MASK] = mask_bytes};
    const size_t fence =
        seer_check_fence(len[SEER_OUT_STATE] > host_bytes ? len[SEER_OUT_STATE] : host_bytes);
    size_t at = fence;
    for (int s = 0; s < SEER_OUT_SLOTS; s++) {
        rt->check.out_at[s] = at;
        rt->check.out_len[s] = len[s];
        rt->check.out_span[s] = seer_round_up(len[s] + SEER_GUARD_BYTES, page);
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
    (void)pthread_once(&g_guard_once, guard_fill);
    return SEER_OK;
}

unsigned char *seer_check_out_row(seer_runtime *rt, int slot, size_t len)
{
    unsigned char *p = rt->check.out_map + rt->check.out_at[slot];
    memset(p, 0, len);
    memset(p + len, SEER_GUARD_BYTE, rt->check.out_span[slot] - len);
    return p;
}

size_t seer_check_out_guard(const seer_runtime *rt, int slot, size_t len)
{
    const unsigned char *p = rt->check.out_map + rt->check.out_at[slot];
    const size_t end = rt->check.out_span[slot];
    for (size_t b = len; b < end; b += sizeof g_guard) {
        const size_t n = end - b < sizeof g_guard ? end - b : sizeof g_guard;
        if (memcmp(p + b, g_guard, n) != 0)
            for (size_t k = b; k < b + n; k++)
                if (p[k] != SEER_GUARD_BYTE)
                    return k - len;
    }
    return SIZE_MAX;
}

/* A fence around the output rows: which of the hook's rows the address is
 * nearest, past its end or before its start. */
const char *seer_check_far_words(int write)
{
    /* seer_env/check/runner.py reads "memory that is not the model's": the
     * passes that run the model unprotected would not run */
    return write == 0 ? "a plain run reads memory that is not the model's"
                         : "a plain run writes into memory that is not the model's";
}

void seer_check_output_text(const seer_runtime *rt, int lo, int hi, uintptr_t addr, int write,
                            const char *verb, char *buf, size_t n)
{
    static const char *const what[SEER_OUT_SLOTS] = {"obs", "info", "reward", "terminated",
                                                     "truncated", "state", "mask"};
    int best = lo, past = 1;
    size_t dist = SIZE_MAX;
    for (int s = lo; s <= hi; s++) {
        const uintptr_t row = (uintptr_t)rt->check.out_map + rt->check.out_at[s];
        const uintptr_t end = row + rt->check.out_len[s];
        const size_t d = addr >= end ? addr - end : row - addr;
        if (d < dist) {
            dist = d;
            best = s;
            past = addr >= end;
        }
    }
    char FAR[96];
    snprintf(FAR, sizeof FAR, "; so far from it that %s", seer_check_far_words(write));
    const size_t len = rt->check.out_len[best];
    if (best == SEER_OUT_MASK)
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

