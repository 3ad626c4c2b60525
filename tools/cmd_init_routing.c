/* tools/cmd_init_routing.c - `moefr init-routing`: aclnnMoeInitRoutingV2, or
 * with --v1 aclnnMoeInitRouting, on .npy files, through the public API only.
 * The file rules are those of `moefr grad` (SPEC 7): .npy 1.0-3.0, <f2 <f4
 * <i4 (and <u2 as bf16 bits with --dtype bf16); outputs written under
 * temporary names and renamed only when the whole run succeeded; exit 0
 * success, 1 rejected by the operator, 2 usage, 3 file error. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_init_routing.h"
#include "aclnnop/aclnn_moe_init_routing_v2.h"
#include "cmd_init_routing.h"
#include "moefr/moefr.h"
#include "npy.h"

enum { X_OK = 0, X_REJECTED = 1, X_USAGE = 2, X_FILE = 3 };

static const char HELP[] =
    "usage: moefr init-routing --x F --expert-idx F [options] --out DIR\n"
    "\n"
    "aclnnMoeInitRoutingV2 (default): x (N, H), expertIdx (N, K) int32\n"
    "  --active-num N            dropless rows kept (0: all N*K)\n"
    "  --expert-capacity N --expert-num N --drop-pad-mode 0|1\n"
    "  --count-flag 0|1|2        1 cumsum, 2 count (dropless): writes expert_tokens_count_or_cumsum.npy\n"
    "  --before-capacity-flag 0|1  (drop-pad): writes expert_tokens_before_capacity.npy\n"
    "  writes DIR/expanded_x.npy ((A, H), or (E, C, H) in drop-pad) and DIR/expanded_row_idx.npy\n"
    "aclnnMoeInitRouting with --v1: x (N, H), expertIdx (N, K) int32\n"
    "  --row-idx F               rowIdx (N, K) int32; default: k*N + r, as CANN's producers build it\n"
    "  --active-num N            tokens kept in expanded_x (default: N)\n"
    "  writes DIR/expanded_x.npy (min(N, activeNum)*K, H), DIR/expanded_row_idx.npy and\n"
    "  DIR/expanded_expert_idx.npy\n"
    "common: --dtype bf16 (<u2 files hold bf16 bits), -v (timing and kernel path to stderr)\n";

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...) {
    va_list ap;
    fputs("moefr init-routing: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* ---- options ---- */
enum { O_X, O_EIDX, O_RIDX, O_ACTIVE, O_CAP, O_ENUM, O_MODE, O_CFLAG, O_BFLAG, O_DTYPE, O_OUT, O_N };
static const char *const FLAG[O_N] = {"--x",        "--expert-idx", "--row-idx",   "--active-num",
                                      "--expert-capacity", "--expert-num", "--drop-pad-mode", "--count-flag",
                                      "--before-capacity-flag", "--dtype", "--out"};
static const int IS_INT[O_N] = {0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0};

typedef struct {
    const char *val[O_N];
    int64_t ival[O_N];
    int v1, verbose, help;
} opts;

static int parse(int argc, char **argv, int first, opts *o) {
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->verbose = 1; continue; }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { o->help = 1; return 0; }
        if (!strcmp(a, "--v1")) { o->v1 = 1; continue; }
        if (strncmp(a, "--", 2) != 0) {
            msg("unexpected argument '%s' (see moefr init-routing --help)", a);
            return X_USAGE;
        }
        const char *eq = strchr(a, '=');
        const size_t n = eq ? (size_t)(eq - a) : strlen(a);
        int k = -1;
        for (int j = 0; j < O_N; j++)
            if (strlen(FLAG[j]) == n && !memcmp(FLAG[j], a, n)) k = j;
        if (k < 0) {
            msg("unknown option '%.*s' (see moefr init-routing --help)", (int)n, a);
            return X_USAGE;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v || !*v) { msg("%s needs a value", FLAG[k]); return X_USAGE; }
        if (o->val[k]) { msg("%s given twice", FLAG[k]); return X_USAGE; }
        o->val[k] = v;
        if (IS_INT[k]) {
            char *end;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno || *end) { msg("%s: '%s' is not an integer", FLAG[k], v); return X_USAGE; }
            o->ival[k] = x;
        }
        if (k == O_DTYPE && strcmp(v, "bf16") != 0) {
            msg("--dtype: '%s' is not supported (the only value is bf16; other dtypes come from the files)", v);
            return X_USAGE;
        }
    }
    const int need[] = {O_X, O_EIDX, O_OUT};
    for (size_t j = 0; j < sizeof need / sizeof *need; j++)
        if (!o->val[need[j]]) { msg("missing required option %s (see moefr init-routing --help)", FLAG[need[j]]); return X_USAGE; }
    if (!o->v1) {
        if (o->val[O_RIDX]) { msg("--row-idx is an input of aclnnMoeInitRouting only (add --v1)"); return X_USAGE; }
    } else {
        for (int j = O_CAP; j <= O_BFLAG; j++)
            if (o->val[j]) { msg("%s is not a parameter of aclnnMoeInitRouting (drop --v1)", FLAG[j]); return X_USAGE; }
    }
    return 0;
}

/* ---- tensors in "device" memory ---- */
typedef struct {
    aclDataType dt;
    int ndim;
    int64_t dims[MF_NPY_MAX_DIMS];
    size_t nbytes;
    void *dev;
    aclTensor *t;
} dtensor;

static size_t dsize(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : 2; }

static int make(dtensor *c, const char *what) {
    size_t n = dsize(c->dt);
    for (int i = 0; i < c->ndim; i++) {
        if (c->dims[i] < 0 || (c->dims[i] && n > SIZE_MAX / (size_t)c->dims[i])) {
            msg("%s: size overflows", what);
            return X_REJECTED;
        }
        n *= (size_t)c->dims[i];
    }
    c->nbytes = n;
    if (aclrtMalloc(&c->dev, n ? n : 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        msg("%s: cannot allocate %zu bytes", what, n);
        c->dev = NULL;
        return X_REJECTED;
    }
    c->t = aclCreateTensor(c->dims, (uint64_t)c->ndim, c->dt, NULL, 0, ACL_FORMAT_ND, c->dims, (uint64_t)c->ndim,
                           c->dev);
    if (!c->t) {
        const char *m = aclGetRecentErrMsg();
        msg("%s: aclCreateTensor rejected it: %s", what, m ? m : "(no message)");
        return X_REJECTED;
    }
    return 0;
}

static void drop(dtensor *c) {
    if (c->t) aclDestroyTensor(c->t);
    if (c->dev) aclrtFree(c->dev);
    memset(c, 0, sizeof *c);
}

static int load(const char *flag, const char *path, int bf16, dtensor *c) {
    mf_npy a;
    void *buf = NULL;
    char err[512];
    if (mf_npy_load(path, &a, &buf, err, sizeof err)) {
        msg("%s %s", flag, err);
        return X_FILE;
    }
    switch (a.dtype) {
    case MF_NPY_F2: c->dt = ACL_FLOAT16; break;
    case MF_NPY_F4: c->dt = ACL_FLOAT; break;
    case MF_NPY_I4: c->dt = ACL_INT32; break;
    default:
        if (!bf16) {
            msg("%s %s: dtype <u2 is read as bfloat16 bits only with --dtype bf16", flag, path);
            free(buf);
            return X_FILE;
        }
        c->dt = ACL_BF16;
    }
    c->ndim = a.ndim;
    memcpy(c->dims, a.dims, sizeof c->dims);
    char what[600];
    snprintf(what, sizeof what, "%s %s", flag, path);
    int rc = make(c, what);
    if (!rc && c->nbytes && aclrtMemcpy(c->dev, c->nbytes, a.data, c->nbytes, ACL_MEMCPY_HOST_TO_DEVICE)) {
        msg("%s: copy to device failed", what);
        rc = X_REJECTED;
    }
    free(buf);
    return rc;
}

/* An output, filled with 0xFF bytes (NaN / -1) so an unwritten position shows. */
static int output(dtensor *c, const char *name, aclDataType dt, int ndim, const int64_t *dims) {
    c->dt = dt;
    c->ndim = ndim;
    memcpy(c->dims, dims, (size_t)ndim * sizeof *dims);
    int rc = make(c, name);
    if (!rc && c->nbytes) aclrtMemset(c->dev, c->nbytes, 0xFF, c->nbytes);
    return rc;
}

static mf_npy_dtype npy_of(aclDataType dt) {
    return dt == ACL_FLOAT16 ? MF_NPY_F2 : dt == ACL_BF16 ? MF_NPY_U2 : dt == ACL_INT32 ? MF_NPY_I4 : MF_NPY_F4;
}

static int mkdirs(const char *dir) {
    char *p = strdup(dir);
    if (!p) return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) { free(p); return -1; }
        *s = '/';
    }
    const int rc = mkdir(p, 0777), saved = errno;
    free(p);
    struct stat st;
    if (rc != 0 && saved != EEXIST) { errno = saved; return -1; }
    if (stat(dir, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}

/* All outputs under temporary names, then renamed together; none on failure. */
static int write_all(const char *dir, dtensor **outs, const char **names, int n) {
    if (mkdirs(dir) != 0) {
        msg("--out %s: cannot create directory: %s", dir, strerror(errno));
        return X_FILE;
    }
    mf_npy_pending pend[4];
    char err[1024];
    int w = 0, rc = X_OK;
    for (; w < n && !rc; w++) {
        void *host = malloc(outs[w]->nbytes ? outs[w]->nbytes : 1);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[w]);
        if (!host || (outs[w]->nbytes && aclrtMemcpy(host, outs[w]->nbytes, outs[w]->dev, outs[w]->nbytes,
                                                     ACL_MEMCPY_DEVICE_TO_HOST))) {
            msg("%s: copy from device failed", names[w]);
            rc = X_REJECTED;
        } else if (mf_npy_write_pending(path, npy_of(outs[w]->dt), outs[w]->ndim, outs[w]->dims, host, &pend[w], err,
                                        sizeof err)) {
            msg("--out %s", err);
            rc = X_FILE;
        }
        free(host);
        if (rc) break;
    }
    if (rc) {
        for (int i = 0; i < w; i++) mf_npy_discard(&pend[i]);
        return rc;
    }
    for (int i = 0; i < n; i++)
        if (mf_npy_commit(&pend[i], err, sizeof err)) {
            msg("--out %s", err);
            for (int j = 0; j < i; j++) remove(pend[j].final_path);
            for (int j = 0; j < n; j++) mf_npy_discard(&pend[j]);
            return X_FILE;
        }
    for (int i = 0; i < n; i++) mf_npy_discard(&pend[i]);
    return X_OK;
}

/* The operator's message, and the option whose file or value it is about. */
static void rejected(const char *api, aclnnStatus st, const opts *o) {
    static const struct {
        const char *param;
        int opt;
    } map[] = {{"expertIdx", O_EIDX}, {"rowIdx", O_RIDX}, {"x", O_X}, {"activeNum", O_ACTIVE},
               {"expertCapacity", O_CAP}, {"expertNum", O_ENUM}, {"dropPadMode", O_MODE},
               {"expertTokensCountOrCumsumFlag", O_CFLAG}};
    const char *m = aclGetRecentErrMsg();
    if (!m) m = "(no message)";
    const char *colon = strchr(m, ':'), *body = colon ? colon + 2 : m;
    int best = -1;
    for (size_t i = 0; i < sizeof map / sizeof *map && best < 0; i++) {
        const size_t n = strlen(map[i].param);
        if (!strncmp(body, map[i].param, n) && (body[n] == ' ' || body[n] == '[' || body[n] == '\0')) best = map[i].opt;
    }
    if (best >= 0 && o->val[best]) msg("rejected by %s (status %d): %s [%s %s]", api, (int)st, m, FLAG[best], o->val[best]);
    else msg("rejected by %s (status %d): %s", api, (int)st, m);
}

static int run(const opts *o, aclrtStream stream) {
    const int bf16 = o->val[O_DTYPE] != NULL, v1 = o->v1;
    dtensor x = {0}, ei = {0}, ri = {0}, ex = {0}, row = {0}, third = {0};
    const char *api = v1 ? "aclnnMoeInitRouting" : "aclnnMoeInitRoutingV2";
    double t0 = now_us();
    int rc = load("--x", o->val[O_X], bf16, &x);
    if (!rc) rc = load("--expert-idx", o->val[O_EIDX], bf16, &ei);
    if (!rc && v1 && o->val[O_RIDX]) rc = load("--row-idx", o->val[O_RIDX], bf16, &ri);
    const double t_load = now_us() - t0;
    /* output shapes from the inputs, as the operator documents them; anything
     * inconsistent is the operator's to reject with its own message */
    const int64_t N = x.ndim >= 1 ? x.dims[0] : 0, H = x.ndim >= 2 ? x.dims[x.ndim - 1] : 0;
    int64_t T = 1;
    for (int i = 0; i < ei.ndim; i++) T *= ei.dims[i];
    const int64_t K = ei.ndim == 2 ? ei.dims[1] : 1;
    const int64_t active = o->val[O_ACTIVE] ? o->ival[O_ACTIVE] : (v1 ? N : 0);
    const int64_t E = o->ival[O_ENUM], C = o->ival[O_CAP], mode = o->ival[O_MODE], cflag = o->ival[O_CFLAG];
    const int bflag = o->ival[O_BFLAG] != 0;
    if (!rc && v1 && !o->val[O_RIDX] && ei.ndim == 2) { /* the column layout k*N + r */
        ri.ndim = 2, ri.dims[0] = ei.dims[0], ri.dims[1] = K, ri.dt = ACL_INT32;
        rc = make(&ri, "rowIdx");
        int32_t *h = rc ? NULL : malloc(ri.nbytes ? ri.nbytes : 1);
        if (!rc && !h) rc = X_REJECTED;
        for (int64_t r = 0; !rc && r < ri.dims[0]; r++)
            for (int64_t k = 0; k < K; k++) h[r * K + k] = (int32_t)(k * ri.dims[0] + r);
        if (!rc && ri.nbytes) aclrtMemcpy(ri.dev, ri.nbytes, h, ri.nbytes, ACL_MEMCPY_HOST_TO_DEVICE);
        free(h);
    }
    int nout = 2;
    const char *names[3] = {"expanded_x.npy", "expanded_row_idx.npy", NULL};
    if (!rc) {
        const int64_t dT[1] = {T};
        if (v1) {
            const int64_t d[2] = {(active < N ? (active > 0 ? active : 0) : N) * K, H};
            rc = output(&ex, "expanded_x", x.dt, 2, d);
            if (!rc) rc = output(&row, "expanded_row_idx", ACL_INT32, 1, dT);
            if (!rc) rc = output(&third, "expanded_expert_idx", ACL_INT32, 1, dT);
            names[2] = "expanded_expert_idx.npy", nout = 3;
        } else if (mode == 1) {
            const int64_t d[3] = {E, C, H};
            rc = output(&ex, "expanded_x", x.dt, 3, d);
            if (!rc) rc = output(&row, "expanded_row_idx", ACL_INT32, 1, dT);
            if (!rc && bflag) {
                const int64_t dE[1] = {E > 0 ? E : 0};
                rc = output(&third, "expert_tokens_before_capacity", ACL_INT32, 1, dE);
                names[2] = "expert_tokens_before_capacity.npy", nout = 3;
            }
        } else {
            int64_t A = active <= 0 ? active + T : active; /* Ascend 950's rule; A2/A3 refuse < 0 themselves */
            A = A < T ? A : T;
            const int64_t d[2] = {A > 0 ? A : 0, H};
            rc = output(&ex, "expanded_x", x.dt, 2, d);
            if (!rc) rc = output(&row, "expanded_row_idx", ACL_INT32, 1, dT);
            if (!rc && cflag != 0) {
                const int64_t dE[1] = {E > 0 ? E : 0};
                rc = output(&third, "expert_tokens_count_or_cumsum", ACL_INT32, 1, dE);
                names[2] = "expert_tokens_count_or_cumsum.npy", nout = 3;
            }
        }
    }
    double t_plan = 0, t_run = 0;
    if (!rc) {
        uint64_t wsz = 0;
        aclOpExecutor *e = NULL;
        double t1 = now_us();
        aclnnStatus st =
            v1 ? aclnnMoeInitRoutingGetWorkspaceSize(x.t, ri.t, ei.t, active, ex.t, row.t, third.t, &wsz, &e)
               : aclnnMoeInitRoutingV2GetWorkspaceSize(x.t, ei.t, active, C, E, mode, cflag, bflag, ex.t, row.t,
                                                       mode == 1 ? NULL : third.t, mode == 1 ? third.t : NULL, &wsz,
                                                       &e);
        t_plan = now_us() - t1;
        if (st != ACLNN_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "%sGetWorkspaceSize", api);
            rejected(what, st, o);
            rc = X_REJECTED;
        } else {
            void *ws = NULL;
            if (wsz && aclrtMalloc(&ws, (size_t)wsz, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
                msg("cannot allocate a workspace of %llu bytes", (unsigned long long)wsz);
                aclDestroyAclOpExecutor(e);
                rc = X_REJECTED;
            } else {
                t1 = now_us();
                st = v1 ? aclnnMoeInitRouting(ws, wsz, e, stream) : aclnnMoeInitRoutingV2(ws, wsz, e, stream);
                if (st == ACLNN_SUCCESS) aclrtSynchronizeStream(stream);
                t_run = now_us() - t1;
                if (ws) aclrtFree(ws);
                if (st != ACLNN_SUCCESS) {
                    rejected(api, st, o);
                    rc = X_REJECTED;
                }
            }
        }
    }
    if (!rc) {
        dtensor *outs[3] = {&ex, &row, &third};
        double t1 = now_us();
        rc = write_all(o->val[O_OUT], outs, names, nout);
        if (!rc && o->verbose)
            fprintf(stderr,
                    "moefr init-routing: moefr %s, kernel path %s, %d thread(s)\n"
                    "moefr init-routing: load %.1f us, %sGetWorkspaceSize %.1f us, %s %.1f us, write %.1f us\n",
                    moefrVersion(), moefrIsa(), moefrNumThreads(), t_load, api, t_plan, api, t_run, now_us() - t1);
    }
    drop(&x), drop(&ei), drop(&ri), drop(&ex), drop(&row), drop(&third);
    return rc;
}

int moefr_cmd_init_routing(int argc, char **argv, int first, int verbose) {
    opts o;
    memset(&o, 0, sizeof o);
    o.verbose = verbose;
    int rc = parse(argc, argv, first, &o);
    if (rc) return rc;
    if (o.help) {
        fputs(HELP, stdout);
        return X_OK;
    }
    aclrtStream stream = NULL;
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&stream) != ACL_SUCCESS) {
        const char *m = aclGetRecentErrMsg();
        msg("runtime initialisation failed: %s", m ? m : "(no message)");
        return X_REJECTED;
    }
    rc = run(&o, stream);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return rc;
}
