/* run.c - phase 2 of aclnnMoeFinalizeRoutingV2Grad: bind the plan to the
 * executor's tensors, check the values CANN would read out of bounds with
 * (expertIdx; all index values under MOEFR_STRICT=1), find each row's owner
 * (the last entry naming it), then (only if all is valid) pack strided
 * inputs, zero the rows nobody names, and compute in token or row order. */
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "ops/grad/grad.h"
#include "ops/opdef.h"


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
    mf_small idx, scales, eidx;
    char *gx;      /* gradExpandedXOut, D0 rows of H at row stride H */
    char *gs;      /* gradScalesOut, contiguous (R, K) */
    int32_t *own;  /* own[d]: the largest entry i that names kept row d, or -1 */
    _Atomic int64_t named; /* row order: rows with an owner */
    int nt;        /* streaming stores for gradExpandedX */
    int prefetch;  /* software prefetch of the gathered rows */
    int64_t tile;  /* elements per H tile, a multiple of MF_DOT_SPLIT */
} grad_ctx;

/* Kept: a row of gradExpandedX. Every other value is a dropped slot (CANN's
 * kernel skips it), in both modes. */
static inline bool kept_row(const grad_plan *p, int32_t d) { return d >= 0 && d < p->D0; }
static inline int32_t entry(const grad_ctx *c, int64_t i) {
    const int32_t d = mf_small_i32(&c->idx, i, 0);
    if (!c->p->ranged) return d;
    return d >= c->p->lo && d < c->p->hi ? (int32_t)(d - c->p->lo) : -1; /* lo >= 0: fits */
}
/* Entry i writes row d: it is kept and no later entry names d. */
static inline bool owns(const grad_ctx *c, int64_t i, int32_t d) { return kept_row(c->p, d) && c->own[d] == i; }

static void prefetch_token(const grad_ctx *c, int64_t r) {
    const grad_plan *p = c->p;
    const int64_t row_bytes = p->H * (int64_t)p->es;
    for (int64_t k = 0; k < p->K; k++) {
        int32_t d = entry(c, r * p->K + k);
        if (!kept_row(p, d)) continue;
        if (p->has_scales) {
            const char *xr = mf_row(&c->x, d);
            for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(xr + o, 0, 3);
        }
        if (!c->nt) {
            const char *gr = c->gx + d * row_bytes;
            for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(gr + o, 1, 3);
        }
    }
}

/* gradScales entries [r*K + k0, r*K + k1) and the gradExpandedX rows they
 * own: each gradY tile is read once and reused by every slot of the group. */
static void token_slots(const grad_ctx *c, int64_t r, const char *g, int64_t k0, int64_t k1) {
    const grad_plan *p = c->p;
    const int64_t H = p->H, es = (int64_t)p->es, row_bytes = H * es;
    void (*sd)(const void *, float, void *, const void *, const void *, size_t, double *, int) =
        c->uk->scale_dot[p->dt];
    /* Owning slots first (they go through the multi-slot kernel, MF_MULTI at
     * a time, and write their rows), then the slots that only owe a sum: kept
     * rows a later entry overwrites, and dropped slots with a bias. slot[]
     * maps back; xr[] is NULL for a dropped slot. */
    void *out[MF_KMAX];
    const void *xr[MF_KMAX], *br[MF_KMAX];
    float s[MF_KMAX];
    double acc[MF_KMAX][8];
    int slot[MF_KMAX], nown = 0, nsum = 0;
    const int64_t nk = k1 - k0, i0 = r * p->K + k0;
    for (int64_t q = 0; q < nk; q++) {
        const int32_t d = entry(c, i0 + q);
        if (!owns(c, i0 + q, d)) continue;
        out[nown] = c->gx + d * row_bytes;
        xr[nown] = mf_row(&c->x, d);
        slot[nown++] = (int)q;
    }
    for (int64_t q = 0, m = 0; q < nk; q++) {
        if (m < nown && slot[m] == (int)q) { m++; continue; }
        const int32_t d = entry(c, i0 + q);
        if (!kept_row(p, d) && !p->has_bias) continue; /* an empty sum */
        xr[nown + nsum] = kept_row(p, d) ? mf_row(&c->x, d) : NULL;
        slot[nown + nsum++] = (int)q;
    }
    const int nslots = nown + nsum;
    for (int i = 0; i < nslots; i++) {
        s[i] = mf_small_f32(&c->scales, r, k0 + slot[i]);
        br[i] = p->has_bias ? mf_row(&c->bias, mf_small_i32(&c->eidx, r, k0 + slot[i])) : NULL;
        memset(acc[i], 0, sizeof acc[i]);
    }
    void *mo[MF_KMAX];
    const void *mx[MF_KMAX], *mb[MF_KMAX];
    for (int64_t j0 = 0; j0 < H; j0 += c->tile) {
        const int64_t n = H - j0 < c->tile ? H - j0 : c->tile, off = j0 * es;
        void *const *po = out;
        const void *const *px = xr, *const *pb = br;
        if (off) { /* later tiles: the same rows, further in */
            for (int i = 0; i < nown; i++) mo[i] = (char *)out[i] + off;
            for (int i = 0; i < nslots; i++) mx[i] = xr[i] ? (const char *)xr[i] + off : NULL;
            for (int i = 0; p->has_bias && i < nslots; i++) mb[i] = (const char *)br[i] + off;
            po = mo, px = mx, pb = mb;
        }
        for (int k = 0; k < nown; k += MF_MULTI)
            c->uk->scale_dot_multi[p->dt](g + off, (size_t)n, nown - k < MF_MULTI ? nown - k : MF_MULTI, s + k,
                                          po + k, px + k, p->has_bias ? pb + k : NULL, acc + k, c->nt);
        for (int i = nown; i < nslots; i++)
            sd(g + off, s[i], NULL, px[i], p->has_bias ? pb[i] : NULL, (size_t)n, acc[i], c->nt);
    }
    const int64_t gs_es = (int64_t)mf_dtype_size(p->gs_dtype);
    char *gs = c->gs + i0 * gs_es;
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
                const int32_t d = entry(c, r * K + k);
                if (owns(c, r * K + k, d)) c->uk->copy(c->gx + d * row_bytes, g, (size_t)row_bytes, c->nt);
            }
            continue;
        }
        for (int64_t k0 = 0; k0 < K; k0 += MF_KMAX) token_slots(c, r, g, k0, K - k0 < MF_KMAX ? K : k0 + MF_KMAX);
    }
    if (c->nt) c->uk->fence(); /* streaming stores land before the pool's join */
}

/* ---- row owners ----
 * Several kept entries may name one row (CANN's tests make such indices; on
 * the NPU they race). The row gets the value of the last of them, the
 * largest i, on every path: own[d] is that i, found as a maximum, which no
 * thread interleaving changes. */
static void own_clear(void *vctx, int64_t d0, int64_t d1) {
    const grad_ctx *c = vctx;
    memset(c->own + d0, 0xff, (size_t)(d1 - d0) * 4); /* -1: no owner */
}

static void own_claim(void *vctx, int64_t i0, int64_t i1) {
    const grad_ctx *c = vctx;
    _Atomic int32_t *own = (_Atomic int32_t *)c->own;
    for (int64_t i = i0; i < i1; i++) {
        const int32_t d = entry(c, i);
        if (!kept_row(c->p, d)) continue;
        int32_t cur = atomic_load_explicit(&own[d], memory_order_relaxed);
        while (cur < (int32_t)i &&
               !atomic_compare_exchange_weak_explicit(&own[d], &cur, (int32_t)i, memory_order_relaxed,
                                                      memory_order_relaxed)) {
        }
    }
}

/* Row d of gradExpandedX has an owner (rows past int32's reach never do). */
static inline bool named_row(const grad_ctx *c, int64_t d) { return d < c->p->rows && c->own[d] >= 0; }

/* Rows of gradExpandedX that no kept entry names become +0.0 (both modes). */
static void grad_zero_rows(void *vctx, int64_t d0, int64_t d1) {
    const grad_ctx *c = vctx;
    const size_t row_bytes = (size_t)c->p->H * c->p->es;
    for (int64_t d = d0; d < d1; d++)
        if (!named_row(c, d)) memset(c->gx + d * (int64_t)row_bytes, 0, row_bytes);
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
    for (int m = 0; m < t->q; m++) mf_store_f64(c->gs + t->at[m] * gs_es, p->gs_dtype, mf_reduce8(t->acc[m]));
    t->q = 0;
}

/* gradExpandedX rows [d0, d1), their owners' gradScales entries, +0.0 for
 * rows nobody names. Named rows go to the kernel MF_ROWS at a time. */
static void grad_rows(void *vctx, int64_t d0, int64_t d1) {
    grad_ctx *c = vctx;
    const grad_plan *p = c->p;
    const int64_t K = p->K, row_bytes = p->H * (int64_t)p->es, gs_es = (int64_t)mf_dtype_size(p->gs_dtype);
    row_batch t;
    t.q = 0;
    int64_t named = 0;
    const uint64_t M = div_magic(K);
    for (int64_t d = d0; d < d1; d++) {
        /* the gradY row, scale and gradScales entry of a row further on */
        const int64_t ahead = d + MF_BY_ROW_PREFETCH;
        if (ahead < d1 && named_row(c, ahead)) {
            const int64_t ia = c->own[ahead], ra = div_by(ia, M, K), ka = ia - ra * K;
            const char *gr = mf_row(&c->gy, ra);
            for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(gr + o, 0, 3);
            if (p->has_scales) {
                __builtin_prefetch(mf_small_at(&c->scales, ra, ka), 0, 3);
                __builtin_prefetch(c->gs + ia * gs_es, 1, 3);
                if (p->has_bias) __builtin_prefetch(mf_small_at(&c->eidx, ra, ka), 0, 3);
            }
        }
        char *o = c->gx + d * row_bytes;
        if (!named_row(c, d)) {
            memset(o, 0, (size_t)row_bytes);
            continue;
        }
        named++;
        const int64_t i = c->own[d], r = div_by(i, M, K), k = i - r * K;
        if (!p->has_scales) {
            c->uk->copy(o, mf_row(&c->gy, r), (size_t)row_bytes, c->nt);
            continue;
        }
        const int q = t.q++;
        t.g[q] = mf_row(&c->gy, r);
        t.x[q] = mf_row(&c->x, d);
        t.b[q] = p->has_bias ? mf_row(&c->bias, mf_small_i32(&c->eidx, r, k)) : NULL;
        t.out[q] = o;
        t.s[q] = mf_small_f32(&c->scales, r, k);
        memset(t.acc[q], 0, sizeof t.acc[q]);
        t.at[q] = i;
        if (t.q == MF_ROWS) flush_rows(c, &t, gs_es);
    }
    flush_rows(c, &t, gs_es);
    if (c->nt) c->uk->fence();
    atomic_fetch_add_explicit(&c->named, named, memory_order_relaxed);
}

/* Row order: gradScales of the entries of tokens [r0, r1) that own no row
 * (dropped, or overwritten by a later entry): the same sum, or 0. */
static void grad_unowned(void *vctx, int64_t r0, int64_t r1) {
    const grad_ctx *c = vctx;
    const grad_plan *p = c->p;
    const int64_t K = p->K, gs_es = (int64_t)mf_dtype_size(p->gs_dtype);
    for (int64_t r = r0; r < r1; r++)
        for (int64_t k = 0; k < K; k++) {
            const int64_t i = r * K + k;
            const int32_t d = entry(c, i);
            if (owns(c, i, d)) continue;
            double acc[8] = {0};
            const void *x = kept_row(p, d) ? mf_row(&c->x, d) : NULL;
            const void *b = p->has_bias ? mf_row(&c->bias, mf_small_i32(&c->eidx, r, k)) : NULL;
            if (x || b) c->uk->dot[p->dt](x, b, mf_row(&c->gy, r), (size_t)p->H, acc);
            mf_store_f64(c->gs + i * gs_es, p->gs_dtype, mf_reduce8(acc));
        }
}

/* MOEFR_STRICT=1: CANN's documented index rules, which its kernel does not
 * enforce: every value in [-1, R*K) (mode 0) or [-1, E*C) (mode 1), no value
 * but -1 twice; TokenUnpermuteGrad's docs: [0, R*K). */
static aclnnStatus check_strict(const grad_ctx *c, void *ws) {
    const grad_plan *p = c->p;
    const int64_t bits = p->strict_hi < ((int64_t)1 << 31) ? p->strict_hi : ((int64_t)1 << 31);
    return mf_check_index(p->op, p->idx_name, &c->idx, p->N, 0, p->strict_no_neg ? 0 : -1, bits, (uint64_t *)ws);
}

aclnnStatus mf_grad_run(const void *vplan, const aclTensor *const *slots, void *workspace) {
    const grad_plan *p = vplan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *t[G_NT]; /* by role */
    mf_by_role(p->at, G_NT, slots, NULL, t, NULL);
    aclnnStatus rc = mf_isa_check(p->op);
    if (rc != ACLNN_SUCCESS) return rc;
    /* MOEFR_LOG_LEVEL=debug reports what the value checks cost (SPEC: phase 2
     * validates everything before it writes; the issue caps that at 3 %). */
    const bool timed = mf_log_level() >= MF_LOG_DEBUG;
    struct timespec t0, t1, t2;
    if (timed) clock_gettime(CLOCK_MONOTONIC, &t0);
    char *ws = mf_align64(workspace);
    grad_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.uk = mf_kernels();
    c.gy = mf_rows_of(t[G_GY]);
    c.idx = mf_small_of(t[G_IDX]);
    if (p->has_scales) {
        c.x = mf_rows_of(t[G_X]);
        c.scales = mf_small_of(t[G_SCALES]);
        c.gs = mf_tensor_base(t[G_GS]);
    }
    if (p->has_bias) {
        c.bias = mf_rows_of(t[G_BIAS]);
        c.eidx = mf_small_of(t[G_EIDX]);
    }
    c.gx = mf_tensor_base(t[G_GX]);
    for (int64_t i = 0; p->ranged && i < p->N; i++) { /* CANN reads and writes row d - lo unchecked */
        const int32_t d = entry(&c, i);
        if (d >= p->D0)
            return mf_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s[%lld] = %lld is in the range [%lld, %lld) but names row %d of %lld", p->op,
                           p->idx_name, (long long)i, (long long)(d + p->lo), (long long)p->lo, (long long)p->hi,
                           (int)d, (long long)p->D0);
    }
    if (p->strict && !p->ranged && p->N > 0) {
        rc = check_strict(&c, ws + p->ws_bitmap);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    for (int64_t i = 0; p->neg_error && i < p->N; i++) {
        const int32_t d = entry(&c, i);
        if (d < 0)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s[%lld] = %d is negative (rows at or past %lld drop a slot)",
                           p->op, p->idx_name, (long long)i, (int)d, (long long)p->D0);
    }
    if (p->has_bias) { /* CANN reads bias[expertIdx] unchecked, for dropped slots too */
        rc = mf_check_range_2d(p->op, "expertIdxOptional", &c.eidx, p->R, p->K, p->E);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    /* From here on every value read is in bounds: outputs may be written. */
    if (timed) clock_gettime(CLOCK_MONOTONIC, &t1);

    const int64_t es = (int64_t)p->es, row_bytes = p->H * es, gs_es = (int64_t)mf_dtype_size(p->gs_dtype);
    if (p->H == 0) { /* no rows to write; every sum is empty */
        for (int64_t i = 0; p->has_scales && i < p->N; i++) mf_store_f64(c.gs + i * gs_es, p->gs_dtype, 0.0);
        return ACLNN_SUCCESS;
    }
    if (p->N == 0) { /* no entries: every row is unnamed */
        if (p->D0 > 0) memset(c.gx, 0, (size_t)(p->D0 * row_bytes));
        return ACLNN_SUCCESS;
    }
    c.nt = p->D0 * row_bytes >= mf_nt_threshold();
    c.prefetch = row_bytes <= MF_PREFETCH_ROW_BYTES && p->N * row_bytes >= mf_nt_threshold() / 4;
    c.tile = (MF_TILE_BYTES / es) & ~(int64_t)(MF_DOT_SPLIT - 1); /* gradScales blocks never straddle tiles */
    c.own = (int32_t *)(ws + p->ws_owner);
    mf_parallel_for(p->rows, own_clear, &c, MF_SERIAL_BYTES / 4 + 1);
    mf_parallel_for(p->N, own_claim, &c, MF_SERIAL_BYTES / 4 + 1);
    if (p->pack_gy) c.gy = mf_rows_pack(&c.gy, p->H, p->es, ws + p->ws_gy);
    if (p->pack_x) c.x = mf_rows_pack(&c.x, p->H, p->es, ws + p->ws_x);
    if (p->pack_bias) c.bias = mf_rows_pack(&c.bias, p->H, p->es, ws + p->ws_bias);
    if (p->by_row) {
        /* bytes one row moves: its gradY row, an expandedX row in, a row out */
        mf_parallel_for(p->D0, grad_rows, &c, MF_SERIAL_BYTES / (3 * row_bytes) + 1);
        if (p->has_scales && atomic_load(&c.named) < p->N)
            mf_parallel_for(p->R, grad_unowned, &c, MF_SERIAL_BYTES / (row_bytes + 4 * p->K) + 1);
    } else {
        mf_parallel_for(p->D0, grad_zero_rows, &c, MF_SERIAL_BYTES / row_bytes + 1);
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
               p->op, (long long)p->R, (long long)p->K, (long long)p->H, v, all, all > 0 ? 100.0 * v / all : 0.0,
               c.uk->isa, c.nt, c.prefetch, (int)p->by_row);
    }
    return ACLNN_SUCCESS;
}
