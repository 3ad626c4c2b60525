/* swiglu_avx2.c - SwiGlu's block routines on eight-lane vectors, compiled
 * with -mavx2 only (no -mfma: the same operations as the generic four-lane
 * build in swiglu.c, so the same bits). Chosen when the kernel path is avx2
 * or avx512. */
#define GT_W 8
#define SG_FWD mf_swiglu_fwd_avx2
#define SG_BWD mf_swiglu_bwd_avx2
#define SG_NARROW_BF16 mf_swiglu_narrow_bf16_avx2
#define SG_FWD16 mf_swiglu_fwd16_avx2
#define SG_BWD16 mf_swiglu_bwd16_avx2
#include "ops/act/swiglu_core.h"
