/* gating.c - `moefr bench --gating`: aclnnMoeGatingTopKSoftmax (V1) and V2
 * (renorm 0 and 1) at N = 8192 tokens, E = 256 experts, k = 8, fp32 and
 * bf16: both phases per call, the median of the repeats, and the time per
 * thousand tokens (issue 15's target: well under 1 ms). Issue 22 adds the
 * grouped gating rows: aclnnMoeGatingTopK and aclnnMoeFusedTopk as
 * DeepSeek-V3 routes (sigmoid, a bias, 8 groups, the best 4 by their top-2
 * sums, top-8; target: <= 1 ms per 1000 tokens). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_fused_topk.h"
#include "aclnnop/aclnn_moe_gating_top_k.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#include "bench/bench.h"
#include "moefr/moefr.h"

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const aclTensor *g_bias, *g_yf, *g_norm; /* the grouped rows' bias, FLOAT y and norm output */
static char g_ws[1 << 16];                         /* their workspace (the bias widened to fp32) */

/* One call of both phases; seconds, or -1 on failure. ver 4: MoeGatingTopK,
 * 5: MoeFusedTopk (8 groups, 4 kept, top-2 sums, sigmoid, bias). */
static double call(int ver, const aclTensor *x, int64_t k, const aclTensor *y, const aclTensor *e,
                   const aclTensor *r) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const double t0 = bench_now();
    aclnnStatus rc;
    if (ver == 4)
        rc = aclnnMoeGatingTopKGetWorkspaceSize(x, g_bias, k, 4, 8, 1, 0, 1, false, 2.5, 1e-20, y, e, g_norm, &ws, &ex);
    else if (ver == 5)
        rc = aclnnMoeFusedTopkGetWorkspaceSize(x, g_bias, NULL, NULL, 8, 4, 2, (uint32_t)k, 0, true, 2.5f, false,
                                               (aclTensor *)g_yf, (aclTensor *)e, &ws, &ex);
    else
        rc = ver == 1 ? aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(x, NULL, k, y, e, r, &ws, &ex)
                      : aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(x, NULL, k, ver == 3, false, y, e, NULL, &ws, &ex);
    if (rc == ACLNN_SUCCESS && ws <= (ver >= 4 ? sizeof g_ws : 0)) {
        void *w = ws ? g_ws : NULL;
        rc = ver == 1   ? aclnnMoeGatingTopKSoftmax(w, ws, ex, NULL)
             : ver == 4 ? aclnnMoeGatingTopK(w, ws, ex, NULL)
             : ver == 5 ? aclnnMoeFusedTopk(w, ws, ex, NULL)
                        : aclnnMoeGatingTopKSoftmaxV2(w, ws, ex, NULL);
    }
    const double t = bench_now() - t0;
    if (rc != ACLNN_SUCCESS || ws > (ver >= 4 ? sizeof g_ws : 0)) {
        fprintf(stderr, "bench --gating: status %d, workspace %llu: %s\n", rc, (unsigned long long)ws,
                aclGetRecentErrMsg());
        return -1;
    }
    return t;
}

int bench_gating(int reps, int markdown) {
    const int64_t N = 8192, E = 256, k = 8;
    const int n = reps < 5 ? 21 : reps * 4 + 1;
    static const char *const names[6] = {"",           "MoeGatingTopKSoftmax",   "V2 renorm 0",
                                         "V2 renorm 1", "MoeGatingTopK grouped", "MoeFusedTopk grouped"};
    int fails = 0;
    printf("moefr %s, %d threads: gating top-k softmax, N = %lld tokens, E = %lld, k = %lld, median of %d calls "
           "(both phases)\n\n",
           moefrVersion(), moefrNumThreads(), (long long)N, (long long)E, (long long)k, n);
    printf("median and best wall time per call; cpu = process CPU time per call (all threads), which other\n"
           "processes on the machine do not inflate the way they inflate wall time\n\n");
    if (markdown)
        printf("| operator | dtype | ms per call (median) | best | cpu ms | median ms per 1000 tokens |\n"
               "|---|---|---|---|---|---|\n");
    for (int d = 0; d < 2; d++) {
        const aclDataType dt = d == 0 ? ACL_FLOAT : ACL_BF16;
        const size_t es = dt == ACL_FLOAT ? 4 : 2;
        char *xb = bench_alloc((size_t)(N * E) * es), *yb = bench_alloc((size_t)(N * k) * es);
        char *eb = bench_alloc((size_t)(N * k) * 4), *rb = bench_alloc((size_t)(N * k) * 4);
        uint64_t s = 88172645463325252ull;
        for (int64_t i = 0; i < N * E; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            const float v = (float)(int64_t)(s >> 40) * 0x1p-24f * 16.0f - 8.0f; /* logits in [-8, 8) */
            if (dt == ACL_FLOAT) {
                memcpy(xb + i * 4, &v, 4);
            } else {
                uint32_t u;
                memcpy(&u, &v, 4);
                const uint16_t h = (uint16_t)(u >> 16);
                memcpy(xb + i * 2, &h, 2);
            }
        }
        /* the yardstick: a copy of x's bytes by the same threads, median of n */
        {
            char *cb = bench_alloc((size_t)(N * E) * es);
            double *ct = malloc(sizeof *ct * (size_t)n);
            for (int i = 0; i < n; i++) ct[i] = bench_copy_once(cb, xb, (size_t)(N * E) * es, moefrNumThreads());
            qsort(ct, (size_t)n, sizeof *ct, cmp_d);
            printf("%s  (same-run yardstick: a %d-thread copy of x's %.1f MB takes %.3f ms, median)\n", markdown ? "" : " ",
                   moefrNumThreads(), (double)(N * E) * (double)es / 1e6, ct[n / 2] * 1e3);
            free(ct);
            bench_free(cb);
        }
        int64_t xd[2] = {N, E}, od[2] = {N, k};
        aclTensor *x = aclCreateTensor(xd, 2, dt, NULL, 0, ACL_FORMAT_ND, xd, 2, xb);
        aclTensor *y = aclCreateTensor(od, 2, dt, NULL, 0, ACL_FORMAT_ND, od, 2, yb);
        aclTensor *e = aclCreateTensor(od, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, od, 2, eb);
        aclTensor *r = aclCreateTensor(od, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, od, 2, rb);
        /* the grouped rows: a small bias of x's dtype (zeros: the values do not change the work), fp32 y for
         * MoeFusedTopk, and the norm output MoeGatingTopK requires (not written: outFlag false) */
        char *bb = bench_alloc((size_t)E * es), *yfb = bench_alloc((size_t)(N * k) * 4), *nb = bench_alloc((size_t)(N * E) * 4);
        memset(bb, 0, (size_t)E * es);
        int64_t bd[1] = {E}, nd[2] = {N, E};
        aclTensor *bias = aclCreateTensor(bd, 1, dt, NULL, 0, ACL_FORMAT_ND, bd, 1, bb);
        aclTensor *yf = aclCreateTensor(od, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, od, 2, yfb);
        aclTensor *norm = aclCreateTensor(nd, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, nd, 2, nb);
        g_bias = bias, g_yf = yf, g_norm = norm;
        for (int ver = 1; ver <= 5; ver++) {
            double *t = malloc(sizeof *t * (size_t)n);
            int ok = call(ver, x, k, y, e, r) >= 0; /* warm-up */
            const double c0 = cpu_s();
            for (int i = 0; i < n && ok; i++) ok = (t[i] = call(ver, x, k, y, e, r)) >= 0;
            const double cpu_ms = (cpu_s() - c0) * 1e3 / n;
            if (!ok) {
                fails++;
                free(t);
                continue;
            }
            qsort(t, (size_t)n, sizeof *t, cmp_d);
            const double ms = t[n / 2] * 1e3;
            const double best = t[0] * 1e3, per = ms * 1000.0 / (double)N;
            if (markdown)
                printf("| %s | %s | %.3f | %.3f | %.3f | %.4f |\n", names[ver], d == 0 ? "fp32" : "bf16", ms, best, cpu_ms,
                       per);
            else
                printf("  %-22s %s  %8.3f ms per call (best %.3f, cpu %.3f)  %7.4f ms per 1000 tokens\n", names[ver],
                       d == 0 ? "fp32" : "bf16", ms, best, cpu_ms, per);
            free(t);
        }
        aclDestroyTensor(x), aclDestroyTensor(y), aclDestroyTensor(e), aclDestroyTensor(r);
        aclDestroyTensor(bias), aclDestroyTensor(yf), aclDestroyTensor(norm);
        bench_free(bb), bench_free(yfb), bench_free(nb);
        bench_free(xb), bench_free(yb), bench_free(eb), bench_free(rb);
    }
    return fails ? 1 : 0;
}
