/* comm.h - what the communicator (hccl.c) offers the rest of the library: the
 * name -> communicator lookup the mc2 operators use (their `group` argument is
 * a name HcclGetCommName returned). Nothing here is public. */
#ifndef MOEFR_COMM_COMM_H_
#define MOEFR_COMM_COMM_H_

#include "hccl/hccl_types.h"

/* The rank of the communicator named `name` that the calling thread uses: the
 * rank this thread last passed to an HCCL call, else the one whose device is
 * this thread's current device, else rank 0 of a one-rank communicator.
 * HCCL_E_PTR for NULL arguments, HCCL_E_NOT_FOUND otherwise (message set). */
HcclResult mf_comm_lookup(const char *name, HcclComm *comm);

/* ---- reductions (reduce.c) ----
 * dst[i] = src[0][i] op src[1][i] op ... op src[n-1][i] for i < len, in rank
 * order: integers in two's complement (sum and prod wrap), fp16, bf16 and fp32
 * accumulated in fp32 and fp64 in fp64, rounded once (to nearest even) into
 * dst; max/min return NaN once any operand is NaN. dst may be one of the src
 * blocks (each element is read from every rank before it is written). dtype
 * and op must be a supported pair (hccl.c checks). */
#define MF_COMM_REDUCE_BLOCK 512 /* elements per pass over the ranks */
void mf_comm_reduce(int dtype, int op, const void *const *src, uint32_t n, size_t len, void *dst); /* len <= BLOCK */

#endif /* MOEFR_COMM_COMM_H_ */
