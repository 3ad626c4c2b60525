/* neon.c - the template kernels (kbody.h, fbody.h) over the AArch64 Advanced
 * SIMD layer (vec_neon.h). ASIMD is part of the AArch64 base ISA, so no extra
 * flags are needed; dispatch still checks HWCAP_ASIMD. */
#include <string.h>

#include "kernels/vec_neon.h"

#include "kernels/fbody.h"
#include "kernels/kbody.h"

const mf_ukernels mf_ukernels_neon = MF_UK_TABLE(MF_V_ISA);
const mf_fwd_kernels mf_fwd_kernels_neon = MF_FWD_TABLE(MF_V_ISA);
