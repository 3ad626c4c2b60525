/* tools/cmd_gating.c - `moefr gating`: aclnnMoeGatingTopKSoftmax (or V2) on
 * .npy files, through the public CANN API only, with the file rules of
 * `moefr grad` / `moefr forward`: NumPy .npy in (x <f2/<f4, or <u2 holding
 * bf16 bits with --dtype bf16; finished <i4, nonzero = true, since .npy bool
 * is not among the CLI's dtypes), outputs written under temporary names and
 * renamed into DIR only when the whole run succeeded; exit 0 success, 1
 * rejected by the operator, 2 usage error, 3 file error.
 *
 *   moefr gating --x F --k N [--finished F] [--renorm 0|1] [--softmax-out]
 *                [--dtype bf16] --out DIR
 *   V1 (no --renorm, no --softmax-out): DIR/y.npy, DIR/expert_idx.npy, DIR/row_idx.npy
 *   V2: DIR/y.npy, DIR/expert_idx.npy, and DIR/softmax_result.npy with
 *       --softmax-out (renorm 0) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#include "moefr/moefr.h"
#include "npy.h"

int moefr_cmd_gating(int argc, char **argv, int first);

enum { G_OK = 0, G_REJECTED = 1, G_USAGE = 2, G_FILE = 3 };

static const char G_USAGE_TEXT[] =
    "usage: moefr gating --x F --k N [--finished F] [--renorm 0|1] [--softmax-out] [--dtype bf16] --out DIR\n"
    "  aclnnMoeGatingTopKSoftmax on x (N, E) or (B, S, E): softmax over the experts, the k largest.\n"
    "  Writes DIR/y.npy (x's dtype), DIR/expert_idx.npy and DIR/row_idx.npy (int32).\n"
    "  With --renorm or --softmax-out: aclnnMoeGatingTopKSoftmaxV2 (renorm 1: top-k of the logits, then\n"
    "  softmax over the k); DIR/y.npy, DIR/expert_idx.npy, and DIR/softmax_result.npy (float32) with\n"
    "  --softmax-out and renorm 0. --finished: int32 .npy of x's shape without the last dim, nonzero =\n"
    "  finished (expert_idx = E on those rows). --dtype bf16: x and y travel as <u2 bf16 bits.\n";

static void gmsg(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "moefr gating: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

static int mkdir_all(const char *dir) {
    char *p = strdup(dir);
    if (!p) return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0777), saved = errno;
    free(p);
    struct stat st;
    if (rc != 0 && saved != EEXIST) return -1;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int parse_i64(const char *s, int64_t *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || errno || *end) return -1;
    *v = x;
    return 0;
}

typedef struct {
    aclDataType dt;
    int ndim;
    int64_t dims[MF_NPY_MAX_DIMS];
    size_t nbytes;
    void *dev;
    aclTensor *t;
} g_tensor;

static size_t g_es(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : dt == ACL_BOOL ? 1 : 2; }

static int g_make(g_tensor *c, const char *what) {
    size_t n = g_es(c->dt);
    for (int i = 0; i < c->ndim; i++) {
        if (c->dims[i] < 0 || (c->dims[i] && n > SIZE_MAX / (size_t)c->dims[i])) {
            gmsg("%s: size overflows%s", what, "");
            return G_REJECTED;
        }
        n *= (size_t)c->dims[i];
    }
    c->nbytes = n;
    if (aclrtMalloc(&c->dev, n ? n : 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        c->dev = NULL;
        gmsg("%s: cannot allocate: %s", what, aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "");
        return G_REJECTED;
    }
    c->t = aclCreateTensor(c->dims, (uint64_t)c->ndim, c->dt, NULL, 0, ACL_FORMAT_ND, c->dims, (uint64_t)c->ndim,
                           c->dev);
    if (!c->t) {
        gmsg("%s: aclCreateTensor rejected it: %s", what, aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "");
        return G_REJECTED;
    }
    return 0;
}

static void g_free(g_tensor *c) {
    if (c->t) aclDestroyTensor(c->t);
    if (c->dev) aclrtFree(c->dev);
    memset(c, 0, sizeof *c);
}

/* x (is_x) or finished from a file into a device tensor. */
static int g_load(const char *flag, const char *path, int bf16, int is_x, g_tensor *c) {
    mf_npy npy;
    void *buf = NULL;
    char err[512];
    if (mf_npy_load(path, &npy, &buf, err, sizeof err)) {
        gmsg("%s %s", flag, err);
        return G_FILE;
    }
    int rc = 0;
    if (is_x) {
        if (npy.dtype == MF_NPY_F2) c->dt = ACL_FLOAT16;
        else if (npy.dtype == MF_NPY_F4) c->dt = ACL_FLOAT;
        else if (npy.dtype == MF_NPY_U2 && bf16) c->dt = ACL_BF16;
        else rc = G_FILE;
    } else {
        c->dt = ACL_BOOL;
        if (npy.dtype != MF_NPY_I4) rc = G_FILE;
    }
    if (rc) {
        gmsg("%s %s: dtype must be <f2 or <f4 (or <u2 with --dtype bf16) for --x, <i4 for --finished", flag, path);
        free(buf);
        return rc;
    }
    c->ndim = npy.ndim;
    memcpy(c->dims, npy.dims, sizeof c->dims);
    rc = g_make(c, flag);
    if (rc == 0 && c->nbytes) {
        if (is_x) {
            aclrtMemcpy(c->dev, c->nbytes, npy.data, c->nbytes, ACL_MEMCPY_HOST_TO_DEVICE);
        } else {
            unsigned char *b = malloc(c->nbytes);
            if (!b) {
                rc = G_REJECTED;
            } else {
                for (size_t i = 0; i < c->nbytes; i++) {
                    int32_t v;
                    memcpy(&v, (const char *)npy.data + i * 4, 4);
                    b[i] = v != 0;
                }
                aclrtMemcpy(c->dev, c->nbytes, b, c->nbytes, ACL_MEMCPY_HOST_TO_DEVICE);
                free(b);
            }
        }
    }
    free(buf);
    return rc;
}

static mf_npy_dtype g_npy(aclDataType dt) {
    return dt == ACL_FLOAT16 ? MF_NPY_F2 : dt == ACL_BF16 ? MF_NPY_U2 : dt == ACL_INT32 ? MF_NPY_I4 : MF_NPY_F4;
}

/* All outputs under temporary names, then all renamed: all or nothing. */
static int g_write(const char *dir, g_tensor **outs, const char **names, int n) {
    if (mkdir_all(dir) != 0) {
        gmsg("--out %s: cannot create directory: %s", dir, strerror(errno));
        return G_FILE;
    }
    mf_npy_pending pend[3];
    char err[1024];
    int w = 0, rc = G_OK;
    for (; w < n; w++) {
        g_tensor *c = outs[w];
        void *host = malloc(c->nbytes ? c->nbytes : 1);
        char path[4096];
        if (!host) {
            rc = G_REJECTED;
            break;
        }
        if (c->nbytes) aclrtMemcpy(host, c->nbytes, c->dev, c->nbytes, ACL_MEMCPY_DEVICE_TO_HOST);
        snprintf(path, sizeof path, "%s/%s", dir, names[w]);
        int bad = mf_npy_write_pending(path, g_npy(c->dt), c->ndim, c->dims, host, &pend[w], err, sizeof err);
        free(host);
        if (bad) {
            gmsg("--out %s%s", err, "");
            rc = G_FILE;
            break;
        }
    }
    if (rc) {
        for (int i = 0; i < w; i++) mf_npy_discard(&pend[i]);
        return rc;
    }
    for (int i = 0; i < n; i++)
        if (mf_npy_commit(&pend[i], err, sizeof err)) {
            gmsg("--out %s%s", err, "");
            for (int j = 0; j < i; j++) remove(pend[j].final_path);
            for (int j = 0; j < n; j++) mf_npy_discard(&pend[j]);
            return G_FILE;
        }
    for (int i = 0; i < n; i++) mf_npy_discard(&pend[i]);
    return G_OK;
}

int moefr_cmd_gating(int argc, char **argv, int first) {
    const char *xf = NULL, *ff = NULL, *out = NULL, *kv = NULL, *rv = NULL, *dtv = NULL;
    int smout = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(G_USAGE_TEXT, stdout);
            return G_OK;
        }
        if (!strcmp(a, "--softmax-out")) {
            smout = 1;
            continue;
        }
        const char **slot = !strcmp(a, "--x")          ? &xf
                            : !strcmp(a, "--finished") ? &ff
                            : !strcmp(a, "--out")      ? &out
                            : !strcmp(a, "--k")        ? &kv
                            : !strcmp(a, "--renorm")   ? &rv
                            : !strcmp(a, "--dtype")    ? &dtv
                                                       : NULL;
        if (!slot) {
            gmsg("unknown argument '%s' (see moefr gating --help)%s", a, "");
            return G_USAGE;
        }
        if (i + 1 >= argc || !*argv[i + 1]) {
            gmsg("%s needs a value%s", a, "");
            return G_USAGE;
        }
        if (*slot) {
            gmsg("%s given twice%s", a, "");
            return G_USAGE;
        }
        *slot = argv[++i];
    }
    if (!xf || !kv || !out) {
        gmsg("missing required option %s (see moefr gating --help)%s", !xf ? "--x" : !kv ? "--k" : "--out", "");
        return G_USAGE;
    }
    int64_t k, renorm = 0;
    if (parse_i64(kv, &k)) {
        gmsg("--k: '%s' is not an integer%s", kv, "");
        return G_USAGE;
    }
    if (rv && parse_i64(rv, &renorm)) {
        gmsg("--renorm: '%s' is not an integer%s", rv, "");
        return G_USAGE;
    }
    if (dtv && strcmp(dtv, "bf16") != 0) {
        gmsg("--dtype: '%s' is not supported (the only value is bf16)%s", dtv, "");
        return G_USAGE;
    }
    const int v2 = rv != NULL || smout;
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        gmsg("runtime initialisation failed: %s%s", aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "", "");
        return G_REJECTED;
    }
    g_tensor x = {0}, f = {0}, y = {0}, e = {0}, r = {0}, s = {0};
    int rc = g_load("--x", xf, dtv != NULL, 1, &x);
    if (!rc && ff) rc = g_load("--finished", ff, 0, 0, &f);
    if (!rc) {
        /* outputs: x's leading dims and k (k < 0: 0, the operator rejects it) */
        y.dt = x.dt, y.ndim = x.ndim;
        memcpy(y.dims, x.dims, sizeof y.dims);
        if (x.ndim >= 1) y.dims[x.ndim - 1] = k > 0 ? k : 0;
        e = y, e.dt = ACL_INT32;
        r = e;
        s.dt = ACL_FLOAT, s.ndim = x.ndim;
        memcpy(s.dims, x.dims, sizeof s.dims);
        rc = g_make(&y, "y");
        if (!rc) rc = g_make(&e, "expert_idx");
        if (!rc && !v2) rc = g_make(&r, "row_idx");
        if (!rc && v2 && smout) rc = g_make(&s, "softmax_result");
        if (!rc) { /* NaN bits: a position the operator forgot can never pass for a result */
            if (y.nbytes) aclrtMemset(y.dev, y.nbytes, 0xFF, y.nbytes);
            if (e.nbytes) aclrtMemset(e.dev, e.nbytes, 0xFF, e.nbytes);
            if (r.nbytes) aclrtMemset(r.dev, r.nbytes, 0xFF, r.nbytes);
            if (s.nbytes) aclrtMemset(s.dev, s.nbytes, 0xFF, s.nbytes);
        }
    }
    if (!rc) {
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        const char *api = v2 ? "aclnnMoeGatingTopKSoftmaxV2" : "aclnnMoeGatingTopKSoftmax";
        aclnnStatus st = v2 ? aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(x.t, f.t, k, renorm, smout != 0, y.t, e.t,
                                                                         s.t, &ws, &ex)
                            : aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(x.t, f.t, k, y.t, e.t, r.t, &ws, &ex);
        void *w = NULL;
        if (st == ACLNN_SUCCESS && ws && aclrtMalloc(&w, (size_t)ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
            aclDestroyAclOpExecutor(ex);
            gmsg("cannot allocate the %s workspace%s", api, "");
            rc = G_REJECTED;
        } else if (st == ACLNN_SUCCESS) {
            st = v2 ? aclnnMoeGatingTopKSoftmaxV2(w, ws, ex, NULL) : aclnnMoeGatingTopKSoftmax(w, ws, ex, NULL);
            if (st == ACLNN_SUCCESS) aclrtSynchronizeStream(NULL);
        }
        if (w) aclrtFree(w);
        if (!rc && st != ACLNN_SUCCESS) {
            const char *m = aclGetRecentErrMsg();
            fprintf(stderr, "moefr gating: rejected by %s (status %d): %s\n", api, (int)st, m ? m : "(no message)");
            rc = G_REJECTED;
        }
    }
    if (!rc) {
        g_tensor *outs[3] = {&y, &e, v2 ? &s : &r};
        const char *names[3] = {"y.npy", "expert_idx.npy", v2 ? "softmax_result.npy" : "row_idx.npy"};
        rc = g_write(out, outs, names, v2 && !(smout && renorm == 0) ? 2 : 3);
    }
    g_free(&x), g_free(&f), g_free(&y), g_free(&e), g_free(&r), g_free(&s);
    aclrtResetDevice(0);
    aclFinalize();
    return rc;
}
