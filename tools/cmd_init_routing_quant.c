/* tools/cmd_init_routing_quant.c - `moefr init-routing-quant`:
 * aclnnMoeInitRoutingQuantV2, or with --v1 aclnnMoeInitRoutingQuant, on .npy
 * files through the public API only, with the file rules of `moefr
 * init-routing` (tools/cli.h): outputs appear only when the whole run
 * succeeded; expanded_x.npy is int8 ('|i1'). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclnnop/aclnn_moe_init_routing_quant.h"
#include "aclnnop/aclnn_moe_init_routing_quant_v2.h"
#include "cli.h"

static const char HELP[] =
    "usage: moefr init-routing-quant --x F --expert-idx F [options] --out DIR\n"
    "\n"
    "aclnnMoeInitRoutingQuantV2 (default): x (N, H), expertIdx (N, K) int32\n"
    "  --quant-mode 0|1          0 static (--scale F --offset F, (1,) float32), 1 dynamic (default)\n"
    "  --scale F                 dynamic: optional smooth scale (1, H) or (expertNum, H) float32\n"
    "  --active-num N            dropless rows kept (0: all N*K)\n"
    "  --expert-capacity N --expert-num N --drop-pad-mode 0|1\n"
    "  --count-flag 0|1|2        1 cumsum, 2 count (dropless): writes expert_tokens_count_or_cumsum.npy\n"
    "  --before-capacity-flag 0|1  (drop-pad): writes expert_tokens_before_capacity.npy\n"
    "  writes DIR/expanded_x.npy (int8; (A, H), or (E, C, H) in drop-pad), DIR/expanded_row_idx.npy\n"
    "  and, dynamic, DIR/dynamic_quant_scale.npy\n"
    "aclnnMoeInitRoutingQuant with --v1: x (N, H), expertIdx (N, K) int32, --scale F --offset F\n"
    "  (one-element float32 files: the scale and offset attributes)\n"
    "  --row-idx F               rowIdx (N, K) int32; default: k*N + r\n"
    "  --active-num N            tokens kept in expanded_x (default: N)\n"
    "  writes DIR/expanded_x.npy (int8, (min(N, activeNum)*K, H)), DIR/expanded_row_idx.npy and\n"
    "  DIR/expanded_expert_idx.npy\n"
    "common: --dtype bf16 (<u2 files hold bf16 bits), -v (timing and kernel path to stderr)\n";

/* One float from a loaded one-element FLOAT file (the V1 attributes). */
static int host_scalar(cli_tensor *c, const char *flag, double *v) {
    if (!c->t) {
        msg("%s is required with --v1", flag);
        return EXIT_USAGE;
    }
    if (c->npy.numel != 1 || c->dt != ACL_FLOAT) {
        msg("%s %s: one float32 value expected", flag, c->path);
        return EXIT_FILE;
    }
    float f; /* the file's buffer is gone: read the copy in device memory back */
    if (aclrtMemcpy(&f, 4, c->dev, 4, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
        msg("%s: copy from device failed", flag);
        return EXIT_REJECTED;
    }
    *v = f;
    return 0;
}

int cmd_init_routing_quant(int argc, char **argv, int first) {
    g_cmd = "moefr init-routing-quant";
    cli_opt o[] = {
        {"--x", "x", OPT_FILE, 1, NULL, 0},
        {"--expert-idx", "expertIdx", OPT_FILE, 1, NULL, 0},
        {"--scale", "scaleOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--offset", "offsetOptional", OPT_FILE_FLOAT, 0, NULL, 0},
        {"--row-idx", "rowIdx", OPT_FILE, 0, NULL, 0},
        {"--active-num", "activeNum", OPT_INT, 0, NULL, 0},
        {"--expert-capacity", "expertCapacity", OPT_INT, 0, NULL, 0},
        {"--expert-num", "expertNum", OPT_INT, 0, NULL, 0},
        {"--drop-pad-mode", "dropPadMode", OPT_INT, 0, NULL, 0},
        {"--count-flag", "expertTokensCountOrCumsumFlag", OPT_INT, 0, NULL, 0},
        {"--before-capacity-flag", "expertTokensBeforeCapacityFlag", OPT_INT, 0, NULL, 0},
        {"--quant-mode", "quantMode", OPT_INT, 0, NULL, 0},
        {"--v1", NULL, OPT_FLAG, 0, NULL, 0},
        {"--dtype", NULL, OPT_DTYPE, 0, NULL, 0},
        {"--out", NULL, OPT_DIR, 1, NULL, 0},
    };
    const int no = (int)(sizeof o / sizeof o[0]);
    int rc = parse_opts(argc, argv, first, o, no, HELP);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
    const int v1 = opt(o, no, "--v1")->value != NULL;
    if (!v1 && opt(o, no, "--row-idx")->value) {
        msg("--row-idx is an input of aclnnMoeInitRoutingQuant only (add --v1)");
        return EXIT_USAGE;
    }
    static const char *const V2_ONLY[] = {"--expert-capacity", "--expert-num", "--drop-pad-mode", "--count-flag",
                                          "--before-capacity-flag", "--quant-mode"};
    for (size_t j = 0; v1 && j < sizeof V2_ONLY / sizeof *V2_ONLY; j++)
        if (opt(o, no, V2_ONLY[j])->value) {
            msg("%s is not a parameter of aclnnMoeInitRoutingQuant (drop --v1)", V2_ONLY[j]);
            return EXIT_USAGE;
        }
    const int bf16 = opt(o, no, "--dtype")->value != NULL;
    const cli_opt *oa = opt(o, no, "--active-num"), *oq = opt(o, no, "--quant-mode");
    const int64_t E = opt(o, no, "--expert-num")->ival, C = opt(o, no, "--expert-capacity")->ival;
    const int64_t mode = opt(o, no, "--drop-pad-mode")->ival, cflag = opt(o, no, "--count-flag")->ival;
    const int64_t qmode = oq->value ? oq->ival : 1;
    const int bflag = opt(o, no, "--before-capacity-flag")->ival != 0;

    aclrtStream stream = NULL;
    if ((rc = runtime_up(&stream))) return rc;
    cli_tensor x, ei, sc, of, ri, ex, row, third, dqs;
    memset(&ei, 0, sizeof ei), memset(&sc, 0, sizeof sc), memset(&of, 0, sizeof of), memset(&ri, 0, sizeof ri);
    memset(&ex, 0, sizeof ex), memset(&row, 0, sizeof row), memset(&third, 0, sizeof third);
    memset(&dqs, 0, sizeof dqs);
    double t0 = now_us();
    rc = load_tensor(opt(o, no, "--x"), bf16, &x);
    if (!rc) rc = load_tensor(opt(o, no, "--expert-idx"), bf16, &ei);
    if (!rc) rc = load_tensor(opt(o, no, "--scale"), bf16, &sc);
    if (!rc) rc = load_tensor(opt(o, no, "--offset"), bf16, &of);
    if (!rc) rc = load_tensor(opt(o, no, "--row-idx"), bf16, &ri);
    double scale = 0, offset = 0;
    if (!rc && v1) rc = host_scalar(&sc, "--scale", &scale);
    if (!rc && v1) rc = host_scalar(&of, "--offset", &offset);
    const double t_load = now_us() - t0;
    const int64_t N = x.ndim >= 1 ? x.dims[0] : 0, H = x.ndim >= 2 ? x.dims[x.ndim - 1] : 0;
    const int64_t T = ei.t ? ei.npy.numel : 0, K = ei.ndim == 2 ? ei.dims[1] : 1;
    const int64_t active = oa->value ? oa->ival : (v1 ? N : 0);
    if (!rc && v1 && !ri.t && ei.ndim == 2) { /* the column layout k*N + r */
        const int64_t d[2] = {ei.dims[0], K};
        rc = make_output(&ri, "rowIdx", ACL_INT32, 2, d);
        int32_t *h = rc ? NULL : malloc(ri.nbytes ? ri.nbytes : 1);
        if (!rc && !h) {
            msg("rowIdx: out of memory");
            rc = EXIT_REJECTED;
        }
        for (int64_t r = 0; !rc && r < d[0]; r++)
            for (int64_t k = 0; k < K; k++) h[r * K + k] = (int32_t)(k * d[0] + r);
        if (!rc && ri.nbytes && aclrtMemcpy(ri.dev, ri.nbytes, h, ri.nbytes, ACL_MEMCPY_HOST_TO_DEVICE)) {
            msg("rowIdx: copy to device failed");
            rc = EXIT_REJECTED;
        }
        free(h);
    }
    int nout = 2;
    cli_tensor *outs[4] = {&ex, &row, NULL, NULL};
    const char *names[4] = {"expanded_x.npy", "expanded_row_idx.npy", NULL, NULL};
    if (!rc) {
        const int64_t dE[1] = {E > 0 ? E : 0};
        int64_t R;
        if (v1) {
            const int64_t d[2] = {(active < N ? (active > 0 ? active : 0) : N) * K, H};
            rc = make_output(&ex, "expanded_x", ACL_INT8, 2, d);
            R = 0;
        } else if (mode == 1) {
            const int64_t d[3] = {E, C, H};
            rc = make_output(&ex, "expanded_x", ACL_INT8, 3, d);
            R = E * C;
        } else {
            R = active <= 0 ? T : (active < T ? active : T); /* negative: the operator refuses it */
            const int64_t d[2] = {R, H};
            rc = make_output(&ex, "expanded_x", ACL_INT8, 2, d);
        }
        if (!rc) rc = make_output(&row, "expanded_row_idx", ACL_INT32, 1, &T);
        if (!rc && v1) {
            rc = make_output(&third, "expanded_expert_idx", ACL_INT32, 1, &T);
            outs[nout] = &third, names[nout++] = "expanded_expert_idx.npy";
        } else if (!rc && mode == 1 && bflag) {
            rc = make_output(&third, "expert_tokens_before_capacity", ACL_INT32, 1, dE);
            outs[nout] = &third, names[nout++] = "expert_tokens_before_capacity.npy";
        } else if (!rc && mode != 1 && cflag != 0) {
            rc = make_output(&third, "expert_tokens_count_or_cumsum", ACL_INT32, 1, dE);
            outs[nout] = &third, names[nout++] = "expert_tokens_count_or_cumsum.npy";
        }
        if (!rc && !v1 && qmode == 1) {
            const int64_t dR[1] = {R > 0 ? R : 0};
            rc = make_output(&dqs, "dynamic_quant_scale", ACL_FLOAT, 1, dR);
            outs[nout] = &dqs, names[nout++] = "dynamic_quant_scale.npy";
        }
    }
    double t_plan = 0, t_run = 0, t_write = 0;
    if (!rc) {
        static const param_flag map[] = {
            {"expertIdx", "--expert-idx"}, {"rowIdx", "--row-idx"}, {"x", "--x"}, {"activeNum", "--active-num"},
            {"expertCapacity", "--expert-capacity"}, {"expertNum", "--expert-num"},
            {"dropPadMode", "--drop-pad-mode"}, {"expertTokensCountOrCumsumFlag", "--count-flag"},
            {"quantMode", "--quant-mode"}, {"scaleOptional", "--scale"}, {"offsetOptional", "--offset"},
        };
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        double t1 = now_us();
        aclnnStatus st =
            v1 ? aclnnMoeInitRoutingQuantGetWorkspaceSize(x.t, ri.t, ei.t, active, scale, offset, ex.t, row.t,
                                                          third.t, &ws, &e)
               : aclnnMoeInitRoutingQuantV2GetWorkspaceSize(x.t, ei.t, sc.t, of.t, active, C, E, mode, cflag, bflag,
                                                            qmode, ex.t, row.t, mode == 1 ? NULL : third.t,
                                                            mode == 1 ? third.t : NULL, dqs.t, &ws, &e);
        t_plan = now_us() - t1;
        t1 = now_us();
        rc = v1 ? run_operator("aclnnMoeInitRoutingQuantGetWorkspaceSize", "aclnnMoeInitRoutingQuant", st, e, ws,
                               aclnnMoeInitRoutingQuant, stream, map, (int)(sizeof map / sizeof map[0]), o, no)
                : run_operator("aclnnMoeInitRoutingQuantV2GetWorkspaceSize", "aclnnMoeInitRoutingQuantV2", st, e,
                               ws, aclnnMoeInitRoutingQuantV2, stream, map, (int)(sizeof map / sizeof map[0]), o,
                               no);
        t_run = now_us() - t1;
    }
    if (!rc) {
        double t1 = now_us();
        rc = write_outputs(opt(o, no, "--out")->value, outs, names, nout);
        t_write = now_us() - t1;
    }
    if (!rc)
        verbose_report(v1 ? "aclnnMoeInitRoutingQuant" : "aclnnMoeInitRoutingQuantV2", t_load, t_plan, t_run, t_write,
                       (double)(x.nbytes + ei.nbytes + ri.nbytes + ex.nbytes + row.nbytes + third.nbytes + dqs.nbytes));
    cleanup_tensor(&x), cleanup_tensor(&ei), cleanup_tensor(&sc), cleanup_tensor(&of), cleanup_tensor(&ri);
    cleanup_tensor(&ex), cleanup_tensor(&row), cleanup_tensor(&third), cleanup_tensor(&dqs);
    runtime_down(stream);
    return rc;
}
