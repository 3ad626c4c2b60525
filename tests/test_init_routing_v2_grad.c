/* test_init_routing_v2_grad.c - aclnnMoeInitRoutingV2Grad against an
 * oracle written from CANN's documented semantics and moefr's documented
 * order: out[r] = the kept gradExpandedX rows of r's topK slots, summed in
 * fp32 from the first kept one in k order, rounded once (values decoded and
 * rounded by tests/ref_fp.h, independent of src/); no kept slot: +0.0.
 * Random cases: every dtype, dropless (permutations and repeats), active
 * (values past activeNum skipped), drop/pad (-1 skipped), odd sizes,
 * topK 1 (exact copies), strided 2-D and 3-D gradExpandedX, strided and 2-D
 * expandedRowIdx, poisoned out with guard bytes; then every phase-1 rule
 * with its code and message and the phase-2 index rejections. */
#include "aclnnop/aclnn_moe_init_routing_v2_grad.h"
#include "ref_fp.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

#define OP "aclnnMoeInitRoutingV2Grad: "

static const aclDataType DT[3] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT};

static float dec(aclDataType dt, const unsigned char *p) {
    if (dt == ACL_FLOAT) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return (float)ref_val16(dt == ACL_BF16, h);
}
static void enc(aclDataType dt, unsigned char *p, float v) {
    if (dt == ACL_FLOAT) {
        memcpy(p, &v, 4);
        return;
    }
    uint16_t h = ref_round16(dt == ACL_BF16, (double)v);
    memcpy(p, &h, 2);
}

static int run_case(int mode, aclDataType dt, int64_t N, int64_t K, int64_t H, int64_t active, int64_t E, int64_t C,
                    int repeats) {
    const size_t es = dt == ACL_FLOAT ? 4 : 2;
    const int64_t T = N * K, D0 = mode == 1 ? E * C : (active > 0 ? active : T);
    /* gradExpandedX values: random finite numbers, exact zeros of both signs */
    unsigned char *g = malloc((size_t)(D0 * H) * es + 1);
    for (int64_t i = 0; i < D0 * H; i++) {
        float v = (float)((double)(int64_t)(tu_next() % 2000001) / 250000.0 - 4.0);
        if (tu_int(0, 15) == 0) v = tu_int(0, 1) ? 0.0f : -0.0f;
        enc(dt, g + i * (int64_t)es, v);
    }
    /* index values */
    int32_t *idx = malloc(sizeof *idx * (size_t)(T + 1));
    for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)i;
    for (int64_t i = T - 1; i > 0; i--) { /* a permutation of [0, T) */
        int64_t j = tu_int(0, i);
        int32_t s = idx[i];
        idx[i] = idx[j], idx[j] = s;
    }
    for (int64_t i = 0; i < T; i++) {
        if (mode == 0 && active == 0 && repeats) idx[i] = (int32_t)tu_int(0, T - 1);
        if (mode == 0 && active > 0 && repeats) idx[i] = (int32_t)tu_int(0, T + 3);
        if (mode == 1) idx[i] = tu_int(0, 3) == 0 || D0 == 0 ? -1 : (int32_t)tu_int(0, D0 - 1);
    }
    /* views: padded rows, sometimes every other element, an offset */
    const int64_t s1 = tu_int(0, 3) == 0 ? 2 : 1, s0 = H * s1 + tu_int(0, 3), off = tu_int(0, 5);
    aclTensor *tg;
    unsigned char *gstore;
    if (mode == 1) {
        const int64_t span = off + (D0 > 0 ? (D0 - 1) * s0 + (H - 1) * s1 : 0) + 1;
        gstore = calloc((size_t)span * es + 1, 1);
        for (int64_t d = 0; d < D0; d++)
            for (int64_t h = 0; h < H; h++)
                memcpy(gstore + (size_t)(off + d * s0 + h * s1) * es, g + (size_t)(d * H + h) * es, es);
        int64_t dims[3] = {E, C, H}, st[3] = {C * s0, s0, s1}, sd[1] = {span};
        tg = aclCreateTensor(dims, 3, dt, st, off, ACL_FORMAT_ND, sd, 1, gstore);
    } else {
        tu_owned v = tu_make_view(g, 2, D0, H, dt, es, off, s0, s1);
        tg = v.t, gstore = v.store;
    }
    tu_owned iv = tu_int(0, 2) == 0 ? tu_make_view(idx, 2, T, 1, ACL_INT32, 4, tu_int(0, 3), tu_int(1, 2), 1)
                                   : tu_make_view(idx, 1, T, 1, ACL_INT32, 4, tu_int(0, 3), tu_int(1, 2), 0);
    const size_t ob = (size_t)(N * H) * es;
    unsigned char *out = tu_poisoned(ob);
    aclTensor *to = tu_mk(2, N, H, 0, dt, out);
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    int bad = 0;
    char what[200];
    snprintf(what, sizeof what, "mode=%d dt=%d N=%lld K=%lld H=%lld active=%lld E=%lld C=%lld rep=%d", mode, (int)dt,
             (long long)N, (long long)K, (long long)H, (long long)active, (long long)E, (long long)C, repeats);
    aclnnStatus rc = aclnnMoeInitRoutingV2GradGetWorkspaceSize(tg, iv.t, K, mode, active, to, &wsz, &e);
    if (rc != ACLNN_SUCCESS) {
        printf("FAIL %s: phase 1 = %d (%s)\n", what, rc, aclGetRecentErrMsg()), bad = 1;
    } else {
        void *ws = wsz ? malloc(wsz) : NULL;
        if (ws) memset(ws, TU_POISON, wsz);
        rc = aclnnMoeInitRoutingV2Grad(ws, wsz, e, NULL);
        free(ws);
        if (rc != ACLNN_SUCCESS) printf("FAIL %s: phase 2 = %d (%s)\n", what, rc, aclGetRecentErrMsg()), bad = 1;
    }
    /* the oracle */
    unsigned char *want = malloc(ob + 1);
    for (int64_t r = 0; r < N && !bad; r++)
        for (int64_t h = 0; h < H; h++) {
            float acc = 0.0f;
            int any = 0;
            for (int64_t k = 0; k < K; k++) {
                const int32_t d = idx[r * K + k];
                const int keep = mode == 1 ? d != -1 : (active == 0 || d < active);
                if (!keep) continue;
                const float v = dec(dt, g + (size_t)(d * H + h) * es);
                acc = any ? acc + v : v;
                any = 1;
            }
            enc(dt, want + (size_t)(r * H + h) * es, any ? acc : 0.0f);
        }
    if (!bad && (memcmp(out, want, ob) != 0 || !tu_guard_ok(out, ob))) {
        for (size_t i = 0; i < ob; i++)
            if (out[i] != want[i]) {
                printf("FAIL %s: out byte %zu = %02x, want %02x\n", what, i, out[i], want[i]);
                break;
            }
        if (!tu_guard_ok(out, ob)) printf("FAIL %s: out written past its end\n", what);
        bad = 1;
    }
    g_cases++;
    g_fail += bad;
    aclDestroyTensor(tg), aclDestroyTensor(iv.t), aclDestroyTensor(to);
    free(g), free(idx), free(gstore), free(iv.store), free(out), free(want);
    return bad;
}

static void validation(void) {
    const int N1 = ACLNN_ERR_PARAM_NULLPTR, IV = ACLNN_ERR_PARAM_INVALID, TL = ACLNN_ERR_INNER_TILING_ERROR;
    enum { N = 3, K = 2, H = 4, E = 2, C = 3 };
    float g[N * K * H], out[N * H + 4];
    int32_t idx[N * K];
    for (int i = 0; i < N * K; i++) idx[i] = i;
    for (int i = 0; i < N * K * H; i++) g[i] = (float)i;
    aclTensor *tg = tu_mk(2, N * K, H, 0, ACL_FLOAT, g), *ti = tu_mk(1, N * K, 0, 0, ACL_INT32, idx),
              *to = tu_mk(2, N, H, 0, ACL_FLOAT, out), *tg3 = tu_mk(3, E, C, H, ACL_FLOAT, g);
    struct {
        const aclTensor *g, *i, *o;
        int64_t k, mode, active;
        int null_ws;
        aclnnStatus want;
        const char *msg;
    } cases[] = {
        {tg, ti, to, K, 0, 0, 0, 0, NULL},
        {tg3, ti, to, K, 1, 0, 0, 0, NULL},
        {NULL, ti, to, K, 0, 0, 0, N1, OP "gradExpandedX is NULL"},
        {tg, NULL, to, K, 0, 0, 0, N1, OP "expandedRowIdx is NULL"},
        {tg, ti, NULL, K, 0, 0, 0, N1, OP "out is NULL"},
        {tg, ti, to, K, 0, 0, 1, N1, OP "workspaceSize is NULL"},
        {tg, ti, to, K, 2, 0, 0, TL, OP "dropPadMode must be 0 or 1, got 2"},
        {tg, ti, to, 0, 0, 0, 0, TL, OP "topK must be > 0, got 0"},
        {tg, ti, to, K, 0, -1, 0, TL, OP "activeNum must be >= 0, got -1"},
        {tg, ti, to, K, 1, 0, 0, TL, OP "gradExpandedX must be 3-D in dropPadMode 1, got 2-D (6, 4)"},
        {tg3, ti, to, K, 0, 0, 0, TL, OP "gradExpandedX must be 2-D in dropPadMode 0, got 3-D (2, 3, 4)"},
        {tg, ti, to, K, 0, 5, 0, TL, OP "gradExpandedX dim0 must equal activeNum (5), got 6"},
        {tg, ti, to, 3, 0, 0, 0, TL, OP "out dim0 must be 2, got 3"},
        {tg, ti, to, 4, 0, 0, 0, TL, OP "out dim0 must be 1, got 3"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeInitRoutingV2GradGetWorkspaceSize(cases[c].g, cases[c].i, cases[c].k, cases[c].mode,
                                                                   cases[c].active, cases[c].o,
                                                                   cases[c].null_ws ? NULL : &ws, &e);
        const char *m = aclGetRecentErrMsg();
        CHECK(rc == cases[c].want && (cases[c].msg == NULL || (m && strcmp(m, cases[c].msg) == 0)),
              "case %zu: %d (want %d) '%s' (want '%s')", c, rc, cases[c].want, m ? m : "", cases[c].msg ? cases[c].msg : "");
        if (rc == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e);
    }
    /* dtypes, formats, contiguity, shapes: one tensor changed at a time */
    aclTensor *gh = tu_mk(2, N * K, H, 0, ACL_FLOAT16, g), *gi = tu_mk(2, N * K, H, 0, ACL_INT32, g),
              *i64 = tu_mk(1, N * K, 0, 0, ACL_INT64, idx), *oh = tu_mk(2, N, H, 0, ACL_FLOAT16, out),
              *g4 = tu_mk(1, N * K * H, 0, 0, ACL_FLOAT, g), *gw = tu_mk(2, N * K, H + 1, 0, ACL_FLOAT, g),
              *g5 = tu_mk(2, 5, H, 0, ACL_FLOAT, g), *o3 = tu_mk(3, N, H, 1, ACL_FLOAT, out),
              *i0 = tu_mk(1, 0, 0, 0, ACL_INT32, idx), *i5 = tu_mk(1, 5, 0, 0, ACL_INT32, idx),
              *o5 = tu_mk(2, 2, H, 0, ACL_FLOAT, out), *g0 = tu_mk(2, 0, H, 0, ACL_FLOAT, g), *o0 = tu_mk(2, 0, H, 0, ACL_FLOAT, out),
              *tga = tu_mk(2, 4, H, 0, ACL_FLOAT, g), *g3z = tu_mk(3, 0, C, H, ACL_FLOAT, g);
    int64_t od[2] = {N, H}, os[2] = {1, N}, osd[1] = {N * H};
    aclTensor *ocm = aclCreateTensor(od, 2, ACL_FLOAT, os, 0, ACL_FORMAT_ND, osd, 1, out);
    struct {
        const aclTensor *g, *i, *o;
        int64_t k, mode, active;
        aclnnStatus want;
        const char *msg;
    } more[] = {
        {gh, ti, to, K, 0, 0, IV, OP "out dtype must be FLOAT16 given gradExpandedX FLOAT16, got FLOAT"},
        {gi, ti, to, K, 0, 0, IV, OP "gradExpandedX dtype must be FLOAT16 or BFLOAT16 or FLOAT, got INT32"},
        {tg, i64, to, K, 0, 0, IV, OP "expandedRowIdx dtype must be INT32, got INT64"},
        {tg, ti, oh, K, 0, 0, IV, OP "out dtype must be FLOAT given gradExpandedX FLOAT, got FLOAT16"},
        {tg, ti, ocm, K, 0, 0, IV, OP "out must be contiguous (an output)"},
        {g4, ti, to, K, 0, 0, TL, OP "gradExpandedX must be 2-D or 3-D, got 1-D (24)"},
        {g5, ti, to, K, 0, 0, TL, OP "gradExpandedX dim0 must equal expandedRowIdx dim0 (6) when activeNum is 0, got 5"},
        {tg, ti, o3, K, 0, 0, TL, OP "out must be 2-D, got 3-D (3, 4, 1)"},
        {gw, ti, to, K, 0, 0, TL, OP "out dim1 must be 5, got 4"},
        {tg, i5, to, K, 0, 0, TL, OP "gradExpandedX dim0 must equal expandedRowIdx dim0 (5) when activeNum is 0, got 6"},
        {tga, i5, o5, K, 0, 4, TL, OP "expandedRowIdx dim0 (5) must be a multiple of topK (2)"},
        {g0, i0, to, K, 0, 0, TL, OP "out dim0 must be 0, got 3"},
        {tga, i0, o5, K, 0, 4, TL, OP "out dim0 must be 0, got 2"},
        {g3z, ti, to, K, 1, 0, ACLNN_SUCCESS, NULL}, /* E*C = 0 rows: allowed when every index is -1 */
        {tga, ti, to, K, 0, 4, ACLNN_SUCCESS, NULL},
        {g0, i0, o0, K, 0, 0, ACLNN_SUCCESS, NULL}, /* out empty: success before tiling */
        {g0, i0, o0, 0, 7, -3, ACLNN_SUCCESS, NULL},
    };
    for (size_t c = 0; c < sizeof more / sizeof *more; c++) {
        uint64_t ws = 9;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeInitRoutingV2GradGetWorkspaceSize(more[c].g, more[c].i, more[c].k, more[c].mode,
                                                                   more[c].active, more[c].o, &ws, &e);
        const char *m = aclGetRecentErrMsg();
        CHECK(rc == more[c].want && (more[c].msg == NULL || (m && strcmp(m, more[c].msg) == 0)),
              "more %zu: %d (want %d) '%s' (want '%s')", c, rc, more[c].want, m ? m : "", more[c].msg ? more[c].msg : "");
        if (rc == ACLNN_SUCCESS) {
            if (more[c].o == o0) CHECK(ws == 0, "empty problem asks workspace %llu", (unsigned long long)ws);
            aclDestroyAclOpExecutor(e);
        }
    }
    /* phase 2: values CANN would read out of bounds with; out untouched */
    struct {
        int64_t mode, active;
        int32_t v;
        const aclTensor *g;
        const char *msg;
    } bad[] = {{0, 0, 6, tg, OP "expandedRowIdx[3] = 6 is out of range [0, 6)"},
               {0, 0, -1, tg, OP "expandedRowIdx[3] = -1 is out of range [0, 6)"},
               {0, 4, -2, tga, OP "expandedRowIdx[3] = -2 is out of range [0, 4)"},
               {1, 0, 6, tg3, OP "expandedRowIdx[3] = 6 is out of range [-1, 6)"},
               {1, 0, -2, tg3, OP "expandedRowIdx[3] = -2 is out of range [-1, 6)"}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        for (int i = 0; i < N * K; i++) idx[i] = i;
        idx[3] = bad[b].v;
        memset(out, TU_POISON, sizeof out);
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeInitRoutingV2GradGetWorkspaceSize(bad[b].g, ti, K, bad[b].mode, bad[b].active, to, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS, "bad %zu phase 1: %d", b, rc);
        void *w = ws ? malloc(ws) : NULL;
        rc = aclnnMoeInitRoutingV2Grad(w, ws, e, NULL);
        const char *m = aclGetRecentErrMsg();
        CHECK(rc == IV && m && strcmp(m, bad[b].msg) == 0, "bad %zu: %d '%s'", b, rc, m ? m : "");
        CHECK(tu_all_poison((unsigned char *)out, sizeof out), "bad %zu: out was written", b);
        free(w);
    }
    /* active mode skips values >= activeNum, any size; drop/pad skips -1 */
    {
        for (int i = 0; i < N * K; i++) idx[i] = i;
        idx[1] = 1000, idx[4] = 4;
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        CHECK(aclnnMoeInitRoutingV2GradGetWorkspaceSize(tga, ti, K, 0, 4, to, &ws, &e) == ACLNN_SUCCESS, "active");
        void *w = malloc(ws);
        CHECK(aclnnMoeInitRoutingV2Grad(w, ws, e, NULL) == ACLNN_SUCCESS, "active run");
        free(w);
        /* hand-computed: row 0 = g[0]; row 1 = g[2] + g[3]; row 2: 4 and 5 skipped -> 0 */
        for (int h = 0; h < H; h++) {
            CHECK(out[h] == g[h], "active row 0 [%d] = %g", h, out[h]);
            CHECK(out[H + h] == g[2 * H + h] + g[3 * H + h], "active row 1 [%d] = %g", h, out[H + h]);
            CHECK(out[2 * H + h] == 0.0f && !signbit(out[2 * H + h]), "active row 2 [%d] = %g", h, out[2 * H + h]);
        }
    }
    /* phase 2 engine rules */
    {
        for (int i = 0; i < N * K; i++) idx[i] = i;
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        CHECK(aclnnMoeInitRoutingV2GradGetWorkspaceSize(tg, ti, K, 0, 0, to, &ws, &e) == ACLNN_SUCCESS && ws > 0, "ws");
        void *w = malloc(ws);
        CHECK(aclnnMoeInitRoutingV2Grad(w, ws - 1, e, NULL) == IV, "short workspace");
        CHECK(aclnnMoeInitRoutingV2GradGetWorkspaceSize(tg, ti, K, 0, 0, to, &ws, &e) == ACLNN_SUCCESS, "again");
        CHECK(aclnnMoeInitRoutingV2Grad(NULL, ws, e, NULL) == N1, "NULL workspace");
        CHECK(aclnnMoeInitRoutingV2Grad(w, ws, e, NULL) == IV, "spent executor");
        free(w);
    }
    aclTensor *all[] = {tg, ti, to, tg3, gh, gi, i64, oh, g4, gw, g5, o3, i0, i5, o5, g0, o0, tga, g3z, ocm};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) aclDestroyTensor(all[i]);
}

int main(void) {
    tu_seed("test_init_routing_v2_grad");
    ref_build_tabs();
    validation();
    for (int i = 0; i < 300; i++) {
        const int mode = (int)tu_int(0, 2) == 2 ? 1 : 0;
        const aclDataType dt = DT[tu_int(0, 2)];
        const int64_t N = i == 0 ? 3001 : tu_int(1, 29), K = i == 0 ? 4 : tu_int(1, 9);
        int64_t H = i == 0 ? 7 : tu_int(1, 37);
        const int64_t T = N * K;
        int64_t active = 0, E = 0, C = 0;
        if (mode == 0 && tu_int(0, 1)) active = tu_int(1, T + 5);
        if (mode == 1) E = tu_int(1, 6), C = tu_int(1, 5);
        if (i == 1) H = 1500; /* past one fp32 tile */
        run_case(mode, dt, N, K, H, active, E, C, (int)tu_int(0, 1));
    }
    printf("test_init_routing_v2_grad: %d random cases, %d validation checks, %d failed\n", g_cases, g_checks, g_fail);
    return g_fail != 0;
}
