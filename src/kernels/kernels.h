/* kernels.h - the micro-kernel table. Each ISA fills one table; the operators
 * call only through it. Every kernel is bit-exact with the scalar reference:
 * the same IEEE operations in the same order (see SPEC section 4, numerics). */
#ifndef MOEFR_KERNELS_KERNELS_H_
#define MOEFR_KERNELS_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

/* Data dtypes the operators compute on, as table indices. */
typedef enum { MF_F32 = 0, MF_F16 = 1, MF_BF16 = 2, MF_NUM_DT = 3 } mf_dt;

#define MF_MULTI 8
/* gradScales' fp32 blocks (kbody.h MF_K_BLOCK): row pieces start at multiples. */
#define MF_DOT_SPLIT 128
#define MF_ROWS 4
/* GroupedMatmul's groups of at most this many rows stream their weight (gemv below). */
#define MF_GEMV_ROWS 8

typedef struct mf_ukernels {
    const char *isa;
    /* out[j] = round_to_dt(g[j] * s), the product formed in fp32. */
    void (*scale[MF_NUM_DT])(const void *g, float s, void *out, size_t n);
    /* The terms (x[j] + b[j]) * g[j], j = 0..n-1, added to the eight fp64
     * sums acc[0..7] in the canonical order (kbody.h k_body, docs/DESIGN.md:
     * fp32 blocks of MF_DOT_SPLIT elements whose sums go to fp64); x or b may
     * be NULL (that term is absent, not zero-added). Callers that split a row
     * pass pieces starting at multiples of MF_DOT_SPLIT. */
    void (*dot[MF_NUM_DT])(const void *x, const void *b, const void *g, size_t n, double acc[8]);
    /* Both of the above over one tile of g, which is loaded once: out (when not
     * NULL) as scale, acc as dot (when x or b is not NULL). nt allows streaming
     * stores to out; a caller that sets it calls fence() before it publishes
     * the results. Same bits as scale then dot. */
    void (*scale_dot[MF_NUM_DT])(const void *g, float s, void *out, const void *x, const void *b, size_t n,
                                 double acc[8], int nt);
    /* scale_dot for q (1..MF_MULTI) kept slots of one token over the same g
     * tile: out[i] and x[i] not NULL; b NULL, or b[i] not NULL. Each slot's
     * sums keep their fixed order; interleaving independent slots hides the
     * latency of that order's serial adds. */
    void (*scale_dot_multi[MF_NUM_DT])(const void *g, size_t n, int q, const float *s, void *const *out,
                                       const void *const *x, const void *const *b, double (*acc)[8], int nt);
    /* scale_dot for q (1..MF_ROWS) unrelated rows, each with its own g:
     * out[i], g[i], x[i] not NULL; b NULL, or b[i] not NULL. Same bits as q
     * scale_dot calls; interleaving them hides each row's serial adds. */
    void (*scale_dot_rows[MF_NUM_DT])(size_t n, int q, const void *const *g, const float *s, void *const *out,
                                      const void *const *x, const void *const *b, double (*acc)[8], int nt);
    /* memcpy, with streaming stores when nt (then fence() before publishing). */
    void (*copy)(void *dst, const void *src, size_t bytes, int nt);
    /* Orders earlier streaming stores before later stores (sfence on x86). */
    void (*fence)(void);
    /* GroupedMatmul's groups of at most MF_GEMV_ROWS rows (gbody.h): c (rows x n, row stride ldc, fp32)
     * += x (rows x K fp32, row stride ldx) @ w (K x n of this dtype, row stride ws elements, unit
     * column stride), each element's products added in k order with one fma each: the same bits on
     * every table. */
    void (*gemv[MF_NUM_DT])(size_t rows, size_t n, size_t K, const float *x, size_t ldx, const void *w,
                            size_t ws, float *c, size_t ldc);
} mf_ukernels;

extern const mf_ukernels mf_ukernels_scalar;
/* SIMD tables, defined only when the build has them (x86-64). Use one only
 * when mf_cpu_features() says the CPU and OS support it. */
extern const mf_ukernels mf_ukernels_avx2;
extern const mf_ukernels mf_ukernels_avx512;     /* F/BW/VL, integer bf16 rounding */
extern const mf_ukernels mf_ukernels_avx512bf16; /* same, plus VCVTNEPS2BF16 */
/* AArch64 builds only. */
extern const mf_ukernels mf_ukernels_neon;

/* The canonical reduction of 8 lane sums. */
static inline double mf_reduce8(const double p[8]) {
    return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
}

/* Kernel table in use: chosen once from CPUID/XGETBV and MOEFR_ISA. Never
 * NULL; when MOEFR_ISA forces a path the CPU lacks this is the scalar table
 * but mf_isa_check() fails, and operators must call that first. */
const mf_ukernels *mf_kernels(void);
/* ACLNN_SUCCESS (0), or ACLNN_ERR_RUNTIME_ERROR with the message set when
 * MOEFR_ISA asked for a path this CPU or OS cannot run (or an unknown one). */
int mf_isa_check(const char *op);

#endif /* MOEFR_KERNELS_KERNELS_H_ */
