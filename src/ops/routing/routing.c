/* routing.c - the row gather and the expert-id reader (routing.h). */
#include "ops/routing/routing.h"

/* Below this many bytes moved, one thread copies. */
#define MF_GATHER_SERIAL_BYTES (256 * 1024)

typedef struct gather_ctx {
    const mf_rows *src;
    const mf_ukernels *uk;
    int64_t H, div;
    size_t es;
    const int32_t *map;
    char *dst;
    int nt;
} gather_ctx;

static void gather_range(void *vctx, int64_t i0, int64_t i1) {
    const gather_ctx *c = vctx;
    const int64_t row_bytes = c->H * (int64_t)c->es;
    const bool dense = mf_rows_dense(c->src, c->H, c->es);
    for (int64_t i = i0; i < i1; i++) {
        char *out = c->dst + i * row_bytes;
        const int32_t m = c->map[i];
        if (m < 0) {
            memset(out, 0, (size_t)row_bytes);
            continue;
        }
        const char *in = mf_row(c->src, m / c->div);
        if (dense) {
            c->uk->copy(out, in, (size_t)row_bytes, c->nt);
        } else {
            for (int64_t h = 0; h < c->H; h++) memcpy(out + h * (int64_t)c->es, in + h * c->src->s_col, c->es);
        }
    }
    if (c->nt) c->uk->fence();
}

void mf_gather_rows(const mf_rows *src, int64_t H, size_t es, const int32_t *map, int64_t div, int64_t n,
                    char *dst) {
    if (n <= 0 || H <= 0) return;
    const int64_t row_bytes = H * (int64_t)es, total = n * row_bytes;
    gather_ctx c = {src, mf_kernels(), H, div, es, map, dst, total > mf_nt_threshold()};
    const int64_t rows_serial = MF_GATHER_SERIAL_BYTES / row_bytes + 1;
    mf_parallel_for(n, gather_range, &c, rows_serial);
}

aclnnStatus mf_read_expert_keys(const char *op, const char *name, const aclTensor *eidx, int64_t N, int64_t K,
                                int64_t hi, uint32_t *key, int64_t *counts, int64_t *max_key) {
    const mf_small v = mf_small_of(eidx);
    const bool wide = eidx->dtype == ACL_INT64;
    int64_t mx = 0;
    if (counts) memset(counts, 0, (size_t)hi * sizeof *counts);
    for (int64_t r = 0; r < N; r++)
        for (int64_t k = 0; k < K; k++) {
            const char *p = mf_small_at(&v, r, k);
            int64_t e;
            if (wide) {
                memcpy(&e, p, 8);
            } else {
                int32_t e32;
                memcpy(&e32, p, 4);
                e = e32;
            }
            if (e < 0 || e >= hi) {
                if (eidx->ndim == 1)
                    return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s[%lld] = %lld is out of range [0, %lld)", op,
                                   name, (long long)r, (long long)e, (long long)hi);
                return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s[%lld][%lld] = %lld is out of range [0, %lld)", op,
                               name, (long long)r, (long long)k, (long long)e, (long long)hi);
            }
            key[r * K + k] = (uint32_t)e;
            if (counts) counts[e]++;
            if (e > mx) mx = e;
        }
    *max_key = mx;
    return ACLNN_SUCCESS;
}
