/* gmm.c - `moefr bench --gmm`: aclnnGroupedMatmulV4 at MoE shapes, GFLOP/s
 * against one GEMM of the same FLOPs measured in the same run, and against
 * the machine's arithmetic peak, measured before the GEMMs (peak.c: fp32 FMA,
 * and VDPBF16PS for bf16 on oneDNN).
 *
 * Per MoE shape (E experts, top-k, hidden H, ffn F, rows M = tokens * k,
 * equal groups of M / E rows) two GEMMs: gate+up (K = H, N = 2F) and down
 * (K = F, N = H); per GEMM and dtype (fp32, bf16) four calls, both phases
 * each, the workspace allocated once outside the timed span:
 *   forward   out (M, N) = x (M, K) @ W[e] (K, N) per group: groupType 0,
 *             splitItem 3, weight (E, K, N), groupList int64 cumulative;
 *   dX        out (M, K) = grad (M, N) @ W[e]^T: groupType 0 with the weight
 *             a transposed view (E, N, K) over W's (E, K, N) storage;
 *   dW        out (E, K, N) = x^T @ grad per group: groupType 2 (K split),
 *             x a transposed view (K, M) over x's (M, K) storage, weight
 *             grad (M, N), the same group list splitting M;
 *   one GEMM  x (M, K) @ W[0] (K, N) as one call with E = 1, group list {M}:
 *             the same 2*M*K*N FLOPs, the reference.
 * Each repeat runs the four in that order (one GEMM first); a row's ratio is
 * the median over repeats of (one GEMM time / the row's time), so load from
 * other processes hits both alike; GFLOP/s = 2*M*K*N / the median time. The
 * "of peak" columns divide by the measured peak of the instruction the path
 * runs on: VDPBF16PS for bf16 on oneDNN (an AVX512-BF16 CPU: moefrBlas()
 * says so), the FMA for fp32 and for bf16 widened to fp32 before the BLAS.
 * Where nothing could be measured they divide by an estimate: cores x FMA
 * units x lanes x 2 x the nominal clock from /proc/cpuinfo ("cpu MHz", not a
 * measured clock), twice that for VDPBF16PS (two products per fp32 lane).
 *
 * fp32 GroupedMatmul is A2/A3-only in CANN (the library refuses it under its
 * default Ascend 950 rules), so this sets MOEFR_SOC=ascend910b before its
 * first call; bf16 runs under the same rules (no bias here, so nothing
 * differs for it). The library reads MOEFR_SOC once per process: call
 * bench_gmm before anything else has run an operator. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "bench/bench.h"
#include "moefr/moefr.h"

/* ---- the machine's fp32 FMA peak ---- */
typedef struct peak {
    int cores, units, lanes;
    double mhz, gflops; /* gflops 0: unknown */
    int bf16x2;         /* bf16 GroupedMatmul runs on oneDNN's VDPBF16PS (moefrBlas() says so): peak x 2 */
    double fp32, bf16;  /* measured (peak.c), GFLOP/s; 0: not measured */
    char how[192];
    const char *isa;
} peak;

/* Distinct (physical id, core id) pairs in /proc/cpuinfo; the online CPUs when it has none. */
static int physical_cores(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    int pid = 0, n = 0;
    static int seen[1024][2];
    while (f && fgets(line, sizeof line, f)) {
        int v;
        if (sscanf(line, "physical id : %d", &v) == 1) pid = v;
        else if (sscanf(line, "core id : %d", &v) == 1) {
            int i = 0;
            while (i < n && !(seen[i][0] == pid && seen[i][1] == v)) i++;
            if (i == n && n < 1024) seen[n][0] = pid, seen[n][1] = v, n++;
        }
    }
    if (f) fclose(f);
    if (n == 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

static int has_flag(const char *flags, const char *f) {
    const size_t n = strlen(f);
    for (const char *p = flags; (p = strstr(p, f)) != NULL; p += n)
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

static peak machine_peak(int threads) {
    peak pk;
    memset(&pk, 0, sizeof pk);
    char flags[4096] = "", fam[32] = "", mod[32] = "", vendor[64] = "";
    bench_cpuinfo("vendor_id", vendor, sizeof vendor);
    bench_cpuinfo("cpu family", fam, sizeof fam);
    bench_cpuinfo("model", mod, sizeof mod);
    pk.units = 2; /* Haswell and later, Zen 2 and later, Neoverse N1/V1: two FMA pipes */
    if (bench_cpuinfo("flags", flags, sizeof flags) == 0) {
        pk.lanes = has_flag(flags, "avx512f") ? 16 : has_flag(flags, "avx2") && has_flag(flags, "fma") ? 8 : 4;
        pk.isa = pk.lanes == 16 ? "AVX-512" : pk.lanes == 8 ? "AVX2+FMA" : "SSE";
        /* Zen and Zen+ (family 23, models below 0x30) split a 256-bit FMA into two 128-bit halves;
         * Zen 4 (family 25 with AVX-512) runs a 512-bit FMA on both of its 256-bit FMA pipes at once */
        if (strcmp(vendor, "AuthenticAMD") == 0 && atoi(fam) == 23 && atoi(mod) < 0x30 && pk.lanes == 8) pk.units = 1;
        if (strcmp(vendor, "AuthenticAMD") == 0 && atoi(fam) == 25 && pk.lanes == 16) pk.units = 1;
    } else if (bench_cpuinfo("Features", flags, sizeof flags) == 0) {
        pk.lanes = 4;
        pk.isa = has_flag(flags, "asimd") ? "NEON" : "scalar";
    } else {
        pk.lanes = 1;
        pk.isa = "unknown";
    }
    pk.cores = physical_cores();
    if (threads < pk.cores) pk.cores = threads;
    pk.mhz = bench_cpu_mhz();
    pk.gflops = (double)pk.cores * pk.units * pk.lanes * 2.0 * pk.mhz * 1e-3;
    return pk;
}

/* ---- one GEMM problem ---- */
enum { ROW_REF, ROW_FWD, ROW_DX, ROW_DW, NROWS };
static const char *const ROW_NAME[NROWS] = {"one GEMM", "forward", "dX", "dW"};
static const char *const ROW_WHAT[NROWS] = {"x @ W, E=1 {M}", "x @ W[e], type 0", "grad @ W[e]^T, type 0",
                                            "x^T @ grad, type 2"};

typedef struct gp {
    int64_t E, M, K, N;
    aclDataType dt;
    size_t es;
    char *x, *w, *g, *y, *dx, *dw;
    int64_t *gl, *gl1;
    aclTensor *tgl, *tgl1;
    aclTensorList *in[NROWS], *wt[NROWS], *out[NROWS];
} gp;

static void *g_ws;
static uint64_t g_ws_size;

static void gp_free(gp *p) {
    for (int r = 0; r < NROWS; r++) {
        if (p->in[r]) aclDestroyTensorList(p->in[r]);
        if (p->wt[r]) aclDestroyTensorList(p->wt[r]);
        if (p->out[r]) aclDestroyTensorList(p->out[r]);
    }
    if (p->tgl) aclDestroyTensor(p->tgl);
    if (p->tgl1) aclDestroyTensor(p->tgl1);
    void *b[] = {p->x, p->w, p->g, p->y, p->dx, p->dw, p->gl, p->gl1};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) bench_free(b[i]);
    memset(p, 0, sizeof *p);
}

static int gp_make(gp *p, int64_t E, int64_t M, int64_t K, int64_t N, aclDataType dt) {
    memset(p, 0, sizeof *p);
    p->E = E, p->M = M, p->K = K, p->N = N, p->dt = dt, p->es = dt == ACL_FLOAT ? 4 : 2;
    const size_t es = p->es;
    p->x = bench_alloc((size_t)(M * K) * es);
    p->w = bench_alloc((size_t)(E * K * N) * es);
    p->g = bench_alloc((size_t)(M * N) * es);
    p->y = bench_alloc((size_t)(M * N) * es);
    p->dx = bench_alloc((size_t)(M * K) * es);
    p->dw = bench_alloc((size_t)(E * K * N) * es);
    p->gl = bench_alloc((size_t)E * 8);
    p->gl1 = bench_alloc(8);
    if (!p->x || !p->w || !p->g || !p->y || !p->dx || !p->dw || !p->gl || !p->gl1) return -1;
    bench_fill(p->x, M * K, dt, es), bench_fill(p->w, E * K * N, dt, es), bench_fill(p->g, M * N, dt, es);
    /* fault the outputs' pages in before timing */
    memset(p->y, 0, (size_t)(M * N) * es), memset(p->dx, 0, (size_t)(M * K) * es);
    memset(p->dw, 0, (size_t)(E * K * N) * es);
    for (int64_t e = 0; e < E; e++) p->gl[e] = (e + 1) * (M / E); /* equal groups, cumulative ends */
    p->gl1[0] = M;
    const int64_t dE[1] = {E}, d1[1] = {1};
    p->tgl = bench_tensor(1, dE, NULL, ACL_INT64, p->gl);
    p->tgl1 = bench_tensor(1, d1, NULL, ACL_INT64, p->gl1);
    const int64_t dMK[2] = {M, K}, dMN[2] = {M, N}, dEKN[3] = {E, K, N}, d1KN[3] = {1, K, N};
    /* one GEMM: W[0] as a (1, K, N) weight; out y */
    p->in[ROW_REF] = bench_list(bench_tensor(2, dMK, NULL, dt, p->x));
    p->wt[ROW_REF] = bench_list(bench_tensor(3, d1KN, NULL, dt, p->w));
    p->out[ROW_REF] = bench_list(bench_tensor(2, dMN, NULL, dt, p->y));
    /* forward */
    p->in[ROW_FWD] = bench_list(bench_tensor(2, dMK, NULL, dt, p->x));
    p->wt[ROW_FWD] = bench_list(bench_tensor(3, dEKN, NULL, dt, p->w));
    p->out[ROW_FWD] = bench_list(bench_tensor(2, dMN, NULL, dt, p->y));
    /* dX: grad (M, N) @ W^T, W^T (E, N, K) over W's (E, K, N) storage */
    const int64_t dENK[3] = {E, N, K}, sENK[3] = {K * N, 1, N};
    p->in[ROW_DX] = bench_list(bench_tensor(2, dMN, NULL, dt, p->g));
    p->wt[ROW_DX] = bench_list(bench_tensor(3, dENK, sENK, dt, p->w));
    p->out[ROW_DX] = bench_list(bench_tensor(2, dMK, NULL, dt, p->dx));
    /* dW: x^T (K, M) over x's (M, K) storage, split along M; weight grad (M, N); out (E, K, N) */
    const int64_t dKM[2] = {K, M}, sKM[2] = {1, K};
    p->in[ROW_DW] = bench_list(bench_tensor(2, dKM, sKM, dt, p->x));
    p->wt[ROW_DW] = bench_list(bench_tensor(2, dMN, NULL, dt, p->g));
    p->out[ROW_DW] = bench_list(bench_tensor(3, dEKN, NULL, dt, p->dw));
    for (int r = 0; r < NROWS; r++)
        if (!p->in[r] || !p->wt[r] || !p->out[r]) return -1;
    return 0;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_gmm_call(const aclTensorList *x, const aclTensorList *w, const aclTensor *gl, int64_t groupType,
                      int64_t groupListType, aclTensorList *y, double *cpu, const char *what) {
    uint64_t n = 0;
    aclOpExecutor *ex = NULL;
    double c0 = cpu_s(), t0 = bench_now();
    aclnnStatus rc = aclnnGroupedMatmulV4GetWorkspaceSize(x, w, NULL, NULL, NULL, NULL, NULL, NULL, gl, NULL, NULL,
                                                          NULL, 3, groupType, groupListType, 0, y, NULL, NULL, &n, &ex);
    if (rc == ACLNN_SUCCESS && n > g_ws_size) { /* a CANN program keeps its workspace: grown outside the timing */
        const double t1 = bench_now(), c1 = cpu_s();
        bench_free(g_ws);
        g_ws = bench_alloc(n);
        g_ws_size = g_ws ? n : 0;
        if (g_ws) memset(g_ws, 0, n);
        t0 += bench_now() - t1;
        c0 += cpu_s() - c1;
    }
    if (rc == ACLNN_SUCCESS) rc = aclnnGroupedMatmulV4(g_ws, n, ex, NULL);
    const double t = bench_now() - t0;
    if (cpu) *cpu = cpu_s() - c0;
    if (rc != ACLNN_SUCCESS) {
        fprintf(stderr, "bench: aclnnGroupedMatmulV4 (%s): status %d: %s\n", what, rc, aclGetRecentErrMsg());
        return -1;
    }
    return t;
}

void bench_gmm_release(void) {
    bench_free(g_ws);
    g_ws = NULL, g_ws_size = 0;
}

/* Both phases of one call; seconds, or -1 (status printed); *cpu: the process's CPU seconds in it. */
static double gp_run(gp *p, int row, double *cpu) {
    char what[32];
    snprintf(what, sizeof what, "%s %s", ROW_NAME[row], p->dt == ACL_FLOAT ? "fp32" : "bf16");
    return bench_gmm_call(p->in[row], p->wt[row], row == ROW_REF ? p->tgl1 : p->tgl, row == ROW_DW ? 2 : 0, 0,
                          p->out[row], cpu, what);
}


/* ---- the shapes ---- */
typedef struct moe_shape {
    int64_t E, topk, H, F, tokens;
} moe_shape;

#define MAX_REPS 64

/* One GEMM of a MoE shape in one dtype: the four rows. */
static int gemm_rows(const moe_shape *s, const char *gemm, int64_t K, int64_t N, aclDataType dt, int reps,
                     const peak *pk, int markdown) {
    const int64_t M = s->tokens * s->topk;
    const char *dn = dt == ACL_FLOAT ? "fp32" : "bf16";
    gp p;
    if (gp_make(&p, s->E, M, K, N, dt) != 0) {
        fprintf(stderr, "bench --gmm: out of memory for E=%lld M=%lld K=%lld N=%lld\n", (long long)s->E, (long long)M,
                (long long)K, (long long)N);
        gp_free(&p);
        return 1;
    }
    double t[NROWS][MAX_REPS], cpu[NROWS][MAX_REPS], ratio[NROWS][MAX_REPS];
    int ok = 1;
    for (int i = 0; i < reps && ok; i++)
        for (int r = 0; r < NROWS && ok; r++) ok = (t[r][i] = gp_run(&p, r, &cpu[r][i])) >= 0;
    gp_free(&p);
    if (!ok) return 1;
    for (int r = 0; r < NROWS; r++)
        for (int i = 0; i < reps; i++) ratio[r][i] = t[ROW_REF][i] / t[r][i];
    const double flop = 2.0 * (double)M * (double)K * (double)N;
    char shape[96];
    snprintf(shape, sizeof shape, "E=%lld M=%lld K=%lld N=%lld", (long long)s->E, (long long)M, (long long)K,
             (long long)N);
    for (int r = 0; r < NROWS; r++) {
        const double ms = bench_median(t[r], reps) * 1e3, gf = flop / (ms * 1e-3) / 1e9;
        const double rt = bench_median(ratio[r], reps), cgf = flop / bench_median(cpu[r], reps) / 1e9;
        char pct[16] = "-", rs[16] = "-", cpct[16] = "-";
        /* the measured peak of the instruction the path runs on (bf16 on oneDNN: VDPBF16PS; widened
         * bf16 and fp32: the FMA), else the estimate (bf16 on VDPBF16PS: twice the fp32 rate) */
        const int dot = dt == ACL_BF16 && pk->bf16x2;
        const double top = dot && pk->bf16 > 0 ? pk->bf16
                           : !dot && pk->fp32 > 0 ? pk->fp32
                                                   : pk->gflops * (dot ? 2.0 : 1.0);
        if (top > 0) snprintf(pct, sizeof pct, "%.0f%%", 100.0 * gf / top);
        if (top > 0) snprintf(cpct, sizeof cpct, "%.0f%%", 100.0 * cgf / (top / pk->cores));
        if (r != ROW_REF) snprintf(rs, sizeof rs, "%.3f", rt);
        if (markdown)
            printf("| %s | %s | %s | %s | %s | %.1f | %.1f | %s | %s | %.1f | %s |\n", gemm, shape, dn, ROW_NAME[r],
                   ROW_WHAT[r], ms, gf, rs, pct, cgf, cpct);
        else
            printf("  %-7s %-28s %s %-8s %-21s %8.1f ms %6.1f GFLOP/s ratio %5s %4s of peak | cpu %5.1f %4s\n", gemm,
                   shape, dn, ROW_NAME[r], ROW_WHAT[r], ms, gf, rs, pct, cgf, cpct);
    }
    fflush(stdout);
    return 0;
}

int bench_gmm(int64_t tokens, int reps, int markdown) {
    /* before the library reads it (once per process): fp32 GroupedMatmul is A2/A3-only */
    const char *was = getenv("MOEFR_SOC");
    setenv("MOEFR_SOC", "ascend910b", 1);
    if (reps <= 0) reps = 3;
    if (reps > MAX_REPS) reps = MAX_REPS;
    /* rows = tokens * top-k: the 8192 tokens (--full) take about 15 minutes on 2 shared
     * cores, so the default is 1024 tokens (about 2 minutes) and --quick 256 */
    if (tokens <= 0) tokens = 1024;
    static const moe_shape shapes[] = {
        {8, 2, 2048, 1408, 0},  /* the layer: gate+up N = 2816 */
        {64, 8, 2048, 1024, 0}, /* many small experts */
        {8, 2, 4096, 1408, 0},  /* hidden 4096 */
    };
    const int threads = moefrNumThreads();
    peak pk = machine_peak(threads);
    const char *blas = moefrBlas();
    pk.bf16x2 = strstr(blas, "VDPBF16PS") != NULL;
    printf("moefr %s, kernel path %s, %d threads: aclnnGroupedMatmulV4 (splitItem 3, equal groups, int64 cumulative group list), "
           "both phases per call, median of %d repeats\n",
           moefrVersion(), moefrIsa(), threads, reps);
    printf("CPU: %s; BLAS: %s\n", bench_cpu(), blas);
    printf("MOEFR_SOC=ascend910b set by the bench (was %s%s%s): fp32 GroupedMatmul is A2/A3-only; the library refuses "
           "it under its default Ascend 950 rules\n",
           was ? "\"" : "", was ? was : "unset", was ? "\"" : "");
    if (pk.gflops > 0)
        printf("fp32 FMA peak estimate: %d core(s) x %d FMA units (assumed) x %d lanes (%s) x 2 flops x %.0f MHz "
               "(nominal: /proc/cpuinfo \"cpu MHz\", not a measured clock) = %.1f GFLOP/s; %s\n",
               pk.cores, pk.units, pk.lanes, pk.isa, pk.mhz, pk.gflops,
               pk.bf16x2 ? "bf16 runs on VDPBF16PS (two products per lane), its peak twice that"
                         : "bf16 is widened to fp32 before the BLAS, so its peak is the same");
    else
        printf("fp32 FMA peak: no clock in /proc/cpuinfo (\"cpu MHz\"), not estimated\n");
    if (bench_peak(threads, &pk.fp32, &pk.bf16, pk.how, sizeof pk.how) == 0) {
        printf("peak measured (bench/peak.c, %s): fp32 %.1f GFLOP/s", pk.how, pk.fp32);
        if (pk.bf16 > 0) printf(", bf16 %.1f GFLOP/s", pk.bf16);
        printf("; the \"of peak\" columns use it\n");
    }
    if (strstr(blas, "AMX"))
        printf("bf16 runs on AMX tiles where oneDNN chooses them: the measured bf16 peak (VDPBF16PS) leaves them out,\n"
               "so a bf16 \"of peak\" above 100%% is AMX at work\n");
    printf("GFLOP/s = 2*M*K*N / median time; ratio = median over repeats of (one GEMM time / row time), the one GEMM\n"
           "(x (M,K) @ W[0] (K,N) as one call, E=1, group list {M}) run first in each repeat: same FLOPs, same dtype;\n"
           "cpu = 2*M*K*N / the median process CPU time (GFLOP per CPU-second) and its fraction of one core's peak:\n"
           "time other processes take from this one's threads on a shared machine does not count in it;\n"
           "gate+up: K = hidden, N = 2*ffn; down: K = ffn, N = hidden; %lld tokens (rows = tokens x top-k; the issue's\n"
           "8192: --full)\n\n",
           (long long)tokens);
    if (markdown)
        printf("| GEMM | shape | dtype | row | computes | ms | GFLOP/s | ratio to one GEMM | of peak | cpu GFLOP/s "
               "per core | of a core's peak |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    int fails = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        moe_shape s = shapes[i];
        s.tokens = tokens;
        const int64_t M = s.tokens * s.topk;
        if (M % s.E != 0) {
            fprintf(stderr, "bench --gmm: %lld rows do not split into %lld equal groups\n", (long long)M, (long long)s.E);
            fails++;
            continue;
        }
        if (markdown)
            printf("| **E=%lld top-%lld, hidden %lld, ffn %lld: %lld tokens, %lld rows, %lld per expert** | | | | | | | | | | |\n",
                   (long long)s.E, (long long)s.topk, (long long)s.H, (long long)s.F, (long long)s.tokens,
                   (long long)M, (long long)(M / s.E));
        else
            printf("E=%lld top-%lld, hidden %lld, ffn %lld: %lld tokens x top-%lld = %lld rows, %lld per expert\n",
                   (long long)s.E, (long long)s.topk, (long long)s.H, (long long)s.F, (long long)s.tokens,
                   (long long)s.topk, (long long)M, (long long)(M / s.E));
        for (int d = 0; d < 2; d++) {
            const aclDataType dt = d ? ACL_BF16 : ACL_FLOAT;
            fails += gemm_rows(&s, "gate+up", s.H, 2 * s.F, dt, reps, &pk, markdown);
            fails += gemm_rows(&s, "down", s.F, s.H, dt, reps, &pk, markdown);
        }
    }
    bench_gmm_release();
    return fails ? 1 : 0;
}
