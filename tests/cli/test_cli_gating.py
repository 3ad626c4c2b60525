#!/usr/bin/python3
"""test_cli_gating.py - `moefr gating` end to end: numpy-written .npy inputs
(fp32, fp16, bf16 as <u2 bits), a float64 NumPy oracle (softmax over the
experts, top-k by (value desc, expert asc), rowIdx = k*R + r, finished rows
-> E; V2 renorm 1 = top-k of the logits then softmax over the k), the
softmax output, exit codes 1 (operator rejects k), 2 (usage) and 3 (file),
and no output files left behind by a failed run.

usage: test_cli_gating.py MOEFR_EXE WORKDIR"""
import os
import shutil
import subprocess
import sys

import numpy as np

EXE, WORK = sys.argv[1], sys.argv[2]
# Under make test-aarch64 the CLI is an aarch64 binary: run it through the emulator.
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


def run(*args):
    return subprocess.run([*EMU, EXE, "gating", *args], capture_output=True, text=True)


def bf16_bits(a):
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def oracle(x, k, fin, renorm):
    R = x.shape[0]
    y = np.zeros((R, k))
    idx = np.zeros((R, k), dtype=np.int64)
    for r in range(R):
        v = x[r].astype(np.float64)
        if renorm:
            order = sorted(range(len(v)), key=lambda e: (-v[e], e))[:k]
            t = v[order]
            p = np.exp(t - t.max())
            y[r] = p / p.sum()
        else:
            p = np.exp(v - v.max())
            p /= p.sum()
            order = sorted(range(len(v)), key=lambda e: (-p[e], e))[:k]
            y[r] = p[order]
        idx[r] = order
        if fin is not None and fin[r]:
            idx[r] = x.shape[1]
    return y, idx


case = 0
for dt in ("fp32", "fp16", "bf16"):
    for mode in ("v1", "v2", "v2sm", "renorm"):
        case += 1
        R, E, k = int(rng.integers(1, 40)), int(rng.integers(3, 70)), 0
        k = int(rng.integers(1, E + 1))
        grid = rng.integers(-12, 13, size=(R, E)) / 4.0  # exact in every dtype, ties, values >= e^0.25 apart
        d = os.path.join(WORK, "c%d" % case)
        os.makedirs(d)
        xf, ff, out = os.path.join(d, "x.npy"), os.path.join(d, "fin.npy"), os.path.join(d, "out")
        if dt == "fp32":
            xs = grid.astype(np.float32)
            np.save(xf, xs)
        elif dt == "fp16":
            xs = grid.astype(np.float16)
            np.save(xf, xs)
        else:
            b = bf16_bits(grid)
            xs = bf16_value(b)
            np.save(xf, b)
        fin = (rng.integers(0, 3, size=R) == 0).astype(np.int32)
        np.save(ff, fin)
        args = ["--x", xf, "--k", str(k), "--finished", ff, "--out", out]
        if dt == "bf16":
            args += ["--dtype", "bf16"]
        if mode == "v2":
            args += ["--renorm", "0"]
        if mode == "v2sm":
            args += ["--softmax-out"]
        if mode == "renorm":
            args += ["--renorm", "1"]
        p = run(*args)
        check(p.returncode == 0, "%s %s: exit %d: %s" % (dt, mode, p.returncode, p.stderr))
        if p.returncode:
            continue
        y = np.load(os.path.join(out, "y.npy"))
        if dt == "bf16":
            check(y.dtype == np.uint16, "bf16 y dtype %s" % y.dtype)
            y = bf16_value(y)
        else:
            check(y.dtype == xs.dtype, "%s y dtype %s" % (dt, y.dtype))
        e = np.load(os.path.join(out, "expert_idx.npy"))
        ry, ri = oracle(xs, k, fin, mode == "renorm")
        tol = {"fp32": 1e-6, "fp16": 1e-3, "bf16": 8e-3}[dt]
        check(y.shape == (R, k) and np.all(np.abs(y.astype(np.float64) - ry) <= tol * ry + 1e-7),
              "%s %s: y differs by %g" % (dt, mode, np.max(np.abs(y.astype(np.float64) - ry))))
        check(e.dtype == np.int32 and np.array_equal(e, ri), "%s %s: expert_idx differs" % (dt, mode))
        names = sorted(os.listdir(out))
        if mode == "v1":
            ridx = np.load(os.path.join(out, "row_idx.npy"))
            want = np.arange(k)[None, :] * R + np.arange(R)[:, None]
            check(np.array_equal(ridx, want), "%s: row_idx differs" % dt)
            check(names == ["expert_idx.npy", "row_idx.npy", "y.npy"], "v1 files %s" % names)
        elif mode == "v2sm":
            sm = np.load(os.path.join(out, "softmax_result.npy"))
            v = xs.astype(np.float64)
            ref = np.exp(v - v.max(axis=1, keepdims=True))
            ref /= ref.sum(axis=1, keepdims=True)
            check(sm.dtype == np.float32 and np.all(np.abs(sm - ref) <= 1e-6 * ref + 1e-30), "%s: softmax differs" % dt)
        else:
            check(names == ["expert_idx.npy", "y.npy"], "%s %s files %s" % (dt, mode, names))

# exit codes and no partial outputs
d = os.path.join(WORK, "errors")
os.makedirs(d)
xf = os.path.join(d, "x.npy")
np.save(xf, np.zeros((4, 6), dtype=np.float32))
bad_out = os.path.join(d, "out_bad")
p = run("--x", xf, "--k", "7", "--out", bad_out)
check(p.returncode == 1 and "k must be" in p.stderr, "k > E: exit %d %s" % (p.returncode, p.stderr))
check(not os.path.exists(bad_out) or os.listdir(bad_out) == [], "a rejected run left files")
p = run("--x", xf, "--k", "2", "--renorm", "2", "--out", bad_out)
check(p.returncode == 1 and "renorm" in p.stderr, "renorm 2: exit %d %s" % (p.returncode, p.stderr))
p = run("--x", xf, "--out", bad_out)
check(p.returncode == 2, "missing --k: exit %d" % p.returncode)
p = run("--x", xf, "--k", "two", "--out", bad_out)
check(p.returncode == 2, "bad --k: exit %d" % p.returncode)
p = run("--x", os.path.join(d, "missing.npy"), "--k", "2", "--out", bad_out)
check(p.returncode == 3, "missing file: exit %d" % p.returncode)
np.save(os.path.join(d, "xi.npy"), np.zeros((4, 6), dtype=np.int32))
p = run("--x", os.path.join(d, "xi.npy"), "--k", "2", "--out", bad_out)
check(p.returncode == 3, "int32 x: exit %d" % p.returncode)
check(not os.path.exists(bad_out) or os.listdir(bad_out) == [], "a failed run left files")
# the shared option rules of tools/cli.h: --finished must be <i4, a flag takes no
# value, --name=VALUE works, -v prints the timing line; against a fresh oracle
np.save(os.path.join(d, "ff.npy"), np.zeros(4, dtype=np.float32))
p = run("--x", xf, "--k", "2", "--finished", os.path.join(d, "ff.npy"), "--out", bad_out)
check(p.returncode == 3 and "--finished" in p.stderr, "float32 finished: exit %d %s" % (p.returncode, p.stderr))
p = run("--x", xf, "--k", "2", "--softmax-out=1", "--out", bad_out)
check(p.returncode == 2 and "takes no value" in p.stderr, "--softmax-out=1: exit %d %s" % (p.returncode, p.stderr))
check(not os.path.exists(bad_out) or os.listdir(bad_out) == [], "a failed run left files")
R, E = int(rng.integers(1, 20)), int(rng.integers(2, 30))
k = int(rng.integers(1, E + 1))
xs = (rng.integers(-12, 13, size=(R, E)) / 4.0).astype(np.float32)
np.save(os.path.join(d, "xv.npy"), xs)
good = os.path.join(d, "out_eq")
p = run("-v", "--x=" + os.path.join(d, "xv.npy"), "--k=%d" % k, "--out=" + good)
check(p.returncode == 0 and "aclnnMoeGatingTopKSoftmax" in p.stderr and "kernel path" in p.stderr,
      "--name=VALUE / -v: exit %d %s" % (p.returncode, p.stderr))
if p.returncode == 0:
    ry, ri = oracle(xs, k, None, False)
    y, e = np.load(os.path.join(good, "y.npy")), np.load(os.path.join(good, "expert_idx.npy"))
    check(y.shape == (R, k) and np.all(np.abs(y - ry) <= 1e-6 * ry + 1e-7) and np.array_equal(e, ri),
          "--name=VALUE run differs from the oracle")
    check(sorted(os.listdir(good)) == ["expert_idx.npy", "row_idx.npy", "y.npy"], "--name=VALUE files")

print("test_cli_gating: %d cases, %d failures" % (case, fails))
sys.exit(1 if fails else 0)
