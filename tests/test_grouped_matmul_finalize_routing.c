/* test_grouped_matmul_finalize_routing.c - aclnnGroupedMatmulFinalizeRoutingWeightNz and
 * WeightNzV2, the A8W8 rows with ND int8 weights (SPEC 11), against an oracle written from CANN's
 * kernel's steps alone (op_kernel/grouped_matmul_finalize_routing.h, QuantGroupMatmul, combine):
 *   out = 0; rows [off, off + S) = fp32(fp32(sharedInput) * sharedInputWeight);
 *   acc = sum_k x1 * x2 in int64 (exact); k = fp32(logit * pertokenScale) (or logit);
 *   y = fp32(fp32(fp32(acc) * scale) * k) (+ fp32(logit * fp32(bias)), the sum rounded to fp32);
 *   out[rowIndex[m]] = fp32(out[rowIndex[m]] + y), m ascending;
 * each fp32 operation formed exactly in float64 and rounded once: bit for bit. Random shapes, both
 * group-list types, empty groups, totals short of x1's rows (those rows' indices hold garbage and
 * are never read), optional pertoken / bias / shared input, FLOAT and BF16 scales, INT32 and INT64
 * row indices, strided weights, both entries; then the refusals, out untouched. */
#include <math.h>

#include "aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz.h"
#include "aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz_v2.h"
#define TU_COUNT_FAILURES
#include "fwd_ref.h"
#include "testutil.h"

static long long g_elems;
static float f32(double v) { return (float)v; }
static float mul(float a, float b) { return f32((double)a * b); }
static float add(float a, float b) { return f32((double)a + b); }

typedef struct fr_case {
    int64_t M, K, N, E, bs, list_type, off;
    bool pt, bias, shared, v2, wt, bf16_scale, row32;
    float sw;
} fr_case;

static void run_case(const fr_case *cs) {
    g_cases++;
    const int64_t M = cs->M, K = cs->K, N = cs->N, E = cs->E, bs = cs->bs;
    int8_t *x = malloc((size_t)(M * K)), *w = malloc((size_t)(E * K * N));
    for (int64_t i = 0; i < M * K; i++) x[i] = (int8_t)tu_int(-128, 127);
    for (int64_t i = 0; i < E * K * N; i++) w[i] = (int8_t)tu_int(-128, 127);
    const int sfr = cs->bf16_scale ? FR_BF16 : FR_F32;
    unsigned char *sv = malloc((size_t)(E * N) * 4), *bvb = malloc((size_t)(E * N) * 2);
    float *sf = malloc(sizeof(float) * (size_t)(E * N)), *bf = malloc(sizeof(float) * (size_t)(E * N));
    for (int64_t i = 0; i < E * N; i++) {
        tu_put(sfr, sv, i, (tu_unit() - 0.5) * 0.01);
        sf[i] = (float)fr_decode(sfr, sv, i);
        tu_put(FR_BF16, bvb, i, (tu_unit() - 0.5) * 4);
        bf[i] = (float)fr_decode(FR_BF16, bvb, i);
    }
    float *pt = malloc(sizeof(float) * (size_t)M), *lg = malloc(sizeof(float) * (size_t)M);
    for (int64_t m = 0; m < M; m++) pt[m] = (float)(tu_unit() * 0.1), lg[m] = (float)tu_unit();
    const int64_t S = cs->shared ? tu_int(1, bs - cs->off) : 0; /* CANN refuses an empty sharedInput */
    unsigned char *shb = malloc((size_t)(S * N) * 2 + 2);
    for (int64_t i = 0; i < S * N; i++) tu_put(FR_BF16, shb, i, (tu_unit() - 0.5) * 8);
    /* groups */
    int64_t ends[9], glv[8], left = M;
    ends[0] = 0;
    for (int64_t g = 0; g < E; g++) {
        const int64_t s = tu_chance(25) ? 0 : tu_int(0, left);
        left -= s;
        ends[g + 1] = ends[g] + s;
    }
    if (tu_chance(50)) ends[E] += left;
    for (int64_t g = 0; g < E; g++) glv[g] = cs->list_type == 0 ? ends[g + 1] : ends[g + 1] - ends[g];
    const int64_t total = ends[E];
    void *rib = malloc((size_t)M * 8 + 8);
    int64_t *rows = malloc(sizeof(int64_t) * (size_t)M + 8);
    for (int64_t m = 0; m < M; m++) {
        rows[m] = m < total ? tu_int(0, bs - 1) : (int64_t)1000000007; /* never read past total */
        if (cs->row32) ((int32_t *)rib)[m] = (int32_t)rows[m];
        else ((int64_t *)rib)[m] = rows[m];
    }
    float *out = (float *)(void *)tu_poisoned((size_t)(bs * N) * 4);
    /* the oracle */
    float *want = malloc(sizeof(float) * (size_t)(bs * N) + 4);
    for (int64_t r = 0; r < bs; r++)
        for (int64_t j = 0; j < N; j++)
            want[r * N + j] = cs->shared && r >= cs->off && r < cs->off + S
                                  ? mul((float)fr_decode(FR_BF16, shb, (r - cs->off) * N + j), cs->sw)
                                  : 0.0f;
    for (int64_t g = 0; g < E; g++)
        for (int64_t m = ends[g]; m < ends[g + 1]; m++) {
            const float k = cs->pt ? mul(lg[m], pt[m]) : lg[m];
            for (int64_t j = 0; j < N; j++) {
                int64_t acc = 0;
                for (int64_t q = 0; q < K; q++)
                    acc += (int64_t)x[m * K + q] * w[g * K * N + (cs->wt ? j * K + q : q * N + j)];
                float y = mul(mul((float)acc, sf[g * N + j]), k);
                if (cs->bias) y = add(y, mul(lg[m], bf[g * N + j]));
                want[rows[m] * N + j] = add(want[rows[m] * N + j], y);
            }
        }
    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, en[2] = {E, N}, md[1] = {M}, gd[1] = {E}, sd[2] = {S, N},
                  od[2] = {bs, N};
    const int64_t wst[3] = {K * N, cs->wt ? 1 : N, cs->wt ? K : 1}, wsd[1] = {E * K * N};
    aclTensor *tx = tu_tensor(xd, 2, ACL_INT8, x);
    aclTensor *tw = aclCreateTensor(wd, 3, ACL_INT8, wst, 0, ACL_FORMAT_ND, wsd, 1, w);
    aclTensor *ts = tu_tensor(en, 2, cs->bf16_scale ? ACL_BF16 : ACL_FLOAT, sv);
    aclTensor *tb = cs->bias ? tu_tensor(en, 2, ACL_BF16, bvb) : NULL;
    aclTensor *tp = cs->pt ? tu_tensor(md, 1, ACL_FLOAT, pt) : NULL;
    aclTensor *tg = tu_tensor(gd, 1, ACL_INT64, glv), *tl = tu_tensor(md, 1, ACL_FLOAT, lg);
    aclTensor *tsh = cs->shared ? tu_tensor(sd, 2, ACL_BF16, shb) : NULL;
    aclTensor *tr = tu_tensor(md, 1, cs->row32 ? ACL_INT32 : ACL_INT64, rib), *to = tu_tensor(od, 2, ACL_FLOAT, out);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc;
    if (cs->v2) {
        const int64_t tv[1] = {M / 2};
        aclIntArray *tun = aclCreateIntArray(tv, 1);
        rc = aclnnGroupedMatmulFinalizeRoutingWeightNzV2GetWorkspaceSize(tx, tw, ts, tb, NULL, NULL, NULL, tp, tg, tsh, tl,
                                                                         tr, 0, cs->sw, cs->off, false, false,
                                                                         cs->list_type, tun, to, &ws, &ex);
        aclDestroyIntArray(tun);
    } else {
        rc = aclnnGroupedMatmulFinalizeRoutingWeightNzGetWorkspaceSize(tx, tw, ts, tb, tp, tg, tsh, tl, tr, 0, cs->sw,
                                                                       cs->off, false, false, cs->list_type, to, &ws, &ex);
    }
    CHECK(rc == ACLNN_SUCCESS, "M %lld K %lld N %lld E %lld bs %lld: phase 1 %d: %s", (long long)M, (long long)K,
          (long long)N, (long long)E, (long long)bs, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        void *wsp = ws ? malloc(ws) : NULL;
        rc = cs->v2 ? aclnnGroupedMatmulFinalizeRoutingWeightNzV2(wsp, ws, ex, NULL)
                    : aclnnGroupedMatmulFinalizeRoutingWeightNz(wsp, ws, ex, NULL);
        CHECK(rc == ACLNN_SUCCESS, "phase 2 %d: %s", rc, tu_msg());
        free(wsp);
        long bad = 0;
        for (int64_t i = 0; i < bs * N; i++) {
            if (memcmp(&out[i], &want[i], 4) != 0 && bad++ < 3)
                CHECK(false, "out[%lld][%lld] = %a, want %a", (long long)(i / N), (long long)(i % N), out[i], want[i]);
            g_elems++;
        }
        CHECK(bad == 0, "%ld elements differ", bad);
        CHECK(tu_guard_ok((unsigned char *)out, (size_t)(bs * N) * 4), "out's guard was written");
    }
    tu_destroy(tx), tu_destroy(tw), tu_destroy(ts), tu_destroy(tg), tu_destroy(tl), tu_destroy(tr), tu_destroy(to);
    if (tb) tu_destroy(tb);
    if (tp) tu_destroy(tp);
    if (tsh) tu_destroy(tsh);
    free(x), free(w), free(sv), free(bvb), free(sf), free(bf), free(pt), free(lg), free(shb), free(rib), free(rows),
        free(out), free(want);
}

/* ---- refusals ---- */
typedef struct bad {
    const char *what;
    aclnnStatus want;
    int64_t N, K, bs, gl_len, dtype, shared_rows, off, tuning;
    int w_dt, w_fmt, s_dt;
    bool null_logit, null_out, transpose, v2, phase2_row, phase2_gl;
    const char *msg;
} bad;

static void refusal(const bad *b) {
    const int64_t M = 6, E = 2, N = b->N, K = b->K, bs = b->bs;
    unsigned char *buf = calloc(1, 1 << 16);
    float *out = (float *)(void *)tu_poisoned((size_t)(bs * N) * 4);
    int64_t glv[4] = {3, 6, 6, 6}, rows[6] = {0, 1, 2, 3, 4, 5};
    if (b->phase2_row) rows[2] = bs;
    if (b->phase2_gl) glv[1] = 7;
    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, en[2] = {E, N}, md[1] = {M}, gd[1] = {b->gl_len},
                  sd[2] = {b->shared_rows, N}, od[2] = {bs, N};
    aclTensor *tx = tu_tensor(xd, 2, ACL_INT8, buf);
    aclTensor *tw = aclCreateTensor(wd, 3, (aclDataType)b->w_dt, NULL, 0, (aclFormat)b->w_fmt, wd, 3, buf);
    aclTensor *ts = tu_tensor(en, 2, (aclDataType)b->s_dt, buf), *tg = tu_tensor(gd, 1, ACL_INT64, glv);
    aclTensor *tl = b->null_logit ? NULL : tu_tensor(md, 1, ACL_FLOAT, buf);
    aclTensor *tsh = b->shared_rows ? tu_tensor(sd, 2, ACL_BF16, buf) : NULL;
    aclTensor *tr = tu_tensor(md, 1, ACL_INT64, rows), *to = b->null_out ? NULL : tu_tensor(od, 2, ACL_FLOAT, out);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc;
    if (b->v2) {
        const int64_t tv[1] = {b->tuning};
        aclIntArray *tun = aclCreateIntArray(tv, 1);
        rc = aclnnGroupedMatmulFinalizeRoutingWeightNzV2GetWorkspaceSize(tx, tw, ts, NULL, NULL, NULL, NULL, NULL, tg, tsh,
                                                                         tl, tr, b->dtype, 1.0f, b->off, b->transpose,
                                                                         false, 0, tun, to, &ws, &ex);
        aclDestroyIntArray(tun);
    } else {
        rc = aclnnGroupedMatmulFinalizeRoutingWeightNzGetWorkspaceSize(tx, tw, ts, NULL, NULL, tg, tsh, tl, tr, b->dtype,
                                                                       1.0f, b->off, b->transpose, false, 0, to, &ws, &ex);
    }
    if (b->phase2_row || b->phase2_gl) {
        CHECK(rc == ACLNN_SUCCESS, "%s: phase 1 %d (%s)", b->what, rc, tu_msg());
        void *wsp = ws ? malloc(ws) : NULL;
        if (rc == ACLNN_SUCCESS) rc = aclnnGroupedMatmulFinalizeRoutingWeightNz(wsp, ws, ex, NULL);
        free(wsp);
        CHECK(rc == b->want, "%s: phase 2 %d (%s)", b->what, rc, tu_msg());
    } else {
        CHECK(rc == b->want && ex == NULL, "%s: got %d, want %d (%s)", b->what, rc, b->want, tu_msg());
    }
    CHECK(tu_msg_has(b->msg, NULL), "%s: message '%s' lacks '%s'", b->what, tu_msg(), b->msg);
    CHECK(tu_all_poison((unsigned char *)out, (size_t)(bs * N) * 4), "%s wrote out", b->what);
    tu_destroy(tx), tu_destroy(tw), tu_destroy(ts), tu_destroy(tg), tu_destroy(tr);
    if (tl) tu_destroy(tl);
    if (tsh) tu_destroy(tsh);
    if (to) tu_destroy(to);
    free(buf), free(out);
}

static void refusals(void) {
    enum { I8 = ACL_INT8, ND = ACL_FORMAT_ND, F = ACL_FLOAT, P = ACLNN_ERR_PARAM_INVALID, NUL = ACLNN_ERR_PARAM_NULLPTR };
    const bad cases[] = {
        {"logit NULL", NUL, 256, 16, 6, 2, 0, 0, 0, 0, I8, ND, F, true, false, false, false, false, false, "logit is NULL"},
        {"out NULL", NUL, 256, 16, 6, 2, 0, 0, 0, 0, I8, ND, F, false, true, false, false, false, false, "out is NULL"},
        {"A8W4", P, 256, 16, 6, 2, 0, 0, 0, 0, ACL_INT32, ND, F, false, false, false, false, false, false, "A8W4"},
        {"dtype 1", P, 256, 16, 6, 2, 1, 0, 0, 0, I8, ND, F, false, false, false, false, false, false, "dtype must be 0"},
        {"transpose", P, 256, 16, 6, 2, 0, 0, 0, 0, I8, ND, F, false, false, true, false, false, false, "must be false"},
        {"NZ x2", P, 256, 16, 6, 2, 0, 0, 0, 0, I8, ACL_FORMAT_FRACTAL_NZ, F, false, false, false, false, false, false,
         "not yet read"},
        {"N 128", P, 128, 16, 6, 2, 0, 0, 0, 0, I8, ND, F, false, false, false, false, false, false, "at least 256"},
        {"K 24", P, 256, 24, 6, 2, 0, 0, 0, 0, I8, ND, F, false, false, false, false, false, false, "multiple of 16"},
        {"bs > M", P, 256, 16, 7, 2, 0, 0, 0, 0, I8, ND, F, false, false, false, false, false, false, "exceed x1's 6"},
        {"groupList 3", P, 256, 16, 6, 3, 0, 0, 0, 0, I8, ND, F, false, false, false, false, false, false,
         "x2's 2 groups"},
        {"shared past out", P, 256, 16, 6, 2, 0, 4, 3, 0, I8, ND, F, false, false, false, false, false, false,
         "exceed out's 6"},
        {"scale INT64", P, 256, 16, 6, 2, 0, 0, 0, 0, I8, ND, ACL_INT64, false, false, false, false, false, false,
         "no A8W8 kernel"},
        {"scale INT8", P, 256, 16, 6, 2, 0, 0, 0, 0, I8, ND, ACL_INT8, false, false, false, false, false, false,
         "scale dtype must be"},
        {"tuning > M", P, 256, 16, 6, 2, 0, 0, 0, 7, I8, ND, F, false, false, false, true, false, false,
         "tuningConfigOptional[0] = 7"},
        {"rowIndex past out", P, 256, 16, 4, 2, 0, 0, 0, 0, I8, ND, F, false, false, false, false, true, false,
         "outside out's 4 rows"},
        {"groupList past x1", P, 256, 16, 6, 2, 0, 0, 0, 0, I8, ND, F, false, false, false, false, false, true,
         "beyond x1's 6"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) refusal(&cases[i]);
}

/* an out whose rows share memory (stride 0): refused before anything runs (moefr's rule) */
static void overlapping_out(void) {
    const int64_t M = 4, K = 16, N = 256, E = 1;
    unsigned char *buf = calloc(1, 1 << 14);
    float *ob = (float *)(void *)tu_poisoned((size_t)N * 4);
    int64_t glv[1] = {4}, rows[4] = {0, 1, 2, 3};
    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, en[2] = {E, N}, md[1] = {M}, gd[1] = {1}, od[2] = {M, N};
    const int64_t ost[2] = {0, 1}, osd[1] = {N};
    aclTensor *x = tu_tensor(xd, 2, ACL_INT8, buf), *w = tu_tensor(wd, 3, ACL_INT8, buf);
    aclTensor *s = tu_tensor(en, 2, ACL_FLOAT, buf), *gl = tu_tensor(gd, 1, ACL_INT64, glv);
    aclTensor *lg = tu_tensor(md, 1, ACL_FLOAT, buf), *ri = tu_tensor(md, 1, ACL_INT64, rows);
    aclTensor *o = aclCreateTensor(od, 2, ACL_FLOAT, ost, 0, ACL_FORMAT_ND, osd, 1, ob);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnGroupedMatmulFinalizeRoutingWeightNzGetWorkspaceSize(x, w, s, NULL, NULL, gl, NULL, lg, ri, 0,
                                                                               1.0f, 0, false, false, 1, o, &ws, &ex);
    CHECK(rc == ACLNN_ERR_PARAM_INVALID && ex == NULL && tu_msg_has("out has elements that share memory", NULL),
          "overlapping out: %d (%s)", rc, tu_msg());
    CHECK(tu_all_poison((unsigned char *)ob, (size_t)N * 4), "overlapping out written");
    tu_destroy(x), tu_destroy(w), tu_destroy(s), tu_destroy(gl), tu_destroy(lg), tu_destroy(ri), tu_destroy(o);
    free(buf), free(ob);
}

int main(void) {
    tu_seed("test_grouped_matmul_finalize_routing");
    for (int it = 0; it < 30; it++) {
        fr_case c;
        c.M = tu_int(1, 40), c.K = 16 * tu_int(1, 4), c.N = 256 + 32 * tu_int(0, 3), c.E = tu_int(1, 5);
        c.bs = tu_int(1, c.M), c.list_type = tu_int(0, 1);
        c.shared = tu_chance(50), c.off = c.shared ? tu_int(0, c.bs - 1) : 0;
        c.pt = tu_chance(70), c.bias = tu_chance(50), c.v2 = it % 2, c.wt = tu_chance(30);
        c.bf16_scale = tu_chance(40), c.row32 = tu_chance(40), c.sw = (float)(tu_unit() * 2);
        run_case(&c);
    }
    for (int it = 0; it < 3; it++) { /* K over two of the GEMM's 1024-term chunks (sums stay exact in fp32) */
        fr_case c = {tu_int(1, 8), 16 * tu_int(65, 130), 256, tu_int(1, 2), 1, 1, 0,
                     true, it == 1, false, it == 2, it == 0, false, true, 1.0f};
        c.bs = tu_int(1, c.M);
        run_case(&c);
    }
    refusals();
    overlapping_out();
    printf("test_grouped_matmul_finalize_routing: %d cases, %lld output elements compared, %d failures\n", g_cases,
           g_elems, g_fail);
    return g_fail ? 1 : 0;
}
