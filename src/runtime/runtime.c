/* runtime.c - the acl runtime subset: init/finalize, device 0, streams and
 * host-backed "device" memory, with CANN's argument checks. */
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

aclError aclrtSetDevice(int32_t deviceId) {
    if (deviceId != 0)
        return mf_fail(ACL_ERROR_INVALID_DEVICE, "aclrtSetDevice: deviceId must be 0, got %d", (int)deviceId);
    tls_device_set = true;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    if (deviceId != 0)
        return mf_fail(ACL_ERROR_INVALID_DEVICE, "aclrtResetDevice: deviceId must be 0, got %d", (int)deviceId);
    tls_device_set = false;
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
    if (deviceId == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL");
    if (!tls_device_set)
        return mf_fail(ACL_ERROR_INVALID_DEVICE, "aclrtGetDevice: no device set on this thread");
    *deviceId = 0;
    return ACL_SUCCESS;
}

/* A stream is a small registered object; its address is the handle. */
struct mf_stream { int unused; };

aclError aclrtCreateStream(aclrtStream *stream) {
    if (stream == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
    struct mf_stream *s = calloc(1, sizeof *s);
    if (s == NULL || !mf_registry_add(&mf_streams, s)) {
        free(s);
        return mf_fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateStream: out of memory");
    }
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
    if (stream == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: stream is NULL");
    if (!mf_registry_remove(&mf_streams, stream))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: %p is not a live stream", stream);
    free(stream);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    if (stream != NULL && !mf_registry_has(&mf_streams, stream))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: %p is not a live stream", stream);
    return ACL_SUCCESS; /* every operator call completes before it returns */
}

/* Large blocks are 2 MiB aligned so transparent huge pages can back them. */
static void *alloc_aligned(size_t size, bool huge_hint) {
    size_t align = (huge_hint && size >= (2u << 20)) ? (2u << 20) : 64;
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0) return NULL;
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

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    if ((int)policy < ACL_MEM_MALLOC_HUGE_FIRST || (int)policy > ACL_MEM_MALLOC_NORMAL_ONLY)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: policy must be 0..2, got %d", (int)policy);
    return do_malloc("aclrtMalloc", devPtr, size, policy != ACL_MEM_MALLOC_NORMAL_ONLY);
}

aclError aclrtMallocHost(void **hostPtr, size_t size) { return do_malloc("aclrtMallocHost", hostPtr, size, false); }
aclError aclrtFree(void *devPtr) { return do_free("aclrtFree", devPtr); }
aclError aclrtFreeHost(void *hostPtr) { return do_free("aclrtFreeHost", hostPtr); }

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    if ((int)kind < ACL_MEMCPY_HOST_TO_HOST || (int)kind > ACL_MEMCPY_DEVICE_TO_DEVICE)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: kind must be 0..3, got %d", (int)kind);
    if (dst == NULL || src == NULL)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: %s is NULL", dst == NULL ? "dst" : "src");
    if (count > destMax)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: count %zu exceeds destMax %zu", count, destMax);
    if (count) memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (devPtr == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr is NULL");
    if (count > maxCount)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count %zu exceeds maxCount %zu", count, maxCount);
    if (count) memset(devPtr, value, count);
    return ACL_SUCCESS;
}
