/* registry.c - sets of live handles (tensors, executors, streams, allocations)
 * so that a stale, foreign or twice-freed pointer gets a status, not a crash.
 * Open addressing with backward-shift deletion; one mutex per set. */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

struct mf_registry {
    pthread_mutex_t lock;
    uintptr_t *slots; /* 0 = empty */
    size_t cap;       /* power of two, or 0 */
    size_t count;
};

mf_registry mf_tensors = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_executors = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_streams = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_allocs = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_scalars = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_arrays = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_lists = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_contexts = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_events = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
mf_registry mf_comms = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static size_t slot_of(uintptr_t key, size_t cap) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static size_t find(const mf_registry *r, uintptr_t key) {
    size_t i = slot_of(key, r->cap);
    while (r->slots[i] != 0 && r->slots[i] != key) i = (i + 1) & (r->cap - 1);
    return i;
}

static bool grow(mf_registry *r) {
    size_t cap = r->cap ? r->cap * 2 : 64;
    uintptr_t *slots = mf_calloc(cap, sizeof *slots);
    if (slots == NULL) return false;
    for (size_t i = 0; i < r->cap; i++) {
        uintptr_t k = r->slots[i];
        if (k == 0) continue;
        size_t j = slot_of(k, cap);
        while (slots[j] != 0) j = (j + 1) & (cap - 1);
        slots[j] = k;
    }
    free(r->slots);
    r->slots = slots;
    r->cap = cap;
    return true;
}

bool mf_registry_add(mf_registry *r, const void *p) {
    bool ok = true;
    pthread_mutex_lock(&r->lock);
    if ((r->count + 1) * 2 > r->cap) ok = grow(r);
    if (ok) {
        size_t i = find(r, (uintptr_t)p);
        if (r->slots[i] == 0) {
            r->slots[i] = (uintptr_t)p;
            r->count++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

bool mf_registry_has(mf_registry *r, const void *p) {
    bool has = false;
    if (p == NULL) return false;
    pthread_mutex_lock(&r->lock);
    if (r->cap) has = r->slots[find(r, (uintptr_t)p)] != 0;
    pthread_mutex_unlock(&r->lock);
    return has;
}

bool mf_registry_remove(mf_registry *r, const void *p) {
    bool found = false;
    if (p == NULL) return false;
    pthread_mutex_lock(&r->lock);
    if (r->cap) {
        size_t i = find(r, (uintptr_t)p);
        if (r->slots[i] != 0) {
            found = true;
            r->slots[i] = 0;
            r->count--;
            /* backward-shift the cluster that follows so lookups stay correct */
            size_t j = i;
            for (;;) {
                j = (j + 1) & (r->cap - 1);
                if (r->slots[j] == 0) break;
                size_t home = slot_of(r->slots[j], r->cap);
                /* move slots[j] into the hole when its home is not in (i, j] */
                bool between = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
                if (!between) {
                    r->slots[i] = r->slots[j];
                    r->slots[j] = 0;
                    i = j;
                }
            }
            if (r->count == 0) { /* an empty set owns no memory */
                free(r->slots);
                r->slots = NULL;
                r->cap = 0;
            }
        }
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

size_t mf_registry_count(mf_registry *r) {
    pthread_mutex_lock(&r->lock);
    size_t n = r->count;
    pthread_mutex_unlock(&r->lock);
    return n;
}
