/* tools/cmd_gating.c - `moefr gating`: aclnnMoeGatingTopKSoftmax (or V2) on
 * .npy files, through the public CANN API only, with the file rules of
 * `moefr grad` / `moefr forward` (tools/cli.h's shared helpers): NumPy .npy
 * in (x <f2/<f4, or <u2 holding bf16 bits with --dtype bf16; finished <i4,
 * read as bool with nonzero = true, since .npy bool
 * is not among the CLI's dtypes), outputs written under temporary names and
 * renamed into DIR only when the whole run succeeded; exit 0 success, 1
 * rejected by the operator, 2 usage error, 3 file error.
 *
 *   moefr gating --x F --k N [--finished F] [--renorm 0|1] [--softmax-out]
 *                [--dtype bf16] --out DIR
 *   V1 (no --renorm, no --softmax-out): DIR/y.npy, DIR/expert_idx.npy, DIR/row_idx.npy
 *   V2: DIR/y.npy, DIR/expert_idx.npy, and DIR/softmax_result.npy with
 *       --softmax-out (renorm 0) */
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#include "cli.h"

static const char HELP[] =
    "usage: moefr gating --x F --k N [--finished F] [--renorm 0|1] [--softmax-out] [--dtype bf16] --out DIR\n"
    "  aclnnMoeGatingTopKSoftmax on x (N, E) or (B, S, E): softmax over the experts, the k largest.\n"
    "  Writes DIR/y.npy (x's dtype), DIR/expert_idx.npy and DIR/row_idx.npy (int32).\n"
    "  With --renorm or --softmax-out: aclnnMoeGatingTopKSoftmaxV2 (renorm 1: top-k of the logits, then\n"
    "  softmax over the k); DIR/y.npy, DIR/expert_idx.npy, and DIR/softmax_result.npy (float32) with\n"
    "  --softmax-out and renorm 0. --finished: int32 .npy of x's shape without the last dim, nonzero =\n"
    "  finished (expert_idx = E on those rows). --dtype bf16: x and y travel as <u2 bf16 bits.\n";

int cmd_gating(int argc, char **argv, int first) {
    g_cmd = "moefr gating";
    cli_opt o[] = {
        {"--x", "x", OPT_FILE_FLOAT, 1, NULL, 0},
        {"--k", "k", OPT_INT, 1, NULL, 0},
        {"--finished", "finishedOptional", OPT_FILE_BOOL, 0, NULL, 0},
        {"--renorm", "renorm", OPT_INT, 0, NULL, 0},
        {"--softmax-out", "outputSoftmaxResultFlag", OPT_FLAG, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL, smout = opt(o, no, "--softmax-out")->value != NULL;
    const int64_t k = opt(o, no, "--k")->ival, renorm = opt(o, no, "--renorm")->ival;
    const int v2 = opt(o, no, "--renorm")->value != NULL || smout;

    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    cli_tensor x, f, y, e, r, s;
    memset(&f, 0, sizeof f), memset(&y, 0, sizeof y), memset(&e, 0, sizeof e);
    memset(&r, 0, sizeof r), memset(&s, 0, sizeof s);
    double t0 = now_us();
    rc = load_tensor(opt(o, no, "--x"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--finished"), bf16, &f);
    const double t_load = now_us() - t0;
    if (!rc) { /* x's leading dims and k (k < 0: 0, the operator rejects it) */
        int64_t d[MF_NPY_MAX_DIMS];
        memcpy(d, x.dims, sizeof d);
        if (x.ndim >= 1) d[x.ndim - 1] = k > 0 ? k : 0;
        rc = make_output(&y, "y", x.dt, x.ndim, d);
        if (!rc) rc = make_output(&e, "expert_idx", ACL_INT32, x.ndim, d);
        if (!rc && !v2) rc = make_output(&r, "row_idx", ACL_INT32, x.ndim, d);
        if (!rc && smout) rc = make_output(&s, "softmax_result", ACL_FLOAT, x.ndim, x.dims);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        /* no parameter-to-option map: the operator's message is printed as it is */
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = v2 ? aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(x.t, f.t, k, renorm, smout != 0, y.t, e.t,
                                                                         s.t, &ws, &ex)
                            : aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(x.t, f.t, k, y.t, e.t, r.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = v2 ? run_operator("aclnnMoeGatingTopKSoftmaxV2", "aclnnMoeGatingTopKSoftmaxV2", st, ex, ws,
                               aclnnMoeGatingTopKSoftmaxV2, stream, NULL, 0, o, no)
                : run_operator("aclnnMoeGatingTopKSoftmax", "aclnnMoeGatingTopKSoftmax", st, ex, ws,
                               aclnnMoeGatingTopKSoftmax, stream, NULL, 0, o, no);
        t_run = now_us() - t1;
    }
    if (!rc) { /* V2 writes softmax_result only when asked for with renorm 0 */
        cli_tensor *outs[3] = {&y, &e, v2 ? &s : &r};
        const char *names[3] = {"y.npy", "expert_idx.npy", v2 ? "softmax_result.npy" : "row_idx.npy"};
        double t1 = now_us();
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, v2 && !(smout && renorm == 0) ? 2 : 3);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report(v2 ? "aclnnMoeGatingTopKSoftmaxV2" : "aclnnMoeGatingTopKSoftmax", t_load, t_plan, t_run,
                       t_write, (double)(x.nbytes + f.nbytes + y.nbytes + e.nbytes + r.nbytes + s.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&f), cleanup_tensor(&y);
    cleanup_tensor(&e), cleanup_tensor(&r), cleanup_tensor(&s);
    runtime_down(stream);
    return rc;
}
