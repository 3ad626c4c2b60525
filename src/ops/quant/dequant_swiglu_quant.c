/* dequant_swiglu_quant.c - aclnnDequantSwigluQuant and V2 (ops-nn quant/dequant_swiglu_quant),
 * both phases. The aclnn entries are generated from the op definition (no op_api source):
 * phase 1 is the engine's (NULL 161001, the def table 161002, contiguous outputs), the empty
 * shortcut, then the product's tiling checks in their order (561002): Ascend 950's
 * (dequant_swiglu_quant_tiling_arch35.cpp) by default, A2/A3's under MOEFR_SOC=ascend910b
 * (dequant_swiglu_quant_tiling_base.cpp without a group index, dequant_swiglu_quant_tiling.cpp
 * with one). Phase 2 follows the kernels' fp32 operations element by element (docs/CANN_COMPAT.md,
 * "DequantSwigluQuant"): the rows of a group share its weight-scale, bias and quant-scale rows;
 * a row is computed twice when quantised dynamically (its max, then its values), so nothing is
 * allocated and both passes give the same bits. */
#include <math.h>
#include <stdio.h>
#include <strings.h>

#include "aclnnop/aclnn_dequant_swiglu_quant.h"
#include "aclnnop/aclnn_dequant_swiglu_quant_v2.h"
#include "ops/common.h"
#include "ops/opdef.h"
#include "ops/quant/dynamic_quant.h"

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define INVALID ACLNN_ERR_PARAM_INVALID

/* the signature's tensors (V1 and V2 alike) */
enum { S_X, S_WS, S_AS, S_BIAS, S_QS, S_QO, S_GI, S_Y, S_SCALE, S_N };
static const char *const NAMES[S_N] = {"x", "weightScaleOptional", "activationScaleOptional", "biasOptional",
                                       "quantScaleOptional", "quantOffsetOptional", "groupIndexOptional", "yOut",
                                       "scaleOut"};
static const unsigned FLAGS[S_N] = {MF_T_REQUIRED, 0, 0, 0, 0, 0, 0, MF_T_REQUIRED | MF_T_CONTIG,
                                    MF_T_REQUIRED | MF_T_CONTIG};

/* dequant_swiglu_quant_def.cpp. A2/A3: six columns, INT64 group index, INT8 y.
 * Ascend 950: the group index INT64 or INT32, x and bias in six pairs, y in six dtypes (72). */
#define F32 ACL_FLOAT
#define COL(X, B, G, Y) {X, F32, F32, B, F32, F32, G, Y, F32}
static const mf_dtcol COLS_A2[] = {COL(ACL_BF16, F32, ACL_INT64, ACL_INT8),    COL(ACL_FLOAT16, F32, ACL_INT64, ACL_INT8),
                                   COL(ACL_INT32, ACL_FLOAT16, ACL_INT64, ACL_INT8), COL(ACL_INT32, ACL_BF16, ACL_INT64, ACL_INT8),
                                   COL(ACL_INT32, F32, ACL_INT64, ACL_INT8),     COL(ACL_INT32, ACL_INT32, ACL_INT64, ACL_INT8)};
#define XB(G, Y)                                                                                            \
    COL(ACL_INT32, F32, G, Y), COL(ACL_INT32, ACL_BF16, G, Y), COL(ACL_INT32, ACL_FLOAT16, G, Y),           \
        COL(ACL_INT32, ACL_INT32, G, Y), COL(ACL_FLOAT16, F32, G, Y), COL(ACL_BF16, F32, G, Y)
#define YS(G)                                                                                               \
    XB(G, ACL_INT8), XB(G, ACL_FLOAT8_E4M3FN), XB(G, ACL_FLOAT8_E5M2), XB(G, ACL_FLOAT4_E2M1),              \
        XB(G, ACL_FLOAT4_E1M2), XB(G, ACL_HIFLOAT8)
static const mf_dtcol COLS_950[] = {YS(ACL_INT64), YS(ACL_INT32)};
#undef YS
#undef XB
#undef COL

static const mf_op_def DEF_V1 = {"aclnnDequantSwigluQuant", MF_OP_DEQUANT_SWIGLU_QUANT, 7, 2, NAMES, FLAGS,
                                 COLS_950, (int)(sizeof COLS_950 / sizeof COLS_950[0]), COLS_A2, 6};
static const mf_op_def DEF_V2 = {"aclnnDequantSwigluQuantV2", MF_OP_DEQUANT_SWIGLU_QUANT_V2, 7, 2, NAMES, FLAGS,
                                 COLS_950, (int)(sizeof COLS_950 / sizeof COLS_950[0]), COLS_A2, 6};

/* One of the per-column inputs (weight scale, bias, quant scale, quant offset):
 * element (g, j) is at flat index (grouped ? g * ncol : 0) + (ncol == 1 ? 0 : j). */
typedef struct dsq_vec {
    bool on, grouped;
    int64_t ncol;
} dsq_vec;

typedef struct dsq_plan {
    const char *op;
    bool empty, a2, dynamic, left;
    int mode;                 /* swigluMode 0, 1, 2 (3: A2/A3's grouped kernel) */
    float clamp, alpha, gbias;
    int xdt, bdt;             /* x's and the bias's dtypes */
    int64_t R, H;             /* rows; y's last dim (x's is 2H) */
    int64_t G;                /* groups (1 without a group index) */
    bool grouped;             /* counts from groupIndexOptional (else every row is group 0) */
    bool act;                 /* activation scale given (INT32 x) */
    dsq_vec ws, bias, qs, qo; /* qs/qo ncol: H or 1 */
} dsq_plan;

/* ---- phase 2 ---- */

/* byte address of flat (row-major) element i of t */
static inline const char *at_flat(const aclTensor *t, int64_t i) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        const int64_t n = t->dims[d];
        off += (i % n) * t->strides[d];
        i /= n;
    }
    return mf_tensor_base(t) + off * (int64_t)mf_dtype_size(t->dtype);
}
static inline float f32_at(const aclTensor *t, int64_t i) {
    const char *p = at_flat(t, i);
    uint16_t h;
    float f;
    switch (t->dtype) {
    case ACL_FLOAT: memcpy(&f, p, 4); return f;
    case ACL_FLOAT16: memcpy(&h, p, 2); return mf_f16_to_f32(h);
    case ACL_BF16: memcpy(&h, p, 2); return mf_bf16_to_f32(h);
    default: {
        int32_t v;
        memcpy(&v, p, 4);
        return (float)v;
    }
    }
}
static inline int32_t i32_at(const aclTensor *t, int64_t i) {
    int32_t v;
    memcpy(&v, at_flat(t, i), 4);
    return v;
}
static inline int64_t vec_ix(const dsq_vec *v, int64_t g, int64_t j) {
    return (v->grouped ? g * v->ncol : 0) + (v->ncol == 1 ? 0 : j);
}

typedef struct dsq_ctx {
    const dsq_plan *p;
    const aclTensor *t[S_N];
    const int64_t *start; /* first row of each group; start[G] the end of the last */
} dsq_ctx;

/* n elements [j0, j0 + n) of a per-column input's row g, widened to fp32 (or, for an INT32
 * bias, kept as int32 in i) */
static void vec_tile(const aclTensor *t, const dsq_vec *v, int64_t g, int64_t j0, int64_t n, float *f, int32_t *i) {
    const int64_t at = vec_ix(v, g, j0), step = v->ncol == 1 ? 0 : 1;
    const size_t es = mf_dtype_size(t->dtype);
    if (mf_tensor_contiguous(t)) {
        const char *b = mf_tensor_base(t) + at * (int64_t)es;
        if (i) {
            for (int64_t k = 0; k < n; k++) memcpy(&i[k], b + k * step * 4, 4);
        } else {
            mf_widen_f32(b, step * (int64_t)es, t->dtype, n, f, 1);
        }
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        if (i) i[k] = i32_at(t, at + k * step);
        else f[k] = f32_at(t, at + k * step);
    }
}

#define CT 256 /* output columns computed at a time */

/* x's columns [j0, j0 + n) (n <= 2 CT) of row r (group g), dequantised in the kernels' order:
 * INT32 bias added in int32 (wrapping), the int32 -> fp32 cast, * weight scale, * activation
 * scale, + float bias; FLOAT16 / BFLOAT16 widened exactly. */
static void deq_span(const dsq_ctx *c, int64_t r, int64_t g, int64_t j0, int64_t n, float *out) {
    const dsq_plan *p = c->p;
    const aclTensor *x = c->t[S_X];
    const int nd = x->ndim;
    const int64_t sl = x->strides[nd - 1] * (int64_t)mf_dtype_size(x->dtype);
    const char *row = at_flat(x, r * 2 * p->H) + j0 * sl;
    if (p->xdt != ACL_INT32) {
        mf_widen_f32(row, sl, p->xdt, n, out, 1);
        return;
    }
    int32_t v[2 * CT], bi[2 * CT];
    float w[2 * CT], bf[2 * CT];
    for (int64_t k = 0; k < n; k++) memcpy(&v[k], row + k * sl, 4);
    const bool ibias = p->bias.on && p->bdt == ACL_INT32, fbias = p->bias.on && !ibias;
    if (ibias) {
        vec_tile(c->t[S_BIAS], &p->bias, g, j0, n, NULL, bi);
        for (int64_t k = 0; k < n; k++) v[k] = (int32_t)((uint32_t)v[k] + (uint32_t)bi[k]);
    }
    vec_tile(c->t[S_WS], &p->ws, g, j0, n, w, NULL);
    for (int64_t k = 0; k < n; k++) out[k] = (float)v[k] * w[k];
    if (p->act) {
        const float a = f32_at(c->t[S_AS], r);
        for (int64_t k = 0; k < n; k++) out[k] = out[k] * a;
    }
    if (fbias) {
        vec_tile(c->t[S_BIAS], &p->bias, g, j0, n, bf, NULL);
        for (int64_t k = 0; k < n; k++) out[k] = out[k] + bf[k];
    }
}

/* exp in double, rounded once to fp32: the same value on every path (the NPU's Exp is
 * its own approximation; see CANN_COMPAT) */
static inline float exp32(float t) { return (float)exp((double)t); }

/* the values before quantisation of output columns [c0, c0 + n) of row r (n <= CT) */
static void swi_tile(const dsq_ctx *c, int64_t r, int64_t g, int64_t c0, int64_t n, float *s) {
    const dsq_plan *p = c->p;
    float A[CT], B[CT];
    if (p->mode == 1) { /* (even, odd) pairs */
        float both[2 * CT];
        deq_span(c, r, g, 2 * c0, 2 * n, both);
        for (int64_t k = 0; k < n; k++) A[k] = both[2 * k], B[k] = both[2 * k + 1];
    } else {
        deq_span(c, r, g, p->left ? c0 : p->H + c0, n, A);
        deq_span(c, r, g, p->left ? p->H + c0 : c0, n, B);
    }
    const float cl = p->clamp;
    for (int64_t k = 0; k < n; k++) {
        float a = A[k], b = B[k];
        if (p->mode == 0) {
            const float e = exp32(-a); /* Muls by -1, Exp */
            s[k] = a / (e + 1.0f) * b; /* Adds 1, Div, Mul */
        } else if (p->mode == 3) {     /* A2/A3's grouped kernel: b clamped both ways, silu clamped above */
            b = b < cl ? b : cl;
            b = b > -cl ? b : -cl;
            float sa = a / (exp32(-a) + 1.0f);
            sa = sa < cl ? sa : cl;
            s[k] = sa * b;
        } else {
            a = a < cl ? a : cl; /* Mins */
            const float e = exp32(a * -p->alpha);
            const float sa = a / (e + 1.0f);
            b = b < cl ? b : cl;
            b = b > -cl ? b : -cl;
            s[k] = sa * (b + p->gbias);
        }
    }
    if (!p->qs.on) return;
    float q[CT], o[CT];
    vec_tile(c->t[S_QS], &p->qs, g, c0, n, q, NULL);
    if (p->qo.on) vec_tile(c->t[S_QO], &p->qo, g, c0, n, o, NULL);
    if (p->dynamic) { /* both products' dynamic kernels multiply */
        for (int64_t k = 0; k < n; k++) s[k] = s[k] * q[k];
    } else if (p->a2 && p->qs.ncol == 1) {
        /* Muls by 1/scale, Adds; the grouped kernel takes a zero scale as 1 */
        const float k1 = p->grouped && q[0] == 0.0f ? 1.0f : 1.0f / q[0];
        for (int64_t k = 0; k < n; k++) s[k] = s[k] * k1 + o[k];
    } else {
        for (int64_t k = 0; k < n; k++) s[k] = s[k] / q[k]; /* Div */
        if (p->qo.on)
            for (int64_t k = 0; k < n; k++) s[k] = s[k] + o[k];
    }
}

#define ROWBUF 4096 /* rows up to this many outputs keep their values between the two passes */

static void rows_fn(void *ctx, int64_t b, int64_t e) {
    const dsq_ctx *c = ctx;
    const dsq_plan *p = c->p;
    const int64_t H = p->H;
    int8_t *y = (int8_t *)mf_tensor_base(c->t[S_Y]);
    float *sc = p->dynamic ? (float *)mf_tensor_base(c->t[S_SCALE]) : NULL; /* static: not written */
    float keep[ROWBUF];
    const bool kept = H <= ROWBUF;
    int64_t g = 0;
    for (int64_t r = b; r < e; r++) {
        if (p->grouped)
            while (g < p->G && c->start[g + 1] <= r) g++;
        if (p->grouped && g >= p->G) break; /* rows past the counted ones are not written */
        float k = 0.0f, v[CT];
        if (p->dynamic) {
            float mx = 0.0f; /* NaN never wins */
            for (int64_t c0 = 0; c0 < H; c0 += CT) {
                const int64_t n = H - c0 < CT ? H - c0 : CT;
                float *t = kept ? keep + c0 : v;
                swi_tile(c, r, g, c0, n, t);
                for (int64_t j = 0; j < n; j++) {
                    const float a = fabsf(t[j]);
                    mx = a > mx ? a : mx;
                }
            }
            /* 950 and A2/A3's grouped kernel: y = v / scale; A2/A3's plain kernel: v * (1 / scale).
             * The scale: max / 127 (950, A2 plain), max * fp32(1 / 127) (A2 grouped) */
            const float s = p->a2 && p->grouped ? mx * (1.0f / 127.0f) : mx / 127.0f;
            sc[r] = s;
            k = p->a2 && !p->grouped ? 1.0f / s : s;
        }
        for (int64_t c0 = 0; c0 < H; c0 += CT) {
            const int64_t n = H - c0 < CT ? H - c0 : CT;
            const float *t = v;
            if (p->dynamic && kept) t = keep + c0;
            else swi_tile(c, r, g, c0, n, v);
            int8_t *yr = y + r * H + c0;
            if (!p->dynamic)
                for (int64_t j = 0; j < n; j++) yr[j] = mf_dq_round(t[j], 127.0f);
            else if (p->a2 && !p->grouped)
                for (int64_t j = 0; j < n; j++) yr[j] = mf_dq_round(t[j] * k, 127.0f);
            else
                for (int64_t j = 0; j < n; j++) yr[j] = mf_dq_round(t[j] / k, 127.0f);
        }
    }
}

static aclnnStatus dsq_run(const void *plan, const aclTensor *const *slots, void *workspace) {
    (void)workspace;
    const dsq_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    dsq_ctx c;
    c.p = p;
    for (int i = 0; i < S_N; i++) c.t[i] = slots[i];
    int64_t start[MF_DQ_MAX_GROUPS + 1];
    c.start = start;
    if (p->grouped) {
        /* counts CANN does not check: a negative one, or a sum past x's rows, would make its
         * kernel read x and write y and scale past their ends */
        const mf_small gi = mf_small_of(c.t[S_GI]);
        start[0] = 0;
        for (int64_t g = 0; g < p->G; g++) {
            const int64_t n = mf_small_index(&gi, g, 0);
            if (n < 0 || n > p->R - start[g])
                return mf_fail(INVALID, "%s: groupIndexOptional[%lld] = %lld: the counts must be >= 0 and sum to at most "
                               "x's %lld rows (%lld counted before it)", p->op, (long long)g, (long long)n,
                               (long long)p->R, (long long)start[g]);
            start[g + 1] = start[g] + n;
        }
    }
    const int64_t work = p->H > 0 ? p->H * 8 : 1;
    if (!p->grouped) {
        mf_parallel_for(p->R, rows_fn, &c, 32768 / work + 1);
    } else {
        /* a chunk finds its first row's group itself: rows_fn scans from group 0 */
        mf_parallel_for(start[p->G], rows_fn, &c, 32768 / work + 1);
    }
    return ACLNN_SUCCESS;
}

/* ---- phase 1 ---- */

static const char *shp(const aclTensor *t, char *b, size_t n) { return t ? mf_shape_str(t, b, n) : "(none)"; }

typedef struct dsq_args {
    bool left;
    const char *quant_mode; /* NULL: "static" */
    int64_t dst_type;
    const char *round_mode; /* NULL: "rint" */
    int64_t act_dim;
    int64_t swiglu_mode;
    double clamp, alpha, gbias;
} dsq_args;

/* A2/A3's tilings only log a y or scale shape that does not fit x; the kernels write x's rows
 * times H int8 and x's rows floats, contiguously. moefr refuses outputs of other sizes (161002,
 * safety) and, with a group index, a y whose last dim is not H (its quant-scale checks use it). */
static aclnnStatus check_outputs_a2(const char *OP, const aclTensor *x, const aclTensor *y, const aclTensor *sc,
                                    bool last_dim) {
    char b1[160], b2[160];
    const int64_t H2 = x->dims[x->ndim - 1], R = H2 ? x->numel / H2 : 0;
    if (y->numel != R * (H2 / 2) || (last_dim && (y->ndim < 1 || y->dims[y->ndim - 1] * 2 != H2)))
        return mf_fail(INVALID, "%s: yOut %s must hold x's %s rows of %lld (the kernel writes them)", OP,
                       shp(y, b2, sizeof b2), shp(x, b1, sizeof b1), (long long)(H2 / 2));
    if (sc->numel != R)
        return mf_fail(INVALID, "%s: scaleOut %s must have x's %lld rows (the kernel writes them)", OP,
                       shp(sc, b2, sizeof b2), (long long)R);
    return ACLNN_SUCCESS;
}

/* the last dim and, for 2 dims, the first of a per-column input */
static int64_t last(const aclTensor *t) { return t->ndim ? t->dims[t->ndim - 1] : 1; }

/* Ascend 950: dequant_swiglu_quant_tiling_arch35.cpp GetShapeAttrsInfo, in its order */
static aclnnStatus tiling_950(const char *OP, const aclTensor *const *t, const dsq_args *a, dsq_plan *pl) {
    const aclTensor *x = t[S_X], *ws = t[S_WS], *as = t[S_AS], *bias = t[S_BIAS], *qs = t[S_QS], *qo = t[S_QO],
                    *gi = t[S_GI], *y = t[S_Y], *sc = t[S_SCALE];
    char b1[160];
    const int nd = x->ndim; /* GetInputX (the dtype is the table's) */
    if (nd < 2 || nd > 8)
        return mf_fail(TILING, "%s: x must have 2 to 8 dims, got %d", OP, nd);
    for (int d = 0; d < nd; d++)
        if (x->dims[d] <= 0)
            return mf_fail(TILING, "%s: x's dim %d must be positive, got %s", OP, d, shp(x, b1, sizeof b1));
    const int64_t H2 = x->dims[nd - 1];
    int64_t G = 0; /* GetInputGroupIndex */
    if (gi != NULL) { /* a 0-D tensor counts as (1) (EnsureNotScalar), here and below */
        if (gi->ndim > 2)
            return mf_fail(TILING, "%s: groupIndexOptional must have 1 or 2 dims, got %d", OP, gi->ndim);
        G = gi->ndim ? gi->dims[0] : 1;
        if (G < 1) return mf_fail(TILING, "%s: groupIndexOptional needs at least 1 group, got %lld", OP, (long long)G);
    }
    /* GetAttrActivateDim */
    int64_t ad = a->act_dim < 0 ? a->act_dim + nd : a->act_dim;
    if (ad < 0 || ad >= nd)
        return mf_fail(TILING, "%s: activateDim must be in [-%d, %d], got %lld", OP, nd, nd - 1, (long long)a->act_dim);
    if (x->dims[ad] % 2 != 0)
        return mf_fail(TILING, "%s: x's dim %lld (activateDim) must be even, got %s", OP, (long long)ad,
                       shp(x, b1, sizeof b1));
    if (ad != nd - 1 && gi != NULL)
        return mf_fail(TILING, "%s: groupIndexOptional must be NULL when activateDim is not x's last dim", OP);
    /* GetAttr */
    const char *qm = a->quant_mode ? a->quant_mode : "static";
    if (strcmp(qm, "static") != 0 && strcmp(qm, "dynamic") != 0)
        return mf_fail(TILING, "%s: quantModeOptional must be \"static\" or \"dynamic\", got \"%.32s\"", OP, qm);
    const bool dynamic = qm[0] == 'd';
    const int64_t dt = a->dst_type;
    if (dt != 2 && dt != 34 && dt != 35 && dt != 36 && dt != 40 && dt != 41)
        return mf_fail(TILING, "%s: dstType must be 2, 34, 35, 36, 40 or 41, got %lld", OP, (long long)dt);
    const char *rm = a->round_mode ? a->round_mode : "rint";
    static const char *const RM[] = {"rint", "round", "floor", "ceil", "trunc"};
    int rmi = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(rm, RM[i]) == 0) rmi = i;
    if (rmi < 0)
        return mf_fail(TILING, "%s: roundModeOptional must be rint, round, floor, ceil or trunc, got \"%.32s\"", OP, rm);
    if (y->dtype == ACL_HIFLOAT8 ? rmi != 1
                                 : (y->dtype == ACL_INT8 || y->dtype == ACL_FLOAT8_E5M2 || y->dtype == ACL_FLOAT8_E4M3FN) &&
                                       rmi != 0)
        return mf_fail(TILING, "%s: roundModeOptional \"%s\" is not allowed for yOut %s (INT8 and FLOAT8: rint; HIFLOAT8: "
                       "round)", OP, rm, mf_dtype_name(y->dtype));
    if (a->swiglu_mode != 0 && a->swiglu_mode != 1)
        return mf_fail(TILING, "%s: swigluMode must be 0 or 1 on Ascend 950, got %lld", OP, (long long)a->swiglu_mode);
    const float clamp = (float)a->clamp;
    if (!(isfinite(clamp) && clamp > 0.0f))
        return mf_fail(TILING, "%s: clampLimit must be finite and > 0, got %g", OP, a->clamp);
    /* CheckOutputY */
    if ((y->dtype == ACL_FLOAT4_E2M1 || y->dtype == ACL_FLOAT4_E1M2) && y->ndim >= nd && y->dims[nd - 1] % 2 != 0)
        return mf_fail(TILING, "%s: a FLOAT4 yOut needs an even last dim", OP);
    if (y->ndim != nd) return mf_fail(TILING, "%s: yOut must have x's %d dims, got %d", OP, nd, y->ndim);
    for (int d = 0; d < nd; d++) {
        const int64_t want = d == ad ? x->dims[d] / 2 : x->dims[d];
        if (y->dims[d] != want)
            return mf_fail(TILING, "%s: yOut's dim %d must be %lld (x's%s), got %lld", OP, d, (long long)want,
                           d == ad ? ", halved" : "", (long long)y->dims[d]);
    }
    const bool intx = x->dtype == ACL_INT32;
    /* CheckInputWeightScale */
    if (ws != NULL && !intx)
        return mf_fail(TILING, "%s: weightScaleOptional must be NULL when x is %s", OP, mf_dtype_name(x->dtype));
    if (ws == NULL && intx) return mf_fail(TILING, "%s: weightScaleOptional is required when x is INT32", OP);
    pl->ws.ncol = H2;
    if (ws != NULL) {
        const aclTensor *w = ws;
        if (w->ndim > 2) return mf_fail(TILING, "%s: weightScaleOptional must have at most 2 dims, got %d", OP, w->ndim);
        if (w->ndim <= 1) {
            if (gi != NULL)
                return mf_fail(TILING, "%s: groupIndexOptional must be NULL with a 1-D weightScaleOptional", OP);
            if ((w->ndim ? w->dims[0] : 1) != H2)
                return mf_fail(TILING, "%s: weightScaleOptional must have x's last dim %lld, got %s", OP, (long long)H2,
                               shp(w, b1, sizeof b1));
        } else if (gi != NULL) {
            if (!(w->dims[0] == G && w->dims[1] == H2))
                return mf_fail(TILING, "%s: weightScaleOptional must be (%lld, %lld) (groups, x's last dim), got %s", OP,
                               (long long)G, (long long)H2, shp(w, b1, sizeof b1));
            pl->ws.grouped = true;
        } else if (!(w->dims[0] == 1 && w->dims[1] == H2) && !(w->dims[0] == H2 && w->dims[1] == 1)) {
            return mf_fail(TILING, "%s: weightScaleOptional must be (1, %lld) or (%lld, 1), got %s", OP, (long long)H2,
                           (long long)H2, shp(w, b1, sizeof b1));
        }
        pl->ws.on = true;
    }
    /* CheckInputActScale */
    if (as != NULL) {
        if (!intx)
            return mf_fail(TILING, "%s: activationScaleOptional must be NULL when x is %s", OP, mf_dtype_name(x->dtype));
        if (as->numel != x->numel / H2)
            return mf_fail(TILING, "%s: activationScaleOptional must have %lld elements (x's rows), got %lld", OP,
                           (long long)(x->numel / H2), (long long)as->numel);
        pl->act = true;
    }
    /* CheckInputBias */
    pl->bias.ncol = H2;
    if (bias != NULL) {
        if (!intx)
            return mf_fail(TILING, "%s: biasOptional must be NULL when x is %s", OP, mf_dtype_name(x->dtype));
        if (bias->ndim > 2 || bias->ndim == 0)
            return mf_fail(TILING, "%s: biasOptional must have 1 or 2 dims, got %d", OP, bias->ndim);
        if (bias->ndim == 1) {
            if (gi != NULL) return mf_fail(TILING, "%s: groupIndexOptional must be NULL with a 1-D biasOptional", OP);
            if (bias->dims[0] != H2)
                return mf_fail(TILING, "%s: biasOptional must have x's last dim %lld, got %s", OP, (long long)H2,
                               shp(bias, b1, sizeof b1));
        } else {
            if (bias->dims[1] != H2)
                return mf_fail(TILING, "%s: biasOptional's last dim must be x's %lld, got %s", OP, (long long)H2,
                               shp(bias, b1, sizeof b1));
            if (gi != NULL && bias->dims[0] != G)
                return mf_fail(TILING, "%s: biasOptional's dim 0 must be the %lld groups, got %s", OP, (long long)G,
                               shp(bias, b1, sizeof b1));
            if (gi == NULL && bias->dims[0] != 1)
                return mf_fail(TILING, "%s: biasOptional's dim 0 must be 1 without a group index, got %s", OP,
                               shp(bias, b1, sizeof b1));
            pl->bias.grouped = gi != NULL;
        }
        pl->bias.on = true;
    }
    const int64_t Hy = y->dims[nd - 1];
    /* CheckInputQuantScale */
    if (qs != NULL) {
        const int qd = qs->ndim ? qs->ndim : 1;
        const int64_t d0 = qs->ndim ? qs->dims[0] : 1, dl = last(qs);
        if (qd > 2) return mf_fail(TILING, "%s: quantScaleOptional must have at most 2 dims, got %d", OP, qd);
        if (gi != NULL) {
            if (!dynamic) {
                if (d0 != G)
                    return mf_fail(TILING, "%s: quantScaleOptional's dim 0 must be the %lld groups, got %s", OP,
                                   (long long)G, shp(qs, b1, sizeof b1));
                if (qd == 2 && dl != Hy && dl != 1)
                    return mf_fail(TILING, "%s: quantScaleOptional's last dim must be 1 or %lld, got %s", OP,
                                   (long long)Hy, shp(qs, b1, sizeof b1));
            } else if (d0 != G || dl != Hy) {
                return mf_fail(TILING, "%s: quantScaleOptional must be (%lld, %lld) (groups, yOut's last dim), got %s", OP,
                               (long long)G, (long long)Hy, shp(qs, b1, sizeof b1));
            }
            pl->qs.grouped = true;
            pl->qs.ncol = qd == 2 && dl == Hy ? Hy : 1;
        } else {
            if (qd == 2 && d0 != 1)
                return mf_fail(TILING, "%s: a 2-D quantScaleOptional needs dim 0 = 1 without a group index, got %s", OP,
                               shp(qs, b1, sizeof b1));
            if (!dynamic && d0 != 1 && d0 != Hy)
                return mf_fail(TILING, "%s: quantScaleOptional's dim 0 must be 1 or %lld, got %s", OP, (long long)Hy,
                               shp(qs, b1, sizeof b1));
            if (dynamic && dl != Hy)
                return mf_fail(TILING, "%s: quantScaleOptional's last dim must be yOut's %lld, got %s", OP, (long long)Hy,
                               shp(qs, b1, sizeof b1));
            pl->qs.ncol = dl == Hy ? Hy : 1;
        }
        pl->qs.on = true;
    }
    if (!dynamic && qs == NULL) return mf_fail(TILING, "%s: quantScaleOptional is required in static mode", OP);
    /* CheckInputQuantOffset */
    if (qo != NULL) {
        if (dynamic) return mf_fail(TILING, "%s: quantOffsetOptional must be NULL in dynamic mode", OP);
        const int qd = qo->ndim ? qo->ndim : 1;
        const int64_t d0 = qo->ndim ? qo->dims[0] : 1, dl = last(qo);
        if (qd > 2) return mf_fail(TILING, "%s: quantOffsetOptional must have at most 2 dims, got %d", OP, qd);
        if (gi != NULL) {
            if (d0 != G)
                return mf_fail(TILING, "%s: quantOffsetOptional's dim 0 must be the %lld groups, got %s", OP, (long long)G,
                               shp(qo, b1, sizeof b1));
            if (qd == 2 && dl != 1 && dl != Hy)
                return mf_fail(TILING, "%s: quantOffsetOptional's last dim must be 1 or %lld, got %s", OP, (long long)Hy,
                               shp(qo, b1, sizeof b1));
            pl->qo.grouped = true;
        } else {
            if (qd == 2 && d0 != 1)
                return mf_fail(TILING, "%s: a 2-D quantOffsetOptional needs dim 0 = 1 without a group index, got %s", OP,
                               shp(qo, b1, sizeof b1));
            if (d0 != 1 && d0 != Hy)
                return mf_fail(TILING, "%s: quantOffsetOptional's dim 0 must be 1 or %lld, got %s", OP, (long long)Hy,
                               shp(qo, b1, sizeof b1));
        }
        pl->qo.on = true;
        pl->qo.ncol = pl->qs.ncol;
    }
    /* CheckForStaticQuant */
    if (!dynamic && qs != NULL && qo != NULL && qs->numel != qo->numel)
        return mf_fail(TILING, "%s: quantScaleOptional (%lld elements) and quantOffsetOptional (%lld) must match", OP,
                       (long long)qs->numel, (long long)qo->numel);
    /* CheckOutputScale */
    bool ok = sc->ndim == nd - 1;
    for (int d = 0; ok && d < nd - 1; d++) ok = sc->dims[d] == y->dims[d];
    if (!ok)
        return mf_fail(TILING, "%s: scaleOut must be yOut's shape without the last dim, got %s", OP,
                       shp(sc, b1, sizeof b1));
    /* what moefr implements of the rules above */
    if (y->dtype != ACL_INT8)
        return mf_fail(INVALID, "%s: yOut %s is in CANN's table but moefr implements INT8 only", OP,
                       mf_dtype_name(y->dtype));
    if (ad != nd - 1)
        return mf_fail(INVALID, "%s: activateDim %lld (not x's last dim) is CANN's; moefr implements the last dim only",
                       OP, (long long)a->act_dim);
    if (gi != NULL && gi->ndim == 2)
        return mf_fail(INVALID, "%s: a 2-D groupIndexOptional ((group, count) pairs) is CANN's; moefr implements the "
                       "1-D counts only", OP);
    if (gi != NULL && G > MF_DQ_MAX_GROUPS)
        return mf_fail(INVALID, "%s: moefr takes at most %d groups, got %lld", OP, MF_DQ_MAX_GROUPS, (long long)G);
    pl->dynamic = dynamic;
    pl->mode = (int)a->swiglu_mode;
    pl->clamp = clamp;
    pl->G = gi ? G : 1;
    return ACLNN_SUCCESS;
}

/* A2/A3 without a group index: dequant_swiglu_quant_tiling_base.cpp GetShapeAttrsInfoInner */
static aclnnStatus tiling_a2_plain(const char *OP, const aclTensor *const *t, const dsq_args *a, dsq_plan *pl) {
    const aclTensor *x = t[S_X], *ws = t[S_WS], *as = t[S_AS], *bias = t[S_BIAS], *qs = t[S_QS], *qo = t[S_QO];
    const int nd = x->ndim;
    if (nd <= 1) return mf_fail(TILING, "%s: x must have at least 2 dims, got %d", OP, nd);
    const int64_t H2 = x->dims[nd - 1], H = H2 / 2, R = x->numel / (H2 ? H2 : 1);
    if (H2 % 2 != 0) return mf_fail(TILING, "%s: x's last dim must be even, got %lld", OP, (long long)H2);
    /* SetAttr: static or dynamic, case-insensitive */
    if (a->quant_mode == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: quantModeOptional is NULL (A2/A3's tiling builds a string from it)",
                       OP);
    if (strcasecmp(a->quant_mode, "static") != 0 && strcasecmp(a->quant_mode, "dynamic") != 0)
        return mf_fail(TILING, "%s: quantModeOptional must be static or dynamic (any case), got \"%.32s\"", OP,
                       a->quant_mode);
    const bool dynamic = strcasecmp(a->quant_mode, "dynamic") == 0;
    /* checkInputShape */
    if (x->dtype == ACL_INT32) {
        if (bias != NULL && bias->numel != H2)
            return mf_fail(TILING, "%s: biasOptional must have %lld elements, got %lld", OP, (long long)H2,
                           (long long)bias->numel);
        if (ws == NULL) /* CANN reads the shape through a NULL pointer */
            return mf_fail(INVALID, "%s: weightScaleOptional is required when x is INT32", OP);
        if (ws->numel != H2)
            return mf_fail(TILING, "%s: weightScaleOptional must have %lld elements, got %lld", OP, (long long)H2,
                           (long long)ws->numel);
        if (as != NULL && as->numel != R)
            return mf_fail(TILING, "%s: activationScaleOptional must have %lld elements (x's rows), got %lld", OP,
                           (long long)R, (long long)as->numel);
        pl->ws = (dsq_vec){true, false, H2};
        pl->bias = (dsq_vec){bias != NULL, false, H2};
        pl->act = as != NULL;
    }
    if (qs != NULL) {
        if (qs->numel != H && qs->numel != 1)
            return mf_fail(TILING, "%s: quantScaleOptional must have %lld or 1 elements, got %lld", OP, (long long)H,
                           (long long)qs->numel);
        if (!dynamic) {
            if (qo == NULL) return mf_fail(TILING, "%s: quantOffsetOptional is required in static mode", OP);
            if (qo->numel != H && qo->numel != 1)
                return mf_fail(TILING, "%s: quantOffsetOptional must have %lld or 1 elements, got %lld", OP,
                               (long long)H, (long long)qo->numel);
            if (qo->numel != qs->numel) /* the kernel reads both with the scale's length */
                return mf_fail(INVALID, "%s: quantOffsetOptional (%lld elements) must match quantScaleOptional (%lld)",
                               OP, (long long)qo->numel, (long long)qs->numel);
            pl->qo = (dsq_vec){true, false, qo->numel};
        }
        pl->qs = (dsq_vec){true, false, qs->numel};
    } else if (!dynamic) { /* the static kernel reads the scale and offset unconditionally */
        return mf_fail(INVALID, "%s: quantScaleOptional is required in static mode", OP);
    }
    /* the output shapes (logged, not enforced, by the tiling) */
    MF_TRY(check_outputs_a2(OP, x, t[S_Y], t[S_SCALE], false));
    pl->dynamic = dynamic;
    pl->G = 1;
    return ACLNN_SUCCESS;
}

/* A2/A3 with a group index: dequant_swiglu_quant_tiling.cpp GetShapeAttrsInfoInner, then CountMaxDim */
static aclnnStatus tiling_a2_group(const char *OP, const aclTensor *const *t, const dsq_args *a, dsq_plan *pl) {
    const aclTensor *x = t[S_X], *ws = t[S_WS], *as = t[S_AS], *bias = t[S_BIAS], *qs = t[S_QS], *qo = t[S_QO],
                    *gi = t[S_GI], *y = t[S_Y];
    char b1[160];
    const int nd = x->ndim;
    if (nd < 1) return mf_fail(TILING, "%s: x must have at least 1 dim", OP);
    /* outDimy_: y's dim at x's last index (0 when y has fewer dims: check_outputs_a2 refuses it) */
    const int64_t H2 = x->dims[nd - 1], Hy = y->ndim >= nd ? y->dims[nd - 1] : 0, R = H2 ? x->numel / H2 : 0;
    if (H2 % 64 != 0)
        return mf_fail(TILING, "%s: with a group index x's last dim must be a multiple of 64, got %lld", OP,
                       (long long)H2);
    const int64_t G = gi->ndim == 0 ? 1 : gi->dims[0];
    /* CheckXAndGroupIndexDtype */
    if (x->dtype != ACL_INT32 && x->dtype != ACL_BF16)
        return mf_fail(TILING, "%s: with a group index x must be INT32 or BFLOAT16, got %s", OP, mf_dtype_name(x->dtype));
    /* GetAttr */
    if (a->quant_mode == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: quantModeOptional is NULL (A2/A3's tiling builds a string from it)",
                       OP);
    if (strcmp(a->quant_mode, "dynamic") != 0 && strcmp(a->quant_mode, "static") != 0)
        return mf_fail(TILING, "%s: quantModeOptional must be dynamic or static, got \"%.32s\"", OP, a->quant_mode);
    const bool dynamic = a->quant_mode[0] == 'd';
    if (a->swiglu_mode < 0 || a->swiglu_mode > 3)
        return mf_fail(TILING, "%s: swigluMode must be 0, 1, 2 or 3, got %lld", OP, (long long)a->swiglu_mode);
    /* CheckScaleShapeWithDim: last dim = want; with more than one group (G, want), else 1 or 2 dims of 1 row */
#define SCALE_SHAPE(T, WANT, NAME)                                                                                \
    do {                                                                                                          \
        if ((T)->ndim < 1) return mf_fail(TILING, "%s: %s must have at least 1 dim", OP, NAME);                   \
        if (last(T) != (WANT))                                                                                    \
            return mf_fail(TILING, "%s: %s's last dim must be %lld, got %s", OP, NAME, (long long)(WANT),         \
                           shp(T, b1, sizeof b1));                                                                \
        if (G > 1 && ((T)->ndim != 2 || (T)->dims[0] != G))                                                       \
            return mf_fail(TILING, "%s: %s must be (%lld, %lld) (groups, ...), got %s", OP, NAME, (long long)G,   \
                           (long long)(WANT), shp(T, b1, sizeof b1));                                             \
        if (G <= 1 && ((T)->ndim > 2 || ((T)->ndim == 2 && (T)->dims[0] != 1)))                                   \
            return mf_fail(TILING, "%s: %s must be (%lld) or (1, %lld), got %s", OP, NAME, (long long)(WANT),     \
                           (long long)(WANT), shp(T, b1, sizeof b1));                                             \
    } while (0)
    /* CheckForDequant */
    if (x->dtype == ACL_INT32) {
        if (ws == NULL) return mf_fail(TILING, "%s: weightScaleOptional is required when x is INT32", OP);
        SCALE_SHAPE(ws, H2, "weightScaleOptional");
        if (as != NULL && as->numel > 0 && as->numel != R)
            return mf_fail(TILING, "%s: activationScaleOptional must have %lld elements (x's rows), got %lld", OP,
                           (long long)R, (long long)as->numel);
        if (bias != NULL) SCALE_SHAPE(bias, H2, "biasOptional");
        pl->ws = (dsq_vec){true, G > 1, H2};
        pl->bias = (dsq_vec){bias != NULL, G > 1, H2};
        pl->act = as != NULL && as->numel > 0;
    } else if (gi->ndim != 1) {
        return mf_fail(TILING, "%s: with a BFLOAT16 x groupIndexOptional must be 1-D, got %d dims", OP, gi->ndim);
    }
    /* CheckForQuant */
    if (dynamic) {
        if (qo != NULL) return mf_fail(TILING, "%s: quantOffsetOptional must be NULL in dynamic mode", OP);
        if (qs != NULL) SCALE_SHAPE(qs, Hy, "quantScaleOptional");
        pl->qs = (dsq_vec){qs != NULL, G > 1, Hy};
    } else {
        if (qs == NULL || qo == NULL)
            return mf_fail(TILING, "%s: static mode needs quantScaleOptional and quantOffsetOptional", OP);
        int64_t len[2];
        const aclTensor *q2[2] = {qs, qo};
        for (int i = 0; i < 2; i++) {
            const aclTensor *q = q2[i];
            if (q->ndim < 1) return mf_fail(TILING, "%s: %s must have at least 1 dim", OP, NAMES[S_QS + i]);
            if (q->ndim == 1 && q->dims[0] != G)
                return mf_fail(TILING, "%s: %s must be (%lld) or (%lld, %lld), got %s", OP, NAMES[S_QS + i],
                               (long long)G, (long long)G, (long long)Hy, shp(q, b1, sizeof b1));
            if (q->ndim != 1 && (last(q) != Hy || q->dims[0] != G))
                return mf_fail(TILING, "%s: %s must be (%lld) or (%lld, %lld), got %s", OP, NAMES[S_QS + i],
                               (long long)G, (long long)G, (long long)Hy, shp(q, b1, sizeof b1));
            len[i] = q->ndim == 1 ? 1 : Hy;
        }
        if (len[0] != len[1])
            return mf_fail(TILING, "%s: quantOffsetOptional's shape must match quantScaleOptional's", OP);
        pl->qs = (dsq_vec){true, true, len[0]};
        pl->qo = (dsq_vec){true, true, len[0]};
    }
#undef SCALE_SHAPE
    /* CheckIllegalParam */
    if (gi->ndim == 2 && bias != NULL && x->dtype == ACL_INT32)
        return mf_fail(TILING, "%s: groupIndexOptional must be 1-D when biasOptional is given", OP);
    if (gi->ndim == 2 && a->swiglu_mode != 0)
        return mf_fail(TILING, "%s: groupIndexOptional must be 1-D when swigluMode is not 0", OP);
    /* CountMaxDim's bound (x's last dim against the unified buffer) is the chip's; not applied */
    MF_TRY(check_outputs_a2(OP, x, y, t[S_SCALE], true));
    if (gi->ndim == 2) /* a 0-D one is one group (groupNum_ 1, not the 2-D kind) */
        return mf_fail(INVALID, "%s: a 2-D groupIndexOptional ((group, count) pairs) is CANN's; moefr implements the "
                       "1-D counts only", OP);
    if (G > MF_DQ_MAX_GROUPS)
        return mf_fail(INVALID, "%s: moefr takes at most %d groups, got %lld", OP, MF_DQ_MAX_GROUPS, (long long)G);
    pl->dynamic = dynamic;
    pl->G = G;
    pl->mode = (int)a->swiglu_mode;
    pl->clamp = (float)a->clamp;
    return ACLNN_SUCCESS;
}

static aclnnStatus plan_common(const mf_op_def *def, const aclTensor *const *t, const dsq_args *a,
                               uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = def->name;
    MF_TRY(mf_op_check(def, t, workspaceSize, executor));
    dsq_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.op = OP;
    if (mf_op_outputs_empty(def, t)) { /* the engine's shortcut */
        pl.empty = true;
        return mf_op_publish(def, t, 0, &pl, sizeof pl, dsq_run, 0, workspaceSize, executor);
    }
    const bool a2 = mf_soc_strict();
    if (!a2) MF_TRY(tiling_950(OP, t, a, &pl));
    else if (t[S_GI] == NULL) MF_TRY(tiling_a2_plain(OP, t, a, &pl));
    else MF_TRY(tiling_a2_group(OP, t, a, &pl));
    if (a2) {
        /* A2/A3's V2 is INT8 with rint along the last dim (docs); the tilings do not read these */
        if (a->dst_type != 2)
            return mf_fail(INVALID, "%s: dstType must be 2 (INT8) on A2/A3, got %lld", OP, (long long)a->dst_type);
        if (a->round_mode != NULL && strcmp(a->round_mode, "rint") != 0)
            return mf_fail(INVALID, "%s: roundModeOptional must be NULL or \"rint\" on A2/A3, got \"%.32s\"", OP,
                           a->round_mode);
        if (a->act_dim != -1 && a->act_dim != t[S_X]->ndim - 1)
            return mf_fail(INVALID, "%s: activateDim must be -1 on A2/A3, got %lld", OP, (long long)a->act_dim);
        if (t[S_GI] == NULL && a->swiglu_mode != 0)
            return mf_fail(INVALID, "%s: swigluMode %lld needs a group index on A2/A3 (only that kernel has the variant)",
                           OP, (long long)a->swiglu_mode);
    }
    const aclTensor *x = t[S_X];
    pl.a2 = a2;
    pl.left = a->left;
    pl.alpha = (float)a->alpha;
    pl.gbias = (float)a->gbias;
    pl.xdt = x->dtype;
    pl.bdt = t[S_BIAS] ? (int)t[S_BIAS]->dtype : -1;
    pl.H = x->dims[x->ndim - 1] / 2;
    pl.R = pl.H ? x->numel / (2 * pl.H) : 0;
    pl.grouped = t[S_GI] != NULL;
    if (pl.mode != 0 && !(isfinite(pl.alpha) && isfinite(pl.gbias)))
        return mf_fail(INVALID, "%s: gluAlpha and gluBias must be finite, got %g and %g", OP, a->alpha, a->gbias);
    /* the tensors phase 2 never reads */
    unsigned unused = 0;
    if (x->dtype != ACL_INT32) unused |= 1u << S_WS | 1u << S_AS | 1u << S_BIAS;
    if (!pl.act) unused |= 1u << S_AS;
    if (!pl.qs.on) unused |= 1u << S_QS;
    if (!pl.qo.on) unused |= 1u << S_QO;
    if (!pl.dynamic) unused |= 1u << S_SCALE;
    return mf_op_publish(def, t, unused, &pl, sizeof pl, dsq_run, 0, workspaceSize, executor);
}

/* ---- the front ends ---- */

aclnnStatus aclnnDequantSwigluQuantGetWorkspaceSize(const aclTensor *x, const aclTensor *weightScaleOptional,
                                                    const aclTensor *activationScaleOptional,
                                                    const aclTensor *biasOptional, const aclTensor *quantScaleOptional,
                                                    const aclTensor *quantOffsetOptional,
                                                    const aclTensor *groupIndexOptional, bool activateLeft,
                                                    char *quantModeOptional, const aclTensor *yOut,
                                                    const aclTensor *scaleOut, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor) {
    const aclTensor *t[S_N] = {x, weightScaleOptional, activationScaleOptional, biasOptional, quantScaleOptional,
                               quantOffsetOptional, groupIndexOptional, yOut, scaleOut};
    /* the def's defaults for the V2 attributes */
    const dsq_args a = {activateLeft, quantModeOptional, 2, NULL, -1, 0, 7.0, 1.702, 1.0};
    return plan_common(&DEF_V1, t, &a, workspaceSize, executor);
}

aclnnStatus aclnnDequantSwigluQuant(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_DEQUANT_SWIGLU_QUANT, DEF_V1.name, workspace, workspaceSize, stream);
}

aclnnStatus aclnnDequantSwigluQuantV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *weightScaleOptional, const aclTensor *activationScaleOptional,
    const aclTensor *biasOptional, const aclTensor *quantScaleOptional, const aclTensor *quantOffsetOptional,
    const aclTensor *groupIndexOptional, bool activateLeft, char *quantModeOptional, int64_t dstType,
    char *roundModeOptional, int64_t activateDim, int64_t swigluMode, double clampLimit, double gluAlpha,
    double gluBias, const aclTensor *yOut, const aclTensor *scaleOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    const aclTensor *t[S_N] = {x, weightScaleOptional, activationScaleOptional, biasOptional, quantScaleOptional,
                               quantOffsetOptional, groupIndexOptional, yOut, scaleOut};
    const dsq_args a = {activateLeft, quantModeOptional, dstType, roundModeOptional, activateDim, swigluMode,
                        clampLimit, gluAlpha, gluBias};
    return plan_common(&DEF_V2, t, &a, workspaceSize, executor);
}

aclnnStatus aclnnDequantSwigluQuantV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_DEQUANT_SWIGLU_QUANT_V2, DEF_V2.name, workspace, workspaceSize, stream);
}

/* ---- registry entries (opdef.h); quantMode travels as 0 static, 1 dynamic ---- */
static char *qmode(int64_t m) { return (char *)(m ? "dynamic" : "static"); }
static const mf_attr_desc ATTRS_V1[] = {{"activateLeft", MF_ATTR_BOOL, 0, 1}, {"quantModeOptional", MF_ATTR_INT64, 0, 1}};
static const mf_attr_desc ATTRS_V2[] = {{"activateLeft", MF_ATTR_BOOL, 0, 1},   {"quantModeOptional", MF_ATTR_INT64, 0, 1},
                                        {"dstType", MF_ATTR_INT64, 2, 2},       {"activateDim", MF_ATTR_INT64, -1, -1},
                                        {"swigluMode", MF_ATTR_INT64, 0, 2},    {"clampLimit", MF_ATTR_DOUBLE, 0, 16},
                                        {"gluAlpha", MF_ATTR_DOUBLE, 0, 4},     {"gluBias", MF_ATTR_DOUBLE, -2, 2}};
static aclnnStatus gws_v1(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnDequantSwigluQuantGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], a[0].i != 0,
                                                   qmode(a[1].i), t[7], t[8], ws, e);
}
static aclnnStatus gws_v2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnDequantSwigluQuantV2GetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], a[0].i != 0,
                                                     qmode(a[1].i), a[2].i, NULL, a[3].i, a[4].i, a[5].d, a[6].d,
                                                     a[7].d, t[7], t[8], ws, e);
}
const mf_op_entry mf_entry_dequant_swiglu_quant = {&DEF_V1, ATTRS_V1, 2, gws_v1, aclnnDequantSwigluQuant};
const mf_op_entry mf_entry_dequant_swiglu_quant_v2 = {&DEF_V2, ATTRS_V2, 8, gws_v2, aclnnDequantSwigluQuantV2};
