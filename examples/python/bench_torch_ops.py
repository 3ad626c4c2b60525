"""bench_torch_ops.py - what the Python layers cost, measured in one run on this machine:

1. the torch.ops.npu operator against the direct call of the same moefr function (the ctypes call
   without the dispatcher), tiny shapes so the layers dominate: median per-call time of each, over
   interleaved rounds, and the difference;
2. `import moefr` (and `from moefr import torch_npu`, which imports torch and registers the operators)
   in a fresh interpreter, against the interpreter's own start (`python -c pass`), medians;
3. with --pip: `pip wheel` of the checkout, no build isolation, a fresh build directory (the build of
   libmoefr and the CLI: what `pip install .` spends on top of resolving).

    python examples/python/bench_torch_ops.py [--rounds 15] [--calls 200] [--pip]

Run with PyTorch >= 2.4 (the operators exist there only)."""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

from moefr import _npu_gmm, _npu_mlp, _npu_permute, torch_npu  # noqa: E402
from moefr import torch_npu as tn  # noqa: E402


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def per_call(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


_FLOOR = torch.library.Library("moefr_bench", "FRAGMENT")


def floor_op(op, args, kwargs):
    """An operator with op's schema whose CPU kernel only returns a result computed once: what
    PyTorch's dispatcher and the Python kernel crossing cost for this schema, whatever the kernel does."""
    name = "floor_" + op._name.split("::")[1].replace(".", "_")
    if not hasattr(torch.ops.moefr_bench, name):
        schema = str(op._schema).split("::", 1)[1]
        schema = name + schema[schema.index("("):]
        _FLOOR.define(schema)
        result = op(*args, **kwargs)
        _FLOOR.impl(name, lambda *a, **k: result, "CPU")
    return getattr(torch.ops.moefr_bench, name).default


def cases():
    torch.manual_seed(0)
    x = torch.randn(4, 32).bfloat16()
    tok = torch.randn(8, 16).bfloat16()
    ids = torch.randint(0, 4, (8, 2))
    out, si = tn.npu_moe_token_permute(tok, ids)
    probs = torch.rand(8, 2).bfloat16()
    gx = [torch.randn(6, 16).bfloat16()]
    gw = [torch.randn(3, 16, 8).bfloat16()]
    gl = torch.tensor([2, 1, 3])
    gkw = dict(group_list=gl, split_item=3, group_type=0, group_list_type=1)
    table = [
        ("npu_swiglu (4x32 bf16)", _npu_mlp.npu_swiglu, torch.ops.npu.npu_swiglu.default, (x,), {}),
        ("npu_moe_token_permute (8 tokens, k=2, H=16)", _npu_permute.npu_moe_token_permute,
         torch.ops.npu.npu_moe_token_permute.default, (tok, ids), {}),
        ("npu_moe_token_unpermute (8 tokens, k=2)", _npu_permute.npu_moe_token_unpermute,
         torch.ops.npu.npu_moe_token_unpermute.default, (out, si, probs), {}),
        ("npu_grouped_matmul (6x16 @ 3x16x8, split 3)", _npu_gmm.npu_grouped_matmul,
         torch.ops.npu.npu_grouped_matmul.default, (gx, gw), gkw),
    ]
    out = []
    for name, direct, op, args, kw in table:
        floor = floor_op(op, args, kw)
        out.append((name, lambda d=direct, a=args, k=kw: d(*a, **k),
                    lambda o=getattr(torch.ops.npu, op._name.split("::")[1]), a=args, k=kw: o(*a, **k),
                    lambda f=floor, a=args, k=kw: f(*a, **k)))
    return out


def interpreter_ms(code, runs):
    times = []
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--imports", type=int, default=9)
    ap.add_argument("--pip", action="store_true")
    a = ap.parse_args()
    if not torch_npu.TORCH_OPS:
        sys.exit("bench_torch_ops: PyTorch %s has no torch.ops.npu path (>= 2.4 needed)" % torch.__version__)
    import moefr
    print("CPU: %s, %d threads for moefr, PyTorch %s, moefr %s (%s)" % (
        cpu_name(), moefr._lib.library().moefrNumThreads(), torch.__version__, moefr.version(), moefr.isa()))
    print("\n1. operator against direct call, no grad: median of %d rounds x %d calls (us per call)"
          % (a.rounds, a.calls))
    print("(floor: an operator of the same schema whose kernel returns a stored result: PyTorch's own cost)")
    print("%-46s %9s %9s %9s %9s" % ("call", "direct", "op", "op-direct", "floor"))
    print("(op-direct: the median of each round's difference)")
    with torch.no_grad():
        for name, direct, op, floor in cases():
            direct(), op(), floor()  # warm
            d, o, f = [], [], []
            for _ in range(a.rounds):
                d.append(per_call(direct, a.calls))
                o.append(per_call(op, a.calls))
                f.append(per_call(floor, a.calls))
            md, mo, mf = (statistics.median(v) * 1e6 for v in (d, o, f))
            diff = statistics.median([(oi - di) * 1e6 for oi, di in zip(o, d)])  # per round: same conditions
            print("%-46s %9.1f %9.1f %9.1f %9.1f" % (name, md, mo, diff, mf))

    print("\n2. interpreter start and import, median of %d fresh interpreters each, interleaved (ms)" % a.imports)
    runs = {c: [] for c in ("pass", "import moefr", "import torch", "from moefr import torch_npu")}
    for _ in range(a.imports):
        for c in runs:
            runs[c].append(interpreter_ms(c, 1))
    base, m, t, tn_ms = (statistics.median(v) for v in runs.values())
    print("  python -c pass                  %7.1f" % base)
    print("  import moefr                    %7.1f  (+%.1f over pass)" % (m, m - base))
    print("  import torch                    %7.1f" % t)
    print("  from moefr import torch_npu     %7.1f  (+%.1f over import torch: the operators' registration)"
          % (tn_ms, tn_ms - t))

    if a.pip:
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", d, "--config-settings=build-dir=" + os.path.join(d, "build"), ROOT],
                           check=True)
            print("\n3. pip wheel of the checkout, fresh build directory: %.1f s" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
