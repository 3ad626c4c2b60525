/* tools/moefr.c - the `moefr` command-line tool: runs the operators on .npy files
 * through the public CANN API only (acl/acl.h, aclnnop/..., moefr/moefr.h), as a CANN user would. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "moefr/moefr.h"
#include "npy.h"
#include "cli.h"

#ifdef MOEFR_CLI_HAVE_BENCH
#include "bench/bench.h" /* moefr_bench_main */
#endif

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
    "  init-routing-v3  aclnnMoeInitRoutingV3: --x F --expert-idx F --expert-num N [--expert-start N]\n"
    "           [--expert-end N] [--row-idx-type 0|1] [--quant-mode -1|0|1] [--scale F] [--offset F]\n"
    "           ... --out DIR   (init-routing-v3 --help)\n"
    "  permute  aclnnMoeTokenPermute: --tokens F --indices F [--num-out-tokens N] [--dtype bf16] --out DIR\n"
    "           writes DIR/permute_tokens.npy and DIR/sorted_indices.npy\n"
    "  unpermute aclnnMoeTokenUnpermute: --permuted-tokens F --sorted-indices F [--probs F] [--dtype bf16]\n"
    "           --out DIR; writes DIR/out.npy\n"
    "  permute-map aclnnMoeTokenPermuteWithRoutingMap: --tokens F --routing-map F [--probs F]\n"
    "           [--num-out-tokens N] [--drop-and-pad] [--dtype bf16] --out DIR (permute-map --help)\n"
    "  unpermute-map aclnnMoeTokenUnpermuteWithRoutingMap: --permuted-tokens F --sorted-indices F\n"
    "           --tokens-num N [--probs F --routing-map F] [--drop-and-pad] --out DIR\n"
    "  gating   aclnnMoeGatingTopKSoftmax (with --renorm or --softmax-out V2) on .npy files\n"
    "           --x F --k N [--finished F] [--renorm 0|1] [--softmax-out] [--dtype bf16] --out DIR\n"
    "           writes DIR/y.npy, DIR/expert_idx.npy and DIR/row_idx.npy (V1) or\n"
    "           DIR/softmax_result.npy (V2 --softmax-out, renorm 0)   (gating --help)\n"
    "  gating-topk aclnnMoeGatingTopK (grouped sigmoid/softmax routing): --x F --k N [--bias F] [--k-group N]\n"
    "           [--group-count N] [--group-select-mode 0|1] [--norm-type 0|1] [--out-flag] [--scale X] --out DIR\n"
    "           writes DIR/y.npy, DIR/expert_idx.npy (and DIR/norm_out.npy)   (gating-topk --help)\n"
    "  fused-topk aclnnMoeFusedTopk: --x F --add-num F --k N [--group-num N] [--group-topk N] [--top-n N]\n"
    "           [--norm] [--scale X] [--mapping-num F --mapping-table F] --out DIR   (fused-topk --help)\n"
    "  swiglu   aclnnSwiGlu (with --grad-y aclnnSwiGluGrad) on .npy files\n"
    "           --x F [--dim D] [--grad-y F] [--dtype bf16] --out DIR\n"
    "           writes DIR/out.npy, or DIR/x_grad.npy with --grad-y   (swiglu --help)\n"
    "  gmm      aclnnGroupedMatmulV4 on .npy files, one x, one weight, one out\n"
    "           --x F --weight F [--bias F] --group-list F [--group-list-type 0|1]\n"
    "           [--group-type 0|2|-1] [--dtype bf16] --out DIR\n"
    "           writes DIR/out.npy, zero-filled past the group list's total   (gmm --help)\n"
    "  re-routing aclnnMoeReRouting: --tokens F --expert-token-num-per-rank F [--per-token-scales F]\n"
    "           [--idx-type 0|1] [--dtype bf16] --out DIR   (re-routing --help)\n"
    "  init-routing-quant  aclnnMoeInitRoutingQuantV2 (or with --v1 aclnnMoeInitRoutingQuant) on .npy\n"
    "           files: int8 expanded_x, static or dynamic quantisation   (init-routing-quant --help)\n"
    "  permute-ep aclnnMoeTokenPermuteWithEp: --tokens F --indices F [--probs F] [--range-start S\n"
    "           --range-end E] [--num-out-tokens N] [--dtype bf16] --out DIR   (permute-ep --help)\n"
    "  unpermute-ep aclnnMoeTokenUnpermuteWithEp: --permuted-tokens F --sorted-indices F [--probs F]\n"
    "           [--num-topk K] [--range-start S --range-end E] [--dtype bf16] --out DIR\n"
    "  bench    throughput in GB/s and its ratio to copy bandwidth (bench --help)\n"
    "  demo     a small built-in example: prints its inputs and results\n"
    "\n"
    "options:\n"
    "  -v, --verbose  print timing, the kernel path and the thread count to stderr\n"
    "  --help         this text;  --version  the library version\n"
    "\n"
    "files: NumPy .npy, format 1.0-3.0, little-endian, C order, dtypes <f2 <f4 <i4 (<i8: gmm's group list;\n"
    "|i1: int8 tokens, where the operator takes them: init-routing-v3 --quant-mode -1, re-routing);\n"
    "bfloat16 travels as <u2 holding bf16 bits when --dtype bf16 is given (inputs and outputs).\n"
    "DIR is created if missing; outputs appear only when the whole run succeeded.\n"
    "exit status: 0 success, 1 rejected by the operator, 2 usage error, 3 file error.\n";

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
    int rc = parse_opts(argc, argv, first, o, no, USAGE);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
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
    int rc = parse_opts(argc, argv, first, o, no, USAGE);
    if (rc) return rc == 1 ? EXIT_OK : rc; /* 1: --help */
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
    if (!strcmp(cmd, "permute-map")) return cmd_permute_map(argc, argv, i + 1);     /* tools/cmd_routing_map.c */
    if (!strcmp(cmd, "unpermute-map")) return cmd_unpermute_map(argc, argv, i + 1); /* tools/cmd_routing_map.c */
    if (!strcmp(cmd, "gating")) return cmd_gating(argc, argv, i + 1);             /* tools/cmd_gating.c */
    if (!strcmp(cmd, "gating-topk")) return cmd_gating_topk(argc, argv, i + 1);   /* tools/cmd_gating_group.c */
    if (!strcmp(cmd, "fused-topk")) return cmd_fused_topk(argc, argv, i + 1);     /* tools/cmd_gating_group.c */
    if (!strcmp(cmd, "swiglu")) return cmd_swiglu(argc, argv, i + 1);             /* tools/cmd_mlp.c */
    if (!strcmp(cmd, "gmm")) return cmd_gmm(argc, argv, i + 1);                   /* tools/cmd_mlp.c */
    if (!strcmp(cmd, "demo")) return cmd_demo(argc, argv, i + 1);
    if (!strcmp(cmd, "re-routing")) return cmd_re_routing(argc, argv, i + 1); /* tools/cmd_re_routing.c */
    if (!strcmp(cmd, "init-routing-v3")) return cmd_init_routing_v3(argc, argv, i + 1); /* tools/cmd_init_routing_v3.c */
    if (!strcmp(cmd, "init-routing-quant")) return cmd_init_routing_quant(argc, argv, i + 1); /* tools/cmd_init_routing_quant.c */
    if (!strcmp(cmd, "permute-ep")) return cmd_permute_ep(argc, argv, i + 1);     /* tools/cmd_ep.c */
    if (!strcmp(cmd, "unpermute-ep")) return cmd_unpermute_ep(argc, argv, i + 1); /* tools/cmd_ep.c */
    msg("unknown command '%s' (moefr --help lists the commands)", cmd);
    return EXIT_USAGE;
}
