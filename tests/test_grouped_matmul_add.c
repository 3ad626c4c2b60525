/* test_grouped_matmul_add.c - aclnnGroupedMatmulAdd and aclnnGroupedMatmulAddV2
 * against a float64 oracle written from the formula alone (SPEC 11): for
 * group i over the K rows [k0, k1), y[i][m][n] += sum_k x[k][m] * w[k][n].
 * Fresh random x, weight and a random initial y (so a result that overwrote
 * instead of adding fails), FLOAT16 and BF16, group lists with empty groups
 * (those y[i] must keep their bits), totals short of K, M and N that are no
 * tile width's multiple, cumulative and count lists, x as a strided view,
 * y contiguous, padded or (A2/A3 rules) 2-D; the phase-1 rules with CANN's
 * codes and the phase-2 group-list refusals, each leaving y's bytes as they
 * were; the executor re-pointed with aclSetOutputTensorAddr. --hash prints
 * the bits of fixed problems (tests/gating_bits.cmake compares 1 and 3 threads).
 *
 * The bound: fp16/bf16 products are exact in fp32, so the fp32 sum of kg of
 * them plus y stays within (kg + 2) * 2^-24 * (sum |x||w| + |y|) of the exact
 * value, whatever order the BLAS sums in. */
#include <math.h>

#include "aclnnop/aclnn_grouped_matmul_add.h"
#include "aclnnop/aclnn_grouped_matmul_add_v2.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static bool g_a2, g_hash;
static long long g_elems;
static uint64_t g_digest;

/* A 16-bit matrix of r x c values (double copies in v) stored as a tensor:
 * layout 0 contiguous, 1 padded rows, 2 transposed storage (column-major). */
typedef struct mat {
    int dt;
    int64_t r, c;
    double *v;
    tu_owned o;
} mat;

static mat mat_new(int dt, int64_t r, int64_t c, int layout) {
    mat m = {dt, r, c, NULL, {NULL, NULL}};
    const int64_t n = r * c;
    m.v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    unsigned char *dense = malloc((size_t)(n ? n : 1) * 2);
    for (int64_t i = 0; i < n; i++) {
        tu_put(dt, dense, i, tu_chance(3) ? 0.0 : (tu_unit() * 2 - 1) * 2);
        m.v[i] = fr_decode(dt, dense, i);
    }
    const int64_t dims[2] = {r, c};
    int64_t st[2] = {c > 0 ? c : 1, 1}, off = 0;
    if (layout == 1) st[0] = c + 3, off = 2;
    if (layout == 2) st[0] = 1, st[1] = r > 0 ? r : 1, off = 1;
    m.o = tu_strided(dense, 2, dims, st, off, n ? tu_span(2, dims, st, off) : off + 1, (aclDataType)dt, 2, 0x5A, 0);
    free(dense);
    return m;
}
static void mat_free(mat *m) {
    free(m->v);
    tu_free(&m->o);
}

/* y: E*M*N fp32 values in a storage of its own; layout 0 contiguous (E, M, N),
 * 1 padded rows (E, M, N), 2 contiguous 2-D (E*M, N). */
typedef struct ybuf {
    int64_t E, M, N, st[3], span;
    float *store;
    aclTensor *t;
} ybuf;
static ybuf y_new(int64_t E, int64_t M, int64_t N, int layout) {
    ybuf y = {E, M, N, {M * N, N, 1}, 0, NULL, NULL};
    if (layout == 1) y.st[1] = N + 5, y.st[0] = M * (N + 5) + 7;
    y.span = E * M * N != 0 ? tu_span(3, (int64_t[]){E, M, N}, y.st, 0) : 1;
    y.store = malloc(sizeof(float) * (size_t)y.span + 64);
    for (int64_t i = 0; i < y.span; i++) y.store[i] = (float)((tu_unit() * 2 - 1) * 8);
    const int64_t d3[3] = {E, M, N}, d2[2] = {E * M, N}, sd[1] = {y.span};
    y.t = layout == 2 ? aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, sd, 1, y.store)
                      : aclCreateTensor(d3, 3, ACL_FLOAT, y.st, 0, ACL_FORMAT_ND, sd, 1, y.store);
    return y;
}
static float *y_at(const ybuf *y, int64_t e, int64_t m, int64_t n) {
    return &y->store[e * y->st[0] + m * y->st[1] + n * y->st[2]];
}
static void y_free(ybuf *y) {
    tu_destroy(y->t);
    free(y->store);
}

static aclTensor *i64_tensor(const int64_t *v, int64_t n, int64_t **keep) {
    *keep = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    memcpy(*keep, v, sizeof(int64_t) * (size_t)n);
    return tu_mk(1, n, 1, 1, ACL_INT64, *keep);
}

/* Both phases; ver 1 or 2. *p1 receives phase 1's status. */
static aclnnStatus run(int ver, const aclTensor *x, const aclTensor *w, const aclTensor *gl, aclTensor *y, bool tx,
                       bool tw, int64_t gt, int64_t glt, aclnnStatus *p1) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = ver == 1 ? aclnnGroupedMatmulAddGetWorkspaceSize(x, w, gl, y, tx, tw, gt, &ws, &e)
                              : aclnnGroupedMatmulAddV2GetWorkspaceSize(x, w, gl, y, tx, tw, gt, glt, &ws, &e);
    if (p1) *p1 = rc;
    if (rc != ACLNN_SUCCESS) return rc;
    void *wsp = ws ? malloc(ws) : NULL;
    rc = ver == 1 ? aclnnGroupedMatmulAdd(wsp, ws, e, NULL) : aclnnGroupedMatmulAddV2(wsp, ws, e, NULL);
    free(wsp);
    return rc;
}

static void digest(const ybuf *y) {
    for (int64_t i = 0; i < y->span; i++) {
        uint32_t b;
        memcpy(&b, &y->store[i], 4);
        g_digest = (g_digest ^ b) * 0x100000001B3ull;
    }
}

/* y0 (a copy of y's storage before the call) plus the oracle, against y. */
static void compare(const char *what, const mat *x, const mat *w, const int64_t *ends, const ybuf *y, const float *y0) {
    const int64_t E = y->E, M = y->M, N = y->N;
    int bad = 0;
    for (int64_t e = 0; e < E; e++) {
        const int64_t k0 = ends[e], k1 = ends[e + 1];
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                const int64_t at = y_at(y, e, m, n) - y->store;
                const double base = y0[at];
                double s = base, a = fabs(base);
                for (int64_t k = k0; k < k1; k++) {
                    const double p = x->v[k * M + m] * w->v[k * N + n];
                    s += p, a += fabs(p);
                }
                const double got = *y_at(y, e, m, n);
                const bool ok = k1 == k0 ? memcmp(&y->store[at], &y0[at], 4) == 0
                                         : fabs(got - s) <= (double)(k1 - k0 + 2) * 0x1p-24 * a + 0x1p-140;
                if (!ok && bad++ < 3)
                    CHECK(0, "%s: y[%lld][%lld][%lld] = %.9g, want %.9g (group K %lld, y0 %.9g)", what, (long long)e,
                          (long long)m, (long long)n, got, s, (long long)(k1 - k0), base);
                g_elems++;
            }
    }
    CHECK(bad == 0, "%s: %d elements off", what, bad);
    /* padding between y's elements is never written */
    int pad = 0;
    bool *mark = calloc((size_t)y->span, 1);
    for (int64_t e = 0; e < E; e++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) mark[y_at(y, e, m, n) - y->store] = true;
    for (int64_t i = 0; i < y->span; i++) pad += !mark[i] && memcmp(&y->store[i], &y0[i], 4) != 0;
    free(mark);
    CHECK(pad == 0, "%s: %d padding floats of y written", what, pad);
}

/* Group sizes summing to at most K, some empty; the list in cumulative (glt 0) or count (1) form. */
static void groups(int64_t E, int64_t K, int64_t *ends, int64_t *list, int glt, bool full) {
    ends[0] = 0;
    for (int64_t e = 0; e < E; e++) {
        const int64_t left = K - ends[e];
        const int64_t most = 2 * K / E + 1;
        int64_t g = tu_chance(25) ? 0 : tu_int(0, left < most ? left : most);
        if (e == E - 1 && full) g = left;
        ends[e + 1] = ends[e] + g;
        list[e] = glt == 0 ? ends[e + 1] : g;
    }
}

static void one_case(int dt, int ver, int64_t E, int64_t K, int64_t M, int64_t N, int xl, int wl, int yl) {
    if (!g_a2 && yl == 2) yl = 0; /* Ascend 950: yRef must be 3-D */
    const int glt = ver == 2 && !g_a2 ? (int)tu_below(2) : 0;
    mat x = mat_new(dt, K, M, xl), w = mat_new(dt, K, N, wl);
    ybuf y = y_new(E, M, N, yl);
    int64_t *ends = malloc(sizeof(int64_t) * (size_t)(E + 1)), *list = malloc(sizeof(int64_t) * (size_t)(E ? E : 1));
    groups(E, K, ends, list, glt, tu_chance(50));
    int64_t *keep;
    aclTensor *gl = i64_tensor(list, E, &keep);
    float *y0 = malloc(sizeof(float) * (size_t)y.span);
    memcpy(y0, y.store, sizeof(float) * (size_t)y.span);
    char what[160];
    snprintf(what, sizeof what, "V%d %s E %lld K %lld M %lld N %lld layouts x%d w%d y%d glt %d", ver,
             dt == ACL_BF16 ? "bf16" : "fp16", (long long)E, (long long)K, (long long)M, (long long)N, xl, wl, yl, glt);
    aclnnStatus p1 = 0, rc = run(ver, x.o.t, w.o.t, gl, y.t, true, false, 2, glt, &p1);
    CHECK(rc == ACLNN_SUCCESS, "%s: status %d (phase 1 %d): %s", what, (int)rc, (int)p1, tu_msg());
    if (rc == ACLNN_SUCCESS) compare(what, &x, &w, ends, &y, y0);
    if (g_hash) digest(&y);
    g_cases++;
    free(y0), free(ends), free(list), free(keep);
    tu_destroy(gl);
    mat_free(&x), mat_free(&w), y_free(&y);
}

/* Refusals: the status, a one-line message, y's bytes as they were. */
static void refuse(const char *what, aclnnStatus got, aclnnStatus want, const ybuf *y, const float *y0) {
    CHECK(got == want, "%s: status %d, want %d (%s)", what, (int)got, (int)want, tu_msg());
    CHECK(tu_msg_has(NULL), "%s: no one-line message", what);
    CHECK(memcmp(y->store, y0, sizeof(float) * (size_t)y->span) == 0, "%s: y written", what);
}

static void validation(void) {
    const int64_t E = 3, K = 40, M = 9, N = 11;
    mat x = mat_new(ACL_FLOAT16, K, M, 0), w = mat_new(ACL_FLOAT16, K, N, 0), xb = mat_new(ACL_BF16, K, M, 0);
    ybuf y = y_new(E, M, N, 0);
    float *y0 = malloc(sizeof(float) * (size_t)y.span);
    memcpy(y0, y.store, sizeof(float) * (size_t)y.span);
    const int64_t cum[3] = {10, 25, 40};
    int64_t *k1, *k2, *k3, *k4, *k5;
    aclTensor *gl = i64_tensor(cum, 3, &k1);
    const int PI = ACLNN_ERR_PARAM_INVALID, PN = ACLNN_ERR_PARAM_NULLPTR, TE = ACLNN_ERR_INNER_TILING_ERROR;
    uint64_t ws;
    aclOpExecutor *e;
    /* 1. null checks: PARAM_INVALID (CheckParams) */
    refuse("NULL x", run(1, NULL, w.o.t, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    refuse("NULL weight", run(2, x.o.t, NULL, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    refuse("NULL groupList", run(1, x.o.t, w.o.t, NULL, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    refuse("NULL yRef", run(2, x.o.t, w.o.t, gl, NULL, true, false, 2, 0, NULL), PI, &y, y0);
    refuse("groupListType 2", run(2, x.o.t, w.o.t, gl, y.t, true, false, 2, 2, NULL), PI, &y, y0);
    refuse("groupListType -1", run(2, x.o.t, w.o.t, gl, y.t, true, false, 2, -1, NULL), PI, &y, y0);
    refuse("NULL workspaceSize", aclnnGroupedMatmulAddGetWorkspaceSize(x.o.t, w.o.t, gl, y.t, true, false, 2, NULL, &e),
           PN, &y, y0);
    refuse("NULL executor", aclnnGroupedMatmulAddV2GetWorkspaceSize(x.o.t, w.o.t, gl, y.t, true, false, 2, 0, &ws, NULL),
           PN, &y, y0);
    /* 2. formats */
    aclTensor *xnz = aclCreateTensor((int64_t[]){K, M}, 2, ACL_FLOAT16, NULL, 0, ACL_FORMAT_FRACTAL_NZ,
                                     (int64_t[]){K, M}, 2, x.o.store);
    refuse("x NZ", run(1, xnz, w.o.t, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    aclTensor *yncl = aclCreateTensor((int64_t[]){E, M, N}, 3, ACL_FLOAT, NULL, 0, ACL_FORMAT_NCL,
                                      (int64_t[]){E, M, N}, 3, y.store);
    /* 3. shapes */
    aclTensor *x3 = tu_mk(3, 1, K, M, ACL_FLOAT16, x.o.store), *w1 = tu_mk(1, K, 1, 1, ACL_FLOAT16, w.o.store);
    refuse("x 3-D", run(1, x3, w.o.t, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    refuse("weight 1-D", run(1, x.o.t, w1, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    aclTensor *gl2 = tu_mk(2, 3, 1, 1, ACL_INT64, k1);
    refuse("groupList 2-D", run(1, x.o.t, w.o.t, gl2, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    aclTensor *xm0 = tu_mk(2, K, 0, 1, ACL_FLOAT16, x.o.store);
    refuse("M = 0", run(1, xm0, w.o.t, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    aclTensor *wk = tu_mk(2, K - 1, N, 1, ACL_FLOAT16, w.o.store);
    refuse("weight K", run(2, x.o.t, wk, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    aclTensor *y2 = tu_mk(2, E * M, N, 1, ACL_FLOAT, y.store), *ye = tu_mk(3, E - 1, M, N, ACL_FLOAT, y.store);
    aclTensor *ym = tu_mk(3, E, M - 1, N, ACL_FLOAT, y.store);
    refuse("yRef dim 0", run(1, x.o.t, w.o.t, gl, ye, true, false, 2, 0, NULL), PI, &y, y0);
    refuse("yRef (E, M-1, N) (moefr)", run(1, x.o.t, w.o.t, gl, ym, true, false, 2, 0, NULL), PI, &y, y0);
    if (!g_a2) refuse("yRef 2-D (Ascend 950)", run(1, x.o.t, w.o.t, gl, y2, true, false, 2, 0, NULL), PI, &y, y0);
    /* 4. dtypes */
    refuse("x bf16, weight fp16", run(1, xb.o.t, w.o.t, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    float *fbuf = calloc((size_t)(K * (M > N ? M : N)), sizeof(float));
    aclTensor *xf = tu_mk(2, K, M, 1, ACL_FLOAT, fbuf), *wf = tu_mk(2, K, N, 1, ACL_FLOAT, fbuf);
    refuse("x, weight FLOAT", run(1, xf, wf, gl, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    aclTensor *yh = tu_mk(3, E, M, N, ACL_FLOAT16, y.store), *g32 = tu_mk(1, 3, 1, 1, ACL_INT32, k1);
    refuse("yRef FLOAT16", run(1, x.o.t, w.o.t, gl, yh, true, false, 2, 0, NULL), PI, &y, y0);
    refuse("groupList INT32", run(2, x.o.t, w.o.t, g32, y.t, true, false, 2, 0, NULL), PI, &y, y0);
    /* a yRef whose elements share memory (moefr) */
    aclTensor *yo = aclCreateTensor((int64_t[]){E, M, N}, 3, ACL_FLOAT, (int64_t[]){M * N, 0, 1}, 0, ACL_FORMAT_ND,
                                    (int64_t[]){E * M * N}, 1, y.store);
    refuse("yRef overlapping", run(1, x.o.t, w.o.t, gl, yo, true, false, 2, 0, NULL), PI, &y, y0);
    /* the Ascend 950 tiling; A2/A3 ignores the attributes */
    if (!g_a2) {
        refuse("transposeX false", run(1, x.o.t, w.o.t, gl, y.t, false, false, 2, 0, NULL), TE, &y, y0);
        refuse("transposeWeight true", run(2, x.o.t, w.o.t, gl, y.t, true, true, 2, 0, NULL), TE, &y, y0);
        refuse("groupType 0", run(1, x.o.t, w.o.t, gl, y.t, true, false, 0, 0, NULL), TE, &y, y0);
        const int64_t E2 = 1025;
        ybuf big = y_new(E2, 1, 1, 0);
        float *b0 = malloc(sizeof(float) * (size_t)big.span);
        memcpy(b0, big.store, sizeof(float) * (size_t)big.span);
        int64_t *zeros = calloc((size_t)E2, sizeof(int64_t)), *kz;
        aclTensor *glz = i64_tensor(zeros, E2, &kz);
        aclTensor *x1 = tu_mk(2, K, 1, 1, ACL_FLOAT16, x.o.store), *wn = tu_mk(2, K, 1, 1, ACL_FLOAT16, w.o.store);
        refuse("1025 groups", run(1, x1, wn, glz, big.t, true, false, 2, 0, NULL), TE, &big, b0);
        tu_destroy(x1), tu_destroy(wn), tu_destroy(glz);
        free(zeros), free(kz), free(b0);
        y_free(&big);
    }
    /* phase 2: the group list's values */
    const int64_t down[3] = {10, 5, 40}, past[3] = {10, 25, 41}, neg[3] = {10, -1, 5}, over[3] = {20, 20, 1};
    aclTensor *gd = i64_tensor(down, 3, &k2), *gp = i64_tensor(past, 3, &k3), *gn = i64_tensor(neg, 3, &k4);
    aclTensor *go = i64_tensor(over, 3, &k5);
    aclnnStatus p1;
    refuse("descending ends", run(1, x.o.t, w.o.t, gd, y.t, true, false, 2, 0, &p1), PI, &y, y0);
    CHECK(p1 == ACLNN_SUCCESS, "descending ends: phase 1 gave %d", (int)p1);
    refuse("ends past K", run(2, x.o.t, w.o.t, gp, y.t, true, false, 2, 0, &p1), PI, &y, y0);
    if (!g_a2) {
        refuse("negative count", run(2, x.o.t, w.o.t, gn, y.t, true, false, 2, 1, &p1), PI, &y, y0);
        refuse("counts past K", run(2, x.o.t, w.o.t, go, y.t, true, false, 2, 1, &p1), PI, &y, y0);
    }
    /* NCL yRef is accepted (CheckFormat) and is the same memory */
    CHECK(run(1, x.o.t, w.o.t, gl, yncl, true, false, 2, 0, NULL) == ACLNN_SUCCESS, "NCL yRef: %s", tu_msg());
    const int64_t ends[4] = {0, 10, 25, 40};
    compare("NCL yRef", &x, &w, ends, &y, y0);
    memcpy(y0, y.store, sizeof(float) * (size_t)y.span);
    if (g_a2) { /* A2/A3: the attributes are ignored, a 2-D yRef of E*M*N floats works, counts read as ends */
        CHECK(run(2, x.o.t, w.o.t, gl, y2, false, true, 0, 1, NULL) == ACLNN_SUCCESS, "A2 attributes: %s", tu_msg());
        compare("A2: attributes ignored, 2-D yRef, list cumulative", &x, &w, ends, &y, y0);
        memcpy(y0, y.store, sizeof(float) * (size_t)y.span);
    }
    /* empty outputs: success with workspace 0, nothing read */
    {
        aclTensor *w0n = tu_mk(2, K, 0, 1, ACL_FLOAT16, w.o.store), *y0n = tu_mk(3, E, M, 0, ACL_FLOAT, y.store);
        ws = 7, e = NULL;
        CHECK(aclnnGroupedMatmulAddGetWorkspaceSize(x.o.t, w0n, gl, y0n, true, false, 2, &ws, &e) == ACLNN_SUCCESS &&
                  ws == 0, "N = 0: %s", tu_msg());
        CHECK(aclnnGroupedMatmulAdd(NULL, 0, e, NULL) == ACLNN_SUCCESS, "N = 0 phase 2: %s", tu_msg());
        tu_destroy(w0n), tu_destroy(y0n);
    }
    /* a repeatable executor re-pointed at another y */
    {
        ybuf yb = y_new(E, M, N, 0);
        float *yb0 = malloc(sizeof(float) * (size_t)yb.span);
        memcpy(yb0, yb.store, sizeof(float) * (size_t)yb.span);
        ws = 0, e = NULL;
        CHECK(aclnnGroupedMatmulAddGetWorkspaceSize(x.o.t, w.o.t, gl, y.t, true, false, 2, &ws, &e) == ACLNN_SUCCESS,
              "repeat phase 1: %s", tu_msg());
        CHECK(aclSetAclOpExecutorRepeatable(e) == ACLNN_SUCCESS, "repeatable");
        void *wsp = ws ? malloc(ws) : NULL;
        CHECK(aclSetOutputTensorAddr(e, 0, y.t, yb.store) == ACLNN_SUCCESS, "set output: %s", tu_msg());
        CHECK(aclnnGroupedMatmulAdd(wsp, ws, e, NULL) == ACLNN_SUCCESS, "repeat run: %s", tu_msg());
        CHECK(memcmp(y.store, y0, sizeof(float) * (size_t)y.span) == 0, "the old y was written");
        compare("re-pointed yRef", &x, &w, ends, &yb, yb0);
        /* yRef is also input 3: moving it there moves the tensor the run adds into */
        ybuf yc = y_new(E, M, N, 0);
        float *yc0 = malloc(sizeof(float) * (size_t)yc.span);
        memcpy(yc0, yc.store, sizeof(float) * (size_t)yc.span);
        memcpy(yb0, yb.store, sizeof(float) * (size_t)yb.span);
        CHECK(aclSetInputTensorAddr(e, 3, y.t, yc.store) == ACLNN_SUCCESS, "set input 3: %s", tu_msg());
        CHECK(aclnnGroupedMatmulAdd(wsp, ws, e, NULL) == ACLNN_SUCCESS, "repeat run 2: %s", tu_msg());
        CHECK(memcmp(yb.store, yb0, sizeof(float) * (size_t)yb.span) == 0, "the output-slot y was written");
        compare("yRef moved as input 3", &x, &w, ends, &yc, yc0);
        free(yc0);
        y_free(&yc);
        aclDestroyAclOpExecutor(e);
        aclSetRawTensorAddr(y.t, y.store);
        free(wsp), free(yb0);
        y_free(&yb);
    }
    g_cases++;
    aclTensor *junk[] = {xnz, yncl, x3, w1, gl2, xm0, wk, y2, ye, ym, xf, wf, yh, g32, yo, gl, gd, gp, gn, go};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) tu_destroy(junk[i]);
    free(k1), free(k2), free(k3), free(k4), free(k5), free(y0), free(fbuf);
    mat_free(&x), mat_free(&w), mat_free(&xb), y_free(&y);
}

/* CANN's example (docs/aclnnGroupedMatmulAddV2.md): x (512, 256), weight (512, 256), y (2, 256, 256),
 * groupList [256, 512] cumulative, bf16. */
static void cann_example(void) {
    mat x = mat_new(ACL_BF16, 512, 256, 0), w = mat_new(ACL_BF16, 512, 256, 0);
    ybuf y = y_new(2, 256, 256, 0);
    float *y0 = malloc(sizeof(float) * (size_t)y.span);
    memcpy(y0, y.store, sizeof(float) * (size_t)y.span);
    const int64_t list[2] = {256, 512}, ends[3] = {0, 256, 512};
    int64_t *keep;
    aclTensor *gl = i64_tensor(list, 2, &keep);
    CHECK(run(2, x.o.t, w.o.t, gl, y.t, true, false, 2, 0, NULL) == ACLNN_SUCCESS, "example: %s", tu_msg());
    compare("CANN example", &x, &w, ends, &y, y0);
    g_cases++;
    tu_destroy(gl), free(keep), free(y0);
    mat_free(&x), mat_free(&w), y_free(&y);
}

int main(int argc, char **argv) {
    g_hash = argc > 1 && strcmp(argv[1], "--hash") == 0;
    const char *soc = getenv("MOEFR_SOC");
    g_a2 = soc && strcmp(soc, "ascend910b") == 0;
    if (g_hash) {
        tu_state = 0x9E3779B97F4A7C15ull;
    } else {
        tu_seed("test_grouped_matmul_add");
        validation();
        cann_example();
    }
    for (int i = 0; i < (g_hash ? 8 : 40); i++) {
        const int dt = i % 2 ? ACL_BF16 : ACL_FLOAT16, ver = 1 + (i / 2) % 2;
        const int64_t E = tu_int(1, 6), K = tu_int(0, 3) == 0 ? tu_int(0, 9) : tu_int(10, 700);
        const int64_t M = tu_chance(20) ? tu_int(1, 3) : tu_int(4, 150), N = tu_chance(20) ? 1 : tu_int(2, 170);
        one_case(dt, ver, E, K, M, N, (int)tu_below(3), (int)tu_below(2), (int)tu_below(3));
        if (g_hash) printf("gmma problem %d %016llx\n", i, (unsigned long long)g_digest);
    }
    if (!g_hash) {
        /* tails past the tiles: M over 512 rows, N over 1024 columns */
        one_case(ACL_BF16, 2, 2, 300, 517, 1030, 0, 0, 0);
        one_case(ACL_FLOAT16, 1, 3, 64, 700, 9, 2, 1, 1);
        CHECK(g_elems > 100000, "only %lld output elements compared", g_elems);
        printf("test_grouped_matmul_add: %d cases, %lld output elements against the oracle, %d checks, %d failures\n",
               g_cases, g_elems, g_checks, g_fail);
    }
    return g_fail != 0;
}
