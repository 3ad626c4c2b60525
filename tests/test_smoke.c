/* test_smoke.c - one hand-computed case through the public API (R=2, K=2, H=3,
 * fp32, scales and bias), checked against numbers worked out on paper. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #c, \
                    aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "(none)"); \
            return 1;                                                         \
        }                                                                     \
    } while (0)

static aclTensor *mk(const int64_t *dims, int n, aclDataType dt, void *data) {
    return aclCreateTensor(dims, (uint64_t)n, dt, NULL, 0, ACL_FORMAT_ND, dims, (uint64_t)n, data);
}

int main(void) {
    float gy[2][3] = {{1, 2, 3}, {4, 5, 6}};
    int32_t idx[4] = {2, 0, 3, 1}; /* i = r*K + k */
    float x[4][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}};
    float sc[2][2] = {{0.5f, 2.0f}, {1.0f, -1.0f}};
    int32_t ei[2][2] = {{0, 1}, {1, 0}};
    float bias[2][3] = {{1, 1, 1}, {0, 0, 2}};
    float gx[4][3], gs[2][2];
    memset(gx, 0xFF, sizeof gx);
    memset(gs, 0xFF, sizeof gs);
    int64_t d_gy[2] = {2, 3}, d_idx[1] = {4}, d_x[2] = {4, 3}, d_s[2] = {2, 2}, d_b[2] = {2, 3};
    aclTensor *tgy = mk(d_gy, 2, ACL_FLOAT, gy), *tidx = mk(d_idx, 1, ACL_INT32, idx);
    aclTensor *tx = mk(d_x, 2, ACL_FLOAT, x), *ts = mk(d_s, 2, ACL_FLOAT, sc);
    aclTensor *tei = mk(d_s, 2, ACL_INT32, ei), *tb = mk(d_b, 2, ACL_FLOAT, bias);
    aclTensor *tgx = mk(d_x, 2, ACL_FLOAT, gx), *tgs = mk(d_s, 2, ACL_FLOAT, gs);
    CHECK(tgy && tidx && tx && ts && tei && tb && tgx && tgs);
    uint64_t ws_size = 0;
    aclOpExecutor *ex = NULL;
    CHECK(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tgy, tidx, tx, ts, tei, tb, 0, 0, 0, 0, tgx, tgs,
                                                        &ws_size, &ex) == ACLNN_SUCCESS);
    void *ws = NULL;
    if (ws_size) CHECK(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    CHECK(aclnnMoeFinalizeRoutingV2Grad(ws, ws_size, ex, NULL) == ACLNN_SUCCESS);
    /* gradExpandedX[d] = gy[r] * s[r][k] */
    float want_gx[4][3] = {{2, 4, 6}, {-4, -5, -6}, {0.5f, 1, 1.5f}, {4, 5, 6}};
    CHECK(memcmp(gx, want_gx, sizeof gx) == 0);
    /* gs[0][0]: d=2 x=(0,0,1) b0=(1,1,1): (1,1,2).(1,2,3) = 9
     * gs[0][1]: d=0 x=(1,0,0) b1=(0,0,2): (1,0,2).(1,2,3) = 7
     * gs[1][0]: d=3 x=(1,1,1) b1=(0,0,2): (1,1,3).(4,5,6) = 27
     * gs[1][1]: d=1 x=(0,1,0) b0=(1,1,1): (1,2,1).(4,5,6) = 20 */
    float want_gs[2][2] = {{9, 7}, {27, 20}};
    CHECK(memcmp(gs, want_gs, sizeof gs) == 0);
    /* the executor was single-use: a second run is refused */
    CHECK(aclnnMoeFinalizeRoutingV2Grad(ws, ws_size, ex, NULL) == ACLNN_ERR_PARAM_INVALID);
    if (ws) CHECK(aclrtFree(ws) == ACL_SUCCESS);
    aclTensor *all[] = {tgy, tidx, tx, ts, tei, tb, tgx, tgs};
    for (int i = 0; i < 8; i++) CHECK(aclDestroyTensor(all[i]) == ACLNN_SUCCESS);
    printf("test_smoke: ok\n");
    return 0;
}
