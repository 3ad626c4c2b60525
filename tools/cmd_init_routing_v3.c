/* tools/cmd_init_routing_v3.c - `moefr init-routing-v3`: aclnnMoeInitRoutingV3 on
 * .npy files, through the public API only, with the file rules of `moefr
 * init-routing` (tools/cli.h): outputs written under temporary names and
 * renamed only when the whole run succeeded; exit 0 success, 1 rejected by the
 * operator, 2 usage, 3 file. Quantised expanded_x is written as |i1 (int8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclnnop/aclnn_moe_init_routing_v3.h"
#include "cli.h"

static const char HELP[] =
    "usage: moefr init-routing-v3 --x F --expert-idx F --expert-num N [options] --out DIR\n"
    "\n"
    "aclnnMoeInitRoutingV3: x (N, H) <f2/<f4 (bf16 bits as <u2), or |i1 int8 with --quant-mode -1;\n"
    "  expertIdx (N, K) int32\n"
    "  --expert-start N --expert-end N   the active expert range (default 0, expert-num)\n"
    "  --drop-pad-mode 0|1 --expert-capacity N\n"
    "  --tokens-num-type 0|1|2   0 cumsum, 1 count (default), 2 key_value\n"
    "  --row-idx-type 0|1        0 gather (-1 outside the range), 1 scatter (the sorted permutation)\n"
    "  --quant-mode -1|0|1       -1 none (default), 0 static (--scale (1), --offset (1)),\n"
    "                            1 dynamic (--scale: optional smooth scale (end - start, H))\n"
    "  --scale F --offset F      float32 files; with quant-mode -1 --scale (N) is gathered to expanded_scale\n"
    "  --active-num N            -1 (default) or N*K\n"
    "  writes DIR/expanded_x.npy ((N*K, H) or (E, C, H); |i1 when quantised), DIR/expanded_row_idx.npy,\n"
    "  DIR/expert_tokens_count_or_cumsum.npy (<i8) and, except with --quant-mode 0, DIR/expanded_scale.npy\n"
    "common: --dtype bf16 (<u2 files hold bf16 bits), -v (timing to stderr)\n";

int cmd_init_routing_v3(int argc, char **argv, int first) {
    g_cmd = "moefr init-routing-v3";
    cli_opt o[] = {
        {"--x", "x", OPT_FILE, 1, NULL, 0}, /* int8 too: the operator's table decides */
        {"--expert-idx", "expertIdx", OPT_FILE, 1, NULL, 0},
        {"--scale", "scaleOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--offset", "offsetOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--active-num", "activeNum", OPT_INT, 0, NULL, 0},
        {"--expert-capacity", "expertCapacity", OPT_INT, 0, NULL, 0},
        {"--expert-num", "expertNum", OPT_INT, 1, NULL, 0},
        {"--drop-pad-mode", "dropPadMode", OPT_INT, 0, NULL, 0},
        {"--tokens-num-type", "expertTokensNumType", OPT_INT, 0, NULL, 0},
        {"--quant-mode", "quantMode", OPT_INT, 0, NULL, 0},
        {"--expert-start", "activeExpertRangeOptional", OPT_INT, 0, NULL, 0},
        {"--expert-end", "activeExpertRangeOptional", OPT_INT, 0, NULL, 0},
        {"--row-idx-type", "rowIdxType", OPT_INT, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc;
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const int64_t E = opt(o, no, "--expert-num")->ival, C = opt(o, no, "--expert-capacity")->ival;
    const int64_t mode = opt(o, no, "--drop-pad-mode")->ival, rtype = opt(o, no, "--row-idx-type")->ival;
    const cli_opt *ot = opt(o, no, "--tokens-num-type"), *oq = opt(o, no, "--quant-mode");
    const cli_opt *oa = opt(o, no, "--active-num"), *oe = opt(o, no, "--expert-end");
    const int64_t type = ot->value ? ot->ival : 1, quant = oq->value ? oq->ival : -1;
    const int64_t active = oa->value ? oa->ival : -1;
    const int64_t range[2] = {opt(o, no, "--expert-start")->ival, oe->value ? oe->ival : E};

    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    cli_tensor x, ei, sc, of, ex, row, cnt, esc;
    memset(&x, 0, sizeof x), memset(&ei, 0, sizeof ei), memset(&sc, 0, sizeof sc), memset(&of, 0, sizeof of);
    memset(&ex, 0, sizeof ex), memset(&row, 0, sizeof row), memset(&cnt, 0, sizeof cnt), memset(&esc, 0, sizeof esc);
    double t0 = now_us();
    rc = load_tensor(opt(o, no, "--x"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--expert-idx"), bf16, &ei);
    if (!rc) rc = load_tensor(opt(o, no, "--scale"), bf16, &sc);
    if (!rc) rc = load_tensor(opt(o, no, "--offset"), bf16, &of);
    const double t_load = now_us() - t0;
    /* output shapes as the operator checks them; inconsistent inputs are its to reject */
    const int64_t H = x.ndim >= 1 ? x.dims[x.ndim - 1] : 0, T = ei.t ? ei.npy.numel : 0;
    const int64_t rows = mode == 1 ? E * C : T;
    const char *names[4] = {"expanded_x.npy", "expanded_row_idx.npy", "expert_tokens_count_or_cumsum.npy",
                            "expanded_scale.npy"};
    if (!rc) {
        const aclDataType odt = quant == -1 ? x.dt : ACL_INT8;
        if (mode == 1) {
            const int64_t d[3] = {E, C, H};
            rc = make_output(&ex, "expanded_x", odt, 3, d);
        } else {
            const int64_t d[2] = {T, H};
            rc = make_output(&ex, "expanded_x", odt, 2, d);
        }
        if (!rc) rc = make_output(&row, "expanded_row_idx", ACL_INT32, 1, &T);
        const int64_t dc[2] = {type == 2 ? E : range[1] - range[0], 2};
        if (!rc) rc = make_output(&cnt, "expert_tokens_count_or_cumsum", ACL_INT64, type == 2 ? 2 : 1, dc);
        if (!rc) rc = make_output(&esc, "expanded_scale", ACL_FLOAT, 1, &rows);
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"x", "--x"}, {"expertIdx", "--expert-idx"}, {"scale", "--scale"}, {"offset", "--offset"},
            {"activeNum", "--active-num"}, {"expertCapacity", "--expert-capacity"}, {"expertNum", "--expert-num"},
            {"dropPadMode", "--drop-pad-mode"}, {"expertTokensNumType", "--tokens-num-type"},
            {"quantMode", "--quant-mode"}, {"expert_start", "--expert-start"}, {"expert_end", "--expert-end"},
            {"rowIdxType", "--row-idx-type"},
        };
        aclIntArray *ra = aclCreateIntArray(range, 2);
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        double t1 = now_us();
        aclnnStatus st = aclnnMoeInitRoutingV3GetWorkspaceSize(x.t, ei.t, sc.t, of.t, active, C, E, mode, type, true,
                                                               quant, ra, rtype, ex.t, row.t, cnt.t, esc.t, &ws, &e);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = run_operator("aclnnMoeInitRoutingV3GetWorkspaceSize", "aclnnMoeInitRoutingV3", st, e, ws,
                          aclnnMoeInitRoutingV3, stream, map, (int)(sizeof map / sizeof map[0]), o, no);
        t_run = now_us() - t1;
        aclDestroyIntArray(ra);
    }
    if (!rc) {
        cli_tensor *outs[4] = {&ex, &row, &cnt, &esc};
        double t1 = now_us();
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, quant == 0 ? 3 : 4);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report("aclnnMoeInitRoutingV3", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + ei.nbytes + ex.nbytes + row.nbytes + cnt.nbytes + esc.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&ei), cleanup_tensor(&sc), cleanup_tensor(&of);
    cleanup_tensor(&ex), cleanup_tensor(&row), cleanup_tensor(&cnt), cleanup_tensor(&esc);
    runtime_down(stream);
    return rc;
}
