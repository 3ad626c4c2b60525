/* util.c - what the benchmark's files (bench.c, ceiling.c, routing.c,
 * gating.c) share, declared in bench.h: the clock, device buffers, the
 * fixed-seed generator and its permutations, and the multi-threaded memcpy
 * every ratio is taken against. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "bench/bench.h"


double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- multi-threaded memcpy: the bandwidth yardstick ---- */
typedef struct cpy { char *dst; const char *src; size_t n; } cpy;
static void *cpy_thread(void *a) {
    cpy *c = a;
    memcpy(c->dst, c->src, c->n);
    return NULL;
}
double bench_copy_once(char *dst, const char *src, size_t n, int threads) {
    pthread_t th[256];
    cpy parts[256];
    if (threads > 256) threads = 256;
    size_t per = (n / (size_t)threads + 63) & ~(size_t)63;
    double t0 = bench_now();
    int started = 0;
    for (int i = 0; i < threads; i++) {
        size_t off = per * (size_t)i;
        if (off >= n) break;
        parts[i] = (cpy){dst + off, src + off, off + per > n ? n - off : per};
        if (i == threads - 1 || pthread_create(&th[i], NULL, cpy_thread, &parts[i]) != 0) cpy_thread(&parts[i]);
        else started = i + 1;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    return bench_now() - t0;
}

void *bench_alloc(size_t n) {
    void *p = NULL;
    return aclrtMalloc(&p, n ? n : 1, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS ? p : NULL;
}
void bench_free(void *p) {
    if (p) aclrtFree(p);
}

static uint64_t g_rng = 88172645463325252ull;
uint32_t bench_rand(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)g_rng;
}
void bench_permutation(int32_t *idx, int64_t n) {
    for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(((uint64_t)bench_rand() << 32 | bench_rand()) % (uint64_t)(i + 1));
        int32_t t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
}
