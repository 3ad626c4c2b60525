/* test_host_api.c - issue 12's host API from C: contexts (per thread, destroyed
 * ones), device queries, streams with config and timeouts, events (real
 * timestamps, elapsed time against an outside clock, status), async copy and
 * memset on poisoned buffers, the extended malloc policies and memcpy kinds,
 * versions, aclrtGetMemInfo against sysconf, aclDataTypeSize, and
 * aclFloatToFloat16 / aclFloat16ToFloat against an independent double
 * reference (every fp16 value, every rounding midpoint, random floats). Every
 * error path is checked for its code and a one-line message naming it. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>

#include "testutil.h"

/* A call that must fail with `want` and leave a one-line message containing `frag`. */
#define FAILS(call, want, frag)                                                                \
    do {                                                                                       \
        CHECK(aclrtSetDevice(987654321) == ACL_ERROR_INVALID_DEVICE); /* an older message */   \
        CHECK(aclrtSetDevice(0) == ACL_SUCCESS);                                               \
        CHECK_RC(call, want);                                                                  \
        if (!tu_msg_has(frag, NULL) || tu_msg_has("987654321", NULL))                          \
            TU_FAIL("%s: message \"%s\" lacks \"%s\"", #call, tu_msg(), frag);                 \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

/* ---- devices and contexts ---- */
static void *thread_contexts(void *arg) {
    aclrtContext shared = arg, cur = NULL;
    /* a new thread has no context until it sets a device or a context */
    if (aclrtGetCurrentContext(&cur) != ACL_ERROR_RT_CONTEXT_NULL) return (void *)1;
    if (aclrtSetCurrentContext(shared) != ACL_SUCCESS) return (void *)2;
    if (aclrtGetCurrentContext(&cur) != ACL_SUCCESS || cur != shared) return (void *)3;
    int32_t dev = -1;
    if (aclrtGetDevice(&dev) != ACL_SUCCESS || dev != 0) return (void *)4; /* a context implies its device */
    aclrtContext own = NULL;
    if (aclrtCreateContext(&own, 0) != ACL_SUCCESS) return (void *)5;
    if (aclrtGetCurrentContext(&cur) != ACL_SUCCESS || cur != own) return (void *)6; /* created = current */
    if (aclrtDestroyContext(own) != ACL_SUCCESS) return (void *)7;
    return NULL;
}

static void devices_contexts(void) {
    uint32_t count = 7;
    FAILS(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount");
    CHECK_RC(aclrtGetDeviceCount(&count), ACL_SUCCESS);
    CHECK(count == 1);
    aclrtRunMode mode = ACL_DEVICE;
    FAILS(aclrtGetRunMode(NULL), ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode");
    CHECK_RC(aclrtGetRunMode(&mode), ACL_SUCCESS);
    CHECK(mode == ACL_HOST);
    FAILS(aclrtResetDeviceForce(2), ACL_ERROR_INVALID_DEVICE, "aclrtResetDeviceForce");
    CHECK_RC(aclrtSynchronizeDevice(), ACL_SUCCESS);
    CHECK_RC(aclrtSynchronizeDeviceWithTimeout(-1), ACL_SUCCESS);
    CHECK_RC(aclrtSynchronizeDeviceWithTimeout(0), ACL_SUCCESS);
    FAILS(aclrtSynchronizeDeviceWithTimeout(-2), ACL_ERROR_INVALID_PARAM, "-2");

    /* with a device set, the default context is current */
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtContext def = NULL, cur = NULL, c1 = NULL, c2 = NULL;
    CHECK_RC(aclrtGetCurrentContext(&def), ACL_SUCCESS);
    CHECK(def != NULL);
    FAILS(aclrtGetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext");
    FAILS(aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM, "aclrtCreateContext");
    FAILS(aclrtCreateContext(&c1, 1), ACL_ERROR_INVALID_DEVICE, "1");
    CHECK(c1 == NULL);
    CHECK_RC(aclrtCreateContext(&c1, 0), ACL_SUCCESS);
    CHECK_RC(aclrtCreateContext(&c2, 0), ACL_SUCCESS);
    CHECK(c1 != NULL && c2 != NULL && c1 != c2 && c1 != def);
    CHECK_RC(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    CHECK(cur == c2);
    CHECK_RC(aclrtSetCurrentContext(c1), ACL_SUCCESS);
    CHECK_RC(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    CHECK(cur == c1);
    FAILS(aclrtSetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext");
    char not_a_context[16];
    FAILS(aclrtSetCurrentContext(not_a_context), ACL_ERROR_INVALID_PARAM, "not a live context");
    FAILS(aclrtDestroyContext(def), ACL_ERROR_INVALID_PARAM, "default context");
    FAILS(aclrtDestroyContext(NULL), ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext");

    pthread_t t;
    void *res = (void *)99;
    CHECK(pthread_create(&t, NULL, thread_contexts, c2) == 0);
    pthread_join(t, &res);
    if (res != NULL) TU_FAIL("contexts on another thread: step %d", (int)(intptr_t)res);
    CHECK_RC(aclrtGetCurrentContext(&cur), ACL_SUCCESS); /* the other thread did not change ours */
    CHECK(cur == c1);

    /* destroying the current context falls back to the device's default one */
    CHECK_RC(aclrtDestroyContext(c1), ACL_SUCCESS);
    FAILS(aclrtDestroyContext(c1), ACL_ERROR_INVALID_PARAM, "not a live context");
    FAILS(aclrtSetCurrentContext(c1), ACL_ERROR_INVALID_PARAM, "not a live context");
    CHECK_RC(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    CHECK(cur == def);
    CHECK_RC(aclrtDestroyContext(c2), ACL_SUCCESS);
    CHECK_RC(aclrtSetCurrentContext(def), ACL_SUCCESS);
    /* after a reset there is no context until a device is set again */
    CHECK_RC(aclrtResetDeviceForce(0), ACL_SUCCESS);
    CHECK_RC(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(tu_msg_has("aclrtGetCurrentContext", NULL));
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS);
}

/* ---- streams ---- */
static void streams(void) {
    aclrtStream s = NULL;
    FAILS(aclrtCreateStreamWithConfig(NULL, 0, 0), ACL_ERROR_INVALID_PARAM, "aclrtCreateStreamWithConfig");
    FAILS(aclrtCreateStreamWithConfig(&s, 0, 0x4), ACL_ERROR_INVALID_PARAM, "0x4");
    CHECK(s == NULL);
    CHECK_RC(aclrtCreateStreamWithConfig(&s, 3, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC), ACL_SUCCESS);
    aclrtStreamStatus st = ACL_STREAM_STATUS_NOT_READY;
    CHECK_RC(aclrtStreamQuery(s, &st), ACL_SUCCESS);
    CHECK(st == ACL_STREAM_STATUS_COMPLETE);
    st = ACL_STREAM_STATUS_NOT_READY;
    CHECK_RC(aclrtStreamQuery(NULL, &st), ACL_SUCCESS); /* the default stream */
    CHECK(st == ACL_STREAM_STATUS_COMPLETE);
    FAILS(aclrtStreamQuery(s, NULL), ACL_ERROR_INVALID_PARAM, "status");
    CHECK_RC(aclrtSynchronizeStreamWithTimeout(s, -1), ACL_SUCCESS);
    CHECK_RC(aclrtSynchronizeStreamWithTimeout(s, 10), ACL_SUCCESS);
    CHECK_RC(aclrtSynchronizeStreamWithTimeout(NULL, 0), ACL_SUCCESS);
    FAILS(aclrtSynchronizeStreamWithTimeout(s, -5), ACL_ERROR_INVALID_PARAM, "-5");
    CHECK_RC(aclrtDestroyStreamForce(s), ACL_SUCCESS);
    FAILS(aclrtDestroyStreamForce(s), ACL_ERROR_INVALID_PARAM, "not a live stream");
    FAILS(aclrtStreamQuery(s, &st), ACL_ERROR_INVALID_PARAM, "not a live stream");
    FAILS(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_ERROR_INVALID_PARAM, "not a live stream");
    FAILS(aclrtDestroyStreamForce(NULL), ACL_ERROR_INVALID_PARAM, "aclrtDestroyStreamForce");
}

/* ---- events ---- */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static aclError query_event(aclrtEvent e, aclrtEventStatus *s) { return aclrtQueryEvent(e, s); }
#pragma GCC diagnostic pop

static void events(void) {
    aclrtStream s = NULL;
    CHECK_RC(aclrtCreateStream(&s), ACL_SUCCESS);
    aclrtEvent a = NULL, b = NULL, c = NULL;
    FAILS(aclrtCreateEvent(NULL), ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent");
    FAILS(aclrtCreateEventWithFlag(&a, 0x4), ACL_ERROR_INVALID_PARAM, "0x4");
    FAILS(aclrtCreateEventWithFlag(NULL, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM, "event is NULL");
    CHECK(a == NULL);
    CHECK_RC(aclrtCreateEvent(&a), ACL_SUCCESS);
    CHECK_RC(aclrtCreateEventWithFlag(&b, ACL_EVENT_TIME_LINE), ACL_SUCCESS);
    CHECK_RC(aclrtCreateEventWithFlag(&c, ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_EXTERNAL),
             ACL_SUCCESS);

    /* not recorded yet */
    aclrtEventRecordedStatus rs = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    CHECK_RC(aclrtQueryEventStatus(a, &rs), ACL_SUCCESS);
    CHECK(rs == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    float ms = -1.0f;
    FAILS(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "startEvent has not been recorded");
    uint64_t ts = 0;
    FAILS(aclrtEventGetTimestamp(a, &ts), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "not been recorded");
    CHECK_RC(aclrtSynchronizeEvent(a), ACL_SUCCESS); /* nothing to wait for */

    /* two records around sleeps of random length; the outer clock brackets them */
    for (int round = 0; round < 3; round++) {
        int sleep = (int)tu_int(2, 12);
        double o0 = now_ms();
        CHECK_RC(aclrtRecordEvent(a, s), ACL_SUCCESS);
        double i0 = now_ms();
        sleep_ms(sleep);
        double i1 = now_ms();
        CHECK_RC(aclrtRecordEvent(b, NULL), ACL_SUCCESS); /* any stream, the default one too */
        double o1 = now_ms();
        CHECK_RC(aclrtSynchronizeEventWithTimeout(b, 100), ACL_SUCCESS);
        CHECK_RC(aclrtEventElapsedTime(&ms, a, b), ACL_SUCCESS);
        /* float ms: allow its rounding (2^-24 relative) and the clock's ns granularity */
        double lo = i1 - i0, hi = o1 - o0;
        if (!(ms >= lo * (1 - 1e-6) - 1e-6 && ms <= hi * (1 + 1e-6) + 1e-6))
            TU_FAIL("elapsed %.6f ms outside [%.6f, %.6f] (slept %d ms)", (double)ms, lo, hi, sleep);
        uint64_t ta = 0, tb = 0;
        CHECK_RC(aclrtEventGetTimestamp(a, &ta), ACL_SUCCESS);
        CHECK_RC(aclrtEventGetTimestamp(b, &tb), ACL_SUCCESS);
        CHECK(tb >= ta && (double)(tb - ta) / 1e3 <= hi + 0.002 && (double)(tb - ta) / 1e3 >= lo - 0.002);
        CHECK_RC(aclrtEventElapsedTime(&ms, b, b), ACL_SUCCESS);
        CHECK(ms == 0.0f);
        FAILS(aclrtEventElapsedTime(&ms, b, a), ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL, "before startEvent");
    }
    CHECK_RC(aclrtQueryEventStatus(a, &rs), ACL_SUCCESS);
    CHECK(rs == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    aclrtEventStatus es = ACL_EVENT_STATUS_NOT_READY;
    CHECK_RC(query_event(a, &es), ACL_SUCCESS);
    CHECK(es == ACL_EVENT_STATUS_COMPLETE);
    aclrtEventWaitStatus ws = ACL_EVENT_WAIT_STATUS_NOT_READY;
    CHECK_RC(aclrtQueryEventWaitStatus(a, &ws), ACL_SUCCESS);
    CHECK(ws == ACL_EVENT_WAIT_STATUS_COMPLETE);
    CHECK_RC(aclrtStreamWaitEvent(s, a), ACL_SUCCESS);
    CHECK_RC(aclrtStreamWaitEvent(NULL, a), ACL_SUCCESS);

    /* reset: back to not recorded */
    CHECK_RC(aclrtResetEvent(b, s), ACL_SUCCESS);
    CHECK_RC(aclrtQueryEventStatus(b, &rs), ACL_SUCCESS);
    CHECK(rs == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    FAILS(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "endEvent has not been recorded");

    /* NULL arguments */
    FAILS(aclrtEventElapsedTime(NULL, a, b), ACL_ERROR_INVALID_PARAM, "ms is NULL");
    FAILS(aclrtEventElapsedTime(&ms, NULL, b), ACL_ERROR_INVALID_PARAM, "startEvent is NULL");
    FAILS(aclrtEventElapsedTime(&ms, a, NULL), ACL_ERROR_INVALID_PARAM, "endEvent is NULL");
    FAILS(aclrtRecordEvent(NULL, s), ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent");
    FAILS(aclrtResetEvent(NULL, s), ACL_ERROR_INVALID_PARAM, "aclrtResetEvent");
    FAILS(aclrtQueryEventStatus(a, NULL), ACL_ERROR_INVALID_PARAM, "status is NULL");
    FAILS(query_event(a, NULL), ACL_ERROR_INVALID_PARAM, "status is NULL");
    FAILS(aclrtQueryEventWaitStatus(a, NULL), ACL_ERROR_INVALID_PARAM, "status is NULL");
    FAILS(aclrtEventGetTimestamp(a, NULL), ACL_ERROR_INVALID_PARAM, "timestamp is NULL");
    FAILS(aclrtSynchronizeEvent(NULL), ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeEvent");
    FAILS(aclrtSynchronizeEventWithTimeout(a, -3), ACL_ERROR_INVALID_PARAM, "-3");
    FAILS(aclrtStreamWaitEvent(s, NULL), ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent");
    FAILS(aclrtDestroyEvent(NULL), ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent");

    /* a destroyed stream or event is refused everywhere */
    aclrtStream dead_stream = NULL;
    CHECK_RC(aclrtCreateStream(&dead_stream), ACL_SUCCESS);
    CHECK_RC(aclrtDestroyStream(dead_stream), ACL_SUCCESS);
    FAILS(aclrtRecordEvent(a, dead_stream), ACL_ERROR_INVALID_PARAM, "not a live stream");
    FAILS(aclrtStreamWaitEvent(dead_stream, a), ACL_ERROR_INVALID_PARAM, "not a live stream");
    CHECK_RC(aclrtDestroyEvent(c), ACL_SUCCESS);
    FAILS(aclrtDestroyEvent(c), ACL_ERROR_INVALID_PARAM, "not a live event");
    FAILS(aclrtRecordEvent(c, s), ACL_ERROR_INVALID_PARAM, "not a live event");
    FAILS(aclrtResetEvent(c, s), ACL_ERROR_INVALID_PARAM, "not a live event");
    FAILS(aclrtQueryEventStatus(c, &rs), ACL_ERROR_INVALID_PARAM, "not a live event");
    FAILS(aclrtSynchronizeEvent(c), ACL_ERROR_INVALID_PARAM, "not a live event");
    FAILS(aclrtEventElapsedTime(&ms, a, c), ACL_ERROR_INVALID_PARAM, "endEvent");
    FAILS(aclrtStreamWaitEvent(s, c), ACL_ERROR_INVALID_PARAM, "not a live event");
    CHECK_RC(aclrtDestroyEvent(a), ACL_SUCCESS);
    CHECK_RC(aclrtDestroyEvent(b), ACL_SUCCESS);
    CHECK_RC(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* ---- memory: policies, kinds, async forms ---- */
static void memory(void) {
    static const unsigned policies[] = {0, 1, 2, 3, 4, 5, 6, 7, 0x100, 0x1002, 0x100006, 0x101107};
    void *p = NULL;
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        size_t n = (size_t)tu_int(1, 5000);
        aclError (*const fns[3])(void **, size_t, aclrtMemMallocPolicy) = {aclrtMalloc, aclrtMallocAlign32,
                                                                          aclrtMallocCached};
        for (int f = 0; f < 3; f++) {
            p = NULL;
            CHECK_RC(fns[f](&p, n, (aclrtMemMallocPolicy)policies[i]), ACL_SUCCESS);
            if (p == NULL || (uintptr_t)p % 64 != 0) TU_FAIL("policy 0x%x: pointer %p", policies[i], p);
            memset(p, 0xA5, n);
            CHECK_RC(aclrtFree(p), ACL_SUCCESS);
        }
    }
    FAILS(aclrtMallocAlign32(&p, 64, (aclrtMemMallocPolicy)8), ACL_ERROR_INVALID_PARAM, "aclrtMallocAlign32");
    FAILS(aclrtMallocCached(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMallocCached");
    FAILS(aclrtMallocCached(NULL, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMallocCached");

    aclrtStream s = NULL;
    CHECK_RC(aclrtCreateStream(&s), ACL_SUCCESS);
    const size_t n = (size_t)tu_int(1, 4099);
    unsigned char *src = malloc(n + 16), *dst = malloc(n + 16);
    CHECK(src && dst);
    for (size_t i = 0; i < n + 16; i++) src[i] = (unsigned char)tu_next();
    for (int kind = 0; kind <= 7; kind++) {
        memset(dst, 0xEE, n + 16);
        aclrtStream on = kind % 2 ? s : NULL;
        CHECK_RC(aclrtMemcpyAsync(dst, n, src, n, (aclrtMemcpyKind)kind, on), ACL_SUCCESS);
        CHECK(memcmp(dst, src, n) == 0);
        for (size_t i = n; i < n + 16; i++) CHECK(dst[i] == 0xEE); /* nothing past count */
        CHECK_RC(aclrtMemcpy(dst, n + 16, src, n + 16, (aclrtMemcpyKind)kind), ACL_SUCCESS);
        CHECK(memcmp(dst, src, n + 16) == 0);
    }
    memset(dst, 0xEE, n + 16);
    int value = (int)tu_below(256);
    CHECK_RC(aclrtMemsetAsync(dst, n, value + 256 * 3, n, s), ACL_SUCCESS); /* value taken as a byte */
    for (size_t i = 0; i < n; i++) CHECK(dst[i] == (unsigned char)value);
    for (size_t i = n; i < n + 16; i++) CHECK(dst[i] == 0xEE);
    memset(dst, 0xCC, n + 16);
    FAILS(aclrtMemcpyAsync(dst, n - 1, src, n, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM, "exceeds");
    FAILS(aclrtMemcpyAsync(NULL, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM, "dst");
    FAILS(aclrtMemcpyAsync(dst, n, NULL, n, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM, "src");
    FAILS(aclrtMemcpyAsync(dst, n, src, n, (aclrtMemcpyKind)8, s), ACL_ERROR_INVALID_PARAM, "8");
    FAILS(aclrtMemcpyAsync(dst, n, src, n, (aclrtMemcpyKind)-1, s), ACL_ERROR_INVALID_PARAM, "-1");
    FAILS(aclrtMemsetAsync(dst, n - 1, 0, n, s), ACL_ERROR_INVALID_PARAM, "exceeds");
    FAILS(aclrtMemsetAsync(NULL, n, 0, n, s), ACL_ERROR_INVALID_PARAM, "devPtr");
    aclrtStream dead = NULL;
    CHECK_RC(aclrtCreateStream(&dead), ACL_SUCCESS);
    CHECK_RC(aclrtDestroyStream(dead), ACL_SUCCESS);
    FAILS(aclrtMemcpyAsync(dst, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE, dead), ACL_ERROR_INVALID_PARAM, "not a live stream");
    FAILS(aclrtMemsetAsync(dst, n, 0, n, dead), ACL_ERROR_INVALID_PARAM, "not a live stream");
    for (size_t i = 0; i < n + 16; i++) CHECK(dst[i] == 0xCC); /* failed calls wrote nothing */
    free(src);
    free(dst);
    CHECK_RC(aclrtDestroyStream(s), ACL_SUCCESS);

    size_t fr = 0, total = 0;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    for (int attr = 0; attr <= 11; attr++) {
        CHECK_RC(aclrtGetMemInfo((aclrtMemAttr)attr, &fr, &total), ACL_SUCCESS);
        CHECK(total == (size_t)pages * (size_t)page && fr > 0 && fr <= total);
    }
    FAILS(aclrtGetMemInfo((aclrtMemAttr)12, &fr, &total), ACL_ERROR_INVALID_PARAM, "12");
    FAILS(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &total), ACL_ERROR_INVALID_PARAM, "free");
    FAILS(aclrtGetMemInfo(ACL_HBM_MEM, &fr, NULL), ACL_ERROR_INVALID_PARAM, "total");
}

/* ---- versions, names, sizes ---- */
static void versions(void) {
    int32_t a = -1, b = -1, c = -1;
    CHECK_RC(aclrtGetVersion(&a, &b, &c), ACL_SUCCESS);
    CHECK(a == 1 && b == 13 && c == 0);
    FAILS(aclrtGetVersion(NULL, &b, &c), ACL_ERROR_INVALID_PARAM, "majorVersion");
    FAILS(aclrtGetVersion(&a, NULL, &c), ACL_ERROR_INVALID_PARAM, "minorVersion");
    FAILS(aclrtGetVersion(&a, &b, NULL), ACL_ERROR_INVALID_PARAM, "patchVersion");
    aclCANNPackageVersion v;
    for (int name = 0; name <= 7; name++) {
        memset(&v, 0x7F, sizeof v);
        CHECK_RC(aclsysGetCANNVersion((aclCANNPackageName)name, &v), ACL_SUCCESS);
        CHECK(strcmp(v.version, "8.1.RC1") == 0 && strcmp(v.majorVersion, "8") == 0 &&
              strcmp(v.minorVersion, "1") == 0 && strcmp(v.releaseVersion, "RC1") == 0 && v.patchVersion[0] == 0);
        CHECK(strncmp(v.reserved, "moefr ", 6) == 0);
    }
    FAILS(aclsysGetCANNVersion((aclCANNPackageName)8, &v), ACL_ERROR_INVALID_PARAM, "8");
    FAILS(aclsysGetCANNVersion(ACL_PKG_NAME_CANN, NULL), ACL_ERROR_INVALID_PARAM, "version");
    CHECK(strcmp(aclrtGetSocName(), "moefr-cpu") == 0);

    static const struct { aclDataType t; size_t n; } sizes[] = {
        {ACL_FLOAT, 4}, {ACL_FLOAT16, 2}, {ACL_INT8, 1}, {ACL_INT32, 4}, {ACL_UINT8, 1}, {ACL_INT16, 2},
        {ACL_UINT16, 2}, {ACL_UINT32, 4}, {ACL_INT64, 8}, {ACL_UINT64, 8}, {ACL_DOUBLE, 8}, {ACL_BOOL, 1},
        {ACL_STRING, 0}, {ACL_COMPLEX64, 8}, {ACL_COMPLEX128, 16}, {ACL_BF16, 2}, {ACL_INT4, 1}, {ACL_UINT1, 1},
        {ACL_COMPLEX32, 4}, {ACL_HIFLOAT8, 1}, {ACL_FLOAT8_E5M2, 1}, {ACL_FLOAT8_E4M3FN, 1}, {ACL_FLOAT8_E8M0, 1},
        {ACL_FLOAT6_E3M2, 1}, {ACL_FLOAT6_E2M3, 1}, {ACL_FLOAT4_E2M1, 1}, {ACL_FLOAT4_E1M2, 1},
        {ACL_DT_UNDEFINED, 0}, {(aclDataType)5, 0}, {(aclDataType)42, 0}, {(aclDataType)99, 0}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (aclDataTypeSize(sizes[i].t) != sizes[i].n)
            TU_FAIL("aclDataTypeSize(%d) = %zu, want %zu", (int)sizes[i].t, aclDataTypeSize(sizes[i].t), sizes[i].n);
    CHECK_RC(aclnnInit(NULL), ACLNN_SUCCESS);
    CHECK_RC(aclnnInit("/no/such/file.json"), ACLNN_SUCCESS);
    CHECK_RC(aclnnFinalize(), ACLNN_SUCCESS);
}

/* ---- fp16: an independent reference in double ---- */
static double f16_value(unsigned h) { /* the finite value of bits h, by the IEEE definition */
    int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
    double v = exp ? ldexp(1024 + frac, exp - 25) : ldexp(frac, -24);
    return sign ? -v : v;
}

static void fp16_to_float(void) {
    for (unsigned h = 0; h < 65536; h++) {
        float f = aclFloat16ToFloat((aclFloat16)h);
        if (((h >> 10) & 0x1F) == 0x1F) {
            if (h & 0x3FF) CHECK(isnan(f));
            else CHECK(isinf(f) && (f < 0) == ((h >> 15) != 0));
            continue;
        }
        if ((double)f != f16_value(h) || (signbit(f) != 0) != ((h >> 15) != 0))
            TU_FAIL("aclFloat16ToFloat(0x%04x) = %.9g, want %.9g", h, (double)f, f16_value(h));
    }
}

static void check_to_f16(float x, unsigned want) {
    unsigned got = aclFloatToFloat16(x);
    if (got != want) TU_FAIL("aclFloatToFloat16(%.9g = %a) = 0x%04x, want 0x%04x", (double)x, (double)x, got, want);
}

static void float_to_fp16(void) {
    /* every finite fp16 value converts back to itself; every midpoint between
     * neighbours rounds to the even one, and one float either side to its side */
    for (unsigned h = 0; h < 0x7C00; h++) {
        for (int sg = 0; sg < 2; sg++) {
            unsigned hs = h | (unsigned)sg << 15;
            float v = (float)f16_value(hs);
            check_to_f16(v, hs);
            double next = h + 1 < 0x7C00 ? f16_value(hs + 1) : (sg ? -65536.0 : 65536.0); /* 65536: the overflow step */
            float mid = (float)((f16_value(hs) + next) / 2); /* exact: 12 significant bits */
            unsigned up = h + 1 < 0x7C00 ? hs + 1 : (sg ? 0xFC00u : 0x7C00u);
            check_to_f16(mid, (h & 1) ? up : hs);
            check_to_f16(nextafterf(mid, 0.0f), hs);
            check_to_f16(nextafterf(mid, sg ? -INFINITY : INFINITY), up);
        }
    }
    check_to_f16(INFINITY, 0x7C00);
    check_to_f16(-INFINITY, 0xFC00);
    check_to_f16(1e30f, 0x7C00);
    check_to_f16(-1e-30f, 0x8000);
    check_to_f16(ldexpf(1.0f, -149), 0x0000); /* the smallest float subnormal */
    CHECK(isnan(aclFloat16ToFloat(aclFloatToFloat16(NAN))));
    uint32_t nan_low = 0x7F800001u; /* a NaN whose payload lies below fp16's fraction bits */
    float fn;
    memcpy(&fn, &nan_low, sizeof fn);
    CHECK(isnan(aclFloat16ToFloat(aclFloatToFloat16(fn))));
    /* random floats in fp16's range: the result is a nearest fp16 value */
    for (int i = 0; i < 200000; i++) {
        uint32_t bits = (uint32_t)tu_next();
        bits = (bits & 0x807FFFFFu) | ((uint32_t)tu_int(100, 143) << 23);
        float x;
        memcpy(&x, &bits, sizeof x);
        unsigned r = aclFloatToFloat16(x);
        if ((r & 0x7FFF) >= 0x7C00) {
            CHECK(fabs((double)x) >= 65520.0);
            continue;
        }
        double err = fabs((double)x - f16_value(r));
        double below = (r & 0x7FFF) ? fabs((double)x - f16_value(r - 1)) : INFINITY;
        double above = (r & 0x7FFF) + 1 < 0x7C00 ? fabs((double)x - f16_value(r + 1)) : INFINITY;
        if (err > below || err > above) TU_FAIL("aclFloatToFloat16(%a) = 0x%04x is not nearest", (double)x, r);
    }
}

/* ---- many threads at once: each churns its own handles and objects, and all
 * share one stream and one context (also run under TSan: make test-tsan) ---- */
struct churn { aclrtStream shared_stream; aclrtContext shared_ctx; int id, failed_at; };

static void *churn_thread(void *arg) {
    struct churn *c = arg;
#define STEP(cond) do { if (!(cond)) { c->failed_at = __LINE__; return NULL; } } while (0)
    for (int it = 0; it < 200; it++) {
        aclrtContext ctx = NULL, cur = NULL;
        STEP(aclrtCreateContext(&ctx, 0) == ACL_SUCCESS);
        STEP(aclrtGetCurrentContext(&cur) == ACL_SUCCESS && cur == ctx);
        STEP(aclrtSetCurrentContext(c->shared_ctx) == ACL_SUCCESS);
        STEP(aclrtDestroyContext(ctx) == ACL_SUCCESS);
        STEP(aclrtGetCurrentContext(&cur) == ACL_SUCCESS && cur == c->shared_ctx);
        aclrtEvent a = NULL, b = NULL;
        STEP(aclrtCreateEvent(&a) == ACL_SUCCESS && aclrtCreateEvent(&b) == ACL_SUCCESS);
        STEP(aclrtRecordEvent(a, c->shared_stream) == ACL_SUCCESS);
        unsigned char buf[97], src[97];
        memset(src, c->id + it, sizeof src);
        STEP(aclrtMemcpyAsync(buf, sizeof buf, src, sizeof src, ACL_MEMCPY_HOST_TO_DEVICE, c->shared_stream) ==
             ACL_SUCCESS);
        STEP(memcmp(buf, src, sizeof buf) == 0);
        STEP(aclrtRecordEvent(b, c->shared_stream) == ACL_SUCCESS);
        float ms = -1.0f;
        STEP(aclrtEventElapsedTime(&ms, a, b) == ACL_SUCCESS && ms >= 0.0f);
        STEP(aclrtStreamWaitEvent(c->shared_stream, b) == ACL_SUCCESS);
        STEP(aclrtDestroyEvent(a) == ACL_SUCCESS && aclrtDestroyEvent(b) == ACL_SUCCESS);
        int64_t v[3] = {it, c->id, 7};
        aclIntArray *ia = aclCreateIntArray(v, 3);
        int64_t dims[1] = {3};
        aclTensor *t = aclCreateTensor(dims, 1, ACL_INT64, NULL, 0, ACL_FORMAT_ND, dims, 1, v);
        const aclTensor *one[1] = {t};
        aclTensorList *tl = aclCreateTensorList(one, 1);
        uint64_t n = 0;
        STEP(ia && t && tl && aclGetIntArraySize(ia, &n) == ACLNN_SUCCESS && n == 3);
        STEP(aclDestroyIntArray(ia) == ACLNN_SUCCESS && aclDestroyTensorList(tl) == ACLNN_SUCCESS);
    }
#undef STEP
    return NULL;
}

static void threads(void) {
    enum { NT = 4 };
    struct churn c[NT];
    pthread_t th[NT];
    aclrtStream s = NULL;
    aclrtContext ctx = NULL;
    CHECK_RC(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_RC(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);
    for (int i = 0; i < NT; i++) {
        c[i] = (struct churn){s, ctx, i, 0};
        CHECK(pthread_create(&th[i], NULL, churn_thread, &c[i]) == 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        if (c[i].failed_at) TU_FAIL("thread %d failed at line %d", i, c[i].failed_at);
    }
    CHECK_RC(aclrtDestroyContext(ctx), ACL_SUCCESS);
    CHECK_RC(aclrtDestroyStream(s), ACL_SUCCESS);
}

int main(void) {
    tu_seed("test_host_api");
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    devices_contexts();
    streams();
    events();
    memory();
    versions();
    fp16_to_float();
    float_to_fp16();
    threads();
    CHECK_RC(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    printf("test_host_api: ok\n");
    return 0;
}
