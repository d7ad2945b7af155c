/*
 * snapshot.c -- one instance's state as bytes, and back (seer_runtime.h,
 * "Snapshots").  Host thread, between calls: no worker touches the
 * instance, every pending event is in a queue (the outboxes are merged
 * before a call ends, the optimistic executor's logs are committed).
 *
 * The layout, native byte order (the header says which; another is
 * refused), no padding between fields:
 *
 *   header     "SEERSNAP", format, API version, byte-order mark, model name
 *              (64 bytes), configuration hash and size, max_cycles (the
 *              truncation step is part of the future), the sizes that fix
 *              the layout, total length
 *   instance   seed, step index, boundary time
 *   entities   N runtime records (seq, events, rng[4]), N states
 *              (entity_size each: no stride, no checking-mode padding),
 *              N published records (snapshot_size each), the instance data
 *   outputs    the instance's rows of every host buffer but the actions
 *   events     their count, then each (time, key, target, type, size,
 *              payload padded to 8 bytes), by increasing key: a key is
 *              (source entity, source sequence), unique in an instance, so
 *              the order -- and the bytes -- do not depend on which queue
 *              held an event
 *   trailer    a 64-bit checksum of everything before it
 *
 * Restore reads and checks everything first (validate_snapshot), takes the
 * event records (the instance's own, rewritten in place, then free ones) and
 * queue room it needs, and only then replaces the instance's state
 * (commit_restore), which cannot fail.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base.h"
#include "check.h"
#include "ctx.h"
#include "errors.h"
#include "event.h"
#include "events.h"
#include "process.h"
#include "runtime.h"
#include "squeue.h"

#define SNAP_MAGIC "SEERSNAP"
#define SNAP_BOM 0x01020304u
#define SNAP_NAME 64
#define SNAP_NSIZES 10
#define SNAP_EVHDR 32 /* time, key, target, type, size, pad */
/* Records the event loops load ahead: they do little per record, and visit
 * records scattered in memory (about a DRAM latency ahead). */
#define SNAP_AHEAD 32

/* The sizes the layout depends on, in the header's order. */
static const char *const size_names[SNAP_NSIZES] = {
    "num_entities", "num_agents", "entity_size", "snapshot_size", "instance_size",
    "payload_size", "obs_dim", "info_dim", "mask_dim", "action_dim"};

static void layout_sizes(const seer_sizes *sz, uint32_t out[SNAP_NSIZES])
{
    const uint32_t v[SNAP_NSIZES] = {sz->num_entities,  sz->num_agents,    sz->entity_size,
                                     sz->snapshot_size, sz->instance_size, sz->payload_size,
                                     sz->obs_dim,       sz->info_dim,      sz->mask_dim,
                                     sz->action_dim};
    memcpy(out, v, sizeof v);
}

/* The host buffers a snapshot holds (the actions are the host's input). */
static const int snap_bufs[] = {SEER_BUF_OBS,    SEER_BUF_REWARD, SEER_BUF_TERMINATED,
                                SEER_BUF_TRUNCATED, SEER_BUF_ALIVE, SEER_BUF_INFO,
                                SEER_BUF_ACTIVE, SEER_BUF_MASK};
#define SNAP_NBUFS (sizeof snap_bufs / sizeof snap_bufs[0])

static int is_flag_buf(int b)
{
    return b == SEER_BUF_TERMINATED || b == SEER_BUF_TRUNCATED || b == SEER_BUF_ALIVE ||
           b == SEER_BUF_ACTIVE;
}

enum {
    HDR_BYTES = 8 + 4 * 4 + SNAP_NAME + 8 + 8 + 8 + 4 * SNAP_NSIZES + 8,
    INST_BYTES = 8 + 8 + 8,
    REC_BYTES = 8 + 8 + 4 * 8
};

/* ---- the checksum -------------------------------------------------------- */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* A 64-bit multiply-rotate hash over 8-byte words in four lanes (about a
 * word per cycle: a snapshot costs little more than copying it).  Each step
 * is a bijection of its lane, so any change confined to one word always
 * changes the sum; it detects corruption, it is no cryptographic MAC.
 * Pure. */
static uint64_t snap_checksum(const unsigned char *p, size_t n)
{
    const uint64_t K = 0x9E3779B97F4A7C15ull;
    uint64_t h[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull,
                     0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * k, 8);
            h[k] = rotl64(h[k] ^ w, 31) * K;
        }
    for (int k = 0; i < n; k++, i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i < 8 ? n - i : 8);
        h[k] = rotl64(h[k] ^ w, 31) * K;
    }
    uint64_t x = (uint64_t)n * K;
    for (int k = 0; k < 4; k++)
        x = rotl64(x ^ h[k], 27) * K;
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return x;
}

/* The configuration's identity: FNV-1a over its bytes as describe
 * completed them (the configuration is small).  Pure. */
static uint64_t config_hash(const void *config, size_t n)
{
    const unsigned char *p = config;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* ---- what an instance holds --------------------------------------------- */

static int check_instance(seer_runtime *rt, uint32_t instance, const char *what)
{
    if (instance >= rt->B) {
        seer_fail(rt, "%s: instance %u out of range (num_instances=%u)", what, instance, rt->B);
        return SEER_E_ARG;
    }
    return SEER_OK;
}

static size_t buf_row(const seer_runtime *rt, int b)
{
    return seer_buffer_bytes(&rt->sz, 1, b);
}

static size_t event_bytes(uint32_t size) { return SNAP_EVHDR + seer_round_up(size, 8); }

/* The queues of an instance: the serial one, then the partitions'. */
static void each_pending(const seer_runtime *rt, const seer_inst *in,
                         void (*fn)(void *arg, seer_event *ev), void *arg)
{
    seer_squeue_foreach_owner(&in->queue, fn, arg);
    for (uint32_t p = 0; in->parts && p < rt->part.n; p++)
        seer_squeue_foreach_owner(&in->parts[p], fn, arg);
}

/* Entries the instance's queues hold (a bound on its pending events: every
 * one is in a queue between calls), without reading an event. */
static uint64_t queued(const seer_runtime *rt, const seer_inst *in)
{
    uint64_t n = in->queue.n;
    for (uint32_t p = 0; in->parts && p < rt->part.n; p++)
        n += in->parts[p].n;
    return n;
}

static uint64_t fixed_bytes(const seer_runtime *rt)
{
    const seer_sizes *sz = &rt->sz;
    uint64_t n = HDR_BYTES + INST_BYTES;
    n += (uint64_t)sz->num_entities * (REC_BYTES + sz->entity_size + sz->snapshot_size);
    n += sz->instance_size;
    for (size_t k = 0; k < SNAP_NBUFS; k++)
        n += buf_row(rt, snap_bufs[k]);
    return n + 8 /* event count */ + 8 /* checksum */;
}

static int check_snapshottable(seer_runtime *rt, uint32_t instance)
{
    int rc = check_instance(rt, instance, "snapshot");
    if (rc)
        return rc;
    const seer_inst *in = &rt->inst[instance];
    if (!in->ready) {
        if (in->failed)
            seer_fail(rt, "snapshot: instance %u needs a reset: its last call failed: %s",
                      instance, rt->fail_msg);
        else
            seer_fail(rt, "snapshot: instance %u has not been reset", instance);
        return SEER_E_ORDER;
    }
    return SEER_OK;
}

int seer_runtime_snapshot_size(seer_runtime *rt, uint32_t instance, uint64_t *out)
{
    int rc = check_snapshottable(rt, instance);
    if (rc)
        return rc;
    *out = fixed_bytes(rt) + queued(rt, &rt->inst[instance]) *
                                 event_bytes(rt->sz.payload_size);
    return SEER_OK;
}

/* An event's key and where its bytes are: what the sort moves. */
typedef struct keyed {
    uint64_t key;
    uint64_t at;
} keyed;

/* Collect the instance's event records from its queues' entries, reading
 * no record (each record read is a cache miss: the loops that read them load
 * ahead, which a callback cannot). */
struct collect {
    seer_event **ev;
    uint64_t n;
};

static void collect_ptr_cb(void *arg, seer_event *ev)
{
    struct collect *c = arg;
    c->ev[c->n++] = ev;
}

/* Sort by key: by source entity (counting sort: keys are dense in it), then
 * by sequence within one source (a few each: insertion), on the gathered
 * pairs, reading no event record.  a[n] in place (tmp: n scratch). */
static void sort_by_key(const seer_runtime *rt, keyed *a, uint64_t n, keyed *tmp,
                        uint64_t *start)
{
    const uint32_t N = rt->sz.num_entities;
    memset(start, 0, ((size_t)N + 1) * sizeof *start);
    for (uint64_t k = 0; k < n; k++)
        start[(a[k].key >> SEER_KEY_SEQ_BITS) + 1]++;
    for (uint32_t s = 0; s < N; s++)
        start[s + 1] += start[s];
    for (uint64_t k = 0; k < n; k++)
        tmp[start[a[k].key >> SEER_KEY_SEQ_BITS]++] = a[k];
    /* start[s] is now the end of source s's run */
    uint64_t lo = 0;
    for (uint32_t s = 0; s < N; s++) {
        const uint64_t hi = start[s];
        for (uint64_t k = lo + 1; k < hi; k++) {
            const keyed x = tmp[k];
            uint64_t j = k;
            for (; j > lo && tmp[j - 1].key > x.key; j--)
                tmp[j] = tmp[j - 1];
            tmp[j] = x;
        }
        lo = hi;
    }
    memcpy(a, tmp, n * sizeof *a);
}

/* At least `need` bytes of the runtime's snapshot scratch (NULL: out of
 * memory; the old scratch is kept). */
static void *scratch(seer_runtime *rt, size_t need)
{
    if (need > rt->snap_scratch_cap) {
        const size_t cap = need + need / 4;
        unsigned char *p = aligned_alloc(SEER_CACHE_LINE, seer_round_up(cap, SEER_CACHE_LINE));
        if (!p)
            return NULL;
        free(rt->snap_scratch);
        rt->snap_scratch = p;
        rt->snap_scratch_cap = cap;
    }
    return rt->snap_scratch;
}

/* ---- writing ------------------------------------------------------------- */

struct writer {
    unsigned char *p;
};

static inline void put(struct writer *w, const void *src, size_t n)
{
    if (n)
        memcpy(w->p, src, n);
    w->p += n;
}
static inline void put_u32(struct writer *w, uint32_t v) { put(w, &v, 4); }
static inline void put_u64(struct writer *w, uint64_t v) { put(w, &v, 8); }
static inline void put_f64(struct writer *w, double v) { put(w, &v, 8); }

static void write_header(const seer_runtime *rt, struct writer *w, uint64_t total)
{
    put(w, SNAP_MAGIC, 8);
    put_u32(w, SEER_SNAPSHOT_FORMAT);
    put_u32(w, SEER_API_VERSION);
    put_u32(w, SNAP_BOM);
    put_u32(w, 0); /* reserved */
    char name[SNAP_NAME] = {0};
    snprintf(name, sizeof name, "%s", rt->model->name);
    put(w, name, SNAP_NAME);
    put_u64(w, config_hash(rt->config, rt->model->config_size));
    put_u64(w, rt->model->config_size);
    put_u64(w, rt->max_cycles);
    uint32_t sizes[SNAP_NSIZES];
    layout_sizes(&rt->sz, sizes);
    put(w, sizes, sizeof sizes);
    put_u64(w, total);
}

/* One event as the snapshot holds it (event_bytes(ev->size) bytes). */
static void put_event(struct writer *w, const seer_event *ev)
{
    static const unsigned char zeros[8];
    put_f64(w, ev->time);
    put_u64(w, ev->key);
    put_u32(w, ev->target);
    put_u32(w, ev->type);
    put_u32(w, ev->size);
    put_u32(w, 0);
    put(w, ev->payload, ev->size);
    put(w, zeros, seer_round_up(ev->size, 8) - ev->size);
}

int seer_runtime_snapshot(seer_runtime *rt, uint32_t instance, void *out, uint64_t cap,
                          uint64_t *written)
{
    int rc = check_snapshottable(rt, instance);
    if (rc)
        return rc;
    const seer_inst *in = &rt->inst[instance];
    const uint64_t bound = queued(rt, in);
    /* The events, in one pass over their scattered records (queue order,
     * loaded ahead), are written as the snapshot holds them into a staging
     * buffer, with their keys; the key order is then a permutation of that
     * dense buffer, not of the records again. */
    const size_t b = bound ? bound : 1, N1 = (size_t)rt->sz.num_entities + 1;
    const size_t staged = b * event_bytes(rt->sz.payload_size);
    unsigned char *mem = scratch(rt, b * (sizeof(seer_event *) + 2 * sizeof(keyed)) +
                                         N1 * sizeof(uint64_t) + staged);
    if (!mem) {
        seer_fail(rt, "snapshot: out of memory");
        return SEER_E_NOMEM;
    }
    keyed *keys = (keyed *)(void *)mem, *tmp = keys + b;
    uint64_t *start = (uint64_t *)(void *)(tmp + b);
    struct collect c = {(seer_event **)(void *)(start + N1), 0};
    unsigned char *staging = (unsigned char *)(c.ev + b);
    each_pending(rt, in, collect_ptr_cb, &c);
    uint64_t n = 0;
    struct writer st = {staging};
    for (uint64_t k = 0; k < c.n; k++) {
        if (k + SNAP_AHEAD < c.n)
            __builtin_prefetch(c.ev[k + SNAP_AHEAD]);
        const seer_event *ev = c.ev[k];
        if (ev->flags & SEER_EV_CANCEL) /* never between calls; never restored */
            continue;
        keys[n++] = (keyed){ev->key, (uint64_t)(st.p - staging)};
        put_event(&st, ev);
    }
    const uint64_t ev_bytes = (uint64_t)(st.p - staging);
    const uint64_t total = fixed_bytes(rt) + ev_bytes;
    *written = total;
    if (!out || cap < total) {
        seer_fail(rt, "snapshot: instance %u needs %llu bytes, the buffer has %llu", instance,
                  (unsigned long long)total, (unsigned long long)cap);
        return SEER_E_ARG;
    }
    sort_by_key(rt, keys, n, tmp, start);
    const seer_sizes *sz = &rt->sz;
    const uint32_t N = sz->num_entities;
    struct writer w = {out};
    write_header(rt, &w, total);
    put_u64(&w, in->seed);
    put_u64(&w, in->step);
    put_f64(&w, in->boundary);
    for (uint32_t e = 0; e < N; e++) {
        const seer_entity_rec *r = &in->recs[e];
        put_u64(&w, r->seq);
        put_u64(&w, r->events);
        put(&w, r->rng, sizeof r->rng);
    }
    for (uint32_t e = 0; e < N; e++)
        put(&w, seer_inst_state(rt, in, e), sz->entity_size);
    for (uint32_t e = 0; e < N; e++)
        put(&w, seer_inst_snapshot(rt, in, e), sz->snapshot_size);
    put(&w, in->idata, sz->instance_size);
    for (size_t k = 0; k < SNAP_NBUFS; k++) {
        const size_t row = buf_row(rt, snap_bufs[k]);
        put(&w, (const unsigned char *)seer_runtime_buffer(rt, snap_bufs[k]) + instance * row,
            row);
    }
    put_u64(&w, n);
    for (uint64_t k = 0; k < n; k++) {
        if (k + SNAP_AHEAD < n)
            __builtin_prefetch(staging + keys[k + SNAP_AHEAD].at);
        const unsigned char *rec = staging + keys[k].at;
        uint32_t size;
        memcpy(&size, rec + 24, 4);
        put(&w, rec, event_bytes(size));
    }
    const size_t body = (size_t)(w.p - (unsigned char *)out);
    put_u64(&w, snap_checksum(out, body));
    return SEER_OK;
}

/* ---- reading and validating ---------------------------------------------- */

struct reader {
    const unsigned char *p;
    uint64_t at, n;
};

static const unsigned char *take(struct reader *r, uint64_t n)
{
    if (n > r->n - r->at)
        return NULL;
    const unsigned char *q = r->p + r->at;
    r->at += n;
    return q;
}
static uint32_t get_u32(struct reader *r)
{
    uint32_t v;
    memcpy(&v, take(r, 4), 4);
    return v;
}
static uint64_t get_u64(struct reader *r)
{
    uint64_t v;
    memcpy(&v, take(r, 8), 8);
    return v;
}
static double get_f64(struct reader *r)
{
    double v;
    memcpy(&v, take(r, 8), 8);
    return v;
}

/* Where a validated snapshot's parts are, for commit_restore. */
struct parsed {
    uint64_t seed, step;
    double boundary;
    const unsigned char *recs, *states, *published, *idata;
    const unsigned char *bufs[SNAP_NBUFS];
    uint64_t nev;
    const unsigned char *events;
};

static int bad(seer_runtime *rt, uint32_t instance, const char *fmt, const char *detail)
{
    char msg[SEER_ERRLEN];
    snprintf(msg, sizeof msg, fmt, detail);
    seer_fail(rt, "restore of instance %u: %s; the instance was not changed", instance, msg);
    return SEER_E_SNAPSHOT;
}

/* The header: what the snapshot is and whether it fits this runtime. */
static int validate_header(seer_runtime *rt, uint32_t instance, struct reader *r)
{
    char d[SEER_ERRLEN];
    if (r->n < HDR_BYTES || memcmp(r->p, SNAP_MAGIC, 8) != 0)
        return bad(rt, instance, "%s", r->n < 8 || memcmp(r->p, SNAP_MAGIC, 8) != 0
                       ? "these bytes are not a seer_env snapshot (no SEERSNAP header)"
                       : "the snapshot is truncated (shorter than its header)");
    take(r, 8);
    const uint32_t format = get_u32(r), api = get_u32(r), bom = get_u32(r);
    (void)get_u32(r);
    if (bom != SNAP_BOM)
        return bad(rt, instance, "%s",
                   "the snapshot was taken on a machine of another byte order");
    if (format != SEER_SNAPSHOT_FORMAT) {
        snprintf(d, sizeof d, "snapshot format %u, this runtime reads format %u", format,
                 SEER_SNAPSHOT_FORMAT);
        return bad(rt, instance, "%s", d);
    }
    if (api != SEER_API_VERSION) {
        snprintf(d, sizeof d, "the snapshot was taken with SEER_API_VERSION %u, this runtime "
                 "is version %u", api, SEER_API_VERSION);
        return bad(rt, instance, "%s", d);
    }
    char name[SNAP_NAME + 1] = {0};
    memcpy(name, take(r, SNAP_NAME), SNAP_NAME);
    const uint64_t chash = get_u64(r), csize = get_u64(r), max_cycles = get_u64(r);
    uint32_t sizes[SNAP_NSIZES], mine[SNAP_NSIZES];
    memcpy(sizes, take(r, sizeof sizes), sizeof sizes);
    const uint64_t total = get_u64(r);
    if (total != r->n) {
        snprintf(d, sizeof d, "the snapshot is %s: %llu bytes, its header says %llu",
                 r->n < total ? "truncated" : "longer than it should be",
                 (unsigned long long)r->n, (unsigned long long)total);
        return bad(rt, instance, "%s", d);
    }
    uint64_t sum;
    memcpy(&sum, r->p + r->n - 8, 8);
    if (snap_checksum(r->p, r->n - 8) != sum)
        return bad(rt, instance, "%s", "the snapshot is corrupted (its checksum does not match)");
    char mine_name[SNAP_NAME] = {0}; /* as write_header stores it */
    snprintf(mine_name, sizeof mine_name, "%s", rt->model->name);
    if (memcmp(name, mine_name, SNAP_NAME) != 0) {
        snprintf(d, sizeof d, "the snapshot is of model '%.64s', this runtime runs '%.64s'",
                 name, rt->model->name);
        return bad(rt, instance, "%s", d);
    }
    if (csize != rt->model->config_size ||
        chash != config_hash(rt->config, rt->model->config_size)) {
        snprintf(d, sizeof d, "the snapshot was taken with another configuration of model '%s' "
                 "(a snapshot restores into an env of the same model and configuration)",
                 rt->model->name);
        return bad(rt, instance, "%s", d);
    }
    if (max_cycles != rt->max_cycles) {
        snprintf(d, sizeof d, "the snapshot was taken with max_cycles=%llu, this runtime has "
                 "max_cycles=%llu (0: never truncates)", (unsigned long long)max_cycles,
                 (unsigned long long)rt->max_cycles);
        return bad(rt, instance, "%s", d);
    }
    layout_sizes(&rt->sz, mine);
    for (int k = 0; k < SNAP_NSIZES; k++)
        if (sizes[k] != mine[k]) {
            snprintf(d, sizeof d, "the snapshot's %s is %u, this runtime's %u", size_names[k],
                     sizes[k], mine[k]);
            return bad(rt, instance, "%s", d);
        }
    return SEER_OK;
}

/* The body: every value a step could trip on, before anything changes. */
static int validate_body(seer_runtime *rt, uint32_t instance, struct reader *r,
                         struct parsed *s)
{
    char d[SEER_ERRLEN];
    const seer_sizes *sz = &rt->sz;
    const uint32_t N = sz->num_entities;
    if (r->n < fixed_bytes(rt))
        return bad(rt, instance, "%s", "the snapshot's body is shorter than its sizes need");
    r->n -= 8; /* the checksum */
    s->seed = get_u64(r);
    s->step = get_u64(r);
    s->boundary = get_f64(r);
    if (!isfinite(s->boundary) || s->boundary != (seer_time)s->step * sz->step_duration) {
        snprintf(d, sizeof d, "its boundary time %.17g is not step %llu x step_duration %.17g",
                 s->boundary, (unsigned long long)s->step, sz->step_duration);
        return bad(rt, instance, "%s", d);
    }
    s->recs = take(r, (uint64_t)N * REC_BYTES);
    s->states = take(r, (uint64_t)N * sz->entity_size);
    s->published = take(r, (uint64_t)N * sz->snapshot_size);
    s->idata = take(r, sz->instance_size);
    for (size_t k = 0; k < SNAP_NBUFS; k++) {
        const size_t row = buf_row(rt, snap_bufs[k]);
        s->bufs[k] = take(r, row);
        if (is_flag_buf(snap_bufs[k]))
            for (size_t j = 0; j < row; j++)
                if (s->bufs[k][j] > 1) {
                    snprintf(d, sizeof d, "a flag byte is %u (0 or 1 expected)",
                             s->bufs[k][j]);
                    return bad(rt, instance, "%s", d);
                }
    }
    s->nev = get_u64(r);
    s->events = r->p + r->at;
    uint64_t prev_key = 0;
    for (uint64_t k = 0; k < s->nev; k++) {
        const unsigned char *h = take(r, SNAP_EVHDR);
        if (!h) {
            snprintf(d, sizeof d, "it holds %llu events, the bytes end at event %llu",
                     (unsigned long long)s->nev, (unsigned long long)k);
            return bad(rt, instance, "%s", d);
        }
        double t;
        uint64_t key;
        uint32_t target, type, size, pad;
        memcpy(&t, h, 8);
        memcpy(&key, h + 8, 8);
        memcpy(&target, h + 16, 4);
        memcpy(&type, h + 20, 4);
        memcpy(&size, h + 24, 4);
        memcpy(&pad, h + 28, 4);
        const uint64_t src = key >> SEER_KEY_SEQ_BITS;
        const uint64_t seq = key & ((1ull << SEER_KEY_SEQ_BITS) - 1);
        const uint32_t ntypes = rt->model->event_type_count;
        const char *why = NULL;
        char type_why[96];
        if (!(t >= s->boundary) || !isfinite(t))
            why = "its time is not finite or before the instance's time";
        else if (target >= N)
            why = "its target is not an entity";
        else if (ntypes && type >= ntypes) {
            /* no handler would know it: a handler's own check fails the next
             * step, one that ignores the type runs on with nonsense */
            snprintf(type_why, sizeof type_why,
                     "its type %u is not one of the model's %u event types (0..%u)", type,
                     ntypes, ntypes - 1);
            why = type_why;
        }
        else if (size > sz->payload_size)
            why = "its payload is larger than the model's payload_size";
        else if (pad != 0)
            why = "its header is malformed";
        else if (src >= N)
            why = "its source is not an entity";
        else if (k > 0 && key <= prev_key)
            why = "the events are not in increasing key order";
        else {
            uint64_t src_seq;
            memcpy(&src_seq, s->recs + src * REC_BYTES, 8);
            if (seq >= src_seq)
                why = "its sequence number was not issued by its source entity";
        }
        if (why || !take(r, seer_round_up(size, 8))) {
            snprintf(d, sizeof d,
                     "event %llu of %llu (t=%.17g, target %u, type %u, %u payload bytes): %s",
                     (unsigned long long)k, (unsigned long long)s->nev, t, target, type, size,
                     why ? why : "the bytes end inside its payload");
            return bad(rt, instance, "%s", d);
        }
        prev_key = key;
    }
    if (r->at != r->n)
        return bad(rt, instance, "%s", "the snapshot has bytes past its last event");
    return SEER_OK;
}

/* ---- restoring ----------------------------------------------------------- */

/* The queue a restored event goes to on the current executor. */
static seer_squeue *dest_queue(seer_runtime *rt, seer_inst *in, uint32_t target, uint32_t *qi)
{
    if (!seer_uses_parts(rt->executor)) {
        *qi = 0;
        return &in->queue;
    }
    *qi = rt->part.of[target];
    return &in->parts[*qi];
}

/* Event records and queue room for the snapshot's events, taken before
 * anything changes.  The records a restore writes are the instance's own
 * pending ones first (collected into rec: rewritten in place, in array
 * order, which the loop loads ahead of), then records from worker 0's free
 * list (the host's), stocked here.  Each destination queue gets room for its
 * events once cleared.  On failure what was taken stays in the free list and
 * the queues' spare room: no change. */
static int reserve_restore(seer_runtime *rt, seer_inst *in, const struct parsed *s,
                           struct collect *rec)
{
    seer_worker *w0 = &rt->pool.workers[0];
    const uint64_t have = queued(rt, in);
    rec->ev = malloc((have ? have : 1) * sizeof *rec->ev);
    rec->n = 0;
    if (!rec->ev)
        return SEER_E_NOMEM;
    each_pending(rt, in, collect_ptr_cb, rec);
    int rc = s->nev > rec->n ? seer_event_stock_local(w0, s->nev - rec->n) : SEER_OK;
    const uint32_t nq = seer_uses_parts(rt->executor) ? rt->part.n : 1;
    uint64_t *counts = rc == SEER_OK ? calloc((size_t)nq * SEER_SQ_COUNTS, sizeof *counts)
                                     : NULL;
    if (!counts) {
        free(rec->ev);
        return rc == SEER_OK ? SEER_E_NOMEM : rc;
    }
    const unsigned char *e = s->events;
    for (uint64_t k = 0; k < s->nev; k++) {
        double t;
        uint32_t target, size, qi;
        memcpy(&t, e, 8);
        memcpy(&target, e + 16, 4);
        memcpy(&size, e + 24, 4);
        (void)dest_queue(rt, in, target, &qi);
        counts[(size_t)qi * SEER_SQ_COUNTS + (size_t)seer_squeue_bucket_of_cleared(t)]++;
        e += event_bytes(size);
    }
    for (uint32_t q = 0; q < nq && rc == SEER_OK; q++) {
        seer_squeue *dq = seer_uses_parts(rt->executor) ? &in->parts[q] : &in->queue;
        rc = seer_squeue_reserve_owner(dq, counts + (size_t)q * SEER_SQ_COUNTS);
    }
    free(counts);
    if (rc != SEER_OK)
        free(rec->ev);
    return rc;
}

/* Replace the instance's state by the snapshot's.  Cannot fail: the event
 * records and the queue room were reserved.  Frees rec. */
static void commit_restore(seer_runtime *rt, uint32_t instance, const struct parsed *s,
                           struct collect *rec)
{
    seer_inst *in = &rt->inst[instance];
    seer_worker *w0 = &rt->pool.workers[0];
    const seer_sizes *sz = &rt->sz;
    const uint32_t N = sz->num_entities;
    seer_squeue_clear_owner(&in->queue); /* their records are in rec->ev */
    for (uint32_t p = 0; in->parts && p < rt->part.n; p++)
        seer_squeue_clear_owner(&in->parts[p]);
    const unsigned char *e = s->events;
    for (uint64_t k = 0; k < s->nev; k++) {
        if (k + SNAP_AHEAD < rec->n)
            __builtin_prefetch(rec->ev[k + SNAP_AHEAD], 1);
        /* stocked: never NULL */
        seer_event *ev = k < rec->n ? rec->ev[k] : seer_event_alloc_local(w0);
        memcpy(&ev->time, e, 8);
        memcpy(&ev->key, e + 8, 8);
        memcpy(&ev->target, e + 16, 4);
        memcpy(&ev->type, e + 20, 4);
        memcpy(&ev->size, e + 24, 4);
        ev->flags = 0;
        memcpy(ev->payload, e + SNAP_EVHDR, ev->size);
        uint32_t qi;
        (void)seer_squeue_push_owner(dest_queue(rt, in, ev->target, &qi), ev); /* reserved */
        e += event_bytes(ev->size);
    }
    for (uint64_t k = s->nev; k < rec->n; k++) /* records the snapshot does not need */
        seer_event_free_local(w0, rec->ev[k]);
    free(rec->ev);
    for (uint32_t i = 0; i < N; i++) {
        seer_entity_rec *r = &in->recs[i];
        const unsigned char *src = s->recs + (size_t)i * REC_BYTES;
        memcpy(&r->seq, src, 8);
        memcpy(&r->events, src + 8, 8);
        memcpy(r->rng, src + 16, sizeof r->rng);
        memcpy(seer_inst_state(rt, in, i), s->states + (size_t)i * sz->entity_size,
               sz->entity_size);
        memcpy(seer_inst_snapshot(rt, in, i), s->published + (size_t)i * sz->snapshot_size,
               sz->snapshot_size);
    }
    memset(in->idata, 0, rt->idata_stride);
    memcpy(in->idata, s->idata, sz->instance_size);
    if (SEER_CHECKING(rt))
        seer_check_fill_pads(rt, in, 0);
    for (size_t k = 0; k < SNAP_NBUFS; k++) {
        const size_t row = buf_row(rt, snap_bufs[k]);
        memcpy((unsigned char *)seer_runtime_buffer(rt, snap_bufs[k]) + instance * row,
               s->bufs[k], row);
    }
    in->seed = s->seed;
    in->step = s->step;
    in->boundary = s->boundary;
    in->ready = 1;
    in->failed = 0;
    in->resetting = 0;
}

/* Every check of a restore, nothing changed; *s locates the parts. */
static int validate_snapshot(seer_runtime *rt, uint32_t instance, const void *data,
                             uint64_t len, struct parsed *s)
{
    int rc = check_instance(rt, instance, "restore");
    if (rc)
        return rc;
    if (!data) {
        seer_fail(rt, "restore: data must not be NULL");
        return SEER_E_ARG;
    }
    struct reader r = {data, 0, len};
    rc = validate_header(rt, instance, &r);
    return rc == SEER_OK ? validate_body(rt, instance, &r, s) : rc;
}

int seer_runtime_restore_check(seer_runtime *rt, uint32_t instance, const void *data,
                               uint64_t len)
{
    struct parsed s;
    return validate_snapshot(rt, instance, data, len, &s);
}

int seer_runtime_restore_check_alive(seer_runtime *rt, uint32_t instance, const void *data,
                                     uint64_t len, uint8_t *alive)
{
    struct parsed s;
    int rc = validate_snapshot(rt, instance, data, len, &s);
    if (rc != SEER_OK)
        return rc;
    if (!alive) {
        seer_fail(rt, "restore check: alive must not be NULL");
        return SEER_E_ARG;
    }
    for (size_t k = 0; k < SNAP_NBUFS; k++)
        if (snap_bufs[k] == SEER_BUF_ALIVE)
            memcpy(alive, s.bufs[k], buf_row(rt, SEER_BUF_ALIVE));
    return SEER_OK;
}

int seer_runtime_restore(seer_runtime *rt, uint32_t instance, const void *data, uint64_t len)
{
    struct parsed s;
    int rc = validate_snapshot(rt, instance, data, len, &s);
    if (rc != SEER_OK)
        return rc;
    /* the pool (worker 0's free list) as a call finds it: re-created in a
     * child of fork(), refused when broken; held (seer_fork_hold_host): it
     * rewrites the instance's queues and the free lists, and runs no hook */
    seer_fork_hold_host();
    rc = seer_call_begin(rt);
    if (rc != SEER_OK) {
        seer_fork_release_host();
        return rc;
    }
    struct collect rec;
    rc = reserve_restore(rt, &rt->inst[instance], &s, &rec);
    if (rc == SEER_OK)
        commit_restore(rt, instance, &s, &rec);
    seer_fork_release_host();
    if (rc != SEER_OK) {
        seer_fail(rt, "restore of instance %u: %s for its %llu pending events; the instance "
                  "was not changed",
                  instance, rc == SEER_E_BUDGET ? "the runtime's memory_limit has no room"
                                                : "out of memory",
                  (unsigned long long)s.nev);
        return SEER_E_NOMEM;
    }
    return SEER_OK;
}
