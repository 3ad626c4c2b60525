"""moefr init-routing-quant end to end: numpy-written .npy files, a numpy oracle of the routing
(stable argsort) and of the int8 quantisation with CANN's roundings (static: fp16 steps, half to
even; dynamic: fp32, max|v| / 127, fp16 truncation, half away from zero), the int8 '|i1' output
file, exit codes and the no-partial-output rule.
usage: test_cli_init_routing_quant.py MOEFR_BINARY WORKDIR"""
import os
import shutil
import subprocess
import sys

import numpy as np

moefr, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
fails = 0
EMU = [os.environ["MOEFR_TEST_EMULATOR"]] if os.environ.get("MOEFR_TEST_EMULATOR") else []


def run(*args):
    return subprocess.run([*EMU, moefr, *args], capture_output=True, text=True)


def check(cond, what):
    global fails
    if not cond:
        print("FAIL", what)
        fails += 1


def f(name, a):
    p = os.path.join(work, name)
    np.save(p, a)
    return p


def h16(v):
    return np.asarray(v, np.float64).astype(np.float16).astype(np.float64)


def sat(r):
    return np.clip(np.where(np.isnan(r), 0, r), -128, 127).astype(np.int8)


def q_static(x, s, o):
    with np.errstate(over="ignore", invalid="ignore"):
        return sat(np.rint(h16(h16(h16(x) * h16(s)) + h16(o))))


def q_dynamic(x):
    s = np.float32(np.max(np.abs(x)) / 127.0) if x.size else np.float32(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = (x / np.float64(s)).astype(np.float32).astype(np.float64)
        t = q.astype(np.float16)
        t = np.where(np.abs(t.astype(np.float64)) > np.abs(q), np.nextafter(t, np.float16(0)), t).astype(np.float64)
        return sat(np.sign(t) * np.floor(np.abs(t) + 0.5)), s


for case in range(6):
    N, K, H, E = int(rng.integers(1, 30)), int(rng.integers(1, 4)), int(rng.integers(1, 40)), 5
    T = N * K
    x = (rng.standard_normal((N, H)) * 20).astype(np.float32)
    ids = rng.integers(0, E, (N, K)).astype(np.int32)
    qmode = case % 2
    out = os.path.join(work, "o%d" % case)
    args = ["init-routing-quant", "--x", f("x.npy", x), "--expert-idx", f("ids.npy", ids), "--quant-mode",
            str(qmode), "--expert-num", str(E), "--count-flag", "1", "--out", out]
    s, o = np.float32(rng.uniform(-3, 3)), np.float32(rng.uniform(-2, 2))
    if qmode == 0:
        args += ["--scale", f("s.npy", np.array([s], np.float32)), "--offset", f("o.npy", np.array([o], np.float32))]
    r = run(*args)
    check(r.returncode == 0, "case %d: %s" % (case, r.stderr))
    if r.returncode:
        continue
    perm = np.argsort(ids.reshape(-1), kind="stable")
    ex = np.load(os.path.join(out, "expanded_x.npy"))
    check(ex.dtype == np.int8 and ex.shape == (T, H), "case %d: expanded_x %s %s" % (case, ex.dtype, ex.shape))
    xd = x.astype(np.float64)
    if qmode == 0:
        want = np.stack([q_static(xd[j // K], s, o) for j in perm])
    else:
        rows = [q_dynamic(xd[j // K]) for j in perm]
        want = np.stack([a for a, _ in rows])
        dq = np.load(os.path.join(out, "dynamic_quant_scale.npy"))
        check(np.array_equal(dq, np.array([b for _, b in rows], np.float32)), "case %d: scales" % case)
    check(np.array_equal(ex, want), "case %d: expanded_x values" % case)
    want_row = np.empty(T, np.int64)
    want_row[perm] = np.arange(T)
    check(np.array_equal(np.load(os.path.join(out, "expanded_row_idx.npy")), want_row), "case %d: row idx" % case)
    cum = np.load(os.path.join(out, "expert_tokens_count_or_cumsum.npy"))
    check(np.array_equal(cum, np.cumsum(np.bincount(ids.reshape(-1), minlength=E))), "case %d: cumsum" % case)

# --v1: scale and offset from one-element files
x = (rng.standard_normal((7, 9)) * 30).astype(np.float32)
ids = rng.integers(0, 4, (7, 2)).astype(np.int32)
out = os.path.join(work, "v1")
r = run("init-routing-quant", "--v1", "--x", f("x.npy", x), "--expert-idx", f("ids.npy", ids), "--scale",
        f("s.npy", np.array([1.5], np.float32)), "--offset", f("o.npy", np.array([0.5], np.float32)), "--out", out)
check(r.returncode == 0, "v1: %s" % r.stderr)
if r.returncode == 0:
    perm = np.argsort(ids.reshape(-1), kind="stable")
    src = (np.arange(2).reshape(1, 2) * 7 + np.arange(7).reshape(7, 1)).reshape(-1)[perm]
    want = np.stack([q_static(x[s % 7].astype(np.float64), 1.5, 0.5) for s in src])
    check(np.array_equal(np.load(os.path.join(out, "expanded_x.npy")), want), "v1 values")
    check(np.array_equal(np.load(os.path.join(out, "expanded_expert_idx.npy")), ids.reshape(-1)[perm]), "v1 ids")

# refusals: static without scale (the operator, 1) leaves no output; bad usage (2)
out = os.path.join(work, "bad")
r = run("init-routing-quant", "--x", f("x.npy", x), "--expert-idx", f("ids.npy", ids), "--quant-mode", "0",
        "--out", out)
check(r.returncode == 1 and "scaleOptional" in r.stderr, "static without scale: %d %s" % (r.returncode, r.stderr))
check(not os.path.exists(os.path.join(out, "expanded_x.npy")), "partial output written")
r = run("init-routing-quant", "--x", f("x.npy", x), "--expert-idx", f("ids.npy", ids), "--v1", "--quant-mode", "1",
        "--out", out)
check(r.returncode == 2, "--v1 --quant-mode: %d" % r.returncode)

print("test_cli_init_routing_quant: %d failures" % fails)
sys.exit(1 if fails else 0)
