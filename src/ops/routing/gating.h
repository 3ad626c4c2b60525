/* gating.h - what the MoeGatingTopKSoftmax(V2) front ends
 * (gating_top_k_softmax.c) share with the row routine, which gating_core.h
 * builds once per vector width (generic four lanes there, AVX2 eight lanes in
 * gating_avx2.c; the same bits either way). */
#ifndef MOEFR_OPS_ROUTING_GATING_H_
#define MOEFR_OPS_ROUTING_GATING_H_

#include "ops/common.h"

#define GT_MAX_K 1024
#define GT_MAX_E_950 2048      /* moe_gating_top_k_softmax_tiling_arch35.cpp, DoOpTiling */
#define GT_STACK_E 2048        /* rows up to this many experts use a stack buffer */
#define GT_INSERT_K 32         /* k up to this: insertion into a sorted list; above: a heap */
#define GT_SERIAL_ELEMS 16384  /* below this many x elements, one thread */
#define GT_PAD(n) (((n) + 7) & ~(int64_t)7)

typedef struct gt_plan {
    bool empty;
    bool renorm;   /* top-k of the logits, then softmax over the k */
    bool softmax;  /* write the full softmax (V2, renorm 0, flag set) */
    bool row_idx;  /* V1 */
    int64_t R, E, k;
    int xi, fi, yi, ei, ri, si; /* tensor slots; -1 when the operator has none */
} gt_plan;

typedef struct gt_ctx {
    const gt_plan *p;
    mf_rows x;
    int dtype;
    mf_small fin;
    bool has_fin;
    int64_t fin_cols; /* finished is (B, S): row r at (r / S, r % S) */
    char *y;
    int32_t *eidx, *ridx;
    float *sm;
    float *ws; /* E > GT_STACK_E: per row GT_PAD(E) floats, then as many int32 keys */
} gt_ctx;

/* Rows [r0, r1) of a gt_ctx: an mf_range_fn. */
void mf_gating_rows_generic(void *ctx, int64_t r0, int64_t r1);
#if defined(MOEFR_X86_KERNELS)
void mf_gating_rows_avx2(void *ctx, int64_t r0, int64_t r1);
#endif

#endif /* MOEFR_OPS_ROUTING_GATING_H_ */
