/* acl/acl.h - the runtime entry points: init/finalize, versions, and (through
 * acl_rt.h and acl_base.h) everything else of the acl runtime moefr provides. */
#ifndef MOEFR_ACL_ACL_H_
#define MOEFR_ACL_ACL_H_

#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The acl interface version moefr implements (CANN 8.1.RC1's). */
#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 13
#define ACL_PATCH_VERSION 0
#define ACL_PKG_VERSION_MAX_SIZE 128
#define ACL_PKG_VERSION_PARTS_MAX_SIZE 64

/* Initialise the runtime once per process; configPath may be NULL (no file is
 * read). A second call without aclFinalize is ACL_ERROR_REPEAT_INITIALIZE. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
/* Undo aclInit; ACL_ERROR_UNINITIALIZE when not initialised. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
/* ACL_MAJOR/MINOR/PATCH_VERSION; NULL pointer: ACL_ERROR_INVALID_PARAM. */
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);

typedef enum aclCANNPackageName {
    ACL_PKG_NAME_CANN = 0,
    ACL_PKG_NAME_RUNTIME = 1,
    ACL_PKG_NAME_COMPILER = 2,
    ACL_PKG_NAME_HCCL = 3,
    ACL_PKG_NAME_TOOLKIT = 4,
    ACL_PKG_NAME_OPP = 5,
    ACL_PKG_NAME_OPP_KERNEL = 6,
    ACL_PKG_NAME_DRIVER = 7
} aclCANNPackageName;

typedef struct aclCANNPackageVersion {
    char version[ACL_PKG_VERSION_MAX_SIZE];
    char majorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char minorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char releaseVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char patchVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char reserved[ACL_PKG_VERSION_MAX_SIZE];
} aclCANNPackageVersion;

/* The CANN release whose API moefr implements ("8.1.RC1": major "8", minor
 * "1", release "RC1", patch ""), for every package name; reserved holds
 * "moefr <version>". Unknown name or NULL version: ACL_ERROR_INVALID_PARAM. */
ACL_FUNC_VISIBILITY aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACL_ACL_H_ */
