/* swiglu.h - what SwiGlu and SwiGluGrad (swiglu.c) share with their block
 * routines, which swiglu_core.h builds once per vector width (generic four
 * lanes in swiglu.c, AVX2 eight lanes in swiglu_avx2.c, AVX-512 sixteen in
 * swiglu_avx512.c, and with AVX512-BF16 in swiglu_avx512bf16.c; the same
 * bits). */
#ifndef MOEFR_OPS_ACT_SWIGLU_H_
#define MOEFR_OPS_ACT_SWIGLU_H_

#include "ops/common.h"

/* Elements of one half-row a block routine takes at a time (stack buffers;
 * a multiple of SG_WMAX). */
#define SG_CHUNK 1024
#define SG_WMAX 16 /* the widest block routine's lanes */

/* Forward: o[i] = silu(a[i]) * b[i]. Backward: oa[i] = d/da, ob[i] = d/db
 * of g[i] * silu(a[i]) * b[i]. n is a multiple of the routine's lanes; all arrays hold n. */
typedef void (*sg_fwd_fn)(const float *a, const float *b, float *o, int64_t n);
typedef void (*sg_bwd_fn)(const float *a, const float *b, const float *g, float *oa, float *ob, int64_t n);
/* s[0..n) (any n) rounded to bfloat16 at p, as mf_f32_to_bf16 does */
typedef void (*sg_narrow_fn)(const float *s, char *p, int64_t n);
/* The block routines on bfloat16 arrays (dense rows read and written in place).
 * sig is mf_swiglu_sig16(): sigmoid(a) looked up by a's bits. */
typedef void (*sg_fwd16_fn)(const float *sig, const char *a, const char *b, char *o, int64_t n);
typedef void (*sg_bwd16_fn)(const float *sig, const char *a, const char *b, const char *g, char *oa, char *ob,
                            int64_t n);

/* One width's block routines (swiglu_core.h defines SG_TABLE, its table). */
typedef struct sg_routines {
    const char *name;
    int w; /* lanes: n is a multiple of it */
    sg_fwd_fn fwd;
    sg_bwd_fn bwd;
    sg_narrow_fn narrow;
    sg_fwd16_fn fwd16;
    sg_bwd16_fn bwd16;
} sg_routines;
extern const sg_routines mf_swiglu_generic;

/* sigmoid(a) for each of the 65536 bfloat16 values a, indexed by a's bits:
 * the fp32 value the block routines compute for it (the same operations, so
 * the same bits), built on first use (thread-safe). A bfloat16 a has no other
 * value, so the 16-bit routines look s up instead of computing exp and a
 * division per element. 256 KiB. */
const float *mf_swiglu_sig16(void);
#if defined(MOEFR_X86_KERNELS)
extern const sg_routines mf_swiglu_avx2, mf_swiglu_avx512, mf_swiglu_avx512bf16;
#endif

#endif /* MOEFR_OPS_ACT_SWIGLU_H_ */
