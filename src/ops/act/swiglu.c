/* swiglu.c - aclnnSwiGlu and aclnnSwiGluGrad, both phases (ops-nn
 * activation/swi_glu, swi_glu_grad; SPEC 10).
 *
 * Phase 1: the definition table (swi_glu_def.cpp, swi_glu_grad_def.cpp: one
 * dtype for every tensor, FLOAT16, FLOAT or BF16), the engine's empty-output
 * rule, then the shape rules: dim in [-rank, rank) (161002, as the docs say),
 * x.shape[dim] even (infershape) and the output shapes (561002).
 *
 * Phase 2: x is seen as rows x [A | B], rows the product of the dims before
 * dim and each half `inner` elements (dim halved times the dims after it),
 * as CANN's tiling flattens it. Work goes in units of (row, SG_CHUNK
 * elements of the half-row): gathered from any strided view and widened to
 * fp32 on the stack, computed by the block routine (swiglu_core.h), rounded
 * once and stored to the contiguous output. Element-wise and fixed in its
 * operations, so the bits depend on neither MOEFR_ISA nor the thread count. */
#include <pthread.h>

#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"
#include "ops/opdef.h"

/* the generic four-lane block routines (swiglu_avx2.c and swiglu_avx512.c
 * build the eight- and sixteen-lane ones) */
#define GT_W 4
#define SG_NAME "generic"
#define SG_TABLE mf_swiglu_generic
#include "ops/act/swiglu_core.h"

static float g_sig16[65536];
static pthread_once_t g_sig16_once = PTHREAD_ONCE_INIT;

/* Every bfloat16 pattern through the generic routines' exp and sigmoid. */
static void sig16_build(void) {
    _Alignas(64) float a[SG_B], v[SG_B], t[SG_B];
    for (int h0 = 0; h0 < 65536; h0 += SG_B) {
        for (int i = 0; i < SG_B; i++) a[i] = mf_bf16_to_f32((uint16_t)(h0 + i));
        sg_exp_block(a, v, t, SG_B);
        for (int i = 0; i < SG_B; i += GT_W) gv_store(g_sig16 + h0 + i, sg_sigmoid(gv_load(a + i), gv_load(v + i)));
    }
}

const float *mf_swiglu_sig16(void) {
    pthread_once(&g_sig16_once, sig16_build);
    return g_sig16;
}

static const char OPF[] = "aclnnSwiGlu";
static const char OPB[] = "aclnnSwiGluGrad";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define SG_SERIAL_UNITS 16 /* below this many units, one thread */

enum { F_X, F_OUT, F_NT };
static const char *const NAMES_F[F_NT] = {"x", "out"};
static const unsigned FLAGS_F[F_NT] = {MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG};
static const mf_dtcol COLS_F[] = {{ACL_FLOAT16, ACL_FLOAT16}, {ACL_FLOAT, ACL_FLOAT}, {ACL_BF16, ACL_BF16}};
static const mf_op_def DEF_F = {OPF, MF_OP_SWIGLU, 1, 1, NAMES_F, FLAGS_F, COLS_F, 3, COLS_F, 3};

enum { B_DY, B_X, B_OUT, B_NT };
static const char *const NAMES_B[B_NT] = {"yGrad", "x", "out"};
static const unsigned FLAGS_B[B_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG};
static const mf_dtcol COLS_B[] = {{ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16},
                                  {ACL_FLOAT, ACL_FLOAT, ACL_FLOAT},
                                  {ACL_BF16, ACL_BF16, ACL_BF16}};
static const mf_op_def DEF_B = {OPB, MF_OP_SWIGLU_GRAD, 2, 1, NAMES_B, FLAGS_B, COLS_B, 3, COLS_B, 3};

typedef struct sg_plan {
    bool empty, grad;
    int dim;       /* normalised */
    int64_t rows;  /* product of the dims before dim */
    int64_t inner; /* elements of one half-row */
} sg_plan;

/* ---- phase 2 ---- */

/* A tensor seen as rows x halves x inner: outer dims (before dim) and inner
 * dims (dim, halved for x, and the dims after it), strides in bytes. */
typedef struct sg_view {
    const char *base;
    int dtype, es, no, ni;
    int64_t osz[MF_MAX_DIMS], ost[MF_MAX_DIMS];
    int64_t isz[MF_MAX_DIMS], ist[MF_MAX_DIMS];
    int64_t half;  /* bytes from A to B */
    bool dense;    /* the inner dims are one contiguous run */
} sg_view;

/* h: the size of dim in the view (x: half its size; yGrad: its size). */
static sg_view sg_view_of(const aclTensor *t, int dim, int64_t h) {
    sg_view v;
    memset(&v, 0, sizeof v);
    v.base = mf_tensor_base(t);
    v.dtype = t->dtype;
    v.es = (int)mf_dtype_size(t->dtype);
    v.no = dim;
    for (int i = 0; i < dim; i++) v.osz[i] = t->dims[i], v.ost[i] = t->strides[i] * v.es;
    v.ni = t->ndim - dim;
    for (int i = dim; i < t->ndim; i++) v.isz[i - dim] = t->dims[i], v.ist[i - dim] = t->strides[i] * v.es;
    v.isz[0] = h;
    v.half = h * t->strides[dim] * v.es;
    int64_t want = v.es;
    v.dense = true;
    for (int i = v.ni - 1; i >= 0; i--) {
        if (v.isz[i] != 1 && v.ist[i] != want) v.dense = false;
        want *= v.isz[i];
    }
    return v;
}

/* Where row r's half `which` (0: A, 1: B) starts. */
static const char *sg_row(const sg_view *v, int64_t r, int which) {
    const char *p = v->base + which * v->half;
    for (int i = v->no - 1; i >= 0; i--) {
        p += (r % v->osz[i]) * v->ost[i];
        r /= v->osz[i];
    }
    return p;
}

/* Elements [c0, c0 + n) of row r's half `which`, widened to fp32 into
 * dst[0..n) and zeros up to the next multiple of SG_WMAX. */
static void sg_gather(const sg_view *v, int64_t r, int which, int64_t c0, int64_t n, float *dst) {
    const char *p = sg_row(v, r, which);
    if (v->dense) {
        mf_widen_f32(p + c0 * v->es, v->es, v->dtype, n, dst, 1);
    } else {
        int64_t idx[MF_MAX_DIMS], c = c0;
        for (int i = v->ni - 1; i >= 0; i--) {
            idx[i] = c % v->isz[i];
            c /= v->isz[i];
            p += idx[i] * v->ist[i];
        }
        for (int64_t k = 0; k < n; k++) {
            mf_widen_f32(p, 0, v->dtype, 1, &dst[k], 1);
            for (int i = v->ni - 1; i >= 0; i--) { /* odometer: next element in row-major order */
                p += v->ist[i];
                if (++idx[i] < v->isz[i]) break;
                p -= idx[i] * v->ist[i];
                idx[i] = 0;
            }
        }
    }
    for (int64_t k = n; k < ((n + SG_WMAX - 1) & ~(int64_t)(SG_WMAX - 1)); k++) dst[k] = 0.0f;
}

typedef struct sg_ctx {
    const sg_plan *p;
    sg_view x, dy;
    char *out;
    int dtype, es;
    int64_t nchunks;
    bool direct; /* FLOAT or BF16, every view dense: whole vectors computed in place */
    bool nt;     /* direct, and the output past mf_nt_threshold(): streaming stores */
    const sg_routines *r; /* the kernel path's width */
    const float *sig;     /* mf_swiglu_sig16(), for BF16 */
} sg_ctx;

/* fp32 results o[0..n) rounded to the output's dtype at dst */
static void sg_put(const sg_ctx *c, char *dst, int64_t n, const float *o) {
    if (c->dtype == ACL_BF16) c->r->narrow(o, dst, n);
    else mf_narrow_f32(dst, c->es, c->dtype, n, o);
}

static void sg_units(void *ctxp, int64_t u0, int64_t u1) {
    const sg_ctx *c = ctxp;
    const sg_plan *p = c->p;
    _Alignas(64) float a[SG_CHUNK], b[SG_CHUNK], o[SG_CHUNK], g[SG_CHUNK], ob[SG_CHUNK];
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = u / c->nchunks;
        int64_t c0 = (u % c->nchunks) * SG_CHUNK;
        int64_t n = p->inner - c0 < SG_CHUNK ? p->inner - c0 : SG_CHUNK;
        char *row = c->out + r * (p->grad ? 2 : 1) * p->inner * c->es;
        if (c->direct) { /* the whole vectors straight from x (and yGrad) to out; the tail below */
            const int64_t nv = n & ~(int64_t)(c->r->w - 1), e0 = c0 * c->es;
            const char *xa = sg_row(&c->x, r, 0) + e0, *xb = sg_row(&c->x, r, 1) + e0;
            const char *gy = p->grad ? sg_row(&c->dy, r, 0) + e0 : NULL;
            char *oa = row + e0, *oy = oa + p->inner * c->es; /* oy: the B half's gradient */
            /* with streaming stores, the results go to the stack first and
             * leave by the kernel table's streaming copy */
            char *ta = c->nt ? (char *)o : oa, *ty = c->nt ? (char *)ob : oy;
            if (c->dtype == ACL_BF16) {
                if (!p->grad) c->r->fwd16(c->sig, xa, xb, ta, nv);
                else c->r->bwd16(c->sig, xa, xb, gy, ta, ty, nv);
            } else if (!p->grad) {
                c->r->fwd((const float *)(const void *)xa, (const float *)(const void *)xb, (float *)(void *)ta, nv);
            } else {
                c->r->bwd((const float *)(const void *)xa, (const float *)(const void *)xb,
                       (const float *)(const void *)gy, (float *)(void *)ta, (float *)(void *)ty, nv);
            }
            if (c->nt) {
                mf_kernels()->copy(oa, ta, (size_t)(nv * c->es), 1);
                if (p->grad) mf_kernels()->copy(oy, ty, (size_t)(nv * c->es), 1);
            }
            c0 += nv, n -= nv;
            if (n == 0) continue;
        }
        const int64_t np = (n + c->r->w - 1) & ~(int64_t)(c->r->w - 1);
        sg_gather(&c->x, r, 0, c0, n, a);
        sg_gather(&c->x, r, 1, c0, n, b);
        if (!p->grad) {
            c->r->fwd(a, b, o, np);
            sg_put(c, row + c0 * c->es, n, o);
        } else {
            sg_gather(&c->dy, r, 0, c0, n, g);
            c->r->bwd(a, b, g, o, ob, np);
            sg_put(c, row + c0 * c->es, n, o);
            sg_put(c, row + (p->inner + c0) * c->es, n, ob);
        }
    }
    if (c->nt) mf_kernels()->fence(); /* before the join publishes the output */
}

static aclnnStatus sg_run(const void *plan, const aclTensor *const *t, void *workspace) {
    (void)workspace;
    const sg_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *x = t[p->grad ? B_X : F_X], *out = t[p->grad ? B_OUT : F_OUT];
    sg_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.x = sg_view_of(x, p->dim, x->dims[p->dim] / 2);
    if (p->grad) c.dy = sg_view_of(t[B_DY], p->dim, t[B_DY]->dims[p->dim]);
    c.out = mf_tensor_base(out);
    c.dtype = out->dtype;
    c.es = (int)mf_dtype_size(out->dtype);
    c.nchunks = (p->inner + SG_CHUNK - 1) / SG_CHUNK;
    c.direct = (c.dtype == ACL_FLOAT || c.dtype == ACL_BF16) && c.x.dense && (!p->grad || c.dy.dense);
    c.nt = c.direct && out->numel * c.es >= mf_nt_threshold();
    c.r = &mf_swiglu_generic;
#if defined(MOEFR_X86_KERNELS) /* every width gives the same bits */
    if (mf_kernels() == &mf_ukernels_avx512bf16) c.r = &mf_swiglu_avx512bf16;
    else if (strcmp(mf_kernels()->isa, "avx512") == 0) c.r = &mf_swiglu_avx512;
    else if (strcmp(mf_kernels()->isa, "avx2") == 0) c.r = &mf_swiglu_avx2;
#endif
    if (c.direct && c.dtype == ACL_BF16) c.sig = mf_swiglu_sig16();
    mf_parallel_for(p->rows * c.nchunks, sg_units, &c, SG_SERIAL_UNITS);
    return ACLNN_SUCCESS;
}

/* ---- phase 1 ---- */

/* want: x's shape with dims[dim] scaled by num/2 (1: halved, 2: the same). */
static aclnnStatus sg_check_shape(const char *op, const char *name, const aclTensor *t, const aclTensor *x, int dim,
                                  int num) {
    bool ok = t->ndim == x->ndim;
    for (int i = 0; ok && i < x->ndim; i++) ok = t->dims[i] == (i == dim ? x->dims[i] * num / 2 : x->dims[i]);
    if (ok) return ACLNN_SUCCESS;
    char a[160], b[160];
    return mf_fail(TILING, "%s: %s shape must be x's %s with dim %d %s, got %s", op, name, mf_shape_str(x, a, sizeof a),
                   dim, num == 1 ? "halved" : "kept", mf_shape_str(t, b, sizeof b));
}

static aclnnStatus sg_plan_of(const char *op, const aclTensor *x, int64_t dim, sg_plan *pl) {
    const int64_t rank = x->ndim;
    if (dim < -rank || dim >= rank || rank == 0)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim must be in [%lld, %lld] for x of %lld dims, got %lld", op,
                       (long long)-rank, (long long)rank - 1, (long long)rank, (long long)dim);
    pl->dim = (int)(dim < 0 ? dim + rank : dim);
    if (x->dims[pl->dim] % 2 != 0)
        return mf_fail(TILING, "%s: x's size along dim %d must be even, got %lld", op, pl->dim,
                       (long long)x->dims[pl->dim]);
    pl->rows = 1;
    for (int i = 0; i < pl->dim; i++) pl->rows *= x->dims[i];
    pl->inner = x->numel / (pl->rows ? pl->rows : 1) / 2;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnSwiGluGetWorkspaceSize(const aclTensor *x, int64_t dim, const aclTensor *out,
                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[F_NT] = {x, out};
    MF_TRY(mf_op_check(&DEF_F, t, workspaceSize, executor));
    MF_TRY(mf_isa_check(OPF));
    sg_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF_F, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF_F, t, 0, &pl, sizeof pl, sg_run, 0, workspaceSize, executor);
    }
    MF_TRY(sg_plan_of(OPF, x, dim, &pl));
    MF_TRY(sg_check_shape(OPF, "out", out, x, pl.dim, 1));
    return mf_op_publish(&DEF_F, t, 0, &pl, sizeof pl, sg_run, 0, workspaceSize, executor);
}

aclnnStatus aclnnSwiGlu(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_SWIGLU, OPF, workspace, workspaceSize, stream);
}

aclnnStatus aclnnSwiGluGradGetWorkspaceSize(const aclTensor *yGrad, const aclTensor *x, int64_t dim,
                                            const aclTensor *out, uint64_t *workspaceSize,
                                            aclOpExecutor **executor) {
    const aclTensor *t[B_NT] = {yGrad, x, out};
    MF_TRY(mf_op_check(&DEF_B, t, workspaceSize, executor));
    MF_TRY(mf_isa_check(OPB));
    sg_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.grad = true;
    if (mf_op_outputs_empty(&DEF_B, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF_B, t, 0, &pl, sizeof pl, sg_run, 0, workspaceSize, executor);
    }
    MF_TRY(sg_plan_of(OPB, x, dim, &pl));
    MF_TRY(sg_check_shape(OPB, "yGrad", yGrad, x, pl.dim, 1));
    MF_TRY(sg_check_shape(OPB, "out", out, x, pl.dim, 2));
    return mf_op_publish(&DEF_B, t, 0, &pl, sizeof pl, sg_run, 0, workspaceSize, executor);
}

aclnnStatus aclnnSwiGluGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_SWIGLU_GRAD, OPB, workspace, workspaceSize, stream);
}

/* ---- registry entries (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"dim", MF_ATTR_INT64, -4, 3}};
static aclnnStatus gws_fwd(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnSwiGluGetWorkspaceSize(t[0], a[0].i, t[1], ws, e);
}
static aclnnStatus gws_bwd(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnSwiGluGradGetWorkspaceSize(t[0], t[1], a[0].i, t[2], ws, e);
}
const mf_op_entry mf_entry_swiglu = {&DEF_F, ATTRS, 1, gws_fwd, aclnnSwiGlu};
const mf_op_entry mf_entry_swiglu_grad = {&DEF_B, ATTRS, 1, gws_bwd, aclnnSwiGluGrad};
