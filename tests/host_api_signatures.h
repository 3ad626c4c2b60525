/* host_api_signatures.h - issue 12's functions with CANN 8.1.RC1's exact
 * signatures, as one X-macro list: test_headers_c.c checks each with _Generic
 * (C11), test_headers_cpp.cpp with decltype (C++11). Neither evaluates the
 * function, so declarations whose definitions live elsewhere are checked too. */
#define MOEFR_HOST_API_SIGNATURES(X)                                                                        \
    X(aclrtGetVersion, aclError (*)(int32_t *, int32_t *, int32_t *))                                       \
    X(aclsysGetCANNVersion, aclError (*)(aclCANNPackageName, aclCANNPackageVersion *))                      \
    X(aclrtGetSocName, const char *(*)(void))                                                               \
    X(aclDataTypeSize, size_t (*)(aclDataType))                                                             \
    X(aclFloatToFloat16, aclFloat16 (*)(float))                                                             \
    X(aclFloat16ToFloat, float (*)(aclFloat16))                                                             \
    X(aclrtResetDeviceForce, aclError (*)(int32_t))                                                         \
    X(aclrtGetDeviceCount, aclError (*)(uint32_t *))                                                        \
    X(aclrtGetRunMode, aclError (*)(aclrtRunMode *))                                                        \
    X(aclrtSynchronizeDevice, aclError (*)(void))                                                           \
    X(aclrtSynchronizeDeviceWithTimeout, aclError (*)(int32_t))                                             \
    X(aclrtCreateContext, aclError (*)(aclrtContext *, int32_t))                                            \
    X(aclrtDestroyContext, aclError (*)(aclrtContext))                                                      \
    X(aclrtSetCurrentContext, aclError (*)(aclrtContext))                                                   \
    X(aclrtGetCurrentContext, aclError (*)(aclrtContext *))                                                 \
    X(aclrtCreateStreamWithConfig, aclError (*)(aclrtStream *, uint32_t, uint32_t))                         \
    X(aclrtDestroyStreamForce, aclError (*)(aclrtStream))                                                   \
    X(aclrtSynchronizeStreamWithTimeout, aclError (*)(aclrtStream, int32_t))                                \
    X(aclrtStreamQuery, aclError (*)(aclrtStream, aclrtStreamStatus *))                                     \
    X(aclrtStreamWaitEvent, aclError (*)(aclrtStream, aclrtEvent))                                          \
    X(aclrtCreateEvent, aclError (*)(aclrtEvent *))                                                         \
    X(aclrtCreateEventWithFlag, aclError (*)(aclrtEvent *, uint32_t))                                       \
    X(aclrtDestroyEvent, aclError (*)(aclrtEvent))                                                          \
    X(aclrtRecordEvent, aclError (*)(aclrtEvent, aclrtStream))                                              \
    X(aclrtResetEvent, aclError (*)(aclrtEvent, aclrtStream))                                               \
    X(aclrtQueryEventStatus, aclError (*)(aclrtEvent, aclrtEventRecordedStatus *))                          \
    X(aclrtQueryEventWaitStatus, aclError (*)(aclrtEvent, aclrtEventWaitStatus *))                          \
    X(aclrtSynchronizeEvent, aclError (*)(aclrtEvent))                                                      \
    X(aclrtSynchronizeEventWithTimeout, aclError (*)(aclrtEvent, int32_t))                                  \
    X(aclrtEventElapsedTime, aclError (*)(float *, aclrtEvent, aclrtEvent))                                 \
    X(aclrtEventGetTimestamp, aclError (*)(aclrtEvent, uint64_t *))                                         \
    X(aclrtMallocAlign32, aclError (*)(void **, size_t, aclrtMemMallocPolicy))                              \
    X(aclrtMallocCached, aclError (*)(void **, size_t, aclrtMemMallocPolicy))                               \
    X(aclrtMemcpyAsync, aclError (*)(void *, size_t, const void *, size_t, aclrtMemcpyKind, aclrtStream))   \
    X(aclrtMemsetAsync, aclError (*)(void *, size_t, int32_t, size_t, aclrtStream))                         \
    X(aclrtGetMemInfo, aclError (*)(aclrtMemAttr, size_t *, size_t *))                                      \
    X(aclCreateScalar, aclScalar *(*)(void *, aclDataType))                                                 \
    X(aclCreateIntArray, aclIntArray *(*)(const int64_t *, uint64_t))                                       \
    X(aclCreateFloatArray, aclFloatArray *(*)(const float *, uint64_t))                                     \
    X(aclCreateBoolArray, aclBoolArray *(*)(const bool *, uint64_t))                                        \
    X(aclCreateTensorList, aclTensorList *(*)(const aclTensor *const *, uint64_t))                          \
    X(aclCreateScalarList, aclScalarList *(*)(const aclScalar *const *, uint64_t))                          \
    X(aclDestroyScalar, aclnnStatus (*)(const aclScalar *))                                                 \
    X(aclDestroyIntArray, aclnnStatus (*)(const aclIntArray *))                                             \
    X(aclDestroyFloatArray, aclnnStatus (*)(const aclFloatArray *))                                         \
    X(aclDestroyBoolArray, aclnnStatus (*)(const aclBoolArray *))                                           \
    X(aclDestroyTensorList, aclnnStatus (*)(const aclTensorList *))                                         \
    X(aclDestroyScalarList, aclnnStatus (*)(const aclScalarList *))                                         \
    X(aclGetViewShape, aclnnStatus (*)(const aclTensor *, int64_t **, uint64_t *))                          \
    X(aclGetStorageShape, aclnnStatus (*)(const aclTensor *, int64_t **, uint64_t *))                       \
    X(aclGetViewStrides, aclnnStatus (*)(const aclTensor *, int64_t **, uint64_t *))                        \
    X(aclGetViewOffset, aclnnStatus (*)(const aclTensor *, int64_t *))                                      \
    X(aclGetFormat, aclnnStatus (*)(const aclTensor *, aclFormat *))                                        \
    X(aclGetDataType, aclnnStatus (*)(const aclTensor *, aclDataType *))                                    \
    X(aclGetIntArraySize, aclnnStatus (*)(const aclIntArray *, uint64_t *))                                 \
    X(aclGetFloatArraySize, aclnnStatus (*)(const aclFloatArray *, uint64_t *))                             \
    X(aclGetBoolArraySize, aclnnStatus (*)(const aclBoolArray *, uint64_t *))                               \
    X(aclGetTensorListSize, aclnnStatus (*)(const aclTensorList *, uint64_t *))                             \
    X(aclGetScalarListSize, aclnnStatus (*)(const aclScalarList *, uint64_t *))                             \
    X(aclInitTensor, aclnnStatus (*)(aclTensor *, const int64_t *, uint64_t, aclDataType, const int64_t *,  \
                                     int64_t, aclFormat, const int64_t *, uint64_t, void *))                \
    X(aclSetInputTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, aclTensor *, void *))                 \
    X(aclSetOutputTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, aclTensor *, void *))                \
    X(aclSetTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, aclTensor *, void *))                      \
    X(AclSetInputTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, aclTensor *, void *))                 \
    X(AclSetOutputTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, aclTensor *, void *))                \
    X(AclSetTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, aclTensor *, void *))                      \
    X(aclSetDynamicInputTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, size_t, aclTensorList *, void *)) \
    X(aclSetDynamicOutputTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, size_t, aclTensorList *, void *)) \
    X(aclSetDynamicTensorAddr, aclnnStatus (*)(aclOpExecutor *, size_t, size_t, aclTensorList *, void *))   \
    X(aclSetRawTensorAddr, aclnnStatus (*)(aclTensor *, void *))                                            \
    X(aclGetRawTensorAddr, aclnnStatus (*)(const aclTensor *, void **))                                     \
    X(aclnnInit, aclnnStatus (*)(const char *))                                                             \
    X(aclnnFinalize, aclnnStatus (*)(void))                                                                 \
    X(moefrFreeArray, void (*)(void *))
