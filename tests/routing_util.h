/* routing_util.h - helpers shared by the routing family's tests: a seeded
 * RNG (MOEFR_TEST_SEED replays), poisoned buffers with guard bytes, strided
 * aclTensor views over a padded copy, and the oracle's stable sort (qsort on
 * (key, position) pairs: a comparison sort, independent of src/ops/sort.c). */
#ifndef MOEFR_TESTS_ROUTING_UTIL_H_
#define MOEFR_TESTS_ROUTING_UTIL_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

static uint64_t ru_state;
static inline uint64_t ru_next(void) { /* xorshift64* */
    ru_state ^= ru_state >> 12;
    ru_state ^= ru_state << 25;
    ru_state ^= ru_state >> 27;
    return ru_state * 0x2545F4914F6CDD1DULL;
}
static inline void ru_seed(const char *name) {
    const char *e = getenv("MOEFR_TEST_SEED");
    uint64_t s = e && *e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    if (s == 0) s = 1;
    ru_state = s;
    printf("%s: seed %llu (replay with MOEFR_TEST_SEED=%llu)\n", name, (unsigned long long)s,
           (unsigned long long)s);
}
static inline int64_t ru_int(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(ru_next() % (uint64_t)(hi - lo + 1));
}

#define RU_POISON 0xA5
#define RU_GUARD 64
/* n bytes of poison plus RU_GUARD guard bytes after them. */
static inline unsigned char *ru_poisoned(size_t n) {
    unsigned char *p = malloc(n + RU_GUARD);
    memset(p, RU_POISON, n + RU_GUARD);
    return p;
}
static inline int ru_guard_ok(const unsigned char *p, size_t n) {
    for (size_t i = n; i < n + RU_GUARD; i++)
        if (p[i] != RU_POISON) return 0;
    return 1;
}
static inline int ru_all_poison(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != RU_POISON) return 0;
    return 1;
}

/* A strided 1-D or 2-D view of d0 x d1 elements of es bytes: element (i, k)
 * at (off + i*s0 + k*s1) elements into a storage buffer; the logical values
 * come from src (contiguous, d0 x d1). *store receives the buffer (free it). */
typedef struct ru_view {
    aclTensor *t;
    unsigned char *store;
} ru_view;
static inline ru_view ru_make_view(const void *src, int nd, int64_t d0, int64_t d1, aclDataType dt, size_t es,
                                   int64_t off, int64_t s0, int64_t s1) {
    ru_view v;
    const int64_t n0 = d0 > 0 ? d0 - 1 : 0, n1 = d1 > 0 ? d1 - 1 : 0;
    int64_t span = off + 1 + n0 * s0 + (nd == 2 ? n1 * s1 : 0);
    if (d0 == 0 || (nd == 2 && d1 == 0)) span = off + 1;
    v.store = malloc((size_t)span * es + 1);
    memset(v.store, 0x5A, (size_t)span * es + 1);
    for (int64_t i = 0; i < d0; i++)
        for (int64_t k = 0; k < (nd == 2 ? d1 : 1); k++)
            memcpy(v.store + (size_t)(off + i * s0 + k * s1) * es, (const char *)src + (size_t)(i * (nd == 2 ? d1 : 1) + k) * es,
                   es);
    int64_t dims[2] = {d0, d1}, strides[2] = {s0, s1}, sdims[1] = {span};
    v.t = aclCreateTensor(dims, (uint64_t)nd, dt, strides, off, ACL_FORMAT_ND, sdims, 1, v.store);
    return v;
}

typedef struct ru_pair {
    int64_t key, pos;
} ru_pair;
static int ru_pair_cmp(const void *a, const void *b) {
    const ru_pair *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}
/* perm[i] = position of the i-th smallest (key, position). */
static inline void ru_ref_sort(const int64_t *key, int64_t T, int64_t *perm) {
    ru_pair *p = malloc(sizeof *p * (size_t)(T > 0 ? T : 1));
    for (int64_t j = 0; j < T; j++) p[j].key = key[j], p[j].pos = j;
    qsort(p, (size_t)T, sizeof *p, ru_pair_cmp);
    for (int64_t i = 0; i < T; i++) perm[i] = p[i].pos;
    free(p);
}

/* The verdict of one phase-1 call: 1 (after printing why) when its status
 * is not want or, with msg not NULL, its one-line message is not exactly
 * msg; 0 otherwise. A successful call's executor is destroyed. */
static inline int ru_phase1_bad(aclnnStatus rc, aclOpExecutor *e, aclnnStatus want, const char *msg, int line) {
    const char *got = aclGetRecentErrMsg();
    int bad = rc != want || (msg && (got == NULL || strcmp(got, msg) != 0));
    if (bad)
        printf("FAIL line %d: status %d (want %d), message '%s' (want '%s')\n", line, rc, want, got ? got : "(null)",
               msg ? msg : "(any)");
    if (rc == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e);
    return bad;
}

#endif /* MOEFR_TESTS_ROUTING_UTIL_H_ */
