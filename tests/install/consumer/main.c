/* consumer/main.c - a downstream C11 program built against an installed moefr (through
 * find_package or pkg-config) running one drop-pad case checked against hand-worked numbers. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "moefr/moefr.h"

#define EXPECT(c)                                                                      \
    do {                                                                               \
        if (!(c)) {                                                                    \
            const char *msg_ = aclGetRecentErrMsg();                                   \
            fprintf(stderr, "consumer: line %d: %s failed (%s)\n", __LINE__, #c, msg_ ? msg_ : "-"); \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

static aclTensor *make_tensor(const int64_t *dims, uint64_t n, aclDataType dt, void *data) {
    return aclCreateTensor(dims, n, dt, NULL, 0, ACL_FORMAT_ND, dims, n, data);
}

int main(void) {
    /* Mode 1 (drop-pad): E = 2 experts, C = 2 slots, H = 3, R = 2 tokens, K = 2. */
    float grad_y[2][3] = {{1, 2, 3}, {4, 5, 6}};
    int32_t row_idx[4] = {3, -1, 0, 2}; /* slot i = r*K + k; -1 = dropped */
    float expanded_x[2][2][3] = {{{1, 0, 0}, {9, 9, 9}}, {{0, 0, 1}, {1, 1, 1}}};
    float scales[2][2] = {{0.5f, 2.0f}, {1.0f, -1.0f}};
    float grad_x[2][2][3], grad_s[2][2];
    memset(grad_x, 0xFF, sizeof grad_x); /* poison: every value must be written */
    memset(grad_s, 0xFF, sizeof grad_s);

    EXPECT(aclInit(NULL) == ACL_SUCCESS);
    EXPECT(aclrtSetDevice(0) == ACL_SUCCESS);
    int64_t d_gy[2] = {2, 3}, d_idx[1] = {4}, d_x[3] = {2, 2, 3}, d_s[2] = {2, 2};
    aclTensor *t_gy = make_tensor(d_gy, 2, ACL_FLOAT, grad_y);
    aclTensor *t_idx = make_tensor(d_idx, 1, ACL_INT32, row_idx);
    aclTensor *t_x = make_tensor(d_x, 3, ACL_FLOAT, expanded_x);
    aclTensor *t_s = make_tensor(d_s, 2, ACL_FLOAT, scales);
    aclTensor *t_gx = make_tensor(d_x, 3, ACL_FLOAT, grad_x);
    aclTensor *t_gs = make_tensor(d_s, 2, ACL_FLOAT, grad_s);
    EXPECT(t_gy && t_idx && t_x && t_s && t_gx && t_gs);

    uint64_t ws_size = 0;
    aclOpExecutor *executor = NULL;
    EXPECT(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t_gy, t_idx, t_x, t_s, NULL, NULL, 1, 0, 2, 2, t_gx,
                                                         t_gs, &ws_size, &executor) == ACLNN_SUCCESS);
    void *ws = NULL;
    if (ws_size > 0) EXPECT(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    EXPECT(aclnnMoeFinalizeRoutingV2Grad(ws, ws_size, executor, NULL) == ACLNN_SUCCESS);

    /* Worked by hand: d = 3 <- gy[0]*0.5; d = 0 <- gy[1]*1; d = 2 <- gy[1]*-1;
     * d = 1 is named by no slot, so it is zero-filled. */
    const float want_x[2][2][3] = {{{4, 5, 6}, {0, 0, 0}}, {{-4, -5, -6}, {0.5f, 1, 1.5f}}};
    EXPECT(memcmp(grad_x, want_x, sizeof want_x) == 0);
    /* gs[0][0] = x[3].gy[0] = 6; gs[0][1] dropped without bias = 0;
     * gs[1][0] = x[0].gy[1] = 4; gs[1][1] = x[2].gy[1] = 6. */
    const float want_s[2][2] = {{6, 0}, {4, 6}};
    EXPECT(memcmp(grad_s, want_s, sizeof want_s) == 0);

    if (ws) EXPECT(aclrtFree(ws) == ACL_SUCCESS);
    aclTensor *all[6] = {t_gy, t_idx, t_x, t_s, t_gx, t_gs};
    for (int i = 0; i < 6; i++) EXPECT(aclDestroyTensor(all[i]) == ACLNN_SUCCESS);
    EXPECT(aclrtResetDevice(0) == ACL_SUCCESS);
    EXPECT(aclFinalize() == ACL_SUCCESS);
    /* The test script compares this line with the version pkg-config and CMake report. */
    printf("consumer: ok, moefr %s (%s)\n", moefrVersion(), moefrIsa());
    return 0;
}
