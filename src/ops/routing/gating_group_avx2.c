/* gating_group_avx2.c - the MoeGatingTopK / MoeFusedTopk row routine on
 * eight-lane vectors, compiled with -mavx2 only (no -mfma: the same
 * operations as the four-lane generic build, so the same bits;
 * gating_group_core.h). Chosen when the kernel path is avx2 or avx512. */
#define GT_W 8
#define GG_ROWS mf_gating_group_rows_avx2
#include "ops/routing/gating_group_core.h"
