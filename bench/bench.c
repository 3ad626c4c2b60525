/* bench.c - the moefr benchmark: aclnnMoeFinalizeRoutingV2Grad's speed against a
 * multi-threaded memcpy of the same bytes measured in the same run, and PyTorch.
 *
 * Entry point, shared by `make bench` (bench/main.c) and the `moefr bench` CLI:
 *     int moefr_bench_main(int argc, char **argv);   (argv[0] is a program name)
 * It uses only the public API (CANN headers + moefr/moefr.h) and returns 0 on
 * success, 1 when a result was wrong (e.g. PyTorch's gradExpandedX differs),
 * 2 on a usage error. Options (see --help): --quick, --reps N, --shape
 * R,K,H,dtype (repeatable; replaces the default table), --forward, --ceilings,
 * --arith, --no-torch, --no-threads, --markdown. The 1-thread column and the
 * arithmetic-alone rows are measured in fork()ed children that set
 * MOEFR_NUM_THREADS=1 (and MOEFR_GRAD_ORDER=row), so call this before anything
 * else in the process has run an operator (the library reads both once).
 * PyTorch: runs bench/torch_ref.py (MOEFR_BENCH_TORCH overrides the path) with
 * /usr/bin/python3; it loads the same libmoefr via ctypes (MOEFR_LIBRARY
 * overrides the path found with dladdr). */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl.h"
#include "bench/bench.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "moefr/moefr.h"

#ifndef MOEFR_SOURCE_DIR
#define MOEFR_SOURCE_DIR "."
#endif

static int g_reps = 5;
static int g_markdown;

static double now(void) { return bench_now(); }

static size_t esz(aclDataType d) { return d == ACL_FLOAT ? 4 : 2; }
static const char *dname(aclDataType d) { return d == ACL_FLOAT ? "fp32" : d == ACL_BF16 ? "bf16" : "fp16"; }

/* ---- one problem: mode 0, scales, row-layout permutation ---- */
typedef struct prob {
    int64_t R, K, H;
    aclDataType dt;
    char *gy, *x, *gx, *gs, *sc;
    int32_t *idx;
    int with_bias;  /* biasOptional (BENCH_EXPERTS rows) and expertIdx given */
    char *bias;
    int32_t *eidx;
    void *ws;
    uint64_t ws_size;
} prob;

#define dev_alloc bench_alloc
#define dev_free bench_free

static void fill(aclDataType dt, char *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = (float)((int32_t)bench_rand() % 2000) / 1024.0f;
        if (dt == ACL_FLOAT) memcpy(p + i * 4, &v, 4);
        else {
            uint32_t u;
            memcpy(&u, &v, 4);
            uint16_t h = dt == ACL_BF16 ? (uint16_t)(u >> 16) : (uint16_t)(0x3C00 | (bench_rand() & 0x3FF));
            memcpy(p + i * 2, &h, 2);
        }
    }
}

/* Experts in the bias rows: 64 rows of H stay in L2 at H=4096 (16-bit). */
#define BENCH_EXPERTS 64

static int prob_make(prob *p, int64_t R, int64_t K, int64_t H, aclDataType dt) {
    memset(p, 0, sizeof *p);
    p->R = R, p->K = K, p->H = H, p->dt = dt;
    size_t es = esz(dt), N = (size_t)(R * K);
    p->gy = dev_alloc((size_t)(R * H) * es + 64);
    p->x = dev_alloc(N * (size_t)H * es + 64);
    p->gx = dev_alloc(N * (size_t)H * es + 64);
    p->gs = dev_alloc(N * es + 64);
    p->sc = dev_alloc(N * es + 64);
    p->idx = dev_alloc(N * 4 + 64);
    p->bias = dev_alloc((size_t)(BENCH_EXPERTS * H) * es + 64);
    p->eidx = dev_alloc(N * 4 + 64);
    if (!p->gy || !p->x || !p->gx || !p->gs || !p->sc || !p->idx || !p->bias || !p->eidx) return -1;
    fill(dt, p->bias, BENCH_EXPERTS * H);
    for (size_t i = 0; i < N; i++) p->eidx[i] = (int32_t)(bench_rand() % BENCH_EXPERTS);
    fill(dt, p->gy, R * H);
    fill(dt, p->x, (int64_t)N * H);
    fill(dt, p->sc, (int64_t)N);
    memset(p->gx, 0, N * (size_t)H * es); /* fault the pages in before timing */
    bench_permutation(p->idx, (int64_t)N); /* gathers hit random rows */
    return 0;
}

static void prob_free(prob *p) {
    dev_free(p->gy), dev_free(p->x), dev_free(p->gx), dev_free(p->gs), dev_free(p->sc), dev_free(p->idx);
    dev_free(p->bias), dev_free(p->eidx);
    dev_free(p->ws);
    memset(p, 0, sizeof *p);
}

/* Grows p's workspace to wsz bytes (zeroed) when it is smaller; returns the
 * seconds that took, for the caller to leave out of its timed span. */
static double prob_ws(prob *p, uint64_t wsz) {
    if (wsz <= p->ws_size) return 0;
    double t1 = now();
    dev_free(p->ws);
    p->ws = dev_alloc(wsz);
    memset(p->ws, 0, wsz);
    p->ws_size = wsz;
    return now() - t1;
}

/* Phase 1 + phase 2 once; seconds, or -1 on a status (printed). hzero runs the
 * same index and scales with H = 0: validation and bookkeeping only. */
static double prob_run(prob *p, int hzero) {
    int64_t H = hzero ? 0 : p->H, N = p->R * p->K;
    int64_t d_gy[2] = {p->R, H}, d_idx[1] = {N}, d_x[2] = {N, H}, d_rk[2] = {p->R, p->K};
    aclTensor *tgy = aclCreateTensor(d_gy, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_gy, 2, p->gy);
    aclTensor *tidx = aclCreateTensor(d_idx, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d_idx, 1, p->idx);
    aclTensor *tx = aclCreateTensor(d_x, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_x, 2, p->x);
    aclTensor *ts = aclCreateTensor(d_rk, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_rk, 2, p->sc);
    aclTensor *tgx = aclCreateTensor(d_x, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_x, 2, p->gx);
    aclTensor *tgs = aclCreateTensor(d_rk, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_rk, 2, p->gs);
    int64_t d_b[2] = {BENCH_EXPERTS, H};
    aclTensor *tb = p->with_bias ? aclCreateTensor(d_b, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_b, 2, p->bias) : NULL;
    aclTensor *te = p->with_bias ? aclCreateTensor(d_rk, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d_rk, 2, p->eidx) : NULL;
    double t = -1;
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    double t0 = now();
    int rc = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tgy, tidx, tx, ts, te, tb, 0, 0, 0, 0, tgx, tgs, &wsz, &ex);
    if (rc == 0) t0 += prob_ws(p, wsz); /* allocated outside the timed span on the first run */
    if (rc == 0) rc = aclnnMoeFinalizeRoutingV2Grad(p->ws, wsz, ex, NULL);
    if (rc == 0) t = now() - t0;
    else fprintf(stderr, "bench: status %d: %s\n", rc, aclGetRecentErrMsg());
    aclDestroyTensor(tgy), aclDestroyTensor(tidx), aclDestroyTensor(tx);
    aclDestroyTensor(ts), aclDestroyTensor(tgx), aclDestroyTensor(tgs);
    if (tb) aclDestroyTensor(tb), aclDestroyTensor(te);
    return t;
}

/* The forward operator on the same data: out (R,H) = sum_k scales * expandedX[d],
 * row layout (dropPadMode 2); out goes to the gy buffer. */
static double prob_run_forward(prob *p) {
    int64_t N = p->R * p->K;
    int64_t d_out[2] = {p->R, p->H}, d_idx[1] = {N}, d_x[2] = {N, p->H}, d_rk[2] = {p->R, p->K};
    aclTensor *tout = aclCreateTensor(d_out, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_out, 2, p->gy);
    aclTensor *tidx = aclCreateTensor(d_idx, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d_idx, 1, p->idx);
    aclTensor *tx = aclCreateTensor(d_x, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_x, 2, p->x);
    aclTensor *ts = aclCreateTensor(d_rk, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_rk, 2, p->sc);
    int64_t d_b[2] = {BENCH_EXPERTS, p->H};
    aclTensor *tb = p->with_bias ? aclCreateTensor(d_b, 2, p->dt, NULL, 0, ACL_FORMAT_ND, d_b, 2, p->bias) : NULL;
    aclTensor *te = p->with_bias ? aclCreateTensor(d_rk, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d_rk, 2, p->eidx) : NULL;
    double t = -1;
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    double t0 = now();
    int rc = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(tx, tidx, NULL, NULL, tb, ts, te, 2, tout, &wsz, &ex);
    if (rc == 0) t0 += prob_ws(p, wsz);
    if (rc == 0) rc = aclnnMoeFinalizeRoutingV2(p->ws, wsz, ex, NULL);
    if (rc == 0) t = now() - t0;
    else fprintf(stderr, "bench: forward status %d: %s\n", rc, aclGetRecentErrMsg());
    aclDestroyTensor(tout), aclDestroyTensor(tidx), aclDestroyTensor(tx), aclDestroyTensor(ts);
    if (tb) aclDestroyTensor(tb), aclDestroyTensor(te);
    return t;
}

typedef struct result {
    int forward;
    double ms, gbs, copy_gbs, ratio, validate_pct;
    int threads;
} result;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double min_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

/* Best of g_reps for the operator and for the copy, interleaved so that load
 * from other processes hits both alike. */
static int measure_op(prob *p, result *out, int with_validate, int forward) {
    const size_t es = esz(p->dt);
    /* fewest bytes each must move: backward reads gradY and expandedX and
     * writes gradExpandedX; forward reads expandedX and writes out */
    const double bytes = forward ? (double)(p->R * p->K * p->H + p->R * p->H) * (double)es
                                 : (double)(p->R * p->H + 2 * p->R * p->K * p->H) * (double)es;
    const size_t half = (size_t)(bytes / 2);
    const int threads = moefrNumThreads();
    char *src = dev_alloc(half + 64), *dst = dev_alloc(half + 64);
    if (!src || !dst) return -1;
    memset(src, 1, half), memset(dst, 2, half);
    double op[64] = {0}, cp[64] = {0}, hz[64] = {0};
    int reps = g_reps > 64 ? 64 : g_reps;
    if ((forward ? prob_run_forward(p) : prob_run(p, 0)) < 0) return -1; /* warm-up: pool start, page faults */
    bench_copy_once(dst, src, half, threads);
    for (int i = 0; i < reps; i++) {
        op[i] = forward ? prob_run_forward(p) : prob_run(p, 0);
        cp[i] = bench_copy_once(dst, src, half, threads);
        hz[i] = with_validate && !forward ? prob_run(p, 1) : 0;
        if (op[i] < 0) return -1;
    }
    dev_free(src), dev_free(dst);
    /* Load from other processes changes over seconds: each operator run is
     * paired with the copy run right after it, and the ratio is the median of
     * the pairs' ratios; ms and GB/s are the best runs. */
    double t = min_of(op, reps), c = min_of(cp, reps), pr[64];
    for (int i = 0; i < reps; i++) pr[i] = cp[i] / op[i];
    qsort(pr, (size_t)reps, sizeof pr[0], cmp_double);
    out->ms = t * 1e3;
    out->gbs = bytes / t / 1e9;
    out->copy_gbs = (double)(2 * half) / c / 1e9;
    out->ratio = reps % 2 ? pr[reps / 2] : 0.5 * (pr[reps / 2 - 1] + pr[reps / 2]);
    out->validate_pct = with_validate && !forward ? 100.0 * min_of(hz, reps) / t : -1;
    out->threads = threads;
    return 0;
}

static int measure(prob *p, result *out, int with_validate) {
    out->forward = 0;
    return measure_op(p, out, with_validate, 0);
}

static void row_head(void) {
    if (g_markdown) {
        printf("| shape R,K,H | dtype | ISA | threads | ms | GB/s | copy GB/s | ratio | validate+overhead %% |\n");
        printf("|---|---|---|---|---|---|---|---|---|\n");
    } else {
        printf("%-18s %-5s %-7s %4s %10s %8s %10s %7s %10s\n", "shape R,K,H", "dtype", "ISA", "thr", "ms", "GB/s",
               "copy GB/s", "ratio", "valid.%");
    }
}
/* --isa children: each row also goes to the parent as one text line. */
static FILE *g_report;

static void row(const prob *p, const result *r) {
    char shape[64];
    snprintf(shape, sizeof shape, "%lld,%lld,%lld%s%s", (long long)p->R, (long long)p->K, (long long)p->H,
             r->forward ? " fwd" : "", p->with_bias ? " bias" : "");
    if (g_report) {
        fprintf(g_report, "%s|%s|%.6f|%.6f\n", shape, dname(p->dt), r->ms, r->ratio);
        fflush(g_report);
    }
    char v[32] = "-";
    if (r->validate_pct >= 0) snprintf(v, sizeof v, "%.2f", r->validate_pct);
    if (g_markdown)
        printf("| %s | %s | %s | %d | %.3f | %.2f | %.2f | %.3f | %s |\n", shape, dname(p->dt), moefrIsa(),
               r->threads, r->ms, r->gbs, r->copy_gbs, r->ratio, v);
    else
        printf("%-18s %-5s %-7s %4d %10.3f %8.2f %10.2f %7.3f %10s\n", shape, dname(p->dt), moefrIsa(), r->threads,
               r->ms, r->gbs, r->copy_gbs, r->ratio, v);
    fflush(stdout);
}

static int g_bias; /* --bias: every shape also with biasOptional */

static int bench_shape(int64_t R, int64_t K, int64_t H, aclDataType dt, result *r, int forward) {
    prob p;
    if (prob_make(&p, R, K, H, dt) != 0) {
        fprintf(stderr, "bench: out of memory for %lld,%lld,%lld\n", (long long)R, (long long)K, (long long)H);
        prob_free(&p);
        return -1;
    }
    int rc = measure(&p, r, 1);
    if (rc == 0) row(&p, r);
    if (rc == 0 && forward) {
        result f;
        f.forward = 1;
        if (measure_op(&p, &f, 0, 1) == 0) row(&p, &f);
        else rc = -1;
    }
    if (rc == 0 && g_bias) { /* the same problem with bias: backward (and forward) rows, and the cost */
        result b, bf, f0 = {0};
        p.with_bias = 1;
        if (measure(&p, &b, 1) == 0) row(&p, &b);
        else rc = -1;
        if (rc == 0 && forward) {
            bf.forward = 1;
            if (measure_op(&p, &bf, 0, 1) == 0) row(&p, &bf);
            else rc = -1;
            p.with_bias = 0;
            f0.forward = 1;
            if (rc == 0 && measure_op(&p, &f0, 0, 1) != 0) rc = -1;
        }
        if (rc == 0) {
            /* the copy-normalised medians: bias cost = ratio(no bias) / ratio(bias) - 1 */
            printf("  bias cost %s %s: backward %+.1f%%", dname(dt), "(median of pairs)", 100.0 * (r->ratio / b.ratio - 1));
            if (forward) printf(", forward %+.1f%%", 100.0 * (f0.ratio / bf.ratio - 1));
            printf("\n");
        }
    }
    prob_free(&p);
    return rc;
}

/* ---- tiny problems: the fixed cost of phase 1 + phase 2 ---- */
static double tiny_us(int with_scales) {
    float gy[8] = {1, 2, 3, 4, 5, 6, 7, 8}, x[8] = {0}, gx[8], sc[1] = {0.5f}, gs[1];
    int32_t idx[1] = {0};
    int64_t d_gy[2] = {1, 8}, d_idx[1] = {1}, d_rk[2] = {1, 1};
    aclTensor *tgy = aclCreateTensor(d_gy, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d_gy, 2, gy);
    aclTensor *tidx = aclCreateTensor(d_idx, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d_idx, 1, idx);
    aclTensor *tx = aclCreateTensor(d_gy, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d_gy, 2, x);
    aclTensor *ts = aclCreateTensor(d_rk, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d_rk, 2, sc);
    aclTensor *tgx = aclCreateTensor(d_gy, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d_gy, 2, gx);
    aclTensor *tgs = aclCreateTensor(d_rk, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d_rk, 2, gs);
    char ws[4096] __attribute__((aligned(64)));
    double best = 1e9;
    for (int round = 0; round < 5; round++) {
        const int n = 20000;
        double t0 = now();
        for (int i = 0; i < n; i++) {
            uint64_t wsz = 0;
            aclOpExecutor *ex = NULL;
            int rc = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tgy, tidx, with_scales ? tx : NULL,
                                                                   with_scales ? ts : NULL, NULL, NULL, 0, 0, 0, 0,
                                                                   tgx, tgs, &wsz, &ex);
            if (rc == 0 && wsz <= sizeof ws) rc = aclnnMoeFinalizeRoutingV2Grad(ws, wsz, ex, NULL);
            if (rc != 0) {
                fprintf(stderr, "bench: tiny call failed: %s\n", aclGetRecentErrMsg());
                return -1;
            }
        }
        double us = (now() - t0) / n * 1e6;
        best = us < best ? us : best;
    }
    aclDestroyTensor(tgy), aclDestroyTensor(tidx), aclDestroyTensor(tx);
    aclDestroyTensor(ts), aclDestroyTensor(tgx), aclDestroyTensor(tgs);
    return best;
}

/* A pipe and a child: the child keeps fd[1] (write), the parent fd[0]
 * (read); stdout is flushed first so the child does not repeat it. -1 on
 * failure, with both ends closed. */
static pid_t fork_piped(int fd[2]) {
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return -1;
    }
    close(pid == 0 ? fd[0] : fd[1]);
    return pid;
}

/* ---- runs in a child that sets the environment before the library reads it ----
 * arith = 0: each shape on 1 thread (ms). arith = 1: the backward's arithmetic
 * alone (ns per gradExpandedX row): 1 thread, only as many tokens as keep the
 * problem's rows in L2 (ARITH_BYTES), best of 5x, in the order the full-size
 * shape takes (row order for rows of at most ARITH_ROW_BYTES, the plan's auto
 * choice, src/ops/grad/grad.h MF_BY_ROW_MAX_BYTES; token order otherwise; the
 * small problem alone would take token order). The library reads the order
 * once per process, so an arith child runs one shape. */
#define ARITH_BYTES (768 << 10)
#define ARITH_ROW_BYTES 2048
static int child_runs(const int64_t (*shapes)[4], int n, double *out, int arith) {
    int fd[2];
    const pid_t pid = fork_piped(fd);
    if (pid < 0) return -1;
    if (pid == 0) {
        setenv("MOEFR_NUM_THREADS", "1", 1);
        if (arith && n != 1) _exit(1);
        if (arith) {
            const int64_t row = shapes[0][2] * (int64_t)esz((aclDataType)shapes[0][3]);
            setenv("MOEFR_GRAD_ORDER", row <= ARITH_ROW_BYTES ? "row" : "token", 1);
        }
        for (int i = 0; i < n; i++) {
            const int64_t K = shapes[i][1], H = shapes[i][2], es = (int64_t)esz((aclDataType)shapes[i][3]);
            int64_t R = shapes[i][0];
            if (arith) R = ARITH_BYTES / ((1 + 2 * K) * H * es), R = R < 1 ? 1 : R;
            double v = -1;
            for (int rep = 0; rep < (arith ? 5 : 1); rep++) {
                prob p;
                result r = {0};
                if (prob_make(&p, R, K, H, (aclDataType)shapes[i][3]) == 0 && measure(&p, &r, 0) == 0) {
                    double x = arith ? r.ms * 1e6 / (double)(R * K) : r.ms;
                    v = v < 0 || x < v ? x : v;
                }
                prob_free(&p);
            }
            if (write(fd[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(1);
        }
        _exit(0);
    }
    int ok = 0;
    for (int i = 0; i < n; i++)
        if (read(fd[0], &out[i], sizeof out[i]) != (ssize_t)sizeof out[i]) out[i] = -1;
        else ok += out[i] >= 0;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    return ok == n ? 0 : -1;
}

/* Prints, for each shape, the arithmetic's ns per row and the ratio to copy
 * the operator would reach on `threads` threads if memory cost nothing: a
 * bound from the arithmetic side, as the pattern ceilings are from memory's. */
static int arith_report(const int64_t (*shapes)[4], int n, const double *ns, int threads) {
    int fails = 0;
    printf("\narithmetic alone: the backward (row order for rows of at most %d bytes, else token order) with\n"
           "its rows in L2 (one thread, %d KiB problem), and the ratio the operator would reach on %d threads if\n"
           "memory cost nothing (copy ms / (rows * ns / threads))\n",
           ARITH_ROW_BYTES, ARITH_BYTES >> 10, threads);
    if (g_markdown) printf("| shape R,K,H | dtype | ns per row | ms on %d threads | copy ms | ratio bound |\n"
                           "|---|---|---|---|---|---|\n", threads);
    for (int i = 0; i < n; i++) {
        const int64_t R = shapes[i][0], K = shapes[i][1], H = shapes[i][2];
        const aclDataType dt = (aclDataType)shapes[i][3];
        const size_t half = (size_t)((R * H + 2 * R * K * H) * (int64_t)esz(dt) / 2);
        char *src = dev_alloc(half + 64), *dst = dev_alloc(half + 64);
        if (ns[i] < 0 || !src || !dst) {
            printf("  %lld,%lld,%lld %s: not measured\n", (long long)R, (long long)K, (long long)H, dname(dt));
            dev_free(src), dev_free(dst);
            fails++;
            continue;
        }
        memset(src, 1, half), memset(dst, 2, half);
        double c = bench_copy_once(dst, src, half, threads);
        for (int r = 0; r < g_reps; r++) {
            double t = bench_copy_once(dst, src, half, threads);
            c = t < c ? t : c;
        }
        dev_free(src), dev_free(dst);
        const double ms = ns[i] * (double)(R * K) / threads * 1e-6;
        if (g_markdown)
            printf("| %lld,%lld,%lld | %s | %.1f | %.2f | %.2f | %.2f |\n", (long long)R, (long long)K, (long long)H,
                   dname(dt), ns[i], ms, c * 1e3, c * 1e3 / ms);
        else
            printf("  %lld,%lld,%lld %-5s %6.1f ns/row  %8.2f ms on %d threads  copy %7.2f ms  ratio bound %.2f\n",
                   (long long)R, (long long)K, (long long)H, dname(dt), ns[i], ms, threads, c * 1e3, c * 1e3 / ms);
    }
    printf("\noverlap: does that much arithmetic hide under the row-order pattern? Stand-in register arithmetic\n"
           "costing the ns per row above, alone, and inside the rows pattern's loop (bench/ceiling.c);\n"
           "hidden = (pattern + arithmetic - both) / arithmetic: 1 if it is free, 0 if the times add up\n");
    if (g_markdown) printf("| shape R,K,H | dtype | pattern ms | arithmetic ms | sum ms | one loop ms | hidden |\n"
                           "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const aclDataType dt = (aclDataType)shapes[i][3];
        if (ns[i] >= 0)
            fails += bench_overlap(shapes[i][0], shapes[i][1], shapes[i][2], esz(dt), dname(dt), threads, g_reps, ns[i],
                                   g_markdown);
    }
    fflush(stdout);
    return fails;
}

/* ---- PyTorch ---- */
static const char *lib_path(void) {
    const char *env = getenv("MOEFR_LIBRARY");
    if (env && *env) return env;
    static Dl_info info;
    if (dladdr((void *)&aclnnMoeFinalizeRoutingV2Grad, &info) && info.dli_fname && strstr(info.dli_fname, ".so"))
        return info.dli_fname;
    return "libmoefr.so";
}

/* Runs torch_ref.py for one shape; 0 ok, 1 gradExpandedX differs, -1 could not run. */
static int torch_compare(int64_t R, int64_t K, int64_t H, aclDataType dt, double c_ms) {
    const char *script = getenv("MOEFR_BENCH_TORCH");
    char path[4096], cmd[8192], line[512];
    if (!script || !*script) {
        snprintf(path, sizeof path, "%s/bench/torch_ref.py", MOEFR_SOURCE_DIR);
        script = path;
    }
    if (access(script, R_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) {
        printf("pytorch: skipped (%s or /usr/bin/python3 not found)\n", script);
        return -1;
    }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' --lib '%s' --shape %lld,%lld,%lld --dtype %s --threads %d --reps %d",
             script, lib_path(), (long long)R, (long long)K, (long long)H, dname(dt), moefrNumThreads(),
             g_reps < 2 ? g_reps : 2);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    double tms = -1, mms = -1;
    int same = -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "RESULT torch_ms=%lf moefr_ms=%lf identical=%d", &tms, &mms, &same) == 3) continue;
        fputs(line, stdout);
    }
    int st = pclose(f);
    if (same < 0 || st != 0) {
        printf("pytorch: %lld,%lld,%lld %s: script failed\n", (long long)R, (long long)K, (long long)H, dname(dt));
        return -1;
    }
    char shape[64];
    snprintf(shape, sizeof shape, "%lld,%lld,%lld", (long long)R, (long long)K, (long long)H);
    if (g_markdown)
        printf("| %s | %s | %d | %.1f | %.2f | %.1f | %.1fx | %s |\n", shape, dname(dt), moefrNumThreads(), tms, c_ms,
               mms, tms / c_ms, same ? "identical" : "DIFFERS");
    else
        printf("%-18s %-5s %4d  torch %9.1f ms  moefr %8.2f ms (%.1f ms via ctypes)  speedup %6.1fx  gradExpandedX %s\n",
               shape, dname(dt), moefrNumThreads(), tms, c_ms, mms, tms / c_ms, same ? "identical" : "DIFFERS");
    fflush(stdout);
    return same ? 0 : 1;
}

/* --peak: the measured arithmetic peak on one thread and on the library's count */
static int print_peak(void) {
    printf("moefr %s: arithmetic peak, measured (bench/peak.c: independent multiply-adds, best of 5 trials)\nCPU: %s\n",
           moefrVersion(), bench_cpu());
    const int n = moefrNumThreads();
    for (int t = 1; t <= n; t = t < n ? (t * 2 < n ? t * 2 : n) : n + 1) {
        double f = 0.0, b = 0.0;
        char how[192];
        if (bench_peak(t, &f, &b, how, sizeof how) != 0) {
            printf("  no peak loop for this CPU\n");
            return 1;
        }
        printf("  %s: fp32 %.1f GFLOP/s", how, f);
        if (b > 0) printf(", bf16 %.1f GFLOP/s", b);
        printf("\n");
    }
    return 0;
}

static void usage(FILE *f, const char *prog) {
    fprintf(f,
            "usage: %s [--quick] [--reps N] [--shape R,K,H,dtype]... [--forward] [--ceilings] [--arith] [--no-torch]\n"
            "          [--no-threads] [--markdown] [--bias] [--isa LIST|all] [--gating] [--gmm [--full|--tokens N]] [--swiglu] [--peak]\n"
            "          [--experts[=MODEL] [--expert-shape H,F,E,k] [--tokens N]]\n"
            "  Times aclnnMoeFinalizeRoutingV2Grad (phase 1 + phase 2, mode 0, scales, random permutation)\n"
            "  against a %s-thread memcpy of the same bytes ((R*H + 2*R*K*H) * elemsize): ms and GB/s are the\n"
            "  best of N runs, ratio the median of N (operator, copy) pairs run back to back. Every \"memcpy\" or\n"
            "  \"copy\" yardstick is the faster of glibc's memcpy and a streaming copy of the same bytes (x86-64).\n"
            "  --forward: each --shape also times aclnnMoeFinalizeRoutingV2 (a \"fwd\" row).\n"
            "  --ceilings: each --shape also times the operators' access patterns without arithmetic\n"
            "  (the full run without --shape always does, for the shapes with targets).\n"
            "  --arith: each --shape also times the backward's arithmetic alone, rows in L2\n"
            "  (the full run always does, for the 65536,8,128 targets).\n"
            "  --gating: only MoeGatingTopKSoftmax(V2) at (8192, 256), k = 8, fp32 and bf16 (bench/gating.c).\n"
            "  --gmm: only aclnnGroupedMatmulV4 at MoE shapes (bench/gmm.c): forward, dX and dW GFLOP/s, fp32\n"
            "  (run with MOEFR_SOC=ascend910b, which the bench sets) and bf16, against one GEMM of the same FLOPs\n"
            "  and the measured arithmetic peak (--peak); median of 3 repeats unless --reps; rows = tokens x top-k with 1024 tokens\n"
            "  (about 2 minutes on 2 cores), --quick: 256, --full: the issue's 8192 (about 15 minutes), --tokens N.\n"
            "  --experts[=MODEL]: only bf16 aclnnGroupedMatmulV4 at real models' expert shapes (bench/experts.c):\n"
            "  Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V2-Lite, DeepSeek-V3, gpt-oss-20b, Mixtral-8x7B (or those\n"
            "  whose name contains MODEL; --expert-shape H,F,E,k: one shape of your own), gate+up and down; prefill\n"
            "  (2048 tokens, --tokens N) forward, dX, dW against one dense GEMM and the measured peak; decode (1, 4,\n"
            "  16, 64 tokens) against the measured read bandwidth. Median of 3 repeats (decode 15) unless --reps.\n"
            "  --peak: only the machine's arithmetic peak, measured (bench/peak.c): fp32 FMA and bf16 VDPBF16PS\n"
            "  GFLOP/s on one thread and on the library's thread count.\n"
            "  --swiglu: only aclnnSwiGlu and aclnnSwiGluGrad at x (16384, 2816) (bench/swiglu.c), fp32 and bf16,\n"
            "  GB/s against a same-traffic memcpy; --quick: a quarter of the rows.\n"
            "  --bias: each --shape also runs with biasOptional (64 experts) and prints the bias cost.\n"
            "  --routing[=H]: the routing family's data movers (moefr_bench --routing lists them) at N=8192 K=8 H=4096 (or H) E=64, fp32, bf16\n"
            "  against a same-traffic memcpy (bench/routing.c says which bytes; --quick: N=1024).\n"
            "  --isa LIST|all: run everything once per kernel path (comma-separated, or every path this\n"
            "  CPU runs), each in a child with MOEFR_ISA set, then compare the paths row by row; * marks\n"
            "  the default path (the one a process without MOEFR_ISA gets).\n"
            "  dtype: fp32, bf16 or fp16. Environment: MOEFR_NUM_THREADS, MOEFR_ISA.\n",
            prog, "MOEFR_NUM_THREADS");
}

static int parse_dt(const char *s, aclDataType *dt) {
    if (strcmp(s, "fp32") == 0 || strcmp(s, "f32") == 0) *dt = ACL_FLOAT;
    else if (strcmp(s, "bf16") == 0) *dt = ACL_BF16;
    else if (strcmp(s, "fp16") == 0 || strcmp(s, "f16") == 0) *dt = ACL_FLOAT16;
    else return -1;
    return 0;
}

static void ceiling_head(void) {
    printf("\naccess-pattern ceilings: the operators' row traffic with the arithmetic taken out (bench/ceiling.c),\n"
           "ratio = same memcpy yardstick / pattern time, median of pairs\n");
    if (g_markdown) printf("| shape R,K,H | dtype | pattern | ms | GB/s | ratio |\n|---|---|---|---|---|---|\n");
}

/* ---- --isa: the whole run once per kernel path, then the paths side by side ---- */
#define ISA_ROWS 128
typedef struct isa_row { char key[80]; double ms[8], ratio[8]; } isa_row;

static int isa_compare(int argc, char **argv, const char *list) {
    /* "all": this architecture's paths (a child skips one the CPU lacks) */
#if defined(__aarch64__)
    const char *all[] = {"scalar", "neon"};
#elif defined(__x86_64__)
    const char *all[] = {"scalar", "avx2", "avx512"};
#else
    const char *all[] = {"scalar"};
#endif
    char names[8][16];
    int nisa = 0;
    if (strcmp(list, "all") == 0) {
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) snprintf(names[nisa++], sizeof names[0], "%s", all[i]);
    } else {
        for (const char *c = list; *c && nisa < 8;) {
            size_t len = strcspn(c, ",");
            snprintf(names[nisa++], sizeof names[0], "%.*s", (int)(len < 15 ? len : 15), c);
            c += len + (c[len] == ',');
        }
    }
    /* the child's arguments: ours without --isa LIST */
    char *args[64];
    int na = 0;
    for (int i = 0; i < argc && na < 63; i++) {
        if (strcmp(argv[i], "--isa") == 0) {
            i++;
            continue;
        }
        args[na++] = argv[i];
    }
    args[na] = NULL;
    /* the path this CPU gets without MOEFR_ISA, asked of a child (moefrIsa()
     * settles once per process, and ours may have MOEFR_ISA set) */
    char dflt[16] = "";
    {
        int fd[2];
        const pid_t pid = fork_piped(fd);
        if (pid < 0) return 1;
        if (pid == 0) {
            unsetenv("MOEFR_ISA");
            const char *d = moefrIsa();
            ssize_t w = write(fd[1], d, strlen(d));
            _exit(w < 0);
        }
        ssize_t got = read(fd[0], dflt, sizeof dflt - 1);
        dflt[got > 0 ? got : 0] = '\0';
        close(fd[0]);
        waitpid(pid, NULL, 0);
    }
    static isa_row rows[ISA_ROWS];
    int nrows = 0, ran[8] = {0}, fails = 0;
    for (int k = 0; k < nisa; k++) {
        int fd[2];
        const pid_t pid = fork_piped(fd);
        if (pid < 0) return 1;
        if (pid == 0) {
            setenv("MOEFR_ISA", names[k], 1);
            if (strcmp(moefrIsa(), "refused") == 0) {
                printf("\n== MOEFR_ISA=%s: not a path this CPU/build runs, skipped\n", names[k]);
                fflush(stdout);
                _exit(3);
            }
            printf("\n== MOEFR_ISA=%s\n", names[k]);
            g_report = fdopen(fd[1], "w");
            int rc = moefr_bench_main(na, args);
            fflush(stdout);
            if (g_report) fclose(g_report);
            _exit(rc);
        }
        FILE *in = fdopen(fd[0], "r");
        char line[256];
        while (in && fgets(line, sizeof line, in)) {
            char key[80], dt[8];
            double ms, ratio;
            char *bar = strchr(line, '|');
            if (!bar || (size_t)(bar - line) >= 60) continue;
            if (sscanf(bar + 1, "%7[^|]|%lf|%lf", dt, &ms, &ratio) != 3) continue;
            snprintf(key, sizeof key, "%.*s %s", (int)(bar - line), line, dt);
            int r = 0;
            while (r < nrows && strcmp(rows[r].key, key) != 0) r++;
            if (r == nrows) {
                if (nrows == ISA_ROWS) continue;
                memset(&rows[nrows], 0, sizeof rows[0]);
                snprintf(rows[nrows++].key, sizeof rows[0].key, "%s", key);
            }
            rows[r].ms[k] = ms, rows[r].ratio[k] = ratio;
        }
        if (in) fclose(in);
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ran[k] = 1;
        else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 3)) fails++;
    }
    /* speed of each path relative to the fastest path on that row, from the
     * copy-normalised median ratios (load from other processes cancels) */
    int kd = -1; /* the default path's column */
    for (int k = 0; k < nisa; k++)
        if (ran[k] && strcmp(names[k], dflt) == 0) kd = k;
    printf("\nkernel paths side by side: ratio to memcpy (median of pairs), and speed relative to the best path;\n"
           "* marks the default path (no MOEFR_ISA) on this CPU: %s%s\n",
           dflt[0] ? dflt : "unknown", kd < 0 ? " (not among the paths run)" : "");
    if (g_markdown) {
        printf("| row | dtype |");
        for (int k = 0; k < nisa; k++)
            if (ran[k]) printf(" %s%s ratio | %s rel. |", names[k], k == kd ? " (default)" : "", names[k]);
        printf("\n|---|---|");
        for (int k = 0; k < nisa; k++)
            if (ran[k]) printf("---|---|");
        printf("\n");
    }
    double worst = 2;  /* the default's lowest speed relative to the best path */
    int worst_row = -1;
    for (int r = 0; r < nrows; r++) {
        double best = 0;
        for (int k = 0; k < nisa; k++)
            if (ran[k] && rows[r].ratio[k] > best) best = rows[r].ratio[k];
        if (kd >= 0 && best > 0 && rows[r].ratio[kd] / best < worst) worst = rows[r].ratio[kd] / best, worst_row = r;
        char *sp = strrchr(rows[r].key, ' ');
        if (g_markdown) printf("| %.*s | %s |", (int)(sp - rows[r].key), rows[r].key, sp + 1);
        else printf("  %-32s", rows[r].key);
        for (int k = 0; k < nisa; k++) {
            if (!ran[k]) continue;
            double rel = best > 0 ? rows[r].ratio[k] / best : 0;
            if (g_markdown) printf(" %.3f | %.2f |", rows[r].ratio[k], rel);
            else printf("  %s%s %.3f (%.2fx)", names[k], k == kd ? "*" : "", rows[r].ratio[k], rel);
        }
        printf("\n");
    }
    if (worst_row >= 0)
        printf("default path %s: at least %.2fx of the best path on every row (lowest: %s)\n", dflt, worst,
               rows[worst_row].key);
    return fails ? 1 : 0;
}

int moefr_bench_main(int argc, char **argv) {
    int experts = 0, expert_shape_given = 0;
    const char *experts_want = NULL;
    int64_t expert_shape[4] = {0, 0, 0, 0};
    int gating = 0, gmm = 0, swiglu = 0, peak = 0, reps_given = 0, gmm_tokens = 0, quick = 0, routing = 0, forward = 0, torch = 1, threads_sweep = 1, nshapes = 0, ceilings = 0, arith = 0;
    const char *isa_list = NULL;
    int64_t shapes[32][4];
    const char *prog = argc > 0 ? argv[0] : "bench";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--forward") == 0) forward = 1;
        else if (strcmp(argv[i], "--no-torch") == 0) torch = 0;
        else if (strcmp(argv[i], "--no-threads") == 0) threads_sweep = 0;
        else if (strcmp(argv[i], "--ceilings") == 0) ceilings = 1;
        else if (strcmp(argv[i], "--arith") == 0) arith = 1;
        else if (strcmp(argv[i], "--markdown") == 0) g_markdown = 1;
        else if (strcmp(argv[i], "--bias") == 0) g_bias = 1;
        else if (strcmp(argv[i], "--routing") == 0) routing = 4096; /* bench/routing.c */
        else if (strncmp(argv[i], "--routing=", 10) == 0) routing = atoi(argv[i] + 10);
        else if (strcmp(argv[i], "--gating") == 0) gating = 1;
        else if (strcmp(argv[i], "--gmm") == 0) gmm = 1;        /* bench/gmm.c */
        else if (strcmp(argv[i], "--experts") == 0) experts = 1; /* bench/experts.c */
        else if (strncmp(argv[i], "--experts=", 10) == 0) experts = 1, experts_want = argv[i] + 10;
        else if (strcmp(argv[i], "--expert-shape") == 0 && i + 1 < argc) {
            long long v[4];
            if (sscanf(argv[++i], "%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3]) != 4 || v[0] < 1 || v[1] < 1 ||
                v[2] < 1 || v[2] > 4096 || v[3] < 1 || v[3] > v[2]) {
                fprintf(stderr, "%s: bad --expert-shape %s (want H,F,E,k: hidden, ffn, experts <= 4096, top-k <= E)\n",
                        prog, argv[i]);
                return 2;
            }
            for (int j = 0; j < 4; j++) expert_shape[j] = v[j];
            expert_shape_given = experts = 1;
        }
        else if (strcmp(argv[i], "--swiglu") == 0) swiglu = 1;  /* bench/swiglu.c */
        else if (strcmp(argv[i], "--peak") == 0) peak = 1;      /* bench/peak.c */
        else if (strcmp(argv[i], "--full") == 0) gmm_tokens = 8192; /* --gmm: the 8192 tokens */
        else if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc) gmm_tokens = atoi(argv[++i]);
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            if (isa_list) {
                fprintf(stderr, "%s: --isa given twice\n", prog);
                return 2;
            }
            isa_list = argv[++i];
        }
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) g_reps = atoi(argv[++i]), reps_given = 1;
        else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && nshapes < 32) {
            long long R, K, H;
            char dts[16] = "fp32";
            aclDataType dt;
            if (sscanf(argv[++i], "%lld,%lld,%lld,%15s", &R, &K, &H, dts) < 3 || R < 1 || K < 1 || H < 1 ||
                parse_dt(dts, &dt) != 0) {
                fprintf(stderr, "%s: bad --shape %s (want R,K,H[,fp32|bf16|fp16])\n", prog, argv[i]);
                return 2;
            }
            shapes[nshapes][0] = R, shapes[nshapes][1] = K, shapes[nshapes][2] = H, shapes[nshapes][3] = dt;
            nshapes++;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout, prog);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown option %s\n", prog, argv[i]);
            usage(stderr, prog);
            return 2;
        }
    }
    if (g_reps < 1) g_reps = 1;
    if (gating) return bench_gating(g_reps, g_markdown);
    if (experts)
        return bench_experts(experts_want, expert_shape_given ? expert_shape : NULL, gmm_tokens,
                             reps_given ? g_reps : 0, g_markdown);
    if (peak) return print_peak();
    if (gmm || swiglu) {
        int rc = 0;
        if (gmm) rc |= bench_gmm(gmm_tokens > 0 ? gmm_tokens : quick ? 256 : 0, reps_given ? g_reps : 0, g_markdown);
        if (gmm && swiglu) printf("\n");
        if (swiglu) rc |= bench_swiglu(quick, reps_given ? g_reps : 0, g_markdown);
        return rc;
    }
    if (isa_list) return isa_compare(argc, argv, isa_list);
    if (routing > 0) return bench_routing(quick ? 1024 : 8192, 8, routing, 64, g_reps, g_markdown);
    const int64_t s = quick ? 8 : 1; /* --quick divides R by 8 */
    static const int64_t thread_shapes[2][4] = {{8192, 8, 4096, ACL_FLOAT}, {65536, 8, 128, ACL_FLOAT}};
    int64_t ts[2][4];
    memcpy(ts, thread_shapes, sizeof ts);
    for (int i = 0; i < 2; i++) ts[i][0] /= s;
    double one_ms[2] = {-1, -1};
    /* first, before this process's pool exists: the 1-thread child */
    if (threads_sweep && nshapes == 0 && child_runs((const int64_t(*)[4])ts, 2, one_ms, 0) != 0)
        fprintf(stderr, "bench: 1-thread child failed\n");
    /* the H=128 target shapes, or the --arith shapes: arithmetic alone */
    int64_t arith_default[2][4] = {{65536 / s, 8, 128, ACL_FLOAT}, {65536 / s, 8, 128, ACL_BF16}};
    const int64_t(*ash)[4] = (const int64_t(*)[4])(nshapes > 0 ? shapes : arith_default);
    const int nash = nshapes > 0 ? (arith ? nshapes : 0) : 2;
    double arith_ns[32];
    for (int i = 0; i < nash; i++)
        if (child_runs(ash + i, 1, arith_ns + i, 1) != 0) fprintf(stderr, "bench: arithmetic child failed\n");

    printf("moefr %s, kernel path %s, %d threads, best of %d runs\n\n", moefrVersion(), moefrIsa(),
           moefrNumThreads(), g_reps);
    int fails = 0;
    row_head();
    if (nshapes > 0) {
        for (int i = 0; i < nshapes; i++) {
            result r;
            if (bench_shape(shapes[i][0], shapes[i][1], shapes[i][2], (aclDataType)shapes[i][3], &r, forward) != 0)
                fails++;
        }
        if (ceilings) {
            ceiling_head();
            for (int i = 0; i < nshapes; i++)
                fails += bench_ceilings(shapes[i][0], shapes[i][1], shapes[i][2], esz((aclDataType)shapes[i][3]),
                                        dname((aclDataType)shapes[i][3]), moefrNumThreads(), g_reps, g_markdown);
        }
        if (nash > 0) fails += arith_report(ash, nash, arith_ns, moefrNumThreads());
        return fails ? 1 : 0;
    }
    static const int64_t table[][4] = {
        {8192, 8, 4096, ACL_FLOAT}, {8192, 8, 4096, ACL_BF16}, {8192, 8, 4096, ACL_FLOAT16},
        {65536, 8, 128, ACL_FLOAT}, {65536, 8, 128, ACL_BF16}, {4096, 8, 4096, ACL_FLOAT},
        {4096, 8, 4096, ACL_BF16},
    };
    double ms_4096[2] = {-1, -1}, ms_thr[2] = {-1, -1};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        result r;
        if (bench_shape(table[i][0] / s, table[i][1], table[i][2], (aclDataType)table[i][3], &r, i < 2) != 0) {
            fails++;
            continue;
        }
        if (table[i][0] == 4096) ms_4096[table[i][3] == ACL_BF16] = r.ms;
        if (i == 0) ms_thr[0] = r.ms;
        if (i == 3) ms_thr[1] = r.ms;
    }

    ceiling_head();
    for (size_t i = 0; i < 5; i++) /* the shapes with targets */
        if (i != 2)
            fails += bench_ceilings(table[i][0] / s, table[i][1], table[i][2], esz((aclDataType)table[i][3]),
                                    dname((aclDataType)table[i][3]), moefrNumThreads(), g_reps, g_markdown);
    fails += arith_report(ash, nash, arith_ns, moefrNumThreads());

    printf("\nlinearity: fp32, K=8, H=1024, R*K*H over 100x\n");
    if (g_markdown) printf("| R | R*K*H | ms | ns per R*K*H | ratio to copy |\n|---|---|---|---|---|\n");
    const int64_t Rs[4] = {256, 1024, 4096, 25600};
    for (int i = 0; i < 4; i++) {
        prob p;
        result r;
        int64_t R = Rs[i] / (quick ? 4 : 1);
        if (prob_make(&p, R, 8, 1024, ACL_FLOAT) != 0 || measure(&p, &r, 0) != 0) {
            fails++;
            prob_free(&p);
            continue;
        }
        double elems = (double)R * 8 * 1024;
        if (g_markdown)
            printf("| %lld | %.3g | %.3f | %.3f | %.3f |\n", (long long)R, elems, r.ms, r.ms * 1e6 / elems, r.ratio);
        else
            printf("  R=%-6lld R*K*H=%-10.3g %9.3f ms  %6.3f ns/elem  ratio %.3f\n", (long long)R, elems, r.ms,
                   r.ms * 1e6 / elems, r.ratio);
        prob_free(&p);
    }

    if (threads_sweep) {
        printf("\nthreads: 1 -> %d (1-thread run in a child with MOEFR_NUM_THREADS=1)\n", moefrNumThreads());
        if (g_markdown) printf("| shape | dtype | 1 thread ms | %d threads ms | speedup |\n|---|---|---|---|---|\n",
                               moefrNumThreads());
        for (int i = 0; i < 2; i++) {
            char shape[64];
            snprintf(shape, sizeof shape, "%lld,%lld,%lld", (long long)ts[i][0], (long long)ts[i][1],
                     (long long)ts[i][2]);
            if (g_markdown)
                printf("| %s | fp32 | %.3f | %.3f | %.2fx |\n", shape, one_ms[i], ms_thr[i], one_ms[i] / ms_thr[i]);
            else
                printf("  %-18s fp32  1 thread %9.3f ms  %d threads %9.3f ms  speedup %.2fx\n", shape, one_ms[i],
                       moefrNumThreads(), ms_thr[i], one_ms[i] / ms_thr[i]);
        }
    }

    printf("\nsmall: phase 1 + phase 2, R=1, K=1, H=8, fp32 (best of 5 x 20000 calls)\n");
    double us1 = tiny_us(1), us0 = tiny_us(0);
    if (us1 < 0 || us0 < 0) fails++;
    printf("  with scales %.3f us per call; without scales %.3f us per call\n", us1, us0);

    if (torch) {
        printf("\npytorch CPU (index_select / index_put in fp32, same thread count), R=%lld, K=8, H=4096\n",
               (long long)(4096 / s));
        if (g_markdown)
            printf("| shape | dtype | threads | torch ms | moefr ms | moefr ms (ctypes) | speedup | gradExpandedX |\n"
                   "|---|---|---|---|---|---|---|---|\n");
        for (int b = 0; b < 2; b++)
            if (torch_compare(4096 / s, 8, 4096, b ? ACL_BF16 : ACL_FLOAT, ms_4096[b]) == 1) fails++;
    }
    return fails ? 1 : 0;
}
