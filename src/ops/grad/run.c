/* run.c - phase 2 of aclnnMoeFinalizeRoutingV2Grad: validate the index and
 * expert values, then (only if all are valid) pack strided inputs, zero the
 * drop-pad rows nobody writes, and compute token by token. */
#include "ops/grad/grad.h"

static const char OP[] = "aclnnMoeFinalizeRoutingV2Grad";

typedef struct grad_ctx {
    const grad_plan *p;
    const mf_ukernels *uk;
    mf_rows gy, x, bias;
    const uint64_t *seen;
} grad_ctx;

/* gradExpandedX rows and gradScales entries of tokens [r0, r1). */
static void grad_tokens(void *vctx, int64_t r0, int64_t r1) {
    const grad_ctx *c = vctx;
    const grad_plan *p = c->p;
    const int64_t K = p->K, H = p->H;
    const size_t row_bytes = (size_t)H * p->es;
    void (*scale)(const void *, float, void *, size_t) = c->uk->scale[p->dt];
    void (*dot)(const void *, const void *, const void *, size_t, double *) = c->uk->dot[p->dt];
    for (int64_t r = r0; r < r1; r++) {
        const char *g = mf_row(&c->gy, r);
        for (int64_t k = 0; k < K; k++) {
            int64_t i = r * K + k;
            int32_t d = mf_small_i32(&p->idx, i, 0);
            bool kept = d >= 0 && d < p->D0;
            if (!p->has_scales) { /* case 1: copy; gradScales is not written */
                if (kept) memcpy(p->gx + d * (int64_t)row_bytes, g, row_bytes);
                continue;
            }
            if (kept) scale(g, mf_small_f32(&p->scales, r, k), p->gx + d * (int64_t)row_bytes, (size_t)H);
            const char *xr = kept ? mf_row(&c->x, d) : NULL;
            const char *br = p->has_bias ? mf_row(&c->bias, mf_small_i32(&p->eidx, r, k)) : NULL;
            double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if ((xr || br) && H > 0) dot(xr, br, g, (size_t)H, acc);
            mf_store_f64(p->gs + i * (int64_t)mf_dtype_size(p->gs_dtype), p->gs_dtype, mf_reduce8(acc));
        }
    }
}

/* Drop-pad: rows of gradExpandedX that no kept index names become +0.0. */
static void grad_zero_rows(void *vctx, int64_t d0, int64_t d1) {
    const grad_ctx *c = vctx;
    const size_t row_bytes = (size_t)c->p->H * c->p->es;
    for (int64_t d = d0; d < d1; d++)
        if (d >= c->p->bits || !mf_bit(c->seen, d)) memset(c->p->gx + d * (int64_t)row_bytes, 0, row_bytes);
}

aclnnStatus mf_grad_run(const void *vplan, void *workspace) {
    const grad_plan *p = vplan;
    if (p->N == 0) return ACLNN_SUCCESS; /* R = 0 or K = 0: nothing to write */
    char *ws = mf_align64(workspace);
    uint64_t *seen = (uint64_t *)(ws + p->ws_bitmap);
    aclnnStatus rc = mf_check_index(OP, "expandedRowIdx", &p->idx, p->N, 0, p->mode == 1 ? -1 : 0, p->bits, seen);
    if (rc != ACLNN_SUCCESS) return rc;
    if (p->has_bias) {
        rc = mf_check_range_2d(OP, "expertIdxOptional", &p->eidx, p->R, p->K, p->E);
        if (rc != ACLNN_SUCCESS) return rc;
    }

    grad_ctx c = {p, mf_kernels(), p->gy, p->x, p->bias, seen};
    if (p->pack_gy) c.gy = mf_rows_pack(&p->gy, p->H, p->es, ws + p->ws_gy);
    if (p->pack_x) c.x = mf_rows_pack(&p->x, p->H, p->es, ws + p->ws_x);
    if (p->pack_bias) c.bias = mf_rows_pack(&p->bias, p->H, p->es, ws + p->ws_bias);
    if (p->mode == 1 && p->H > 0) mf_parallel_for(p->D0, grad_zero_rows, &c, 4096);
    mf_parallel_for(p->R, grad_tokens, &c, 64);
    return ACLNN_SUCCESS;
}
