#!/usr/bin/python3
"""test_cli_mlp.py - `moefr swiglu` and `moefr gmm` end to end: numpy-written
.npy inputs (fp32, fp16, bf16 as <u2 bits; the group list <i8), float64 NumPy
references from the rounded inputs:
  swiglu: out = silu(A) * B for the halves A, B of x along dim, and with
          --grad-y the gradient of x, for several dims;
  gmm:    group type 0 (cumulative and counts, an empty group, rows past the
          total zero), 2 (x given as its (K, M) transpose) and -1, in fp16 and
          bf16, and fp32 with MOEFR_SOC=ascend910b;
exit codes 1 (fp32 on the default Ascend 950 rules, an odd split), 2 (usage)
and 3 (file), and no output file left behind by a failed run.

Tolerances: elementwise fp32 1e-5, fp16 2e-3, bf16 1.6e-2 relative, times
max(1, |ref|); a GEMM of K terms K * 2^-24 * sum|a||b| (fp32 accumulation,
any order) plus one rounding to the output's dtype.

usage: test_cli_mlp.py MOEFR_EXE WORKDIR"""
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
cases = 0

TOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1.6e-2}
UNIT = {"fp32": 2.0 ** -24, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}  # one rounding, relative
TINY = {"fp32": 2.0 ** -150, "fp16": 2.0 ** -25, "bf16": 2.0 ** -134}  # half the smallest subnormal


def check(cond, what):
    global fails
    if not cond:
        print("FAIL:", what)
        fails += 1


def run(cmd, *args, soc=None):
    env = dict(os.environ)
    env.pop("MOEFR_SOC", None)
    if soc:
        env["MOEFR_SOC"] = soc
    return subprocess.run([*EMU, EXE, cmd, *args], capture_output=True, text=True, env=env)


def bf16_bits(a):
    u = np.asarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def save(path, a, dt):
    """Saves a (float64) in dt; returns the float64 values the file holds."""
    if dt == "fp32":
        v = a.astype(np.float32)
        np.save(path, v)
    elif dt == "fp16":
        v = a.astype(np.float16)
        np.save(path, v)
    else:
        b = bf16_bits(a)
        np.save(path, b)
        v = bf16_value(b)
    return v.astype(np.float64)


def load(path, dt, shape, what):
    """Loads an output of dtype dt as float64, checking its dtype and shape."""
    a = np.load(path)
    want = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}[dt]
    check(a.dtype == want, "%s: dtype %s, want %s" % (what, a.dtype, np.dtype(want)))
    check(a.shape == tuple(shape), "%s: shape %s, want %s" % (what, a.shape, tuple(shape)))
    if dt == "bf16":
        a = bf16_value(a)
    return a.astype(np.float64)


def dtype_args(dt):
    return ["--dtype", "bf16"] if dt == "bf16" else []


def no_files(d):
    return not os.path.exists(d) or os.listdir(d) == []


# ---------------------------------------------------------------- swiglu

def silu_parts(x, dim):
    a, b = np.split(x, 2, axis=dim)
    s = 1.0 / (1.0 + np.exp(-a))
    return a, b, s


for dt in ("fp32", "fp16", "bf16"):
    for shape, dim in (((5, 8), -1), ((3, 6, 4), 1), ((4, 6), 0), ((2, 3, 10), None), ((2, 4, 6), -2),
                       ((1, 34), -1), ((3, 2, 2, 4), 3)):
        cases += 1
        d = os.path.join(WORK, "sg%d" % cases)
        os.makedirs(d)
        x = save(os.path.join(d, "x.npy"), rng.uniform(-4, 4, size=shape), dt)
        k = -1 if dim is None else dim
        a, b, s = silu_parts(x, k)
        ref = a * s * b
        dim_args = [] if dim is None else ["--dim", str(dim)]
        out = os.path.join(d, "fwd")
        p = run("swiglu", "--x", os.path.join(d, "x.npy"), *dim_args, *dtype_args(dt), "--out", out)
        check(p.returncode == 0, "swiglu %s %s dim %s: exit %d: %s" % (dt, shape, dim, p.returncode, p.stderr))
        if p.returncode == 0:
            y = load(os.path.join(out, "out.npy"), dt, ref.shape, "swiglu %s %s" % (dt, shape))
            if y.shape == ref.shape:
                err = np.abs(y - ref) / np.maximum(1, np.abs(ref))
                check(np.all(err <= TOL[dt]), "swiglu %s %s dim %s: error %g" % (dt, shape, dim, err.max()))
            check(os.listdir(out) == ["out.npy"], "swiglu files %s" % os.listdir(out))
        # backward: grad-y of out's shape
        g = save(os.path.join(d, "gy.npy"), rng.uniform(-2, 2, size=ref.shape), dt)
        ga = g * (s * (1 - s) * a + s) * b
        gb = g * s * a
        gref = np.concatenate([ga, gb], axis=k)
        out = os.path.join(d, "bwd")
        p = run("swiglu", "--x", os.path.join(d, "x.npy"), "--grad-y", os.path.join(d, "gy.npy"), *dim_args,
                *dtype_args(dt), "--out", out)
        check(p.returncode == 0, "swiglu grad %s %s dim %s: exit %d: %s" % (dt, shape, dim, p.returncode, p.stderr))
        if p.returncode == 0:
            gx = load(os.path.join(out, "x_grad.npy"), dt, x.shape, "swiglu grad %s %s" % (dt, shape))
            if gx.shape == x.shape:
                err = np.abs(gx - gref) / np.maximum(1, np.abs(gref))
                check(np.all(err <= TOL[dt]), "swiglu grad %s %s dim %s: error %g" % (dt, shape, dim, err.max()))
            check(os.listdir(out) == ["x_grad.npy"], "swiglu grad files %s" % os.listdir(out))

# ---------------------------------------------------------------- gmm


def gemm_bound(dt, ref, absum, K):
    """|out - ref| allowed: fp32 accumulation of K terms (and the bias), then one rounding to dt."""
    acc = (K + 2) * 2.0 ** -24 * absum
    return acc + UNIT[dt] * (np.abs(ref) + acc) + TINY[dt]


def gmm_case(dt, gt, list_type, with_bias, soc=None):
    """One `moefr gmm` run against the float64 reference; returns nothing."""
    global cases
    cases += 1
    d = os.path.join(WORK, "gmm%d" % cases)
    os.makedirs(d)
    label = "gmm %s group type %d list type %d%s%s" % (dt, gt, list_type, " bias" if with_bias else "",
                                                       " " + soc if soc else "")
    bias_dt = "fp32" if dt == "bf16" else dt  # fp32 bias with bf16 x
    M, K, N, E = int(rng.integers(9, 24)), int(rng.integers(3, 40)), int(rng.integers(1, 20)), 4
    args = []
    if gt == 2:  # K split: counts over K with an empty group, total K
        counts = np.array([K // 3, 0, K - K // 3 - 2, 2], dtype=np.int64)
    elif gt == 0:  # M split: an empty group and rows past the total
        counts = np.array([3, 0, 4, M - 9], dtype=np.int64)
    if gt != -1:
        gl = counts if list_type == 1 else np.cumsum(counts)
        np.save(os.path.join(d, "gl.npy"), gl.astype("<i8"))
        args += ["--group-list", os.path.join(d, "gl.npy"), "--group-list-type", str(list_type)]
    args += ["--group-type", str(gt)]
    x = save(os.path.join(d, "xm.npy"), rng.uniform(-1, 1, size=(M, K)), dt)  # logical (M, K)
    if gt == 2:  # the file holds x's transpose, (K, M) in C order
        np.save(os.path.join(d, "x.npy"), np.ascontiguousarray(np.load(os.path.join(d, "xm.npy")).T))
    else:
        os.rename(os.path.join(d, "xm.npy"), os.path.join(d, "x.npy"))
    wshape = (E, K, N) if gt == 0 else (K, N)
    w = save(os.path.join(d, "w.npy"), rng.uniform(-1, 1, size=wshape), dt)
    b = None
    if with_bias:
        b = save(os.path.join(d, "b.npy"), rng.uniform(-1, 1, size=(E, N) if gt == 0 else (N,)), bias_dt)
        args += ["--bias", os.path.join(d, "b.npy")]
    if gt == 0:
        ref, absum = np.zeros((M, N)), np.zeros((M, N))
        start = 0
        for i in range(E):
            end = start + int(counts[i])
            ref[start:end] = x[start:end] @ w[i] + (b[i] if b is not None else 0)
            absum[start:end] = np.abs(x[start:end]) @ np.abs(w[i]) + (np.abs(b[i]) if b is not None else 0)
            start = end
        total = start
    elif gt == 2:
        ref, absum = np.zeros((E, M, N)), np.zeros((E, M, N))
        start = 0
        for i in range(E):
            end = start + int(counts[i])
            ref[i] = x[:, start:end] @ w[start:end]
            absum[i] = np.abs(x[:, start:end]) @ np.abs(w[start:end])
            start = end
    else:
        ref = x @ w + (b if b is not None else 0)
        absum = np.abs(x) @ np.abs(w) + (np.abs(b) if b is not None else 0)
    out = os.path.join(d, "out")
    p = run("gmm", "--x", os.path.join(d, "x.npy"), "--weight", os.path.join(d, "w.npy"), *args, *dtype_args(dt),
            "--out", out, soc=soc)
    check(p.returncode == 0, "%s: exit %d: %s" % (label, p.returncode, p.stderr))
    if p.returncode:
        return
    y = load(os.path.join(out, "out.npy"), dt, ref.shape, label)
    if y.shape != ref.shape:
        return
    err = np.abs(y - ref)
    bound = gemm_bound(dt, ref, absum, K)
    check(np.all(err <= bound), "%s: error %g over the bound (worst ratio %g)" % (label, err.max(),
                                                                                     (err / bound).max()))
    if gt == 0:
        check(np.all(y[total:] == 0), "%s: rows past the group list's total are not zero" % label)
    if gt == 2:
        check(np.all(y[1] == 0), "%s: the empty K group is not zero" % label)
    check(os.listdir(out) == ["out.npy"], "%s: files %s" % (label, os.listdir(out)))


for dt in ("fp16", "bf16"):
    for list_type in (0, 1):
        gmm_case(dt, 0, list_type, with_bias=list_type == 0)
        gmm_case(dt, 0, list_type, with_bias=list_type == 1)
        gmm_case(dt, 2, list_type, with_bias=False)
    gmm_case(dt, -1, 0, with_bias=False)
    gmm_case(dt, -1, 0, with_bias=True)
for gt in (0, 2, -1):
    gmm_case("fp32", gt, 0, with_bias=gt != 2, soc="ascend910b")
gmm_case("fp32", 0, 1, with_bias=False, soc="ascend910b")

# ---------------------------------------------------------------- errors: exit codes, no outputs
d = os.path.join(WORK, "errors")
os.makedirs(d)
bad_out = os.path.join(d, "out_bad")
x32, w32, gl = os.path.join(d, "x32.npy"), os.path.join(d, "w32.npy"), os.path.join(d, "gl.npy")
np.save(x32, rng.uniform(-1, 1, size=(6, 4)).astype(np.float32))
np.save(w32, rng.uniform(-1, 1, size=(2, 4, 3)).astype(np.float32))
np.save(gl, np.array([2, 6], dtype=np.int64))
# exit 1: FLOAT32 on the default (Ascend 950) rules, the library's message
p = run("gmm", "--x", x32, "--weight", w32, "--group-list", gl, "--out", bad_out)
check(p.returncode == 1 and "FLOAT32" in p.stderr and "MOEFR_SOC=ascend910b" in p.stderr
      and "aclnnGroupedMatmulV4" in p.stderr and len(p.stderr.strip().splitlines()) == 1,
      "gmm fp32 on 950: exit %d %s" % (p.returncode, p.stderr))
check(no_files(bad_out), "a rejected gmm run left files")
p = run("gmm", "--x", x32, "--weight", w32, "--group-list", gl, "--out", os.path.join(d, "out_a2"), soc="ascend910b")
check(p.returncode == 0 and os.listdir(os.path.join(d, "out_a2")) == ["out.npy"],
      "the same call with MOEFR_SOC=ascend910b: exit %d %s" % (p.returncode, p.stderr))
# exit 1: the K split without a group list; the weight's K does not match x's
x16 = os.path.join(d, "x16.npy")
np.save(x16, rng.uniform(-1, 1, size=(6, 4)).astype(np.float16))
np.save(os.path.join(d, "w16.npy"), rng.uniform(-1, 1, size=(2, 5, 3)).astype(np.float16))
p = run("gmm", "--x", x16, "--weight", os.path.join(d, "w16.npy"), "--group-list", gl, "--out", bad_out)
check(p.returncode == 1 and "--weight" in p.stderr, "gmm weight K mismatch: exit %d %s" % (p.returncode, p.stderr))
np.save(os.path.join(d, "wk.npy"), rng.uniform(-1, 1, size=(6, 3)).astype(np.float16))
p = run("gmm", "--x", x16, "--weight", os.path.join(d, "wk.npy"), "--group-type", "2", "--out", bad_out)
check(p.returncode == 1 and "groupListOptional" in p.stderr, "gmm K split without a list: exit %d %s"
      % (p.returncode, p.stderr))
# exit 1: swiglu with an odd size along dim
np.save(os.path.join(d, "xodd.npy"), np.zeros((3, 5), dtype=np.float32))
p = run("swiglu", "--x", os.path.join(d, "xodd.npy"), "--out", bad_out)
check(p.returncode == 1 and "even" in p.stderr, "swiglu odd dim: exit %d %s" % (p.returncode, p.stderr))
p = run("swiglu", "--x", os.path.join(d, "xodd.npy"), "--dim", "2", "--out", bad_out)
check(p.returncode == 1 and "--dim" in p.stderr, "swiglu dim out of range: exit %d %s" % (p.returncode, p.stderr))
check(no_files(bad_out), "a rejected swiglu run left files")
# exit 2: usage
p = run("gmm", "--x", x16, "--group-list", gl, "--out", bad_out)
check(p.returncode == 2 and "--weight" in p.stderr, "gmm without --weight: exit %d %s" % (p.returncode, p.stderr))
p = run("gmm", "--x", x16, "--weight", w32, "--group-type", "two", "--out", bad_out)
check(p.returncode == 2, "gmm --group-type two: exit %d" % p.returncode)
p = run("swiglu", "--x", x16, "--dim", "1.5", "--out", bad_out)
check(p.returncode == 2, "swiglu --dim 1.5: exit %d" % p.returncode)
p = run("swiglu", "--x", x16, "--out", bad_out, "extra")
check(p.returncode == 2, "swiglu extra argument: exit %d" % p.returncode)
p = run("swiglu", "--x", x16)
check(p.returncode == 2 and "--out" in p.stderr, "swiglu without --out: exit %d" % p.returncode)
# exit 3: files (the group list must be <i8, <i8 is taken nowhere else, <u2 needs --dtype bf16)
np.save(os.path.join(d, "gl4.npy"), np.array([2, 6], dtype=np.int32))
p = run("gmm", "--x", x16, "--weight", os.path.join(d, "w16.npy"), "--group-list", os.path.join(d, "gl4.npy"),
        "--out", bad_out)
check(p.returncode == 3 and "--group-list" in p.stderr and "<i8" in p.stderr,
      "int32 group list: exit %d %s" % (p.returncode, p.stderr))
p = run("swiglu", "--x", gl, "--out", bad_out)
check(p.returncode == 3 and "<i8" in p.stderr, "int64 swiglu x: exit %d %s" % (p.returncode, p.stderr))
np.save(os.path.join(d, "xu2.npy"), np.zeros((2, 4), dtype=np.uint16))
p = run("swiglu", "--x", os.path.join(d, "xu2.npy"), "--out", bad_out)
check(p.returncode == 3 and "bf16" in p.stderr, "<u2 without --dtype bf16: exit %d %s" % (p.returncode, p.stderr))
p = run("gmm", "--x", os.path.join(d, "missing.npy"), "--weight", w32, "--group-list", gl, "--out", bad_out)
check(p.returncode == 3, "gmm missing file: exit %d" % p.returncode)
check(no_files(bad_out), "a failed run left files")
# --help, -v and --name=VALUE
for cmd in ("swiglu", "gmm"):
    p = run(cmd, "--help")
    check(p.returncode == 0 and p.stdout.startswith("usage: moefr " + cmd), "%s --help: exit %d" % (cmd, p.returncode))
p = run("gmm", "-v", "--x=" + x16, "--weight=" + os.path.join(d, "wk.npy"), "--group-type=-1",
        "--out=" + os.path.join(d, "out_v"))
check(p.returncode == 1, "gmm -1 with weight K 6 for x K 4: exit %d %s" % (p.returncode, p.stderr))
np.save(os.path.join(d, "wv.npy"), rng.uniform(-1, 1, size=(4, 3)).astype(np.float16))
p = run("gmm", "-v", "--x=" + x16, "--weight=" + os.path.join(d, "wv.npy"), "--group-type=-1",
        "--out=" + os.path.join(d, "out_v"))
check(p.returncode == 0 and "aclnnGroupedMatmulV4" in p.stderr and "kernel path" in p.stderr,
      "gmm -v: exit %d %s" % (p.returncode, p.stderr))
p = run("swiglu", "-v", "--x=" + x16, "--out=" + os.path.join(d, "out_sv"))
check(p.returncode == 0 and "aclnnSwiGlu" in p.stderr, "swiglu -v: exit %d %s" % (p.returncode, p.stderr))

print("test_cli_mlp: %d cases, %d failures" % (cases, fails))
sys.exit(1 if fails else 0)
