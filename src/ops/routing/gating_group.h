/* gating_group.h - what the MoeGatingTopK and MoeFusedTopk front ends
 * (gating_group.c) share with their row routine, which gating_group_core.h
 * builds once per vector width (four lanes in gating_group.c, eight in
 * gating_group_avx2.c; the same bits either way). */
#ifndef MOEFR_OPS_ROUTING_GATING_GROUP_H_
#define MOEFR_OPS_ROUTING_GATING_GROUP_H_

#include "ops/common.h"

#define GG_MAX_E 2048 /* both operators' bound on the experts (2048, 1024) */
#define GG_MAX_G 256  /* groups when grouped: Fused <= 256; GatingTopK <= 2048 / 32 (the aligned width) */

typedef struct gg_plan {
    bool empty;
    bool fused;     /* MoeFusedTopk: unkept groups' b become b * 0, all E compete */
    bool sigmoid;   /* else softmax (MoeGatingTopK normType 0) */
    bool has_bias;
    bool grouped;   /* false: every expert competes (one group, or every group kept) */
    bool renorm_y;  /* GatingTopK: y / (sum + eps) (sigmoid); Fused: y * (1 / sum) (isNorm) */
    bool scale_y;   /* multiply y by scale (GatingTopK always; Fused with isNorm) */
    bool out_flag;  /* GatingTopK: write s to outOut */
    bool mapping;   /* Fused: enableExpertMapping */
    int64_t R, E, k, G, P, kG;
    int64_t topn;   /* group score: the sum of the topn largest b (1: the max) */
    float scale, eps;
    int64_t tdim;   /* mappingTable's columns */
    int xi, bi, yi, ei, oi, mni, mti; /* tensor slots; -1 when absent */
} gg_plan;

typedef struct gg_ctx {
    const gg_plan *p;
    mf_rows x;
    int dtype, ydtype;
    const float *bias; /* GT_PAD(E) floats, widened once */
    char *y;
    int64_t ys0, ys1; /* bytes */
    char *eidx;
    int64_t es0, es1;
    float *out;        /* contiguous (N, E) */
    float *wy;         /* mapping: y and raw expert ids go here first, (R, k) each */
    int32_t *we;
} gg_ctx;

void mf_gating_group_rows_generic(void *ctx, int64_t r0, int64_t r1);
#if defined(MOEFR_X86_KERNELS)
void mf_gating_group_rows_avx2(void *ctx, int64_t r0, int64_t r1);
#endif

#endif /* MOEFR_OPS_ROUTING_GATING_GROUP_H_ */
