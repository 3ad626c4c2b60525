/* op_cases.c - one small valid problem per public aclnn operator (op_cases.h). */
#include "op_cases.h"

#include <stdlib.h>
#include <string.h>

#include "aclnnop/aclnn_moe_compute_expert_tokens.h"
#include "aclnnop/aclnn_moe_finalize_routing.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#include "aclnnop/aclnn_moe_init_routing.h"
#include "aclnnop/aclnn_moe_init_routing_v2.h"
#include "aclnnop/aclnn_moe_init_routing_v2_grad.h"
#include "aclnnop/aclnn_moe_token_permute.h"
#include "aclnnop/aclnn_moe_token_permute_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute.h"
#include "aclnnop/aclnn_moe_token_unpermute_grad.h"

enum {
    OP_GATING, OP_GATING_V2, OP_INIT_ROUTING, OP_INIT_ROUTING_V2, OP_INIT_ROUTING_V2_GRAD, OP_COMPUTE_EXPERT_TOKENS,
    OP_TOKEN_PERMUTE, OP_TOKEN_PERMUTE_GRAD, OP_TOKEN_UNPERMUTE, OP_TOKEN_UNPERMUTE_GRAD, OP_FINALIZE_ROUTING,
    OP_FINALIZE_ROUTING_V2, OP_FINALIZE_ROUTING_V2_GRAD
};

static uint64_t g_rng;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t oc_hash(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static int64_t numel(const oc_arr *a) {
    int64_t n = 1;
    for (int i = 0; i < a->nd; i++) n *= a->dims[i];
    return n;
}

static oc_arr shape(aclDataType dt, int nd, int64_t d0, int64_t d1) {
    oc_arr a = {dt, nd, {d0, d1, 0}, 0, NULL};
    a.bytes = (size_t)numel(&a) * (dt == ACL_INT32 || dt == ACL_FLOAT ? 4u : 2u);
    return a;
}

/* Input kinds: random fp32 in [-2, 2), experts in [0, E), a permutation of
 * [0, n), sorted experts. */
static oc_arr floats(int nd, int64_t d0, int64_t d1) {
    oc_arr a = shape(ACL_FLOAT, nd, d0, d1);
    float *p = malloc(a.bytes ? a.bytes : 1);
    for (int64_t i = 0; i < numel(&a); i++) p[i] = (float)((double)(next() >> 11) * 0x1p-51 - 2.0);
    a.data = p;
    return a;
}
static oc_arr experts(int64_t d0, int64_t d1, int64_t E) {
    oc_arr a = shape(ACL_INT32, 2, d0, d1);
    int32_t *p = malloc(a.bytes ? a.bytes : 1);
    for (int64_t i = 0; i < numel(&a); i++) p[i] = (int32_t)(next() % (uint64_t)E);
    a.data = p;
    return a;
}
static oc_arr perm(int64_t n) {
    oc_arr a = shape(ACL_INT32, 1, n, 0);
    int32_t *p = malloc(a.bytes ? a.bytes : 1);
    for (int64_t i = 0; i < n; i++) p[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(next() % (uint64_t)(i + 1));
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    a.data = p;
    return a;
}
static oc_arr sorted_experts(int64_t n, int64_t E) {
    oc_arr a = experts(n, 1, E);
    a.nd = 1;
    int32_t *p = a.data;
    for (int64_t i = 1; i < n; i++) /* insertion sort: n is small */
        for (int64_t j = i; j > 0 && p[j - 1] > p[j]; j--) {
            int32_t t = p[j];
            p[j] = p[j - 1];
            p[j - 1] = t;
        }
    return a;
}
static const oc_arr ABSENT = {ACL_FLOAT, 0, {0, 0, 0}, 0, NULL};

int oc_make(oc_case *cases, int64_t N, int64_t K, int64_t H, int64_t E, uint64_t seed) {
    const int64_t T = N * K;
    static const char *const names[OC_COUNT] = {
        "aclnnMoeGatingTopKSoftmax", "aclnnMoeGatingTopKSoftmaxV2", "aclnnMoeInitRouting", "aclnnMoeInitRoutingV2",
        "aclnnMoeInitRoutingV2Grad", "aclnnMoeComputeExpertTokens", "aclnnMoeTokenPermute", "aclnnMoeTokenPermuteGrad",
        "aclnnMoeTokenUnpermute", "aclnnMoeTokenUnpermuteGrad", "aclnnMoeFinalizeRouting", "aclnnMoeFinalizeRoutingV2",
        "aclnnMoeFinalizeRoutingV2Grad"};
    memset(cases, 0, sizeof(oc_case) * OC_COUNT);
    for (int op = 0; op < OC_COUNT; op++) {
        oc_case *c = &cases[op];
        g_rng = seed * 1000 + (uint64_t)op;
        c->name = names[op];
        c->op = op;
        c->N = N, c->K = K, c->H = H, c->E = E;
        oc_arr *in = c->in, *out = c->out;
        switch (op) {
        case OP_GATING:
            c->n_in = 2, c->n_out = 3;
            in[0] = floats(2, N, E), in[1] = ABSENT;
            out[0] = shape(ACL_FLOAT, 2, N, K), out[1] = shape(ACL_INT32, 2, N, K), out[2] = shape(ACL_INT32, 2, N, K);
            break;
        case OP_GATING_V2:
            c->n_in = 2, c->n_out = 3;
            in[0] = floats(2, N, E), in[1] = ABSENT;
            out[0] = shape(ACL_FLOAT, 2, N, K), out[1] = shape(ACL_INT32, 2, N, K), out[2] = shape(ACL_FLOAT, 2, N, E);
            break;
        case OP_INIT_ROUTING:
            c->n_in = 3, c->n_out = 3;
            in[0] = floats(2, N, H), in[1] = perm(T), in[2] = experts(N, K, E);
            in[1].nd = 2, in[1].dims[0] = N, in[1].dims[1] = K;
            out[0] = shape(ACL_FLOAT, 2, T, H), out[1] = shape(ACL_INT32, 1, T, 0), out[2] = shape(ACL_INT32, 1, T, 0);
            break;
        case OP_INIT_ROUTING_V2:
            c->n_in = 2, c->n_out = 4;
            in[0] = floats(2, N, H), in[1] = experts(N, K, E);
            out[0] = shape(ACL_FLOAT, 2, T, H), out[1] = shape(ACL_INT32, 1, T, 0), out[2] = shape(ACL_INT32, 1, E, 0);
            c->n_out = 3; /* expertTokensBeforeCapacityOutOptional absent (passed as NULL) */
            break;
        case OP_INIT_ROUTING_V2_GRAD:
            c->n_in = 2, c->n_out = 1;
            in[0] = floats(2, T, H), in[1] = perm(T);
            out[0] = shape(ACL_FLOAT, 2, N, H);
            break;
        case OP_COMPUTE_EXPERT_TOKENS:
            c->n_in = 1, c->n_out = 1;
            in[0] = sorted_experts(T, E);
            out[0] = shape(ACL_INT32, 1, E, 0);
            break;
        case OP_TOKEN_PERMUTE:
            c->n_in = 2, c->n_out = 2;
            in[0] = floats(2, N, H), in[1] = experts(N, K, E);
            out[0] = shape(ACL_FLOAT, 2, T, H), out[1] = shape(ACL_INT32, 1, T, 0);
            break;
        case OP_TOKEN_PERMUTE_GRAD:
            c->n_in = 2, c->n_out = 1;
            in[0] = floats(2, T, H), in[1] = perm(T);
            out[0] = shape(ACL_FLOAT, 2, N, H);
            break;
        case OP_TOKEN_UNPERMUTE:
            c->n_in = 3, c->n_out = 1;
            in[0] = floats(2, T, H), in[1] = perm(T), in[2] = floats(2, N, K);
            out[0] = shape(ACL_FLOAT, 2, N, H);
            break;
        case OP_TOKEN_UNPERMUTE_GRAD:
            c->n_in = 4, c->n_out = 2;
            in[0] = floats(2, T, H), in[1] = floats(2, N, H), in[2] = perm(T), in[3] = floats(2, N, K);
            out[0] = shape(ACL_FLOAT, 2, T, H), out[1] = shape(ACL_FLOAT, 2, N, K);
            break;
        case OP_FINALIZE_ROUTING:
            c->n_in = 7, c->n_out = 1;
            in[0] = floats(2, T, H), in[1] = floats(2, N, H), in[2] = ABSENT, in[3] = floats(2, E, H);
            in[4] = floats(2, N, K), in[5] = perm(T), in[6] = experts(N, K, E);
            out[0] = shape(ACL_FLOAT, 2, N, H);
            break;
        case OP_FINALIZE_ROUTING_V2:
            c->n_in = 7, c->n_out = 1;
            in[0] = floats(2, T, H), in[1] = perm(T), in[2] = floats(2, N, H), in[3] = ABSENT;
            in[4] = floats(2, E, H), in[5] = floats(2, N, K), in[6] = experts(N, K, E);
            out[0] = shape(ACL_FLOAT, 2, N, H);
            break;
        case OP_FINALIZE_ROUTING_V2_GRAD:
            c->n_in = 6, c->n_out = 2;
            in[0] = floats(2, N, H), in[1] = perm(T), in[2] = floats(2, T, H), in[3] = floats(2, N, K);
            in[4] = experts(N, K, E), in[5] = floats(2, E, H);
            out[0] = shape(ACL_FLOAT, 2, T, H), out[1] = shape(ACL_FLOAT, 2, N, K);
            break;
        }
    }
    return OC_COUNT;
}

void oc_free(oc_case *cases, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < cases[i].n_in; j++) {
            free(cases[i].in[j].data);
            cases[i].in[j].data = NULL;
        }
}

aclTensor *oc_tensor(const oc_arr *a, void *data) {
    return aclCreateTensor(a->dims, (uint64_t)a->nd, a->dt, NULL, 0, ACL_FORMAT_ND, a->dims, (uint64_t)a->nd, data);
}

aclnnStatus oc_plan(const oc_case *c, aclTensor *const *in, aclTensor *const *out, const aclIntArray *restore,
                    uint64_t *ws, aclOpExecutor **ex) {
    const int64_t N = c->N, K = c->K, E = c->E;
    switch (c->op) {
    case OP_GATING:
        return aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(in[0], in[1], K, out[0], out[1], out[2], ws, ex);
    case OP_GATING_V2:
        return aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(in[0], in[1], K, 0, true, out[0], out[1], out[2], ws, ex);
    case OP_INIT_ROUTING:
        return aclnnMoeInitRoutingGetWorkspaceSize(in[0], in[1], in[2], N, out[0], out[1], out[2], ws, ex);
    case OP_INIT_ROUTING_V2:
        return aclnnMoeInitRoutingV2GetWorkspaceSize(in[0], in[1], 0, 0, E, 0, 1, false, out[0], out[1], out[2], NULL,
                                                     ws, ex);
    case OP_INIT_ROUTING_V2_GRAD:
        return aclnnMoeInitRoutingV2GradGetWorkspaceSize(in[0], in[1], K, 0, 0, out[0], ws, ex);
    case OP_COMPUTE_EXPERT_TOKENS:
        return aclnnMoeComputeExpertTokensGetWorkspaceSize(in[0], E, out[0], ws, ex);
    case OP_TOKEN_PERMUTE:
        return aclnnMoeTokenPermuteGetWorkspaceSize(in[0], in[1], N * K, false, out[0], out[1], ws, ex);
    case OP_TOKEN_PERMUTE_GRAD:
        return aclnnMoeTokenPermuteGradGetWorkspaceSize(in[0], in[1], K, false, out[0], ws, ex);
    case OP_TOKEN_UNPERMUTE:
        return aclnnMoeTokenUnpermuteGetWorkspaceSize(in[0], in[1], in[2], false, restore, out[0], ws, ex);
    case OP_TOKEN_UNPERMUTE_GRAD:
        return aclnnMoeTokenUnpermuteGradGetWorkspaceSize(in[0], in[1], in[2], in[3], false, restore, out[0], out[1],
                                                          ws, ex);
    case OP_FINALIZE_ROUTING:
        return aclnnMoeFinalizeRoutingGetWorkspaceSize(in[0], in[1], in[2], in[3], in[4], in[5], in[6], out[0], ws, ex);
    case OP_FINALIZE_ROUTING_V2:
        return aclnnMoeFinalizeRoutingV2GetWorkspaceSize(in[0], in[1], in[2], in[3], in[4], in[5], in[6], 0, out[0], ws,
                                                         ex);
    case OP_FINALIZE_ROUTING_V2_GRAD:
        return aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(in[0], in[1], in[2], in[3], in[4], in[5], 0, 0, E, 0,
                                                             out[0], out[1], ws, ex);
    }
    return ACLNN_ERR_PARAM_INVALID;
}

aclnnStatus oc_run(const oc_case *c, void *w, uint64_t ws, aclOpExecutor *ex, aclrtStream s) {
    switch (c->op) {
    case OP_GATING: return aclnnMoeGatingTopKSoftmax(w, ws, ex, s);
    case OP_GATING_V2: return aclnnMoeGatingTopKSoftmaxV2(w, ws, ex, s);
    case OP_INIT_ROUTING: return aclnnMoeInitRouting(w, ws, ex, s);
    case OP_INIT_ROUTING_V2: return aclnnMoeInitRoutingV2(w, ws, ex, s);
    case OP_INIT_ROUTING_V2_GRAD: return aclnnMoeInitRoutingV2Grad(w, ws, ex, s);
    case OP_COMPUTE_EXPERT_TOKENS: return aclnnMoeComputeExpertTokens(w, ws, ex, s);
    case OP_TOKEN_PERMUTE: return aclnnMoeTokenPermute(w, ws, ex, s);
    case OP_TOKEN_PERMUTE_GRAD: return aclnnMoeTokenPermuteGrad(w, ws, ex, s);
    case OP_TOKEN_UNPERMUTE: return aclnnMoeTokenUnpermute(w, ws, ex, s);
    case OP_TOKEN_UNPERMUTE_GRAD: return aclnnMoeTokenUnpermuteGrad(w, ws, ex, s);
    case OP_FINALIZE_ROUTING: return aclnnMoeFinalizeRouting(w, ws, ex, s);
    case OP_FINALIZE_ROUTING_V2: return aclnnMoeFinalizeRoutingV2(w, ws, ex, s);
    case OP_FINALIZE_ROUTING_V2_GRAD: return aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, s);
    }
    return ACLNN_ERR_PARAM_INVALID;
}
