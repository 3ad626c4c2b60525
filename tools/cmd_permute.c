/* cmd_permute.c - `moefr permute` (aclnnMoeTokenPermute) and `moefr
 * unpermute` (aclnnMoeTokenUnpermute) on .npy files, with the file rules of
 * `moefr grad`: outputs appear only when the whole run succeeded. */
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_moe_token_permute.h"
#include "aclnnop/aclnn_moe_token_unpermute.h"
#include "cli.h"

static const char PERMUTE_HELP[] =
    "usage: moefr permute --tokens F --indices F [--num-out-tokens N] [--dtype bf16] --out DIR\n"
    "  writes DIR/permute_tokens.npy and DIR/sorted_indices.npy (see moefr --help)\n";
static const char UNPERMUTE_HELP[] =
    "usage: moefr unpermute --permuted-tokens F --sorted-indices F [--probs F] [--dtype bf16] --out DIR\n"
    "  writes DIR/out.npy (see moefr --help)\n";

int cmd_permute(int argc, char **argv, int first) {
    g_cmd = "moefr permute";
    cli_opt o[] = {
        {"--tokens", "tokens", OPT_FILE, 1, NULL, 0},
        {"--indices", "indices", OPT_FILE, 1, NULL, 0},
        {"--num-out-tokens", "numOutTokens", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, PERMUTE_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int64_t numOut = opt(o, no, "--num-out-tokens")->ival;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    double t0 = now_us();
    cli_tensor tok, ind, pt, si;
    memset(&pt, 0, sizeof pt);
    memset(&si, 0, sizeof si);
    rc = load_tensor(opt(o, no, "--tokens"), bf16, &tok);
    if (!rc) rc = load_tensor(opt(o, no, "--indices"), bf16, &ind);
    else memset(&ind, 0, sizeof ind);
    const double t_load = now_us() - t0;
    if (!rc) { /* output shapes from the documented rules; the operator checks the rest */
        const int64_t T = ind.npy.numel;
        int64_t A = numOut <= 0 ? numOut + T : numOut;
        A = A < 0 ? 0 : A > T ? T : A;
        int64_t d[MF_NPY_MAX_DIMS];
        int nd = tok.ndim >= 2 ? tok.ndim : 2;
        for (int i = 0; i < nd; i++) d[i] = i < tok.ndim ? tok.dims[i] : 1;
        d[0] = A;
        rc = make_output(&pt, "permute_tokens", tok.dt, nd, d);
        if (!rc) rc = make_output(&si, "sorted_indices", ACL_INT32, 1, &T);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"tokens", "--tokens"}, {"indices", "--indices"}, {"numOutTokens", "--num-out-tokens"},
            {"permuteTokensOut", "--num-out-tokens"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeTokenPermuteGetWorkspaceSize(tok.t, ind.t, numOut, false, pt.t, si.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeTokenPermute", "aclnnMoeTokenPermute", st, ex, ws, aclnnMoeTokenPermute,
                          stream, map, (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&pt, &si};
        const char *names[] = {"permute_tokens.npy", "sorted_indices.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, 2);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeTokenPermute", t_load, t_plan, t_run, t_write,
                       (double)(tok.nbytes + ind.nbytes + pt.nbytes + si.nbytes));
    cleanup_tensor(&tok), cleanup_tensor(&ind), cleanup_tensor(&pt), cleanup_tensor(&si);
    runtime_down(stream);
    return rc;
}

int cmd_unpermute(int argc, char **argv, int first) {
    g_cmd = "moefr unpermute";
    cli_opt o[] = {
        {"--permuted-tokens", "permutedTokens", OPT_FILE, 1, NULL, 0},
        {"--sorted-indices", "sortedIndices", OPT_FILE, 1, NULL, 0},
        {"--probs", "probsOptional", OPT_FILE, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, UNPERMUTE_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    double t0 = now_us();
    cli_tensor x, idx, pr, out;
    memset(&idx, 0, sizeof idx), memset(&pr, 0, sizeof pr), memset(&out, 0, sizeof out);
    rc = load_tensor(opt(o, no, "--permuted-tokens"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--sorted-indices"), bf16, &idx);
    if (!rc) rc = load_tensor(opt(o, no, "--probs"), bf16, &pr);
    const double t_load = now_us() - t0;
    if (!rc) {
        const int64_t R = pr.t ? (pr.ndim >= 1 ? pr.dims[0] : 0) : idx.npy.numel;
        const int64_t d[2] = {R, x.ndim >= 1 ? x.dims[x.ndim - 1] : 0};
        rc = make_output(&out, "out", x.dt, 2, d);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"permutedTokens", "--permuted-tokens"}, {"sortedIndices", "--sorted-indices"},
            {"probsOptional", "--probs"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeTokenUnpermuteGetWorkspaceSize(x.t, idx.t, pr.t, false, NULL, out.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeTokenUnpermute", "aclnnMoeTokenUnpermute", st, ex, ws, aclnnMoeTokenUnpermute,
                          stream, map, (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&out};
        const char *names[] = {"out.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, 1);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeTokenUnpermute", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + idx.nbytes + pr.nbytes + out.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&idx), cleanup_tensor(&pr), cleanup_tensor(&out);
    runtime_down(stream);
    return rc;
}
