/* bench.h - the benchmark's entry point (bench.c) and what its files share:
 * the helpers of util.c and the measurements of ceiling.c, routing.c,
 * gating.c, gmm.c (with peak.c) and swiglu.c. */
#ifndef MOEFR_BENCH_BENCH_H_
#define MOEFR_BENCH_BENCH_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

/* The whole benchmark, for bench/main.c and `moefr bench` (argv[0] is a program name). */
int moefr_bench_main(int argc, char **argv);

/* util.c: */
double bench_now(void);
/* Buffers as a CANN program gets them: aclrtMalloc with the huge-page hint. */
void *bench_alloc(size_t n);
void bench_free(void *p);
/* An ND aclTensor over data: strides NULL for contiguous, storage the view's own extent. */
aclTensor *bench_tensor(int nd, const int64_t *dims, const int64_t *strides, aclDataType dt, void *data);
/* A one-tensor aclTensorList (it takes t). */
aclTensorList *bench_list(aclTensor *t);
/* n elements of random values in [-1, 1), exactly representable in dt (ACL_FLOAT, or 2-byte bf16 bits for
 * any other dt), es bytes each: a 64 Ki-element block, repeated. */
void bench_fill(char *p, int64_t n, aclDataType dt, size_t es);
/* The fixed-seed generator (xorshift64) behind bench_permutation and bench.c's inputs. */
uint32_t bench_rand(void);
/* idx[0..n) = a random permutation of 0..n-1 (a fixed-seed generator). */
void bench_permutation(int32_t *idx, int64_t n);
/* Seconds for a `threads`-thread copy of n bytes, the faster of memcpy and a
 * streaming copy (x86-64; util.c says why): the yardstick. */
double bench_copy_once(char *dst, const char *src, size_t n, int threads);
/* /proc/cpuinfo: the first line's value for key ("model name", "cpu MHz", ...) into v; 0 if found. */
int bench_cpuinfo(const char *key, char *v, size_t n);
/* The CPU for every printed figure: "model name (vendor family F model M)" (x86), or
 * the Arm implementer and part. */
const char *bench_cpu(void);
/* /proc/cpuinfo's "cpu MHz": the kernel's nominal figure, not a measured clock; 0 if absent. */
double bench_cpu_mhz(void);
/* peak.c: the arithmetic peak of `threads` threads, measured (GFLOP/s): fp32 with the
 * widest FMA, bf16 with VDPBF16PS (0 where the CPU has no such instruction); how: what
 * ran. -1 (and *fp32 0) when there is no loop for this CPU. */
int bench_peak(int threads, double *fp32, double *bf16, char *how, size_t n);
/* The median of v[0..n) (sorts v in place; the mean of the two middle values when n is even). */
double bench_median(double *v, int n);
/* The access-pattern ceilings (ceiling.c) of shape R, K, H with elements of es bytes. */
int bench_ceilings(int64_t R, int64_t K, int64_t H, size_t es, const char *dtype, int threads, int reps, int markdown);

/* Whether arithmetic costing ns_row per row per thread hides under the row-order
 * pattern's traffic (ceiling.c): prints the pattern, the stand-in arithmetic and both. */
int bench_overlap(int64_t R, int64_t K, int64_t H, size_t es, const char *dtype, int threads, int reps,
                  double ns_row, int markdown);

/* --routing (routing.c): InitRoutingV2, TokenPermute, TokenUnpermute, the routing-map pair at
 * (N, K, H) with E experts, fp32 and bf16, against a same-traffic memcpy. */
int bench_routing(int64_t N, int64_t K, int64_t H, int64_t E, int reps, int markdown);
/* `--gating` (gating.c): MoeGatingTopKSoftmax(V2) at (8192, 256), k = 8, fp32 and bf16. */
int bench_gating(int reps, int markdown);
/* `--gmm` (gmm.c): aclnnGroupedMatmulV4's GFLOP/s at MoE shapes (forward, dX, dW), fp32
 * and bf16, against one GEMM of the same FLOPs and the measured peak (peak.c); rows = tokens x top-k;
 * tokens 0: the default (1024), reps 0: the default (3). Sets MOEFR_SOC: call it first. */
int bench_gmm(int64_t tokens, int reps, int markdown);
/* gmm.c: one aclnnGroupedMatmulV4 call (splitItem 3, no bias or quant), both phases; the workspace is
 * kept across calls and grown outside the timing. Seconds, or -1 (status printed with what);
 * *cpu (may be NULL): the process's CPU seconds in it. bench_gmm_release frees the workspace. */
double bench_gmm_call(const aclTensorList *x, const aclTensorList *w, const aclTensor *gl, int64_t groupType,
                      int64_t groupListType, aclTensorList *y, double *cpu, const char *what);
void bench_gmm_release(void);
/* `--experts` (experts.c): bf16 GroupedMatmul at real models' expert shapes, prefill and decode, against
 * the measured peak and read bandwidth. want: the models whose name contains it (NULL: all); shape
 * {H, F, E, k}: that shape instead (NULL: the models); tokens 0: 2048; reps 0: 3. Sets MOEFR_SOC
 * (unless set): call it before any operator runs. */
int bench_experts(const char *want, const int64_t *shape, int64_t tokens, int reps, int markdown);
/* The read-only bandwidth of `threads` threads over n fresh bytes (ceiling.c's read pattern), GB/s: the median of reps. */
double bench_read_gbs(size_t n, int threads, int reps);
/* `--swiglu` (swiglu.c): aclnnSwiGlu and aclnnSwiGluGrad, GB/s against a same-traffic memcpy;
 * quick: a quarter of the rows; reps 0: the default. */
int bench_swiglu(int quick, int reps, int markdown);

#endif /* MOEFR_BENCH_BENCH_H_ */
