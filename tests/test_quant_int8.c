/* test_quant_int8.c - the dynamic int8 quantisation's vector loops
 * (src/ops/routing/quant_int8*.c) against a plain float64 oracle: every
 * fp32 value whose magnitude is in [2^-2, 2^8) (where every rounding
 * decision and the clamp happen), random bit patterns (NaN, infinities,
 * subnormals), and real quotients v / s with ties placed on purpose; both
 * roundings (half away from zero, MoeInitRoutingQuantV2; half to even,
 * InitRoutingV3), with and without streaming stores; on x86 also the AVX2 loops over raw bfloat16 rows (every
 * bf16 value, and the max on their bits). Each loop may stop short of n (whole vectors only): the
 * bytes it says it did are checked, the rest must keep their poison. */
#include <math.h>

#include "ops/routing/quant_int8.h"
#include "testutil.h"

typedef int64_t (*q8_fn)(const float *v, int64_t n, float s, bool even, int8_t *out, bool nt);
static const struct {
    const char *name;
    q8_fn fn;
    int lanes; /* the loop's vector: it leaves fewer than this to the caller */
} g_loops[] = {
    {"generic", mf_q8_quant_generic, 4},
#if defined(MOEFR_X86_KERNELS)
    {"avx2", mf_q8_quant_avx2, 8},
#endif
};
#define NLOOPS (int)(sizeof g_loops / sizeof g_loops[0])

/* The oracle: fl32(v / s) (a double quotient of two floats rounded once
 * to float is the IEEE fp32 quotient), NaN -> 0, clamped to [-128, 127],
 * then rounded in double, where q + 0.5 is exact. */
static int8_t oracle(float v, float s, bool even) {
    const double q = (float)((double)v / (double)s);
    if (q != q) return 0;
    const double c = q > 127 ? 127 : q < -128 ? -128 : q;
    const double a = fabs(c);
    double r = floor(a + 0.5);
    if (even && r - a == 0.5 && fmod(r, 2.0) != 0.0) r -= 1.0;
    return (int8_t)(c < 0 ? -r : r);
}

static bool g_avx2_ok = true;
static int64_t g_checked, g_calls; /* g_calls: odd calls allow streaming stores */

/* v[0..n) through every loop, both roundings, against the oracle. */
static void check_block(const float *v, int64_t n, float s, int8_t *out, const char *what) {
    for (int l = 0; l < NLOOPS; l++) {
        if (!g_avx2_ok && g_loops[l].lanes == 8) continue;
        for (int e = 0; e < 2; e++) {
            memset(out, 0x5A, (size_t)n);
            const int64_t done = g_loops[l].fn(v, n, s, e == 1, out, (g_calls++ & 1) != 0);
            if (done < 0 || done > n || n - done >= g_loops[l].lanes || done % g_loops[l].lanes != 0)
                TU_FAIL("%s loop, %s: did %" PRId64 " of %" PRId64, g_loops[l].name, what, done, n);
            for (int64_t j = 0; j < n; j++) {
                const int8_t want = j < done ? oracle(v[j], s, e == 1) : (int8_t)0x5A;
                if (out[j] != want)
                    TU_FAIL("%s loop, %s, %s: v[%" PRId64 "] = %a (bits %08x) / s = %a -> %d, want %d", g_loops[l].name,
                            e ? "half to even" : "half away", what, j, (double)v[j], mf_f32_bits(v[j]), (double)s,
                            out[j], want);
            }
            g_checked += done;
        }
    }
}

#if defined(MOEFR_X86_KERNELS)
/* The AVX2 loops over raw bfloat16 rows: every bf16 pattern quantised by s
 * = 1, 2^-7 (exact) and random s; the max on the raw bits against the max of
 * the widened values (NaN never wins, infinity does), on odd lengths. */
static void check_bf16_loops(float *v, int8_t *out) {
    uint16_t *h = malloc(65536 * sizeof *h);
    CHECK(h != NULL);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i, v[i] = mf_bf16_to_f32((uint16_t)i);
    for (int r = 0; r < 8; r++) {
        const float s = r == 0 ? 1.0f : r == 1 ? 0x1p-7f : (float)(ldexp(1.0 + tu_unit(), (int)tu_int(-40, 40)) / 127.0);
        for (int e = 0; e < 2; e++) {
            memset(out, 0x5A, 65536);
            const int64_t n = r < 2 ? 65536 : tu_int(1, 65536), done = mf_q8_quant_bf16_avx2(h, n, s, e == 1, out, (g_calls++ & 1) != 0);
            if (done % 8 != 0 || done > n || n - done >= 8) TU_FAIL("bf16 quant loop did %" PRId64 " of %" PRId64, done, n);
            for (int64_t j = 0; j < 65536; j++) {
                const int8_t want = j < done ? oracle(v[j], s, e == 1) : (int8_t)0x5A;
                if (out[j] != want)
                    TU_FAIL("bf16 quant loop, %s: bits %04x / s = %a -> %d, want %d", e ? "half to even" : "half away",
                            (unsigned)h[j], (double)s, out[j], want);
            }
            g_checked += done;
        }
    }
    for (int r = 0; r < 2000; r++) {
        const int64_t n = tu_int(1, 300);
        for (int64_t j = 0; j < n; j++) {
            h[j] = (uint16_t)tu_next();
            if (tu_chance(3)) h[j] = (uint16_t)(h[j] | 0x7F80u); /* NaN or infinity */
        }
        float want = 0.0f, got = tu_chance(50) ? 0.0f : 0.5f; /* the running max it starts from */
        want = got;
        const int64_t done = mf_q8_absmax_bf16_avx2(h, n, &got);
        if (done % 16 != 0 || done > n || n - done >= 16) TU_FAIL("bf16 max loop did %" PRId64 " of %" PRId64, done, n);
        for (int64_t j = 0; j < done; j++) {
            const double a = fabs((double)mf_bf16_to_f32(h[j]));
            if (a == a && a > want) want = (float)a;
        }
        if (mf_f32_bits(got) != mf_f32_bits(want))
            TU_FAIL("bf16 max loop over %" PRId64 " values: %a, want %a", done, (double)got, (double)want);
    }
    free(h);
}
#endif

int main(void) {
    tu_seed("test_quant_int8");
#if defined(MOEFR_X86_KERNELS)
    g_avx2_ok = __builtin_cpu_supports("avx2");
    if (!g_avx2_ok) printf("test_quant_int8: no AVX2 on this CPU: the avx2 loop is not run\n");
#endif
    enum { B = 1 << 16 };
    float *v = malloc(B * sizeof *v);
    int8_t *out = malloc(B);
    CHECK(v && out);
    /* 1. every value with |q| in [2^-2, 2^8), both signs, s = 1 (the
     * quotient is v itself): exponent fields 125..134 */
    const uint32_t lo = 125u << 23, hi = 135u << 23;
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t b = lo; b < hi; b += B) {
            for (uint32_t i = 0; i < B; i++) v[i] = mf_bits_f32((sign << 31) | (b + i));
            check_block(v, B, 1.0f, out, "every value");
        }
    /* 2. random bit patterns (any exponent, NaN payloads, infinities,
     * subnormals, zeros), in blocks of odd lengths */
    for (int r = 0; r < 64; r++) {
        const int64_t n = tu_int(1, 4099);
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)tu_next();
            if (tu_chance(10)) u = (u & 0x807FFFFFu) | (tu_chance(50) ? 0x7F800000u : 0u); /* NaN/inf, subnormal/0 */
            v[i] = mf_bits_f32(u);
        }
        check_block(v, n, 1.0f, out, "random patterns");
    }
    /* 3. real quotients: random s, v near (k + 1/2) s (ties and their
     * neighbours), and the row's own max / 127 as the operator forms s */
    for (int r = 0; r < 64; r++) {
        const int64_t n = tu_int(1, 4099);
        const float s = (float)(ldexp(1.0 + tu_unit(), (int)tu_int(-30, 30)) / 127.0);
        for (int64_t i = 0; i < n; i++) {
            const double k = (double)tu_int(-130, 129) + 0.5;
            float t = (float)(k * (double)s);
            const int d = (int)tu_int(-2, 2);
            for (int m = 0; m < (d < 0 ? -d : d); m++) t = nextafterf(t, d < 0 ? -INFINITY : INFINITY);
            v[i] = tu_chance(20) ? (float)((tu_unit() * 2 - 1) * 127.0 * s) : t;
        }
        check_block(v, n, s, out, "quotients");
    }
#if defined(MOEFR_X86_KERNELS)
    if (g_avx2_ok) check_bf16_loops(v, out);
#endif
    printf("test_quant_int8: %" PRId64 " quantised elements checked, all equal to the float64 oracle\n", g_checked);
    free(v);
    free(out);
    return 0;
}
