/* xarch_hash.c - the cross-architecture bit check. Runs a fixed set of
 * problems, generated from fixed seeds, through the public API and prints one
 * line per output: "<problem> <output> <FNV-1a 64 of its bytes>". The lines
 * depend only on moefr's arithmetic, never on the machine, the kernel path
 * (MOEFR_ISA) or the thread count, so `make test-aarch64` runs this on x86 and
 * under qemu-aarch64 for every Arm path and fails if any line differs (nothing
 * is stored: both sides compute their hashes live).
 *
 * Problems: fp32, fp16 and bf16; H = 1, 7, 37, 515 (multiples of no vector
 * width); three sizes of (R, K); the backward in drop-pad modes 0 and 1
 * without scales, with scales, with scales and bias; the forward in modes 0-3
 * with and without bias (bias comes with x1 and x2). Indices are permutations
 * (dropless modes) or distinct slots plus -1 drops (drop-pad modes), so every
 * problem is valid under any reading of repeated or dropped indices. Inputs are built bit by bit (no host float conversion)
 * and are finite: NaN payloads are not the same on x86 and Arm.
 *
 * Usage: xarch_hash          the hash lines on stdout; exit 1 if any call fails
 *        xarch_hash --isa    print the kernel path moefr chose (moefrIsa()) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "moefr/moefr.h"

static uint64_t g_rng;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

typedef struct { aclDataType dt; const char *name; int size, mant, bias; } dtype_info;
static const dtype_info DTYPES[] = {
    {ACL_FLOAT, "f32", 4, 23, 127}, {ACL_FLOAT16, "f16", 2, 10, 15}, {ACL_BF16, "bf16", 2, 7, 127}};

/* n finite values of dtype t as bits: magnitudes in [2^-6, 4), 1 in 16 a
 * zero of either sign, 1 in 64 a subnormal. */
static void *values(const dtype_info *t, int64_t n) {
    unsigned char *p = malloc((size_t)(n > 0 ? n : 1) * (size_t)t->size);
    for (int64_t i = 0; i < n; i++) {
        const uint64_t r = next();
        const uint32_t sign = (uint32_t)(r >> 63), mant = (uint32_t)r & ((1u << t->mant) - 1);
        const int c = (int)((r >> 40) & 63);
        uint32_t bits = sign << (t->size * 8 - 1);                                  /* c 0-3: a zero */
        if (c == 4) bits |= mant | 1;                                               /* a subnormal */
        else if (c > 4) bits |= (uint32_t)(t->bias - 6 + (int)((r >> 48) % 8)) << t->mant | mant;
        if (t->size == 4) memcpy(p + 4 * i, &bits, 4);
        else {
            const uint16_t h = (uint16_t)bits;
            memcpy(p + 2 * i, &h, 2);
        }
    }
    return p;
}

/* n index values: distinct values of [0, range) (n <= range) in random
 * order, each replaced by -1 with probability drop_in_8 / 8. */
static int32_t *indices(int64_t n, int64_t range, int drop_in_8) {
    int32_t *all = malloc((size_t)range * sizeof *all);
    for (int64_t i = 0; i < range; i++) all[i] = (int32_t)i;
    for (int64_t i = range - 1; i > 0; i--) {
        const int64_t j = below(i + 1);
        const int32_t t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    for (int64_t i = 0; i < n; i++)
        if (below(8) < drop_in_8) all[i] = -1;
    return all;
}
static int32_t *experts(int64_t n, int64_t e) {
    int32_t *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (int32_t)below(e);
    return p;
}

static aclTensor *tensor(int nd, const int64_t *dims, aclDataType dt, void *data) {
    aclTensor *t = aclCreateTensor(dims, (uint64_t)nd, dt, NULL, 0, ACL_FORMAT_ND, dims, (uint64_t)nd, data);
    if (t == NULL) {
        fprintf(stderr, "xarch_hash: aclCreateTensor: %s\n", aclGetRecentErrMsg());
        exit(1);
    }
    return t;
}
static void *poisoned(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    memset(p, 0x5A, bytes);
    return p;
}

static int g_fail;
/* An output whose bytes are all still the poison was never written. */
static void print_hash(const char *what, const char *output, const void *p, size_t bytes) {
    void *poison = poisoned(bytes);
    const uint64_t h = fnv1a(p, bytes);
    if (bytes > 0 && h == fnv1a(poison, bytes)) {
        fprintf(stderr, "xarch_hash: %s: %s was not written\n", what, output);
        g_fail = 1;
    }
    free(poison);
    printf("%s %-13s %016llx\n", what, output, (unsigned long long)h);
}
static void run(const char *what, aclnnStatus plan, aclOpExecutor *ex, uint64_t ws, int forward) {
    if (plan != ACLNN_SUCCESS) {
        fprintf(stderr, "xarch_hash: %s: phase 1 returned %d: %s\n", what, (int)plan, aclGetRecentErrMsg());
        g_fail = 1;
        return;
    }
    void *w = malloc(ws ? ws : 1);
    const aclnnStatus st = forward ? aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL)
                                   : aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
    free(w);
    if (st != ACLNN_SUCCESS) {
        fprintf(stderr, "xarch_hash: %s: phase 2 returned %d: %s\n", what, (int)st, aclGetRecentErrMsg());
        g_fail = 1;
    }
}

/* variant 0: no scales (copy), 1: scales, 2: scales and bias */
static void backward(const dtype_info *t, int64_t R, int64_t K, int64_t H, int mode, int variant) {
    if (variant == 0) K = 1; /* without scales K is 1 */
    const int64_t E = K + 2, C = (R * K + R * K / 4) / E + 1; /* E*C > R*K: some rows unnamed */
    const int64_t D0 = mode == 0 ? R * K : E * C;
    const size_t es = (size_t)t->size;
    void *gy = values(t, R * H), *x = values(t, D0 * H), *sc = values(t, R * K), *b = values(t, E * H);
    int32_t *idx = indices(R * K, D0, mode == 1), *ei = experts(R * K, E); /* -1 drops in mode 1 */
    void *gx = poisoned((size_t)(D0 * H) * es), *gs = poisoned((size_t)(R * K) * es);
    const int64_t d_gy[2] = {R, H}, d_idx[1] = {R * K}, d_x2[2] = {D0, H}, d_x3[3] = {E, C, H}, d_s[2] = {R, K},
                  d_b[2] = {E, H};
    aclTensor *tgy = tensor(2, d_gy, t->dt, gy), *tidx = tensor(1, d_idx, ACL_INT32, idx);
    aclTensor *tx = mode == 0 ? tensor(2, d_x2, t->dt, x) : tensor(3, d_x3, t->dt, x);
    aclTensor *ts = tensor(2, d_s, t->dt, sc), *tei = tensor(2, d_s, ACL_INT32, ei), *tb = tensor(2, d_b, t->dt, b);
    aclTensor *tgx = mode == 0 ? tensor(2, d_x2, t->dt, gx) : tensor(3, d_x3, t->dt, gx), *tgs = tensor(2, d_s, t->dt, gs);
    char what[96];
    snprintf(what, sizeof what, "bwd %-4s mode%d %-11s R=%lld K=%lld H=%lld", t->name, mode,
             variant == 0 ? "copy" : variant == 1 ? "scales" : "scales+bias", (long long)R, (long long)K,
             (long long)H);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus plan = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
        tgy, tidx, variant ? tx : NULL, variant ? ts : NULL, variant == 2 ? tei : NULL, variant == 2 ? tb : NULL,
        mode, 0, mode == 1 ? E : 0, mode == 1 ? C : 0, tgx, tgs, &ws, &ex);
    run(what, plan, ex, ws, 0);
    print_hash(what, "gradExpandedX", gx, (size_t)(D0 * H) * es);
    if (variant) print_hash(what, "gradScales", gs, (size_t)(R * K) * es);
    aclTensor *all[] = {tgy, tidx, tx, ts, tei, tb, tgx, tgs};
    for (int i = 0; i < 8; i++) aclDestroyTensor(all[i]);
    void *bufs[] = {gy, x, sc, b, idx, ei, gx, gs};
    for (int i = 0; i < 8; i++) free(bufs[i]);
}

/* bias: bias, expertIdx, x1 and x2 on top of expandedX and scales */
static void forward(const dtype_info *t, int64_t R, int64_t K, int64_t H, int mode, int bias) {
    const int64_t E = K + 2, C = (R * K + R * K / 4) / E + 1;
    const int droppad = mode == 1 || mode == 3;
    const int64_t D0 = droppad ? E * C : R * K;
    const size_t es = (size_t)t->size;
    void *x = values(t, D0 * H), *sc = values(t, R * K), *b = values(t, E * H), *x1 = values(t, R * H),
         *x2 = values(t, R * H);
    int32_t *idx = indices(R * K, D0, droppad ? 1 : 0), *ei = experts(R * K, E);
    void *out = poisoned((size_t)(R * H) * es);
    const int64_t d_x2[2] = {D0, H}, d_x3[3] = {E, C, H}, d_idx[1] = {R * K}, d_s[2] = {R, K}, d_b[2] = {E, H},
                  d_out[2] = {R, H};
    aclTensor *tx = droppad ? tensor(3, d_x3, t->dt, x) : tensor(2, d_x2, t->dt, x);
    aclTensor *tidx = tensor(1, d_idx, ACL_INT32, idx), *ts = tensor(2, d_s, t->dt, sc);
    aclTensor *tei = tensor(2, d_s, ACL_INT32, ei), *tb = tensor(2, d_b, t->dt, b);
    aclTensor *tx1 = tensor(2, d_out, t->dt, x1), *tx2 = tensor(2, d_out, t->dt, x2);
    aclTensor *tout = tensor(2, d_out, t->dt, out);
    char what[96];
    snprintf(what, sizeof what, "fwd %-4s mode%d %-11s R=%lld K=%lld H=%lld", t->name, mode,
             bias ? "bias+x1+x2" : "scales", (long long)R, (long long)K, (long long)H);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus plan = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(
        tx, tidx, bias ? tx1 : NULL, bias ? tx2 : NULL, bias ? tb : NULL, ts, bias ? tei : NULL, mode, tout, &ws,
        &ex);
    run(what, plan, ex, ws, 1);
    print_hash(what, "out", out, (size_t)(R * H) * es);
    aclTensor *all[] = {tx, tidx, ts, tei, tb, tx1, tx2, tout};
    for (int i = 0; i < 8; i++) aclDestroyTensor(all[i]);
    void *bufs[] = {x, sc, b, x1, x2, idx, ei, out};
    for (int i = 0; i < 8; i++) free(bufs[i]);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--isa") == 0) {
        printf("%s\n", moefrIsa());
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: xarch_hash [--isa]\n");
        return 2;
    }
    static const int64_t HS[] = {1, 7, 37, 515};
    static const int64_t RK[][2] = {{3, 2}, {61, 4}, {523, 6}}; /* the last: large enough to split across threads */
    int problem = 0;
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 3; s++)
            for (int h = 0; h < 4; h++) {
                for (int mode = 0; mode < 2; mode++)
                    for (int v = 0; v < 3; v++) {
                        g_rng = 0x6D6F656672ull * 1000 + (uint64_t)problem++; /* fixed seed per problem */
                        backward(&DTYPES[d], RK[s][0], RK[s][1], HS[h], mode, v);
                    }
                for (int mode = 0; mode < 4; mode++)
                    for (int b = 0; b < 2; b++) {
                        g_rng = 0x6D6F656672ull * 1000 + (uint64_t)problem++;
                        forward(&DTYPES[d], RK[s][0], RK[s][1], HS[h], mode, b);
                    }
            }
    fprintf(stderr, "xarch_hash: %d problems on kernel path %s, %d threads%s\n", problem, moefrIsa(),
            moefrNumThreads(), g_fail ? ": FAILED calls" : "");
    return g_fail;
}
