/* dispatch.c - picks the kernel table once per process from CPUID/XGETBV
 * (x86-64) or getauxval(AT_HWCAP/AT_HWCAP2) (AArch64) and MOEFR_ISA. A forced path the CPU cannot run is refused, never emulated. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "cpu/cpu.h"
#include "internal.h"
#include "moefr/moefr.h"

#if defined(MOEFR_X86_KERNELS)
#include <cpuid.h>
#define MF_X86 1

/* XGETBV without -mxsave: this file is built for the baseline ISA. */
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

unsigned mf_cpu_features(void) {
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return 0;
    unsigned long long xcr0 = xgetbv0();
    const int ymm_os = (xcr0 & 0x6) == 0x6;            /* XMM and YMM state */
    const int zmm_os = ymm_os && (xcr0 & 0xE0) == 0xE0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    unsigned b7 = 0, a71 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        b7 = b;
        if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) a71 = a;
    }
    const int avx2 = (b7 >> 5) & 1, avx512f = (b7 >> 16) & 1, avx512bw = (b7 >> 30) & 1,
              avx512vl = (b7 >> 31) & 1, avx512bf16 = (a71 >> 5) & 1;
    if (ymm_os && avx2 && fma && f16c) f |= MF_CPU_AVX2;
    if ((f & MF_CPU_AVX2) && zmm_os && avx512f && avx512bw && avx512vl) {
        f |= MF_CPU_AVX512;
        if (avx512bf16) f |= MF_CPU_AVX512BF16;
    }
    return f;
}
#elif defined(MOEFR_NEON_KERNELS)
#include <sys/auxv.h>
#define MF_NEON 1
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif

unsigned mf_cpu_features(void) {
    unsigned f = 0;
    if (getauxval(AT_HWCAP) & HWCAP_ASIMD) f |= MF_CPU_NEON;
    if ((f & MF_CPU_NEON) && (getauxval(AT_HWCAP2) & HWCAP2_BF16)) f |= MF_CPU_NEON_BF16;
    return f;
}
#else
unsigned mf_cpu_features(void) { return 0; }
#endif

const mf_ukernels *mf_isa_select(const char *request, unsigned features, char *err, size_t errlen) {
    const int best = request == NULL || request[0] == '\0';
#ifdef MF_X86
    const mf_ukernels *avx512 = (features & MF_CPU_AVX512BF16) ? &mf_ukernels_avx512bf16 : &mf_ukernels_avx512;
    if (best) {
        if (features & MF_CPU_AVX512) return avx512;
        if (features & MF_CPU_AVX2) return &mf_ukernels_avx2;
        return &mf_ukernels_scalar;
    }
    if (strcmp(request, "avx512") == 0) {
        if (features & MF_CPU_AVX512) return avx512;
        snprintf(err, errlen,
                 "MOEFR_ISA=avx512, but this CPU lacks AVX-512 F/BW/VL or the OS does not enable ZMM state");
        return NULL;
    }
    if (strcmp(request, "avx2") == 0) {
        if (features & MF_CPU_AVX2) return &mf_ukernels_avx2;
        snprintf(err, errlen,
                 "MOEFR_ISA=avx2, but this CPU lacks AVX2/FMA/F16C or the OS does not enable YMM state");
        return NULL;
    }
#elif defined(MF_NEON)
    if (best) return (features & MF_CPU_NEON) ? &mf_ukernels_neon : &mf_ukernels_scalar;
    if (strcmp(request, "neon") == 0) {
        if (features & MF_CPU_NEON) return &mf_ukernels_neon;
        snprintf(err, errlen, "MOEFR_ISA=neon, but this CPU lacks Advanced SIMD (HWCAP_ASIMD)");
        return NULL;
    }
#else
    (void)features;
    if (best) return &mf_ukernels_scalar;
#endif
    if (strcmp(request, "scalar") == 0) return &mf_ukernels_scalar;
#ifdef MF_X86
    snprintf(err, errlen, "MOEFR_ISA=%.32s is not a kernel path of this build (scalar, avx2, avx512)", request);
#elif defined(MF_NEON)
    snprintf(err, errlen, "MOEFR_ISA=%.32s is not a kernel path of this build (scalar, neon)", request);
#else
    snprintf(err, errlen, "MOEFR_ISA=%.32s is not a kernel path of this build (scalar)", request);
#endif
    return NULL;
}

static const mf_ukernels *g_table = &mf_ukernels_scalar;
static char g_refused[200]; /* non-empty: MOEFR_ISA was refused */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void choose(void) {
    const char *req = getenv("MOEFR_ISA");
    unsigned f = mf_cpu_features();
    const mf_ukernels *t = mf_isa_select(req, f, g_refused, sizeof g_refused);
    if (t == NULL) {
        /* Loud whatever MOEFR_LOG_LEVEL says: a forced path that silently
         * changed would make a test run prove nothing. */
        fprintf(stderr, "moefr: %s; operators will fail with ACLNN_ERR_RUNTIME_ERROR\n", g_refused);
        return;
    }
    g_table = t;
    const char *extra = "";
#ifdef MF_X86
    if (t == &mf_ukernels_avx512bf16) extra = " with AVX512-BF16";
#endif
    mf_log(MF_LOG_INFO, "kernel path %s%s (cpu features 0x%x%s)", t->isa, extra, f, req && *req ? ", forced" : "");
}

const mf_ukernels *mf_kernels(void) {
    pthread_once(&g_once, choose);
    return g_table;
}

int mf_isa_check(const char *op) {
    pthread_once(&g_once, choose);
    if (g_refused[0]) return mf_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: %s", op, g_refused);
    return ACLNN_SUCCESS;
}

const char *moefrIsa(void) {
    pthread_once(&g_once, choose);
    return g_refused[0] ? "refused" : g_table->isa;
}

/* ---- per-CPU tuning (cpu.h) ----
 * Each entry: a vendor, the features it needs, the value, and where it was
 * measured. A CPU no entry names keeps the default (0: what every CPU ran
 * before the entry). */
static const struct tune_entry {
    const char *vendor;
    unsigned needs;
    size_t fwd_prefetch;
} g_tune[] = {
    /* Xeon under KVM (family 6 model 167 as reported, AVX-512 BF16/FP16,
     * AMX), docs/BENCHMARKS.md "Per-CPU tuning": 256 bytes ahead took the forward from
     * 0.52 to 0.61-0.63 of the copy at 8192,8,4096 bf16, 0.61 to 0.65-0.66
     * fp32 (reading alone: 0.67), 0.54-0.55 to 0.62-0.64 at 4096,8,7168
     * bf16, on the avx2 path as on avx512; 128 and 512 gained less, 1024 and
     * more lost. */
    {"GenuineIntel", MF_CPU_AVX512, 256},
};

size_t mf_tune_fwd_prefetch(const char *vendor, unsigned features) {
    for (size_t i = 0; i < sizeof g_tune / sizeof g_tune[0]; i++)
        if (strcmp(vendor, g_tune[i].vendor) == 0 && (features & g_tune[i].needs) == g_tune[i].needs)
            return g_tune[i].fwd_prefetch;
    return 0;
}

static void cpu_vendor(char v[13]) {
    memset(v, 0, 13);
#ifdef MF_X86
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) memcpy(v, &b, 4), memcpy(v + 4, &d, 4), memcpy(v + 8, &c, 4);
#endif
}

size_t mf_cpu_fwd_prefetch_ahead(void) {
    static _Atomic long cached = -1; /* racing first calls compute the same value */
    long t = atomic_load_explicit(&cached, memory_order_relaxed);
    if (t >= 0) return (size_t)t;
    char vendor[13];
    cpu_vendor(vendor);
    t = (long)mf_tune_fwd_prefetch(vendor, mf_cpu_features());
    const char *env = getenv("MOEFR_FWD_PREFETCH");
    if (env && *env) {
        char *end = NULL;
        const long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 4096) t = v;
        else mf_log(MF_LOG_WARN, "MOEFR_FWD_PREFETCH=%.32s is not a byte count from 0 to 4096: ignored", env);
    }
    atomic_store_explicit(&cached, t, memory_order_relaxed);
    return (size_t)t;
}
