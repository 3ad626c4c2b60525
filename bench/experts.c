/* experts.c - `moefr bench --experts`: aclnnGroupedMatmulV4 in bf16 at the
 * expert shapes of real MoE models, against the machine's arithmetic peak
 * and read bandwidth, both measured in the same run.
 *
 * Per model (hidden H, expert ffn F, E experts, top-k) two GEMMs, as a MoE
 * layer runs them: gate+up (K = H, N = 2F) and down (K = F, N = H); weights
 * (E, K, N) bf16, no bias, the group list in count mode (groupListType 1,
 * vllm-ascend's form) from random top-k routing (k distinct experts per
 * token, uniform), so groups are unequal as in a real batch.
 *
 *   prefill (tokens x k rows, 2048 tokens by default):
 *     dense    x (M, K) @ W[0] (K, N) as one call, E = 1: the same FLOPs
 *              through the same library, the reference of "ratio";
 *     forward  x @ W[e] per group (groupType 0);
 *     dX       grad (M, N) @ W[e]^T, the weight a transposed view;
 *     dW       x^T @ grad per group (groupType 2, K split), out (E, K, N).
 *   decode (1, 4, 16, 64 tokens): the forward only; a fresh routing for every
 *     call, so the experts it touches differ from call to call. What it reads
 *     is the touched experts' weights: GB/s = touched x K x N x 2 bytes / time,
 *     set against the read bandwidth.
 *
 * Weights stay in DRAM: one layer of every listed model is far larger than
 * the L3; where a layer is not 2.5 times the L3 the CPU reports, enough
 * layers are allocated to make it so and calls rotate through them.
 * Shapes whose buffers do not fit in 70 % of MemAvailable are skipped with a
 * line saying so (DeepSeek-V3's gate+up weight alone is 15 GB in bf16);
 * dW, which needs a second weight-sized buffer, separately.
 *
 * The peak: bench/peak.c's loop of the instruction bf16 runs on (VDPBF16PS
 * where moefrBlas() says oneDNN uses it, else the fp32 FMA: bf16 is widened
 * to fp32 before the BLAS), on the same threads. The read bandwidth:
 * ceiling.c's read-only pattern over 1 GiB. Times are medians of the
 * repeats; "ratio" is the median over repeats of dense time / row time. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "bench/bench.h"
#include "moefr/moefr.h"

typedef struct model {
    const char *name;
    int64_t H, F, E, k;
} model;

/* hidden, moe_intermediate_size, routed experts, experts per token: from each model's config.json */
static const model MODELS[] = {
    {"Qwen3-30B-A3B", 2048, 768, 128, 8},    {"Qwen3-235B-A22B", 4096, 1536, 128, 8},
    {"DeepSeek-V2-Lite", 2048, 1408, 64, 6}, {"DeepSeek-V3", 7168, 2048, 256, 8},
    {"gpt-oss-20b", 2880, 2880, 32, 4},      {"Mixtral-8x7B", 4096, 14336, 8, 2},
};

#define MAX_REPS 64
#define MAX_LAYERS 16
static const int64_t DECODE_TOKENS[] = {1, 4, 16, 64};

/* counts[e] = rows routed to expert e when T tokens each pick k distinct experts of E; returns
 * how many experts got a row. perm: E int32, any permutation (kept between calls). */
static int64_t route(int64_t T, int64_t E, int64_t k, int32_t *perm, int64_t *counts) {
    memset(counts, 0, (size_t)E * sizeof *counts);
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < k; j++) { /* a partial shuffle: perm[0..k) a uniform k-subset */
            const int64_t r = j + (int64_t)(bench_rand() % (uint32_t)(E - j));
            const int32_t v = perm[r];
            perm[r] = perm[j], perm[j] = v;
            counts[v]++;
        }
    int64_t touched = 0;
    for (int64_t e = 0; e < E; e++) touched += counts[e] > 0;
    return touched;
}

static double mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024.0;
}

/* The L3 (the last level the kernel lists for cpu0), bytes; 0 if unknown. */
static double last_cache(void) {
    double best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], v[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(v, sizeof v, f)) {
            char *end;
            double n = strtod(v, &end);
            n *= *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : 1.0;
            if (n > best) best = n;
        }
        fclose(f);
    }
    return best;
}

static int name_matches(const char *name, const char *want) {
    for (const char *p = name; *p; p++) {
        size_t i = 0;
        while (want[i] && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)want[i])) i++;
        if (!want[i]) return 1;
    }
    return 0;
}

typedef struct ctx {
    int reps, markdown, threads;
    int64_t tokens;
    double peak, read_gbs, budget, l3;
    int32_t perm[4096];
} ctx;

/* One call over freshly made descriptors (made and destroyed outside the timing). */
static double call(int nd_x, const int64_t *dx, const int64_t *sx, void *x, int nd_w, const int64_t *dw,
                   const int64_t *sw, void *w, int nd_y, const int64_t *dy, void *y, int64_t E, int64_t *counts,
                   int64_t groupType, const char *what) {
    const int64_t dE[1] = {E};
    aclTensorList *lx = bench_list(bench_tensor(nd_x, dx, sx, ACL_BF16, x));
    aclTensorList *lw = bench_list(bench_tensor(nd_w, dw, sw, ACL_BF16, w));
    aclTensorList *ly = bench_list(bench_tensor(nd_y, dy, NULL, ACL_BF16, y));
    aclTensor *gl = bench_tensor(1, dE, NULL, ACL_INT64, counts);
    const double t = lx && lw && ly && gl ? bench_gmm_call(lx, lw, gl, groupType, 1, ly, NULL, what) : -1;
    if (lx) aclDestroyTensorList(lx);
    if (lw) aclDestroyTensorList(lw);
    if (ly) aclDestroyTensorList(ly);
    if (gl) aclDestroyTensor(gl);
    return t;
}

static int gemm(ctx *c, const model *m, const char *gname, int64_t K, int64_t N) {
    const int64_t E = m->E, T = c->tokens, M = T * m->k;
    /* x and y hold the prefill's rows and the largest decode's */
    const int64_t nd = sizeof DECODE_TOKENS / sizeof DECODE_TOKENS[0], Mb = M > DECODE_TOKENS[nd - 1] * m->k ? M : DECODE_TOKENS[nd - 1] * m->k;
    const double wbytes = 2.0 * (double)E * (double)K * (double)N, act = 2.0 * 2.0 * (double)Mb * (double)(K + N);
    int layers = 1;
    if (c->l3 > 0 && wbytes < 2.5 * c->l3) layers = (int)(2.5 * c->l3 / wbytes) + 1;
    if (layers > MAX_LAYERS) layers = MAX_LAYERS;
    while (layers > 1 && layers * wbytes + act > c->budget) layers--;
    if (wbytes + act > c->budget) {
        printf("  %-16s %-7s skipped: weight %.2f GB + activations %.2f GB > the budget %.2f GB (70%% of "
               "MemAvailable)\n", m->name, gname, wbytes / 1e9, act / 1e9, c->budget / 1e9);
        return 0;
    }
    const int with_dw = layers * wbytes + act + wbytes <= c->budget;
    char *w[MAX_LAYERS] = {0}, *x = bench_alloc((size_t)(Mb * K) * 2), *g = bench_alloc((size_t)(M * N) * 2);
    char *y = bench_alloc((size_t)(Mb * N) * 2), *dx = bench_alloc((size_t)(M * K) * 2);
    char *dwb = with_dw ? bench_alloc((size_t)wbytes) : NULL;
    int64_t *counts = bench_alloc((size_t)E * 8), *one = bench_alloc(8);
    int ok = x && g && y && dx && counts && one && (!with_dw || dwb), rc = 1;
    for (int l = 0; l < layers && ok; l++) ok = (w[l] = bench_alloc((size_t)wbytes)) != NULL;
    if (!ok) {
        fprintf(stderr, "bench --experts: %s %s: out of memory\n", m->name, gname);
        goto done;
    }
    for (int l = 0; l < layers; l++) bench_fill(w[l], E * K * N, ACL_BF16, 2);
    bench_fill(x, Mb * K, ACL_BF16, 2), bench_fill(g, M * N, ACL_BF16, 2);
    memset(y, 0, (size_t)(Mb * N) * 2), memset(dx, 0, (size_t)(M * K) * 2); /* pages in before timing */
    if (dwb) memset(dwb, 0, (size_t)wbytes);
    for (int64_t e = 0; e < E; e++) c->perm[e] = (int32_t)e;

    const int64_t dMK[2] = {M, K}, dMN[2] = {M, N}, dEKN[3] = {E, K, N}, d1KN[3] = {1, K, N};
    const int64_t dENK[3] = {E, N, K}, sENK[3] = {K * N, 1, N}, dKM[2] = {K, M}, sKM[2] = {1, K};
    const double flop = 2.0 * (double)M * (double)K * (double)N;
    enum { DENSE, FWD, DX, DW, NR };
    static const char *const RN[NR] = {"dense", "forward", "dX", "dW"};
    double t[NR][MAX_REPS], ratio[NR][MAX_REPS];
    int nr = with_dw ? NR : DW;
    for (int i = 0; i < c->reps; i++) {
        char *wl = w[i % layers];
        route(T, E, m->k, c->perm, counts);
        one[0] = M;
        t[DENSE][i] = call(2, dMK, NULL, x, 3, d1KN, NULL, wl, 2, dMN, y, 1, one, 0, "dense");
        t[FWD][i] = call(2, dMK, NULL, x, 3, dEKN, NULL, wl, 2, dMN, y, E, counts, 0, "forward");
        t[DX][i] = call(2, dMN, NULL, g, 3, dENK, sENK, wl, 2, dMK, dx, E, counts, 0, "dX");
        if (with_dw) t[DW][i] = call(2, dKM, sKM, x, 2, dMN, NULL, g, 3, dEKN, dwb, E, counts, 2, "dW");
        for (int r = 0; r < nr; r++)
            if (t[r][i] < 0) goto done;
        for (int r = 0; r < nr; r++) ratio[r][i] = t[DENSE][i] / t[r][i];
    }
    for (int r = 0; r < nr; r++) {
        const double s = bench_median(t[r], c->reps), gf = flop / s / 1e9, rt = bench_median(ratio[r], c->reps);
        char rs[16] = "-", pk[16] = "-";
        if (r != DENSE) snprintf(rs, sizeof rs, "%.2f", rt);
        if (c->peak > 0) snprintf(pk, sizeof pk, "%.2f", gf / c->peak);
        if (c->markdown)
            printf("| %s | %s | prefill %lld x %lld = %lld rows | %s | %.1f ms | %.1f | %s | %s | | |\n", m->name,
                   gname, (long long)T, (long long)m->k, (long long)M, RN[r], s * 1e3, gf, pk, rs);
        else
            printf("  %-16s %-7s prefill %5lld rows %-7s %9.2f ms %7.2f GFLOP/s  %5s of peak  ratio to dense %s\n",
                   m->name, gname, (long long)M, RN[r], s * 1e3, gf, pk, rs);
    }
    if (!with_dw)
        printf("  %-16s %-7s dW skipped: a second %.2f GB buffer exceeds the budget\n", m->name, gname, wbytes / 1e9);

    for (int64_t d = 0; d < nd; d++) {
        const int64_t td = DECODE_TOKENS[d], Md = td * m->k;
        const int64_t dMKd[2] = {Md, K}, dMNd[2] = {Md, N};
        const int dreps = c->reps * 5 < MAX_REPS ? c->reps * 5 : MAX_REPS;
        double tt[MAX_REPS], gbs[MAX_REPS], touched_sum = 0;
        for (int i = 0; i < dreps; i++) {
            const int64_t touched = route(td, E, m->k, c->perm, counts);
            tt[i] = call(2, dMKd, NULL, x, 3, dEKN, NULL, w[i % layers], 2, dMNd, y, E, counts, 0, "decode");
            if (tt[i] < 0) goto done;
            gbs[i] = (double)touched * (double)K * (double)N * 2.0 / tt[i] / 1e9;
            touched_sum += (double)touched;
        }
        const double s = bench_median(tt, dreps), gb = bench_median(gbs, dreps);
        const double gf = 2.0 * (double)Md * (double)K * (double)N / s / 1e9;
        char fr[16] = "-";
        if (c->read_gbs > 0) snprintf(fr, sizeof fr, "%.2f", gb / c->read_gbs);
        if (c->markdown)
            printf("| %s | %s | decode %lld x %lld = %lld rows | forward | %.0f us | %.2f | | | %.1f (%.1f experts) | %s |\n",
                   m->name, gname, (long long)td, (long long)m->k, (long long)Md, s * 1e6, gf, gb,
                   touched_sum / dreps, fr);
        else
            printf("  %-16s %-7s decode %3lld tokens (%.1f experts) %9.0f us %7.2f GFLOP/s  weights %6.1f GB/s, %s of "
                   "read bandwidth\n",
                   m->name, gname, (long long)td, touched_sum / dreps, s * 1e6, gf, gb, fr);
    }
    rc = 0;
done:
    fflush(stdout);
    for (int l = 0; l < layers; l++) bench_free(w[l]);
    void *b[] = {x, g, y, dx, dwb, counts, one};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) bench_free(b[i]);
    return rc;
}

static int run_model(ctx *c, const model *m) {
    if (m->E < 1 || m->E > 4096 || m->k < 1 || m->k > m->E || m->H < 1 || m->F < 1) {
        fprintf(stderr, "bench --experts: bad shape H %lld F %lld E %lld k %lld\n", (long long)m->H,
                (long long)m->F, (long long)m->E, (long long)m->k);
        return 1;
    }
    if (c->markdown)
        printf("| **%s** (hidden %lld, ffn %lld, %lld experts, top-%lld) | | | | | | | | | |\n", m->name,
               (long long)m->H, (long long)m->F, (long long)m->E, (long long)m->k);
    else
        printf("%s: hidden %lld, ffn %lld, %lld experts, top-%lld\n", m->name, (long long)m->H, (long long)m->F,
               (long long)m->E, (long long)m->k);
    return gemm(c, m, "gate+up", m->H, 2 * m->F) | gemm(c, m, "down", m->F, m->H);
}

int bench_experts(const char *want, const int64_t *shape, int64_t tokens, int reps, int markdown) {
    setenv("MOEFR_SOC", "ascend910b", 0); /* bf16 runs alike under both rules; A2/A3 is what the projects run */
    static ctx c;
    c.reps = reps <= 0 ? 3 : reps > MAX_REPS ? MAX_REPS : reps;
    c.tokens = tokens > 0 ? tokens : 2048;
    c.markdown = markdown;
    c.threads = moefrNumThreads();
    c.budget = 0.7 * mem_available();
    c.l3 = last_cache();
    double fp32 = 0, bf16 = 0;
    char how[192] = "";
    const char *blas = moefrBlas();
    const int dot = strstr(blas, "VDPBF16PS") != NULL;
    const int have = bench_peak(c.threads, &fp32, &bf16, how, sizeof how) == 0;
    c.peak = !have ? 0 : dot && bf16 > 0 ? bf16 : fp32;
    c.read_gbs = bench_read_gbs((size_t)1 << 30, c.threads, 5);
    printf("moefr %s, kernel path %s, %d threads: aclnnGroupedMatmulV4 bf16 at real expert shapes, median of %d "
           "repeats (decode: %d)\n",
           moefrVersion(), moefrIsa(), c.threads, c.reps, c.reps * 5 < MAX_REPS ? c.reps * 5 : MAX_REPS);
    printf("CPU: %s; BLAS: %s\n", bench_cpu(), blas);
    if (have)
        printf("peak measured (bench/peak.c, %s): %.1f GFLOP/s, the %s loop (%s)\n", how, c.peak,
               dot && bf16 > 0 ? "VDPBF16PS" : "fp32 FMA",
               dot ? "oneDNN runs bf16 on VDPBF16PS" : "bf16 is widened to fp32 before the BLAS");
    else
        printf("peak: no loop for this CPU, \"of peak\" not shown\n");
    if (strstr(blas, "AMX"))
        printf("bf16 may run on AMX tiles where oneDNN chooses them; the peak above leaves them out\n");
    printf("read bandwidth (ceiling.c's read-only pattern, 1 GiB, %d threads): %.1f GB/s; L3 %.0f MiB; budget %.1f GB "
           "(70%% of MemAvailable)\n",
           c.threads, c.read_gbs, c.l3 / 1048576.0, c.budget / 1e9);
    printf("prefill: %lld tokens; rows = tokens x top-k routed at random (count group list); GFLOP/s = 2*M*K*N / "
           "median time;\nratio = median over repeats of dense time / row time (dense: x @ W[0] as one call, the "
           "same FLOPs);\ndecode: a fresh routing per call, GB/s = the touched experts' weight bytes / time\n\n",
           (long long)c.tokens);
    if (markdown)
        printf("| model | GEMM | rows | row | time | GFLOP/s | of peak | ratio to dense | touched weights GB/s | of "
               "read bandwidth |\n|---|---|---|---|---|---|---|---|---|---|\n");
    int fails = 0, ran = 0;
    if (shape) {
        const model m = {"custom", shape[0], shape[1], shape[2], shape[3]};
        fails += run_model(&c, &m), ran++;
    } else {
        for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
            if (!want || name_matches(MODELS[i].name, want)) fails += run_model(&c, &MODELS[i]), ran++;
    }
    bench_gmm_release();
    if (!ran) {
        fprintf(stderr, "bench --experts: no model matches \"%s\"; the models:", want);
        for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) fprintf(stderr, " %s", MODELS[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    return fails ? 1 : 0;
}
