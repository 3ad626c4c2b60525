/* test_hostile.c - hostile inputs: every descriptor SPEC section 3 refuses, shape arithmetic
 * that overflows int64, index data that is bad only at its last entry, executor misuse, no leaks on error paths, logging. */
#define _GNU_SOURCE /* mallinfo2, execve environ */
#include <malloc.h>
#include <stdint.h>
#include <sys/wait.h>

#include "moefr/moefr.h"
#include <math.h>

#include "testutil.h"

#define I64MAX INT64_MAX
#define I64MIN INT64_MIN

/* ---- 1. descriptors ---- */

/* Expects NULL and a one-line message containing frag (the parameter it names). */
static void refused(int line, aclTensor *t, const char *frag) {
    if (t != NULL) TU_FAIL("line %d: aclCreateTensor accepted a hostile descriptor", line);
    if (!tu_msg_has("aclCreateTensor", frag, NULL))
        TU_FAIL("line %d: message does not name '%s'", line, frag);
}
#define REFUSED(call, frag) refused(__LINE__, (call), (frag))

static void descriptors(void) {
    static float buf[64];
    int64_t d2[2] = {2, 3}, s2[2] = {3, 1}, st6[1] = {6};
    /* NULL arrays with a non-zero count */
    REFUSED(aclCreateTensor(NULL, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "viewDims");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, NULL, 1, buf), "storageDims");
    /* negative dims, in the view and in the storage */
    REFUSED(aclCreateTensor((int64_t[]){2, -1}, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "viewDims[1]");
    REFUSED(aclCreateTensor((int64_t[]){I64MIN}, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "viewDims[0]");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, (int64_t[]){-6}, 1, buf), "storageDims[0]");
    /* more than 8 dims (view and storage), and absurd counts that must not be read */
    int64_t ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    REFUSED(aclCreateTensor(ones, 9, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "viewDimsNum");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, ones, 9, buf), "storageDimsNum");
    REFUSED(aclCreateTensor(d2, UINT64_MAX, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "viewDimsNum");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, (uint64_t)1 << 63, buf), "storageDimsNum");
    /* shape products that overflow int64 */
    REFUSED(aclCreateTensor((int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32}, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND,
                            st6, 1, buf), "viewDims");
    REFUSED(aclCreateTensor((int64_t[]){3037000500, 3037000500}, 2, ACL_INT8, NULL, 0, ACL_FORMAT_ND, st6, 1, buf),
            "viewDims");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, (int64_t[]){I64MAX, 2}, 2, buf), "storageDims");
    /* storage elements that fit int64 but whose bytes do not */
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, (int64_t[]){(int64_t)1 << 62}, 1, buf),
            "storage");
    /* a zero dim hides an overflowing product of the others in the row-major strides (fuzz finding 1) */
    REFUSED(aclCreateTensor((int64_t[]){0, 2, I64MAX}, 3, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "");
    /* the same behind a zero dim, where only the row-major stride in bytes overflows (fuzz finding 4) */
    REFUSED(aclCreateTensor((int64_t[]){0, (int64_t)1 << 62}, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "");
    /* a size-1 dim's stride is unbounded by the storage, but its bytes must fit (fuzz finding 3) */
    REFUSED(aclCreateTensor((int64_t[]){1, 3}, 2, ACL_FLOAT, (int64_t[]){-I64MAX, 1}, 0, ACL_FORMAT_ND, st6, 1, buf),
            "stride[0]");
    REFUSED(aclCreateTensor((int64_t[]){0, 3}, 2, ACL_FLOAT, (int64_t[]){I64MIN, 1}, 0, ACL_FORMAT_ND, st6, 1, buf),
            "stride[0]");
    /* strides/offsets reaching outside the storage: past the end, before the start */
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, s2, 1, ACL_FORMAT_ND, st6, 1, buf), "storage");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, (int64_t[]){4, 1}, 0, ACL_FORMAT_ND, st6, 1, buf), "storage");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, (int64_t[]){-3, 1}, 0, ACL_FORMAT_ND, st6, 1, buf), "storage");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, (int64_t[]){-3, 1}, 2, ACL_FORMAT_ND, st6, 1, buf), "storage");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, s2, -1, ACL_FORMAT_ND, st6, 1, buf), "offset");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, s2, I64MIN, ACL_FORMAT_ND, st6, 1, buf), "offset");
    REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, s2, I64MAX, ACL_FORMAT_ND, st6, 1, buf), "");
    REFUSED(aclCreateTensor((int64_t[]){1}, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, (int64_t[]){0}, 1, buf), "storage");
    /* huge strides whose reach overflows int64, in either direction, and mixed signs that cancel only after overflow */
    REFUSED(aclCreateTensor((int64_t[]){2}, 1, ACL_INT8, (int64_t[]){I64MAX}, 0, ACL_FORMAT_ND, st6, 1, buf), "");
    REFUSED(aclCreateTensor((int64_t[]){3}, 1, ACL_INT8, (int64_t[]){I64MAX}, 0, ACL_FORMAT_ND, st6, 1, buf), "stride");
    REFUSED(aclCreateTensor((int64_t[]){4}, 1, ACL_INT8, (int64_t[]){-I64MAX / 2 - 1}, 0, ACL_FORMAT_ND, st6, 1, buf),
            "stride");
    REFUSED(aclCreateTensor((int64_t[]){2, 2}, 2, ACL_INT8, (int64_t[]){(int64_t)1 << 62, -((int64_t)1 << 62)}, 0,
                            ACL_FORMAT_ND, st6, 1, buf), "");
    REFUSED(aclCreateTensor((int64_t[]){3, 3}, 2, ACL_INT8, (int64_t[]){(int64_t)1 << 62, 1}, 0, ACL_FORMAT_ND,
                            (int64_t[]){I64MAX}, 1, buf), "");
    /* unknown dtypes and formats */
    int bad_dt[] = {ACL_DT_UNDEFINED, ACL_STRING, 5, 14, 15, 26, 28, 1000, -2};
    for (size_t i = 0; i < sizeof bad_dt / sizeof bad_dt[0]; i++)
        REFUSED(aclCreateTensor(d2, 2, (aclDataType)bad_dt[i], NULL, 0, ACL_FORMAT_ND, st6, 1, buf), "dataType");
    int bad_fmt[] = {ACL_FORMAT_UNDEFINED, 1000, -5, 0x7fffffff};
    for (size_t i = 0; i < sizeof bad_fmt / sizeof bad_fmt[0]; i++)
        REFUSED(aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, (aclFormat)bad_fmt[i], st6, 1, buf), "format");
    /* what must still be accepted: extremes that are valid */
    aclTensor *ok[] = {
        aclCreateTensor((int64_t[]){1, 3}, 2, ACL_FLOAT, (int64_t[]){I64MAX / 4, 1}, 0, ACL_FORMAT_ND, st6, 1, buf),
        aclCreateTensor((int64_t[]){0, 3}, 2, ACL_FLOAT, NULL, 6, ACL_FORMAT_ND, st6, 1, buf),
        aclCreateTensor((int64_t[]){2, 3}, 2, ACL_FLOAT, (int64_t[]){-3, 1}, 3, ACL_FORMAT_ND, st6, 1, buf),
        aclCreateTensor((int64_t[]){(int64_t)1 << 40, 0}, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, st6, 1, buf),
        aclCreateTensor(ones, 8, ACL_FLOAT, NULL, 5, ACL_FORMAT_ND, st6, 1, buf),
    };
    /* an empty view's offset far past the storage (fuzz finding 2): accepted, and phase 1 must not
     * form data + offset * elemsize from it (that overflowed int64) */
    int64_t e2[2] = {0, 3}, e1[1] = {0}, eg[2] = {0, 1};
    aclTensor *egy = aclCreateTensor(e2, 2, ACL_FLOAT, NULL, I64MAX / 2 + 1, ACL_FORMAT_ND, st6, 1, buf);
    aclTensor *eidx = aclCreateTensor(e1, 1, ACL_INT32, NULL, I64MAX, ACL_FORMAT_ND, st6, 1, buf);
    aclTensor *egx = aclCreateTensor(e2, 2, ACL_FLOAT, NULL, I64MAX / 4 + 1, ACL_FORMAT_ND, st6, 1, buf);
    aclTensor *egs = aclCreateTensor(eg, 2, ACL_FLOAT, NULL, I64MAX - 1, ACL_FORMAT_ND, st6, 1, buf);
    CHECK(egy && eidx && egx && egs);
    uint64_t ews = 0;
    aclOpExecutor *eex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(egy, eidx, NULL, NULL, NULL, NULL, 0, 0, 0, 0, egx, egs, &ews,
                                                           &eex), ACLNN_SUCCESS);
    void *ew = malloc(ews + 1);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(ew, ews, eex, NULL), ACLNN_SUCCESS);
    free(ew);
    tu_destroy(egy); tu_destroy(eidx); tu_destroy(egx); tu_destroy(egs);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (ok[i] == NULL) TU_FAIL("valid extreme descriptor %zu refused", i);
        tu_destroy(ok[i]);
    }
}

/* ---- 2. phase 1 on shapes whose arithmetic overflows int64 ---- */

static char dummy[64]; /* phase 1 never reads data: huge shapes can point here */

static aclTensor *huge(int64_t d0, int64_t d1, int nd, aclDataType dt) {
    int64_t dims[2] = {d0, d1};
    return aclCreateTensor(dims, (uint64_t)nd, dt, NULL, 0, ACL_FORMAT_ND, dims, (uint64_t)nd, dummy);
}

static void shape_overflow(void) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    /* expertNum * expertCapacity far past int64 in mode 1, with every tensor empty */
    aclTensor *gy = huge(2, 0, 2, ACL_FLOAT), *idx = huge(2, 0, 1, ACL_INT32), *gs = huge(2, 1, 2, ACL_FLOAT);
    int64_t g3[3] = {2, 3, 0};
    aclTensor *gx3 = aclCreateTensor(g3, 3, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, g3, 3, dummy);
    CHECK(gy && idx && gs && gx3);
    int64_t attrs[][2] = {{I64MAX, I64MAX}, {(int64_t)1 << 32, (int64_t)1 << 32}, {I64MAX, 2}, {3037000500, 3037000500},
                          {(int64_t)1 << 40, (int64_t)1 << 30}};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        aclnnStatus st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(gy, idx, NULL, NULL, NULL, NULL, 1, 0,
                                                                       attrs[i][0], attrs[i][1], gx3, gs, &ws, &ex);
        if (st == ACLNN_SUCCESS) TU_FAIL("E*C = %lld*%lld accepted", (long long)attrs[i][0], (long long)attrs[i][1]);
        CHECK(tu_msg_has("expert", NULL));
    }
    /* hostile attributes in mode 0: no crash, a status */
    int64_t modes[] = {I64MIN, -1, 2, I64MAX};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(gy, idx, NULL, NULL, NULL, NULL, modes[i], 0, 0, 0, gx3,
                                                               gs, &ws, &ex), ACLNN_ERR_INNER_TILING_ERROR);
    tu_destroy(gx3);
    /* R = 2^40 tokens of H = 0 (no element exists): phase 1 plans it without overflow;
     * the workspace it asks for is far beyond anything, so a NULL workspace is refused. */
    int64_t R = (int64_t)1 << 40;
    aclTensor *bgy = huge(R, 0, 2, ACL_FLOAT16), *bidx = huge(R, 0, 1, ACL_INT32), *bgx = huge(R, 0, 2, ACL_FLOAT16),
              *bgs = huge(R, 1, 2, ACL_FLOAT16);
    CHECK(bgy && bidx && bgx && bgs);
    for (int64_t active = 0; active <= 1; active++) {
        aclnnStatus st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(bgy, bidx, NULL, NULL, NULL, NULL, 0,
                                                                       active ? R - 1 : 0, 0, 0, bgx, bgs, &ws, &ex);
        if (st == ACLNN_SUCCESS) {
            if (ws > 0) {
                CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(NULL, ws, ex, NULL), ACLNN_ERR_PARAM_INVALID);
                CHECK(tu_msg_has("workspace", NULL));
            } else {
                CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
            }
        } else {
            CHECK(tu_msg_has("aclnnMoeFinalizeRoutingV2Grad", NULL));
        }
    }
    for (aclTensor **t = (aclTensor *[]){gy, idx, gs, bgy, bidx, bgx, bgs, NULL}; *t; t++) tu_destroy(*t);
}

/* ---- 3. phase 2: every value checked before anything is written ---- */

enum { R = 5, K = 3, H = 11, N = R * K, E = 4, C = 5 };
typedef struct {
    int mode;
    float gy[R][H], x[E * C][H], s[R][K], b[E][H];
    int32_t idx[N], ei[N];
    float gx[E * C][H], gs[R][K];
} prob;

/* Runs phase 1 + 2; returns the phase-2 status, with outputs poisoned before. */
static aclnnStatus run(prob *p, int with_bias) {
    int64_t D0 = p->mode ? E * C : N;
    int64_t dgy[2] = {R, H}, didx[1] = {N}, ds[2] = {R, K}, db[2] = {E, H};
    int64_t dx2[2] = {D0, H}, dx3[3] = {E, C, H};
    memset(p->gx, 0xC3, sizeof p->gx);
    memset(p->gs, 0xC3, sizeof p->gs);
    aclTensor *gy = tu_tensor(dgy, 2, ACL_FLOAT, p->gy), *idx = tu_tensor(didx, 1, ACL_INT32, p->idx);
    aclTensor *x = p->mode ? tu_tensor(dx3, 3, ACL_FLOAT, p->x) : tu_tensor(dx2, 2, ACL_FLOAT, p->x);
    aclTensor *gx = p->mode ? tu_tensor(dx3, 3, ACL_FLOAT, p->gx) : tu_tensor(dx2, 2, ACL_FLOAT, p->gx);
    aclTensor *s = tu_tensor(ds, 2, ACL_FLOAT, p->s), *gs = tu_tensor(ds, 2, ACL_FLOAT, p->gs);
    aclTensor *ei = with_bias ? tu_tensor(ds, 2, ACL_INT32, p->ei) : NULL;
    aclTensor *b = with_bias ? tu_tensor(db, 2, ACL_FLOAT, p->b) : NULL;
    CHECK(gy && idx && x && gx && s && gs);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(gy, idx, x, s, ei, b, p->mode, 0, E, C, gx, gs, &ws, &ex),
             ACLNN_SUCCESS);
    void *w = ws ? malloc(ws) : NULL;
    aclnnStatus st = aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
    free(w);
    tu_destroy(gy); tu_destroy(idx); tu_destroy(x); tu_destroy(gx); tu_destroy(s); tu_destroy(gs);
    tu_destroy(ei); tu_destroy(b);
    return st;
}

static void fill(prob *p, int mode) {
    p->mode = mode;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < H; j++) p->gy[r][j] = (float)tu_int(-8, 8);
    for (int d = 0; d < E * C; d++)
        for (int j = 0; j < H; j++) p->x[d][j] = (float)tu_int(-8, 8);
    for (int e = 0; e < E; e++)
        for (int j = 0; j < H; j++) p->b[e][j] = (float)tu_int(-8, 8);
    for (int i = 0; i < N; i++) {
        p->s[i / K][i % K] = (float)tu_int(-4, 4) / 4;
        p->ei[i] = (int32_t)tu_below(E);
        p->idx[i] = mode ? -1 : i;
    }
    if (mode) { /* distinct slots for most entries, -1 for a few */
        for (int i = 0; i < N; i++) p->idx[i] = tu_chance(20) ? -1 : (int32_t)i;
    }
    for (int i = N - 1; i > 0; i--) {
        int j = (int)tu_below(i + 1);
        int32_t t = p->idx[i]; p->idx[i] = p->idx[j]; p->idx[j] = t;
    }
}

static int untouched(const prob *p) {
    const unsigned char *a = (const unsigned char *)p->gx, *b = (const unsigned char *)p->gs;
    for (size_t i = 0; i < sizeof p->gx; i++) if (a[i] != 0xC3) return 0;
    for (size_t i = 0; i < sizeof p->gs; i++) if (b[i] != 0xC3) return 0;
    return 1;
}

static void bad_values(void) {
    prob *p = malloc(sizeof *p);
    for (int mode = 0; mode <= 1; mode++) {
        /* a clean problem succeeds and writes (else "untouched" below could pass vacuously) */
        fill(p, mode);
        CHECK_RC(run(p, 1), ACLNN_SUCCESS);
        CHECK(!untouched(p));
        /* values CANN's kernel skips (outside [0, D0)) and repeats (last
         * writer) are accepted: the dropped slot writes no row, and nothing
         * outside the outputs is touched (ASan/valgrind watch the reads) */
        int32_t hi = mode ? E * C : N;
        int32_t odd_idx[] = {hi, hi + 1, -2, INT32_MIN, INT32_MAX, mode ? -7 : -1};
        for (size_t b = 0; b < sizeof odd_idx / sizeof odd_idx[0]; b++) {
            fill(p, mode);
            const int32_t was = p->idx[N - 1];
            p->idx[N - 1] = odd_idx[b];
            CHECK_RC(run(p, 1), ACLNN_SUCCESS);
            if (was >= 0) /* the row it named is now unnamed: +0.0 */
                for (int j = 0; j < H; j++)
                    if (p->gx[was][j] != 0.0f || signbit(p->gx[was][j]))
                        TU_FAIL("mode %d: index %d dropped, yet row %d holds %g", mode, (int)odd_idx[b], (int)was,
                                p->gx[was][j]);
        }
        /* a duplicate, the second occurrence last: it writes the row */
        fill(p, mode);
        int first = -1;
        for (int i = 0; i < N - 1 && first < 0; i++) if (p->idx[i] >= 0) first = i;
        p->idx[N - 1] = p->idx[first];
        CHECK_RC(run(p, 1), ACLNN_SUCCESS);
        for (int j = 0; j < H; j++) {
            float want = p->gy[(N - 1) / K][j] * p->s[(N - 1) / K][(N - 1) % K];
            if (p->gx[p->idx[first]][j] != want) TU_FAIL("mode %d: a repeated row did not keep the last writer", mode);
        }
        /* -1 may repeat */
        fill(p, mode);
        p->idx[0] = p->idx[1] = p->idx[N - 1] = -1;
        CHECK_RC(run(p, 1), ACLNN_SUCCESS);
        /* expertIdx out of [0, E) at its last entry, only when bias is given */
        int32_t bad_e[] = {E, -1, INT32_MIN, INT32_MAX};
        for (size_t b = 0; b < sizeof bad_e / sizeof bad_e[0]; b++) {
            fill(p, mode);
            p->ei[N - 1] = bad_e[b];
            CHECK_RC(run(p, 1), ACLNN_ERR_PARAM_INVALID);
            CHECK(untouched(p));
            CHECK(tu_msg_has("expertIdx", NULL));
            CHECK_RC(run(p, 0), ACLNN_SUCCESS); /* not read without bias */
        }
    }
    free(p);
}

/* ---- 4. executor misuse ---- */

static aclOpExecutor *plan_small(prob *p, uint64_t *ws, aclTensor **ts) {
    int64_t dgy[2] = {R, H}, didx[1] = {N}, ds[2] = {R, K}, dx[2] = {N, H};
    fill(p, 0);
    ts[0] = tu_tensor(dgy, 2, ACL_FLOAT, p->gy);
    ts[1] = tu_tensor(didx, 1, ACL_INT32, p->idx);
    ts[2] = tu_tensor(dx, 2, ACL_FLOAT, p->x);
    ts[3] = tu_tensor(ds, 2, ACL_FLOAT, p->s);
    ts[4] = tu_tensor(dx, 2, ACL_FLOAT, p->gx);
    ts[5] = tu_tensor(ds, 2, ACL_FLOAT, p->gs);
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(ts[0], ts[1], ts[2], ts[3], NULL, NULL, 0, 0, 0, 0, ts[4],
                                                           ts[5], ws, &ex), ACLNN_SUCCESS);
    return ex;
}
static void unplan(aclTensor **ts) {
    for (int i = 0; i < 6; i++) tu_destroy(ts[i]);
}

static void misuse(void) {
    prob *p = malloc(sizeof *p);
    aclTensor *ts[6];
    uint64_t ws = 0;
    /* workspace one byte short, NULL with a non-zero size: refused, outputs untouched, executor spent */
    for (int how = 0; how < 2; how++) {
        aclOpExecutor *ex = plan_small(p, &ws, ts);
        CHECK(ws > 0);
        memset(p->gx, 0xC3, sizeof p->gx);
        memset(p->gs, 0xC3, sizeof p->gs);
        void *w = malloc(ws);
        CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(how ? NULL : w, how ? ws : ws - 1, ex, NULL),
                 how ? ACLNN_ERR_PARAM_NULLPTR : ACLNN_ERR_PARAM_INVALID);
        CHECK(tu_msg_has("workspace", NULL));
        CHECK(untouched(p));
        CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_ERR_PARAM_INVALID); /* spent */
        free(w);
        unplan(ts);
    }
    /* a spent executor, again and again, then destroyed (refused: not live) */
    aclOpExecutor *ex = plan_small(p, &ws, ts);
    void *w = malloc(ws);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_SUCCESS);
    for (int i = 0; i < 3; i++) CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_ERR_PARAM_INVALID);
    /* NULL executor everywhere */
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, NULL, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_RC(aclDestroyAclOpExecutor(NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK_RC(aclSetAclOpExecutorRepeatable(NULL), ACLNN_ERR_INNER_NULLPTR);
    /* a repeatable executor destroyed twice, and run after its destruction */
    unplan(ts);
    ex = plan_small(p, &ws, ts);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_SUCCESS);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    /* pointers that never were executors: a tensor, a stack object */
    int not_an_executor = 0;
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, (aclOpExecutor *)ts[0], NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclDestroyAclOpExecutor((aclOpExecutor *)&not_an_executor), ACLNN_ERR_PARAM_INVALID);
    /* tensors destroyed twice, and a destroyed tensor handed to phase 1 */
    aclTensor *gone = ts[5];
    CHECK_RC(aclDestroyTensor(gone), ACLNN_SUCCESS);
    CHECK(aclDestroyTensor(gone) != ACLNN_SUCCESS);
    CHECK(tu_msg_has("aclDestroyTensor", NULL));
    CHECK(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(ts[0], ts[1], ts[2], ts[3], NULL, NULL, 0, 0, 0, 0, ts[4], gone,
                                                        &ws, &ex) != ACLNN_SUCCESS);
    ts[5] = NULL;
    unplan(ts);
    free(w);
    free(p);
}

/* ---- 5. error paths leak nothing ---- */

/* Every failing path, many times over; under ASan/LSan and valgrind a leak fails
 * the run, and in a plain build the heap in use must not grow. */
static void error_paths_once(prob *p) {
    static float buf[8];
    int64_t d2[2] = {2, 2};
    aclTensor *t = aclCreateTensor(d2, 2, ACL_FLOAT, (int64_t[]){9, 1}, 0, ACL_FORMAT_ND, d2, 2, buf);
    CHECK(t == NULL);
    aclTensor *ts[6];
    uint64_t ws = 0;
    aclOpExecutor *ex = plan_small(p, &ws, ts);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(NULL, ws, ex, NULL), ACLNN_ERR_PARAM_NULLPTR); /* frees ex */
    /* a phase-1 failure after some checks passed */
    CHECK(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(ts[0], ts[1], NULL, ts[3], NULL, NULL, 0, 0, 0, 0, ts[4],
                                                        ts[5], &ws, &ex) != ACLNN_SUCCESS);
    /* phase-2 failures: an address still NULL, an expert index out of range */
    int64_t dgy[2] = {R, H}, ds[2] = {R, K}, db[2] = {E, H};
    aclTensor *nodata = tu_tensor(dgy, 2, ACL_FLOAT, NULL);
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(nodata, ts[1], ts[2], ts[3], NULL, NULL, 0, 0, 0, 0, ts[4],
                                                           ts[5], &ws, &ex), ACLNN_SUCCESS);
    void *w = malloc(ws);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_ERR_PARAM_NULLPTR);
    free(w);
    tu_destroy(nodata);
    p->ei[N - 1] = E;
    aclTensor *ei = tu_tensor(ds, 2, ACL_INT32, p->ei), *b = tu_tensor(db, 2, ACL_FLOAT, p->b);
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(ts[0], ts[1], ts[2], ts[3], ei, b, 0, 0, 0, 0, ts[4],
                                                           ts[5], &ws, &ex), ACLNN_SUCCESS);
    w = malloc(ws);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_ERR_PARAM_INVALID);
    free(w);
    tu_destroy(ei);
    tu_destroy(b);
    void *dev = NULL;
    CHECK(aclrtMalloc(&dev, 0, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS);
    CHECK(aclrtFree(buf) != ACL_SUCCESS);
    unplan(ts);
}

static void no_leaks(void) {
    prob *p = malloc(sizeof *p);
    error_paths_once(p); /* first use allocates lazily (registries, thread pool) */
    struct mallinfo2 before = mallinfo2();
    for (int i = 0; i < 300; i++) error_paths_once(p);
    struct mallinfo2 after = mallinfo2();
    /* Registries keep their tables; allow a little slack, far below 300 leaked executors. */
    if (after.uordblks > before.uordblks + 16384)
        TU_FAIL("heap in use grew from %zu to %zu bytes over 300 rounds of error paths", before.uordblks,
                after.uordblks);
    free(p);
}

/* ---- 6. MOEFR_LOG_LEVEL ---- */

/* The child: one failing call, then a small successful run (info/debug lines). */
static int log_child(void) {
    static float buf[4];
    int64_t d[1] = {4};
    CHECK(aclCreateTensor(d, 1, (aclDataType)77, NULL, 0, ACL_FORMAT_ND, d, 1, buf) == NULL);
    CHECK(moefrNumThreads() >= 1); /* reads MOEFR_NUM_THREADS=oops: a warning */
    prob *p = malloc(sizeof *p);
    aclTensor *ts[6];
    uint64_t ws = 0;
    aclOpExecutor *ex = plan_small(p, &ws, ts);
    void *w = malloc(ws);
    CHECK_RC(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL), ACLNN_SUCCESS);
    free(w);
    unplan(ts);
    free(p);
    return 0;
}

/* Runs this program as a log child with MOEFR_LOG_LEVEL=level (NULL: unset);
 * returns its stderr lines counted by tag. */
typedef struct { int lines, error, warn, info, debug, named; } log_counts;
static log_counts run_log_child(const char *self, const char *level) {
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        if (level) setenv("MOEFR_LOG_LEVEL", level, 1);
        else unsetenv("MOEFR_LOG_LEVEL");
        setenv("MOEFR_NUM_THREADS", "oops", 1); /* a warning */
        /* under qemu-user (make test-aarch64) the child runs through the emulator too */
        const char *emu = getenv("MOEFR_TEST_EMULATOR");
        if (emu && *emu) execl(emu, emu, self, "--log-child", (char *)NULL);
        else execl(self, self, "--log-child", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[1024];
    log_counts c = {0, 0, 0, 0, 0, 0};
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "moefr ", 6) != 0) continue; /* sanitizer or test chatter */
        c.lines++;
        c.error += strncmp(line, "moefr error:", 12) == 0;
        c.warn += strncmp(line, "moefr warn:", 11) == 0;
        c.info += strncmp(line, "moefr info:", 11) == 0;
        c.debug += strncmp(line, "moefr debug:", 12) == 0;
        c.named += strstr(line, "dataType 77") != NULL;
    }
    fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) TU_FAIL("log child (%s) failed", level ? level : "unset");
    return c;
}

static void logging(const char *self) {
    log_counts c = run_log_child(self, NULL);
    if (c.lines != 0) TU_FAIL("MOEFR_LOG_LEVEL unset printed %d lines", c.lines);
    c = run_log_child(self, "none");
    CHECK(c.lines == 0);
    c = run_log_child(self, "verbose"); /* unknown: treated as none */
    CHECK(c.lines == 0);
    c = run_log_child(self, "error");
    if (!(c.error >= 1 && c.named == 1 && c.warn == 0 && c.info == 0 && c.debug == 0))
        TU_FAIL("error level: %d error (%d naming the call), %d warn, %d info, %d debug", c.error, c.named, c.warn,
                c.info, c.debug);
    c = run_log_child(self, "warn");
    CHECK(c.error >= 1 && c.warn >= 1 && c.info == 0 && c.debug == 0);
    c = run_log_child(self, "info");
    CHECK(c.error >= 1 && c.warn >= 1 && c.info >= 1 && c.debug == 0);
    c = run_log_child(self, "debug");
    CHECK(c.error >= 1 && c.warn >= 1 && c.info >= 1 && c.debug >= 1);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--log-child") == 0) return log_child();
    tu_seed("test_hostile");
    descriptors();
    shape_overflow();
    bad_values();
    misuse();
    no_leaks();
    /* argv[0] rather than /proc/self/exe, which names valgrind's tool under valgrind */
    logging(strchr(argv[0], '/') ? argv[0] : "/proc/self/exe");
    printf("test_hostile: all checks passed\n");
    return 0;
}
