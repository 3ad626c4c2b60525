/* test_sort.c - the shared stable sort by expert (src/ops/sort.c) against a
 * comparison sort on (key, position) pairs: random sizes (0, 1, odd, past the
 * chunk and serial thresholds), key ranges of one key, few keys (many ties),
 * more keys than entries, 2^16 and 2^16 + 1 (one pass and two), up to 2^31;
 * poisoned output and scratch with guard bytes; per-key totals. */
#include "ops/sort.h"
#include "testutil.h"

static int g_fail, g_cases;

static void one(int64_t T, int64_t key_hi, int skew) {
    uint32_t *key = malloc(sizeof *key * (size_t)(T + 1));
    int64_t *k64 = malloc(sizeof *k64 * (size_t)(T + 1)), *ref = malloc(sizeof *ref * (size_t)(T + 1));
    for (int64_t j = 0; j < T; j++) {
        int64_t v = tu_int(0, key_hi - 1);
        if (skew && tu_int(0, 3)) v = tu_int(0, key_hi - 1 < 3 ? key_hi - 1 : 3); /* heavy ties */
        key[j] = (uint32_t)v, k64[j] = v;
    }
    tu_ref_sort(k64, T, ref);
    const size_t pb = (size_t)T * 4, sb = (size_t)mf_sort_scratch_bytes(T, key_hi);
    unsigned char *perm = tu_poisoned(pb), *raw = tu_poisoned(sb + 64);
    unsigned char *scratch = (unsigned char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    const int with_counts = key_hi <= 65536;
    int64_t *counts = with_counts ? malloc(sizeof *counts * (size_t)(key_hi + 1)) : NULL;
    if (counts) counts[key_hi] = 0x7777;
    mf_sort_by_key(key, T, key_hi, (int32_t *)perm, scratch, counts);
    g_cases++;
    int bad = 0;
    /* nothing past the scratch size it asked for is touched */
    const size_t at = (size_t)(scratch - raw) + sb;
    if (!tu_all_poison(raw + at, sb + 64 + TU_GUARD - at))
        printf("FAIL T=%lld key_hi=%lld: scratch written past its size\n", (long long)T, (long long)key_hi), bad = 1;
    for (int64_t i = 0; i < T && !bad; i++) {
        int32_t got;
        memcpy(&got, perm + i * 4, 4);
        if (got != ref[i]) {
            printf("FAIL T=%lld key_hi=%lld: perm[%lld] = %d, want %lld\n", (long long)T, (long long)key_hi,
                   (long long)i, got, (long long)ref[i]);
            bad = 1;
        }
    }
    if (counts && !bad) {
        int64_t *want = calloc((size_t)key_hi, sizeof *want);
        for (int64_t j = 0; j < T; j++) want[k64[j]]++;
        for (int64_t e = 0; e < key_hi && !bad; e++) {
            const int64_t n = want[e];
            if (counts[e] != n) {
                printf("FAIL T=%lld key_hi=%lld: counts[%lld] = %lld, want %lld\n", (long long)T, (long long)key_hi,
                       (long long)e, (long long)counts[e], (long long)n);
                bad = 1;
            }
        }
        free(want);
        if (counts[key_hi] != 0x7777) printf("FAIL: counts written past key_hi\n"), bad = 1;
    }
    if (!tu_guard_ok(perm, pb)) printf("FAIL T=%lld: perm written past T\n", (long long)T), bad = 1;
    g_fail += bad;
    free(key), free(k64), free(ref), free(perm), free(raw), free(counts);
}

int main(void) {
    tu_seed("test_sort");
    const int64_t his[] = {1, 2, 3, 7, 64, 257, 65535, 65536, 65537, 1000003, (int64_t)1 << 31};
    const int64_t sizes[] = {0, 1, 2, 3, 5, 17, 63, 4095, 4097, 9999, 32767, 32769, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t h = 0; h < sizeof his / sizeof *his; h++) one(sizes[s], his[h], (int)(s + h) % 2);
    for (int r = 0; r < 60; r++) one(tu_int(0, r < 50 ? 3000 : 300000), his[tu_int(0, 10)], (int)tu_int(0, 1));
    printf("test_sort: %d cases, %d failed\n", g_cases, g_fail);
    return g_fail != 0;
}
