/* hccl_signatures.h - HCCL's ABI facts as the header tests (C11 and C++11) check them: enum values,
 * sizes, and each function's exact type (hicann/hcomm include/hccl/hccl_types.h and hccl_comm.h,
 * hicann/hccl include/hccl.h). Included by test_headers_c.c and test_headers_cpp.cpp. */
#ifndef MOEFR_TESTS_HCCL_SIGNATURES_H_
#define MOEFR_TESTS_HCCL_SIGNATURES_H_

#include "hccl/hccl.h"
#include "hccl/hccl_comm.h"
#include "hccl/hccl_types.h"
#include "hccl/hccl.h" /* twice: the include guards hold */

#ifdef __cplusplus
#define HS_ASSERT(c, m) static_assert(c, m)
#else
#define HS_ASSERT(c, m) _Static_assert(c, m)
#endif

HS_ASSERT(HCCL_SUCCESS == 0 && HCCL_E_PARA == 1 && HCCL_E_PTR == 2 && HCCL_E_MEMORY == 3 && HCCL_E_INTERNAL == 4 &&
              HCCL_E_NOT_SUPPORT == 5 && HCCL_E_NOT_FOUND == 6 && HCCL_E_UNAVAIL == 7 && HCCL_E_SYSCALL == 8 &&
              HCCL_E_TIMEOUT == 9 && HCCL_E_OPEN_FILE_FAILURE == 10 && HCCL_E_TCP_CONNECT == 11 &&
              HCCL_E_ROCE_CONNECT == 12 && HCCL_E_TCP_TRANSFER == 13 && HCCL_E_ROCE_TRANSFER == 14 &&
              HCCL_E_RUNTIME == 15 && HCCL_E_DRV == 16 && HCCL_E_PROFILING == 17 && HCCL_E_CCE == 18 &&
              HCCL_E_NETWORK == 19 && HCCL_E_AGAIN == 20 && HCCL_E_REMOTE == 21 && HCCL_E_SUSPENDING == 22 &&
              HCCL_E_OPRETRY_FAIL == 23 && HCCL_E_OOM == 24 && HCCL_E_IN_STATUS == 1041 && HCCL_E_RESERVED == 1042,
          "HcclResult values");
HS_ASSERT(HCCL_DATA_TYPE_INT8 == 0 && HCCL_DATA_TYPE_INT16 == 1 && HCCL_DATA_TYPE_INT32 == 2 &&
              HCCL_DATA_TYPE_FP16 == 3 && HCCL_DATA_TYPE_FP32 == 4 && HCCL_DATA_TYPE_INT64 == 5 &&
              HCCL_DATA_TYPE_UINT64 == 6 && HCCL_DATA_TYPE_UINT8 == 7 && HCCL_DATA_TYPE_UINT16 == 8 &&
              HCCL_DATA_TYPE_UINT32 == 9 && HCCL_DATA_TYPE_FP64 == 10 && HCCL_DATA_TYPE_BFP16 == 11 &&
              HCCL_DATA_TYPE_INT128 == 12 && HCCL_DATA_TYPE_HIF8 == 14 && HCCL_DATA_TYPE_FP8E4M3 == 15 &&
              HCCL_DATA_TYPE_FP8E5M2 == 16 && HCCL_DATA_TYPE_FP8E8M0 == 17 && HCCL_DATA_TYPE_RESERVED == 255,
          "HcclDataType values");
HS_ASSERT(HCCL_REDUCE_SUM == 0 && HCCL_REDUCE_PROD == 1 && HCCL_REDUCE_MAX == 2 && HCCL_REDUCE_MIN == 3 &&
              HCCL_REDUCE_RESERVED == 255,
          "HcclReduceOp values");
HS_ASSERT(HCCL_ROOT_INFO_BYTES == 4108 && sizeof(HcclRootInfo) == 4108, "HcclRootInfo");
HS_ASSERT(COMM_NAME_MAX_LENGTH == 128 && HCCL_COMM_CONFIG_INFO_BYTES == 24 && HCCL_COMM_CONFIG_VERSION == 10 &&
              HCCL_COMM_CONFIG_MAGIC_WORD == 0xf0f0f0f0u,
          "HCCL constants");
HS_ASSERT(HCCL_CMD_BROADCAST == 1 && HCCL_CMD_ALLTOALLV == 8 && HCCL_CMD_HALF_ALLTOALLV == 20 &&
              HCCL_CMD_FINALIZE == 100 && HCCL_CMD_BARRIER == 103,
          "HcclCMDType values");
HS_ASSERT(HCCL_COMM_CONFIG_BUFFER_NAME == 11 && HCCL_DETERMINISTIC == 0 && HCCL_SEND == 0 && HCCL_RECV == 1,
          "config and send/recv enums");
HS_ASSERT(sizeof(HcclComm) == sizeof(void *), "HcclComm is a pointer");

/* Every function with CANN's exact type: assigning to these pointers fails to compile otherwise. */
static inline int hccl_sigs_ok(void) {
    HcclResult (*all_reduce)(void *, void *, uint64_t, HcclDataType, HcclReduceOp, HcclComm, aclrtStream) =
        HcclAllReduce;
    HcclResult (*bcast)(void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream) = HcclBroadcast;
    HcclResult (*rs)(void *, void *, uint64_t, HcclDataType, HcclReduceOp, HcclComm, aclrtStream) =
        HcclReduceScatter;
    HcclResult (*ag)(void *, void *, uint64_t, HcclDataType, HcclComm, aclrtStream) = HcclAllGather;
    HcclResult (*agv)(void *, uint64_t, void *, const void *, const void *, HcclDataType, HcclComm, aclrtStream) =
        HcclAllGatherV;
    HcclResult (*rsv)(void *, const void *, const void *, void *, uint64_t, HcclDataType, HcclReduceOp, HcclComm,
                      aclrtStream) = HcclReduceScatterV;
    HcclResult (*send)(void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream) = HcclSend;
    HcclResult (*recv)(void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream) = HcclRecv;
    HcclResult (*a2av)(const void *, const void *, const void *, HcclDataType, const void *, const void *,
                       const void *, HcclDataType, HcclComm, aclrtStream) = HcclAlltoAllV;
    HcclResult (*a2a)(const void *, uint64_t, HcclDataType, const void *, uint64_t, HcclDataType, HcclComm,
                      aclrtStream) = HcclAlltoAll;
    HcclResult (*init_all)(uint32_t, int32_t *, HcclComm *) = HcclCommInitAll;
    HcclResult (*root_info)(HcclRootInfo *) = HcclGetRootInfo;
    HcclResult (*init_root)(uint32_t, const HcclRootInfo *, uint32_t, HcclComm *) = HcclCommInitRootInfo;
    HcclResult (*init_root_cfg)(uint32_t, const HcclRootInfo *, uint32_t, const HcclCommConfig *, HcclComm *) =
        HcclCommInitRootInfoConfig;
    HcclResult (*init_cluster)(const char *, uint32_t, HcclComm *) = HcclCommInitClusterInfo;
    HcclResult (*set_cfg)(HcclConfig, HcclConfigValue) = HcclSetConfig;
    HcclResult (*get_cfg)(HcclConfig, HcclConfigValue *) = HcclGetConfig;
    HcclResult (*name)(HcclComm, char *) = HcclGetCommName;
    HcclResult (*by_name)(const char *, HcclComm *) = HcclCommGetHandleWithName;
    HcclResult (*size)(HcclComm, uint32_t *) = HcclGetRankSize;
    HcclResult (*id)(HcclComm, uint32_t *) = HcclGetRankId;
    HcclResult (*barrier)(HcclComm, aclrtStream) = HcclBarrier;
    HcclResult (*destroy)(HcclComm) = HcclCommDestroy;
    HcclResult (*async_err)(HcclComm, HcclResult *) = HcclGetCommAsyncError;
    const char *(*err_str)(HcclResult) = HcclGetErrorString;
    const void *all[] = {(const void *)&all_reduce, (const void *)&bcast,     (const void *)&rs,
                         (const void *)&ag,         (const void *)&send,      (const void *)&recv,
                         (const void *)&a2av,       (const void *)&a2a,       (const void *)&init_all,
                         (const void *)&root_info,  (const void *)&init_root, (const void *)&init_root_cfg,
                         (const void *)&init_cluster, (const void *)&set_cfg, (const void *)&get_cfg,
                         (const void *)&name,       (const void *)&by_name,   (const void *)&size,
                         (const void *)&id,         (const void *)&barrier,   (const void *)&destroy,
                         (const void *)&async_err, (const void *)&agv, (const void *)&rsv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*(void *const *)all[i] == NULL) return 0;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    if (cfg.hcclBufferSize != HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET || cfg.hcclCommName[0] != '\0') return 0;
    return err_str(HCCL_E_TIMEOUT) != NULL;
}

#endif /* MOEFR_TESTS_HCCL_SIGNATURES_H_ */
