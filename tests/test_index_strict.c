/* test_index_strict.c - MOEFR_STRICT=1 applies one index rule in every
 * routing operator that reads a permutation-style index (issue 22): the docs'
 * range ([0, R*K) dropless, [-1, E*C) drop-pad) and no value twice but -1,
 * checked in phase 2 before any write. The same bad sortedIndices /
 * expandedRowIdx goes to TokenUnpermute, TokenUnpermuteGrad,
 * TokenPermuteGrad, InitRoutingV2Grad (modes 0 and 1) and
 * FinalizeRoutingV2 (mode 2): with MOEFR_STRICT=1 each returns 161002 with a
 * message naming position and value and leaves every output byte as it was;
 * without it each succeeds. Values in [rows, R*K) (the rows numOutTokens /
 * activeNum cut) are dropped slots under both settings, and the outputs then
 * match a plain loop; a negative value is refused by all under MOEFR_STRICT=1. Registered plain and with MOEFR_STRICT=1 (the test
 * reads the variable). */
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_init_routing_v2_grad.h"
#include "aclnnop/aclnn_moe_token_permute_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute.h"
#include "aclnnop/aclnn_moe_token_unpermute_grad.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

enum { R = 3, K = 2, T = R * K, H = 5, MAXD = T + 2 };
static int STRICT;

/* Phase 2 after a phase 1 whose status is rc (the caller makes the phase-1
 * call first: e and ws are its outputs). */
static aclnnStatus exec(aclnnStatus rc, aclOpExecutor *e, uint64_t ws,
                        aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream)) {
    if (rc != ACLNN_SUCCESS) return rc;
    void *w = ws ? malloc(ws) : NULL;
    rc = run(w, ws, e, NULL);
    free(w);
    return rc;
}

/* One operator call: idx (T values) into D rows; the outputs (poisoned by
 * the caller) in out0/out1. Returns the status of the first failing phase. */
typedef aclnnStatus (*op_fn)(const int32_t *idx, int64_t D, float *out0, float *out1);

static float g_rows[MAXD * H], g_tok[R * H], g_probs[R * K];

static aclnnStatus token_unpermute(const int32_t *idx, int64_t D, float *out, float *unused) {
    (void)unused;
    aclTensor *x = tu_mk(2, D, H, 0, ACL_FLOAT, g_rows), *i = tu_mk(1, T, 0, 0, ACL_INT32, (void *)idx),
              *p = tu_mk(2, R, K, 0, ACL_FLOAT, g_probs), *o = tu_mk(2, R, H, 0, ACL_FLOAT, out);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeTokenUnpermuteGetWorkspaceSize(x, i, p, false, NULL, o, &ws, &e);
    rc = exec(rc, e, ws, aclnnMoeTokenUnpermute);
    tu_destroy(x), tu_destroy(i), tu_destroy(p), tu_destroy(o);
    return rc;
}

static aclnnStatus token_unpermute_grad(const int32_t *idx, int64_t D, float *gx, float *gp) {
    aclTensor *x = tu_mk(2, D, H, 0, ACL_FLOAT, g_rows), *g = tu_mk(2, R, H, 0, ACL_FLOAT, g_tok),
              *i = tu_mk(1, T, 0, 0, ACL_INT32, (void *)idx), *p = tu_mk(2, R, K, 0, ACL_FLOAT, g_probs),
              *o0 = tu_mk(2, D, H, 0, ACL_FLOAT, gx), *o1 = tu_mk(2, R, K, 0, ACL_FLOAT, gp);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeTokenUnpermuteGradGetWorkspaceSize(x, g, i, p, false, NULL, o0, o1, &ws, &e);
    rc = exec(rc, e, ws, aclnnMoeTokenUnpermuteGrad);
    tu_destroy(x), tu_destroy(g), tu_destroy(i), tu_destroy(p), tu_destroy(o0), tu_destroy(o1);
    return rc;
}

static aclnnStatus token_permute_grad(const int32_t *idx, int64_t D, float *out, float *unused) {
    (void)unused;
    aclTensor *g = tu_mk(2, D, H, 0, ACL_FLOAT, g_rows), *i = tu_mk(1, T, 0, 0, ACL_INT32, (void *)idx),
              *o = tu_mk(2, R, H, 0, ACL_FLOAT, out);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeTokenPermuteGradGetWorkspaceSize(g, i, K, false, o, &ws, &e);
    rc = exec(rc, e, ws, aclnnMoeTokenPermuteGrad);
    tu_destroy(g), tu_destroy(i), tu_destroy(o);
    return rc;
}

static aclnnStatus init_routing_v2_grad(const int32_t *idx, int64_t D, float *out, float *unused) {
    (void)unused;
    aclTensor *g = tu_mk(2, D, H, 0, ACL_FLOAT, g_rows), *i = tu_mk(1, T, 0, 0, ACL_INT32, (void *)idx),
              *o = tu_mk(2, R, H, 0, ACL_FLOAT, out);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeInitRoutingV2GradGetWorkspaceSize(g, i, K, 0, D, o, &ws, &e);
    rc = exec(rc, e, ws, aclnnMoeInitRoutingV2Grad);
    tu_destroy(g), tu_destroy(i), tu_destroy(o);
    return rc;
}

/* drop-pad: D = E*C rows as (E, C, H) with C = 2 */
static aclnnStatus init_routing_v2_grad_pad(const int32_t *idx, int64_t D, float *out, float *unused) {
    (void)unused;
    aclTensor *g = tu_mk(3, D / 2, 2, H, ACL_FLOAT, g_rows), *i = tu_mk(1, T, 0, 0, ACL_INT32, (void *)idx),
              *o = tu_mk(2, R, H, 0, ACL_FLOAT, out);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeInitRoutingV2GradGetWorkspaceSize(g, i, K, 1, 0, o, &ws, &e);
    rc = exec(rc, e, ws, aclnnMoeInitRoutingV2Grad);
    tu_destroy(g), tu_destroy(i), tu_destroy(o);
    return rc;
}

static aclnnStatus finalize_v2_mode2(const int32_t *idx, int64_t D, float *out, float *unused) {
    (void)unused;
    aclTensor *x = tu_mk(2, D, H, 0, ACL_FLOAT, g_rows), *i = tu_mk(1, T, 0, 0, ACL_INT32, (void *)idx),
              *s = tu_mk(2, R, K, 0, ACL_FLOAT, g_probs), *o = tu_mk(2, R, H, 0, ACL_FLOAT, out);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(x, i, NULL, NULL, NULL, s, NULL, 2, o, &ws, &e);
    rc = exec(rc, e, ws, aclnnMoeFinalizeRoutingV2);
    tu_destroy(x), tu_destroy(i), tu_destroy(s), tu_destroy(o);
    return rc;
}

/* out[r] = sum over k of w[r][k] * rows[idx[r*K + k]] for kept entries (lo <= d < D, d != -1) */
static void reference(const int32_t *idx, int64_t D, int weighted, float *want) {
    for (int r = 0; r < R; r++)
        for (int h = 0; h < H; h++) {
            double acc = 0;
            for (int k = 0; k < K; k++) {
                const int32_t d = idx[r * K + k];
                if (d >= 0 && d < D) acc += (weighted ? g_probs[r * K + k] : 1.0) * g_rows[d * H + h];
            }
            want[r * H + h] = (float)acc;
        }
}

static const struct {
    const char *name, *idx_name;
    op_fn fn;
    int weighted; /* 1: out is the probs-weighted sum; 0: plain sum; -1: not compared */
    int pad;      /* drop-pad layout: -1 is a dropped slot, the rows are E*C */
    int rows_le_t; /* phase 1 wants rows <= R*K (FinalizeRoutingV2Grad's activeNum rule) */
    int neg_dropped; /* without MOEFR_STRICT a negative index is a dropped slot (TUG on 950), else refused */
} OPS[] = {
    {"aclnnMoeTokenUnpermute", "sortedIndices", token_unpermute, 1, 0, 0, 0},
    {"aclnnMoeTokenUnpermuteGrad", "sortedIndices", token_unpermute_grad, -1, 0, 1, 1},
    {"aclnnMoeTokenPermuteGrad", "sortedIndices", token_permute_grad, 0, 0, 0, 0},
    {"aclnnMoeInitRoutingV2Grad", "expandedRowIdx", init_routing_v2_grad, 0, 0, 0, 0},
    {"aclnnMoeInitRoutingV2Grad", "expandedRowIdx", init_routing_v2_grad_pad, 0, 1, 0, 0},
    {"aclnnMoeFinalizeRoutingV2", "expandedRowIdx", finalize_v2_mode2, 1, 0, 0, 0},
};

/* One call with one index: refused_when_strict -> under MOEFR_STRICT=1 161002 with frag in the
 * message and no output byte written; otherwise success, out compared with the plain loop. */
static void one_as(size_t o, const int32_t *idx, int64_t D, int refused_when_strict, int refused_always,
                   const char *frag);
static void one(size_t o, const int32_t *idx, int64_t D, int refused_when_strict, const char *frag) {
    one_as(o, idx, D, refused_when_strict, 0, frag);
}
static void one_as(size_t o, const int32_t *idx, int64_t D, int refused_when_strict, int refused_always,
                   const char *frag) {
    const size_t n0 = (size_t)MAXD * H * 4, n1 = (size_t)R * K * 4;
    unsigned char *out0 = tu_poisoned(n0), *out1 = tu_poisoned(n1);
    aclnnStatus rc = OPS[o].fn(idx, D, (float *)out0, (float *)out1);
    const int want_refused = refused_always || (STRICT && refused_when_strict);
    char what[160];
    snprintf(what, sizeof what, "%s (%s) with %s = {%d %d %d %d %d %d}, %lld rows", OPS[o].name,
             OPS[o].pad ? "drop-pad" : "dropless", OPS[o].idx_name, idx[0], idx[1], idx[2], idx[3], idx[4], idx[5],
             (long long)D);
    if (want_refused) {
        CHECK(rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has(OPS[o].name, OPS[o].idx_name, frag, NULL),
              "%s: status %d '%s', want 161002 naming '%s'", what, rc, aclGetRecentErrMsg(), frag);
        CHECK(tu_all_poison(out0, n0 + TU_GUARD) && tu_all_poison(out1, n1 + TU_GUARD), "%s: an output was written",
              what);
    } else {
        CHECK(rc == ACLNN_SUCCESS, "%s: status %d '%s', want success", what, rc, aclGetRecentErrMsg());
        if (rc == ACLNN_SUCCESS && OPS[o].weighted >= 0) {
            float want[R * H];
            reference(idx, D, OPS[o].weighted, want);
            CHECK(memcmp(want, out0, sizeof want) == 0, "%s: out differs from the plain loop", what);
        }
        CHECK(tu_guard_ok(out0, n0) && tu_guard_ok(out1, n1), "%s: written past an output", what);
    }
    g_cases++;
    free(out0), free(out1);
}

int main(void) {
    tu_seed("test_index_strict");
    STRICT = getenv("MOEFR_STRICT") && strcmp(getenv("MOEFR_STRICT"), "1") == 0;
    /* small integers: every sum is exact in fp32, in any order */
    for (int i = 0; i < MAXD * H; i++) g_rows[i] = (float)tu_int(-64, 64);
    for (int i = 0; i < R * H; i++) g_tok[i] = (float)tu_int(-8, 8);
    for (int i = 0; i < R * K; i++) g_probs[i] = (float)tu_int(1, 4) * 0.25f;
    char frag[64];
    for (size_t o = 0; o < sizeof OPS / sizeof *OPS; o++) {
        if (OPS[o].pad) { /* (E, C) = (3, 2): rows 0..5, -1 dropped */
            const int32_t ok[T] = {-1, 2, -1, 0, 5, 1}, rep[T] = {-1, 2, -1, 0, 5, 2};
            one(o, ok, 6, 0, NULL);
            snprintf(frag, sizeof frag, "%s[5] = 2 repeats an earlier index", OPS[o].idx_name);
            one(o, rep, 6, 1, frag);
            continue;
        }
        const int32_t perm[T] = {3, 0, 5, 1, 4, 2};
        one(o, perm, T, 0, NULL);
        /* a value twice (4 missing): the docs ask for no repeated index */
        const int32_t rep[T] = {3, 0, 5, 1, 3, 2};
        snprintf(frag, sizeof frag, "%s[4] = 3 repeats an earlier index", OPS[o].idx_name);
        one(o, rep, T, 1, frag);
        /* more rows than R*K: a value in [R*K, rows) is read by every product, outside the docs' [0, R*K) */
        const int32_t past[T] = {3, 7, 5, 1, 4, 2};
        snprintf(frag, sizeof frag, "%s[1] = 7 is out of range [0, %d)", OPS[o].idx_name, T);
        if (!OPS[o].rows_le_t) one(o, past, T + 2, 1, frag);
        /* fewer rows than R*K: values 4 and 5 name the rows numOutTokens / activeNum cut, a dropped slot
         * under both settings (in the docs' range) */
        one(o, perm, 4, 0, NULL);
        /* a negative index: outside the docs' range everywhere; without MOEFR_STRICT only
         * TokenUnpermuteGrad on Ascend 950 (FinalizeRoutingV2Grad) takes it as a dropped slot */
        const int32_t neg[T] = {3, 0, -1, 1, 4, 2};
        one_as(o, neg, T, 1, !OPS[o].neg_dropped, "[2] = -1");
    }
    printf("test_index_strict: %d cases, %d checks, %d failed (MOEFR_STRICT %d)\n", g_cases, g_checks, g_fail, STRICT);
    return g_fail != 0;
}
