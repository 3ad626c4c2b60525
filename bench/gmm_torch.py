#!/usr/bin/python3
"""gmm_torch.py - npu_grouped_matmul (moefr.torch_npu) against a per-group torch.matmul loop, timed
in the same run: issue 21's "GroupedMatmul >= 1.0x a per-group torch.matmul loop, fp32 and bf16".

    PYTHONPATH=python MOEFR_LIBRARY=build/libmoefr.so MOEFR_SOC=ascend910b /usr/bin/python3 bench/gmm_torch.py

Shapes (the GroupedMatmul bench's, bench/gmm.c): E = 8, top-2, hidden 2048, ffn 1408 and E = 64,
top-8, hidden 2048, ffn 1024; rows = tokens x top-k in equal groups (--tokens, default 2048). Per
shape, the gate+up GEMM (x (M, H) @ W[e] (H, 2F)) and the down GEMM (a (M, F) @ W[e] (F, H)),
forward only (the gradients are the same two calls with transposed views and group type 2; moefr's
own bench times them against one GEMM).

  moefr:  npu_grouped_matmul([x], [w], group_list=counts, split_item=3, group_type=0,
          group_list_type=1) - one (M, N) output, w one (E, K, N) tensor.
  torch:  torch.cat([x[s:e] @ w[g] for each group]) - torch's own matmul, whatever BLAS torch
          loads (the "fast configuration": libblas.so.3 -> OpenBLAS pthread when
          libopenblas0-pthread is installed; nothing here installs it: without it, Debian points torch at
          BLIS's serial build, one core, when moefr's libblis4-serial is there). bf16 is timed against two
          loops: "torch" multiplies widened to fp32 and rounds once (what moefr does without
          AVX512-BF16), "torch-bf16" is torch's own bf16 matmul (oneDNN: fast with AVX512-BF16, a
          few GFLOP/s without); the faster one is the reference. --native-bf16: torch-bf16 only.

Both sides use the library's thread count (torch.set_num_threads). Each repeat runs one torch call
then one moefr call; ms is the median, ratio the median of the pairs' torch/moefr time ratios (> 1:
moefr is faster). The outputs are compared each time (max |diff| / max |torch|)."""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moe_layer_torch import cpu_name, library_threads, torch_blas  # noqa: E402  (the layer bench's helpers)


def loop_mm(dtype, native):
    if dtype == torch.float32 or native:
        return torch.matmul
    return lambda a, b: torch.matmul(a.float(), b.float()).to(dtype)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtype", choices=["fp32", "bf16", "both"], default="both")
    ap.add_argument("--native-bf16", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    try:
        from moefr.torch_npu import npu_grouped_matmul
    except Exception as e:  # noqa: BLE001 - any failure to load is reported, nothing is timed
        print("gmm_torch: moefr.torch_npu did not load: %s" % e)
        return 1
    threads = library_threads()
    torch.set_num_threads(threads)
    print("npu_grouped_matmul vs a per-group torch.matmul loop on %s; torch %s, %d threads (both sides); "
          "%d tokens; median of %d pairs" % (cpu_name(), torch.__version__, threads, args.tokens, args.reps))
    print("BLAS mapped in this process (torch's fp32 matmul, and moefr's): %s" % torch_blas())
    shapes = [(8, 2, 2048, 1408), (64, 8, 2048, 1024)]
    dtypes = {"fp32": [torch.float32], "bf16": [torch.bfloat16], "both": [torch.float32, torch.bfloat16]}
    if args.markdown:
        print("| E | GEMM | M x K x N | dtype | torch side | torch ms | moefr ms | moefr GFLOP/s | ratio torch/moefr | diff |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    gen = torch.Generator().manual_seed(1234)
    worst = None
    for E, k, H, Fh in shapes:
        M = args.tokens * k
        counts = torch.full((E,), M // E, dtype=torch.int64)
        counts[: M % E] += 1
        bounds = [0] + torch.cumsum(counts, 0).tolist()
        for name, K, N in (("gate+up", H, 2 * Fh), ("down", Fh, H)):
            for dt, native in [(d, nv) for d in dtypes[args.dtype]
                               for nv in ([False] if d == torch.float32 else [True] if args.native_bf16
                                          else [False, True])]:
                x = (torch.rand(M, K, generator=gen) * 2 - 1).to(dt)
                w = ((torch.rand(E, K, N, generator=gen) * 2 - 1) / K ** 0.5).to(dt)
                mm = loop_mm(dt, native)
                side = "torch-bf16" if dt == torch.bfloat16 and native else "torch"
                ws = w.unbind(0)

                def torch_call():
                    return torch.cat([mm(x[bounds[g]:bounds[g + 1]], ws[g]) for g in range(E)])

                def moefr_call():
                    return npu_grouped_matmul([x], [w], group_list=counts, split_item=3, group_type=0,
                                              group_list_type=1)[0]

                torch_call(), moefr_call()  # warm-up
                tt, tm, pr, diff = [], [], [], 0.0
                for _ in range(args.reps):
                    a, ya = timed(torch_call)
                    b, yb = timed(moefr_call)
                    tt.append(a), tm.append(b), pr.append(a / b)
                    d = (ya.float() - yb.float()).abs().max().item() / max(ya.float().abs().max().item(), 1e-30)
                    diff = max(diff, d)
                t, m, r = statistics.median(tt), statistics.median(tm), statistics.median(pr)
                gf = 2.0 * M * K * N / m / 1e9
                dn = "fp32" if dt == torch.float32 else "bf16"
                if args.markdown:
                    print("| %d | %s | %d x %d x %d | %s | %s | %.1f | %.1f | %.1f | %.2f | %.1e |"
                          % (E, name, M, K, N, dn, side, t * 1e3, m * 1e3, gf, r, diff))
                else:
                    print("  E=%-2d %-7s %6d x %4d x %4d %s  %-10s %8.1f ms  moefr %8.1f ms (%6.1f GFLOP/s)  "
                          "ratio %.2f  diff %.1e" % (E, name, M, K, N, dn, side, t * 1e3, m * 1e3, gf, r, diff))
                sys.stdout.flush()
                worst = r if worst is None else min(worst, r)
    print("lowest ratio: %.2f (target >= 1.0)" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
