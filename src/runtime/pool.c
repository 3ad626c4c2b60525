/* pool.c - the worker pool behind mf_parallel_for: pthreads created once, on
 * first need; the calling thread works too; one parallel loop at a time. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"

/* Lock order: g_busy (held by the one caller that owns the workers for a
 * loop), then g_mu (guards the job fields, the generation and `active`). A
 * caller that finds g_busy taken runs its loop alone instead of waiting, so
 * concurrent user threads never deadlock and never idle. */
#define MF_MAX_THREADS 256

static pthread_once_t g_cfg_once = PTHREAD_ONCE_INIT;
static int g_threads = 1; /* configured, caller included */
static bool g_started;    /* under g_busy */
static int g_workers;     /* started; under g_busy */
static pthread_mutex_t g_busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static uint64_t g_gen;
static int g_active;  /* workers that joined the current loop and have not finished it */
static bool g_open;   /* the current loop still takes workers (its caller has not run out of chunks) */
static mf_range_fn g_fn;
static void *g_ctx;
static int64_t g_n, g_chunk;
static _Atomic int64_t g_next;
static _Thread_local bool tl_worker; /* nested loops inside a worker run inline */

static void configure(void) {
    int n = 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    const char *v = getenv("MOEFR_NUM_THREADS");
    if (v && *v) {
        char *end;
        long want = strtol(v, &end, 10);
        if (*end == '\0' && want >= 1) n = want > MF_MAX_THREADS ? MF_MAX_THREADS : (int)want;
        else mf_log(MF_LOG_WARN, "MOEFR_NUM_THREADS=%s is not a positive integer; using %d", v, n);
    }
    g_threads = n < 1 ? 1 : n > MF_MAX_THREADS ? MF_MAX_THREADS : n;
}

int mf_num_threads(void) {
    pthread_once(&g_cfg_once, configure);
    return g_threads;
}

static void run_chunks(void) {
    for (;;) {
        int64_t b = atomic_fetch_add_explicit(&g_next, g_chunk, memory_order_relaxed);
        if (b >= g_n) return;
        int64_t e = b + g_chunk < g_n ? b + g_chunk : g_n;
        g_fn(g_ctx, b, e);
    }
}

static void *worker(void *arg) {
    (void)arg;
    tl_worker = true;
    uint64_t seen = 0;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (g_gen == seen) pthread_cond_wait(&g_wake, &g_mu);
        seen = g_gen;
        if (!g_open) continue; /* woke after its caller had done every chunk: nothing left to join */
        g_active++;
        pthread_mutex_unlock(&g_mu);
        run_chunks();
        pthread_mutex_lock(&g_mu);
        if (--g_active == 0) pthread_cond_signal(&g_done);
    }
    return NULL;
}

/* A fork()ed child has none of the workers: it starts its own when needed. */
static void after_fork_child(void) {
    pthread_mutex_init(&g_busy, NULL);
    pthread_mutex_init(&g_mu, NULL);
    pthread_cond_init(&g_wake, NULL);
    pthread_cond_init(&g_done, NULL);
    g_started = false;
    g_workers = 0;
    g_active = 0;
    g_open = false;
    tl_worker = false;
}

/* Worker stacks are as large as the process's stack limit (RLIMIT_STACK, what
 * the main thread and glibc's default threads get), clamped to
 * [MF_WORKER_STACK_MIN, 64 MiB]; 8 MiB when the limit is unlimited. The
 * library's frames are bounded at build time against MF_WORKER_STACK_MIN
 * (scripts/check-frames.sh, in every build's test suite), so a kernel that
 * runs on the calling thread also runs on a worker, in every build type. */
static size_t worker_stack_size(void) {
    size_t want = (size_t)8 << 20;
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) want = (size_t)rl.rlim_cur;
    if (want < MF_WORKER_STACK_MIN) want = MF_WORKER_STACK_MIN;
    if (want > ((size_t)64 << 20)) want = (size_t)64 << 20;
    return want;
}

static void start(void) { /* with g_busy held */
    g_started = true;
    pthread_atfork(NULL, NULL, after_fork_child);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, worker_stack_size());
    for (int i = 1; i < mf_num_threads(); i++) {
        pthread_t t;
        if (mf_thread_create(&t, &attr, worker, NULL) != 0) {
            mf_log(MF_LOG_WARN, "could not start worker %d; running with %d threads", i, i);
            break;
        }
        g_workers++;
    }
    pthread_attr_destroy(&attr);
}

void mf_parallel_for(int64_t n, mf_range_fn fn, void *ctx, int64_t serial_below) {
    if (n <= 0) return;
    if (n < serial_below || n == 1 || tl_worker || mf_num_threads() == 1) {
        fn(ctx, 0, n);
        return;
    }
    if (pthread_mutex_trylock(&g_busy) != 0) { /* another loop owns the workers */
        fn(ctx, 0, n);
        return;
    }
    if (!g_started) start();
    if (g_workers == 0) {
        pthread_mutex_unlock(&g_busy);
        fn(ctx, 0, n);
        return;
    }
    /* Several chunks per thread balance cores that others also use; any
     * split gives the same bits, since each unit is computed by one call. */
    int64_t chunk = n / ((int64_t)(g_workers + 1) * 32);
    pthread_mutex_lock(&g_mu);
    g_fn = fn;
    g_ctx = ctx;
    g_n = n;
    g_chunk = chunk < 1 ? 1 : chunk;
    atomic_store_explicit(&g_next, 0, memory_order_relaxed);
    g_active = 0;
    g_open = true;
    g_gen++;
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_mu);
    tl_worker = true;
    run_chunks();
    tl_worker = false;
    /* Every chunk is taken: workers that have not woken yet stay out of this loop, so a short
     * loop does not wait for a wake-up (30-60 us on the AVX2 EPYC VM: a 1-token GroupedMatmul
     * took 43-75 us on two threads, 12-15 on one); those that joined are waited for. */
    pthread_mutex_lock(&g_mu);
    g_open = false;
    while (g_active > 0) pthread_cond_wait(&g_done, &g_mu);
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_busy);
}

int mf_pool_workers(void) {
    pthread_mutex_lock(&g_busy);
    int n = g_workers;
    pthread_mutex_unlock(&g_busy);
    return n;
}
