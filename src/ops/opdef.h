/* opdef.h - an operator's tensors declared once, as CANN's op_host *_def.cpp
 * tables declare them: names in signature order (inputs, then outputs),
 * which are required, which outputs must be contiguous, and the dtype
 * columns per product. One shared checker turns a call's descriptors into
 * CANN's phase-1 codes and one-line messages; an operator adds only its
 * shape relations (CANN's tiling checks, 561002), its plan and its run. */
#ifndef MOEFR_OPS_OPDEF_H_
#define MOEFR_OPS_OPDEF_H_

#include "internal.h"

/* Returns from the calling function with the status of `call` unless it succeeded. */
#define MF_TRY(call)                                \
    do {                                            \
        aclnnStatus rc_ = (call);                   \
        if (rc_ != ACLNN_SUCCESS) return rc_;       \
    } while (0)

/* Takes `bytes`, rounded up to 64, from the workspace being laid out at
 * *used; returns their offset. */
static inline uint64_t mf_carve(uint64_t *used, uint64_t bytes) {
    uint64_t at = *used;
    *used += (bytes + 63) & ~(uint64_t)63;
    return at;
}

#define MF_T_REQUIRED 1u /* NULL is ACLNN_ERR_PARAM_NULLPTR */
#define MF_T_CONTIG 2u   /* an output that must be contiguous */

/* A dtype column entry: an aclDataType, or MF_DT_ANY (not constrained). */
#define MF_DT_ANY (-2)
typedef int8_t mf_dtcol[MF_EXEC_SLOTS];

typedef struct mf_op_def {
    const char *name;    /* "aclnnMoeFinalizeRoutingV2Grad" */
    mf_op_kind kind;
    int n_in, n_out;
    const char *const *names; /* n_in + n_out, CANN's parameter names */
    const unsigned *flags;    /* n_in + n_out */
    /* CANN's dtype table: a call is accepted when some column matches every
     * present tensor. `cols` is Ascend 950's (the default), `cols_a2` the
     * A2/A3 rows that MOEFR_SOC=ascend910b selects. */
    const mf_dtcol *cols;
    int ncols;
    const mf_dtcol *cols_a2;
    int ncols_a2;
} mf_op_def;

/* Phase 1, the part CANN's generated wrapper does before tiling: required
 * pointers (161001), live descriptors, the dtype table, ND format and
 * contiguous outputs (161002). t has n_in + n_out entries. */
aclnnStatus mf_op_check(const mf_op_def *def, const aclTensor *const *t, const uint64_t *workspaceSize,
                        aclOpExecutor *const *executor);
/* True when every output present has no elements: CANN's engine then
 * returns success with workspace 0 without tiling. */
bool mf_op_outputs_empty(const mf_op_def *def, const aclTensor *const *t);
/* Phase 1's end: an executor holding copies of t and plan_size bytes of
 * plan, registered and returned with its workspace size. Bit i of unused:
 * tensor i is given but ignored (phase 2 neither checks nor passes it). */
aclnnStatus mf_op_publish(const mf_op_def *def, const aclTensor *const *t, unsigned unused, const void *plan,
                          size_t plan_size, mf_run_fn run, uint64_t workspace, uint64_t *workspaceSize,
                          aclOpExecutor **executor);

/* A shared plan reads tensors by role; a front end's executor keeps its own
 * signature order. at[role] is the signature slot of each role (-1: the
 * front end has none): t[role] and nm[role] (when nm is not NULL) receive
 * the tensor and the front end's parameter name. */
static inline void mf_by_role(const int8_t *at, int nroles, const aclTensor *const *slots,
                              const char *const *names, const aclTensor **t, const char **nm) {
    for (int r = 0; r < nroles; r++) {
        t[r] = at[r] < 0 ? NULL : slots[at[r]];
        if (nm) nm[r] = at[r] < 0 ? "(none)" : names[at[r]];
    }
}

/* ---- the operator registry: one entry per public operator ----
 * Each operator's source file defines its entry at its end, from its DEF:
 * the table of its public signature's tensors (inputs, then outputs, as the
 * GetWorkspaceSize call takes them), its attributes with a sensible range,
 * and both phases behind uniform calls. Tools that must cover every operator
 * (fuzz/fuzz_ops.c, tests/test_registry.c) walk mf_op_entries(). */
typedef enum { MF_ATTR_INT64, MF_ATTR_BOOL, MF_ATTR_DOUBLE, MF_ATTR_INT_ARRAY } mf_attr_kind;
typedef struct mf_attr_desc {
    const char *name; /* CANN's parameter name */
    mf_attr_kind kind;
    int64_t lo, hi;   /* a sensible range (int64 value, bool 0..1, int-array length) */
} mf_attr_desc;
/* One attribute's value: i for int64 and bool, d for double, arr (may be NULL) for an int array. */
typedef struct mf_attr_val {
    int64_t i;
    double d;
    const aclIntArray *arr;
} mf_attr_val;
#define MF_ATTR_MAX 9
typedef aclnnStatus (*mf_gws_thunk)(const aclTensor *const *t, const mf_attr_val *a, uint64_t *workspaceSize,
                                    aclOpExecutor **executor);
typedef aclnnStatus (*mf_phase2_fn)(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream);
typedef struct mf_op_entry {
    const mf_op_def *sig; /* the public signature's tensors; sig->name and sig->kind name the operator */
    const mf_attr_desc *attrs;
    int nattr;
    mf_gws_thunk gws; /* the public GetWorkspaceSize with t[] in signature order and a[] in attrs order */
    mf_phase2_fn run; /* the public phase 2 */
} mf_op_entry;
/* Every registered operator; *n receives the count. */
const mf_op_entry *const *mf_op_entries(int *n);
/* The entry of one kind, or NULL. */
const mf_op_entry *mf_op_entry_of(mf_op_kind kind);

#endif /* MOEFR_OPS_OPDEF_H_ */
