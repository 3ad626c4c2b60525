/* test_dequant_swiglu_quant.c - aclnnDequantSwigluQuant and V2 against an independent
 * float64 reference. Each fp32 operation of ops-nn's kernels is done in float64 and rounded
 * to fp32 (exact for +, -, *, /: 53 >= 2 * 24 + 2 bits), in the kernels' order: the INT32
 * bias added in int32, the int32 -> fp32 cast, * weight scale, * activation scale, + float
 * bias (A2 `dequant_swiglu_quant_dynamic_base.hpp` BaseCompute, 950 `arch35/dequant_swiglu_quant.h`);
 * silu as a / (exp(-a) + 1) with exp rounded once to fp32 (moefr's Exp); the variant
 * (swigluMode 1/2) with its Mins / Maxs clamp, -gluAlpha and + gluBias
 * (`arch35/dequant_swiglu_quant_dynamic_not_full_vf.h`); then quantScale (dynamic: Mul;
 * static: Div and Add, A2's scalar scale as Muls by its reciprocal, `dequant_swiglu_quant_static_base.hpp`);
 * the dynamic scale max|v| / 127 with y = v * (1 / scale) (A2 DynamicCompute) or v / scale (950);
 * rint half to even (CAST_RINT) written with floor, saturated to [-128, 127], NaN -> 0
 * (docs/CANN_COMPAT.md, "DequantSwigluQuant"). Fresh random inputs: rows and half-widths not
 * multiples of any vector width (and past the 256-column tile), INT32 / FLOAT16 / BFLOAT16 x,
 * every bias dtype, grouped rows with empty groups and uncounted rows (left untouched),
 * all-zero, NaN and inf rows, ties at .5 with saturation at +-127, every refusal leaving the
 * outputs untouched. Runs under MOEFR_SOC=ascend910b too (A2/A3 rules and arithmetic). */
#include <math.h>

#include "aclnnop/aclnn_dequant_swiglu_quant.h"
#include "aclnnop/aclnn_dequant_swiglu_quant_v2.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static int g_a2; /* MOEFR_SOC=ascend910b */

static size_t esz(int dt) { return dt == ACL_FLOAT16 || dt == ACL_BF16 ? 2 : dt == ACL_INT64 ? 8 : 4; }
/* element i of a dense buffer of dtype dt as a float (FLOAT, FLOAT16, BF16) */
static float getf(int dt, const void *b, int64_t i) {
    if (dt == ACL_FLOAT) return ((const float *)b)[i];
    return tu_h2f(dt, ((const uint16_t *)b)[i]);
}
static void putf(int dt, void *b, int64_t i, float f) {
    if (dt == ACL_FLOAT) ((float *)b)[i] = f;
    else ((uint16_t *)b)[i] = tu_f2h(dt, f);
}

/* ---- the reference ---- */
static float r32(double d) { return (float)d; }
static int ref_round(double f) {
    if (f != f) return 0;
    if (f > 127) return 127;
    if (f < -128) return -128;
    double fl = floor(f), d = f - fl;
    double r = d > 0.5 ? fl + 1 : d < 0.5 ? fl : (fmod(fl, 2.0) == 0 ? fl : fl + 1);
    return (int)r;
}

/* one problem, dense buffers */
typedef struct cs {
    int v2, xdt, bdt, gdt;   /* bdt -1: no bias; gdt -1: no group index */
    int64_t R, H, G;          /* rows, y's last dim, groups */
    int64_t B;                /* x is (B, R / B, 2H) when B > 1 */
    bool left, dynamic, ws_g, has_as, qs_on, qo_on;
    int64_t qcol;             /* quant scale / offset columns: H or 1 */
    bool q_g;                 /* quant scale / offset per group */
    int mode;
    float clamp, alpha, gbias;
    int xkind;                /* tu_view layout of x (2-D x only) */
    void *x, *ws, *as, *bias, *qs, *qo, *gi;
    int64_t *cnt;
} cs;

static float ref_deq(const cs *c, int64_t r, int64_t g, int64_t j) {
    const int64_t H2 = 2 * c->H, xi = r * H2 + j;
    if (c->xdt != ACL_INT32) return getf(c->xdt, c->x, xi);
    int32_t v = ((const int32_t *)c->x)[xi];
    const int64_t wi = (c->ws_g ? g * H2 : 0) + j;
    if (c->bdt == ACL_INT32) v = (int32_t)((uint32_t)v + (uint32_t)((const int32_t *)c->bias)[wi]);
    float f = (float)v;
    f = r32((double)f * ((const float *)c->ws)[wi]);
    if (c->has_as) f = r32((double)f * ((const float *)c->as)[r]);
    if (c->bdt >= 0 && c->bdt != ACL_INT32) f = r32((double)f + getf(c->bdt, c->bias, wi));
    return f;
}
static float ref_val(const cs *c, int64_t r, int64_t g, int64_t k) {
    int64_t ja = c->left ? k : c->H + k, jb = c->left ? c->H + k : k;
    if (c->mode == 1) ja = 2 * k, jb = 2 * k + 1;
    double a = ref_deq(c, r, g, ja), b = ref_deq(c, r, g, jb), s;
    if (c->mode == 0) {
        const float e = r32(exp(-a));
        s = r32((double)r32(a / (double)r32((double)e + 1.0)) * b);
    } else if (c->mode == 3) {
        b = b < c->clamp ? b : c->clamp;
        b = b > -c->clamp ? b : -c->clamp;
        double sa = r32(a / (double)r32((double)r32(exp(-a)) + 1.0));
        sa = sa < c->clamp ? sa : c->clamp;
        s = r32(sa * b);
    } else {
        a = a < c->clamp ? a : c->clamp;
        const float e = r32(exp((double)r32(a * -(double)c->alpha)));
        const float sa = r32(a / (double)r32((double)e + 1.0));
        b = b < c->clamp ? b : c->clamp;
        b = b > -c->clamp ? b : -c->clamp;
        s = r32((double)sa * (double)r32(b + c->gbias));
    }
    if (c->qs_on) {
        const int64_t qi = (c->q_g ? g * c->qcol : 0) + (c->qcol == 1 ? 0 : k);
        const double q = ((const float *)c->qs)[qi];
        if (c->dynamic) s = r32(s * q);
        else if (g_a2 && c->qcol == 1) {
            /* A2/A3: Muls by the reciprocal, Adds; the grouped kernel (dequant_swiglu_quant.h Init) a zero scale as 1 */
            const double k1 = c->gdt >= 0 && q == 0 ? 1.0 : (double)r32(1.0 / q);
            s = r32((double)r32(s * k1) + ((const float *)c->qo)[qi]);
        }
        else {
            s = r32(s / q);
            if (c->qo_on) s = r32(s + ((const float *)c->qo)[qi]);
        }
    }
    return (float)s;
}
/* y (R x H) and scale (R): only the counted rows */
static void ref_run(const cs *c, int8_t *y, float *sc, bool *written) {
    int64_t g = 0, left = c->gdt >= 0 ? c->cnt[0] : c->R;
    for (int64_t r = 0; r < c->R; r++) {
        if (c->gdt >= 0) {
            while (g < c->G && left == 0) {
                g++;
                left = g < c->G ? c->cnt[g] : 0;
            }
            if (g >= c->G) break;
            left--;
        }
        written[r] = true;
        double k = 0;
        float s = 0;
        if (c->dynamic) {
            double mx = 0;
            for (int64_t j = 0; j < c->H; j++) {
                const double a = fabs((double)ref_val(c, r, g, j));
                if (a > mx) mx = a;
            }
            /* A2/A3 grouped (dequant_swiglu_quant.h DynamicQuant): Muls by fp32(1/127), then Div */
            const bool grp = g_a2 && c->gdt >= 0;
            s = grp ? r32(mx * (double)r32(1.0 / 127.0)) : r32(mx / 127.0);
            sc[r] = s;
            k = g_a2 && !grp ? (double)r32(1.0 / s) : s;
        }
        for (int64_t j = 0; j < c->H; j++) {
            const double v = ref_val(c, r, g, j);
            const bool mul = g_a2 && c->gdt < 0;
            y[r * c->H + j] = (int8_t)ref_round(!c->dynamic ? v : mul ? (double)r32(v * k) : (double)r32(v / k));
        }
    }
}

/* ---- running the operator ---- */
static aclTensor *mk1(int64_t n, int dt, void *d) { return tu_mk(1, n, 0, 0, (aclDataType)dt, d); }
static aclTensor *mk2(int64_t a, int64_t b, int dt, void *d) { return tu_mk(2, a, b, 0, (aclDataType)dt, d); }

/* the tensors of c; *mask (bit per slot) says which are made */
typedef struct ts {
    tu_owned xv, wv, bv, qv;
    aclTensor *t[9];
} ts;
/* a 1-D or 2-D per-column input, laid out as a random tu_view kind (strided views too) */
static tu_owned vec_view(int dt, int nd, int64_t d0, int64_t d1, void *dense) {
    const int64_t d[2] = {d0, d1};
    return tu_view(dt, nd, d, dense, (int)tu_below(TU_KINDS));
}
static void make_tensors(const cs *c, ts *o, int8_t *ybuf, float *scbuf) {
    memset(o, 0, sizeof *o);
    const int64_t H2 = 2 * c->H;
    if (c->B > 1) {
        const int64_t d[3] = {c->B, c->R / c->B, H2};
        o->t[0] = tu_tensor(d, 3, (aclDataType)c->xdt, c->x);
        const int64_t dy[3] = {c->B, c->R / c->B, c->H};
        o->t[7] = tu_tensor(dy, 3, ACL_INT8, ybuf);
        o->t[8] = tu_mk(2, c->B, c->R / c->B, 0, ACL_FLOAT, scbuf);
    } else {
        const int64_t d[2] = {c->R, H2};
        o->xv = tu_view(c->xdt, 2, d, c->x, c->xkind);
        o->t[0] = o->xv.t;
        o->t[7] = mk2(c->R, c->H, ACL_INT8, ybuf);
        o->t[8] = mk1(c->R, ACL_FLOAT, scbuf);
    }
    const int64_t G = c->G;
    if (c->xdt == ACL_INT32) {
        o->wv = c->ws_g ? vec_view(ACL_FLOAT, 2, G, H2, c->ws) : vec_view(ACL_FLOAT, 1, H2, 0, c->ws);
        o->t[1] = o->wv.t;
        if (c->has_as) o->t[2] = c->B > 1 ? mk2(c->B, c->R / c->B, ACL_FLOAT, c->as) : mk1(c->R, ACL_FLOAT, c->as);
        if (c->bdt >= 0) {
            o->bv = c->ws_g ? vec_view(c->bdt, 2, G, H2, c->bias) : vec_view(c->bdt, 1, H2, 0, c->bias);
            o->t[3] = o->bv.t;
        }
    }
    for (int i = 0; i < 2; i++) {
        if (!(i == 0 ? c->qs_on : c->qo_on)) continue;
        void *d = i == 0 ? c->qs : c->qo;
        aclTensor *t;
        if (c->q_g) t = c->qcol == 1 && !c->dynamic ? mk1(G, ACL_FLOAT, d) : mk2(G, c->qcol, ACL_FLOAT, d);
        else if (i == 0) {
            o->qv = vec_view(ACL_FLOAT, 1, c->qcol, 0, d);
            t = o->qv.t;
        } else t = mk1(c->qcol, ACL_FLOAT, d);
        o->t[4 + i] = t;
    }
    if (c->gdt >= 0) o->t[6] = mk1(G, c->gdt, c->gi);
}
static void free_tensors(ts *o) {
    tu_owned *own[4] = {&o->xv, &o->wv, &o->bv, &o->qv};
    for (int i = 0; i < 9; i++) {
        bool owned = false;
        for (int k = 0; k < 4; k++) owned |= own[k]->t != NULL && own[k]->t == o->t[i];
        if (!owned) tu_destroy(o->t[i]);
    }
    for (int k = 0; k < 4; k++)
        if (own[k]->t) tu_free(own[k]);
}

static aclnnStatus phase1(const cs *c, aclTensor *const *t, uint64_t *ws, aclOpExecutor **e) {
    char qm[16];
    strcpy(qm, c->dynamic ? "dynamic" : "static");
    if (!c->v2) return aclnnDequantSwigluQuantGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], c->left, qm, t[7],
                                                               t[8], ws, e);
    return aclnnDequantSwigluQuantV2GetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], c->left, qm, 2, NULL, -1,
                                                     c->mode, c->clamp, c->alpha, c->gbias, t[7], t[8], ws, e);
}
static aclnnStatus run2(const cs *c, aclTensor *const *t) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = phase1(c, t, &ws, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    void *w = ws ? malloc(ws) : NULL;
    rc = c->v2 ? aclnnDequantSwigluQuantV2(w, ws, e, NULL) : aclnnDequantSwigluQuant(w, ws, e, NULL);
    free(w);
    return rc;
}

/* ---- random problems ---- */
static float rnd_scale(void) { return (float)(0.25 + tu_unit() * 2); }
static void fill_row_kind(cs *c, int64_t r, int kind) {
    /* 0 random, 1 zero, 2 NaN, 3 inf */
    const int64_t H2 = 2 * c->H;
    for (int64_t j = 0; j < H2; j++) {
        const int64_t i = r * H2 + j;
        if (c->xdt == ACL_INT32) {
            int32_t v = kind == 1 ? 0 : tu_chance(3) ? (int32_t)tu_int(-2147483647, 2147483647) : (int32_t)tu_int(-3000, 3000);
            ((int32_t *)c->x)[i] = v;
        } else {
            float f = kind == 1 ? 0.0f : (float)((tu_unit() - 0.5) * 12);
            if (kind == 2 && j % 3 == 1) f = NAN;
            if (kind == 3 && j == H2 - 1) f = INFINITY;
            putf(c->xdt, c->x, i, f);
        }
    }
}

static void gen(cs *c, int v2) {
    memset(c, 0, sizeof *c);
    c->v2 = v2;
    const bool grouped = tu_chance(50);
    c->gdt = grouped ? (g_a2 || tu_chance(50) ? ACL_INT64 : ACL_INT32) : -1;
    static const int XD[3] = {ACL_INT32, ACL_FLOAT16, ACL_BF16};
    c->xdt = XD[tu_below(3)];
    if (g_a2 && grouped && c->xdt == ACL_FLOAT16) c->xdt = ACL_BF16;
    static const int64_t HS[] = {1, 3, 5, 17, 31, 100, 257, 300};
    c->H = grouped && g_a2 ? 32 * tu_int(1, 9) + (tu_chance(30) ? 256 : 0) : HS[tu_below(8)];
    c->R = tu_int(1, 40);
    c->B = tu_chance(20) && c->R % 2 == 0 ? 2 : 1;
    c->xkind = (int)tu_below(TU_KINDS);
    c->G = grouped ? tu_int(1, 6) : 1;
    c->left = tu_chance(50);
    c->dynamic = tu_chance(60);
    c->mode = 0;
    if (v2 && (!g_a2 || grouped)) c->mode = (int)tu_int(0, g_a2 ? 3 : 1);
    c->clamp = (float)(0.5 + tu_unit() * 8);
    c->alpha = (float)(0.5 + tu_unit() * 2);
    c->gbias = (float)(tu_unit() * 2 - 1);
    if (!v2) c->clamp = 7.0f, c->alpha = 1.702f, c->gbias = 1.0f;
    const int64_t H2 = 2 * c->H, G = c->G;
    c->x = calloc((size_t)(c->R * H2), esz(c->xdt));
    for (int64_t r = 0; r < c->R; r++) {
        const int k = (int)tu_int(0, 19);
        fill_row_kind(c, r, c->xdt == ACL_INT32 ? (k == 1) : k < 4 ? k : 0);
    }
    if (c->xdt == ACL_INT32) {
        /* A2 without a group: one row of weight scale; grouped: (G, 2H) when G > 1 (950: always) */
        c->ws_g = grouped && (!g_a2 || G > 1);
        const int64_t wn = (c->ws_g ? G : 1) * H2;
        c->ws = malloc((size_t)wn * 4);
        for (int64_t i = 0; i < wn; i++) ((float *)c->ws)[i] = (float)(tu_unit() * 0.02 - 0.01);
        c->has_as = tu_chance(60);
        if (c->has_as) {
            c->as = malloc((size_t)c->R * 4);
            for (int64_t i = 0; i < c->R; i++) ((float *)c->as)[i] = rnd_scale();
        }
        static const int BD[5] = {-1, ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32};
        c->bdt = BD[tu_below(5)];
        if (c->bdt >= 0) {
            c->bias = malloc((size_t)wn * 4);
            for (int64_t i = 0; i < wn; i++) {
                if (c->bdt == ACL_INT32) ((int32_t *)c->bias)[i] = tu_chance(5) ? (int32_t)tu_int(-2147483647, 2147483647) : (int32_t)tu_int(-500, 500);
                else putf(c->bdt, c->bias, i, (float)(tu_unit() * 10 - 5));
            }
        }
    } else {
        c->bdt = -1;
    }
    /* quant scale and offset */
    if (c->dynamic) {
        c->qs_on = tu_chance(60);
        c->qcol = c->H;
        c->q_g = grouped && (!g_a2 || G > 1);
    } else {
        c->qs_on = true;
        if (grouped) {
            c->q_g = true;
            c->qcol = tu_chance(50) ? 1 : c->H;
            c->qo_on = g_a2 || tu_chance(70);
        } else {
            c->qcol = tu_chance(50) ? 1 : c->H;
            c->qo_on = g_a2 || tu_chance(70);
        }
    }
    const int64_t qn = (c->q_g ? G : 1) * c->qcol;
    c->qs = malloc((size_t)qn * 4);
    c->qo = malloc((size_t)qn * 4);
    for (int64_t i = 0; i < qn; i++) {
        ((float *)c->qs)[i] = c->dynamic ? rnd_scale() : (float)(0.01 + tu_unit() * 0.2);
        ((float *)c->qo)[i] = (float)(tu_unit() * 6 - 3);
    }
    if (!c->dynamic && tu_chance(15)) ((float *)c->qs)[0] = 0.0f; /* a zero static scale */
    /* counts: empty groups, and sometimes rows left uncounted */
    c->cnt = calloc((size_t)G + 1, 8);
    if (grouped) {
        int64_t leftr = c->R - (tu_chance(30) ? tu_int(0, c->R) : 0);
        for (int64_t g = 0; g < G; g++) {
            const int64_t n = g == G - 1 ? leftr : tu_chance(25) ? 0 : tu_int(0, leftr);
            c->cnt[g] = n;
            leftr -= n;
        }
        c->gi = malloc((size_t)G * 8);
        for (int64_t g = 0; g < G; g++) {
            if (c->gdt == ACL_INT64) ((int64_t *)c->gi)[g] = c->cnt[g];
            else ((int32_t *)c->gi)[g] = (int32_t)c->cnt[g];
        }
    }
}
static void cs_free(cs *c) {
    free(c->x), free(c->ws), free(c->as), free(c->bias), free(c->qs), free(c->qo), free(c->gi), free(c->cnt);
}

static int run_case(cs *c, const char *what) {
    g_cases++;
    const int64_t ny = c->R * c->H;
    int8_t *y = (int8_t *)tu_poisoned((size_t)ny);
    float *sc = (float *)tu_poisoned((size_t)c->R * 4);
    int8_t *wy = malloc((size_t)ny + 1);
    float *wsc = malloc((size_t)c->R * 4 + 4);
    bool *wr = calloc((size_t)c->R + 1, 1);
    ref_run(c, wy, wsc, wr);
    ts o;
    make_tensors(c, &o, y, sc);
    const aclnnStatus rc = run2(c, o.t);
    int bad = 0;
    CHECK(rc == ACLNN_SUCCESS, "%s: status %d: %s", what, (int)rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        for (int64_t r = 0; r < c->R && bad < 5; r++) {
            if (!wr[r]) {
                if (!tu_all_poison((unsigned char *)(y + r * c->H), (size_t)c->H) ||
                    !tu_all_poison((unsigned char *)(sc + r), 4)) {
                    bad++;
                    CHECK(0, "%s: row %lld is past the counted rows but was written", what, (long long)r);
                }
                continue;
            }
            if (c->dynamic && memcmp(&sc[r], &wsc[r], 4) != 0) {
                bad++;
                CHECK(0, "%s: scale[%lld] = %a, want %a", what, (long long)r, sc[r], wsc[r]);
            } else if (!c->dynamic && !tu_all_poison((unsigned char *)(sc + r), 4)) {
                bad++;
                CHECK(0, "%s: static mode wrote scale[%lld]", what, (long long)r);
            }
            for (int64_t j = 0; j < c->H; j++)
                if (y[r * c->H + j] != wy[r * c->H + j]) {
                    bad++;
                    CHECK(0, "%s: y[%lld][%lld] = %d, want %d (R %lld H %lld x %d bias %d group %d G %lld mode %d left %d "
                             "%s qcol %lld)", what, (long long)r, (long long)j, y[r * c->H + j], wy[r * c->H + j],
                          (long long)c->R, (long long)c->H, c->xdt, c->bdt, c->gdt, (long long)c->G, c->mode, c->left,
                          c->dynamic ? "dynamic" : "static", (long long)c->qcol);
                    break;
                }
        }
        CHECK(tu_guard_ok((unsigned char *)y, (size_t)ny) && tu_guard_ok((unsigned char *)sc, (size_t)c->R * 4),
              "%s: guard bytes", what);
    }
    free_tensors(&o);
    free(y), free(sc), free(wy), free(wsc), free(wr);
    return bad;
}

/* ties at .5 and saturation: silu(32) is 32 in fp32 (exp(-32) + 1 rounds to 1), so with a
 * static quant scale of 32 the value is b itself: b = k + 0.5 for k in [-140, 140) */
static void ties(int v2) {
    cs c;
    memset(&c, 0, sizeof c);
    c.v2 = v2;
    c.xdt = ACL_FLOAT16;
    c.gdt = c.bdt = -1;
    c.H = 280;
    c.R = 3;
    c.B = 1;
    c.G = 1;
    c.left = true;
    c.clamp = 7.0f, c.alpha = 1.702f, c.gbias = 1.0f;
    c.x = calloc((size_t)(c.R * 2 * c.H), 2);
    for (int64_t r = 0; r < c.R; r++)
        for (int64_t k = 0; k < c.H; k++) {
            putf(ACL_FLOAT16, c.x, r * 2 * c.H + k, 32.0f);
            putf(ACL_FLOAT16, c.x, r * 2 * c.H + c.H + k, (float)(k - 140) + 0.5f * (float)(r != 2));
        }
    c.qs_on = c.qo_on = true;
    c.cnt = calloc(2, 8);
    for (int per = 0; per < 2; per++) {
        c.qcol = per ? c.H : 1;
        c.qs = malloc((size_t)c.qcol * 4);
        c.qo = calloc((size_t)c.qcol, 4);
        for (int64_t i = 0; i < c.qcol; i++) ((float *)c.qs)[i] = 32.0f;
        /* the expectation written out, not only the reference's */
        int8_t want[280];
        for (int64_t k = 0; k < c.H; k++) {
            const int64_t t = k - 140; /* value t + 0.5: the even neighbour */
            int64_t e = t % 2 == 0 ? t : t + 1;
            want[k] = (int8_t)(e > 127 ? 127 : e < -128 ? -128 : e);
        }
        int8_t wy[3 * 280];
        float wsc[3];
        bool wr[3];
        ref_run(&c, wy, wsc, wr);
        CHECK(memcmp(wy, want, 280) == 0, "ties: the reference disagrees with round half to even");
        run_case(&c, per ? "ties (per-column scale)" : "ties (one scale)");
        free(c.qs), free(c.qo);
        c.qs = c.qo = NULL;
    }
    cs_free(&c);
}

/* ops-nn's sample (examples/test_aclnn_dequant_swiglu_quant.cpp): x = 0..63 as FLOAT16 (2, 32),
 * quant scale and offset (1) = 1, "static", activateLeft false */
static void sample(void) {
    cs c;
    memset(&c, 0, sizeof c);
    c.xdt = ACL_FLOAT16;
    c.gdt = c.bdt = -1;
    c.R = 2, c.H = 16, c.B = 1, c.G = 1;
    c.clamp = 7.0f, c.alpha = 1.702f, c.gbias = 1.0f;
    c.x = calloc(64, 2);
    for (int i = 0; i < 64; i++) putf(ACL_FLOAT16, c.x, i, (float)i);
    c.qs_on = c.qo_on = true;
    c.qcol = 1;
    c.qs = malloc(4), c.qo = malloc(4);
    ((float *)c.qs)[0] = 1.0f, ((float *)c.qo)[0] = 1.0f;
    c.cnt = calloc(1, 8);
    /* row 0: silu(16 + k) * k + 1, all below 127 until k = 7 (23 * 7 + 1 > 127): saturated after */
    int8_t wy[32];
    float wsc[2];
    bool wr[2];
    ref_run(&c, wy, wsc, wr);
    CHECK(wy[0] == 1 && wy[1] == 18 && wy[15] == 127 && wy[16] == 127, "sample: reference %d %d %d %d", wy[0], wy[1],
          wy[15], wy[16]);
    run_case(&c, "ops-nn's sample");
    cs_free(&c);
}

/* ---- refusals: code, message, outputs untouched ---- */
static void refusals(void) {
    const int64_t R = 4, H = 64, H2 = 128;
    int32_t *x = calloc((size_t)(R * H2), 4);
    uint16_t *xh = calloc((size_t)(R * H2), 2);
    float *ws = calloc((size_t)(4 * H2), 4), *as = calloc(8, 4), *qs = calloc((size_t)(4 * H), 4),
          *qo = calloc((size_t)(4 * H), 4);
    for (int64_t i = 0; i < 4 * H2; i++) ws[i] = 1.0f;
    for (int64_t i = 0; i < 4 * H; i++) qs[i] = 1.0f;
    int64_t gi[4] = {1, 1, 1, 1};
    int8_t *y = (int8_t *)tu_poisoned((size_t)(R * H));
    float *sc = (float *)tu_poisoned((size_t)R * 4);
    aclTensor *tx = mk2(R, H2, ACL_INT32, x), *txh = mk2(R, H2, ACL_BF16, xh), *tws = mk1(H2, ACL_FLOAT, ws),
              *tws2 = mk2(2, H2, ACL_FLOAT, ws), *tas = mk1(R, ACL_FLOAT, as), *tqs = mk1(H, ACL_FLOAT, qs),
              *tqs2 = mk2(2, H, ACL_FLOAT, qs), *tqo = mk1(H, ACL_FLOAT, qo), *tgi = mk1(2, ACL_INT64, gi),
              *ty = mk2(R, H, ACL_INT8, y), *tsc = mk1(R, ACL_FLOAT, sc), *tyb = mk2(R, H + 1, ACL_INT8, y),
              *tscb = mk1(R - 1, ACL_FLOAT, sc), *tf16 = mk1(H2, ACL_FLOAT16, ws), *ty32 = mk2(R, H, ACL_INT32, y);
    uint64_t w;
    aclOpExecutor *e;
    char dyn[] = "dynamic", sta[] = "static", bad[] = "half";
#define P1(want, X, WS, AS, QS, QO, GI, Y, SC, QM)                                                                 \
    do {                                                                                                           \
        e = NULL;                                                                                                  \
        aclnnStatus rc_ = aclnnDequantSwigluQuantGetWorkspaceSize(X, WS, AS, NULL, QS, QO, GI, false, QM, Y, SC, &w, &e); \
        g_cases++;                                                                                                 \
        CHECK(rc_ == (want) && (rc_ != 0 || e != NULL) && strstr(tu_msg(), "aclnnDequantSwigluQuant") != NULL,    \
              "line %d: status %d, want %d: %s", __LINE__, (int)rc_, (int)(want), tu_msg());                      \
        if (rc_ == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e);                                                      \
    } while (0)
    P1(ACLNN_ERR_PARAM_NULLPTR, NULL, tws, NULL, NULL, NULL, NULL, ty, tsc, dyn);
    P1(ACLNN_ERR_PARAM_NULLPTR, tx, tws, NULL, NULL, NULL, NULL, NULL, tsc, dyn);
    P1(ACLNN_ERR_PARAM_NULLPTR, tx, tws, NULL, NULL, NULL, NULL, ty, NULL, dyn);
    P1(ACLNN_ERR_PARAM_INVALID, tx, tf16, NULL, NULL, NULL, NULL, ty, tsc, dyn);  /* weight scale FLOAT16 */
    P1(ACLNN_ERR_PARAM_INVALID, tx, tws, NULL, NULL, NULL, NULL, ty32, tsc, dyn); /* y INT32 */
    P1(ACLNN_ERR_INNER_TILING_ERROR, tx, tws, NULL, NULL, NULL, NULL, ty, tsc, bad);
    {   /* outputs must be contiguous (a generated wrapper's rule), before any tiling check */
        tu_owned yv = tu_make_view(y, 2, R, H, ACL_INT8, 1, 0, 2 * H, 1);
        P1(ACLNN_ERR_PARAM_INVALID, tx, tws, NULL, NULL, NULL, NULL, yv.t, tsc, dyn);
        CHECK(tu_msg_has("yOut", "contiguous", NULL), "strided yOut: %s", tu_msg());
        tu_free(&yv);
    }
    /* scaleOut's shape: 950's CheckOutputScale; A2/A3's tiling only logs it (moefr: 161002) */
    P1(g_a2 ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_INNER_TILING_ERROR, tx, tws, tas, tqs, NULL, NULL, ty, tscb, dyn);
    if (!g_a2) {
        P1(ACLNN_ERR_INNER_TILING_ERROR, tx, NULL, NULL, NULL, NULL, NULL, ty, tsc, dyn); /* INT32 x needs ws */
        P1(ACLNN_ERR_INNER_TILING_ERROR, txh, tws, NULL, NULL, NULL, NULL, ty, tsc, dyn); /* float x takes none */
        P1(ACLNN_ERR_INNER_TILING_ERROR, tx, tws, NULL, NULL, NULL, NULL, tyb, tsc, dyn);
        P1(ACLNN_ERR_INNER_TILING_ERROR, tx, tws, NULL, NULL, tqo, NULL, ty, tsc, dyn);  /* offset in dynamic mode */
        P1(ACLNN_ERR_INNER_TILING_ERROR, tx, tws, NULL, NULL, NULL, NULL, ty, tsc, sta); /* static needs a scale */
        P1(ACLNN_ERR_INNER_TILING_ERROR, tx, tws, NULL, tqs, NULL, tgi, ty, tsc, dyn);   /* 1-D ws with a group */
        P1(ACLNN_SUCCESS, tx, tws2, NULL, tqs2, NULL, tgi, ty, tsc, dyn);
        P1(ACLNN_SUCCESS, tx, tws, NULL, tqs, NULL, NULL, ty, tsc, NULL); /* NULL: static */
    } else {
        P1(ACLNN_ERR_PARAM_INVALID, tx, NULL, NULL, NULL, NULL, NULL, ty, tsc, dyn); /* CANN dereferences NULL */
        P1(ACLNN_ERR_PARAM_INVALID, tx, tws, NULL, NULL, NULL, NULL, tyb, tsc, dyn); /* CANN only logs it */
        P1(ACLNN_ERR_PARAM_INVALID, tx, tws, NULL, NULL, NULL, NULL, ty, tsc, sta);  /* static without a scale */
        P1(ACLNN_ERR_INNER_TILING_ERROR, tx, tws, NULL, tqs, NULL, NULL, ty, tsc, sta); /* static without an offset */
        P1(ACLNN_ERR_PARAM_NULLPTR, tx, tws, NULL, NULL, NULL, NULL, ty, tsc, NULL);
        P1(ACLNN_SUCCESS, tx, tws, NULL, NULL, NULL, NULL, ty, tsc, (char[]){"DyNaMiC"});
        {   /* the plain tiling takes any y and scale of the right sizes (it only logs their shapes) */
            aclTensor *y1 = mk1(R * H, ACL_INT8, y), *s2 = mk2(R, 1, ACL_FLOAT, sc);
            P1(ACLNN_SUCCESS, tx, tws, NULL, NULL, NULL, NULL, y1, s2, dyn);
            tu_destroy(y1), tu_destroy(s2);
        }
        P1(ACLNN_SUCCESS, tx, tws2, NULL, tqs2, NULL, tgi, ty, tsc, dyn);
    }
    {   /* more groups than moefr's bound (1024): refused by name, on both rule sets */
        int64_t *big = calloc(1025, 8);
        float *wbig = calloc((size_t)1025 * H2, 4), *qbig = calloc((size_t)1025 * H, 4);
        aclTensor *tg = mk1(1025, ACL_INT64, big), *tw = mk2(1025, H2, ACL_FLOAT, wbig), *tq = mk2(1025, H, ACL_FLOAT, qbig);
        P1(ACLNN_ERR_PARAM_INVALID, tx, tw, NULL, tq, NULL, tg, ty, tsc, dyn);
        CHECK(tu_msg_has("1024", NULL), "group bound: %s", tu_msg());
        tu_destroy(tg), tu_destroy(tw), tu_destroy(tq);
        free(big), free(wbig), free(qbig);
    }
    CHECK(tu_all_poison((unsigned char *)y, (size_t)(R * H)) && tu_all_poison((unsigned char *)sc, (size_t)R * 4),
          "phase-1 refusals wrote the outputs");
    {   /* a 0-D group index is one group (EnsureNotScalar on 950; groupNum_ 1 on A2/A3): rows past its count untouched */
        int64_t three = 3;
        aclTensor *g0 = tu_tensor(NULL, 0, ACL_INT64, &three), *w1 = mk2(1, H2, ACL_FLOAT, ws), *q1 = mk2(1, H, ACL_FLOAT, qs);
        e = NULL;
        aclnnStatus rc = aclnnDequantSwigluQuantGetWorkspaceSize(tx, w1, NULL, NULL, q1, NULL, g0, false, dyn, ty, tsc, &w, &e);
        g_cases++;
        CHECK(rc == ACLNN_SUCCESS, "0-D group index: %d %s", (int)rc, tu_msg());
        if (rc == ACLNN_SUCCESS) {
            CHECK(aclnnDequantSwigluQuant(NULL, w, e, NULL) == ACLNN_SUCCESS, "0-D group index run: %s", tu_msg());
            CHECK(!tu_all_poison((unsigned char *)y, (size_t)(3 * H)) && tu_all_poison((unsigned char *)(y + 3 * H), (size_t)H) &&
                  tu_all_poison((unsigned char *)(sc + 3), 4), "0-D group index: rows 0-2 written, row 3 untouched");
        }
        memset(y, TU_POISON, (size_t)(R * H));
        memset(sc, TU_POISON, (size_t)R * 4);
        tu_destroy(g0), tu_destroy(w1), tu_destroy(q1);
    }
    /* phase 2: counts past x's rows, or negative, leave the outputs untouched */
    for (int k = 0; k < 2; k++) {
        gi[0] = k ? -1 : 3;
        gi[1] = k ? 2 : 3;
        e = NULL;
        aclnnStatus rc = aclnnDequantSwigluQuantGetWorkspaceSize(tx, tws2, NULL, NULL, tqs2, NULL, tgi, false, dyn, ty,
                                                                 tsc, &w, &e);
        CHECK(rc == ACLNN_SUCCESS, "grouped phase 1: %s", tu_msg());
        if (rc == ACLNN_SUCCESS) {
            rc = aclnnDequantSwigluQuant(NULL, w, e, NULL);
            g_cases++;
            CHECK(rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has("groupIndexOptional", NULL), "counts %lld %lld: %d %s",
                  (long long)gi[0], (long long)gi[1], (int)rc, tu_msg());
        }
    }
    CHECK(tu_all_poison((unsigned char *)y, (size_t)(R * H)) && tu_all_poison((unsigned char *)sc, (size_t)R * 4),
          "phase-2 refusals wrote the outputs");
    /* V2 attributes */
#define P2(want, DT, RM, AD, SM, CL)                                                                             \
    do {                                                                                                         \
        e = NULL;                                                                                                \
        aclnnStatus rc_ = aclnnDequantSwigluQuantV2GetWorkspaceSize(tx, tws, NULL, NULL, NULL, NULL, NULL, true, dyn, DT, \
                                                                    RM, AD, SM, CL, 1.702, 1.0, ty, tsc, &w, &e); \
        g_cases++;                                                                                               \
        CHECK(rc_ == (want), "line %d: status %d, want %d: %s", __LINE__, (int)rc_, (int)(want), tu_msg());      \
        if (rc_ == ACLNN_SUCCESS) aclDestroyAclOpExecutor(e);                                                    \
    } while (0)
    P2(ACLNN_SUCCESS, 2, NULL, -1, 0, 7.0);
    P2(ACLNN_SUCCESS, 2, (char[]){"rint"}, 1, 0, 7.0);
    if (!g_a2) {
        P2(ACLNN_ERR_INNER_TILING_ERROR, 3, NULL, -1, 0, 7.0);
        P2(ACLNN_ERR_INNER_TILING_ERROR, 2, (char[]){"round"}, -1, 0, 7.0);
        P2(ACLNN_ERR_INNER_TILING_ERROR, 2, (char[]){"nearest"}, -1, 0, 7.0);
        P2(ACLNN_ERR_INNER_TILING_ERROR, 2, NULL, 2, 0, 7.0);
        P2(ACLNN_ERR_INNER_TILING_ERROR, 2, NULL, -1, 2, 7.0); /* 950: swigluMode 0 or 1 */
        P2(ACLNN_ERR_INNER_TILING_ERROR, 2, NULL, -1, 1, 0.0);
        P2(ACLNN_ERR_INNER_TILING_ERROR, 2, NULL, -1, 1, INFINITY);
        P2(ACLNN_ERR_INNER_TILING_ERROR, 2, NULL, 0, 0, 7.0); /* split dim 0: yOut must be (2, 128) */
    } else {
        P2(ACLNN_ERR_PARAM_INVALID, 3, NULL, -1, 0, 7.0);
        P2(ACLNN_ERR_PARAM_INVALID, 2, (char[]){"round"}, -1, 0, 7.0);
        P2(ACLNN_ERR_PARAM_INVALID, 2, NULL, 0, 0, 7.0);
    }
    CHECK(tu_all_poison((unsigned char *)y, (size_t)(R * H)), "V2 refusals wrote yOut");
    aclTensor *all[] = {tx, txh, tws, tws2, tas, tqs, tqs2, tqo, tgi, ty, tsc, tyb, tscb, tf16, ty32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_destroy(all[i]);
    free(x), free(xh), free(ws), free(as), free(qs), free(qo), free(y), free(sc);
#undef P1
#undef P2
}

/* every output empty: success, nothing read */
static void empty(void) {
    int32_t x[4] = {0};
    float ws[4] = {0};
    aclTensor *tx = mk2(0, 4, ACL_INT32, x), *tw = mk1(4, ACL_FLOAT, ws), *ty = mk2(0, 2, ACL_INT8, x),
              *ts_ = mk1(0, ACL_FLOAT, ws);
    uint64_t w = 9;
    aclOpExecutor *e = NULL;
    char dyn[] = "dynamic";
    aclnnStatus rc = aclnnDequantSwigluQuantGetWorkspaceSize(tx, tw, NULL, NULL, NULL, NULL, NULL, false, dyn, ty, ts_, &w, &e);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS && w == 0, "empty: %d %s", (int)rc, tu_msg());
    if (rc == ACLNN_SUCCESS) CHECK(aclnnDequantSwigluQuant(NULL, 0, e, NULL) == ACLNN_SUCCESS, "empty run: %s", tu_msg());
    tu_destroy(tx), tu_destroy(tw), tu_destroy(ty), tu_destroy(ts_);
}

int main(void) {
    tu_seed("test_dequant_swiglu_quant");
    const char *soc = getenv("MOEFR_SOC");
    g_a2 = soc && strcmp(soc, "ascend910b") == 0;
    CHECK(aclInit(NULL) == ACL_SUCCESS, "aclInit");
    for (int i = 0; i < 400; i++) {
        cs c;
        gen(&c, i % 2);
        char what[64];
        snprintf(what, sizeof what, "random case %d (V%d)", i, 1 + i % 2);
        run_case(&c, what);
        cs_free(&c);
    }
    ties(0);
    ties(1);
    sample();
    refusals();
    empty();
    printf("test_dequant_swiglu_quant%s: %d cases, %d checks, %d failures\n", g_a2 ? " (ascend910b)" : "", g_cases,
           g_checks, g_fail);
    aclFinalize();
    return g_fail != 0;
}
