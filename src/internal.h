/* internal.h - what the runtime, the operators and the kernels share.
 * Nothing here is public; the public API is the CANN header set in include/. */
#ifndef MOEFR_INTERNAL_H_
#define MOEFR_INTERNAL_H_

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aclnn/aclnn_base.h"

#define MF_MAX_DIMS 8

#if defined(__GNUC__)
#define MF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MF_LIKELY(x) __builtin_expect(!!(x), 1)
#define MF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define MF_PRINTF(a, b)
#define MF_LIKELY(x) (x)
#define MF_UNLIKELY(x) (x)
#endif

/* ---- errors and logging (error.c) ---- */
enum { MF_LOG_NONE = 0, MF_LOG_ERROR, MF_LOG_WARN, MF_LOG_INFO, MF_LOG_DEBUG };
/* Replaces this thread's recent error message and logs it at error level. */
void mf_set_error(const char *fmt, ...) MF_PRINTF(1, 2);
/* Same, returning status: `return mf_fail(161002, "...", ...);`. */
int mf_fail(int status, const char *fmt, ...) MF_PRINTF(2, 3);
void mf_log(int level, const char *fmt, ...) MF_PRINTF(2, 3);
int mf_log_level(void);

/* ---- allocation and threads (fault.c) ----
 * Every allocation the library makes goes through mf_malloc / mf_calloc /
 * mf_memalign (released with free), and every thread it starts
 * through mf_thread_create. In front of each sits a failure injector for the
 * tests (docs/RELIABILITY.md, "Fault injection"): unarmed it costs one relaxed
 * atomic load; armed, the calls of the armed kinds are counted process-wide
 * and the nth (1-based) fails, and every later one too when every_after.
 * Nothing here is exported (hidden visibility); tests link moefr_static. */
enum { MF_FAULT_HEAP = 1u, MF_FAULT_THREAD = 2u };
void mf_fault_arm(unsigned kinds, long nth, bool every_after); /* nth <= 0 disarms */
void mf_fault_disarm(void);
long mf_fault_seen(void);  /* calls of the armed kinds since arming */
long mf_fault_fired(void); /* of those, the ones made to fail */
bool mf_fault_hit(unsigned kind); /* true: the caller must fail this call */
void *mf_malloc(size_t size);
void *mf_calloc(size_t n, size_t size);
void *mf_memalign(size_t align, size_t size); /* align: a power of two >= sizeof(void *) */
/* pthread_create, or EAGAIN when the injector says so. */
int mf_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* ---- checked int64 arithmetic ---- */
static inline bool mf_mul_ok(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool mf_add_ok(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
/* dims[from..to) multiplied; false on overflow (an empty tensor's other dims
 * are bounded by no storage, so their product can pass int64) */
static inline bool mf_dims_prod(const int64_t *dims, int from, int to, int64_t *out) {
    *out = 1;
    for (int d = from; d < to; d++)
        if (!mf_mul_ok(*out, dims[d], out)) return false;
    return true;
}

/* ---- dtypes ---- */
/* Element size in bytes, or 0 for a dtype moefr does not know. */
size_t mf_dtype_size(int dtype);
const char *mf_dtype_name(int dtype);
bool mf_format_known(int format);
const char *mf_format_name(int format);

/* ---- tensors (tensor.c) ---- */
struct aclTensor {
    aclDataType dtype;
    aclFormat format;
    int32_t ndim;
    int64_t dims[MF_MAX_DIMS];
    int64_t strides[MF_MAX_DIMS]; /* in elements */
    int64_t offset;               /* in elements */
    int64_t numel;                /* product of dims */
    int64_t storage_numel;        /* product of storageDims */
    int32_t storage_ndim;
    int64_t storage_dims[MF_MAX_DIMS];
    void *data;
};
/* True when t is a tensor aclCreateTensor returned and nobody destroyed. */
bool mf_tensor_live(const aclTensor *t);
/* Row-major contiguous, ignoring strides of size-1 dims; empty counts as contiguous. */
bool mf_tensor_contiguous(const aclTensor *t);
/* Address of the element at flat view position 0 (index all zeros). */
static inline char *mf_tensor_base(const aclTensor *t) {
    if (t->data == NULL) return NULL; /* an empty tensor may have no address (no arithmetic on NULL) */
    return (char *)t->data + t->offset * (int64_t)mf_dtype_size(t->dtype);
}
/* "(2, 3, 4)" into buf. */
const char *mf_shape_str(const aclTensor *t, char *buf, size_t n);

/* ---- runtime (runtime.c) ---- */
/* ACL_SUCCESS for NULL (the default stream) or a live stream; else a message and ACL_ERROR_INVALID_PARAM. */
int mf_check_stream(const char *fn, aclrtStream stream);

/* ---- aclnn objects (objects.c) ---- */
struct aclScalar {
    aclDataType dtype;
    unsigned char bytes[16] __attribute__((aligned(16))); /* the value, aclDataTypeSize(dtype) bytes */
};
/* aclIntArray, aclFloatArray, aclBoolArray share one layout: n values follow. */
typedef enum { MF_ARRAY_INT = 1, MF_ARRAY_FLOAT = 2, MF_ARRAY_BOOL = 3 } mf_array_kind;
typedef struct mf_array {
    mf_array_kind kind;
    uint64_t n;
    void *values; /* int64_t[n], float[n] or bool[n]; NULL when n == 0 */
} mf_array;
/* aclTensorList and aclScalarList: n owned element pointers (elements may be NULL). */
typedef enum { MF_LIST_TENSOR = 1, MF_LIST_SCALAR = 2 } mf_list_kind;
typedef struct mf_list {
    mf_list_kind kind;
    uint64_t n;
    const void **items;
} mf_list;

/* Unregisters and frees a tensor list without destroying its elements (an
 * internal list built over tensors someone else owns: the registry thunks). */
void mf_list_release(const void *list);

/* ---- pointer registry (registry.c): a mutex-guarded hash set ---- */
typedef struct mf_registry mf_registry;
extern mf_registry mf_tensors, mf_executors, mf_streams, mf_allocs;
/* host API objects (objects.c, context.c) */
extern mf_registry mf_scalars, mf_arrays, mf_lists, mf_contexts, mf_events;
/* HCCL communicator ranks (src/comm/hccl.c) */
extern mf_registry mf_comms;
bool mf_registry_add(mf_registry *r, const void *p);    /* false on OOM */
bool mf_registry_remove(mf_registry *r, const void *p); /* false if absent */
bool mf_registry_has(mf_registry *r, const void *p);
size_t mf_registry_count(mf_registry *r); /* live entries, for tests */

/* ---- executors (executor.c) ---- */
typedef enum {
    MF_OP_GRAD = 1,
    MF_OP_FORWARD = 2,
    /* the routing family (SPEC 9) */
    MF_OP_INIT_ROUTING_V2 = 3,
    MF_OP_INIT_ROUTING_V2_GRAD = 4,
    MF_OP_COMPUTE_EXPERT_TOKENS = 5,
    MF_OP_TOKEN_PERMUTE = 6,
    MF_OP_TOKEN_PERMUTE_GRAD = 7,
    MF_OP_INIT_ROUTING = 8,    /* aclnnMoeInitRouting (V1) */
    MF_OP_FINALIZE_ROUTING = 9, /* aclnnMoeFinalizeRouting (V1), a front end of the forward */
    MF_OP_TOKEN_UNPERMUTE = 10,
    MF_OP_TOKEN_UNPERMUTE_GRAD = 11,
    MF_OP_GATING_TOP_K_SOFTMAX = 12,
    MF_OP_GATING_TOP_K_SOFTMAX_V2 = 13,
    /* the expert computation (SPEC 10) */
    MF_OP_SWIGLU = 14,
    MF_OP_SWIGLU_GRAD = 15,
    MF_OP_GROUPED_MATMUL = 16, /* V1 */
    MF_OP_GROUPED_MATMUL_V2 = 17,
    MF_OP_GROUPED_MATMUL_V3 = 18,
    MF_OP_GROUPED_MATMUL_V4 = 19,
    MF_OP_GROUPED_MATMUL_V5 = 20,
    MF_OP_RE_ROUTING = 21, /* aclnnMoeReRouting */
    MF_OP_INIT_ROUTING_V3 = 22,
    MF_OP_INIT_ROUTING_QUANT = 23,    /* aclnnMoeInitRoutingQuant */
    MF_OP_INIT_ROUTING_QUANT_V2 = 24, /* aclnnMoeInitRoutingQuantV2 */
    MF_OP_TOKEN_PERMUTE_WITH_ROUTING_MAP = 25,
    MF_OP_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD = 26,
    MF_OP_TOKEN_UNPERMUTE_WITH_ROUTING_MAP = 27,
    MF_OP_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD = 28,
    MF_OP_TOKEN_PERMUTE_WITH_EP = 29,
    MF_OP_TOKEN_PERMUTE_WITH_EP_GRAD = 30,
    MF_OP_TOKEN_UNPERMUTE_WITH_EP = 31,
    MF_OP_TOKEN_UNPERMUTE_WITH_EP_GRAD = 32,
    MF_OP_GATING_TOP_K = 33,
    MF_OP_FUSED_TOPK = 34,
    MF_OP_GROUPED_MATMUL_ADD = 35,    /* aclnnGroupedMatmulAdd (SPEC 11) */
    MF_OP_GROUPED_MATMUL_ADD_V2 = 36, /* aclnnGroupedMatmulAddV2 */
    MF_OP_DYNAMIC_QUANT = 37, /* aclnnDynamicQuant (V1), ops-nn */
    MF_OP_DYNAMIC_QUANT_V2 = 38,
    MF_OP_DYNAMIC_QUANT_V3 = 39,
    MF_OP_DYNAMIC_QUANT_V4 = 40,
    MF_OP_GROUPED_MATMUL_SWIGLU_QUANT = 41, /* aclnnGroupedMatmulSwigluQuant (SPEC 11) */
    MF_OP_GROUPED_MATMUL_SWIGLU_QUANT_WEIGHT_NZ = 42,
    MF_OP_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ = 43, /* aclnnGroupedMatmulFinalizeRoutingWeightNz */
    MF_OP_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ_V2 = 44,
    MF_OP_TRANS_QUANT_PARAM_V2 = 45, /* aclnnTransQuantParamV2, ops-nn */
    MF_OP_TRANS_QUANT_PARAM_V3 = 46,
    MF_OP_DEQUANT_SWIGLU_QUANT = 47, /* aclnnDequantSwigluQuant (V1), ops-nn */
    MF_OP_DEQUANT_SWIGLU_QUANT_V2 = 48,
    MF_OP_KIND_END /* one past the last kind: keep it last (tests/test_registry.c walks 1..END-1) */
} mf_op_kind;
/* The most tensors (inputs + outputs) an operator's signature has. */
#define MF_EXEC_SLOTS 13 /* aclnnGroupedMatmulFinalizeRoutingWeightNzV2: 12 inputs and out */
/* Phase 2 of an operator: t[i] is the executor's copy of the i-th tensor of
 * the signature (inputs, then outputs), NULL for an absent optional one, with
 * its data address as the setters left it. */
typedef aclnnStatus (*mf_run_fn)(const void *plan, const aclTensor *const *t, void *workspace);
struct aclOpExecutor {
    mf_op_kind kind;
    bool repeatable;
    int n_in, n_out;
    uint64_t workspace_size;
    mf_run_fn run;
    const char *const *names; /* signature names, for messages */
    unsigned unused;          /* bit i: slot i is given but the operator ignores it */
    aclTensor *slot[MF_EXEC_SLOTS]; /* &tensors[i], or NULL when absent */
    aclTensor tensors[MF_EXEC_SLOTS];
    /* plan bytes follow at MF_EXEC_PLAN_AT, 64-byte aligned */
};
#define MF_EXEC_PLAN_AT ((sizeof(struct aclOpExecutor) + 63) & ~(size_t)63)
static inline void *mf_executor_plan(aclOpExecutor *e) { return (char *)e + MF_EXEC_PLAN_AT; }
/* Allocates an executor holding copies of the n_in + n_out descriptors t[]
 * (NULL entries stay absent) and plan_size zeroed plan bytes; NULL on OOM
 * (message set). names[] must outlive it (static). */
aclOpExecutor *mf_executor_new(mf_op_kind kind, size_t plan_size, mf_run_fn run, int n_in, int n_out,
                               const aclTensor *const *t, const char *const *names);
/* Makes e visible to phase 2 (registers it); on failure frees it. */
aclnnStatus mf_executor_publish(aclOpExecutor *e, aclOpExecutor **out);
/* Phase 2 common path: checks executor, workspace, stream and that every
 * non-empty tensor has data, runs, and releases a single-use executor
 * whatever the outcome. op_name is for messages. */
aclnnStatus mf_executor_execute(aclOpExecutor *e, mf_op_kind kind, const char *op_name,
                                void *workspace, uint64_t workspace_size, aclrtStream stream);
/* Workspace size needed to carve `bytes` of 64-byte-aligned scratch from any pointer. */
static inline uint64_t mf_workspace_with_slack(uint64_t bytes) { return bytes ? bytes + 64 : 0; }
static inline void *mf_align64(void *p) {
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* ---- environment (env.c) ---- */
/* MOEFR_SOC=ascend910b: A2/A3 dtype rules (scales must share gradY's dtype). */
bool mf_soc_strict(void);
/* MOEFR_STRICT=1 (read once): the index checks CANN documents but does not
 * perform (values in range, no repeats); a debugging aid, off by default. */
bool mf_index_strict(void);
/* MOEFR_GRAD_ORDER (read once): the backward's traversal, auto by default;
 * token or row force one (tests run both; the results are the same bits). */
enum { MF_ORDER_AUTO = 0, MF_ORDER_TOKEN = 1, MF_ORDER_ROW = 2 };
int mf_grad_order(void);

/* ---- parallel loops (pool.c) ---- */
/* Calls fn(ctx, begin, end) over disjoint chunks covering [0, n), on the
 * calling thread plus the pool's workers; returns when all chunks are done.
 * Below `serial_below` work units the call stays on the calling thread. */
typedef void (*mf_range_fn)(void *ctx, int64_t begin, int64_t end);
void mf_parallel_for(int64_t n, mf_range_fn fn, void *ctx, int64_t serial_below);
/* The least stack a pool worker gets (pool.c takes RLIMIT_STACK above it).
 * scripts/check-frames.sh reads this line: no frame of the library may pass
 * 1/16 of it (64 KiB), leaving 15/16 for the chain of calls, at -O0 and
 * under ASan too. */
#define MF_WORKER_STACK_MIN ((size_t)1 << 20)
int mf_num_threads(void);
/* Workers the pool has started (0 before its first parallel loop or when none could be). */
int mf_pool_workers(void);

#endif /* MOEFR_INTERNAL_H_ */
