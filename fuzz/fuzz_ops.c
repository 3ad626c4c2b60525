/* fuzz_ops.c - one libFuzzer target for every registered operator, driven
 * from the operator registry (src/ops/opdef.h, mf_op_entries()): a new
 * operator with an entry is fuzzed without a new file.
 *
 * Input: byte 0 picks the operator (MOEFR_FUZZ_OP=<aclnn name> pins one),
 * byte 1 the scenario, the rest the choices; tensor contents come from a
 * generator seeded by 8 input bytes.
 *   - hostile descriptors (every operator, from the table alone): random
 *     presence, dtypes (mostly a column of the dtype table), ranks, dims,
 *     strides and offsets, attributes in and around their ranges, NULL
 *     out-pointers; phase 2 on hostile contents (random index values,
 *     NaN/Inf/subnormal data) whenever phase 1 accepts with real storage;
 *   - a valid small problem (the operator's row in ROWS below: shapes from
 *     bytes and the oracle), inputs strided or not; with clean data phase 1
 *     and phase 2 must succeed and the outputs equal the oracle's; with
 *     corrupted index values or NaN/Inf data only the guarantees below.
 * Checked everywhere (abort on violation): every refusal is one of CANN's
 * status codes with one non-empty line in aclGetRecentErrMsg; a refusal
 * (phase 1 or 2, incl. a workspace one byte short) leaves every output
 * byte-identical; a spent executor is refused, not run; a repeatable executor
 * reproduces its bits, also after its inputs and outputs are moved with
 * aclSetInputTensorAddr / aclSetOutputTensorAddr / aclSetTensorAddr and the
 * old storage is scribbled over; destroying twice is refused; and, in the
 * sanitizer build, no out-of-bounds access or UB anywhere. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "fwd_ref.h"
#include "oracles.h"
#include "ref.h"
#include "ops/opdef.h"

#define NT MF_EXEC_SLOTS
#define MAXND 8
#define MAX_STORAGE_BYTES (1u << 20)

/* ---- a small generator for tensor contents, seeded from the input ---- */
typedef struct {
    uint64_t s;
} rng;
static uint64_t rnext(rng *r) {
    r->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = r->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t rrange(rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(rnext(r) % (uint64_t)(hi - lo + 1)); }

static bool is_cann_code(aclnnStatus rc) {
    switch (rc) {
    case ACLNN_ERR_PARAM_NULLPTR: case ACLNN_ERR_PARAM_INVALID: case ACLNN_ERR_RUNTIME_ERROR: case ACLNN_ERR_INNER:
    case ACLNN_ERR_INNER_INFERSHAPE_ERROR: case ACLNN_ERR_INNER_TILING_ERROR: case ACLNN_ERR_INNER_FIND_KERNEL_ERROR:
    case ACLNN_ERR_INNER_CREATE_EXECUTOR: case ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR: case ACLNN_ERR_INNER_NULLPTR:
        return true;
    default:
        return false;
    }
}
#define REQUIRE_REFUSAL(rc, what)                                                                          \
    do {                                                                                                   \
        FZ_REQUIRE(is_cann_code(rc), "%s: %s returned %d, not a CANN status code", op->sig->name, what,   \
                   (int)(rc));                                                                             \
        FZ_REQUIRE(fz_msg_ok(), "%s: %s refused (%d) without one non-empty message line", op->sig->name,   \
                   what, (int)(rc));                                                                       \
    } while (0)

static bool is_float(int dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16; }
static bool is_int(int dt) { return dt == ACL_INT32 || dt == ACL_INT64; }
static size_t esize(int dt) {
    size_t s = aclDataTypeSize((aclDataType)dt);
    return s ? s : 1;
}

/* ---- a problem: tensors in the public signature's order ---- */
typedef struct {
    bool present;
    int dt, nd;
    int64_t dims[MAXND];
    uint8_t *data; /* dense row-major contents (inputs), or NULL */
} fo_t;
typedef struct {
    fo_t t[NT];
    mf_attr_val a[MF_ATTR_MAX];
    bool has_arr;
    int narr;
    int64_t arr[4];
    uint8_t *want[NT]; /* expected dense outputs, NULL: not checked */
    bool init[NT];     /* an output that starts as its data (an in/out tensor: GroupedMatmulAdd's yRef) */
    double tol[NT];    /* 0: bytes equal; > 0: float values within tol * max(1, |want|) */
} fo_prob;

static int64_t numel_of(const fo_t *t) {
    int64_t n = 1;
    for (int i = 0; i < t->nd; i++) n *= t->dims[i];
    return n;
}
static uint8_t *fo_new(fo_prob *p, int i, int dt, int nd, int64_t d0, int64_t d1, int64_t d2) {
    fo_t *t = &p->t[i];
    t->present = true;
    t->dt = dt;
    t->nd = nd;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->dims[2] = d2;
    const size_t n = (size_t)numel_of(t) * esize(dt);
    t->data = calloc(n ? n : 1, 1);
    return t->data;
}
static uint8_t *fo_want(fo_prob *p, int i) {
    const size_t n = (size_t)numel_of(&p->t[i]) * esize(p->t[i].dt);
    p->want[i] = calloc(n ? n : 1, 1);
    return p->want[i];
}
static void fo_free(fo_prob *p) {
    for (int i = 0; i < NT; i++) {
        free(p->t[i].data);
        free(p->want[i]);
    }
}
/* Small exact values: multiples of 1/8 in [-4, 4] (exact in every float dtype, sums of up to 16 exact in fp32). */
static double small_val(rng *r) { return (double)rrange(r, -32, 32) / 8.0; }
static void fill_small(rng *r, int dt, uint8_t *base, int64_t n) {
    const size_t es = esize(dt);
    for (int64_t i = 0; i < n; i++) {
        uint32_t b = fr_encode_exact(dt, small_val(r));
        memcpy(base + (size_t)i * es, &b, es);
    }
}
static void put_idx(int dt, uint8_t *base, int64_t i, int64_t v) {
    if (dt == ACL_INT64) {
        memcpy(base + i * 8, &v, 8);
    } else {
        int32_t w = (int32_t)v;
        memcpy(base + i * 4, &w, 4);
    }
}
static int64_t get_idx(int dt, const uint8_t *base, int64_t i) {
    if (dt == ACL_INT64) {
        int64_t v;
        memcpy(&v, base + i * 8, 8);
        return v;
    }
    int32_t w;
    memcpy(&w, base + i * 4, 4);
    return w;
}
static int fdt(fz_in *in) {
    static const int d[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    return d[fz_u8(in) % 3];
}
static void shuffle(rng *r, int64_t *v, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = rrange(r, 0, i), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ======== the per-operator rows: a valid small problem and its oracle ======== */

/* MoeComputeExpertTokens: sortedExperts (n) ascending in [0, E + 1] (ids >= E are not counted) | out (E) */
static bool mk_cet(fz_in *in, rng *r, fo_prob *p) {
    const int64_t n = fz_range(in, 1, 40), E = fz_range(in, 1, 12);
    uint8_t *v = fo_new(p, 0, ACL_INT32, 1, n, 0, 0);
    int64_t cur = 0;
    for (int64_t i = 0; i < n; i++) {
        if (rrange(r, 0, 3) == 0 && cur < E + 1) cur += rrange(r, 1, E + 1 - cur);
        put_idx(ACL_INT32, v, i, cur);
    }
    p->a[0].i = E;
    fo_new(p, 1, ACL_INT32, 1, E, 0, 0);
    or_compute_expert_tokens((const int32_t *)(void *)v, n, E, (int32_t *)(void *)fo_want(p, 1));
    return true;
}

/* MoeTokenPermuteGrad: permutedOutputGrad (M, H), sortedIndices (N*K) a
 * permutation | out (N, H); rows >= M are the ones numOutTokens cut. */
static bool mk_tpg(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in);
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    const int64_t M = fz_range(in, 1, T);
    int64_t perm[32];
    for (int64_t i = 0; i < T; i++) perm[i] = i;
    shuffle(r, perm, T);
    fill_small(r, dt, fo_new(p, 0, dt, 2, M, H, 0), M * H);
    uint8_t *ix = fo_new(p, 1, ACL_INT32, 1, T, 0, 0);
    for (int64_t i = 0; i < T; i++) put_idx(ACL_INT32, ix, i, perm[i]);
    p->a[0].i = K;
    p->a[1].i = 0;
    fo_new(p, 2, dt, 2, N, H, 0);
    or_gather_sum(dt, p->t[0].data, H, perm, N, K, M, fo_want(p, 2));
    return true;
}

/* MoeInitRoutingV2Grad: mode 0 gradExpandedX (A or T, H), expandedRowIdx (T)
 * a permutation, rows >= activeNum absent; mode 1 (E, C, H) with -1 drops. */
static bool mk_irg(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in), mode = fz_u8(in) & 1;
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    int64_t idx[32], keep;
    if (mode == 0) {
        const int64_t active = fz_u8(in) & 1 ? fz_range(in, 1, T) : 0;
        const int64_t rows = active ? active : T;
        keep = rows;
        for (int64_t i = 0; i < T; i++) idx[i] = i;
        shuffle(r, idx, T);
        fill_small(r, dt, fo_new(p, 0, dt, 2, rows, H, 0), rows * H);
        p->a[2].i = active;
    } else {
        const int64_t E = fz_range(in, 1, 4), C = fz_range(in, 1, 4);
        keep = E * C;
        for (int64_t i = 0; i < T; i++) idx[i] = rrange(r, -1, E * C - 1);
        fill_small(r, dt, fo_new(p, 0, dt, 3, E, C, H), E * C * H);
        p->a[2].i = fz_range(in, 0, T);
    }
    uint8_t *ix = fo_new(p, 1, ACL_INT32, 1, T, 0, 0);
    for (int64_t i = 0; i < T; i++) put_idx(ACL_INT32, ix, i, idx[i]);
    p->a[0].i = K;
    p->a[1].i = mode;
    fo_new(p, 2, dt, 2, N, H, 0);
    or_gather_sum(dt, p->t[0].data, H, idx, N, K, keep, fo_want(p, 2));
    return true;
}

/* The FinalizeRouting family through tests/fwd_ref.c (fr_forward). */
typedef struct {
    int dt, sdt, mode;
    int64_t R, K, H, D, Eb;
    bool x1, x2, bias, scales, eidx;
} fwd_shape;
static void fwd_draw(fz_in *in, rng *r, fo_prob *p, const fwd_shape *s, const int slot[8]) {
    /* slot: expandedX, idx, x1, x2, bias, scales, eidx, out (-1: not in the signature) */
    fo_t *x = &p->t[slot[0]];
    (void)in;
    if (s->mode == 1 || s->mode == 3) {
        const int64_t C = s->D / s->Eb;
        fill_small(r, s->dt, fo_new(p, slot[0], s->dt, 3, s->Eb, C, s->H), s->D * s->H);
    } else {
        fill_small(r, s->dt, fo_new(p, slot[0], s->dt, 2, s->D, s->H, 0), s->D * s->H);
    }
    (void)x;
    uint8_t *ix = fo_new(p, slot[1], ACL_INT32, 1, s->R * s->K, 0, 0);
    for (int64_t i = 0; i < s->R * s->K; i++)
        put_idx(ACL_INT32, ix, i, (s->mode & 1) ? rrange(r, -1, s->D - 1) : rrange(r, 0, s->D - 1));
    if (s->x1) fill_small(r, s->dt, fo_new(p, slot[2], s->dt, 2, s->R, s->H, 0), s->R * s->H);
    if (s->x2) fill_small(r, s->dt, fo_new(p, slot[3], s->dt, 2, s->R, s->H, 0), s->R * s->H);
    if (s->bias) fill_small(r, s->dt, fo_new(p, slot[4], s->dt, 2, s->Eb, s->H, 0), s->Eb * s->H);
    if (s->scales) fill_small(r, s->sdt, fo_new(p, slot[5], s->sdt, 2, s->R, s->K, 0), s->R * s->K);
    if (s->eidx) {
        uint8_t *e = fo_new(p, slot[6], ACL_INT32, 2, s->R, s->K, 0);
        for (int64_t i = 0; i < s->R * s->K; i++) put_idx(ACL_INT32, e, i, rrange(r, 0, s->Eb - 1));
    }
    fo_new(p, slot[7], s->dt, 2, s->R, s->H, 0);
    fr_problem fp = {s->dt, s->sdt, s->mode, s->R, s->K, s->H, s->D, s->Eb, p->t[slot[0]].data,
                     s->x1 ? p->t[slot[2]].data : NULL, s->x2 ? p->t[slot[3]].data : NULL,
                     s->bias ? p->t[slot[4]].data : NULL, s->scales ? p->t[slot[5]].data : NULL,
                     (const int32_t *)(void *)p->t[slot[1]].data,
                     s->eidx ? (const int32_t *)(void *)p->t[slot[6]].data : NULL};
    fr_forward(&fp, fo_want(p, slot[7]));
}
/* MoeFinalizeRoutingV2: (expandedX, expandedRowIdx, x1, x2, bias, scales, expertIdx | out) */
static bool mk_frv2(fz_in *in, rng *r, fo_prob *p) {
    fwd_shape s;
    memset(&s, 0, sizeof s);
    const uint8_t c = fz_u8(in);
    s.dt = fdt(in);
    s.sdt = fz_u8(in) & 1 ? s.dt : fdt(in);
    s.mode = c & 3;
    s.R = fz_range(in, 1, 6);
    s.scales = (c & 4) != 0;
    s.K = s.scales ? fz_range(in, 1, 4) : 1;
    s.H = fz_range(in, 1, 40);
    s.bias = (c & 8) != 0;
    s.eidx = s.bias || (c & 16);
    s.x1 = (c & 32) != 0;
    s.x2 = s.x1 && (c & 64);
    s.Eb = fz_range(in, s.K, s.K + 3);
    s.D = (s.mode & 1) ? s.Eb * fz_range(in, 1, 3) : s.R * s.K;
    p->a[0].i = s.mode;
    static const int slot[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    fwd_draw(in, r, p, &s, slot);
    return true;
}
/* MoeFinalizeRouting (V1): (expandedX, x1, x2, bias, scales, expandedRowIdx, expandedExpertIdx | out), mode 0 */
static bool mk_fr1(fz_in *in, rng *r, fo_prob *p) {
    fwd_shape s;
    memset(&s, 0, sizeof s);
    s.dt = fdt(in);
    s.sdt = s.dt;
    s.R = fz_range(in, 1, 6);
    s.K = fz_range(in, 1, 4);
    s.H = fz_range(in, 1, 40);
    s.x1 = s.bias = s.scales = s.eidx = true;
    s.x2 = fz_u8(in) & 1;
    s.Eb = fz_range(in, s.K, s.K + 3);
    s.D = s.R * s.K;
    static const int slot[8] = {0, 5, 1, 2, 3, 4, 6, 7};
    fwd_draw(in, r, p, &s, slot);
    return true;
}
/* MoeTokenUnpermute: (permutedTokens (M, H), sortedIndices (R*K), probs (R, K) | out (R, H)) */
static bool mk_tu(fz_in *in, rng *r, fo_prob *p) {
    fwd_shape s;
    memset(&s, 0, sizeof s);
    s.dt = fdt(in);
    s.sdt = fdt(in);
    s.mode = 2;
    s.R = fz_range(in, 1, 6);
    s.scales = fz_u8(in) & 1;
    s.K = s.scales ? fz_range(in, 1, 4) : 1;
    s.H = fz_range(in, 1, 40);
    s.D = s.R * s.K;
    s.Eb = 1;
    static const int slot[8] = {0, 1, -1, -1, -1, 2, -1, 3};
    fwd_draw(in, r, p, &s, slot);
    p->a[0].i = 0;
    return true;
}

/* MoeInitRoutingV2: (x (N, H), expertIdx (N, K) | expandedX, expandedRowIdx, count, beforeCapacity) */
static bool mk_irv2(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in), idt = fz_u8(in) & 1 ? ACL_INT64 : ACL_INT32;
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    const int64_t E = fz_range(in, 1, 6);
    const int droppad = fz_u8(in) & 1;
    const int64_t C = droppad ? fz_range(in, 1, N < 4 ? N : 4) : 0; /* CANN: capacity <= tokens */
    const int64_t active = droppad ? 0 : (fz_u8(in) & 1 ? fz_range(in, 1, T) : 0);
    const int flag = (int)fz_range(in, 0, droppad ? 1 : 2);
    const bool before = droppad && (fz_u8(in) & 1);
    fill_small(r, dt, fo_new(p, 0, dt, 2, N, H, 0), N * H);
    uint8_t *e = fo_new(p, 1, idt, 2, N, K, 0);
    int64_t eid[32];
    for (int64_t i = 0; i < T; i++) put_idx(idt, e, i, eid[i] = rrange(r, 0, E - 1));
    const int64_t A = droppad ? E * C : (active ? active : T);
    if (droppad)
        fo_new(p, 2, dt, 3, E, C, H);
    else
        fo_new(p, 2, dt, 2, A, H, 0);
    fo_new(p, 3, ACL_INT32, 1, T, 0, 0);
    int64_t cnt[8], bef[8];
    if (flag) fo_new(p, 4, ACL_INT32, 1, E, 0, 0);
    if (before) fo_new(p, 5, ACL_INT32, 1, E, 0, 0);
    p->a[0].i = active;
    p->a[1].i = C;
    p->a[2].i = E;
    p->a[3].i = droppad;
    p->a[4].i = flag;
    p->a[5].i = before;
    or_init_routing_v2(p->t[0].data, N, H, (int)esize(dt), eid, K, active, E, C, droppad, flag,
                       (int32_t *)(void *)fo_want(p, 3), fo_want(p, 2), cnt, bef);
    if (flag && !droppad) { /* drop-pad mode writes no count (CANN) */
        int32_t *w = (int32_t *)(void *)fo_want(p, 4);
        for (int64_t i = 0; i < E; i++) w[i] = (int32_t)cnt[i];
    }
    if (before) {
        int32_t *w = (int32_t *)(void *)fo_want(p, 5);
        for (int64_t i = 0; i < E; i++) w[i] = (int32_t)bef[i];
    }
    return true;
}

/* MoeInitRoutingV3: (x (N, H), expertIdx (N, K), scale, offset | expandedX, expandedRowIdx, counts,
 * expandedScale); ids from [-2, E + 2] (outside the range: not routed), dropless (gather or
 * scatter index, count types 0..2, quant -1 or dynamic 1 on small exact values) or drop/pad. */
static bool mk_irv3(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in);
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    const int64_t E = fz_range(in, 1, 6);
    const int droppad = fz_u8(in) & 1;
    const int64_t C = droppad ? fz_range(in, 1, N < 4 ? N : 4) : 0;
    const int64_t start = droppad ? 0 : fz_range(in, 0, E - 1), end = droppad ? E : fz_range(in, start + 1, E);
    const int64_t L = end - start;
    const int type = droppad ? 1 : (int)fz_range(in, 0, 2), rt = droppad ? 0 : (int)(fz_u8(in) & 1);
    const int quant = droppad ? -1 : (fz_u8(in) & 1 ? 1 : -1);
    fill_small(r, dt, fo_new(p, 0, dt, 2, N, H, 0), N * H);
    int32_t *e = (int32_t *)(void *)fo_new(p, 1, ACL_INT32, 2, N, K, 0);
    for (int64_t i = 0; i < T; i++) e[i] = (int32_t)rrange(r, -2, E + 2);
    const int64_t rows = droppad ? E * C : T;
    const int odt = quant == -1 ? dt : ACL_INT8;
    if (droppad)
        fo_new(p, 4, odt, 3, E, C, H);
    else
        fo_new(p, 4, odt, 2, T, H, 0);
    fo_new(p, 5, ACL_INT32, 1, T, 0, 0);
    if (type == 2)
        fo_new(p, 6, ACL_INT64, 2, E, 2, 0);
    else
        fo_new(p, 6, ACL_INT64, 1, L, 0, 0);
    fo_new(p, 7, ACL_FLOAT, 1, rows, 0, 0);
    p->a[0].i = -1, p->a[1].i = C, p->a[2].i = E, p->a[3].i = droppad, p->a[4].i = type, p->a[5].i = 1;
    p->a[6].i = quant, p->a[8].i = rt;
    p->has_arr = true, p->narr = 2, p->arr[0] = start, p->arr[1] = end;
    /* the oracle: a selection sort by (group, id, position) */
    int32_t perm[32], src[32 * 4];
    bool used[32] = {false};
    int64_t A = 0, hist[8] = {0};
    for (int64_t i = 0; i < T; i++) {
        int64_t best = -1, bk = 0;
        for (int64_t j = 0; j < T; j++) {
            if (used[j]) continue;
            const int64_t k = e[j] < start ? ((int64_t)1 << 40) : e[j] - start;
            if (best < 0 || k < bk) best = j, bk = k;
        }
        used[best] = true;
        perm[i] = (int32_t)best;
        if (e[best] >= start && e[best] < end) hist[e[best] - start]++, A++;
    }
    int32_t *row = (int32_t *)(void *)fo_want(p, 5);
    for (int64_t j = 0; j < T; j++) row[j] = -1;
    for (int64_t i = 0; i < rows; i++) src[i] = -1;
    if (!droppad) {
        for (int64_t i = 0; i < A; i++) src[i] = perm[i];
        for (int64_t i = 0; i < T; i++)
            if (rt == 1) row[i] = perm[i];
            else if (i < A) row[perm[i]] = (int32_t)i;
    } else {
        for (int64_t i = 0, s = 0; i < A; i++) {
            s = i > 0 && e[perm[i]] == e[perm[i - 1]] ? s + 1 : 0;
            if (s < C) src[e[perm[i]] * C + s] = perm[i], row[perm[i]] = (int32_t)(e[perm[i]] * C + s);
        }
    }
    int64_t *cw = (int64_t *)(void *)fo_want(p, 6), run = 0, n = 0;
    for (int64_t k = 0; k < L; k++) {
        run += hist[k];
        if (type == 2) {
            if (hist[k]) cw[2 * n] = start + k, cw[2 * n + 1] = hist[k], n++;
        } else {
            cw[k] = type == 0 ? run : hist[k];
        }
    }
    const size_t es = esize(dt);
    uint8_t *xw = fo_want(p, 4);
    float *sw = quant == 1 ? (float *)(void *)fo_want(p, 7) : NULL; /* not written unquantised without a scale */
    for (int64_t i = 0; i < rows; i++) {
        if (src[i] < 0) continue; /* zeros */
        const uint8_t *xr = p->t[0].data + (size_t)(src[i] / K * H) * es;
        if (quant == -1) {
            memcpy(xw + (size_t)(i * H) * es, xr, (size_t)H * es);
            continue;
        }
        float mx = 0.0f;
        for (int64_t h = 0; h < H; h++) mx = fmaxf(mx, fabsf((float)fr_decode(dt, xr, h)));
        const float sc = mx / 127.0f;
        sw[i] = sc;
        for (int64_t h = 0; h < H; h++) {
            const float q = sc == 0.0f ? 0.0f : (float)fr_decode(dt, xr, h) / sc;
            ((int8_t *)xw)[i * H + h] = (int8_t)fmax(-128.0, fmin(127.0, nearbyint((double)q)));
        }
    }
    return true;
}

/* MoeTokenPermute: (tokens (N, H), indices (N, K) | permuteTokens (A, H), sortedIndices (T)) */
static bool mk_tp(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in), idt = fz_u8(in) & 1 ? ACL_INT64 : ACL_INT32;
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    const int64_t E = fz_range(in, 1, 6);
    int64_t num = fz_range(in, -T, T); /* <= 0: num + T */
    int64_t A = num <= 0 ? num + T : num;
    if (A < 0) A = 0;
    if (A > T) A = T;
    if (A == 0) { /* keep one row: an empty output is a separate path */
        num = 1;
        A = 1;
    }
    fill_small(r, dt, fo_new(p, 0, dt, 2, N, H, 0), N * H);
    uint8_t *e = fo_new(p, 1, idt, 2, N, K, 0);
    int64_t eid[32];
    for (int64_t i = 0; i < T; i++) put_idx(idt, e, i, eid[i] = rrange(r, 0, E - 1));
    fo_new(p, 2, dt, 2, A, H, 0);
    fo_new(p, 3, ACL_INT32, 1, T, 0, 0);
    p->a[0].i = num;
    p->a[1].i = 0;
    or_init_routing_v2(p->t[0].data, N, H, (int)esize(dt), eid, K, A, E, 0, 0, 0, (int32_t *)(void *)fo_want(p, 3),
                       fo_want(p, 2), NULL, NULL);
    return true;
}

/* MoeGatingTopKSoftmax (V1: x, finished | y, expertIdx, rowIdx) and V2 (x,
 * finished | y, expertIdx, softmaxResult): distinct logits a quarter apart, so
 * the top-k order is not a rounding question; y within a few ulps. */
static bool mk_gate(fz_in *in, rng *r, fo_prob *p, int v2) {
    const int dt = fdt(in);
    const int64_t N = fz_range(in, 1, 6), E = fz_range(in, 1, 12), k = fz_range(in, 1, E);
    const bool fin = fz_u8(in) & 1;
    const int renorm = v2 ? (int)(fz_u8(in) & 1) : 0;
    const bool sm = v2 && !renorm && (fz_u8(in) & 1);
    double x[6 * 12], y[6 * 12], soft[6 * 12];
    int32_t eidx[6 * 12];
    bool finished[6];
    uint8_t *xb = fo_new(p, 0, dt, 2, N, E, 0);
    for (int64_t rr = 0; rr < N; rr++) {
        int64_t v[12];
        for (int64_t e = 0; e < E; e++) v[e] = e;
        shuffle(r, v, E);
        const int64_t base = rrange(r, -8, 4);
        for (int64_t e = 0; e < E; e++) {
            x[rr * E + e] = (double)(base + v[e]) / 4.0;
            uint32_t b = fr_encode_exact(dt, x[rr * E + e]);
            memcpy(xb + (size_t)(rr * E + e) * esize(dt), &b, esize(dt));
        }
    }
    if (fin) {
        uint8_t *f = fo_new(p, 1, ACL_BOOL, 1, N, 0, 0);
        for (int64_t rr = 0; rr < N; rr++) f[rr] = (uint8_t)(finished[rr] = rrange(r, 0, 2) == 0);
    }
    or_gating(x, N, E, k, renorm, fin ? finished : NULL, y, eidx, soft);
    fo_new(p, 2, dt, 2, N, k, 0);
    uint8_t *wy = fo_want(p, 2);
    for (int64_t i = 0; i < N * k; i++) {
        uint32_t b = fr_round(dt, y[i]);
        memcpy(wy + (size_t)i * esize(dt), &b, esize(dt));
    }
    p->tol[2] = dt == ACL_FLOAT ? 1e-6 : dt == ACL_FLOAT16 ? 2e-3 : 1.6e-2;
    fo_new(p, 3, ACL_INT32, 2, N, k, 0);
    memcpy(fo_want(p, 3), eidx, (size_t)(N * k) * 4);
    p->a[0].i = k;
    if (!v2) {
        fo_new(p, 4, ACL_INT32, 2, N, k, 0);
        int32_t *w = (int32_t *)(void *)fo_want(p, 4);
        for (int64_t rr = 0; rr < N; rr++)
            for (int64_t j = 0; j < k; j++) w[rr * k + j] = (int32_t)(j * N + rr);
    } else {
        p->a[1].i = renorm;
        p->a[2].i = sm;
        if (sm) {
            fo_new(p, 4, ACL_FLOAT, 2, N, E, 0);
            float *w = (float *)(void *)fo_want(p, 4);
            for (int64_t i = 0; i < N * E; i++) w[i] = (float)soft[i];
            p->tol[4] = 1e-6;
        }
    }
    return true;
}
static bool mk_gate1(fz_in *in, rng *r, fo_prob *p) { return mk_gate(in, r, p, 0); }
static bool mk_gate2(fz_in *in, rng *r, fo_prob *p) { return mk_gate(in, r, p, 1); }

/* MoeInitRouting (V1): (x (N, H), rowIdx (N, K) a permutation of [0, N*K),
 * expertIdx (N, K) | expandedX (min(activeNum, N)*K, H), expandedRowIdx (N*K), expandedExpertIdx (N*K)) */
static bool mk_ir1(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in);
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    const int64_t E = fz_range(in, 1, 6), active = fz_range(in, 1, N + 2);
    int64_t ridx[32], eid[32];
    for (int64_t i = 0; i < T; i++) ridx[i] = fz_u8(in) & 1 ? i : (i % K) * N + i / K; /* column layout, or flat */
    if (fz_u8(in) & 1) shuffle(r, ridx, T);
    fill_small(r, dt, fo_new(p, 0, dt, 2, N, H, 0), N * H);
    uint8_t *ri = fo_new(p, 1, ACL_INT32, 2, N, K, 0), *ei = fo_new(p, 2, ACL_INT32, 2, N, K, 0);
    for (int64_t i = 0; i < T; i++) {
        put_idx(ACL_INT32, ri, i, ridx[i]);
        put_idx(ACL_INT32, ei, i, eid[i] = rrange(r, 0, E - 1));
    }
    const int64_t A = (active < N ? active : N) * K;
    fo_new(p, 3, dt, 2, A, H, 0);
    fo_new(p, 4, ACL_INT32, 1, T, 0, 0);
    fo_new(p, 5, ACL_INT32, 1, T, 0, 0);
    p->a[0].i = active;
    or_init_routing(p->t[0].data, N, H, (int)esize(dt), ridx, eid, K, active, fo_want(p, 3),
                    (int32_t *)(void *)fo_want(p, 4), (int32_t *)(void *)fo_want(p, 5));
    return true;
}

/* The FinalizeRoutingV2Grad family through tests/ref.c (ref_grad): small
 * exact data, so gradScales is the exact sum rounded once and compared bit
 * for bit, as gradExpandedX is. */
static ref_dt to_ref(int dt) { return dt == ACL_FLOAT ? REF_F32 : dt == ACL_FLOAT16 ? REF_F16 : REF_BF16; }
static double *decode_all(const fo_t *t) {
    const int64_t n = numel_of(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = fr_decode(t->dt, t->data, i);
    return v;
}
static int32_t *ints_all(const fo_t *t) {
    const int64_t n = numel_of(t);
    int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)get_idx(t->dt, t->data, i);
    return v;
}
/* slots: gy, idx, x, scales, eidx, bias, gx, gs (-1: not in the signature) */
static void grad_oracle(fo_prob *p, const int sl[8], int mode, int64_t R, int64_t K, int64_t H, int64_t D0, int64_t E) {
    const bool sc = sl[3] >= 0 && p->t[sl[3]].present, bi = sl[5] >= 0 && p->t[sl[5]].present;
    double *gy = decode_all(&p->t[sl[0]]), *x = sc ? decode_all(&p->t[sl[2]]) : NULL;
    double *s = sc ? decode_all(&p->t[sl[3]]) : NULL, *b = bi ? decode_all(&p->t[sl[5]]) : NULL;
    int32_t *idx = ints_all(&p->t[sl[1]]), *eidx = bi ? ints_all(&p->t[sl[4]]) : NULL;
    const int dt = p->t[sl[0]].dt, gsdt = p->t[sl[7]].dt;
    ref_grad_in gi = {mode, R, K, H, D0, E, to_ref(dt), to_ref(gsdt), gy, idx, x, s, eidx, b};
    uint32_t *gx = malloc((size_t)(D0 * H + 1) * 4), *gs = malloc((size_t)(R * K + 1) * 4);
    long double *ge = malloc((size_t)(R * K + 1) * sizeof *ge), *gm = malloc((size_t)(R * K + 1) * sizeof *gm);
    ref_grad_out go = {gx, gs, ge, gm};
    ref_grad(&gi, &go);
    uint8_t *w = fo_want(p, sl[6]);
    for (int64_t i = 0; i < D0 * H; i++) memcpy(w + (size_t)i * esize(dt), &gx[i], esize(dt));
    if (sc) {
        w = fo_want(p, sl[7]);
        for (int64_t i = 0; i < R * K; i++) memcpy(w + (size_t)i * esize(gsdt), &gs[i], esize(gsdt));
    }
    free(gy); free(x); free(s); free(b); free(idx); free(eidx); free(gx); free(gs); free(ge); free(gm);
}
/* MoeFinalizeRoutingV2Grad: (gradY, expandedRowIdx, expandedX, scales, expertIdx, bias | gradExpandedX, gradScales) */
static bool mk_frg(fz_in *in, rng *r, fo_prob *p) {
    const uint8_t c = fz_u8(in);
    const int dt = fdt(in), sdt = c & 0x80 ? dt : fdt(in), mode = c & 1;
    const bool sc = c & 2, bi = sc && (c & 4);
    const int64_t R = fz_range(in, 1, 6), K = sc ? fz_range(in, 1, 4) : 1, H = fz_range(in, 1, 40);
    int64_t D0 = R * K, E = 0, C = 0, active = 0;
    if (mode == 1) {
        E = fz_range(in, 1, 4);
        C = fz_range(in, 1, 3);
        D0 = E * C;
    } else if (c & 8) {
        active = fz_range(in, 1, R * K);
        D0 = active;
    }
    const int64_t Eb = mode == 1 ? E : fz_range(in, 1, 4);
    fill_small(r, dt, fo_new(p, 0, dt, 2, R, H, 0), R * H);
    uint8_t *ix = fo_new(p, 1, ACL_INT32, 1, R * K, 0, 0);
    for (int64_t i = 0; i < R * K; i++) put_idx(ACL_INT32, ix, i, rrange(r, -1, D0 - 1));
    if (sc || (c & 16)) {
        if (mode == 1)
            fill_small(r, dt, fo_new(p, 2, dt, 3, E, C, H), D0 * H);
        else
            fill_small(r, dt, fo_new(p, 2, dt, 2, D0, H, 0), D0 * H);
    }
    if (sc) fill_small(r, sdt, fo_new(p, 3, sdt, 2, R, K, 0), R * K);
    if (bi) {
        uint8_t *e = fo_new(p, 4, ACL_INT32, 2, R, K, 0);
        for (int64_t i = 0; i < R * K; i++) put_idx(ACL_INT32, e, i, rrange(r, 0, Eb - 1));
        fill_small(r, dt, fo_new(p, 5, dt, 2, Eb, H, 0), Eb * H);
    }
    if (mode == 1)
        fo_new(p, 6, dt, 3, E, C, H);
    else
        fo_new(p, 6, dt, 2, D0, H, 0);
    fo_new(p, 7, sc ? sdt : dt, 2, R, K, 0);
    p->a[0].i = mode;
    p->a[1].i = active;
    p->a[2].i = E;
    p->a[3].i = C;
    static const int sl[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    grad_oracle(p, sl, mode, R, K, H, D0, Eb);
    return true;
}
/* MoeTokenUnpermuteGrad: (permutedTokens (M, H), unpermutedTokensGrad (R, H),
 * sortedIndices (R*K) a permutation, probs (R, K) | permutedTokensGradOut (M, H), probsGradOut (R, K));
 * FinalizeRoutingV2Grad mode 0 with activeNum = M (indices >= M dropped). */
static bool mk_tug(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in), sdt = fdt(in);
    const bool pr = fz_u8(in) & 1;
    const int64_t R = fz_range(in, 1, 6), K = pr ? fz_range(in, 1, 4) : 1, H = fz_range(in, 1, 40);
    const int64_t M = fz_range(in, 1, R * K);
    int64_t perm[32];
    for (int64_t i = 0; i < R * K; i++) perm[i] = i;
    shuffle(r, perm, R * K);
    fill_small(r, dt, fo_new(p, 0, dt, 2, M, H, 0), M * H);
    fill_small(r, dt, fo_new(p, 1, dt, 2, R, H, 0), R * H);
    uint8_t *ix = fo_new(p, 2, ACL_INT32, 1, R * K, 0, 0);
    for (int64_t i = 0; i < R * K; i++) put_idx(ACL_INT32, ix, i, perm[i]);
    if (pr) fill_small(r, sdt, fo_new(p, 3, sdt, 2, R, K, 0), R * K);
    fo_new(p, 4, dt, 2, M, H, 0);
    fo_new(p, 5, pr ? sdt : dt, 2, R, K, 0);
    p->a[0].i = 0;
    static const int sl[8] = {1, 2, 0, 3, -1, -1, 4, 5};
    grad_oracle(p, sl, 0, R, K, H, M, 1);
    if (!pr) { /* without probs nothing defines probsGradOut: not compared */
        free(p->want[5]);
        p->want[5] = NULL;
    }
    return true;
}

/* SwiGlu / SwiGluGrad: x of 1-3 dims split in halves A, B along dim; float64
 * oracle of silu(A) * B and of its two gradients (SPEC 10), rounded once. */
static bool mk_swiglu_any(fz_in *in, rng *r, fo_prob *p, bool grad) {
    const int dt = fdt(in), nd = (int)fz_range(in, 1, 3);
    int64_t xd[3] = {1, 1, 1}, od[3] = {1, 1, 1};
    for (int k = 0; k < nd; k++) xd[k] = fz_range(in, 1, 9);
    const int dim = (int)fz_range(in, 0, nd - 1);
    xd[dim] = 2 * fz_range(in, 1, 6);
    memcpy(od, xd, sizeof od);
    od[dim] /= 2;
    const int64_t h = od[dim], n = od[0] * od[1] * od[2];
    fill_small(r, dt, fo_new(p, 0, dt, nd, xd[0], xd[1], xd[2]), 2 * n);
    if (grad) fill_small(r, dt, fo_new(p, 1, dt, nd, od[0], od[1], od[2]), n);
    const fo_t *x = &p->t[grad ? 1 : 0];
    if (grad) { /* the signature is (yGrad, x, out): x is slot 1, yGrad slot 0 */
        fo_t tmp = p->t[0];
        p->t[0] = p->t[1];
        p->t[1] = tmp;
        x = &p->t[1];
    }
    const int oi = grad ? 2 : 1;
    if (grad)
        fo_new(p, oi, dt, nd, xd[0], xd[1], xd[2]);
    else
        fo_new(p, oi, dt, nd, od[0], od[1], od[2]);
    uint8_t *w = fo_want(p, oi);
    const size_t es = esize(dt);
    for (int64_t o = 0; o < n; o++) {
        int64_t idx[3] = {0, 0, 0}, rem = o;
        for (int k = nd - 1; k >= 0; k--) idx[k] = rem % od[k], rem /= od[k];
        int64_t ia = 0, ib = 0;
        for (int k = 0; k < nd; k++) {
            ia = ia * xd[k] + idx[k];
            ib = ib * xd[k] + idx[k] + (k == dim ? h : 0);
        }
        const double a = fr_decode(dt, x->data, ia), b = fr_decode(dt, x->data, ib), s = 1.0 / (1.0 + exp(-a));
        if (!grad) {
            const uint32_t bits = fr_round(dt, a * s * b);
            memcpy(w + (size_t)o * es, &bits, es);
        } else {
            const double g = fr_decode(dt, p->t[0].data, o);
            const uint32_t da = fr_round(dt, g * (s + s * (1 - s) * a) * b), db = fr_round(dt, g * s * a);
            memcpy(w + (size_t)ia * es, &da, es);
            memcpy(w + (size_t)ib * es, &db, es);
        }
    }
    p->tol[oi] = dt == ACL_FLOAT ? 1e-5 : dt == ACL_FLOAT16 ? 2e-3 : 1.6e-2;
    p->a[0].i = fz_u8(in) & 1 ? dim - nd : dim; /* negative dims count from the end */
    return true;
}
static bool mk_swiglu(fz_in *in, rng *r, fo_prob *p) { return mk_swiglu_any(in, r, p, false); }
static bool mk_swiglu_grad(fz_in *in, rng *r, fo_prob *p) { return mk_swiglu_any(in, r, p, true); }

/* GroupedMatmulV4, groupType 0 with one x (M, K), weight (E, K, N), bias (E, N) or none, a group list
 * (cumulative or counts) covering every row, out (M, N): small exact values, so every sum is exact in
 * fp32 and the one rounding to out's dtype gives the oracle's bits. */
static bool mk_gmm4(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fz_u8(in) & 1 ? ACL_BF16 : ACL_FLOAT16;
    const int bdt = fz_u8(in) & 1 ? ACL_FLOAT : dt;
    const bool has_bias = fz_u8(in) & 1;
    const int64_t E = fz_range(in, 1, 4), K = fz_range(in, 1, 6), N = fz_range(in, 1, 9);
    int64_t size[4], M = 0;
    for (int64_t e = 0; e < E; e++) M += size[e] = fz_range(in, 0, 4);
    const int glt = (int)(fz_u8(in) & 1);
    fill_small(r, dt, fo_new(p, 0, dt, 2, M, K, 0), M * K);
    fill_small(r, dt, fo_new(p, 1, dt, 3, E, K, N), E * K * N);
    if (has_bias) fill_small(r, bdt, fo_new(p, 2, bdt, 2, E, N, 0), E * N);
    uint8_t *gl = fo_new(p, 3, ACL_INT64, 1, E, 0, 0);
    int64_t run = 0;
    for (int64_t e = 0; e < E; e++) {
        run += size[e];
        put_idx(ACL_INT64, gl, e, glt ? size[e] : run);
    }
    fo_new(p, 4, dt, 2, M, N, 0);
    uint8_t *w = fo_want(p, 4);
    const size_t es = esize(dt);
    int64_t row = 0;
    for (int64_t e = 0; e < E; e++)
        for (int64_t i = 0; i < size[e]; i++, row++)
            for (int64_t n = 0; n < N; n++) {
                double acc = has_bias ? fr_decode(bdt, p->t[2].data, e * N + n) : 0.0;
                for (int64_t k = 0; k < K; k++)
                    acc += fr_decode(dt, p->t[0].data, row * K + k) * fr_decode(dt, p->t[1].data, (e * K + k) * N + n);
                const uint32_t bits = fr_round(dt, acc);
                memcpy(w + (size_t)(row * N + n) * es, &bits, es);
            }
    p->a[0].i = 3, p->a[1].i = 0, p->a[2].i = glt, p->a[3].i = 0;
    return true;
}

/* GroupedMatmulAdd (V1, V2): x (K, M), weight (K, N) in FLOAT16 or BF16, groupList (E) (cumulative; V2
 * counts too) covering every row, yRef (E, M, N) FLOAT starting as small values (in/out). The oracle:
 * yRef + the group's products; small exact values keep every sum exact in fp32, so bits compare. */
static bool mk_gmma_any(fz_in *in, rng *r, fo_prob *p, bool v2) {
    const int dt = fz_u8(in) & 1 ? ACL_BF16 : ACL_FLOAT16;
    const int64_t E = fz_range(in, 1, 4), M = fz_range(in, 1, 7), N = fz_range(in, 1, 9);
    int64_t size[4], K = 0;
    for (int64_t e = 0; e < E; e++) K += size[e] = fz_range(in, 0, 4);
    const int glt = v2 ? (int)(fz_u8(in) & 1) : 0;
    fill_small(r, dt, fo_new(p, 0, dt, 2, K, M, 0), K * M);
    fill_small(r, dt, fo_new(p, 1, dt, 2, K, N, 0), K * N);
    uint8_t *gl = fo_new(p, 2, ACL_INT64, 1, E, 0, 0);
    int64_t run = 0;
    for (int64_t e = 0; e < E; e++) {
        run += size[e];
        put_idx(ACL_INT64, gl, e, glt ? size[e] : run);
    }
    fill_small(r, ACL_FLOAT, fo_new(p, 3, ACL_FLOAT, 3, E, M, N), E * M * N);
    p->init[3] = true;
    uint8_t *w = fo_want(p, 3);
    int64_t k0 = 0;
    for (int64_t e = 0; e < E; e++) {
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = fr_decode(ACL_FLOAT, p->t[3].data, (e * M + m) * N + n);
                for (int64_t k = k0; k < k0 + size[e]; k++)
                    acc += fr_decode(dt, p->t[0].data, k * M + m) * fr_decode(dt, p->t[1].data, k * N + n);
                const uint32_t bits = fr_round(ACL_FLOAT, acc);
                memcpy(w + (size_t)((e * M + m) * N + n) * 4, &bits, 4);
            }
        k0 += size[e];
    }
    p->a[0].i = 1, p->a[1].i = 0, p->a[2].i = 2, p->a[3].i = glt; /* transposeX, transposeWeight, groupType, groupListType */
    return true;
}
static bool mk_gmma(fz_in *in, rng *r, fo_prob *p) { return mk_gmma_any(in, r, p, false); }
static bool mk_gmma2(fz_in *in, rng *r, fo_prob *p) { return mk_gmma_any(in, r, p, true); }

/* MoeReRouting: tokens (A, H) FLOAT16/BF16/INT8, counts (N, E) INT32/INT64 adding up to S <= A,
 * per-token scales (A) FLOAT or none | permuteTokensOut (A, H), permutePerTokenScalesOut (A),
 * permuteTokenIdxOut (A), expertTokenNumOut (E). Oracle from the documented offsets (block (r, e)
 * from the blocks before it rank-major to those before it expert-major); rows S..A-1 zero; bytes
 * equal. idxType 0 (the only one A2/A3 take). */
static bool mk_rr(fz_in *in, rng *r, fo_prob *p) {
    static const int TD[3] = {ACL_FLOAT16, ACL_BF16, ACL_INT8};
    const int dt = TD[fz_u8(in) % 3], cdt = fz_u8(in) & 1 ? ACL_INT64 : ACL_INT32;
    const bool sc = fz_u8(in) & 1;
    const int64_t A = fz_range(in, 0, 24), H = fz_range(in, 1, 9), N = fz_range(in, 1, 4), E = fz_range(in, 1, 4);
    const int64_t S = fz_u8(in) & 3 ? A : fz_range(in, 0, A);
    int64_t c[16] = {0};
    for (int64_t i = 0; i < S; i++) c[rrange(r, 0, N * E - 1)]++;
    const size_t es = esize(dt);
    uint8_t *tok = fo_new(p, 0, dt, 2, A, H, 0);
    for (int64_t i = 0; i < A * H * (int64_t)es; i++) tok[i] = (uint8_t)rnext(r);
    uint8_t *cnt = fo_new(p, 1, cdt, 2, N, E, 0);
    for (int64_t i = 0; i < N * E; i++) put_idx(cdt, cnt, i, c[i]);
    uint8_t *scl = NULL;
    if (sc) {
        scl = fo_new(p, 2, ACL_FLOAT, 1, A, 0, 0);
        fill_small(r, ACL_FLOAT, scl, A);
    }
    fo_new(p, 3, dt, 2, A, H, 0);
    fo_new(p, 4, ACL_FLOAT, 1, A, 0, 0);
    fo_new(p, 5, ACL_INT32, 1, A, 0, 0);
    fo_new(p, 6, cdt, 1, E, 0, 0);
    uint8_t *wt = fo_want(p, 3), *ws = sc ? fo_want(p, 4) : NULL, *wi = fo_want(p, 5), *we = fo_want(p, 6);
    for (int64_t rr = 0; rr < N; rr++)
        for (int64_t e = 0; e < E; e++) {
            int64_t src = 0, dst = 0;
            for (int64_t k = 0; k < rr * E + e; k++) src += c[k];
            for (int64_t k = 0; k < N * E; k++) {
                const int64_t kr = k / E, ke = k % E;
                if (ke < e || (ke == e && kr < rr)) dst += c[k];
            }
            for (int64_t i = 0; i < c[rr * E + e]; i++) {
                memcpy(wt + (dst + i) * H * (int64_t)es, tok + (src + i) * H * (int64_t)es, (size_t)H * es);
                if (sc) memcpy(ws + (dst + i) * 4, scl + (src + i) * 4, 4);
                put_idx(ACL_INT32, wi, dst + i, src + i);
            }
        }
    for (int64_t e = 0; e < E; e++) {
        int64_t t = 0;
        for (int64_t rr = 0; rr < N; rr++) t += c[rr * E + e];
        put_idx(cdt, we, e, t);
    }
    p->a[0].i = 1, p->a[1].i = 0;
    return true;
}

/* MoeInitRoutingQuantV2: (x (N, H), expertIdx (N, K), scale, offset | expandedX int8, expandedRowIdx, count,
 * beforeCapacity, dynamicQuantScale). The routing from or_init_routing_v2 over the token numbers (+1, so an
 * empty slot reads 0); the quantisation with CANN's roundings: static on small exact values (multiples of
 * 1/8 times multiples of 1/4, every fp16 step exact), rint half to even; dynamic in fp32 (products and
 * quotients rounded once from double), max|v| / 127, the quotient truncated to fp16, half away from zero. */
static int8_t q8_sat(double v) { return v != v ? 0 : v > 127 ? 127 : v < -128 ? -128 : (int8_t)v; }
static double q8_trunc16(double q) {
    if (q != q || q == 0 || isinf(q)) return q;
    double a = fabs(q);
    if (a >= 65504.0) a = 65504.0;
    else {
        int e;
        frexp(a, &e);
        const double quantum = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
        a = floor(a / quantum) * quantum;
    }
    return q < 0 ? -a : a;
}
static bool mk_irq2(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in);
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    const int64_t E = fz_range(in, 1, 6);
    const int droppad = fz_u8(in) & 1;
    const int64_t C = droppad ? fz_range(in, 1, N < 4 ? N : 4) : 0;
    const int64_t active = droppad ? 0 : (fz_u8(in) & 1 ? fz_range(in, 1, T) : 0);
    const int flag = droppad ? 0 : (int)fz_range(in, 0, 2);
    const bool before = droppad && (fz_u8(in) & 1);
    const int qmode = fz_u8(in) & 1, smooth = qmode ? (int)fz_range(in, 0, 2) : 0; /* none, (1, H), (E, H) */
    fill_small(r, dt, fo_new(p, 0, dt, 2, N, H, 0), N * H);
    uint8_t *e = fo_new(p, 1, ACL_INT32, 2, N, K, 0);
    int64_t eid[32], tok[8], perm[32];
    for (int64_t i = 0; i < T; i++) put_idx(ACL_INT32, e, i, eid[i] = rrange(r, 0, E - 1));
    const int64_t SR = smooth == 2 ? E : 1;
    double sc = 0, of = 0;
    if (qmode == 0) {
        float f = (float)(rrange(r, -16, 16) / 4.0);
        memcpy(fo_new(p, 2, ACL_FLOAT, 1, 1, 0, 0), &f, 4);
        sc = f;
        f = (float)(rrange(r, -16, 16) / 4.0);
        memcpy(fo_new(p, 3, ACL_FLOAT, 1, 1, 0, 0), &f, 4);
        of = f;
    } else if (smooth) {
        fill_small(r, ACL_FLOAT, fo_new(p, 2, ACL_FLOAT, 2, SR, H, 0), SR * H);
    }
    const int64_t R = droppad ? E * C : (active ? active : T);
    if (droppad) fo_new(p, 4, ACL_INT8, 3, E, C, H);
    else fo_new(p, 4, ACL_INT8, 2, R, H, 0);
    fo_new(p, 5, ACL_INT32, 1, T, 0, 0);
    if (flag) fo_new(p, 6, ACL_INT32, 1, E, 0, 0);
    if (before) fo_new(p, 7, ACL_INT32, 1, E, 0, 0);
    if (qmode) fo_new(p, 8, ACL_FLOAT, 1, R, 0, 0);
    p->a[0].i = active, p->a[1].i = C, p->a[2].i = E, p->a[3].i = droppad, p->a[4].i = flag, p->a[5].i = before;
    p->a[6].i = qmode;
    /* the routing over token numbers */
    int32_t src[32]; /* R <= 32 */
    int64_t cnt[8], bef[8];
    for (int64_t t = 0; t < N; t++) tok[t] = t + 1;
    int32_t tok32[8];
    for (int64_t t = 0; t < N; t++) tok32[t] = (int32_t)tok[t];
    or_init_routing_v2(tok32, N, 1, 4, eid, K, active, E, C, droppad, flag, (int32_t *)(void *)fo_want(p, 5),
                       (uint8_t *)src, cnt, bef);
    or_stable_sort(eid, T, perm);
    if (flag) {
        int32_t *w = (int32_t *)(void *)fo_want(p, 6);
        for (int64_t i = 0; i < E; i++) w[i] = (int32_t)cnt[i];
    }
    if (before) {
        int32_t *w = (int32_t *)(void *)fo_want(p, 7);
        for (int64_t i = 0; i < E; i++) w[i] = (int32_t)bef[i];
    }
    int8_t *wx = (int8_t *)(void *)fo_want(p, 4);
    float *wd = qmode ? (float *)(void *)fo_want(p, 8) : NULL;
    for (int64_t i = 0; i < R; i++) {
        if (src[i] == 0) continue; /* an empty slot: zeros */
        const int64_t t = src[i] - 1, ex = droppad ? i / C : eid[perm[i]];
        double v[20], m = 0;
        for (int64_t h = 0; h < H; h++) {
            v[h] = fr_decode(dt, p->t[0].data, t * H + h);
            if (smooth) v[h] = (double)(float)(v[h] * fr_decode(ACL_FLOAT, p->t[2].data, (smooth == 2 ? ex : 0) * H + h));
            m = fabs(v[h]) > m ? fabs(v[h]) : m;
        }
        if (qmode == 0) {
            for (int64_t h = 0; h < H; h++) wx[i * H + h] = q8_sat(nearbyint(v[h] * sc + of));
            continue;
        }
        const double s = (double)(float)(m / 127.0);
        wd[i] = (float)s;
        for (int64_t h = 0; h < H; h++) {
            const double q = q8_trunc16((double)(float)(v[h] / s));
            wx[i * H + h] = q8_sat(q != q ? q : q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5));
        }
    }
    return true;
}

/* MoeInitRoutingQuant (V1): mk_ir1's routing (through or_init_routing over token numbers) with the
 * static quantisation of small exact values (scale, offset: multiples of 1/4), rint half to even. */
static bool mk_irq1(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in);
    const int64_t N = fz_range(in, 1, 8), K = fz_range(in, 1, 4), H = fz_range(in, 1, 20), T = N * K;
    const int64_t E = fz_range(in, 1, 6), active = fz_range(in, 1, N + 2);
    int64_t ridx[32], eid[32];
    for (int64_t i = 0; i < T; i++) ridx[i] = fz_u8(in) & 1 ? i : (i % K) * N + i / K;
    if (fz_u8(in) & 1) shuffle(r, ridx, T);
    fill_small(r, dt, fo_new(p, 0, dt, 2, N, H, 0), N * H);
    uint8_t *ri = fo_new(p, 1, ACL_INT32, 2, N, K, 0), *ei = fo_new(p, 2, ACL_INT32, 2, N, K, 0);
    for (int64_t i = 0; i < T; i++) {
        put_idx(ACL_INT32, ri, i, ridx[i]);
        put_idx(ACL_INT32, ei, i, eid[i] = rrange(r, 0, E - 1));
    }
    const int64_t A = (active < N ? active : N) * K;
    fo_new(p, 3, ACL_INT8, 2, A, H, 0);
    fo_new(p, 4, ACL_INT32, 1, T, 0, 0);
    fo_new(p, 5, ACL_INT32, 1, T, 0, 0);
    const double sc = rrange(r, -16, 16) / 4.0, of = rrange(r, -16, 16) / 4.0;
    p->a[0].i = active, p->a[1].d = sc, p->a[2].d = of;
    int32_t tok32[8], src[32];
    for (int64_t t = 0; t < N; t++) tok32[t] = (int32_t)t;
    or_init_routing(tok32, N, 1, 4, ridx, eid, K, active, (uint8_t *)src, (int32_t *)(void *)fo_want(p, 4),
                    (int32_t *)(void *)fo_want(p, 5));
    int8_t *wx = (int8_t *)(void *)fo_want(p, 3);
    for (int64_t i = 0; i < A; i++)
        for (int64_t h = 0; h < H; h++)
            wx[i * H + h] = q8_sat(nearbyint(fr_decode(dt, p->t[0].data, src[i] * H + h) * sc + of));
    return true;
}

/* MoeTokenPermuteWithRoutingMap (tokens, routingMap, probs | permuteTokens, permuteProbs,
 * sortedIndices): a BOOL map with K ones a row; dropless (the expert-major ones, their
 * row-major positions' ranks) or drop-and-pad (per expert the routed tokens, then the others,
 * C kept); pure data movement, bytes compared. */
static bool mk_pwrm(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fdt(in);
    const bool pad = fz_u8(in) & 1, probs = fz_u8(in) & 1;
    const int64_t N = fz_range(in, 1, 8), E = fz_range(in, 1, 6), K = fz_range(in, 1, E), H = fz_range(in, 1, 20);
    const int64_t C = pad ? fz_range(in, 1, N) : 0, rows = pad ? E * C : N * K;
    const size_t es = esize(dt);
    fill_small(r, dt, fo_new(p, 0, dt, 2, N, H, 0), N * H);
    uint8_t *m = fo_new(p, 1, ACL_BOOL, 2, N, E, 0);
    memset(m, 0, (size_t)(N * E));
    for (int64_t rr = 0; rr < N; rr++)
        for (int64_t k = 0; k < K;) {
            const int64_t e = rrange(r, 0, E - 1);
            if (!m[rr * E + e]) m[rr * E + e] = 1, k++;
        }
    if (probs) fill_small(r, dt, fo_new(p, 2, dt, 2, N, E, 0), N * E);
    fo_new(p, 3, dt, 2, rows, H, 0);
    if (probs) fo_new(p, 4, dt, 1, rows, 0, 0);
    fo_new(p, 5, ACL_INT32, 1, rows, 0, 0);
    uint8_t *wt = fo_want(p, 3), *wp = probs ? fo_want(p, 4) : NULL, *wi = fo_want(p, 5);
    int64_t tok_of[64], q_of[64], i = 0; /* output row i: its token (and dropless: its row-major position) */
    for (int64_t e = 0; e < E; e++) {
        if (!pad) {
            for (int64_t rr = 0; rr < N; rr++)
                if (m[rr * E + e]) {
                    int64_t q = 0; /* row-major position of (rr, e) */
                    for (int64_t j = 0; j < rr * E + e; j++) q += m[j];
                    tok_of[i] = rr, q_of[i++] = q;
                }
        } else {
            int64_t c = 0;
            for (int pass = 1; pass >= 0; pass--)
                for (int64_t rr = 0; rr < N && c < C; rr++)
                    if (m[rr * E + e] == pass) tok_of[i++] = rr, c++;
        }
    }
    for (i = 0; i < rows; i++) {
        const int64_t src = pad ? tok_of[i] : q_of[i] / K, e = pad ? i / C : 0;
        memcpy(wt + (size_t)(i * H) * es, p->t[0].data + (size_t)(src * H) * es, (size_t)H * es);
        if (pad) put_idx(ACL_INT32, wi, i, tok_of[i]);
        else put_idx(ACL_INT32, wi, q_of[i], i);
        if (wp) {
            int64_t ee = e;
            if (!pad) /* the expert of output row i: count rows per expert */
                for (int64_t x = 0, acc = 0; x < E; x++) {
                    int64_t cnt = 0;
                    for (int64_t rr = 0; rr < N; rr++) cnt += m[rr * E + x];
                    if (i < acc + cnt) { ee = x; break; }
                    acc += cnt;
                }
            memcpy(wp + (size_t)i * es, p->t[2].data + (size_t)(tok_of[i] * E + ee) * es, es);
        }
    }
    p->a[0].i = pad ? E * C : N * K;
    p->a[1].i = pad;
    return true;
}

/* DynamicQuantV2: x (R, H) FLOAT16/BF16, smooth none, (H) or (E, H) with a cumulative INT32 group
 * index ending at R, offset given (asymmetric) or not | y INT8 (R, H), scale (R), offset (R). The
 * oracle does Ascend 950's fp32 steps in double, each rounded to fp32 (exact for products and
 * quotients), then rint and the clamp (docs/CANN_COMPAT.md, "DynamicQuant"); bytes must match. */
static float f32r(double d) { return (float)d; }
static bool mk_dq2(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fz_u8(in) & 1 ? ACL_BF16 : ACL_FLOAT16;
    const int64_t R = fz_range(in, 1, 6), H = fz_range(in, 1, 40), E = fz_range(in, 1, 3);
    const int sm = (int)(fz_u8(in) % 3); /* 0 none, 1 (H), 2 grouped */
    const bool sym = fz_u8(in) & 1;
    uint8_t *x = fo_new(p, 0, dt, 2, R, H, 0);
    fill_small(r, dt, x, R * H);
    uint8_t *s = NULL, *g = NULL;
    if (sm == 1) fill_small(r, dt, s = fo_new(p, 1, dt, 1, H, 0, 0), H);
    if (sm == 2) {
        fill_small(r, dt, s = fo_new(p, 1, dt, 2, E, H, 0), E * H);
        g = fo_new(p, 2, ACL_INT32, 1, E, 0, 0);
        int64_t at = 0;
        for (int64_t e = 0; e < E; e++) put_idx(ACL_INT32, g, e, at = e == E - 1 ? R : rrange(r, at, R));
    }
    fo_new(p, 3, ACL_INT8, 2, R, H, 0);
    fo_new(p, 4, ACL_FLOAT, 1, R, 0, 0);
    if (!sym) fo_new(p, 5, ACL_FLOAT, 1, R, 0, 0);
    int8_t *y = (int8_t *)fo_want(p, 3);
    uint8_t *sc = fo_want(p, 4), *of = sym ? NULL : fo_want(p, 5);
    float v[40];
    for (int64_t i = 0; i < R; i++) {
        int64_t e = 0;
        while (sm == 2 && get_idx(ACL_INT32, g, e) <= i) e++;
        double hi = -INFINITY, lo = INFINITY;
        for (int64_t j = 0; j < H; j++) {
            double f = fr_decode(dt, x, i * H + j);
            if (sm) f *= fr_decode(dt, s, (sm == 2 ? e * H : 0) + j);
            v[j] = f32r(f);
            const double a = sym ? fabs((double)v[j]) : (double)v[j];
            hi = a > hi ? a : hi;
            lo = a < lo ? a : lo;
        }
        const float k = sym ? f32r((double)f32r(hi) * (double)f32r(1.0 / 127))
                            : f32r((double)f32r(hi - lo) * (double)f32r(1.0 / 255));
        const float o = sym ? 0.0f : f32r(127.0 - (double)f32r(hi / k));
        memcpy(sc + i * 4, &k, 4);
        if (of) memcpy(of + i * 4, &o, 4);
        for (int64_t j = 0; j < H; j++) {
            double q = f32r((double)v[j] / k);
            if (!sym) q = f32r(q + o);
            q = q != q ? 0.0 : q > 127 ? 127 : q < -128 ? -128 : q;
            y[i * H + j] = (int8_t)nearbyint(q);
        }
    }
    p->a[0].i = 2;
    return true;
}

/* GroupedMatmulFinalizeRoutingWeightNz (A8W8, ND int8 x2): (x1 (M, K), x2 (E, K, N), scale (E, N) FLOAT,
 * bias, pertokenScale (M), groupList (E) counts or ends, sharedInput (S, N) BF16, logit (M), rowIndex (M)
 * INT64 | out (bs, N) FLOAT). The oracle follows the kernel's fp32 steps (each rounded once from double):
 * out = 0 and the shared rows times sharedInputWeight, then per row (fp32(acc) * scale) * (logit *
 * pertoken) added into out[rowIndex] in row order; bits compare. */
static float fo_f32(double v) { return (float)v; }
static bool mk_gfr(fz_in *in, rng *r, fo_prob *p) {
    const int64_t M = fz_range(in, 1, 8), K = 16 * fz_range(in, 1, 2), N = 256, E = fz_range(in, 1, 3);
    const int64_t bs = fz_range(in, 1, M), glt = fz_u8(in) & 1, S = fz_u8(in) & 1 ? fz_range(in, 1, bs) : 0;
    const int64_t off = S ? fz_range(in, 0, bs - S) : 0;
    const bool pt = fz_u8(in) & 1;
    int64_t size[3], left = M;
    for (int64_t e = 0; e < E; e++) left -= size[e] = fz_range(in, 0, left);
    int8_t *x = (int8_t *)fo_new(p, 0, ACL_INT8, 2, M, K, 0), *w = (int8_t *)fo_new(p, 1, ACL_INT8, 3, E, K, N);
    for (int64_t i = 0; i < M * K; i++) x[i] = (int8_t)rnext(r);
    for (int64_t i = 0; i < E * K * N; i++) w[i] = (int8_t)rnext(r);
    fill_small(r, ACL_FLOAT, fo_new(p, 2, ACL_FLOAT, 2, E, N, 0), E * N);
    if (pt) fill_small(r, ACL_FLOAT, fo_new(p, 4, ACL_FLOAT, 1, M, 0, 0), M);
    uint8_t *gl = fo_new(p, 5, ACL_INT64, 1, E, 0, 0);
    int64_t run = 0;
    for (int64_t e = 0; e < E; e++) put_idx(ACL_INT64, gl, e, glt ? size[e] : (run += size[e]));
    if (S) fill_small(r, ACL_BF16, fo_new(p, 6, ACL_BF16, 2, S, N, 0), S * N);
    fill_small(r, ACL_FLOAT, fo_new(p, 7, ACL_FLOAT, 1, M, 0, 0), M);
    uint8_t *ri = fo_new(p, 8, ACL_INT64, 1, M, 0, 0);
    for (int64_t m = 0; m < M; m++) put_idx(ACL_INT64, ri, m, rrange(r, 0, bs - 1));
    fo_new(p, 9, ACL_FLOAT, 2, bs, N, 0);
    const float sw = (float)(rrange(r, 0, 8) / 4.0);
    float *y = (float *)(void *)fo_want(p, 9);
    for (int64_t i = 0; i < bs * N; i++)
        y[i] = S && i / N >= off && i / N < off + S ? fo_f32(fr_decode(ACL_BF16, p->t[6].data, i - off * N) * sw) : 0.0f;
    int64_t m = 0;
    for (int64_t e = 0; e < E; e++)
        for (int64_t i = 0; i < size[e]; i++, m++) {
            const float l = (float)fr_decode(ACL_FLOAT, p->t[7].data, m);
            const float k = pt ? fo_f32((double)l * fr_decode(ACL_FLOAT, p->t[4].data, m)) : l;
            int64_t row;
            memcpy(&row, ri + m * 8, 8);
            for (int64_t n = 0; n < N; n++) {
                int64_t acc = 0;
                for (int64_t q = 0; q < K; q++) acc += (int64_t)x[m * K + q] * w[(e * K + q) * N + n];
                const float v = fo_f32((double)fo_f32((double)(float)acc * fr_decode(ACL_FLOAT, p->t[2].data, e * N + n)) * k);
                y[row * N + n] = fo_f32((double)y[row * N + n] + v);
            }
        }
    p->a[0].i = 0, p->a[1].d = sw, p->a[2].i = off, p->a[3].i = 0, p->a[4].i = 0, p->a[5].i = glt;
    return true;
}

/* GroupedMatmulSwigluQuant (A8W8, ND weight): (x (M, K), weight (E, K, N), -, -, weightScale (E, N) FLOAT,
 * xScale (M), groupList (E) ends covering every row | output (M, N/2) int8, outputScale (M)). Every act value
 * is made >= 20 (x, the act half of the weight and their scales positive), where swish(a) is a in fp32, so the
 * oracle is exact: the kernel's fp32 steps rounded once from double, max / 127, its reciprocal, the quotient
 * to fp16 then int8, both half to even; bits compare. */
static double gsq_f16(double v) {
    if (v != v || v == 0) return v;
    int e;
    frexp(v, &e);
    const double step = ldexp(1.0, e - 1 >= -14 ? e - 11 : -24);
    return nearbyint(v / step) * step;
}
static bool mk_gsq(fz_in *in, rng *r, fo_prob *p) {
    const int64_t M = fz_range(in, 1, 6), K = fz_range(in, 1, 40), H = fz_range(in, 1, 20), N = 2 * H;
    const int64_t E = fz_range(in, 1, 3);
    int64_t ends[4] = {0}, left = M;
    for (int64_t e = 0; e < E; e++) {
        const int64_t sz = e == E - 1 ? left : fz_range(in, 0, left);
        left -= sz;
        ends[e + 1] = ends[e] + sz;
    }
    int8_t *x = (int8_t *)fo_new(p, 0, ACL_INT8, 2, M, K, 0), *w = (int8_t *)fo_new(p, 1, ACL_INT8, 3, E, K, N);
    for (int64_t i = 0; i < M * K; i++) x[i] = (int8_t)rrange(r, 1, 3);
    for (int64_t i = 0; i < E * K * N; i++) w[i] = i % N < H ? (int8_t)rrange(r, 1, 3) : (int8_t)rnext(r);
    float *ws = (float *)(void *)fo_new(p, 4, ACL_FLOAT, 2, E, N, 0), *xs = (float *)(void *)fo_new(p, 5, ACL_FLOAT, 1, M, 0, 0);
    for (int64_t i = 0; i < E * N; i++) ws[i] = i % N < H ? (float)(20 + rrange(r, 0, 64) / 8.0) : (float)((rrange(r, 0, 64) - 32) / 128.0);
    for (int64_t m = 0; m < M; m++) xs[m] = (float)(1 + rrange(r, 0, 31) / 32.0);
    uint8_t *gl = fo_new(p, 6, ACL_INT64, 1, E, 0, 0);
    for (int64_t e = 0; e < E; e++) put_idx(ACL_INT64, gl, e, ends[e + 1]);
    fo_new(p, 7, ACL_INT8, 2, M, H, 0);
    fo_new(p, 8, ACL_FLOAT, 1, M, 0, 0);
    int8_t *q = (int8_t *)fo_want(p, 7);
    float *qs = (float *)(void *)fo_want(p, 8);
    float c[40], sv[20];
    for (int64_t e = 0; e < E; e++)
        for (int64_t m = ends[e]; m < ends[e + 1]; m++) {
            for (int64_t n = 0; n < N; n++) {
                int64_t acc = 0;
                for (int64_t k = 0; k < K; k++) acc += (int64_t)x[m * K + k] * w[(e * K + k) * N + n];
                c[n] = fo_f32((double)fo_f32((double)(float)acc * xs[m]) * ws[e * N + n]);
            }
            float mx = 0;
            for (int64_t j = 0; j < H; j++) {
                sv[j] = fo_f32((double)c[j] * c[H + j]);
                if (fabsf(sv[j]) > mx) mx = fabsf(sv[j]);
            }
            const float s = fo_f32(mx / 127.0), inv = fo_f32(1.0 / s);
            qs[m] = s;
            for (int64_t j = 0; j < H; j++) {
                const double h = gsq_f16(fo_f32((double)sv[j] * inv));
                q[m * H + j] = (int8_t)(h != h ? 0 : h >= 127 ? 127 : h <= -128 ? -128 : nearbyint(h));
            }
        }
    return true;
}

typedef bool (*mk_fn)(fz_in *in, rng *r, fo_prob *p);
/* One row per operator: its aclnn name and how to make a valid small problem
 * with its oracle (NULL: hostile descriptors and data only, as for an
 * operator registered after this table was last extended). */
/* DequantSwigluQuant (V1): x (R, 2H) FLOAT16/BF16, quant scale (H) or none, dynamic | y INT8 (R, H),
 * scale (R). The oracle does Ascend 950's fp32 steps in double, each rounded to fp32: silu as
 * a / (exp(-a) + 1) with exp rounded once (moefr's Exp), * b, * quant scale, the row's max|v| / 127,
 * v / scale, rint and the clamp (docs/CANN_COMPAT.md, "DequantSwigluQuant"); bytes must match. */
static bool mk_dsq(fz_in *in, rng *r, fo_prob *p) {
    const int dt = fz_u8(in) & 1 ? ACL_BF16 : ACL_FLOAT16;
    const int64_t R = fz_range(in, 1, 5), H = fz_range(in, 1, 20);
    const bool qs = fz_u8(in) & 1, left = fz_u8(in) & 1;
    uint8_t *x = fo_new(p, 0, dt, 2, R, 2 * H, 0);
    fill_small(r, dt, x, R * 2 * H);
    uint8_t *q = NULL;
    if (qs) fill_small(r, ACL_FLOAT, q = fo_new(p, 4, ACL_FLOAT, 1, H, 0, 0), H);
    fo_new(p, 7, ACL_INT8, 2, R, H, 0);
    fo_new(p, 8, ACL_FLOAT, 1, R, 0, 0);
    int8_t *y = (int8_t *)fo_want(p, 7);
    uint8_t *sc = fo_want(p, 8);
    float v[20];
    for (int64_t i = 0; i < R; i++) {
        double mx = 0;
        for (int64_t k = 0; k < H; k++) {
            const double a = fr_decode(dt, x, i * 2 * H + (left ? k : H + k));
            const double b = fr_decode(dt, x, i * 2 * H + (left ? H + k : k));
            const float e = f32r(exp(-a));
            double s = f32r((double)f32r(a / (double)f32r((double)e + 1.0)) * b);
            if (qs) s = f32r(s * fr_decode(ACL_FLOAT, q, k));
            v[k] = (float)s;
            mx = fabs(s) > mx ? fabs(s) : mx;
        }
        const float k = f32r(mx / 127.0);
        memcpy(sc + i * 4, &k, 4);
        for (int64_t j = 0; j < H; j++) {
            double t = f32r((double)v[j] / k);
            t = t != t ? 0.0 : t > 127 ? 127 : t < -128 ? -128 : t;
            y[i * H + j] = (int8_t)nearbyint(t);
        }
    }
    p->a[0].i = left;
    p->a[1].i = 1;
    return true;
}

static const struct {
    const char *name;
    mk_fn make;
} ROWS[] = {
    {"aclnnMoeComputeExpertTokens", mk_cet},
    {"aclnnMoeTokenPermuteGrad", mk_tpg},
    {"aclnnMoeInitRoutingV2Grad", mk_irg},
    {"aclnnMoeFinalizeRoutingV2", mk_frv2},
    {"aclnnMoeFinalizeRouting", mk_fr1},
    {"aclnnMoeTokenUnpermute", mk_tu},
    {"aclnnMoeInitRoutingV2", mk_irv2},
    {"aclnnMoeTokenPermute", mk_tp},
    {"aclnnMoeGatingTopKSoftmax", mk_gate1},
    {"aclnnMoeGatingTopKSoftmaxV2", mk_gate2},
    {"aclnnMoeInitRouting", mk_ir1},
    {"aclnnMoeFinalizeRoutingV2Grad", mk_frg},
    {"aclnnMoeTokenUnpermuteGrad", mk_tug},
    {"aclnnSwiGlu", mk_swiglu},
    {"aclnnSwiGluGrad", mk_swiglu_grad},
    {"aclnnGroupedMatmulV4", mk_gmm4},
    {"aclnnMoeReRouting", mk_rr},
    {"aclnnMoeInitRoutingV3", mk_irv3},
    {"aclnnMoeInitRoutingQuantV2", mk_irq2},
    {"aclnnMoeInitRoutingQuant", mk_irq1},
    {"aclnnMoeTokenPermuteWithRoutingMap", mk_pwrm},
    {"aclnnGroupedMatmulAdd", mk_gmma},
    {"aclnnGroupedMatmulAddV2", mk_gmma2},
    {"aclnnDynamicQuantV2", mk_dq2},
    {"aclnnGroupedMatmulFinalizeRoutingWeightNz", mk_gfr},
    {"aclnnGroupedMatmulSwigluQuant", mk_gsq},
    {"aclnnDequantSwigluQuant", mk_dsq},
};
static mk_fn row_of(const char *name) {
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
        if (strcmp(ROWS[i].name, name) == 0) return ROWS[i].make;
    return NULL;
}

/* ======== the generic driver ======== */

static bool trace; /* FUZZ_OPS_TRACE=1: one line per input (operator, scenario, verdicts) */
/* MOEFR_SOC set (e.g. ascend910b: other dtype tables and tiling rules) or
 * MOEFR_STRICT set (repeated indices refused): a "valid" problem may be
 * refused and the oracles (Ascend 950's default rules) are not compared;
 * every other guarantee is checked as usual. */
static bool other_soc;

typedef struct {
    aclTensor *t;
    uint8_t *buf; /* exact-size storage, or NULL */
    size_t bytes;
    int dt, nd;
    int64_t dims[MAXND], strides[MAXND], off;
} live_t;

static bool make_live(live_t *L, int dt, int nd, const int64_t *dims, const int64_t *strides, int64_t off,
                      bool storage_null) {
    memset(L, 0, sizeof *L);
    L->dt = dt;
    L->nd = nd;
    memcpy(L->dims, dims, (size_t)nd * sizeof *dims);
    memcpy(L->strides, strides, (size_t)nd * sizeof *strides);
    L->off = off;
    /* storage: enough elements for the view (the library refuses views outside it) */
    int64_t hi = off, empty = 0;
    for (int i = 0; i < nd; i++) {
        if (dims[i] == 0) empty = 1;
        if (dims[i] > 0 && strides[i] > 0) {
            if (dims[i] - 1 > INT64_MAX / strides[i] || hi > INT64_MAX - (dims[i] - 1) * strides[i]) {
                hi = INT64_MAX / 2;
                break;
            }
            hi += (dims[i] - 1) * strides[i];
        }
    }
    const int64_t n = empty ? off + 1 : hi >= INT64_MAX / 2 ? INT64_MAX / 2 : hi + 1;
    const size_t es = esize(dt);
    const bool real = !storage_null && n > 0 && (uint64_t)n <= MAX_STORAGE_BYTES / es;
    int64_t sd = n > 0 ? n : 1;
    if (real) {
        L->bytes = (size_t)n * es;
        L->buf = malloc(L->bytes);
    }
    L->t = aclCreateTensor(dims, (uint64_t)nd, (aclDataType)dt, strides, off, ACL_FORMAT_ND, &sd, 1, L->buf);
    if (L->t == NULL) {
        FZ_REQUIRE(fz_msg_ok(), "aclCreateTensor refused without a message");
        free(L->buf);
        L->buf = NULL;
        return false;
    }
    return true;
}
static void drop_live(live_t *L) {
    if (L->t) aclDestroyTensor(L->t);
    free(L->buf);
    memset(L, 0, sizeof *L);
}
/* Offset (elements) of dense element i in the view. */
static int64_t view_at(const live_t *L, int64_t i) {
    int64_t o = L->off;
    for (int d = L->nd - 1; d >= 0; d--) {
        if (L->dims[d] == 0) return L->off;
        o += (i % L->dims[d]) * L->strides[d];
        i /= L->dims[d];
    }
    return o;
}
static int64_t live_numel(const live_t *L) {
    int64_t n = 1;
    for (int d = 0; d < L->nd; d++) n *= L->dims[d];
    return n;
}

/* Hostile contents: index dtypes from values around every boundary, floats
 * with NaN, infinities, subnormals, huge and small values, else random bytes. */
static void fill_hostile(rng *r, live_t *L) {
    if (L->buf == NULL) return;
    const size_t es = esize(L->dt), n = L->bytes / es;
    for (size_t i = 0; i < n; i++) {
        uint8_t *q = L->buf + i * es;
        const uint64_t c = rnext(r);
        if (is_int(L->dt)) {
            static const int64_t edge[] = {-1, 0, 1, 2, 3, 7, INT32_MAX, INT32_MIN, -2, 1 << 20, INT64_MAX, INT64_MIN};
            int64_t v = (c & 3) ? (int64_t)(c >> 8) % 12 - 1 : edge[(c >> 8) % 12];
            put_idx(L->dt, L->buf, (int64_t)i, v);
        } else if (L->dt == ACL_FLOAT) {
            static const uint32_t fe[] = {0x7fc00000u, 0xff800000u, 0x7f800000u, 0x00000001u, 0x80000000u,
                                          0x7f7fffffu, 0x3f800000u, 0xffc00001u};
            uint32_t b = (c & 3) == 0 ? fe[(c >> 8) % 8] : (c & 3) == 1 ? (uint32_t)(c >> 16) : 0x3f800000u ^ (uint32_t)((c >> 20) & 0x807fffffu);
            memcpy(q, &b, 4);
        } else if (L->dt == ACL_FLOAT16 || L->dt == ACL_BF16) {
            static const uint16_t he[] = {0x7e00, 0xfc00, 0x7c00, 0x0001, 0x8000, 0x7bff, 0x7f80, 0xff80};
            uint16_t b = (c & 3) == 0 ? he[(c >> 8) % 8] : (uint16_t)(c >> 16);
            memcpy(q, &b, 2);
        } else {
            for (size_t k = 0; k < es; k++) q[k] = (uint8_t)(c >> (8 * k));
        }
    }
}

typedef struct {
    const mf_op_entry *op;
    int nt;
    live_t L[NT];
    mf_attr_val a[MF_ATTR_MAX];
    aclIntArray *arr;
} call_t;

static bool outputs_same(const call_t *c, uint8_t *const *snap) {
    for (int i = c->op->sig->n_in; i < c->nt; i++)
        if (c->L[i].buf && memcmp(c->L[i].buf, snap[i], c->L[i].bytes) != 0) return false;
    return true;
}
static void snapshot(const call_t *c, uint8_t **snap) {
    for (int i = 0; i < c->nt; i++) {
        snap[i] = NULL;
        if (c->L[i].buf) {
            snap[i] = malloc(c->L[i].bytes);
            memcpy(snap[i], c->L[i].buf, c->L[i].bytes);
        }
    }
}
static void free_snap(uint8_t **snap, int n) {
    for (int i = 0; i < n; i++) free(snap[i]);
}

/* The executor slot of public tensor i (matched by parameter name: an
 * executor's slots may be another operator's, e.g. TokenUnpermute's on
 * Ascend 950 are FinalizeRoutingV2's); -1 when it has none. */
static int exec_slot(const aclOpExecutor *e, const char *name) {
    for (int j = 0; j < e->n_in + e->n_out; j++)
        if (e->names[j] && strcmp(e->names[j], name) == 0) return j;
    return -1;
}

/* Phase 2 and executor reuse on the call's current contents. Returns the
 * status of the last full run (the outputs hold its result), or NO_RUN when
 * the only run had a workspace one byte short. */
#define NO_RUN (-1)
static aclnnStatus run_phase2(fz_in *in, call_t *c, aclOpExecutor *ex, uint64_t ws) {
    const mf_op_entry *op = c->op;
    const uint8_t how = fz_u8(in);
    const bool repeat = how & 1, short_ws = (how & 6) == 6 && ws > 0;
    if (repeat) {
        aclnnStatus rc = aclSetAclOpExecutorRepeatable(ex);
        FZ_REQUIRE(rc == ACLNN_SUCCESS, "%s: aclSetAclOpExecutorRepeatable gave %d", op->sig->name, (int)rc);
    }
    void *wsp = ws ? malloc(ws) : NULL;
    uint8_t *before[NT];
    snapshot(c, before);
    aclnnStatus rc = op->run(wsp, short_ws ? ws - 1 : ws, ex, NULL);
    if (short_ws) {
        FZ_REQUIRE(rc != ACLNN_SUCCESS, "%s: ran with a workspace one byte short", op->sig->name);
    }
    if (rc != ACLNN_SUCCESS) {
        REQUIRE_REFUSAL(rc, "phase 2");
        FZ_REQUIRE(outputs_same(c, before), "%s: phase 2 refused (%d) but wrote an output", op->sig->name, (int)rc);
    }
    if (!repeat) {
        /* the executor is spent either way */
        aclnnStatus r2 = op->run(wsp, ws, ex, NULL);
        FZ_REQUIRE(r2 == ACLNN_ERR_PARAM_INVALID, "%s: a spent executor gave %d", op->sig->name, (int)r2);
        FZ_REQUIRE(fz_msg_ok(), "%s: spent executor refused without a message", op->sig->name);
        free_snap(before, c->nt);
        free(wsp);
        return short_ws ? NO_RUN : rc;
    }
    if (short_ws) { /* a repeatable executor survives a refusal: run it properly now */
        rc = op->run(wsp, ws, ex, NULL);
        if (rc != ACLNN_SUCCESS) {
            REQUIRE_REFUSAL(rc, "phase 2");
            FZ_REQUIRE(outputs_same(c, before), "%s: phase 2 refused but wrote an output", op->sig->name);
        }
    }
    /* Rerun on the same contents: the same verdict and the same bits. Then move
     * every tensor to fresh storage holding what the old one held before the
     * first run, scribble over the old storage, and run again. */
    uint8_t *after[NT];
    snapshot(c, after);
    for (int i = op->sig->n_in; i < c->nt; i++)
        if (c->L[i].buf) memcpy(c->L[i].buf, before[i], c->L[i].bytes);
    aclnnStatus r2 = op->run(wsp, ws, ex, NULL);
    FZ_REQUIRE(r2 == rc, "%s: repeat run gave %d after %d", op->sig->name, (int)r2, (int)rc);
    if (r2 != ACLNN_SUCCESS) REQUIRE_REFUSAL(r2, "repeat phase 2");
    FZ_REQUIRE(outputs_same(c, after), "%s: a repeat run gave other bits", op->sig->name);
    const uint8_t setter = fz_u8(in);
    uint8_t *old[NT] = {0};
    bool moved = true;
    for (int i = 0; i < c->nt && moved; i++) {
        live_t *L = &c->L[i];
        if (!L->t || !L->buf) continue;
        const int j = exec_slot(ex, op->sig->names[i]);
        if (j < 0 || ex->slot[j] == NULL) continue;
        uint8_t *nb = malloc(L->bytes);
        memcpy(nb, i < op->sig->n_in ? L->buf : before[i], L->bytes);
        aclnnStatus sr;
        if (setter & 1)
            sr = aclSetTensorAddr(ex, (size_t)j, L->t, nb);
        else if (j < ex->n_in)
            sr = aclSetInputTensorAddr(ex, (size_t)j, L->t, nb);
        else
            sr = aclSetOutputTensorAddr(ex, (size_t)(j - ex->n_in), L->t, nb);
        FZ_REQUIRE(sr == ACLNN_SUCCESS, "%s: address setter for %s gave %d", op->sig->name, op->sig->names[i],
                   (int)sr);
        old[i] = L->buf;
        memset(old[i], 0xA5, L->bytes);
        L->buf = nb;
    }
    r2 = op->run(wsp, ws, ex, NULL);
    FZ_REQUIRE(r2 == rc, "%s: run after moving the tensors gave %d after %d", op->sig->name, (int)r2, (int)rc);
    FZ_REQUIRE(outputs_same(c, after), "%s: the run after moving the tensors gave other bits", op->sig->name);
    for (int i = 0; i < c->nt; i++) {
        if (old[i] == NULL) continue;
        for (size_t b = 0; b < c->L[i].bytes; b++)
            FZ_REQUIRE(old[i][b] == 0xA5, "%s: the run wrote %s's old storage", op->sig->name, op->sig->names[i]);
        free(old[i]);
    }
    /* negative setter cases on the live executor */
    aclnnStatus sr = aclSetInputTensorAddr(ex, (size_t)ex->n_in + (setter >> 4), c->L[0].t ? c->L[0].t : NULL, NULL);
    FZ_REQUIRE(sr != ACLNN_SUCCESS && is_cann_code(sr) && fz_msg_ok(), "%s: out-of-range setter gave %d",
               op->sig->name, (int)sr);
    if (c->L[0].t) aclSetRawTensorAddr(c->L[0].t, c->L[0].buf); /* the failed setter may have moved it */
    aclnnStatus dr = aclDestroyAclOpExecutor(ex);
    FZ_REQUIRE(dr == ACLNN_SUCCESS, "%s: destroy gave %d", op->sig->name, (int)dr);
    dr = aclDestroyAclOpExecutor(ex);
    FZ_REQUIRE(dr == ACLNN_ERR_PARAM_INVALID && fz_msg_ok(), "%s: destroying twice gave %d", op->sig->name, (int)dr);
    dr = op->run(wsp, ws, ex, NULL);
    FZ_REQUIRE(dr == ACLNN_ERR_PARAM_INVALID && fz_msg_ok(), "%s: a destroyed executor gave %d", op->sig->name,
               (int)dr);
    free_snap(before, c->nt);
    free_snap(after, c->nt);
    free(wsp);
    return rc;
}

/* Phase 1 with the call's tensors and attributes; sometimes NULL out-pointers. */
static aclnnStatus phase1(fz_in *in, call_t *c, uint64_t *ws, aclOpExecutor **ex, bool allow_null_out) {
    const mf_op_entry *op = c->op;
    const aclTensor *t[NT] = {0};
    for (int i = 0; i < c->nt; i++) t[i] = c->L[i].t;
    const uint8_t nulls = allow_null_out ? fz_u8(in) : 0;
    uint64_t *wsp = (nulls & 0x1f) == 1 ? NULL : ws;
    aclOpExecutor **exp = (nulls & 0x1f) == 2 ? NULL : ex;
    uint8_t *snap[NT];
    snapshot(c, snap);
    *ex = NULL;
    aclnnStatus rc = op->gws(t, c->a, wsp, exp);
    if (rc != ACLNN_SUCCESS) {
        REQUIRE_REFUSAL(rc, "phase 1");
        FZ_REQUIRE(outputs_same(c, snap), "%s: phase 1 refused (%d) but wrote an output", op->sig->name, (int)rc);
        FZ_REQUIRE(*ex == NULL, "%s: phase 1 refused but returned an executor", op->sig->name);
    } else {
        FZ_REQUIRE(wsp && exp && *ex != NULL, "%s: phase 1 accepted without returning an executor", op->sig->name);
        FZ_REQUIRE(outputs_same(c, snap), "%s: phase 1 wrote an output", op->sig->name);
    }
    free_snap(snap, c->nt);
    return rc;
}

static void drop_call(call_t *c) {
    for (int i = 0; i < c->nt; i++) drop_live(&c->L[i]);
    if (c->arr) aclDestroyIntArray(c->arr);
}

static void draw_attrs(fz_in *in, call_t *c) {
    const mf_op_entry *op = c->op;
    for (int a = 0; a < op->nattr; a++) {
        const mf_attr_desc *d = &op->attrs[a];
        switch (d->kind) {
        case MF_ATTR_BOOL: c->a[a].i = fz_u8(in) & 1; break;
        case MF_ATTR_DOUBLE: c->a[a].d = (double)fz_i64(in, d->lo, d->hi); break;
        case MF_ATTR_INT_ARRAY: {
            const uint8_t b = fz_u8(in);
            if (b & 1) {
                int64_t v[4];
                const int n = (int)fz_range(in, d->lo, d->hi + 1);
                for (int k = 0; k < n && k < 4; k++) v[k] = fz_i64(in, -1, 16);
                c->arr = aclCreateIntArray(v, (uint64_t)(n < 4 ? n : 4));
            }
            c->a[a].arr = c->arr;
            break;
        }
        default: c->a[a].i = fz_i64(in, d->lo - 1, d->hi + 1); break;
        }
    }
}

/* Scenario 1: descriptors, attributes and contents from the table alone. */
static void hostile(fz_in *in, const mf_op_entry *op) {
    call_t c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.nt = op->sig->n_in + op->sig->n_out;
    rng r = {fz_u64(in)};
    const mf_op_def *d = op->sig;
    const int col = fz_u8(in) % d->ncols;
    /* one shared "size" per run keeps related dims equal more often than chance */
    int64_t sz[4];
    for (int k = 0; k < 4; k++) sz[k] = fz_range(in, 0, 6);
    for (int i = 0; i < c.nt; i++) {
        const uint8_t b = fz_u8(in);
        const bool req = d->flags[i] & MF_T_REQUIRED;
        if ((req && b == 255) || (!req && (b & 1))) continue;
        int dt = d->cols[col][i];
        if (dt == MF_DT_ANY || (b & 0x70) == 0x70) {
            static const int any[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_INT64, ACL_BOOL, ACL_INT8,
                                      ACL_UINT8, ACL_DOUBLE, 99};
            dt = any[fz_u8(in) % 10];
        }
        const int nd = (int)fz_range(in, 0, 4) % 4 + ((b & 0x80) ? 0 : 1) - (b == 0x82 ? 1 : 0);
        int64_t dims[MAXND], strides[MAXND];
        for (int k = 0; k < nd && k < MAXND; k++) {
            const uint8_t s = fz_u8(in);
            dims[k] = s < 200 ? sz[s & 3] : s < 250 ? (int64_t)(s % 9) : fz_i64(in, -1, 70000);
        }
        int64_t run = 1, off = 0;
        const uint8_t sm = fz_u8(in);
        for (int k = nd - 1; k >= 0; k--) {
            strides[k] = run;
            if ((sm & 3) == 3) strides[k] = fz_i64(in, -2, 9);
            if ((sm & 3) == 2 && k == nd - 2) strides[k] += fz_range(in, 1, 3); /* padded rows (run <= 2^24) */
            if (dims[k] > 0 && __builtin_mul_overflow(run, dims[k], &run)) run = 1 << 24;
            if (run > (1 << 24)) run = 1 << 24;
        }
        /* an offset that keeps negative strides inside the storage (saturated:
         * the library refuses what overflows, the harness must not overflow) */
        for (int k = 0; k < nd; k++) {
            int64_t reach;
            if (strides[k] < 0 && dims[k] > 1 &&
                (strides[k] == INT64_MIN || __builtin_mul_overflow(-strides[k], dims[k] - 1, &reach) ||
                 __builtin_add_overflow(off, reach, &off)))
                off = INT64_MAX / 4;
        }
        if (off > INT64_MAX / 4) off = INT64_MAX / 4;
        if (sm & 4) off += fz_range(in, 0, 3);
        make_live(&c.L[i], dt, nd < 0 ? 0 : nd, dims, strides, off, (sm & 0xf8) == 0xf8);
        fill_hostile(&r, &c.L[i]);
    }
    draw_attrs(in, &c);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus p1 = phase1(in, &c, &ws, &ex, true);
    if (trace) fprintf(stderr, "fuzz_ops: %s hostile phase 1 %d\n", op->sig->name, (int)p1);
    if (p1 == ACLNN_SUCCESS) {
        bool all_data = true;
        for (int i = 0; i < c.nt; i++)
            if (c.L[i].t && live_numel(&c.L[i]) > 0 && c.L[i].buf == NULL) all_data = false;
        if (all_data && ws <= (64u << 20)) {
            const aclnnStatus p2 = run_phase2(in, &c, ex, ws);
            if (trace) fprintf(stderr, "fuzz_ops: %s hostile phase 2 %d\n", op->sig->name, (int)p2);
        } else {
            aclnnStatus rc = aclDestroyAclOpExecutor(ex);
            FZ_REQUIRE(rc == ACLNN_SUCCESS, "%s: destroying an unused executor gave %d", op->sig->name, (int)rc);
        }
    }
    drop_call(&c);
}

static bool close_enough(int dt, const uint8_t *got, const uint8_t *want, int64_t n, double tol, int64_t *bad) {
    for (int64_t i = 0; i < n; i++) {
        const double g = fr_decode(dt, got, i), w = fr_decode(dt, want, i);
        if (!(fabs(g - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1))) {
            *bad = i;
            return false;
        }
    }
    return true;
}

/* Scenario 2: the operator's valid small problem, clean (oracle) or corrupted. */
static void valid(fz_in *in, const mf_op_entry *op, mk_fn make, bool corrupt) {
    fo_prob p;
    memset(&p, 0, sizeof p);
    rng r = {fz_u64(in)};
    if (!make(in, &r, &p)) {
        fo_free(&p);
        return;
    }
    call_t c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.nt = op->sig->n_in + op->sig->n_out;
    const uint8_t layout = fz_u8(in);
    for (int i = 0; i < c.nt; i++) {
        fo_t *t = &p.t[i];
        if (!t->present) continue;
        int64_t strides[MAXND], run = 1;
        const bool pad = i < op->sig->n_in && ((layout >> (i & 7)) & 1);
        for (int k = t->nd - 1; k >= 0; k--) {
            strides[k] = run;
            if (pad && (k == t->nd - 2 || t->nd == 1)) strides[k] += (t->nd == 1 ? 1 : 2);
            run = strides[k] * t->dims[k];
        }
        const bool ok = make_live(&c.L[i], t->dt, t->nd, t->dims, strides, pad ? 1 : 0, false);
        FZ_REQUIRE(ok, "%s: valid tensor %s refused", op->sig->name, op->sig->names[i]);
        /* outputs start as random bytes (in/out ones as their data), inputs hold the problem */
        for (size_t b = 0; b < c.L[i].bytes; b++) c.L[i].buf[b] = (uint8_t)rnext(&r);
        if ((i < op->sig->n_in || p.init[i]) && t->data) {
            const size_t es = esize(t->dt);
            const int64_t n = numel_of(t);
            for (int64_t e = 0; e < n; e++)
                memcpy(c.L[i].buf + (size_t)view_at(&c.L[i], e) * es, t->data + (size_t)e * es, es);
        }
    }
    memcpy(c.a, p.a, sizeof c.a);
    if (p.has_arr) { /* the problem's int array, in every int-array attribute slot */
        c.arr = aclCreateIntArray(p.arr, (uint64_t)p.narr);
        for (int a = 0; a < op->nattr; a++)
            if (op->attrs[a].kind == MF_ATTR_INT_ARRAY) c.a[a].arr = c.arr;
    }
    if (corrupt) {
        /* some index values hostile, some data NaN / Inf */
        const uint8_t what = fz_u8(in);
        for (int i = 0; i < op->sig->n_in; i++) {
            live_t *L = &c.L[i];
            if (!L->buf || !((what >> (i & 7)) & 1)) continue;
            const int64_t n = live_numel(L);
            const int hits = 1 + (int)(rnext(&r) % 3);
            for (int h = 0; h < hits && n > 0; h++) {
                const int64_t at = view_at(L, (int64_t)(rnext(&r) % (uint64_t)n));
                static const int64_t bad[] = {-1, -2, INT32_MAX, INT32_MIN, 1 << 16, 64, 7};
                if (is_int(L->dt))
                    put_idx(L->dt, L->buf, at, bad[rnext(&r) % 7]);
                else if (L->dt == ACL_FLOAT) {
                    static const uint32_t fb[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu};
                    memcpy(L->buf + at * 4, &fb[rnext(&r) % 4], 4);
                } else if (is_float(L->dt)) {
                    static const uint16_t hb[2][4] = {{0x7e00, 0x7c00, 0xfc00, 0x7bff}, {0x7fc0, 0x7f80, 0xff80, 0x7f7f}};
                    memcpy(L->buf + at * 2, &hb[L->dt == ACL_BF16][rnext(&r) % 4], 2);
                } else if (L->dt == ACL_BOOL) {
                    L->buf[at] = (uint8_t)rnext(&r); /* a bool byte that is not 0/1 */
                }
            }
        }
    }
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = phase1(in, &c, &ws, &ex, false);
    FZ_REQUIRE(rc == ACLNN_SUCCESS || other_soc, "%s: phase 1 refused a valid problem (%d)", op->sig->name, (int)rc);
    if (rc != ACLNN_SUCCESS) {
        drop_call(&c);
        fo_free(&p);
        return;
    }
    if (other_soc) corrupt = true; /* guarantees only */
    rc = run_phase2(in, &c, ex, ws);
    if (trace) fprintf(stderr, "fuzz_ops: %s valid%s phase 2 %d%s\n", op->sig->name, corrupt ? " corrupted" : "", (int)rc,
                       !corrupt && rc != NO_RUN ? " (oracle checked)" : "");
    if (!corrupt && rc != NO_RUN) {
        FZ_REQUIRE(rc == ACLNN_SUCCESS, "%s: phase 2 refused a valid problem (%d)", op->sig->name, (int)rc);
        for (int i = op->sig->n_in; i < c.nt; i++) {
            if (!p.want[i]) continue;
            const live_t *L = &c.L[i];
            const int64_t n = live_numel(L);
            if (p.tol[i] > 0) {
                int64_t bad = 0;
                FZ_REQUIRE(close_enough(L->dt, L->buf, p.want[i], n, p.tol[i], &bad),
                           "%s: %s[%lld] = %.9g, oracle %.9g", op->sig->name, op->sig->names[i], (long long)bad,
                           fr_decode(L->dt, L->buf, bad), fr_decode(L->dt, p.want[i], bad));
            } else {
                const size_t es = esize(L->dt);
                for (int64_t e = 0; e < n; e++)
                    FZ_REQUIRE(memcmp(L->buf + e * es, p.want[i] + e * es, es) == 0,
                               "%s: %s[%lld] differs from the oracle (got %lld, want %lld as integers; %.9g / %.9g as data)",
                               op->sig->name, op->sig->names[i], (long long)e, (long long)get_idx(is_int(L->dt) ? L->dt : ACL_INT32, L->buf, e),
                               (long long)get_idx(is_int(L->dt) ? L->dt : ACL_INT32, p.want[i], e),
                               is_float(L->dt) ? fr_decode(L->dt, L->buf, e) : 0.0,
                               is_float(L->dt) ? fr_decode(L->dt, p.want[i], e) : 0.0);
            }
        }
    }
    drop_call(&c);
    fo_free(&p);
}

static const mf_op_entry *pinned;
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("MOEFR_NUM_THREADS", "2", 0);
    aclInit(NULL);
    trace = getenv("FUZZ_OPS_TRACE") != NULL;
    other_soc = (getenv("MOEFR_SOC") != NULL && getenv("MOEFR_SOC")[0] != '\0') ||
                (getenv("MOEFR_STRICT") != NULL && getenv("MOEFR_STRICT")[0] != '\0');
    if (getenv("FUZZ_OPS_LIST")) { /* the registered operators, one a line (make fuzz-ops) */
        int n = 0;
        const mf_op_entry *const *all = mf_op_entries(&n);
        for (int i = 0; i < n; i++) printf("%s\n", all[i]->sig->name);
        exit(0);
    }
    const char *want = getenv("MOEFR_FUZZ_OP");
    if (want && *want) {
        int n = 0;
        const mf_op_entry *const *all = mf_op_entries(&n);
        for (int i = 0; i < n; i++)
            if (strcmp(all[i]->sig->name, want) == 0) pinned = all[i];
        if (!pinned) {
            fprintf(stderr, "fuzz_ops: MOEFR_FUZZ_OP=%s is not a registered operator\n", want);
            exit(2);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size};
    int n = 0;
    const mf_op_entry *const *all = mf_op_entries(&n);
    const uint8_t pick = fz_u8(&in);
    const mf_op_entry *op = pinned ? pinned : all[pick % n];
    const uint8_t scenario = fz_u8(&in);
    const mk_fn make = row_of(op->sig->name);
    if (make == NULL || scenario % 3 == 0)
        hostile(&in, op);
    else
        valid(&in, op, make, scenario % 3 == 2);
    return 0;
}
