/* grouped_matmul.c - aclnnGroupedMatmulV4 and its front ends V1, V2, V3, V5,
 * phase 1 (ops-transformer gmm/grouped_matmul, op_host/op_api/
 * aclnn_grouped_matmul.cpp), in CANN's order:
 *   1. x, weight, out NULL or empty lists, workspaceSize, executor: 161001;
 *   2. CheckCommonParam: groupType (1 and unknown values refused), splitItem
 *      2/3 with groupType -1, the group list's rank, actType's range,
 *      groupListType (2, the sparse form, is for int8 data): 161002;
 *   3. the activation arguments and outputs must be absent: 161002;
 *   4. dtypes: the non-quantized pairs only (x = weight in FLOAT16, BF16,
 *      FLOAT32; FLOAT32 not on Ascend 950, nor in V1), every x/weight/out of
 *      that dtype, bias FLOAT16 for FLOAT16 (950: or FLOAT32), FLOAT32 for
 *      BF16 (950: or BF16), FLOAT32 for FLOAT32; actType != 0 and any
 *      quantization argument refused: 161002;
 *   5. per groupType: transposition, the group list (INT64, length), shapes,
 *      bias shapes: 161002; at most 128 tensors in x and weight;
 *   6. every x empty: success, workspace 0; out's shapes must be the
 *      inferred ones: 161002.
 * The plan keeps copies of every list's descriptors; phase 2 is gmm_run.c. */
#include <stdlib.h>

#include "aclnnop/aclnn_grouped_matmul.h"
#include "aclnnop/aclnn_grouped_matmul_v2.h"
#include "aclnnop/aclnn_grouped_matmul_v3.h"
#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "aclnnop/aclnn_grouped_matmul_v5.h"
#include "ops/gmm/gmm.h"
#include "ops/opdef.h"

#define INVALID ACLNN_ERR_PARAM_INVALID

/* The executor's one tensor slot: the group list (V3 and later). */
static const char *const SLOT_NAMES[1] = {"groupListOptional"};
static const unsigned SLOT_FLAGS[1] = {0};
static const mf_dtcol SLOT_COLS[] = {{MF_DT_ANY}};
#define EXEC_DEF(sym, nm, kind) \
    static const mf_op_def sym = {nm, kind, 1, 0, SLOT_NAMES, SLOT_FLAGS, SLOT_COLS, 1, SLOT_COLS, 1}
EXEC_DEF(EXEC_V1, "aclnnGroupedMatmul", MF_OP_GROUPED_MATMUL);
EXEC_DEF(EXEC_V2, "aclnnGroupedMatmulV2", MF_OP_GROUPED_MATMUL_V2);
EXEC_DEF(EXEC_V3, "aclnnGroupedMatmulV3", MF_OP_GROUPED_MATMUL_V3);
EXEC_DEF(EXEC_V4, "aclnnGroupedMatmulV4", MF_OP_GROUPED_MATMUL_V4);
EXEC_DEF(EXEC_V5, "aclnnGroupedMatmulV5", MF_OP_GROUPED_MATMUL_V5);

/* What a front end hands the shared phase 1. */
typedef struct gmm_call {
    const mf_op_def *exec;
    int version;
    const aclTensorList *x, *weight, *bias, *out;
    const aclTensorList *quant[5]; /* scale, offset, antiquantScale, antiquantOffset, perTokenScale */
    const aclTensorList *act[5];   /* activationInput, -QuantScale, -QuantOffset, activationFeatureOut, dynQuantScaleOut */
    const aclTensor *group_list;   /* V3+ */
    const aclIntArray *group_array; /* V1/V2 */
    const aclIntArray *tuning;      /* V5 */
    int64_t split_item, group_type, list_type, act_type;
    uint64_t *workspaceSize;
    aclOpExecutor **executor;
    int wpack; /* set by gmm_gws: 8 when V4/V5 weights of INT32 hold eight int4 each along the last dim
                * (CANN's UnpackInt32ToInt4), else 1 */
} gmm_call;

static const char *const QUANT_NAMES[5] = {"scaleOptional", "offsetOptional", "antiquantScaleOptional",
                                           "antiquantOffsetOptional", "perTokenScaleOptional"};
static const char *const ACT_NAMES[5] = {"activationInputOptional", "activationQuantScaleOptional",
                                         "activationQuantOffsetOptional", "activationFeatureOutOptional",
                                         "dynQuantScaleOutOptional"};

static uint64_t list_len(const aclTensorList *l) {
    uint64_t n = 0;
    if (l == NULL || aclGetTensorListSize(l, &n) != ACLNN_SUCCESS) return 0;
    return n;
}
static const aclTensor *item(const aclTensorList *l, uint64_t i) {
    const mf_list *ml = (const mf_list *)(const void *)l;
    return (const aclTensor *)ml->items[i];
}
/* An optional list counts as absent when NULL, empty, its first element NULL
 * or one tensor of shape [0] (CANN's ResetEmptyTensor). */
static bool absent(const aclTensorList *l) {
    const uint64_t n = list_len(l);
    if (n == 0) return true;
    const aclTensor *t = item(l, 0);
    return t == NULL || (n == 1 && t->ndim == 1 && t->dims[0] == 0);
}

/* A weight's last dim as CANN sees it: eight int4 per INT32 element of a packed weight. */
static int64_t wlast(const gmm_call *c, const aclTensor *w) { return w->dims[w->ndim - 1] * c->wpack; }

static bool is_float(int dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16; }

/* CANN's IsTransposeLastTwoDims: the last two dims' strides swapped and the
 * batch dims packed. */
static bool transposed(const aclTensor *t) {
    const int n = t->ndim;
    if (n < 2) return false;
    if (t->strides[n - 2] != 1 || t->strides[n - 1] != t->dims[n - 2]) return false;
    int64_t inner; /* checked: an empty tensor's dims can multiply past int64 */
    if (!mf_mul_ok(t->dims[n - 1], t->dims[n - 2], &inner)) return false;
    for (int d = n - 3; d >= 0; d--) {
        if (t->strides[d] != inner) return false;
        if (!mf_mul_ok(inner, t->dims[d], &inner)) return false;
    }
    return true;
}
/* moefr: a matrix with a last-two dim of size 1, or no elements, is laid out
 * both ways at once (torch gives a (K, 1) tensor strides (1, 1), and an empty
 * one strides that say nothing), so the transpose rules below take it as
 * whichever they need: it is never "x transposed" under groupType -1/0, always
 * "x transposed" under 2, and it does not vote in "every weight alike".
 * (CANN's CheckSpecialTranspose exempts the 1 x 1 case only.) */
static bool ambiguous(const aclTensor *t) {
    const int n = t->ndim;
    return n < 2 || t->numel == 0 || t->dims[n - 1] == 1 || t->dims[n - 2] == 1;
}

static aclnnStatus list_items(const char *op, const char *name, const aclTensorList *l, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        const aclTensor *t = item(l, i);
        if (t == NULL) return mf_fail(INVALID, "%s: %s[%llu] is NULL", op, name, (unsigned long long)i);
        if (!mf_tensor_live(t))
            return mf_fail(INVALID, "%s: %s[%llu] is not a live aclTensor", op, name, (unsigned long long)i);
        if (t->format != ACL_FORMAT_ND)
            return mf_fail(INVALID, "%s: %s[%llu] format must be ND, got %s (moefr has no FRACTAL_NZ weights)", op,
                           name, (unsigned long long)i, mf_format_name(t->format));
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus all_dtype(const char *op, const char *name, const aclTensorList *l, uint64_t n, int dt) {
    for (uint64_t i = 0; i < n; i++)
        if (item(l, i)->dtype != dt)
            return mf_fail(INVALID, "%s: %s[%llu] dtype must be %s, got %s", op, name, (unsigned long long)i,
                           mf_dtype_name(dt), mf_dtype_name(item(l, i)->dtype));
    return ACLNN_SUCCESS;
}

static aclnnStatus rank_is(const char *op, const char *name, uint64_t i, const aclTensor *t, int lo, int hi) {
    if (t->ndim >= lo && t->ndim <= hi) return ACLNN_SUCCESS;
    char b[160];
    if (lo == hi)
        return mf_fail(INVALID, "%s: %s[%llu] must have %d dims, got %s", op, name, (unsigned long long)i, lo,
                       mf_shape_str(t, b, sizeof b));
    return mf_fail(INVALID, "%s: %s[%llu] must have %d to %d dims, got %s", op, name, (unsigned long long)i, lo, hi,
                   mf_shape_str(t, b, sizeof b));
}

static aclnnStatus dim_is(const char *op, const char *what, int64_t got, int64_t want) {
    if (got == want) return ACLNN_SUCCESS;
    return mf_fail(INVALID, "%s: %s must be %lld, got %lld", op, what, (long long)want, (long long)got);
}

/* The row of CANN's table a call takes, beyond x's dtype. */
typedef struct gmm_quant {
    int quant;     /* GMM_Q_* */
    int out_dtype; /* out's dtype */
    int scale_dtype;
    int ns, npt;   /* scale and per-token scale tensors the plan keeps */
    bool antiquant;
    int nas;       /* antiquant scale (and offset) tensors the plan keeps */
    int64_t aq_gsize; /* K rows per antiquant group (int4 per-group); 0 per-channel */
} gmm_quant;

/* Why a pair of x and weight dtypes has no row: the rows CANN has that moefr
 * has not yet, named, or nothing (CANN has no such row either). */
static const char *unsupported_row(int x, int w) {
    if (x == ACL_INT8 && w == ACL_INT4) return " (A8W4 rows: not yet in moefr)";
    if (x == ACL_INT4 && w == ACL_INT4) return " (A4W4 rows: not yet in moefr)";
    if (x == ACL_FLOAT8_E4M3FN || x == ACL_FLOAT8_E5M2 || x == ACL_HIFLOAT8 || w == ACL_FLOAT8_E4M3FN ||
        w == ACL_FLOAT8_E5M2 || w == ACL_HIFLOAT8 || w == ACL_FLOAT4_E2M1 || w == ACL_FLOAT4_E1M2)
        return " (Ascend 950's FP8 / HiF8 / MX / FP4 rows: not supported by moefr)";
    return " (the rows: FLOAT16, BF16, FLOAT32 x with the same weight; INT8 x with INT8 weight; FLOAT16 or BF16 x "
           "with INT8 or INT4-in-INT32 weight)";
}

/* CANN's GetGroupSize: the number of groups the scale lists are checked against. */
static uint64_t group_count(const gmm_call *c, uint64_t nx, uint64_t nw, uint64_t ny) {
    if (nx > 1) return nx;
    if (nw > 1) return nw;
    if (ny > 1) return ny;
    if (c->group_array != NULL) {
        uint64_t n = 0;
        aclGetIntArraySize(c->group_array, &n);
        return n;
    }
    if (c->group_list != NULL) return (uint64_t)c->group_list->dims[0];
    return 1;
}

/* One antiquant argument list (CheckOptionalTensorList, CheckDimNumAndPerGroupNum):
 * one tensor per weight; per-channel (E, N) beside one (E, K, N) weight with E
 * the group count, (N_i) beside each 2-D weight; int4 weights also per-group,
 * (E, G, N) / (G_i, N_i) with G dividing K. *gsize: the K rows of a group (0
 * per-channel). */
static aclnnStatus antiquant_list(const gmm_call *c, int which, uint64_t nx, uint64_t nw, uint64_t ny, bool int4,
                                  int64_t *gsize) {
    const char *op = c->exec->name, *name = QUANT_NAMES[which];
    const aclTensorList *l = c->quant[which];
    char s1[160];
    const uint64_t n = list_len(l), E = group_count(c, nx, nw, ny);
    if (n != nw)
        return mf_fail(INVALID, "%s: %s has %llu tensors for %llu weights", op, name, (unsigned long long)n,
                       (unsigned long long)nw);
    MF_TRY(list_items(op, name, l, n));
    *gsize = 0;
    for (uint64_t i = 0; i < n; i++) {
        const aclTensor *t = item(l, i), *wi = item(c->weight, i);
        const int chan = nw == 1 ? 2 : 1; /* per-channel rank; per-group has one more */
        const bool grouped = int4 && t->ndim == chan + 1;
        if (t->ndim != chan && !grouped)
            return mf_fail(INVALID, "%s: %s[%llu] must have %d dim%s (%s)%s, got %s", op, name, (unsigned long long)i,
                           chan, chan == 2 ? "s" : "", chan == 2 ? "(groups, N) beside one weight" : "(N) of its weight",
                           int4 ? " or one more (per-group)" : "; int8 weights are per-channel",
                           mf_shape_str(t, s1, sizeof s1));
        if (nw == 1 && (uint64_t)t->dims[0] != E)
            return mf_fail(INVALID, "%s: %s's dim 0 is %lld, the number of groups is %llu", op, name,
                           (long long)t->dims[0], (unsigned long long)E);
        if (t->dims[t->ndim - 1] != wlast(c, wi))
            return mf_fail(INVALID, "%s: %s[%llu]'s last dim %lld must be weight[%llu]'s N %lld", op, name,
                           (unsigned long long)i, (long long)t->dims[t->ndim - 1], (unsigned long long)i,
                           (long long)wlast(c, wi));
        int64_t gs = 0;
        if (grouped) {
            const int64_t G = t->dims[t->ndim - 2], K = wi->dims[wi->ndim - 2];
            if (G <= 0 || K % G != 0)
                return mf_fail(INVALID, "%s: %s[%llu] has %lld groups along K, which must divide K = %lld", op, name,
                               (unsigned long long)i, (long long)G, (long long)K);
            gs = K / G;
        }
        if (i > 0 && gs != *gsize)
            return mf_fail(INVALID, "%s: %s[%llu]'s per-group size %lld differs from the first tensor's %lld", op,
                           name, (unsigned long long)i, (long long)gs, (long long)*gsize);
        *gsize = gs;
    }
    return ACLNN_SUCCESS;
}

/* The A16W8 rows (FLOAT16 or BF16 x, INT8 weight): CheckMatmulDataType
 * (every x, weight, out and bias: x's dtype, INT8, x's dtype, FLOAT16 /
 * FLOAT for BF16 x), no activation, then CheckGroupedMatmulAntiQuant: no K
 * split, antiquant scale and offset both given, their shapes, their dtype
 * x's, and no scale, offset or per-token scale. */
static aclnnStatus antiquant_rows(const gmm_call *c, uint64_t nx, uint64_t nw, uint64_t ny, int dt, gmm_quant *q) {
    const char *op = c->exec->name, *yname = c->version >= 4 ? "out" : "y";
    const bool int4 = c->wpack == 8;
    MF_TRY(all_dtype(op, "x", c->x, nx, dt));
    MF_TRY(all_dtype(op, "weight", c->weight, nw, int4 ? ACL_INT32 : ACL_INT8));
    MF_TRY(all_dtype(op, yname, c->out, ny, dt));
    if (!absent(c->bias)) {
        const uint64_t nb = list_len(c->bias);
        MF_TRY(list_items(op, "biasOptional", c->bias, nb));
        MF_TRY(all_dtype(op, "biasOptional", c->bias, nb, dt == ACL_BF16 ? ACL_FLOAT : ACL_FLOAT16));
    }
    if (c->act_type != 0)
        return mf_fail(INVALID, "%s: actType %lld: the antiquant rows take no activation (actType 0)", op,
                       (long long)c->act_type);
    if (c->group_type == 2)
        return mf_fail(INVALID, "%s: antiquant GroupedMatmul does not split K (groupType 2)", op);
    if (absent(c->quant[2])) return mf_fail(INVALID, "%s: antiquantScaleOptional is required for INT8 weights", op);
    if (absent(c->quant[3])) return mf_fail(INVALID, "%s: antiquantOffsetOptional is required for INT8 weights", op);
    int64_t gs_scale = 0, gs_offset = 0;
    MF_TRY(antiquant_list(c, 2, nx, nw, ny, int4, &gs_scale));
    MF_TRY(antiquant_list(c, 3, nx, nw, ny, int4, &gs_offset));
    if (gs_scale != gs_offset)
        return mf_fail(INVALID, "%s: antiquantScaleOptional is %s, antiquantOffsetOptional %s: they must agree", op,
                       gs_scale ? "per-group" : "per-channel", gs_offset ? "per-group" : "per-channel");
    if (gs_scale && item(c->quant[2], 0)->dims[item(c->quant[2], 0)->ndim - 2] !=
                        item(c->quant[3], 0)->dims[item(c->quant[3], 0)->ndim - 2])
        return mf_fail(INVALID, "%s: antiquantScaleOptional and antiquantOffsetOptional have different group counts",
                       op);
    MF_TRY(all_dtype(op, QUANT_NAMES[2], c->quant[2], list_len(c->quant[2]), dt));
    MF_TRY(all_dtype(op, QUANT_NAMES[3], c->quant[3], list_len(c->quant[3]), dt));
    for (int i = 0; i < 5; i++)
        if ((i == 0 || i == 1 || i == 4) && !absent(c->quant[i]))
            return mf_fail(INVALID, "%s: %s must be NULL with an INT8 weight and %s x (antiquant)", op, QUANT_NAMES[i],
                           mf_dtype_name(dt));
    q->antiquant = true;
    q->out_dtype = dt;
    q->nas = (int)nw;
    q->aq_gsize = gs_scale;
    return ACLNN_SUCCESS;
}

/* The A8W8 rows (int8 x and weight), CANN's CheckFunctionQuantParams and
 * CheckGroupedMatmulQuant in their order: out's dtype (all alike; INT32 out is
 * the exact accumulator and reads no scale), then groupType, offset, scale
 * (one per weight: (E, N) beside one (E, K, N) weight, (N) beside each 2-D
 * weight), the scale / out / per-token pairs, the per-token scale (FLOAT, one
 * 1-D tensor of x's rows, with one x and one out) and no antiquant arguments.
 * moefr checks every x and weight tensor's dtype, where CANN checks the first
 * and reads the rest as int8. */
static aclnnStatus quant_rows(const gmm_call *c, uint64_t nx, uint64_t nw, uint64_t ny, gmm_quant *q) {
    const char *op = c->exec->name, *yname = c->version >= 4 ? "out" : "y";
    char s1[160];
    MF_TRY(all_dtype(op, "x", c->x, nx, ACL_INT8));
    MF_TRY(all_dtype(op, "weight", c->weight, nw, ACL_INT8));
    const int ydt = item(c->out, 0)->dtype;
    for (uint64_t i = 1; i < ny; i++)
        if (item(c->out, i)->dtype != ydt)
            return mf_fail(INVALID, "%s: %s[%llu] dtype %s differs from %s[0]'s %s", op, yname, (unsigned long long)i,
                           mf_dtype_name(item(c->out, i)->dtype), yname, mf_dtype_name(ydt));
    if (ydt != ACL_INT8 && ydt != ACL_BF16 && ydt != ACL_FLOAT16 && ydt != ACL_INT32)
        return mf_fail(INVALID, "%s: %s dtype must be INT8, INT32, FLOAT16 or BF16 for INT8 x and weight, got %s", op,
                       yname, mf_dtype_name(ydt));
    if (!absent(c->bias) && item(c->bias, 0) != NULL && item(c->bias, 0)->dtype == ACL_BF16)
        return mf_fail(INVALID, "%s: a BF16 biasOptional with INT8 x and weight is not yet in moefr (INT32 bias is)", op);
    q->out_dtype = ydt;
    if (ydt == ACL_INT32) { /* CANN returns here: the scales are neither checked nor read */
        q->quant = GMM_Q_INT32;
        return ACLNN_SUCCESS;
    }
    if (c->group_type == 2)
        return mf_fail(INVALID, "%s: quantized GroupedMatmul does not split K (groupType 2)", op);
    if (!absent(c->quant[1]))
        return mf_fail(INVALID, "%s: offsetOptional must be NULL for INT8 x and weight", op);
    if (absent(c->quant[0]))
        return mf_fail(INVALID, "%s: scaleOptional is required for INT8 x and weight with %s %s (INT32 %s needs none)",
                       op, yname, mf_dtype_name(ydt), yname);
    const aclTensorList *sl = c->quant[0];
    const uint64_t ns = list_len(sl), E = group_count(c, nx, nw, ny);
    if (ns != nw)
        return mf_fail(INVALID, "%s: scaleOptional has %llu tensors for %llu weights", op, (unsigned long long)ns,
                       (unsigned long long)nw);
    MF_TRY(list_items(op, "scaleOptional", sl, ns));
    for (uint64_t i = 0; i < ns; i++) {
        const aclTensor *si = item(sl, i), *wi = item(c->weight, i);
        const int want = nw == 1 ? 2 : 1;
        if (si->ndim != want)
            return mf_fail(INVALID, "%s: scaleOptional[%llu] must have %d dim%s (%s), got %s", op, (unsigned long long)i,
                           want, want == 2 ? "s" : "", want == 2 ? "(groups, N) beside one weight" : "(N) of its weight",
                           mf_shape_str(si, s1, sizeof s1));
        if (nw == 1 && (uint64_t)si->dims[0] != E)
            return mf_fail(INVALID, "%s: scaleOptional's dim 0 is %lld, the number of groups is %llu", op,
                           (long long)si->dims[0], (unsigned long long)E);
        if (si->dims[si->ndim - 1] != wlast(c, wi))
            return mf_fail(INVALID, "%s: scaleOptional[%llu]'s last dim %lld must be weight[%llu]'s N %lld", op,
                           (unsigned long long)i, (long long)si->dims[si->ndim - 1], (unsigned long long)i,
                           (long long)wlast(c, wi));
    }
    const bool per_token = !absent(c->quant[4]);
    for (uint64_t i = 0; i < ns; i++) {
        const int sdt = item(sl, i)->dtype;
        const bool bf = sdt == ACL_BF16 && ydt == ACL_BF16, hf = sdt == ACL_FLOAT && ydt == ACL_FLOAT16;
        const bool i8 = !per_token && (sdt == ACL_INT64 || sdt == ACL_UINT64) && ydt == ACL_INT8;
        if (!bf && !hf && !i8)
            return mf_fail(INVALID, "%s: scaleOptional[%llu] is %s with %s %s; the %s rows pair a BF16 scale with "
                                    "BF16 %s, a FLOAT scale with FLOAT16 %s%s", op, (unsigned long long)i,
                           mf_dtype_name(sdt), yname, mf_dtype_name(ydt), per_token ? "per-token" : "per-channel",
                           yname, yname, per_token ? "" : ", a UINT64 or INT64 scale with INT8 out");
    }
    if (per_token) {
        const aclTensorList *pl = c->quant[4];
        for (uint64_t i = 0; i < list_len(pl); i++)
            if (item(pl, i) != NULL && item(pl, i)->dtype != ACL_FLOAT)
                return mf_fail(INVALID, "%s: perTokenScaleOptional[%llu] dtype must be FLOAT, got %s", op,
                               (unsigned long long)i, mf_dtype_name(item(pl, i)->dtype));
        if (nx != 1 || ny != 1)
            return mf_fail(INVALID, "%s: a per-token scale needs one x and one %s tensor, got %llu and %llu", op, yname,
                           (unsigned long long)nx, (unsigned long long)ny);
        if (list_len(pl) != 1)
            return mf_fail(INVALID, "%s: perTokenScaleOptional must hold one tensor, got %llu", op,
                           (unsigned long long)list_len(pl));
        MF_TRY(list_items(op, "perTokenScaleOptional", pl, 1));
        const aclTensor *pt = item(pl, 0), *x0 = item(c->x, 0);
        if (pt->ndim != 1 || pt->dims[0] != x0->dims[0])
            return mf_fail(INVALID, "%s: perTokenScaleOptional must be (%lld) (x's rows), got %s", op,
                           (long long)x0->dims[0], mf_shape_str(pt, s1, sizeof s1));
    }
    if (!absent(c->quant[2]) || !absent(c->quant[3]))
        return mf_fail(INVALID, "%s: %s must be NULL for INT8 x and weight (antiquant goes with 16-bit x)", op,
                       !absent(c->quant[2]) ? QUANT_NAMES[2] : QUANT_NAMES[3]);
    if (c->act_type != 0)
        return mf_fail(INVALID, "%s: actType %lld on the quantized rows is not yet in moefr (actType 0 is)", op,
                       (long long)c->act_type);
    q->quant = ydt == ACL_INT8 ? GMM_Q_REQ : GMM_Q_DEQ;
    q->scale_dtype = item(sl, 0)->dtype;
    q->ns = (int)ns;
    q->npt = per_token ? 1 : 0;
    return ACLNN_SUCCESS;
}

static aclnnStatus gmm_phase1(const gmm_call *c, gmm_plan *p) {
    const char *op = c->exec->name;
    const uint64_t nx = list_len(c->x), nw = list_len(c->weight), ny = list_len(c->out);
    /* 1. CheckNotNull */
    if (nx == 0) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: x is NULL or an empty list", op);
    if (nw == 0) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: weight is NULL or an empty list", op);
    if (ny == 0) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL or an empty list", op, c->version >= 4 ? "out" : "y");
    if (c->workspaceSize == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", op);
    if (c->executor == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", op);
    const char *yname = c->version >= 4 ? "out" : "y";
    MF_TRY(list_items(op, "x", c->x, nx));
    MF_TRY(list_items(op, "weight", c->weight, nw));
    MF_TRY(list_items(op, yname, c->out, ny));
    for (uint64_t i = 0; i < ny; i++)
        if (mf_self_overlaps(item(c->out, i)))
            return mf_fail(INVALID, "%s: %s[%llu] has elements that share memory (a stride of 0, negative or shorter "
                                    "than the dims inside it); each output element needs its own place", op, yname,
                           (unsigned long long)i);
    /* 2. CheckCommonParam */
    const int64_t gt = c->group_type;
    if (gt == 1) return mf_fail(INVALID, "%s: groupType 1 (split N) is not supported, as in CANN", op);
    if (gt != -1 && gt != 0 && gt != 2)
        return mf_fail(INVALID, "%s: groupType must be -1, 0 or 2, got %lld", op, (long long)gt);
    if (c->split_item < 0 || c->split_item > 3)
        return mf_fail(INVALID, "%s: splitItem must be 0, 1, 2 or 3, got %lld", op, (long long)c->split_item);
    if (c->split_item >= 2 && gt == -1)
        return mf_fail(INVALID, "%s: splitItem %lld (one out tensor) needs a split groupType, got -1", op,
                       (long long)c->split_item);
    const aclTensor *gl = c->group_list;
    if (gl != NULL && !mf_tensor_live(gl))
        return mf_fail(INVALID, "%s: groupListOptional (%p) is not a live aclTensor", op, (const void *)gl);
    if (gl != NULL && gl->ndim != 1)
        return mf_fail(INVALID, "%s: groupListOptional must have 1 dim, got %d", op, (int)gl->ndim);
    if (c->act_type < 0 || c->act_type == 3 || c->act_type >= 6)
        return mf_fail(INVALID, "%s: actType must be 0, 1, 2, 4 or 5, got %lld", op, (long long)c->act_type);
    if (c->list_type == 2)
        return mf_fail(INVALID, "%s: groupListType 2 (sparse [groupIdx, size] rows, for INT8 x) is not yet in "
                                "moefr", op);
    if (c->list_type != 0 && c->list_type != 1)
        return mf_fail(INVALID, "%s: groupListType must be 0 (cumulative) or 1 (counts), got %lld", op,
                       (long long)c->list_type);
    /* 3. CheckUnusedParams */
    for (int i = 0; i < 5; i++)
        if (!absent(c->act[i]))
            return mf_fail(INVALID, "%s: %s must be NULL (activation quantization; moefr does not support it)", op,
                           ACT_NAMES[i]);
    /* 4. CheckFunctionParams: x's and weight[0]'s dtypes pick the row of CANN's table */
    const aclTensor *x0 = item(c->x, 0), *w0 = item(c->weight, 0);
    const int dt = x0->dtype;
    const bool a2 = mf_soc_strict();
    gmm_quant q = {GMM_Q_NONE, dt, 0, 0, 0, false, 0, 0};
    const bool has_bias = !absent(c->bias);
    const uint64_t nb = has_bias ? list_len(c->bias) : 0;
    int bdt = dt == ACL_BF16 ? ACL_FLOAT : dt;
    if (dt == ACL_INT8 && w0->dtype == ACL_INT8) {
        MF_TRY(quant_rows(c, nx, nw, ny, &q));
        bdt = ACL_INT32;
        if (has_bias) {
            MF_TRY(list_items(op, "biasOptional", c->bias, nb));
            MF_TRY(all_dtype(op, "biasOptional", c->bias, nb, ACL_INT32));
        }
    } else if ((dt == ACL_FLOAT16 || dt == ACL_BF16) && (w0->dtype == ACL_INT8 || c->wpack == 8)) {
        MF_TRY(antiquant_rows(c, nx, nw, ny, dt, &q));
        if (has_bias) bdt = item(c->bias, 0)->dtype;
    } else {
        if (!is_float(dt) || w0->dtype != dt)
            return mf_fail(INVALID, "%s: no GroupedMatmul row takes x %s with weight %s%s", op, mf_dtype_name(dt),
                           c->wpack == 8 ? "INT4 (packed in INT32)" : mf_dtype_name(w0->dtype),
                           unsupported_row(dt == ACL_INT32 && c->version >= 4 ? ACL_INT4 : dt,
                                           c->wpack == 8 ? ACL_INT4 : w0->dtype));
        if (dt == ACL_FLOAT && c->version == 1)
            return mf_fail(INVALID, "%s: FLOAT32 is not supported by GroupedMatmul V1 (use V2 or later)", op);
        if (dt == ACL_FLOAT && !a2)
            return mf_fail(INVALID, "%s: FLOAT32 x is not supported on Ascend 950 (A2/A3 only: MOEFR_SOC=ascend910b)", op);
        if (c->act_type != 0)
            return mf_fail(INVALID, "%s: actType %lld: the non-quantized case takes no activation (actType 0)", op,
                           (long long)c->act_type);
        for (int i = 0; i < 5; i++)
            if (!absent(c->quant[i]))
                return mf_fail(INVALID, "%s: %s is given, but x and weight are %s: quantized GroupedMatmul takes "
                                        "INT8 x and weight (A8W8)", op, QUANT_NAMES[i], mf_dtype_name(dt));
        MF_TRY(all_dtype(op, "x", c->x, nx, dt));
        MF_TRY(all_dtype(op, "weight", c->weight, nw, dt));
        MF_TRY(all_dtype(op, yname, c->out, ny, dt));
        if (has_bias) {
            MF_TRY(list_items(op, "biasOptional", c->bias, nb));
            bdt = item(c->bias, 0)->dtype;
            const bool ok = a2 ? bdt == (dt == ACL_BF16 ? ACL_FLOAT : dt) : (bdt == dt || bdt == ACL_FLOAT);
            if (!ok)
                return mf_fail(INVALID, "%s: biasOptional dtype must be %s for %s x%s, got %s", op,
                               a2 ? mf_dtype_name(dt == ACL_BF16 ? ACL_FLOAT : dt) : mf_dtype_name(dt),
                               mf_dtype_name(dt), a2 ? " (A2/A3)" : " (or FLOAT32)", mf_dtype_name(bdt));
            MF_TRY(all_dtype(op, "biasOptional", c->bias, nb, bdt));
        }
    }
    /* 5. per groupType */
    char s1[160], s2[160];
    const bool tx = ambiguous(x0) ? gt == 2 : transposed(x0);
    bool tw = false;
    uint64_t wref = 0; /* the first weight whose layout is not ambiguous sets the state */
    while (wref < nw && ambiguous(item(c->weight, wref))) wref++;
    if (wref < nw) tw = transposed(item(c->weight, wref));
    if (tx && tw) return mf_fail(INVALID, "%s: x and weight may not both be transposed", op);
    if (tw && c->wpack == 8)
        return mf_fail(INVALID, "%s: a transposed INT4 weight (packed in INT32) is not yet in moefr", op);
    for (uint64_t i = wref + 1; i < nw; i++)
        if (!ambiguous(item(c->weight, i)) && transposed(item(c->weight, i)) != tw)
            return mf_fail(INVALID, "%s: every weight must be transposed alike (weight[%llu] %s, strides (%lld, %lld), "
                                    "differs from the first one, %s)", op, (unsigned long long)i,
                           mf_shape_str(item(c->weight, i), s1, sizeof s1),
                           (long long)item(c->weight, i)->strides[item(c->weight, i)->ndim - 2],
                           (long long)item(c->weight, i)->strides[item(c->weight, i)->ndim - 1],
                           mf_shape_str(item(c->weight, wref), s2, sizeof s2));
    int64_t L = 0; /* group list entries */
    if (gl != NULL) {
        if (gl->dtype != ACL_INT64)
            return mf_fail(INVALID, "%s: groupListOptional dtype must be INT64, got %s", op, mf_dtype_name(gl->dtype));
        L = gl->dims[0];
        if (L > GMM_MAX_GROUPS)
            return mf_fail(INVALID, "%s: groupListOptional may have at most %d entries, got %lld", op, GMM_MAX_GROUPS,
                           (long long)L);
    } else if (c->group_array != NULL) {
        uint64_t n = 0;
        aclGetIntArraySize(c->group_array, &n);
        L = (int64_t)n;
        if (L > GMM_MAX_LIST)
            return mf_fail(INVALID, "%s: groupListOptional may have at most %d entries, got %lld", op, GMM_MAX_LIST,
                           (long long)L);
    }
    if (nx > GMM_MAX_LIST || nw > GMM_MAX_LIST)
        return mf_fail(INVALID, "%s: x and weight may hold at most %d tensors, got %llu and %llu", op, GMM_MAX_LIST,
                       (unsigned long long)nx, (unsigned long long)nw);
    const bool has_list = gl != NULL || c->group_array != NULL;
    const int64_t A2MAX = 65535; /* MAX_INNER_AXIS: x's K and N on A2/A3 */
    int64_t E = 0, M = 0, K = 0, N = 0, mrows = 0, kmax = 0;
    if (gt == -1) {
        if (nx != nw || nx != ny)
            return mf_fail(INVALID, "%s: groupType -1 needs as many x, weight and %s tensors, got %llu, %llu, %llu", op,
                           yname, (unsigned long long)nx, (unsigned long long)nw, (unsigned long long)ny);
        if (tx)
            return mf_fail(INVALID, "%s: x may not be transposed for groupType -1 (x[0] is %s with strides (%lld, %lld))",
                           op, mf_shape_str(x0, s1, sizeof s1), (long long)x0->strides[x0->ndim - 2],
                           (long long)x0->strides[x0->ndim - 1]);
        if (has_list && L != (int64_t)nx)
            return mf_fail(INVALID, "%s: groupListOptional has %lld entries for %llu x tensors", op, (long long)L,
                           (unsigned long long)nx);
        for (uint64_t i = 0; i < nx; i++) {
            const aclTensor *xi = item(c->x, i), *wi = item(c->weight, i), *yi = item(c->out, i);
            MF_TRY(rank_is(op, "x", i, xi, 2, 6));
            MF_TRY(rank_is(op, "weight", i, wi, 2, 2));
            if (xi->ndim > 2 && has_list)
                return mf_fail(INVALID, "%s: groupListOptional must be NULL when x has more than 2 dims", op);
            const int64_t k = xi->dims[xi->ndim - 1], n = wlast(c, wi);
            if (wi->dims[0] != k)
                return mf_fail(INVALID, "%s: weight[%llu] is %s, its dim 0 must be x[%llu]'s last dim %lld", op,
                               (unsigned long long)i, mf_shape_str(wi, s1, sizeof s1), (unsigned long long)i,
                               (long long)k);
            if (a2 && (k > A2MAX || (!tw && n > A2MAX)))
                return mf_fail(INVALID, "%s: K and N must be <= 65535 on A2/A3, got K %lld, N %lld", op, (long long)k,
                               (long long)n);
            bool ok = yi->ndim == xi->ndim;
            for (int d = 0; ok && d < xi->ndim; d++) ok = yi->dims[d] == (d == xi->ndim - 1 ? n : xi->dims[d]);
            if (!ok)
                return mf_fail(INVALID, "%s: %s[%llu] must be %s with the last dim %lld, got %s", op, yname,
                               (unsigned long long)i, mf_shape_str(xi, s1, sizeof s1), (long long)n,
                               mf_shape_str(yi, s2, sizeof s2));
            const int64_t rows = k ? xi->numel / k : 0;
            mrows = rows > mrows ? rows : mrows;
            kmax = k > kmax ? k : kmax;
            N = n > N ? n : N;
        }
        E = (int64_t)nx;
    } else if (gt == 0) {
        if (tx) return mf_fail(INVALID, "%s: x may not be transposed for groupType 0", op);
        if (ny > 1 && c->version >= 3)
            return mf_fail(INVALID, "%s: groupType 0 with one x and a list of %s (splitItem 0/1) is V1/V2 only", op,
                           yname);
        for (uint64_t i = 0; i < nx; i++) MF_TRY(rank_is(op, "x", i, item(c->x, i), 2, 2));
        for (uint64_t i = 0; i < ny; i++) MF_TRY(rank_is(op, yname, i, item(c->out, i), 2, 2));
        K = x0->dims[1];
        kmax = K;
        if (nw == 1 && w0->ndim == 3) {
            MF_TRY(rank_is(op, "weight", 0, w0, 3, 3));
            if (nx != 1 || ny != 1)
                return mf_fail(INVALID, "%s: one (E, K, N) weight needs one x and one %s", op, yname);
            E = w0->dims[0];
            N = wlast(c, w0);
            MF_TRY(dim_is(op, "weight dim 1 (K, x's dim 1)", w0->dims[1], K));
        } else {
            for (uint64_t i = 0; i < nw; i++) {
                const aclTensor *wi = item(c->weight, i);
                MF_TRY(rank_is(op, "weight", i, wi, 2, 2));
                /* one x per group: each group has its own K, the groups share N (CANN's table for
                 * groupType 0 with a list of x; op-plugin's test_npu_grouped_matmul_2) */
                const int64_t ki = nx > 1 && i < nx ? item(c->x, i)->dims[1] : K;
                if (wi->dims[0] != ki || wlast(c, wi) != wlast(c, w0))
                    return mf_fail(INVALID, "%s: weight[%llu] must be (%lld, %lld) (%s, weight[0]'s N), got %s", op,
                                   (unsigned long long)i, (long long)ki, (long long)wlast(c, w0),
                                   nx > 1 ? "x[i]'s K" : "x's K", mf_shape_str(wi, s1, sizeof s1));
                kmax = ki > kmax ? ki : kmax;
            }
            E = (int64_t)nw;
            N = wlast(c, w0);
            if (nx > 1 && nx != nw)
                return mf_fail(INVALID, "%s: %llu x tensors for %llu weights", op, (unsigned long long)nx,
                               (unsigned long long)nw);
        }
        if (a2 && (kmax > A2MAX || (!tw && N > A2MAX)))
            return mf_fail(INVALID, "%s: K and N must be <= 65535 on A2/A3, got K %lld, N %lld", op, (long long)kmax,
                           (long long)N);
        int64_t rows = 0;
        for (uint64_t i = 0; i < nx; i++) rows += item(c->x, i)->dims[0]; /* each x's K: its weight's dim 0 */
        if (nx == 1) {
            if (!has_list) return mf_fail(INVALID, "%s: groupListOptional is required to split one x", op);
            if (L != E)
                return mf_fail(INVALID, "%s: groupListOptional has %lld entries for %lld groups", op, (long long)L,
                               (long long)E);
        } else if (has_list && L != E) {
            return mf_fail(INVALID, "%s: groupListOptional has %lld entries for %lld x tensors", op, (long long)L,
                           (long long)E);
        }
        if (ny == 1) {
            const aclTensor *y = item(c->out, 0);
            if (y->dims[0] != rows || y->dims[1] != N)
                return mf_fail(INVALID, "%s: %s must be (%lld, %lld), got %s", op, yname, (long long)rows, (long long)N,
                               mf_shape_str(y, s1, sizeof s1));
        } else {
            if ((int64_t)ny != E)
                return mf_fail(INVALID, "%s: %llu %s tensors for %lld groups", op, (unsigned long long)ny, yname,
                               (long long)E);
            for (uint64_t i = 0; i < ny; i++)
                if (item(c->out, i)->dims[1] != N)
                    return mf_fail(INVALID, "%s: %s[%llu] must have %lld columns", op, yname, (unsigned long long)i,
                                   (long long)N);
        }
        M = rows;
        mrows = rows;
        if (nx > 1) {
            mrows = 0;
            for (uint64_t i = 0; i < nx; i++) mrows = item(c->x, i)->dims[0] > mrows ? item(c->x, i)->dims[0] : mrows;
        }
    } else { /* gt == 2 */
        if (nx != 1 || nw != 1 || ny != 1)
            return mf_fail(INVALID, "%s: groupType 2 (K split) takes one x, one weight and one %s in moefr, got %llu, "
                                    "%llu, %llu", op, yname, (unsigned long long)nx, (unsigned long long)nw,
                           (unsigned long long)ny);
        MF_TRY(rank_is(op, "x", 0, x0, 2, 2));
        MF_TRY(rank_is(op, "weight", 0, w0, 2, 2));
        MF_TRY(rank_is(op, yname, 0, item(c->out, 0), 3, 3));
        if (!tx && x0->numel > 0)
            return mf_fail(INVALID, "%s: groupType 2 needs x as a transposed view ((M, K) over (K, M) storage)", op);
        if (tw) return mf_fail(INVALID, "%s: weight may not be transposed for groupType 2", op);
        if (has_bias) return mf_fail(INVALID, "%s: biasOptional must be NULL for groupType 2", op);
        if (!has_list) return mf_fail(INVALID, "%s: groupListOptional is required for groupType 2", op);
        M = x0->dims[0], K = x0->dims[1], N = w0->dims[1];
        MF_TRY(dim_is(op, "weight dim 0 (K, x's dim 1)", w0->dims[0], K));
        if (a2 && (M > A2MAX || N > A2MAX))
            return mf_fail(INVALID, "%s: M and N must be <= 65535 on A2/A3, got M %lld, N %lld", op, (long long)M,
                           (long long)N);
        E = L;
        const aclTensor *y = item(c->out, 0);
        if (y->dims[0] != E || y->dims[1] != M || y->dims[2] != N)
            return mf_fail(INVALID, "%s: %s must be (%lld, %lld, %lld) (groups, M, N), got %s", op, yname, (long long)E,
                           (long long)M, (long long)N, mf_shape_str(y, s1, sizeof s1));
        mrows = M;
        kmax = K;
    }
    /* bias shapes (CheckOptionalTensorList) */
    if (has_bias) {
        if (nb != nw)
            return mf_fail(INVALID, "%s: biasOptional has %llu tensors for %llu weights", op, (unsigned long long)nb,
                           (unsigned long long)nw);
        for (uint64_t i = 0; i < nb; i++) {
            const aclTensor *b = item(c->bias, i);
            const bool w3 = w0->ndim == 3;
            const int64_t n = w3 ? N : wlast(c, item(c->weight, i));
            const bool ok = w3 ? b->ndim == 2 && b->dims[0] == E && b->dims[1] == N : b->ndim == 1 && b->dims[0] == n;
            if (!ok)
                return mf_fail(INVALID, "%s: biasOptional[%llu] must be %s, got %s", op, (unsigned long long)i,
                               w3 ? "(E, N) for one (E, K, N) weight" : "(N) of its weight",
                               mf_shape_str(b, s1, sizeof s1));
        }
    }
    memset(p, 0, sizeof *p);
    p->op = op;
    p->gt = (int)gt;
    p->list_type = (int)c->list_type;
    p->nx = (int)nx, p->nw = (int)nw, p->nb = (int)nb, p->ny = (int)ny;
    p->E = E, p->M = M, p->K = K, p->N = N;
    p->mrows = mrows, p->kmax = kmax;
    p->dtype = dt, p->bias_dtype = bdt;
    p->quant = q.quant, p->out_dtype = q.out_dtype, p->scale_dtype = q.scale_dtype;
    p->ns = q.ns, p->npt = q.npt;
    p->antiquant = q.antiquant, p->nas = q.nas;
    p->aq_gsize = q.aq_gsize, p->wpack = c->wpack;
    for (uint64_t i = 0; i < nx; i++) p->pack_a |= !mf_gmm_direct(item(c->x, i), false);
    for (uint64_t i = 0; i < nw; i++) p->pack_b |= !mf_gmm_direct(item(c->weight, i), true);
    bool empty = true;
    for (uint64_t i = 0; i < nx; i++) empty &= item(c->x, i)->numel == 0;
    p->empty = empty;
    return ACLNN_SUCCESS;
}

/* Phase 1's end: the executor with the plan and the lists' descriptors. */
static aclnnStatus gmm_publish(const gmm_call *c, gmm_plan *hdr) {
    if (c->group_array != NULL) { /* V1/V2: the values are known now */
        hdr->int_array = true;
        for (int64_t i = 0; i < hdr->E; i++) {
            int64_t v = 0;
            const mf_array *a = (const mf_array *)(const void *)c->group_array;
            if ((uint64_t)i < a->n) memcpy(&v, (const char *)a->values + i * 8, 8);
            hdr->gl[i] = v;
        }
    }
    hdr->workers = mf_num_threads();
    mf_gmm_tiles(hdr);
    const int n = hdr->nx + hdr->nw + hdr->nb + hdr->ny + hdr->ns + hdr->npt + 2 * hdr->nas;
    const size_t bytes = sizeof(gmm_plan) + (size_t)n * sizeof(aclTensor);
    gmm_plan *p = mf_malloc(bytes);
    if (p == NULL) return mf_fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of memory planning", hdr->op);
    memcpy(p, hdr, sizeof *hdr);
    int at = 0;
    for (int i = 0; i < hdr->nx; i++) p->t[at++] = *item(c->x, (uint64_t)i);
    for (int i = 0; i < hdr->nw; i++) p->t[at++] = *item(c->weight, (uint64_t)i);
    for (int i = 0; i < hdr->nb; i++) p->t[at++] = *item(c->bias, (uint64_t)i);
    for (int i = 0; i < hdr->ny; i++) p->t[at++] = *item(c->out, (uint64_t)i);
    for (int i = 0; i < hdr->ns; i++) p->t[at++] = *item(c->quant[0], (uint64_t)i);
    for (int i = 0; i < hdr->npt; i++) p->t[at++] = *item(c->quant[4], (uint64_t)i);
    for (int i = 0; i < hdr->nas; i++) p->t[at++] = *item(c->quant[2], (uint64_t)i);
    for (int i = 0; i < hdr->nas; i++) p->t[at++] = *item(c->quant[3], (uint64_t)i);
    const aclTensor *slot[1] = {c->group_list};
    const uint64_t ws = hdr->empty ? 0 : mf_gmm_workspace(p);
    aclnnStatus rc = mf_op_publish(c->exec, slot, 0, p, bytes, mf_gmm_run, ws, c->workspaceSize, c->executor);
    free(p);
    return rc;
}

static aclnnStatus gmm_gws(gmm_call *c) {
    gmm_plan hdr;
    const aclTensor *w0 = list_len(c->weight) ? item(c->weight, 0) : NULL;
    c->wpack = c->version >= 4 && w0 != NULL && mf_tensor_live(w0) && w0->dtype == ACL_INT32 ? 8 : 1;
    MF_TRY(mf_isa_check(c->exec->name));
    MF_TRY(gmm_phase1(c, &hdr));
    return gmm_publish(c, &hdr);
}

/* ---- the front ends ---- */

aclnnStatus aclnnGroupedMatmulV4GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight, const aclTensorList *biasOptional,
    const aclTensorList *scaleOptional, const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional, const aclTensorList *antiquantOffsetOptional,
    const aclTensorList *perTokenScaleOptional, const aclTensor *groupListOptional,
    const aclTensorList *activationInputOptional, const aclTensorList *activationQuantScaleOptional,
    const aclTensorList *activationQuantOffsetOptional, int64_t splitItem, int64_t groupType, int64_t groupListType,
    int64_t actType, aclTensorList *out, aclTensorList *activationFeatureOutOptional,
    aclTensorList *dynQuantScaleOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor) {
    gmm_call c = {&EXEC_V4, 4, x, weight, biasOptional, out,
                  {scaleOptional, offsetOptional, antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional},
                  {activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional,
                   activationFeatureOutOptional, dynQuantScaleOutOptional},
                  groupListOptional, NULL, NULL, splitItem, groupType, groupListType, actType, workspaceSize, executor, 1};
    return gmm_gws(&c);
}

aclnnStatus aclnnGroupedMatmulV5GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight, const aclTensorList *biasOptional,
    const aclTensorList *scaleOptional, const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional, const aclTensorList *antiquantOffsetOptional,
    const aclTensorList *perTokenScaleOptional, const aclTensor *groupListOptional,
    const aclTensorList *activationInputOptional, const aclTensorList *activationQuantScaleOptional,
    const aclTensorList *activationQuantOffsetOptional, int64_t splitItem, int64_t groupType, int64_t groupListType,
    int64_t actType, aclIntArray *tuningConfigOptional, aclTensorList *out,
    aclTensorList *activationFeatureOutOptional, aclTensorList *dynQuantScaleOutOptional, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    gmm_call c = {&EXEC_V5, 5, x, weight, biasOptional, out,
                  {scaleOptional, offsetOptional, antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional},
                  {activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional,
                   activationFeatureOutOptional, dynQuantScaleOutOptional},
                  groupListOptional, NULL, tuningConfigOptional, splitItem, groupType, groupListType, actType,
                  workspaceSize, executor, 1};
    gmm_plan hdr;
    MF_TRY(mf_isa_check(c.exec->name));
    MF_TRY(gmm_phase1(&c, &hdr));
    if (tuningConfigOptional != NULL) { /* CheckTuningConfig: tuning[0] in [0, the largest x dim 0] */
        const mf_array *a = (const mf_array *)(const void *)tuningConfigOptional;
        if (a->n > 0) {
            int64_t v = 0, most = 0;
            memcpy(&v, a->values, 8);
            for (int i = 0; i < hdr.nx; i++) most = item(x, (uint64_t)i)->dims[0] > most ? item(x, (uint64_t)i)->dims[0] : most;
            if (v < 0 || v > most)
                return mf_fail(INVALID, "%s: tuningConfigOptional[0] must be in [0, %lld], got %lld", c.exec->name,
                               (long long)most, (long long)v);
        }
    }
    return gmm_publish(&c, &hdr);
}

aclnnStatus aclnnGroupedMatmulV3GetWorkspaceSize(const aclTensorList *x, const aclTensorList *weight,
                                                 const aclTensorList *biasOptional, const aclTensorList *scaleOptional,
                                                 const aclTensorList *offsetOptional,
                                                 const aclTensorList *antiquantScaleOptional,
                                                 const aclTensorList *antiquantOffsetOptional,
                                                 const aclTensor *groupListOptional, int64_t splitItem,
                                                 int64_t groupType, const aclTensorList *y, uint64_t *workspaceSize,
                                                 aclOpExecutor **executor) {
    gmm_call c = {&EXEC_V3, 3, x, weight, biasOptional, y,
                  {scaleOptional, offsetOptional, antiquantScaleOptional, antiquantOffsetOptional, NULL},
                  {NULL, NULL, NULL, NULL, NULL}, groupListOptional, NULL, NULL, splitItem, groupType, 0, 0,
                  workspaceSize, executor, 1};
    return gmm_gws(&c);
}

aclnnStatus aclnnGroupedMatmulV2GetWorkspaceSize(const aclTensorList *x, const aclTensorList *weight,
                                                 const aclTensorList *biasOptional, const aclTensorList *scaleOptional,
                                                 const aclTensorList *offsetOptional,
                                                 const aclTensorList *antiquantScaleOptional,
                                                 const aclTensorList *antiquantOffsetOptional,
                                                 const aclIntArray *groupListOptional, int64_t splitItem,
                                                 int64_t groupType, const aclTensorList *y, uint64_t *workspaceSize,
                                                 aclOpExecutor **executor) {
    uint64_t n = 0;
    if (groupListOptional != NULL && aclGetIntArraySize(groupListOptional, &n) == ACLNN_SUCCESS && n == 0)
        groupListOptional = NULL; /* an empty array is no list (CANN) */
    gmm_call c = {&EXEC_V2, 2, x, weight, biasOptional, y,
                  {scaleOptional, offsetOptional, antiquantScaleOptional, antiquantOffsetOptional, NULL},
                  {NULL, NULL, NULL, NULL, NULL}, NULL, groupListOptional, NULL, splitItem, groupType, 0, 0,
                  workspaceSize, executor, 1};
    return gmm_gws(&c);
}

aclnnStatus aclnnGroupedMatmulGetWorkspaceSize(const aclTensorList *x, const aclTensorList *weight,
                                               const aclTensorList *biasOptional, const aclTensorList *scaleOptional,
                                               const aclTensorList *offsetOptional,
                                               const aclTensorList *antiquantScaleOptional,
                                               const aclTensorList *antiquantOffsetOptional,
                                               const aclIntArray *groupListOptional, int64_t splitItem,
                                               const aclTensorList *y, uint64_t *workspaceSize,
                                               aclOpExecutor **executor) {
    /* V1 infers groupType: -1 when x and y are both lists of several, or all three hold one tensor; else 0 */
    const uint64_t nx = list_len(x), nw = list_len(weight), ny = list_len(y);
    const int64_t gt = (nx > 1 && ny > 1) || (nx == 1 && nw == 1 && ny == 1) ? -1 : 0;
    uint64_t n = 0;
    if (groupListOptional != NULL && aclGetIntArraySize(groupListOptional, &n) == ACLNN_SUCCESS && n == 0)
        groupListOptional = NULL;
    gmm_call c = {&EXEC_V1, 1, x, weight, biasOptional, y,
                  {scaleOptional, offsetOptional, antiquantScaleOptional, antiquantOffsetOptional, NULL},
                  {NULL, NULL, NULL, NULL, NULL}, NULL, groupListOptional, NULL, splitItem, gt, 0, 0,
                  workspaceSize, executor, 1};
    return gmm_gws(&c);
}

#define PHASE2(fn, kind, name)                                                                        \
    aclnnStatus fn(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) { \
        return mf_executor_execute(executor, kind, name, workspace, workspaceSize, stream);          \
    }
PHASE2(aclnnGroupedMatmul, MF_OP_GROUPED_MATMUL, "aclnnGroupedMatmul")
PHASE2(aclnnGroupedMatmulV2, MF_OP_GROUPED_MATMUL_V2, "aclnnGroupedMatmulV2")
PHASE2(aclnnGroupedMatmulV3, MF_OP_GROUPED_MATMUL_V3, "aclnnGroupedMatmulV3")
PHASE2(aclnnGroupedMatmulV4, MF_OP_GROUPED_MATMUL_V4, "aclnnGroupedMatmulV4")
PHASE2(aclnnGroupedMatmulV5, MF_OP_GROUPED_MATMUL_V5, "aclnnGroupedMatmulV5")

/* ---- registry entries (opdef.h): the lists as one tensor each ---- */
enum { R_X, R_W, R_B, R_GL, R_Y, R_NT };
static const char *const RNAMES[R_NT] = {"x", "weight", "biasOptional", "groupListOptional", "out"};
static const unsigned RFLAGS[R_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, MF_T_REQUIRED};
static const mf_dtcol RCOLS[] = {{ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_INT64, ACL_FLOAT16},
                                 {ACL_BF16, ACL_BF16, ACL_FLOAT, ACL_INT64, ACL_BF16},
                                 {ACL_BF16, ACL_BF16, ACL_BF16, ACL_INT64, ACL_BF16},
                                 {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT, ACL_INT64, ACL_FLOAT16}};
static const mf_dtcol RCOLS_A2[] = {{ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_INT64, ACL_FLOAT16},
                                    {ACL_BF16, ACL_BF16, ACL_FLOAT, ACL_INT64, ACL_BF16},
                                    {ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_INT64, ACL_FLOAT}};
static const mf_op_def RSIG3 = {"aclnnGroupedMatmulV3", MF_OP_GROUPED_MATMUL_V3, 4, 1, RNAMES, RFLAGS, RCOLS, 4, RCOLS_A2, 3};
static const mf_op_def RSIG4 = {"aclnnGroupedMatmulV4", MF_OP_GROUPED_MATMUL_V4, 4, 1, RNAMES, RFLAGS, RCOLS, 4, RCOLS_A2, 3};
static const mf_op_def RSIG5 = {"aclnnGroupedMatmulV5", MF_OP_GROUPED_MATMUL_V5, 4, 1, RNAMES, RFLAGS, RCOLS, 4, RCOLS_A2, 3};
/* V1/V2: the group list is an attribute (an aclIntArray) */
enum { Q_X, Q_W, Q_B, Q_Y, Q_NT };
static const char *const QNAMES[Q_NT] = {"x", "weight", "biasOptional", "y"};
static const unsigned QFLAGS[Q_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, MF_T_REQUIRED};
static const mf_dtcol QCOLS[] = {{ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16},
                                 {ACL_BF16, ACL_BF16, ACL_FLOAT, ACL_BF16},
                                 {ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT}};
static const mf_op_def RSIG1 = {"aclnnGroupedMatmul", MF_OP_GROUPED_MATMUL, 3, 1, QNAMES, QFLAGS, QCOLS, 3, QCOLS, 3};
static const mf_op_def RSIG2 = {"aclnnGroupedMatmulV2", MF_OP_GROUPED_MATMUL_V2, 3, 1, QNAMES, QFLAGS, QCOLS, 3, QCOLS, 3};

/* One-tensor lists over the caller's tensors for the thunks (NULL stays
 * NULL); drop() releases the lists and leaves the tensors to their owner. */
static aclTensorList *one(const aclTensor *t) { return t ? aclCreateTensorList(&t, 1) : NULL; }
static void drop(aclTensorList *a, aclTensorList *b, aclTensorList *c, aclTensorList *d) {
    mf_list_release(a), mf_list_release(b), mf_list_release(c), mf_list_release(d);
}
static const mf_attr_desc ATTRS_4[] = {{"splitItem", MF_ATTR_INT64, 0, 3},
                                       {"groupType", MF_ATTR_INT64, -1, 2},
                                       {"groupListType", MF_ATTR_INT64, 0, 1},
                                       {"actType", MF_ATTR_INT64, 0, 0}};
static aclnnStatus gws4(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    aclTensorList *x = one(t[R_X]), *w = one(t[R_W]), *b = one(t[R_B]), *y = one(t[R_Y]);
    aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(x, w, b, NULL, NULL, NULL, NULL, NULL, t[R_GL], NULL, NULL,
                                                          NULL, a[0].i, a[1].i, a[2].i, a[3].i, y, NULL, NULL, ws, e);
    drop(x, w, b, y);
    return rc;
}
static aclnnStatus gws5(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    aclTensorList *x = one(t[R_X]), *w = one(t[R_W]), *b = one(t[R_B]), *y = one(t[R_Y]);
    aclnnStatus rc = aclnnGroupedMatmulV5GetWorkspaceSize(x, w, b, NULL, NULL, NULL, NULL, NULL, t[R_GL], NULL, NULL,
                                                          NULL, a[0].i, a[1].i, a[2].i, a[3].i, NULL, y, NULL, NULL,
                                                          ws, e);
    drop(x, w, b, y);
    return rc;
}
static const mf_attr_desc ATTRS_3[] = {{"splitItem", MF_ATTR_INT64, 0, 3}, {"groupType", MF_ATTR_INT64, -1, 2}};
static aclnnStatus gws3(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    aclTensorList *x = one(t[R_X]), *w = one(t[R_W]), *b = one(t[R_B]), *y = one(t[R_Y]);
    aclnnStatus rc = aclnnGroupedMatmulV3GetWorkspaceSize(x, w, b, NULL, NULL, NULL, NULL, t[R_GL], a[0].i, a[1].i, y,
                                                          ws, e);
    drop(x, w, b, y);
    return rc;
}
static const mf_attr_desc ATTRS_2[] = {{"groupListOptional", MF_ATTR_INT_ARRAY, 0, 4},
                                       {"splitItem", MF_ATTR_INT64, 0, 3},
                                       {"groupType", MF_ATTR_INT64, -1, 2}};
static aclnnStatus gws2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    aclTensorList *x = one(t[Q_X]), *w = one(t[Q_W]), *b = one(t[Q_B]), *y = one(t[Q_Y]);
    aclnnStatus rc = aclnnGroupedMatmulV2GetWorkspaceSize(x, w, b, NULL, NULL, NULL, NULL, a[0].arr, a[1].i, a[2].i, y,
                                                          ws, e);
    drop(x, w, b, y);
    return rc;
}
static aclnnStatus gws1(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    aclTensorList *x = one(t[Q_X]), *w = one(t[Q_W]), *b = one(t[Q_B]), *y = one(t[Q_Y]);
    aclnnStatus rc = aclnnGroupedMatmulGetWorkspaceSize(x, w, b, NULL, NULL, NULL, NULL, a[0].arr, a[1].i, y, ws, e);
    drop(x, w, b, y);
    return rc;
}
const mf_op_entry mf_entry_grouped_matmul = {&RSIG1, ATTRS_2, 2, gws1, aclnnGroupedMatmul};
const mf_op_entry mf_entry_grouped_matmul_v2 = {&RSIG2, ATTRS_2, 3, gws2, aclnnGroupedMatmulV2};
const mf_op_entry mf_entry_grouped_matmul_v3 = {&RSIG3, ATTRS_3, 2, gws3, aclnnGroupedMatmulV3};
const mf_op_entry mf_entry_grouped_matmul_v4 = {&RSIG4, ATTRS_4, 4, gws4, aclnnGroupedMatmulV4};
const mf_op_entry mf_entry_grouped_matmul_v5 = {&RSIG5, ATTRS_4, 4, gws5, aclnnGroupedMatmulV5};
