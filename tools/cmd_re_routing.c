/* cmd_re_routing.c - `moefr re-routing` (aclnnMoeReRouting) on .npy files,
 * with the file rules of `moefr grad`: outputs appear only when the whole run
 * succeeded. */
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_moe_re_routing.h"
#include "cli.h"

static const char HELP[] =
    "usage: moefr re-routing --tokens F --expert-token-num-per-rank F [--per-token-scales F]\n"
    "           [--idx-type 0|1] [--dtype bf16] --out DIR\n"
    "  tokens (A, H) <f2 or |i1 (or bf16 bits as <u2 with --dtype bf16), rank-major; the counts (ranks, experts) <i4;\n"
    "  scales (A) or (A, S) <f4. Writes DIR/permute_tokens.npy (expert-major), DIR/permute_token_idx.npy,\n"
    "  DIR/expert_token_num.npy, and DIR/permute_per_token_scales.npy with --per-token-scales.\n";

int cmd_re_routing(int argc, char **argv, int first) {
    g_cmd = "moefr re-routing";
    cli_opt o[] = {
        {"--tokens", "tokens", OPT_FILE, 1, NULL, 0},
        {"--expert-token-num-per-rank", "expertTokenNumPerRank", OPT_FILE, 1, NULL, 0},
        {"--per-token-scales", "perTokenScalesOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--idx-type", "idxType", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int64_t idx_type = opt(o, no, "--idx-type")->ival;
    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    double t0 = now_us();
    cli_tensor tok, cnt, scl, pt, ps, pi, pe;
    memset(&cnt, 0, sizeof cnt), memset(&scl, 0, sizeof scl);
    memset(&pt, 0, sizeof pt), memset(&ps, 0, sizeof ps), memset(&pi, 0, sizeof pi), memset(&pe, 0, sizeof pe);
    rc = load_tensor(opt(o, no, "--tokens"), bf16, &tok);
    if (!rc) rc = load_tensor(opt(o, no, "--expert-token-num-per-rank"), bf16, &cnt);
    if (!rc) rc = load_tensor(opt(o, no, "--per-token-scales"), bf16, &scl);
    const double t_load = now_us() - t0;
    if (!rc) { /* output shapes as torch_npu allocates them; the operator checks the rest */
        const int64_t A = tok.ndim >= 1 ? tok.dims[0] : 0, E = cnt.ndim >= 2 ? cnt.dims[1] : 0;
        rc = make_output(&pt, "permute_tokens", tok.dt, tok.ndim, tok.dims);
        if (!rc && scl.t) rc = make_output(&ps, "permute_per_token_scales", scl.dt, scl.ndim, scl.dims);
        else if (!rc) rc = make_output(&ps, "permute_per_token_scales", ACL_FLOAT, 1, &A);
        if (!rc) rc = make_output(&pi, "permute_token_idx", ACL_INT32, 1, &A);
        if (!rc) rc = make_output(&pe, "expert_token_num", cnt.dt, 1, &E);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"tokens", "--tokens"}, {"expertTokenNumPerRank", "--expert-token-num-per-rank"},
            {"perTokenScalesOptional", "--per-token-scales"}, {"idxType", "--idx-type"},
        };
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeReRoutingGetWorkspaceSize(tok.t, cnt.t, scl.t, 1, idx_type, pt.t, ps.t, pi.t, pe.t,
                                                           &ws, &ex);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeReRouting", "aclnnMoeReRouting", st, ex, ws, aclnnMoeReRouting, stream, map,
                          (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        double t1 = now_us();
        cli_tensor *outs[] = {&pt, &pi, &pe, &ps};
        const char *names[] = {"permute_tokens.npy", "permute_token_idx.npy", "expert_token_num.npy",
                               "permute_per_token_scales.npy"};
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, scl.t ? 4 : 3);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeReRouting", t_load, t_plan, t_run, t_write,
                       (double)(tok.nbytes + cnt.nbytes + scl.nbytes + pt.nbytes + ps.nbytes + pi.nbytes + pe.nbytes));
    cleanup_tensor(&tok), cleanup_tensor(&cnt), cleanup_tensor(&scl);
    cleanup_tensor(&pt), cleanup_tensor(&ps), cleanup_tensor(&pi), cleanup_tensor(&pe);
    runtime_down(stream);
    return rc;
}
