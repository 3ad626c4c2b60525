/* oracles.h - compact independent references for the routing operators,
 * written from SPEC section 9 alone (no library code): integer results
 * exactly, sums in float64 rounded once by tests/fwd_ref.c's own RNE. The
 * fuzz harness draws small data whose every partial sum is exact, so any
 * summation order the library uses gives the same bits. */
#ifndef MOEFR_FUZZ_ORACLES_H_
#define MOEFR_FUZZ_ORACLES_H_
#include <stdbool.h>
#include <stdint.h>

/* MoeComputeExpertTokens: out[e] = #{i : v[i] <= e}, e < E. */
void or_compute_expert_tokens(const int32_t *v, int64_t n, int64_t E, int32_t *out);
/* out[r] (R rows of H, dtype dt) = sum over k < K of g[idx[r*K + k]] for
 * 0 <= idx < keep (g has at least keep rows of H); every row written. */
void or_gather_sum(int dt, const void *g, int64_t H, const int64_t *idx, int64_t R, int64_t K, int64_t keep,
                   void *out);
/* The stable sort of SPEC 9: perm[i] = flat position of the i-th entry in
 * ascending expert id, ties by smaller position. */
void or_stable_sort(const int64_t *key, int64_t T, int64_t *perm);
/* MoeInitRoutingV2 (and MoeTokenPermute, dropless): x (N, H) of es-byte
 * elements, expert ids (N*K). Fills rowidx (T) and ex: dropless A rows
 * (A = T if active == 0 else min(active, T)); drop-pad E*C rows with +0.0
 * (zero bytes) in unfilled slots. cnt (E, may be NULL): flag 1 inclusive
 * cumsum, 2 counts (dropless); before (E, may be NULL): counts (drop-pad). */
void or_init_routing_v2(const void *x, int64_t N, int64_t H, int es, const int64_t *eid, int64_t K, int64_t active,
                        int64_t E, int64_t C, int droppad, int flag, int32_t *rowidx, void *ex, int64_t *cnt,
                        int64_t *before);
/* MoeGatingTopKSoftmax(V2) on logits in float64: softmax over E (or, with
 * renorm, over the top k logits), stable descending top-k (ties to the lower
 * expert). y (N*k) as float64, eidx (N*k); finished[r] true gives eidx = E. */
void or_gating(const double *x, int64_t N, int64_t E, int64_t k, int renorm, const bool *finished, double *y,
               int32_t *eidx, double *softmax);
/* MoeInitRouting (V1): x (N, H), rowIdx and expert ids (N*K, flat j = r*K + k).
 * i-th of the stable sort: expandedExpertIdx[i] = eid[j], expandedRowIdx[rowIdx[j]] = i,
 * expandedX[i] = x[rowIdx[j] % N] for i < A = min(active, N) * K. */
void or_init_routing(const void *x, int64_t N, int64_t H, int es, const int64_t *ridx, const int64_t *eid, int64_t K,
                     int64_t active, void *ex, int32_t *row, int32_t *eex);
#endif
