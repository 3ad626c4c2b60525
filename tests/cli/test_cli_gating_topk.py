#!/usr/bin/python3
"""test_cli_gating_topk.py - `moefr gating-topk` and `moefr fused-topk` end to end: numpy-written .npy
inputs (fp32), a float64 NumPy oracle on grid logits (s near 8^-j: ties exact, other decisions far
apart), the mapping lookup, exit codes 1 (operator rejects), 2 (usage) and no outputs after a failure.

usage: test_cli_gating_topk.py MOEFR_EXE WORKDIR"""
import os
import shutil
import subprocess
import sys

import numpy as np

EXE, WORK = sys.argv[1], sys.argv[2]
EMU = [os.environ["MOEFR_TEST_EMULATOR"]] if os.environ.get("MOEFR_TEST_EMULATOR") else []
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
rng = np.random.default_rng()
fails = 0


def check(cond, what):
    global fails
    if not cond:
        print("FAIL:", what)
        fails += 1


def run(cmd, *args):
    return subprocess.run([*EMU, EXE, cmd, *args], capture_output=True, text=True)


def ref(x, bias, k, kg, G, mode, fused=False, tn=2):
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    b = s + bias
    R, E = x.shape
    P = E // G
    score = -np.sort(-b.reshape(R, G, P), axis=-1)[..., :(tn if fused else (2 if mode else 1))].sum(-1)
    kept = np.zeros((R, G), bool)
    order = np.argsort(-score, axis=-1, kind="stable")[:, :kg]
    np.put_along_axis(kept, order, True, axis=-1)
    kept = np.repeat(kept, P, axis=1)
    cand = np.where(kept, b, b * 0.0 if fused else -np.inf)
    picks = np.argsort(-cand, axis=-1, kind="stable")[:, :k]
    y = np.take_along_axis(s, picks, axis=-1)
    return y, picks


R, E = 33, 96
j = rng.integers(1, 5, size=(R, E)).astype(np.float64)
t = 8.0 ** -j
x = np.log(t / (1 - t)).astype(np.float32)
bias = np.full(E, 0.5, np.float32)
np.save(os.path.join(WORK, "x.npy"), x)
np.save(os.path.join(WORK, "b.npy"), bias)

# gating-topk: sigmoid, 12 groups of 8, the best 3 by top-2 sums, top-7, scaled
out = os.path.join(WORK, "o1")
r = run("gating-topk", "--x", os.path.join(WORK, "x.npy"), "--bias", os.path.join(WORK, "b.npy"), "--k", "7",
        "--k-group", "3", "--group-count", "12", "--group-select-mode", "1", "--norm-type", "1", "--out-flag",
        "--scale", "2.5", "--out", out)
check(r.returncode == 0, "gating-topk: exit %d %s" % (r.returncode, r.stderr))
if r.returncode == 0:
    ry, rp = ref(x.astype(np.float64), bias.astype(np.float64), 7, 3, 12, 1)
    ry = ry / (ry.sum(1, keepdims=True) + 1e-20) * 2.5
    e = np.load(os.path.join(out, "expert_idx.npy"))
    y = np.load(os.path.join(out, "y.npy"))
    n = np.load(os.path.join(out, "norm_out.npy"))
    check(np.array_equal(e, rp), "gating-topk picks")
    check(np.abs(y - ry).max() <= 1e-5, "gating-topk y")
    check(np.abs(n - 1 / (1 + np.exp(-x.astype(np.float64)))).max() <= 1e-6, "gating-topk norm_out")

# fused-topk with a mapping: top-3 sums, 2 of 12 groups, top-9 (past the kept experts' 16: no)
mn = rng.integers(0, 4, size=E).astype(np.int32)
mt = rng.integers(0, 500, size=(E, 3)).astype(np.int32)
np.save(os.path.join(WORK, "mn.npy"), mn)
np.save(os.path.join(WORK, "mt.npy"), mt)
out = os.path.join(WORK, "o2")
r = run("fused-topk", "--x", os.path.join(WORK, "x.npy"), "--add-num", os.path.join(WORK, "b.npy"), "--k", "9",
        "--group-num", "12", "--group-topk", "2", "--top-n", "3", "--norm", "--scale", "1.5",
        "--mapping-num", os.path.join(WORK, "mn.npy"), "--mapping-table", os.path.join(WORK, "mt.npy"), "--out", out)
check(r.returncode == 0, "fused-topk: exit %d %s" % (r.returncode, r.stderr))
if r.returncode == 0:
    ry, rp = ref(x.astype(np.float64), bias.astype(np.float64), 9, 2, 12, 0, fused=True, tn=3)
    ry = ry / ry.sum(1, keepdims=True) * 1.5
    rows = np.arange(R).reshape(R, 1)
    m = mn[rp]
    off = np.where(m == 0, 0, rows % np.maximum(m, 1))
    check(np.array_equal(np.load(os.path.join(out, "indices.npy")), mt[rp, off]), "fused-topk indices")
    check(np.abs(np.load(os.path.join(out, "y.npy")) - ry).max() <= 1e-5, "fused-topk y")

# rejected by the operator (exit 1, no outputs), usage errors (exit 2)
out = os.path.join(WORK, "o3")
r = run("gating-topk", "--x", os.path.join(WORK, "x.npy"), "--k", "7", "--k-group", "13", "--group-count", "12",
        "--out", out)
check(r.returncode == 1 and "561002" in r.stderr and not os.path.exists(os.path.join(out, "y.npy")),
      "gating-topk kGroup > groupCount: exit %d %s" % (r.returncode, r.stderr))
r = run("gating-topk", "--x", os.path.join(WORK, "x.npy"), "--k", "7", "--scale", "x", "--out", out)
check(r.returncode == 2, "gating-topk --scale x: exit %d" % r.returncode)
r = run("fused-topk", "--x", os.path.join(WORK, "x.npy"), "--k", "7", "--out", out)
check(r.returncode == 2, "fused-topk without --add-num: exit %d" % r.returncode)
print("test_cli_gating_topk: %d failures" % fails)
sys.exit(1 if fails else 0)
