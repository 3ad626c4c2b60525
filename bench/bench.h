/* bench.h - the benchmark's entry point (bench.c) and what its files share:
 * the helpers of util.c and the measurements of ceiling.c, routing.c and gating.c. */
#ifndef MOEFR_BENCH_BENCH_H_
#define MOEFR_BENCH_BENCH_H_

#include <stddef.h>
#include <stdint.h>

/* The whole benchmark, for bench/main.c and `moefr bench` (argv[0] is a program name). */
int moefr_bench_main(int argc, char **argv);

/* util.c: */
double bench_now(void);
/* Buffers as a CANN program gets them: aclrtMalloc with the huge-page hint. */
void *bench_alloc(size_t n);
void bench_free(void *p);
/* The fixed-seed generator (xorshift64) behind bench_permutation and bench.c's inputs. */
uint32_t bench_rand(void);
/* idx[0..n) = a random permutation of 0..n-1 (a fixed-seed generator). */
void bench_permutation(int32_t *idx, int64_t n);
/* Seconds for a `threads`-thread memcpy of n bytes: the yardstick. */
double bench_copy_once(char *dst, const char *src, size_t n, int threads);
/* The access-pattern ceilings (ceiling.c) of shape R, K, H with elements of es bytes. */
int bench_ceilings(int64_t R, int64_t K, int64_t H, size_t es, const char *dtype, int threads, int reps, int markdown);

/* Whether arithmetic costing ns_row per row per thread hides under the row-order
 * pattern's traffic (ceiling.c): prints the pattern, the stand-in arithmetic and both. */
int bench_overlap(int64_t R, int64_t K, int64_t H, size_t es, const char *dtype, int threads, int reps,
                  double ns_row, int markdown);

/* --routing (routing.c): InitRoutingV2, TokenPermute, TokenUnpermute at
 * (N, K, H) with E experts, fp32 and bf16, against a same-traffic memcpy. */
int bench_routing(int64_t N, int64_t K, int64_t H, int64_t E, int reps, int markdown);
/* `--gating` (gating.c): MoeGatingTopKSoftmax(V2) at (8192, 256), k = 8, fp32 and bf16. */
int bench_gating(int reps, int markdown);

#endif /* MOEFR_BENCH_BENCH_H_ */
