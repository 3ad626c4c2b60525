/* quant_int8.h - the int8 quantisation of one gathered row, the arithmetic
 * of CANN's MoeInitRoutingQuant and MoeInitRoutingQuantV2 kernels
 * (docs/CANN_COMPAT.md, "MoeInitRoutingQuant"). */
#ifndef MOEFR_OPS_ROUTING_QUANT_INT8_H_
#define MOEFR_OPS_ROUTING_QUANT_INT8_H_

#include "ops/common.h"

/* mode 0 (static): out[j] = sat8(rint(f16(f16(f16(x[j]) * hs) + ho))), each
 * step rounded to fp16 (nearest even), hs/ho = fp16(scale)/fp16(offset);
 * returns 0.
 * mode 1 (dynamic): v[j] = f32(x[j]) (* smooth[j] in fp32 when smooth is not
 * NULL); s = max|v| / 127 in fp32 (NaN elements do not count); out[j] =
 * sat8(round(v[j] / s)) (0 for NaN), half away from zero (QuantV2's kernel) or,
 * with even, half to even (InitRoutingV3's); returns s.
 * x: H elements of xdtype (FLOAT/FLOAT16/BF16) xstep bytes apart; smooth: H
 * fp32 values sstep bytes apart. next: the row the caller quantises next
 * (same xstep, dtype and H; NULL for none), prefetched into L2 while this
 * one is quantised: gathered rows are in no order a hardware prefetcher
 * sees, and the quantising pass is arithmetic that the fetch can hide
 * behind (docs/BENCHMARKS.md, "InitRoutingQuantV2's quantiser and the
 * routing-map unpermute"). */
typedef struct mf_q8 {
    int mode;
    bool even; /* mode 1: round the quotient half to even */
    uint16_t hs, ho;
    /* mode 1: the loops may write out by streaming stores (the caller's
     * output is larger than the streaming-store threshold); each worker
     * then calls the kernel table's fence() before it returns */
    bool nt;
} mf_q8;
float mf_quant_int8_row(const mf_q8 *q, const char *x, int64_t xstep, int xdtype, const char *smooth, int64_t sstep,
                        int64_t H, int8_t *out, const char *next);

/* quant_int8_core.h's loops, per width: whole vectors of v[0..n), returning
 * how many elements they did; nt: streaming stores allowed (mf_q8.nt) */
int64_t mf_q8_absmax_generic(const float *v, int64_t n, float *m);
int64_t mf_q8_quant_generic(const float *v, int64_t n, float s, bool even, int8_t *out, bool nt);
#if defined(MOEFR_X86_KERNELS)
int64_t mf_q8_absmax_avx2(const float *v, int64_t n, float *m);
int64_t mf_q8_quant_avx2(const float *v, int64_t n, float s, bool even, int8_t *out, bool nt);
/* the same two loops over raw bfloat16 values (the max on their bits) */
int64_t mf_q8_absmax_bf16_avx2(const uint16_t *v, int64_t n, float *m);
int64_t mf_q8_quant_bf16_avx2(const uint16_t *v, int64_t n, float s, bool even, int8_t *out, bool nt);
#endif

#endif /* MOEFR_OPS_ROUTING_QUANT_INT8_H_ */
