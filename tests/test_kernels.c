/* test_kernels.c - every kernel table this CPU can run against the scalar one,
 * bit for bit, and the scalar one against independent references in here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "cpu/cpu.h"
#include "kernels/fp.h"
#include "kernels/kernels.h"
#include "moefr/moefr.h"
#include "ref_dot.h"
#include "ref_fp.h"

static int g_fail;
#define FAIL(...)                                                        \
    do {                                                                 \
        fprintf(stderr, "test_kernels: " __VA_ARGS__);                   \
        fputc('\n', stderr);                                             \
        if (++g_fail > 20) exit(1);                                      \
    } while (0)

static uint64_t g_rng;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static float f_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t u_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void build_tabs(void) { ref_build_tabs(); }
static float val16(int fmt, uint16_t h) { return (float)ref_val16(fmt, h); }

/* ---- random inputs with special values ---- */
/* 0: a quarter special values (most gradScales blocks then fail the range
 * test: the fp64 path); 1: plain values (the fp32 blocks); 2: values near
 * 2^-63, whose products straddle the test's 2^-126 threshold. */
static int g_mode;
static float rnd_val(int dt) {
    if (g_mode == 2)
        return (float)ldexp((rnd() & 1 ? 1.0 : -1.0) * (1.0 + (rnd() % 128) / 128.0), -58 - (int)(rnd() % 10));
    uint32_t c = g_mode == 1 ? 31 : rnd() % 32;
    switch (c) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return f_of(0x7FC00000u | (rnd() & 0x3FFFFF)); /* quiet NaN with payload */
    case 5: return f_of(0x00000001u + rnd() % 0x7FFFFF);   /* fp32 subnormal */
    case 6: return ldexp(1.0 + (rnd() % 1024) / 1024.0, -14 - (int)(rnd() % 12)); /* fp16 subnormal range */
    case 7: return (rnd() & 1 ? 1 : -1) * (60000.0f + (float)(rnd() % 8000)); /* near fp16 overflow */
    case 8: return f_of(0x00800000u - 1u - rnd() % 0x8000); /* just below fp32 normal: bf16 subnormal rounding */
    default: break;
    }
    float v = (float)((double)(int32_t)rnd() / 2147483648.0 * ldexp(1.0, (int)(rnd() % 20) - 10));
    (void)dt;
    return v;
}

/* Element j of a dt buffer as fp32 (via the independent decoder). */
static float get(int dt, const void *p, size_t j) {
    if (dt == MF_F32) return ((const float *)p)[j];
    return val16(dt == MF_BF16, ((const uint16_t *)p)[j]);
}
static void put(int dt, void *p, size_t j, float v) {
    if (dt == MF_F32) ((float *)p)[j] = v;
    else {
        uint16_t h = ref_round16(dt == MF_BF16, v);
        if (h == 0xFFFF) h = dt == MF_BF16 ? 0x7FC1 : 0x7E01; /* NaN input */
        ((uint16_t *)p)[j] = h;
    }
}
static size_t esz(int dt) { return dt == MF_F32 ? 4 : 2; }
static const char *dtn[] = {"f32", "f16", "bf16"};

/* scalar table vs the independent references */
static void check_scalar_reference(int dt, size_t n, const void *g, float s, const void *x, const void *b) {
    const mf_ukernels *u = &mf_ukernels_scalar;
    size_t es = esz(dt);
    char *out = malloc(n * es + 1);
    memset(out, 0xA5, n * es + 1);
    u->scale[dt](g, s, out, n);
    for (size_t j = 0; j < n; j++) {
        float p = (float)((double)get(dt, g, j) * (double)s); /* exact product, rounded once to fp32 */
        if (p != p) {
            if (get(dt, out, j) == get(dt, out, j)) FAIL("scalar scale %s n=%zu j=%zu: want NaN", dtn[dt], n, j);
            continue;
        }
        if (dt == MF_F32) {
            if (u_of(((float *)out)[j]) != u_of(p)) FAIL("scalar scale f32 j=%zu", j);
        } else if (((uint16_t *)out)[j] != ref_round16(dt == MF_BF16, p)) {
            FAIL("scalar scale %s j=%zu: got %04x want %04x (product %a)", dtn[dt], j, ((uint16_t *)out)[j],
                 ref_round16(dt == MF_BF16, p), p);
        }
    }
    if ((unsigned char)out[n * es] != 0xA5) FAIL("scalar scale %s wrote past n=%zu", dtn[dt], n);
    double acc[8] = {0}, want[8] = {0};
    u->dot[dt](x, b, g, n, acc);
    double *vx = malloc(n * sizeof(double) + 8), *vb = malloc(n * sizeof(double) + 8),
           *vg = malloc(n * sizeof(double) + 8);
    for (size_t j = 0; j < n; j++) vx[j] = get(dt, x, j), vb[j] = get(dt, b, j), vg[j] = get(dt, g, j);
    ref_dot_canon(dt == MF_F16, dt == MF_BF16, vx, vb, vg, (int64_t)n, want); /* the documented order (ref_dot.h) */
    free(vx), free(vb), free(vg);
    for (int l = 0; l < 8; l++)
        if (memcmp(&acc[l], &want[l], 8) != 0 && !(acc[l] != acc[l] && want[l] != want[l]))
            FAIL("scalar dot %s n=%zu lane %d: %a vs %a", dtn[dt], n, l, acc[l], want[l]);
    free(out);
}

/* Equal bits, except that two NaNs match: where two NaNs meet, which payload
 * wins depends on operand order, which C compilers may swap. */
static int same_bits_dt(int dt, const void *a, const void *b, size_t bytes) {
    size_t es = esz(dt);
    for (size_t o = 0; o + es <= bytes; o += es) {
        if (memcmp((const char *)a + o, (const char *)b + o, es) == 0) continue;
        uint32_t u = 0, v = 0;
        memcpy(&u, (const char *)a + o, es), memcpy(&v, (const char *)b + o, es);
        float fa = dt == MF_F32 ? f_of(u) : val16(dt == MF_BF16, (uint16_t)u);
        float fb = dt == MF_F32 ? f_of(v) : val16(dt == MF_BF16, (uint16_t)v);
        if (!(fa != fa && fb != fb)) return 0;
    }
    return memcmp((const char *)a + bytes / es * es, (const char *)b + bytes / es * es, bytes % es) == 0;
}
static int same_acc(const double *a, const double *b) {
    for (int l = 0; l < 8; l++)
        if (memcmp(&a[l], &b[l], 8) != 0 && !(a[l] != a[l] && b[l] != b[l])) return 0;
    return 1;
}

/* table t vs scalar, every slot, for one size and alignment */
static void check_table(const mf_ukernels *t, const char *tname, int dt, size_t n, size_t mis) {
    /* C11 aligned_alloc wants a size that is a multiple of the alignment (ASan enforces it) */
    size_t es = esz(dt), cap = ((n + 64) * es + 63) / 64 * 64;
    char *bg = aligned_alloc(64, cap), *bx = aligned_alloc(64, cap), *bb = aligned_alloc(64, cap);
    char *o1 = aligned_alloc(64, cap), *o2 = aligned_alloc(64, cap);
    char *g = bg + mis * es, *x = bx + ((mis * 3) % 16) * es, *b = bb + ((mis * 5) % 16) * es;
    for (size_t j = 0; j < n; j++) put(dt, g, j, rnd_val(dt)), put(dt, x, j, rnd_val(dt)), put(dt, b, j, rnd_val(dt));
    /* NaN scales with payloads whose bf16 rounding would carry (0x7FFFFFFF
     * into the sign, 0xFFC18000 into the payload): a product of a finite g
     * keeps them, so a store that skips its NaN test shows */
    const float svals[] = {1.0f,   -0.0f, 0.0f, INFINITY, NAN, 1e-40f, 3.0f, 2.5e38f, 0.1f, -7.25f,
                           -INFINITY, f_of(0x7FFFFFFFu), f_of(0xFFC18000u)};
    const size_t nsv = sizeof svals / sizeof svals[0];
    float s = rnd() % 2 ? svals[rnd() % nsv] : rnd_val(MF_F32);
    if (t == &mf_ukernels_scalar) check_scalar_reference(dt, n, g, s, x, b);
    size_t omis = (mis * 7) % 32;
    /* scale */
    memset(o1, 0x5A, cap), memset(o2, 0x5A, cap);
    mf_ukernels_scalar.scale[dt](g, s, o1 + omis * es, n);
    t->scale[dt](g, s, o2 + omis * es, n);
    if (!same_bits_dt(dt, o1, o2, cap)) FAIL("%s scale %s n=%zu mis=%zu s=%a differs", tname, dtn[dt], n, mis, s);
    /* dot with every presence pattern, from non-zero starting sums */
    for (int pat = 1; pat < 4; pat++) {
        double a1[8], a2[8];
        for (int l = 0; l < 8; l++) a1[l] = a2[l] = (double)rnd_val(MF_F32) * 1e-3;
        const void *xx = pat & 2 ? x : NULL, *bbp = pat & 1 ? b : NULL;
        mf_ukernels_scalar.dot[dt](xx, bbp, g, n, a1);
        t->dot[dt](xx, bbp, g, n, a2);
        if (!same_acc(a1, a2)) FAIL("%s dot %s n=%zu mis=%zu pattern %d differs", tname, dtn[dt], n, mis, pat);
    }
    /* fused, all 8 patterns, both store kinds */
    for (int pat = 0; pat < 8; pat++)
        for (int nt = 0; nt < 2; nt++) {
            size_t om = nt && (rnd() & 1) ? 0 : omis; /* aligned streaming and the fallback */
            double a1[8], a2[8];
            for (int l = 0; l < 8; l++) a1[l] = a2[l] = (double)(l + 1);
            memset(o1, 0x5A, cap), memset(o2, 0x5A, cap);
            void *out1 = pat & 4 ? o1 + om * es : NULL, *out2 = pat & 4 ? o2 + om * es : NULL;
            const void *xx = pat & 2 ? x : NULL, *bbp = pat & 1 ? b : NULL;
            mf_ukernels_scalar.scale_dot[dt](g, s, out1, xx, bbp, n, a1, nt);
            t->scale_dot[dt](g, s, out2, xx, bbp, n, a2, nt);
            t->fence();
            if (!same_bits_dt(dt, o1, o2, cap) || !same_acc(a1, a2))
                FAIL("%s scale_dot %s n=%zu mis=%zu pattern %d nt=%d differs", tname, dtn[dt], n, mis, pat, nt);
        }
    /* multi-slot: q kept slots over the same g, each with its own rows (one
     * misalignment per size keeps the run short) */
    for (int q = 1; q <= MF_MULTI && mis == n % 4; q++)
        for (int withb = 0; withb < 2; withb++) {
            int nt = (int)(rnd() & 1);
            char *m1 = aligned_alloc(64, cap * (size_t)q), *m2 = aligned_alloc(64, cap * (size_t)q);
            char *mxs = aligned_alloc(64, cap * (size_t)q), *mbs = aligned_alloc(64, cap * (size_t)q);
            void *o1p[MF_MULTI], *o2p[MF_MULTI];
            const void *xp[MF_MULTI], *bp[MF_MULTI];
            float sv[MF_MULTI];
            double a1[MF_MULTI][8], a2[MF_MULTI][8];
            memset(m1, 0x5A, cap * (size_t)q), memset(m2, 0x5A, cap * (size_t)q);
            for (int i = 0; i < q; i++) {
                size_t om = nt && i % 2 == 0 ? 0 : (omis + (size_t)i) % 32; /* some aligned, some not */
                o1p[i] = m1 + cap * (size_t)i + om * es, o2p[i] = m2 + cap * (size_t)i + om * es;
                char *xi = mxs + cap * (size_t)i + (size_t)i % 3 * es, *bi = mbs + cap * (size_t)i + (size_t)i % 5 * es;
                for (size_t j = 0; j < n; j++) put(dt, xi, j, rnd_val(dt)), put(dt, bi, j, rnd_val(dt));
                xp[i] = xi, bp[i] = bi;
                sv[i] = i == 0 ? s : rnd_val(MF_F32);
                for (int l = 0; l < 8; l++) a1[i][l] = a2[i][l] = (double)rnd_val(MF_F32);
            }
            mf_ukernels_scalar.scale_dot_multi[dt](g, n, q, sv, o1p, xp, withb ? bp : NULL, a1, nt);
            t->scale_dot_multi[dt](g, n, q, sv, o2p, xp, withb ? bp : NULL, a2, nt);
            t->fence();
            int ok = same_bits_dt(dt, m1, m2, cap * (size_t)q);
            for (int i = 0; i < q; i++) ok = ok && same_acc(a1[i], a2[i]);
            if (!ok) FAIL("%s scale_dot_multi %s n=%zu q=%d bias=%d nt=%d differs", tname, dtn[dt], n, q, withb, nt);
            free(m1), free(m2), free(mxs), free(mbs);
        }
    /* unrelated rows: q rows each with its own g, x, bias and out */
    for (int q = 1; q <= MF_ROWS && mis == n % 4; q++)
        for (int withb = 0; withb < 2; withb++) {
            int nt = (int)(rnd() & 1);
            char *m1 = aligned_alloc(64, cap * (size_t)q), *m2 = aligned_alloc(64, cap * (size_t)q);
            char *mgs = aligned_alloc(64, cap * (size_t)q);
            char *mxs = aligned_alloc(64, cap * (size_t)q), *mbs = aligned_alloc(64, cap * (size_t)q);
            void *o1p[MF_ROWS], *o2p[MF_ROWS];
            const void *gp[MF_ROWS], *xp[MF_ROWS], *bp[MF_ROWS];
            float sv[MF_ROWS];
            double a1[MF_ROWS][8], a2[MF_ROWS][8];
            memset(m1, 0x5A, cap * (size_t)q), memset(m2, 0x5A, cap * (size_t)q);
            for (int i = 0; i < q; i++) {
                size_t om = nt && i % 2 == 0 ? 0 : (omis + (size_t)i) % 32;
                o1p[i] = m1 + cap * (size_t)i + om * es, o2p[i] = m2 + cap * (size_t)i + om * es;
                char *gi = mgs + cap * (size_t)i + (size_t)i % 2 * es;
                char *xi = mxs + cap * (size_t)i + (size_t)i % 3 * es, *bi = mbs + cap * (size_t)i + (size_t)i % 5 * es;
                for (size_t j = 0; j < n; j++)
                    put(dt, gi, j, rnd_val(dt)), put(dt, xi, j, rnd_val(dt)), put(dt, bi, j, rnd_val(dt));
                gp[i] = gi, xp[i] = xi, bp[i] = bi;
                sv[i] = rnd_val(MF_F32);
                for (int l = 0; l < 8; l++) a1[i][l] = a2[i][l] = (double)rnd_val(MF_F32);
            }
            mf_ukernels_scalar.scale_dot_rows[dt](n, q, gp, sv, o1p, xp, withb ? bp : NULL, a1, nt);
            t->scale_dot_rows[dt](n, q, gp, sv, o2p, xp, withb ? bp : NULL, a2, nt);
            t->fence();
            int ok = same_bits_dt(dt, m1, m2, cap * (size_t)q);
            for (int i = 0; i < q; i++) ok = ok && same_acc(a1[i], a2[i]);
            if (!ok) FAIL("%s scale_dot_rows %s n=%zu q=%d bias=%d nt=%d differs", tname, dtn[dt], n, q, withb, nt);
            free(m1), free(m2), free(mgs), free(mxs), free(mbs);
        }
    /* copy */
    for (int nt = 0; nt < 2; nt++) {
        memset(o1, 0x5A, cap), memset(o2, 0x5A, cap);
        memcpy(o1 + omis, g, n * es);
        t->copy(o2 + omis, g, n * es, nt);
        t->fence();
        if (memcmp(o1, o2, cap) != 0) FAIL("%s copy n=%zu bytes nt=%d differs", tname, n * es, nt);
    }
    free(bg), free(bx), free(bb), free(o1), free(o2);
}

static void check_select(void) {
    char err[200];
    if (mf_isa_select(NULL, 0, err, sizeof err) != &mf_ukernels_scalar) FAIL("best of nothing is not scalar");
    if (mf_isa_select("scalar", ~0u, err, sizeof err) != &mf_ukernels_scalar) FAIL("scalar not forced");
    err[0] = 0;
    if (mf_isa_select("bogus", ~0u, err, sizeof err) != NULL || !strstr(err, "bogus")) FAIL("bogus accepted");
#ifdef MOEFR_X86_KERNELS
    if (mf_isa_select("", MF_CPU_AVX2, err, sizeof err) != &mf_ukernels_avx2) FAIL("best of avx2");
    if (mf_isa_select(NULL, MF_CPU_AVX2 | MF_CPU_AVX512, err, sizeof err) != &mf_ukernels_avx512)
        FAIL("best of avx512");
    if (mf_isa_select("avx512", 7, err, sizeof err) != &mf_ukernels_avx512bf16) FAIL("avx512 with bf16");
    if (mf_isa_select("avx2", 7, err, sizeof err) != &mf_ukernels_avx2) FAIL("forced avx2");
    err[0] = 0;
    if (mf_isa_select("avx512", MF_CPU_AVX2, err, sizeof err) != NULL || !strstr(err, "avx512"))
        FAIL("avx512 on an avx2-only cpu was not refused: '%s'", err);
    err[0] = 0;
    if (mf_isa_select("avx2", 0, err, sizeof err) != NULL || !strstr(err, "avx2")) FAIL("avx2 not refused");
    if (mf_isa_select("neon", ~0u, err, sizeof err) != NULL) FAIL("neon accepted on x86");
#endif
    /* the per-CPU tuning table: its one entry, and only for the CPUs it names */
    if (mf_tune_fwd_prefetch("GenuineIntel", MF_CPU_AVX2 | MF_CPU_AVX512) != 256) FAIL("Intel AVX-512 prefetch entry");
    if (mf_tune_fwd_prefetch("GenuineIntel", MF_CPU_AVX2) != 0) FAIL("Intel without AVX-512 got a prefetch distance");
    if (mf_tune_fwd_prefetch("AuthenticAMD", ~0u) != 0) FAIL("AMD got Intel's prefetch distance");
    if (mf_tune_fwd_prefetch("", ~0u) != 0) FAIL("no vendor got a prefetch distance");
#ifdef MOEFR_NEON_KERNELS
    if (mf_isa_select("", MF_CPU_NEON, err, sizeof err) != &mf_ukernels_neon) FAIL("best of neon");
    if (mf_isa_select("neon", MF_CPU_NEON | MF_CPU_NEON_BF16, err, sizeof err) != &mf_ukernels_neon)
        FAIL("forced neon");
    err[0] = 0;
    if (mf_isa_select("neon", 0, err, sizeof err) != NULL || !strstr(err, "neon")) FAIL("neon not refused");
    if (mf_isa_select("avx2", ~0u, err, sizeof err) != NULL) FAIL("avx2 accepted on aarch64");
#endif
}

/* fp.h's double -> fp16/bf16 (one rounding, used for gradScales) against the
 * nearest-search reference, on random magnitudes and on exact ties. */
static void check_f64_rounding(void) {
    for (int fmt = 0; fmt < 2; fmt++) {
        int n = ref_ntab[fmt];
        for (int it = 0; it < 200000; it++) {
            double v;
            int k = (int)(rnd() % (uint32_t)(n - 1));
            switch (it % 4) {
            case 0: v = ldexp((double)rnd() / 4294967296.0 + 0.5, (int)(rnd() % 300) - 160); break;
            case 1: v = 0.5 * ((double)ref_tab16[fmt][k] + (double)ref_tab16[fmt][k + 1]); break; /* a tie */
            case 2: v = (double)ref_tab16[fmt][k] + ((double)ref_tab16[fmt][k + 1] - ref_tab16[fmt][k]) *
                                                        ((double)rnd() / 4294967296.0); break;
            default: v = ldexp((double)rnd(), (int)(rnd() % 80) - 200); break; /* deep subnormal range */
            }
            if (rnd() & 1) v = -v;
            uint16_t got = fmt ? mf_f64_to_bf16(v) : mf_f64_to_f16(v), want = ref_round16(fmt, v);
            if (got != want) {
                FAIL("fp.h double -> %s of %a: got %04x want %04x", fmt ? "bf16" : "fp16", v, got, want);
                break;
            }
        }
        const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, 65504.0, 65519.999, 65520.0, 1e300, -1e-300,
                                   0x1.FEp127, 0x1.FFp127, 0x1p-133, 0x1p-134, 0x1.8p-134, 0x1p-24, 0x1p-25};
        for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
            double v = specials[i];
            uint16_t got = fmt ? mf_f64_to_bf16(v) : mf_f64_to_f16(v), want = ref_round16(fmt, v);
            if (got != want) FAIL("fp.h double -> %s of %a: got %04x want %04x", fmt ? "bf16" : "fp16", v, got, want);
        }
    }
}

/* Run with MOEFR_ISA naming a path that cannot run: operators must refuse. */
static int expect_refused(void) {
    if (mf_isa_check("test") == 0) FAIL("MOEFR_ISA=%s was not refused", getenv("MOEFR_ISA"));
    if (strcmp(moefrIsa(), "refused") != 0) FAIL("moefrIsa() = %s, want refused", moefrIsa());
    float gy[2] = {1, 2}, gx[2] = {9, 9}, gs[1] = {9};
    int32_t idx[1] = {0};
    int64_t d2[2] = {1, 2}, d1[1] = {1}, ds[2] = {1, 1};
    aclTensor *tg = aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d2, 2, gy);
    aclTensor *ti = aclCreateTensor(d1, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d1, 1, idx);
    aclTensor *tx = aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d2, 2, gx);
    aclTensor *ts = aclCreateTensor(ds, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, ds, 2, gs);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    if (aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tg, ti, NULL, NULL, NULL, NULL, 0, 0, 0, 0, tx, ts, &ws, &ex))
        FAIL("phase 1 failed: %s", aclGetRecentErrMsg());
    else {
        void *w = ws ? malloc(ws) : NULL;
        int rc = aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
        if (rc != ACLNN_ERR_RUNTIME_ERROR) FAIL("phase 2 returned %d, want 361001", rc);
        if (gx[0] != 9) FAIL("refused run wrote its output");
        const char *m = aclGetRecentErrMsg();
        if (!m || !strstr(m, "MOEFR_ISA")) FAIL("message does not name MOEFR_ISA: %s", m ? m : "(none)");
        free(w);
    }
    printf("test_kernels: MOEFR_ISA=%s refused as expected (%d failures)\n", getenv("MOEFR_ISA"), g_fail);
    return g_fail != 0;
}

/* gemv (gbody.h) against a plain loop of C's fmaf in k order, bit for bit (NaN as NaN): rows 1 to
 * MF_GEMV_ROWS, widths and K that are and are not multiples of the vector width and of the 4-row step,
 * weight rows padded (ws > n), x rows padded (ldx > K), c rows padded (ldc > n) and left alone there. */
static void check_gemv(const mf_ukernels *t, const char *tname, int dt) {
    static const size_t ns[] = {0, 1, 5, 15, 16, 17, 31, 33, 64, 100, 1029};
    static const size_t ks[] = {0, 1, 3, 4, 5, 8, 9, 37, 130};
    for (size_t rows = 1; rows <= MF_GEMV_ROWS; rows++)
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
                if ((rows + a + b) % 3 && ns[a] > 100) continue; /* the wide case on a third of the pairs */
                const size_t n = ns[a], K = ks[b], ws = n + 3, ldx = K + 2, ldc = n + 5;
                float *x = malloc((rows * ldx + 1) * 4), *c = malloc((rows * ldc + 1) * 4);
                float *want = malloc((rows * ldc + 1) * 4);
                char *w = malloc((K * ws + 1) * esz(dt));
                if (!x || !c || !want || !w) {
                    FAIL("gemv: out of memory");
                    exit(1);
                }
                g_mode = (int)((rows + n + K) % 4 == 0 ? 0 : 1);
                for (size_t i = 0; i < rows * ldx; i++) x[i] = rnd_val(MF_F32);
                for (size_t i = 0; i < K * ws; i++) put(dt, w, i, rnd_val(dt));
                for (size_t i = 0; i < rows * ldc; i++) c[i] = want[i] = rnd_val(MF_F32);
                for (size_t r = 0; r < rows; r++)
                    for (size_t j = 0; j < n; j++) {
                        float acc = want[r * ldc + j];
                        for (size_t k = 0; k < K; k++) acc = fmaf(x[r * ldx + k], get(dt, w, k * ws + j), acc);
                        want[r * ldc + j] = acc;
                    }
                t->gemv[dt](rows, n, K, x, ldx, w, ws, c, ldc);
                for (size_t i = 0; i < rows * ldc; i++) {
                    const int same = u_of(c[i]) == u_of(want[i]) || (isnan(c[i]) && isnan(want[i]));
                    if (!same) {
                        FAIL("%s gemv %s rows %zu n %zu K %zu: c[%zu] = %a, want %a", tname, dtn[dt], rows, n, K, i,
                             (double)c[i], (double)want[i]);
                        break;
                    }
                }
                free(x), free(c), free(want), free(w);
            }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--expect-refused") == 0) return expect_refused();
    const char *seed_env = getenv("MOEFR_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    if (seed == 0) seed = 1;
    g_rng = seed;
    printf("test_kernels: seed %llu (MOEFR_TEST_SEED to replay)\n", (unsigned long long)seed);
    build_tabs();
    check_select();
    check_f64_rounding();
    /* the independent references themselves, on hand-picked values */
    if (ref_round16(0, 65519.0f) != 0x7BFF || ref_round16(0, 65520.0f) != 0x7C00) FAIL("fp16 overflow ref");
    if (ref_round16(0, 0x1p-25f) != 0 || ref_round16(0, 0x1.8p-25f) != 1) FAIL("fp16 subnormal ref");
    if (ref_round16(1, 1.00390625f) != 0x3F80 || ref_round16(1, 1.01171875f) != 0x3F82) FAIL("bf16 ties ref");

    unsigned f = mf_cpu_features();
    struct { const mf_ukernels *t; const char *name; unsigned need; } tabs[] = {
        {&mf_ukernels_scalar, "scalar", 0},
#ifdef MOEFR_X86_KERNELS
        {&mf_ukernels_avx2, "avx2", MF_CPU_AVX2},
        {&mf_ukernels_avx512, "avx512", MF_CPU_AVX512},
        {&mf_ukernels_avx512bf16, "avx512bf16", MF_CPU_AVX512BF16},
#endif
#ifdef MOEFR_NEON_KERNELS
        {&mf_ukernels_neon, "neon", MF_CPU_NEON},
#endif
    };
    size_t sizes[120], ns = 0;
    for (size_t n = 0; n <= 80; n++) sizes[ns++] = n;
    const size_t big[] = {127, 128, 129, 255, 256, 300, 1023, 4095, 4097, 8191};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) sizes[ns++] = big[i];
    int ran = 0;
    for (size_t ti = 0; ti < sizeof tabs / sizeof tabs[0]; ti++) {
        if ((f & tabs[ti].need) != tabs[ti].need) {
            printf("test_kernels: %s skipped (CPU/OS lacks it)\n", tabs[ti].name);
            continue;
        }
        for (int dt = 0; dt < MF_NUM_DT; dt++)
            for (size_t si = 0; si < ns; si++)
                for (size_t mis = 0; mis < 4; mis++) {
                    g_mode = (int)((sizes[si] + mis) % 3);
                    check_table(tabs[ti].t, tabs[ti].name, dt, sizes[si], mis);
                }
        for (int dt = 0; dt < MF_NUM_DT; dt++) check_gemv(tabs[ti].t, tabs[ti].name, dt);
        printf("test_kernels: %s checked\n", tabs[ti].name);
        ran++;
    }
    if (g_fail) {
        fprintf(stderr, "test_kernels: %d failures (seed %llu)\n", g_fail, (unsigned long long)seed);
        return 1;
    }
    printf("test_kernels: ok (%d tables, kernel path in use: %s)\n", ran, moefrIsa());
    return 0;
}
