/* dynamic_quant.c - aclnnDynamicQuant, V2, V3 and V4 (ops-nn quant/dynamic_quant*),
 * both phases. One shared phase 1 in the order of ops-nn's aclnn_dynamic_quant.cpp
 * (CheckNotNull, CheckAttr, CheckDtype, CheckShape: 161001/161002), the empty
 * shortcut, then the tiling checks of dynamic_quant_tiling_arch35.cpp (561002).
 * Phase 2 quantises groups of elements that share a scale (a row, the whole
 * tensor, or a column of each trailing matrix) with the arithmetic of the
 * product's kernels (docs/CANN_COMPAT.md, "DynamicQuant"). */
#include <math.h>
#include <stdio.h>

#include "aclnnop/aclnn_dynamic_quant.h"
#include "aclnnop/aclnn_dynamic_quant_v2.h"
#include "aclnnop/aclnn_dynamic_quant_v3.h"
#include "aclnnop/aclnn_dynamic_quant_v4.h"
#include "ops/common.h"
#include "ops/opdef.h"
#include "ops/quant/dynamic_quant.h"
#include "ops/routing/quant_int8.h"

/* the generic four-lane loops (dynamic_quant_avx2.c builds the eight-lane ones) */
#define GT_W 4
#define DQ_MINMAX mf_dq_minmax_generic
#define DQ_QUANT mf_dq_quant_generic
#include "ops/quant/dynamic_quant_core.h"
#undef GT_W

/* The vector loops of the kernel path: the symmetric max and Ascend 950's
 * symmetric int8 quotient are MoeInitRoutingQuant's (quant_int8.h: the same
 * operations, NaN never wins, half to even with even = true, saturated to
 * [-128, 127], NaN -> 0); the rest dynamic_quant_core.h's. */
typedef struct dq_loops {
    int64_t (*absmax)(const float *v, int64_t n, float *m);
    int64_t (*q8)(const float *v, int64_t n, float s, bool even, int8_t *out, bool nt);
    int64_t (*minmax)(const float *v, int64_t n, float *hi, float *lo);
    int64_t (*quant)(const float *v, int64_t n, const mf_dq_math *m, const mf_dq_scale *s, int8_t *q);
} dq_loops;
static const dq_loops *dq_pick(void) {
    static const dq_loops generic = {mf_q8_absmax_generic, mf_q8_quant_generic, mf_dq_minmax_generic,
                                     mf_dq_quant_generic};
#if defined(MOEFR_X86_KERNELS)
    static const dq_loops avx2 = {mf_q8_absmax_avx2, mf_q8_quant_avx2, mf_dq_minmax_avx2, mf_dq_quant_avx2};
    if (strncmp(mf_kernels()->isa, "avx", 3) == 0) return &avx2;
#endif
    return &generic;
}

/* the max (and min) of n values into a: whole vectors, then the tail */
static void acc_vec(const dq_loops *k, mf_dq_acc *a, const float *v, int64_t n, bool sym) {
    const int64_t j = sym ? k->absmax(v, n, &a->hi) : k->minmax(v, n, &a->hi, &a->lo);
    mf_dq_acc_add(a, v + j, n - j, sym);
}
/* n values quantised into q: whole vectors, then the tail */
static void quant_vec(const dq_loops *k, const mf_dq_math *m, const mf_dq_scale *s, const float *v, int64_t n,
                      int8_t *q) {
    const int64_t j = !m->a2 && m->sym && m->Q == 127.0f ? k->q8(v, n, s->k, true, q, false) : k->quant(v, n, m, s, q);
    mf_dq_quant(m, s, v + j, n - j, q + j);
}

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define INVALID ACLNN_ERR_PARAM_INVALID
#define TRY MF_TRY

/* roles: the V2-V4 signature order; V1 has no group index and no offset */
enum { R_X, R_SMOOTH, R_GROUP, R_Y, R_SCALE, R_OFFSET, R_N };
static const int8_t AT_V1[R_N] = {0, 1, -1, 2, 3, -1};
static const int8_t AT_V2[R_N] = {0, 1, 2, 3, 4, 5};

static const char *const NAMES_V1[4] = {"x", "smoothScalesOptional", "yOut", "scaleOut"};
static const char *const NAMES_V2[6] = {"x", "smoothScalesOptional", "groupIndexOptional", "yOut", "scaleOut",
                                        "offsetOut"};
/* Outputs may be strided views (CANN copies its results into them: ViewCopy). */
static const unsigned FLAGS_V1[4] = {MF_T_REQUIRED, 0, MF_T_REQUIRED, MF_T_REQUIRED};
static const unsigned FLAGS_V2[6] = {MF_T_REQUIRED, 0, 0, MF_T_REQUIRED, MF_T_REQUIRED, 0};

/* aclnn_dynamic_quant.cpp's lists: x FLOAT16 / BF16 (regbase and DAV_2201),
 * smooth x's dtype, group INT32 / INT64, y INT4 / INT8 / INT32 (+ HIFLOAT8,
 * FLOAT8_E5M2, FLOAT8_E4M3FN on regbase, i.e. Ascend 950), scale and offset
 * FLOAT. The group index's dtype is checked only when a smooth scale is given
 * (CheckDtype), so the phase-1 check passes it only then. */
#define F32 ACL_FLOAT
#define C2(X, G, Y) {X, X, G, Y, F32, F32}
#define CX(X, Y) C2(X, ACL_INT32, Y), C2(X, ACL_INT64, Y)
#define CY(Y) CX(ACL_FLOAT16, Y), CX(ACL_BF16, Y)
static const mf_dtcol COLS_V2[] = {CY(ACL_INT8),    CY(ACL_INT32),        CY(ACL_INT4),
                                   CY(ACL_HIFLOAT8), CY(ACL_FLOAT8_E5M2), CY(ACL_FLOAT8_E4M3FN)};
#define NCOLS_A2 12 /* the integer outputs */
#define C1(X, Y) {X, X, Y, F32}
#define CY1(Y) C1(ACL_FLOAT16, Y), C1(ACL_BF16, Y)
static const mf_dtcol COLS_V1[] = {CY1(ACL_INT8),    CY1(ACL_INT32),        CY1(ACL_INT4),
                                   CY1(ACL_HIFLOAT8), CY1(ACL_FLOAT8_E5M2), CY1(ACL_FLOAT8_E4M3FN)};
#define NCOLS1_A2 6
#undef C1
#undef CY1
#undef C2
#undef CX
#undef CY

static const mf_op_def DEF_V1 = {"aclnnDynamicQuant", MF_OP_DYNAMIC_QUANT, 2, 2, NAMES_V1, FLAGS_V1,
                                 COLS_V1, 12, COLS_V1, NCOLS1_A2};
static const mf_op_def DEF_V2 = {"aclnnDynamicQuantV2", MF_OP_DYNAMIC_QUANT_V2, 3, 3, NAMES_V2, FLAGS_V2,
                                 COLS_V2, 24, COLS_V2, NCOLS_A2};
static const mf_op_def DEF_V3 = {"aclnnDynamicQuantV3", MF_OP_DYNAMIC_QUANT_V3, 3, 3, NAMES_V2, FLAGS_V2,
                                 COLS_V2, 24, COLS_V2, NCOLS_A2};
static const mf_op_def DEF_V4 = {"aclnnDynamicQuantV4", MF_OP_DYNAMIC_QUANT_V4, 3, 3, NAMES_V2, FLAGS_V2,
                                 COLS_V2, 24, COLS_V2, NCOLS_A2};

enum { MODE_TOKEN, MODE_TENSOR, MODE_CHANNEL };

typedef struct dq_plan {
    const char *op; /* the front end's name (static) */
    int8_t at[R_N];
    bool empty;
    mf_dq_math m;
    int mode;
    int ydt;         /* ACL_INT8, or ACL_INT32 holding eight int4 each */
    bool grouped;    /* smooth (E, H) chosen by the group index */
    int64_t B, M, N; /* x as (B, M, N): B the dims before the last two */
    int64_t E;       /* groups */
} dq_plan;

/* ---- element addressing over arbitrary strided views ---- */

/* Address of flat index i over t's first nd dims (row-major), in bytes from
 * the tensor's base; the element size is es. */
static inline char *flat_at(const aclTensor *t, int nd, int64_t i, size_t es) {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        const int64_t n = t->dims[d];
        off += (i % n) * t->strides[d];
        i /= n;
    }
    return mf_tensor_base(t) + off * (int64_t)es;
}

/* The group of row r: the first g with index[g] > r, through the running
 * maximum pm (non-decreasing, so a binary search finds it); E when none. */
static int64_t group_of(const int64_t *pm, int64_t E, int64_t r) {
    int64_t lo = 0, hi = E;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (pm[mid] > r) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

typedef struct dq_ctx {
    const dq_plan *p;
    const dq_loops *k;
    const aclTensor *x, *sm, *y, *sc, *of;
    const int64_t *pm; /* running maximum of the group index (grouped) */
    mf_dq_scale whole; /* MODE_TENSOR: the one scale */
} dq_ctx;

/* n elements of x's row r widened to fp32 from column c0, times the smooth
 * row g (widened a slice at a time) */
#define SLICE 512
static void load_row(const dq_ctx *c, int64_t r, int64_t c0, int64_t n, float *v, int64_t g) {
    const aclTensor *x = c->x;
    const int nd = x->ndim;
    const size_t es = 2;
    const char *row = flat_at(x, nd - 1, r, es);
    mf_widen_f32(row + c0 * x->strides[nd - 1] * (int64_t)es, x->strides[nd - 1] * (int64_t)es, x->dtype, n, v, 1);
    if (c->sm != NULL) {
        const aclTensor *s = c->sm;
        const char *srow = mf_tensor_base(s) + (c->p->grouped ? g * s->strides[0] * (int64_t)es : 0);
        const int64_t st = s->strides[s->ndim - 1] * (int64_t)es;
        float tmp[SLICE];
        for (int64_t j0 = 0; j0 < n; j0 += SLICE) {
            const int64_t m = n - j0 < SLICE ? n - j0 : SLICE;
            mf_widen_f32(srow + (c0 + j0) * st, st, s->dtype, m, tmp, 1);
            for (int64_t j = 0; j < m; j++) v[j0 + j] *= tmp[j];
        }
    }
}

/* the quantised row r of N values q[] stored into y (int8, or int4 packed) */
static void store_row(const dq_ctx *c, int64_t r, const int8_t *q, int64_t n) {
    const aclTensor *y = c->y;
    const int nd = y->ndim;
    if (c->p->ydt == ACL_INT8) {
        char *row = flat_at(y, nd - 1, r, 1);
        const int64_t st = y->strides[nd - 1];
        if (st == 1) memcpy(row, q, (size_t)n);
        else
            for (int64_t j = 0; j < n; j++) row[j * st] = (char)q[j];
        return;
    }
    /* INT32: eight int4 per word, the first in the lowest nibble */
    char *row = flat_at(y, nd - 1, r, 4);
    const int64_t wst = y->strides[nd - 1] * 4; /* bytes between words */
    for (int64_t w = 0; w < n / 8; w++) {
        uint32_t word = 0;
        for (int k = 0; k < 8; k++) word |= (uint32_t)(q[w * 8 + k] & 0xF) << (4 * k);
        memcpy(row + w * wst, &word, 4); /* little-endian hosts (x86-64, aarch64) */
    }
}

static inline void put_f32(const aclTensor *t, int nd, int64_t i, float v) {
    if (t != NULL) memcpy(flat_at(t, nd, i, 4), &v, 4);
}

#define TILE 8192 /* fp32 values of a row widened at a time (32 KiB on the stack) */

/* y's row r from column c0 (a multiple of 8 for INT32): n values of q */
static void store_at(const dq_ctx *c, int64_t r, int64_t c0, const int8_t *q, int64_t n) {
    if (c0 == 0) {
        store_row(c, r, q, n);
        return;
    }
    dq_ctx cc = *c;
    aclTensor yv = *c->y;
    yv.offset += (c0 / (c->p->ydt == ACL_INT8 ? 1 : 8)) * yv.strides[yv.ndim - 1];
    cc.y = &yv;
    store_row(&cc, r, q, n);
}

/* pertoken: rows [b, e); a row longer than a tile is widened twice */
static void token_rows(void *ctx, int64_t b, int64_t e) {
    const dq_ctx *c = ctx;
    const dq_plan *p = c->p;
    const int64_t N = p->N;
    const bool kept = N <= TILE;
    float v[TILE];
    int8_t q[TILE];
    for (int64_t r = b; r < e; r++) {
        const int64_t g = p->grouped ? group_of(c->pm, p->E, r) : 0;
        mf_dq_acc a;
        mf_dq_acc_init(&a);
        for (int64_t c0 = 0; c0 < N; c0 += TILE) {
            const int64_t n = N - c0 < TILE ? N - c0 : TILE;
            load_row(c, r, c0, n, v, g);
            acc_vec(c->k, &a, v, n, p->m.sym);
        }
        const mf_dq_scale s = mf_dq_scale_of(&p->m, &a);
        put_f32(c->sc, c->sc->ndim, r, s.scale);
        put_f32(c->of, c->of ? c->of->ndim : 0, r, s.offset);
        for (int64_t c0 = 0; c0 < N; c0 += TILE) {
            const int64_t n = N - c0 < TILE ? N - c0 : TILE;
            if (!kept) load_row(c, r, c0, n, v, g);
            quant_vec(c->k, &p->m, &s, v, n, q);
            store_at(c, r, c0, q, n);
        }
    }
}

/* pertensor: rows [b, e), the scale already known */
static void tensor_rows(void *ctx, int64_t b, int64_t e) {
    const dq_ctx *c = ctx;
    const dq_plan *p = c->p;
    const int64_t N = p->N;
    float v[TILE];
    int8_t q[TILE];
    for (int64_t r = b; r < e; r++)
        for (int64_t c0 = 0; c0 < N; c0 += TILE) {
            const int64_t n = N - c0 < TILE ? N - c0 : TILE;
            load_row(c, r, c0, n, v, 0);
            quant_vec(c->k, &p->m, &c->whole, v, n, q);
            store_at(c, r, c0, q, n);
        }
}

/* perchannel: work items (b, column tile); smooth scales multiply row m */
#define CT 256
static void channel_items(void *ctx, int64_t b0, int64_t e0) {
    const dq_ctx *c = ctx;
    const dq_plan *p = c->p;
    const int64_t M = p->M, N = p->N, tiles = (N + CT - 1) / CT;
    float v[CT];
    int8_t q[CT];
    for (int64_t it = b0; it < e0; it++) {
        const int64_t bb = it / tiles, c0 = (it % tiles) * CT, n = N - c0 < CT ? N - c0 : CT;
        mf_dq_acc acc[CT];
        for (int64_t j = 0; j < n; j++) mf_dq_acc_init(&acc[j]);
        /* smooth scale per row m: load_row with a 1-D smooth would index columns,
         * so multiply here */
        dq_ctx cc = *c;
        cc.sm = NULL;
        const aclTensor *s = c->sm;
        for (int64_t m = 0; m < M; m++) {
            load_row(&cc, bb * M + m, c0, n, v, 0);
            if (s) {
                const float f = mf_small_f32(&(mf_small){mf_tensor_base(s), s->strides[0] * 2, 0, s->dtype}, m, 0);
                for (int64_t j = 0; j < n; j++) v[j] *= f;
            }
            for (int64_t j = 0; j < n; j++) mf_dq_acc_add(&acc[j], &v[j], 1, p->m.sym);
        }
        mf_dq_scale sc[CT];
        for (int64_t j = 0; j < n; j++) {
            sc[j] = mf_dq_scale_of(&p->m, &acc[j]);
            put_f32(c->sc, c->sc->ndim, bb * N + c0 + j, sc[j].scale);
            put_f32(c->of, c->of ? c->of->ndim : 0, bb * N + c0 + j, sc[j].offset);
        }
        for (int64_t m = 0; m < M; m++) {
            load_row(&cc, bb * M + m, c0, n, v, 0);
            if (s) {
                const float f = mf_small_f32(&(mf_small){mf_tensor_base(s), s->strides[0] * 2, 0, s->dtype}, m, 0);
                for (int64_t j = 0; j < n; j++) v[j] *= f;
            }
            for (int64_t j = 0; j < n; j++) mf_dq_quant(&p->m, &sc[j], &v[j], 1, &q[j]);
            store_at(c, bb * M + m, c0, q, n);
        }
    }
}

static aclnnStatus dq_run(const void *plan, const aclTensor *const *slots, void *workspace) {
    (void)workspace;
    const dq_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *t[R_N];
    mf_by_role(p->at, R_N, slots, NULL, t, NULL);
    dq_ctx c = {p, dq_pick(), t[R_X], t[R_SMOOTH], t[R_Y], t[R_SCALE], t[R_OFFSET], NULL, {0, 0, 0}};
    const int64_t R = p->B * p->M;
    int64_t pm[MF_DQ_MAX_GROUPS];
    if (p->grouped) {
        /* rows past every group's end would make CANN read smooth scales past
         * their end: refused before anything is written */
        const mf_small gi = mf_small_of(t[R_GROUP]);
        int64_t run = INT64_MIN, prev = 0;
        for (int64_t g = 0; g < p->E; g++) {
            const int64_t v = mf_small_index(&gi, g, 0);
            if (mf_index_strict() && (v < prev || v > R))
                return mf_fail(INVALID, "%s: groupIndexOptional[%lld] = %lld must be non-decreasing in [%lld, %lld] "
                               "(MOEFR_STRICT)", p->op, (long long)g, (long long)v, (long long)prev,
                               (long long)R);
            prev = v;
            run = v > run ? v : run;
            pm[g] = run;
        }
        if (mf_index_strict() && prev != R)
            return mf_fail(INVALID, "%s: groupIndexOptional's last value must be %lld (the rows), got %lld (MOEFR_STRICT)",
                           p->op, (long long)R, (long long)prev);
        if (pm[p->E - 1] < R)
            return mf_fail(INVALID, "%s: groupIndexOptional covers rows [0, %lld) but x has %lld rows: no smooth scale "
                           "for the rest", p->op, (long long)(pm[p->E - 1] < 0 ? 0 : pm[p->E - 1]),
                           (long long)R);
        c.pm = pm;
    }
    const int64_t work = p->N > 0 ? p->N : 1;
    if (p->mode == MODE_TOKEN) {
        mf_parallel_for(R, token_rows, &c, 32768 / work + 1);
    } else if (p->mode == MODE_TENSOR) {
        float v[TILE];
        mf_dq_acc a;
        mf_dq_acc_init(&a);
        for (int64_t r = 0; r < R; r++)
            for (int64_t c0 = 0; c0 < p->N; c0 += TILE) {
                const int64_t n = p->N - c0 < TILE ? p->N - c0 : TILE;
                load_row(&c, r, c0, n, v, 0);
                acc_vec(c.k, &a, v, n, p->m.sym);
            }
        c.whole = mf_dq_scale_of(&p->m, &a);
        put_f32(c.sc, c.sc->ndim, 0, c.whole.scale);
        put_f32(c.of, c.of ? c.of->ndim : 0, 0, c.whole.offset);
        mf_parallel_for(R, tensor_rows, &c, 32768 / work + 1);
    } else {
        const int64_t items = p->B * ((p->N + CT - 1) / CT);
        mf_parallel_for(items, channel_items, &c, 1 + 32768 / (p->M * CT + 1));
    }
    return ACLNN_SUCCESS;
}

/* ---- phase 1 ---- */

static const char *shape(const aclTensor *t, char *b, size_t n) { return mf_shape_str(t, b, n); }

/* dims [0, n) of a and b equal */
static bool same_lead(const aclTensor *a, const aclTensor *b, int n) {
    for (int d = 0; d < n; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

static aclnnStatus plan_common(const mf_op_def *def, const int8_t *at, const aclTensor *const *slots,
                               bool isSymmetrical, const char *quantMode, uint64_t *workspaceSize,
                               aclOpExecutor **executor) {
    const char *OP = def->name;
    const aclTensor *t[R_N];
    const char *nm[R_N];
    mf_by_role(at, R_N, slots, def->names, t, nm);
    const aclTensor *x = t[R_X], *sm = t[R_SMOOTH], *gi = t[R_GROUP], *y = t[R_Y], *sc = t[R_SCALE],
                    *of = t[R_OFFSET];
    /* CheckNotNull */
    if (x == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: x is NULL", OP);
    if (y == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: yOut is NULL", OP);
    if (sc == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: scaleOut is NULL", OP);
    /* CheckAttr */
    if (isSymmetrical && of != NULL)
        return mf_fail(INVALID, "%s: isSymmetrical is true, so offsetOut must be NULL", OP);
    if (!isSymmetrical && of == NULL)
        return mf_fail(INVALID, "%s: isSymmetrical is false, so offsetOut must not be NULL", OP);
    /* CANN makes a std::string of quantMode here (undefined for NULL) */
    if (quantMode == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: quantMode is NULL", OP);
    int mode;
    if (strcmp(quantMode, "pertoken") == 0) mode = MODE_TOKEN;
    else if (strcmp(quantMode, "pertensor") == 0) mode = MODE_TENSOR;
    else if (strcmp(quantMode, "perchannel") == 0) mode = MODE_CHANNEL;
    else return mf_fail(INVALID, "%s: quantMode must be pertoken, pertensor or perchannel, got \"%.32s\"", OP, quantMode);
    if (mode == MODE_CHANNEL && gi != NULL)
        return mf_fail(INVALID, "%s: quantMode perchannel takes no groupIndexOptional", OP);
    /* CheckDtype, through the table: the group index counts only with a smooth scale */
    const aclTensor *chk[MF_EXEC_SLOTS];
    for (int i = 0; i < def->n_in + def->n_out; i++) chk[i] = slots[i];
    if (sm == NULL && at[R_GROUP] >= 0) chk[at[R_GROUP]] = NULL;
    TRY(mf_op_check(def, chk, workspaceSize, executor));
    if (gi != NULL && !mf_tensor_live(gi))
        return mf_fail(INVALID, "%s: groupIndexOptional (%p) is not a live aclTensor", OP, (const void *)gi);
    /* INT4 tensors cannot be made in moefr (aclCreateTensor: no byte size);
     * the 8-bit floats are Ascend 950's and not implemented */
    if (y->dtype != ACL_INT8 && y->dtype != ACL_INT32)
        return mf_fail(INVALID, "%s: yOut dtype %s is in CANN's table but moefr does not implement it (INT8, or INT32 "
                       "holding eight int4)", OP, mf_dtype_name(y->dtype));
    /* CheckShape */
    char b1[160], b2[160];
    const int xd = x->ndim;
    if (xd <= 1) return mf_fail(INVALID, "%s: x must have more than 1 dim, got %d-D %s", OP, xd, shape(x, b1, sizeof b1));
    const int64_t H = x->dims[xd - 1], M = x->dims[xd - 2];
    if (sm != NULL) {
        if (gi != NULL) {
            if (gi->ndim != 1) return mf_fail(INVALID, "%s: groupIndexOptional must be 1-D, got %d-D", OP, gi->ndim);
        } else {
            if (sm->ndim != 1)
                return mf_fail(INVALID, "%s: smoothScalesOptional must be 1-D without a group index, got %d-D %s", OP,
                               sm->ndim, shape(sm, b1, sizeof b1));
            const int64_t want = mode == MODE_CHANNEL ? M : H;
            if (sm->dims[0] != want)
                return mf_fail(INVALID, "%s: smoothScalesOptional must have %lld elements (x's %s dim), got %lld", OP,
                               (long long)want, mode == MODE_CHANNEL ? "second-to-last" : "last",
                               (long long)sm->dims[0]);
        }
    }
    if (y->dtype != ACL_INT32) {
        if (y->ndim != xd || !same_lead(x, y, xd))
            return mf_fail(INVALID, "%s: yOut must have x's shape %s, got %s", OP, shape(x, b1, sizeof b1),
                           shape(y, b2, sizeof b2));
    } else {
        if (y->ndim != xd || y->dims[xd - 1] * 8 != H || !same_lead(x, y, xd - 1))
            return mf_fail(INVALID, "%s: an INT32 yOut holds eight int4 each: its shape must be x's %s with the last dim "
                           "/ 8, got %s", OP, shape(x, b1, sizeof b1), shape(y, b2, sizeof b2));
    }
    if (y->dtype == ACL_INT4 && H % 2 != 0)
        return mf_fail(INVALID, "%s: an INT4 yOut needs x's last dim even, got %lld", OP, (long long)H);
    if (mode == MODE_TOKEN) {
        if (sc->ndim != xd - 1 || !same_lead(x, sc, xd - 1))
            return mf_fail(INVALID, "%s: scaleOut must be x's shape %s without the last dim, got %s", OP,
                           shape(x, b1, sizeof b1), shape(sc, b2, sizeof b2));
    } else if (mode == MODE_TENSOR) {
        if (sc->ndim != 1 || sc->dims[0] != 1)
            return mf_fail(INVALID, "%s: quantMode pertensor needs scaleOut of shape (1), got %s", OP,
                           shape(sc, b1, sizeof b1));
    } else {
        if (sc->ndim != xd - 1 || !same_lead(x, sc, xd - 2) || sc->dims[xd - 2] != H)
            return mf_fail(INVALID, "%s: quantMode perchannel needs scaleOut of x's shape %s without the second-to-last "
                           "dim, got %s", OP, shape(x, b1, sizeof b1), shape(sc, b2, sizeof b2));
    }
    if (of != NULL && (of->ndim != sc->ndim || !same_lead(of, sc, sc->ndim)))
        return mf_fail(INVALID, "%s: offsetOut must have scaleOut's shape %s, got %s", OP, shape(sc, b1, sizeof b1),
                       shape(of, b2, sizeof b2));

    /* moefr's own rule: outputs are written in place, one value per element */
    for (int r = R_Y; r <= R_OFFSET; r++)
        if (t[r] != NULL && mf_self_overlaps(t[r]))
            return mf_fail(INVALID, "%s: %s has elements that share memory (a stride of 0, negative or shorter than the "
                           "dims inside it); each output element needs its own place", OP, nm[r]);
    dq_plan pl;
    memset(&pl, 0, sizeof pl);
    memcpy(pl.at, at, sizeof pl.at);
    pl.op = OP;
    if (x->numel == 0 || y->numel == 0 || sc->numel == 0) { /* CANN's empty shortcut */
        pl.empty = true;
        return mf_op_publish(def, slots, 0, &pl, sizeof pl, dq_run, 0, workspaceSize, executor);
    }
    /* the tiling checks (dynamic_quant_tiling_arch35.cpp CheckOpInputShape) */
    unsigned unused = 0;
    if (sm != NULL && gi != NULL && gi->dims[0] == 0 && mf_soc_strict()) {
        /* A2/A3's tiling (dynamic_quant_tiling.cpp CheckSmoothShape) takes zero
         * groups as none: the smooth scale is then one row of x's last dim */
        if (sm->ndim != 1)
            return mf_fail(TILING, "%s: with an empty group index smoothScalesOptional must be 1-D, got %d-D %s", OP,
                           sm->ndim, shape(sm, b1, sizeof b1));
        if (sm->dims[0] != H)
            return mf_fail(TILING, "%s: smoothScalesOptional must have x's last dim %lld elements, got %lld", OP,
                           (long long)H, (long long)sm->dims[0]);
        unused |= 1u << at[R_GROUP];
    } else if (sm != NULL && gi != NULL) {
        const int64_t E = gi->dims[0];
        if (E <= 0 || E > MF_DQ_MAX_GROUPS)
            return mf_fail(TILING, "%s: groupIndexOptional must have 1..%d entries, got %lld", OP, MF_DQ_MAX_GROUPS,
                           (long long)E);
        if (sm->ndim != 2)
            return mf_fail(TILING, "%s: with a group index smoothScalesOptional must be 2-D, got %d-D %s", OP, sm->ndim,
                           shape(sm, b1, sizeof b1));
        if (sm->dims[0] != E)
            return mf_fail(TILING, "%s: smoothScalesOptional dim0 must be the group count %lld, got %lld", OP,
                           (long long)E, (long long)sm->dims[0]);
        if (sm->dims[1] != H)
            return mf_fail(TILING, "%s: smoothScalesOptional dim1 must be x's last dim %lld, got %lld", OP,
                           (long long)H, (long long)sm->dims[1]);
        pl.grouped = true;
        pl.E = E;
    } else if (gi != NULL) {
        unused |= 1u << at[R_GROUP]; /* without a smooth scale the group index is not read */
    }
    pl.mode = mode;
    pl.ydt = y->dtype;
    pl.m = mf_dq_math_of(mf_soc_strict(), isSymmetrical, y->dtype == ACL_INT8 ? 127 : 7);
    int64_t B = 1;
    for (int d = 0; d < xd - 2; d++) B *= x->dims[d];
    pl.B = B;
    pl.M = M;
    pl.N = H;
    return mf_op_publish(def, slots, unused, &pl, sizeof pl, dq_run, 0, workspaceSize, executor);
}

/* ---- the four front ends ---- */

aclnnStatus aclnnDynamicQuantGetWorkspaceSize(const aclTensor *x, const aclTensor *smoothScalesOptional,
                                              const aclTensor *yOut, const aclTensor *scaleOut,
                                              uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *s[4] = {x, smoothScalesOptional, yOut, scaleOut};
    return plan_common(&DEF_V1, AT_V1, s, true, "pertoken", workspaceSize, executor);
}

aclnnStatus aclnnDynamicQuant(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_DYNAMIC_QUANT, DEF_V1.name, workspace, workspaceSize, stream);
}

aclnnStatus aclnnDynamicQuantV2GetWorkspaceSize(const aclTensor *x, const aclTensor *smoothScalesOptional,
                                                const aclTensor *groupIndexOptional, int64_t dstType,
                                                const aclTensor *yOut, const aclTensor *scaleOut,
                                                const aclTensor *offsetOut, uint64_t *workspaceSize,
                                                aclOpExecutor **executor) {
    (void)dstType; /* ops-nn reads yOut's dtype, not dstType */
    const aclTensor *s[6] = {x, smoothScalesOptional, groupIndexOptional, yOut, scaleOut, offsetOut};
    return plan_common(&DEF_V2, AT_V2, s, offsetOut == NULL, "pertoken", workspaceSize, executor);
}

aclnnStatus aclnnDynamicQuantV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_DYNAMIC_QUANT_V2, DEF_V2.name, workspace, workspaceSize, stream);
}

/* V3 and V4 exist on Ascend 950 only: ACLNN_ERR_INNER before any check */
static aclnnStatus only_950(const char *op) {
    if (mf_soc_strict())
        return mf_fail(ACLNN_ERR_INNER, "%s: only Ascend 950 has this operator (MOEFR_SOC=ascend910b)", op);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnDynamicQuantV3GetWorkspaceSize(const aclTensor *x, const aclTensor *smoothScalesOptional,
                                                const aclTensor *groupIndexOptional, int64_t dstType,
                                                bool isSymmetrical, const char *quantMode, const aclTensor *yOut,
                                                const aclTensor *scaleOut, const aclTensor *offsetOut,
                                                uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)dstType;
    TRY(only_950(DEF_V3.name));
    const aclTensor *s[6] = {x, smoothScalesOptional, groupIndexOptional, yOut, scaleOut, offsetOut};
    return plan_common(&DEF_V3, AT_V2, s, isSymmetrical, quantMode, workspaceSize, executor);
}

aclnnStatus aclnnDynamicQuantV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_DYNAMIC_QUANT_V3, DEF_V3.name, workspace, workspaceSize, stream);
}

aclnnStatus aclnnDynamicQuantV4GetWorkspaceSize(const aclTensor *x, const aclTensor *smoothScalesOptional,
                                                const aclTensor *groupIndexOptional, int64_t dstType,
                                                bool isSymmetrical, const char *quantMode, float dstTypeMax,
                                                const aclTensor *yOut, const aclTensor *scaleOut,
                                                const aclTensor *offsetOut, uint64_t *workspaceSize,
                                                aclOpExecutor **executor) {
    (void)dstType;
    (void)dstTypeMax; /* read by CANN for HIFLOAT8 output only */
    TRY(only_950(DEF_V4.name));
    const aclTensor *s[6] = {x, smoothScalesOptional, groupIndexOptional, yOut, scaleOut, offsetOut};
    return plan_common(&DEF_V4, AT_V2, s, isSymmetrical, quantMode, workspaceSize, executor);
}

aclnnStatus aclnnDynamicQuantV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_DYNAMIC_QUANT_V4, DEF_V4.name, workspace, workspaceSize, stream);
}

/* ---- registry entries (opdef.h); quantMode travels as 0 pertoken, 1 pertensor, 2 perchannel ---- */
static const char *mode_name(int64_t m) {
    return m == 0 ? "pertoken" : m == 1 ? "pertensor" : m == 2 ? "perchannel" : "perrow";
}
static const mf_attr_desc ATTRS_V2[] = {{"dstType", MF_ATTR_INT64, 2, 3}};
static const mf_attr_desc ATTRS_V3[] = {{"dstType", MF_ATTR_INT64, 2, 3},
                                        {"isSymmetrical", MF_ATTR_BOOL, 0, 1},
                                        {"quantMode", MF_ATTR_INT64, 0, 2}};
static const mf_attr_desc ATTRS_V4[] = {{"dstType", MF_ATTR_INT64, 2, 3},
                                        {"isSymmetrical", MF_ATTR_BOOL, 0, 1},
                                        {"quantMode", MF_ATTR_INT64, 0, 2},
                                        {"dstTypeMax", MF_ATTR_DOUBLE, 0, 32768}};
static aclnnStatus gws_v1(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    (void)a;
    return aclnnDynamicQuantGetWorkspaceSize(t[0], t[1], t[2], t[3], ws, e);
}
static aclnnStatus gws_v2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnDynamicQuantV2GetWorkspaceSize(t[0], t[1], t[2], a[0].i, t[3], t[4], t[5], ws, e);
}
static aclnnStatus gws_v3(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnDynamicQuantV3GetWorkspaceSize(t[0], t[1], t[2], a[0].i, a[1].i != 0, mode_name(a[2].i), t[3], t[4],
                                               t[5], ws, e);
}
static aclnnStatus gws_v4(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnDynamicQuantV4GetWorkspaceSize(t[0], t[1], t[2], a[0].i, a[1].i != 0, mode_name(a[2].i),
                                               (float)a[3].d, t[3], t[4], t[5], ws, e);
}
const mf_op_entry mf_entry_dynamic_quant = {&DEF_V1, NULL, 0, gws_v1, aclnnDynamicQuant};
const mf_op_entry mf_entry_dynamic_quant_v2 = {&DEF_V2, ATTRS_V2, 1, gws_v2, aclnnDynamicQuantV2};
const mf_op_entry mf_entry_dynamic_quant_v3 = {&DEF_V3, ATTRS_V3, 3, gws_v3, aclnnDynamicQuantV3};
const mf_op_entry mf_entry_dynamic_quant_v4 = {&DEF_V4, ATTRS_V4, 4, gws_v4, aclnnDynamicQuantV4};
