/* routing_map_avx2.c - the routing-map unpermute's row loops on eight-lane
 * vectors, compiled with -mavx2 only (no -mfma: the same operations as the
 * generic build in routing_map.c, so the same bits). Chosen when the kernel
 * path is avx2 or avx512. */
#define GT_W 8
#define RM_ACC mf_rm_acc_avx2
#define RM_SUM mf_rm_sum_avx2
#include "ops/routing/routing_map_acc.h"
