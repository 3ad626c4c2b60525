/* cmd_routing_map.c - `moefr permute-map` (aclnnMoeTokenPermuteWithRoutingMap)
 * and `moefr unpermute-map` (aclnnMoeTokenUnpermuteWithRoutingMap) on .npy
 * files, with the file rules of `moefr grad`: outputs appear only when the
 * whole run succeeded. The routing map is an <i4 file, nonzero = true. */
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map.h"
#include "cli.h"

static const char PERMUTE_HELP[] =
    "usage: moefr permute-map --tokens F --routing-map F [--probs F] [--num-out-tokens N] [--drop-and-pad]\n"
    "       [--dtype bf16] --out DIR\n"
    "  routing map: <i4 (tokens, experts), nonzero = routed; --num-out-tokens defaults to tokens' rows.\n"
    "  writes DIR/permute_tokens.npy, DIR/sorted_indices.npy (and DIR/permute_probs.npy with --probs)\n";
static const char UNPERMUTE_HELP[] =
    "usage: moefr unpermute-map --permuted-tokens F --sorted-indices F --tokens-num N [--probs F --routing-map F]\n"
    "       [--drop-and-pad] [--dtype bf16] --out DIR\n"
    "  writes DIR/out.npy (tokens-num x hidden)\n";

int cmd_permute_map(int argc, char **argv, int first) {
    g_cmd = "moefr permute-map";
    cli_opt o[] = {
        {"--tokens", "tokens", OPT_FILE, 1, NULL, 0},
        {"--routing-map", "routingMap", OPT_FILE_BOOL, 1, NULL, 0},
        {"--probs", "probsOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--num-out-tokens", "numOutTokens", OPT_INT, 0, NULL, 0},
        {"--drop-and-pad", "dropAndPad", OPT_FLAG, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, PERMUTE_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int pad = opt(o, no, "--drop-and-pad")->value != NULL;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    double t0 = now_us();
    cli_tensor tok, map, pr, pt, pp, si;
    memset(&map, 0, sizeof map), memset(&pr, 0, sizeof pr);
    memset(&pt, 0, sizeof pt), memset(&pp, 0, sizeof pp), memset(&si, 0, sizeof si);
    rc = load_tensor(opt(o, no, "--tokens"), bf16, &tok);
    if (!rc) rc = load_tensor(opt(o, no, "--routing-map"), bf16, &map);
    if (!rc) rc = load_tensor(opt(o, no, "--probs"), bf16, &pr);
    const double t_load = now_us() - t0;
    int64_t numOut = 0;
    if (!rc) { /* output rows: numOutTokens rounded down to a multiple of N (E with --drop-and-pad) */
        numOut = opt(o, no, "--num-out-tokens")->value ? opt(o, no, "--num-out-tokens")->ival
                                                        : (tok.ndim >= 1 ? tok.dims[0] : 0);
        int64_t align = map.ndim == 2 ? map.dims[pad ? 1 : 0] : 1;
        if (align <= 0) align = 1;
        int64_t rows = numOut >= 0 ? numOut / align * align : 0;
        const int64_t d[2] = {rows, tok.ndim >= 2 ? tok.dims[1] : 1};
        rc = make_output(&pt, "permute_tokens", tok.dt, 2, d);
        if (!rc) rc = make_output(&si, "sorted_indices", ACL_INT32, 1, &rows);
        if (!rc && pr.t) rc = make_output(&pp, "permute_probs", pr.dt, 1, &rows);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag pmap[] = {
            {"tokens", "--tokens"}, {"routingMap", "--routing-map"}, {"probsOptional", "--probs"},
            {"numOutTokens", "--num-out-tokens"}, {"permuteTokensOut", "--num-out-tokens"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tok.t, map.t, pr.t, numOut, pad, pt.t, pp.t,
                                                                            si.t, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeTokenPermuteWithRoutingMap", "aclnnMoeTokenPermuteWithRoutingMap", st, ex, ws,
                          aclnnMoeTokenPermuteWithRoutingMap, stream, pmap, (int)(sizeof pmap / sizeof pmap[0]), o,
                          no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&pt, &si, &pp};
        const char *names[] = {"permute_tokens.npy", "sorted_indices.npy", "permute_probs.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, pr.t ? 3 : 2);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeTokenPermuteWithRoutingMap", t_load, t_plan, t_run, t_write,
                       (double)(tok.nbytes + map.nbytes + pr.nbytes + pt.nbytes + si.nbytes + pp.nbytes));
    cleanup_tensor(&tok), cleanup_tensor(&map), cleanup_tensor(&pr);
    cleanup_tensor(&pt), cleanup_tensor(&si), cleanup_tensor(&pp);
    runtime_down(stream);
    return rc;
}

int cmd_unpermute_map(int argc, char **argv, int first) {
    g_cmd = "moefr unpermute-map";
    cli_opt o[] = {
        {"--permuted-tokens", "permutedTokens", OPT_FILE, 1, NULL, 0},
        {"--sorted-indices", "sortedIndices", OPT_FILE, 1, NULL, 0},
        {"--tokens-num", "restoreShapeOptional", OPT_INT, 1, NULL, 0},
        {"--probs", "probsOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--routing-map", "routingMapOptional", OPT_FILE_BOOL, 0, NULL, 0},
        {"--drop-and-pad", "paddedMode", OPT_FLAG, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, UNPERMUTE_HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int pad = opt(o, no, "--drop-and-pad")->value != NULL;
    const int64_t N = opt(o, no, "--tokens-num")->ival;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    double t0 = now_us();
    cli_tensor x, idx, pr, map, out;
    memset(&idx, 0, sizeof idx), memset(&pr, 0, sizeof pr), memset(&map, 0, sizeof map), memset(&out, 0, sizeof out);
    rc = load_tensor(opt(o, no, "--permuted-tokens"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--sorted-indices"), bf16, &idx);
    if (!rc) rc = load_tensor(opt(o, no, "--probs"), bf16, &pr);
    if (!rc) rc = load_tensor(opt(o, no, "--routing-map"), bf16, &map);
    const double t_load = now_us() - t0;
    const int64_t H = x.ndim >= 2 ? x.dims[1] : 1;
    if (!rc) {
        const int64_t d[2] = {N > 0 ? N : 0, H};
        rc = make_output(&out, "out", x.dt, 2, d);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    aclIntArray *rs = NULL;
    if (!rc) {
        static const param_flag pmap[] = {
            {"permutedTokens", "--permuted-tokens"}, {"sortedIndices", "--sorted-indices"},
            {"probsOptional", "--probs"}, {"routingMapOptional", "--routing-map"},
            {"unpermutedTokens", "--tokens-num"}, {"tokens_num", "--tokens-num"},
        };
        const int64_t shape[2] = {N, H};
        rs = aclCreateIntArray(shape, 2);
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(x.t, idx.t, map.t, pr.t, pad, rs, out.t,
                                                                              NULL, NULL, NULL, &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeTokenUnpermuteWithRoutingMap", "aclnnMoeTokenUnpermuteWithRoutingMap", st, ex, ws,
                          aclnnMoeTokenUnpermuteWithRoutingMap, stream, pmap, (int)(sizeof pmap / sizeof pmap[0]), o,
                          no);
        t_run = now_us() - t1;
    }
    if (rs) aclDestroyIntArray(rs);
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&out};
        const char *names[] = {"out.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, 1);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeTokenUnpermuteWithRoutingMap", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + idx.nbytes + pr.nbytes + map.nbytes + out.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&idx), cleanup_tensor(&pr), cleanup_tensor(&map), cleanup_tensor(&out);
    runtime_down(stream);
    return rc;
}
