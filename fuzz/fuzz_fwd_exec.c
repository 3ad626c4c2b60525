/* fuzz_fwd_exec.c - libFuzzer target (d): small well-formed forward problems
 * (aclnnMoeFinalizeRoutingV2, dropPadMode 0-3) with random contents and index
 * data, checked against a float64 reference written here, on success and on failure. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "fuzz_num.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    setenv("MOEFR_NUM_THREADS", "2", 0); /* the pool's split of tokens runs under ASan too */
    aclInit(NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size};
    const uint8_t cfg = fz_u8(&in);
    const int mode = cfg & 3;
    const bool drop_pad = mode == 1 || mode == 3, has_scales = (cfg & 4) != 0, has_bias = (cfg & 8) != 0;
    const int nx = (cfg >> 4) % 3; /* x1, x1 + x2, or neither */
    const int dt = fz_u8(&in) % 3;
    /* scales: the data dtype, or (as Ascend 950 allows by default) another */
    const int sdt = has_scales && (fz_u8(&in) & 3) == 0 ? fz_u8(&in) % 3 : dt;
    const int64_t R = fz_range(&in, 0, 6), K = has_scales ? fz_range(&in, 1, 5) : 1, H = fz_range(&in, 0, 70);
    /* CANN's tiling wants bias rows >= K */
    const int64_t E = fz_range(&in, has_bias ? K : 1, has_bias ? K + 3 : 4), C = fz_range(&in, 1, 5), RK = R * K;
    const int64_t D0 = drop_pad ? E * C : RK;                /* expandedX rows */
    const int64_t EB = drop_pad ? E : fz_range(&in, K, K + 4); /* bias rows */
    const int64_t pad_x = (cfg & 0x40) ? fz_range(&in, 0, 3) : 0, pad_1 = (cfg & 0x80) ? fz_range(&in, 0, 3) : 0;

    /* Index data: a permutation in the mode's layout, or drop-pad rows with
     * repeats (a row read twice is fine), then a few random corruptions. */
    int32_t *idx = malloc((size_t)(RK ? RK : 1) * 4), *eidx = malloc((size_t)(RK ? RK : 1) * 4);
    if (!drop_pad) {
        for (int64_t i = 0; i < RK; i++) idx[i] = (int32_t)i;
        for (int64_t i = RK - 1; i > 0; i--) {
            int64_t j = fz_range(&in, 0, i);
            int32_t t = idx[i];
            idx[i] = idx[j], idx[j] = t;
        }
    } else {
        for (int64_t i = 0; i < RK; i++) {
            idx[i] = (int32_t)fz_range(&in, -1, D0 - 1);
        }
    }
    for (int64_t i = 0; i < RK; i++) eidx[i] = (int32_t)fz_range(&in, 0, EB - 1);
    const int corrupt = fz_u8(&in) >= 200 ? fz_u8(&in) % 3 + 1 : 0;
    for (int c = 0; c < corrupt && RK > 0; c++) {
        int64_t at = fz_range(&in, 0, RK - 1);
        int32_t v = (int32_t)fz_i64(&in, -3, D0 + 3);
        if (fz_u8(&in) & 1) idx[at] = v;
        else eidx[at] = v;
    }
    /* The phase-2 verdict by the SPEC's rules (section 8): values CANN would
     * read out of bounds with are refused, repeats are not; an empty out
     * succeeds before anything is looked at. */
    /* Dropped slots: -1 in drop-pad modes, values past expandedX's rows in
     * modes 0/2 (Ascend 950's rules, the default); their expert is not read. */
    bool valid = true;
    for (int64_t i = 0; i < RK && valid; i++) {
        const int32_t d = idx[i];
        if (drop_pad ? (d < -1 || d >= D0) : d < 0) valid = false;
    }
    for (int64_t r = 0; r < R && valid; r++)
        for (int64_t k = 0; k < K; k++) {
            const int32_t d = mode >= 2 ? idx[r * K + k] : idx[k * R + r];
            if (has_bias && d >= 0 && d < D0 && (eidx[r * K + k] < 0 || eidx[r * K + k] >= EB)) valid = false;
        }
    if (R * H == 0) valid = true;

    const size_t es = dsize(dt), ses = dsize(sdt);
    fz_t x = {0}, ti = {0}, x1 = {0}, x2 = {0}, b = {0}, sc = {0}, ei = {0}, out = {0};
    if (drop_pad) make(&x, k_acl_dt[dt], es, 3, (int64_t[]){E, C, H}, H + pad_x);
    else make(&x, k_acl_dt[dt], es, 2, (int64_t[]){D0, H}, H + pad_x);
    make(&ti, ACL_INT32, 4, 1, (int64_t[]){RK}, 1);
    memcpy(ti.data, idx, (size_t)RK * 4);
    if (nx >= 1) make(&x1, k_acl_dt[dt], es, 2, (int64_t[]){R, H}, H + pad_1);
    if (nx >= 2) make(&x2, k_acl_dt[dt], es, 2, (int64_t[]){R, H}, H);
    if (has_bias) {
        make(&b, k_acl_dt[dt], es, 2, (int64_t[]){EB, H}, H);
        make(&ei, ACL_INT32, 4, 2, (int64_t[]){R, K}, K);
        memcpy(ei.data, eidx, (size_t)RK * 4);
    }
    if (has_scales) make(&sc, k_acl_dt[sdt], ses, 2, (int64_t[]){R, K}, K);
    make(&out, k_acl_dt[dt], es, 2, (int64_t[]){R, H}, H);
    /* Contents (padding included), then poison in the output. */
    fz_t *ins[] = {&x, &x1, &x2, &b, &sc};
    const int ins_dt[] = {dt, dt, dt, dt, sdt};
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; ins[k]->t && i < ins[k]->bytes / dsize(ins_dt[k]); i++)
            store(ins_dt[k], ins[k]->data, (int64_t)i, random_value(&in, ins_dt[k]));
    for (size_t i = 0; i < out.bytes; i++) ((uint8_t *)out.data)[i] = (uint8_t)(0xC3 ^ i);
    uint8_t *snap = malloc(out.bytes + 1);
    memcpy(snap, out.data, out.bytes);

    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(x.t, ti.t, x1.t, x2.t, b.t, sc.t, ei.t, mode, out.t,
                                                               &ws, &ex);
    FZ_REQUIRE(st == ACLNN_SUCCESS, "phase 1 refused a well-formed problem: mode %d R %lld K %lld H %lld", mode,
               (long long)R, (long long)K, (long long)H);
    const uint8_t how = fz_u8(&in);
    const bool repeat = (how & 3) == 1, short_ws = (how & 3) == 2 && ws > 0;
    if (repeat) FZ_REQUIRE(aclSetAclOpExecutorRepeatable(ex) == ACLNN_SUCCESS, "repeatable refused");
    void *w = ws ? malloc(ws) : NULL;
    for (int run = 0; run < (repeat ? 2 : 1); run++) {
        const aclnnStatus s2 = aclnnMoeFinalizeRoutingV2(w, short_ws ? ws - 1 : ws, ex, NULL);
        if (!valid || short_ws) {
            FZ_REQUIRE(s2 == ACLNN_ERR_PARAM_INVALID, "phase 2 accepted invalid index data or workspace: %d", s2);
            FZ_REQUIRE(fz_msg_ok(), "phase 2 failed without a one-line message");
            FZ_REQUIRE(memcmp(snap, out.data, out.bytes) == 0, "a failing phase 2 wrote out");
            continue;
        }
        FZ_REQUIRE(s2 == ACLNN_SUCCESS, "phase 2 refused valid data: %d", s2);
        /* out, bit for bit: acc = x1 + x2, then each present slot term s * (x_d + b_e)
         * in slot order, all in float64, one rounding. Absent inputs are absent
         * terms (a dropped slot has none, bias included); no term at all gives +0.0. */
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < H; j++) {
                double acc = 0;
                bool have = false;
                if (nx >= 1) {
                    acc = decode(dt, load(dt, x1.data, r * (H + pad_1) + j)), have = true;
                    if (nx >= 2) acc = acc + decode(dt, load(dt, x2.data, r * H + j));
                }
                for (int64_t k = 0; k < K; k++) {
                    const int64_t d = mode >= 2 ? idx[r * K + k] : idx[k * R + r];
                    if (d < 0 || d >= D0) continue;
                    double t;
                    /* mode 1/3 rows (E, C, H) with padded rows: row d at d * (H + pad_x) */
                    const double xv = d >= 0 ? decode(dt, load(dt, x.data, d * (H + pad_x) + j)) : 0;
                    const double bv = has_bias ? decode(dt, load(dt, b.data, eidx[r * K + k] * H + j)) : 0;
                    if (d >= 0 && has_bias) t = xv + bv;
                    else t = d >= 0 ? xv : bv;
                    const double s = has_scales ? decode(sdt, load(sdt, sc.data, r * K + k)) : 1.0;
                    t = s * t;
                    acc = have ? acc + t : t;
                    have = true;
                }
                const uint32_t want = encode(dt, round_dt(dt, have ? acc : 0.0)), got = load(dt, out.data, r * H + j);
                FZ_REQUIRE(got == want, "out[%lld][%lld] = 0x%x, want 0x%x (mode %d, K %lld, H %lld, run %d)",
                           (long long)r, (long long)j, got, want, mode, (long long)K, (long long)H, run);
            }
        memcpy(out.data, snap, out.bytes); /* the next repeat must reproduce the bits from fresh poison */
    }
    const aclnnStatus s3 = aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL);
    if (repeat) {
        FZ_REQUIRE(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroying a repeatable executor failed");
        (void)s3;
    } else {
        FZ_REQUIRE(s3 == ACLNN_ERR_PARAM_INVALID, "a spent executor ran again: %d", s3);
    }
    free(w);
    free(snap);
    free(idx);
    free(eidx);
    fz_t *all[] = {&x, &ti, &x1, &x2, &b, &sc, &ei, &out};
    for (int k = 0; k < 8; k++) drop(all[k]);
    return 0;
}
