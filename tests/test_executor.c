/* test_executor.c - executor lifetime of aclnnMoeFinalizeRoutingV2Grad: single
 * use, repeatable runs that follow changed inputs, destroy, workspace and stream checks, empty problems. */
#define _DEFAULT_SOURCE /* pthread barriers, MAP_ANONYMOUS */
#include <math.h>
#include <pthread.h>
#include <sys/mman.h>

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "testutil.h"

/* A small fp32 problem (mode 0, scales, expandedX, bias) with integer values,
 * so a direct loop gives exact expectations. */
enum { R = 3, K = 2, H = 7, N = R * K, E = 2 };
typedef struct prob {
    float gy[R][H], x[N][H], s[R][K], bias[E][H];
    int32_t idx[N], ei[R][K];
    float gx[N][H], gs[R][K];
    aclTensor *tgy, *tidx, *tx, *ts, *tei, *tb, *tgx, *tgs;
} prob;

static void randomize(prob *p) {
    for (int r = 0; r < R; r++)
        for (int j = 0; j < H; j++) p->gy[r][j] = (float)tu_int(-9, 9);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < H; j++) p->x[i][j] = (float)tu_int(-9, 9);
    for (int e = 0; e < E; e++)
        for (int j = 0; j < H; j++) p->bias[e][j] = (float)tu_int(-9, 9);
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) {
            p->s[r][k] = (float)tu_int(-4, 4) / 2;
            p->ei[r][k] = (int32_t)tu_below(E);
        }
    for (int i = 0; i < N; i++) p->idx[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = (int)tu_below(i + 1);
        int32_t t = p->idx[i];
        p->idx[i] = p->idx[j];
        p->idx[j] = t;
    }
}

static void poison(prob *p) {
    memset(p->gx, 0xEE, sizeof p->gx);
    memset(p->gs, 0xEE, sizeof p->gs);
}

static void setup(prob *p) {
    randomize(p);
    poison(p);
    int64_t dgy[2] = {R, H}, didx[1] = {N}, dx[2] = {N, H}, ds[2] = {R, K}, db[2] = {E, H};
    p->tgy = tu_tensor(dgy, 2, ACL_FLOAT, p->gy);
    p->tidx = tu_tensor(didx, 1, ACL_INT32, p->idx);
    p->tx = tu_tensor(dx, 2, ACL_FLOAT, p->x);
    p->ts = tu_tensor(ds, 2, ACL_FLOAT, p->s);
    p->tei = tu_tensor(ds, 2, ACL_INT32, p->ei);
    p->tb = tu_tensor(db, 2, ACL_FLOAT, p->bias);
    p->tgx = tu_tensor(dx, 2, ACL_FLOAT, p->gx);
    p->tgs = tu_tensor(ds, 2, ACL_FLOAT, p->gs);
    CHECK(p->tgy && p->tidx && p->tx && p->ts && p->tei && p->tb && p->tgx && p->tgs);
}

static void teardown(prob *p) {
    aclTensor *all[] = {p->tgy, p->tidx, p->tx, p->ts, p->tei, p->tb, p->tgx, p->tgs};
    for (int i = 0; i < 8; i++) tu_destroy(all[i]);
}

/* Small integers: every product and sum is exact in fp32, so == is the right test. */
static int results_ok(const prob *p) {
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) {
            int d = p->idx[r * K + k];
            double want_gs = 0;
            for (int j = 0; j < H; j++) {
                if (p->gx[d][j] != p->gy[r][j] * p->s[r][k]) return 0;
                want_gs += ((double)p->x[d][j] + p->bias[p->ei[r][k]][j]) * p->gy[r][j];
            }
            if (p->gs[r][k] != (float)want_gs) return 0;
        }
    return 1;
}

static aclOpExecutor *plan(prob *p, uint64_t *ws) {
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(p->tgy, p->tidx, p->tx, p->ts, p->tei, p->tb, 0, 0, 0, 0,
                                                           p->tgx, p->tgs, ws, &ex),
             ACLNN_SUCCESS);
    CHECK(ex != NULL);
    return ex;
}

static void *ws_alloc(uint64_t n) {
    void *w = NULL;
    if (n) CHECK_RC(aclrtMalloc(&w, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    return w;
}

static void ws_free(void *w) {
    if (w) CHECK_RC(aclrtFree(w), ACL_SUCCESS);
}

static void single_use(void) {
    prob p;
    setup(&p);
    uint64_t n = 0;
    aclOpExecutor *ex = plan(&p, &n);
    CHECK(n > 0); /* the index bitmap at least */
    void *w = ws_alloc(n);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_SUCCESS);
    CHECK(results_ok(&p));
    /* spent: a second run, a destroy and making it repeatable are refused */
    poison(&p);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("executor", NULL));
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
    unsigned char probe[sizeof p.gx];
    memset(probe, 0xEE, sizeof probe);
    CHECK(memcmp(probe, p.gx, sizeof p.gx) == 0);

    /* a failing run spends a single-use executor too */
    ex = plan(&p, &n);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n - 1, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("workspaceSize", NULL));
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(memcmp(probe, p.gx, sizeof p.gx) == 0);

    /* an executor destroyed before running cannot run */
    ex = plan(&p, &n);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("aclDestroyAclOpExecutor", NULL));
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(memcmp(probe, p.gx, sizeof p.gx) == 0);

    /* NULL executors */
    /* CANN's engine codes: a NULL executor is 161001 in phase 2, 561103 here */
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, NULL, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(tu_msg_has("executor", "NULL", NULL));
    CHECK_RC(aclDestroyAclOpExecutor(NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK(tu_msg_has("aclDestroyAclOpExecutor", "NULL", NULL));
    CHECK_RC(aclSetAclOpExecutorRepeatable(NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK(tu_msg_has("aclSetAclOpExecutorRepeatable", "NULL", NULL));
    /* a pointer that never was an executor */
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, (aclOpExecutor *)probe, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclDestroyAclOpExecutor((aclOpExecutor *)probe), ACLNN_ERR_PARAM_INVALID);
    ws_free(w);
    teardown(&p);
}

static void workspace_and_stream(void) {
    prob p;
    setup(&p);
    uint64_t n = 0;
    void *w;
    aclOpExecutor *ex;
    unsigned char probe[sizeof p.gx];
    memset(probe, 0xEE, sizeof probe);

    /* smaller than asked, zero size, NULL with a non-zero size */
    ex = plan(&p, &n);
    w = ws_alloc(n);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, 0, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    ex = plan(&p, &n);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(NULL, n, ex, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(tu_msg_has("workspace", "NULL", NULL));
    CHECK(memcmp(probe, p.gx, sizeof p.gx) == 0);
    ws_free(w);

    /* more than asked, at an odd address: fine */
    ex = plan(&p, &n);
    unsigned char *big = malloc(n + 100);
    CHECK(big != NULL);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(big + 3, n + 97, ex, NULL), ACLNN_SUCCESS);
    CHECK(results_ok(&p));
    free(big);

    /* streams: a live one works; an unknown or destroyed one is refused */
    aclrtStream st = NULL;
    CHECK_RC(aclrtCreateStream(&st), ACL_SUCCESS);
    poison(&p);
    ex = plan(&p, &n);
    w = ws_alloc(n);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, st), ACLNN_SUCCESS);
    CHECK_RC(aclrtSynchronizeStream(st), ACL_SUCCESS);
    CHECK(results_ok(&p));
    poison(&p);
    int not_a_stream;
    ex = plan(&p, &n);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, &not_a_stream), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("stream", NULL));
    CHECK_RC(aclrtDestroyStream(st), ACL_SUCCESS);
    ex = plan(&p, &n);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, st), ACLNN_ERR_PARAM_INVALID);
    CHECK(memcmp(probe, p.gx, sizeof p.gx) == 0);
    ws_free(w);
    teardown(&p);
}

static void repeatable(void) {
    prob p;
    setup(&p);
    uint64_t n = 0;
    aclOpExecutor *ex = plan(&p, &n);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS); /* idempotent */
    void *w = ws_alloc(n);
    for (int run = 0; run < 5; run++) {
        /* new input values (and a new permutation) in the same memory: results follow */
        randomize(&p);
        poison(&p);
        CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_SUCCESS);
        if (!results_ok(&p)) TU_FAIL("repeatable run %d does not match its new inputs", run);
    }
    /* a failed run does not release a repeatable executor */
    poison(&p);
    unsigned char gx0[sizeof p.gx], gs0[sizeof p.gs];
    memcpy(gx0, p.gx, sizeof gx0);
    memcpy(gs0, p.gs, sizeof gs0);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n - 1, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    int32_t keep = p.ei[1][0];
    p.ei[1][0] = E; /* bias would be read out of bounds: phase 2 refuses, outputs untouched */
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("expertIdxOptional[1][0]", NULL));
    CHECK(memcmp(gx0, p.gx, sizeof gx0) == 0 && memcmp(gs0, p.gs, sizeof gs0) == 0);
    p.ei[1][0] = keep;
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_SUCCESS);
    CHECK(results_ok(&p));
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    ws_free(w);
    teardown(&p);
}

/* The forward operator's executor is not the backward's. */
static void wrong_operator(void) {
    prob p;
    setup(&p);
    float out[R][H];
    int64_t dout[2] = {R, H};
    aclTensor *tout = tu_tensor(dout, 2, ACL_FLOAT, out);
    CHECK(tout != NULL);
    uint64_t n = 0;
    aclOpExecutor *ex = NULL;
    /* forward mode 2 takes the row layout this problem's index already has */
    CHECK_RC(aclnnMoeFinalizeRoutingV2GetWorkspaceSize(p.tx, p.tidx, NULL, NULL, p.tb, p.ts, p.tei, 2, tout, &n, &ex),
             ACLNN_SUCCESS);
    unsigned char *w = malloc(n + 1);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("executor", NULL));
    free(w);
    tu_destroy(tout);
    teardown(&p);
}

/* Two threads race to run one single-use executor: exactly one wins. */
typedef struct racer {
    aclOpExecutor *ex;
    void *w;
    uint64_t n;
    pthread_barrier_t *bar;
    aclnnStatus rc;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    pthread_barrier_wait(r->bar);
    r->rc = aclnnMoeFinalizeRoutingV2Grad(r->w, r->n, r->ex, NULL);
    return NULL;
}

static void double_claim(void) {
    prob p;
    setup(&p);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    for (int trial = 0; trial < 50; trial++) {
        uint64_t n = 0;
        aclOpExecutor *ex = plan(&p, &n);
        void *w0 = ws_alloc(n), *w1 = ws_alloc(n); /* one workspace each: no shared scratch */
        racer a = {ex, w0, n, &bar, -1}, b = {ex, w1, n, &bar, -1};
        pthread_t ta, tb;
        CHECK(pthread_create(&ta, NULL, race, &a) == 0);
        CHECK(pthread_create(&tb, NULL, race, &b) == 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        int wins = (a.rc == ACLNN_SUCCESS) + (b.rc == ACLNN_SUCCESS);
        int refusals = (a.rc == ACLNN_ERR_PARAM_INVALID) + (b.rc == ACLNN_ERR_PARAM_INVALID);
        if (wins != 1 || refusals != 1) TU_FAIL("trial %d: statuses %d and %d", trial, (int)a.rc, (int)b.rc);
        CHECK(results_ok(&p));
        ws_free(w0);
        ws_free(w1);
    }
    pthread_barrier_destroy(&bar);
    teardown(&p);
}

/* R = 0, H = 0 and K = 0: success; gradScales = 0 for H = 0, and in mode 1
 * every row of gradExpandedX is unnamed (+0.0) when R or K is 0. */
static void empty_problems(void) {
    for (int mode = 0; mode < 2; mode++)
        for (int c = 0; c < 3; c++) {
            int64_t r = c == 0 ? 0 : 2, h = c == 1 ? 0 : 3, k = c == 2 ? 0 : 2;
            int64_t e = 2, cap = 3, n = r * k, d0 = mode ? e * cap : n;
            float gy[8] = {0}, x[64], s[8] = {0}, b[8] = {0}, gx[64], gs[8];
            int32_t idx[8] = {0, 1, 2, 3}, ei[8] = {0};
            memset(gx, 0xEE, sizeof gx);
            memset(gs, 0xEE, sizeof gs);
            memset(x, 0, sizeof x);
            int64_t dgy[2] = {r, h}, didx[1] = {n}, ds[2] = {r, k}, db[2] = {e, h};
            int64_t dx2[2] = {d0, h}, dx3[3] = {e, cap, h};
            aclTensor *tgy = tu_tensor(dgy, 2, ACL_FLOAT, gy), *tidx = tu_tensor(didx, 1, ACL_INT32, idx);
            aclTensor *tx = mode ? tu_tensor(dx3, 3, ACL_FLOAT, x) : tu_tensor(dx2, 2, ACL_FLOAT, x);
            aclTensor *tgx = mode ? tu_tensor(dx3, 3, ACL_FLOAT, gx) : tu_tensor(dx2, 2, ACL_FLOAT, gx);
            aclTensor *ts = tu_tensor(ds, 2, ACL_FLOAT, s), *tei = tu_tensor(ds, 2, ACL_INT32, ei);
            aclTensor *tb = tu_tensor(db, 2, ACL_FLOAT, b), *tgs = tu_tensor(ds, 2, ACL_FLOAT, gs);
            CHECK(tgy && tidx && tx && tgx && ts && tei && tb && tgs);
            uint64_t wsn = 99;
            aclOpExecutor *ex = NULL;
            CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tgy, tidx, tx, ts, tei, tb, mode, 0, e, cap, tgx,
                                                                   tgs, &wsn, &ex),
                     ACLNN_SUCCESS);
            void *w = wsn ? malloc(wsn) : NULL;
            CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, wsn, ex, NULL), ACLNN_SUCCESS);
            free(w);
            if (c == 1) /* H = 0: empty sums */
                for (int i = 0; i < n; i++)
                    if (gs[i] != 0.0f || signbit(gs[i])) TU_FAIL("mode %d H = 0: gradScales[%d] = %g", mode, i, gs[i]);
            for (int i = (int)n; i < 8; i++) CHECK(((unsigned char *)&gs[i])[0] == 0xEE);
            /* mode 0 with R or K = 0 has no rows; mode 1 has only unnamed ones: all +0.0 */
            for (int i = 0; i < 64; i++) {
                int named_zero = mode == 1 && c != 1 && i < d0 * h;
                uint32_t bits;
                memcpy(&bits, &gx[i], 4);
                if (named_zero ? bits != 0 : bits != 0xEEEEEEEEu)
                    TU_FAIL("mode %d empty case %d: gradExpandedX[%d] = 0x%08x", mode, c, i, bits);
            }
            aclTensor *all[] = {tgy, tidx, tx, tgx, ts, tei, tb, tgs};
            for (int i = 0; i < 8; i++) tu_destroy(all[i]);
        }
}

/* Phase 1 plans from descriptors only: tensors over memory that cannot be
 * touched (PROT_NONE) plan fine, and the executor can be destroyed unrun. */
static void plan_reads_no_data(void) {
    size_t bytes = 1 << 16;
    void *none = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(none != MAP_FAILED);
    int64_t dgy[2] = {R, H}, didx[1] = {N}, dx[2] = {N, H}, ds[2] = {R, K}, db[2] = {E, H};
    int64_t st_t[2] = {1, R}; /* a transposed gradY as well: packing is planned, not done */
    int64_t sgy[1] = {R * H};
    aclTensor *t[8] = {
        aclCreateTensor(dgy, 2, ACL_BF16, st_t, 0, ACL_FORMAT_ND, sgy, 1, none),
        tu_tensor(didx, 1, ACL_INT32, none), tu_tensor(dx, 2, ACL_BF16, none), tu_tensor(ds, 2, ACL_FLOAT, none),
        tu_tensor(ds, 2, ACL_INT32, none), tu_tensor(db, 2, ACL_BF16, none), tu_tensor(dx, 2, ACL_BF16, none),
        tu_tensor(ds, 2, ACL_FLOAT, none)};
    for (int i = 0; i < 8; i++) CHECK(t[i] != NULL);
    uint64_t n = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], 0, 0, 0, 0, t[6], t[7],
                                                           &n, &ex),
             ACLNN_SUCCESS);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    for (int i = 0; i < 8; i++) tu_destroy(t[i]);
    munmap(none, bytes);
}

/* CANN's reuse recipe (aclSetInputTensorAddr.md): descriptors with NULL
 * data, phase 1 once, repeatable, then per batch new addresses through the
 * setters and phase 2. Each batch is a fresh problem in fresh buffers. */
static void address_setters(void) {
    prob *b[3];
    for (int q = 0; q < 3; q++) {
        b[q] = malloc(sizeof(prob));
        CHECK(b[q] != NULL);
        randomize(b[q]);
        poison(b[q]);
    }
    int64_t dgy[2] = {R, H}, didx[1] = {N}, dx[2] = {N, H}, ds[2] = {R, K}, db[2] = {E, H};
    aclTensor *t[8] = {tu_tensor(dgy, 2, ACL_FLOAT, NULL), tu_tensor(didx, 1, ACL_INT32, NULL),
                       tu_tensor(dx, 2, ACL_FLOAT, NULL),  tu_tensor(ds, 2, ACL_FLOAT, NULL),
                       tu_tensor(ds, 2, ACL_INT32, NULL),  tu_tensor(db, 2, ACL_FLOAT, NULL),
                       tu_tensor(dx, 2, ACL_FLOAT, NULL),  tu_tensor(ds, 2, ACL_FLOAT, NULL)};
    for (int i = 0; i < 8; i++) CHECK(t[i] != NULL);
    uint64_t n = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], 0, 0, 0, 0, t[6], t[7],
                                                           &n, &ex),
             ACLNN_SUCCESS);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    void *w = ws_alloc(n);
    /* still NULL at phase 2: 161001, never a dereference */
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(tu_msg_has("gradY", "NULL", NULL));
    for (int q = 0; q < 3; q++) {
        prob *p = b[q];
        void *in[6] = {p->gy, p->idx, p->x, p->s, p->ei, p->bias}, *out[2] = {p->gx, p->gs};
        if (q < 2) { /* by input and output index */
            for (size_t i = 0; i < 6; i++) CHECK_RC(aclSetInputTensorAddr(ex, i, t[i], in[i]), ACLNN_SUCCESS);
            for (size_t i = 0; i < 2; i++)
                CHECK_RC((q ? AclSetOutputTensorAddr : aclSetOutputTensorAddr)(ex, i, t[6 + i], out[i]),
                         ACLNN_SUCCESS);
        } else { /* one index over inputs then outputs */
            for (size_t i = 0; i < 8; i++) CHECK_RC(aclSetTensorAddr(ex, i, t[i], i < 6 ? in[i] : out[i - 6]), ACLNN_SUCCESS);
        }
        CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, n, ex, NULL), ACLNN_SUCCESS);
        if (!results_ok(p)) TU_FAIL("batch %d: results differ from the direct loop", q);
    }
    /* the earlier batches' buffers were not touched by later runs */
    for (int q = 0; q < 2; q++) CHECK(results_ok(b[q]));
    /* error paths, with CANN's codes */
    CHECK_RC(aclSetInputTensorAddr(ex, 6, t[0], b[0]->gy), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("index 6", NULL));
    CHECK_RC(aclSetOutputTensorAddr(ex, 2, t[6], b[0]->gx), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclSetTensorAddr(ex, 8, t[6], b[0]->gx), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclSetInputTensorAddr(ex, 0, NULL, b[0]->gy), ACLNN_ERR_INNER_NULLPTR);
    CHECK_RC(aclSetInputTensorAddr(NULL, 0, t[0], b[1]->gy), ACLNN_ERR_INNER_NULLPTR);
    /* CANN's order: the tensor took the address before the executor was looked at */
    void *raw = NULL;
    CHECK_RC(aclGetRawTensorAddr(t[0], &raw), ACLNN_SUCCESS);
    CHECK(raw == b[1]->gy);
    /* the tensor-list forms: these operators have none, so every irIndex is refused */
    int64_t d1[1] = {1};
    float one = 0;
    const aclTensor *el[1] = {tu_tensor(d1, 1, ACL_FLOAT, &one)};
    aclTensorList *list = aclCreateTensorList(el, 1);
    CHECK(list != NULL);
    CHECK_RC(aclSetDynamicInputTensorAddr(ex, 0, 0, list, &one), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("irIndex", NULL));
    CHECK_RC(AclSetDynamicOutputTensorAddr(ex, 0, 0, list, &one), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclSetDynamicTensorAddr(ex, 0, 0, NULL, &one), ACLNN_ERR_INNER_NULLPTR);
    CHECK_RC(aclSetDynamicTensorAddr(NULL, 0, 0, list, &one), ACLNN_ERR_INNER_NULLPTR);
    CHECK_RC(aclDestroyTensorList(list), ACLNN_SUCCESS); /* owns its element */
    CHECK_RC(AclSetTensorAddr(NULL, 0, t[0], b[0]->gy), ACLNN_ERR_INNER_NULLPTR);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    CHECK_RC(aclSetInputTensorAddr(ex, 0, t[0], b[0]->gy), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("not a live executor", NULL));
    /* an optional input passed as NULL at phase 1 keeps its index but takes no address */
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t[0], t[1], t[2], t[3], NULL, NULL, 0, 0, 0, 0, t[6], t[7],
                                                           &n, &ex),
             ACLNN_SUCCESS);
    CHECK_RC(aclSetInputTensorAddr(ex, 5, t[5], b[0]->bias), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_msg_has("biasOptional", NULL));
    CHECK_RC(aclSetInputTensorAddr(ex, 3, t[3], b[0]->s), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    ws_free(w);
    for (int i = 0; i < 8; i++) tu_destroy(t[i]);
    for (int q = 0; q < 3; q++) free(b[q]);
}

/* The forward's executor takes new addresses the same way (out is output 0;
 * aclSetTensorAddr index 7). */
static void forward_setters(void) {
    prob *p = malloc(sizeof(prob));
    CHECK(p != NULL);
    randomize(p);
    int64_t dx[2] = {N, H}, didx[1] = {N}, ds[2] = {R, K}, db[2] = {E, H}, dout[2] = {R, H};
    aclTensor *tx = tu_tensor(dx, 2, ACL_FLOAT, NULL), *ti = tu_tensor(didx, 1, ACL_INT32, NULL),
              *tb = tu_tensor(db, 2, ACL_FLOAT, NULL), *ts = tu_tensor(ds, 2, ACL_FLOAT, NULL),
              *te = tu_tensor(ds, 2, ACL_INT32, NULL), *to = tu_tensor(dout, 2, ACL_FLOAT, NULL);
    CHECK(tx && ti && tb && ts && te && to);
    uint64_t n = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GetWorkspaceSize(tx, ti, NULL, NULL, tb, ts, te, 2, to, &n, &ex), ACLNN_SUCCESS);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    void *w = ws_alloc(n);
    float out[2][R][H];
    for (int q = 0; q < 2; q++) {
        randomize(p);
        memset(out[q], 0xEE, sizeof out[q]);
        CHECK_RC(aclSetInputTensorAddr(ex, 0, tx, p->x), ACLNN_SUCCESS);
        CHECK_RC(aclSetInputTensorAddr(ex, 1, ti, p->idx), ACLNN_SUCCESS);
        CHECK_RC(aclSetInputTensorAddr(ex, 2, tx, p->x), ACLNN_ERR_PARAM_INVALID); /* x1 was NULL */
        CHECK_RC(aclSetInputTensorAddr(ex, 4, tb, p->bias), ACLNN_SUCCESS);
        CHECK_RC(aclSetInputTensorAddr(ex, 5, ts, p->s), ACLNN_SUCCESS);
        CHECK_RC(aclSetTensorAddr(ex, 6, te, p->ei), ACLNN_SUCCESS);
        CHECK_RC(aclSetTensorAddr(ex, 7, to, out[q]), ACLNN_SUCCESS);
        CHECK_RC(aclnnMoeFinalizeRoutingV2(w, n, ex, NULL), ACLNN_SUCCESS);
        /* small integers: the fp64 sum is exact, so == is the test (mode 2: row layout) */
        for (int r = 0; r < R; r++)
            for (int j = 0; j < H; j++) {
                double want = 0;
                for (int k = 0; k < K; k++)
                    want += (double)p->s[r][k] * ((double)p->x[p->idx[r * K + k]][j] + p->bias[p->ei[r][k]][j]);
                if (out[q][r][j] != (float)want) TU_FAIL("forward batch %d: out[%d][%d] = %g, want %g", q, r, j, out[q][r][j], want);
            }
    }
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    ws_free(w);
    aclTensor *all[] = {tx, ti, tb, ts, te, to};
    for (int i = 0; i < 6; i++) tu_destroy(all[i]);
    free(p);
}

int main(void) {
    tu_seed("test_executor");
    single_use();
    workspace_and_stream();
    repeatable();
    wrong_operator();
    double_claim();
    empty_problems();
    plan_reads_no_data();
    address_setters();
    forward_setters();
    printf("test_executor: ok\n");
    return 0;
}
