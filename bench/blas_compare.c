/* blas_compare.c - how GroupedMatmul's BLAS was chosen (docs/BENCHMARKS.md,
 * "GroupedMatmul: which BLAS"): single-precision GEMM GFLOP/s of each library
 * given on the command line, one thread alone and two threads at once (each
 * calling the library on its own data, as moefr's workers call it), at the
 * shapes moefr calls the BLAS with (output tiles of up to 512 x 1024) and at
 * whole expert GEMMs. Libraries are opened with dlopen: cblas_sgemm, or
 * dnnl_sgemm for oneDNN (run with OMP_NUM_THREADS=1: one thread per call).
 * Not built by CMake (it needs none of moefr):
 *   cc -O2 -o blas_compare bench/blas_compare.c -ldl -lpthread
 *   OMP_NUM_THREADS=1 ./blas_compare /usr/lib/x86_64-linux-gnu/openblas-serial/libopenblas.so.0 \
 *       /usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4 /usr/lib/x86_64-linux-gnu/libdnnl.so.2
 * (Debian packages libopenblas0-serial, libblis4-serial, libdnnl2.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void (*cblas_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
                         int);
typedef int (*dnnl_fn)(char, char, long, long, long, float, const float *, long, const float *, long, float, float *,
                       long);

typedef struct job {
    cblas_fn cs;
    dnnl_fn ds;
    int M, K, N, reps;
    double seconds; /* median of reps */
} job;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *run(void *arg) {
    job *j = arg;
    float *a = malloc(sizeof(float) * (size_t)j->M * (size_t)j->K), *b = malloc(sizeof(float) * (size_t)j->K * (size_t)j->N),
          *c = malloc(sizeof(float) * (size_t)j->M * (size_t)j->N);
    for (long i = 0; i < (long)j->M * j->K; i++) a[i] = (float)(i % 13) / 8.0f - 0.75f;
    for (long i = 0; i < (long)j->K * j->N; i++) b[i] = (float)(i % 11) / 8.0f - 0.625f;
    double t[16];
    for (int r = 0; r < j->reps; r++) {
        const double t0 = now();
        if (j->ds)
            j->ds('N', 'N', j->M, j->N, j->K, 1.0f, a, j->K, b, j->N, 0.0f, c, j->N);
        else
            j->cs(101, 111, 111, j->M, j->N, j->K, 1.0f, a, j->K, b, j->N, 0.0f, c, j->N); /* row-major, no transposes */
        t[r] = now() - t0;
    }
    qsort(t, (size_t)j->reps, sizeof t[0], cmp);
    j->seconds = t[j->reps / 2];
    free(a), free(b), free(c);
    return NULL;
}

int main(int argc, char **argv) {
    static const int shapes[][3] = {{128, 2048, 1024}, {256, 2048, 1024}, {512, 2048, 1024}, {512, 1408, 1024},
                                    {256, 2048, 2816}, {2048, 2048, 2816}};
    printf("sgemm GFLOP/s, median of 7 calls; 2 threads: each thread's own calls at once, the sum of both\n");
    printf("%-62s %16s %8s %10s\n", "library", "M x K x N", "1 thread", "2 threads");
    for (int l = 1; l < argc; l++) {
        void *h = dlopen(argv[l], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            printf("%-62s %s\n", argv[l], dlerror());
            continue;
        }
        job proto = {(cblas_fn)dlsym(h, "cblas_sgemm"), (dnnl_fn)dlsym(h, "dnnl_sgemm"), 0, 0, 0, 7, 0};
        if (!proto.cs && !proto.ds) {
            printf("%-62s no cblas_sgemm or dnnl_sgemm\n", argv[l]);
            continue;
        }
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            job one = proto, two[2] = {proto, proto};
            one.M = two[0].M = two[1].M = shapes[s][0];
            one.K = two[0].K = two[1].K = shapes[s][1];
            one.N = two[0].N = two[1].N = shapes[s][2];
            run(&one);
            pthread_t th[2];
            for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run, &two[i]);
            for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
            const double flop = 2.0 * one.M * one.K * one.N;
            printf("%-62s %5d x %4d x %4d %8.1f %10.1f\n", argv[l], one.M, one.K, one.N, flop / one.seconds * 1e-9,
                   flop / two[0].seconds * 1e-9 + flop / two[1].seconds * 1e-9);
        }
    }
    return 0;
}
