/* test_determinism.c - the operator's bits against the SPEC section 4 numerics
 * recomputed here (the canonical order of ref_dot.h), under whatever MOEFR_ISA and
 * MOEFR_NUM_THREADS CTest sets, also from several user threads at once; and the
 * forward's (aclnnMoeFinalizeRoutingV2) against fwd_ref's canonical order of issue 13. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "fwd_ref.h"
#include "moefr/moefr.h"
#include "ref_dot.h"
#include "ref_fp.h"

typedef struct cfg {
    const char *name;
    aclDataType dt, sdt; /* data and scales dtypes */
    int mode, has_scales, has_bias;
    int64_t R, K, H, E, C, active, gy_pad; /* gy_pad > 0: gradY rows are strided */
} cfg;

static const cfg CASES[] = {
    {"f32 mode0 bias tails", ACL_FLOAT, ACL_FLOAT, 0, 1, 1, 300, 5, 203, 6, 0, 0, 0},
    {"bf16 data f32 scales mode1", ACL_BF16, ACL_FLOAT, 1, 1, 0, 257, 4, 520, 7, 90, 0, 0},
    {"f16 K>32 activeNum", ACL_FLOAT16, ACL_FLOAT16, 0, 1, 0, 64, 40, 72, 0, 0, 2000, 0},
    {"f32 copy (no scales)", ACL_FLOAT, ACL_FLOAT, 0, 0, 0, 500, 1, 1000, 0, 0, 0, 0},
    {"f32 streaming output", ACL_FLOAT, ACL_FLOAT, 0, 1, 0, 1100, 8, 1040, 0, 0, 0, 0},
    {"bf16 strided gradY mode1 bias", ACL_BF16, ACL_BF16, 1, 1, 1, 200, 3, 96, 5, 100, 0, 5},
    {"f32 H tiles bias", ACL_FLOAT, ACL_FLOAT, 0, 1, 1, 100, 2, 2100, 3, 0, 0, 0},
    {"f16 mode1 bias", ACL_FLOAT16, ACL_FLOAT16, 1, 1, 1, 150, 6, 136, 4, 200, 0, 0},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])

typedef struct buf {
    const cfg *c;
    int64_t D0, N;
    void *gy, *x, *bias, *scales, *gx, *gs, *want_gx, *want_gs;
    int32_t *idx, *eidx;
} buf;

static __thread uint64_t t_rng;
static uint32_t rnd(void) {
    t_rng ^= t_rng << 13, t_rng ^= t_rng >> 7, t_rng ^= t_rng << 17;
    return (uint32_t)(t_rng >> 16);
}
static size_t esz(aclDataType d) { return d == ACL_FLOAT ? 4 : 2; }
static double get(aclDataType d, const void *p, int64_t j) {
    if (d == ACL_FLOAT) return ((const float *)p)[j];
    return ref_val16(d == ACL_BF16, ((const uint16_t *)p)[j]);
}
/* Stores v rounded once to d (for fp32 the double -> float cast is RNE). */
static void put(aclDataType d, void *p, int64_t j, double v) {
    if (d == ACL_FLOAT) ((float *)p)[j] = (float)v;
    else ((uint16_t *)p)[j] = ref_round16(d == ACL_BF16, v);
}
static double rnd_val(void) { return ((double)(int32_t)rnd() / 2147483648.0) * ldexp(1.0, (int)(rnd() % 9) - 4); }

static void make(buf *b, const cfg *c) {
    memset(b, 0, sizeof *b);
    b->c = c;
    int64_t R = c->R, K = c->K, H = c->H, N = R * K;
    b->N = N;
    b->D0 = c->mode == 1 ? c->E * c->C : (c->active > 0 && c->active < N ? c->active : N);
    size_t es = esz(c->dt), ses = esz(c->sdt);
    int64_t gstride = H + c->gy_pad;
    b->gy = malloc((size_t)(R * gstride + 1) * es);
    for (int64_t i = 0; i < R * gstride; i++) put(c->dt, b->gy, i, rnd_val());
    b->x = malloc((size_t)(b->D0 * H + 1) * es);
    for (int64_t i = 0; i < b->D0 * H; i++) put(c->dt, b->x, i, rnd_val());
    b->idx = malloc((size_t)N * 4);
    if (c->mode == 0) { /* a permutation of [0, N) */
        for (int64_t i = 0; i < N; i++) b->idx[i] = (int32_t)i;
        for (int64_t i = N - 1; i > 0; i--) {
            int64_t j = rnd() % (i + 1);
            int32_t t = b->idx[i]; b->idx[i] = b->idx[j]; b->idx[j] = t;
        }
    } else { /* distinct slots of [0, E*C), about a fifth dropped (-1) */
        int64_t slots = c->E * c->C;
        int32_t *perm = malloc((size_t)slots * 4);
        for (int64_t i = 0; i < slots; i++) perm[i] = (int32_t)i;
        for (int64_t i = slots - 1; i > 0; i--) {
            int64_t j = rnd() % (i + 1);
            int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
        int64_t used = 0;
        for (int64_t i = 0; i < N; i++) b->idx[i] = (rnd() % 5 == 0 || used >= slots) ? -1 : perm[used++];
        free(perm);
    }
    if (c->has_scales) {
        b->scales = malloc((size_t)N * ses);
        for (int64_t i = 0; i < N; i++) put(c->sdt, b->scales, i, rnd_val());
    }
    if (c->has_bias) {
        b->bias = malloc((size_t)(c->E * H + 1) * es);
        for (int64_t i = 0; i < c->E * H; i++) put(c->dt, b->bias, i, rnd_val());
        b->eidx = malloc((size_t)N * 4);
        for (int64_t i = 0; i < N; i++) b->eidx[i] = (int32_t)(rnd() % c->E);
    }
    size_t gsbytes = (size_t)N * (c->has_scales ? ses : es);
    b->gx = malloc((size_t)(b->D0 * H + 1) * es);
    b->gs = malloc(gsbytes + 1);
    b->want_gx = malloc((size_t)(b->D0 * H + 1) * es);
    b->want_gs = malloc(gsbytes + 1);

    /* the reference */
    aclDataType gsd = c->has_scales ? c->sdt : c->dt;
    memset(b->want_gx, 0, (size_t)(b->D0 * H) * es); /* unwritten drop-pad rows are +0.0 */
    memset(b->want_gs, 0xEE, gsbytes);               /* without scales gradScales stays untouched */
    double *vg = malloc((size_t)H * sizeof(double) + 8), *vx = malloc((size_t)H * sizeof(double) + 8),
           *vb = malloc((size_t)H * sizeof(double) + 8);
    for (int64_t i = 0; i < N; i++) {
        int64_t r = i / K, d = b->idx[i];
        int kept = d >= 0 && d < b->D0;
        const char *g = (const char *)b->gy + r * gstride * (int64_t)es;
        if (!c->has_scales) {
            if (kept) memcpy((char *)b->want_gx + d * H * (int64_t)es, g, (size_t)H * es);
            continue;
        }
        double s = get(c->sdt, b->scales, i);
        double lane[8] = {0};
        for (int64_t j = 0; j < H; j++) {
            double gv = get(c->dt, g, j);
            if (kept) put(c->dt, (char *)b->want_gx + d * H * (int64_t)es, j, (float)(gv * s));
            vg[j] = gv;
            vx[j] = kept ? get(c->dt, b->x, d * H + j) : 0;
            vb[j] = c->has_bias ? get(c->dt, b->bias, b->eidx[i] * H + j) : 0;
        }
        /* gradScales in the canonical order (ref_dot.h) */
        ref_dot_canon(c->dt == ACL_FLOAT16, c->dt == ACL_BF16, kept ? vx : NULL, c->has_bias ? vb : NULL, vg, H, lane);
        double sum = ref_dot_reduce(lane);
        put(gsd, b->want_gs, i, sum);
    }
    free(vg), free(vx), free(vb);
}

static void release(buf *b) {
    void *p[] = {b->gy, b->x, b->bias, b->scales, b->gx, b->gs, b->want_gx, b->want_gs, b->idx, b->eidx};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *q = p;
    for (size_t i = 0; i < n; i++) h = (h ^ q[i]) * 1099511628211ull;
    return h;
}

/* Runs the operator on b; 0 when its outputs equal the reference bit for bit. */
static int run(buf *b, uint64_t *hash) {
    const cfg *c = b->c;
    int64_t R = c->R, K = c->K, H = c->H, N = b->N;
    size_t es = esz(c->dt);
    aclDataType gsd = c->has_scales ? c->sdt : c->dt;
    memset(b->gx, 0x7F, (size_t)(b->D0 * H) * es); /* poison */
    memset(b->gs, 0xEE, (size_t)N * esz(gsd));
    int64_t d_gy[2] = {R, H}, s_gy[2] = {H + c->gy_pad, 1}, st_gy[1] = {R * (H + c->gy_pad)};
    int64_t d_idx[1] = {N}, d_rk[2] = {R, K}, d_b[2] = {c->E, H};
    int64_t d_x2[2] = {b->D0, H}, d_x3[3] = {c->E, c->C, H};
    const int64_t *dx = c->mode == 1 ? d_x3 : d_x2;
    int xr = c->mode == 1 ? 3 : 2;
    aclTensor *tgy = aclCreateTensor(d_gy, 2, c->dt, s_gy, 0, ACL_FORMAT_ND, st_gy, 1, b->gy);
    aclTensor *tidx = aclCreateTensor(d_idx, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d_idx, 1, b->idx);
    aclTensor *tx = c->has_scales ? aclCreateTensor(dx, xr, c->dt, NULL, 0, ACL_FORMAT_ND, dx, xr, b->x) : NULL;
    aclTensor *ts = c->has_scales ? aclCreateTensor(d_rk, 2, c->sdt, NULL, 0, ACL_FORMAT_ND, d_rk, 2, b->scales) : NULL;
    aclTensor *te = c->has_bias ? aclCreateTensor(d_rk, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d_rk, 2, b->eidx) : NULL;
    aclTensor *tb = c->has_bias ? aclCreateTensor(d_b, 2, c->dt, NULL, 0, ACL_FORMAT_ND, d_b, 2, b->bias) : NULL;
    aclTensor *tgx = aclCreateTensor(dx, xr, c->dt, NULL, 0, ACL_FORMAT_ND, dx, xr, b->gx);
    int64_t d_gs[2] = {R, c->has_scales ? K : 1};
    aclTensor *tgs = aclCreateTensor(d_gs, 2, gsd, NULL, 0, ACL_FORMAT_ND, d_gs, 2, b->gs);
    int bad = 0;
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    int rc = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tgy, tidx, tx, ts, te, tb, c->mode, c->active, c->E,
                                                           c->C, tgx, tgs, &wsz, &ex);
    if (rc == 0) {
        void *ws = wsz ? malloc(wsz) : NULL;
        rc = aclnnMoeFinalizeRoutingV2Grad(ws, wsz, ex, NULL);
        free(ws);
    }
    if (rc != 0) {
        fprintf(stderr, "test_determinism: %s: status %d: %s\n", c->name, rc, aclGetRecentErrMsg());
        bad = 1;
    } else {
        size_t gxb = (size_t)(b->D0 * H) * es, gsb = (size_t)N * esz(gsd);
        if (memcmp(b->gx, b->want_gx, gxb) != 0) {
            for (size_t i = 0; i < gxb; i++)
                if (((char *)b->gx)[i] != ((char *)b->want_gx)[i]) {
                    fprintf(stderr, "test_determinism: %s: gradExpandedX differs first at byte %zu\n", c->name, i);
                    break;
                }
            bad = 1;
        }
        if (memcmp(b->gs, b->want_gs, gsb) != 0) {
            for (int64_t i = 0; i < N; i++)
                if (memcmp((char *)b->gs + i * esz(gsd), (char *)b->want_gs + i * esz(gsd), esz(gsd)) != 0) {
                    fprintf(stderr, "test_determinism: %s: gradScales[%lld] = %.17g, want %.17g\n", c->name,
                            (long long)i, get(gsd, b->gs, i), get(gsd, b->want_gs, i));
                    break;
                }
            bad = 1;
        }
        *hash = fnv(fnv(14695981039346656037ull, b->gx, gxb), b->gs, gsb);
    }
    aclTensor *all[] = {tgy, tidx, tx, ts, te, tb, tgx, tgs};
    for (int i = 0; i < 8; i++)
        if (all[i]) aclDestroyTensor(all[i]);
    return bad;
}

typedef struct job { buf *b; int ncases, fails, rounds; } job;
static void *hammer(void *arg) { /* one user thread re-running every case */
    job *j = arg;
    for (int r = 0; r < j->rounds; r++)
        for (int i = 0; i < j->ncases; i++) {
            uint64_t h;
            j->fails += run(&j->b[i], &h);
        }
    return NULL;
}

/* ---- the forward: tokens split over the pool's workers, fp32 groups and their fp64 fallback ---- */
typedef struct fcfg {
    const char *name;
    int dt, sdt, mode; /* fwd_ref dtype codes (= aclDataType) */
    int64_t R, K, H;
} fcfg;
static const fcfg FCASES[] = {
    {"fwd f32 K8 tails", FR_F32, FR_F32, 2, 900, 8, 203},
    {"fwd bf16 f32-scales mode0", FR_BF16, FR_F32, 0, 700, 4, 129},
    {"fwd f16 K40 (fp64)", FR_F16, FR_F16, 2, 150, 40, 97},
    {"fwd f32 mode3 drops", FR_F32, FR_F32, 3, 800, 5, 70},
};
static void fput(int dt, void *p, int64_t i, double v) {
    const uint32_t b = fr_round(dt, v);
    if (dt == FR_F32) memcpy((char *)p + 4 * i, &b, 4);
    else {
        const uint16_t h = (uint16_t)b;
        memcpy((char *)p + 2 * i, &h, 2);
    }
}
/* values that make some groups fail the fp32 test: zeros, tiny, largest finite, cancellations */
static double fwd_val(int dt) {
    const uint32_t c = rnd() % 100;
    const double mx = dt == FR_F32 ? 0x1.fffffep127 : dt == FR_BF16 ? 0x1.fep127 : 65504.0;
    if (c == 0) return 0.0;
    if (c == 1) return dt == FR_F16 ? 0x1p-24 : 0x1p-110;
    if (c == 2) return (rnd() & 1) ? mx : -mx;
    return rnd_val();
}
static int run_forward(const fcfg *c, uint64_t *hash) {
    const int dt = c->dt, drop = c->mode == 1 || c->mode == 3;
    const int64_t R = c->R, K = c->K, H = c->H, N = R * K, D = drop ? N + 3 : N;
    const size_t es = fr_size(dt), ob = (size_t)(R * H) * es;
    void *x = malloc((size_t)(D * H) * es), *x1 = malloc((size_t)(R * H) * es), *sc = malloc((size_t)N * 4),
         *out = malloc(ob + 16), *want = malloc(ob + 1);
    int32_t *idx = malloc((size_t)N * 4);
    for (int64_t i = 0; i < D * H; i++) fput(dt, x, i, fwd_val(dt));
    for (int64_t i = 0; i < R * H; i++) fput(dt, x1, i, fwd_val(dt));
    for (int64_t i = 0; i < N; i++) fput(c->sdt, sc, i, rnd_val());
    for (int64_t i = 0; i < N; i++) idx[i] = (int32_t)i;
    for (int64_t i = N - 1; i > 0; i--) { /* a permutation */
        const int64_t j = rnd() % (uint64_t)(i + 1);
        const int32_t t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    if (drop)
        for (int64_t i = 0; i < N; i++)
            if (rnd() % 5 == 0) idx[i] = -1;
    /* x1 cancels the first slot's term now and then (exact zeros, tiny rests) */
    for (int64_t r = 0; r < R; r++) {
        const int64_t d0 = c->mode >= 2 ? idx[r * K] : idx[r];
        const double s0 = fr_decode(c->sdt, sc, r * K);
        for (int64_t j = 0; d0 >= 0 && j < H; j++)
            if (rnd() % 8 == 0) fput(dt, x1, r * H + j, -s0 * fr_decode(dt, x, d0 * H + j));
    }
    const fr_problem p = {dt, c->sdt, c->mode, R, K, H, D, 0, x, x1, NULL, NULL, sc, idx, NULL};
    fr_forward(&p, want);
    memset(out, 0xA7, ob + 16);
    int64_t dx2[2] = {D, H}, dx3[3] = {D, 1, H}, dn[1] = {N}, drk[2] = {R, K}, drh[2] = {R, H};
    aclTensor *tx = drop ? aclCreateTensor(dx3, 3, (aclDataType)dt, NULL, 0, ACL_FORMAT_ND, dx3, 3, x)
                         : aclCreateTensor(dx2, 2, (aclDataType)dt, NULL, 0, ACL_FORMAT_ND, dx2, 2, x);
    aclTensor *ti = aclCreateTensor(dn, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, dn, 1, idx);
    aclTensor *t1 = aclCreateTensor(drh, 2, (aclDataType)dt, NULL, 0, ACL_FORMAT_ND, drh, 2, x1);
    aclTensor *ts = aclCreateTensor(drk, 2, (aclDataType)c->sdt, NULL, 0, ACL_FORMAT_ND, drk, 2, sc);
    aclTensor *to = aclCreateTensor(drh, 2, (aclDataType)dt, NULL, 0, ACL_FORMAT_ND, drh, 2, out);
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    int bad = 0;
    aclnnStatus st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(tx, ti, t1, NULL, NULL, ts, NULL, c->mode, to, &wsz, &ex);
    if (st == ACLNN_SUCCESS) {
        void *ws = wsz ? malloc(wsz) : NULL;
        st = aclnnMoeFinalizeRoutingV2(ws, wsz, ex, NULL);
        free(ws);
    }
    if (st != ACLNN_SUCCESS) {
        fprintf(stderr, "%s: status %d: %s\n", c->name, st, aclGetRecentErrMsg());
        bad = 1;
    } else {
        for (int g = 0; g < 16; g++)
            if (((unsigned char *)out)[ob + g] != 0xA7) bad = 1;
        for (int64_t i = 0; i < R * H; i++)
            if (memcmp((char *)out + (size_t)i * es, (char *)want + (size_t)i * es, es) != 0) {
                uint32_t a = 0, b = 0;
                memcpy(&a, (char *)out + (size_t)i * es, es), memcpy(&b, (char *)want + (size_t)i * es, es);
                fprintf(stderr, "%s: out[%lld][%lld] = 0x%x, fwd_ref 0x%x\n", c->name, (long long)(i / H),
                        (long long)(i % H), a, b);
                bad = 1;
                break;
            }
        *hash = fnv(14695981039346656037ull, out, ob);
    }
    aclTensor *all[] = {tx, ti, t1, ts, to};
    for (int i = 0; i < 5; i++) aclDestroyTensor(all[i]);
    free(x), free(x1), free(sc), free(out), free(want), free(idx);
    return bad;
}

int main(void) {
    const char *seed_env = getenv("MOEFR_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    if (seed == 0) seed = 1;
    printf("test_determinism: seed %llu, path %s, %d threads\n", (unsigned long long)seed, moefrIsa(),
           moefrNumThreads());
    ref_build_tabs();
    int fails = 0;
    buf bufs[NCASES];
    for (int i = 0; i < NCASES; i++) {
        t_rng = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
        make(&bufs[i], &CASES[i]);
        uint64_t h = 0;
        int bad = run(&bufs[i], &h);
        fails += bad;
        printf("test_determinism: %-30s %s  hash %016llx\n", CASES[i].name, bad ? "FAIL" : "ok",
               (unsigned long long)h);
    }
    for (int i = 0; i < (int)(sizeof FCASES / sizeof FCASES[0]); i++) {
        t_rng = seed + 0x7F4A7C159E3779B9ull * (uint64_t)(i + 1);
        uint64_t h = 0;
        int bad = run_forward(&FCASES[i], &h);
        fails += bad;
        printf("test_determinism: %-30s %s  hash %016llx\n", FCASES[i].name, bad ? "FAIL" : "ok",
               (unsigned long long)h);
    }
    /* A fork()ed child (the pool's workers do not exist there) still runs.
     * ThreadSanitizer cannot start threads after such a fork: skipped there. */
#if !defined(__SANITIZE_THREAD__)
    /* Under qemu-user (MOEFR_TEST_EMULATOR, set by make test-aarch64) a thread
     * started in a fork()ed child of a threaded program aborts qemu 7.2 itself. */
    const char *emu = getenv("MOEFR_TEST_EMULATOR");
    if (emu && *emu && moefrNumThreads() > 1) {
        printf("test_determinism: fork()ed child: SKIPPED under %s (qemu-user cannot start threads in a fork()ed "
               "child of a threaded program)\n", emu);
    } else {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30); /* a child waiting on workers it does not have dies instead of hanging */
        uint64_t h;
        _exit(run(&bufs[4], &h) == 0 ? 0 : 1);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "test_determinism: operator in a fork()ed child failed (status %d)\n", st);
        fails++;
    } else {
        printf("test_determinism: fork()ed child: ok\n");
    }
    }
#endif
    /* Concurrent user threads: each owns its buffers (outputs included). */
    enum { NT = 3 };
    pthread_t th[NT];
    job jobs[NT];
    buf tb[NT][3];
    for (int t = 0; t < NT; t++) {
        for (int i = 0; i < 3; i++) {
            t_rng = seed * 31 + (uint64_t)(t * 7 + i + 1);
            make(&tb[t][i], &CASES[(t + i) % 3 == 0 ? 0 : (t + i) % 3 == 1 ? 5 : 6]);
        }
        jobs[t] = (job){tb[t], 3, 0, 3};
        pthread_create(&th[t], NULL, hammer, &jobs[t]);
    }
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        fails += jobs[t].fails;
        for (int i = 0; i < 3; i++) release(&tb[t][i]);
    }
    printf("test_determinism: %d concurrent user threads: %s\n", NT, fails ? "FAIL" : "ok");
    for (int i = 0; i < NCASES; i++) release(&bufs[i]);
    if (fails) {
        fprintf(stderr, "test_determinism: %d failures (seed %llu)\n", fails, (unsigned long long)seed);
        return 1;
    }
    printf("test_determinism: ok\n");
    return 0;
}
