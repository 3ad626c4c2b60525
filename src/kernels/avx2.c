/* avx2.c - the template kernels (kbody.h, fbody.h) over the AVX2 + FMA + F16C
 * layer (vec_avx2.h); this file alone is built with those flags. */
#include "kernels/vec_avx2.h"

#include "kernels/fbody.h"
#include "kernels/kbody.h"

const mf_ukernels mf_ukernels_avx2 = MF_UK_TABLE(MF_V_ISA);
const mf_fwd_kernels mf_fwd_kernels_avx2 = MF_FWD_TABLE(MF_V_ISA);
