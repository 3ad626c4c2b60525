/* hccl/hccl_types.h - HCCL's types: result codes, data types, reduction ops, the
 * root info and the communicator config. moefr: CANN's MoE operators on CPUs.
 * Names, values and layouts are HCCL's (ABI facts, from hicann/hcomm
 * include/hccl/hccl_types.h); the declarations are moefr's.
 *
 * CANN declares the size constants as `const uint32_t` at namespace scope,
 * which is C++ only; C programs get the same names and values as macros. */
#ifndef MOEFR_HCCL_HCCL_TYPES_H_
#define MOEFR_HCCL_HCCL_TYPES_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every HCCL call returns one of these. */
typedef enum {
    HCCL_SUCCESS = 0,
    HCCL_E_PARA = 1,         /* an argument is invalid */
    HCCL_E_PTR = 2,          /* a required pointer is NULL */
    HCCL_E_MEMORY = 3,
    HCCL_E_INTERNAL = 4,
    HCCL_E_NOT_SUPPORT = 5,  /* a data type or operation this call does not support */
    HCCL_E_NOT_FOUND = 6,
    HCCL_E_UNAVAIL = 7,      /* the resource is gone (moefr: a peer destroyed the communicator) */
    HCCL_E_SYSCALL = 8,
    HCCL_E_TIMEOUT = 9,      /* a peer did not arrive within HCCL_EXEC_TIMEOUT */
    HCCL_E_OPEN_FILE_FAILURE = 10,
    HCCL_E_TCP_CONNECT = 11,
    HCCL_E_ROCE_CONNECT = 12,
    HCCL_E_TCP_TRANSFER = 13,
    HCCL_E_ROCE_TRANSFER = 14,
    HCCL_E_RUNTIME = 15,
    HCCL_E_DRV = 16,
    HCCL_E_PROFILING = 17,
    HCCL_E_CCE = 18,
    HCCL_E_NETWORK = 19,
    HCCL_E_AGAIN = 20,
    HCCL_E_REMOTE = 21,
    HCCL_E_SUSPENDING = 22,
    HCCL_E_OPRETRY_FAIL = 23,
    HCCL_E_OOM = 24,
    HCCL_E_IN_STATUS = 1041,
    HCCL_E_RESERVED
} HcclResult;

/* A communicator as one rank holds it. */
typedef void *HcclComm;
typedef void *HcclConn;
typedef void *HcclCommSymWindow;

typedef enum {
    HCCL_REDUCE_SUM = 0,
    HCCL_REDUCE_PROD = 1,
    HCCL_REDUCE_MAX = 2,
    HCCL_REDUCE_MIN = 3,
    HCCL_REDUCE_RESERVED = 255
} HcclReduceOp;

/* Element types (not aclDataType's numbering). */
typedef enum {
    HCCL_DATA_TYPE_INT8 = 0,
    HCCL_DATA_TYPE_INT16 = 1,
    HCCL_DATA_TYPE_INT32 = 2,
    HCCL_DATA_TYPE_FP16 = 3,
    HCCL_DATA_TYPE_FP32 = 4,
    HCCL_DATA_TYPE_INT64 = 5,
    HCCL_DATA_TYPE_UINT64 = 6,
    HCCL_DATA_TYPE_UINT8 = 7,
    HCCL_DATA_TYPE_UINT16 = 8,
    HCCL_DATA_TYPE_UINT32 = 9,
    HCCL_DATA_TYPE_FP64 = 10,
    HCCL_DATA_TYPE_BFP16 = 11,
    HCCL_DATA_TYPE_INT128 = 12,
    HCCL_DATA_TYPE_HIF8 = 14,
    HCCL_DATA_TYPE_FP8E4M3 = 15,
    HCCL_DATA_TYPE_FP8E5M2 = 16,
    HCCL_DATA_TYPE_FP8E8M0 = 17,
    HCCL_DATA_TYPE_RESERVED = 255
} HcclDataType;

/* Process-wide settings (HcclSetConfig / HcclGetConfig). */
typedef enum {
    HCCL_DETERMINISTIC = 0, /* 0 off, 1 deterministic, 2 strict (moefr is always strict) */
    HCCL_CONFIG_RESERVED
} HcclConfig;

union HcclConfigValue {
    int32_t value;
};
typedef union HcclConfigValue HcclConfigValue;

#ifdef __cplusplus
const uint32_t HCCL_ROOT_INFO_BYTES = 4108;
const uint32_t COMM_NAME_MAX_LENGTH = 128;
const uint32_t BUFFER_NAME_MAX_LENGTH = 128;
const uint32_t UDI_MAX_LENGTH = 128;
const uint32_t HCCL_COMM_ALGO_MAX_LENGTH = 1600;
const uint32_t HCCL_COMM_RETRY_ENABLE_MAX_LENGTH = 50;
const uint32_t HCCL_COMM_RETRY_PARAMS_MAX_LENGTH = 128;
const uint32_t HCCL_COMM_CONFIG_INFO_BYTES = 24;
const uint32_t HCCL_COMM_CONFIG_MAGIC_WORD = 0xf0f0f0f0;
const uint32_t HCCL_COMM_CONFIG_VERSION = 10;
const uint32_t HCCL_COMM_DEFAULT_BUFFSIZE = 200;
const uint32_t HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_DEFAULT_DETERMINISTIC = 0;
const uint32_t HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_DEFAULT_OP_EXPANSION_MODE = 0;
const uint32_t HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET = 0xffffffff;
const int32_t HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET = (int32_t)0xffffffff;
const uint32_t HCCL_COMM_QOS_CONFIG_NOT_SET = 0xffffffff;
const uint64_t HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE = 16ULL;
#else
#define HCCL_ROOT_INFO_BYTES ((uint32_t)4108)
#define COMM_NAME_MAX_LENGTH ((uint32_t)128)
#define BUFFER_NAME_MAX_LENGTH ((uint32_t)128)
#define UDI_MAX_LENGTH ((uint32_t)128)
#define HCCL_COMM_ALGO_MAX_LENGTH ((uint32_t)1600)
#define HCCL_COMM_RETRY_ENABLE_MAX_LENGTH ((uint32_t)50)
#define HCCL_COMM_RETRY_PARAMS_MAX_LENGTH ((uint32_t)128)
#define HCCL_COMM_CONFIG_INFO_BYTES ((uint32_t)24)
#define HCCL_COMM_CONFIG_MAGIC_WORD ((uint32_t)0xf0f0f0f0u)
#define HCCL_COMM_CONFIG_VERSION ((uint32_t)10)
#define HCCL_COMM_DEFAULT_BUFFSIZE ((uint32_t)200)
#define HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET ((uint32_t)0xffffffffu)
#define HCCL_COMM_DEFAULT_DETERMINISTIC ((uint32_t)0)
#define HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET ((uint32_t)0xffffffffu)
#define HCCL_COMM_DEFAULT_OP_EXPANSION_MODE ((uint32_t)0)
#define HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET ((uint32_t)0xffffffffu)
#define HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET ((uint32_t)0xffffffffu)
#define HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET ((int32_t)-1)
#define HCCL_COMM_QOS_CONFIG_NOT_SET ((uint32_t)0xffffffffu)
#define HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE ((uint64_t)16)
#endif

/* What HcclGetRootInfo fills and HcclCommInitRootInfo reads: opaque bytes that
 * every rank of a communicator receives out of band. */
typedef struct HcclRootInfoDef {
    char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

/* Communicator settings; HcclCommConfigInit (hccl_comm.h) fills the defaults. */
typedef struct HcclCommConfigDef {
    char reserved[HCCL_COMM_CONFIG_INFO_BYTES]; /* size, magic word, version */
    uint32_t hcclBufferSize;
    uint32_t hcclDeterministic;
    char hcclCommName[COMM_NAME_MAX_LENGTH];
    char hcclUdi[UDI_MAX_LENGTH];
    uint32_t hcclOpExpansionMode;
    uint32_t hcclRdmaTrafficClass;
    uint32_t hcclRdmaServiceLevel;
    uint32_t hcclWorldRankID;
    uint64_t hcclJobID;
    uint8_t aclGraphZeroCopyEnable;
    int32_t hcclExecTimeOut; /* seconds; takes precedence over HCCL_EXEC_TIMEOUT */
    char hcclAlgo[HCCL_COMM_ALGO_MAX_LENGTH];
    char hcclRetryEnable[HCCL_COMM_RETRY_ENABLE_MAX_LENGTH];
    char hcclRetryParams[HCCL_COMM_RETRY_PARAMS_MAX_LENGTH];
    char hcclBufferName[BUFFER_NAME_MAX_LENGTH];
    uint32_t hcclQos;
    uint64_t hcclSymWinMaxMemSizePerRank;
} HcclCommConfig;

typedef enum {
    HCCL_COMM_CONFIG_BUFFER_SIZE = 0,
    HCCL_COMM_CONFIG_DETERMINISTIC = 1,
    HCCL_COMM_CONFIG_COMM_NAME = 2,
    HCCL_COMM_CONFIG_OP_EXPANSION_MODE = 3,
    HCCL_COMM_CONFIG_SUPPORT_INIT_BY_ENV = 4,
    HCCL_COMM_CONFIG_WORLD_RANKID = 5,
    HCCL_COMM_CONFIG_JOBID = 6,
    HCCL_COMM_CONFIG_ACLGRAPH_ZEROCOPY_ENABLE = 7,
    HCCL_COMM_CONFIG_EXEC_TIMEOUT = 8,
    HCCL_COMM_CONFIG_ALGO = 9,
    HCCL_COMM_CONFIG_RETRY = 10,
    HCCL_COMM_CONFIG_BUFFER_NAME = 11,
    HCCL_COMM_CONFIG_RESERVED
} HcclCommConfigCapability;

typedef enum { HCCL_SEND = 0, HCCL_RECV = 1, HCCL_SEND_RECV_RESERVED } HcclSendRecvType;

typedef struct HcclSendRecvItemDef {
    HcclSendRecvType sendRecvType;
    void *buf;
    uint64_t count;
    HcclDataType dataType;
    uint32_t remoteRank;
} HcclSendRecvItem;

typedef enum {
    HCCL_CMD_INVALID = 0,
    HCCL_CMD_BROADCAST = 1,
    HCCL_CMD_ALLREDUCE,
    HCCL_CMD_REDUCE,
    HCCL_CMD_SEND,
    HCCL_CMD_RECEIVE,
    HCCL_CMD_ALLGATHER,
    HCCL_CMD_REDUCE_SCATTER,
    HCCL_CMD_ALLTOALLV,
    HCCL_CMD_ALLTOALLVC,
    HCCL_CMD_ALLTOALL,
    HCCL_CMD_GATHER,
    HCCL_CMD_SCATTER,
    HCCL_CMD_BATCH_SEND_RECV,
    HCCL_CMD_BATCH_PUT,
    HCCL_CMD_BATCH_GET,
    HCCL_CMD_ALLGATHER_V,
    HCCL_CMD_REDUCE_SCATTER_V,
    HCCL_CMD_BATCH_WRITE,
    HCCL_CMD_HALF_ALLTOALLV = 20,
    HCCL_CMD_ALL,
    HCCL_CMD_FINALIZE = 100,
    HCCL_CMD_INTER_GROUP_SYNC,
    HCCL_CMD_INIT,
    HCCL_CMD_BARRIER,
    HCCL_CMD_MAX
} HcclCMDType;

typedef enum {
    HCCL_COMM_STATUS_READY = 0,
    HCCL_COMM_STATUS_SUSPENDING = 1,
    HCCL_COMM_STATUS_INVALID = 254,
    HCCL_COMM_STATUS_RESERVED = 255
} HcclCommStatus;

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_HCCL_HCCL_TYPES_H_ */
