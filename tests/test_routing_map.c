/* test_routing_map.c - aclnnMoeTokenPermuteWithRoutingMap(Grad) and
 * aclnnMoeTokenUnpermuteWithRoutingMap(Grad) against oracles written from
 * ops-transformer's documented semantics and torch_npu's CPU golden functions
 * (masked_select / argsort / index_add, written here as plain loops): a
 * comparison sort for the stable orders, fp32 sums replayed in the documented
 * order, float64 dots, values decoded and rounded by tests/fwd_ref.c
 * (independent of src/). Random cases over the three dtypes, BOOL and INT8
 * maps, odd sizes, strided inputs, poisoned outputs with guard bytes, both
 * modes, with and without probs; then the phase-1 codes and the phase-2
 * refusals (outputs untouched). */
#include <math.h>

#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h"
#include "fwd_ref.h"
#include "kernels/fp.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static const aclDataType DTS[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

/* ---- tensors: inputs dense or strided, outputs poisoned with guards ---- */
#define POOL 32
static tu_owned pool[POOL];
static int npool;
static unsigned char *outs[POOL];
static int nouts;
static void release(void) {
    for (int i = 0; i < npool; i++) tu_free(&pool[i]);
    for (int i = 0; i < nouts; i++) free(outs[i]);
    npool = nouts = 0;
}
static aclTensor *in2(const void *dense, int nd, int64_t d0, int64_t d1, aclDataType dt, int strided) {
    const size_t es = dt == ACL_INT32 || dt == ACL_FLOAT ? 4 : dt == ACL_INT8 || dt == ACL_BOOL ? 1 : 2;
    int64_t s1 = 1, s0 = nd == 2 ? d1 : 1, off = 0;
    if (strided) {
        off = 3;
        if (nd == 2) s1 = 2, s0 = d1 * 2 + 5;
        else s0 = 2;
    }
    pool[npool] = tu_make_view(dense, nd, d0, d1, dt, es, off, s0, s1);
    return pool[npool++].t;
}
static aclTensor *out2(int nd, int64_t d0, int64_t d1, aclDataType dt, unsigned char **buf) {
    const size_t es = dt == ACL_INT32 || dt == ACL_FLOAT ? 4 : 2;
    const size_t n = (size_t)(d0 * (nd == 2 ? d1 : 1)) * es;
    *buf = outs[nouts++] = tu_poisoned(n);
    return tu_mk(nd, d0, d1, 0, dt, *buf);
}
static aclnnStatus run(aclnnStatus rc, aclOpExecutor *e, uint64_t wsz, aclnnStatus (*p2)(void *, uint64_t,
                                                                                         aclOpExecutor *, aclrtStream)) {
    if (rc != ACLNN_SUCCESS) return rc;
    void *ws = wsz ? malloc(wsz) : NULL;
    if (ws) memset(ws, TU_POISON, wsz);
    rc = p2(ws, wsz, e, NULL);
    free(ws);
    return rc;
}
static void put(aclDataType dt, void *b, int64_t i, double v) {
    uint32_t bits = fr_round((int)dt, v);
    if (dt == ACL_FLOAT) memcpy((char *)b + 4 * i, &bits, 4);
    else {
        uint16_t h = (uint16_t)bits;
        memcpy((char *)b + 2 * i, &h, 2);
    }
}
static double get(aclDataType dt, const void *b, int64_t i) { return fr_decode((int)dt, b, i); }
static void *rand_data(aclDataType dt, int64_t n) {
    void *b = malloc((size_t)(n > 0 ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) put(dt, b, i, tu_int(0, 15) == 0 ? 0.0 : (double)tu_int(-3000, 3000) / 256.0);
    return b;
}
/* fp32 emulation: v rounded to binary32 */
static float f32(double v) { return (float)v; }
static int same(aclDataType dt, const void *a, int64_t i, const void *b, int64_t j) {
    const size_t es = dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : 2;
    return memcmp((const char *)a + i * (int64_t)es, (const char *)b + j * (int64_t)es, es) == 0;
}
/* a map with exactly K ones per row (K <= E) */
static uint8_t *rand_map(int64_t N, int64_t E, int64_t K) {
    uint8_t *m = calloc((size_t)(N * E) + 1, 1);
    for (int64_t r = 0; r < N; r++)
        for (int64_t k = 0; k < K;) {
            int64_t e = tu_below(E);
            if (!m[r * E + e]) m[r * E + e] = 1, k++;
        }
    return m;
}

/* ---- the forward permute ---- */
static void permute_case(aclDataType dt, aclDataType mt, int64_t N, int64_t E, int64_t K, int64_t H, int pad,
                         int with_probs, int strided, int64_t C) {
    void *tok = rand_data(dt, N * H), *pr = rand_data(dt, N * E);
    uint8_t *map = rand_map(N, E, K);
    int64_t numOut = pad ? C * E + tu_below(E) : N * K + tu_below(N);
    if (numOut > N * E) numOut = N * E;
    const int64_t R = pad ? C * E : N * K;
    unsigned char *o, *op = NULL, *oi;
    aclTensor *tt = in2(tok, 2, N, H, dt, strided), *tm = in2(map, 2, N, E, mt, strided),
              *tp = with_probs ? in2(pr, 2, N, E, dt, strided) : NULL;
    aclTensor *to = out2(2, R, H, dt, &o), *tpo = with_probs ? out2(1, R, 0, dt, &op) : NULL,
              *ti = out2(1, R, 0, ACL_INT32, &oi);
    uint64_t wsz;
    aclOpExecutor *e;
    aclnnStatus rc = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, tp, numOut, pad, to, tpo, ti, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenPermuteWithRoutingMap);
    CHECK(rc == ACLNN_SUCCESS, "permute N%lld E%lld K%lld pad%d: rc %d %s", (long long)N, (long long)E, (long long)K,
          pad, rc, tu_msg());
    const size_t es = fr_size(dt);
    int bad = 0;
    if (!pad) {
        /* row-major ones q -> (r, e); stable sort by e */
        int64_t *key = malloc(sizeof(int64_t) * (size_t)R + 8), *perm = malloc(sizeof(int64_t) * (size_t)R + 8),
                *rr = malloc(sizeof(int64_t) * (size_t)R + 8);
        int64_t q = 0;
        for (int64_t r = 0; r < N; r++)
            for (int64_t x = 0; x < E; x++)
                if (map[r * E + x]) key[q] = x, rr[q] = r, q++;
        tu_ref_sort(key, R, perm);
        for (int64_t i = 0; i < R && !bad; i++) {
            int32_t got;
            memcpy(&got, oi + 4 * perm[i], 4);
            if (got != i) bad = 1, printf("  sortedIndicesOut[%lld] = %d, want %lld\n", (long long)perm[i], got, (long long)i);
            for (int64_t h = 0; h < H; h++)
                if (!same(dt, o, i * H + h, tok, (perm[i] / K) * H + h)) bad = 2;
            if (with_probs && !same(dt, op, i, pr, rr[perm[i]] * E + key[perm[i]])) bad = 3;
        }
        free(key), free(perm), free(rr);
    } else {
        for (int64_t x = 0; x < E && !bad; x++) {
            int64_t c = 0;
            for (int pass = 1; pass >= 0; pass--)
                for (int64_t r = 0; r < N && c < C; r++)
                    if (map[r * E + x] == pass) {
                        const int64_t i = x * C + c++;
                        int32_t got;
                        memcpy(&got, oi + 4 * i, 4);
                        if (got != r) bad = 4;
                        for (int64_t h = 0; h < H; h++)
                            if (!same(dt, o, i * H + h, tok, r * H + h)) bad = 5;
                        if (with_probs && !same(dt, op, i, pr, r * E + x)) bad = 6;
                    }
        }
    }
    CHECK(!bad, "permute dt%d N%lld E%lld K%lld H%lld pad%d probs%d strided%d: mismatch %d", dt, (long long)N,
          (long long)E, (long long)K, (long long)H, pad, with_probs, strided, bad);
    CHECK(tu_guard_ok(o, (size_t)(R * H) * es) && tu_guard_ok(oi, (size_t)R * 4), "permute: guard bytes");
    tu_destroy(to), tu_destroy(ti);
    if (tpo) tu_destroy(tpo);
    free(tok), free(pr), free(map);
    release();
    g_cases++;
}

/* ---- the permute backward ---- */
static void permute_grad_case(aclDataType dt, aclDataType mt, int64_t N, int64_t E, int64_t K, int64_t H, int pad,
                              int with_probs, int strided) {
    const int64_t C = pad ? tu_int(1, N) : 0, M = pad ? E * C + tu_below(3) : N * K;
    void *g = rand_data(dt, M * H), *pg = rand_data(dt, M);
    uint8_t *map = rand_map(N, E, K);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)M + 4);
    for (int64_t i = 0; i < M; i++) idx[i] = (int32_t)(pad ? tu_below(N) : tu_below(M + 3)); /* >= M: skipped */
    if (!pad && with_probs) { /* the forward's sorted indices: a permutation */
        for (int64_t i = 0; i < M; i++) idx[i] = (int32_t)i;
        for (int64_t i = M - 1; i > 0; i--) {
            int64_t j = tu_below(i + 1);
            int32_t s = idx[i];
            idx[i] = idx[j], idx[j] = s;
        }
    }
    unsigned char *o, *op = NULL;
    aclTensor *tg = in2(g, 2, M, H, dt, strided), *tpg = with_probs ? in2(pg, 1, M, 0, dt, strided) : NULL,
              *ti = in2(idx, 1, M, 0, ACL_INT32, strided), *tm = in2(map, 2, N, E, mt, strided);
    aclTensor *to = out2(2, N, H, dt, &o), *tpo = with_probs ? out2(2, N, E, dt, &op) : NULL;
    uint64_t wsz;
    aclOpExecutor *e;
    aclnnStatus rc = aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(tg, tpg, ti, tm, E, N, pad, to, tpo, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenPermuteWithRoutingMapGrad);
    CHECK(rc == ACLNN_SUCCESS, "permute grad: rc %d %s", rc, tu_msg());
    int bad = 0;
    unsigned char want[4];
    for (int64_t r = 0; r < N && !bad; r++)
        for (int64_t h = 0; h < H; h++) {
            float acc = 0.0f;
            int first = 1;
            if (!pad) {
                for (int64_t k = 0; k < K; k++) {
                    const int32_t d = idx[r * K + k];
                    if (d >= M) continue;
                    const float v = f32(get(dt, g, d * H + h));
                    acc = first ? v : acc + v, first = 0;
                }
            } else {
                for (int64_t i = 0; i < M; i++)
                    if (idx[i] == r) {
                        const float v = f32(get(dt, g, i * H + h));
                        acc = first ? v : acc + v, first = 0;
                    }
            }
            put(dt, want, 0, first ? 0.0 : (double)acc);
            if (!same(dt, o, r * H + h, want, 0)) bad = 1;
        }
    if (with_probs) {
        double *ref = calloc((size_t)(N * E) + 1, sizeof(double));
        if (!pad) {
            int64_t q = 0;
            for (int64_t x = 0; x < E; x++)
                for (int64_t r = 0; r < N; r++)
                    if (map[r * E + x]) ref[r * E + x] = get(dt, pg, q++);
        } else {
            const int64_t Cm = M / E; /* CANN's capacity: permutedTokenOutputGrad dim0 / numExperts */
            for (int64_t i = 0; i < E * Cm; i++) ref[idx[i] * E + i / Cm] = get(dt, pg, i);
        }
        for (int64_t i = 0; i < N * E; i++)
            if (get(dt, op, i) != ref[i] || signbit(get(dt, op, i)) != signbit(ref[i])) bad = 2;
        free(ref);
    }
    CHECK(!bad, "permute grad dt%d N%lld E%lld K%lld H%lld pad%d probs%d: mismatch %d", dt, (long long)N, (long long)E,
          (long long)K, (long long)H, pad, with_probs, bad);
    tu_destroy(to);
    if (tpo) tu_destroy(tpo);
    free(g), free(pg), free(map), free(idx);
    release();
    g_cases++;
}

/* ---- the forward unpermute ---- */
static void unpermute_case(aclDataType dt, aclDataType mt, int64_t N, int64_t E, int64_t K, int64_t H, int pad,
                           int with_probs, int strided) {
    const int64_t C = pad ? tu_int(1, N) : 0, L = pad ? E * C : N * K, M = L;
    void *x = rand_data(dt, M * H), *pr = rand_data(dt, N * E);
    uint8_t *map = rand_map(N, E, K);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)L + 4);
    for (int64_t i = 0; i < L; i++) idx[i] = (int32_t)(pad ? tu_below(N) : tu_below(M + 3) - 1); /* -1, >= M: skipped */
    unsigned char *o, *oo = NULL, *ot = NULL, *op = NULL;
    aclTensor *tx = in2(x, 2, M, H, dt, strided), *ti = in2(idx, 1, L, 0, ACL_INT32, strided),
              *tm = in2(map, 2, N, E, mt, strided), *tp = with_probs ? in2(pr, 2, N, E, dt, strided) : NULL;
    aclTensor *to = out2(2, N, H, dt, &o), *too = out2(1, L, 0, ACL_INT32, &oo), *tot = out2(1, L, 0, ACL_INT32, &ot),
              *top = with_probs ? out2(1, L, 0, dt, &op) : NULL;
    const int64_t shape[2] = {N, H};
    aclIntArray *rs = aclCreateIntArray(shape, 2);
    uint64_t wsz;
    aclOpExecutor *e;
    aclnnStatus rc = aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(tx, ti, tm, tp, pad, rs, to, too, tot, top,
                                                                          &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenUnpermuteWithRoutingMap);
    CHECK(rc == ACLNN_SUCCESS, "unpermute: rc %d %s", rc, tu_msg());
    int bad = 0;
    unsigned char want[4];
    double *pv = calloc((size_t)L + 1, sizeof(double));
    if (with_probs && !pad) {
        int64_t q = 0;
        for (int64_t r = 0; r < N; r++)
            for (int64_t x2 = 0; x2 < E; x2++)
                if (map[r * E + x2]) pv[q++] = get(dt, pr, r * E + x2);
    }
    if (with_probs && pad)
        for (int64_t i = 0; i < L; i++) pv[i] = get(dt, pr, idx[i] * E + i / C);
    for (int64_t r = 0; r < N && !bad; r++)
        for (int64_t h = 0; h < H; h++) {
            float acc = 0.0f;
            int first = 1;
            if (!pad) {
                for (int64_t k = 0; k < K; k++) {
                    const int32_t d = idx[r * K + k];
                    const double p = with_probs ? pv[r * K + k] : 1.0;
                    if (d < 0 || d >= M || (with_probs && p == 0.0)) continue;
                    const float v = with_probs ? f32(get(dt, x, d * H + h)) * f32(p) : f32(get(dt, x, d * H + h));
                    acc = first ? v : acc + v, first = 0;
                }
            } else {
                for (int64_t i = 0; i < L; i++)
                    if (idx[i] == r) {
                        float v = f32(get(dt, x, i * H + h));
                        if (with_probs) {
                            unsigned char b[4];
                            put(dt, b, 0, (double)(v * f32(pv[i])));
                            v = f32(get(dt, b, 0));
                        }
                        acc = first ? v : acc + v, first = 0;
                    }
            }
            put(dt, want, 0, first ? 0.0 : (double)acc);
            if (!same(dt, o, r * H + h, want, 0)) bad = 1;
        }
    if (with_probs)
        for (int64_t i = 0; i < L; i++)
            if (get(dt, op, i) != pv[i]) bad = 2;
    if (pad) {
        int64_t *key = malloc(sizeof(int64_t) * (size_t)L + 8), *perm = malloc(sizeof(int64_t) * (size_t)L + 8);
        for (int64_t i = 0; i < L; i++) key[i] = idx[i];
        tu_ref_sort(key, L, perm);
        for (int64_t i = 0; i < L; i++) {
            int32_t a, b;
            memcpy(&a, oo + 4 * i, 4), memcpy(&b, ot + 4 * i, 4);
            if (a != perm[i] || b != idx[perm[i]]) bad = 3;
        }
        free(key), free(perm);
    } else {
        CHECK(tu_all_poison(oo, (size_t)L * 4) && tu_all_poison(ot, (size_t)L * 4), "unpermute: outIndex written");
    }
    CHECK(!bad, "unpermute dt%d N%lld E%lld K%lld H%lld pad%d probs%d strided%d: mismatch %d", dt, (long long)N,
          (long long)E, (long long)K, (long long)H, pad, with_probs, strided, bad);
    aclDestroyIntArray(rs);
    tu_destroy(to), tu_destroy(too), tu_destroy(tot);
    if (top) tu_destroy(top);
    free(x), free(pr), free(map), free(idx), free(pv);
    release();
    g_cases++;
}

/* ---- the unpermute backward ---- */
static void unpermute_grad_case(aclDataType dt, aclDataType mt, int64_t N, int64_t E, int64_t K, int64_t H, int pad,
                                int with_probs, int strided) {
    const int64_t C = pad ? tu_int(1, N) : 0, M = pad ? E * C : N * K;
    void *g = rand_data(dt, N * H), *x = rand_data(dt, M * H), *pr = rand_data(dt, N * E);
    uint8_t *map = rand_map(N, E, K);
    int32_t *oidx = malloc(sizeof(int32_t) * (size_t)M + 4), *tid = malloc(sizeof(int32_t) * (size_t)M + 4);
    for (int64_t i = 0; i < M; i++) oidx[i] = (int32_t)i;
    for (int64_t i = M - 1; i > 0; i--) {
        int64_t j = tu_below(i + 1);
        int32_t s = oidx[i];
        oidx[i] = oidx[j], oidx[j] = s;
    }
    for (int64_t i = 0; i < M; i++) tid[i] = (int32_t)tu_below(N);
    if (!pad && tu_chance(50)) oidx[tu_below(M)] = -1; /* an unused slot: nothing written */
    unsigned char *o, *op = NULL;
    aclTensor *tg = in2(g, 2, N, H, dt, strided), *to_ = in2(oidx, 1, M, 0, ACL_INT32, strided),
              *tt = in2(tid, 1, M, 0, ACL_INT32, strided), *tm = with_probs ? in2(map, 2, N, E, mt, strided) : NULL,
              *tx = with_probs ? in2(x, 2, M, H, dt, strided) : NULL, *tp = with_probs ? in2(pr, 2, N, E, dt, strided) : NULL;
    aclTensor *tgx = out2(2, M, H, dt, &o), *tgp = with_probs ? out2(2, N, E, dt, &op) : NULL;
    uint64_t wsz;
    aclOpExecutor *e;
    aclnnStatus rc = aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(tg, to_, tt, tm, tx, tp, pad, NULL, tgx,
                                                                              tgp, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenUnpermuteWithRoutingMapGrad);
    CHECK(rc == ACLNN_SUCCESS, "unpermute grad: rc %d %s", rc, tu_msg());
    int bad = 0;
    unsigned char want[4];
    double *gp = calloc((size_t)(N * E) + 1, sizeof(double));
    for (int64_t i = 0; i < M; i++) {
        const int64_t d = oidx[i];
        if (d < 0) continue;
        int64_t r = pad ? tid[i] : i / K, ex = 0;
        double p = 1.0;
        if (with_probs && !pad) { /* the (i % K)-th routed expert of r */
            int64_t k = i % K;
            for (ex = 0; ex < E; ex++)
                if (map[r * E + ex] && k-- == 0) break;
            p = get(dt, pr, r * E + ex);
        }
        if (with_probs && pad) ex = d / C, p = get(dt, pr, r * E + ex);
        double dot = 0.0;
        for (int64_t h = 0; h < H; h++) {
            const float gv = f32(get(dt, g, r * H + h));
            if (with_probs) {
                put(dt, want, 0, (double)(gv * f32(p)));
                dot += (double)(f32(get(dt, x, d * H + h)) * gv);
            } else {
                put(dt, want, 0, (double)gv);
            }
            if (!same(dt, o, d * H + h, want, 0)) bad = 1;
        }
        if (with_probs) gp[r * E + ex] = dot;
    }
    if (with_probs)
        for (int64_t i = 0; i < N * E; i++) {
            put(dt, want, 0, gp[i]);
            if (!same(dt, op, i, want, 0)) bad = 2;
        }
    CHECK(!bad, "unpermute grad dt%d N%lld E%lld K%lld H%lld pad%d probs%d strided%d: mismatch %d", dt, (long long)N,
          (long long)E, (long long)K, (long long)H, pad, with_probs, strided, bad);
    tu_destroy(tgx);
    if (tgp) tu_destroy(tgp);
    free(g), free(x), free(pr), free(map), free(oidx), free(tid), free(gp);
    release();
    g_cases++;
}

/* ---- hand-computed: the torch_npu test's 3 x 2 maps ---- */
static void hand_cases(void) {
    /* tokens rows 10, 20, 30 (H = 1); map [[1,0],[1,1],[0,1]], K = ... rows differ: use all-ones K = 2 */
    float tok[3] = {10, 20, 30}, pr[6] = {1, 2, 3, 4, 5, 6};
    uint8_t map[6] = {1, 1, 1, 1, 1, 1};
    float o[6], op[6];
    int32_t oi[6];
    aclTensor *tt = tu_mk(2, 3, 1, 0, ACL_FLOAT, tok), *tm = tu_mk(2, 3, 2, 0, ACL_BOOL, map),
              *tp = tu_mk(2, 3, 2, 0, ACL_FLOAT, pr), *to = tu_mk(2, 6, 1, 0, ACL_FLOAT, o),
              *tpo = tu_mk(1, 6, 0, 0, ACL_FLOAT, op), *ti = tu_mk(1, 6, 0, 0, ACL_INT32, oi);
    uint64_t wsz;
    aclOpExecutor *e;
    aclnnStatus rc = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, tp, 6, false, to, tpo, ti, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenPermuteWithRoutingMap);
    /* expert 0 takes tokens 0,1,2 (rows 0-2), expert 1 tokens 0,1,2 (rows 3-5) */
    const float wo[6] = {10, 20, 30, 10, 20, 30}, wp[6] = {1, 3, 5, 2, 4, 6};
    const int32_t wi[6] = {0, 3, 1, 4, 2, 5};
    CHECK(rc == 0 && !memcmp(o, wo, sizeof o) && !memcmp(op, wp, sizeof op) && !memcmp(oi, wi, sizeof oi),
          "hand dropless: rc %d, idx %d %d %d %d %d %d", rc, oi[0], oi[1], oi[2], oi[3], oi[4], oi[5]);
    /* drop-pad, map [[1,0],[1,1],[1,1]], numOut 3 -> C = 1... use 4 -> C = 2 */
    uint8_t map2[6] = {1, 0, 1, 1, 1, 1};
    aclTensor *tm2 = tu_mk(2, 3, 2, 0, ACL_INT8, map2), *to2 = tu_mk(2, 4, 1, 0, ACL_FLOAT, o),
              *tpo2 = tu_mk(1, 4, 0, 0, ACL_FLOAT, op), *ti2 = tu_mk(1, 4, 0, 0, ACL_INT32, oi);
    rc = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm2, tp, 5, true, to2, tpo2, ti2, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenPermuteWithRoutingMap);
    const int32_t wi2[4] = {0, 1, 1, 2};
    const float wo2[4] = {10, 20, 20, 30}, wp2[4] = {1, 3, 4, 6};
    CHECK(rc == 0 && !memcmp(oi, wi2, 16) && !memcmp(o, wo2, 16) && !memcmp(op, wp2, 16), "hand pad: rc %d", rc);
    tu_destroy(tt), tu_destroy(tm), tu_destroy(tp), tu_destroy(to), tu_destroy(tpo), tu_destroy(ti);
    tu_destroy(tm2), tu_destroy(to2), tu_destroy(tpo2), tu_destroy(ti2);
    g_cases++;
}

/* ---- phase-1 codes and phase-2 refusals ---- */
static void error_cases(void) {
    float tok[12] = {0}, pr[6] = {0}, o[64];
    uint8_t map[6] = {1, 0, 0, 1, 1, 0};
    int32_t oi[16];
    aclTensor *tt = tu_mk(2, 3, 4, 0, ACL_FLOAT, tok), *tm = tu_mk(2, 3, 2, 0, ACL_BOOL, map),
              *tp = tu_mk(2, 3, 2, 0, ACL_FLOAT, pr), *to = tu_mk(2, 3, 4, 0, ACL_FLOAT, o),
              *tpo = tu_mk(1, 3, 0, 0, ACL_FLOAT, o + 40), *ti = tu_mk(1, 3, 0, 0, ACL_INT32, oi),
              *th = tu_mk(2, 3, 4, 0, ACL_FLOAT16, tok), *t3 = tu_mk(1, 3, 0, 0, ACL_BOOL, map);
    uint64_t wsz;
    aclOpExecutor *e = NULL;
#define P1(call, want) CHECK(!tu_phase1_bad((call), e, (want), NULL, __LINE__), "phase 1 line %d", __LINE__)
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(NULL, tm, NULL, 3, false, to, NULL, ti, &wsz, &e), 161001);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, tp, 3, false, to, NULL, ti, &wsz, &e), 161001);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, NULL, 3, false, th, NULL, ti, &wsz, &e), 161002);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, t3, NULL, 3, false, to, NULL, ti, &wsz, &e), 161002);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, NULL, -1, false, to, NULL, ti, &wsz, &e), 161002);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, NULL, 7, false, to, NULL, ti, &wsz, &e), 161002);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, NULL, 6, false, to, NULL, ti, &wsz, &e), 161002);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, NULL, 3, false, to, tpo, ti, &wsz, &e), 161002);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm, NULL, 3, false, to, NULL, ti, &wsz, &e), 0);
    aclTensor *t22 = tu_mk(2, 2, 4, 0, ACL_FLOAT, tok);
    P1(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(t22, tm, NULL, 3, false, to, NULL, ti, &wsz, &e), 561002);
    /* phase 2: a row with two ones when topK is 1 -> 161002, outputs untouched */
    uint8_t map2[6] = {1, 1, 0, 1, 1, 0};
    aclTensor *tm2 = tu_mk(2, 3, 2, 0, ACL_INT8, map2);
    memset(o, 0xA5, sizeof o), memset(oi, 0xA5, sizeof oi);
    aclnnStatus rc = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm2, NULL, 3, false, to, NULL, ti, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenPermuteWithRoutingMap);
    CHECK(rc == 161002 && tu_all_poison((unsigned char *)o, 48) && tu_all_poison((unsigned char *)oi, 12),
          "4 ones for topK 1: rc %d", rc);
    map2[1] = 2; /* not 0/1 */
    rc = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tt, tm2, NULL, 3, false, to, NULL, ti, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenPermuteWithRoutingMap);
    CHECK(rc == 161002 && tu_msg_has("0 or 1", NULL) && tu_all_poison((unsigned char *)o, 48), "map value 2: rc %d", rc);
    /* grad: attrs first, then NULLs */
    P1(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(NULL, NULL, ti, tm, 0, 3, false, tt, NULL, &wsz, &e), 161002);
    P1(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(NULL, NULL, ti, tm, 2, 3, false, tt, NULL, &wsz, &e), 161001);
    P1(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(to, tpo, ti, NULL, 2, 3, false, tt, NULL, &wsz, &e), 161001);
    /* grad phase 2: pad index past tokensNum */
    int32_t bad_idx[3] = {0, 5, 1};
    aclTensor *tbi = tu_mk(1, 3, 0, 0, ACL_INT32, bad_idx), *tg = tu_mk(2, 3, 4, 0, ACL_FLOAT, o + 16);
    float gout[12];
    memset(gout, 0xA5, sizeof gout);
    aclTensor *tgo = tu_mk(2, 3, 4, 0, ACL_FLOAT, gout);
    rc = aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(tg, NULL, tbi, NULL, 2, 3, true, tgo, NULL, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenPermuteWithRoutingMapGrad);
    CHECK(rc == 161002 && tu_all_poison((unsigned char *)gout, sizeof gout), "grad pad index 5: rc %d", rc);
    /* unpermute */
    P1(aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(tt, ti, NULL, NULL, false, NULL, to, NULL, NULL, NULL, &wsz, &e),
       161001);
    const int64_t rsv[2] = {3, 4};
    aclIntArray *rs = aclCreateIntArray(rsv, 2);
    P1(aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(tt, tt, NULL, NULL, false, rs, to, NULL, NULL, NULL, &wsz, &e),
       161002);
    rc = aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(tt, tbi, NULL, NULL, true, rs, tgo, NULL, NULL, NULL, &wsz, &e);
    rc = run(rc, e, wsz, aclnnMoeTokenUnpermuteWithRoutingMap);
    CHECK(rc == 161002 && tu_all_poison((unsigned char *)gout, sizeof gout), "unpermute pad index 5: rc %d", rc);
    /* unpermute grad: topK > experts with probs -> 561002 */
    float big[8 * 4] = {0}, gx[8 * 4];
    int32_t oi8[6] = {0, 1, 2, 3, 4, 5};
    aclTensor *tx6 = tu_mk(2, 6, 4, 0, ACL_FLOAT, big), *toi = tu_mk(1, 6, 0, 0, ACL_INT32, oi8),
              *tgx = tu_mk(2, 6, 4, 0, ACL_FLOAT, gx), *tp1 = tu_mk(2, 2, 1, 0, ACL_FLOAT, pr),
              *tm1 = tu_mk(2, 2, 1, 0, ACL_BOOL, map), *tg2 = tu_mk(2, 2, 4, 0, ACL_FLOAT, big), *tgp = tu_mk(2, 2, 1, 0, ACL_FLOAT, gx + 28);
    P1(aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(tg2, toi, toi, tm1, tx6, tp1, false, NULL, tgx, tgp, &wsz, &e),
       561002);
    P1(aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(tg2, toi, toi, tm1, tx6, tp1, false, NULL, tgx, NULL, &wsz, &e),
       161001);
    P1(aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(tg2, toi, toi, NULL, NULL, NULL, false, NULL, tgx, NULL, &wsz, &e),
       0);
    aclDestroyIntArray(rs);
    aclTensor *all[] = {tt, tm, tp, to, tpo, ti, th, t3, t22, tm2, tbi, tg, tgo, tx6, toi, tgx, tp1, tm1, tg2, tgp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tu_destroy(all[i]);
    g_cases++;
#undef P1
}

#if defined(MOEFR_X86_KERNELS)
/* The unpermute's AVX2 bf16 rounding of its fp32 sums against a rounding
 * written from the bits (compare the dropped half with 0x8000; NaN: the
 * high half made quiet): every high half with low halves at and around the
 * ties, in runs of odd lengths (the 16-wide blocks and the tail). */
void mf_rm_narrow_bf16_avx2(char *p, const float *s, int64_t n);
static uint16_t bf16_ref(uint32_t u) {
    const uint32_t hi = u >> 16, lo = u & 0xFFFFu;
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(hi | 0x40u);
    return (uint16_t)(hi + (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))));
}
static void narrow_cases(void) {
    if (!__builtin_cpu_supports("avx2")) return;
    static const uint32_t LO[] = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    const int64_t n = 65536 * 7;
    float *f = malloc((size_t)n * 4);
    uint16_t *h = malloc((size_t)n * 2 + 2);
    CHECK(f && h, "allocation");
    for (int64_t i = 0; i < n; i++) {
        const uint32_t lo = i % 7 < 6 ? LO[i % 7] : (uint32_t)tu_next() & 0xFFFFu;
        f[i] = mf_bits_f32((uint32_t)(i / 7) << 16 | lo);
    }
    for (int64_t j = 0; j < n;) {
        const int64_t r = tu_int(1, 200), len = r < n - j ? r : n - j;
        h[j + len] = 0x5A5A; /* past the run: untouched */
        mf_rm_narrow_bf16_avx2((char *)(h + j), f + j, len);
        int bad = 0;
        for (int64_t i = j; i < j + len && !bad; i++)
            if (h[i] != bf16_ref(mf_f32_bits(f[i]))) {
                bad = 1;
                CHECK(0, "bf16 rounding of %08x: %04x, want %04x", mf_f32_bits(f[i]), h[i], bf16_ref(mf_f32_bits(f[i])));
            }
        CHECK(h[j + len] == 0x5A5A || j + len == n, "the bf16 rounding wrote past its %lld values", (long long)len);
        j += len;
    }
    g_cases++;
    free(f), free(h);
}
#endif

int main(void) {
    tu_seed("test_routing_map");
#if defined(MOEFR_X86_KERNELS)
    narrow_cases();
#endif
    hand_cases();
    error_cases();
    for (int it = 0; it < 120; it++) {
        const aclDataType dt = DTS[tu_below(3)], mt = tu_chance(50) ? ACL_BOOL : ACL_INT8;
        const int64_t N = tu_int(1, 37), E = tu_int(1, 19), K = tu_int(1, E < 6 ? E : tu_chance(25) ? E : 6),
                      H = tu_int(1, 41); /* K up to 19: more than one group of 8 rows (routing_map.c RM_NR) */
        const int pad = tu_chance(40), probs = tu_chance(60), strided = tu_chance(40);
        switch (it % 4) {
        case 0: permute_case(dt, mt, N, E, K, H, pad, probs, strided, pad ? tu_int(1, N) : 0); break;
        case 1: permute_grad_case(dt, mt, N, E, K, H, pad, probs, strided); break;
        case 2: unpermute_case(dt, mt, N, E, K, H, pad, probs, strided); break;
        default: unpermute_grad_case(dt, mt, N, E, K, H, pad, probs, strided); break;
        }
    }
    /* a larger dropless permute (several sort chunks, parallel gather) */
    permute_case(ACL_BF16, ACL_BOOL, 2049, 33, 5, 67, 0, 1, 0, 0);
    permute_case(ACL_FLOAT, ACL_INT8, 1501, 16, 1, 129, 1, 1, 1, 700);
    unpermute_case(ACL_FLOAT16, ACL_BOOL, 1023, 24, 3, 130, 0, 1, 0);
    /* every expert for each token: three groups of rows, rows past one tile of 512 with a tail */
    unpermute_case(ACL_BF16, ACL_INT8, 40, 19, 19, 531, 0, 1, 0);
    unpermute_case(ACL_FLOAT, ACL_BOOL, 33, 17, 17, 517, 0, 0, 0);
    /* outputs past 32 MiB (the streaming-store threshold is at most that):
     * rows leave by streaming stores, rows of odd length (unaligned starts) */
    unpermute_case(ACL_FLOAT, ACL_BOOL, 2051, 6, 2, 4099, 0, 1, 0);
    unpermute_case(ACL_BF16, ACL_INT8, 2051, 5, 1, 8195, 0, 0, 0);
    printf("test_routing_map: %d cases, %d checks, %d failures\n", g_cases, g_checks, g_fail);
    return g_fail != 0;
}
