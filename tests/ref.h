/* ref.h - an independent float64 oracle for aclnnMoeFinalizeRoutingV2Grad,
 * written from SPEC section 4 alone (no src/ code), with its own fp16/bf16 conversions. */
#ifndef MOEFR_TESTS_REF_H_
#define MOEFR_TESTS_REF_H_

#include <stddef.h>
#include <stdint.h>

/* Floating dtypes the operator computes on. */
typedef enum { REF_F32 = 0, REF_F16 = 1, REF_BF16 = 2 } ref_dt;

size_t ref_size(ref_dt dt);
const char *ref_name(ref_dt dt);
/* Exact value of a bit pattern (low 16 bits for fp16/bf16). */
double ref_decode(ref_dt dt, uint32_t bits);
/* v rounded once, to nearest even, to dt: the oracle's conversion
 * (fp32: C's cast; fp16: gcc's _Float16; bf16: ref_round_exact). */
uint32_t ref_round(ref_dt dt, double v);
/* Rounding by exact power-of-two scaling and nearbyint, for any binary format
 * with ebits exponent and mbits fraction bits. */
uint32_t ref_round_exact(int ebits, int mbits, double v);
/* Rounding by binary search over the ordered patterns of fp16/bf16. */
uint32_t ref_round_search(ref_dt dt, double v);
/* Spacing of dt at |v| (the step to the next larger value), for finite v. */
double ref_ulp(ref_dt dt, double v);
/* Checks the conversions against each other on special and random values;
 * returns 0 or prints the first disagreement and returns 1. */
int ref_selftest(void);

/* A problem in logical (dense, row-major) form; every value is exact in its dtype. */
typedef struct ref_grad_in {
    int mode;                 /* dropPadMode */
    int64_t R, K, H, D0, E;   /* D0 rows of gradExpandedX; E rows of bias */
    ref_dt dt;                /* gradY, expandedX, bias, gradExpandedX */
    ref_dt gs_dt;             /* gradScales */
    const double *gy;         /* R*H */
    const int32_t *idx;       /* R*K, entry i = r*K + k */
    const double *x;          /* D0*H, or NULL */
    const double *scales;     /* R*K, or NULL (then K = 1) */
    const int32_t *eidx;      /* R*K; read only when bias is given */
    const double *bias;       /* E*H, or NULL */
} ref_grad_in;

typedef struct ref_grad_out {
    uint32_t *gx;             /* D0*H bit patterns, every element written */
    uint32_t *gs;             /* R*K: the canonical-order sum rounded once (scales only) */
    long double *gs_exact;    /* R*K: the sum in j order in extended precision */
    long double *gs_mag;      /* R*K: sum_j |x_j| * |g_j| for the error bound */
} ref_grad_out;

void ref_grad(const ref_grad_in *in, ref_grad_out *out);

/* 1 when got (a dt pattern) is within 1e-6 * mag + ulp(dt, got) / 2 of exact;
 * an infinity passes only when exact, moved by the relative part of the bound
 * towards it, rounds to that infinity. *err and *tol describe the check. */
int ref_gs_within(ref_dt dt, uint32_t got, long double exact, long double mag, double *err, double *tol);

#endif /* MOEFR_TESTS_REF_H_ */
