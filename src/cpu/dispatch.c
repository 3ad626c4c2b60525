/* dispatch.c - picks the kernel table once per process. */
#include "kernels/kernels.h"
#include "moefr/moefr.h"

const mf_ukernels *mf_kernels(void) { return &mf_ukernels_scalar; }

const char *moefrIsa(void) { return mf_kernels()->isa; }
