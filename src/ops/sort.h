/* sort.h - the routing family's one sort: stable, by expert id.
 *
 * Given T keys (expert ids, key[j] in [0, key_hi)), perm receives the flat
 * positions j in ascending key order, equal keys by ascending j (stable).
 * That order is unique, so the result is the same on every thread count.
 *
 * Counting sort: the positions are cut into chunks whose number depends only
 * on T; each chunk counts its keys, one serial pass turns the (key, chunk)
 * counts into start offsets, and each chunk then writes its positions in
 * order. Chunks run on the worker pool. Keys of more than MF_SORT_DIGIT_BITS
 * bits take two such passes (low digit, then high; LSD radix, each stable). */
#ifndef MOEFR_OPS_SORT_H_
#define MOEFR_OPS_SORT_H_

#include "internal.h"

#define MF_SORT_DIGIT_BITS 16
/* Largest key_hi the sort takes: keys are below 2^31 (int32 positions). */
#define MF_SORT_KEY_MAX ((int64_t)1 << 31)

/* Scratch bytes mf_sort_by_key needs for T keys below key_hi (64-byte
 * multiples; 0 when T == 0). */
uint64_t mf_sort_scratch_bytes(int64_t T, int64_t key_hi);
/* perm[i] = j of the i-th smallest (key, j). T < 2^31, 1 <= key_hi <=
 * MF_SORT_KEY_MAX, every key < key_hi. scratch: mf_sort_scratch_bytes(T,
 * key_hi) bytes, 64-byte aligned. counts (may be NULL): when key_hi <=
 * 2^MF_SORT_DIGIT_BITS, receives the key_hi per-key totals. */
void mf_sort_by_key(const uint32_t *key, int64_t T, int64_t key_hi, int32_t *perm, void *scratch,
                    int64_t *counts);

#endif /* MOEFR_OPS_SORT_H_ */
