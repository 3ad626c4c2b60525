/* swiglu_avx512.c - SwiGlu's block routines on sixteen-lane vectors, built
 * with AVX-512 F/BW/VL (-ffp-contract=off, as everywhere: no FMA contraction),
 * so the same operations as the four- and eight-lane builds and the same
 * bits; exp's 2^n is one VSCALEFPS (ops/gv.h says why the bits agree).
 * Chosen when the kernel path is avx512 on a CPU without AVX512-BF16
 * (swiglu_avx512bf16.c otherwise): on Zen 4, which runs each 512-bit
 * operation as two 256-bit halves, they still take 0.45-0.7x the time of the
 * eight-lane ones (half the instructions in the out-of-order window). */
#define GT_W 16
#define SG_NAME "avx512"
#define SG_TABLE mf_swiglu_avx512
#include "ops/act/swiglu_core.h"
