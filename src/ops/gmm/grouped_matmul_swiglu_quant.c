/* grouped_matmul_swiglu_quant.c - aclnnGroupedMatmulSwigluQuant and its
 * WeightNZ entry (ops-transformer gmm/grouped_matmul_swiglu_quant), both phases.
 * Phase 1 in the order of op_api/aclnn_grouped_matmul_swiglu_quant.cpp:
 * CheckNotNull (161001), the A8W8 dims and shapes, CheckDtypeValid,
 * CheckFormat (161002), the empty shortcut, then the l0 launch's dtype table
 * (grouped_matmul_swiglu_quant_def.cpp: xScale FLOAT only, 561103). Phase 2
 * computes one row at a time with the kernel's rounding points
 * (op_kernel/grouped_matmul_swiglu_quant.h, GMMSwigluCompute; docs/CANN_COMPAT.md,
 * "GroupedMatmulSwigluQuant"): exact int32 sums, fp32(acc) * xScale, then
 * * weightScale, SwiGlu in fp32 (act = the first half), the row's absmax / 127,
 * times its reciprocal, to fp16 and then to int8, both half to even. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_grouped_matmul_swiglu_quant.h"
#include "aclnnop/aclnn_grouped_matmul_swiglu_quant_weight_nz.h"
#include "blas/gemm.h"
#include "ops/act/swiglu.h"
#include "ops/common.h"
#include "ops/opdef.h"

#define INVALID ACLNN_ERR_PARAM_INVALID
/* rows a worker takes at once (and sums together when they share a group);
 * the K chunk and the column block of each GEMM call (sums() below) */
#define ROWS_PER_TAKE 64
#define GSQ_KC 1024
#define GSQ_NB 512
/* n 4-byte values, rounded up to whole cache lines */
static inline uint64_t gsq_bytes(int64_t n) { return ((uint64_t)n * 4 + 63) & ~(uint64_t)63; }

/* the signature's tensors, in order */
enum { T_X, T_W, T_BIAS, T_OFFSET, T_WS, T_XS, T_GL, T_OUT, T_OS, T_OO, T_N };
static const char *const NAMES[T_N] = {"x",       "weight",    "bias",   "offset",      "weightScale",
                                       "xScale",  "groupList", "output", "outputScale", "outputOffset"};
static const unsigned FLAGS[T_N] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, MF_T_REQUIRED, MF_T_REQUIRED,
                                    MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, 0};
/* grouped_matmul_swiglu_quant_def.cpp's A8W8 columns (the A8W4 ones are refused by name) */
#define F32 ACL_FLOAT
#define ANY MF_DT_ANY
static const mf_dtcol COLS[] = {
    {ACL_INT8, ACL_INT8, ANY, ANY, F32, F32, ACL_INT64, ACL_INT8, F32, ANY},
    {ACL_INT8, ACL_INT8, ANY, ANY, ACL_BF16, F32, ACL_INT64, ACL_INT8, F32, ANY},
    {ACL_INT8, ACL_INT8, ANY, ANY, ACL_FLOAT16, F32, ACL_INT64, ACL_INT8, F32, ANY},
};
static const mf_op_def DEF = {"aclnnGroupedMatmulSwigluQuant", MF_OP_GROUPED_MATMUL_SWIGLU_QUANT, 7, 3, NAMES,
                              FLAGS, COLS, 3, COLS, 3};
static const mf_op_def DEF_NZ = {"aclnnGroupedMatmulSwigluQuantWeightNZ", MF_OP_GROUPED_MATMUL_SWIGLU_QUANT_WEIGHT_NZ,
                                 7, 3, NAMES, FLAGS, COLS, 3, COLS, 3};

typedef struct gsq_plan {
    const char *op;
    bool empty;
    int64_t M, K, N, E, L; /* L: groupList's entries (<= E) */
    int ws_dtype;
    int workers;
    int64_t hp;      /* N / 2 rounded up to SG_WMAX (the SwiGlu routines' whole vectors) */
    int64_t scratch; /* bytes per worker */
} gsq_plan;

#define NAME_OF(t) NAMES[t]

static aclnnStatus want_rank(const char *op, const aclTensor *t, int i, int rank) {
    if (t->ndim != rank)
        return mf_fail(INVALID, "%s: %s must have %d dim%s, got %d", op, NAME_OF(i), rank, rank == 1 ? "" : "s",
                       (int)t->ndim);
    return ACLNN_SUCCESS;
}
/* OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE: the whole view shape */
static aclnnStatus want_shape(const char *op, const aclTensor *t, int i, int n, const int64_t *d) {
    bool same = t->ndim == n;
    for (int k = 0; same && k < n; k++) same = t->dims[k] == d[k];
    if (!same) {
        char got[160], want[160];
        size_t u = (size_t)snprintf(want, sizeof want, "(");
        for (int k = 0; k < n && u < sizeof want; k++)
            u += (size_t)snprintf(want + u, sizeof want - u, k ? ", %lld" : "%lld", (long long)d[k]);
        if (u < sizeof want) snprintf(want + u, sizeof want - u, ")");
        return mf_fail(INVALID, "%s: %s shape must be %s, got %s", op, NAME_OF(i), want, mf_shape_str(t, got, sizeof got));
    }
    return ACLNN_SUCCESS;
}

static bool is_nz(const aclTensor *t) { return t->format == ACL_FORMAT_FRACTAL_NZ; }
/* CANN's IsPrivateFormat: the fractal and C0 layouts */
static bool is_private(int f) {
    return f == ACL_FORMAT_FRACTAL_NZ || f == ACL_FORMAT_NC1HWC0 || f == ACL_FORMAT_FRACTAL_Z ||
           f == ACL_FORMAT_NC1HWC0_C04 || f == ACL_FORMAT_NDC1HWC0 || f == ACL_FRACTAL_Z_3D;
}

/* CheckInputOutDims_A8W8 then CheckInputOutShape_A8W8 */
static aclnnStatus a8w8_shapes(const char *op, const aclTensor *const *t) {
    const aclTensor *x = t[T_X], *w = t[T_W], *ws = t[T_WS];
    MF_TRY(want_rank(op, x, T_X, 2));
    MF_TRY(want_rank(op, w, T_W, is_nz(w) ? 5 : 3));
    MF_TRY(want_rank(op, ws, T_WS, 2));
    MF_TRY(want_rank(op, t[T_XS], T_XS, 1));
    MF_TRY(want_rank(op, t[T_GL], T_GL, 1));
    MF_TRY(want_rank(op, t[T_OUT], T_OUT, 2));
    MF_TRY(want_rank(op, t[T_OS], T_OS, 1));
    const int64_t m = x->dims[0], k = x->dims[1], n = ws->dims[1], e = w->dims[0];
    if (n % 2 != 0) return mf_fail(INVALID, "%s: N (weightScale's last dim) is %lld, not even", op, (long long)n);
    if (is_nz(w)) {
        const int64_t nz[5] = {e, n / 32, k / 16, 16, 32};
        MF_TRY(want_shape(op, w, T_W, 5, nz));
    } else {
        const int64_t nd[3] = {e, k, n};
        MF_TRY(want_shape(op, w, T_W, 3, nd));
    }
    const int64_t en[2] = {e, n}, mm[1] = {m}, mh[2] = {m, n / 2};
    MF_TRY(want_shape(op, ws, T_WS, 2, en));
    MF_TRY(want_shape(op, t[T_XS], T_XS, 1, mm));
    MF_TRY(want_shape(op, t[T_OUT], T_OUT, 2, mh));
    MF_TRY(want_shape(op, t[T_OS], T_OS, 1, mm));
    if (t[T_GL]->dims[0] > e)
        return mf_fail(INVALID, "%s: groupList has %lld entries, more than weight's %lld groups", op,
                       (long long)t[T_GL]->dims[0], (long long)e);
    if (n > 10240) return mf_fail(INVALID, "%s: N is %lld, above 10240", op, (long long)n);
    if (k >= 65536) return mf_fail(INVALID, "%s: K (x's last dim) is %lld, must be below 65536", op, (long long)k);
    return ACLNN_SUCCESS;
}

/* CheckDtypeValid: its lists in its order (xScale's list takes FLOAT16 and
 * BF16 too; the launch refuses them later) */
static aclnnStatus dtypes(const char *op, const aclTensor *const *t) {
    const int wdt = t[T_W]->dtype, sdt = t[T_WS]->dtype, xs = t[T_XS]->dtype;
    if (t[T_X]->dtype != ACL_INT8)
        return mf_fail(INVALID, "%s: x dtype must be INT8, got %s", op, mf_dtype_name(t[T_X]->dtype));
    if (wdt != ACL_INT8 && wdt != ACL_INT4)
        return mf_fail(INVALID, "%s: weight dtype must be INT8 or INT4, got %s", op, mf_dtype_name(wdt));
    if (sdt != ACL_FLOAT && sdt != ACL_FLOAT16 && sdt != ACL_BF16)
        return mf_fail(INVALID, "%s: weightScale dtype must be FLOAT, FLOAT16 or BF16 for INT8 weight, got %s", op,
                       mf_dtype_name(sdt));
    if (xs != ACL_FLOAT && xs != ACL_FLOAT16 && xs != ACL_BF16)
        return mf_fail(INVALID, "%s: xScale dtype must be FLOAT, FLOAT16 or BF16, got %s", op, mf_dtype_name(xs));
    if (t[T_GL]->dtype != ACL_INT64)
        return mf_fail(INVALID, "%s: groupList dtype must be INT64, got %s", op, mf_dtype_name(t[T_GL]->dtype));
    if (t[T_OUT]->dtype != ACL_INT8)
        return mf_fail(INVALID, "%s: output dtype must be INT8, got %s", op, mf_dtype_name(t[T_OUT]->dtype));
    if (t[T_OS]->dtype != ACL_FLOAT)
        return mf_fail(INVALID, "%s: outputScale dtype must be FLOAT, got %s", op, mf_dtype_name(t[T_OS]->dtype));
    return ACLNN_SUCCESS;
}

static aclnnStatus run(const void *plan, const aclTensor *const *t, void *workspace);

static aclnnStatus plan_common(const mf_op_def *def, const aclTensor *const *t, uint64_t *workspaceSize,
                               aclOpExecutor **executor) {
    const char *op = def->name;
    if (workspaceSize == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", op);
    if (executor == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", op);
    /* CheckNotNull: x, weight, weightScale, xScale, groupList, output, outputScale */
    for (int i = 0; i < T_N; i++)
        if (t[i] == NULL && (FLAGS[i] & MF_T_REQUIRED))
            return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", op, NAMES[i]);
    for (int i = 0; i < T_N; i++)
        if (t[i] != NULL && !mf_tensor_live(t[i]))
            return mf_fail(INVALID, "%s: %s (%p) is not a live aclTensor", op, NAMES[i], (const void *)t[i]);
    const int xdt = t[T_X]->dtype, wdt = t[T_W]->dtype;
    if (xdt == ACL_INT8 && (wdt == ACL_INT4 || wdt == ACL_INT32)) /* CANN's A8W4 (MSD) branch */
        return mf_fail(INVALID, "%s: the A8W4 rows (INT8 x, %s weight) are not yet in moefr", op, mf_dtype_name(wdt));
    if (xdt == ACL_INT8 && wdt == ACL_INT8) MF_TRY(a8w8_shapes(op, t));
    MF_TRY(dtypes(op, t));
    /* CheckFormat; CANN wants the A8W8 weight stored FRACTAL_NZ, moefr reads ND (CANN_COMPAT) */
    if (is_nz(t[T_W]))
        return mf_fail(INVALID, "%s: weight in FRACTAL_NZ is not yet read by moefr: pass the ND (E, K, N) weight", op);
    if (is_private(t[T_X]->format))
        return mf_fail(INVALID, "%s: x format must not be a private format, got %s", op, mf_format_name(t[T_X]->format));
    if (is_private(t[T_OUT]->format))
        return mf_fail(INVALID, "%s: output format must not be a private format, got %s", op,
                       mf_format_name(t[T_OUT]->format));
    if (t[T_W]->format != ACL_FORMAT_ND)
        return mf_fail(INVALID, "%s: weight format must be ND, got %s", op, mf_format_name(t[T_W]->format));
    /* moefr's own rule: outputs are written in place by several workers, one value per element */
    for (int i = T_OUT; i <= T_OS; i++)
        if (mf_self_overlaps(t[i]))
            return mf_fail(INVALID, "%s: %s has elements that share memory (a stride of 0, negative or shorter than "
                           "the dims inside it); each output element needs its own place", op, NAMES[i]);
    gsq_plan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    const unsigned unused = 1u << T_BIAS | 1u << T_OFFSET | 1u << T_OO; /* reserved by CANN; A8W8 reads none */
    if (t[T_OUT]->numel == 0 || t[T_GL]->numel == 0 || t[T_OS]->numel == 0) {
        p.empty = true;
        return mf_op_publish(def, t, unused, &p, sizeof p, run, 0, workspaceSize, executor);
    }
    /* the l0 launch (the def's x_scale column is FLOAT only): nullptr -> ACLNN_ERR_INNER_NULLPTR */
    if (t[T_XS]->dtype != ACL_FLOAT)
        return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: xScale dtype %s has no kernel (the operator's table: FLOAT)", op,
                       mf_dtype_name(t[T_XS]->dtype));
    p.M = t[T_X]->dims[0], p.K = t[T_X]->dims[1], p.N = t[T_WS]->dims[1], p.E = t[T_W]->dims[0];
    p.L = t[T_GL]->dims[0];
    p.ws_dtype = t[T_WS]->dtype;
    p.hp = (p.N / 2 + SG_WMAX - 1) / SG_WMAX * SG_WMAX;
    p.scratch = (int64_t)(gsq_bytes(ROWS_PER_TAKE * p.N) + gsq_bytes(3 * p.hp + ROWS_PER_TAKE * GSQ_KC +
                                                                   GSQ_KC * GSQ_NB + ROWS_PER_TAKE * GSQ_NB)) + 64;
    p.workers = mf_num_threads();
    if (p.workers < 1) p.workers = 1;
    const uint64_t ws = mf_workspace_with_slack((uint64_t)p.workers * (uint64_t)p.scratch);
    return mf_op_publish(def, t, unused, &p, sizeof p, run, ws, workspaceSize, executor);
}

/* ---- phase 2 ---- */

typedef struct gsq_ctx {
    const gsq_plan *p;
    const aclTensor *const *t;
    const int64_t *ends; /* ends[0] = 0, ends[g + 1]: group g's end (L + 1 entries) */
    char *scratch;
    const sg_routines *r;
    atomic_llong next;
} gsq_ctx;


static int8_t to_int8(float v) {
    /* Cast fp32 -> fp16 (CAST_RINT), then fp16 -> int8 (CAST_RINT), as
     * CastFp32ToInt8Template; NaN -> 0, saturated (CANN_COMPAT) */
    const float h = mf_f16_to_f32(mf_f32_to_f16(v));
    if (h != h) return 0;
    if (h >= 127.0f) return 127;
    if (h <= -128.0f) return -128;
    return (int8_t)rintf(h);
}

/* The exact int32 sums of rows [r0, r0 + nr) of group g into acc (nr x N),
 * through the BLAS's fp32 GEMM (gemm.h): int8 values are exact in fp32, and
 * over KC = 1024 terms every partial sum is an integer of magnitude at most
 * 1024 * 128 * 128 = 2^24, so each chunk's product is exact whatever order or
 * FMA the library uses; the chunks are summed in int32. x and the weight are
 * widened chunk by chunk into the worker's scratch (a: nr x kc, b: kc x NB). */
static void sums(const gsq_ctx *c, int64_t r0, int64_t nr, int64_t g, int32_t *acc, float *a, float *b, float *cb) {
    const gsq_plan *p = c->p;
    const aclTensor *x = c->t[T_X], *w = c->t[T_W];
    const int64_t N = p->N, K = p->K, xs0 = x->strides[0], xs1 = x->strides[1];
    const int8_t *xb = (const int8_t *)mf_tensor_base(x) + r0 * xs0;
    const int8_t *wg = (const int8_t *)mf_tensor_base(w) + g * w->strides[0];
    const int64_t wk = w->strides[1], wn = w->strides[2];
    memset(acc, 0, (size_t)(nr * N) * 4);
    for (int64_t k0 = 0; k0 < K; k0 += GSQ_KC) {
        const int64_t kc = K - k0 < GSQ_KC ? K - k0 : GSQ_KC;
        for (int64_t r = 0; r < nr; r++)
            for (int64_t k = 0; k < kc; k++) a[r * kc + k] = (float)xb[r * xs0 + (k0 + k) * xs1];
        for (int64_t j0 = 0; j0 < N; j0 += GSQ_NB) {
            const int64_t cw = N - j0 < GSQ_NB ? N - j0 : GSQ_NB;
            for (int64_t k = 0; k < kc; k++) {
                const int8_t *wr = wg + (k0 + k) * wk + j0 * wn;
                float *br = b + k * cw;
                if (wn == 1)
                    for (int64_t j = 0; j < cw; j++) br[j] = (float)wr[j];
                else
                    for (int64_t j = 0; j < cw; j++) br[j] = (float)wr[j * wn];
            }
            mf_sgemm(nr, cw, kc, a, kc, 1, b, cw, 1, 0.0f, cb, cw);
            for (int64_t r = 0; r < nr; r++)
                for (int64_t j = 0; j < cw; j++) acc[r * N + j0 + j] += (int32_t)cb[r * cw + j];
        }
    }
}

/* Row r of group g from its sums acc[0..N): dequant, SwiGlu, quant, stored. */
static void finish_row(const gsq_ctx *c, int64_t r, int64_t g, const int32_t *acc, float *a) {
    const gsq_plan *p = c->p;
    const aclTensor *wst = c->t[T_WS], *xst = c->t[T_XS], *out = c->t[T_OUT], *os = c->t[T_OS];
    const int64_t N = p->N, h = N / 2;
    float *b = a + p->hp, *o = b + p->hp;
    /* Cast int32 -> fp32, Muls by the row's xScale, Mul by the group's weightScale (fp32 each) */
    float xs;
    memcpy(&xs, mf_tensor_base(xst) + r * xst->strides[0] * 4, 4);
    const int64_t ses = (int64_t)mf_dtype_size(p->ws_dtype);
    const char *wsr = mf_tensor_base(wst) + g * wst->strides[0] * ses;
    const int64_t wss = wst->strides[1] * ses;
    for (int64_t j = 0; j < N; j++) {
        float s;
        mf_widen_f32(wsr + j * wss, 0, p->ws_dtype, 1, &s, 1);
        const float v = ((float)acc[j] * xs) * s;
        if (j < h) a[j] = v;
        else b[j - h] = v;
    }
    for (int64_t j = h; j < p->hp; j++) a[j] = 0.0f, b[j] = 0.0f;
    /* SwiGLU(dst, src0 = second half, src1 = first half): swish(first) * second */
    c->r->fwd(a, b, o, p->hp);
    /* Abs, ReduceMax (a NaN never wins here), / 127, its reciprocal, Muls */
    float m = 0.0f;
    for (int64_t j = 0; j < h; j++) {
        const float v = fabsf(o[j]);
        if (v > m) m = v;
    }
    const float qs = m / 127.0f, inv = 1.0f / qs;
    memcpy(mf_tensor_base(os) + r * os->strides[0] * 4, &qs, 4);
    int8_t *orow = (int8_t *)mf_tensor_base(out) + r * out->strides[0];
    const int64_t oc = out->strides[1];
    for (int64_t j = 0; j < h; j++) orow[j * oc] = to_int8(o[j] * inv);
}

static void worker(void *ctxp, int64_t s0, int64_t s1) {
    gsq_ctx *c = ctxp;
    const gsq_plan *p = c->p;
    const int64_t total = c->ends[p->L];
    for (int64_t s = s0; s < s1; s++) {
        char *sc = mf_align64(c->scratch + s * p->scratch);
        int32_t *acc = (int32_t *)(void *)sc;
        float *f = (float *)(void *)(sc + gsq_bytes(ROWS_PER_TAKE * p->N));
        float *a = f + 3 * p->hp, *b = a + ROWS_PER_TAKE * GSQ_KC, *cb = b + GSQ_KC * GSQ_NB;
        for (;;) {
            const int64_t r0 = (int64_t)atomic_fetch_add(&c->next, ROWS_PER_TAKE);
            if (r0 >= total) break;
            const int64_t r1 = r0 + ROWS_PER_TAKE < total ? r0 + ROWS_PER_TAKE : total;
            int64_t g = 0;
            for (int64_t lo = r0; lo < r1;) { /* the rows of each group in [r0, r1) */
                while (c->ends[g + 1] <= lo) g++;
                const int64_t hi = c->ends[g + 1] < r1 ? c->ends[g + 1] : r1;
                sums(c, lo, hi - lo, g, acc, a, b, cb);
                for (int64_t r = lo; r < hi; r++) finish_row(c, r, g, acc + (r - lo) * p->N, f);
                lo = hi;
            }
        }
    }
}

static const sg_routines *routines(void) {
#if defined(MOEFR_X86_KERNELS)
    if (mf_kernels() == &mf_ukernels_avx512bf16) return &mf_swiglu_avx512bf16;
    if (strcmp(mf_kernels()->isa, "avx512") == 0) return &mf_swiglu_avx512;
    if (strcmp(mf_kernels()->isa, "avx2") == 0) return &mf_swiglu_avx2;
#endif
    return &mf_swiglu_generic;
}

static aclnnStatus run(const void *plan, const aclTensor *const *t, void *workspace) {
    const gsq_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    /* the group list, checked before anything is written: CANN's kernel reads
     * rows up to its last value and walks the groups forward (not checked there) */
    int64_t ends[1024 + 1];
    if (p->L > 1024) return mf_fail(INVALID, "%s: groupList has %lld entries (moefr: at most 1024)", p->op, (long long)p->L);
    const aclTensor *gl = t[T_GL];
    const char *gb = mf_tensor_base(gl);
    ends[0] = 0;
    for (int64_t i = 0; i < p->L; i++) {
        int64_t v;
        memcpy(&v, gb + i * gl->strides[0] * 8, 8);
        if (v < ends[i])
            return mf_fail(INVALID, "%s: groupList[%lld] = %lld is below %s (cumulative row ends must not decrease)",
                           p->op, (long long)i, (long long)v, i ? "the entry before it" : "0");
        if (v > p->M)
            return mf_fail(INVALID, "%s: groupList[%lld] = %lld is beyond x's %lld rows", p->op, (long long)i,
                           (long long)v, (long long)p->M);
        ends[i + 1] = v;
    }
    gsq_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p, c.t = t, c.ends = ends, c.r = routines();
    c.scratch = mf_align64(workspace);
    atomic_init(&c.next, 0);
    const int64_t total = ends[p->L];
    if (total == 0) return ACLNN_SUCCESS;
    const int64_t takes = (total + ROWS_PER_TAKE - 1) / ROWS_PER_TAKE;
    const int64_t slots = takes < p->workers ? takes : p->workers;
    mf_parallel_for(slots, worker, &c, 2);
    return ACLNN_SUCCESS;
}

/* ---- the public entries ---- */

aclnnStatus aclnnGroupedMatmulSwigluQuantGetWorkspaceSize(const aclTensor *x, const aclTensor *weight,
                                                          const aclTensor *bias, const aclTensor *offset,
                                                          const aclTensor *weightScale, const aclTensor *xScale,
                                                          const aclTensor *groupList, aclTensor *output,
                                                          aclTensor *outputScale, aclTensor *outputOffset,
                                                          uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[T_N] = {x, weight, bias, offset, weightScale, xScale, groupList, output, outputScale,
                               outputOffset};
    return plan_common(&DEF, t, workspaceSize, executor);
}

aclnnStatus aclnnGroupedMatmulSwigluQuant(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GROUPED_MATMUL_SWIGLU_QUANT, DEF.name, workspace, workspaceSize,
                               stream);
}

/* CANN's WeightNZ entry: weight NULL is 161001 first, then its storage must
 * have 5 dims (161002) and is taken as FRACTAL_NZ. moefr: an NZ or 5-D weight
 * is refused (not yet read); an ND 3-D weight takes the ND path (CANN_COMPAT). */
aclnnStatus aclnnGroupedMatmulSwigluQuantWeightNZGetWorkspaceSize(
    const aclTensor *x, const aclTensor *weight, const aclTensor *bias, const aclTensor *offset,
    const aclTensor *weightScale, const aclTensor *xScale, const aclTensor *groupList, aclTensor *output,
    aclTensor *outputScale, aclTensor *outputOffset, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *op = DEF_NZ.name;
    if (workspaceSize == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", op);
    if (executor == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", op);
    if (weight == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: weight is NULL", op);
    if (!mf_tensor_live(weight))
        return mf_fail(INVALID, "%s: weight (%p) is not a live aclTensor", op, (const void *)weight);
    if (weight->storage_ndim == 5 || weight->ndim == 5 || is_nz(weight))
        return mf_fail(INVALID, "%s: a FRACTAL_NZ weight (5-D storage) is not yet read by moefr: pass the ND (E, K, N) "
                                "weight", op);
    const aclTensor *t[T_N] = {x, weight, bias, offset, weightScale, xScale, groupList, output, outputScale,
                               outputOffset};
    return plan_common(&DEF_NZ, t, workspaceSize, executor);
}

aclnnStatus aclnnGroupedMatmulSwigluQuantWeightNZ(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GROUPED_MATMUL_SWIGLU_QUANT_WEIGHT_NZ, DEF_NZ.name, workspace,
                               workspaceSize, stream);
}

/* ---- registry entries (opdef.h) ---- */
static aclnnStatus gws(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    (void)a;
    return aclnnGroupedMatmulSwigluQuantGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], (aclTensor *)t[7],
                                                         (aclTensor *)t[8], (aclTensor *)t[9], ws, e);
}
static aclnnStatus gws_nz(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    (void)a;
    return aclnnGroupedMatmulSwigluQuantWeightNZGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6],
                                                                 (aclTensor *)t[7], (aclTensor *)t[8],
                                                                 (aclTensor *)t[9], ws, e);
}
const mf_op_entry mf_entry_grouped_matmul_swiglu_quant = {&DEF, NULL, 0, gws, aclnnGroupedMatmulSwigluQuant};
const mf_op_entry mf_entry_grouped_matmul_swiglu_quant_weight_nz = {&DEF_NZ, NULL, 0, gws_nz,
                                                                    aclnnGroupedMatmulSwigluQuantWeightNZ};
