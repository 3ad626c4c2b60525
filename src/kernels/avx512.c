/* avx512.c - the template kernels (kbody.h, fbody.h) over the AVX-512 F/BW/VL
 * layer (vec_avx512.h), bf16 rounding in integers; this file alone is built
 * with those flags. The forward table is this one's (it rounds from fp64). */
#include "kernels/vec_avx512.h"

#include "kernels/fbody.h"
#include "kernels/kbody.h"

const mf_ukernels mf_ukernels_avx512 = MF_UK_TABLE(MF_V_ISA);
const mf_fwd_kernels mf_fwd_kernels_avx512 = MF_FWD_TABLE(MF_V_ISA);
