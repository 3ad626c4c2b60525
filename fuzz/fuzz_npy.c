/* fuzz_npy.c - libFuzzer target (c): the CLI's .npy parser on arbitrary bytes, with the
 * parsed array checked for consistency and re-parsed after a header round trip. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

#define NPY_REQUIRE(c, what)                                                  \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "FUZZ FAILURE %s:%d: %s: %s\n", __FILE__, __LINE__, #c, what); \
            abort();                                                          \
        }                                                                     \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mf_npy a;
    char err[96];
    memset(err, 'x', sizeof err);
    /* A tiny error buffer on odd sizes: messages must be truncated, never overrun. */
    size_t errlen = (size & 1) ? 7 : sizeof err;
    if (mf_npy_parse(data, size, &a, err, errlen) != 0) {
        NPY_REQUIRE(memchr(err, '\0', errlen) != NULL, "error message not terminated");
        NPY_REQUIRE(err[0] != '\0', "failure without a reason");
        return 0;
    }
    NPY_REQUIRE(a.ndim >= 0 && a.ndim <= MF_NPY_MAX_DIMS, "ndim out of range");
    NPY_REQUIRE(a.dtype >= MF_NPY_F2 && a.dtype <= MF_NPY_I8, "unknown dtype");
    NPY_REQUIRE(a.itemsize == mf_npy_itemsize(a.dtype), "itemsize");
    int64_t n = 1;
    for (int i = 0; i < a.ndim; i++) {
        NPY_REQUIRE(a.dims[i] >= 0, "negative dim");
        NPY_REQUIRE(a.dims[i] == 0 || n <= INT64_MAX / a.dims[i], "dims overflow");
        n *= a.dims[i];
    }
    NPY_REQUIRE(n == a.numel, "numel is not the product of dims");
    NPY_REQUIRE((uint64_t)a.numel <= SIZE_MAX / a.itemsize && a.nbytes == (size_t)a.numel * a.itemsize, "nbytes");
    const uint8_t *p = (const uint8_t *)a.data;
    NPY_REQUIRE(p >= data && p <= data + size && a.nbytes == (size_t)(data + size - p),
                "data is not exactly the tail of the buffer");
    /* Touch every byte (ASan sees reads outside the input). */
    unsigned sum = 0;
    for (size_t i = 0; i < a.nbytes; i++) sum += p[i];
    (void)sum;
    /* The writer's header for the same array, followed by the same data, must parse back to it. */
    char hdr[4096];
    size_t hl = mf_npy_format_header(a.dtype, a.ndim, a.dims, hdr, sizeof hdr);
    if (hl > 0 && hl + a.nbytes <= (1u << 20)) {
        uint8_t *img = malloc(hl + a.nbytes + 1);
        memcpy(img, hdr, hl);
        memcpy(img + hl, p, a.nbytes);
        mf_npy b;
        NPY_REQUIRE(mf_npy_parse(img, hl + a.nbytes, &b, err, sizeof err) == 0, err);
        NPY_REQUIRE(b.dtype == a.dtype && b.ndim == a.ndim && b.numel == a.numel, "round trip changed the array");
        for (int i = 0; i < a.ndim; i++) NPY_REQUIRE(b.dims[i] == a.dims[i], "round trip changed a dim");
        NPY_REQUIRE(memcmp(b.data, p, a.nbytes) == 0, "round trip changed the data");
        free(img);
    }
    return 0;
}
