/* test_swiglu.c - aclnnSwiGlu and aclnnSwiGluGrad against a float64 loop
 * written from the formulas alone (SPEC 10):
 *   out = A * sigmoid(A) * B;  dA = g * (s + s * (1 - s) * A) * B,  dB = g * s * A
 * with A, B the halves of x along dim. Hand-computed values of CANN's
 * example (x = 0..63 as (2, 32), dim -1); random shapes of 1-4 dims, every
 * dim (negative too), half-rows that cross the 1024-element block and are
 * not multiples of any vector width, every dtype, x and yGrad dense, padded,
 * strided and column-major, poisoned outputs with guards; IEEE specials;
 * the four-lane and eight-lane block routines bit for bit; every phase-1
 * rule with its code and the outputs untouched. */
#include <math.h>

#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"
#define TU_COUNT_FAILURES
#include "testutil.h"
#include "ops/act/swiglu.h"
#include "cpu/cpu.h"
/* the block routines' own exp and sigmoid (four lanes), to check the
 * library's table of sigmoid(a) entry by entry */
#define GT_W 4
#define SG_NAME "test"
#define SG_TABLE test_swiglu_ref
#include "ops/act/swiglu_core.h"

static const int DTS[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

static aclnnStatus run_fwd(const aclTensor *x, int64_t dim, const aclTensor *out) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnSwiGluGetWorkspaceSize(x, dim, out, &ws, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    void *w = ws ? malloc(ws) : NULL;
    rc = aclnnSwiGlu(w, ws, e, NULL);
    free(w);
    return rc;
}
static aclnnStatus run_bwd(const aclTensor *dy, const aclTensor *x, int64_t dim, const aclTensor *out) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnSwiGluGradGetWorkspaceSize(dy, x, dim, out, &ws, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    void *w = ws ? malloc(ws) : NULL;
    rc = aclnnSwiGluGrad(w, ws, e, NULL);
    free(w);
    return rc;
}

/* got (already in dtype) against the float64 value want whose terms have
 * magnitude mag: one rounding step of dtype at want plus 4e-6 of mag for
 * the fp32 arithmetic (exp within 2 ulp, a division, three products), plus,
 * when an intermediate is an fp32 subnormal (sigmoid(a) for a below -87, or
 * a product with a subnormal input), its absolute spacing 2^-149 times the
 * factors it is then multiplied by (bounded by `by`). NaN must meet NaN, an
 * infinity the same infinity. */
static double fin(double v) { return isfinite(v) ? fabs(v) : 0.0; }
static int close_to(int dt, double got, double want, double mag, double by) {
    if (isnan(want)) return isnan(got);
    if (isinf(want) || isinf(got)) return got == want || (isinf(got) && fabs(want) > 1e38 && (got > 0) == (want > 0));
    return fabs(got - want) <= fr_quantum(dt, want) + 4e-6 * mag + 4 * 0x1p-149 * by;
}

/* CANN's example, by hand: row 0 is a = 0..15, b = 16..31; row 1 a = 32..47, b = 48..63. */
static void cann_example(void) {
    float x[64], out[32 + 16];
    for (int i = 0; i < 64; i++) x[i] = (float)i;
    memset(out, 0xA5, sizeof out);
    aclTensor *tx = tu_mk(2, 2, 32, 0, ACL_FLOAT, x), *to = tu_mk(2, 2, 16, 0, ACL_FLOAT, out);
    CHECK(run_fwd(tx, -1, to) == ACLNN_SUCCESS, "example: %s", tu_msg());
    /* out[1] = 1 * sigmoid(1) * 17; out[16] = 32 * sigmoid(32) * 48 (sigmoid(32) rounds to 1 in fp32) */
    CHECK(out[0] == 0.0f, "example out[0] = %.9g", out[0]);
    CHECK(fabs(out[1] - 12.42799584) < 2e-6, "example out[1] = %.9g, want 12.427996", out[1]);
    CHECK(out[16] == 1536.0f, "example out[16] = %.9g, want 1536", out[16]);
    CHECK(tu_all_poison((unsigned char *)(out + 32), 64), "example: wrote past out");
    /* SwiGluGrad's example: yGrad = -2..29 (2, 16), x = -2..61 (2, 32) */
    float dy[32], xg[64], g[64];
    for (int i = 0; i < 32; i++) dy[i] = (float)(i - 2);
    for (int i = 0; i < 64; i++) xg[i] = (float)(i - 2);
    aclTensor *tdy = tu_mk(2, 2, 16, 0, ACL_FLOAT, dy), *txg = tu_mk(2, 2, 32, 0, ACL_FLOAT, xg),
              *tg = tu_mk(2, 2, 32, 0, ACL_FLOAT, g);
    CHECK(run_bwd(tdy, txg, -1, tg) == ACLNN_SUCCESS, "grad example: %s", tu_msg());
    /* element 0: a = -2, b = 14, g = -2: s = 1/(1+e^2) */
    const double s = 1.0 / (1.0 + exp(2.0));
    const double da = -2.0 * (s + s * (1 - s) * -2.0) * 14.0, db = -2.0 * s * -2.0;
    CHECK(fabs(g[0] - da) < 1e-5 && fabs(g[16] - db) < 1e-6, "grad example: %.9g %.9g, want %.9g %.9g", g[0], g[16],
          da, db);
    CHECK(g[2] == 0.0f && g[18] == 0.0f, "grad example: g = 0 gives %g %g", g[2], g[18]); /* dy[2] = 0 */
    tu_destroy(tx), tu_destroy(to), tu_destroy(tdy), tu_destroy(txg), tu_destroy(tg);
}

static double val(int dt, int specials) {
    const int c = (int)tu_int(0, 999);
    if (specials && c < 6) {
        static const double sp[6] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40};
        return sp[c];
    }
    if (c < 60) return (tu_unit() - 0.5) * 200.0; /* exp saturates both ways */
    (void)dt;
    return tu_unit() * 8 - 4;
}

/* One random problem: rank 1-4, a split dim, a layout per input. */
static void random_case(int grad, int specials) {
    const int dt = DTS[tu_int(0, 2)], nd = (int)tu_int(1, 4), dim = (int)tu_int(0, nd - 1);
    int64_t xd[4], od[4];
    for (int k = 0; k < nd; k++) xd[k] = tu_int(1, 5);
    static const int64_t halves[] = {1, 3, 7, 9, 17, 1023, 1024, 1025, 2051};
    xd[dim] = 2 * halves[tu_int(0, 8)];
    /* keep the test quick (also under qemu): the long half-rows with few other elements */
    int64_t others = 1;
    for (int k = 0; k < nd; k++) others *= k == dim ? 1 : xd[k];
    if (xd[dim] > 100 && others > 4)
        for (int k = 0; k < nd; k++)
            if (k != dim) xd[k] = 1 + (k == 0);
    memcpy(od, xd, sizeof od);
    od[dim] /= 2;
    int64_t nx = 1, no = 1;
    for (int k = 0; k < nd; k++) nx *= xd[k], no *= od[k];
    const size_t es = fr_size(dt);
    double *xv = malloc(sizeof(double) * (size_t)nx), *gv = malloc(sizeof(double) * (size_t)no);
    unsigned char *xb = malloc((size_t)nx * es), *gb = malloc((size_t)no * es);
    for (int64_t i = 0; i < nx; i++) {
        tu_put(dt, xb, i, val(dt, specials));
        xv[i] = fr_decode(dt, xb, i);
    }
    for (int64_t i = 0; i < no; i++) {
        tu_put(dt, gb, i, val(dt, specials));
        gv[i] = fr_decode(dt, gb, i);
    }
    const int kx = (int)tu_int(0, TU_KINDS - 1), kg = (int)tu_int(0, TU_KINDS - 1);
    /* tu_view lays out up to 3 dims; 4-dim problems stay dense over xb / gb */
    tu_owned tx = {NULL, NULL}, tg = {NULL, NULL};
    if (nd <= 3) tx = tu_view(dt, nd, xd, xb, kx);
    else tx.t = tu_tensor(xd, nd, (aclDataType)dt, xb);
    if (grad && nd <= 3) tg = tu_view(dt, nd, od, gb, kg);
    else if (grad) tg.t = tu_tensor(od, nd, (aclDataType)dt, gb);
    const int64_t nout = grad ? nx : no;
    unsigned char *out = tu_poisoned((size_t)nout * es);
    aclTensor *to = tu_tensor(grad ? xd : od, nd, (aclDataType)dt, out);
    const int64_t sdim = tu_chance(50) ? dim - nd : dim;
    aclnnStatus rc = grad ? run_bwd(tg.t, tx.t, sdim, to) : run_fwd(tx.t, sdim, to);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS, "%s dt %d nd %d dim %lld: %d %s", grad ? "grad" : "fwd", dt, nd, (long long)sdim, rc,
          tu_msg());
    int bad = 0;
    for (int64_t o = 0; o < no && rc == ACLNN_SUCCESS && !bad; o++) {
        int64_t idx[4], rem = o, ia = 0, ib = 0;
        for (int k = nd - 1; k >= 0; k--) idx[k] = rem % od[k], rem /= od[k];
        for (int k = 0; k < nd; k++) {
            ia = ia * xd[k] + idx[k];
            ib = ib * xd[k] + idx[k] + (k == dim ? od[dim] : 0);
        }
        const double a = xv[ia], b = xv[ib], s = 1.0 / (1.0 + exp(-a));
        if (!grad) {
            const double w = a * s * b, got = fr_decode(dt, out, o);
            if (!close_to(dt, got, w, fabs(w), (1 + fin(a)) * (1 + fin(b)))) {
                CHECK(0, "fwd dt %d shape nd %d dim %d: out[%lld] = %.9g, want %.9g (a %g b %g)", dt, nd, dim,
                      (long long)o, got, w, a, b);
                bad = 1;
            }
        } else {
            const double g = gv[o], wa = g * (s + s * (1 - s) * a) * b, wb = g * s * a;
            const double ma = fabs(g * b) * (fabs(s) + fabs(s * (1 - s) * a)), ga = fr_decode(dt, out, ia),
                         gb2 = fr_decode(dt, out, ib);
            const double by = (1 + fin(g)) * (1 + fin(a)) * (1 + fin(b));
            /* g infinite: the kernel forms the finite factor first in fp32, as CANN's does (ops-nn
             * swi_glu_grad_float.hpp: ((s (1 - s)) a + s) * b, then * g; s * a, then * g); where that
             * factor underflows to zero in fp32 (below 2^-140 here, with room for the kernel's own
             * rounding near the threshold), inf * 0 is NaN, and NaN is right as well */
            const int nan_a = isinf(g) && fabs((s + s * (1 - s) * a) * b) < 0x1p-140 && isnan(ga);
            const int nan_b = isinf(g) && fabs(s * a) < 0x1p-140 && isnan(gb2);
            if (!(nan_a || close_to(dt, ga, wa, ma, by)) || !(nan_b || close_to(dt, gb2, wb, fabs(wb), by))) {
                CHECK(0, "grad dt %d nd %d dim %d at %lld: dA %.9g want %.9g, dB %.9g want %.9g (a %g b %g g %g)", dt,
                      nd, dim, (long long)o, ga, wa, gb2, wb, a, b, g);
                bad = 1;
            }
        }
    }
    CHECK(tu_guard_ok(out, (size_t)nout * es), "%s: wrote past out", grad ? "grad" : "fwd");
    tu_free(&tx), tu_free(&tg), tu_destroy(to);
    free(out), free(xv), free(gv), free(xb), free(gb);
}

/* A dense (R, 2H) problem whose output is past the streaming-store
 * threshold, against the same rows run as problems of 64 rows (below it: the
 * ordinary stores, which the random cases check against the float64 oracle):
 * the same bits, every element written, nothing past the end. */
static void big_case(int dt, int grad, int64_t R, int64_t H) {
    const size_t es = fr_size(dt);
    const int64_t nx = R * 2 * H, nout = grad ? nx : R * H, ow = grad ? 2 * H : H;
    unsigned char *xb = malloc((size_t)nx * es), *gb = grad ? malloc((size_t)(R * H) * es) : NULL;
    unsigned char *out = tu_poisoned((size_t)nout * es), *ref = tu_poisoned((size_t)nout * es);
    /* random values in 61 rows, repeated (the 64-row problems see them shifted) */
    for (int64_t i = 0; i < nx; i++) {
        if (i < 61 * 2 * H) tu_put(dt, xb, i, val(dt, 1));
        else memcpy(xb + i * es, xb + (i - 61 * 2 * H) * es, es);
    }
    for (int64_t i = 0; grad && i < R * H; i++) {
        if (i < 61 * H) tu_put(dt, gb, i, val(dt, 1));
        else memcpy(gb + i * es, gb + (i - 61 * H) * es, es);
    }
    for (int64_t r0 = -1; r0 < R; r0 += r0 < 0 ? 1 : 64) { /* -1: all R rows at once */
        const int64_t rows = r0 < 0 ? R : (R - r0 < 64 ? R - r0 : 64), o0 = r0 < 0 ? 0 : r0;
        const int64_t dx[2] = {rows, 2 * H}, dh[2] = {rows, H}, dof[2] = {rows, ow};
        aclTensor *tx = tu_tensor(dx, 2, (aclDataType)dt, xb + (size_t)(o0 * 2 * H) * es);
        aclTensor *tg = grad ? tu_tensor(dh, 2, (aclDataType)dt, gb + (size_t)(o0 * H) * es) : NULL;
        aclTensor *to = tu_tensor(dof, 2, (aclDataType)dt, (r0 < 0 ? out : ref) + (size_t)(o0 * ow) * es);
        const aclnnStatus rc = grad ? run_bwd(tg, tx, 1, to) : run_fwd(tx, -1, to);
        CHECK(rc == ACLNN_SUCCESS, "big %s dt %d rows %lld: %d %s", grad ? "grad" : "fwd", dt, (long long)rows, rc,
              tu_msg());
        tu_destroy(tx), tu_destroy(to);
        if (tg) tu_destroy(tg);
    }
    CHECK(memcmp(out, ref, (size_t)nout * es) == 0, "big %s dt %d (%lld, %lld): streaming stores give other bits",
          grad ? "grad" : "fwd", dt, (long long)R, (long long)(2 * H));
    CHECK(tu_guard_ok(out, (size_t)nout * es), "big %s: wrote past out", grad ? "grad" : "fwd");
    g_cases++;
    free(xb), free(gb), free(out), free(ref);
}

/* The block routines of every width this CPU runs (generic four lanes; on
 * x86 AVX2 eight and AVX-512 sixteen). */
static int sg_widths(const sg_routines **out) {
    int n = 0;
    out[n++] = &mf_swiglu_generic;
#if defined(MOEFR_X86_KERNELS)
    const unsigned f = mf_cpu_features();
    if (f & MF_CPU_AVX2) out[n++] = &mf_swiglu_avx2;
    else printf("test_swiglu: no AVX2 here: its width is compared where it runs (not counted)\n");
    if (f & MF_CPU_AVX512) out[n++] = &mf_swiglu_avx512;
    else printf("test_swiglu: no AVX-512 here: its width is compared where it runs (not counted)\n");
    if ((f & MF_CPU_AVX512) && (f & MF_CPU_AVX512BF16)) out[n++] = &mf_swiglu_avx512bf16;
    else printf("test_swiglu: no AVX512-BF16 here: its routines are compared where they run (not counted)\n");
#endif
    return n;
}

/* Every width gives the generic routines' bits, specials included, on
 * lengths that end inside a block (n = 4096 - 16: SG_B is 128). */
static void widths_agree(void) {
    enum { N = 4080 };
    static float a[N], b[N], g[N], o1[N], o2[N], p1[N], p2[N];
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)tu_next();
        if (i % 3 == 0) memcpy(&a[i], &u, 4); /* any bit pattern: NaNs, infinities, subnormals */
        else if (i % 3 == 1) a[i] = (float)((tu_unit() - 0.5) * 250); /* past exp's -104 cut, subnormal e */
        else a[i] = (float)((tu_unit() - 0.5) * 20);
        b[i] = (float)(tu_unit() * 4 - 2);
        g[i] = (float)(tu_unit() * 4 - 2);
    }
    const sg_routines *ws[4];
    const int nw = sg_widths(ws);
    mf_swiglu_generic.fwd(a, b, o1, N);
    mf_swiglu_generic.bwd(a, b, g, p1, p2, N);
    for (int k = 1; k < nw; k++) {
        memset(o2, 0xA5, sizeof o2);
        ws[k]->fwd(a, b, o2, N);
        CHECK(memcmp(o1, o2, sizeof o1) == 0, "forward: generic and %s bits differ", ws[k]->name);
        static float q1[N], q2[N];
        ws[k]->bwd(a, b, g, q1, q2, N);
        CHECK(memcmp(p1, q1, sizeof p1) == 0 && memcmp(p2, q2, sizeof p2) == 0, "backward: generic and %s bits differ",
              ws[k]->name);
    }
    g_cases++;
}

/* The vector bfloat16 rounding of the outputs: hand-made ties (to even both
 * ways), NaN kept quiet, infinities and any bit pattern against the scalar
 * mf_f32_to_bf16, on every width, tails included (n = 4093). */
static void bf16_narrowing(void) {
    enum { N = 4093 };
    static float s[N];
    static uint16_t want[N], got[N];
    static const uint32_t hand[][2] = {{0x3F808000u, 0x3F80u}, {0x3F818000u, 0x3F82u}, {0x3F807FFFu, 0x3F80u},
                                       {0x3F808001u, 0x3F81u}, {0x7F7F8000u, 0x7F80u}, {0x7F800000u, 0x7F80u},
                                       {0xFF800001u, 0xFFC0u}, {0x00008000u, 0x0000u}, {0x80018000u, 0x8002u}};
    const int nh = (int)(sizeof hand / sizeof hand[0]);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)tu_next();
        if (i < nh) u = hand[i][0];
        else if (i % 4 == 1) u = (u & 0xFFFF0000u) | 0x8000u; /* a tie */
        memcpy(&s[i], &u, 4);
        want[i] = i < nh ? (uint16_t)hand[i][1] : mf_f32_to_bf16(s[i]);
    }
    for (int i = 0; i < nh; i++)
        CHECK(mf_f32_to_bf16(s[i]) == hand[i][1], "bf16 of %08x: %04x, want %04x", (unsigned)hand[i][0],
              (unsigned)mf_f32_to_bf16(s[i]), (unsigned)hand[i][1]);
    const sg_routines *ws[4];
    const int nw = sg_widths(ws);
    for (int k = 0; k < nw; k++) {
        memset(got, 0, sizeof got);
        ws[k]->narrow(s, (char *)got, N);
        CHECK(memcmp(got, want, sizeof got) == 0, "%s bf16 narrowing differs from mf_f32_to_bf16", ws[k]->name);
    }
    /* the bfloat16 routines are the fp32 ones on widened inputs, rounded
     * once; and every width gives the generic one's bits */
    static uint16_t a16[N], b16[N], g16[N], f16o[N], f16p[N];
    static float aw[N], bw[N], gw[N], fo[N], fp[N];
    static uint16_t w1[N], w2[N];
    for (int i = 0; i < N; i++) {
        a16[i] = (uint16_t)(i % 5 == 0 ? tu_next() : mf_f32_to_bf16((float)((tu_unit() - 0.5) * 40)));
        b16[i] = mf_f32_to_bf16((float)(tu_unit() * 4 - 2)), g16[i] = mf_f32_to_bf16((float)(tu_unit() * 4 - 2));
        aw[i] = mf_bf16_to_f32(a16[i]), bw[i] = mf_bf16_to_f32(b16[i]), gw[i] = mf_bf16_to_f32(g16[i]);
    }
    const int64_t nv = N & ~15;
    mf_swiglu_generic.fwd(aw, bw, fo, nv);
    mf_swiglu_generic.narrow(fo, (char *)w1, nv);
    mf_swiglu_generic.fwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (char *)f16o, nv);
    CHECK(memcmp(w1, f16o, (size_t)nv * 2) == 0, "fwd16 differs from the fp32 routine rounded to bf16");
    mf_swiglu_generic.bwd(aw, bw, gw, fo, fp, nv);
    mf_swiglu_generic.narrow(fo, (char *)w1, nv);
    mf_swiglu_generic.narrow(fp, (char *)w2, nv);
    mf_swiglu_generic.bwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (const char *)g16, (char *)f16o, (char *)f16p, nv);
    CHECK(memcmp(w1, f16o, (size_t)nv * 2) == 0 && memcmp(w2, f16p, (size_t)nv * 2) == 0,
          "bwd16 differs from the fp32 routine rounded to bf16");
    mf_swiglu_generic.fwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (char *)f16o, nv);
    mf_swiglu_generic.bwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (const char *)g16, (char *)w2, (char *)f16p, nv);
    for (int k = 1; k < nw; k++) {
        static uint16_t v1[N], v2[N], v3[N];
        ws[k]->fwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (char *)v1, nv);
        CHECK(memcmp(v1, f16o, (size_t)nv * 2) == 0, "fwd16: generic and %s bits differ", ws[k]->name);
        ws[k]->bwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (const char *)g16, (char *)v2, (char *)v3, nv);
        CHECK(memcmp(v2, w2, (size_t)nv * 2) == 0 && memcmp(v3, f16p, (size_t)nv * 2) == 0,
              "bwd16: generic and %s bits differ", ws[k]->name);
    }
    g_cases++;
}

/* mf_swiglu_sig16() holds, bit for bit, the sigmoid the fp32 routines compute
 * for each of the 65536 bfloat16 a (NaN patterns included). */
static void sig16_table(void) {
    const float *tab = mf_swiglu_sig16();
    _Alignas(64) float a[SG_B], v[SG_B], t[SG_B], s[SG_B];
    int bad = 0;
    for (int h0 = 0; h0 < 65536; h0 += SG_B) {
        for (int i = 0; i < SG_B; i++) a[i] = mf_bf16_to_f32((uint16_t)(h0 + i));
        sg_exp_block(a, v, t, SG_B);
        for (int i = 0; i < SG_B; i += GT_W) gv_store(s + i, sg_sigmoid(gv_load(a + i), gv_load(v + i)));
        for (int i = 0; i < SG_B; i++)
            if (memcmp(&s[i], &tab[h0 + i], 4) != 0 && bad++ < 5)
                CHECK(0, "sigmoid table at bits %04x: %a, computed %a", h0 + i, (double)tab[h0 + i], (double)s[i]);
    }
    CHECK(bad == 0, "%d of the 65536 table entries differ from the computed sigmoid", bad);
    g_cases++;
}

/* The 16-bit routines look sigmoid(a) up (mf_swiglu_sig16): for every one of
 * the 65536 bfloat16 a, with b and g of both signs and several magnitudes,
 * each width's bf16 forward and backward equal the computed fp32 routines
 * (the generic width) on the widened values, rounded once. */
static void sig16_every_a(void) {
    enum { N = 65536 };
    static uint16_t a16[N], b16[N], g16[N], w1[N], w2[N], v1[N], v2[N], v3[N];
    static float aw[N], bw[N], gw[N], fo[N], fp[N];
    static const float bs[] = {1.0f, -0.375f, 3.0e-38f, 65504.0f};
    const sg_routines *ws[4];
    const int nw = sg_widths(ws);
    int bad = 0;
    for (int r = 0; r < (int)(sizeof bs / sizeof bs[0]); r++) {
        for (int i = 0; i < N; i++) {
            a16[i] = (uint16_t)i;
            b16[i] = mf_f32_to_bf16(bs[r] * (float)(1 + i % 7));
            g16[i] = mf_f32_to_bf16((i & 1 ? -1.5f : 0.75f) / (float)(1 + r));
            aw[i] = mf_bf16_to_f32(a16[i]), bw[i] = mf_bf16_to_f32(b16[i]), gw[i] = mf_bf16_to_f32(g16[i]);
        }
        mf_swiglu_generic.fwd(aw, bw, fo, N);
        mf_swiglu_generic.narrow(fo, (char *)w1, N);
        for (int k = 0; k < nw && bad < 5; k++) {
            memset(v1, 0xA5, sizeof v1);
            ws[k]->fwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (char *)v1, N);
            for (int i = 0; i < N && bad < 5; i++)
                if (v1[i] != w1[i]) {
                    CHECK(0, "%s fwd16, a bits %04x b %g: %04x, computed %04x", ws[k]->name, i, (double)bw[i],
                          (unsigned)v1[i], (unsigned)w1[i]);
                    bad++;
                }
        }
        mf_swiglu_generic.bwd(aw, bw, gw, fo, fp, N);
        mf_swiglu_generic.narrow(fo, (char *)w1, N);
        mf_swiglu_generic.narrow(fp, (char *)w2, N);
        for (int k = 0; k < nw && bad < 5; k++) {
            memset(v2, 0xA5, sizeof v2), memset(v3, 0xA5, sizeof v3);
            ws[k]->bwd16(mf_swiglu_sig16(), (const char *)a16, (const char *)b16, (const char *)g16, (char *)v2,
                         (char *)v3, N);
            for (int i = 0; i < N && bad < 5; i++)
                if (v2[i] != w1[i] || v3[i] != w2[i]) {
                    CHECK(0, "%s bwd16, a bits %04x: %04x %04x, computed %04x %04x", ws[k]->name, i, (unsigned)v2[i],
                          (unsigned)v3[i], (unsigned)w1[i], (unsigned)w2[i]);
                    bad++;
                }
        }
    }
    CHECK(bad == 0, "the looked-up sigmoid differs from the computed one (first mismatches above)");
    g_cases++;
}

#define P1(call, want)                                                                                      \
    do {                                                                                                    \
        aclOpExecutor *e_ = NULL;                                                                           \
        uint64_t ws_ = 0;                                                                                   \
        aclnnStatus rc_ = (call);                                                                           \
        CHECK(rc_ == (want), "line %d: %s gave %d, want %d (%s)", __LINE__, #call, rc_, want, tu_msg());    \
        CHECK(rc_ == ACLNN_SUCCESS || tu_msg_has(NULL), "line %d: no one-line message", __LINE__);          \
        if (rc_ == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e_);                                              \
        (void)ws_;                                                                                          \
    } while (0)
#define FWD(x, d, o, want) P1(aclnnSwiGluGetWorkspaceSize(x, d, o, &ws_, &e_), want)
#define BWD(g, x, d, o, want) P1(aclnnSwiGluGradGetWorkspaceSize(g, x, d, o, &ws_, &e_), want)

static void validation(void) {
    float xb[24], ob[24 + 16], gb[24];
    memset(xb, 0, sizeof xb), memset(gb, 0, sizeof gb);
    memset(ob, 0xA5, sizeof ob);
    aclTensor *x = tu_mk(2, 4, 6, 0, ACL_FLOAT, xb), *o = tu_mk(2, 4, 3, 0, ACL_FLOAT, ob),
              *g = tu_mk(2, 4, 3, 0, ACL_FLOAT, gb), *ox = tu_mk(2, 4, 6, 0, ACL_FLOAT, ob);
    aclTensor *xh = tu_mk(2, 4, 6, 0, ACL_FLOAT16, xb), *xi = tu_mk(2, 4, 6, 0, ACL_INT32, xb),
              *x5 = tu_mk(2, 4, 5, 0, ACL_FLOAT, xb), *o5 = tu_mk(2, 4, 2, 0, ACL_FLOAT, ob),
              *obad = tu_mk(2, 4, 4, 0, ACL_FLOAT, ob), *o2 = tu_mk(2, 2, 6, 0, ACL_FLOAT, ob),
              *xe = tu_mk(2, 0, 6, 0, ACL_FLOAT, xb), *oe = tu_mk(2, 0, 3, 0, ACL_FLOAT, ob);
    const int64_t td[2] = {4, 3}, ts[2] = {1, 4}, sd[1] = {12};
    aclTensor *onc = aclCreateTensor(td, 2, ACL_FLOAT, ts, 0, ACL_FORMAT_ND, sd, 1, ob); /* a transposed out */
    {
        aclOpExecutor *e_ = NULL;
        uint64_t ws_ = 0;
        CHECK(aclnnSwiGluGetWorkspaceSize(NULL, -1, o, &ws_, &e_) == ACLNN_ERR_PARAM_NULLPTR &&
                  tu_msg_has("aclnnSwiGlu", "x", NULL),
              "NULL x: %s", tu_msg());
    }
    FWD(x, -1, NULL, ACLNN_ERR_PARAM_NULLPTR);
    FWD(xh, -1, o, ACLNN_ERR_PARAM_INVALID); /* dtypes differ */
    FWD(xi, -1, o, ACLNN_ERR_PARAM_INVALID); /* int32 */
    FWD(x, 2, o, ACLNN_ERR_PARAM_INVALID);   /* dim out of range */
    FWD(x, -3, o, ACLNN_ERR_PARAM_INVALID);
    FWD(x5, -1, o5, ACLNN_ERR_INNER_TILING_ERROR); /* odd split */
    FWD(x, -1, obad, ACLNN_ERR_INNER_TILING_ERROR); /* out's shape */
    FWD(x, 0, o, ACLNN_ERR_INNER_TILING_ERROR);     /* (4, 6) split on dim 0 is (2, 6) */
    FWD(x, 0, o2, ACLNN_SUCCESS);
    FWD(x, -1, onc, ACLNN_ERR_PARAM_INVALID); /* out must be contiguous */
    FWD(x, -2, o2, ACLNN_SUCCESS);
    FWD(xe, -1, oe, ACLNN_SUCCESS); /* empty */
    FWD(xe, 7, oe, ACLNN_SUCCESS);  /* empty output: success before the shape rules, as CANN's engine */
    BWD(NULL, x, -1, ox, ACLNN_ERR_PARAM_NULLPTR);
    BWD(g, x, -1, ox, ACLNN_SUCCESS);
    BWD(g, x, -1, o, ACLNN_ERR_INNER_TILING_ERROR);  /* out must be x's shape */
    BWD(ox, x, -1, ox, ACLNN_ERR_INNER_TILING_ERROR); /* yGrad must be x's with dim halved */
    BWD(g, x, 3, ox, ACLNN_ERR_PARAM_INVALID);
    BWD(g, xh, -1, ox, ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_all_poison((unsigned char *)ob, sizeof ob), "a refused or planned call wrote out");
    /* phase 2 of the empty problem writes nothing */
    CHECK(run_fwd(xe, -1, oe) == ACLNN_SUCCESS && tu_all_poison((unsigned char *)ob, sizeof ob), "empty run");
    aclTensor *all[] = {x, o, g, ox, xh, xi, x5, o5, obad, o2, xe, oe, onc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_destroy(all[i]);
}

int main(void) {
    tu_seed("test_swiglu");
    cann_example();
    validation();
    widths_agree();
    bf16_narrowing();
    sig16_table();
    sig16_every_a();
    for (int i = 0; i < 200; i++) random_case(i & 1, i % 5 == 0);
    /* outputs past 32 MiB (mf_nt_threshold's cap): the dense rows leave by
     * streaming stores; half-rows of 8200 end in a tail off the vectors */
    big_case(ACL_FLOAT, 0, 1025, 8200);
    big_case(ACL_BF16, 0, 2049, 8200);
    big_case(ACL_FLOAT, 1, 513, 8200);
    big_case(ACL_BF16, 1, 1025, 8200);
    printf("test_swiglu: %d cases, %d checks, %d failures\n", g_cases, g_checks, g_fail);
    return g_fail != 0;
}
