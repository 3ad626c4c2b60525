/* cpu.h - CPU feature detection (CPUID + XGETBV, or AArch64 HWCAPs) and the kernel-table choice,
 * split so tests can run the choice against made-up feature sets. */
#ifndef MOEFR_CPU_CPU_H_
#define MOEFR_CPU_CPU_H_

#include <stddef.h>

#include "kernels/kernels.h"

/* Each bit means: the CPU has the instructions AND the OS saves the registers. */
enum {
    MF_CPU_AVX2 = 1u << 0,       /* AVX2 + FMA + F16C, YMM state enabled */
    MF_CPU_AVX512 = 1u << 1,     /* AVX-512 F + BW + VL, opmask/ZMM state enabled */
    MF_CPU_AVX512BF16 = 1u << 2, /* AVX512_BF16 on top of MF_CPU_AVX512 */
    MF_CPU_NEON = 1u << 3,       /* AArch64 Advanced SIMD (HWCAP_ASIMD) */
    MF_CPU_NEON_BF16 = 1u << 4,  /* FEAT_BF16 (HWCAP2_BF16); informational: the NEON
                                  * kernels round bf16 in integers, same bits either way */
};
unsigned mf_cpu_features(void);

/* The table for `request` (MOEFR_ISA's value; NULL or "" = best available)
 * on a CPU with `features`; NULL with a message in err when refused. */
const mf_ukernels *mf_isa_select(const char *request, unsigned features, char *err, size_t errlen);

/* Per-CPU tuning: a small table of facts measured on one kind of CPU and
 * applied to it alone (as oneDNN and OpenBLAS choose per microarchitecture);
 * docs/DESIGN.md lists the entries with their measurements. None changes a
 * bit of any result.
 *
 * The forward's in-row prefetch distance (mf_fwd_row.ahead), in bytes, for
 * rows longer than a page: the table's entry for this CPU (vendor is CPUID's
 * 12-byte string, "" where there is none), then MOEFR_FWD_PREFETCH=<bytes>,
 * 0 to 4096, if set (anything else is ignored with a warning). */
size_t mf_tune_fwd_prefetch(const char *vendor, unsigned features);
size_t mf_cpu_fwd_prefetch_ahead(void);

#endif /* MOEFR_CPU_CPU_H_ */
