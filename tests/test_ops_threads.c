/* test_ops_threads.c - every public operator at once from several user
 * threads (issue 23 item 4). The inputs - host data and their aclTensor
 * descriptors - are made once and shared read-only by all threads; each
 * thread has its own output buffers and descriptors, streams, workspaces and
 * executors (single-use on even rounds; on odd rounds repeatable, run twice,
 * the second time into fresh buffers through aclSetOutputTensorAddr, then
 * destroyed). Each thread starts at a different operator, so different
 * operators run at the same moment and compete for the worker pool. Every
 * output must equal, bit for bit, the single-threaded run of the same problem.
 * Also under ThreadSanitizer (make test-tsan).
 *
 * MOEFR_TEST_THREADS (default 6) user threads, MOEFR_TEST_ITER (default 3) rounds. */
#define _GNU_SOURCE 1
#include <pthread.h>

#include "internal.h" /* mf_pool_workers, mf_num_threads */
#include "op_cases.h"
#include "testutil.h"

static oc_case g_cases[OC_COUNT];
static int g_n;
static aclTensor *g_in[OC_COUNT][OC_MAX_IN];      /* shared, read-only */
static unsigned char *g_want[OC_COUNT][OC_MAX_OUT]; /* the single-threaded outputs */
static int g_iter = 3;
static pthread_barrier_t g_start;

enum { POISON = 0x5A };

/* Plans case k on fresh outputs; returns the executor (workspace size in *ws). */
static aclOpExecutor *plan(int k, aclTensor **tout, uint64_t *ws) {
    const oc_case *c = &g_cases[k];
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = oc_plan(c, g_in[k], tout, NULL, ws, &ex);
    if (rc != ACLNN_SUCCESS) TU_FAIL("%s: phase 1 returned %d", c->name, (int)rc);
    return ex;
}

static void new_outputs(int k, void **buf, aclTensor **tout) {
    const oc_case *c = &g_cases[k];
    for (int i = 0; i < c->n_out; i++) {
        buf[i] = malloc(c->out[i].bytes);
        memset(buf[i], POISON, c->out[i].bytes);
        tout[i] = oc_tensor(&c->out[i], buf[i]);
        CHECK(tout[i] != NULL);
    }
}

static void check_outputs(int k, void *const *buf, const char *when) {
    const oc_case *c = &g_cases[k];
    for (int i = 0; i < c->n_out; i++)
        if (memcmp(buf[i], g_want[k][i], c->out[i].bytes) != 0)
            TU_FAIL("%s: output %d (%s) differs from the single-threaded run", c->name, i, when);
}

/* One round of case k: single-use (repeatable = 0) or repeatable, run twice. */
static void round_of(int k, int repeatable, aclrtStream stream, void **keep) {
    const oc_case *c = &g_cases[k];
    void *buf[OC_MAX_OUT], *buf2[OC_MAX_OUT];
    aclTensor *tout[OC_MAX_OUT] = {0};
    new_outputs(k, buf, tout);
    uint64_t ws = 0;
    aclOpExecutor *ex = plan(k, tout, &ws);
    if (repeatable) CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    void *w = NULL;
    if (ws) CHECK_RC(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    aclnnStatus rc = oc_run(c, w, ws, ex, stream);
    if (rc != ACLNN_SUCCESS) TU_FAIL("%s: phase 2 returned %d", c->name, (int)rc);
    check_outputs(k, buf, repeatable ? "repeatable, first run" : "single-use");
    if (repeatable) {
        for (int i = 0; i < c->n_out; i++) {
            buf2[i] = malloc(c->out[i].bytes);
            memset(buf2[i], POISON, c->out[i].bytes);
            CHECK_RC(aclSetOutputTensorAddr(ex, (size_t)i, tout[i], buf2[i]), ACLNN_SUCCESS);
        }
        rc = oc_run(c, w, ws, ex, stream);
        if (rc != ACLNN_SUCCESS) TU_FAIL("%s: phase 2 (second run) returned %d", c->name, (int)rc);
        check_outputs(k, buf2, "repeatable, second run");
        CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
        for (int i = 0; i < c->n_out; i++) free(buf2[i]);
    }
    if (w) CHECK_RC(aclrtFree(w), ACL_SUCCESS);
    for (int i = 0; i < c->n_out; i++) {
        CHECK_RC(aclDestroyTensor(tout[i]), ACLNN_SUCCESS);
        if (keep) keep[i] = buf[i];
        else free(buf[i]);
    }
}

static void *worker(void *arg) {
    const int id = (int)(intptr_t)arg;
    aclrtStream stream = NULL;
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_RC(aclrtCreateStream(&stream), ACL_SUCCESS);
    pthread_barrier_wait(&g_start);
    for (int r = 0; r < g_iter; r++)
        for (int j = 0; j < g_n; j++) {
            const int k = (j + id * 5 + r) % g_n; /* threads at different operators */
            round_of(k, (r + id) & 1, stream, NULL);
        }
    CHECK_RC(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    CHECK_RC(aclrtDestroyStream(stream), ACL_SUCCESS);
    CHECK_RC(aclrtResetDevice(0), ACL_SUCCESS);
    return NULL;
}

int main(void) {
    tu_prog = "test_ops_threads";
    int threads = 6;
    const char *v = getenv("MOEFR_TEST_THREADS");
    if (v && atoi(v) > 0) threads = atoi(v);
    v = getenv("MOEFR_TEST_ITER");
    if (v && atoi(v) > 0) g_iter = atoi(v);
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS);
    /* large enough that the token loops go to the worker pool */
    g_n = oc_make(g_cases, 384, 4, 160, 16, 7);
    for (int k = 0; k < g_n; k++)
        for (int i = 0; i < g_cases[k].n_in; i++)
            if (g_cases[k].in[i].data)
                CHECK((g_in[k][i] = oc_tensor(&g_cases[k].in[i], g_cases[k].in[i].data)) != NULL);
    /* the single-threaded run; then a second one must give the same bits */
    for (int k = 0; k < g_n; k++) {
        void *buf[OC_MAX_OUT], *tmp[OC_MAX_OUT];
        aclTensor *tout[OC_MAX_OUT] = {0};
        new_outputs(k, buf, tout);
        uint64_t ws = 0;
        aclOpExecutor *ex = plan(k, tout, &ws);
        void *w = ws ? malloc(ws) : NULL;
        aclnnStatus rc = oc_run(&g_cases[k], w, ws, ex, NULL);
        if (rc != ACLNN_SUCCESS) TU_FAIL("%s: phase 2 returned %d", g_cases[k].name, (int)rc);
        free(w);
        for (int i = 0; i < g_cases[k].n_out; i++) {
            g_want[k][i] = buf[i];
            CHECK_RC(aclDestroyTensor(tout[i]), ACLNN_SUCCESS);
        }
        round_of(k, 1, NULL, tmp);
        for (int i = 0; i < g_cases[k].n_out; i++) free(tmp[i]);
    }
    pthread_barrier_init(&g_start, NULL, (unsigned)threads);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    for (int i = 0; i < threads; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < threads; i++) CHECK(pthread_join(t[i], NULL) == 0);
    pthread_barrier_destroy(&g_start);
    free(t);
    for (int k = 0; k < g_n; k++) {
        for (int i = 0; i < g_cases[k].n_in; i++)
            if (g_in[k][i]) CHECK_RC(aclDestroyTensor(g_in[k][i]), ACLNN_SUCCESS);
        for (int i = 0; i < g_cases[k].n_out; i++) free(g_want[k][i]);
    }
    oc_free(g_cases, g_n);
    CHECK_RC(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    /* the problems are large enough for the pool: it was shared by the threads */
    const int workers = mf_pool_workers();
    if (mf_num_threads() > 1 && workers == 0) TU_FAIL("the worker pool never started");
    printf("test_ops_threads: %d operators x %d threads x %d rounds (half repeatable, run twice), %d pool workers: "
           "the single-threaded bits\n", g_n, threads, g_iter, workers);
    printf("test_ops_threads: passed\n");
    return 0;
}
