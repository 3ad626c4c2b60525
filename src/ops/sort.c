/* sort.c - the stable counting sort by expert id (sort.h). */
#include <string.h>

#include "ops/sort.h"

/* Below this many keys one thread sorts (waking workers costs more). */
#define MF_SORT_SERIAL 32768
/* Chunk size and limits: the chunk count depends on T and key_hi only. */
#define MF_SORT_CHUNK 4096
#define MF_SORT_MAX_CHUNKS 64
#define MF_SORT_HIST_MAX ((int64_t)1 << 20) /* (key, chunk) counters */

typedef struct sort_pass {
    const uint32_t *key;
    const int32_t *in; /* positions to sort, NULL for 0..T-1 */
    int32_t *out;
    int64_t T, nc, nb;
    unsigned shift;
    uint32_t mask;
    int64_t *hist; /* hist[d * nc + c] */
} sort_pass;

static int64_t n_buckets(int64_t key_hi, int pass) {
    const int64_t digit = (int64_t)1 << MF_SORT_DIGIT_BITS;
    if (key_hi <= digit) return key_hi;
    return pass == 0 ? digit : ((key_hi - 1) >> MF_SORT_DIGIT_BITS) + 1;
}

static int64_t n_chunks(int64_t T, int64_t nb) {
    int64_t nc = (T + MF_SORT_CHUNK - 1) / MF_SORT_CHUNK;
    if (nc > MF_SORT_MAX_CHUNKS) nc = MF_SORT_MAX_CHUNKS;
    if (nc * nb > MF_SORT_HIST_MAX) nc = MF_SORT_HIST_MAX / nb;
    return nc < 1 ? 1 : nc;
}

static inline int64_t chunk_begin(const sort_pass *s, int64_t c) { return c * s->T / s->nc; }

static inline uint32_t digit_of(const sort_pass *s, int64_t i) {
    const int64_t j = s->in ? s->in[i] : i;
    return (s->key[j] >> s->shift) & s->mask;
}

static void count_chunks(void *ctx, int64_t c0, int64_t c1) {
    const sort_pass *s = ctx;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t i = chunk_begin(s, c), e = chunk_begin(s, c + 1); i < e; i++)
            s->hist[(int64_t)digit_of(s, i) * s->nc + c]++;
}

static void scatter_chunks(void *ctx, int64_t c0, int64_t c1) {
    const sort_pass *s = ctx;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t i = chunk_begin(s, c), e = chunk_begin(s, c + 1); i < e; i++) {
            const int64_t at = s->hist[(int64_t)digit_of(s, i) * s->nc + c]++;
            s->out[at] = s->in ? s->in[i] : (int32_t)i;
        }
}

static void run_pass(sort_pass *s, int64_t *counts) {
    const int64_t serial = s->T < MF_SORT_SERIAL ? INT64_MAX : 2;
    memset(s->hist, 0, (size_t)(s->nc * s->nb) * sizeof *s->hist);
    mf_parallel_for(s->nc, count_chunks, s, serial);
    /* (key, chunk) order: every chunk's run of key d follows the earlier
     * chunks' runs of d, so equal keys keep their position order. */
    int64_t at = 0;
    for (int64_t d = 0; d < s->nb; d++) {
        const int64_t from = at;
        for (int64_t c = 0; c < s->nc; c++) {
            const int64_t n = s->hist[d * s->nc + c];
            s->hist[d * s->nc + c] = at;
            at += n;
        }
        if (counts) counts[d] = at - from;
    }
    mf_parallel_for(s->nc, scatter_chunks, s, serial);
}

static uint64_t round64(uint64_t b) { return (b + 63) & ~(uint64_t)63; }

uint64_t mf_sort_scratch_bytes(int64_t T, int64_t key_hi) {
    if (T <= 0) return 0;
    uint64_t bytes = 0;
    const int passes = key_hi > ((int64_t)1 << MF_SORT_DIGIT_BITS) ? 2 : 1;
    for (int p = 0; p < passes; p++) {
        const int64_t nb = n_buckets(key_hi, p), nc = n_chunks(T, nb);
        const uint64_t h = round64((uint64_t)(nc * nb) * sizeof(int64_t));
        if (h > bytes) bytes = h;
    }
    if (passes == 2) bytes += round64((uint64_t)T * sizeof(int32_t));
    return bytes;
}

void mf_sort_by_key(const uint32_t *key, int64_t T, int64_t key_hi, int32_t *perm, void *scratch,
                    int64_t *counts) {
    if (T <= 0) {
        if (counts && key_hi <= ((int64_t)1 << MF_SORT_DIGIT_BITS))
            memset(counts, 0, (size_t)key_hi * sizeof *counts);
        return;
    }
    const int passes = key_hi > ((int64_t)1 << MF_SORT_DIGIT_BITS) ? 2 : 1;
    int64_t hist_bytes = 0;
    for (int p = 0; p < passes; p++) {
        const int64_t nb = n_buckets(key_hi, p), h = (int64_t)round64((uint64_t)(n_chunks(T, nb) * nb) * 8);
        if (h > hist_bytes) hist_bytes = h;
    }
    int32_t *tmp = passes == 2 ? (int32_t *)((char *)scratch + hist_bytes) : NULL;
    for (int p = 0; p < passes; p++) {
        sort_pass s;
        s.key = key;
        s.T = T;
        s.nb = n_buckets(key_hi, p);
        s.nc = n_chunks(T, s.nb);
        s.shift = p == 0 ? 0 : MF_SORT_DIGIT_BITS;
        s.mask = passes == 1 ? 0xffffffffu : p == 0 ? ((1u << MF_SORT_DIGIT_BITS) - 1) : 0xffffffffu;
        s.hist = scratch;
        s.in = p == 0 ? NULL : tmp;
        s.out = p == passes - 1 ? perm : tmp;
        run_pass(&s, passes == 1 ? counts : NULL);
    }
}
