/* test_grouped_matmul_quant.c - GroupedMatmul V4's A8W8 rows (int8 x and
 * weight; SPEC 11) against an oracle written from CANN's formulas alone:
 *   INT32 out:          y = x @ w (+ bias), summed exactly in int64 then taken mod 2^32;
 *   BF16 / FLOAT16 out: y = round(fp32(fp32(fp32(acc) * scale[n]) * perTokenScale[m])),
 *                       each product of two fp32 values formed exactly in float64 and rounded once.
 * Random shapes with tails (no multiple of a vector width), random group lists with empty groups and
 * totals short of x's rows (rows past them stay poisoned), one (E, K, N) weight dense or transposed, or
 * lists of 2-D tensors (groupType -1); then every refusal of the rows, outputs untouched. */
#include <math.h>

#include "aclnnop/aclnn_grouped_matmul_v4.h"
#define TU_COUNT_FAILURES
#include "fwd_ref.h"
#include "testutil.h"

static long long g_elems;
static bool g_kbig; /* K past several of the library's 1024-term chunks */

/* A dense or transposed int8 matrix (2-D or 3-D) with its values. */
typedef struct qmat {
    int nd;
    int64_t dims[3], st[3], n;
    int8_t *buf;
} qmat;

static qmat qmat_new(int nd, const int64_t *dims, bool transposed, int extreme) {
    qmat m;
    memset(&m, 0, sizeof m);
    m.nd = nd;
    m.n = 1;
    for (int d = 0; d < nd; d++) m.dims[d] = dims[d], m.n *= dims[d];
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) m.st[d] = s, s *= dims[d] > 0 ? dims[d] : 1;
    if (transposed) { /* (..., K, N) over (..., N, K) memory */
        m.st[nd - 2] = 1;
        m.st[nd - 1] = dims[nd - 2] > 0 ? dims[nd - 2] : 1;
    }
    m.buf = malloc((size_t)(m.n ? m.n : 1));
    for (int64_t i = 0; i < m.n; i++)
        m.buf[i] = extreme == 2 ? 127 : extreme ? (int8_t)(tu_chance(50) ? -128 : 127) : (int8_t)tu_int(-128, 127);
    return m;
}
/* element [b][r][c] (b ignored for 2-D) */
static int64_t qat(const qmat *m, int64_t b, int64_t r, int64_t c) {
    const int64_t off = m->nd == 3 ? b * m->st[0] + r * m->st[1] + c * m->st[2] : r * m->st[0] + c * m->st[1];
    return m->buf[off];
}
static aclTensor *qtensor(const qmat *m) {
    const int64_t sd[1] = {m->n ? m->n : 1};
    return aclCreateTensor(m->dims, (uint64_t)m->nd, ACL_INT8, m->st, 0, ACL_FORMAT_ND, sd, 1, m->buf);
}

static uint16_t bits16(const void *p, int64_t i) {
    uint16_t h;
    memcpy(&h, (const char *)p + 2 * i, 2);
    return h;
}
static float f32_at(const void *p, int64_t i) {
    float f;
    memcpy(&f, (const char *)p + 4 * i, 4);
    return f;
}

/* The oracle's value of out[r][c] in fp32 (before the last rounding) from the exact accumulator. */
static float deq(int64_t acc32, float s, const float *pt, int64_t r) {
    float v = (float)((double)(float)acc32 * (double)s); /* int32 -> fp32 is exact or rounds once, as C's */
    if (pt) v = (float)((double)v * (double)pt[r]);
    return v;
}
static int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* One M-split call: x (M, K), weight (E, K, N), optional bias (E, N) INT32, out INT32 / BF16 / FLOAT16. */
static void m_split_case(int out_dt, bool per_token, bool bias, bool wt, int list_type, int extreme) {
    g_cases++;
    const int64_t E = tu_int(1, 7), K = g_kbig ? tu_int(2049, 2600) : tu_int(1, 150), N = tu_int(1, 130),
                  M = g_kbig ? tu_int(1, 40) : tu_int(0, 260);
    const int64_t xd[2] = {M, K}, wd[3] = {E, K, N};
    qmat x = qmat_new(2, xd, false, extreme), w = qmat_new(3, wd, wt, extreme);
    /* group sizes: random, some empty, total <= M */
    int64_t sizes[8], ends[9], list[8], left = M;
    ends[0] = 0;
    for (int64_t e = 0; e < E; e++) {
        sizes[e] = tu_chance(20) ? 0 : tu_int(0, left);
        left -= sizes[e];
        ends[e + 1] = ends[e] + sizes[e];
        list[e] = list_type == 0 ? ends[e + 1] : sizes[e];
    }
    int32_t *bv = malloc(sizeof(int32_t) * (size_t)(E * N));
    for (int64_t i = 0; i < E * N; i++) bv[i] = (int32_t)tu_int(-(1 << 20), 1 << 20);
    const int sdt = out_dt == ACL_BF16 ? ACL_BF16 : out_dt == ACL_INT8 ? ACL_UINT64 : ACL_FLOAT;
    unsigned char *sv = malloc((size_t)(E * N) * 8);
    float *sf = malloc(sizeof(float) * (size_t)(E * N)); /* the scales' values */
    int *so = calloc((size_t)(E * N), sizeof(int)); /* INT8 out: the 9-bit offsets */
    for (int64_t i = 0; i < E * N; i++) {
        const double v = (tu_unit() + 0.25) * pow(2.0, (double)tu_int(-14, -4)) * (tu_chance(50) ? 1 : -1);
        if (sdt == ACL_UINT64) { /* fp32 bits in the low word (all of them: the fixpipe reads the top 19), bit 46,
                                    and sometimes a 9-bit offset at bit 37 (npu_trans_quant_param's layout) */
            const float f = (float)(v * 256);
            uint32_t b;
            memcpy(&b, &f, 4);
            so[i] = tu_chance(40) ? (int)tu_int(-256, 255) : 0;
            const uint64_t word = (uint64_t)b | (1ull << 46) | (((uint64_t)so[i] & 0x1FFu) << 37);
            memcpy(sv + i * 8, &word, 8);
            const uint32_t t = b & 0xFFFFE000u;
            memcpy(&sf[i], &t, 4);
        } else {
            tu_put(sdt == ACL_BF16 ? FR_BF16 : FR_F32, sv, i, v);
            sf[i] = sdt == ACL_BF16 ? (float)fr_decode(FR_BF16, sv, i) : f32_at(sv, i);
        }
    }
    float *pt = malloc(sizeof(float) * (size_t)(M ? M : 1));
    for (int64_t i = 0; i < M; i++) pt[i] = (float)(tu_unit() * 0.02 + 1e-4);
    const size_t oes = out_dt == ACL_INT32 ? 4 : out_dt == ACL_INT8 ? 1 : 2;
    unsigned char *out = tu_poisoned((size_t)(M * N) * oes);
    int64_t *glv = malloc(sizeof(int64_t) * (size_t)E);
    memcpy(glv, list, sizeof(int64_t) * (size_t)E);

    aclTensor *xt = qtensor(&x), *wtn = qtensor(&w);
    const int64_t bd[2] = {E, N}, od[2] = {M, N}, ptd[1] = {M};
    aclTensor *bt = bias ? tu_tensor(bd, 2, ACL_INT32, bv) : NULL;
    aclTensor *st = out_dt == ACL_INT32 && tu_chance(50) ? NULL : tu_tensor(bd, 2, (aclDataType)sdt, sv);
    aclTensor *ptt = per_token ? tu_tensor(ptd, 1, ACL_FLOAT, pt) : NULL;
    aclTensor *gl = tu_mk(1, E, 1, 1, ACL_INT64, glv);
    aclTensor *ot = tu_tensor(od, 2, (aclDataType)out_dt, out);
    aclTensorList *xl = aclCreateTensorList((const aclTensor *const *)&xt, 1);
    aclTensorList *wl = aclCreateTensorList((const aclTensor *const *)&wtn, 1);
    aclTensorList *bl = bt ? aclCreateTensorList((const aclTensor *const *)&bt, 1) : NULL;
    aclTensorList *sl = st ? aclCreateTensorList((const aclTensor *const *)&st, 1) : NULL;
    aclTensorList *pl = ptt ? aclCreateTensorList((const aclTensor *const *)&ptt, 1) : NULL;
    aclTensorList *yl = aclCreateTensorList((const aclTensor *const *)&ot, 1);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(xl, wl, bl, sl, NULL, NULL, NULL, pl, gl, NULL, NULL, NULL, 3,
                                                          0, list_type, 0, yl, NULL, NULL, &ws, &ex);
    CHECK(rc == ACLNN_SUCCESS, "m split E %lld K %lld N %lld M %lld out %d: phase 1 %d: %s", (long long)E, (long long)K,
          (long long)N, (long long)M, out_dt, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        void *wsp = ws ? malloc(ws) : NULL;
        rc = aclnnGroupedMatmulV4(wsp, ws, ex, NULL);
        CHECK(rc == ACLNN_SUCCESS, "phase 2 %d: %s", rc, tu_msg());
        free(wsp);
        int bad = 0;
        for (int64_t e = 0; e < E && !bad; e++)
            for (int64_t r = ends[e]; r < ends[e + 1] && !bad; r++)
                for (int64_t c = 0; c < N && !bad; c++) {
                    int64_t acc = 0;
                    for (int64_t k = 0; k < K; k++) acc += qat(&x, 0, r, k) * qat(&w, e, k, c);
                    if (bias) acc += bv[e * N + c];
                    const int32_t a32 = wrap32(acc);
                    if (out_dt == ACL_INT32) {
                        int32_t got;
                        memcpy(&got, out + (r * N + c) * 4, 4);
                        bad = got != a32;
                        CHECK(!bad, "int32 out[%lld][%lld] = %d, want %d", (long long)r, (long long)c, got, a32);
                    } else if (out_dt == ACL_INT8) { /* fp32(acc) * scale19, nearest (ties even), + offset, saturate */
                        const double v = (double)(float)((double)(float)a32 * (double)sf[e * N + c]);
                        double q = floor(v);
                        const double frac = v - q;
                        if (frac > 0.5 || (frac == 0.5 && fmod(q, 2.0) != 0)) q += 1;
                        q += so[e * N + c];
                        const int want = q < -128 ? -128 : q > 127 ? 127 : (int)q;
                        const int got = (int8_t)out[r * N + c];
                        bad = got != want;
                        CHECK(!bad, "int8 out[%lld][%lld] = %d, want %d (acc %d, scale %.9g, offset %d)", (long long)r,
                              (long long)c, got, want, a32, sf[e * N + c], so[e * N + c]);
                    } else {
                        const float v = deq(a32, sf[e * N + c], per_token ? pt : NULL, r);
                        const uint16_t want = (uint16_t)fr_round(out_dt == ACL_BF16 ? FR_BF16 : FR_F16, (double)v);
                        const uint16_t got = bits16(out, r * N + c);
                        bad = got != want;
                        CHECK(!bad, "%s out[%lld][%lld] = 0x%04x, want 0x%04x (acc %d, fp32 %.9g)",
                              out_dt == ACL_BF16 ? "bf16" : "fp16", (long long)r, (long long)c, got, want, a32, v);
                    }
                    g_elems++;
                }
        /* rows past the groups' total: untouched */
        CHECK(tu_all_poison(out + ends[E] * N * oes, (size_t)((M - ends[E]) * N) * oes),
              "rows %lld.. past the group list's total were written", (long long)ends[E]);
        CHECK(tu_guard_ok(out, (size_t)(M * N) * oes), "out's guard was written");
    }
    aclDestroyTensorList(xl), aclDestroyTensorList(wl), aclDestroyTensorList(yl);
    if (bl) aclDestroyTensorList(bl);
    if (sl) aclDestroyTensorList(sl);
    if (pl) aclDestroyTensorList(pl);
    tu_destroy(gl);
    free(x.buf), free(w.buf), free(bv), free(sv), free(sf), free(so), free(pt), free(out), free(glv);
}

/* groupType -1: lists of x (m_i, k_i), weight (k_i, n_i), scale (n_i), out (m_i, n_i). */
static void list_case(int out_dt) {
    g_cases++;
    enum { G = 3 };
    qmat x[G], w[G];
    int64_t m[G], k[G], n[G];
    unsigned char *out[G], *sv[G];
    float *sf[G];
    aclTensor *xt[G], *wt[G], *ot[G], *st[G];
    const int sdt = out_dt == ACL_BF16 ? ACL_BF16 : ACL_FLOAT;
    const size_t oes = out_dt == ACL_INT32 ? 4 : 2;
    for (int i = 0; i < G; i++) {
        m[i] = tu_int(0, 40), k[i] = tu_int(1, 70), n[i] = tu_int(1, 45);
        const int64_t xd[2] = {m[i], k[i]}, wd[2] = {k[i], n[i]}, od[2] = {m[i], n[i]}, sd[1] = {n[i]};
        x[i] = qmat_new(2, xd, false, 0);
        w[i] = qmat_new(2, wd, tu_chance(50) && false, 0);
        out[i] = tu_poisoned((size_t)(m[i] * n[i]) * oes);
        sv[i] = malloc((size_t)n[i] * 4);
        sf[i] = malloc(sizeof(float) * (size_t)n[i]);
        for (int64_t j = 0; j < n[i]; j++) {
            tu_put(sdt == ACL_BF16 ? FR_BF16 : FR_F32, sv[i], j, (tu_unit() - 0.5) / 256);
            sf[i][j] = sdt == ACL_BF16 ? (float)fr_decode(FR_BF16, sv[i], j) : f32_at(sv[i], j);
        }
        xt[i] = qtensor(&x[i]), wt[i] = qtensor(&w[i]);
        ot[i] = tu_tensor(od, 2, (aclDataType)out_dt, out[i]);
        st[i] = tu_tensor(sd, 1, (aclDataType)sdt, sv[i]);
    }
    aclTensorList *xl = aclCreateTensorList((const aclTensor *const *)xt, G);
    aclTensorList *wl = aclCreateTensorList((const aclTensor *const *)wt, G);
    aclTensorList *yl = aclCreateTensorList((const aclTensor *const *)ot, G);
    aclTensorList *sl = aclCreateTensorList((const aclTensor *const *)st, G);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(xl, wl, NULL, sl, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                                          NULL, 0, -1, 0, 0, yl, NULL, NULL, &ws, &ex);
    CHECK(rc == ACLNN_SUCCESS, "lists out %d: phase 1 %d: %s", out_dt, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        void *wsp = ws ? malloc(ws) : NULL;
        CHECK_RC(aclnnGroupedMatmulV4(wsp, ws, ex, NULL), ACLNN_SUCCESS);
        free(wsp);
        for (int i = 0; i < G; i++)
            for (int64_t r = 0; r < m[i]; r++)
                for (int64_t c = 0; c < n[i]; c++) {
                    int64_t acc = 0;
                    for (int64_t q = 0; q < k[i]; q++) acc += qat(&x[i], 0, r, q) * qat(&w[i], 0, q, c);
                    if (out_dt == ACL_INT32) {
                        int32_t got;
                        memcpy(&got, out[i] + (r * n[i] + c) * 4, 4);
                        CHECK(got == wrap32(acc), "list %d int32 [%lld][%lld] = %d, want %lld", i, (long long)r,
                              (long long)c, got, (long long)acc);
                    } else {
                        const uint16_t want = (uint16_t)fr_round(out_dt == ACL_BF16 ? FR_BF16 : FR_F16,
                                                                 (double)deq(wrap32(acc), sf[i][c], NULL, 0));
                        CHECK(bits16(out[i], r * n[i] + c) == want, "list %d [%lld][%lld] = 0x%04x, want 0x%04x", i,
                              (long long)r, (long long)c, bits16(out[i], r * n[i] + c), want);
                    }
                    g_elems++;
                }
    }
    aclDestroyTensorList(xl), aclDestroyTensorList(wl), aclDestroyTensorList(yl), aclDestroyTensorList(sl);
    for (int i = 0; i < G; i++) free(x[i].buf), free(w[i].buf), free(out[i]), free(sv[i]), free(sf[i]);
}

/* ---- the A16W8 rows: x FLOAT16 / BF16 (M, K), weight INT8 (E, K, N), antiquant scale and offset (E, N) ----
 * The weight's dequantized value follows AscendAntiQuant: fp16 x: round16(round16(w + o) * s); bf16 x:
 * bf16(fp32(fp32(w + o) * s)). The product with x is fp32 in the BLAS's order, so the output is compared
 * with the float64 sum within (K + 2) 2^-24 sum |x w| plus one rounding of out's dtype. */
static double aq_weight(int dt, int64_t w, double o, double s) {
    if (dt == ACL_FLOAT16) {
        const uint16_t a = (uint16_t)fr_round(FR_F16, (double)w + o);
        const double av = fr_decode(FR_F16, &a, 0);
        const uint16_t b = (uint16_t)fr_round(FR_F16, av * s);
        return fr_decode(FR_F16, &b, 0);
    }
    const float a = (float)((double)w + o); /* offsets here keep the sum exact in double: one rounding */
    const float b = (float)((double)a * s);
    const uint16_t h = (uint16_t)fr_round(FR_BF16, (double)b);
    return fr_decode(FR_BF16, &h, 0);
}

/* int4 weights travel as INT32, eight values each along N, the first in the lowest nibble:
 * (E, K, N / 8) INT32 holding the (E, K, N) values v[e][k][n] in [-8, 7]. */
static int32_t *pack_int4(const int8_t *v, int64_t E, int64_t K, int64_t N) {
    int32_t *p = calloc((size_t)(E * K * (N / 8)) + 1, 4);
    for (int64_t i = 0; i < E * K * N; i++) {
        const int64_t row = i / N, n = i % N;
        uint32_t *word = (uint32_t *)&p[row * (N / 8) + n / 8];
        *word |= ((uint32_t)v[i] & 0xFu) << (4 * (n % 8));
    }
    return p;
}

static void antiquant_case(int dt, bool bias, bool wt, bool int4, bool grouped) {
    g_cases++;
    const int fr = dt == ACL_BF16 ? FR_BF16 : FR_F16;
    const int64_t G = grouped ? tu_int(1, 4) : 1; /* K groups of the antiquant parameters */
    const int64_t E = tu_int(1, 5), K = G * tu_int(1, 90 / G + 1), N = int4 ? 8 * tu_int(1, 9) : tu_int(1, 70),
                  M = tu_int(0, 120);
    if (int4) wt = false;
    const int64_t wd[3] = {E, K, N};
    qmat w = qmat_new(3, wd, wt, 0);
    int32_t *w4 = NULL;
    if (int4) {
        for (int64_t i = 0; i < w.n; i++) w.buf[i] = (int8_t)tu_int(-8, 7);
        w4 = pack_int4(w.buf, E, K, N);
    }
    unsigned char *x = malloc((size_t)(M * K) * 2 + 2), *aqs = malloc((size_t)(E * G * N) * 2),
                  *aqo = malloc((size_t)(E * G * N) * 2);
    for (int64_t i = 0; i < M * K; i++) tu_put(fr, x, i, (tu_unit() - 0.5) * 4);
    for (int64_t i = 0; i < E * G * N; i++) {
        tu_put(fr, aqs, i, (tu_unit() + 0.1) / 64 * (tu_chance(50) ? 1 : -1));
        tu_put(fr, aqo, i, tu_chance(30) ? 0.0 : (tu_unit() - 0.5) * 16);
    }
    const int bdt = dt == ACL_BF16 ? ACL_FLOAT : ACL_FLOAT16;
    unsigned char *bv = malloc((size_t)(E * N) * 4);
    for (int64_t i = 0; i < E * N; i++) tu_put(bdt == ACL_FLOAT ? FR_F32 : FR_F16, bv, i, tu_unit() - 0.5);
    int64_t sizes[5], ends[6], left = M;
    ends[0] = 0;
    for (int64_t e = 0; e < E; e++) {
        sizes[e] = tu_chance(20) ? 0 : tu_int(0, left);
        left -= sizes[e];
        ends[e + 1] = ends[e] + sizes[e];
    }
    int64_t *glv = malloc(sizeof(int64_t) * (size_t)E);
    memcpy(glv, sizes, sizeof(int64_t) * (size_t)E);
    unsigned char *out = tu_poisoned((size_t)(M * N) * 2);
    const int64_t xd[2] = {M, K}, sd[2] = {E, N}, gd[3] = {E, G, N}, od[2] = {M, N}, w4d[3] = {E, K, N / 8};
    aclTensor *xt = tu_tensor(xd, 2, (aclDataType)dt, x), *wtn = int4 ? tu_tensor(w4d, 3, ACL_INT32, w4) : qtensor(&w);
    aclTensor *st = grouped ? tu_tensor(gd, 3, (aclDataType)dt, aqs) : tu_tensor(sd, 2, (aclDataType)dt, aqs);
    aclTensor *ot0 = grouped ? tu_tensor(gd, 3, (aclDataType)dt, aqo) : tu_tensor(sd, 2, (aclDataType)dt, aqo);
    aclTensor *bt = bias ? tu_tensor(sd, 2, (aclDataType)bdt, bv) : NULL;
    aclTensor *gl = tu_mk(1, E, 1, 1, ACL_INT64, glv), *yt = tu_tensor(od, 2, (aclDataType)dt, out);
    aclTensorList *xl = aclCreateTensorList((const aclTensor *const *)&xt, 1);
    aclTensorList *wl = aclCreateTensorList((const aclTensor *const *)&wtn, 1);
    aclTensorList *sl = aclCreateTensorList((const aclTensor *const *)&st, 1);
    aclTensorList *ol = aclCreateTensorList((const aclTensor *const *)&ot0, 1);
    aclTensorList *bl = bt ? aclCreateTensorList((const aclTensor *const *)&bt, 1) : NULL;
    aclTensorList *yl = aclCreateTensorList((const aclTensor *const *)&yt, 1);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(xl, wl, bl, NULL, NULL, sl, ol, NULL, gl, NULL, NULL, NULL, 3,
                                                          0, 1, 0, yl, NULL, NULL, &ws, &ex);
    CHECK(rc == ACLNN_SUCCESS, "antiquant %s int4 %d groups %lld: phase 1 %d: %s", dt == ACL_BF16 ? "bf16" : "fp16",
          int4, (long long)G, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        void *wsp = ws ? malloc(ws) : NULL;
        CHECK_RC(aclnnGroupedMatmulV4(wsp, ws, ex, NULL), ACLNN_SUCCESS);
        free(wsp);
        double *wq = malloc(sizeof(double) * (size_t)(K * N + 1));
        int bad = 0;
        for (int64_t e = 0; e < E && !bad; e++) {
            for (int64_t k = 0; k < K; k++)
                for (int64_t c = 0; c < N; c++)
                    wq[k * N + c] = aq_weight(dt, qat(&w, e, k, c), fr_decode(fr, aqo, (e * G + k / (K / G)) * N + c),
                                              fr_decode(fr, aqs, (e * G + k / (K / G)) * N + c));
            for (int64_t r = ends[e]; r < ends[e + 1] && !bad; r++)
                for (int64_t c = 0; c < N && !bad; c++) {
                    double ref = 0, mag = 0;
                    for (int64_t k = 0; k < K; k++) {
                        const double pr = fr_decode(fr, x, r * K + k) * wq[k * N + c];
                        ref += pr, mag += fabs(pr);
                    }
                    if (bias) {
                        const double b = fr_decode(bdt == ACL_FLOAT ? FR_F32 : FR_F16, bv, e * N + c);
                        ref += b, mag += fabs(b);
                    }
                    const double got = fr_decode(fr, out, r * N + c);
                    const double tol = (double)(K + 2) * 0x1p-24 * mag +
                                       fabs(ref) * (dt == ACL_BF16 ? 0x1p-8 : 0x1p-11) + 0x1p-24;
                    bad = !(fabs(got - ref) <= tol);
                    CHECK(!bad, "antiquant %s out[%lld][%lld] = %.9g, want %.9g within %.3g",
                          dt == ACL_BF16 ? "bf16" : "fp16", (long long)r, (long long)c, got, ref, tol);
                    g_elems++;
                }
        }
        CHECK(tu_all_poison(out + ends[E] * N * 2, (size_t)((M - ends[E]) * N) * 2), "antiquant: rows past the total written");
        free(wq);
    }
    aclDestroyTensorList(xl), aclDestroyTensorList(wl), aclDestroyTensorList(sl), aclDestroyTensorList(ol);
    aclDestroyTensorList(yl);
    if (bl) aclDestroyTensorList(bl);
    tu_destroy(gl);
    free(w.buf), free(w4), free(x), free(aqs), free(aqo), free(bv), free(glv), free(out);
}

/* ---- refusals: phase 1 codes, messages, nothing written ---- */
typedef struct bad_call {
    int x_dt, w_dt, out_dt, scale_dt, pt_dt, bias_dt;
    int64_t pt_len, gt, act;
    bool offset;
    int antiquant; /* 1: an antiquant scale, 2: scale and offset */
    bool x_list_mixed;
    const char *msg;
} bad_call;

static void refusal(const bad_call *b) {
    const int64_t M = 9, K = 5, N = 7, E = 2;
    int64_t xd[2] = {M, K}, wd[3] = {E, K, N}, sd[2] = {E, N}, od[2] = {M, N}, ptd[1] = {b->pt_len}, gl[2] = {4, 9};
    if (b->gt == 2) xd[0] = M, wd[0] = K; /* shapes do not matter: the dtype rules come first */
    unsigned char *xb = calloc(1, 4096), *wb = calloc(1, 4096), *sb = calloc(1, 4096), *pb = calloc(1, 4096),
                  *bb = calloc(1, 4096), *ob = tu_poisoned((size_t)(M * N) * 4);
    int64_t *glv = malloc(sizeof gl);
    memcpy(glv, gl, sizeof gl);
    aclTensor *x = tu_tensor(xd, 2, (aclDataType)b->x_dt, xb), *w = tu_tensor(wd, 3, (aclDataType)b->w_dt, wb);
    aclTensor *o = tu_tensor(od, 2, (aclDataType)b->out_dt, ob);
    aclTensor *s = b->scale_dt >= 0 ? tu_tensor(sd, 2, (aclDataType)b->scale_dt, sb) : NULL;
    aclTensor *p = b->pt_dt >= 0 ? tu_tensor(ptd, 1, (aclDataType)b->pt_dt, pb) : NULL;
    const int64_t bd[2] = {E, N};
    aclTensor *bias = b->bias_dt >= 0 ? tu_tensor(bd, 2, (aclDataType)b->bias_dt, bb) : NULL;
    aclTensor *off = b->offset ? tu_tensor(sd, 2, ACL_FLOAT, sb) : NULL;
    const int aqdt = b->x_dt == ACL_BF16 ? ACL_BF16 : ACL_FLOAT16;
    aclTensor *aq = b->antiquant ? tu_tensor(sd, 2, (aclDataType)aqdt, sb) : NULL;
    aclTensor *aqo = b->antiquant == 2 ? tu_tensor(sd, 2, (aclDataType)aqdt, sb) : NULL;
    aclTensor *xs[2] = {x, NULL};
    aclTensor *x2 = NULL;
    int nx = 1;
    if (b->x_list_mixed) {
        const int64_t x2d[2] = {3, K};
        x2 = tu_tensor(x2d, 2, ACL_FLOAT16, pb);
        xs[1] = x2, nx = 2;
    }
    aclTensorList *xl = aclCreateTensorList((const aclTensor *const *)xs, (uint64_t)nx);
    aclTensorList *wl = aclCreateTensorList((const aclTensor *const *)&w, 1);
    aclTensorList *yl = aclCreateTensorList((const aclTensor *const *)&o, 1);
    aclTensorList *sl = s ? aclCreateTensorList((const aclTensor *const *)&s, 1) : NULL;
    aclTensorList *pl = p ? aclCreateTensorList((const aclTensor *const *)&p, 1) : NULL;
    aclTensorList *bl = bias ? aclCreateTensorList((const aclTensor *const *)&bias, 1) : NULL;
    aclTensorList *ol = off ? aclCreateTensorList((const aclTensor *const *)&off, 1) : NULL;
    aclTensorList *al = aq ? aclCreateTensorList((const aclTensor *const *)&aq, 1) : NULL;
    aclTensorList *aol = aqo ? aclCreateTensorList((const aclTensor *const *)&aqo, 1) : NULL;
    aclTensor *glt = tu_mk(1, 2, 1, 1, ACL_INT64, glv);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(xl, wl, bl, sl, ol, al, aol, pl, glt, NULL, NULL, NULL, 3,
                                                          b->gt, 0, b->act, yl, NULL, NULL, &ws, &ex);
    CHECK(rc == ACLNN_ERR_PARAM_INVALID && ex == NULL, "refusal '%s': got %d (%s)", b->msg, rc, tu_msg());
    CHECK(tu_msg_has(b->msg, NULL), "refusal: message '%s' lacks '%s'", tu_msg(), b->msg);
    CHECK(tu_all_poison(ob, (size_t)(M * N) * 4), "refusal '%s' wrote out", b->msg);
    aclDestroyTensorList(xl), aclDestroyTensorList(wl), aclDestroyTensorList(yl);
    if (sl) aclDestroyTensorList(sl);
    if (pl) aclDestroyTensorList(pl);
    if (bl) aclDestroyTensorList(bl);
    if (ol) aclDestroyTensorList(ol);
    if (al) aclDestroyTensorList(al);
    if (aol) aclDestroyTensorList(aol);
    tu_destroy(glt);
    free(xb), free(wb), free(sb), free(pb), free(bb), free(ob), free(glv);
}

static void refusals(void) {
    enum { I8 = ACL_INT8, BF = ACL_BF16, HF = ACL_FLOAT16, F = ACL_FLOAT, I32 = ACL_INT32, NONE = -1 };
    const bad_call cases[] = {
        {I8, I8, I8, ACL_UINT64, F, NONE, 9, 0, 0, false, false, false, "per-token"},
        {I8, I8, ACL_FLOAT, BF, NONE, NONE, 9, 0, 0, false, false, false, "must be INT8, INT32, FLOAT16 or BF16"},
        {I8, I8, BF, NONE, NONE, NONE, 9, 0, 0, false, false, false, "scaleOptional is required"},
        {I8, I8, BF, F, NONE, NONE, 9, 0, 0, false, false, false, "BF16 scale with BF16"},
        {I8, I8, HF, BF, F, NONE, 9, 0, 0, false, false, false, "per-token"},
        {I8, I8, BF, BF, HF, NONE, 9, 0, 0, false, false, false, "perTokenScaleOptional[0] dtype must be FLOAT"},
        {I8, I8, BF, BF, F, NONE, 8, 0, 0, false, false, false, "perTokenScaleOptional must be (9)"},
        {I8, I8, BF, BF, NONE, NONE, 9, 2, 0, false, false, false, "does not split K"},
        {I8, I8, BF, BF, NONE, NONE, 9, 0, 0, true, false, false, "offsetOptional must be NULL"},
        {I8, I8, BF, BF, NONE, NONE, 9, 0, 0, false, true, false, "antiquantScaleOptional must be NULL"},
        {I8, I8, BF, BF, NONE, NONE, 9, 0, 1, false, false, false, "actType 1"},
        {I8, I8, BF, BF, NONE, BF, 9, 0, 0, false, false, false, "BF16 biasOptional"},
        {I8, I8, I32, NONE, NONE, ACL_FLOAT, 9, 0, 0, false, false, false, "biasOptional[0] dtype must be INT32"},
        {I8, I8, BF, BF, NONE, NONE, 9, 0, 0, false, false, true, "x[1] dtype must be INT8"},
        {HF, I8, HF, NONE, NONE, NONE, 9, 0, 0, false, false, false, "antiquantScaleOptional is required"},
        {HF, I8, HF, NONE, NONE, NONE, 9, 0, 0, false, 1, false, "antiquantOffsetOptional is required"},
        {BF, I8, BF, BF, NONE, NONE, 9, 0, 0, false, 2, false, "must be NULL with an INT8 weight"},
        {HF, I8, HF, NONE, NONE, NONE, 9, 0, 1, false, 2, false, "antiquant rows take no activation"},
        {HF, I8, HF, NONE, NONE, NONE, 9, 2, 0, false, 2, false, "does not split K"},
        {BF, BF, BF, BF, NONE, NONE, 9, 0, 0, false, false, false, "quantized GroupedMatmul takes INT8 x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) refusal(&cases[i]);
}

int main(void) {
    tu_seed("test_grouped_matmul_quant");
    const int outs[4] = {ACL_INT32, ACL_BF16, ACL_FLOAT16, ACL_INT8};
    for (int it = 0; it < 32; it++) {
        const int out = outs[it % 4];
        m_split_case(out, (out == ACL_BF16 || out == ACL_FLOAT16) && tu_chance(60), tu_chance(50), tu_chance(40),
                     (int)tu_int(0, 1), it % 8 == 7);
    }
    g_kbig = true; /* extreme values: every 1024-term partial sum at its largest, 2^24 */
    for (int it = 0; it < 4; it++) m_split_case(outs[it % 4], false, it % 2 == 0, false, 1, 1);
    /* all 127: odd products whose sums need 25 bits past 2048 terms (a chunk too long would round) */
    m_split_case(ACL_INT32, false, false, false, 1, 2);
    g_kbig = false;
    for (int it = 0; it < 6; it++) list_case(outs[it % 3]);
    for (int it = 0; it < 24; it++)
        antiquant_case(it % 2 ? ACL_BF16 : ACL_FLOAT16, tu_chance(50), tu_chance(40), it >= 8, it >= 16);
    refusals();
    printf("test_grouped_matmul_quant: %d cases, %lld output elements compared, %d failures\n", g_cases, g_elems, g_fail);
    return g_fail ? 1 : 0;
}
