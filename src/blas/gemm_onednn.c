/* gemm_onednn.c - mf_dnnl_gemm: fp32 and bf16 products (fp32 results) from
 * oneDNN's matmul (Debian's libdnnl2, the library PyTorch's own matmul runs
 * on), loaded with dlopen the first time a GroupedMatmul asks, and only when
 * the kernel path is an avx512 one (MOEFR_ISA=avx2 or scalar, or
 * MOEFR_ONEDNN=0, keeps BLIS: gmm_run.c); bf16 also needs AVX512-BF16.
 * Why, measured on one Zen 4 core (docs/BENCHMARKS.md): BLIS has no bf16
 * GEMM, and widening runs at the fp32 FMA rate, while oneDNN's VDPBF16PS
 * kernels reach about 200 GFLOP/s against 80; its fp32 AVX-512 kernels reach
 * 104-109 against BLIS's (zen3, AVX2) 80-95.
 *
 * One primitive per dtype and layout (row- or column-major A and B, their
 * leading dimensions, C's, and whether C is accumulated into), with M, N and
 * K left to run time, kept for the process's life: a GroupedMatmul call needs
 * one or two. oneDNN runs each call on the calling thread: the call sets the
 * thread's OpenMP team to one thread and restores it, so moefr's workers stay
 * the only threads. Primitives hold no per-call state (the scratchpad is the
 * caller's, and this implementation asks for none), so workers share them.
 *
 * Numerics: VDPBF16PS treats subnormal inputs as zero and flushes subnormal
 * results; gmm_run.c sends a bf16 group here only when none of its inputs is
 * below 2^-63 in magnitude, so every product is an fp32 normal (docs/DESIGN.md
 * says what remains). fp32 is FMA arithmetic under the caller's MXCSR, as BLIS's. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "blas/gemm.h"

/* Not under the sanitizers: libgomp and oneDNN (and its JIT code) are not
 * instrumented. Under TSan their own synchronisation would show as races;
 * under ASan, LeakSanitizer's exit-time scan crashed ("Tracer caught signal
 * 11") in every process that had run a oneDNN call, on this Zen 4 VM. The
 * sanitizer builds test the BLIS path; the Release and Debug builds test
 * this one. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define MF_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define MF_SANITIZED 1
#endif
#endif

#if defined(__x86_64__) && defined(MOEFR_HAVE_DNNL_H) && !defined(MF_SANITIZED)
#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.h>

#include "cpu/cpu.h"
#include "internal.h"

#define FN(name) static __typeof__(name) *p_##name
FN(dnnl_engine_create);
FN(dnnl_memory_desc_init_by_strides);
FN(dnnl_matmul_desc_init);
FN(dnnl_primitive_attr_create);
FN(dnnl_primitive_attr_destroy);
FN(dnnl_primitive_attr_set_scratchpad_mode);
FN(dnnl_primitive_attr_set_post_ops);
FN(dnnl_post_ops_create);
FN(dnnl_post_ops_destroy);
FN(dnnl_post_ops_append_sum);
FN(dnnl_primitive_desc_create);
FN(dnnl_primitive_desc_destroy);
FN(dnnl_primitive_desc_query);
FN(dnnl_primitive_desc_query_md);
FN(dnnl_memory_desc_get_size);
FN(dnnl_primitive_create);
FN(dnnl_stream_create);
FN(dnnl_stream_destroy);
FN(dnnl_stream_wait);
FN(dnnl_memory_create);
FN(dnnl_memory_destroy);
FN(dnnl_primitive_execute);
static int (*p_omp_get_max_threads)(void);
static void (*p_omp_set_num_threads)(int);

static dnnl_engine_t g_engine;
static bool g_ready, g_bf16, g_amx;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
    const char *env = getenv("MOEFR_ONEDNN");
    if (env && strcmp(env, "0") == 0) return;
    const mf_ukernels *k = mf_kernels();
    if (k != &mf_ukernels_avx512bf16 && k != &mf_ukernels_avx512) return;
    void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        mf_log(MF_LOG_DEBUG, "moefr: libdnnl.so.2 not loaded (%s): GroupedMatmul stays on BLIS", dlerror());
        return;
    }
    bool ok = true;
#define SYM(name) ok = ok && (*(void **)&p_##name = dlsym(h, #name)) != NULL
    SYM(dnnl_engine_create);
    SYM(dnnl_memory_desc_init_by_strides);
    SYM(dnnl_matmul_desc_init);
    SYM(dnnl_primitive_attr_create);
    SYM(dnnl_primitive_attr_destroy);
    SYM(dnnl_primitive_attr_set_scratchpad_mode);
    SYM(dnnl_primitive_attr_set_post_ops);
    SYM(dnnl_post_ops_create);
    SYM(dnnl_post_ops_destroy);
    SYM(dnnl_post_ops_append_sum);
    SYM(dnnl_primitive_desc_create);
    SYM(dnnl_primitive_desc_destroy);
    SYM(dnnl_primitive_desc_query);
    SYM(dnnl_primitive_desc_query_md);
    SYM(dnnl_memory_desc_get_size);
    SYM(dnnl_primitive_create);
    SYM(dnnl_stream_create);
    SYM(dnnl_stream_destroy);
    SYM(dnnl_stream_wait);
    SYM(dnnl_memory_create);
    SYM(dnnl_memory_destroy);
    SYM(dnnl_primitive_execute);
    SYM(omp_get_max_threads); /* libgomp, which libdnnl's OpenMP build loads */
    SYM(omp_set_num_threads);
#undef SYM
    if (!ok || p_dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success) {
        mf_log(MF_LOG_DEBUG, "moefr: libdnnl.so.2 lacks an entry point moefr uses: GroupedMatmul stays on BLIS");
        return; /* the handle stays open: a half-resolved library is not unloaded under other users */
    }
    g_ready = true;
    g_bf16 = (mf_cpu_features() & MF_CPU_AVX512BF16) != 0; /* else oneDNN would emulate bf16 */
    /* Where oneDNN may use AMX, its bf16 kernels run on the tiles (measured on
     * a Xeon: one 512x2048x2816 bf16 GEMM 468 GFLOP/s, 147 with
     * DNNL_MAX_CPU_ISA=AVX512_CORE_BF16); only the name says so */
    dnnl_cpu_isa_t (*isa)(void) = NULL;
    *(void **)&isa = dlsym(h, "dnnl_get_effective_cpu_isa");
    g_amx = isa && (isa() & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

/* A primitive per dtype and layout: a_cm / b_cm column-major, leading dimensions, accumulate. */
typedef struct prim_key {
    int64_t lda, ldb, ldc;
    int a_cm, b_cm, acc, bf16;
} prim_key;
#define MAX_PRIMS 64
static struct {
    prim_key key;
    dnnl_primitive_t prim; /* NULL: no fast implementation for this layout: the caller uses BLIS */
} g_prims[MAX_PRIMS];
static int g_nprims;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void md_of(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int cm, int64_t ld, dnnl_data_type_t dt) {
    dnnl_dims_t d = {rows, cols}, s = {cm ? 1 : ld, cm ? ld : 1};
    p_dnnl_memory_desc_init_by_strides(md, 2, d, dt, s);
}

static dnnl_primitive_t create(const prim_key *k) {
    const int64_t R = DNNL_RUNTIME_DIM_VAL;
    dnnl_memory_desc_t a, b, c;
    const dnnl_data_type_t dt = k->bf16 ? dnnl_bf16 : dnnl_f32;
    md_of(&a, R, R, k->a_cm, k->lda, dt);
    md_of(&b, R, R, k->b_cm, k->ldb, dt);
    md_of(&c, R, R, 0, k->ldc, dnnl_f32);
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    const char *impl = "";
    if (p_dnnl_matmul_desc_init(&desc, &a, &b, NULL, &c) != dnnl_success ||
        p_dnnl_primitive_attr_create(&attr) != dnnl_success ||
        p_dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success)
        goto out;
    if (k->acc && (p_dnnl_post_ops_create(&po) != dnnl_success || p_dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success ||
                   p_dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success))
        goto out;
    if (p_dnnl_primitive_desc_create(&pd, &desc, attr, g_engine, NULL) != dnnl_success) goto out;
    p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    /* a reference implementation would be hundreds of times slower than
     * widening; a scratchpad would be per call state moefr does not pass */
    const dnnl_memory_desc_t *sp = p_dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (strncmp(impl, "ref", 3) == 0 || (sp && p_dnnl_memory_desc_get_size(sp) != 0)) goto out;
    if (p_dnnl_primitive_create(&prim, pd) != dnnl_success) prim = NULL;
out:
    mf_log(MF_LOG_DEBUG, "moefr: oneDNN %s matmul (A %s ld %lld, B %s ld %lld, C ld %lld%s): %s", k->bf16 ? "bf16" : "fp32",
           k->a_cm ? "col" : "row",
           (long long)k->lda, k->b_cm ? "col" : "row", (long long)k->ldb, (long long)k->ldc, k->acc ? ", +C" : "",
           prim ? impl : "not used");
    if (pd) p_dnnl_primitive_desc_destroy(pd);
    if (po) p_dnnl_post_ops_destroy(po);
    if (attr) p_dnnl_primitive_attr_destroy(attr);
    return prim;
}

static dnnl_primitive_t lookup(const prim_key *k) {
    dnnl_primitive_t prim = NULL;
    pthread_mutex_lock(&g_lock);
    int i = 0;
    for (; i < g_nprims; i++)
        if (memcmp(&g_prims[i].key, k, sizeof *k) == 0) break;
    if (i < g_nprims) {
        prim = g_prims[i].prim;
    } else if (g_nprims < MAX_PRIMS) {
        prim = create(k);
        g_prims[g_nprims].key = *k;
        g_prims[g_nprims++].prim = prim;
    }
    pthread_mutex_unlock(&g_lock);
    return prim;
}

bool mf_dnnl_ready(bool bf16) {
    pthread_once(&g_once, load);
    return g_ready && (!bf16 || g_bf16);
}

bool mf_dnnl_amx(void) {
    pthread_once(&g_once, load);
    return g_ready && g_bf16 && g_amx;
}

/* Row-major (cs 1, rs >= cols) or column-major (rs 1, cs >= rows), in int range. */
static bool layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *cm, int64_t *ld) {
    if (rs > INT32_MAX || cs > INT32_MAX) return false;
    if (cs == 1 && rs >= cols && rs >= 1) return *cm = 0, *ld = rs, true;
    if (rs == 1 && cs >= rows && cs >= 1) return *cm = 1, *ld = cs, true;
    return false;
}

bool mf_dnnl_layout_ok(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    int cm;
    int64_t ld;
    return layout(rows, cols, rs, cs, &cm, &ld);
}

bool mf_dnnl_gemm(bool bf16, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa, const void *B,
                  int64_t rsb, int64_t csb, float beta, float *C, int64_t ldc) {
    if (!mf_dnnl_ready(bf16)) return false;
    prim_key k;
    memset(&k, 0, sizeof k); /* memcmp'd: no stray padding bytes */
    k.bf16 = bf16;
    if (!layout(M, K, rsa, csa, &k.a_cm, &k.lda) || !layout(K, N, rsb, csb, &k.b_cm, &k.ldb) || ldc < N) return false;
    k.ldc = ldc;
    k.acc = beta != 0.0f;
    dnnl_primitive_t prim = lookup(&k);
    if (!prim) return false;
    dnnl_memory_desc_t a, b, c;
    md_of(&a, M, K, k.a_cm, k.lda, bf16 ? dnnl_bf16 : dnnl_f32);
    md_of(&b, K, N, k.b_cm, k.ldb, bf16 ? dnnl_bf16 : dnnl_f32);
    md_of(&c, M, N, 0, ldc, dnnl_f32);
    dnnl_stream_t st = NULL;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    bool done = false;
    const int threads = p_omp_get_max_threads();
    p_omp_set_num_threads(1);
    if (p_dnnl_stream_create(&st, g_engine, dnnl_stream_default_flags) == dnnl_success &&
        p_dnnl_memory_create(&ma, &a, g_engine, (void *)A) == dnnl_success &&
        p_dnnl_memory_create(&mb, &b, g_engine, (void *)B) == dnnl_success &&
        p_dnnl_memory_create(&mc, &c, g_engine, C) == dnnl_success) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        done = p_dnnl_primitive_execute(prim, st, 3, args) == dnnl_success && p_dnnl_stream_wait(st) == dnnl_success;
    }
    p_omp_set_num_threads(threads);
    if (mc) p_dnnl_memory_destroy(mc);
    if (mb) p_dnnl_memory_destroy(mb);
    if (ma) p_dnnl_memory_destroy(ma);
    if (st) p_dnnl_stream_destroy(st);
    return done;
}

#else /* no oneDNN here (not x86-64, no headers at build time, or a sanitizer build) */

bool mf_dnnl_ready(bool bf16) {
    (void)bf16;
    return false;
}
bool mf_dnnl_amx(void) { return false; }
bool mf_dnnl_layout_ok(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    (void)rows, (void)cols, (void)rs, (void)cs;
    return false;
}
bool mf_dnnl_gemm(bool bf16, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa, const void *B,
                  int64_t rsb, int64_t csb, float beta, float *C, int64_t ldc) {
    (void)bf16, (void)M, (void)N, (void)K, (void)A, (void)rsa, (void)csa, (void)B, (void)rsb, (void)csb, (void)beta,
        (void)C, (void)ldc;
    return false;
}

#endif
