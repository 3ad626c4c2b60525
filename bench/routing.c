/* routing.c - `moefr bench --routing`: the routing data movers against a
 * memcpy of the same traffic, measured in the same run.
 *
 * Bytes counted (the fewest each operator must move):
 *   InitRoutingV2 / TokenPermute / InitRoutingV3 (dropless, every row kept,
 *     V3 unquantised over the range [0, E)): read T*4 ids,
 *     read T gathered rows of H and write them, write T*4 row indices:
 *     2*T*H*es + 8*T;
 *   TokenUnpermute (with probs): read T rows and T*4 indices and T probs,
 *     write N rows: (T + N)*H*es + T*(4 + es);
 *   ReRouting (T received tokens, 8 ranks x 8 experts, fp32 per-token
 *     scales; bf16 only, CANN has no fp32 tokens): read and write T rows and
 *     T scales, write T*4 indices: 2*T*H*es + 12*T;
 *   InitRoutingQuantV2 (dynamic quant, dropless, no smooth scale): read T*4
 *     ids and T gathered rows, write T int8 rows, T*4 row indices and T*4
 *     scales: T*H*(es + 1) + 12*T;
 *   TokenPermuteWithRoutingMap (dropless, no probs): read the N*E map, read
 *     and write T rows, write T*4 indices: 2*T*H*es + N*E + 4*T;
 *   TokenUnpermuteWithRoutingMap (dropless, probs): as TokenUnpermute plus
 *     the map and the N*E probs it selects from: (T + N)*H*es + 4*T + N*E*(1 + es);
 *   TokenPermuteWithEp (probs, the window [T/4, T/4 + A), A = T/2: one of two
 *     EP ranks): read T*4 ids, write T*4 sorted indices, read and write A rows
 *     and A probs: 2*A*(H + 1)*es + 8*T;
 *   TokenUnpermuteWithEp (the same window): read the A kept rows, T*4 indices
 *     and T probs, write N rows: (A + N)*H*es + T*(4 + es).
 * The yardstick copies half those bytes (so it reads and writes as many). Each
 * operator run (both phases, the sort included) is paired with a copy run
 * right after it; ratio = the median of the pairs' copy/op time ratios, GB/s
 * the best run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_moe_init_routing_v2.h"
#include "aclnnop/aclnn_moe_init_routing_quant_v2.h"
#include "aclnnop/aclnn_moe_init_routing_v3.h"
#include "aclnnop/aclnn_moe_token_permute.h"
#include "aclnnop/aclnn_moe_token_unpermute.h"
#include "aclnnop/aclnn_moe_re_routing.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_permute_with_ep.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_ep.h"
#include "bench/bench.h"
#include "moefr/moefr.h"

typedef struct rt_prob {
    int64_t N, K, H, E;
    aclDataType dt;
    size_t es;
    char *x, *ex, *out, *probs;
    int32_t *eidx, *row, *perm;
    aclTensor *tx, *te, *tex, *trow, *tperm, *tprobs, *tout;
    /* ReRouting: T tokens (rt_tok), scales, counts (8 x 8), outputs */
    char *rr_tok, *rr_out;
    float *rr_scl, *rr_pscl;
    int32_t *rr_idx;
    int64_t rr_cnt[64], rr_enu[8];
    aclTensor *trr_tok, *trr_out, *trr_scl, *trr_pscl, *trr_idx, *trr_cnt, *trr_enu;
    int64_t *cnt; /* InitRoutingV3's counts (E) and expanded scale (T) */
    float *esc;
    aclTensor *tcnt, *tesc;
    float *dqs;             /* InitRoutingQuantV2's scales */
    aclTensor *tex8, *tdqs; /* its int8 rows (over ex) and scales */
    char *map, *probs_ne; /* routing map (N, E) with K ones a row, probs (N, E) */
    aclTensor *tmap, *tprobs_ne;
    /* the EP rows: the window [lo, lo + A) of the T sorted rows */
    int64_t lo, A;
    char *pp;
    aclTensor *tex_a, *tpp;
    aclIntArray *range;
} rt_prob;

static uint64_t g_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void) {
    g_state ^= g_state << 13, g_state ^= g_state >> 7, g_state ^= g_state << 17;
    return (uint32_t)(g_state >> 16);
}

/* n values of dt (FLOAT or BF16: the upper half of the float) uniform in [-1, 1) at 1/1024
 * steps, never subnormal: raw random bytes would make many products subnormal, which
 * the CPU handles in microcode and no model's activations are. */
static void fill_values(char *dst, int64_t n, aclDataType dt) {
    for (int64_t i = 0; i < n; i++) {
        const float f = (float)((int32_t)(rnd32() % 2048u) - 1024) / 1024.0f;
        uint32_t b;
        memcpy(&b, &f, 4);
        if (dt == ACL_FLOAT) memcpy(dst + i * 4, &b, 4);
        else {
            const uint16_t h = (uint16_t)(b >> 16);
            memcpy(dst + i * 2, &h, 2);
        }
    }
}

static aclTensor *mk(int nd, int64_t d0, int64_t d1, aclDataType dt, void *p) {
    int64_t d[2] = {d0, d1};
    return aclCreateTensor(d, (uint64_t)nd, dt, NULL, 0, ACL_FORMAT_ND, d, (uint64_t)nd, p);
}

static int rt_make(rt_prob *p, int64_t N, int64_t K, int64_t H, int64_t E, aclDataType dt) {
    memset(p, 0, sizeof *p);
    p->N = N, p->K = K, p->H = H, p->E = E, p->dt = dt, p->es = dt == ACL_FLOAT ? 4 : 2;
    const int64_t T = N * K;
    p->x = bench_alloc((size_t)(N * H) * p->es);
    p->ex = bench_alloc((size_t)(T * H) * p->es);
    p->out = bench_alloc((size_t)(N * H) * p->es);
    p->probs = bench_alloc((size_t)T * p->es);
    p->eidx = bench_alloc((size_t)T * 4);
    p->row = bench_alloc((size_t)T * 4);
    p->perm = bench_alloc((size_t)T * 4);
    if (!p->x || !p->ex || !p->out || !p->probs || !p->eidx || !p->row || !p->perm) return -1;
    fill_values(p->x, N * H, dt);
    memset(p->ex, 0, (size_t)(T * H) * p->es);
    memset(p->out, 0, (size_t)(N * H) * p->es);
    fill_values(p->probs, T, dt);
    for (int64_t i = 0; i < T; i++) p->eidx[i] = (int32_t)(rnd32() % (uint32_t)E);
    bench_permutation(p->perm, T);
    memset(p->row, 0, (size_t)T * 4);
    p->tx = mk(2, N, H, dt, p->x), p->te = mk(2, N, K, ACL_INT32, p->eidx), p->tex = mk(2, T, H, dt, p->ex);
    p->trow = mk(1, T, 0, ACL_INT32, p->row), p->tperm = mk(1, T, 0, ACL_INT32, p->perm);
    p->tprobs = mk(2, N, K, dt, p->probs), p->tout = mk(2, N, H, dt, p->out);
    if (dt == ACL_BF16) { /* ReRouting: the received tokens split at random over 8 ranks x 8 experts */
        p->rr_tok = bench_alloc((size_t)(T * H) * p->es);
        p->rr_out = bench_alloc((size_t)(T * H) * p->es);
        p->rr_scl = bench_alloc((size_t)T * 4 + 4), p->rr_pscl = bench_alloc((size_t)T * 4 + 4);
        p->rr_idx = bench_alloc((size_t)T * 4 + 4);
        if (!p->rr_tok || !p->rr_out || !p->rr_scl || !p->rr_pscl || !p->rr_idx) return -1;
        fill_values(p->rr_tok, T * H, dt);
        memset(p->rr_out, 0, (size_t)(T * H) * p->es);
        for (int64_t i = 0; i < T; i++) p->rr_scl[i] = (float)(rnd32() & 0xff);
        memset(p->rr_cnt, 0, sizeof p->rr_cnt);
        for (int64_t i = 0; i < T; i++) p->rr_cnt[rnd32() % 64]++;
        p->trr_tok = mk(2, T, H, dt, p->rr_tok), p->trr_out = mk(2, T, H, dt, p->rr_out);
        p->trr_scl = mk(1, T, 0, ACL_FLOAT, p->rr_scl), p->trr_pscl = mk(1, T, 0, ACL_FLOAT, p->rr_pscl);
        p->trr_idx = mk(1, T, 0, ACL_INT32, p->rr_idx), p->trr_cnt = mk(2, 8, 8, ACL_INT64, p->rr_cnt);
        p->trr_enu = mk(1, 8, 0, ACL_INT64, p->rr_enu);
    }
    p->cnt = bench_alloc((size_t)E * 8), p->esc = bench_alloc((size_t)T * 4);
    if (!p->cnt || !p->esc) return -1;
    p->tcnt = mk(1, E, 0, ACL_INT64, p->cnt), p->tesc = mk(1, T, 0, ACL_FLOAT, p->esc);
    p->dqs = bench_alloc((size_t)T * 4 + 64);
    if (!p->dqs) return -1;
    memset(p->dqs, 0, (size_t)T * 4);
    p->tex8 = mk(2, T, H, ACL_INT8, p->ex), p->tdqs = mk(1, T, 0, ACL_FLOAT, p->dqs);
    p->map = bench_alloc((size_t)(N * E) + 1);
    p->probs_ne = bench_alloc((size_t)(N * E) * p->es + 1);
    if (!p->map || !p->probs_ne) return -1;
    memset(p->map, 0, (size_t)(N * E));
    for (int64_t r = 0; r < N; r++)
        for (int64_t k = 0; k < K && k < E;) {
            const int64_t e = (int64_t)(rnd32() % (uint32_t)E);
            if (!p->map[r * E + e]) p->map[r * E + e] = 1, k++;
        }
    fill_values(p->probs_ne, N * E, dt);
    p->tmap = mk(2, N, E, ACL_BOOL, p->map), p->tprobs_ne = mk(2, N, E, dt, p->probs_ne);
    p->A = T / 2, p->lo = T / 4;
    const int64_t rv[2] = {p->lo, p->lo + p->A};
    p->pp = bench_alloc((size_t)(p->A + 1) * p->es);
    if (!p->pp) return -1;
    p->tex_a = mk(2, p->A, H, dt, p->ex), p->tpp = mk(1, p->A, 0, dt, p->pp);
    p->range = aclCreateIntArray(rv, 2);
    return 0;
}

static void rt_free(rt_prob *p) {
    aclTensor *t[] = {p->tx,      p->te,      p->tex,     p->trow,     p->tperm,   p->tprobs,  p->tout,
                      p->trr_tok, p->trr_out, p->trr_scl, p->trr_pscl, p->trr_idx, p->trr_cnt, p->trr_enu,
                      p->tcnt,    p->tesc,    p->tex8,    p->tdqs,     p->tmap,    p->tprobs_ne, p->tex_a, p->tpp};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (t[i]) aclDestroyTensor(t[i]);
    void *b[] = {p->x,      p->ex,     p->out,    p->probs,   p->eidx,   p->row, p->perm, p->rr_tok,
                 p->rr_out, p->rr_scl, p->rr_pscl, p->rr_idx, p->cnt,    p->esc, p->dqs,  p->map, p->probs_ne, p->pp};
    if (p->range) aclDestroyIntArray(p->range);
    for (size_t i = 0; i < sizeof b / sizeof *b; i++) bench_free(b[i]);
}

/* OP_REROUTE runs for bf16 only (its problem is made for bf16) */
enum { OP_INIT, OP_PERMUTE, OP_UNPERMUTE, OP_INIT_V3, OP_QUANT, OP_PERMUTE_RM, OP_UNPERMUTE_RM, OP_PERMUTE_EP,
       OP_UNPERMUTE_EP, OP_COUNT, OP_REROUTE = OP_COUNT };
static const char *const OP_NAME[] = {"aclnnMoeInitRoutingV2",      "aclnnMoeTokenPermute", "aclnnMoeTokenUnpermute",
                                      "aclnnMoeInitRoutingV3",      "aclnnMoeInitRoutingQuantV2",
                                      "PermuteWithRoutingMap",      "UnpermuteWithRoutingMap",
                                      "aclnnMoeTokenPermuteWithEp", "aclnnMoeTokenUnpermuteWithEp", "aclnnMoeReRouting"};

static void *g_ws;
static uint64_t g_ws_size;

/* Seconds for both phases of one call, or -1. */
static double rt_run(rt_prob *p, int op) {
    uint64_t w = 0;
    aclOpExecutor *e = NULL;
    const double t0 = bench_now();
    aclnnStatus rc;
    if (op == OP_INIT)
        rc = aclnnMoeInitRoutingV2GetWorkspaceSize(p->tx, p->te, 0, 0, p->E, 0, 0, false, p->tex, p->trow, NULL, NULL, &w,
                                                   &e);
    else if (op == OP_PERMUTE)
        rc = aclnnMoeTokenPermuteGetWorkspaceSize(p->tx, p->te, 0, false, p->tex, p->trow, &w, &e);
    else if (op == OP_INIT_V3) {
        const int64_t range[2] = {0, p->E};
        aclIntArray *ra = aclCreateIntArray(range, 2);
        rc = aclnnMoeInitRoutingV3GetWorkspaceSize(p->tx, p->te, NULL, NULL, -1, 0, p->E, 0, 1, true, -1, ra, 0, p->tex,
                                                   p->trow, p->tcnt, p->tesc, &w, &e);
        aclDestroyIntArray(ra);
    } else if (op == OP_UNPERMUTE)
        rc = aclnnMoeTokenUnpermuteGetWorkspaceSize(p->tex, p->tperm, p->tprobs, false, NULL, p->tout, &w, &e);
    else if (op == OP_QUANT)
        rc = aclnnMoeInitRoutingQuantV2GetWorkspaceSize(p->tx, p->te, NULL, NULL, 0, 0, p->E, 0, 0, false, 1, p->tex8,
                                                        p->trow, NULL, NULL, p->tdqs, &w, &e);
    else if (op == OP_PERMUTE_RM)
        rc = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(p->tx, p->tmap, NULL, p->N * p->K, false, p->tex, NULL,
                                                                p->trow, &w, &e);
    else if (op == OP_UNPERMUTE_RM)
        rc = aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(p->tex, p->tperm, p->tmap, p->tprobs_ne, false, NULL,
                                                                  p->tout, NULL, NULL, NULL, &w, &e);
    else if (op == OP_PERMUTE_EP)
        rc = aclnnMoeTokenPermuteWithEpGetWorkspaceSize(p->tx, p->te, p->tprobs, p->range, 0, false, p->tex_a, p->trow,
                                                        p->tpp, &w, &e);
    else if (op == OP_UNPERMUTE_EP)
        rc = aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(p->tex_a, p->tperm, p->tprobs, p->K, p->range, false, NULL,
                                                          p->tout, &w, &e);
    else
        rc = aclnnMoeReRoutingGetWorkspaceSize(p->trr_tok, p->trr_cnt, p->trr_scl, 1, 0, p->trr_out, p->trr_pscl,
                                               p->trr_idx, p->trr_enu, &w, &e);
    if (rc != 0) {
        fprintf(stderr, "bench --routing: %s phase 1 = %d (%s)\n", OP_NAME[op], rc, aclGetRecentErrMsg());
        return -1;
    }
    if (w > g_ws_size) { /* a CANN program keeps its workspace; so does the bench (allocated outside the timing once) */
        bench_free(g_ws);
        g_ws = bench_alloc(w);
        g_ws_size = w;
        memset(g_ws, 0, w);
    }
    if (op == OP_INIT) rc = aclnnMoeInitRoutingV2(g_ws, w, e, NULL);
    else if (op == OP_PERMUTE) rc = aclnnMoeTokenPermute(g_ws, w, e, NULL);
    else if (op == OP_UNPERMUTE) rc = aclnnMoeTokenUnpermute(g_ws, w, e, NULL);
    else if (op == OP_INIT_V3) rc = aclnnMoeInitRoutingV3(g_ws, w, e, NULL);
    else if (op == OP_QUANT) rc = aclnnMoeInitRoutingQuantV2(g_ws, w, e, NULL);
    else if (op == OP_PERMUTE_RM) rc = aclnnMoeTokenPermuteWithRoutingMap(g_ws, w, e, NULL);
    else if (op == OP_UNPERMUTE_RM) rc = aclnnMoeTokenUnpermuteWithRoutingMap(g_ws, w, e, NULL);
    else if (op == OP_PERMUTE_EP) rc = aclnnMoeTokenPermuteWithEp(g_ws, w, e, NULL);
    else if (op == OP_UNPERMUTE_EP) rc = aclnnMoeTokenUnpermuteWithEp(g_ws, w, e, NULL);
    else rc = aclnnMoeReRouting(g_ws, w, e, NULL);
    if (rc != 0) {
        fprintf(stderr, "bench --routing: %s phase 2 = %d (%s)\n", OP_NAME[op], rc, aclGetRecentErrMsg());
        return -1;
    }
    return bench_now() - t0;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int rt_row(rt_prob *p, int op, int reps, int markdown) {
    const int64_t T = p->N * p->K;
    const double es = (double)p->es;
    const double NE = (double)(p->N * p->E), A = (double)p->A;
    const double bytes = op == OP_UNPERMUTE      ? (double)(T + p->N) * p->H * es + (double)T * (4 + es)
                         : op == OP_QUANT        ? (double)T * p->H * (es + 1) + 12.0 * (double)T
                         : op == OP_REROUTE      ? 2.0 * (double)T * p->H * es + 12.0 * (double)T
                         : op == OP_PERMUTE_RM   ? 2.0 * (double)T * p->H * es + NE + 4.0 * (double)T
                         : op == OP_UNPERMUTE_RM ? (double)(T + p->N) * p->H * es + 4.0 * (double)T + NE * (1 + es)
                         : op == OP_PERMUTE_EP   ? 2.0 * A * (p->H + 1) * es + 8.0 * (double)T
                         : op == OP_UNPERMUTE_EP ? (A + p->N) * p->H * es + (double)T * (4 + es)
                                                 : 2.0 * (double)T * p->H * es + 8.0 * (double)T;
    const size_t half = (size_t)(bytes / 2);
    char *src = bench_alloc(half + 64), *dst = bench_alloc(half + 64);
    if (!src || !dst) return -1;
    memset(src, 1, half), memset(dst, 2, half);
    const int threads = moefrNumThreads();
    double op_t[64] = {0}, cp_t[64] = {0}, pr[64] = {0};
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    if (rt_run(p, op) < 0) return -1; /* warm-up: the pool, page faults, the workspace */
    bench_copy_once(dst, src, half, threads);
    for (int i = 0; i < reps; i++) {
        op_t[i] = rt_run(p, op);
        cp_t[i] = bench_copy_once(dst, src, half, threads);
        if (op_t[i] < 0) return -1;
        pr[i] = cp_t[i] / op_t[i];
    }
    bench_free(src), bench_free(dst);
    double best = op_t[0], cbest = cp_t[0];
    for (int i = 1; i < reps; i++) best = op_t[i] < best ? op_t[i] : best, cbest = cp_t[i] < cbest ? cp_t[i] : cbest;
    qsort(pr, (size_t)reps, sizeof pr[0], cmp_d);
    const double ratio = reps % 2 ? pr[reps / 2] : 0.5 * (pr[reps / 2 - 1] + pr[reps / 2]);
    const char *dn = p->dt == ACL_FLOAT ? "fp32" : p->dt == ACL_BF16 ? "bf16" : "fp16";
    if (markdown)
        printf("| %s | %lld,%lld,%lld E=%lld | %s | %.2f | %.1f | %.1f | %.2f |\n", OP_NAME[op], (long long)p->N,
               (long long)p->K, (long long)p->H, (long long)p->E, dn, best * 1e3, bytes / best / 1e9,
               (double)(2 * half) / cbest / 1e9, ratio);
    else
        printf("%-24s N=%lld K=%lld E=%lld H=%lld %s  %8.2f ms  %6.1f GB/s  memcpy %6.1f GB/s  ratio %.2f\n",
               OP_NAME[op], (long long)p->N, (long long)p->K, (long long)p->E, (long long)p->H, dn, best * 1e3,
               bytes / best / 1e9, (double)(2 * half) / cbest / 1e9, ratio);
    return 0;
}

int bench_routing(int64_t N, int64_t K, int64_t H, int64_t E, int reps, int markdown) {
    printf("moefr %s, kernel path %s, %d threads; routing movers vs a same-traffic memcpy (best of %d; ratio: median "
           "of pairs)\n",
           moefrVersion(), moefrIsa(), moefrNumThreads(), reps);
    if (markdown)
        printf("| operator | N,K,H | dtype | ms | GB/s | memcpy GB/s | ratio |\n|---|---|---|---|---|---|---|\n");
    const aclDataType dts[2] = {ACL_FLOAT, ACL_BF16};
    int fails = 0;
    for (int d = 0; d < 2; d++) {
        rt_prob p;
        if (rt_make(&p, N, K, H, E, dts[d]) != 0) {
            fprintf(stderr, "bench --routing: out of memory\n");
            rt_free(&p);
            return 1;
        }
        for (int op = 0; op < OP_COUNT; op++) fails += rt_row(&p, op, reps, markdown) != 0;
        if (dts[d] == ACL_BF16) fails += rt_row(&p, OP_REROUTE, reps, markdown) != 0;
        rt_free(&p);
    }
    bench_free(g_ws);
    g_ws = NULL, g_ws_size = 0;
    return fails != 0;
}
