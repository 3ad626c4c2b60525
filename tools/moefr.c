/* tools/moefr.c - the `moefr` command-line tool: runs the operators on .npy files
 * through the public CANN API only (acl/acl.h, aclnnop/..., moefr/moefr.h), as a CANN user would. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "moefr/moefr.h"
#include "npy.h"
#include "cli.h"

#ifdef MOEFR_CLI_HAVE_BENCH
int moefr_bench_main(int argc, char **argv);
#endif

/* Exit status, SPEC section 7. */

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

static const char USAGE[] =
    "usage: moefr [-v] <command> [options]\n"
    "\n"
    "commands:\n"
    "  grad     aclnnMoeFinalizeRoutingV2Grad on .npy files\n"
    "           --grad-y F --expanded-row-idx F [--expanded-x F] [--scales F]\n"
    "           [--expert-idx F] [--bias F] [--drop-pad-mode N] [--active-num N]\n"
    "           [--expert-num N] [--expert-capacity N] [--dtype bf16] --out DIR\n"
    "           writes DIR/grad_expanded_x.npy, and DIR/grad_scales.npy with --scales\n"
    "  forward  aclnnMoeFinalizeRoutingV2 on .npy files\n"
    "           --expanded-x F --expanded-row-idx F [--x1 F] [--x2 F] [--bias F]\n"
    "           [--scales F] [--expert-idx F] [--drop-pad-mode N] [--dtype bf16] --out DIR\n"
    "           writes DIR/out.npy\n"
    "  init-routing  aclnnMoeInitRoutingV2 (or with --v1 aclnnMoeInitRouting) on .npy files\n"
    "           --x F --expert-idx F [--active-num N] [--expert-capacity N] [--expert-num N]\n"
    "           [--drop-pad-mode N] [--count-flag N] [--before-capacity-flag 0|1]\n"
    "           [--v1 [--row-idx F]] [--dtype bf16] --out DIR   (init-routing --help)\n"
    "  permute  aclnnMoeTokenPermute: --tokens F --indices F [--num-out-tokens N] [--dtype bf16] --out DIR\n"
    "           writes DIR/permute_tokens.npy and DIR/sorted_indices.npy\n"
    "  unpermute aclnnMoeTokenUnpermute: --permuted-tokens F --sorted-indices F [--probs F] [--dtype bf16]\n"
    "           --out DIR; writes DIR/out.npy\n"
    "  gating   aclnnMoeGatingTopKSoftmax (with --renorm or --softmax-out V2) on .npy files\n"
    "           --x F --k N [--finished F] [--renorm 0|1] [--softmax-out] [--dtype bf16] --out DIR\n"
    "           writes DIR/y.npy, DIR/expert_idx.npy and DIR/row_idx.npy (V1) or\n"
    "           DIR/softmax_result.npy (V2 --softmax-out, renorm 0)   (gating --help)\n"
    "  bench    throughput in GB/s and its ratio to copy bandwidth (bench --help)\n"
    "  demo     a small built-in example: prints its inputs and results\n"
    "\n"
    "options:\n"
    "  -v, --verbose  print timing, the kernel path and the thread count to stderr\n"
    "  --help         this text;  --version  the library version\n"
    "\n"
    "files: NumPy .npy, format 1.0-3.0, little-endian, C order, dtypes <f2 <f4 <i4;\n"
    "bfloat16 travels as <u2 holding bf16 bits when --dtype bf16 is given (inputs and outputs).\n"
    "DIR is created if missing; outputs appear only when the whole run succeeded.\n"
    "exit status: 0 success, 1 rejected by the operator, 2 usage error, 3 file error.\n";

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

/* Parses argv[first..argc) into opts. Returns 0, 1 when --help was asked for,
 * or EXIT_USAGE after printing why. */
int parse_opts(int argc, char **argv, int first, cli_opt *opts, int n) {
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            g_verbose = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 1;
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
    return dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : dt == ACL_BOOL ? 1 : 2;
}

static mf_npy_dtype npy_of(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT16: return MF_NPY_F2;
    case ACL_BF16: return MF_NPY_U2;
    case ACL_INT32: return MF_NPY_I4;
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
    if (o->kind == OPT_FILE_FLOAT && c->npy.dtype == MF_NPY_I4) {
        msg("%s %s: dtype must be <f2 or <f4 (or <u2 holding bf16 bits with --dtype bf16), got <i4", o->flag,
            o->value);
        return EXIT_FILE;
    }
    switch (c->npy.dtype) {
    case MF_NPY_F2: c->dt = ACL_FLOAT16; break;
    case MF_NPY_F4: c->dt = ACL_FLOAT; break;
    case MF_NPY_I4: c->dt = o->kind == OPT_FILE_BOOL ? ACL_BOOL : ACL_INT32; break;
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

/* ---------------------------------------------------------------- grad */

static int cmd_grad(int argc, char **argv, int first) {
    g_cmd = "moefr grad";
    cli_opt o[] = {
        {"--grad-y", "gradY", OPT_FILE, 1, NULL, 0},
        {"--expanded-row-idx", "expandedRowIdx", OPT_FILE, 1, NULL, 0},
        {"--expanded-x", "expandedXOptional", OPT_FILE, 0, NULL, 0},
        {"--scales", "scalesOptional", OPT_FILE, 0, NULL, 0},
        {"--expert-idx", "expertIdxOptional", OPT_FILE, 0, NULL, 0},
        {"--bias", "biasOptional", OPT_FILE, 0, NULL, 0},
        {"--drop-pad-mode", "dropPadMode", OPT_INT, 0, NULL, 0},
        {"--active-num", "activeNum", OPT_INT, 0, NULL, 0},
        {"--expert-num", "expertNum", OPT_INT, 0, NULL, 0},
        {"--expert-capacity", "expertCapacity", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no);
    if (rc == 1) {
        fputs(USAGE, stdout);
        return EXIT_OK;
    }
    if (rc) return rc;
    int bf16 = opt(o, no, "--dtype")->value != NULL;
    int64_t mode = opt(o, no, "--drop-pad-mode")->ival, active = opt(o, no, "--active-num")->ival;
    int64_t E = opt(o, no, "--expert-num")->ival, C = opt(o, no, "--expert-capacity")->ival;

    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    double t0 = now_us();
    cli_tensor gy, idx, x, sc, ei, bias, gx, gs;
    memset(&gx, 0, sizeof gx);
    memset(&gs, 0, sizeof gs);
    cli_tensor *ins[] = {&gy, &idx, &x, &sc, &ei, &bias};
    const char *in_flags[] = {"--grad-y", "--expanded-row-idx", "--expanded-x", "--scales", "--expert-idx", "--bias"};
    for (int i = 0; i < 6; i++) memset(ins[i], 0, sizeof *ins[i]);
    for (int i = 0; i < 6 && !rc; i++) rc = load_tensor(opt(o, no, in_flags[i]), bf16, ins[i]);
    double t_load = now_us() - t0;

    /* Output shapes follow SPEC section 4; anything inconsistent is left for
     * the operator to reject with its own message. */
    if (!rc) {
        int64_t R = gy.ndim >= 1 ? gy.dims[0] : 0, H = gy.ndim >= 1 ? gy.dims[gy.ndim - 1] : 0;
        int64_t RK = idx.t ? idx.npy.numel : 0;
        if (x.t) {
            rc = make_output(&gx, "grad_expanded_x", gy.dt, x.ndim, x.dims);
        } else if (mode == 1) {
            int64_t d[3] = {E > 0 ? E : 0, C > 0 ? C : 0, H};
            rc = make_output(&gx, "grad_expanded_x (--expert-num x --expert-capacity x H)", gy.dt, 3, d);
        } else {
            int64_t d[2] = {mode == 0 && active > 0 && active < RK ? active : RK, H};
            rc = make_output(&gx, active > 0 ? "grad_expanded_x (--active-num x H)" : "grad_expanded_x", gy.dt, 2, d);
        }
        if (!rc) {
            if (sc.t) {
                rc = make_output(&gs, "grad_scales", sc.dt, sc.ndim, sc.dims);
            } else {
                int64_t d[2] = {R, 1};
                rc = make_output(&gs, "grad_scales", gy.dt, 2, d);
            }
        }
    }
    double t_plan = 0, t_run = 0, t_write = 0, bytes = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"gradY", "--grad-y"}, {"expandedRowIdx", "--expanded-row-idx"},
            {"expandedXOptional", "--expanded-x"}, {"expandedX", "--expanded-x"},
            {"scalesOptional", "--scales"}, {"scales", "--scales"},
            {"expertIdxOptional", "--expert-idx"}, {"expertIdx", "--expert-idx"},
            {"biasOptional", "--bias"}, {"bias", "--bias"},
            {"dropPadMode", "--drop-pad-mode"}, {"activeNum", "--active-num"},
            {"expertNum", "--expert-num"}, {"expertCapacity", "--expert-capacity"},
            {"gradExpandedXOut", "--expanded-x"}, {"gradScalesOut", "--scales"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
            gy.t, idx.t, x.t, sc.t, ei.t, bias.t, mode, active, E, C, gx.t, gs.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize", "aclnnMoeFinalizeRoutingV2Grad", st, ex,
                          ws, aclnnMoeFinalizeRoutingV2Grad, stream, map, (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
        bytes = (double)(gy.nbytes + idx.nbytes + x.nbytes + sc.nbytes + ei.nbytes + bias.nbytes + gx.nbytes +
                         gs.nbytes);
    }
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&gx, &gs};
        const char *names[] = {"grad_expanded_x.npy", "grad_scales.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, sc.t ? 2 : 1);
        t_write = now_us() - t1;
    }
    if (!rc) verbose_report("aclnnMoeFinalizeRoutingV2Grad", t_load, t_plan, t_run, t_write, bytes);
    for (int i = 0; i < 6; i++) cleanup_tensor(ins[i]);
    cleanup_tensor(&gx);
    cleanup_tensor(&gs);
    runtime_down(stream);
    return rc;
}

/* ---------------------------------------------------------------- forward */

static int cmd_forward(int argc, char **argv, int first) {
    g_cmd = "moefr forward";
    cli_opt o[] = {
        {"--expanded-x", "expandedX", OPT_FILE, 1, NULL, 0},
        {"--expanded-row-idx", "expandedRowIdx", OPT_FILE, 1, NULL, 0},
        {"--x1", "x1Optional", OPT_FILE, 0, NULL, 0},
        {"--x2", "x2Optional", OPT_FILE, 0, NULL, 0},
        {"--bias", "biasOptional", OPT_FILE, 0, NULL, 0},
        {"--scales", "scalesOptional", OPT_FILE, 0, NULL, 0},
        {"--expert-idx", "expertIdxOptional", OPT_FILE, 0, NULL, 0},
        {"--drop-pad-mode", "dropPadMode", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no);
    if (rc == 1) {
        fputs(USAGE, stdout);
        return EXIT_OK;
    }
    if (rc) return rc;
    int bf16 = opt(o, no, "--dtype")->value != NULL;
    int64_t mode = opt(o, no, "--drop-pad-mode")->ival;

    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    double t0 = now_us();
    cli_tensor x, idx, x1, x2, bias, sc, ei, out;
    memset(&out, 0, sizeof out);
    cli_tensor *ins[] = {&x, &idx, &x1, &x2, &bias, &sc, &ei};
    const char *in_flags[] = {"--expanded-x", "--expanded-row-idx", "--x1", "--x2", "--bias", "--scales",
                              "--expert-idx"};
    for (int i = 0; i < 7; i++) memset(ins[i], 0, sizeof *ins[i]);
    for (int i = 0; i < 7 && !rc; i++) rc = load_tensor(opt(o, no, in_flags[i]), bf16, ins[i]);
    double t_load = now_us() - t0;

    /* out is (R, H) with R = len(expandedRowIdx) / K, as CANN's tiling derives
     * it (K = scales dim1, or 1 without scales); K = 0 is the operator's to refuse. */
    if (!rc) {
        int64_t H = x.ndim >= 1 ? x.dims[x.ndim - 1] : 0;
        int64_t K = sc.t && sc.ndim == 2 ? sc.dims[1] : 1;
        int64_t R = K > 0 ? idx.npy.numel / K : sc.dims[0];
        int64_t d[2] = {R, H};
        rc = make_output(&out, "out", x.dt, 2, d);
    }
    double t_plan = 0, t_run = 0, t_write = 0, bytes = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"expandedX", "--expanded-x"}, {"expandedRowIdx", "--expanded-row-idx"},
            {"x1Optional", "--x1"}, {"x1", "--x1"}, {"x2Optional", "--x2"}, {"x2", "--x2"},
            {"biasOptional", "--bias"}, {"bias", "--bias"},
            {"scalesOptional", "--scales"}, {"scales", "--scales"},
            {"expertIdxOptional", "--expert-idx"}, {"expertIdx", "--expert-idx"},
            {"dropPadMode", "--drop-pad-mode"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(x.t, idx.t, x1.t, x2.t, bias.t, sc.t, ei.t, mode,
                                                                   out.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeFinalizeRoutingV2GetWorkspaceSize", "aclnnMoeFinalizeRoutingV2", st, ex, ws,
                          aclnnMoeFinalizeRoutingV2, stream, map, (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
        bytes = (double)(x.nbytes + idx.nbytes + x1.nbytes + x2.nbytes + bias.nbytes + sc.nbytes + ei.nbytes +
                         out.nbytes);
    }
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&out};
        const char *names[] = {"out.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, 1);
        t_write = now_us() - t1;
    }
    if (!rc) verbose_report("aclnnMoeFinalizeRoutingV2", t_load, t_plan, t_run, t_write, bytes);
    for (int i = 0; i < 7; i++) cleanup_tensor(ins[i]);
    cleanup_tensor(&out);
    runtime_down(stream);
    return rc;
}

/* ---------------------------------------------------------------- demo */

static void print_f32(const char *name, const float *v, int rows, int cols) {
    printf("%s (%d x %d):\n", name, rows, cols);
    for (int r = 0; r < rows; r++) {
        printf("  [");
        for (int c = 0; c < cols; c++) printf("%s%8.4f", c ? " " : "", (double)v[r * cols + c]);
        printf(" ]\n");
    }
}

static void print_i32(const char *name, const int32_t *v, int rows, int cols) {
    printf("%s (%d x %d):\n", name, rows, cols);
    for (int r = 0; r < rows; r++) {
        printf("  [");
        for (int c = 0; c < cols; c++) printf("%s%3d", c ? " " : "", (int)v[r * cols + c]);
        printf(" ]\n");
    }
}

static aclTensor *demo_tensor(const int64_t *dims, int n, aclDataType dt, void *data) {
    return aclCreateTensor(dims, (uint64_t)n, dt, NULL, 0, ACL_FORMAT_ND, dims, (uint64_t)n, data);
}

/* R=3 tokens, K=2 experts each, H=4, E=3 experts, fp32, mode 0 with scales and
 * bias: small enough to check by hand; also checked against a float64 loop. */
static int cmd_demo(int argc, char **argv, int first) {
    g_cmd = "moefr demo";
    for (int i = first; i < argc; i++) {
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
            g_verbose = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(USAGE, stdout);
            return EXIT_OK;
        } else {
            msg("unexpected argument '%s' (demo takes none)", argv[i]);
            return EXIT_USAGE;
        }
    }
    enum { R = 3, K = 2, H = 4, E = 3 };
    float gy[R * H], x[R * K * H], sc[R * K], bias[E * H], gx[R * K * H], gs[R * K];
    int32_t idx[R * K] = {3, 0, 5, 1, 2, 4}; /* a permutation of [0, R*K), row layout */
    int32_t ei[R * K] = {0, 2, 1, 0, 2, 1};
    for (int i = 0; i < R * H; i++) gy[i] = (float)((i % 5) - 2) * 0.5f + 0.25f;
    for (int i = 0; i < R * K * H; i++) x[i] = (float)((i * 7) % 11) * 0.125f - 0.5f;
    for (int i = 0; i < R * K; i++) sc[i] = (i % K == 0) ? 0.75f : 0.25f;
    for (int i = 0; i < E * H; i++) bias[i] = (float)(i % 3) * 0.1f;
    memset(gx, 0xFF, sizeof gx);
    memset(gs, 0xFF, sizeof gs);

    printf("moefr %s demo: aclnnMoeFinalizeRoutingV2Grad, R=%d tokens, K=%d, H=%d, %d experts, fp32, "
           "dropPadMode 0\n\n", moefrVersion(), R, K, H, E);
    print_f32("gradY", gy, R, H);
    print_i32("expandedRowIdx (entry r*K+k)", idx, R, K);
    print_f32("expandedX", x, R * K, H);
    print_f32("scales", sc, R, K);
    print_i32("expertIdx", ei, R, K);
    print_f32("bias", bias, E, H);

    aclrtStream stream = NULL;
    int rc = runtime_up(&stream);
    if (rc) return rc;
    int64_t d_gy[2] = {R, H}, d_idx[1] = {R * K}, d_x[2] = {R * K, H}, d_s[2] = {R, K}, d_b[2] = {E, H};
    aclTensor *t[8] = {demo_tensor(d_gy, 2, ACL_FLOAT, gy), demo_tensor(d_idx, 1, ACL_INT32, idx),
                       demo_tensor(d_x, 2, ACL_FLOAT, x),   demo_tensor(d_s, 2, ACL_FLOAT, sc),
                       demo_tensor(d_s, 2, ACL_INT32, ei),  demo_tensor(d_b, 2, ACL_FLOAT, bias),
                       demo_tensor(d_x, 2, ACL_FLOAT, gx),  demo_tensor(d_s, 2, ACL_FLOAT, gs)};
    for (int i = 0; i < 8; i++)
        if (!t[i]) {
            msg("aclCreateTensor failed: %s", aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "(no message)");
            return EXIT_REJECTED;
        }
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    double t0 = now_us();
    aclnnStatus st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], 0, 0, 0, 0,
                                                                   t[6], t[7], &ws, &ex);
    double t_plan = now_us() - t0, t_run = 0;
    int alloc_failed = 0;
    if (st == ACLNN_SUCCESS) {
        t0 = now_us();
        st = run_phase2(aclnnMoeFinalizeRoutingV2Grad, ws, ex, stream, &alloc_failed);
        t_run = now_us() - t0;
    }
    if (st != ACLNN_SUCCESS) {
        msg("the operator failed (status %d): %s", (int)st,
            aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "(no message)");
        return EXIT_REJECTED;
    }
    printf("\nresults:\n");
    print_f32("gradExpandedX  [row d = gradY[r] * scales[r][k] for idx[r*K+k] = d]", gx, R * K, H);
    print_f32("gradScales     [(expandedX[d] + bias[e]) . gradY[r]]", gs, R, K);

    /* An independent float64 check of what was just printed. */
    double worst_gx = 0, worst_gs = 0;
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) {
            int d = idx[r * K + k], e = ei[r * K + k];
            double acc = 0;
            for (int j = 0; j < H; j++) {
                double want = (double)(float)((double)gy[r * H + j] * (double)sc[r * K + k]);
                worst_gx = fmax(worst_gx, fabs(want - (double)gx[d * H + j]));
                acc += ((double)x[d * H + j] + (double)bias[e * H + j]) * (double)gy[r * H + j];
            }
            worst_gs = fmax(worst_gs, fabs(acc - (double)gs[r * K + k]));
        }
    printf("\ncheck against a float64 loop: max |diff| gradExpandedX %.3g, gradScales %.3g\n", worst_gx, worst_gs);
    if (g_verbose)
        fprintf(stderr, "%s: kernel path %s, %d thread(s); GetWorkspaceSize %.1f us, run %.1f us\n", g_cmd,
                moefrIsa(), moefrNumThreads(), t_plan, t_run);
    for (int i = 0; i < 8; i++) aclDestroyTensor(t[i]);
    runtime_down(stream);
    return worst_gx == 0 && worst_gs < 1e-5 ? EXIT_OK : EXIT_REJECTED;
}

/* ---------------------------------------------------------------- bench */

#ifndef MOEFR_CLI_HAVE_BENCH
/* Without bench/bench.c: a small measurement of our own, so `moefr bench`
 * still answers the question "how close to copy bandwidth is this machine". */
static int builtin_bench(void) {
    enum { R = 2048, K = 8, H = 1024, REPS = 5 };
    size_t n_gy = (size_t)R * H, n_x = (size_t)R * K * H, n_s = (size_t)R * K;
    float *gy = malloc(n_gy * 4), *x = malloc(n_x * 4), *gx = malloc(n_x * 4), *sc = malloc(n_s * 4);
    float *gs = malloc(n_s * 4);
    int32_t *idx = malloc(n_s * 4);
    size_t bytes = (n_gy + 2 * n_x) * 4;
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (!gy || !x || !gx || !sc || !gs || !idx || !src || !dst) {
        msg("out of memory");
        return EXIT_REJECTED;
    }
    for (size_t i = 0; i < n_gy; i++) gy[i] = (float)(i % 13) * 0.25f;
    for (size_t i = 0; i < n_x; i++) x[i] = (float)(i % 7) * 0.5f;
    for (size_t i = 0; i < n_s; i++) sc[i] = 0.125f * (float)(i % 5);
    /* a fixed scatter: a stride coprime with R*K visits every row once */
    for (size_t i = 0; i < n_s; i++) idx[i] = (int32_t)((i * 7919) % n_s);
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    aclrtStream stream = NULL;
    int rc = runtime_up(&stream);
    if (rc) return rc;
    int64_t d_gy[2] = {R, H}, d_idx[1] = {R * K}, d_x[2] = {R * K, H}, d_s[2] = {R, K};
    aclTensor *t[6] = {demo_tensor(d_gy, 2, ACL_FLOAT, gy), demo_tensor(d_idx, 1, ACL_INT32, idx),
                       demo_tensor(d_x, 2, ACL_FLOAT, x),   demo_tensor(d_s, 2, ACL_FLOAT, sc),
                       demo_tensor(d_x, 2, ACL_FLOAT, gx),  demo_tensor(d_s, 2, ACL_FLOAT, gs)};
    double best_op = 1e30, best_copy = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        int alloc_failed = 0;
        double t0 = now_us();
        aclnnStatus st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t[0], t[1], t[2], t[3], NULL, NULL, 0, 0, 0,
                                                                       0, t[4], t[5], &ws, &ex);
        if (st == ACLNN_SUCCESS) st = run_phase2(aclnnMoeFinalizeRoutingV2Grad, ws, ex, stream, &alloc_failed);
        double t1 = now_us();
        if (st != ACLNN_SUCCESS) {
            msg("the operator failed (status %d): %s", (int)st,
                aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "(no message)");
            return EXIT_REJECTED;
        }
        memcpy(dst, src, bytes);
        double t2 = now_us();
        best_op = fmin(best_op, t1 - t0);
        best_copy = fmin(best_copy, t2 - t1);
        src[rep] ^= dst[bytes - 1 - (size_t)rep]; /* keeps the copy from being elided */
    }
    printf("moefr bench (built-in: bench/bench.c was not linked into this CLI)\n"
           "aclnnMoeFinalizeRoutingV2Grad fp32 R=%d K=%d H=%d mode 0 with scales, kernel path %s, %d thread(s)\n"
           "  operator %.3f ms = %.2f GB/s; single-thread memcpy of the same %.1f MB %.3f ms = %.2f GB/s; "
           "ratio %.3f (best of %d)\n",
           R, K, H, moefrIsa(), moefrNumThreads(), best_op / 1e3, (double)bytes / (best_op * 1e3),
           (double)bytes / 1e6, best_copy / 1e3, (double)bytes / (best_copy * 1e3), best_copy / best_op, REPS);
    for (int i = 0; i < 6; i++) aclDestroyTensor(t[i]);
    runtime_down(stream);
    free(gy), free(x), free(gx), free(sc), free(gs), free(idx), free(src), free(dst);
    return EXIT_OK;
}
#endif

static int cmd_bench(int argc, char **argv, int first) {
    g_cmd = "moefr bench";
#ifdef MOEFR_CLI_HAVE_BENCH
    /* bench/bench.c owns its options; hand it "moefr bench" as argv[0]. */
    static char name[] = "moefr bench";
    argv[first - 1] = name;
    return moefr_bench_main(argc - first + 1, argv + first - 1);
#else
    for (int i = first; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: moefr bench\n  built-in measurement: aclnnMoeFinalizeRoutingV2Grad fp32 R=2048 K=8 "
                   "H=1024 against memcpy of the same bytes\n");
            return EXIT_OK;
        }
        if (strcmp(argv[i], "-v") && strcmp(argv[i], "--verbose")) {
            msg("unexpected argument '%s' (the built-in bench takes none)", argv[i]);
            return EXIT_USAGE;
        }
    }
    return builtin_bench();
#endif
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
    mf_npy_remove_temporaries_on_signals();
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            g_verbose = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help")) {
            fputs(USAGE, stdout);
            return EXIT_OK;
        } else if (!strcmp(a, "--version")) {
            printf("moefr %s (kernel path %s)\n", moefrVersion(), moefrIsa());
            return EXIT_OK;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fputs(USAGE, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[i];
    if (!strcmp(cmd, "grad")) return cmd_grad(argc, argv, i + 1);
    if (!strcmp(cmd, "forward")) return cmd_forward(argc, argv, i + 1);
    if (!strcmp(cmd, "init-routing")) return cmd_init_routing(argc, argv, i + 1); /* tools/cmd_init_routing.c */
    if (!strcmp(cmd, "bench")) return cmd_bench(argc, argv, i + 1);
    if (!strcmp(cmd, "permute")) return cmd_permute(argc, argv, i + 1);     /* tools/cmd_permute.c */
    if (!strcmp(cmd, "unpermute")) return cmd_unpermute(argc, argv, i + 1); /* tools/cmd_permute.c */
    if (!strcmp(cmd, "gating")) return cmd_gating(argc, argv, i + 1);             /* tools/cmd_gating.c */
    if (!strcmp(cmd, "demo")) return cmd_demo(argc, argv, i + 1);
    msg("unknown command '%s' (commands: grad, forward, init-routing, permute, unpermute, gating, bench, demo; see moefr --help)", cmd);
    return EXIT_USAGE;
}
