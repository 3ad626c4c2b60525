/* fwd_ref.h - an independent oracle for aclnnMoeFinalizeRoutingV2, written
 * from SPEC section 8 and the canonical order of issue 13 without any library
 * code (own dtype decoding, own integer round-to-nearest-even, own binary32
 * steps), plus a double-double "exact-ish" sum and the error bound.
 *
 * The canonical order of one token row: when the token has K <= 32 slots and
 * every scale is a binary32 value, per element an fp32 candidate a
 * (a = x1, a = fl32(a + x2), then per present slot v = fl32(x + b) or x or b,
 * a = fmaf(s, v, a), or fl32(s * v) for the first term), taken in groups of
 * 32 consecutive elements from element 0 of the row (the last group has the
 * H mod 32 rest). A group whose every a is finite with 2^-100 <= |a| < HI
 * (fp32: +inf, bf16: 0x1.fep127, fp16: 65504) stores RNE(a); any other group
 * stores, element by element, the SPEC section 8 fp64 sequence rounded once.
 * Tokens with K > 32 use the fp64 sequence everywhere. A row without any term
 * stores +0.0. */
#ifndef MOEFR_TESTS_FWD_REF_H_
#define MOEFR_TESTS_FWD_REF_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* aclDataType values (SPEC 2), repeated so the oracle needs no library header. */
enum { FR_F32 = 0, FR_F16 = 1, FR_BF16 = 27 };

/* A problem with dense, row-major host arrays (raw dtype bits). */
typedef struct fr_problem {
    int dtype;  /* data dtype: expandedX, x1, x2, bias, out */
    int sdtype; /* scales dtype */
    int mode;   /* dropPadMode 0..3 */
    int64_t R, K, H;
    int64_t D;  /* rows of expandedX: R*K (modes 0/2) or E*C (modes 1/3) */
    int64_t Eb; /* rows of bias */
    const void *x, *x1, *x2, *bias, *scales; /* NULL when absent */
    const int32_t *idx;                     /* R*K entries */
    const int32_t *eidx;                    /* R*K entries, row-major (R, K); may be NULL without bias */
} fr_problem;

size_t fr_size(int dtype);
double fr_decode(int dtype, const void *base, int64_t i);
/* Round v once, to nearest even, to dtype; returns the bits (low 16 for fp16/bf16). NaN -> canonical. */
uint32_t fr_round(int dtype, double v);
/* The spacing of dtype's representable numbers at |v| (subnormal spacing below the normal range). */
double fr_quantum(int dtype, double v);
/* Encode raw bits of dtype from a value exactly representable in it. */
uint32_t fr_encode_exact(int dtype, double v);

enum {
    FR_GROUP = 32,  /* elements per fp32 group */
    FR_KMAX32 = 32, /* tokens with at most this many slots may use fp32 */
};

/* One token row as the kernel sees it: row pointers at element 0 of
 * unit-stride rows of dtype, NULL for an absent term. */
typedef struct fr_row {
    int dtype;
    const void *x1, *x2; /* x2 only with x1 */
    int nk;
    const void *const *x, *const *b; /* nk entries each; both NULL: the slot has no term */
    const double *s;                 /* nk scales (1.0 without scales) */
} fr_row;

/* Elements [j0, j0+n) of the row into out (the row's element 0; raw dtype
 * bits), the canonical order with groups starting at j0; fp32_allowed = 0
 * forces the fp64 sequence (as for K > 32, or a kernel call that is not
 * a single FINAL one). The fp32 order also needs every s exact in binary32. */
void fr_row_forward(const fr_row *t, int64_t j0, int64_t n, void *out, int fp32_allowed);

/* Expected out (R*H raw elements of dtype), the canonical order above. */
void fr_forward(const fr_problem *p, void *out);
/* The SPEC section 8 fp64 sequence and one rounding for every element (the old
 * oracle; the fallback of the canonical order). */
void fr_forward_fp64(const fr_problem *p, void *out);
/* The error bound of an output element of a token with K slots: fp32 tokens
 * (K <= 32) 65 * 2^-24 * S * (1 + 2^-20), fp64 tokens (K + 3) * 2^-52 * S, plus
 * half a quantum of dtype at max(|got|, |exact|); S = the sum of |terms|. */
double fr_bound(int dtype, int64_t K, double abs_sum, double got, double exact);
/* Per element: the sum in double-double (hi + lo) and sum of |terms| (for the error bound). */
void fr_forward_exact(const fr_problem *p, double *hi, double *lo, double *abs_sum);

#endif /* MOEFR_TESTS_FWD_REF_H_ */
