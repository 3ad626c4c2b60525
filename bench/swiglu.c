/* swiglu.c - `moefr bench --swiglu`: aclnnSwiGlu and aclnnSwiGluGrad at
 * x (R, 2F) = (8192 tokens x top-2, 2 x 1408), split on dim -1, fp32 and
 * bf16, against a memcpy of the same traffic measured in the same run.
 *
 * Bytes counted (the fewest each operator must move):
 *   SwiGlu:     read x (R x 2F), write out (R x F):               3*R*F*es;
 *   SwiGluGrad: read yGrad (R x F) and x (R x 2F), write out (R x 2F): 5*R*F*es.
 * The yardstick copies half those bytes (so it reads and writes as many) on
 * the library's thread count (bench_copy_once, as bench/routing.c). Each
 * operator run (both phases) is paired with a copy run right after it;
 * ratio = the median of the pairs' copy/op time ratios; GB/s = bytes / the
 * median time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"
#include "bench/bench.h"
#include "moefr/moefr.h"


/* Both phases of one call (grad 0: SwiGlu, 1: SwiGluGrad); seconds, or -1. */
static double call(int grad, const aclTensor *x, const aclTensor *dy, const aclTensor *out) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const double t0 = bench_now();
    aclnnStatus rc = grad ? aclnnSwiGluGradGetWorkspaceSize(dy, x, -1, out, &ws, &ex)
                          : aclnnSwiGluGetWorkspaceSize(x, -1, out, &ws, &ex);
    if (rc == ACLNN_SUCCESS && ws == 0) rc = grad ? aclnnSwiGluGrad(NULL, 0, ex, NULL) : aclnnSwiGlu(NULL, 0, ex, NULL);
    const double t = bench_now() - t0;
    if (rc != ACLNN_SUCCESS || ws != 0) {
        fprintf(stderr, "bench --swiglu: %s: status %d, workspace %llu: %s\n", grad ? "aclnnSwiGluGrad" : "aclnnSwiGlu",
                rc, (unsigned long long)ws, aclGetRecentErrMsg());
        return -1;
    }
    return t;
}

#define MAX_REPS 64

int bench_swiglu(int quick, int reps, int markdown) {
    const int64_t R = (8192 * 2) / (quick ? 4 : 1), F = 1408;
    if (reps <= 0) reps = quick ? 11 : 21;
    if (reps > MAX_REPS) reps = MAX_REPS;
    const int threads = moefrNumThreads();
    printf("moefr %s, kernel path %s, %d threads: SwiGlu / SwiGluGrad, x (%lld, %lld) split on dim -1, both phases "
           "per call, median of %d (op, memcpy) pairs\n",
           moefrVersion(), moefrIsa(), threads, (long long)R, (long long)(2 * F), reps);
    const char *soc = getenv("MOEFR_SOC");
    printf("CPU: %s%s%s\n", bench_cpu(), soc ? "; MOEFR_SOC=" : "", soc ? soc : "");
    printf("bytes: SwiGlu reads x, writes out (3*R*F*es); SwiGluGrad reads yGrad and x, writes out (5*R*F*es);\n"
           "memcpy: a %d-thread copy of half those bytes right after each call; ratio = median of copy/op time;\n"
           "GB/s = bytes / median time\n\n", threads);
    if (markdown)
        printf("| operator | x shape | dtype | ms (median) | GB/s | memcpy GB/s | ratio |\n|---|---|---|---|---|---|---|\n");
    int fails = 0;
    for (int d = 0; d < 2; d++) {
        const aclDataType dt = d ? ACL_BF16 : ACL_FLOAT;
        const size_t es = d ? 2 : 4;
        char *xb = bench_alloc((size_t)(R * 2 * F) * es), *dyb = bench_alloc((size_t)(R * F) * es);
        char *ob = bench_alloc((size_t)(R * 2 * F) * es);
        if (!xb || !dyb || !ob) {
            fprintf(stderr, "bench --swiglu: out of memory\n");
            bench_free(xb), bench_free(dyb), bench_free(ob);
            return 1;
        }
        /* values in [-8, 8), exact in the dtype */
        for (int64_t i = 0; i < R * 2 * F; i++) {
            const float v = (float)((int32_t)(bench_rand() >> 8) - (1 << 23)) * 0x1p-20f;
            uint32_t u;
            memcpy(&u, &v, 4);
            const uint16_t h = (uint16_t)(u >> 16);
            if (d) memcpy(xb + i * 2, &h, 2);
            else memcpy(xb + i * 4, &v, 4);
            if (i < R * F) {
                if (d) memcpy(dyb + i * 2, &h, 2);
                else memcpy(dyb + i * 4, &v, 4);
            }
        }
        memset(ob, 0, (size_t)(R * 2 * F) * es); /* fault the pages in before timing */
        const int64_t dx[2] = {R, 2 * F}, dh[2] = {R, F};
        aclTensor *x = aclCreateTensor(dx, 2, dt, NULL, 0, ACL_FORMAT_ND, dx, 2, xb);
        aclTensor *dy = aclCreateTensor(dh, 2, dt, NULL, 0, ACL_FORMAT_ND, dh, 2, dyb);
        aclTensor *y = aclCreateTensor(dh, 2, dt, NULL, 0, ACL_FORMAT_ND, dh, 2, ob);
        aclTensor *gx = aclCreateTensor(dx, 2, dt, NULL, 0, ACL_FORMAT_ND, dx, 2, ob);
        for (int grad = 0; grad < 2; grad++) {
            const double bytes = (grad ? 5.0 : 3.0) * (double)(R * F) * (double)es;
            const size_t half = (size_t)(bytes / 2);
            char *src = bench_alloc(half + 64), *dst = bench_alloc(half + 64);
            if (!src || !dst) {
                bench_free(src), bench_free(dst);
                fails++;
                continue;
            }
            memset(src, 1, half), memset(dst, 2, half);
            double op[MAX_REPS], cp[MAX_REPS], pr[MAX_REPS];
            int ok = call(grad, x, dy, grad ? gx : y) >= 0; /* warm-up: the pool */
            bench_copy_once(dst, src, half, threads);
            for (int i = 0; i < reps && ok; i++) {
                ok = (op[i] = call(grad, x, dy, grad ? gx : y)) >= 0;
                cp[i] = bench_copy_once(dst, src, half, threads);
                pr[i] = cp[i] / op[i];
            }
            bench_free(src), bench_free(dst);
            if (!ok) {
                fails++;
                continue;
            }
            const double t = bench_median(op, reps), c = bench_median(cp, reps), ratio = bench_median(pr, reps);
            const char *name = grad ? "aclnnSwiGluGrad" : "aclnnSwiGlu", *dn = d ? "bf16" : "fp32";
            if (markdown)
                printf("| %s | %lld,%lld | %s | %.3f | %.1f | %.1f | %.2f |\n", name, (long long)R, (long long)(2 * F), dn,
                       t * 1e3, bytes / t / 1e9, 2.0 * (double)half / c / 1e9, ratio);
            else
                printf("  %-16s x %lld,%lld %s  %8.3f ms  %6.1f GB/s  memcpy %6.1f GB/s  ratio %.2f\n", name,
                       (long long)R, (long long)(2 * F), dn, t * 1e3, bytes / t / 1e9, 2.0 * (double)half / c / 1e9,
                       ratio);
            fflush(stdout);
        }
        aclDestroyTensor(x), aclDestroyTensor(dy), aclDestroyTensor(y), aclDestroyTensor(gx);
        bench_free(xb), bench_free(dyb), bench_free(ob);
    }
    return fails ? 1 : 0;
}
