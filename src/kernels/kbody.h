/* kbody.h - the backward's kernels, written once over a vector layer (vec.h).
 * Include a layer (vec_<isa>.h) first; MF_UK_TABLE(name) then expands to the
 * mf_ukernels initializer.
 *
 * The canonical order (SPEC section 4, docs/DESIGN.md "Kernels"): slot i's
 * eight fp64 partial sums acc[i][0..7]; element j adds (x[j] + b[j]) * g[j]
 * (x + b rounded to fp64 first, then the product, then the add; a lone x or b
 * is one widened input, so its product is exact and a fused multiply-add
 * gives the same bits) to lane j % 8, in increasing j. Every table walks 32
 * elements a step: the four mf_vd of the step are elements j..j+7, j+8..,
 * j+16.., j+24.., added to the one accumulator vector in that order; the
 * last n % 32 elements go through tail.h one at a time to lane j % 8. The
 * result is the same as the plain per-element loop, on every layer. */
#ifndef MOEFR_KERNELS_KBODY_H_
#define MOEFR_KERNELS_KBODY_H_

#include <string.h>

/* Unrolling only changes speed, never bits. The scalar layer's "vectors" are
 * 16-lane loops already, and unrolling them 8 x 4 more makes the compiler
 * take many minutes (far more under sanitizers) for no gain: it opts out. */
#ifdef MF_V_NO_UNROLL
#define MF_UNROLL_Q
#define MF_UNROLL_4
#else
#define MF_UNROLL_Q _Pragma("GCC unroll 8")
#define MF_UNROLL_4 _Pragma("GCC unroll 4")
#endif

/* |g| at or above the returned bound makes |g * s| an fp32 normal (or 0 when
 * s is 0: then nothing is known and the bound is infinite) for every s given. */
MF_INLINE float k_normal_bound(const float *s, int q) {
    float t = 0.0f;
    for (int i = 0; i < q; i++) {
        float a = s[i] < 0 ? -s[i] : s[i];
        if (!(a > 0.0f) || a - a != 0.0f) return __builtin_inff(); /* 0, NaN, inf: always check */
        /* 2^-126 * (1 + 2^-10) / |s| in double; the float conversion loses at
         * most 2^-24 of it, so |g| >= f keeps |g * s| above 2^-126 with room
         * for the product's own rounding */
        double b = 0x1.004p-126 / (double)a;
        float f = b > 0x1p127 ? __builtin_inff() : (float)b;
        if (f > t) t = f;
    }
    return t;
}

/* The dot terms of one slot's 32 elements at j added to a, gd = g widened. */
MF_INLINE mf_vd k_dot32(mf_dt dt, mf_vd a, const mf_vd gd[4], const void *x, const void *b, size_t j,
                        const int has_x, const int has_b) {
    MF_UNROLL_4 for (int v = 0; v < 4; v++) {
        const size_t o = j + 8 * (size_t)v;
        mf_vd t = has_x ? vd_ld(dt, x, o) : vd_ld(dt, b, o);
        if (has_x && has_b) a = vd_add(a, vd_mul(vd_add(t, vd_ld(dt, b, o)), gd[v]));
        else a = vd_madd_exact(a, t, gd[v]);
    }
    return a;
}

/* Q slots (Q a constant, 1..MF_V_QMAX) over n elements. shared_g: every slot
 * uses g[0] (one token's slots: g is loaded once per step); otherwise slot i
 * uses g[i] (unrelated rows). Each slot's sums are an independent chain, so
 * interleaving slots hides the latency of the fixed-order adds. */
MF_INLINE void k_body(mf_dt dt, const int Q, const int shared_g, const int has_out, const int has_x, const int has_b,
                      const void *const *g, const float *s, void *const *out, const void *const *x,
                      const void *const *b, size_t n, double (*acc)[8], int nt) {
    const int dot = has_x || has_b;
    if (!MF_V_NT || !has_out || (Q > 1 && !MF_V_NT_MULTIROW)) nt = 0; /* nt permits, never obliges */
    for (int i = 0; nt && i < Q; i++)
        if ((uintptr_t)out[i] & 63) nt = 0; /* streaming stores write whole, aligned lines */
    mf_vd a[MF_V_QMAX];
    mf_vf vs[MF_V_QMAX];
    MF_UNROLL_Q for (int i = 0; i < Q; i++) {
        a[i] = dot ? vd_ldu(acc[i]) : vd_zero();
        vs[i] = vf_set1(s[i]);
    }
#if MF_V_NORMAL_HINT
    float bound[MF_V_QMAX];
    if (has_out && dt == MF_BF16) {
        if (shared_g) bound[0] = k_normal_bound(s, Q);
        else
            for (int i = 0; i < Q; i++) bound[i] = k_normal_bound(&s[i], 1);
    }
#endif
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        mf_vf g0, g1;
        mf_vd gd[4];
        int normal = 0;
        if (shared_g) {
            if (has_out) g0 = vf_ld(dt, g[0], j), g1 = vf_ld(dt, g[0], j + 16);
            if (dot) MF_UNROLL_4 for (int v = 0; v < 4; v++) gd[v] = vd_ld(dt, g[0], j + 8 * (size_t)v);
#if MF_V_NORMAL_HINT
            if (has_out && dt == MF_BF16) normal = !vf_abs_below(g0, g1, bound[0]);
#endif
        }
        MF_UNROLL_Q for (int i = 0; i < Q; i++) {
            if (!shared_g) {
                if (has_out) g0 = vf_ld(dt, g[i], j), g1 = vf_ld(dt, g[i], j + 16);
                if (dot) MF_UNROLL_4 for (int v = 0; v < 4; v++) gd[v] = vd_ld(dt, g[i], j + 8 * (size_t)v);
#if MF_V_NORMAL_HINT
                if (has_out && dt == MF_BF16) normal = !vf_abs_below(g0, g1, bound[i]);
#endif
            }
            if (has_out) vf_st32(dt, out[i], j, vf_mul(g0, vs[i]), vf_mul(g1, vs[i]), nt, normal);
            if (dot) a[i] = k_dot32(dt, a[i], gd, has_x ? x[i] : NULL, has_b ? b[i] : NULL, j, has_x, has_b);
        }
    }
    if (dot) MF_UNROLL_Q for (int i = 0; i < Q; i++) vd_stu(acc[i], a[i]);
    if (j < n)
        for (int i = 0; i < Q; i++)
            mf_scale_dot_tail(dt, g[shared_g ? 0 : i], s[i], has_out ? out[i] : NULL, has_x ? x[i] : NULL,
                              has_b ? b[i] : NULL, j, n, acc[i]);
}

/* One slot, every (out, x, b) presence pattern its own loop (no tests inside). */
MF_INLINE void k_sd(mf_dt dt, const void *g, float s, void *out, const void *x, const void *b, size_t n,
                    double acc[8], int nt) {
    const void *gp[1] = {g}, *xp[1] = {x}, *bp[1] = {b};
    void *op[1] = {out};
    double(*ap)[8] = (double(*)[8])acc;
    switch ((out ? 4 : 0) | (x ? 2 : 0) | (b ? 1 : 0)) {
    case 7: k_body(dt, 1, 1, 1, 1, 1, gp, &s, op, xp, bp, n, ap, nt); break;
    case 6: k_body(dt, 1, 1, 1, 1, 0, gp, &s, op, xp, bp, n, ap, nt); break;
    case 5: k_body(dt, 1, 1, 1, 0, 1, gp, &s, op, xp, bp, n, ap, nt); break;
    case 4: k_body(dt, 1, 1, 1, 0, 0, gp, &s, op, xp, bp, n, ap, nt); break;
    case 3: k_body(dt, 1, 1, 0, 1, 1, gp, &s, op, xp, bp, n, ap, nt); break;
    case 2: k_body(dt, 1, 1, 0, 1, 0, gp, &s, op, xp, bp, n, ap, nt); break;
    case 1: k_body(dt, 1, 1, 0, 0, 1, gp, &s, op, xp, bp, n, ap, nt); break;
    default: break;
    }
}

/* q slots with out and x, b optional: constant-Q bodies of at most MF_V_QMAX. */
#define MF_K_CASE(Q)                                                                             \
    case 2 * (Q): k_body(dt, Q, shared, 1, 1, 0, g, s, out, x, b, n, acc, nt); break;           \
    case 2 * (Q) + 1: k_body(dt, Q, shared, 1, 1, 1, g, s, out, x, b, n, acc, nt); break;
MF_INLINE void k_group1(mf_dt dt, const int shared, int q, const void *const *g, const float *s, void *const *out,
                        const void *const *x, const void *const *b, size_t n, double (*acc)[8], int nt) {
    switch (q * 2 + (b != NULL)) {
        MF_K_CASE(1)
        MF_K_CASE(2)
        MF_K_CASE(3)
        MF_K_CASE(4)
#if MF_V_QMAX >= 8
        MF_K_CASE(5)
        MF_K_CASE(6)
        MF_K_CASE(7)
        MF_K_CASE(8)
#endif
    default: break;
    }
}
/* More slots than the registers hold run in groups of MF_V_QMAX (each slot's
 * sums are its own: the grouping changes no bit). */
MF_INLINE void k_group(mf_dt dt, const int shared, int q, const void *const *g, const float *s, void *const *out,
                       const void *const *x, const void *const *b, size_t n, double (*acc)[8], int nt) {
    while (q > 0) {
        const int c = q > MF_V_QMAX ? MF_V_QMAX : q;
        k_group1(dt, shared, c, g, s, out, x, b, n, acc, nt);
        s += c, out += c, x += c, acc += c, q -= c;
        if (!shared) g += c;
        if (b) b += c;
    }
}

#define MF_K_DT(SUF, DT)                                                                                    \
    static void k_scale_##SUF(const void *g, float s, void *out, size_t n) {                                \
        k_sd(DT, g, s, out, NULL, NULL, n, NULL, 0);                                                        \
    }                                                                                                       \
    static void k_dot_##SUF(const void *x, const void *b, const void *g, size_t n, double acc[8]) {        \
        k_sd(DT, g, 0.0f, NULL, x, b, n, acc, 0);                                                           \
    }                                                                                                       \
    static void k_scale_dot_##SUF(const void *g, float s, void *out, const void *x, const void *b, size_t n, \
                                  double acc[8], int nt) {                                                  \
        k_sd(DT, g, s, out, x, b, n, acc, nt);                                                              \
    }                                                                                                       \
    static void k_multi_##SUF(const void *g, size_t n, int q, const float *s, void *const *out,            \
                              const void *const *x, const void *const *b, double (*acc)[8], int nt) {       \
        const void *gp[1] = {g};                                                                            \
        k_group(DT, 1, q, gp, s, out, x, b, n, acc, nt);                                                    \
    }                                                                                                       \
    static void k_rows_##SUF(size_t n, int q, const void *const *g, const float *s, void *const *out,      \
                             const void *const *x, const void *const *b, double (*acc)[8], int nt) {        \
        k_group(DT, 0, q, g, s, out, x, b, n, acc, nt);                                                     \
    }
MF_K_DT(f32, MF_F32)
MF_K_DT(f16, MF_F16)
MF_K_DT(bf16, MF_BF16)

/* memcpy, or with nt whole aligned lines by streaming stores. */
static void k_copy(void *dst, const void *src, size_t bytes, int nt) {
    char *d = dst;
    const char *s = src;
    if (!MF_V_NT || !nt || bytes < 512) {
        if (bytes) memcpy(d, s, bytes);
        return;
    }
    size_t head = (size_t)(-(uintptr_t)d & 63);
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= 256; d += 256, s += 256, bytes -= 256)
        MF_UNROLL_4 for (int v = 0; v < 4; v++) v_stream64(d + 64 * v, s + 64 * v);
    if (bytes) memcpy(d, s, bytes);
}

#define MF_UK_TABLE(NAME)                                                                     \
    {NAME,                                                                                    \
     {k_scale_f32, k_scale_f16, k_scale_bf16},                                                \
     {k_dot_f32, k_dot_f16, k_dot_bf16},                                                      \
     {k_scale_dot_f32, k_scale_dot_f16, k_scale_dot_bf16},                                    \
     {k_multi_f32, k_multi_f16, k_multi_bf16},                                                \
     {k_rows_f32, k_rows_f16, k_rows_bf16},                                                   \
     k_copy,                                                                                  \
     v_fence}

#endif /* MOEFR_KERNELS_KBODY_H_ */
