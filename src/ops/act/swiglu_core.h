/* swiglu_core.h - SwiGlu's block routines over GT_W-lane generic vectors
 * (ops/gv.h). The includer defines GT_W, SG_NAME (the width's name) and
 * SG_TABLE (its sg_routines table's name). Per element, in fp32, in this order (no FMA):
 *   e = exp(-|a|)   q = 1 / (1 + e)   s = a >= 0 ? q : e * q   (sigmoid(a))
 *   forward   o  = (a * s) * b
 *   backward  oa = ((s * (1 - s)) * a + s) * b * g,   ob = (s * a) * g
 * exp only ever sees arguments <= 0 (gt_expv's domain), so nothing
 * overflows; a NaN a gives NaN (s = a, so the NaN is a's on every width),
 * a = -inf gives NaN as A / (1 + exp(-A)) does.
 *
 * The bfloat16 routines take s from mf_swiglu_sig16(), which holds this s for
 * every bfloat16 a (built from sg_exp_block and sg_sigmoid below), and do
 * only the products.
 *
 * The fp32 work goes in blocks of SG_B elements, in three passes over each: exp's
 * argument reduction, its polynomial and scale, then the rest. One pass over
 * a whole vector is a chain of about 90 cycles of latency in some 50
 * instructions, and the out-of-order window holds only two or three such
 * iterations, so the loop ran at the chain's latency; three short chains
 * overlap far better (1.0 -> 0.7 ns an element on Zen 4 with eight lanes).
 * The passes hand exact fp32 values to each other through the block's
 * scratch, so every element goes through the same operations as before. */
#include "ops/act/swiglu.h"
#include "ops/gv.h"

#define SG_B 128 /* elements per block: 1.5 KiB of scratch, in L1 */

/* Each block first asks for the lines of its input rows SG_AHEAD elements
 * further on (16 KiB of fp32, 8 KiB of bf16), into L2. The routines spend
 * most of their time in arithmetic with few loads in flight, and the
 * hardware's stream prefetch alone left them waiting on memory: on Zen 4,
 * two threads, the fp32 forward went from 0.72 to 1.17 of a memcpy and the
 * backward from 0.90 to 1.37 (medians of 8 runs); 1024, 2048 and 8192
 * elements ahead were no better (docs/BENCHMARKS.md). The address is formed
 * as an integer: past a row's end it may lie outside any object, and a
 * prefetch never faults. */
#define SG_AHEAD 4096
static inline void sg_prefetch(const void *row, int64_t i0, int es, int64_t m) {
    const uintptr_t p = (uintptr_t)row + (uintptr_t)((i0 + SG_AHEAD) * es);
    for (int64_t o = 0; o < m * es; o += 64) __builtin_prefetch((const void *)(p + (uintptr_t)o), 0, 2);
}

#define SG_CAT_(a, b) a##b
#define SG_CAT(a, b) SG_CAT_(a, b)
#define SG_FWD SG_CAT(SG_TABLE, _fwd)
#define SG_BWD SG_CAT(SG_TABLE, _bwd)
#define SG_NARROW_BF16 SG_CAT(SG_TABLE, _narrow_bf16)
#define SG_FWD16 SG_CAT(SG_TABLE, _fwd16)
#define SG_BWD16 SG_CAT(SG_TABLE, _bwd16)

/* Passes 1 and 2 over m elements of a: v[i] = exp(-|a[i]|) before the
 * tiny-argument select, which pass 3 makes (sg_sigmoid). t is scratch. */
static inline void sg_exp_block(const float *a, float *v, float *t, int64_t m) {
    for (int64_t i = 0; i < m; i += GT_W) {
        const gvf av = gv_load(a + i);
        const gvf mag = (gvf)((gvi)av & gi_splat(0x7FFFFFFF));
        gvf tv;
        gv_store(v + i, gt_exp_reduce(-mag, &tv));
        gv_store(t + i, tv);
    }
    for (int64_t i = 0; i < m; i += GT_W) gv_store(v + i, gt_exp_scale(gt_exp_poly(gv_load(v + i)), gv_load(t + i)));
}

/* Pass 3's sigmoid(a), v from sg_exp_block. A NaN a gives s = a: the NaN
 * that came through exp has the other sign (-|a|), and x86 passes on the
 * first operand's NaN, so a * s would take either one depending on how the
 * compiler ordered the operands at each width. With s = a, every NaN in the
 * formulas is a's (made quiet), whatever the order. */
static inline gvf sg_sigmoid(gvf a, gvf v) {
    const gvf mag = (gvf)((gvi)a & gi_splat(0x7FFFFFFF));
    const gvf e = gv_sel(-mag < gv_splat(GT_EXP_LO), gv_splat(0.0f), v);
    const gvf q = gv_splat(1.0f) / (gv_splat(1.0f) + e);
    return gv_sel(a != a, a, gv_sel(a >= gv_splat(0.0f), q, e * q));
}

static void SG_FWD(const float *a, const float *b, float *o, int64_t n) {
    _Alignas(64) float v[SG_B], t[SG_B];
    for (int64_t i0 = 0; i0 < n; i0 += SG_B) {
        const int64_t m = n - i0 < SG_B ? n - i0 : SG_B;
        sg_prefetch(a, i0, 4, m), sg_prefetch(b, i0, 4, m);
        sg_exp_block(a + i0, v, t, m);
        for (int64_t i = 0; i < m; i += GT_W) {
            const gvf av = gv_load(a + i0 + i), s = sg_sigmoid(av, gv_load(v + i));
            gv_store(o + i0 + i, (av * s) * gv_load(b + i0 + i));
        }
    }
}

/* s[0..n) rounded to bfloat16 at p: whole vectors here, the tail one by one
 * (the same rounding, mf_f32_to_bf16) */
static void SG_NARROW_BF16(const float *s, char *p, int64_t n) {
    int64_t i = 0;
    for (; i + GT_W <= n; i += GT_W) gv_store_bf16(p + 2 * i, gv_load(s + i));
    for (; i < n; i++) {
        const uint16_t h = mf_f32_to_bf16(s[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

static void SG_BWD(const float *a, const float *b, const float *g, float *oa, float *ob, int64_t n) {
    const gvf one = gv_splat(1.0f);
    _Alignas(64) float v[SG_B], t[SG_B];
    for (int64_t i0 = 0; i0 < n; i0 += SG_B) {
        const int64_t m = n - i0 < SG_B ? n - i0 : SG_B;
        sg_prefetch(a, i0, 4, m), sg_prefetch(b, i0, 4, m), sg_prefetch(g, i0, 4, m);
        sg_exp_block(a + i0, v, t, m);
        for (int64_t i = 0; i < m; i += GT_W) {
            const int64_t j = i0 + i;
            const gvf av = gv_load(a + j), s = sg_sigmoid(av, gv_load(v + i)), gv = gv_load(g + j);
            gv_store(oa + j, (((s * (one - s)) * av + s) * gv_load(b + j)) * gv);
            gv_store(ob + j, (s * av) * gv);
        }
    }
}

/* bfloat16 in and out: s = sig[a's bits] (mf_swiglu_sig16: the value the
 * fp32 routines compute), then the same products on the widened values
 * (exact), each result rounded once (gv_store_bf16); a, b, g, o, oa, ob are
 * element arrays of n (a multiple of GT_W) bfloat16 values. */

static void SG_FWD16(const float *sig, const char *a, const char *b, char *o, int64_t n) {
    for (int64_t i0 = 0; i0 < n; i0 += SG_B) {
        const int64_t m = n - i0 < SG_B ? n - i0 : SG_B;
        sg_prefetch(a, i0, 2, m), sg_prefetch(b, i0, 2, m);
        for (int64_t i = 0; i < m; i += GT_W) {
            const int64_t j = 2 * (i0 + i);
            const gvi h = gi_load_u16(a + j); /* a's bits, sig's index */
            const gvf av = (gvf)(h << 16), s = gv_gather(sig, h);
            gv_store_bf16(o + j, (av * s) * gv_load_bf16(b + j));
        }
    }
}

static void SG_BWD16(const float *sig, const char *a, const char *b, const char *g, char *oa, char *ob, int64_t n) {
    const gvf one = gv_splat(1.0f);
    for (int64_t i0 = 0; i0 < n; i0 += SG_B) {
        const int64_t m = n - i0 < SG_B ? n - i0 : SG_B;
        sg_prefetch(a, i0, 2, m), sg_prefetch(b, i0, 2, m), sg_prefetch(g, i0, 2, m);
        for (int64_t i = 0; i < m; i += GT_W) {
            const int64_t j = 2 * (i0 + i);
            const gvi h = gi_load_u16(a + j); /* a's bits, sig's index */
            const gvf av = (gvf)(h << 16), s = gv_gather(sig, h), gv = gv_load_bf16(g + j);
            gv_store_bf16(oa + j, (((s * (one - s)) * av + s) * gv_load_bf16(b + j)) * gv);
            gv_store_bf16(ob + j, (s * av) * gv);
        }
    }
}

const sg_routines SG_TABLE = {SG_NAME, GT_W, SG_FWD, SG_BWD, SG_NARROW_BF16, SG_FWD16, SG_BWD16};
