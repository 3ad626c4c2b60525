/* test_runtime.c - the runtime subset of SPEC section 3: init/finalize, device 0,
 * streams, memory calls and their argument checks, aclCreateTensor rejections, per-thread messages. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "testutil.h"

/* A call that must fail with `want` and leave a one-line message containing `frag`. */
#define FAILS(call, want, frag)                                                                \
    do {                                                                                       \
        CHECK(aclrtSetDevice(987654321) == ACL_ERROR_INVALID_DEVICE); /* a known older message */     \
        CHECK_RC(call, want);                                                                  \
        if (!tu_msg_has(frag, NULL) || tu_msg_has("987654321", NULL))                                \
            TU_FAIL("%s: message \"%s\" lacks \"%s\"", #call, tu_msg(), frag);                 \
    } while (0)

static void init_finalize(void) {
    FAILS(aclFinalize(), ACL_ERROR_UNINITIALIZE, "aclFinalize");
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    FAILS(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE, "aclInit");
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    FAILS(aclFinalize(), ACL_ERROR_UNINITIALIZE, "aclFinalize");
    /* a second life after finalize */
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
}

static void *fresh_thread_device(void *arg) {
    (void)arg;
    int32_t dev = 5;
    /* no device set on this thread yet */
    if (aclrtGetDevice(&dev) == ACL_SUCCESS) return (void *)1;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtGetDevice(&dev) != ACL_SUCCESS || dev != 0) return (void *)2;
    return NULL;
}

static void devices(void) {
    FAILS(aclrtSetDevice(1), ACL_ERROR_INVALID_DEVICE, "1");
    FAILS(aclrtSetDevice(-1), ACL_ERROR_INVALID_DEVICE, "-1");
    FAILS(aclrtResetDevice(3), ACL_ERROR_INVALID_DEVICE, "3");
    FAILS(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM, "aclrtGetDevice");
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS);
    int32_t dev = -7;
    CHECK_RC(aclrtGetDevice(&dev), ACL_SUCCESS);
    CHECK(dev == 0);
    pthread_t t;
    void *res = (void *)9;
    CHECK(pthread_create(&t, NULL, fresh_thread_device, NULL) == 0);
    pthread_join(t, &res);
    if (res != NULL) TU_FAIL("device state on a new thread: step %d", (int)(intptr_t)res);
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS); /* setting again is fine */
    CHECK_RC(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS);
}

static void streams(void) {
    FAILS(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM, "aclrtCreateStream");
    aclrtStream a = NULL, b = NULL;
    CHECK_RC(aclrtCreateStream(&a), ACL_SUCCESS);
    CHECK_RC(aclrtCreateStream(&b), ACL_SUCCESS);
    CHECK(a != NULL && b != NULL && a != b);
    CHECK_RC(aclrtSynchronizeStream(a), ACL_SUCCESS);
    CHECK_RC(aclrtSynchronizeStream(NULL), ACL_SUCCESS); /* the default stream */
    CHECK_RC(aclrtDestroyStream(a), ACL_SUCCESS);
    FAILS(aclrtDestroyStream(a), ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream");
    FAILS(aclrtSynchronizeStream(a), ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream");
    FAILS(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream");
    int local;
    FAILS(aclrtDestroyStream(&local), ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream");
    CHECK_RC(aclrtSynchronizeStream(b), ACL_SUCCESS);
    CHECK_RC(aclrtDestroyStream(b), ACL_SUCCESS);
}

static void memory(void) {
    void *p = NULL;
    FAILS(aclrtMalloc(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMalloc");
    FAILS(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "0");
    /* 8 is past CANN 8.1.RC1's last policy (HUGE1G_ONLY_P2P = 7); 0x2 | 0x40 has an unknown flag bit */
    FAILS(aclrtMalloc(&p, 64, (aclrtMemMallocPolicy)8), ACL_ERROR_INVALID_PARAM, "8");
    FAILS(aclrtMalloc(&p, 64, (aclrtMemMallocPolicy)0x42), ACL_ERROR_INVALID_PARAM, "66");
    FAILS(aclrtMalloc(&p, 64, (aclrtMemMallocPolicy)-1), ACL_ERROR_INVALID_PARAM, "-1");
    FAILS(aclrtMallocHost(NULL, 64), ACL_ERROR_INVALID_PARAM, "aclrtMallocHost");
    FAILS(aclrtMallocHost(&p, 0), ACL_ERROR_INVALID_PARAM, "0");
    CHECK(p == NULL);
    /* every size and policy: >= 64-byte alignment, and every byte usable */
    static const size_t sizes[] = {1, 3, 63, 64, 65, 1000, 4096, (size_t)3 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int pol = 0; pol <= 3; pol++) {
            void *q = NULL;
            if (pol < 3) CHECK_RC(aclrtMalloc(&q, sizes[i], (aclrtMemMallocPolicy)pol), ACL_SUCCESS);
            else CHECK_RC(aclrtMallocHost(&q, sizes[i]), ACL_SUCCESS);
            if (q == NULL || (uintptr_t)q % 64 != 0) TU_FAIL("size %zu policy %d: pointer %p", sizes[i], pol, q);
            memset(q, 0x5A, sizes[i]);
            if (pol < 3) CHECK_RC(aclrtFree(q), ACL_SUCCESS);
            else CHECK_RC(aclrtFreeHost(q), ACL_SUCCESS);
        }
    }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) /* sanitizers abort on impossible sizes */
    FAILS(aclrtMalloc(&p, SIZE_MAX - 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC, "aclrtMalloc");
    FAILS(aclrtMallocHost(&p, SIZE_MAX / 2), ACL_ERROR_BAD_ALLOC, "aclrtMallocHost");
    CHECK(p == NULL);
#endif
    FAILS(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM, "aclrtFree");
    FAILS(aclrtFreeHost(NULL), ACL_ERROR_INVALID_PARAM, "aclrtFreeHost");
    CHECK_RC(aclrtMalloc(&p, 128, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    CHECK_RC(aclrtFree(p), ACL_SUCCESS);
    FAILS(aclrtFree(p), ACL_ERROR_INVALID_PARAM, "aclrtFree"); /* twice */
    char stack_buf[64];
    FAILS(aclrtFree(stack_buf), ACL_ERROR_INVALID_PARAM, "aclrtFree");
    void *h = malloc(32);
    FAILS(aclrtFreeHost(h), ACL_ERROR_INVALID_PARAM, "aclrtFreeHost");
    free(h);

    /* memcpy: every kind, count <= destMax, no NULLs */
    unsigned char src[100], dst[100];
    for (int i = 0; i < 100; i++) src[i] = (unsigned char)i;
    for (int kind = 0; kind <= 3; kind++) {
        memset(dst, 0, sizeof dst);
        CHECK_RC(aclrtMemcpy(dst, sizeof dst, src, 77, (aclrtMemcpyKind)kind), ACL_SUCCESS);
        CHECK(memcmp(dst, src, 77) == 0 && dst[77] == 0);
    }
    CHECK_RC(aclrtMemcpy(dst, sizeof dst, src, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    memset(dst, 0xCC, sizeof dst);
    FAILS(aclrtMemcpy(dst, 50, src, 51, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "51");
    FAILS(aclrtMemcpy(NULL, 50, src, 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "dst");
    FAILS(aclrtMemcpy(dst, 50, NULL, 10, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM, "src");
    /* 8 is past CANN 8.1.RC1's last kind (ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7) */
    FAILS(aclrtMemcpy(dst, 50, src, 10, (aclrtMemcpyKind)8), ACL_ERROR_INVALID_PARAM, "8");
    FAILS(aclrtMemcpy(dst, 50, src, 10, (aclrtMemcpyKind)-1), ACL_ERROR_INVALID_PARAM, "-1");
    for (int i = 0; i < 100; i++) CHECK(dst[i] == 0xCC); /* failed copies wrote nothing */

    /* memset: value taken as a byte; count <= maxCount */
    CHECK_RC(aclrtMemset(dst, sizeof dst, 0x1AB, 40), ACL_SUCCESS);
    for (int i = 0; i < 100; i++) CHECK(dst[i] == (i < 40 ? 0xAB : 0xCC));
    CHECK_RC(aclrtMemset(dst, sizeof dst, 0, 0), ACL_SUCCESS);
    FAILS(aclrtMemset(dst, 10, 0, 11), ACL_ERROR_INVALID_PARAM, "11");
    FAILS(aclrtMemset(NULL, 10, 0, 5), ACL_ERROR_INVALID_PARAM, "aclrtMemset");
    CHECK(dst[40] == 0xCC && dst[0] == 0xAB);
}

/* aclCreateTensor must return NULL with a one-line message containing frag. */
static void rejects(int line, aclTensor *t, const char *frag) {
    if (t != NULL) TU_FAIL("line %d: aclCreateTensor accepted a bad descriptor", line);
    if (!tu_msg_has("aclCreateTensor", frag, NULL)) TU_FAIL("line %d: message \"%s\" lacks \"%s\"", line, tu_msg(), frag);
}
#define REJECTS(t, frag) rejects(__LINE__, (t), (frag))

static aclTensor *accepts(int line, aclTensor *t) {
    if (t == NULL) TU_FAIL("line %d: aclCreateTensor refused a valid descriptor", line);
    return t;
}
#define ACCEPTS(t) tu_destroy(accepts(__LINE__, (t)))

static void tensors(void) {
    float buf[64];
    const aclFormat ND = ACL_FORMAT_ND;
    int64_t d2[2] = {4, 4}, st[2] = {4, 1}, s16[1] = {16}, s64[1] = {64};
    /* valid: contiguous, NULL strides, scalar, 8 dims, zero-size, exact fit, offsets, negative strides */
    ACCEPTS(aclCreateTensor(d2, 2, ACL_FLOAT, st, 0, ND, s16, 1, buf));
    ACCEPTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, d2, 2, buf));
    ACCEPTS(aclCreateTensor(NULL, 0, ACL_FLOAT, NULL, 0, ND, s16, 1, buf));
    int64_t d8[8] = {1, 2, 1, 2, 1, 2, 1, 2}, d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ACCEPTS(aclCreateTensor(d8, 8, ACL_FLOAT, NULL, 0, ND, s16, 1, buf));
    int64_t dz[2] = {0, 5}, stz[2] = {1000, 1000};
    ACCEPTS(aclCreateTensor(dz, 2, ACL_FLOAT, stz, 0, ND, s16, 1, buf));
    int64_t st_t[2] = {1, 4};
    ACCEPTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_t, 48, ND, s64, 1, buf)); /* last element is 63 */
    int64_t st_neg[2] = {-4, 1};
    ACCEPTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_neg, 12, ND, s16, 1, buf)); /* rows 3..0 */
    int64_t st_b[2] = {0, 1};
    ACCEPTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_b, 0, ND, s16, 1, buf)); /* stride-0 broadcast */
    ACCEPTS(aclCreateTensor(d2, 2, ACL_BF16, NULL, 0, ACL_FORMAT_NCHW, s16, 1, buf)); /* known format */
    ACCEPTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, s16, 1, NULL)); /* data may be NULL here */

    /* rejections */
    int64_t dneg[2] = {4, -1};
    REJECTS(aclCreateTensor(dneg, 2, ACL_FLOAT, NULL, 0, ND, s16, 1, buf), "-1");
    int64_t sneg[1] = {-16};
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, sneg, 1, buf), "-16");
    REJECTS(aclCreateTensor(d9, 9, ACL_FLOAT, NULL, 0, ND, s16, 1, buf), "9");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, d9, 9, buf), "9");
    REJECTS(aclCreateTensor(NULL, 2, ACL_FLOAT, NULL, 0, ND, s16, 1, buf), "viewDims");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, NULL, 1, buf), "storageDims");
    /* outside the storage, past the end and before the start */
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, st, 1, ND, s16, 1, buf), "16");
    int64_t s15[1] = {15};
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, s15, 1, buf), "15");
    int64_t st_pad[2] = {5, 1};
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_pad, 0, ND, s16, 1, buf), "18");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_neg, 0, ND, s16, 1, buf), "-12");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_neg, 11, ND, s16, 1, buf), "-1");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, -1, ND, s16, 1, buf), "-1");
    /* a zero-size storage holds no element */
    int64_t s0[1] = {0};
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, s0, 1, buf), "0");
    /* int64 overflow: of the shape product, of the storage product/bytes, of strides * dims */
    int64_t big[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
    REJECTS(aclCreateTensor(big, 2, ACL_FLOAT, NULL, 0, ND, s16, 1, buf), "overflow");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, big, 2, buf), "overflow");
    int64_t sbig[1] = {INT64_MAX / 2};
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, sbig, 1, buf), "overflow");
    int64_t st_huge[2] = {INT64_MAX / 2, 1};
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_huge, 0, ND, s16, 1, buf), "overflow");
    int64_t st_mhuge[2] = {INT64_MIN / 2, 1};
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, st_mhuge, INT64_MAX, ND, s16, 1, buf), "");
    int64_t d_hi[1] = {INT64_MAX}, st_one[1] = {1};
    REJECTS(aclCreateTensor(d_hi, 1, ACL_INT8, st_one, 2, ND, d_hi, 1, buf), "");
    /* unknown dtype or format */
    REJECTS(aclCreateTensor(d2, 2, (aclDataType)99, NULL, 0, ND, s16, 1, buf), "99");
    REJECTS(aclCreateTensor(d2, 2, ACL_DT_UNDEFINED, NULL, 0, ND, s16, 1, buf), "-1");
    REJECTS(aclCreateTensor(d2, 2, (aclDataType)5, NULL, 0, ND, s16, 1, buf), "5");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, (aclFormat)77, s16, 1, buf), "77");
    REJECTS(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_UNDEFINED, s16, 1, buf), "-1");

    /* destroy: once, then refused; NULL is accepted */
    aclTensor *t = aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ND, s16, 1, buf);
    CHECK(t != NULL);
    CHECK_RC(aclDestroyTensor(t), ACLNN_SUCCESS);
    FAILS(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID, "aclDestroyTensor");
    CHECK_RC(aclDestroyTensor(NULL), ACLNN_SUCCESS);
}

/* Many live descriptors at once, destroyed in random order, from several
 * threads: each destroy succeeds exactly once (the handle sets grow, shrink
 * and stay consistent under concurrent use). */
enum { MANY = 3000, WORKERS = 4 };

typedef struct churn_arg {
    float *buf;
    int alone; /* no other thread allocates: a freed address cannot come back live */
} churn_arg;

static void *churn(void *varg) {
    const churn_arg *arg = varg;
    float *buf = arg->buf;
    /* On the thread's own stack (24 KB), not _Thread_local: GCC 12 -O3 for
     * aarch64 rewrote the induction variable of the loops below into an
     * address before the TLS block, which the linker cannot relocate
     * (R_AARCH64_TLSLE_ADD_TPREL_HI12 truncated). */
    aclTensor *live[MANY];
    int64_t d[1] = {4}, s[1] = {64};
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < MANY; i++)
            if ((live[i] = aclCreateTensor(d, 1, ACL_FLOAT, NULL, i % 60, ACL_FORMAT_ND, s, 1, buf)) == NULL)
                return (void *)1;
        /* a local shuffle (no shared generator) */
        uint64_t x = (uint64_t)(uintptr_t)&live[0] ^ (uint64_t)round;
        for (int i = MANY - 1; i > 0; i--) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int j = (int)((x >> 33) % (uint64_t)(i + 1));
            aclTensor *t = live[i];
            live[i] = live[j];
            live[j] = t;
        }
        for (int i = 0; i < MANY; i++)
            if (aclDestroyTensor(live[i]) != ACLNN_SUCCESS) return (void *)2;
        for (int i = 0; arg->alone && i < MANY; i += 97)
            if (aclDestroyTensor(live[i]) != ACLNN_ERR_PARAM_INVALID) return (void *)3;
    }
    return NULL;
}

static void many_handles(void) {
    static float buf[64];
    churn_arg alone = {buf, 1}, shared = {buf, 0};
    CHECK(churn(&alone) == NULL);
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) CHECK(pthread_create(&t[i], NULL, churn, &shared) == 0);
    for (int i = 0; i < WORKERS; i++) {
        void *res = NULL;
        pthread_join(t[i], &res);
        if (res != NULL) TU_FAIL("worker %d: step %d", i, (int)(intptr_t)res);
    }
    /* allocations and streams live in the same kind of set */
    static void *ptrs[500];
    for (int i = 0; i < 500; i++) CHECK_RC(aclrtMalloc(&ptrs[i], 8 + (size_t)i, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    for (int i = 499; i >= 0; i -= 2) CHECK_RC(aclrtFree(ptrs[i]), ACL_SUCCESS);
    for (int i = 0; i < 500; i += 2) CHECK_RC(aclrtFree(ptrs[i]), ACL_SUCCESS);
    for (int i = 0; i < 500; i += 50) CHECK_RC(aclrtFree(ptrs[i]), ACL_ERROR_INVALID_PARAM);
}

/* ---- per-thread messages ---- */
typedef struct msg_ctx {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int step;
    int bad;
} msg_ctx;

static void wait_step(msg_ctx *c, int step) {
    pthread_mutex_lock(&c->lock);
    while (c->step < step) pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

static void set_step(msg_ctx *c, int step) {
    pthread_mutex_lock(&c->lock);
    c->step = step;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void *other_thread(void *arg) {
    msg_ctx *c = arg;
    wait_step(c, 1);
    if (aclGetRecentErrMsg() != NULL) c->bad = 1; /* nothing failed on this thread yet */
    if (aclrtSetDevice(31337) == ACL_SUCCESS) c->bad = 2;
    const char *m = aclGetRecentErrMsg();
    if (m == NULL || strstr(m, "31337") == NULL) c->bad = 3;
    set_step(c, 2);
    wait_step(c, 3);
    m = aclGetRecentErrMsg(); /* the main thread's failure did not touch ours */
    if (m == NULL || strstr(m, "31337") == NULL) c->bad = 4;
    set_step(c, 4);
    return NULL;
}

static void messages(void) {
    msg_ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &c) == 0);
    CHECK(aclrtSetDevice(1234) != ACL_SUCCESS);
    set_step(&c, 1);
    wait_step(&c, 2);
    /* the other thread's failure did not change this thread's message */
    CHECK(tu_msg_has("1234", NULL) && !tu_msg_has("31337", NULL));
    /* reading does not clear it; a success does not either */
    const char *m1 = aclGetRecentErrMsg();
    CHECK(m1 != NULL);
    char copy[512];
    snprintf(copy, sizeof copy, "%s", m1);
    CHECK(aclrtSynchronizeStream(NULL) == ACL_SUCCESS);
    CHECK(aclGetRecentErrMsg() != NULL && strcmp(aclGetRecentErrMsg(), copy) == 0);
    /* a new failure replaces it */
    CHECK(aclrtMemset(NULL, 1, 0, 1) != ACL_SUCCESS);
    CHECK(tu_msg_has("aclrtMemset", NULL) && !tu_msg_has("1234", NULL));
    set_step(&c, 3);
    wait_step(&c, 4);
    pthread_join(t, NULL);
    if (c.bad) TU_FAIL("per-thread message check %d failed on the other thread", c.bad);
}

int main(void) {
    tu_seed("test_runtime");
    init_finalize();
    devices();
    streams();
    memory();
    tensors();
    many_handles();
    messages();
    CHECK_RC(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    printf("test_runtime: ok\n");
    return 0;
}
