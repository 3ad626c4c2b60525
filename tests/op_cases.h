/* op_cases.h - one small valid problem per public aclnn operator (the 13 of
 * include/aclnnop/), shared by test_faults and test_ops_threads. A case holds
 * its inputs' host data (read-only once made, so threads may share it and the
 * aclTensor descriptors made on it) and its outputs' shapes; the caller owns
 * the output buffers, the executors and the workspaces. */
#ifndef MOEFR_TESTS_OP_CASES_H_
#define MOEFR_TESTS_OP_CASES_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

enum { OC_MAX_IN = 8, OC_MAX_OUT = 3 };

typedef struct oc_arr {
    aclDataType dt;
    int nd;
    int64_t dims[3];
    size_t bytes; /* 0 and data NULL: an absent optional tensor */
    void *data;   /* inputs only: the shared host data */
} oc_arr;

typedef struct oc_case {
    const char *name; /* the aclnn operator, e.g. "aclnnMoeInitRoutingV2" */
    int op;           /* internal to op_cases.c */
    int n_in, n_out;
    oc_arr in[OC_MAX_IN], out[OC_MAX_OUT];
    int64_t N, K, H, E;
} oc_case;

/* Fills cases[] (room for OC_COUNT) with problems of N tokens, top-k K,
 * hidden size H and E experts (K <= E), from a fixed seed; returns the count. */
enum { OC_COUNT = 13 };
int oc_make(oc_case *cases, int64_t N, int64_t K, int64_t H, int64_t E, uint64_t seed);
void oc_free(oc_case *cases, int n);

/* Phase 1 of case c on its input and output descriptors (NULL for absent
 * ones); restore is passed as restoreShapeOptional where the operator has one. */
aclnnStatus oc_plan(const oc_case *c, aclTensor *const *in, aclTensor *const *out, const aclIntArray *restore,
                    uint64_t *workspaceSize, aclOpExecutor **executor);
/* Phase 2 of case c. */
aclnnStatus oc_run(const oc_case *c, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                   aclrtStream stream);
/* The descriptor of a (contiguous, storage = view) on data. */
aclTensor *oc_tensor(const oc_arr *a, void *data);
/* FNV-1a 64 of n bytes. */
uint64_t oc_hash(const void *p, size_t n);

#endif /* MOEFR_TESTS_OP_CASES_H_ */
