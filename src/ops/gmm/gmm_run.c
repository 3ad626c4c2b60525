/* gmm_run.c - GroupedMatmul's phase 2: read the group list, lay out one
 * GEMM per group, cut every group's output into tiles of a fixed shape
 * (plan->mt x plan->nt, set from the shapes alone; for a K split with packed
 * operands, chosen again here from the largest group's K), and let the pool's
 * workers take tiles from a shared counter. Each tile is one call of the
 * BLAS's serial sgemm over the group's whole K:
 *   - fp32 operands that are row- or column-major views go to the BLAS in
 *     place; others (fp16, bf16, general strides) are widened exactly to
 *     fp32 in the worker's scratch first (B panels are kept while the same
 *     worker stays on the same panel);
 *   - on the avx512 kernel path, fp32 groups in those layouts, and bf16 ones
 *     (AVX512-BF16 CPUs) without inputs below 2^-63, are one call of
 *     oneDNN's matmul instead, operands in place (dnnl_group, gemm_onednn.c);
 *   - the tile's fp32 result starts as the bias (beta 1) or is overwritten
 *     (beta 0), then is rounded once to out's dtype and stored.
 * An output element is computed by one call whose shape depends only on the
 * problem, so the bits are the same for every thread count and run. */
#include <math.h>
#include <stdatomic.h>

#include "blas/gemm.h"
#include "ops/gmm/gmm.h"
#include "ops/opdef.h"

/* A matrix inside a tensor: element (i, j) at base + (i * rs + j * cs) * es
 * when uniform; otherwise row i is row row0 + i of t's leading dims, which
 * do not collapse to one stride (a >2-D view), and column j is col0 + j. */
typedef struct gmm_mat {
    const aclTensor *t;
    const char *base;
    int dtype, es;
    int64_t rs, cs;
    bool uniform;
    int64_t row0, col0;
} gmm_mat;

typedef struct gmm_group {
    int64_t m, k, n;
    gmm_mat a, b, c;
    const char *bias; /* n elements of bias_dtype at stride bias_s (elements), or NULL */
    int64_t bias_s;
    bool zero; /* a K-split group with k == 0: its output is zeros */
    bool onednn; /* fp32 or bf16 operands that oneDNN may multiply as they are (dnnl_group) */
    /* the A8W8 rows: n scales of the plan's scale_dtype at stride scale_s, m per-token scales at stride pts_s */
    const char *scale, *pts;
    int64_t scale_s, pts_s;
    /* the A16W8 / A16W4 rows: antiquant scales and offsets (x's dtype): column n of K-group g at
     * (g * aq?_gs + n * aq?_s) elements (aq?_gs 0 per-channel) */
    const char *aqs, *aqo;
    int64_t aqs_s, aqo_s, aqs_gs, aqo_gs;
} gmm_group;

/* The rows of t (all dims but the last) as one stride, when they collapse
 * (strides may be negative or zero: a view's, as aclCreateTensor allows). */
static bool rows_collapse(const aclTensor *t, int64_t *rs) {
    bool have = false;
    int64_t want = 0;
    *rs = t->ndim >= 2 ? t->strides[t->ndim - 2] : 0;
    for (int d = t->ndim - 2; d >= 0; d--) {
        if (t->dims[d] == 1) continue;
        if (have && t->strides[d] != want) return false;
        if (!have) *rs = t->strides[d];
        have = true;
        if (__builtin_mul_overflow(t->strides[d], t->dims[d], &want)) return false; /* (an empty view's) */
    }
    return true;
}

/* t seen as rows x its last dim, from row row0 and column col0. */
static gmm_mat mat_of(const aclTensor *t, int64_t row0, int64_t col0) {
    gmm_mat m;
    memset(&m, 0, sizeof m);
    m.t = t;
    m.dtype = t->dtype;
    m.es = (int)mf_dtype_size(t->dtype);
    m.cs = t->strides[t->ndim - 1];
    m.row0 = row0;
    m.col0 = col0;
    m.uniform = rows_collapse(t, &m.rs);
    if (m.uniform) {
        const char *b = mf_tensor_base(t);
        m.base = b ? b + (row0 * m.rs + col0 * m.cs) * m.es : NULL;
    }
    return m;
}

/* The 2-D slice [g] of a 3-D tensor, from row row0. */
static gmm_mat mat_slice(const aclTensor *t, int64_t g, int64_t row0, int64_t col0) {
    gmm_mat m;
    memset(&m, 0, sizeof m);
    m.t = t;
    m.dtype = t->dtype;
    m.es = (int)mf_dtype_size(t->dtype);
    m.rs = t->strides[1];
    m.cs = t->strides[2];
    m.uniform = true;
    const char *b = mf_tensor_base(t);
    m.base = b ? b + (g * t->strides[0] + row0 * m.rs + col0 * m.cs) * m.es : NULL;
    return m;
}

static const char *mat_at(const gmm_mat *m, int64_t i, int64_t j) {
    if (m->uniform) return m->base + (i * m->rs + j * m->cs) * m->es;
    const aclTensor *t = m->t;
    int64_t r = m->row0 + i, off = t->offset + (m->col0 + j) * t->strides[t->ndim - 1];
    for (int d = t->ndim - 2; d >= 0; d--) {
        off += (r % t->dims[d]) * t->strides[d];
        r /= t->dims[d];
    }
    return (const char *)t->data + off * m->es;
}

/* The rows and columns that pack reads are runs of at most a few KiB, one
 * per row of the source (4 KiB apart in dW's x), too short for the hardware
 * prefetcher to get ahead: mf_widen_f32 took a quarter of a bf16 dW call's
 * time (E = 64, perf), waiting on memory. So each run is prefetched
 * PACK_AHEAD runs ahead (dW E = 64 gate+up: 0.71 -> 0.85 of one GEMM, Zen 4;
 * 2 and 8 ahead measured the same within the noise). */
#define PACK_AHEAD 4
static void prefetch_run(const char *p, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o);
}

/* Rows [i0, i0 + rows) and all k columns of a view whose columns are
 * contiguous (rs == 1), widened to fp32 into dst column-major (ld rows): each
 * column is one contiguous run, read and written in order, and the BLAS
 * takes the column-major panel as it is (for A, the order BLIS's own
 * packing reads best). Through the blocks below, dW's A read 16 rows 4 KiB
 * apart per block, which share L1 sets. */
static void pack_cols(const gmm_mat *m, int64_t i0, int64_t rows, int64_t k, float *dst) {
    for (int64_t j = 0; j < k; j++) {
        if (j + PACK_AHEAD < k) prefetch_run(m->base + (i0 + (j + PACK_AHEAD) * m->cs) * m->es, rows * m->es);
        mf_widen_f32(m->base + (i0 + j * m->cs) * m->es, m->es, m->dtype, rows, dst + j * rows, 1);
    }
}

/* Rows [i0, i0 + rows) and columns [j0, j0 + cols) of m, widened to fp32
 * into dst (row-major, ld cols), reading m in its own order: row by row when
 * its rows are contiguous; for a transposed view (its columns contiguous), in
 * blocks of PACK_J columns x PACK_I rows, each widened column by column into
 * a block on the stack and written to dst row by row (whole runs of PACK_J
 * floats: writing dst a column at a time touched a cache line per element,
 * ld apart); element by element otherwise. (Widening such a view
 * column-major and letting the BLAS transpose measured slower at 256-row
 * groups. 16 x 16 blocks read 16 runs 4 KiB apart, more than an L1 set
 * holds; 8 x 32, one line of each: dX at E = 64 0.87-0.90 -> 0.88-0.92 of
 * one GEMM, Zen 4, alternated.) */
#define PACK_J 8  /* columns per block: eight runs 4 KiB apart still fit one L1 set (8 ways) */
#define PACK_I 32 /* elements of each column: a whole 64-byte line of bf16 */
static void pack(const gmm_mat *m, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float *dst) {
    if (m->uniform && m->cs == 1) {
        for (int64_t i = 0; i < rows; i++) {
            if (i + PACK_AHEAD < rows) prefetch_run(m->base + ((i0 + i + PACK_AHEAD) * m->rs + j0) * m->es, cols * m->es);
            mf_widen_f32(m->base + ((i0 + i) * m->rs + j0) * m->es, m->es, m->dtype, cols, dst + i * cols, 1);
        }
    } else if (m->uniform && m->rs == 1) {
        float blk[PACK_J][PACK_I]; /* blk[j][i]: column j of the block, widened */
        for (int64_t jb = 0; jb < cols; jb += PACK_J) {
            const int64_t nj = cols - jb < PACK_J ? cols - jb : PACK_J;
            for (int64_t ib = 0; ib < rows; ib += PACK_I) {
                const int64_t ni = rows - ib < PACK_I ? rows - ib : PACK_I;
                for (int64_t j = 0; j < nj; j++)
                    mf_widen_f32(m->base + (i0 + ib + (j0 + jb + j) * m->cs) * m->es, m->es, m->dtype, ni, blk[j], 1);
                for (int64_t i = 0; i < ni; i++) {
                    float *d = dst + (ib + i) * cols + jb;
                    for (int64_t j = 0; j < nj; j++) d[j] = blk[j][i];
                }
            }
        }
    } else if (m->uniform) {
        for (int64_t i = 0; i < rows; i++)
            mf_widen_f32(m->base + ((i0 + i) * m->rs + j0 * m->cs) * m->es, m->cs * m->es, m->dtype, cols, dst + i * cols, 1);
    } else {
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) mf_widen_f32(mat_at(m, i0 + i, j0 + j), 0, m->dtype, 1, &dst[i * cols + j], 1);
    }
}

/* The BLAS can read a rows x cols matrix with these strides in place: row-
 * or column-major with a leading dimension cblas accepts, in int range
 * (src/blas/gemm.h). mf_gmm_direct asks the same of a whole tensor in
 * phase 1; a group's matrix is never larger, so what phase 1 found direct
 * stays direct here (and what it did not has its pack scratch). */
static bool ld_ok(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    if (rs > INT32_MAX || cs > INT32_MAX || rs < 0 || cs < 0) return false;
    return (cs == 1 && (rs >= cols || rows == 1)) || (rs == 1 && (cs >= rows || cols == 1));
}
static bool direct(const gmm_mat *m, int64_t rows, int64_t cols) {
    return m->dtype == ACL_FLOAT && m->uniform && ld_ok(rows, cols, m->rs, m->cs);
}

/* v rounded to the nearest FLOAT16 value, ties to even, with one rounding
 * (v exact in double; the result is returned as the fp32 it is exactly).
 * Overflow gives infinity, as the vector unit's fp16 arithmetic does. */
static float round_f16(double v) {
    const double a = fabs(v);
    if (a != a) return (float)v;
    if (a >= 65520.0) return v < 0 ? -INFINITY : INFINITY;
    int e;
    frexp(a, &e);                                   /* a = m * 2^e, m in [0.5, 1) */
    const double ulp = ldexp(1.0, (e - 11 > -24 ? e - 11 : -24)); /* 11 significant bits; subnormals 2^-24 */
    const double r = nearbyint(a / ulp) * ulp;      /* exact scaling; ties to even */
    return (float)(v < 0 ? -r : r);
}

/* Weight element (k, n) of an int8 weight, or of an int4 one packed eight to an
 * INT32 along N, lowest nibble first (CANN's UnpackInt32ToInt4 layout). */
static int weight_q(const gmm_plan *p, const gmm_group *g, int64_t k, int64_t n) {
    if (p->wpack != 8) return *(const int8_t *)mat_at(&g->b, k, n);
    int32_t word;
    memcpy(&word, mat_at(&g->b, k, n / 8), 4);
    const int nib = (int)(((uint32_t)word >> (4 * (n % 8))) & 0xFu);
    return nib >= 8 ? nib - 16 : nib;
}

/* B's panel (all K rows, columns j0..j0+cols) of an int8 / int4 weight, each
 * element dequantized as CANN's AscendAntiQuant does it for x's dtype, then widened:
 *   FLOAT16: fp16(w), + offset in fp16, * scale in fp16 (each step rounded to fp16);
 *   BF16 (A2/A3): fp32(w), + fp32(offset) in fp32, * fp32(scale) in fp32, rounded to bf16.
 * The scale and offset are the column's, of the element's K group when per-group. */
static void pack_antiquant(const gmm_plan *p, const gmm_group *g, int64_t j0, int64_t cols, float *dst) {
    const bool bf = p->dtype == ACL_BF16;
    for (int64_t j = 0; j < cols; j++) {
        float s = 0, o = 0;
        int64_t grp = -1;
        for (int64_t k = 0; k < g->k; k++) {
            const int64_t gk = p->aq_gsize ? k / p->aq_gsize : 0;
            if (gk != grp) {
                mf_widen_f32(g->aqs + (gk * g->aqs_gs + (j0 + j) * g->aqs_s) * 2, 0, p->dtype, 1, &s, 1);
                mf_widen_f32(g->aqo + (gk * g->aqo_gs + (j0 + j) * g->aqo_s) * 2, 0, p->dtype, 1, &o, 1);
                grp = gk;
            }
            const float w = (float)weight_q(p, g, k, j0 + j);
            float v;
            if (bf) {
                const float a = w + o; /* fp32 sums and products: one rounding each */
                v = a * s;
                char h[2];
                mf_narrow_f32(h, 0, ACL_BF16, 1, &v);
                mf_widen_f32(h, 0, ACL_BF16, 1, &v, 1);
            } else {
                v = round_f16((double)round_f16((double)w + (double)o) * (double)s);
            }
            dst[k * cols + j] = v;
        }
    }
}

static void store(const gmm_mat *c, int64_t i0, int64_t rows, int64_t j0, int64_t cols, const float *src) {
    for (int64_t i = 0; i < rows; i++) {
        const float *s = src + i * cols;
        if (c->uniform) {
            mf_narrow_f32((char *)mat_at(c, i0 + i, j0), c->cs * c->es, c->dtype, cols, s);
        } else {
            for (int64_t j = 0; j < cols; j++) mf_narrow_f32((char *)mat_at(c, i0 + i, j0 + j), 0, c->dtype, 1, &s[j]);
        }
    }
}

/* The fp32 tile of an accumulating out, read into src's layout (rows of cols). */
static void load(const gmm_mat *c, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float *dst) {
    for (int64_t i = 0; i < rows; i++) {
        float *d = dst + i * cols;
        if (c->uniform) {
            mf_widen_f32(mat_at(c, i0 + i, j0), c->cs * c->es, c->dtype, cols, d, 1);
        } else {
            for (int64_t j = 0; j < cols; j++) mf_widen_f32(mat_at(c, i0 + i, j0 + j), 0, c->dtype, 1, &d[j], 1);
        }
    }
}

/* Groups whose fp32 or bf16 operands oneDNN reads in place (row- or
 * column-major) go to mf_dnnl_gemm (src/blas/gemm_onednn.c) on CPUs where
 * it is faster than BLIS; bf16 ones only when every input's magnitude is 0
 * or at least 2^-63: then every product of two is an fp32 normal, which
 * VDPBF16PS forms exactly, as widening does (it would flush a subnormal
 * input, or a subnormal product, to zero). Which groups qualify depends on
 * the data, the layout and the machine, never on the thread count. */
static bool bf16_tiny(const gmm_mat *m, int64_t rows, int64_t cols) {
    const int64_t runs = m->cs == 1 ? rows : cols, len = m->cs == 1 ? cols : rows;
    const int64_t step = m->cs == 1 ? m->rs : m->cs;
    for (int64_t r = 0; r < runs; r++) {
        const uint16_t *v = (const uint16_t *)m->base + r * step;
        unsigned tiny = 0;
        for (int64_t j = 0; j < len; j++) tiny |= (uint16_t)((v[j] & 0x7FFFu) - 1u) < 0x1FFFu; /* 0 < |v| < 2^-63 */
        if (tiny) return true;
    }
    return false;
}
static bool dnnl_group(const gmm_group *q) {
    const int dt = q->a.dtype;
    if ((dt != ACL_BF16 && dt != ACL_FLOAT) || q->b.dtype != dt || q->zero || q->m == 0 || q->n == 0 || q->k == 0)
        return false;
    if (!q->a.uniform || !q->b.uniform || !mf_dnnl_layout_ok(q->m, q->k, q->a.rs, q->a.cs) ||
        !mf_dnnl_layout_ok(q->k, q->n, q->b.rs, q->b.cs))
        return false;
    return dt == ACL_FLOAT || (!bf16_tiny(&q->a, q->m, q->k) && !bf16_tiny(&q->b, q->k, q->n));
}
static void dnnl_groups(void *ctx, int64_t i0, int64_t i1) {
    gmm_group *g = ctx;
    for (int64_t i = i0; i < i1; i++) g[i].onednn = dnnl_group(&g[i]);
}

/* A tile shape: mt x nt output tiles; scratch C (sm x sn), A (sm x ka), B (ka x sn) floats. */
typedef struct gmm_shape {
    int64_t mt, nt, sm, sn, ka;
    int64_t cf; /* C's scratch floats: sm x sn, or MF_GEMV_ROWS x STREAM_COLS if more (stream_ok's tiles) */
} gmm_shape;

/* A streamed group's panel width (group_nt): its weight rows are read in runs this long (256, the
 * widened panels' width, took Qwen3-30B-A3B's bf16 decode from 0.9 to 0.6 of the read bandwidth). */
#define STREAM_COLS 1024

/* The shape for groups of at most mrows rows, n columns and k (the largest
 * group's K): 512 x nt tiles (2048 x nt for bf16 on oneDNN, whose calls
 * run at 170 GFLOP/s on 512 rows and 200 on 2048 on a Zen 4 core, K 1408,
 * N 1024: it packs B once per call); rows, then columns, halved while the
 * scratch would pass budget floats (or down to 64 x 64). Returns the floats
 * it uses. The shape depends on the problem and the machine, never on the
 * thread count. */
static int64_t tile_shape(const gmm_plan *p, int64_t mrows, int64_t n, int64_t k, int64_t nt, int64_t budget,
                          gmm_shape *t) {
    int64_t mt = p->dtype == ACL_BF16 && mf_dnnl_ready(true) ? 2048 : 512, need;
    for (;;) {
        const int64_t sm = mt < mrows ? mt : mrows, sn = nt < n ? nt : n;
        t->sm = sm > 0 ? sm : 1;
        t->sn = sn > 0 ? sn : 1;
        const int64_t wide = MF_GEMV_ROWS * (STREAM_COLS < n ? STREAM_COLS : n);
        t->cf = t->sm * t->sn > wide ? t->sm * t->sn : wide;
        need = t->cf + (p->pack_a ? t->sm * k : 0) + (p->pack_b ? k * t->sn : 0) +
               (p->quant != GMM_Q_NONE ? t->sm * t->sn : 0); /* the A8W8 rows' int32 sums */
        if (need <= budget || (mt <= 64 && nt <= 64)) break;
        if (mt > 64) mt /= 2;
        else nt /= 2;
    }
    t->mt = mt, t->nt = nt, t->ka = k;
    return need;
}

typedef struct gmm_ctx {
    const gmm_plan *p;
    gmm_shape sh;
    const gmm_group *g;
    const int64_t *first; /* first[gi]: the group's first tile; first[E] all tiles */
    int64_t ntiles;
    float *scratch;
    atomic_llong next;
} gmm_ctx;

/* The tile's fp32 accumulator starts as the bias row, widened, in every row. */
static void fill_bias(const gmm_plan *p, const gmm_group *g, int64_t j0, int64_t rows, int64_t cols, float *cbuf) {
    const int64_t bes = (int64_t)mf_dtype_size(p->bias_dtype);
    mf_widen_f32(g->bias + j0 * g->bias_s * bes, g->bias_s * bes, p->bias_dtype, cols, cbuf, 1);
    for (int64_t i = 1; i < rows; i++) memcpy(cbuf + i * cols, cbuf, (size_t)cols * 4);
}

/* One tile of the A8W8 rows: the exact int32 products over the group's K
 * (int8 x int8 summed in int32, as the cube unit sums them; sums wrap as
 * two's complement, which K <= 65535 keeps from happening without a bias),
 * plus the int32 bias; then either stored as they are (INT32 out) or, in
 * fp32, converted, times the column's scale, times the row's per-token
 * scale, each product rounded to fp32, and rounded once to out's dtype
 * (CANN's AscendDequant, then the per-token Mul, then the Cast). */
#define INT8_KC 1024 /* 1024 products of two int8 sum within 2^24: exact in fp32, in any order */
static void int8_tile(const gmm_plan *p, const gmm_group *g, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                      float *buf, float *abuf, float *bbuf, int32_t *acc) {
    memset(acc, 0, (size_t)(rows * cols) * 4);
    /* K in chunks of INT8_KC: each chunk's sums through the BLAS's fp32 GEMM (the int8 values widened
     * exactly; every partial sum an integer within 2^24, so exact whatever the BLAS's order or FMA),
     * then added in int32 */
    for (int64_t k0 = 0; k0 < g->k; k0 += INT8_KC) {
        const int64_t kc = g->k - k0 < INT8_KC ? g->k - k0 : INT8_KC;
        pack(&g->a, i0, rows, k0, kc, abuf);
        pack(&g->b, k0, kc, j0, cols, bbuf);
        mf_sgemm(rows, cols, kc, abuf, kc, 1, bbuf, cols, 1, 0.0f, buf, cols);
        for (int64_t i = 0; i < rows * cols; i++) acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)(int32_t)buf[i]);
    }
    if (g->bias)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                int32_t b;
                memcpy(&b, g->bias + (j0 + j) * g->bias_s * 4, 4);
                acc[i * cols + j] = (int32_t)((uint32_t)acc[i * cols + j] + (uint32_t)b);
            }
    if (p->quant == GMM_Q_INT32) {
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) memcpy((char *)mat_at(&g->c, i0 + i, j0 + j), &acc[i * cols + j], 4);
        return;
    }
    if (p->quant == GMM_Q_REQ) { /* the fixpipe's requantization to int8 */
        for (int64_t j = 0; j < cols; j++) {
            uint64_t word;
            memcpy(&word, g->scale + (j0 + j) * g->scale_s * 8, 8);
            const uint32_t bits = (uint32_t)word & 0xFFFFE000u; /* the scale's fp19: the fp32 bits' top 19 */
            float s;
            memcpy(&s, &bits, 4);
            const int off = (int)((word >> 37) & 0x1FFu);
            const int offset = off >= 256 ? off - 512 : off; /* 9-bit two's complement */
            for (int64_t i = 0; i < rows; i++) {
                const float v = (float)acc[i * cols + j] * s;
                float r = nearbyintf(v) + (float)offset; /* ties to even, then the integer offset */
                r = r != r ? 0.0f : r < -128.0f ? -128.0f : r > 127.0f ? 127.0f : r;
                const int8_t q = (int8_t)r;
                memcpy((char *)mat_at(&g->c, i0 + i, j0 + j), &q, 1);
            }
        }
        return;
    }
    const int64_t ses = (int64_t)mf_dtype_size(p->scale_dtype);
    for (int64_t j = 0; j < cols; j++) { /* each int32 becomes its fp32 result in place */
        float s;
        mf_widen_f32(g->scale + (j0 + j) * g->scale_s * ses, 0, p->scale_dtype, 1, &s, 1);
        for (int64_t i = 0; i < rows; i++) {
            float v = (float)acc[i * cols + j] * s;
            if (g->pts) {
                float pt;
                memcpy(&pt, g->pts + (i0 + i) * g->pts_s * 4, 4);
                v = v * pt;
            }
            buf[i * cols + j] = v;
        }
    }
    store(&g->c, i0, rows, j0, cols, buf);
}

/* A tile of at most MF_GEMV_ROWS rows (decode: a token or a few per expert)
 * whose weight panel has unit column stride: the table's gemv reads the
 * weight once, as it lies, instead of widening it into a K x cols fp32
 * panel that the BLAS then reads again (three times the bytes: the touched
 * experts' weights streamed at 0.23-0.43 of the read bandwidth through that
 * path, AVX2 EPYC, bench --experts). x is used in place when it is fp32 with
 * unit column stride, else widened into abuf (its scratch exists when
 * phase 1 chose to pack A). Whether a tile takes this path depends on its
 * shape and layout alone, never on the thread count. */
static bool stream_ok(const gmm_plan *p, const gmm_group *g) {
    if (g->m > MF_GEMV_ROWS || p->quant != GMM_Q_NONE || p->antiquant || g->k == 0 || g->zero || !g->b.uniform ||
        g->b.cs != 1 || g->b.rs < 0 || mf_dt_of(g->b.dtype) == MF_NUM_DT)
        return false;
    return (g->a.uniform && g->a.cs == 1 && direct(&g->a, g->m, g->k)) || p->pack_a;
}
static void stream_tile(const gmm_group *g, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                        float beta, float *cbuf, float *abuf) {
    const float *A;
    int64_t lda;
    if (g->a.uniform && g->a.cs == 1 && direct(&g->a, g->m, g->k)) {
        A = (const float *)mat_at(&g->a, i0, 0), lda = g->a.rs;
    } else {
        pack(&g->a, i0, rows, 0, g->k, abuf);
        A = abuf, lda = g->k;
    }
    if (beta == 0.0f) memset(cbuf, 0, (size_t)(rows * cols) * 4);
    mf_kernels()->gemv[mf_dt_of(g->b.dtype)]((size_t)rows, (size_t)cols, (size_t)g->k, A, (size_t)lda,
                                             mat_at(&g->b, 0, j0), (size_t)g->b.rs, cbuf, (size_t)cols);
    store(&g->c, i0, rows, j0, cols, cbuf);
}

/* A group's panel width: STREAM_COLS for a streamed group, the shape's nt for every other. */
static int64_t group_nt(const gmm_plan *p, const gmm_shape *sh, const gmm_group *g) {
    return stream_ok(p, g) ? STREAM_COLS : sh->nt;
}

static void gmm_tile(const gmm_ctx *c, int64_t tile, float *sc, int64_t *cached) {
    const gmm_plan *p = c->p;
    int64_t lo = 0, hi = p->E; /* the group holding the tile: first[gi] <= tile < first[gi + 1] */
    while (hi - lo > 1) {
        const int64_t mid = (lo + hi) / 2;
        if (c->first[mid] <= tile) lo = mid;
        else hi = mid;
    }
    while (c->first[lo + 1] <= tile) lo++; /* skip groups without tiles */
    const gmm_group *g = &c->g[lo];
    const gmm_shape *sh = &c->sh;
    const int64_t local = tile - c->first[lo], mblocks = (g->m + sh->mt - 1) / sh->mt;
    const int64_t panel = local / mblocks, mb = local % mblocks;
    const int64_t nt = group_nt(p, sh, g), i0 = mb * sh->mt, j0 = panel * nt;
    const int64_t rows = g->m - i0 < sh->mt ? g->m - i0 : sh->mt, cols = g->n - j0 < nt ? g->n - j0 : nt;
    float *cbuf = sc, *abuf = sc + sh->cf, *bbuf = abuf + (p->pack_a ? sh->sm * sh->ka : 0);
    if (p->quant != GMM_Q_NONE) {
        int8_tile(p, g, i0, rows, j0, cols, cbuf, abuf, bbuf, (int32_t *)(void *)(bbuf + sh->ka * sh->sn));
        return;
    }
    if (g->zero) { /* (an accumulating call has no tiles for it) */
        memset(cbuf, 0, (size_t)(rows * cols) * 4);
        store(&g->c, i0, rows, j0, cols, cbuf);
        return;
    }
    const float beta = g->bias || p->accumulate ? 1.0f : 0.0f;
    if (g->bias) fill_bias(p, g, j0, rows, cols, cbuf);
    if (p->accumulate) load(&g->c, i0, rows, j0, cols, cbuf);
    if (stream_ok(p, g)) {
        stream_tile(g, i0, rows, j0, cols, beta, cbuf, abuf);
        return;
    }
    if (g->onednn && mf_dnnl_gemm(g->a.dtype == ACL_BF16, rows, cols, g->k, mat_at(&g->a, i0, 0), g->a.rs, g->a.cs,
                                  mat_at(&g->b, 0, j0), g->b.rs, g->b.cs, beta, cbuf, cols)) {
        store(&g->c, i0, rows, j0, cols, cbuf);
        return;
    }
    if (g->onednn && g->bias) fill_bias(p, g, j0, rows, cols, cbuf); /* a failed call may have added to it */
    if (g->onednn && p->accumulate) load(&g->c, i0, rows, j0, cols, cbuf);
    const float *A, *B;
    int64_t rsa, csa, rsb, csb;
    if (direct(&g->a, rows, g->k)) {
        A = (const float *)mat_at(&g->a, i0, 0), rsa = g->a.rs, csa = g->a.cs;
    } else if (g->a.uniform && g->a.rs == 1 && g->a.cs != 1) { /* a transposed view (dW's x^T): column-major */
        pack_cols(&g->a, i0, rows, g->k, abuf);
        A = abuf, rsa = 1, csa = rows;
    } else {
        pack(&g->a, i0, rows, 0, g->k, abuf);
        A = abuf, rsa = g->k, csa = 1;
    }
    if (direct(&g->b, g->k, cols)) {
        B = (const float *)mat_at(&g->b, 0, j0), rsb = g->b.rs, csb = g->b.cs;
    } else {
        if (cached[0] != lo || cached[1] != panel) { /* the panel this worker packed last */
            if (p->antiquant) pack_antiquant(p, g, j0, cols, bbuf);
            else pack(&g->b, 0, g->k, j0, cols, bbuf);
            cached[0] = lo, cached[1] = panel;
        }
        B = bbuf, rsb = cols, csb = 1;
    }
    mf_sgemm(rows, cols, g->k, A, rsa, csa, B, rsb, csb, beta, cbuf, cols);
    store(&g->c, i0, rows, j0, cols, cbuf);
}

static void gmm_worker(void *ctxp, int64_t s0, int64_t s1) {
    gmm_ctx *c = ctxp;
    for (int64_t s = s0; s < s1; s++) {
        float *sc = c->scratch + s * c->p->scratch;
        int64_t cached[2] = {-1, -1};
        for (;;) {
            const int64_t tile = (int64_t)atomic_fetch_add(&c->next, 1);
            if (tile >= c->ntiles) break;
            gmm_tile(c, tile, sc, cached);
        }
    }
}

/* The group list's entries: v[0..n). */
static aclnnStatus read_list(const gmm_plan *p, const aclTensor *gl, int64_t *v, int64_t *n) {
    if (p->int_array) {
        *n = p->E;
        memcpy(v, p->gl, (size_t)p->E * sizeof *v);
        return ACLNN_SUCCESS;
    }
    if (gl == NULL) {
        *n = 0;
        return ACLNN_SUCCESS;
    }
    *n = gl->dims[0];
    const char *b = mf_tensor_base(gl);
    for (int64_t i = 0; i < *n; i++) memcpy(&v[i], b + i * gl->strides[0] * 8, 8);
    return ACLNN_SUCCESS;
}

/* ends[0..n] (ends[0] = 0) from the list; every group >= 0, the total <= limit. */
static aclnnStatus group_ends(const gmm_plan *p, const int64_t *v, int64_t n, int64_t limit, const char *what,
                              int64_t *ends) {
    ends[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        if ((p->list_type == 0 && v[i] < ends[i]) || (p->list_type == 1 && v[i] < 0))
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: groupList[%lld] = %lld %s", p->op, (long long)i,
                           (long long)v[i], p->list_type == 0 ? "is below the entry before it (cumulative ends)"
                                                              : "is negative (counts)");
        /* v[i] and ends[i] are in [0, limit] here: the sum cannot overflow once v[i] <= limit */
        const int64_t e = v[i] > limit ? v[i] : p->list_type == 0 ? v[i] : ends[i] + v[i];
        if (e > limit)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: groupList covers %lld %s at entry %lld, beyond the %lld %s has",
                           p->op, (long long)e, what, (long long)i, (long long)limit, what);
        ends[i + 1] = e;
    }
    return ACLNN_SUCCESS;
}

static int64_t rows_of(const aclTensor *t) { return t->ndim >= 1 && t->dims[t->ndim - 1] ? t->numel / t->dims[t->ndim - 1] : 0; }

aclnnStatus mf_gmm_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const gmm_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const int n_all = p->nx + p->nw + p->nb + p->ny;
    for (int i = 0; i < n_all; i++)
        if (p->t[i].numel > 0 && p->t[i].data == NULL)
            return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: a tensor of %lld elements in x, weight, bias or out has a NULL address",
                           p->op, (long long)p->t[i].numel);
    char *ws = mf_align64(workspace);
    gmm_group *g = (gmm_group *)ws;
    int64_t *first = (int64_t *)(ws + ((p->E * sizeof(gmm_group) + 63) & ~(size_t)63));
    int64_t *ends = first + p->E + 1; /* E + 1 entries, then the raw list (E) */
    int64_t *raw = ends + p->E + 1;
    float *scratch = (float *)mf_align64(raw + p->E);
    int64_t nl = 0;
    MF_TRY(read_list(p, t[0], raw, &nl));
    memset(g, 0, (size_t)p->E * sizeof *g);
    const aclTensor *x0 = gmm_x(p, 0), *w0 = gmm_w(p, 0), *y0 = gmm_y(p, 0);
    for (int64_t i = 0; i < p->E; i++) {
        gmm_group *q = &g[i];
        const aclTensor *bt = p->nb == 0 ? NULL : p->nb == 1 && p->nw == 1 ? gmm_b(p, 0) : gmm_b(p, (int)i);
        if (bt) {
            const char *bb = mf_tensor_base(bt);
            q->bias = bt->ndim == 2 ? bb + i * bt->strides[0] * (int64_t)mf_dtype_size(bt->dtype) : bb;
            q->bias_s = bt->strides[bt->ndim - 1];
        }
    }
    if (p->gt == -1) {
        if (nl != 0 && nl != p->E)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: groupList has %lld entries for %lld groups", p->op,
                           (long long)nl, (long long)p->E);
        for (int64_t i = 0; i < p->E; i++) {
            const aclTensor *xi = gmm_x(p, (int)i), *wi = gmm_w(p, (int)i), *yi = gmm_y(p, (int)i);
            gmm_group *q = &g[i];
            q->m = rows_of(xi), q->k = xi->dims[xi->ndim - 1], q->n = wi->dims[1] * (p->wpack == 8 ? 8 : 1);
            q->a = mat_of(xi, 0, 0), q->b = mat_of(wi, 0, 0), q->c = mat_of(yi, 0, 0);
        }
    } else if (p->gt == 0) {
        if (p->nx == 1) { /* x split by the group list */
            if (nl != p->E)
                return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: groupList has %lld entries for %lld groups", p->op,
                               (long long)nl, (long long)p->E);
            MF_TRY(group_ends(p, raw, nl, p->M, "rows of x", ends));
        } else { /* one x per group: the list, when given, must say the same */
            ends[0] = 0;
            for (int64_t i = 0; i < p->E; i++) ends[i + 1] = ends[i] + gmm_x(p, (int)i)->dims[0];
            if (nl != 0) {
                int64_t given[GMM_MAX_LIST + 1];
                if (nl != p->E)
                    return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: groupList has %lld entries for %lld x tensors",
                                   p->op, (long long)nl, (long long)p->E);
                MF_TRY(group_ends(p, raw, nl, ends[p->E], "rows of x", given));
                for (int64_t i = 0; i <= p->E; i++)
                    if (given[i] != ends[i])
                        return mf_fail(ACLNN_ERR_PARAM_INVALID,
                                       "%s: groupList says group %lld ends at row %lld, but the x tensors end it at %lld",
                                       p->op, (long long)i - 1, (long long)given[i], (long long)ends[i]);
            }
        }
        for (int64_t i = 0; i < p->E; i++) {
            gmm_group *q = &g[i];
            q->m = ends[i + 1] - ends[i];
            q->k = p->nx > 1 ? gmm_x(p, (int)i)->dims[1] : p->K; /* one x per group: its own K */
            q->n = p->N;
            q->a = p->nx == 1 ? mat_of(x0, ends[i], 0) : mat_of(gmm_x(p, (int)i), 0, 0);
            q->b = w0->ndim == 3 ? mat_slice(w0, i, 0, 0) : mat_of(gmm_w(p, (int)i), 0, 0);
            if (p->ny == 1) {
                q->c = mat_of(y0, ends[i], 0);
            } else { /* one out per group (V1/V2): its rows must be the group's */
                const aclTensor *yi = gmm_y(p, (int)i);
                if (rows_of(yi) != q->m)
                    return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: out[%lld] has %lld rows, its group %lld", p->op,
                                   (long long)i, (long long)rows_of(yi), (long long)q->m);
                q->c = mat_of(yi, 0, 0);
            }
        }
    } else { /* K split: x (M, K), weight (K, N), out (E, M, N) */
        if (nl != p->E)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: groupList has %lld entries for %lld groups", p->op,
                           (long long)nl, (long long)p->E);
        MF_TRY(group_ends(p, raw, nl, p->K, "columns of x (K)", ends));
        for (int64_t i = 0; i < p->E; i++) {
            gmm_group *q = &g[i];
            q->m = p->M, q->n = p->N, q->k = ends[i + 1] - ends[i];
            q->zero = q->k == 0;
            q->a = mat_of(x0, 0, ends[i]);
            q->b = mat_of(w0, ends[i], 0);
            q->c = mat_slice(y0, i, 0, 0);
            q->bias = NULL;
        }
    }
    if (p->antiquant) /* antiquant scales and offsets: (E, N) beside one weight or (N) per weight */
        for (int64_t i = 0; i < p->E; i++) {
            gmm_group *q = &g[i];
            const aclTensor *st = p->nas == 1 ? gmm_aqs(p, 0) : gmm_aqs(p, (int)i);
            const aclTensor *ot = p->nas == 1 ? gmm_aqo(p, 0) : gmm_aqo(p, (int)i);
            const int one = p->aq_gsize ? 3 : 2; /* the rank of one tensor beside one (E, K, N) weight */
            q->aqs = mf_tensor_base(st) + (st->ndim == one ? i * st->strides[0] * 2 : 0);
            q->aqo = mf_tensor_base(ot) + (ot->ndim == one ? i * ot->strides[0] * 2 : 0);
            q->aqs_s = st->strides[st->ndim - 1];
            q->aqo_s = ot->strides[ot->ndim - 1];
            q->aqs_gs = p->aq_gsize ? st->strides[st->ndim - 2] : 0;
            q->aqo_gs = p->aq_gsize ? ot->strides[ot->ndim - 2] : 0;
        }
    if (p->quant == GMM_Q_DEQ || p->quant == GMM_Q_REQ) { /* scales: (E, N) beside one weight or (N) per weight */
        const int64_t ses = (int64_t)mf_dtype_size(p->scale_dtype);
        for (int64_t i = 0; i < p->E; i++) {
            gmm_group *q = &g[i];
            const aclTensor *st = p->ns == 1 ? gmm_s(p, 0) : gmm_s(p, (int)i);
            const char *sb = mf_tensor_base(st);
            q->scale = st->ndim == 2 ? sb + i * st->strides[0] * ses : sb;
            q->scale_s = st->strides[st->ndim - 1];
            if (p->npt) { /* one x: the group's rows start at its row0 */
                const aclTensor *pt = gmm_pt(p);
                q->pts = mf_tensor_base(pt) + q->a.row0 * pt->strides[0] * 4;
                q->pts_s = pt->strides[0];
            }
        }
    }
    gmm_ctx c;
    memset(&c, 0, sizeof c);
    c.sh = (gmm_shape){p->mt, p->nt, p->sm, p->sn, p->kmax, p->cf};
    if (p->gt == 2 && (p->pack_a || p->pack_b)) {
        /* Phase 1 sized the packed panels' scratch for a group as long as all
         * of K, which cut the tiles to 64 x 128 (at 65536 rows of K), and BLIS
         * packs B again for every 64 rows. The group list is known now: the
         * tiles grow to what the largest group needs within the same scratch
         * (the shape still depends on the problem alone). From 512 x 512:
         * with 1024 columns, a group of 2048 rows of K had 8 MiB B panels, and
         * the MoE shapes' bf16 dW ran at 0.72-0.82 of one GEMM against
         * 0.91-1.05 (Zen 4, BENCHMARKS.md). Without packing the scratch is C
         * alone and phase 1's 512 x 1024 stays. */
        int64_t kg = 0;
        for (int64_t i = 0; i < p->E; i++) kg = g[i].k > kg ? g[i].k : kg;
        gmm_shape grown;
        if (tile_shape(p, p->mrows, p->N, kg, 512, p->scratch, &grown) <= p->scratch) c.sh = grown;
    }
    if ((p->dtype == ACL_BF16 || p->dtype == ACL_FLOAT) && mf_dnnl_ready(p->dtype == ACL_BF16))
        mf_parallel_for(p->E, dnnl_groups, g, 1);
    first[0] = 0;
    for (int64_t i = 0; i < p->E; i++) {
        const gmm_group *q = &g[i];
        const int64_t nt = group_nt(p, &c.sh, q);
        const int64_t tiles = q->m > 0 && q->n > 0 && (q->k > 0 || (q->zero && !p->accumulate))
                                  ? ((q->m + c.sh.mt - 1) / c.sh.mt) * ((q->n + nt - 1) / nt)
                                  : 0;
        first[i + 1] = first[i] + tiles;
    }
    c.p = p;
    c.g = g;
    c.first = first;
    c.ntiles = first[p->E];
    c.scratch = scratch;
    atomic_init(&c.next, 0);
    if (c.ntiles == 0) return ACLNN_SUCCESS;
    const int64_t slots = c.ntiles < p->workers ? c.ntiles : p->workers;
    mf_parallel_for(slots, gmm_worker, &c, 2);
    return ACLNN_SUCCESS;
}

/* Panels of 256 columns where the weight is widened into them (fp16, and bf16 off oneDNN; not the
 * quantized rows, whose packing is their own): a K x 1024 fp32 panel (8 MiB at K = 2048) leaves the
 * L2 before the BLAS reads it back, and a MoE group's few hundred rows do not amortize that. bf16
 * at Qwen3-30B-A3B's gate+up (2048 tokens, 128 experts, K 2048), AVX2 EPYC, bench --experts, two
 * runs: forward 113 / 98 GFLOP/s with 1024 columns, 131 / 144 with 256, 129 / 130 with 128; the
 * same call with one group (E = 1) 171 / 154, 153 / 153, 125 / 135. Elsewhere 1024. */
static int64_t panel_cols(const gmm_plan *p) {
    const bool widened = p->pack_b && p->quant == GMM_Q_NONE && !p->antiquant &&
                         !(p->dtype == ACL_BF16 && mf_dnnl_ready(true));
    return widened ? 256 : 1024;
}

void mf_gmm_tiles(gmm_plan *p) {
    /* a worker's scratch at most 16 Mi floats */
    gmm_shape t;
    p->scratch = tile_shape(p, p->mrows, p->N, p->kmax, panel_cols(p), (int64_t)1 << 24, &t);
    p->mt = t.mt, p->nt = t.nt, p->sm = t.sm, p->sn = t.sn, p->cf = t.cf;
}

bool mf_gmm_direct(const aclTensor *t, bool weight) {
    int64_t rs = 0;
    if (t->dtype != ACL_FLOAT || t->ndim < 2) return false;
    const int64_t cols = t->dims[t->ndim - 1];
    if (weight && t->ndim == 3) /* one (E, K, N) weight: phase 2 reads its (K, N) slices */
        return ld_ok(t->dims[1], cols, t->strides[1], t->strides[2]);
    if (!rows_collapse(t, &rs)) return false;
    return ld_ok(cols ? t->numel / cols : 0, cols, rs, t->strides[t->ndim - 1]);
}

uint64_t mf_gmm_workspace(const gmm_plan *p) {
    const uint64_t groups = ((uint64_t)p->E * sizeof(gmm_group) + 63) & ~(uint64_t)63;
    const uint64_t lists = (uint64_t)(3 * p->E + 2) * 8;
    return mf_workspace_with_slack(groups + lists + 64 + (uint64_t)p->workers * (uint64_t)p->scratch * 4);
}
