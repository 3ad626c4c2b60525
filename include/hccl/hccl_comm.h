/* hccl/hccl_comm.h - HCCL's communicator management: creation, names, ranks,
 * barrier, destruction, errors. moefr: CANN's MoE operators on CPUs. Names and
 * signatures are HCCL's (ABI facts, from hicann/hcomm include/hccl/hccl_comm.h);
 * the declarations are moefr's, and this header declares only what moefr
 * provides (README "HCCL host API" lists what is not there yet).
 *
 * moefr's communicators are threads of one process (HcclCommInitAll): each rank
 * is then used from its own thread. Every call completes its work before it
 * returns; the stream argument is checked and ordered trivially (moefr's
 * streams run work synchronously). */
#ifndef MOEFR_HCCL_HCCL_COMM_H_
#define MOEFR_HCCL_HCCL_COMM_H_

#include <stddef.h>
#include <stdint.h>

#include "hccl/hccl_types.h"
#include "acl/acl.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef HCCL_API
#if defined(__GNUC__)
#define HCCL_API __attribute__((visibility("default")))
#else
#define HCCL_API
#endif
#endif

/* One communicator of ndev ranks in this process: comms[i] is rank i, on
 * devices[i] (distinct, >= 0). Use each rank from one thread. */
HCCL_API HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms);

/* Root info handed to every rank, each calling HcclCommInitRootInfo with its
 * rank; each waits until all nRanks joined (at most HCCL_CONNECT_TIMEOUT
 * seconds). moefr: the ranks are threads of this process (a root info from
 * another process is HCCL_E_NOT_SUPPORT for now); the config's hcclCommName
 * and hcclExecTimeOut are used. */
HCCL_API HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
HCCL_API HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                         HcclComm *comm);
HCCL_API HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                               const HcclCommConfig *config, HcclComm *comm);
/* Rank tables: not yet provided (HCCL_E_NOT_SUPPORT with a message). */
HCCL_API HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm);

/* HCCL_DETERMINISTIC: moefr's reductions are always in rank order (strict). */
HCCL_API HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue);
HCCL_API HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *configValue);

/* The communicator's name (shared by its ranks, unique in the process), at
 * most COMM_NAME_MAX_LENGTH bytes with its terminating NUL. */
HCCL_API HcclResult HcclGetCommName(HcclComm comm, char *commName);
/* The rank of the communicator named commName that the calling thread uses. */
HCCL_API HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm);
HCCL_API HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
HCCL_API HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
/* Returns when every rank has called it (or an error: HCCL_E_TIMEOUT after
 * HCCL_EXEC_TIMEOUT seconds, HCCL_E_UNAVAIL once a peer destroyed its rank). */
HCCL_API HcclResult HcclBarrier(HcclComm comm, aclrtStream stream);
/* Releases this rank. Peers still calling collectives get HCCL_E_UNAVAIL. */
HCCL_API HcclResult HcclCommDestroy(HcclComm comm);
/* HCCL_SUCCESS while the communicator works; else the error that broke it. */
HCCL_API HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError);
HCCL_API const char *HcclGetErrorString(HcclResult code);

/* Fills config with HCCL's defaults ("not set" everywhere). */
static inline void HcclCommConfigInit(HcclCommConfig *config) {
    typedef struct {
        size_t size;
        uint32_t magicWord;
        uint32_t version;
        uint64_t reserved;
    } HcclCommConfigInfoHead;
    HcclCommConfigInfoHead *head;
    if (config == NULL) return;
    head = (HcclCommConfigInfoHead *)(void *)config;
    head->size = sizeof(HcclCommConfig);
    head->magicWord = HCCL_COMM_CONFIG_MAGIC_WORD;
    head->version = HCCL_COMM_CONFIG_VERSION;
    head->reserved = 0;
    config->hcclBufferSize = HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET;
    config->hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
    config->hcclCommName[0] = '\0';
    config->hcclUdi[0] = '\0';
    config->hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
    config->hcclRdmaTrafficClass = HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET;
    config->hcclRdmaServiceLevel = HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET;
    config->hcclWorldRankID = 0;
    config->hcclJobID = 0;
    config->aclGraphZeroCopyEnable = 0;
    config->hcclExecTimeOut = HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET;
    config->hcclAlgo[0] = '\0';
    config->hcclRetryEnable[0] = '\0';
    config->hcclRetryParams[0] = '\0';
    config->hcclBufferName[0] = '\0';
    config->hcclQos = HCCL_COMM_QOS_CONFIG_NOT_SET;
    config->hcclSymWinMaxMemSizePerRank = HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE;
}

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_HCCL_HCCL_COMM_H_ */
