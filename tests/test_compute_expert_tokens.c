/* test_compute_expert_tokens.c - aclnnMoeComputeExpertTokens against a naive
 * count (out[e] = number of ids <= e), CANN's own example (ids 0,0,1,1,2,2
 * with 3 experts give 2,4,6), random sorted ids with ties and unused experts,
 * strided input, out longer than numExperts (the tail untouched), poisoned
 * output; every phase-1 rule with its code and message; ids at or past
 * numExperts (torch_npu's test draws them: randint(0, num_expert)) are not
 * counted, as on the NPU; unsorted and negative ids rejected in phase 2 with
 * out untouched. */
#include "aclnnop/aclnn_moe_compute_expert_tokens.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

#define OP "aclnnMoeComputeExpertTokens: "

static aclTensor *mk1(int64_t n, aclDataType dt, void *data) { return tu_mk(1, n, 1, 1, dt, data); }

/* Runs both phases; returns the status (phase 1's if it failed). */
static aclnnStatus run(const aclTensor *s, int64_t E, const aclTensor *o, uint64_t *wsz) {
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeComputeExpertTokensGetWorkspaceSize(s, E, o, wsz, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    void *w = *wsz ? malloc(*wsz) : NULL;
    rc = aclnnMoeComputeExpertTokens(w, *wsz, e, NULL);
    free(w);
    return rc;
}

static void random_case(int64_t n, int64_t E) {
    int32_t *ids = malloc(sizeof *ids * (size_t)(n + 1));
    int64_t v = 0;
    /* half the cases reach past the last expert: E itself, up to E + 3 */
    const int64_t top = tu_int(0, 1) ? E - 1 : E + 3;
    for (int64_t i = 0; i < n; i++) {
        if (tu_int(0, 2) == 0) v += tu_int(0, 3);
        if (v > top) v = top;
        ids[i] = (int32_t)v;
    }
    const int64_t extra = tu_int(0, 3), stride = tu_int(1, 3), off = tu_int(0, 2);
    tu_owned sv = tu_make_view(ids, 1, n, 1, ACL_INT32, 4, off, stride, 0);
    const size_t ob = (size_t)(E + extra) * 4;
    unsigned char *out = tu_poisoned(ob);
    aclTensor *to = mk1(E + extra, ACL_INT32, out);
    uint64_t ws = 0;
    aclnnStatus rc = run(sv.t, E, to, &ws);
    int bad = rc != ACLNN_SUCCESS;
    if (bad) printf("FAIL n=%lld E=%lld: %d (%s)\n", (long long)n, (long long)E, rc, aclGetRecentErrMsg());
    for (int64_t e = 0; e < E && !bad; e++) {
        int64_t want = 0;
        for (int64_t i = 0; i < n; i++) want += ids[i] <= e;
        int32_t got;
        memcpy(&got, out + e * 4, 4);
        if (got != want) {
            printf("FAIL n=%lld E=%lld: out[%lld] = %d, want %lld\n", (long long)n, (long long)E, (long long)e, got,
                   (long long)want);
            bad = 1;
        }
    }
    if (!bad && !tu_all_poison(out + E * 4, (size_t)extra * 4 + TU_GUARD)) {
        printf("FAIL n=%lld E=%lld: out written past numExperts\n", (long long)n, (long long)E);
        bad = 1;
    }
    g_cases++;
    g_fail += bad;
    aclDestroyTensor(sv.t), aclDestroyTensor(to);
    free(sv.store), free(ids), free(out);
}

static void validation(void) {
    const int N1 = ACLNN_ERR_PARAM_NULLPTR, IV = ACLNN_ERR_PARAM_INVALID, TL = ACLNN_ERR_INNER_TILING_ERROR;
    int32_t ids[6] = {0, 0, 1, 1, 2, 2}, out[8];
    aclTensor *ts = mk1(6, ACL_INT32, ids), *to = mk1(3, ACL_INT32, out);
    uint64_t ws = 5;
    memset(out, TU_POISON, sizeof out);
    CHECK(run(ts, 3, to, &ws) == ACLNN_SUCCESS && out[0] == 2 && out[1] == 4 && out[2] == 6 && ws == 0,
          "CANN's example: %d %d %d", out[0], out[1], out[2]);
    aclOpExecutor *e = NULL;
    struct {
        const aclTensor *s, *o;
        int64_t E;
        int null_ws, null_ex;
        aclnnStatus want;
        const char *msg;
    } cases[] = {
        {NULL, to, 3, 0, 0, N1, OP "sortedExperts is NULL"},
        {ts, NULL, 3, 0, 0, N1, OP "out is NULL"},
        {ts, to, 3, 1, 0, N1, OP "workspaceSize is NULL"},
        {ts, to, 3, 0, 1, N1, OP "executor is NULL"},
        {ts, to, 0, 0, 0, TL, OP "numExperts must not be 0"},
        {ts, to, -2, 0, 0, TL, OP "numExperts must be > 0, got -2"},
        {ts, to, 2049, 0, 0, TL, OP "numExperts must be <= 2048, got 2049"},
        {ts, to, 4, 0, 0, TL, OP "out dim0 must be at least numExperts = 4, got 3"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        aclnnStatus rc = aclnnMoeComputeExpertTokensGetWorkspaceSize(cases[c].s, cases[c].E, cases[c].o,
                                                                     cases[c].null_ws ? NULL : &ws,
                                                                     cases[c].null_ex ? NULL : &e);
        const char *m = aclGetRecentErrMsg();
        CHECK(rc == cases[c].want && m && strcmp(m, cases[c].msg) == 0, "case %zu: %d '%s' (want '%s')", c, rc,
              m ? m : "", cases[c].msg);
    }
    aclTensor *sf = mk1(6, ACL_FLOAT, ids), *s64 = mk1(6, ACL_INT64, ids), *of = mk1(3, ACL_FLOAT, out),
              *o0 = mk1(0, ACL_INT32, out);
    int64_t d2[2] = {2, 3}, d4[1] = {4}, s2[1] = {2};
    aclTensor *s2d = aclCreateTensor(d2, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d2, 2, ids);
    aclTensor *o2d = aclCreateTensor(d2, 2, ACL_INT32, NULL, 0, ACL_FORMAT_ND, d2, 2, out);
    aclTensor *ost = aclCreateTensor(d4, 1, ACL_INT32, s2, 0, ACL_FORMAT_ND, (int64_t[]){8}, 1, out);
    aclTensor *snz = aclCreateTensor(d2, 1, ACL_INT32, NULL, 0, ACL_FORMAT_NCHW, d2, 1, ids);
    struct {
        const aclTensor *s, *o;
        int64_t E;
        aclnnStatus want;
        const char *msg;
    } more[] = {
        {sf, to, 3, IV, OP "sortedExperts dtype must be INT32, got FLOAT"},
        {s64, to, 3, IV, OP "sortedExperts dtype must be INT32, got INT64"},
        {ts, of, 3, IV, OP "out dtype must be INT32, got FLOAT"},
        {snz, to, 3, IV, OP "sortedExperts format must be ND, got NCHW (0)"},
        {ts, ost, 3, IV, OP "out must be contiguous (an output)"},
        {s2d, to, 3, TL, OP "sortedExperts must be 1-D, got 2-D (2, 3)"},
        {ts, o2d, 3, TL, OP "out must be 1-D, got 2-D (2, 3)"},
        {ts, o0, 0, ACLNN_SUCCESS, NULL}, /* out empty: success before any tiling rule */
    };
    for (size_t c = 0; c < sizeof more / sizeof *more; c++) {
        e = NULL;
        aclnnStatus rc = aclnnMoeComputeExpertTokensGetWorkspaceSize(more[c].s, more[c].E, more[c].o, &ws, &e);
        const char *m = aclGetRecentErrMsg();
        CHECK(rc == more[c].want && (more[c].msg == NULL || (m && strcmp(m, more[c].msg) == 0)),
              "more %zu: %d '%s' (want '%s')", c, rc, m ? m : "", more[c].msg ? more[c].msg : "");
        if (rc == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e);
    }
    /* no ids: every count is 0 */
    aclTensor *s0 = mk1(0, ACL_INT32, ids);
    memset(out, TU_POISON, sizeof out);
    CHECK(run(s0, 3, to, &ws) == ACLNN_SUCCESS && out[0] == 0 && out[1] == 0 && out[2] == 0, "no ids");
    /* ids equal to numExperts or above: not counted, as the NPU's kernels give them (issue 22, 5a) */
    struct {
        int32_t v[6], want[3];
    } past[] = {{{0, 0, 1, 1, 2, 3}, {2, 4, 5}},
                {{0, 3, 3, 3, 3, 3}, {1, 1, 1}},
                {{3, 3, 3, 3, 3, 3}, {0, 0, 0}},
                {{1, 1, 4, 7, 9, INT32_MAX}, {0, 2, 2}},
                {{0, 2, 2, 3, 5, 5}, {1, 1, 3}}};
    for (size_t b = 0; b < sizeof past / sizeof *past; b++) {
        memcpy(ids, past[b].v, sizeof ids);
        memset(out, TU_POISON, sizeof out);
        aclnnStatus rc = run(ts, 3, to, &ws);
        CHECK(rc == ACLNN_SUCCESS && memcmp(out, past[b].want, sizeof past[b].want) == 0 &&
                  tu_all_poison((unsigned char *)(out + 3), sizeof out - 3 * sizeof *out),
              "past %zu: %d (%s) -> %d %d %d", b, rc, rc ? aclGetRecentErrMsg() : "", out[0], out[1], out[2]);
    }
    /* phase 2: unsorted or negative, out untouched */
    struct {
        int32_t v[6];
        const char *msg;
    } bad[] = {{{0, 1, 0, 1, 2, 2}, OP "sortedExperts is not ascending: [2] = 0 after 1"},
               {{0, 0, 1, 1, 4, 3}, OP "sortedExperts is not ascending: [5] = 3 after 4"},
               {{-1, 0, 1, 1, 2, 2}, OP "sortedExperts[0] = -1 is negative (ids at or past numExperts = 3 are not counted)"},
               {{INT32_MIN, -5, 1, 1, 2, 2}, OP "sortedExperts[0] = -2147483648 is negative (ids at or past numExperts = 3 are not counted)"}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        memcpy(ids, bad[b].v, sizeof ids);
        memset(out, TU_POISON, sizeof out);
        aclnnStatus rc = run(ts, 3, to, &ws);
        const char *m = aclGetRecentErrMsg();
        CHECK(rc == IV && m && strcmp(m, bad[b].msg) == 0, "bad %zu: %d '%s'", b, rc, m ? m : "");
        CHECK(tu_all_poison((unsigned char *)out, sizeof out), "bad %zu: out written", b);
    }
    aclTensor *all[] = {ts, to, sf, s64, of, o0, s2d, o2d, ost, snz, s0};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) aclDestroyTensor(all[i]);
}

int main(void) {
    tu_seed("test_compute_expert_tokens");
    validation();
    for (int i = 0; i < 200; i++) random_case(tu_int(0, i < 190 ? 300 : 20000), tu_int(1, i % 3 ? 40 : 2048));
    printf("test_compute_expert_tokens: %d random cases, %d validation checks, %d failed\n", g_cases, g_checks, g_fail);
    return g_fail != 0;
}
