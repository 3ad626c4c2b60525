/* run.c - phase 2 of aclnnMoeFinalizeRoutingV2Grad: validate the index and
 * expert values, then (only if all are valid) pack strided inputs, zero the
 * drop-pad rows nobody writes, and compute token by token in one pass. */
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "ops/grad/grad.h"

static const char OP[] = "aclnnMoeFinalizeRoutingV2Grad";

/* A tile of gradY stays in L1 while the K slots of its token stream past it. */
#define MF_TILE_BYTES 8192
/* K slots handled per sweep over a token's H tiles (more are done in groups). */
#define MF_KMAX 32
/* Below this many bytes moved, waking workers costs more than it saves. */
#define MF_SERIAL_BYTES (256 * 1024)
/* Rows at most this wide get their gathered expandedX rows prefetched. */
#define MF_PREFETCH_ROW_BYTES 2048
#define MF_PREFETCH_TOKENS 2

typedef struct grad_ctx {
    const grad_plan *p;
    const mf_ukernels *uk;
    mf_rows gy, x, bias;
    const uint64_t *seen;
    int32_t *inv; /* by_row: inv[d] = the entry i that names kept row d */
    int nt;       /* streaming stores for gradExpandedX */
    int prefetch; /* software prefetch of the gathered rows */
    int64_t tile; /* elements per H tile, a multiple of 32 */
} grad_ctx;

static inline bool kept_row(const grad_plan *p, int32_t d) { return d >= 0 && d < p->D0; }

static void prefetch_token(const grad_ctx *c, int64_t r) {
    const grad_plan *p = c->p;
    const int64_t row_bytes = p->H * (int64_t)p->es;
    for (int64_t k = 0; k < p->K; k++) {
        int32_t d = mf_small_i32(&p->idx, r * p->K + k, 0);
        if (!kept_row(p, d)) continue;
        if (p->has_scales) {
            const char *xr = mf_row(&c->x, d);
            for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(xr + o, 0, 3);
        }
        if (!c->nt) {
            const char *gr = p->gx + d * row_bytes;
            for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(gr + o, 1, 3);
        }
    }
}

/* gradScales entries [r*K + k0, r*K + k1) and their gradExpandedX rows: each
 * gradY tile is read once and reused by every slot of the group. */
static void token_slots(const grad_ctx *c, int64_t r, const char *g, int64_t k0, int64_t k1) {
    const grad_plan *p = c->p;
    const int64_t H = p->H, es = (int64_t)p->es, row_bytes = H * es;
    void (*sd)(const void *, float, void *, const void *, const void *, size_t, double *, int) =
        c->uk->scale_dot[p->dt];
    /* Kept slots first (they go through the multi-slot kernel, MF_MULTI at a
     * time), then dropped slots that still owe a bias dot; slot[] maps back. */
    void *out[MF_KMAX];
    const void *xr[MF_KMAX], *br[MF_KMAX];
    float s[MF_KMAX];
    double acc[MF_KMAX][8];
    int slot[MF_KMAX], nkept = 0, ndrop = 0;
    const int64_t nk = k1 - k0;
    for (int64_t q = 0; q < nk; q++) {
        int32_t d = mf_small_i32(&p->idx, r * p->K + k0 + q, 0);
        if (!kept_row(p, d)) continue;
        out[nkept] = p->gx + d * row_bytes;
        xr[nkept] = mf_row(&c->x, d);
        slot[nkept++] = (int)q;
    }
    if (p->has_bias) /* dropped slots, after the kept ones */
        for (int64_t q = 0, m = 0; q < nk; q++) {
            if (m < nkept && slot[m] == (int)q) { m++; continue; }
            slot[nkept + ndrop++] = (int)q;
        }
    const int nslots = nkept + ndrop;
    for (int i = 0; i < nslots; i++) {
        s[i] = mf_small_f32(&p->scales, r, k0 + slot[i]);
        br[i] = p->has_bias ? mf_row(&c->bias, mf_small_i32(&p->eidx, r, k0 + slot[i])) : NULL;
        memset(acc[i], 0, sizeof acc[i]);
    }
    void *mo[MF_KMAX];
    const void *mx[MF_KMAX], *mb[MF_KMAX];
    for (int64_t j0 = 0; j0 < H; j0 += c->tile) {
        const int64_t n = H - j0 < c->tile ? H - j0 : c->tile, off = j0 * es;
        void *const *po = out;
        const void *const *px = xr, *const *pb = br;
        if (off) { /* later tiles: the same rows, further in */
            for (int i = 0; i < nkept; i++) mo[i] = (char *)out[i] + off, mx[i] = (const char *)xr[i] + off;
            for (int i = 0; p->has_bias && i < nslots; i++) mb[i] = (const char *)br[i] + off;
            po = mo, px = mx, pb = mb;
        }
        for (int k = 0; k < nkept; k += MF_MULTI)
            c->uk->scale_dot_multi[p->dt](g + off, (size_t)n, nkept - k < MF_MULTI ? nkept - k : MF_MULTI, s + k,
                                          po + k, px + k, p->has_bias ? pb + k : NULL, acc + k, c->nt);
        for (int i = nkept; i < nslots; i++) sd(g + off, s[i], NULL, NULL, pb[i], (size_t)n, acc[i], c->nt);
    }
    const int64_t gs_es = (int64_t)mf_dtype_size(p->gs_dtype);
    char *gs = p->gs + (r * p->K + k0) * gs_es;
    if (nslots < nk) /* dropped slots without bias: empty sums */
        for (int64_t q = 0; q < nk; q++) mf_store_f64(gs + q * gs_es, p->gs_dtype, 0.0);
    for (int i = 0; i < nslots; i++) mf_store_f64(gs + slot[i] * gs_es, p->gs_dtype, mf_reduce8(acc[i]));
}

/* gradExpandedX rows and gradScales entries of tokens [r0, r1). */
static void grad_tokens(void *vctx, int64_t r0, int64_t r1) {
    const grad_ctx *c = vctx;
    const grad_plan *p = c->p;
    const int64_t K = p->K, row_bytes = p->H * (int64_t)p->es;
    if (c->prefetch)
        for (int64_t r = r0; r < r0 + MF_PREFETCH_TOKENS && r < r1; r++) prefetch_token(c, r);
    for (int64_t r = r0; r < r1; r++) {
        if (c->prefetch && r + MF_PREFETCH_TOKENS < r1) prefetch_token(c, r + MF_PREFETCH_TOKENS);
        const char *g = mf_row(&c->gy, r);
        if (!p->has_scales) { /* case 1: copy; gradScales is not written */
            for (int64_t k = 0; k < K; k++) {
                int32_t d = mf_small_i32(&p->idx, r * K + k, 0);
                if (kept_row(p, d)) c->uk->copy(p->gx + d * row_bytes, g, (size_t)row_bytes, c->nt);
            }
            continue;
        }
        for (int64_t k0 = 0; k0 < K; k0 += MF_KMAX) token_slots(c, r, g, k0, K - k0 < MF_KMAX ? K : k0 + MF_KMAX);
    }
    if (c->nt) c->uk->fence(); /* streaming stores land before the pool's join */
}

/* ---- row order (p->by_row): narrow rows, larger than the caches ----
 * Token order writes K random rows per token; with rows this narrow those
 * scattered writes, not the bytes, set the pace. Walking gradExpandedX in
 * row order instead writes it (and reads expandedX) sequentially and gathers
 * gradY rows. Every value comes from the same arithmetic as in token order
 * (scale_dot_rows promises scale_dot's bits, as scale_dot_multi does), so
 * the bits are the same. */

/* Rows of gradY gathered this many output rows ahead. */
#define MF_BY_ROW_PREFETCH 8

/* inv[d] = i for the kept entries i in [i0, i1): distinct d, as checked. */
static void grad_invert(void *vctx, int64_t i0, int64_t i1) {
    const grad_ctx *c = vctx;
    for (int64_t i = i0; i < i1; i++) {
        int32_t d = mf_small_i32(&c->p->idx, i, 0);
        if (kept_row(c->p, d)) c->inv[d] = (int32_t)i;
    }
}

/* Whether row d of gradExpandedX is named by a kept entry (then inv[d] is
 * set). In mode 0 the index is a permutation of [0, N), so every row is. */
static inline bool named_row(const grad_ctx *c, int64_t d) {
    return c->p->mode == 0 || (d < c->p->bits && mf_bit(c->seen, d));
}

/* i / K for 0 <= i < 2^32 without a divide: with M = floor((2^64 - 1) / K) + 1,
 * floor(i * M / 2^64) = floor(i / K) for every 32-bit i and 2 <= K < 2^32
 * (Lemire et al., "Faster remainder by direct computation", 2019); K = 1
 * would make M wrap to 0, so it is its own case. */
#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 mf_u128;
static inline uint64_t div_magic(int64_t K) { return K > 1 ? UINT64_MAX / (uint64_t)K + 1 : 0; }
static inline int64_t div_by(int64_t i, uint64_t M, int64_t K) {
    if (K == 1) return i;
    return (int64_t)(((mf_u128)(uint64_t)i * M) >> 64);
}
#else
static inline uint64_t div_magic(int64_t K) { return (uint64_t)K; }
static inline int64_t div_by(int64_t i, uint64_t M, int64_t K) { (void)M; return i / K; }
#endif

/* Up to MF_ROWS named rows waiting for one scale_dot_rows call. */
typedef struct row_batch {
    const void *g[MF_ROWS], *x[MF_ROWS], *b[MF_ROWS];
    void *out[MF_ROWS];
    float s[MF_ROWS];
    double acc[MF_ROWS][8];
    int64_t at[MF_ROWS]; /* their gradScales entries */
    int q;
} row_batch;

static void flush_rows(const grad_ctx *c, row_batch *t, int64_t gs_es) {
    const grad_plan *p = c->p;
    if (t->q == 0) return;
    c->uk->scale_dot_rows[p->dt]((size_t)p->H, t->q, t->g, t->s, t->out, t->x, p->has_bias ? t->b : NULL, t->acc,
                                 c->nt);
    for (int m = 0; m < t->q; m++) mf_store_f64(p->gs + t->at[m] * gs_es, p->gs_dtype, mf_reduce8(t->acc[m]));
    t->q = 0;
}

/* gradExpandedX rows [d0, d1), their gradScales entries, +0.0 for rows nobody
 * names. Named rows go to the kernel MF_ROWS at a time. */
static void grad_rows(void *vctx, int64_t d0, int64_t d1) {
    const grad_ctx *c = vctx;
    const grad_plan *p = c->p;
    const int64_t K = p->K, row_bytes = p->H * (int64_t)p->es, gs_es = (int64_t)mf_dtype_size(p->gs_dtype);
    row_batch t;
    t.q = 0;
    const uint64_t M = div_magic(K);
    for (int64_t d = d0; d < d1; d++) {
        /* the gradY row, scale and gradScales entry of a row further on */
        const int64_t ahead = d + MF_BY_ROW_PREFETCH;
        if (ahead < d1 && named_row(c, ahead)) {
            const int64_t ia = c->inv[ahead], ra = div_by(ia, M, K), ka = ia - ra * K;
            const char *gr = mf_row(&c->gy, ra);
            for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(gr + o, 0, 3);
            if (p->has_scales) {
                __builtin_prefetch(mf_small_at(&p->scales, ra, ka), 0, 3);
                __builtin_prefetch(p->gs + ia * gs_es, 1, 3);
                if (p->has_bias) __builtin_prefetch(mf_small_at(&p->eidx, ra, ka), 0, 3);
            }
        }
        char *o = p->gx + d * row_bytes;
        if (!named_row(c, d)) {
            memset(o, 0, (size_t)row_bytes);
            continue;
        }
        const int64_t i = c->inv[d], r = div_by(i, M, K), k = i - r * K;
        if (!p->has_scales) {
            c->uk->copy(o, mf_row(&c->gy, r), (size_t)row_bytes, c->nt);
            continue;
        }
        const int q = t.q++;
        t.g[q] = mf_row(&c->gy, r);
        t.x[q] = mf_row(&c->x, d);
        t.b[q] = p->has_bias ? mf_row(&c->bias, mf_small_i32(&p->eidx, r, k)) : NULL;
        t.out[q] = o;
        t.s[q] = mf_small_f32(&p->scales, r, k);
        memset(t.acc[q], 0, sizeof t.acc[q]);
        t.at[q] = i;
        if (t.q == MF_ROWS) flush_rows(c, &t, gs_es);
    }
    flush_rows(c, &t, gs_es);
    if (c->nt) c->uk->fence();
}

/* gradScales of the dropped entries of tokens [r0, r1): a bias dot, or 0. */
static void grad_dropped(void *vctx, int64_t r0, int64_t r1) {
    const grad_ctx *c = vctx;
    const grad_plan *p = c->p;
    const int64_t K = p->K, gs_es = (int64_t)mf_dtype_size(p->gs_dtype);
    for (int64_t r = r0; r < r1; r++)
        for (int64_t k = 0; k < K; k++) {
            if (kept_row(p, mf_small_i32(&p->idx, r * K + k, 0))) continue;
            double acc[8] = {0};
            if (p->has_bias)
                c->uk->dot[p->dt](NULL, mf_row(&c->bias, mf_small_i32(&p->eidx, r, k)), mf_row(&c->gy, r),
                                  (size_t)p->H, acc);
            mf_store_f64(p->gs + (r * K + k) * gs_es, p->gs_dtype, mf_reduce8(acc));
        }
}

/* Drop-pad: rows of gradExpandedX that no kept index names become +0.0. */
static void grad_zero_rows(void *vctx, int64_t d0, int64_t d1) {
    const grad_ctx *c = vctx;
    const size_t row_bytes = (size_t)c->p->H * c->p->es;
    for (int64_t d = d0; d < d1; d++)
        if (!named_row(c, d)) memset(c->p->gx + d * (int64_t)row_bytes, 0, row_bytes);
}

aclnnStatus mf_grad_run(const void *vplan, void *workspace) {
    const grad_plan *p = vplan;
    aclnnStatus rc = mf_isa_check(OP);
    if (rc != ACLNN_SUCCESS) return rc;
    if (p->N == 0) { /* R = 0 writes nothing; K = 0 names no drop-pad row, so all are +0.0 */
        if (p->mode == 1 && p->R > 0) memset(p->gx, 0, (size_t)(p->D0 * p->H) * p->es);
        return ACLNN_SUCCESS;
    }
    /* MOEFR_LOG_LEVEL=debug reports what the value checks cost (SPEC: phase 2
     * validates everything before it writes; the issue caps that at 3 %). */
    const bool timed = mf_log_level() >= MF_LOG_DEBUG;
    struct timespec t0, t1, t2;
    if (timed) clock_gettime(CLOCK_MONOTONIC, &t0);
    char *ws = mf_align64(workspace);
    uint64_t *seen = (uint64_t *)(ws + p->ws_bitmap);
    rc = mf_check_index(OP, "expandedRowIdx", &p->idx, p->N, 0, p->mode == 1 ? -1 : 0, p->bits, seen);
    if (rc != ACLNN_SUCCESS) return rc;
    if (p->has_bias) {
        rc = mf_check_range_2d(OP, "expertIdxOptional", &p->eidx, p->R, p->K, p->E);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    /* From here on every input value is valid: outputs may be written. */
    if (timed) clock_gettime(CLOCK_MONOTONIC, &t1);

    const int64_t es = (int64_t)p->es, row_bytes = p->H * es;
    grad_ctx c = {p, mf_kernels(), p->gy, p->x, p->bias, seen, NULL, 0, 0, 0};
    c.nt = p->D0 * row_bytes >= mf_nt_threshold();
    c.prefetch = p->H > 0 && row_bytes <= MF_PREFETCH_ROW_BYTES && p->N * row_bytes >= mf_nt_threshold() / 4;
    c.tile = (MF_TILE_BYTES / es) & ~(int64_t)31;
    if (p->pack_gy) c.gy = mf_rows_pack(&p->gy, p->H, p->es, ws + p->ws_gy);
    if (p->pack_x) c.x = mf_rows_pack(&p->x, p->H, p->es, ws + p->ws_x);
    if (p->pack_bias) c.bias = mf_rows_pack(&p->bias, p->H, p->es, ws + p->ws_bias);
    if (p->by_row) { /* by_row implies H > 0 and N > 0 */
        c.inv = (int32_t *)(ws + p->ws_inv);
        mf_parallel_for(p->N, grad_invert, &c, MF_SERIAL_BYTES / 4 + 1);
        /* bytes one row moves: its gradY row, an expandedX row in, a row out */
        mf_parallel_for(p->D0, grad_rows, &c, MF_SERIAL_BYTES / (3 * row_bytes) + 1);
        if (p->has_scales && (p->mode == 1 || p->D0 < p->N))
            mf_parallel_for(p->R, grad_dropped, &c, MF_SERIAL_BYTES / (row_bytes + 4 * p->K) + 1);
    } else {
        if (p->mode == 1 && p->H > 0)
            mf_parallel_for(p->D0, grad_zero_rows, &c, MF_SERIAL_BYTES / (row_bytes > 0 ? row_bytes : 1) + 1);
        /* bytes one token moves: its gradY row, K rows in and K rows out */
        const int64_t token_bytes = row_bytes * (1 + 2 * p->K) + 8 * p->K;
        mf_parallel_for(p->R, grad_tokens, &c, MF_SERIAL_BYTES / token_bytes + 1);
    }
    if (timed) {
        clock_gettime(CLOCK_MONOTONIC, &t2);
        double v = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
        double all = (double)(t2.tv_sec - t0.tv_sec) * 1e3 + (double)(t2.tv_nsec - t0.tv_nsec) * 1e-6;
        mf_log(MF_LOG_DEBUG, "%s: R=%lld K=%lld H=%lld: value checks %.3f ms of %.3f ms (%.2f %%), %s, nt=%d, "
               "prefetch=%d, by_row=%d",
               OP, (long long)p->R, (long long)p->K, (long long)p->H, v, all, all > 0 ? 100.0 * v / all : 0.0,
               c.uk->isa, c.nt, c.prefetch, (int)p->by_row);
    }
    return ACLNN_SUCCESS;
}
