/* fuzz_grad_plan.c - libFuzzer target (a): aclCreateTensor and phase 1 of the grad
 * operator on random descriptors over bounded buffers, phase 2 whenever phase 1 accepts. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "fuzz_util.h"

/* Tensors whose storage would exceed this are still described (phase 1 never
 * reads data) but phase 2 is skipped: their data pointer is a dummy. */
#define FZ_MAX_STORAGE_BYTES 16384
#define FZ_MAX_WORKSPACE (1u << 20)

enum { T_GY, T_IDX, T_X, T_SC, T_EI, T_B, T_GX, T_GS, T_N };

typedef struct {
    aclTensor *t;
    void *data;       /* malloc'd exactly storage bytes (ASan sees any overrun) */
    size_t bytes;
    int dtype;
    bool real;        /* data is a real allocation of the full storage */
} fz_tensor;

static const int k_dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_INT64, ACL_INT8,
                               ACL_DOUBLE, ACL_UINT8, ACL_BOOL, ACL_STRING, ACL_DT_UNDEFINED, 5, 14, 99, -7};
static const int k_formats[] = {ACL_FORMAT_ND, ACL_FORMAT_ND, ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_NHWC,
                                ACL_FORMAT_UNDEFINED, 1000, -100};

static size_t elem_size(int dt) {
    switch (dt) {
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;
    }
}
static bool format_known(int f) { return f == ACL_FORMAT_ND || f == ACL_FORMAT_NCHW || f == ACL_FORMAT_NHWC; }

typedef __int128 i128;
static const i128 k_i64max = (i128)INT64_MAX;

/* Product of n values in 128 bits, saturating at 2^100 (enough to tell overflow). */
static i128 sat_prod(const int64_t *d, uint64_t n, bool *partial_overflow) {
    i128 p = 1;
    bool over = false;
    for (uint64_t i = 0; i < n; i++) {
        if (d[i] < 0) { p = 0; continue; } /* only reached for sizing storage; negatives are rejected earlier */
        if (d[i] > 0 && p > (((i128)1 << 100) / d[i])) p = (i128)1 << 100;
        else p *= d[i];
        if (p > k_i64max) over = true;
    }
    *partial_overflow = over;
    return p;
}

/* |v| <= 2^126 here; clamping to 2^100 keeps sums of eight such terms exact in sign and range. */
static i128 clamp100(i128 v) {
    const i128 c = (i128)1 << 100;
    return v > c ? c : v < -c ? -c : v;
}

static int fz_pick_dtype(fz_in *in, int good) {
    uint8_t s = fz_u8(in);
    if (s < 200) return good;
    return k_dtypes[s % (sizeof k_dtypes / sizeof k_dtypes[0])];
}

/* Builds one random descriptor and checks aclCreateTensor against an
 * independent model of SPEC section 3 (128-bit arithmetic). */
static void make_tensor(fz_in *in, fz_tensor *ft, int good_dtype, int good_ndim) {
    memset(ft, 0, sizeof *ft);
    uint8_t shape = fz_u8(in);
    uint64_t nd = shape < 230 ? (uint64_t)good_ndim : (uint64_t)(fz_u8(in) % 11);
    if (shape == 255) nd = (uint64_t)fz_u64(in);
    int64_t dims[16] = {0}, strides[16] = {0}, sdims[16] = {0};
    uint64_t nd_fill = nd < 10 ? nd : 10;
    for (uint64_t i = 0; i < nd_fill; i++) dims[i] = fz_i64(in, 0, 6);
    int dtype = fz_pick_dtype(in, good_dtype);
    int format = fz_u8(in) < 240 ? ACL_FORMAT_ND : k_formats[fz_u8(in) % (sizeof k_formats / sizeof k_formats[0])];
    uint8_t smode = fz_u8(in);
    bool null_strides = smode < 120;
    if (!null_strides) {
        /* Row-major strides, with some replaced by random (possibly negative or huge) ones. */
        int64_t s = 1;
        for (uint64_t i = nd_fill; i-- > 0;) {
            strides[i] = s;
            if (dims[i] > 0 && dims[i] < 1000000 && s < ((int64_t)1 << 40)) s *= dims[i];
        }
        for (uint64_t i = 0; i < nd_fill; i++)
            if (fz_u8(in) >= 180) strides[i] = fz_i64(in, -8, 12);
    }
    int64_t offset = fz_u8(in) < 170 ? 0 : fz_i64(in, -2, 16);
    /* Storage: the view's extent plus slack (or a random shape). */
    uint64_t snd = 1;
    uint8_t stm = fz_u8(in);
    if (stm < 200) {
        i128 hi = offset;
        for (uint64_t i = 0; i < nd_fill; i++) {
            int64_t st = null_strides ? 1 : strides[i];
            if (dims[i] > 0 && st > 0) hi += clamp100((i128)(dims[i] - 1) * st);
        }
        int64_t slack = fz_range(in, -2, 3);
        i128 want = hi + 1 + slack;
        if (null_strides) {
            bool o;
            want = sat_prod(dims, nd_fill, &o) + offset + slack;
        }
        if (want < 0) want = 0;
        if (want > k_i64max) want = k_i64max;
        sdims[0] = (int64_t)want;
    } else {
        snd = fz_u8(in) % 10;
        if (stm == 255) snd = fz_u64(in);
        for (uint64_t i = 0; i < (snd < 10 ? snd : 10); i++) sdims[i] = fz_i64(in, 0, 8);
    }
    bool null_dims = fz_u8(in) >= 252;
    bool null_sdims = fz_u8(in) >= 252;

    /* Independent verdict. */
    size_t es = elem_size(dtype);
    bool must_reject = false, may_accept_only_if_ambiguous = false;
    if (es == 0 || !format_known(format) || nd > 8 || snd > 8) must_reject = true;
    if ((null_dims && nd > 0) || (null_sdims && snd > 0)) must_reject = true;
    if (offset < 0) must_reject = true;
    i128 numel = 0, storage = 0;
    if (!must_reject) {
        for (uint64_t i = 0; i < nd; i++) if (dims[i] < 0) must_reject = true;
        for (uint64_t i = 0; i < snd; i++) if (sdims[i] < 0) must_reject = true;
        /* A stride whose size in bytes overflows int64 (SPEC: huge strides whose products overflow). */
        for (uint64_t i = 0; i < nd && !null_strides && !null_dims; i++)
            if ((i128)strides[i] * (i128)es > k_i64max || (i128)strides[i] * (i128)es < -k_i64max - 1) must_reject = true;
    }
    if (!must_reject) {
        bool po, spo;
        numel = sat_prod(dims, nd, &po);
        storage = null_sdims ? 1 : sat_prod(sdims, snd, &spo);
        if (null_sdims) spo = false;
        if (numel > k_i64max || storage * (i128)es > k_i64max) must_reject = true;
        else if (po || spo) may_accept_only_if_ambiguous = true; /* zero product after an overflowing prefix */
    }
    bool must_accept = false;
    if (!must_reject && !may_accept_only_if_ambiguous) {
        if (numel == 0) {
            may_accept_only_if_ambiguous = true; /* empty view: offset checks are the library's choice */
        } else {
            i128 lo = offset, hi = offset;
            int64_t rm = 1;
            for (uint64_t i = nd; i-- > 0;) {
                int64_t st = null_strides ? rm : strides[i];
                i128 reach = clamp100((i128)(dims[i] - 1) * st);
                if (reach < 0) lo += reach; else hi += reach;
                if (dims[i] > 0) rm *= dims[i];
            }
            if (lo < 0 || hi >= storage) must_reject = true;
            else must_accept = true;
        }
    }

    ft->bytes = 0;
    ft->dtype = dtype;
    if (!must_reject && es > 0 && storage * (i128)es <= FZ_MAX_STORAGE_BYTES) {
        ft->bytes = (size_t)(storage * (i128)es);
        ft->data = malloc(ft->bytes ? ft->bytes : 1);
        ft->real = true;
        for (size_t i = 0; i < ft->bytes; i++) ((uint8_t *)ft->data)[i] = fz_u8(in);
    } else {
        ft->data = (void *)(uintptr_t)0x1000; /* never dereferenced: phase 2 is skipped */
    }
    ft->t = aclCreateTensor(null_dims ? NULL : dims, nd, (aclDataType)dtype, null_strides ? NULL : strides, offset,
                            (aclFormat)format, null_sdims ? NULL : sdims, snd, ft->data);
    if (ft->t == NULL) {
        FZ_REQUIRE(!must_accept, "aclCreateTensor rejected a valid descriptor (nd=%llu dtype=%d)",
                   (unsigned long long)nd, dtype);
        FZ_REQUIRE(fz_msg_ok(), "aclCreateTensor failed without a one-line message");
    } else {
        FZ_REQUIRE(!must_reject, "aclCreateTensor accepted an invalid descriptor (nd=%llu dtype=%d fmt=%d off=%lld)",
                   (unsigned long long)nd, dtype, format, (long long)offset);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    setenv("MOEFR_NUM_THREADS", "1", 0);
    aclInit(NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size};
    static const int ndims[T_N] = {2, 1, 2, 2, 2, 2, 2, 2};
    int fdt = (int[]){ACL_FLOAT, ACL_FLOAT16, ACL_BF16}[fz_u8(&in) % 3];
    int sdt = fz_u8(&in) < 200 ? fdt : (int[]){ACL_FLOAT, ACL_FLOAT16, ACL_BF16}[fz_u8(&in) % 3];
    fz_tensor ts[T_N];
    uint8_t present = fz_u8(&in);
    for (int i = 0; i < T_N; i++) {
        bool optional = i == T_X || i == T_SC || i == T_EI || i == T_B;
        bool required_null = !optional && (present & 0x80) && (fz_u8(&in) % T_N) == i;
        if ((optional && !(present & (1u << i))) || required_null) {
            memset(&ts[i], 0, sizeof ts[i]);
            continue;
        }
        int good = (i == T_IDX || i == T_EI) ? ACL_INT32 : (i == T_SC || i == T_GS) ? sdt : fdt;
        int nd = ndims[i];
        if ((i == T_X || i == T_GX) && (present & 0x40)) nd = 3;
        make_tensor(&in, &ts[i], good, nd);
    }
    int64_t mode = fz_u8(&in) < 240 ? (int64_t)(fz_u8(&in) & 1) : fz_i64(&in, -2, 3);
    int64_t active = fz_i64(&in, -1, 40);
    int64_t enm = fz_i64(&in, -1, 8);
    int64_t cap = fz_i64(&in, -1, 8);
    uint8_t flags = fz_u8(&in);
    uint64_t ws = 0xdeadbeefu;
    aclOpExecutor *ex = NULL;
    aclnnStatus st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
        ts[T_GY].t, ts[T_IDX].t, ts[T_X].t, ts[T_SC].t, ts[T_EI].t, ts[T_B].t, mode, active, enm, cap, ts[T_GX].t,
        ts[T_GS].t, (flags & 1) ? NULL : &ws, (flags & 2) ? NULL : &ex);
    if ((flags & 3) != 0) FZ_REQUIRE(st == ACLNN_ERR_PARAM_NULLPTR, "NULL workspaceSize/executor gave %d", st);
    if (st != ACLNN_SUCCESS) {
        FZ_REQUIRE(fz_msg_ok(), "phase 1 failed (%d) without a one-line message", st);
        FZ_REQUIRE(st == ACLNN_ERR_PARAM_NULLPTR || st == ACLNN_ERR_PARAM_INVALID ||
                       st == ACLNN_ERR_INNER_TILING_ERROR,
                   "phase 1 returned an unexpected status %d", st);
    } else {
        FZ_REQUIRE(ex != NULL, "phase 1 succeeded without an executor");
        bool all_real = true;
        const int used[] = {T_GY, T_IDX, T_X, T_SC, T_EI, T_B, T_GX, T_GS};
        for (int k = 0; k < T_N; k++) if (ts[used[k]].t && !ts[used[k]].real) all_real = false;
        if (all_real && ws <= FZ_MAX_WORKSPACE && !(flags & 4)) {
            void *w = ws ? malloc(ws) : NULL;
            /* Snapshots of the outputs: a failing phase 2 must leave them untouched. */
            size_t nx = ts[T_GX].bytes, ns = ts[T_GS].bytes;
            uint8_t *sx = malloc(nx + 1), *ss = malloc(ns + 1);
            memcpy(sx, ts[T_GX].data, nx);
            memcpy(ss, ts[T_GS].data, ns);
            aclnnStatus s2 = aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
            if (s2 != ACLNN_SUCCESS) {
                FZ_REQUIRE(fz_msg_ok(), "phase 2 failed (%d) without a one-line message", s2);
                FZ_REQUIRE(s2 == ACLNN_ERR_PARAM_INVALID, "phase 2 returned %d", s2);
                FZ_REQUIRE(memcmp(sx, ts[T_GX].data, nx) == 0 && memcmp(ss, ts[T_GS].data, ns) == 0,
                           "a failing phase 2 wrote an output");
            }
            /* The executor is spent either way. */
            FZ_REQUIRE(aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL) == ACLNN_ERR_PARAM_INVALID,
                       "a spent executor ran again");
            free(sx);
            free(ss);
            free(w);
        } else if (flags & 8) {
            /* A NULL workspace of non-zero size is CANN's 161001 (and spends the executor). */
            if (ws > 0) {
                FZ_REQUIRE(aclnnMoeFinalizeRoutingV2Grad(NULL, ws, ex, NULL) == ACLNN_ERR_PARAM_NULLPTR,
                           "NULL workspace of size %llu accepted", (unsigned long long)ws);
                FZ_REQUIRE(fz_msg_ok(), "NULL workspace refused without a message");
            } else {
                FZ_REQUIRE(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroying an unused executor failed");
            }
        } else {
            FZ_REQUIRE(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroying an unused executor failed");
            FZ_REQUIRE(aclDestroyAclOpExecutor(ex) == ACLNN_ERR_PARAM_INVALID, "destroyed an executor twice");
        }
    }
    for (int i = 0; i < T_N; i++) {
        if (ts[i].t) FZ_REQUIRE(aclDestroyTensor(ts[i].t) == ACLNN_SUCCESS, "aclDestroyTensor failed");
        if (ts[i].real) free(ts[i].data);
    }
    return 0;
}
