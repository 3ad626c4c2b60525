/* routing.c - the row gather, the expert-id reader, and the forward and
 * backward cores of the routing operators (routing.h). */
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
    int64_t mx = 0;
    if (counts) memset(counts, 0, (size_t)hi * sizeof *counts);
    for (int64_t r = 0; r < N; r++)
        for (int64_t k = 0; k < K; k++) {
            const int64_t e = mf_small_index(&v, r, k);
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

/* ---- the forward core ---- */

aclnnStatus mf_route_layout(const char *op, mf_route_plan *p, uint64_t used) {
    /* keys, the sorted positions, per-expert counts, the drop/pad
     * destination map, the sort's scratch */
    const int64_t T = p->T;
    const bool counted = p->key_hi != MF_SORT_KEY_MAX;
    p->ws_key = mf_carve(&used, (uint64_t)T * 4);
    p->ws_perm = mf_carve(&used, (uint64_t)T * 4);
    if (counted) {
        if (p->E > (INT64_MAX >> 5))
            return mf_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: workspace for expertNum counts overflows", op);
        p->ws_counts = mf_carve(&used, (uint64_t)p->E * 8);
    }
    if (p->drop_pad) p->ws_map = mf_carve(&used, (uint64_t)(p->E * p->C) * 4);
    p->ws_sort = mf_carve(&used, mf_sort_scratch_bytes(T, counted ? (p->E > 0 ? p->E : 1) : p->key_hi));
    p->ws_bytes = used;
    return ACLNN_SUCCESS;
}

void mf_route_sorted(const mf_route_plan *p, int64_t max_key, const int64_t *counts, const mf_rows *x, char *ex,
                     int32_t *row, int32_t *cnt, int32_t *before, char *ws) {
    const int64_t T = p->T, E = p->E, C = p->C;
    const uint32_t *key = (const uint32_t *)(ws + p->ws_key);
    int32_t *perm = (int32_t *)(ws + p->ws_perm);
    const bool counted = p->key_hi != MF_SORT_KEY_MAX;
    const int64_t key_hi = counted ? (E > 0 ? E : 1) : max_key + 1;
    mf_sort_by_key(key, T, key_hi, perm, ws + p->ws_sort, NULL);
    if (!p->drop_pad) {
        for (int64_t i = 0; i < T; i++) row[perm[i]] = (int32_t)i;
        if (ex) mf_gather_rows(x, p->H, p->es, perm + p->lo, p->K, p->A, ex);
        if (p->count_flag != 0) {
            int64_t run = 0;
            for (int64_t e = 0; e < E; e++) {
                run += counts[e];
                cnt[e] = (int32_t)(p->count_flag == 1 ? run : counts[e]);
            }
        }
        return;
    }
    /* drop/pad: sorted position i of expert e is its slot s = i - start(e) */
    int32_t *map = (int32_t *)(ws + p->ws_map);
    int64_t i = 0;
    for (int64_t e = 0; e < E; e++) {
        const int64_t n = counts[e];
        for (int64_t s = 0; s < n; s++, i++) {
            const int32_t j = perm[i];
            if (s < C) {
                map[e * C + s] = j;
                row[j] = (int32_t)(e * C + s);
            } else {
                row[j] = -1;
            }
        }
        for (int64_t s = n; s < C; s++) map[e * C + s] = -1;
    }
    if (ex) mf_gather_rows(x, p->H, p->es, map, p->K, E * C, ex);
    if (before)
        for (int64_t e = 0; e < E; e++) before[e] = (int32_t)counts[e];
}

/* ---- the backward core ---- */

/* The H elements one pass of a token accumulates (fp32, on the stack). */
#define MF_IRG_TILE 1024
#define MF_IRG_SERIAL_BYTES (256 * 1024)

/* Element i (flat, row-major view order) of an int32 tensor of any rank. */
static inline int32_t flat_i32(const aclTensor *t, const char *base, int64_t i) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->dims[d]) * t->strides[d];
        i /= t->dims[d];
    }
    int32_t v;
    memcpy(&v, base + off * 4, 4);
    return v;
}

typedef struct irg_ctx {
    const mf_route_grad_plan *p;
    mf_rows g;
    const int32_t *idx; /* T values, gathered */
    char *out;
} irg_ctx;

static inline bool kept(const mf_route_grad_plan *p, int32_t d) {
    if (p->ranged) return d >= p->lo && d < p->keep_below;
    if (p->mode == 1) return d != -1;
    return d < p->keep_below;
}

static inline float load(const char *row, int64_t j, int64_t s_col, int dtype) {
    const char *q = row + j * s_col;
    uint16_t h;
    float f;
    switch (dtype) {
    case ACL_FLOAT: memcpy(&f, q, 4); return f;
    case ACL_FLOAT16: memcpy(&h, q, 2); return mf_f16_to_f32(h);
    default: memcpy(&h, q, 2); return mf_bf16_to_f32(h);
    }
}

static void irg_tokens(void *vctx, int64_t r0, int64_t r1) {
    const irg_ctx *c = vctx;
    const mf_route_grad_plan *p = c->p;
    const int64_t H = p->H, K = p->K, es = (int64_t)p->es;
    float acc[MF_IRG_TILE];
    for (int64_t r = r0; r < r1; r++) {
        char *o = c->out + r * H * es;
        for (int64_t h0 = 0; h0 < H; h0 += MF_IRG_TILE) {
            const int64_t n = H - h0 < MF_IRG_TILE ? H - h0 : MF_IRG_TILE;
            bool first = true;
            for (int64_t k = 0; k < K; k++) {
                const int32_t d = c->idx[r * K + k];
                if (!kept(p, d)) continue;
                const char *row = mf_row(&c->g, d - p->lo); /* lo is 0 unless ranged */
                if (first) {
                    for (int64_t j = 0; j < n; j++) acc[j] = load(row, h0 + j, c->g.s_col, p->dtype);
                    first = false;
                } else {
                    for (int64_t j = 0; j < n; j++) acc[j] += load(row, h0 + j, c->g.s_col, p->dtype);
                }
            }
            if (first) {
                memset(o + h0 * es, 0, (size_t)(n * es)); /* no kept term: +0.0 */
                continue;
            }
            for (int64_t j = 0; j < n; j++) mf_store_f64(o + (h0 + j) * es, p->dtype, (double)acc[j]);
        }
    }
}

void mf_route_grad_strict(mf_route_grad_plan *p) {
    p->strict = mf_index_strict();
    p->strict_lo = p->mode == 1 ? -1 : 0;
    p->strict_hi = p->mode == 1 ? p->D0 : p->N * p->K;
}

aclnnStatus mf_route_grad_run(const char *op, const char *idx_name, const mf_route_grad_plan *p, const aclTensor *g,
                              const aclTensor *it, char *out, void *workspace) {
    const char *ib = mf_tensor_base(it);
    const int64_t T = p->N * p->K;
    int32_t *idx = mf_align64(workspace);
    /* the values CANN would read outside g with, before any write */
    for (int64_t i = 0; i < T; i++) {
        int32_t v;
        if (it->ndim == 1) memcpy(&v, ib + i * it->strides[0] * 4, 4);
        else v = flat_i32(it, ib, i);
        idx[i] = v;
        if (!kept(p, v)) continue;
        if (p->ranged && v - p->lo >= p->D0)
            return mf_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s[%lld] = %d is in the range [%lld, %lld) but names row %lld of %lld", op, idx_name,
                           (long long)i, (int)v, (long long)p->lo, (long long)p->keep_below,
                           (long long)(v - p->lo), (long long)p->D0);
        if (!p->ranged && (v < 0 || v >= p->D0)) {
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s[%lld] = %d is out of range [%s, %lld)", op, idx_name,
                           (long long)i, (int)v, p->mode == 1 ? "-1" : "0", (long long)p->D0);
        }
    }
    if (p->strict) { /* the docs' rule, as TokenUnpermute's (the forward core) and the grad core's */
        const int64_t hi = p->strict_hi < ((int64_t)1 << 31) ? p->strict_hi : ((int64_t)1 << 31);
        const mf_small all = {(const char *)idx, 4, 0, ACL_INT32};
        aclnnStatus rc = mf_check_index(op, idx_name, &all, T, 0, p->strict_lo, hi,
                                        (uint64_t *)((char *)idx + mf_route_grad_bitmap_at(p)));
        if (rc != ACLNN_SUCCESS) return rc;
    }
    irg_ctx c = {p, mf_rows_of(g), idx, out};
    const int64_t row_bytes = p->H * (int64_t)p->es * (p->K + 1);
    mf_parallel_for(p->N, irg_tokens, &c, MF_IRG_SERIAL_BYTES / (row_bytes > 0 ? row_bytes : 1) + 1);
    return ACLNN_SUCCESS;
}
