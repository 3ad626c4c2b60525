/* fuzz_grad_exec.c - libFuzzer target (b): small well-formed grad problems with random
 * contents and index data, checked against a float64 reference written here, on success and on failure. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "fuzz_num.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    /* Two workers: the pool's split of tokens and drop-pad rows runs under ASan too. */
    setenv("MOEFR_NUM_THREADS", "2", 0);
    aclInit(NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size};
    uint8_t cfg = fz_u8(&in);
    int mode = cfg & 1;
    bool has_scales = (cfg & 2) != 0, has_bias = has_scales && (cfg & 4) != 0;
    bool bias_no_scales = !has_scales && (cfg & 0x40); /* bias + expertIdx without scales */
    if (bias_no_scales) has_bias = true;
    int dt = fz_u8(&in) % 3;
    int sdt = (fz_u8(&in) & 3) == 0 ? fz_u8(&in) % 3 : dt;
    if (!has_scales) sdt = dt;
    int64_t R = fz_range(&in, 0, 6), K = has_scales ? fz_range(&in, 1, 4) : 1, H = fz_range(&in, 0, 40);
    int64_t E = fz_range(&in, 1, 4), C = fz_range(&in, 1, 5);
    int64_t RK = R * K;
    int64_t active = 0;
    if (mode == 0 && (cfg & 8)) active = fz_range(&in, 0, RK + 1);
    int64_t D0 = mode == 1 ? E * C : (active > 0 && active < RK) ? active : RK;
    int64_t EB = mode == 1 ? E : fz_range(&in, 1, 5); /* bias rows */
    int64_t pad_gy = (cfg & 16) ? fz_range(&in, 0, 3) : 0, pad_x = (cfg & 32) ? fz_range(&in, 0, 3) : 0;

    /* Index data: a permutation or drop-pad rows (repeats allowed, as in
     * CANN's system tests), then a few random corruptions. */
    int32_t *idx = malloc((size_t)(RK ? RK : 1) * 4), *eidx = malloc((size_t)(RK ? RK : 1) * 4);
    if (mode == 0) {
        for (int64_t i = 0; i < RK; i++) idx[i] = (int32_t)i;
        for (int64_t i = RK - 1; i > 0; i--) { /* Fisher-Yates from the input bytes */
            int64_t j = fz_range(&in, 0, i);
            int32_t tmp = idx[i]; idx[i] = idx[j]; idx[j] = tmp;
        }
    } else {
        for (int64_t i = 0; i < RK; i++) idx[i] = -1;
        int64_t slots = E * C;
        for (int64_t i = 0; i < RK; i++) {
            idx[i] = (int32_t)fz_range(&in, -1, slots - 1);
        }
    }
    for (int64_t i = 0; i < RK; i++) eidx[i] = (int32_t)fz_range(&in, 0, EB - 1);
    int corrupt = fz_u8(&in) >= 200 ? fz_u8(&in) % 3 + 1 : 0;
    for (int c = 0; c < corrupt && RK > 0; c++) {
        int64_t at = fz_range(&in, 0, RK - 1);
        int32_t v = (int32_t)fz_i64(&in, -3, (int64_t)(D0 + 3));
        if (fz_u8(&in) & 1) idx[at] = v; else eidx[at] = v;
    }
    /* Expected phase-2 verdict by the SPEC's rules: any index value is fine
     * (outside [0, D0) drops the slot); an expert index outside the bias rows
     * is refused when scales and bias are both given (else bias is ignored). */
    bool valid = true;
    for (int64_t i = 0; i < RK && valid; i++)
        if (has_scales && has_bias && (eidx[i] < 0 || eidx[i] >= EB)) valid = false;

    size_t es = dsize(dt), ses = dsize(sdt);
    fz_t gy = {0}, ti = {0}, x = {0}, sc = {0}, ei = {0}, b = {0}, gx = {0}, gs = {0};
    make(&gy, k_acl_dt[dt], es, 2, (int64_t[]){R, H}, H + pad_gy);
    make(&ti, ACL_INT32, 4, 1, (int64_t[]){RK}, 1);
    memcpy(ti.data, idx, (size_t)RK * 4);
    int64_t xdims3[3] = {E, C, H}, xdims2[2] = {D0, H};
    bool three = mode == 1; /* mode 1 tensors are (E, C, H) */
    if (has_scales || (fz_u8(&in) & 1)) {
        if (three) make(&x, k_acl_dt[dt], es, 3, xdims3, H + pad_x);
        else make(&x, k_acl_dt[dt], es, 2, xdims2, H + pad_x);
    }
    if (has_scales) make(&sc, k_acl_dt[sdt], ses, 2, (int64_t[]){R, K}, K);
    if (has_bias) {
        make(&ei, ACL_INT32, 4, 2, (int64_t[]){R, K}, K);
        memcpy(ei.data, eidx, (size_t)RK * 4);
        make(&b, k_acl_dt[dt], es, 2, (int64_t[]){EB, H}, H);
    }
    if (three) make(&gx, k_acl_dt[dt], es, 3, xdims3, H);
    else make(&gx, k_acl_dt[dt], es, 2, xdims2, H);
    make(&gs, k_acl_dt[sdt], ses, 2, (int64_t[]){R, K}, K);
    /* Contents (padding included), then random poison in the outputs. */
    fz_t *ins[] = {&gy, &x, &sc, &b};
    int ins_dt[] = {dt, dt, sdt, dt};
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; ins[k]->t && i < ins[k]->bytes / dsize(ins_dt[k]); i++)
            store(ins_dt[k], ins[k]->data, (int64_t)i, random_value(&in, ins_dt[k]));
    for (size_t i = 0; i < gx.bytes; i++) ((uint8_t *)gx.data)[i] = (uint8_t)(0xA5 ^ i);
    for (size_t i = 0; i < gs.bytes; i++) ((uint8_t *)gs.data)[i] = (uint8_t)(0x5A ^ i);
    uint8_t *snap_gx = malloc(gx.bytes + 1), *snap_gs = malloc(gs.bytes + 1);
    memcpy(snap_gx, gx.data, gx.bytes);
    memcpy(snap_gs, gs.data, gs.bytes);

    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
        gy.t, ti.t, x.t, sc.t, ei.t, b.t, mode, active, mode == 1 ? E : fz_range(&in, 0, 9), mode == 1 ? C : 0,
        gx.t, gs.t, &ws, &ex);
    FZ_REQUIRE(st == ACLNN_SUCCESS, "phase 1 refused a well-formed problem: mode %d R %lld K %lld H %lld", mode,
               (long long)R, (long long)K, (long long)H);
    uint8_t how = fz_u8(&in);
    bool repeat = (how & 3) == 1;
    bool short_ws = (how & 3) == 2 && ws > 0;
    if (repeat) FZ_REQUIRE(aclSetAclOpExecutorRepeatable(ex) == ACLNN_SUCCESS, "repeatable refused");
    void *w = ws ? malloc(ws) : NULL;
    for (int run = 0; run < (repeat ? 2 : 1); run++) {
        aclnnStatus s2 = aclnnMoeFinalizeRoutingV2Grad(w, short_ws ? ws - 1 : ws, ex, NULL);
        bool expect_ok = valid && !short_ws;
        if (!expect_ok) {
            FZ_REQUIRE(s2 == ACLNN_ERR_PARAM_INVALID, "phase 2 accepted invalid index data or workspace: %d", s2);
            FZ_REQUIRE(fz_msg_ok(), "phase 2 failed without a one-line message");
            FZ_REQUIRE(memcmp(snap_gx, gx.data, gx.bytes) == 0 && memcmp(snap_gs, gs.data, gs.bytes) == 0,
                       "a failing phase 2 wrote an output");
            continue;
        }
        FZ_REQUIRE(s2 == ACLNN_SUCCESS, "phase 2 refused valid data: %d", s2);
        /* gradExpandedX, bit for bit: each row holds its last writer. */
        bool *named = calloc((size_t)(D0 ? D0 : 1), 1);
        for (int64_t i = 0; i < RK; i++) {
            int64_t r = i / K, d = idx[i];
            if (d < 0 || d >= D0) continue;
            bool later = false;
            for (int64_t k = i + 1; k < RK && !later; k++) later = idx[k] == d;
            if (later) continue;
            named[d] = true;
            for (int64_t j = 0; j < H; j++) {
                uint32_t g = load(dt, gy.data, r * (H + pad_gy) + j), want = g;
                if (has_scales) {
                    float p = (float)decode(dt, g) * (float)decode(sdt, load(sdt, sc.data, i));
                    want = encode(dt, round_dt(dt, (double)p));
                }
                uint32_t got = load(dt, gx.data, d * H + j);
                FZ_REQUIRE(got == want, "gradExpandedX[%lld][%lld] = 0x%x, want 0x%x", (long long)d, (long long)j,
                           got, want);
            }
        }
        for (int64_t d = 0; d < D0; d++) {
            if (named[d]) continue;
            for (int64_t j = 0; j < H; j++) {
                uint32_t got = load(dt, gx.data, d * H + j);
                /* rows nobody names are +0.0 in both modes */
                FZ_REQUIRE(got == 0, "unnamed row %lld not +0.0 (run %d, mode %d R %lld K %lld H %lld E %lld C %lld, got 0x%x)",
                           (long long)d, run, mode, (long long)R, (long long)K, (long long)H, (long long)E, (long long)C, got);
            }
        }
        free(named);
        /* gradScales within the SPEC bound: got in [RN(exact - tol), RN(exact + tol)]. */
        for (int64_t i = 0; i < RK; i++) {
            uint32_t got = load(sdt, gs.data, i);
            if (!has_scales) {
                FZ_REQUIRE(got == load(sdt, snap_gs, i), "gradScales written without scales");
                continue;
            }
            int64_t r = i / K, d = idx[i];
            bool kept = d >= 0 && d < D0;
            long double exact = 0, mag = 0;
            for (int64_t j = 0; j < H; j++) {
                double xv = 0;
                if (kept) {
                    int64_t xrow = three ? (d / C) * C * (H + pad_x) + (d % C) * (H + pad_x) : d * (H + pad_x);
                    xv = decode(dt, load(dt, x.data, xrow + j));
                }
                if (has_bias) xv += decode(dt, load(dt, b.data, eidx[i] * H + j));
                double g = decode(dt, load(dt, gy.data, r * (H + pad_gy) + j));
                exact += (long double)xv * g;
                mag += fabsl((long double)xv * g);
            }
            long double tol = 1e-6L * mag; /* SPEC 4 */
            double lo = round_dt(sdt, (double)(exact - tol)), hi = round_dt(sdt, (double)(exact + tol));
            double g = decode(sdt, got);
            FZ_REQUIRE(g >= lo && g <= hi, "gradScales[%lld] = %.17g outside [%.17g, %.17g] (exact %.17Lg)",
                       (long long)i, g, lo, hi, exact);
        }
        /* The next repeat must reproduce the same bits from fresh poison. */
        memcpy(gx.data, snap_gx, gx.bytes);
        memcpy(gs.data, snap_gs, gs.bytes);
    }
    aclnnStatus s3 = aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
    if (repeat) {
        FZ_REQUIRE(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroying a repeatable executor failed");
        FZ_REQUIRE(aclDestroyAclOpExecutor(ex) == ACLNN_ERR_PARAM_INVALID, "destroyed twice");
        (void)s3;
    } else {
        FZ_REQUIRE(s3 == ACLNN_ERR_PARAM_INVALID, "a spent executor ran again: %d", s3);
    }
    free(w);
    free(snap_gx);
    free(snap_gs);
    free(idx);
    free(eidx);
    fz_t *all[] = {&gy, &ti, &x, &sc, &ei, &b, &gx, &gs};
    for (int k = 0; k < 8; k++) drop(all[k]);
    return 0;
}
