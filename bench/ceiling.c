/* ceiling.c - the operators' memory access patterns with the arithmetic taken
 * out: each moves the same rows as the operator, in the same order, with one
 * XOR per 16 bytes, streaming stores (and, for the scatter, ordinary ones
 * too) and the operators' own software prefetches. Their ratio to the same
 * memcpy yardstick shows what this machine gives that pattern before any
 * arithmetic, so an operator's ratio
 * can be read against it (docs/BENCHMARKS.md). References, not proven bounds.
 *
 *   scatter  backward, token order: a gradY row, then K random rows read and
 *            K random rows written, 64 bytes of each in turn; once with
 *            streaming stores, once with ordinary ones (what the AVX2 kernels
 *            use when one pass writes several rows, MF_V_NT_MULTIROW)
 *   rows     backward, row order: expandedX read and gradExpandedX written
 *            in order, one gathered gradY row per output row
 *   gather   forward: K random rows read, 64 bytes of each in turn, one row
 *            written in order
 *   read     as many bytes as the gather moves, read in address order and
 *            nothing written: the machine's read bandwidth. A copy's bytes
 *            are half writes, which streaming stores send out beside the
 *            reads; where reading alone is slower than that (measured on a
 *            Xeon VM: 28 GB/s against a 42 GB/s copy), an operator that
 *            mostly reads, as the forward does, cannot reach the copy
 *            however it is written.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "acl/acl.h"
#include "bench/bench.h"

typedef enum { PAT_SCATTER, PAT_SCATTER_ST, PAT_ROWS, PAT_GATHER, PAT_READ } pattern;
static const char *const pat_name[] = {"scatter (backward, token order)", "scatter, ordinary stores",
                                       "rows (backward, row order)", "gather (forward)",
                                       "read only (forward's bytes)"};

typedef struct pat_job {
    pattern pat;
    const char *g, *x;
    char *out;
    const int32_t *idx, *inv;
    int64_t K, row, lo, hi;
    int64_t work; /* rows: steps of stand-in arithmetic after each row (bench_overlap) */
    int no_mem;   /* rows: the stand-in arithmetic only */
    double sink;
} pat_job;

/* Stand-in arithmetic for bench_overlap: `steps` rounds of 8 independent
 * multiply-adds on registers, no memory; returns a value so none is dropped. */
static double busy(int64_t steps, double v) {
    double a[8] = {v, v, v, v, v, v, v, v};
    for (int64_t i = 0; i < steps; i++)
        for (int k = 0; k < 8; k++) a[k] = a[k] * 0.999999 + 1e-7;
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* dst[0..64) = a ^ b, streamed past the caches (nt) or stored. */
static inline void xor64(char *dst, const char *a, const char *b, int nt) {
#if defined(__x86_64__)
    for (int i = 0; i < 64; i += 16) {
        const __m128i v =
            _mm_xor_si128(_mm_load_si128((const __m128i *)(a + i)), _mm_load_si128((const __m128i *)(b + i)));
        if (nt) _mm_stream_si128((__m128i *)(dst + i), v);
        else _mm_store_si128((__m128i *)(dst + i), v);
    }
#else
    (void)nt;
    for (int i = 0; i < 64; i += 8) {
        uint64_t u, v;
        memcpy(&u, a + i, 8), memcpy(&v, b + i, 8);
        u ^= v;
        memcpy(dst + i, &u, 8);
    }
#endif
}

static void *pat_thread(void *arg) {
    pat_job *j = arg;
    const int64_t K = j->K, row = j->row;
    if (j->pat == PAT_SCATTER || j->pat == PAT_SCATTER_ST) {
        const int nt = j->pat == PAT_SCATTER;
        for (int64_t r = j->lo; r < j->hi; r++) {
            if (row <= 2048 && r + 2 < j->hi) /* as the operator: narrow rows two tokens ahead */
                for (int64_t k = 0; k < K; k++)
                    for (int64_t c = 0; c < row; c += 64) __builtin_prefetch(j->x + j->idx[(r + 2) * K + k] * row + c, 0, 3);
            for (int64_t c = 0; c < row; c += 64)
                for (int64_t k = 0; k < K; k++) {
                    const int64_t d = j->idx[r * K + k];
                    xor64(j->out + d * row + c, j->x + d * row + c, j->g + r * row + c, nt);
                }
        }
    } else if (j->pat == PAT_ROWS) {
        double v = 1.0;
        for (int64_t d = j->lo; d < j->hi; d++) {
            if (!j->no_mem) {
                if (d + 8 < j->hi) { /* as the operator: the gradY row 8 output rows ahead */
                    const char *ga = j->g + (j->inv[d + 8] / K) * row;
                    for (int64_t c = 0; c < row; c += 64) __builtin_prefetch(ga + c, 0, 3);
                }
                const char *g = j->g + (j->inv[d] / K) * row;
                for (int64_t c = 0; c < row; c += 64) xor64(j->out + d * row + c, j->x + d * row + c, g + c, 1);
            }
            if (j->work) v = busy(j->work, v);
        }
        j->sink = v;
    } else if (j->pat == PAT_READ) { /* token r: its K rows of x (contiguous) and its row of g */
        uint64_t acc[8] = {0};
        for (int64_t r = j->lo; r < j->hi; r++)
            for (int64_t part = 0; part < 2; part++) {
                const char *p = part ? j->g + r * row : j->x + r * K * row;
                const int64_t len = part ? row : K * row;
                for (int64_t c = 0; c < len; c += 64)
                    for (int w = 0; w < 8; w++) {
                        uint64_t v;
                        memcpy(&v, p + c + 8 * w, 8);
                        acc[w] ^= v;
                    }
            }
        j->sink = (double)(acc[0] ^ acc[1] ^ acc[2] ^ acc[3] ^ acc[4] ^ acc[5] ^ acc[6] ^ acc[7]);
    } else {
        for (int64_t r = j->lo; r < j->hi; r++)
            for (int64_t c = 0; c < row; c += 64) {
                if (r + 1 < j->hi) /* as the operator: the next token's rows at this offset */
                    for (int64_t k = 0; k < K; k++) __builtin_prefetch(j->x + j->idx[(r + 1) * K + k] * row + c, 0, 3);
#if defined(__x86_64__)
                __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
                for (int64_t k = 0; k < K; k++) {
                    const __m128i *p = (const __m128i *)(j->x + j->idx[r * K + k] * row + c);
                    a0 = _mm_xor_si128(a0, _mm_load_si128(p)), a1 = _mm_xor_si128(a1, _mm_load_si128(p + 1));
                    a2 = _mm_xor_si128(a2, _mm_load_si128(p + 2)), a3 = _mm_xor_si128(a3, _mm_load_si128(p + 3));
                }
                __m128i *o = (__m128i *)(j->out + r * row + c);
                _mm_stream_si128(o, a0), _mm_stream_si128(o + 1, a1), _mm_stream_si128(o + 2, a2),
                    _mm_stream_si128(o + 3, a3);
#else
                uint64_t acc[8] = {0};
                for (int64_t k = 0; k < K; k++)
                    for (int w = 0; w < 8; w++) {
                        uint64_t v;
                        memcpy(&v, j->x + j->idx[r * K + k] * row + c + 8 * w, 8);
                        acc[w] ^= v;
                    }
                memcpy(j->out + r * row + c, acc, 64);
#endif
            }
    }
#if defined(__x86_64__)
    _mm_sfence();
#endif
    return NULL;
}

static double pat_once(pat_job proto, int64_t n, int threads) {
    pthread_t th[64];
    pat_job jobs[64];
    if (threads > 64) threads = 64;
    const double t0 = bench_now();
    int started = 0;
    for (int i = 0; i < threads; i++) {
        jobs[i] = proto;
        jobs[i].lo = n * i / threads, jobs[i].hi = n * (i + 1) / threads;
        if (i == threads - 1 || pthread_create(&th[i], NULL, pat_thread, &jobs[i]) != 0) pat_thread(&jobs[i]);
        else started = i + 1;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    return bench_now() - t0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int bench_ceilings(int64_t R, int64_t K, int64_t H, size_t es, const char *dtype, int threads, int reps,
                   int markdown) {
    const int64_t N = R * K, row = H * (int64_t)es;
    if (row % 64 != 0) {
        printf("  %lld,%lld,%lld %s: rows of %lld bytes are not whole cache lines; skipped\n", (long long)R,
               (long long)K, (long long)H, dtype, (long long)row);
        return 0;
    }
    const size_t big = (size_t)(N * row), small = (size_t)(R * row);
    char *g = bench_alloc(small), *x = bench_alloc(big), *out = bench_alloc(big);
    int32_t *idx = bench_alloc((size_t)N * 4), *inv = bench_alloc((size_t)N * 4);
    /* the largest yardstick copy: the backward's bytes, halved */
    const size_t copy_max = (small + 2 * big) / 2;
    char *cs = bench_alloc(copy_max), *cd = bench_alloc(copy_max);
    int rc = 0;
    if (!g || !x || !out || !idx || !inv || !cs || !cd) {
        fprintf(stderr, "bench: cannot allocate the ceiling buffers\n");
        rc = 1;
        goto done;
    }
    memset(g, 1, small), memset(x, 2, big), memset(out, 0, big), memset(cs, 3, copy_max), memset(cd, 0, copy_max);
    bench_permutation(idx, N);
    for (int64_t i = 0; i < N; i++) inv[idx[i]] = (int32_t)i;
    if (reps > 64) reps = 64;
    for (int p = PAT_SCATTER; p <= PAT_READ; p++) {
        const size_t bytes = p >= PAT_GATHER ? big + small : small + 2 * big;
        const int64_t n = p == PAT_ROWS ? N : R;
        pat_job proto = {(pattern)p, g, x, out, idx, inv, K, row, 0, 0, 0, 0, 0};
        double ratio[64], best = 1e30;
        pat_once(proto, n, threads); /* warm-up */
        for (int i = 0; i < reps; i++) {
            double t = pat_once(proto, n, threads), c = bench_copy_once(cd, cs, bytes / 2, threads);
            if (t < best) best = t;
            ratio[i] = c / t;
        }
        qsort(ratio, (size_t)reps, sizeof ratio[0], cmp_d);
        const double med = ratio[reps / 2];
        if (markdown)
            printf("| %lld,%lld,%lld | %s | %s | %.3f | %.2f | %.3f |\n", (long long)R, (long long)K, (long long)H,
                   dtype, pat_name[p], best * 1e3, (double)bytes / best / 1e9, med);
        else
            printf("  %lld,%lld,%lld %-5s %-32s %9.3f ms %8.2f GB/s  ratio %.3f\n", (long long)R, (long long)K,
                   (long long)H, dtype, pat_name[p], best * 1e3, (double)bytes / best / 1e9, med);
    }
done:
    bench_free(g), bench_free(x), bench_free(out), bench_free(idx), bench_free(inv), bench_free(cs), bench_free(cd);
    return rc;
}

/* Does arithmetic hide under the row-order pattern's memory traffic on this
 * machine? The rows pattern alone (M), stand-in register arithmetic costing
 * ns_row per row per thread alone (C), and both in one loop (B), best of reps
 * each; hidden = (M + C - B) / C: 1 when the arithmetic is free, 0 when the
 * times add up. */
int bench_overlap(int64_t R, int64_t K, int64_t H, size_t es, const char *dtype, int threads, int reps,
                  double ns_row, int markdown) {
    const int64_t N = R * K, row = H * (int64_t)es;
    if (row % 64 != 0 || ns_row <= 0) return 0;
    const size_t big = (size_t)(N * row), small = (size_t)(R * row);
    char *g = bench_alloc(small), *x = bench_alloc(big), *out = bench_alloc(big);
    int32_t *inv = bench_alloc((size_t)N * 4);
    int rc = 0;
    if (!g || !x || !out || !inv) {
        fprintf(stderr, "bench: cannot allocate the overlap buffers\n");
        rc = 1;
        goto done;
    }
    memset(g, 1, small), memset(x, 2, big), memset(out, 0, big);
    bench_permutation(inv, N);
    /* calibrate: steps of busy() per row that cost ns_row on one thread */
    const int64_t probe = 64, rows = N < 4096 ? N : 4096;
    pat_job cal = {PAT_ROWS, g, x, out, inv, inv, K, row, 0, rows, probe, 1, 0};
    double tc = 1e30;
    for (int i = 0; i < 5; i++) {
        double t0 = bench_now();
        pat_thread(&cal);
        double t = bench_now() - t0;
        tc = t < tc ? t : tc;
    }
    int64_t steps = (int64_t)((double)probe * ns_row * 1e-9 * (double)rows / tc + 0.5);
    if (steps < 1) steps = 1;
    pat_job proto = {PAT_ROWS, g, x, out, inv, inv, K, row, 0, 0, 0, 0, 0};
    double t[3] = {1e30, 1e30, 1e30}; /* memory alone, arithmetic alone, both */
    pat_once(proto, N, threads); /* warm-up */
    for (int i = 0; i < reps; i++)
        for (int k = 0; k < 3; k++) {
            proto.work = k ? steps : 0, proto.no_mem = k == 1;
            double e = pat_once(proto, N, threads);
            t[k] = e < t[k] ? e : t[k];
        }
    const double hidden = (t[0] + t[1] - t[2]) / t[1];
    if (markdown)
        printf("| %lld,%lld,%lld | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", (long long)R, (long long)K,
               (long long)H, dtype, t[0] * 1e3, t[1] * 1e3, (t[0] + t[1]) * 1e3, t[2] * 1e3, hidden);
    else
        printf("  %lld,%lld,%lld %-5s rows pattern %7.2f ms + stand-in arithmetic %7.2f ms = %7.2f ms; in one loop "
               "%7.2f ms: hidden %.2f\n",
               (long long)R, (long long)K, (long long)H, dtype, t[0] * 1e3, t[1] * 1e3, (t[0] + t[1]) * 1e3,
               t[2] * 1e3, hidden);
done:
    bench_free(g), bench_free(x), bench_free(out), bench_free(inv);
    return rc;
}

double bench_read_gbs(size_t n, int threads, int reps) {
    const size_t row = 4096;
    const int64_t rows = (int64_t)(n / (2 * row));
    char *buf = bench_alloc((size_t)rows * 2 * row);
    if (!buf || rows < 1) {
        bench_free(buf);
        return 0;
    }
    memset(buf, 1, (size_t)rows * 2 * row); /* pages faulted in, out of the timing */
    double t[64];
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    /* the read pattern with K = 1: row r of the first half, then row r of the second: every byte once */
    pat_job j = {.pat = PAT_READ, .x = buf, .g = buf + (size_t)rows * row, .K = 1, .row = (int64_t)row};
    for (int i = 0; i < reps; i++) t[i] = pat_once(j, rows, threads);
    bench_free(buf);
    return (double)rows * 2 * row / bench_median(t, reps) / 1e9;
}
