/* trans_quant_param.c - aclnnTransQuantParam (host), aclnnTransQuantParamV2 and V3
 * (ops-nn quant/trans_quant_param, quant/trans_quant_param_v2): fp32 scales and
 * offsets to the UINT64 words a cube's fixpipe requantizes with, which
 * GroupedMatmul's INT8 output reads (gmm_run.c, GMM_Q_REQ).
 *
 * A word: bits 0-31 the scale's fp32 bits (V2 / V3 round mode 0: with the low 13
 * cleared, the fp19 the hardware keeps; V3 round mode 1: rounded there to
 * nearest, ties to even, subnormals to a signed zero, overflow to infinity),
 * bit 46 set, bits 37-45 the offset rounded to an integer (V1: half away from
 * zero; V2 / V3: ties to even) and clamped to [-256, 255], as 9-bit two's
 * complement. A scale or offset of one element serves every output word.
 * Phase 1 in the order of aclnn_trans_quant_param_v2.cpp CheckParams
 * (nulls 161001, dtypes, formats, shapes 161002); moefr also refuses an out
 * with fewer elements than the longer input (CANN's kernel writes them all). */
#include <math.h>
#include <stdlib.h>

#include "aclnnop/aclnn_trans_quant_param.h"
#include "aclnnop/aclnn_trans_quant_param_v2.h"
#include "aclnnop/aclnn_trans_quant_param_v3.h"
#include "ops/common.h"
#include "ops/opdef.h"

#define INVALID ACLNN_ERR_PARAM_INVALID

enum { S_SCALE, S_OFFSET, S_OUT, S_NT };
static const char *const NAMES[S_NT] = {"scale", "offset", "out"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED, 0, MF_T_REQUIRED};
/* trans_quant_param_v2_def.cpp / the op_api's lists: scale FLOAT, offset FLOAT, out UINT64 or INT64 */
static const mf_dtcol COLS[] = {{ACL_FLOAT, ACL_FLOAT, ACL_UINT64}, {ACL_FLOAT, ACL_FLOAT, ACL_INT64}};
static const mf_op_def DEF_V2 = {"aclnnTransQuantParamV2", MF_OP_TRANS_QUANT_PARAM_V2, 2, 1, NAMES, FLAGS,
                                 COLS, 2, COLS, 2};
static const mf_op_def DEF_V3 = {"aclnnTransQuantParamV3", MF_OP_TRANS_QUANT_PARAM_V3, 2, 1, NAMES, FLAGS,
                                 COLS, 2, COLS, 2};

#define QUANT_SCALE (1ull << 46)
#define OFFSET_SHIFT 37

/* The scale's bits as the fixpipe word holds them. */
static uint64_t scale_bits(float scale, int round_mode) {
    uint32_t b;
    memcpy(&b, &scale, 4);
    if (round_mode == 0) return (uint64_t)(b & 0xFFFFE000u) | QUANT_SCALE;
    const uint32_t sign = b >> 31, exp = (b >> 23) & 0xFFu, man = b & 0x7FFFFFu;
    uint32_t m19 = man >> 13, e = exp, fp19;
    if (exp == 0) {
        fp19 = sign << 18; /* zero and subnormals: a signed zero */
    } else if (exp == 0xFFu) {
        fp19 = (sign << 18) | (exp << 10) | m19; /* infinity and NaN keep their top mantissa bits */
    } else {
        const uint32_t round = (man >> 12) & 1u, sticky = man & 0xFFFu;
        if (round && (sticky || (m19 & 1u))) {
            if (++m19 >= (1u << 10)) m19 = 0, e++;
        }
        fp19 = e > 0xFFu ? (sign << 18) | (0xFFu << 10) : (sign << 18) | (e << 10) | m19;
    }
    return ((uint64_t)fp19 << 13) | QUANT_SCALE;
}

/* An offset's 9-bit field: rounded (ties to even, or V1's half away from zero), clamped to [-256, 255]. */
static uint64_t offset_bits(float offset, bool away) {
    float r = away ? roundf(offset) : nearbyintf(offset);
    int v = r != r ? 0 : r < -256.0f ? -256 : r > 255.0f ? 255 : (int)r;
    return ((uint64_t)(uint32_t)v & 0x1FFu) << OFFSET_SHIFT;
}

aclnnStatus aclnnTransQuantParam(const float *scaleArray, uint64_t scaleSize, const float *offsetArray,
                                 uint64_t offsetSize, uint64_t **quantParam, uint64_t *quantParamSize) {
    static const char OP[] = "aclnnTransQuantParam";
    /* CheckQuantParam: an offset array needs a size, no array no size; a scale array is required */
    if (offsetArray != NULL && offsetSize < 1)
        return mf_fail(INVALID, "%s: offsetSize must be larger than 0 with an offsetArray, got %llu", OP,
                       (unsigned long long)offsetSize);
    if (offsetArray == NULL && offsetSize != 0)
        return mf_fail(INVALID, "%s: offsetArray is NULL, so offsetSize must be 0, got %llu", OP,
                       (unsigned long long)offsetSize);
    if (scaleArray == NULL) return mf_fail(INVALID, "%s: scaleArray is NULL", OP); /* CANN maps it to 161002 */
    if (scaleSize < 1) return mf_fail(INVALID, "%s: scaleSize must be larger than 0", OP);
    if (quantParam == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: quantParam is NULL", OP);
    if (quantParamSize == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: quantParamSize is NULL", OP);
    uint64_t n = scaleSize > offsetSize ? scaleSize : offsetSize;
    if (n != 1 && n % 16) n += 16 - n % 16; /* ALIGN_NUM */
    if (n > ((uint64_t)1 << 40)) return mf_fail(INVALID, "%s: %llu words is beyond any memory", OP, (unsigned long long)n);
    uint64_t *q = calloc(n, sizeof *q);
    if (q == NULL) {
        *quantParamSize = 0;
        return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of memory for %llu words", OP, (unsigned long long)n);
    }
    for (uint64_t i = 0; i < scaleSize; i++) {
        uint32_t b;
        memcpy(&b, &scaleArray[i], 4);
        q[i] = (uint64_t)b | QUANT_SCALE; /* V1 keeps all 32 bits (TransQuantScaleToM1) */
    }
    for (uint64_t i = 0; offsetArray != NULL && i < offsetSize; i++)
        q[i] = (q[i] & 0x4000FFFFFFFFull) | offset_bits(offsetArray[i], true);
    *quantParam = q;
    *quantParamSize = n;
    return ACLNN_SUCCESS;
}

typedef struct tqp_plan {
    bool empty;
    int round_mode;
    int64_t ns, no, n; /* scale and offset elements, words written */
} tqp_plan;

static float elem_f32(const aclTensor *t, int64_t i) {
    /* t is 1-D or (1, n): element i along its last dim */
    float v;
    memcpy(&v, mf_tensor_base(t) + i * t->strides[t->ndim - 1] * 4, 4);
    return v;
}

static aclnnStatus tqp_run(const void *plan, const aclTensor *const *t, void *workspace) {
    (void)workspace;
    const tqp_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *scale = t[S_SCALE], *offset = t[S_OFFSET], *out = t[S_OUT];
    char *ob = mf_tensor_base(out);
    for (int64_t i = 0; i < p->n; i++) {
        /* the scale as rows of its last dim (g, n) on Ascend 950: element i in row-major order */
        float s;
        if (scale->ndim == 2 && p->ns > 1 && scale->dims[0] > 1) {
            const int64_t r = i / scale->dims[1], c = i % scale->dims[1];
            memcpy(&s, mf_tensor_base(scale) + (r * scale->strides[0] + c * scale->strides[1]) * 4, 4);
        } else {
            s = elem_f32(scale, p->ns == 1 ? 0 : i);
        }
        uint64_t w = scale_bits(s, p->round_mode);
        if (offset != NULL) w |= offset_bits(elem_f32(offset, p->no == 1 ? 0 : i), false);
        memcpy(ob + i * 8, &w, 8);
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus tqp_gws(const mf_op_def *def, const aclTensor *scale, const aclTensor *offset, int64_t round_mode,
                           const aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *op = def->name;
    const aclTensor *t[S_NT] = {scale, offset, out};
    MF_TRY(mf_op_check(def, t, workspaceSize, executor));
    char s1[160];
    /* CheckShape: scale (n) with n > 0, or (1, n) (Ascend 950: (g, n)); offset (n) or (1, n); two 1-D
     * lengths above 1 must agree; roundMode 0 or 1 */
    const bool s1d = scale->ndim == 1 && scale->dims[0] > 0;
    const bool s2d = scale->ndim == 2 && scale->dims[1] > 0 && (mf_soc_strict() ? scale->dims[0] == 1 : scale->dims[0] > 0);
    if (!s1d && !s2d)
        return mf_fail(INVALID, "%s: scale must be (n)%s with n > 0, got %s", op,
                       mf_soc_strict() ? " or (1, n)" : ", (1, n) or (g, n) (Ascend 950)", mf_shape_str(scale, s1, sizeof s1));
    if (offset != NULL) {
        const bool ok = (offset->ndim == 1 && offset->dims[0] > 0) ||
                        (offset->ndim == 2 && offset->dims[0] == 1 && offset->dims[1] > 0);
        if (!ok)
            return mf_fail(INVALID, "%s: offset must be (n) or (1, n) with n > 0, got %s", op,
                           mf_shape_str(offset, s1, sizeof s1));
        if (offset->ndim == 1 && scale->dims[0] > 1 && offset->dims[0] > 1 && scale->dims[0] != offset->dims[0])
            return mf_fail(INVALID, "%s: scale and offset must have the same length when both are longer than 1, "
                                    "got %lld and %lld", op, (long long)scale->dims[0], (long long)offset->dims[0]);
    }
    if (round_mode != 0 && round_mode != 1)
        return mf_fail(INVALID, "%s: roundMode must be 0 or 1, got %lld", op, (long long)round_mode);
    tqp_plan pl = {false, (int)round_mode, scale->numel, offset ? offset->numel : 0, 0};
    if (pl.no > 1 && pl.ns > 1 && pl.no != pl.ns)
        return mf_fail(INVALID, "%s: scale has %lld elements and offset %lld: they must agree when both exceed 1", op,
                       (long long)pl.ns, (long long)pl.no);
    pl.n = pl.ns > pl.no ? pl.ns : pl.no;
    /* moefr: the kernel writes every word; CANN does not check out's size */
    if (out->numel < pl.n)
        return mf_fail(INVALID, "%s: out has %lld elements, fewer than the %lld words written", op,
                       (long long)out->numel, (long long)pl.n);
    if (!mf_tensor_contiguous(out))
        return mf_fail(INVALID, "%s: out must be contiguous", op);
    return mf_op_publish(def, t, 0, &pl, sizeof pl, tqp_run, 0, workspaceSize, executor);
}

aclnnStatus aclnnTransQuantParamV2GetWorkspaceSize(const aclTensor *scale, const aclTensor *offset,
                                                   const aclTensor *out, uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    MF_TRY(mf_isa_check(DEF_V2.name));
    return tqp_gws(&DEF_V2, scale, offset, 0, out, workspaceSize, executor);
}
aclnnStatus aclnnTransQuantParamV3GetWorkspaceSize(const aclTensor *scale, const aclTensor *offset, int64_t roundMode,
                                                   const aclTensor *out, uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    MF_TRY(mf_isa_check(DEF_V3.name));
    return tqp_gws(&DEF_V3, scale, offset, roundMode, out, workspaceSize, executor);
}
aclnnStatus aclnnTransQuantParamV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                   const aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TRANS_QUANT_PARAM_V2, DEF_V2.name, workspace, workspaceSize, stream);
}
aclnnStatus aclnnTransQuantParamV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                   const aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TRANS_QUANT_PARAM_V3, DEF_V3.name, workspace, workspaceSize, stream);
}

/* ---- the registry ---- */
static const mf_attr_desc ATTRS_V3[] = {{"roundMode", MF_ATTR_INT64, 0, 1}};
static aclnnStatus gws_v2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    (void)a;
    return aclnnTransQuantParamV2GetWorkspaceSize(t[0], t[1], t[2], ws, e);
}
static aclnnStatus gws_v3(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnTransQuantParamV3GetWorkspaceSize(t[0], t[1], a[0].i, t[2], ws, e);
}
const mf_op_entry mf_entry_trans_quant_param_v2 = {&DEF_V2, NULL, 0, gws_v2, aclnnTransQuantParamV2};
const mf_op_entry mf_entry_trans_quant_param_v3 = {&DEF_V3, ATTRS_V3, 1, gws_v3, aclnnTransQuantParamV3};
