/* gmm.h - GroupedMatmul's plan, shared by its front ends (grouped_matmul.c:
 * V1-V5, the phase-1 rules) and its phase 2 (gmm_run.c: the groups, the
 * tiles and the BLAS calls). */
#ifndef MOEFR_OPS_GMM_GMM_H_
#define MOEFR_OPS_GMM_GMM_H_

#include "ops/common.h"

#define GMM_MAX_LIST 128     /* tensors in x or weight (CheckGroupSize) */
#define GMM_MAX_GROUPS 1024  /* entries of a tensor groupList (MAX_GROUP_LIST_SIZE_TENSOR) */

/* One plan; the descriptors of the lists follow it: x[nx], weight[nw],
 * bias[nb], out[ny], scale[ns], perTokenScale[npt], antiquantScale[nas],
 * antiquantOffset[nas] (copies taken at phase 1; their data addresses are the
 * ones phase 2 reads). The group list, when there is one, is the executor's
 * tensor slot 0 (read at phase 2, as CANN reads it on the device). */
typedef struct gmm_plan {
    const char *op;  /* the front end's name, for messages */
    bool empty;      /* every x empty: nothing to do */
    int gt;          /* -1 no split, 0 M split, 2 K split */
    int list_type;   /* 0 cumulative ends, 1 counts */
    bool int_array;  /* V1/V2: the group list came as an aclIntArray (values in gl[]) */
    bool accumulate; /* GroupedMatmulAdd: out += the products (out fp32, read first); an empty group leaves it */
    int nx, nw, nb, ny;
    int64_t E;       /* groups */
    int64_t M, K, N; /* single x (gt 0): M rows; gt 2: M, total K */
    int dtype, bias_dtype;
    /* The A8W8 rows (int8 x and weight; CANN's quantised GroupedMatmul):
     * GMM_Q_NONE the float rows; GMM_Q_INT32 out = the int32 accumulator
     * (+ int32 bias), exactly; GMM_Q_DEQ out = (acc + bias) * scale[n]
     * (* perTokenScale[m]) in fp32, rounded once to out's BF16 or FLOAT16;
     * GMM_Q_REQ out INT8 = saturate(round(fp32(acc + bias) * scale19[n]) + offset9[n]), the
     * UINT64 / INT64 scale's fixpipe fields (docs/CANN_COMPAT.md). */
    int quant;
    int out_dtype, scale_dtype;
    int ns, npt; /* scale tensors (one per weight), per-token scale tensors (0 or 1) */
    /* The A16W8 rows (16-bit x, int8 weight): each weight element becomes
     * (w + antiquantOffset[n]) * antiquantScale[n] in x's dtype, as CANN's
     * AscendAntiQuant forms it, before the float product. nas: the
     * antiquant scale tensors (as many offset tensors follow them). */
    bool antiquant;
    int nas;
    int64_t aq_gsize; /* int4 weights: K rows per antiquant group (0: per-channel) */
    int wpack;        /* 8: the weights are INT32 holding eight int4 each along N (lowest nibble first) */
    int64_t mt, nt;     /* output tile: rows, columns (fixed by the shapes, never by the thread count) */
    int64_t mrows;      /* the most rows a group can have (bounds a tile's rows) */
    int64_t kmax;       /* the largest K of a group */
    bool pack_a, pack_b; /* some x / weight cannot go to the BLAS in place (16-bit or general strides) */
    int64_t sm, sn;     /* a tile's rows and columns at most: scratch is C (cf), A (sm x kmax), B (kmax x sn) */
    int64_t cf;         /* C's floats: sm x sn, or more for the streamed tiles of a few rows (gmm_run.c) */
    int64_t scratch;    /* floats of scratch per worker */
    int workers;        /* scratch areas in the workspace */
    int64_t gl[GMM_MAX_LIST]; /* V1/V2 group list values (int_array) */
    aclTensor t[];      /* nx + nw + nb + ny + ns + npt descriptors */
} gmm_plan;

static inline const aclTensor *gmm_x(const gmm_plan *p, int i) { return &p->t[i]; }
static inline const aclTensor *gmm_w(const gmm_plan *p, int i) { return &p->t[p->nx + i]; }
static inline const aclTensor *gmm_b(const gmm_plan *p, int i) { return &p->t[p->nx + p->nw + i]; }
static inline const aclTensor *gmm_y(const gmm_plan *p, int i) { return &p->t[p->nx + p->nw + p->nb + i]; }
static inline const aclTensor *gmm_s(const gmm_plan *p, int i) { return &p->t[p->nx + p->nw + p->nb + p->ny + i]; }
static inline const aclTensor *gmm_pt(const gmm_plan *p) { return &p->t[p->nx + p->nw + p->nb + p->ny + p->ns]; }
static inline const aclTensor *gmm_aqs(const gmm_plan *p, int i) {
    return &p->t[p->nx + p->nw + p->nb + p->ny + p->ns + p->npt + i];
}
static inline const aclTensor *gmm_aqo(const gmm_plan *p, int i) {
    return &p->t[p->nx + p->nw + p->nb + p->ny + p->ns + p->npt + p->nas + i];
}

enum { GMM_Q_NONE, GMM_Q_INT32, GMM_Q_DEQ, GMM_Q_REQ };

/* Phase 2 (an mf_run_fn): t[0] is the group list tensor or NULL. */
aclnnStatus mf_gmm_run(const void *plan, const aclTensor *const *t, void *workspace);
/* Tile shape and scratch for a plan whose shapes, mrows, kmax and pack
 * flags are set (phase 1). */
void mf_gmm_tiles(gmm_plan *p);
/* The BLAS reads t in place: its rows (all dims but the last) as one matrix,
 * or for a weight of 3 dims each (K, N) slice. */
bool mf_gmm_direct(const aclTensor *t, bool weight);
/* Workspace bytes phase 2 needs for p. */
uint64_t mf_gmm_workspace(const gmm_plan *p);

#endif /* MOEFR_OPS_GMM_GMM_H_ */
