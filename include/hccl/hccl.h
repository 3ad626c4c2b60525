/* hccl/hccl.h - HCCL's collective and point-to-point operations. moefr: CANN's
 * MoE operators on CPUs. Names and signatures are HCCL's (ABI facts, from
 * hicann/hccl include/hccl.h); the declarations are moefr's. Link -lhccl.
 *
 * Every rank of the communicator must make the same calls in the same order
 * with matching counts, types and ops; moefr checks that before any data
 * moves (HCCL_E_PARA on every rank, outputs untouched). Reductions run in rank
 * order, floating point in fp32 (fp16, bf16, fp32) or fp64 with one rounding
 * at the end, so every rank gets the same bits on every run. A call returns
 * when its data is in place (the stream is checked, nothing is queued). */
#ifndef MOEFR_HCCL_HCCL_H_
#define MOEFR_HCCL_HCCL_H_

#include <stdint.h>

#include "hccl/hccl_types.h"
#include "hccl/hccl_comm.h"
#include "acl/acl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* recvBuf[i] = op over ranks of sendBuf[i], i < count, on every rank. */
HCCL_API HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType,
                                  HcclReduceOp op, HcclComm comm, aclrtStream stream);
/* buf (count elements) of rank root copied to every rank's buf. */
HCCL_API HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                                  aclrtStream stream);
/* recvBuf = op over ranks of sendBuf[rank * recvCount .. +recvCount). */
HCCL_API HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                                      HcclReduceOp op, HcclComm comm, aclrtStream stream);
/* recvBuf[r * sendCount .. +sendCount) = rank r's sendBuf. */
HCCL_API HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType,
                                  HcclComm comm, aclrtStream stream);
/* recvBuf[recvDispls[r] .. + recvCounts[r]) = rank r's sendBuf; recvCounts[r] must equal rank r's
 * sendCount. Counts and displacements: uint64_t arrays of rank-size entries, in elements. */
HCCL_API HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount, void *recvBuf, const void *recvCounts,
                                   const void *recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream stream);
/* recvBuf = op over ranks q of rank q's sendBuf[sendDispls[rank] .. + sendCounts[rank]); sendCounts[r]
 * must equal rank r's recvCount. */
HCCL_API HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts, const void *sendDispls, void *recvBuf,
                                       uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                                       aclrtStream stream);
/* Point to point: a send on rank a to b pairs with a receive on b from a, in call order. */
HCCL_API HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                             aclrtStream stream);
HCCL_API HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                             aclrtStream stream);
/* Counts and displacements are uint64_t arrays of rank-size entries, in
 * elements; sendCounts[j] of rank i must equal recvCounts[i] of rank j. */
HCCL_API HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts, const void *sdispls,
                                  HcclDataType sendType, const void *recvBuf, const void *recvCounts,
                                  const void *rdispls, HcclDataType recvType, HcclComm comm, aclrtStream stream);
/* sendCount elements to every rank, recvCount (the same) from every rank. */
HCCL_API HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount, HcclDataType sendType, const void *recvBuf,
                                 uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_HCCL_HCCL_H_ */
