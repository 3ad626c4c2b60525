/* forward_scalar.c - the forward's reference kernels: plain C, always compiled,
 * the definition every SIMD path must match bit for bit; also the table choice. */
#include <string.h>

#include "kernels/forward_ref.h"

static int row_f32(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    (void)nt;
    return mf_fwd_row_ref(MF_F32, t, j0, 0, n, acc, flags);
}
static int row_f16(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    (void)nt;
    return mf_fwd_row_ref(MF_F16, t, j0, 0, n, acc, flags);
}
static int row_bf16(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    (void)nt;
    return mf_fwd_row_ref(MF_BF16, t, j0, 0, n, acc, flags);
}

static void fence_none(void) {}

const mf_fwd_kernels mf_fwd_kernels_scalar = {"scalar", {row_f32, row_f16, row_bf16}, fence_none};

const mf_fwd_kernels *mf_fwd_kernels_select(void) {
    /* Follow the backward's choice so MOEFR_ISA forces both operators alike. */
    const char *isa = mf_kernels()->isa;
#if defined(MOEFR_X86_KERNELS)
    if (strcmp(isa, "avx512") == 0) return &mf_fwd_kernels_avx512;
    if (strcmp(isa, "avx2") == 0) return &mf_fwd_kernels_avx2;
#else
    (void)isa;
#endif
    return &mf_fwd_kernels_scalar;
}
