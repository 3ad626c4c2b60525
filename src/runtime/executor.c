/* executor.c - executor lifetime and address binding. Phase 1 creates an
 * executor holding copies of the operator's tensor descriptors and registers
 * it; phase 2 claims it from the registry (so a spent, destroyed or foreign
 * pointer is a status, never a crash), checks the engine's rules, runs it on
 * the addresses the setters left, and frees it unless repeatable. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Held while an executor's liveness is checked and its fields are read or
 * written, or it is unregistered: a registered executor is never freed, and
 * only a thread that unregistered it under this lock frees it. So a thread
 * that finds it live may use it until it lets go (no check-then-use race). */
static pthread_mutex_t g_exec_lock = PTHREAD_MUTEX_INITIALIZER;

aclOpExecutor *mf_executor_new(mf_op_kind kind, size_t plan_size, mf_run_fn run, int n_in, int n_out,
                               const aclTensor *const *t, const char *const *names) {
    aclOpExecutor *e = NULL;
    if (n_in < 0 || n_out < 0 || n_in + n_out > MF_EXEC_SLOTS ||
        (e = mf_memalign(64, MF_EXEC_PLAN_AT + plan_size)) == NULL) {
        mf_set_error("out of memory creating an executor");
        return NULL;
    }
    memset(e, 0, MF_EXEC_PLAN_AT + plan_size);
    e->kind = kind;
    e->run = run;
    e->n_in = n_in;
    e->n_out = n_out;
    e->names = names;
    for (int i = 0; i < n_in + n_out; i++)
        if (t[i] != NULL) {
            e->tensors[i] = *t[i];
            e->slot[i] = &e->tensors[i];
            /* one tensor in two slots (an in-place operator's yRef is an input and an output):
             * one descriptor, so a setter moving either moves the tensor */
            for (int j = 0; j < i; j++)
                if (t[j] == t[i]) {
                    e->slot[i] = e->slot[j];
                    break;
                }
        }
    return e;
}

aclnnStatus mf_executor_publish(aclOpExecutor *e, aclOpExecutor **out) {
    if (!mf_registry_add(&mf_executors, e)) {
        free(e);
        return mf_fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "out of memory registering an executor");
    }
    *out = e;
    return ACLNN_SUCCESS;
}

/* CANN's engine answers a NULL executor here with ACLNN_ERR_INNER_NULLPTR;
 * a spent, destroyed or foreign one (which CANN would dereference) is 161002. */
aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (executor == NULL)
        return mf_fail(ACLNN_ERR_INNER_NULLPTR, "aclSetAclOpExecutorRepeatable: executor is NULL");
    pthread_mutex_lock(&g_exec_lock);
    bool live = mf_registry_has(&mf_executors, executor);
    if (live) executor->repeatable = true;
    pthread_mutex_unlock(&g_exec_lock);
    if (!live)
        return mf_fail(ACLNN_ERR_PARAM_INVALID,
                       "aclSetAclOpExecutorRepeatable: %p is not a live executor (spent or destroyed)",
                       (void *)executor);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (executor == NULL)
        return mf_fail(ACLNN_ERR_INNER_NULLPTR, "aclDestroyAclOpExecutor: executor is NULL");
    pthread_mutex_lock(&g_exec_lock);
    bool removed = mf_registry_remove(&mf_executors, executor);
    pthread_mutex_unlock(&g_exec_lock);
    if (!removed)
        return mf_fail(ACLNN_ERR_PARAM_INVALID,
                       "aclDestroyAclOpExecutor: %p is not a live executor (spent or destroyed)",
                       (void *)executor);
    free(executor);
    return ACLNN_SUCCESS;
}

/* The setters (CANN's order: the tensor takes addr first, even when the
 * executor or index is then refused). `which` 0 counts inputs, 1 outputs,
 * 2 inputs then outputs; absent optional inputs keep their index. */
static aclnnStatus set_addr(const char *fn, aclOpExecutor *e, int which, size_t index, aclTensor *tensor,
                            void *addr) {
    if (tensor == NULL) return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: tensor is NULL", fn);
    if (!mf_tensor_live(tensor))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: tensor %p is not a live aclTensor", fn, (void *)tensor);
    pthread_mutex_lock(&g_exec_lock);
    tensor->data = addr;
    pthread_mutex_unlock(&g_exec_lock);
    if (e == NULL) return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: executor is NULL", fn);
    aclnnStatus rc = ACLNN_SUCCESS;
    pthread_mutex_lock(&g_exec_lock);
    if (!mf_registry_has(&mf_executors, e)) {
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live executor (spent or destroyed)", fn, (void *)e);
    } else {
        const size_t first = which == 1 ? (size_t)e->n_in : 0;
        const size_t count = which == 0 ? (size_t)e->n_in : which == 1 ? (size_t)e->n_out
                                                                      : (size_t)(e->n_in + e->n_out);
        const char *kind = which == 0 ? "input" : which == 1 ? "output" : "tensor";
        if (index >= count)
            rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s index %zu is out of range [0, %zu)", fn, kind, index,
                         count);
        else if (e->slot[first + index] == NULL)
            rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s %zu (%s) was NULL at phase 1; its address cannot be set",
                         fn, kind, index, e->names[first + index]);
        else
            e->slot[first + index]->data = addr;
    }
    pthread_mutex_unlock(&g_exec_lock);
    return rc;
}

aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("aclSetInputTensorAddr", executor, 0, index, tensor, addr);
}
aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("aclSetOutputTensorAddr", executor, 1, index, tensor, addr);
}
aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("aclSetTensorAddr", executor, 2, index, tensor, addr);
}
/* CANN exports the same functions with a capital A as well. */
aclnnStatus AclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("AclSetInputTensorAddr", executor, 0, index, tensor, addr);
}
aclnnStatus AclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("AclSetOutputTensorAddr", executor, 1, index, tensor, addr);
}
aclnnStatus AclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("AclSetTensorAddr", executor, 2, index, tensor, addr);
}

/* SPEC 4, phase 2, in the engine's order: a NULL executor or a NULL
 * workspace of non-zero size is 161001, a workspace smaller than asked
 * 161002; then moefr's own: a dead or foreign executor or stream 161002, a
 * non-empty tensor whose address is still NULL 161001 (never dereferenced). */
aclnnStatus mf_executor_execute(aclOpExecutor *e, mf_op_kind kind, const char *op_name,
                                void *workspace, uint64_t workspace_size, aclrtStream stream) {
    if (e == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", op_name);
    /* A single-use executor is claimed (removed) here, so a concurrent or later
     * second run finds it gone. A repeatable one stays registered. */
    bool claimed = false;
    pthread_mutex_lock(&g_exec_lock);
    bool live = mf_registry_has(&mf_executors, e);
    if (live && !e->repeatable) claimed = mf_registry_remove(&mf_executors, e);
    pthread_mutex_unlock(&g_exec_lock);
    if (!live)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: executor %p is not live (spent or destroyed)",
                       op_name, (void *)e);
    aclnnStatus rc = ACLNN_SUCCESS;
    if (e->kind != kind)
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: executor %p was planned for another operator",
                     op_name, (void *)e);
    else if (workspace == NULL && workspace_size > 0)
        rc = mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspace is NULL but workspaceSize is %llu", op_name,
                     (unsigned long long)workspace_size);
    else if (workspace_size < e->workspace_size)
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: workspaceSize must be at least %llu, got %llu",
                     op_name, (unsigned long long)e->workspace_size, (unsigned long long)workspace_size);
    else if (stream != NULL && !mf_registry_has(&mf_streams, stream))
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: stream %p is not a live stream", op_name, stream);
    /* The operator sees the tensors it reads; those it ignores (as CANN
     * does) are absent to it and may keep a NULL address. */
    const aclTensor *t[MF_EXEC_SLOTS];
    for (int i = 0; i < e->n_in + e->n_out; i++) {
        t[i] = (e->unused >> i) & 1u ? NULL : e->slot[i];
        if (rc == ACLNN_SUCCESS && t[i] != NULL && t[i]->numel > 0 && t[i]->data == NULL)
            rc = mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s has %lld elements but its address is NULL", op_name,
                         e->names[i], (long long)t[i]->numel);
    }
    /* An operator that asked for no workspace still forms workspace + 0 for
     * its (empty) scratch areas; NULL + 0 is undefined behaviour in C, so it
     * gets an empty object of its own instead of NULL (nothing is written). */
    static _Alignas(64) char no_workspace[64];
    if (rc == ACLNN_SUCCESS) rc = e->run(mf_executor_plan(e), t, workspace != NULL ? workspace : no_workspace);
    if (claimed) free(e);
    return rc;
}

/* The tensor-list forms: the finalize-routing operators have no tensor-list
 * parameter, so after CANN's NULL checks every irIndex is out of range. */
static aclnnStatus set_dynamic(const char *fn, aclOpExecutor *e, size_t ir, aclTensorList *tensors) {
    if (tensors == NULL) return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: tensors is NULL", fn);
    if (e == NULL) return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: executor is NULL", fn);
    pthread_mutex_lock(&g_exec_lock);
    const bool live = mf_registry_has(&mf_executors, e);
    pthread_mutex_unlock(&g_exec_lock);
    if (!live)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live executor (spent or destroyed)", fn, (void *)e);
    return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: irIndex %zu is not a tensor-list parameter of this operator", fn, ir);
}

#define MF_DYNAMIC(name)                                                                                     \
    aclnnStatus name(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex, aclTensorList *tensors, \
                     void *addr) {                                                                           \
        (void)relativeIndex, (void)addr;                                                                     \
        return set_dynamic(#name, executor, irIndex, tensors);                                               \
    }
MF_DYNAMIC(aclSetDynamicInputTensorAddr)
MF_DYNAMIC(aclSetDynamicOutputTensorAddr)
MF_DYNAMIC(aclSetDynamicTensorAddr)
MF_DYNAMIC(AclSetDynamicInputTensorAddr)
MF_DYNAMIC(AclSetDynamicOutputTensorAddr)
MF_DYNAMIC(AclSetDynamicTensorAddr)
