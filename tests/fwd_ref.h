/* fwd_ref.h - an independent float64 oracle for aclnnMoeFinalizeRoutingV2,
 * written from SPEC section 8 without any library code (own dtype decoding and
 * own integer round-to-nearest-even), plus a double-double "exact-ish" sum. */
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

/* Expected out (R*H raw elements of dtype), the spec's fp64 sequence and one rounding. */
void fr_forward(const fr_problem *p, void *out);
/* Per element: the sum in double-double (hi + lo) and sum of |terms| (for the error bound). */
void fr_forward_exact(const fr_problem *p, double *hi, double *lo, double *abs_sum);

#endif /* MOEFR_TESTS_FWD_REF_H_ */
