/* test_hccl.c - HCCL's host API with threads as ranks (issue 38, step 1): 2, 3, 4 and 8 ranks, one thread
 * each, as CANN's mc2 examples run them. Every collective against a reference computed here serially
 * (int64 / float64 loops, fp16 and bf16 rounded by this file's own conversions), on random sizes that are
 * no multiple of any vector width, with poisoned outputs and guard bytes; uneven and zero alltoallv counts;
 * in-place forms and outputs overlapping other ranks' inputs; the argument checks and their codes; counts
 * that disagree between ranks refused on every rank with outputs untouched; a rank that never arrives
 * (HCCL_E_TIMEOUT within a short HCCL_EXEC_TIMEOUT, no hang) and a destroyed peer (HCCL_E_UNAVAIL).
 * Also under TSan (make test-tsan). */
#define _DEFAULT_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hccl/hccl.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "test_hccl: FAIL at %s:%d: ", __FILE__, __LINE__);                         \
        fprintf(stderr, __VA_ARGS__);                                                              \
        const char *m_ = aclGetRecentErrMsg();                                                     \
        fprintf(stderr, "\n  recent error message: %s\n", m_ ? m_ : "(none)");                     \
        exit(1);                                                                                   \
    } while (0)
#define CHECK(c)                                \
    do {                                        \
        if (!(c)) FAIL("CHECK(%s)", #c);        \
    } while (0)
#define CHECK_RC(call, want)                                                                          \
    do {                                                                                              \
        long long got_ = (long long)(call);                                                           \
        if (got_ != (long long)(want)) FAIL("%s returned %lld, want %lld", #call, got_, (long long)(want)); \
    } while (0)

/* ---- random numbers (xorshift64*; MOEFR_TEST_SEED replays) ---- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545F4914F6CDD1DULL;
}
static int64_t rnd_int(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* ---- this file's own fp16 / bf16 conversions (round to nearest even; normal and subnormal fp16) ---- */
static uint16_t ref_f16(double v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v)) return 0x7E00 | sign;
    if (a < ldexp(1, -14)) return sign | (uint16_t)rint(ldexp(a, 24));
    int ex;
    frexp(a, &ex);
    int e = ex - 1;
    double m = rint(ldexp(a, 10 - e));
    if (m == 2048) {
        m = 1024;
        e++;
    }
    if (e > 15) return sign | 0x7C00;
    return sign | (uint16_t)((e + 15) << 10) | (uint16_t)(m - 1024);
}
static double ref_f16_val(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double s = (h & 0x8000) ? -1 : 1;
    if (e == 31) return m ? NAN : s * INFINITY;
    return e ? s * ldexp(1024 + m, e - 25) : s * ldexp(m, -24);
}
static uint16_t ref_bf16(double v) { /* normal range only (the data here are) */
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v)) return 0x7FC0 | sign;
    if (a == 0) return sign;
    int ex;
    frexp(a, &ex);
    int e = ex - 1;
    double m = rint(ldexp(a, 7 - e));
    if (m == 256) {
        m = 128;
        e++;
    }
    if (e > 127) return sign | 0x7F80;
    return sign | (uint16_t)((e + 127) << 7) | (uint16_t)(m - 128);
}
static double ref_bf16_val(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static size_t esize(int dt) {
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: return 1;
    case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16: case HCCL_DATA_TYPE_BFP16: return 2;
    case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
    default: return 8;
    }
}

/* Element i of a typed buffer as double (integers exactly for |v| < 2^53). */
static double get(int dt, const void *p, size_t i) {
    const char *c = p;
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: return ((const int8_t *)c)[i];
    case HCCL_DATA_TYPE_INT16: return ((const int16_t *)c)[i];
    case HCCL_DATA_TYPE_INT32: return ((const int32_t *)c)[i];
    case HCCL_DATA_TYPE_INT64: return (double)((const int64_t *)c)[i];
    case HCCL_DATA_TYPE_UINT64: return (double)((const uint64_t *)c)[i];
    case HCCL_DATA_TYPE_UINT8: return ((const uint8_t *)c)[i];
    case HCCL_DATA_TYPE_UINT16: return ((const uint16_t *)c)[i];
    case HCCL_DATA_TYPE_UINT32: return ((const uint32_t *)c)[i];
    case HCCL_DATA_TYPE_FP16: return ref_f16_val(((const uint16_t *)c)[i]);
    case HCCL_DATA_TYPE_BFP16: return ref_bf16_val(((const uint16_t *)c)[i]);
    case HCCL_DATA_TYPE_FP32: return ((const float *)c)[i];
    default: return ((const double *)c)[i];
    }
}

/* ---- ranks as threads ---- */
typedef struct world {
    uint32_t n;
    HcclComm comm[8];
} world;

static void world_init(world *w, uint32_t n) {
    int32_t dev[8];
    for (uint32_t i = 0; i < n; i++) dev[i] = (int32_t)i; /* CANN's examples: device i for rank i */
    w->n = n;
    CHECK_RC(HcclCommInitAll(n, dev, w->comm), HCCL_SUCCESS);
}
static void world_free(world *w) {
    for (uint32_t i = 0; i < w->n; i++) CHECK_RC(HcclCommDestroy(w->comm[i]), HCCL_SUCCESS);
}

typedef struct job job;
typedef int (*rank_fn)(job *j, uint32_t r, HcclComm comm, aclrtStream st);
struct job {
    world *w;
    rank_fn fn;
    void *ctx;
    int rc[8];
    double secs[8];
};
typedef struct {
    job *j;
    uint32_t r;
} targ;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *rank_main(void *p) {
    targ *a = p;
    aclrtStream st = NULL;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&st) != ACL_SUCCESS) {
        a->j->rc[a->r] = -1;
        return NULL;
    }
    double t0 = now_s();
    a->j->rc[a->r] = a->j->fn(a->j, a->r, a->j->w->comm[a->r], st);
    a->j->secs[a->r] = now_s() - t0;
    if (getenv("TEST_HCCL_VERBOSE") && a->j->rc[a->r] != 0)
        fprintf(stderr, "test_hccl: rank %u returned %d: %s\n", a->r, a->j->rc[a->r],
                aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "(no message)");
    aclrtDestroyStream(st);
    return NULL;
}

/* Runs fn on every rank, one thread each; returns when all are done. */
static void run(job *j) {
    pthread_t t[8];
    targ a[8];
    for (uint32_t r = 0; r < j->w->n; r++) {
        a[r] = (targ){j, r};
        CHECK(pthread_create(&t[r], NULL, rank_main, &a[r]) == 0);
    }
    for (uint32_t r = 0; r < j->w->n; r++) pthread_join(t[r], NULL);
}
static void expect_all(const job *j, int want, const char *what) {
    for (uint32_t r = 0; r < j->w->n; r++)
        if (j->rc[r] != want) FAIL("%s: rank %u returned %d, want %d", what, r, j->rc[r], want);
}

/* ---- buffers with guards: poison, then check nothing past the end was written ---- */
enum { GUARD = 64, POISON = 0xA5 };
static void *gbuf(size_t bytes) {
    unsigned char *p = malloc(bytes + GUARD + 8);
    CHECK(p != NULL);
    memset(p, POISON, bytes + GUARD + 8);
    return p;
}
static void check_guard(const void *p, size_t bytes, const char *what) {
    const unsigned char *c = p;
    for (size_t i = 0; i < GUARD; i++)
        if (c[bytes + i] != POISON) FAIL("%s: byte %zu past the end was written", what, i);
}
static bool all_poison(const void *p, size_t bytes) {
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++)
        if (c[i] != POISON) return false;
    return true;
}

/* Random input values for dtype; `small`: values whose sums and products over 8 ranks stay exact in every
 * type (integers in [-3, 3] over a power of two), else the type's general random values. */
static void fill(int dt, void *p, size_t n, bool small) {
    for (size_t i = 0; i < n; i++) {
        double v = small ? (double)rnd_int(-3, 3) : 0;
        switch (dt) {
        case HCCL_DATA_TYPE_INT8: ((int8_t *)p)[i] = (int8_t)(small ? v : rnd_int(-128, 127)); break;
        case HCCL_DATA_TYPE_INT16: ((int16_t *)p)[i] = (int16_t)(small ? v : rnd_int(-32768, 32767)); break;
        case HCCL_DATA_TYPE_INT32: ((int32_t *)p)[i] = (int32_t)(small ? v : (int64_t)(int32_t)rnd()); break;
        case HCCL_DATA_TYPE_INT64: ((int64_t *)p)[i] = small ? (int64_t)v : (int64_t)rnd(); break;
        case HCCL_DATA_TYPE_UINT64: ((uint64_t *)p)[i] = small ? (uint64_t)(v + 3) : rnd(); break;
        case HCCL_DATA_TYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)rnd(); break;
        case HCCL_DATA_TYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)rnd(); break;
        case HCCL_DATA_TYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)rnd(); break;
        case HCCL_DATA_TYPE_FP16:
            ((uint16_t *)p)[i] = ref_f16(small ? v / 4 : ldexp((double)rnd_int(-2047, 2047), (int)rnd_int(-14, 4)));
            break;
        case HCCL_DATA_TYPE_BFP16:
            ((uint16_t *)p)[i] = ref_bf16(small ? v / 4 : ldexp((double)rnd_int(-255, 255), (int)rnd_int(-20, 20)));
            break;
        case HCCL_DATA_TYPE_FP32:
            ((float *)p)[i] = small ? (float)(v / 4) : (float)ldexp((double)(int32_t)rnd() / 2147483648.0, (int)rnd_int(-8, 8));
            break;
        default:
            ((double *)p)[i] = small ? v / 4 : ldexp((double)(int64_t)rnd() / 9.2e18, (int)rnd_int(-8, 8));
            break;
        }
    }
}

/* The reference reduction of element i over n rank buffers, written into out[i]: integers in int64 / uint64
 * arithmetic made to wrap like the type (via unsigned), floats as the contract says (rank order, fp32
 * accumulation for fp16/bf16/fp32 computed here in float, fp64 in double, one rounding at the end). */
static void ref_reduce(int dt, int op, void *const *in, size_t off, uint32_t n, void *out, size_t i) {
    if (dt == HCCL_DATA_TYPE_FP16 || dt == HCCL_DATA_TYPE_BFP16 || dt == HCCL_DATA_TYPE_FP32 ||
        dt == HCCL_DATA_TYPE_FP64) {
        const bool f64 = dt == HCCL_DATA_TYPE_FP64;
        double acc = get(dt, in[0], off + i);
        bool nan = isnan(acc);
        for (uint32_t q = 1; q < n; q++) {
            double x = get(dt, in[q], off + i);
            if (isnan(x)) nan = true;
            if (op == HCCL_REDUCE_SUM) acc = f64 ? acc + x : (double)((float)acc + (float)x);
            else if (op == HCCL_REDUCE_PROD) acc = f64 ? acc * x : (double)((float)acc * (float)x);
            else if (op == HCCL_REDUCE_MAX) acc = x > acc ? x : acc;
            else acc = x < acc ? x : acc;
        }
        if (nan && op >= HCCL_REDUCE_MAX) acc = NAN;
        switch (dt) {
        case HCCL_DATA_TYPE_FP16: ((uint16_t *)out)[i] = ref_f16(acc); break;
        case HCCL_DATA_TYPE_BFP16: ((uint16_t *)out)[i] = ref_bf16(acc); break;
        case HCCL_DATA_TYPE_FP32: ((float *)out)[i] = (float)acc; break;
        default: ((double *)out)[i] = acc; break;
        }
        return;
    }
    uint64_t acc = 0;
    int64_t sacc = 0;
    for (uint32_t q = 0; q < n; q++) {
        int64_t sx;
        uint64_t ux;
        switch (dt) {
        case HCCL_DATA_TYPE_INT8: sx = ((const int8_t *)in[q])[off + i]; break;
        case HCCL_DATA_TYPE_INT16: sx = ((const int16_t *)in[q])[off + i]; break;
        case HCCL_DATA_TYPE_INT32: sx = ((const int32_t *)in[q])[off + i]; break;
        case HCCL_DATA_TYPE_INT64: sx = ((const int64_t *)in[q])[off + i]; break;
        default: sx = 0; break;
        }
        ux = dt == HCCL_DATA_TYPE_UINT64 ? ((const uint64_t *)in[q])[off + i] : (uint64_t)sx;
        if (q == 0) {
            acc = ux;
            sacc = sx;
            continue;
        }
        if (op == HCCL_REDUCE_SUM) acc += ux;
        else if (op == HCCL_REDUCE_PROD) acc *= ux;
        else if (dt == HCCL_DATA_TYPE_UINT64) acc = (op == HCCL_REDUCE_MAX) == (ux > acc) ? ux : acc;
        else sacc = (op == HCCL_REDUCE_MAX) == (sx > sacc) ? sx : sacc;
    }
    if (op >= HCCL_REDUCE_MAX && dt != HCCL_DATA_TYPE_UINT64) acc = (uint64_t)sacc;
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: ((uint8_t *)out)[i] = (uint8_t)acc; break;
    case HCCL_DATA_TYPE_INT16: ((uint16_t *)out)[i] = (uint16_t)acc; break;
    case HCCL_DATA_TYPE_INT32: ((uint32_t *)out)[i] = (uint32_t)acc; break;
    default: ((uint64_t *)out)[i] = acc; break;
    }
}

static const int REDUCE_TYPES[] = {HCCL_DATA_TYPE_INT8,  HCCL_DATA_TYPE_INT16, HCCL_DATA_TYPE_INT32,
                                   HCCL_DATA_TYPE_INT64, HCCL_DATA_TYPE_UINT64, HCCL_DATA_TYPE_FP16,
                                   HCCL_DATA_TYPE_BFP16, HCCL_DATA_TYPE_FP32,  HCCL_DATA_TYPE_FP64};
enum { N_REDUCE_TYPES = sizeof REDUCE_TYPES / sizeof REDUCE_TYPES[0] };
static const int MOVE_TYPES[] = {HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_UINT16, HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_FP64,
                                 HCCL_DATA_TYPE_BFP16};

static bool prod_ok(int dt) { return dt != HCCL_DATA_TYPE_INT16 && dt != HCCL_DATA_TYPE_BFP16; }

/* ---- one collective per call: the rank's arguments in ctx ---- */
typedef struct coll {
    int kind; /* 0 allreduce, 1 reduce-scatter, 2 allgather, 3 broadcast, 4 alltoall, 5 alltoallv, 6 barrier,
                 7 allgatherv, 8 reduce-scatterv */
    int dt, op;
    uint64_t count[8]; /* per rank (equal unless a test makes them disagree) */
    uint32_t root;
    void *send[8], *recv[8];
    uint64_t sc[8][8], sd[8][8], rc[8][8], rd[8][8];
} coll;

static int coll_rank(job *j, uint32_t r, HcclComm comm, aclrtStream st) {
    coll *c = j->ctx;
    switch (c->kind) {
    case 0: return HcclAllReduce(c->send[r], c->recv[r], c->count[r], c->dt, c->op, comm, st);
    case 1: return HcclReduceScatter(c->send[r], c->recv[r], c->count[r], c->dt, c->op, comm, st);
    case 2: return HcclAllGather(c->send[r], c->recv[r], c->count[r], c->dt, comm, st);
    case 3: return HcclBroadcast(c->send[r], c->count[r], c->dt, c->root, comm, st);
    case 4: return HcclAlltoAll(c->send[r], c->count[r], c->dt, c->recv[r], c->count[r], c->dt, comm, st);
    case 5:
        return HcclAlltoAllV(c->send[r], c->sc[r], c->sd[r], c->dt, c->recv[r], c->rc[r], c->rd[r], c->dt, comm, st);
    case 7: return HcclAllGatherV(c->send[r], c->count[r], c->recv[r], c->rc[r], c->rd[r], c->dt, comm, st);
    case 8:
        return HcclReduceScatterV(c->send[r], c->sc[r], c->sd[r], c->recv[r], c->count[r], c->dt, c->op, comm, st);
    default: return HcclBarrier(comm, st);
    }
}

static void run_coll(world *w, coll *c, int want) {
    job j = {.w = w, .fn = coll_rank, .ctx = c};
    run(&j);
    expect_all(&j, want, "collective");
}

static void cmp_bytes(const void *got, const void *want, size_t bytes, const char *what, uint32_t r, int dt) {
    if (memcmp(got, want, bytes) == 0) return;
    size_t e = esize(dt);
    for (size_t i = 0; i < bytes / e; i++)
        if (memcmp((const char *)got + i * e, (const char *)want + i * e, e) != 0)
            FAIL("%s: rank %u element %zu of %zu (dtype %d): got %.17g, want %.17g", what, r, i, bytes / e, dt,
                 get(dt, got, i), get(dt, want, i));
}

/* A count no multiple of any vector width, from 1 to ~5000 (sometimes past a reduction block). */
static uint64_t odd_count(void) {
    uint64_t c = (uint64_t)rnd_int(1, 700);
    if (rnd() % 4 == 0) c += 4096;
    return c | 1;
}

static void test_allreduce(world *w, int dt, int op, bool small, bool in_place) {
    const uint32_t n = w->n;
    coll c = {.kind = 0, .dt = dt, .op = op};
    const uint64_t cnt = odd_count();
    const size_t e = esize(dt), bytes = cnt * e;
    void *want = malloc(bytes), *orig[8];
    for (uint32_t r = 0; r < n; r++) {
        c.count[r] = cnt;
        c.send[r] = gbuf(bytes);
        fill(dt, c.send[r], cnt, small);
        orig[r] = malloc(bytes);
        memcpy(orig[r], c.send[r], bytes);
        c.recv[r] = in_place ? c.send[r] : gbuf(bytes);
    }
    if (op >= HCCL_REDUCE_MAX && (dt == HCCL_DATA_TYPE_FP32 || dt == HCCL_DATA_TYPE_FP16) && cnt > 3) {
        /* a NaN on the last rank wins max/min */
        if (dt == HCCL_DATA_TYPE_FP32) ((float *)c.send[n - 1])[2] = NAN, ((float *)orig[n - 1])[2] = NAN;
        else ((uint16_t *)c.send[n - 1])[2] = 0x7E00, ((uint16_t *)orig[n - 1])[2] = 0x7E00;
    }
    for (size_t i = 0; i < cnt; i++) ref_reduce(dt, op, orig, 0, n, want, i);
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) {
        cmp_bytes(c.recv[r], want, bytes, "HcclAllReduce", r, dt);
        check_guard(c.recv[r], bytes, "HcclAllReduce");
        if (!in_place && memcmp(c.send[r], orig[r], bytes) != 0) FAIL("HcclAllReduce changed rank %u's input", r);
        if (small && dt != HCCL_DATA_TYPE_INT8 && op == HCCL_REDUCE_SUM) /* exact: equals the float64 sum */
            for (size_t i = 0; i < cnt; i++) {
                double s = 0;
                for (uint32_t q = 0; q < n; q++) s += get(dt, orig[q], i);
                if (get(dt, c.recv[r], i) != s) FAIL("HcclAllReduce sum %zu: %g, float64 %g", i, get(dt, c.recv[r], i), s);
            }
    }
    for (uint32_t r = 0; r < n; r++) {
        if (!in_place) free(c.recv[r]);
        free(c.send[r]);
        free(orig[r]);
    }
    free(want);
}

static void test_reduce_scatter(world *w, int dt, int op, bool in_place) {
    const uint32_t n = w->n;
    coll c = {.kind = 1, .dt = dt, .op = op};
    const uint64_t cnt = odd_count() / 2 + 1;
    const size_t e = esize(dt), bytes = cnt * e;
    void *orig[8], *want = malloc(bytes * n);
    for (uint32_t r = 0; r < n; r++) {
        c.count[r] = cnt;
        c.send[r] = gbuf(bytes * n);
        fill(dt, c.send[r], cnt * n, rnd() % 2);
        orig[r] = malloc(bytes * n);
        memcpy(orig[r], c.send[r], bytes * n);
        c.recv[r] = in_place ? (char *)c.send[r] + r * bytes : gbuf(bytes);
    }
    for (size_t i = 0; i < cnt * n; i++) ref_reduce(dt, op, orig, 0, n, want, i);
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) {
        cmp_bytes(c.recv[r], (char *)want + r * bytes, bytes, "HcclReduceScatter", r, dt);
        if (!in_place) {
            check_guard(c.recv[r], bytes, "HcclReduceScatter");
            free(c.recv[r]);
        }
        free(c.send[r]);
        free(orig[r]);
    }
    free(want);
}

static void test_allgather(world *w, int dt, bool in_place) {
    const uint32_t n = w->n;
    coll c = {.kind = 2, .dt = dt};
    const uint64_t cnt = odd_count() / 2 + 1;
    const size_t bytes = cnt * esize(dt);
    void *want = malloc(bytes * n);
    for (uint32_t r = 0; r < n; r++) {
        c.count[r] = cnt;
        c.recv[r] = gbuf(bytes * n);
        c.send[r] = in_place ? (char *)c.recv[r] + r * bytes : gbuf(bytes);
        fill(dt, c.send[r], cnt, false);
        memcpy((char *)want + r * bytes, c.send[r], bytes);
    }
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) {
        cmp_bytes(c.recv[r], want, bytes * n, "HcclAllGather", r, dt);
        check_guard(c.recv[r], bytes * n, "HcclAllGather");
        if (!in_place) free(c.send[r]);
        free(c.recv[r]);
    }
    free(want);
}

static void test_broadcast(world *w, int dt, uint32_t root) {
    const uint32_t n = w->n;
    coll c = {.kind = 3, .dt = dt, .root = root};
    const uint64_t cnt = odd_count();
    const size_t bytes = cnt * esize(dt);
    void *want = malloc(bytes);
    for (uint32_t r = 0; r < n; r++) {
        c.count[r] = cnt;
        c.send[r] = gbuf(bytes);
        if (r == root) fill(dt, c.send[r], cnt, false);
    }
    memcpy(want, c.send[root], bytes);
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) {
        cmp_bytes(c.send[r], want, bytes, "HcclBroadcast", r, dt);
        check_guard(c.send[r], bytes, "HcclBroadcast");
        free(c.send[r]);
    }
    free(want);
}

static void test_alltoall(world *w, int dt) {
    const uint32_t n = w->n;
    coll c = {.kind = 4, .dt = dt};
    const uint64_t cnt = odd_count() / 4 + 1;
    const size_t bytes = cnt * esize(dt);
    for (uint32_t r = 0; r < n; r++) {
        c.count[r] = cnt;
        c.send[r] = gbuf(bytes * n);
        fill(dt, c.send[r], cnt * n, false);
        c.recv[r] = gbuf(bytes * n);
    }
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) {
        for (uint32_t q = 0; q < n; q++)
            cmp_bytes((char *)c.recv[r] + q * bytes, (char *)c.send[q] + r * bytes, bytes, "HcclAlltoAll", r, dt);
        check_guard(c.recv[r], bytes * n, "HcclAlltoAll");
    }
    for (uint32_t r = 0; r < n; r++) free(c.send[r]), free(c.recv[r]);
}

/* A random count matrix (zero rows, zero columns, one heavy pair: MoE's uneven routing) and displacements
 * with gaps; the gaps keep their poison. */
static void alltoallv_layout(coll *c, uint32_t n, int shape) {
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) {
            uint64_t v = (uint64_t)rnd_int(0, 300);
            if (rnd() % 4 == 0) v = 0;
            if (shape == 1 && i == n - 1) v = 0;                 /* a rank that sends nothing */
            if (shape == 2) v = (j == 0) ? (uint64_t)rnd_int(1000, 3000) : 0; /* every token to one rank */
            c->sc[i][j] = v;
            c->rc[j][i] = v;
        }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t so = (uint64_t)rnd_int(0, 3), ro = (uint64_t)rnd_int(0, 3);
        for (uint32_t j = 0; j < n; j++) { /* send blocks in a shuffled order, receive blocks with gaps */
            uint32_t jj = (j * 5 + i) % n;
            c->sd[i][jj] = so;
            so += c->sc[i][jj] + (uint64_t)rnd_int(0, 2);
            c->rd[i][j] = ro;
            ro += c->rc[i][j] + (uint64_t)rnd_int(0, 5);
        }
    }
}

static uint64_t extent(const uint64_t *cnt, const uint64_t *dis, uint32_t n) {
    uint64_t hi = 0;
    for (uint32_t j = 0; j < n; j++)
        if (dis[j] + cnt[j] > hi) hi = dis[j] + cnt[j];
    return hi;
}

static void test_alltoallv(world *w, int dt, int shape) {
    const uint32_t n = w->n;
    coll c = {.kind = 5, .dt = dt};
    alltoallv_layout(&c, n, shape);
    const size_t e = esize(dt);
    size_t sbytes[8], rbytes[8];
    for (uint32_t r = 0; r < n; r++) {
        sbytes[r] = extent(c.sc[r], c.sd[r], n) * e;
        rbytes[r] = extent(c.rc[r], c.rd[r], n) * e;
        c.send[r] = sbytes[r] || rnd() % 2 ? gbuf(sbytes[r]) : NULL; /* nothing to send: NULL is fine */
        if (c.send[r]) fill(dt, c.send[r], sbytes[r] / e, false);
        c.recv[r] = rbytes[r] || rnd() % 2 ? gbuf(rbytes[r]) : NULL;
    }
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) {
        unsigned char *want = malloc(rbytes[r] + 1);
        memset(want, POISON, rbytes[r]);
        for (uint32_t q = 0; q < n; q++)
            memcpy(want + c.rd[r][q] * e, (char *)c.send[q] + c.sd[q][r] * e, c.rc[r][q] * e);
        if (rbytes[r]) cmp_bytes(c.recv[r], want, rbytes[r], "HcclAlltoAllV", r, HCCL_DATA_TYPE_INT8);
        if (c.recv[r]) check_guard(c.recv[r], rbytes[r], "HcclAlltoAllV");
        free(want);
    }
    for (uint32_t r = 0; r < n; r++) free(c.send[r]), free(c.recv[r]);
}

/* AllGatherV: uneven (some zero) send counts, receive blocks in a shuffled order with gaps that keep their poison. */
static void test_allgatherv(world *w, int dt) {
    const uint32_t n = w->n;
    coll c = {.kind = 7, .dt = dt};
    const size_t e = esize(dt);
    for (uint32_t j = 0; j < n; j++) c.count[j] = rnd() % 4 == 0 ? 0 : (uint64_t)rnd_int(1, 400);
    size_t rbytes[8];
    for (uint32_t i = 0; i < n; i++) {
        uint64_t ro = (uint64_t)rnd_int(0, 3);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t j = (k * 5 + i) % n; /* 5: coprime to every rank count here */
            c.rc[i][j] = c.count[j];
            c.rd[i][j] = ro;
            ro += c.count[j] + (uint64_t)rnd_int(0, 4);
        }
        rbytes[i] = ro * e;
        c.recv[i] = gbuf(rbytes[i]);
        c.send[i] = c.count[i] ? gbuf(c.count[i] * e) : NULL;
        if (c.send[i]) fill(dt, c.send[i], c.count[i], false);
    }
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *want = malloc(rbytes[i] + 1);
        memset(want, POISON, rbytes[i]);
        for (uint32_t j = 0; j < n; j++)
            if (c.count[j]) memcpy(want + c.rd[i][j] * e, c.send[j], c.count[j] * e);
        cmp_bytes(c.recv[i], want, rbytes[i], "HcclAllGatherV", i, HCCL_DATA_TYPE_INT8);
        check_guard(c.recv[i], rbytes[i], "HcclAllGatherV");
        free(want);
    }
    for (uint32_t i = 0; i < n; i++) free(c.send[i]), free(c.recv[i]);
}

/* ReduceScatterV: uneven recv counts (one rank 0), each rank's blocks at its own displacements. */
static void test_reduce_scatterv(world *w, int dt, int op) {
    const uint32_t n = w->n;
    coll c = {.kind = 8, .dt = dt, .op = op};
    const size_t e = esize(dt);
    for (uint32_t r = 0; r < n; r++) c.count[r] = r == 1 ? 0 : (uint64_t)rnd_int(1, 700);
    size_t sbytes[8] = {0};
    for (uint32_t q = 0; q < n; q++) {
        uint64_t so = (uint64_t)rnd_int(0, 3);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t r = (k * 5 + q) % n;
            c.sc[q][r] = c.count[r];
            c.sd[q][r] = so;
            so += c.count[r] + (uint64_t)rnd_int(0, 4);
        }
        sbytes[q] = so * e;
        c.send[q] = gbuf(sbytes[q]);
        fill(dt, c.send[q], so, rnd() % 2);
        c.recv[q] = c.count[q] ? gbuf(c.count[q] * e) : NULL;
    }
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) {
        if (!c.count[r]) continue;
        void *in[8], *want = malloc(c.count[r] * e);
        for (uint32_t q = 0; q < n; q++) in[q] = (char *)c.send[q] + c.sd[q][r] * e;
        for (size_t i = 0; i < c.count[r]; i++) ref_reduce(dt, op, in, 0, n, want, i);
        cmp_bytes(c.recv[r], want, c.count[r] * e, "HcclReduceScatterV", r, dt);
        check_guard(c.recv[r], c.count[r] * e, "HcclReduceScatterV");
        free(want);
    }
    /* sendCounts that disagree with a rank's recvCount: refused everywhere, outputs untouched */
    c.sc[0][n - 1] += 1;
    for (uint32_t r = 0; r < n; r++)
        if (c.recv[r]) memset(c.recv[r], POISON, c.count[r] * e);
    if (c.sd[0][n - 1] + c.sc[0][n - 1] <= sbytes[0] / e) {
        run_coll(w, &c, HCCL_E_PARA);
        for (uint32_t r = 0; r < n; r++)
            if (c.recv[r]) CHECK(all_poison(c.recv[r], c.count[r] * e + GUARD));
    }
    for (uint32_t r = 0; r < n; r++) free(c.send[r]), free(c.recv[r]);
}

/* Outputs that overlap other ranks' inputs: rank r's recvBuf is rank (r+1)'s sendBuf (the staged path). */
static void test_overlap(world *w) {
    const uint32_t n = w->n;
    if (n < 2) return;
    coll c = {.kind = 0, .dt = HCCL_DATA_TYPE_FP32, .op = HCCL_REDUCE_SUM};
    const uint64_t cnt = odd_count();
    const size_t bytes = cnt * 4;
    void *orig[8], *want = malloc(bytes);
    for (uint32_t r = 0; r < n; r++) {
        c.count[r] = cnt;
        c.send[r] = gbuf(bytes);
        fill(c.dt, c.send[r], cnt, false);
        orig[r] = malloc(bytes);
        memcpy(orig[r], c.send[r], bytes);
    }
    for (uint32_t r = 0; r < n; r++) c.recv[r] = c.send[(r + 1) % n];
    for (size_t i = 0; i < cnt; i++) ref_reduce(c.dt, c.op, orig, 0, n, want, i);
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) cmp_bytes(c.recv[r], want, bytes, "HcclAllReduce (overlapping)", r, c.dt);
    /* alltoall where every output is the next rank's input */
    coll a = {.kind = 4, .dt = HCCL_DATA_TYPE_INT32};
    const uint64_t per = cnt / n + 1;
    for (uint32_t r = 0; r < n; r++) {
        a.count[r] = per;
        a.send[r] = gbuf(per * n * 4);
        fill(a.dt, a.send[r], per * n, false);
        orig[r] = realloc(orig[r], per * n * 4);
        memcpy(orig[r], a.send[r], per * n * 4);
    }
    for (uint32_t r = 0; r < n; r++) a.recv[r] = a.send[(r + 1) % n];
    run_coll(w, &a, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t q = 0; q < n; q++)
            cmp_bytes((char *)a.recv[r] + q * per * 4, (char *)orig[q] + r * per * 4, per * 4, "HcclAlltoAll (overlapping)",
                      r, a.dt);
    for (uint32_t r = 0; r < n; r++) free(c.send[r]), free(a.send[r]), free(orig[r]);
    free(want);
}

/* Counts or types that disagree: HCCL_E_PARA on every rank, outputs untouched. */
static void test_mismatch(world *w) {
    const uint32_t n = w->n;
    if (n < 2) return;
    coll c = {.kind = 0, .dt = HCCL_DATA_TYPE_FP32, .op = HCCL_REDUCE_SUM};
    for (uint32_t r = 0; r < n; r++) {
        c.count[r] = 33 + (r == n - 1);
        c.send[r] = gbuf(34 * 4);
        fill(c.dt, c.send[r], 34, false);
        c.recv[r] = gbuf(34 * 4);
    }
    run_coll(w, &c, HCCL_E_PARA);
    for (uint32_t r = 0; r < n; r++) CHECK(all_poison(c.recv[r], 34 * 4 + GUARD));
    for (uint32_t r = 0; r < n; r++) c.count[r] = 33;
    /* alltoallv whose matrices disagree */
    coll a = {.kind = 5, .dt = HCCL_DATA_TYPE_INT16};
    alltoallv_layout(&a, n, 0);
    a.rc[1][0] += 1; /* rank 1 expects one more element from rank 0 than rank 0 sends */
    for (uint32_t r = 0; r < n; r++) {
        a.send[r] = gbuf(extent(a.sc[r], a.sd[r], n) * 2 + 2);
        a.recv[r] = gbuf(extent(a.rc[r], a.rd[r], n) * 2 + 2);
    }
    run_coll(w, &a, HCCL_E_PARA);
    for (uint32_t r = 0; r < n; r++) {
        CHECK(all_poison(a.recv[r], extent(a.rc[r], a.rd[r], n) * 2 + GUARD));
        free(a.send[r]), free(a.recv[r]);
    }
    /* the communicator still works after a refusal */
    run_coll(w, &c, HCCL_SUCCESS);
    for (uint32_t r = 0; r < n; r++) free(c.send[r]), free(c.recv[r]);
}

/* Different kinds or types on different ranks. */
static int mixed_rank(job *j, uint32_t r, HcclComm comm, aclrtStream st) {
    float *b = j->ctx;
    float *mine = b + r * 16 * 8 * 2;
    if (r == 0) return HcclAllGather(mine, mine + 16, 16, HCCL_DATA_TYPE_FP32, comm, st);
    return HcclAllReduce(mine, mine + 16, 16, r == 1 ? HCCL_DATA_TYPE_INT32 : HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                         comm, st);
}

/* Send/Recv: a ring of sends before receives, then a pair of messages in order, and a receive that mismatches. */
typedef struct {
    float data[8][97], got[8][97];
    int extra[8][2];
} ring_ctx;
static int ring_rank(job *j, uint32_t r, HcclComm comm, aclrtStream st) {
    ring_ctx *c = j->ctx;
    uint32_t n = j->w->n, next = (r + 1) % n, prev = (r + n - 1) % n;
    int rc = HcclSend(c->data[r], 97, HCCL_DATA_TYPE_FP32, next, comm, st);
    if (rc == HCCL_SUCCESS) rc = HcclRecv(c->got[r], 97, HCCL_DATA_TYPE_FP32, prev, comm, st);
    if (rc != HCCL_SUCCESS) return rc;
    /* two messages to the next rank arrive in order; a receive with the wrong count is refused first */
    int v0 = (int)r * 10, v1 = (int)r * 10 + 1;
    if ((rc = HcclSend(&v0, 1, HCCL_DATA_TYPE_INT32, next, comm, st)) != HCCL_SUCCESS) return rc;
    if ((rc = HcclSend(&v1, 1, HCCL_DATA_TYPE_INT32, next, comm, st)) != HCCL_SUCCESS) return rc;
    int64_t wrong[2] = {-1, -1};
    if (HcclRecv(wrong, 2, HCCL_DATA_TYPE_INT32, prev, comm, st) != HCCL_E_PARA || wrong[0] != -1) return 1001;
    if (HcclRecv(wrong, 1, HCCL_DATA_TYPE_FP32, prev, comm, st) != HCCL_E_PARA || wrong[0] != -1) return 1002;
    if ((rc = HcclRecv(&c->extra[r][0], 1, HCCL_DATA_TYPE_INT32, prev, comm, st)) != HCCL_SUCCESS) return rc;
    if ((rc = HcclRecv(&c->extra[r][1], 1, HCCL_DATA_TYPE_INT32, prev, comm, st)) != HCCL_SUCCESS) return rc;
    return HcclBarrier(comm, st);
}

static void test_p2p(world *w) {
    const uint32_t n = w->n;
    if (n < 2) return;
    ring_ctx *c = calloc(1, sizeof *c);
    for (uint32_t r = 0; r < n; r++)
        for (int i = 0; i < 97; i++) c->data[r][i] = (float)(r * 1000 + i);
    job j = {.w = w, .fn = ring_rank, .ctx = c};
    run(&j);
    expect_all(&j, HCCL_SUCCESS, "send/recv ring");
    for (uint32_t r = 0; r < n; r++) {
        uint32_t prev = (r + n - 1) % n;
        CHECK(memcmp(c->got[r], c->data[prev], sizeof c->got[r]) == 0);
        CHECK(c->extra[r][0] == (int)prev * 10 && c->extra[r][1] == (int)prev * 10 + 1);
    }
    free(c);
}

/* Argument checks: each fails on its own rank before any rendezvous. */
static int args_rank(job *j, uint32_t r, HcclComm comm, aclrtStream st) {
    (void)j;
    float b[64] = {0}, o[64 * 8];
    const uint64_t cnt[8] = {1, 1, 1, 1, 1, 1, 1, 1}, dis[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    struct {
        int got, want;
    } t[] = {
        {HcclAllReduce(b, o, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, NULL), HCCL_E_PTR},
        {HcclAllReduce(NULL, o, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, st), HCCL_E_PTR},
        {HcclAllReduce(b, NULL, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, st), HCCL_E_PTR},
        {HcclAllReduce(b, o, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, NULL, st), HCCL_E_PTR},
        {HcclAllReduce(b, o, 4, HCCL_DATA_TYPE_UINT8, HCCL_REDUCE_SUM, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAllReduce(b, o, 4, HCCL_DATA_TYPE_INT128, HCCL_REDUCE_SUM, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAllReduce(b, o, 4, (HcclDataType)99, HCCL_REDUCE_SUM, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAllReduce(b, o, 4, HCCL_DATA_TYPE_FP32, (HcclReduceOp)7, comm, st), HCCL_E_PARA},
        {HcclAllReduce(b, o, 4, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_PROD, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAllReduce(b, o, 4, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_PROD, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAllReduce(b, o, 0x800000000ull, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, st), HCCL_E_PARA},
        {HcclAllReduce(NULL, NULL, 0, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, NULL, NULL), HCCL_SUCCESS}, /* count 0 */
        {HcclBroadcast(b, 4, HCCL_DATA_TYPE_FP32, 8, comm, st), HCCL_E_PARA},
        {HcclBroadcast(NULL, 4, HCCL_DATA_TYPE_FP32, 0, comm, st), HCCL_E_PTR},
        {HcclReduceScatter(b, o, 4, HCCL_DATA_TYPE_UINT32, HCCL_REDUCE_SUM, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAllGather(b, o, 4, HCCL_DATA_TYPE_INT128, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAllGather(b, o, 4, HCCL_DATA_TYPE_FP32, comm, (aclrtStream)b), HCCL_E_PARA}, /* not a stream */
        {HcclAlltoAllV(b, cnt, dis, HCCL_DATA_TYPE_FP32, b, cnt, dis, HCCL_DATA_TYPE_FP32, comm, st), HCCL_E_PARA},
        {HcclAlltoAllV(b, NULL, dis, HCCL_DATA_TYPE_FP32, o, cnt, dis, HCCL_DATA_TYPE_FP32, comm, st), HCCL_E_PTR},
        {HcclAlltoAllV(NULL, cnt, dis, HCCL_DATA_TYPE_FP32, o, cnt, dis, HCCL_DATA_TYPE_FP32, comm, st), HCCL_E_PTR},
        {HcclAlltoAllV(b, cnt, dis, HCCL_DATA_TYPE_FP32, o, cnt, dis, (HcclDataType)13, comm, st), HCCL_E_NOT_SUPPORT},
        {HcclAlltoAll(NULL, 0, HCCL_DATA_TYPE_FP32, NULL, 0, HCCL_DATA_TYPE_FP32, NULL, NULL), HCCL_SUCCESS},
        {HcclSend(b, 4, HCCL_DATA_TYPE_FP32, r, comm, st), HCCL_E_PARA}, /* to itself */
        {HcclSend(b, 4, HCCL_DATA_TYPE_FP32, 9, comm, st), HCCL_E_PARA},
        {HcclRecv(NULL, 4, HCCL_DATA_TYPE_FP32, 0, comm, st), HCCL_E_PTR},
        {HcclBarrier(comm, NULL), HCCL_E_PTR},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].got != t[i].want) {
            fprintf(stderr, "test_hccl: argument case %zu on rank %u: got %d, want %d\n", i, r, t[i].got, t[i].want);
            return 2000 + (int)i;
        }
    return HCCL_SUCCESS;
}

static void test_api(void) {
    HcclComm c[8];
    int32_t dev[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    CHECK_RC(HcclCommInitAll(2, NULL, c), HCCL_E_PTR);
    CHECK_RC(HcclCommInitAll(2, dev, NULL), HCCL_E_PTR);
    CHECK_RC(HcclCommInitAll(0, dev, c), HCCL_E_PARA);
    int32_t dup[3] = {0, 1, 1}, neg[2] = {0, -1};
    CHECK_RC(HcclCommInitAll(3, dup, c), HCCL_E_PARA);
    CHECK_RC(HcclCommInitAll(2, neg, c), HCCL_E_PARA);
    world a, b;
    world_init(&a, 4);
    world_init(&b, 1);
    char na[COMM_NAME_MAX_LENGTH], nb[COMM_NAME_MAX_LENGTH];
    memset(na, 'x', sizeof na);
    CHECK_RC(HcclGetCommName(a.comm[2], na), HCCL_SUCCESS);
    CHECK(memchr(na, '\0', sizeof na) != NULL && strlen(na) > 0);
    char n3[COMM_NAME_MAX_LENGTH];
    CHECK_RC(HcclGetCommName(a.comm[3], n3), HCCL_SUCCESS);
    CHECK(strcmp(na, n3) == 0); /* one name per communicator */
    CHECK_RC(HcclGetCommName(b.comm[0], nb), HCCL_SUCCESS);
    CHECK(strcmp(na, nb) != 0);
    CHECK_RC(HcclGetCommName(a.comm[0], NULL), HCCL_E_PTR);
    CHECK_RC(HcclGetCommName(NULL, na), HCCL_E_PTR);
    CHECK_RC(HcclGetRankSize(a.comm[0], NULL), HCCL_E_PTR);
    for (uint32_t i = 0; i < 4; i++) {
        uint32_t v = 99;
        CHECK_RC(HcclGetRankId(a.comm[i], &v), HCCL_SUCCESS);
        CHECK(v == i);
        CHECK_RC(HcclGetRankSize(a.comm[i], &v), HCCL_SUCCESS);
        CHECK(v == 4);
    }
    /* the name lookup: the rank this thread last used */
    HcclComm h = NULL;
    CHECK_RC(HcclCommGetHandleWithName(na, &h), HCCL_SUCCESS);
    CHECK(h == a.comm[3]);
    uint32_t id;
    CHECK_RC(HcclGetRankId(a.comm[1], &id), HCCL_SUCCESS);
    CHECK_RC(HcclCommGetHandleWithName(na, &h), HCCL_SUCCESS);
    CHECK(h == a.comm[1]);
    CHECK_RC(HcclCommGetHandleWithName(nb, &h), HCCL_SUCCESS);
    CHECK(h == b.comm[0]);
    CHECK_RC(HcclCommGetHandleWithName("no such communicator", &h), HCCL_E_NOT_FOUND);
    CHECK_RC(HcclCommGetHandleWithName(NULL, &h), HCCL_E_PTR);
    /* error strings */
    for (int code = 0; code <= 25; code++) CHECK(HcclGetErrorString((HcclResult)code) != NULL);
    CHECK(strcmp(HcclGetErrorString(HCCL_E_TIMEOUT), HcclGetErrorString(HCCL_SUCCESS)) != 0);
    HcclResult ae = HCCL_E_INTERNAL;
    CHECK_RC(HcclGetCommAsyncError(a.comm[0], &ae), HCCL_SUCCESS);
    CHECK(ae == HCCL_SUCCESS);
    /* rank tables are not there yet: a clear refusal */
    CHECK_RC(HcclCommInitClusterInfo("rank_table.json", 0, &h), HCCL_E_NOT_SUPPORT);
    HcclConfigValue cv = {1};
    CHECK_RC(HcclSetConfig(HCCL_DETERMINISTIC, cv), HCCL_SUCCESS);
    cv.value = 0;
    CHECK_RC(HcclGetConfig(HCCL_DETERMINISTIC, &cv), HCCL_SUCCESS);
    CHECK(cv.value == 1);
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    CHECK(cfg.hcclExecTimeOut == HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET && cfg.hcclBufferSize == 0xffffffffu);
    /* a one-rank communicator runs every collective against itself */
    aclrtStream st;
    CHECK_RC(aclrtCreateStream(&st), ACL_SUCCESS);
    int32_t x[5] = {1, 2, 3, 4, 5}, y[5] = {0};
    CHECK_RC(HcclAllReduce(x, y, 5, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, b.comm[0], st), HCCL_SUCCESS);
    CHECK(memcmp(x, y, sizeof x) == 0);
    CHECK_RC(HcclBarrier(b.comm[0], st), HCCL_SUCCESS);
    CHECK_RC(aclrtSynchronizeStream(st), ACL_SUCCESS);
    /* argument checks on every rank of a */
    job j = {.w = &a, .fn = args_rank};
    run(&j);
    expect_all(&j, HCCL_SUCCESS, "argument checks");
    /* mixed kinds / types: refused on every rank */
    float *mb = calloc(8 * 16 * 8 * 2, sizeof *mb);
    j = (job){.w = &a, .fn = mixed_rank, .ctx = mb};
    run(&j);
    expect_all(&j, HCCL_E_PARA, "mixed kinds and types");
    free(mb);
    world_free(&a);
    world_free(&b);
    CHECK_RC(HcclCommDestroy(a.comm[0]), HCCL_E_PARA); /* twice */
    CHECK_RC(HcclGetRankId(a.comm[0], &id), HCCL_E_PARA);
    CHECK_RC(HcclCommGetHandleWithName(na, &h), HCCL_E_NOT_FOUND);
    CHECK_RC(aclrtDestroyStream(st), ACL_SUCCESS);
}

/* ---- faults ---- */
typedef struct {
    volatile int released;
    pthread_mutex_t m;
    pthread_cond_t cv;
    int mode; /* 0: the last rank never arrives; 1: the last rank destroys its comm */
    float buf[8][64];
} fault_ctx;

static int fault_rank(job *j, uint32_t r, HcclComm comm, aclrtStream st) {
    fault_ctx *c = j->ctx;
    const uint32_t n = j->w->n;
    if (r == n - 1) {
        if (c->mode == 1) return HcclCommDestroy(comm);
        pthread_mutex_lock(&c->m); /* absent until the others have given up */
        while (!c->released) pthread_cond_wait(&c->cv, &c->m);
        pthread_mutex_unlock(&c->m);
        /* arriving late: the communicator is broken, at once */
        return HcclAllReduce(c->buf[r], c->buf[r] + 32, 32, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, st);
    }
    memset(c->buf[r] + 32, 0x5A, 32 * 4);
    int rc = HcclAllReduce(c->buf[r], c->buf[r] + 32, 32, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, st);
    for (int i = 0; i < 32 * 4; i++)
        if (((unsigned char *)(c->buf[r] + 32))[i] != 0x5A) return 3000; /* output written on failure */
    int rc2 = HcclBarrier(comm, st); /* later calls fail at once */
    return rc == rc2 ? rc : 3001;
}

static void test_faults(uint32_t n) {
    /* a rank that never arrives: HCCL_E_TIMEOUT after HCCL_EXEC_TIMEOUT (read at creation) */
    setenv("HCCL_EXEC_TIMEOUT", "0.3", 1);
    world w;
    world_init(&w, n);
    unsetenv("HCCL_EXEC_TIMEOUT");
    fault_ctx *c = calloc(1, sizeof *c);
    pthread_mutex_init(&c->m, NULL);
    pthread_cond_init(&c->cv, NULL);
    job j = {.w = &w, .fn = fault_rank, .ctx = c};
    pthread_t t[8];
    targ a[8];
    for (uint32_t r = 0; r < n; r++) {
        a[r] = (targ){&j, r};
        CHECK(pthread_create(&t[r], NULL, rank_main, &a[r]) == 0);
    }
    for (uint32_t r = 0; r + 1 < n; r++) pthread_join(t[r], NULL);
    pthread_mutex_lock(&c->m);
    c->released = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->m);
    pthread_join(t[n - 1], NULL);
    expect_all(&j, HCCL_E_TIMEOUT, "a rank that never arrives");
    /* the first to arrive waited the timeout; a rank that arrived after the communicator broke returns at once */
    double longest = 0;
    for (uint32_t r = 0; r + 1 < n; r++) {
        if (j.secs[r] > 10) FAIL("rank %u gave up after %.3f s (timeout 0.3 s)", r, j.secs[r]);
        if (j.secs[r] > longest) longest = j.secs[r];
    }
    if (longest < 0.25) FAIL("no rank waited the 0.3 s timeout (longest %.3f s)", longest);
    HcclResult ae;
    CHECK_RC(HcclGetCommAsyncError(w.comm[0], &ae), HCCL_SUCCESS);
    CHECK(ae == HCCL_E_TIMEOUT);
    world_free(&w);

    /* a destroyed peer: HCCL_E_UNAVAIL, long before the default timeout */
    world_init(&w, n);
    memset(c, 0, sizeof *c);
    c->mode = 1;
    j = (job){.w = &w, .fn = fault_rank, .ctx = c};
    run(&j);
    for (uint32_t r = 0; r + 1 < n; r++) {
        if (j.rc[r] != HCCL_E_UNAVAIL) FAIL("destroyed peer: rank %u returned %d", r, j.rc[r]);
        if (j.secs[r] > 30) FAIL("destroyed peer: rank %u waited %.1f s", r, j.secs[r]);
    }
    CHECK(j.rc[n - 1] == HCCL_SUCCESS);
    for (uint32_t r = 0; r + 1 < n; r++) CHECK_RC(HcclCommDestroy(w.comm[r]), HCCL_SUCCESS);
    free(c);
}

/* Many collectives back to back (the generation counting): a fast rank never mixes with a slow one. */
typedef struct {
    int64_t v[8][3];
} churn_ctx;
static int churn_rank(job *j, uint32_t r, HcclComm comm, aclrtStream st) {
    churn_ctx *c = j->ctx;
    for (int it = 0; it < 300; it++) {
        int64_t in[3] = {it, (int64_t)r, 1}, out[3];
        int rc = HcclAllReduce(in, out, 3, HCCL_DATA_TYPE_INT64, it % 2 ? HCCL_REDUCE_MAX : HCCL_REDUCE_SUM, comm, st);
        if (rc != HCCL_SUCCESS) return rc;
        int64_t n = j->w->n;
        if (it % 2 == 0 && (out[0] != it * n || out[1] != n * (n - 1) / 2 || out[2] != n)) return 4000 + it;
        if (it % 2 == 1 && (out[0] != it || out[1] != n - 1)) return 5000 + it;
        if (it % 7 == 0 && (rc = HcclBarrier(comm, st)) != HCCL_SUCCESS) return rc;
        memcpy(c->v[r], out, sizeof out);
    }
    return HCCL_SUCCESS;
}

/* ---- HcclGetRootInfo + HcclCommInitRootInfo: ranks as threads of this process (hicann/hccl's examples) ---- */
typedef struct {
    HcclRootInfo ri;
    uint32_t n, skip; /* ranks 0..n-1 join, but not `skip` (n: none skipped) */
    uint32_t say_n[8];
    const HcclCommConfig *cfg;
    HcclComm comm[8];
    int rc[8];
    char name[8][COMM_NAME_MAX_LENGTH];
    int32_t sum[8][5];
} root_ctx;
typedef struct {
    root_ctx *c;
    uint32_t r;
} root_arg;

static void *root_rank(void *p) {
    root_arg *a = p;
    root_ctx *c = a->c;
    const uint32_t r = a->r;
    c->rc[r] = c->cfg ? HcclCommInitRootInfoConfig(c->say_n[r], &c->ri, r, c->cfg, &c->comm[r])
                      : HcclCommInitRootInfo(c->say_n[r], &c->ri, r, &c->comm[r]);
    if (c->rc[r] != HCCL_SUCCESS) return NULL;
    aclrtStream st = NULL;
    uint32_t id = 99, size = 0;
    int32_t x[5] = {(int32_t)r, 1, 2, 3, -(int32_t)r};
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&st) != ACL_SUCCESS ||
        HcclGetRankId(c->comm[r], &id) != HCCL_SUCCESS || id != r ||
        HcclGetRankSize(c->comm[r], &size) != HCCL_SUCCESS || size != c->n ||
        HcclGetCommName(c->comm[r], c->name[r]) != HCCL_SUCCESS ||
        HcclAllReduce(x, c->sum[r], 5, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, c->comm[r], st) != HCCL_SUCCESS ||
        aclrtSynchronizeStream(st) != ACL_SUCCESS || HcclCommDestroy(c->comm[r]) != HCCL_SUCCESS)
        c->rc[r] = 6000;
    aclrtDestroyStream(st);
    return NULL;
}

static void run_root(root_ctx *c) {
    pthread_t t[8];
    root_arg a[8];
    for (uint32_t r = 0; r < c->n; r++) {
        if (r == c->skip) continue;
        if (c->say_n[r] == 0) c->say_n[r] = c->n;
        a[r] = (root_arg){c, r};
        CHECK(pthread_create(&t[r], NULL, root_rank, &a[r]) == 0);
    }
    for (uint32_t r = 0; r < c->n; r++)
        if (r != c->skip) pthread_join(t[r], NULL);
}

static void test_root_info(void) {
    CHECK_RC(HcclGetRootInfo(NULL), HCCL_E_PTR);
    for (uint32_t n = 1; n <= 8; n *= 2) { /* every rank joins: a working communicator */
        root_ctx *c = calloc(1, sizeof *c);
        CHECK_RC(HcclGetRootInfo(&c->ri), HCCL_SUCCESS);
        c->n = n;
        c->skip = n;
        run_root(c);
        for (uint32_t r = 0; r < n; r++) {
            if (c->rc[r] != HCCL_SUCCESS) FAIL("root info, %u ranks: rank %u returned %d", n, r, c->rc[r]);
            CHECK(strcmp(c->name[r], c->name[0]) == 0);
            CHECK(c->sum[r][0] == (int32_t)(n * (n - 1) / 2) && c->sum[r][1] == (int32_t)n &&
                  c->sum[r][3] == 3 * (int32_t)n && c->sum[r][4] == -c->sum[r][0]);
        }
        free(c);
    }
    /* HcclCommInitRootInfoConfig: the config's name; a second live communicator may not take it */
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    strcpy(cfg.hcclCommName, "moefr_test_ep_group");
    root_ctx *c = calloc(1, sizeof *c);
    CHECK_RC(HcclGetRootInfo(&c->ri), HCCL_SUCCESS);
    c->n = 2;
    c->skip = 2;
    c->cfg = &cfg;
    run_root(c);
    CHECK(c->rc[0] == HCCL_SUCCESS && c->rc[1] == HCCL_SUCCESS);
    CHECK(strcmp(c->name[0], "moefr_test_ep_group") == 0 && strcmp(c->name[1], c->name[0]) == 0);
    HcclRootInfo ri;
    HcclComm one = NULL, dup = NULL;
    CHECK_RC(HcclGetRootInfo(&ri), HCCL_SUCCESS);
    CHECK_RC(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &one), HCCL_SUCCESS);
    HcclRootInfo ri2;
    CHECK_RC(HcclGetRootInfo(&ri2), HCCL_SUCCESS);
    CHECK_RC(HcclCommInitRootInfoConfig(1, &ri2, 0, &cfg, &dup), HCCL_E_PARA); /* the name is taken */
    CHECK_RC(HcclCommDestroy(one), HCCL_SUCCESS);
    free(c);
    /* arguments */
    HcclComm h;
    CHECK_RC(HcclCommInitRootInfo(2, NULL, 0, &h), HCCL_E_PTR);
    CHECK_RC(HcclCommInitRootInfo(2, &ri, 0, NULL), HCCL_E_PTR);
    CHECK_RC(HcclCommInitRootInfo(0, &ri, 0, &h), HCCL_E_PARA);
    CHECK_RC(HcclCommInitRootInfo(2, &ri, 2, &h), HCCL_E_PARA);
    CHECK_RC(HcclCommInitRootInfoConfig(2, &ri, 0, NULL, &h), HCCL_E_PTR);
    HcclCommConfig raw;
    memset(&raw, 0, sizeof raw);
    CHECK_RC(HcclCommInitRootInfoConfig(2, &ri, 0, &raw, &h), HCCL_E_PARA); /* not from HcclCommConfigInit */
    HcclRootInfo zero;
    memset(&zero, 0, sizeof zero);
    CHECK_RC(HcclCommInitRootInfo(2, &zero, 0, &h), HCCL_E_PARA); /* not from HcclGetRootInfo */
    /* a root info from another process: not yet (processes are the next step) */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        HcclRootInfo other;
        _exit(HcclGetRootInfo(&other) == HCCL_SUCCESS && write(fds[1], &other, sizeof other) == (ssize_t)sizeof other
                  ? 0
                  : 1);
    }
    HcclRootInfo other;
    CHECK(read(fds[0], &other, sizeof other) == (ssize_t)sizeof other);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    CHECK_RC(HcclCommInitRootInfo(2, &other, 0, &h), HCCL_E_NOT_SUPPORT);
    /* a rank that never joins: HCCL_E_TIMEOUT after HCCL_CONNECT_TIMEOUT (moefr takes fractions) */
    setenv("HCCL_CONNECT_TIMEOUT", "0.3", 1);
    c = calloc(1, sizeof *c);
    CHECK_RC(HcclGetRootInfo(&c->ri), HCCL_SUCCESS);
    c->n = 4;
    c->skip = 2;
    double t0 = now_s();
    run_root(c);
    double waited = now_s() - t0;
    for (uint32_t r = 0; r < 4; r++)
        if (r != 2 && c->rc[r] != HCCL_E_TIMEOUT) FAIL("missing joiner: rank %u returned %d", r, c->rc[r]);
    if (waited < 0.25 || waited > 10) FAIL("missing joiner: the ranks waited %.3f s (timeout 0.3 s)", waited);
    /* ranks that disagree on nRanks: the second is refused at once, the first times out */
    memset(c, 0, sizeof *c);
    CHECK_RC(HcclGetRootInfo(&c->ri), HCCL_SUCCESS);
    c->n = 2;
    c->skip = 1;
    c->say_n[0] = 2;
    pthread_t t;
    root_arg a0 = {c, 0};
    CHECK(pthread_create(&t, NULL, root_rank, &a0) == 0);
    usleep(50000);
    CHECK_RC(HcclCommInitRootInfo(3, &c->ri, 1, &h), HCCL_E_PARA);
    CHECK_RC(HcclCommInitRootInfo(2, &c->ri, 0, &h), HCCL_E_PARA); /* rank 0 has joined already */
    pthread_join(t, NULL);
    CHECK(c->rc[0] == HCCL_E_TIMEOUT);
    unsetenv("HCCL_CONNECT_TIMEOUT");
    free(c);
}

int main(void) {
    const char *seed = getenv("MOEFR_TEST_SEED");
    if (seed) g_rng = strtoull(seed, NULL, 0) | 1;
    printf("test_hccl: seed 0x%llx (MOEFR_TEST_SEED replays)\n", (unsigned long long)g_rng);
    test_api();
    test_root_info();
    const uint32_t sizes[] = {2, 3, 4, 8};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        world w;
        world_init(&w, sizes[s]);
        for (int t = 0; t < N_REDUCE_TYPES; t++)
            for (int op = 0; op <= 3; op++) {
                if (op == HCCL_REDUCE_PROD && !prod_ok(REDUCE_TYPES[t])) continue;
                test_allreduce(&w, REDUCE_TYPES[t], op, true, false);
                test_allreduce(&w, REDUCE_TYPES[t], op, false, (t + op) % 3 == 0);
                test_reduce_scatter(&w, REDUCE_TYPES[t], op, (t + op) % 2 == 0);
                test_reduce_scatterv(&w, REDUCE_TYPES[t], op);
            }
        for (size_t t = 0; t < sizeof MOVE_TYPES / sizeof MOVE_TYPES[0]; t++) {
            test_allgather(&w, MOVE_TYPES[t], t % 2 == 0);
            test_broadcast(&w, MOVE_TYPES[t], (uint32_t)(t % sizes[s]));
            test_alltoall(&w, MOVE_TYPES[t]);
            test_allgatherv(&w, MOVE_TYPES[t]);
            for (int shape = 0; shape < 3; shape++) test_alltoallv(&w, MOVE_TYPES[t], shape);
        }
        test_overlap(&w);
        test_mismatch(&w);
        test_p2p(&w);
        churn_ctx *cc = calloc(1, sizeof *cc);
        job j = {.w = &w, .fn = churn_rank, .ctx = cc};
        run(&j);
        expect_all(&j, HCCL_SUCCESS, "back-to-back collectives");
        free(cc);
        world_free(&w);
        test_faults(sizes[s]);
        printf("test_hccl: %u ranks ok\n", sizes[s]);
    }
    printf("test_hccl: ok\n");
    return 0;
}
