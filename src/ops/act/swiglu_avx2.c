/* swiglu_avx2.c - SwiGlu's block routines on eight-lane vectors, compiled
 * with -mavx2 only (no -mfma: the same operations as the generic four-lane
 * build in swiglu.c, so the same bits). Chosen when the kernel path is avx2
 * or avx512. */
#define GT_W 8
#define SG_NAME "avx2"
#define SG_TABLE mf_swiglu_avx2
#include "ops/act/swiglu_core.h"
