/* tools/cmd_mlp.c - the operators of a MoE layer's expert MLP on .npy files,
 * through the public CANN API only, with the file rules of `moefr gating`
 * (tools/cli.h's shared helpers): NumPy .npy in (<f2/<f4, or <u2 holding
 * bf16 bits with --dtype bf16; the group list <i8), outputs written under
 * temporary names and renamed into DIR only when the whole run succeeded;
 * exit 0 success, 1 rejected by the operator, 2 usage error, 3 file error.
 *
 *   moefr swiglu --x F [--dim D] [--grad-y F] [--dtype bf16] --out DIR
 *       aclnnSwiGlu: DIR/out.npy; with --grad-y aclnnSwiGluGrad: DIR/x_grad.npy
 *   moefr gmm --x F --weight F [--bias F] --group-list F [--group-list-type 0|1]
 *             [--group-type 0|2|-1] [--dtype bf16] --out DIR
 *       aclnnGroupedMatmulV4 with one tensor in each list: DIR/out.npy (splitItem 3,
 *       one out tensor; for group type -1, which CANN refuses with splitItem 2/3,
 *       splitItem 0: a list of one out tensor per group, here the one group) */
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"
#include "cli.h"

static const char SWIGLU_HELP[] =
    "usage: moefr swiglu --x F [--dim D] [--grad-y F] [--dtype bf16] --out DIR\n"
    "  aclnnSwiGlu: x is split along dim (default -1) into halves A (first) and B; writes\n"
    "  DIR/out.npy = silu(A) * B, x's shape with dim halved, x's dtype.\n"
    "  With --grad-y F (out's shape): aclnnSwiGluGrad, the gradient of x; writes DIR/x_grad.npy\n"
    "  (x's shape and dtype). --dtype bf16: x, grad-y and the output travel as <u2 bf16 bits.\n";

static const char GMM_HELP[] =
    "usage: moefr gmm --x F --weight F [--bias F] --group-list F [--group-list-type 0|1]\n"
    "                 [--group-type 0|2|-1] [--dtype bf16] --out DIR\n"
    "  aclnnGroupedMatmulV4 with one x, one weight, one out; writes DIR/out.npy.\n"
    "  --group-type 0 (default, M split): x (M, K), weight (E, K, N), bias (E, N); rows\n"
    "      [m_i, m_i+1) of out (M, N) = those rows of x @ weight[i] + bias[i].\n"
    "  --group-type 2 (K split, the weight gradient): x given as its transpose, a (K, M) file\n"
    "      (passed as an (M, K) view with strides (1, M)), weight (K, N), no bias;\n"
    "      out (E, M, N), out[i] = x[:, k_i:k_i+1] @ weight[k_i:k_i+1, :].\n"
    "  --group-type -1 (one group): x (M, K), weight (K, N), bias (N), no group list; out (M, N).\n"
    "  splitItem 3 (one out tensor), or 0 for group type -1 (a list of one).\n"
    "  --group-list: int64 .npy (<i8) of E entries, cumulative ends (--group-list-type 0, default)\n"
    "  or counts (1). out is zero-filled first: rows past the group list's total, which the\n"
    "  operator does not write, are 0 in DIR/out.npy. Dtypes: x and weight both fp16 (bias fp16)\n"
    "  or bf16 (--dtype bf16; bias an <f4 file); fp32 only with MOEFR_SOC=ascend910b.\n";

int cmd_swiglu(int argc, char **argv, int first) {
    g_cmd = "moefr swiglu";
    cli_opt o[] = {
        {"--x", "x", OPT_FILE_FLOAT, 1, NULL, 0},
        {"--dim", "dim", OPT_INT, 0, NULL, 0},
        {"--grad-y", "yGrad", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, SWIGLU_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL, grad = opt(o, no, "--grad-y")->value != NULL;
    const int64_t dim = opt(o, no, "--dim")->value ? opt(o, no, "--dim")->ival : -1;

    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    cli_tensor x, gy, out;
    memset(&gy, 0, sizeof gy), memset(&out, 0, sizeof out);
    double t0 = now_us();
    rc = load_tensor(opt(o, no, "--x"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--grad-y"), bf16, &gy);
    const double t_load = now_us() - t0;
    if (!rc) { /* x's shape, with dim halved for the forward; a dim out of range is the operator's to refuse */
        int64_t d[MF_NPY_MAX_DIMS];
        memcpy(d, x.dims, sizeof d);
        const int64_t k = dim < 0 ? dim + x.ndim : dim;
        if (!grad && k >= 0 && k < x.ndim) d[k] /= 2;
        rc = make_output(&out, grad ? "x_grad" : "out", x.dt, x.ndim, d);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {{"x", "--x"}, {"yGrad", "--grad-y"}, {"dim", "--dim"}};
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = grad ? aclnnSwiGluGradGetWorkspaceSize(gy.t, x.t, dim, out.t, &ws, &ex)
                              : aclnnSwiGluGetWorkspaceSize(x.t, dim, out.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = grad ? run_operator("aclnnSwiGluGradGetWorkspaceSize", "aclnnSwiGluGrad", st, ex, ws, aclnnSwiGluGrad,
                                 stream, map, (int)(sizeof map / sizeof map[0]), o, no)
                  : run_operator("aclnnSwiGluGetWorkspaceSize", "aclnnSwiGlu", st, ex, ws, aclnnSwiGlu, stream, map,
                                 (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        cli_tensor *outs[] = {&out};
        const char *names[] = {grad ? "x_grad.npy" : "out.npy"};
        double t1 = now_us();
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, 1);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report(grad ? "aclnnSwiGluGrad" : "aclnnSwiGlu", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + gy.nbytes + out.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&gy), cleanup_tensor(&out);
    runtime_down(stream);
    return rc;
}

/* A one-tensor aclTensorList over c's tensor. The list owns the tensor from
 * then on (aclDestroyTensorList destroys it), so c->t is cleared; an option
 * not given (c->t NULL) gives a NULL list. */
static int list_of(cli_tensor *c, const char *name, aclTensorList **l) {
    *l = NULL;
    if (!c->t) return 0;
    const aclTensor *one = c->t;
    *l = aclCreateTensorList(&one, 1);
    if (!*l) {
        const char *m = aclGetRecentErrMsg();
        msg("%s: aclCreateTensorList rejected it: %s", name, m ? m : "(no message)");
        return EXIT_REJECTED;
    }
    c->t = NULL;
    return 0;
}

int cmd_gmm(int argc, char **argv, int first) {
    g_cmd = "moefr gmm";
    cli_opt o[] = {
        {"--x", "x", OPT_FILE_FLOAT, 1, NULL, 0},
        {"--weight", "weight", OPT_FILE_FLOAT, 1, NULL, 0},
        {"--bias", "biasOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--group-list", "groupListOptional", OPT_FILE_INT64, 0, NULL, 0},
        {"--group-list-type", "groupListType", OPT_INT, 0, NULL, 0},
        {"--group-type", "groupType", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, GMM_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int64_t gt = opt(o, no, "--group-type")->ival, glt = opt(o, no, "--group-list-type")->ival;

    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    cli_tensor x, w, b, gl, out;
    memset(&w, 0, sizeof w), memset(&b, 0, sizeof b), memset(&gl, 0, sizeof gl), memset(&out, 0, sizeof out);
    aclTensorList *xl = NULL, *wl = NULL, *bl = NULL, *ol = NULL;
    double t0 = now_us();
    rc = load_tensor(opt(o, no, "--x"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--weight"), bf16, &w);
    if (!rc) rc = load_tensor(opt(o, no, "--bias"), bf16, &b);
    if (!rc) rc = load_tensor(opt(o, no, "--group-list"), bf16, &gl);
    const double t_load = now_us() - t0;
    /* K split: the (K, M) file becomes the (M, K) view CANN wants, strides (1, M). */
    if (!rc && gt == 2 && x.ndim == 2) {
        const int64_t view[2] = {x.dims[1], x.dims[0]}, strides[2] = {1, x.dims[1]};
        if (aclInitTensor(x.t, view, 2, x.dt, strides, 0, ACL_FORMAT_ND, x.dims, 2, x.dev) != ACLNN_SUCCESS) {
            const char *m = aclGetRecentErrMsg();
            msg("--x %s: aclInitTensor rejected the transposed view: %s", x.path, m ? m : "(no message)");
            rc = EXIT_REJECTED;
        }
    }
    /* out: (E, M, N) for the K split, else x's shape with the last dim N; the
     * operator checks the rest. Zero-filled: rows past the group list's total
     * are not written by the operator. */
    if (!rc) {
        const int64_t N = w.ndim >= 1 ? w.dims[w.ndim - 1] : 0;
        int64_t d[MF_NPY_MAX_DIMS];
        int nd = x.ndim >= 1 ? x.ndim : 1;
        memcpy(d, x.dims, sizeof d);
        if (gt == 2) {
            nd = 3;
            d[0] = gl.t && gl.ndim == 1 ? gl.dims[0] : 0;
            d[1] = x.ndim == 2 ? x.dims[1] : 0;
            d[2] = N;
        } else {
            d[nd - 1] = N;
        }
        rc = make_output(&out, "out", x.dt, nd, d);
        if (!rc && out.nbytes) aclrtMemset(out.dev, out.nbytes, 0, out.nbytes);
    }
    const double bytes = (double)(x.nbytes + w.nbytes + b.nbytes + gl.nbytes + out.nbytes);
    if (!rc) rc = list_of(&x, "--x", &xl);
    if (!rc) rc = list_of(&w, "--weight", &wl);
    if (!rc) rc = list_of(&b, "--bias", &bl);
    if (!rc) rc = list_of(&out, "out", &ol);
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"x", "--x"}, {"weight", "--weight"}, {"biasOptional", "--bias"},
            {"groupListOptional", "--group-list"}, {"groupListType", "--group-list-type"},
            {"groupType", "--group-type"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnGroupedMatmulV4GetWorkspaceSize(xl, wl, bl, NULL, NULL, NULL, NULL, NULL, gl.t, NULL,
                                                              NULL, NULL, gt == -1 ? 0 : 3, gt, glt, 0, ol, NULL,
                                                              NULL, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnGroupedMatmulV4GetWorkspaceSize", "aclnnGroupedMatmulV4", st, ex, ws,
                          aclnnGroupedMatmulV4, stream, map, (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        cli_tensor *outs[] = {&out};
        const char *names[] = {"out.npy"};
        double t1 = now_us();
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, 1);
        t_write = now_us() - t1;
    }
    if (!rc) verbose_report("aclnnGroupedMatmulV4", t_load, t_plan, t_run, t_write, bytes);
    /* the lists destroy their tensors; cleanup_tensor then frees the memory */
    aclDestroyTensorList(xl), aclDestroyTensorList(wl), aclDestroyTensorList(bl), aclDestroyTensorList(ol);
    cleanup_tensor(&x), cleanup_tensor(&w), cleanup_tensor(&b), cleanup_tensor(&gl), cleanup_tensor(&out);
    runtime_down(stream);
    return rc;
}
