/* peak.c - the machine's arithmetic peak, measured: every thread runs a loop
 * of independent multiply-adds (peak_loops.h, built per ISA) and the rates
 * of the threads, each over its own time, add up; the best of five trials
 * (other processes on a shared machine only ever lower it). fp32: the widest
 * FMA this CPU has (AVX-512, AVX2+FMA, or NEON's FMLA); bf16: AVX512-BF16's
 * VDPBF16PS, where the CPU has it. This is the rate a GEMM kernel could at
 * best reach, the yardstick of `--gmm`'s "of peak" columns. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PK_X86 1
float bench_peak_avx2_fp32(long iters);
float bench_peak_avx512_fp32(long iters);
float bench_peak_avx512_bf16(long iters);
#elif defined(__aarch64__)
#include <arm_neon.h>
static inline float pk_sum4(float32x4_t v) { return vaddvq_f32(v); }
#define PK_V float32x4_t
#define PK_A float32x4_t
#define PK_SET(x) vdupq_n_f32(x)
#define PK_INIT_A vdupq_n_f32(1e-7f)
#define PK_INIT_B vdupq_n_f32(1.0f)
#define PK_STEP(c, a, b) vfmaq_f32(c, a, b)
#define PK_SUM(v) pk_sum4(v)
#define PK_REG(a) "+w"(a)
#define PK_FN bench_peak_neon_fp32
static float bench_peak_neon_fp32(long iters);
#include "bench/peak_loops.h"
#endif

typedef struct pk_loop {
    float (*fn)(long iters);
    double flop; /* per iteration: 12 instructions x lanes x products per lane x 2 */
    const char *what;
} pk_loop;

typedef struct pk_job {
    const pk_loop *loop;
    long iters;
    double rate; /* GFLOP/s of this thread */
    float sink;
} pk_job;

static void *pk_thread(void *v) {
    pk_job *j = v;
    const double t0 = bench_now();
    j->sink = j->loop->fn(j->iters);
    const double t = bench_now() - t0;
    j->rate = t > 0 ? j->loop->flop * (double)j->iters / t / 1e9 : 0.0;
    return NULL;
}

/* GFLOP/s of `threads` threads running l, best of five trials of about 50 ms. */
static double pk_run(const pk_loop *l, int threads) {
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    long iters = 100000; /* calibrate on one thread */
    const double t0 = bench_now();
    volatile float s = l->fn(iters);
    (void)s;
    const double t = bench_now() - t0;
    if (t > 0) iters = (long)((double)iters * 0.05 / t) + 1;
    double best = 0.0;
    for (int trial = 0; trial < 5; trial++) {
        pk_job jobs[64];
        pthread_t tid[64];
        int started = 0;
        for (int i = 0; i < threads; i++) {
            jobs[i].loop = l, jobs[i].iters = iters, jobs[i].rate = 0.0;
            if (pthread_create(&tid[i], NULL, pk_thread, &jobs[i]) != 0) break;
            started++;
        }
        double sum = 0.0;
        for (int i = 0; i < started; i++) {
            pthread_join(tid[i], NULL);
            sum += jobs[i].rate;
        }
        if (started == threads && sum > best) best = sum;
    }
    return best;
}

int bench_peak(int threads, double *fp32, double *bf16, char *how, size_t n) {
    const pk_loop *f = NULL, *h = NULL;
#if defined(PK_X86)
    static const pk_loop AVX512_F32 = {bench_peak_avx512_fp32, 12 * 16 * 2, "AVX-512 VFMADD (16 lanes)"};
    static const pk_loop AVX512_BF16 = {bench_peak_avx512_bf16, 12 * 16 * 2 * 2, "VDPBF16PS (16 lanes x 2 products)"};
    static const pk_loop AVX2_F32 = {bench_peak_avx2_fp32, 12 * 8 * 2, "AVX2 VFMADD (8 lanes)"};
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) f = &AVX512_F32;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) f = &AVX2_F32;
    if (__builtin_cpu_supports("avx512bf16")) h = &AVX512_BF16;
#elif defined(__aarch64__)
    static const pk_loop NEON_F32 = {bench_peak_neon_fp32, 12 * 4 * 2, "NEON FMLA (4 lanes)"};
    f = &NEON_F32;
#endif
    *fp32 = f ? pk_run(f, threads) : 0.0;
    *bf16 = h ? pk_run(h, threads) : 0.0;
    snprintf(how, n, "%d thread(s), fp32: %s%s%s", threads, f ? f->what : "no loop for this CPU",
             h ? ", bf16: " : "", h ? h->what : "");
    return f ? 0 : -1;
}
