/* oracles.c - see oracles.h. */
#include "oracles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fwd_ref.h"

void or_compute_expert_tokens(const int32_t *v, int64_t n, int64_t E, int32_t *out) {
    for (int64_t e = 0; e < E; e++) {
        int32_t c = 0;
        for (int64_t i = 0; i < n; i++) c += v[i] <= e;
        out[e] = c;
    }
}

void or_gather_sum(int dt, const void *g, int64_t H, const int64_t *idx, int64_t R, int64_t K, int64_t keep,
                   void *out) {
    const size_t es = fr_size(dt);
    for (int64_t r = 0; r < R; r++)
        for (int64_t h = 0; h < H; h++) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++) {
                const int64_t d = idx[r * K + k];
                if (d >= 0 && d < keep) acc += fr_decode(dt, g, d * H + h);
            }
            const uint32_t b = fr_round(dt, acc);
            memcpy((char *)out + (size_t)(r * H + h) * es, &b, es); /* little-endian low bytes */
        }
}

void or_stable_sort(const int64_t *key, int64_t T, int64_t *perm) {
    for (int64_t i = 0; i < T; i++) perm[i] = i;
    for (int64_t i = 1; i < T; i++) { /* insertion sort: stable */
        const int64_t p = perm[i];
        int64_t j = i;
        while (j > 0 && key[perm[j - 1]] > key[p]) {
            perm[j] = perm[j - 1];
            j--;
        }
        perm[j] = p;
    }
}

void or_init_routing_v2(const void *x, int64_t N, int64_t H, int es, const int64_t *eid, int64_t K, int64_t active,
                        int64_t E, int64_t C, int droppad, int flag, int32_t *rowidx, void *ex, int64_t *cnt,
                        int64_t *before) {
    const int64_t T = N * K;
    int64_t *perm = malloc((size_t)(T ? T : 1) * sizeof *perm);
    or_stable_sort(eid, T, perm);
    int64_t *count = calloc((size_t)(E ? E : 1), sizeof *count);
    for (int64_t j = 0; j < T; j++)
        if (eid[j] >= 0 && eid[j] < E) count[eid[j]]++;
    const size_t row = (size_t)H * (size_t)es;
    if (!droppad) {
        const int64_t A = active == 0 ? T : (active < T ? active : T);
        for (int64_t i = 0; i < T; i++) rowidx[perm[i]] = (int32_t)i;
        for (int64_t i = 0; i < A; i++) memcpy((char *)ex + (size_t)i * row, (const char *)x + (size_t)(perm[i] / K) * row, row);
        if (cnt) {
            int64_t run = 0;
            for (int64_t e = 0; e < E; e++) cnt[e] = flag == 1 ? (run += count[e]) : count[e];
        }
    } else {
        memset(ex, 0, (size_t)(E * C) * row);
        int64_t i = 0;
        for (int64_t e = 0; e < E; e++)
            for (int64_t s = 0; s < count[e]; s++, i++) {
                const int64_t j = perm[i];
                if (s < C) {
                    rowidx[j] = (int32_t)(e * C + s);
                    memcpy((char *)ex + (size_t)(e * C + s) * row, (const char *)x + (size_t)(j / K) * row, row);
                } else {
                    rowidx[j] = -1;
                }
            }
        if (before)
            for (int64_t e = 0; e < E; e++) before[e] = count[e];
    }
    free(perm);
    free(count);
}

void or_gating(const double *x, int64_t N, int64_t E, int64_t k, int renorm, const bool *finished, double *y,
               int32_t *eidx, double *softmax) {
    double *p = malloc((size_t)E * sizeof *p);
    char *taken = malloc((size_t)E);
    for (int64_t r = 0; r < N; r++) {
        const double *xr = x + r * E;
        double mx = -INFINITY, s = 0;
        for (int64_t e = 0; e < E; e++) mx = xr[e] > mx ? xr[e] : mx;
        for (int64_t e = 0; e < E; e++) s += p[e] = exp(xr[e] - mx);
        for (int64_t e = 0; e < E; e++) {
            p[e] /= s;
            if (softmax) softmax[r * E + e] = p[e];
        }
        memset(taken, 0, (size_t)E);
        double ksum = 0, kmx = -INFINITY;
        for (int64_t j = 0; j < k; j++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++)
                if (!taken[e] && (best < 0 || xr[e] > xr[best])) best = e;
            taken[best] = 1;
            eidx[r * k + j] = (int32_t)best;
            y[r * k + j] = p[best];
            if (j == 0) kmx = xr[best];
            ksum += exp(xr[best] - kmx);
        }
        if (renorm)
            for (int64_t j = 0; j < k; j++) y[r * k + j] = exp(xr[eidx[r * k + j]] - kmx) / ksum;
        if (finished && finished[r])
            for (int64_t j = 0; j < k; j++) eidx[r * k + j] = (int32_t)E;
    }
    free(p);
    free(taken);
}

void or_init_routing(const void *x, int64_t N, int64_t H, int es, const int64_t *ridx, const int64_t *eid, int64_t K,
                     int64_t active, void *ex, int32_t *row, int32_t *eex) {
    const int64_t T = N * K, A = (active < N ? active : N) * K;
    int64_t *perm = malloc((size_t)(T ? T : 1) * sizeof *perm);
    or_stable_sort(eid, T, perm);
    const size_t rb = (size_t)H * (size_t)es;
    for (int64_t i = 0; i < T; i++) {
        const int64_t j = perm[i];
        eex[i] = (int32_t)eid[j];
        row[ridx[j]] = (int32_t)i;
        if (i < A) memcpy((char *)ex + (size_t)i * rb, (const char *)x + (size_t)(ridx[j] % N) * rb, rb);
    }
    free(perm);
}
