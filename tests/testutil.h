/* testutil.h - what the operator tests share: failure reporting, a seeded
 * random generator (MOEFR_TEST_SEED replays), and tensor helpers on the public API. */
#ifndef MOEFR_TESTS_TESTUTIL_H_
#define MOEFR_TESTS_TESTUTIL_H_

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"

static const char *tu_prog = "test";

static inline const char *tu_msg(void) {
    const char *m = aclGetRecentErrMsg();
    return m ? m : "(none)";
}

/* Prints a failure with its location and this thread's recent error message,
 * then exits: the first failure is the one worth reading. */
#define TU_FAIL(...)                                                                    \
    do {                                                                                \
        fprintf(stderr, "%s: FAIL at %s:%d: ", tu_prog, __FILE__, __LINE__);            \
        fprintf(stderr, __VA_ARGS__);                                                   \
        fprintf(stderr, "\n  recent error message: %s\n", tu_msg());                    \
        exit(1);                                                                        \
    } while (0)

#define CHECK(c)                                                                        \
    do {                                                                                \
        if (!(c)) TU_FAIL("CHECK(%s)", #c);                                             \
    } while (0)

/* Expects an exact status code. */
#define CHECK_RC(call, want)                                                            \
    do {                                                                                \
        long long got_ = (long long)(call);                                             \
        if (got_ != (long long)(want)) TU_FAIL("%s returned %lld, want %lld", #call, got_, (long long)(want)); \
    } while (0)

/* ---- random numbers: splitmix64 ---- */
static uint64_t tu_rng_state;

static inline uint64_t tu_next(void) {
    uint64_t z = (tu_rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform in [0, n), n > 0. */
static inline int64_t tu_below(int64_t n) { return (int64_t)(tu_next() % (uint64_t)n); }
static inline int64_t tu_range(int64_t lo, int64_t hi) { return lo + tu_below(hi - lo + 1); }
static inline double tu_unit(void) { return (double)(tu_next() >> 11) * 0x1p-53; }
static inline int tu_chance(int percent) { return tu_below(100) < percent; }

/* Seeds from MOEFR_TEST_SEED or the clock, and prints the seed. */
static inline uint64_t tu_seed(const char *prog) {
    tu_prog = prog;
    const char *s = getenv("MOEFR_TEST_SEED");
    uint64_t seed;
    if (s && *s) seed = strtoull(s, NULL, 0);
    else seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() * 7919u ^ (uint64_t)clock();
    tu_rng_state = seed;
    printf("%s: seed %" PRIu64 " (replay with MOEFR_TEST_SEED=%" PRIu64 ")\n", prog, seed, seed);
    fflush(stdout);
    return seed;
}

/* ---- tensors ---- */
/* A contiguous tensor whose storage is exactly its view. */
static inline aclTensor *tu_tensor(const int64_t *dims, int nd, aclDataType dt, void *data) {
    return aclCreateTensor(dims, (uint64_t)nd, dt, NULL, 0, ACL_FORMAT_ND, dims, (uint64_t)nd, data);
}

static inline void tu_destroy(aclTensor *t) {
    if (t && aclDestroyTensor(t) != ACLNN_SUCCESS) TU_FAIL("aclDestroyTensor failed");
}

/* The recent message is one line and contains every given fragment (NULL ends the list). */
static inline int tu_msg_has(const char *first, ...) {
    const char *m = aclGetRecentErrMsg();
    if (m == NULL || *m == '\0' || strchr(m, '\n') != NULL) return 0;
    va_list ap;
    va_start(ap, first);
    int ok = 1;
    for (const char *f = first; f != NULL; f = va_arg(ap, const char *))
        if (strstr(m, f) == NULL) ok = 0;
    va_end(ap);
    return ok;
}

#endif /* MOEFR_TESTS_TESTUTIL_H_ */
