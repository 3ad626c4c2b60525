/* test_trans_quant_param.c - aclnnTransQuantParam (host), V2 and V3 against words built here from
 * ops-nn's description alone: bits 0-31 the scale's fp32 bits (V1 all of them; round mode 0 the top
 * 19; round mode 1 rounded to 10 mantissa bits, ties to even, computed in float64 from the value, with
 * subnormals to a signed zero and overflow to infinity), bit 46 set, bits 37-45 the offset rounded
 * (V1 half away from zero, V2/V3 ties to even) and clamped to [-256, 255]. Random scales and offsets
 * with ties, subnormals, the largest floats, infinities and NaNs; (n), (1, n), (g, n) shapes and
 * one-element broadcasts; poisoned outputs past the words written stay poisoned; every refusal. */
#include <float.h>
#include <math.h>

#include "aclnnop/aclnn_trans_quant_param.h"
#include "aclnnop/aclnn_trans_quant_param_v2.h"
#include "aclnnop/aclnn_trans_quant_param_v3.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static bool g_a2;

static uint32_t bits_of(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}
static float float_of(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* round mode 1: the value rounded to 11 significant bits (ties to even) in float64 */
static uint32_t fp19_rounded(float f) {
    const uint32_t b = bits_of(f);
    const uint32_t exp = (b >> 23) & 0xFF;
    if (exp == 0) return b & 0x80000000u;
    if (exp == 0xFF) return b & 0xFFFFE000u;
    int e;
    const double m = frexp(fabs((double)f), &e); /* |f| = m 2^e, m in [0.5, 1) */
    double r = nearbyint(ldexp(m, 11));          /* 11 significant bits, ties to even */
    r = ldexp(r, e - 11);
    const float g = r > (double)FLT_MAX ? INFINITY : (float)r; /* exact when finite */
    return bits_of(f < 0 ? -g : g);
}
static uint64_t offset_field(float o, bool away) {
    double r;
    if (o != o) {
        r = 0;
    } else if (away) {
        r = o < 0 ? -floor(-(double)o + 0.5) : floor((double)o + 0.5);
    } else {
        r = floor((double)o);
        const double frac = (double)o - r;
        if (frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) != 0)) r += 1;
    }
    r = r < -256 ? -256 : r > 255 ? 255 : r;
    return ((uint64_t)(uint32_t)(int32_t)r & 0x1FF) << 37;
}

static float rand_scale(void) {
    switch ((int)tu_int(0, 9)) {
    case 0: return float_of((uint32_t)tu_int(1, 0x7FFFFF) | (tu_chance(50) ? 0x80000000u : 0)); /* subnormal */
    case 1: return tu_chance(50) ? INFINITY : -INFINITY;
    case 2: return NAN;
    case 3: return float_of(0x7F7FF000u | (uint32_t)tu_int(0, 0xFFF));                          /* near FLT_MAX */
    case 4: { /* a tie at the 13th bit, even or odd above it */
        uint32_t b = bits_of((float)(tu_unit() * 4 + 0.01));
        return float_of((b & 0xFFFFE000u) | 0x1000u);
    }
    default: return (float)((tu_unit() - 0.5) * pow(2.0, (double)tu_int(-20, 20)));
    }
}
static float rand_offset(void) {
    switch ((int)tu_int(0, 5)) {
    case 0: return (float)tu_int(-300, 300) + 0.5f; /* ties */
    case 1: return (float)tu_int(-400, 400);
    case 2: return NAN;
    default: return (float)((tu_unit() - 0.5) * 600);
    }
}

static void v1_case(void) {
    g_cases++;
    const uint64_t ns = (uint64_t)tu_int(1, 40), no = tu_chance(40) ? 0 : (uint64_t)tu_int(1, 40);
    float sc[40], of[40];
    for (uint64_t i = 0; i < ns; i++) sc[i] = rand_scale();
    for (uint64_t i = 0; i < no; i++) of[i] = rand_offset();
    uint64_t *q = NULL, n = 0;
    CHECK_RC(aclnnTransQuantParam(sc, ns, no ? of : NULL, no, &q, &n), ACLNN_SUCCESS);
    uint64_t want_n = ns > no ? ns : no;
    if (want_n != 1 && want_n % 16) want_n += 16 - want_n % 16;
    CHECK(n == want_n, "V1: %llu words, want %llu", (unsigned long long)n, (unsigned long long)want_n);
    for (uint64_t i = 0; q && i < n; i++) {
        uint64_t w = i < ns ? ((uint64_t)bits_of(sc[i]) | (1ull << 46)) : 0;
        if (i < no) w = (w & 0x4000FFFFFFFFull) | offset_field(of[i], true);
        CHECK(q[i] == w, "V1 word %llu = 0x%016llx, want 0x%016llx", (unsigned long long)i, (unsigned long long)q[i],
              (unsigned long long)w);
    }
    free(q);
}

/* scale (sd dims), offset (od, or none), out UINT64/INT64 of n_out words, round mode rm (-1: V2) */
static void v23_case(int snd, const int64_t *sd, int ond, const int64_t *od, int64_t n_out, int rm, int out_dt) {
    g_cases++;
    int64_t ns = 1, no = 1;
    for (int i = 0; i < snd; i++) ns *= sd[i];
    for (int i = 0; i < ond; i++) no *= od[i];
    float *sc = malloc(sizeof(float) * (size_t)ns), *of = malloc(sizeof(float) * (size_t)no);
    for (int64_t i = 0; i < ns; i++) sc[i] = rand_scale();
    for (int64_t i = 0; i < no; i++) of[i] = rand_offset();
    unsigned char *out = tu_poisoned((size_t)n_out * 8);
    const int64_t outd[1] = {n_out};
    aclTensor *st = tu_tensor(sd, snd, ACL_FLOAT, sc), *ot = ond ? tu_tensor(od, ond, ACL_FLOAT, of) : NULL;
    aclTensor *yt = tu_tensor(outd, 1, (aclDataType)out_dt, out);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = rm < 0 ? aclnnTransQuantParamV2GetWorkspaceSize(st, ot, yt, &ws, &ex)
                            : aclnnTransQuantParamV3GetWorkspaceSize(st, ot, rm, yt, &ws, &ex);
    CHECK(rc == ACLNN_SUCCESS, "V%d phase 1: %d %s", rm < 0 ? 2 : 3, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        rc = rm < 0 ? aclnnTransQuantParamV2(NULL, ws, ex, NULL) : aclnnTransQuantParamV3(NULL, ws, ex, NULL);
        CHECK(rc == ACLNN_SUCCESS, "phase 2: %d %s", rc, tu_msg());
        const int64_t n = ns > (ond ? no : 0) ? ns : no;
        for (int64_t i = 0; i < n; i++) {
            const float s = sc[ns == 1 ? 0 : i];
            const uint32_t sb = rm == 1 ? fp19_rounded(s) : bits_of(s) & 0xFFFFE000u;
            uint64_t want = (uint64_t)sb | (1ull << 46);
            if (ond) want |= offset_field(of[no == 1 ? 0 : i], false);
            uint64_t got;
            memcpy(&got, out + i * 8, 8);
            CHECK(got == want, "V%d rm %d word %lld (scale %a, offset %g) = 0x%016llx, want 0x%016llx", rm < 0 ? 2 : 3, rm,
                  (long long)i, (double)s, ond ? (double)of[no == 1 ? 0 : i] : 0.0, (unsigned long long)got,
                  (unsigned long long)want);
        }
        CHECK(tu_all_poison(out + n * 8, (size_t)(n_out - n) * 8), "words past %lld written", (long long)n);
        CHECK(tu_guard_ok(out, (size_t)n_out * 8), "out's guard written");
    }
    tu_destroy(st), tu_destroy(yt);
    if (ot) tu_destroy(ot);
    free(sc), free(of), free(out);
}

static void refusal(int snd, const int64_t *sd, int sdt, int ond, const int64_t *od, int64_t n_out, int out_dt, int rm,
                    aclnnStatus want, const char *msg) {
    float buf[64] = {1};
    unsigned char *out = tu_poisoned((size_t)(n_out > 0 ? n_out : 1) * 8);
    const int64_t outd[1] = {n_out};
    aclTensor *st = snd >= 0 ? tu_tensor(sd, snd, (aclDataType)sdt, buf) : NULL;
    aclTensor *ot = ond ? tu_tensor(od, ond, ACL_FLOAT, buf) : NULL;
    aclTensor *yt = tu_tensor(outd, 1, (aclDataType)out_dt, out);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnTransQuantParamV3GetWorkspaceSize(st, ot, rm, yt, &ws, &ex);
    CHECK(rc == want && ex == NULL, "refusal '%s': got %d (%s)", msg, rc, tu_msg());
    CHECK(tu_msg_has(msg, NULL), "refusal: message '%s' lacks '%s'", tu_msg(), msg);
    CHECK(tu_all_poison(out, (size_t)(n_out > 0 ? n_out : 1) * 8), "refusal '%s' wrote out", msg);
    if (st) tu_destroy(st);
    if (ot) tu_destroy(ot);
    tu_destroy(yt);
    free(out);
}

int main(void) {
    tu_seed("test_trans_quant_param");
    const char *soc = getenv("MOEFR_SOC");
    g_a2 = soc && strcmp(soc, "ascend910b") == 0;
    for (int i = 0; i < 30; i++) v1_case();
    for (int i = 0; i < 60; i++) {
        const int64_t n = tu_int(1, 70);
        const int rm = (int)tu_int(-1, 1), odt = tu_chance(50) ? ACL_UINT64 : ACL_INT64;
        const int64_t s1[1] = {n}, s2[2] = {1, n}, one[1] = {1};
        switch ((int)tu_int(0, 4)) {
        case 0: v23_case(1, s1, 0, NULL, n + tu_int(0, 5), rm, odt); break;
        case 1: v23_case(2, s2, 1, s1, n, rm, odt); break;
        case 2: v23_case(1, s1, 1, one, n + 3, rm, odt); break;
        case 3: v23_case(1, one, 1, s1, n, rm, odt); break; /* one scale, n offsets */
        default:
            if (!g_a2) { /* Ascend 950: (g, n) scales */
                const int64_t g2[2] = {tu_int(2, 4), n};
                v23_case(2, g2, 0, NULL, g2[0] * n, rm, odt);
            }
        }
    }
    const int64_t n5[1] = {5}, n3[1] = {3}, n5b[2] = {1, 5}, g5[2] = {2, 5}, bad2[2] = {2, 5}, z[1] = {0};
    refusal(-1, n5, ACL_FLOAT, 0, NULL, 5, ACL_UINT64, 0, ACLNN_ERR_PARAM_NULLPTR, "scale");
    refusal(1, n5, ACL_FLOAT16, 0, NULL, 5, ACL_UINT64, 0, ACLNN_ERR_PARAM_INVALID, "scale dtype");
    refusal(1, n5, ACL_FLOAT, 0, NULL, 5, ACL_INT32, 0, ACLNN_ERR_PARAM_INVALID, "out dtype");
    refusal(1, n5, ACL_FLOAT, 1, n3, 5, ACL_UINT64, 0, ACLNN_ERR_PARAM_INVALID, "same length");
    refusal(1, n5, ACL_FLOAT, 2, bad2, 10, ACL_UINT64, 0, ACLNN_ERR_PARAM_INVALID, "offset must be (n) or (1, n)");
    refusal(1, z, ACL_FLOAT, 0, NULL, 5, ACL_UINT64, 0, ACLNN_ERR_PARAM_INVALID, "scale must be (n)");
    refusal(1, n5, ACL_FLOAT, 0, NULL, 5, ACL_UINT64, 2, ACLNN_ERR_PARAM_INVALID, "roundMode must be 0 or 1");
    refusal(2, n5b, ACL_FLOAT, 0, NULL, 4, ACL_UINT64, 0, ACLNN_ERR_PARAM_INVALID, "fewer than the 5 words");
    if (g_a2) refusal(2, g5, ACL_FLOAT, 0, NULL, 10, ACL_UINT64, 0, ACLNN_ERR_PARAM_INVALID, "or (1, n) with n > 0");
    /* V1's argument rules */
    float one1 = 1.0f;
    uint64_t *q = NULL, n = 0;
    CHECK_RC(aclnnTransQuantParam(NULL, 1, NULL, 0, &q, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnTransQuantParam(&one1, 0, NULL, 0, &q, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnTransQuantParam(&one1, 1, NULL, 2, &q, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnTransQuantParam(&one1, 1, &one1, 0, &q, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnTransQuantParam(&one1, 1, NULL, 0, NULL, &n), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_RC(aclnnTransQuantParam(&one1, 1, NULL, 0, &q, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(q == NULL, "a refused V1 call set quantParam");
    printf("test_trans_quant_param: %d cases, %d failures\n", g_cases, g_fail);
    return g_fail ? 1 : 0;
}
