/* acl/acl.h - the runtime subset: init, device, stream, memory.
 * The "device" is host memory; execution is synchronous (see SPEC section 3). */
#ifndef MOEFR_ACL_ACL_H_
#define MOEFR_ACL_ACL_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2
} aclrtMemMallocPolicy;

typedef enum {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3
} aclrtMemcpyKind;

/* Initialise the runtime once per process; configPath may be NULL.
 * A second call without aclFinalize returns ACL_ERROR_REPEAT_INITIALIZE. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
/* Undo aclInit; ACL_ERROR_UNINITIALIZE when not initialised. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);

/* Only device 0 exists; any other id is ACL_ERROR_INVALID_DEVICE. */
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
/* The calling thread's current device; ACL_ERROR_INVALID_DEVICE if none set. */
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);

/* Streams are ordering handles; work runs synchronously inside each call, so
 * aclrtSynchronizeStream returns at once. NULL names the default stream. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);

/* Memory: at least 64-byte aligned; size 0 is ACL_ERROR_INVALID_PARAM; huge
 * pages are a hint. aclrtFree/aclrtFreeHost reject pointers they did not give. */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);
/* Copies count bytes; count > destMax is ACL_ERROR_INVALID_PARAM. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);
/* Sets count bytes to (unsigned char)value; count > maxCount is an error. */
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACL_ACL_H_ */
