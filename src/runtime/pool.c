/* pool.c - parallel loops. This version runs every range on the calling
 * thread; the worker pool replaces it without changing the interface. */
#include "internal.h"

void mf_parallel_for(int64_t n, mf_range_fn fn, void *ctx, int64_t serial_below) {
    (void)serial_below;
    if (n > 0) fn(ctx, 0, n);
}

int mf_num_threads(void) { return 1; }
