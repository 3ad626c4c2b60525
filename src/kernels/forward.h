/* forward.h - the forward operator's kernel table (aclnnMoeFinalizeRoutingV2):
 * one token row at a time, one rounding per output element after an fp32 sum
 * (fp64 where forward_ref.h's pass test or the slot count asks for it). */
#ifndef MOEFR_KERNELS_FORWARD_H_
#define MOEFR_KERNELS_FORWARD_H_

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* Slots one kernel call sees at most; a token with more is done in groups
 * over an fp64 accumulator tile the caller keeps (MF_FWD_LOAD/!MF_FWD_FINAL). */
#define MF_FWD_KMAX 32

/* One token: its optional x1/x2 rows, its slots and its out row. Every row
 * pointer addresses element 0 of a unit-stride row of the data dtype. */
typedef struct mf_fwd_row {
    const void *x1, *x2; /* NULL when absent (x2 only with x1) */
    int nk;              /* slots in x/b/s */
    /* Slot q contributes s[q] * (x[q] + b[q]); a NULL pointer is an absent
     * term (not a zero). Both NULL: the slot contributes nothing at all. */
    const void *x[MF_FWD_KMAX];
    const void *b[MF_FWD_KMAX];
    /* 1.0 when the operator has no scales. The operators pass fp32 values
     * (scales as read); a FINAL call with any other value takes the fp64
     * order, whose SIMD tables fuse s * x + acc and so match the scalar table
     * only while s * x is exact (fp32 s). */
    double s[MF_FWD_KMAX];
    void *out;
    /* Rows of the next token (its gathered expandedX rows, x1, x2): SIMD
     * kernels prefetch them at the offset they are working on, so a gather of
     * K random rows is in flight a whole token ahead. Hints only. */
    int nnext;
    const void *next[MF_FWD_KMAX + 2];
    /* Bytes ahead in the slots' own x rows for the fp32 order's blocks to
     * prefetch as they go, never past the call's last element; 0: none. A
     * measured per-CPU fact (mf_cpu_fwd_prefetch_ahead). Hints only. */
    size_t ahead;
} mf_fwd_row;

enum {
    /* acc[0..n) holds partial sums of earlier slot groups: continue from them
     * instead of starting from x1 + x2 (or from the first present term). */
    MF_FWD_LOAD = 1,
    /* Round acc once to the dtype and store to out; otherwise store acc. */
    MF_FWD_FINAL = 2,
    /* The fp64 order even for a call without LOAD: the caller splits one
     * token's slots over several calls (K > MF_FWD_KMAX), and a call whose
     * earlier groups had no term must not switch to the fp32 order. */
    MF_FWD_FP64 = 4,
};

/* Elements [j0, j0+n) of the token. A call with flags == MF_FWD_FINAL whose
 * s[] are fp32 values follows forward_ref.h's fp32 order (groups of 32 from
 * j0, each in fp32 or, failing its pass test, in fp64 as below); every other
 * call, per element in fp64:
 *   acc = x1 (+ x2)  -- or, without x1, the first present slot term
 *   for each slot q in order: acc = acc + s[q] * (x[q] + b[q])
 *   FINAL: out = round_to_nearest_even(acc), +0.0 when nothing was present
 * acc holds n fp64 partial sums, unused when flags == MF_FWD_FINAL; its order
 * is the table's own (SIMD tables keep their lane layout), so a LOAD call must
 * use the same table, j0 and n as the call that stored it.
 * NaN results are stored as the canonical quiet NaN of the dtype (positive).
 * nt permits streaming stores to out (caller fences). Returns 1 when acc now
 * holds something (x1 or a term was present, or LOAD), else 0. */
typedef int (*mf_fwd_row_fn)(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt);

typedef struct mf_fwd_kernels {
    const char *isa;
    mf_fwd_row_fn row[MF_NUM_DT];
    void (*fence)(void); /* orders streaming stores before later stores */
} mf_fwd_kernels;

extern const mf_fwd_kernels mf_fwd_kernels_scalar;
extern const mf_fwd_kernels mf_fwd_kernels_avx2;   /* x86-64 builds only */
extern const mf_fwd_kernels mf_fwd_kernels_avx512; /* x86-64 builds only */
extern const mf_fwd_kernels mf_fwd_kernels_neon;   /* AArch64 builds only */

/* The table matching the ISA the backward's dispatch chose (mf_kernels()->isa). */
const mf_fwd_kernels *mf_fwd_kernels_select(void);

#endif /* MOEFR_KERNELS_FORWARD_H_ */
