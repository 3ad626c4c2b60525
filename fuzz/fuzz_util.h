/* fuzz_util.h - what the fuzz targets share: a reader that turns the fuzzer's
 * bytes into bounded choices (zeros once exhausted), and a loud abort on a broken guarantee. */
#ifndef MOEFR_FUZZ_UTIL_H_
#define MOEFR_FUZZ_UTIL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} fz_in;

static inline uint8_t fz_u8(fz_in *in) {
    if (in->n == 0) return 0;
    in->n--;
    return *in->p++;
}
static inline uint64_t fz_u64(fz_in *in) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | fz_u8(in);
    return v;
}
/* Uniform-ish in [lo, hi] (hi - lo < 2^16). */
static inline int64_t fz_range(fz_in *in, int64_t lo, int64_t hi) {
    uint32_t v = ((uint32_t)fz_u8(in) << 8) | fz_u8(in);
    return lo + (int64_t)(v % (uint32_t)(hi - lo + 1));
}

/* An int64 that is usually small but now and then one of the values that
 * break naive arithmetic (signs, 2^31, 2^32, 2^62, INT64 limits). */
static inline int64_t fz_i64(fz_in *in, int64_t small_lo, int64_t small_hi) {
    static const int64_t edge[] = {
        -1, 0, 1, 2, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, (int64_t)1 << 31, ((int64_t)1 << 31) - 1,
        (int64_t)1 << 32, (int64_t)1 << 62, ((int64_t)1 << 62) + 1, -((int64_t)1 << 62), (int64_t)3037000500,
        (int64_t)1 << 40, -((int64_t)1 << 32), (int64_t)1 << 61, 65536, 4294967295LL,
    };
    uint8_t sel = fz_u8(in);
    if (sel < 224) return fz_range(in, small_lo, small_hi);
    if (sel < 248) return edge[fz_u8(in) % (sizeof edge / sizeof edge[0])];
    return (int64_t)fz_u64(in);
}

/* A broken guarantee: print what and abort so libFuzzer (or the replay driver) records it. */
#define FZ_REQUIRE(c, ...)                                                             \
    do {                                                                               \
        if (!(c)) {                                                                    \
            fprintf(stderr, "FUZZ FAILURE %s:%d: %s: ", __FILE__, __LINE__, #c);       \
            fprintf(stderr, __VA_ARGS__);                                              \
            const char *m_ = aclGetRecentErrMsg();                                     \
            fprintf(stderr, "\n  recent error message: %s\n", m_ ? m_ : "(none)");     \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* Every failing call must leave exactly one non-empty line. */
static inline int fz_msg_ok(void) {
    const char *m = aclGetRecentErrMsg();
    return m != NULL && m[0] != '\0' && strchr(m, '\n') == NULL;
}

#endif /* MOEFR_FUZZ_UTIL_H_ */
