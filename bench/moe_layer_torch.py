#!/usr/bin/python3
"""moe_layer_torch.py - one MoE layer training step (forward + backward) on CPU: a pure-PyTorch layer
against the same layer built from moefr.torch_npu ops, timed in the same run.

    PYTHONPATH=python MOEFR_LIBRARY=build/libmoefr.so /usr/bin/python3 bench/moe_layer_torch.py

The layer (issue 21's shape by default: E = 8 experts, hidden 2048, top-2, 4096 tokens, ffn 1408):
router logits = x @ w_gate, softmax in fp32, top-k (no renormalisation, as
npu_moe_gating_top_k_softmax), the k rows per token permuted to expert order, per expert
silu(x_e @ W1[e]) * (x_e @ W3[e]) @ W2[e] (W1 | W3 stored as one (E, H, 2F) weight, SwiGlu's halves),
and the rows combined back weighted by their probabilities. The step is that forward plus the
backward of sum(out * grad_out) into x and every weight.

  torch:  index_select / stable-sort permutation, a per-expert torch.matmul loop, F.silu(a) * b,
          scatter_add combine. bf16 has two torch sides, both timed in the same rounds: "torch"
          keeps the bf16 tensors but multiplies them widened to fp32 and rounds the product to bf16
          (what moefr's GroupedMatmul does without AVX512-BF16), and "torch-bf16" uses PyTorch's own
          bf16 matmul (oneDNN: fast on a CPU with AVX512-BF16, a few GFLOP/s without; this script
          measures it and prints it). Each gets its own ratio; the faster torch side is the one a
          target is read against. --native-bf16 keeps only torch-bf16.
  moefr:  npu_moe_gating_top_k_softmax (the expert ids; the probabilities' gradient comes from a
          torch softmax gathered at those ids, since torch_npu registers no gradient for the gating
          op), npu_moe_token_permute, npu_grouped_matmul (group type 0, counts), npu_swiglu,
          npu_grouped_matmul, npu_moe_token_unpermute with the probabilities. The router matmul
          stays torch.matmul on both sides. npu_grouped_matmul is being added to moefr.torch_npu;
          until it exists this side is skipped with a message and only the torch side is timed
          (a side whose warm-up step raises is reported and not timed either). Its call is in one
          place, gmm() in moefr_layer, written to torch_npu's signature.

Each repeat runs one torch step then one moefr step (after one warm-up step of each); ms per step
is the median of the repeats, ratio the median of the pairs' torch/moefr time ratios. Both sides use
the library's thread count (torch.set_num_threads). When both run, their outputs and x's gradient
are compared (relative to the largest magnitude of torch's)."""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def cpu_name():
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    info.setdefault(k.strip(), v.strip())
    except OSError:
        return "unknown CPU"
    if "vendor_id" in info:
        return "%s (%s family %s model %s)" % (info.get("model name", "unnamed CPU"), info["vendor_id"],
                                               info.get("cpu family", "?"), info.get("model", "?"))
    if "CPU implementer" in info:
        return "Arm CPU implementer %s part %s" % (info["CPU implementer"], info.get("CPU part", "?"))
    return info.get("model name", "unknown CPU")


# ---------------------------------------------------------------------------------------------
# the pure-PyTorch layer
# ---------------------------------------------------------------------------------------------

def matmul_fn(dtype, native):
    """a @ b in dtype: torch's own kernel, or (bf16 without --native-bf16) widened to fp32, rounded once."""
    if dtype == torch.float32 or native:
        return torch.matmul
    return lambda a, b: torch.matmul(a.float(), b.float()).to(dtype)


def torch_layer(mm):
    def layer(x, w_gate, w13, w2, k):
        T, H = x.shape
        E = w13.shape[0]
        probs = torch.softmax(mm(x, w_gate).float(), dim=-1)
        top_p, top_i = probs.topk(k, dim=-1)                       # (T, k), descending
        flat = top_i.reshape(-1)                                   # slot t*k + j -> expert
        _, order = torch.sort(flat, stable=True)                   # slots in expert order
        token = order // k
        xs = x.index_select(0, token)                              # (T*k, H) permuted rows
        counts = torch.bincount(flat, minlength=E).tolist()
        # unbind, not w13[e]: each w13[e]'s backward would add a zero-filled (E, H, 2F) tensor
        w13s, w2s = w13.unbind(0), w2.unbind(0)
        outs, start = [], 0
        for e in range(E):
            n = counts[e]
            if n == 0:
                continue
            h = mm(xs[start:start + n], w13s[e])                   # (n, 2F)
            a, b = h.chunk(2, dim=-1)
            outs.append(mm(F.silu(a) * b, w2s[e]))                 # (n, H)
            start += n
        ys = torch.cat(outs)
        wts = top_p.reshape(-1).index_select(0, order).to(x.dtype)
        out = torch.zeros_like(x)
        return out.scatter_add(0, token.unsqueeze(1).expand(-1, H), ys * wts.unsqueeze(1))
    return layer


# ---------------------------------------------------------------------------------------------
# the same layer from moefr.torch_npu ops
# ---------------------------------------------------------------------------------------------

def moefr_layer(mm):
    """The layer on moefr.torch_npu, or (None, why) when the ops it needs are missing."""
    try:
        from moefr import torch_npu as tnpu
        from moefr.torch_npu import npu_grouped_matmul, npu_swiglu
    except ImportError as e:
        return None, "moefr side skipped: %s (PYTHONPATH: <checkout>/python, or the install tree's dist-packages)" % e
    except Exception as e:  # the library itself did not load
        return None, "moefr side skipped: moefr.torch_npu did not load: %s" % e

    def gmm(x, w, counts):
        # torch_npu.npu_grouped_matmul(x: list, weight: list, *, group_list, split_item, group_type,
        # group_list_type): one x (M, K), one weight (E, K, N), per-expert counts, one out (M, N)
        return npu_grouped_matmul([x], [w], group_list=counts, split_item=3, group_type=0, group_list_type=1)[0]

    def layer(x, w_gate, w13, w2, k):
        E = w13.shape[0]
        logits = mm(x, w_gate)
        _, idx, _ = tnpu.npu_moe_gating_top_k_softmax(logits, k=k)                   # (T, k) int32
        probs = torch.softmax(logits.float(), dim=-1).gather(1, idx.long()).to(x.dtype)
        xs, sorted_idx = tnpu.npu_moe_token_permute(x, idx)                          # (T*k, H)
        counts = torch.bincount(idx.reshape(-1).long(), minlength=E)                # int64 (E,)
        h = gmm(xs, w13, counts)                                                     # (T*k, 2F)
        a = npu_swiglu(h, dim=-1)                                                    # (T*k, F)
        ys = gmm(a, w2, counts)                                                      # (T*k, H)
        return tnpu.npu_moe_token_unpermute(ys, sorted_idx, probs)                   # (T, H)
    return layer, None


# ---------------------------------------------------------------------------------------------
# the timing harness: layer implementations as functions layer(x, w_gate, w13, w2, k) -> out
# ---------------------------------------------------------------------------------------------

def make_problem(T, H, E, Fh, dtype, seed=1234):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g)
    w_gate = torch.randn(H, E, generator=g) / H ** 0.5
    w13 = torch.randn(E, H, 2 * Fh, generator=g) / H ** 0.5
    w2 = torch.randn(E, Fh, H, generator=g) / Fh ** 0.5
    gy = torch.randn(T, H, generator=g)
    leaves = [t.to(dtype).requires_grad_(True) for t in (x, w_gate, w13, w2)]
    return leaves, gy.to(dtype)


def step(layer, leaves, gy, k):
    """Seconds for one forward + backward; the output and the gradients (detached)."""
    for t in leaves:
        t.grad = None
    t0 = time.perf_counter()
    out = layer(*leaves, k)
    out.backward(gy)
    t = time.perf_counter() - t0
    return t, out.detach(), [t.grad for t in leaves]


def time_pairs(impls, leaves, gy, k, reps):
    """impls: [(name, layer)]. One warm-up step each (an implementation whose warm-up raises is
    reported and dropped), then `reps` rounds of one step of each in order; returns
    {name: [seconds]} and the last round's outputs and gradients per name."""
    ok = []
    for n, layer in impls:
        try:
            step(layer, leaves, gy, k)
            ok.append((n, layer))
        except Exception as e:  # e.g. an op without the backward this step needs
            print("%s side failed, not timed: %s: %s" % (n, type(e).__name__, e))
    impls = ok
    times = {n: [] for n, _ in impls}
    last = {}
    for _ in range(reps):
        for n, layer in impls:
            t, out, grads = step(layer, leaves, gy, k)
            times[n].append(t)
            last[n] = (out, grads)
    return times, last


def rel_diff(a, b):
    a, b = a.float(), b.float()
    return ((a - b).abs().max() / a.abs().max().clamp_min(1e-30)).item()


def same_routing(x, w_gate, k, mm_torch, mm_moefr):
    """Per token, whether the torch side (its logits, torch.topk) and moefr's gating (its
    logits, npu_moe_gating_top_k_softmax) chose the same k experts. bf16 logits tie often, and
    torch.topk and the gating may break a tie differently; a token routed to other experts has
    another output row, which is no error of either side."""
    from moefr import torch_npu as tnpu
    with torch.no_grad():
        t_ids = torch.softmax(mm_torch(x, w_gate).float(), dim=-1).topk(k, dim=-1)[1]
        _, m_ids, _ = tnpu.npu_moe_gating_top_k_softmax(mm_moefr(x, w_gate), k=k)
    return (t_ids.sort(dim=1)[0] == m_ids.long().sort(dim=1)[0]).all(dim=1)


def native_bf16_gflops(threads):
    a = torch.randn(256, 1024).to(torch.bfloat16)
    b = torch.randn(1024, 1024).to(torch.bfloat16)
    torch.matmul(a, b)
    t0 = time.perf_counter()
    torch.matmul(a, b)
    return 2 * 256 * 1024 * 1024 / (time.perf_counter() - t0) / 1e9


def torch_blas():
    """The BLAS libraries this process has mapped after a torch fp32 matmul (what torch multiplies
    on: libblas.so.3 is whatever Debian's alternatives point it at, e.g. OpenBLAS pthread or BLIS's
    serial build, one core)."""
    torch.matmul(torch.ones(64, 64), torch.ones(64, 64))
    seen = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if ("blas" in path or "blis" in path) and path not in seen:
                    seen.append(path)
    except OSError:
        pass
    return ", ".join(os.path.realpath(p) for p in seen) or "none found"


def measured_peak(threads):
    """(fp32, bf16) GFLOP/s from `moefr_bench --peak` (bench/peak.c) on `threads` threads: the
    moefr_bench next to MOEFR_LIBRARY's library, or build/moefr_bench of this checkout; bf16 is 0
    without VDPBF16PS. None when no moefr_bench is found or it prints no figure."""
    import re
    import subprocess
    lib = os.environ.get("MOEFR_LIBRARY")
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "moefr_bench")
    for exe in ([os.path.join(os.path.dirname(os.path.abspath(lib)), "moefr_bench")] if lib else []) + [here]:
        if not os.access(exe, os.X_OK):
            continue
        env = dict(os.environ, MOEFR_NUM_THREADS=str(threads))
        try:
            out = subprocess.run([exe, "--peak"], env=env, capture_output=True, text=True, timeout=120).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        last = [l for l in out.splitlines() if l.strip().startswith("%d thread(s)" % threads)]
        f = re.search(r"fp32 ([0-9.]+) GFLOP/s", last[-1]) if last else None
        if f:
            b = re.search(r"bf16 ([0-9.]+) GFLOP/s", last[-1])
            return float(f.group(1)), float(b.group(1)) if b else 0.0
    return None


def library_threads():
    try:
        from moefr._lib import library
        return int(library().moefrNumThreads())
    except Exception:
        v = os.environ.get("MOEFR_NUM_THREADS")
        return int(v) if v and v.isdigit() else len(os.sched_getaffinity(0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--topk", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=1408)
    ap.add_argument("--dtype", choices=["fp32", "bf16", "both"], default="both")
    ap.add_argument("--reps", type=int, default=3, help="timed rounds (median), after one warm-up round")
    ap.add_argument("--threads", type=int, default=0, help="default: the library's thread count")
    ap.add_argument("--native-bf16", action="store_true", help="torch side: torch's own bf16 matmul")
    a = ap.parse_args()
    threads = a.threads or library_threads()
    torch.set_num_threads(threads)
    T, H, E, K, Fh = a.tokens, a.hidden, a.experts, a.topk, a.ffn
    flop = 3 * 2 * T * K * (H * 2 * Fh + Fh * H)  # the expert GEMMs: forward + 2x backward
    print("MoE layer step (forward + backward) on CPU: %s; torch %s, %d threads (both sides)" %
          (cpu_name(), torch.__version__, threads))
    print("BLAS mapped in this process (torch's fp32 matmul, and moefr's): %s" % torch_blas())
    print("E=%d experts, top-%d, %d tokens, hidden %d, ffn %d: %d rows; expert GEMMs %.1f GFLOP per step; "
          "median of %d rounds (one torch step, one moefr step each) after a warm-up round" %
          (E, K, T, H, Fh, T * K, flop / 1e9, a.reps))
    dtypes = {"fp32": [torch.float32], "bf16": [torch.bfloat16],
              "both": [torch.float32, torch.bfloat16]}[a.dtype]
    if torch.bfloat16 in dtypes:
        print("torch's own bf16 matmul here: %.1f GFLOP/s (256x1024 @ 1024x1024); %s" %
              (native_bf16_gflops(threads), "the bf16 torch side uses it (--native-bf16)" if a.native_bf16 else
               "bf16 rows: torch widens to fp32 for its matmuls, torch-bf16 uses it"))
    peak = measured_peak(threads)
    if peak:
        print("arithmetic peak measured (moefr_bench --peak, %d threads): fp32 FMA %.1f GFLOP/s%s; 'bound' below = the "
              "torch step / the expert GEMMs' time at that peak (bf16: the faster of the two), the most any layer "
              "with these GEMMs could gain over that torch side, whatever else it did in no time" %
              (threads, peak[0], ", bf16 VDPBF16PS %.1f GFLOP/s" % peak[1] if peak[1] else ""))
    skipped = None
    for dt in dtypes:
        dn = "fp32" if dt == torch.float32 else "bf16"
        mm = matmul_fn(dt, a.native_bf16)
        mms = {"torch-bf16" if dt == torch.bfloat16 and a.native_bf16 else "torch": mm}  # torch side: its matmul
        if dt == torch.bfloat16 and not a.native_bf16:
            mms["torch-bf16"] = matmul_fn(dt, True)
        impls = [(n, torch_layer(m)) for n, m in mms.items()]
        ml, why = moefr_layer(mm)
        if ml is not None:
            impls.append(("moefr", ml))
        elif skipped is None:
            skipped = why
            print(why)
        leaves, gy = make_problem(T, H, E, Fh, dt)
        times, last = time_pairs(impls, leaves, gy, K, a.reps)
        for tn, _ in impls:
            if tn == "moefr" or tn not in times:
                continue
            tt = statistics.median(times[tn]) * 1e3
            line = "%s  %-10s %9.1f ms/step (%5.1f GFLOP/s)" % (dn, tn, tt, flop / tt / 1e6)
            if peak:
                top = max(peak) if dt == torch.bfloat16 else peak[0]
                line += "  bound %.2f" % (tt / (flop / top / 1e6))
            if "moefr" in times:
                mt = statistics.median(times["moefr"]) * 1e3
                ratio = statistics.median([t / m for t, m in zip(times[tn], times["moefr"])])
                (o1, g1), (o2, g2) = last[tn], last["moefr"]
                same = same_routing(leaves[0].detach(), leaves[1].detach(), K, mms[tn], mm)
                line += "  moefr %9.1f ms/step (%5.1f GFLOP/s)  ratio %s/moefr %.2f" % (mt, flop / mt / 1e6, tn, ratio)
                if bool(same.any()):
                    line += "  out diff %.1e  grad x diff %.1e" % (rel_diff(o1[same], o2[same]), rel_diff(g1[0][same], g2[0][same]))
                if not bool(same.all()):
                    line += " (over the %d of %d tokens both sides routed alike: tied logits)" % (int(same.sum()), T)
            else:
                line += "  moefr not timed"
            print(line)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
