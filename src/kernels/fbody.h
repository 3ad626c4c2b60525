/* fbody.h - the forward's row kernel (forward.h contract), written once over
 * a vector layer (vec.h). Include a layer first; MF_FWD_TABLE(name) expands to
 * the mf_fwd_kernels initializer.
 *
 * Per element, in fp64 (the order of forward_ref.h): acc = x1 (+ x2), or the
 * first present slot term; then for each slot in order acc = acc + s * (x + b),
 * then one rounding to the dtype. A block of 8 * MF_V_FWD_NV elements keeps
 * its sums in registers across all the token's slots; blocks of 32 follow,
 * then the last n % 32 elements through forward_ref.h one at a time. The
 * lanes are elements in the layer's vd_ld16p order; acc tiles (MF_FWD_LOAD)
 * keep that order, so they are read back only by the same table, j0 and n.
 *
 * A token whose slots fit one call (flags == MF_FWD_FINAL) with fp32 scales
 * takes the fp32 order of forward_ref.h instead: blocks of 8 * MF_V_FWD_NV
 * (16-bit data; 32 for fp32) then 32 elements sum in fp32 (vf_ld32f lanes), each 32-element group is stored if
 * every sum passes vf_in_range and is otherwise redone by f_block in fp64;
 * the last n % 32 elements are one group through mf_fwd_group32_ref. */
#ifndef MOEFR_KERNELS_FBODY_H_
#define MOEFR_KERNELS_FBODY_H_

#include "kernels/forward_ref.h"

#ifdef MF_V_NO_UNROLL /* see kbody.h */
#define MF_F_UNROLL
#else
#define MF_F_UNROLL _Pragma("GCC unroll 8")
#endif

MF_INLINE void f_block(mf_dt dt, const mf_fwd_row *t, size_t j, size_t i, double *acc, int load, int fin, int nt,
                       const int nv) {
    const size_t es = dt == MF_F32 ? 4 : 2;
    for (int q = 0; q < t->nnext; q++) /* the next token's rows, at this offset */
        for (size_t o = 0; o < 8 * (size_t)nv * es; o += 64) v_prefetch((const char *)t->next[q] + j * es + o);
    mf_vd a[8];
    int have = 0;
    if (load) {
        MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vd_ldu(acc + i + 8 * v);
        have = 1;
    } else if (t->x1) {
        MF_F_UNROLL for (int h = 0; h < nv / 2; h++) vd_ld16p(dt, t->x1, j + 16 * h, a + 2 * h);
        if (t->x2) {
            mf_vd w[8];
            MF_F_UNROLL for (int h = 0; h < nv / 2; h++) vd_ld16p(dt, t->x2, j + 16 * h, w + 2 * h);
            MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vd_add(a[v], w[v]);
        }
        have = 1;
    } else {
        MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vd_zero();
    }
    for (int q = 0; q < t->nk; q++) {
        const void *x = t->x[q], *b = t->b[q];
        const void *first = x ? x : b;
        if (!first) continue;
        mf_vd w[8];
        MF_F_UNROLL for (int h = 0; h < nv / 2; h++) vd_ld16p(dt, first, j + 16 * h, w + 2 * h);
        if (x && b) {
            mf_vd u[8];
            MF_F_UNROLL for (int h = 0; h < nv / 2; h++) vd_ld16p(dt, b, j + 16 * h, u + 2 * h);
            MF_F_UNROLL for (int v = 0; v < nv; v++) w[v] = vd_add(w[v], u[v]);
        }
        const mf_vd s = vd_set1(t->s[q]);
        if (have && !(x && b)) /* w is one widened input: s * w is exact */
            MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vd_madd_exact(a[v], s, w[v]);
        else if (have)
            MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vd_add(a[v], vd_mul(s, w[v]));
        else
            MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vd_mul(s, w[v]);
        have = 1;
    }
    if (fin) /* a is +0.0 when nothing was present */
        MF_F_UNROLL for (int h = 0; h < nv / 4; h++) vd_st32p(dt, t->out, j + 32 * h, a + 4 * h, nt);
    else if (have)
        MF_F_UNROLL for (int v = 0; v < nv; v++) vd_stu(acc + i + 8 * v, a[v]);
}

/* A group that failed its pass test, again in the fp64 order. Rare, so one
 * out-of-line copy serves every dtype and block width (code size and
 * compile time: an inlined f_block per group and dtype doubled them). */
static __attribute__((noinline)) void f_redo(mf_dt dt, const mf_fwd_row *t, size_t j, int nt) {
    f_block(dt, t, j, 0, NULL, 0, 1, nt, 4);
}

#ifndef MF_V_FWD_LD32
/* The forward's 32-element load (vec.h): vf_ldp's order unless the layer has its own. */
MF_INLINE void vf_ld32f(mf_dt dt, const void *p, size_t j, mf_vf v[2]) {
    v[0] = vf_ldp(dt, p, j), v[1] = vf_ldp(dt, p, j + 16);
}
#endif

/* nv mf_vf (2 per 32-element group, vf_ld32f's order) of the fp32 order at
 * element j of a call ending at element end. */
MF_INLINE void f32_block(mf_dt dt, const mf_fwd_row *t, const float *s32, size_t j, size_t end, int nt, const int nv) {
    const size_t es = dt == MF_F32 ? 4 : 2;
    for (int q = 0; q < t->nnext; q++)
        for (size_t o = 0; o < 16 * (size_t)nv * es; o += 64) v_prefetch((const char *)t->next[q] + j * es + o);
    /* this token's own rows, t->ahead bytes on, while that stays in [j0, end) */
    if (t->ahead && (j + 16 * (size_t)nv) * es + t->ahead <= end * es)
        for (int q = 0; q < t->nk; q++)
            for (size_t o = 0; t->x[q] && o < 16 * (size_t)nv * es; o += 64)
                v_prefetch((const char *)t->x[q] + j * es + t->ahead + o);
    mf_vf a[4], w[4], u[4];
    int have = 0;
    MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vf_zero();
    if (t->x1) {
        MF_F_UNROLL for (int g = 0; g < nv / 2; g++) vf_ld32f(dt, t->x1, j + 32 * g, a + 2 * g);
        if (t->x2) {
            MF_F_UNROLL for (int g = 0; g < nv / 2; g++) vf_ld32f(dt, t->x2, j + 32 * g, u + 2 * g);
            MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vf_add(a[v], u[v]);
        }
        have = 1;
    }
    for (int q = 0; q < t->nk; q++) {
        const void *x = t->x[q], *b = t->b[q];
        const void *first = x ? x : b;
        if (!first) continue;
        const mf_vf s = vf_set1(s32[q]);
        MF_F_UNROLL for (int g = 0; g < nv / 2; g++) vf_ld32f(dt, first, j + 32 * g, w + 2 * g);
        if (x && b) {
            MF_F_UNROLL for (int g = 0; g < nv / 2; g++) vf_ld32f(dt, b, j + 32 * g, u + 2 * g);
            MF_F_UNROLL for (int v = 0; v < nv; v++) w[v] = vf_add(w[v], u[v]);
        }
        if (have) MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vf_fma(a[v], s, w[v]);
        else MF_F_UNROLL for (int v = 0; v < nv; v++) a[v] = vf_mul(s, w[v]);
        have = 1;
    }
    const uint32_t hi = mf_fwd_hi_bits(dt);
    MF_F_UNROLL for (int g = 0; g < nv / 2; g++) {
        if (vf_in_range(a[2 * g], hi) & vf_in_range(a[2 * g + 1], hi))
            vf_stp(dt, t->out, j + 32 * g, a + 2 * g, nt);
        else
            f_redo(dt, t, j + 32 * g, nt);
    }
}

MF_INLINE int f_row(mf_dt dt, const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    const int load = flags & MF_FWD_LOAD, fin = flags & MF_FWD_FINAL;
    const int have0 = load || mf_fwd_has_term(t);
    const size_t es = dt == MF_F32 ? 4 : 2;
    if (!MF_V_NT || !fin || ((uintptr_t)((char *)t->out + j0 * es) & 63)) nt = 0; /* whole aligned lines */
    size_t i = 0;
    float s32[MF_FWD_KMAX];
    if (flags == MF_FWD_FINAL && have0 && mf_fwd_s32(t, s32)) {
#if MF_V_FWD_NV == 8
        /* 64 elements a block where registers are wide, but only for 16-bit
         * data: a block reads at most 128 bytes of each row. fp32 blocks of
         * 64 (256 bytes of each of K rows in flight) ran the forward at
         * 0.42-0.67 of memcpy on Zen 4, blocks of 32 at 0.79-0.87 (docs/BENCHMARKS.md,
         * "The forward's fp32 groups"). The groups, and so the bits, are the same. */
        if (dt != MF_F32)
            for (; i + 64 <= n; i += 64) f32_block(dt, t, s32, j0 + i, j0 + n, nt, 4);
#endif
        for (; i + 32 <= n; i += 32) f32_block(dt, t, s32, j0 + i, j0 + n, nt, 2);
        if (i < n) mf_fwd_group32_ref(dt, t, s32, j0, i, n);
        return 1;
    }
#if MF_V_FWD_NV == 8
    for (; i + 64 <= n; i += 64) f_block(dt, t, j0 + i, i, acc, load, fin, nt, 8);
#endif
    for (; i + 32 <= n; i += 32) f_block(dt, t, j0 + i, i, acc, load, fin, nt, 4);
    if (i < n) mf_fwd_row_ref(dt, t, j0, i, n, acc, flags);
    return have0;
}

static int f_row_f32(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    return f_row(MF_F32, t, j0, n, acc, flags, nt);
}
static int f_row_f16(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    return f_row(MF_F16, t, j0, n, acc, flags, nt);
}
static int f_row_bf16(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    return f_row(MF_BF16, t, j0, n, acc, flags, nt);
}

#define MF_FWD_TABLE(NAME) {NAME, {f_row_f32, f_row_f16, f_row_bf16}, v_fence}

#endif /* MOEFR_KERNELS_FBODY_H_ */
