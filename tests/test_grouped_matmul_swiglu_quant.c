/* test_grouped_matmul_swiglu_quant.c - aclnnGroupedMatmulSwigluQuant and its
 * WeightNZ entry (SPEC 11) against an oracle written from CANN's kernel's
 * rounding points alone (op_kernel/grouped_matmul_swiglu_quant.h):
 *   acc = sum_k x * w in int64 (exact);
 *   c   = fp32(fp32(fp32(acc) * xScale[m]) * weightScale[g][n]), each fp32
 *         product formed exactly in float64 and rounded once;
 *   S   = swish(c[j]) * c[N/2 + j];
 *   outputScale = fp32(max|S| / 127), inv = fp32(1 / outputScale);
 *   output = rint(fp16(fp32(S * inv))) (fp16 and int8 both half to even).
 * Swish goes through exp, whose bits no independent oracle shares: the
 * "exact" cases make every act value >= 20, where swish(a) is a in fp32 (the
 * sigmoid rounds to 1), so S is fp32(a * b) and every later step is compared
 * bit for bit; the general cases bound the scale (relative 1e-5) and each int8
 * (|q - S/scale| <= 0.5 + fp16's half step + 1e-3 |S/scale|), and require 99%
 * of them to be the oracle's exactly. Random shapes with tails, empty groups,
 * short group lists and totals short of M (those rows stay poisoned), strided
 * weights; then every refusal, outputs untouched. */
#include <math.h>

#include "aclnnop/aclnn_grouped_matmul_swiglu_quant.h"
#include "aclnnop/aclnn_grouped_matmul_swiglu_quant_weight_nz.h"
#define TU_COUNT_FAILURES
#include "fwd_ref.h"
#include "testutil.h"

static long long g_elems, g_exact_q, g_all_q;

static float mul32(float a, float b) { return (float)((double)a * (double)b); }
/* v rounded to fp16's precision (11 significant bits, subnormal step 2^-24), half to even */
static double to_f16(double v) {
    if (v != v || v == 0) return v;
    if (fabs(v) >= 65520.0) return v > 0 ? INFINITY : -INFINITY;
    int e;
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    const double step = e - 1 >= -14 ? ldexp(1.0, e - 11) : ldexp(1.0, -24);
    return nearbyint(v / step) * step;
}
static int oracle_q(double v) {
    const double h = to_f16(v);
    if (h != h) return 0;
    if (h >= 127) return 127;
    if (h <= -128) return -128;
    return (int)nearbyint(h);
}

typedef struct sq_case {
    int64_t M, K, N, E, L;
    bool exact, wt, nz_entry;
    bool extreme; /* exact, with x = -128 and act weights -128: sums beyond 2^24 over several K chunks */
    int sdt; /* weightScale dtype */
} sq_case;

static void run_case(const sq_case *cs) {
    g_cases++;
    const int64_t M = cs->M, K = cs->K, N = cs->N, E = cs->E, L = cs->L, H = N / 2;
    int8_t *x = malloc((size_t)(M * K + 1)), *w = malloc((size_t)(E * K * N + 1));
    for (int64_t i = 0; i < M * K; i++)
        x[i] = cs->extreme ? -128 : cs->exact ? (int8_t)tu_int(1, 3) : (int8_t)tu_int(-128, 127);
    /* w[e][k][n] at e*K*N + (wt ? n*K + k : k*N + n) */
    for (int64_t e = 0; e < E; e++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++) {
                const int8_t v = cs->extreme && n < H   ? -128
                                 : cs->extreme        ? (int8_t)(tu_chance(50) ? -128 : 127)
                                 : cs->exact && n < H ? (int8_t)tu_int(1, 3)
                                                      : (int8_t)tu_int(-128, 127);
                w[e * K * N + (cs->wt ? n * K + k : k * N + n)] = v;
            }
    const int fr = cs->sdt == ACL_FLOAT ? FR_F32 : cs->sdt == ACL_FLOAT16 ? FR_F16 : FR_BF16;
    unsigned char *sv = malloc((size_t)(E * N) * 4 + 4);
    float *sf = malloc(sizeof(float) * (size_t)(E * N) + 4), *xs = malloc(sizeof(float) * (size_t)M + 4);
    for (int64_t i = 0; i < E * N; i++) {
        const double v = cs->exact && i % N < H ? 20 + tu_unit() * 8 : (tu_unit() - 0.5) * (cs->exact ? 0.5 : 0.02);
        tu_put(fr, sv, i, v);
        sf[i] = (float)fr_decode(fr, sv, i);
    }
    for (int64_t m = 0; m < M; m++) xs[m] = cs->exact ? (float)(1 + tu_unit()) : (float)((tu_unit() - 0.5) * 0.1);
    /* group ends: some groups empty, the list possibly shorter than E, the total <= M */
    int64_t ends[9], left = M;
    ends[0] = 0;
    for (int64_t g = 0; g < L; g++) {
        const int64_t s = tu_chance(25) ? 0 : tu_int(0, left);
        left -= s;
        ends[g + 1] = ends[g] + s;
    }
    if (tu_chance(50)) ends[L] += left; /* sometimes every row */
    int64_t *glv = malloc(sizeof(int64_t) * (size_t)(L + 1));
    for (int64_t g = 0; g < L; g++) glv[g] = ends[g + 1];
    const int64_t total = ends[L];
    unsigned char *out = tu_poisoned((size_t)(M * H)), *osc = tu_poisoned((size_t)M * 4);

    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, sd[2] = {E, N}, md[1] = {M}, od[2] = {M, H}, gd[1] = {L};
    const int64_t wst[3] = {K * N, cs->wt ? 1 : N, cs->wt ? K : 1}, wsd[1] = {E * K * N > 0 ? E * K * N : 1};
    aclTensor *tx = tu_tensor(xd, 2, ACL_INT8, x);
    aclTensor *tw = aclCreateTensor(wd, 3, ACL_INT8, wst, 0, ACL_FORMAT_ND, wsd, 1, w);
    aclTensor *ts = tu_tensor(sd, 2, (aclDataType)cs->sdt, sv), *txs = tu_tensor(md, 1, ACL_FLOAT, xs);
    aclTensor *tg = tu_tensor(gd, 1, ACL_INT64, glv), *to = tu_tensor(od, 2, ACL_INT8, out);
    aclTensor *tos = tu_tensor(md, 1, ACL_FLOAT, osc);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = cs->nz_entry ? aclnnGroupedMatmulSwigluQuantWeightNZGetWorkspaceSize(
                                        tx, tw, NULL, NULL, ts, txs, tg, to, tos, NULL, &ws, &ex)
                                  : aclnnGroupedMatmulSwigluQuantGetWorkspaceSize(tx, tw, NULL, NULL, ts, txs, tg, to,
                                                                                  tos, NULL, &ws, &ex);
    CHECK(rc == ACLNN_SUCCESS, "M %lld K %lld N %lld E %lld L %lld: phase 1 %d: %s", (long long)M, (long long)K,
          (long long)N, (long long)E, (long long)L, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        void *wsp = ws ? malloc(ws) : NULL;
        rc = cs->nz_entry ? aclnnGroupedMatmulSwigluQuantWeightNZ(wsp, ws, ex, NULL)
                          : aclnnGroupedMatmulSwigluQuant(wsp, ws, ex, NULL);
        CHECK(rc == ACLNN_SUCCESS, "phase 2 %d: %s", rc, tu_msg());
        free(wsp);
        float *c = malloc(sizeof(float) * (size_t)N + 4);
        double *S = malloc(sizeof(double) * (size_t)H + 8);
        for (int64_t g = 0, r = 0; g < L; g++)
            for (; r < ends[g + 1]; r++) {
                for (int64_t n = 0; n < N; n++) {
                    int64_t acc = 0;
                    for (int64_t k = 0; k < K; k++)
                        acc += (int64_t)x[r * K + k] * w[g * K * N + (cs->wt ? n * K + k : k * N + n)];
                    c[n] = mul32(mul32((float)acc, xs[r]), sf[g * N + n]);
                }
                double mx = 0;
                for (int64_t j = 0; j < H; j++) {
                    const double a = c[j], b = c[H + j];
                    S[j] = cs->exact ? (double)mul32(c[j], c[H + j]) : a / (1 + exp(-a)) * b;
                    if (fabs(S[j]) > mx) mx = fabs(S[j]);
                }
                float got_s;
                memcpy(&got_s, osc + 4 * r, 4);
                const float want_s = (float)(mx / 127.0), inv = (float)(1.0 / (double)want_s);
                if (cs->exact)
                    CHECK(memcmp(&got_s, &want_s, 4) == 0, "exact: outputScale[%lld] = %a, want %a", (long long)r,
                          got_s, want_s);
                else
                    CHECK(fabs(got_s - mx / 127.0) <= 1e-5 * mx / 127.0 + 1e-30, "outputScale[%lld] = %g, want %g",
                          (long long)r, got_s, mx / 127.0);
                for (int64_t j = 0; j < H; j++) {
                    const int q = (int8_t)out[r * H + j];
                    const int want = oracle_q((double)(float)(cs->exact ? (double)mul32((float)S[j], inv)
                                                                        : S[j] * (double)inv));
                    g_all_q++;
                    g_exact_q += q == want;
                    if (cs->exact) {
                        CHECK(q == want, "exact: output[%lld][%lld] = %d, want %d (S %a, inv %a)", (long long)r,
                              (long long)j, q, want, S[j], inv);
                    } else {
                        const double v = got_s > 0 ? S[j] / got_s : 0;
                        CHECK(fabs(q - v) <= 0.5 + 0.0313 + 1e-3 * fabs(v), "output[%lld][%lld] = %d, S / scale = %g",
                              (long long)r, (long long)j, q, v);
                    }
                    g_elems++;
                }
            }
        CHECK(tu_all_poison(out + total * H, (size_t)((M - total) * H)), "rows %lld.. past groupList's last value written",
              (long long)total);
        CHECK(tu_all_poison(osc + total * 4, (size_t)(M - total) * 4), "outputScale past row %lld written",
              (long long)total);
        CHECK(tu_guard_ok(out, (size_t)(M * H)) && tu_guard_ok(osc, (size_t)M * 4), "a guard was written");
        free(c), free(S);
    }
    tu_destroy(tx), tu_destroy(tw), tu_destroy(ts), tu_destroy(txs), tu_destroy(tg), tu_destroy(to), tu_destroy(tos);
    free(x), free(w), free(sv), free(sf), free(xs), free(glv), free(out), free(osc);
}

/* ---- refusals: the code, the message, executor NULL, outputs untouched ---- */
typedef struct bad {
    const char *what;
    aclnnStatus want;
    int64_t M, K, N, E, L;
    int x_dt, w_dt, s_dt, xs_dt, gl_dt, o_dt, os_dt;
    int w_fmt, w_nd; /* weight format; w_nd 5: an NZ-shaped weight */
    int64_t bad_dim;  /* which tensor gets a wrong shape: 1 weight, 2 xScale, 3 output, 4 x rank 3 */
    int64_t gl_vals;  /* 0 valid; 1 decreasing; 2 beyond M (phase 2) */
    bool null_x, null_gl, nz_entry;
    const char *msg;
} bad;

static void refusal(const bad *b) {
    const int64_t M = b->M, K = b->K, N = b->N, E = b->E, L = b->L, H = N / 2;
    const size_t big = (size_t)(M * K + E * K * N + 4096);
    unsigned char *xb = calloc(1, big), *wb = calloc(1, big), *sb = calloc(1, (size_t)(E * N) * 4 + 64),
                  *xsb = calloc(1, (size_t)M * 4 + 64);
    unsigned char *ob = tu_poisoned((size_t)(M * (H > 0 ? H : 1)) * 4), *osb = tu_poisoned((size_t)M * 4 + 4);
    int64_t *glv = calloc((size_t)L + 1, 8);
    for (int64_t g = 0; g < L; g++) glv[g] = (g + 1) * M / L;
    if (b->gl_vals == 1 && L >= 2) glv[0] = M, glv[1] = 0;
    if (b->gl_vals == 2) glv[L - 1] = M + 1;
    const int64_t xd[3] = {M, K, 1}, sd[2] = {E, N}, md[1] = {M + (b->bad_dim == 2)}, od[2] = {M, H + (b->bad_dim == 3)},
                  gd[1] = {L}, msd[1] = {M};
    int64_t wd[5] = {E, K + (b->bad_dim == 1), N, 0, 0};
    if (b->w_nd == 5) wd[0] = E, wd[1] = N / 32, wd[2] = K / 16, wd[3] = 16, wd[4] = 32;
    aclTensor *x = b->null_x ? NULL : tu_tensor(xd, b->bad_dim == 4 ? 3 : 2, (aclDataType)b->x_dt, xb);
    aclTensor *w = aclCreateTensor(wd, (uint64_t)b->w_nd, (aclDataType)b->w_dt, NULL, 0, (aclFormat)b->w_fmt, wd,
                                   (uint64_t)b->w_nd, wb);
    aclTensor *s = tu_tensor(sd, 2, (aclDataType)b->s_dt, sb), *xs = tu_tensor(md, 1, (aclDataType)b->xs_dt, xsb);
    aclTensor *gl = b->null_gl ? NULL : tu_tensor(gd, 1, (aclDataType)b->gl_dt, glv);
    aclTensor *o = tu_tensor(od, 2, (aclDataType)b->o_dt, ob), *os = tu_tensor(msd, 1, (aclDataType)b->os_dt, osb);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = b->nz_entry
                         ? aclnnGroupedMatmulSwigluQuantWeightNZGetWorkspaceSize(x, w, NULL, NULL, s, xs, gl, o, os,
                                                                                 NULL, &ws, &ex)
                         : aclnnGroupedMatmulSwigluQuantGetWorkspaceSize(x, w, NULL, NULL, s, xs, gl, o, os, NULL, &ws,
                                                                         &ex);
    if (b->gl_vals) { /* phase 1 passes; phase 2 refuses before writing */
        CHECK(rc == ACLNN_SUCCESS, "%s: phase 1 %d (%s)", b->what, rc, tu_msg());
        void *wsp = ws ? malloc(ws) : NULL;
        if (rc == ACLNN_SUCCESS) rc = aclnnGroupedMatmulSwigluQuant(wsp, ws, ex, NULL);
        free(wsp);
        CHECK(rc == b->want, "%s: phase 2 %d, want %d (%s)", b->what, rc, b->want, tu_msg());
    } else {
        CHECK(rc == b->want && ex == NULL, "%s: got %d, want %d (%s)", b->what, rc, b->want, tu_msg());
    }
    CHECK(tu_msg_has(b->msg, NULL), "%s: message '%s' lacks '%s'", b->what, tu_msg(), b->msg);
    CHECK(tu_all_poison(ob, (size_t)(M * (H > 0 ? H : 1)) * 4) && tu_all_poison(osb, (size_t)M * 4 + 4),
          "%s wrote an output", b->what);
    if (x) tu_destroy(x);
    if (gl) tu_destroy(gl);
    tu_destroy(w), tu_destroy(s), tu_destroy(xs), tu_destroy(o), tu_destroy(os);
    free(xb), free(wb), free(sb), free(xsb), free(ob), free(osb), free(glv);
}

static void refusals(void) {
    enum { I8 = ACL_INT8, F = ACL_FLOAT, HF = ACL_FLOAT16, I64 = ACL_INT64, ND = ACL_FORMAT_ND,
           NZ = ACL_FORMAT_FRACTAL_NZ, P = ACLNN_ERR_PARAM_INVALID, NUL = ACLNN_ERR_PARAM_NULLPTR };
    const bad cases[] = {
        {"x NULL", NUL, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 0, 0, true, false, false, "x is NULL"},
        {"groupList NULL", NUL, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 0, 0, false, true, false,
         "groupList is NULL"},
        {"x rank", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 4, 0, false, false, false, "x must have 2 dims"},
        {"N odd", P, 8, 32, 63, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 0, 0, false, false, false, "not even"},
        {"weight shape", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 1, 0, false, false, false,
         "weight shape must be (2, 32, 64)"},
        {"xScale shape", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 2, 0, false, false, false,
         "xScale shape must be (8)"},
        {"output shape", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 3, 0, false, false, false,
         "output shape must be (8, 32)"},
        {"groupList long", P, 8, 32, 64, 2, 3, I8, I8, F, F, I64, I8, F, ND, 3, 0, 0, false, false, false,
         "more than weight's 2"},
        {"N > 10240", P, 1, 1, 10242, 1, 1, I8, I8, F, F, I64, I8, F, ND, 3, 0, 0, false, false, false, "above 10240"},
        {"K >= 65536", P, 1, 65536, 2, 1, 1, I8, I8, F, F, I64, I8, F, ND, 3, 0, 0, false, false, false,
         "below 65536"},
        {"weightScale INT32", P, 8, 32, 64, 2, 2, I8, I8, ACL_INT32, F, I64, I8, F, ND, 3, 0, 0, false, false, false,
         "weightScale dtype"},
        {"groupList INT32", P, 8, 32, 64, 2, 2, I8, I8, F, F, ACL_INT32, I8, F, ND, 3, 0, 0, false, false, false,
         "groupList dtype must be INT64"},
        {"output FLOAT", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, F, F, ND, 3, 0, 0, false, false, false,
         "output dtype must be INT8"},
        {"x FLOAT16", P, 8, 32, 64, 2, 2, HF, I8, F, F, I64, I8, F, ND, 3, 0, 0, false, false, false,
         "x dtype must be INT8"},
        {"A8W4", P, 8, 32, 64, 2, 2, I8, ACL_INT32, F, F, I64, I8, F, ND, 3, 0, 0, false, false, false, "A8W4"},
        {"NZ weight", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, NZ, 5, 0, 0, false, false, false,
         "FRACTAL_NZ is not yet"},
        {"NZ entry, 5-D", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 5, 0, 0, false, false, true,
         "is not yet read"},
        {"xScale FLOAT16", ACLNN_ERR_INNER_NULLPTR, 8, 32, 64, 2, 2, I8, I8, F, HF, I64, I8, F, ND, 3, 0, 0, false,
         false, false, "has no kernel"},
        {"groupList decreasing", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 0, 1, false, false, false,
         "must not decrease"},
        {"groupList beyond M", P, 8, 32, 64, 2, 2, I8, I8, F, F, I64, I8, F, ND, 3, 0, 2, false, false, false,
         "beyond x's 8 rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) refusal(&cases[i]);
}

/* an output whose rows share memory (stride 0): refused before anything runs (moefr's rule) */
static void overlapping_output(void) {
    const int64_t M = 4, K = 8, N = 4, E = 1, H = N / 2;
    int8_t xb[32] = {1}, wb[32] = {1};
    float sb[4] = {1, 1, 1, 1}, xsb[4] = {1, 1, 1, 1};
    int64_t glv[1] = {4};
    unsigned char *ob = tu_poisoned(8);
    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, sd[2] = {E, N}, md[1] = {M}, od[2] = {M, H}, gd[1] = {1};
    const int64_t ost[2] = {0, 1}, osd[1] = {H};
    float osb[4];
    aclTensor *x = tu_tensor(xd, 2, ACL_INT8, xb), *w = tu_tensor(wd, 3, ACL_INT8, wb);
    aclTensor *s = tu_tensor(sd, 2, ACL_FLOAT, sb), *xs = tu_tensor(md, 1, ACL_FLOAT, xsb);
    aclTensor *gl = tu_tensor(gd, 1, ACL_INT64, glv), *os = tu_tensor(md, 1, ACL_FLOAT, osb);
    aclTensor *o = aclCreateTensor(od, 2, ACL_INT8, ost, 0, ACL_FORMAT_ND, osd, 1, ob);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnGroupedMatmulSwigluQuantGetWorkspaceSize(x, w, NULL, NULL, s, xs, gl, o, os, NULL, &ws, &ex);
    CHECK(rc == ACLNN_ERR_PARAM_INVALID && ex == NULL && tu_msg_has("output has elements that share memory", NULL),
          "overlapping output: %d (%s)", rc, tu_msg());
    CHECK(tu_all_poison(ob, (size_t)H), "overlapping output written");
    tu_destroy(x), tu_destroy(w), tu_destroy(s), tu_destroy(xs), tu_destroy(gl), tu_destroy(os), tu_destroy(o);
    free(ob);
}

/* empty problems: success, workspace 0, nothing written */
static void empties(void) {
    for (int which = 0; which < 2; which++) {
        const int64_t M = which ? 0 : 5, K = 4, N = 6, E = 2, L = which ? 2 : 0, H = N / 2;
        int8_t xb[64] = {0}, wb[64] = {0};
        float sb[16] = {0}, xsb[8] = {0};
        int64_t glv[2] = {0, 0};
        unsigned char *ob = tu_poisoned(64), *osb = tu_poisoned(32);
        const int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, sd[2] = {E, N}, md[1] = {M}, od[2] = {M, H}, gd[1] = {L};
        aclTensor *x = tu_tensor(xd, 2, ACL_INT8, xb), *w = tu_tensor(wd, 3, ACL_INT8, wb);
        aclTensor *s = tu_tensor(sd, 2, ACL_FLOAT, sb), *xs = tu_tensor(md, 1, ACL_FLOAT, xsb);
        aclTensor *gl = tu_tensor(gd, 1, ACL_INT64, glv), *o = tu_tensor(od, 2, ACL_INT8, ob);
        aclTensor *os = tu_tensor(md, 1, ACL_FLOAT, osb);
        uint64_t ws = 1;
        aclOpExecutor *ex = NULL;
        aclnnStatus rc = aclnnGroupedMatmulSwigluQuantGetWorkspaceSize(x, w, NULL, NULL, s, xs, gl, o, os, NULL, &ws, &ex);
        CHECK(rc == ACLNN_SUCCESS && ws == 0, "empty %d: %d ws %llu (%s)", which, rc, (unsigned long long)ws, tu_msg());
        if (rc == ACLNN_SUCCESS) CHECK_RC(aclnnGroupedMatmulSwigluQuant(NULL, 0, ex, NULL), ACLNN_SUCCESS);
        CHECK(tu_all_poison(ob, 64) && tu_all_poison(osb, 32), "empty %d wrote", which);
        tu_destroy(x), tu_destroy(w), tu_destroy(s), tu_destroy(xs), tu_destroy(gl), tu_destroy(o), tu_destroy(os);
        free(ob), free(osb);
    }
}

int main(void) {
    tu_seed("test_grouped_matmul_swiglu_quant");
    const int sdts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    for (int it = 0; it < 40; it++) {
        sq_case c;
        c.E = tu_int(1, 6);
        c.L = tu_chance(30) ? tu_int(1, c.E) : c.E;
        c.M = tu_int(0, 70), c.K = tu_int(1, 200), c.N = 2 * tu_int(1, 90);
        c.exact = it % 2 == 0, c.wt = tu_chance(30), c.nz_entry = tu_chance(30);
        c.sdt = sdts[it % 3];
        c.extreme = false;
        run_case(&c);
    }
    for (int it = 0; it < 4; it++) { /* K over several of the GEMM's 1024-term chunks, sums past 2^24 */
        sq_case c = {tu_int(1, 6), tu_int(1000, 3100), 2 * tu_int(1, 9), tu_int(1, 2), 0, true, it % 2 == 1,
                     it >= 2, true, sdts[it % 3]};
        c.L = c.E;
        run_case(&c);
    }
    refusals();
    overlapping_output();
    empties();
    printf("test_grouped_matmul_swiglu_quant: %d cases, %lld output elements compared (%lld of %lld int8 the oracle's "
           "exactly), %d failures\n",
           g_cases, g_elems, g_exact_q, g_all_q, g_fail);
    if (g_all_q && g_exact_q < g_all_q * 99 / 100) {
        printf("test_grouped_matmul_swiglu_quant: fewer than 99%% of the int8 values are the oracle's\n");
        return 1;
    }
    return g_fail ? 1 : 0;
}
