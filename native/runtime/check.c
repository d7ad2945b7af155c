/*
 * check.c -- the checking mode (seer_runtime_options.check), which catches
 * what a differential run can miss.
 *
 * SEER_CHECK_ISOLATE (serial executor, one thread): every handler call runs
 * with the memory it must not touch protected by the MMU:
 *
 *   handler          other entities'  own state  snapshot        instance   config,
 *                    states                                      data       static data
 *   init/act/handle  none             rw         read            read       read
 *   boundary         read             -          read            rw         read
 *   observe, state   read             -          read            read       read
 *   publish          read             -          own record rw   read       read
 * (act's action, handle's payload and the output rows are copies: check_rows.h)
 *
 * For that, every entity state and snapshot record of a checked runtime has
 * pages of its own.  A protected access raises SIGSEGV; the handler below
 * sees that the faulting address lies in a region of the checked handler
 * running on this thread, records it and jumps back (siglongjmp) to
 * seer_check_run, which fails the call with SEER_E_ISOLATION and a message
 * naming the handler, the entity, the event and what was touched.  Static
 * data is the writable segment of the model's shared object (the module the
 * model table lives in), RELRO excluded: with -z now the GOT is read-only
 * already, so what remains are the model's (and runtime's) global and static
 * variables, which no handler may write.
 *
 * Nondeterministic C functions (rand(), time(), ...): every extension links
 * them through the wrappers at the end of this file (-Wl,--wrap=NAME, see
 * _build.py).  Outside a checked handler they forward to the real function
 * at the cost of one thread-local load; inside one they record the call.
 *
 * SEER_CHECK_SHUFFLE (parallel executor) is implemented in pool.c.
 *
 * Progress: before and after every checked call the host notes what it
 * runs (handler, instance, entity, event type, time) in a progress record,
 * if the environment names one: SEER_CHECK_PROGRESS=PATH (or fd:N, an open
 * descriptor), a file of at least 4 KiB mapped shared, the record at byte
 * 64 (struct progress_rec; seer_env/check.py reads the same layout).
 * `seer-env check` sets it in the process running the model, so a handler
 * that kills that process (a wild pointer, abort(), exit()) or never
 * returns is named all the same.
 *
 * Threads: the host calls setup/teardown (runtime.c) and begin/end around
 * each call; seer_check_run wraps every handler call on the thread making
 * it, which is the host too (isolation runs on the serial executor).  The
 * SIGSEGV disposition and the armed regions are process-wide, under
 * g_sig_lock; the wrappers below may run on any thread.
 *
 * A fault that is not a checked handler's (another thread, a runtime bug)
 * is left alone: if it hit a protected region, that region is made writable
 * again and the access retried (the check then degrades, it never crashes
 * a correct program); otherwise the previous SIGSEGV disposition is restored
 * and the fault repeats under it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base.h"
#include "check.h"
#include "errors.h"
#include "runtime.h"

/* The checked handler running on this thread (NULL: none).  Set and cleared
 * by the thread itself around a handler call; read by its signal handler. */
_Thread_local seer_check_frame *seer_check_current;

/* The progress record.  Keep in step with _C_REC in seer_env/check.py. */
typedef struct progress_rec {
    uint64_t calls;    /* checked handler calls started                      */
    uint64_t step;     /* the step index of the call's instance              */
    double now;        /* the call's simulated time                          */
    uint32_t hook;     /* enum seer_hook                                     */
    uint32_t running;  /* 1 from the call's start until it returned          */
    uint32_t instance;
    uint32_t entity;   /* the entity (the agent of observe and act)          */
    uint32_t type;     /* handle: the event type (else UINT32_MAX)           */
    uint32_t pad_;
} progress_rec;

#define PROGRESS_OFFSET 64
#define PROGRESS_BYTES 4096

/* Where checked calls note their progress (NULL: nowhere).  Written once,
 * under g_progress_once, when the process creates its first checked
 * runtime; read by the host around checked calls, which it makes after
 * creating their runtime. */
static progress_rec *g_progress;
static pthread_once_t g_progress_once = PTHREAD_ONCE_INIT;

static void progress_map(void)
{
    const char *where = getenv("SEER_CHECK_PROGRESS");
    if (!where || !*where)
        return;
    const int given = strncmp(where, "fd:", 3) == 0;
    int fd;
    if (given) {
        char *end;
        const long n = strtol(where + 3, &end, 10);
        if (*end || n < 0 || n > INT_MAX)
            return;
        fd = (int)n; /* the caller's: mapped, left open */
    } else {
        fd = open(where, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return;
    }
    void *p = mmap(NULL, PROGRESS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!given)
        close(fd);
    if (p != MAP_FAILED)
        g_progress = (progress_rec *)(void *)((unsigned char *)p + PROGRESS_OFFSET);
}

/* ---- the model's static data ------------------------------------------- */

struct phdr_query {
    uintptr_t addr;        /* an address inside the object (the model table) */
    uintptr_t lo, hi;      /* its writable segment, RELRO excluded            */
    size_t page;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct phdr_query *q = arg;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && q->addr >= a && q->addr < a + p->p_memsz)
            mine = 1;
    }
    if (!mine)
        return 0;
    uintptr_t relro_end = 0, lo = 0, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_GNU_RELRO)
            relro_end = a + p->p_memsz;
        if (p->p_type == PT_LOAD && (p->p_flags & PF_W)) {
            lo = a;
            hi = a + p->p_memsz;
        }
    }
    if (relro_end > lo)
        lo = relro_end;
    /* whole pages only, and never a page that holds RELRO data (restoring
     * write access would undo RELRO) */
    lo = (uintptr_t)seer_round_up(lo, q->page);
    hi = (uintptr_t)seer_round_up(hi, q->page);
    if (hi > lo) {
        q->lo = lo;
        q->hi = hi;
    }
    return 1;
}

/* ---- SIGSEGV --------------------------------------------------------------- */

static pthread_mutex_t g_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_sig_users; /* checked calls in progress (all threads) */
static struct sigaction g_old;

/* Regions of the checked calls in progress, for faults that are not a
 * checked handler's (written under g_sig_lock, read by the signal handler). */
#define MAX_ARMED 16
static struct {
    uintptr_t lo, hi;
} g_armed[MAX_ARMED];

/* Is `a` in the region of `bytes` bytes at `p`, or in its fences? */
static int in_fenced(uintptr_t a, const void *p, size_t bytes)
{
    const size_t fence = seer_check_fence(bytes);
    const uintptr_t lo = (uintptr_t)p;
    return a >= lo - fence && a < lo + seer_round_up(bytes, seer_page_size()) + fence;
}

static int region_of(const seer_check_frame *f, uintptr_t a)
{
    const seer_runtime *rt = f->rt;
    const seer_inst *in = f->inst;
    const size_t N = rt->sz.num_entities;
    if (in_fenced(a, in->states, N * rt->entity_stride))
        return SEER_REGION_STATE;
    if (in_fenced(a, in->snapshot, N * rt->snapshot_stride))
        return SEER_REGION_SNAPSHOT;
    if (in_fenced(a, in->idata, rt->idata_stride))
        return SEER_REGION_INSTANCE;
    if (a >= (uintptr_t)rt->config && a < (uintptr_t)rt->config + rt->check.config_len)
        return SEER_REGION_CONFIG;
    if (a >= rt->check.static_lo && a < rt->check.static_hi)
        return SEER_REGION_STATIC;
    if (rt->check.out_map && a >= (uintptr_t)rt->check.out_map &&
        a < (uintptr_t)rt->check.out_map + rt->check.out_map_len)
        return SEER_REGION_OUTPUT; /* the slots are writable: a fence */
    return 0;
}

static int fault_was_write(const void *uctx)
{
#if defined(__x86_64__) && defined(REG_ERR)
    const ucontext_t *uc = uctx;
    return (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
    (void)uctx;
    return -1;
#endif
}

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    seer_check_frame *f = seer_check_current;
    const uintptr_t a = (uintptr_t)si->si_addr;
    if (f && f->armed) {
        int r = a < 65536 ? SEER_REGION_NULL : region_of(f, a);
        if (r) {
            f->region = r;
            f->addr = a;
            f->write = fault_was_write(uctx);
            f->armed = 0;
            siglongjmp(f->jb, 1);
        }
    }
    for (int i = 0; i < MAX_ARMED; i++)
        if (g_armed[i].hi && a >= g_armed[i].lo && a < g_armed[i].hi) {
            /* another thread touched a region a checked call protects */
            mprotect((void *)g_armed[i].lo, g_armed[i].hi - g_armed[i].lo,
                     PROT_READ | PROT_WRITE);
            return;
        }
    sigaction(SIGSEGV, &g_old, NULL); /* not ours: the fault repeats under it */
}

static void arm_static(seer_runtime *rt, int on)
{
    if (!rt->check.static_hi)
        return;
    for (int i = 0; i < MAX_ARMED; i++) {
        if (on && !g_armed[i].hi) {
            g_armed[i].lo = rt->check.static_lo;
            g_armed[i].hi = rt->check.static_hi;
            return;
        }
        if (!on && g_armed[i].lo == rt->check.static_lo && g_armed[i].hi == rt->check.static_hi) {
            g_armed[i].lo = g_armed[i].hi = 0;
            return;
        }
    }
}

void seer_check_begin_call(seer_runtime *rt)
{
    pthread_mutex_lock(&g_sig_lock);
    if (g_sig_users++ == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &g_old);
    }
    arm_static(rt, 1);
    pthread_mutex_unlock(&g_sig_lock);
}

void seer_check_end_call(seer_runtime *rt)
{
    seer_check_disarm(rt);
    pthread_mutex_lock(&g_sig_lock);
    arm_static(rt, 0);
    if (--g_sig_users == 0) {
        struct sigaction cur;
        /* restore only if ours is still installed (a foreign fault may have
         * restored the old disposition already) */
        if (sigaction(SIGSEGV, NULL, &cur) == 0 && cur.sa_sigaction == on_segv)
            sigaction(SIGSEGV, &g_old, NULL);
    }
    pthread_mutex_unlock(&g_sig_lock);
}

/* ---- setting up a checked runtime ------------------------------------------ */

/* A checked handler that calls exit(): the process ends as asked, and the
 * progress record still names the handler.  Without this, the teardown that
 * follows (the module's destructors write its static data) would fault in
 * protected memory and be reported as the handler's breach. */
static void exit_in_handler(void)
{
    seer_check_frame *f = seer_check_current;
    if (f && f->armed) {
        f->armed = 0;
        seer_check_disarm(f->rt);
    }
}

static pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;

static void exit_register(void) { (void)atexit(exit_in_handler); }

int seer_check_setup(seer_runtime *rt)
{
    if (!(rt->check.mode & SEER_CHECK_ISOLATE))
        return SEER_OK;
    (void)pthread_once(&g_exit_once, exit_register);
    (void)pthread_once(&g_progress_once, progress_map);
    struct phdr_query q = {.addr = (uintptr_t)rt->model, .page = seer_page_size()};
    dl_iterate_phdr(phdr_cb, &q);
    rt->check.static_lo = q.lo;
    rt->check.static_hi = q.hi;
    /* the configuration is immutable from here on */
    if (mprotect(rt->config, rt->check.config_len, PROT_READ) != 0)
        return SEER_E_NOMEM;
    return SEER_OK;
}

void seer_check_teardown(seer_runtime *rt)
{
    if ((rt->check.mode & SEER_CHECK_ISOLATE) && rt->config)
        mprotect(rt->config, rt->check.config_len, PROT_READ | PROT_WRITE);
    if (rt->check.out_map)
        munmap(rt->check.out_map, rt->check.out_map_len);
    rt->check.out_map = NULL;
}

/* ---- one checked handler call ---------------------------------------------- */

static void protect(void *p, size_t n, int prot)
{
    if (n)
        (void)mprotect(p, n, prot); /* page-aligned regions of our own: cannot fail */
}

/* Protection classes: handlers of one class see the same protections, but
 * for the entity (init/act/handle) or record (publish) they run for. */
enum { CLS_NONE = 0, CLS_ENTITY, CLS_BOUNDARY, CLS_READ, CLS_PUBLISH };

static int class_of(int hook)
{
    switch (hook) {
    case SEER_HOOK_INIT:
    case SEER_HOOK_ACT:
    case SEER_HOOK_HANDLE: return CLS_ENTITY;
    case SEER_HOOK_BOUNDARY: return CLS_BOUNDARY;
    case SEER_HOOK_PUBLISH: return CLS_PUBLISH;
    default: return CLS_READ;
    }
}

/* Give everything of the armed instance (and the static data) back its
 * normal access.  Called at the end of a call and before the runtime itself
 * writes entity states (reset). */
void seer_check_disarm(seer_runtime *rt)
{
    seer_inst *in = rt->check.armed_inst;
    if (!in)
        return;
    const size_t N = rt->sz.num_entities;
    const int RW = PROT_READ | PROT_WRITE;
    protect(in->states, N * rt->entity_stride, RW);
    protect(in->snapshot, N * rt->snapshot_stride, RW);
    protect(in->idata, rt->idata_stride, RW);
    if (rt->check.static_hi)
        protect((void *)rt->check.static_lo, rt->check.static_hi - rt->check.static_lo, RW);
    rt->check.armed_inst = NULL;
}

/* Protections for handler `hook` of entity e of `in`.  Consecutive handlers
 * of one class only move the entity's (record's) page: two mprotect calls
 * per event in the event loop. */
static void arm(seer_runtime *rt, seer_inst *in, int hook, uint32_t e)
{
    const size_t N = rt->sz.num_entities;
    const size_t states = N * rt->entity_stride, snaps = N * rt->snapshot_stride;
    const int RW = PROT_READ | PROT_WRITE, cls = class_of(hook);
    unsigned char *page = in->states + (size_t)e * rt->entity_stride;
    unsigned char *rec = in->snapshot + (size_t)e * rt->snapshot_stride;
    if (rt->check.armed_inst == in && rt->check.armed_cls == cls) {
        const uint32_t old = rt->check.armed_entity;
        if (cls == CLS_ENTITY && old != e) {
            protect(in->states + (size_t)old * rt->entity_stride, rt->entity_stride, PROT_NONE);
            protect(page, rt->entity_stride, RW);
        } else if (cls == CLS_PUBLISH && old != e) {
            protect(in->snapshot + (size_t)old * rt->snapshot_stride, rt->snapshot_stride,
                    PROT_READ);
            protect(rec, rt->snapshot_stride, RW);
        }
        rt->check.armed_entity = e;
        return;
    }
    seer_check_disarm(rt);
    if (rt->check.static_hi)
        protect((void *)rt->check.static_lo, rt->check.static_hi - rt->check.static_lo,
                PROT_READ);
    switch (cls) {
    case CLS_ENTITY:
        protect(in->states, states, PROT_NONE);
        protect(page, rt->entity_stride, RW);
        protect(in->snapshot, snaps, PROT_READ);
        protect(in->idata, rt->idata_stride, PROT_READ);
        break;
    case CLS_BOUNDARY:
        protect(in->states, states, PROT_READ);
        protect(in->snapshot, snaps, PROT_READ);
        break;
    case CLS_PUBLISH:
        protect(in->states, states, PROT_READ);
        protect(in->snapshot, snaps, PROT_READ);
        protect(rec, rt->snapshot_stride, RW);
        protect(in->idata, rt->idata_stride, PROT_READ);
        break;
    default: /* observe, global state */
        protect(in->states, states, PROT_READ);
        protect(in->snapshot, snaps, PROT_READ);
        protect(in->idata, rt->idata_stride, PROT_READ);
        break;
    }
    rt->check.armed_inst = in;
    rt->check.armed_cls = cls;
    rt->check.armed_entity = e;
}

static const char *hook_name(int hook)
{
    static const char *const names[] = {"init",    "act",          "handle",     "boundary",
                                        "observe", "publish",      "global_state",
                                        "action_mask"};
    return hook >= 0 && hook <= SEER_HOOK_MASK ? names[hook] : "?";
}

/* What the handler was doing, for the message. */
static void doing(const seer_ctx *c, int hook, char *buf, size_t n)
{
    const seer_runtime *rt = c->rt;
    char t[32];
    if (hook == SEER_HOOK_HANDLE)
        snprintf(buf, n, "handle for entity %u of instance %u (event type %u, %s, at t=%s)",
                 c->self, c->inst_idx, c->cur_type,
                 seer_model_event_name(rt->model, c->cur_type), seer_fmt_double(t, c->now));
    else if (hook == SEER_HOOK_BOUNDARY || hook == SEER_HOOK_STATE)
        snprintf(buf, n, "%s of instance %u (t=%s)", hook_name(hook), c->inst_idx,
                 seer_fmt_double(t, c->now));
    else
        snprintf(buf, n, "%s for %s %u of instance %u (t=%s)", hook_name(hook),
                 hook == SEER_HOOK_OBSERVE || hook == SEER_HOOK_ACT || hook == SEER_HOOK_MASK
                     ? "agent"
                     : "entity",
                 c->self, c->inst_idx, seer_fmt_double(t, c->now));
}

/* Byte `off` of an entity state, in words: its state field, if declared. */
static void field_text(const seer_model *m, size_t off, char *buf, size_t n)
{
    for (uint32_t i = 0; i < m->num_state_fields; i++) {
        const seer_field *fl = &m->state_fields[i];
        if (off >= fl->offset && off < (size_t)fl->offset + (size_t)fl->size * fl->count) {
            snprintf(buf, n, "field '%s', byte %zu", fl->name, off);
            return;
        }
    }
    snprintf(buf, n, "byte %zu", off);
}

/* What a handler did to an entity state it must not touch. */
static void state_fault_text(const seer_ctx *c, int hook, const seer_check_frame *f,
                             const char *verb, char *what, size_t n)
{
    const seer_runtime *rt = c->rt;
    const size_t size = rt->sz.entity_size ? rt->sz.entity_size : 1;
    /* states sit at the end of their pages: an address before entity k's
     * state is past the end of entity k-1's */
    const uint32_t N = rt->sz.num_entities;
    const uintptr_t lo = (uintptr_t)c->inst->states, hi = lo + (size_t)N * rt->entity_stride;
    /* in a fence (seer_check_region_alloc): before the first state, or past
     * the last, taken as bytes of entity 0's (N-1's) page */
    const uintptr_t at = f->addr < lo ? lo : f->addr >= hi ? hi - 1 : f->addr;
    const size_t rel = at - lo;
    const uint32_t k = (uint32_t)(rel / rt->entity_stride);
    const size_t off = rel % rt->entity_stride;
    const int own = hook == SEER_HOOK_INIT || hook == SEER_HOOK_ACT || hook == SEER_HOOK_HANDLE;
    char where[128], fld[80];
    if (f->addr < lo) {
        snprintf(where, sizeof where, "memory %zu bytes before entity 0's state",
                 (size_t)(lo - f->addr) + rt->entity_pad);
    } else if (f->addr >= hi) {
        snprintf(where, sizeof where,
                 "memory %zu bytes past the end of entity %u's state (the last entity's)",
                 (size_t)(f->addr - hi), N - 1);
    } else if (off >= rt->entity_pad) {
        field_text(rt->model, off - rt->entity_pad, fld, sizeof fld);
        snprintf(where, sizeof where, "the live state of entity %u (%s)", k, fld);
    } else if (k == 0 || (own && k == c->self)) {
        snprintf(where, sizeof where, "memory %zu bytes before entity %u's state",
                 rt->entity_pad - off, k);
    } else {
        snprintf(where, sizeof where, "memory %zu bytes past the end of entity %u's state",
                 off + rt->entity_stride - rt->entity_pad - size, k - 1);
    }
    /* The entity the code meant: pointer arithmetic on a state (the
     * handler's own, else the one the address follows) as if the states
     * were one array, which they are not, in this layout or any other. */
    const uint32_t base = own ? c->self
                              : (off >= rt->entity_pad || k == 0 || f->addr >= hi ? k : k - 1);
    const intptr_t delta = (intptr_t)(f->addr - ((uintptr_t)c->inst->states +
                                                 (size_t)base * rt->entity_stride +
                                                 rt->entity_pad));
    const intptr_t q = delta >= 0 ? delta / (intptr_t)size
                                  : -((-delta + (intptr_t)size - 1) / (intptr_t)size);
    const intptr_t j = (intptr_t)base + q;
    char meant[160] = "";
    if (j >= 0 && j < (intptr_t)rt->sz.num_entities && (off < rt->entity_pad || j != k)) {
        field_text(rt->model, (size_t)(delta - q * (intptr_t)size), fld, sizeof fld);
        snprintf(meant, sizeof meant,
                 ", where entity %ld's state (%s) would be if entity states were one array",
                 (long)j, fld);
    }
    if (f->addr < lo || f->addr >= hi || (k == 0 && off < rt->entity_pad))
        snprintf(what, n,
                 "%s %s%s, outside every entity's state: %s; look for an index or a pointer "
                 "past the states",
                 verb, where, meant, seer_check_far_words(f->write));
    else if (own)
        snprintf(what, n,
                 "%s %s%s: a handler may touch only its own entity's state; read another "
                 "entity's published snapshot (seer_snapshot) or send it an event instead",
                 verb, where, meant);
    else
        snprintf(what, n,
                 "wrote %s%s: at the boundary entity states are read-only (change them in "
                 "act or handle)",
                 where, meant);
}

/* What a handler did to the model's static data, located in its module. */
static void static_fault_text(const seer_check_frame *f, char *what, size_t n)
{
    /* static symbols are not in the dynamic symbol table (hidden
     * visibility): the host resolves the module offset */
    Dl_info info;
    uintptr_t off = f->addr;
    char sym[96] = "";
    if (dladdr((void *)f->addr, &info)) {
        off = f->addr - (uintptr_t)info.dli_fbase;
        if (info.dli_sname)
            snprintf(sym, sizeof sym, " (%s)", info.dli_sname);
    }
    snprintf(what, n,
             "wrote static data at module offset %#lx%s: global and static variables are "
             "shared by every entity and thread; keep per-entity data in the entity state "
             "and per-instance data in the instance data",
             (unsigned long)off, sym);
}

static void report_fault(seer_ctx *c, int hook, const seer_check_frame *f)
{
    seer_runtime *rt = c->rt;
    char who[256], what[512];
    doing(c, hook, who, sizeof who);
    const char *verb = f->write == 1 ? "wrote" : f->write == 0 ? "read" : "touched";
    switch (f->region) {
    case SEER_REGION_STATE:
        state_fault_text(c, hook, f, verb, what, sizeof what);
        break;
    case SEER_REGION_SNAPSHOT: {
        const uintptr_t lo = (uintptr_t)c->inst->snapshot;
        const size_t all = (size_t)rt->sz.num_entities * rt->snapshot_stride;
        if (f->addr < lo || f->addr >= lo + all)
            snprintf(what, sizeof what,
                     "%s memory %zu bytes %s the published snapshot records (in a fence "
                     "around them): only publish writes a record, its own entity's, at the "
                     "boundary, and seer_snapshot reads the record of an entity in range; %s",
                     verb,
                     f->addr < lo ? (size_t)(lo - f->addr) + rt->snapshot_pad
                                  : (size_t)(f->addr - lo - all),
                     f->addr < lo ? "before" : "past the end of", seer_check_far_words(f->write));
        else if (hook == SEER_HOOK_PUBLISH &&
                 (f->addr - lo) / rt->snapshot_stride == (uintptr_t)c->self + 1 &&
                 (f->addr - lo) % rt->snapshot_stride < rt->snapshot_pad)
            /* the page after its own record's, before the next record */
            snprintf(what, sizeof what,
                     "wrote memory %zu bytes past the end of its own snapshot record "
                     "(snapshot_size=%u bytes): publish writes only record[0..snapshot_size-1]",
                     (size_t)((f->addr - lo) % rt->snapshot_stride), rt->sz.snapshot_size);
        else
            snprintf(what, sizeof what,
                     "wrote the published snapshot record of entity %u: only publish writes a "
                     "record, its own entity's, at the boundary",
                     (uint32_t)((f->addr - lo) / rt->snapshot_stride));
        break;
    }
    case SEER_REGION_INSTANCE: {
        const uintptr_t lo = (uintptr_t)c->inst->idata;
        const size_t size = rt->sz.instance_size;
        if (f->addr < lo || f->addr >= lo + rt->idata_stride)
            snprintf(what, sizeof what,
                     "%s memory %zu bytes %s the instance data (instance_size=%zu bytes, in a "
                     "fence around it): the boundary hook writes only the instance data's "
                     "own bytes; %s",
                     verb, f->addr < lo ? (size_t)(lo - f->addr) : (size_t)(f->addr - lo - size),
                     f->addr < lo ? "before" : "past the end of", size, seer_check_far_words(f->write));
        else
            snprintf(what, sizeof what,
                     "wrote the instance data: only the boundary hook writes it (event handlers "
                     "read it)");
        break;
    }
    case SEER_REGION_CONFIG:
        snprintf(what, sizeof what,
                 "wrote the configuration: it is immutable once describe has completed it");
        break;
    case SEER_REGION_NULL:
        snprintf(what, sizeof what,
                 "dereferenced a NULL pointer (address %#lx): seer_entity_state returns NULL "
                 "outside the boundary hooks, seer_snapshot for an entity out of range",
                 (unsigned long)f->addr);
        break;
    case SEER_REGION_OUTPUT: {
        /* the hook's rows: observe's five, global_state's, the masks */
        const int lo = hook == SEER_HOOK_OBSERVE ? SEER_OUT_OBS
                       : hook == SEER_HOOK_STATE ? SEER_OUT_STATE
                       : hook == SEER_HOOK_ACT ? SEER_IN_ACTION
                       : hook == SEER_HOOK_HANDLE ? SEER_IN_PAYLOAD
                                                 : SEER_OUT_MASK;
        const int hi = hook == SEER_HOOK_OBSERVE ? SEER_OUT_TRUNCATED : lo;
        seer_check_output_text(rt, lo, hi, f->addr, f->write, verb, what, sizeof what);
        break;
    }
    default:
        static_fault_text(f, what, sizeof what);
        break;
    }
    seer_worker_error_local(c->w, SEER_E_ISOLATION,
                            "contract violation (isolation) in model '%s': %s %s",
                            rt->model->name, who, what);
}

/* The slack a hook may reach without a fault (seer_check_fill_pads): the
 * bytes before its own entity's state (init, act, handle) or record
 * (publish), after the instance data (boundary).  A changed byte is a
 * breach; as a fault would be, it is reported (report_fault, or here for
 * the slack of records and instance data) and the slack filled again. */
static int pad_breach(seer_ctx *c, int hook, seer_check_frame *f)
{
    seer_runtime *rt = c->rt;
    seer_inst *in = c->inst;
    const int cls = class_of(hook);
    unsigned char *p;
    size_t n;
    if (cls == CLS_ENTITY) {
        p = in->states + (size_t)c->self * rt->entity_stride;
        n = rt->entity_pad;
    } else if (cls == CLS_PUBLISH) {
        p = in->snapshot + (size_t)c->self * rt->snapshot_stride;
        n = rt->snapshot_pad;
    } else if (cls == CLS_BOUNDARY) {
        p = in->idata + rt->sz.instance_size;
        n = rt->idata_stride - rt->sz.instance_size;
    } else {
        return 0;
    }
    const size_t b = seer_check_guard_find(p, n);
    if (b == SIZE_MAX)
        return 0;
    memset(p, SEER_GUARD_BYTE, n);
    char who[256];
    doing(c, hook, who, sizeof who);
    if (cls == CLS_ENTITY) {
        f->region = SEER_REGION_STATE;
        f->addr = (uintptr_t)(p + b);
        f->write = 1;
        report_fault(c, hook, f);
    } else if (cls == CLS_PUBLISH) {
        seer_worker_error_local(
            c->w, SEER_E_ISOLATION,
            "contract violation (isolation) in model '%s': %s wrote memory %zu bytes before "
            "its entity's published snapshot record, where entity %u's record would be if the "
            "records were one array: publish writes only its own record",
            rt->model->name, who, n - b, c->self ? c->self - 1 : 0);
    } else {
        /* a plain run's instance data: 64-byte lines of its own */
        const int far = rt->sz.instance_size + b >= seer_round_up(rt->sz.instance_size, 64);
        seer_worker_error_local(
            c->w, SEER_E_ISOLATION,
            "contract violation (isolation) in model '%s': %s wrote memory %zu bytes past the "
            "end of the instance data (instance_size=%u bytes): the boundary hook writes only "
            "the instance data's own bytes%s%s",
            rt->model->name, who, b, rt->sz.instance_size, far ? "; " : "",
            far ? seer_check_far_words(1) : "");
    }
    return 1;
}

/* A hook that wrote into its const input (compared with the original). */
static int input_changed(seer_ctx *c, int hook, int slot, const unsigned char *copy,
                         const void *src)
{
    const seer_runtime *rt = c->rt;
    const size_t len = rt->check.out_len[slot];
    const unsigned char *orig = src;
    char who[256], what[512];
    size_t b = 0;
    while (b < len && copy[b] == orig[b])
        b++;
    int past;
    const size_t d = b < len ? 0 : seer_check_in_guard(rt, slot, &past);
    if (b < len) /* within it */
        snprintf(what, sizeof what, "wrote byte %zu of its %s (%zu bytes): %s", b,
                 slot == SEER_IN_ACTION ? "action" : "payload", len,
                 slot == SEER_IN_ACTION
                     ? "the action is const (a plain run changes the caller's action buffer)"
                     : "the payload is const (keep what the handler computes in its state)");
    else if (d != SIZE_MAX) /* just before or past it (the fence catches the rest) */
        seer_check_output_text(rt, slot, slot,
                               past ? (uintptr_t)copy + len + d : (uintptr_t)copy - d, 1,
                               "wrote", what, sizeof what);
    else
        return 0;
    doing(c, hook, who, sizeof who);
    seer_worker_error_local(c->w, SEER_E_ISOLATION,
                            "contract violation (isolation) in model '%s': %s %s",
                            rt->model->name, who, what);
    return 1;
}

int seer_check_run(seer_ctx *c, int hook, const seer_hook_args *a)
{
    seer_runtime *rt = c->rt;
    const seer_model *m = rt->model;
    seer_inst *in = c->inst;
    const uint32_t e = c->self;
    volatile int rc = 0;
    seer_check_frame f;
    memset(&f, 0, sizeof f);
    f.rt = rt;
    f.inst = in;
    /* Plain stores into the shared record: the other process reads what it
     * reports only once this one has stopped (dead, or killed for exceeding
     * its time budget); before that it only looks whether `calls` still
     * moves, where a torn read does no harm.  The handler call below is
     * opaque to the compiler, which must complete the stores before it. */
    progress_rec *const p = g_progress;
    if (p) {
        p->hook = (uint32_t)hook;
        p->instance = c->inst_idx;
        p->entity = e;
        p->type = hook == SEER_HOOK_HANDLE ? c->cur_type : UINT32_MAX;
        p->now = c->now;
        p->step = in->step;
        p->calls++;
        p->running = 1;
    }
    /* act's action and handle's payload: copies against a fence */
    const int in_slot = hook == SEER_HOOK_ACT ? SEER_IN_ACTION
                        : hook == SEER_HOOK_HANDLE ? SEER_IN_PAYLOAD
                                                   : -1;
    const unsigned char *input =
        in_slot < 0 ? NULL : seer_check_in_copy(rt, in_slot, a->cptr, c->inst_idx, e);
    const int had_err = c->w->err;
    arm(rt, in, hook, e);
    if (sigsetjmp(f.jb, 1) == 0) {
        f.armed = 1;
        seer_check_current = &f;
        switch (hook) {
        case SEER_HOOK_INIT: rc = m->init(c, a->entity); break;
        case SEER_HOOK_ACT: rc = m->act(c, a->entity, input); break;
        case SEER_HOOK_HANDLE: rc = m->handle(c, a->entity, a->type, input, a->size); break;
        case SEER_HOOK_BOUNDARY: m->boundary(c, a->entity); break;
        case SEER_HOOK_OBSERVE: m->observe(c, a->type, a->out); break;
        case SEER_HOOK_PUBLISH: m->publish(c, a->cptr, a->entity); break;
        case SEER_HOOK_MASK: m->action_mask(c, a->type, a->entity); break;
        default: m->global_state(c, a->fout); break;
        }
    }
    seer_check_current = NULL;
    f.armed = 0;
    if (p)
        p->running = 0;
    /* A breach is told before the handler's own failure, which may follow
     * from it (a payload it wrote, then read): the error this call set is
     * put aside while the breaches are looked for, and back if none is. */
    const int own_err = had_err ? 0 : c->w->err;
    c->w->err = had_err;
    if (!f.region && pad_breach(c, hook, &f))
        return SEER_E_ISOLATION;
    if (!f.region && input && input_changed(c, hook, in_slot, input, a->cptr))
        return SEER_E_ISOLATION;
    if (f.region) {
        report_fault(c, hook, &f);
        return SEER_E_ISOLATION;
    }
    if (!f.foreign && own_err)
        c->w->err = own_err;
    if (f.foreign) {
        char who[256];
        doing(c, hook, who, sizeof who);
        seer_worker_error_local(
            c->w, SEER_E_ISOLATION,
            "contract violation (isolation) in model '%s': %s called %s(): a handler must %s",
            m->name, who, f.foreign,
            f.foreign_clock ? "not read clocks (its results would depend on when it ran); use "
                              "seer_now for simulated time"
                            : "draw random numbers only from its entity's stream "
                              "(seer_rng_u64, seer_rng_uniform, ...)");
        return SEER_E_ISOLATION;
    }
    return rc;
}

/* ---- nondeterministic C functions ---------------------------------------- */

static void foreign(const char *fn, int clock)
{
    seer_check_frame *f = seer_check_current;
    if (f && !f->foreign) {
        f->foreign = fn;
        f->foreign_clock = clock;
    }
}

#define WRAP0(ret, name, clk)                                                            \
    ret __real_##name(void);                                                             \
    ret __wrap_##name(void);                                                             \
    ret __wrap_##name(void)                                                              \
    {                                                                                    \
        foreign(#name, clk);                                                             \
        return __real_##name();                                                          \
    }
#define WRAP1(ret, name, T, clk)                                                         \
    ret __real_##name(T a);                                                              \
    ret __wrap_##name(T a);                                                              \
    ret __wrap_##name(T a)                                                               \
    {                                                                                    \
        foreign(#name, clk);                                                             \
        return __real_##name(a);                                                         \
    }
#define WRAP2(ret, name, T, U, clk)                                                      \
    ret __real_##name(T a, U b);                                                         \
    ret __wrap_##name(T a, U b);                                                         \
    ret __wrap_##name(T a, U b)                                                          \
    {                                                                                    \
        foreign(#name, clk);                                                             \
        return __real_##name(a, b);                                                      \
    }

WRAP0(int, rand, 0)
WRAP1(int, rand_r, unsigned int *, 0)
WRAP0(long, random, 0)
WRAP0(double, drand48, 0)
WRAP1(double, erand48, unsigned short *, 0)
WRAP0(long, lrand48, 0)
WRAP1(long, nrand48, unsigned short *, 0)
WRAP0(long, mrand48, 0)
WRAP1(long, jrand48, unsigned short *, 0)
WRAP1(time_t, time, time_t *, 1)
WRAP0(clock_t, clock, 1)
WRAP2(int, gettimeofday, struct timeval *, void *, 1)
WRAP2(int, clock_gettime, clockid_t, struct timespec *, 1)
WRAP2(int, timespec_get, struct timespec *, int, 1)

void __real_srand(unsigned int seed);
void __wrap_srand(unsigned int seed);
void __wrap_srand(unsigned int seed)
{
    foreign("srand", 0);
    __real_srand(seed);
}

void __real_srandom(unsigned int seed);
void __wrap_srandom(unsigned int seed);
void __wrap_srandom(unsigned int seed)
{
    foreign("srandom", 0);
    __real_srandom(seed);
}

void __real_srand48(long seed);
void __wrap_srand48(long seed);
void __wrap_srand48(long seed)
{
    foreign("srand48", 0);
    __real_srand48(seed);
}
