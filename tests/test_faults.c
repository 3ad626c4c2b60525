/* test_faults.c - allocation and thread-start failure inside the library
 * (issue 23 item 4). Through the hidden injector of src/runtime/fault.c:
 *
 * - every public operator, in the sequence a CANN program runs (stream,
 *   restoreShape array, tensors, phase 1, aclrtMalloc'd outputs and workspace,
 *   phase 2, copy back, free, destroy), single-use and repeatable (second run
 *   through the address setters, then aclDestroyAclOpExecutor): the fault is
 *   armed at the 1st, 2nd, ... allocation until the sequence completes without
 *   reaching it, once failing only that allocation and once every allocation
 *   from it on (so the clean-up must not allocate). Each time the failing call
 *   returns its documented code (or NULL) with a non-empty one-line message,
 *   no output byte changes (phase 2 is checked to allocate nothing, so the
 *   steps before it and the second run's buffers are what can fail), nothing
 *   stays registered (the registries' counts return to where they were: a
 *   registered object is reachable, so LeakSanitizer alone would not see it)
 *   and nothing leaks (LSan in the ASan build); the completed run gives the
 *   bits of the run without faults;
 * - the host objects (scalars, arrays, lists, streams, events, contexts,
 *   aclrtMalloc and its variants, the shape getters) the same way;
 * - the registries' growth: a tensor created when its registry must grow
 *   fails cleanly and every tensor registered before stays live;
 * - the worker pool's start (pthread_create failing for every worker, or from
 *   the second on): the operators run serially or with fewer threads and give
 *   the bits of a MOEFR_NUM_THREADS=1 run. Each pool run is a child process
 *   (the pool starts once per process), this program re-executed with
 *   --pool-child MODE. */
#define _GNU_SOURCE 1
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "moefr/moefr.h"
#include "op_cases.h"
#include "testutil.h"

enum { POISON = 0xA5 };

/* ---- the registries' counts: a snapshot and its check ---- */
typedef struct { size_t n[9]; } counts;
static counts snapshot(void) {
    mf_registry *r[9] = {&mf_tensors, &mf_executors, &mf_streams, &mf_allocs, &mf_scalars,
                         &mf_arrays,  &mf_lists,     &mf_contexts, &mf_events};
    counts c;
    for (int i = 0; i < 9; i++) c.n[i] = mf_registry_count(r[i]);
    return c;
}
static void same_counts(const counts *a, const char *what, long nth) {
    static const char *const names[9] = {"tensors", "executors", "streams", "allocations", "scalars",
                                         "arrays",  "lists",     "contexts", "events"};
    counts b = snapshot();
    for (int i = 0; i < 9; i++)
        if (a->n[i] != b.n[i])
            TU_FAIL("%s, fault at allocation %ld: %zu %s registered before, %zu after", what, nth, a->n[i], names[i],
                    b.n[i]);
}

/* Failures seen per kind of call in the current operator's sweep. */
enum { F_STREAM, F_ARRAY, F_TENSOR, F_PHASE1, F_MALLOC, F_OTHER, F_KINDS };
static long g_fail_kind[F_KINDS];
static int kind_of(const char *call) {
    if (strstr(call, "Stream")) return F_STREAM;
    if (strstr(call, "Array")) return F_ARRAY;
    if (strstr(call, "aclCreateTensor")) return F_TENSOR;
    if (strcmp(call, "phase 1") == 0) return F_PHASE1;
    if (strstr(call, "aclrtMalloc")) return F_MALLOC;
    return F_OTHER;
}

/* A call failed: an injected fault must have caused it, with a non-empty one-line message. */
static void failed_by_fault(const char *what, const char *call, long got, const long *allowed, int n_allowed) {
    g_fail_kind[kind_of(call)]++;
    if (mf_fault_fired() == 0) TU_FAIL("%s: %s failed (%ld) with no fault injected", what, call, got);
    const char *m = aclGetRecentErrMsg();
    if (m == NULL || *m == '\0' || strchr(m, '\n') != NULL)
        TU_FAIL("%s: %s failed (%ld) without a one-line message", what, call, got);
    for (int i = 0; i < n_allowed; i++)
        if (got == allowed[i]) return;
    TU_FAIL("%s: %s returned %ld under an allocation failure ('%s')", what, call, got, m);
}
static const long BAD_ALLOC[] = {ACL_ERROR_BAD_ALLOC};
static const long CREATE_EXEC[] = {ACLNN_ERR_INNER_CREATE_EXECUTOR};
static const long NULL_RET[] = {0};

/* ---- one operator's sequence ---- */
typedef struct {
    uint64_t hash[OC_MAX_OUT]; /* of each output after a run without faults */
} golden;

static int is_poison(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != POISON) return 0;
    return 1;
}

/* Runs case c; returns 1 when every step succeeded (outputs hashed into
 * *got), 0 when a step failed under the fault (checked, everything released). */
static int sequence(const oc_case *c, int repeatable, golden *got) {
    char what[160];
    snprintf(what, sizeof what, "%s (%s)", c->name, repeatable ? "repeatable" : "single-use");
    aclrtStream stream = NULL;
    aclIntArray *restore = NULL;
    aclTensor *tin[OC_MAX_IN] = {0}, *tout[OC_MAX_OUT] = {0};
    void *dev_a[OC_MAX_OUT] = {0}, *dev_b[OC_MAX_OUT] = {0}, *w = NULL;
    aclOpExecutor *ex = NULL;
    int ok = 0, ran = 0, first_done = 0;
    aclError e;
    aclnnStatus rc;
#define FAIL_IF(cond, call, code, allowed)                                                               \
    if (cond) {                                                                                          \
        failed_by_fault(what, call, (long)(code), allowed, (int)(sizeof allowed / sizeof *allowed));      \
        goto out;                                                                                        \
    }
    e = aclrtCreateStream(&stream);
    FAIL_IF(e != ACL_SUCCESS, "aclrtCreateStream", e, BAD_ALLOC);
    {
        const int64_t shape[2] = {c->N, c->H};
        restore = aclCreateIntArray(shape, 2);
        FAIL_IF(restore == NULL, "aclCreateIntArray", 0, NULL_RET);
    }
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i].data == NULL) continue; /* an absent optional input */
        tin[i] = oc_tensor(&c->in[i], c->in[i].data);
        FAIL_IF(tin[i] == NULL, "aclCreateTensor (input)", 0, NULL_RET);
    }
    /* outputs on "device" memory, poisoned */
    for (int i = 0; i < c->n_out; i++) {
        e = aclrtMalloc(&dev_a[i], c->out[i].bytes, ACL_MEM_MALLOC_HUGE_FIRST);
        FAIL_IF(e != ACL_SUCCESS, "aclrtMalloc (output)", e, BAD_ALLOC);
        CHECK_RC(aclrtMemset(dev_a[i], c->out[i].bytes, POISON, c->out[i].bytes), ACL_SUCCESS);
        tout[i] = oc_tensor(&c->out[i], dev_a[i]);
        FAIL_IF(tout[i] == NULL, "aclCreateTensor (output)", 0, NULL_RET);
    }
    uint64_t ws = 0x5EED;
    rc = oc_plan(c, tin, tout, restore, &ws, &ex);
    if (rc != ACLNN_SUCCESS) CHECK(ex == NULL && ws == 0x5EED); /* nothing handed out */
    FAIL_IF(rc != ACLNN_SUCCESS, "phase 1", rc, CREATE_EXEC);
    if (repeatable) CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    if (ws > 0) {
        e = aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST);
        FAIL_IF(e != ACL_SUCCESS, "aclrtMalloc (workspace)", e, BAD_ALLOC);
    }
    /* Phase 2 never allocates (docs/DESIGN.md), so no fault can make it fail. */
    long seen = mf_fault_seen();
    rc = oc_run(c, w, ws, ex, stream);
    ran = !repeatable; /* a single-use executor is released by phase 2 whatever its outcome */
    if (mf_fault_seen() != seen) TU_FAIL("%s: phase 2 allocated", what);
    if (rc != ACLNN_SUCCESS) TU_FAIL("%s: phase 2 returned %d", what, (int)rc);
    first_done = 1;
    if (repeatable) {
        /* the second run, into fresh buffers through the setters */
        for (int i = 0; i < c->n_out; i++) {
            e = aclrtMalloc(&dev_b[i], c->out[i].bytes, ACL_MEM_MALLOC_HUGE_FIRST);
            FAIL_IF(e != ACL_SUCCESS, "aclrtMalloc (second output)", e, BAD_ALLOC);
            CHECK_RC(aclrtMemset(dev_b[i], c->out[i].bytes, POISON, c->out[i].bytes), ACL_SUCCESS);
            CHECK_RC(aclSetOutputTensorAddr(ex, (size_t)i, tout[i], dev_b[i]), ACLNN_SUCCESS);
        }
        seen = mf_fault_seen();
        rc = oc_run(c, w, ws, ex, stream);
        if (mf_fault_seen() != seen) TU_FAIL("%s: phase 2 (second run) allocated", what);
        if (rc != ACLNN_SUCCESS) TU_FAIL("%s: phase 2 (second run) returned %d", what, (int)rc);
        for (int i = 0; i < c->n_out; i++)
            if (memcmp(dev_a[i], dev_b[i], c->out[i].bytes) != 0)
                TU_FAIL("%s: output %d differs in the second run", what, i);
    }
    for (int i = 0; i < c->n_out; i++) {
        void *host = malloc(c->out[i].bytes);
        CHECK_RC(aclrtMemcpy(host, c->out[i].bytes, dev_a[i], c->out[i].bytes, ACL_MEMCPY_DEVICE_TO_HOST),
                 ACL_SUCCESS);
        got->hash[i] = oc_hash(host, c->out[i].bytes);
        free(host);
    }
    ok = 1;
out:
#undef FAIL_IF
    /* Clean-up (the fault may still be armed: releasing must not allocate). */
    if (!ok) /* no output was written but by a run that succeeded */
        for (int i = 0; i < c->n_out; i++) {
            if (!first_done && dev_a[i] && !is_poison(dev_a[i], c->out[i].bytes))
                TU_FAIL("%s: output %d written by a failed sequence", what, i);
            if (dev_b[i] && !is_poison(dev_b[i], c->out[i].bytes)) TU_FAIL("%s: output %d (second) written", what, i);
        }
    if (ex != NULL && !ran) CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    if (w) CHECK_RC(aclrtFree(w), ACL_SUCCESS);
    for (int i = 0; i < c->n_out; i++) {
        if (tout[i]) CHECK_RC(aclDestroyTensor(tout[i]), ACLNN_SUCCESS);
        if (dev_a[i]) CHECK_RC(aclrtFree(dev_a[i]), ACL_SUCCESS);
        if (dev_b[i]) CHECK_RC(aclrtFree(dev_b[i]), ACL_SUCCESS);
    }
    for (int i = 0; i < c->n_in; i++)
        if (tin[i]) CHECK_RC(aclDestroyTensor(tin[i]), ACLNN_SUCCESS);
    if (restore) CHECK_RC(aclDestroyIntArray(restore), ACLNN_SUCCESS);
    if (stream) CHECK_RC(aclrtDestroyStream(stream), ACL_SUCCESS);
    return ok;
}

static void operators(void) {
    oc_case cases[OC_COUNT];
    const int n = oc_make(cases, 6, 2, 8, 4, 23);
    long sequences = 0, faults = 0;
    for (int k = 0; k < n; k++) {
        const oc_case *c = &cases[k];
        golden want, got;
        memset(g_fail_kind, 0, sizeof g_fail_kind);
        const counts before = snapshot();
        if (!sequence(c, 0, &want)) TU_FAIL("%s: the run without faults failed", c->name);
        same_counts(&before, c->name, 0);
        for (int repeatable = 0; repeatable < 2; repeatable++)
            for (int every = 0; every < 2; every++) {
                long nth = 1;
                for (;; nth++) {
                    if (nth > 1000) TU_FAIL("%s: no end to the allocations", c->name);
                    memset(&got, 0, sizeof got);
                    mf_fault_arm(MF_FAULT_HEAP, nth, every != 0);
                    const int ok = sequence(c, repeatable, &got);
                    const long fired = mf_fault_fired(), seen = mf_fault_seen();
                    mf_fault_disarm();
                    sequences++;
                    same_counts(&before, c->name, nth);
                    if (ok) {
                        if (fired) TU_FAIL("%s: allocation %ld failed but the sequence succeeded", c->name, nth);
                        if (seen >= nth) TU_FAIL("%s: the sequence reached allocation %ld", c->name, nth);
                        for (int i = 0; i < c->n_out; i++)
                            if (got.hash[i] != want.hash[i])
                                TU_FAIL("%s: output %d differs from the run without faults", c->name, i);
                        break;
                    }
                    faults++;
                }
                if (repeatable == 1 && every == 0)
                    printf("test_faults: %-31s %ld allocations in the repeatable sequence\n", c->name, nth - 1);
            }
        /* each kind of step failed at least once: stream, restoreShape array, tensors, phase 1 (the
         * executor and its registry's growth), aclrtMalloc (outputs, workspace when there is one) */
        for (int k2 = 0; k2 < F_OTHER; k2++)
            if (g_fail_kind[k2] == 0) TU_FAIL("%s: no failure of step kind %d was injected", c->name, k2);
        if (g_fail_kind[F_OTHER] != 0) TU_FAIL("%s: a step of no expected kind failed", c->name);
    }
    oc_free(cases, n);
    printf("test_faults: %d operators, %ld sequences, %ld failed cleanly\n", n, sequences, faults);
}

/* ---- host objects ---- */
static aclTensor *small_tensor(void) {
    static float data[6];
    const int64_t d[2] = {2, 3};
    return aclCreateTensor(d, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 2, data);
}

/* One creator per id: returns 1 created (and released), 0 failed under the fault (checked). */
static int host_object(int id, const char **name) {
    static const char *const names[] = {
        "aclCreateScalar", "aclCreateIntArray", "aclCreateFloatArray", "aclCreateBoolArray", "aclCreateTensorList",
        "aclCreateScalarList", "aclrtCreateStream", "aclrtCreateStreamWithConfig", "aclrtCreateEvent",
        "aclrtCreateEventWithFlag", "aclrtCreateContext", "aclrtMalloc", "aclrtMallocAlign32", "aclrtMallocCached",
        "aclrtMallocHost", "aclrtMalloc (4 MiB)", "aclGetViewShape", "aclGetStorageShape", "aclGetViewStrides",
        "aclCreateTensor"};
    if (id >= (int)(sizeof names / sizeof *names)) return -1;
    *name = names[id];
    const char *what = names[id];
    const int64_t iv[3] = {1, 2, 3};
    const float fv[3] = {1, 2, 3};
    const bool bv[3] = {true, false, true};
    float one = 1.0f;
    void *p = NULL;
    aclError e;
    switch (id) {
    case 0: {
        aclScalar *s = aclCreateScalar(&one, ACL_FLOAT);
        if (s == NULL) return failed_by_fault(what, what, 0, NULL_RET, 1), 0;
        CHECK_RC(aclDestroyScalar(s), ACLNN_SUCCESS);
        return 1;
    }
    case 1: case 2: case 3: {
        void *a = id == 1 ? (void *)aclCreateIntArray(iv, 3)
                          : id == 2 ? (void *)aclCreateFloatArray(fv, 3) : (void *)aclCreateBoolArray(bv, 3);
        if (a == NULL) return failed_by_fault(what, what, 0, NULL_RET, 1), 0;
        CHECK_RC(id == 1 ? aclDestroyIntArray(a) : id == 2 ? aclDestroyFloatArray(a) : aclDestroyBoolArray(a),
                 ACLNN_SUCCESS);
        return 1;
    }
    case 4: {
        aclTensor *t[2] = {small_tensor(), NULL};
        if (t[0] == NULL) return failed_by_fault(what, "aclCreateTensor", 0, NULL_RET, 1), 0;
        t[1] = small_tensor();
        if (t[1] == NULL) {
            failed_by_fault(what, "aclCreateTensor", 0, NULL_RET, 1);
            CHECK_RC(aclDestroyTensor(t[0]), ACLNN_SUCCESS);
            return 0;
        }
        aclTensorList *l = aclCreateTensorList((const aclTensor *const *)t, 2);
        if (l == NULL) { /* the list did not take them */
            failed_by_fault(what, what, 0, NULL_RET, 1);
            CHECK_RC(aclDestroyTensor(t[0]), ACLNN_SUCCESS);
            CHECK_RC(aclDestroyTensor(t[1]), ACLNN_SUCCESS);
            return 0;
        }
        CHECK_RC(aclDestroyTensorList(l), ACLNN_SUCCESS); /* and its tensors */
        return 1;
    }
    case 5: {
        aclScalar *s = aclCreateScalar(&one, ACL_FLOAT);
        if (s == NULL) return failed_by_fault(what, "aclCreateScalar", 0, NULL_RET, 1), 0;
        aclScalarList *l = aclCreateScalarList((const aclScalar *const *)&s, 1);
        if (l == NULL) {
            failed_by_fault(what, what, 0, NULL_RET, 1);
            CHECK_RC(aclDestroyScalar(s), ACLNN_SUCCESS);
            return 0;
        }
        CHECK_RC(aclDestroyScalarList(l), ACLNN_SUCCESS);
        return 1;
    }
    case 6: case 7: {
        aclrtStream s = NULL;
        e = id == 6 ? aclrtCreateStream(&s) : aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_FAST_LAUNCH);
        if (e != ACL_SUCCESS) {
            CHECK(s == NULL);
            return failed_by_fault(what, what, e, BAD_ALLOC, 1), 0;
        }
        CHECK_RC(aclrtDestroyStream(s), ACL_SUCCESS);
        return 1;
    }
    case 8: case 9: {
        aclrtEvent ev = NULL;
        e = id == 8 ? aclrtCreateEvent(&ev) : aclrtCreateEventWithFlag(&ev, ACL_EVENT_TIME_LINE);
        if (e != ACL_SUCCESS) {
            CHECK(ev == NULL);
            return failed_by_fault(what, what, e, BAD_ALLOC, 1), 0;
        }
        CHECK_RC(aclrtDestroyEvent(ev), ACL_SUCCESS);
        return 1;
    }
    case 10: {
        aclrtContext ctx = NULL;
        e = aclrtCreateContext(&ctx, 0);
        if (e != ACL_SUCCESS) {
            CHECK(ctx == NULL);
            return failed_by_fault(what, what, e, BAD_ALLOC, 1), 0;
        }
        CHECK_RC(aclrtDestroyContext(ctx), ACL_SUCCESS);
        return 1;
    }
    case 11: case 12: case 13: case 14: case 15: {
        const size_t bytes = id == 15 ? (4u << 20) : 100;
        e = id == 11 || id == 15 ? aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST)
            : id == 12           ? aclrtMallocAlign32(&p, bytes, ACL_MEM_MALLOC_NORMAL_ONLY)
            : id == 13           ? aclrtMallocCached(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST)
                                 : aclrtMallocHost(&p, bytes);
        if (e != ACL_SUCCESS) {
            CHECK(p == NULL);
            return failed_by_fault(what, what, e, BAD_ALLOC, 1), 0;
        }
        CHECK_RC(id == 14 ? aclrtFreeHost(p) : aclrtFree(p), ACL_SUCCESS);
        return 1;
    }
    case 16: case 17: case 18: {
        aclTensor *t = small_tensor();
        if (t == NULL) return failed_by_fault(what, "aclCreateTensor", 0, NULL_RET, 1), 0;
        int64_t *v = NULL;
        uint64_t n = 99;
        aclnnStatus rc = id == 16 ? aclGetViewShape(t, &v, &n) : id == 17 ? aclGetStorageShape(t, &v, &n)
                                                                          : aclGetViewStrides(t, &v, &n);
        CHECK_RC(aclDestroyTensor(t), ACLNN_SUCCESS);
        if (rc != ACLNN_SUCCESS) {
            static const long INNER_NULLPTR[] = {ACLNN_ERR_INNER_NULLPTR};
            CHECK(v == NULL && n == 99);
            return failed_by_fault(what, what, rc, INNER_NULLPTR, 1), 0;
        }
        CHECK(n == 2);
        moefrFreeArray(v);
        return 1;
    }
    case 19: {
        aclTensor *t = small_tensor();
        if (t == NULL) return failed_by_fault(what, what, 0, NULL_RET, 1), 0;
        CHECK_RC(aclDestroyTensor(t), ACLNN_SUCCESS);
        return 1;
    }
    }
    return -1;
}

static void host_objects(void) {
    int ids = 0;
    long faults = 0;
    const char *name = NULL;
    for (int id = 0;; id++, ids++) {
        const counts before = snapshot();
        /* unarmed first: the creator works, and its registries are grown to
         * their steady size (an empty registry owns no memory, so they are not) */
        const int r = host_object(id, &name);
        if (r < 0) break;
        if (r != 1) TU_FAIL("%s failed without a fault", name);
        for (int every = 0; every < 2; every++)
            for (long nth = 1;; nth++) {
                if (nth > 100) TU_FAIL("%s: no end to the allocations", name);
                mf_fault_arm(MF_FAULT_HEAP, nth, every != 0);
                const int ok = host_object(id, &name);
                const long fired = mf_fault_fired();
                mf_fault_disarm();
                same_counts(&before, name, nth);
                if (ok) {
                    if (fired) TU_FAIL("%s: allocation %ld failed but the call succeeded", name, nth);
                    break;
                }
                faults++;
            }
    }
    printf("test_faults: %d host-object creators, %ld failed cleanly\n", ids, faults);
}

/* ---- the registries' growth ---- */
static void registry_growth(void) {
    enum { MANY = 300 };
    static aclTensor *t[MANY];
    const size_t base = mf_registry_count(&mf_tensors);
    int grow_failures = 0;
    for (int i = 0; i < MANY; i++) {
        mf_fault_arm(MF_FAULT_HEAP, 2, false); /* the tensor's own allocation passes, a growth fails */
        t[i] = small_tensor();
        const long fired = mf_fault_fired();
        mf_fault_disarm();
        if (fired) {
            CHECK(t[i] == NULL);
            failed_by_fault("registry growth", "aclCreateTensor", 0, NULL_RET, 1);
            CHECK(mf_registry_count(&mf_tensors) == base + (size_t)i);
            grow_failures++;
            t[i] = small_tensor(); /* unarmed: the growth succeeds */
        }
        CHECK(t[i] != NULL);
        CHECK(mf_registry_count(&mf_tensors) == base + (size_t)i + 1);
    }
    /* every tensor registered before a failed growth is still live */
    for (int i = 0; i < MANY; i++) {
        aclDataType dt;
        CHECK_RC(aclGetDataType(t[i], &dt), ACLNN_SUCCESS);
        CHECK_RC(aclDestroyTensor(t[i]), ACLNN_SUCCESS);
    }
    CHECK(mf_registry_count(&mf_tensors) == base);
    if (grow_failures < 3) TU_FAIL("only %d registry growths failed in %d tensors", grow_failures, MANY);
    printf("test_faults: registry growth failed cleanly %d times in %d tensors\n", grow_failures, MANY);
}

/* ---- the pool's start ---- */
/* In a child: every operator on a problem the pool splits; one line per output. */
static int pool_child(const char *mode) {
    long nth = 0;
    int every = 0, want_workers = -1;
    if (strcmp(mode, "serial") == 0) want_workers = 0;
    else if (strcmp(mode, "none") == 0) nth = 1, every = 1, want_workers = 0; /* no worker starts */
    else if (strcmp(mode, "partial") == 0) nth = 2, want_workers = 1;        /* the second fails */
    else if (strcmp(mode, "full") == 0) want_workers = mf_num_threads() - 1;
    else TU_FAIL("unknown --pool-child mode %s", mode);
    if (nth) mf_fault_arm(MF_FAULT_THREAD, nth, every != 0);
    oc_case cases[OC_COUNT];
    const int n = oc_make(cases, 512, 4, 192, 16, 4);
    for (int k = 0; k < n; k++) {
        const oc_case *c = &cases[k];
        aclTensor *tin[OC_MAX_IN] = {0}, *tout[OC_MAX_OUT] = {0};
        void *out[OC_MAX_OUT];
        for (int i = 0; i < c->n_in; i++)
            if (c->in[i].data) CHECK((tin[i] = oc_tensor(&c->in[i], c->in[i].data)) != NULL);
        for (int i = 0; i < c->n_out; i++) {
            out[i] = malloc(c->out[i].bytes);
            memset(out[i], POISON, c->out[i].bytes);
            CHECK((tout[i] = oc_tensor(&c->out[i], out[i])) != NULL);
        }
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        if (oc_plan(c, tin, tout, NULL, &ws, &ex) != ACLNN_SUCCESS) TU_FAIL("%s: phase 1", c->name);
        void *w = ws ? malloc(ws) : NULL;
        if (oc_run(c, w, ws, ex, NULL) != ACLNN_SUCCESS) TU_FAIL("%s: phase 2", c->name);
        free(w);
        for (int i = 0; i < c->n_out; i++) {
            printf("%s out%d %016llx\n", c->name, i, (unsigned long long)oc_hash(out[i], c->out[i].bytes));
            CHECK_RC(aclDestroyTensor(tout[i]), ACLNN_SUCCESS);
            free(out[i]);
        }
        for (int i = 0; i < c->n_in; i++)
            if (tin[i]) CHECK_RC(aclDestroyTensor(tin[i]), ACLNN_SUCCESS);
    }
    oc_free(cases, n);
    const long fired = mf_fault_fired();
    mf_fault_disarm();
    const int workers = mf_pool_workers();
    if (nth && fired != 1) TU_FAIL("pool mode %s: %ld thread starts failed, want 1", mode, fired);
    if (workers != want_workers) TU_FAIL("pool mode %s: %d workers, want %d", mode, workers, want_workers);
    printf("workers %d\n", workers);
    return 0;
}

static const char *g_self = "/proc/self/exe";

/* Runs this program as --pool-child mode with MOEFR_NUM_THREADS=threads; its stdout into buf. */
static void run_child(const char *mode, const char *threads, char *buf, size_t cap) {
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("MOEFR_NUM_THREADS", threads, 1);
        /* under qemu-user (make test-aarch64) the child runs through the emulator too */
        const char *emu = getenv("MOEFR_TEST_EMULATOR");
        if (emu && *emu) execl(emu, emu, g_self, "--pool-child", mode, (char *)NULL);
        else execl(g_self, g_self, "--pool-child", mode, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t used = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + used, cap - 1 - used)) > 0) used += (size_t)r;
    buf[used] = '\0';
    close(fd[0]);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) TU_FAIL("pool child %s (MOEFR_NUM_THREADS=%s) failed", mode, threads);
}

static void pool_start(void) {
    static char serial[16384], other[16384];
    run_child("serial", "1", serial, sizeof serial);
    char *ws = strstr(serial, "workers ");
    CHECK(ws != NULL);
    const size_t body = (size_t)(ws - serial);
    const char *modes[] = {"none", "partial", "full"};
    for (int m = 0; m < 3; m++) {
        run_child(modes[m], "4", other, sizeof other);
        char *wo = strstr(other, "workers ");
        CHECK(wo != NULL);
        if ((size_t)(wo - other) != body || memcmp(serial, other, body) != 0)
            TU_FAIL("pool start %s: outputs differ from the serial run:\n%s\n--- serial:\n%s", modes[m], other, serial);
        printf("test_faults: pool start '%s' (MOEFR_NUM_THREADS=4): %.*s, the serial run's bits\n", modes[m],
               (int)strcspn(wo, "\n"), wo);
    }
}

int main(int argc, char **argv) {
    tu_prog = "test_faults";
    if (argc == 3 && strcmp(argv[1], "--pool-child") == 0) return pool_child(argv[2]);
    /* argv[0] rather than /proc/self/exe, which names the emulator or valgrind's tool under them */
    if (argc > 0 && strchr(argv[0], '/')) g_self = argv[0];
    registry_growth();
    host_objects();
    operators();
    pool_start();
    printf("test_faults: passed\n");
    return 0;
}
