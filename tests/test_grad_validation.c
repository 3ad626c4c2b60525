/* test_grad_validation.c - one check per validation rule of SPEC section 4: the
 * exact status, a one-line message naming the parameter and values, untouched outputs.
 * `--strict` runs the MOEFR_SOC=ascend910b checks (its own CTest with that environment). */
#include "testutil.h"

/* One tensor of a problem: what to build. */
typedef struct tdesc {
    int present;
    int nd;
    int64_t dims[4];
    aclDataType dt;
    aclFormat fmt;
    int transposed; /* swap the strides of the last two dims (non-contiguous) */
    int null_data;
} tdesc;

enum { T_GY, T_IDX, T_X, T_S, T_EI, T_B, T_GX, T_GS, NT };
static const char *const tnames[NT] = {"gradY", "expandedRowIdx", "expandedXOptional", "scalesOptional",
                                       "expertIdxOptional", "biasOptional", "gradExpandedXOut", "gradScalesOut"};

typedef struct prob {
    int64_t R, K, H, E, C;
    int64_t mode, active, en, ec;
    tdesc t[NT];
    int32_t *idx_vals, *eidx_vals; /* NULL: valid defaults */
    int null_ws_size, null_executor;
} prob;

static void set(tdesc *d, int nd, int64_t a, int64_t b, int64_t c, aclDataType dt) {
    memset(d, 0, sizeof *d);
    d->present = 1;
    d->nd = nd;
    d->dims[0] = a;
    d->dims[1] = b;
    d->dims[2] = c;
    d->dt = dt;
    d->fmt = ACL_FORMAT_ND;
}

/* A valid problem with every optional input: R=3, K=2, H=5; mode 1 uses E=2, C=4. */
static prob base(int mode, aclDataType dt) {
    prob p;
    memset(&p, 0, sizeof p);
    p.R = 3, p.K = 2, p.H = 5, p.E = 2, p.C = 4;
    p.mode = mode;
    p.en = mode ? p.E : 0;
    p.ec = mode ? p.C : 0;
    set(&p.t[T_GY], 2, p.R, p.H, 0, dt);
    set(&p.t[T_IDX], 1, p.R * p.K, 0, 0, ACL_INT32);
    if (mode) set(&p.t[T_X], 3, p.E, p.C, p.H, dt);
    else set(&p.t[T_X], 2, p.R * p.K, p.H, 0, dt);
    set(&p.t[T_S], 2, p.R, p.K, 0, dt);
    set(&p.t[T_EI], 2, p.R, p.K, 0, ACL_INT32);
    set(&p.t[T_B], 2, p.E, p.H, 0, dt);
    p.t[T_GX] = p.t[T_X];
    set(&p.t[T_GS], 2, p.R, p.K, 0, dt);
    return p;
}

/* Without scales (so K = 1) and without bias/expertIdx. */
static prob base_noscales(int mode, aclDataType dt) {
    prob p = base(mode, dt);
    p.K = 1;
    p.t[T_S].present = p.t[T_EI].present = p.t[T_B].present = 0;
    set(&p.t[T_IDX], 1, p.R, 0, 0, ACL_INT32);
    if (!mode) set(&p.t[T_X], 2, p.R, p.H, 0, dt);
    p.t[T_GX] = p.t[T_X];
    set(&p.t[T_GS], 2, p.R, 1, 0, dt);
    return p;
}

static size_t esize(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_DOUBLE: case ACL_UINT64: case ACL_COMPLEX64: return 8;
    default: return 4;
    }
}

typedef struct built {
    aclTensor *t[NT];
    unsigned char *mem[NT];
    size_t bytes[NT];
    unsigned char *out_copy[2];
} built;

static void build(const prob *p, built *b) {
    memset(b, 0, sizeof *b);
    for (int i = 0; i < NT; i++) {
        const tdesc *d = &p->t[i];
        if (!d->present) continue;
        int64_t n = 1, st[4], s = 1;
        for (int k = 0; k < d->nd; k++) n *= d->dims[k];
        for (int k = d->nd - 1; k >= 0; k--) {
            st[k] = s;
            s *= d->dims[k] > 0 ? d->dims[k] : 1;
        }
        if (d->transposed && d->nd >= 2) {
            int a = d->nd - 2, c = d->nd - 1;
            st[c] = d->dims[a];
            st[a] = 1;
            for (int k = a - 1; k >= 0; k--) st[k] = st[k + 1] * d->dims[k + 1];
            if (d->nd == 3) st[0] = d->dims[1] * d->dims[2];
        }
        int64_t storage = n > 0 ? n : 1;
        b->bytes[i] = (size_t)storage * esize(d->dt);
        b->mem[i] = calloc(1, b->bytes[i]);
        CHECK(b->mem[i] != NULL);
        if (i == T_GX || i == T_GS) memset(b->mem[i], i == T_GX ? 0xA7 : 0x5B, b->bytes[i]);
        if (i == T_IDX && d->dt == ACL_INT32) { /* valid: identity (mode 0) or rows then -1 (mode 1) */
            int32_t *v = (int32_t *)b->mem[i];
            for (int64_t k = 0; k < n; k++) {
                v[k] = p->idx_vals ? p->idx_vals[k] : (int32_t)k;
                if (!p->idx_vals && p->mode == 1 && k >= p->E * p->C) v[k] = -1;
            }
        }
        if (i == T_EI && d->dt == ACL_INT32) {
            int32_t *v = (int32_t *)b->mem[i];
            for (int64_t k = 0; k < n; k++) v[k] = p->eidx_vals ? p->eidx_vals[k] : (int32_t)(k % p->E);
        }
        b->t[i] = aclCreateTensor(d->dims, (uint64_t)d->nd, d->dt, st, 0, d->fmt, &storage, 1,
                                  d->null_data ? NULL : b->mem[i]);
        if (b->t[i] == NULL) TU_FAIL("building %s failed", tnames[i]);
    }
    for (int o = 0; o < 2; o++) {
        int i = o ? T_GS : T_GX;
        if (!b->mem[i]) continue;
        b->out_copy[o] = malloc(b->bytes[i]);
        memcpy(b->out_copy[o], b->mem[i], b->bytes[i]);
    }
}

static int outputs_untouched(const built *b) {
    for (int o = 0; o < 2; o++) {
        int i = o ? T_GS : T_GX;
        if (b->mem[i] && memcmp(b->out_copy[o], b->mem[i], b->bytes[i]) != 0) return 0;
    }
    return 1;
}

static void unbuild(built *b) {
    for (int i = 0; i < NT; i++) {
        tu_destroy(b->t[i]);
        free(b->mem[i]);
    }
    free(b->out_copy[0]);
    free(b->out_copy[1]);
}

/* Leaves a known message behind so a stale one cannot pass for the new one. */
static void plant_message(void) {
    CHECK(aclrtSetDevice(77) != ACL_SUCCESS);
    CHECK(tu_msg_has("77", NULL));
}

static int g_checks;

static aclnnStatus phase1(const prob *p, built *b, uint64_t *ws, aclOpExecutor **ex) {
    return aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
        b->t[T_GY], b->t[T_IDX], b->t[T_X], b->t[T_S], b->t[T_EI], b->t[T_B], p->mode, p->active, p->en, p->ec,
        b->t[T_GX], b->t[T_GS], p->null_ws_size ? NULL : ws, p->null_executor ? NULL : ex);
}

static void check_message(int line, const char *const *frags) {
    const char *m = aclGetRecentErrMsg();
    if (m == NULL || strchr(m, '\n') || strstr(m, "deviceId") != NULL)
        TU_FAIL("line %d: no fresh one-line message (got \"%s\")", line, m ? m : "(null)");
    for (int i = 0; frags[i]; i++)
        if (!strstr(m, frags[i])) TU_FAIL("line %d: message \"%s\" lacks \"%s\"", line, m, frags[i]);
}

/* Phase 1 must fail with `want`, no executor, untouched outputs, and a message with every fragment. */
static void expect_p1(int line, const prob *p, aclnnStatus want, const char *const *frags) {
    built b;
    build(p, &b);
    plant_message();
    uint64_t ws = 12345;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = phase1(p, &b, &ws, &ex);
    if (rc != want) TU_FAIL("line %d: phase 1 returned %d, want %d", line, (int)rc, (int)want);
    if (ex != NULL) TU_FAIL("line %d: phase 1 failed but produced an executor", line);
    check_message(line, frags);
    if (!outputs_untouched(&b)) TU_FAIL("line %d: a failing phase 1 wrote an output", line);
    unbuild(&b);
    g_checks++;
}

/* Phase 1 succeeds; phase 2 must fail with `want` and leave both outputs untouched. */
static void expect_p2(int line, const prob *p, aclnnStatus want, const char *const *frags) {
    built b;
    build(p, &b);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = phase1(p, &b, &ws, &ex);
    if (rc != ACLNN_SUCCESS) TU_FAIL("line %d: phase 1 returned %d, want success", line, (int)rc);
    void *w = ws ? malloc(ws) : NULL;
    plant_message();
    rc = aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
    if (rc != want) TU_FAIL("line %d: phase 2 returned %d, want %d", line, (int)rc, (int)want);
    check_message(line, frags);
    if (!outputs_untouched(&b)) TU_FAIL("line %d: a failing phase 2 wrote an output", line);
    /* the failed run released the single-use executor */
    CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
    free(w);
    unbuild(&b);
    g_checks++;
}

/* Both phases succeed (positive controls next to the rules). */
static void expect_ok(int line, const prob *p) {
    built b;
    build(p, &b);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = phase1(p, &b, &ws, &ex);
    if (rc != ACLNN_SUCCESS) TU_FAIL("line %d: phase 1 returned %d, want success", line, (int)rc);
    void *w = ws ? malloc(ws) : NULL;
    rc = aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
    if (rc != ACLNN_SUCCESS) TU_FAIL("line %d: phase 2 returned %d, want success", line, (int)rc);
    free(w);
    unbuild(&b);
    g_checks++;
}

#define F(...) ((const char *const[]){__VA_ARGS__, NULL})
#define P1(p, want, ...) expect_p1(__LINE__, &(p), want, F(__VA_ARGS__))
#define P2(p, want, ...) expect_p2(__LINE__, &(p), want, F(__VA_ARGS__))
#define OK(p) expect_ok(__LINE__, &(p))

#define NULLPTR ACLNN_ERR_PARAM_NULLPTR
#define INVALID ACLNN_ERR_PARAM_INVALID
#define TILING ACLNN_ERR_INNER_TILING_ERROR

static const char *mf_dtname(aclDataType d) { return d == ACL_FLOAT ? "FLOAT" : d == ACL_FLOAT16 ? "FLOAT16" : "BFLOAT16"; }

static void strict_checks(void) {
    /* A2/A3 rules: scales must share gradY's dtype */
    static const aclDataType dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 3; c++) {
            prob p = base(c & 1, dts[a]);
            p.t[T_S].dt = p.t[T_GS].dt = dts[c];
            if (a == c) OK(p);
            else P1(p, INVALID, "scalesOptional", mf_dtname(dts[a]), mf_dtname(dts[c]));
        }
    /* A2/A3: without scales gradScales still takes gradY's dtype */
    prob q = base_noscales(0, ACL_FLOAT);
    q.t[T_GS].dt = ACL_FLOAT16;
    P1(q, INVALID, "gradScalesOut", "FLOAT16");
}

static void phase1_checks(void) {
    for (int mode = 0; mode < 2; mode++) {
        prob p;
        /* positive controls: the base problems, and a mixed scales dtype (Ascend 950 rules) */
        p = base(mode, ACL_FLOAT16); OK(p);
        p = base_noscales(mode, ACL_BF16); OK(p);
        p = base(mode, ACL_BF16); p.t[T_S].dt = p.t[T_GS].dt = ACL_FLOAT; OK(p);
        p = base(mode, ACL_FLOAT); p.t[T_S].dt = p.t[T_GS].dt = ACL_FLOAT16; OK(p);
        p = base(mode, ACL_FLOAT); p.t[T_B].present = 0; OK(p);              /* expertIdx without bias */
        p = base(mode, ACL_FLOAT); p.t[T_B].present = p.t[T_EI].present = 0; OK(p);
        p = base_noscales(mode, ACL_FLOAT); p.t[T_X].present = 0; OK(p);    /* no expandedX at all */

        /* 161001: required pointers */
        static const int req[4] = {T_GY, T_IDX, T_GX, T_GS};
        for (int i = 0; i < 4; i++) {
            p = base(mode, ACL_FLOAT);
            p.t[req[i]].present = 0;
            P1(p, NULLPTR, tnames[req[i]], "NULL");
        }
        p = base(mode, ACL_FLOAT); p.null_ws_size = 1; P1(p, NULLPTR, "workspaceSize");
        p = base(mode, ACL_FLOAT); p.null_executor = 1; P1(p, NULLPTR, "executor");
        /* a tensor with elements but no data: fine in phase 1 (CANN's reuse
         * recipe), 161001 in phase 2 -- unless the operator ignores it */
        for (int i = 0; i < NT; i++) {
            p = base(mode, ACL_FLOAT);
            p.t[i].null_data = 1;
            P2(p, NULLPTR, tnames[i], "NULL");
        }
        p = base_noscales(mode, ACL_FLOAT); p.t[T_GS].null_data = 1; OK(p); /* not written without scales */
        p = base(mode, ACL_FLOAT); p.t[T_B].present = 0; p.t[T_EI].null_data = 1; OK(p); /* not read */

        /* 161002: a tensor that is not live (destroyed) */
        for (int i = 0; i < NT; i++) {
            p = base(mode, ACL_FLOAT);
            built b;
            build(&p, &b);
            CHECK_RC(aclDestroyTensor(b.t[i]), ACLNN_SUCCESS);
            plant_message();
            uint64_t ws = 0;
            aclOpExecutor *ex = NULL;
            CHECK_RC(phase1(&p, &b, &ws, &ex), INVALID);
            CHECK(ex == NULL && outputs_untouched(&b));
            check_message(__LINE__, F(tnames[i]));
            b.t[i] = NULL;
            unbuild(&b);
            g_checks++;
        }

        /* 161002: dtypes outside the table */
        p = base(mode, ACL_FLOAT);
        for (int i = 0; i < NT; i++) if (i != T_IDX && i != T_EI) p.t[i].dt = ACL_INT32;
        P1(p, INVALID, "gradY", "INT32");
        p = base(mode, ACL_FLOAT);
        for (int i = 0; i < NT; i++) if (i != T_IDX && i != T_EI) p.t[i].dt = ACL_DOUBLE;
        P1(p, INVALID, "gradY", "DOUBLE");
        p = base(mode, ACL_FLOAT); p.t[T_IDX].dt = ACL_INT64; P1(p, INVALID, "expandedRowIdx", "INT64");
        p = base(mode, ACL_FLOAT); p.t[T_S].dt = p.t[T_GS].dt = ACL_INT32; P1(p, INVALID, "scalesOptional", "INT32");
        p = base(mode, ACL_FLOAT); p.t[T_S].dt = p.t[T_GS].dt = ACL_DOUBLE; P1(p, INVALID, "scalesOptional", "DOUBLE");
        p = base(mode, ACL_FLOAT); p.t[T_EI].dt = ACL_INT64; P1(p, INVALID, "expertIdxOptional", "INT64");
        /* combinations the table forbids */
        p = base(mode, ACL_FLOAT); p.t[T_X].dt = ACL_FLOAT16; P1(p, INVALID, "expandedXOptional", "FLOAT16", "FLOAT");
        p = base(mode, ACL_BF16); p.t[T_B].dt = ACL_FLOAT; P1(p, INVALID, "biasOptional", "BFLOAT16", "FLOAT");
        p = base(mode, ACL_FLOAT16); p.t[T_GX].dt = ACL_BF16; P1(p, INVALID, "gradExpandedXOut", "FLOAT16", "BFLOAT16");
        p = base(mode, ACL_FLOAT16); p.t[T_GS].dt = ACL_FLOAT; P1(p, INVALID, "gradScalesOut", "FLOAT16", "FLOAT");
        p = base(mode, ACL_FLOAT); p.t[T_S].dt = ACL_BF16; P1(p, INVALID, "gradScalesOut", "BFLOAT16", "FLOAT");
        /* Ascend 950's table frees gradScales' dtype (S) from gradY's (T) */
        p = base_noscales(mode, ACL_FLOAT); p.t[T_GS].dt = ACL_FLOAT16; OK(p);
        p = base_noscales(mode, ACL_FLOAT); p.t[T_GS].dt = ACL_INT32; P1(p, INVALID, "gradScalesOut", "INT32");
        p = base_noscales(mode, ACL_BF16); p.t[T_X].dt = ACL_FLOAT16; P1(p, INVALID, "expandedXOptional");
        /* formats */
        for (int i = 0; i < NT; i++) {
            p = base(mode, ACL_FLOAT);
            p.t[i].fmt = i & 1 ? ACL_FORMAT_NCHW : ACL_FORMAT_FRACTAL_NZ;
            P1(p, INVALID, tnames[i], "ND");
        }
        /* non-contiguous outputs (inputs may be strided) */
        p = base(mode, ACL_FLOAT); p.t[T_GX].transposed = 1; P1(p, INVALID, "gradExpandedXOut", "contiguous");
        p = base(mode, ACL_FLOAT); p.t[T_GS].transposed = 1; P1(p, INVALID, "gradScalesOut", "contiguous");
        p = base(mode, ACL_FLOAT); p.t[T_GY].transposed = p.t[T_X].transposed = p.t[T_S].transposed = 1; OK(p);
        /* the NULL class comes before the dtype class, which comes before the shape class */
        p = base(mode, ACL_FLOAT); p.t[T_GS].present = 0; p.t[T_IDX].dt = ACL_INT64; P1(p, NULLPTR, "gradScalesOut");
        p = base(mode, ACL_FLOAT); p.t[T_X].dt = ACL_BF16; p.t[T_GY].nd = 3; p.t[T_GY].dims[2] = 1;
        P1(p, INVALID, "expandedXOptional");

        /* every output empty: CANN's engine succeeds before tiling, whatever
         * the attributes and the other shapes say */
        p = base(mode, ACL_FLOAT);
        p.R = 0;
        set(&p.t[T_GY], 2, 0, 5, 0, ACL_FLOAT); set(&p.t[T_IDX], 1, 0, 0, 0, ACL_INT32);
        set(&p.t[T_GX], 2, 0, 5, 0, ACL_FLOAT); set(&p.t[T_GS], 2, 0, 2, 0, ACL_FLOAT);
        set(&p.t[T_S], 2, 7, 2, 0, ACL_FLOAT); p.mode = 7; OK(p);

        /* 561002: missing companions, bad attributes */
        p = base(mode, ACL_FLOAT); p.t[T_X].present = 0; P1(p, TILING, "scalesOptional", "expandedXOptional");
        p = base(mode, ACL_FLOAT); p.t[T_EI].present = 0; P1(p, TILING, "biasOptional", "expertIdxOptional");
        p = base(mode, ACL_FLOAT); p.mode = 2; P1(p, TILING, "dropPadMode", "2");
        p = base(mode, ACL_FLOAT); p.mode = -1; P1(p, TILING, "dropPadMode", "-1");
        /* every rank rule */
        p = base(mode, ACL_FLOAT); p.t[T_GY].nd = 1; P1(p, TILING, "gradY", "2-D", "1-D");
        p = base(mode, ACL_FLOAT); p.t[T_GY].nd = 3; p.t[T_GY].dims[2] = 1; P1(p, TILING, "gradY", "3-D");
        p = base(mode, ACL_FLOAT); p.t[T_IDX].nd = 2; p.t[T_IDX].dims[1] = 1; P1(p, TILING, "expandedRowIdx", "1-D", "2-D");
        p = base(mode, ACL_FLOAT); p.t[T_S].nd = 1; p.t[T_S].dims[0] = 6; P1(p, TILING, "scalesOptional", "1-D");
        p = base(mode, ACL_FLOAT); p.t[T_EI].nd = 1; p.t[T_EI].dims[0] = 6; P1(p, TILING, "expertIdxOptional", "1-D");
        p = base(mode, ACL_FLOAT); p.t[T_B].nd = 3; p.t[T_B].dims[2] = 1; P1(p, TILING, "biasOptional", "3-D");
        p = base(mode, ACL_FLOAT); p.t[T_GS].nd = 1; p.t[T_GS].dims[0] = 6; P1(p, TILING, "gradScalesOut", "dim0", "3", "6");
        p = base(mode, ACL_FLOAT); p.t[T_GS].nd = 1; p.t[T_GS].dims[0] = 3; p.t[T_GS].dims[1] = 0;
        P1(p, TILING, "gradScalesOut", "6", "3");
        p = base(mode, ACL_FLOAT); p.t[T_GS].nd = 3; p.t[T_GS].dims[2] = 1; P1(p, TILING, "gradScalesOut", "3-D");
        if (mode == 0) {
            p = base(0, ACL_FLOAT); set(&p.t[T_X], 3, 2, 3, 5, ACL_FLOAT); P1(p, TILING, "expandedXOptional", "3-D");
            /* CANN compares dim0 and dim1 of a mode-0 gradExpandedX, whatever its rank */
            p = base(0, ACL_FLOAT); set(&p.t[T_GX], 3, 2, 3, 5, ACL_FLOAT); P1(p, TILING, "gradExpandedXOut", "dim0", "6", "2");
            p = base(0, ACL_FLOAT); set(&p.t[T_GX], 3, 6, 5, 1, ACL_FLOAT); OK(p);
            p = base(0, ACL_FLOAT); set(&p.t[T_GX], 3, 6, 5, 2, ACL_FLOAT); OK(p);
            /* ... but rows CANN would write past the end of it are refused */
            p = base(0, ACL_FLOAT); set(&p.t[T_GX], 3, 6, 5, 0, ACL_FLOAT); P1(p, TILING, "gradExpandedXOut", "0 elements");
            p = base(0, ACL_FLOAT); set(&p.t[T_GX], 4, 6, 5, 3, ACL_FLOAT); p.t[T_GX].dims[3] = 1;
            P1(p, TILING, "gradExpandedXOut", "2-D or 3-D", "4-D");
        } else {
            p = base(1, ACL_FLOAT); set(&p.t[T_X], 2, 8, 5, 0, ACL_FLOAT); P1(p, TILING, "expandedXOptional", "3-D", "2-D");
            p = base(1, ACL_FLOAT); set(&p.t[T_GX], 2, 8, 5, 0, ACL_FLOAT); P1(p, TILING, "gradExpandedXOut", "3-D", "2-D");
        }
        /* every shape rule */
        p = base(mode, ACL_FLOAT); p.t[T_S].dims[0] = 4; P1(p, TILING, "scalesOptional", "3", "4");
        /* CANN takes D0 from expandedRowIdx, so in mode 0 expandedX is the one named */
        p = base(mode, ACL_FLOAT); p.t[T_IDX].dims[0] = 5;
        if (mode == 0) P1(p, TILING, "expandedXOptional", "dim0", "5", "6");
        else P1(p, TILING, "scalesOptional", "5", "6");
        p = base_noscales(mode, ACL_FLOAT); p.t[T_IDX].dims[0] = 6; P1(p, TILING, "expandedRowIdx", "3", "6");
        p = base(mode, ACL_FLOAT); p.t[T_EI].dims[0] = 2; P1(p, TILING, "expertIdxOptional", "3", "2");
        p = base(mode, ACL_FLOAT); p.t[T_EI].dims[1] = 3; P1(p, TILING, "expertIdxOptional", "6", "9");
        p = base(mode, ACL_FLOAT); p.t[T_EI].nd = 3; p.t[T_EI].dims[1] = 1; p.t[T_EI].dims[2] = 2;
        P1(p, TILING, "expertIdxOptional", "2-D", "3-D");
        p = base(mode, ACL_FLOAT); p.t[T_GS].dims[0] = 2; p.t[T_GS].dims[1] = 3; P1(p, TILING, "gradScalesOut", "3", "2");
        p = base(mode, ACL_FLOAT); p.t[T_GS].dims[1] = 3; P1(p, TILING, "gradScalesOut", "6", "9");
        /* without scales CANN never looks at gradScales' shape, nor at
         * expandedX, bias or expertIdx at all */
        p = base_noscales(mode, ACL_FLOAT); p.t[T_GS].dims[1] = 2; OK(p);
        p = base_noscales(mode, ACL_FLOAT); set(&p.t[T_GS], 1, 0, 0, 0, ACL_FLOAT); OK(p);
        p = base_noscales(mode, ACL_FLOAT); set(&p.t[T_B], 3, 1, 2, 3, ACL_FLOAT); set(&p.t[T_EI], 1, 9, 0, 0, ACL_INT32);
        set(&p.t[T_X], 1, 2, 0, 0, ACL_FLOAT); OK(p);
        p = base_noscales(mode, ACL_FLOAT); p.t[T_B].present = 1; p.t[T_EI].present = 0; OK(p);
        p = base(mode, ACL_FLOAT); p.t[T_B].dims[1] = 4; P1(p, TILING, "biasOptional", "5", "4");
        p = base(mode, ACL_FLOAT); p.t[T_B].dims[0] = 0; P1(p, TILING, "biasOptional", "0");
        if (mode == 1) {
            p = base(1, ACL_FLOAT); p.t[T_B].dims[0] = 3; P1(p, TILING, "biasOptional", "2", "3");
            p = base(1, ACL_FLOAT); p.en = 0; P1(p, TILING, "expertNum", "0");
            p = base(1, ACL_FLOAT); p.en = -2; P1(p, TILING, "expertNum", "-2");
            p = base(1, ACL_FLOAT); p.ec = 0; P1(p, TILING, "expertCapacity", "0");
            p = base(1, ACL_FLOAT); p.ec = -7; P1(p, TILING, "expertCapacity", "-7");
            p = base(1, ACL_FLOAT); p.active = -3; OK(p); /* activeNum is a mode 0 attribute */
            p = base(1, ACL_FLOAT); p.t[T_B].present = p.t[T_EI].present = 0; p.en = INT64_MAX / 2; p.ec = 4;
            P1(p, TILING, "expertNum", "overflow");
            /* CANN's rule is dim0*dim1 = E*C, not dim0 = E and dim1 = C */
            for (int t = 0; t < 2; t++) {
                int ti = t ? T_GX : T_X;
                const char *nm = tnames[ti];
                p = base(1, ACL_FLOAT); p.t[ti].dims[0] = 3; P1(p, TILING, nm, "dim0*dim1", "8", "3");
                p = base(1, ACL_FLOAT); p.t[ti].dims[1] = 5; P1(p, TILING, nm, "dim0*dim1", "8", "5");
                p = base(1, ACL_FLOAT); p.t[ti].dims[2] = 6; P1(p, TILING, nm, "dim2", "5", "6");
                p = base(1, ACL_FLOAT); p.t[ti].dims[0] = 4; p.t[ti].dims[1] = 2; OK(p);
                p = base(1, ACL_FLOAT); p.t[ti].dims[0] = 1; p.t[ti].dims[1] = 8; OK(p);
            }
            p = base(1, ACL_FLOAT); set(&p.t[T_GX], 2, 8, 5, 0, ACL_FLOAT);
            P1(p, TILING, "gradExpandedXOut", "3-D", "2-D");
        } else {
            /* bias rows are free in mode 0; expertNum/expertCapacity are ignored */
            p = base(0, ACL_FLOAT); p.t[T_B].dims[0] = 7; OK(p);
            p = base(0, ACL_FLOAT); p.en = -1; p.ec = 0; OK(p);
            /* CANN never checks activeNum's sign: a negative one means every entry */
            p = base(0, ACL_FLOAT); p.active = -1; OK(p);
            p = base(0, ACL_FLOAT); p.active = INT64_MIN; OK(p);
            /* activeNum picks the rows of expandedX and gradExpandedX */
            p = base(0, ACL_FLOAT); p.active = 4; p.t[T_X].dims[0] = p.t[T_GX].dims[0] = 4; OK(p);
            p = base(0, ACL_FLOAT); p.active = 6; OK(p);
            p = base(0, ACL_FLOAT); p.active = 60; OK(p);
            p = base(0, ACL_FLOAT); p.active = 4; P1(p, TILING, "expandedXOptional", "4", "6");
            p = base(0, ACL_FLOAT); p.active = 4; p.t[T_X].dims[0] = 4; P1(p, TILING, "gradExpandedXOut", "4", "6");
            p = base(0, ACL_FLOAT); p.t[T_X].dims[0] = 5; P1(p, TILING, "expandedXOptional", "dim0", "6", "5");
            p = base(0, ACL_FLOAT); p.t[T_GX].dims[0] = 7; P1(p, TILING, "gradExpandedXOut", "dim0", "6", "7");
            p = base(0, ACL_FLOAT); p.t[T_X].dims[1] = 4; P1(p, TILING, "expandedXOptional", "dim1", "5", "4");
            p = base(0, ACL_FLOAT); p.t[T_GX].dims[1] = 6; P1(p, TILING, "gradExpandedXOut", "dim1", "5", "6");
            p = base_noscales(0, ACL_FLOAT); p.t[T_X].dims[1] = 4; OK(p); /* ignored without scales */
        }
    }
}

/* Phase 2 by default: every index value is accepted (out of [0, D0) drops
 * the slot, repeats keep the last writer, as CANN's kernel and goldens);
 * only an expertIdx CANN would read bias out of bounds with is refused. */
static void phase2_checks(void) {
    prob p;
    int32_t out_of_range[6] = {0, 1, 2, 6, 4, 5}, negative[6] = {0, 1, -1, 3, 4, 5}, dup[6] = {5, 1, 2, 3, 1, 0};
    int32_t v3[3] = {0, 2, 2}, perm[6] = {5, 4, 3, 2, 1, 0};
    int32_t drops[6] = {-1, 7, -1, 0, -1, 3}, below[6] = {-1, 7, -2, 0, -1, 3}, above[6] = {-1, 7, 1, 8, -1, 3};
    int32_t huge[6] = {2147483647, 7, 1, 0, -1, 3}, most_neg[6] = {1, 2, 3, 0, 4, (int32_t)0x80000000};
    int32_t dup1[6] = {-1, 7, 3, 0, -1, 3};
    p = base(0, ACL_FLOAT); p.idx_vals = out_of_range; OK(p);
    p = base(0, ACL_FLOAT); p.idx_vals = negative; OK(p);
    p = base(0, ACL_FLOAT); p.idx_vals = dup; OK(p);
    p = base_noscales(0, ACL_FLOAT16); p.idx_vals = v3; OK(p);
    p = base(0, ACL_FLOAT); p.active = 2; p.t[T_X].dims[0] = p.t[T_GX].dims[0] = 2; p.idx_vals = perm; OK(p);
    p = base(0, ACL_FLOAT); p.idx_vals = most_neg; OK(p);
    int32_t *m1[] = {drops, below, above, huge, dup1};
    for (int i = 0; i < 5; i++) {
        p = base(1, i & 1 ? ACL_BF16 : ACL_FLOAT);
        p.idx_vals = m1[i];
        OK(p);
    }
    /* expertIdx in [0, bias dim0), checked only when scales and bias are given */
    int32_t e_bad[6] = {0, 1, 1, 2, 0, 1};
    p = base(0, ACL_FLOAT); p.eidx_vals = e_bad; P2(p, INVALID, "expertIdxOptional[1][1]", "2");
    int32_t e_neg[6] = {0, 1, 1, 0, -1, 1};
    p = base(1, ACL_FLOAT16); p.eidx_vals = e_neg; P2(p, INVALID, "expertIdxOptional[2][0]", "-1");
    p = base(0, ACL_FLOAT); p.t[T_B].dims[0] = 3; p.eidx_vals = e_bad; OK(p); /* 2 < 3 rows of bias */
    /* a dropped slot still reads its bias row: its expert is checked too */
    p = base(1, ACL_FLOAT); p.idx_vals = drops; p.eidx_vals = e_neg; P2(p, INVALID, "expertIdxOptional[2][0]");
    int32_t e_junk[6] = {-9, 1000, 5, -1, 77, 2};
    p = base(0, ACL_FLOAT); p.t[T_B].present = 0; p.eidx_vals = e_junk; OK(p);
    p = base(1, ACL_FLOAT); p.t[T_B].present = 0; p.eidx_vals = e_junk; OK(p);
    /* without scales bias and expertIdx are ignored, whatever their values */
    int32_t e1_bad[3] = {1, 0, 2};
    p = base_noscales(0, ACL_FLOAT);
    p.t[T_EI].present = p.t[T_B].present = 1;
    p.t[T_EI].dims[1] = 1;
    p.eidx_vals = e1_bad;
    OK(p);
}

/* MOEFR_STRICT=1: the index rules CANN documents but does not enforce. */
static void index_strict_checks(void) {
    prob p;
    int32_t out_of_range[6] = {0, 1, 2, 6, 4, 5}, negative[6] = {0, 1, -1, 3, 4, 5}, dup[6] = {5, 1, 2, 3, 1, 0};
    int32_t neg2[6] = {0, 1, -2, 3, 4, 5}, perm[6] = {5, 4, 3, 2, 1, 0}, v3[3] = {0, 2, 2};
    p = base(0, ACL_FLOAT); p.idx_vals = out_of_range; P2(p, INVALID, "expandedRowIdx[3] = 6", "[-1, 6)");
    p = base(0, ACL_FLOAT); p.idx_vals = negative; OK(p); /* -1 marks a dropped slot in both modes */
    p = base(0, ACL_FLOAT); p.idx_vals = neg2; P2(p, INVALID, "expandedRowIdx[2] = -2");
    p = base(0, ACL_FLOAT); p.idx_vals = dup; P2(p, INVALID, "expandedRowIdx[4] = 1", "repeats");
    p = base_noscales(0, ACL_FLOAT16); p.idx_vals = v3; P2(p, INVALID, "expandedRowIdx[2] = 2");
    /* with activeNum, values in [activeNum, R*K) are documented (and dropped) */
    p = base(0, ACL_FLOAT); p.active = 2; p.t[T_X].dims[0] = p.t[T_GX].dims[0] = 2; p.idx_vals = perm; OK(p);
    p = base(0, ACL_FLOAT); p.active = 2; p.t[T_X].dims[0] = p.t[T_GX].dims[0] = 2; p.idx_vals = out_of_range;
    P2(p, INVALID, "expandedRowIdx[3] = 6");
    int32_t drops[6] = {-1, 7, -1, 0, -1, 3}, below[6] = {-1, 7, -2, 0, -1, 3}, above[6] = {-1, 7, 1, 8, -1, 3};
    int32_t huge[6] = {2147483647, 7, 1, 0, -1, 3}, dup1[6] = {-1, 7, 3, 0, -1, 3};
    p = base(1, ACL_FLOAT); p.idx_vals = drops; OK(p);
    p = base(1, ACL_FLOAT); p.idx_vals = below; P2(p, INVALID, "expandedRowIdx[2] = -2", "[-1, 8)");
    p = base(1, ACL_BF16); p.idx_vals = above; P2(p, INVALID, "expandedRowIdx[3] = 8");
    p = base(1, ACL_FLOAT); p.idx_vals = huge; P2(p, INVALID, "expandedRowIdx[0] = 2147483647");
    p = base(1, ACL_FLOAT); p.idx_vals = dup1; P2(p, INVALID, "expandedRowIdx[5] = 3", "repeats");
    /* the index is checked before expertIdx */
    int32_t e_bad[6] = {0, 1, 1, 2, 0, 1};
    p = base(0, ACL_FLOAT); p.idx_vals = dup; p.eidx_vals = e_bad; P2(p, INVALID, "expandedRowIdx");
}

int main(int argc, char **argv) {
    tu_seed("test_grad_validation");
    if (argc > 1 && strcmp(argv[1], "--strict") == 0) {
        const char *soc = getenv("MOEFR_SOC");
        if (soc == NULL || strcmp(soc, "ascend910b") != 0) TU_FAIL("--strict needs MOEFR_SOC=ascend910b");
        strict_checks();
        printf("test_grad_validation --strict: %d checks passed\n", g_checks);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--index-strict") == 0) {
        const char *v = getenv("MOEFR_STRICT");
        if (v == NULL || strcmp(v, "1") != 0) TU_FAIL("--index-strict needs MOEFR_STRICT=1");
        index_strict_checks();
        printf("test_grad_validation --index-strict: %d checks passed\n", g_checks);
        return 0;
    }
    phase1_checks();
    phase2_checks();
    printf("test_grad_validation: %d checks passed\n", g_checks);
    return 0;
}
