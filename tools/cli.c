/* tools/cli.c - the helpers every moefr command shares (declared in cli.h):
 * option parsing, .npy files to device tensors and back, output directories
 * written all or nothing, operator error messages that name the option to
 * fix, the runtime, the two-phase call and the -v report. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "acl/acl.h"
#include "moefr/moefr.h"
#include "npy.h"
#include "cli.h"

const char *g_cmd = "moefr";
int g_verbose = 0;

void msg(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", g_cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* ---------------------------------------------------------------- options */


static cli_opt *find_opt(cli_opt *opts, int n, const char *name, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(opts[i].flag) == len && memcmp(opts[i].flag, name, len) == 0) return &opts[i];
    return NULL;
}

static int parse_int(const char *s, int64_t *v) {
    if (!*s) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *v = x;
    return 0;
}

/* Parses argv[first..argc) into opts. Returns 0, 1 when --help was asked for
 * (after printing help to stdout), or EXIT_USAGE after printing why. */
int parse_opts(int argc, char **argv, int first, cli_opt *opts, int n, const char *help) {
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            g_verbose = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            msg("unexpected argument '%s' (options are --name VALUE; see %s --help)", a, g_cmd);
            return EXIT_USAGE;
        }
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        cli_opt *o = find_opt(opts, n, a, nlen);
        if (!o) {
            msg("unknown option '%.*s' (see %s --help)", (int)nlen, a, g_cmd);
            return EXIT_USAGE;
        }
        if (o->kind == OPT_FLAG) {
            if (eq) {
                msg("%s takes no value", o->flag);
                return EXIT_USAGE;
            }
            o->value = o->flag;
            o->ival = 1;
            continue;
        }
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val) {
            msg("%s needs a value", o->flag);
            return EXIT_USAGE;
        }
        if (o->value) {
            msg("%s given twice", o->flag);
            return EXIT_USAGE;
        }
        if (!*val) {
            msg("%s: empty value", o->flag);
            return EXIT_USAGE;
        }
        o->value = val;
        if (o->kind == OPT_INT && parse_int(val, &o->ival)) {
            msg("%s: '%s' is not an integer", o->flag, val);
            return EXIT_USAGE;
        }
        if (o->kind == OPT_DTYPE && strcmp(val, "bf16") != 0) {
            msg("%s: '%s' is not supported (the only value is bf16; other dtypes come from the files)",
                o->flag, val);
            return EXIT_USAGE;
        }
    }
    for (int i = 0; i < n; i++)
        if (opts[i].required && !opts[i].value) {
            msg("missing required option %s (see %s --help)", opts[i].flag, g_cmd);
            return EXIT_USAGE;
        }
    return 0;
}

cli_opt *opt(cli_opt *opts, int n, const char *flag) {
    return find_opt(opts, n, flag, strlen(flag));
}

/* ---------------------------------------------------------------- tensors */


static size_t dt_size(aclDataType dt) {
    return dt == ACL_INT64 ? 8 : dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : dt == ACL_BOOL || dt == ACL_INT8 ? 1 : 2;
}

static mf_npy_dtype npy_of(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT16: return MF_NPY_F2;
    case ACL_BF16: return MF_NPY_U2;
    case ACL_INT32: return MF_NPY_I4;
    case ACL_INT64: return MF_NPY_I8;
    case ACL_INT8: return MF_NPY_I1;
    default: return MF_NPY_F4;
    }
}

void cleanup_tensor(cli_tensor *c) {
    if (c->t) aclDestroyTensor(c->t);
    if (c->dev) aclrtFree(c->dev);
    free(c->file_buf);
    memset(c, 0, sizeof *c);
}

/* Device buffer + tensor for ndim/dims/dt already set in c. aclrtMalloc refuses
 * size 0, so empty tensors get a token allocation they never touch. */
static int make_tensor(cli_tensor *c, const char *what) {
    size_t n = dt_size(c->dt);
    for (int i = 0; i < c->ndim; i++) {
        if (c->dims[i] < 0 || (c->dims[i] && n > SIZE_MAX / (size_t)c->dims[i])) {
            msg("%s: size overflows", what);
            return EXIT_REJECTED;
        }
        n *= (size_t)c->dims[i];
    }
    c->nbytes = n;
    if (aclrtMalloc(&c->dev, n ? n : 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        const char *m = aclGetRecentErrMsg();
        msg("%s: cannot allocate %zu bytes: %s", what, n, m ? m : "aclrtMalloc failed");
        c->dev = NULL;
        return EXIT_REJECTED;
    }
    c->t = aclCreateTensor(c->dims, (uint64_t)c->ndim, c->dt, NULL, 0, ACL_FORMAT_ND, c->dims,
                           (uint64_t)c->ndim, c->dev);
    if (!c->t) {
        const char *m = aclGetRecentErrMsg();
        msg("%s: aclCreateTensor rejected it: %s", what, m ? m : "(no message)");
        return EXIT_REJECTED;
    }
    return 0;
}

/* Loads --flag's file (if the option was given) into a device tensor. */
int load_tensor(const cli_opt *o, int bf16, cli_tensor *c) {
    memset(c, 0, sizeof *c);
    if (!o->value) return 0;
    c->flag = o->flag;
    c->path = o->value;
    char err[512];
    if (mf_npy_load(o->value, &c->npy, &c->file_buf, err, sizeof err)) {
        msg("%s %s", o->flag, err);
        return EXIT_FILE;
    }
    if (o->kind == OPT_FILE_BOOL && c->npy.dtype != MF_NPY_I4) {
        msg("%s %s: dtype must be <i4 (nonzero = true)", o->flag, o->value);
        return EXIT_FILE;
    }
    if ((o->kind == OPT_FILE_INT64) != (c->npy.dtype == MF_NPY_I8)) {
        if (o->kind == OPT_FILE_INT64)
            msg("%s %s: dtype must be <i8 (int64)", o->flag, o->value);
        else
            msg("%s %s: dtype <i8 (int64) is read only for group lists (gmm --group-list)", o->flag, o->value);
        return EXIT_FILE;
    }
    if (o->kind == OPT_FILE_FLOAT && (c->npy.dtype == MF_NPY_I4 || c->npy.dtype == MF_NPY_I1)) {
        msg("%s %s: dtype must be <f2 or <f4 (or <u2 holding bf16 bits with --dtype bf16), got %s", o->flag,
            o->value, mf_npy_descr(c->npy.dtype));
        return EXIT_FILE;
    }
    switch (c->npy.dtype) {
    case MF_NPY_F2: c->dt = ACL_FLOAT16; break;
    case MF_NPY_F4: c->dt = ACL_FLOAT; break;
    case MF_NPY_I4: c->dt = o->kind == OPT_FILE_BOOL ? ACL_BOOL : ACL_INT32; break;
    case MF_NPY_I8: c->dt = ACL_INT64; break;
    case MF_NPY_I1: c->dt = ACL_INT8; break; /* the operator's dtype table decides where it is taken */
    case MF_NPY_U2:
        if (!bf16) {
            msg("%s %s: dtype <u2 is read as bfloat16 bits only with --dtype bf16", o->flag, o->value);
            return EXIT_FILE;
        }
        c->dt = ACL_BF16;
        break;
    }
    c->ndim = c->npy.ndim;
    memcpy(c->dims, c->npy.dims, sizeof c->dims);
    char what[600];
    snprintf(what, sizeof what, "%s %s", o->flag, o->value);
    int rc = make_tensor(c, what);
    if (rc) return rc;
    const void *src = c->npy.data;
    unsigned char *b = NULL;
    if (c->dt == ACL_BOOL && c->nbytes) { /* one byte per element, from the int32 values */
        b = malloc(c->nbytes);
        if (!b) {
            msg("%s: out of memory", what);
            return EXIT_REJECTED;
        }
        for (size_t i = 0; i < c->nbytes; i++) {
            int32_t v;
            memcpy(&v, (const char *)c->npy.data + i * 4, 4);
            b[i] = v != 0;
        }
        src = b;
    }
    if (c->nbytes && aclrtMemcpy(c->dev, c->nbytes, src, c->nbytes, ACL_MEMCPY_HOST_TO_DEVICE)) {
        free(b);
        msg("%s: copy to device failed", what);
        return EXIT_REJECTED;
    }
    free(b);
    free(c->file_buf);
    c->file_buf = NULL;
    return 0;
}

/* An output tensor, filled with NaN bits first so a position the operator
 * forgot to write can never pass for a result. */
int make_output(cli_tensor *c, const char *name, aclDataType dt, int ndim, const int64_t *dims) {
    memset(c, 0, sizeof *c);
    c->flag = name;
    c->dt = dt;
    c->ndim = ndim;
    memcpy(c->dims, dims, (size_t)ndim * sizeof *dims);
    int rc = make_tensor(c, name);
    if (rc) return rc;
    if (c->nbytes) aclrtMemset(c->dev, c->nbytes, 0xFF, c->nbytes);
    return 0;
}

/* ---------------------------------------------------------------- errors */


/* Adds the flag (and file) an operator message is about, so the user knows
 * which input to fix: the earliest parameter name mentioned as a whole word. */
void operator_error(const char *api, aclnnStatus st, const param_flag *map, int nmap,
                           cli_opt *opts, int nopts) {
    const char *m = aclGetRecentErrMsg();
    if (!m) m = "(no message)";
    const char *best = NULL, *best_at = NULL;
    for (int i = 0; i < nmap; i++) {
        size_t pl = strlen(map[i].param);
        for (const char *p = strstr(m, map[i].param); p; p = strstr(p + 1, map[i].param)) {
            int left_ok = p == m || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
            char r = p[pl];
            int right_ok = !(isalnum((unsigned char)r) || r == '_') || !strncmp(p + pl, "Optional", 8);
            if (left_ok && right_ok) {
                if (!best_at || p < best_at) {
                    best_at = p;
                    best = map[i].flag;
                }
                break;
            }
        }
    }
    char where[600] = "";
    if (best) {
        cli_opt *o = opt(opts, nopts, best);
        if (o && o->value)
            snprintf(where, sizeof where, " [%s %s]", best, o->value);
        else
            snprintf(where, sizeof where, " [%s]", best);
    }
    msg("rejected by %s (status %d): %s%s", api, (int)st, m, where);
}

/* ---------------------------------------------------------------- output */

static int mkdir_p(const char *dir) {
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
    int rc = mkdir(p, 0777);
    int saved = errno;
    free(p);
    struct stat st;
    if (rc != 0 && saved != EEXIST) {
        errno = saved;
        return -1;
    }
    if (stat(dir, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Copies the outputs back, writes them all under temporary names, and renames
 * them into place only when every one was written. */
int write_outputs(const char *dir, cli_tensor **outs, const char **names, int n) {
    if (mkdir_p(dir) != 0) {
        msg("--out %s: cannot create directory: %s", dir, strerror(errno));
        return EXIT_FILE;
    }
    mf_npy_pending pend[4];
    char err[1024];
    int written = 0, rc = EXIT_OK;
    for (; written < n; written++) {
        cli_tensor *c = outs[written];
        void *host = malloc(c->nbytes ? c->nbytes : 1);
        if (!host) {
            msg("%s: out of memory", names[written]);
            rc = EXIT_REJECTED;
            break;
        }
        if (c->nbytes && aclrtMemcpy(host, c->nbytes, c->dev, c->nbytes, ACL_MEMCPY_DEVICE_TO_HOST)) {
            free(host);
            msg("%s: copy from device failed", names[written]);
            rc = EXIT_REJECTED;
            break;
        }
        size_t plen = strlen(dir) + strlen(names[written]) + 2;
        char *path = malloc(plen);
        if (!path) {
            free(host);
            rc = EXIT_REJECTED;
            break;
        }
        snprintf(path, plen, "%s/%s", dir, names[written]);
        int w = mf_npy_write_pending(path, npy_of(c->dt), c->ndim, c->dims, host, &pend[written], err,
                                     sizeof err);
        free(path);
        free(host);
        if (w) {
            msg("--out %s", err);
            rc = EXIT_FILE;
            break;
        }
    }
    if (rc) {
        for (int i = 0; i < written; i++) mf_npy_discard(&pend[i]);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        if (mf_npy_commit(&pend[i], err, sizeof err)) {
            msg("--out %s", err);
            /* Undo the ones already renamed: all or nothing. */
            for (int j = 0; j < i; j++) remove(pend[j].final_path);
            for (int j = 0; j < n; j++) mf_npy_discard(&pend[j]);
            return EXIT_FILE;
        }
    }
    for (int i = 0; i < n; i++) mf_npy_discard(&pend[i]);
    return EXIT_OK;
}

int runtime_up(aclrtStream *stream) {
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
        aclrtCreateStream(stream) != ACL_SUCCESS) {
        const char *m = aclGetRecentErrMsg();
        msg("runtime initialisation failed: %s", m ? m : "(no message)");
        return EXIT_REJECTED;
    }
    return 0;
}

void runtime_down(aclrtStream stream) {
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
}

void verbose_report(const char *op, double t_load, double t_plan, double t_run, double t_write,
                           double bytes) {
    if (!g_verbose) return;
    fprintf(stderr,
            "%s: moefr %s, kernel path %s, %d thread%s\n"
            "%s: load %.1f us, %sGetWorkspaceSize %.1f us, %s %.1f us (%.2f GB/s of operator traffic), write %.1f us\n",
            g_cmd, moefrVersion(), moefrIsa(), moefrNumThreads(), moefrNumThreads() == 1 ? "" : "s", g_cmd, t_load,
            op, t_plan, op, t_run, t_run > 0 ? bytes / (t_run * 1e3) : 0.0, t_write);
}

/* Runs phase 2 with a workspace of the size phase 1 asked for. */
aclnnStatus run_phase2(aclnnStatus (*fn)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t ws_size,
                              aclOpExecutor *ex, aclrtStream stream, int *alloc_failed) {
    void *ws = NULL;
    *alloc_failed = 0;
    if (ws_size && aclrtMalloc(&ws, (size_t)ws_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        *alloc_failed = 1;
        aclDestroyAclOpExecutor(ex);
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    aclnnStatus st = fn(ws, ws_size, ex, stream);
    if (st == ACLNN_SUCCESS) aclrtSynchronizeStream(stream);
    if (ws) aclrtFree(ws);
    return st;
}

int run_operator(const char *plan_api, const char *run_api, aclnnStatus st, aclOpExecutor *ex, uint64_t ws,
                 aclnnStatus (*phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream), aclrtStream stream,
                 const param_flag *map, int nmap, cli_opt *opts, int nopts) {
    if (st != ACLNN_SUCCESS) {
        operator_error(plan_api, st, map, nmap, opts, nopts);
        return EXIT_REJECTED;
    }
    int alloc_failed;
    st = run_phase2(phase2, ws, ex, stream, &alloc_failed);
    if (alloc_failed) {
        msg("cannot allocate a workspace of %" PRIu64 " bytes", ws);
        return EXIT_REJECTED;
    }
    if (st != ACLNN_SUCCESS) {
        operator_error(run_api, st, map, nmap, opts, nopts);
        return EXIT_REJECTED;
    }
    return 0;
}
