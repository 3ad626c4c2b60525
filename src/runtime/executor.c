/* executor.c - executor lifetime. Phase 1 creates and registers an executor;
 * phase 2 claims it from the registry (so a spent, destroyed or foreign
 * pointer is a status, never a crash), runs it, and frees it unless repeatable. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Held while an executor's liveness is checked and its fields are read or it
 * is unregistered: a registered executor is never freed, and only a thread
 * that unregistered it under this lock frees it. So a thread that finds it
 * live may read it until it lets go (no check-then-use race with a claim). */
static pthread_mutex_t g_exec_lock = PTHREAD_MUTEX_INITIALIZER;

aclOpExecutor *mf_executor_new(mf_op_kind kind, size_t plan_size, mf_run_fn run) {
    _Static_assert(sizeof(aclOpExecutor) <= 64, "plan offset");
    aclOpExecutor *e = NULL;
    if (posix_memalign((void **)&e, 64, 64 + plan_size) != 0) {
        mf_set_error("out of memory creating an executor");
        return NULL;
    }
    memset(e, 0, 64 + plan_size);
    e->kind = kind;
    e->run = run;
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

/* SPEC 4 (executors): a NULL, spent or destroyed executor is 161002 wherever it is passed. */
aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (executor == NULL)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable: executor is NULL");
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
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor: executor is NULL");
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

aclnnStatus mf_executor_execute(aclOpExecutor *e, mf_op_kind kind, const char *op_name,
                                void *workspace, uint64_t workspace_size, aclrtStream stream) {
    if (e == NULL) return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: executor is NULL", op_name);
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
    aclnnStatus rc;
    if (e->kind != kind)
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: executor %p was planned for another operator",
                     op_name, (void *)e);
    else if (workspace_size < e->workspace_size)
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: workspaceSize must be at least %llu, got %llu",
                     op_name, (unsigned long long)e->workspace_size, (unsigned long long)workspace_size);
    else if (workspace == NULL && e->workspace_size > 0)
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: workspace is NULL but %llu bytes are needed", op_name,
                     (unsigned long long)e->workspace_size);
    else if (stream != NULL && !mf_registry_has(&mf_streams, stream))
        rc = mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: stream %p is not a live stream", op_name, stream);
    else
        rc = e->run(mf_executor_plan(e), workspace);
    if (claimed) free(e);
    return rc;
}
