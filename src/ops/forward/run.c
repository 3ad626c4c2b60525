/* run.c - phase 2 of aclnnMoeFinalizeRoutingV2: validate index and expert
 * values, then (only if all are valid) pack strided inputs and compute token
 * by token in one pass: each out row is summed in fp64 and rounded once. */
#include <stdatomic.h>
#include <unistd.h>

#include "kernels/forward.h"
#include "ops/forward/forward.h"

static const char OP[] = "aclnnMoeFinalizeRoutingV2";

/* Tokens with more than MF_FWD_KMAX slots keep an fp64 tile of this many
 * elements (4 KiB) in L1 between slot groups. */
#define MF_FWD_TILE 512
/* Below this many bytes moved, waking workers costs more than it saves. */
#define MF_SERIAL_BYTES (256 * 1024)

typedef struct fwd_ctx {
    const fwd_plan *p;
    const mf_fwd_kernels *fk;
    mf_rows x, x1, x2, bias;
    int nt;       /* streaming stores for out */
    int prefetch; /* prefetch the next token's rows */
} fwd_ctx;

/* Fills slots [k0, k1) of token r into t (slot q = k - k0). */
static void fill_slots(const fwd_ctx *c, int64_t r, int64_t k0, int64_t k1, mf_fwd_row *t) {
    const fwd_plan *p = c->p;
    t->nk = (int)(k1 - k0);
    for (int64_t k = k0; k < k1; k++) {
        const int q = (int)(k - k0);
        const int64_t i = p->row_laid ? r * p->K + k : k * p->R + r;
        const int32_t d = mf_small_i32(&p->idx, i, 0);
        /* validated: d in [0, N), or in [-1, E*C) for drop-pad where -1 has no row */
        t->x[q] = d >= 0 ? mf_row(&c->x, d) : NULL;
        t->b[q] = p->has_bias ? mf_row(&c->bias, mf_small_i32(&p->eidx, r, k)) : NULL;
        t->s[q] = p->has_scales ? (double)mf_small_f32(&p->scales, r, k) : 1.0;
    }
}

/* The rows token r will read, for the kernels to prefetch while they work on r - 1. */
static void fill_next(const fwd_ctx *c, int64_t r, int64_t r1, mf_fwd_row *t) {
    const fwd_plan *p = c->p;
    t->nnext = 0;
    if (!c->prefetch || r >= r1) return;
    for (int64_t k = 0; k < p->K && k < MF_FWD_KMAX; k++) {
        const int64_t i = p->row_laid ? r * p->K + k : k * p->R + r;
        const int32_t d = mf_small_i32(&p->idx, i, 0);
        if (d >= 0) t->next[t->nnext++] = mf_row(&c->x, d);
    }
    if (p->has_x1) t->next[t->nnext++] = mf_row(&c->x1, r);
    if (p->has_x2) t->next[t->nnext++] = mf_row(&c->x2, r);
}

/* out rows of tokens [r0, r1). */
static void fwd_tokens(void *vctx, int64_t r0, int64_t r1) {
    const fwd_ctx *c = vctx;
    const fwd_plan *p = c->p;
    const int64_t H = p->H, K = p->K, row_bytes = H * (int64_t)p->es;
    const mf_fwd_row_fn fn = c->fk->row[p->dt];
    mf_fwd_row t;
    for (int64_t r = r0; r < r1; r++) {
        t.x1 = p->has_x1 ? mf_row(&c->x1, r) : NULL;
        t.x2 = p->has_x2 ? mf_row(&c->x2, r) : NULL;
        t.out = p->out + r * row_bytes;
        fill_next(c, r + 1, r1, &t);
        if (K <= MF_FWD_KMAX) { /* the common case: sums stay in registers */
            fill_slots(c, r, 0, K, &t);
            fn(&t, 0, (size_t)H, NULL, MF_FWD_FINAL, c->nt);
            continue;
        }
        /* Many slots: per H tile, slot groups in order over an L1 fp64 tile. */
        double acc[MF_FWD_TILE];
        for (int64_t j0 = 0; j0 < H; j0 += MF_FWD_TILE) {
            const size_t n = (size_t)(H - j0 < MF_FWD_TILE ? H - j0 : MF_FWD_TILE);
            int have = 0;
            for (int64_t k0 = 0; k0 < K; k0 += MF_FWD_KMAX) {
                const int64_t k1 = K - k0 < MF_FWD_KMAX ? K : k0 + MF_FWD_KMAX;
                fill_slots(c, r, k0, k1, &t);
                if (k0 > 0) t.x1 = t.x2 = NULL; /* added by the first group */
                const int flags = (have ? MF_FWD_LOAD : 0) | (k1 == K ? MF_FWD_FINAL : 0);
                have = fn(&t, (size_t)j0, n, acc, flags, c->nt) || have;
            }
            t.x1 = p->has_x1 ? mf_row(&c->x1, r) : NULL;
            t.x2 = p->has_x2 ? mf_row(&c->x2, r) : NULL;
        }
    }
    if (c->nt) c->fk->fence(); /* streaming stores land before the pool's join */
}

aclnnStatus mf_fwd_run(const void *vplan, void *workspace) {
    const fwd_plan *p = vplan;
    aclnnStatus rc = mf_isa_check(OP);
    if (rc != ACLNN_SUCCESS) return rc;
    char *ws = mf_align64(workspace);
    if (p->N > 0) {
        uint64_t *seen = (uint64_t *)(ws + p->ws_bitmap);
        rc = mf_check_index(OP, "expandedRowIdx", &p->idx, p->N, 0, p->drop_pad ? -1 : 0, p->bits, seen);
        if (rc != ACLNN_SUCCESS) return rc;
        if (p->has_bias) {
            rc = mf_check_range_2d(OP, "expertIdxOptional", &p->eidx, p->R, p->K, p->E);
            if (rc != ACLNN_SUCCESS) return rc;
        }
    }
    /* From here on every input value is valid: out may be written. */
    if (p->R == 0 || p->H == 0) return ACLNN_SUCCESS;

    const int64_t row_bytes = p->H * (int64_t)p->es;
    fwd_ctx c = {p, mf_fwd_kernels_select(), p->x, p->x1, p->x2, p->bias, 0, 0};
    c.nt = p->R * row_bytes >= mf_nt_threshold();
    /* Gathered rows that will not be in cache anyway: fetch a token ahead. */
    c.prefetch = p->N * row_bytes >= mf_nt_threshold() / 4;
    if (p->pack_x) c.x = mf_rows_pack(&p->x, p->H, p->es, ws + p->ws_x);
    if (p->pack_x1) c.x1 = mf_rows_pack(&p->x1, p->H, p->es, ws + p->ws_x1);
    if (p->pack_x2) c.x2 = mf_rows_pack(&p->x2, p->H, p->es, ws + p->ws_x2);
    if (p->pack_bias) c.bias = mf_rows_pack(&p->bias, p->H, p->es, ws + p->ws_bias);
    /* bytes one token moves: K rows in (plus x1/x2), one row out */
    const int64_t token_bytes = row_bytes * (p->K + 1 + p->has_x1 + p->has_x2) + 12 * p->K;
    mf_parallel_for(p->R, fwd_tokens, &c, MF_SERIAL_BYTES / token_bytes + 1);
    return ACLNN_SUCCESS;
}
