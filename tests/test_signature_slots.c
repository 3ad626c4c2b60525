/* test_signature_slots.c - the address setters count the signature of the
 * operator whose executor CANN returns. aclnnMoeTokenUnpermute(Grad) run on
 * FinalizeRoutingV2(Grad)'s plans: on Ascend 950 CANN's L2 entry returns the
 * inner FinalizeRoutingV2(Grad)'s executor (op_api/aclnn_moe_token_unpermute*.cpp),
 * so probs is input 5 of TokenUnpermute (of 7; x1 at 2 is absent) and
 * unpermutedTokensGrad input 0 of the grad (of 6); under MOEFR_SOC=ascend910b
 * the operator's own wrapper runs: probs is input 2 (of 3), and the grad's
 * inputs are (permutedTokens, unpermutedTokensGrad, sortedIndices, probs).
 * A repeatable executor is re-pointed through aclSetInputTensorAddr /
 * aclSetOutputTensorAddr / aclSetTensorAddr at fresh data and compared with a
 * float64 loop of the documented formulas; the data are small dyadic
 * rationals, so every product and sum is exact and the comparison is exact. */
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_moe_token_unpermute.h"
#include "aclnnop/aclnn_moe_token_unpermute_grad.h"
#include "testutil.h"

enum { N = 5, K = 3, T = N * K, H = 7 };
static int a2; /* MOEFR_SOC=ascend910b */

static float dyadic(void) { return (float)(tu_int(-64, 64)) / 16.0f; }
static void fill(float *p, int n) {
    for (int i = 0; i < n; i++) p[i] = dyadic();
}
static void shuffle(int32_t *idx) {
    for (int i = 0; i < T; i++) idx[i] = i;
    for (int i = T - 1; i > 0; i--) {
        int j = (int)tu_below(i + 1), v = idx[i];
        idx[i] = idx[j];
        idx[j] = v;
    }
}

/* out[r][h] = sum_k probs[r][k] * x[idx[r*K + k]][h] */
static void ref_unpermute(const float *x, const int32_t *idx, const float *pr, double *out) {
    for (int r = 0; r < N; r++)
        for (int h = 0; h < H; h++) {
            double acc = 0;
            for (int k = 0; k < K; k++) acc += (double)pr[r * K + k] * x[idx[r * K + k] * H + h];
            out[r * H + h] = acc;
        }
}

static void check_out(const char *what, const float *got, const double *want, int n) {
    for (int i = 0; i < n; i++)
        if ((double)got[i] != want[i]) TU_FAIL("%s[%d] = %.9g, want %.9g", what, i, got[i], want[i]);
}

static void unpermute_case(void) {
    float x[T * H], pa[T], pb[T], out_a[N * H], out_b[N * H];
    int32_t idx[T];
    double want[N * H];
    fill(x, T * H), fill(pa, T), fill(pb, T), shuffle(idx);
    const int64_t dx[2] = {T, H}, di[1] = {T}, dp[2] = {N, K}, dout[2] = {N, H};
    aclTensor *tx = tu_tensor(dx, 2, ACL_FLOAT, x), *ti = tu_tensor(di, 1, ACL_INT32, idx),
              *tp = tu_tensor(dp, 2, ACL_FLOAT, pa), *to = tu_tensor(dout, 2, ACL_FLOAT, out_a);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeTokenUnpermuteGetWorkspaceSize(tx, ti, tp, false, NULL, to, &ws, &ex), ACLNN_SUCCESS);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    void *w = ws ? malloc(ws) : NULL;
    memset(out_a, 0xA5, sizeof out_a);
    CHECK_RC(aclnnMoeTokenUnpermute(w, ws, ex, NULL), ACLNN_SUCCESS);
    ref_unpermute(x, idx, pa, want);
    check_out("out (probs a)", out_a, want, N * H);

    /* probsOptional is input 2 (A2/A3) or 5 (Ascend 950, where 2 is the absent x1); out is output 0 */
    const size_t in_probs = a2 ? 2 : 5, n_in = a2 ? 3 : 7;
    memset(out_b, 0xA5, sizeof out_b);
    if (!a2) CHECK_RC(aclSetInputTensorAddr(ex, 2, tp, pb), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclSetInputTensorAddr(ex, in_probs, tp, pb), ACLNN_SUCCESS);
    CHECK_RC(aclSetOutputTensorAddr(ex, 0, to, out_b), ACLNN_SUCCESS);
    CHECK_RC(aclnnMoeTokenUnpermute(w, ws, ex, NULL), ACLNN_SUCCESS);
    ref_unpermute(x, idx, pb, want);
    check_out("out (probs b, via the setters)", out_b, want, N * H);
    /* aclSetTensorAddr counts inputs, then outputs */
    memset(out_a, 0xA5, sizeof out_a);
    CHECK_RC(aclSetTensorAddr(ex, n_in, to, out_a), ACLNN_SUCCESS);
    CHECK_RC(aclnnMoeTokenUnpermute(w, ws, ex, NULL), ACLNN_SUCCESS);
    check_out("out (aclSetTensorAddr 3)", out_a, want, N * H);
    /* past the inputs, the one output, the tensors */
    CHECK_RC(aclSetInputTensorAddr(ex, n_in, tp, pb), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclSetOutputTensorAddr(ex, 1, to, out_b), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclSetTensorAddr(ex, n_in + 1, to, out_b), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    free(w);
    tu_destroy(tx), tu_destroy(ti), tu_destroy(tp), tu_destroy(to);
}

/* permGrad[idx[r*K + k]] = g[r] * probs[r][k]; probGrad[r][k] = sum_h x[d][h] * g[r][h] */
static void ref_grad(const float *x, const float *g, const int32_t *idx, const float *pr, double *pg, double *prg) {
    for (int r = 0; r < N; r++)
        for (int k = 0; k < K; k++) {
            const int d = idx[r * K + k];
            double acc = 0;
            for (int h = 0; h < H; h++) {
                pg[d * H + h] = (double)g[r * H + h] * pr[r * K + k];
                acc += (double)x[d * H + h] * g[r * H + h];
            }
            prg[r * K + k] = acc;
        }
}

static void unpermute_grad_case(void) {
    float x[T * H], g[N * H], pa[T], pb[T], gx_a[T * H], gx_b[T * H], gp_a[T], gp_b[T];
    int32_t idx[T];
    double want_gx[T * H], want_gp[T];
    fill(x, T * H), fill(g, N * H), fill(pa, T), fill(pb, T), shuffle(idx);
    const int64_t dx[2] = {T, H}, dg[2] = {N, H}, di[1] = {T}, dp[2] = {N, K};
    aclTensor *tx = tu_tensor(dx, 2, ACL_FLOAT, x), *tg = tu_tensor(dg, 2, ACL_FLOAT, g),
              *ti = tu_tensor(di, 1, ACL_INT32, idx), *tp = tu_tensor(dp, 2, ACL_FLOAT, pa),
              *tgx = tu_tensor(dx, 2, ACL_FLOAT, gx_a), *tgp = tu_tensor(dp, 2, ACL_FLOAT, gp_a);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeTokenUnpermuteGradGetWorkspaceSize(tx, tg, ti, tp, false, NULL, tgx, tgp, &ws, &ex),
             ACLNN_SUCCESS);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    void *w = ws ? malloc(ws) : NULL;
    memset(gx_a, 0xA5, sizeof gx_a), memset(gp_a, 0xA5, sizeof gp_a);
    CHECK_RC(aclnnMoeTokenUnpermuteGrad(w, ws, ex, NULL), ACLNN_SUCCESS);
    ref_grad(x, g, idx, pa, want_gx, want_gp);
    check_out("permutedTokensGradOut (probs a)", gx_a, want_gx, T * H);
    check_out("probsGradOut (probs a)", gp_a, want_gp, T);

    /* probsOptional is input 3 under both rule sets; outputs 0 and 1 are permutedTokensGradOut and probsGradOut */
    memset(gx_b, 0xA5, sizeof gx_b), memset(gp_b, 0xA5, sizeof gp_b);
    CHECK_RC(aclSetInputTensorAddr(ex, 3, tp, pb), ACLNN_SUCCESS);
    CHECK_RC(aclSetOutputTensorAddr(ex, 0, tgx, gx_b), ACLNN_SUCCESS);
    CHECK_RC(aclSetOutputTensorAddr(ex, 1, tgp, gp_b), ACLNN_SUCCESS);
    CHECK_RC(aclnnMoeTokenUnpermuteGrad(w, ws, ex, NULL), ACLNN_SUCCESS);
    ref_grad(x, g, idx, pb, want_gx, want_gp);
    check_out("permutedTokensGradOut (probs b, via the setters)", gx_b, want_gx, T * H);
    check_out("probsGradOut (via the setters)", gp_b, want_gp, T);
    /* unpermutedTokensGrad is input 1 (A2/A3) or 0 (Ascend 950): a zero gradient zeroes both outputs */
    float g0[N * H];
    memset(g0, 0, sizeof g0);
    CHECK_RC(aclSetTensorAddr(ex, a2 ? 1 : 0, tg, g0), ACLNN_SUCCESS);
    CHECK_RC(aclnnMoeTokenUnpermuteGrad(w, ws, ex, NULL), ACLNN_SUCCESS);
    for (int i = 0; i < T * H; i++) CHECK(gx_b[i] == 0.0f);
    for (int i = 0; i < T; i++) CHECK(gp_b[i] == 0.0f);
    CHECK_RC(aclSetInputTensorAddr(ex, a2 ? 4 : 6, tp, pb), ACLNN_ERR_PARAM_INVALID);
    if (!a2) CHECK_RC(aclSetInputTensorAddr(ex, 4, tp, pb), ACLNN_ERR_PARAM_INVALID); /* the absent expertIdx */
    CHECK_RC(aclSetOutputTensorAddr(ex, 2, tgp, gp_b), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    free(w);
    tu_destroy(tx), tu_destroy(tg), tu_destroy(ti), tu_destroy(tp), tu_destroy(tgx), tu_destroy(tgp);
}

int main(void) {
    tu_seed("test_signature_slots");
    const char *soc = getenv("MOEFR_SOC");
    a2 = soc && strcmp(soc, "ascend910b") == 0;
    printf("test_signature_slots: %s slot layout\n", a2 ? "A2/A3 (own signature)" : "Ascend 950 (inner operator's)");
    for (int rep = 0; rep < 20; rep++) {
        unpermute_case();
        unpermute_grad_case();
    }
    printf("test_signature_slots: 40 cases passed\n");
    return 0;
}
