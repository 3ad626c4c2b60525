/* test_grouped_matmul.c - aclnnGroupedMatmulV4 (and its V1/V2/V3/V5 front
 * ends) against a float64 oracle written from the formula alone (SPEC 10):
 * per group, y = x_g @ w_g + b_g summed in float64 and rounded once.
 * Random group lists (cumulative and counts) with empty groups and totals
 * short of x's rows (the rows after them must stay untouched), every split
 * mode (-1, M, K), one tensor or lists, transposed weight or x, padded rows,
 * every dtype of the table in use (run again with MOEFR_SOC=ascend910b for
 * FLOAT32), bias or not; poisoned outputs with guards; CANN's own example;
 * the phase-1 rules with their codes and phase-2 group-list errors, outputs
 * untouched. --hash prints the output bits of fixed problems, for the
 * thread-count comparison (tests/bits_same.cmake).
 *
 * The bound: fp32 accumulation of K products, whatever the order the BLAS
 * takes, stays within (K + 2) * 2^-24 * sum |x||w| (plus |bias|) of the
 * exact value; 16-bit outputs add one rounding step of their dtype. */
#include <math.h>

#include "aclnnop/aclnn_grouped_matmul.h"
#include "aclnnop/aclnn_grouped_matmul_v2.h"
#include "aclnnop/aclnn_grouped_matmul_v3.h"
#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "aclnnop/aclnn_grouped_matmul_v5.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static bool g_a2, g_hash;
static long long g_elems; /* output elements compared with the oracle */
static const char *dtname(int dt) { return dt == ACL_FLOAT ? "fp32" : dt == ACL_FLOAT16 ? "fp16" : "bf16"; }
static uint64_t g_digest;

/* ---- a matrix: values (float64, exactly the dtype's) and a tensor over its own storage ---- */
typedef struct mat {
    int dt, nd, layout;
    int64_t dims[3], st[3], span;
    double *v; /* dense row-major values */
    tu_owned o;
} mat;

static void mat_free(mat *m) {
    free(m->v);
    tu_free(&m->o);
    memset(m, 0, sizeof *m);
}

/* layout: 0 dense, 1 padded rows, 2 transposed (the last two dims' strides swapped). */
static mat mat_new(int dt, int nd, const int64_t *dims, int layout, double scale) {
    mat m;
    memset(&m, 0, sizeof m);
    m.dt = dt, m.nd = nd, m.layout = layout;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) m.dims[d] = dims[d], n *= dims[d];
    m.v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    const size_t es = fr_size(dt);
    unsigned char *dense = malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i++) {
        tu_put(dt, dense, i, (tu_unit() * 2 - 1) * scale);
        m.v[i] = fr_decode(dt, dense, i);
    }
    int64_t st[3], s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= dims[d] > 0 ? dims[d] : 1;
        if (layout == 1 && d == nd - 1) s += 3;
    }
    if (layout == 2 && nd >= 2) { /* memory (..., last, second-last) */
        st[nd - 2] = 1;
        st[nd - 1] = dims[nd - 2] > 0 ? dims[nd - 2] : 1;
        if (nd == 3) st[0] = dims[1] * dims[2];
    }
    const int64_t span = n ? tu_span(nd, dims, st, 0) : 1;
    memcpy(m.st, st, sizeof st);
    m.span = span;
    m.o = tu_strided(dense, nd, dims, st, 0, span, (aclDataType)dt, es, 0x5A, 0);
    free(dense);
    return m;
}

/* An output: poisoned contiguous storage with a guard. */
typedef struct outm {
    int dt, nd;
    int64_t dims[3], n;
    unsigned char *buf;
    aclTensor *t;
} outm;
static outm out_new(int dt, int nd, const int64_t *dims) {
    outm o;
    memset(&o, 0, sizeof o);
    o.dt = dt, o.nd = nd, o.n = 1;
    for (int d = 0; d < nd; d++) o.dims[d] = dims[d], o.n *= dims[d];
    o.buf = tu_poisoned((size_t)o.n * fr_size(dt));
    o.t = tu_tensor(dims, nd, (aclDataType)dt, o.buf);
    return o;
}
static void out_free(outm *o) {
    tu_destroy(o->t);
    free(o->buf);
}


/* A list owns its tensors (aclDestroyTensorList destroys them), so lists get
 * descriptors of their own over the matrices' storage. */
static aclTensorList *list_of(aclTensor *const *t, int n) { return aclCreateTensorList((const aclTensor *const *)t, (uint64_t)n); }
static aclTensor *dupm(const mat *m) {
    const int64_t sd[1] = {m->span};
    return aclCreateTensor(m->dims, (uint64_t)m->nd, (aclDataType)m->dt, m->st, 0, ACL_FORMAT_ND, sd, 1, m->o.store);
}
static aclTensor *dupo(const outm *o) { return tu_tensor(o->dims, o->nd, (aclDataType)o->dt, o->buf); }
static aclTensorList *list1(aclTensor *t) { return aclCreateTensorList((const aclTensor *const *)&t, 1); }

static aclTensor *i64_tensor(const int64_t *v, int64_t n, int64_t **keep) {
    *keep = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    memcpy(*keep, v, sizeof(int64_t) * (size_t)n);
    return tu_mk(1, n, 1, 1, ACL_INT64, *keep);
}

static aclnnStatus run_v4(aclTensorList *x, aclTensorList *w, aclTensorList *b, aclTensor *gl, int64_t split,
                          int64_t gt, int64_t glt, aclTensorList *y) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(x, w, b, NULL, NULL, NULL, NULL, NULL, gl, NULL, NULL, NULL,
                                                          split, gt, glt, 0, y, NULL, NULL, &ws, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    void *mem = ws ? malloc(ws) : NULL;
    rc = aclnnGroupedMatmulV4(mem, ws, e, NULL);
    free(mem);
    return rc;
}

/* Compares out rows [r0, r1) x N (row stride N) with the oracle of
 * sum over k of A(i, k) B(k, j) (+ bias[j]); A, B as value arrays with strides. */
static int check_block(const char *what, const outm *o, int64_t obase, int64_t r0, int64_t r1, int64_t N,
                       const double *A, int64_t ars, int64_t acs, const double *B, int64_t brs, int64_t bcs,
                       int64_t K, const double *bias) {
    for (int64_t i = r0; i < r1; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = bias ? bias[j] : 0.0, mag = bias ? fabs(bias[j]) : 0.0;
            for (int64_t k = 0; k < K; k++) {
                const double p = A[(i - r0) * ars + k * acs] * B[k * brs + j * bcs];
                s += p;
                mag += fabs(p);
            }
            const int64_t at = obase + i * N + j;
            g_elems++;
            const double got = fr_decode(o->dt, o->buf, at);
            const double tol = (double)(K + 2) * 0x1p-24 * mag + fr_quantum(o->dt, s);
            if (!(fabs(got - s) <= tol)) {
                CHECK(0, "%s: out[%lld][%lld] = %.9g, oracle %.9g (tol %.3g)", what, (long long)i, (long long)j, got,
                      s, tol);
                return 1;
            }
        }
    return 0;
}

static void digest(const outm *o) {
    const size_t n = (size_t)o->n * fr_size(o->dt);
    for (size_t i = 0; i < n; i++) g_digest = (g_digest ^ o->buf[i]) * 0x100000001B3ull;
}

static int pick_dt(void) {
    static const int a2[3] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT}, n950[2] = {ACL_FLOAT16, ACL_BF16};
    return g_a2 ? a2[tu_int(0, 2)] : n950[tu_int(0, 1)];
}
static int bias_dt(int dt) {
    if (dt == ACL_BF16) return g_a2 || tu_chance(50) ? ACL_FLOAT : ACL_BF16;
    if (dt == ACL_FLOAT16 && !g_a2 && tu_chance(50)) return ACL_FLOAT;
    return dt;
}

/* Group sizes summing to at most total: some empty, the rest random; *list in the list type. */
static void split_rows(int64_t E, int64_t total, int type, int64_t *size, int64_t *list) {
    int64_t left = total - (tu_chance(30) ? tu_int(0, total / 4 + 1) : 0);
    if (left < 0) left = 0;
    for (int64_t g = 0; g < E; g++) {
        size[g] = g == E - 1 ? left : tu_chance(25) ? 0 : tu_int(0, left);
        left -= size[g];
    }
    int64_t run = 0;
    for (int64_t g = 0; g < E; g++) {
        run += size[g];
        list[g] = type == 0 ? run : size[g];
    }
}

/* M split, one x (M, K), weight one (E, K, N) or E lists (K, N), one out (M, N). */
static void m_split_case(bool multi_w) {
    const int dt = pick_dt();
    const int64_t E = tu_int(1, 6), K = tu_int(1, 70), N = tu_int(1, 90), M = tu_int(0, 60);
    const int type = (int)tu_int(0, 1), wl = tu_chance(30) ? 2 : tu_chance(20) ? 1 : 0;
    const bool has_bias = tu_chance(50);
    int64_t size[8], list[8];
    split_rows(E, M, type, size, list);
    const int64_t xd[2] = {M, K}, yd[2] = {M, N}, wd3[3] = {E, K, N}, wd2[2] = {K, N}, bd2[2] = {E, N}, bd1[1] = {N};
    mat x = mat_new(dt, 2, xd, tu_chance(30) ? 1 : 0, 1.0), w[8], bias[8];
    const int nw = multi_w ? (int)E : 1;
    const int bdt = bias_dt(dt);
    for (int i = 0; i < nw; i++) {
        w[i] = multi_w ? mat_new(dt, 2, wd2, wl, 1.0) : mat_new(dt, 3, wd3, wl, 1.0);
        if (has_bias) bias[i] = multi_w ? mat_new(bdt, 1, bd1, 0, 2.0) : mat_new(bdt, 2, bd2, 0, 2.0);
    }
    outm y = out_new(dt, 2, yd);
    aclTensor *wt[8], *bt[8];
    for (int i = 0; i < nw; i++) wt[i] = dupm(&w[i]), bt[i] = has_bias ? dupm(&bias[i]) : NULL;
    int64_t *keep;
    aclTensor *gl = i64_tensor(list, E, &keep);
    aclTensorList *lx = list1(dupm(&x)), *lw = list_of(wt, nw), *lb = has_bias ? list_of(bt, nw) : NULL,
                  *ly = list1(dupo(&y));
    aclnnStatus rc = run_v4(lx, lw, lb, gl, 3, 0, type, ly);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS, "m split (%s, E %lld K %lld N %lld M %lld): %d %s", dtname(dt), (long long)E,
          (long long)K, (long long)N, (long long)M, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        int64_t r0 = 0;
        for (int64_t g = 0; g < E; g++) {
            const mat *wg = multi_w ? &w[g] : &w[0];
            const double *B = multi_w ? wg->v : wg->v + g * K * N;
            const double *bv = has_bias ? (multi_w ? bias[g].v : bias[0].v + g * N) : NULL;
            if (check_block("m split", &y, 0, r0, r0 + size[g], N, x.v + r0 * K, K, 1, B, N, 1, K, bv)) break;
            r0 += size[g];
        }
        CHECK(tu_all_poison(y.buf + r0 * N * fr_size(dt), (size_t)((M - r0) * N) * fr_size(dt) + TU_GUARD),
              "m split: rows past the group list's total (%lld of %lld) were written", (long long)r0, (long long)M);
    }
    if (g_hash) digest(&y);
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    if (lb) aclDestroyTensorList(lb);
    tu_destroy(gl), free(keep);
    mat_free(&x), out_free(&y);
    for (int i = 0; i < nw; i++) {
        mat_free(&w[i]);
        if (has_bias) mat_free(&bias[i]);
    }
}

/* K split: x (M, K) as a transposed view, weight (K, N), out (E, M, N); empty groups give zeros. */
static void k_split_case(void) {
    const int dt = pick_dt();
    const int64_t E = tu_int(1, 5), K = tu_int(0, 80), N = tu_int(1, 40), M = tu_int(1, 40);
    const int type = (int)tu_int(0, 1);
    int64_t size[8], list[8];
    split_rows(E, K, type, size, list);
    const int64_t xd[2] = {M, K}, wd[2] = {K, N}, yd[3] = {E, M, N};
    mat x = mat_new(dt, 2, xd, 2, 1.0), w = mat_new(dt, 2, wd, tu_chance(30) ? 1 : 0, 1.0);
    outm y = out_new(dt, 3, yd);
    int64_t *keep;
    aclTensor *gl = i64_tensor(list, E, &keep);
    aclTensorList *lx = list1(dupm(&x)), *lw = list1(dupm(&w)), *ly = list1(dupo(&y));
    aclnnStatus rc = run_v4(lx, lw, NULL, gl, 3, 2, type, ly);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS || (K == 0 && rc == ACLNN_SUCCESS), "k split (%s E %lld K %lld): %d %s",
          dtname(dt), (long long)E, (long long)K, rc, tu_msg());
    if (rc == ACLNN_SUCCESS && K > 0) {
        int64_t k0 = 0;
        for (int64_t g = 0; g < E; g++) {
            if (check_block("k split", &y, g * M * N, 0, M, N, x.v + k0, K, 1, w.v + k0 * N, N, 1, size[g], NULL))
                break;
            k0 += size[g];
        }
    }
    if (g_hash) digest(&y);
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    tu_destroy(gl), free(keep);
    mat_free(&x), mat_free(&w), out_free(&y);
}

/* Outputs larger than one tile (phase 2 cuts 512 x 1024), so a worker moves
 * between row blocks and column panels and keeps a packed operand across
 * tiles: the K split with x a transposed view keeps x's row block (the
 * weight gradient), the M split with a transposed weight keeps the weight's
 * panel (the input gradient). Every element against the oracle. */
static void tiles_case(bool ksplit) {
    const int dt = tu_chance(50) ? ACL_BF16 : ACL_FLOAT16;
    const int64_t E = tu_int(2, 3), M = tu_int(513, 1100), N = tu_int(1025, 1300), K = tu_int(1, 9);
    int64_t size[8], list[8];
    split_rows(E, ksplit ? K * E : M, 0, size, list);
    const int64_t KT = ksplit ? K * E : K;
    const int64_t xd[2] = {M, KT}, wk[2] = {KT, N}, w3[3] = {E, K, N}, yk[3] = {E, M, N}, ym[2] = {M, N};
    mat x = mat_new(dt, 2, xd, ksplit ? 2 : 0, 1.0);
    mat w = ksplit ? mat_new(dt, 2, wk, 0, 1.0) : mat_new(dt, 3, w3, 2, 1.0);
    outm y = ksplit ? out_new(dt, 3, yk) : out_new(dt, 2, ym);
    int64_t *keep;
    aclTensor *gl = i64_tensor(list, E, &keep);
    aclTensorList *lx = list1(dupm(&x)), *lw = list1(dupm(&w)), *ly = list1(dupo(&y));
    aclnnStatus rc = run_v4(lx, lw, NULL, gl, 3, ksplit ? 2 : 0, 0, ly);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS, "tiles (%s, %s E %lld M %lld N %lld K %lld): %d %s", ksplit ? "k split" : "m split",
          dtname(dt), (long long)E, (long long)M, (long long)N, (long long)KT, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        int64_t r0 = 0;
        for (int64_t g = 0; g < E; g++) {
            const int bad = ksplit ? check_block("tiles k split", &y, g * M * N, 0, M, N, x.v + r0, KT, 1, w.v + r0 * N,
                                                 N, 1, size[g], NULL)
                                   : check_block("tiles m split", &y, 0, r0, r0 + size[g], N, x.v + r0 * K, K, 1,
                                                 w.v + g * K * N, N, 1, K, NULL);
            if (bad) break;
            r0 += size[g];
        }
    }
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    tu_destroy(gl), free(keep);
    mat_free(&x), mat_free(&w), out_free(&y);
}

/* groupType -1: lists of x (m_i, K_i) (sometimes 3-D), weight (K_i, N_i), out. */
static void no_split_case(void) {
    const int dt = pick_dt();
    const int n = (int)tu_int(1, 4);
    const bool has_bias = tu_chance(50);
    const int bdt = bias_dt(dt);
    mat x[4], w[4], b[4];
    outm y[4];
    aclTensor *xt[4], *wt[4], *bt[4], *yt[4];
    int64_t rows[4], K[4], N[4];
    for (int i = 0; i < n; i++) {
        K[i] = tu_int(1, 50), N[i] = tu_int(1, 50);
        const bool three = tu_chance(30);
        int64_t xd[3], yd[3];
        if (three) {
            xd[0] = tu_int(1, 3), xd[1] = tu_int(0, 9), xd[2] = K[i];
            yd[0] = xd[0], yd[1] = xd[1], yd[2] = N[i];
            rows[i] = xd[0] * xd[1];
        } else {
            xd[0] = tu_int(0, 30), xd[1] = K[i];
            yd[0] = xd[0], yd[1] = N[i];
            rows[i] = xd[0];
        }
        const int64_t wd[2] = {K[i], N[i]}, bd[1] = {N[i]};
        x[i] = mat_new(dt, three ? 3 : 2, xd, tu_chance(30) ? 1 : 0, 1.0);
        w[i] = mat_new(dt, 2, wd, tu_chance(30) ? 2 : 0, 1.0);
        if (has_bias) b[i] = mat_new(bdt, 1, bd, 0, 1.0);
        y[i] = out_new(dt, three ? 3 : 2, yd);
        xt[i] = dupm(&x[i]), wt[i] = dupm(&w[i]), bt[i] = has_bias ? dupm(&b[i]) : NULL, yt[i] = dupo(&y[i]);
    }
    /* every weight transposed alike (CANN's rule): redo the layout choice as one */
    bool tw = w[0].layout == 2 && K[0] * N[0] != 1;
    for (int i = 1; i < n; i++)
        if ((w[i].layout == 2 && K[i] * N[i] != 1) != tw) {
            const int64_t wd[2] = {K[i], N[i]};
            mat_free(&w[i]);
            aclDestroyTensor(wt[i]);
            w[i] = mat_new(dt, 2, wd, tw ? 2 : 0, 1.0);
            wt[i] = dupm(&w[i]);
        }
    aclTensorList *lx = list_of(xt, n), *lw = list_of(wt, n), *ly = list_of(yt, n), *lb = has_bias ? list_of(bt, n) : NULL;
    aclnnStatus rc = run_v4(lx, lw, lb, NULL, 0, -1, 0, ly);
    g_cases++;
    bool any = false;
    for (int i = 0; i < n; i++) any |= rows[i] > 0;
    CHECK(rc == ACLNN_SUCCESS, "no split (%s, %d tensors): %d %s", dtname(dt), n, rc, tu_msg());
    for (int i = 0; rc == ACLNN_SUCCESS && i < n && any; i++) {
        /* when every x is empty nothing runs; else every group is computed (empty ones have nothing to write) */
        if (check_block("no split", &y[i], 0, 0, rows[i], N[i], x[i].v, K[i], 1, w[i].v, N[i], 1, K[i],
                        has_bias ? b[i].v : NULL))
            break;
        CHECK(tu_guard_ok(y[i].buf, (size_t)y[i].n * fr_size(dt)), "no split: wrote past out[%d]", i);
    }
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    if (lb) aclDestroyTensorList(lb);
    for (int i = 0; i < n; i++) {
        if (g_hash) digest(&y[i]);
        mat_free(&x[i]), mat_free(&w[i]), out_free(&y[i]);
        if (has_bias) mat_free(&b[i]);
    }
}

/* groupType 0 with one x per group and one out (splitItem 2): each group has its own K, the
 * groups share N (op-plugin's test_npu_grouped_matmul_2 passes K 256, 256, 1024); out holds the
 * groups' rows one after another. */
static void x_list_case(void) {
    const int dt = pick_dt();
    const int n = (int)tu_int(2, 4);
    const bool has_bias = tu_chance(50);
    const int bdt = bias_dt(dt);
    const int64_t N = tu_int(1, 40);
    mat x[4], w[4], b[4];
    aclTensor *xt[4], *wt[4], *bt[4];
    int64_t K[4], r0[5] = {0};
    for (int i = 0; i < n; i++) {
        K[i] = tu_int(1, 60);
        const int64_t xd[2] = {tu_int(0, 25), K[i]}, wd[2] = {K[i], N}, bd[1] = {N};
        r0[i + 1] = r0[i] + xd[0];
        x[i] = mat_new(dt, 2, xd, 0, 1.0);
        w[i] = mat_new(dt, 2, wd, 0, 1.0);
        if (has_bias) b[i] = mat_new(bdt, 1, bd, 0, 1.0);
        xt[i] = dupm(&x[i]), wt[i] = dupm(&w[i]), bt[i] = has_bias ? dupm(&b[i]) : NULL;
    }
    const int64_t yd[2] = {r0[n], N};
    outm y = out_new(dt, 2, yd);
    aclTensor *yt = dupo(&y);
    aclTensorList *lx = list_of(xt, n), *lw = list_of(wt, n), *ly = list1(yt), *lb = has_bias ? list_of(bt, n) : NULL;
    aclnnStatus rc = run_v4(lx, lw, lb, NULL, 2, 0, 0, ly);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS, "x list, K per group (%s, %d groups): %d %s", dtname(dt), n, rc, tu_msg());
    for (int i = 0; rc == ACLNN_SUCCESS && r0[n] > 0 && i < n; i++)
        if (check_block("x list, K per group", &y, 0, r0[i], r0[i + 1], N, x[i].v, K[i], 1, w[i].v, N, 1, K[i],
                        has_bias ? b[i].v : NULL))
            break;
    CHECK(tu_guard_ok(y.buf, (size_t)y.n * fr_size(dt)), "x list, K per group: wrote past out");
    if (g_hash) digest(&y);
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    if (lb) aclDestroyTensorList(lb);
    for (int i = 0; i < n; i++) {
        mat_free(&x[i]), mat_free(&w[i]);
        if (has_bias) mat_free(&b[i]);
    }
    out_free(&y);
}

/* CANN's example (examples/test_aclnn_grouped_matmul.cpp, docs V4): fp16 x (512, 256), weight
 * (2, 256, 256), bias (2, 256), groupList {256, 512}, splitItem 3, groupType 0 - with zeros as
 * there (all-zero result), then the same shapes with random values through V3, V4 and V5. */
static void cann_example(void) {
    const int64_t xd[2] = {512, 256}, wd[3] = {2, 256, 256}, bd[2] = {2, 256}, yd[2] = {512, 256};
    const int64_t list[2] = {256, 512};
    for (int round = 0; round < 4; round++) {
        mat x = mat_new(ACL_FLOAT16, 2, xd, 0, round ? 1.0 : 0.0), w = mat_new(ACL_FLOAT16, 3, wd, 0, round ? 1.0 : 0.0),
            b = mat_new(ACL_FLOAT16, 2, bd, 0, round ? 1.0 : 0.0);
        outm y = out_new(ACL_FLOAT16, 2, yd);
        int64_t *keep;
        aclTensor *gl = i64_tensor(list, 2, &keep);
        aclTensorList *lx = list1(dupm(&x)), *lw = list1(dupm(&w)), *lb = list1(dupm(&b)), *ly = list1(dupo(&y));
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        aclnnStatus rc;
        if (round == 2)
            rc = aclnnGroupedMatmulV3GetWorkspaceSize(lx, lw, lb, NULL, NULL, NULL, NULL, gl, 3, 0, ly, &ws, &e);
        else if (round == 3)
            rc = aclnnGroupedMatmulV5GetWorkspaceSize(lx, lw, lb, NULL, NULL, NULL, NULL, NULL, gl, NULL, NULL, NULL, 3,
                                                      0, 0, 0, NULL, ly, NULL, NULL, &ws, &e);
        else
            rc = aclnnGroupedMatmulV4GetWorkspaceSize(lx, lw, lb, NULL, NULL, NULL, NULL, NULL, gl, NULL, NULL, NULL, 3,
                                                      0, 0, 0, ly, NULL, NULL, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS, "example round %d phase 1: %d %s", round, rc, tu_msg());
        if (rc == ACLNN_SUCCESS) {
            void *mem = ws ? malloc(ws) : NULL;
            rc = round == 2 ? aclnnGroupedMatmulV3(mem, ws, e, NULL)
                 : round == 3 ? aclnnGroupedMatmulV5(mem, ws, e, NULL)
                              : aclnnGroupedMatmulV4(mem, ws, e, NULL);
            free(mem);
            CHECK(rc == ACLNN_SUCCESS, "example round %d: %d %s", round, rc, tu_msg());
            if (round == 0) {
                int nz = 0;
                for (int64_t i = 0; i < y.n; i++) nz += fr_decode(ACL_FLOAT16, y.buf, i) != 0.0;
                CHECK(nz == 0, "example with zeros: %d non-zero results", nz);
            } else {
                for (int g = 0; g < 2; g++)
                    if (check_block("example", &y, 0, g * 256, g * 256 + 256, 256, x.v + g * 256 * 256, 256, 1,
                                    w.v + g * 256 * 256, 256, 1, 256, b.v + g * 256))
                        break;
            }
        }
        g_cases++;
        aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(lb), aclDestroyTensorList(ly);
        tu_destroy(gl), free(keep);
        mat_free(&x), mat_free(&w), mat_free(&b), out_free(&y);
    }
}

/* V1 and V2 (group list as an aclIntArray of cumulative ends), one x split in M. */
static void v1_v2_case(int version) {
    const int dt = version == 1 || !g_a2 ? (tu_chance(50) ? ACL_FLOAT16 : ACL_BF16) : pick_dt();
    const int64_t E = tu_int(1, 4), K = tu_int(1, 40), N = tu_int(1, 40), M = tu_int(1, 40);
    int64_t size[8], list[8];
    split_rows(E, M, 0, size, list);
    list[E - 1] = M; /* V1/V2 with one x: the list ends at x's rows */
    size[E - 1] = M - (E > 1 ? list[E - 2] : 0);
    const int64_t xd[2] = {M, K}, wd[2] = {K, N}, yd[2] = {M, N};
    mat x = mat_new(dt, 2, xd, 0, 1.0), w[8];
    aclTensor *wt[8];
    for (int i = 0; i < E; i++) w[i] = mat_new(dt, 2, wd, 0, 1.0), wt[i] = dupm(&w[i]);
    outm y = out_new(dt, 2, yd);
    aclIntArray *arr = aclCreateIntArray(list, (uint64_t)E);
    aclTensorList *lx = list1(dupm(&x)), *lw = list_of(wt, (int)E), *ly = list1(dupo(&y));
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = version == 1
                         ? aclnnGroupedMatmulGetWorkspaceSize(lx, lw, NULL, NULL, NULL, NULL, NULL, arr, E == 1 ? 0 : 2,
                                                              ly, &ws, &e)
                         : aclnnGroupedMatmulV2GetWorkspaceSize(lx, lw, NULL, NULL, NULL, NULL, NULL, arr, 2, 0, ly,
                                                                &ws, &e);
    if (rc == ACLNN_SUCCESS) {
        void *mem = ws ? malloc(ws) : NULL;
        rc = version == 1 ? aclnnGroupedMatmul(mem, ws, e, NULL) : aclnnGroupedMatmulV2(mem, ws, e, NULL);
        free(mem);
    }
    g_cases++;
    const bool single_group = E == 1; /* V1 reads one x, one weight, one y as groupType -1 (splitItem 0) */
    CHECK(rc == ACLNN_SUCCESS, "V%d (E %lld): %d %s", version, (long long)E, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        int64_t r0 = 0;
        for (int64_t g = 0; g < E; g++) {
            if (check_block(version == 1 ? "V1" : "V2", &y, 0, r0, r0 + size[g], N, x.v + r0 * K, K, 1, w[g].v, N, 1, K,
                            NULL))
                break;
            r0 += size[g];
        }
    }
    (void)single_group;
    aclDestroyIntArray(arr);
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    mat_free(&x), out_free(&y);
    for (int i = 0; i < E; i++) mat_free(&w[i]);
}

/* ---- phase-1 rules and phase-2 group-list errors: codes, and the output untouched ---- */
static void validation(void) {
    const int dt = ACL_FLOAT16;
    const int64_t xd[2] = {8, 4}, wd[3] = {2, 4, 6}, yd[2] = {8, 6}, bd[2] = {2, 6}, xk[2] = {8, 4}, wk[2] = {4, 6},
                  yk[3] = {2, 8, 6};
    mat x = mat_new(dt, 2, xd, 0, 1.0), w = mat_new(dt, 3, wd, 0, 1.0), b = mat_new(dt, 2, bd, 0, 1.0),
        xi8 = mat_new(dt, 2, xd, 0, 1.0), xt = mat_new(dt, 2, xk, 2, 1.0), wkm = mat_new(dt, 2, wk, 0, 1.0),
        bf = mat_new(ACL_BF16, 2, bd, 0, 1.0), f32 = mat_new(ACL_FLOAT, 2, xd, 0, 1.0), w32 = mat_new(ACL_FLOAT, 3, wd, 0, 1.0);
    outm y = out_new(dt, 2, yd), yw = out_new(dt, 2, xd), yk3 = out_new(dt, 3, yk), y32 = out_new(ACL_FLOAT, 2, yd);
    (void)xi8;
    int64_t *k1, *k2, *k3, *k4, *k5, *k6;
    const int64_t good[2] = {3, 8}, down[2] = {5, 3}, over[2] = {3, 9}, neg[2] = {-1, 4}, kl[2] = {1, 4};
    aclTensor *gl = i64_tensor(good, 2, &k1), *gdown = i64_tensor(down, 2, &k2), *gover = i64_tensor(over, 2, &k3),
              *gneg = i64_tensor(neg, 2, &k4), *g3 = i64_tensor(good, 1, &k5), *gk = i64_tensor(kl, 2, &k6);
    /* an out whose rows share memory (row stride 0): refused, nothing written */
    const int64_t ovd[2] = {8, 6}, ovs[2] = {0, 1}, ovsd[1] = {6};
    aclTensor *ovt = aclCreateTensor(ovd, 2, ACL_FLOAT16, ovs, 0, ACL_FORMAT_ND, ovsd, 1, y.buf);
    aclTensorList *lyov = list1(ovt);
    int32_t gi32[2] = {3, 8};
    aclTensor *g32 = tu_mk(1, 2, 1, 1, ACL_INT32, gi32);
    aclTensorList *lx = list1(dupm(&x)), *lw = list1(dupm(&w)), *lb = list1(dupm(&b)), *ly = list1(dupo(&y)),
                  *lyw = list1(dupo(&yw)), *lxt = list1(dupm(&xt)), *lwk = list1(dupm(&wkm)),
                  *lyk = list1(dupo(&yk3)), *lbf = list1(dupm(&bf)), *lx32 = list1(dupm(&f32)),
                  *lw32 = list1(dupm(&w32)), *ly32 = list1(dupo(&y32)), *empty = aclCreateTensorList(NULL, 0);
    struct {
        int line;
        aclnnStatus want;
        aclTensorList *x, *w, *b, *y;
        aclTensor *gl;
        int64_t split, gt, glt, act;
        bool scale;
        const char *frag;
    } cases[] = {
        {__LINE__, ACLNN_ERR_PARAM_NULLPTR, NULL, lw, NULL, ly, gl, 3, 0, 0, 0, false, "x is NULL"},
        {__LINE__, ACLNN_ERR_PARAM_NULLPTR, empty, lw, NULL, ly, gl, 3, 0, 0, 0, false, "x is NULL or an empty list"},
        {__LINE__, ACLNN_ERR_PARAM_NULLPTR, lx, NULL, NULL, ly, gl, 3, 0, 0, 0, false, "weight"},
        {__LINE__, ACLNN_ERR_PARAM_NULLPTR, lx, lw, NULL, NULL, gl, 3, 0, 0, 0, false, "out"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 3, 1, 0, 0, false, "groupType 1"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 3, 5, 0, 0, false, "groupType must be"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 2, -1, 0, 0, false, "splitItem 2"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 3, 0, 2, 0, false, "groupListType 2"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 3, 0, 3, 0, false, "groupListType must be"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 3, 0, 0, 3, false, "actType must be"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 3, 0, 0, 5, false, "actType 5"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, gl, 3, 0, 0, 0, true, "quantized"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, lbf, ly, gl, 3, 0, 0, 0, false, "biasOptional dtype"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, g32, 3, 0, 0, 0, false, "INT64"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, g3, 3, 0, 0, 0, false, "1 entries for 2 groups"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, ly, NULL, 3, 0, 0, 0, false, "required"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, lyw, gl, 3, 0, 0, 0, false, "must be (8, 6)"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lxt, lw, NULL, ly, gl, 3, 0, 0, 0, false, "transposed"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lwk, NULL, lyk, gl, 3, 2, 0, 0, false, "transposed view"},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lxt, lwk, lb, lyk, gl, 3, 2, 0, 0, false, "biasOptional must be NULL"},
        {__LINE__, g_a2 ? ACLNN_SUCCESS : ACLNN_ERR_PARAM_INVALID, lx32, lw32, NULL, ly32, gl, 3, 0, 0, 0, false,
         g_a2 ? NULL : "FLOAT32"},
        {__LINE__, ACLNN_SUCCESS, lxt, lwk, NULL, lyk, gk, 3, 2, 0, 0, false, NULL},
        {__LINE__, ACLNN_ERR_PARAM_INVALID, lx, lw, NULL, lyov, gl, 3, 0, 0, 0, false, "share memory"},
        {__LINE__, ACLNN_SUCCESS, lx, lw, lb, ly, gl, 3, 0, 0, 0, false, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        aclTensorList *scale = cases[i].scale ? list1(dupm(&b)) : NULL;
        aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(cases[i].x, cases[i].w, cases[i].b, scale, NULL, NULL,
                                                              NULL, NULL, cases[i].gl, NULL, NULL, NULL, cases[i].split,
                                                              cases[i].gt, cases[i].glt, cases[i].act, cases[i].y, NULL,
                                                              NULL, &ws, &e);
        CHECK(rc == cases[i].want, "line %d: %d, want %d (%s)", cases[i].line, rc, cases[i].want, tu_msg());
        if (cases[i].frag) CHECK(tu_msg_has(cases[i].frag, NULL), "line %d: message '%s' lacks '%s'", cases[i].line, tu_msg(), cases[i].frag);
        if (rc == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e);
        if (scale) aclDestroyTensorList(scale);
        g_cases++;
    }
    CHECK(tu_all_poison(y.buf, (size_t)y.n * 2 + TU_GUARD) && tu_all_poison(yk3.buf, (size_t)yk3.n * 2 + TU_GUARD),
          "a planned or refused call wrote out");
    /* phase 2: group lists that are not ascending, negative or past x's rows: 161002, out untouched */
    aclTensor *bad[3] = {gdown, gover, gneg};
    const char *why[3] = {"below the entry before it", "beyond the 8 rows of x", "below the entry before it"};
    for (int i = 0; i < 3; i++) {
        aclnnStatus rc = run_v4(lx, lw, NULL, bad[i], 3, 0, 0, ly);
        CHECK(rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has(why[i], NULL), "bad group list %d: %d %s", i, rc, tu_msg());
        CHECK(tu_all_poison(y.buf, (size_t)y.n * 2 + TU_GUARD), "bad group list %d: out written", i);
    }
    aclnnStatus rc = run_v4(lx, lw, NULL, gneg, 3, 0, 1, ly); /* counts: negative */
    CHECK(rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has("negative", NULL), "negative count: %d %s", rc, tu_msg());
    /* an executor's phase 2 with a NULL address in a list tensor: 161001, nothing written */
    {
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        aclnnStatus r1 = aclnnGroupedMatmulV4GetWorkspaceSize(lx, lw, NULL, NULL, NULL, NULL, NULL, NULL, gl, NULL,
                                                              NULL, NULL, 3, 0, 0, 0, ly, NULL, NULL, &ws, &e);
        CHECK(r1 == ACLNN_SUCCESS, "plan: %s", tu_msg());
        if (r1 == ACLNN_SUCCESS) {
            void *mem = ws ? malloc(ws) : NULL;
            CHECK(aclnnGroupedMatmulV4(mem, ws ? ws - 1 : 0, e, NULL) == (ws ? ACLNN_ERR_PARAM_INVALID : ACLNN_SUCCESS),
                  "a workspace one byte short: %s", tu_msg());
            free(mem);
        }
    }
    CHECK(tu_all_poison(y.buf, (size_t)y.n * 2 + TU_GUARD), "short workspace: out written");
    aclTensorList *all[] = {lx, lw, lb, ly, lyw, lxt, lwk, lyk, lbf, lx32, lw32, ly32, empty, lyov};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) aclDestroyTensorList(all[i]);
    aclTensor *ts[] = {gl, gdown, gover, gneg, g3, g32, gk};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) tu_destroy(ts[i]);
    free(k1), free(k2), free(k3), free(k4), free(k5), free(k6);
    mat_free(&x), mat_free(&w), mat_free(&b), mat_free(&xi8), mat_free(&xt), mat_free(&wkm), mat_free(&bf);
    mat_free(&f32), mat_free(&w32);
    out_free(&y), out_free(&yw), out_free(&yk3), out_free(&y32);
}

/* A value of a dense (layout 0) matrix, in its storage and its oracle copy. */
static void mat_set(mat *m, int64_t i, double v) {
    tu_put(m->dt, m->o.store, i, v);
    m->v[i] = fr_decode(m->dt, m->o.store, i);
}

/* Products that only exact arithmetic gets right. bf16: a subnormal input
 * (2^-130) times 2^120, and two inputs of 2^-64 whose product 2^-128 is an
 * fp32 subnormal; on an AVX512-BF16 CPU, oneDNN's VDPBF16PS would give 0 for
 * both (it flushes subnormal inputs and results), so gmm_run.c must send these
 * groups to the widening path. fp32 (A2/A3 rules): 2^-140 times 2^120, and
 * 2^-70 squared = 2^-140 out, which no path may flush. Group 1 has only
 * ordinary values. */
static void tiny_case(int dt) {
    const int64_t E = 2, M = 40, K = 37, N = 45;
    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, yd[2] = {M, N}, list[2] = {20, 40};
    const bool f = dt == ACL_FLOAT;
    const double t0 = f ? 0x1p-140 : 0x1p-130, t1 = f ? 0x1p-70 : 0x1p-64;
    mat x = mat_new(dt, 2, xd, 0, 1.0), w = mat_new(dt, 3, wd, 0, 1.0);
    for (int64_t k = 0; k < K; k++) mat_set(&x, k, 0.0), mat_set(&x, K + k, 0.0); /* rows 0 and 1 */
    mat_set(&x, 0, t0);
    mat_set(&x, K + 1, t1);
    for (int64_t j = 0; j < N; j++) mat_set(&w, j, 0x1p120), mat_set(&w, N + j, t1); /* rows 0 and 1 of w[0] */
    for (int64_t k = 0; k < 2 * K; k++) mat_set(&x, 2 * K + k, 0x1p-8 * (double)(k % 5)); /* 2^120-sized rows */
    outm y = out_new(dt, 2, yd);
    int64_t *keep;
    aclTensor *gl = i64_tensor(list, E, &keep);
    aclTensorList *lx = list1(dupm(&x)), *lw = list1(dupm(&w)), *ly = list1(dupo(&y));
    aclnnStatus rc = run_v4(lx, lw, NULL, gl, 3, 0, 0, ly);
    CHECK(rc == ACLNN_SUCCESS, "%s tiny values: %d %s", dtname(dt), rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        const double want0 = t0 * 0x1p120, want1 = t1 * t1;
        CHECK(fr_decode(dt, y.buf, 0) == want0 && fr_decode(dt, y.buf, N) == want1,
              "%s tiny values: out[0][0] = %g (want %g), out[1][0] = %g (want %g)", dtname(dt), fr_decode(dt, y.buf, 0),
              want0, fr_decode(dt, y.buf, N), want1);
        for (int64_t g = 0; g < E; g++)
            if (check_block("tiny values", &y, 0, list[g] - 20, list[g], N, x.v + (list[g] - 20) * K, K, 1,
                            w.v + g * K * N, N, 1, K, NULL))
                break;
    }
    g_cases++;
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    tu_destroy(gl), free(keep);
    mat_free(&x), mat_free(&w), out_free(&y);
}

/* The same problem many times over: the output bits must never change. Many
 * small tiles keep the workers calling the BLAS at once, so a BLAS that is
 * not safe to call concurrently (OpenBLAS's serial build: its buffer pool
 * races) shows here as changed bits. fp16 runs on BLIS (widened panels);
 * bf16 on the primitives the workers share in gemm_onednn.c, where the CPU
 * has AVX512-BF16 and the path is avx512, else on BLIS as fp16 does. */
static void repeat_bits(int dt) {
    const int64_t E = 8, K = 64, N = 80, M = 8 * 96;
    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, yd[2] = {M, N};
    int64_t list[8];
    for (int64_t e = 0; e < E; e++) list[e] = 96 * (e + 1);
    mat x = mat_new(dt, 2, xd, 0, 1.0), w = mat_new(dt, 3, wd, 0, 1.0);
    outm y = out_new(dt, 2, yd);
    unsigned char *first = malloc((size_t)y.n * 2);
    int64_t *keep;
    aclTensor *gl = i64_tensor(list, E, &keep);
    aclTensorList *lx = list1(dupm(&x)), *lw = list1(dupm(&w)), *ly = list1(dupo(&y));
    int changed = 0;
    for (int r = 0; r < 150; r++) {
        memset(y.buf, 0xA5, (size_t)y.n * 2);
        aclnnStatus rc = run_v4(lx, lw, NULL, gl, 3, 0, 0, ly);
        CHECK(rc == ACLNN_SUCCESS, "repeat %d: %d %s", r, rc, tu_msg());
        if (r == 0) memcpy(first, y.buf, (size_t)y.n * 2);
        else changed += memcmp(first, y.buf, (size_t)y.n * 2) != 0;
    }
    CHECK(changed == 0, "the same %s problem gave other bits in %d of 149 repeats", dtname(dt), changed);
    for (int64_t g = 0; g < E; g++) /* the last run's values, against the oracle */
        if (check_block("repeat", &y, 0, 96 * g, 96 * (g + 1), N, x.v + 96 * g * K, K, 1, w.v + g * K * N, N, 1, K, NULL))
            break;
    g_cases++;
    aclDestroyTensorList(lx), aclDestroyTensorList(lw), aclDestroyTensorList(ly);
    tu_destroy(gl), free(keep), free(first);
    mat_free(&x), mat_free(&w), out_free(&y);
}

int main(int argc, char **argv) {
    g_hash = argc > 1 && strcmp(argv[1], "--hash") == 0;
    const char *soc = getenv("MOEFR_SOC");
    g_a2 = soc && strcmp(soc, "ascend910b") == 0;
    if (g_hash) {
        tu_state = 0x9E3779B97F4A7C15ull; /* fixed problems */
    } else {
        tu_seed("test_grouped_matmul");
        cann_example();
        validation();
        repeat_bits(ACL_FLOAT16);
        repeat_bits(ACL_BF16);
        tiny_case(ACL_BF16);
        if (g_a2) tiny_case(ACL_FLOAT); /* fp32 is A2/A3-only */
        tiles_case(true), tiles_case(false), tiles_case(true);
    }
    for (int i = 0; i < (g_hash ? 12 : 60); i++) {
        m_split_case(i % 2 == 1);
        k_split_case();
        no_split_case();
        x_list_case();
        if (i % 4 == 0) v1_v2_case(1 + (i / 4) % 2);
        if (g_hash) printf("gmm problem %d %016llx\n", i, (unsigned long long)g_digest);
    }
    if (!g_hash) {
        CHECK(g_elems > 100000, "only %lld output elements compared", g_elems);
        printf("test_grouped_matmul: %d cases, %lld output elements against the oracle, %d checks, %d failures\n",
               g_cases, g_elems, g_checks, g_fail);
    }
    return g_fail != 0;
}
