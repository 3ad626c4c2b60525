/* test_cann_samples.c - the inputs of CANN's two official samples
 * (ops-transformer moe/moe_finalize_routing_v2{,_grad}/examples/), run through
 * moefr, against the results worked out by hand from CANN's documented
 * formulas (the samples print their results without listing them). fp32 in
 * and out: the tolerance is a few fp32 roundings of the printed magnitudes
 * (the forward's: its fp32 order's roundings, see forward_sample). */
#include <math.h>

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "testutil.h"

static int g_fail;

static void near_tol(const char *what, int i, float got, double want, double rel) {
    const double tol = rel * fabs(want) + 1e-7;
    if (!(fabs((double)got - want) <= tol)) {
        fprintf(stderr, "%s[%d] = %.9g, want %.9g (tol %.2g)\n", what, i, (double)got, want, tol);
        g_fail++;
    }
}
static void near(const char *what, int i, float got, double want) { near_tol(what, i, got, want, 4e-7); }

/* aclnnMoeFinalizeRoutingV2Grad sample: R = 2, K = 2, H = 2, E = 2, mode 0, every optional input. */
static void grad_sample(void) {
    float gy[] = {0.3816f, 0.3939f, 0.8474f, 0.1652f};
    int32_t idx[] = {1, 3, 0, 2};
    float x[] = {0.6049f, 0.3315f, 0.4954f, 0.3284f, 0.7060f, 0.4359f, 0.6514f, 0.9476f};
    float sc[] = {0.4708f, 0.0656f, 0.9652f, 0.9512f};
    int32_t ei[] = {0, 1, 0, 1};
    float bias[] = {0.6452f, 0.1981f, 0.4159f, 0.9575f};
    float gx[8], gs[4];
    memset(gx, 0xEE, sizeof gx);
    memset(gs, 0xEE, sizeof gs);
    int64_t d22[2] = {2, 2}, d4[1] = {4}, d42[2] = {4, 2};
    aclTensor *t[8] = {tu_tensor(d22, 2, ACL_FLOAT, gy), tu_tensor(d4, 1, ACL_INT32, idx), tu_tensor(d42, 2, ACL_FLOAT, x),
                       tu_tensor(d22, 2, ACL_FLOAT, sc), tu_tensor(d22, 2, ACL_INT32, ei), tu_tensor(d22, 2, ACL_FLOAT, bias),
                       tu_tensor(d42, 2, ACL_FLOAT, gx), tu_tensor(d22, 2, ACL_FLOAT, gs)};
    uint64_t n = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], 0, 0, 0, 0, t[6], t[7],
                                                           &n, &ex),
             ACLNN_SUCCESS);
    void *w = n ? malloc(n) : NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_SUCCESS);
    free(w);
    /* gradExpandedX[d] = gradY[r] * scales[r][k] for d = idx[r*K + k]; gradScales = (x[d] + bias[e]) . gradY[r] */
    static const double want_gx[8] = {0.81791048, 0.15945104, 0.17965728, 0.18544812,
                                      0.80604688, 0.15713824, 0.02503296, 0.02583984};
    static const double want_gs[4] = {0.64264131, 1.15770057, 1.14682466, 1.18088774};
    for (int i = 0; i < 8; i++) near("gradExpandedX", i, gx[i], want_gx[i]);
    for (int i = 0; i < 4; i++) near("gradScales", i, gs[i], want_gs[i]);
    for (int i = 0; i < 8; i++) tu_destroy(t[i]);
}

/* aclnnMoeFinalizeRoutingV2 sample: R = 3, K = 2, H = 4, E = 2, mode 0 (column layout), x1 and x2. */
static void forward_sample(void) {
    float x[24], x1[12], x2[12], out[12];
    for (int i = 0; i < 12; i++) x[i] = x[i + 12] = 0.1f + (float)i, x1[i] = x2[i] = 0.2f + (float)i;
    float bias[] = {0.2f, 0.4f, 0.2f, 0.4f, 0.2f, 0.4f, 0.2f, 0.4f};
    float sc[] = {1.3f, 1.6f, 1.2f, 1.8f, 1.2f, 2.3f};
    int32_t ei[] = {0, 1, 0, 1, 0, 1}, idx[] = {2, 1, 4, 3, 0, 5};
    memset(out, 0xEE, sizeof out);
    int64_t d64[2] = {6, 4}, d6[1] = {6}, d34[2] = {3, 4}, d24[2] = {2, 4}, d32[2] = {3, 2};
    aclTensor *t[8] = {tu_tensor(d64, 2, ACL_FLOAT, x), tu_tensor(d6, 1, ACL_INT32, idx), tu_tensor(d34, 2, ACL_FLOAT, x1),
                       tu_tensor(d34, 2, ACL_FLOAT, x2), tu_tensor(d24, 2, ACL_FLOAT, bias), tu_tensor(d32, 2, ACL_FLOAT, sc),
                       tu_tensor(d32, 2, ACL_INT32, ei), tu_tensor(d34, 2, ACL_FLOAT, out)};
    uint64_t n = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], 0, t[7], &n, &ex),
             ACLNN_SUCCESS);
    void *w = n ? malloc(n) : NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2(w, n, ex, NULL), ACLNN_SUCCESS);
    free(w);
    /* out[r] = x1[r] + x2[r] + sum_k scales[r][k] * (x[idx[k*R + r]] + bias[expertIdx[r][k]]) */
    static const double want[12] = {11.67, 17.15, 21.47, 26.95, 14.1, 19.7, 24.1, 29.7, 40.65, 46.85, 51.65, 57.85};
    /* the canonical order (issue 13) is fp32 here (K = 2 <= 32): 2K + 1 = 5 roundings,
     * each <= 2^-24 of a partial sum; every term is positive, so each partial sum is
     * <= the result. The fp32 inputs (0.1f, 1.3f, ...) are each within 2^-24 of the
     * decimals: s * (x + b) moves by <= 3 * 2^-24 of itself. Total <= 8 * 2^-24 * want. */
    for (int i = 0; i < 12; i++) near_tol("out", i, out[i], want[i], 8 * 0x1p-24);
    for (int i = 0; i < 8; i++) tu_destroy(t[i]);
}

int main(void) {
    tu_seed("test_cann_samples");
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    grad_sample();
    forward_sample();
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    printf("test_cann_samples: %s\n", g_fail ? "FAILED" : "both samples match the hand-computed results");
    return g_fail ? 1 : 0;
}
