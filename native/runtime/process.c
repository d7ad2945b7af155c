/*
 * process.c -- what the runtime needs to know about its process: forks,
 * Ctrl-C (SIGINT), the CPUs it may use and the memory it may take.
 *
 * Forks.  A child of fork() has the parent's memory but only the forking
 * thread: a runtime's workers are gone there, and a lock one of them held at
 * the fork stays held.  A process-wide generation, bumped in the child by a
 * pthread_atfork handler, tells a runtime that it now lives in a child; its
 * next call re-creates its locks and worker pool there (seer_pool_after_fork
 * in pool.c), so the child can use it, close it or exit.
 *
 * The thread that forked is the child's only one: lists, arrays and pools
 * another thread was rewriting at the fork are half rewritten there, and a
 * child that walked them crashed (STPA switching executors while a thread
 * forked: 11 of 30 children).  That host-side bookkeeping runs "held"
 * (seer_fork_hold_host): the prepare handler waits until no hold runs (at
 * most SEER_FORK_WAIT_NS), and a hold taken while a fork is under way waits
 * for it.  The model's hooks never run held; a fork during them finds the
 * call in_call (seer_pool_after_fork drops what it was doing).
 *
 * Ctrl-C.  While a step runs in C the Python interpreter cannot act on
 * SIGINT.  The runtime chains a handler in front of the one installed (the
 * interpreter's): it counts the signal, then calls the previous handler as
 * if it had been called directly.  The event loops compare the count with
 * its value at the start of the call every few hundred events and abandon
 * the call (SEER_E_INTERRUPTED) when it changed: the interrupt reaches the
 * user within milliseconds, and the instances are marked as needing a reset.
 * Between events only: a handler that never returns (an endless loop in a
 * model's hook) holds the call until it does; `seer-env check` names such
 * a hook (its hang pass, under a time budget).
 * Every extension module has a copy of the runtime; the copies in a process
 * share one handler, one count and one chain (the hub, see "SIGINT" below),
 * so the interpreter's handler runs once per signal and every copy's loops
 * see it.  Python's signal.signal() puts ours back in front at the next call
 * (it re-installs the interpreter's handler, the one ours chains to); any
 * other handler installed later in place of ours simply turns this off
 * (until the interpreter's is back in place).
 *
 * Called by the host (runtime.c: seer_call_begin, create/destroy) but for
 * seer_sigint_count, which the workers poll too (any thread).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "process.h"

/* ---- fork -------------------------------------------------------------------- */

/* Bumped in each child of a fork.  relaxed everywhere: the child's handler
 * runs in the only thread there is, before fork() returns in it. */
static _Atomic unsigned g_fork_gen;
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

/* Holds running (all runtimes of this copy of the runtime), and whether a
 * fork's prepare handler is waiting or forking: in memory of their own
 * (fork_register), not this file's statics, which the checker's isolation
 * pass watches while a hook runs (a hook that forks runs fork_prepare, whose
 * write was blamed on the model as its static's).  Set once, by
 * fork_register under g_fork_once; NULL where it could not be allocated (no
 * holds then). */
typedef struct fork_gate {
    _Atomic unsigned holds;
    _Atomic int forking;
} fork_gate;
static fork_gate *g_gate;
/* The longest a fork waits for the holds: past it, it forks anyway (a hold
 * that never ends must not hang the process). */
#define SEER_FORK_WAIT_NS 5000000000ull

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000L};
    (void)nanosleep(&ts, NULL);
}

static void fork_register(void);

void seer_fork_hold_host(void)
{
    (void)pthread_once(&g_fork_once, fork_register);
    fork_gate *g = g_gate;
    if (!g)
        return;
    for (;;) {
        /* seq_cst, as fork_prepare's store and load: a store then a load on
         * each side, so either this hold sees `forking` or the prepare
         * handler sees the hold (neither misses both). */
        atomic_fetch_add_explicit(&g->holds, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(&g->forking, memory_order_seq_cst))
            return;
        atomic_fetch_sub_explicit(&g->holds, 1, memory_order_seq_cst);
        /* relaxed: only a wait; the loop's seq_cst pair decides */
        while (atomic_load_explicit(&g->forking, memory_order_relaxed))
            nap_us(50);
    }
}

void seer_fork_release_host(void)
{
    /* release: the held work's writes are done before the prepare handler's
     * load sees the count fall (and fork copies them). */
    if (g_gate)
        atomic_fetch_sub_explicit(&g_gate->holds, 1, memory_order_release);
}

static void fork_prepare(void)
{
    fork_gate *g = g_gate;
    if (!g)
        return;
    /* seq_cst: see seer_fork_hold_host */
    atomic_store_explicit(&g->forking, 1, memory_order_seq_cst);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load_explicit(&g->holds, memory_order_seq_cst)) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t.tv_nsec -
                (uint64_t)t0.tv_nsec > SEER_FORK_WAIT_NS)
            break;
        nap_us(20);
    }
}

static void fork_parent(void)
{
    /* release: pairs with nothing in particular; the holds waiting re-check
     * with their seq_cst pair */
    if (g_gate)
        atomic_store_explicit(&g_gate->forking, 0, memory_order_release);
}

static void fork_child(void)
{
    /* relaxed: see g_fork_gen; the holds of the parent's other threads do
     * not exist here */
    atomic_fetch_add_explicit(&g_fork_gen, 1, memory_order_relaxed);
    if (g_gate) {
        atomic_store_explicit(&g_gate->holds, 0, memory_order_relaxed);
        atomic_store_explicit(&g_gate->forking, 0, memory_order_relaxed);
    }
}

static void fork_register(void)
{
    g_gate = calloc(1, sizeof *g_gate); /* never freed: the handlers outlive every runtime */
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

unsigned seer_fork_generation(void)
{
    (void)pthread_once(&g_fork_once, fork_register);
    /* relaxed: see g_fork_gen (the bump happened in this thread, if at all) */
    return atomic_load_explicit(&g_fork_gen, memory_order_relaxed);
}

/* ---- SIGINT ------------------------------------------------------------------ */

/* Every extension module carries a copy of this file, so a process may hold
 * many.  They agree on one of them, the hub: the first object in load order
 * (dl_iterate_phdr) that exports seer_sigint_hub_v1 with this ABI.  Each copy
 * finds it once (hub()); from then on seer_sigint_watch and seer_sigint_count
 * are the hub's, so there is one handler, one count and one chain however
 * many copies are loaded (before, two copies each put their handler in front
 * of the other's and a signal went round the two for ever).  The choice is
 * the same from every copy: objects are listed in load order, new ones at
 * the end, and none is unloaded (the hub's handle is kept open).
 *
 * The hub's handler counts the signal, then calls the handler it was put in
 * front of (g_prev_int: the interpreter's).  It is put back in front at a
 * call's start when the handler found there is the very one it chains to
 * (Python's signal.signal() re-installs the interpreter's C handler, the
 * same function: the new Python handler is still reached, once per signal);
 * any other handler found in its place (SIG_DFL, SIG_IGN, another library's)
 * turns the watch off until that one is gone: installing in front of a
 * handler that may chain to ours could close a loop or drop the
 * interpreter's handler from the chain.  A signal that re-enters the
 * handler on its thread anyway (a loop made by others) returns at once.
 *
 * The count and that guard live in a page of their own (mmap): the checking
 * mode write-protects the module's static data while a handler runs, and a
 * signal may arrive then. */

#define SEER_SIGINT_HUB_ABI 1u

struct seer_sigint_hub {
    uint32_t abi;              /* SEER_SIGINT_HUB_ABI */
    uint32_t size;             /* sizeof(struct seer_sigint_hub)      */
    void (*watch)(void);       /* seer_sigint_watch of the hub        */
    _Atomic uint64_t *count;   /* signals counted since the process started */
};

/* The one exported name (the build uses -fvisibility=hidden); never called
 * from this copy by name, so no interposition can swap it. */
__attribute__((visibility("default"))) const struct seer_sigint_hub *seer_sigint_hub_v1(void);

struct sigint_state {
    _Atomic uint64_t count;    /* signals counted (any thread may take one) */
    _Atomic long handler_tid;  /* thread running on_sigint, 0: none       */
};

static struct sigint_state g_state_static; /* if the page cannot be mapped */
static struct sigint_state *g_state;       /* set once by own_init          */
static struct seer_sigint_hub g_own_hub;   /* this copy's, set by own_init  */
static pthread_once_t g_own_once = PTHREAD_ONCE_INIT;

/* The hub this copy uses, set once by hub_find (pthread_once orders it). */
static const struct seer_sigint_hub *g_hub;
static pthread_once_t g_hub_once = PTHREAD_ONCE_INIT;
/* g_hub->count, published for seer_sigint_count's fast path. */
static _Atomic(_Atomic uint64_t *) g_count;

/* Under g_int_lock, hub copy only: the handler ours chains to, and whether
 * ours was ever installed. */
static struct sigaction g_prev_int;
static int g_installed;
static pthread_mutex_t g_int_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigint(int sig, siginfo_t *si, void *uctx)
{
    int saved_errno = errno;
    long tid = (long)syscall(SYS_gettid), none = 0;
    /* relaxed: this thread's own store below is all it must see (program
     * order); another thread's value only says it is busy there */
    if (atomic_load_explicit(&g_state->handler_tid, memory_order_relaxed) == tid) {
        errno = saved_errno;
        return; /* re-entered through a loop in the chain: counted already */
    }
    /* relaxed: a marker of this thread's nesting only (pairs with the
     * relaxed store that clears it, on this thread) */
    int owner = atomic_compare_exchange_strong_explicit(&g_state->handler_tid, &none, tid,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed);
    /* relaxed: read by the event loops (seer_sigint_count), which only need
     * to see it soon; nothing else is published with it */
    atomic_fetch_add_explicit(&g_state->count, 1, memory_order_relaxed);
    if (g_prev_int.sa_flags & SA_SIGINFO) {
        if (g_prev_int.sa_sigaction)
            g_prev_int.sa_sigaction(sig, si, uctx);
    } else if (g_prev_int.sa_handler == SIG_DFL) {
        /* the default action, as if we were not here: terminate */
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    } else if (g_prev_int.sa_handler != SIG_IGN) {
        g_prev_int.sa_handler(sig);
    }
    if (owner) /* relaxed: pairs with the compare-exchange above (this thread) */
        atomic_store_explicit(&g_state->handler_tid, 0, memory_order_relaxed);
    errno = saved_errno;
}

static int is_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_sigint;
}

static int is_ignored(const struct sigaction *sa)
{
    return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN;
}

static int same_handler(const struct sigaction *a, const struct sigaction *b)
{
    if ((a->sa_flags ^ b->sa_flags) & SA_SIGINFO)
        return 0;
    return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction == b->sa_sigaction
                                      : a->sa_handler == b->sa_handler;
}

/* seer_sigint_watch of the hub copy (see above for when it installs). */
static void watch_here(void)
{
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0 || is_ours(&cur))
        return; /* ours, still in front */
    pthread_mutex_lock(&g_int_lock);
    if (sigaction(SIGINT, NULL, &cur) == 0 && !is_ours(&cur) && !is_ignored(&cur) &&
        (!g_installed || same_handler(&cur, &g_prev_int))) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigint;
        sa.sa_flags = SA_SIGINFO | (cur.sa_flags & (SA_RESTART | SA_ONSTACK));
        sa.sa_mask = cur.sa_mask;
        /* ours is not installed while this is written: no handler of ours
         * reads it until the sigaction below (a system call) puts it back */
        g_prev_int = cur;
        if (sigaction(SIGINT, &sa, NULL) == 0)
            g_installed = 1;
    }
    pthread_mutex_unlock(&g_int_lock);
}

static void own_init(void)
{
    void *p = mmap(NULL, sizeof(struct sigint_state), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigint_state *s = p != MAP_FAILED ? p : &g_state_static;
    atomic_init(&s->count, 0);
    atomic_init(&s->handler_tid, 0);
    g_state = s;
    g_own_hub.abi = SEER_SIGINT_HUB_ABI;
    g_own_hub.size = (uint32_t)sizeof g_own_hub;
    g_own_hub.watch = watch_here;
    g_own_hub.count = &s->count;
}

const struct seer_sigint_hub *seer_sigint_hub_v1(void)
{
    (void)pthread_once(&g_own_once, own_init);
    return &g_own_hub;
}

struct object_names {
    char **names;
    size_t n, cap;
};

static int collect_name(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object_names *o = arg;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0; /* the executable (or the vDSO): no extension module */
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        char **grown = realloc(o->names, cap * sizeof *grown);
        if (!grown)
            return 1;
        o->names = grown;
        o->cap = cap;
    }
    char *name = strdup(info->dlpi_name);
    if (!name)
        return 1;
    o->names[o->n++] = name;
    return 0;
}

typedef const struct seer_sigint_hub *(*hub_fn)(void);

/* The first loaded object's hub (this copy's own when none answers).  The
 * names are collected first: dlopen is not called inside dl_iterate_phdr. */
static void hub_find(void)
{
    const struct seer_sigint_hub *found = NULL;
    struct object_names o = {NULL, 0, 0};
    (void)dl_iterate_phdr(collect_name, &o);
    for (size_t i = 0; i < o.n; i++) {
        if (!found) {
            void *h = dlopen(o.names[i], RTLD_NOLOAD | RTLD_LAZY);
            if (h) {
                void *sym = dlsym(h, "seer_sigint_hub_v1");
                hub_fn fn = NULL;
                if (sym)
                    memcpy(&fn, &sym, sizeof fn);
                const struct seer_sigint_hub *hb = fn ? fn() : NULL;
                if (hb && hb->abi == SEER_SIGINT_HUB_ABI && hb->size >= sizeof *hb)
                    found = hb; /* its handle stays open: it is never unloaded */
                else
                    (void)dlclose(h);
            }
        }
        free(o.names[i]);
    }
    free(o.names);
    g_hub = found ? found : seer_sigint_hub_v1();
    /* release: pairs with the acquire load in seer_sigint_count (the hub's
     * count was initialized before) */
    atomic_store_explicit(&g_count, g_hub->count, memory_order_release);
}

static const struct seer_sigint_hub *hub(void)
{
    (void)pthread_once(&g_hub_once, hub_find);
    return g_hub;
}

void seer_sigint_watch(void) { hub()->watch(); }

uint64_t seer_sigint_count(void)
{
    /* acquire: pairs with the release store in hub_find */
    _Atomic uint64_t *count = atomic_load_explicit(&g_count, memory_order_acquire);
    if (!count)
        count = hub()->count;
    /* relaxed: a count compared with an earlier value of itself; nothing
     * else is published with it, and seeing it a little late is fine. */
    return atomic_load_explicit(count, memory_order_relaxed);
}

/* ---- CPUs and memory ------------------------------------------------------- */

int64_t seer_thread_id_any(void)
{
#if defined(__linux__) && defined(SYS_gettid)
    return (int64_t)syscall(SYS_gettid);
#else
    return 0;
#endif
}

int seer_cpu_now_any(void)
{
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

int seer_thread_avoid_cpu_host(pthread_t thread, int cpu, seer_cpus *own)
{
#if defined(__linux__)
    _Static_assert(sizeof(cpu_set_t) == sizeof own->bits, "seer_cpus holds a cpu_set_t");
    cpu_set_t set;
    if (!own->known) {
        if (pthread_getaffinity_np(thread, sizeof set, &set) != 0)
            return errno;
        memcpy(own->bits, &set, sizeof set);
        own->known = 1;
    }
    memcpy(&set, own->bits, sizeof set);
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set) && CPU_COUNT(&set) >= 2)
        CPU_CLR(cpu, &set);
    return pthread_setaffinity_np(thread, sizeof set, &set);
#else
    (void)thread;
    (void)cpu;
    (void)own;
    return 0;
#endif
}

uint32_t seer_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (uint32_t)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1u;
}

/* One cpuN line of /proc/stat (`p` to `end`, after "cpu"): its number and
 * free ticks (nice, idle, iowait: its 2nd, 4th and 5th fields).  0, or -1
 * where malformed. */
static int stat_cpu_line(const char *p, const char *end, long *cpu, uint64_t *free)
{
    uint64_t f[5];
    long n = 0;
    if (p == end || *p < '0' || *p > '9')
        return -1;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        n = n < 100000 ? n * 10 + (*p - '0') : n;
    for (int k = 0; k < 5; k++) {
        if (p == end || *p != ' ')
            return -1;
        while (p < end && *p == ' ')
            p++;
        if (p == end || *p < '0' || *p > '9')
            return -1;
        uint64_t v = 0;
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            v = v < UINT64_MAX / 16 ? v * 10 + (uint64_t)(*p - '0') : v;
        f[k] = v;
    }
    *cpu = n;
    *free = f[1] + f[3] + f[4];
    return 0;
}

/* The cpu lines of /proc/stat, a piece at a time (stat_take). */
typedef struct stat_sum {
    const seer_cpus *cpus;
    uint64_t ticks; /* the free ticks of `cpus` so far */
    int found;      /* one of them had a line */
    int done;       /* past the cpu lines (they come first) */
} stat_sum;

/* The whole lines of `text` (`len` bytes) taken into `st`: returns the bytes
 * taken (a line cut at the end is left for the next piece), or -1 where a
 * cpu line is malformed. */
static long stat_take(stat_sum *st, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    while (p < end && !st->done) {
        const size_t n = (size_t)(end - p);
        if (memcmp(p, "cpu", n < 3 ? n : 3) != 0) {
            st->done = 1; /* the first line that is not a cpu line */
            break;
        }
        const char *eol = memchr(p, '\n', n);
        if (!eol)
            break;
        if (eol - p < 3) {
            st->done = 1;
        } else if (p[3] != ' ') { /* cpuN (not the total) */
            long cpu;
            uint64_t free;
            if (stat_cpu_line(p + 3, eol, &cpu, &free) != 0)
                return -1;
            if (cpu < 1024 && (st->cpus->bits[cpu / 64] >> (cpu % 64)) & 1u) {
                st->ticks += free;
                st->found = 1;
            }
        }
        p = eol + 1;
    }
    return (long)(p - text);
}

int seer_cpu_stat_free_ticks_fd(int fd, const seer_cpus *cpus, uint64_t *ticks)
{
    /* a piece at a time: a cpu line is under 200 bytes, and the lines after
     * them ("intr": thousands of bytes) are not read through */
    char buf[1024];
    stat_sum st = {.cpus = cpus};
    size_t have = 0;
    while (!st.done) {
        const ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* the end (a last line cut short is not taken) */
        have += (size_t)r;
        const long took = stat_take(&st, buf, have);
        if (took < 0 || (took == 0 && have == sizeof buf && !st.done))
            return -1; /* malformed, or a cpu line longer than the buffer */
        memmove(buf, buf + took, have - (size_t)took);
        have -= (size_t)took;
    }
    if (!st.found)
        return -1;
    *ticks = st.ticks;
    return 0;
}

int seer_cpus_free_ns_any(uint64_t *free_ns)
{
#if defined(__linux__)
    cpu_set_t set;
    seer_cpus cpus = {{0}, 1};
    _Static_assert(sizeof(cpu_set_t) == sizeof cpus.bits, "seer_cpus holds a cpu_set_t");
    const long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0 || sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    memcpy(cpus.bits, &set, sizeof set);
    const int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    uint64_t ticks = 0;
    const int rc = seer_cpu_stat_free_ticks_fd(fd, &cpus, &ticks);
    close(fd);
    if (rc != 0)
        return -1;
    *free_ns = ticks * (1000000000ull / (uint64_t)hz);
    return 0;
#else
    (void)free_ns;
    return -1;
#endif
}

uint64_t seer_physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return UINT64_MAX;
    return (uint64_t)pages * (uint64_t)page;
}
