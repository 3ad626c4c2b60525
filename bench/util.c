/* util.c - what the benchmark's files (bench.c, ceiling.c, routing.c,
 * gating.c, gmm.c, swiglu.c) share, declared in bench.h: the clock, device
 * buffers, the fixed-seed generator and its permutations, the multi-threaded
 * memcpy every ratio is taken against, and the CPU's name from /proc/cpuinfo. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "bench/bench.h"


double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- multi-threaded copy: the bandwidth yardstick ----
 * glibc's memcpy picks its store kind by size: below its non-temporal
 * threshold (3/4 of the L3 the CPU reports, per thread sharing it) it writes
 * through the cache, reading every destination line first; above it, it
 * streams. A VM that reports its host's whole L3 (480 MiB seen on a Xeon)
 * puts copies of 150 MB per thread below that line, where memcpy measured
 * 0.62x of its own speed one size up. So each copy is timed twice, memcpy
 * and a streaming copy of the same bytes (x86-64 only), and the yardstick
 * is the faster: the machine's copy speed, never flattered by a size glibc
 * happens to copy slowly. */
#if defined(__x86_64__)
#include <emmintrin.h> /* SSE2: part of x86-64, no flag needed */
/* Four 4 KiB pages at a time, one line of each in turn (four streams keep
 * more reads in flight than one; glibc's large copy does the same), written
 * with streaming stores; what is left over by memcpy. 16-byte aligned d, s. */
static void copy_stream(char *d, const char *s, size_t n) {
    const size_t page = 4096;
    size_t i = 0;
    for (; i + 4 * page <= n; i += 4 * page)
        for (size_t o = 0; o < page; o += 64)
            for (size_t p = 0; p < 4; p++) {
                const __m128i *from = (const __m128i *)(const void *)(s + i + p * page + o);
                __m128i *to = (__m128i *)(void *)(d + i + p * page + o);
                _mm_prefetch((const char *)from + 256, _MM_HINT_T0);
                const __m128i a = _mm_load_si128(from), b = _mm_load_si128(from + 1);
                const __m128i c = _mm_load_si128(from + 2), e = _mm_load_si128(from + 3);
                _mm_stream_si128(to, a), _mm_stream_si128(to + 1, b);
                _mm_stream_si128(to + 2, c), _mm_stream_si128(to + 3, e);
            }
    _mm_sfence();
    if (i < n) memcpy(d + i, s + i, n - i);
}
#endif

typedef struct cpy { char *dst; const char *src; size_t n; int stream; } cpy;
static void *cpy_thread(void *a) {
    cpy *c = a;
#if defined(__x86_64__)
    if (c->stream) {
        copy_stream(c->dst, c->src, c->n);
        return NULL;
    }
#endif
    memcpy(c->dst, c->src, c->n);
    return NULL;
}
static double copy_timed(char *dst, const char *src, size_t n, int threads, int stream) {
    pthread_t th[256];
    cpy parts[256];
    if (threads > 256) threads = 256;
    size_t per = (n / (size_t)threads + 63) & ~(size_t)63;
    double t0 = bench_now();
    int started = 0;
    for (int i = 0; i < threads; i++) {
        size_t off = per * (size_t)i;
        if (off >= n) break;
        parts[i] = (cpy){dst + off, src + off, off + per > n ? n - off : per, stream};
        if (i == threads - 1 || pthread_create(&th[i], NULL, cpy_thread, &parts[i]) != 0) cpy_thread(&parts[i]);
        else started = i + 1;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    return bench_now() - t0;
}
double bench_copy_once(char *dst, const char *src, size_t n, int threads) {
    const double t = copy_timed(dst, src, n, threads, 0);
#if defined(__x86_64__)
    if (((uintptr_t)dst | (uintptr_t)src) % 16 == 0) {
        const double ts = copy_timed(dst, src, n, threads, 1);
        return ts < t ? ts : t;
    }
#endif
    return t;
}

void *bench_alloc(size_t n) {
    void *p = NULL;
    return aclrtMalloc(&p, n ? n : 1, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS ? p : NULL;
}
void bench_free(void *p) {
    if (p) aclrtFree(p);
}

aclTensor *bench_tensor(int nd, const int64_t *dims, const int64_t *strides, aclDataType dt, void *data) {
    int64_t st[8], n = 1;
    if (nd < 0 || nd > 8) return NULL;
    for (int d = nd - 1; d >= 0; d--) st[d] = n, n *= dims[d];
    return aclCreateTensor(dims, (uint64_t)nd, dt, strides ? strides : st, 0, ACL_FORMAT_ND, &n, 1, data);
}
aclTensorList *bench_list(aclTensor *t) { return aclCreateTensorList((const aclTensor *const *)&t, 1); }

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

void bench_fill(char *p, int64_t n, aclDataType dt, size_t es) {
    const int64_t blk = n < 65536 ? n : 65536;
    for (int64_t i = 0; i < blk; i++) {
        const float v = (float)((int32_t)(bench_rand() >> 8) - (1 << 23)) * 0x1p-23f;
        if (dt == ACL_FLOAT) {
            memcpy(p + i * 4, &v, 4);
        } else {
            uint32_t u;
            memcpy(&u, &v, 4);
            const uint16_t h = (uint16_t)(u >> 16);
            memcpy(p + i * 2, &h, 2);
        }
    }
    for (int64_t i = blk; i < n; i += blk)
        memcpy(p + (size_t)i * es, p, (size_t)(n - i < blk ? n - i : blk) * es);
}

/* ---- the CPU, as /proc/cpuinfo names it ---- */
/* The value of the first "key<spaces/tabs>: value" line, into v (n bytes); 0 if found. */
int bench_cpuinfo(const char *key, char *v, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int rc = -1;
    const size_t kl = strlen(key);
    while (f && rc != 0 && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0) continue;
        const char *c = line + kl;
        while (*c == ' ' || *c == '\t') c++;
        if (*c++ != ':') continue; /* "model" must not match "model name" */
        while (*c == ' ' || *c == '\t') c++;
        snprintf(v, n, "%.*s", (int)strcspn(c, "\n"), c);
        rc = 0;
    }
    if (f) fclose(f);
    return rc;
}

const char *bench_cpu(void) {
    static char name[320];
    if (name[0]) return name;
    char model[160] = "", vendor[64] = "", fam[32] = "", mod[32] = "", impl[32] = "", part[32] = "";
    bench_cpuinfo("model name", model, sizeof model);
    bench_cpuinfo("vendor_id", vendor, sizeof vendor);
    bench_cpuinfo("cpu family", fam, sizeof fam);
    bench_cpuinfo("model", mod, sizeof mod);
    if (vendor[0])
        snprintf(name, sizeof name, "%s (%s family %s model %s)", model[0] ? model : "unnamed CPU", vendor, fam, mod);
    else if (bench_cpuinfo("CPU implementer", impl, sizeof impl) == 0 && bench_cpuinfo("CPU part", part, sizeof part) == 0)
        snprintf(name, sizeof name, "%s(Arm CPU implementer %s part %s)", model[0] ? model : "", impl, part);
    else
        snprintf(name, sizeof name, "%s", model[0] ? model : "unknown CPU (no /proc/cpuinfo model name)");
    return name;
}

double bench_cpu_mhz(void) {
    char v[64];
    return bench_cpuinfo("cpu MHz", v, sizeof v) == 0 ? atof(v) : 0.0;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
