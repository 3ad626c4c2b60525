/* kbody.h - the backward's kernels, written once over a vector layer (vec.h).
 * Include a layer (vec_<isa>.h) first; MF_UK_TABLE(name) then expands to the
 * mf_ukernels initializer.
 *
 * The canonical order of gradScales (SPEC section 4, docs/DESIGN.md
 * "Kernels"): see k_body. Blocks of MF_K_BLOCK elements summed in fp32 on 16
 * lanes, each block's sums added to eight fp64 sums (or, when a block fails
 * the range test, its terms added in fp64). The result is the same on every
 * layer, any split of a row at multiples of MF_K_BLOCK, any slot grouping. */
#ifndef MOEFR_KERNELS_KBODY_H_
#define MOEFR_KERNELS_KBODY_H_

#include <string.h>

#include "kernels/gbody.h"

/* The backward loads g, x and b with vf_ldp: on AVX2 bf16 that is the even /
 * odd split, which widens 16 elements with a shift and a mask instead of two
 * zero-extensions. A lane still sums one element position (j % 16) of every
 * step, so the sums are the same numbers in other lanes: vf_unpair puts them
 * back in element order before the tail and the fold, and vf_st32p stores
 * products from that layout. Layers whose vf_ldp is element order (every
 * other layer and dtype) need neither. */
#ifndef MF_V_LDP_PAIRED
MF_INLINE void vf_st32p(mf_dt dt, void *p, size_t j, mf_vf lo, mf_vf hi, int nt, int normal, int nonan) {
    (void)nonan;
    vf_st32(dt, p, j, lo, hi, nt, normal);
}
MF_INLINE mf_vf vf_unpair(mf_dt dt, mf_vf s) {
    (void)dt;
    return s;
}
#endif
/* MF_V_NAN_HINT: the layer's bf16 store is cheaper when told that no product
 * is NaN (v_bf16_finite32 of g, and a finite scale). */
#ifndef MF_V_NAN_HINT
#define MF_V_NAN_HINT 0
MF_INLINE int v_bf16_finite32(const void *p, size_t j) {
    (void)p, (void)j;
    return 0;
}
#endif

/* The bf16 minima of 32 values at p[j..]: two vm_nzmin16 unless the layer
 * has a one-pass form (MF_V_NZMIN32). */
#ifndef MF_V_NZMIN32
MF_INLINE mf_vm vm_nzmin32(mf_vm m, const void *p, size_t j) { return vm_nzmin16(vm_nzmin16(m, p, j), p, j + 16); }
#endif

/* Elements per fp32 block of the dot: 16 lanes x 8 terms (the error bound
 * in docs/DESIGN.md needs <= 8 terms per lane with a bias). Callers split
 * rows only at multiples of it (kernels.h MF_DOT_SPLIT). */
#define MF_K_BLOCK MF_DOT_SPLIT

/* k_group1 has constant-Q bodies for these (vec.h). */
_Static_assert(MF_V_QMAX == 1 || MF_V_QMAX == 4 || MF_V_QMAX == 8, "MF_V_QMAX must be 1, 4 or 8");
#ifndef MF_V_QMAX_F32_BIAS
#define MF_V_QMAX_F32_BIAS MF_V_QMAX
#endif
_Static_assert(MF_V_QMAX_F32_BIAS >= 1 && MF_V_QMAX_F32_BIAS <= MF_V_QMAX, "MF_V_QMAX_F32_BIAS must be 1..MF_V_QMAX");

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

/* A value's magnitude bits minus one (zero wraps to the largest value), so
 * an unsigned minimum skips zeros: vm_nzmin's (fp32) and vm_nzmin16's (the
 * raw bf16 patterns) lane operations. */
MF_INLINE uint32_t k_nzbits(float v) { return (mf_f32_bits(v) & 0x7FFFFFFFu) - 1u; }
MF_INLINE uint32_t k_nz16(const void *p, size_t j) {
    return ((uint32_t)(((const uint16_t *)p)[j] & 0x7FFFu) - 1u) & 0xFFFFu;
}
/* Such a minimum as a magnitude; +inf when every value was zero. */
MF_INLINE double k_min_mag(mf_dt dt, uint32_t m) {
    if (dt == MF_BF16) return m >= 0xFFFFu ? __builtin_inf() : (double)mf_bits_f32((m + 1u) << 16);
    return m == 0xFFFFFFFFu ? __builtin_inf() : (double)mf_bits_f32(m + 1u);
}

/* The block test of the canonical order (docs/DESIGN.md): the fp32 sums are
 * kept when they are finite (no operation overflowed) and no product can
 * have been rounded in fp32's subnormal range: fp32 data: min |f| * min |g|
 * >= 2^-126 over the block's non-zero f (x, b or fl32(x + b)) and g; bf16
 * data: min |x|, |b| * min |g| >= 2^-118 over the non-zero inputs
 * themselves (x + b, if not 0, is >= 2^-8 min(|x|, |b|)); fp16: no minimum
 * (its products are >= 2^-48). mv, mg: magnitudes (k_min_mag), exact. */
MF_INLINE int k_block_ok(mf_dt dt, mf_vf S, double mv, double mg) {
    if (!vf_finite(S)) return 0;
    if (dt == MF_F16) return 1;
    return mv * mg >= (dt == MF_BF16 ? 0x1p-118 : 0x1p-126); /* inf * x: a zero row passes */
}

/* One slot's dot terms of the 32 elements at j into its fp32 lane sums S
 * (elements j..j+15 onto the 16 lanes in vf_ldp's order, then j+16..j+31
 * onto the same lanes), and the factors'
 * minimum into M when chk. Every term is fp32 mul, then fp32 add, on every
 * layer, so even a block that fails the test has the same sums everywhere
 * (the test reads them). The minima: of f (fp32), of the raw x and b (bf16). Only for fp16 without bias may a layer fuse: the
 * product of two fp16 values is exact in fp32 (<= 22 significant bits,
 * magnitude in [2^-48, 2^32]), so fused or not the sum is the same. */
MF_INLINE void k_dot32(mf_dt dt, mf_vf *S, mf_vm *M, mf_vf g0, mf_vf g1, const void *x, const void *b, size_t j,
                       const int has_x, const int has_b, const int chk) {
    for (int h = 0; h < 2; h++) {
        const size_t o = j + 16 * (size_t)h;
        const mf_vf gv = h ? g1 : g0;
        mf_vf f = has_x ? vf_ldp(dt, x, o) : vf_ldp(dt, b, o);
        if (has_x && has_b) f = vf_add(f, vf_ldp(dt, b, o));
        if (dt == MF_F16 && !(has_x && has_b)) *S = vf_madd_exact(*S, f, gv);
        else *S = vf_add(*S, vf_mul(f, gv));
        if (chk && dt != MF_BF16) *M = vm_nzmin(*M, f);
    }
    if (chk && dt == MF_BF16) {
        *M = vm_nzmin32(*M, has_x ? x : b, j);
        if (has_x && has_b) *M = vm_nzmin32(*M, b, j);
    }
}

/* fp32 data with one factor (x or b alone): the terms in fp64, the order
 * before issue 13 (a widened fp32 value times another is exact in fp64, so
 * a fused multiply-add gives the bits of mul then add). 32 elements at j,
 * gd = g widened, onto the eight fp64 sums a: elements j..j+7, j+8.., ... */
MF_INLINE mf_vd k_dot64(mf_dt dt, mf_vd a, const mf_vd gd[4], const void *f, size_t j) {
    MF_UNROLL_4 for (int v = 0; v < 4; v++) a = vd_madd_exact(a, vd_ld(dt, f, j + 8 * (size_t)v), gd[v]);
    return a;
}

/* Elements [j, e) of one slot one at a time (the call's last n % 32):
 * out as scale, the terms onto lane (element % 16) of S, minima into *mv, *mg. */
MF_INLINE void k_tail(mf_dt dt, const void *g, float s, void *out, const void *x, const void *b, size_t j, size_t e,
                      mf_vf *S, uint32_t *mv, uint32_t *mg, const int dot) {
    float t[16];
    if (dot) vf_stu(t, *S);
    for (; j < e; j++) {
        const float gv = mf_ld_dt(dt, g, j);
        if (out) mf_st_dt(dt, out, j, gv * s);
        if (!dot) continue;
        float f = x ? mf_ld_dt(dt, x, j) : mf_ld_dt(dt, b, j);
        if (x && b) f = f + mf_ld_dt(dt, b, j);
        const float p = f * gv;
        t[j & 15] = t[j & 15] + p;
        uint32_t uf, ug;
        if (dt == MF_BF16) {
            uf = k_nz16(x ? x : b, j), ug = k_nz16(g, j);
            if (x && b && k_nz16(b, j) < uf) uf = k_nz16(b, j);
        } else {
            uf = k_nzbits(f), ug = k_nzbits(gv);
        }
        if (uf < *mv) *mv = uf;
        if (ug < *mg) *mg = ug;
    }
    if (dot) *S = vf_ldu(t);
}

/* Q slots (Q a constant, 1..MF_V_QMAX) over n elements. shared_g: every slot
 * uses g[0] (one token's slots: g is loaded once per step); otherwise slot i
 * uses g[i] (unrelated rows). Each slot's sums are an independent chain, so
 * interleaving slots hides the latency of the fixed-order adds.
 *
 * The canonical order of the dot (SPEC section 4, docs/DESIGN.md): blocks of
 * MF_K_BLOCK elements from the call's start; in a block each slot sums its
 * terms in fp32 on 16 lanes (element j onto lane j % 16, in increasing j);
 * at the block's end the block test (k_block_ok) keeps those sums, added to
 * the slot's eight fp64 sums as acc[l] = (acc[l] + S[l]) + S[l + 8], or
 * rejects them, and then the block's terms are formed and added in fp64 one
 * element at a time to acc[j % 8] (mf_scale_dot_tail without out). fp32
 * data with x or b alone uses that fp64 form for every element (f64). */
MF_INLINE void k_body(mf_dt dt, const int Q, const int shared_g, const int has_out, const int has_x, const int has_b,
                      const void *const *g, const float *s, void *const *out, const void *const *x,
                      const void *const *b, size_t n, double (*acc)[8], int nt) {
    /* f64: fp32 data, one factor: every term in fp64 (cheaper than fp32 blocks
     * with their range test on AVX2: two widenings and two FMAs per 8). */
    const int dot = has_x || has_b, f64 = dot && dt == MF_F32 && !(has_x && has_b);
    const int blk = dot && !f64, chk = blk && dt != MF_F16;
    mf_vd a64[MF_V_QMAX];
    if (f64) MF_UNROLL_Q for (int i = 0; i < Q; i++) a64[i] = vd_ldu(acc[i]);
    size_t jt = n; /* where the call's last n % 32 elements start */
    if (!MF_V_NT || !has_out || (Q > 1 && !MF_V_NT_MULTIROW)) nt = 0; /* nt permits, never obliges */
    for (int i = 0; nt && i < Q; i++)
        if ((uintptr_t)out[i] & 63) nt = 0; /* streaming stores write whole, aligned lines */
    mf_vf vs[MF_V_QMAX];
    MF_UNROLL_Q for (int i = 0; i < Q; i++) vs[i] = vf_set1(s[i]);
#if MF_V_NORMAL_HINT
    float bound[MF_V_QMAX];
    if (has_out && dt == MF_BF16) {
        if (shared_g) bound[0] = k_normal_bound(s, Q);
        else
            for (int i = 0; i < Q; i++) bound[i] = k_normal_bound(&s[i], 1);
    }
#endif
    int sfin[MF_V_QMAX]; /* scale i is finite */
    for (int i = 0; i < Q; i++) sfin[i] = (mf_f32_bits(s[i]) & 0x7F800000u) != 0x7F800000u;
    for (size_t b0 = 0; b0 < n; b0 += MF_K_BLOCK) {
        const size_t b1 = n - b0 < MF_K_BLOCK ? n : b0 + MF_K_BLOCK;
        mf_vf S[MF_V_QMAX];
        mf_vm M[MF_V_QMAX], MG[MF_V_QMAX];
        MF_UNROLL_Q for (int i = 0; i < Q; i++) S[i] = vf_zero(), M[i] = vm_init(), MG[i] = vm_init();
        size_t j = b0;
        for (; j + 32 <= b1; j += 32) {
            mf_vf g0, g1;
            mf_vd gd[4];
            int normal = 0, gfin = 0;
            if (shared_g) {
                if (MF_V_NAN_HINT && has_out && dt == MF_BF16) gfin = v_bf16_finite32(g[0], j);
                g0 = vf_ldp(dt, g[0], j), g1 = vf_ldp(dt, g[0], j + 16);
                if (f64) MF_UNROLL_4 for (int v = 0; v < 4; v++) gd[v] = vd_ld(dt, g[0], j + 8 * (size_t)v);
                if (chk && dt == MF_BF16) MG[0] = vm_nzmin32(MG[0], g[0], j);
                else if (chk) MG[0] = vm_nzmin(vm_nzmin(MG[0], g0), g1);
#if MF_V_NORMAL_HINT
                if (has_out && dt == MF_BF16) normal = !vf_abs_below(g0, g1, bound[0]);
#endif
            }
            MF_UNROLL_Q for (int i = 0; i < Q; i++) {
                if (!shared_g) {
                    g0 = vf_ldp(dt, g[i], j), g1 = vf_ldp(dt, g[i], j + 16);
                    if (MF_V_NAN_HINT && has_out && dt == MF_BF16) gfin = v_bf16_finite32(g[i], j);
                    if (f64) MF_UNROLL_4 for (int v = 0; v < 4; v++) gd[v] = vd_ld(dt, g[i], j + 8 * (size_t)v);
                    if (chk && dt == MF_BF16) MG[i] = vm_nzmin32(MG[i], g[i], j);
                    else if (chk) MG[i] = vm_nzmin(vm_nzmin(MG[i], g0), g1);
#if MF_V_NORMAL_HINT
                    if (has_out && dt == MF_BF16) normal = !vf_abs_below(g0, g1, bound[i]);
#endif
                }
                if (has_out) vf_st32p(dt, out[i], j, vf_mul(g0, vs[i]), vf_mul(g1, vs[i]), nt, normal, gfin && sfin[i]);
                if (blk) k_dot32(dt, &S[i], &M[i], g0, g1, has_x ? x[i] : NULL, has_b ? b[i] : NULL, j, has_x, has_b,
                                 chk);
                if (f64) a64[i] = k_dot64(dt, a64[i], gd, has_x ? x[i] : b[i], j);
            }
        }
        if (blk) MF_UNROLL_Q for (int i = 0; i < Q; i++) S[i] = vf_unpair(dt, S[i]); /* lane l: element l's sum */
        uint32_t mv[MF_V_QMAX], mg[MF_V_QMAX];
        for (int i = 0; i < Q; i++) mv[i] = mg[i] = 0xFFFFFFFFu;
        if (j < b1) { /* the call's last n % 32 elements */
            jt = j;
            for (int i = 0; i < Q; i++)
                k_tail(dt, g[shared_g ? 0 : i], s[i], has_out ? out[i] : NULL, has_x ? x[i] : NULL,
                       has_b ? b[i] : NULL, j, b1, &S[i], &mv[i], &mg[i], blk);
        }
        if (!blk) continue;
        for (int i = 0; i < Q; i++) {
            uint32_t v = mv[i], w = mg[i];
            if (chk) {
                const mf_vm gm = MG[shared_g ? 0 : i];
                const uint32_t hv = dt == MF_BF16 ? vm_hmin16(M[i]) : vm_hmin(M[i]);
                const uint32_t hg = dt == MF_BF16 ? vm_hmin16(gm) : vm_hmin(gm);
                v = hv < v ? hv : v, w = hg < w ? hg : w;
            }
            if (k_block_ok(dt, S[i], k_min_mag(dt, v), k_min_mag(dt, w))) vd_stu(acc[i], vd_fold16(vd_ldu(acc[i]), S[i]));
            else
                mf_scale_dot_tail(dt, g[shared_g ? 0 : i], 0.0f, NULL, has_x ? x[i] : NULL, has_b ? b[i] : NULL, b0,
                                  b1, acc[i]);
        }
    }
    if (f64)
        for (int i = 0; i < Q; i++) {
            vd_stu(acc[i], a64[i]);
            if (jt < n) mf_scale_dot_tail(dt, g[shared_g ? 0 : i], 0.0f, NULL, has_x ? x[i] : NULL, has_b ? b[i] : NULL,
                                          jt, n, acc[i]);
        }
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
#if MF_V_QMAX >= 4
        MF_K_CASE(2)
        MF_K_CASE(3)
        MF_K_CASE(4)
#endif
#if MF_V_QMAX >= 8
        MF_K_CASE(5)
        MF_K_CASE(6)
        MF_K_CASE(7)
        MF_K_CASE(8)
#endif
    default: break;
    }
}
/* More slots than the registers hold run in groups of MF_V_QMAX, fp32 with a
 * bias in groups of MF_V_QMAX_F32_BIAS (each slot's sums are its own: the
 * grouping changes no bit). */
MF_INLINE void k_group(mf_dt dt, const int shared, int q, const void *const *g, const float *s, void *const *out,
                       const void *const *x, const void *const *b, size_t n, double (*acc)[8], int nt) {
    const int qmax = b && dt == MF_F32 ? MF_V_QMAX_F32_BIAS : MF_V_QMAX;
    while (q > 0) {
        const int c = q > qmax ? qmax : q;
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
     v_fence,                                                                                 \
     {g_gemv_f32, g_gemv_f16, g_gemv_bf16}}

#endif /* MOEFR_KERNELS_KBODY_H_ */
