/* runtime.c - the acl runtime: init/finalize, device 0 and its contexts,
 * streams and host-backed "device" memory, with CANN's argument checks. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "acl/acl.h"
#include "internal.h"

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_initialized;
static _Thread_local bool tls_device_set;

aclError aclInit(const char *configPath) {
    (void)configPath; /* no configuration is read */
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&g_init_lock);
    if (g_initialized)
        rc = mf_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
    g_initialized = true;
    pthread_mutex_unlock(&g_init_lock);
    return rc;
}

aclError aclFinalize(void) {
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&g_init_lock);
    if (!g_initialized) rc = mf_fail(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
    g_initialized = false;
    pthread_mutex_unlock(&g_init_lock);
    return rc;
}

/* ---- devices and contexts ----
 * Device 0 has one default context, current on a thread once aclrtSetDevice
 * was called there; aclrtCreateContext / aclrtSetCurrentContext override it
 * for the calling thread. A context is a registered handle and holds nothing. */
struct mf_context { int32_t device; };
static struct mf_context g_default_context = {0};
static _Thread_local struct mf_context *tls_context;

static aclError check_device(const char *fn, int32_t deviceId) {
    if (deviceId != 0)
        return mf_fail(ACL_ERROR_INVALID_DEVICE, "%s: deviceId must be 0 (the only device), got %d", fn,
                       (int)deviceId);
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
    aclError rc = check_device("aclrtSetDevice", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    tls_device_set = true;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    aclError rc = check_device("aclrtResetDevice", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    tls_device_set = false;
    tls_context = NULL;
    return ACL_SUCCESS;
}

aclError aclrtResetDeviceForce(int32_t deviceId) {
    aclError rc = check_device("aclrtResetDeviceForce", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    tls_device_set = false;
    tls_context = NULL;
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
    if (deviceId == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL");
    if (!tls_device_set)
        return mf_fail(ACL_ERROR_INVALID_DEVICE, "aclrtGetDevice: no device set on this thread");
    *deviceId = 0;
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
    if (count == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
    *count = 1;
    return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (runMode == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode is NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

/* -1 waits forever, 0 and above are milliseconds; nothing is ever pending. */
static aclError check_timeout(const char *fn, int32_t timeout) {
    if (timeout < -1)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: timeout must be -1 (forever) or >= 0 ms, got %d", fn,
                       (int)timeout);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
    return check_timeout("aclrtSynchronizeDeviceWithTimeout", timeout);
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    if (context == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is NULL");
    aclError rc = check_device("aclrtCreateContext", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    struct mf_context *c = mf_calloc(1, sizeof *c);
    if (c == NULL || !mf_registry_add(&mf_contexts, c)) {
        free(c);
        return mf_fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateContext: out of memory");
    }
    c->device = deviceId;
    tls_context = c;
    tls_device_set = true;
    *context = c;
    return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
    if (context == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: context is NULL");
    if (context == (aclrtContext)&g_default_context)
        return mf_fail(ACL_ERROR_INVALID_PARAM,
                       "aclrtDestroyContext: %p is device 0's default context (aclrtResetDevice releases it)", context);
    if (!mf_registry_remove(&mf_contexts, context))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: %p is not a live context (destroyed twice?)",
                       context);
    if (tls_context == context) tls_context = NULL;
    free(context);
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
    if (context == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: context is NULL");
    if (context != (aclrtContext)&g_default_context && !mf_registry_has(&mf_contexts, context))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: %p is not a live context", context);
    tls_context = context;
    tls_device_set = true;
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
    if (context == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is NULL");
    struct mf_context *c = tls_context;
    /* a context destroyed by another thread stops being current here too */
    if (c != NULL && c != &g_default_context && !mf_registry_has(&mf_contexts, c)) c = tls_context = NULL;
    if (c == NULL && tls_device_set) c = &g_default_context;
    if (c == NULL)
        return mf_fail(ACL_ERROR_RT_CONTEXT_NULL,
                       "aclrtGetCurrentContext: this thread has no context (call aclrtSetDevice or aclrtCreateContext)");
    *context = c;
    return ACL_SUCCESS;
}

/* ---- streams: a small registered object; its address is the handle ---- */
struct mf_stream { uint32_t priority, flag; };

static aclError new_stream(const char *fn, aclrtStream *stream, uint32_t priority, uint32_t flag) {
    if (stream == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: stream is NULL", fn);
    struct mf_stream *s = mf_calloc(1, sizeof *s);
    if (s == NULL || !mf_registry_add(&mf_streams, s)) {
        free(s);
        return mf_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", fn);
    }
    s->priority = priority;
    s->flag = flag;
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream) { return new_stream("aclrtCreateStream", stream, 0, 0); }

aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
    const uint32_t known = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC;
    if (flag & ~known)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStreamWithConfig: flag 0x%x has bits outside 0x%x",
                       (unsigned)flag, (unsigned)known);
    return new_stream("aclrtCreateStreamWithConfig", stream, priority, flag);
}

static aclError destroy_stream(const char *fn, aclrtStream stream) {
    if (stream == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: stream is NULL", fn);
    if (!mf_registry_remove(&mf_streams, stream))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live stream", fn, stream);
    free(stream);
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) { return destroy_stream("aclrtDestroyStream", stream); }
aclError aclrtDestroyStreamForce(aclrtStream stream) { return destroy_stream("aclrtDestroyStreamForce", stream); }

aclError mf_check_stream(const char *fn, aclrtStream stream) {
    if (stream != NULL && !mf_registry_has(&mf_streams, stream))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live stream", fn, stream);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    return mf_check_stream("aclrtSynchronizeStream", stream); /* every call completes before it returns */
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
    aclError rc = mf_check_stream("aclrtSynchronizeStreamWithTimeout", stream);
    return rc != ACL_SUCCESS ? rc : check_timeout("aclrtSynchronizeStreamWithTimeout", timeout);
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
    aclError rc = mf_check_stream("aclrtStreamQuery", stream);
    if (rc != ACL_SUCCESS) return rc;
    if (status == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamQuery: status is NULL");
    *status = ACL_STREAM_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

/* Large blocks are 2 MiB aligned so transparent huge pages can back them. */
static void *alloc_aligned(size_t size, bool huge_hint) {
    size_t align = (huge_hint && size >= (2u << 20)) ? (2u << 20) : 64;
    void *p = mf_memalign(align, size);
    if (p == NULL) return NULL;
#ifdef MADV_HUGEPAGE
    if (align > 64) madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

static aclError do_malloc(const char *fn, void **ptr, size_t size, bool huge_hint) {
    if (ptr == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: pointer argument is NULL", fn);
    if (size == 0) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: size must be > 0, got 0", fn);
    void *p = alloc_aligned(size, huge_hint);
    if (p == NULL) return mf_fail(ACL_ERROR_BAD_ALLOC, "%s: cannot allocate %zu bytes", fn, size);
    if (!mf_registry_add(&mf_allocs, p)) {
        free(p);
        return mf_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", fn);
    }
    *ptr = p;
    return ACL_SUCCESS;
}

static aclError do_free(const char *fn, void *p) {
    if (p == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: pointer is NULL", fn);
    if (!mf_registry_remove(&mf_allocs, p))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: %p was not allocated by moefr or was freed already", fn, p);
    free(p);
    return ACL_SUCCESS;
}

/* A policy is a value 0..7 (ACL_MEM_MALLOC_HUGE_FIRST .. HUGE1G_ONLY_P2P), or-ed
 * with any of the flag bits. All are host memory; only NORMAL_ONLY(_P2P) turn
 * the huge-page hint off. */
static aclError policy_malloc(const char *fn, void **ptr, size_t size, aclrtMemMallocPolicy policy) {
    const unsigned flags = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH |
                           ACL_MEM_ACCESS_USER_SPACE_READONLY;
    unsigned p = (unsigned)policy, base = p & ~flags;
    if (base > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P)
        return mf_fail(ACL_ERROR_INVALID_PARAM,
                       "%s: policy must be 0..7 or-ed with the ACL_MEM_TYPE_/ACL_MEM_ACCESS_ flags, got %d (0x%x)", fn,
                       (int)policy, p);
    bool huge = base != ACL_MEM_MALLOC_NORMAL_ONLY && base != ACL_MEM_MALLOC_NORMAL_ONLY_P2P;
    return do_malloc(fn, ptr, size, huge);
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return policy_malloc("aclrtMalloc", devPtr, size, policy);
}
aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return policy_malloc("aclrtMallocAlign32", devPtr, size, policy);
}
aclError aclrtMallocCached(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return policy_malloc("aclrtMallocCached", devPtr, size, policy);
}

aclError aclrtMallocHost(void **hostPtr, size_t size) { return do_malloc("aclrtMallocHost", hostPtr, size, false); }
aclError aclrtFree(void *devPtr) { return do_free("aclrtFree", devPtr); }
aclError aclrtFreeHost(void *hostPtr) { return do_free("aclrtFreeHost", hostPtr); }

/* Every kind copies host memory to host memory. */
static aclError do_memcpy(const char *fn, void *dst, size_t destMax, const void *src, size_t count,
                          aclrtMemcpyKind kind) {
    if ((int)kind < ACL_MEMCPY_HOST_TO_HOST || (int)kind > ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: kind must be 0..7 (an aclrtMemcpyKind), got %d", fn, (int)kind);
    if (dst == NULL || src == NULL)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL", fn, dst == NULL ? "dst" : "src");
    if (count > destMax)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu exceeds destMax %zu", fn, count, destMax);
    if (count) memmove(dst, src, count);
    return ACL_SUCCESS;
}

static aclError do_memset(const char *fn, void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (devPtr == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr is NULL", fn);
    if (count > maxCount)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu exceeds maxCount %zu", fn, count, maxCount);
    if (count) memset(devPtr, value, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    return do_memcpy("aclrtMemcpy", dst, destMax, src, count, kind);
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    return do_memset("aclrtMemset", devPtr, maxCount, value, count);
}

/* "Async": done before returning, so the stream only has to be a valid handle. */
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
    aclError rc = mf_check_stream("aclrtMemcpyAsync", stream);
    return rc != ACL_SUCCESS ? rc : do_memcpy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
    aclError rc = mf_check_stream("aclrtMemsetAsync", stream);
    return rc != ACL_SUCCESS ? rc : do_memset("aclrtMemsetAsync", devPtr, maxCount, value, count);
}
