/* moefr/moefr.h - moefr's own additions to the CANN API: version and the
 * kernel path in use. Everything else is reached through the CANN headers. */
#ifndef MOEFR_MOEFR_H_
#define MOEFR_MOEFR_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOEFR_VERSION_MAJOR 0
#define MOEFR_VERSION_MINOR 1
#define MOEFR_VERSION_PATCH 0

/* "major.minor.patch" of the library actually loaded. */
ACL_FUNC_VISIBILITY const char *moefrVersion(void);
/* Name of the kernel path in use: "scalar", "avx2", "avx512", ... */
ACL_FUNC_VISIBILITY const char *moefrIsa(void);
/* The BLAS behind GroupedMatmul: library, version and the kernel set it
 * chose for this CPU, e.g. "OpenBLAS 0.3.21 ... (Haswell kernels)". */
ACL_FUNC_VISIBILITY const char *moefrBlas(void);
/* The product whose operator rules (dtype tables, tiling checks) are in force, as MOEFR_SOC chose
 * it when the library first needed it: "ascend950" (the default) or "ascend910b" (Atlas A2/A3). */
ACL_FUNC_VISIBILITY const char *moefrSoc(void);
/* Number of threads phase 2 may use (caller included). */
ACL_FUNC_VISIBILITY int moefrNumThreads(void);
/* Releases an array returned by aclGetViewShape, aclGetStorageShape or
 * aclGetViewStrides: the C counterpart of the delete[] CANN's C++ samples use
 * (either is correct for such an array). NULL is accepted. */
ACL_FUNC_VISIBILITY void moefrFreeArray(void *array);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_MOEFR_H_ */
