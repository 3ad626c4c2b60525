/* routing.h - what the routing operators (init routing, token permute and
 * their backwards) share: the row gather their data movement is made of,
 * and the reading of an expert-id tensor into sort keys. */
#ifndef MOEFR_OPS_ROUTING_ROUTING_H_
#define MOEFR_OPS_ROUTING_ROUTING_H_

#include "ops/common.h"
#include "ops/sort.h"

/* dst row i (contiguous, H elements of es bytes) = src row map[i] / div,
 * bit for bit, for i in [0, n); map[i] < 0 gives a row of +0.0 (zero bytes).
 * Parallel over rows; streaming stores for large outputs. */
void mf_gather_rows(const mf_rows *src, int64_t H, size_t es, const int32_t *map, int64_t div, int64_t n,
                    char *dst);

/* Reads the T = N*K expert ids of expertIdx ((N, K), or (N) with K = 1;
 * INT32 or INT64, any strides) into key[j], j = r*K + k. Each must lie in
 * [0, hi); the first that does not is 161002 with a message naming it. When
 * counts is not NULL (hi entries), it receives the per-id totals. *max_key:
 * the largest id (0 when T = 0). */
aclnnStatus mf_read_expert_keys(const char *op, const char *name, const aclTensor *eidx, int64_t N, int64_t K,
                                int64_t hi, uint32_t *key, int64_t *counts, int64_t *max_key);

#endif /* MOEFR_OPS_ROUTING_ROUTING_H_ */
