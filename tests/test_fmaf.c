/* test_fmaf.c - mf_fmaf (kernels/fp.h), the one-rounding fused multiply-add
 * the scalar tables use where the CPU has no FMA instruction, against the C
 * library's fmaf, bit for bit, on inputs chosen to break a double-rounding
 * emulation: cancellation, results on and near float ties, subnormal
 * results, overflow, signed zeros, inf and NaN. (This file is built without
 * -mfma, so on x86-64 it tests the round-to-odd path; on AArch64 both sides
 * are the instruction.) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/fp.h"
#include "testutil.h"

static uint32_t r32(void) { return (uint32_t)(tu_next() >> 32); }
static float fbits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* A float with a random sign, exponent in [lo, hi] (biased) and mantissa. */
static float rnd_f(int lo, int hi) {
    uint32_t e = (uint32_t)(lo + (int)(r32() % (uint32_t)(hi - lo + 1)));
    return fbits((r32() & 0x80000000u) | (e << 23) | (r32() & 0x7FFFFFu));
}

static long fails;
static void check(float s, float v, float a) {
    const float got = mf_fmaf(s, v, a), want = fmaf(s, v, a);
    if (got != got && want != want) return;
    if (mf_f32_bits(got) != mf_f32_bits(want) && fails++ < 10)
        fprintf(stderr, "mf_fmaf(%a, %a, %a) = %a, fmaf %a\n", s, v, a, got, want);
}

int main(void) {
    tu_seed("test_fmaf");
    long n = 0;
    for (int i = 0; i < 400000; i++, n += 8) {
        const float s = rnd_f(1, 254), v = rnd_f(1, 254);
        check(s, v, rnd_f(1, 254));                        /* anything */
        const float p = s * v;                             /* near -p: cancellation */
        check(s, v, -p);
        check(s, v, nextafterf(-p, 0.0f));
        check(rnd_f(100, 150), rnd_f(100, 150), rnd_f(90, 160)); /* ordinary magnitudes */
        check(rnd_f(40, 80), rnd_f(40, 80), rnd_f(0, 10));       /* subnormal results */
        /* s * v = h * (1 - 2^-46), h half an ulp of a: the exact sum is just
         * inside a float tie, and one double rounding lands on the tie */
        const float a = fbits((r32() & 0x80000000u) | ((uint32_t)(60 + r32() % 130) << 23) | (r32() & 0x7FFFFFu) | 1u);
        const int e = ilogbf(a) - 24;
        const float hs = ldexpf(1.0f + 0x1p-23f, e / 2), hv = ldexpf(1.0f - 0x1p-23f, e - e / 2);
        check(hs, hv, a), check(-hs, hv, a), check(hs, -hv, -a);
    }
    const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1.fffffep127f,
                        -0x1.fffffep127f, 1.0f, -1.0f, 0x1p-75f, 0x1.000002p-75f, 3.0f};
    const int ns = (int)(sizeof sp / sizeof sp[0]);
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++)
            for (int k = 0; k < ns; k++, n++) check(sp[i], sp[j], sp[k]);
    printf("test_fmaf: %ld cases, %ld mismatches\n", n, fails);
    return fails != 0;
}
