/* cmd_ep.c - `moefr permute-ep` (aclnnMoeTokenPermuteWithEp) and `moefr
 * unpermute-ep` (aclnnMoeTokenUnpermuteWithEp) on .npy files, with the file
 * rules of `moefr permute`: outputs appear only when the whole run succeeded.
 * The expert-parallel window is --range-start S --range-end E (both, or
 * neither: then the operators fall back to TokenPermute / TokenUnpermute). */
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_moe_token_permute_with_ep.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_ep.h"
#include "cli.h"

static const char PERMUTE_EP_HELP[] =
    "usage: moefr permute-ep --tokens F --indices F [--probs F] [--range-start S --range-end E]\n"
    "                        [--num-out-tokens N] [--dtype bf16] --out DIR\n"
    "  writes DIR/permute_tokens.npy, DIR/sorted_indices.npy and, with --probs and a range,\n"
    "  DIR/permute_probs.npy: the sorted rows [S, E) (S > E wraps; S == E: all of them)\n";
static const char UNPERMUTE_EP_HELP[] =
    "usage: moefr unpermute-ep --permuted-tokens F --sorted-indices F [--probs F] [--num-topk K]\n"
    "                          [--range-start S --range-end E] [--dtype bf16] --out DIR\n"
    "  writes DIR/out.npy: the probs-weighted sum of the window's rows [S, E) per token\n";

/* The range from --range-start/--range-end: 0 none, 1 given, -1 only one of them. */
static int get_range(cli_opt *o, int no, aclIntArray **arr, int64_t *v) {
    const cli_opt *s = opt(o, no, "--range-start"), *e = opt(o, no, "--range-end");
    *arr = NULL;
    if (!s->value && !e->value) return 0;
    if (!s->value || !e->value) {
        msg("--range-start and --range-end go together");
        return -1;
    }
    v[0] = s->ival, v[1] = e->ival;
    *arr = aclCreateIntArray(v, 2);
    return 1;
}

int cmd_permute_ep(int argc, char **argv, int first) {
    g_cmd = "moefr permute-ep";
    cli_opt o[] = {
        {"--tokens", "tokens", OPT_FILE, 1, NULL, 0},
        {"--indices", "indices", OPT_FILE, 1, NULL, 0},
        {"--probs", "probsOptional", OPT_FILE, 0, NULL, 0},
        {"--range-start", "rangeOptional", OPT_INT, 0, NULL, 0},
        {"--range-end", "rangeOptional", OPT_INT, 0, NULL, 0},
        {"--num-out-tokens", "numOutTokens", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, PERMUTE_EP_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int64_t numOut = opt(o, no, "--num-out-tokens")->ival;
    aclIntArray *range = NULL;
    int64_t rv[2] = {0, 0};
    const int ranged = get_range(o, no, &range, rv);
    if (ranged < 0) return EXIT_USAGE;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) {
        if (range) aclDestroyIntArray(range);
        return rc;
    }
    double t0 = now_us();
    cli_tensor tok, ind, pr, pt, si, pp;
    memset(&ind, 0, sizeof ind), memset(&pr, 0, sizeof pr), memset(&pt, 0, sizeof pt);
    memset(&si, 0, sizeof si), memset(&pp, 0, sizeof pp);
    rc = load_tensor(opt(o, no, "--tokens"), bf16, &tok);
    if (!rc) rc = load_tensor(opt(o, no, "--indices"), bf16, &ind);
    if (!rc) rc = load_tensor(opt(o, no, "--probs"), bf16, &pr);
    const double t_load = now_us() - t0;
    if (!rc) { /* output shapes from the documented rules; the operator checks the rest */
        const int64_t T = ind.npy.numel;
        int64_t A = ranged ? rv[1] - rv[0] : numOut;
        A = A <= 0 ? A + T : A;
        A = A < 0 ? 0 : A > T ? T : A;
        int64_t d[MF_NPY_MAX_DIMS];
        int nd = tok.ndim >= 2 ? tok.ndim : 2;
        for (int i = 0; i < nd; i++) d[i] = i < tok.ndim ? tok.dims[i] : 1;
        d[0] = A;
        rc = make_output(&pt, "permute_tokens", tok.dt, nd, d);
        if (!rc) rc = make_output(&si, "sorted_indices", ACL_INT32, 1, &T);
        if (!rc && ranged && pr.t) rc = make_output(&pp, "permute_probs", tok.dt, 1, &A);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"tokens", "--tokens"},           {"indices", "--indices"},          {"probsOptional", "--probs"},
            {"rangeOptional", "--range-start"}, {"numOutTokens", "--num-out-tokens"},
            {"permuteTokensOut", "--range-start"}, {"permuteProbsOut", "--probs"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tok.t, ind.t, pr.t, range, numOut, false, pt.t,
                                                                    si.t, pp.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeTokenPermuteWithEp", "aclnnMoeTokenPermuteWithEp", st, ex, ws,
                          aclnnMoeTokenPermuteWithEp, stream, map, (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&pt, &si, &pp};
        const char *names[] = {"permute_tokens.npy", "sorted_indices.npy", "permute_probs.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, pp.t ? 3 : 2);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeTokenPermuteWithEp", t_load, t_plan, t_run, t_write,
                       (double)(tok.nbytes + ind.nbytes + pr.nbytes + pt.nbytes + si.nbytes + pp.nbytes));
    cleanup_tensor(&tok), cleanup_tensor(&ind), cleanup_tensor(&pr), cleanup_tensor(&pt), cleanup_tensor(&si);
    cleanup_tensor(&pp);
    if (range) aclDestroyIntArray(range);
    runtime_down(stream);
    return rc;
}

int cmd_unpermute_ep(int argc, char **argv, int first) {
    g_cmd = "moefr unpermute-ep";
    cli_opt o[] = {
        {"--permuted-tokens", "permutedTokens", OPT_FILE, 1, NULL, 0},
        {"--sorted-indices", "sortedIndices", OPT_FILE, 1, NULL, 0},
        {"--probs", "probsOptional", OPT_FILE, 0, NULL, 0},
        {"--num-topk", "numTopk", OPT_INT, 0, NULL, 0},
        {"--range-start", "rangeOptional", OPT_INT, 0, NULL, 0},
        {"--range-end", "rangeOptional", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, UNPERMUTE_EP_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc;
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int64_t topK = opt(o, no, "--num-topk")->value ? opt(o, no, "--num-topk")->ival : 1;
    aclIntArray *range = NULL;
    int64_t rv[2] = {0, 0};
    const int ranged = get_range(o, no, &range, rv);
    if (ranged < 0) return EXIT_USAGE;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) {
        if (range) aclDestroyIntArray(range);
        return rc;
    }
    double t0 = now_us();
    cli_tensor x, idx, pr, out;
    memset(&idx, 0, sizeof idx), memset(&pr, 0, sizeof pr), memset(&out, 0, sizeof out);
    rc = load_tensor(opt(o, no, "--permuted-tokens"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--sorted-indices"), bf16, &idx);
    if (!rc) rc = load_tensor(opt(o, no, "--probs"), bf16, &pr);
    const double t_load = now_us() - t0;
    if (!rc) {
        const int64_t K = pr.t ? (pr.ndim >= 2 ? pr.dims[1] : 1) : ranged ? (topK > 0 ? topK : 1) : 1;
        const int64_t d[2] = {idx.npy.numel / K, x.ndim >= 1 ? x.dims[x.ndim - 1] : 0};
        rc = make_output(&out, "out", x.dt, 2, d);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"permutedTokens", "--permuted-tokens"}, {"sortedIndices", "--sorted-indices"},
            {"probsOptional", "--probs"},            {"numTopk", "--num-topk"},
            {"rangeOptional", "--range-start"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(x.t, idx.t, pr.t, topK, range, false, NULL, out.t,
                                                                      &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeTokenUnpermuteWithEp", "aclnnMoeTokenUnpermuteWithEp", st, ex, ws,
                          aclnnMoeTokenUnpermuteWithEp, stream, map, (int)(sizeof map / sizeof map[0]), o, no);
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
        verbose_report("aclnnMoeTokenUnpermuteWithEp", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + idx.nbytes + pr.nbytes + out.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&idx), cleanup_tensor(&pr), cleanup_tensor(&out);
    if (range) aclDestroyIntArray(range);
    runtime_down(stream);
    return rc;
}
