/* vec.h - the contract of the per-ISA vector-primitive layers (vec_scalar.h,
 * vec_avx2.h, vec_avx512.h, vec_neon.h). The kernels are written once, in
 * kbody.h (backward) and fbody.h (forward), over these primitives; each ISA's
 * .c file includes its layer and the templates and is compiled with its own
 * flags. A layer never reorders arithmetic: every primitive is the same IEEE
 * operation on each lane, so any layer gives the same bits as any other.
 *
 * Types: mf_vf holds 16 fp32 lanes (elements j..j+15, in order); mf_vd holds 8
 * fp64 lanes (the canonical 8 partial sums of SPEC section 4 are one mf_vd).
 *
 *   vf_ld(dt, p, j)        16 elements of dtype dt at p[j..], widened exactly
 *   vf_set1(s), vf_mul     broadcast; lane-wise fp32 multiply (one rounding)
 *   vf_st32(dt, p, j, lo, hi, nt, normal)
 *                          32 fp32 values rounded to nearest even to dt (NaN:
 *                          fp.h's quiet NaN) stored to p[j..j+31]; nt: a
 *                          streaming store (p + j 64-byte aligned, whole lines);
 *                          normal: the caller proved no value is an fp32
 *                          subnormal (a hint; layers may ignore it)
 *   vd_ld(dt, p, j)        8 elements widened exactly to fp64
 *   vd_zero, vd_set1, vd_ldu, vd_stu, vd_add, vd_mul
 *   vd_madd_exact(a, t, g) a + t * g where the caller knows t * g is exact in
 *                          fp64 (both factors <= 24 significant bits): a layer
 *                          may fuse it, the bits are those of mul then add
 *   vd_ld16p(dt, p, j, v)  16 elements widened to fp64 into v[0], v[1] in a
 *                          layer-chosen lane order (the forward only)
 *   vd_st32p(dt, p, j, v, nt)
 *                          32 fp64 values in vd_ld16p's order (v[0..1] from
 *                          p[j..j+15], v[2..3] from p[j+16..]) rounded once,
 *                          RNE, to dt, NaN canonical (forward_ref.h mf_fwd_st)
 *   vf_zero, vf_add, vf_ldu, vf_stu
 *   vf_madd_exact(a, x, g) a + x * g where the product is exact in fp32 (fp16
 *                          data): a layer may fuse it
 *   vf_finite(a)           1 if all 16 lanes are finite
 *   vf_fma(a, s, v)        a + s * v, one rounding (IEEE fusedMultiplyAdd)
 *   vf_ldp(dt, p, j)       16 elements widened exactly to fp32 in a layer-chosen
 *                          lane order, the same for every p and j (the forward's
 *                          fp32 blocks, the backward's loads)
 *   vf_ld32f(dt, p, j, v)  the forward's fp32 blocks: 32 elements widened
 *                          exactly into v[0], v[1] in a layer-chosen lane
 *                          order (fbody.h's default: vf_ldp of p[j..j+15],
 *                          then of p[j+16..]; a layer with its own defines
 *                          MF_V_FWD_LD32)
 *   vf_stp(dt, p, j, v, nt)
 *                          32 finite fp32 values in vf_ld32f's order rounded
 *                          to nearest even to dt and stored to p[j..j+31]; nt
 *                          as vf_st32
 *   vf_st32p(dt, p, j, lo, hi, nt, normal, nonan)
 *                          vf_st32 of values in vf_ldp's order; nonan: the
 *                          caller proved no value is NaN (a hint)
 *   vf_unpair(dt, s)       vf_ldp's order back to element order
 *                          (only layers defining MF_V_LDP_PAIRED have these
 *                          two, and no vf_st32; kbody.h gives the other
 *                          layers element-order defaults over vf_st32)
 *   v_bf16_finite32(p, j)  1 if the 32 bf16 values at p[j..] are finite
 *                          (only layers defining MF_V_NAN_HINT 1)
 *   vf_in_range(a, hi)     1 if every lane is finite with 2^-100 <= |a| and
 *                          |a| bits < hi (the forward's pass test, DESIGN.md)
 *   mf_vm, vm_init, vm_nzmin(m, a), vm_hmin(m)
 *                          running minimum of (|a| bits - 1) as unsigned, so
 *                          zeros drop out (gradScales' range test); any lane
 *                          layout; vm_hmin gives the minimum over all lanes
 *   vd_fold16(a, s)        a[l] = (a[l] + s[l]) + s[l + 8], l = 0..7, the
 *                          fp32 lanes widened exactly
 *   v_prefetch(p), v_stream64(d, s), v_fence()
 *
 * Constants: MF_V_ISA (table name), MF_V_QMAX (slots one multi-slot pass
 * keeps in registers: 1, 4 or 8), MF_V_QMAX_F32_BIAS (the same for fp32 data
 * with a bias; MF_V_QMAX unless the layer sets it), MF_V_FWD_NV (mf_vd sums per forward block, 4 or 8),
 * MF_V_NT (1 if streaming stores exist), MF_V_NT_MULTIROW (1 if they pay off
 * while one pass writes several rows in turn; else only single-row passes
 * stream), MF_V_NORMAL_HINT (1 if vf_st32 is
 * cheaper given `normal`; then vf_abs_below(lo, hi, bound) says whether any
 * |lane| < bound). */
#ifndef MOEFR_KERNELS_VEC_H_
#define MOEFR_KERNELS_VEC_H_

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/tail.h"

/* Optimized builds inline every layer primitive and body (constant Q and
 * presence flags fold away). At -O0 gcc gives each inlined copy its own stack
 * slots, so forcing it made k_multi's frame ~470 KB (issue 23): there the
 * bodies stay ordinary calls and every frame stays small. Sanitizer builds
 * define MF_NO_FORCE_INLINE (CMakeLists.txt): forced inlining under ASan
 * costs gcc minutes per kernel file. Bits are the same either way. */
#if defined(__OPTIMIZE__) && !defined(MF_NO_FORCE_INLINE)
#define MF_INLINE static inline __attribute__((always_inline))
#else
#define MF_INLINE static inline
#endif

#endif /* MOEFR_KERNELS_VEC_H_ */
