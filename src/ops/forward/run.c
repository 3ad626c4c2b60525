/* run.c - phase 2 of the forward (both front ends): bind the plan to the
 * executor's tensors, check the index and expert values CANN would read out
 * of bounds with, then (only if all are valid) pack strided inputs and
 * compute token by token in one pass: each out row is summed in the kernels'
 * order (fp32 groups with an fp64 fallback, kernels/forward_ref.h) and
 * rounded once. */
#include <stdatomic.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "kernels/forward.h"
#include "ops/forward/forward.h"

/* Tokens with more than MF_FWD_KMAX slots keep an fp64 tile of this many
 * elements (4 KiB) in L1 between slot groups. */
#define MF_FWD_TILE 512
/* Rows at most this long get the next token's rows prefetched. Longer rows
 * span pages the hardware prefetcher streams well on its own: at H = 4096
 * (16 KiB fp32 rows) the software prefetch made the forward 1.3x slower on
 * the AVX2 EPYC VM, at H = 128 leaving it out made it 1.6-2x slower
 * (docs/BENCHMARKS.md, "The forward's fp32 groups"). */
#define MF_FWD_PREFETCH_ROW_BYTES 4096
/* Below this many bytes moved, waking workers costs more than it saves. */
#define MF_SERIAL_BYTES (256 * 1024)

typedef struct fwd_ctx {
    const fwd_plan *p;
    const mf_fwd_kernels *fk;
    mf_rows x, x1, x2, bias;
    mf_small idx, scales, eidx;
    char *out;
    int nt;       /* streaming stores for out */
    int prefetch; /* prefetch the next token's rows */
    size_t ahead; /* or the token's own rows, this many bytes ahead (mf_fwd_row.ahead) */
} fwd_ctx;

/* Fills slots [k0, k1) of token r into t (slot q = k - k0). */
static void fill_slots(const fwd_ctx *c, int64_t r, int64_t k0, int64_t k1, mf_fwd_row *t) {
    const fwd_plan *p = c->p;
    t->nk = (int)(k1 - k0);
    for (int64_t k = k0; k < k1; k++) {
        const int q = (int)(k - k0);
        const int64_t d = mf_fwd_row_of(p, mf_small_i32(&c->idx, mf_fwd_slot_pos(p, r, k), 0));
        /* validated: d in [0, D0), or a dropped slot (-1 in drop-pad modes,
         * >= D0 in modes 0/2 under Ascend 950's rules), whose whole term,
         * bias included, is absent, as CANN's kernels skip it */
        const double s = p->has_scales ? (double)mf_small_f32(&c->scales, r, k) : 1.0;
        const bool kept = d >= 0 && d < p->D0 && !(p->skip_zero && s == 0.0);
        t->x[q] = kept ? mf_row(&c->x, d) : NULL;
        t->b[q] = kept && p->has_bias ? mf_row(&c->bias, mf_small_i32(&c->eidx, r, k)) : NULL;
        t->s[q] = s;
    }
}

/* The rows token r will read, for the kernels to prefetch while they work on r - 1. */
static void fill_next(const fwd_ctx *c, int64_t r, int64_t r1, mf_fwd_row *t) {
    const fwd_plan *p = c->p;
    t->nnext = 0;
    if (!c->prefetch || r >= r1) return;
    for (int64_t k = 0; k < p->K && k < MF_FWD_KMAX; k++) {
        const int64_t d = mf_fwd_row_of(p, mf_small_i32(&c->idx, mf_fwd_slot_pos(p, r, k), 0));
        if (d >= 0 && d < p->D0) t->next[t->nnext++] = mf_row(&c->x, d);
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
    t.ahead = c->ahead;
    for (int64_t r = r0; r < r1; r++) {
        t.x1 = p->has_x1 ? mf_row(&c->x1, r) : NULL;
        t.x2 = p->has_x2 ? mf_row(&c->x2, r) : NULL;
        t.out = c->out + r * row_bytes;
        fill_next(c, r + 1, r1, &t);
        if (K <= MF_FWD_KMAX) { /* the common case: fp32 sums in registers */
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
                const int flags = MF_FWD_FP64 | (have ? MF_FWD_LOAD : 0) | (k1 == K ? MF_FWD_FINAL : 0);
                have = fn(&t, (size_t)j0, n, acc, flags, c->nt) || have;
            }
            t.x1 = p->has_x1 ? mf_row(&c->x1, r) : NULL;
            t.x2 = p->has_x2 ? mf_row(&c->x2, r) : NULL;
        }
    }
    if (c->nt) c->fk->fence(); /* streaming stores land before the pool's join */
}

/* Index values CANN's kernel would read expandedX out of bounds with are
 * refused; in drop-pad modes -1 is a dropped slot, in modes 0/2 (Ascend 950)
 * so is any value at or past expandedX's rows. MOEFR_STRICT=1 adds the
 * documented rules: modes 0/2 a permutation-style index in [0, R*K), no
 * value twice (modes 1/3: no value but -1 twice). A value in [rows, R*K)
 * stays a dropped slot under it (Ascend 950: the tokens TokenUnpermute's
 * numOutTokens cut), as in TokenPermuteGrad and InitRoutingV2Grad. */
static aclnnStatus check_values(const fwd_ctx *c, void *ws) {
    const fwd_plan *p = c->p;
    const char *OP = p->def->name, *IDX = p->def->names[p->at[F_IDX]];
    const int64_t lo = p->drop_pad ? -1 : 0;
    /* Ascend 950's kernel skips values >= expandedX's rows in modes 0/2; A2/A3's reads them */
    const int64_t hi = p->drop_high ? INT32_MAX + (int64_t)1 : p->D0;
    for (int64_t i = 0; p->ranged && i < p->N; i++) {
        /* EP: values outside [lo, hi) drop a slot; inside, CANN reads row d - lo unchecked */
        const int32_t d = mf_small_i32(&c->idx, i, 0);
        if (d >= p->lo && d < p->hi && d - p->lo >= p->D0)
            return mf_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s[%lld] = %d is in the range [%lld, %lld) but names row %lld of %s's %lld", OP, IDX,
                           (long long)i, (int)d, (long long)p->lo, (long long)p->hi, (long long)(d - p->lo),
                           p->def->names[p->at[F_X]], (long long)p->D0);
    }
    for (int64_t i = 0; !p->ranged && i < p->N; i++) {
        const int32_t d = mf_small_i32(&c->idx, i, 0);
        if (d < lo && p->drop_high)
            return mf_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s[%lld] = %d is negative (expandedX has %lld rows; values at or past them "
                           "drop a slot)", OP, IDX, (long long)i, (int)d, (long long)p->D0);
        if (d < lo || d >= hi)
            return mf_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s[%lld] = %d is out of range [%lld, %lld) (expandedX has %lld rows%s)", OP, IDX,
                           (long long)i, (int)d, (long long)lo, (long long)p->D0, (long long)p->D0,
                           p->drop_pad ? "; -1 drops a slot" : "");
    }
    if (p->strict && !p->ranged) { /* EP: the documented rule is on the unsliced values */
        int64_t shi = p->drop_pad ? p->D0 : p->N;
        if (shi > ((int64_t)1 << 31)) shi = (int64_t)1 << 31; /* int32 reach */
        aclnnStatus rc = mf_check_index(OP, IDX, &c->idx, p->N, 0, lo, shi, (uint64_t *)ws);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    /* bias[expertIdx] is read for kept slots only (CANN skips a dropped
     * slot before it reads its expert) */
    for (int64_t r = 0; p->has_bias && r < p->R; r++)
        for (int64_t k = 0; k < p->K; k++) {
            const int32_t d = mf_small_i32(&c->idx, mf_fwd_slot_pos(p, r, k), 0);
            const int32_t e = mf_small_i32(&c->eidx, r, k);
            if (d >= 0 && d < p->D0 && (e < 0 || e >= p->E))
                return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s[%lld][%lld] = %d is out of range [0, %lld)", OP,
                               p->def->names[p->at[F_EIDX]], (long long)r, (long long)k, (int)e, (long long)p->E);
        }
    return ACLNN_SUCCESS;
}

aclnnStatus mf_fwd_run(const void *vplan, const aclTensor *const *slots, void *workspace) {
    const fwd_plan *p = vplan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *t[F_NT]; /* by role */
    for (int i = 0; i < F_NT; i++) t[i] = p->at[i] < 0 ? NULL : slots[p->at[i]];
    aclnnStatus rc = mf_isa_check(p->def->name);
    if (rc != ACLNN_SUCCESS) return rc;
    char *ws = mf_align64(workspace);
    fwd_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.x = mf_rows_of(t[F_X]);
    c.idx = mf_small_of(t[F_IDX]);
    if (p->has_x1) c.x1 = mf_rows_of(t[F_X1]);
    if (p->has_x2) c.x2 = mf_rows_of(t[F_X2]);
    if (p->has_bias) {
        c.bias = mf_rows_of(t[F_BIAS]);
        c.eidx = mf_small_of(t[F_EIDX]);
    }
    if (p->has_scales) c.scales = mf_small_of(t[F_SCALES]);
    c.out = mf_tensor_base(t[F_OUT]);
    rc = check_values(&c, p->strict ? ws + p->ws_bitmap : NULL);
    if (rc != ACLNN_SUCCESS) return rc;
    /* From here on every input value is valid: out may be written. */
    if (p->R == 0 || p->H == 0) return ACLNN_SUCCESS;

    const int64_t row_bytes = p->H * (int64_t)p->es;
    c.fk = mf_fwd_kernels_select();
    c.nt = p->R * row_bytes >= mf_nt_threshold();
    /* Gathered rows that will not be in cache anyway: fetch a token ahead. */
    const bool far = p->N * row_bytes >= mf_nt_threshold() / 4;
    c.prefetch = row_bytes <= MF_FWD_PREFETCH_ROW_BYTES && far;
    /* Longer rows: on some CPUs prefetching a little ahead in each row pays
     * (src/cpu/dispatch.c's table; none elsewhere) */
    c.ahead = row_bytes > MF_FWD_PREFETCH_ROW_BYTES && far ? mf_cpu_fwd_prefetch_ahead() : 0;
    if (p->pack_x) c.x = mf_rows_pack(&c.x, p->H, p->es, ws + p->ws_x);
    if (p->pack_x1) c.x1 = mf_rows_pack(&c.x1, p->H, p->es, ws + p->ws_x1);
    if (p->pack_x2) c.x2 = mf_rows_pack(&c.x2, p->H, p->es, ws + p->ws_x2);
    if (p->pack_bias) c.bias = mf_rows_pack(&c.bias, p->H, p->es, ws + p->ws_bias);
    /* bytes one token moves: K rows in (plus x1/x2), one row out */
    const int64_t token_bytes = row_bytes * (p->K + 1 + p->has_x1 + p->has_x2) + 12 * p->K;
    mf_parallel_for(p->R, fwd_tokens, &c, MF_SERIAL_BYTES / token_bytes + 1);
    return ACLNN_SUCCESS;
}
