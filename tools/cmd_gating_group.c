/* tools/cmd_gating_group.c - `moefr gating-topk` (aclnnMoeGatingTopK) and
 * `moefr fused-topk` (aclnnMoeFusedTopk) on .npy files, through the public
 * CANN API only, with the file rules of tools/cmd_gating.c (x <f2/<f4, or <u2
 * bf16 bits with --dtype bf16; int32 mapping files <i4; outputs renamed into
 * DIR only when the whole run succeeded; exit 0 success, 1 rejected by the
 * operator, 2 usage error, 3 file error).
 *
 *   moefr gating-topk --x F --k N [--bias F] [--k-group N] [--group-count N]
 *       [--group-select-mode 0|1] [--renorm N] [--norm-type 0|1] [--out-flag]
 *       [--scale X] [--eps X] [--dtype bf16] --out DIR
 *       -> DIR/y.npy, DIR/expert_idx.npy, and DIR/norm_out.npy with --out-flag
 *   moefr fused-topk --x F --add-num F --k N [--group-num N] [--group-topk N]
 *       [--top-n N] [--norm] [--scale X] [--mapping-num F --mapping-table F]
 *       [--dtype bf16] --out DIR
 *       -> DIR/y.npy (float32), DIR/indices.npy */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclnnop/aclnn_moe_fused_topk.h"
#include "aclnnop/aclnn_moe_gating_top_k.h"
#include "cli.h"

static const char HELP1[] =
    "usage: moefr gating-topk --x F --k N [--bias F] [--k-group N] [--group-count N] [--group-select-mode 0|1]\n"
    "                         [--renorm N] [--norm-type 0|1] [--out-flag] [--scale X] [--eps X] [--dtype bf16]\n"
    "                         --out DIR\n"
    "  aclnnMoeGatingTopK on x (N, E): s = sigmoid (norm-type 1) or softmax (0, the default) of x, b = s + bias;\n"
    "  E / group-count experts per group, each scored by its max (mode 0) or top-2 sum (1); the k-group best\n"
    "  groups kept; the k largest b among them; y = s there (sigmoid: / (sum + eps)) * scale.\n"
    "  Defaults as CANN's attributes: k-group 1, group-count 1, mode 0, renorm 0, scale 1, eps 1e-20.\n"
    "  Writes DIR/y.npy (x's dtype), DIR/expert_idx.npy (int32), DIR/norm_out.npy (float32, --out-flag).\n";
static const char HELP2[] =
    "usage: moefr fused-topk --x F --add-num F --k N [--group-num N] [--group-topk N] [--top-n N] [--norm]\n"
    "                        [--scale X] [--mapping-num F --mapping-table F] [--dtype bf16] --out DIR\n"
    "  aclnnMoeFusedTopk on x (N, E): s = sigmoid(x), b = s + add-num; groups scored by the sum of their\n"
    "  top-n b; the group-topk best kept, the others' b times 0; the k largest; y = s there (--norm:\n"
    "  / sum * scale). With the mapping files (int32): indices = mapping_table[e][row % mapping_num[e]].\n"
    "  Defaults: group-num 1, group-topk 1, top-n 1, scale 1. Writes DIR/y.npy (float32), DIR/indices.npy.\n";

static int real_opt(cli_opt *o, double dflt, double *v) {
    *v = dflt;
    if (!o->value) return 0;
    char *end = NULL;
    *v = strtod(o->value, &end);
    if (!end || *end) {
        msg("%s: '%s' is not a number", o->flag, o->value);
        return EXIT_USAGE;
    }
    return 0;
}

static int64_t int_opt(cli_opt *o, int64_t dflt) { return o->value ? o->ival : dflt; }

int cmd_gating_topk(int argc, char **argv, int first) {
    g_cmd = "moefr gating-topk";
    cli_opt o[] = {
        {"--x", "x", OPT_FILE_FLOAT, 1, NULL, 0},
        {"--bias", "biasOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--k", "k", OPT_INT, 1, NULL, 0},
        {"--k-group", "kGroup", OPT_INT, 0, NULL, 0},
        {"--group-count", "groupCount", OPT_INT, 0, NULL, 0},
        {"--group-select-mode", "groupSelectMode", OPT_INT, 0, NULL, 0},
        {"--renorm", "renorm", OPT_INT, 0, NULL, 0},
        {"--norm-type", "normType", OPT_INT, 0, NULL, 0},
        {"--out-flag", "outFlag", OPT_FLAG, 0, NULL, 0},
        {"--scale", "routedScalingFactor", OPT_DIR, 0, NULL, 0},
        {"--eps", "eps", OPT_DIR, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, HELP1);
    if (rc) return rc == 1 ? EXIT_OK : rc;
    double scale, eps;
    if ((rc = real_opt(opt(o, no, "--scale"), 1.0, &scale)) || (rc = real_opt(opt(o, no, "--eps"), 1e-20, &eps)))
        return rc;
    const int bf16 = opt(o, no, "--dtype")->value != NULL, of = opt(o, no, "--out-flag")->value != NULL;
    const int64_t k = opt(o, no, "--k")->ival;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    cli_tensor x, b, y, e, n;
    memset(&b, 0, sizeof b), memset(&y, 0, sizeof y), memset(&e, 0, sizeof e), memset(&n, 0, sizeof n);
    double t0 = now_us();
    rc = load_tensor(opt(o, no, "--x"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--bias"), bf16, &b);
    const double t_load = now_us() - t0;
    if (!rc) { /* (rows, k) outputs; the norm output (rows, E), required by the operator, always made */
        int64_t d[2] = {x.ndim >= 1 ? x.dims[0] : 0, k > 0 ? k : 0}, dn[2] = {d[0], x.ndim >= 2 ? x.dims[1] : 0};
        rc = make_output(&y, "y", x.dt, 2, d);
        if (!rc) rc = make_output(&e, "expert_idx", ACL_INT32, 2, d);
        if (!rc) rc = make_output(&n, "norm_out", ACL_FLOAT, 2, dn);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeGatingTopKGetWorkspaceSize(
            x.t, b.t, k, int_opt(opt(o, no, "--k-group"), 1), int_opt(opt(o, no, "--group-count"), 1),
            int_opt(opt(o, no, "--group-select-mode"), 0), int_opt(opt(o, no, "--renorm"), 0),
            int_opt(opt(o, no, "--norm-type"), 0), of != 0, scale, eps, y.t, e.t, n.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeGatingTopK", "aclnnMoeGatingTopK", st, ex, ws, aclnnMoeGatingTopK, stream, NULL,
                          0, o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        cli_tensor *outs[3] = {&y, &e, &n};
        const char *names[3] = {"y.npy", "expert_idx.npy", "norm_out.npy"};
        double t1 = now_us();
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, of ? 3 : 2);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeGatingTopK", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + b.nbytes + y.nbytes + e.nbytes + (of ? n.nbytes : 0)));
    cleanup_tensor(&x), cleanup_tensor(&b), cleanup_tensor(&y), cleanup_tensor(&e), cleanup_tensor(&n);
    runtime_down(stream);
    return rc;
}

int cmd_fused_topk(int argc, char **argv, int first) {
    g_cmd = "moefr fused-topk";
    cli_opt o[] = {
        {"--x", "x", OPT_FILE_FLOAT, 1, NULL, 0},
        {"--add-num", "addNum", OPT_FILE_FLOAT, 1, NULL, 0},
        {"--mapping-num", "mappingNum", OPT_FILE, 0, NULL, 0},
        {"--mapping-table", "mappingTable", OPT_FILE, 0, NULL, 0},
        {"--k", "topK", OPT_INT, 1, NULL, 0},
        {"--group-num", "groupNum", OPT_INT, 0, NULL, 0},
        {"--group-topk", "groupTopk", OPT_INT, 0, NULL, 0},
        {"--top-n", "topN", OPT_INT, 0, NULL, 0},
        {"--norm", "isNorm", OPT_FLAG, 0, NULL, 0},
        {"--scale", "scale", OPT_DIR, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, HELP2);
    if (rc) return rc == 1 ? EXIT_OK : rc;
    double scale;
    if ((rc = real_opt(opt(o, no, "--scale"), 1.0, &scale))) return rc;
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int map = opt(o, no, "--mapping-num")->value != NULL || opt(o, no, "--mapping-table")->value != NULL;
    const int64_t k = opt(o, no, "--k")->ival;
    if (k < 0 || k > UINT32_MAX) {
        msg("--k must be in [0, 4294967295], got %lld", (long long)k);
        return EXIT_USAGE;
    }
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    cli_tensor x, a, mn, mt, y, e;
    memset(&a, 0, sizeof a), memset(&mn, 0, sizeof mn), memset(&mt, 0, sizeof mt);
    memset(&y, 0, sizeof y), memset(&e, 0, sizeof e);
    double t0 = now_us();
    rc = load_tensor(opt(o, no, "--x"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--add-num"), bf16, &a);
    if (!rc) rc = load_tensor(opt(o, no, "--mapping-num"), 0, &mn);
    if (!rc) rc = load_tensor(opt(o, no, "--mapping-table"), 0, &mt);
    const double t_load = now_us() - t0;
    if (!rc) {
        int64_t d[2] = {x.ndim >= 1 ? x.dims[0] : 0, k};
        rc = make_output(&y, "y", ACL_FLOAT, 2, d);
        if (!rc) rc = make_output(&e, "indices", ACL_INT32, 2, d);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeFusedTopkGetWorkspaceSize(
            x.t, a.t, mn.t, mt.t, (uint32_t)int_opt(opt(o, no, "--group-num"), 1),
            (uint32_t)int_opt(opt(o, no, "--group-topk"), 1), (uint32_t)int_opt(opt(o, no, "--top-n"), 1),
            (uint32_t)k, 0, opt(o, no, "--norm")->value != NULL, (float)scale, map != 0, y.t, e.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeFusedTopk", "aclnnMoeFusedTopk", st, ex, ws, aclnnMoeFusedTopk, stream, NULL, 0,
                          o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        cli_tensor *outs[2] = {&y, &e};
        const char *names[2] = {"y.npy", "indices.npy"};
        double t1 = now_us();
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, 2);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeFusedTopk", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + a.nbytes + mn.nbytes + mt.nbytes + y.nbytes + e.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&a), cleanup_tensor(&mn), cleanup_tensor(&mt);
    cleanup_tensor(&y), cleanup_tensor(&e);
    runtime_down(stream);
    return rc;
}
