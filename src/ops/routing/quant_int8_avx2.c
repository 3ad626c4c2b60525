/* quant_int8_avx2.c - the dynamic int8 quantisation's loops on eight-lane
 * vectors, compiled with -mavx2 (quant_int8_core.h: the same bytes as the
 * four-lane generic build). Chosen when the kernel path is avx2 or avx512. */
#define GT_W 8
#define Q8_ABSMAX mf_q8_absmax_avx2
#define Q8_QUANT mf_q8_quant_avx2
#include "ops/routing/quant_int8_core.h"
