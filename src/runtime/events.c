/* events.c - aclrtEvent: a registered handle that a record stamps with the
 * CLOCK_MONOTONIC time. Work is synchronous, so whatever precedes a record is
 * done when the record happens; aclrtEventElapsedTime measures real time. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "acl/acl.h"
#include "internal.h"

struct mf_event {
    pthread_mutex_t lock; /* a record on one thread may race a query on another */
    uint32_t flag;
    bool recorded;
    uint64_t ns; /* CLOCK_MONOTONIC of the last record */
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static aclError new_event(const char *fn, aclrtEvent *event, uint32_t flag) {
    if (event == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: event is NULL", fn);
    struct mf_event *e = mf_calloc(1, sizeof *e);
    if (e == NULL) return mf_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", fn);
    pthread_mutex_init(&e->lock, NULL);
    e->flag = flag;
    if (!mf_registry_add(&mf_events, e)) {
        pthread_mutex_destroy(&e->lock);
        free(e);
        return mf_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", fn);
    }
    *event = e;
    return ACL_SUCCESS;
}

/* NULL: ACL_ERROR_INVALID_PARAM naming `what`; not live: same, "not a live event". */
static aclError check_event(const char *fn, const char *what, aclrtEvent event) {
    if (event == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL", fn, what);
    if (!mf_registry_has(&mf_events, event))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: %s %p is not a live event (destroyed?)", fn, what, event);
    return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent *event) { return new_event("aclrtCreateEvent", event, ACL_EVENT_SYNC); }

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
    const uint32_t known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE | ACL_EVENT_EXTERNAL;
    if (flag & ~known)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEventWithFlag: flag 0x%x has bits outside 0x%x",
                       (unsigned)flag, (unsigned)known);
    return new_event("aclrtCreateEventWithFlag", event, flag);
}

aclError aclrtDestroyEvent(aclrtEvent event) {
    if (event == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: event is NULL");
    if (!mf_registry_remove(&mf_events, event))
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: %p is not a live event (destroyed twice?)", event);
    struct mf_event *e = event;
    pthread_mutex_destroy(&e->lock);
    free(e);
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    aclError rc = check_event("aclrtRecordEvent", "event", event);
    if (rc == ACL_SUCCESS) rc = mf_check_stream("aclrtRecordEvent", stream);
    if (rc != ACL_SUCCESS) return rc;
    struct mf_event *e = event;
    uint64_t t = now_ns();
    pthread_mutex_lock(&e->lock);
    e->recorded = true;
    e->ns = t;
    pthread_mutex_unlock(&e->lock);
    return ACL_SUCCESS;
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
    aclError rc = check_event("aclrtResetEvent", "event", event);
    if (rc == ACL_SUCCESS) rc = mf_check_stream("aclrtResetEvent", stream);
    if (rc != ACL_SUCCESS) return rc;
    struct mf_event *e = event;
    pthread_mutex_lock(&e->lock);
    e->recorded = false;
    pthread_mutex_unlock(&e->lock);
    return ACL_SUCCESS;
}

static bool read_event(struct mf_event *e, uint64_t *ns) {
    pthread_mutex_lock(&e->lock);
    bool r = e->recorded;
    if (ns) *ns = e->ns;
    pthread_mutex_unlock(&e->lock);
    return r;
}

/* Nothing is ever pending: the work an event waits for is always complete. */
aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status) {
    aclError rc = check_event("aclrtQueryEvent", "event", event);
    if (rc != ACL_SUCCESS) return rc;
    if (status == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEvent: status is NULL");
    *status = ACL_EVENT_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
    aclError rc = check_event("aclrtQueryEventStatus", "event", event);
    if (rc != ACL_SUCCESS) return rc;
    if (status == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventStatus: status is NULL");
    *status = read_event(event, NULL) ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status) {
    aclError rc = check_event("aclrtQueryEventWaitStatus", "event", event);
    if (rc != ACL_SUCCESS) return rc;
    if (status == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventWaitStatus: status is NULL");
    *status = ACL_EVENT_WAIT_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) { return check_event("aclrtSynchronizeEvent", "event", event); }

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
    aclError rc = check_event("aclrtSynchronizeEventWithTimeout", "event", event);
    if (rc != ACL_SUCCESS) return rc;
    if (timeout < -1)
        return mf_fail(ACL_ERROR_INVALID_PARAM,
                       "aclrtSynchronizeEventWithTimeout: timeout must be -1 (forever) or >= 0 ms, got %d", (int)timeout);
    return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    aclError rc = mf_check_stream("aclrtStreamWaitEvent", stream);
    return rc != ACL_SUCCESS ? rc : check_event("aclrtStreamWaitEvent", "event", event);
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    static const char fn[] = "aclrtEventElapsedTime";
    if (ms == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "%s: ms is NULL", fn);
    aclError rc = check_event(fn, "startEvent", startEvent);
    if (rc == ACL_SUCCESS) rc = check_event(fn, "endEvent", endEvent);
    if (rc != ACL_SUCCESS) return rc;
    uint64_t t0, t1;
    if (!read_event(startEvent, &t0))
        return mf_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "%s: startEvent has not been recorded", fn);
    if (!read_event(endEvent, &t1))
        return mf_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "%s: endEvent has not been recorded", fn);
    if (t1 < t0)
        return mf_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL,
                       "%s: endEvent was recorded %.6f ms before startEvent", fn, (double)(t0 - t1) / 1e6);
    *ms = (float)((double)(t1 - t0) / 1e6);
    return ACL_SUCCESS;
}

aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp) {
    aclError rc = check_event("aclrtEventGetTimestamp", "event", event);
    if (rc != ACL_SUCCESS) return rc;
    if (timestamp == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtEventGetTimestamp: timestamp is NULL");
    uint64_t t;
    if (!read_event(event, &t))
        return mf_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "aclrtEventGetTimestamp: event has not been recorded");
    *timestamp = t / 1000u;
    return ACL_SUCCESS;
}
