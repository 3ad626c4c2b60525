/* testutil.h - what the tests share: failure reporting (stop at the first
 * failure, or count and go on), a seeded random generator (MOEFR_TEST_SEED
 * replays), tensor helpers on the public API, poisoned buffers with guard
 * bytes, strided aclTensor views over a padded copy, random dtype data, and
 * the routing oracles' stable sort (qsort on (key, position) pairs: a
 * comparison sort, independent of src/ops/sort.c). */
#ifndef MOEFR_TESTS_TESTUTIL_H_
#define MOEFR_TESTS_TESTUTIL_H_

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "fwd_ref.h"

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

#ifndef TU_COUNT_FAILURES
#define CHECK(c)                                                                        \
    do {                                                                                \
        if (!(c)) TU_FAIL("CHECK(%s)", #c);                                             \
    } while (0)
#else
/* With TU_COUNT_FAILURES defined before the #include (the routing tests):
 * CHECK(cond, fmt, ...) counts the check in g_checks and a failure, printed
 * with its location on stdout, in g_fail, and goes on; main reports the
 * counts (g_cases: the test's own) and returns g_fail != 0. */
static int g_fail, g_cases, g_checks;
#define CHECK(cond, ...)                                \
    do {                                                \
        g_checks++;                                     \
        if (!(cond)) {                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
            g_fail++;                                   \
        }                                               \
    } while (0)
#endif

/* Expects an exact status code. */
#define CHECK_RC(call, want)                                                            \
    do {                                                                                \
        long long got_ = (long long)(call);                                             \
        if (got_ != (long long)(want)) TU_FAIL("%s returned %lld, want %lld", #call, got_, (long long)(want)); \
    } while (0)

/* ---- random numbers: xorshift64* ---- */
static uint64_t tu_state;

static inline uint64_t tu_next(void) {
    tu_state ^= tu_state >> 12;
    tu_state ^= tu_state << 25;
    tu_state ^= tu_state >> 27;
    return tu_state * 0x2545F4914F6CDD1DULL;
}
/* Uniform in [0, n), n > 0. */
static inline int64_t tu_below(int64_t n) { return (int64_t)(tu_next() % (uint64_t)n); }
/* Uniform in [lo, hi]. */
static inline int64_t tu_int(int64_t lo, int64_t hi) { return lo + tu_below(hi - lo + 1); }
static inline double tu_unit(void) { return (double)(tu_next() >> 11) * 0x1p-53; }
static inline int tu_chance(int percent) { return tu_below(100) < percent; }

/* Seeds from MOEFR_TEST_SEED or the clock (0, which xorshift cannot leave,
 * becomes 1), prints the seed and returns it. */
static inline uint64_t tu_seed(const char *prog) {
    tu_prog = prog;
    const char *s = getenv("MOEFR_TEST_SEED");
    uint64_t seed;
    if (s && *s) seed = strtoull(s, NULL, 0);
    else seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() * 7919u ^ (uint64_t)clock();
    if (seed == 0) seed = 1;
    tu_state = seed;
    printf("%s: seed %" PRIu64 " (replay with MOEFR_TEST_SEED=%" PRIu64 ")\n", prog, seed, seed);
    fflush(stdout);
    return seed;
}

/* ---- tensors ---- */
/* A contiguous tensor whose storage is exactly its view. */
static inline aclTensor *tu_tensor(const int64_t *dims, int nd, aclDataType dt, void *data) {
    return aclCreateTensor(dims, (uint64_t)nd, dt, NULL, 0, ACL_FORMAT_ND, dims, (uint64_t)nd, data);
}
/* The same with the dims spelt out: the first nd of (d0, d1, d2). */
static inline aclTensor *tu_mk(int nd, int64_t d0, int64_t d1, int64_t d2, aclDataType dt, void *data) {
    const int64_t dims[3] = {d0, d1, d2};
    return tu_tensor(dims, nd, dt, data);
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

/* The verdict of one phase-1 call: 1 (after printing why) when its status
 * is not want or, with msg not NULL, its one-line message is not exactly
 * msg; 0 otherwise. A successful call's executor is destroyed. */
static inline int tu_phase1_bad(aclnnStatus rc, aclOpExecutor *e, aclnnStatus want, const char *msg, int line) {
    const char *got = aclGetRecentErrMsg();
    int bad = rc != want || (msg && (got == NULL || strcmp(got, msg) != 0));
    if (bad)
        printf("FAIL line %d: status %d (want %d), message '%s' (want '%s')\n", line, rc, want, got ? got : "(null)",
               msg ? msg : "(any)");
    if (rc == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e);
    return bad;
}

/* ---- poisoned buffers ---- */
#define TU_POISON 0xA5
#define TU_GUARD 64
/* n bytes of poison plus TU_GUARD guard bytes after them. */
static inline unsigned char *tu_poisoned(size_t n) {
    unsigned char *p = malloc(n + TU_GUARD);
    memset(p, TU_POISON, n + TU_GUARD);
    return p;
}
static inline int tu_guard_ok(const unsigned char *p, size_t n) {
    for (size_t i = n; i < n + TU_GUARD; i++)
        if (p[i] != TU_POISON) return 0;
    return 1;
}
static inline int tu_all_poison(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != TU_POISON) return 0;
    return 1;
}

/* ---- views: a tensor over a copy of its values in a storage of its own ---- */
typedef struct tu_owned {
    aclTensor *t;
    unsigned char *store; /* free it (tu_free frees both) */
} tu_owned;

/* The storage, in elements, that a view of dims and strides st from off reaches. */
static inline int64_t tu_span(int nd, const int64_t *dims, const int64_t *st, int64_t off) {
    int64_t span = off + 1;
    for (int d = 0; d < nd; d++)
        if (dims[d] > 0) span += (dims[d] - 1) * st[d];
    return span;
}
/* The nd-dim tensor of dims and strides st (in elements) from off over a
 * storage of span elements of es bytes (plus pad bytes), every byte `fill`
 * but the values of dense (contiguous, row-major), copied to their places. */
static inline tu_owned tu_strided(const void *dense, int nd, const int64_t *dims, const int64_t *st, int64_t off,
                                  int64_t span, aclDataType dt, size_t es, int fill, size_t pad) {
    tu_owned v;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= dims[d];
    v.store = malloc((size_t)span * es + pad);
    memset(v.store, fill, (size_t)span * es + pad);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, at = off;
        for (int d = nd - 1; d >= 0; d--) {
            at += (rem % dims[d]) * st[d];
            rem /= dims[d];
        }
        memcpy(v.store + at * (int64_t)es, (const char *)dense + i * (int64_t)es, es);
    }
    const int64_t sd[1] = {span};
    v.t = aclCreateTensor(dims, (uint64_t)nd, dt, st, off, ACL_FORMAT_ND, sd, 1, v.store);
    return v;
}
/* A strided 1-D or 2-D view of d0 x d1 elements of es bytes: element (i, k)
 * at (off + i*s0 + k*s1) elements into a storage filled with 0x5A; the
 * values come from src (contiguous, d0 x d1). An empty view's storage is
 * off + 1 elements. */
static inline tu_owned tu_make_view(const void *src, int nd, int64_t d0, int64_t d1, aclDataType dt, size_t es,
                                    int64_t off, int64_t s0, int64_t s1) {
    const int64_t dims[2] = {d0, d1}, st[2] = {s0, s1};
    const int64_t span = d0 == 0 || (nd == 2 && d1 == 0) ? off + 1 : tu_span(nd, dims, st, off);
    return tu_strided(src, nd, dims, st, off, span, dt, es, 0x5A, 1);
}

/* Layout kinds for tu_view. */
enum { TU_DENSE = 0, TU_PADDED = 1, TU_STRIDED = 2, TU_COLMAJOR = 3, TU_KINDS = 4 };

/* A tensor of `ndim` dims over a fresh zeroed copy of `dense` (row-major)
 * laid out as `kind`; TU_COLMAJOR reverses the stride order. Exits when
 * aclCreateTensor refuses it. */
static inline tu_owned tu_view(int dtype, int ndim, const int64_t *dims, const void *dense, int kind) {
    const size_t es = dtype == 3 ? 4 : fr_size(dtype); /* 3 = ACL_INT32 */
    int64_t st[3] = {0, 0, 0}, off = 0;
    if (kind == TU_COLMAJOR) {
        int64_t s = 1;
        for (int d = 0; d < ndim; d++) st[d] = s, s *= dims[d] > 0 ? dims[d] : 1;
        off = 1;
    } else {
        int64_t s = kind == TU_STRIDED ? 2 : 1;
        for (int d = ndim - 1; d >= 0; d--) {
            st[d] = s;
            s = s * (dims[d] > 0 ? dims[d] : 1) + (kind == TU_DENSE ? 0 : 3);
        }
        off = kind == TU_DENSE ? 0 : 5;
    }
    tu_owned r = tu_strided(dense, ndim, dims, st, off, tu_span(ndim, dims, st, off), (aclDataType)dtype, es, 0, 0);
    if (r.t == NULL) {
        fprintf(stderr, "tu_view: aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
        exit(2);
    }
    return r;
}
static inline void tu_free(tu_owned *t) {
    if (t->t) aclDestroyTensor(t->t);
    free(t->store);
    t->t = NULL;
    t->store = NULL;
}

/* ---- 16-bit floats (FLOAT16 through acl.h's converters; BF16 by its bits, nearest even, NaN kept) ---- */
static inline float tu_h2f(int dt, uint16_t h) {
    if (dt == ACL_FLOAT16) return aclFloat16ToFloat(h);
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline uint16_t tu_f2h(int dt, float f) {
    if (dt == ACL_FLOAT16) return aclFloatToFloat16(f);
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x40); /* NaN stays NaN */
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

/* ---- random dtype data (fwd_ref.h's dtypes) ---- */
/* v rounded to dtype, written at element i. */
static inline void tu_put(int dtype, void *base, int64_t i, double v) {
    uint32_t b = fr_round(dtype, v);
    if (dtype == FR_F32) memcpy((char *)base + 4 * i, &b, 4);
    else {
        uint16_t h = (uint16_t)b;
        memcpy((char *)base + 2 * i, &h, 2);
    }
}
/* Random values, mostly in [-2, 2], sometimes exact zeros of either sign or
 * larger magnitudes. */
static inline void tu_fill(int dtype, void *base, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int c = (int)tu_int(0, 99);
        double v = c < 3 ? 0.0 : c < 5 ? -0.0 : c < 10 ? (tu_unit() - 0.5) * 200 : (tu_unit() * 4 - 2);
        tu_put(dtype, base, i, v);
    }
}

/* ---- the routing oracles' stable sort ---- */
typedef struct tu_pair {
    int64_t key, pos;
} tu_pair;
static inline int tu_pair_cmp(const void *a, const void *b) {
    const tu_pair *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}
/* perm[i] = position of the i-th smallest (key, position). */
static inline void tu_ref_sort(const int64_t *key, int64_t T, int64_t *perm) {
    tu_pair *p = malloc(sizeof *p * (size_t)(T > 0 ? T : 1));
    for (int64_t j = 0; j < T; j++) p[j].key = key[j], p[j].pos = j;
    qsort(p, (size_t)T, sizeof *p, tu_pair_cmp);
    for (int64_t i = 0; i < T; i++) perm[i] = p[i].pos;
    free(p);
}

#endif /* MOEFR_TESTS_TESTUTIL_H_ */
