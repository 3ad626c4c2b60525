/* gating_top_k_softmax.c - aclnnMoeGatingTopKSoftmax and
 * aclnnMoeGatingTopKSoftmaxV2, both phases: one row routine behind two front
 * ends.
 *
 * Phase 1: the definition tables (moe_gating_top_k_softmax(_v2)_def.cpp),
 * then the checks of moe_gating_top_k_softmax(_v2)_tiling_base.cpp
 * (GetShapeAttrsInfo, CheckInShape, CheckOutShape, CheckOptionalAttr) in
 * their order, then Ascend 950's DoOpTiling bound (V1: E <= 2048).
 *
 * Phase 2, one row r at a time, parallel over rows, all in fp32 with a fixed
 * order of operations (no FMA, no kernel layer, no libm), so the bits do not
 * depend on MOEFR_ISA, the thread count or the machine:
 *   v[e] = x[r][e] widened exactly; m = max over e (exact in any order);
 *   u[e] = exp(v[e] - m) (gt_exp4 below); s = sum of u in 8 interleaved
 *   partial sums (lane e % 8), combined pairwise; p[e] = u[e] / s; a NaN p
 *   becomes the one quiet NaN 0x7FC00000.
 *   Top-k: the k largest p by (value descending, expert ascending);
 *   -0 counts as +0 and NaN as the largest value.
 * renorm 1 (V2): the top-k of v itself, then the same softmax over those k. */
#include <math.h>

#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

static const char OP1[] = "aclnnMoeGatingTopKSoftmax";
static const char OP2[] = "aclnnMoeGatingTopKSoftmaxV2";
#define TILING ACLNN_ERR_INNER_TILING_ERROR

#define GT_MAX_K 1024
#define GT_MAX_E_950 2048      /* moe_gating_top_k_softmax_tiling_arch35.cpp, DoOpTiling */
#define GT_STACK_E 2048        /* rows up to this many experts use a stack buffer */
#define GT_INSERT_K 32         /* k up to this: insertion into a sorted list; above: a heap */
#define GT_SERIAL_ELEMS 16384  /* below this many x elements, one thread */

/* ---- the definition tables ---- */
enum { V1_X, V1_FIN, V1_Y, V1_EIDX, V1_RIDX, V1_NT };
static const char *const NAMES1[V1_NT] = {"x", "finishedOptional", "yOut", "expertIdxOut", "rowIdxOut"};
static const unsigned FLAGS1[V1_NT] = {MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG,
                                       MF_T_REQUIRED | MF_T_CONTIG};
/* moe_gating_top_k_softmax_def.cpp: one table for ascend910b, ascend910_93
 * and ascend910_95 (x, finished, y, expert_idx, row_idx). */
static const mf_dtcol COLS1[] = {{ACL_FLOAT16, ACL_BOOL, ACL_FLOAT16, ACL_INT32, ACL_INT32},
                                 {ACL_FLOAT, ACL_BOOL, ACL_FLOAT, ACL_INT32, ACL_INT32},
                                 {ACL_BF16, ACL_BOOL, ACL_BF16, ACL_INT32, ACL_INT32}};
static const mf_op_def DEF1 = {OP1, MF_OP_GATING_TOP_K_SOFTMAX, 2, 3, NAMES1, FLAGS1, COLS1, 3, COLS1, 3};

enum { V2_X, V2_FIN, V2_Y, V2_EIDX, V2_SM, V2_NT };
static const char *const NAMES2[V2_NT] = {"x", "finishedOptional", "yOut", "expertIdxOut",
                                          "softmaxResultOutOptional"};
static const unsigned FLAGS2[V2_NT] = {MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG,
                                       MF_T_CONTIG};
/* moe_gating_top_k_softmax_v2_def.cpp: the same columns on every product
 * (x, finished, y, expert_idx, softmax_result). */
static const mf_dtcol COLS2[] = {{ACL_FLOAT16, ACL_BOOL, ACL_FLOAT16, ACL_INT32, ACL_FLOAT},
                                 {ACL_FLOAT, ACL_BOOL, ACL_FLOAT, ACL_INT32, ACL_FLOAT},
                                 {ACL_BF16, ACL_BOOL, ACL_BF16, ACL_INT32, ACL_FLOAT}};
static const mf_op_def DEF2 = {OP2, MF_OP_GATING_TOP_K_SOFTMAX_V2, 2, 3, NAMES2, FLAGS2, COLS2, 3, COLS2, 3};

/* ---- the plan ---- */
typedef struct gt_plan {
    bool empty;
    bool renorm;   /* top-k of the logits, then softmax over the k */
    bool softmax;  /* write the full softmax (V2, renorm 0, flag set) */
    bool row_idx;  /* V1 */
    int64_t R, E, k;
    int xi, fi, yi, ei, ri, si; /* tensor slots; -1 when the operator has none */
} gt_plan;

/* ---- fp32 arithmetic, the same bits everywhere ---- */
static inline uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The arithmetic runs on four-lane generic vectors (GCC/Clang vector
 * extensions: SSE2 on x86-64, Advanced SIMD on AArch64, plain scalar code
 * elsewhere); every lane does the same IEEE fp32 operations in the same
 * order, so the bits are those of a scalar loop. Rows are padded to a
 * multiple of 8 lanes with -inf (exp gives +0, which the sums absorb). */
typedef float gv4 __attribute__((vector_size(16)));
typedef int32_t gi4 __attribute__((vector_size(16)));
#define GT_PAD(n) (((n) + 7) & ~(int64_t)7)
static inline gv4 gv_splat(float f) { return (gv4){f, f, f, f}; }
static inline gi4 gi_splat(int32_t i) { return (gi4){i, i, i, i}; }
static inline gv4 gv_load(const float *p) {
    gv4 v;
    memcpy(&v, p, 16);
    return v;
}
static inline void gv_store(float *p, gv4 v) { memcpy(p, &v, 16); }
/* m ? a : b, lane by lane (m all ones or all zeros) */
static inline gv4 gv_sel(gi4 m, gv4 a, gv4 b) { return (gv4)(((gi4)a & m) | ((gi4)b & ~m)); }
static inline gi4 gi_sel(gi4 m, gi4 a, gi4 b) { return (a & m) | (b & ~m); }

/* exp(a) for a <= 0 (and NaN), within 2 ulp for normal results: a = n*ln2 + t
 * with |t| <= ln2/2 (ln2 in two parts, the first exact in 9 bits, so n*C1 is
 * exact), exp(t) by a degree-7 polynomial (Horner), times 2^n built from the
 * exponent bits in two halves so subnormal results come out right; a < -104
 * gives +0. n comes from the bits of a/ln2 + 1.5*2^23, never from a
 * float-to-int conversion (a NaN lane stays defined and gives NaN). */
static inline gv4 gt_exp4(gv4 a) {
    const gv4 lo = gv_splat(-104.0f), magic = gv_splat(12582912.0f); /* 1.5 * 2^23 */
    const gi4 tiny = a < lo;
    const gv4 c = gv_sel(tiny, lo, a);
    const gv4 t = c * gv_splat(1.44269504088896341f) + magic;
    const gv4 n = t - magic; /* round(c / ln2), exact */
    const gi4 ni = (gi4)t - (gi4)magic;
    gv4 r = c - n * gv_splat(0.693359375f);
    r = r - n * gv_splat(-2.12194440e-4f);
    gv4 q = gv_splat(1.9875691500e-4f);
    q = q * r + gv_splat(1.3981999507e-3f);
    q = q * r + gv_splat(8.3334519073e-3f);
    q = q * r + gv_splat(4.1665795894e-2f);
    q = q * r + gv_splat(1.6666665459e-1f);
    q = q * r + gv_splat(5.0000001201e-1f);
    const gv4 e = q * (r * r) + r + gv_splat(1.0f);
    /* n in [-150, 0]: 2^n = 2^n1 * 2^(n - n1), both normal (n1 = n / 2 toward 0) */
    gi4 nc = gi_sel(ni < gi_splat(-150), gi_splat(-150), ni);
    nc = gi_sel(nc > gi_splat(0), gi_splat(0), nc);
    const gi4 n1 = (nc - (nc >> 31)) >> 1, n2 = nc - n1;
    const gv4 s1 = (gv4)((n1 + gi_splat(127)) << 23), s2 = (gv4)((n2 + gi_splat(127)) << 23);
    const gv4 v = e * s1 * s2;
    return gv_sel(tiny, gv_splat(0.0f), v);
}

#define GT_QNAN 0x7FC00000u

/* Softmax of v[0..n) in place, by the rule in the file comment; v holds
 * GT_PAD(n) floats, the ones past n -inf on entry. */
static void gt_softmax(float *v, int64_t n) {
    const int64_t np = GT_PAD(n);
    gv4 m4 = gv_splat(v[0]), m4b = m4;
    for (int64_t j = 0; j < np; j += 8) {
        const gv4 x = gv_load(v + j), xb = gv_load(v + j + 4);
        m4 = gv_sel(x > m4, x, m4);
        m4b = gv_sel(xb > m4b, xb, m4b);
    }
    /* the max is exact in any order; a NaN anywhere makes every p NaN below */
    m4 = gv_sel(m4b > m4, m4b, m4);
    float m = m4[0];
    for (int l = 1; l < 4; l++) m = m4[l] > m ? m4[l] : m;
    const gv4 mm = gv_splat(m);
    gv4 a0 = gv_splat(0.0f), a1 = gv_splat(0.0f);
    for (int64_t j = 0; j < np; j += 8) {
        const gv4 u0 = gt_exp4(gv_load(v + j) - mm), u1 = gt_exp4(gv_load(v + j + 4) - mm);
        gv_store(v + j, u0);
        gv_store(v + j + 4, u1);
        a0 += u0;
        a1 += u1;
    }
    const float s = ((a0[0] + a0[1]) + (a0[2] + a0[3])) + ((a1[0] + a1[1]) + (a1[2] + a1[3]));
    const gv4 ss = gv_splat(s), qnan = gv_splat(u2f(GT_QNAN));
    for (int64_t j = 0; j < np; j += 4) {
        const gv4 p = gv_load(v + j) / ss;
        gv_store(v + j, gv_sel(p != p, qnan, p));
    }
}

/* Inserts candidate c into the k best so far (best[0..*have), kept in
 * descending order for k <= GT_INSERT_K, a min-heap above). */
static inline void gt_consider(uint64_t *best, int64_t *have, int64_t k, uint64_t c) {
    int64_t i;
    if (k <= GT_INSERT_K) {
        i = *have < k ? (*have)++ : k - 1;
        while (i > 0 && best[i - 1] < c) {
            best[i] = best[i - 1];
            i--;
        }
        best[i] = c;
        return;
    }
    if (*have < k) {
        i = (*have)++;
        while (i > 0 && best[(i - 1) / 2] > c) {
            best[i] = best[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        best[i] = c;
        return;
    }
    i = 0; /* replace the root (the worst kept) and sift down */
    for (;;) {
        int64_t ch = 2 * i + 1;
        if (ch >= k) break;
        if (ch + 1 < k && best[ch + 1] < best[ch]) ch++;
        if (best[ch] >= c) break;
        best[i] = best[ch];
        i = ch;
    }
    best[i] = c;
}

/* Signed order keys of four floats: larger value, larger key; -0 as +0;
 * any NaN the largest (INT32_MAX). gt_key's unsigned key = this ^ 2^31. */
static inline gi4 gt_skey4(gv4 f) {
    gi4 u = (gi4)f;
    u = gi_sel(u == gi_splat(INT32_MIN), gi_splat(0), u);
    const gi4 k = gi_sel(u < gi_splat(0), u ^ gi_splat(INT32_MAX), u);
    return gi_sel((u & gi_splat(INT32_MAX)) > gi_splat(0x7F800000), gi_splat(INT32_MAX), k);
}

/* sel[0..k) = the positions of the k largest v[0..n) by (key descending,
 * position ascending). A candidate c = key << 32 | ~position: larger is
 * better, all distinct; a later position with an equal key never displaces
 * an earlier one, so once k are kept only a key above the k-th kept enters.
 * For k <= GT_INSERT_K: the k-th largest of the maxima of the 8-element
 * blocks, t0, bounds the k-th largest key from below (k blocks reach it),
 * so blocks whose maximum is below t0, and keys below t0, cannot be picked
 * and are skipped. v holds GT_PAD(n) floats; sk is scratch of as many. */
static void gt_topk(const float *v, int64_t n, int64_t k, int32_t *sk, uint64_t *best, int32_t *sel) {
    const int64_t np = GT_PAD(n), nb = np / 8;
    const bool heap = k > GT_INSERT_K;
    const gi4 lane = {0, 1, 2, 3};
    int32_t bmax[GT_PAD(GT_STACK_E) / 8 + 1];
    const bool filter = !heap && nb > k && nb <= (int64_t)(sizeof bmax / sizeof bmax[0]);
    for (int64_t j = 0; j < np; j += 8) {
        gi4 k0 = gt_skey4(gv_load(v + j)), k1 = gt_skey4(gv_load(v + j + 4));
        /* the padding past n: the smallest key */
        k0 = gi_sel(lane + gi_splat((int32_t)j) < gi_splat((int32_t)n), k0, gi_splat(INT32_MIN));
        k1 = gi_sel(lane + gi_splat((int32_t)j + 4) < gi_splat((int32_t)n), k1, gi_splat(INT32_MIN));
        memcpy(sk + j, &k0, 16);
        memcpy(sk + j + 4, &k1, 16);
        if (filter) {
            k0 = gi_sel(k1 > k0, k1, k0);
            const int32_t a = k0[0] > k0[1] ? k0[0] : k0[1], b = k0[2] > k0[3] ? k0[2] : k0[3];
            bmax[j / 8] = a > b ? a : b;
        }
    }
    int32_t t0 = INT32_MIN;
    if (filter) {
        int32_t top[GT_INSERT_K];
        int64_t have = 0;
        for (int64_t b = 0; b < nb; b++) {
            const int32_t m = bmax[b];
            if (have == k && m <= top[k - 1]) continue;
            int64_t i = have < k ? have++ : k - 1;
            while (i > 0 && top[i - 1] < m) {
                top[i] = top[i - 1];
                i--;
            }
            top[i] = m;
        }
        t0 = top[k - 1];
    }
    int64_t have = 0;
    uint32_t thr = 0;
    for (int64_t b = 0; b < nb; b++) {
        if (filter && bmax[b] < t0) continue;
        const int64_t j1 = 8 * b + 8 < n ? 8 * b + 8 : n;
        for (int64_t j = 8 * b; j < j1; j++) {
            if (sk[j] < t0) continue;
            const uint32_t key = (uint32_t)sk[j] ^ 0x80000000u;
            if (have == k && key <= thr) continue;
            gt_consider(best, &have, k, (uint64_t)key << 32 | (uint32_t)~(uint32_t)j);
            if (have == k) thr = (uint32_t)(best[heap ? 0 : k - 1] >> 32);
        }
    }
    if (heap) { /* heap sort: pop the worst into the back, best[] ends descending */
        for (int64_t m = k - 1; m > 0; m--) {
            const uint64_t top = best[0], last = best[m];
            int64_t i = 0;
            for (;;) {
                int64_t ch = 2 * i + 1;
                if (ch >= m) break;
                if (ch + 1 < m && best[ch + 1] < best[ch]) ch++;
                if (best[ch] >= last) break;
                best[i] = best[ch];
                i = ch;
            }
            best[i] = last;
            best[m] = top;
        }
    }
    for (int64_t i = 0; i < k; i++) sel[i] = (int32_t)~(uint32_t)best[i];
}

static inline void gt_store(char *p, int dtype, float f) {
    uint16_t h;
    switch (dtype) {
    case ACL_FLOAT: memcpy(p, &f, 4); break;
    case ACL_FLOAT16: h = mf_f32_to_f16(f); memcpy(p, &h, 2); break;
    default: h = mf_f32_to_bf16(f); memcpy(p, &h, 2); break;
    }
}

typedef struct gt_ctx {
    const gt_plan *p;
    mf_rows x;
    int dtype;
    mf_small fin;
    bool has_fin;
    int64_t fin_cols; /* finished is (B, S): row r at (r / S, r % S) */
    char *y;
    int32_t *eidx, *ridx;
    float *sm;
    float *ws; /* E > GT_STACK_E: per row GT_PAD(E) floats, then as many int32 keys */
} gt_ctx;

static void gt_rows(void *vctx, int64_t r0, int64_t r1) {
    const gt_ctx *c = vctx;
    const gt_plan *p = c->p;
    const int64_t E = p->E, k = p->k;
    const size_t es = mf_dtype_size(c->dtype);
    float stack_buf[GT_PAD(GT_STACK_E)];
    int32_t sk_stack[GT_PAD(GT_STACK_E)];
    uint64_t best[GT_MAX_K];
    int32_t sel[GT_MAX_K];
    float yk[GT_PAD(GT_MAX_K)];
    const int64_t Ep = GT_PAD(E), kp = GT_PAD(k);
    for (int64_t r = r0; r < r1; r++) {
        float *v = c->ws ? c->ws + r * 2 * Ep : stack_buf;
        int32_t *skbuf = c->ws ? (int32_t *)(v + Ep) : sk_stack;
        const char *row = mf_row(&c->x, r);
        const int64_t sc = c->x.s_col;
        switch (c->dtype) {
        case ACL_FLOAT:
            if (sc == 4) {
                memcpy(v, row, (size_t)E * 4);
            } else {
                for (int64_t j = 0; j < E; j++) memcpy(&v[j], row + j * sc, 4);
            }
            break;
        case ACL_FLOAT16:
            for (int64_t j = 0; j < E; j++) {
                uint16_t h;
                memcpy(&h, row + j * sc, 2);
                v[j] = mf_f16_to_f32(h);
            }
            break;
        default:
            for (int64_t j = 0; j < E; j++) {
                uint16_t h;
                memcpy(&h, row + j * sc, 2);
                v[j] = mf_bf16_to_f32(h);
            }
            break;
        }
        for (int64_t j = E; j < Ep; j++) v[j] = -INFINITY;
        if (p->renorm) {
            gt_topk(v, E, k, skbuf, best, sel);
            for (int64_t i = 0; i < k; i++) yk[i] = v[sel[i]];
            for (int64_t i = k; i < kp; i++) yk[i] = -INFINITY;
            gt_softmax(yk, k);
        } else {
            gt_softmax(v, E);
            if (p->softmax) memcpy(c->sm + r * E, v, (size_t)E * 4);
            gt_topk(v, E, k, skbuf, best, sel);
            for (int64_t i = 0; i < k; i++) yk[i] = v[sel[i]];
        }
        bool done = false;
        if (c->has_fin) {
            const int64_t a = c->fin_cols ? r / c->fin_cols : r, b = c->fin_cols ? r % c->fin_cols : 0;
            done = *(const unsigned char *)mf_small_at(&c->fin, a, b) != 0;
        }
        char *yr = c->y + r * k * (int64_t)es;
        int32_t *er = c->eidx + r * k;
        for (int64_t i = 0; i < k; i++) {
            gt_store(yr + i * (int64_t)es, c->dtype, yk[i]);
            er[i] = done ? (int32_t)E : sel[i];
        }
        if (p->row_idx) {
            int32_t *rr = c->ridx + r * k;
            for (int64_t i = 0; i < k; i++) rr[i] = (int32_t)(i * p->R + r);
        }
    }
}

static aclnnStatus gt_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const gt_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *x = t[p->xi], *fin = t[p->fi];
    gt_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.x = mf_rows_of(x);
    c.dtype = x->dtype;
    c.has_fin = fin != NULL;
    if (fin) {
        c.fin = mf_small_of(fin);
        c.fin_cols = fin->ndim == 2 ? fin->dims[1] : 0;
    }
    c.y = mf_tensor_base(t[p->yi]);
    c.eidx = (int32_t *)mf_tensor_base(t[p->ei]);
    c.ridx = p->row_idx ? (int32_t *)mf_tensor_base(t[p->ri]) : NULL;
    c.sm = p->softmax ? (float *)mf_tensor_base(t[p->si]) : NULL;
    c.ws = p->E > GT_STACK_E ? (float *)mf_align64(workspace) : NULL;
    int64_t serial = GT_SERIAL_ELEMS / p->E;
    mf_parallel_for(p->R, gt_rows, &c, serial < 1 ? 1 : serial);
    return ACLNN_SUCCESS;
}

/* ---- phase 1 ---- */
#define dims_str mf_shape_str

/* CheckOutShape's leading-dim rules (both versions): rank, dim 0, dim 1 of a
 * 3-D x. */
static aclnnStatus check_lead(const char *op, const char *name, const aclTensor *o, const aclTensor *x) {
    char a[96], b[96];
    if (o->ndim != x->ndim)
        return mf_fail(TILING, "%s: %s must have x's rank %d, got %s", op, name, (int)x->ndim,
                       dims_str(o, a, sizeof a));
    for (int d = 0; d < x->ndim - 1; d++)
        if (o->dims[d] != x->dims[d])
            return mf_fail(TILING, "%s: %s dim %d must equal x's (%lld), got %s for x %s", op, name, d,
                           (long long)x->dims[d], dims_str(o, a, sizeof a), dims_str(x, b, sizeof b));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_last(const char *op, const char *name, const aclTensor *o, int64_t want,
                              const char *what) {
    char a[96];
    if (o->dims[o->ndim - 1] != want)
        return mf_fail(TILING, "%s: %s last dim must be %s = %lld, got %s", op, name, what, (long long)want,
                       dims_str(o, a, sizeof a));
    return ACLNN_SUCCESS;
}

/* x's rank, its dims (V1: none 0; V2: the last not 0; both: <= INT32_MAX),
 * finished's shape: GetShapeAttrsInfo (V1) / CheckInShape (V2). */
static aclnnStatus check_x(const char *op, const aclTensor *x, const aclTensor *fin, bool any_zero) {
    char a[96], b[96];
    if (x->ndim != 2 && x->ndim != 3)
        return mf_fail(TILING, "%s: x must be 2-D or 3-D, got %s", op, dims_str(x, a, sizeof a));
    for (int d = 0; d < x->ndim; d++) {
        if (x->dims[d] == 0 && (any_zero || d == x->ndim - 1))
            return mf_fail(TILING, "%s: x must have no %szero dim, got %s", op, any_zero ? "" : "(last) ",
                           dims_str(x, a, sizeof a));
        if (x->dims[d] > INT32_MAX)
            return mf_fail(TILING, "%s: x dims must be <= 2147483647, got %s", op, dims_str(x, a, sizeof a));
    }
    if (fin != NULL) {
        if (fin->ndim != x->ndim - 1)
            return mf_fail(TILING, "%s: finishedOptional must have rank %d (x's without the last dim), got %s", op,
                           (int)x->ndim - 1, dims_str(fin, a, sizeof a));
        for (int d = 0; d < x->ndim - 1; d++)
            if (fin->dims[d] != x->dims[d])
                return mf_fail(TILING, "%s: finishedOptional shape %s must be x's %s without the last dim", op,
                               dims_str(fin, a, sizeof a), dims_str(x, b, sizeof b));
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus check_k(const char *op, int64_t k, int64_t E) {
    if (k <= 0 || k > E)
        return mf_fail(TILING, "%s: k must be in [1, %lld] (x's last dim), got %lld", op, (long long)E,
                       (long long)k);
    if (k > GT_MAX_K) return mf_fail(TILING, "%s: k must be <= 1024, got %lld", op, (long long)k);
    return ACLNN_SUCCESS;
}

static void plan_dims(gt_plan *pl, const aclTensor *x, int64_t k) {
    pl->E = x->dims[x->ndim - 1];
    pl->R = x->ndim == 2 ? x->dims[0] : x->dims[0] * x->dims[1];
    pl->k = k;
}

static aclnnStatus workspace_of(const char *op, const gt_plan *pl, uint64_t *ws) {
    *ws = 0;
    if (pl->E <= GT_STACK_E) return ACLNN_SUCCESS;
    int64_t n, bytes;
    if (!mf_mul_ok(pl->R, 2 * GT_PAD(pl->E), &n) || !mf_mul_ok(n, 4, &bytes))
        return mf_fail(TILING, "%s: the fp32 scratch of %lld x %lld floats overflows", op, (long long)pl->R,
                       (long long)pl->E);
    *ws = mf_workspace_with_slack((uint64_t)bytes);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(const aclTensor *x, const aclTensor *finishedOptional,
                                                      int64_t k, const aclTensor *yOut,
                                                      const aclTensor *expertIdxOut, const aclTensor *rowIdxOut,
                                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[V1_NT] = {x, finishedOptional, yOut, expertIdxOut, rowIdxOut};
    MF_TRY(mf_op_check(&DEF1, t, workspaceSize, executor));
    gt_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.xi = V1_X, pl.fi = V1_FIN, pl.yi = V1_Y, pl.ei = V1_EIDX, pl.ri = V1_RIDX, pl.si = -1;
    pl.row_idx = true;
    if (mf_op_outputs_empty(&DEF1, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF1, t, 0, &pl, sizeof pl, gt_run, 0, workspaceSize, executor);
    }
    /* moe_gating_top_k_softmax_tiling_base.cpp, GetShapeAttrsInfo */
    MF_TRY(check_x(OP1, x, finishedOptional, true));
    MF_TRY(check_lead(OP1, "yOut", yOut, x));
    MF_TRY(check_lead(OP1, "expertIdxOut", expertIdxOut, x));
    MF_TRY(check_lead(OP1, "rowIdxOut", rowIdxOut, x));
    const int64_t E = x->dims[x->ndim - 1];
    MF_TRY(check_k(OP1, k, E));
    /* moefr: CANN does not compare the outputs' last dim with k (its kernel
     * writes k per row whatever they hold) */
    MF_TRY(check_last(OP1, "yOut", yOut, k, "k"));
    MF_TRY(check_last(OP1, "expertIdxOut", expertIdxOut, k, "k"));
    MF_TRY(check_last(OP1, "rowIdxOut", rowIdxOut, k, "k"));
    /* moe_gating_top_k_softmax_tiling_arch35.cpp, DoOpTiling (Ascend 950 only) */
    if (!mf_soc_strict() && E > GT_MAX_E_950)
        return mf_fail(TILING, "%s: x's last dim (experts) must be <= 2048 on Ascend 950, got %lld", OP1,
                       (long long)E);
    plan_dims(&pl, x, k);
    int64_t T;
    if (!mf_mul_ok(pl.R, k, &T) || T > (int64_t)INT32_MAX + 1)
        return mf_fail(TILING, "%s: rowIdxOut values k*R + r must fit INT32, got R = %lld rows and k = %lld", OP1,
                       (long long)pl.R, (long long)k);
    uint64_t ws;
    MF_TRY(workspace_of(OP1, &pl, &ws));
    return mf_op_publish(&DEF1, t, 0, &pl, sizeof pl, gt_run, ws, workspaceSize, executor);
}

aclnnStatus aclnnMoeGatingTopKSoftmax(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GATING_TOP_K_SOFTMAX, OP1, workspace, workspaceSize, stream);
}

aclnnStatus aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(const aclTensor *x, const aclTensor *finishedOptional,
                                                        int64_t k, int64_t renorm, bool outputSoftmaxResultFlag,
                                                        const aclTensor *yOut, const aclTensor *expertIdxOut,
                                                        const aclTensor *softmaxResultOutOptional,
                                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[V2_NT] = {x, finishedOptional, yOut, expertIdxOut, softmaxResultOutOptional};
    MF_TRY(mf_op_check(&DEF2, t, workspaceSize, executor));
    gt_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.xi = V2_X, pl.fi = V2_FIN, pl.yi = V2_Y, pl.ei = V2_EIDX, pl.ri = -1, pl.si = V2_SM;
    const bool want_sm = renorm == 0 && outputSoftmaxResultFlag;
    const unsigned unused = (!want_sm && softmaxResultOutOptional != NULL) ? 1u << V2_SM : 0u;
    /* the softmax output counts only when it will be written */
    bool empty = yOut->numel == 0 && expertIdxOut->numel == 0 &&
                 (!want_sm || softmaxResultOutOptional == NULL || softmaxResultOutOptional->numel == 0);
    if (empty) {
        pl.empty = true;
        return mf_op_publish(&DEF2, t, unused, &pl, sizeof pl, gt_run, 0, workspaceSize, executor);
    }
    /* moe_gating_top_k_softmax_v2_tiling_base.cpp, GetShapeAttrsInfo */
    MF_TRY(check_x(OP2, x, finishedOptional, false));
    const int64_t E = x->dims[x->ndim - 1];
    MF_TRY(check_k(OP2, k, E));
    MF_TRY(check_lead(OP2, "yOut", yOut, x));
    MF_TRY(check_last(OP2, "yOut", yOut, k, "k"));
    MF_TRY(check_lead(OP2, "expertIdxOut", expertIdxOut, x));
    MF_TRY(check_last(OP2, "expertIdxOut", expertIdxOut, k, "k"));
    /* CheckOptionalAttr */
    if (renorm < 0 || renorm > 1) return mf_fail(TILING, "%s: renorm must be 0 or 1, got %lld", OP2, (long long)renorm);
    if (want_sm) {
        if (softmaxResultOutOptional == NULL)
            return mf_fail(TILING, "%s: softmaxResultOutOptional is NULL but renorm = 0 and "
                                   "outputSoftmaxResultFlag = true",
                           OP2);
        MF_TRY(check_lead(OP2, "softmaxResultOutOptional", softmaxResultOutOptional, x));
        MF_TRY(check_last(OP2, "softmaxResultOutOptional", softmaxResultOutOptional, E, "x's last dim"));
    }
    plan_dims(&pl, x, k);
    pl.renorm = renorm == 1;
    pl.softmax = want_sm;
    uint64_t ws;
    MF_TRY(workspace_of(OP2, &pl, &ws));
    return mf_op_publish(&DEF2, t, unused, &pl, sizeof pl, gt_run, ws, workspaceSize, executor);
}

aclnnStatus aclnnMoeGatingTopKSoftmaxV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GATING_TOP_K_SOFTMAX_V2, OP2, workspace, workspaceSize, stream);
}
