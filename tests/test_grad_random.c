/* test_grad_random.c - aclnnMoeFinalizeRoutingV2Grad against the float64 oracle
 * (ref.c) on random problems: every mode x dtype x scales dtype x optional inputs
 * x strided views x K 1..9 x H in {1, 3, 17, 1000+} plus R = 0, H = 0, K = 0. */
#include <math.h>

#include "moefr/moefr.h"
#include "ref.h"
#include "testutil.h"

enum { MODE0_ALL, MODE0_ACTIVE, MODE0_ACTIVE_BIG, MODE1, NUM_MODES };
static const char *const mode_names[] = {"mode0/active=0", "mode0/0<active<RK", "mode0/active>=RK", "mode1"};
/* Optional inputs: which of expandedX, scales, expertIdx, bias are given. */
enum { OPT_NONE, OPT_X_ONLY, OPT_BIAS_NOSCALES, OPT_SCALES, OPT_SCALES_BIAS, OPT_SCALES_EIDX, NUM_OPTS };
static const char *const opt_names[] = {"none", "x", "x+bias+eidx(no scales)", "scales+x", "scales+x+bias+eidx",
                                        "scales+x+eidx(no bias)"};
enum { LAY_CONTIG, LAY_TRANSPOSED, LAY_PADDED, LAY_NEGATIVE, LAY_3D_GROUPS, LAY_BROADCAST, LAY_MIXED, NUM_LAYS };
static const char *const lay_names[] = {"contiguous", "transposed", "padded+offset", "negative",
                                        "3-D uncollapsed", "stride-0", "mixed"};

static const aclDataType k_acl_dt[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

/* ---- strided inputs ---- */

typedef struct view {
    aclTensor *t;
    unsigned char *mem; /* exactly the storage, so ASan sees any read outside it */
    unsigned char *copy;
    int64_t storage, offset;
    int nd;
    int64_t dims[3], strides[3];
    size_t es;
} view;

static int64_t pos_of(const view *v, const int64_t *ix) {
    int64_t p = v->offset;
    for (int i = 0; i < v->nd; i++) p += ix[i] * v->strides[i];
    return p;
}

/* Strides and offset for one of the layout schemes; inputs only. */
static void make_layout(view *v, int scheme, int may_broadcast) {
    const int nd = v->nd;
    int perm[3] = {0, 1, 2}; /* storage order, outermost first */
    int64_t pad[3] = {0, 0, 0}, step = 1, off = 0, tail = 0;
    int neg[3] = {0, 0, 0}, bc[3] = {0, 0, 0};
    switch (scheme) {
    case LAY_CONTIG: break;
    case LAY_TRANSPOSED:
        for (int i = 0; i < nd; i++) perm[i] = nd - 1 - i;
        if (nd == 3 && tu_chance(50)) { perm[0] = 1; perm[1] = 0; perm[2] = 2; }
        off = tu_below(4);
        break;
    case LAY_PADDED:
        for (int i = 0; i < nd; i++) pad[i] = tu_int(1, 5);
        step = tu_int(1, 2);
        off = tu_below(8);
        tail = tu_below(6);
        break;
    case LAY_NEGATIVE:
        for (int i = 0; i < nd; i++) neg[i] = tu_chance(60);
        neg[tu_below(nd)] = 1;
        for (int i = 0; i < nd; i++) pad[i] = tu_chance(50) ? tu_below(3) : 0;
        off = tu_below(4);
        break;
    case LAY_3D_GROUPS: /* the (E, C) dims do not fold into one row stride */
        if (nd == 3) pad[0] = tu_int(1, 7);
        else pad[0] = tu_int(1, 3);
        off = tu_below(5);
        break;
    case LAY_BROADCAST:
        if (may_broadcast) bc[tu_below(nd)] = 1;
        pad[0] = tu_below(2);
        break;
    default: /* everything at random */
        if (tu_chance(50)) {
            for (int i = nd - 1; i > 0; i--) {
                int j = (int)tu_below(i + 1), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        }
        for (int i = 0; i < nd; i++) {
            pad[i] = tu_chance(40) ? tu_int(1, 4) : 0;
            neg[i] = tu_chance(25);
            bc[i] = may_broadcast && tu_chance(10);
        }
        step = tu_chance(20) ? 2 : 1;
        off = tu_below(6);
        tail = tu_below(4);
        break;
    }
    /* innermost storage dim gets `step`; each outer one the extent of the inner plus padding */
    int64_t s = step;
    for (int q = nd - 1; q >= 0; q--) {
        int d = perm[q];
        v->strides[d] = q < nd - 1 ? s + pad[d] : s;
        s = v->strides[d] * (v->dims[d] > 0 ? v->dims[d] : 1);
    }
    int64_t numel = 1, reach = 0, back = 0;
    for (int i = 0; i < nd; i++) numel *= v->dims[i];
    for (int i = 0; i < nd; i++) {
        if (bc[i]) v->strides[i] = 0;
        if (v->dims[i] == 0) continue;
        reach += (v->dims[i] - 1) * v->strides[i];
        if (neg[i]) {
            back += (v->dims[i] - 1) * v->strides[i];
            v->strides[i] = -v->strides[i];
        }
    }
    v->offset = off + back;
    v->storage = numel > 0 ? off + reach + 1 + tail : off + 1 + tail;
}

static void make_view(view *v, int nd, const int64_t *dims, aclDataType dt, size_t es, int scheme,
                      int may_broadcast) {
    memset(v, 0, sizeof *v);
    v->nd = nd;
    v->es = es;
    for (int i = 0; i < nd; i++) v->dims[i] = dims[i];
    make_layout(v, scheme, may_broadcast);
    v->mem = malloc((size_t)v->storage * es);
    CHECK(v->mem != NULL);
    for (int64_t i = 0; i < v->storage * (int64_t)es; i++) v->mem[i] = (unsigned char)tu_next();
    /* storage given as 1-D or as (1, n) so both spellings are exercised */
    int64_t sd[2] = {1, v->storage};
    int two = tu_chance(30);
    v->t = aclCreateTensor(v->dims, (uint64_t)nd, dt, v->strides, v->offset, ACL_FORMAT_ND, two ? sd : sd + 1,
                           two ? 2 : 1, v->mem);
    if (v->t == NULL) TU_FAIL("aclCreateTensor of a valid view failed");
}

static void view_store(view *v, const int64_t *ix, uint32_t bits) {
    unsigned char *p = v->mem + pos_of(v, ix) * (int64_t)v->es;
    if (v->es == 4) memcpy(p, &bits, 4);
    else {
        uint16_t h = (uint16_t)bits;
        memcpy(p, &h, 2);
    }
}

static uint32_t view_load(const view *v, const int64_t *ix) {
    const unsigned char *p = v->mem + pos_of(v, ix) * (int64_t)v->es;
    if (v->es == 4) {
        uint32_t b;
        memcpy(&b, p, 4);
        return b;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* Visits every logical index of v in row-major order. */
#define FOR_EACH_INDEX(v, ix, flat)                                                               \
    for (int64_t flat = 0, ix[3] = {0, 0, 0}, n_ = view_numel(v); flat < n_; flat++, advance(v, ix))

static int64_t view_numel(const view *v) {
    int64_t n = 1;
    for (int i = 0; i < v->nd; i++) n *= v->dims[i];
    return n;
}

static void advance(const view *v, int64_t *ix) {
    for (int i = v->nd - 1; i >= 0; i--) {
        if (++ix[i] < v->dims[i]) return;
        ix[i] = 0;
    }
}

/* A random value exact in dt: mostly moderate, with signed zeros, subnormals,
 * tiny and huge values (beyond fp16's range where dt allows). */
static double gen_value(ref_dt dt) {
    int64_t c = tu_below(100);
    double v;
    if (c < 72) v = (tu_unit() * 8.0 - 4.0);
    else if (c < 78) v = 0.0;
    else if (c < 84) { /* a subnormal of dt */
        double minsub = dt == REF_F16 ? 0x1p-24 : dt == REF_BF16 ? 0x1p-133 : 0x1p-149;
        int mb = dt == REF_F16 ? 10 : dt == REF_BF16 ? 7 : 23;
        v = minsub * (double)tu_int(1, ((int64_t)1 << mb) - 1);
    } else if (c < 88) v = ldexp(1.0, (int)tu_int(-20, 4));
    else if (c < 94) v = dt == REF_F16 ? tu_unit() * 65504.0 : tu_unit() * 2e5 + 65504.0; /* overflow fp16 */
    else if (c < 96) v = dt == REF_F16 ? 65504.0 : ldexp(1.0, (int)tu_int(60, 120));
    else v = ldexp(tu_unit() + 0.5, (int)tu_int(-30, 30));
    if (tu_chance(50)) v = -v;
    double r = ref_decode(dt, ref_round(dt, v));
    return isinf(r) ? copysign(65504.0, v) : r; /* inputs stay finite */
}

/* Fills a float view with random values and returns its logical contents
 * (read back, so stride-0 views hold what the library will see). */
static double *fill_float(view *v, ref_dt dt) {
    FOR_EACH_INDEX(v, ix, flat) view_store(v, ix, ref_round(dt, gen_value(dt)));
    int64_t n = view_numel(v);
    double *out = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    CHECK(out != NULL);
    FOR_EACH_INDEX(v, ix, flat) out[flat] = ref_decode(dt, view_load(v, ix));
    return out;
}

static void fill_int(view *v, const int32_t *vals) {
    FOR_EACH_INDEX(v, ix, flat) view_store(v, ix, (uint32_t)vals[flat]);
}

static int32_t *read_int(const view *v) {
    int64_t n = view_numel(v);
    int32_t *out = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    CHECK(out != NULL);
    FOR_EACH_INDEX(v, ix, flat) out[flat] = (int32_t)view_load(v, ix);
    return out;
}

static void snapshot(view *v) {
    v->copy = malloc((size_t)v->storage * v->es);
    CHECK(v->copy != NULL);
    memcpy(v->copy, v->mem, (size_t)v->storage * v->es);
}

static void free_view(view *v) {
    if (v->t) tu_destroy(v->t);
    free(v->mem);
    free(v->copy);
    memset(v, 0, sizeof *v);
}

/* ---- contiguous outputs with poisoned guards ---- */

typedef struct outbuf {
    aclTensor *t;
    unsigned char *mem;
    int64_t front, numel, storage; /* elements */
    size_t es;
    unsigned char poison;
} outbuf;

static void make_out(outbuf *o, int nd, const int64_t *dims, aclDataType dt, size_t es) {
    memset(o, 0, sizeof *o);
    o->es = es;
    o->numel = 1;
    for (int i = 0; i < nd; i++) o->numel *= dims[i];
    o->front = tu_below(3) * (tu_chance(50) ? 1 : 17);
    o->storage = o->front + o->numel + tu_below(9) + 1;
    o->mem = malloc((size_t)o->storage * es);
    CHECK(o->mem != NULL);
    static const unsigned char poisons[] = {0xFF, 0xA5, 0x7F, 0x5A, 0xC3};
    o->poison = poisons[tu_below(5)];
    memset(o->mem, o->poison, (size_t)o->storage * es);
    /* row-major strides; a size-1 dim may carry any stride (still contiguous) */
    int64_t st[3], s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = s;
        if (dims[i] == 1 && tu_chance(25)) st[i] = tu_int(2, 1000);
        s *= dims[i] > 0 ? dims[i] : 1;
    }
    int64_t sd = o->storage;
    o->t = aclCreateTensor(dims, (uint64_t)nd, dt, st, o->front, ACL_FORMAT_ND, &sd, 1, o->mem);
    if (o->t == NULL) TU_FAIL("aclCreateTensor of an output failed");
}

static uint32_t out_bits(const outbuf *o, int64_t i) {
    const unsigned char *p = o->mem + (o->front + i) * (int64_t)o->es;
    if (o->es == 4) {
        uint32_t b;
        memcpy(&b, p, 4);
        return b;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* Bytes [a, b) of the storage still hold the poison. */
static int out_poisoned(const outbuf *o, int64_t a, int64_t b) {
    for (int64_t i = a * (int64_t)o->es; i < b * (int64_t)o->es; i++)
        if (o->mem[i] != o->poison) return 0;
    return 1;
}

static void free_out(outbuf *o) {
    tu_destroy(o->t);
    free(o->mem);
}

/* ---- one case ---- */

typedef struct spec {
    int mode, opt, lay;
    ref_dt dt, sdt;
    int64_t R, K, H;
} spec;

static long long g_style[4];
static long long g_corrupt, g_cases, g_gs_values, g_gs_canonical, g_repeat_runs;
static long long g_gx_subnormal[3], g_gx_inf, g_gx_negzero; /* coverage of the special results */
static double g_worst_gs_ratio;

static void describe(const spec *s, int64_t active, int64_t E, int64_t C, char *buf, size_t n) {
    snprintf(buf, n, "%s dt=%s scales=%s opt=%s layout=%s R=%lld K=%lld H=%lld activeNum=%lld E=%lld C=%lld",
             mode_names[s->mode], ref_name(s->dt), ref_name(s->sdt), opt_names[s->opt], lay_names[s->lay],
             (long long)s->R, (long long)s->K, (long long)s->H, (long long)active, (long long)E, (long long)C);
}

#define CASE_FAIL(...)                                                                \
    do {                                                                              \
        fprintf(stderr, "case #%lld: %s\n", g_cases, desc);                           \
        TU_FAIL(__VA_ARGS__);                                                         \
    } while (0)

static void run_case(const spec *s) {
    const int64_t R = s->R, K = s->K, H = s->H, N = R * K;
    const int has_x = s->opt != OPT_NONE, has_scales = s->opt >= OPT_SCALES;
    const int has_bias = s->opt == OPT_SCALES_BIAS || s->opt == OPT_BIAS_NOSCALES;
    const int has_eidx = has_bias || s->opt == OPT_SCALES_EIDX;
    const int mode = s->mode == MODE1 ? 1 : 0;
    const size_t es = ref_size(s->dt), ses = ref_size(s->sdt);
    const ref_dt gs_dt = has_scales ? s->sdt : s->dt;
    int64_t active = 0, E = 0, C = 0, D0 = N;
    int64_t expert_num = tu_int(-3, 9), expert_cap = tu_int(-3, 9); /* ignored in mode 0 */
    if (s->mode == MODE0_ACTIVE && N > 1) active = tu_int(1, N - 1);
    if (s->mode == MODE0_ACTIVE_BIG) active = N + (tu_chance(50) ? 0 : tu_int(1, 100));
    if (mode == 0 && active > 0 && active < N) D0 = active;
    if (mode == 1) {
        E = tu_int(1, 4);
        C = tu_int(1, 6);
        expert_num = E;
        expert_cap = C;
        D0 = E * C;
        active = tu_int(-5, 50); /* ignored in mode 1 */
    }
    int64_t bias_rows = mode == 1 ? E : tu_int(1, 4);
    char desc[320];
    describe(s, active, E, C, desc, sizeof desc);
    g_cases++;

    /* index values, drawn as CANN's own harnesses draw them (and worse):
     * style 0: a permutation (mode 0) or distinct rows at random slots, -1
     *          elsewhere (mode 1);
     * style 1: golden.py: a permutation of [0, min(D0, N)) in front, -1 after;
     * style 2: uniform with repeats: [0, D0) as the UT data (mode 0), [-1, D0)
     *          as the system-test table (mode 1);
     * style 3: style 0 with a few anomalies: repeated kept rows, values past
     *          D0 or below -1, INT32_MIN / INT32_MAX.
     * The oracle gives them CANN's meaning: out of [0, D0) drops the slot, the
     * last entry naming a row writes it, unnamed rows are +0.0. */
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)(N > 0 ? N : 1));
    CHECK(idx != NULL);
    const int style = (int)tu_below(4);
    g_style[style]++;
    if (style == 1 || style == 2) {
        const int64_t m = N < D0 ? N : D0;
        for (int64_t i = 0; i < N; i++) idx[i] = -1;
        if (style == 1) {
            for (int64_t i = 0; i < m; i++) idx[i] = (int32_t)i;
            for (int64_t i = m - 1; i > 0; i--) {
                int64_t j = tu_below(i + 1);
                int32_t t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
        } else {
            for (int64_t i = 0; i < N; i++)
                idx[i] = D0 == 0 ? -1 : (int32_t)(mode ? tu_int(-1, D0 - 1) : tu_below(D0));
        }
    } else if (mode == 0) { /* a permutation of [0, N) */
        for (int64_t i = 0; i < N; i++) idx[i] = (int32_t)i;
        for (int64_t i = N - 1; i > 0; i--) {
            int64_t j = tu_below(i + 1);
            int32_t t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
    } else { /* m distinct rows of [0, E*C) at random slots, -1 elsewhere */
        int64_t m = tu_int(0, N < D0 ? N : D0);
        if (tu_chance(30)) m = N < D0 ? N : D0;
        int32_t *rows = malloc(sizeof(int32_t) * (size_t)D0);
        int64_t *slots = malloc(sizeof(int64_t) * (size_t)(N > 0 ? N : 1));
        CHECK(rows && slots);
        for (int64_t i = 0; i < D0; i++) rows[i] = (int32_t)i;
        for (int64_t i = 0; i < N; i++) slots[i] = i;
        for (int64_t i = 0; i < m; i++) {
            int64_t a = i + tu_below(D0 - i), b = i + tu_below(N - i);
            int32_t t = rows[i];
            rows[i] = rows[a];
            rows[a] = t;
            int64_t u = slots[i];
            slots[i] = slots[b];
            slots[b] = u;
        }
        for (int64_t i = 0; i < N; i++) idx[i] = -1;
        for (int64_t i = 0; i < m; i++) idx[slots[i]] = rows[i];
        free(rows);
        free(slots);
    }
    if (style == 3 && N > 0) {
        const int64_t n_bad = 1 + tu_below(3);
        for (int64_t q = 0; q < n_bad; q++) {
            const int64_t at = tu_below(N);
            switch (tu_below(4)) {
            case 0: idx[at] = idx[tu_below(N)]; break; /* a repeat (or a second -1) */
            case 1: idx[at] = (int32_t)(D0 + tu_below(3)); break;
            case 2: idx[at] = (int32_t)(-2 - tu_below(3)); break;
            default: idx[at] = tu_chance(50) ? INT32_MAX : INT32_MIN; break;
            }
        }
    }
    int32_t *eidx_vals = malloc(sizeof(int32_t) * (size_t)(N > 0 ? N : 1));
    CHECK(eidx_vals != NULL);
    for (int64_t i = 0; i < N; i++)
        eidx_vals[i] = has_bias ? (int32_t)tu_below(bias_rows)
                                : (int32_t)(tu_chance(50) ? tu_int(-1000, 1000) : tu_below(4)); /* never read */

    /* inputs */
    view vgy, vidx, vx, vs, ve, vb;
    memset(&vx, 0, sizeof vx);
    memset(&vs, 0, sizeof vs);
    memset(&ve, 0, sizeof ve);
    memset(&vb, 0, sizeof vb);
    int64_t dgy[2] = {R, H}, didx[1] = {N}, dsc[2] = {R, K}, db[2] = {bias_rows, H};
    int64_t dx2[2] = {D0, H}, dx3[3] = {E, C, H};
    make_view(&vgy, 2, dgy, k_acl_dt[s->dt], es, s->lay, 1);
    double *gy = fill_float(&vgy, s->dt);
    make_view(&vidx, 1, didx, ACL_INT32, 4, s->lay == LAY_BROADCAST ? LAY_PADDED : s->lay, 0);
    fill_int(&vidx, idx);
    double *x = NULL, *sc = NULL, *bias = NULL;
    if (has_x) {
        make_view(&vx, mode ? 3 : 2, mode ? dx3 : dx2, k_acl_dt[s->dt], es, s->lay, 1);
        x = fill_float(&vx, s->dt);
    }
    if (has_scales) {
        make_view(&vs, 2, dsc, k_acl_dt[s->sdt], ses, s->lay, 1);
        sc = fill_float(&vs, s->sdt);
    }
    int32_t *eidx = NULL;
    if (has_eidx) {
        make_view(&ve, 2, dsc, ACL_INT32, 4, s->lay, has_bias);
        fill_int(&ve, eidx_vals);
        eidx = read_int(&ve);
    }
    if (has_bias) {
        make_view(&vb, 2, db, k_acl_dt[s->dt], es, s->lay, 1);
        bias = fill_float(&vb, s->dt);
    }
    view *inputs[] = {&vgy, &vidx, &vx, &vs, &ve, &vb};
    for (int i = 0; i < 6; i++)
        if (inputs[i]->t) snapshot(inputs[i]);

    /* outputs */
    outbuf ogx, ogs;
    int64_t dgs[2] = {R, has_scales ? K : 1};
    make_out(&ogx, mode ? 3 : 2, mode ? dx3 : dx2, k_acl_dt[s->dt], es);
    make_out(&ogs, 2, dgs, k_acl_dt[gs_dt], ref_size(gs_dt));

    /* oracle */
    ref_grad_in in = {mode, R, has_scales ? K : 1, H, D0, bias_rows, s->dt, gs_dt, gy, idx, x, sc, eidx, bias};
    ref_grad_out want;
    want.gx = malloc(sizeof(uint32_t) * (size_t)(D0 * H > 0 ? D0 * H : 1));
    want.gs = malloc(sizeof(uint32_t) * (size_t)(N > 0 ? N : 1));
    want.gs_exact = malloc(sizeof(long double) * (size_t)(N > 0 ? N : 1));
    want.gs_mag = malloc(sizeof(long double) * (size_t)(N > 0 ? N : 1));
    CHECK(want.gx && want.gs && want.gs_exact && want.gs_mag);
    ref_grad(&in, &want);

    /* now and then one expert index outside [0, bias rows), which CANN would
     * read bias out of bounds with: phase 2 must refuse it, name the first bad
     * position, write nothing (the oracle ran on the valid values before) */
    int corrupt = 0;
    char frag[96] = "";
    if (N > 0 && has_bias && has_scales && tu_chance(4)) {
        corrupt = 1;
        {
            int64_t at = tu_below(N), ix[3] = {at / K, at % K, 0};
            view_store(&ve, ix, (uint32_t)(tu_chance(50) ? bias_rows + tu_below(3) : -1 - tu_below(3)));
            int32_t *now = read_int(&ve);
            for (int64_t q = 0; q < N; q++)
                if (now[q] < 0 || now[q] >= bias_rows) {
                    snprintf(frag, sizeof frag, "expertIdxOptional[%lld][%lld] = %d", (long long)(q / K),
                             (long long)(q % K), (int)now[q]);
                    break;
                }
            free(now);
        }
        for (int i = 0; i < 6; i++) /* the corrupted input is the new reference for "unchanged" */
            if (inputs[i]->t) memcpy(inputs[i]->copy, inputs[i]->mem, (size_t)inputs[i]->storage * inputs[i]->es);
        g_corrupt++;
    }

    /* the two phases */
    uint64_t ws_size = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
        vgy.t, vidx.t, vx.t, vs.t, ve.t, vb.t, mode, active, expert_num, expert_cap, ogx.t, ogs.t, &ws_size, &ex);
    if (rc != ACLNN_SUCCESS) CASE_FAIL("GetWorkspaceSize returned %d", (int)rc);
    if (ex == NULL) CASE_FAIL("no executor");
    unsigned char *ws = ws_size ? malloc(ws_size) : NULL; /* exact size: ASan sees overruns */
    if (ws_size) {
        CHECK(ws != NULL);
        memset(ws, 0xCD, ws_size);
    }
    const int repeat = tu_chance(8);
    if (repeat) CHECK_RC(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    aclrtStream stream = NULL;
    if (tu_chance(20)) CHECK_RC(aclrtCreateStream(&stream), ACL_SUCCESS);
    rc = aclnnMoeFinalizeRoutingV2Grad(ws, ws_size, ex, stream);
    if (corrupt) {
        if (rc != ACLNN_ERR_PARAM_INVALID) CASE_FAIL("a bad value (%s) gave status %d, want 161002", frag, (int)rc);
        if (!tu_msg_has(frag, NULL)) CASE_FAIL("message \"%s\" does not name \"%s\"", tu_msg(), frag);
        if (!out_poisoned(&ogx, 0, ogx.storage) || !out_poisoned(&ogs, 0, ogs.storage))
            CASE_FAIL("a refused run wrote an output");
    } else if (rc != ACLNN_SUCCESS)
        CASE_FAIL("aclnnMoeFinalizeRoutingV2Grad returned %d", (int)rc);

    /* gradExpandedX: bit for bit (with R = 0 in mode 1 every row is unnamed: +0.0) */
    for (int pass = 0; !corrupt && pass < (repeat ? 2 : 1); pass++) {
        if (pass == 1) { /* a repeatable executor gives the same bits again */
            memset(ogx.mem, ogx.poison, (size_t)ogx.storage * es);
            memset(ogs.mem, ogs.poison, (size_t)ogs.storage * ogs.es);
            rc = aclnnMoeFinalizeRoutingV2Grad(ws, ws_size, ex, stream);
            if (rc != ACLNN_SUCCESS) CASE_FAIL("second run of a repeatable executor returned %d", (int)rc);
            g_repeat_runs++;
        }
        if (D0 * H == 0) {
            if (!out_poisoned(&ogx, 0, ogx.storage)) CASE_FAIL("an empty problem wrote gradExpandedXOut");
        } else {
            for (int64_t e = 0; e < D0 * H; e++) {
                uint32_t got = out_bits(&ogx, e);
                double gv = ref_decode(s->dt, got);
                if (pass == 0) {
                    g_gx_inf += isinf(gv) != 0;
                    g_gx_negzero += gv == 0 && signbit(gv);
                    g_gx_subnormal[s->dt] += gv != 0 && fabs(gv) < ref_ulp(s->dt, 0) * (s->dt == REF_F16 ? 1024 : s->dt == REF_BF16 ? 128 : 8388608);
                }
                if (got != want.gx[e])
                    CASE_FAIL("gradExpandedXOut[%lld][%lld] = 0x%x (%.9g), want 0x%x (%.9g)", (long long)(e / H),
                              (long long)(e % H), got, ref_decode(s->dt, got), want.gx[e],
                              ref_decode(s->dt, want.gx[e]));
            }
        }
        if (!out_poisoned(&ogx, 0, ogx.front) || !out_poisoned(&ogx, ogx.front + ogx.numel, ogx.storage))
            CASE_FAIL("a write outside gradExpandedXOut's view");
        /* gradScales: the canonical bits, within the spec's bound of the exact sum */
        if (!has_scales) {
            if (!out_poisoned(&ogs, 0, ogs.storage)) CASE_FAIL("gradScalesOut written without scales");
        } else {
            for (int64_t i = 0; i < N; i++) {
                uint32_t got = out_bits(&ogs, i);
                double err, tol;
                if (!ref_gs_within(gs_dt, got, want.gs_exact[i], want.gs_mag[i], &err, &tol))
                    CASE_FAIL("gradScalesOut[%lld][%lld] = %.17g, exact %.17Lg: error %.3g > bound %.3g",
                              (long long)(i / K), (long long)(i % K), ref_decode(gs_dt, got), want.gs_exact[i],
                              err, tol);
                if (tol > 0 && err / tol > g_worst_gs_ratio) g_worst_gs_ratio = err / tol;
                g_gs_values++;
                if (got == want.gs[i]) g_gs_canonical++;
                else
                    CASE_FAIL("gradScalesOut[%lld][%lld] = 0x%x (%.17g) but the canonical order gives 0x%x (%.17g)",
                              (long long)(i / K), (long long)(i % K), got, ref_decode(gs_dt, got), want.gs[i],
                              ref_decode(gs_dt, want.gs[i]));
            }
            if (!out_poisoned(&ogs, 0, ogs.front) || !out_poisoned(&ogs, ogs.front + ogs.numel, ogs.storage))
                CASE_FAIL("a write outside gradScalesOut's view");
        }
        for (int i = 0; i < 6; i++)
            if (inputs[i]->t && memcmp(inputs[i]->copy, inputs[i]->mem, (size_t)inputs[i]->storage * inputs[i]->es))
                CASE_FAIL("input %d was modified", i);
    }
    if (repeat) CHECK_RC(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    if (stream) CHECK_RC(aclrtDestroyStream(stream), ACL_SUCCESS);

    free(ws);
    free(want.gx);
    free(want.gs);
    free(want.gs_exact);
    free(want.gs_mag);
    free_out(&ogx);
    free_out(&ogs);
    for (int i = 0; i < 6; i++) free_view(inputs[i]);
    free(gy);
    free(x);
    free(sc);
    free(bias);
    free(eidx);
    free(idx);
    free(eidx_vals);
}

int main(void) {
    tu_seed("test_grad_random");
    if (ref_selftest() != 0) TU_FAIL("the oracle's conversions disagree with each other");
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    CHECK_RC(aclrtSetDevice(0), ACL_SUCCESS);
    static const int64_t small_h[3] = {1, 3, 17};
    int64_t kcycle = tu_below(9);
    for (int mode = 0; mode < NUM_MODES; mode++)
        for (int dt = 0; dt < 3; dt++)
            for (int opt = 0; opt < NUM_OPTS; opt++)
                for (int sdt = 0; sdt < (opt >= OPT_SCALES ? 3 : 1); sdt++) {
                    spec s = {mode, opt, 0, (ref_dt)dt, opt >= OPT_SCALES ? (ref_dt)sdt : (ref_dt)dt, 0, 0, 0};
                    const int scales = opt >= OPT_SCALES;
                    for (int lay = 0; lay < NUM_LAYS; lay++)
                        for (int hs = 0; hs < 4; hs++) {
                            s.lay = lay;
                            s.K = scales ? 1 + (kcycle++ % 9) : 1;
                            /* H = 1000+ with a tail no vector width divides */
                            s.H = hs < 3 ? small_h[hs] : 1000 + 2 * tu_int(0, 20) + 1;
                            s.R = hs < 3 ? tu_int(1, 12) : tu_int(1, 4);
                            if (mode == MODE0_ACTIVE && s.R * s.K < 2) s.R = 2;
                            run_case(&s);
                        }
                    /* empty problems: R = 0, H = 0, K = 0 (K exists only with scales) */
                    for (int e = 0; e < (scales ? 3 : 2); e++) {
                        s.lay = (int)tu_below(NUM_LAYS);
                        s.R = e == 0 ? 0 : tu_int(1, 6);
                        s.H = e == 1 ? 0 : small_h[tu_below(3)];
                        s.K = e == 2 ? 0 : scales ? tu_int(1, 9) : 1;
                        if (mode == MODE0_ACTIVE && s.R * s.K < 2 && e != 2 && s.R) s.R = 2;
                        run_case(&s);
                    }
                }
    /* K past the 32 slots one sweep handles, H past one 8 KiB tile of gradY */
    for (int dt = 0; dt < 3; dt++)
        for (int sdt = 0; sdt < 3; sdt++) {
            static const int64_t bigk[3] = {32, 33, 67};
            for (int i = 0; i < 3; i++) {
                spec s = {tu_chance(50) ? MODE1 : MODE0_ALL, tu_chance(50) ? OPT_SCALES_BIAS : OPT_SCALES,
                          (int)tu_below(NUM_LAYS), (ref_dt)dt, (ref_dt)sdt, tu_int(1, 3), bigk[i], tu_int(3, 40)};
                run_case(&s);
            }
            static const int64_t bigh[3] = {2049, 4133, 8201};
            spec s = {(int)tu_below(NUM_MODES), OPT_SCALES + (int)tu_below(3), (int)tu_below(NUM_LAYS), (ref_dt)dt,
                      (ref_dt)sdt, tu_int(1, 3), tu_int(1, 6), bigh[sdt] + 2 * tu_below(8)};
            if (s.mode == MODE0_ACTIVE && s.R * s.K < 2) s.R = 2;
            run_case(&s);
        }
    /* one large problem (about 34 MB of gradExpandedX, 2 KiB rows): the paths
     * that use streaming stores, prefetching and every worker thread */
    {
        ref_dt dt = (ref_dt)tu_below(3);
        spec s = {MODE0_ALL, OPT_SCALES_BIAS, tu_chance(50) ? LAY_CONTIG : LAY_PADDED, dt, (ref_dt)tu_below(3), 2100,
                  8, dt == REF_F32 ? 511 : 1023};
        run_case(&s);
    }
    CHECK_RC(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    printf("test_grad_random: kernel path %s, %d threads: %lld cases passed (%lld repeat runs, %lld refused bad values); gradExpandedX "
           "bit-exact incl. %lld/%lld/%lld fp32/fp16/bf16 subnormal, %lld infinite, %lld -0.0 results; gradScales %lld values, %lld "
           "bit-identical to the canonical order; worst error/bound %.3g\n",
           moefrIsa(), moefrNumThreads(), g_cases, g_repeat_runs, g_corrupt, g_gx_subnormal[0], g_gx_subnormal[1], g_gx_subnormal[2], g_gx_inf, g_gx_negzero, g_gs_values,
           g_gs_canonical, g_worst_gs_ratio);
    printf("test_grad_random: index styles: %lld permutation/distinct, %lld -1 tails, %lld uniform with repeats, %lld with "
           "anomalies (repeats, out of range)\n", g_style[0], g_style[1], g_style[2], g_style[3]);
    return 0;
}
