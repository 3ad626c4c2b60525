/* forward_scalar.c - which forward table goes with the backward's choice (the
 * scalar forward table itself is built in scalar.c, from fbody.h). */
#include <string.h>

#include "kernels/forward.h"

const mf_fwd_kernels *mf_fwd_kernels_select(void) {
    /* Follow the backward's choice so MOEFR_ISA forces both operators alike. */
    const char *isa = mf_kernels()->isa;
#if defined(MOEFR_X86_KERNELS)
    if (strcmp(isa, "avx512") == 0) return &mf_fwd_kernels_avx512;
    if (strcmp(isa, "avx2") == 0) return &mf_fwd_kernels_avx2;
#elif defined(MOEFR_NEON_KERNELS)
    if (strcmp(isa, "neon") == 0) return &mf_fwd_kernels_neon;
#else
    (void)isa;
#endif
    return &mf_fwd_kernels_scalar;
}
