/* fault.c - the library's one way to allocate memory and start threads, with
 * a test-only failure injector in front (docs/RELIABILITY.md, "Fault
 * injection"). Unarmed, each call costs one relaxed atomic load of g_kinds. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

static _Atomic unsigned g_kinds;       /* kinds being counted; 0 = unarmed */
static _Atomic long g_seen;            /* counted calls since arming */
static _Atomic long g_nth;             /* the call (1-based) that fails first */
static _Atomic bool g_every;           /* and every counted call after it */
static _Atomic long g_fired;           /* calls made to fail since arming */

void mf_fault_arm(unsigned kinds, long nth, bool every_after) {
    atomic_store_explicit(&g_kinds, 0, memory_order_relaxed);
    atomic_store_explicit(&g_seen, 0, memory_order_relaxed);
    atomic_store_explicit(&g_fired, 0, memory_order_relaxed);
    atomic_store_explicit(&g_nth, nth, memory_order_relaxed);
    atomic_store_explicit(&g_every, every_after, memory_order_relaxed);
    atomic_store_explicit(&g_kinds, nth > 0 ? kinds : 0u, memory_order_release);
}

void mf_fault_disarm(void) { atomic_store_explicit(&g_kinds, 0, memory_order_release); }

long mf_fault_seen(void) { return atomic_load_explicit(&g_seen, memory_order_acquire); }
long mf_fault_fired(void) { return atomic_load_explicit(&g_fired, memory_order_acquire); }

__attribute__((noinline)) static bool armed_hit(void) {
    const long n = atomic_fetch_add_explicit(&g_seen, 1, memory_order_acq_rel) + 1;
    const long nth = atomic_load_explicit(&g_nth, memory_order_relaxed);
    const bool hit = n == nth || (n > nth && atomic_load_explicit(&g_every, memory_order_relaxed));
    if (hit) atomic_fetch_add_explicit(&g_fired, 1, memory_order_acq_rel);
    return hit;
}

bool mf_fault_hit(unsigned kind) {
    if (MF_LIKELY((atomic_load_explicit(&g_kinds, memory_order_relaxed) & kind) == 0)) return false;
    return armed_hit();
}

void *mf_malloc(size_t size) { return mf_fault_hit(MF_FAULT_HEAP) ? NULL : malloc(size); }

void *mf_calloc(size_t n, size_t size) { return mf_fault_hit(MF_FAULT_HEAP) ? NULL : calloc(n, size); }

void *mf_memalign(size_t align, size_t size) {
    void *p = NULL;
    if (mf_fault_hit(MF_FAULT_HEAP) || posix_memalign(&p, align, size) != 0) return NULL;
    return p;
}

int mf_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    if (mf_fault_hit(MF_FAULT_THREAD)) return EAGAIN;
    return pthread_create(t, attr, fn, arg);
}
