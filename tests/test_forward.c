/* test_forward.c - aclnnMoeFinalizeRoutingV2 against the oracle of the canonical
 * order in fwd_ref.c (fp32 groups, fp64 fallback, fp64 for K > 32), bit for bit,
 * and within fr_bound of the exact sum, over modes x dtypes x optional inputs x layouts x K x H tails. */
#include <math.h>

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "testutil.h"

static const int DTYPES[3] = {FR_F32, FR_F16, FR_BF16};
static const char *dname(int dt) { return dt == FR_F32 ? "f32" : dt == FR_F16 ? "f16" : "bf16"; }
static const int64_t HS[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 129, 257, 515};

typedef struct spec {
    int dtype, sdtype, mode;
    int64_t R, K, H, E, C, Eb, D; /* D: expandedX rows in modes 0/2 */
    int repeats;     /* index drawn with repeats */
    int x12;         /* 0 none, 1 x1, 2 x1 and x2 */
    int bias, scales, eidx_without_bias;
    int kind[7];     /* layouts of x, idx, x1, x2, bias, scales, eidx */
} spec;

static long g_cases, g_elems;
/* Ascend 950's rules (the default): modes 0/2 drop values past expandedX's rows */
static int g_drop_high;

/* Runs one case; returns 0 on success. */
static int run_case(const spec *c) {
    const int dt = c->dtype;
    const size_t es = fr_size(dt);
    const int drop = c->mode == 1 || c->mode == 3;
    const int64_t R = c->R, K = c->K, H = c->H, N = R * K;
    /* modes 0/2: CANN never compares expandedX's rows with R*K */
    const int64_t D = drop ? c->E * c->C : c->D;
    void *x = malloc((size_t)(D * H + 1) * es), *x1 = malloc((size_t)(R * H + 1) * es);
    void *x2 = malloc((size_t)(R * H + 1) * es), *bias = malloc((size_t)(c->Eb * H + 1) * es);
    void *sc = malloc((size_t)(N + 1) * 4);
    int32_t *idx = malloc((size_t)(N + 1) * 4), *eidx = malloc((size_t)(N + 1) * 4);
    tu_fill(dt, x, D * H);
    tu_fill(dt, x1, R * H);
    tu_fill(dt, x2, R * H);
    tu_fill(dt, bias, c->Eb * H);
    tu_fill(c->sdtype, sc, N);
    /* index: distinct rows of [0, D) (a permutation when D = N) or uniform
     * draws with repeats (a row read twice is fine); drop-pad modes put -1
     * (a dropped slot) in some slots */
    int64_t *perm = malloc((size_t)(D + 1) * 8);
    for (int64_t i = 0; i < D; i++) perm[i] = i;
    for (int64_t i = D - 1; i > 0; i--) {
        int64_t j = tu_int(0, i), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int64_t used = 0;
    for (int64_t i = 0; i < N; i++) {
        if (drop && tu_int(0, 3) == 0) idx[i] = -1;
        else if (!drop && g_drop_high && tu_int(0, 7) == 0) idx[i] = (int32_t)(D + tu_int(0, 3)); /* 950: dropped */
        else if (!c->repeats && used < D) idx[i] = (int32_t)perm[used++];
        else idx[i] = D > 0 ? (int32_t)tu_int(0, D - 1) : -1;
    }
    free(perm);
    for (int64_t i = 0; i < N; i++) eidx[i] = (int32_t)tu_int(0, c->Eb - 1);

    fr_problem p = {dt, c->sdtype, c->mode, R, K, H, D, c->Eb, x, c->x12 ? x1 : NULL, c->x12 == 2 ? x2 : NULL,
                    c->bias ? bias : NULL, c->scales ? sc : NULL, idx, eidx};
    void *want = malloc((size_t)(R * H + 1) * es);
    fr_forward(&p, want);

    int64_t dx2[2] = {D, H}, dx3[3] = {c->E, c->C, H}, drh[2] = {R, H}, db[2] = {c->Eb, H}, dn[1] = {N},
            drk[2] = {R, K};
    tu_owned tx = drop ? tu_view(dt, 3, dx3, x, c->kind[0]) : tu_view(dt, 2, dx2, x, c->kind[0]);
    tu_owned tidx = tu_view(3, 1, dn, idx, c->kind[1] == TU_COLMAJOR ? TU_STRIDED : c->kind[1]);
    tu_owned tx1 = {0}, tx2 = {0}, tb = {0}, ts = {0}, te = {0};
    if (c->x12) tx1 = tu_view(dt, 2, drh, x1, c->kind[2]);
    if (c->x12 == 2) tx2 = tu_view(dt, 2, drh, x2, c->kind[3]);
    if (c->bias) tb = tu_view(dt, 2, db, bias, c->kind[4]);
    if (c->scales) ts = tu_view(c->sdtype, 2, drk, sc, c->kind[5]);
    if (c->bias || c->eidx_without_bias) te = tu_view(3, 2, drk, eidx, c->kind[6]);
    /* out: contiguous, poisoned, with a guard zone after it */
    const size_t out_bytes = (size_t)(R * H) * es, guard = 64;
    unsigned char *out = malloc(out_bytes + guard);
    memset(out, 0xA7, out_bytes + guard);
    aclTensor *tout = aclCreateTensor(drh, 2, (aclDataType)dt, NULL, 0, ACL_FORMAT_ND, drh, 2, out);

    int fail = 0;
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(tx.t, tidx.t, tx1.t, tx2.t, tb.t, ts.t, te.t,
                                                               c->mode, tout, &wsz, &ex);
    void *ws = NULL;
    if (st == ACLNN_SUCCESS) {
        if (wsz) ws = malloc(wsz);
        st = aclnnMoeFinalizeRoutingV2(ws, wsz, ex, NULL);
    }
    if (st == ACLNN_ERR_RUNTIME_ERROR && getenv("MOEFR_ISA")) {
        printf("test_forward: MOEFR_ISA=%s is not available here: %s -- skipped\n", getenv("MOEFR_ISA"),
               aclGetRecentErrMsg());
        exit(77);
    }
    if (st != ACLNN_SUCCESS) {
        fprintf(stderr, "status %d: %s\n", st, aclGetRecentErrMsg());
        fail = 1;
    }
    for (size_t g = 0; !fail && g < guard; g++)
        if (out[out_bytes + g] != 0xA7) {
            fprintf(stderr, "wrote past out (guard byte %zu)\n", g);
            fail = 1;
        }
    for (int64_t i = 0; !fail && i < R * H; i++)
        if (memcmp(out + i * (int64_t)es, (char *)want + i * (int64_t)es, es) != 0) {
            uint32_t a = 0, b = 0;
            memcpy(&a, out + i * (int64_t)es, es);
            memcpy(&b, (char *)want + i * (int64_t)es, es);
            fprintf(stderr, "out[%lld][%lld] = 0x%x, oracle 0x%x\n", (long long)(i / H), (long long)(i % H), a, b);
            fail = 1;
        }
    /* the canonical order is within its error bound of the exact sum (fp32 bound for K <= 32) */
    if (!fail && R * H > 0) {
        double *hi = malloc((size_t)(R * H) * 8), *lo = malloc((size_t)(R * H) * 8), *as = malloc((size_t)(R * H) * 8);
        fr_forward_exact(&p, hi, lo, as);
        for (int64_t i = 0; !fail && i < R * H; i++) {
            double got = fr_decode(dt, out, i), exact = hi[i] + lo[i];
            double bound = fr_bound(dt, K, as[i], got, exact);
            if (isfinite(got) && !(fabs(got - hi[i] - lo[i]) <= bound)) {
                fprintf(stderr, "out[%lld] = %.17g, exact %.17g: error above bound %.3g\n", (long long)i, got,
                        exact, bound);
                fail = 1;
            }
        }
        free(hi), free(lo), free(as);
    }
    if (fail)
        fprintf(stderr,
                "FAILED case: %s scales=%s mode=%d R=%lld K=%lld H=%lld E=%lld C=%lld Eb=%lld x12=%d bias=%d "
                "scales=%d kinds=%d%d%d%d%d%d%d\n",
                dname(dt), dname(c->sdtype), c->mode, (long long)R, (long long)K, (long long)H, (long long)c->E,
                (long long)c->C, (long long)c->Eb, c->x12, c->bias, c->scales, c->kind[0], c->kind[1], c->kind[2],
                c->kind[3], c->kind[4], c->kind[5], c->kind[6]);
    g_cases++;
    g_elems += R * H;
    free(ws);
    aclDestroyTensor(tout);
    free(out);
    tu_free(&tx), tu_free(&tidx), tu_free(&tx1), tu_free(&tx2), tu_free(&tb), tu_free(&ts), tu_free(&te);
    free(x), free(x1), free(x2), free(bias), free(sc), free(idx), free(eidx), free(want);
    return fail;
}

static void random_layouts(spec *c) {
    for (int i = 0; i < 7; i++) c->kind[i] = (int)tu_int(0, TU_KINDS - 1);
}

static void random_sizes(spec *c) {
    c->R = tu_int(1, 6);
    c->H = HS[tu_int(0, (int64_t)(sizeof HS / sizeof HS[0]) - 1)];
    c->E = tu_int(1, 4);
    c->C = tu_int(1, 5);
    /* CANN's tiling: bias dim0 (E) >= K */
    if (c->bias && c->E < c->K) c->E = c->K + tu_int(0, 2);
    c->Eb = (c->mode == 1 || c->mode == 3) ? c->E : tu_int(c->K > 0 ? c->K : 1, c->K + 4);
    const int64_t N = c->R * c->K;
    c->D = N > 0 ? tu_int(1, N + 3) : tu_int(0, 2);
    if (tu_int(0, 1)) c->D = N; /* the usual (R*K, H) */
    c->repeats = (int)tu_int(0, 1);
}

int main(void) {
    tu_seed("test_forward");
    g_drop_high = !(getenv("MOEFR_SOC") && strcmp(getenv("MOEFR_SOC"), "ascend910b") == 0);
    if (aclInit(NULL) != ACL_SUCCESS) return 1;
    int fails = 0;
    /* the full cross product of the rules, sizes and layouts drawn at random */
    for (int mode = 0; mode < 4; mode++)
        for (int di = 0; di < 3; di++)
            for (int x12 = 0; x12 < 3; x12++)
                for (int bias = 0; bias < 2; bias++)
                    for (int sk = 0; sk < 4; sk++) /* scales: none, same dtype, fp32, another */
                        for (int64_t K = 1; K <= (sk == 0 ? 1 : 9); K++) {
                            spec c;
                            memset(&c, 0, sizeof c);
                            c.dtype = DTYPES[di];
                            c.mode = mode;
                            c.x12 = x12;
                            c.bias = bias;
                            c.scales = sk != 0;
                            c.sdtype = sk == 1 ? c.dtype : sk == 2 ? FR_F32 : DTYPES[(di + 1 + K % 2) % 3];
                            c.K = K;
                            c.eidx_without_bias = !bias && tu_int(0, 1);
                            random_sizes(&c);
                            random_layouts(&c);
                            fails += run_case(&c);
                        }
    /* every H from 0 to 80 and a few wide rows, on every dtype and mode */
    for (int64_t H = 0; H <= 80; H++)
        for (int di = 0; di < 3; di++) {
            spec c;
            memset(&c, 0, sizeof c);
            c.dtype = DTYPES[di];
            c.sdtype = FR_F32;
            c.mode = (int)(H % 4);
            c.K = tu_int(1, 9);
            c.scales = 1;
            c.bias = (int)(H % 3 == 0);
            c.x12 = (int)(H % 3);
            random_sizes(&c);
            c.H = H;
            random_layouts(&c);
            fails += run_case(&c);
        }
    /* many slots (more than one kernel group), wide rows (several fp64 tiles) */
    const int64_t bigK[] = {31, 32, 33, 40, 70};
    for (int i = 0; i < 5; i++)
        for (int di = 0; di < 3; di++) {
            spec c;
            memset(&c, 0, sizeof c);
            c.dtype = DTYPES[di];
            c.sdtype = DTYPES[(di + i) % 3];
            c.mode = i % 4;
            c.K = bigK[i];
            c.scales = 1;
            c.bias = i % 2;
            c.x12 = i % 3;
            random_sizes(&c);
            c.R = 3;
            c.H = i == 2 ? 1100 : HS[tu_int(0, 18)];
            c.E = c.bias ? c.K + 1 : 12, c.C = 11;
            c.Eb = c.bias ? c.K + 2 : 12;
            if (c.mode == 1 || c.mode == 3) c.Eb = c.E;
            c.D = c.R * c.K;
            random_layouts(&c);
            fails += run_case(&c);
        }
    /* empty problems: R = 0 (out (0, H): CANN runs no tiling) */
    for (int di = 0; di < 3; di++)
        for (int mode = 0; mode < 4; mode++) {
            spec c;
            memset(&c, 0, sizeof c);
            c.dtype = DTYPES[di], c.sdtype = DTYPES[di], c.mode = mode, c.scales = 1, c.x12 = 2, c.bias = 1;
            c.K = 3;
            random_sizes(&c);
            c.R = 0, c.D = tu_int(0, 2);
            fails += run_case(&c);
        }
    /* large: worker threads and streaming stores (out past the last-level cache) */
    {
        spec c;
        memset(&c, 0, sizeof c);
        c.dtype = FR_F32, c.sdtype = FR_F32, c.mode = 2, c.K = 2, c.scales = 1, c.x12 = 1;
        c.R = 2304, c.H = 4100, c.Eb = 4, c.bias = 1, c.D = c.R * c.K;
        fails += run_case(&c);
        c.repeats = 1, c.D = 1000; /* fewer rows than slots: many read twice */
        fails += run_case(&c);
        c.repeats = 0;
        c.dtype = FR_BF16, c.mode = 1, c.E = 64, c.C = 100, c.Eb = 64, c.K = 3, c.R = 1500, c.H = 1029;
        fails += run_case(&c);
    }
    printf("test_forward: %ld cases, %ld output elements, %d failures (isa %s)\n", g_cases, g_elems, fails,
           getenv("MOEFR_ISA") ? getenv("MOEFR_ISA") : "default");
    aclFinalize();
    return fails ? 1 : 0;
}
