/* swiglu_avx512bf16.c - the sixteen-lane block routines of swiglu_avx512.c,
 * built with AVX512-BF16 as well: bfloat16 results are rounded by
 * VCVTNEPS2BF16 (ops/gv.h, gv_store_bf16: the same bits, subnormals redone
 * in integers). Chosen on CPUs that have it (the avx512 path's kernel table
 * with AVX512-BF16). */
#define GT_W 16
#define SG_NAME "avx512bf16"
#define SG_TABLE mf_swiglu_avx512bf16
#include "ops/act/swiglu_core.h"
