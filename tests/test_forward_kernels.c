/* test_forward_kernels.c - every forward kernel table this CPU can run, called
 * directly: one rounding of arbitrary fp64 sums (ties, near-ties, subnormals,
 * overflow, NaN) against the oracle's integer RNE, the slot-group paths
 * (LOAD / non-FINAL accumulator tiles) against the scalar table, and the
 * canonical order of issue 13 (fp32 groups from the call's j0 on a single
 * FINAL call, fp64 otherwise) against fwd_ref's row oracle, bit for bit. */
#include <math.h>

#include "cpu/cpu.h"
#include "kernels/forward.h"
#include "testutil.h"

static const int ACL_OF[3] = {FR_F32, FR_F16, FR_BF16}; /* mf_dt order */

/* Doubles that stress a rounding to dtype: representable values, midpoints
 * and points a few ulps of fp64 either side, across the whole range. */
static double tricky(int dt) {
    const int p = dt == FR_F32 ? 24 : dt == FR_F16 ? 11 : 8;
    const int emin = dt == FR_F16 ? -14 : -126, emax = dt == FR_F16 ? 15 : 127;
    int c = (int)tu_int(0, 19);
    double sgn = tu_int(0, 1) ? -1.0 : 1.0;
    if (c == 0) return sgn * ldexp(tu_unit() + 1, (int)tu_int(-1100, 1000)); /* anywhere */
    if (c == 1) { const double sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-320, -4.9e-324};
                  return sp[tu_int(0, 7)]; }
    /* a value of the grid at exponent e, plus a half quantum, plus noise */
    int e = (int)tu_int(emin - p - 2, emax + 1);
    int qe = (e < emin ? emin : e) - p + 1;
    double m = (double)tu_int(1ll << (p - 1), (1ll << p) - 1);
    if (e < emin) m = (double)tu_int(0, (1ll << (p - 1)) - 1);
    double base = ldexp(m, qe), half = ldexp(1.0, qe - 1);
    if (c == 2) { /* near the overflow threshold */
        base = ldexp((double)((1ll << p) - 1), emax - p + 1);
        half = ldexp(1.0, emax - p);
    }
    double v = base + half; /* exact in fp64 */
    int k = (int)tu_int(0, 5);
    if (k == 1) v = nextafter(v, INFINITY);
    if (k == 2) v = nextafter(v, -INFINITY);
    if (k == 3) v = v + ldexp(half, -(int)tu_int(1, 40));
    if (k == 4) v = base;
    if (k == 5) v = v - ldexp(half, -(int)tu_int(1, 40));
    return sgn * v;
}

static int check_rounding(const mf_fwd_kernels *fk) {
    enum { N = 77 }; /* 64 + a tail */
    int fails = 0;
    for (int d = 0; d < 3; d++) {
        const int dt = ACL_OF[d];
        const size_t es = fr_size(dt);
        unsigned char one[N * 4], out[N * 4];
        for (int j = 0; j < N; j++) tu_put(dt, one, j, 1.0);
        for (int rep = 0; rep < 4000; rep++) {
            /* s[0] * 1.0 is the exact double we want rounded; lane j gets
             * vals[j] through the column: 1.0 everywhere, s differs per call,
             * so vary per lane through x1 = 0 and a second slot instead */
            double v = tricky(dt);
            mf_fwd_row t;
            memset(&t, 0, sizeof t);
            t.nk = 1;
            t.x[0] = one;
            t.s[0] = v;
            t.out = out;
            memset(out, 0xA7, sizeof out);
            fk->row[d](&t, 0, N, NULL, MF_FWD_FINAL, rep & 1);
            fk->fence();
            uint32_t want = fr_round(dt, v);
            for (int j = 0; j < N; j++) {
                uint32_t got = 0;
                memcpy(&got, out + j * es, es);
                if (got != want) {
                    fprintf(stderr, "%s %s: round(%a) lane %d = 0x%x, want 0x%x\n", fk->isa,
                            dt == FR_F32 ? "f32" : dt == FR_F16 ? "f16" : "bf16", v, j, got, want);
                    fails++;
                    break;
                }
            }
            if (fails > 10) return fails;
        }
    }
    return fails;
}

/* Random tokens split into slot groups over an fp64 tile, against the scalar table in one call. */
static int check_groups(const mf_fwd_kernels *fk) {
    int fails = 0;
    for (int rep = 0; rep < 600; rep++) {
        const int d = (int)tu_int(0, 2), dt = ACL_OF[d];
        const size_t es = fr_size(dt);
        const int64_t H = tu_int(1, 300), K = tu_int(0, MF_FWD_KMAX);
        unsigned char *rows = malloc((size_t)(2 * K + 2) * H * es), *o1 = malloc(H * es), *o2 = malloc(H * es);
        tu_fill(dt, rows, (2 * K + 2) * H);
        mf_fwd_row t;
        memset(&t, 0, sizeof t);
        int x12 = (int)tu_int(0, 2);
        t.x1 = x12 ? rows + 2 * K * H * es : NULL;
        t.x2 = x12 == 2 ? rows + (2 * K + 1) * H * es : NULL;
        t.nk = (int)K;
        for (int q = 0; q < K; q++) {
            int pres = (int)tu_int(0, 3); /* 0 none, 1 x, 2 b, 3 both */
            t.x[q] = pres & 1 ? rows + 2 * q * H * es : NULL;
            t.b[q] = pres & 2 ? rows + (2 * q + 1) * H * es : NULL;
            t.s[q] = (tu_unit() - 0.5) * 4;
        }
        t.out = o1;
        memset(o1, 0xA7, H * es);
        mf_fwd_kernels_scalar.row[d](&t, 0, (size_t)H, NULL, MF_FWD_FINAL, 0);
        /* same token: a split of H into pieces and of the slots into two groups */
        double *acc = malloc(H * 8);
        memset(o2, 0xA7, H * es);
        int64_t split = tu_int(0, K);
        int64_t j0 = 0;
        while (j0 < H) {
            int64_t n = tu_int(1, H - j0);
            mf_fwd_row a = t, b = t;
            a.nk = (int)split;
            b.x1 = b.x2 = NULL;
            b.nk = (int)(K - split);
            for (int q = 0; q < b.nk; q++) b.x[q] = t.x[split + q], b.b[q] = t.b[split + q], b.s[q] = t.s[split + q];
            a.out = b.out = o2;
            int have = fk->row[d](&a, (size_t)j0, (size_t)n, acc, 0, 0);
            fk->row[d](&b, (size_t)j0, (size_t)n, acc, MF_FWD_FINAL | (have ? MF_FWD_LOAD : 0), 0);
            j0 += n;
        }
        if (memcmp(o1, o2, H * es) != 0) {
            int64_t e = 0;
            while (memcmp(o1 + e * es, o2 + e * es, es) == 0) e++;
            fprintf(stderr, "%s: grouped token differs from the scalar table (dt %d, H %lld, K %lld, split %lld): "
                    "element %lld is %.9g, the scalar table's %.9g\n", fk->isa, dt, (long long)H, (long long)K,
                    (long long)split, (long long)e, fr_decode(dt, o2, e), fr_decode(dt, o1, e));
            fails++;
        }
        free(rows), free(o1), free(o2), free(acc);
    }
    return fails;
}

/* Data for the fp32 order's edges: tu_fill's mix, and now and then a tiny,
 * huge, largest-finite, infinite or NaN element (so some groups fall back). */
static void fill_mix(int dt, void *base, int64_t n) {
    tu_fill(dt, base, n);
    const double mx = dt == FR_F32 ? 0x1.fffffep127 : dt == FR_BF16 ? 0x1.fep127 : 65504.0;
    for (int64_t i = 0; i < n; i++) {
        const int c = (int)tu_int(0, 199);
        if (c >= 6) continue;
        const double sp[6] = {dt == FR_F16 ? 0x1p-24 : 0x1p-120, mx / 2, mx, INFINITY, NAN, -0.0};
        tu_put(dt, base, i, (tu_int(0, 1) ? -1 : 1) * sp[c]);
    }
}
/* a random binary32 scale: mostly ordinary, sometimes +-1, 0, tiny or huge */
static double scale32(void) {
    const int c = (int)tu_int(0, 19);
    const double sg = tu_int(0, 1) ? -1 : 1;
    if (c == 0) return sg;
    if (c == 1) return 0.0;
    if (c == 2) return (double)(float)(sg * ldexp(1 + tu_unit(), (int)tu_int(-149, -100)));
    if (c == 3) return (double)(float)(sg * ldexp(1 + tu_unit(), (int)tu_int(60, 126)));
    return (double)(float)((tu_unit() - 0.5) * 4);
}

/* The canonical order of issue 13 on a single FINAL call (fp32 groups of 32
 * from the call's j0, fp64 fallback; fp64 when a scale is not a binary32
 * value) and on split calls (non-FINAL / LOAD: fp64; a FINAL call after an
 * empty first part starts afresh: fp32 again), against fwd_ref's row oracle. */
static int check_fp32(const mf_fwd_kernels *fk) {
    int fails = 0;
    for (int rep = 0; rep < 600 && fails < 10; rep++) {
        const int d = (int)tu_int(0, 2), dt = ACL_OF[d];
        const size_t es = fr_size(dt);
        const int64_t H = tu_int(1, 300), K = tu_int(0, MF_FWD_KMAX);
        unsigned char *rows = malloc((size_t)(2 * K + 2) * H * es), *o = malloc(H * es), *w = malloc(H * es);
        fill_mix(dt, rows, (2 * K + 2) * H);
        mf_fwd_row t;
        memset(&t, 0, sizeof t);
        const int x12 = (int)tu_int(0, 2);
        t.x1 = x12 ? rows + 2 * K * H * es : NULL;
        t.x2 = x12 == 2 ? rows + (2 * K + 1) * H * es : NULL;
        t.nk = (int)K;
        for (int q = 0; q < K; q++) {
            const int pres = (int)tu_int(0, 7); /* mostly x (and b); sometimes b alone or nothing */
            t.x[q] = pres == 0 || pres == 1 ? NULL : rows + 2 * q * H * es;
            t.b[q] = pres == 1 || pres >= 5 ? rows + (2 * q + 1) * H * es : NULL;
            t.s[q] = scale32();
        }
        /* (a) only: a scale that is not a binary32 value sends a FINAL call to
         * the fp64 order. (b) keeps binary32 scales: the fp64 order is exact
         * (and the same on every table) only for them, forward.h. The odd
         * scale is 1 + 2^-24: not binary32 (it rounds to 1.0f), but 25
         * significant bits, so its products with 24-bit data stay exact in
         * fp64 and the SIMD tables' fused s * x + acc equals the scalar
         * table's two steps. (1 + 2^-40 made 65-bit products: with x1
         * cancelling a slot term, fused and unfused differed in fp32's last
         * bit, CI seed 1796241751457235 on avx512.) */
        const int64_t odd = K > 0 && tu_int(0, 9) == 0 ? tu_int(0, K - 1) : -1;
        const double keep = odd >= 0 ? t.s[odd] : 0.0;
        if (odd >= 0) t.s[odd] = 1 + 0x1p-24;
        const fr_row row = {dt, t.x1, t.x2, (int)K, t.x, t.b, t.s};
        /* (a) one FINAL call on [j0, j0 + n): groups start at j0; nothing outside written;
         * an in-row prefetch distance (a hint: no bit may change) */
        const int64_t j0 = tu_int(0, H - 1), n = tu_int(1, H - j0);
        const size_t aheads[] = {0, 64, 256};
        t.ahead = aheads[tu_int(0, 2)];
        t.out = o;
        memset(o, 0xA7, H * es);
        memset(w, 0xA7, H * es);
        fk->row[d](&t, (size_t)j0, (size_t)n, NULL, MF_FWD_FINAL, rep & 1);
        fk->fence();
        fr_row_forward(&row, j0, n, w, 1);
        if (memcmp(o, w, H * es) != 0) {
            int64_t j = 0;
            while (memcmp(o + j * es, w + j * es, es) == 0) j++;
            uint32_t a = 0, b = 0;
            memcpy(&a, o + j * es, es), memcpy(&b, w + j * es, es);
            fprintf(stderr, "%s: FINAL call (dt %d, H %lld, K %lld, j0 %lld, n %lld): out[%lld] = 0x%x, oracle 0x%x\n",
                    fk->isa, dt, (long long)H, (long long)K, (long long)j0, (long long)n, (long long)j, a, b);
            fails++;
        }
        /* (b) the slots in two groups over an fp64 tile, pieces of H */
        if (odd >= 0) t.s[odd] = keep;
        double *acc = malloc(H * 8);
        memset(o, 0xA7, H * es);
        memset(w, 0xA7, H * es);
        const int64_t split = tu_int(0, K);
        int first_has = x12 != 0; /* what the first call's "have" will be */
        for (int q = 0; q < split; q++) first_has |= t.x[q] || t.b[q];
        mf_fwd_row b = t;
        b.x1 = b.x2 = NULL;
        b.nk = (int)(K - split);
        for (int q = 0; q < b.nk; q++) b.x[q] = t.x[split + q], b.b[q] = t.b[split + q], b.s[q] = t.s[split + q];
        const fr_row brow = {dt, NULL, NULL, b.nk, b.x, b.b, b.s};
        for (int64_t p0 = 0; p0 < H;) {
            const int64_t pn = tu_int(1, H - p0);
            mf_fwd_row a = t;
            a.nk = (int)split;
            a.out = b.out = o;
            const int have = fk->row[d](&a, (size_t)p0, (size_t)pn, acc, 0, 0);
            fk->row[d](&b, (size_t)p0, (size_t)pn, acc, MF_FWD_FINAL | (have ? MF_FWD_LOAD : 0), 0);
            if (have != first_has) {
                fprintf(stderr, "%s: the first call returned have = %d, want %d\n", fk->isa, have, first_has);
                fails++;
            }
            if (first_has) fr_row_forward(&row, p0, pn, w, 0); /* LOAD: fp64 */
            else fr_row_forward(&brow, p0, pn, w, 1);         /* a single FINAL call's order */
            p0 += pn;
        }
        if (memcmp(o, w, H * es) != 0) {
            fprintf(stderr, "%s: split token differs from the oracle (dt %d, H %lld, K %lld, split %lld, first %d)\n",
                    fk->isa, dt, (long long)H, (long long)K, (long long)split, first_has);
            fails++;
        }
        free(rows), free(o), free(w), free(acc);
    }
    return fails;
}

int main(void) {
    tu_seed("test_forward_kernels");
    const mf_fwd_kernels *tables[3] = {&mf_fwd_kernels_scalar, NULL, NULL};
#if defined(MOEFR_X86_KERNELS) || defined(__x86_64__)
    unsigned f = mf_cpu_features();
    if (f & MF_CPU_AVX2) tables[1] = &mf_fwd_kernels_avx2;
    if (f & MF_CPU_AVX512) tables[2] = &mf_fwd_kernels_avx512;
#elif defined(__aarch64__)
    if (mf_cpu_features() & MF_CPU_NEON) tables[1] = &mf_fwd_kernels_neon;
#endif
    int fails = 0, ran = 0;
    for (int i = 0; i < 3; i++) {
        if (!tables[i]) {
#if defined(__aarch64__)
            if (i == 1) printf("test_forward_kernels: neon not supported here, skipped\n");
#else
            printf("test_forward_kernels: %s not supported here, skipped\n", i == 1 ? "avx2" : "avx512");
#endif
            continue;
        }
        fails += check_rounding(tables[i]);
        fails += check_groups(tables[i]);
        fails += check_fp32(tables[i]);
        ran++;
        printf("test_forward_kernels: %s checked (12000 roundings, 600 grouped tokens, 600 fp32-order tokens)\n",
               tables[i]->isa);
    }
    printf("test_forward_kernels: %d tables, %d failures\n", ran, fails);
    return fails ? 1 : 0;
}
