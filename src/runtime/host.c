/* host.c - the acl helpers around an aclnn call: versions, the SoC name, dtype
 * sizes, fp16 conversion, the machine's memory, aclnnInit/aclnnFinalize. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl.h"
#include "internal.h"
#include "moefr/moefr.h"

aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion) {
    if (majorVersion == NULL || minorVersion == NULL || patchVersion == NULL)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion: %s is NULL",
                       majorVersion == NULL ? "majorVersion" : minorVersion == NULL ? "minorVersion" : "patchVersion");
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return ACL_SUCCESS;
}

aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version) {
    if ((int)name < ACL_PKG_NAME_CANN || (int)name > ACL_PKG_NAME_DRIVER)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclsysGetCANNVersion: name must be 0..7 (aclCANNPackageName), got %d",
                       (int)name);
    if (version == NULL) return mf_fail(ACL_ERROR_INVALID_PARAM, "aclsysGetCANNVersion: version is NULL");
    memset(version, 0, sizeof *version);
    snprintf(version->version, sizeof version->version, "8.1.RC1");
    snprintf(version->majorVersion, sizeof version->majorVersion, "8");
    snprintf(version->minorVersion, sizeof version->minorVersion, "1");
    snprintf(version->releaseVersion, sizeof version->releaseVersion, "RC1");
    snprintf(version->reserved, sizeof version->reserved, "moefr %s", moefrVersion());
    return ACL_SUCCESS;
}

const char *aclrtGetSocName(void) { return "moefr-cpu"; }

size_t aclDataTypeSize(aclDataType dataType) {
    switch (dataType) {
    /* packed sub-byte types: at least one byte each */
    case ACL_INT4: case ACL_UINT1: case ACL_FLOAT6_E3M2: case ACL_FLOAT6_E2M3: case ACL_FLOAT4_E2M1:
    case ACL_FLOAT4_E1M2: return 1;
    case ACL_COMPLEX32: return 4;
    default: return mf_dtype_size(dataType);
    }
}

/* binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
float aclFloat16ToFloat(aclFloat16 value) {
    uint32_t sign = (uint32_t)(value & 0x8000u) << 16, exp = (value >> 10) & 0x1Fu, frac = value & 0x3FFu, bits;
    if (exp == 0x1Fu) {
        bits = sign | 0x7F800000u | (frac << 13); /* inf, NaN (payload kept) */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (frac << 13);
    } else if (frac == 0) {
        bits = sign;
    } else { /* subnormal: frac * 2^-24, exact in binary32 */
        int e = -1;
        do { frac <<= 1; e++; } while (!(frac & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((frac & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

aclFloat16 aclFloatToFloat16(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t exp = (bits >> 23) & 0xFFu, frac = bits & 0x7FFFFFu;
    if (exp == 0xFFu) /* inf stays inf; NaN stays a (quiet) NaN */
        return (aclFloat16)(sign | 0x7C00u | (frac ? (0x200u | (frac >> 13)) : 0u));
    int e = (int)exp - 127 + 15; /* binary16 biased exponent */
    if (e >= 31) return (aclFloat16)(sign | 0x7C00u);
    uint32_t mant, shift;
    if (e >= 1) {
        mant = frac;
        shift = 13;
    } else {
        if (e < -10) return sign; /* below half the smallest subnormal: rounds to zero */
        mant = frac | 0x800000u;  /* the implicit bit, then denormalise */
        shift = (uint32_t)(14 - e);
        e = 0;
    }
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++; /* nearest, ties to even; a carry bumps the exponent */
    return (aclFloat16)(sign | (((uint32_t)e << 10) + q));
}

/* MemAvailable from /proc/meminfo when the kernel reports it, else free pages. */
static size_t available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f != NULL) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f) != NULL) {
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (size_t)kb * 1024u;
            }
        }
        fclose(f);
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
    if ((int)attr < ACL_DDR_MEM || (int)attr > ACL_HBM_MEM_P2P_HUGE1G)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: attr must be 0..11 (an aclrtMemAttr), got %d",
                       (int)attr);
    if (free == NULL || total == NULL)
        return mf_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: %s is NULL", free == NULL ? "free" : "total");
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return mf_fail(ACL_ERROR_INTERNAL_ERROR, "aclrtGetMemInfo: the system does not report its memory size");
    *total = (size_t)pages * (size_t)page;
    size_t avail = available_bytes();
    *free = avail < *total ? avail : *total;
    return ACL_SUCCESS;
}

aclnnStatus aclnnInit(const char *configPath) {
    (void)configPath; /* nothing to configure: operators need no init */
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnFinalize(void) { return ACLNN_SUCCESS; }
