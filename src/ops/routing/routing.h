/* routing.h - what the routing operators (init routing, token permute and
 * their backwards) share: the row gather their data movement is made of,
 * and the reading of an expert-id tensor into sort keys. */
#ifndef MOEFR_OPS_ROUTING_ROUTING_H_
#define MOEFR_OPS_ROUTING_ROUTING_H_

#include "ops/common.h"
#include "ops/opdef.h"
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

/* ---- the forward core: sort, src->dst map, gather, counts ----
 * InitRoutingV2 and TokenPermute (which CANN runs as InitRoutingV2 on
 * Ascend 950) share it; each front end checks its own shapes, fills the
 * plan and reads the ids into sort keys in its own way. */
typedef struct mf_route_plan {
    bool empty;
    bool drop_pad;
    int count_flag;   /* 0 none, 1 cumsum, 2 count (dropless only) */
    bool before_flag; /* drop-pad only */
    int64_t N, K, T, H, A, E, C;
    int64_t key_hi;   /* ids must be below this (MF_SORT_KEY_MAX: not counted) */
    int64_t lo;       /* dropless: the A gathered rows are sorted positions [lo, lo + A) (EP ranges) */
    size_t es;
    uint64_t ws_key, ws_perm, ws_counts, ws_map, ws_sort, ws_x, ws_bytes;
} mf_route_plan;

/* Signature slots of InitRoutingV2 (the translation of TokenPermute on
 * Ascend 950 fills the same slots). */
enum { MF_IR_X, MF_IR_EIDX, MF_IR_EX, MF_IR_ROW, MF_IR_CNT, MF_IR_BEFORE, MF_IR_NT };
/* InitRoutingV2's tiling checks (moe_init_routing_v2_tiling.cpp order) over
 * t[MF_IR_NT], messages naming def->name and def->names; fills p's shape
 * fields. */
aclnnStatus mf_ir_check_shapes(const mf_op_def *def, const aclTensor *const *t, int64_t activeNum, int64_t C,
                               int64_t E, int64_t mode, int64_t cflag, bool bflag, mf_route_plan *p);

/* Lays out the workspace of p (ws_* offsets, ws_bytes) after `used` bytes
 * the front end took; 561002 with a message when it overflows. */
aclnnStatus mf_route_layout(const char *op, mf_route_plan *p, uint64_t used);
/* With p->T keys in ws + p->ws_key (all < max_key + 1, and < E when
 * counted; counts the per-id totals when counted): the stable sort, the
 * src->dst map row[], the gathered rows ex (from x), the count outputs
 * (cnt, before; NULL when not asked). ex NULL: no gather; the gather map is
 * then left in the workspace (mf_route_gather_map). */
void mf_route_sorted(const mf_route_plan *p, int64_t max_key, const int64_t *counts, const mf_rows *x, char *ex,
                     int32_t *row, int32_t *cnt, int32_t *before, char *ws);
/* After mf_route_sorted: the flat position j (token j / K) each gathered
 * row comes from, -1 for a padded slot; p->A rows (dropless) or E*C
 * (drop/pad). */
static inline const int32_t *mf_route_gather_map(const mf_route_plan *p, const char *ws) {
    return (const int32_t *)(ws + (p->drop_pad ? p->ws_map : p->ws_perm));
}

/* ---- the first version's core (InitRouting and InitRoutingQuant) ----
 * Signature slots (the same in both), the plan, CANN's tiling checks of
 * moe_init_routing(_quant)_tiling.cpp (messages name def->name), the
 * workspace layout, and the routing itself: rowIdx and the ids read and
 * checked before any write, the stable sort, expandedRowIdxOut and
 * expandedExpertIdxOut written; *src then holds the source token of each
 * of the first A gathered rows (the caller gathers them). */
enum { MF_IR1_X, MF_IR1_RIDX, MF_IR1_EIDX, MF_IR1_EX, MF_IR1_ROW, MF_IR1_EEX, MF_IR1_NT };
typedef struct mf_ir1_plan {
    bool empty;
    bool strict; /* MOEFR_STRICT=1: no rowIdx value twice */
    int64_t N, K, T, H, A;
    size_t es;
    uint64_t ws_src, ws_key, ws_perm, ws_seen, ws_sort;
} mf_ir1_plan;
aclnnStatus mf_ir1_check_shapes(const mf_op_def *def, const aclTensor *const *t, int64_t activeNum, mf_ir1_plan *p);
/* Fills the ws_* offsets (and strict); returns the bytes to ask for. */
uint64_t mf_ir1_layout(mf_ir1_plan *p);
aclnnStatus mf_ir1_route(const char *op, const mf_ir1_plan *p, const aclTensor *const *t, char *ws,
                         const int32_t **src);

/* ---- the backward core: out[r] = sum over kept k of g[idx[r*K + k]] ----
 * InitRoutingV2Grad and TokenPermuteGrad (InitRoutingV2Grad on Ascend 950). */
typedef struct mf_route_grad_plan {
    bool empty;
    int mode;             /* 1: -1 is a dropped slot; 0: values >= keep_below are */
    int64_t N, K, H, D0;  /* D0: rows of g */
    int64_t keep_below;   /* mode 0: values at or past it are skipped (INT64_MAX: none) */
    bool ranged;          /* EP: only values in [lo, keep_below) are kept, naming row value - lo */
    int64_t lo;
    int dtype;
    size_t es;
    /* MOEFR_STRICT=1 (read at phase 1): the docs' rule, values in [strict_lo,
     * strict_hi) and none twice but -1; strict_lo -1 in mode 1, else 0;
     * strict_hi E*C in mode 1, else N*K (the same rule as the forward's and
     * the grad core's: docs/CANN_COMPAT.md, "MOEFR_STRICT=1") */
    bool strict;
    int64_t strict_lo, strict_hi;
} mf_route_grad_plan;
/* Signature slots of InitRoutingV2Grad, and its tiling checks over them
 * (moe_init_routing_v2_grad_tiling_base.cpp order); fills p's shape fields. */
enum { MF_IRG_G, MF_IRG_IDX, MF_IRG_OUT, MF_IRG_NT };
aclnnStatus mf_irg_check_shapes(const mf_op_def *def, const aclTensor *const *t, int64_t topK, int64_t mode,
                                int64_t active, mf_route_grad_plan *p);
/* Fills p's strict fields from MOEFR_STRICT (after the shape fields). */
void mf_route_grad_strict(mf_route_grad_plan *p);
/* The strict-mode bitmap's offset: after the N*K index values, 64-aligned. */
static inline uint64_t mf_route_grad_bitmap_at(const mf_route_grad_plan *p) {
    return ((uint64_t)(p->N * p->K) * 4 + 63) & ~(uint64_t)63;
}
/* Workspace bytes the core needs (the N*K index values; strict: the bitmap). */
static inline uint64_t mf_route_grad_workspace(const mf_route_grad_plan *p) {
    const int64_t bits = p->strict_hi < ((int64_t)1 << 31) ? p->strict_hi : ((int64_t)1 << 31);
    return mf_workspace_with_slack(p->strict ? mf_route_grad_bitmap_at(p) + mf_bitmap_bytes(bits)
                                             : (uint64_t)(p->N * p->K) * 4);
}
/* Phase 2: every kept index checked against [0, D0) (161002 naming idx_name,
 * nothing written), under MOEFR_STRICT=1 also the docs' rule (range and
 * repeats, see the plan), then out (N, H contiguous) in parallel, fp32 in k
 * order. */
aclnnStatus mf_route_grad_run(const char *op, const char *idx_name, const mf_route_grad_plan *p, const aclTensor *g,
                              const aclTensor *idx, char *out, void *workspace);

/* ---- what TokenPermute (token_permute.c) shares with its EP variant ---- */
/* A2/A3 bounds (moe_token_permute*_tiling.cpp): topK and the sort length. */
#define MF_TP_MAX_TOPK 512
#define MF_TP_SORT_LIMIT 16777215
/* Phase 1 after the shape checks: r->es from tokens, *pack = tokens' rows
 * are not one stride apart (they are then packed into the workspace at
 * r->ws_x), and the core's layout (mf_route_layout). */
aclnnStatus mf_tp_layout(const char *op, const aclTensor *tokens, mf_route_plan *r, bool *pack);
/* Phase 2: tokens as rows for the gather: a view of the tensor, or with pack
 * its rows copied in view order to ws + r->ws_x (ws: the aligned workspace). */
mf_rows mf_tp_token_rows(const aclTensor *tokens, const mf_route_plan *r, bool pack, char *ws);
/* A2/A3 sort keys of indices (N, K) or (N): ids in [0, 16777215) as id + 1,
 * the dtype's minimum as 0, its maximum as 16777216; any other value is
 * 161002 naming op. *max_key: the largest key. */
aclnnStatus mf_tp_read_keys_a2(const char *op, const aclTensor *ind, int64_t N, int64_t K, uint32_t *key,
                               int64_t *max_key);
/* An EP operator's rangeOptional: NULL or no values -> *given = false; two
 * values -> *given, *start, *end; any other size 561002 (CANN's tiling); a
 * dead array 161002. */
aclnnStatus mf_ep_range(const char *op, const aclIntArray *range, bool *given, int64_t *start, int64_t *end);

#endif /* MOEFR_OPS_ROUTING_ROUTING_H_ */
