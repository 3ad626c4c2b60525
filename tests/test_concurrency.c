/* test_concurrency.c - moefr used from many threads at once: own executors on shared input
 * tensors, repeatable executors reused per thread, streams/tensors/memory churned meanwhile; bits equal the single-threaded run. */
#define _DEFAULT_SOURCE
#include <pthread.h>

#include "testutil.h"

/* Two problems sharing one gradY: mode 0 (scales, bias) and mode 1 (drop-pad, 3-D). */
/* R is past the size where the token loop goes to the worker pool, so concurrent calls share it. */
enum { R = 131, K = 3, H = 203, N = R * K, E = 5, C = 80, THREADS = 4, CHURNERS = 2 }; /* E*C >= N: g_x serves both modes */
static int ITER = 30;

typedef struct {
    int mode;
    int64_t D0;
    aclTensor *gy, *idx, *x, *s, *ei, *b; /* shared by every thread */
    uint16_t *want_gx, *want_gs;          /* the single-threaded result */
    size_t gx_n, gs_n;
} problem;

static uint16_t g_gy[R * H], g_x[E * C * H], g_b[E * H], g_s[N];
static int32_t g_idx[2][N], g_ei[N];
static problem P[2];

/* A bf16 with at most 8 significant bits from a small integer over 16: exact. */
static uint16_t bf16_of(int v) {
    float f = (float)v / 16.0f;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static aclTensor *bf16_tensor(const int64_t *dims, int nd, void *data) { return tu_tensor(dims, nd, ACL_BF16, data); }

static void make_inputs(void) {
    for (int i = 0; i < R * H; i++) g_gy[i] = bf16_of((int)tu_int(-127, 127));
    for (int i = 0; i < E * C * H; i++) g_x[i] = bf16_of((int)tu_int(-127, 127));
    for (int i = 0; i < E * H; i++) g_b[i] = bf16_of((int)tu_int(-127, 127));
    for (int i = 0; i < N; i++) {
        g_s[i] = bf16_of((int)tu_int(-16, 16));
        g_ei[i] = (int32_t)tu_below(E);
        g_idx[0][i] = i;
        g_idx[1][i] = tu_chance(15) ? -1 : i; /* N < E*C: distinct slots */
    }
    for (int m = 0; m < 2; m++)
        for (int i = N - 1; i > 0; i--) {
            int j = (int)tu_below(i + 1);
            int32_t t = g_idx[m][i]; g_idx[m][i] = g_idx[m][j]; g_idx[m][j] = t;
        }
    int64_t dgy[2] = {R, H}, didx[1] = {N}, ds[2] = {R, K}, db[2] = {E, H}, dx0[2] = {N, H}, dx1[3] = {E, C, H};
    for (int m = 0; m < 2; m++) {
        problem *p = &P[m];
        p->mode = m;
        p->D0 = m ? E * C : N;
        p->gy = bf16_tensor(dgy, 2, g_gy);
        p->idx = tu_tensor(didx, 1, ACL_INT32, g_idx[m]);
        p->x = m ? bf16_tensor(dx1, 3, g_x) : bf16_tensor(dx0, 2, g_x);
        p->s = bf16_tensor(ds, 2, g_s);
        p->ei = tu_tensor(ds, 2, ACL_INT32, g_ei);
        p->b = bf16_tensor(db, 2, g_b);
        CHECK(p->gy && p->idx && p->x && p->s && p->ei && p->b);
        p->gx_n = (size_t)(p->D0 * H);
        p->gs_n = N;
    }
}

/* A thread's own outputs. */
typedef struct {
    uint16_t *gx, *gs;
    aclTensor *tgx, *tgs;
} outputs;

static void outputs_new(outputs *o, const problem *p) {
    o->gx = malloc(p->gx_n * 2);
    o->gs = malloc(p->gs_n * 2);
    int64_t ds[2] = {R, K}, dx0[2] = {N, H}, dx1[3] = {E, C, H};
    o->tgx = p->mode ? bf16_tensor(dx1, 3, o->gx) : bf16_tensor(dx0, 2, o->gx);
    o->tgs = bf16_tensor(ds, 2, o->gs);
    CHECK(o->tgx && o->tgs);
}
static void outputs_free(outputs *o) {
    tu_destroy(o->tgx);
    tu_destroy(o->tgs);
    free(o->gx);
    free(o->gs);
}
static void poison(outputs *o, const problem *p, unsigned salt) {
    memset(o->gx, (int)(0x41 + salt % 64), p->gx_n * 2);
    memset(o->gs, (int)(0x41 + salt % 64), p->gs_n * 2);
}

static aclOpExecutor *plan(const problem *p, outputs *o, uint64_t *ws) {
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(p->gy, p->idx, p->x, p->s, p->ei, p->b, p->mode, 0, E, C,
                                                           o->tgx, o->tgs, ws, &ex), ACLNN_SUCCESS);
    return ex;
}

static void golden(void) {
    for (int m = 0; m < 2; m++) {
        problem *p = &P[m];
        outputs o;
        outputs_new(&o, p);
        poison(&o, p, 0);
        uint64_t ws = 0;
        aclOpExecutor *ex = plan(p, &o, &ws);
        void *w = malloc(ws ? ws : 1);
        CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_SUCCESS);
        free(w);
        /* Sanity: gradExpandedX of a kept row is gy * scale (exact here: few significant bits). */
        int i0 = -1;
        for (int i = 0; i < N && i0 < 0; i++) if (g_idx[m][i] >= 0) i0 = i;
        float g, s, got;
        uint32_t u = (uint32_t)g_gy[(i0 / K) * H] << 16;
        memcpy(&g, &u, 4);
        u = (uint32_t)g_s[i0] << 16;
        memcpy(&s, &u, 4);
        u = (uint32_t)o.gx[(size_t)g_idx[m][i0] * H] << 16;
        memcpy(&got, &u, 4);
        float prod = g * s; /* fp32 product, then round to nearest even to bf16 (finite here) */
        uint32_t pu;
        memcpy(&pu, &prod, 4);
        pu = (pu + 0x7FFFu + ((pu >> 16) & 1u)) & 0xFFFF0000u;
        memcpy(&prod, &pu, 4);
        if (got != prod) TU_FAIL("mode %d: single-threaded gradExpandedX %g, want %g", m, got, prod);
        p->want_gx = malloc(p->gx_n * 2);
        p->want_gs = malloc(p->gs_n * 2);
        memcpy(p->want_gx, o.gx, p->gx_n * 2);
        memcpy(p->want_gs, o.gs, p->gs_n * 2);
        outputs_free(&o);
    }
}

static int same(const outputs *o, const problem *p) {
    return memcmp(o->gx, p->want_gx, p->gx_n * 2) == 0 && memcmp(o->gs, p->want_gs, p->gs_n * 2) == 0;
}

static pthread_barrier_t g_start;
static volatile int g_computing; /* churners run while compute threads do */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* Own executors: plan and run afresh each time, alternating problems, on a stream of its own. */
static void *own_executors(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    outputs o[2];
    outputs_new(&o[0], &P[0]);
    outputs_new(&o[1], &P[1]);
    aclrtStream st = NULL;
    CHECK_RC(aclrtCreateStream(&st), ACL_SUCCESS);
    pthread_barrier_wait(&g_start);
    for (int it = 0; it < ITER; it++) {
        int m = (int)((it + id) % 2);
        poison(&o[m], &P[m], id * 31 + (unsigned)it);
        uint64_t ws = 0;
        aclOpExecutor *ex = plan(&P[m], &o[m], &ws);
        void *w = NULL;
        CHECK_RC(aclrtMalloc(&w, ws ? ws : 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, (it & 1) ? st : NULL), ACLNN_SUCCESS);
        CHECK_RC(aclrtSynchronizeStream(st), ACL_SUCCESS);
        CHECK_RC(aclrtFree(w), ACL_SUCCESS);
        if (!same(&o[m], &P[m])) TU_FAIL("thread %u iteration %d (mode %d): bits differ from the single-threaded run",
                                         id, it, m);
    }
    CHECK_RC(aclrtDestroyStream(st), ACL_SUCCESS);
    outputs_free(&o[0]);
    outputs_free(&o[1]);
    return NULL;
}

/* One repeatable executor per problem, reused for every iteration. */
static void *repeatable(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    outputs o[2];
    aclOpExecutor *ex[2];
    uint64_t ws[2];
    void *w[2];
    for (int m = 0; m < 2; m++) {
        outputs_new(&o[m], &P[m]);
        ex[m] = plan(&P[m], &o[m], &ws[m]);
        CHECK_RC(aclSetAclOpExecutorRepeatable(ex[m]), ACLNN_SUCCESS);
        w[m] = malloc(ws[m] ? ws[m] : 1);
    }
    pthread_barrier_wait(&g_start);
    for (int it = 0; it < 2 * ITER; it++) {
        int m = (int)((it + id) % 2);
        poison(&o[m], &P[m], id * 17 + (unsigned)it);
        CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w[m], ws[m], ex[m], NULL), ACLNN_SUCCESS);
        if (!same(&o[m], &P[m])) TU_FAIL("repeatable thread %u run %d (mode %d): bits differ", id, it, m);
    }
    for (int m = 0; m < 2; m++) {
        CHECK_RC(aclDestroyAclOpExecutor(ex[m]), ACLNN_SUCCESS);
        free(w[m]);
        outputs_free(&o[m]);
    }
    return NULL;
}

/* Creates and destroys streams, tensors, memory and failing calls while others compute. */
static void *churn(void *arg) {
    (void)arg;
    pthread_barrier_wait(&g_start);
    float buf[16];
    long rounds = 0;
    for (;;) {
        pthread_mutex_lock(&g_lock);
        int go = g_computing;
        pthread_mutex_unlock(&g_lock);
        if (!go && rounds > 50) break;
        aclrtStream st[4];
        for (int i = 0; i < 4; i++) CHECK_RC(aclrtCreateStream(&st[i]), ACL_SUCCESS);
        int64_t d[2] = {4, 4};
        aclTensor *t[4];
        for (int i = 0; i < 4; i++) CHECK((t[i] = tu_tensor(d, 2, ACL_FLOAT, buf)) != NULL);
        void *m = NULL;
        CHECK_RC(aclrtMalloc(&m, 4096, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
        /* failing calls set this thread's message only */
        CHECK(aclCreateTensor(d, 2, ACL_FLOAT, NULL, 9, ACL_FORMAT_ND, d, 2, buf) == NULL);
        CHECK(tu_msg_has("aclCreateTensor", NULL));
        for (int i = 3; i >= 0; i--) CHECK_RC(aclrtDestroyStream(st[i]), ACL_SUCCESS);
        for (int i = 0; i < 4; i++) tu_destroy(t[i]);
        CHECK_RC(aclrtFree(m), ACL_SUCCESS);
        rounds++;
    }
    return NULL;
}

int main(void) {
    tu_seed("test_concurrency");
    if (getenv("MOEFR_TEST_ITER")) ITER = atoi(getenv("MOEFR_TEST_ITER"));
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    make_inputs();
    golden();
    pthread_t th[2 * THREADS + CHURNERS];
    int n = 0;
    g_computing = 1;
    CHECK(pthread_barrier_init(&g_start, NULL, 2 * THREADS + CHURNERS) == 0);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&th[n++], NULL, own_executors, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&th[n++], NULL, repeatable, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < CHURNERS; i++) CHECK(pthread_create(&th[n++], NULL, churn, NULL) == 0);
    for (int i = 0; i < 2 * THREADS; i++) pthread_join(th[i], NULL);
    pthread_mutex_lock(&g_lock);
    g_computing = 0;
    pthread_mutex_unlock(&g_lock);
    for (int i = 2 * THREADS; i < n; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_start);
    /* The shared inputs were never written. */
    for (int m = 0; m < 2; m++) {
        problem *p = &P[m];
        tu_destroy(p->gy); tu_destroy(p->idx); tu_destroy(p->x); tu_destroy(p->s); tu_destroy(p->ei); tu_destroy(p->b);
        free(p->want_gx);
        free(p->want_gs);
    }
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    printf("test_concurrency: %d threads x %d runs each (own and repeatable executors) equal to the single-threaded bits, "
           "with %d threads churning handles\n", 2 * THREADS, ITER, CHURNERS);
    return 0;
}
