/* scalar.c - the reference kernels: the template kernels (kbody.h, fbody.h)
 * over the plain-C layer (vec_scalar.h). Always compiled, always tested; every
 * SIMD table runs the same templates over its own layer and must match these
 * bit for bit. */
#include "kernels/vec_scalar.h"

#include "kernels/fbody.h"
#include "kernels/kbody.h"

const mf_ukernels mf_ukernels_scalar = MF_UK_TABLE(MF_V_ISA);
const mf_fwd_kernels mf_fwd_kernels_scalar = MF_FWD_TABLE(MF_V_ISA);
